/* Appendix - parameter sensitivity (docs/PROTOCOLS.md Experiment 3) -> output/parameter/
 *
 * Sweeps alpha, beta and gamma one at a time (the others fixed at the run's values), and measures
 * every point on fresh weights and data for every seed (or on common draws). Each draw is measured
 * with three position effects on the same weights and data: the run's form, the other EPAR form and
 * `none`, so baselines and basic-vs-enhanced comparisons are paired. Adds alpha x beta and
 * beta x gamma grids and the retention analysis behind the paper's "x4.2 / x28.3 / 78% vs 2.8%". */
#ifndef EPAR_EXP_SENSITIVITY_H
#define EPAR_EXP_SENSITIVITY_H

#include <stdio.h>
#include "lib/csvout.h"
#include "lib/outdir.h"
#include "lib/protocol.h"

#define EPAR_SENS_MAX_CLAIMS 8

/* One retention number claimed by the paper (protocol key retention_claims). */
struct epar_sens_claim {
    char id[48];        /* mid_range_gain | max_distance_gain | enhanced_max_retention | basic_max_retention */
    char text[200];     /* the claim as written */
    double value;       /* claimed value (fractions for percentages) */
    double unit;        /* last printed digit: 0.1 for "4.2", 0.01 for "78%" */
};

struct epar_sensitivity_cfg {
    struct epar_params prm;     /* form of the sweeps, fixed alpha/beta/gamma, sizes, seeds, runs */
    int n_alpha, n_beta, n_gamma;
    double alpha_values[EPAR_MAX_LIST], beta_values[EPAR_MAX_LIST], gamma_values[EPAR_MAX_LIST];
    int locality_window;        /* attention_locality sums |i-j| <= w (reference: 1) */
    int common_draws;           /* 0 (reference): fresh weights and data per point; 1: the same for all */
    int has_paper;              /* the protocol has a preset "paper": its alpha, beta, gamma below */
    double paper_alpha, paper_beta, paper_gamma;
    int n_claims;
    struct epar_sens_claim claims[EPAR_SENS_MAX_CLAIMS];
};

/* ---- the result: numbers only (run measures, the writer formats) ---- */

/* Blocks of sweep points, in this order: the run's parameters, preset "paper" (if any), the three sweeps, the
 * alpha x beta and beta x gamma grids. */
enum epar_sens_block {
    EPAR_SENS_DEFAULTS, EPAR_SENS_PAPER, EPAR_SENS_ALPHA, EPAR_SENS_BETA, EPAR_SENS_GAMMA, EPAR_SENS_AB, EPAR_SENS_BG,
    EPAR_SENS_NBLK
};
extern const char *const epar_sens_block_name[EPAR_SENS_NBLK];  /* defaults, paper, alpha, ... beta_gamma */

/* The measured (stochastic) metrics of a draw; their names are the CSV columns. */
enum epar_sens_metric { EPAR_SENS_CONC, EPAR_SENS_LOC, EPAR_SENS_CMEAN, EPAR_SENS_CSTD, EPAR_SENS_COFF, EPAR_SENS_NMETRIC };
extern const char *const epar_sens_metric_name[EPAR_SENS_NMETRIC];

#define EPAR_SENS_NF 3 /* forms measured on every draw, indexed by enum epar_form: none, basic, enhanced */

struct epar_sens_point {
    int blk, k;             /* enum epar_sens_block, index in the block */
    int ia, ib, ig;         /* indices in the alpha/beta/gamma lists (-1: fixed value) */
    double alpha, beta, gamma;
};

struct epar_sensitivity_result {
    int L, S, R, P;                 /* length, seeds, runs per seed, points */
    struct epar_sens_point *pts;    /* P points, block by block */
    int first[EPAR_SENS_NBLK], count[EPAR_SENS_NBLK]; /* each block's first point and number of points */
    double *sm;     /* (P,S,NF,NMETRIC) per-seed mean over runs of each metric */
    double *sp;     /* (P,S,NF,L) per-seed distance profile: mean attention weight of a pair at distance d */
};


/* Read the sweeps, locality_window, draws, retention_claims of experiments.sensitivity (and the alpha,
 * beta, gamma of preset "paper") into cfg; protocol errors name the JSON path (EPAR_EPROTOCOL). */
int epar_exp_sensitivity_config(const struct epar_protocol *p, struct epar_sensitivity_cfg *cfg);
/* The range of a swept value, the one rule of the command line, the protocol and the check: alpha > 0, beta and
 * gamma >= 0. NULL when v is in range (NaN is not), else the rule as a message ("gamma must be >= 0"). */
enum epar_sens_param { EPAR_SENS_P_ALPHA, EPAR_SENS_P_BETA, EPAR_SENS_P_GAMMA };
const char *epar_exp_sensitivity_range(enum epar_sens_param which, double v);
/* Ranges: alpha values > 0, beta and gamma values >= 0, batch >= 2, L >= 4 (EPAR_EINVAL). */
int epar_exp_sensitivity_check(const struct epar_sensitivity_cfg *cfg);

/* cfg -> res: measures every draw (numbers only, no text; res is freed on error). */
int epar_exp_sensitivity_run(const struct epar_sensitivity_cfg *cfg, struct epar_sensitivity_result *res);
void epar_exp_sensitivity_free(struct epar_sensitivity_result *res);

/* ---- statistics of a result (mean over seeds, sample sd across seeds) ---- */

/* The value of CSV column `name` for point p measured with form f: the point's parameters and indices, seeds,
 * runs, the exact position_strength and decay_speed, a metric, its _sd, _baseline (form none), _delta and
 * _delta_sd (paired difference with form none), correlation_improvement_pct(_sd); NaN for other names. */
double epar_sens_value(const struct epar_sensitivity_result *r, int p, int f, const char *name);
/* per-seed ratio of profile values A_fn(dn) / A_fd(dd) */
void epar_sens_ratio_stats(const struct epar_sensitivity_result *r, int p, int fn, int dn, int fd, int dd,
                           double *mean, double *sd);
/* the profile value A_f(d) */
void epar_sens_prof_stats(const struct epar_sensitivity_result *r, int p, int f, int d, double *mean, double *sd);
/* pooled baseline of block b: per seed, the mean over its points of form none; then across seeds */
void epar_sens_block_baseline(const struct epar_sensitivity_result *r, int b, int m, double *mean, double *sd);
/* pre-softmax retention P(d)/P(0) of form f at the point's parameters (exact) */
double epar_sens_retention_pre(int f, const struct epar_sens_point *pt, double d, int L);

/* ---- the retention claims: candidate definitions ---- */

enum epar_sens_defkind {
    EPAR_SENS_PRE_RATIO, EPAR_SENS_POST_RATIO_BASIC, EPAR_SENS_POST_RATIO_NONE, EPAR_SENS_PRE_RET, EPAR_SENS_POST_RET
};
enum epar_sens_dist { EPAR_SENS_D_MID, EPAR_SENS_D_MAX, EPAR_SENS_D_AT_L };
struct epar_sens_definition { enum epar_sens_defkind kind; enum epar_sens_dist d; int form; };

/* the candidate definitions of claim `id` into out (at most 8); returns their number */
int epar_sens_claim_definitions(const char *id, struct epar_sens_definition *out);
void epar_sens_definition_name(const struct epar_sens_definition *df, int L, char *buf, size_t n);
/* measured value (+ sd across seeds for post-softmax) at point p and the beta a pre-softmax definition would need
 * to give `claimed` at the point's gamma (NaN when unreachable or post-softmax) */
void epar_sens_definition_measure(const struct epar_sensitivity_result *r, int p, const struct epar_sens_definition *df,
                                  double claimed, double *v, double *sd, double *beta_needed);
/* 1 when `measured` rounds to the claim as printed (the audit's rule for printed figures) */
int epar_sens_agrees(double measured, const struct epar_sens_claim *cl);

/* ---- the writer (experiments/analysis/sensitivity_write.c; its tables in sensitivity_tables.c, its report and the
 * summary in sensitivity_report.c) ---- */

/* CSVs, report, run.json and one .gp per figure into o's staging folder, all derived from res. */
int epar_exp_sensitivity_write(const struct epar_sensitivity_cfg *cfg, const struct epar_sensitivity_result *res,
                               struct epar_out *o, const char *protocol_path);
/* the short stdout summary of a run into f */
int epar_exp_sensitivity_summary(const struct epar_sensitivity_cfg *cfg, const struct epar_sensitivity_result *res,
                                 FILE *f);

#endif
