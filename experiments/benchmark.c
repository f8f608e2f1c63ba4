/* The benchmark grid: configuration, plan (equal parameter counts), cells, tables and figures. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <omp.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include "lib/audit.h"
#include "lib/blas.h"
#include "lib/csvout.h"
#include "lib/err.h"
#include "lib/outdir.h"
#include "lib/plot.h"
#include "lib/stats.h"
#include "lib/version.h"
#include "benchmark.h"
#include "common.h"
#include "inspect.h"

/* ------------------------------------------------------------------------------------------------ */
/* configuration                                                                                      */

/* a budget's sizes, each required (a budget states every size), and its seeds, extrapolation lengths and cost task */
struct budget_read {
    struct epar_bench_budget b;
    long seeds[EPAR_MAX_SEEDS];
    int n_seeds;
    const char *extrap, *cost_task;
    json_t *lr_scale;
};
#define BB struct budget_read
#define INT_(key, member, lo, hi, help) EPAR_FIELD_REQ_(BB, key, EPAR_FIELD_INT, b.member, lo, hi, help)
#define DBL_(key, member, lo, incl, help) EPAR_FIELD_REQ_(BB, key, EPAR_FIELD_DOUBLE, b.member, lo, incl, help)
static const struct epar_field budget_fields[] = {
    INT_("layers", layers, 1, 1024, "Transformer blocks"),
    INT_("dim", dim, 1, 65536, "model width"),
    INT_("heads", heads, 1, 65536, "attention heads (divide dim)"),
    INT_("mlp", mlp, 1, 1 << 20, "MLP width of none (the others' are equalised to its count)"),
    INT_("batch", batch, 1, 65536, "sequences per step"),
    INT_("long_batch", long_batch, 1, 65536, "sequences per step of the long tasks"),
    INT_("steps", steps, 1, 1 << 30, "optimiser steps of every cell"),
    INT_("warmup", warmup, 0, 1 << 30, "linear warm-up steps"),
    INT_("eval_every", eval_every, 1, 1 << 30, "steps between evaluations"),
    INT_("eval_batches", eval_batches, 1, 1 << 20, "evaluation batches at those points"),
    INT_("eval_sequences", eval_sequences, 1, 1000000, "fixed evaluation set of a synthetic task"),
    INT_("lm_eval_sequences", lm_eval_sequences, 1, 1000000, "held-out windows of lm"),
    INT_("lm_length", lm_length, 2, 65536, "lm's length"),
    INT_("short_length", short_length, 3, 65536, "the short tasks' length"),
    INT_("long_length", long_length, 3, 65536, "the long tasks' length"),
    INT_("extrapolation_tokens", extrap_tokens, 1, 1 << 30, "tokens at each extrapolation length"),
    INT_("cost_length", cost_length, 2, 65536, "length of the cost cell"),
    INT_("cost_repeats", cost_repeats, 1, 4000, "least blocks of adjacent step pairs of the cost cell"),
    INT_("cost_max_repeats", cost_max_repeats, 1, 4000, "most blocks of the cost cell"),
    INT_("cost_generation", cost_generation, 1, 4000, "blocks of the cost cell between fresh set-ups of its models"),
    DBL_("lr", lr, 0, 0, "peak learning rate"),
    DBL_("lr_min_ratio", lr_min_ratio, 0, 1, "final learning rate / peak"),
    DBL_("weight_decay", weight_decay, 0, 1, "AdamW weight decay"),
    DBL_("clip", clip, 0, 1, "global gradient-norm clip"),
    DBL_("init_sd", init_sd, 0, 1, "sd of the initial weights"),
    DBL_("cost_halfwidth", cost_halfwidth, 0, 0, "blocks until the cost claims' intervals are this narrow"),
    DBL_("cost_seconds", cost_seconds, 0, 0, "... or until the cost cell's timed steps took this many CPU seconds"),
    EPAR_FIELD_LISTR_(BB, "seeds", EPAR_FIELD_LLIST, seeds, n_seeds, EPAR_MAX_SEEDS, 0, 4294967295.0,
                      EPAR_FIELD_REQUIRED),
    EPAR_FIELD_REQ_(BB, "extrapolation", EPAR_FIELD_STRING, extrap, 0, 0, "comma-separated lm evaluation lengths"),
    EPAR_FIELD_REQ_(BB, "cost_task", EPAR_FIELD_STRING, cost_task, 0, 0, "task of the cost cell"),
    EPAR_FIELD_(BB, "lr_scale", EPAR_FIELD_JSON, lr_scale, 0),
    EPAR_FIELD_END_};
#undef DBL_
#undef INT_
#undef BB

/* a task: its id, task, the paper's row and condition, length class (lm, short, long) and options. Read twice:
 * once with the options into a scratch struct (the keys checked, the task known), then, once the task's defaults
 * are set, the options into the task itself */
struct task_read {
    const char *id, *task, *paper, *condition, *length, *primary, *lr_family;
    double steps_scale;
    int eval_sequences;
    struct epar_task_cfg opt;
};
#define TASK_OPTIONS_(S, m)                                                                        \
    EPAR_FIELD_INT_(S, "pairs", m.pairs, 1, 1 << 20, "facts per sequence"),                        \
    EPAR_FIELD_INT_(S, "queries", m.queries, 0, 1 << 20, "questions per sequence"),                \
    EPAR_FIELD_INT_(S, "keys", m.keys, 1, 1 << 20, "key vocabulary (32)"),                         \
    EPAR_FIELD_INT_(S, "values", m.values, 1, 1 << 20, "values (32)"),                             \
    EPAR_FIELD_DBL_(S, "noise", m.noise, 0, 1, "share of noisy tokens"),                           \
    EPAR_FIELD_BOOL_(S, "shuffle", m.shuffle, "non-sequential: positions shuffled")
#define TR struct task_read
static const struct epar_field task_fields[] = {
    EPAR_FIELD_(TR, "id", EPAR_FIELD_STRING, id, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_(TR, "task", EPAR_FIELD_STRING, task, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_(TR, "paper", EPAR_FIELD_STRING, paper, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_(TR, "condition", EPAR_FIELD_STRING, condition, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_(TR, "length", EPAR_FIELD_STRING, length, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_STR_(TR, "primary", primary, "final, final_loss, curve, curve_loss or online_loss (default final)"),
    EPAR_FIELD_DBL_(TR, "steps_scale", steps_scale, 0, 0, "the task's steps: the budget's times this (default 1)"),
    EPAR_FIELD_INT_(TR, "eval_sequences", eval_sequences, 1, 1000000, "its evaluation set (default: the budget's)"),
    EPAR_FIELD_STR_(TR, "lr_family", lr_family, "tasks whose learning rates are chosen together (default: its id)"),
    TASK_OPTIONS_(TR, opt),
    EPAR_FIELD_END_};
#undef TR
static const struct epar_field task_options[] = {TASK_OPTIONS_(struct epar_bench_task, task), EPAR_FIELD_END_};
#undef TASK_OPTIONS_

/* the benchmark section (its "preset" is read with the run's parameters) */
struct bench_read {
    const char *mechanisms, *equalise;
    double param_tol, sanity_margin;
    int distance_bins, n_tasks;
    struct task_read tasks[EPAR_BENCH_MAX_TASKS];
    json_t *budgets;
};
#define BS struct bench_read
static const struct epar_field bench_fields[] = {
    EPAR_FIELD_REQ_(BS, "mechanisms", EPAR_FIELD_STRING, mechanisms, 0, 0, "the mechanisms of the grid"),
    EPAR_FIELD_STR_(BS, "equalise", equalise, "mlp (the MLP width equalises the parameter counts) or none"),
    EPAR_FIELD_DBL_(BS, "param_tolerance", param_tol, 0, 1, "largest relative parameter-count difference"),
    EPAR_FIELD_INT_(BS, "distance_bins", distance_bins, 1, 1024, "bins of needle distance"),
    EPAR_FIELD_DBL_(BS, "sanity_margin", sanity_margin, 0, 1, "margin of the sanity checks"),
    {"tasks", EPAR_FIELD_OLIST, offsetof(BS, tasks), 0, 0, 0, "the tasks", 0, 0, offsetof(BS, n_tasks),
     EPAR_BENCH_MAX_TASKS, EPAR_FIELD_REQUIRED | EPAR_FIELD_STRICT, task_fields, sizeof(struct task_read)},
    EPAR_FIELD_REQ_(BS, "budgets", EPAR_FIELD_JSON, budgets, 0, 0, "the budgets by name"),
    EPAR_FIELD_END_};
#undef BS
static const char *const bench_extra[] = {"description", "preset", "set", "extrapolation", NULL};

const char *const epar_bench_primary_names[EPAR_BENCH_NPRIMARY] = {"final", "final_loss", "curve", "curve_loss",
                                                                    "online_loss"};

static int perr(const struct epar_protocol *p, const char *jp, const char *what)
{
    return epar_err_set(EPAR_EPROTOCOL, "invalid protocol '%s': %s: %s", p->path, jp, what);
}

static int read_budget(struct epar_bench_budget *b, json_t **lr_scale, const struct epar_protocol *p, json_t *o,
                       const char *jp)
{
    const char *budget_keys[40];
    epar_fields_keys(budget_fields, NULL, budget_keys, 40);
    struct budget_read r = {.b = *b};
    int st = epar_protocol_obj_check_keys(p, o, jp, budget_keys);
    if (!st) st = epar_protocol_obj_fields(p, o, jp, budget_fields, &r);
    if (st) {
        if (strstr(epar_err_message(), "missing key")) epar_err_hint("a budget states every size");
        return st;
    }
    *b = r.b;
    *lr_scale = r.lr_scale;
    b->n_seeds = r.n_seeds;
    for (int i = 0; i < r.n_seeds; i++) b->seeds[i] = (unsigned long)r.seeds[i];
    b->n_extrap = 0;
    char buf[256], sjp[360];
    snprintf(buf, sizeof buf, "%s", r.extrap);
    snprintf(sjp, sizeof sjp, "%s.extrapolation", jp);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        long L = strtol(tok, &end, 10);
        if (*end || L < 2 || L > 65536 || b->n_extrap >= EPAR_BENCH_MAX_EXTRAP)
            return perr(p, sjp, "expected up to 16 comma-separated lengths in [2, 65536]");
        b->extrap[b->n_extrap++] = (int)L;
    }
    if (b->n_extrap < 1) return perr(p, sjp, "expected at least one length");
    if (epar_task_find(r.cost_task, &b->cost_task)) {
        snprintf(sjp, sizeof sjp, "%s.cost_task", jp);
        return perr(p, sjp, "unknown task");
    }
    if (b->dim % b->heads) return perr(p, jp, "heads must divide dim");
    if (b->cost_max_repeats < b->cost_repeats) return perr(p, jp, "cost_max_repeats must be >= cost_repeats");
    return EPAR_OK;
}

/* task k's names checked into c->tasks[k], its defaults set (the options are read over them afterwards) */
static int check_task(struct epar_bench_task *t, const struct task_read *r, const struct epar_protocol *p, const char *jp)
{
    const char *id = r->id;
    if (strlen(id) >= sizeof t->id || strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789-_") != strlen(id))
        return perr(p, jp, "id: lower-case letters, digits, '-' and '_', at most 31");
    enum epar_task_id tid;
    if (epar_task_find(r->task, &tid)) return perr(p, jp, "unknown task");
    const char *len = r->length;
    if (strcmp(len, "lm") && strcmp(len, "short") && strcmp(len, "long")) return perr(p, jp, "length is lm, short or long");
    snprintf(t->id, sizeof t->id, "%s", id);
    snprintf(t->paper, sizeof t->paper, "%s", r->paper);
    snprintf(t->condition, sizeof t->condition, "%s", r->condition);
    snprintf(t->length_class, sizeof t->length_class, "%s", len);
    t->primary = EPAR_BENCH_NPRIMARY;
    for (int k = 0; k < EPAR_BENCH_NPRIMARY; k++)
        if (!strcmp(r->primary ? r->primary : "final", epar_bench_primary_names[k])) t->primary = (enum epar_bench_primary)k;
    if (t->primary == EPAR_BENCH_NPRIMARY) return perr(p, jp, "primary: final, final_loss, curve, curve_loss or online_loss");
    t->steps_scale = r->steps_scale > 0 ? r->steps_scale : 1.0;
    t->eval_sequences = r->eval_sequences;
    const char *fam = r->lr_family ? r->lr_family : id;
    if (strlen(fam) >= sizeof t->lr_family) return perr(p, jp, "lr_family: at most 15 characters");
    snprintf(t->lr_family, sizeof t->lr_family, "%s", fam);
    for (int m = 0; m < EPAR_MECH_COUNT; m++) t->lr_scale[m] = 1.0;
    epar_task_cfg_default(&t->task, tid);
    t->task.keys = 32;
    t->task.values = 32;
    return EPAR_OK;
}

/* a budget's "lr_scale": {family: {mechanism: scale}} into every task of that family (each mechanism's learning rate
 * there = lr x scale); a family no task has, an unknown mechanism or a scale that is not > 0 is a protocol error */
static int read_lr_scale(struct epar_bench_cfg *c, const struct epar_protocol *p, json_t *o, const char *bjp)
{
    char jp[512];
    snprintf(jp, sizeof jp, "%s.lr_scale", bjp);
    if (!o) return EPAR_OK;
    if (!json_is_object(o)) return perr(p, jp, "expected {family: {mechanism: scale}}");
    const char *fam, *mech;
    json_t *mo, *v;
    json_object_foreach(o, fam, mo) {
        snprintf(jp, sizeof jp, "%s.lr_scale.%s", bjp, fam);
        if (fam[0] == '_') continue;
        int any = 0;
        for (int k = 0; k < c->n_tasks; k++) any |= !strcmp(c->tasks[k].lr_family, fam);
        if (!any) return perr(p, jp, "no task has this lr_family");
        if (!json_is_object(mo)) return perr(p, jp, "expected {mechanism: scale}");
        json_object_foreach(mo, mech, v) {
            enum epar_mech_id id;
            snprintf(jp, sizeof jp, "%s.lr_scale.%s.%s", bjp, fam, mech);
            if (epar_nnpos_find(mech, &id)) return perr(p, jp, "not a trainable mechanism");
            if (!json_is_number(v) || !(json_number_value(v) > 0)) return perr(p, jp, "expected a scale > 0");
            for (int k = 0; k < c->n_tasks; k++)
                if (!strcmp(c->tasks[k].lr_family, fam)) c->tasks[k].lr_scale[id] = json_number_value(v);
        }
    }
    return EPAR_OK;
}

/* the section's tasks (names, then the options over each task's defaults) and the chosen budget */
static int read_tasks_budget(struct epar_bench_cfg *c, const struct epar_protocol *p, const struct bench_read *r,
                             const char *budget)
{
    const char *jp = "$.experiments.benchmark";
    char tjp[300];
    int st = EPAR_OK;
    for (int i = 0; !st && i < r->n_tasks; i++) {
        snprintf(tjp, sizeof tjp, "%s.tasks[%d]", jp, i);
        if ((st = check_task(&c->tasks[i], &r->tasks[i], p, tjp))) return st;
        for (int k = 0; k < i; k++)
            if (!strcmp(c->tasks[k].id, c->tasks[i].id)) return perr(p, tjp, "repeated id");
    }
    const struct epar_field options[] = {
        {"tasks", EPAR_FIELD_OLIST, offsetof(struct epar_bench_cfg, tasks), 0, 0, 0, NULL, 0, 0,
         offsetof(struct epar_bench_cfg, n_tasks), EPAR_BENCH_MAX_TASKS, 0, task_options, sizeof(struct epar_bench_task)},
        EPAR_FIELD_END_};
    if ((st = epar_protocol_obj_fields(p, epar_protocol_section(p, "benchmark"), jp, options, c))) return st;
    json_t *bo = json_object_get(r->budgets, budget);
    if (!json_is_object(bo)) {
        epar_err_set(EPAR_EINVAL, "unknown budget '%s'", budget);
        char list[256];
        epar_protocol_key_list(r->budgets, list, sizeof list);
        const char *near = epar_protocol_nearest_key(r->budgets, budget);
        if (near) epar_err_hint("did you mean '%s'? (budgets in '%s': %s)", near, p->path, list);
        else epar_err_hint("budgets in '%s': %s", p->path, list);
        return EPAR_EINVAL;
    }
    snprintf(tjp, sizeof tjp, "%s.budgets.%s", jp, budget);
    json_t *lr_scale = NULL;
    if ((st = read_budget(&c->b, &lr_scale, p, bo, tjp))) return st;
    return read_lr_scale(c, p, lr_scale, tjp);
}

int epar_exp_benchmark_config(struct epar_bench_cfg *c, const struct epar_protocol *p, const struct epar_params *prm,
                                 const char *budget)
{
    memset(c, 0, sizeof *c);
    const char *jp = "$.experiments.benchmark";
    json_t *sec = epar_protocol_section(p, "benchmark");
    if (!sec) return perr(p, jp, "missing (the benchmark needs its section)");
    const char *keys[16];
    epar_fields_keys(bench_fields, bench_extra, keys, 16);
    int st = epar_protocol_check_keys(p, "benchmark", keys);
    if (st) return st;
    /* the train section's defaults: optimiser constants, mechanism settings, the preset's alpha, beta, gamma */
    epar_exp_train_defaults(&c->base);
    if ((st = epar_exp_train_config(&c->base, p, prm, EPAR_TASK_LM))) return st;
    struct bench_read *r = EPAR_CALLOC(1, sizeof *r);
    if (!r) return EPAR_ENOMEM;
    r->equalise = "mlp";
    r->param_tol = 0.01;
    r->distance_bins = 8;
    r->sanity_margin = 0.15;
    st = epar_protocol_obj_fields(p, sec, jp, bench_fields, r);
    if (!st && (st = epar_exp_benchmark_select(c, NULL, r->mechanisms)))
        st = epar_err_set(EPAR_EPROTOCOL, "invalid protocol '%s': %s.mechanisms: %s", p->path, jp, epar_err_message());
    if (!st && strcmp(r->equalise, "mlp") && strcmp(r->equalise, "none")) st = perr(p, jp, "equalise is 'mlp' or 'none'");
    c->equalise_mlp = !st && !strcmp(r->equalise, "mlp");
    c->param_tol = r->param_tol;
    c->distance_bins = r->distance_bins;
    c->sanity_margin = r->sanity_margin;
    if (!st) st = epar_audit_level(p->root, p->path, &c->level);
    if (!st) st = read_tasks_budget(c, p, r, budget);
    free(r);
    /* issue 33: mechanism parameters of the protocol (as --set), then the length-extrapolation study */
    if (!st) st = epar_exp_sets(p, json_object_get(sec, "set"), "$.experiments.benchmark.set", epar_exp_train_set, &c->base);
    if (!st) st = epar_bx_config(c, p, budget);
    if (st) return st;
    snprintf(c->b.name, sizeof c->b.name, "%s", budget);
    /* lengths from the budget, the evaluation set size, then every task checked as it will run */
    char tjp[300];
    for (int k = 0; k < c->n_tasks; k++) {
        struct epar_bench_task *t = &c->tasks[k];
        t->task.length = !strcmp(t->length_class, "lm") ? c->b.lm_length
                         : !strcmp(t->length_class, "short") ? c->b.short_length : c->b.long_length;
        t->task.eval_sequences = t->eval_sequences > 0 ? t->eval_sequences : c->b.eval_sequences;
        if (epar_task_validate(&t->task)) {
            snprintf(tjp, sizeof tjp, "%s.tasks[%d] (%s) with budget %s", jp, k, t->id, budget);
            return perr(p, tjp, epar_err_message());
        }
    }
    c->prm = *prm;
    snprintf(c->preset, sizeof c->preset, "%s", prm->preset);
    snprintf(c->protocol, sizeof c->protocol, "%s", p->path);
    snprintf(c->protocol_hash, sizeof c->protocol_hash, "%s", p->hash);
    return EPAR_OK;
}

int epar_exp_benchmark_select(struct epar_bench_cfg *c, const char *tasks, const char *mechanisms)
{
    char buf[1024];
    if (mechanisms) {
        snprintf(buf, sizeof buf, "%s", mechanisms);
        c->n_mech = 0;
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            enum epar_mech_id id;
            if (epar_nnpos_find(tok, &id)) return EPAR_EINVAL;
            for (int k = 0; k < c->n_mech; k++)
                if (c->mech[k] == id) return epar_err_set(EPAR_EINVAL, "mechanism '%s' is listed twice", tok);
            c->mech[c->n_mech++] = id;
        }
        if (!c->n_mech) return epar_err_set(EPAR_EINVAL, "no mechanism in '%s'", mechanisms);
    }
    if (tasks) {
        struct epar_bench_task keep[EPAR_BENCH_MAX_TASKS];
        int n = 0;
        snprintf(buf, sizeof buf, "%s", tasks);
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            int found = -1;
            for (int k = 0; k < c->n_tasks; k++)
                if (!strcmp(c->tasks[k].id, tok)) found = k;
            if (found < 0) {
                epar_err_set(EPAR_EINVAL, "unknown benchmark task '%s'", tok);
                char list[512] = "";
                struct epar_nearest near;
                epar_nearest_init(&near, tok);
                for (int k = 0; k < c->n_tasks; k++) {
                    size_t l = strlen(list);
                    snprintf(list + l, sizeof list - l, "%s%s", k ? ", " : "", c->tasks[k].id);
                    epar_nearest_add(&near, c->tasks[k].id);
                }
                if (near.best) epar_err_hint("did you mean '%s'? (tasks of the protocol: %s)", near.best, list);
                else epar_err_hint("tasks of the protocol: %s", list);
                return EPAR_EINVAL;
            }
            for (int k = 0; k < n; k++)
                if (!strcmp(keep[k].id, tok)) return epar_err_set(EPAR_EINVAL, "task '%s' is listed twice", tok);
            keep[n++] = c->tasks[found];
        }
        if (!n) return epar_err_set(EPAR_EINVAL, "no task in '%s'", tasks);
        memcpy(c->tasks, keep, (size_t)n * sizeof keep[0]);
        c->n_tasks = n;
    }
    epar_bx_select(c);   /* the extrapolation study's own mechanisms after the grid's */
    return EPAR_OK;
}

/* ------------------------------------------------------------------------------------------------ */
/* plan                                                                                               */

/* the cost cell's design: its comparisons are every mechanism against none and EPAR enhanced against basic (those
 * present), each timed as pairs of single steps adjacent in time; a mechanism in no comparison is timed alone.
 * The comparisons the cost claims read (enhanced against none and against basic) decide when to stop, are timed in
 * every block and their models are set up afresh each generation; the others take turns, one in every other block,
 * on models set up once. Without either claim's comparison, every unit is in every block and decides. */
struct cost_unit {
    int a, b;   /* indices into c->mech; b < 0: a step of a alone */
};
struct cost_design {
    struct cost_unit unit[2 * EPAR_MECH_COUNT];   /* the comparisons (pair k = unit k), then the steps alone */
    int n_mech, n_pair, n_unit, decides[2 * EPAR_MECH_COUNT];
    int dec[2 * EPAR_MECH_COUNT], n_dec;          /* units in every block */
    int oth[2 * EPAR_MECH_COUNT], n_oth;          /* units in turn, in every other block */
    int fresh[EPAR_MECH_COUNT];                   /* a mechanism of a deciding unit: set up afresh each generation */
};

static int mech_index(const struct epar_bench_cfg *c, enum epar_mech_id id);

static void cost_design(const struct epar_bench_cfg *c, struct cost_design *d)
{
    memset(d, 0, sizeof *d);
    d->n_mech = c->n_mech;
    int none = mech_index(c, EPAR_MECH_NONE), basic = mech_index(c, EPAR_MECH_EPAR_BASIC);
    int enh = mech_index(c, EPAR_MECH_EPAR_ENHANCED), covered[EPAR_MECH_COUNT] = {0}, any = 0;
    for (int m = 0; m < c->n_mech && none >= 0; m++)
        if (m != none) {
            d->unit[d->n_unit++] = (struct cost_unit){m, none};
            covered[m] = covered[none] = 1;
        }
    if (enh >= 0 && basic >= 0) {
        d->unit[d->n_unit++] = (struct cost_unit){enh, basic};
        covered[enh] = covered[basic] = 1;
    }
    d->n_pair = d->n_unit;
    for (int m = 0; m < c->n_mech; m++)
        if (!covered[m]) d->unit[d->n_unit++] = (struct cost_unit){m, -1};
    for (int k = 0; k < d->n_pair; k++)
        any |= d->decides[k] = d->unit[k].a == enh && (d->unit[k].b == none || d->unit[k].b == basic);
    for (int k = 0; k < d->n_unit; k++) {
        if (!any) d->decides[k] = 1;
        if (d->decides[k]) d->dec[d->n_dec++] = k;
        else d->oth[d->n_oth++] = k;
        if (d->decides[k]) d->fresh[d->unit[k].a] = 1;
        if (d->decides[k] && d->unit[k].b >= 0) d->fresh[d->unit[k].b] = 1;
    }
}

/* the longest block: every unit (its two steps and a spacer before it) and the unit in turn; the most timed steps
 * of one mechanism (the cell stops before a block could pass it) */
#define COST_MAX_SEQ (6 * EPAR_MECH_COUNT + 3)
#define EPAR_BENCH_MAX_COST_STEPS 65536

/* block B as a sequence of steps (seq: mechanism indices; returns its length) after a block that ended with step
 * prev (-1: none) and, for each unit k in it, the positions of its two steps (pa[k], pb[k]; -1 for a unit not in
 * this block, pb -1 for a step alone). A pair's two steps are adjacent and its own: no step is in two pairs of one
 * comparison. Orders, fixed by B alone (deterministic): a pair's order alternates, between blocks (a unit in turn:
 * between its turns); the units come in an order drawn from B, so what precedes a pair varies and falls on both
 * of its sides alike; and no model takes two steps in a row (a step right after its own model's previous step finds
 * that model's weights and optimiser state in the caches and is faster: 2-5 % here, bench/README.md): a unit that
 * would start with the last step's model waits for the next, and when all would, a step of another model is put
 * in between (a spacer: timed, in no pair) */
static int cost_block(const struct cost_design *d, int B, int prev, int *seq, int *pa, int *pb)
{
    int order[2 * EPAR_MECH_COUNT + 1], flip[2 * EPAR_MECH_COUNT + 1], nu = 0, n = 0;
    for (int i = 0; i < d->n_dec; i++) {
        order[nu] = d->dec[i];
        flip[nu++] = B & 1;
    }
    if (d->n_oth && !(B & 1)) {   /* every other block: its turn T = B / 2 */
        order[nu] = d->oth[B / 2 % d->n_oth];
        flip[nu++] = (B / 2 / d->n_oth) & 1;
    }
    /* the units' order: a Fisher-Yates shuffle by a splitmix64 stream seeded with B */
    unsigned long long z = 0x9E3779B97F4A7C15ULL * (unsigned long long)(B + 1);
    for (int i = nu - 1; i > 0; i--) {
        z += 0x9E3779B97F4A7C15ULL;
        unsigned long long r = z;
        r = (r ^ (r >> 30)) * 0xBF58476D1CE4E5B9ULL;
        r = (r ^ (r >> 27)) * 0x94D049BB133111EBULL;
        r ^= r >> 31;
        int j = (int)(r % (unsigned long long)(i + 1)), t = order[i], f = flip[i];
        order[i] = order[j];
        flip[i] = flip[j];
        order[j] = t;
        flip[j] = f;
    }
    for (int k = 0; k < d->n_unit; k++) pa[k] = pb[k] = -1;
    int last = prev;
    while (nu > 0) {
        int i = 0;
        while (i < nu && (flip[i] ? d->unit[order[i]].b : d->unit[order[i]].a) == last) i++;
        if (i == nu) {   /* every unit left starts with the last step's model: a spacer */
            int first = flip[0] ? d->unit[order[0]].b : d->unit[order[0]].a, s = 0;
            while (s < d->n_mech && (s == last || s == first)) s++;
            if (s < d->n_mech) seq[n++] = last = s;
            i = 0;   /* (one model only: nothing else to put in between) */
        }
        const struct cost_unit *u = &d->unit[order[i]];
        int k = order[i];
        if (u->b < 0) {
            pa[k] = n;
            seq[n++] = u->a;
        } else {
            pa[k] = n + flip[i];
            pb[k] = n + !flip[i];
            seq[n++] = flip[i] ? u->b : u->a;
            seq[n++] = flip[i] ? u->a : u->b;
        }
        last = seq[n - 1];
        order[i] = order[--nu];   /* the order of the rest does not matter: it was drawn at random */
        flip[i] = flip[nu];
    }
    return n;
}

/* steps of block 0 (for the plan's estimate of the cell's work) */
static int cost_block_steps(const struct cost_design *d)
{
    int seq[COST_MAX_SEQ], pa[2 * EPAR_MECH_COUNT], pb[2 * EPAR_MECH_COUNT];
    return cost_block(d, 0, -1, seq, pa, pb);
}

void epar_exp_benchmark_cell_cfg(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell, struct epar_train_cfg *t)
{
    const struct epar_bench_budget *b = &c->b;
    *t = c->base;
    if (cell->task >= 0) {
        t->task = c->tasks[cell->task].task;
    } else {
        epar_task_cfg_default(&t->task, b->cost_task);
        t->task.length = b->cost_length;
        t->task.eval_sequences = b->batch;
    }
    t->task.cache_dir = c->cache_dir;
    t->mechanism = c->mech[cell->mech];
    t->layers = b->layers;
    t->dim = b->dim;
    t->heads = b->heads;
    t->mlp = cell->mlp;
    t->batch = cell->task >= 0 && !strcmp(c->tasks[cell->task].length_class, "long") ? b->long_batch : b->batch;
    /* the cost cell: one untimed step, then up to EPAR_BENCH_MAX_COST_STEPS timed ones */
    const struct epar_bench_task *bt = cell->task >= 0 ? &c->tasks[cell->task] : NULL;
    t->optim.steps = bt ? (int)lround(b->steps * bt->steps_scale) : 1 + EPAR_BENCH_MAX_COST_STEPS;
    t->optim.warmup = b->warmup;
    t->optim.lr = b->lr * (c->lr_scale > 0 ? c->lr_scale : bt ? bt->lr_scale[c->mech[cell->mech]] : 1.0);
    t->optim.lr_min_ratio = b->lr_min_ratio;
    t->optim.weight_decay = b->weight_decay;
    t->optim.clip = b->clip;
    t->init_sd = b->init_sd;
    t->eval_every = cell->task >= 0 ? b->eval_every : t->optim.steps + 1;
    t->eval_batches = cell->task >= 0 ? b->eval_batches : 1;
    t->seed = b->seeds[cell->seed];
    t->task.seed = t->seed;
}

void epar_exp_benchmark_cell_dir(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell, char *buf, size_t n)
{
    if (cell->task < 0) snprintf(buf, n, "cells/cost");
    else snprintf(buf, n, "cells/%s/%s/seed-%lu", c->tasks[cell->task].id, epar_nnpos_name(c->mech[cell->mech]),
                  c->b.seeds[cell->seed]);
}

/* the vocabulary of a task (lm: of the text) */
static int task_vocab(const struct epar_task_cfg *tc, int *V)
{
    struct epar_task t;
    int st = epar_task_open(&t, tc);
    if (!st) *V = t.V;
    epar_task_close(&t);
    return st;
}

/* relative work of a cell: tokens x (weights + attention) per token */
static double cell_weight(const struct epar_train_cfg *t)
{
    double T = t->task.length, C = t->dim;
    return (double)t->optim.steps * t->batch * T * (12.0 * C * C + 2.0 * t->mlp * C + 4.0 * T * C) * t->layers;
}

int epar_bench_plan(const struct epar_bench_cfg *c, struct epar_bench_plan *plan)
{
    int S = c->b.n_seeds, M = c->n_mech, X = c->extrap.n_extra, nx = 0;
    for (int i = 0; i < c->n_tasks; i++)   /* the extrapolation study's own cells: after the grid's (tables index those) */
        for (int m = M; m < M + X; m++) nx += epar_bx_has_cell(c, i, m);
    plan->n = c->n_tasks * M * S + nx * S + 1;
    struct cost_design cd;
    cost_design(c, &cd);
    double cost_steps_least = (double)c->b.cost_repeats * cost_block_steps(&cd);
    plan->cells = calloc((size_t)plan->n, sizeof *plan->cells);
    if (!plan->cells) return epar_err_set(EPAR_ENOMEM, "out of memory planning the grid");
    int k = 0, kx = c->n_tasks * M * S;
    for (int i = 0; i <= c->n_tasks; i++) {
        struct epar_bench_cell probe = {i < c->n_tasks ? i : -1, 0, 0, c->b.mlp, 0, 0};
        struct epar_train_cfg t;
        epar_exp_benchmark_cell_cfg(c, &probe, &t);
        int V, st;
        if ((st = epar_exp_train_check(&t)) || (st = task_vocab(&t.task, &V))) return st;
        /* none's count is the reference; a mechanism beyond the tolerance gets the MLP width that brings it
         * closest (the count is linear in the width: slope measured from two counts) */
        size_t ref, n0, n1;
        t.mechanism = EPAR_MECH_NONE;
        if ((st = epar_exp_train_param_count(&t, V, &ref))) return st;
        for (int m = 0; m < M + X; m++) {
            if (m >= M && (i == c->n_tasks || !epar_bx_has_cell(c, i, m))) continue;
            struct epar_train_cfg u = t;
            u.mechanism = c->mech[m];
            u.mlp = c->b.mlp;
            if ((st = epar_exp_train_param_count(&u, V, &n0))) return st;
            double rel = fabs((double)n0 - (double)ref) / (double)ref;
            if (rel > c->param_tol && c->equalise_mlp && u.mlp > 1) {
                u.mlp = c->b.mlp - 1;
                if ((st = epar_exp_train_param_count(&u, V, &n1))) return st;
                double slope = (double)n0 - (double)n1;
                int mlp = c->b.mlp - (int)lround(((double)n0 - (double)ref) / slope);
                u.mlp = mlp < 1 ? 1 : mlp;
                if ((st = epar_exp_train_param_count(&u, V, &n0))) return st;
                rel = fabs((double)n0 - (double)ref) / (double)ref;
            }
            if (rel > c->param_tol) {
                epar_err_set(EPAR_ECHECK, "%s on %s has %zu parameters, %.2f%% from none's %zu (tolerance %g%%)",
                             epar_nnpos_name(u.mechanism), i < c->n_tasks ? c->tasks[i].id : "the cost task", n0,
                             100 * rel, ref, 100 * c->param_tol);
                epar_err_hint("raise param_tolerance or set equalise to 'mlp' in $.experiments.benchmark");
                return EPAR_ECHECK;
            }
            if (i == c->n_tasks) {
                plan->cost_mlp[m] = u.mlp;
                plan->cost_params[m] = n0;
            }
            int nseeds = i < c->n_tasks ? S : (m == 0 ? 1 : 0);   /* the cost cell: one for all mechanisms */
            for (int s = 0; s < nseeds; s++) {
                struct epar_bench_cell *cell = &plan->cells[i == c->n_tasks ? plan->n - 1 : m < M ? k++ : kx++];
                *cell = (struct epar_bench_cell){i < c->n_tasks ? i : -1, m, s, u.mlp, n0, 0};
                struct epar_train_cfg w;
                epar_exp_benchmark_cell_cfg(c, cell, &w);
                /* the cost cell: the steps of its least number of blocks (more when the intervals need them) */
                cell->weight = cell_weight(&w) * (i < c->n_tasks ? 1 : (double)cost_steps_least / (double)w.optim.steps);
            }
        }
    }
    return EPAR_OK;
}

void epar_exp_benchmark_plan_free(struct epar_bench_plan *plan)
{
    free(plan->cells);
    plan->cells = NULL;
    plan->n = 0;
}

/* ------------------------------------------------------------------------------------------------ */
/* cells                                                                                              */

/* ---- the cell files, as rows: cell.json is written from and read back into these records ---- */

/* a training cell: the final evaluation, the needle's accuracy by distance, lm's metric at other lengths */
struct cell_extrap {
    int length, defined;
    double value;
    long sequences;
};

struct train_cell {
    json_t *config;
    const char *task, *task_kind, *mechanism, *metric, *checkpoint;
    long seed, params, scored, sequences, steps;
    double value, eval_loss, tokens, chance, chance_se, seconds, step_seconds;
    double curve_metric, curve_loss, online_loss;   /* learning-curve means (curve_means); NaN in older cells */
    struct epar_inspect_summary attn;               /* what the trained heads attend to (epar inspect's summaries) */
    int have_attn;
    long *correct, *answers;   /* (T + 1) per needle distance */
    int n_correct, n_answers, n_extrap;
    struct cell_extrap extrap[EPAR_BENCH_MAX_EXTRAP];
    json_t *study;             /* the extrapolation study's numbers of this cell (bench_extrap), NULL: none */
};

#define CE struct cell_extrap
static const struct epar_field extrap_rows[] = {
    EPAR_FIELD_RANGE_(CE, "length", EPAR_FIELD_INT, length, 2, 65536, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_(CE, "value", EPAR_FIELD_DOUBLE, value, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_(CE, "defined", EPAR_FIELD_BOOL, defined, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_RANGE_(CE, "sequences", EPAR_FIELD_LONG, sequences, 0, 1e15, 0),
    EPAR_FIELD_END_};
#undef CE

/* the trained heads' summaries in a cell: epar inspect's, over TRAINED_ITEMS evaluation items */
#define TRAINED_ITEMS 16
#define AS struct epar_inspect_summary
static const struct epar_field attn_rows[] = {
    EPAR_FIELD_INT_(AS, "items", items, 0, 1 << 30, "evaluation items"),
    EPAR_FIELD_INT_(AS, "heads", heads, 0, 1 << 20, "layers x heads"),
    EPAR_FIELD_INT_(AS, "length", length, 0, 1 << 20, "sequence length"),
    EPAR_FIELD_(AS, "distance_spearman", EPAR_FIELD_DOUBLE, distance_spearman, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(AS, "distance_spearman_sd", EPAR_FIELD_DOUBLE, distance_spearman_sd, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(AS, "distance_ratio", EPAR_FIELD_DOUBLE, distance_ratio, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(AS, "first_share", EPAR_FIELD_DOUBLE, first_share, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(AS, "relevant_share", EPAR_FIELD_DOUBLE, relevant_share, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(AS, "relevant_uniform", EPAR_FIELD_DOUBLE, relevant_uniform, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(AS, "profile_spearman", EPAR_FIELD_DOUBLE, profile_spearman, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_END_};
#undef AS

#define TCL struct train_cell
#define LONG_(key, member) EPAR_FIELD_RANGE_(TCL, key, EPAR_FIELD_LONG, member, 0, 1e15, 0)
#define DISTANCES_(key, member, count) \
    EPAR_FIELD_LIST_(TCL, key, EPAR_FIELD_LLIST, member, count, 65537, EPAR_FIELD_OPTIONAL | EPAR_FIELD_ALLOC)
static const struct epar_field train_cell_rows[] = {
    EPAR_FIELD_(TCL, "config", EPAR_FIELD_JSON, config, 0),
    EPAR_FIELD_(TCL, "task", EPAR_FIELD_STRING, task, 0),
    EPAR_FIELD_(TCL, "task_kind", EPAR_FIELD_STRING, task_kind, 0),
    EPAR_FIELD_(TCL, "mechanism", EPAR_FIELD_STRING, mechanism, 0),
    LONG_("seed", seed),
    LONG_("params", params),
    EPAR_FIELD_(TCL, "metric", EPAR_FIELD_STRING, metric, 0),
    EPAR_FIELD_(TCL, "value", EPAR_FIELD_DOUBLE, value, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_(TCL, "eval_loss", EPAR_FIELD_DOUBLE, eval_loss, 0),
    /* sample efficiency: means over the learning curve (curve_means) */
    EPAR_FIELD_(TCL, "curve_metric", EPAR_FIELD_DOUBLE, curve_metric, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(TCL, "curve_loss", EPAR_FIELD_DOUBLE, curve_loss, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(TCL, "online_loss", EPAR_FIELD_DOUBLE, online_loss, EPAR_FIELD_OPTIONAL),
    LONG_("scored", scored),
    LONG_("sequences", sequences),
    LONG_("steps", steps),
    EPAR_FIELD_(TCL, "tokens", EPAR_FIELD_DOUBLE, tokens, 0),
    /* the best constant answer on the same items: what "learned nothing" looks like (absent: NaN) */
    EPAR_FIELD_(TCL, "chance", EPAR_FIELD_DOUBLE, chance, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(TCL, "chance_se", EPAR_FIELD_DOUBLE, chance_se, EPAR_FIELD_OPTIONAL),
    DISTANCES_("distance_correct", correct, n_correct),
    DISTANCES_("distance_scored", answers, n_answers),
    EPAR_FIELD_OLIST_(TCL, "extrapolation", extrap, n_extrap, EPAR_BENCH_MAX_EXTRAP, extrap_rows, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(TCL, "extrapolation_study", EPAR_FIELD_JSON, study, EPAR_FIELD_OPTIONAL),
    /* wall clock: not used by the tables except cost (which has its own cell) */
    EPAR_FIELD_(TCL, "seconds", EPAR_FIELD_DOUBLE, seconds, 0),
    EPAR_FIELD_(TCL, "train_step_seconds", EPAR_FIELD_DOUBLE, step_seconds, 0),
    EPAR_FIELD_(TCL, "checkpoint", EPAR_FIELD_STRING, checkpoint, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_BOOL_(TCL, "attention_measured", have_attn, "the attention summaries below were measured"),
    EPAR_FIELD_OBJ_(TCL, "attention", attn, attn_rows, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_END_};
#undef DISTANCES_
#undef LONG_
#undef TCL

/* the cost cell: every mechanism's timed steps, and each comparison's adjacent pairs */
struct cost_mech {
    const char *mechanism;
    long params;
    double bytes;
    double *step, *attention;   /* (n_step) thread CPU seconds of each timed step in order, and of its attention */
    int n_step, n_attention;
};

/* a comparison: `mechanism` against `against`, timed as pairs of one step of each, adjacent in time */
struct cost_pair {
    const char *mechanism, *against;
    int decides;                /* a comparison a cost claim reads: timed in every block, it decides when to stop */
    double *a, *b;              /* (n) CPU seconds of mechanism's and against's step of each pair */
    double *gen;                /* (n) the generation of models (0, 1, ...) each pair ran on */
    int n_a, n_b, n_gen;
};

struct cost_cell {
    json_t *config;
    const char *task, *clock, *blas_core, *design, *stopped;
    int length, batch, threads, blocks, generations, generation_blocks, n_mech, n_pair;
    double widest, target, cpu_seconds, setup_seconds, limit_seconds;
    struct cost_mech mech[EPAR_MECH_COUNT];
    struct cost_pair pair[EPAR_MECH_COUNT];
};

#define CM struct cost_mech
#define TIMES_(S, key, member, count, flags) \
    EPAR_FIELD_LIST_(S, key, EPAR_FIELD_DLIST, member, count, EPAR_BENCH_MAX_COST_STEPS, EPAR_FIELD_ALLOC | (flags))
static const struct epar_field cost_mech_rows[] = {
    EPAR_FIELD_(CM, "mechanism", EPAR_FIELD_STRING, mechanism, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_RANGE_(CM, "params", EPAR_FIELD_LONG, params, 0, 1e15, 0),
    EPAR_FIELD_(CM, "bytes", EPAR_FIELD_DOUBLE, bytes, 0),
    TIMES_(CM, "step_seconds", step, n_step, EPAR_FIELD_REQUIRED | EPAR_FIELD_EMPTY_OK),   /* empty: never its turn */
    TIMES_(CM, "attention_seconds", attention, n_attention, EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_END_};
#undef CM
#define CP struct cost_pair
static const struct epar_field cost_pair_rows[] = {
    EPAR_FIELD_(CP, "mechanism", EPAR_FIELD_STRING, mechanism, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_(CP, "against", EPAR_FIELD_STRING, against, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_(CP, "decides", EPAR_FIELD_BOOL, decides, 0),
    TIMES_(CP, "seconds", a, n_a, EPAR_FIELD_REQUIRED | EPAR_FIELD_EMPTY_OK),
    TIMES_(CP, "against_seconds", b, n_b, EPAR_FIELD_REQUIRED | EPAR_FIELD_EMPTY_OK),
    TIMES_(CP, "generation", gen, n_gen, EPAR_FIELD_REQUIRED | EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_END_};
#undef CP
#undef TIMES_
#define CC struct cost_cell
static const struct epar_field cost_cell_rows[] = {
    EPAR_FIELD_(CC, "config", EPAR_FIELD_JSON, config, 0),
    EPAR_FIELD_(CC, "task", EPAR_FIELD_STRING, task, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_RANGE_(CC, "length", EPAR_FIELD_INT, length, 1, 1 << 30, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_RANGE_(CC, "batch", EPAR_FIELD_INT, batch, 1, 1 << 30, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_(CC, "threads", EPAR_FIELD_INT, threads, 0),
    EPAR_FIELD_(CC, "clock", EPAR_FIELD_STRING, clock, 0),
    EPAR_FIELD_(CC, "blas_core", EPAR_FIELD_STRING, blas_core, 0),
    EPAR_FIELD_(CC, "design", EPAR_FIELD_STRING, design, 0),
    EPAR_FIELD_(CC, "blocks", EPAR_FIELD_INT, blocks, 0),
    EPAR_FIELD_(CC, "generations", EPAR_FIELD_INT, generations, 0),
    EPAR_FIELD_(CC, "generation_blocks", EPAR_FIELD_INT, generation_blocks, 0),
    EPAR_FIELD_(CC, "stopped", EPAR_FIELD_STRING, stopped, 0),
    EPAR_FIELD_(CC, "cpu_seconds", EPAR_FIELD_DOUBLE, cpu_seconds, 0),
    EPAR_FIELD_(CC, "setup_cpu_seconds", EPAR_FIELD_DOUBLE, setup_seconds, 0),
    EPAR_FIELD_(CC, "limit_seconds", EPAR_FIELD_DOUBLE, limit_seconds, 0),
    EPAR_FIELD_(CC, "widest_halfwidth", EPAR_FIELD_DOUBLE, widest, EPAR_FIELD_OPTIONAL),   /* absent: an interval not yet defined (one generation) */
    EPAR_FIELD_(CC, "target_halfwidth", EPAR_FIELD_DOUBLE, target, 0),
    EPAR_FIELD_OLIST_(CC, "mechanisms", mech, n_mech, EPAR_MECH_COUNT, cost_mech_rows, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_OLIST_(CC, "pairs", pair, n_pair, EPAR_MECH_COUNT, cost_pair_rows, EPAR_FIELD_REQUIRED | EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_END_};
#undef CC

/* what the cost cell does (in its configuration: a cell of an earlier design is redone) */
#define COST_DESIGN "adjacent step pairs in generations of fresh models; mean of the generations' median log ratios, t interval"

/* the configuration a cell folder was run with (whichever its kind) */
struct cell_head {
    json_t *config;
};
static const struct epar_field cell_head_rows[] = {
    EPAR_FIELD_(struct cell_head, "config", EPAR_FIELD_JSON, config, 0),
    EPAR_FIELD_END_};

/* a cell's configuration: a training cell's is its run's (train's rows) with the benchmark's evaluation; the cost
 * cell's every mechanism's (it times them all) */
struct cell_config {
    const char *task;
    double noise;
    int shuffle, eval_sequences, n_extrap, extrap_tokens;
    int extrap[EPAR_BENCH_MAX_EXTRAP];
    json_t *mechanisms;
    json_t *study;   /* the extrapolation study's settings of the cell (NULL: none) */
    const char *design;
    int repeats, max_repeats, generation;
    double halfwidth, seconds;
};
#define CF struct cell_config
static const struct epar_field cell_config_rows[] = {
    EPAR_FIELD_(CF, "benchmark_task", EPAR_FIELD_STRING, task, 0),
    EPAR_FIELD_(CF, "noise", EPAR_FIELD_DOUBLE, noise, 0),
    EPAR_FIELD_(CF, "shuffle", EPAR_FIELD_BOOL, shuffle, 0),
    EPAR_FIELD_(CF, "eval_sequences", EPAR_FIELD_INT, eval_sequences, 0),
    /* lm cells in order only */
    EPAR_FIELD_LIST_(CF, "extrapolation", EPAR_FIELD_ILIST, extrap, n_extrap, EPAR_BENCH_MAX_EXTRAP, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(CF, "extrapolation_tokens", EPAR_FIELD_INT, extrap_tokens, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(CF, "extrapolation_study", EPAR_FIELD_JSON, study, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_END_};
static const struct epar_field cost_config_rows[] = {
    EPAR_FIELD_(CF, "mechanisms", EPAR_FIELD_JSON, mechanisms, 0),
    EPAR_FIELD_(CF, "design", EPAR_FIELD_STRING, design, 0),
    EPAR_FIELD_(CF, "repeats", EPAR_FIELD_INT, repeats, 0),
    EPAR_FIELD_(CF, "max_repeats", EPAR_FIELD_INT, max_repeats, 0),
    EPAR_FIELD_(CF, "generation", EPAR_FIELD_INT, generation, 0),
    EPAR_FIELD_(CF, "halfwidth", EPAR_FIELD_DOUBLE, halfwidth, 0),
    EPAR_FIELD_(CF, "seconds", EPAR_FIELD_DOUBLE, seconds, 0),
    EPAR_FIELD_END_};
#undef CF

static json_t *cell_config_json(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan,
                                const struct epar_bench_cell *cell)
{
    struct epar_train_cfg t;
    struct cell_config x = {.design = COST_DESIGN, .repeats = c->b.cost_repeats, .max_repeats = c->b.cost_max_repeats,
                            .generation = c->b.cost_generation,
                            .halfwidth = c->b.cost_halfwidth, .seconds = c->b.cost_seconds, .extrap_tokens = -1};
    if (cell->task >= 0) {
        epar_exp_benchmark_cell_cfg(c, cell, &t);
        x.task = c->tasks[cell->task].id;
        x.noise = t.task.noise;
        x.shuffle = t.task.shuffle;
        x.eval_sequences = t.task.id == EPAR_TASK_LM ? c->b.lm_eval_sequences : c->b.eval_sequences;
        if (t.task.id == EPAR_TASK_LM && !t.task.shuffle) {
            x.n_extrap = c->b.n_extrap;
            memcpy(x.extrap, c->b.extrap, sizeof x.extrap);
            x.extrap_tokens = c->b.extrap_tokens;
        }
        json_t *j = epar_exp_train_cfg_json(&t);
        x.study = epar_bx_cell_config(c, cell);
        json_t *r = j ? epar_fields_json(cell_config_rows, &x, j) : NULL;
        json_decref(x.study);
        return r;
    }
    x.mechanisms = json_array();
    for (int m = 0; x.mechanisms && m < c->n_mech; m++) {
        struct epar_bench_cell mc = *cell;
        mc.mech = m;
        mc.mlp = plan->cost_mlp[m];
        epar_exp_benchmark_cell_cfg(c, &mc, &t);
        json_array_append_new(x.mechanisms, epar_exp_train_cfg_json(&t));
    }
    json_t *j = x.mechanisms ? epar_fields_json(cost_config_rows, &x, NULL) : NULL;
    json_decref(x.mechanisms);
    return j;
}

/* does the cell folder hold this configuration? 1 yes, 0 absent, -1 another configuration */
int epar_exp_benchmark_cell_state(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, int k, const char *root)
{
    char dir[512], path[4800];
    epar_exp_benchmark_cell_dir(c, &plan->cells[k], dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%s/cell.json", root, dir);
    struct cell_head h = {NULL};
    json_t *doc = NULL;
    if (epar_fields_load(path, "cell file", cell_head_rows, &h, &doc)) {
        epar_err_clear();   /* absent or unreadable: the cell is run */
        return 0;
    }
    json_t *want = cell_config_json(c, plan, &plan->cells[k]), *ms = json_object_get(h.config, "mechanisms"), *e;
    size_t i;
    /* a cell of an epar before one parameter namespace: the study's series and the position in today's form */
    json_array_foreach(json_object_get(json_object_get(h.config, "extrapolation_study"), "series"), i, e) {
        enum epar_mech_id as;
        double mp[EPAR_MECH_MAX_PARAMS];
        const char *name = json_string_value(json_object_get(e, "as"));
        if (name && !json_object_get(e, "mechanism_params") && !epar_nnpos_find(name, &as) &&
            epar_exp_train_cfg_old_params(h.config, as, mp))
            json_object_set_new(e, "mechanism_params", epar_exp_train_params_json(as, mp));
        epar_err_clear();
    }
    epar_exp_train_cfg_upgrade(h.config);
    json_array_foreach(ms, i, e) epar_exp_train_cfg_upgrade(e);
    int same = json_equal(h.config, want);
    json_decref(want);
    json_decref(doc);
    return same ? 1 : -1;
}

struct group_acc {
    long *correct, *scored;     /* (T) per needle distance */
    const struct epar_task *task;
};

static void on_eval_item(void *ctx, long item, long correct, long scored)
{
    struct group_acc *g = ctx;
    int d = epar_task_eval_group(g->task, item);
    g->correct[d] += correct;
    g->scored[d] += scored;
}

/* Sample efficiency from a run's learning curve (rows after step 0): the mean of the evaluation metric and of the
 * evaluation loss over the evaluation points, and the online (prequential) loss: the mean training loss over every
 * step, each measured on a fresh batch before the step learned from it, i.e. the code length per scored token of the
 * training stream. Continuous where a final accuracy is bimodal or saturated: a seed that learns later scores worse. */
static void curve_means(const struct epar_train_run *r, double *metric, double *loss, double *online)
{
    double sm = 0, sl = 0, so = 0, w = 0;
    long prev = 0;
    int n = 0;
    for (int i = 0; i < r->rows; i++) {
        const double *row = r->curve + (size_t)i * EPAR_TRAIN_CURVE_COLS;   /* EPAR_TRAIN_CURVE_HEADER */
        long step = (long)row[0];
        if (step <= 0) continue;
        sm += row[4];
        sl += row[3];
        so += row[2] * (double)(step - prev);
        w += (double)(step - prev);
        prev = step;
        n++;
    }
    *metric = n ? sm / n : NAN;
    *loss = n ? sl / n : NAN;
    *online = w > 0 ? so / w : NAN;
}

/* train one cell, evaluate, write cell.json + learning_curve.csv into an epar_out staging folder */
static int run_training_cell(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, int k, struct epar_out *o,
                             volatile sig_atomic_t *stop)
{
    const struct epar_bench_cell *cell = &plan->cells[k];
    struct epar_train_cfg t;
    epar_exp_benchmark_cell_cfg(c, cell, &t);
    struct epar_train_run r;
    int st = epar_exp_train_setup(&r, &t);
    struct train_cell x = {.config = NULL};
    if (st) goto done;
    r.stop = stop;
    if ((st = epar_exp_train_loop(&r))) goto done;
    int T = t.task.length;
    x.correct = calloc((size_t)T + 1, sizeof *x.correct);
    x.answers = calloc((size_t)T + 1, sizeof *x.answers);
    if (!x.correct || !x.answers) {
        st = epar_err_set(EPAR_ENOMEM, "out of memory evaluating a cell");
        goto done;
    }
    struct group_acc g = {x.correct, x.answers, &r.task};
    int needle = t.task.id == EPAR_TASK_NEEDLE;
    if (needle) {
        r.eval_item = on_eval_item;
        r.eval_ctx = &g;
        x.n_correct = x.n_answers = T;
    }
    long nev = t.task.id == EPAR_TASK_LM ? c->b.lm_eval_sequences : 0;   /* lm: windows spread over the held-out text */
    if ((st = epar_exp_train_evaluate(&r, nev, &r.final))) goto done;
    r.have_final = 1;
    r.eval_item = NULL;
    if (t.task.id == EPAR_TASK_LM && !t.task.shuffle)
        for (int e = 0; e < c->b.n_extrap && !st; e++) {
            int L = c->b.extrap[e], defined;
            struct epar_train_eval ev;
            long n = c->b.extrap_tokens / L > 0 ? c->b.extrap_tokens / L : 1;
            st = epar_exp_train_evaluate_at(&r, L, n, &ev, &defined);
            x.extrap[x.n_extrap++] = (struct cell_extrap){L, defined, defined ? ev.metric : 0.0, defined ? ev.sequences : 0};
        }
    if (!st) st = epar_bx_cell_run(c, cell, &r, &x.study);   /* the extrapolation study's evaluations */
    if (st) goto done;
    struct epar_table *curve = epar_exp_train_curve_table(&r);
    st = curve ? epar_csv_write(curve, epar_out_path(o, "learning_curve.csv"))
               : epar_err_set(EPAR_ENOMEM, "out of memory writing a learning curve");
    epar_csv_free(curve);
    /* the final weights: what the trained heads attend to (epar inspect's summaries, every seed: the trained-attention
     * claims' spread is across trained models), and kept for epar inspect for the first seed (its folder is named by
     * the benchmark's task id) */
    if (!st) {
        snprintf(r.label, sizeof r.label, "%s", c->tasks[cell->task].id);
        r.weights_only = 1;   /* a cell is never resumed: no optimiser moments */
        char ck[sizeof o->path];
        snprintf(ck, sizeof ck, "%s", epar_out_path(o, "checkpoint.bin"));
        st = epar_exp_train_checkpoint(&r, ck);
        struct epar_inspect ix;
        if (!st && !(st = epar_inspect_open(&ix, ck, c->cache_dir))) {
            st = epar_inspect_summarise(&ix, TRAINED_ITEMS, &x.attn);
            epar_inspect_free(&ix);
            x.have_attn = !st;
        }
        if (!st && cell->seed == 0) x.checkpoint = "checkpoint.bin";
        else if (!st && unlink(ck) != 0) st = epar_err_set(EPAR_EIO, "cannot remove '%s': %s", ck, strerror(errno));
    }
    if (st) goto done;
    x.config = cell_config_json(c, plan, cell);
    x.task = c->tasks[cell->task].id;
    x.task_kind = epar_task_name(t.task.id);
    x.mechanism = epar_nnpos_name(t.mechanism);
    x.metric = r.task.info->metric;
    x.seed = (long)t.seed;
    x.params = (long)r.model.n_params;
    x.scored = r.final.scored;
    x.sequences = r.final.sequences;
    x.steps = r.step;
    x.value = r.final.metric;
    x.eval_loss = r.final.loss;
    curve_means(&r, &x.curve_metric, &x.curve_loss, &x.online_loss);
    x.tokens = r.tokens;
    x.chance = r.final.chance;
    x.chance_se = r.final.chance_se;
    x.seconds = r.seconds;
    x.step_seconds = r.step_seconds;
    st = x.config ? epar_fields_save(epar_out_path(o, "cell.json"), train_cell_rows, &x, NULL, EPAR_SAVE_EXACT)
                  : epar_err_set(EPAR_ENOMEM, "out of memory writing a cell");
done:
    json_decref(x.config);
    json_decref(x.study);
    free(x.correct);
    free(x.answers);
    epar_exp_train_free(&r);
    return st;
}

static int mech_index(const struct epar_bench_cfg *c, enum epar_mech_id id);
static int is_epar(enum epar_mech_id id) { return id == EPAR_MECH_EPAR_BASIC || id == EPAR_MECH_EPAR_ENHANCED; }

/* a comparison's overhead from its n pairs, measured on generations gen (fresh set-ups of the models): per
 * generation the median of its pairs' log ratios log(a / b), their mean with its t interval across the generations
 * at the level (epar_stats_group_medians), back on the scale of ratio - 1; hw is half the interval's width; sd: of
 * the per-pair ratios - 1 (descriptive); d: scratch (n) */
struct overhead {
    double est, lo, hi, hw, sd;
    int n, groups;
};
static struct overhead pair_overhead(const double *a, const double *b, const double *gen, int n, double level, double *d)
{
    struct overhead o = {NAN, NAN, NAN, NAN, NAN, n, 0};
    double mean, lo, hi;
    for (int i = 0; i < n; i++) d[i] = a[i] / b[i] - 1;
    epar_stats_mean_sd(d, (size_t)n, &mean, &o.sd);
    for (int i = 0; i < n; i++) d[i] = log(a[i] / b[i]);
    epar_stats_group_medians(d, gen, n, level, &mean, &lo, &hi, &o.groups);
    o.est = expm1(mean);
    o.lo = expm1(lo);
    o.hi = expm1(hi);
    o.hw = (o.hi - o.lo) / 2;
    return o;
}

static struct overhead cost_pair_overhead(const struct cost_pair *p, double level, double *scratch)
{
    int n = p->n_a < p->n_b ? p->n_a : p->n_b;
    return pair_overhead(p->a, p->b, p->gen, n < p->n_gen ? n : p->n_gen, level, scratch);
}

/* the widest half-width of the deciding comparisons (+inf while one has no interval yet; 0 without any) */
static double cost_widest(const struct cost_cell *x, double level, double *scratch)
{
    double widest = 0;
    for (int k = 0; k < x->n_pair; k++)
        if (x->pair[k].decides) {
            struct overhead o = cost_pair_overhead(&x->pair[k], level, scratch);
            widest = fmax(widest, isfinite(o.hw) ? o.hw : INFINITY);
        }
    return widest;
}

/* one training step of r, its thread CPU seconds and those of its attention */
static int cost_step(struct epar_train_run *r, struct cost_mech *m)
{
    double c0 = r->step_cpu_seconds, a0 = r->model.attn_cpu_seconds;
    r->until = r->step + 1;
    int st = epar_exp_train_loop(r);
    if (st) return st;
    m->step[m->n_step++] = r->step_cpu_seconds - c0;
    m->attention[m->n_attention++] = r->model.attn_cpu_seconds - a0;
    return EPAR_OK;
}

/* the cost cell: generations of freshly set up models (each model's first step left untimed; the models of the
 * comparisons in turn are set up once), cost_generation blocks each; a block's single steps (cost_block) put each comparison's two steps next to each other, so both see
 * the same state of the machine (other processes' load drifts over seconds; neighbouring steps' times correlate),
 * each step timed in the thread's CPU time (the cell runs on one thread: time other processes hold the core does
 * not count) with the share spent in the position mechanism and attention. Fresh models each generation, set up in
 * a rotating order: where a model's memory lands shifts its speed by up to about 1 % for as long as it lives (two
 * models of the same mechanism differed by that much), so one set-up would give every pair of a run the same bias;
 * over generations it varies and the interval (pair_overhead) includes it. Generations run until the interval of
 * every deciding comparison's overhead is at most cost_halfwidth wide (at least cost_repeats blocks), or
 * cost_max_repeats blocks, or cost_seconds CPU seconds (set-ups included). The stop looks at the intervals' width
 * only, never at where they lie, so it does not push them towards a threshold. */
static int run_cost_cell(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, int k, struct epar_out *o,
                         volatile sig_atomic_t *stop)
{
    int M = c->n_mech, Bmax = c->b.cost_max_repeats, GB = c->b.cost_generation, st = EPAR_OK;
    struct cost_design d;
    cost_design(c, &d);
    struct cost_cell x = {.task = epar_task_name(c->b.cost_task), .length = c->b.cost_length, .batch = c->b.batch,
                          .threads = 1, .clock = "thread CPU time", .blas_core = epar_blas_core(), .design = COST_DESIGN,
                          .stopped = "blocks", .widest = NAN, .target = c->b.cost_halfwidth, .generation_blocks = GB,
                          .limit_seconds = c->b.cost_seconds, .n_mech = M, .n_pair = d.n_pair};
    size_t cap = EPAR_BENCH_MAX_COST_STEPS;
    struct epar_train_run *runs = calloc((size_t)M, sizeof *runs);
    double *store = calloc((size_t)M * 2 * cap + (size_t)d.n_pair * 3 * Bmax + Bmax, sizeof *store), *scratch = store;
    if (!runs || !store) {
        free(runs);
        free(store);
        return epar_err_set(EPAR_ENOMEM, "out of memory timing the mechanisms");
    }
    for (int m = 0; m < M; m++, scratch += 2 * cap)
        x.mech[m] = (struct cost_mech){epar_nnpos_name(c->mech[m]), 0, 0, scratch, scratch + cap, 0, 0};
    for (int p = 0; p < d.n_pair; p++, scratch += 3 * (size_t)Bmax)
        x.pair[p] = (struct cost_pair){epar_nnpos_name(c->mech[d.unit[p].a]), epar_nnpos_name(c->mech[d.unit[p].b]),
                                       d.decides[p], scratch, scratch + Bmax, scratch + 2 * (size_t)Bmax, 0, 0, 0};
    int seq[COST_MAX_SEQ], pa[2 * EPAR_MECH_COUNT], pb[2 * EPAR_MECH_COUNT], prev = -1, full = 0;
    double t[COST_MAX_SEQ];
    while (!st && x.blocks < Bmax && !full) {
        /* a generation: every model set up afresh (in an order rotating with the generation), its first step (the
         * activations' pages touched for the first time) untimed */
        int g = x.generations;
        double c0 = epar_nn_thread_cpu();
        for (int i = 0; i < M && !st; i++) {
            int m = (i + g) % M;
            if (g && !d.fresh[m]) continue;
            epar_exp_train_free(&runs[m]);
            memset(&runs[m], 0, sizeof runs[m]);
            struct epar_train_cfg tc;
            struct epar_bench_cell mc = plan->cells[k];
            mc.mech = m;
            mc.mlp = plan->cost_mlp[m];
            epar_exp_benchmark_cell_cfg(c, &mc, &tc);
            struct epar_train_run *r = &runs[m];
            if ((st = epar_exp_train_setup(r, &tc))) break;
            r->stop = stop;
            r->until = 1;
            st = epar_exp_train_loop(r);
            r->model.time_attention = 1;
            x.mech[m].params = (long)r->model.n_params;
            x.mech[m].bytes = epar_exp_train_bytes(&tc, r->task.V);
        }
        x.setup_seconds += epar_nn_thread_cpu() - c0;
        for (int b = 0; b < GB && !st && x.blocks < Bmax; b++) {
            for (int m = 0; m < M; m++) full |= x.mech[m].n_step > EPAR_BENCH_MAX_COST_STEPS - COST_MAX_SEQ;
            if (full) break;
            int n = cost_block(&d, x.blocks, prev, seq, pa, pb);
            prev = seq[n - 1];
            for (int i = 0; i < n && !st; i++) {
                struct cost_mech *m = &x.mech[seq[i]];
                if (!(st = cost_step(&runs[seq[i]], m))) x.cpu_seconds += t[i] = m->step[m->n_step - 1];
            }
            if (st) break;
            for (int p = 0; p < d.n_pair; p++)
                if (pa[p] >= 0) {
                    struct cost_pair *q = &x.pair[p];
                    q->a[q->n_a++] = t[pa[p]];
                    q->b[q->n_b++] = t[pb[p]];
                    q->gen[q->n_gen++] = g;
                }
            x.blocks++;
        }
        if (st) break;
        x.generations++;
        x.widest = cost_widest(&x, c->level, scratch);
        /* ... and not before every mechanism the claims do not read has had its turn (a row of its own) */
        if (x.blocks >= c->b.cost_repeats && x.blocks >= 2 * d.n_oth && x.widest <= c->b.cost_halfwidth) {
            x.stopped = "halfwidth";
            break;
        }
        if (x.cpu_seconds + x.setup_seconds >= c->b.cost_seconds) {
            x.stopped = "seconds";
            break;
        }
    }
    for (int m = 0; m < M; m++) epar_exp_train_free(&runs[m]);   /* (safe on one never set up: zeroed) */
    free(runs);
    if (!st) {
        x.config = cell_config_json(c, plan, &plan->cells[k]);
        st = x.config ? epar_fields_save(epar_out_path(o, "cell.json"), cost_cell_rows, &x, NULL, EPAR_SAVE_EXACT)
                      : epar_err_set(EPAR_ENOMEM, "out of memory writing a cell");
    }
    json_decref(x.config);
    free(store);
    return st;
}

int epar_exp_benchmark_cell_run(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, int k, const char *root,
                        volatile sig_atomic_t *stop)
{
    char dir[512], parent[4800];
    epar_exp_benchmark_cell_dir(c, &plan->cells[k], dir, sizeof dir);
    snprintf(parent, sizeof parent, "%s/%s", root, dir);
    char *slash = strrchr(parent, '/');
    *slash = '\0';
    struct epar_out o;
    int st = epar_out_begin(&o, parent, slash + 1);
    if (st) return st;
    /* a folder of another configuration (the budget or protocol changed): its files are replaced */
    st = plan->cells[k].task >= 0 ? run_training_cell(c, plan, k, &o, stop) : run_cost_cell(c, plan, k, &o, stop);
    if (st) {
        epar_out_abort(&o);
        return st;
    }
    return epar_out_commit(&o);
}

static int copy_file(const char *from, const char *to)
{
    FILE *f = fopen(from, "rb");
    if (!f) return epar_err_set(EPAR_EIO, "cannot read '%s': %s", from, strerror(errno));
    struct epar_out_file w;
    FILE *g = epar_out_fopen(&w, to);
    if (!g) {
        fclose(f);
        return EPAR_EIO;
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0 && fwrite(buf, 1, n, g) == n) {}
    int rerr = ferror(f);
    fclose(f);
    if (rerr) {
        epar_out_fdiscard(&w);
        return epar_err_set(EPAR_EIO, "cannot read '%s'", from);
    }
    return epar_out_fclose(&w);
}

int epar_exp_benchmark_cell_copy(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell, const char *from_root,
                         const char *root)
{
    char dir[512], a[4800], b[4800], fa[5000], fb[5000];
    epar_exp_benchmark_cell_dir(c, cell, dir, sizeof dir);
    snprintf(a, sizeof a, "%s/%s", from_root, dir);
    snprintf(b, sizeof b, "%s/%s", root, dir);
    if (epar_out_mkdir_p(b) != 0) return epar_err_set(EPAR_EIO, "cannot create '%s': %s", b, strerror(errno));
    /* cell.json last: it marks the cell done; checkpoint.bin only where the cell kept one (the first seed) */
    static const char *const files[] = {"learning_curve.csv", "checkpoint.bin", "cell.json"};
    for (int i = 0; i < 3; i++) {
        snprintf(fa, sizeof fa, "%s/%s", a, files[i]);
        snprintf(fb, sizeof fb, "%s/%s", b, files[i]);
        if ((cell->task < 0 && i < 2) || (i == 1 && access(fa, F_OK) != 0)) continue;
        int st = copy_file(fa, fb);
        if (st) return st;
    }
    return EPAR_OK;
}


/* ------------------------------------------------------------------------------------------------ */
/* tables                                                                                             */

/* the numbers of every training cell, read back from the cell files */
struct grid {
    int NT, M, S;
    double *value;          /* (NT, M, S) the task's primary metric (the comparisons' and claims') */
    double *cand[EPAR_BENCH_NPRIMARY];   /* (NT, M, S) every candidate metric; cand[EPAR_BENCH_FINAL] is the final one */
    double *chance;         /* (NT, M, S) the best constant answer's metric on the cell's evaluation items (NaN: a
                             * cell written before epar recorded it) */
    double *chance_se;      /* (NT, M, S) its standard error */
    struct train_cell *cell;   /* (plan->n) the training cells' files (the last cell is the cost cell's) */
    json_t **doc;           /* (plan->n) the documents they were read from (their strings) */
    struct cost_cell cost;
};

/* "learned": a mechanism whose mean metric is beyond the best constant answer's by more than LEARNED_Z of that
 * answer's standard errors on the evaluation items, in the task's better direction. A proxy comparison on a
 * task no mechanism learned compares models that all answer like a constant: it says nothing about EPAR. */
#define LEARNED_Z 3.0

static size_t gi(const struct grid *g, int t, int m, int s) { return ((size_t)t * g->M + m) * g->S + s; }
static double *gv(const struct grid *g, int t, int m, int s) { return g->value + gi(g, t, m, s); }
/* the final metric: what "learned" and the sanity checks compare with the chance level */
static double *gf(const struct grid *g, int t, int m, int s) { return g->cand[EPAR_BENCH_FINAL] + gi(g, t, m, s); }

/* paired comparison across seeds of per-seed relative differences sgn (x_s - y_s) / |mean y| (lib/stats: their mean,
 * the relative improvement, its sd, t, p, interval and detectable effect); n = 0 when mean y is 0 or not finite */
static struct epar_stats_paired paired_test(const double *x, const double *y, int n, int higher_is_better, double level)
{
    struct epar_stats_paired r;
    double ym, ysd, d[EPAR_MAX_SEEDS] = {0};
    epar_stats_mean_sd(y, n, &ym, &ysd);
    if (!(fabs(ym) > 0) || !isfinite(ym)) n = 0;
    for (int i = 0; i < n; i++) d[i] = (higher_is_better ? 1 : -1) * (x[i] - y[i]) / fabs(ym);
    epar_stats_paired(d, n, level, &r);
    return r;
}

static int mech_index(const struct epar_bench_cfg *c, enum epar_mech_id id)
{
    for (int m = 0; m < c->n_mech; m++)
        if (c->mech[m] == id) return m;
    return -1;
}

/* the best baseline of task t: the non-EPAR mechanism with the best mean (-1 if none) */
static int best_baseline(const struct epar_bench_cfg *c, const struct grid *g, int t, int hib)
{
    int best = -1;
    double bm = NAN, sd;
    for (int m = 0; m < c->n_mech; m++) {
        if (is_epar(c->mech[m])) continue;
        double mean;
        epar_stats_mean_sd(gv(g, t, m, 0), g->S, &mean, &sd);
        if (best < 0 || (hib ? mean > bm : mean < bm)) {
            best = m;
            bm = mean;
        }
    }
    return best;
}

/* is higher better: for the task's final metric (task_hib), for candidate k, and for its primary (prim_hib) */
static int task_hib(const struct epar_bench_cfg *c, int t) { return epar_task_table[c->tasks[t].task.id].higher_is_better; }
static int cand_hib(const struct epar_bench_cfg *c, int t, int k)
{
    return (k == EPAR_BENCH_FINAL || k == EPAR_BENCH_CURVE) && task_hib(c, t);
}
static int prim_hib(const struct epar_bench_cfg *c, int t) { return cand_hib(c, t, c->tasks[t].primary); }

/* task t's chance level and its se (means over the task's cells), and how many mechanisms learned it (-1:
 * unknown, cells without a chance level) */
static int task_learned(const struct epar_bench_cfg *c, const struct grid *g, int t, double *chance, double *se)
{
    size_t n = (size_t)g->M * g->S, off = (size_t)t * n;
    double sd;
    epar_stats_mean_sd(g->chance + off, (int)n, chance, &sd);
    epar_stats_mean_sd(g->chance_se + off, (int)n, se, &sd);
    if (!isfinite(*chance) || !isfinite(*se)) return -1;
    int hib = task_hib(c, t), learned = 0;
    for (int m = 0; m < g->M; m++) {
        double mean;
        epar_stats_mean_sd(gf(g, t, m, 0), g->S, &mean, &sd);
        learned += hib ? mean > *chance + LEARNED_Z * *se : mean < *chance - LEARNED_Z * *se;
    }
    return learned;
}

static void set_num(struct epar_table *t, const char *col, double v)
{
    int k = epar_csv_col(t, col);
    if (k >= 0 && t->nrows > 0) t->cells[(t->nrows - 1) * (size_t)t->ncols + k].v = v;
}

#define CMP_N 5
static const char *const cmp_names[CMP_N] = {"basic_vs_best", "enhanced_vs_best", "enhanced_vs_basic", "basic_vs_none",
                                             "enhanced_vs_none"};

/* x and y mechanisms of comparison k for task t (-1: not in the grid) */
static void cmp_pair(const struct epar_bench_cfg *c, int k, int best, int *x, int *y)
{
    int b = mech_index(c, EPAR_MECH_EPAR_BASIC), e = mech_index(c, EPAR_MECH_EPAR_ENHANCED),
        n = mech_index(c, EPAR_MECH_NONE);
    int xs[CMP_N] = {b, e, e, b, e}, ys[CMP_N] = {best, best, b, n, n};
    *x = xs[k];
    *y = ys[k];
}

/* ---- EPAR against each baseline, pre-registered: no best baseline picked after the results ---- */


/* one EPAR form x against baseline y on task t, paired by seed: the relative improvement, its two-sided interval at
 * the audit's level and the detectable effect of that paired t-test (paired_test), and its Holm-adjusted p across
 * the baselines (versus_all) */
struct versus {
    struct epar_stats_paired pr;
    double p_holm;
};

static struct versus versus(const struct epar_bench_cfg *c, const struct grid *g, int t, int x, int y)
{
    return (struct versus){paired_test(gv(g, t, x, 0), gv(g, t, y, 0), g->S, prim_hib(c, t), c->level), NAN};
}

/* EPAR mechanism x against every baseline of task t (vs[m] for baseline m; NaN rows for the EPAR mechanisms) */
static void versus_all(const struct epar_bench_cfg *c, const struct grid *g, int t, int x, struct versus *vs)
{
    double p[EPAR_MECH_COUNT] = {0}, adj[EPAR_MECH_COUNT];
    for (int m = 0; m < c->n_mech; m++) {
        if (is_epar(c->mech[m])) epar_stats_paired(NULL, 0, c->level, &vs[m].pr);
        else vs[m] = versus(c, g, t, x, m);
        p[m] = is_epar(c->mech[m]) ? NAN : vs[m].pr.p;
    }
    epar_stats_holm(p, adj, c->n_mech);
    for (int m = 0; m < c->n_mech; m++) vs[m].p_holm = adj[m];
}

/* comparisons.csv: one row per task, EPAR form and baseline */
static struct epar_table *comparisons_table(const struct epar_bench_cfg *c, const struct grid *g)
{
    struct epar_table *t = epar_csv_new("task,epar,baseline,seeds,rel,rel_sd,lo,hi,t,p,p_holm,mde,better");
    static const enum epar_mech_id ep[2] = {EPAR_MECH_EPAR_BASIC, EPAR_MECH_EPAR_ENHANCED};
    for (int i = 0; t && i < c->n_tasks; i++)
        for (int e = 0; e < 2; e++) {
            int x = mech_index(c, ep[e]);
            if (x < 0) continue;
            struct versus vs[EPAR_MECH_COUNT];
            versus_all(c, g, i, x, vs);
            for (int m = 0; m < c->n_mech; m++) {
                if (is_epar(c->mech[m])) continue;
                const struct versus *v = &vs[m];
                const char *better = v->pr.lo > 0 ? "epar" : v->pr.mean < 0 && v->p_holm < 1 - c->level ? "baseline" : "";
                if (epar_csv_append(t, "sssidddddddds", c->tasks[i].id, epar_nnpos_name(ep[e]), epar_nnpos_name(c->mech[m]),
                                    g->S, v->pr.mean, v->pr.sd, v->pr.lo, v->pr.hi, v->pr.t, v->pr.p, v->p_holm,
                                    v->pr.mde, better)) {
                    epar_csv_free(t);
                    return NULL;
                }
            }
        }
    return t;
}

/* main_table.csv's summary of the comparisons of form `name` (EPAR mechanism x) on task i, what the audit's beats_all
 * rule reads: the smallest improvement over the baselines (the estimate of "x beats every baseline": its worst
 * comparison) with the smallest lower and upper ends of the intervals (lower end > 0: x beats every baseline at the
 * level; NaN when a comparison has no spread, so the intersection-union test cannot succeed), the smallest
 * Holm-adjusted p of a baseline better than x, the smallest upper end at the Bonferroni-adjusted level
 * 1 - (1 - level) / baselines (below a reported gain: the gain is excluded for some baseline), how many baselines x
 * beats, how many beat it, how many comparisons have no spread, and the detectable effect of the verdict's test: the
 * largest, over the baselines, effect at which the intersection-union test over all of them succeeds with 80 % power
 * (lib/stats, union bound) */
static void versus_summary(const struct epar_bench_cfg *c, const struct grid *g, struct epar_table *t, int i, int x,
                           const char *name)
{
    struct versus vs[EPAR_MECH_COUNT];
    versus_all(c, g, i, x, vs);
    int beats = 0, beaten = 0, n = 0, flat = 0;
    for (int m = 0; m < c->n_mech; m++) n += !is_epar(c->mech[m]);
    if (!n) return;
    double min_rel = INFINITY, min_lo = INFINITY, min_hi = INFINITY, holm_p = NAN, mde = -INFINITY, nonsup = INFINITY;
    double qa = g->S > 1 ? epar_stats_quantile(1 - (1 - c->level) / n, g->S - 1) : NAN;
    for (int m = 0; m < c->n_mech; m++) {
        if (is_epar(c->mech[m])) continue;
        const struct epar_stats_paired *pr = &vs[m].pr;
        flat += pr->degenerate;
        min_rel = isnan(pr->mean) || isnan(min_rel) ? NAN : fmin(min_rel, pr->mean);
        min_lo = isnan(pr->lo) || isnan(min_lo) ? NAN : fmin(min_lo, pr->lo);
        min_hi = isnan(pr->hi) || isnan(min_hi) ? NAN : fmin(min_hi, pr->hi);
        if (!pr->degenerate) {
            mde = fmax(mde, epar_stats_mde(pr->sd, pr->n, c->level, 0.8, n));
            nonsup = fmin(nonsup, pr->mean + qa * pr->sd / sqrt((double)pr->n));
        }
        beats += pr->lo > 0;
        if (pr->mean < 0 && isfinite(vs[m].p_holm)) {
            holm_p = isnan(holm_p) ? vs[m].p_holm : fmin(holm_p, vs[m].p_holm);
            beaten += vs[m].p_holm < 1 - c->level;
        }
    }
    char col[96];
#define SET(suffix, v)                                      \
    do {                                                    \
        snprintf(col, sizeof col, "%s" suffix, name);       \
        set_num(t, col, v);                                 \
    } while (0)
    SET("_vs_baselines_min_rel", min_rel);
    SET("_vs_baselines_min_lo", min_lo);
    SET("_vs_baselines_min_hi", min_hi);
    SET("_vs_baselines_holm_p", holm_p);
    SET("_vs_baselines_nonsup", isfinite(nonsup) ? nonsup : NAN);
    SET("_beats", beats);
    SET("_beaten_holm", beaten);
    SET("_no_spread", flat);
    SET("_mde", isfinite(mde) ? mde : NAN);
#undef SET
}

/* the name of task t's primary metric: the task's metric (accuracy, bpc) for final, else the candidate's name with it,
 * e.g. "curve:accuracy", "final_loss" */
static void primary_name(const struct epar_bench_cfg *c, int t, char *buf, size_t n)
{
    enum epar_bench_primary k = c->tasks[t].primary;
    const char *m = epar_task_table[c->tasks[t].task.id].metric;
    if (k == EPAR_BENCH_FINAL) snprintf(buf, n, "%s", m);
    else if (k == EPAR_BENCH_CURVE) snprintf(buf, n, "curve:%s", m);
    else snprintf(buf, n, "%s", epar_bench_primary_names[k]);
}

/* metrics.csv: every candidate metric of every task x mechanism (mean and sd across seeds), the primary marked: the
 * secondary columns of the table, and what the power study of docs/TASKS.md compares */
static struct epar_table *metrics_table(const struct epar_bench_cfg *c, const struct grid *g)
{
    struct epar_table *t = epar_csv_new("task,mechanism,metric,primary,higher_is_better,mean,sd,seeds");
    for (int i = 0; t && i < c->n_tasks; i++)
        for (int m = 0; m < c->n_mech; m++)
            for (int k = 0; k < EPAR_BENCH_NPRIMARY; k++) {
                double mean, sd;
                epar_stats_mean_sd(g->cand[k] + gi(g, i, m, 0), g->S, &mean, &sd);
                if (epar_csv_append(t, "sssiiddi", c->tasks[i].id, epar_nnpos_name(c->mech[m]),
                                    epar_bench_primary_names[k], (int)(c->tasks[i].primary == (enum epar_bench_primary)k),
                                    cand_hib(c, i, k), mean, sd, g->S)) {
                    epar_csv_free(t);
                    return NULL;
                }
            }
    return t;
}

static struct epar_table *main_table(const struct epar_bench_cfg *c, const struct grid *g)
{
    char head[4096] = "task,paper,condition,length,metric,higher_is_better,seeds";
    for (int m = 0; m < c->n_mech; m++) {
        size_t l = strlen(head);
        snprintf(head + l, sizeof head - l, ",%s_mean,%s_sd", epar_nnpos_name(c->mech[m]), epar_nnpos_name(c->mech[m]));
    }
    strcat(head, ",best_baseline,best_baseline_mean,best_baseline_sd,chance,chance_se,learned,baselines");
    for (int k = 0; k < 2; k++) {
        const char *f = k ? "enhanced" : "basic";
        size_t l = strlen(head);
        snprintf(head + l, sizeof head - l, ",%s_vs_baselines_min_rel,%s_vs_baselines_min_lo,%s_vs_baselines_min_hi,"
                 "%s_vs_baselines_holm_p,%s_vs_baselines_nonsup,%s_beats,%s_beaten_holm,%s_no_spread,%s_mde",
                 f, f, f, f, f, f, f, f, f);
    }
    for (int k = 0; k < CMP_N; k++) {
        size_t l = strlen(head);
        snprintf(head + l, sizeof head - l, ",%s_rel,%s_rel_sd,%s_t,%s_p", cmp_names[k], cmp_names[k], cmp_names[k],
                 cmp_names[k]);
    }
    struct epar_table *t = epar_csv_new(head);
    for (int i = 0; t && i < c->n_tasks; i++) {
        int hib = prim_hib(c, i), best = best_baseline(c, g, i, hib);
        char metric[64];
        primary_name(c, i, metric, sizeof metric);
        if (epar_csv_append(t, "sssisii", c->tasks[i].id, c->tasks[i].paper, c->tasks[i].condition,
                            c->tasks[i].task.length, metric, hib, g->S)) {
            epar_csv_free(t);
            return NULL;
        }
        char col[96];
        for (int m = 0; m < c->n_mech; m++) {
            double mean, sd;
            epar_stats_mean_sd(gv(g, i, m, 0), g->S, &mean, &sd);
            snprintf(col, sizeof col, "%s_mean", epar_nnpos_name(c->mech[m]));
            set_num(t, col, mean);
            snprintf(col, sizeof col, "%s_sd", epar_nnpos_name(c->mech[m]));
            set_num(t, col, sd);
        }
        struct epar_cell *row = t->cells + (t->nrows - 1) * (size_t)t->ncols;
        int bc = epar_csv_col(t, "best_baseline");
        row[bc].s = strdup(best >= 0 ? epar_nnpos_name(c->mech[best]) : "");
        if (!row[bc].s) {
            epar_csv_free(t);
            return NULL;
        }
        if (best >= 0) {
            double mean, sd;
            epar_stats_mean_sd(gv(g, i, best, 0), g->S, &mean, &sd);
            set_num(t, "best_baseline_mean", mean);
            set_num(t, "best_baseline_sd", sd);
        }
        double chance, chance_se;
        int learned = task_learned(c, g, i, &chance, &chance_se);
        set_num(t, "chance", chance);
        set_num(t, "chance_se", chance_se);
        set_num(t, "learned", learned < 0 ? NAN : learned);
        int nb = 0;
        for (int m = 0; m < c->n_mech; m++) nb += !is_epar(c->mech[m]);
        set_num(t, "baselines", nb);
        int xb = mech_index(c, EPAR_MECH_EPAR_BASIC), xe = mech_index(c, EPAR_MECH_EPAR_ENHANCED);
        if (xb >= 0) versus_summary(c, g, t, i, xb, "basic");
        if (xe >= 0) versus_summary(c, g, t, i, xe, "enhanced");
        for (int k = 0; k < CMP_N; k++) {
            int x, y;
            cmp_pair(c, k, best, &x, &y);
            if (x < 0 || y < 0) continue;
            struct epar_stats_paired pr = paired_test(gv(g, i, x, 0), gv(g, i, y, 0), g->S, hib, c->level);
            snprintf(col, sizeof col, "%s_rel", cmp_names[k]);
            set_num(t, col, pr.mean);
            snprintf(col, sizeof col, "%s_rel_sd", cmp_names[k]);
            set_num(t, col, pr.sd);
            snprintf(col, sizeof col, "%s_t", cmp_names[k]);
            set_num(t, col, pr.t);
            snprintf(col, sizeof col, "%s_p", cmp_names[k]);
            set_num(t, col, pr.p);
        }
    }
    return t;
}

/* when to use: per condition, EPAR's gain over none and over each task's best baseline, the per-seed mean over
 * the condition's tasks of the relative differences, then mean, sd, t and p across seeds */
static struct epar_table *when_table(const struct epar_bench_cfg *c, const struct grid *g)
{
    struct epar_table *t = epar_csv_new("condition,mechanism,versus,tasks,n_tasks,gain,gain_sd,seeds,t,p,learned_tasks");
    const char *conds[EPAR_BENCH_MAX_TASKS];
    int nc = 0;
    for (int i = 0; i < c->n_tasks; i++) {
        int seen = 0;
        for (int k = 0; k < nc; k++) seen |= !strcmp(conds[k], c->tasks[i].condition);
        if (!seen) conds[nc++] = c->tasks[i].condition;
    }
    static const enum epar_mech_id ep[2] = {EPAR_MECH_EPAR_BASIC, EPAR_MECH_EPAR_ENHANCED};
    for (int k = 0; t && k < nc; k++)
        for (int e = 0; e < 2; e++)
            for (int vs = 0; vs < 2; vs++) {
                int x = mech_index(c, ep[e]);
                if (x < 0) continue;
                double gain[EPAR_MAX_SEEDS] = {0}, zero[EPAR_MAX_SEEDS] = {0};
                char tasks[512] = "";
                int nt = 0, ok = 1, nl = 0;   /* nl: tasks learned by some mechanism (-1: unknown) */
                for (int i = 0; i < c->n_tasks; i++) {
                    if (strcmp(c->tasks[i].condition, conds[k])) continue;
                    int hib = prim_hib(c, i);
                    double ch, chse;
                    int lt = task_learned(c, g, i, &ch, &chse);
                    nl = nl < 0 || lt < 0 ? -1 : nl + (lt > 0);
                    int y = vs == 0 ? mech_index(c, EPAR_MECH_NONE) : best_baseline(c, g, i, hib);
                    if (y < 0) { ok = 0; break; }
                    double ym, ysd;
                    epar_stats_mean_sd(gv(g, i, y, 0), g->S, &ym, &ysd);
                    for (int s = 0; s < g->S; s++)
                        gain[s] += (hib ? 1 : -1) * (*gv(g, i, x, s) - *gv(g, i, y, s)) / fabs(ym);
                    size_t l = strlen(tasks);
                    snprintf(tasks + l, sizeof tasks - l, "%s%s", nt ? " " : "", c->tasks[i].id);
                    nt++;
                }
                if (!ok || !nt) continue;
                for (int s = 0; s < g->S; s++) gain[s] /= nt;
                /* the paired test of the gains against 0 (x = gain + 1, y = 1: relative difference = gain) */
                double one[EPAR_MAX_SEEDS], xg[EPAR_MAX_SEEDS];
                for (int s = 0; s < g->S; s++) {
                    one[s] = 1.0;
                    xg[s] = 1.0 + gain[s];
                }
                (void)zero;
                struct epar_stats_paired pr = paired_test(xg, one, g->S, 1, c->level);
                if (epar_csv_append(t, "ssssiddiddd", conds[k], epar_nnpos_name(ep[e]), vs ? "best_baseline" : "none", tasks,
                                    nt, pr.mean, pr.sd, g->S, pr.t, pr.p, nl < 0 ? NAN : (double)nl)) {
                    epar_csv_free(t);
                    return NULL;
                }
            }
    return t;
}

/* steps to learn: per cell, the first evaluation step from which the eval metric stays beyond the task's chance
 * level by more than LEARNED_Z of its standard errors to the end of training (NaN: never); per task and mechanism
 * the mean over the seeds that learned, and how many did. From the cells' learning_curve.csv. */
static int learn_step(const char *root, const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, int k,
                      double chance, double se, int hib, double *step)
{
    char dir[512], path[4800];
    epar_exp_benchmark_cell_dir(c, &plan->cells[k], dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%s/learning_curve.csv", root, dir);
    struct epar_table *t = NULL;
    if (epar_csv_read(path, &t)) return epar_err_set(EPAR_EIO, "cannot read '%s': %s", path, epar_err_message());
    *step = NAN;
    for (size_t r = t->nrows; r-- > 0;) {   /* from the end back to the first row not beyond chance */
        double v = epar_csv_get(t, r, "eval_metric"), gain = hib ? v - chance : chance - v;
        if (!(gain > LEARNED_Z * se)) break;
        *step = epar_csv_get(t, r, "step");
    }
    epar_csv_free(t);
    return EPAR_OK;
}

static struct epar_table *learn_table(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan,
                                      const struct grid *g, const char *root, int *st)
{
    struct epar_table *t = epar_csv_new("task,mechanism,steps,seeds,learned_seeds,steps_to_learn,steps_to_learn_sd,"
                                        "tokens_to_learn");
    for (int i = 0; t && !*st && i < c->n_tasks; i++) {
        double chance, se;
        task_learned(c, g, i, &chance, &se);
        for (int m = 0; m < c->n_mech && !*st; m++) {
            double v[EPAR_MAX_SEEDS], mean = NAN, sd = NAN;
            int n = 0;
            for (int s = 0; s < g->S && !*st; s++) {
                double x = NAN;
                *st = learn_step(root, c, plan, (i * c->n_mech + m) * g->S + s, chance, se, task_hib(c, i), &x);
                if (!*st && isfinite(x)) v[n++] = x;
            }
            if (n) epar_stats_mean_sd(v, n, &mean, &sd);
            int T = c->tasks[i].task.length, B = !strcmp(c->tasks[i].length_class, "long") ? c->b.long_batch : c->b.batch;
            if (!*st && epar_csv_append(t, "ssiiiddd", c->tasks[i].id, epar_nnpos_name(c->mech[m]),
                                        (int)lround(c->b.steps * c->tasks[i].steps_scale), g->S, n,
                                        mean, sd, mean * B * T)) {
                epar_csv_free(t);
                return NULL;
            }
        }
    }
    return t;
}

/* sanity: per task and mechanism, the mean metric against the chance level (in chance se and relative), whether
 * the mechanism learned the task (beyond LEARNED_Z se), and for bpc tasks whether it is at least sanity_margin
 * below the chance level: a baseline that does not learn lm is broken, and every comparison with it is moot.
 * *failed counts the mechanisms that miss the margin on a bpc task. */
static struct epar_table *sanity_table(const struct epar_bench_cfg *c, const struct grid *g, int *failed)
{
    struct epar_table *t = epar_csv_new("task,mechanism,mean,chance,chance_se,z_vs_chance,rel_vs_chance,learned,margin,meets_margin");
    *failed = 0;
    for (int i = 0; t && i < c->n_tasks; i++) {
        int hib = task_hib(c, i), bpc = !hib;
        double chance, se, sd;
        if (task_learned(c, g, i, &chance, &se) < 0) chance = se = NAN;
        for (int m = 0; m < c->n_mech; m++) {
            double mean;
            epar_stats_mean_sd(gf(g, i, m, 0), g->S, &mean, &sd);
            double gain = hib ? mean - chance : chance - mean, z = se > 0 ? gain / se : NAN;
            double rel = chance != 0 ? gain / fabs(chance) : NAN;
            int learned = isfinite(z) && z > LEARNED_Z, meets = bpc ? isfinite(rel) && rel >= c->sanity_margin : -1;
            *failed += meets == 0;
            if (epar_csv_append(t, "ssddddddds", c->tasks[i].id, epar_nnpos_name(c->mech[m]), mean, chance, se, z, rel,
                                (double)learned, bpc ? c->sanity_margin : NAN, meets < 0 ? "" : meets ? "yes" : "no")) {
                epar_csv_free(t);
                return NULL;
            }
        }
    }
    return t;
}

static struct epar_table *extrap_table(const struct epar_bench_cfg *c, const struct grid *g,
                                       const struct epar_bench_plan *plan)
{
    struct epar_table *t = epar_csv_new("task,mechanism,length,train_length,value,value_sd,seeds,defined,posfx_L");
    for (int i = 0; t && i < c->n_tasks; i++) {
        if (c->tasks[i].task.id != EPAR_TASK_LM || c->tasks[i].task.shuffle) continue;
        for (int m = 0; m < c->n_mech; m++)
            for (int e = 0; e < c->b.n_extrap; e++) {
                double v[EPAR_MAX_SEEDS];
                int defined = 1;
                for (int s = 0; s < g->S; s++) {
                    int k = (i * c->n_mech + m) * g->S + s;
                    const struct train_cell *x = &g->cell[k];
                    v[s] = e < x->n_extrap ? x->extrap[e].value : 0;
                    if (e >= x->n_extrap || !x->extrap[e].defined) defined = 0;
                }
                double mean = NAN, sd = NAN;
                if (defined) epar_stats_mean_sd(v, g->S, &mean, &sd);
                const char *L = c->base.pos.posfx_length > 0 ? "fixed (posfx_length)" : "the evaluation length";
                if (!is_epar(c->mech[m])) L = "";
                if (epar_csv_append(t, "ssiiddiis", c->tasks[i].id, epar_nnpos_name(c->mech[m]), c->b.extrap[e],
                                    c->tasks[i].task.length, mean, sd, g->S, defined, L)) {
                    epar_csv_free(t);
                    return NULL;
                }
            }
    }
    (void)plan;
    return t;
}

static struct epar_table *distance_table(const struct epar_bench_cfg *c, const struct grid *g)
{
    struct epar_table *t = epar_csv_new("task,mechanism,bin,distance_lo,distance_hi,accuracy,accuracy_sd,seeds,answers");
    for (int i = 0; t && i < c->n_tasks; i++) {
        if (c->tasks[i].task.id != EPAR_TASK_NEEDLE) continue;
        int D = epar_task_max_group(&c->tasks[i].task), nb = c->distance_bins;
        if (nb > D) nb = D;
        for (int m = 0; m < c->n_mech; m++)
            for (int bin = 0; bin < nb; bin++) {
                /* distances 1 .. D (lib/tasks' needle) in nb bins of (nearly) equal width */
                int lo = 1 + (int)((long)bin * D / nb), hi = (int)((long)(bin + 1) * D / nb);
                double acc[EPAR_MAX_SEEDS];
                long answers = 0;
                for (int s = 0; s < g->S; s++) {
                    int k = (i * c->n_mech + m) * g->S + s;
                    const struct train_cell *x = &g->cell[k];
                    long cc = 0, ss = 0;
                    for (int d = lo; d <= hi; d++) {
                        cc += d < x->n_correct ? x->correct[d] : 0;
                        ss += d < x->n_answers ? x->answers[d] : 0;
                    }
                    acc[s] = ss > 0 ? (double)cc / ss : NAN;
                    answers += ss;
                }
                double mean, sd;
                epar_stats_mean_sd(acc, g->S, &mean, &sd);
                if (epar_csv_append(t, "ssiiiddii", c->tasks[i].id, epar_nnpos_name(c->mech[m]), bin, lo, hi, mean, sd,
                                    g->S, (int)answers)) {
                    epar_csv_free(t);
                    return NULL;
                }
            }
    }
    return t;
}

static struct epar_table *params_table(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, double *worst)
{
    struct epar_table *t = epar_csv_new("task,mechanism,params,mlp,rel_diff_vs_none,within_tolerance,lr,lr_scale,steps");
    *worst = 0;
    int none = mech_index(c, EPAR_MECH_NONE);
    for (int k = 0; t && k < plan->n; k++) {
        const struct epar_bench_cell *cell = &plan->cells[k];
        if (cell->seed != 0) continue;
        size_t p = cell->task >= 0 ? cell->params : plan->cost_params[cell->mech];
        size_t ref = 0;
        for (int q = 0; q < plan->n; q++)
            if (plan->cells[q].task == cell->task && plan->cells[q].seed == 0 && plan->cells[q].mech == none)
                ref = cell->task >= 0 ? plan->cells[q].params : plan->cost_params[none];
        for (int m = 0; m < (cell->task >= 0 ? 1 : c->n_mech); m++) {
            int mm = cell->task >= 0 ? cell->mech : m;
            if (cell->task < 0) p = plan->cost_params[mm];
            if (cell->task < 0 && none >= 0) ref = plan->cost_params[none];
            double rel = ref ? ((double)p - (double)ref) / (double)ref : NAN;
            if (fabs(rel) > *worst) *worst = fabs(rel);
            /* the cell's learning rate (its mechanism's scale on this task's lr_family) and steps */
            struct epar_bench_cell probe = *cell;
            probe.mech = mm;
            struct epar_train_cfg tc;
            epar_exp_benchmark_cell_cfg(c, &probe, &tc);
            if (epar_csv_append(t, "ssdididdi", cell->task >= 0 ? c->tasks[cell->task].id : "cost",
                                epar_nnpos_name(c->mech[mm]), (double)p,
                                cell->task >= 0 ? cell->mlp : plan->cost_mlp[mm], rel, fabs(rel) <= c->param_tol,
                                tc.optim.lr, tc.optim.lr / c->b.lr, tc.optim.steps)) {
                epar_csv_free(t);
                return NULL;
            }
        }
    }
    return t;
}

/* cost.csv from the cost cell: per mechanism the step's thread CPU time (median and sd over its timed steps), its
 * attention share, and the overheads over none and (enhanced) over basic from their adjacent pairs: the median
 * ratio - 1 with its distribution-free interval at the audit's level (pair_overhead), the pairs behind it, and how
 * many pairs an interval of cost_halfwidth would take at the spread measured */
static const struct cost_pair *find_pair(const struct cost_cell *x, const char *a, const char *b)
{
    for (int k = 0; k < x->n_pair; k++)
        if (!strcmp(x->pair[k].mechanism, a) && !strcmp(x->pair[k].against, b)) return &x->pair[k];
    return NULL;
}

static struct overhead cost_overhead(const struct cost_pair *p, double level, double *scratch)
{
    struct overhead none = {NAN, NAN, NAN, NAN, NAN, 0, 0};
    return p ? cost_pair_overhead(p, level, scratch) : none;
}

/* pairs for a half-width of target: the interval's width falls as 1 / sqrt(generations), so as 1 / sqrt(pairs) */
static double pairs_needed(const struct overhead *o, double target)
{
    return isfinite(o->hw) && o->hw > 0 && target > 0 ? ceil(o->n * pow(o->hw / target, 2)) : NAN;
}

static struct epar_table *cost_table(const struct epar_bench_cfg *c, const struct cost_cell *x)
{
    struct epar_table *t = epar_csv_new("mechanism,task,length,batch,params,step_ms,step_ms_sd,tokens_per_s,peak_mb,"
                                        "attention_share,overhead_vs_none,overhead_vs_none_sd,overhead_vs_none_hw,"
                                        "overhead_vs_basic,overhead_vs_basic_sd,overhead_vs_basic_hw,repeats,repeats_needed,"
                                        "overhead_vs_none_lo,overhead_vs_none_hi,overhead_vs_basic_lo,"
                                        "overhead_vs_basic_hi,pairs_vs_basic,steps,generations");
    int L = x->length, B = x->batch, n = 0;
    for (int m = 0; m < x->n_mech; m++) n = x->mech[m].n_step > n ? x->mech[m].n_step : n;
    double *d = malloc(((size_t)n + 1) * sizeof *d);
    if (!d) {
        epar_csv_free(t);
        return NULL;
    }
    for (int m = 0; t && m < x->n_mech; m++) {
        const struct cost_mech *a = &x->mech[m];
        int S = a->n_step;
        double att = 0, tot = 0, med, sd, mean;
        for (int i = 0; i < S; i++) {
            d[i] = 1000 * a->step[i];
            tot += a->step[i];
            att += i < a->n_attention ? a->attention[i] : NAN;
        }
        epar_stats_mean_sd(d, (size_t)S, &mean, &sd);
        gsl_sort(d, 1, (size_t)S);
        med = S ? gsl_stats_median_from_sorted_data(d, 1, (size_t)S) : NAN;
        struct overhead on = cost_overhead(find_pair(x, a->mechanism, epar_nnpos_name(EPAR_MECH_NONE)), c->level, d);
        struct overhead ob = cost_overhead(find_pair(x, a->mechanism, epar_nnpos_name(EPAR_MECH_EPAR_BASIC)), c->level, d);
        double need = fmax(pairs_needed(&on, x->target), pairs_needed(&ob, x->target));   /* fmax: NaN only if both */
        double gens = on.n ? on.groups : ob.n ? ob.groups : NAN;
        if (epar_csv_append(t, "ssiiddddddddddddddddddddd", a->mechanism, x->task, L, B, (double)a->params, med, sd,
                            (double)B * L / (med / 1000), a->bytes / 1e6, att / tot, on.est, on.sd, on.hw, ob.est, ob.sd,
                            ob.hw, on.n ? (double)on.n : NAN, need, on.lo, on.hi, ob.lo, ob.hi,
                            ob.n ? (double)ob.n : NAN, (double)S, gens)) {
            epar_csv_free(t);
            t = NULL;
        }
    }
    free(d);
    return t;
}

/* main_table.md's "mean ± sd" of <prefix>_mean/_sd in row r: "n/a" without a mean (the mechanism is not in the
 * grid), the mean alone without an sd (one seed) */
static void md_mean_sd(const struct epar_table *t, size_t r, const char *prefix, char *buf, size_t n)
{
    char col[96];
    snprintf(col, sizeof col, "%s_mean", prefix);
    double mean = epar_csv_get(t, r, col);
    snprintf(col, sizeof col, "%s_sd", prefix);
    double sd = epar_csv_get(t, r, col);
    if (!isfinite(mean)) snprintf(buf, n, "n/a");
    else if (!isfinite(sd)) snprintf(buf, n, "%.4g", mean);
    else snprintf(buf, n, "%.4g ± %.2g", mean, sd);
}

/* "beats / beaten of nb" of EPAR form `form` in row r; "n/a" when the grid has no such mechanism (NaN counts) */
static void md_beats(const struct epar_table *t, size_t r, const char *form, double nb, char *buf, size_t n)
{
    char col[96];
    snprintf(col, sizeof col, "%s_beats", form);
    double beats = epar_csv_get(t, r, col);
    snprintf(col, sizeof col, "%s_beaten_holm", form);
    double beaten = epar_csv_get(t, r, col);
    if (!isfinite(beats) || !isfinite(beaten) || !isfinite(nb)) snprintf(buf, n, "n/a");
    else snprintf(buf, n, "%d / %d of %d", (int)beats, (int)beaten, (int)nb);
}

static int write_markdown(const struct epar_bench_cfg *c, const struct epar_table *t, const char *path)
{
    struct epar_out_file w;
    FILE *f = epar_out_fopen(&w, path);
    if (!f) return EPAR_EIO;
    fprintf(f, "# epar benchmark, budget `%s`: the main table on proxy tasks\n\n", c->b.name);
    fprintf(f, "Mean ± sd across %d seed(s); relative improvement = per seed sign × (EPAR − baseline) / |mean baseline| "
               "(positive = better, also for bits per character), averaged over the seeds; tests: two-sided paired "
               "t-tests across seeds (GSL `gsl_cdf_tdist_Q`), undefined (nan) when the differences have no spread. Every cell: the same steps, batch, length and tokens; "
               "parameter counts within %g %% of `none` (params.csv).\n\n", c->b.n_seeds, 100 * c->param_tol);
    fprintf(f, "Chance: the metric of the best constant answer on the same evaluation items (the most frequent answer; "
               "for bits per character the entropy of the characters) ± its standard error; learned: how many of the %d "
               "mechanisms beat it by more than %g standard errors. On a task none learned, every model answers like a "
               "constant and the comparison says nothing about EPAR (the audit calls its proxy claims inconclusive).\n\n",
               c->n_mech, LEARNED_Z);
    fprintf(f, "EPAR against each baseline (pre-registered: no baseline is picked after the results): the paired relative "
               "improvement of each of the %d baselines, with its %g %% interval; *beats*: how many baselines the "
               "interval puts EPAR above, *beaten*: how many are better after a Holm adjustment across the baselines "
               "(comparisons.csv has every pair); MDE: the largest minimum detectable effect at 80 %% power with these "
               "seeds, i.e. smaller true differences would mostly go unseen. The best baseline is descriptive only: it "
               "is chosen after the results, and its p is not a test of \"EPAR beats the baselines\".\n\n",
               t->nrows ? (int)epar_csv_get(t, 0, "baselines") : 0, 100 * c->level);
    fprintf(f, "| proxy task | stands for | metric | chance | learned | best baseline | EPAR basic | EPAR enhanced | enhanced vs best | enhanced: beats / beaten (Holm) | enhanced MDE | basic: beats / beaten (Holm) |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t r = 0; r < t->nrows; r++) {
        /* a value not measured here (no EPAR mechanism in --mechanisms, one seed: no sd) is "n/a", never a sentinel
         * (a NaN count cast to int printed INT_MIN) */
        char b[96], e[64], x[64], rel[32], eb[48], bb[48];
        const char *best = epar_csv_get_str(t, r, "best_baseline");
        md_mean_sd(t, r, "best_baseline", b, sizeof b);
        if (best && *best) snprintf(b + strlen(b), sizeof b - strlen(b), " (%s)", best);
        md_mean_sd(t, r, "epar-basic", e, sizeof e);
        md_mean_sd(t, r, "epar-enhanced", x, sizeof x);
        double rv = epar_csv_get(t, r, "enhanced_vs_best_rel");
        if (isfinite(rv)) snprintf(rel, sizeof rel, "%+.2f %%", 100 * rv);
        else snprintf(rel, sizeof rel, "n/a");
        char ch[64], ln[32];
        double learned = epar_csv_get(t, r, "learned");
        snprintf(ch, sizeof ch, "%.4g ± %.2g", epar_csv_get(t, r, "chance"), epar_csv_get(t, r, "chance_se"));
        if (isnan(learned)) snprintf(ln, sizeof ln, "?");
        else if (learned == 0) snprintf(ln, sizeof ln, "**none**");
        else snprintf(ln, sizeof ln, "%d of %d", (int)learned, c->n_mech);
        double nb = epar_csv_get(t, r, "baselines"), mde = epar_csv_get(t, r, "enhanced_mde");
        char mdes[32];
        if (isfinite(mde)) snprintf(mdes, sizeof mdes, mde >= 0.1 ? "%.0f %%" : "%.2g %%", 100 * mde);
        else if (isnan(epar_csv_get(t, r, "enhanced_beats"))) snprintf(mdes, sizeof mdes, "n/a");
        else snprintf(mdes, sizeof mdes, "– (no spread)");
        md_beats(t, r, "enhanced", nb, eb, sizeof eb);
        md_beats(t, r, "basic", nb, bb, sizeof bb);
        fprintf(f, "| %s (L=%d) | %s | %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                epar_csv_get_str(t, r, "task"), (int)epar_csv_get(t, r, "length"), epar_csv_get_str(t, r, "paper"),
                epar_csv_get_str(t, r, "metric"), epar_csv_get(t, r, "higher_is_better") > 0 ? " ↑" : " ↓", ch, ln, b, e, x,
                rel, eb, mdes, bb);
    }
    fprintf(f, "\nEvery mechanism: main_table.csv (`<mechanism>_mean`, `_sd`). A proxy at this scale says whether EPAR's "
               "direction of effect holds for small trained models on tasks that isolate what each row is about; it "
               "cannot give the paper's 110M-parameter numbers.\n");
    return epar_out_fclose(&w);
}

static void mech_words(const struct epar_bench_cfg *c, char *buf, size_t n)
{
    buf[0] = '\0';
    for (int m = 0; m < c->n_mech; m++) {
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%s%s", m ? " " : "", epar_nnpos_name(c->mech[m]));
    }
}

/* steps_to_learn: a panel per task, a horizontal bar per mechanism (mean steps over the seeds that learned, error
 * bar: their sd), "k/n" seeds that learned beside each bar, "not learned" written where no seed did */
static int steps_figure(const struct epar_bench_cfg *c, struct epar_out *o, const char *mech)
{
    int M = c->n_mech, NT = c->n_tasks, cols = 1;
    while (cols * cols < NT && cols < 4) cols++;   /* 4 tasks 2 x 2, 10 tasks 4 x 3 */
    int rows = (NT + cols - 1) / cols, panel_h = 60 + 26 * M > 230 ? 60 + 26 * M : 230;
    struct epar_plot_text b = {0};
    epar_plot_add(&b, "mech = '%s'\nM = words(mech)\nmi(m) = sum [i=1:M] (word(mech, i) eq m ? i : 0)   # a mechanism's row\n"
                      "set terminal @epar_term size %d,%d\n"
                      "set multiplot layout %d,%d title \"Steps to learn: the first evaluation from which the metric stays "
                      "beyond chance + %g se to the end\\nbar: mean over the seeds that learned, whisker: their sd; "
                      "k/n: how many seeds learned\" noenhanced\n"
                      "unset key\nset grid xtics noytics\nset yrange [M + 0.6:0.4]\nset ytics (",
                  mech, 80 + 380 * cols, 60 + panel_h * rows, rows, cols, LEARNED_Z);
    for (int m = 0; m < M; m++) epar_plot_add(&b, "%s'%s' %d", m ? ", " : "", epar_nnpos_name(c->mech[m]), m + 1);
    epar_plot_add(&b, ") noenhanced font ',8'\nset xtics font ',8'\nset xlabel 'optimiser steps' font ',9'\n"
                      "set style fill solid 0.75 noborder\nset errorbars small\n");
    for (int i = 0; i < NT; i++) {
        int steps = (int)lround(c->b.steps * c->tasks[i].steps_scale);   /* the task's own budget of steps */
        double tic = 100 * ceil(1.5 * steps / 800.0);   /* at most about 8 labelled tics */
        epar_plot_add(&b, "set xtics 0, %g\n", tic);
        epar_plot_add(&b, "set xrange [0:%g]\nset arrow 1 from %d, graph 0 to %d, graph 1 nohead dt 2 lc rgb '#777777'\n"
                          "set label 1 'budget' at %d, graph 1 right offset -0.3,-0.6 font ',7' tc rgb '#777777'\n",
                      1.5 * steps, steps, steps, steps);
        epar_plot_add(&b, "set title '%s (L=%d)' noenhanced font ',10'\nsel(v) = strcol(1) eq '%s' ? v : NaN\n"
                          "seeds(k, n) = k > 0 ? sprintf('%%d/%%d', k, n) : sprintf('not learned (0/%%d)', n)\n"
                          EPAR_PLOT_IF("'steps_to_learn.csv', '(sel($4)):4'")
                          "plot 'steps_to_learn.csv' skip 1 using (sel($6) / 2):(mi(strcol(2))):($6 / 2):(0.36):(mi(strcol(2))) "
                          "with boxxyerror lc variable, \\\n"
                          "     '' skip 1 using (sel($6)):(mi(strcol(2))):(sd(7)) with xerrorbars pt -1 lc rgb '#333333', \\\n"
                          "     '' skip 1 using (sel($5 > 0 ? column(6) + sd(7) : 0)):(mi(strcol(2))):(seeds($5, $4)) with labels "
                          "left offset 0.6,0 font ',8', \\\n"
                          "     '' skip 1 using (sel($5 > 0 ? NaN : 0)):(mi(strcol(2))) with points pt 2 ps 1.2 lc rgb '#d62728'"
                          EPAR_PLOT_END,
                      c->tasks[i].id, c->tasks[i].task.length, c->tasks[i].id);
    }
    epar_plot_add(&b, "unset multiplot\n");
    return epar_plot_script_text(o, "steps_to_learn", "Steps to learn each task per mechanism, with the seeds that learned", &b);
}

/* curves_<task>: the eval metric against training tokens, every mechanism, the first seed, and the chance level */
static int curves_figure(const struct epar_bench_cfg *c, const struct grid *g, struct epar_out *o, int i)
{
    const char *id = c->tasks[i].id, *metric = epar_task_table[c->tasks[i].task.id].metric;
    unsigned long seed = c->b.seeds[0];
    char name[64], title[256], first[512];
    snprintf(name, sizeof name, "curves_%s", id);
    snprintf(title, sizeof title, "Learning curves on %s (L=%d): eval %s of every mechanism, seed %lu", id,
             c->tasks[i].task.length, metric, seed);
    snprintf(first, sizeof first, "../benchmark/cells/%s/%s/seed-%lu/learning_curve.csv", id, epar_nnpos_name(c->mech[0]), seed);
    struct epar_plot_text b = {0};
    epar_plot_add(&b, "set terminal @epar_term size 900,550\nset title '%s' noenhanced\n"
                      "set xlabel 'training tokens'\nset format x '%%.1s%%c'\nset ylabel 'eval %s'\nset key outside right noenhanced\n"
                      "set offsets 0, 0, graph 0.05, %s\n" EPAR_PLOT_IF("'%s', '2:5'") "plot ",
                  title, metric, task_hib(c, i) ? "0" : "graph 0.05", first);
    for (int m = 0; m < c->n_mech; m++)
        epar_plot_add(&b, "%s'../benchmark/cells/%s/%s/seed-%lu/learning_curve.csv' skip 1 using 2:5 with linespoints lt %d title '%s'",
                      m ? ", \\\n     " : "", id, epar_nnpos_name(c->mech[m]), seed, m + 1, epar_nnpos_name(c->mech[m]));
    double chance, chance_se;   /* the best constant answer (main_table.csv chance), as a dashed line */
    if (task_learned(c, g, i, &chance, &chance_se) >= 0)
        epar_plot_add(&b, ", \\\n     %.10g with lines dt 2 lc rgb '#555555' title 'chance: %.3g'", chance, chance);
    epar_plot_add(&b, EPAR_PLOT_END);
    return epar_plot_script_text(o, name, title, &b);
}

static int write_figures(const struct epar_bench_cfg *c, const struct grid *g, struct epar_out *o, int have_extrap,
                         int have_distance)
{
    char mech[512];
    mech_words(c, mech, sizeof mech);
    int st = EPAR_OK;
    if (have_extrap) {
        int L0 = c->b.lm_length;
        char title[160];
        snprintf(title, sizeof title, "Length extrapolation: lm trained at L=%d, bits per character at longer lengths", L0);
        st = epar_plot_scriptf(o, "extrapolation", title,
                               "mech = '%s'\nset terminal @epar_term size 900,600\n"
                               "set title 'lm trained at L=%d, evaluated at longer L (mean +- sd over %d seed(s); L in P = the evaluation length)'\n"
                               "set xlabel 'evaluation length'\nset ylabel 'bits per character (lower is better)'\n"
                               "set logscale x 2\nset key outside right noenhanced\nset offsets graph 0.04, graph 0.04, 0, 0\n"
                               "set arrow 1 from %d, graph 0 to %d, graph 1 nohead dt 2 lc rgb '#555555'\n"
                               "set label 1 'training length L=%d' at %d, graph 0.97 left offset 0.6,0 tc rgb '#555555'\n"
                               EPAR_PLOT_IF("'extrapolation.csv', '3:5'")
                               "plot for [i=1:words(mech)] 'extrapolation.csv' skip 1 using (strcol(2) eq word(mech,i) ? $3 : NaN):5:(sd(6)) "
                               "with yerrorlines lt i title word(mech,i)" EPAR_PLOT_END,
                               mech, L0, g->S, L0, L0, L0, L0);
    }
    if (!st && have_distance) {
        int nn = 0;
        for (int i = 0; i < c->n_tasks; i++) nn += c->tasks[i].task.id == EPAR_TASK_NEEDLE;
        /* one key for every panel, below them (in a panel it covered the curves) */
        struct epar_plot_text b = {0};
        epar_plot_add(&b, "mech = '%s'\nset terminal @epar_term size %d,600\n"
                          "set multiplot layout 1,%d margins 0.08,0.98,0.22,0.88 spacing 0.08,0 title 'needle: accuracy "
                          "vs distance of the fact before the query (mean over %d seed(s))'\n"
                          "set xlabel 'distance (bin centre)'\nset ylabel 'answer accuracy'\nset yrange [0:1.05]\n"
                          "set key at screen 0.5, screen 0.02 center bottom horizontal maxrows 2 noenhanced opaque box\n",
                      mech, nn > 1 ? 520 * nn : 720, nn, g->S);
        for (int i = 0, k = 0; i < c->n_tasks; i++)
            if (c->tasks[i].task.id == EPAR_TASK_NEEDLE) {
                const char *id = c->tasks[i].id;
                epar_plot_add(&b, "%sset title '%s (L=%d)' noenhanced\n"
                                  EPAR_PLOT_IF("'distance.csv', '(strcol(1) eq \"%s\" ? ($4+$5)/2 : NaN):6'")
                                  "plot for [i=1:words(mech)] 'distance.csv' skip 1 using "
                                  "(strcol(1) eq '%s' && strcol(2) eq word(mech,i) ? ($4+$5)/2 : NaN):6 with linespoints lt i "
                                  "title word(mech,i)" EPAR_PLOT_END,
                              k++ ? "unset key\n" : "", id, c->tasks[i].task.length, id, id);
            }
        epar_plot_add(&b, "unset multiplot\n");
        st = epar_plot_script_text(o, "distance", "Needle accuracy against the distance of the fact before the query", &b);
    }
    if (!st)
        st = epar_plot_scriptf(o, "when_to_use", "When to use EPAR: gain per condition",
                               "set terminal @epar_term size 1000,550\n"
                               "set title 'EPAR gain per condition (mean relative difference over the condition''s tasks; bars: sd across %d seed(s))'\n"
                               "set ylabel 'relative gain (positive = EPAR better)'\nset key outside right\n"
                               "set xzeroaxis lt -1\nset boxwidth 0.9\nset xtics scale 0\n"
                               "# rows come 4 per condition: basic vs none, basic vs best, enhanced vs none, enhanced vs best\n"
                               "x(r) = int(r / 4) * 5 + int(r) %% 4\n"
                               EPAR_PLOT_IF("'when_to_use.csv', '6'")
                               "plot 'when_to_use.csv' skip 1 using (x($0)):6:(int($0) %% 4 + 1) with boxes lc variable notitle, \\\n"
                               "     '' skip 1 using (x($0)):6:(sd(7)) with yerrorbars lt -1 pt -1 notitle, \\\n"
                               "     '' skip 1 using (x($0)):(NaN):xtic(int($0) %% 4 == 1 ? strcol(1) : '') notitle, \\\n"
                               "     NaN with boxes lt 1 title 'basic vs none', NaN with boxes lt 2 title 'basic vs best baseline', \\\n"
                               "     NaN with boxes lt 3 title 'enhanced vs none', NaN with boxes lt 4 title 'enhanced vs best baseline'"
                               EPAR_PLOT_END,
                               g->S);
    if (!st)
        st = epar_plot_scriptf(o, "cost", "Training cost per mechanism",
                               "set terminal @epar_term size 1100,480\nset multiplot layout 1,2 title 'Training step cost "
                               "(%s, L=%d, batch %d, 1 thread, CPU time): median ± sd; overhead ± half its interval'\n"
                               "set style data histograms\nset style histogram errorbars gap 1 lw 1\nset xtics rotate by -30\nunset key\n"
                               "set ylabel 'CPU ms per training step'\nset yrange [0:*]\n"
                               EPAR_PLOT_IF("'cost.csv', '6'") "plot 'cost.csv' skip 1 using 6:(sd(7)):xtic(1) lt 1" EPAR_PLOT_END
                               "set ylabel 'step-time overhead vs none (whisker: half the interval)'\nset yrange [*:*]\n"
                               "set xzeroaxis lt -1\n"
                               EPAR_PLOT_IF("'cost.csv', '11'") "plot 'cost.csv' skip 1 using 11:(sd(13)):xtic(1) lt 2" EPAR_PLOT_END
                               "unset multiplot\n",
                               epar_task_name(c->b.cost_task), c->b.cost_length, c->b.batch);
    if (!st) st = steps_figure(c, o, mech);
    for (int i = 0; !st && i < c->n_tasks; i++) st = curves_figure(c, g, o, i);
    return st;
}

/* run.json: what the audit reads (parameters.seeds, preset, protocol hash) and the whole grid, as rows */
struct run_task {
    const char *id, *task, *paper, *condition;
    int length;
};
struct run_budget {
    const char *name;
    struct epar_bench_budget b;
    int tokens_short;
};
struct run_sanity {
    double margin;
    int failed;
};
struct bench_run {
    struct run_budget budget;
    struct run_task tasks[EPAR_BENCH_MAX_TASKS];
    const char *mechs[EPAR_MECH_COUNT];
    int n_tasks, n_mechs, cells;
    const char *equalise, *posfx_L, *lr_sweep;
    double param_tol, worst, learned_z;
    struct run_sanity sanity;
};
#define RT struct run_task
static const struct epar_field run_task_rows[] = {
    EPAR_FIELD_(RT, "id", EPAR_FIELD_STRING, id, 0), EPAR_FIELD_(RT, "task", EPAR_FIELD_STRING, task, 0),
    EPAR_FIELD_(RT, "paper", EPAR_FIELD_STRING, paper, 0), EPAR_FIELD_(RT, "condition", EPAR_FIELD_STRING, condition, 0),
    EPAR_FIELD_(RT, "length", EPAR_FIELD_INT, length, 0), EPAR_FIELD_END_};
#undef RT
#define RB struct run_budget
#define INT_(key) EPAR_FIELD_(RB, #key, EPAR_FIELD_INT, b.key, 0)
#define DBL_(key) EPAR_FIELD_(RB, #key, EPAR_FIELD_DOUBLE, b.key, 0)
static const struct epar_field run_budget_rows[] = {
    EPAR_FIELD_(RB, "name", EPAR_FIELD_STRING, name, 0),
    INT_(layers), INT_(dim), INT_(heads), INT_(mlp), INT_(batch), INT_(steps), INT_(warmup),
    DBL_(lr), DBL_(lr_min_ratio), DBL_(weight_decay), INT_(lm_length), INT_(short_length), INT_(long_length),
    EPAR_FIELD_LIST_(RB, "extrapolation", EPAR_FIELD_ILIST, b.extrap, b.n_extrap, EPAR_BENCH_MAX_EXTRAP, 0),
    EPAR_FIELD_(RB, "tokens_per_cell_short", EPAR_FIELD_INT, tokens_short, 0),
    EPAR_FIELD_END_};
#undef DBL_
#undef INT_
#undef RB
static const struct epar_field run_sanity_rows[] = {
    EPAR_FIELD_(struct run_sanity, "margin", EPAR_FIELD_DOUBLE, margin, 0),
    EPAR_FIELD_(struct run_sanity, "failed", EPAR_FIELD_INT, failed, 0), EPAR_FIELD_END_};
#define BR struct bench_run
static const struct epar_field bench_run_rows[] = {
    EPAR_FIELD_OBJ_(BR, "budget", budget, run_budget_rows, 0),
    EPAR_FIELD_OLIST_(BR, "tasks", tasks, n_tasks, EPAR_BENCH_MAX_TASKS, run_task_rows, 0),
    EPAR_FIELD_LIST_(BR, "mechanisms", EPAR_FIELD_SLIST, mechs, n_mechs, EPAR_MECH_COUNT, 0),
    EPAR_FIELD_(BR, "cells", EPAR_FIELD_INT, cells, 0),
    EPAR_FIELD_(BR, "equalise", EPAR_FIELD_STRING, equalise, 0),
    EPAR_FIELD_(BR, "param_tolerance", EPAR_FIELD_DOUBLE, param_tol, 0),
    EPAR_FIELD_(BR, "param_max_rel_diff", EPAR_FIELD_DOUBLE, worst, 0),
    EPAR_FIELD_(BR, "posfx_L", EPAR_FIELD_STRING, posfx_L, 0),
    EPAR_FIELD_(BR, "lr_sweep", EPAR_FIELD_STRING, lr_sweep, 0),
    EPAR_FIELD_(BR, "learned_z", EPAR_FIELD_DOUBLE, learned_z, 0),   /* main_table.csv learned: beyond chance by z se */
    EPAR_FIELD_OBJ_(BR, "sanity", sanity, run_sanity_rows, 0),
    EPAR_FIELD_END_};
#undef BR

static int write_run_json(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, struct epar_out *o,
                          json_t *run_extra, double worst, int insane)
{
    struct bench_run *x = EPAR_CALLOC(1, sizeof *x);
    if (!x) {
        json_decref(run_extra);
        return EPAR_ENOMEM;
    }
    x->budget = (struct run_budget){c->b.name, c->b, c->b.steps * c->b.batch * c->b.short_length};
    for (int i = 0; i < c->n_tasks; i++)
        x->tasks[i] = (struct run_task){c->tasks[i].id, epar_task_name(c->tasks[i].task.id), c->tasks[i].paper,
                                        c->tasks[i].condition, c->tasks[i].task.length};
    for (int m = 0; m < c->n_mech; m++) x->mechs[m] = epar_nnpos_name(c->mech[m]);
    x->n_tasks = c->n_tasks;
    x->n_mechs = c->n_mech;
    x->cells = plan->n;
    x->equalise = c->equalise_mlp ? "mlp" : "none";
    x->param_tol = c->param_tol;
    x->worst = worst;
    x->posfx_L = c->base.pos.posfx_length > 0 ? "fixed (posfx_length)" : "the length T of the sequence processed";
    x->lr_sweep = "none: one learning rate per budget, the same for every mechanism";
    x->learned_z = LEARNED_Z;
    x->sanity = (struct run_sanity){c->sanity_margin, insane};
    json_t *extra = epar_fields_json(bench_run_rows, x, run_extra);
    free(x);
    if (!extra) {
        json_decref(run_extra);
        return epar_err_set(EPAR_ENOMEM, "out of memory writing run.json");
    }
    struct epar_params prm = c->prm;
    prm.n_seeds = c->b.n_seeds;
    memcpy(prm.seeds, c->b.seeds, sizeof prm.seeds);
    return epar_exp_write_run_json(o, "benchmark", c->protocol, &prm, extra);
}

/* trained_attention.csv: what every cell's trained heads attend to (epar inspect's summaries over TRAINED_ITEMS
 * evaluation items, measured when the cell finished), one row per task x mechanism x seed; the distance ratio also
 * relative to none's of the same seed on the same items. Not written when no cell has the summaries (cells of an
 * older epar). The trained-attention claims take its spread across the seeds (group_by seed). */
static int trained_attention(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const struct grid *g,
                             struct epar_out *o)
{
    struct epar_table *t = epar_csv_new("task,mechanism,seed,items,heads,length,distance_spearman,distance_spearman_sd,"
                                        "distance_ratio,distance_ratio_vs_none,first_share,relevant_share,"
                                        "relevant_uniform,profile_spearman");
    int none = mech_index(c, EPAR_MECH_NONE), st = t ? EPAR_OK : epar_err_set(EPAR_ENOMEM, "out of memory");
    /* the cell of (task, mechanism, seed) in the plan */
    int *at = st ? NULL : calloc((size_t)g->NT * g->M * g->S, sizeof *at);
    if (!st && !at) st = epar_err_set(EPAR_ENOMEM, "out of memory");
    for (int k = 0; !st && k < plan->n; k++)
        if (plan->cells[k].task >= 0 && plan->cells[k].mech < c->n_mech)   /* not the study's own cells */
            at[gi(g, plan->cells[k].task, plan->cells[k].mech, plan->cells[k].seed)] = k + 1;
    for (int task = 0; !st && task < c->n_tasks; task++)
        for (int m = 0; !st && m < c->n_mech; m++)
            for (int s = 0; !st && s < g->S; s++) {
                int k = at[gi(g, task, m, s)] - 1, kn = none >= 0 ? at[gi(g, task, none, s)] - 1 : -1;
                if (k < 0 || !g->cell[k].have_attn) continue;
                const struct epar_inspect_summary *a = &g->cell[k].attn;
                double vs = kn >= 0 && g->cell[kn].have_attn ? a->distance_ratio - g->cell[kn].attn.distance_ratio : NAN;
                if (epar_csv_append(t, "ssiiiidddddddd", c->tasks[task].id, epar_nnpos_name(c->mech[m]),
                                    (int)c->b.seeds[s], a->items, a->heads, a->length, a->distance_spearman,
                                    a->distance_spearman_sd, a->distance_ratio, vs, a->first_share, a->relevant_share,
                                    a->relevant_uniform, a->profile_spearman))
                    st = epar_err_set(EPAR_ENOMEM, "out of memory building trained_attention.csv");
            }
    if (!st && t->nrows > 0) st = epar_exp_write_table(o, "trained_attention.csv", t);
    free(at);
    epar_csv_free(t);
    return st;
}

int epar_exp_benchmark_write(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                     struct epar_out *o, json_t *run_extra)
{
    struct grid g = {.NT = c->n_tasks, .M = c->n_mech, .S = c->b.n_seeds};
    size_t ng = (size_t)g.NT * g.M * g.S + 1;
    g.value = calloc(ng, sizeof *g.value);
    int have = g.value != NULL;
    for (int k = 0; k < EPAR_BENCH_NPRIMARY; k++) have &= (g.cand[k] = calloc(ng, sizeof *g.cand[k])) != NULL;
    g.chance = calloc(ng, sizeof *g.chance);
    g.chance_se = calloc(ng, sizeof *g.chance_se);
    g.cell = calloc((size_t)plan->n, sizeof *g.cell);
    g.doc = calloc((size_t)plan->n, sizeof *g.doc);
    int st = have && g.chance && g.chance_se && g.cell && g.doc
                 ? EPAR_OK : epar_err_set(EPAR_ENOMEM, "out of memory reading the cells");
    for (int k = 0; !st && k < plan->n; k++) {
        char dir[512], path[4800];
        epar_exp_benchmark_cell_dir(c, &plan->cells[k], dir, sizeof dir);
        snprintf(path, sizeof path, "%s/%s/cell.json", root, dir);
        const struct epar_bench_cell *cell = &plan->cells[k];
        if (access(path, F_OK) != 0) {
            st = epar_err_set(EPAR_EIO, "cell '%s' is missing", path);
            epar_err_hint("run the missing cells (the same command resumes), or merge the shard that has them");
            break;
        }
        if (cell->task < 0) {
            st = epar_fields_load(path, "cell file", cost_cell_rows, &g.cost, &g.doc[k]);
            continue;
        }
        /* a cell written before epar recorded them */
        g.cell[k].chance = g.cell[k].chance_se = g.cell[k].curve_metric = g.cell[k].curve_loss = NAN;
        g.cell[k].online_loss = NAN;
        struct epar_inspect_summary *as = &g.cell[k].attn;
        as->distance_spearman = as->distance_spearman_sd = as->distance_ratio = as->first_share = NAN;
        as->relevant_share = as->relevant_uniform = as->profile_spearman = NAN;
        if ((st = epar_fields_load(path, "cell file", train_cell_rows, &g.cell[k], &g.doc[k]))) break;
        if (cell->mech >= c->n_mech) continue;   /* the extrapolation study's own cell (bench_extrap reads it) */
        size_t at = gi(&g, cell->task, cell->mech, cell->seed);
        const struct train_cell *x = &g.cell[k];
        g.cand[EPAR_BENCH_FINAL][at] = x->value;
        g.cand[EPAR_BENCH_FINAL_LOSS][at] = x->eval_loss;
        g.cand[EPAR_BENCH_CURVE][at] = x->curve_metric;
        g.cand[EPAR_BENCH_CURVE_LOSS][at] = x->curve_loss;
        g.cand[EPAR_BENCH_ONLINE_LOSS][at] = x->online_loss;
        g.value[at] = g.cand[c->tasks[cell->task].primary][at];
        g.chance[at] = g.cell[k].chance;
        g.chance_se[at] = g.cell[k].chance_se;
    }
    struct epar_table *mt = NULL, *wt = NULL, *et = NULL, *dt = NULL, *pt = NULL, *ct = NULL, *snt = NULL, *vt = NULL, *lt = NULL,
                      *xt = NULL;
    double worst = 0;
    int insane = 0;
    if (!st) {
        mt = main_table(c, &g);
        wt = when_table(c, &g);
        et = extrap_table(c, &g, plan);
        dt = distance_table(c, &g);
        pt = params_table(c, plan, &worst);
        ct = cost_table(c, &g.cost);
        snt = sanity_table(c, &g, &insane);
        vt = comparisons_table(c, &g);
        lt = learn_table(c, plan, &g, root, &st);
        xt = metrics_table(c, &g);
        if (!st && (!mt || !wt || !et || !dt || !pt || !ct || !snt || !vt || !lt || !xt))
            st = epar_err_set(EPAR_ENOMEM, "out of memory building the tables");
    }
    if (!st) {
        struct epar_exp_file files[] = {{"main_table.csv", mt}, {"when_to_use.csv", wt}, {"extrapolation.csv", et},
                                        {"distance.csv", dt}, {"params.csv", pt}, {"cost.csv", ct}, {"sanity.csv", snt},
                                        {"comparisons.csv", vt}, {"steps_to_learn.csv", lt}, {"metrics.csv", xt}};
        st = epar_exp_write_tables(o, files, sizeof files / sizeof files[0]);
    }
    if (!st) st = write_markdown(c, mt, epar_out_path(o, "main_table.md"));
    if (!st) st = write_figures(c, &g, o, et->nrows > 0, dt->nrows > 0);
    if (!st) st = trained_attention(c, plan, &g, o);
    if (!st) st = epar_bx_write(c, plan, root, o, run_extra);   /* the length-extrapolation study's tables */
    if (!st) {
        st = write_run_json(c, plan, o, run_extra, worst, insane);
        run_extra = NULL;
    }
    json_decref(run_extra);
    epar_csv_free(mt); epar_csv_free(wt); epar_csv_free(et); epar_csv_free(dt); epar_csv_free(pt); epar_csv_free(ct);
    epar_csv_free(snt);
    epar_csv_free(vt);
    epar_csv_free(lt);
    epar_csv_free(xt);
    for (int k = 0; g.cell && g.doc && k < plan->n; k++) {
        epar_fields_free(train_cell_rows, &g.cell[k]);
        json_decref(g.doc[k]);
    }
    epar_fields_free(cost_cell_rows, &g.cost);
    free(g.cell);
    free(g.doc);
    free(g.value);
    for (int k = 0; k < EPAR_BENCH_NPRIMARY; k++) free(g.cand[k]);
    free(g.chance);
    free(g.chance_se);
    return st;
}

/* ------------------------------------------------------------------------------------------------ */
/* the learning-rate study                                                                          */

/* the primary metric's mean of (task, mechanism) in a study folder's metrics.csv (NaN: absent) */
static double study_mean(const struct epar_table *t, const char *task, const char *mech)
{
    int ct = epar_csv_col(t, "task"), cm = epar_csv_col(t, "mechanism"), cp = epar_csv_col(t, "primary"),
        cv = epar_csv_col(t, "mean");
    for (size_t r = 0; ct >= 0 && cm >= 0 && cp >= 0 && cv >= 0 && r < t->nrows; r++) {
        const struct epar_cell *row = t->cells + r * (size_t)t->ncols;
        if (row[ct].s && row[cm].s && !strcmp(row[ct].s, task) && !strcmp(row[cm].s, mech) && row[cp].v == 1)
            return row[cv].v;
    }
    return NAN;
}

int epar_exp_benchmark_lr_choose(const struct epar_bench_cfg *c, const char *const *dirs, const double *scales, int n,
                                 struct epar_out *o)
{
    struct epar_table *in[EPAR_BENCH_MAX_SCALES] = {NULL};
    int one = -1, st = EPAR_OK;
    if (n < 2 || n > EPAR_BENCH_MAX_SCALES) return epar_err_set(EPAR_EINVAL, "the study needs 2 to %d scales, got %d",
                                                                EPAR_BENCH_MAX_SCALES, n);
    for (int k = 0; k < n && !st; k++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/benchmark/metrics.csv", dirs[k]);
        st = epar_csv_read(path, &in[k]);
        if (scales[k] == 1) one = k;
    }
    if (!st && one < 0) st = epar_err_set(EPAR_EINVAL, "the study has no run at scale 1 (the reference of the choice)");
    struct epar_table *t = st ? NULL : epar_csv_new("lr_family,mechanism,scale,lr,tasks,score,chosen");
    if (!st && !t) st = EPAR_ENOMEM;
    json_t *choice = json_object();
    for (int i = 0; !st && i < c->n_tasks; i++) {
        const char *fam = c->tasks[i].lr_family;
        int first = 1;
        for (int q = 0; q < i; q++) first &= strcmp(c->tasks[q].lr_family, fam) != 0;
        if (!first) continue;
        json_t *fj = json_object();
        for (int m = 0; m < c->n_mech && !st; m++) {
            const char *mech = epar_nnpos_name(c->mech[m]);
            double score[EPAR_BENCH_MAX_SCALES];
            int ntask = 0, best = one;
            for (int k = 0; k < n; k++) {
                double sum = 0;
                int cnt = 0;
                for (int q = i; q < c->n_tasks; q++) {
                    if (strcmp(c->tasks[q].lr_family, fam)) continue;
                    double ref = study_mean(in[one], c->tasks[q].id, mech), v = study_mean(in[k], c->tasks[q].id, mech);
                    if (!isfinite(ref) || !isfinite(v) || ref == 0) continue;
                    sum += (prim_hib(c, q) ? 1 : -1) * (v - ref) / fabs(ref);
                    cnt++;
                }
                score[k] = cnt ? sum / cnt : NAN;
                ntask = cnt > ntask ? cnt : ntask;
            }
            for (int k = 0; k < n; k++)   /* the best score above scale 1's 0; ties go to the earlier scale */
                if (isfinite(score[k]) && score[k] > (best == one ? 0 : score[best])) best = k;
            for (int k = 0; k < n && !st; k++)
                if (epar_csv_append(t, "ssddidi", fam, mech, scales[k], c->b.lr * scales[k], ntask, score[k], k == best))
                    st = EPAR_ENOMEM;
            if (best != one) json_object_set_new(fj, mech, json_real(scales[best]));
        }
        if (json_object_size(fj)) json_object_set_new(choice, fam, fj);
        else json_decref(fj);
    }
    if (!st) st = epar_exp_write_table(o, "lr_study.csv", t);
    if (!st) {
        char *js = json_dumps(choice, JSON_INDENT(1) | JSON_SORT_KEYS | JSON_REAL_PRECISION(6));
        st = js ? epar_out_write_text(epar_out_path(o, "lr_scale.json"), js) : epar_err_set(EPAR_ENOMEM, "out of memory");
        free(js);
    }
    json_decref(choice);
    epar_csv_free(t);
    for (int k = 0; k < n; k++) epar_csv_free(in[k]);
    return st;
}
