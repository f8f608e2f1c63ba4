/* compare, the writer: the tables epar_exp_compare_run built, run.json (how the timings were measured, every
 * mechanism's parameters) and one gnuplot script per figure. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "lib/err.h"
#include "lib/importance.h"
#include "lib/plot.h"
#include "common.h"
#include "compare.h"

/* run.json "timing": how the wall-clock columns were measured, and the sparse_speed.csv settings */
struct cmp_timing {
    char tm[1024], sp[1024];
};

static void cmp_timing_text(const struct epar_compare_cfg *cfg, struct cmp_timing *t)
{
    char *tm = t->tm, *sp = t->sp, ln[128] = "";
    for (int q = 0; q < cfg->n_speed; q++)
        snprintf(ln + strlen(ln), sizeof ln - strlen(ln), "%s%d", q ? ", " : "", cfg->speed_lengths[q]);
    snprintf(tm, sizeof t->tm,
             "mechanisms.csv time_us_per_row: wall time of the attention output O = A V of every head for one item "
             "(projections Q, K, V included), divided by heads x L; mask mechanisms on lib/sparse's structured "
             "kernels (the L x L matrix is never formed), the others through epar_mech_forward (A of every head) and "
             "one dgemm A_h V_h per head; per item one untimed warm-up call, then the fastest of %d calls; mean over "
             "items, then mean and sd over seeds; jobs run in parallel on --jobs threads, one BLAS thread each",
             cfg->speed_repeats);
    snprintf(sp, sizeof t->sp,
             "sparse_speed.csv: one head, d = %d, L = %s, one thread, Q, K, V ~ N(0,1); dense kernel "
             "epar_sparse_dense_fast (no mask: blocks of query rows, scores by dgemm, vector max and exp-sum, dgemm "
             "P V; its GFLOP/s against the double FMA peak measured once in the run) vs lib/sparse's structured kernel (tile %d rows; 0 = default), one "
             "untimed call each, then alternately %d timed calls each, the fastest counts; pair_bound = L^2 / the "
             "distinct allowed pairs", cfg->speed_head_dim, ln, cfg->speed_tile, cfg->speed_repeats);
}

/* run.json "mechanism_parameters": {"<id>": {"<param>": value, ...}, ..., "_not_run": [ids]} by rows over cfg->p */
struct cmp_not_run {
    const char *ids[EPAR_MECH_COUNT];
    int n;
};
static const struct epar_field cmp_not_run_fields[] = {
    {.key = "_not_run", .type = EPAR_FIELD_SLIST, .offset = offsetof(struct cmp_not_run, ids),
     .count_offset = offsetof(struct cmp_not_run, n), .max = EPAR_MECH_COUNT}, {0}};

static json_t *cmp_mech_json(const struct epar_compare_cfg *cfg)
{
    struct epar_field rows[EPAR_MECH_COUNT + 1], sub[EPAR_MECH_COUNT][EPAR_MECH_MAX_PARAMS + 1];
    struct cmp_not_run nr = {.n = 0};
    int K = cfg->n_mech;
    for (int k = 0; k < K; k++) {
        epar_exp_mech_param_rows(cfg->mech[k], sub[k]);
        rows[k] = (struct epar_field){.key = epar_mech_table[cfg->mech[k]].id, .type = EPAR_FIELD_OBJ,
                                      .offset = offsetof(struct epar_compare_cfg, p) + cfg->mech[k] * sizeof cfg->p[0],
                                      .sub = sub[k]};
    }
    rows[K] = (struct epar_field){0};
    for (int id = 0; id < EPAR_MECH_COUNT; id++) {   /* not selected, or dropped under --causal (look-ahead patterns) */
        int in = 0;
        for (int k = 0; k < K; k++) in |= (int)cfg->mech[k] == id;
        if (!in) nr.ids[nr.n++] = epar_mech_table[id].id;
    }
    json_t *m = epar_fields_json(rows, cfg, NULL);
    return m ? epar_fields_json(cmp_not_run_fields, &nr, m) : NULL;
}

/* run.json: every mechanism's parameters, the ones not run, the settings and the timing */
static int cmp_run_json(const struct epar_compare_cfg *cfg, struct epar_out *o, const char *protocol_path)
{
    const struct epar_params *prm = &cfg->prm;
    struct cmp_timing t;
    cmp_timing_text(cfg, &t);
    /* the preset's alpha, beta, gamma, form, temperature and score scale do not act here (every mechanism carries its
     * own parameters, scores are q.k/sqrt(head dim)), nor runs: "parameters" lists only what the run used */
    json_t *extra = json_pack("{s:b, s:i, s:i, s:o, s:f, s:i, s:i, s:o, s:s, s:s, s:{s:s, s:s}, s:o, s:i, s:i, s:i, "
                              "s:{s:s, s:i, s:i, s:i, s:i, s:o}}",
                              "causal", cfg->causal, "local_window", cfg->local_window, "extrapolation_length",
                              cfg->extrap_length, "extrapolation_factors",
                              epar_fields_array(EPAR_FIELD_ILIST, cfg->factors, cfg->n_factors), "ablation_beta",
                              cfg->ablation_beta, "table_length", cfg->table_length, "claims_length",
                              cfg->claims_length, "mechanism_parameters", cmp_mech_json(cfg), "score_scale",
                              "1/sqrt(head dim)", "position_embedding", "none (positions come only from the mechanism)",
                              "timing", "time_us_per_row", t.tm, "sparse_speed", t.sp, "speed_lengths",
                              epar_fields_array(EPAR_FIELD_ILIST, cfg->speed_lengths, cfg->n_speed), "speed_head_dim",
                              cfg->speed_head_dim, "speed_repeats", cfg->speed_repeats, "speed_tile", cfg->speed_tile,
                              "parameters", "preset", prm->preset, "length", prm->length, "hidden", prm->hidden,
                              "heads", prm->heads, "batch", prm->batch, "seeds",
                              epar_fields_array(EPAR_FIELD_LLIST, prm->seeds, prm->n_seeds));
    if (!extra) return epar_err_set(EPAR_ENOMEM, "out of memory building run.json");
    return epar_exp_write_run_json(o, "compare", protocol_path, prm, extra);
}

/* attention_<id>.csv and its heatmap, one per mechanism */
static int cmp_heatmaps(const struct epar_compare_cfg *cfg, const struct epar_compare_result *res, struct epar_out *o)
{
    const struct epar_params *prm = &cfg->prm;
    int st, L = prm->length, K = cfg->n_mech;
    char name[96], csv[96], title[256];
    for (int k = 0; k < K; k++) {
        const char *id = epar_mech_table[cfg->mech[k]].id;
        snprintf(name, sizeof name, "attention_%s", id);
        snprintf(csv, sizeof csv, "attention_%s.csv", id);
        if ((st = epar_exp_write_table(o, csv, res->heat[k]))) return st;
        snprintf(title, sizeof title, "%s: head-averaged attention (seed %lu, item 0, L=%d, %d heads%s)", id, prm->seeds[0], L,
                 prm->heads, cfg->causal ? ", causal" : "");
        if ((st = epar_exp_heatmap(o, name, title, csv, "key position j", "query position i", "attention weight"))) return st;
    }
    return EPAR_OK;
}

/* the comparison plots of mechanisms.csv: locality and entropy per mechanism */
static int cmp_plot_mechanisms(const struct epar_compare_cfg *cfg, struct epar_out *o)
{
    const struct epar_params *prm = &cfg->prm;
    int st, L = prm->length, K = cfg->n_mech;
    /* one row per mechanism, two panels: a dot chart never stacks 18 labels on one point, and its axes stay on the
     * values' own ranges (a distance >= 0, an entropy in [0, 1]) */
    if ((st = epar_plot_scriptf(o, "mechanisms_locality", "Mean attended distance and normalised entropy per mechanism",
                                "set terminal @epar_term size 1100,%d\n"
                                "set multiplot layout 1,2 title 'Locality per mechanism: mean +- sd over %d seeds, L=%d "
                                "(uniform attention: entropy 1)' noenhanced\n"
                                "unset key\nset yrange [%d:-1]\nset ytics font ',8' noenhanced\nset grid xtics ytics\n"
                                "set xlabel 'mean attended distance |i-j| (positions)'\nset xrange [0:*]\n"
                                EPAR_PLOT_IF("'mechanisms.csv', '9:0'")
                                "plot 'mechanisms.csv' skip 1 using 9:0:(sd(10)):ytic(1) with xerrorbars pt 7 ps 0.8 "
                                "lc rgb '#1f77b4'" EPAR_PLOT_END
                                "set xlabel 'normalised entropy H_i / ln|S_i|'\nset xrange [0:1.05]\n"
                                EPAR_PLOT_IF("'mechanisms.csv', '7:0'")
                                "plot 'mechanisms.csv' skip 1 using 7:0:(sd(8)):ytic(1) with xerrorbars pt 7 ps 0.8 "
                                "lc rgb '#d62728'" EPAR_PLOT_END
                                "unset multiplot\n",
                                170 + 20 * K, prm->n_seeds, L, K)))
        return st;
    return epar_plot_scriptf(o, "mechanisms_entropy", "Normalised entropy and local mass per mechanism",
                             "set terminal @epar_term size 1300,650\n"
                             "set title 'Per mechanism: normalised entropy and local mass W(|i-j|<=%d), mean +- sd over %d seeds (L=%d)'\n"
                             "set style data histograms\nset style histogram errorbars gap 1 lw 1\n"
                             "set style fill solid 0.8 border lc rgb '#333333'\n"
                             "set xtics rotate by -60 font ',8' noenhanced\nset ylabel 'value (0..1)'\nset yrange [0:1.05]\n"
                             "set key outside top center horizontal\n"
                             EPAR_PLOT_IF("'mechanisms.csv', '7'")
                             "plot 'mechanisms.csv' skip 1 using 7:(sd(8)):xtic(1) title 'normalised entropy' lc rgb '#1f77b4', \\\n"
                             "     '' skip 1 using 11:(sd(12)) title 'local mass' lc rgb '#d62728'" EPAR_PLOT_END,
                             cfg->local_window, prm->n_seeds, L);
}

/* consistency_matrix.csv (consistency.csv with numeric indices) and its heatmap with the names as tic labels */
static int cmp_plot_consistency(const struct epar_compare_cfg *cfg, const struct epar_compare_result *res,
                                struct epar_out *o)
{
    int st, K = cfg->n_mech;
    struct epar_table *cm = epar_csv_new("mechanism_index,importance_index,consistency");
    if (!cm) return EPAR_ENOMEM;
    for (size_t r2 = 0; r2 < res->consistency->nrows; r2++)
        if (epar_csv_append(cm, "iid", (int)(r2 / EPAR_IMP_COUNT), (int)(r2 % EPAR_IMP_COUNT),
                            epar_csv_get(res->consistency, r2, "consistency"))) { epar_csv_free(cm); return EPAR_ENOMEM; }
    st = epar_exp_write_table(o, "consistency_matrix.csv", cm);
    epar_csv_free(cm);
    if (st) return st;
    char tics[8192] = "set ytics (";
    for (int k = 0; k < K; k++)
        snprintf(tics + strlen(tics), sizeof tics - strlen(tics), "%s'%s' %d", k ? ", " : "", epar_mech_table[cfg->mech[k]].id, k);
    strcat(tics, ") font ',7'\nset xtics (");
    for (int ty = 0; ty < EPAR_IMP_COUNT; ty++)
        snprintf(tics + strlen(tics), sizeof tics - strlen(tics), "%s'%s' %d", ty ? ", " : "", epar_imp_name(ty), ty);
    strcat(tics, ")\n");
    return epar_plot_scriptf(o, "consistency", "Consistency per mechanism and importance type",
                             "set terminal @epar_term size 800,1000\n"
                             "set title 'Consistency (score similarity + proximity)/2, mean over %d seeds'\n"
                             "set xlabel 'importance type'\nset ylabel 'mechanism'\nset cblabel 'consistency'\n"
                             "@epar_heatmap\nset size noratio\n%sset autoscale xfix\nset autoscale yfix\n"
                             "eval epar_cells('consistency_matrix.csv', '2', '1', '3')\n",
                             cfg->prm.n_seeds, tics);
}

/* the reference curves: alibi_slopes.csv, t5_buckets.csv */
static int cmp_plot_curves(const struct epar_compare_cfg *cfg, struct epar_out *o)
{
    int st;
    if ((st = epar_plot_scriptf(o, "alibi_slopes", "ALiBi slopes per head",
                                "set title 'ALiBi slopes m_h (max bias %g) for 1..16 heads'\n"
                                "set xlabel 'head h'\nset ylabel 'slope m_h'\nset logscale y 2\nset key outside right\n"
                                "heads = '4 6 8 12 16'\nshown(n) = strstrt(' '.heads.' ', sprintf(' %%d ', int(n))) > 0\n"
                                EPAR_PLOT_IF("'alibi_slopes.csv', '(shown($1) ? $2 : NaN):3'")
                                "plot for [n in heads] 'alibi_slopes.csv' skip 1 using ($1==n+0 ? $2 : NaN):3 "
                                "with linespoints title sprintf('%%s heads', n)" EPAR_PLOT_END,
                                cfg->p[EPAR_MECH_ALIBI][0])))
        return st;
    return epar_plot_scriptf(o, "t5_buckets", "T5 relative buckets",
                             "set title 'T5 buckets vs relative distance i-j (max distance %d)'\n"
                             "set xlabel 'i - j (negative: key to the right of the query)'\nset ylabel 'bucket'\n"
                             "set key bottom right\n"
                             EPAR_PLOT_IF("'t5_buckets.csv', '1:2'")
                             "plot 't5_buckets.csv' skip 1 using ($5==0 ? $1 : NaN):2 with steps lt 1 lw 4 title "
                             "'unidirectional, 16 buckets (j > i maps to 0)', \\\n"
                             "     '' skip 1 using ($5==1 ? $1 : NaN):2 with steps lt 2 dt 2 title "
                             "'bidirectional, 32 buckets (same as unidirectional for i-j >= 0)'" EPAR_PLOT_END,
                             (int)cfg->p[EPAR_MECH_T5][1]);
}

/* ablation.csv and extrapolation.csv */
static int cmp_plot_studies(const struct epar_compare_cfg *cfg, struct epar_out *o)
{
    const struct epar_params *prm = &cfg->prm;
    int st, L = prm->length;
    if ((st = epar_plot_scriptf(o, "ablation", "Additive vs multiplicative x linear vs exponential",
                                "set terminal @epar_term size 1200,550\n"
                                "set multiplot layout 1,2 title 'Ablation (L=%d, beta=%g, ALiBi slopes for %d heads; mean +- sd over %d seeds)'\n"
                                "set style data histograms\nset style histogram errorbars gap 1 lw 1\n"
                                "set xtics rotate by -30 font ',8'\nset key top left\n"
                                "set ylabel 'value'\nset title 'locality'\n"
                                EPAR_PLOT_IF("'ablation.csv', '10'")
                                "plot 'ablation.csv' skip 1 using 10:(sd(11)):xtic(1) title 'local mass', '' skip 1 using 6:(sd(7)) title 'normalised entropy'"
                                EPAR_PLOT_END
                                "set title 'mass change on far keys (|i-j| > L/2) vs none, per row'\n"
                                "set ylabel 'change of attention mass'\n"
                                EPAR_PLOT_IF("'ablation.csv', '16'")
                                "plot 'ablation.csv' skip 1 using 16:(sd(17)):xtic(1) title 'keys with positive score', "
                                "'' skip 1 using 18:(sd(19)) title 'keys with negative score'" EPAR_PLOT_END
                                "unset multiplot\n",
                                L, cfg->ablation_beta, prm->heads, prm->n_seeds)))
        return st;
    return epar_plot_scriptf(o, "extrapolation", "Entropy and locality beyond the base length",
                             "set terminal @epar_term size 1300,550\n"
                             "set multiplot layout 1,2 title 'Extrapolation from L_0=%d (mean over %d seeds; dashed: with log-n)'\n"
                             "set logscale x 2\nset xlabel 'sequence length L'\nset key top left font ',8'\n"
                             "mech = 'rope ntk-rope interpolation alibi epar-enhanced'\n"
                             "shown(m) = strstrt(' '.mech.' ', ' '.m.' ') > 0\n"
                             "set ylabel 'normalised entropy'\nset title 'normalised entropy'\n"
                             EPAR_PLOT_IF("'extrapolation.csv', '(shown(strcol(1)) ? $3 : NaN):7'")
                             "plot for [i=1:5] 'extrapolation.csv' skip 1 using (strcol(1) eq word(mech,i) && $2==0 ? $3 : NaN):7 "
                             "with linespoints lt i title word(mech,i), \\\n"
                             "     for [i=1:5] '' skip 1 using (strcol(1) eq word(mech,i) && $2==1 ? $3 : NaN):7 "
                             "with linespoints lt i dt 2 notitle" EPAR_PLOT_END
                             "set ylabel 'local mass W(|i-j|<=%d)'\nset title 'local mass'\n"
                             EPAR_PLOT_IF("'extrapolation.csv', '(shown(strcol(1)) ? $3 : NaN):11'")
                             "plot for [i=1:5] 'extrapolation.csv' skip 1 using (strcol(1) eq word(mech,i) && $2==0 ? $3 : NaN):11 "
                             "with linespoints lt i title word(mech,i), \\\n"
                             "     for [i=1:5] '' skip 1 using (strcol(1) eq word(mech,i) && $2==1 ? $3 : NaN):11 "
                             "with linespoints lt i dt 2 notitle" EPAR_PLOT_END
                             "unset multiplot\n",
                             cfg->extrap_length, prm->n_seeds, cfg->local_window);
}

/* every table, run.json, then one .gp per figure */
int epar_exp_compare_write(const struct epar_compare_cfg *cfg, const struct epar_compare_result *res, struct epar_out *o,
                       const char *protocol_path)
{
    int st;
    const struct epar_exp_file files[] = {
        {"mechanisms.csv", res->mechanisms}, {"consistency.csv", res->consistency}, {"alibi_slopes.csv", res->alibi},
        {"t5_buckets.csv", res->t5}, {"fixed_patterns.csv", res->fixed}, {"masks.csv", res->masks},
        {"ablation.csv", res->ablation}, {"extrapolation.csv", res->extrapolation}, {"seed_checks.csv", res->checks},
        {"performer_error.csv", res->performer}, {"sparse_speed.csv", res->speed}};
    if ((st = epar_exp_write_tables(o, files, sizeof files / sizeof files[0]))) return st;
    if ((st = cmp_run_json(cfg, o, protocol_path))) return st;
    if ((st = cmp_heatmaps(cfg, res, o))) return st;
    if ((st = cmp_plot_mechanisms(cfg, o))) return st;
    if ((st = cmp_plot_consistency(cfg, res, o))) return st;
    if ((st = cmp_plot_curves(cfg, o))) return st;
    return cmp_plot_studies(cfg, o);
}
