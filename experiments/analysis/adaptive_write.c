/* Experiment 4, the writer: every table from the numbers epar_exp_adaptive_run measured, run.json and one gnuplot
 * script per figure (the attention of the figures' item, the distributions, the task and content types, the
 * alpha x beta grid, the when-to-use sweep). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "lib/plot.h"
#include "experiments/common.h"
#include "experiments/analysis/adaptive.h"

/* "set xtics ('0.5' 0, '1' 1, ...)" for the index axis of a grid heatmap */
static void index_tics(char *buf, size_t n, const char *axis, const double *v, int nv)
{
    size_t len = (size_t)snprintf(buf, n, "set %s (", axis);
    for (int i = 0; i < nv && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s'%g' %d", i ? ", " : "", v[i], i);
    if (len < n) snprintf(buf + len, n - len, ")\n");
}

static int grid_heatmap(struct epar_out *o, const struct epar_adaptive_cfg *cfg, const char *name, const char *title,
                        int col, const char *cblabel, const char *fmt)
{
    char xt[4096], yt[4096];
    index_tics(xt, sizeof xt, "xtics", cfg->grid_beta, cfg->n_grid_beta);
    index_tics(yt, sizeof yt, "ytics", cfg->grid_alpha, cfg->n_grid_alpha);
    int image = cfg->n_grid_beta > 1 && cfg->n_grid_alpha > 1;   /* gnuplot draws no image under 2 x 2: cell by cell */
    return epar_plot_scriptf(o, name, title,
                             "set title '%s'\n"
                             "set xlabel '{/Symbol b} (decay)'\nset ylabel '{/Symbol a} (strength)'\n"
                             "set cblabel '%s'\n"
                             "unset key\nset view map\nset tics out\nunset grid\n"
                             "%s%s"
                             "set xrange [-0.5:%d-0.5]\nset yrange [-0.5:%d-0.5]\n"
                             "plot 'sensitivity_grid.csv' skip 1 using 4:3:%s%d with %s, \\\n"
                             "     '' skip 1 using 4:3:(sprintf('%s', $%d)) with labels tc rgb 'white' font ',8'\n",
                             title, cblabel, xt, yt, cfg->n_grid_beta, cfg->n_grid_alpha, image ? "" : "(0.5):(0.5):", col,
                             image ? "image" : "boxxyerror fs solid noborder fc palette", fmt, col);
}

/* what the figure steps share: the figures' item, the form and the histogram preambles */
struct adp_fig {
    const struct epar_adaptive_cfg *cfg;
    const struct epar_params *prm;
    int L;
    const char *form;
    char where[128];
    char h_tw[512], h_ci[512], h_en[512];   /* bins for task weights, content importance, row entropy */
};

/* run.json: the common fields and the modules, grid and when-to-use settings */
static int write_run_json(const struct epar_adaptive_cfg *cfg, struct epar_out *o, const char *protocol_path)
{
    const struct epar_params *prm = &cfg->prm;
    json_t *ga = epar_fields_array(EPAR_FIELD_DLIST, cfg->grid_alpha, cfg->n_grid_alpha);
    json_t *gb = epar_fields_array(EPAR_FIELD_DLIST, cfg->grid_beta, cfg->n_grid_beta);
    json_t *wl = epar_fields_array(EPAR_FIELD_ILIST, cfg->when_lengths, cfg->n_when);
    json_t *extra = json_pack(
        "{s:{s:i, s:i, s:i, s:f, s:b, s:s}, s:{s:o, s:o, s:i, s:i, s:i, s:i, s:b, s:s}, "
        "s:{s:o, s:i, s:i, s:i, s:f, s:f, s:s, s:s}, s:{s:I, s:i, s:i}}",
        "modules", "tasks", cfg->tasks, "task_embedding", cfg->task_dim, "content_types", cfg->content_types,
        "dropout", cfg->dropout, "dropout_in_main", 0,
        "note", "untrained PyTorch-default initialisation; task classifier shape Linear(D,D/2)-ReLU-Linear(D/2,tasks) "
                "is assumed (not given by the reference description)",
        "grid", "alpha", ga, "beta", gb, "length", cfg->grid_length, "hidden", cfg->grid_hidden, "batch",
        cfg->grid_batch, "runs", cfg->grid_runs, "dropout_active", cfg->dropout_in_grid && cfg->dropout > 0,
        "design", "one draw of weights and data per seed and run, shared by every cell (paired); one head",
        "when_to_use", "lengths", wl, "hidden", cfg->when_hidden, "batch", cfg->when_batch, "local_window",
        cfg->when_window, "noise_sd", cfg->when_noise_sd, "content_corr", cfg->when_content_corr,
        "model", "plain EPAR layer (x = X + E, single head, scores / sqrt(hidden)); forms none/basic/enhanced on "
                 "identical weights and data",
        "importance", "structured 0.5 + 0.5 sin(2 pi j / L), min-max normalised; moves with its token when shuffled",
        "figures_from", "seed", (json_int_t)prm->seeds[0], "run", prm->runs - 1, "item", 0);
    return epar_exp_write_run_json(o, "adaptive", protocol_path, prm, extra);
}

/* the figures' item (first seed, last run, item 0) and the histogram bins, shared by several figures */
static void fig_setup(struct adp_fig *f, const struct epar_adaptive_cfg *cfg)
{
    const struct epar_params *prm = f->prm = &cfg->prm;
    f->cfg = cfg;
    f->L = prm->length;
    snprintf(f->where, sizeof f->where, "seed %lu, run %d, item 0", prm->seeds[0], prm->runs - 1);
    f->form = epar_posfx_form_name(prm->form);
    const char *hist =
        "undefine STATS_*\nstats [*:*][*:*] '%s' skip 1 using %d nooutput\n"
        "bw = exists('STATS_max') ? (STATS_max - STATS_min) / 40.0 : 0\nif (bw <= 0) bw = 1e-3\n"
        "bin(x) = bw * floor(x / bw) + bw / 2\nset boxwidth bw * 0.9\n";
    snprintf(f->h_tw, sizeof f->h_tw, hist, "task_weights.csv", 6);
    snprintf(f->h_ci, sizeof f->h_ci, hist, "content_importance.csv", 5);
    snprintf(f->h_en, sizeof f->h_en, hist, "entropy_by_row.csv", 5);
}

/* attention_weights (the figures' item) and the six-panel adaptive_summary */
static int fig_summary(const struct adp_fig *f, struct epar_out *o)
{
    const struct epar_adaptive_cfg *cfg = f->cfg;
    const struct epar_params *prm = f->prm;
    int L = f->L;
    const char *form = f->form, *where = f->where;
    const char *h_tw = f->h_tw, *h_ci = f->h_ci, *h_en = f->h_en;
    char title[512];
    int st;
    snprintf(title, sizeof title, "Adaptive attention weights (%s, %s form, L=%d)", where, form, L);
    if ((st = epar_exp_heatmap(o, "attention_weights", title, "attention_weights.csv", "key position j",
                               "query position i", "attention weight")))
        return st;
    if ((st = epar_plot_scriptf(o, "adaptive_summary", "Adaptive attention: six-panel summary",
                                "set terminal @epar_term size 1500,900\n"
                                "set multiplot layout 2,3 spacing 0.09,0.12 title 'Adaptive attention (untrained modules, %s form, "
                                "L=%d, %d seeds x %d runs x %d items)'\n"
                                "set title 'attention weights (%s; colour: weight)'\nset xlabel 'key position j'\n"
                                "set ylabel 'query position i'\nunset cblabel\n@epar_heatmap\nset autoscale xfix\n"
                                "set autoscale yfix\n"
                                "eval epar_cells('attention_weights.csv', '2', '1', '3')\n"
                                "unset view\nset size noratio\nset yrange [*:*] noreverse\nset grid\nset autoscale\n"
                                "%s"
                                "set title 'task weights (sigmoid outputs)'\nset xlabel 'task weight'\nset ylabel 'count (weights)'\n"
                                EPAR_PLOT_IF("'task_weights.csv', '6'")
                                "plot 'task_weights.csv' skip 1 using (bin($6)):(1.0) smooth frequency with boxes lt 1 notitle"
                                EPAR_PLOT_END "%s"
                                "set title 'content importance'\nset xlabel 'importance c_i'\nset ylabel 'count (positions)'\n"
                                EPAR_PLOT_IF("'content_importance.csv', '5'")
                                "plot 'content_importance.csv' skip 1 using (bin($5)):(1.0) smooth frequency with boxes lt 3 notitle"
                                EPAR_PLOT_END "%s"
                                "set title 'row entropy (reference formula, 1e-8)'\nset xlabel 'entropy (nats)'\nset ylabel 'count (rows)'\n"
                                EPAR_PLOT_IF("'entropy_by_row.csv', '5'")
                                "plot 'entropy_by_row.csv' skip 1 using (bin($5)):(1.0) smooth frequency with boxes lt 2 notitle"
                                EPAR_PLOT_END
                                "set title 'task ids: given and classified'\nset xlabel 'task id'\n"
                                "set ylabel 'items'\nset boxwidth 0.4\nset xrange [-0.6:%d-0.4]\nset yrange [0:*]\n"
                                "set key top center horizontal font ',9'\nset offsets 0, 0, graph 0.2, 0\n"
                                EPAR_PLOT_IF("'task_types.csv', '1:2'")
                                "plot 'task_types.csv' skip 1 using ($1-0.2):2 with boxes lt 4 title 'given', "
                                "'' skip 1 using ($1+0.2):4 with boxes lt 8 title 'untrained classifier'" EPAR_PLOT_END
                                "unset key\nset offsets 0, 0, 0, 0\n"
                                "set title 'content types (argmax of the classifier)'\nset xlabel 'content type'\n"
                                "set ylabel 'positions'\nset boxwidth 0.6\nset xrange [-0.6:%d-0.4]\n"
                                EPAR_PLOT_IF("'content_types.csv', '1:2'")
                                "plot 'content_types.csv' skip 1 using 1:2 with boxes lt 5 notitle" EPAR_PLOT_END
                                "unset multiplot\n",
                                form, L, prm->n_seeds, prm->runs, prm->batch, where, h_tw, h_ci, h_en, cfg->tasks,
                                cfg->content_types)))
        return st;
    return EPAR_OK;
}

/* task_weights, content_importance and attention_entropy: histograms and per-position curves */
static int fig_distributions(const struct adp_fig *f, struct epar_out *o)
{
    const struct epar_params *prm = f->prm;
    int L = f->L;
    const char *form = f->form, *where = f->where;
    const char *h_tw = f->h_tw, *h_ci = f->h_ci, *h_en = f->h_en;
    int st;
    if ((st = epar_plot_scriptf(o, "task_weights", "Task weights",
                                "set title 'Task weights: sigmoid outputs of the untrained generator (%d seeds x %d runs x %d items x %d dims)'\n"
                                "set xlabel 'task weight'\nset ylabel 'count'\nunset key\n%s"
                                EPAR_PLOT_IF("'task_weights.csv', '6'")
                                "plot 'task_weights.csv' skip 1 using (bin($6)):(1.0) smooth frequency with boxes lt 1 notitle"
                                EPAR_PLOT_END,
                                prm->n_seeds, prm->runs, prm->batch, prm->hidden, h_tw)))
        return st;
    if ((st = epar_plot_scriptf(o, "content_importance", "Content importance",
                                "set terminal @epar_term size 1300,550\n"
                                "set multiplot layout 1,2 title 'Content importance (untrained estimator, dropout off)'\n"
                                "set xlabel 'importance c_i'\nset ylabel 'count'\nunset key\n%s"
                                EPAR_PLOT_IF("'content_importance.csv', '5'")
                                "plot 'content_importance.csv' skip 1 using (bin($5)):(1.0) smooth frequency with boxes lt 3 notitle"
                                EPAR_PLOT_END
                                "set xlabel 'position i'\nset ylabel 'c_i'\nset title '%s'\n"
                                "sel(v) = $1==%lu && $2==%d && $3==0 ? v : NaN\n"
                                EPAR_PLOT_IF("'content_importance.csv', '(sel($4)):5'")
                                "plot 'content_importance.csv' skip 1 using (sel($4)):5 with linespoints lt 3 notitle" EPAR_PLOT_END
                                "unset multiplot\n",
                                h_ci, where, prm->seeds[0], prm->runs - 1)))
        return st;
    if ((st = epar_plot_scriptf(o, "attention_entropy", "Attention entropy",
                                "set terminal @epar_term size 1300,550\n"
                                "set multiplot layout 1,2 title 'Attention entropy per row: -{/Symbol S}_j A_{ij} log(A_{ij}+10^{-8}) (ln L = %.4g)'\n"
                                "set xlabel 'entropy (nats)'\nset ylabel 'rows'\n%s"
                                "set style fill transparent solid 0.5 noborder\n"
                                EPAR_PLOT_IF("'entropy_by_row.csv', '5'")
                                "plot 'entropy_by_row.csv' skip 1 using (bin($5)):(1.0) smooth frequency with boxes lt 2 title '%s', "
                                "'' skip 1 using (bin($6)):(1.0) smooth frequency with boxes lt 8 title 'none (same weights)'"
                                EPAR_PLOT_END
                                "set xlabel 'query position i'\nset ylabel 'mean entropy over items (nats)'\nset key bottom right\n"
                                EPAR_PLOT_IF("'entropy_by_row.csv', '4:5'")
                                "plot 'entropy_by_row.csv' skip 1 using 4:5 smooth unique with lines lt 2 title '%s', "
                                "'' skip 1 using 4:6 smooth unique with lines lt 8 title 'none', %.12g with lines dt 2 lt 8 title 'ln L'"
                                EPAR_PLOT_END
                                "unset multiplot\n",
                                log((double)L), h_en, form, form, log((double)L))))
        return st;
    return EPAR_OK;
}

/* task_types, content_types and position_attention */
static int fig_types(const struct adp_fig *f, struct epar_out *o)
{
    const struct epar_adaptive_cfg *cfg = f->cfg;
    int L = f->L;
    const char *where = f->where;
    int st;
    if ((st = epar_plot_scriptf(o, "task_types", "Task types",
                                "set title 'Task ids: given (uniform 0..%d) and argmax of the untrained classifier'\n"
                                "set xlabel 'task id'\nset ylabel 'items'\nset boxwidth 0.4\nset xrange [-0.6:%d-0.4]\nset yrange [0:*]\n"
                                EPAR_PLOT_IF("'task_types.csv', '1:2'")
                                "plot 'task_types.csv' skip 1 using ($1-0.2):2 with boxes lt 4 title 'given', "
                                "'' skip 1 using ($1+0.2):4 with boxes lt 8 title 'classifier'" EPAR_PLOT_END,
                                cfg->tasks - 1, cfg->tasks)))
        return st;
    if ((st = epar_plot_scriptf(o, "content_types", "Content types",
                                "set title 'Content types: argmax of the untrained classifier per position'\n"
                                "set xlabel 'content type'\nset ylabel 'positions'\nset boxwidth 0.6\n"
                                "set xrange [-0.6:%d-0.4]\nset yrange [0:*]\nunset key\n"
                                EPAR_PLOT_IF("'content_types.csv', '1:2'")
                                "plot 'content_types.csv' skip 1 using 1:2 with boxes lt 5 notitle" EPAR_PLOT_END,
                                cfg->content_types)))
        return st;
    if ((st = epar_plot_scriptf(o, "position_attention", "Attention received per key position",
                                "set terminal @epar_term size 1300,550\n"
                                "set multiplot layout 1,2 title 'Position attention (%s)'\n"
                                "set xlabel 'key position j'\nset ylabel 'mean attention received over queries'\n"
                                EPAR_PLOT_IF("'position_attention.csv', '1:2'")
                                "plot 'position_attention.csv' skip 1 using 1:2 with lines lt 1 notitle, %.12g with lines dt 2 lt 8 title '1/L'"
                                EPAR_PLOT_END
                                "set xlabel 'key position j'\nset ylabel 'query position i'\n"
                                "set cblabel 'attention weight'\n@epar_heatmap\n"
                                "set autoscale xfix\nset autoscale yfix\n"
                                "eval epar_cells('attention_weights.csv', '2', '1', '3')\n"
                                "unset multiplot\n",
                                where, 1.0 / L)))
        return st;
    return EPAR_OK;
}

/* the alpha x beta grid: entropy, task weight and content importance heatmaps */
static int fig_grid(const struct adp_fig *f, struct epar_out *o)
{
    const struct epar_adaptive_cfg *cfg = f->cfg;
    const struct epar_params *prm = f->prm;
    char title[512];
    int st;
    const char *dnote = cfg->dropout_in_grid && cfg->dropout > 0 ? "dropout on" : "dropout off";
    snprintf(title, sizeof title, "Attention entropy over {/Symbol a} x {/Symbol b} (L=%d, hidden %d, mean of %d seeds, %s)",
             cfg->grid_length, cfg->grid_hidden, prm->n_seeds, dnote);
    if ((st = grid_heatmap(o, cfg, "grid_entropy", title, 5, "attention entropy (nats)", "%.3f"))) return st;
    snprintf(title, sizeof title, "Task weight mean over {/Symbol a} x {/Symbol b} (L=%d, %s; independent of {/Symbol a}, {/Symbol b})",
             cfg->grid_length, dnote);
    if ((st = grid_heatmap(o, cfg, "grid_task_weight", title, 9, "task weight mean", "%.4f"))) return st;
    snprintf(title, sizeof title, "Content importance mean over {/Symbol a} x {/Symbol b} (L=%d, %s)", cfg->grid_length, dnote);
    if ((st = grid_heatmap(o, cfg, "grid_content_importance", title, 11, "content importance mean", "%.4f"))) return st;
    return EPAR_OK;
}

/* when_to_use: a row per measure, a column per input condition, the three forms in each panel (one y range per
 * row, so the conditions compare); error bars of the sd across seeds only with more than one seed */
static int fig_when(const struct adp_fig *f, struct epar_out *o)
{
    const struct epar_adaptive_cfg *cfg = f->cfg;
    const struct epar_params *prm = f->prm;
    static const struct {
        const char *title, *ylabel, *check, *y, *e;
    } row[4] = {
        {"normalised entropy H / ln L", "H / ln L (1: uniform)", "1:6", "$6", "sd(5) / log($1)"},
        {"local mass, relative to a uniform row", "local mass / ((2w+1)/L)", "1:9", "$9 * $1 / (2 * $20 + 1)",
         "sd(10) * $1 / (2 * $20 + 1)"},
        {"mean attended distance / L", "D / L", "1:7", "$7 / $1", "sd(8) / $1"},
        {"structured-importance consistency", "consistency (correlation)", "1:11", "$11", "sd(12)"},
    };
    static const char *const cond[3] = {"clean", "shuffled", "noisy"};
    int bars = prm->n_seeds > 1;
    struct epar_plot_text b = {0};
    epar_plot_add(&b, "set terminal @epar_term size 1400,1500\n"
                      "set multiplot layout 4,3 margins 0.07,0.98,0.07,0.93 spacing 0.06,0.07 title 'When to use EPAR: "
                      "plain EPAR layer vs none on identical weights and data (mean%s of %d seed%s; local mass at w = %d)'\n"
                      "set logscale x 2\nset xlabel 'sequence length L (tokens)'\n"
                      "fc(f) = f eq 'none' ? 8 : f eq 'basic' ? 2 : 1\nfd(f) = f eq 'none' ? 1 : f eq 'basic' ? 2 : 3\n"
                      "sel(c, f, v) = (strcol(2) eq c && strcol(3) eq f) ? v : NaN\n"
                      "set key at screen 0.5, screen 0.005 center bottom horizontal font ',10'\n",
                  bars ? " ± sd" : "", prm->n_seeds, prm->n_seeds == 1 ? "" : "s", cfg->when_window);
    for (int r = 0; r < 4; r++) {
        /* the row's y range: every condition's mean ± sd */
        epar_plot_add(&b, "eval epar_check('when_to_use.csv', '%s')\nif (epar_ok) {\n"
                          "stats [*:*][*:*] 'when_to_use.csv' skip 1 using (%s - %s):(%s + %s) nooutput\n"
                          "ylo = STATS_min_x; yhi = STATS_max_y; ypad = (yhi > ylo ? yhi - ylo : 1) * 0.05\n"
                          "set yrange [ylo - ypad:yhi + ypad]\n} else { set yrange [*:*] }\n",
                      row[r].check, row[r].y, bars ? row[r].e : "0", row[r].y, bars ? row[r].e : "0");
        for (int c = 0; c < 3; c++) {
            epar_plot_add(&b, "set title '%s: %s input'\nset ylabel '%s'\n", row[r].title, cond[c],
                          c ? "" : row[r].ylabel);
            epar_plot_add(&b, EPAR_PLOT_IF("'when_to_use.csv', '%s'")
                              "plot for [f in 'none basic enhanced'] 'when_to_use.csv' skip 1 using 1:(sel('%s', f, %s))%s%s%s "
                              "with %s lt fc(f) dt fd(f) %s" EPAR_PLOT_END,
                          row[r].check, cond[c], row[r].y, bars ? ":(" : "", bars ? row[r].e : "", bars ? ")" : "",
                          bars ? "yerrorlines" : "linespoints", r == 0 && c == 0 ? "title f" : "notitle");
        }
    }
    epar_plot_add(&b, "unset multiplot\n");
    return epar_plot_script_text(o, "when_to_use", "When EPAR changes attention: length, shuffling, noise", &b);
}

/* ---- the tables ---- */

enum { AT_METRICS, AT_TASK, AT_CONTENT, AT_ENTROPY, AT_GRID, AT_WHEN, AT_ATT, AT_POSATT, AT_TW, AT_CI, AT_N };

/* adaptive_metrics.csv: the rows per run, per seed, across seeds (one count column per content type) */
static struct epar_table *metrics_table(const struct epar_adaptive_cfg *cfg, const struct epar_adaptive_result *res)
{
    const struct epar_params *prm = &cfg->prm;
    int R = res->R, S = res->S, J = res->J, C = res->C, nv = res->nv;
    static const char head[] =
        "scope,seed,run,attention_entropy_mean,attention_entropy_none_mean,task_weight_mean,task_weight_std,"
        "task_weight_min,task_weight_max,content_importance_mean,content_importance_std,content_importance_min,"
        "content_importance_max,fusion_weight_mean";
    size_t cap = sizeof head + (size_t)C * 24, len = sizeof head - 1;
    char *cols = EPAR_MALLOC(cap);
    if (!cols) return NULL;
    memcpy(cols, head, sizeof head);
    for (int k = 0; k < C; k++) len += (size_t)snprintf(cols + len, cap - len, ",content_type_%d", k);
    struct epar_table *t = epar_csv_new(cols);
    free(cols);
    if (!t) return NULL;
    for (int j = 0; j < J + S + 2; j++) {
        const double *v = res->rowv + (size_t)j * nv;
        const char *scope = j < J ? "run" : j < J + S ? "seed" : j == J + S ? "across_seeds_mean" : "across_seeds_sd";
        double seed = j < J ? (double)prm->seeds[j / R] : j < J + S ? (double)prm->seeds[j - J] : NAN;
        double run = j < J ? (double)(j % R) : NAN;
        if (epar_csv_append(t, "sdd", scope, seed, run)) { epar_csv_free(t); return NULL; }
        struct epar_cell *cell = t->cells + (t->nrows - 1) * (size_t)t->ncols;
        for (int k = 0; k < nv; k++) cell[3 + k].v = v[k];
    }
    return t;
}

/* task_types.csv, content_types.csv */
static int type_tables(const struct epar_adaptive_result *res, struct epar_table **tab)
{
    int T = res->T, C = res->C;
    double nt = (double)res->J * res->B, nc = (double)res->J * res->B * res->L;
    struct epar_table *tt = tab[AT_TASK] = epar_csv_new("task_id,given_count,given_fraction,classifier_count,classifier_fraction");
    struct epar_table *ct = tab[AT_CONTENT] = epar_csv_new("content_type,count,fraction");
    if (!tt || !ct) return EPAR_ENOMEM;
    for (int k = 0; k < T; k++)
        if (epar_csv_append(tt, "iddid", k, (double)res->given[k], res->given[k] / nt, (int)res->pred[k],
                            res->pred[k] / nt))
            return EPAR_ENOMEM;
    for (int k = 0; k < C; k++)
        if (epar_csv_append(ct, "idd", k, (double)res->ct[k], res->ct[k] / nc)) return EPAR_ENOMEM;
    return EPAR_OK;
}

/* long tables: entropy per row, task weights, content importance */
static int long_tables(const struct epar_adaptive_cfg *cfg, const struct epar_adaptive_result *res,
                       struct epar_table **tab)
{
    int L = res->L, D = res->D, B = res->B, R = res->R, J = res->J;
    struct epar_table *eb = tab[AT_ENTROPY] = epar_csv_new("seed,run,item,query,entropy,entropy_none");
    struct epar_table *tw = tab[AT_TW] = epar_csv_new("seed,run,item,task_id,dim,weight");
    struct epar_table *ci = tab[AT_CI] = epar_csv_new("seed,run,item,position,importance,content_type");
    if (!eb || !tw || !ci) return EPAR_ENOMEM;
    for (int j = 0; j < J; j++) {
        int sd = (int)cfg->prm.seeds[j / R], r = j % R;
        for (int b = 0; b < B; b++) {
            for (int i = 0; i < L; i++) {
                size_t q = ((size_t)j * B + b) * L + i;
                if (epar_csv_append(eb, "iiiidd", sd, r, b, i, res->ent[q], res->ent_none[q]) ||
                    epar_csv_append(ci, "iiiidi", sd, r, b, i, res->content[q], res->types[q]))
                    return EPAR_ENOMEM;
            }
            for (int k = 0; k < D; k++)
                if (epar_csv_append(tw, "iiiiid", sd, r, b, res->ids[(size_t)j * B + b], k,
                                    res->tw[((size_t)j * B + b) * D + k]))
                    return EPAR_ENOMEM;
        }
    }
    return EPAR_OK;
}

/* attention_weights.csv and position_attention.csv of the figures' item */
static int figure_tables(const struct epar_adaptive_result *res, struct epar_table **tab)
{
    int L = res->L;
    const double *mn = res->key_stats;
    if (!(tab[AT_ATT] = epar_exp_matrix_table("query,key,weight", res->A0, L, L))) return EPAR_ENOMEM;
    struct epar_table *pa = tab[AT_POSATT] = epar_csv_new("key,attention_received,attention_sd,attention_max");
    if (!pa) return EPAR_ENOMEM;
    for (int k = 0; k < L; k++)
        if (epar_csv_append(pa, "iddd", k, mn[k], mn[L + k], mn[2 * L + k])) return EPAR_ENOMEM;
    return EPAR_OK;
}

/* sensitivity_grid.csv and when_to_use.csv */
static int sweep_tables(const struct epar_adaptive_cfg *cfg, const struct epar_adaptive_result *res,
                        struct epar_table **tab)
{
    int NB = cfg->n_grid_beta, NC = cfg->n_grid_alpha * NB, NL = cfg->n_when;
    struct epar_table *g = tab[AT_GRID] = epar_csv_new(
        "alpha,beta,alpha_index,beta_index,attention_entropy_mean,attention_entropy_sd,entropy_delta_vs_none_mean,"
        "entropy_delta_vs_none_sd,task_weight_mean,task_weight_sd,content_importance_mean,content_importance_sd,"
        "fusion_weight_mean,fusion_weight_sd,n_seeds,dropout_active");
    struct epar_table *w = tab[AT_WHEN] = epar_csv_new(
        "length,condition,form,entropy_mean,entropy_sd,entropy_norm_mean,mean_distance_mean,mean_distance_sd,"
        "local_mass_mean,local_mass_sd,consistency_mean,consistency_sd,entropy_delta_mean,entropy_delta_sd,"
        "local_mass_delta_mean,local_mass_delta_sd,consistency_delta_mean,consistency_delta_sd,n_seeds,local_window");
    if (!g || !w) return EPAR_ENOMEM;
    for (int k = 0; k < NC; k++) {
        const double *m = res->grid_mean + (size_t)k * EPAR_ADP_GRID_N, *sd = res->grid_sd + (size_t)k * EPAR_ADP_GRID_N;
        if (epar_csv_append(g, "ddiiddddddddddii", cfg->grid_alpha[k / NB], cfg->grid_beta[k % NB], k / NB, k % NB,
                            m[EPAR_ADP_GRID_ENTROPY], sd[EPAR_ADP_GRID_ENTROPY], m[EPAR_ADP_GRID_DELTA],
                            sd[EPAR_ADP_GRID_DELTA], m[EPAR_ADP_GRID_TASK], sd[EPAR_ADP_GRID_TASK],
                            m[EPAR_ADP_GRID_CONTENT], sd[EPAR_ADP_GRID_CONTENT], m[EPAR_ADP_GRID_FUSION],
                            sd[EPAR_ADP_GRID_FUSION], res->grid_seeds, res->grid_dropout))
            return EPAR_ENOMEM;
    }
    for (int c = 0; c < EPAR_ADP_NCOND; c++)
        for (int f = 0; f < 3; f++)
            for (int k = 0; k < NL; k++) {
                size_t row = ((size_t)(c * 3 + f) * NL + k) * EPAR_ADP_WHEN_N;
                const double *m = res->when_mean + row, *sd = res->when_sd + row, *dm = res->when_dmean + row,
                             *dsd = res->when_dsd + row;
                int L = cfg->when_lengths[k];
                if (epar_csv_append(w, "issdddddddddddddddii", L, epar_adaptive_cond_name[c],
                                    epar_posfx_form_name(epar_adaptive_when_form[f]), m[0], sd[0], m[0] / log((double)L),
                                    m[1], sd[1], m[2], sd[2], m[3], sd[3], dm[0], dsd[0], dm[2], dsd[2], dm[3], dsd[3],
                                    cfg->prm.n_seeds, cfg->when_window))
                    return EPAR_ENOMEM;
            }
    return EPAR_OK;
}

int epar_exp_adaptive_write(const struct epar_adaptive_cfg *cfg, const struct epar_adaptive_result *res,
                            struct epar_out *o, const char *protocol_path)
{
    int st = EPAR_OK;
    struct epar_table *t[AT_N] = {0};
    if (!(t[AT_METRICS] = metrics_table(cfg, res))) st = EPAR_ENOMEM;
    if (!st) st = type_tables(res, t);
    if (!st) st = long_tables(cfg, res, t);
    if (!st) st = figure_tables(res, t);
    if (!st) st = sweep_tables(cfg, res, t);
    const struct epar_exp_file files[] = {
        {"adaptive_metrics.csv", t[AT_METRICS]}, {"task_types.csv", t[AT_TASK]},
        {"content_types.csv", t[AT_CONTENT]}, {"entropy_by_row.csv", t[AT_ENTROPY]},
        {"sensitivity_grid.csv", t[AT_GRID]}, {"when_to_use.csv", t[AT_WHEN]},
        {"attention_weights.csv", t[AT_ATT]}, {"position_attention.csv", t[AT_POSATT]},
        {"task_weights.csv", t[AT_TW]}, {"content_importance.csv", t[AT_CI]}};
    if (!st) st = epar_exp_write_tables(o, files, sizeof files / sizeof files[0]);
    for (int k = 0; k < AT_N; k++) epar_csv_free(t[k]);
    if (st) return st;
    if ((st = write_run_json(cfg, o, protocol_path))) return st;
    struct adp_fig f;
    fig_setup(&f, cfg);
    if ((st = fig_summary(&f, o))) return st;
    if ((st = fig_distributions(&f, o))) return st;
    if ((st = fig_types(&f, o))) return st;
    if ((st = fig_grid(&f, o))) return st;
    return fig_when(&f, o);
}
