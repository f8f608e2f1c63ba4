/* One training run: config, setup/resume, the step loop, evaluation, checkpoint (its files: train_write.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "lib/blas.h"
#include "lib/ckpt.h"
#include "lib/err.h"
#include "lib/metrics.h"
#include "lib/plot.h"
#include "lib/rng.h"
#include "experiments/common.h"
#include "lib/version.h"
#include "experiments/train/train.h"
#include "experiments/train/train_int.h"

/* ------------------------------------------------------------------------------------------------ */
/* config                                                                                             */

/* the settings of a run, at the train level and in a task object (which overrides them for its task); in the
 * order run.json and the checkpoint write them */
#define TC struct epar_train_cfg
const struct epar_field epar_exp_train_run_fields[] = {
    {.key = "layers", .type = EPAR_FIELD_INT, .offset = offsetof(TC, layers), .lo = 1, .hi = 1024,
     .help = "Transformer blocks"},
    {.key = "dim", .type = EPAR_FIELD_INT, .offset = offsetof(TC, dim), .lo = 1, .hi = 65536, .help = "model width"},
    {.key = "heads", .type = EPAR_FIELD_INT, .offset = offsetof(TC, heads), .lo = 1, .hi = 65536,
     .help = "attention heads (must divide dim)"},
    {.key = "mlp", .type = EPAR_FIELD_INT, .offset = offsetof(TC, mlp), .lo = 1, .hi = 1 << 20,
     .help = "MLP hidden width"},
    {.key = "length", .type = EPAR_FIELD_INT, .offset = offsetof(TC, task.length), .lo = 2, .hi = 65536,
     .help = "sequence length"},
    {.key = "batch", .type = EPAR_FIELD_INT, .offset = offsetof(TC, batch), .lo = 1, .hi = 65536,
     .help = "sequences per step"},
    {.key = "steps", .type = EPAR_FIELD_INT, .offset = offsetof(TC, optim.steps), .lo = 1, .hi = 1 << 30,
     .help = "optimiser steps"},
    {.key = "lr", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TC, optim.lr), .flags = EPAR_FIELD_POSITIVE,
     .help = "peak learning rate (AdamW)"},
    {.key = "lr_min_ratio", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TC, optim.lr_min_ratio),
     .flags = EPAR_FIELD_NONNEG, .help = "final learning rate / peak (cosine decay)"},
    {.key = "warmup", .type = EPAR_FIELD_INT, .offset = offsetof(TC, optim.warmup), .lo = 0, .hi = 1 << 30,
     .help = "linear warm-up steps"},
    {.key = "weight_decay", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TC, optim.weight_decay),
     .flags = EPAR_FIELD_NONNEG, .help = "AdamW weight decay (embedding and weight matrices)"},
    {.key = "beta1", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TC, optim.beta1), .flags = EPAR_FIELD_NONNEG,
     .help = "AdamW beta1"},
    {.key = "beta2", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TC, optim.beta2), .flags = EPAR_FIELD_NONNEG,
     .help = "AdamW beta2"},
    {.key = "eps", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TC, optim.eps), .flags = EPAR_FIELD_POSITIVE,
     .help = "AdamW epsilon"},
    {.key = "clip", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TC, optim.clip), .flags = EPAR_FIELD_NONNEG,
     .help = "global gradient-norm clip (0: off)"},
    {.key = "init_sd", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TC, init_sd), .flags = EPAR_FIELD_NONNEG,
     .help = "sd of the initial weights"},
    {.key = "eval_every", .type = EPAR_FIELD_INT, .offset = offsetof(TC, eval_every), .lo = 1, .hi = 1 << 30,
     .help = "steps between evaluations"},
    {.key = "eval_batches", .type = EPAR_FIELD_INT, .offset = offsetof(TC, eval_batches), .lo = 1, .hi = 1 << 20,
     .help = "evaluation batches at those points"},
    {0}};

/* the position mechanism's settings (alpha, beta, gamma come from the preset: written, not read) */
static const struct epar_field pos_fields[] = {
    {.key = "alpha", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TC, pos.fx.alpha), .write_only = 1,
     .flags = EPAR_FIELD_POSITIVE, .help = "EPAR alpha (the preset's)"},
    {.key = "beta", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TC, pos.fx.beta), .write_only = 1,
     .flags = EPAR_FIELD_NONNEG, .help = "EPAR beta (the preset's)"},
    {.key = "gamma", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TC, pos.fx.gamma), .write_only = 1,
     .flags = EPAR_FIELD_NONNEG, .help = "EPAR gamma (the preset's)"},
    {.key = "learn_posfx", .type = EPAR_FIELD_BOOL, .offset = offsetof(TC, pos.learn_posfx),
     .help = "train alpha, beta, gamma per layer and head (kept > 0 as exp(theta))"},
    {.key = "posfx_length", .type = EPAR_FIELD_INT, .offset = offsetof(TC, pos.posfx_length), .lo = 0, .hi = 1 << 30,
     .help = "L in P(i,j,L): 0 = the sequence length (default), N = fixed"},
    {0}};

/* the task's options (in its object, and run.json's task_options): lm's or the synthetic tasks', as lib/tasks' table
 * has them (rows of struct epar_task_cfg), into rows (EPAR_TASK_MAX_OPTIONS + 1) */
static const struct epar_field *task_rows(int lm, struct epar_field *rows)
{
    epar_task_option_rows(EPAR_TASK_OPT_TRAIN, lm ? EPAR_TASK_BIT(EPAR_TASK_LM) : EPAR_TASK_SYNTHETIC, 0, rows,
                          EPAR_TASK_MAX_OPTIONS + 1);
    return rows;
}
#undef TC

/* the task and the mechanism, by name */
struct train_names {
    const char *task, *mechanism;
};
static const struct epar_field name_fields[] = {
    {.key = "task", .type = EPAR_FIELD_STRING, .offset = offsetof(struct train_names, task)},
    {.key = "mechanism", .type = EPAR_FIELD_STRING, .offset = offsetof(struct train_names, mechanism)},
    {0}};

static const char *const train_extra[] = {"task", "mechanism", "mechanism_params", "lm", "recall", "needle", "transduce",
                                          "classify", "select", "set", NULL};
static const char *const pos_read[] = {"learn_posfx", "posfx_length", NULL};

/* the settings training had before one parameter namespace (issue 34), now catalogue parameters: the old protocol
 * keys are refused naming the new one, old config records (checkpoints, cell.json) are read through
 * epar_exp_train_cfg_upgrade */
static const struct { const char *old; enum epar_mech_id id; const char *param; } renamed[] = {
    {"rope_base", EPAR_MECH_ROPE, "base"}, {"alibi_max_bias", EPAR_MECH_ALIBI, "max_bias"},
    {"t5_buckets", EPAR_MECH_T5, "num_buckets"}, {"t5_max_distance", EPAR_MECH_T5, "max_distance"},
    {"sinusoid_base", EPAR_MECH_SINUSOIDAL, "base"}};

const char *epar_exp_train_help(const char *key)
{
    const struct epar_field *const tables[] = {epar_exp_train_run_fields, pos_fields};
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (const struct epar_field *f = tables[t]; f->key; f++)
            if (!strcmp(f->key, key)) return f->help;
    return NULL;
}

/* keys of experiments.train (run, position and the names above) and of experiments.train.<task> */
static void train_keys(const char **keys, int max)
{
    const char *extra[32];
    int n = 0;
    for (const char *const *k = pos_read; *k; k++) extra[n++] = *k;
    for (const char *const *k = train_extra; *k; k++) extra[n++] = *k;
    extra[n] = NULL;
    epar_fields_keys(epar_exp_train_run_fields, extra, keys, max);
}

static void task_keys(const char **keys, int max)
{
    const char *extra[2 * EPAR_TASK_MAX_OPTIONS + 1];
    struct epar_field rows[EPAR_TASK_MAX_OPTIONS + 1];
    int n = epar_fields_keys(task_rows(1, rows), NULL, extra, EPAR_TASK_MAX_OPTIONS + 1);
    epar_fields_keys(task_rows(0, rows), NULL, extra + n, EPAR_TASK_MAX_OPTIONS + 1);
    epar_fields_keys(epar_exp_train_run_fields, extra, keys, max);
}

void epar_exp_train_defaults(struct epar_train_cfg *c)
{
    memset(c, 0, sizeof *c);
    epar_task_cfg_default(&c->task, EPAR_TASK_LM);
    c->mechanism = EPAR_MECH_EPAR_ENHANCED;
    epar_nnpos_settings_default(&c->pos);
    c->layers = 2; c->dim = 64; c->heads = 4; c->mlp = 256; c->batch = 8;
    c->optim = (struct epar_optim_config){.lr = 1e-3, .lr_min_ratio = 0.1, .warmup = 10, .steps = 100, .beta1 = 0.9,
                                          .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .clip = 1.0};
    c->init_sd = 0.02;
    c->eval_every = 50;
    c->eval_batches = 4;
    c->seed = 42;
    snprintf(c->preset, sizeof c->preset, "%s", "paper");
}

int epar_exp_train_config(struct epar_train_cfg *c, const struct epar_protocol *p,
                                 const struct epar_params *prm, int task)
{
    const char *jp = "$.experiments.train";
    json_t *sec = epar_protocol_section(p, "train");
    const char *keys[64], *tkeys[64];
    train_keys(keys, 64);
    task_keys(tkeys, 64);
    int st = EPAR_OK;
    for (size_t k = 0; k < sizeof renamed / sizeof renamed[0] && sec; k++)
        if (json_object_get(sec, renamed[k].old)) {
            const char *m = epar_nnpos_name(renamed[k].id);
            epar_err_set(EPAR_EPROTOCOL, "invalid protocol '%s': %s.%s: renamed to the catalogue parameter '%s.%s'",
                         p->path, jp, renamed[k].old, m, renamed[k].param);
            epar_err_hint("write \"mechanism_params\": {\"%s.%s\": ...} (or --set %s.%s=...)", m, renamed[k].param, m,
                          renamed[k].param);
            return EPAR_EPROTOCOL;
        }
    st = epar_protocol_check_keys(p, "train", keys);
    /* common keys that mean nothing here are refused rather than ignored */
    static const char *const unused[] = {"hidden", "runs", "form", NULL};
    for (int k = 0; !st && unused[k]; k++)
        if (sec && json_object_get(sec, unused[k])) {
            epar_err_set(EPAR_EPROTOCOL, "invalid protocol '%s': %s.%s: not used by train (%s)", p->path, jp, unused[k],
                         !strcmp(unused[k], "hidden") ? "the width is 'dim'" :
                         !strcmp(unused[k], "form") ? "the mechanism sets the form" : "one run per seed");
            st = EPAR_EPROTOCOL;
        }
    struct train_names names = {NULL, NULL};
    if (!st) st = epar_protocol_obj_fields(p, sec, jp, name_fields, &names);
    if (!st && names.task && epar_task_find(names.task, &c->task.id))
        st = epar_err_set(EPAR_EPROTOCOL, "invalid protocol '%s': %s.task: unknown task '%s'", p->path, jp, names.task);
    if (task >= 0) c->task.id = (enum epar_task_id)task;
    if (!st && names.mechanism && epar_nnpos_find(names.mechanism, &c->mechanism))
        st = epar_err_set(EPAR_EPROTOCOL, "invalid protocol '%s': %s.mechanism: unknown mechanism '%s'", p->path, jp,
                          names.mechanism);
    if (!st) st = epar_protocol_obj_fields(p, sec, jp, epar_exp_train_run_fields, c);
    if (!st) st = epar_protocol_obj_fields(p, sec, jp, pos_fields, c);
    if (!st && sec)
        st = epar_exp_sets(p, json_object_get(sec, "mechanism_params"), "$.experiments.train.mechanism_params",
                           epar_exp_train_set, c);
    /* the task's own object: its options and run keys that differ for it */
    char tjp[128];
    snprintf(tjp, sizeof tjp, "%s.%s", jp, epar_task_name(c->task.id));
    json_t *tobj = sec ? json_object_get(sec, epar_task_name(c->task.id)) : NULL;
    for (int k = 0; !st && k < EPAR_TASK_COUNT; k++) {
        char kjp[128];
        snprintf(kjp, sizeof kjp, "%s.%s", jp, epar_task_table[k].id);
        st = epar_protocol_obj_check_keys(p, sec ? json_object_get(sec, epar_task_table[k].id) : NULL, kjp, tkeys);
    }
    struct epar_field rows[EPAR_TASK_MAX_OPTIONS + 1];
    if (!st) st = epar_protocol_obj_fields(p, tobj, tjp, epar_exp_train_run_fields, c);
    if (!st) st = epar_protocol_obj_fields(p, tobj, tjp, task_rows(1, rows), &c->task);
    if (!st) st = epar_protocol_obj_fields(p, tobj, tjp, task_rows(0, rows), &c->task);
    if (st) return st;
    /* the preset: EPAR's alpha, beta, gamma (fixed unless learn_posfx) and the seed */
    c->pos.fx = (struct epar_posfx){EPAR_FORM_ENHANCED, prm->alpha, prm->beta, prm->gamma};
    c->seed = prm->seeds[0];
    c->task.seed = c->seed;
    snprintf(c->preset, sizeof c->preset, "%s", prm->preset);
    snprintf(c->protocol, sizeof c->protocol, "%s", p->path);
    return EPAR_OK;
}

int epar_exp_train_set(void *cfg, const char *assignment)
{
    struct epar_train_cfg *c = cfg;
    return epar_nnpos_set(&c->pos, assignment);
}

static struct epar_nn_config nn_config(const struct epar_train_cfg *c, int vocab)
{
    struct epar_nn_config n = {.V = vocab, .Tmax = c->task.length, .Bmax = c->batch, .C = c->dim, .NH = c->heads,
                               .NL = c->layers, .F = c->mlp, .pos = c->mechanism, .pos_settings = c->pos,
                               .init_sd = c->init_sd};
    n.pos_settings.init_sd = c->init_sd;    /* position tables and the sinusoid share the token embeddings' scale */
    n.pos_settings.seed = c->seed;          /* Performer's features: lib/mech's stream for this seed */
    return n;
}

int epar_exp_train_check(const struct epar_train_cfg *c)
{
    int st = epar_task_validate(&c->task);
    if (!st) st = epar_optim_config_validate(&c->optim);
    if (!st) {
        struct epar_nn_config n = nn_config(c, 2);
        st = epar_nn_config_validate(&n);
    }
    if (!st && c->eval_every < 1) st = epar_err_set(EPAR_EINVAL, "eval_every must be >= 1, got '%d'", c->eval_every);
    if (!st && c->eval_batches < 1) st = epar_err_set(EPAR_EINVAL, "eval_batches must be >= 1, got '%d'", c->eval_batches);
    if (!st && c->pos.learn_posfx && c->mechanism != EPAR_MECH_EPAR_BASIC && c->mechanism != EPAR_MECH_EPAR_ENHANCED) {
        epar_err_set(EPAR_EINVAL, "--learn-posfx applies to epar-basic and epar-enhanced, not '%s'",
                     epar_nnpos_name(c->mechanism));
        st = EPAR_EINVAL;
    }
    return st;
}

#define CR struct cfg_record
const struct epar_field epar_exp_train_cfg_head_fields[] = {
    {.key = "task", .type = EPAR_FIELD_STRING, .offset = offsetof(CR, task)},
    {.key = "mechanism", .type = EPAR_FIELD_STRING, .offset = offsetof(CR, mechanism)},
    {.key = "preset", .type = EPAR_FIELD_STRING, .offset = offsetof(CR, preset)},
    {.key = "seed", .type = EPAR_FIELD_LONG, .offset = offsetof(CR, seed), .lo = 0, .hi = 4294967295.0},
    {0}};

/* the rest of the section after the head and the run's settings: "position" and "task_options" (the task's kind's
 * options), into rows (3), whose task_options row reads opts (EPAR_TASK_MAX_OPTIONS + 1) */
const struct epar_field *epar_exp_train_cfg_tail(enum epar_task_id task, struct epar_field rows[3], struct epar_field *opts)
{
    rows[0] = (struct epar_field){.key = "position", .type = EPAR_FIELD_OBJ, .offset = offsetof(CR, c), .sub = pos_fields};
    rows[1] = (struct epar_field){.key = "task_options", .type = EPAR_FIELD_OBJ, .offset = offsetof(CR, c.task),
                                  .sub = task_rows(task == EPAR_TASK_LM, opts)};
    rows[2] = (struct epar_field){0};
    return rows;
}

/* "position"'s last row: "mechanism_params", the catalogue parameters that mechanism m's training reads (their rows
 * come from the catalogue: mp), or none (row[0] ends the table) */
void epar_exp_train_mech_params_row(enum epar_mech_id m, struct epar_field row[2],
                            struct epar_field mp[EPAR_MECH_MAX_PARAMS + 1])
{
    row[0] = row[1] = (struct epar_field){0};
    if (!epar_nnpos_row(m)->uses_params || !epar_mech_row(m)->params[0].name) return;
    epar_exp_mech_param_rows(m, mp);
    row[0] = (struct epar_field){.key = "mechanism_params", .type = EPAR_FIELD_OBJ, .sub = mp,
                                 .offset = offsetof(CR, c.pos.mp) + (size_t)m * sizeof(double[EPAR_MECH_MAX_PARAMS])};
}

void epar_exp_train_cfg_record(struct cfg_record *r, const struct epar_train_cfg *c)
{
    *r = (struct cfg_record){.c = *c, .task = epar_task_name(c->task.id), .mechanism = epar_nnpos_name(c->mechanism),
                             .preset = c->preset, .seed = (long)c->seed};
}

json_t *epar_exp_train_cfg_record_json(const struct epar_train_cfg *c)
{
    struct cfg_record r;
    struct epar_field row[2], mp[EPAR_MECH_MAX_PARAMS + 1], tail[3], opts[EPAR_TASK_MAX_OPTIONS + 1];
    epar_exp_train_cfg_record(&r, c);
    epar_exp_train_mech_params_row(c->mechanism, row, mp);
    json_t *j = epar_fields_json(epar_exp_train_cfg_head_fields, &r, NULL), *pos = NULL;
    if (j && epar_fields_json(epar_exp_train_run_fields, &r, j) && epar_fields_json(epar_exp_train_cfg_tail(c->task.id, tail, opts), &r, j) &&
        (pos = json_object_get(j, "position")) && epar_fields_json(row, &r, pos))
        return j;
    json_decref(j);
    return NULL;
}

json_t *epar_exp_train_cfg_json(const struct epar_train_cfg *c)
{
    struct epar_train_cfg rc = *c;
    epar_nnpos_resolve(&rc.pos, rc.task.length);   /* the trained length recorded, not "0" */
    return epar_exp_train_cfg_record_json(&rc);
}
#undef CR

/* 1 when cfg is an old record and mechanism id has catalogue parameters training reads: mp = them as that run used
 * them (before the upgrade); 0 otherwise */
static int old_params(const json_t *cfg, enum epar_mech_id id, double mp[EPAR_MECH_MAX_PARAMS])
{
    json_t *pos = json_object_get(cfg, "position"), *v;
    int old = 0;
    for (size_t k = 0; json_is_object(pos) && k < sizeof renamed / sizeof renamed[0]; k++)
        old |= json_object_get(pos, renamed[k].old) != NULL;
    if (!old || id < 0 || id >= EPAR_MECH_COUNT || !epar_nnpos_row(id)->uses_params || !epar_mech_row(id)->params[0].name)
        return 0;
    /* as training used them: the catalogue's defaults, the old keys of this mechanism, T5's table drawn at the run's
     * init_sd */
    epar_mech_defaults(id, mp);
    for (size_t k = 0; k < sizeof renamed / sizeof renamed[0]; k++)
        if (renamed[k].id == id && json_is_number(v = json_object_get(pos, renamed[k].old)))
            mp[epar_mech_param_index(id, renamed[k].param)] = json_number_value(v);
    int sd = epar_mech_param_index(id, "init_sd");
    if (id == EPAR_MECH_T5 && sd >= 0 && json_is_number(v = json_object_get(cfg, "init_sd"))) mp[sd] = json_number_value(v);
    return 1;
}

json_t *epar_exp_train_params_json(enum epar_mech_id id, const double mp[EPAR_MECH_MAX_PARAMS])
{
    struct epar_field rows[EPAR_MECH_MAX_PARAMS + 1];
    epar_exp_mech_param_rows(id, rows);
    return epar_fields_json(rows, mp, NULL);
}

void epar_exp_train_params_upgrade(json_t *obj, const char *mechanism, const json_t *cfg)
{
    enum epar_mech_id id;
    double mp[EPAR_MECH_MAX_PARAMS];
    json_t *j = mechanism && !json_object_get(obj, "mechanism_params") && !epar_nnpos_find(mechanism, &id) &&
                        old_params(cfg, id, mp)
                    ? epar_exp_train_params_json(id, mp)
                    : NULL;
    epar_err_clear();
    if (j) json_object_set_new(obj, "mechanism_params", j);
}

void epar_exp_train_cfg_upgrade(json_t *cfg)
{
    json_t *pos = json_object_get(cfg, "position");
    epar_exp_train_params_upgrade(pos, json_string_value(json_object_get(cfg, "mechanism")), cfg);
    for (size_t k = 0; json_is_object(pos) && k < sizeof renamed / sizeof renamed[0]; k++) json_object_del(pos, renamed[k].old);
}

/* a config section's text in today's form (epar_exp_train_cfg_upgrade), or NULL: already in it, or unparsable (the
 * caller reads the original and reports it) */
char *epar_exp_train_cfg_text_upgraded(const void *sec, size_t len, size_t *n)
{
    json_t *j = json_loadb(sec, len, 0, NULL);
    char *before = j ? json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT) : NULL, *after = NULL;
    if (before) {
        epar_exp_train_cfg_upgrade(j);
        after = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
        if (after && !strcmp(before, after)) { free(after); after = NULL; }
    }
    free(before);
    json_decref(j);
    if (after) *n = strlen(after);
    return after;
}

double epar_exp_train_bytes(const struct epar_train_cfg *c, int vocab)
{
    struct epar_nn_config n = nn_config(c, vocab);
    size_t np = 12 * (size_t)c->layers * c->dim * c->dim + (size_t)vocab * c->dim;
    return epar_nn_bytes(&n, omp_get_max_threads()) + 8.0 * (double)np;   /* + AdamW moments */
}

/* ------------------------------------------------------------------------------------------------ */
/* set up, resume                                                                                     */



int epar_exp_train_setup(struct epar_train_run *r, const struct epar_train_cfg *c)
{
    memset(r, 0, sizeof *r);
    r->cfg = *c;
    epar_nnpos_resolve(&r->cfg.pos, c->task.length);   /* train_length: this run's length unless set */
    c = &r->cfg;
    r->resumed_from = -1;
    int st = epar_exp_train_check(c);
    if (st) return st;
    if ((st = epar_task_open(&r->task, &c->task))) return st;
    double need = epar_exp_train_bytes(c, r->task.V);
    if (need > 64e9) {   /* beyond any machine this is meant for: refuse before trying */
        epar_err_set(EPAR_ENOMEM, "the model and its activations need %.3g GB", need / 1e9);
        epar_err_hint("reduce --length, --batch, --dim or --layers");
        return EPAR_ENOMEM;
    }
    struct epar_nn_config n = nn_config(c, r->task.V);
    if ((st = epar_nn_alloc(&r->model, &n))) return st;
    if ((st = epar_optim_alloc(&r->opt, &c->optim, r->model.n_params))) return st;
    size_t maxseg = (size_t)EPAR_NN_NTENSORS + 2 * (size_t)c->layers;
    if (!(r->seg = epar_err_alloc(maxseg, sizeof *r->seg, "the optimiser's segments"))) return EPAR_ENOMEM;
    r->nseg = epar_nn_segments(&r->model, r->seg, (int)maxseg);
    size_t BT = (size_t)c->batch * c->task.length;
    r->tok = epar_err_alloc(BT, sizeof *r->tok, "the batch");
    r->tgt = epar_err_alloc(BT, sizeof *r->tgt, "the batch");
    r->mask = epar_err_alloc(BT, sizeof *r->mask, "the batch");
    r->rows_cap = c->optim.steps / c->eval_every + 3;
    r->curve = epar_err_alloc((size_t)r->rows_cap * EPAR_TRAIN_CURVE_COLS, sizeof *r->curve, "the learning curve");
    if (!r->tok || !r->tgt || !r->mask || !r->curve) return EPAR_ENOMEM;
    gsl_rng *w = epar_rng_alloc(c->seed, 0, EPAR_RNG_WEIGHTS);
    r->data = epar_rng_alloc(c->seed, 0, EPAR_RNG_DATA);
    if (!w || !r->data) {
        epar_rng_free(w);
        return EPAR_ENOMEM;
    }
    st = epar_nn_init(&r->model, w);
    epar_rng_free(w);
    r->last_lr = epar_optim_lr(&c->optim, 0);
    return st;
}

/* ------------------------------------------------------------------------------------------------ */
/* training and evaluation                                                                            */

static double now(void) { return omp_get_wtime(); }

/* the evaluation items: all of them, or max_sequences spread evenly over them; item of the k-th of n */
static long eval_n(const struct epar_train_run *r, long max_sequences)
{
    long count = epar_task_eval_count(&r->task);
    return max_sequences > 0 && max_sequences < count ? max_sequences : count;
}

static long eval_item_at(const struct epar_train_run *r, long k, long n)
{
    long count = epar_task_eval_count(&r->task);
    return n == count ? k : (long)((double)k * count / n);
}

/* the attention entropy of the window's second half after a forward of nb sequences of length T (att_entropy) */
static void att_entropy(struct epar_train_run *r, int nb, int T)
{
    int NL = r->model.cfg.NL, NH = r->model.cfg.NH;
    size_t nA = (size_t)nb * NH * T * T;
    for (int l = 0; l < NL; l++)
        for (int bh = 0; bh < nb * NH; bh++)
            for (int i = T / 2; i < T; i++) {
                int n;
                double h = epar_metric_entropy_f(r->model.a.att + l * nA + ((size_t)bh * T + i) * T, i + 1, &n);
                r->att_entropy[0] += h;
                r->att_entropy[1] += n > 1 ? h / log((double)n) : 0.0;
                r->att_entropy[2] += 1;
            }
}

/* the evaluation on n items: the evaluation set's (eval_item_at), or (pool) the training pool's k = 0 .. n-1 without the
 * per-position, attention and per-item records */
static int evaluate_items(struct epar_train_run *r, long n, int pool, struct epar_train_eval *e)
{
    int B = r->cfg.batch, T = r->cfg.task.length;
    long *counts = calloc((size_t)r->task.V, sizeof *counts);   /* scored targets */
    if (!counts) return epar_err_set(EPAR_ENOMEM, "out of memory counting the evaluation targets");
    double loss = 0.0, mask_sum = 0.0;
    long correct = 0, scored = 0;
    for (long k0 = 0; k0 < n; k0 += B) {
        int nb = (int)(n - k0 < B ? n - k0 : B);
        for (int b = 0; b < nb; b++)
            if (pool) epar_task_pool_item(&r->task, k0 + b, r->tok + (size_t)b * T, r->tgt + (size_t)b * T, r->mask + (size_t)b * T);
            else epar_task_eval_item(&r->task, eval_item_at(r, k0 + b, n), r->tok + (size_t)b * T, r->tgt + (size_t)b * T,
                                     r->mask + (size_t)b * T);
        for (int i = 0; i < nb * T; i++) {
            mask_sum += r->mask[i];
            if (r->mask[i] > 0) counts[r->tgt[i]]++;
        }
        int st = EPAR_OK;
        if (r->boost_keys) {   /* each sequence's answer-relevant keys (scratch: the target counts are V longs) */
            int *scratch = malloc((size_t)r->task.V * sizeof *scratch);
            if (!scratch) st = epar_err_set(EPAR_ENOMEM, "out of memory finding the relevant keys");
            for (int b = 0; !st && b < nb; b++)
                epar_task_relevant(&r->task, r->tok + (size_t)b * T, T, r->boost_keys + (size_t)b * T * T, scratch);
            free(scratch);
            r->model.boost.keys = r->boost_keys;
        }
        if (!st) st = epar_nn_forward(&r->model, r->tok, r->tgt, r->mask, nb, T);
        if (st) {
            free(counts);
            return st;
        }
        for (int i = 0; i < nb * T; i++) loss += r->model.a.losses[i];
        if (r->pos_loss && !pool)   /* per position t: the scored tokens' loss and weight (the same mask as the mean's) */
            for (int i = 0; i < nb * T; i++) {
                r->pos_loss[i % T] += r->model.a.losses[i];
                r->pos_weight[i % T] += r->mask[i];
            }
        if (r->att_entropy && !pool) att_entropy(r, nb, T);
        long c, s;
        epar_nn_accuracy(&r->model, &c, &s);
        for (int b = 0; r->eval_item && !pool && b < nb; b++) {   /* per sequence: its correct and scored positions */
            long ci = 0, si = 0;
            for (int q = 0; q < T; q++)
                if (r->model.mask[(size_t)b * T + q] > 0) {
                    si++;
                    ci += r->model.a.correct[(size_t)b * T + q];
                }
            r->eval_item(r->eval_ctx, eval_item_at(r, k0 + b, n), ci, si);
        }
        correct += c;
        scored += s;
    }
    e->loss = mask_sum > 0 ? loss / mask_sum : NAN;   /* divided by the mask's sum, as training's loss is */
    e->metric = epar_task_metric(&r->task, e->loss, correct, scored);
    e->correct = correct;
    e->scored = scored;
    e->sequences = n;
    epar_task_chance(&r->task, counts, r->task.V, &e->chance, &e->chance_se);
    free(counts);
    return EPAR_OK;
}

int epar_exp_train_evaluate(struct epar_train_run *r, long max_sequences, struct epar_train_eval *e)
{
    return evaluate_items(r, eval_n(r, max_sequences), 0, e);
}

int epar_exp_train_evaluate_pool(struct epar_train_run *r, struct epar_train_eval *e)
{
    long n = epar_task_pool_count(&r->task);
    if (n <= 0) return epar_err_set(EPAR_EINVAL, "the run has no training pool (train_sequences 0)");
    return evaluate_items(r, n, 1, e);
}

/* one optimiser step on a fresh batch */
static int train_step(struct epar_train_run *r)
{
    int B = r->cfg.batch, T = r->cfg.task.length;
    double t0 = now(), c0 = epar_nn_thread_cpu(), p0 = r->model.pos_cpu_seconds;
    epar_task_train_batch(&r->task, r->data, B, r->tok, r->tgt, r->mask);
    int st = epar_nn_forward(&r->model, r->tok, r->tgt, r->mask, B, T);
    if (st) return st;
    epar_nn_zero_grad(&r->model);
    epar_nn_backward(&r->model);
    epar_nn_frozen_grad_zero(&r->model);
    r->last_lr = epar_optim_lr(&r->cfg.optim, (int)r->step);
    r->last_norm = epar_optim_step(&r->opt, r->model.params_mem, r->model.grads_mem, r->seg, r->nseg, r->last_lr);
    r->last_loss = r->model.loss;
    if (!isfinite(r->last_loss) || !isfinite(r->last_norm)) {
        epar_err_set(EPAR_ECHECK, "training diverged at step %ld (loss %g, gradient norm %g)", r->step + 1, r->last_loss,
                     r->last_norm);
        epar_err_hint("lower --lr or raise --warmup");
        return EPAR_ECHECK;
    }
    r->loss_sum += r->model.loss;
    r->loss_count++;
    r->step++;
    r->tokens += (double)B * T;
    r->step_seconds += now() - t0;
    r->step_cpu_seconds += epar_nn_thread_cpu() - c0;
    r->step_pos_cpu_seconds += r->model.pos_cpu_seconds - p0;
    return EPAR_OK;
}

/* evaluate on the periodic subset and append a curve row */
static int curve_row(struct epar_train_run *r)
{
    struct epar_train_eval e;
    int st = epar_exp_train_evaluate(r, (long)r->cfg.eval_batches * r->cfg.batch, &e);
    if (st) return st;
    if (r->rows >= r->rows_cap) return epar_err_set(EPAR_EINVAL, "learning curve full (%d rows)", r->rows);
    r->seconds = r->seconds0 + (now() - r->t0);
    double row[EPAR_TRAIN_CURVE_COLS] = {(double)r->step, r->tokens,
                                         r->loss_count ? r->loss_sum / r->loss_count : NAN, e.loss, e.metric,
                                         r->step ? r->last_lr : NAN, r->step ? r->last_norm : NAN, r->seconds};
    memcpy(r->curve + (size_t)r->rows * EPAR_TRAIN_CURVE_COLS, row, sizeof row);
    r->rows++;
    r->loss_sum = 0.0;
    r->loss_count = 0;
    return EPAR_OK;
}

int epar_exp_train_loop(struct epar_train_run *r)
{
    int st = EPAR_OK;
    long steps = r->cfg.optim.steps;
    r->t0 = now();
    r->seconds0 = r->seconds;
    if (r->step == 0 && r->rows == 0 && (st = curve_row(r))) return st;   /* the untrained model */
    while (r->step < steps && (r->until <= 0 || r->step < r->until)) {
        if (r->stop && *r->stop) return EPAR_EINTR;
        if ((st = train_step(r))) return st;
        int evaluated = r->step % r->cfg.eval_every == 0 || r->step == steps;
        if (evaluated && (st = curve_row(r))) return st;
        r->seconds = r->seconds0 + (now() - r->t0);
        if (r->progress) r->progress(r->progress_ctx, r, evaluated);
    }
    return EPAR_OK;
}

int epar_exp_train_param_count(const struct epar_train_cfg *c, int vocab, size_t *n)
{
    struct epar_nn_config nc = nn_config(c, vocab);
    nc.Bmax = 1;
    struct epar_nn m;
    memset(&m, 0, sizeof m);
    int st = epar_nn_alloc(&m, &nc);
    if (!st) *n = m.n_params;
    epar_nn_free(&m);
    return st;
}

int epar_exp_train_derive(struct epar_train_run *x, const struct epar_train_run *r, const struct epar_train_cfg *c)
{
    int st = epar_exp_train_setup(x, c);
    /* learned-ape-rand / -hier with more rows than the trained table (a fine-tuning arm): every other tensor copied,
     * the table grown by lib/nnpos (the rows past the trained ones initialised as the trained model reads them) */
    int grow = !st && x->model.n_params != r->model.n_params && x->model.cfg.pos == r->model.cfg.pos &&
               (c->mechanism == EPAR_MECH_APE_RAND || c->mechanism == EPAR_MECH_APE_HIER) &&
               x->model.sizes[EPAR_NN_POS] > r->model.sizes[EPAR_NN_POS];
    for (int k = 0; grow && k < EPAR_NN_NTENSORS; k++) grow &= k == EPAR_NN_POS || x->model.sizes[k] == r->model.sizes[k];
    if (!st && x->model.n_params != r->model.n_params && !grow)
        st = epar_err_set(EPAR_EINVAL, "%s at length %d has %zu parameters, not the trained model's %zu",
                          epar_nnpos_name(c->mechanism), c->task.length, x->model.n_params, r->model.n_params);
    if (!st && grow) {
        for (int k = 0; k < EPAR_NN_NTENSORS; k++)
            if (k != EPAR_NN_POS)
                memcpy(x->model.params_mem + x->model.offsets[k], r->model.params_mem + r->model.offsets[k],
                       x->model.sizes[k] * sizeof(float));
        st = epar_nnpos_ape_grow(&x->model.pos, r->model.params_mem + r->model.offsets[EPAR_NN_POS],
                                 (int)(r->model.sizes[EPAR_NN_POS] / (size_t)r->model.cfg.C));
    } else if (!st) {
        memcpy(x->model.params_mem, r->model.params_mem, r->model.n_params * sizeof(float));
        x->model.pos.T = 0;   /* tables rebuilt from the copied parameters */
    }
    return st;
}

int epar_exp_train_as(const struct epar_train_cfg *c, enum epar_mech_id as, int logn, int length,
                      struct epar_train_cfg *out)
{
    *out = *c;
    epar_nnpos_resolve(&out->pos, c->task.length);
    out->mechanism = as;
    /* a reading of another mechanism's weights (ntk-rope or interpolation on rope's, ...) rotates with that
     * mechanism's base, so that up to the trained length it is the trained mechanism */
    int b = epar_mech_param_index(as, "base"), rb = epar_mech_param_index(c->mechanism, "base");
    if (as != c->mechanism && b >= 0 && rb >= 0) out->pos.mp[as][b] = c->pos.mp[c->mechanism][rb];
    out->pos.logn_length = !logn ? 0 : c->pos.logn_length > 0 ? c->pos.logn_length : c->task.length;
    if (length > 0) {
        long tokens = (long)c->batch * c->task.length;
        out->task.length = length;
        out->batch = tokens / length >= 1 ? (int)(tokens / length) : 1;
    }
    if (epar_nnpos_fixed_length(as, &out->pos) && out->task.length != c->task.length) return 0;
    return 1;
}

int epar_exp_train_evaluate_at(struct epar_train_run *r, int length, long max_sequences, struct epar_train_eval *e,
                           int *defined)
{
    *defined = 1;
    if (length == r->cfg.task.length) return epar_exp_train_evaluate(r, max_sequences, e);
    struct epar_train_cfg c;
    if (!epar_exp_train_as(&r->cfg, r->cfg.mechanism, r->cfg.pos.logn_length > 0, length, &c)) {
        *defined = 0;   /* its table has exactly the trained length */
        *e = (struct epar_train_eval){NAN, NAN, 0, 0, 0, NAN, NAN};
        return EPAR_OK;
    }
    return epar_exp_train_evaluate_as(r, &c, max_sequences, e);
}

int epar_exp_train_evaluate_as(struct epar_train_run *r, const struct epar_train_cfg *c, long max_sequences,
                               struct epar_train_eval *e)
{
    struct epar_train_run x;
    int st = epar_exp_train_derive(&x, r, c);
    x.pos_loss = r->pos_loss;
    x.pos_weight = r->pos_weight;
    x.att_entropy = r->att_entropy;
    if (!st) st = epar_exp_train_evaluate(&x, max_sequences, e);
    epar_exp_train_free(&x);
    return st;
}

int epar_exp_train_final_eval(struct epar_train_run *r)
{
    int st = epar_exp_train_evaluate(r, 0, &r->final);
    if (!st) r->have_final = 1;
    r->seconds = r->seconds0 + (now() - r->t0);
    return st;
}

void epar_exp_train_free(struct epar_train_run *r)
{
    epar_task_close(&r->task);
    epar_nn_free(&r->model);
    epar_optim_free(&r->opt);
    epar_rng_free(r->data);
    free(r->tok); free(r->tgt); free(r->mask); free(r->curve);
    free(r->seg);
    r->seg = NULL;
    r->nseg = 0;
    r->data = NULL;
    r->tok = r->tgt = NULL;
    r->mask = NULL;
    r->curve = NULL;
}
