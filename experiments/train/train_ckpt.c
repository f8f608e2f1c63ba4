/* train: the checkpoint of a run (issue 9, lib/ckpt): written every eval_every steps and at the end, compared with the
 * configuration on --resume and read back for its weights by epar inspect (every byte untrusted). Shares train.c's
 * settings tables through train_int.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/ckpt.h"
#include "lib/err.h"
#include "lib/version.h"
#include "experiments/common.h"
#include "experiments/train/train.h"
#include "experiments/train/train_int.h"

/* sections of the checkpoint: config and data (JSON text, compared on resume), state (doubles), params,
 * the AdamW moments, the data stream's GSL state and name, the learning curve so far */
#define STATE_N 10

static void state_pack(const struct epar_train_run *r, double *s)
{
    double v[STATE_N] = {(double)r->step, r->tokens, (double)r->opt.t, r->loss_sum, (double)r->loss_count,
                         r->last_lr, r->last_norm, r->seconds, r->step_seconds, r->last_loss};
    memcpy(s, v, sizeof v);
}

static char *dump_sorted(json_t *j)
{
    char *s = j ? json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    json_decref(j);
    return s;
}

int epar_exp_train_checkpoint(const struct epar_train_run *r, const char *path)
{
    char *cfg = dump_sorted(epar_exp_train_cfg_json(&r->cfg)), *data = dump_sorted(epar_task_json(&r->task));
    if (!cfg || !data) {
        free(cfg); free(data);
        return epar_err_set(EPAR_ENOMEM, "out of memory writing the checkpoint");
    }
    double state[STATE_N];
    state_pack(r, state);
    size_t n = r->model.n_params;
    const char *rng_name = gsl_rng_name(r->data);
    struct epar_ckpt_section s[] = {
        {"config", cfg, strlen(cfg)},
        {"data", data, strlen(data)},
        {"state", state, sizeof state},
        {"params", r->model.params_mem, n * sizeof(float)},
        {"adam_m", r->opt.m, n * sizeof(float)},
        {"adam_v", r->opt.v, n * sizeof(float)},
        {"rng_name", rng_name, strlen(rng_name)},
        {"rng", gsl_rng_state(r->data), gsl_rng_size(r->data)},
        {"curve", r->curve, (size_t)r->rows * EPAR_TRAIN_CURVE_COLS * sizeof(double)},
        {"label", r->label, strlen(r->label)},   /* the benchmark's task id */
    };
    /* the moments left out of a weights-only checkpoint, the label when there is none */
    struct epar_ckpt_section keep[sizeof s / sizeof s[0]];
    int ns = 0;
    for (size_t k = 0; k < sizeof s / sizeof s[0]; k++)
        if (!(r->weights_only && !strncmp(s[k].tag, "adam_", 5)) && !(!r->label[0] && !strcmp(s[k].tag, "label")))
            keep[ns++] = s[k];
    int st = epar_ckpt_write(path, keep, ns);
    free(cfg);
    free(data);
    return st;
}

/* below a differing key whose values are objects (position, mechanism_params): the path of the first member that
 * differs, appended to key, and its values */
static void differ_below(const void *saved, size_t len, json_t *now, char *key, size_t nkey, char *was, size_t nwas,
                         char *is, size_t nis)
{
    json_t *old = json_loadb(saved, len, 0, NULL), *o = json_object_get(old, key), *v = json_object_get(now, key);
    while (json_is_object(o) && json_is_object(v)) {
        const char *k, *first = NULL;
        json_t *x;
        json_object_foreach(v, k, x) if (!first && !json_equal(x, json_object_get(o, k))) first = k;
        json_object_foreach(o, k, x) if (!first && !json_object_get(v, k)) first = k;
        if (!first) break;
        size_t n = strlen(key);
        snprintf(key + n, nkey - n, ".%s", first);
        o = json_object_get(o, first);
        v = json_object_get(v, first);
        char *a = o ? json_dumps(o, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        char *b = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        snprintf(was, nwas, "%s", o ? (a ? a : "?") : "absent");
        snprintf(is, nis, "%s", v ? (b ? b : "?") : "absent");
        free(a);
        free(b);
    }
    json_decref(old);
}

/* the first key whose value differs between the checkpoint's JSON and this run's (now: stolen) */
static int compare_json(const char *path, const char *what, const void *saved, size_t len, json_t *now)
{
    const char *k = NULL;
    char was[81], is[81], key[160];   /* the values, at most 80 characters */
    int d = now ? epar_fields_differ(saved, len, now, &k, was, sizeof was, is, sizeof is) : -2, st = EPAR_OK;
    if (d == -2) st = epar_err_set(EPAR_ENOMEM, "out of memory reading checkpoint '%s'", path);
    else if (d < 0) st = epar_err_set(EPAR_EIO, "corrupt checkpoint '%s' (its %s does not parse)", path, what);
    else if (d > 0) {
        snprintf(key, sizeof key, "%s", k);
        differ_below(saved, len, now, key, sizeof key, was, sizeof was, is, sizeof is);
        epar_err_set(EPAR_EINVAL, "checkpoint '%s' is of another run: %s %s is %s there, %s here", path, what, key, was, is);
        epar_err_hint("resume with the options of the run that wrote it (its run.json lists them)");
        st = EPAR_EINVAL;
    }
    json_decref(now);
    return st;
}

int epar_exp_train_resume_check(const struct epar_train_cfg *c, const struct epar_ckpt *ck, const char *path)
{
    size_t len;
    const void *d = epar_ckpt_get(ck, "config", &len);
    if (!d) return epar_err_set(EPAR_EIO, "corrupt checkpoint '%s' (no config section)", path);
    char *up = epar_exp_train_cfg_text_upgraded(d, len, &len);   /* a checkpoint of an epar before the one parameter namespace */
    int st = compare_json(path, "option", up ? up : d, len, epar_exp_train_cfg_json(c));
    free(up);
    return st;
}

int epar_exp_train_resume(struct epar_train_run *r, const struct epar_ckpt *ck, const char *path)
{
    int st;
    size_t len, n = r->model.n_params;
    const void *d;
    if ((st = epar_exp_train_resume_check(&r->cfg, ck, path))) return st;
    if (!(d = epar_ckpt_get(ck, "data", &len))) goto missing;
    if ((st = compare_json(path, "data", d, len, epar_task_json(&r->task)))) return st;
    /* sections sit at any byte offset of the file: copy the doubles out, never read them in place */
    const void *sp = epar_ckpt_get(ck, "state", &len);
    if (!sp || len != STATE_N * sizeof(double)) goto missing;
    double state[STATE_N];
    memcpy(state, sp, sizeof state);
    const void *pp = epar_ckpt_get(ck, "params", &len);
    if (!pp || len != n * sizeof(float)) goto missing;
    const void *pm = epar_ckpt_get(ck, "adam_m", &len);
    if (!pm) {
        epar_err_set(EPAR_EIO, "checkpoint '%s' holds the weights only (a benchmark cell's): it cannot be resumed", path);
        epar_err_hint("read it with 'epar inspect'; train with --resume from a checkpoint of 'epar train'");
        return EPAR_EIO;
    }
    if (len != n * sizeof(float)) goto missing;
    const void *pv = epar_ckpt_get(ck, "adam_v", &len);
    if (!pv || len != n * sizeof(float)) goto missing;
    const char *rn = epar_ckpt_get(ck, "rng_name", &len);
    if (!rn || len != strlen(gsl_rng_name(r->data)) || memcmp(rn, gsl_rng_name(r->data), len)) goto missing;
    const void *rs = epar_ckpt_get(ck, "rng", &len);
    if (!rs || len != gsl_rng_size(r->data)) goto missing;
    const void *cv = epar_ckpt_get(ck, "curve", &len);
    size_t rows = len / (EPAR_TRAIN_CURVE_COLS * sizeof(double));
    if (!cv || len % (EPAR_TRAIN_CURVE_COLS * sizeof(double)) || rows > (size_t)r->rows_cap) goto missing;
    if (state[0] > r->cfg.optim.steps) goto missing;
    memcpy(r->model.params_mem, pp, n * sizeof(float));
    memcpy(r->opt.m, pm, n * sizeof(float));
    memcpy(r->opt.v, pv, n * sizeof(float));
    memcpy(gsl_rng_state(r->data), rs, gsl_rng_size(r->data));
    memcpy(r->curve, cv, rows * EPAR_TRAIN_CURVE_COLS * sizeof(double));
    r->rows = (int)rows;
    r->step = (long)state[0];
    r->tokens = state[1];
    r->opt.t = (long)state[2];
    r->loss_sum = state[3];
    r->loss_count = (long)state[4];
    r->last_lr = state[5];
    r->last_norm = state[6];
    r->seconds = state[7];
    r->step_seconds = state[8];
    r->last_loss = state[9];
    r->resumed_from = r->step;
    r->model.pos.T = 0;     /* the position tables are rebuilt from the loaded parameters */
    return EPAR_OK;
missing:
    return epar_err_set(EPAR_EIO, "corrupt checkpoint '%s' (a section is missing or has the wrong size)", path);
}

/* ---- a checkpoint read for its weights (epar inspect) ---- */

/* the config section (written by epar_exp_train_cfg_json) into c, through the same rows: every key must be there
 * (absent: another epar version wrote it) with its type; ranges are checked after, by epar_exp_train_check */
static int cfg_from_text(struct epar_train_cfg *c, const void *sec, size_t len, const char *path, char *text,
                         size_t ntext);
static int cfg_from_json(struct epar_train_cfg *c, const void *sec, size_t len, const char *path, char *text,
                         size_t ntext)
{
    size_t ulen;
    char *up = epar_exp_train_cfg_text_upgraded(sec, len, &ulen);   /* a checkpoint of an epar before the one parameter namespace */
    int st = cfg_from_text(c, up ? up : sec, up ? ulen : len, path, text, ntext);
    free(up);
    return st;
}

static int cfg_from_text(struct epar_train_cfg *c, const void *sec, size_t len, const char *path, char *text,
                         size_t ntext)
{
    struct cfg_record r = {.c = *c};
    json_t *doc;
    int st = epar_fields_loadb(sec, len, "checkpoint config", path, epar_exp_train_cfg_head_fields, &r, &doc);   /* what it is of */
    if (st) return st;
    if (!r.task || !r.mechanism)
        st = epar_err_set(EPAR_EIO, "corrupt checkpoint '%s' (its config lacks task or mechanism)", path);
    else if (epar_task_find(r.task, &r.c.task.id) || epar_nnpos_find(r.mechanism, &r.c.mechanism))
        st = epar_err_set(EPAR_EIO, "checkpoint '%s' is of a task or mechanism this epar does not know ('%.40s', '%.40s')",
                          path, r.task, r.mechanism);
    /* then every row, as saved: the head, the run's settings, position and task options, the catalogue parameters */
    struct epar_protocol rd;
    struct epar_field row[2], mp[EPAR_MECH_MAX_PARAMS + 1], tail[3], opts[EPAR_TASK_MAX_OPTIONS + 1];
    epar_fields_reader(&rd, path, "checkpoint config", 1);
    if (!st) {
        epar_exp_train_mech_params_row(r.c.mechanism, row, mp);
        st = epar_protocol_obj_fields(&rd, doc, "$", epar_exp_train_cfg_head_fields, &r);
    }
    if (!st) st = epar_protocol_obj_fields(&rd, doc, "$", epar_exp_train_run_fields, &r);
    if (!st) st = epar_protocol_obj_fields(&rd, doc, "$", epar_exp_train_cfg_tail(r.c.task.id, tail, opts), &r);
    if (!st) st = epar_protocol_obj_fields(&rd, json_object_get(doc, "position"), "$.position", row, &r);
    if (st) {
        if (strstr(epar_err_message(), "missing key"))
            epar_err_hint("a checkpoint of another epar version may lack keys of this one: inspect it with the epar "
                          "that wrote it, or train the run again");
        json_decref(doc);
        return st;
    }
    /* the catalogue parameters through their setter: the catalogue's ranges */
    const struct epar_mech_param *q = epar_mech_row(r.c.mechanism)->params;
    for (int k = 0; !st && epar_nnpos_row(r.c.mechanism)->uses_params && k < EPAR_MECH_MAX_PARAMS && q[k].name; k++) {
        char a[160];
        snprintf(a, sizeof a, "%s.%s=%.17g", epar_mech_row(r.c.mechanism)->id, q[k].name,
                 r.c.pos.mp[r.c.mechanism][k]);
        if (epar_nnpos_set(&r.c.pos, a))
            st = epar_err_set(EPAR_EIO, "corrupt checkpoint '%s' (mechanism parameter '%s')", path, q[k].name);
    }
    if (!st) {   /* lm's text outlives the document; the preset names the alpha, beta, gamma read */
        snprintf(text, ntext, "%s", r.c.task.text_path ? r.c.task.text_path : "");
        r.c.task.text_path = r.c.task.text_path ? text : NULL;
        snprintf(r.c.preset, sizeof r.c.preset, "%s", r.preset ? r.preset : "");
    }
    json_decref(doc);
    if (st) return st;
    *c = r.c;
    c->seed = (unsigned long)r.seed;
    c->task.seed = c->seed;
    c->pos.fx.form = EPAR_FORM_ENHANCED;
    return EPAR_OK;
}

/* the config and data sections into c: EPAR_EIO for anything a real checkpoint would not hold; the batch set to 1 */
static int load_cfg(struct epar_train_cfg *c, const struct epar_ckpt *ck, const char *path, char *text, size_t ntext,
                    const char *cache_dir)
{
    epar_exp_train_defaults(c);
    size_t clen, dlen;
    const void *cs = epar_ckpt_get(ck, "config", &clen), *ds = epar_ckpt_get(ck, "data", &dlen);
    int st = !cs || !ds ? epar_err_set(EPAR_EIO, "corrupt checkpoint '%s' (its %s section is missing)", path,
                                       cs ? "data" : "config")
                        : cfg_from_json(c, cs, clen, path, text, ntext);
    /* the data section's conditions (noise, shuffle; not in the config section) when it has them, else their defaults */
    struct epar_field cond[EPAR_TASK_MAX_OPTIONS + 1];
    epar_task_option_rows(EPAR_TASK_OPT_CONDITION, EPAR_TASK_ALL, 0, cond, EPAR_TASK_MAX_OPTIONS + 1);
    epar_fields_defaults(cond, &c->task);
    if (!st) st = epar_fields_loadb(ds, dlen, "checkpoint data", path, cond, &c->task, NULL);
    c->task.cache_dir = cache_dir;
    if (!st && (st = epar_exp_train_check(c))) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", epar_err_message());
        st = epar_err_set(EPAR_EIO, "corrupt checkpoint '%s' (its configuration is invalid: %s)", path, msg);
    }
    if (st) return st;
    /* the weights must be in the file: a few bytes of config cannot make us allocate a big model */
    size_t plen = 0;
    epar_ckpt_get(ck, "params", &plen);
    double lower = (double)c->layers * (4.0 * c->dim * c->dim + 2.0 * c->dim * c->mlp);   /* floats, a lower bound */
    if ((double)plen < 4.0 * lower)
        return epar_err_set(EPAR_EIO, "corrupt checkpoint '%s' (its parameters are shorter than its config says)", path);
    c->batch = 1;   /* one sequence at a time: the activations of a single input */
    double need = epar_exp_train_bytes(c, 2) + 12.0 * c->task.eval_sequences * c->task.length;
    if (need > 2e9) {
        epar_err_set(EPAR_ENOMEM, "the model of checkpoint '%s' needs %.3g GB for one sequence", path, need / 1e9);
        epar_err_hint("inspect it on a machine with more memory");
        return EPAR_ENOMEM;
    }
    return EPAR_OK;
}

int epar_exp_train_load(struct epar_train_run *r, const struct epar_ckpt *ck, const char *path, const char *cache_dir)
{
    struct epar_train_cfg c;
    char text[4096] = "";
    memset(r, 0, sizeof *r);
    int st = load_cfg(&c, ck, path, text, sizeof text, cache_dir);
    if (!st) st = epar_exp_train_setup(r, &c);
    if (st) return st;
    snprintf(r->text_path, sizeof r->text_path, "%s", text);
    if (c.task.text_path) r->cfg.task.text_path = r->task.cfg.text_path = r->text_path;
    /* the data must be what the model was trained on: the same vocabulary (lm: the same text) */
    size_t len, n = r->model.n_params;
    json_t *now = epar_task_json(&r->task);
    json_object_del(now, "source");   /* where the text was read from may differ (the cache), not what it is */
    const void *d = epar_ckpt_get(ck, "data", &len);
    if ((st = compare_json(path, "data", d, len, now))) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s", epar_err_message());
        return epar_err_set(EPAR_EIO, "%s", msg);
    }
    const void *pp = epar_ckpt_get(ck, "params", &len), *sp = epar_ckpt_get(ck, "state", NULL);
    size_t slen;
    epar_ckpt_get(ck, "state", &slen);
    if (!pp || len != n * sizeof(float) || !sp || slen != STATE_N * sizeof(double))
        return epar_err_set(EPAR_EIO, "corrupt checkpoint '%s' (its parameters are missing or of another size)", path);
    double state[STATE_N];
    memcpy(state, sp, sizeof state);
    memcpy(r->model.params_mem, pp, n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        if (!isfinite(r->model.params_mem[i])) return epar_err_set(EPAR_EIO, "corrupt checkpoint '%s' (a parameter is not finite)", path);
    r->step = state[0] >= 0 && state[0] <= c.optim.steps ? (long)state[0] : 0;
    r->model.pos.T = 0;
    const char *lab = epar_ckpt_get(ck, "label", &len);
    for (size_t i = 0; lab && i < len && i + 1 < sizeof r->label; i++)
        r->label[i] = (lab[i] >= 'a' && lab[i] <= 'z') || (lab[i] >= '0' && lab[i] <= '9') || lab[i] == '-' ? lab[i] : '_';
    return EPAR_OK;
}
