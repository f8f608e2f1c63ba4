/* Interventions on a trained model at evaluation (F8, F9 of docs/SOURCE_STATEMENTS.md), with lib/nn's head mask and
 * attention boost (struct epar_nn's head_mask and boost): the run's evaluation (epar_exp_train_evaluate, the same n
 * items spread over the evaluation set) with one head or a set of heads masked, and with the answer-relevant keys'
 * weights boosted in one layer. Used by `epar inspect --mask-heads / --boost` and by epar benchmark's
 * head_masking.csv and boost.csv. Prefix epar_interv_. */
#ifndef EPAR_EXP_INTERV_H
#define EPAR_EXP_INTERV_H

#include "experiments/train/train.h"

/* the intervention of one evaluation: head_mask (NL, NH) or NULL; boost factor (1 with boost_layer < 0: none) */
struct epar_interv {
    const unsigned char *head_mask;
    double boost;
    int boost_layer;                    /* < 0: no boost */
    int boost_renorm;                   /* 0: as written (004:716, rows no longer sum to 1), 1: renormalised */
};

/* r's evaluation on n items (<= 0: all) under intervention x (the model is left without any afterwards) */
int epar_interv_eval(struct epar_train_run *r, long n, const struct epar_interv *x, struct epar_train_eval *e);
/* every head masked alone: masked (NL NH, layer-major) */
int epar_interv_heads(struct epar_train_run *r, long n, struct epar_train_eval *masked);
/* "L.H,L.H,...": mask (NL, NH) set (zeroed first); EPAR_EINVAL naming the first bad entry */
int epar_interv_parse_heads(const char *s, int NL, int NH, unsigned char *mask);

#endif
