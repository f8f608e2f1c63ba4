/* Shared pieces of the experiment drivers: the reference's generative model (docs/PROTOCOLS.md "Shared
 * generative model"), run.json, and small table/figure helpers. Prefix epar_exp_. */
#ifndef EPAR_EXP_COMMON_H
#define EPAR_EXP_COMMON_H

#include <jansson.h>
#include "lib/attn.h"
#include "lib/csvout.h"
#include "lib/mech.h"
#include "lib/outdir.h"
#include "lib/plot.h"
#include "lib/posfx.h"
#include "lib/protocol.h"

/* One random-initialised attention layer with its position effect, plus per-thread scratch. */
struct epar_exp_model {
    struct epar_params prm;
    struct epar_attn_cfg cfg;
    struct epar_layer layer;
    struct epar_posfx fx;
    double *P;                  /* (L,L) position effect (NULL factor when form is none) */
    struct epar_attn_mods mods;
    struct epar_attn_ws ws;
    double *Ah;                 /* (H,L,L) per-head attention of one item */
};

int epar_exp_model_alloc(struct epar_exp_model *m, const struct epar_params *prm);
/* Change the position effect (form/alpha/beta/gamma) keeping the weights: paired comparisons. */
void epar_exp_model_set_effect(struct epar_exp_model *m, const struct epar_posfx *fx);
/* Draw the weights of run `run` under seed `seed` (stream tag EPAR_RNG_WEIGHTS). */
int epar_exp_model_init(struct epar_exp_model *m, unsigned long seed, unsigned long run);
void epar_exp_model_free(struct epar_exp_model *m);
/* X (B,L,D) ~ N(0,1) from stream (seed, run, EPAR_RNG_DATA). */
int epar_exp_data(const struct epar_params *prm, unsigned long seed, unsigned long run, double *X);
/* A (B,L,L) <- head-averaged attention of every item of X (B,L,D). */
void epar_exp_attention(struct epar_exp_model *m, const double *X, int B, double *A);

/* run.json: experiment, epar version, protocol path and version, the protocol's hash, the command line's overrides
 * and the resolved parameters (prm NULL: a run that has none of these, such as train's), then the keys of `extra`
 * (an object whose keys are merged in; stolen, may be NULL; a key of the head keeps its place and takes extra's
 * value). Every experiment's run.json is written here, by lib/runrec's writer. */
int epar_exp_write_run_json(struct epar_out *o, const char *experiment, const char *protocol_path,
                            const struct epar_params *prm, json_t *extra);
/* Rows of mechanism id's catalogue parameters, in catalogue order: doubles at their index of a
 * double[EPAR_MECH_MAX_PARAMS] (lib/nnpos's mp[id], compare's p[id]); for {"param": value} objects. */
void epar_exp_mech_param_rows(enum epar_mech_id id, struct epar_field rows[EPAR_MECH_MAX_PARAMS + 1]);
/* Write table t as <name> in o (takes care of the path). */
/* Every "mech.param": number of the object set of protocol p (may be NULL: none) through fn(ctx, "mech.param=value");
 * EPAR_EPROTOCOL naming the protocol file and the JSON path (e.g. "$.experiments.compare.set.alibi.max_bias") for a
 * non-object, a non-number or a value fn refuses (its message follows, its hint is kept). */
int epar_exp_sets(const struct epar_protocol *p, const json_t *set, const char *path,
                  int (*fn)(void *ctx, const char *assignment), void *ctx);
int epar_exp_write_table(struct epar_out *o, const char *name, const struct epar_table *t);
/* Write n named tables in order; stops at the first error. */
struct epar_exp_file {
    const char *name;
    const struct epar_table *t;
};
int epar_exp_write_tables(struct epar_out *o, const struct epar_exp_file *files, size_t n);
/* Long-form table "rowname,colname,valname" of M (R,C). */
struct epar_table *epar_exp_matrix_table(const char *cols, const double *M, int R, int C);
/* A heatmap figure of a long-form CSV (row, column, value) with labelled axes and a colour bar. */
int epar_exp_heatmap(struct epar_out *o, const char *name, const char *title, const char *csv,
                     const char *xlabel, const char *ylabel, const char *cblabel);
/* Render all scripts unless no_render; then commit the folder (abort on any error). */
int epar_exp_finish(struct epar_out *o, int no_render, int jobs);

#endif
