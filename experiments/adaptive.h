/* Experiment 4 - adaptive attention (paper §5.4, docs/PROTOCOLS.md Experiment 4) -> output/adaptive/
 *
 * Three parts, all untrained (PyTorch-default random init, lib/model):
 *   main        task- and content-aware attention at L=64, hidden 128, batch 4, 3 runs, every seed;
 *   grid        alpha x beta sensitivity at L=32, hidden 64, batch 2 (weights and data shared by the cells
 *               of one seed: the cells differ only in alpha and beta);
 *   when-to-use the plain EPAR layer (forms none/basic/enhanced on identical weights and data) for
 *               L = 32..2048 on sequential (locally correlated) inputs, repeated with shuffled token
 *               order and with added input noise. */
#ifndef EPAR_EXP_ADAPTIVE_H
#define EPAR_EXP_ADAPTIVE_H

#include "lib/csvout.h"
#include "lib/outdir.h"
#include "lib/posfx.h"
#include "lib/protocol.h"

struct epar_adaptive_cfg {
    struct epar_params prm;     /* main experiment: length, hidden, batch, runs, seeds, form, alpha, beta, gamma */
    int tasks, task_dim, content_types;
    double dropout;             /* content estimator's Dropout p; off in the main experiment */
    /* sensitivity grid */
    int grid_length, grid_hidden, grid_batch, grid_runs, dropout_in_grid;
    int n_grid_alpha, n_grid_beta;
    double grid_alpha[EPAR_MAX_LIST], grid_beta[EPAR_MAX_LIST];
    /* when-to-use sweep */
    int n_when;
    int when_lengths[EPAR_MAX_LIST];
    int when_hidden, when_batch, when_window;
    double when_noise_sd, when_content_corr;
};

struct epar_adaptive_result {
    struct epar_table *metrics, *task_types, *content_types, *entropy_by_row, *grid, *when, *attention,
        *position_attention, *task_weights, *content_importance;
    /* printed summary: across seeds (mean, sample sd of the per-seed means) */
    double entropy_mean, entropy_sd, entropy_none_mean, entropy_none_sd, task_mean, task_sd, content_mean,
        content_sd, fusion_mean;
};


/* Defaults of the reference (tasks 10, embedding 64, 5 content types, dropout 0.1, the grid and the
 * when-to-use lengths) into cfg, then the protocol section's values. prm must already be resolved. */
int epar_exp_adaptive_config(const struct epar_protocol *p, struct epar_adaptive_cfg *cfg);
/* Check every value (EPAR_EINVAL naming it). */
int epar_exp_adaptive_check(const struct epar_adaptive_cfg *cfg);

int epar_exp_adaptive_run(const struct epar_adaptive_cfg *cfg, struct epar_adaptive_result *res);
/* the writer (experiments/adaptive_write.c): every table, run.json and one .gp per figure into o's staging folder */
int epar_exp_adaptive_write(const struct epar_adaptive_cfg *cfg, const struct epar_adaptive_result *res,
                            struct epar_out *o, const char *protocol_path);
void epar_exp_adaptive_free(struct epar_adaptive_result *res);

/* Metrics of one attention matrix, averaged over its rows. */
struct epar_adaptive_rowstats {
    double entropy;     /* -sum_j A_ij ln A_ij (exact, no 1e-8) */
    double distance;    /* sum_j A_ij |i-j| */
    double local;       /* sum_{|i-j| <= window} A_ij */
    double consistency; /* docs/PROTOCOLS.md Exp 2: (score similarity + proximity)/2 of t = argmax V, a = argmax I */
};

/* A_ij = softmax_j(S_ij m(|i-j|) inv_temp) and its metrics in one pass per row; A is never stored.
 * S (L,L) scores (read only), I (L) importance, work (3L). */
void epar_exp_adaptive_row_metrics(const double *S, int L, const struct epar_posfx *fx, double inv_temp, int window,
                                   const double *I, double *work, struct epar_adaptive_rowstats *out);

#endif
