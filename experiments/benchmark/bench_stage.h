/* The staged grid (issue 51, docs/STAGED.md): the benchmark's trained claims judged after each planned look, and
 * seeds added only to the cells that feed a claim still open: bench_stage.c which cells a claim reads,
 * bench_stage_looks.c the looks themselves (their cells trained by the scheduler, bench_sched.h). Prefix
 * epar_bench_stage_.
 *
 * The error rate is spent over the looks by Bonferroni: every look judges at level 1 - (1 - audit.level) / looks, so
 * "reproduced" and "not reproduced" keep their nominal rates whatever the stopping (tests/unit/test_stage.c simulates
 * it). A look after the first judges each open claim on the tables of exactly its own cells (its task(s) and the
 * mechanisms it reads, every baseline where it compares against all of them) at that look's seeds: a grid of its own
 * under <out>/benchmark/stages/<look>/<claim id>/benchmark/, computed from the same cell store as the first look's. */
#ifndef EPAR_EXP_BENCH_STAGE_H
#define EPAR_EXP_BENCH_STAGE_H

#include <jansson.h>
#include "lib/audit.h"
#include "experiments/benchmark/bench_grid.h"

/* 1 when the claim reads a file of the benchmark (benchmark/...) */
int epar_bench_stage_trained(json_t *claim);

/* The cells a claim reads, as (task, mechanism) families of c (fam[t][m] = 1; t indexes c->tasks, grid and study-only;
 * m c->mech, the grid's and the study's own): the task(s) of its rows, and the mechanisms it names (a study variant
 * such as ntk-rope is the mechanism trained behind it, a '+ft' arm its cell's); a table that compares against every
 * baseline (main_table, comparisons, when_to_use, ...) takes every grid mechanism of the task. Returns the number of
 * families; 0 when more seeds cannot change what it reads (the cost cell, the interventions on the first seed's
 * checkpoints). */
int epar_bench_stage_families(const struct epar_bench_cfg *c, json_t *claim,
                              unsigned char fam[EPAR_BENCH_MAX_TASKS][EPAR_MECH_COUNT]);

/* The staged benchmark's record: its path under out_root (out_root/benchmark/stages.json, written by epar benchmark)
 * and the document (NULL without one: a fixed design, or no benchmark) */
void epar_bench_stage_path(const char *out_root, char *path, size_t n);
json_t *epar_bench_stage_record(const char *out_root);

/* sub = full restricted to the families (its tasks, the grid mechanisms any of its grid tasks needs, the study's
 * cells it needs) at the first n_seeds seeds, flagged sub (its tables only) */
int epar_bench_stage_restrict(const struct epar_bench_cfg *full, const unsigned char fam[EPAR_BENCH_MAX_TASKS][EPAR_MECH_COUNT],
                              int n_seeds, struct epar_bench_cfg *sub);

/* The looks after the first (bench_stage_looks.c; its tables written under root, full's first look `first` with its
 * plan plan1): each open trained claim of the protocol judged again on its own cells at the next look's seeds, trained
 * by the scheduler s (the ranks share them, rank 0 writes the tables; every rank judges), until none is open or the
 * cap; then stages.json and, unless s->quiet, the summary on stdout and the claims still open with what would close
 * them. stopped->code = 128 + the signal when interrupted. */
struct epar_bench_sched;
struct epar_bench_stopped;
int epar_bench_stage_looks(const struct epar_bench_sched *s, const struct epar_bench_cfg *full,
                           const struct epar_bench_cfg *first, const struct epar_bench_plan *plan1,
                           const struct epar_protocol *proto, const char *root, struct epar_bench_stopped *stopped);
/* --plan on stdout: each look's cells, the claims each (task, mechanism) feeds, and the estimated time at s->njobs
 * cells at once (cells done under root are not counted); nothing trained */
int epar_bench_stage_plan(const struct epar_bench_sched *s, const struct epar_bench_cfg *full,
                          const struct epar_bench_cfg *first, const struct epar_bench_plan *plan,
                          const struct epar_protocol *proto, const char *root);

#endif
