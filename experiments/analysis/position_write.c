/* position-effect's writer: every table, run.json and figure of output/position/ from the numbers of a run
 * (experiments/analysis/position.c computes them). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "experiments/common.h"
#include "experiments/analysis/position.h"

/* properties.csv (property,measured,reference,pass,note) */
static struct epar_table *pos_properties_table(const struct epar_position_props *pp)
{
    static const char *const name[EPAR_POS_NPROP] = {
        "continuity_max_jump", "derivative_max_abs_error", "monotone_max_increment", "lower_bound",
        "bound_gap_in_sequence", "in_sequence_minimum", "retention_at_max_distance"};
    static const char *const verdict[] = {"pass", "fail", "n/a", "info"};
    char floor_note[160];
    snprintf(floor_note, sizeof floor_note,
             "minimum of P over distances 0..L-1 (at d=%d) vs P(L-1): the true floor of the matrix", pp->floor_d);
    const char *note[EPAR_POS_NPROP] = {
        "largest |P(d+h)-P(d)| on a 10000-step grid over [0, L-1] vs the Lipschitz bound |P'(0)| h",
        pp->derivative_exact ? "analytic dP/dd vs gsl_deriv_central at 201 points of [0, L-1] (exact)"
                             : "analytic dP/dd vs gsl_deriv_central at 201 points of [0, L-1]",
        pp->decays ? "max over d of P(d+1)-P(d); < 0 means strictly decreasing"
                   : "max over d of P(d+1)-P(d); beta = 0 or form none: P is constant",
        pp->form == EPAR_FORM_ENHANCED ? "in-sequence minimum P(L-1) vs the bound alpha/(1+gamma)"
        : pp->form == EPAR_FORM_BASIC  ? "in-sequence minimum P(L-1) vs the infimum 0 of the basic form"
                                       : "form none: P = 1",
        pp->decays ? "P(L-1) - infimum: > 0 means the bound is an infimum never reached inside a sequence"
                   : "beta = 0 or form none: P is constant, so its bound is attained everywhere",
        floor_note, "P(L-1)/P(0)"};
    struct epar_table *t = epar_csv_new("property,measured,reference,pass,note");
    for (int k = 0; t && k < EPAR_POS_NPROP; k++)
        if (epar_csv_append(t, "sddss", name[k], pp->measured[k], pp->reference[k], verdict[pp->verdict[k]], note[k])) {
            epar_csv_free(t);
            t = NULL;
        }
    return t;
}

/* wide tables of importance and scores per item: position, item_0 .. item_{B-1} (the header caps the items) */
static int pos_wide_tables(const struct epar_position_result *res, struct epar_table **imp, struct epar_table **sc)
{
    int L = res->L, B = res->B;
    char cols[4096] = "position";
    for (int b = 0; b < B && strlen(cols) < sizeof cols - 16; b++)
        snprintf(cols + strlen(cols), sizeof cols - strlen(cols), ",item_%d", b);
    *imp = epar_csv_new(cols);
    *sc = epar_csv_new(cols);
    if (!*imp || !*sc) return EPAR_ENOMEM;
    int nb = (*imp)->ncols - 1;
    for (int i = 0; i < L; i++) {
        if (epar_csv_append(*imp, "i", i) || epar_csv_append(*sc, "i", i)) return EPAR_ENOMEM;
        for (int b = 0; b < nb; b++) {
            (*imp)->cells[(size_t)i * (*imp)->ncols + 1 + b].v = res->I[(size_t)b * L + i];
            (*sc)->cells[(size_t)i * (*sc)->ncols + 1 + b].v = res->V[(size_t)b * L + i];
        }
    }
    return EPAR_OK;
}

/* attention_statistics.csv, position_attention.csv, position_effect_distance.csv */
static int pos_curve_tables(const struct epar_position_result *res, struct epar_table **stats,
                            struct epar_table **column, struct epar_table **distance)
{
    *stats = epar_csv_new("key,mean,std,max,min");
    *column = epar_csv_new("key,attention_received");
    *distance = epar_csv_new("distance,p_effect,basic,enhanced");
    if (!*stats || !*column || !*distance) return EPAR_ENOMEM;
    for (int j = 0; j < res->L; j++)
        if (epar_csv_append(*stats, "idddd", j, res->key_mean[j], res->key_sd[j], res->key_max[j], res->key_min[j]) ||
            epar_csv_append(*column, "id", j, res->key_mean[j]))
            return EPAR_ENOMEM;
    for (int d = 0; d < res->n_dist; d++) {
        const double *row = res->dist + 3 * (size_t)d;
        if (epar_csv_append(*distance, "iddd", d, row[0], row[1], row[2])) return EPAR_ENOMEM;
    }
    return EPAR_OK;
}

/* pos_star.csv and summary.csv */
static int pos_star_tables(const struct epar_params *prm, const struct epar_position_result *res,
                           struct epar_table **pos_star, struct epar_table **summary)
{
    int B = res->B, R = res->R, J = res->S * res->R, L = res->L;
    *pos_star = epar_csv_new("seed,run,item,pos_star,value_max");
    *summary = epar_csv_new("metric,value,note");
    if (!*pos_star || !*summary) return EPAR_ENOMEM;
    for (int j = 0; j < J; j++)
        for (int b = 0; b < B; b++)
            if (epar_csv_append(*pos_star, "iiiid", (int)prm->seeds[j / R], j % R, b, res->pos[(size_t)j * B + b],
                                res->vmax[(size_t)j * B + b]))
                return EPAR_ENOMEM;
    char note[160];
    snprintf(note, sizeof note, "rows of A sum to 1, so this is 1/L = %.12g by construction, not a measurement",
             1.0 / L);
    if (epar_csv_append(*summary, "sds", "pos_star_mean", res->pos_mean, "over every item of every run and seed") ||
        epar_csv_append(*summary, "sds", "pos_star_std", res->pos_std, "population std (ddof=0)") ||
        epar_csv_append(*summary, "sds", "pos_star_min", res->pos_min, "") ||
        epar_csv_append(*summary, "sds", "pos_star_max", res->pos_max, "") ||
        epar_csv_append(*summary, "sds", "pos_star_seed_sd", res->pos_seed_sd,
                        "sample sd across seeds of the per-seed mean") ||
        epar_csv_append(*summary, "sds", "items", (double)J * B, "seeds x runs x batch") ||
        epar_csv_append(*summary, "sds", "mean_attention_weight", res->mean_weight, note))
        return EPAR_ENOMEM;
    return EPAR_OK;
}

enum { T_P, T_ATT, T_CORR, T_AVG, T_IMP, T_SC, T_STATS, T_DIST, T_COL, T_STAR, T_SUM, T_PROP, T_N };

/* the tables and run.json */
static int pos_write_files(const struct epar_position_cfg *cfg, const struct epar_position_result *res,
                           struct epar_out *o, const char *protocol_path)
{
    const struct epar_params *prm = &cfg->prm;
    int L = res->L, st = EPAR_OK;
    struct epar_table *t[T_N] = {0};
    if (!(t[T_P] = epar_exp_matrix_table("query,key,p_effect", res->P, L, L)) ||
        !(t[T_ATT] = epar_exp_matrix_table("query,key,weight", res->A, L, L)) ||
        !(t[T_CORR] = epar_exp_matrix_table("query_i,query_j,correlation", res->C, L, L)) ||
        !(t[T_AVG] = epar_exp_matrix_table("query,key,weight", res->avg, L, L)) ||
        pos_wide_tables(res, &t[T_IMP], &t[T_SC]) || pos_curve_tables(res, &t[T_STATS], &t[T_COL], &t[T_DIST]) ||
        pos_star_tables(prm, res, &t[T_STAR], &t[T_SUM]) || !(t[T_PROP] = pos_properties_table(&res->props)))
        st = EPAR_ENOMEM;
    const struct epar_exp_file files[] = {
        {"position_effect_matrix.csv", t[T_P]}, {"attention_weights.csv", t[T_ATT]},
        {"position_correlation.csv", t[T_CORR]}, {"average_attention.csv", t[T_AVG]},
        {"information_importance.csv", t[T_IMP]}, {"position_scores.csv", t[T_SC]},
        {"attention_statistics.csv", t[T_STATS]}, {"position_effect_distance.csv", t[T_DIST]},
        {"position_attention.csv", t[T_COL]}, {"pos_star.csv", t[T_STAR]},
        {"summary.csv", t[T_SUM]}, {"properties.csv", t[T_PROP]}};
    if (!st) st = epar_exp_write_tables(o, files, sizeof files / sizeof files[0]);
    for (int k = 0; k < T_N; k++) epar_csv_free(t[k]);
    if (st) return st;
    json_t *extra = json_pack("{s:i, s:{s:I, s:i, s:i}}", "distance_curve", cfg->distance_curve, "figures_from",
                              "seed", (json_int_t)prm->seeds[0], "run", prm->runs - 1, "item", 0);
    if ((st = epar_exp_write_run_json(o, "position-effect", protocol_path, prm, extra))) return st;

    return EPAR_OK;
}

/* the four L x L heatmaps; `where` names the seed and run the figures show */
static int pos_write_heatmaps(const struct epar_params *prm, const char *where, struct epar_out *o)
{
    int st, L = prm->length, B = prm->batch;
    char title[256];
    const char *form = epar_posfx_form_name(prm->form);

    snprintf(title, sizeof title, "Attention weights A_{ij} (item 0, %s, %s form)", where, form);
    if ((st = epar_exp_heatmap(o, "attention_weights", title, "attention_weights.csv", "key position j",
                               "query position i", "attention weight")))
        return st;
    snprintf(title, sizeof title, "Position effect P(i,j) (%s, {/Symbol a}=%g, {/Symbol b}=%g, {/Symbol g}=%g, L=%d)",
             form, prm->alpha, prm->beta, prm->gamma, L);
    if ((st = epar_exp_heatmap(o, "position_effect_matrix", title, "position_effect_matrix.csv", "key position j",
                               "query position i", "P(i,j)")))
        return st;
    snprintf(title, sizeof title, "Position correlation of attention rows (over %d items, %s)", B, where);
    if ((st = epar_exp_heatmap(o, "position_correlation", title, "position_correlation.csv", "query position j",
                               "query position i", "Pearson correlation")))
        return st;
    snprintf(title, sizeof title, "Average attention over the batch (%d items, %s)", B, where);
    if ((st = epar_exp_heatmap(o, "average_attention", title, "average_attention.csv", "key position j",
                               "query position i", "mean attention weight")))
        return st;
    return EPAR_OK;
}

/* importance, scores with pos*, per-key statistics, the distance curve, attention received */
static int pos_write_curves(const struct epar_params *prm, const char *where, struct epar_out *o)
{
    int st, L = prm->length, B = prm->batch;
    const char *form = epar_posfx_form_name(prm->form);
    if ((st = epar_plot_scriptf(o, "information_importance", "Information importance I_j = ||x_j||",
                                "set title 'Information importance I_j = ||x_j||_2 (%s)'\n"
                                "set xlabel 'position j'\nset ylabel 'I_j (L2 norm of the input)'\n"
                                "set key outside right\n"
                                EPAR_PLOT_IF("'information_importance.csv', '1:2'")
                                "plot for [c=2:%d] 'information_importance.csv' skip 1 using 1:c with lines "
                                "title sprintf('item %%d', c-2)" EPAR_PLOT_END,
                                where, B + 1)))
        return st;
    if ((st = epar_plot_scriptf(o, "position_scores", "Position score V(i) with pos* marked",
                                "set title 'Position score V(i) = {/Symbol S}_j A_{ij} I_j, pos* marked (%s)'\n"
                                "set xlabel 'position i (query)'\nset ylabel 'position score V(i)'\nset xrange [0:%d]\n"
                                "set key outside right top nobox samplen 2 font ',9'\n"
                                EPAR_PLOT_IF("'position_scores.csv', '1:2'") "plot for [c=2:%d] 'position_scores.csv' skip 1 using 1:c with lines "
                                "title sprintf('item %%d', c-2), \\\n"
                                "     'pos_star.csv' skip 1 using (($1==%lu && $2==%d) ? $4 : NaN):5:($3+1) "
                                "with points pt 7 ps 1.6 lc variable title 'pos* (argmax)', \\\n"
                                "     '' skip 1 using (($1==%lu && $2==%d) ? $4 : NaN):5 with points pt 6 ps 1.7 "
                                "lc rgb 'black' notitle" EPAR_PLOT_END,
                                where, prm->length - 1, B + 1, prm->seeds[0], prm->runs - 1, prm->seeds[0],
                                prm->runs - 1)))
        return st;
    if ((st = epar_plot_scriptf(o, "attention_statistics", "Attention statistics per key position",
                                "set terminal @epar_term size 1100,800\n"
                                "set multiplot layout 2,2 title 'Attention received per key position, over "
                                "queries (item 0, %s)'\n"
                                "unset key\nset xlabel 'key position j'\n"
                                "set ylabel 'mean weight'\n" EPAR_PLOT_IF("'attention_statistics.csv', '1:2'")
                                "plot 'attention_statistics.csv' skip 1 using 1:2 with lines lt 1 notitle" EPAR_PLOT_END
                                "set ylabel 'std of weight'\n" EPAR_PLOT_IF("'attention_statistics.csv', '1:3'")
                                "plot 'attention_statistics.csv' skip 1 using 1:3 with lines lt 2 notitle" EPAR_PLOT_END
                                "set ylabel 'max weight'\n" EPAR_PLOT_IF("'attention_statistics.csv', '1:4'")
                                "plot 'attention_statistics.csv' skip 1 using 1:4 with lines lt 3 notitle" EPAR_PLOT_END
                                "set ylabel 'min weight'\n" EPAR_PLOT_IF("'attention_statistics.csv', '1:5'")
                                "plot 'attention_statistics.csv' skip 1 using 1:5 with lines lt 4 notitle" EPAR_PLOT_END
                                "unset multiplot\n",
                                where)))
        return st;
    if ((st = epar_plot_scriptf(o, "position_effect_distance", "Position effect vs distance, and P(i,j) as a heatmap",
                                "set terminal @epar_term size 1300,550\n"
                                "set multiplot layout 1,2 title 'Position effect ({/Symbol a}=%g, "
                                "{/Symbol b}=%g, {/Symbol g}=%g, L=%d)'\n"
                                "set xlabel 'distance |i-j| (positions)'\nset ylabel 'P(|i-j|)'\n"
                                "set key bottom left\n" EPAR_PLOT_IF("'position_effect_distance.csv', '1:2'")
                                "plot 'position_effect_distance.csv' skip 1 using 1:3 with linespoints lt 2 "
                                "title 'basic', '' skip 1 using 1:4 with linespoints lt 1 title 'enhanced', "
                                "'' skip 1 using 1:2 with points pt 6 ps 1.4 lc rgb 'black' title 'this run (%s)'" EPAR_PLOT_END
                                "set title 'P(i,j) over all query-key pairs'\nset xlabel 'key position j'\n"
                                "set ylabel 'query position i'\nset cblabel 'P(i,j)'\n@epar_heatmap\n"
                                "set autoscale xfix\nset autoscale yfix\n"
                                "eval epar_cells('position_effect_matrix.csv', '2', '1', '3')\n"
                                "unset multiplot\n",
                                prm->alpha, prm->beta, prm->gamma, L, form)))
        return st;
    if ((st = epar_plot_scriptf(o, "position_attention", "Attention received per key position",
                                "set terminal @epar_term size 1300,550\n"
                                "set multiplot layout 1,2 title 'Position attention (item 0, %s)'\n"
                                "set xlabel 'key position j'\nset ylabel 'mean attention received'\n"
                                EPAR_PLOT_IF("'position_attention.csv', '1:2'")
                                "plot 'position_attention.csv' skip 1 using 1:2 with lines lt 1 notitle" EPAR_PLOT_END
                                "set xlabel 'key position j'\nset ylabel 'query position i'\n"
                                "set cblabel 'attention weight'\n@epar_heatmap\n"
                                "set autoscale xfix\nset autoscale yfix\n"
                                "eval epar_cells('attention_weights.csv', '2', '1', '3')\n"
                                "unset multiplot\n",
                                where)))
        return st;
    return EPAR_OK;
}

int epar_exp_position_write(const struct epar_position_cfg *cfg, const struct epar_position_result *res,
                            struct epar_out *o, const char *protocol_path)
{
    const struct epar_params *prm = &cfg->prm;
    int st;
    if ((st = pos_write_files(cfg, res, o, protocol_path))) return st;
    char where[128];
    snprintf(where, sizeof where, "seed %lu, run %d", prm->seeds[0], prm->runs - 1);
    if ((st = pos_write_heatmaps(prm, where, o))) return st;
    return pos_write_curves(prm, where, o);
}

