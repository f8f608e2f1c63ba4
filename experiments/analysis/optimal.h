/* Experiment 2 - optimal position (paper §4.3, docs/PROTOCOLS.md Experiment 2) -> output/optimal/
 *
 * For every protocol seed: one attention layer (weights drawn once per seed, as the reference draws one
 * model per invocation), and for every importance type and run fresh data X ~ N(0,1) (B,L,D) and a fresh
 * importance I (B,L). Every batch item is scored with the consistency family of lib/metrics
 * (epar_metric_optimal) under three position effects computed from the same weights, data and importance:
 * basic, enhanced (with the given gamma) and none. The protocol's form is the main result; the three
 * together are the paired forms comparison. Jobs are (seed, type, run); results do not depend on --jobs. */
#ifndef EPAR_EXP_OPTIMAL_H
#define EPAR_EXP_OPTIMAL_H

#include "lib/csvout.h"
#include "lib/importance.h"
#include "lib/outdir.h"
#include "lib/protocol.h"

enum { EPAR_OPT_NFORMS = 3 };   /* basic, enhanced, none (in this order) */
/* run-level metrics, in this order */
enum { EPAR_OPT_CONS = 0, EPAR_OPT_PROX, EPAR_OPT_SIM, EPAR_OPT_RANK, EPAR_OPT_SCORE, EPAR_OPT_NM };

struct epar_optimal_cfg {
    struct epar_params prm;
    int n_types;
    enum epar_imp_type types[EPAR_IMP_COUNT];
};

/* The numbers of a run; the writer (experiments/analysis/optimal_write.c) makes every table, the text report and the figures
 * from them. Forms f: 0 basic, 1 enhanced, 2 none; metrics k: EPAR_OPT_CONS ... EPAR_OPT_SCORE; types t in cfg order. */
struct epar_optimal_result {
    int S, T, R;
    int main_form;                  /* index into the forms (0 basic, 1 enhanced, 2 none) */
    double *smean, *sstd;           /* (S,T,NF,NM) per seed: mean and std (ddof 0) over the runs */
    double *seed_se;                /* (S,T) run-level standard error of the seed's mean consistency (main form) */
    /* across seeds: mean and sample sd of the per-seed means, run-level standard error (std over the runs per seed,
     * pooled: var averaged over the seeds, / (R-1); NaN with one run) */
    double am[EPAR_OPT_NFORMS][EPAR_IMP_COUNT][EPAR_OPT_NM], asd[EPAR_OPT_NFORMS][EPAR_IMP_COUNT][EPAR_OPT_NM],
        se[EPAR_OPT_NFORMS][EPAR_IMP_COUNT][EPAR_OPT_NM];
    double stdm[EPAR_IMP_COUNT][EPAR_OPT_NM];   /* main form: run-to-run std (ddof 0), mean over the seeds */
    double perf[EPAR_IMP_COUNT], perf_sd[EPAR_IMP_COUNT]; /* 0.6 c + 0.2 (r+1) per seed, across seeds */
    /* paired differences of the forms epar_exp_optimal_pairs[p], per seed then across seeds: consistency mean, sd,
     * ranking mean, sd; and their run-level standard errors (consistency, ranking) */
    double pd[3][EPAR_IMP_COUNT][4], pd_se[3][EPAR_IMP_COUNT][2];
    double seed_cons[EPAR_MAX_SEEDS], seed_rank[EPAR_MAX_SEEDS]; /* main form, per seed: averages over the types */
    double avg_cons, avg_rank;      /* main form: averages over the types of the across-seed means */
    double maxdev;                  /* largest |L mean_j A_ij - 1| over every item and form */
    long nan_items[EPAR_OPT_NFORMS];/* items whose ranking correlation was NaN (constant V or s) */
    long items;                     /* items per form */
    /* main form, per type: across-seed mean and sd of consistency and ranking (for the printed summary) */
    double cons[EPAR_IMP_COUNT], cons_sd[EPAR_IMP_COUNT], rank[EPAR_IMP_COUNT], rank_sd[EPAR_IMP_COUNT];
    const char *verdict;            /* the reference's rule on avg_cons, avg_rank */
};

/* the three paired comparisons (minuend, subtrahend form): enhanced-basic, enhanced-none, basic-none */
extern const int epar_exp_optimal_pairs[3][2];
/* the reference's verdict rule: Excellent, Good or Needs Improvement */
const char *epar_exp_optimal_verdict(double cons, double rank);

/* experiments.optimal-position of the protocol -> cfg: the importance types, unless cfg already has some (the
 * command line's --types or --importance norm win); unknown keys refused. */
int epar_exp_optimal_config(const struct epar_protocol *p, struct epar_optimal_cfg *cfg);

/* Parse a comma-separated list of importance types ("random,structured,...,norm") into cfg.
 * EPAR_EINVAL naming the problem (empty list or item, unknown or repeated type). */
int epar_exp_optimal_parse_types(const char *list, struct epar_optimal_cfg *cfg);
/* Name of form index f (0 basic, 1 enhanced, 2 none). */
const char *epar_exp_optimal_form_name(int f);

/* cfg -> res: the numbers only, nothing written (res is freed on error). */
int epar_exp_optimal_run(const struct epar_optimal_cfg *cfg, struct epar_optimal_result *res);
/* the writer (experiments/analysis/optimal_write.c): CSVs, report, run.json and one .gp per figure into o's staging folder. */
int epar_exp_optimal_write(const struct epar_optimal_cfg *cfg, const struct epar_optimal_result *res,
                           struct epar_out *o, const char *protocol_path);
void epar_exp_optimal_free(struct epar_optimal_result *res);

#endif
