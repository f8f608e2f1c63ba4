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

/* when-to-use: the input conditions, and the forms on identical weights and data */
enum { EPAR_ADP_CLEAN, EPAR_ADP_SHUFFLED, EPAR_ADP_NOISY, EPAR_ADP_NCOND };
extern const char *const epar_adaptive_cond_name[EPAR_ADP_NCOND];     /* clean, shuffled, noisy */
extern const enum epar_form epar_adaptive_when_form[3];                /* none, basic, enhanced */
/* the main experiment's metrics, in the order of adaptive_metrics.csv's columns (then one count per content type) */
enum {
    EPAR_ADP_ENTROPY, EPAR_ADP_ENTROPY_NONE, EPAR_ADP_TASK_MEAN, EPAR_ADP_TASK_STD, EPAR_ADP_TASK_MIN, EPAR_ADP_TASK_MAX,
    EPAR_ADP_CONTENT_MEAN, EPAR_ADP_CONTENT_STD, EPAR_ADP_CONTENT_MIN, EPAR_ADP_CONTENT_MAX, EPAR_ADP_FUSION,
    EPAR_ADP_NMETRIC
};
/* a grid cell's and a when-to-use row's statistics: mean and sample sd across seeds */
enum { EPAR_ADP_GRID_ENTROPY, EPAR_ADP_GRID_TASK, EPAR_ADP_GRID_CONTENT, EPAR_ADP_GRID_FUSION, EPAR_ADP_GRID_DELTA,
       EPAR_ADP_GRID_N };
enum { EPAR_ADP_WHEN_ENTROPY, EPAR_ADP_WHEN_DISTANCE, EPAR_ADP_WHEN_LOCAL, EPAR_ADP_WHEN_CONSISTENCY, EPAR_ADP_WHEN_N };

/* The numbers of a run; the writer (experiments/analysis/adaptive_write.c) makes every table and figure from them. Main
 * experiment: J = seeds x runs jobs, job j = (seed j / runs, run j % runs). */
struct epar_adaptive_result {
    int L, D, B, S, R, C, T, J;     /* the main experiment's sizes, content types, tasks, jobs */
    double *ent, *ent_none;         /* (J,B,L) reference entropy per query row, with P and without */
    double *tw;                     /* (J,B,D) task weights */
    double *content;                /* (J,B,L) content importance */
    int *types;                     /* (J,B,L) argmax content type */
    int *ids, *cls;                 /* (J,B) given task id, the task classifier's argmax */
    int nv;                         /* values of a metrics row: EPAR_ADP_NMETRIC, then C content-type counts */
    double *rowv;                   /* (J+S+2, nv) metrics per run, per seed (mean over runs, min of mins, max of
                                     * maxes, counts summed), across-seed mean, across-seed sample sd */
    long *given, *pred, *ct;        /* (T) given task ids, (T) classifier argmaxes, (C) content types: counts */
    double *A0;                     /* (L,L) attention of the figures' item (first seed, last run, item 0) */
    double *key_stats;              /* (4,L) its attention received per key: mean, sd, max, min */
    /* grid: cell k = (alpha k / n_grid_beta, beta k % n_grid_beta) */
    int grid_seeds, grid_dropout;   /* seeds; Dropout was active */
    double *grid_mean, *grid_sd;    /* (cells, EPAR_ADP_GRID_N) across seeds of the per-seed mean over runs */
    /* when-to-use: row (condition c, form f, length k) = (c * 3 + f) * n_when + k */
    double *when_mean, *when_sd;    /* (rows, EPAR_ADP_WHEN_N) across seeds */
    double *when_dmean, *when_dsd;  /* (rows, EPAR_ADP_WHEN_N) paired difference with form none, across seeds */
    /* printed summary: across seeds (mean, sample sd of the per-seed means) */
    double entropy_mean, entropy_sd, entropy_none_mean, entropy_none_sd, task_mean, task_sd, content_mean,
        content_sd, fusion_mean;
};


/* Defaults of the reference (tasks 10, embedding 64, 5 content types, dropout 0.1, the grid and the
 * when-to-use lengths) into cfg, then the protocol section's values. prm must already be resolved. */
int epar_exp_adaptive_config(const struct epar_protocol *p, struct epar_adaptive_cfg *cfg);
/* Check every value (EPAR_EINVAL naming it). */
int epar_exp_adaptive_check(const struct epar_adaptive_cfg *cfg);

/* cfg -> res: the numbers only, nothing written (res is freed on error). */
int epar_exp_adaptive_run(const struct epar_adaptive_cfg *cfg, struct epar_adaptive_result *res);
/* the writer (experiments/analysis/adaptive_write.c): every table, run.json and one .gp per figure into o's staging folder */
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
