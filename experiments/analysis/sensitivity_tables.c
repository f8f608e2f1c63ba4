/* Appendix: parameter sensitivity, the writer's tables: the sweeps and grids (mean over seeds, sample sd across
 * seeds), basic against enhanced, the measured baseline, and the retention tables (retention.csv, the curves and each
 * retention claim against every candidate definition), all derived from the numbers epar_exp_sensitivity_run
 * measured. The report is sensitivity_report.c's, the files and figures sensitivity_write.c's (sensitivity_int.h). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "experiments/analysis/sensitivity_int.h"

double epar_sens_ctx_value(const struct ctx *c, int p, int f, const char *name)
{
    return epar_sens_value(c->r, p, f, name);
}
static void ratio_stats(const struct ctx *c, int p, int fn, int dn, int fd, int dd, double *mean, double *sd)
{
    epar_sens_ratio_stats(c->r, p, fn, dn, fd, dd, mean, sd);
}
static void prof_stats(const struct ctx *c, int p, int f, int d, double *mean, double *sd)
{
    epar_sens_prof_stats(c->r, p, f, d, mean, sd);
}

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
        } else row[col].v = epar_sens_ctx_value(c, p, f, n);
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
int epar_sens_retention_tables(const struct ctx *c, struct tables *res)
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

void epar_sens_tables_free(struct tables *t)
{
    struct epar_table **all[] = {&t->alpha, &t->beta, &t->gamma, &t->baseline, &t->basic_vs_enhanced,
                                 &t->retention, &t->claims, &t->curves, &t->grid_ab, &t->grid_bg};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        epar_csv_free(*all[i]);
        *all[i] = NULL;
    }
}

/* every table of the result (freed by the caller, also on error) */
int epar_sens_tables_build(const struct ctx *c, struct tables *res)
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
    if (baseline_table(c, res) || epar_sens_retention_tables(c, res)) return EPAR_ENOMEM;
    return EPAR_OK;
}
