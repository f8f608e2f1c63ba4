/* compare: every mechanism of docs/MECHANISMS.md on the same inputs and projections per seed -> output/compare/
 *
 * Per seed s: one layer (stream (s, 0, WEIGHTS), no position embedding: positions come only from the
 * mechanism), inputs X (B,L,D) from (s, 0, DATA), importance vectors (B,L) of every type from
 * (s, 0, IMPORTANCE); each mechanism draws its synthetic parameters from (s, 1000+id, MECH). Jobs are
 * (mechanism, seed) pairs; results do not depend on the thread count (except the measured times). */
#ifndef EPAR_EXP_COMPARE_H
#define EPAR_EXP_COMPARE_H

#include "lib/csvout.h"
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

struct epar_compare_result {
    struct epar_table *mechanisms, *alibi, *t5, *fixed, *masks, *ablation, *extrapolation, *checks, *consistency,
        *performer,                             /* performer vs exact softmax per seed */
        *speed;                                 /* sparse_speed.csv */
    struct epar_table *heat[EPAR_MECH_COUNT];   /* head-averaged attention, first seed, item 0 */
};


/* Fill cfg from the protocol section "compare" (after epar_protocol_params). */
int epar_exp_compare_config(const struct epar_protocol *proto, struct epar_compare_cfg *cfg);
/* Apply "mech.param=value" (one assignment). */
int epar_exp_compare_set(struct epar_compare_cfg *cfg, const char *assignment);
/* Comma-separated mechanism ids -> cfg->mech (order kept, duplicates refused). */
int epar_exp_compare_select(struct epar_compare_cfg *cfg, const char *list);

int epar_exp_compare_run(const struct epar_compare_cfg *cfg, struct epar_compare_result *res);
/* the writer (experiments/compare_write.c): every table, run.json, one .gp per figure into o's staging folder */
int epar_exp_compare_write(const struct epar_compare_cfg *cfg, const struct epar_compare_result *res, struct epar_out *o,
                       const char *protocol_path);
void epar_exp_compare_free(struct epar_compare_result *res);

/* The measurements behind the seed claims (compare_checks.c): *out = seed_checks.csv
 * (check,value,reference,se,detail). Timing rows (pi_speedup, linear_cost_exponent) are wall clock; pi_speedup is
 * read from speed (sparse_speed.csv; measured here when it lacks pi-attention with its default parameters). */
int epar_exp_compare_checks(const struct epar_compare_cfg *cfg, const struct epar_table *speed, struct epar_table **out);
/* (compare_speed.c) *out = sparse_speed.csv: every selected mask mechanism at every speed length, one head of speed_head_dim, one
 * thread: the dense kernel vs lib/sparse's structured kernel (fastest of speed_repeats, after a warm-up call),
 * the distinct allowed pairs and the pair-count bound L^2 / pairs (wall clock; not pinned). */
int epar_exp_compare_speed(const struct epar_compare_cfg *cfg, struct epar_table **out);

#endif
