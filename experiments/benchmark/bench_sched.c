/* The benchmark's cell scheduler (bench_sched.h): the time estimate, the jobs and their runner, the merge of shards'
 * cells and the tables. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "lib/err.h"
#include "lib/outdir.h"
#include "experiments/benchmark/bench_sched.h"
#include "experiments/benchmark/benchmark.h"
#include "experiments/common.h"

static void say(const struct epar_bench_sched *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const struct epar_bench_sched *s, const char *fmt, ...)
{
    if (!s->progress) return;
    va_list ap;
    va_start(ap, fmt);
    s->progress(s->progress_ctx, fmt, ap);
    va_end(ap);
}

void epar_bench_sched_fmt_time(double s, char *buf, size_t n)
{
    if (!isfinite(s) || s < 0) snprintf(buf, n, "?");
    else if (s < 60) snprintf(buf, n, "%.0f s", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

/* seconds per unit of weight for cell k: a few steps of it (the cost cell: its first mechanism), on one thread as
 * the cells run, in the thread's CPU time (threads of the previous step of run-all still spinning on the other
 * core made three wall-clock steps look twelve times slower) */
static double calibrate_one(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, int k)
{
    omp_set_num_threads(1);
    struct epar_bench_cell cell = plan->cells[k];
    if (cell.task < 0) {
        cell.mech = 0;
        cell.mlp = plan->cost_mlp[0];
    }
    struct epar_train_cfg t;
    epar_exp_benchmark_cell_cfg(c, &cell, &t);
    t.optim.steps = 8;   /* 7 timed: with 2 the estimate of a quick look ran 13-26 % over the actual time, its
                          * cells 0.44-1.65 x theirs; with 7, 6 % over, the tasks' medians 0.90-1.02 but needle's */
    t.eval_every = t.optim.steps + 1;
    struct epar_train_run r;
    double spw = NAN;
    int st = epar_exp_train_setup(&r, &t);
    r.until = 1;   /* the first step is not timed (first touch of the activations) */
    if (!st && !epar_exp_train_loop(&r)) {
        double first = r.step_cpu_seconds;
        r.until = 0;
        if (!epar_exp_train_loop(&r) && r.step > 1) {
            double T = t.task.length;
            double w = (double)(r.step - 1) * t.batch * T * epar_bench_token_work(&t, T);
            spw = (r.step_cpu_seconds - first) / w;
        }
    }
    epar_exp_train_free(&r);
    return spw;
}

/* the same, `jobs` copies at once as the cells will run: cells side by side are each 20-30 % slower than alone
 * (shared caches and memory; measured on 2 cores), and one copy alone made the first estimate of a quick run-all
 * 15 minutes for 22 */
static double calibrate(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, int k, int jobs)
{
    int threads = omp_get_max_threads(), n = 0;
    double sum = 0;
#pragma omp parallel num_threads(jobs) reduction(+ : sum, n)
    {
        double s = calibrate_one(c, plan, k);
        if (isfinite(s)) sum += s, n++;
    }
    omp_set_num_threads(threads);
    return n ? sum / n : NAN;
}

/* seconds per unit of weight by task and mechanism name, timed once per process (every look reuses them) */
#define MAX_SPW 512
static struct {
    char key[96];
    double spw;
} spw_cache[MAX_SPW];
static int n_spw;

static double job_spw(const struct epar_bench_job *j, int at_once)
{
    const struct epar_bench_cell *cell = &j->plan->cells[j->k];
    char key[96];
    snprintf(key, sizeof key, "%s/%s", cell->task < 0 ? "cost" : j->cfg->tasks[cell->task].id,
             cell->task < 0 ? "" : epar_bench_mech_name(j->cfg, cell->mech));
    for (int i = 0; i < n_spw; i++)
        if (!strcmp(spw_cache[i].key, key)) return spw_cache[i].spw;
    double s = calibrate(j->cfg, j->plan, j->k, at_once);
    if (n_spw < MAX_SPW) {
        snprintf(spw_cache[n_spw].key, sizeof spw_cache[n_spw].key, "%s", key);
        spw_cache[n_spw++].spw = s;
    }
    return s;
}

struct run_state {
    int done, total;
    double w_done, w_total, t0;
    const char *look;   /* "look 2/3: " or "" */
    volatile sig_atomic_t *stop;
};

static int run_cells(const struct epar_bench_sched *s, const struct epar_bench_job *jobs, const char *root,
                     const int *pending, int np, struct run_state *rs)
{
    int st = EPAR_OK;
    char err[600] = "", hint[600] = "";
    #pragma omp parallel for schedule(dynamic, 1) num_threads(s->njobs)
    for (int q = 0; q < np; q++) {
        int failed;
        #pragma omp atomic read
        failed = st;
        if (failed || *rs->stop) continue;
        omp_set_num_threads(1);   /* one thread per cell: cells run side by side */
        const struct epar_bench_job *j = &jobs[pending[q]];
        double t0 = omp_get_wtime();
        int cs = epar_exp_benchmark_cell_run(j->cfg, j->plan, j->k, root, rs->stop);
        double dt = omp_get_wtime() - t0;
        #pragma omp critical(bench_progress)
        {
            if (cs && !st) {
                st = cs;
                snprintf(err, sizeof err, "%s", epar_err_message());
                snprintf(hint, sizeof hint, "%s", epar_err_hint_text());
            }
            if (!cs) {
                rs->done++;
                rs->w_done += j->plan->cells[j->k].weight;
                double el = omp_get_wtime() - rs->t0, eta = el / rs->w_done * (rs->w_total - rs->w_done);
                char e1[32], e0[32];
                epar_bench_sched_fmt_time(eta, e1, sizeof e1);
                epar_bench_sched_fmt_time(el, e0, sizeof e0);
                const struct epar_bench_cell *cell = &j->plan->cells[j->k];
                if (cell->task >= 0)
                    say(s, "benchmark: %s[%d/%d] %s / %s / seed %lu done in %.1f s; %d left, elapsed %s, ETA %s",
                        rs->look, rs->done, rs->total, j->cfg->tasks[cell->task].id,
                        epar_bench_mech_name(j->cfg, cell->mech), j->cfg->b.seeds[cell->seed], dt, rs->total - rs->done,
                        e0, e1);
                else
                    say(s, "benchmark: %s[%d/%d] cost cell done in %.1f s; %d left, elapsed %s, ETA %s", rs->look,
                        rs->done, rs->total, dt, rs->total - rs->done, e0, e1);
            }
        }
    }
    if (st && st != EPAR_EINTR) {
        epar_err_set(st, "%s", err);
        if (*hint) epar_err_hint("%s", hint);
    }
    return st;
}

int epar_bench_sched_pending(const struct epar_bench_job *jobs, int nj, const char *root, int K, int N, int njobs,
                             int *pending, int *np, int *have, int *redo, double *w_total, double *est)
{
    *np = *have = *redo = 0;
    *w_total = 0;
    int cost_pending = -1;
    for (int q = 0; q < nj; q++) {
        if (q % N != K - 1) continue;
        int s = epar_exp_benchmark_cell_state(jobs[q].cfg, jobs[q].plan, jobs[q].k, root);
        if (s == 1) {
            (*have)++;
            continue;
        }
        *redo += s < 0;
        if (jobs[q].plan->cells[jobs[q].k].task < 0) cost_pending = q;
        else pending[(*np)++] = q;
        *w_total += jobs[q].plan->cells[jobs[q].k].weight;
    }
    /* the heaviest cells first (the schedule ends with short cells on every thread) */
    for (int i = 1; i < *np; i++)
        for (int j = i; j > 0 && jobs[pending[j]].plan->cells[jobs[pending[j]].k].weight >
                                     jobs[pending[j - 1]].plan->cells[jobs[pending[j - 1]].k].weight; j--) {
            int tmp = pending[j];
            pending[j] = pending[j - 1];
            pending[j - 1] = tmp;
        }
    /* the cost cell first, beside the others (its claims read ratios of adjacent steps in thread CPU time, which keep
     * their verdicts with a training job on the other core: bench/README.md; alone at the end it left a core idle) */
    if (cost_pending >= 0) {
        memmove(pending + 1, pending, (size_t)*np * sizeof *pending);
        pending[0] = cost_pending;
        (*np)++;
    }
    if (est && *est >= 0) {
        /* the estimate: each task and mechanism's seconds per unit of weight, timed on a few steps of one of its
         * cells (small models use the cores less well per FLOP than large ones, and T5 or Shaw cost more than none),
         * times the weight of its pending cells; every pair timed once per process, `at_once` copies side by side
         * as the cells will run (cells side by side are each 20-30 % slower than alone on 2 cores) */
        int at_once = *np > njobs ? njobs : (*np ? *np : 1);
        double s = 0;
        for (int i = 0; i < *np; i++) {
            const struct epar_bench_job *j = &jobs[pending[i]];
            s += job_spw(j, at_once) * j->plan->cells[j->k].weight;
        }
        *est = s / at_once;
    }
    return EPAR_OK;
}

int epar_bench_sched_run(const struct epar_bench_sched *s, const struct epar_bench_job *jobs, int nj, const char *root,
                         int K, int N, const char *look, const char *what, struct epar_bench_stopped *stopped)
{
    int *pending = malloc(((size_t)nj + 1) * sizeof *pending), np, have, redo;
    if (!pending) return epar_err_set(EPAR_ENOMEM, "out of memory");
    volatile sig_atomic_t none = 0;
    struct run_state rs = {0, 0, 0, 0, 0, look, s->stop ? s->stop : &none};
    double est = 0;
    epar_bench_sched_pending(jobs, nj, root, K, N, s->njobs, pending, &np, &have, &redo, &rs.w_total, &est);
    rs.total = np;
    char e[32];
    epar_bench_sched_fmt_time(est, e, sizeof e);
    say(s, "benchmark: %s%s; %d to run here (%d done already%s), %d at once; estimated %s", look, what, np, have,
        redo ? ", others of another configuration are redone" : "", s->njobs, e);
    if (N > 1) say(s, "benchmark: shard %d/%d: %d of the %d cells", K, N, np + have, nj);
    *rs.stop = 0;
    if (s->catch_stop) s->catch_stop(1);
    rs.t0 = omp_get_wtime();
    int st = np ? run_cells(s, jobs, root, pending, np, &rs) : EPAR_OK;
    if (s->catch_stop) s->catch_stop(0);
    free(pending);
    if (*rs.stop) {
        stopped->code = 128 + *rs.stop;
        stopped->kept = have + rs.done;
        return EPAR_OK;
    }
    return st;
}

struct epar_bench_job *epar_bench_sched_jobs(const struct epar_bench_cfg *cfg, const struct epar_bench_plan *plan,
                                             int *nj)
{
    struct epar_bench_job *j = malloc(((size_t)plan->n + 1) * sizeof *j);
    for (int k = 0; j && k < plan->n; k++) j[k] = (struct epar_bench_job){cfg, plan, k};
    *nj = j ? plan->n : 0;
    return j;
}

int epar_bench_sched_first(const struct epar_bench_sched *s, const struct epar_bench_cfg *cfg,
                           const struct epar_bench_plan *plan, const char *root, int K, int N,
                           struct epar_bench_stopped *stopped)
{
    int nj;
    struct epar_bench_job *jobs = epar_bench_sched_jobs(cfg, plan, &nj);
    if (!jobs) return epar_err_set(EPAR_ENOMEM, "out of memory");
    char what[320], own[96] = "", look[32] = "";
    int grid = cfg->n_tasks * cfg->n_mech * cfg->b.n_seeds;
    if (plan->n - 1 > grid)   /* the extrapolation study's own cells (experiments/benchmark/bench_extrap) */
        snprintf(own, sizeof own, " + %d of the extrapolation study", plan->n - 1 - grid);
    if (cfg->b.n_stages > 1) snprintf(look, sizeof look, "look 1/%d: ", cfg->b.n_stages);
    snprintf(what, sizeof what, "budget %s, %d tasks x %d mechanisms x %d seeds = %d cells%s + cost", cfg->b.name,
             cfg->n_tasks, cfg->n_mech, cfg->b.n_seeds, grid, own);
    int st = epar_bench_sched_run(s, jobs, nj, root, K, N, look, what, stopped);
    free(jobs);
    return st;
}

int epar_bench_sched_tables(const struct epar_bench_sched *s, const struct epar_bench_cfg *cfg,
                            const struct epar_bench_plan *plan, const char *root, const char *mode)
{
    int st;
    struct epar_out o;
    if ((st = epar_out_begin(&o, s->out, "benchmark"))) return st;
    epar_out_keep(&o, "cells"); /* the cells are the grid's store (resume, merge): the tables replace the rest */
    json_t *extra = json_pack("{s:s, s:i}", "mode", mode, "jobs", s->njobs);
    st = epar_exp_benchmark_write(cfg, plan, root, &o, extra);
    if (st) {   /* published as every command publishes (cmd/options.c cli_publish) */
        epar_out_abort(&o);
        return st;
    }
    say(s, "benchmark: %s figures", s->no_render ? "skipping" : "rendering");
    return epar_exp_finish(&o, s->no_render, s->render_jobs);
}

int epar_bench_sched_merge(const struct epar_bench_sched *s, const struct epar_bench_cfg *cfg,
                           const struct epar_bench_plan *plan, const char *root, const char *const *merge, int n_merge)
{
    int st = EPAR_OK, missing = 0;
    int *from = malloc((size_t)plan->n * sizeof *from);   /* the folder of cell k (-1: root has it) */
    if (!from) return epar_err_set(EPAR_ENOMEM, "out of memory");
    char dir[4300];
    for (int k = 0; k < plan->n; k++) {
        from[k] = -1;
        if (epar_exp_benchmark_cell_state(cfg, plan, k, root) == 1) continue;
        for (int d = 0; d < n_merge && from[k] < 0; d++) {
            snprintf(dir, sizeof dir, "%s/benchmark", merge[d]);
            if (epar_exp_benchmark_cell_state(cfg, plan, k, dir) == 1) from[k] = d;
        }
        missing += from[k] < 0;
    }
    if (missing) {
        free(from);
        st = epar_err_set(EPAR_EIO, "%d of %d cells are in none of the %d folder(s) merged", missing, plan->n, n_merge);
        epar_err_hint("run the missing shards (same --budget, --tasks, --mechanisms, --seeds and protocol), then merge again");
        return st;
    }
    for (int k = 0; k < plan->n && !st; k++) {
        if (from[k] < 0) continue;
        snprintf(dir, sizeof dir, "%s/benchmark", merge[from[k]]);
        st = epar_exp_benchmark_cell_copy(cfg, &plan->cells[k], dir, root);
    }
    free(from);
    if (!st) say(s, "benchmark: merged %d cells from %d folder(s)", plan->n, n_merge);
    return st;
}
