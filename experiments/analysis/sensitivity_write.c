/* Appendix: parameter sensitivity, the writer. The tables (mean over seeds, sample sd across seeds, the
 * measured baseline), the retention claims against every candidate definition, the report, the stdout
 * summary and the figures, all from the numbers epar_exp_sensitivity_run measured. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "experiments/common.h"
#include "experiments/analysis/sensitivity.h"

/* what every writer reads: the configuration and the result */
struct ctx {
    const struct epar_sensitivity_cfg *cfg;
    const struct epar_sensitivity_result *r;
};

static double value(const struct ctx *c, int p, int f, const char *name) { return epar_sens_value(c->r, p, f, name); }
static void ratio_stats(const struct ctx *c, int p, int fn, int dn, int fd, int dd, double *mean, double *sd)
{
    epar_sens_ratio_stats(c->r, p, fn, dn, fd, dd, mean, sd);
}
static void prof_stats(const struct ctx *c, int p, int f, int d, double *mean, double *sd)
{
    epar_sens_prof_stats(c->r, p, f, d, mean, sd);
}

/* the derived tables, built for writing (and the summary) and freed after */
struct tables {
    struct epar_table *alpha, *beta, *gamma, *baseline, *basic_vs_enhanced, *retention, *claims, *curves,
        *grid_ab, *grid_bg;
};

static char *dupstr(const char *s)
{
    char *d = strdup(s);
    if (!d) epar_err_set(EPAR_ENOMEM, "out of memory growing a table");
    return d;
}

/* Append a row of t whose columns are filled by name (strings: form, sweep). */
static int fill_row(struct epar_table *t, const struct ctx *c, int p, int f)
{
    int st = epar_csv_append(t, "");
    if (st) return st;
    struct epar_cell *row = t->cells + (t->nrows - 1) * (size_t)t->ncols;
    for (int col = 0; col < t->ncols; col++) {
        const char *n = t->cols[col];
        if (!strcmp(n, "form") || !strcmp(n, "sweep")) {
            const char *s = !strcmp(n, "form") ? epar_posfx_form_name((enum epar_form)f)
                                                : epar_sens_block_name[c->r->pts[p].blk];
            if (!(row[col].s = dupstr(s))) return EPAR_ENOMEM;
        } else row[col].v = value(c, p, f, n);
    }
    return EPAR_OK;
}

/* ---- column lists (reference columns first) ---- */

#define STOCH_ALL_SD "attention_concentration,attention_concentration_sd,attention_locality,attention_locality_sd," \
                     "position_correlation_mean,position_correlation_mean_sd,position_correlation_std,"           \
                     "position_correlation_std_sd,position_correlation_offdiag_mean,"                              \
                     "position_correlation_offdiag_mean_sd"
#define GAINS "correlation_improvement_pct,correlation_improvement_pct_sd,attention_locality_baseline," \
              "attention_locality_delta,attention_locality_delta_sd"

static const char *const cols_alpha =
    "alpha,position_strength,attention_concentration,position_correlation_mean,position_correlation_std,"
    "attention_concentration_sd,position_correlation_mean_sd,position_correlation_std_sd,decay_speed,"
    "attention_locality,attention_locality_sd,position_correlation_offdiag_mean,"
    "position_correlation_offdiag_mean_sd," GAINS ",beta,gamma,form,seeds,runs";
static const char *const cols_beta =
    "beta,decay_speed,attention_locality,position_correlation_mean,position_correlation_std,"
    "attention_locality_sd,position_correlation_mean_sd,position_correlation_std_sd,position_strength,"
    "attention_concentration,attention_concentration_sd,position_correlation_offdiag_mean,"
    "position_correlation_offdiag_mean_sd," GAINS ",alpha,gamma,form,seeds,runs";
static const char *const cols_gamma =
    "gamma,position_strength,decay_speed,attention_concentration,attention_locality,"
    "attention_concentration_sd,attention_locality_sd,position_correlation_mean,position_correlation_mean_sd,"
    "position_correlation_std,position_correlation_std_sd,position_correlation_offdiag_mean,"
    "position_correlation_offdiag_mean_sd," GAINS ",alpha,beta,form,seeds,runs";
static const char *const cols_bve =
    "sweep,alpha,beta,gamma,form,position_strength,decay_speed," STOCH_ALL_SD "," GAINS ",seeds,runs";
static const char *const cols_ab =
    "alpha_index,beta_index,alpha,beta,gamma,form,position_strength,decay_speed," STOCH_ALL_SD "," GAINS ",seeds";
static const char *const cols_bg =
    "beta_index,gamma_index,alpha,beta,gamma,form,position_strength,decay_speed," STOCH_ALL_SD "," GAINS ",seeds";
static const char *const cols_baseline =
    "sweep,points,draws_per_seed," STOCH_ALL_SD ",form,seeds";

static int block_table(struct epar_table **t, const char *cols, const struct ctx *c, int b, int f)
{
    if (!(*t = epar_csv_new(cols))) return EPAR_ENOMEM;
    for (int k = 0; k < c->r->count[b]; k++) {
        int st = fill_row(*t, c, c->r->first[b] + k, f);
        if (st) return st;
    }
    return EPAR_OK;
}

/* retention.csv: pre-softmax retention and measured attention at d = L/2 and L-1, per setting */
static int retention_rows(const struct ctx *c, struct tables *res)
{
    const struct epar_sensitivity_result *r = c->r;
    int L = r->L, mid = L / 2, mx = L - 1;
    res->retention = epar_csv_new(
        "setting,alpha,beta,gamma,length,d_mid,d_max,basic_mid,enhanced_mid,ratio_mid,basic_max,enhanced_max,"
        "ratio_max,basic_at_L,enhanced_at_L,ratio_at_L,attn_none_mid,attn_basic_mid,attn_enhanced_mid,"
        "attn_ratio_mid,attn_ratio_mid_sd,attn_gain_mid,attn_gain_mid_sd,attn_none_max,attn_basic_max,"
        "attn_enhanced_max,attn_ratio_max,attn_ratio_max_sd,attn_gain_max,attn_gain_max_sd,"
        "attn_basic_retention_max,attn_basic_retention_max_sd,attn_enhanced_retention_max,"
        "attn_enhanced_retention_max_sd,seeds");
    if (!res->retention) return EPAR_ENOMEM;
    int blocks[] = {EPAR_SENS_DEFAULTS, EPAR_SENS_PAPER, EPAR_SENS_BG};
    for (int bi = 0; bi < 3; bi++) {
        int b = blocks[bi];
        for (int k = 0; k < r->count[b]; k++) {
            int p = r->first[b] + k;
            const struct epar_sens_point *pt = &r->pts[p];
            double pre[2][3], a[3][2], sd;
            int ds[3] = {mid, mx, L};
            for (int f = 0; f < 2; f++)
                for (int q = 0; q < 3; q++) pre[f][q] = epar_sens_retention_pre(f ? EPAR_FORM_ENHANCED : EPAR_FORM_BASIC, pt, ds[q], L);
            for (int f = 0; f < EPAR_SENS_NF; f++) {
                prof_stats(c, p, f, mid, &a[f][0], &sd);
                prof_stats(c, p, f, mx, &a[f][1], &sd);
            }
            double rm, rms, gm, gms, rx, rxs, gx, gxs, bb, bbs, ee, ees;
            ratio_stats(c, p, EPAR_FORM_ENHANCED, mid, EPAR_FORM_BASIC, mid, &rm, &rms);
            ratio_stats(c, p, EPAR_FORM_ENHANCED, mid, EPAR_FORM_NONE, mid, &gm, &gms);
            ratio_stats(c, p, EPAR_FORM_ENHANCED, mx, EPAR_FORM_BASIC, mx, &rx, &rxs);
            ratio_stats(c, p, EPAR_FORM_ENHANCED, mx, EPAR_FORM_NONE, mx, &gx, &gxs);
            ratio_stats(c, p, EPAR_FORM_BASIC, mx, EPAR_FORM_BASIC, 0, &bb, &bbs);
            ratio_stats(c, p, EPAR_FORM_ENHANCED, mx, EPAR_FORM_ENHANCED, 0, &ee, &ees);
            const char *setting = b == EPAR_SENS_BG ? "grid" : epar_sens_block_name[b];
            if (epar_csv_append(res->retention, "sdddiiidddddddddddddddddddddddddddi", setting, pt->alpha, pt->beta,
                                pt->gamma, L, mid, mx, pre[0][0], pre[1][0], pre[1][0] / pre[0][0], pre[0][1],
                                pre[1][1], pre[1][1] / pre[0][1], pre[0][2], pre[1][2], pre[1][2] / pre[0][2],
                                a[EPAR_FORM_NONE][0], a[EPAR_FORM_BASIC][0], a[EPAR_FORM_ENHANCED][0], rm, rms, gm,
                                gms, a[EPAR_FORM_NONE][1], a[EPAR_FORM_BASIC][1], a[EPAR_FORM_ENHANCED][1], rx, rxs,
                                gx, gxs, bb, bbs, ee, ees, r->S))
                return EPAR_ENOMEM;
        }
    }
    return EPAR_OK;
}

/* retention_curves.csv: the curves at the defaults (and the paper's parameters) */
static int retention_curves(const struct ctx *c, struct tables *res)
{
    const struct epar_sensitivity_result *r = c->r;
    int L = r->L;
    res->curves = epar_csv_new("distance,basic,enhanced,basic_paper,enhanced_paper,attn_none,attn_none_sd,"
                               "attn_basic,attn_basic_sd,attn_enhanced,attn_enhanced_sd");
    if (!res->curves) return EPAR_ENOMEM;
    int p0 = r->first[EPAR_SENS_DEFAULTS], pp = r->count[EPAR_SENS_PAPER] ? r->first[EPAR_SENS_PAPER] : -1;
    for (int d = 0; d < L; d++) {
        double an, ans, ab, abs_, ae, aes;
        prof_stats(c, p0, EPAR_FORM_NONE, d, &an, &ans);
        prof_stats(c, p0, EPAR_FORM_BASIC, d, &ab, &abs_);
        prof_stats(c, p0, EPAR_FORM_ENHANCED, d, &ae, &aes);
        if (epar_csv_append(res->curves, "idddddddddd", d, epar_sens_retention_pre(EPAR_FORM_BASIC, &r->pts[p0], d, L),
                            epar_sens_retention_pre(EPAR_FORM_ENHANCED, &r->pts[p0], d, L),
                            pp >= 0 ? epar_sens_retention_pre(EPAR_FORM_BASIC, &r->pts[pp], d, L) : NAN,
                            pp >= 0 ? epar_sens_retention_pre(EPAR_FORM_ENHANCED, &r->pts[pp], d, L) : NAN, an, ans, ab,
                            abs_, ae, aes))
            return EPAR_ENOMEM;
    }
    return EPAR_OK;
}

/* retention_claims.csv: each claim against every candidate definition, at the defaults and the paper's
 * parameters */
static int retention_claims(const struct ctx *c, struct tables *res)
{
    const struct epar_sensitivity_result *r = c->r;
    int L = r->L;
    res->claims = epar_csv_new("claim,claimed,definition,setting,alpha,beta,gamma,measured,measured_sd,agrees,"
                               "beta_needed");
    if (!res->claims) return EPAR_ENOMEM;
    for (int i = 0; i < c->cfg->n_claims; i++) {
        const struct epar_sens_claim *cl = &c->cfg->claims[i];
        struct epar_sens_definition defs[8];
        int nd = epar_sens_claim_definitions(cl->id, defs);
        for (int q = 0; q < nd; q++)
            for (int bi = 0; bi < 2; bi++) {
                int b = bi ? EPAR_SENS_PAPER : EPAR_SENS_DEFAULTS;
                if (!r->count[b]) continue;
                int p = r->first[b];
                char name[160];
                epar_sens_definition_name(&defs[q], L, name, sizeof name);
                double v, sd, bn;
                epar_sens_definition_measure(c->r, p, &defs[q], cl->value, &v, &sd, &bn);
                const struct epar_sens_point *pt = &r->pts[p];
                if (epar_csv_append(res->claims, "sdssdddddsd", cl->id, cl->value, name, epar_sens_block_name[b], pt->alpha,
                                    pt->beta, pt->gamma, v, sd, epar_sens_agrees(v, cl) ? "yes" : "no", bn))
                    return EPAR_ENOMEM;
            }
    }
    return EPAR_OK;
}

/* a mixed reading of the ratio claims: enhanced at the paper's parameters over basic at the beta* that
 * makes the basic retention at the largest distance equal the claimed basic retention (two parameter
 * sets: a construction, labelled as such), appended to retention_claims.csv */
static int retention_mixed(const struct ctx *c, struct tables *res)
{
    const struct epar_sensitivity_result *r = c->r;
    int L = r->L;
    const struct epar_sens_claim *cb = NULL;
    for (int i = 0; i < c->cfg->n_claims; i++)
        if (!strcmp(c->cfg->claims[i].id, "basic_max_retention")) cb = &c->cfg->claims[i];
    if (cb && r->count[EPAR_SENS_PAPER]) {
        const struct epar_sens_point *pt = &r->pts[r->first[EPAR_SENS_PAPER]];
        for (int i = 0; i < c->cfg->n_claims; i++) {
            const struct epar_sens_claim *cl = &c->cfg->claims[i];
            int mid_claim = !strcmp(cl->id, "mid_range_gain");
            if (!mid_claim && strcmp(cl->id, "max_distance_gain")) continue;
            for (int far = 0; far < 2; far++) { /* largest distance d = L-1, or |i-j|/L = 1 */
                double dmax = far ? L : L - 1, bstar = -log(cb->value) * L / dmax;
                double d = mid_claim ? L / 2 : dmax;
                struct epar_sens_point bp = *pt;
                bp.beta = bstar;
                double v = epar_sens_retention_pre(EPAR_FORM_ENHANCED, pt, d, L) / epar_sens_retention_pre(EPAR_FORM_BASIC, &bp, d, L);
                char name[320];
                snprintf(name, sizeof name,
                         "mixed: P_enhanced(d)/P_enhanced(0) at the paper's beta and gamma over P_basic(d)/P_basic(0) "
                         "at beta*=%.4g (basic retention at d=%s equals the claimed %g) at d=%s",
                         bstar, far ? "L" : "L-1", cb->value, mid_claim ? "L/2" : far ? "L" : "L-1");
                if (epar_csv_append(res->claims, "sdssdddddsd", cl->id, cl->value, name, "paper+beta*", pt->alpha,
                                    pt->beta, pt->gamma, v, 0.0, epar_sens_agrees(v, cl) ? "yes" : "no", NAN))
                    return EPAR_ENOMEM;
            }
        }
    }
    return EPAR_OK;
}

/* retention.csv, retention_curves.csv and retention_claims.csv */
static int retention_tables(const struct ctx *c, struct tables *res)
{
    int st = retention_rows(c, res);
    if (!st) st = retention_curves(c, res);
    if (!st) st = retention_claims(c, res);
    if (!st) st = retention_mixed(c, res);
    return st;
}

static int baseline_table(const struct ctx *c, struct tables *res)
{
    const struct epar_sensitivity_result *r = c->r;
    if (!(res->baseline = epar_csv_new(cols_baseline))) return EPAR_ENOMEM;
    for (int b = 0; b < EPAR_SENS_NBLK; b++) {
        if (!r->count[b]) continue;
        double v[2 * EPAR_SENS_NMETRIC];
        for (int m = 0; m < EPAR_SENS_NMETRIC; m++) epar_sens_block_baseline(c->r, b, m, &v[2 * m], &v[2 * m + 1]);
        if (epar_csv_append(res->baseline, "siiddddddddddsi", epar_sens_block_name[b], r->count[b], r->count[b] * r->R, v[0],
                            v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], "none", r->S))
            return EPAR_ENOMEM;
    }
    return EPAR_OK;
}

/* ---- the report ---- */

static const char *fmt_list(const double *v, int n, char *buf, size_t sz)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, sz - l, "%s%g", i ? "," : "", v[i]);
    }
    return buf;
}

/* index of the largest (sign=+1) or smallest (-1) value of column `name` over the rows of a block */
static int block_arg(const struct ctx *c, int b, int f, const char *name, int sign)
{
    int best = -1;
    double bv = 0;
    for (int k = 0; k < c->r->count[b]; k++) {
        double v = sign * value(c, c->r->first[b] + k, f, name);
        if (!isnan(v) && (best < 0 || v > bv)) { bv = v; best = k; }
    }
    return best;
}

/* "rises from X (p=a) to Y (p=b)" for a metric over a sweep */
static void trend(FILE *f, const struct ctx *c, int b, int form, const char *metric, const char *pname,
                  const char *label)
{
    int n = c->r->count[b], p0 = c->r->first[b], p1 = p0 + n - 1;
    double v0 = value(c, p0, form, metric), v1 = value(c, p1, form, metric);
    double x0 = value(c, p0, form, pname), x1 = value(c, p1, form, pname);
    int kmax = block_arg(c, b, form, metric, 1), kmin = block_arg(c, b, form, metric, -1);
    if (kmax < 0 || kmin < 0) {
        fprintf(f, "   measured: %s undefined over this sweep\n", label);
        return;
    }
    fprintf(f, "   measured: %s %s from %.4g (%s=%g) to %.4g (%s=%g); largest %.4g at %s=%g, smallest %.4g at %s=%g\n",
            label, v1 > v0 ? "rises" : v1 < v0 ? "falls" : "stays", v0, pname, x0, v1, pname, x1,
            value(c, p0 + kmax, form, metric), pname, value(c, p0 + kmax, form, pname),
            value(c, p0 + kmin, form, metric), pname, value(c, p0 + kmin, form, pname));
}

/* across-sweep range of a stochastic metric vs its typical across-seed sd */
static double sweep_range_ratio(const struct ctx *c, int b, int f, const char *metric)
{
    const struct epar_sensitivity_result *r = c->r;
    char sdn[96];
    snprintf(sdn, sizeof sdn, "%s_sd", metric);
    double lo = INFINITY, hi = -INFINITY, sds = 0.0;
    for (int k = 0; k < r->count[b]; k++) {
        double v = value(c, r->first[b] + k, f, metric);
        if (v < lo) lo = v;
        if (v > hi) hi = v;
        sds += value(c, r->first[b] + k, f, sdn) / r->count[b];
    }
    return sds > 0 ? (hi - lo) / sds : INFINITY;
}

static void gain_line(FILE *f, const struct ctx *c, int p, int form, const char *pdesc)
{
    double m = value(c, p, form, "attention_locality"), sd = value(c, p, form, "attention_locality_sd");
    double b = value(c, p, form, "attention_locality_baseline"), dm = value(c, p, form, "attention_locality_delta"),
           dsd = value(c, p, form, "attention_locality_delta_sd");
    fprintf(f, "%s: attention locality %.4f +- %.4f vs baseline %.4f (paired gain %+.4f +- %.4f, %s)\n", pdesc, m, sd,
            b, dm, dsd,
            dm == 0 && dsd == 0 ? "P = 1 here: identical to the baseline"
            : c->r->S < 2          ? "one seed: no spread"
            : fabs(dm) > 2 * dsd ? "larger than 2 sd across seeds"
                                 : "within 2 sd across seeds: not distinguishable from seed noise");
}

/* the title and what every number is: the run's settings, seeds, draws, baseline */
static void report_head(FILE *f, const struct ctx *c)
{
    const struct epar_sensitivity_result *r = c->r;
    const struct epar_sensitivity_cfg *cfg = c->cfg;
    const struct epar_params *prm = &cfg->prm;
    int L = r->L;
    char seeds[600] = "";
    for (int s = 0; s < r->S; s++)
        snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), "%s%lu", s ? "," : "", prm->seeds[s]);

    fprintf(f, "=== Parameter Sensitivity Analysis Report ===\n");
    fprintf(f, "(epar: preset %s, form %s, L=%d, hidden %d, heads %d, batch %d, seeds %s, %d run(s) per seed, %s draws.\n"
               " Stochastic values: mean over the %d seeds, +- sample sd across seeds. Baseline: the same metric with form\n"
               " none on the same weights and data. attention_locality window |i-j| <= %d. Every number is measured.)\n\n",
            prm->preset, epar_posfx_form_name(prm->form), L, prm->hidden, prm->heads, prm->batch, seeds, r->R,
            cfg->common_draws ? "common" : "fresh", r->S, cfg->locality_window);
}

/* sections 1-3: the alpha, beta and gamma sweeps, the trend and every point */
static void report_sweeps(FILE *f, const struct ctx *c)
{
    const struct epar_sensitivity_result *r = c->r;
    const struct epar_sensitivity_cfg *cfg = c->cfg;
    const struct epar_params *prm = &cfg->prm;
    int fs = prm->form;
    int b = EPAR_SENS_ALPHA;
    fprintf(f, "1. α Parameter Sensitivity Analysis (β=%g, γ=%g):\n", prm->beta, prm->gamma);
    fprintf(f, "   α multiplies every score (P(i,i) = α): it acts as an inverse temperature of the whole row\n");
    trend(f, c, b, fs, "attention_concentration", "alpha", "attention concentration");
    trend(f, c, b, fs, "attention_locality", "alpha", "attention locality");
    for (int k = 0; k < r->count[b]; k++) {
        int p = r->first[b] + k;
        fprintf(f, "   α=%g: Position Strength=%.4f, Attention Concentration=%.4g (+- %.2g; baseline %.4g)\n",
                r->pts[p].alpha, value(c, p, fs, "position_strength"), value(c, p, fs, "attention_concentration"),
                value(c, p, fs, "attention_concentration_sd"), value(c, p, fs, "attention_concentration_baseline"));
    }
    b = EPAR_SENS_BETA;
    fprintf(f, "\n2. β Parameter Sensitivity Analysis (α=%g, γ=%g):\n", prm->alpha, prm->gamma);
    fprintf(f, "   β sets how fast P decays with |i-j|/L\n");
    trend(f, c, b, fs, "decay_speed", "beta", "decay speed (mean P[c,c+k])");
    trend(f, c, b, fs, "attention_locality", "beta", "attention locality");
    for (int k = 0; k < r->count[b]; k++) {
        int p = r->first[b] + k;
        fprintf(f, "   β=%g: Decay Speed=%.4f, Attention Locality=%.4f (+- %.4f; baseline %.4f)\n", r->pts[p].beta,
                value(c, p, fs, "decay_speed"), value(c, p, fs, "attention_locality"),
                value(c, p, fs, "attention_locality_sd"), value(c, p, fs, "attention_locality_baseline"));
    }
    b = EPAR_SENS_GAMMA;
    fprintf(f, "\n3. γ Parameter Sensitivity Analysis (α=%g, β=%g, form %s):\n", prm->alpha, prm->beta,
            epar_posfx_form_name(prm->form));
    if (fs == EPAR_FORM_ENHANCED)
        fprintf(f, "   γ mixes 'no position effect' (weight 1/(1+γ)) with the basic decay (weight γ/(1+γ)); γ=0 gives P = α\n");
    else
        fprintf(f, "   form %s: γ does not enter P, so the deterministic columns are constant over this sweep\n",
                epar_posfx_form_name(prm->form));
    trend(f, c, b, fs, "position_strength", "gamma", "position strength");
    trend(f, c, b, fs, "attention_locality", "gamma", "attention locality");
    for (int k = 0; k < r->count[b]; k++) {
        int p = r->first[b] + k;
        fprintf(f, "   γ=%g: Position Strength=%.4f, Decay Speed=%.4f, Attention Concentration=%.4g, "
                   "Attention Locality=%.4f (+- %.4f; baseline %.4f)\n",
                r->pts[p].gamma, value(c, p, fs, "position_strength"), value(c, p, fs, "decay_speed"),
                value(c, p, fs, "attention_concentration"), value(c, p, fs, "attention_locality"),
                value(c, p, fs, "attention_locality_sd"), value(c, p, fs, "attention_locality_baseline"));
    }
}

/* section 4: the most and least local settings, the most sensitive parameter, the reference's "optimal"
 * values */
static void report_suggestions(FILE *f, const struct ctx *c)
{
    const struct epar_sensitivity_result *r = c->r;
    const struct epar_sensitivity_cfg *cfg = c->cfg;
    const struct epar_params *prm = &cfg->prm;
    int fs = prm->form;
    fprintf(f, "\n4. Parameter Combination Suggestions (derived from the measurements above and the grids):\n");
    int k = block_arg(c, EPAR_SENS_AB, fs, "attention_locality", 1);
    char d[160];
    snprintf(d, sizeof d, "   - Most local attention on the α x β grid: α=%g, β=%g", r->pts[r->first[EPAR_SENS_AB] + k].alpha,
             r->pts[r->first[EPAR_SENS_AB] + k].beta);
    gain_line(f, c, r->first[EPAR_SENS_AB] + k, fs, d);
    k = block_arg(c, EPAR_SENS_AB, fs, "attention_locality", -1);
    snprintf(d, sizeof d, "   - Least local on the α x β grid: α=%g, β=%g", r->pts[r->first[EPAR_SENS_AB] + k].alpha,
             r->pts[r->first[EPAR_SENS_AB] + k].beta);
    gain_line(f, c, r->first[EPAR_SENS_AB] + k, fs, d);
    k = block_arg(c, EPAR_SENS_BG, EPAR_FORM_ENHANCED, "attention_locality", 1);
    snprintf(d, sizeof d, "   - Most local on the β x γ grid (enhanced): β=%g, γ=%g", r->pts[r->first[EPAR_SENS_BG] + k].beta,
             r->pts[r->first[EPAR_SENS_BG] + k].gamma);
    gain_line(f, c, r->first[EPAR_SENS_BG] + k, EPAR_FORM_ENHANCED, d);
    snprintf(d, sizeof d, "   - At the run's parameters (α=%g, β=%g, γ=%g)", prm->alpha, prm->beta, prm->gamma);
    gain_line(f, c, r->first[EPAR_SENS_DEFAULTS], fs, d);
    const char *pn[3] = {"α", "β", "γ"};
    int pb[3] = {EPAR_SENS_ALPHA, EPAR_SENS_BETA, EPAR_SENS_GAMMA}, most = 0;
    double rr[3];
    for (int q = 0; q < 3; q++) {
        rr[q] = sweep_range_ratio(c, pb[q], fs, "attention_locality");
        if (rr[q] > rr[most]) most = q;
    }
    fprintf(f, "   - Sensitivity of attention locality (range over the sweep / mean across-seed sd): α %.3g, β %.3g, γ %.3g"
               " -> most sensitive: %s\n", rr[0], rr[1], rr[2], pn[most]);
    for (int q = 0; q < 3; q++) {
        int kk = block_arg(c, pb[q], fs, "correlation_improvement_pct", 1), p = r->first[pb[q]] + kk;
        if (kk < 0) continue; /* baseline correlation 0: no relative improvement */
        double im = value(c, p, fs, "correlation_improvement_pct"), isd = value(c, p, fs, "correlation_improvement_pct_sd");
        fprintf(f, "   - The reference's 'optimal' %s (largest position_correlation_mean improvement over the measured "
                   "baseline %.4f): %s=%g, %+.2f%% +- %.2f%% (%s)\n",
                pn[q], value(c, p, fs, "position_correlation_mean_baseline"), pn[q],
                value(c, p, fs, q == 0 ? "alpha" : q == 1 ? "beta" : "gamma"), im, isd,
                im == 0 && isd == 0 ? "P = 1 here: identical to the baseline"
                : r->S < 2          ? "one seed"
                : fabs(im) > 2 * isd ? "larger than 2 sd"
                                     : "within 2 sd: noise");
    }
}

/* sections 5 and 6: the measured baseline per block, the three forms at the run's parameters */
static void report_baseline(FILE *f, const struct ctx *c, const struct tables *res)
{
    const struct epar_sensitivity_cfg *cfg = c->cfg;
    const struct epar_params *prm = &cfg->prm;
    fprintf(f, "\n5. Baseline (form none, measured on the same seeds and draws; the reference divided by a typed-in 0.01):\n");
    for (size_t r = 0; r < res->baseline->nrows; r++)
        fprintf(f, "   %-10s concentration %.4g +- %.2g, locality %.4f +- %.4f, correlation mean %.4f +- %.4f "
                   "(off-diagonal %.4f +- %.4f), correlation std %.4f +- %.4f\n",
                epar_csv_get_str(res->baseline, r, "sweep"), epar_csv_get(res->baseline, r, "attention_concentration"),
                epar_csv_get(res->baseline, r, "attention_concentration_sd"),
                epar_csv_get(res->baseline, r, "attention_locality"), epar_csv_get(res->baseline, r, "attention_locality_sd"),
                epar_csv_get(res->baseline, r, "position_correlation_mean"),
                epar_csv_get(res->baseline, r, "position_correlation_mean_sd"),
                epar_csv_get(res->baseline, r, "position_correlation_offdiag_mean"),
                epar_csv_get(res->baseline, r, "position_correlation_offdiag_mean_sd"),
                epar_csv_get(res->baseline, r, "position_correlation_std"),
                epar_csv_get(res->baseline, r, "position_correlation_std_sd"));

    fprintf(f, "\n6. Basic vs Enhanced (same weights and data, at α=%g, β=%g, γ=%g):\n", prm->alpha, prm->beta, prm->gamma);
    int p0 = c->r->first[EPAR_SENS_DEFAULTS];
    for (int fo = EPAR_FORM_NONE; fo < EPAR_SENS_NF; fo++)
        fprintf(f, "   %-8s position strength %.4f, decay speed %.4f, locality %.4f +- %.4f, concentration %.4g +- %.2g, "
                   "correlation off-diagonal %.4f +- %.4f\n",
                epar_posfx_form_name((enum epar_form)fo), value(c, p0, fo, "position_strength"),
                value(c, p0, fo, "decay_speed"), value(c, p0, fo, "attention_locality"),
                value(c, p0, fo, "attention_locality_sd"), value(c, p0, fo, "attention_concentration"),
                value(c, p0, fo, "attention_concentration_sd"), value(c, p0, fo, "position_correlation_offdiag_mean"),
                value(c, p0, fo, "position_correlation_offdiag_mean_sd"));
}

/* section 7: each retention claim against every candidate definition, and its verdict */
static void report_claims(FILE *f, const struct ctx *c, const struct tables *res)
{
    const struct epar_sensitivity_cfg *cfg = c->cfg;
    char lb[4096];
    fprintf(f, "\n7. Retention claims of the paper's README against every candidate definition (%s):\n",
            cfg->n_claims ? "all rows in retention_claims.csv" : "no claims in the protocol");
    fprintf(f, "   A claim agrees when the measured value rounds to its printed digits (within half a unit of the last\n"
               "   printed digit, the audit's rule for printed figures). Setting 'defaults' =\n"
               "   this run's α, β, γ; 'paper' = the α, β, γ of preset 'paper' on this run's model; post-softmax values\n"
               "   are measured (mean over seeds), pre-softmax ones exact.\n");
    for (int i = 0; i < cfg->n_claims; i++) {
        const struct epar_sens_claim *cl = &cfg->claims[i];
        fprintf(f, "   %s (\"%s\", claimed %g):\n", cl->id, cl->text, cl->value);
        int any = 0;
        for (size_t r = 0; r < res->claims->nrows; r++) {
            if (strcmp(epar_csv_get_str(res->claims, r, "claim"), cl->id)) continue;
            int ag = !strcmp(epar_csv_get_str(res->claims, r, "agrees"), "yes");
            int mixed = !strcmp(epar_csv_get_str(res->claims, r, "setting"), "paper+beta*");
            any |= ag << mixed;
            double bn = epar_csv_get(res->claims, r, "beta_needed");
            snprintf(lb, sizeof lb, "; would need β=%.4g at this γ", bn);
            fprintf(f, "     %-3s %-9s %s = %.4g%s%s\n", ag ? "yes" : "no", epar_csv_get_str(res->claims, r, "setting"),
                    epar_csv_get_str(res->claims, r, "definition"), epar_csv_get(res->claims, r, "measured"),
                    epar_csv_get(res->claims, r, "measured_sd") > 0 ? " (measured, mean over seeds)" : "",
                    !ag && !isnan(bn) ? lb : "");
        }
        fprintf(f, "     verdict: %s\n",
                any & 1 ? "reproduced, by the single-parameter definition(s) marked yes only"
                : any & 2 ? "not reproduced at one parameter set; matched only by the mixed construction marked yes "
                            "(enhanced and basic at different beta)"
                          : "not reproduced by any of these definitions");
    }
}

/* section 8: notes on the correlation metric, the sweeps and the untrained models */
static void report_notes(FILE *f, const struct ctx *c)
{
    const struct epar_sensitivity_cfg *cfg = c->cfg;
    int L = c->r->L;
    char lb[4096];
    fprintf(f, "\n8. Notes:\n");
    fprintf(f, "   - position_correlation_mean includes the diagonal (all ones), which alone contributes 1/L = %.6g;\n"
               "     position_correlation_offdiag_mean leaves it out.\n", 1.0 / L);
    fprintf(f, "   - sweeps: α in {%s}, ", fmt_list(cfg->alpha_values, cfg->n_alpha, lb, sizeof lb));
    fprintf(f, "β in {%s}, ", fmt_list(cfg->beta_values, cfg->n_beta, lb, sizeof lb));
    fprintf(f, "γ in {%s} (γ really applied).\n", fmt_list(cfg->gamma_values, cfg->n_gamma, lb, sizeof lb));
    fprintf(f, "   - the models are untrained and random, as in the reference: these are properties of P and of\n"
               "     random attention, not of a trained Transformer.\n");
}

/* parameter_sensitivity_report.txt, section by section */
static char *build_report(const struct ctx *c, const struct tables *res)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    report_head(f, c);
    report_sweeps(f, c);
    report_suggestions(f, c);
    report_baseline(f, c, res);
    report_claims(f, c, res);
    report_notes(f, c);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void print_summary(FILE *f, const struct ctx *c, const struct tables *res)
{
    const struct epar_params *prm = &c->cfg->prm;
    int p0 = c->r->first[EPAR_SENS_DEFAULTS], fs = prm->form;
    fprintf(f, "  at alpha=%g beta=%g gamma=%g (%s): position strength %.6g, decay speed %.6g\n", prm->alpha,
            prm->beta, prm->gamma, epar_posfx_form_name(prm->form), value(c, p0, fs, "position_strength"),
            value(c, p0, fs, "decay_speed"));
    fprintf(f, "  attention locality %.4f +- %.4f (baseline %.4f), concentration %.4g +- %.2g (baseline %.4g)\n",
            value(c, p0, fs, "attention_locality"), value(c, p0, fs, "attention_locality_sd"),
            value(c, p0, fs, "attention_locality_baseline"), value(c, p0, fs, "attention_concentration"),
            value(c, p0, fs, "attention_concentration_sd"), value(c, p0, fs, "attention_concentration_baseline"));
    fprintf(f, "  correlation mean %.4f +- %.4f (baseline %.4f), std %.4f\n", value(c, p0, fs, "position_correlation_mean"),
            value(c, p0, fs, "position_correlation_mean_sd"), value(c, p0, fs, "position_correlation_mean_baseline"),
            value(c, p0, fs, "position_correlation_std"));
    size_t r0 = 0;
    fprintf(f, "  retention P(d)/P(0) at d=L/2, L-1: basic %.4f, %.4f; enhanced %.4f, %.4f; ratio %.4f, %.4f\n",
            epar_csv_get(res->retention, r0, "basic_mid"), epar_csv_get(res->retention, r0, "basic_max"),
            epar_csv_get(res->retention, r0, "enhanced_mid"), epar_csv_get(res->retention, r0, "enhanced_max"),
            epar_csv_get(res->retention, r0, "ratio_mid"), epar_csv_get(res->retention, r0, "ratio_max"));
    fprintf(f, "  measured attention enhanced/basic at d=L/2, L-1: %.4f +- %.4f, %.4f +- %.4f\n",
            epar_csv_get(res->retention, r0, "attn_ratio_mid"), epar_csv_get(res->retention, r0, "attn_ratio_mid_sd"),
            epar_csv_get(res->retention, r0, "attn_ratio_max"), epar_csv_get(res->retention, r0, "attn_ratio_max_sd"));
    int agreeing = 0;
    for (size_t r = 0; r < res->claims->nrows; r++) agreeing += !strcmp(epar_csv_get_str(res->claims, r, "agrees"), "yes");
    fprintf(f, "  retention claims: %d of %zu (claim, definition, setting) rows agree (retention_claims.csv)\n", agreeing,
            res->claims->nrows);
}

static void tables_free(struct tables *t)
{
    struct epar_table **all[] = {&t->alpha, &t->beta, &t->gamma, &t->baseline, &t->basic_vs_enhanced,
                                 &t->retention, &t->claims, &t->curves, &t->grid_ab, &t->grid_bg};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        epar_csv_free(*all[i]);
        *all[i] = NULL;
    }
}

/* every table of the result (freed by the caller, also on error) */
static int tables_build(const struct ctx *c, struct tables *res)
{
    int fs = c->cfg->prm.form;
    if (block_table(&res->alpha, cols_alpha, c, EPAR_SENS_ALPHA, fs) ||
        block_table(&res->beta, cols_beta, c, EPAR_SENS_BETA, fs) ||
        block_table(&res->gamma, cols_gamma, c, EPAR_SENS_GAMMA, fs) ||
        block_table(&res->grid_ab, cols_ab, c, EPAR_SENS_AB, fs) ||
        block_table(&res->grid_bg, cols_bg, c, EPAR_SENS_BG, EPAR_FORM_ENHANCED))
        return EPAR_ENOMEM;
    if (!(res->basic_vs_enhanced = epar_csv_new(cols_bve))) return EPAR_ENOMEM;
    for (int b = EPAR_SENS_ALPHA; b <= EPAR_SENS_GAMMA; b++)
        for (int k = 0; k < c->r->count[b]; k++)
            for (int f = EPAR_FORM_BASIC; f <= EPAR_FORM_ENHANCED; f++)
                if (fill_row(res->basic_vs_enhanced, c, c->r->first[b] + k, f)) return EPAR_ENOMEM;
    if (baseline_table(c, res) || retention_tables(c, res)) return EPAR_ENOMEM;
    return EPAR_OK;
}

int epar_exp_sensitivity_summary(const struct epar_sensitivity_cfg *cfg, const struct epar_sensitivity_result *r,
                                 FILE *f)
{
    const struct ctx c = {cfg, r};
    struct tables t = {0};
    int st = retention_tables(&c, &t);
    if (!st) print_summary(f, &c, &t);
    tables_free(&t);
    return st;
}

/* ---- files and figures ---- */

static int col1(const struct epar_table *t, const char *name) /* gnuplot column number */
{
    return epar_csv_col(t, name) + 1;
}

/* gnuplot lines that read the baseline of row `row` of baseline.csv into bm/bs and draw it as a band */
static void band(char *out, size_t n, const struct epar_table *base, int row, const char *metric)
{
    char sdn[96];
    snprintf(sdn, sizeof sdn, "%s_sd", metric);
    snprintf(out, n,
             "undefine STATS_*\nstats [*:*][*:*] 'baseline.csv' skip 1 every ::%d::%d using %d nooutput\n"
             "bm = exists('STATS_min') ? STATS_min : NaN\n"
             "undefine STATS_*\nstats [*:*][*:*] 'baseline.csv' skip 1 every ::%d::%d using (sd(%d)) nooutput\n"
             "bs = exists('STATS_min') ? STATS_min : 0\n"
             "if (bm == bm) { set object 1 rect from graph 0, first (bm-bs) to graph 1, first (bm+bs) behind "
             "fc rgb '#f4c7c3' fs solid 0.7 noborder }\n",
             row, row, col1(base, metric), row, row, col1(base, sdn));
}

static int baseline_row(const struct epar_table *base, const char *sweep)
{
    for (size_t r = 0; r < base->nrows; r++)
        if (!strcmp(epar_csv_get_str(base, r, "sweep"), sweep)) return (int)r;
    return 0;
}

struct panel { const char *metric, *label; int stochastic; };

/* a 2x2 figure of four metrics of one sweep against its parameter, error bars = sd across seeds */
static int sweep_figure(struct epar_out *o, const char *name, const char *title, const char *csv,
                        const struct epar_table *t, const struct epar_table *base, const char *sweep,
                        const char *xlabel, int logx, const struct panel *pn)
{
    char body[16384], b[1024];
    int row = baseline_row(base, sweep);
    int n = snprintf(body, sizeof body,
                     "set terminal @epar_term size 1200,900\n"
                     "set multiplot layout 2,2 title '%s'\n"
                     "set xlabel '%s'\n%s"
                     "set autoscale xfix\nset offsets graph 0.04, graph 0.04, graph 0.05, graph 0.05\n"
                     "set key top left opaque box lc rgb '#bbbbbb' font ',8'\n",
                     title, xlabel, logx ? "set logscale x\n" : "");
    for (int q = 0; q < 4 && n < (int)sizeof body; q++) {
        const struct panel *p = &pn[q];
        char sdn[96];
        snprintf(sdn, sizeof sdn, "%s_sd", p->metric);
        if (p->stochastic) {
            band(b, sizeof b, base, row, p->metric);
            n += snprintf(body + n, sizeof body - n,
                          "%s%sset ylabel '%s'\n" EPAR_PLOT_IF("'%s', '1:%d'")
                          "plot '%s' skip 1 using 1:%d:(sd(%d)) with yerrorlines lt 1 title 'mean +- sd over seeds', \\\n"
                          "     bm with lines lc rgb '#c0392b' dt 2 title 'baseline (form none) +- sd', \\\n"
                          "     bm-bs with lines lc rgb '#f4c7c3' notitle, bm+bs with lines lc rgb '#f4c7c3' notitle" EPAR_PLOT_END
                          "unset object 1\nunset logscale y\nset format y '%%g'\n",
                          b, strcmp(p->metric, "attention_concentration") ? "" : "set logscale y\nset format y '10^{%L}'\n", p->label, csv,
                          col1(t, p->metric), csv, col1(t, p->metric), col1(t, sdn));
        } else {
            n += snprintf(body + n, sizeof body - n,
                          "set ylabel '%s'\n" EPAR_PLOT_IF("'%s', '1:%d'")
                          "plot '%s' skip 1 using 1:%d with linespoints lt 2 title 'exact (deterministic)'" EPAR_PLOT_END,
                          p->label, csv, col1(t, p->metric), csv, col1(t, p->metric));
        }
    }
    if (n >= (int)sizeof body) return epar_err_set(EPAR_ENOMEM, "figure script too long: '%s'", name);
    snprintf(body + n, sizeof body - n, "unset multiplot\n");
    return epar_plot_script(o, name, title, body);
}

static void tics(char *out, size_t n, const char *axis, const double *v, int k)
{
    size_t l = (size_t)snprintf(out, n, "set %s (", axis);
    for (int i = 0; i < k && l < n; i++) l += (size_t)snprintf(out + l, n - l, "%s'%g' %d", i ? ", " : "", v[i], i);
    if (l < n) snprintf(out + l, n - l, ")\n");
}

/* three heatmaps of a grid: locality, concentration, off-diagonal correlation */
static int grid_figure(struct epar_out *o, const char *name, const char *title, const char *csv,
                       const struct epar_table *t, const char *xidx, const char *yidx, const char *xlabel,
                       const char *ylabel, const double *xv, int nx, const double *yv, int ny, int window)
{
    char loc[96];
    snprintf(loc, sizeof loc, "attention locality (mass on |i-j| <= %d)", window);
    const struct panel pn[3] = {{"attention_locality", loc, 1},
                                {"attention_concentration", "attention concentration (variance over batch)", 1},
                                {"position_correlation_offdiag_mean", "position correlation, off-diagonal mean", 1}};
    char body[16384], xt[4096], yt[4096];
    /* log colours for concentration only when it spans more than a decade and a bit */
    double lo = INFINITY, hi = 0.0;
    for (size_t r = 0; r < t->nrows; r++) {
        double v = epar_csv_get(t, r, "attention_concentration");
        if (v < lo) lo = v;
        if (v > hi) hi = v;
    }
    int logcb = lo > 0 && hi / lo > 20;
    /* gnuplot draws no image under 2 x 2: a grid of one row or column cell by cell */
    const char *cells = nx > 1 && ny > 1 ? "" : "(0.5):(0.5):",
               *style = nx > 1 && ny > 1 ? "image" : "boxxyerror fs solid noborder fc palette";
    tics(xt, sizeof xt, "xtics", xv, nx);
    tics(yt, sizeof yt, "ytics", yv, ny);
    int n = snprintf(body, sizeof body,
                     "set terminal @epar_term size 1800,620\n"
                     "set multiplot layout 1,3 title '%s'\n"
                     "unset key\nset view map\nunset grid\nset tics out\n"
                     "set style textbox opaque fc rgb '#ffffff' noborder\n"
                     "%s%sset xrange [-0.5:%g]\nset yrange [-0.5:%g]\nset xlabel '%s'\nset ylabel '%s'\n",
                     title, xt, yt, nx - 0.5, ny - 0.5, xlabel, ylabel);
    for (int q = 0; q < 3 && n < (int)sizeof body; q++)
        n += snprintf(body + n, sizeof body - n,
                      "set title '%s'\n%s" EPAR_PLOT_IF("'%s', '%d:%d'")
                      "plot '%s' skip 1 using %d:%d:%s%d with %s, \\\n"
                      "     '' skip 1 using %d:%d:(sprintf('%%.3g', column(%d))) with labels boxed font ',6'" EPAR_PLOT_END,
                      pn[q].label, q == 1 && logcb ? "set logscale cb\nset format cb '10^{%L}'\n" : "unset logscale cb\nset format cb '%g'\n",
                      csv, col1(t, xidx), col1(t, pn[q].metric), csv, col1(t, xidx), col1(t, yidx), cells, col1(t, pn[q].metric), style,
                      col1(t, xidx), col1(t, yidx), col1(t, pn[q].metric));
    if (n >= (int)sizeof body) return epar_err_set(EPAR_ENOMEM, "figure script too long: '%s'", name);
    snprintf(body + n, sizeof body - n, "unset multiplot\n");
    return epar_plot_script(o, name, title, body);
}

static int write_text(struct epar_out *o, const char *name, const char *text)
{
    return epar_out_write_text(epar_out_path(o, name), text);
}

/* run.json: the common fields, the sweeps, the draws and the paper's parameters */
#define SC struct epar_sensitivity_cfg
static const struct epar_field sweep_rows[] = {
    {.key = "alpha_values", .type = EPAR_FIELD_DLIST, .offset = offsetof(SC, alpha_values),
     .count_offset = offsetof(SC, n_alpha), .max = EPAR_MAX_LIST},
    {.key = "beta_values", .type = EPAR_FIELD_DLIST, .offset = offsetof(SC, beta_values),
     .count_offset = offsetof(SC, n_beta), .max = EPAR_MAX_LIST},
    {.key = "gamma_values", .type = EPAR_FIELD_DLIST, .offset = offsetof(SC, gamma_values),
     .count_offset = offsetof(SC, n_gamma), .max = EPAR_MAX_LIST},
    {0}};
static const struct epar_field paper_rows[] = {
    {.key = "alpha", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(SC, paper_alpha)},
    {.key = "beta", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(SC, paper_beta)},
    {.key = "gamma", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(SC, paper_gamma)},
    {0}};
#undef SC

static int write_run_json(const struct epar_sensitivity_cfg *cfg, struct epar_out *o, const char *protocol_path)
{
    json_t *extra = json_pack("{s:o, s:i, s:s, s:s, s:s, s:o*}", "sweeps", epar_fields_json(sweep_rows, cfg, NULL),
                              "locality_window", cfg->locality_window, "draws", cfg->common_draws ? "common" : "fresh",
                              "baseline", "form none on the same seeds and draws (paired)", "grid_beta_gamma_form",
                              "enhanced", "paper_parameters",
                              cfg->has_paper ? epar_fields_json(paper_rows, cfg, NULL) : NULL);
    if (!extra) return epar_err_set(EPAR_ENOMEM, "out of memory building run.json");
    return epar_exp_write_run_json(o, "sensitivity", protocol_path, &cfg->prm, extra);
}

/* the alpha, beta and gamma sweeps: four metrics each against the swept parameter */
static int fig_sweeps(const struct epar_sensitivity_cfg *cfg, const struct tables *res,
                      struct epar_out *o)
{
    const struct epar_params *prm = &cfg->prm;
    int st, L = prm->length;
    char title[512];
    const char *form = epar_posfx_form_name(prm->form);
    struct panel pa[4] = {{"position_strength", "position strength (mean of P)", 0},
                          {"attention_concentration", "attention concentration", 1},
                          {"position_correlation_mean", "position correlation mean", 1},
                          {"position_correlation_std", "position correlation std", 1}};
    snprintf(title, sizeof title, "{/Symbol a} sensitivity (%s, {/Symbol b}=%g, {/Symbol g}=%g, L=%d, %d seeds)", form,
             prm->beta, prm->gamma, L, prm->n_seeds);
    if ((st = sweep_figure(o, "alpha_parameter_sensitivity", title, "alpha_parameter_data.csv", res->alpha,
                           res->baseline, "alpha", "{/Symbol a}", 1, pa)))
        return st;
    struct panel pb[4] = {{"decay_speed", "decay speed (mean P[c,c+k])", 0},
                          {"attention_locality", "attention locality", 1},
                          {"position_correlation_mean", "position correlation mean", 1},
                          {"position_correlation_std", "position correlation std", 1}};
    snprintf(title, sizeof title, "{/Symbol b} sensitivity (%s, {/Symbol a}=%g, {/Symbol g}=%g, L=%d, %d seeds)", form,
             prm->alpha, prm->gamma, L, prm->n_seeds);
    if ((st = sweep_figure(o, "beta_parameter_sensitivity", title, "beta_parameter_data.csv", res->beta,
                           res->baseline, "beta", "{/Symbol b}", 1, pb)))
        return st;
    struct panel pg[4] = {{"position_strength", "position strength (mean of P)", 0},
                          {"decay_speed", "decay speed (mean P[c,c+k])", 0},
                          {"attention_concentration", "attention concentration", 1},
                          {"attention_locality", "attention locality", 1}};
    snprintf(title, sizeof title, "{/Symbol g} sensitivity (%s, {/Symbol a}=%g, {/Symbol b}=%g, L=%d, %d seeds)", form,
             prm->alpha, prm->beta, L, prm->n_seeds);
    if ((st = sweep_figure(o, "gamma_parameter_sensitivity", title, "gamma_parameter_data.csv", res->gamma,
                           res->baseline, "gamma", "{/Symbol g}", 0, pg)))
        return st;
    return EPAR_OK;
}

/* the alpha x beta and beta x gamma grids as heatmaps */
static int fig_grids(const struct epar_sensitivity_cfg *cfg, const struct tables *res,
                     struct epar_out *o)
{
    const struct epar_params *prm = &cfg->prm;
    int st;
    char title[512];
    const char *form = epar_posfx_form_name(prm->form);
    snprintf(title, sizeof title, "Measured metrics over {/Symbol a} x {/Symbol b} (%s, {/Symbol g}=%g, mean of %d seeds)",
             form, prm->gamma, prm->n_seeds);
    if ((st = grid_figure(o, "heatmap_alpha_beta", title, "grid_alpha_beta.csv", res->grid_ab, "beta_index",
                          "alpha_index", "{/Symbol b}", "{/Symbol a}", cfg->beta_values, cfg->n_beta,
                          cfg->alpha_values, cfg->n_alpha, cfg->locality_window)))
        return st;
    snprintf(title, sizeof title, "Measured metrics over {/Symbol b} x {/Symbol g} (enhanced, {/Symbol a}=%g, mean of %d seeds)",
             prm->alpha, prm->n_seeds);
    if ((st = grid_figure(o, "heatmap_beta_gamma", title, "grid_beta_gamma.csv", res->grid_bg, "gamma_index",
                          "beta_index", "{/Symbol g}", "{/Symbol b}", cfg->gamma_values, cfg->n_gamma,
                          cfg->beta_values, cfg->n_beta, cfg->locality_window)))
        return st;
    return EPAR_OK;
}

/* basic vs enhanced over the alpha and beta sweeps (same weights and data) */
static int fig_basic_vs_enhanced(const struct epar_sensitivity_cfg *cfg, const struct tables *res,
                                 struct epar_out *o)
{
    const struct epar_params *prm = &cfg->prm;
    int st, L = prm->length;
    char title[512];
    const struct epar_table *bv = res->basic_vs_enhanced;
    char ba[1024], bb[1024];
    band(ba, sizeof ba, res->baseline, baseline_row(res->baseline, "alpha"), "attention_locality");
    band(bb, sizeof bb, res->baseline, baseline_row(res->baseline, "beta"), "attention_locality");
    int cl = col1(bv, "attention_locality"), cls = col1(bv, "attention_locality_sd"),
        cc = col1(bv, "position_correlation_offdiag_mean"), ccs = col1(bv, "position_correlation_offdiag_mean_sd"),
        cd = col1(bv, "decay_speed");
    /* rows: alpha sweep (basic, enhanced per value), then beta, then gamma */
    int a0 = 0, a1 = 2 * cfg->n_alpha - 1, b0 = 2 * cfg->n_alpha, b1 = b0 + 2 * cfg->n_beta - 1;
    snprintf(title, sizeof title, "Basic vs enhanced on the same weights and data ({/Symbol g}=%g, L=%d, %d seeds)",
             prm->gamma, L, prm->n_seeds);
    if ((st = epar_plot_scriptf(
             o, "basic_vs_enhanced", title,
             "set terminal @epar_term size 1200,900\n"
             "set multiplot layout 2,2 title '%s'\n"
             "set key top left opaque box lc rgb '#bbbbbb' font ',8'\nset logscale x\n"
             "set autoscale xfix\nset offsets graph 0.04, graph 0.04, graph 0.05, graph 0.05\n"
             "f = 'basic_vs_enhanced.csv'\nrows(a, b) = $0 >= a && $0 <= b   # the rows of a sweep\n"
             "set xlabel '{/Symbol a} ({/Symbol b}=%g)'\nset ylabel 'attention locality'\n%s"
             EPAR_PLOT_IF("f, '(rows(%d, %d) ? $2 : NaN):%d'")
             "plot f skip 1 every 2::%d::%d using 2:%d:(sd(%d)) with yerrorlines lt 2 title 'basic', \\\n"
             "     f skip 1 every 2::%d::%d using 2:%d:(sd(%d)) with yerrorlines lt 1 title 'enhanced', \\\n"
             "     bm with lines lc rgb '#c0392b' dt 2 title 'none (baseline) +- sd'" EPAR_PLOT_END "unset object 1\n"
             "set xlabel '{/Symbol a} ({/Symbol b}=%g)'\nset ylabel 'position correlation, off-diagonal mean'\n"
             EPAR_PLOT_IF("f, '(rows(%d, %d) ? $2 : NaN):%d'")
             "plot f skip 1 every 2::%d::%d using 2:%d:(sd(%d)) with yerrorlines lt 2 title 'basic', \\\n"
             "     f skip 1 every 2::%d::%d using 2:%d:(sd(%d)) with yerrorlines lt 1 title 'enhanced'" EPAR_PLOT_END
             "set xlabel '{/Symbol b} ({/Symbol a}=%g)'\nset ylabel 'attention locality'\n%s"
             EPAR_PLOT_IF("f, '(rows(%d, %d) ? $3 : NaN):%d'")
             "plot f skip 1 every 2::%d::%d using 3:%d:(sd(%d)) with yerrorlines lt 2 title 'basic', \\\n"
             "     f skip 1 every 2::%d::%d using 3:%d:(sd(%d)) with yerrorlines lt 1 title 'enhanced', \\\n"
             "     bm with lines lc rgb '#c0392b' dt 2 title 'none (baseline) +- sd'" EPAR_PLOT_END "unset object 1\n"
             "set xlabel '{/Symbol b} ({/Symbol a}=%g)'\nset ylabel 'decay speed (mean P[c,c+k], exact)'\n"
             EPAR_PLOT_IF("f, '(rows(%d, %d) ? $3 : NaN):%d'")
             "plot f skip 1 every 2::%d::%d using 3:%d with linespoints lt 2 title 'basic', \\\n"
             "     f skip 1 every 2::%d::%d using 3:%d with linespoints lt 1 title 'enhanced'" EPAR_PLOT_END
             "unset multiplot\n",
             title, prm->beta, ba, a0, a1, cl, a0, a1, cl, cls, a0 + 1, a1, cl, cls, prm->beta, a0, a1, cc, a0, a1, cc, ccs,
             a0 + 1, a1, cc, ccs, prm->alpha, bb, b0, b1, cl, b0, b1, cl, cls, b0 + 1, b1, cl, cls, prm->alpha, b0, b1, cd, b0,
             b1, cd, b0 + 1, b1, cd)))
        return st;
    return EPAR_OK;
}

/* retention_curves: pre-softmax P(d)/P(0) and the measured attention per pair at distance d */
static int fig_retention(const struct epar_sensitivity_cfg *cfg, struct epar_out *o)
{
    const struct epar_params *prm = &cfg->prm;
    int st, L = prm->length;
    char title[512];
    snprintf(title, sizeof title, "Retention: pre-softmax P(d)/P(0) and measured attention per pair (L=%d)", L);
    char paper[512] = "";
    if (cfg->has_paper)
        snprintf(paper, sizeof paper,
                 ", \\\n     '' skip 1 using 1:4 with lines lt 2 dt 2 title 'basic, paper text ({/Symbol b}=%g)', \\\n"
                 "     '' skip 1 using 1:5 with lines lt 1 dt 2 title 'enhanced, paper text ({/Symbol b}=%g, {/Symbol g}=%g)'",
                 cfg->paper_beta, cfg->paper_beta, cfg->paper_gamma);
    if ((st = epar_plot_scriptf(
             o, "retention_curves", title,
             "set terminal @epar_term size 1400,600\n"
             "set multiplot layout 1,2 title '%s'\n"
             "set key bottom left opaque box lc rgb '#bbbbbb' font ',8'\nset xrange [0:%d]\n"
             "set arrow 1 from %d, graph 0 to %d, graph 1 nohead dt 3 lc rgb '#555555'\n"
             "set arrow 2 from %d, graph 0 to %d, graph 1 nohead dt 3 lc rgb '#555555'\n"
             "set title 'pre-softmax effect (exact), marks at d = L/2 and L-1'\n"
             "set xlabel 'distance d = |i-j| (positions)'\nset ylabel 'P(d) / P(0)'\nset yrange [0:1.05]\n"
             "plot 'retention_curves.csv' skip 1 using 1:2 with lines lt 2 lw 2 title 'basic ({/Symbol b}=%g)', \\\n"
             "     '' skip 1 using 1:3 with lines lt 1 lw 2 title 'enhanced ({/Symbol b}=%g, {/Symbol g}=%g)'%s\n"
             "set title 'post-softmax: mean attention weight of a pair at distance d (mean +- sd over %d seeds)'\n"
             "set ylabel 'mean A_{ij} over pairs with |i-j| = d'\nset autoscale y\nset key top right\n"
             "plot 'retention_curves.csv' skip 1 using 1:6:(sd(7)) with yerrorlines lt 8 pt 7 ps 0.3 title 'none', \\\n"
             "     '' skip 1 using 1:8:(sd(9)) with yerrorlines lt 2 pt 5 ps 0.3 title 'basic', \\\n"
             "     '' skip 1 using 1:10:(sd(11)) with yerrorlines lt 1 pt 9 ps 0.3 title 'enhanced', \\\n"
             "     %.17g with lines lc rgb '#555555' dt 2 title '1/L (uniform rows)'\n"
             "unset multiplot\n",
             title, L, L / 2, L / 2, L - 1, L - 1, prm->beta, prm->beta, prm->gamma, paper, prm->n_seeds, 1.0 / L)))
        return st;
    return EPAR_OK;
}

/* improvement over the measured baseline (the reference's "improvement" figure, with a real baseline) */
static int fig_improvement(const struct epar_sensitivity_cfg *cfg, const struct tables *res,
                           struct epar_out *o)
{
    const struct epar_params *prm = &cfg->prm;
    char title[512];
    const struct epar_table *ts[3] = {res->alpha, res->beta, res->gamma};
    const char *csvs[3] = {"alpha_parameter_data.csv", "beta_parameter_data.csv", "gamma_parameter_data.csv"};
    const char *xl[3] = {"{/Symbol a}", "{/Symbol b}", "{/Symbol g}"};
    char body[16384];
    snprintf(title, sizeof title, "Change over the measured baseline (form none, same draws; mean +- sd over %d seeds)",
             prm->n_seeds);
    int n = snprintf(body, sizeof body, "set terminal @epar_term size 1500,850\nset multiplot layout 2,3 title '%s'\n"
                                        "unset key\nset autoscale xfix\n"
                                        "set offsets graph 0.04, graph 0.04, graph 0.05, graph 0.05\n", title);
    for (int r = 0; r < 2; r++)
        for (int q = 0; q < 3 && n < (int)sizeof body; q++) {
            const char *m = r ? "attention_locality_delta" : "correlation_improvement_pct";
            char sdn[96];
            snprintf(sdn, sizeof sdn, "%s_sd", m);
            n += snprintf(body + n, sizeof body - n,
                          "%s\nset xlabel '%s'\nset ylabel '%s'\n"
                          EPAR_PLOT_IF("'%s', '1:%d'")
                          "plot '%s' skip 1 using 1:%d:(sd(%d)) with yerrorlines lt %d, 0 with lines lc rgb '#c0392b' dt 2"
                          EPAR_PLOT_END,
                          q < 2 ? "set logscale x" : "unset logscale x", xl[q],
                          r ? "locality - baseline locality" : "correlation mean: % over baseline", csvs[q],
                          col1(ts[q], m), csvs[q], col1(ts[q], m), col1(ts[q], sdn), q + 1);
        }
    if (n >= (int)sizeof body) return epar_err_set(EPAR_ENOMEM, "figure script too long: 'improvement_over_baseline'");
    snprintf(body + n, sizeof body - n, "unset multiplot\n");
    return epar_plot_script(o, "improvement_over_baseline", title, body);
}

static int write_all(const struct epar_sensitivity_cfg *cfg, const struct tables *res, const char *report,
                     struct epar_out *o, const char *protocol_path)
{
    int st;
    const struct epar_exp_file files[] = {
        {"alpha_parameter_data.csv", res->alpha}, {"beta_parameter_data.csv", res->beta},
        {"gamma_parameter_data.csv", res->gamma}, {"baseline.csv", res->baseline},
        {"basic_vs_enhanced.csv", res->basic_vs_enhanced}, {"retention.csv", res->retention},
        {"retention_claims.csv", res->claims}, {"retention_curves.csv", res->curves},
        {"grid_alpha_beta.csv", res->grid_ab}, {"grid_beta_gamma.csv", res->grid_bg}};
    if ((st = epar_exp_write_tables(o, files, sizeof files / sizeof files[0]))) return st;
    if ((st = write_text(o, "parameter_sensitivity_report.txt", report))) return st;
    if ((st = write_run_json(cfg, o, protocol_path))) return st;
    if ((st = fig_sweeps(cfg, res, o))) return st;
    if ((st = fig_grids(cfg, res, o))) return st;
    if ((st = fig_basic_vs_enhanced(cfg, res, o))) return st;
    if ((st = fig_retention(cfg, o))) return st;
    return fig_improvement(cfg, res, o);
}

int epar_exp_sensitivity_write(const struct epar_sensitivity_cfg *cfg, const struct epar_sensitivity_result *r,
                               struct epar_out *o, const char *protocol_path)
{
    const struct ctx c = {cfg, r};
    struct tables t = {0};
    char *report = NULL;
    int st = tables_build(&c, &t);
    if (!st && !(report = build_report(&c, &t))) st = epar_err_set(EPAR_ENOMEM, "out of memory building the report");
    if (!st) st = write_all(cfg, &t, report, o, protocol_path);
    free(report);
    tables_free(&t);
    return st;
}
