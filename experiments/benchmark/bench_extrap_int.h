/* The length-extrapolation study's private header, shared by experiments/benchmark/bench_extrap*.c only (bench_extrap.h is
 * the public one). Computing: bench_extrap.c (configuration, the series of a cell, what a cell evaluates, its numbers
 * in the cell file and read back); the study gathered from the cells and its statistics: bench_extrap_study.c;
 * writing: bench_extrap_write.c (its tables, pairs and figures). Prefix epar_bx_. */
#ifndef EPAR_EXP_BENCH_EXTRAP_INT_H
#define EPAR_EXP_BENCH_EXTRAP_INT_H

#include <string.h>
#include <jansson.h>
#include "experiments/benchmark/bench_extrap.h"
#include "lib/stats.h"

/* the index of benchmark task id in c->tasks, the study-only ones included (-1: none) */
static inline int task_index(const struct epar_bench_cfg *c, const char *id)
{
    for (int k = 0; id && *id && k < c->n_tasks + c->n_study; k++)
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
/* name: the cell's (epar_bench_mech_name); a study cell with its own parameters has no variants */
int epar_bx_cell_series(const struct epar_bench_extrap *x, enum epar_mech_id mech, const char *name, struct series *s,
                        int max);
int epar_bx_cell_arms(const struct epar_bench_extrap *x, enum epar_mech_id mech, struct series *s, int max);

/* ------------------------------------------------------------------------------------------------ */
/* a cell's numbers, as the cell file's records (bench_extrap.c)                                      */

/* lm at one length: the window mean, per bucket (bucket 0 = [0, L), j >= 1 = [2^(j-1) L, 2^j L)) and past L */
struct lm_row {
    const char *series;
    int length, defined;
    double bpc, past;
    double entropy, uniformity;   /* the attention of the window's second half: mean row entropy (nats) and mean H / ln n */
    double bucket[EPAR_BX_MAX_BUCKETS];
    int n_bucket;
    long tokens, sequences;   /* sequences: the windows read (not in the cell file) */
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
    double chance, value;   /* the cell's chance level and its final metric */
    double pool;            /* its metric on its training pool (train_sequences; NaN: none) */
    double curve;           /* the mean of its evaluation metric over the learning curve (NaN: not recorded) */
    struct study_rec *study;
    long *correct, *scored;
    int n_correct, n_scored;
    json_t *doc;   /* the study's document (its rows' strings borrow from it) */
};

/* read cell (t, m, s) under root into r (r->study allocated); EPAR_EIO when it is missing; free with epar_bx_free_cell */
int epar_bx_read_cell(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root, int t,
                      int m, int s, struct cell_read *r);
void epar_bx_free_cell(struct cell_read *r);

/* ------------------------------------------------------------------------------------------------ */
/* the study gathered from the cells, and its statistics (bench_extrap_study.c)                       */

#define NBIN (2 + EPAR_BX_MAX_BUCKETS)

/* the lm study in memory: per series, seed, length: the bins (window, past L, buckets) */
struct lm_series {
    struct series s;
    int m;                          /* mechanism index of its cells */
    double *v;                      /* (S, NL, NBIN) bpc; NaN: absent */
    double *att;                    /* (S, NL, 2) the window's attention entropy and uniformity (lm_row); NaN: absent */
    double *ref, *H;                /* (S) b(1) (the window at the trained length of the series, or of the arm's base) and H */
    int ft_steps;
    double ft_tokens;
    int present;                    /* any row read */
};

struct lm_study {
    int n, S, NL, L;
    const int *lengths;
    struct lm_series *s;
};

/* the retrieval grid in memory: per series, seed, length: answers and correct ones by distance */
struct ret_series {
    struct series s;
    int m;
    long **correct, **scored;       /* (S * NL) arrays of D_e + 1, NULL: undefined */
};

struct ret_study {
    int n, S, NL, L, t;
    int lengths[EPAR_BENCH_MAX_EXTRAP];
    struct ret_series *s;
    double chance;
};

/* series i at length e, bin b across the seeds (lm_values; ok 0: undefined): the mean and sd of the bpc (mb, sb), of
 * the lost-gain share (msh, ssh) and of the relative change (mr, sr), and the share's and change's paired intervals */
struct lm_stats {
    int ok;
    double mb, sb, msh, ssh, mr, sr;
    struct epar_stats_paired ps, pr;
};

/* series i at length e: the attention entropy (q 0) or uniformity (q 1) of its window across the seeds (mean, sd),
 * and its per-seed change from the trained length (the series' own, an arm's base series'): mean, sd, paired
 * interval; ok 0: some seed lacks one */
struct att_stats {
    int ok;
    double m, sd, mr, sr;
    struct epar_stats_paired pr;
};

/* series i at length e over distances [dlo, dhi] across the seeds (acc_values; nothing when not in_grid): the
 * answers, whether every seed's accuracy is defined (ok), their mean, sd and paired interval */
struct ret_stats {
    long answers;
    int ok;
    double mean, sd;
    struct epar_stats_paired pr;
};

int epar_bx_lm_study_build(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                           struct lm_study *d);
void epar_bx_lm_study_free(struct lm_study *d);
/* the bpc of series i, seed s, length e, bin b (0 window, 1 past L, 2.. buckets) */
double *epar_bx_lmv(const struct lm_study *d, int i, int s, int e, int b);
/* the series named name (-1: none) */
int epar_bx_lm_find(const struct lm_study *d, const char *name);
/* per seed: bpc of bin b at length e, and the lost-gain share (b - b(1)) / (H - b(1)) (and the relative change when rel
 * is not NULL); 1 when every seed has both */
int epar_bx_lm_values(const struct lm_study *d, int i, int e, int b, double *bpc, double *share, double *rel);
/* a pair's side: a series, or "a|b|c" the per-seed mean of a group's (every member defined); 0: absent or undefined */
int epar_bx_group_values(const struct lm_study *d, const char *name, int e, int b, double *bpc, double *share);
/* does bin b exist at length T (training length L)? */
int epar_bx_bin_exists(int b, int T, int L);
/* series i at length e, attention quantity q (struct att_stats) across the seeds */
void epar_bx_att_stats(const struct lm_study *d, int i, int e, int q, double level, struct att_stats *x);
/* series i at length e, bin b across the seeds */
void epar_bx_lm_stats(const struct lm_study *d, int i, int e, int b, double level, struct lm_stats *x);
int epar_bx_ret_study_build(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                            struct ret_study *d);
void epar_bx_ret_study_free(struct ret_study *d);
/* depth bins at length T of a needle: bin b of nb over P positions -> distances [dlo, dhi] */
void epar_bx_depth_bin(int b, int nb, int P, int *dlo, int *dhi);
/* per seed: the accuracy over distances [dlo, dhi] (NaN: no answer there, or undefined); returns the answers */
long epar_bx_acc_values(const long *const *correct, const long *const *scored, int S, int stride, int dlo, int dhi,
                        double *acc);
/* series i at length e over distances [dlo, dhi] across the seeds */
void epar_bx_ret_stats(const struct ret_study *d, int i, int e, int dlo, int dhi, int in_grid, double level,
                       struct ret_stats *x);
/* the per-seed paired difference x - y across the S seeds: 0 when a side is undefined, else its paired test at the
 * level, mean and sample sd */
int epar_bx_pair_stats(const double *x, const double *y, int S, double level, struct epar_stats_paired *pr, double *mean,
                       double *sd);

#endif
