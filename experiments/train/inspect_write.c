/* epar inspect: the files of one input's folder (attention.csv, tokens.csv, heads.csv, profile.csv, one heatmap per
 * layer, the profile figure, inspect.json and intervention.csv; head_view.html is inspect_view.c's) and the comparison
 * of several checkpoints (comparison.csv and its grid figure). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "lib/plot.h"
#include "lib/version.h"
#include "experiments/common.h"
#include "experiments/train/inspect_int.h"

/* the selected layers (or heads): o's list, or 0..n-1; returns the count */
static int selection(const int *list, int nlist, int n, int *out)
{
    if (nlist == 0) {
        for (int k = 0; k < n; k++) out[k] = k;
        return n;
    }
    memcpy(out, list, (size_t)nlist * sizeof *out);
    return nlist;
}

/* ------------------------------------------------------------------------------------------------ */
/* tables                                                                                             */

static struct epar_table *attention_table(const struct epar_inspect *x, const int *ls, int nl, const int *hs, int nh)
{
    struct epar_table *t = epar_csv_new("layer,head,query,key,weight");
    int T = x->T;
    for (int a = 0; t && a < nl; a++)
        for (int b = 0; t && b < nh; b++) {
            const float *A = x->att + ((size_t)ls[a] * x->NH + hs[b]) * T * T;
            for (int i = 0; t && i < T; i++)
                for (int j = 0; j <= i; j++)
                    if (epar_csv_append(t, "iiiid", ls[a], hs[b], i, j, (double)A[(size_t)i * T + j])) {
                        epar_csv_free(t);
                        t = NULL;
                        break;
                    }
        }
    return t;
}

static struct epar_table *tokens_table(const struct epar_inspect *x)
{
    struct epar_table *t = epar_csv_new("position,token,symbol,target,target_symbol,scored,prediction,prediction_symbol,"
                                        "correct,p_target,relevant_keys");
    int T = x->T;
    for (int q = 0; t && q < T; q++) {
        char s[64], ts[64], ps[64], rel[512] = "";
        epar_inspect_symbol(x, x->tok[q], s, sizeof s);
        epar_inspect_symbol(x, x->tgt[q], ts, sizeof ts);
        epar_inspect_symbol(x, x->pred[q], ps, sizeof ps);
        size_t used = 0;
        for (int j = 0; j <= q && used + 12 < sizeof rel; j++)
            if (x->rel[(size_t)q * T + j]) used += (size_t)snprintf(rel + used, sizeof rel - used, "%s%d", used ? " " : "", j);
        /* correct: the argmax is the target, at the scored positions only (empty elsewhere) */
        int bad = x->tgt[q] < 0 ? epar_csv_append(t, "iis--iis-ds", q, x->tok[q], s, x->mask[q] > 0, x->pred[q], ps,
                                                  x->p_target[q], rel)
                  : x->mask[q] > 0 ? epar_csv_append(t, "iisisiisids", q, x->tok[q], s, x->tgt[q], ts, 1, x->pred[q], ps,
                                                     x->pred[q] == x->tgt[q], x->p_target[q], rel)
                                   : epar_csv_append(t, "iisisiis-ds", q, x->tok[q], s, x->tgt[q], ts, 0, x->pred[q], ps,
                                                     x->p_target[q], rel);
        if (bad) {
            epar_csv_free(t);
            t = NULL;
        }
    }
    return t;
}

static struct epar_table *heads_table(const struct epar_inspect *x, const int *ls, int nl, const int *hs, int nh)
{
    struct epar_table *t = epar_csv_new("layer,head,mean_distance,entropy,entropy_uniform,previous_share,first_share,"
                                        "relevant_share,relevant_uniform,relevant_queries,distance_spearman,alpha,beta,"
                                        "gamma,profile_pearson,profile_spearman,pos_star,importance_argmax,consistency,"
                                        "ranking,pattern_current,pattern_previous,pattern_left,pattern_first,"
                                        "pattern_best,similar_layer,similar_other,slope");
    for (int a = 0; t && a < nl; a++)
        for (int b = 0; t && b < nh; b++) {
            const double *s = x->stats + ((size_t)ls[a] * x->NH + hs[b]) * EPAR_INSPECT_NSTATS;
            if (epar_csv_append(t, "iidddddddiddddddiidddddddddd", ls[a], hs[b], s[EPAR_INSPECT_DISTANCE],
                                s[EPAR_INSPECT_ENTROPY], s[EPAR_INSPECT_ENTROPY_UNIFORM], s[EPAR_INSPECT_PREVIOUS],
                                s[EPAR_INSPECT_FIRST], s[EPAR_INSPECT_RELEVANT], s[EPAR_INSPECT_RELEVANT_UNIFORM],
                                x->rel_rows, s[EPAR_INSPECT_DIST_SPEARMAN], s[EPAR_INSPECT_ALPHA], s[EPAR_INSPECT_BETA],
                                s[EPAR_INSPECT_GAMMA], s[EPAR_INSPECT_PROFILE_PEARSON], s[EPAR_INSPECT_PROFILE_SPEARMAN],
                                (int)s[EPAR_INSPECT_POS_STAR], (int)s[EPAR_INSPECT_POS_ACTUAL],
                                s[EPAR_INSPECT_CONSISTENCY], s[EPAR_INSPECT_RANKING], s[EPAR_INSPECT_PAT_CURRENT],
                                s[EPAR_INSPECT_PAT_PREVIOUS], s[EPAR_INSPECT_PAT_LEFT], s[EPAR_INSPECT_PAT_FIRST],
                                s[EPAR_INSPECT_PAT_BEST], s[EPAR_INSPECT_SIM_LAYER], s[EPAR_INSPECT_SIM_OTHER],
                                s[EPAR_INSPECT_SLOPE])) {
                epar_csv_free(t);
                t = NULL;
            }
        }
    return t;
}

static struct epar_table *profile_table(const struct epar_inspect *x, const int *ls, int nl, const int *hs, int nh)
{
    struct epar_table *t = epar_csv_new("layer,head,distance,attention_mass,uniform_mass,queries,p_effect");
    int T = x->T;
    double *u = EPAR_MALLOC((size_t)T * sizeof *u);
    if (!u) {
        epar_csv_free(t);
        return NULL;
    }
    epar_inspect_uniform_mass(T, u);
    for (int a = 0; t && a < nl; a++)
        for (int b = 0; t && b < nh; b++) {
            size_t k = (size_t)ls[a] * x->NH + hs[b];
            for (int d = 0; t && d < T; d++)
                if (epar_csv_append(t, "iiiddid", ls[a], hs[b], d, x->mass[k * T + d], u[d], T - d, x->peff[k * T + d])) {
                    epar_csv_free(t);
                    t = NULL;
                }
        }
    free(u);
    return t;
}

/* ------------------------------------------------------------------------------------------------ */
/* figures                                                                                            */

/* a token symbol as a gnuplot single-quoted string body ('' for a quote) */
static void sb_gp_quoted(struct epar_plot_text *b, const char *s)
{
    for (; *s; s++) epar_plot_add(b, *s == '\'' ? "''" : "%c", *s);
}

/* tic labels: every k-th position (k so that at most about `most` labels show), "'sym' pos, ..." */
static void sb_tics(struct epar_plot_text *b, const struct epar_inspect *x, int most)
{
    int T = x->T, k = (T + most - 1) / most;
    for (int q = 0; q < T; q += k) {
        char s[64];
        epar_inspect_symbol(x, x->tok[q], s, sizeof s);
        epar_plot_add(b, "%s'", q ? ", " : "");
        sb_gp_quoted(b, s);
        epar_plot_add(b, "' %d", q);
    }
}

/* the axes of one heatmap panel of the input's tokens, at most `most` labels on each */
static void sb_panel_axes(struct epar_plot_text *b, const struct epar_inspect *x, int most, int font)
{
    int T = x->T;
    epar_plot_add(b, "set xrange [-0.5:%d.5]\nset yrange [%d.5:-0.5]\nset xtics (", T - 1, T - 1);
    sb_tics(b, x, most);
    epar_plot_add(b, ") noenhanced rotate by 90 right font ',%d'\nset ytics (", font);
    sb_tics(b, x, most);
    epar_plot_add(b, ") noenhanced font ',%d'\n", font);
}

/* one figure per layer: a heatmap per head (key position across, query position down), token labels */
static int heatmap_layer(const struct epar_inspect *x, int l, const int *hs, int nh, struct epar_out *o)
{
    int cols = 1;
    while (cols * cols < nh) cols++;   /* a square-ish grid: 4 heads 2 x 2 */
    int rows = (nh + cols - 1) / cols;
    char name[64], title[256];
    snprintf(name, sizeof name, "attention_layer%d", l);
    char in[64];
    epar_inspect_input_desc(x, in, sizeof in);
    snprintf(title, sizeof title, "Attention of layer %d per head: %s, %s", l, x->name, in);
    struct epar_plot_text b = {0};
    epar_plot_add(&b, "set terminal @epar_term size %d,%d\n", 40 + 560 * cols, 50 + 540 * rows);
    epar_plot_add(&b, "set multiplot layout %d,%d title '%s, %s: layer %d (query position down, key position across)' "
                  "noenhanced\n", rows, cols, x->name, in, l);
    epar_plot_add(&b, "unset key\nunset grid\nset size ratio -1\nset tics out\n"
                  "set xlabel 'key' font ',9'\nset ylabel 'query' font ',9'\n");
    sb_panel_axes(&b, x, 32, 8);
    for (int k = 0; k < nh; k++) {
        /* the colour scale tops at the largest weight of rows 1.. (row 0 is always the single weight 1) */
        const float *A = x->att + ((size_t)l * x->NH + hs[k]) * x->T * x->T;
        double top = 0;
        for (int i = 1; i < x->T; i++)
            for (int j = 0; j <= i; j++) top = fmax(top, A[(size_t)i * x->T + j]);
        epar_plot_add(&b, "set title 'head %d (colour scale to %.2g)'\nset cbrange [0:%.3g]\n", hs[k], top, top > 0 ? top : 1.0);
        epar_plot_add(&b, EPAR_PLOT_IF("'attention.csv', '($1==%d && $2==%d ? $4 : NaN):5'")
                      "plot 'attention.csv' skip 1 using ($1==%d && $2==%d ? $4 : 1/0):3:(0.52):(0.52):5 "
                      "with boxxyerror fs solid noborder fc palette notitle" EPAR_PLOT_END, l, hs[k], l, hs[k]);
    }
    epar_plot_add(&b, "unset multiplot\n");
    return epar_plot_script_text(o, name, title, &b);
}

/* attention mass by distance per head, beside the EPAR factor P(d) on the right axis */
static int profile_figure(const struct epar_inspect *x, const int *ls, int nl, const int *hs, int nh, struct epar_out *o)
{
    int epar = epar_inspect_is_epar(x->run.cfg.mechanism), learned = x->run.cfg.pos.learn_posfx;
    struct epar_plot_text b = {0};
    epar_plot_add(&b, "set terminal @epar_term size %d,480\nset multiplot layout 1,%d title '%s: attention by distance' "
                  "noenhanced\nset xlabel 'distance i - j'\nset ylabel 'mean attention weight at that distance'\n"
                  "set key bmargin center horizontal\nset bmargin 7\nset xrange [0:%d]\n", 80 + 520 * nl, nl, x->name, x->T - 1);
    if (epar) epar_plot_add(&b, "set y2label 'P(d): the EPAR factor of the score'\nset y2tics\nset ytics nomirror\n");
    for (int a = 0; a < nl; a++) {
        epar_plot_add(&b, "set title 'layer %d'\n" EPAR_PLOT_IF("'profile.csv', '($1==%d ? $3 : NaN):4'") "plot", ls[a], ls[a]);
        for (int k = 0; k < nh; k++)
            epar_plot_add(&b, "%s 'profile.csv' skip 1 using ($1==%d && $2==%d ? $3 : 1/0):4 with lines lt %d title 'head %d'",
                      k ? ", \\\n    " : " ", ls[a], hs[k], 1 + k % 8, hs[k]);
        epar_plot_add(&b, ", \\\n    'profile.csv' skip 1 using ($1==%d && $2==%d ? $3 : 1/0):5 with lines dt 3 lc rgb '#000000' "
                      "title 'uniform causal rows'", ls[a], hs[0]);
        for (int k = 0; epar && k < (learned ? nh : 1); k++) {   /* P(d) differs by head only when it is learned */
            char what[32] = " (every head)";
            if (learned) snprintf(what, sizeof what, ", head %d", hs[k]);
            epar_plot_add(&b, ", \\\n    'profile.csv' skip 1 using ($1==%d && $2==%d ? $3 : 1/0):7 axes x1y2 with lines "
                          "dt 2 lt %d title 'P(d)%s'", ls[a], hs[k], learned ? 1 + k % 8 : 8, what);
        }
        epar_plot_add(&b, EPAR_PLOT_END);
    }
    epar_plot_add(&b, "unset multiplot\n");
    return epar_plot_script_text(o, "profile", "Attention mass by distance per head, beside P(d)", &b);
}

/* ------------------------------------------------------------------------------------------------ */
/* the folder                                                                                         */

/* inspect.json: what was read and written, then the checkpoint's config */
static int write_json(const struct epar_inspect *x, const struct epar_inspect_opts *op, const int *ls, int nl, const int *hs,
                      int nh, struct epar_out *o)
{
    const struct epar_train_cfg *c = &x->run.cfg;
    json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:i, s:o, s:o, s:i, s:i, s:i, s:s, s:I, s:s*, s:o}",
                          "experiment", "inspect", "epar_version", EPAR_VERSION, "checkpoint", x->path, "folder", x->folder,
                          "task", epar_task_name(c->task.id), "mechanism", epar_nnpos_name(c->mechanism), "seed",
                          (json_int_t)c->seed, "steps_done", (json_int_t)x->run.step, "length", x->T, "layers_written",
                          epar_fields_array(EPAR_FIELD_ILIST, ls, nl), "heads_written",
                          epar_fields_array(EPAR_FIELD_ILIST, hs, nh), "model_layers", x->NL, "model_heads", x->NH,
                          "relevant_queries", x->rel_rows, "attention",
                          "lib/nn epar_nn_forward (the training forward pass), batch 1: m->a.att",
                          x->from_text ? "text" : "item", (json_int_t)(x->from_text ? x->T : x->item),
                          "benchmark_task", x->run.label[0] ? x->run.label : NULL, "config", epar_exp_train_cfg_json(c));
    if (j && x->interventions)   /* the weights written are the intervened ones (intervention.csv: the evaluation) */
        json_object_set_new(j, "interventions",
                            json_pack("{s:s*, s:f, s:i, s:s*}", "heads_masked", op->mask_heads, "boost",
                                      op->boost > 0 ? op->boost : 1.0, "boost_layer", op->boost > 0 ? x->NL - 1 : -1,
                                      "boost_mode", op->boost > 0 ? (op->boost_renorm ? "renormalised" : "as-written") : NULL));
    if (!j) return epar_err_set(EPAR_ENOMEM, "out of memory building inspect.json");
    return epar_fields_save(epar_out_path(o, "inspect.json"), NULL, NULL, j, EPAR_SAVE_RUN);
}

/* intervention.csv: the evaluation on the same items without and with the interventions of the options */
static int intervention_table(const struct epar_inspect *x, const struct epar_inspect_opts *o, struct epar_out *out)
{
    struct epar_table *t = epar_csv_new("heads_masked,boost,boost_layer,boost_mode,items,metric,base,intervened,delta,"
                                        "loss_base,loss_intervened,loss_delta");
    const struct epar_train_eval *b = &x->interv_base, *e = &x->interv_eval;
    int st = t ? EPAR_OK : epar_err_set(EPAR_ENOMEM, "out of memory");
    if (!st && epar_csv_append(t, "sdisisdddddd", o->mask_heads ? o->mask_heads : "", o->boost > 0 ? o->boost : 1.0,
                               o->boost > 0 ? x->NL - 1 : -1,
                               o->boost > 0 ? (o->boost_renorm ? "renormalised" : "as-written") : "",
                               (int)b->sequences, x->run.task.info->metric, b->metric, e->metric, e->metric - b->metric,
                               b->loss, e->loss, e->loss - b->loss))
        st = epar_err_set(EPAR_ENOMEM, "out of memory building intervention.csv");
    if (!st) st = epar_exp_write_table(out, "intervention.csv", t);
    epar_csv_free(t);
    return st;
}

int epar_inspect_write(const struct epar_inspect *x, const struct epar_inspect_opts *o, struct epar_out *out)
{
    int ls[1024], hs[1024];
    if (x->NL > 1024 || x->NH > 1024) return epar_err_set(EPAR_EINVAL, "more than 1024 layers or heads");
    int nl = selection(o->layers, o->n_layers, x->NL, ls), nh = selection(o->heads, o->n_heads, x->NH, hs);
    struct epar_table *att = attention_table(x, ls, nl, hs, nh), *tok = tokens_table(x);
    struct epar_table *heads = heads_table(x, ls, nl, hs, nh), *prof = profile_table(x, ls, nl, hs, nh);
    int st = !att || !tok || !heads || !prof ? epar_err_set(EPAR_ENOMEM, "out of memory building the tables") : EPAR_OK;
    struct epar_exp_file files[] = {{"attention.csv", att}, {"tokens.csv", tok}, {"heads.csv", heads},
                                    {"profile.csv", prof}};
    if (!st) st = epar_exp_write_tables(out, files, sizeof files / sizeof files[0]);
    for (int a = 0; !st && a < nl; a++) st = heatmap_layer(x, ls[a], hs, nh, out);
    if (!st) st = profile_figure(x, ls, nl, hs, nh, out);
    if (!st) st = epar_inspect_head_view(x, ls, nl, hs, nh, out);
    if (!st) st = write_json(x, o, ls, nl, hs, nh, out);
    if (!st && x->interventions) st = intervention_table(x, o, out);
    epar_csv_free(att);
    epar_csv_free(tok);
    epar_csv_free(heads);
    epar_csv_free(prof);
    return st;
}

/* ---- several checkpoints side by side ---- */

static struct epar_table *comparison_table(const struct epar_inspect *xs, int n, const struct epar_inspect_opts *o)
{
    struct epar_table *t = epar_csv_new("checkpoint,folder,layer,query,key,weight");
    int ls[1024], hs[1024];
    for (int c = 0; t && c < n; c++) {
        const struct epar_inspect *x = &xs[c];
        int T = x->T, nl = selection(o->layers, o->n_layers, x->NL, ls), nh = selection(o->heads, o->n_heads, x->NH, hs);
        for (int a = 0; t && a < nl; a++)
            for (int i = 0; t && i < T; i++)
                for (int j = 0; t && j <= i; j++) {
                    double w = 0;
                    for (int b = 0; b < nh; b++) w += x->att[(((size_t)ls[a] * x->NH + hs[b]) * T + i) * T + j];
                    if (epar_csv_append(t, "isiiid", c, x->folder, ls[a], i, j, w / nh)) {
                        epar_csv_free(t);
                        t = NULL;
                    }
                }
    }
    return t;
}

/* the largest head-mean weight of rows 1.. of layer l (row 0 is always the single weight 1) */
static double mean_row_top(const struct epar_inspect *x, int l, const struct epar_inspect_opts *o)
{
    int hs[1024], T = x->T, nh = selection(o->heads, o->n_heads, x->NH, hs);
    double top = 0;
    for (int i = 1; i < T; i++)
        for (int j = 0; j <= i; j++) {
            double w = 0;
            for (int b = 0; b < nh; b++) w += x->att[(((size_t)l * x->NH + hs[b]) * T + i) * T + j];
            top = fmax(top, w / nh);
        }
    return top;
}

int epar_inspect_write_comparison(const struct epar_inspect *xs, int n, const struct epar_inspect_opts *o,
                                  struct epar_out *out)
{
    int rows = 0, ls[1024];
    for (int c = 0; c < n; c++) {
        if (xs[c].NL > 1024) return epar_err_set(EPAR_EINVAL, "more than 1024 layers");
        int nl = selection(o->layers, o->n_layers, xs[c].NL, ls);
        if (nl > rows) rows = nl;
    }
    struct epar_table *t = comparison_table(xs, n, o);
    int st = t ? epar_exp_write_table(out, "comparison.csv", t) : epar_err_set(EPAR_ENOMEM, "out of memory building comparison.csv");
    epar_csv_free(t);
    if (st) return st;
    /* small multiples: for each layer, the checkpoints side by side, at most 4 to a row (8 checkpoints of one layer:
     * 2 rows of 4 panels, not one row 4500 pixels wide) */
    int bands = (n + 3) / 4, cols = (n + bands - 1) / bands;   /* 5 checkpoints: 3 + 2 */
    char in[64];
    epar_inspect_input_desc(&xs[0], in, sizeof in);
    struct epar_plot_text b = {0};
    /* one colour scale for every panel (they compare), up to the largest mean weight of rows 1.. (row 0 attends to
     * itself alone, weight 1) over the panels; one colour bar at the right of the page */
    double top = 0;
    for (int c = 0; c < n; c++) {
        int nl = selection(o->layers, o->n_layers, xs[c].NL, ls);
        for (int a = 0; a < nl; a++) {
            double pt = mean_row_top(&xs[c], ls[a], o);
            if (pt > top) top = pt;
        }
    }
    int W = 200 + 400 * cols, H = 100 + 420 * rows * bands;
    epar_plot_add(&b, "set terminal @epar_term size %d,%d\nset multiplot layout %d,%d margins %.4f,%.4f,%.4f,%.4f spacing "
                  "%.4f,%.4f title \"Attention on %s, mean of the heads\\none colour scale: up to the largest weight of the "
                  "rows after the first (row 0 sees only itself)\" noenhanced\n"
                  "unset key\nunset grid\nset size ratio -1\nset tics out\nunset colorbox\nset cbrange [0:%.3g]\n"
                  "set xlabel 'key position' font ',9'\nset ylabel 'query position' font ',9'\n",
                  W, H, rows * bands, cols, 100.0 / W, 1 - 150.0 / W, 80.0 / H, 1 - 90.0 / H, 110.0 / W, 150.0 / H, in,
                  top > 0 ? top : 1.0);
    int last_r = -1, last_c = -1;   /* the last panel drawn carries the colour bar */
    for (int a = 0; a < rows; a++)
        for (int c = 0; c < bands * cols && c < n; c++)
            if (a < selection(o->layers, o->n_layers, xs[c].NL, ls)) last_r = a, last_c = c;
    for (int a = 0; a < rows; a++)
        for (int c = 0; c < bands * cols; c++) {
            const struct epar_inspect *x = c < n ? &xs[c] : NULL;
            int nl = x ? selection(o->layers, o->n_layers, x->NL, ls) : 0;
            if (a >= nl) {   /* past the last checkpoint, or a model with fewer layers */
                epar_plot_add(&b, "set multiplot next\n");
                continue;
            }
            sb_panel_axes(&b, x, 16, 8);
            epar_plot_add(&b, "set title \"%s\\nlayer %d\" noenhanced font ',9'\n", x->name, ls[a]);
            if (a == last_r && c == last_c)
                epar_plot_add(&b, "set colorbox user origin screen %.4f, screen %.4f size screen %.4f, screen %.4f\n"
                                  "set cblabel 'attention weight'\nset cbtics font ',8'\n",
                              1 - 110.0 / W, 80.0 / H, 20.0 / W, 1 - 170.0 / H);
            epar_plot_add(&b, EPAR_PLOT_IF("'comparison.csv', '($1==%d && $3==%d ? $5 : NaN):6'")
                          "plot 'comparison.csv' skip 1 using ($1==%d && $3==%d ? $5 : 1/0):4:(0.52):(0.52):6 with boxxyerror "
                          "fs solid noborder fc palette notitle" EPAR_PLOT_END, c, ls[a], c, ls[a]);
        }
    epar_plot_add(&b, "unset multiplot\n");
    return epar_plot_script_text(out, "comparison", "Attention of several checkpoints on the same input, mean of the heads", &b);
}
