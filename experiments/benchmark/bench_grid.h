/* The benchmark grid's shared types (issue 34): its configuration (budget, tasks, mechanisms and the
 * length-extrapolation study's settings), its cells and plan, a cell's training configuration and its folder.
 * experiments/benchmark/benchmark*.c (the grid) and experiments/benchmark/bench_extrap*.c (the study, bench_extrap.h) both build on this
 * module; calls go one way, the grid into the study, never back. Prefixes epar_bench_, epar_bx_ (the study's types). */
#ifndef EPAR_EXP_BENCH_GRID_H
#define EPAR_EXP_BENCH_GRID_H

#include <stddef.h>
#include "lib/mech.h"
#include "lib/protocol.h"
#include "lib/tasks.h"
#include "experiments/train/train.h"

/* ------------------------------------------------------------------------------------------------ */
/* the length-extrapolation study's configuration (read by epar_bx_config, bench_extrap.c)           */

#define EPAR_BX_MAX_SERIES 32
#define EPAR_BX_MAX_PAIRS 128
#define EPAR_BX_MAX_FT 8
#define EPAR_BX_MAX_CELLS 16        /* tasks with the study's own cells */

/* a variant: the weights of the `trained` mechanism's cells read as `as` (log-n stacked when logn) */
struct epar_bx_variant {
    char name[40];
    enum epar_mech_id trained, as;
    int logn;
};

/* a study cell's mechanism with parameters of its own, "pi-attention@step=4" (several: "m@a=1@b=2"): the cell trains
 * m with those catalogue parameters over the benchmark's; name "" : the mechanism as the benchmark sets it */
#define EPAR_BENCH_MVAR_MAX 4
struct epar_bench_mvar {
    char name[48];
    int n;
    int idx[EPAR_BENCH_MVAR_MAX];
    double val[EPAR_BENCH_MVAR_MAX];
};

struct epar_bx_cells {              /* the study's own cells on one task of the grid */
    char task[32];
    int n_mech;
    enum epar_mech_id mech[EPAR_MECH_COUNT];
    struct epar_bench_mvar var[EPAR_MECH_COUNT];
};

struct epar_bench_extrap {
    int on;                         /* 1: the protocol has the study */
    char lm_task[32], retrieval_task[32];   /* benchmark task ids ("" : none) */
    int depth_bins;
    int n_variants;
    struct epar_bx_variant variants[EPAR_BX_MAX_SERIES];
    int n_ft;
    char ft[EPAR_BX_MAX_FT][40];    /* series continued at the longer lengths ("+ft" appended to their names) */
    int n_pairs;
    char pair_a[EPAR_BX_MAX_PAIRS][48], pair_b[EPAR_BX_MAX_PAIRS][48];
    /* the budget's */
    int n_cells;
    struct epar_bx_cells cells[EPAR_BX_MAX_CELLS];
    int retrieval_sequences;        /* needle items at each length */
    int ft_steps;
    int n_ft_lengths;
    int ft_lengths[16];
    /* set by the grid */
    int restricted;                 /* 1: --mechanisms chose the grid: no cells of the study's own */
    int n_extra;                    /* the study's own mechanisms, after the grid's in cfg->mech */
};

/* ------------------------------------------------------------------------------------------------ */
/* the grid                                                                                           */

#define EPAR_BENCH_MAX_TASKS 32
#define EPAR_BENCH_MAX_EXTRAP 16
#define EPAR_BENCH_MAX_BOOST 16

/* A cell's candidate primary metrics (chosen per task in the protocol, from the power study of docs/TASKS.md):
 *   FINAL        the task's metric on the whole evaluation set at the end (accuracy, or bits per character)
 *   FINAL_LOSS   the evaluation loss at the end (nats per scored token)
 *   CURVE        the mean of the evaluation metric over the learning curve's evaluations (sample efficiency)
 *   CURVE_LOSS   the mean evaluation loss over them
 *   ONLINE_LOSS  the mean training loss over every step, each on a fresh batch before learning from it (prequential) */
enum epar_bench_primary { EPAR_BENCH_FINAL, EPAR_BENCH_FINAL_LOSS, EPAR_BENCH_CURVE, EPAR_BENCH_CURVE_LOSS,
                          EPAR_BENCH_ONLINE_LOSS, EPAR_BENCH_NPRIMARY };

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
    int own_pos;                        /* 1: the task's "set" gave its cells their own mechanism parameters, pos */
    int study;                          /* 1: study-only ("study": true): no grid cells, only the study's own */
    int heads;                          /* its models' heads (0: the budget's) */
    struct epar_nnpos_settings pos;     /* (the section's set with the task's over it) */
};

#define EPAR_BENCH_MAX_STAGES 8

struct epar_bench_budget {
    char name[16];
    int n_seeds;
    unsigned long seeds[EPAR_MAX_SEEDS];    /* the pool of seeds: stage k trains its first stages[k] of them */
    int n_stages;                           /* the planned looks of the staged grid (docs/STAGED.md); 1: a fixed design */
    int stages[EPAR_BENCH_MAX_STAGES];      /* seeds of each look, increasing; the last is the cap (<= n_seeds) */
    int extend_all_open;                    /* 1: a later look extends every open claim; 0: only those whose seeds
                                             * needed at the observed spread are at most the cap (futility) */
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
    int n_tasks;                        /* the grid's tasks; the study-only ones ("study": true) follow them in tasks */
    int n_study;                        /* study-only tasks: tasks[n_tasks .. n_tasks + n_study), only the
                                         * extrapolation study's cells of them are run (no grid cells, no tables) */
    struct epar_bench_task tasks[EPAR_BENCH_MAX_TASKS];
    int n_mech;
    enum epar_mech_id mech[EPAR_MECH_COUNT];
    double param_tol;                   /* relative to none's count */
    int equalise_mlp;                   /* 1: equalise by the MLP width, 0: only check */
    int distance_bins;
    double sanity_margin;               /* every mechanism's bpc at least this share below the chance level */
    double head_pattern, head_similarity;   /* trained_heads.csv: a head is positional at a best pattern correlation of
                                             * at least head_pattern, two heads highly similar at head_similarity */
    int interv_sequences;               /* evaluation items of the interventions (head_masking.csv, boost.csv) */
    double head_mask_threshold;         /* a head is removable below this relative worsening of the metric */
    int n_boost;
    double boost[EPAR_BENCH_MAX_BOOST]; /* the attention boost factors of boost.csv (none: no boost sweep) */
    double level;                       /* the level of every interval, Holm, MDE of the tables: the audit's level
                                         * (audit.level) spent over the planned looks, 1 - (1 - audit_level) / n_stages */
    double audit_level;                 /* audit.level */
    int sub;                            /* 1: a staged look's grid of one claim's cells (bench_stage.c): its tables
                                         * only (no cost cell, interventions or figures) */
    double lr_scale;                    /* > 0: every cell at the budget's lr times this instead of its mechanism's
                                         * scale (--lr-scale: the learning-rate study of docs/TASKS.md); 0: the scales */
    struct epar_train_cfg base;         /* experiments.train (optimiser betas, eps, mechanism settings) + preset */
    struct epar_params prm;             /* the resolved common parameters (run.json; seeds replaced by the budget's) */
    char preset[64];
    char protocol[4096];
    char protocol_hash[32];
    char cache_dir[4200];               /* lm: where the Bible text is cached */
    struct epar_bench_extrap extrap;    /* the length-extrapolation study's settings (the study: bench_extrap.h): its
                                         * own mechanisms follow the grid's in mech (n_mech counts the grid's only) */
    struct epar_bench_mvar mvar[EPAR_MECH_COUNT];   /* by index into mech: a study cell's own parameters (name "": none) */
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

/* the cost cell: one untimed step, then at most this many timed ones */
#define EPAR_BENCH_MAX_COST_STEPS 65536

/* the name of mechanism m of the grid: its catalogue id, or a study cell's "mechanism@param=value" */
const char *epar_bench_mech_name(const struct epar_bench_cfg *c, int m);
/* "mechanism" or "mechanism@param=value[@...]" -> *id and *v (v->name "" without '@'); EPAR_EINVAL naming the part */
int epar_bench_mvar_parse(const char *s, enum epar_mech_id *id, struct epar_bench_mvar *v);

/* c->level from c->audit_level and the budget's looks: every look judges at 1 - (1 - audit.level) / looks (Bonferroni
 * over the staged grid's looks, bench_stage.h) */
void epar_bench_levels(struct epar_bench_cfg *c);

/* Work of one token of a training step of t at sequence length T (multiply-adds of the weights and the attention;
 * a forward-only evaluation does a third of it): the unit of cell weights and of the estimate's timing */
double epar_bench_token_work(const struct epar_train_cfg *t, double T);

/* The training configuration of cell k. */
void epar_exp_benchmark_cell_cfg(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell, struct epar_train_cfg *t);
/* distance.csv's bins of needle task i: bin `bin`'s distances [*lo, *hi] (lo, hi may be NULL); returns the bins' count */
int epar_exp_benchmark_distance_bin(const struct epar_bench_cfg *c, int i, int bin, int *lo, int *hi);
/* the farthest distance a causal sliding window reaches on task i's cells: layers x sliding-window.radius (the task's
 * "set" or the section's) */
int epar_exp_benchmark_window_reach(const struct epar_bench_cfg *c, int i);
/* cells/<task>/<mech>/seed-<seed> (or cells/cost) under <out>/benchmark */
void epar_exp_benchmark_cell_dir(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell, char *buf, size_t n);

#endif
