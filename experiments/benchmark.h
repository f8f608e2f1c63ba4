/* The benchmark grid (issue 16) -> output/benchmark/
 *
 * proxy task x mechanism x seed: every cell is one training run of experiments/train (setup, step loop,
 * evaluation: the train experiment's own functions) with the budget's hyperparameters, identical for every
 * mechanism. Parameter counts are equalised by the MLP width (learned adds a length x dim table) and checked
 * against a tolerance. A cell writes its own folder, cells/<task>/<mechanism>/seed-<seed>/ (cell.json: the
 * configuration and every number the tables need; learning_curve.csv; the first seed's checkpoint.bin, for epar
 * inspect), atomically: an interrupted grid resumes without redoing finished cells, and shards (--shard K/N, MPI
 * ranks) write disjoint cells that --merge gathers. The tables are computed from the cell files only, so one process, shards + merge and
 * MPI give the same bytes (the wall-clock numbers of cost.csv aside). Prefix epar_bench_. */
#ifndef EPAR_EXP_BENCHMARK_H
#define EPAR_EXP_BENCHMARK_H

#include <signal.h>
#include <jansson.h>
#include "lib/protocol.h"
#include "lib/tasks.h"
#include "train.h"

#define EPAR_BENCH_MAX_TASKS 32
#define EPAR_BENCH_MAX_EXTRAP 16

/* one row of $.experiments.benchmark.tasks */
struct epar_bench_task {
    char id[32];                        /* "needle-long" */
    char paper[160];                    /* the paper row it stands in for */
    char condition[32];                 /* short, long, shuffled, noise, non-sequential */
    char length_class[8];               /* lm, short, long: which length of the budget */
    struct epar_task_cfg task;          /* task id, options; length resolved from the budget */
};

struct epar_bench_budget {
    char name[16];
    int n_seeds;
    unsigned long seeds[EPAR_MAX_SEEDS];
    int layers, dim, heads, mlp, batch, long_batch, steps, warmup, eval_every, eval_batches, eval_sequences, lm_eval_sequences;
    int lm_length, short_length, long_length;
    double lr, lr_min_ratio, weight_decay, clip, init_sd;
    int n_extrap;
    int extrap[EPAR_BENCH_MAX_EXTRAP];  /* evaluation lengths of the lm cells */
    int extrap_tokens;                  /* tokens evaluated at each of them */
    enum epar_task_id cost_task;
    int cost_length;
    int cost_repeats;                   /* the cost cell's least number of blocks of adjacent pairs, */
    int cost_max_repeats;               /* ... and the most; */
    int cost_generation;                /* blocks between fresh set-ups of the cost cell's models; */
    double cost_halfwidth;              /* blocks until the intervals the cost claims read are this narrow, */
    double cost_seconds;                /* ... or until the timed steps took this many CPU seconds */
};

struct epar_bench_cfg {
    struct epar_bench_budget b;
    int n_tasks;
    struct epar_bench_task tasks[EPAR_BENCH_MAX_TASKS];
    int n_mech;
    enum epar_mech_id mech[EPAR_MECH_COUNT];
    double param_tol;                   /* relative to none's count */
    int equalise_mlp;                   /* 1: equalise by the MLP width, 0: only check */
    int distance_bins;
    double sanity_margin;               /* every mechanism's bpc at least this share below the chance level */
    double level;                       /* the audit's confidence level (audit.level): intervals, Holm, MDE */
    struct epar_train_cfg base;         /* experiments.train (optimiser betas, eps, mechanism settings) + preset */
    struct epar_params prm;             /* the resolved common parameters (run.json; seeds replaced by the budget's) */
    char preset[64];
    char protocol[4096];
    char protocol_hash[32];
    char cache_dir[4200];               /* lm: where the Bible text is cached */
};

/* One cell of the grid; task < 0 is the cost cell (every mechanism timed, interleaved). */
struct epar_bench_cell {
    int task, mech, seed;               /* indices into cfg tasks, mech, b.seeds */
    int mlp;                            /* MLP width after equalising */
    size_t params;
    double weight;                      /* relative work (for the schedule and the ETA) */
};

struct epar_bench_plan {
    int n;                              /* training cells + 1 cost cell (the last) */
    struct epar_bench_cell *cells;
    int cost_mlp[EPAR_MECH_COUNT];     /* the cost cell's equalised MLP width per mechanism (index into mech) */
    size_t cost_params[EPAR_MECH_COUNT];
};

/* Read $.experiments.benchmark (budget `budget`), the train section's defaults and the preset. Protocol errors
 * are EPAR_EPROTOCOL naming the JSON path; an unknown budget is EPAR_EINVAL. */
int epar_exp_benchmark_config(struct epar_bench_cfg *c, const struct epar_protocol *p, const struct epar_params *prm,
                                 const char *budget);
/* Keep only the tasks / mechanisms of comma-separated lists (NULL: all); EPAR_EINVAL naming an unknown or
 * repeated name. */
int epar_exp_benchmark_select(struct epar_bench_cfg *c, const char *tasks, const char *mechanisms);
/* The grid: equalised MLP widths and parameter counts (EPAR_ECHECK when a count stays beyond the tolerance). */
int epar_bench_plan(const struct epar_bench_cfg *c, struct epar_bench_plan *plan);
void epar_exp_benchmark_plan_free(struct epar_bench_plan *plan);
/* The training configuration of cell k. */
void epar_exp_benchmark_cell_cfg(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell, struct epar_train_cfg *t);
/* cells/<task>/<mech>/seed-<seed> (or cells/cost) under <out>/benchmark */
void epar_exp_benchmark_cell_dir(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell, char *buf, size_t n);
/* Cell k's folder under root (<out>/benchmark): 1 complete and of this configuration, 0 absent, -1 of another
 * configuration (the budget or the protocol changed: it is redone). */
int epar_exp_benchmark_cell_state(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, int k, const char *root);
/* Run one cell and write its folder under root. stop: checked between steps (EPAR_EINTR). */
int epar_exp_benchmark_cell_run(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, int k, const char *root,
                        volatile sig_atomic_t *stop);
/* Copy cell k from another output root's benchmark folder (merge); EPAR_EIO when it is absent there. */
int epar_exp_benchmark_cell_copy(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell, const char *from_root,
                         const char *root);
/* Every table, figure and run.json from the cells under root into the staging folder o. */
struct epar_out;
int epar_exp_benchmark_write(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                     struct epar_out *o, json_t *run_extra);

/* The statistics of the pre-registered comparisons (exported for their tests):
 * Holm's step-down adjustment of m <= EPAR_BENCH_MAX_HOLM p-values into adj (NaN p-values take no part and stay
 * NaN); the two-sided p of the paired t-test across n seeds of the relative differences sign (x - y) / |mean y|
 * (NaN when the differences have no spread or n < 2). */
#define EPAR_BENCH_MAX_HOLM 64
void epar_bench_holm(const double *p, double *adj, int m);
double epar_bench_paired_p(const double *x, const double *y, int n, int higher_is_better);

/* The cost cell's statistic (exported for its tests): n values x[i], each measured in group g[i] (an integer >= 0,
 * stored as a double: the generation of freshly set-up models a pair ran on). Each group's median; their mean, and
 * its t interval at `level` across the groups (t with groups - 1 degrees of freedom): the groups are the
 * independent units, so an effect shared within a group (where the models' memory landed) is in the interval.
 * *groups: groups with values; lo, hi NaN with fewer than 2; mean NaN with none. */
void epar_bench_group_medians(const double *x, const double *g, int n, double level, double *mean, double *lo,
                              double *hi, int *groups);

#endif
