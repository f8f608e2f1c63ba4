/* What the reproduction report reads and how it shows numbers: the protocol's parts it reads (claims, reference
 * defects, presets, section lengths), the claim groups' titles, the retention definitions and the (beta, gamma) the
 * printed gains imply, and each measured value rounded like the figure it is compared with (see report_int.h). The
 * sentences built from the verdicts are report_summary.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "lib/posfx.h"
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
    {"literature", "What the field reports about length extrapolation, judged by the same engine (published papers, epar benchmark)",
     "The field's published extrapolation results"},
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
