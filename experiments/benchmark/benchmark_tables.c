/* The benchmark's tables: every CSV, main_table.md and run.json, from the grid of the cells' numbers. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/csvout.h"
#include "lib/err.h"
#include "lib/outdir.h"
#include "lib/stats.h"
#include "experiments/benchmark/benchmark_int.h"
#include "experiments/common.h"
#include "experiments/train/inspect.h"

/* ------------------------------------------------------------------------------------------------ */
/* tables                                                                                             */

static void set_num(struct epar_table *t, const char *col, double v)
{
    int k = epar_csv_col(t, col);
    if (k >= 0 && t->nrows > 0) t->cells[(t->nrows - 1) * (size_t)t->ncols + k].v = v;
}

#define CMP_N 5
static const char *const cmp_names[CMP_N] = {"basic_vs_best", "enhanced_vs_best", "enhanced_vs_basic", "basic_vs_none",
                                             "enhanced_vs_none"};

/* x and y mechanisms of comparison k for task t (-1: not in the grid) */
static void cmp_pair(const struct epar_bench_cfg *c, int k, int best, int *x, int *y)
{
    int b = epar_bench_mech_index(c, EPAR_MECH_EPAR_BASIC), e = epar_bench_mech_index(c, EPAR_MECH_EPAR_ENHANCED),
        n = epar_bench_mech_index(c, EPAR_MECH_NONE);
    int xs[CMP_N] = {b, e, e, b, e}, ys[CMP_N] = {best, best, b, n, n};
    *x = xs[k];
    *y = ys[k];
}

/* comparisons.csv: one row per task, EPAR form and baseline */
static struct epar_table *comparisons_table(const struct epar_bench_cfg *c, const struct grid *g)
{
    struct epar_table *t = epar_csv_new("task,epar,baseline,seeds,rel,rel_sd,lo,hi,t,p,p_holm,mde,better");
    static const enum epar_mech_id ep[2] = {EPAR_MECH_EPAR_BASIC, EPAR_MECH_EPAR_ENHANCED};
    for (int i = 0; t && i < c->n_tasks; i++)
        for (int e = 0; e < 2; e++) {
            int x = epar_bench_mech_index(c, ep[e]);
            if (x < 0) continue;
            struct versus vs[EPAR_MECH_COUNT];
            epar_bench_versus_all(c, g, i, x, vs);
            for (int m = 0; m < c->n_mech; m++) {
                if (is_epar(c->mech[m])) continue;
                const struct versus *v = &vs[m];
                const char *better = v->pr.lo > 0 ? "epar" : v->pr.mean < 0 && v->p_holm < 1 - c->level ? "baseline" : "";
                if (epar_csv_append(t, "sssidddddddds", c->tasks[i].id, epar_nnpos_name(ep[e]), epar_bench_mech_name(c, m),
                                    g->S, v->pr.mean, v->pr.sd, v->pr.lo, v->pr.hi, v->pr.t, v->pr.p, v->p_holm,
                                    v->pr.mde, better)) {
                    epar_csv_free(t);
                    return NULL;
                }
            }
        }
    return t;
}

/* main_table.csv's columns of form `name` (<name>_vs_baselines_min_rel, ...): epar_bench_versus_summary's numbers */
static void versus_columns(struct epar_table *t, const char *name, const struct versus_sum *s)
{
    char col[96];
#define SET(suffix, v)                                      \
    do {                                                    \
        snprintf(col, sizeof col, "%s" suffix, name);       \
        set_num(t, col, v);                                 \
    } while (0)
    SET("_vs_baselines_min_rel", s->min_rel);
    SET("_vs_baselines_min_lo", s->min_lo);
    SET("_vs_baselines_min_hi", s->min_hi);
    SET("_vs_baselines_holm_p", s->holm_p);
    SET("_vs_baselines_nonsup", s->nonsup);
    SET("_beats", s->beats);
    SET("_beaten_holm", s->beaten);
    SET("_no_spread", s->flat);
    SET("_mde", s->mde);
#undef SET
}

/* the name of task t's primary metric: the task's metric (accuracy, bpc) for final, else the candidate's name with it,
 * e.g. "curve:accuracy", "final_loss" */
static void primary_name(const struct epar_bench_cfg *c, int t, char *buf, size_t n)
{
    enum epar_bench_primary k = c->tasks[t].primary;
    const char *m = epar_task_table[c->tasks[t].task.id].metric;
    if (k == EPAR_BENCH_FINAL) snprintf(buf, n, "%s", m);
    else if (k == EPAR_BENCH_CURVE) snprintf(buf, n, "curve:%s", m);
    else snprintf(buf, n, "%s", epar_bench_primary_names[k]);
}

/* metrics.csv: every candidate metric of every task x mechanism (mean and sd across seeds), the primary marked: the
 * secondary columns of the table, and what the power study of docs/TASKS.md compares */
static struct epar_table *metrics_table(const struct epar_bench_cfg *c, const struct grid *g)
{
    struct epar_table *t = epar_csv_new("task,mechanism,metric,primary,higher_is_better,mean,sd,seeds");
    for (int i = 0; t && i < c->n_tasks; i++)
        for (int m = 0; m < c->n_mech; m++)
            for (int k = 0; k < EPAR_BENCH_NPRIMARY; k++) {
                double mean, sd;
                epar_stats_mean_sd(g->cand[k] + gi(g, i, m, 0), g->S, &mean, &sd);
                if (epar_csv_append(t, "sssiiddi", c->tasks[i].id, epar_bench_mech_name(c, m),
                                    epar_bench_primary_names[k], (int)(c->tasks[i].primary == (enum epar_bench_primary)k),
                                    cand_hib(c, i, k), mean, sd, g->S)) {
                    epar_csv_free(t);
                    return NULL;
                }
            }
    return t;
}

static struct epar_table *main_table(const struct epar_bench_cfg *c, const struct grid *g)
{
    char head[4096] = "task,paper,condition,length,metric,higher_is_better,seeds";
    for (int m = 0; m < c->n_mech; m++) {
        size_t l = strlen(head);
        snprintf(head + l, sizeof head - l, ",%s_mean,%s_sd", epar_bench_mech_name(c, m), epar_bench_mech_name(c, m));
    }
    strcat(head, ",best_baseline,best_baseline_mean,best_baseline_sd,chance,chance_se,learned,baselines");
    for (int k = 0; k < 2; k++) {
        const char *f = k ? "enhanced" : "basic";
        size_t l = strlen(head);
        snprintf(head + l, sizeof head - l, ",%s_vs_baselines_min_rel,%s_vs_baselines_min_lo,%s_vs_baselines_min_hi,"
                 "%s_vs_baselines_holm_p,%s_vs_baselines_nonsup,%s_beats,%s_beaten_holm,%s_no_spread,%s_mde",
                 f, f, f, f, f, f, f, f, f);
    }
    for (int k = 0; k < CMP_N; k++) {
        size_t l = strlen(head);
        snprintf(head + l, sizeof head - l, ",%s_rel,%s_rel_sd,%s_t,%s_p", cmp_names[k], cmp_names[k], cmp_names[k],
                 cmp_names[k]);
    }
    struct epar_table *t = epar_csv_new(head);
    for (int i = 0; t && i < c->n_tasks; i++) {
        int hib = prim_hib(c, i), best = epar_bench_best_baseline(c, g, i, hib);
        char metric[64];
        primary_name(c, i, metric, sizeof metric);
        if (epar_csv_append(t, "sssisii", c->tasks[i].id, c->tasks[i].paper, c->tasks[i].condition,
                            c->tasks[i].task.length, metric, hib, g->S)) {
            epar_csv_free(t);
            return NULL;
        }
        char col[96];
        for (int m = 0; m < c->n_mech; m++) {
            double mean, sd;
            epar_stats_mean_sd(gv(g, i, m, 0), g->S, &mean, &sd);
            snprintf(col, sizeof col, "%s_mean", epar_bench_mech_name(c, m));
            set_num(t, col, mean);
            snprintf(col, sizeof col, "%s_sd", epar_bench_mech_name(c, m));
            set_num(t, col, sd);
        }
        struct epar_cell *row = t->cells + (t->nrows - 1) * (size_t)t->ncols;
        int bc = epar_csv_col(t, "best_baseline");
        row[bc].s = strdup(best >= 0 ? epar_bench_mech_name(c, best) : "");
        if (!row[bc].s) {
            epar_csv_free(t);
            return NULL;
        }
        if (best >= 0) {
            double mean, sd;
            epar_stats_mean_sd(gv(g, i, best, 0), g->S, &mean, &sd);
            set_num(t, "best_baseline_mean", mean);
            set_num(t, "best_baseline_sd", sd);
        }
        double chance, chance_se;
        int learned = epar_bench_task_learned(c, g, i, &chance, &chance_se);
        set_num(t, "chance", chance);
        set_num(t, "chance_se", chance_se);
        set_num(t, "learned", learned < 0 ? NAN : learned);
        int nb = 0;
        for (int m = 0; m < c->n_mech; m++) nb += !is_epar(c->mech[m]);
        set_num(t, "baselines", nb);
        int xb = epar_bench_mech_index(c, EPAR_MECH_EPAR_BASIC), xe = epar_bench_mech_index(c, EPAR_MECH_EPAR_ENHANCED);
        struct versus_sum vsum;
        if (xb >= 0 && epar_bench_versus_summary(c, g, i, xb, &vsum)) versus_columns(t, "basic", &vsum);
        if (xe >= 0 && epar_bench_versus_summary(c, g, i, xe, &vsum)) versus_columns(t, "enhanced", &vsum);
        for (int k = 0; k < CMP_N; k++) {
            int x, y;
            cmp_pair(c, k, best, &x, &y);
            if (x < 0 || y < 0) continue;
            struct epar_stats_paired pr = epar_bench_paired_test(gv(g, i, x, 0), gv(g, i, y, 0), g->S, hib, c->level);
            snprintf(col, sizeof col, "%s_rel", cmp_names[k]);
            set_num(t, col, pr.mean);
            snprintf(col, sizeof col, "%s_rel_sd", cmp_names[k]);
            set_num(t, col, pr.sd);
            snprintf(col, sizeof col, "%s_t", cmp_names[k]);
            set_num(t, col, pr.t);
            snprintf(col, sizeof col, "%s_p", cmp_names[k]);
            set_num(t, col, pr.p);
        }
    }
    return t;
}

/* when to use: per condition, EPAR's gain over none and over each task's best baseline (epar_bench_condition_gain) */
static struct epar_table *when_table(const struct epar_bench_cfg *c, const struct grid *g)
{
    struct epar_table *t = epar_csv_new("condition,mechanism,versus,tasks,n_tasks,gain,gain_sd,seeds,t,p,learned_tasks");
    const char *conds[EPAR_BENCH_MAX_TASKS];
    int nc = 0;
    for (int i = 0; i < c->n_tasks; i++) {
        int seen = 0;
        for (int k = 0; k < nc; k++) seen |= !strcmp(conds[k], c->tasks[i].condition);
        if (!seen) conds[nc++] = c->tasks[i].condition;
    }
    static const enum epar_mech_id ep[2] = {EPAR_MECH_EPAR_BASIC, EPAR_MECH_EPAR_ENHANCED};
    for (int k = 0; t && k < nc; k++)
        for (int e = 0; e < 2; e++)
            for (int vs = 0; vs < 2; vs++) {
                int x = epar_bench_mech_index(c, ep[e]);
                if (x < 0) continue;
                struct condition_gain cg;
                if (!epar_bench_condition_gain(c, g, conds[k], x, vs, &cg)) continue;
                const struct epar_stats_paired pr = cg.pr;
                if (epar_csv_append(t, "ssssiddiddd", conds[k], epar_nnpos_name(ep[e]), vs ? "best_baseline" : "none",
                                    cg.tasks, cg.n_tasks, pr.mean, pr.sd, g->S, pr.t, pr.p,
                                    cg.learned < 0 ? NAN : (double)cg.learned)) {
                    epar_csv_free(t);
                    return NULL;
                }
            }
    return t;
}

static struct epar_table *learn_table(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan,
                                      const struct grid *g, const char *root, int *st)
{
    struct epar_table *t = epar_csv_new("task,mechanism,steps,seeds,learned_seeds,steps_to_learn,steps_to_learn_sd,"
                                        "tokens_to_learn");
    for (int i = 0; t && !*st && i < c->n_tasks; i++) {
        for (int m = 0; m < c->n_mech && !*st; m++) {
            struct learn r;
            *st = epar_bench_steps_to_learn(root, c, plan, g, i, m, &r);
            double mean = r.mean, sd = r.sd;
            int n = r.learned;
            int T = c->tasks[i].task.length, B = !strcmp(c->tasks[i].length_class, "long") ? c->b.long_batch : c->b.batch;
            if (!*st && epar_csv_append(t, "ssiiiddd", c->tasks[i].id, epar_bench_mech_name(c, m),
                                        (int)lround(c->b.steps * c->tasks[i].steps_scale), g->S, n,
                                        mean, sd, mean * B * T)) {
                epar_csv_free(t);
                return NULL;
            }
        }
    }
    return t;
}

/* sanity.csv: per task and mechanism, epar_bench_sanity's numbers, and the margin on bpc tasks. *failed counts the
 * mechanisms that miss the margin on a bpc task. */
static struct epar_table *sanity_table(const struct epar_bench_cfg *c, const struct grid *g, int *failed)
{
    struct epar_table *t = epar_csv_new("task,mechanism,mean,chance,chance_se,z_vs_chance,rel_vs_chance,learned,margin,meets_margin");
    *failed = 0;
    for (int i = 0; t && i < c->n_tasks; i++)
        for (int m = 0; m < c->n_mech; m++) {
            struct sanity s;
            epar_bench_sanity(c, g, i, m, &s);
            *failed += s.meets == 0;
            if (epar_csv_append(t, "ssddddddds", c->tasks[i].id, epar_bench_mech_name(c, m), s.mean, s.chance, s.se, s.z,
                                s.rel, (double)s.learned, s.meets >= 0 ? c->sanity_margin : NAN,
                                s.meets < 0 ? "" : s.meets ? "yes" : "no")) {
                epar_csv_free(t);
                return NULL;
            }
        }
    return t;
}

static struct epar_table *extrap_table(const struct epar_bench_cfg *c, const struct grid *g,
                                       const struct epar_bench_plan *plan)
{
    struct epar_table *t = epar_csv_new("task,mechanism,length,train_length,value,value_sd,seeds,defined,posfx_L");
    for (int i = 0; t && i < c->n_tasks; i++) {
        if (c->tasks[i].task.id != EPAR_TASK_LM || c->tasks[i].task.shuffle) continue;
        for (int m = 0; m < c->n_mech; m++)
            for (int e = 0; e < c->b.n_extrap; e++) {
                struct extrap_point x;
                epar_bench_extrap_point(c, g, i, m, e, &x);
                const char *L = c->base.pos.posfx_length > 0 ? "fixed (posfx_length)" : "the evaluation length";
                if (!is_epar(c->mech[m])) L = "";
                if (epar_csv_append(t, "ssiiddiis", c->tasks[i].id, epar_bench_mech_name(c, m), c->b.extrap[e],
                                    c->tasks[i].task.length, x.mean, x.sd, g->S, x.defined, L)) {
                    epar_csv_free(t);
                    return NULL;
                }
            }
    }
    (void)plan;
    return t;
}

static struct epar_table *distance_table(const struct epar_bench_cfg *c, const struct grid *g)
{
    struct epar_table *t = epar_csv_new("task,mechanism,bin,distance_lo,distance_hi,accuracy,accuracy_sd,seeds,answers");
    for (int i = 0; t && i < c->n_tasks; i++) {
        if (c->tasks[i].task.id != EPAR_TASK_NEEDLE) continue;
        struct distance_bin *db = calloc((size_t)c->distance_bins, sizeof *db);
        if (!db) {
            epar_csv_free(t);
            return NULL;
        }
        for (int m = 0; m < c->n_mech; m++)
            for (int bin = 0, nb = epar_bench_distance_bins(c, g, i, m, db); bin < nb; bin++) {
                int lo = db[bin].lo, hi = db[bin].hi;
                double mean = db[bin].mean, sd = db[bin].sd;
                long answers = db[bin].answers;
                if (epar_csv_append(t, "ssiiiddii", c->tasks[i].id, epar_bench_mech_name(c, m), bin, lo, hi, mean, sd,
                                    g->S, (int)answers)) {
                    free(db);
                    epar_csv_free(t);
                    return NULL;
                }
            }
        free(db);
    }
    return t;
}

static struct epar_table *params_table(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, double *worst)
{
    struct epar_table *t = epar_csv_new("task,mechanism,params,mlp,rel_diff_vs_none,within_tolerance,lr,lr_scale,steps");
    struct param_row *rows = malloc(((size_t)plan->n * (c->n_mech + 1) + 1) * sizeof *rows);
    int n = rows ? epar_bench_param_rows(c, plan, rows, worst) : 0;
    for (int k = 0; t && rows && k < n; k++) {
        const struct param_row *r = &rows[k];
        if (epar_csv_append(t, "ssdididdi", r->task >= 0 ? c->tasks[r->task].id : "cost", epar_bench_mech_name(c, r->mech),
                            r->params, r->mlp, r->rel, r->within, r->lr, r->lr_scale, r->steps)) {
            epar_csv_free(t);
            t = NULL;
        }
    }
    if (!rows) {
        epar_csv_free(t);
        t = NULL;
    }
    free(rows);
    return t;
}

/* cost.csv from the cost cell: per mechanism epar_bench_cost_row's numbers */
static struct epar_table *cost_table(const struct epar_bench_cfg *c, const struct cost_cell *x)
{
    struct epar_table *t = epar_csv_new("mechanism,task,length,batch,params,step_ms,step_ms_sd,tokens_per_s,peak_mb,"
                                        "attention_share,overhead_vs_none,overhead_vs_none_sd,overhead_vs_none_hw,"
                                        "overhead_vs_basic,overhead_vs_basic_sd,overhead_vs_basic_hw,repeats,repeats_needed,"
                                        "overhead_vs_none_lo,overhead_vs_none_hi,overhead_vs_basic_lo,"
                                        "overhead_vs_basic_hi,pairs_vs_basic,steps,generations");
    int L = x->length, B = x->batch, n = 0;
    for (int m = 0; m < x->n_mech; m++) n = x->mech[m].n_step > n ? x->mech[m].n_step : n;
    double *d = malloc(((size_t)n + 1) * sizeof *d);
    if (!d) {
        epar_csv_free(t);
        return NULL;
    }
    for (int m = 0; t && m < x->n_mech; m++) {
        const struct cost_mech *a = &x->mech[m];
        struct cost_row r;
        epar_bench_cost_row(c, x, m, d, &r);
        const struct overhead on = r.on, ob = r.ob;
        double med = r.step_ms;
        if (epar_csv_append(t, "ssiiddddddddddddddddddddd", a->mechanism, x->task, L, B, (double)a->params, med,
                            r.step_ms_sd, (double)B * L / (med / 1000), a->bytes / 1e6, r.attention_share, on.est, on.sd,
                            on.hw, ob.est, ob.sd, ob.hw, on.n ? (double)on.n : NAN, r.need, on.lo, on.hi, ob.lo, ob.hi,
                            ob.n ? (double)ob.n : NAN, (double)r.steps, r.gens)) {
            epar_csv_free(t);
            t = NULL;
        }
    }
    free(d);
    return t;
}

/* main_table.md's "mean ± sd" of <prefix>_mean/_sd in row r: "n/a" without a mean (the mechanism is not in the
 * grid), the mean alone without an sd (one seed) */
static void md_mean_sd(const struct epar_table *t, size_t r, const char *prefix, char *buf, size_t n)
{
    char col[96];
    snprintf(col, sizeof col, "%s_mean", prefix);
    double mean = epar_csv_get(t, r, col);
    snprintf(col, sizeof col, "%s_sd", prefix);
    double sd = epar_csv_get(t, r, col);
    if (!isfinite(mean)) snprintf(buf, n, "n/a");
    else if (!isfinite(sd)) snprintf(buf, n, "%.4g", mean);
    else snprintf(buf, n, "%.4g ± %.2g", mean, sd);
}

/* "beats / beaten of nb" of EPAR form `form` in row r; "n/a" when the grid has no such mechanism (NaN counts) */
static void md_beats(const struct epar_table *t, size_t r, const char *form, double nb, char *buf, size_t n)
{
    char col[96];
    snprintf(col, sizeof col, "%s_beats", form);
    double beats = epar_csv_get(t, r, col);
    snprintf(col, sizeof col, "%s_beaten_holm", form);
    double beaten = epar_csv_get(t, r, col);
    if (!isfinite(beats) || !isfinite(beaten) || !isfinite(nb)) snprintf(buf, n, "n/a");
    else snprintf(buf, n, "%d / %d of %d", (int)beats, (int)beaten, (int)nb);
}

static int write_markdown(const struct epar_bench_cfg *c, const struct epar_table *t, const char *path)
{
    struct epar_out_file w;
    FILE *f = epar_out_fopen(&w, path);
    if (!f) return EPAR_EIO;
    fprintf(f, "# epar benchmark, budget `%s`: the main table on proxy tasks\n\n", c->b.name);
    fprintf(f, "Mean ± sd across %d seed(s); relative improvement = per seed sign × (EPAR − baseline) / |mean baseline| "
               "(positive = better, also for bits per character), averaged over the seeds; tests: two-sided paired "
               "t-tests across seeds (GSL `gsl_cdf_tdist_Q`), undefined (nan) when the differences have no spread. Every cell: the same steps, batch, length and tokens; "
               "parameter counts within %g %% of `none` (params.csv).\n\n", c->b.n_seeds, 100 * c->param_tol);
    fprintf(f, "Chance: the metric of the best constant answer on the same evaluation items (the most frequent answer; "
               "for bits per character the entropy of the characters) ± its standard error; learned: how many of the %d "
               "mechanisms beat it by more than %g standard errors. On a task none learned, every model answers like a "
               "constant and the comparison says nothing about EPAR (the audit calls its proxy claims inconclusive).\n\n",
               c->n_mech, LEARNED_Z);
    fprintf(f, "EPAR against each baseline (pre-registered: no baseline is picked after the results): the paired relative "
               "improvement of each of the %d baselines, with its %g %% interval; *beats*: how many baselines the "
               "interval puts EPAR above, *beaten*: how many are better after a Holm adjustment across the baselines "
               "(comparisons.csv has every pair); MDE: the largest minimum detectable effect at 80 %% power with these "
               "seeds, i.e. smaller true differences would mostly go unseen. The best baseline is descriptive only: it "
               "is chosen after the results, and its p is not a test of \"EPAR beats the baselines\".\n\n",
               t->nrows ? (int)epar_csv_get(t, 0, "baselines") : 0, 100 * c->level);
    fprintf(f, "| proxy task | stands for | metric | chance | learned | best baseline | EPAR basic | EPAR enhanced | enhanced vs best | enhanced: beats / beaten (Holm) | enhanced MDE | basic: beats / beaten (Holm) |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t r = 0; r < t->nrows; r++) {
        /* a value not measured here (no EPAR mechanism in --mechanisms, one seed: no sd) is "n/a", never a sentinel
         * (a NaN count cast to int printed INT_MIN) */
        char b[96], e[64], x[64], rel[32], eb[48], bb[48];
        const char *best = epar_csv_get_str(t, r, "best_baseline");
        md_mean_sd(t, r, "best_baseline", b, sizeof b);
        if (best && *best) snprintf(b + strlen(b), sizeof b - strlen(b), " (%s)", best);
        md_mean_sd(t, r, "epar-basic", e, sizeof e);
        md_mean_sd(t, r, "epar-enhanced", x, sizeof x);
        double rv = epar_csv_get(t, r, "enhanced_vs_best_rel");
        if (isfinite(rv)) snprintf(rel, sizeof rel, "%+.2f %%", 100 * rv);
        else snprintf(rel, sizeof rel, "n/a");
        char ch[64], ln[32];
        double learned = epar_csv_get(t, r, "learned");
        snprintf(ch, sizeof ch, "%.4g ± %.2g", epar_csv_get(t, r, "chance"), epar_csv_get(t, r, "chance_se"));
        if (isnan(learned)) snprintf(ln, sizeof ln, "?");
        else if (learned == 0) snprintf(ln, sizeof ln, "**none**");
        else snprintf(ln, sizeof ln, "%d of %d", (int)learned, c->n_mech);
        double nb = epar_csv_get(t, r, "baselines"), mde = epar_csv_get(t, r, "enhanced_mde");
        char mdes[32];
        if (isfinite(mde)) snprintf(mdes, sizeof mdes, mde >= 0.1 ? "%.0f %%" : "%.2g %%", 100 * mde);
        else if (isnan(epar_csv_get(t, r, "enhanced_beats"))) snprintf(mdes, sizeof mdes, "n/a");
        else snprintf(mdes, sizeof mdes, "– (no spread)");
        md_beats(t, r, "enhanced", nb, eb, sizeof eb);
        md_beats(t, r, "basic", nb, bb, sizeof bb);
        fprintf(f, "| %s (L=%d) | %s | %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                epar_csv_get_str(t, r, "task"), (int)epar_csv_get(t, r, "length"), epar_csv_get_str(t, r, "paper"),
                epar_csv_get_str(t, r, "metric"), epar_csv_get(t, r, "higher_is_better") > 0 ? " ↑" : " ↓", ch, ln, b, e, x,
                rel, eb, mdes, bb);
    }
    fprintf(f, "\nEvery mechanism: main_table.csv (`<mechanism>_mean`, `_sd`). A proxy at this scale says whether EPAR's "
               "direction of effect holds for small trained models on tasks that isolate what each row is about; it "
               "cannot give the paper's 110M-parameter numbers.\n");
    return epar_out_fclose(&w);
}

/* run.json: what the audit reads (parameters.seeds, preset, protocol hash) and the whole grid, as rows */
struct run_task {
    const char *id, *task, *paper, *condition;
    int length;
};
struct run_budget {
    const char *name;
    struct epar_bench_budget b;
    int tokens_short;
};
struct run_sanity {
    double margin;
    int failed;
};
struct bench_run {
    struct run_budget budget;
    struct run_task tasks[EPAR_BENCH_MAX_TASKS];
    const char *mechs[EPAR_MECH_COUNT];
    int n_tasks, n_mechs, cells;
    const char *equalise, *posfx_L, *lr_sweep;
    double param_tol, worst, learned_z;
    struct run_sanity sanity;
};
#define RT struct run_task
static const struct epar_field run_task_rows[] = {
    {.key = "id", .type = EPAR_FIELD_STRING, .offset = offsetof(RT, id)},
    {.key = "task", .type = EPAR_FIELD_STRING, .offset = offsetof(RT, task)},
    {.key = "paper", .type = EPAR_FIELD_STRING, .offset = offsetof(RT, paper)},
    {.key = "condition", .type = EPAR_FIELD_STRING, .offset = offsetof(RT, condition)},
    {.key = "length", .type = EPAR_FIELD_INT, .offset = offsetof(RT, length)}, {0}};
#undef RT
#define RB struct run_budget
static const struct epar_field run_budget_rows[] = {
    {.key = "name", .type = EPAR_FIELD_STRING, .offset = offsetof(RB, name)},
    {.key = "layers", .type = EPAR_FIELD_INT, .offset = offsetof(RB, b.layers)},
    {.key = "dim", .type = EPAR_FIELD_INT, .offset = offsetof(RB, b.dim)},
    {.key = "heads", .type = EPAR_FIELD_INT, .offset = offsetof(RB, b.heads)},
    {.key = "mlp", .type = EPAR_FIELD_INT, .offset = offsetof(RB, b.mlp)},
    {.key = "batch", .type = EPAR_FIELD_INT, .offset = offsetof(RB, b.batch)},
    {.key = "steps", .type = EPAR_FIELD_INT, .offset = offsetof(RB, b.steps)},
    {.key = "warmup", .type = EPAR_FIELD_INT, .offset = offsetof(RB, b.warmup)},
    {.key = "lr", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(RB, b.lr)},
    {.key = "lr_min_ratio", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(RB, b.lr_min_ratio)},
    {.key = "weight_decay", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(RB, b.weight_decay)},
    {.key = "lm_length", .type = EPAR_FIELD_INT, .offset = offsetof(RB, b.lm_length)},
    {.key = "short_length", .type = EPAR_FIELD_INT, .offset = offsetof(RB, b.short_length)},
    {.key = "long_length", .type = EPAR_FIELD_INT, .offset = offsetof(RB, b.long_length)},
    {.key = "extrapolation", .type = EPAR_FIELD_ILIST, .offset = offsetof(RB, b.extrap),
     .count_offset = offsetof(RB, b.n_extrap), .max = EPAR_BENCH_MAX_EXTRAP},
    {.key = "tokens_per_cell_short", .type = EPAR_FIELD_INT, .offset = offsetof(RB, tokens_short)},
    {0}};
#undef RB
static const struct epar_field run_sanity_rows[] = {
    {.key = "margin", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(struct run_sanity, margin)},
    {.key = "failed", .type = EPAR_FIELD_INT, .offset = offsetof(struct run_sanity, failed)}, {0}};
#define BR struct bench_run
static const struct epar_field bench_run_rows[] = {
    {.key = "budget", .type = EPAR_FIELD_OBJ, .offset = offsetof(BR, budget), .sub = run_budget_rows},
    {.key = "tasks", .type = EPAR_FIELD_OLIST, .offset = offsetof(BR, tasks), .count_offset = offsetof(BR, n_tasks),
     .max = EPAR_BENCH_MAX_TASKS, .stride = sizeof(struct run_task), .sub = run_task_rows},
    {.key = "mechanisms", .type = EPAR_FIELD_SLIST, .offset = offsetof(BR, mechs),
     .count_offset = offsetof(BR, n_mechs), .max = EPAR_MECH_COUNT},
    {.key = "cells", .type = EPAR_FIELD_INT, .offset = offsetof(BR, cells)},
    {.key = "equalise", .type = EPAR_FIELD_STRING, .offset = offsetof(BR, equalise)},
    {.key = "param_tolerance", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BR, param_tol)},
    {.key = "param_max_rel_diff", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BR, worst)},
    {.key = "posfx_L", .type = EPAR_FIELD_STRING, .offset = offsetof(BR, posfx_L)},
    {.key = "lr_sweep", .type = EPAR_FIELD_STRING, .offset = offsetof(BR, lr_sweep)},
    /* main_table.csv learned: beyond chance by z se */
    {.key = "learned_z", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BR, learned_z)},
    {.key = "sanity", .type = EPAR_FIELD_OBJ, .offset = offsetof(BR, sanity), .sub = run_sanity_rows},
    {0}};
#undef BR

static int write_run_json(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, struct epar_out *o,
                          json_t *run_extra, double worst, int insane)
{
    struct bench_run *x = EPAR_CALLOC(1, sizeof *x);
    if (!x) {
        json_decref(run_extra);
        return EPAR_ENOMEM;
    }
    x->budget = (struct run_budget){c->b.name, c->b, c->b.steps * c->b.batch * c->b.short_length};
    for (int i = 0; i < c->n_tasks; i++)
        x->tasks[i] = (struct run_task){c->tasks[i].id, epar_task_name(c->tasks[i].task.id), c->tasks[i].paper,
                                        c->tasks[i].condition, c->tasks[i].task.length};
    for (int m = 0; m < c->n_mech; m++) x->mechs[m] = epar_bench_mech_name(c, m);
    x->n_tasks = c->n_tasks;
    x->n_mechs = c->n_mech;
    x->cells = plan->n;
    x->equalise = c->equalise_mlp ? "mlp" : "none";
    x->param_tol = c->param_tol;
    x->worst = worst;
    x->posfx_L = c->base.pos.posfx_length > 0 ? "fixed (posfx_length)" : "the length T of the sequence processed";
    x->lr_sweep = "none: one learning rate per budget, the same for every mechanism";
    x->learned_z = LEARNED_Z;
    x->sanity = (struct run_sanity){c->sanity_margin, insane};
    json_t *extra = epar_fields_json(bench_run_rows, x, run_extra);
    free(x);
    if (!extra) {
        json_decref(run_extra);
        return epar_err_set(EPAR_ENOMEM, "out of memory writing run.json");
    }
    struct epar_params prm = c->prm;
    prm.n_seeds = c->b.n_seeds;
    memcpy(prm.seeds, c->b.seeds, sizeof prm.seeds);
    return epar_exp_write_run_json(o, "benchmark", c->protocol, &prm, extra);
}

/* trained_heads.csv: every trained head of every cell of trained_attention.csv (its per-head record): mean distance,
 * entropy, the fixed-pattern correlations, the best and whether it reaches head_pattern (positional), the most
 * similar head of the layer and of another layer, ALiBi's slope and its layer's slope-distance Spearman correlation.
 * Not written when no cell has the per-head record. */
static int trained_heads(const struct epar_bench_cfg *c, const struct trained_attn *rows, int n, struct epar_out *o)
{
    struct epar_table *t = epar_csv_new("task,mechanism,seed,layer,head,items,length,mean_distance,entropy,"
                                        "pattern_current,pattern_previous,pattern_left,pattern_first,pattern_best,"
                                        "best_pattern,positional,similar_layer,similar_other,slope,layer_slope_spearman");
    int st = t ? EPAR_OK : epar_err_set(EPAR_ENOMEM, "out of memory");
    for (int k = 0; !st && k < n; k++) {
        const struct epar_inspect_summary *a = rows[k].a;
        for (int q = 0; !st && q < a->n_head; q++) {
            const struct epar_inspect_head *h = &a->head[q];
            int best = 0;
            for (int p = 1; p < EPAR_INSPECT_NPATTERNS; p++)
                if (h->pattern[p] > h->pattern[best]) best = p;
            if (epar_csv_append(t, "ssiiiiidddddddsidddd", c->tasks[rows[k].task].id,
                                epar_bench_mech_name(c, rows[k].mech), (int)c->b.seeds[rows[k].seed], h->layer, h->head,
                                a->items, a->length, h->mean_distance, h->entropy, h->pattern[0], h->pattern[1],
                                h->pattern[2], h->pattern[3], h->pattern_best,
                                isnan(h->pattern_best) ? "" : epar_inspect_pattern_names[best],
                                h->pattern_best >= c->head_pattern, h->similar_layer, h->similar_other, h->slope,
                                epar_bench_slope_spearman(a, h->layer)))
                st = epar_err_set(EPAR_ENOMEM, "out of memory building trained_heads.csv");
        }
    }
    if (!st && t->nrows > 0) st = epar_exp_write_table(o, "trained_heads.csv", t);
    epar_csv_free(t);
    return st;
}

/* alibi_slopes.csv: the slopes of every alibi and alibi-learned cell with the per-head record (the grid's and the
 * extrapolation study's own; layer 0's heads: the slopes are shared by the layers), each head's initial slope (ALiBi's
 * for the cell's max_bias) and the one the model ends with (alibi: the same), their ratio and its log2. Not written
 * when no such cell has the record. */
static int alibi_slopes(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const struct grid *g,
                        struct epar_out *o)
{
    struct epar_table *t = epar_csv_new("task,mechanism,seed,head,heads,max_bias,initial_slope,slope,ratio,log2_ratio");
    int st = t ? EPAR_OK : epar_err_set(EPAR_ENOMEM, "out of memory");
    for (int k = 0; !st && k < plan->n; k++) {
        const struct epar_bench_cell *cell = &plan->cells[k];
        if (cell->task < 0 || !g->cell[k].have_attn) continue;
        enum epar_mech_id id = c->mech[cell->mech];
        if (id != EPAR_MECH_ALIBI && id != EPAR_MECH_ALIBI_LEARNED) continue;
        const struct epar_inspect_summary *a = &g->cell[k].attn;
        const struct epar_nnpos_settings *ps = c->tasks[cell->task].own_pos ? &c->tasks[cell->task].pos : &c->base.pos;
        int NH = 0;
        for (int q = 0; q < a->n_head; q++) NH += a->head[q].layer == 0;
        double init[1024], max_bias = ps->mp[id][0];
        if (NH < 1 || NH > 1024) continue;
        epar_mech_alibi_slopes(NH, max_bias, init);
        for (int q = 0; !st && q < a->n_head; q++) {
            const struct epar_inspect_head *h = &a->head[q];
            if (h->layer != 0 || h->head < 0 || h->head >= NH) continue;
            double r = h->slope / init[h->head];
            if (epar_csv_append(t, "ssiiiddddd", c->tasks[cell->task].id, epar_bench_mech_name(c, cell->mech), (int)c->b.seeds[cell->seed],
                                h->head, NH, max_bias, init[h->head], h->slope, r, r > 0 ? log2(r) : NAN))
                st = epar_err_set(EPAR_ENOMEM, "out of memory building alibi_slopes.csv");
        }
    }
    if (!st && t->nrows > 0) st = epar_exp_write_table(o, "alibi_slopes.csv", t);
    epar_csv_free(t);
    return st;
}

/* position_cost.csv: the cost of a position table computed by a recursion (S3 003:49, floater-learned), per cell that
 * recorded it: the training steps' thread CPU seconds, those spent preparing the table and folding its gradient back
 * through the recursion, and their share of the steps. Not written when no cell has the record. */
static int position_cost(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const struct grid *g,
                         struct epar_out *o)
{
    struct epar_table *t = epar_csv_new("task,mechanism,seed,steps,step_cpu_seconds,position_cpu_seconds,position_share");
    int st = t ? EPAR_OK : epar_err_set(EPAR_ENOMEM, "out of memory");
    for (int k = 0; !st && k < plan->n; k++) {
        const struct epar_bench_cell *cell = &plan->cells[k];
        const struct train_cell *x = &g->cell[k];
        if (cell->task < 0 || !isfinite(x->pos_cpu) || !(x->step_cpu > 0)) continue;
        if (epar_csv_append(t, "ssiiddd", c->tasks[cell->task].id, epar_bench_mech_name(c, cell->mech),
                            (int)c->b.seeds[cell->seed], (int)x->steps, x->step_cpu, x->pos_cpu, x->pos_cpu / x->step_cpu))
            st = epar_err_set(EPAR_ENOMEM, "out of memory building position_cost.csv");
    }
    if (!st && t->nrows > 0) st = epar_exp_write_table(o, "position_cost.csv", t);
    epar_csv_free(t);
    return st;
}

/* trained_attention.csv: what every cell's trained heads attend to (epar inspect's summaries over TRAINED_ITEMS
 * evaluation items, measured when the cell finished), one row per task x mechanism x seed; the distance ratio also
 * relative to none's of the same seed on the same items. Not written when no cell has the summaries (cells of an
 * older epar). The trained-attention claims take its spread across the seeds (group_by seed). */
static int trained_attention(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const struct grid *g,
                             struct epar_out *o)
{
    struct epar_table *t = epar_csv_new("task,mechanism,seed,items,heads,length,distance_spearman,distance_spearman_sd,"
                                        "distance_ratio,distance_ratio_vs_none,first_share,relevant_share,"
                                        "relevant_uniform,profile_spearman,pattern_threshold,positional_share,"
                                        "positional_share_se,positional_share_vs_none,similarity_threshold,"
                                        "similar_layer_share,similar_layer_share_se,similar_other_share,"
                                        "similar_other_share_se,slope_spearman,slope_spearman_se");
    struct trained_attn *rows = malloc(((size_t)g->NT * g->M * g->S + 1) * sizeof *rows);
    int n = t && rows ? epar_bench_trained_attention(c, plan, g, rows) : -1;
    int st = n < 0 ? epar_err_set(EPAR_ENOMEM, "out of memory") : EPAR_OK;
    for (int k = 0; !st && k < n; k++) {
        const struct trained_attn *r = &rows[k];
        const struct epar_inspect_summary *a = r->a;
        if (epar_csv_append(t, "ssiiiidddddddddddddddddddd", c->tasks[r->task].id, epar_bench_mech_name(c, r->mech),
                            (int)c->b.seeds[r->seed], a->items, a->heads, a->length, a->distance_spearman,
                            a->distance_spearman_sd, a->distance_ratio, r->distance_ratio_vs_none, a->first_share,
                            a->relevant_share, a->relevant_uniform, a->profile_spearman, c->head_pattern,
                            r->positional_share, r->positional_share_se, r->positional_share_vs_none, c->head_similarity,
                            r->similar_layer_share, r->similar_layer_share_se, r->similar_other_share,
                            r->similar_other_share_se, r->slope_spearman, r->slope_spearman_se))
            st = epar_err_set(EPAR_ENOMEM, "out of memory building trained_attention.csv");
    }
    if (!st && t->nrows > 0) st = epar_exp_write_table(o, "trained_attention.csv", t);
    if (!st) st = trained_heads(c, rows, n, o);
    if (!st) st = alibi_slopes(c, plan, g, o);
    free(rows);
    epar_csv_free(t);
    return st;
}

int epar_exp_benchmark_write(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                     struct epar_out *o, json_t *run_extra)
{
    struct grid g;
    int st = epar_bench_grid_read(&g, c, plan, root);
    struct epar_table *mt = NULL, *wt = NULL, *et = NULL, *dt = NULL, *pt = NULL, *ct = NULL, *snt = NULL, *vt = NULL, *lt = NULL,
                      *xt = NULL;
    double worst = 0;
    int insane = 0;
    if (!st) {
        mt = main_table(c, &g);
        wt = when_table(c, &g);
        et = extrap_table(c, &g, plan);
        dt = distance_table(c, &g);
        pt = params_table(c, plan, &worst);
        ct = cost_table(c, &g.cost);
        snt = sanity_table(c, &g, &insane);
        vt = comparisons_table(c, &g);
        lt = learn_table(c, plan, &g, root, &st);
        xt = metrics_table(c, &g);
        if (!st && (!mt || !wt || !et || !dt || !pt || !ct || !snt || !vt || !lt || !xt))
            st = epar_err_set(EPAR_ENOMEM, "out of memory building the tables");
    }
    if (!st) {
        struct epar_exp_file files[] = {{"main_table.csv", mt}, {"when_to_use.csv", wt}, {"extrapolation.csv", et},
                                        {"distance.csv", dt}, {"params.csv", pt}, {"cost.csv", ct}, {"sanity.csv", snt},
                                        {"comparisons.csv", vt}, {"steps_to_learn.csv", lt}, {"metrics.csv", xt}};
        st = epar_exp_write_tables(o, files, sizeof files / sizeof files[0]);
    }
    if (!st) st = write_markdown(c, mt, epar_out_path(o, "main_table.md"));
    if (!st && !c->sub) st = epar_bench_write_figures(c, &g, o, et->nrows > 0, dt->nrows > 0);
    if (!st) st = trained_attention(c, plan, &g, o);
    if (!st) st = position_cost(c, plan, &g, o);
    if (!st && !c->sub) st = epar_bench_interventions(c, plan, &g, root, o);   /* F8, F9 on the kept checkpoints */
    if (!st) st = epar_bx_write(c, plan, root, o, run_extra);   /* the length-extrapolation study's tables */
    if (!st) {
        st = write_run_json(c, plan, o, run_extra, worst, insane);
        run_extra = NULL;
    }
    json_decref(run_extra);
    epar_csv_free(mt); epar_csv_free(wt); epar_csv_free(et); epar_csv_free(dt); epar_csv_free(pt); epar_csv_free(ct);
    epar_csv_free(snt);
    epar_csv_free(vt);
    epar_csv_free(lt);
    epar_csv_free(xt);
    epar_bench_grid_free(&g, plan);
    return st;
}
