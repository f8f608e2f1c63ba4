/* Appendix: parameter sensitivity, the words: parameter_sensitivity_report.txt section by section (the sweeps, the
 * suggestions, the baseline, basic against enhanced, the retention claims, notes) and the short summary printed on
 * stdout, from the numbers epar_exp_sensitivity_run measured and the tables of sensitivity_tables.c. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "experiments/analysis/sensitivity_int.h"

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
        double v = sign * epar_sens_ctx_value(c, c->r->first[b] + k, f, name);
        if (!isnan(v) && (best < 0 || v > bv)) { bv = v; best = k; }
    }
    return best;
}

/* "rises from X (p=a) to Y (p=b)" for a metric over a sweep */
static void trend(FILE *f, const struct ctx *c, int b, int form, const char *metric, const char *pname,
                  const char *label)
{
    int n = c->r->count[b], p0 = c->r->first[b], p1 = p0 + n - 1;
    double v0 = epar_sens_ctx_value(c, p0, form, metric), v1 = epar_sens_ctx_value(c, p1, form, metric);
    double x0 = epar_sens_ctx_value(c, p0, form, pname), x1 = epar_sens_ctx_value(c, p1, form, pname);
    int kmax = block_arg(c, b, form, metric, 1), kmin = block_arg(c, b, form, metric, -1);
    if (kmax < 0 || kmin < 0) {
        fprintf(f, "   measured: %s undefined over this sweep\n", label);
        return;
    }
    fprintf(f, "   measured: %s %s from %.4g (%s=%g) to %.4g (%s=%g); largest %.4g at %s=%g, smallest %.4g at %s=%g\n",
            label, v1 > v0 ? "rises" : v1 < v0 ? "falls" : "stays", v0, pname, x0, v1, pname, x1,
            epar_sens_ctx_value(c, p0 + kmax, form, metric), pname, epar_sens_ctx_value(c, p0 + kmax, form, pname),
            epar_sens_ctx_value(c, p0 + kmin, form, metric), pname, epar_sens_ctx_value(c, p0 + kmin, form, pname));
}

/* across-sweep range of a stochastic metric vs its typical across-seed sd */
static double sweep_range_ratio(const struct ctx *c, int b, int f, const char *metric)
{
    const struct epar_sensitivity_result *r = c->r;
    char sdn[96];
    snprintf(sdn, sizeof sdn, "%s_sd", metric);
    double lo = INFINITY, hi = -INFINITY, sds = 0.0;
    for (int k = 0; k < r->count[b]; k++) {
        double v = epar_sens_ctx_value(c, r->first[b] + k, f, metric);
        if (v < lo) lo = v;
        if (v > hi) hi = v;
        sds += epar_sens_ctx_value(c, r->first[b] + k, f, sdn) / r->count[b];
    }
    return sds > 0 ? (hi - lo) / sds : INFINITY;
}

static void gain_line(FILE *f, const struct ctx *c, int p, int form, const char *pdesc)
{
    double m = epar_sens_ctx_value(c, p, form, "attention_locality"), sd = epar_sens_ctx_value(c, p, form, "attention_locality_sd");
    double b = epar_sens_ctx_value(c, p, form, "attention_locality_baseline"), dm = epar_sens_ctx_value(c, p, form, "attention_locality_delta"),
           dsd = epar_sens_ctx_value(c, p, form, "attention_locality_delta_sd");
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
                r->pts[p].alpha, epar_sens_ctx_value(c, p, fs, "position_strength"), epar_sens_ctx_value(c, p, fs, "attention_concentration"),
                epar_sens_ctx_value(c, p, fs, "attention_concentration_sd"), epar_sens_ctx_value(c, p, fs, "attention_concentration_baseline"));
    }
    b = EPAR_SENS_BETA;
    fprintf(f, "\n2. β Parameter Sensitivity Analysis (α=%g, γ=%g):\n", prm->alpha, prm->gamma);
    fprintf(f, "   β sets how fast P decays with |i-j|/L\n");
    trend(f, c, b, fs, "decay_speed", "beta", "decay speed (mean P[c,c+k])");
    trend(f, c, b, fs, "attention_locality", "beta", "attention locality");
    for (int k = 0; k < r->count[b]; k++) {
        int p = r->first[b] + k;
        fprintf(f, "   β=%g: Decay Speed=%.4f, Attention Locality=%.4f (+- %.4f; baseline %.4f)\n", r->pts[p].beta,
                epar_sens_ctx_value(c, p, fs, "decay_speed"), epar_sens_ctx_value(c, p, fs, "attention_locality"),
                epar_sens_ctx_value(c, p, fs, "attention_locality_sd"), epar_sens_ctx_value(c, p, fs, "attention_locality_baseline"));
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
                r->pts[p].gamma, epar_sens_ctx_value(c, p, fs, "position_strength"), epar_sens_ctx_value(c, p, fs, "decay_speed"),
                epar_sens_ctx_value(c, p, fs, "attention_concentration"), epar_sens_ctx_value(c, p, fs, "attention_locality"),
                epar_sens_ctx_value(c, p, fs, "attention_locality_sd"), epar_sens_ctx_value(c, p, fs, "attention_locality_baseline"));
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
        double im = epar_sens_ctx_value(c, p, fs, "correlation_improvement_pct"), isd = epar_sens_ctx_value(c, p, fs, "correlation_improvement_pct_sd");
        fprintf(f, "   - The reference's 'optimal' %s (largest position_correlation_mean improvement over the measured "
                   "baseline %.4f): %s=%g, %+.2f%% +- %.2f%% (%s)\n",
                pn[q], epar_sens_ctx_value(c, p, fs, "position_correlation_mean_baseline"), pn[q],
                epar_sens_ctx_value(c, p, fs, q == 0 ? "alpha" : q == 1 ? "beta" : "gamma"), im, isd,
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
                epar_posfx_form_name((enum epar_form)fo), epar_sens_ctx_value(c, p0, fo, "position_strength"),
                epar_sens_ctx_value(c, p0, fo, "decay_speed"), epar_sens_ctx_value(c, p0, fo, "attention_locality"),
                epar_sens_ctx_value(c, p0, fo, "attention_locality_sd"), epar_sens_ctx_value(c, p0, fo, "attention_concentration"),
                epar_sens_ctx_value(c, p0, fo, "attention_concentration_sd"), epar_sens_ctx_value(c, p0, fo, "position_correlation_offdiag_mean"),
                epar_sens_ctx_value(c, p0, fo, "position_correlation_offdiag_mean_sd"));
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
char *epar_sens_build_report(const struct ctx *c, const struct tables *res)
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
            prm->beta, prm->gamma, epar_posfx_form_name(prm->form), epar_sens_ctx_value(c, p0, fs, "position_strength"),
            epar_sens_ctx_value(c, p0, fs, "decay_speed"));
    fprintf(f, "  attention locality %.4f +- %.4f (baseline %.4f), concentration %.4g +- %.2g (baseline %.4g)\n",
            epar_sens_ctx_value(c, p0, fs, "attention_locality"), epar_sens_ctx_value(c, p0, fs, "attention_locality_sd"),
            epar_sens_ctx_value(c, p0, fs, "attention_locality_baseline"), epar_sens_ctx_value(c, p0, fs, "attention_concentration"),
            epar_sens_ctx_value(c, p0, fs, "attention_concentration_sd"), epar_sens_ctx_value(c, p0, fs, "attention_concentration_baseline"));
    fprintf(f, "  correlation mean %.4f +- %.4f (baseline %.4f), std %.4f\n", epar_sens_ctx_value(c, p0, fs, "position_correlation_mean"),
            epar_sens_ctx_value(c, p0, fs, "position_correlation_mean_sd"), epar_sens_ctx_value(c, p0, fs, "position_correlation_mean_baseline"),
            epar_sens_ctx_value(c, p0, fs, "position_correlation_std"));
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

int epar_exp_sensitivity_summary(const struct epar_sensitivity_cfg *cfg, const struct epar_sensitivity_result *r,
                                 FILE *f)
{
    const struct ctx c = {cfg, r};
    struct tables t = {0};
    int st = epar_sens_retention_tables(&c, &t);
    if (!st) print_summary(f, &c, &t);
    epar_sens_tables_free(&t);
    return st;
}
