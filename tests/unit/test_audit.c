/* audit: every tolerance rule, every verdict, the position-effect quantities (docs/MECHANISMS.md §3-4 worked
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

static enum epar_audit_outcome J1(enum epar_audit_rule rule, double r, double u, double v, int stoch, double sd, int n,
                                   double se_run, double se)
{
    struct epar_audit_tol t = {rule, 0, 0.885, 0.935, 0.1, NAN, 0};
    struct epar_audit_meas m = {.value = v, .stochastic = stoch, .sd = sd, .n = n, .se_run = se_run, .se = se,
                                 .holm = NAN, .lo = NAN, .hi = NAN, .nonsup = NAN};
    char acc[256];
    return epar_audit_judge(&t, r, u, &m, 0.95, acc, sizeof acc);
}

static void rules(void)
{
    double v, u;
    /* printed figures: half a unit of the last printed digit */
    check_int(epar_audit_printed_parse("78%", &v, &u), EPAR_OK, "parse 78%%");
    check_rel(v, 0.78, 1e-15, "78%% value");
    check_rel(u, 0.01, 1e-15, "78%% unit");
    check_int(epar_audit_printed_parse("0.2390", &v, &u), EPAR_OK, "parse 0.2390");
    check_rel(u, 1e-4, 1e-12, "a trailing zero is a printed digit");
    check_int(epar_audit_printed_parse("16", &v, &u), EPAR_OK, "parse 16");
    check_rel(u, 1, 0, "integer unit 1");
    check_int(epar_audit_printed_parse("93.75%", &v, &u), EPAR_OK, "parse 93.75%%");
    check_rel(u, 1e-4, 1e-12, "93.75%% unit 0.0001");
    check_int(epar_audit_printed_parse("x4.2", &v, &u), EPAR_EINVAL, "x4.2 is not a printed number");
    check_int(epar_audit_printed_parse("0.89-0.93", &v, &u), EPAR_EINVAL, "a range is not one number");
    check_int(J1(EPAR_AUDIT_PRINTED, 0.78, 0.01, 0.7849, 0, NAN, 0, NAN, NAN), EPAR_AUDIT_HOLDS, "78%%: 78.49%% holds");
    check_int(J1(EPAR_AUDIT_PRINTED, 0.78, 0.01, 0.775, 0, NAN, 0, NAN, NAN), EPAR_AUDIT_HOLDS, "78%%: 77.5%% included");
    check_int(J1(EPAR_AUDIT_PRINTED, 0.78, 0.01, 0.785, 0, NAN, 0, NAN, NAN), EPAR_AUDIT_FAILS, "78%%: 78.5%% excluded");
    check_int(J1(EPAR_AUDIT_PRINTED, 0.78, 0.01, 0.7895, 0, NAN, 0, NAN, NAN), EPAR_AUDIT_FAILS, "78%%: 78.95%% fails");
    /* prediction interval of a new run: t(4, 0.975) = 2.776445, sqrt(1 + 1/5) = 1.095445: half 0.0374094 */
    check_int(J1(EPAR_AUDIT_PREDICTION, 0.8121 + 0.0373, 0, 0.8121, 1, 0.0123, 5, NAN, NAN), EPAR_AUDIT_HOLDS,
              "prediction: inside t(4) sd sqrt(1.2)");
    check_int(J1(EPAR_AUDIT_PREDICTION, 0.8121 + 0.0375, 0, 0.8121, 1, 0.0123, 5, NAN, NAN), EPAR_AUDIT_FAILS,
              "prediction: outside");
    check_int(J1(EPAR_AUDIT_PREDICTION, 0.8121 + 0.0375, 0.001, 0.8121, 1, 0.0123, 5, NAN, NAN), EPAR_AUDIT_HOLDS,
              "prediction: half a printed unit added");
    check_int(J1(EPAR_AUDIT_PREDICTION, 0.8121 + 0.06, 0, 0.8121, 1, 0.0123, 5, 0.02, NAN), EPAR_AUDIT_HOLDS,
              "prediction: a small sd is floored by the run-level standard error");
    check_int(J1(EPAR_AUDIT_PREDICTION, 0.8, 0, 0.8, 1, NAN, 1, NAN, NAN), EPAR_AUDIT_FEW_SEEDS, "one seed: needs seeds");
    check_int(J1(EPAR_AUDIT_PREDICTION, 0.8, 0, NAN, 1, 0.01, 5, NAN, NAN), EPAR_AUDIT_UNDECIDED, "NaN: undecided");
    /* a mean over one row (one seed) without an sd column: not flagged stochastic, no spread at all */
    check_int(J1(EPAR_AUDIT_PREDICTION, 0.07, 0, 0.08, 0, NAN, 0, NAN, NAN), EPAR_AUDIT_FEW_SEEDS,
              "prediction without a spread: needs seeds, not t(-1)");
    check_int(J1(EPAR_AUDIT_PREDICTION, 0.07, 0, 0.08, 1, NAN, 5, NAN, NAN), EPAR_AUDIT_FEW_SEEDS,
              "prediction with a NaN sd: needs seeds");
    /* estimate: z(0.975) = 1.959964 x se */
    check_int(J1(EPAR_AUDIT_ESTIMATE, 1.0, 0, 1.00195, 0, NAN, 0, NAN, 0.001), EPAR_AUDIT_HOLDS, "estimate 1.95 se");
    check_int(J1(EPAR_AUDIT_ESTIMATE, 1.0, 0, 1.00197, 0, NAN, 0, NAN, 0.001), EPAR_AUDIT_FAILS, "estimate 1.97 se");
    /* exact and relative */
    check_int(J1(EPAR_AUDIT_EXACT, 0.0078125, 0, 1.0 / 128, 0, NAN, 0, NAN, NAN), EPAR_AUDIT_HOLDS, "exact: identical");
    check_int(J1(EPAR_AUDIT_EXACT, 0.0078125, 0, 0.0078125 * (1 + 1e-9), 0, NAN, 0, NAN, NAN), EPAR_AUDIT_FAILS,
              "exact: 1e-9 off fails");
    struct epar_audit_tol rel = {EPAR_AUDIT_RELATIVE, 1e-6, 0, 0, 0, NAN, 0};
    struct epar_audit_meas m32 = EPAR_AUDIT_MEAS_NONE;
    m32.value = 0.7406705212489787;
    char acc[256];
    check_int(epar_audit_judge(&rel, 0.7406705617904663, 0, &m32, 0.95, acc, sizeof acc), EPAR_AUDIT_HOLDS,
              "relative 1e-6: the float32 value");
    /* thresholds: deterministic plain, stochastic by the confidence interval of the mean (t(4) sd / sqrt 5) */
    check_int(J1(EPAR_AUDIT_ABOVE, 0.7, 0, 0.7001, 0, NAN, 0, NAN, NAN), EPAR_AUDIT_HOLDS, "above: 0.7001 > 0.7");
    check_int(J1(EPAR_AUDIT_ABOVE, 0.7, 0, 0.7, 0, NAN, 0, NAN, NAN), EPAR_AUDIT_FAILS, "above is strict");
    check_int(J1(EPAR_AUDIT_ABOVE, 0.7, 0, 0.72, 1, 0.01, 5, NAN, NAN), EPAR_AUDIT_HOLDS, "above: whole interval above");
    check_int(J1(EPAR_AUDIT_ABOVE, 0.7, 0, 0.705, 1, 0.01, 5, NAN, NAN), EPAR_AUDIT_OPEN, "above: straddles -> open");
    check_int(J1(EPAR_AUDIT_ABOVE, 0.7, 0, 0.68, 1, 0.01, 5, NAN, NAN), EPAR_AUDIT_FAILS, "above: whole interval below");
    check_int(J1(EPAR_AUDIT_BELOW, 1, 0, 0.85, 0, NAN, 0, NAN, 0.04), EPAR_AUDIT_HOLDS, "below with se: 0.85+1.96x0.04 < 1");
    check_int(J1(EPAR_AUDIT_BELOW, 1, 0, 0.95, 0, NAN, 0, NAN, 0.04), EPAR_AUDIT_OPEN, "below with se: straddles");
    check_int(J1(EPAR_AUDIT_BELOW, 0.3, 0, 0.2, 1, NAN, 1, NAN, NAN), EPAR_AUDIT_FEW_SEEDS, "threshold with one seed");
    /* range [0.885, 0.935]; at_least with slack 0.1 */
    check_int(J1(EPAR_AUDIT_RANGE, 0, 0, 0.935, 0, NAN, 0, NAN, NAN), EPAR_AUDIT_HOLDS, "range: upper end included");
    check_int(J1(EPAR_AUDIT_RANGE, 0, 0, 0.8849, 0, NAN, 0, NAN, NAN), EPAR_AUDIT_FAILS, "range: below lo fails");
    /* stochastic: the mean's 95 % interval, t(4) = 2.776 x sd / sqrt 5 */
    check_int(J1(EPAR_AUDIT_RANGE, 0, 0, 0.91, 1, 0.01, 5, NAN, NAN), EPAR_AUDIT_HOLDS, "range: mean's interval inside it");
    check_int(J1(EPAR_AUDIT_RANGE, 0, 0, 0.875, 1, 0.01, 5, NAN, NAN), EPAR_AUDIT_OPEN,
              "range: an interval [0.863, 0.887] straddling lo is open, not a match");
    check_int(J1(EPAR_AUDIT_RANGE, 0, 0, 0.91, 1, 0.1, 2, NAN, NAN), EPAR_AUDIT_OPEN,
              "range: two seeds' wide interval around a mean inside it is open");
    check_int(J1(EPAR_AUDIT_RANGE, 0, 0, 0.87, 1, 0.01, 5, NAN, NAN), EPAR_AUDIT_FAILS, "range: mean's interval misses it");
    check_int(J1(EPAR_AUDIT_AT_LEAST, 16, 0, 14.5, 0, NAN, 0, NAN, NAN), EPAR_AUDIT_HOLDS, "at_least 16 (1-0.1): 14.5");
    check_int(J1(EPAR_AUDIT_AT_LEAST, 16, 0, 9.5, 0, NAN, 0, NAN, NAN), EPAR_AUDIT_FAILS, "at_least: 9.5 < 14.4");
    enum epar_audit_rule r;
    check_int(epar_audit_rule_parse("prediction", &r), EPAR_OK, "parse prediction");
    check_int(r, EPAR_AUDIT_PREDICTION, "parse prediction value");
    check_int(epar_audit_rule_parse("sd", &r), EPAR_EINVAL, "the old k x sd rule is gone");
}

static void verdicts(void)
{
    check_true(!strcmp(epar_audit_verdict_name(EPAR_AUDIT_NOT_HERE), "not reproducible here"), "verdict name");
    check_true(!strcmp(epar_audit_verdict_name(EPAR_AUDIT_NEEDS_SEEDS), "needs >= 2 seeds"), "verdict needs seeds");
    check_true(!strcmp(epar_audit_verdict_key(EPAR_AUDIT_PARTLY), "partly_reproduced"), "verdict key");
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++)
        check_true(strcmp(epar_audit_verdict_name((enum epar_audit_verdict)v), "?") != 0, "verdict %d named", v);
}

static void quantities(void)
{
    struct epar_posfx e = {EPAR_FORM_ENHANCED, 1, 1, 0.5}, b = {EPAR_FORM_BASIC, 1, 1, 0.5};
    double v;
    /* docs/MECHANISMS.md §4: 0.789293 at distance L; basic 36.8%; ratio 2.14552 */
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
    check_int(epar_audit_select(t, w, "consistency", "consistency_sd", NULL, &v, &sd, &n, NULL, why, sizeof why), EPAR_OK,
              "select one row");
    check_rel(v, 0.90, 1e-15, "selected value");
    check_rel(sd, 0.02, 1e-15, "selected sd");
    json_decref(w);
    w = J("{\"alpha\": \"0.1\"}");
    check_int(epar_audit_select(t, w, "consistency", NULL, "mean", &v, &sd, &n, NULL, why, sizeof why), EPAR_OK,
              "string selector matches numbers");
    check_int(n, 2, "two rows match alpha 0.1");
    check_rel(v, 0.855, 1e-12, "mean over rows");
    check_rel(sd, sqrt(2 * 0.045 * 0.045), 1e-9, "sample sd across rows");
    check_int(epar_audit_select(t, w, "consistency", NULL, NULL, &v, &sd, &n, NULL, why, sizeof why), EPAR_EINVAL,
              "several rows without an aggregate is an error");
    json_decref(w);
    w = J("{\"form\": [\"basic\"]}");
    check_int(epar_audit_select(t, w, "consistency", "consistency_sd", "min", &v, &sd, &n, NULL, why, sizeof why), EPAR_OK,
              "array selector + min");
    check_rel(v, 0.81, 1e-15, "min value");
    check_rel(sd, 0.01, 1e-15, "sd of the min row");
    json_decref(w);
    check_int(epar_audit_select(t, NULL, "consistency", NULL, "max", &v, &sd, &n, NULL, why, sizeof why), EPAR_OK, "max");
    check_rel(v, 0.90, 1e-15, "max over every row");
    check_int(epar_audit_select(t, NULL, "ranking", NULL, "mean", &v, &sd, &n, NULL, why, sizeof why), EPAR_EINVAL,
              "absent column");
    check_true(strstr(why, "column 'ranking' not in the file") && strstr(why, "form,alpha"), "why names the columns: %s", why);
    w = J("{\"form\": \"none\"}");
    check_int(epar_audit_select(t, w, "consistency", NULL, NULL, &v, &sd, &n, NULL, why, sizeof why), EPAR_EINVAL,
              "no matching row");
    check_true(strstr(why, "no row matches") != NULL, "why: %s", why);
    json_decref(w);
    epar_csv_free(t);
}

static void validation(void)
{
#define C(x) "[{\"id\": \"a\", \"source\": \"s\", \"statement\": \"t\", " x "}]"
    const char *bad[] = {
        C("\"reported\": 1, \"measure\": {\"file\": \"e/x.csv\", \"column\": \"c\"}"),
        C("\"reported\": 1, \"measure\": {\"file\": \"e/x.csv\", \"column\": \"c\"}, \"tolerance\": {\"rule\": \"near\"}"),
        C("\"reported\": 1, \"measure\": {\"file\": \"/etc/x.csv\", \"column\": \"c\"}, \"tolerance\": {\"rule\": \"exact\"}"),
        C("\"reported\": 1, \"measure\": {\"posfx\": {\"quantity\": \"gain\", \"L\": 2}}, \"tolerance\": {\"rule\": \"exact\"}"),
        C("\"reported\": 1, \"measure\": {\"needs\": \"x\", \"import\": \"y.csv\"}"),
        C("\"reported\": 1, \"measure\": {\"needs\": \"x\"}, \"tolerence\": 1"),
        "[{\"id\": \"a\", \"source\": \"s\", \"statement\": \"t\", \"measure\": {\"needs\": \"x\"}}, {\"id\": \"a\", \"source\": \"s\", \"statement\": \"t\", \"measure\": {\"needs\": \"x\"}}]",
        C("\"reported\": 1, \"measure\": {\"file\": \"e/x.csv\", \"column\": \"c\"}, \"tolerance\": {\"rule\": \"relative\", \"tol\": 1e-6}"),
        C("\"reported\": 0.78, \"measure\": {\"posfx\": {\"quantity\": \"value\", \"L\": 8}}, \"tolerance\": {\"rule\": \"printed\"}"),
        C("\"reported\": 1, \"measure\": {\"readings\": [{\"file\": \"e/x.csv\", \"column\": \"c\"}]}, \"tolerance\": {\"rule\": \"exact\"}"),
        C("\"reported\": 1, \"measure\": {\"file\": \"e/x.csv\", \"column\": \"c\"}, \"tolerance\": {\"rule\": \"exact\"}, \"trivial\": true"),
        C("\"reported\": 1, \"measure\": {\"quorum\": 2, \"readings\": [{\"label\": \"a\", \"file\": \"e/x.csv\", \"column\": \"c\"}]}, \"tolerance\": {\"rule\": \"exact\"}"),
    };
    const char *path[] = {"$.claims[0].tolerance", "$.claims[0].tolerance.rule", "$.claims[0].measure.file",
                          "$.claims[0].measure.posfx.L", "$.claims[0].measure", "$.claims[0].tolerence",
                          "$.claims[1].id", "$.claims[0].tolerance.why", "$.claims[0].reported",
                          "$.claims[0].measure.readings[0].label", "$.claims[0].trivial",
                          "$.claims[0].measure.quorum"};
#undef C
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *j = J(bad[i]);
        int st = epar_audit_check(j, "p.json");
        check_int(st, EPAR_EPROTOCOL, "bad claims %zu refused", i);
        check_true(strstr(epar_err_message(), path[i]) != NULL, "error names %s: %s", path[i], epar_err_message());
        json_decref(j);
    }
    check_int(epar_audit_check(NULL, "p.json"), EPAR_OK, "no claims is fine");
    double level;
    json_t *root = J("{\"audit\": {\"level\": 0.99}}");
    check_int(epar_audit_level(root, "p.json", &level), EPAR_OK, "level read");
    check_rel(level, 0.99, 0, "level 0.99");
    json_decref(root);
    root = J("{\"audit\": {\"level\": 1.5}}");
    check_int(epar_audit_level(root, "p.json", &level), EPAR_EPROTOCOL, "level out of range refused");
    json_decref(root);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
}

static void evaluation(void)
{
    char dir[] = "/tmp/epar-test-audit.XXXXXX";
    if (!mkdtemp(dir)) { check_true(0, "mkdtemp"); return; }
    char p[256];
    snprintf(p, sizeof p, "%s/exp", dir);
    mkdir(p, 0777);
    snprintf(p, sizeof p, "%s/one", dir);
    mkdir(p, 0777);
    snprintf(p, sizeof p, "%s/other", dir);
    mkdir(p, 0777);
    write_file(dir, "exp/metrics.csv", "info_type,consistency,consistency_sd,consistency_se_run,pass\n"
                                       "structured,0.9,0.01,0.005,pass\nclustered,0.8,0.002,0.02,fail\n");
    write_file(dir, "exp/run.json", "{\"protocol_hash\": \"fnv1a64:1\", \"cli_overrides\": \"\", \"epar_version\": \"9\","
                                    " \"parameters\": {\"preset\": \"p\", \"seeds\": [1, 2, 3, 4, 5]}}");
    write_file(dir, "one/metrics.csv", "info_type,consistency,consistency_sd,consistency_std\nstructured,0.9,nan,0.08\n");
    write_file(dir, "one/run.json", "{\"protocol_hash\": \"fnv1a64:1\", \"cli_overrides\": \"\", \"epar_version\": \"9\","
                                    " \"parameters\": {\"preset\": \"p\", \"seeds\": [7]}}");
    write_file(dir, "other/metrics.csv", "info_type,consistency,consistency_sd\nstructured,0.9,0.01\n");
    write_file(dir, "other/run.json", "{\"protocol_hash\": \"fnv1a64:1\", \"cli_overrides\": \"gamma=0.5\", "
                                      "\"epar_version\": \"9\", \"parameters\": {\"preset\": \"p\", \"seeds\": [1, 2, 3, 4, 5]}}");
#define M(f, t) "\"measure\": {\"file\": \"" f "/metrics.csv\", \"where\": {\"info_type\": \"" t "\"}, \"column\": \"consistency\", \"sd_column\": \"consistency_sd\", \"se_run_column\": \"consistency_se_run\"}"
#define N "\"source\": \"s\", \"statement\": \"t\", "
    json_t *claims = J("["
        "{\"id\": \"ok\", " N "\"reported\": \"0.91\", " M("exp", "structured") ", \"tolerance\": {\"rule\": \"prediction\"}},"
        "{\"id\": \"floor\", " N "\"reported\": \"0.850\", " M("exp", "clustered") ", \"tolerance\": {\"rule\": \"prediction\"}},"
        "{\"id\": \"off\", " N "\"reported\": \"0.95\", " M("exp", "structured") ", \"tolerance\": {\"rule\": \"prediction\"}},"
        "{\"id\": \"oneseed\", " N "\"reported\": \"0.91\", \"measure\": {\"file\": \"one/metrics.csv\", \"where\": {\"info_type\": \"structured\"}, \"column\": \"consistency\", \"sd_column\": \"consistency_sd\"}, \"tolerance\": {\"rule\": \"prediction\"}},"
        "{\"id\": \"onemean_std\", " N "\"reported\": \"0.0723\", \"measure\": {\"file\": \"one/metrics.csv\", \"where\": {\"info_type\": \"structured\"}, \"column\": \"consistency_std\", \"aggregate\": \"mean\"}, \"tolerance\": {\"rule\": \"prediction\"}},"
        "{\"id\": \"stale\", " N "\"reported\": \"0.91\", \"measure\": {\"file\": \"other/metrics.csv\", \"where\": {\"info_type\": \"structured\"}, \"column\": \"consistency\", \"sd_column\": \"consistency_sd\"}, \"tolerance\": {\"rule\": \"prediction\"}},"
        "{\"id\": \"missing\", " N "\"reported\": 1, \"measure\": {\"file\": \"optimal/none.csv\", \"column\": \"c\"}, \"tolerance\": {\"rule\": \"exact\"}},"
        "{\"id\": \"speccol\", " N "\"reported\": 1, \"measure\": {\"file\": \"exp/metrics.csv\", \"where\": {\"info_type\": \"structured\"}, \"column\": \"ranking\"}, \"tolerance\": {\"rule\": \"exact\"}},"
        "{\"id\": \"train\", " N "\"reported\": \"22.8\", \"measure\": {\"needs\": \"training a 110M model\"}},"
        "{\"id\": \"ident\", " N "\"reported\": 0.0, \"measure\": {\"posfx\": {\"quantity\": \"bound_margin\", \"form\": \"enhanced\", \"beta\": 1, \"gamma\": 0.5, \"L\": 8}}, \"tolerance\": {\"rule\": \"above\"}, \"trivial\": \"e^x > 0\"},"
        "{\"id\": \"brokenident\", " N "\"reported\": 0.0, \"measure\": {\"posfx\": {\"quantity\": \"bound_margin\", \"form\": \"enhanced\", \"beta\": 0, \"gamma\": 0.5, \"L\": 8}}, \"tolerance\": {\"rule\": \"above\"}, \"trivial\": \"e^x > 0\"},"
        "{\"id\": \"ret\", " N "\"reported\": \"2.8%\", \"measure\": {\"posfx\": {\"quantity\": \"retention\", \"form\": \"basic\", \"beta\": 1, \"L\": 100, \"d\": \"L\"}}, \"tolerance\": {\"rule\": \"printed\"}, \"alternatives\": [{\"label\": \"steep\", \"beta\": 3.57555}]},"
        "{\"id\": \"partly\", " N "\"reported\": \"0.9\", \"measure\": {\"readings\": [{\"label\": \"structured\", \"file\": \"exp/metrics.csv\", \"where\": {\"info_type\": \"structured\"}, \"column\": \"consistency\"}, {\"label\": \"clustered\", \"file\": \"exp/metrics.csv\", \"where\": {\"info_type\": \"clustered\"}, \"column\": \"consistency\"}]}, \"tolerance\": {\"rule\": \"printed\"}},"
        "{\"id\": \"quorum1\", " N "\"reported\": \"0.9\", \"measure\": {\"quorum\": 1, \"readings\": [{\"label\": \"structured\", \"file\": \"exp/metrics.csv\", \"where\": {\"info_type\": \"structured\"}, \"column\": \"consistency\"}, {\"label\": \"clustered\", \"file\": \"exp/metrics.csv\", \"where\": {\"info_type\": \"clustered\"}, \"column\": \"consistency\"}]}, \"tolerance\": {\"rule\": \"printed\"}},"
        "{\"id\": \"quorum2\", " N "\"reported\": \"0.9\", \"measure\": {\"quorum\": 2, \"readings\": [{\"label\": \"structured\", \"file\": \"exp/metrics.csv\", \"where\": {\"info_type\": \"structured\"}, \"column\": \"consistency\"}, {\"label\": \"clustered\", \"file\": \"exp/metrics.csv\", \"where\": {\"info_type\": \"clustered\"}, \"column\": \"consistency\"}]}, \"tolerance\": {\"rule\": \"printed\"}},"
        "{\"id\": \"ill\", " N "\"reported\": 1, \"measure\": {\"readings\": [{\"label\": \"a\", \"posfx\": {\"quantity\": \"infimum\", \"form\": \"none\", \"L\": 8}}]}, \"tolerance\": {\"rule\": \"exact\"}, \"ill_posed\": \"dimensions differ\"}"
        "]");
#undef M
#undef N
    check_int(epar_audit_check(claims, "p.json"), EPAR_OK, "test claims valid: %s", epar_err_message());
    static const unsigned long seeds5[] = {1, 2, 3, 4, 5};
    struct epar_audit_expect ex[] = {{"exp", "fnv1a64:1", "p", 5, seeds5, "9"}, {"one", "fnv1a64:1", "p", 0, NULL, "9"},
                                     {"other", "fnv1a64:1", "p", 5, seeds5, "9"}};
    struct epar_audit_ctx ctx = {dir, 0.95, ex, 3, NULL, NULL};
    struct epar_audit a;
    check_int(epar_audit_run(claims, &ctx, &a), EPAR_OK, "audit runs");
    const struct epar_audit_row *r;
    r = row_of(&a, "ok");
    check_true(r && r->verdict == EPAR_AUDIT_REPRODUCED, "inside the prediction interval");
    check_true(r && !strcmp(r->n_seeds, "5") && !strcmp(r->input, "exp/run.json") && !strcmp(r->run_seeds, "1,2,3,4,5") &&
               !strcmp(r->run_hash, "fnv1a64:1"), "n seeds and the run's fingerprint recorded");
    check_true(r && strstr(r->measurement, "exp/metrics.csv[info_type=\"structured\"].consistency"), "measurement named: %s",
               r ? r->measurement : "");
    r = row_of(&a, "floor");
    check_true(r && r->verdict == EPAR_AUDIT_REPRODUCED && strstr(r->accepted, "run-level floor"),
               "a tiny sd floored by the run-level se: %s", r ? r->accepted : "");
    check_true((r = row_of(&a, "off")) && r->verdict == EPAR_AUDIT_NOT_REPRODUCED, "outside -> not reproduced");
    check_true(r && !strcmp(r->measured, "0.9") && !strcmp(r->measured_sd, "0.01") && strstr(r->note, "not reproduced:"),
               "measured, sd and the reason shown");
    check_true((r = row_of(&a, "oneseed")) && r->verdict == EPAR_AUDIT_NEEDS_SEEDS, "one seed -> needs >= 2 seeds");
    r = row_of(&a, "onemean_std");
    check_true(r && r->verdict == EPAR_AUDIT_NEEDS_SEEDS && !strstr(r->note, "t(-1)") && !strstr(r->accepted, "nan"),
               "a ref_opt_*_std-shaped claim (mean over one seed's row) -> needs >= 2 seeds: %s", r ? r->note : "");
    check_true((r = row_of(&a, "stale")) && r->verdict == EPAR_AUDIT_STALE && strstr(r->note, "gamma=0.5") &&
               strstr(r->note, "would be: reproduced"), "another run's output -> stale, with the would-be verdict");
    check_true((r = row_of(&a, "missing")) && r->verdict == EPAR_AUDIT_NOT_HERE && r->missing_file &&
               strstr(r->note, "output/optimal/none.csv missing"), "missing file -> not here, said so");
    check_true((r = row_of(&a, "speccol")) && r->verdict == EPAR_AUDIT_NOT_HERE && r->spec_problem &&
               strstr(r->note, "column 'ranking' not in the file"), "wrong column -> spec problem named");
    check_true((r = row_of(&a, "train")) && r->verdict == EPAR_AUDIT_NOT_HERE && strstr(r->note, "training"),
               "needs training -> not here with the reason");
    check_true((r = row_of(&a, "ident")) && r->verdict == EPAR_AUDIT_TRIVIAL && strstr(r->note, "by construction: e^x > 0"),
               "identity -> trivially true with its reason");
    check_true((r = row_of(&a, "brokenident")) && r->verdict == EPAR_AUDIT_NOT_REPRODUCED && r->broken_identity,
               "a failing identity is not reproduced and flagged");
    r = row_of(&a, "ret");
    check_true(r && r->verdict == EPAR_AUDIT_NOT_REPRODUCED, "36.8%% is not 2.8%%");
    check_true(r && strstr(r->note, "alternative reading (steep") && strstr(r->note, "would match"),
               "alternative named, verdict kept: %s", r ? r->note : "");
    check_true((r = row_of(&a, "partly")) && r->verdict == EPAR_AUDIT_PARTLY, "one reading of two -> partly");
    check_true((r = row_of(&a, "quorum1")) && r->verdict == EPAR_AUDIT_REPRODUCED && strstr(r->note, "quorum: 1 of 2"),
               "quorum 1: one reading of two holds -> reproduced");
    check_true((r = row_of(&a, "quorum2")) && r->verdict == EPAR_AUDIT_NOT_REPRODUCED,
               "quorum 2: one reading of two fails -> not reproduced");
    check_true((r = row_of(&a, "ill")) && r->verdict == EPAR_AUDIT_ILL_POSED, "ill-posed flag -> ill-posed");
    check_int(a.counts[EPAR_AUDIT_REPRODUCED], 3, "count reproduced");
    check_int(a.stale, 1, "count stale");
    struct epar_table *t = epar_audit_table(&a);
    check_true(t && t->ncols == 20 && !strcmp(t->cols[0], "claim_id") && !strcmp(t->cols[18], "note") && !strcmp(t->cols[19], "seeds_needed") &&
               epar_csv_col(t, "measurement") >= 0 && epar_csv_col(t, "accepted") >= 0, "claims.csv schema");
    check_int((long)t->nrows, (long)a.n, "one row per claim");
    for (size_t i = 0; i < a.n; i++) check_true(a.rows[i].note[0] != '\0', "every note says how (%s)", a.rows[i].id);
    epar_csv_free(t);
    t = epar_audit_section_counts(&a);
    check_true(t && t->ncols == 1 + EPAR_AUDIT_VERDICT_COUNT, "a count column per verdict");
    epar_csv_free(t);
    epar_audit_free(&a);
    json_decref(claims);
    snprintf(p, sizeof p, "rm -rf '%s'", dir);
    if (system(p) != 0) check_true(0, "cleanup");
}

/* a trained proxy none of whose models beat a constant answer is not judged: inconclusive, whatever the difference */
static void not_learned(void)
{
    char dir[] = "/tmp/epar-test-audit.XXXXXX";
    if (!mkdtemp(dir)) { check_true(0, "mkdtemp"); return; }
    char p[256];
    snprintf(p, sizeof p, "%s/bench", dir);
    mkdir(p, 0777);
    write_file(dir, "bench/main_table.csv", "task,rel,rel_sd,learned\nnone,0.2,0.01,0\nsome,0.2,0.01,2\nunknown,0.2,0.01,nan\n"
                                            "worse,-0.2,0.01,2\n");
    write_file(dir, "bench/run.json", "{\"protocol_hash\": \"h\", \"cli_overrides\": \"\", \"epar_version\": \"9\","
                                      " \"parameters\": {\"preset\": \"p\", \"seeds\": [1, 2, 3]}}");
#define R(t) "{\"file\": \"bench/main_table.csv\", \"where\": {\"task\": \"" t "\"}, \"column\": \"rel\", \"sd_column\": \"rel_sd\", \"learned_column\": \"learned\"}"
#define RL(t) "{\"label\": \"" t "\", \"file\": \"bench/main_table.csv\", \"where\": {\"task\": \"" t "\"}, \"column\": \"rel\", \"sd_column\": \"rel_sd\", \"learned_column\": \"learned\"}"
#define N "\"source\": \"s\", \"statement\": \"t\", \"reported\": 0, \"tolerance\": {\"rule\": \"above\"}, "
    json_t *claims = J("["
        "{\"id\": \"none\", " N "\"measure\": " R("none") "},"
        "{\"id\": \"some\", " N "\"measure\": " R("some") "},"
        "{\"id\": \"unknown\", " N "\"measure\": " R("unknown") "},"
        "{\"id\": \"mixed\", " N "\"measure\": {\"readings\": [" RL("some") ", " RL("none") "]}},"
        "{\"id\": \"failopen\", " N "\"measure\": {\"readings\": [" RL("worse") ", " RL("none") "]}},"
        "{\"id\": \"failopen2\", " N "\"measure\": {\"quorum\": 1, \"readings\": [" RL("worse") ", " RL("none") "]}}"
        "]");
#undef R
#undef RL
#undef N
    check_int(epar_audit_check(claims, "p.json"), EPAR_OK, "learned_column accepted: %s", epar_err_message());
    struct epar_audit_ctx ctx = {dir, 0.95, NULL, 0, NULL, NULL};
    struct epar_audit a;
    check_int(epar_audit_run(claims, &ctx, &a), EPAR_OK, "audit runs");
    const struct epar_audit_row *r;
    r = row_of(&a, "none");
    check_true(r && r->verdict == EPAR_AUDIT_INCONCLUSIVE && strstr(r->note, "no model learned"),
               "a clear gain on a task no model learned -> inconclusive, said why: %s", r ? r->note : "");
    check_true((r = row_of(&a, "some")) && r->verdict == EPAR_AUDIT_REPRODUCED, "learned by 2 -> judged (reproduced)");
    check_true((r = row_of(&a, "unknown")) && r->verdict == EPAR_AUDIT_REPRODUCED,
               "no chance level recorded (nan) -> judged as before");
    r = row_of(&a, "mixed");
    check_true(r && r->verdict == EPAR_AUDIT_INCONCLUSIVE && strstr(r->note, "1 of the 2 readings"),
               "one reading not learned -> inconclusive: %s", r ? r->note : "");
    r = row_of(&a, "failopen");
    check_true(r && r->verdict == EPAR_AUDIT_NOT_REPRODUCED && strstr(r->note, "1 of the 2 readings do not meet") &&
               strstr(r->note, "at best make it partly"),
               "every reading must hold, one fails, the other open -> not reproduced, said why: %s", r ? r->note : "");
    check_true((r = row_of(&a, "failopen2")) && r->verdict == EPAR_AUDIT_INCONCLUSIVE,
               "quorum 1 of 2: one fails, the other open -> inconclusive (the open one could still carry it)");
    epar_audit_free(&a);
    json_decref(claims);
    claims = J("[{\"id\": \"x\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 0, \"measure\": "
               "{\"file\": \"bench/main_table.csv\", \"column\": \"rel\", \"learned_column\": 3}, \"tolerance\": {\"rule\": \"above\"}}]");
    check_int(epar_audit_check(claims, "p.json"), EPAR_EPROTOCOL, "learned_column must be a column name");
    json_decref(claims);
    snprintf(p, sizeof p, "rm -rf '%s'", dir);
    if (system(p) != 0) check_true(0, "cleanup");
}

/* beats_all: the smallest lower end of the intervals against every rival, and the smallest Holm-adjusted p of a
 * better rival (experiments/benchmark's comparisons) */
static void beats_all(void)
{
    struct epar_audit_tol t = {EPAR_AUDIT_BEATS_ALL, 0, 0, 0, 0, NAN, 0};
    char acc[512];
    struct epar_audit_meas m = EPAR_AUDIT_MEAS_NONE;
    m.value = 0.05;   /* the smallest improvement; lo (the smallest lower end) decides */
    m.lo = 0.01;
    m.hi = 0.09;
    m.n = 3;
    check_int(epar_audit_judge(&t, 0, 0, &m, 0.95, acc, sizeof acc), EPAR_AUDIT_HOLDS,
              "beats_all: every interval above 0 -> holds");
    m.lo = -0.2;
    m.holm = 0.2;
    check_int(epar_audit_judge(&t, 0, 0, &m, 0.95, acc, sizeof acc), EPAR_AUDIT_OPEN,
              "beats_all: an interval reaching below 0, no rival better after Holm -> open");
    m.holm = 0.01;
    check_int(epar_audit_judge(&t, 0, 0, &m, 0.95, acc, sizeof acc), EPAR_AUDIT_FAILS,
              "beats_all: a rival better at Holm-adjusted p 0.01 -> fails");
    check_true(strstr(acc, "Holm-adjusted p < 0.05") != NULL, "beats_all: the accepted text names the level (%s)", acc);
    m.holm = NAN;
    m.lo = 0;
    check_int(epar_audit_judge(&t, 0, 0, &m, 0.95, acc, sizeof acc), EPAR_AUDIT_OPEN,
              "beats_all: a lower end at 0 -> open");
    m.lo = NAN;
    check_int(epar_audit_judge(&t, 0, 0, &m, 0.95, acc, sizeof acc), EPAR_AUDIT_NO_SPREAD,
              "beats_all: a comparison without an interval (NaN, e.g. every cell at 1.0) with 3 seeds -> no spread, "
              "judged like an unlearned task, never as a certain interval");
    m.holm = 0.01;
    check_int(epar_audit_judge(&t, 0, 0, &m, 0.95, acc, sizeof acc), EPAR_AUDIT_FAILS,
              "beats_all: ... but a rival better after Holm still fails it");
    m.holm = NAN;
    {   /* the reported gain (non-superiority): every rival beaten, but some rival's adjusted interval ends below it */
        struct epar_audit_tol tg = t;
        tg.gain = 0.047;
        m.lo = 0.01;
        m.nonsup = 0.03;
        check_int(epar_audit_judge(&tg, 0, 0, &m, 0.95, acc, sizeof acc), EPAR_AUDIT_FAILS,
                  "beats_all with a reported gain 4.7 %%: a rival's adjusted interval ends at 3 %% -> fails (gain excluded)");
        check_true(strstr(acc, "reported gain 0.047") != NULL, "beats_all: the accepted text names the gain (%s)", acc);
        m.nonsup = 0.06;
        check_int(epar_audit_judge(&tg, 0, 0, &m, 0.95, acc, sizeof acc), EPAR_AUDIT_HOLDS,
                  "beats_all with a reported gain: every interval above 0 and the gain inside every interval -> holds");
        m.lo = -0.01;
        check_int(epar_audit_judge(&tg, 0, 0, &m, 0.95, acc, sizeof acc), EPAR_AUDIT_OPEN,
                  "beats_all with a reported gain: a lower end below 0, the gain not excluded -> open");
        m.nonsup = 0.03;
        check_int(epar_audit_judge(&t, 0, 0, &m, 0.95, acc, sizeof acc), EPAR_AUDIT_OPEN,
                  "beats_all without a gain ignores the non-superiority bound");
        m.nonsup = NAN;
    }
    m.n = 1;
    check_int(epar_audit_judge(&t, 0, 0, &m, 0.95, acc, sizeof acc), EPAR_AUDIT_FEW_SEEDS,
              "beats_all: one seed (no interval) -> needs >= 2 seeds");
    enum epar_audit_rule r;
    check_int(epar_audit_rule_parse("beats_all", &r), EPAR_OK, "beats_all parses");
    check_int(r, EPAR_AUDIT_BEATS_ALL, "beats_all is its rule");
}

/* a measurement's own interval (lo_column, hi_column: e.g. the distribution-free interval of a median that the
 * benchmark's cost cell computes): the threshold rules judge it, however asymmetric, instead of m +- t s / sqrt(n) */
static void own_interval(void)
{
    struct epar_audit_tol t = {EPAR_AUDIT_BELOW, 0, 0, 0, 0, NAN, 0};
    char acc[256];
    /* an sd and n that alone would give 0.01 +- 2.776 x 0.05 / sqrt 5 = [-0.052, 0.072]: not used */
    struct epar_audit_meas m = {.value = 0.01, .stochastic = 1, .sd = 0.05, .n = 5, .se_run = NAN, .se = NAN, .holm = NAN,
                                 .interval = 1, .lo = -0.004, .hi = 0.0119, .nonsup = NAN};
    check_int(epar_audit_judge(&t, 0.012, 0, &m, 0.95, acc, sizeof acc), EPAR_AUDIT_HOLDS,
              "own interval: [-0.004, 0.0119] below 0.012 -> holds (the t interval would straddle)");
    check_true(strstr(acc, "[-0.004, 0.0119]") != NULL, "own interval: shown as accepted (%s)", acc);
    m.hi = 0.012;
    check_int(epar_audit_judge(&t, 0.012, 0, &m, 0.95, acc, sizeof acc), EPAR_AUDIT_OPEN,
              "own interval: an upper end at the threshold is not below it -> open");
    m.lo = 0.012;
    m.hi = 0.03;
    check_int(epar_audit_judge(&t, 0.012, 0, &m, 0.95, acc, sizeof acc), EPAR_AUDIT_FAILS,
              "own interval: the whole interval at or above the threshold -> fails");
    m.lo = NAN;
    check_int(epar_audit_judge(&t, 0.012, 0, &m, 0.95, acc, sizeof acc), EPAR_AUDIT_OPEN,
              "own interval undefined (too few values): open, not judged by the sd");
    struct epar_audit_tol rg = {EPAR_AUDIT_RANGE, 0, 0.0, 0.02, 0, NAN, 0};
    m.lo = 0.001;
    m.hi = 0.019;
    check_int(epar_audit_judge(&rg, 0, 0, &m, 0.95, acc, sizeof acc), EPAR_AUDIT_HOLDS, "own interval inside a range");

    char dir[] = "/tmp/epar-test-audit.XXXXXX";
    if (!mkdtemp(dir)) { check_true(0, "mkdtemp"); return; }
    char p[256];
    snprintf(p, sizeof p, "%s/bench", dir);
    mkdir(p, 0777);
    write_file(dir, "bench/cost.csv", "mechanism,over,over_sd,over_lo,over_hi,pairs\n"
                                      "a,0.01,0.05,-0.004,0.0119,40\nb,0.01,0.05,0.005,0.02,40\n");
    write_file(dir, "bench/run.json", "{\"protocol_hash\": \"h\", \"cli_overrides\": \"\", \"epar_version\": \"9\","
                                      " \"parameters\": {\"preset\": \"p\", \"seeds\": [1]}}");
#define C(id, m, lo) "{\"id\": \"" id "\", \"source\": \"s\", \"statement\": \"t\", \"reported\": \"1.2%\", " \
    "\"tolerance\": {\"rule\": \"below\"}, \"measure\": {\"file\": \"bench/cost.csv\", \"where\": {\"mechanism\": \"" m "\"}, " \
    "\"column\": \"over\", \"lo_column\": \"" lo "\", \"hi_column\": \"over_hi\", \"n_column\": \"pairs\"}}"
    json_t *claims = J("[" C("a", "a", "over_lo") ", " C("b", "b", "over_lo") ", " C("gone", "a", "over_low") "]");
    check_int(epar_audit_check(claims, "p.json"), EPAR_OK, "lo_column and hi_column accepted: %s", epar_err_message());
    struct epar_audit_ctx ctx = {dir, 0.95, NULL, 0, NULL, NULL};
    struct epar_audit a;
    check_int(epar_audit_run(claims, &ctx, &a), EPAR_OK, "audit runs");
    const struct epar_audit_row *r;
    check_true((r = row_of(&a, "a")) && r->verdict == EPAR_AUDIT_REPRODUCED,
               "the file's interval [-0.004, 0.0119] below 1.2%% -> reproduced (one seed, one run: no seeds needed)");
    check_true((r = row_of(&a, "b")) && r->verdict == EPAR_AUDIT_INCONCLUSIVE, "[0.005, 0.02] straddles 1.2%% -> inconclusive");
    r = row_of(&a, "gone");
    check_true(r && r->verdict == EPAR_AUDIT_NOT_HERE && strstr(r->note, "over_low"),
               "an interval column the file lacks is a spec problem naming it: %s", r ? r->note : "");
    epar_audit_free(&a);
    json_decref(claims);
    claims = J("[{\"id\": \"x\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 0, \"measure\": "
               "{\"file\": \"bench/cost.csv\", \"column\": \"over\", \"lo_column\": \"over_lo\"}, \"tolerance\": {\"rule\": \"below\"}}]");
    check_int(epar_audit_check(claims, "p.json"), EPAR_EPROTOCOL, "lo_column without hi_column is refused");
    json_decref(claims);
#undef C
    snprintf(p, sizeof p, "rm -rf '%s'", dir);
    if (system(p) != 0) check_true(0, "cleanup");
}


/* issue 32's rule fixes on a small file of five "types" (3 seeds):
 * - "min" takes the chosen row's run-level se, not another row's (the floor of opt_all_patterns_above_0.7);
 * - "every": reproduced when every row's interval is above, not reproduced when some row is below after Holm across
 *   the rows (a row below by its single interval but not after the adjustment stays inconclusive);
 * - group_by with a run-level se: the floor of a group's mean is sqrt(sum se^2) / rows (ref_opt_average_consistency);
 * - a reading whose seeds all gave the same value (sd 0, no floor) is no interval: inconclusive, never reproduced. */
static void rules_issue32(void)
{
    char dir[] = "/tmp/epar-test-audit.XXXXXX";
    if (!mkdtemp(dir)) { check_true(0, "mkdtemp"); return; }
    char p[256];
    snprintf(p, sizeof p, "%s/opt", dir);
    mkdir(p, 0777);
    /* the lowest row (c) has a tiny sd and a large run-level se; a's se_run is the smallest of the column */
    write_file(dir, "opt/types.csv", "type,v,v_sd,v_se_run\na,0.80,0.01,0.001\nb,0.90,0.01,0.002\nc,0.71,0.0001,0.05\n");
    write_file(dir, "opt/above.csv", "type,v,v_sd\na,0.80,0.01\nb,0.90,0.01\n");
    /* row b lies below 0.7 by its own 95 % interval (0.69 +- 4.30 x 0.001 / sqrt 3 = [0.6875, 0.6925]) but not at the
     * Bonferroni level 1 - 0.05 / 2 over the two rows? t(0.9875, 2) = 6.21: 0.69 + 6.21 x 0.001 / 1.732 = 0.6936 < 0.7:
     * rejected after the adjustment too; row d (0.698) is below by its interval but not after it */
    write_file(dir, "opt/below.csv", "type,v,v_sd\na,0.80,0.01\nb,0.69,0.001\n");
    write_file(dir, "opt/near.csv", "type,v,v_sd\na,0.80,0.01\nd,0.698,0.001\n");
    write_file(dir, "opt/groups.csv", "seed,type,v,v_se_run\n1,a,0.80,0.03\n1,b,0.78,0.04\n2,a,0.81,0.03\n2,b,0.79,0.04\n"
                                      "3,a,0.80,0.03\n3,b,0.785,0.04\n");
    write_file(dir, "opt/sat.csv", "task,gain,gain_sd\nrecall,0,0\n");
    write_file(dir, "opt/gdecay.csv", "seed,task,v\n1,a,-0.12\n1,b,-0.08\n2,a,-0.03\n2,b,-0.01\n3,a,-0.05\n3,b,-0.07\n");
    write_file(dir, "opt/run.json", "{\"protocol_hash\": \"h\", \"cli_overrides\": \"\", \"epar_version\": \"9\","
                                    " \"parameters\": {\"preset\": \"p\", \"seeds\": [1, 2, 3]}}");
#define N "\"source\": \"s\", \"statement\": \"t\", "
    json_t *claims = J("["
        "{\"id\": \"min\", " N "\"reported\": 0.7, \"measure\": {\"file\": \"opt/types.csv\", \"column\": \"v\", \"sd_column\": \"v_sd\", \"se_run_column\": \"v_se_run\", \"aggregate\": \"min\"}, \"tolerance\": {\"rule\": \"above\"}},"
        "{\"id\": \"every_up\", " N "\"reported\": 0.7, \"measure\": {\"file\": \"opt/above.csv\", \"column\": \"v\", \"sd_column\": \"v_sd\", \"aggregate\": \"every\"}, \"tolerance\": {\"rule\": \"above\"}},"
        "{\"id\": \"every_down\", " N "\"reported\": 0.7, \"measure\": {\"file\": \"opt/below.csv\", \"column\": \"v\", \"sd_column\": \"v_sd\", \"aggregate\": \"every\"}, \"tolerance\": {\"rule\": \"above\"}},"
        "{\"id\": \"every_near\", " N "\"reported\": 0.7, \"measure\": {\"file\": \"opt/near.csv\", \"column\": \"v\", \"sd_column\": \"v_sd\", \"aggregate\": \"every\"}, \"tolerance\": {\"rule\": \"above\"}},"
        "{\"id\": \"group\", " N "\"reported\": \"0.7\", \"measure\": {\"file\": \"opt/groups.csv\", \"column\": \"v\", \"se_run_column\": \"v_se_run\", \"aggregate\": \"mean\", \"group_by\": \"seed\"}, \"tolerance\": {\"rule\": \"prediction\"}},"
        "{\"id\": \"gdecay\", " N "\"reported\": 0, \"measure\": {\"file\": \"opt/gdecay.csv\", \"column\": \"v\", \"aggregate\": \"mean\", \"group_by\": \"seed\"}, \"tolerance\": {\"rule\": \"below\"}},"
        "{\"id\": \"sat\", " N "\"reported\": 0, \"measure\": {\"file\": \"opt/sat.csv\", \"where\": {\"task\": \"recall\"}, \"column\": \"gain\", \"sd_column\": \"gain_sd\"}, \"tolerance\": {\"rule\": \"below\"}}"
        "]");
#undef N
    check_int(epar_audit_check(claims, "p.json"), EPAR_OK, "issue-32 claims valid: %s", epar_err_message());
    struct epar_audit_ctx ctx = {dir, 0.95, NULL, 0, NULL, NULL};
    struct epar_audit a;
    check_int(epar_audit_run(claims, &ctx, &a), EPAR_OK, "audit runs");
    const struct epar_audit_row *r = row_of(&a, "min");
    /* c's interval with its own floor 0.05: 0.71 - 4.30 x 0.05 / sqrt 3 < 0.7 -> open; with a's 0.001 it would hold */
    check_true(r && r->verdict == EPAR_AUDIT_INCONCLUSIVE && strstr(r->accepted, "run-level floor"),
               "min: the chosen row's own run-level se floors its sd (%s)", r ? r->accepted : "");
    check_true((r = row_of(&a, "every_up")) && r->verdict == EPAR_AUDIT_REPRODUCED, "every: both rows above -> reproduced");
    r = row_of(&a, "every_down");
    check_true(r && r->verdict == EPAR_AUDIT_NOT_REPRODUCED,
               "every: a row below after the Holm adjustment -> not reproduced (%s)", r ? r->accepted : "");
    r = row_of(&a, "every_near");
    check_true(r && r->verdict == EPAR_AUDIT_INCONCLUSIVE,
               "every: a row below by its own interval but not after the adjustment -> inconclusive (%s)",
               r ? r->accepted : "");
    r = row_of(&a, "group");
    /* group means 0.79, 0.80, 0.7925: sd 0.0052; floor sqrt((0.03^2 + 0.04^2)) / 2 = 0.025 */
    check_true(r && strstr(r->accepted, "run-level floor") && strstr(r->accepted, "0.025"),
               "group_by: the group mean's run-level floor sqrt(sum se^2)/rows = 0.025 (%s)", r ? r->accepted : "");
    r = row_of(&a, "gdecay");
    /* seed means -0.10, -0.02, -0.06: sd 0.04, t(2) 4.30 x 0.04 / sqrt 3 = 0.099 straddles 0; n counts the seeds, so
     * the seeds needed are computed: t(k-1) 0.04 / sqrt k < 0.06 first at k = 5 */
    check_true(r && r->verdict == EPAR_AUDIT_INCONCLUSIVE && r->seeds_help && r->seeds_needed == 5,
               "group_by seed: n counts the seeds, seeds_needed 5 (%g; %s)", r ? r->seeds_needed : -1,
               r ? r->accepted : "");
    r = row_of(&a, "sat");
    check_true(r && r->verdict == EPAR_AUDIT_INCONCLUSIVE && strstr(r->note, "no interval"),
               "saturated reading (sd 0 over 3 seeds) -> inconclusive, said why: %s", r ? r->note : "");
    epar_audit_free(&a);
    json_decref(claims);
    claims = J("[{\"id\": \"x\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 0.7, \"measure\": {\"file\": "
               "\"opt/above.csv\", \"column\": \"v\", \"aggregate\": \"every\"}, \"tolerance\": {\"rule\": \"above\"}}]");
    check_int(epar_audit_check(claims, "p.json"), EPAR_EPROTOCOL, "every without an sd_column is refused");
    json_decref(claims);
    claims = J("[{\"id\": \"x\", \"source\": \"s\", \"statement\": \"t\", \"reported\": 0, \"measure\": {\"file\": "
               "\"opt/above.csv\", \"column\": \"v\"}, \"tolerance\": {\"rule\": \"above\", \"gain\": 0.05}}]");
    check_int(epar_audit_check(claims, "p.json"), EPAR_EPROTOCOL, "a gain outside beats_all is refused");
    json_decref(claims);
    snprintf(p, sizeof p, "rm -rf '%s'", dir);
    if (system(p) != 0) check_true(0, "cleanup");
}

/* beats_all from a file: measured is the smallest improvement, measured_lo and measured_hi its interval (each reading's
 * in "a; b"), the verdict follows the lower end; a beats_all claim without lo_column is refused */
static void beats_all_file(void)
{
    char dir[] = "/tmp/epar-test-audit.XXXXXX";
    if (!mkdtemp(dir)) { check_true(0, "mkdtemp"); return; }
    char p[256];
    snprintf(p, sizeof p, "%s/bench", dir);
    mkdir(p, 0777);
    write_file(dir, "bench/main_table.csv", "task,seeds,min_rel,min_lo,min_hi,holm_p\nlm,3,-0.46,-1.42,0.5,0.01\n"
                                            "copy,3,0.2,0.05,0.35,nan\nsame,3,0.01,-0.3,0.32,nan\n");
#define R(t) "\"file\": \"bench/main_table.csv\", \"where\": {\"task\": \"" t "\"}, \"column\": \"min_rel\", " \
             "\"lo_column\": \"min_lo\", \"hi_column\": \"min_hi\", \"holm_column\": \"holm_p\", \"n_column\": \"seeds\""
#define N "\"source\": \"s\", \"statement\": \"t\", \"reported\": 0, \"tolerance\": {\"rule\": \"beats_all\"}, "
    json_t *claims = J("["
        "{\"id\": \"lm\", " N "\"measure\": {" R("lm") "}},"
        "{\"id\": \"copy\", " N "\"measure\": {" R("copy") "}},"
        "{\"id\": \"two\", " N "\"measure\": {\"readings\": [{\"label\": \"copy\", " R("copy") "}, {\"label\": \"same\", "
        R("same") "}]}}"
        "]");
    check_int(epar_audit_check(claims, "p.json"), EPAR_OK, "beats_all claims with an interval: %s", epar_err_message());
    struct epar_audit_ctx ctx = {dir, 0.95, NULL, 0, NULL, NULL};
    struct epar_audit a;
    check_int(epar_audit_run(claims, &ctx, &a), EPAR_OK, "audit runs");
    const struct epar_audit_row *r = row_of(&a, "lm");
    check_true(r && r->verdict == EPAR_AUDIT_NOT_REPRODUCED && !strcmp(r->measured, "-0.46") &&
                   !strcmp(r->measured_lo, "-1.42") && !strcmp(r->measured_hi, "0.5"),
               "a baseline better after Holm: not reproduced, measured the effect -0.46 in [-1.42, 0.5] (got %s [%s, %s])",
               r ? r->measured : "", r ? r->measured_lo : "", r ? r->measured_hi : "");
    check_true(r && strstr(r->note, "measured -0.46 [-1.42, 0.5]"), "the note gives the interval: %s", r ? r->note : "");
    r = row_of(&a, "copy");
    check_true(r && r->verdict == EPAR_AUDIT_REPRODUCED && !strcmp(r->measured, "0.2"), "every interval above 0: reproduced");
    r = row_of(&a, "two");
    check_true(r && r->verdict == EPAR_AUDIT_INCONCLUSIVE && !strcmp(r->measured, "0.2; 0.01") &&
                   !strcmp(r->measured_lo, "0.05; -0.3") && !strcmp(r->measured_hi, "0.35; 0.32"),
               "two readings: each with its interval (got %s, [%s], [%s], %s)", r ? r->measured : "",
               r ? r->measured_lo : "", r ? r->measured_hi : "", r ? epar_audit_verdict_name(r->verdict) : "");
    struct epar_table *t = epar_audit_table(&a);
    check_true(t && epar_csv_col(t, "measured_lo") == 7 && epar_csv_col(t, "measured_hi") == 8,
               "claims.csv has the interval beside measured_sd");
    epar_csv_free(t);
    epar_audit_free(&a);
    json_decref(claims);
    claims = J("[{\"id\": \"x\", " N "\"measure\": {\"file\": \"bench/main_table.csv\", \"column\": \"min_rel\"}}]");
    check_int(epar_audit_check(claims, "p.json"), EPAR_EPROTOCOL, "beats_all without lo_column refused");
    check_true(strstr(epar_err_message(), "$.claims[0].measure") && strstr(epar_err_message(), "lo_column"),
               "the error names the measure and lo_column: %s", epar_err_message());
    json_decref(claims);
    claims = J("[{\"id\": \"x\", " N "\"measure\": {\"readings\": [{\"label\": \"a\", " R("lm") "}, {\"label\": \"b\", "
               "\"file\": \"bench/main_table.csv\", \"column\": \"min_rel\"}]}}]");
    check_int(epar_audit_check(claims, "p.json"), EPAR_EPROTOCOL, "a beats_all reading without lo_column refused");
    check_true(strstr(epar_err_message(), "$.claims[0].measure.readings[1]") != NULL, "the error names the reading: %s",
               epar_err_message());
    json_decref(claims);
#undef R
#undef N
    snprintf(p, sizeof p, "rm -rf '%s'", dir);
    if (system(p) != 0) check_true(0, "cleanup");
}

/* issue 51's fixes found by an outside re-derivation:
 * - a share of n trials is judged on Wilson's interval, never certain at n of n (10 of 10: [0.722, 1]);
 * - "every" shows the deciding row's own interval at one level in measured_lo/hi, not the decision's two ends;
 * - a beats_all claim with a gain keeps its whole accepted text (it was cut at 319 characters, mid-number). */
static void rederivation_fixes(void)
{
    char dir[] = "/tmp/epar-test-audit.XXXXXX";
    if (!mkdtemp(dir)) { check_true(0, "mkdtemp"); return; }
    char p[256];
    snprintf(p, sizeof p, "%s/opt", dir);
    mkdir(p, 0777);
    write_file(dir, "opt/checks.csv", "check,value,trials\nten,1,10\nhundred,1,100\nnone,0,100\n");
    write_file(dir, "opt/above.csv", "type,v,v_sd\na,0.80,0.01\nb,0.90,0.01\n");
    write_file(dir, "opt/main.csv", "task,seeds,min_rel,min_lo,min_hi,holm_p,nonsup\nlm,4,0.0052,-0.0021,0.0125,nan,0.0077\n");
    write_file(dir, "opt/run.json", "{\"protocol_hash\": \"h\", \"cli_overrides\": \"\", \"epar_version\": \"9\","
                                    " \"parameters\": {\"preset\": \"p\", \"seeds\": [1, 2, 3]}}");
#define N "\"source\": \"s\", \"statement\": \"t\", "
#define P(id, c) "{\"id\": \"" id "\", " N "\"reported\": 0.9, \"measure\": {\"file\": \"opt/checks.csv\", \"where\": " \
    "{\"check\": \"" c "\"}, \"column\": \"value\", \"trials_column\": \"trials\"}, \"tolerance\": {\"rule\": \"above\"}}"
    json_t *claims = J("[" P("ten", "ten") ", " P("hundred", "hundred") ", " P("none", "none") ", "
        "{\"id\": \"every\", " N "\"reported\": 0.7, \"measure\": {\"file\": \"opt/above.csv\", \"column\": \"v\", \"sd_column\": \"v_sd\", \"aggregate\": \"every\"}, \"tolerance\": {\"rule\": \"above\"}},"
        "{\"id\": \"gain\", " N "\"reported\": 0, \"measure\": {\"file\": \"opt/main.csv\", \"where\": {\"task\": \"lm\"}, \"column\": \"min_rel\", \"lo_column\": \"min_lo\", \"hi_column\": \"min_hi\", \"holm_column\": \"holm_p\", \"nonsup_column\": \"nonsup\", \"n_column\": \"seeds\"}, \"tolerance\": {\"rule\": \"beats_all\", \"gain\": 0.0041}}"
        "]");
#undef P
#undef N
    check_int(epar_audit_check(claims, "p.json"), EPAR_OK, "trials_column accepted: %s", epar_err_message());
    struct epar_audit_ctx ctx = {dir, 0.95, NULL, 0, NULL, NULL};
    struct epar_audit a;
    check_int(epar_audit_run(claims, &ctx, &a), EPAR_OK, "audit runs");
    const struct epar_audit_row *r = row_of(&a, "ten");
    /* Wilson at z = 1.959964: (1 + z^2/20) / (1 + z^2/10) - z / (1 + z^2/10) sqrt(z^2 / 400) = 0.72246 */
    check_true(r && r->verdict == EPAR_AUDIT_INCONCLUSIVE && r->measured_lo && !strncmp(r->measured_lo, "0.7224", 6),
               "10 of 10 for 'at least 0.9': Wilson [0.7225, 1] straddles -> inconclusive (%s, lo %s)",
               r ? epar_audit_verdict_name(r->verdict) : "", r ? r->measured_lo : "");
    r = row_of(&a, "hundred");
    check_true(r && r->verdict == EPAR_AUDIT_REPRODUCED, "100 of 100: Wilson's lower end 0.963 > 0.9 -> reproduced");
    r = row_of(&a, "none");
    check_true(r && r->verdict == EPAR_AUDIT_NOT_REPRODUCED, "0 of 100: Wilson's upper end 0.037 < 0.9 -> not reproduced");
    r = row_of(&a, "every");
    /* the lowest row a: 0.80 +- t(2) 4.303 x 0.01 / sqrt 3 = [0.77516, 0.82484] */
    check_true(r && r->measured_lo && r->measured_hi && !strncmp(r->measured_lo, "0.7751", 6) &&
               !strncmp(r->measured_hi, "0.8248", 6),
               "every: measured_lo/hi is the lowest row's own 95 %% interval (%s, %s)", r ? r->measured_lo : "",
               r ? r->measured_hi : "");
    check_true(r && strstr(r->accepted, "adjusted level 0.975"), "every: accepted names the adjusted level (%s)",
               r ? r->accepted : "");
    r = row_of(&a, "gain");
    check_true(r && r->verdict == EPAR_AUDIT_INCONCLUSIVE && strstr(r->accepted, "smallest upper end: 0.0077)"),
               "beats_all with a gain: the whole accepted text, non-superiority figure 0.0077 intact (%s)",
               r ? r->accepted : "");
    epar_audit_free(&a);
    json_decref(claims);
    snprintf(p, sizeof p, "rm -rf '%s'", dir);
    if (system(p) != 0) check_true(0, "cleanup");
}

int main(void)
{
    rules();
    beats_all();
    own_interval();
    verdicts();
    quantities();
    selection();
    validation();
    evaluation();
    not_learned();
    rules_issue32();
    beats_all_file();
    rederivation_fixes();
    return check_summary("test_audit");
}
