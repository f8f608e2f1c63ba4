/* What the reproduction report says, computed from the audit, the protocol and the files beside them (see
 * report_int.h). */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/err.h"
#include "lib/posfx.h"
#include "lib/publish.h"
#include "experiments/benchmark/bench_stage.h"
#include "experiments/common.h"
#include "experiments/report/report_int.h"


/* Paper-section titles of the claim groups (the "section" of each claim), and the few words the bottom line calls
 * them by; unknown groups use their name. */
static const struct {
    const char *id, *title, *plain;
} group_titles[] = {
    {"thm1", "Theorem 1 and the lower bound (paper §4)", "Theorem 1 and its lower bound"},
    {"retention", "Information retention of the enhanced form (paper §4)", "The retention figures (x4.2, x28.3, 78 %, 2.8 %)"},
    {"optimal", "Optimal position, consistency and ranking (paper §4.3)", "The optimal position, consistency and ranking"},
    {"reference-optimal", "The reference's committed verification_report.txt (output/optimal)",
     "The reference's committed verification report"},
    {"reference-parameter", "The reference's committed sensitivity CSVs (appendix, output/parameter)",
     "The reference's committed sensitivity tables"},
    {"identities", "Identities the reference prints as measurements", "Identities printed as measurements"},
    {"cost", "Cost of the position effect", "The cost of the position effect"},
    {"training", "Main results table (paper §5.2): trained 110M models", "The main results table (trained models)"},
    {"when-to-use", "When to use EPAR (paper §5.4)", "When to use EPAR"},
    {"trained-attention", "What trained attention concentrates on (paper §4, on the benchmark's trained proxies)",
     "What trained attention concentrates on"},
    {"seeds", "Statements of the other source documents (001-004, epar compare)", "The other source documents' statements"},
    {"related-work", "The paper on other position methods (paper README, epar compare)", "The paper on other position methods"},
    {"extrapolation", "Length extrapolation and the other mechanisms, trained (source documents 001-004, epar benchmark)",
     "Length extrapolation and the other mechanisms (trained)"},
};

const char *epar_report_group_title(const char *id)
{
    for (size_t i = 0; i < sizeof group_titles / sizeof *group_titles; i++)
        if (!strcmp(group_titles[i].id, id)) return group_titles[i].title;
    return id;
}

const char *epar_report_group_plain(const char *id)
{
    for (size_t i = 0; i < sizeof group_titles / sizeof *group_titles; i++)
        if (!strcmp(group_titles[i].id, id)) return group_titles[i].plain;
    return id;
}

/* ---- the protocol's parts the report reads, as rows (report_int.h) ---- */
static const struct epar_field posfx_rows[] = {{.key = "L", .type = EPAR_FIELD_INT,
                                                .offset = offsetof(struct rp_posfx, L)},
                                               {0}};
static const struct epar_field measure_rows[] = {{.key = "posfx", .type = EPAR_FIELD_OBJ,
                                                  .offset = offsetof(struct rp_measure, posfx), .sub = posfx_rows},
                                                 {0}};
static const struct epar_field claim_rows[] = {
    {.key = "id", .type = EPAR_FIELD_STRING, .offset = offsetof(struct rp_claim, id), .flags = EPAR_FIELD_REQUIRED},
    {.key = "reported", .type = EPAR_FIELD_JSON, .offset = offsetof(struct rp_claim, reported)},
    {.key = "measure", .type = EPAR_FIELD_OBJ, .offset = offsetof(struct rp_claim, measure), .sub = measure_rows},
    {0}};
static const struct epar_field defect_rows[] = {
    {.key = "title", .type = EPAR_FIELD_STRING, .offset = offsetof(struct rp_defect, title)},
    {.key = "text", .type = EPAR_FIELD_STRING, .offset = offsetof(struct rp_defect, text)},
    {.key = "shown_by", .type = EPAR_FIELD_SLIST, .offset = offsetof(struct rp_defect, shown_by),
     .count_offset = offsetof(struct rp_defect, n_shown), .max = RP_MAX_SHOWN, .flags = EPAR_FIELD_EMPTY_OK},
    {0}};
static const struct epar_field section_rows[] = {{.key = "length", .type = EPAR_FIELD_INT,
                                                  .offset = offsetof(struct rp_section, length)},
                                                 {0}};
static const struct epar_field preset_rows[] = {{.key = "beta", .type = EPAR_FIELD_DOUBLE,
                                                 .offset = offsetof(struct rp_preset, beta)},
                                                {.key = "gamma", .type = EPAR_FIELD_DOUBLE,
                                                 .offset = offsetof(struct rp_preset, gamma)}, {0}};
#define RP struct epar_report_proto
static const struct epar_field proto_rows[] = {
    {.key = "experiments", .type = EPAR_FIELD_JSON, .offset = offsetof(RP, experiments)},
    {.key = "presets", .type = EPAR_FIELD_JSON, .offset = offsetof(RP, presets)},
    {.key = "claims", .type = EPAR_FIELD_OLIST, .offset = offsetof(RP, claims), .count_offset = offsetof(RP, n_claims),
     .max = RP_MAX_CLAIMS, .stride = sizeof(struct rp_claim), .sub = claim_rows, .flags = EPAR_FIELD_EMPTY_OK},
    {.key = "reference_defects", .type = EPAR_FIELD_OLIST, .offset = offsetof(RP, defects),
     .count_offset = offsetof(RP, n_defects), .max = RP_MAX_DEFECTS, .stride = sizeof(struct rp_defect),
     .sub = defect_rows, .flags = EPAR_FIELD_EMPTY_OK},
    {0}};
/* the members of "experiments" and "presets" */
static const struct epar_field section_map = {.key = "experiments", .type = EPAR_FIELD_OLIST,
                                              .offset = offsetof(RP, sections),
                                              .count_offset = offsetof(RP, n_sections), .max = RP_MAX_MEMBERS,
                                              .stride = sizeof(struct rp_section), .sub = section_rows};
static const struct epar_field preset_map = {.key = "presets", .type = EPAR_FIELD_OLIST,
                                             .offset = offsetof(RP, preset), .count_offset = offsetof(RP, n_presets),
                                             .max = RP_MAX_MEMBERS, .stride = sizeof(struct rp_preset),
                                             .sub = preset_rows};
#undef RP

/* *out (free it) or an error naming the JSON path of the malformed part */
int epar_report_proto_read(const struct epar_protocol *p, struct epar_report_proto **out)
{
    struct epar_report_proto *rp = EPAR_CALLOC(1, sizeof *rp);
    if (!rp) return EPAR_ENOMEM;
    for (int k = 0; k < RP_MAX_MEMBERS; k++) rp->preset[k].beta = rp->preset[k].gamma = NAN;
    int st = epar_protocol_obj_fields(p, p->root, "$", proto_rows, rp);
    if (!st) st = epar_protocol_obj_map(p, rp->experiments, "$.experiments", &section_map, rp, rp->section_name);
    if (!st) st = epar_protocol_obj_map(p, rp->presets, "$.presets", &preset_map, rp, rp->preset_name);
    if (st) free(rp);
    else *out = rp;
    return st;
}

/* ---- retention definitions ---- */

/* distinct sequence lengths: every experiments.<name>.length of the protocol and every posfx L of the claims */
static int collect_lengths(const struct epar_report_proto *rp, int *Ls, int max)
{
    int n = 0;
#define ADD(v)                                                                                                     \
    do {                                                                                                           \
        int v_ = (v), dup_ = 0;                                                                                    \
        for (int q_ = 0; q_ < n; q_++) dup_ |= Ls[q_] == v_;                                                       \
        if (!dup_ && v_ >= 4 && n < max) Ls[n++] = v_;                                                             \
    } while (0)
    for (int k = 0; k < rp->n_sections; k++) ADD(rp->sections[k].length);
    for (int k = 0; k < rp->n_claims; k++) ADD(rp->claims[k].measure.posfx.L);
#undef ADD
    for (int a = 1; a < n; a++) /* ascending */
        for (int b = a; b > 0 && Ls[b - 1] > Ls[b]; b--) { int t = Ls[b]; Ls[b] = Ls[b - 1]; Ls[b - 1] = t; }
    return n;
}

/* (beta, gamma) pairs: those of the presets (the paper's text and the reference code) */
int epar_report_collect_params(const struct epar_report_proto *rp, double *beta, double *gamma, const char **name,
                               int max)
{
    int n = 0;
    for (int k = 0; k < rp->n_presets && n < max; k++) {
        if (!isfinite(rp->preset[k].beta) || !isfinite(rp->preset[k].gamma)) continue;
        beta[n] = rp->preset[k].beta;
        gamma[n] = rp->preset[k].gamma;
        name[n++] = rp->preset_name[k];
    }
    return n;
}

struct epar_table *epar_report_retention_table(const struct epar_report_proto *rp)
{
    struct epar_table *t = epar_csv_new("preset,beta,gamma,length,distance,d,basic_retention,enhanced_retention,gain");
    if (!t) return NULL;
    int Ls[16];
    int nL = collect_lengths(rp, Ls, 16);
    double beta[8], gamma[8];
    const char *pn[8];
    int np = epar_report_collect_params(rp, beta, gamma, pn, 8);
    const char *dn[] = {"L/2", "L-1", "L"};
    for (int p = 0; p < np; p++)
        for (int l = 0; l < nL; l++)
            for (int k = 0; k < 3; k++) {
                double L = Ls[l], d = k == 0 ? L / 2 : k == 1 ? L - 1 : L;
                struct epar_posfx b = {EPAR_FORM_BASIC, 1, beta[p], gamma[p]}, e = b;
                e.form = EPAR_FORM_ENHANCED;
                double rb, re, g;
                if (epar_audit_posfx_quantity(EPAR_AUDIT_Q_RETENTION, &b, Ls[l], d, &rb) ||
                    epar_audit_posfx_quantity(EPAR_AUDIT_Q_RETENTION, &e, Ls[l], d, &re) ||
                    epar_audit_posfx_quantity(EPAR_AUDIT_Q_GAIN, &e, Ls[l], d, &g) ||
                    epar_csv_append(t, "sddisdddd", pn[p], beta[p], gamma[p], Ls[l], dn[k], d, rb, re, g)) {
                    epar_csv_free(t);
                    return NULL;
                }
            }
    return t;
}

/* reported value of a claim by id (NaN if absent) */
double epar_report_claim_reported(const struct epar_report_proto *rp, const char *id)
{
    for (int k = 0; k < rp->n_claims; k++)
        if (!strcmp(rp->claims[k].id, id)) {
            json_t *r = rp->claims[k].reported;
            double v, u;
            if (json_is_number(r)) return json_number_value(r);
            if (json_is_string(r) && epar_audit_printed_parse(json_string_value(r), &v, &u) == EPAR_OK) return v;
            return NAN;
        }
    return NAN;
}

/* The four retention figures against one (beta, gamma): the two gains determine beta, gamma
 * (epar_audit_implied_params); with those, the two retentions are computed and judged by the printed-figure rule,
 * as the claims are. Also the beta a basic retention of 2.8% would need, and the paper's own setting.
 * quantity,meaning,value,reported,matches_reported */
struct epar_table *epar_report_implied_table(const struct epar_report_proto *rp)
{
    struct epar_table *t = epar_csv_new("quantity,meaning,value,reported,matches_reported");
    if (!t) return NULL;
    double rmid = epar_report_claim_reported(rp, "retention_mid_gain"),
           rmax = epar_report_claim_reported(rp, "retention_max_gain"),
           rbas = epar_report_claim_reported(rp, "retention_max_basic"),
           renh = epar_report_claim_reported(rp, "retention_max_enhanced");
    struct epar_audit_tol printed = {.rule = EPAR_AUDIT_PRINTED, .gain = NAN};
    int st = EPAR_OK;
#define ROW(q, meaning, v, rep, unit)                                                                            \
    do {                                                                                                         \
        struct epar_audit_meas m_ = EPAR_AUDIT_MEAS_NONE;                                                \
        m_.value = (v);                                                                                  \
        char acc_[128];                                                                                          \
        const char *yes = isfinite(rep) ? (epar_audit_judge(&printed, (rep), (unit), &m_, 0.95, acc_, sizeof acc_) == \
                                                   EPAR_AUDIT_HOLDS ? "yes" : "no")                               \
                                        : "";                                                                    \
        if (!st) st = epar_csv_append(t, "ssdds", q, meaning, (double)(v), (double)(rep), yes);                \
    } while (0)
    if (isfinite(rbas) && rbas > 0 && rbas < 1)
        ROW("beta_for_basic_retention", "beta a basic-form retention of the printed value at d = L needs (-ln r)",
            -log(rbas), NAN, 0.0);
    double b, g;
    if (isfinite(rmid) && isfinite(rmax) && epar_audit_implied_params(rmid, rmax, &b, &g) == EPAR_OK) {
        struct epar_posfx e = {EPAR_FORM_ENHANCED, 1, b, g}, bb = {EPAR_FORM_BASIC, 1, b, g};
        ROW("implied_beta", "beta implied by the two gains (d = L/2 and d = L)", b, NAN, 0.0);
        ROW("implied_gamma", "gamma implied by the two gains", g, NAN, 0.0);
        ROW("implied_enhanced_retention", "enhanced retention at d = L with the implied (beta, gamma)",
            epar_posfx_value(&e, 1, 1) / epar_posfx_value(&e, 0, 1), renh, 0.01);
        ROW("implied_basic_retention", "basic retention at d = L with the implied beta",
            epar_posfx_value(&bb, 1, 1) / epar_posfx_value(&bb, 0, 1), rbas, 0.001);
    }
#undef ROW
    if (st) { epar_csv_free(t); return NULL; }
    return t;
}

/* ---- numbers as a reader sees them ----
 * A measured value is shown at the precision of the figure it is compared with when that figure is a number with
 * decimals ("0.934", "93.75%": as many decimals, a percentage as a percentage), with digits added only when a value
 * that does not meet the claim would otherwise print as the claim itself. Against a symbolic, qualitative or integer
 * figure ("1/L", "ratio < 1", "16", "78%") it shows 3 significant digits, so 0.482 does not print as "0". Never "-0".
 * Full precision stays in claims.csv. */

/* the first printed number of a reported text ("x4.2" -> 4.2 unit 0.1, "78%" -> 0.78 unit 0.01 percent) */
static int reported_figure(const char *rep, double *v, double *unit, int *percent)
{
    const char *p = rep;
    while (*p && !(*p >= '0' && *p <= '9') && !(*p == '.' && p[1] >= '0' && p[1] <= '9')) p++;
    if (!*p) return 0;
    int neg = p > rep && p[-1] == '-';
    char num[64];
    size_t n = 0;
    while (n + 1 < sizeof num && ((p[n] >= '0' && p[n] <= '9') || p[n] == '.' || p[n] == '%')) { num[n] = p[n]; n++; }
    num[n] = '\0';
    if (strchr(num, '%') && strchr(num, '%')[1]) return 0;
    if (!strchr(num, '.')) { /* an integer figure gives no precision to round to (a percentage stays one) */
        *percent = strchr(num, '%') != NULL && p[n] != '/' && p[n] != '^';
        return 0;
    }
    if (p[n] == '/' || p[n] == '^') return 0; /* "1/L", "2^-8": a formula, not a printed figure */
    if (epar_audit_printed_parse(num, v, unit) != EPAR_OK) return 0;
    if (neg) *v = -*v;
    *percent = strchr(num, '%') != NULL;
    return 1;
}

static int decimals_of(double unit)
{
    int dec = (int)lround(-log10(unit));
    return dec < 0 ? 0 : dec > 12 ? 12 : dec;
}

/* one number m rounded like the reported text (fails: the claim does not hold, so m must not print as it) */
static void round_like(const char *rep, double m, int fails, char *out, size_t n)
{
    double r, u;
    int pct = 0;
    if (!isfinite(m)) { snprintf(out, n, "%s", isnan(m) ? "nan" : m > 0 ? "inf" : "-inf"); return; }
    if (!reported_figure(rep, &r, &u, &pct)) {
        snprintf(out, n, pct ? "%.3g%%" : "%.3g", m == 0 ? 0.0 : pct ? 100 * m : m);
        return;
    }
    double scale = pct ? 100 : 1;
    int dec = decimals_of(u * scale);
    /* a figure copied with 12 digits (the reference's CSVs) is shown to 6 significant digits, the precision the
     * float32 reference and the audit's relative tolerance of 1e-6 give it */
    if (m != 0) {
        int sig = dec + 1 + (int)floor(log10(fabs(m * scale)));
        if (sig > 6) dec -= sig - 6;
        if (dec < 0) dec = 0;
    }
    char rtext[64];
    snprintf(rtext, sizeof rtext, "%.*f", dec, r * scale);
    snprintf(out, n, "%.*f", dec, m * scale);
    while (fails && !strcmp(out, rtext) && dec < 12 && fabs(m - r) > 1e-12 * fmax(1, fabs(r))) {
        dec++;
        snprintf(rtext, sizeof rtext, "%.*f", dec, r * scale);
        snprintf(out, n, "%.*f", dec, m * scale);
    }
    /* a value that is not zero never prints as zero (-0.000134 at the precision of "4.7%" would be "0.0%") */
    while (m != 0 && strtod(out, NULL) == 0 && dec < 12) snprintf(out, n, "%.*f", ++dec, m * scale);
    if (out[0] == '-' && strtod(out, NULL) == 0) memmove(out, out + 1, strlen(out)); /* -0.00 -> 0.00 */
    if (pct) snprintf(out + strlen(out), n - strlen(out), "%%");
}

/* the i-th "; "-separated item of s ("" past the end) */
static void nth_item(const char *s, int i, char *out, size_t n)
{
    out[0] = '\0';
    for (; s && *s && i > 0; i--) {
        const char *e = strstr(s, "; ");
        s = e ? e + 2 : NULL;
    }
    if (!s || !*s) return;
    const char *e = strstr(s, "; ");
    size_t len = e ? (size_t)(e - s) : strlen(s);
    snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), s);
}

/* the measured column of a claim ("a; b; c" for several readings), each number rounded like the reported figure and
 * followed by its interval where the audit has one ("-45.7% [-142.0%, 50.1%]": the smallest improvement over the
 * baselines of a beats-all claim, between the smallest lower and upper ends) */
void epar_report_shown_measured(const struct epar_audit_row *r, char *out, size_t n)
{
    int fails = r->verdict == EPAR_AUDIT_NOT_REPRODUCED || r->verdict == EPAR_AUDIT_PARTLY;
    out[0] = '\0';
    int items = 0;
    for (const char *p = r->measured; p && *p; items++) {
        const char *e = strstr(p, "; ");
        p = e ? e + 2 : NULL;
    }
    for (int i = 0; i < items; i++) {
        char item[64], num[64], lo[64], hi[64];
        nth_item(r->measured, i, item, sizeof item);
        char *end;
        double v = strtod(item, &end);
        if (*item && !*end) round_like(r->reported, v, fails, num, sizeof num);
        else snprintf(num, sizeof num, "%s", item);
        snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? "; " : "", num);
        nth_item(r->measured_lo, i, lo, sizeof lo);
        nth_item(r->measured_hi, i, hi, sizeof hi);
        if (*lo && *hi && *item) {
            char l[64], h[64];
            round_like(r->reported, strtod(lo, NULL), 0, l, sizeof l);
            round_like(r->reported, strtod(hi, NULL), 0, h, sizeof h);
            snprintf(out + strlen(out), n - strlen(out), " [%s, %s]", l, h);
        }
    }
}

/* the across-seed sd: two significant digits, "n/a (one seed)" when there is no spread, "" when not stochastic */
void epar_report_shown_sd(const struct epar_audit_row *r, char *out, size_t n)
{
    out[0] = '\0';
    if (!r->measured_sd || !*r->measured_sd) return;
    char *end;
    double v = strtod(r->measured_sd, &end);
    if (*end || isnan(v)) snprintf(out, n, "n/a (one seed)");
    else snprintf(out, n, "%.2g", v);
}


/* which proxy tasks the audited benchmark's models learned (main_table.csv `learned`, of nm mechanisms, beyond
 * chance by z standard errors: both from its run.json), as a sentence; "" when the table or its column is absent */
void epar_report_learned_sentence(const char *out_root, int nm, double z, char *buf, size_t n)
{
    char p[4200], yes[1024] = "", no[512] = "";
    struct epar_table *t = NULL;
    buf[0] = '\0';
    if (nm <= 0 || !(z > 0)) return;   /* a run.json from before the learned column */
    snprintf(p, sizeof p, "%s/benchmark/main_table.csv", out_root);
    if (access(p, R_OK) != 0 || epar_csv_read(p, &t) || epar_csv_col(t, "learned") < 0) {
        epar_csv_free(t);
        epar_err_clear();
        return;
    }
    for (size_t r = 0; r < t->nrows; r++) {
        double l = epar_csv_get(t, r, "learned");
        const char *task = epar_csv_get_str(t, r, "task");
        if (isnan(l) || !task) continue;
        char *dst = l > 0 ? yes : no;
        size_t sz = l > 0 ? sizeof yes : sizeof no, len = strlen(dst);
        if (l > 0) snprintf(dst + len, sz - len, "%s%s (%d of %d)", len ? ", " : "", task, (int)l, nm);
        else snprintf(dst + len, sz - len, "%s%s", len ? ", " : "", task);
    }
    epar_csv_free(t);
    if (!*yes && !*no) return;
    snprintf(buf, n, " Learned at this budget (mechanisms beating the best constant answer on the evaluation items by "
                     "more than %g standard errors): %s.%s%s%s", z, *yes ? yes : "none",
             *no ? " Learned by no mechanism: " : "", no, *no ? "; every model answers like a constant there, so the "
                                                             "proxy claims on these tasks are inconclusive." : "");
}


/* the claim sections in first-appearance order: id of the i-th (NULL past the end) */
const char *epar_report_nth_section(const struct epar_audit *a, int k)
{
    for (size_t i = 0; i < a->n; i++) {
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = !strcmp(a->rows[j].section, a->rows[i].section);
        if (!seen && k-- == 0) return a->rows[i].section;
    }
    return NULL;
}


static void sum_add(struct epar_report_summary *s, const char *block, const char *id, int is_static,
                    const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void sum_add(struct epar_report_summary *s, const char *block, const char *id, int is_static,
                    const char *fmt, ...)
{
    if (s->n >= SUM_MAX_LINES) return;
    struct epar_report_sum_line *l = &s->line[s->n];
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&l->text, fmt, ap) < 0) l->text = NULL;
    va_end(ap);
    if (!l->text) return;
    l->block = block;
    snprintf(l->id, sizeof l->id, "%s", id);
    l->is_static = is_static;
    s->n++;
}

/* a claim measured on the trained benchmark (its input is benchmark/run.json): not static */
static int reads_benchmark(const struct epar_audit_row *r)
{
    return r->input && !strncmp(r->input, "benchmark/", 10);
}

/* text for markdown: the characters markdown would take as marks, escaped */
static void md_text(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; s && *s && k + 3 < n; s++) {
        if (strchr("\\`*_[]<>|", *s)) out[k++] = '\\';
        out[k++] = *s;
    }
    out[k] = '\0';
}

/* "42–46" for consecutive seeds, else "42, 45, 49" */
static void seeds_text(const long *s, int n, char *out, size_t len)
{
    int run = n > 1;
    for (int i = 1; i < n; i++) run &= s[i] == s[i - 1] + 1;
    out[0] = '\0';
    if (run) {
        snprintf(out, len, "%ld–%ld", s[0], s[n - 1]);
        return;
    }
    for (int i = 0; i < n; i++) snprintf(out + strlen(out), len - strlen(out), "%s%ld", i ? ", " : "", s[i]);
}

/* "6 reproduced, 2 not reproduced" */
static void counts_text(const int *cnt, char *out, size_t n)
{
    out[0] = '\0';
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++)
        if (cnt[v])
            snprintf(out + strlen(out), n - strlen(out), "%s%d %s", out[0] ? ", " : "", cnt[v],
                     epar_audit_verdict_name((enum epar_audit_verdict)v));
}

json_t *epar_report_counts_json(const int *cnt)
{
    json_t *o = json_object();
    for (int v = 0; o && v < EPAR_AUDIT_VERDICT_COUNT; v++)
        json_object_set_new(o, epar_audit_verdict_name((enum epar_audit_verdict)v), json_integer(cnt[v]));
    return o;
}

/* the claims of section sec (NULL: all) that read the benchmark (bench 1) or not (0), or either (-1): counts */
int epar_report_count_rows(const struct epar_audit *a, const char *sec, int bench, int *cnt)
{
    int n = 0;
    memset(cnt, 0, EPAR_AUDIT_VERDICT_COUNT * sizeof *cnt);
    for (size_t i = 0; i < a->n; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        if ((sec && strcmp(r->section, sec)) || (bench >= 0 && reads_benchmark(r) != bench)) continue;
        cnt[r->verdict]++;
        n++;
    }
    return n;
}

/* "`id`: reported R, measured M" for up to `max` claims of the verdicts in `want` (sec NULL: any section), then how
 * many more; "" when none */
static void claim_examples(const struct epar_audit *a, const char *sec, int bench, const int *want, int nwant, int max,
                           char *out, size_t n)
{
    int shown = 0, more = 0;
    out[0] = '\0';
    for (size_t i = 0; i < a->n; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        int ok = 0;
        for (int k = 0; k < nwant; k++) ok |= r->verdict == (enum epar_audit_verdict)want[k];
        if (!ok || (sec && strcmp(r->section, sec)) || (bench >= 0 && reads_benchmark(r) != bench)) continue;
        if (shown >= max) { more++; continue; }
        char rep[256], meas[512], m[512];
        md_text(r->reported, rep, sizeof rep);
        epar_report_shown_measured(r, m, sizeof m);
        md_text(m, meas, sizeof meas);
        snprintf(out + strlen(out), n - strlen(out), "%s`%s`: reported %s, measured %s", shown ? "; " : "", r->id, rep,
                 *meas ? meas : "nothing");
        shown++;
    }
    if (more) snprintf(out + strlen(out), n - strlen(out), "; %d more in `report/claims.csv`", more);
}

/* a relative difference as a signed percentage: one decimal, more when that would print a nonzero value as 0 */
static void pct_text(double v, char *out, size_t n)
{
    int dec = 1;
    snprintf(out, n, "%+.*f %%", dec, 100 * v);
    while (v != 0 && strtod(out, NULL) == 0 && dec < 12) snprintf(out, n, "%+.*f %%", ++dec, 100 * v);
    if (v == 0) snprintf(out, n, "0.0 %%");
}

/* the benchmark block: what the trained proxies gave (main_table.csv, cost.csv of <out>/benchmark) */
static void summary_benchmark(struct epar_report_summary *s, const char *out_root, const struct epar_runrec_bench *br)
{
    char p[4200], buf[4096];
    epar_report_learned_sentence(out_root, br->n_mechanisms, br->learned_z, buf, sizeof buf);
    if (*buf) sum_add(s, "benchmark", "learned", 0, "-%s", buf);
    struct epar_table *t = NULL;
    snprintf(p, sizeof p, "%s/benchmark/main_table.csv", out_root);
    if (access(p, R_OK) == 0 && epar_csv_read(p, &t) == EPAR_OK && epar_csv_col(t, "enhanced_vs_best_rel") >= 0 &&
        epar_csv_col(t, "best_baseline") >= 0) {
        char best[2048] = "", every[2048] = "";
        int beats = 0, beaten = 0, tasks = 0;
        for (size_t r = 0; r < t->nrows; r++) {
            const char *task = epar_csv_get_str(t, r, "task"), *bb = epar_csv_get_str(t, r, "best_baseline");
            double rel = epar_csv_get(t, r, "enhanced_vs_best_rel");
            if (!task) continue;
            tasks++;
            char pc[32];
            pct_text(rel, pc, sizeof pc);
            if (isfinite(rel))
                snprintf(best + strlen(best), sizeof best - strlen(best), "%s%s %s (%s)", *best ? ", " : "", task, pc,
                         bb ? bb : "?");
            double nb = epar_csv_get(t, r, "enhanced_beats"), nw = epar_csv_get(t, r, "enhanced_beaten_holm"),
                   nbase = epar_csv_get(t, r, "baselines");
            beats += isfinite(nb) && isfinite(nbase) && nb == nbase && nbase > 0;
            if (isfinite(nw) && nw > 0) {
                beaten++;
                snprintf(every + strlen(every), sizeof every - strlen(every), "%s%s: %d of %d baselines",
                         *every ? "; " : "", task, (int)nw, (int)nbase);
            }
        }
        if (*best)
            sum_add(s, "benchmark", "versus_best", 0,
                    "- EPAR enhanced against the best baseline of each task (the baseline with the best mean, chosen "
                    "after the results, so descriptive only; relative difference of the means, positive = better, "
                    "for bits per character too): %s.", best);
        if (epar_csv_col(t, "enhanced_beats") >= 0)
            sum_add(s, "benchmark", "versus_every", 0,
                    "- Against every baseline (the pre-registered paired comparisons, `comparisons.csv`): EPAR enhanced "
                    "is above each baseline at the audit's level on %d of %d tasks; a baseline is better after the Holm "
                    "adjustment on %d task%s%s%s%s.", beats, tasks, beaten, beaten == 1 ? "" : "s", beaten ? " (" : "",
                    every, beaten ? ")" : "");
    }
    epar_csv_free(t);
    t = NULL;
    snprintf(p, sizeof p, "%s/benchmark/cost.csv", out_root);
    if (access(p, R_OK) == 0 && epar_csv_read(p, &t) == EPAR_OK && epar_csv_col(t, "overhead_vs_none") >= 0 &&
        epar_csv_col(t, "overhead_vs_none_hw") >= 0 && epar_csv_col(t, "attention_share") >= 0)
        for (size_t r = 0; r < t->nrows; r++) {
            const char *m = epar_csv_get_str(t, r, "mechanism");
            if (!m || strcmp(m, "epar-enhanced")) continue;
            double on = epar_csv_get(t, r, "overhead_vs_none"), onh = epar_csv_get(t, r, "overhead_vs_none_hw"),
                   ob = epar_csv_get(t, r, "overhead_vs_basic"), obh = epar_csv_get(t, r, "overhead_vs_basic_hw"),
                   share = epar_csv_get(t, r, "attention_share"), pairs = epar_csv_get(t, r, "repeats"),
                   gens = epar_csv_col(t, "generations") >= 0 ? epar_csv_get(t, r, "generations") : NAN;
            if (!isfinite(on)) break;
            char pn[32], pb[32];
            pct_text(on, pn, sizeof pn);
            pct_text(ob, pb, sizeof pb);
            sum_add(s, "benchmark", "cost", 0,
                    "- The training step's CPU time with EPAR enhanced: %s (± %.1f %%) over `none` and %s (± %.1f %%) "
                    "over the basic form (half-widths of the intervals across %.0f generations of freshly set-up "
                    "models, %.0f pairs of adjacent steps); the position mechanism and attention are %.0f %% "
                    "of this small model's step (`cost.csv`: scale an overhead by that share for another model). These "
                    "are timings of the thread's CPU time: they differ a little between runs.",
                    pn, 100 * onh, pb, 100 * obh, gens, pairs, 100 * share);
            break;
        }
    epar_csv_free(t);
    epar_err_clear();
}

/* the sentences, from the audit and the files beside it */
void epar_report_summary_lines(struct epar_report_summary *s, const char *out_root, const struct epar_audit *a,
                               const struct epar_report_info *info, const struct epar_runrec_audit *ar,
                               const struct epar_runrec_bench *br, int have_bench, const struct epar_table *im)
{
    char counts[1024], ex[4096], seeds[256] = "", bseeds[256] = "";
    if (ar->n_seeds) seeds_text(ar->seeds, ar->n_seeds, seeds, sizeof seeds);
    if (have_bench) seeds_text(br->parameters.seeds, br->parameters.n_seeds, bseeds, sizeof bseeds);
    int cnt[EPAR_AUDIT_VERDICT_COUNT];
    epar_report_count_rows(a, NULL, -1, cnt);
    counts_text(cnt, counts, sizeof counts);
    char bench[512];
    /* a staged grid (benchmark/stages.json, more than one look): its looks' seeds and its cells, not the first look's
     * seeds alone (the line stays under README's 300 characters) */
    json_t *sj = have_bench ? epar_bench_stage_record(out_root) : NULL, *looks = json_object_get(sj, "looks");
    if (have_bench && json_array_size(looks) > 1) {
        char seen[128] = "";   /* every look's seeds: "3, 5, 8" */
        for (size_t k = 0; k < json_array_size(looks); k++) {
            size_t l = strlen(seen);
            snprintf(seen + l, sizeof seen - l, "%s%d", k ? ", " : "",
                     (int)json_integer_value(json_object_get(json_array_get(looks, k), "seeds")));
        }
        snprintf(bench, sizeof bench, "the `%s` benchmark (staged at %s seeds; %d cells)",
                 br->budget.name ? br->budget.name : "?", seen, (int)json_integer_value(json_object_get(sj, "cells")));
    } else if (have_bench)
        snprintf(bench, sizeof bench, "the `%s` benchmark (seeds %s)", br->budget.name ? br->budget.name : "?", bseeds);
    else
        snprintf(bench, sizeof bench, "no trained benchmark");
    json_decref(sj);
    sum_add(s, "summary", "total", 0, "With `%s` (preset `%s`%s%s) and %s, epar %s judges **%zu claims**: %s.",
            info->protocol_path, ar->preset ? ar->preset : info->preset ? info->preset : "?", *seeds ? ", seeds " : "",
            seeds, bench, info->version, a->n, counts);
    /* one line per section, over the claims that need no benchmark */
    const char *sec;
    static const int fails[] = {EPAR_AUDIT_NOT_REPRODUCED, EPAR_AUDIT_PARTLY};
    for (int k = 0; (sec = epar_report_nth_section(a, k)); k++) {
        int n = epar_report_count_rows(a, sec, 0, cnt);
        if (!n) continue;
        counts_text(cnt, counts, sizeof counts);
        claim_examples(a, sec, 0, fails, 2, 4, ex, sizeof ex);
        char title[256];
        md_text(epar_report_group_title(sec), title, sizeof title);
        char id[64];
        snprintf(id, sizeof id, "section_%s", sec);
        sum_add(s, "summary", id, 1, "- **%s**: %d claim%s, %s%s%s.", title, n, n == 1 ? "" : "s", counts,
                *ex ? ". Not or partly reproduced: " : "", ex);
        /* after the retention figures: whether one (beta, gamma) gives them all (implied_parameters.csv) */
        if (!strcmp(sec, "retention") && im) {
            double b = NAN, g = NAN;
            int all = 0, total = 0;
            for (size_t r = 0; r < im->nrows; r++) {
                const char *q = epar_csv_get_str(im, r, "quantity");
                if (!q) continue;
                if (!strcmp(q, "implied_beta")) b = epar_csv_get(im, r, "value");
                if (!strcmp(q, "implied_gamma")) g = epar_csv_get(im, r, "value");
                if (isfinite(epar_csv_get(im, r, "reported")) && !strncmp(q, "implied_", 8)) {
                    total++;
                    all += !strcmp(epar_csv_get_str(im, r, "matches_reported"), "yes");
                }
            }
            if (total && isfinite(b) && isfinite(g))
                sum_add(s, "summary", "retention_implied", 1,
                        "- With the (beta, gamma) that the two printed gains imply (beta %.4g, gamma %.4g), %d of the "
                        "%d other printed retention figures come out, so %s (`report/implied_parameters.csv`).",
                        b, g, all, total, all == total ? "one setting gives all four" : "no single (beta, gamma) gives all four");
        }
    }
    /* the figures of another run: how many miss, beside how many would by chance */
    int np = 0, nrep = 0, nnot = 0;
    double level = NAN;
    for (size_t i = 0; i < a->n; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        if (!r->rule || strncmp(r->rule, "prediction", 10) || reads_benchmark(r)) continue;
        const char *l = strstr(r->rule, "(level ");
        if (l) level = strtod(l + 7, NULL);
        np++;
        nrep += r->verdict == EPAR_AUDIT_REPRODUCED;
        nnot += r->verdict == EPAR_AUDIT_NOT_REPRODUCED;
    }
    if (np && isfinite(level))
        sum_add(s, "summary", "prediction", 1,
                "- Figures of another run (the reference's committed numbers and the paper's stochastic figures, rule "
                "`prediction`): %d of %d lie in the prediction interval of a new run, %d do not; at level %g about "
                "%.1f (%d × %.2g) would miss by chance even if every figure held.",
                nrep, np, nnot, level, np * (1 - level), np, 1 - level);
    /* the trained proxies */
    int nproxy = epar_report_count_rows(a, NULL, 1, cnt);
    if (nproxy) {
        counts_text(cnt, counts, sizeof counts);
        if (!have_bench) {
            sum_add(s, "summary", "proxy", 0,
                    "- **Trained proxies** (`proxy_*`): no trained benchmark in this output folder (`epar run-all` "
                    "without `--no-benchmark` trains it): %d claims, %s.", nproxy, counts);
        } else {
            static const int rep[] = {EPAR_AUDIT_REPRODUCED}, not[] = {EPAR_AUDIT_NOT_REPRODUCED, EPAR_AUDIT_PARTLY};
            char yes[4096], no[4096];
            claim_examples(a, NULL, 1, rep, 1, 8, yes, sizeof yes);
            claim_examples(a, NULL, 1, not, 2, 8, no, sizeof no);
            int nb = 0, nbh = 0;
            for (size_t i = 0; i < a->n; i++)
                if (reads_benchmark(&a->rows[i]) && !strncmp(a->rows[i].rule, "beats_all", 9)) {
                    nb++;
                    nbh += a->rows[i].verdict == EPAR_AUDIT_REPRODUCED;
                }
            sum_add(s, "summary", "proxy", 0,
                    "- **Trained proxies** (`proxy_*`: small Transformers trained here, one per position mechanism, "
                    "task and seed, budget `%s`, %lld cells): %d claims, %s. Of the %d claims that EPAR beats "
                    "every baseline (rule `beats_all`: the enhanced form, and the basic one for the main table's Basic "
                    "column; measured: its smallest improvement over the baselines, with its interval), %d %s "
                    "reproduced. Reproduced: %s. Not or partly reproduced: %s.",
                    br->budget.name ? br->budget.name : "?", (long long)br->cells, nproxy, counts, nb, nbh,
                    nbh == 1 ? "is" : "are",
                    *yes ? yes : "none", *no ? no : "none");
            summary_benchmark(s, out_root, br);
        }
    }
}

/* "3 need >= 2 seeds, 1 inconclusive" for the verdicts that do not judge (inconclusive, ill-posed, needs seeds, not
 * reproducible here, stale); "" when none */
static void open_text(const int *cnt, char *out, size_t n)
{
    static const struct {
        enum epar_audit_verdict v;
        const char *words;
    } open[] = {{EPAR_AUDIT_NEEDS_SEEDS, "need >= 2 seeds"},
                {EPAR_AUDIT_INCONCLUSIVE, "inconclusive"},
                {EPAR_AUDIT_NOT_HERE, "not reproducible here"},
                {EPAR_AUDIT_ILL_POSED, "ill-posed"},
                {EPAR_AUDIT_STALE, "stale"}};
    out[0] = '\0';
    for (size_t i = 0; i < sizeof open / sizeof *open; i++)
        if (cnt[open[i].v])
            snprintf(out + strlen(out), n - strlen(out), "%s%d %s", *out ? ", " : "", cnt[open[i].v], open[i].words);
}

/* "[id](#claim-id)" for up to max claims of section sec (NULL: any) failing (not or partly reproduced) and, when
 * rule is not NULL, of that rule */
static void failing_links(const struct epar_audit *a, const char *sec, const char *rule, int max, char *out, size_t n)
{
    int shown = 0;
    out[0] = '\0';
    for (size_t i = 0; i < a->n && shown < max; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        if ((sec && strcmp(r->section, sec)) || (rule && (!r->rule || strncmp(r->rule, rule, strlen(rule)))) ||
            (r->verdict != EPAR_AUDIT_NOT_REPRODUCED && r->verdict != EPAR_AUDIT_PARTLY))
            continue;
        snprintf(out + strlen(out), n - strlen(out), "%s[%s](#claim-%s)", shown++ ? ", " : "", r->id, r->id);
    }
}

void epar_report_bottom_line(struct epar_report_summary *s, const struct epar_audit *a)
{
    char open[256], ex[1024];
    /* EPAR against every baseline, on the trained proxies (rule beats_all) */
    int cnt[EPAR_AUDIT_VERDICT_COUNT] = {0}, nb = 0;
    const char *first = NULL;
    for (size_t i = 0; i < a->n; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        if (!r->rule || strncmp(r->rule, "beats_all", 9)) continue;
        cnt[r->verdict]++;
        nb++;
        if (!first) first = r->section;
    }
    if (nb) {
        int hold = cnt[EPAR_AUDIT_REPRODUCED], fail = cnt[EPAR_AUDIT_NOT_REPRODUCED] + cnt[EPAR_AUDIT_PARTLY];
        open_text(cnt, open, sizeof open);
        failing_links(a, NULL, "beats_all", 2, ex, sizeof ex);
        char lead[256];
        if (hold == nb) snprintf(lead, sizeof lead, "EPAR beats every baseline in all %d of its claims", nb);
        else if (hold) snprintf(lead, sizeof lead, "EPAR beats every baseline in %d of the %d claims that say so", hold, nb);
        else if (fail) snprintf(lead, sizeof lead, "EPAR beats every baseline in none of the %d claims that say so", nb);
        else snprintf(lead, sizeof lead, "whether EPAR beats every baseline cannot be judged from this run (%d claims)", nb);
        char tail[1536] = "";
        if (fail) snprintf(tail, sizeof tail, "%d not reproduced (%s)", fail, ex);
        if (*open) snprintf(tail + strlen(tail), sizeof tail - strlen(tail), "%s%s", *tail ? ", " : "", open);
        sum_add(s, "bottom", "beats_all", 0, "**[On the trained proxies](#claims-%s)** — %s%s%s.", first, lead,
                *tail && hold != nb ? ": " : "", hold != nb ? tail : "");
    }
    const char *sec;
    for (int k = 0; (sec = epar_report_nth_section(a, k)); k++) {
        int n = epar_report_count_rows(a, sec, -1, cnt);
        int hold = cnt[EPAR_AUDIT_REPRODUCED] + cnt[EPAR_AUDIT_TRIVIAL], triv = cnt[EPAR_AUDIT_TRIVIAL];
        int fail = cnt[EPAR_AUDIT_NOT_REPRODUCED] + cnt[EPAR_AUDIT_PARTLY], rest = n - hold - fail;
        open_text(cnt, open, sizeof open);
        failing_links(a, sec, NULL, 2, ex, sizeof ex);
        char what[2048];
        if (!fail && hold && !rest)
            snprintf(what, sizeof what, "%s: %s", triv == n ? "holds by construction" : "holds",
                     n == 1 ? "its claim holds" : triv == n ? "every claim is true by construction"
                                                            : "every claim is reproduced");
        else if (!fail && hold)
            snprintf(what, sizeof what, "holds where it can be judged: %d of %d claims, the other %d cannot be judged "
                     "here (%s)", hold, n, rest, open);
        else if (fail && hold)
            snprintf(what, sizeof what, "holds in part: %d of %d claims hold, %d do not (%s)%s%s", hold, n, fail, ex,
                     rest ? ", " : "", open);
        else if (fail)
            snprintf(what, sizeof what, "does not hold%s: %d of %d claim%s not reproduced (%s)%s%s",
                     rest ? " where it can be judged" : "", fail, n,
                     n == 1 ? "" : "s", ex, rest ? ", " : "", open);
        else
            snprintf(what, sizeof what, "cannot be judged here: %s", open);
        if (triv && hold != triv && (fail || rest))
            snprintf(what + strlen(what), sizeof what - strlen(what), "; %d of those that hold %s true by construction",
                     triv, triv == 1 ? "is" : "are");
        else if (triv && triv == hold && hold < n)
            snprintf(what + strlen(what), sizeof what - strlen(what), "; those that hold are true by construction");
        char id[64];
        snprintf(id, sizeof id, "bottom_%s", sec);
        sum_add(s, "bottom", id, 0, "**[%s](#claims-%s)** — %s.", epar_report_group_plain(sec), sec, what);
    }
}

void epar_report_banner_html(FILE *f, const char *banner)
{
    const char *c = strchr(banner, ':');
    size_t n = c ? (size_t)(c - banner) + 1 : 0;
    fputs("<strong>", f);
    epar_pub_htmln(f, banner, n);
    fputs("</strong>", f);
    epar_pub_html(f, banner + n);
}

int epar_exp_report_banner(const char *out_root, const struct epar_audit *a, char *buf, size_t n)
{
    char why[512];
    buf[0] = '\0';
    if (!epar_runrec_reduced_at(out_root, why, sizeof why)) return 0;
    int cnt[EPAR_AUDIT_VERDICT_COUNT];
    int nb = epar_report_count_rows(a, NULL, 1, cnt);
    snprintf(buf, n, "Reduced benchmark: the %d claim%s measured on trained models come%s from %s, not from a "
             "reproduction run; %s verdicts only exercise the machinery. For the real ones run 'epar benchmark "
             "--budget quick' (or 'epar run-all') with the whole grid.", nb, nb == 1 ? "" : "s", nb == 1 ? "s" : "",
             why, nb == 1 ? "its" : "their");
    return 1;
}

void epar_report_summary_free(struct epar_report_summary *s)
{
    for (int i = 0; i < s->n; i++) free(s->line[i].text);
    s->n = 0;
}
