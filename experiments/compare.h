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
    int claims_length;                  /* length of the timing claims (sparse vs dense, linear scaling) */
};

struct epar_compare_result {
    struct epar_table *mechanisms, *alibi, *t5, *fixed, *masks, *ablation, *extrapolation, *checks, *consistency,
        *performer;                             /* performer vs exact softmax per seed */
    struct epar_table *heat[EPAR_MECH_COUNT];   /* head-averaged attention, first seed, item 0 */
};

extern const char *const epar_compare_keys[];

/* Fill cfg from the protocol section "compare" (after epar_protocol_params). */
int epar_compare_cfg_load(const struct epar_protocol *proto, struct epar_compare_cfg *cfg);
/* Apply "mech.param=value" (one assignment). */
int epar_compare_set(struct epar_compare_cfg *cfg, const char *assignment);
/* Comma-separated mechanism ids -> cfg->mech (order kept, duplicates refused). */
int epar_compare_select(struct epar_compare_cfg *cfg, const char *list);

int epar_compare_run(const struct epar_compare_cfg *cfg, struct epar_compare_result *res);
int epar_compare_write(const struct epar_compare_cfg *cfg, const struct epar_compare_result *res, struct epar_out *o,
                       const char *protocol_path);
void epar_compare_free(struct epar_compare_result *res);

/* Metrics of one head's attention A (L,L) -> out[] (see the column list in compare.c). */
void epar_compare_head_metrics(const double *A, int L, int causal, int w, double *out);
/* Binned mutual information (nats) between the distance |i-j| (8 equal-width bins) and the weight A_ij
 * (8 equal-count bins by rank) over the pairs of A (L,L) (j <= i when causal). work is (L*L) doubles and
 * idx (L*L) size_t. */
/* The measurements behind the seed claims (compare_checks.c): *out = seed_checks.csv
 * (check,value,reference,se,detail). Timing rows (pi_speedup, linear_cost_exponent) are wall clock. */
int epar_exp_compare_checks(const struct epar_compare_cfg *cfg, struct epar_table **out);
double epar_compare_distance_mi(const double *A, int L, int causal, double *work, size_t *idx);

#endif
