/* The benchmark grid (issue 16) -> output/benchmark/
 *
 * proxy task x mechanism x seed: every cell is one training run of experiments/train (setup, step loop,
 * evaluation: the train experiment's own functions) with the budget's hyperparameters, identical for every
 * mechanism. Parameter counts are equalised by the MLP width (learned adds a length x dim table) and checked
 * against a tolerance. A cell writes its own folder, cells/<task>/<mechanism>/seed-<seed>/ (cell.json: the
 * configuration and every number the tables need; learning_curve.csv; the first seed's checkpoint.bin, for epar
 * inspect), atomically: an interrupted grid resumes without redoing finished cells, and shards (--shard K/N, MPI
 * ranks) write disjoint cells that --merge gathers. The tables are computed from the cell files only, so one process, shards + merge and
 * MPI give the same bytes (the wall-clock numbers of cost.csv aside). The configuration, cell and plan types: bench_grid.h
 * (shared with the length-extrapolation study, bench_extrap.h, which this module calls). Prefix epar_bench_. */
#ifndef EPAR_EXP_BENCHMARK_H
#define EPAR_EXP_BENCHMARK_H

#include <signal.h>
#include <jansson.h>
#include "experiments/benchmark/bench_grid.h"

extern const char *const epar_bench_primary_names[EPAR_BENCH_NPRIMARY];

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
