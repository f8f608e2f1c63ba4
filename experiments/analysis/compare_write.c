/* compare, the writer: the tables epar_exp_compare_run built, run.json (how the timings were measured, every
 * mechanism's parameters) and one gnuplot script per figure. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "lib/err.h"
#include "lib/importance.h"
#include "lib/plot.h"
#include "experiments/common.h"
#include "experiments/analysis/compare.h"

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
             "epar_sparse_dense_fast (no mask: blocks of query rows, scores by lib/sparse's register tiles over K "
             "packed once (dgemm without AVX2), vector max and exp-sum, P V the same way; its GFLOP/s against the double FMA peak measured once in the run) vs lib/sparse's structured kernel (tile %d rows; 0 = default), one "
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
        rows[k] = (struct epar_field){.key = epar_mech_row(cfg->mech[k])->id, .type = EPAR_FIELD_OBJ,
                                      .offset = offsetof(struct epar_compare_cfg, p) + cfg->mech[k] * sizeof cfg->p[0],
                                      .sub = sub[k]};
    }
    rows[K] = (struct epar_field){0};
    for (int id = 0; id < EPAR_MECH_COUNT; id++) {   /* not selected, or dropped under --causal (look-ahead patterns) */
        int in = 0;
        for (int k = 0; k < K; k++) in |= (int)cfg->mech[k] == id;
        if (!in && !epar_mech_trained_only((enum epar_mech_id)id)) nr.ids[nr.n++] = epar_mech_row(id)->id;
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
        const char *id = epar_mech_row(cfg->mech[k])->id;
        snprintf(name, sizeof name, "attention_%s", id);
        snprintf(csv, sizeof csv, "attention_%s.csv", id);
        struct epar_table *heat = epar_exp_matrix_table("query,key,weight", res->heat + (size_t)k * L * L, L, L);
        if (!heat) return EPAR_ENOMEM;
        st = epar_exp_write_table(o, csv, heat);
        epar_csv_free(heat);
        if (st) return st;
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
    for (size_t r2 = 0; r2 < (size_t)res->K * EPAR_IMP_COUNT; r2++)
        if (epar_csv_append(cm, "iid", (int)(r2 / EPAR_IMP_COUNT), (int)(r2 % EPAR_IMP_COUNT), res->cons[r2])) {
            epar_csv_free(cm);
            return EPAR_ENOMEM;
        }
    st = epar_exp_write_table(o, "consistency_matrix.csv", cm);
    epar_csv_free(cm);
    if (st) return st;
    char tics[8192] = "set ytics (";
    for (int k = 0; k < K; k++)
        snprintf(tics + strlen(tics), sizeof tics - strlen(tics), "%s'%s' %d", k ? ", " : "", epar_mech_row(cfg->mech[k])->id, k);
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
                             "set logscale x 2\nset xlabel 'sequence length L (tokens)'\nset key outside right top font ',8'\n"
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

/* ---- the tables ---- */

enum { CT_MECH, CT_CONS, CT_ALIBI, CT_T5, CT_FIXED, CT_MASKS, CT_ABL, CT_EXTRAP, CT_CHECKS, CT_PERF, CT_SPEED, CT_N };

/* mechanisms.csv (mean and sd over seeds of every metric), consistency.csv */
static int cmp_mechanism_tables(const struct epar_compare_cfg *cfg, const struct epar_compare_result *res,
                                struct epar_table **tab)
{
    int K = res->K;
    char cols[4096] = "mechanism,kind,empty_rows,empty_rows_sd,entropy,entropy_sd,normalised_entropy,normalised_entropy_sd,"
                      "mean_distance,mean_distance_sd,local_mass,local_mass_sd,sparsity,sparsity_sd,retention_mid,"
                      "retention_mid_sd,retention_max,retention_max_sd,distance_mi,distance_mi_sd";
    for (int t = 0; t < EPAR_IMP_COUNT; t++)
        snprintf(cols + strlen(cols), sizeof cols - strlen(cols), ",consistency_%s,consistency_%s_sd", epar_imp_name(t),
                 epar_imp_name(t));
    for (int t = 0; t < EPAR_IMP_COUNT; t++)
        snprintf(cols + strlen(cols), sizeof cols - strlen(cols), ",ranking_%s,ranking_%s_sd", epar_imp_name(t),
                 epar_imp_name(t));
    strcat(cols, ",ranking_nan_items,flops_per_row,time_us_per_row,time_us_per_row_sd");
    struct epar_table *t = tab[CT_MECH] = epar_csv_new(cols);
    struct epar_table *cons = tab[CT_CONS] = epar_csv_new("mechanism,importance,consistency,consistency_sd,ranking,ranking_sd");
    if (!t || !cons) return EPAR_ENOMEM;
    static const int order[] = {EPAR_CMP_EMPTY, EPAR_CMP_ENT, EPAR_CMP_NENT, EPAR_CMP_DIST, EPAR_CMP_LOCAL,
                                EPAR_CMP_SPARS, EPAR_CMP_RMID, EPAR_CMP_RMAX, EPAR_CMP_MI};
    for (int k = 0; k < K; k++) {
        const struct epar_mech_info *in = epar_mech_row(cfg->mech[k]);
        const double *m = res->mean + (size_t)k * EPAR_CMP_NM, *sd = res->sd + (size_t)k * EPAR_CMP_NM;
        if (epar_csv_append(t, "ss", in->id, epar_mech_kind_name(in->kind))) return EPAR_ENOMEM;
        struct epar_cell *cell = t->cells + (t->nrows - 1) * t->ncols;
        int col = 2;
        for (size_t o = 0; o < sizeof order / sizeof order[0]; o++, col += 2) {
            cell[col].v = m[order[o]];
            cell[col + 1].v = sd[order[o]];
        }
        for (int q = EPAR_CMP_CONS; q < EPAR_CMP_TIME; q++, col += 2) {
            cell[col].v = m[q];
            cell[col + 1].v = sd[q];
        }
        cell[col++].v = res->nan_items[k];
        cell[col++].v = res->flops[k];
        cell[col].v = m[EPAR_CMP_TIME];
        cell[col + 1].v = sd[EPAR_CMP_TIME];
        for (int ty = 0; ty < EPAR_IMP_COUNT; ty++) {
            size_t q = (size_t)k * EPAR_IMP_COUNT + ty;
            if (epar_csv_append(cons, "ssdddd", in->id, epar_imp_name(ty), res->cons[q], res->cons_sd[q], res->rank[q],
                                res->rank_sd[q]))
                return EPAR_ENOMEM;
        }
    }
    return EPAR_OK;
}

/* alibi_slopes.csv, t5_buckets.csv, fixed_patterns.csv, masks.csv */
static int cmp_pattern_tables(const struct epar_compare_cfg *cfg, const struct epar_compare_result *res,
                              struct epar_table **tab)
{
    struct epar_table *al = tab[CT_ALIBI] = epar_csv_new("heads,head,slope");
    struct epar_table *t5 = tab[CT_T5] = epar_csv_new("distance,bucket,num_buckets,max_distance,bidirectional");
    struct epar_table *fx = tab[CT_FIXED] = epar_csv_new("mechanism,pattern,query,key,weight");
    struct epar_table *mk = tab[CT_MASKS] = epar_csv_new("mechanism,mask,query,key");
    if (!al || !t5 || !fx || !mk) return EPAR_ENOMEM;
    for (int n = 1; n <= 16; n++)
        for (int h = 0; h < n; h++)
            if (epar_csv_append(al, "iid", n, h, res->alibi_slope[n - 1][h])) return EPAR_ENOMEM;
    int maxd = res->t5_max_distance;
    for (int d = 0; d <= 256; d++)
        if (epar_csv_append(t5, "iiiii", d, res->t5_uni[d], 16, maxd, 0)) return EPAR_ENOMEM;
    for (int d = -256; d <= 256; d++)
        if (epar_csv_append(t5, "iiiii", d, res->t5_bi[d + 256], 32, maxd, 1)) return EPAR_ENOMEM;
    int Lt = res->table_length, L = res->L;
    for (int f = 0; f < EPAR_CMP_NFIXED; f++) {
        const double *W = res->fixed + (size_t)f * Lt * Lt;
        for (int i = 0; i < Lt; i++)
            for (int j = 0; j < Lt; j++)
                if (epar_csv_append(fx, "siiid", epar_mech_row(EPAR_MECH_FIXED_CURRENT + f)->id,
                                    epar_compare_fixed_pattern[f], i, j, W[(size_t)i * Lt + j]))
                    return EPAR_ENOMEM;
    }
    for (int k = 0; k < res->K; k++)
        for (int pass = 0; pass < res->n_masks[k]; pass++) {
            const unsigned char *M = res->masks + ((size_t)res->mask_slot[k] * 2 + pass) * L * L;
            const char *mn = res->n_masks[k] == 2 ? (pass ? "step" : "local") : "mask";
            for (int i = 0; i < L; i++)
                for (int j = 0; j < L; j++)
                    if (M[(size_t)i * L + j] && epar_csv_append(mk, "ssii", epar_mech_row(cfg->mech[k])->id, mn, i, j))
                        return EPAR_ENOMEM;
        }
    return EPAR_OK;
}

/* ablation.csv, extrapolation.csv, performer_error.csv */
static int cmp_study_tables(const struct epar_compare_cfg *cfg, const struct epar_compare_result *res,
                            struct epar_table **tab)
{
    char acols[2048] = "design,score_combination,distance_function,entropy,entropy_sd,normalised_entropy,"
                       "normalised_entropy_sd,mean_distance,mean_distance_sd,local_mass,local_mass_sd,"
                       "retention_mid,retention_mid_sd,retention_max,retention_max_sd,"
                       "far_mass_change_positive_scores,far_mass_change_positive_scores_sd,"
                       "far_mass_change_negative_scores,far_mass_change_negative_scores_sd,"
                       "far_negative_pairs_gaining,far_negative_pairs_gaining_sd";
    for (int pass = 0; pass < 2; pass++)
        for (int ty = 0; ty < EPAR_IMP_COUNT; ty++)
            snprintf(acols + strlen(acols), sizeof acols - strlen(acols), ",%s_%s,%s_%s_sd",
                     pass ? "ranking" : "consistency", epar_imp_name(ty), pass ? "ranking" : "consistency",
                     epar_imp_name(ty));
    struct epar_table *ab = tab[CT_ABL] = epar_csv_new(acols);
    struct epar_table *ex = tab[CT_EXTRAP] = epar_csv_new(
        "mechanism,logn,length,scale,entropy,entropy_sd,normalised_entropy,normalised_entropy_sd,mean_distance,"
        "mean_distance_sd,local_mass,local_mass_sd,note");
    struct epar_table *pf = tab[CT_PERF] = epar_csv_new("seed,features,orthogonal,max_abs_error,mean_row_kl");
    if (!ab || !ex || !pf) return EPAR_ENOMEM;
    static const char *const comb[EPAR_CMP_NAB] = {"none", "additive", "additive", "multiplicative", "multiplicative"};
    static const char *const fun[EPAR_CMP_NAB] = {"none", "linear", "exponential", "linear", "exponential"};
    for (int a = 0; a < EPAR_CMP_NAB; a++) {
        if (epar_csv_append(ab, "sss", epar_compare_ablation_name[a], comb[a], fun[a])) return EPAR_ENOMEM;
        struct epar_cell *cell = ab->cells + (ab->nrows - 1) * ab->ncols;
        for (int q = 0; q < EPAR_CMP_NAM; q++) {
            cell[3 + 2 * q].v = res->ab_mean[a][q];
            cell[4 + 2 * q].v = res->ab_sd[a][q];
        }
    }
    int NF = res->n_factors;
    for (int e = 0; e < EPAR_CMP_NEXTRAP; e++)
        for (int lg = 0; lg < 2; lg++)
            for (int f = 0; f < NF; f++) {
                int row = (e * 2 + lg) * NF + f;
                if (epar_csv_append(ex, "siii--------s", epar_mech_row(epar_compare_extrap_mech[e])->id, lg,
                                    cfg->extrap_length * cfg->factors[f], cfg->factors[f], res->ex_note[row]))
                    return EPAR_ENOMEM;
                struct epar_cell *cell = ex->cells + (ex->nrows - 1) * ex->ncols;
                for (int q = 0; q < 4; q++) {
                    cell[4 + 2 * q].v = res->ex_mean[(size_t)row * 4 + q];
                    cell[5 + 2 * q].v = res->ex_sd[(size_t)row * 4 + q];
                }
            }
    for (int s = 0; s < res->S; s++)
        if (epar_csv_append(pf, "iiidd", (int)cfg->prm.seeds[s], (int)cfg->p[EPAR_MECH_PERFORMER][0],
                            (int)cfg->p[EPAR_MECH_PERFORMER][1], res->performer[(size_t)s * 2],
                            res->performer[(size_t)s * 2 + 1]))
            return EPAR_ENOMEM;
    return EPAR_OK;
}

/* seed_checks.csv and sparse_speed.csv */
static int cmp_check_tables(const struct epar_compare_result *res, struct epar_table **tab)
{
    struct epar_table *ck = tab[CT_CHECKS] = epar_csv_new("check,value,reference,se,trials,detail");
    struct epar_table *sp = tab[CT_SPEED] = epar_csv_new(
        "mechanism,L,d,pairs,dense_us,sparse_us,speedup,pair_bound,fraction_of_bound,dense_gflops,fma_peak_gflops,"
        "dense_fraction_of_peak");
    if (!ck || !sp) return EPAR_ENOMEM;
    for (size_t r = 0; r < res->checks.n; r++) {
        const struct epar_compare_check *c = &res->checks.row[r];
        if (epar_csv_append(ck, "sdddds", c->check, c->value, c->reference, c->se, c->trials, c->detail)) return EPAR_ENOMEM;
    }
    for (int r = 0; r < res->speed.n; r++) {
        const struct epar_compare_speed_row *w = &res->speed.row[r];
        if (epar_csv_append(sp, "siiiddddddddd", epar_mech_row(w->id)->id, w->L, w->d, (int)w->pairs, w->dense_us,
                            w->sparse_us, w->speedup, w->pair_bound, w->fraction_of_bound, w->dense_gflops,
                            w->fma_peak_gflops, w->dense_fraction_of_peak))
            return EPAR_ENOMEM;
    }
    return EPAR_OK;
}

/* every table, run.json, then one .gp per figure */
int epar_exp_compare_write(const struct epar_compare_cfg *cfg, const struct epar_compare_result *res, struct epar_out *o,
                       const char *protocol_path)
{
    int st = EPAR_OK;
    struct epar_table *t[CT_N] = {0};
    if (!st) st = cmp_mechanism_tables(cfg, res, t);
    if (!st) st = cmp_pattern_tables(cfg, res, t);
    if (!st) st = cmp_study_tables(cfg, res, t);
    if (!st) st = cmp_check_tables(res, t);
    const struct epar_exp_file files[] = {
        {"mechanisms.csv", t[CT_MECH]}, {"consistency.csv", t[CT_CONS]}, {"alibi_slopes.csv", t[CT_ALIBI]},
        {"t5_buckets.csv", t[CT_T5]}, {"fixed_patterns.csv", t[CT_FIXED]}, {"masks.csv", t[CT_MASKS]},
        {"ablation.csv", t[CT_ABL]}, {"extrapolation.csv", t[CT_EXTRAP]}, {"seed_checks.csv", t[CT_CHECKS]},
        {"performer_error.csv", t[CT_PERF]}, {"sparse_speed.csv", t[CT_SPEED]}};
    if (!st) st = epar_exp_write_tables(o, files, sizeof files / sizeof files[0]);
    for (int k = 0; k < CT_N; k++) epar_csv_free(t[k]);
    if (st) return st;
    if ((st = cmp_run_json(cfg, o, protocol_path))) return st;
    if ((st = cmp_heatmaps(cfg, res, o))) return st;
    if ((st = cmp_plot_mechanisms(cfg, o))) return st;
    if ((st = cmp_plot_consistency(cfg, res, o))) return st;
    if ((st = cmp_plot_curves(cfg, o))) return st;
    return cmp_plot_studies(cfg, o);
}
