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

/* Every table the experiment writes; computed once, written by epar_exp_position_write. */
struct epar_position_result {
    struct epar_table *p_matrix, *attention, *correlation, *average, *importance, *scores, *stats,
        *distance, *column_attention, *pos_star, *summary, *properties;
    double pos_mean, pos_std, pos_min, pos_max, mean_weight; /* for the printed summary */
    int properties_failed;
};

/* Protocol keys of experiments.position-effect beyond the common ones. */
extern const char *const epar_exp_position_keys[];
/* experiments.position-effect of the protocol -> cfg (distance_curve, default 20); unknown keys refused. */
int epar_exp_position_config(const struct epar_protocol *p, struct epar_position_cfg *cfg);

int epar_exp_position_run(const struct epar_position_cfg *cfg, struct epar_position_result *res);
/* CSVs, run.json and one .gp per figure into o's staging folder. */
int epar_exp_position_write(const struct epar_position_cfg *cfg, const struct epar_position_result *res,
                            struct epar_out *o, const char *protocol_path);
void epar_exp_position_free(struct epar_position_result *res);

/* Theorem 1 checked numerically for one effect at length L -> properties table
 * (property,measured,reference,pass,note); *failed counts failed checks. */
struct epar_table *epar_exp_position_properties(const struct epar_posfx *fx, int L, int *failed);

#endif
