/* Interventions on the benchmark's trained models (F8, F9 of docs/SOURCE_STATEMENTS.md; experiments/train/interv): every
 * kept checkpoint (the first seed of each task x mechanism, cells/<task>/<mechanism>/seed-<first>/checkpoint.bin) is
 * evaluated on intervention_sequences items of its evaluation set as trained, with each head masked alone
 * (head_masking.csv, head_masking_summary.csv), and on the recall and needle tasks with the answer-relevant keys'
 * weights in the last layer times each boost factor, as written and renormalised (boost.csv, boost_summary.csv,
 * boost.png). Nothing is trained and no cell is changed: the cells' own records stay as they were. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "lib/outdir.h"
#include "lib/plot.h"
#include "experiments/benchmark/benchmark_int.h"
#include "experiments/common.h"
#include "experiments/train/inspect.h"
#include "experiments/train/interv.h"

/* the change of metric b -> x in the task's worse direction, relative to |b|: > 0 is worse */
static double hurt(int hib, double b, double x) { return (hib ? b - x : x - b) / fabs(b); }

static int learned(int hib, const struct epar_train_eval *e)
{
    return hib ? e->metric > e->chance + LEARNED_Z * e->chance_se : e->metric < e->chance - LEARNED_Z * e->chance_se;
}

/* the mean and sample sd of v (n) */
static void mean_sd(const double *v, int n, double *m, double *sd)
{
    double s = 0, q = 0;
    for (int i = 0; i < n; i++) s += v[i];
    *m = n ? s / n : NAN;
    for (int i = 0; i < n; i++) q += (v[i] - *m) * (v[i] - *m);
    *sd = n > 1 ? sqrt(q / (n - 1)) : NAN;
}

static int boosted_task(const struct epar_bench_cfg *c, int t)
{
    return c->tasks[t].task.id == EPAR_TASK_RECALL || c->tasks[t].task.id == EPAR_TASK_NEEDLE;
}

/* one checkpoint's evaluations (computed side by side with the others', written in the grid's order) */
struct model_eval {
    int k, st;                          /* the cell; its status (an error's text in err, hint) */
    int NL, NH;
    const char *metric;                 /* the task's metric name (static) */
    struct epar_train_eval base, *hm;   /* as trained; each head masked alone (NL NH, layer-major) */
    struct epar_train_eval *boost;      /* [factor][as written, renormalised] (recall and needle) */
    char err[512], hint[512];
};

/* one checkpoint: the model as trained, each head masked alone and, on the boosted tasks, each boost factor in both
 * modes; on one thread (models run side by side) */
static int eval_model(const struct epar_bench_cfg *c, int t, const char *path, struct model_eval *me)
{
    struct epar_inspect ix;
    int st = epar_inspect_open(&ix, path, c->cache_dir);
    if (st) return st;
    struct epar_train_run *r = &ix.run;
    int NL = r->model.cfg.NL, NH = r->model.cfg.NH;
    long n = c->interv_sequences;
    me->NL = NL;
    me->NH = NH;
    me->metric = r->task.info->metric;
    me->hm = calloc((size_t)NL * NH, sizeof *me->hm);
    me->boost = calloc((size_t)c->n_boost * 2 + 1, sizeof *me->boost);
    struct epar_interv none = {NULL, 1.0, -1, 0};
    if (!me->hm || !me->boost) st = epar_err_set(EPAR_ENOMEM, "out of memory");
    if (!st) st = epar_interv_eval(r, n, &none, &me->base);
    if (!st) st = epar_interv_heads(r, n, me->hm);
    for (int f = 0; !st && boosted_task(c, t) && f < c->n_boost; f++)
        for (int rn = 0; !st && rn < 2; rn++) {
            struct epar_interv x = {NULL, c->boost[f], NL - 1, rn};
            st = epar_interv_eval(r, n, &x, &me->boost[f * 2 + rn]);
        }
    epar_inspect_free(&ix);
    return st;
}

/* one checkpoint's rows of head_masking.csv and boost.csv; *share its removable heads' share (learned models) */
static int emit_model(const struct epar_bench_cfg *c, int t, int m, const struct model_eval *me, struct epar_table *ht,
                      struct epar_table *bt, double *share, double *bdelta, int *is_learned, int *nheads)
{
    int NL = me->NL, NH = me->NH, hib = task_hib(c, t), seed = (int)c->b.seeds[0], st = EPAR_OK;
    long n = c->interv_sequences;
    const struct epar_train_eval *base = &me->base, *hm = me->hm;
    *nheads = NL * NH;
    const char *task = c->tasks[t].id, *mech = epar_nnpos_name(c->mech[m]), *metric = me->metric;
    *is_learned = learned(hib, base);
    int removable = 0;
    for (int k = 0; !st && k < NL * NH; k++) {
        double h = hurt(hib, base->metric, hm[k].metric);
        removable += h < c->head_mask_threshold;
        if (epar_csv_append(ht, "ssiiisdddddddii", task, mech, seed, k / NH, k % NH, metric, base->metric,
                            hm[k].metric, hm[k].metric - base->metric, h, base->loss, hm[k].loss,
                            c->head_mask_threshold, h < c->head_mask_threshold, *is_learned))
            st = epar_err_set(EPAR_ENOMEM, "out of memory building head_masking.csv");
    }
    *share = (double)removable / (NL * NH);
    for (int f = 0; !st && boosted_task(c, t) && f < c->n_boost; f++)
        for (int rn = 0; !st && rn < 2; rn++) {
            const struct epar_train_eval *e = &me->boost[f * 2 + rn];
            bdelta[f * 2 + rn] = e->metric - base->metric;
            if (epar_csv_append(bt, "ssidsisddddddi", task, mech, seed, c->boost[f], rn ? "renormalised" : "as-written",
                                NL - 1, metric, base->metric, e->metric, e->metric - base->metric, base->loss, e->loss,
                                (double)n, *is_learned))
                st = epar_err_set(EPAR_ENOMEM, "out of memory building boost.csv");
        }
    return st;
}

static int boost_figure(const struct epar_bench_cfg *c, struct epar_out *o)
{
    struct epar_plot_text b = {0};
    epar_plot_add(&b, "set terminal @epar_term size 900,550\n"
                      "set title \"Attention boost at evaluation (004:707-726): the answer's keys' weights in the last "
                      "layer times the factor\\naccuracy change against the unboosted model: mean over the learned "
                      "recall and needle models, whiskers sd\" noenhanced\n"
                      "set xlabel 'boost factor'\nset logscale x 2\nset offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05\nset ylabel 'accuracy change'\nset key top left noenhanced\n"
                      "set grid\nset xzeroaxis lt -1\nsel(m) = strcol(1) eq 'all' && strcol(3) eq m ? 1 : NaN\n"
                      EPAR_PLOT_IF("'boost_summary.csv', '2:5'")
                      "plot 'boost_summary.csv' skip 1 using 2:($5 * sel('as-written')):6 with yerrorlines lt 1 title "
                      "'as written (rows no longer sum to 1)', \\\n"
                      "     '' skip 1 using 2:($5 * sel('renormalised')):6 with yerrorlines lt 2 title "
                      "'renormalised (ln factor added to the logits)'" EPAR_PLOT_END);
    (void)c;
    return epar_plot_script_text(o, "boost", "Attention boost: accuracy change by boost factor", &b);
}

int epar_bench_interventions(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const struct grid *g,
                             const char *root, struct epar_out *o)
{
    struct epar_table *ht = epar_csv_new("task,mechanism,seed,layer,head,metric,base,masked,delta,hurt,loss_base,"
                                         "loss_masked,threshold,removable,learned");
    struct epar_table *bt = epar_csv_new("task,mechanism,seed,factor,mode,layer,metric,base,boosted,delta,loss_base,"
                                         "loss_boosted,items,learned");
    struct epar_table *hs = epar_csv_new("task,models,removable_share,removable_share_sd,threshold,heads_per_model");
    struct epar_table *bs = epar_csv_new("task,factor,mode,models,delta_mean,delta_sd");
    int NT = c->n_tasks, M = c->n_mech, NB = c->n_boost;
    double *share = calloc((size_t)NT * M + 1, sizeof *share), *bd = calloc(((size_t)NT * M + 1) * 2 * (NB + 1), sizeof *bd);
    int *lr = calloc((size_t)NT * M + 1, sizeof *lr), *have = calloc((size_t)NT * M + 1, sizeof *have), heads = 0;
    int st = ht && bt && hs && bs && share && bd && lr && have ? EPAR_OK : epar_err_set(EPAR_ENOMEM, "out of memory");
    /* the grid's tasks only: a study-only task (index >= NT) has no row in the summaries */
    int nm = 0;
    struct model_eval *me = st ? NULL : calloc((size_t)plan->n + 1, sizeof *me);
    if (!st && !me) st = epar_err_set(EPAR_ENOMEM, "out of memory");
    for (int k = 0; !st && k < plan->n; k++) {
        const struct epar_bench_cell *cell = &plan->cells[k];
        if (cell->task < 0 || cell->task >= NT || cell->mech >= M || cell->seed != 0 || !g->cell[k].checkpoint) continue;
        me[nm++].k = k;
    }
    /* the models side by side, one thread each, as the cells trained (the bits do not depend on it); the rows then in
     * the grid's order, and the first failing model's error (in that order) is the one reported */
    int jobs = omp_get_max_threads();
    #pragma omp parallel for schedule(dynamic, 1) num_threads(jobs) if (nm > 1)
    for (int i = 0; i < nm; i++) {
        const struct epar_bench_cell *cell = &plan->cells[me[i].k];
        char dir[512], path[4800];
        omp_set_num_threads(1);
        epar_exp_benchmark_cell_dir(c, cell, dir, sizeof dir);
        snprintf(path, sizeof path, "%s/%s/%s", root, dir, g->cell[me[i].k].checkpoint);
        me[i].st = eval_model(c, cell->task, path, &me[i]);
        if (me[i].st) {
            snprintf(me[i].err, sizeof me[i].err, "%s", epar_err_message());
            snprintf(me[i].hint, sizeof me[i].hint, "%s", epar_err_hint_text());
        }
    }
    for (int i = 0; !st && i < nm; i++) {
        const struct epar_bench_cell *cell = &plan->cells[me[i].k];
        size_t q = (size_t)cell->task * M + cell->mech;
        if (me[i].st) {
            st = epar_err_set(me[i].st, "%s", me[i].err);
            if (*me[i].hint) epar_err_hint("%s", me[i].hint);
            break;
        }
        st = emit_model(c, cell->task, cell->mech, &me[i], ht, bt, &share[q], bd + q * 2 * NB, &lr[q], &heads);
        have[q] = !st;
    }
    for (int i = 0; me && i < nm; i++) {
        free(me[i].hm);
        free(me[i].boost);
    }
    free(me);
    /* summaries over the learned models: per task and over all tasks ("all"); boost over the recall and needle tasks */
    double *v = st ? NULL : calloc((size_t)NT * M + 1, sizeof *v), mu, sd;
    if (!st && !v) st = epar_err_set(EPAR_ENOMEM, "out of memory");
    for (int t = -1; !st && t < NT; t++) {
        int n = 0;
        for (int tt = 0; tt < NT; tt++)
            for (int m = 0; (t < 0 || tt == t) && m < M; m++)
                if (have[(size_t)tt * M + m] && lr[(size_t)tt * M + m]) v[n++] = share[(size_t)tt * M + m];
        mean_sd(v, n, &mu, &sd);
        if (n && epar_csv_append(hs, "sidddi", t < 0 ? "all" : c->tasks[t].id, n, mu, sd, c->head_mask_threshold, heads))
            st = epar_err_set(EPAR_ENOMEM, "out of memory building head_masking_summary.csv");
        for (int rn = 0; !st && rn < 2; rn++)   /* a mode's factors in a row: the figure's lines */
            for (int f = 0; !st && f < NB; f++) {
                n = 0;
                for (int tt = 0; tt < NT; tt++)
                    for (int m = 0; (t < 0 || tt == t) && boosted_task(c, tt) && m < M; m++)
                        if (have[(size_t)tt * M + m] && lr[(size_t)tt * M + m])
                            v[n++] = bd[((size_t)tt * M + m) * 2 * NB + f * 2 + rn];
                mean_sd(v, n, &mu, &sd);
                if (n && epar_csv_append(bs, "sdsidd", t < 0 ? "all" : c->tasks[t].id, c->boost[f],
                                         rn ? "renormalised" : "as-written", n, mu, sd))
                    st = epar_err_set(EPAR_ENOMEM, "out of memory building boost_summary.csv");
            }
    }
    free(v);
    if (!st && ht->nrows > 0) {
        struct epar_exp_file files[] = {{"head_masking.csv", ht}, {"head_masking_summary.csv", hs}};
        st = epar_exp_write_tables(o, files, 2);
    }
    if (!st && bt->nrows > 0) {
        struct epar_exp_file files[] = {{"boost.csv", bt}, {"boost_summary.csv", bs}};
        st = epar_exp_write_tables(o, files, 2);
        if (!st) st = boost_figure(c, o);   /* drawn empty (a note) when no model learned */
    }
    epar_csv_free(ht); epar_csv_free(bt); epar_csv_free(hs); epar_csv_free(bs);
    free(share); free(bd); free(lr); free(have);
    return st;
}
