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
#include "bench_extrap.h"

#define EPAR_BENCH_MAX_TASKS 32
#define EPAR_BENCH_MAX_EXTRAP 16

/* A cell's candidate primary metrics (chosen per task in the protocol, from the power study of docs/TASKS.md):
 *   FINAL        the task's metric on the whole evaluation set at the end (accuracy, or bits per character)
 *   FINAL_LOSS   the evaluation loss at the end (nats per scored token)
 *   CURVE        the mean of the evaluation metric over the learning curve's evaluations (sample efficiency)
 *   CURVE_LOSS   the mean evaluation loss over them
 *   ONLINE_LOSS  the mean training loss over every step, each on a fresh batch before learning from it (prequential) */
enum epar_bench_primary { EPAR_BENCH_FINAL, EPAR_BENCH_FINAL_LOSS, EPAR_BENCH_CURVE, EPAR_BENCH_CURVE_LOSS,
                          EPAR_BENCH_ONLINE_LOSS, EPAR_BENCH_NPRIMARY };
extern const char *const epar_bench_primary_names[EPAR_BENCH_NPRIMARY];

/* one row of $.experiments.benchmark.tasks */
struct epar_bench_task {
    char id[32];                        /* "needle-long" */
    char paper[160];                    /* the paper row it stands in for */
    char condition[32];                 /* short, long, shuffled, noise, non-sequential */
    char length_class[8];               /* lm, short, long: which length of the budget */
    struct epar_task_cfg task;          /* task id, options; length resolved from the budget */
    enum epar_bench_primary primary;    /* the metric the comparisons and claims use (the others: secondary columns) */
    double steps_scale;                 /* the task's steps: the budget's times this (trained until its curves flatten) */
    int eval_sequences;                 /* its evaluation set (0: the budget's) */
    char lr_family[16];                 /* the learning rate of a mechanism is chosen per family ("": the task's id) */
    double lr_scale[EPAR_MECH_COUNT];   /* by mechanism id: its learning rate on this task = the budget's lr x this, from
                                         * the budget's "lr_scale" {family: {mechanism: scale}} (chosen on seeds that are
                                         * not table seeds, docs/TASKS.md); 1 where it says nothing */
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
    double lr_scale;                    /* > 0: every cell at the budget's lr times this instead of its mechanism's
                                         * scale (--lr-scale: the learning-rate study of docs/TASKS.md); 0: the scales */
    struct epar_train_cfg base;         /* experiments.train (optimiser betas, eps, mechanism settings) + preset */
    struct epar_params prm;             /* the resolved common parameters (run.json; seeds replaced by the budget's) */
    char preset[64];
    char protocol[4096];
    char protocol_hash[32];
    char cache_dir[4200];               /* lm: where the Bible text is cached */
    struct epar_bench_extrap extrap;    /* the length-extrapolation study (bench_extrap.h): its own mechanisms follow
                                         * the grid's in mech (n_mech counts the grid's only) */
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

/* The learning-rate study (docs/TASKS.md): dirs[k] is the --out of a grid run at --lr-scale scales[k] (one of them 1),
 * on seeds that are not table seeds. Per lr_family and mechanism, a scale's score is the mean over the family's tasks of
 * the relative improvement of the primary metric over scale 1 (metrics.csv); the best positive score wins, else 1 —
 * one rule for EPAR and every baseline. Writes lr_study.csv (every score, the chosen marked) and lr_scale.json (the
 * budget's "lr_scale" object: the scales that are not 1) into o. */
#define EPAR_BENCH_MAX_SCALES 8
struct epar_out;
int epar_exp_benchmark_lr_choose(const struct epar_bench_cfg *c, const char *const *dirs, const double *scales, int n,
                                 struct epar_out *o);

#endif
