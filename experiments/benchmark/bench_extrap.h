/* The length-extrapolation study of epar benchmark (issue 33) -> output/benchmark/extrapolation_bpc.csv,
 * retrieval.csv, pairs.csv and their figures.
 *
 * Train at L, evaluate at k L for the budget's lengths (k = 1, 2, 4, 8 at quick; up to 16 at full), for every
 * trained mechanism and for the same-weight variants, in the cells of the benchmark's grid:
 *   - lm (bits per character on held-out windows of each length, not overlapping, as Press et al.'s first mode):
 *     the window mean, per position bucket (within L, L-2L, 2L-4L, ...: the window mean dilutes the positions
 *     never seen) and over every position past L; per seed the lost-gain share G(k) = (b(k) - b(1)) / (H - b(1))
 *     (H: the held-out characters' entropy, what a constant answer gives; 0 = no loss, 1 = every learned bit lost);
 *   - retrieval at length: the cells of a needle task (one fact among pads, trained at its own L) at k L, the
 *     accuracy by the depth of the fact (0 = the start of the sequence, 1 = just before its question): the
 *     length x depth grid of the passkey / needle-in-a-haystack test;
 *   - same weights: ntk-rope, interpolation and log-n act only past the trained length, so trained at L they are
 *     rope's and none's models: they are evaluation-time variants of those cells ("variants": name -> the trained
 *     mechanism whose weights it reads; "ntk-rope+log-n" stacks log-n), paired with them seed by seed on identical
 *     weights, with train_length = the trained length;
 *   - fine-tuning arms: a cell's weights continued at k L as one of its series for finetune_steps steps (a few % of
 *     the training, the same tokens per step, the schedule's final learning rate, one data stream shared by the arms)
 *     and evaluated again there ("interpolation+ft"): "without fine-tuning poor, with it good" on one checkpoint;
 *   - the study's own cells: mechanisms the grid does not train (sliding-window, multiplicative-pe, linear-elu,
 *     performer) on the tasks named by the budget's "cells", only there (a task's own "set" over the section's).
 * Every cell records its raw numbers (cell.json "extrapolation_study"); the tables are computed from the cell files
 * only, as the grid's. Paired tables (pairs.csv): per named pair of series, per length and bin, the per-seed paired
 * difference (bpc, its relative form, G, accuracy), its interval at the audit's level and n, for the claims; the grid's
 * other tasks too where both have cells (a needle task by depth, over all and past a sliding window's reach, with each
 * series' z against the chance level there; any other task its final metric).
 * Configuration: $.experiments.benchmark.extrapolation, with sizes per budget in its "budgets". Prefix epar_bx_. */
#ifndef EPAR_EXP_BENCH_EXTRAP_H
#define EPAR_EXP_BENCH_EXTRAP_H

#include <jansson.h>
#include "experiments/benchmark/bench_grid.h"

#define EPAR_BX_MAX_BUCKETS 12      /* position buckets: within L, then doublings */

struct epar_train_run;
struct epar_protocol;
struct epar_out;

/* Read $.experiments.benchmark.extrapolation (and its budget `budget`) into c->extrap; absent: the study is off.
 * Protocol errors are EPAR_EPROTOCOL naming the JSON path. Needs c's tasks and budget read. */
int epar_bx_config(struct epar_bench_cfg *c, const struct epar_protocol *p, const char *budget);
/* After the grid's mechanisms are chosen: the study's own mechanisms appended to c->mech (c->n_mech stays the
 * grid's; c->extrap.n_extra counts them), none when c->extrap.restricted. */
void epar_bx_select(struct epar_bench_cfg *c);
/* 1 when task t gets a cell of mechanism index m (grid mechanisms on every task; the study's own where it says) */
int epar_bx_has_cell(const struct epar_bench_cfg *c, int t, int m);
/* The study's settings a cell runs with (part of its configuration: another study redoes it), NULL: none */
json_t *epar_bx_cell_config(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell);
/* The study's own series of an lm cell (the weights read as trained) at the budget's extrapolation lengths: the
 * evaluation the cell's `extrapolation` list reports (n = 0: the study did not make it) */
struct epar_bx_own {
    int n;
    int defined[EPAR_BENCH_MAX_EXTRAP];
    double bpc[EPAR_BENCH_MAX_EXTRAP];
    long sequences[EPAR_BENCH_MAX_EXTRAP];
};
/* The work epar_bx_cell_run does in cell (trained with t), in the unit of the cell's weight (tokens x
 * epar_bench_token_work; an evaluation a third of a training step per token): each series' evaluation at each length
 * where it is defined, each fine-tuning arm's steps and evaluation; 0 for a cell outside the study */
double epar_bx_cell_work(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell,
                         const struct epar_train_cfg *t);
/* After a cell trained (r): its study numbers (NULL: nothing to do) into *out (a new reference), and its own
 * series' bpc at the extrapolation lengths into *own. */
int epar_bx_cell_run(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell, struct epar_train_run *r,
                     json_t **out, struct epar_bx_own *own);
/* The tables and figures from the cells under root into o; *run_extra gets the study's settings (run.json). */
int epar_bx_write(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                  struct epar_out *o, json_t *run_extra);

#endif
