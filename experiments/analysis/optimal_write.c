/* optimal-position's writer: every table, verification_report.txt, run.json and figure of output/optimal/ from the
 * numbers of a run (experiments/analysis/optimal.c computes them). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "lib/metrics.h"
#include "experiments/common.h"
#include "experiments/analysis/optimal.h"

#define IDX(s, t, f, k) ((((size_t)(s) * T + (t)) * NF + (f)) * NM + (k))

/* consistency_by_seed.csv (main form) */
static struct epar_table *opt_by_seed(const struct epar_optimal_cfg *cfg, const struct epar_optimal_result *res)
{
    int S = res->S, T = res->T, R = res->R, NF = EPAR_OPT_NFORMS, NM = EPAR_OPT_NM, mf = res->main_form;
    const double *smean = res->smean, *sstd = res->sstd;
    struct epar_table *t_ = epar_csv_new("seed,info_type,consistency,consistency_std,proximity,proximity_std,"
                                         "score_similarity,score_similarity_std,ranking_correlation,"
                                         "ranking_correlation_std,position_score_mean,runs,consistency_se_run");
    for (int s = 0; t_ && s < S; s++)
        for (int t = 0; t_ && t < T; t++)
            if (epar_csv_append(t_, "isdddddddddid", (int)cfg->prm.seeds[s], epar_imp_name(cfg->types[t]),
                                smean[IDX(s, t, mf, EPAR_OPT_CONS)], sstd[IDX(s, t, mf, EPAR_OPT_CONS)],
                                smean[IDX(s, t, mf, EPAR_OPT_PROX)], sstd[IDX(s, t, mf, EPAR_OPT_PROX)],
                                smean[IDX(s, t, mf, EPAR_OPT_SIM)], sstd[IDX(s, t, mf, EPAR_OPT_SIM)],
                                smean[IDX(s, t, mf, EPAR_OPT_RANK)], sstd[IDX(s, t, mf, EPAR_OPT_RANK)],
                                smean[IDX(s, t, mf, EPAR_OPT_SCORE)], R, res->seed_se[(size_t)s * T + t])) {
                epar_csv_free(t_);
                t_ = NULL;
            }
    return t_;
}
#undef IDX

enum { OT_BY_SEED, OT_CONS, OT_FORMS, OT_PAIRED, OT_SUMMARY, OT_RADAR, OT_N };

/* consistency.csv, verification_summary.csv, radar.csv, forms_comparison.csv, forms_paired_difference.csv */
static int opt_tabulate(const struct epar_optimal_cfg *cfg, const struct epar_optimal_result *res,
                        struct epar_table **tab)
{
    int S = res->S, T = res->T, R = res->R, NF = EPAR_OPT_NFORMS, mf = res->main_form;
    const char *tn[EPAR_IMP_COUNT];
    for (int t = 0; t < T; t++) tn[t] = epar_imp_name(cfg->types[t]);
    const double (*am)[EPAR_IMP_COUNT][EPAR_OPT_NM] = res->am, (*asd)[EPAR_IMP_COUNT][EPAR_OPT_NM] = res->asd;
    const double (*stdm)[EPAR_OPT_NM] = res->stdm, *perf = res->perf, *perf_sd = res->perf_sd;
    struct epar_table *cons = tab[OT_CONS] = epar_csv_new(
        "info_type,consistency,proximity,score_similarity,ranking_correlation,position_score_mean,consistency_sd,"
        "proximity_sd,score_similarity_sd,ranking_correlation_sd,seeds,runs,consistency_se_run,proximity_se_run,"
        "score_similarity_se_run,ranking_correlation_se_run");
    struct epar_table *summary = tab[OT_SUMMARY] = epar_csv_new(
        "info_type,consistency,consistency_sd,ranking_correlation,ranking_correlation_sd,position_score_mean,"
        "position_score_mean_sd,consistency_std,ranking_correlation_std,performance_score,performance_score_sd");
    struct epar_table *forms = tab[OT_FORMS] = epar_csv_new(
        "form,info_type,consistency,consistency_sd,ranking_correlation,ranking_correlation_sd,seeds,"
        "consistency_se_run,ranking_correlation_se_run");
    struct epar_table *paired = tab[OT_PAIRED] = epar_csv_new(
        "info_type,comparison,consistency_diff,consistency_diff_sd,ranking_diff,ranking_diff_sd,seeds,"
        "consistency_diff_se_run,ranking_diff_se_run");
    struct epar_table *radar = tab[OT_RADAR] = epar_csv_new("info_type,type_index,axis,angle_deg,value");
    if (!cons || !summary || !forms || !paired || !radar) return EPAR_ENOMEM;
    for (int t = 0; t < T; t++) {
        const double *a = am[mf][t], *d = asd[mf][t], *se = res->se[mf][t];
        if (epar_csv_append(cons, "sdddddddddiidddd", tn[t], a[EPAR_OPT_CONS], a[EPAR_OPT_PROX], a[EPAR_OPT_SIM],
                            a[EPAR_OPT_RANK], a[EPAR_OPT_SCORE], d[EPAR_OPT_CONS], d[EPAR_OPT_PROX], d[EPAR_OPT_SIM],
                            d[EPAR_OPT_RANK], S, R, se[EPAR_OPT_CONS], se[EPAR_OPT_PROX], se[EPAR_OPT_SIM],
                            se[EPAR_OPT_RANK]) ||
            epar_csv_append(summary, "sdddddddddd", tn[t], a[EPAR_OPT_CONS], d[EPAR_OPT_CONS], a[EPAR_OPT_RANK],
                            d[EPAR_OPT_RANK], a[EPAR_OPT_SCORE], d[EPAR_OPT_SCORE], stdm[t][EPAR_OPT_CONS],
                            stdm[t][EPAR_OPT_RANK], perf[t], perf_sd[t]))
            return EPAR_ENOMEM;
        /* radar: four quantities on [0,1]: consistency, (ranking+1)/2, mean V (I in [0,1], rows sum to 1),
         * performance 0.6 c + 0.2 (r+1); the first axis is repeated to close the polygon */
        double rv[5] = {a[EPAR_OPT_CONS], (a[EPAR_OPT_RANK] + 1.0) / 2.0, a[EPAR_OPT_SCORE], perf[t], a[EPAR_OPT_CONS]};
        static const char *const axes[5] = {"consistency", "ranking", "position_score", "performance", "consistency"};
        for (int k = 0; k < 5; k++)
            if (epar_csv_append(radar, "sisdd", tn[t], t, axes[k], 45.0 - 90.0 * k, rv[k])) return EPAR_ENOMEM;
    }
    for (int f = 0; f < NF; f++)
        for (int t = 0; t < T; t++)
            if (epar_csv_append(forms, "ssddddidd", epar_exp_optimal_form_name(f), tn[t], am[f][t][EPAR_OPT_CONS],
                                asd[f][t][EPAR_OPT_CONS], am[f][t][EPAR_OPT_RANK], asd[f][t][EPAR_OPT_RANK], S,
                                res->se[f][t][EPAR_OPT_CONS], res->se[f][t][EPAR_OPT_RANK]))
                return EPAR_ENOMEM;
    for (int p = 0; p < 3; p++)
        for (int t = 0; t < T; t++) {
            char name[64];
            snprintf(name, sizeof name, "%s-%s", epar_exp_optimal_form_name(epar_exp_optimal_pairs[p][0]),
                     epar_exp_optimal_form_name(epar_exp_optimal_pairs[p][1]));
            const double *pd = res->pd[p][t];
            if (epar_csv_append(paired, "ssddddidd", tn[t], name, pd[0], pd[1], pd[2], pd[3], S, res->pd_se[p][t][0],
                                res->pd_se[p][t][1]))
                return EPAR_ENOMEM;
        }
    return EPAR_OK;
}

/* verification_report.txt: the reference's layout and verdict rule, then epar's notes */
static int opt_report(const struct epar_optimal_cfg *cfg, const struct epar_optimal_result *res, char **out)
{
    const struct epar_params *prm = &cfg->prm;
    int L = prm->length, D = prm->hidden, B = prm->batch, R = res->R, S = res->S, T = res->T, H = prm->heads,
        NF = EPAR_OPT_NFORMS, mf = res->main_form;
    const char *tn[EPAR_IMP_COUNT];
    for (int t = 0; t < T; t++) tn[t] = epar_imp_name(cfg->types[t]);
    const double (*am)[EPAR_IMP_COUNT][EPAR_OPT_NM] = res->am, (*asd)[EPAR_IMP_COUNT][EPAR_OPT_NM] = res->asd;
    const double (*stdm)[EPAR_OPT_NM] = res->stdm, maxdev = res->maxdev;
    const double (*pd)[EPAR_IMP_COUNT][4] = res->pd;
    char *rep = NULL;
    size_t replen = 0;
    FILE *f_rep = open_memstream(&rep, &replen);
    if (!f_rep) return EPAR_ENOMEM;
    fprintf(f_rep, "=== Optimal Position Formula Verification Report ===\n\n");
    fprintf(f_rep, "Core Formula: pos* = argmax_i \u03a3_j A_ij * I_j\nWhere:\n  - pos*: Optimal position\n"
                   "  - A_ij: Attention weight from position i to position j\n"
                   "  - I_j: Information importance at position j\n\n");
    for (int t = 0; t < T; t++) {
        const double *a = am[mf][t];
        fprintf(f_rep, "Information Type: %s\n", tn[t]);
        fprintf(f_rep, "  - Combined Consistency: %.4f \u00b1 %.4f\n", a[EPAR_OPT_CONS], stdm[t][EPAR_OPT_CONS]);
        fprintf(f_rep, "  - Proximity Score: %.4f \u00b1 %.4f\n", a[EPAR_OPT_PROX], stdm[t][EPAR_OPT_PROX]);
        fprintf(f_rep, "  - Score Similarity: %.4f \u00b1 %.4f\n", a[EPAR_OPT_SIM], stdm[t][EPAR_OPT_SIM]);
        fprintf(f_rep, "  - Ranking Correlation: %.4f \u00b1 %.4f\n", a[EPAR_OPT_RANK], stdm[t][EPAR_OPT_RANK]);
        fprintf(f_rep, "  - Position Score Mean: %.4f\n\n", a[EPAR_OPT_SCORE]);
    }
    fprintf(f_rep, "Overall Assessment:\n  - Average Consistency: %.4f\n  - Average Ranking Correlation: %.4f\n",
            res->avg_cons, res->avg_rank);
    fprintf(f_rep, "  - Verification Result: %s %s\n", res->verdict,
            strcmp(res->verdict, "Needs Improvement") ? "\u2713" : "\u2717");

    fprintf(f_rep, "\n=== epar notes (not part of the reference's report) ===\n\n");
    fprintf(f_rep, "Protocol: preset %s, form %s, alpha %g, beta %g, gamma %g, L=%d, hidden %d, heads %d, batch %d,\n"
                   "  %d runs per type, seeds", prm->preset, epar_posfx_form_name(prm->form), prm->alpha, prm->beta,
            prm->gamma, L, D, H, B, R);
    for (int s = 0; s < S; s++) fprintf(f_rep, "%s%lu", s ? "," : " ", prm->seeds[s]);
    fprintf(f_rep, ". One attention layer per seed (weights drawn once, as the\n"
                   "  reference builds one model), fresh X ~ N(0,1) and importance for every type and run.\n");
    fprintf(f_rep, "Values above: mean over the seeds of each seed's mean over its runs; \u00b1 is the run-to-run std\n"
                   "  (ddof=0) within a seed, averaged over the seeds (the reference's \u00b1, from one unseeded run).\n");
    fprintf(f_rep, "Verdict rule (the reference's): Excellent if average consistency > 0.7 and average ranking > 0.5;\n"
                   "  Good if > 0.5 and > 0.3; otherwise Needs Improvement.\n");
    fprintf(f_rep, "Verdict per seed:");
    for (int s = 0; s < S; s++)
        fprintf(f_rep, "%s %lu: %s (%.4f, %.4f)", s ? ";" : "", prm->seeds[s],
                epar_exp_optimal_verdict(res->seed_cons[s], res->seed_rank[s]), res->seed_cons[s], res->seed_rank[s]);
    fprintf(f_rep, "\n\nAcross-seed spread (sample sd over %d seeds) of the per-seed means:\n", S);
    for (int t = 0; t < T; t++)
        fprintf(f_rep, "  %-10s consistency %.4f \u00b1 %.4f   ranking %.4f \u00b1 %.4f\n", tn[t], am[mf][t][EPAR_OPT_CONS],
                asd[mf][t][EPAR_OPT_CONS], am[mf][t][EPAR_OPT_RANK], asd[mf][t][EPAR_OPT_RANK]);
    fprintf(f_rep, "\nWhat the metric measures: the \"actual\" position a = argmax_i (mean_j A_ij) I_i is argmax_i I_i,\n"
                   "  because every row of A is a softmax and sums to 1, so mean_j A_ij = 1/L for every i (largest\n"
                   "  measured |L mean_j A_ij - 1| over all items and forms: %.3g). The consistency therefore asks\n"
                   "  whether V = A I keeps the most important position on top; it does not compare two estimates\n"
                   "  of pos*. The ranking correlation is the Spearman correlation of V against I.\n", maxdev);
    fprintf(f_rep, "Ties: values equal to %g relative are ties; argmax takes the lowest index (the reference lets\n"
                   "  float noise decide), the ranking gives tied values their average rank. Sparse and clustered\n"
                   "  importance have exact ties, so small differences from the reference are expected there.\n",
            EPAR_METRIC_TIE_RTOL);
    fprintf(f_rep, "Ranking correlation NaN (constant V or I in an item) is skipped: %ld of %ld items (%s form).\n",
            res->nan_items[mf], res->items, epar_posfx_form_name(prm->form));
    fprintf(f_rep, "\nPaired forms (same weights, data and importance; alpha %g, beta %g, gamma %g), mean \u00b1 sd over seeds:\n",
            prm->alpha, prm->beta, prm->gamma);
    for (int t = 0; t < T; t++) {
        fprintf(f_rep, "  %-10s", tn[t]);
        for (int f = 0; f < NF; f++)
            fprintf(f_rep, "  %s: consistency %.4f \u00b1 %.4f, ranking %.4f \u00b1 %.4f%s", epar_exp_optimal_form_name(f),
                    am[f][t][EPAR_OPT_CONS], asd[f][t][EPAR_OPT_CONS], am[f][t][EPAR_OPT_RANK], asd[f][t][EPAR_OPT_RANK],
                    f + 1 < NF ? "\n            " : "\n");
        fprintf(f_rep, "            enhanced-basic: consistency %+.4f \u00b1 %.4f, ranking %+.4f \u00b1 %.4f\n",
                pd[0][t][0], pd[0][t][1], pd[0][t][2], pd[0][t][3]);
    }
    if (fclose(f_rep) != 0) { free(rep); return EPAR_ENOMEM; }
    *out = rep;
    return EPAR_OK;
}
/* ---- figures ---- */

/* gnuplot xtics for the type names at 0..T-1 */
static void type_tics(const struct epar_optimal_cfg *cfg, char *buf, size_t n)
{
    size_t l = (size_t)snprintf(buf, n, "set xtics (");
    for (int t = 0; t < cfg->n_types && l < n; t++)
        l += (size_t)snprintf(buf + l, n - l, "%s'%s' %d", t ? ", " : "", epar_imp_name(cfg->types[t]), t);
    if (l < n) snprintf(buf + l, n - l, ")\nset xrange [-0.6:%d.6]\n", cfg->n_types - 1);
}

/* one bar chart of a verification_summary.csv column (with across-seed error bars when sdcol > 0) and
 * value labels */
static void bars(char *buf, size_t n, const char *title, const char *ylabel, int col, int sdcol, const char *yrange,
                 int lt)
{
    char plot[640];
    if (sdcol)
        snprintf(plot, sizeof plot,
                 EPAR_PLOT_IF("'verification_summary.csv', '0:%d'")
                 "plot 'verification_summary.csv' skip 1 using 0:%d:(sd(%d)) with boxerrorbars lt %d notitle, \\\n"
                 "     '' skip 1 using 0:($%d >= 0 ? $%d + sd(%d) : $%d - sd(%d)):(sprintf('%%.3f', $%d)) with labels "
                 "offset 0,0.7 notitle" EPAR_PLOT_END,
                 col, col, sdcol, lt, col, col, sdcol, col, sdcol, col);
    else
        snprintf(plot, sizeof plot,
                 EPAR_PLOT_IF("'verification_summary.csv', '0:%d'")
                 "plot 'verification_summary.csv' skip 1 using 0:%d with boxes lt %d notitle, \\\n"
                 "     '' skip 1 using 0:%d:(sprintf('%%.3f', $%d)) with labels offset 0,0.7 notitle" EPAR_PLOT_END,
                 col, col, lt, col, col);
    snprintf(buf, n,
             "set title '%s'\nset ylabel '%s'\nset xlabel 'information type'\n%s"
             "set boxwidth 0.6\nset style fill solid 0.7 border lc rgb '#333333'\nunset key\n"
             "set errorbars lw 1.5 lc rgb '#222222'\n%s",
             title, ylabel, yrange, plot);
}

/* the tables, the text report and run.json */
static int opt_write_files(const struct epar_optimal_cfg *cfg, const struct epar_optimal_result *res,
                           struct epar_out *o, const char *protocol_path)
{
    const struct epar_params *prm = &cfg->prm;
    int st = EPAR_OK, T = cfg->n_types;
    struct epar_table *tab[OT_N] = {0};
    char *report = NULL;
    if (!(tab[OT_BY_SEED] = opt_by_seed(cfg, res))) st = EPAR_ENOMEM;
    if (!st) st = opt_tabulate(cfg, res, tab);
    if (!st) st = opt_report(cfg, res, &report);
    const struct epar_exp_file files[] = {
        {"consistency_by_seed.csv", tab[OT_BY_SEED]}, {"consistency.csv", tab[OT_CONS]},
        {"forms_comparison.csv", tab[OT_FORMS]}, {"forms_paired_difference.csv", tab[OT_PAIRED]},
        {"verification_summary.csv", tab[OT_SUMMARY]}, {"radar.csv", tab[OT_RADAR]}};
    if (!st) st = epar_exp_write_tables(o, files, sizeof files / sizeof files[0]);
    if (!st) st = epar_out_write_text(epar_out_path(o, "verification_report.txt"), report);
    for (int k = 0; k < OT_N; k++) epar_csv_free(tab[k]);
    free(report);
    if (st) return st;
    const char *names[EPAR_IMP_COUNT];
    for (int t = 0; t < T; t++) names[t] = epar_imp_name(cfg->types[t]);
    json_t *types = epar_fields_array(EPAR_FIELD_SLIST, names, T);
    json_t *extra = json_pack("{s:o, s:s, s:s, s:s, s:I, s:I, s:s, s:s}", "types", types, "main_form",
                              epar_posfx_form_name(prm->form), "weights", "one layer per seed (stream run 0)",
                              "streams", "data and importance: run id = type index * runs + run",
                              "ranking_nan_items", (json_int_t)res->nan_items[res->main_form], "items",
                              (json_int_t)res->items, "verdict", res->verdict, "ties",
                              "relative 1e-12; argmax lowest index; average ranks");
    if ((st = epar_exp_write_run_json(o, "optimal-position", protocol_path, prm, extra))) return st;

    return EPAR_OK;
}

/* the figure's common subtitle and the three y ranges of the bar charts */
struct opt_fig {
    char tics[1024], sub[256], yr01[1200], yr11[1200], yr0[1200];
};

static void opt_fig_init(struct opt_fig *g, const struct epar_optimal_cfg *cfg)
{
    const struct epar_params *prm = &cfg->prm;
    type_tics(cfg, g->tics, sizeof g->tics);
    snprintf(g->sub, sizeof g->sub, "%s form, L=%d, %d runs x %d seeds", epar_posfx_form_name(prm->form),
             prm->length, prm->runs, prm->n_seeds);
    snprintf(g->yr01, sizeof g->yr01, "%sset yrange [0:1.05]\n", g->tics);
    snprintf(g->yr11, sizeof g->yr11, "%sset yrange [-1:1]\nset xzeroaxis lt -1\n", g->tics);
    snprintf(g->yr0, sizeof g->yr0, "%sset yrange [0:*]\n", g->tics);
}

/* the bar charts per information type: four single ones, the standard deviations, the six-panel overview */
static int opt_write_bars(const struct opt_fig *g, struct epar_out *o)
{
    int st;
    char body[8192], title[512];
    const char *sub = g->sub, *yr01 = g->yr01, *yr11 = g->yr11, *yr0 = g->yr0;
    snprintf(title, sizeof title, "Formula consistency by information type (%s; bars: sd across seeds)", sub);
    bars(body, sizeof body, title, "consistency (score similarity + proximity)/2", 2, 3, yr01, 1);
    if ((st = epar_plot_script(o, "consistency_verification", "Consistency by information type", body))) return st;

    snprintf(title, sizeof title, "Ranking correlation (Spearman of V vs I) by information type (%s)", sub);
    bars(body, sizeof body, title, "ranking correlation", 4, 5, yr11, 3);
    if ((st = epar_plot_script(o, "ranking_correlation", "Ranking correlation by information type", body))) return st;

    snprintf(title, sizeof title, "Position score mean V = A I by information type (%s)", sub);
    bars(body, sizeof body, title, "mean of V(i) over positions and items", 6, 7, yr0, 2);
    if ((st = epar_plot_script(o, "position_score_analysis", "Position score mean", body))) return st;

    snprintf(title, sizeof title, "Comprehensive performance score 0.6 c + 0.2 (r+1) (%s)", sub);
    bars(body, sizeof body, title, "performance score", 10, 11, yr01, 4);
    if ((st = epar_plot_script(o, "comprehensive_performance_score", "Performance score", body))) return st;

    /* standard deviations over runs (ddof 0), averaged over the seeds */
    {
        char b1[3000], b2[3000];
        bars(b1, sizeof b1, "Consistency std over runs (ddof=0), mean over seeds", "standard deviation", 8, 0, yr0, 2);
        bars(b2, sizeof b2, "Ranking correlation std over runs (ddof=0), mean over seeds", "standard deviation", 9, 0,
             yr0, 1);
        snprintf(body, sizeof body, "set terminal @epar_term size 900,1000\nset multiplot layout 2,1 title '%s'\n%s%s"
                 "unset multiplot\n", sub, b1, b2);
        if ((st = epar_plot_script(o, "standard_deviation_analysis", "Standard deviations over runs", body))) return st;
    }

    /* the overview: six panels as the reference's verification_results.png */
    {
        char p[6][3000];
        bars(p[0], sizeof p[0], "Formula consistency", "consistency", 2, 3, yr01, 1);
        bars(p[1], sizeof p[1], "Ranking correlation", "ranking correlation", 4, 5, yr11, 3);
        bars(p[2], sizeof p[2], "Position score mean", "mean V", 6, 7, yr0, 2);
        bars(p[3], sizeof p[3], "Consistency std (runs)", "std", 8, 0, yr0, 4);
        bars(p[4], sizeof p[4], "Ranking correlation std (runs)", "std", 9, 0, yr0, 5);
        bars(p[5], sizeof p[5], "Performance 0.6c + 0.2(r+1)", "score", 10, 11, yr01, 6);
        char big[26000];
        snprintf(big, sizeof big,
                 "set terminal @epar_term size 1600,950\n"
                 "set multiplot layout 2,3 title 'Optimal position formula verification (%s; error bars: sd across seeds)'\n"
                 "%s%s%s%s%s%s unset multiplot\n", sub, p[0], p[1], p[2], p[3], p[4], p[5]);
        if ((st = epar_plot_script(o, "verification_results", "Verification results overview", big))) return st;
    }

    return EPAR_OK;
}

/* consistency against ranking (a scatter) and the radar of the four quantities */
static int opt_write_scatter_radar(const struct epar_optimal_cfg *cfg, const struct opt_fig *g, struct epar_out *o)
{
    int st, T = cfg->n_types;
    char body[8192];
    const char *sub = g->sub;
    /* consistency vs ranking: one point per type with across-seed error bars in both directions */
    snprintf(body, sizeof body,
             "set title 'Consistency vs ranking correlation (%s; bars: sd across seeds)'\n"
             "set xlabel 'consistency'\nset ylabel 'ranking correlation (Spearman of V vs I)'\n"
             "set xrange [0:1]\nset yrange [-1:1]\nset xzeroaxis lt -1\nunset key\n"
             "plot 'verification_summary.csv' skip 1 using 2:4:(sd(3)):(sd(5)) with xyerrorbars lt 1 pt 7 ps 1.2 notitle, \\\n"
             "     '' skip 1 using 2:($4 + (int($0)%%2 ? -0.07 : 0.07)):1 with labels notitle\n",
             sub);
    if ((st = epar_plot_script(o, "consistency_vs_ranking_correlation", "Consistency vs ranking correlation", body)))
        return st;

    /* radar: four quantities on [0,1], one closed polygon per type */
    {
        /* the key titles come from the type names */
        char words[256] = "";
        for (int t = 0; t < T; t++) {
            size_t l = strlen(words);
            snprintf(words + l, sizeof words - l, "%s%s", t ? " " : "", epar_imp_name(cfg->types[t]));
        }
        /* small multiples: one panel per type in its colour, the other types thin and grey behind it (five
         * polygons on one radar hid each other); the radial labels from 0.25 on, clear of the centre */
        int cols = T < 3 ? T : 3, rows = (T + cols - 1) / cols;
        int u = snprintf(body, sizeof body,
                 "set terminal @epar_term size %d,%d\n"
                 "set multiplot layout %d,%d title 'Information type comparison (%s): each type in colour, the "
                 "others in grey; performance = 0.6 c + 0.2 (r + 1)'\n"
                 "set polar\nset angles degrees\nset size square\nunset border\nunset xtics\nunset ytics\n"
                 "set raxis\nset grid polar 45 lt 1 lc rgb '#999999' lw 0.8 dt 3\nset rrange [0:1]\n"
                 "set rtics 0.25, 0.25, 1 format '%%.2f' scale 0.5 font ',8'\n"
                 "set ttics ('consistency' 45, 'ranking (r+1)/2' 315, 'mean V' 225, 'performance' 135) "
                 "font ',9'\nunset key\n",
                 420 * cols, 60 + 420 * rows, rows, cols, sub);
        for (int t = 0; t < T && u < (int)sizeof body; t++)
            u += snprintf(body + u, sizeof body - (size_t)u,
                          "set title '%s'\n"
                          "plot for [i=0:%d] 'radar.csv' skip 1 using (int($2)==i && i!=%d ? $4 : NaN):5 with lines "
                          "lc rgb '#bbbbbb' lw 1 notitle, \\\n"
                          "     'radar.csv' skip 1 using (int($2)==%d ? $4 : NaN):5 with linespoints lt %d lw 2.5 pt 7 "
                          "ps 1.0 notitle\n",
                          epar_imp_name(cfg->types[t]), T - 1, t, t, t + 1);
        if (u < (int)sizeof body) snprintf(body + u, sizeof body - (size_t)u, "unset multiplot\n");
        (void)words;
    }
    if ((st = epar_plot_script(o, "information_type_radar_comparison", "Radar comparison of the types", body)))
        return st;

    return EPAR_OK;
}

/* the paired forms (basic, enhanced, none) on the same weights, data and importance */
static int opt_write_forms(const struct epar_optimal_cfg *cfg, const struct opt_fig *g, struct epar_out *o)
{
    const struct epar_params *prm = &cfg->prm;
    int st, T = cfg->n_types, S = prm->n_seeds;
    char body[8192];
    const char *tics = g->tics;
    /* paired forms: grouped bars of consistency and ranking, error bars across seeds */
    {
        char panel[2][2500];
        const char *what[2] = {"consistency", "ranking correlation"};
        int c[2] = {3, 5};
        for (int k = 0; k < 2; k++)
            snprintf(panel[k], sizeof panel[k],
                     "set title '%s'\nset ylabel '%s'\nset xlabel 'information type'\n%s%s"
                     "set boxwidth 0.26\nset style fill solid 0.75 border lc rgb '#333333'\nset key top right\n"
                     "plot for [f=0:2] 'forms_comparison.csv' skip 1 using "
                     "(int($0)/%d==f ? int($0)%%%d + (f-1)*0.28 : NaN):%d:(sd(%d)) with boxerrorbars lt f+1 "
                     "title word('basic enhanced none', f+1)\n",
                     what[k], what[k], tics, k ? "set yrange [-1:1]\nset xzeroaxis lt -1\n" : "set yrange [0:1.1]\n",
                     T, T, c[k], c[k] + 1);
        snprintf(body, sizeof body,
                 "set terminal @epar_term size 1500,600\n"
                 "set multiplot layout 1,2 title 'Paired forms: same weights, data and importance ({/Symbol a}=%g, "
                 "{/Symbol b}=%g, {/Symbol g}=%g, L=%d, %d runs x %d seeds; bars: sd across seeds)'\n%s%s"
                 "unset multiplot\n",
                 prm->alpha, prm->beta, prm->gamma, prm->length, prm->runs, S, panel[0], panel[1]);
        if ((st = epar_plot_script(o, "forms_comparison", "Paired comparison of the position-effect forms", body)))
            return st;
    }
    return EPAR_OK;
}

int epar_exp_optimal_write(const struct epar_optimal_cfg *cfg, const struct epar_optimal_result *res,
                           struct epar_out *o, const char *protocol_path)
{
    struct opt_fig g;
    int st;
    if ((st = opt_write_files(cfg, res, o, protocol_path))) return st;
    opt_fig_init(&g, cfg);
    if ((st = opt_write_bars(&g, o))) return st;
    if ((st = opt_write_scatter_radar(cfg, &g, o))) return st;
    return opt_write_forms(cfg, &g, o);
}

