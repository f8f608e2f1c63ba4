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

struct epar_optimal_result {
    struct epar_table *by_seed;     /* consistency_by_seed.csv */
    struct epar_table *consistency; /* consistency.csv */
    struct epar_table *forms;       /* forms_comparison.csv */
    struct epar_table *paired;      /* forms_paired_difference.csv */
    struct epar_table *summary;     /* verification_summary.csv (what the figures plot) */
    struct epar_table *radar;       /* radar.csv */
    char *report;                   /* verification_report.txt */
    int main_form;                  /* index into the forms (0 basic, 1 enhanced, 2 none) */
    long nan_items[EPAR_OPT_NFORMS];/* items whose ranking correlation was NaN (constant V or s) */
    long items;                     /* items per form */
    /* main form, per type: across-seed mean and sd of consistency and ranking (for the printed summary) */
    double cons[EPAR_IMP_COUNT], cons_sd[EPAR_IMP_COUNT], rank[EPAR_IMP_COUNT], rank_sd[EPAR_IMP_COUNT];
    const char *verdict;
};

/* Protocol keys of experiments.optimal-position beyond the common ones. */
extern const char *const epar_exp_optimal_keys[];
/* experiments.optimal-position of the protocol -> cfg: the importance types, unless cfg already has some (the
 * command line's --types or --importance norm win); unknown keys refused. */
int epar_exp_optimal_config(const struct epar_protocol *p, struct epar_optimal_cfg *cfg);

/* Parse a comma-separated list of importance types ("random,structured,...,norm") into cfg.
 * EPAR_EINVAL naming the problem (empty list or item, unknown or repeated type). */
int epar_exp_optimal_parse_types(const char *list, struct epar_optimal_cfg *cfg);
/* Name of form index f (0 basic, 1 enhanced, 2 none). */
const char *epar_exp_optimal_form_name(int f);

int epar_exp_optimal_run(const struct epar_optimal_cfg *cfg, struct epar_optimal_result *res);
/* CSVs, report, run.json and one .gp per figure into o's staging folder. */
int epar_exp_optimal_write(const struct epar_optimal_cfg *cfg, const struct epar_optimal_result *res,
                           struct epar_out *o, const char *protocol_path);
void epar_exp_optimal_free(struct epar_optimal_result *res);

#endif
