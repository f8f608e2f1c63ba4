/* audit: every tolerance rule, every verdict, the position-effect quantities (MECHANISMS.md §3-4 worked
 * numbers and the reference's committed float32 values as oracles), row selection, claim validation and a
 * whole evaluation on hand-made files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "lib/audit.h"
#include "lib/err.h"
#include "lib/posfx.h"
#include "check.h"

static const struct epar_audit_row *row_of(const struct epar_audit *a, const char *id)
{
    for (size_t i = 0; i < a->n; i++)
        if (!strcmp(a->rows[i].id, id)) return &a->rows[i];
    return NULL;
}

static void rules(void)
{
    struct epar_audit_tol t = {EPAR_AUDIT_EXACT, 0, 0, 0};
    check_int(epar_audit_within(&t, 0.0078125, 1.0 / 128, NAN), 1, "exact: identical");
    check_int(epar_audit_within(&t, 0.0078125, 0.0078125 * (1 + 1e-9), NAN), 0, "exact: 1e-9 off fails");
    t = (struct epar_audit_tol){EPAR_AUDIT_RELATIVE, 1e-6, 0, 0};
    check_int(epar_audit_within(&t, 0.7406705617904663, 0.7406705212489787, NAN), 1, "relative 1e-6: float32 value");
    check_int(epar_audit_within(&t, 2.385, 2.385 * (1 + 2e-6), NAN), 0, "relative 1e-6: 2e-6 off fails");
    t = (struct epar_audit_tol){EPAR_AUDIT_ABS, 0.01, 0, 0};
    check_int(epar_audit_within(&t, 0.78, 0.789293, NAN), 1, "abs 0.01: 0.789 vs 0.78");
    check_int(epar_audit_within(&t, 0.78, 0.790255, NAN), 0, "abs 0.01: 0.7903 vs 0.78");
    t = (struct epar_audit_tol){EPAR_AUDIT_SD, 3, 0, 0};
    check_int(epar_audit_within(&t, 0.8121, 0.8121 + 2.9 * 0.0123, 0.0123), 1, "sd: 2.9 sd away holds with k=3");
    check_int(epar_audit_within(&t, 0.8121, 0.8121 - 3.1 * 0.0123, 0.0123), 0, "sd: 3.1 sd away fails with k=3");
    check_int(epar_audit_within(&t, 0.8121, 0.8121, NAN), -1, "sd: no sd cannot be judged");
    t = (struct epar_audit_tol){EPAR_AUDIT_ABOVE, 0, 0, 0};
    check_int(epar_audit_within(&t, 0.7, 0.7001, NAN), 1, "above: 0.7001 > 0.7");
    check_int(epar_audit_within(&t, 0.7, 0.7, NAN), 0, "above is strict");
    t = (struct epar_audit_tol){EPAR_AUDIT_BELOW, 0, 0, 0};
    check_int(epar_audit_within(&t, 0, -0.0013, NAN), 1, "below: negative increment");
    check_int(epar_audit_within(&t, 0, 0.0013, NAN), 0, "below: positive increment fails");
    t = (struct epar_audit_tol){EPAR_AUDIT_RANGE, 0, 0.885, 0.935};
    check_int(epar_audit_within(&t, 0.91, 0.935, NAN), 1, "range: upper end included");
    check_int(epar_audit_within(&t, 0.91, 0.8849, NAN), 0, "range: below lo fails");
    check_int(epar_audit_within(&t, 0.91, NAN, NAN), -1, "NaN measurement cannot be judged");
    char b[64];
    t = (struct epar_audit_tol){EPAR_AUDIT_SD, 3, 0, 0};
    epar_audit_tol_format(&t, b, sizeof b);
    check_true(!strcmp(b, "within 3 x sd"), "format sd rule: '%s'", b);
    enum epar_audit_rule r;
    check_int(epar_audit_rule_parse("range", &r), EPAR_OK, "parse range");
    check_int(r, EPAR_AUDIT_RANGE, "parse range value");
    check_int(epar_audit_rule_parse("approx", &r), EPAR_EINVAL, "unknown rule refused");
}

static void verdicts(void)
{
    check_int(epar_audit_verdict(1, 1, 0), EPAR_AUDIT_REPRODUCED, "holds -> reproduced");
    check_int(epar_audit_verdict(1, 0, 0), EPAR_AUDIT_NOT_REPRODUCED, "fails -> not reproduced");
    check_int(epar_audit_verdict(1, 0, 1), EPAR_AUDIT_NOT_REPRODUCED, "a failing identity is not reproduced");
    check_int(epar_audit_verdict(1, 1, 1), EPAR_AUDIT_TRIVIAL, "identity that holds -> trivially true");
    check_int(epar_audit_verdict(0, 1, 0), EPAR_AUDIT_NOT_HERE, "not available -> not reproducible here");
    check_int(epar_audit_verdict(1, -1, 0), EPAR_AUDIT_NOT_HERE, "cannot judge -> not reproducible here");
    check_true(!strcmp(epar_audit_verdict_name(EPAR_AUDIT_NOT_HERE), "not reproducible here"), "verdict name");
    check_true(!strcmp(epar_audit_verdict_name(EPAR_AUDIT_TRIVIAL), "trivially true"), "verdict name trivial");
}

static void quantities(void)
{
    struct epar_posfx e = {EPAR_FORM_ENHANCED, 1, 1, 0.5}, b = {EPAR_FORM_BASIC, 1, 1, 0.5};
    double v;
    /* MECHANISMS.md §4: 0.789293 at distance L; basic 36.8%; ratio 2.14552 */
    epar_audit_posfx_quantity(EPAR_AUDIT_Q_RETENTION, &e, 100, 100, &v);
    check_rel(v, 0.789293, 1e-5, "enhanced retention at d = L");
    epar_audit_posfx_quantity(EPAR_AUDIT_Q_RETENTION, &b, 100, 100, &v);
    check_rel(v, 0.367879, 1e-5, "basic retention at d = L");
    epar_audit_posfx_quantity(EPAR_AUDIT_Q_GAIN, &e, 100, 100, &v);
    check_rel(v, 2.14552, 1e-5, "gain at d = L");
    epar_audit_posfx_quantity(EPAR_AUDIT_Q_VALUE, &e, 8, 7, &v);
    check_rel(v, 0.805621, 1e-5, "value L=8 d=7");
    struct epar_posfx code = {EPAR_FORM_ENHANCED, 1, 2, 1.5};
    epar_audit_posfx_quantity(EPAR_AUDIT_Q_RETENTION, &code, 64, 64, &v);
    check_rel(v, 0.481201, 1e-5, "reference code at distance L");
    epar_audit_posfx_quantity(EPAR_AUDIT_Q_INFIMUM, &e, 64, 0, &v);
    check_rel(v, 2.0 / 3.0, 1e-12, "infimum");
    epar_audit_posfx_quantity(EPAR_AUDIT_Q_BOUND_MARGIN, &e, 8, 0, &v);
    check_rel(v, 0.805621 - 2.0 / 3.0, 1e-5, "bound margin = P(L-1) - infimum");
    /* the reference's committed alpha/beta CSVs (float32) */
    epar_audit_posfx_quantity(EPAR_AUDIT_Q_POSITION_STRENGTH, &code, 64, 0, &v);
    check_rel(v, 0.7406705617904663, 1e-6, "position_strength alpha=1 beta=2 gamma=1.5 L=64");
    struct epar_posfx c8 = {EPAR_FORM_ENHANCED, 1, 8, 1.5};
    epar_audit_posfx_quantity(EPAR_AUDIT_Q_DECAY_SPEED, &c8, 64, 0, &v);
    check_rel(v, 0.5423459410667419, 1e-6, "decay_speed beta=8 L=64");
    /* position strength against the matrix itself, high-entropy parameters */
    struct epar_posfx h = {EPAR_FORM_BASIC, 1.385, 2.718, 0.6931};
    double P[37 * 37], s = 0;
    epar_posfx_matrix(&h, 37, P);
    for (int i = 0; i < 37 * 37; i++) s += P[i];
    epar_audit_posfx_quantity(EPAR_AUDIT_Q_POSITION_STRENGTH, &h, 37, 0, &v);
    check_rel(v, s / (37.0 * 37.0), 1e-12, "position_strength = mean of the matrix");
    check_int(epar_audit_posfx_quantity(EPAR_AUDIT_Q_VALUE, &e, 1, 0, &v), EPAR_EINVAL, "L = 1 refused");
    struct epar_posfx bad = {EPAR_FORM_ENHANCED, -1, 1, 1};
    check_int(epar_audit_posfx_quantity(EPAR_AUDIT_Q_VALUE, &bad, 8, 0, &v), EPAR_EINVAL, "alpha < 0 refused");
    /* implied parameters: round trip from gains made with known beta, gamma */
    struct epar_posfx k = {EPAR_FORM_ENHANCED, 1, 2.385, 0.6931};
    double gm, gx, beta, gamma;
    epar_audit_posfx_quantity(EPAR_AUDIT_Q_GAIN, &k, 1000, 500, &gm);
    epar_audit_posfx_quantity(EPAR_AUDIT_Q_GAIN, &k, 1000, 1000, &gx);
    check_int(epar_audit_implied_params(gm, gx, &beta, &gamma), EPAR_OK, "implied params solvable");
    check_rel(beta, 2.385, 1e-9, "implied beta");
    check_rel(gamma, 0.6931, 1e-9, "implied gamma");
    check_int(epar_audit_implied_params(4.2, 28.3, &beta, &gamma), EPAR_OK, "paper gains solvable");
    check_rel(beta, 4.03813, 1e-4, "paper gains imply beta ~ 4.04");
}

static json_t *J(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j) printf("bad test json: %s\n", e.text);
    return j;
}

static void selection(void)
{
    struct epar_table *t = epar_csv_new("form,alpha,consistency,consistency_sd");
    epar_csv_append(t, "sddd", "basic", 0.1, 0.81, 0.01);
    epar_csv_append(t, "sddd", "basic", 0.5, 0.85, 0.03);
    epar_csv_append(t, "sddd", "enhanced", 0.1, 0.90, 0.02);
    double v, sd;
    int n;
    char why[512];
    json_t *w = J("{\"form\": \"enhanced\", \"alpha\": 0.1}");
    check_int(epar_audit_select(t, w, "consistency", "consistency_sd", NULL, &v, &sd, &n, why, sizeof why), EPAR_OK,
              "select one row");
    check_rel(v, 0.90, 1e-15, "selected value");
    check_rel(sd, 0.02, 1e-15, "selected sd");
    json_decref(w);
    w = J("{\"alpha\": \"0.1\"}");
    check_int(epar_audit_select(t, w, "consistency", NULL, "mean", &v, &sd, &n, why, sizeof why), EPAR_OK,
              "string selector matches numbers");
    check_int(n, 2, "two rows match alpha 0.1");
    check_rel(v, 0.855, 1e-12, "mean over rows");
    check_rel(sd, sqrt(2 * 0.045 * 0.045), 1e-9, "sample sd across rows");
    check_int(epar_audit_select(t, w, "consistency", NULL, NULL, &v, &sd, &n, why, sizeof why), EPAR_EINVAL,
              "several rows without an aggregate is an error");
    json_decref(w);
    w = J("{\"form\": [\"basic\"]}");
    check_int(epar_audit_select(t, w, "consistency", "consistency_sd", "min", &v, &sd, &n, why, sizeof why), EPAR_OK,
              "array selector + min");
    check_rel(v, 0.81, 1e-15, "min value");
    check_rel(sd, 0.01, 1e-15, "sd of the min row");
    json_decref(w);
    check_int(epar_audit_select(t, NULL, "consistency", NULL, "max", &v, &sd, &n, why, sizeof why), EPAR_OK, "max");
    check_rel(v, 0.90, 1e-15, "max over every row");
    check_int(epar_audit_select(t, NULL, "ranking", NULL, "mean", &v, &sd, &n, why, sizeof why), EPAR_EINVAL,
              "absent column");
    check_true(strstr(why, "column 'ranking' not in the file") && strstr(why, "form,alpha"), "why names the columns: %s", why);
    w = J("{\"form\": \"none\"}");
    check_int(epar_audit_select(t, w, "consistency", NULL, NULL, &v, &sd, &n, why, sizeof why), EPAR_EINVAL,
              "no matching row");
    check_true(strstr(why, "no row matches") != NULL, "why: %s", why);
    json_decref(w);
    epar_csv_free(t);
}

static void validation(void)
{
    const char *bad[] = {
        "[{\"id\": \"a\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 1, \"measure\": {\"file\": \"x.csv\", \"column\": \"c\"}}]",
        "[{\"id\": \"a\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 1, \"measure\": {\"file\": \"x.csv\", \"column\": \"c\"}, \"tolerance\": {\"rule\": \"near\"}}]",
        "[{\"id\": \"a\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 1, \"measure\": {\"file\": \"/etc/x.csv\", \"column\": \"c\"}, \"tolerance\": {\"rule\": \"exact\"}}]",
        "[{\"id\": \"a\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 1, \"measure\": {\"posfx\": {\"quantity\": \"gain\", \"L\": 2}}, \"tolerance\": {\"rule\": \"exact\"}}]",
        "[{\"id\": \"a\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 1, \"measure\": {\"needs\": \"x\", \"import\": \"y.csv\"}}]",
        "[{\"id\": \"a\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 1, \"measure\": {\"needs\": \"x\"}, \"tolerence\": 1}]",
        "[{\"id\": \"a\", \"source\": \"s\", \"statement\": \"t\", \"measure\": {\"needs\": \"x\"}}, {\"id\": \"a\", \"source\": \"s\", \"statement\": \"t\", \"measure\": {\"needs\": \"x\"}}]",
        "[{\"id\": \"a\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 1, \"measure\": {\"file\": \"x.csv\", \"column\": \"c\"}, \"tolerance\": {\"rule\": \"sd\"}}]",
    };
    const char *path[] = {"$.claims[0].tolerance", "$.claims[0].tolerance.rule", "$.claims[0].measure.file",
                          "$.claims[0].measure.posfx.L", "$.claims[0].measure", "$.claims[0].tolerence",
                          "$.claims[1].id", "$.claims[0].tolerance.k"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *j = J(bad[i]);
        int st = epar_audit_check(j, "p.json");
        check_int(st, EPAR_EPROTOCOL, "bad claims %zu refused", i);
        check_true(strstr(epar_err_message(), path[i]) != NULL, "error names %s: %s", path[i], epar_err_message());
        json_decref(j);
    }
    check_int(epar_audit_check(NULL, "p.json"), EPAR_OK, "no claims is fine");
}

static void evaluation(void)
{
    char dir[] = "/tmp/epar-test-audit.XXXXXX";
    if (!mkdtemp(dir)) { check_true(0, "mkdtemp"); return; }
    char p[256];
    snprintf(p, sizeof p, "%s/exp", dir);
    mkdir(p, 0777);
    snprintf(p, sizeof p, "%s/exp/metrics.csv", dir);
    FILE *f = fopen(p, "w");
    fputs("info_type,consistency,consistency_sd,pass\nstructured,0.9,0.01,pass\nclustered,0.8,0.02,fail\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/exp/seed_claims.csv", dir);
    f = fopen(p, "w");
    fputs("claim_id,source,statement,reported,measured,verdict,note\n"
          "alibi_slopes,seed 004,slopes are 2^-8h/H,0.5,0.5,reproduced,\n"
          "performer_unbiased,seed 001,unbiased,0,0.01,not reproduced,biased\n"
          "odd,seed 001,x,1,1,maybe,\n", f);
    fclose(f);
    json_t *claims = J("["
        "{\"id\": \"ok\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 0.91, \"measure\": {\"file\": \"exp/metrics.csv\", \"where\": {\"info_type\": \"structured\"}, \"column\": \"consistency\", \"sd_column\": \"consistency_sd\"}, \"tolerance\": {\"rule\": \"sd\", \"k\": 3}},"
        "{\"id\": \"off\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 0.891, \"measure\": {\"file\": \"exp/metrics.csv\", \"where\": {\"info_type\": \"clustered\"}, \"column\": \"consistency\", \"sd_column\": \"consistency_sd\"}, \"tolerance\": {\"rule\": \"sd\", \"k\": 3}},"
        "{\"id\": \"missing\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 1, \"measure\": {\"file\": \"optimal/none.csv\", \"column\": \"c\"}, \"tolerance\": {\"rule\": \"exact\"}},"
        "{\"id\": \"speccol\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 1, \"measure\": {\"file\": \"exp/metrics.csv\", \"where\": {\"info_type\": \"structured\"}, \"column\": \"ranking\"}, \"tolerance\": {\"rule\": \"exact\"}},"
        "{\"id\": \"train\", \"source\": \"s\", \"statement\": \"t\", \"reported\": \"22.8\", \"measure\": {\"needs\": \"training a 110M model\"}},"
        "{\"id\": \"ident\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 0.0, \"measure\": {\"posfx\": {\"quantity\": \"bound_margin\", \"form\": \"enhanced\", \"beta\": 1, \"gamma\": 0.5, \"L\": 8}}, \"tolerance\": {\"rule\": \"above\"}, \"trivial\": true},"
        "{\"id\": \"ret\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 0.028, \"measure\": {\"posfx\": {\"quantity\": \"retention\", \"form\": \"basic\", \"beta\": 1, \"L\": 100, \"d\": \"L\"}}, \"tolerance\": {\"rule\": \"abs\", \"tol\": 0.001}, \"alternatives\": [{\"label\": \"steep\", \"beta\": 3.57555}]},"
        "{\"id\": \"seeds\", \"source\": \"s\", \"statement\": \"t\", \"reported\": \"rows\", \"measure\": {\"import\": \"exp/seed_claims.csv\"}},"
        "{\"id\": \"seeds_missing\", \"source\": \"s\", \"statement\": \"t\", \"reported\": \"rows\", \"measure\": {\"import\": \"compare/seed_claims.csv\"}}"
        "]");
    check_int(epar_audit_check(claims, "p.json"), EPAR_OK, "test claims valid");
    struct epar_audit a;
    check_int(epar_audit_run(claims, dir, &a), EPAR_OK, "audit runs");
    const struct epar_audit_row *r;
    check_true((r = row_of(&a, "ok")) && r->verdict == EPAR_AUDIT_REPRODUCED, "within 3 sd -> reproduced");
    check_true((r = row_of(&a, "off")) && r->verdict == EPAR_AUDIT_NOT_REPRODUCED, "4.55 sd off -> not reproduced");
    check_true(r && !strcmp(r->measured, "0.8") && !strcmp(r->measured_sd, "0.02"), "measured and sd shown");
    check_true((r = row_of(&a, "missing")) && r->verdict == EPAR_AUDIT_NOT_HERE &&
               strstr(r->note, "output/optimal/none.csv missing: experiment not run"), "missing file -> not here, said so");
    check_true((r = row_of(&a, "speccol")) && r->verdict == EPAR_AUDIT_NOT_HERE && r->spec_problem &&
               strstr(r->note, "column 'ranking' not in the file"), "wrong column -> spec problem named");
    check_true((r = row_of(&a, "train")) && r->verdict == EPAR_AUDIT_NOT_HERE && strstr(r->note, "training"),
               "needs training -> not here with the reason");
    check_true((r = row_of(&a, "ident")) && r->verdict == EPAR_AUDIT_TRIVIAL, "identity -> trivially true");
    check_true((r = row_of(&a, "ret")) && r->verdict == EPAR_AUDIT_NOT_REPRODUCED, "36.8%% is not 2.8%%");
    check_true(r && strstr(r->note, "alternative (steep): 0.028, matches"), "alternative named, verdict kept: %s",
               r ? r->note : "");
    check_true((r = row_of(&a, "alibi_slopes")) && r->verdict == EPAR_AUDIT_REPRODUCED && r->imported,
               "imported row kept as is");
    check_true((r = row_of(&a, "performer_unbiased")) && r->verdict == EPAR_AUDIT_NOT_REPRODUCED &&
               !strcmp(r->note, "biased"), "imported not reproduced");
    check_true((r = row_of(&a, "odd")) && r->verdict == EPAR_AUDIT_NOT_HERE && r->spec_problem,
               "unknown imported verdict flagged");
    check_true((r = row_of(&a, "seeds_missing")) && r->verdict == EPAR_AUDIT_NOT_HERE &&
               strstr(r->note, "experiment not run"), "missing import -> one not-here row");
    check_true(row_of(&a, "seeds") == NULL, "an import that worked has no row of its own");
    check_int(a.counts[EPAR_AUDIT_REPRODUCED], 2, "count reproduced");
    check_int(a.spec_problems, 2, "count spec problems");
    struct epar_table *t = epar_audit_table(&a);
    check_true(t && t->ncols == 9 && !strcmp(t->cols[0], "claim_id") && !strcmp(t->cols[8], "note"), "claims.csv schema");
    check_int((long)t->nrows, (long)a.n, "one row per claim");
    epar_csv_free(t);
    epar_audit_free(&a);
    json_decref(claims);
    snprintf(p, sizeof p, "rm -rf '%s'", dir);
    if (system(p) != 0) check_true(0, "cleanup");
}

int main(void)
{
    rules();
    verdicts();
    quantities();
    selection();
    validation();
    evaluation();
    return check_summary("test_audit");
}
