/* compare: every mechanism of docs/MECHANISMS.md on the same inputs and projections per seed -> output/compare/
 *
 * Per seed s: one layer (stream (s, 0, WEIGHTS), no position embedding: positions come only from the
 * mechanism), inputs X (B,L,D) from (s, 0, DATA), importance vectors (B,L) of every type from
 * (s, 0, IMPORTANCE); each mechanism draws its synthetic parameters from (s, 1000+id, MECH). Jobs are
 * (mechanism, seed) pairs; results do not depend on the thread count (except the measured times). */
#ifndef EPAR_EXP_COMPARE_H
#define EPAR_EXP_COMPARE_H

#include "lib/csvout.h"
#include "lib/importance.h"
#include "lib/mech.h"
#include "lib/outdir.h"
#include "lib/protocol.h"

#define EPAR_COMPARE_MAX_FACTORS 8

struct epar_compare_cfg {
    struct epar_params prm;             /* length, hidden, heads, batch, seeds */
    int causal;
    int n_mech;
    enum epar_mech_id mech[EPAR_MECH_COUNT];
    double p[EPAR_MECH_COUNT][EPAR_MECH_MAX_PARAMS];  /* parameters of every mechanism (defaults + --set) */
    int local_window;                   /* w of the local mass W_i(w) */
    int extrap_length;                  /* L0 of extrapolation.csv */
    int n_factors;
    int factors[EPAR_COMPARE_MAX_FACTORS]; /* lengths L0 * factor */
    double ablation_beta;               /* beta of the multiplicative designs */
    int table_length;                   /* length of fixed_patterns.csv */
    int claims_length;                  /* longest length of the linear-attention cost slope */
    int n_speed;
    int speed_lengths[EPAR_COMPARE_MAX_FACTORS]; /* lengths of sparse_speed.csv (the pi_speedup check: the largest) */
    int speed_head_dim;                 /* d of sparse_speed.csv */
    int speed_repeats;                  /* timed calls per kernel; the fastest counts */
    int speed_tile;                     /* rows per tile of the structured kernels; 0 = lib/sparse's default */
};

/* ---- the result: numbers (run measures, the writer formats) ---- */

/* metrics of one (mechanism, seed) job, the columns of mechanisms.csv (consistency and ranking per importance type) */
enum {
    EPAR_CMP_ENT, EPAR_CMP_NENT, EPAR_CMP_DIST, EPAR_CMP_LOCAL, EPAR_CMP_SPARS, EPAR_CMP_RMID, EPAR_CMP_RMAX,
    EPAR_CMP_MI, EPAR_CMP_EMPTY, EPAR_CMP_CONS, EPAR_CMP_RANK = EPAR_CMP_CONS + EPAR_IMP_COUNT,
    EPAR_CMP_TIME = EPAR_CMP_RANK + EPAR_IMP_COUNT, EPAR_CMP_RNAN, EPAR_CMP_NM
};
/* the ablation's designs and metrics */
enum { EPAR_CMP_AB_NONE, EPAR_CMP_AB_ADD_LIN, EPAR_CMP_AB_ADD_EXP, EPAR_CMP_AB_MUL_LIN, EPAR_CMP_AB_MUL_EXP,
       EPAR_CMP_NAB };
enum { EPAR_CMP_AM_ENT, EPAR_CMP_AM_NENT, EPAR_CMP_AM_DIST, EPAR_CMP_AM_LOCAL, EPAR_CMP_AM_RMID, EPAR_CMP_AM_RMAX,
       EPAR_CMP_AM_FARPOS, EPAR_CMP_AM_FARNEG, EPAR_CMP_AM_NEGUP, EPAR_CMP_AM_CONS,
       EPAR_CMP_AM_RANK = EPAR_CMP_AM_CONS + EPAR_IMP_COUNT, EPAR_CMP_NAM = EPAR_CMP_AM_RANK + EPAR_IMP_COUNT };
extern const char *const epar_compare_ablation_name[EPAR_CMP_NAB];     /* none, additive-linear, ... */
/* the mechanisms of the extrapolation study, in order */
#define EPAR_CMP_NEXTRAP 5
extern const enum epar_mech_id epar_compare_extrap_mech[EPAR_CMP_NEXTRAP];
#define EPAR_CMP_NFIXED 7   /* the fixed patterns of fixed_patterns.csv: mechanisms fixed-current .. */
extern const int epar_compare_fixed_pattern[EPAR_CMP_NFIXED];

/* one row of sparse_speed.csv (wall clock) */
struct epar_compare_speed_row {
    enum epar_mech_id id;
    int L, d;
    long pairs;                 /* distinct allowed pairs */
    double dense_us, sparse_us, speedup, pair_bound, fraction_of_bound, dense_gflops, fma_peak_gflops,
        dense_fraction_of_peak;
};
struct epar_compare_speed {
    int n;
    struct epar_compare_speed_row *row;
};

/* one row of seed_checks.csv: a measurement behind a seed claim; detail says what was measured and how */
struct epar_compare_check {
    char check[64];
    double value, reference, se;
    double trials;      /* a share of this many independent trials (its interval: Wilson's, lib/audit); NaN otherwise */
    char detail[768];
};
struct epar_compare_checks {
    size_t n, cap;
    struct epar_compare_check *row;
};

struct epar_compare_result {
    int K, S, L;                            /* mechanisms, seeds, length */
    double *mean, *sd;                      /* (K,EPAR_CMP_NM) across seeds (NaN seeds skipped) */
    double *cons, *cons_sd, *rank, *rank_sd;/* (K,EPAR_IMP_COUNT) across seeds (consistency.csv) */
    double *nan_items;                      /* (K) ranking NaN items over seeds, items and importance types */
    double *flops;                          /* (K) flops per row of the mechanism at L */
    double *heat;                           /* (K,L,L) head-averaged attention, first seed, item 0 */
    double alibi_slope[16][16];             /* [n-1][h]: ALiBi slopes for n = 1..16 heads */
    int t5_max_distance;
    int t5_uni[257], t5_bi[513];            /* T5 bucket of i-j = d: unidirectional (d = 0..256, 16 buckets),
                                             * bidirectional (d = -256..256, 32 buckets) */
    int table_length;
    double *fixed;                          /* (EPAR_CMP_NFIXED, table_length^2) the fixed patterns' weights */
    int *n_masks;                           /* (K) 0 (not a mask), 1 (mask) or 2 (local and step) */
    int *mask_slot;                         /* (K) the mask mechanism's slot in masks (-1: not a mask) */
    unsigned char *masks;                   /* (slots,2,L,L) allowed pairs of the mask mechanisms (causal: j <= i) */
    double ab_mean[EPAR_CMP_NAB][EPAR_CMP_NAM], ab_sd[EPAR_CMP_NAB][EPAR_CMP_NAM]; /* ablation across seeds */
    int n_factors;
    double *ex_mean, *ex_sd;                /* (NEXTRAP,2,n_factors,4) entropy, normalised entropy, mean distance,
                                             * local mass across seeds; logn 0/1 */
    char (*ex_note)[160];                   /* (NEXTRAP,2,n_factors) why a mechanism refused a length, or "" */
    double *performer;                      /* (S,2) max |error|, mean row KL of Performer vs exact softmax */
    struct epar_compare_speed speed;        /* sparse_speed.csv */
    struct epar_compare_checks checks;      /* seed_checks.csv */
};

/* Fill cfg from the protocol section "compare" (after epar_protocol_params). */
int epar_exp_compare_config(const struct epar_protocol *proto, struct epar_compare_cfg *cfg);
/* Apply "mech.param=value" (one assignment). */
int epar_exp_compare_set(struct epar_compare_cfg *cfg, const char *assignment);
/* Comma-separated mechanism ids -> cfg->mech (order kept, duplicates refused). */
int epar_exp_compare_select(struct epar_compare_cfg *cfg, const char *list);

/* cfg -> res: the numbers only, nothing written (res is freed on error). */
int epar_exp_compare_run(const struct epar_compare_cfg *cfg, struct epar_compare_result *res);
/* the writer (experiments/analysis/compare_write.c): every table, run.json, one .gp per figure into o's staging folder */
int epar_exp_compare_write(const struct epar_compare_cfg *cfg, const struct epar_compare_result *res, struct epar_out *o,
                       const char *protocol_path);
void epar_exp_compare_free(struct epar_compare_result *res);

/* The measurements behind the seed claims (compare_checks.c, compare_statements.c, compare_speed.c) into *out (the
 * rows of seed_checks.csv). Timing rows (pi_speedup, linear_cost_exponent) are wall clock; pi_speedup is read from
 * speed (measured here when it lacks pi-attention with its default parameters). */
int epar_exp_compare_checks(const struct epar_compare_cfg *cfg, const struct epar_compare_speed *speed,
                            struct epar_compare_checks *out);
/* (compare_speed.c) *out = the rows of sparse_speed.csv: every selected mask mechanism at every speed length, one head
 * of speed_head_dim, one thread: the dense kernel vs lib/sparse's structured kernel (fastest of speed_repeats, after a
 * warm-up call), the distinct allowed pairs and the pair-count bound L^2 / pairs (wall clock; not pinned). */
int epar_exp_compare_speed(const struct epar_compare_cfg *cfg, struct epar_compare_speed *out);

#endif
