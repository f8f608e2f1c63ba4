/* The benchmark's statistics: the numbers its tables report, computed from the grid with lib/stats. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include "lib/csvout.h"
#include "lib/err.h"
#include "lib/metrics.h"
#include "lib/stats.h"
#include "experiments/benchmark/benchmark_int.h"

/* ------------------------------------------------------------------------------------------------ */
/* the cost cell's overheads                                                                       */

/* a comparison's overhead from its n pairs (struct overhead, benchmark_int.h: how it is measured); d: scratch (n) */
static struct overhead pair_overhead(const double *a, const double *b, const double *gen, int n, double level, double *d)
{
    struct overhead o = {NAN, NAN, NAN, NAN, NAN, n, 0};
    double mean, lo, hi;
    for (int i = 0; i < n; i++) d[i] = a[i] / b[i] - 1;
    epar_stats_mean_sd(d, (size_t)n, &mean, &o.sd);
    for (int i = 0; i < n; i++) d[i] = log(a[i] / b[i]);
    epar_stats_group_medians(d, gen, n, level, &mean, &lo, &hi, &o.groups);
    o.est = expm1(mean);
    o.lo = expm1(lo);
    o.hi = expm1(hi);
    o.hw = (o.hi - o.lo) / 2;
    return o;
}

static struct overhead cost_pair_overhead(const struct cost_pair *p, double level, double *scratch)
{
    int n = p->n_a < p->n_b ? p->n_a : p->n_b;
    return pair_overhead(p->a, p->b, p->gen, n < p->n_gen ? n : p->n_gen, level, scratch);
}

/* the widest half-width of the deciding comparisons (+inf while one has no interval yet; 0 without any) */
double epar_bench_cost_widest(const struct cost_cell *x, double level, double *scratch)
{
    double widest = 0;
    for (int k = 0; k < x->n_pair; k++)
        if (x->pair[k].decides) {
            struct overhead o = cost_pair_overhead(&x->pair[k], level, scratch);
            widest = fmax(widest, isfinite(o.hw) ? o.hw : INFINITY);
        }
    return widest;
}

/* a comparison's overhead from the cost cell's pairs (NaN, n 0 without the pair) */
struct overhead epar_bench_cost_overhead(const struct cost_pair *p, double level, double *scratch)
{
    struct overhead none = {NAN, NAN, NAN, NAN, NAN, 0, 0};
    return p ? cost_pair_overhead(p, level, scratch) : none;
}

/* pairs for a half-width of target: the interval's width falls as 1 / sqrt(generations), so as 1 / sqrt(pairs) */
double epar_bench_pairs_needed(const struct overhead *o, double target)
{
    return isfinite(o->hw) && o->hw > 0 && target > 0 ? ceil(o->n * pow(o->hw / target, 2)) : NAN;
}

static const struct cost_pair *find_pair(const struct cost_cell *x, const char *a, const char *b)
{
    for (int k = 0; k < x->n_pair; k++)
        if (!strcmp(x->pair[k].mechanism, a) && !strcmp(x->pair[k].against, b)) return &x->pair[k];
    return NULL;
}

/* cost.csv's numbers (struct cost_row) */
void epar_bench_cost_row(const struct epar_bench_cfg *c, const struct cost_cell *x, int m, double *d, struct cost_row *r)
{
    const struct cost_mech *a = &x->mech[m];
    int S = a->n_step;
    double att = 0, tot = 0, mean;
    for (int i = 0; i < S; i++) {
        d[i] = 1000 * a->step[i];
        tot += a->step[i];
        att += i < a->n_attention ? a->attention[i] : NAN;
    }
    epar_stats_mean_sd(d, (size_t)S, &mean, &r->step_ms_sd);
    gsl_sort(d, 1, (size_t)S);
    r->step_ms = S ? gsl_stats_median_from_sorted_data(d, 1, (size_t)S) : NAN;
    r->on = epar_bench_cost_overhead(find_pair(x, a->mechanism, epar_nnpos_name(EPAR_MECH_NONE)), c->level, d);
    r->ob = epar_bench_cost_overhead(find_pair(x, a->mechanism, epar_nnpos_name(EPAR_MECH_EPAR_BASIC)), c->level, d);
    /* fmax: NaN only if both */
    r->need = fmax(epar_bench_pairs_needed(&r->on, x->target), epar_bench_pairs_needed(&r->ob, x->target));
    r->gens = r->on.n ? r->on.groups : r->ob.n ? r->ob.groups : NAN;
    r->attention_share = att / tot;
    r->steps = S;
}

/* ------------------------------------------------------------------------------------------------ */
/* the grid's comparisons                                                                            */

/* paired comparison across seeds of per-seed relative differences sgn (x_s - y_s) / |mean y| (lib/stats: their mean,
 * the relative improvement, its sd, t, p, interval and detectable effect); n = 0 when mean y is 0 or not finite */
struct epar_stats_paired epar_bench_paired_test(const double *x, const double *y, int n, int higher_is_better, double level)
{
    struct epar_stats_paired r;
    double ym, ysd, d[EPAR_MAX_SEEDS] = {0};
    epar_stats_mean_sd(y, n, &ym, &ysd);
    if (!(fabs(ym) > 0) || !isfinite(ym)) n = 0;
    for (int i = 0; i < n; i++) d[i] = (higher_is_better ? 1 : -1) * (x[i] - y[i]) / fabs(ym);
    epar_stats_paired(d, n, level, &r);
    return r;
}

/* the best baseline of task t: the non-EPAR mechanism with the best mean (-1 if none) */
int epar_bench_best_baseline(const struct epar_bench_cfg *c, const struct grid *g, int t, int hib)
{
    int best = -1;
    double bm = NAN, sd;
    for (int m = 0; m < c->n_mech; m++) {
        if (is_epar(c->mech[m])) continue;
        double mean;
        epar_stats_mean_sd(gv(g, t, m, 0), g->S, &mean, &sd);
        if (best < 0 || (hib ? mean > bm : mean < bm)) {
            best = m;
            bm = mean;
        }
    }
    return best;
}

/* task t's chance level and its se (means over the task's cells), and how many mechanisms learned it (-1:
 * unknown, cells without a chance level) */
int epar_bench_task_learned(const struct epar_bench_cfg *c, const struct grid *g, int t, double *chance, double *se)
{
    size_t n = (size_t)g->M * g->S, off = (size_t)t * n;
    double sd;
    epar_stats_mean_sd(g->chance + off, (int)n, chance, &sd);
    epar_stats_mean_sd(g->chance_se + off, (int)n, se, &sd);
    if (!isfinite(*chance) || !isfinite(*se)) return -1;
    int hib = task_hib(c, t), learned = 0;
    for (int m = 0; m < g->M; m++) {
        double mean;
        epar_stats_mean_sd(gf(g, t, m, 0), g->S, &mean, &sd);
        learned += hib ? mean > *chance + LEARNED_Z * *se : mean < *chance - LEARNED_Z * *se;
    }
    return learned;
}

/* ---- EPAR against each baseline, pre-registered: no best baseline picked after the results ---- */

/* one comparison (struct versus): its paired test, the Holm-adjusted p left to versus_all */
static struct versus versus(const struct epar_bench_cfg *c, const struct grid *g, int t, int x, int y)
{
    return (struct versus){epar_bench_paired_test(gv(g, t, x, 0), gv(g, t, y, 0), g->S, prim_hib(c, t), c->level), NAN};
}

/* EPAR mechanism x against every baseline of task t (vs[m] for baseline m; NaN rows for the EPAR mechanisms) */
void epar_bench_versus_all(const struct epar_bench_cfg *c, const struct grid *g, int t, int x, struct versus *vs)
{
    double p[EPAR_MECH_COUNT] = {0}, adj[EPAR_MECH_COUNT];
    for (int m = 0; m < c->n_mech; m++) {
        if (is_epar(c->mech[m])) epar_stats_paired(NULL, 0, c->level, &vs[m].pr);
        else vs[m] = versus(c, g, t, x, m);
        p[m] = is_epar(c->mech[m]) ? NAN : vs[m].pr.p;
    }
    epar_stats_holm(p, adj, c->n_mech);
    for (int m = 0; m < c->n_mech; m++) vs[m].p_holm = adj[m];
}

int epar_bench_versus_summary(const struct epar_bench_cfg *c, const struct grid *g, int i, int x,
                              struct versus_sum *s)
{
    struct versus vs[EPAR_MECH_COUNT];
    epar_bench_versus_all(c, g, i, x, vs);
    int beats = 0, beaten = 0, n = 0, flat = 0;
    for (int m = 0; m < c->n_mech; m++) n += !is_epar(c->mech[m]);
    if (!n) return 0;
    double min_rel = INFINITY, min_lo = INFINITY, min_hi = INFINITY, holm_p = NAN, mde = -INFINITY, nonsup = INFINITY;
    double qa = g->S > 1 ? epar_stats_quantile(1 - (1 - c->level) / n, g->S - 1) : NAN;
    for (int m = 0; m < c->n_mech; m++) {
        if (is_epar(c->mech[m])) continue;
        const struct epar_stats_paired *pr = &vs[m].pr;
        flat += pr->degenerate;
        min_rel = isnan(pr->mean) || isnan(min_rel) ? NAN : fmin(min_rel, pr->mean);
        min_lo = isnan(pr->lo) || isnan(min_lo) ? NAN : fmin(min_lo, pr->lo);
        min_hi = isnan(pr->hi) || isnan(min_hi) ? NAN : fmin(min_hi, pr->hi);
        if (!pr->degenerate) {
            mde = fmax(mde, epar_stats_mde(pr->sd, pr->n, c->level, 0.8, n));
            nonsup = fmin(nonsup, pr->mean + qa * pr->sd / sqrt((double)pr->n));
        }
        beats += pr->lo > 0;
        if (pr->mean < 0 && isfinite(vs[m].p_holm)) {
            holm_p = isnan(holm_p) ? vs[m].p_holm : fmin(holm_p, vs[m].p_holm);
            beaten += vs[m].p_holm < 1 - c->level;
        }
    }
    *s = (struct versus_sum){min_rel, min_lo, min_hi, holm_p, isfinite(nonsup) ? nonsup : NAN, isfinite(mde) ? mde : NAN,
                             beats, beaten, flat};
    return 1;
}

/* when to use (struct condition_gain): the per-seed mean over the condition's tasks of the relative differences, then
 * mean, sd, t and p across seeds */
int epar_bench_condition_gain(const struct epar_bench_cfg *c, const struct grid *g, const char *cond, int x,
                              int versus_best, struct condition_gain *r)
{
    double gain[EPAR_MAX_SEEDS] = {0};
    char tasks[512] = "";
    int nt = 0, nl = 0;   /* nl: tasks learned by some mechanism (-1: unknown) */
    for (int i = 0; i < c->n_tasks; i++) {
        if (strcmp(c->tasks[i].condition, cond)) continue;
        int hib = prim_hib(c, i);
        double ch, chse;
        int lt = epar_bench_task_learned(c, g, i, &ch, &chse);
        nl = nl < 0 || lt < 0 ? -1 : nl + (lt > 0);
        int y = !versus_best ? epar_bench_mech_index(c, EPAR_MECH_NONE) : epar_bench_best_baseline(c, g, i, hib);
        if (y < 0) return 0;
        double ym, ysd;
        epar_stats_mean_sd(gv(g, i, y, 0), g->S, &ym, &ysd);
        for (int s = 0; s < g->S; s++)
            gain[s] += (hib ? 1 : -1) * (*gv(g, i, x, s) - *gv(g, i, y, s)) / fabs(ym);
        size_t l = strlen(tasks);
        snprintf(tasks + l, sizeof tasks - l, "%s%s", nt ? " " : "", c->tasks[i].id);
        nt++;
    }
    if (!nt) return 0;
    for (int s = 0; s < g->S; s++) gain[s] /= nt;
    /* the paired test of the gains against 0 (x = gain + 1, y = 1: relative difference = gain) */
    double one[EPAR_MAX_SEEDS], xg[EPAR_MAX_SEEDS];
    for (int s = 0; s < g->S; s++) {
        one[s] = 1.0;
        xg[s] = 1.0 + gain[s];
    }
    snprintf(r->tasks, sizeof r->tasks, "%s", tasks);
    r->n_tasks = nt;
    r->learned = nl;
    r->pr = epar_bench_paired_test(xg, one, g->S, 1, c->level);
    return 1;
}

/* sanity (struct sanity) */
void epar_bench_sanity(const struct epar_bench_cfg *c, const struct grid *g, int i, int m, struct sanity *s)
{
    int hib = task_hib(c, i), bpc = !hib;
    double chance, se, sd;
    if (epar_bench_task_learned(c, g, i, &chance, &se) < 0) chance = se = NAN;
    double mean;
    epar_stats_mean_sd(gf(g, i, m, 0), g->S, &mean, &sd);
    double gain = hib ? mean - chance : chance - mean, z = se > 0 ? gain / se : NAN;
    double rel = chance != 0 ? gain / fabs(chance) : NAN;
    int learned = isfinite(z) && z > LEARNED_Z, meets = bpc ? isfinite(rel) && rel >= c->sanity_margin : -1;
    *s = (struct sanity){mean, chance, se, z, rel, learned, meets};
}

/* accuracy by distance (struct distance_bin) */
int epar_bench_distance_bins(const struct epar_bench_cfg *c, const struct grid *g, int i, int m, struct distance_bin *b)
{
    int nb = epar_exp_benchmark_distance_bin(c, i, 0, NULL, NULL);
    for (int bin = 0; bin < nb; bin++) {
        int lo, hi;
        epar_exp_benchmark_distance_bin(c, i, bin, &lo, &hi);
        double acc[EPAR_MAX_SEEDS];
        long answers = 0;
        for (int s = 0; s < g->S; s++) {
            int k = (i * c->n_mech + m) * g->S + s;
            const struct train_cell *x = &g->cell[k];
            long cc = 0, ss = 0;
            for (int d = lo; d <= hi; d++) {
                cc += d < x->n_correct ? x->correct[d] : 0;
                ss += d < x->n_answers ? x->answers[d] : 0;
            }
            acc[s] = ss > 0 ? (double)cc / ss : NAN;
            answers += ss;
        }
        b[bin] = (struct distance_bin){lo, hi, NAN, NAN, answers};
        epar_stats_mean_sd(acc, g->S, &b[bin].mean, &b[bin].sd);
    }
    return nb;
}

/* steps to learn: per cell, the first evaluation step from which the eval metric stays beyond the task's chance
 * level by more than LEARNED_Z of its standard errors to the end of training (NaN: never); per task and mechanism
 * the mean over the seeds that learned, and how many did. From the cells' learning_curve.csv. */
static int learn_step(const char *root, const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, int k,
                      double chance, double se, int hib, double *step)
{
    char dir[512], path[4800];
    epar_exp_benchmark_cell_dir(c, &plan->cells[k], dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%s/learning_curve.csv", root, dir);
    struct epar_table *t = NULL;
    if (epar_csv_read(path, &t)) return epar_err_set(EPAR_EIO, "cannot read '%s': %s", path, epar_err_message());
    *step = NAN;
    for (size_t r = t->nrows; r-- > 0;) {   /* from the end back to the first row not beyond chance */
        double v = epar_csv_get(t, r, "eval_metric"), gain = hib ? v - chance : chance - v;
        if (!(gain > LEARNED_Z * se)) break;
        *step = epar_csv_get(t, r, "step");
    }
    epar_csv_free(t);
    return EPAR_OK;
}

/* steps to learn of task i, mechanism m over the seeds (struct learn) */
int epar_bench_steps_to_learn(const char *root, const struct epar_bench_cfg *c, const struct epar_bench_plan *plan,
                              const struct grid *g, int i, int m, struct learn *r)
{
    double chance, se;
    epar_bench_task_learned(c, g, i, &chance, &se);
    double v[EPAR_MAX_SEEDS];
    int n = 0, st = EPAR_OK;
    r->mean = r->sd = NAN;
    for (int s = 0; s < g->S && !st; s++) {
        double x = NAN;
        st = learn_step(root, c, plan, (i * c->n_mech + m) * g->S + s, chance, se, task_hib(c, i), &x);
        if (!st && isfinite(x)) v[n++] = x;
    }
    if (n) epar_stats_mean_sd(v, n, &r->mean, &r->sd);
    r->learned = n;
    return st;
}

void epar_bench_extrap_point(const struct epar_bench_cfg *c, const struct grid *g, int i, int m, int e,
                             struct extrap_point *r)
{
    double v[EPAR_MAX_SEEDS];
    r->defined = 1;
    for (int s = 0; s < g->S; s++) {
        const struct train_cell *x = &g->cell[(i * c->n_mech + m) * g->S + s];
        v[s] = e < x->n_extrap ? x->extrap[e].value : 0;
        if (e >= x->n_extrap || !x->extrap[e].defined) r->defined = 0;
    }
    r->mean = r->sd = NAN;
    if (r->defined) epar_stats_mean_sd(v, g->S, &r->mean, &r->sd);
}

int epar_bench_param_rows(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, struct param_row *rows,
                          double *worst)
{
    int n = 0, none = epar_bench_mech_index(c, EPAR_MECH_NONE);
    *worst = 0;
    for (int k = 0; k < plan->n; k++) {
        const struct epar_bench_cell *cell = &plan->cells[k];
        if (cell->seed != 0) continue;
        size_t p = cell->task >= 0 ? cell->params : plan->cost_params[cell->mech];
        size_t ref = 0;
        for (int q = 0; q < plan->n; q++)
            if (plan->cells[q].task == cell->task && plan->cells[q].seed == 0 && plan->cells[q].mech == none)
                ref = cell->task >= 0 ? plan->cells[q].params : plan->cost_params[none];
        for (int m = 0; m < (cell->task >= 0 ? 1 : c->n_mech); m++) {
            int mm = cell->task >= 0 ? cell->mech : m;
            if (cell->task < 0) p = plan->cost_params[mm];
            if (cell->task < 0 && none >= 0) ref = plan->cost_params[none];
            double rel = ref ? ((double)p - (double)ref) / (double)ref : NAN;
            if (fabs(rel) > *worst) *worst = fabs(rel);
            /* the cell's learning rate (its mechanism's scale on this task's lr_family) and steps */
            struct epar_bench_cell probe = *cell;
            probe.mech = mm;
            struct epar_train_cfg tc;
            epar_exp_benchmark_cell_cfg(c, &probe, &tc);
            rows[n++] = (struct param_row){.task = cell->task, .mech = mm,
                                           .mlp = cell->task >= 0 ? cell->mlp : plan->cost_mlp[mm],
                                           .within = fabs(rel) <= c->param_tol, .steps = tc.optim.steps,
                                           .params = (double)p, .rel = rel, .lr = tc.optim.lr,
                                           .lr_scale = tc.optim.lr / c->b.lr};
        }
    }
    return n;
}

double epar_bench_slope_spearman(const struct epar_inspect_summary *a, int l)
{
    double x[64], y[64], work[128];
    int n = 0;
    for (int k = 0; k < a->n_head; k++)
        if (a->head[k].layer == l && n < 64) {
            x[n] = a->head[k].slope;
            y[n++] = a->head[k].mean_distance;
            if (!isfinite(x[n - 1]) || !isfinite(y[n - 1])) return NAN;
        }
    return n >= 2 ? epar_metric_spearman(x, y, (size_t)n, work) : NAN;
}

/* the plus-four standard error of a share k / n */
static double share_se(int k, int n)
{
    double p = (k + 2.0) / (n + 4.0);
    return n > 0 ? sqrt(p * (1 - p) / (n + 4.0)) : NAN;
}

/* the per-head shares of a cell's summary (NaN without its per-head record) */
static void head_shares(const struct epar_bench_cfg *c, const struct epar_inspect_summary *a, struct trained_attn *r)
{
    r->positional_share = r->similar_layer_share = r->similar_other_share = r->slope_spearman = NAN;
    r->positional_share_se = r->similar_layer_share_se = r->similar_other_share_se = r->slope_spearman_se = NAN;
    if (a->n_head < 1) return;
    int pos = 0, sl = 0, so = 0, nsl = 0, nso = 0, layers = 0;
    for (int k = 0; k < a->n_head; k++) {
        const struct epar_inspect_head *h = &a->head[k];
        pos += h->pattern_best >= c->head_pattern;
        if (!isnan(h->similar_layer)) nsl++, sl += h->similar_layer >= c->head_similarity;
        if (!isnan(h->similar_other)) nso++, so += h->similar_other >= c->head_similarity;
        if (h->layer + 1 > layers) layers = h->layer + 1;
    }
    r->positional_share = (double)pos / a->n_head;
    r->similar_layer_share = nsl ? (double)sl / nsl : NAN;
    r->similar_other_share = nso ? (double)so / nso : NAN;
    r->positional_share_se = share_se(pos, a->n_head);
    r->similar_layer_share_se = nsl ? share_se(sl, nsl) : NAN;
    r->similar_other_share_se = nso ? share_se(so, nso) : NAN;
    double sum = 0;
    for (int l = 0; l < layers; l++) sum += epar_bench_slope_spearman(a, l);
    r->slope_spearman = sum / layers;
    int per_layer = a->n_head / layers;
    r->slope_spearman_se = isfinite(r->slope_spearman) && per_layer > 1 ? 1 / sqrt((per_layer - 1.0) * layers) : NAN;
}

int epar_bench_trained_attention(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan,
                                 const struct grid *g, struct trained_attn *rows)
{
    int none = epar_bench_mech_index(c, EPAR_MECH_NONE), n = 0;
    /* the cell of (task, mechanism, seed) in the plan */
    int *at = calloc((size_t)g->NT * g->M * g->S, sizeof *at);
    if (!at) return -1;
    for (int k = 0; k < plan->n; k++)
        if (plan->cells[k].task >= 0 && plan->cells[k].task < c->n_tasks && plan->cells[k].mech < c->n_mech)   /* not the study's own cells */
            at[gi(g, plan->cells[k].task, plan->cells[k].mech, plan->cells[k].seed)] = k + 1;
    for (int task = 0; task < c->n_tasks; task++)
        for (int m = 0; m < c->n_mech; m++)
            for (int s = 0; s < g->S; s++) {
                int k = at[gi(g, task, m, s)] - 1, kn = none >= 0 ? at[gi(g, task, none, s)] - 1 : -1;
                if (k < 0 || !g->cell[k].have_attn) continue;
                const struct epar_inspect_summary *a = &g->cell[k].attn;
                int hn = kn >= 0 && g->cell[kn].have_attn;
                rows[n] = (struct trained_attn){
                    .task = task, .mech = m, .seed = s, .a = a,
                    .distance_ratio_vs_none = hn ? a->distance_ratio - g->cell[kn].attn.distance_ratio : NAN};
                head_shares(c, a, &rows[n]);
                struct trained_attn rn = {0};
                if (hn) head_shares(c, &g->cell[kn].attn, &rn);
                rows[n].positional_share_vs_none = hn ? rows[n].positional_share - rn.positional_share : NAN;
                n++;
            }
    free(at);
    return n;
}
