/* The benchmark's private header, shared by experiments/benchmark/benchmark*.c only (benchmark.h is the public one).
 *
 * Computing: benchmark.c (configuration, the plan, the cost cell's design, the learning-rate study),
 * benchmark_cells.c (a cell's run and its files: resume, shards, merge, and the grid of numbers read back from them),
 * benchmark_stats.c (the statistics the tables report, from that grid: lib/stats applied to the benchmark's pairs).
 * Writing: benchmark_tables.c (the CSV tables, main_table.md, run.json) and benchmark_figures.c (the gnuplot figures),
 * both taking the computed grid. The types and a cell's configuration and folder, shared with the extrapolation study
 * (bench_extrap*.c, which this module calls and which calls nothing here): bench_grid.{h,c}. Prefix epar_bench_. */
#ifndef EPAR_EXP_BENCHMARK_INT_H
#define EPAR_EXP_BENCHMARK_INT_H

#include <jansson.h>
#include "lib/csvout.h"
#include "lib/stats.h"
#include "experiments/benchmark/bench_extrap.h"
#include "experiments/benchmark/benchmark.h"
#include "experiments/train/inspect.h"

/* ------------------------------------------------------------------------------------------------ */
/* plan (benchmark.c)                                                                                 */

/* the cost cell's design: its comparisons are every mechanism against none and EPAR enhanced against basic (those
 * present), each timed as pairs of single steps adjacent in time; a mechanism in no comparison is timed alone.
 * The comparisons the cost claims read (enhanced against none and against basic) decide when to stop, are timed in
 * every block and their models are set up afresh each generation; the others take turns, one in every other block,
 * on models set up once. Without either claim's comparison, every unit is in every block and decides. */
struct cost_unit {
    int a, b;   /* indices into c->mech; b < 0: a step of a alone */
};
struct cost_design {
    struct cost_unit unit[2 * EPAR_MECH_COUNT];   /* the comparisons (pair k = unit k), then the steps alone */
    int n_mech, n_pair, n_unit, decides[2 * EPAR_MECH_COUNT];
    int dec[2 * EPAR_MECH_COUNT], n_dec;          /* units in every block */
    int oth[2 * EPAR_MECH_COUNT], n_oth;          /* units in turn, in every other block */
    int fresh[EPAR_MECH_COUNT];                   /* a mechanism of a deciding unit: set up afresh each generation */
};

/* the longest block: every unit (its two steps and a spacer before it) and the unit in turn; the most timed steps
 * of one mechanism (the cell stops before a block could pass it) */
#define COST_MAX_SEQ (6 * EPAR_MECH_COUNT + 3)
/* the cost cell's spacers before each model's set-up: up to this many bytes (in steps of 64), about an L2 cache's size */
#define COST_SPACER_MAX (2u << 20)

/* the mechanism index of id in c->mech (-1: not in the grid) */
int epar_bench_mech_index(const struct epar_bench_cfg *c, enum epar_mech_id id);
static inline int is_epar(enum epar_mech_id id) { return id == EPAR_MECH_EPAR_BASIC || id == EPAR_MECH_EPAR_ENHANCED; }
/* the cost cell's design from the grid's mechanisms */
void epar_bench_cost_design(const struct epar_bench_cfg *c, struct cost_design *d);
/* the unit in turn in block B of the cost cell (an index into d->unit), -1 in a block without one */
int epar_bench_cost_turn(const struct cost_design *d, int B);
/* block B of the cost cell as a sequence of steps (benchmark.c: the orders it follows); returns its length */
int epar_bench_cost_block(const struct cost_design *d, int B, int prev, int *seq, int *pa, int *pb);

/* ------------------------------------------------------------------------------------------------ */
/* the cell files, as records (benchmark_cells.c: cell.json is written from and read back into them)   */

/* a training cell: the final evaluation, the needle's accuracy by distance, lm's metric at other lengths */
struct cell_extrap {
    int length, defined;
    double value;
    long sequences;
};

struct train_cell {
    json_t *config;
    const char *task, *task_kind, *mechanism, *metric, *checkpoint;
    long seed, params, scored, sequences, steps;
    double value, eval_loss, tokens, chance, chance_se, seconds, step_seconds;
    double step_cpu, pos_cpu;  /* thread CPU seconds of the training steps and of the input position table in them
                                * (floater-learned's recursion; recorded for that mechanism only, NaN otherwise) */
    double curve_metric, curve_loss, online_loss;   /* learning-curve means (curve_means); NaN in older cells */
    double pool_value, pool_loss;   /* train_sequences > 0: the final model's metric and loss on its training pool (NaN:
                                     * no pool, not written) */
    struct epar_inspect_summary attn;               /* what the trained heads attend to (epar inspect's summaries) */
    int have_attn;
    long *correct, *answers;   /* (T + 1) per needle distance */
    int n_correct, n_answers, n_extrap;
    struct cell_extrap extrap[EPAR_BENCH_MAX_EXTRAP];
    json_t *study;             /* the extrapolation study's numbers of this cell (bench_extrap), NULL: none */
};

/* the cost cell: every mechanism's timed steps, and each comparison's adjacent pairs */
struct cost_mech {
    const char *mechanism;
    long params;
    double bytes;
    double *step, *attention;   /* (n_step) thread CPU seconds of each timed step in order, and of its attention */
    int n_step, n_attention;
    int warm_steps;             /* untimed steps before its turns (a model set up once: see run_cost_cell) */
};

/* a comparison: `mechanism` against `against`, timed as pairs of one step of each, adjacent in time */
struct cost_pair {
    const char *mechanism, *against;
    int decides;                /* a comparison a cost claim reads: timed in every block, it decides when to stop */
    double *a, *b;              /* (n) CPU seconds of mechanism's and against's step of each pair */
    double *gen;                /* (n) the generation of models (0, 1, ...) each pair ran on */
    int n_a, n_b, n_gen;
};

struct cost_cell {
    json_t *config;
    const char *task, *clock, *blas_core, *design, *stopped;
    int length, batch, threads, blocks, generations, generation_blocks, n_mech, n_pair;
    double widest, target, cpu_seconds, setup_seconds, limit_seconds;
    struct cost_mech mech[EPAR_MECH_COUNT];
    struct cost_pair pair[EPAR_MECH_COUNT];
};

/* ------------------------------------------------------------------------------------------------ */
/* the grid: every cell's numbers, read back from the cell files (benchmark_cells.c)                   */

/* the numbers of every training cell, read back from the cell files */
struct grid {
    int NT, M, S;
    double *value;          /* (NT, M, S) the task's primary metric (the comparisons' and claims') */
    double *cand[EPAR_BENCH_NPRIMARY];   /* (NT, M, S) every candidate metric; cand[EPAR_BENCH_FINAL] is the final one */
    double *chance;         /* (NT, M, S) the best constant answer's metric on the cell's evaluation items (NaN: a
                             * cell written before epar recorded it) */
    double *chance_se;      /* (NT, M, S) its standard error */
    struct train_cell *cell;   /* (plan->n) the training cells' files (the last cell is the cost cell's) */
    json_t **doc;           /* (plan->n) the documents they were read from (their strings) */
    struct cost_cell cost;
};

/* "learned": a mechanism whose mean metric is beyond the best constant answer's by more than LEARNED_Z of that
 * answer's standard errors on the evaluation items, in the task's better direction. A proxy comparison on a
 * task no mechanism learned compares models that all answer like a constant: it says nothing about EPAR. */
#define LEARNED_Z 3.0

static inline size_t gi(const struct grid *g, int t, int m, int s) { return ((size_t)t * g->M + m) * g->S + s; }
static inline double *gv(const struct grid *g, int t, int m, int s) { return g->value + gi(g, t, m, s); }
/* the final metric: what "learned" and the sanity checks compare with the chance level */
static inline double *gf(const struct grid *g, int t, int m, int s) { return g->cand[EPAR_BENCH_FINAL] + gi(g, t, m, s); }

/* is higher better: for the task's final metric (task_hib), for candidate k, and for its primary (prim_hib) */
static inline int task_hib(const struct epar_bench_cfg *c, int t)
{
    return epar_task_table[c->tasks[t].task.id].higher_is_better;
}
static inline int cand_hib(const struct epar_bench_cfg *c, int t, int k)
{
    return (k == EPAR_BENCH_FINAL || k == EPAR_BENCH_CURVE) && task_hib(c, t);
}
static inline int prim_hib(const struct epar_bench_cfg *c, int t) { return cand_hib(c, t, c->tasks[t].primary); }

/* Read every cell under root (<out>/benchmark) into g (EPAR_EIO naming a missing cell); free with grid_free */
int epar_bench_grid_read(struct grid *g, const struct epar_bench_cfg *c, const struct epar_bench_plan *plan,
                         const char *root);
void epar_bench_grid_free(struct grid *g, const struct epar_bench_plan *plan);

/* ------------------------------------------------------------------------------------------------ */
/* statistics (benchmark_stats.c)                                                                     */

/* a comparison's overhead from its n pairs, measured on generations gen (fresh set-ups of the models): per
 * generation the median of its pairs' log ratios log(a / b), their mean with its t interval across the generations
 * at the level (epar_stats_group_medians), back on the scale of ratio - 1; hw is half the interval's width; sd: of
 * the per-pair ratios - 1 (descriptive); d: scratch (n) */
struct overhead {
    double est, lo, hi, hw, sd;
    int n, groups;
};
/* a comparison's overhead from the cost cell's pairs (NaN, n 0 without the pair) and the widest half-width of
 * the deciding comparisons (+inf while one has no interval yet; 0 without any); scratch: (pairs) */
struct overhead epar_bench_cost_overhead(const struct cost_pair *p, double level, double *scratch);
double epar_bench_cost_widest(const struct cost_cell *x, double level, double *scratch);
/* pairs for a half-width of target */
double epar_bench_pairs_needed(const struct overhead *o, double target);
/* cost.csv from the cost cell: per mechanism the step's thread CPU time (median and sd over its timed steps), its
 * attention share, and the overheads over none and (enhanced) over basic from their adjacent pairs: the median
 * ratio - 1 with its distribution-free interval at the audit's level (pair_overhead), the pairs behind it, and how
 * many pairs an interval of cost_halfwidth would take at the spread measured */
struct cost_row {
    double step_ms, step_ms_sd;        /* the median and sd of its steps' CPU milliseconds */
    double attention_share;            /* of the step's time */
    struct overhead on, ob;            /* over none, over epar-basic (n 0: no such pair) */
    double need, gens;                 /* pairs for an interval of cost_halfwidth; generations behind the overheads */
    int steps;
};
/* d: scratch (the most timed steps of a mechanism + 1) */
void epar_bench_cost_row(const struct epar_bench_cfg *c, const struct cost_cell *x, int m, double *d, struct cost_row *r);

/* paired comparison across seeds of per-seed relative differences sgn (x_s - y_s) / |mean y| (lib/stats: their mean,
 * the relative improvement, its sd, t, p, interval and detectable effect); n = 0 when mean y is 0 or not finite */
struct epar_stats_paired epar_bench_paired_test(const double *x, const double *y, int n, int higher_is_better,
                                                 double level);
/* the best baseline of task t: the non-EPAR mechanism with the best mean (-1 if none) */
int epar_bench_best_baseline(const struct epar_bench_cfg *c, const struct grid *g, int t, int hib);
/* task t's chance level and its se (means over the task's cells), and how many mechanisms learned it (-1:
 * unknown, cells without a chance level) */
int epar_bench_task_learned(const struct epar_bench_cfg *c, const struct grid *g, int t, double *chance, double *se);

/* one EPAR form x against baseline y on task t, paired by seed: the relative improvement, its two-sided interval at
 * the audit's level and the detectable effect of that paired t-test (paired_test), and its Holm-adjusted p across
 * the baselines (versus_all) */
struct versus {
    struct epar_stats_paired pr;
    double p_holm;
};
/* EPAR mechanism x against every baseline of task t (vs[m] for baseline m; NaN rows for the EPAR mechanisms) */
void epar_bench_versus_all(const struct epar_bench_cfg *c, const struct grid *g, int t, int x, struct versus *vs);
/* the summary of the comparisons of EPAR mechanism x on task i (main_table.csv's <form>_vs_baselines_*, _beats,
 * ...), what the audit's beats_all rule reads: the smallest improvement over the baselines (the estimate of "x beats
 * every baseline": its worst comparison) with the smallest lower and upper ends of the intervals (lower end > 0: x beats every baseline at the
 * level; NaN when a comparison has no spread, so the intersection-union test cannot succeed), the smallest
 * Holm-adjusted p of a baseline better than x, the smallest upper end at the Bonferroni-adjusted level
 * 1 - (1 - level) / baselines (below a reported gain: the gain is excluded for some baseline), how many baselines x
 * beats, how many beat it, how many comparisons have no spread, and the detectable effect of the verdict's test: the
 * largest, over the baselines, effect at which the intersection-union test over all of them succeeds with 80 % power
 * (lib/stats, union bound) */
struct versus_sum {
    double min_rel, min_lo, min_hi, holm_p, nonsup, mde;   /* NaN where undefined */
    int beats, beaten, flat;
};
/* 0 (s untouched) when the grid has no baseline */
int epar_bench_versus_summary(const struct epar_bench_cfg *c, const struct grid *g, int i, int x,
                              struct versus_sum *s);
/* when to use: EPAR mechanism x's gain on condition `cond` over none (versus_best 0) or over each task's best baseline
 * (1): per seed the mean over the condition's tasks of the relative differences, then its paired test against 0
 * across the seeds; 0 when a task has no such baseline or the condition no task */
struct condition_gain {
    char tasks[512];                /* the condition's task ids, space-separated */
    int n_tasks, learned;           /* learned: its tasks learned by some mechanism (-1: unknown) */
    struct epar_stats_paired pr;    /* the gain's mean, sd, t, p across the seeds */
};
int epar_bench_condition_gain(const struct epar_bench_cfg *c, const struct grid *g, const char *cond, int x,
                              int versus_best, struct condition_gain *r);
/* sanity: per task and mechanism, the mean metric against the chance level (in chance se and relative), whether
 * the mechanism learned the task (beyond LEARNED_Z se), and for bpc tasks whether it is at least sanity_margin
 * below the chance level: a baseline that does not learn lm is broken, and every comparison with it is moot */
struct sanity {
    double mean, chance, se, z, rel;   /* the mean final metric, the chance level and its se, gain / se, gain / |chance| */
    int learned, meets;                /* meets: the margin (-1: not a bpc task) */
};
void epar_bench_sanity(const struct epar_bench_cfg *c, const struct grid *g, int i, int m, struct sanity *s);
/* needle task i, mechanism m: the answers' accuracy by the distance of the fact before the query, in bins of
 * (nearly) equal width (at most c->distance_bins, into b); returns how many bins */
struct distance_bin {
    int lo, hi;                     /* distances lo .. hi */
    double mean, sd;                /* accuracy across the seeds */
    long answers;
};
int epar_bench_distance_bins(const struct epar_bench_cfg *c, const struct grid *g, int i, int m, struct distance_bin *b);
/* steps to learn of task i and mechanism m (from the cells' learning_curve.csv under root): per seed the first
 * evaluation step from which the eval metric stays beyond the chance level by more than LEARNED_Z se to the end; the
 * mean and sd over the seeds that learned (NaN: none did), and how many did */
struct learn {
    double mean, sd;
    int learned;
};
int epar_bench_steps_to_learn(const char *root, const struct epar_bench_cfg *c, const struct epar_bench_plan *plan,
                              const struct grid *g, int i, int m, struct learn *r);

/* extrapolation.csv: lm task i, mechanism m at extrapolation length e: the mean and sample sd of the per-seed values
 * (NaN unless every seed's value is defined) */
struct extrap_point {
    double mean, sd;
    int defined;
};
void epar_bench_extrap_point(const struct epar_bench_cfg *c, const struct grid *g, int i, int m, int e,
                             struct extrap_point *r);
/* params.csv: one row per task (task -1: the cost cell) and mechanism of the first seed's cells, in plan order: the
 * parameter count, the MLP width, the relative difference from none's on the same task (NaN without none), whether
 * it is within param_tol, the cell's learning rate, its scale over the budget's and its steps */
struct param_row {
    int task, mech, mlp, within, steps;
    double params, rel, lr, lr_scale;
};
/* rows: room for plan->n * (n_mech + 1); returns their number; *worst = the largest |rel| (0 when none) */
int epar_bench_param_rows(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, struct param_row *rows,
                          double *worst);
/* trained_attention.csv: every (task, mechanism, seed) cell of the grid with the trained attention's summaries, and
 * its distance ratio minus none's of the same task and seed (NaN without it) */
struct trained_attn {
    int task, mech, seed;
    const struct epar_inspect_summary *a;
    double distance_ratio_vs_none;
    /* from the per-head record (NaN without it): the share of heads whose best fixed-pattern correlation is at least
     * head_pattern, and minus none's; the shares whose most similar head of the layer (of another layer) is at least
     * head_similarity; the mean over the layers of the Spearman correlation of ALiBi's slopes with the heads' mean
     * distances (epar_bench_slope_spearman) */
    double positional_share, positional_share_vs_none, similar_layer_share, similar_other_share, slope_spearman;
    /* their run-level standard errors, floors of the spread across seeds when every seed gives the same value (the
     * audit's se_run_column): a share's the plus-four (Agresti-Coull) se over the model's heads, sqrt(p~ (1 - p~) /
     * (n + 4)), p~ = (k + 2) / (n + 4); the slope correlation's the sd of a Spearman correlation of n heads under no
     * association, 1 / sqrt(n - 1), of the mean over the layers: 1 / sqrt((n - 1) layers) (conservative: a real
     * association spreads less) */
    double positional_share_se, similar_layer_share_se, similar_other_share_se, slope_spearman_se;
};
/* the Spearman correlation over the heads of layer l of a->head's slopes and mean distances (NaN: no slopes, or fewer
 * than 2 heads) */
double epar_bench_slope_spearman(const struct epar_inspect_summary *a, int l);
/* head_masking.csv, head_masking_summary.csv, boost.csv, boost_summary.csv and boost.png from the kept checkpoints
 * under root (benchmark_interv.c) */
int epar_bench_interventions(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const struct grid *g,
                             const char *root, struct epar_out *o);
/* rows: room for NT * M * S; returns their number, or -1 (out of memory) */
int epar_bench_trained_attention(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan,
                                 const struct grid *g, struct trained_attn *rows);

/* ------------------------------------------------------------------------------------------------ */
/* writing (benchmark_figures.c; the tables: benchmark_tables.c)                                      */

/* every figure of the grid into o (have_extrap, have_distance: those tables have rows) */
int epar_bench_write_figures(const struct epar_bench_cfg *c, const struct grid *g, struct epar_out *o, int have_extrap,
                             int have_distance);

#endif
