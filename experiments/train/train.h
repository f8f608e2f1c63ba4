/* One training run (issue 15) -> output/train/<task>/<mechanism>/
 *
 * A small causal Transformer (lib/nn) with one position mechanism (lib/nnpos) trained by AdamW (lib/optim)
 * on a task (lib/tasks), evaluated on the task's fixed evaluation set every eval_every steps (a subset of
 * eval_batches batches, spread evenly) and on the whole set at the end. The run is split into steps that
 * the command calls in order: config (protocol + command line), setup (or resume from a checkpoint), the
 * step loop, the final evaluation, tables and files. Prefix epar_train_. */
#ifndef EPAR_EXP_TRAIN_H
#define EPAR_EXP_TRAIN_H

#include <signal.h>
#include <jansson.h>
#include <gsl/gsl_rng.h>
#include "lib/ckpt.h"
#include "lib/csvout.h"
#include "lib/nn.h"
#include "lib/optim.h"
#include "lib/outdir.h"
#include "lib/protocol.h"
#include "lib/tasks.h"

struct epar_train_cfg {
    struct epar_task_cfg task;          /* id, length, seed and the task's options */
    enum epar_mech_id mechanism;
    struct epar_nnpos_settings pos;     /* alpha, beta, gamma (from the preset), learn_posfx, tables */
    int layers, dim, heads, mlp, batch;
    struct epar_optim_config optim;     /* lr, schedule (steps, warmup), AdamW, clipping */
    double init_sd;
    int eval_every;                     /* steps between evaluations */
    int eval_batches;                   /* batches of the evaluation set used at those points */
    unsigned long seed;
    char preset[64];
    char protocol[4096];
};

/* the learning curve: one row per evaluation */
#define EPAR_TRAIN_CURVE_COLS 8
#define EPAR_TRAIN_CURVE_HEADER "step,tokens,train_loss,eval_loss,eval_metric,lr,grad_norm,seconds"

struct epar_train_eval {
    double loss;                        /* mean cross-entropy per scored token (nats) */
    double metric;                      /* bpc or accuracy */
    long correct, scored, sequences;
    double chance, chance_se;           /* the best constant answer's metric on the same items, and its se */
};

struct epar_train_run {
    struct epar_train_cfg cfg;
    struct epar_task task;
    struct epar_nn model;
    struct epar_optim opt;
    struct epar_optim_segment *seg;     /* the ranges AdamW updates (epar_nn_segments: frozen ones left out) */
    int nseg;
    gsl_rng *data;                      /* training batches: stream (seed, 0, EPAR_RNG_DATA) */
    int *tok, *tgt;                     /* (batch, length) */
    float *mask;                        /* (batch, length) */
    long step;                          /* optimiser steps done */
    double tokens;                      /* training tokens processed */
    double seconds;                     /* wall time so far (a resumed run adds to it) */
    double step_seconds;                /* of which inside training steps */
    double step_cpu_seconds;            /* the calling thread's CPU seconds inside training steps (not checkpointed:
                                         * the benchmark's cost cell times single-threaded steps with it) */
    double step_pos_cpu_seconds;        /* of which in the input position table both ways (lib/nn pos_cpu_seconds) */
    double loss_sum;                    /* train loss since the last curve row ... */
    long loss_count;                    /* ... and its count */
    double last_lr, last_norm, last_loss;
    double *curve;                      /* (rows, EPAR_TRAIN_CURVE_COLS) */
    int rows, rows_cap;
    long resumed_from;                  /* step of the checkpoint resumed from, -1 if none */
    struct epar_train_eval final;
    int have_final;
    /* set by the caller */
    volatile sig_atomic_t *stop;        /* checked between steps: non-zero stops the loop (EPAR_EINTR) */
    long until;                         /* > 0: stop after this step (a partial run, resumed later) */
    void (*progress)(void *ctx, const struct epar_train_run *r, int evaluated);
    void *progress_ctx;
    void (*eval_item)(void *ctx, long item, long correct, long scored);   /* per evaluated sequence, may be NULL */
    void *eval_ctx;
    double t0;                          /* session start (omp_get_wtime) */
    double seconds0;                    /* seconds at session start */
    /* a run of the benchmark: its task id ("needle-long"), kept in the checkpoint's "label" section ("": none) */
    char label[32];
    int weights_only;                   /* 1: checkpoints without the AdamW moments (a third of the size; the benchmark's
                                         * cells, read by epar inspect, never resumed) */
    char text_path[4096];               /* lm --text of a run loaded from a checkpoint (cfg.task.text_path points here) */
    /* set by the caller, may be NULL: per position t of the evaluated length, the sums of the scored tokens' loss
     * and of their mask weight over every evaluation (epar_exp_train_evaluate*) until reset: bpc by position */
    double *pos_loss, *pos_weight;
    /* set by the caller, may be NULL: over the rows of the window's second half (queries t in [T/2, T)) of every
     * layer, head and evaluated sequence, the sums of the row's attention entropy H (nats) and of H / ln n (n its
     * positive weights; rows with n <= 1 add 0), and the count of rows, added by every evaluation until reset */
    double *att_entropy;   /* [3] */
    /* set by the caller, may be NULL: (batch, length, length) bytes; then every evaluation sets each sequence's
     * answer-relevant keys (epar_task_relevant) as the model's boost keys (model.boost, lib/nn) before its forward:
     * the attention boost of F8 on the keys the answer needs (experiments/train/interv) */
    unsigned char *boost_keys;
};


void epar_exp_train_defaults(struct epar_train_cfg *c);
/* Read experiments.train and experiments.train.<task> into c; task < 0: the section's "task".
 * prm: the resolved preset (alpha, beta, gamma, seeds). Protocol errors are EPAR_EPROTOCOL naming the path. */
int epar_exp_train_config(struct epar_train_cfg *c, const struct epar_protocol *p,
                                 const struct epar_params *prm, int task);
int epar_exp_train_check(const struct epar_train_cfg *c);
/* the help line of the run or position setting `key` of experiments.train (its field row), NULL: none (the task
 * options' help is lib/tasks' table's) */
const char *epar_exp_train_help(const char *key);
/* "mech.param=value" (--set, mechanism_params): a catalogue parameter of a trainable mechanism (lib/nnpos) */
int epar_exp_train_set(void *cfg, const char *assignment);
/* The hyperparameters as JSON (run.json; the checkpoint compares it on resume). */
json_t *epar_exp_train_cfg_json(const struct epar_train_cfg *c);
/* A record of that JSON written before one parameter namespace (issue 34: "position" with rope_base, alibi_max_bias,
 * t5_buckets, t5_max_distance) turned into today's, in place: those keys dropped, the mechanism's catalogue
 * parameters as its "mechanism_params" (T5's init_sd: the run's, which drew its table then). Others unchanged. */
void epar_exp_train_cfg_upgrade(json_t *cfg);
/* The same for one entry of such a record that names a mechanism of its own (the benchmark's extrapolation-study
 * series, "as"): obj gets that mechanism's "mechanism_params" from cfg's old keys, when cfg is an old record and obj
 * has none. */
void epar_exp_train_params_upgrade(json_t *obj, const char *mechanism, const json_t *cfg);
/* mechanism id's catalogue parameters mp as a record writes them ("mechanism_params") */
json_t *epar_exp_train_params_json(enum epar_mech_id id, const double mp[EPAR_MECH_MAX_PARAMS]);
/* Model and data sizes without allocating anything big: the model's bytes (refuse what cannot fit). */
double epar_exp_train_bytes(const struct epar_train_cfg *c, int vocab);

/* Open the task, allocate model and optimiser, draw the weights. */
int epar_exp_train_setup(struct epar_train_run *r, const struct epar_train_cfg *c);
/* Before setup: the checkpoint's options must equal this run's (EPAR_EINVAL naming the first difference). */
int epar_exp_train_resume_check(const struct epar_train_cfg *c, const struct epar_ckpt *ck, const char *path);
/* After setup: its data must match too; then params, optimiser, data stream, step and curve are restored. */
int epar_exp_train_resume(struct epar_train_run *r, const struct epar_ckpt *ck, const char *path);
/* Steps until cfg.optim.steps (or until, or *stop): EPAR_OK or EPAR_EINTR. Evaluates every eval_every steps. */
int epar_exp_train_loop(struct epar_train_run *r);
/* Evaluate on max_sequences of the evaluation set (evenly spread; <= 0: all of it); with the chance level of
 * the same items (epar_task_chance, from their scored targets). */
int epar_exp_train_evaluate(struct epar_train_run *r, long max_sequences, struct epar_train_eval *e);
/* The same on every sequence of the training pool (train_sequences > 0; EPAR_EINVAL without one): the trained model's
 * fit to what it saw, against which the evaluation's gap is its overfitting */
int epar_exp_train_evaluate_pool(struct epar_train_run *r, struct epar_train_eval *e);
/* The trained weights evaluated at another length: a model of Tmax = length gets a copy of the parameters and
 * the task is opened at that length (lm: consecutive held-out windows of that length); max_sequences as above,
 * batch scaled so a batch holds about as many tokens as a training batch. L in P(i, j, L) is the evaluation
 * length unless posfx_length fixes it. A learned absolute table is sized for the trained length: at any other
 * length e->metric is NaN and *defined 0. */
int epar_exp_train_evaluate_at(struct epar_train_run *r, int length, long max_sequences, struct epar_train_eval *e,
                           int *defined);
/* The configuration of the same trained weights read as mechanism `as` (the same parameters: rope's read as
 * ntk-rope or interpolation, none's as log-n), with log-n stacked when logn (at the trained length), at `length`
 * (<= 0: the trained one; the batch scaled to a training batch's tokens): train_length of the family is the trained
 * length unless set, ntk-rope's and interpolation's base rope's on rope's weights. Returns 0 when the mechanism is
 * undefined at that length (a learned table past its rows), else 1. */
int epar_exp_train_as(const struct epar_train_cfg *c, enum epar_mech_id as, int logn, int length,
                      struct epar_train_cfg *out);
/* Set up x for configuration c with r's trained parameters (EPAR_EINVAL when c's model has another parameter
 * count); its own optimiser (fresh moments) and data stream: continued training or an evaluation elsewhere. */
int epar_exp_train_derive(struct epar_train_run *x, const struct epar_train_run *r, const struct epar_train_cfg *c);
/* Evaluate r's weights under configuration c (epar_exp_train_as), with r's per-position accumulators. */
int epar_exp_train_evaluate_as(struct epar_train_run *r, const struct epar_train_cfg *c, long max_sequences,
                               struct epar_train_eval *e);
/* A run as a checkpoint holds it, for reading its weights (epar inspect): the configuration from its config and
 * data sections (a key that is missing: a checkpoint of an older epar, named in the message), the task opened
 * (lm: the text, cached under cache_dir), the parameters and the step loaded; the optimiser's moments are not
 * read, and the model is sized for one sequence (cfg.batch 1). Everything in the file is untrusted: any
 * inconsistency is EPAR_EIO naming the file (EPAR_ENOMEM when a consistent model needs more than 2 GB). */
int epar_exp_train_load(struct epar_train_run *r, const struct epar_ckpt *ck, const char *path, const char *cache_dir);
/* The parameter count of a configuration (a model of batch 1 is allocated and freed). */
int epar_exp_train_param_count(const struct epar_train_cfg *c, int vocab, size_t *n);
/* learning_curve.csv of the run (EPAR_TRAIN_CURVE_HEADER); NULL when out of memory */
struct epar_table *epar_exp_train_curve_table(const struct epar_train_run *r);
/* The whole evaluation set -> r->final. */
int epar_exp_train_final_eval(struct epar_train_run *r);
/* Write the checkpoint of the current state. */
int epar_exp_train_checkpoint(const struct epar_train_run *r, const char *path);
/* learning_curve.csv/.gp, eval.csv (after the final evaluation), posfx.csv (EPAR), run.json, checkpoint.bin;
 * status: "complete", "partial" (stopped by until) or "interrupted" */
int epar_exp_train_write(const struct epar_train_run *r, struct epar_out *o, const char *status);
/* FNV-1a 64 of the parameter bytes (run.json "params_fnv1a": equal weights, equal checksum) */
unsigned long long epar_exp_train_params_hash(const struct epar_train_run *r);
void epar_exp_train_free(struct epar_train_run *r);

#endif
