/* Experiment 1 - position effect (paper §4, docs/PROTOCOLS.md Experiment 1) -> output/position/ */
#ifndef EPAR_EXP_POSITION_H
#define EPAR_EXP_POSITION_H

#include "lib/csvout.h"
#include "lib/outdir.h"
#include "lib/protocol.h"

struct epar_position_cfg {
    struct epar_params prm;
    int distance_curve;     /* distances 0..distance_curve-1 in the distance figure (reference: 20) */
};

/* Theorem 1 checked numerically for one effect at length L: one row of properties.csv per check. */
enum epar_pos_prop {
    EPAR_POS_CONTINUITY,    /* continuity_max_jump: largest |P(d+h)-P(d)| vs the Lipschitz bound */
    EPAR_POS_DERIVATIVE,    /* derivative_max_abs_error: analytic dP/dd vs gsl_deriv_central */
    EPAR_POS_MONOTONE,      /* monotone_max_increment: max over d of P(d+1)-P(d) */
    EPAR_POS_LOWER_BOUND,   /* lower_bound: P(L-1) vs the infimum */
    EPAR_POS_BOUND_GAP,     /* bound_gap_in_sequence: P(L-1) - infimum */
    EPAR_POS_FLOOR,         /* in_sequence_minimum: min over d of P(d) vs P(L-1) */
    EPAR_POS_RETENTION,     /* retention_at_max_distance: P(L-1)/P(0) (information) */
    EPAR_POS_NPROP
};
enum epar_pos_verdict { EPAR_POS_PASS, EPAR_POS_FAIL, EPAR_POS_NA, EPAR_POS_INFO };
struct epar_position_props {
    double measured[EPAR_POS_NPROP], reference[EPAR_POS_NPROP];
    enum epar_pos_verdict verdict[EPAR_POS_NPROP];
    int failed;             /* failed checks */
    enum epar_form form;
    int decays;             /* form is not none and beta > 0 */
    int floor_d;            /* the distance of the in-sequence minimum */
    int derivative_exact;   /* the numerical derivative's error estimate at the worst point was 0 */
};

/* The numbers of a run; the writer (experiments/analysis/position_write.c) makes every table and figure from them. The
 * matrices are of the figures' run (first seed, last run). */
struct epar_position_result {
    int L, B, S, R, n_dist;
    double *P;          /* (L,L) position effect (1 for form none) */
    double *A;          /* (B,L,L) attention of every item */
    double *C;          /* (L,L) Pearson correlation of attention rows over the items */
    double *avg;        /* (L,L) attention averaged over the items */
    double *I, *V;      /* (B,L) information importance, position scores V = A I */
    double *key_mean, *key_sd, *key_max, *key_min; /* (L) attention received per key position, item 0 */
    double *dist;       /* (n_dist,3) P(d) of the run's form, basic, enhanced, d = 0..n_dist-1 */
    int *pos;           /* (S*R,B) pos* of every item, job (seed, run) by job */
    double *vmax;       /* (S*R,B) V(pos*) */
    double pos_mean, pos_std, pos_min, pos_max; /* over every item; std with ddof 0 */
    double pos_seed_sd;                         /* sample sd across seeds of the per-seed mean pos* */
    double mean_weight;                         /* mean attention weight (1/L by construction) */
    struct epar_position_props props;
    int properties_failed;
};

/* experiments.position-effect of the protocol -> cfg (distance_curve, default 20); unknown keys refused. */
int epar_exp_position_config(const struct epar_protocol *p, struct epar_position_cfg *cfg);

/* cfg -> res: the numbers only, nothing written (res is freed on error). */
int epar_exp_position_run(const struct epar_position_cfg *cfg, struct epar_position_result *res);
/* the writer (experiments/analysis/position_write.c): CSVs, run.json and one .gp per figure into o's staging folder. */
int epar_exp_position_write(const struct epar_position_cfg *cfg, const struct epar_position_result *res,
                            struct epar_out *o, const char *protocol_path);
void epar_exp_position_free(struct epar_position_result *res);

/* Theorem 1 checked numerically for one effect at length L -> *out. */
void epar_exp_position_properties(const struct epar_posfx *fx, int L, struct epar_position_props *out);

#endif
