#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/err.h"
#include "lib/plot.h"
#include "lib/posfx.h"
#include "lib/publish.h"
#include "common.h"
#include "report.h"

/* Paper-section titles of the claim groups (the "section" of each claim); unknown groups use their name. */
static const struct {
    const char *id, *title;
} group_titles[] = {
    {"thm1", "Theorem 1 and the lower bound (paper §4)"},
    {"retention", "Information retention of the enhanced form (paper §4)"},
    {"optimal", "Optimal position, consistency and ranking (paper §4.3)"},
    {"reference-optimal", "The reference's committed verification_report.txt (output/optimal)"},
    {"reference-parameter", "The reference's committed sensitivity CSVs (appendix, output/parameter)"},
    {"identities", "Identities the reference prints as measurements"},
    {"cost", "Cost of the position effect"},
    {"training", "Main results table (paper §5.2): trained 110M models"},
    {"when-to-use", "When to use EPAR (paper §5.4)"},
    {"trained-attention", "What trained attention concentrates on (paper §4, on the benchmark's trained proxies)"},
    {"seeds", "Statements of the other source documents (001-004, epar compare)"},
    {"related-work", "The paper on other position methods (paper README, epar compare)"},
};

static const char *group_title(const char *id)
{
    for (size_t i = 0; i < sizeof group_titles / sizeof *group_titles; i++)
        if (!strcmp(group_titles[i].id, id)) return group_titles[i].title;
    return id;
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- the protocol's parts the report reads, as rows ----
 * Its claims (id, reported value, measure.posfx.L), reference_defects (title, text, shown_by), the presets' (beta,
 * gamma) and every experiment section's length, read once by the rows below; strings borrow from the protocol. */
#define RP_MAX_CLAIMS 4096
#define RP_MAX_DEFECTS 64
#define RP_MAX_SHOWN 64
#define RP_MAX_MEMBERS 256

struct rp_posfx {
    int L;              /* 0: none */
};
struct rp_measure {
    struct rp_posfx posfx;
};
struct rp_claim {
    const char *id;
    json_t *reported;   /* a number, or a printed figure as a string */
    struct rp_measure measure;
};
struct rp_defect {
    const char *title, *text;
    int n_shown;
    const char *shown_by[RP_MAX_SHOWN];
};
struct rp_section {
    int length;         /* 0: none */
};
struct rp_preset {
    double beta, gamma; /* NaN: not given */
};
struct report_proto {
    json_t *experiments, *presets;
    int n_claims, n_defects, n_sections, n_presets;
    struct rp_claim claims[RP_MAX_CLAIMS];
    struct rp_defect defects[RP_MAX_DEFECTS];
    struct rp_section sections[RP_MAX_MEMBERS];
    struct rp_preset preset[RP_MAX_MEMBERS];
    const char *section_name[RP_MAX_MEMBERS], *preset_name[RP_MAX_MEMBERS];
};

/* DOUBLE rows: any finite number (>= -1e300; a DOUBLE row's hi is its lo-inclusive flag, read as an int, so not the
 * 1e300 of EPAR_FIELD_) */
#define RP_NUMBER(S, key, member) EPAR_FIELD_RANGE_(S, key, EPAR_FIELD_DOUBLE, member, -1e300, 1, 0)
static const struct epar_field posfx_rows[] = {EPAR_FIELD_(struct rp_posfx, "L", EPAR_FIELD_INT, L, 0),
                                               EPAR_FIELD_END_};
static const struct epar_field measure_rows[] = {EPAR_FIELD_OBJ_(struct rp_measure, "posfx", posfx, posfx_rows, 0),
                                                 EPAR_FIELD_END_};
static const struct epar_field claim_rows[] = {
    EPAR_FIELD_(struct rp_claim, "id", EPAR_FIELD_STRING, id, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_(struct rp_claim, "reported", EPAR_FIELD_JSON, reported, 0),
    EPAR_FIELD_OBJ_(struct rp_claim, "measure", measure, measure_rows, 0),
    EPAR_FIELD_END_};
static const struct epar_field defect_rows[] = {
    EPAR_FIELD_(struct rp_defect, "title", EPAR_FIELD_STRING, title, 0),
    EPAR_FIELD_(struct rp_defect, "text", EPAR_FIELD_STRING, text, 0),
    EPAR_FIELD_LIST_(struct rp_defect, "shown_by", EPAR_FIELD_SLIST, shown_by, n_shown, RP_MAX_SHOWN,
                     EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_END_};
static const struct epar_field section_rows[] = {EPAR_FIELD_(struct rp_section, "length", EPAR_FIELD_INT, length, 0),
                                                 EPAR_FIELD_END_};
static const struct epar_field preset_rows[] = {RP_NUMBER(struct rp_preset, "beta", beta),
                                                RP_NUMBER(struct rp_preset, "gamma", gamma), EPAR_FIELD_END_};
#define RP struct report_proto
static const struct epar_field proto_rows[] = {
    EPAR_FIELD_(RP, "experiments", EPAR_FIELD_JSON, experiments, 0),
    EPAR_FIELD_(RP, "presets", EPAR_FIELD_JSON, presets, 0),
    EPAR_FIELD_OLIST_(RP, "claims", claims, n_claims, RP_MAX_CLAIMS, claim_rows, EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_OLIST_(RP, "reference_defects", defects, n_defects, RP_MAX_DEFECTS, defect_rows, EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_END_};
/* the members of "experiments" and "presets" */
static const struct epar_field section_map = EPAR_FIELD_OLIST_(RP, "experiments", sections, n_sections, RP_MAX_MEMBERS,
                                                               section_rows, 0);
static const struct epar_field preset_map = EPAR_FIELD_OLIST_(RP, "presets", preset, n_presets, RP_MAX_MEMBERS,
                                                              preset_rows, 0);
#undef RP

/* *out (free it) or an error naming the JSON path of the malformed part */
static int report_proto_read(const struct epar_protocol *p, struct report_proto **out)
{
    struct report_proto *rp = EPAR_CALLOC(1, sizeof *rp);
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
static int collect_lengths(const struct report_proto *rp, int *Ls, int max)
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
static int collect_params(const struct report_proto *rp, double *beta, double *gamma, const char **name, int max)
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

static struct epar_table *retention_table(const struct report_proto *rp)
{
    struct epar_table *t = epar_csv_new("preset,beta,gamma,length,distance,d,basic_retention,enhanced_retention,gain");
    if (!t) return NULL;
    int Ls[16];
    int nL = collect_lengths(rp, Ls, 16);
    double beta[8], gamma[8];
    const char *pn[8];
    int np = collect_params(rp, beta, gamma, pn, 8);
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
static double claim_reported(const struct report_proto *rp, const char *id)
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
static struct epar_table *implied_table(const struct report_proto *rp)
{
    struct epar_table *t = epar_csv_new("quantity,meaning,value,reported,matches_reported");
    if (!t) return NULL;
    double rmid = claim_reported(rp, "retention_mid_gain"), rmax = claim_reported(rp, "retention_max_gain"),
           rbas = claim_reported(rp, "retention_max_basic"), renh = claim_reported(rp, "retention_max_enhanced");
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


/* ---- figures ---- */

static int verdict_figure(struct epar_out *o, const struct epar_audit *a)
{
    if (a->n == 0) return EPAR_OK; /* a protocol without claims (tests/golden): nothing to plot */
    struct epar_table *t = epar_audit_section_counts(a);
    if (!t) return EPAR_ENOMEM;
    int st = epar_exp_write_table(o, "verdicts.csv", t);
    epar_csv_free(t);
    if (st) return st;
    /* one stacked bar per section, one colour per verdict (a column of verdicts.csv each) */
    static const char *const colour[EPAR_AUDIT_VERDICT_COUNT] = {"#2ca02c", "#98df8a", "#d62728", "#ff7f0e", "#1f77b4",
                                                                 "#9467bd", "#e7ba52", "#aaaaaa", "#7f7f7f"};
    char body[4096];
    int u = snprintf(body, sizeof body,
                     "set title 'Claims audit: verdicts per section (%zu claims)'\n"
                     "set style data histograms\nset style histogram rowstacked\nset boxwidth 0.7\n"
                     "set xtics rotate by -35 noenhanced\nset xlabel 'claim section'\n"
                     "set ylabel 'number of claims'\nset yrange [0:*]\nset key outside right top noenhanced\n"
                     EPAR_PLOT_IF("'verdicts.csv', '2'") "plot ",
                     a->n);
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT && u < (int)sizeof body; v++)
        u += snprintf(body + u, sizeof body - (size_t)u, "%s'verdicts.csv' skip 1 using %d%s title '%s' lc rgb '%s'",
                      v ? ", \\\n     " : "", v + 2, v ? "" : ":xtic(1)", epar_audit_verdict_name((enum epar_audit_verdict)v),
                      colour[v]);
    if (u < (int)sizeof body) snprintf(body + u, sizeof body - (size_t)u, EPAR_PLOT_END);
    return epar_plot_script(o, "verdicts", "Verdicts per section of the audit", body);
}

/* P(d)/P(0) of both forms for every preset, against d/L, with the paper's 78% and 2.8% marked */
static int retention_figure(struct epar_out *o, const struct report_proto *rp)
{
    double beta[8], gamma[8];
    const char *pn[8];
    int np = collect_params(rp, beta, gamma, pn, 8);
    if (np == 0) return EPAR_OK;
    char cols[512] = "d_over_L";
    for (int p = 0; p < np; p++)
        snprintf(cols + strlen(cols), sizeof cols - strlen(cols), ",basic_%s,enhanced_%s", pn[p], pn[p]);
    struct epar_table *t = epar_csv_new(cols);
    if (!t) return EPAR_ENOMEM;
    const int n = 200;
    int st = EPAR_OK;
    for (int k = 0; k <= n && !st; k++) {
        double x = (double)k / n;
        st = epar_csv_append(t, "d", x);
        for (int p = 0; p < np; p++) {
            struct epar_posfx b = {EPAR_FORM_BASIC, 1, beta[p], gamma[p]}, e = b;
            e.form = EPAR_FORM_ENHANCED;
            t->cells[(t->nrows - 1) * (size_t)t->ncols + 1 + 2 * p].v = epar_posfx_value(&b, x, 1);
            t->cells[(t->nrows - 1) * (size_t)t->ncols + 2 + 2 * p].v = epar_posfx_value(&e, x, 1);
        }
    }
    if (!st) st = epar_exp_write_table(o, "retention_curves.csv", t);
    epar_csv_free(t);
    if (st) return st;
    struct epar_table *r = epar_csv_new("d_over_L,retention,label");
    if (!r) return EPAR_ENOMEM;
    double renh = claim_reported(rp, "retention_max_enhanced"), rbas = claim_reported(rp, "retention_max_basic");
    if (isfinite(renh)) st = epar_csv_append(r, "dds", 1.0, renh, "paper: enhanced at max distance");
    if (!st && isfinite(rbas)) st = epar_csv_append(r, "dds", 1.0, rbas, "paper: basic at max distance");
    if (!st) st = epar_exp_write_table(o, "retention_reported.csv", r);
    epar_csv_free(r);
    if (st) return st;
    char body[2048];
    int u = snprintf(body, sizeof body,
                     "set title 'Retention P(d)/P(0) of the two forms ({/Symbol a} = 1; colour = form, dash = preset), and the paper''s reported values'\n"
                     "set xlabel 'distance d / L'\nset ylabel 'P(d) / P(0)'\nset yrange [0:1.05]\n"
                     "set key bottom left\n" EPAR_PLOT_IF("'retention_curves.csv', '1:2'") "plot ");
    for (int p = 0; p < np && u < (int)sizeof body; p++) {
        char name[64];
        snprintf(name, sizeof name, "%s", pn[p]);
        for (char *q = name; *q; q++)
            if (*q == '_') *q = ' ';
        /* colour = form (basic red, enhanced blue, as in parameter/retention_curves.png), dash = preset */
        u += snprintf(body + u, sizeof body - (size_t)u,
                      "'retention_curves.csv' skip 1 using 1:%d with lines lt 2 lw 2 dt %d title 'basic, %s ({/Symbol b}=%g)', "
                      "'' skip 1 using 1:%d with lines lt 1 lw 2 dt %d title 'enhanced, %s ({/Symbol b}=%g, {/Symbol g}=%g)', \\\n     ",
                      2 + 2 * p, p + 1, name, beta[p], 3 + 2 * p, p + 1, name, beta[p], gamma[p]);
    }
    if (u < (int)sizeof body)
        snprintf(body + u, sizeof body - (size_t)u,
                 "'retention_reported.csv' skip 1 using 1:2 with points pt 7 ps 1.6 lc rgb 'black' title 'reported by "
                 "the paper', \\\n     '' skip 1 using 1:2:3 with labels right offset -1,0.6 noenhanced notitle" EPAR_PLOT_END);
    return epar_plot_script(o, "retention_curves", "Retention of the basic and enhanced forms", body);
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
static void shown_measured(const struct epar_audit_row *r, char *out, size_t n)
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
static void shown_sd(const struct epar_audit_row *r, char *out, size_t n)
{
    out[0] = '\0';
    if (!r->measured_sd || !*r->measured_sd) return;
    char *end;
    double v = strtod(r->measured_sd, &end);
    if (*end || isnan(v)) snprintf(out, n, "n/a (one seed)");
    else snprintf(out, n, "%.2g", v);
}

/* ---- REPORT.md / REPORT.html ---- */

/* how many prediction claims miss, beside how many would miss by chance at the audit's level if every figure held */
static void chance_note(struct epar_pub_doc *d, const struct epar_audit *a)
{
    int np = 0, nnot = 0;
    double level = NAN;
    for (size_t i = 0; i < a->n; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        if (!r->rule || strncmp(r->rule, "prediction", 10)) continue;
        const char *l = strstr(r->rule, "(level ");
        if (l) level = strtod(l + 7, NULL);
        np++;
        nnot += r->verdict == EPAR_AUDIT_NOT_REPRODUCED;
    }
    if (!np || !isfinite(level)) return;
    epar_pub_li(d, "Of the %d claims judged by **prediction**, %d are not reproduced; at level %g about %.0f (%d x %.2g) "
              "would miss by chance even if every figure held.", np, nnot, level, np * (1 - level), np, 1 - level);
}

static void write_verdict_table(struct epar_pub_doc *d, const struct epar_audit *a)
{
    static const char *const head[] = {"claim", "reported", "measured", "sd across seeds", "rule", "verdict"};
    epar_pub_table(d, 6, head);
    for (size_t i = 0; i < a->n; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        char id[160], meas[512], sd[64];
        snprintf(id, sizeof id, "`%s`", r->id);
        shown_measured(r, meas, sizeof meas);
        shown_sd(r, sd, sizeof sd);
        const char *cells[] = {id, r->reported, meas, sd, r->rule, epar_audit_verdict_name(r->verdict)};
        epar_pub_tr(d, 6, cells);
    }
    epar_pub_table_end(d);
}

/* what the report reads back from an experiment's run.json: its "parameters" (epar_params_json) */
struct run_params {
    const char *form;
    double alpha, beta, gamma;
    int length, hidden, heads, batch, runs, n_seeds;
    long seeds[EPAR_MAX_SEEDS];
};
struct run_file {
    struct run_params parameters;
};
#define RPRM struct run_params
static const struct epar_field run_params_rows[] = {
    EPAR_FIELD_(RPRM, "form", EPAR_FIELD_STRING, form, 0),
    RP_NUMBER(RPRM, "alpha", alpha),
    RP_NUMBER(RPRM, "beta", beta),
    RP_NUMBER(RPRM, "gamma", gamma),
    EPAR_FIELD_(RPRM, "length", EPAR_FIELD_INT, length, 0),
    EPAR_FIELD_(RPRM, "hidden", EPAR_FIELD_INT, hidden, 0),
    EPAR_FIELD_(RPRM, "heads", EPAR_FIELD_INT, heads, 0),
    EPAR_FIELD_(RPRM, "batch", EPAR_FIELD_INT, batch, 0),
    EPAR_FIELD_(RPRM, "runs", EPAR_FIELD_INT, runs, 0),
    EPAR_FIELD_LIST_(RPRM, "seeds", EPAR_FIELD_LLIST, seeds, n_seeds, EPAR_MAX_SEEDS, EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_END_};
#undef RPRM
static const struct epar_field run_rows[] = {
    EPAR_FIELD_OBJ_(struct run_file, "parameters", parameters, run_params_rows, EPAR_FIELD_REQUIRED), EPAR_FIELD_END_};

static void write_protocol_section(struct epar_pub_doc *d, const char *out_root, const struct epar_report_info *info)
{
    epar_pub_h(d, 2, "protocol", "Protocol");
    epar_pub_p(d, "Protocol file `%s` (version %d), preset `%s`. Each experiment's `run.json` records the exact parameters; "
             "the main ones:", info->protocol_path, EPAR_PROTOCOL_VERSION,
          info->preset ? info->preset : "(the file's default)");
    static const char *const head[] = {"folder", "section", "status", "form", "alpha", "beta", "gamma",
                                       "L", "hidden", "heads", "batch", "runs", "seeds"};
    epar_pub_table(d, 13, head);
    for (int s = 0; s < info->n_folders; s++) {
        const struct epar_report_folder *fo = &info->folders[s];
        if (!strcmp(fo->dir, "report")) continue;
        char p[4096], dir[80];
        snprintf(p, sizeof p, "%s/%s/run.json", out_root, fo->dir);
        snprintf(dir, sizeof dir, "`%s/`", fo->dir);
        struct run_file rf = {0};
        json_t *doc = NULL;
        if (!file_exists(p) || epar_fields_load(p, "run file", run_rows, &rf, &doc)) {
            const char *cells[13] = {dir, fo->label, file_exists(p) ? "run.json unreadable" : "not run"};
            epar_pub_tr(d, 13, cells);
            continue;
        }
        const struct run_params *prm = &rf.parameters;
        char seeds[256] = "", v[9][32];
        for (int i = 0; i < prm->n_seeds; i++)
            snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), "%s%lld", i ? "," : "", (long long)prm->seeds[i]);
        const double num[] = {prm->alpha, prm->beta, prm->gamma};
        const int integer[] = {prm->length, prm->hidden, prm->heads, prm->batch, prm->runs};
        for (int k = 0; k < 3; k++) snprintf(v[k], sizeof v[k], "%g", num[k]);
        for (int k = 0; k < 5; k++) snprintf(v[3 + k], sizeof v[3 + k], "%d", integer[k]);
        const char *cells[13] = {dir, fo->label, "ran", prm->form ? prm->form : "", v[0], v[1], v[2], v[3], v[4], v[5],
                                 v[6], v[7], seeds};
        epar_pub_tr(d, 13, cells);
        json_decref(doc);
    }
    epar_pub_table_end(d);
    if (info->failed && info->failed[0]) {
        char list[512] = "";
        for (const char *const *x = info->failed; *x; x++)
            snprintf(list + strlen(list), sizeof list - strlen(list), " `%s`", *x);
        epar_pub_p(d, "Experiments that FAILED in this run (their claims read older files or none):%s", list);
    }
    epar_pub_p(d, "Stochastic numbers are run once per seed and reported as the mean across seeds with the sample sd across "
             "seeds; deterministic numbers (functions of alpha, beta, gamma, L) are computed exactly. Numbers here are "
             "rounded to the precision of the figure they are compared with; `claims.csv` has them in full.");
}

static void write_retention_section(struct epar_pub_doc *d, const struct epar_table *rt, const struct epar_table *im, int figures)
{
    epar_pub_h(d, 2, "retention", "Which definition of \"retention\" gives the paper's figures");
    epar_pub_p(d, "The paper gives x4.2 (mid range), x28.3 (maximum distance), 78%% and 2.8%% without a definition or "
             "parameters. `retention_definitions.csv` computes the pre-softmax retention P(d)/P(0) of both forms and "
             "their ratio (the gain) for every preset's (beta, gamma) and every sequence length of the protocol, at "
             "d = L/2, L-1 and L:");
    static const char *const head[] = {"preset", "beta", "gamma", "L", "d", "basic", "enhanced", "gain"};
    epar_pub_table(d, 8, head);
    for (size_t r = 0; r < rt->nrows; r++) {
        char v[7][32];
        snprintf(v[0], sizeof v[0], "%g", epar_csv_get(rt, r, "beta"));
        snprintf(v[1], sizeof v[1], "%g", epar_csv_get(rt, r, "gamma"));
        snprintf(v[2], sizeof v[2], "%g", epar_csv_get(rt, r, "length"));
        snprintf(v[3], sizeof v[3], "%.4g", epar_csv_get(rt, r, "basic_retention"));
        snprintf(v[4], sizeof v[4], "%.4g", epar_csv_get(rt, r, "enhanced_retention"));
        snprintf(v[5], sizeof v[5], "%.4g", epar_csv_get(rt, r, "gain"));
        const char *cells[] = {epar_csv_get_str(rt, r, "preset"), v[0], v[1], v[2], epar_csv_get_str(rt, r, "distance"),
                               v[3], v[4], v[5]};
        epar_pub_tr(d, 8, cells);
    }
    epar_pub_table_end(d);
    /* the sentences below come from implied_parameters.csv (implied_table): computed, never typed in */
    epar_pub_ul(d, 1);
    for (size_t r = 0; im && r < im->nrows; r++) {
        double v = epar_csv_get(im, r, "value"), rep = epar_csv_get(im, r, "reported");
        const char *m = epar_csv_get_str(im, r, "matches_reported");
        char tail[160] = "";
        if (isfinite(rep)) snprintf(tail, sizeof tail, " (reported %.4g; by the printed-figure rule: %s)", rep, m ? m : "");
        epar_pub_li(d, "%s: %.5g%s.", epar_csv_get_str(im, r, "meaning"), v, tail);
    }
    int all = 0, total = 0;
    for (size_t r = 0; im && r < im->nrows; r++)
        if (isfinite(epar_csv_get(im, r, "reported")) && !strncmp(epar_csv_get_str(im, r, "quantity"), "implied_", 8)) {
            total++;
            all += !strcmp(epar_csv_get_str(im, r, "matches_reported"), "yes");
        }
    if (total)
        epar_pub_li(d, "With the (beta, gamma) that the two gains imply, %d of the %d other printed figures come out, so %s.",
               all, total, all == total ? "one setting does give all four figures"
                                        : "no single (beta, gamma) gives all four figures");
    epar_pub_ul(d, 0);
    if (figures) epar_pub_p(d, "![retention of both forms and the paper's values](retention_curves.png)");
    epar_pub_p(d, "The verdict of each figure (claims `retention_*`) uses the paper's own defaults; the other settings are "
             "named in the claim's note as alternatives, never used to change the verdict.");
}

/* The reference's known defects: the protocol's "reference_defects" (data, like the claims), each followed by the
 * verdicts and measured values of the claims that show it. */
static void write_defects(struct epar_pub_doc *d, const struct report_proto *rp, const struct epar_audit *a)
{
    if (!rp->n_defects) return;
    epar_pub_h(d, 2, "defects", "Known defects of the reference code (fixed in epar, not copied)");
    epar_pub_ul(d, 1);
    for (int i = 0; i < rp->n_defects; i++) {
        const struct rp_defect *x = &rp->defects[i];
        char shown[2048] = "";
        for (int k = 0; k < x->n_shown; k++)
            for (size_t r = 0; r < a->n; r++)
                if (!strcmp(a->rows[r].id, x->shown_by[k])) {
                    char meas[256] = "";
                    if (*a->rows[r].measured) {
                        char m[200];
                        shown_measured(&a->rows[r], m, sizeof m);
                        snprintf(meas, sizeof meas, ", measured %s", m);
                    }
                    snprintf(shown + strlen(shown), sizeof shown - strlen(shown), "%s`%s` %s%s",
                             k ? "; " : " Shown by: ", a->rows[r].id, epar_audit_verdict_name(a->rows[r].verdict), meas);
                }
        epar_pub_li(d, "**%s**: %s%s%s", x->title, x->text, shown, x->n_shown ? "." : "");
    }
    epar_pub_ul(d, 0);
}

static void write_findings(struct epar_pub_doc *d, const char *out_root, const struct epar_audit *a, int figures)
{
    epar_pub_h(d, 2, "findings", "Findings by section");
    for (size_t i = 0; i < a->n; i++) {
        const char *sec = a->rows[i].section;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = !strcmp(a->rows[j].section, sec);
        if (seen) continue;
        int cnt[EPAR_AUDIT_VERDICT_COUNT] = {0};
        for (size_t j = i; j < a->n; j++)
            if (!strcmp(a->rows[j].section, sec)) cnt[a->rows[j].verdict]++;
        char anchor[96], counts[512] = "";
        snprintf(anchor, sizeof anchor, "findings-%s", sec);
        epar_pub_h(d, 3, anchor, "%s", group_title(sec));
        for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++)
            if (cnt[v])
                snprintf(counts + strlen(counts), sizeof counts - strlen(counts), "%s%d %s", counts[0] ? ", " : "",
                         cnt[v], epar_audit_verdict_name((enum epar_audit_verdict)v));
        epar_pub_p(d, "%s.", counts);
        epar_pub_ul(d, 1);
        for (size_t j = i; j < a->n; j++) {
            const struct epar_audit_row *r = &a->rows[j];
            if (strcmp(r->section, sec)) continue;
            char meas[640] = "";
            if (*r->measured) {
                char m[512], sd[64];
                shown_measured(r, m, sizeof m);
                shown_sd(r, sd, sizeof sd);
                snprintf(meas, sizeof meas, ", measured %s%s%s%s", m, *sd ? " (sd " : "", sd, *sd ? ")" : "");
            }
            epar_pub_li(d, "`%s` **%s**: %s Reported %s%s. Source: %s. Measurement: %s. %s", r->id,
                   epar_audit_verdict_name(r->verdict), r->statement, r->reported, meas, r->source, r->measurement,
                   r->note);
        }
        epar_pub_ul(d, 0);
        /* the figures named by this section's claims */
        char figs[4096] = "";
        for (size_t j = i; j < a->n; j++) {
            const struct epar_audit_row *r = &a->rows[j];
            if (strcmp(r->section, sec)) continue;
            for (char **fg = r->figures; fg && *fg; fg++) {
                char mark[512];
                snprintf(mark, sizeof mark, "[%s](../%s)", *fg, *fg);
                if (strstr(figs, mark)) continue;
                char p[4096];
                snprintf(p, sizeof p, "%s/%s", out_root, *fg);
                /* the report's own figures are rendered after this file is written */
                int present = strncmp(*fg, "report/", 7) ? file_exists(p) : figures;
                if (present) snprintf(figs + strlen(figs), sizeof figs - strlen(figs), " %s", mark);
                else snprintf(figs + strlen(figs), sizeof figs - strlen(figs), " %s (not produced in this run)", *fg);
            }
        }
        if (figs[0]) epar_pub_p(d, "Figures:%s", figs);
    }
}

/* the style of both HTML pages: readable from 420 px up, no external fonts or scripts */
static const char page_css[] =
    "*{box-sizing:border-box}[hidden]{display:none !important}\n"
    "body{font-family:sans-serif;line-height:1.4;margin:0 auto;padding:0 12px 3em;max-width:1400px;color:#222;overflow-wrap:break-word}\n"
    "h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}\n"
    "code{font-size:0.92em;background:#f3f3f3;padding:0 2px;overflow-wrap:anywhere}\n"
    "a{overflow-wrap:anywhere}\n"
    ".scroll{max-width:100%;overflow-x:auto}.scroll td code{overflow-wrap:normal;white-space:nowrap}\n"
    "table{border-collapse:collapse;font-size:0.88em}td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top;"
    "text-align:left}\n"
    "img{max-width:100%;height:auto}\n"
    ".grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,380px),1fr));gap:14px}\n"
    "figure{margin:0}figure img{width:100%;border:1px solid #ddd}figcaption{font-size:0.85em;color:#333}\n"
    "nav.toc{background:#f6f6f6;padding:6px 12px;border:1px solid #ddd}nav.toc ul{margin:0.3em 0;padding-left:1.2em}\n"
    ".v-reproduced,.v-trivially-true{background:#e6f4e6}.v-partly-reproduced{background:#f4f4d8}"
    ".v-not-reproduced{background:#fbe3e3}.v-inconclusive,.v-stale{background:#fdf0dc}"
    ".v-ill-posed,.v-needs-2-seeds,.v-not-reproducible-here{background:#eeeeee}\n"
    /* figures wrap between words, never inside a number; the statement keeps room to be read */
    "table.claims{width:100%}table.claims td{overflow-wrap:anywhere}table.claims td.num{overflow-wrap:normal}"
    "td.meas span{white-space:nowrap}table.claims td[data-label=claim]{min-width:14em}\n"
    /* a verdict breaks between its words only ("not reproducible / here"), never inside one ("inconclusiv e") */
    "table.claims td.verdict,table.claims details summary{overflow-wrap:normal;word-break:normal;hyphens:none}"
    "table.claims td.verdict{min-width:7.5em}\n"
    "details{font-size:0.92em}details summary{cursor:pointer;color:#1f4e99}\n"
    ".chips button{margin:2px;padding:2px 8px;border:1px solid #999;border-radius:10px;cursor:pointer;font-size:0.9em}\n"
    "@media (max-width:760px){table.claims,table.claims tbody,table.claims tr,table.claims td{display:block;width:100%}"
    "table.claims tr.head{display:none}table.claims tr{border:1px solid #bbb;margin-bottom:8px}"
    "table.claims td{border:none;padding:2px 6px}table.claims td[data-label]::before{content:attr(data-label) \": \";"
    "font-weight:bold}table.claims td[data-label=claim]{min-width:0}}\n";


/* which proxy tasks the audited benchmark's models learned (main_table.csv `learned`, of nm mechanisms, beyond
 * chance by z standard errors: both from its run.json), as a sentence; "" when the table or its column is absent */
static void learned_sentence(const char *out_root, int nm, double z, char *buf, size_t n)
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

/* what the report reads back from the benchmark's run.json */
struct bench_budget {
    const char *name;
};
struct bench_params {
    int n_seeds;
    long seeds[EPAR_MAX_SEEDS];
};
struct bench_run {
    struct bench_budget budget;
    struct bench_params parameters;
    long cells;
    double param_max_rel_diff, learned_z;
    int n_mechanisms;
    const char *mechanisms[EPAR_MAX_LIST];
};
static const struct epar_field bench_budget_rows[] = {
    EPAR_FIELD_(struct bench_budget, "name", EPAR_FIELD_STRING, name, 0), EPAR_FIELD_END_};
static const struct epar_field bench_params_rows[] = {
    EPAR_FIELD_LIST_(struct bench_params, "seeds", EPAR_FIELD_LLIST, seeds, n_seeds, EPAR_MAX_SEEDS, EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_END_};
#define BR struct bench_run
static const struct epar_field bench_rows[] = {
    EPAR_FIELD_OBJ_(BR, "budget", budget, bench_budget_rows, 0),
    EPAR_FIELD_OBJ_(BR, "parameters", parameters, bench_params_rows, 0),
    EPAR_FIELD_(BR, "cells", EPAR_FIELD_LONG, cells, 0),
    RP_NUMBER(BR, "param_max_rel_diff", param_max_rel_diff),
    RP_NUMBER(BR, "learned_z", learned_z),
    EPAR_FIELD_LIST_(BR, "mechanisms", EPAR_FIELD_SLIST, mechanisms, n_mechanisms, EPAR_MAX_LIST, EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_END_};
#undef BR

/* the trained proxy: what it is, what it cannot show, and which run is in <out>/benchmark */
static void write_proxy_section(struct epar_pub_doc *d, const char *out_root)
{
    epar_pub_h(d, 2, "proxy", "The trained proxy (`epar benchmark`)");
    char p[4200], run[2048] = " No benchmark has run in this output folder (`epar benchmark --budget quick`, or "
                                "`epar run-all` without `--no-benchmark`).";
    snprintf(p, sizeof p, "%s/benchmark/run.json", out_root);
    struct bench_run br = {{NULL}, {0, {0}}, 0, 0, 0, 0, {NULL}};
    json_t *doc = NULL;
    if (epar_fields_load(p, "run file", bench_rows, &br, &doc) == EPAR_OK) {
        snprintf(run, sizeof run, " The run audited here: budget `%s`, %d seed(s), %lld cells, largest parameter-count "
                                  "difference %.3g%% of `none`'s; its table is [main_table.md](../benchmark/main_table.md).",
                 br.budget.name ? br.budget.name : "?", br.parameters.n_seeds, (long long)br.cells,
                 100 * br.param_max_rel_diff);
        size_t l = strlen(run);
        learned_sentence(out_root, br.n_mechanisms, br.learned_z, run + l, sizeof run - l);
        json_decref(doc);
    }
    epar_pub_p(d, "The main table, the \"when to use\" figures and the training cost are claims about 110M-parameter "
             "Transformers trained on WikiText-103, WMT'14, SQuAD 2.0, GLUE and ArXiv; they stay **not reproducible here**. "
             "Each has a sibling claim (`proxy_<id>`) measured on a proxy: small causal Transformers (tens of thousands "
             "of parameters) trained on this machine, one per position mechanism and seed, on tasks that isolate what "
             "each row is about (character-level KJV text for perplexity, reversal for translation, associative recall "
             "and a fact at a controlled distance for QA, the majority symbol for classification, selective copying "
             "from a sequence four times the short length for long documents; shuffled words, 20%% input noise and an "
             "order-free count for the conditions; docs/TASKS.md), with equal steps, tokens and learning rate for "
             "every mechanism and parameter counts within 1%%. A proxy verdict says whether the *direction* of the "
             "paper's effect (EPAR beats every baseline, hurts under noise, costs little) holds for small trained "
             "models, judged by the per-seed relative differences and their spread across seeds: \"EPAR improves on "
             "the baselines\" needs EPAR above each baseline at the audit's level (comparisons.csv) and is not "
             "reproduced when a baseline is better after a Holm adjustment across the baselines; the minimum "
             "detectable effects in main_table.md say how large a difference these seeds could see. It cannot show the "
             "size of the effect at 110M parameters, on the real data sets, with the paper's tuning, or the share of "
             "attention in a large model's step (cost.csv gives this model's, to scale the overheads by); with few "
             "seeds and short training many differences are inconclusive.%s", run);
}

static void write_report(struct epar_pub_doc *d, const char *out_root, const struct epar_audit *a,
                         const struct epar_report_info *info, const struct report_proto *rp, const struct epar_table *rt,
                         const struct epar_table *im)
{
    if (d->html) epar_pub_page_head(d->f, "EPAR reproduction report", page_css);
    epar_pub_h(d, 1, NULL, "EPAR reproduction report");
    epar_pub_p(d, "Written by `epar run-all` (epar %s). Every number below is computed by epar or read from its output "
             "files; the reported values are the paper's and the reference repository's. The full audit table is "
             "[claims.csv](claims.csv); the figures are collected in [../index.html](../index.html)%s.",
          info->version, d->html ? "; the same report as markdown: [REPORT.md](REPORT.md)" : "");
    write_protocol_section(d, out_root, info);
    epar_pub_h(d, 2, "verdicts", "Verdicts");
    static const char *const head[] = {"verdict", "claims"};
    epar_pub_table(d, 2, head);
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++) {
        char n[16];
        snprintf(n, sizeof n, "%d", a->counts[v]);
        const char *cells[] = {epar_audit_verdict_name((enum epar_audit_verdict)v), n};
        epar_pub_tr(d, 2, cells);
    }
    char tot[16];
    snprintf(tot, sizeof tot, "%zu", a->n);
    const char *total[] = {"**total**", tot};
    epar_pub_tr(d, 2, total);
    epar_pub_table_end(d);
    epar_pub_p(d, "How to read a verdict. Each claim is judged by the rule of its kind of figure, fixed in "
             "`paper_protocol.json` before looking at results (column `rule`; `accepted` in claims.csv shows what the "
             "rule accepts):");
    epar_pub_ul(d, 1);
    epar_pub_li(d, "**printed** (a figure the paper prints for a deterministic quantity): the measurement must round to it, "
              "i.e. lie within half a unit of its last printed digit (78%% means [77.5%%, 78.5%%)).");
    epar_pub_li(d, "**prediction** (a figure of another run of a stochastic quantity): the reported value must fall in the "
              "prediction interval of a new run, mean +- t(n-1) x sd x sqrt(1 + 1/n) over the n seeds, the sd floored by "
              "the run-level standard error of each seed's mean, widened by half a printed unit; with one seed: **needs "
              ">= 2 seeds**.");
    chance_note(d, a);
    epar_pub_li(d, "**estimate** (a Monte-Carlo estimate of an exact value): |estimate - exact| <= z x standard error.");
    epar_pub_li(d, "**exact** / **relative** (deterministic values; a tolerance beyond 1e-12 says why, e.g. the reference's "
              "float32); **above** / **below** / **range** (thresholds: for a stochastic value the whole confidence "
              "interval of the mean must be on the claimed side, else **inconclusive**); **at_least** (a wall-clock "
              "speed-up, with a stated slack).");
    epar_pub_li(d, "Identities and by-construction properties are **trivially true** (the reason is given) when their check "
              "holds; a statement that cannot be true or false as written is **ill-posed** (its readings are shown); a "
              "claim with several readings is **partly reproduced** when some hold; a claim whose input comes from "
              "another run than the one audited (protocol hash, preset, seeds, epar version or command-line changes "
              "differ) is **stale**; **not reproducible here** gives the reason (training a 110M model, or an "
              "experiment that did not run: rerun it). Nearby settings that would match are named in the note, never "
              "used for the verdict.");
    epar_pub_ul(d, 0);
    epar_pub_p(d, "Sources: `seed 00N_...txt §x` is a section of one of the five source documents, `charles-wang888/...` "
             "a file of the reference repository; docs/SOURCES.md of the epar sources lists each with its title, and "
             "the published papers behind every mechanism.");
    if (a->stale)
        epar_pub_p(d, "**%d claim(s) are stale**: their files come from another run (see their notes); rerun `epar run-all` "
                 "to audit this protocol's own runs.", a->stale);
    if (a->spec_problems)
        epar_pub_p(d, "**%d claim(s) have a measurement spec that does not fit its file** (see their notes): fix the "
                 "`measure` entry in `paper_protocol.json`.", a->spec_problems);
    if (info->figures && a->n) epar_pub_p(d, "![verdicts per section](verdicts.png)");
    write_verdict_table(d, a);
    write_findings(d, out_root, a, info->figures);
    write_proxy_section(d, out_root);
    write_retention_section(d, rt, im, info->figures);
    write_defects(d, rp, a);
    if (d->html) fputs("</body></html>\n", d->f);
}

static int write_doc(struct epar_out *o, const char *name, int as_html, const char *out_root,
                     const struct epar_audit *a, const struct epar_report_info *info, const struct report_proto *rp,
                     const struct epar_table *rt, const struct epar_table *im)
{
    const char *path = epar_out_path(o, name);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    if (strrchr(dir, '/')) *strrchr(dir, '/') = '\0';
    else snprintf(dir, sizeof dir, ".");
    struct epar_out_file w;
    FILE *f = epar_out_fopen(&w, path);
    if (!f) return EPAR_EIO;
    struct epar_pub_doc d = {f, as_html, dir};
    write_report(&d, out_root, a, info, rp, rt, im);
    return epar_out_fclose(&w);
}

/* the claim sections in first-appearance order: id of the i-th (NULL past the end) */
static const char *nth_section(const struct epar_audit *a, int k)
{
    for (size_t i = 0; i < a->n; i++) {
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = !strcmp(a->rows[j].section, a->rows[i].section);
        if (!seen && k-- == 0) return a->rows[i].section;
    }
    return NULL;
}

/* ---- SUMMARY.md and summary.json: the headline numbers, computed from the audit ----
 * Exactly the sentences README.md quotes: its opening (block "summary") and its benchmark section (block
 * "benchmark"), each between the markers <!-- <block>:begin --> and <!-- <block>:end -->. README quotes the copy of
 * a full run pinned in docs/ (`make summary-update`); tests/cli/test_summary.sh fails when README and the pin
 * disagree, or when a fresh `run-all --no-benchmark` disagrees with the pin on what needs no trained benchmark (the
 * lines marked static, and the counts under "static" in summary.json). */

#define SUM_MAX_LINES 64
struct sum_line {
    const char *block;  /* "summary" or "benchmark" */
    char id[64];
    int is_static;      /* needs no trained benchmark: `run-all --no-benchmark` writes the same line */
    char *text;         /* markdown */
};
struct summary {
    int n;
    struct sum_line line[SUM_MAX_LINES];
};

static void sum_add(struct summary *s, const char *block, const char *id, int is_static, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void sum_add(struct summary *s, const char *block, const char *id, int is_static, const char *fmt, ...)
{
    if (s->n >= SUM_MAX_LINES) return;
    struct sum_line *l = &s->line[s->n];
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

static json_t *counts_json(const int *cnt)
{
    json_t *o = json_object();
    for (int v = 0; o && v < EPAR_AUDIT_VERDICT_COUNT; v++)
        json_object_set_new(o, epar_audit_verdict_name((enum epar_audit_verdict)v), json_integer(cnt[v]));
    return o;
}

/* the claims of section sec (NULL: all) that read the benchmark (bench 1) or not (0), or either (-1): counts */
static int count_rows(const struct epar_audit *a, const char *sec, int bench, int *cnt)
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
        shown_measured(r, m, sizeof m);
        md_text(m, meas, sizeof meas);
        snprintf(out + strlen(out), n - strlen(out), "%s`%s`: reported %s, measured %s", shown ? "; " : "", r->id, rep,
                 *meas ? meas : "nothing");
        shown++;
    }
    if (more) snprintf(out + strlen(out), n - strlen(out), "; %d more in `report/claims.csv`", more);
}

/* what summary.json and the opening line say about the run: the audit's run.json (written before the report) */
struct audit_run {
    const char *preset, *hash, *version;
    int n_seeds;
    long seeds[EPAR_MAX_SEEDS];
};
#define AR struct audit_run
static const struct epar_field audit_run_rows[] = {
    EPAR_FIELD_(AR, "preset", EPAR_FIELD_STRING, preset, 0),
    EPAR_FIELD_(AR, "protocol_hash", EPAR_FIELD_STRING, hash, 0),
    EPAR_FIELD_(AR, "epar_version", EPAR_FIELD_STRING, version, 0),
    EPAR_FIELD_LIST_(AR, "seeds", EPAR_FIELD_LLIST, seeds, n_seeds, EPAR_MAX_SEEDS, EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_END_};
#undef AR

/* a relative difference as a signed percentage: one decimal, more when that would print a nonzero value as 0 */
static void pct_text(double v, char *out, size_t n)
{
    int dec = 1;
    snprintf(out, n, "%+.*f %%", dec, 100 * v);
    while (v != 0 && strtod(out, NULL) == 0 && dec < 12) snprintf(out, n, "%+.*f %%", ++dec, 100 * v);
    if (v == 0) snprintf(out, n, "0.0 %%");
}

/* the benchmark block: what the trained proxies gave (main_table.csv, cost.csv of <out>/benchmark) */
static void summary_benchmark(struct summary *s, const char *out_root, const struct bench_run *br)
{
    char p[4200], buf[4096];
    learned_sentence(out_root, br->n_mechanisms, br->learned_z, buf, sizeof buf);
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
static void summary_lines(struct summary *s, const char *out_root, const struct epar_audit *a,
                          const struct epar_report_info *info, const struct audit_run *ar, const struct bench_run *br,
                          int have_bench, const struct epar_table *im)
{
    char counts[1024], ex[4096], seeds[256] = "", bseeds[256] = "";
    if (ar->n_seeds) seeds_text(ar->seeds, ar->n_seeds, seeds, sizeof seeds);
    if (have_bench) seeds_text(br->parameters.seeds, br->parameters.n_seeds, bseeds, sizeof bseeds);
    int cnt[EPAR_AUDIT_VERDICT_COUNT];
    count_rows(a, NULL, -1, cnt);
    counts_text(cnt, counts, sizeof counts);
    char bench[512];
    if (have_bench)
        snprintf(bench, sizeof bench, "the `%s` benchmark (seeds %s)", br->budget.name ? br->budget.name : "?", bseeds);
    else
        snprintf(bench, sizeof bench, "no trained benchmark");
    sum_add(s, "summary", "total", 0, "With `%s` (preset `%s`%s%s) and %s, epar %s judges **%zu claims**: %s.",
            info->protocol_path, ar->preset ? ar->preset : info->preset ? info->preset : "?", *seeds ? ", seeds " : "",
            seeds, bench, info->version, a->n, counts);
    /* one line per section, over the claims that need no benchmark */
    const char *sec;
    static const int fails[] = {EPAR_AUDIT_NOT_REPRODUCED, EPAR_AUDIT_PARTLY};
    for (int k = 0; (sec = nth_section(a, k)); k++) {
        int n = count_rows(a, sec, 0, cnt);
        if (!n) continue;
        counts_text(cnt, counts, sizeof counts);
        claim_examples(a, sec, 0, fails, 2, 4, ex, sizeof ex);
        char title[256];
        md_text(group_title(sec), title, sizeof title);
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
    int nproxy = count_rows(a, NULL, 1, cnt);
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
                    "task and seed, budget `%s`, %lld cells): %d claims, %s. Of the %d claims that EPAR enhanced beats "
                    "every baseline (rule `beats_all`; measured: its smallest improvement over the baselines, with its "
                    "interval), %d %s reproduced. Reproduced: %s. Not or partly reproduced: %s.",
                    br->budget.name ? br->budget.name : "?", (long long)br->cells, nproxy, counts, nb, nbh,
                    nbh == 1 ? "is" : "are",
                    *yes ? yes : "none", *no ? no : "none");
            summary_benchmark(s, out_root, br);
        }
    }
}

static void summary_free(struct summary *s)
{
    for (int i = 0; i < s->n; i++) free(s->line[i].text);
    s->n = 0;
}

/* report/SUMMARY.md (the blocks README quotes) and report/summary.json (the same lines, and the counts) */
static int write_summary(struct epar_out *o, const char *out_root, const struct epar_audit *a,
                         const struct epar_report_info *info, const struct epar_table *im)
{
    struct audit_run ar = {0};
    json_t *ardoc = NULL;
    const char *rjp = epar_out_path(o, "run.json");
    if (access(rjp, R_OK) != 0 || epar_fields_load(rjp, "run file", audit_run_rows, &ar, &ardoc)) {
        epar_err_clear();
        memset(&ar, 0, sizeof ar);
    }
    char p[4200];
    snprintf(p, sizeof p, "%s/benchmark/run.json", out_root);
    struct bench_run br = {{NULL}, {0, {0}}, 0, 0, 0, 0, {NULL}};
    json_t *bdoc = NULL;
    int have_bench = access(p, R_OK) == 0 && epar_fields_load(p, "run file", bench_rows, &br, &bdoc) == EPAR_OK;
    if (!have_bench) epar_err_clear();
    struct summary *s = EPAR_CALLOC(1, sizeof *s);
    if (!s) {
        json_decref(ardoc);
        json_decref(bdoc);
        return EPAR_ENOMEM;
    }
    summary_lines(s, out_root, a, info, &ar, &br, have_bench, im);

    /* SUMMARY.md */
    int st = EPAR_OK;
    const char *path = epar_out_path(o, "SUMMARY.md");
    FILE *f = fopen(path, "w");
    if (!f) st = epar_err_set(EPAR_EIO, "cannot write '%s': %s", path, strerror(errno));
    static const char *const blocks[] = {"summary", "benchmark"};
    for (int b = 0; f && b < 2; b++) {
        int any = 0;
        for (int i = 0; i < s->n; i++) any |= !strcmp(s->line[i].block, blocks[b]);
        if (!any) continue;
        fprintf(f, "%s<!-- %s:begin (written by epar run-all from the audit; README.md quotes docs/SUMMARY.md: "
                   "refresh it with make summary-update) -->\n", b ? "\n" : "", blocks[b]);
        for (int i = 0, prev_item = 1; i < s->n; i++) {
            if (strcmp(s->line[i].block, blocks[b])) continue;
            int item = s->line[i].text[0] == '-';
            if (item && !prev_item) fputc('\n', f); /* a list after a paragraph */
            fprintf(f, "%s\n", s->line[i].text);
            prev_item = item;
        }
        fprintf(f, "<!-- %s:end -->\n", blocks[b]);
    }
    if (f && (ferror(f) | (fclose(f) != 0)) && !st) st = epar_err_set(EPAR_EIO, "cannot write '%s': %s", path, strerror(errno));

    /* summary.json */
    int cnt[EPAR_AUDIT_VERDICT_COUNT];
    json_t *root = json_object(), *lines = json_array(), *sections = json_array(), *stat = json_object();
    json_t *seeds = json_array(), *bseeds = json_array();
    for (int i = 0; i < ar.n_seeds; i++) json_array_append_new(seeds, json_integer(ar.seeds[i]));
    for (int i = 0; have_bench && i < br.parameters.n_seeds; i++)
        json_array_append_new(bseeds, json_integer(br.parameters.seeds[i]));
    for (int i = 0; i < s->n; i++)
        json_array_append_new(lines, json_pack("{s:s, s:s, s:b, s:s}", "block", s->line[i].block, "id", s->line[i].id,
                                               "static", s->line[i].is_static, "text", s->line[i].text));
    const char *sec;
    for (int k = 0; (sec = nth_section(a, k)); k++) {
        int n = count_rows(a, sec, 0, cnt);
        if (n) json_array_append_new(sections, json_pack("{s:s, s:i, s:o}", "section", sec, "claims", n, "verdicts",
                                                         counts_json(cnt)));
    }
    int nstat = count_rows(a, NULL, 0, cnt);
    json_object_set_new(stat, "claims", json_integer(nstat));
    json_object_set_new(stat, "verdicts", counts_json(cnt));
    json_object_set_new(stat, "sections", sections);
    count_rows(a, NULL, -1, cnt);
    json_t *all = counts_json(cnt);
    int nproxy = count_rows(a, NULL, 1, cnt);
    json_t *bench = have_bench ? json_pack("{s:s, s:o, s:I, s:i, s:o}", "budget", br.budget.name ? br.budget.name : "",
                                           "seeds", bseeds, "cells", (json_int_t)br.cells, "claims", nproxy, "verdicts",
                                           counts_json(cnt))
                               : json_null();
    if (!have_bench) json_decref(bseeds);
    json_object_set_new(root, "written_by", json_string("epar run-all"));
    json_object_set_new(root, "epar_version", json_string(info->version));
    json_object_set_new(root, "protocol", json_string(info->protocol_path));
    json_object_set_new(root, "protocol_hash", json_string(ar.hash ? ar.hash : ""));
    json_object_set_new(root, "preset", json_string(ar.preset ? ar.preset : info->preset ? info->preset : ""));
    json_object_set_new(root, "seeds", seeds);
    json_object_set_new(root, "claims", json_integer((json_int_t)a->n));
    json_object_set_new(root, "verdicts", all);
    json_object_set_new(root, "static", stat);
    json_object_set_new(root, "benchmark", bench);
    json_object_set_new(root, "lines", lines);
    const char *jpath = epar_out_path(o, "summary.json");
    if (!st && json_dump_file(root, jpath, JSON_INDENT(2) | JSON_PRESERVE_ORDER))
        st = epar_err_set(EPAR_EIO, "cannot write '%s'", jpath);
    json_decref(root);
    summary_free(s);
    free(s);
    json_decref(ardoc);
    json_decref(bdoc);
    return st;
}

int epar_exp_report_write(struct epar_out *o, const char *out_root, const struct epar_audit *a,
                          const struct epar_report_info *info)
{
    struct report_proto *rp = NULL;
    int st = report_proto_read(info->protocol, &rp);
    if (st) return st;
    struct epar_table *t = epar_audit_table(a), *rt = retention_table(rp), *im = implied_table(rp);
    if (!t || !rt || !im) {
        epar_csv_free(t);
        epar_csv_free(rt);
        epar_csv_free(im);
        free(rp);
        return epar_err_set(EPAR_ENOMEM, "out of memory building the report tables");
    }
    st = epar_exp_write_table(o, "claims.csv", t);
    if (!st) st = epar_exp_write_table(o, "retention_definitions.csv", rt);
    if (!st) st = epar_exp_write_table(o, "implied_parameters.csv", im);
    if (!st) st = verdict_figure(o, a);
    if (!st) st = retention_figure(o, rp);
    if (!st) st = write_doc(o, "REPORT.md", 0, out_root, a, info, rp, rt, im);
    if (!st) st = write_doc(o, "REPORT.html", 1, out_root, a, info, rp, rt, im);
    if (!st) st = write_summary(o, out_root, a, info, im);
    epar_csv_free(t);
    epar_csv_free(rt);
    epar_csv_free(im);
    free(rp);
    return st;
}

/* ---- index.html ---- */

static int is_folder(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* "not reproduced" -> "not-reproduced", "needs >= 2 seeds" -> "needs-2-seeds": a class name / filter key */
static void verdict_slug(enum epar_audit_verdict v, char *out, size_t n)
{
    const char *s = epar_audit_verdict_name(v);
    size_t k = 0;
    int dash = 0;
    for (; *s && k + 1 < n; s++) {
        if ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')) {
            if (dash && k) out[k++] = '-';
            dash = 0;
            out[k++] = *s;
        } else dash = 1;
    }
    out[k] = '\0';
}


/* one claim as a table row (data-verdict: the filter's key) */
static void index_claim(FILE *f, const struct epar_audit_row *r)
{
    char slug[48], meas[512], sd[64];
    verdict_slug(r->verdict, slug, sizeof slug);
    shown_measured(r, meas, sizeof meas);
    shown_sd(r, sd, sizeof sd);
    fprintf(f, "<tr class=\"claim v-%s\" data-verdict=\"%s\" id=\"claim-", slug, slug);
    epar_pub_html(f, r->id);
    fputs("\"><td data-label=\"claim\"><code>", f);
    epar_pub_html(f, r->id);
    fputs("</code><br>", f);
    epar_pub_html(f, r->statement);
    fputs("</td><td data-label=\"reported\" class=\"num\">", f);
    epar_pub_html(f, r->reported);
    /* each reading on one line, several readings side by side as room allows */
    fputs("</td><td data-label=\"measured\" class=\"num meas\">", f);
    for (const char *p = meas; *p;) {
        const char *e = strstr(p, "; ");
        size_t len = e ? (size_t)(e - p) + 1 : strlen(p);
        fputs("<span>", f);
        epar_pub_htmln(f, p, len);
        fputs("</span>", f);
        if (!e) break;
        fputc(' ', f);
        p = e + 2;
    }
    if (*sd) {
        fputs(" <small>(sd ", f);
        epar_pub_html(f, sd);
        fputs(")</small>", f);
    }
    fputs("</td><td data-label=\"verdict\" class=\"verdict\"><strong>", f);
    epar_pub_html(f, epar_audit_verdict_name(r->verdict));
    fputs("</strong></td><td data-label=\"how\"><details><summary>rule, measurement, source, note</summary>"
          "<b>rule</b> ", f);
    epar_pub_html(f, r->rule);
    if (*r->accepted) {
        fputs("; <b>accepted</b> ", f);
        epar_pub_html(f, r->accepted);
    }
    fputs("<br><b>measurement</b> <code>", f);
    epar_pub_html(f, r->measurement);
    fputs("</code>", f);
    if (*r->input) {
        fputs(" <b>input</b> <code>", f);
        epar_pub_html(f, r->input);
        fputs("</code>", f);
    }
    fputs("<br><b>source</b> ", f);
    epar_pub_html(f, r->source);
    fputs("<br><b>how the verdict follows</b> ", f);
    epar_pub_html(f, r->note);
    fputs("</details></td></tr>\n", f);
}

static void section_counts(const struct epar_audit *a, const char *sec, char *out, size_t n)
{
    int cnt[EPAR_AUDIT_VERDICT_COUNT] = {0};
    for (size_t j = 0; j < a->n; j++)
        if (!sec || !strcmp(a->rows[j].section, sec)) cnt[a->rows[j].verdict]++;
    out[0] = '\0';
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++)
        if (cnt[v])
            snprintf(out + strlen(out), n - strlen(out), "%s%d %s", out[0] ? ", " : "", cnt[v],
                     epar_audit_verdict_name((enum epar_audit_verdict)v));
}

/* the claims of one section, then the figures they name */
static void index_claim_section(FILE *f, const char *out_root, const struct epar_audit *a, const char *sec)
{
    char counts[512];
    section_counts(a, sec, counts, sizeof counts);
    fputs("<section class=\"claims-section\" id=\"claims-", f);
    epar_pub_html(f, sec);
    fputs("\"><h2>", f);
    epar_pub_html(f, group_title(sec));
    fputs("</h2>\n<p>", f);
    epar_pub_html(f, counts);
    fputs(".</p>\n<table class=\"claims\"><tr class=\"head\"><th>claim</th><th>reported</th><th>measured</th>"
          "<th>verdict</th><th>how</th></tr>\n", f);
    for (size_t j = 0; j < a->n; j++)
        if (!strcmp(a->rows[j].section, sec)) index_claim(f, &a->rows[j]);
    fputs("</table>\n", f);
    int shown = 0;
    for (size_t j = 0; j < a->n; j++) {
        const struct epar_audit_row *r = &a->rows[j];
        if (strcmp(r->section, sec)) continue;
        for (char **fg = r->figures; fg && *fg; fg++) {
            int dup = 0;
            for (size_t q = 0; q < j && !dup; q++)
                if (!strcmp(a->rows[q].section, sec))
                    for (char **h = a->rows[q].figures; h && *h && !dup; h++) dup = !strcmp(*h, *fg);
            for (char **h = r->figures; h < fg && !dup; h++) dup = !strcmp(*h, *fg);
            char p[4300];
            snprintf(p, sizeof p, "%s/%s", out_root, *fg);
            if (dup || !file_exists(p)) continue;
            if (!shown++) fputs("<h3>The figures these claims rest on</h3>\n<div class=\"grid\">\n", f);
            epar_pub_figure(f, out_root, *fg);
        }
    }
    if (shown) fputs("</div>\n", f);
    fputs("</section>\n", f);
}

/* every folder with figures: the command table's in its order, then any other, sorted */
static int figure_folders(const char *out_root, const struct epar_report_info *info, char ***dirs_out,
                          const char ***labels_out)
{
    DIR *d = opendir(out_root);
    char *others[64];
    int no = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp-") || strstr(de->d_name, ".old-") || no == 64) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", out_root, de->d_name);
        if (!is_folder(p)) continue;
        int known = 0;
        for (int s = 0; s < info->n_folders; s++) known |= !strcmp(info->folders[s].dir, de->d_name);
        if (!known) others[no++] = strdup(de->d_name);
    }
    if (d) closedir(d);
    qsort(others, (size_t)no, sizeof *others, epar_pub_name_cmp);
    int total = info->n_folders + no, n = 0;
    char **dirs = EPAR_CALLOC((size_t)total + 1, sizeof *dirs);
    const char **labels = EPAR_CALLOC((size_t)total + 1, sizeof *labels);
    for (int s = 0; dirs && labels && s < total; s++) {
        const char *dir = s < info->n_folders ? info->folders[s].dir : others[s - info->n_folders];
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", out_root, dir);
        int np;
        char **pngs = epar_pub_list_pngs(p, &np);
        epar_pub_free_list(pngs);
        if (np <= 0) continue;
        dirs[n] = strdup(dir);
        labels[n++] = s < info->n_folders ? info->folders[s].label : NULL;
    }
    for (int i = 0; i < no; i++) free(others[i]);
    *dirs_out = dirs;
    *labels_out = labels;
    return dirs && labels ? n : 0;
}

static void index_folder(FILE *f, const char *out_root, const char *dir, const char *label)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", out_root, dir);
    int n;
    char **pngs = epar_pub_list_pngs(p, &n);
    fputs("<section id=\"fig-", f);
    epar_pub_html(f, dir);
    fputs("\"><h3>", f);
    epar_pub_html(f, label ? label : dir);
    fprintf(f, " <small>(<code>%s/</code>, %d figures)</small></h3>\n<div class=\"grid\">\n", dir, n);
    for (int i = 0; i < n; i++) {
        char rel[600];
        snprintf(rel, sizeof rel, "%s/%s", dir, pngs[i]);
        epar_pub_figure(f, out_root, rel);
    }
    fputs("</div></section>\n", f);
    epar_pub_free_list(pngs);
}

/* the filter: a select of the verdicts present; rows of other verdicts are hidden, and so is a section left empty */
static const char filter_js[] =
    "<script>\n(function(){\n"
    "var sel=document.getElementById('verdict-filter'),status=document.getElementById('filter-status');\n"
    "function apply(){var v=sel.value,shown=0;\n"
    " document.querySelectorAll('tr.claim').forEach(function(r){var on=(v==='all'||r.dataset.verdict===v);"
    "r.hidden=!on;if(on)shown++;});\n"
    " document.querySelectorAll('section.claims-section').forEach(function(s){"
    "s.hidden=!s.querySelector('tr.claim:not([hidden])');});\n"
    " status.textContent=shown+' claim'+(shown===1?'':'s')+' shown';}\n"
    "sel.addEventListener('change',apply);\n"
    "document.querySelectorAll('button[data-verdict]').forEach(function(b){b.addEventListener('click',function(){"
    "sel.value=b.dataset.verdict;apply();document.getElementById('claims').scrollIntoView();});});\n"
    "apply();})();\n</script>\n";

/* index.html's summary: counts, verdict chips, one sentence per section, failed experiments, stale claims */
static void index_summary(FILE *f, const struct epar_audit *a, const struct epar_report_info *info)
{
    char counts[512];
    section_counts(a, NULL, counts, sizeof counts);
    fprintf(f, "<section id=\"summary\"><h2>Summary</h2>\n<p><strong>%zu claims:</strong> ", a->n);
    epar_pub_html(f, counts);
    fputs(".</p>\n<div class=\"chips\">", f);
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++) {
        if (!a->counts[v]) continue;
        char slug[48];
        verdict_slug((enum epar_audit_verdict)v, slug, sizeof slug);
        fprintf(f, "<button type=\"button\" class=\"v-%s\" data-verdict=\"%s\">%s: %d</button>", slug, slug,
                epar_audit_verdict_name((enum epar_audit_verdict)v), a->counts[v]);
    }
    fputs("</div>\n<ul>\n", f);
    const char *sec;
    for (int k = 0; (sec = nth_section(a, k)); k++) {
        section_counts(a, sec, counts, sizeof counts);
        fputs("<li><a href=\"#claims-", f);
        epar_pub_html(f, sec);
        fputs("\">", f);
        epar_pub_html(f, group_title(sec));
        fputs("</a>: ", f);
        epar_pub_html(f, counts);
        /* the first claim of the section that does not hold, as an example */
        for (size_t j = 0; j < a->n; j++) {
            const struct epar_audit_row *r = &a->rows[j];
            if (strcmp(r->section, sec) || r->verdict != EPAR_AUDIT_NOT_REPRODUCED) continue;
            char meas[256];
            shown_measured(r, meas, sizeof meas);
            fputs(". Not reproduced, e.g. <a href=\"#claim-", f);
            epar_pub_html(f, r->id);
            fputs("\">", f);
            epar_pub_html(f, r->id);
            fputs("</a>: reported ", f);
            epar_pub_html(f, r->reported);
            fputs(", measured ", f);
            epar_pub_html(f, meas);
            break;
        }
        fputs(".</li>\n", f);
    }
    fputs("</ul>\n", f);
    if (info->failed && info->failed[0]) {
        fputs("<p><strong>Experiments that failed in this run:</strong>", f);
        for (const char *const *x = info->failed; *x; x++) { fputs(" <code>", f); epar_pub_html(f, *x); fputs("</code>", f); }
        fputs(" (their claims read older files or none).</p>\n", f);
    }
    if (a->stale) fprintf(f, "<p><strong>%d claim(s) are stale</strong>: their files come from another run; rerun "
                             "<code>epar run-all</code>.</p>\n", a->stale);
    fputs("<p>The full report: <a href=\"report/REPORT.html\">report/REPORT.html</a> (protocol, verdicts, findings, "
          "retention definitions, the reference's defects; as markdown: <a href=\"report/REPORT.md\">REPORT.md</a>); "
          "every number in full precision: <a href=\"report/claims.csv\">report/claims.csv</a>. Numbers on this page "
          "are rounded to the precision of the figure they are compared with.</p></section>\n", f);
}

/* the table of contents: the claim sections and the figure folders */
static void index_toc(FILE *f, const struct epar_audit *a, char **dirs, const char **labels, int nd, int n_views)
{
    const char *sec;
    fputs("<nav class=\"toc\" id=\"contents\"><strong>Contents</strong><ul>\n<li><a href=\"#summary\">Summary</a></li>\n"
          "<li><a href=\"#claims\">Claims by paper section</a><ul>\n", f);
    for (int k = 0; (sec = nth_section(a, k)); k++) {
        fputs("<li><a href=\"#claims-", f);
        epar_pub_html(f, sec);
        fputs("\">", f);
        epar_pub_html(f, group_title(sec));
        fputs("</a></li>\n", f);
    }
    fputs("</ul></li>\n<li><a href=\"#figures\">Figures by output folder</a><ul>\n", f);
    for (int i = 0; i < nd; i++) {
        fputs("<li><a href=\"#fig-", f);
        epar_pub_html(f, dirs[i]);
        fputs("\">", f);
        epar_pub_html(f, labels[i] ? labels[i] : dirs[i]);
        fputs("</a></li>\n", f);
    }
    fputs("</ul></li>\n", f);
    if (n_views > 0) fputs("<li><a href=\"#head-views\">Attention of trained models</a></li>\n", f);
    fputs("<li><a href=\"report/REPORT.html\">The full report</a></li>\n</ul></nav>\n", f);
}

/* the folders of epar inspect with a head view page: <out>/inspect/<name>/head_view.html, sorted */
static char **list_head_views(const char *out_root, int *n)
{
    char dir[4200], p[4600];
    snprintf(dir, sizeof dir, "%s/inspect", out_root);
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char **v = EPAR_CALLOC(257, sizeof *v);
    struct dirent *de;
    while (v && *n < 256 && (de = readdir(d))) {
        if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp-") || strstr(de->d_name, ".old-")) continue;
        snprintf(p, sizeof p, "%s/%s/head_view.html", dir, de->d_name);
        if (file_exists(p) && (v[*n] = strdup(de->d_name))) (*n)++;
    }
    closedir(d);
    if (v) qsort(v, (size_t)*n, sizeof *v, epar_pub_name_cmp);
    return v;
}

/* what trained models attend to (epar inspect), when it was run into this output folder */
static void index_head_views(FILE *f, const char *out_root, char **views, int n)
{
    if (n <= 0) return;
    fputs("<section id=\"head-views\"><h2>Attention of trained models</h2>\n<p>Written by <code>epar inspect</code> from "
          "checkpoints of <code>epar train</code> and <code>epar benchmark</code>: per layer and head, where the model "
          "looks on one input.</p>\n<ul>\n", f);
    for (int i = 0; i < n; i++) {
        char rel[600], png[4800];
        snprintf(rel, sizeof rel, "inspect/%s", views[i]);
        fputs("<li><a href=\"", f);
        epar_pub_html(f, rel);
        fputs("/head_view.html\">", f);
        epar_pub_html(f, views[i]);
        fputs("</a>: head view; <a href=\"", f);
        epar_pub_html(f, rel);
        fputs("/heads.csv\">heads.csv</a>", f);
        for (int l = 0; l < 64; l++) {
            snprintf(png, sizeof png, "%s/%s/attention_layer%d.png", out_root, rel, l);
            if (!file_exists(png)) continue;
            fprintf(f, ", <a href=\"");
            epar_pub_html(f, rel);
            fprintf(f, "/attention_layer%d.png\">layer %d</a>", l, l);
        }
        fputs("</li>\n", f);
    }
    fputs("</ul></section>\n", f);
}

/* the claims heading with its verdict filter */
static void index_filter(FILE *f, const struct epar_audit *a)
{
    fputs("<section id=\"claims\"><h2>Claims by paper section</h2>\n<p><label for=\"verdict-filter\">Show verdict: "
          "</label><select id=\"verdict-filter\"><option value=\"all\">all</option>", f);
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++) {
        if (!a->counts[v]) continue;
        char slug[48];
        verdict_slug((enum epar_audit_verdict)v, slug, sizeof slug);
        fprintf(f, "<option value=\"%s\">%s (%d)</option>", slug, epar_audit_verdict_name((enum epar_audit_verdict)v),
                a->counts[v]);
    }
    fprintf(f, "</select> <span id=\"filter-status\">%zu claims shown</span></p>\n</section>\n", a->n);
}

int epar_exp_report_index(const char *out_root, const struct epar_audit *a, const struct epar_report_info *info)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/index.html", out_root);
    struct epar_out_file w;
    FILE *f = epar_out_fopen(&w, path); /* checked writes, then renamed over the old index */
    if (!f) return EPAR_EIO;
    char title[128];
    snprintf(title, sizeof title, "EPAR reproduction (epar %s)", info->version);
    epar_pub_page_head(f, title, page_css);
    fputs("<h1>EPAR reproduction and audit</h1>\n<p>Written by <code>epar run-all</code> (epar ", f);
    epar_pub_html(f, info->version);
    fputs(") from <code>", f);
    epar_pub_html(f, info->protocol_path);
    fputs("</code>, preset <code>", f);
    epar_pub_html(f, info->preset ? info->preset : "(the file's default)");
    fputs("</code>. The claims of the paper <i>EPAR: Explicit Position-Attention Relationship for Interpretable "
          "Long-Range Attention in Transformers</i>, of its reference code and of four other source documents, each "
          "judged by a rule fixed in the protocol before the results were seen.</p>\n", f);
    index_summary(f, a, info);
    char **dirs;
    const char **labels;
    int nd = figure_folders(out_root, info, &dirs, &labels);
    int n_views;
    char **views = list_head_views(out_root, &n_views);
    index_toc(f, a, dirs, labels, nd, n_views);
    index_filter(f, a);
    const char *sec;
    for (int k = 0; (sec = nth_section(a, k)); k++) index_claim_section(f, out_root, a, sec);
    fputs("<section id=\"figures\"><h2>Figures by output folder</h2>\n", f);
    for (int i = 0; i < nd; i++) index_folder(f, out_root, dirs[i], labels[i]);
    fputs("</section>\n", f);
    index_head_views(f, out_root, views, n_views);
    for (int i = 0; views && i < n_views; i++) free(views[i]);
    free(views);
    for (int i = 0; dirs && i < nd; i++) free(dirs[i]);
    free(dirs);
    free(labels);
    fputs(filter_js, f);
    fputs("</body></html>\n", f);
    return epar_out_fclose(&w);
}
