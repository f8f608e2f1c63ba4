/* The benchmark's cell scheduler (epar benchmark): the cells of a grid, or of a later look's claims, trained side by
 * side on the cores with one thread each, heaviest first, the cost cell first beside them; the time estimate from a
 * few timed steps of each (task, mechanism); shards (cells k with k mod N = K-1), the merge of their folders; the
 * tables written from the cells. Prefix epar_bench_sched_.
 *
 * What the command line gives it comes in through struct epar_bench_sched: the output root and the options that
 * change what is printed or rendered, the progress lines, the Ctrl-C flag and the ranks of an MPI run (whose calls
 * stay in cmd/benchmark.c: this module has none). */
#ifndef EPAR_EXP_BENCH_SCHED_H
#define EPAR_EXP_BENCH_SCHED_H

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include "experiments/benchmark/bench_grid.h"

struct epar_bench_sched {
    const char *out;                /* the output root (--out): the tables go to out/benchmark/ */
    int njobs;                      /* cells trained at once (run.json's "jobs") */
    int render_jobs;                /* --jobs as given (0: the default), for rendering the figures */
    int quiet;                      /* no summary on stdout */
    int no_render;                  /* write the .gp scripts, do not run gnuplot */
    /* a progress line (the command prints it on stderr unless --quiet); NULL: none */
    void (*progress)(void *ctx, const char *fmt, va_list ap);
    void *progress_ctx;
    /* Ctrl-C while cells train: catch_stop(1) makes SIGINT/SIGTERM set *stop (every cell finishes its step, saves
     * and stops), catch_stop(0) restores the handlers; either may be NULL */
    volatile sig_atomic_t *stop;
    void (*catch_stop)(int on);
    /* under mpirun: this rank and the ranks (0 and 1 otherwise), and sync(st, ctx), every rank's status, the worst of
     * them (a barrier too); NULL: st */
    int rank, size;
    int (*sync)(int st, void *ctx);
    void *sync_ctx;
};

/* how a run stopped on a signal: code 128 + the signal (0: it did not), kept the cells finished (kept on disk) */
struct epar_bench_stopped {
    int code, kept;
};

/* one cell to run, of the grid it belongs to (the first look's, or a later look's grid of one claim) */
struct epar_bench_job {
    const struct epar_bench_cfg *cfg;
    const struct epar_bench_plan *plan;
    int k;
};

/* seconds as "42 s", "3m07s", "2h05m" ("?" when not finite or negative) */
void epar_bench_sched_fmt_time(double s, char *buf, size_t n);

/* a grid's every cell as jobs (NULL: out of memory); *nj their count */
struct epar_bench_job *epar_bench_sched_jobs(const struct epar_bench_cfg *cfg, const struct epar_bench_plan *plan,
                                             int *nj);

/* The cells of the jobs (deduplicated: a cell several claims read is one job) of shard K/N not done yet in root, in
 * the order they run (the cost cell first, then the heaviest), into pending (nj + 1 entries); *have the cells done,
 * *redo those of another configuration, *w_total the pending weight. *est gets the estimated seconds at njobs cells at
 * once (NULL or < 0: no estimate), each (task, mechanism) timed once per process. */
int epar_bench_sched_pending(const struct epar_bench_job *jobs, int nj, const char *root, int K, int N, int njobs,
                             int *pending, int *np, int *have, int *redo, double *w_total, double *est);

/* Train the pending cells of the jobs of shard K/N under root (the progress lines start with look, "look 2/3: " or "",
 * and what the jobs are); stopped->code = 128 + the signal when interrupted (finished cells are kept). */
int epar_bench_sched_run(const struct epar_bench_sched *s, const struct epar_bench_job *jobs, int nj, const char *root,
                         int K, int N, const char *look, const char *what, struct epar_bench_stopped *stopped);

/* the first look's cells (the whole grid at its first seeds) of shard K/N: what `epar benchmark` without stages ran */
int epar_bench_sched_first(const struct epar_bench_sched *s, const struct epar_bench_cfg *cfg,
                           const struct epar_bench_plan *plan, const char *root, int K, int N,
                           struct epar_bench_stopped *stopped);

/* --merge: every cell from the first folder (an --out) that has it, unless root has it already. Every cell is found
 * before any is copied: a merge that lacks cells copies nothing. */
int epar_bench_sched_merge(const struct epar_bench_sched *s, const struct epar_bench_cfg *cfg,
                           const struct epar_bench_plan *plan, const char *root, const char *const *merge, int n_merge);

/* the tables into a fresh s->out/benchmark/ (cells/ carried over), rendered and published; mode is run.json's */
int epar_bench_sched_tables(const struct epar_bench_sched *s, const struct epar_bench_cfg *cfg,
                            const struct epar_bench_plan *plan, const char *root, const char *mode);

#endif
