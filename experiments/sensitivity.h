/* Appendix - parameter sensitivity (docs/PROTOCOLS.md Experiment 3) -> output/parameter/
 *
 * Sweeps alpha, beta and gamma one at a time (the others fixed at the run's values), and measures
 * every point on fresh weights and data for every seed (or on common draws). Each draw is measured
 * with three position effects on the same weights and data: the run's form, the other EPAR form and
 * `none`, so baselines and basic-vs-enhanced comparisons are paired. Adds alpha x beta and
 * beta x gamma grids and the retention analysis behind the paper's "x4.2 / x28.3 / 78% vs 2.8%". */
#ifndef EPAR_EXP_SENSITIVITY_H
#define EPAR_EXP_SENSITIVITY_H

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

struct epar_sensitivity_result {
    struct epar_table *alpha, *beta, *gamma, *baseline, *basic_vs_enhanced, *retention, *claims, *curves,
        *grid_ab, *grid_bg;
    char *report;               /* parameter_sensitivity_report.txt */
    char *summary;              /* the short stdout summary */
};

/* Protocol keys of experiments.sensitivity beyond the common ones. */
extern const char *const epar_exp_sensitivity_keys[];

/* Read the sweeps, locality_window, draws, retention_claims of experiments.sensitivity (and the alpha,
 * beta, gamma of preset "paper") into cfg; protocol errors name the JSON path (EPAR_EPROTOCOL). */
int epar_exp_sensitivity_config(const struct epar_protocol *p, struct epar_sensitivity_cfg *cfg);
/* Ranges: alpha values > 0, beta and gamma values >= 0, batch >= 2, L >= 4 (EPAR_EINVAL). */
int epar_exp_sensitivity_check(const struct epar_sensitivity_cfg *cfg);

int epar_exp_sensitivity_run(const struct epar_sensitivity_cfg *cfg, struct epar_sensitivity_result *res);
/* CSVs, report, run.json and one .gp per figure into o's staging folder. */
int epar_exp_sensitivity_write(const struct epar_sensitivity_cfg *cfg, const struct epar_sensitivity_result *res,
                               struct epar_out *o, const char *protocol_path);
void epar_exp_sensitivity_free(struct epar_sensitivity_result *res);

#endif
