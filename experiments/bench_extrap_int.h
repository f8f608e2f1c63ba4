/* The length-extrapolation study's private header, shared by experiments/bench_extrap*.c only (bench_extrap.h is
 * the public one). Computing: bench_extrap.c (configuration, the series of a cell, what a cell evaluates, its numbers
 * in the cell file and read back); writing: bench_extrap_write.c (the study gathered from the cells, its tables,
 * pairs and figures). Prefix epar_bx_. */
#ifndef EPAR_EXP_BENCH_EXTRAP_INT_H
#define EPAR_EXP_BENCH_EXTRAP_INT_H

#include <string.h>
#include <jansson.h>
#include "bench_extrap.h"

/* the index of benchmark task id in c->tasks (-1: none) */
static inline int task_index(const struct epar_bench_cfg *c, const char *id)
{
    for (int k = 0; id && *id && k < c->n_tasks; k++)
        if (!strcmp(c->tasks[k].id, id)) return k;
    return -1;
}

/* ------------------------------------------------------------------------------------------------ */
/* the series of a cell (bench_extrap.c)                                                              */

/* the series of the study on trained mechanism `mech`: itself, then the variants of its weights */
struct series {
    char name[48];
    enum epar_mech_id trained, as;
    int logn, ft;
    char base[48];   /* ft: the series it continues */
};

/* the series of trained mechanism `mech` (into s, at most max; returns how many), and its fine-tuning arms */
int epar_bx_cell_series(const struct epar_bench_extrap *x, enum epar_mech_id mech, struct series *s, int max);
int epar_bx_cell_arms(const struct epar_bench_extrap *x, enum epar_mech_id mech, struct series *s, int max);

/* ------------------------------------------------------------------------------------------------ */
/* a cell's numbers, as the cell file's records (bench_extrap.c)                                      */

/* lm at one length: the window mean, per bucket (bucket 0 = [0, L), j >= 1 = [2^(j-1) L, 2^j L)) and past L */
struct lm_row {
    const char *series;
    int length, defined;
    double bpc, past;
    double bucket[EPAR_BX_MAX_BUCKETS];
    int n_bucket;
    long tokens;
    int ft_steps;
    double ft_tokens;
};

/* retrieval at one length: answers and correct ones by the fact's distance d (index d, 0 unused) */
struct ret_row {
    const char *series;
    int length, defined;
    long *correct, *scored;
    int n_correct, n_scored;
};

#define BX_MAX_ROWS (EPAR_BX_MAX_SERIES * 16 + EPAR_BX_MAX_FT * 16)
struct study_rec {
    double cpu_seconds;   /* the calling thread's CPU time of the study's evaluations and arms (not read by the tables) */
    int n_lm, n_ret;
    struct lm_row lm[BX_MAX_ROWS];
    struct ret_row ret[EPAR_BX_MAX_SERIES * 16];
};

/* the buckets of a window of length T for training length L: their count and the edges of bucket j */
static inline int n_buckets(int T, int L)
{
    int n = 1;
    while (n < EPAR_BX_MAX_BUCKETS && (long)L << (n - 1) < T) n++;
    return n;
}

static inline void bucket_edges(int j, int L, int T, int *lo, int *hi)
{
    *lo = j == 0 ? 0 : L << (j - 1);
    *hi = L << j;
    if (*hi > T) *hi = T;
}

/* what a cell file gives the study: its seed, chance level, study rows and the grid's needle counts */
struct cell_read {
    long seed;
    double chance;
    struct study_rec *study;
    long *correct, *scored;
    int n_correct, n_scored;
    json_t *doc;   /* the study's document (its rows' strings borrow from it) */
};

/* read cell (t, m, s) under root into r (r->study allocated); EPAR_EIO when it is missing; free with epar_bx_free_cell */
int epar_bx_read_cell(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root, int t,
                      int m, int s, struct cell_read *r);
void epar_bx_free_cell(struct cell_read *r);

#endif
