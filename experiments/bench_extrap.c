/* The length-extrapolation study of epar benchmark: configuration, what a cell evaluates, tables and figures. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/err.h"
#include "lib/nnpos.h"
#include "lib/outdir.h"
#include "lib/plot.h"
#include "lib/rng.h"
#include "lib/stats.h"
#include "bench_extrap.h"
#include "benchmark.h"
#include "common.h"

/* ------------------------------------------------------------------------------------------------ */
/* configuration                                                                                      */

struct bx_read {
    const char *lm_task, *retrieval_task, *finetune;
    int depth_bins;
    json_t *variants, *pairs, *budgets;
};
#define BR struct bx_read
static const struct epar_field bx_rows[] = {
    EPAR_FIELD_STR_(BR, "lm_task", lm_task, "benchmark task id of the bpc study (an lm task in order)"),
    EPAR_FIELD_STR_(BR, "retrieval_task", retrieval_task, "benchmark task id of the retrieval grid (a needle task)"),
    EPAR_FIELD_INT_(BR, "depth_bins", depth_bins, 1, 1024, "bins of the fact's depth in the retrieval grid"),
    EPAR_FIELD_(BR, "variants", EPAR_FIELD_JSON, variants, 0),
    EPAR_FIELD_STR_(BR, "finetune", finetune, "series continued at the longer lengths (comma-separated)"),
    EPAR_FIELD_(BR, "pairs", EPAR_FIELD_JSON, pairs, 0),
    EPAR_FIELD_REQ_(BR, "budgets", EPAR_FIELD_JSON, budgets, 0, 0, "the study's sizes by budget"),
    EPAR_FIELD_END_};
#undef BR
static const char *const bx_extra[] = {"description", NULL};

struct bx_budget_read {
    json_t *cells;
    int retrieval_sequences, ft_steps;
    const char *ft_lengths;
};
#define BB struct bx_budget_read
static const struct epar_field bx_budget_rows[] = {
    EPAR_FIELD_(BB, "cells", EPAR_FIELD_JSON, cells, 0),
    EPAR_FIELD_INT_(BB, "retrieval_sequences", retrieval_sequences, 1, 1000000, "needle items at each length"),
    EPAR_FIELD_INT_(BB, "finetune_steps", ft_steps, 0, 1 << 30, "steps of each fine-tuning arm (0: none)"),
    EPAR_FIELD_STR_(BB, "finetune_lengths", ft_lengths, "lengths the arms continue at (comma-separated)"),
    EPAR_FIELD_END_};
#undef BB

static int perr(const struct epar_protocol *p, const char *jp, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int perr(const struct epar_protocol *p, const char *jp, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return epar_err_set(EPAR_EPROTOCOL, "invalid protocol '%s': %s: %s", p->path, jp, msg);
}

static int task_index(const struct epar_bench_cfg *c, const char *id)
{
    for (int k = 0; id && *id && k < c->n_tasks; k++)
        if (!strcmp(c->tasks[k].id, id)) return k;
    return -1;
}

static const struct epar_bx_variant *find_variant(const struct epar_bench_extrap *x, const char *name)
{
    for (int i = 0; i < x->n_variants; i++)
        if (!strcmp(x->variants[i].name, name)) return &x->variants[i];
    return NULL;
}

/* a series name: a trainable mechanism (its own cells), a variant, or either with "+ft" when it is a fine-tuning arm;
 * *trained, *as, *logn, *ft describe it; 0 when the name is none of these */
static int parse_series(const struct epar_bench_extrap *x, const char *name, enum epar_mech_id *trained,
                        enum epar_mech_id *as, int *logn, int *ft)
{
    char base[48];
    snprintf(base, sizeof base, "%s", name);
    size_t n = strlen(base);
    *ft = n > 3 && !strcmp(base + n - 3, "+ft");
    if (*ft) {
        base[n - 3] = '\0';
        int listed = 0;
        for (int i = 0; i < x->n_ft; i++) listed |= !strcmp(x->ft[i], base);
        if (!listed) return 0;
    }
    const struct epar_bx_variant *v = find_variant(x, base);
    if (v) {
        *trained = v->trained;
        *as = v->as;
        *logn = v->logn;
        return 1;
    }
    enum epar_mech_id id;
    if (epar_mech_find(base, &id) || !epar_nnpos_trainable(id)) return 0;
    *trained = *as = id;
    *logn = 0;
    return 1;
}

/* "ntk-rope+log-n": mechanism and stacked log-n */
static int parse_variant_name(const char *name, enum epar_mech_id *as, int *logn)
{
    char m[48];
    snprintf(m, sizeof m, "%s", name);
    size_t n = strlen(m);
    *logn = n > 6 && !strcmp(m + n - 6, "+log-n");
    if (*logn) m[n - 6] = '\0';
    return !epar_mech_find(m, as) && epar_nnpos_trainable(*as);
}

static int parse_lengths(const char *s, int *v, int max, int *n)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s ? s : "");
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        long L = strtol(tok, &end, 10);
        if (*end || L < 2 || L > 65536 || *n >= max) return -1;
        v[(*n)++] = (int)L;
    }
    return 0;
}

/* the budget's object of the study */
static int read_budget(struct epar_bench_cfg *c, const struct epar_protocol *p, json_t *budgets, const char *budget)
{
    struct epar_bench_extrap *x = &c->extrap;
    char jp[300];
    snprintf(jp, sizeof jp, "$.experiments.benchmark.extrapolation.budgets.%s", budget);
    json_t *o = json_object_get(budgets, budget);
    if (!json_is_object(o)) return perr(p, jp, "missing (the study states its sizes for every budget)");
    const char *keys[8];
    epar_fields_keys(bx_budget_rows, NULL, keys, 8);
    struct bx_budget_read r = {NULL, 256, 0, NULL};
    int st = epar_protocol_obj_check_keys(p, o, jp, keys);
    if (!st) st = epar_protocol_obj_fields(p, o, jp, bx_budget_rows, &r);
    if (st) return st;
    x->retrieval_sequences = r.retrieval_sequences;
    x->ft_steps = r.ft_steps;
    char kjp[400];
    snprintf(kjp, sizeof kjp, "%s.finetune_lengths", jp);
    if (parse_lengths(r.ft_lengths, x->ft_lengths, 16, &x->n_ft_lengths))
        return perr(p, kjp, "expected up to 16 comma-separated lengths in [2, 65536]");
    for (int i = 0; i < x->n_ft_lengths; i++) {
        int in = 0;
        for (int e = 0; e < c->b.n_extrap; e++) in |= c->b.extrap[e] == x->ft_lengths[i];
        if (!in || x->ft_lengths[i] <= c->b.lm_length)
            return perr(p, kjp, "%d is not one of the budget's extrapolation lengths above lm_length", x->ft_lengths[i]);
    }
    x->n_cells = 0;
    if (r.cells && !json_is_object(r.cells)) return perr(p, jp, "cells: expected {task id: \"mechanism,...\"}");
    const char *tk;
    json_t *tv;
    json_object_foreach(r.cells, tk, tv) {
        snprintf(kjp, sizeof kjp, "%s.cells.%s", jp, tk);
        if (task_index(c, tk) < 0) return perr(p, kjp, "not a task of the benchmark");
        if (!json_is_string(tv)) return perr(p, kjp, "expected \"mechanism,...\"");
        if (x->n_cells >= EPAR_BX_MAX_CELLS) return perr(p, kjp, "at most %d tasks", EPAR_BX_MAX_CELLS);
        struct epar_bx_cells *cl = &x->cells[x->n_cells++];
        snprintf(cl->task, sizeof cl->task, "%s", tk);
        cl->n_mech = 0;
        char buf[512];
        snprintf(buf, sizeof buf, "%s", json_string_value(tv));
        for (char *save = NULL, *m = strtok_r(buf, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
            enum epar_mech_id id;
            if (epar_nnpos_find(m, &id)) return perr(p, kjp, "%s", epar_err_message());
            if (cl->n_mech < EPAR_MECH_COUNT) cl->mech[cl->n_mech++] = id;
        }
    }
    return EPAR_OK;
}

int epar_bx_config(struct epar_bench_cfg *c, const struct epar_protocol *p, const char *budget)
{
    struct epar_bench_extrap *x = &c->extrap;
    memset(x, 0, sizeof *x);
    const char *jp = "$.experiments.benchmark.extrapolation";
    json_t *o = json_object_get(epar_protocol_section(p, "benchmark"), "extrapolation");
    if (!o) return EPAR_OK;
    const char *keys[16];
    epar_fields_keys(bx_rows, bx_extra, keys, 16);
    struct bx_read r = {.depth_bins = 8};
    int st = epar_protocol_obj_check_keys(p, o, jp, keys);
    if (!st) st = epar_protocol_obj_fields(p, o, jp, bx_rows, &r);
    if (st) return st;
    x->on = 1;
    x->depth_bins = r.depth_bins;
    char kjp[300];
    int t = task_index(c, r.lm_task);
    snprintf(kjp, sizeof kjp, "%s.lm_task", jp);
    if (r.lm_task && (t < 0 || c->tasks[t].task.id != EPAR_TASK_LM || c->tasks[t].task.shuffle))
        return perr(p, kjp, "'%s' is not an lm task of the benchmark in order", r.lm_task);
    snprintf(x->lm_task, sizeof x->lm_task, "%s", r.lm_task ? r.lm_task : "");
    t = task_index(c, r.retrieval_task);
    snprintf(kjp, sizeof kjp, "%s.retrieval_task", jp);
    if (r.retrieval_task && (t < 0 || c->tasks[t].task.id != EPAR_TASK_NEEDLE))
        return perr(p, kjp, "'%s' is not a needle task of the benchmark", r.retrieval_task);
    snprintf(x->retrieval_task, sizeof x->retrieval_task, "%s", r.retrieval_task ? r.retrieval_task : "");
    /* the evaluation lengths: multiples of lm's (the retrieval grid evaluates its task at the same multiples) */
    for (int e = 0; e < c->b.n_extrap; e++)
        if (c->b.extrap[e] % c->b.lm_length)
            return perr(p, "$.experiments.benchmark.budgets", "budget %s: extrapolation length %d is not a multiple of "
                        "lm_length %d (the study evaluates at k times the trained length)", budget, c->b.extrap[e],
                        c->b.lm_length);
    /* variants: {"name": "trained mechanism"}; the same weights (the same parameter count) */
    snprintf(kjp, sizeof kjp, "%s.variants", jp);
    if (r.variants && !json_is_object(r.variants)) return perr(p, kjp, "expected {\"variant\": \"trained mechanism\"}");
    const char *vk;
    json_t *vv;
    json_object_foreach(r.variants, vk, vv) {
        char vjp[400];
        snprintf(vjp, sizeof vjp, "%s.%s", kjp, vk);
        struct epar_bx_variant v = {.logn = 0};
        if (strlen(vk) >= sizeof v.name || !parse_variant_name(vk, &v.as, &v.logn))
            return perr(p, vjp, "expected a trainable mechanism, optionally with '+log-n'");
        if (!json_is_string(vv) || epar_nnpos_find(json_string_value(vv), &v.trained))
            return perr(p, vjp, "expected the trainable mechanism whose weights it reads");
        if (v.as == v.trained && !v.logn) return perr(p, vjp, "a variant differs from its trained mechanism");
        snprintf(v.name, sizeof v.name, "%s", vk);
        struct epar_train_cfg a = c->base, b = c->base;
        a.mechanism = v.trained;
        b.mechanism = v.as;
        a.task.length = b.task.length = c->b.lm_length;
        size_t na = 0, nb = 0;
        if (epar_exp_train_param_count(&a, 2, &na) || epar_exp_train_param_count(&b, 2, &nb) || na != nb)
            return perr(p, vjp, "%s has other parameters than %s: not a reading of the same weights",
                        epar_nnpos_name(v.as), epar_nnpos_name(v.trained));
        if (x->n_variants >= EPAR_BX_MAX_SERIES) return perr(p, vjp, "at most %d variants", EPAR_BX_MAX_SERIES);
        x->variants[x->n_variants++] = v;
    }
    /* fine-tuning arms: series names */
    snprintf(kjp, sizeof kjp, "%s.finetune", jp);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", r.finetune ? r.finetune : "");
    for (char *save = NULL, *s = strtok_r(buf, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
        enum epar_mech_id tr, as;
        int logn, ft;
        if (x->n_ft >= EPAR_BX_MAX_FT || strlen(s) >= sizeof x->ft[0] || !parse_series(x, s, &tr, &as, &logn, &ft) || ft)
            return perr(p, kjp, "'%s' is not a trained mechanism or a variant (at most %d arms)", s, EPAR_BX_MAX_FT);
        snprintf(x->ft[x->n_ft++], sizeof x->ft[0], "%s", s);
    }
    /* pairs: [["a", "b"], ...] of series names */
    snprintf(kjp, sizeof kjp, "%s.pairs", jp);
    if (r.pairs && !json_is_array(r.pairs)) return perr(p, kjp, "expected [[\"a\", \"b\"], ...]");
    size_t i;
    json_t *pv;
    json_array_foreach(r.pairs, i, pv) {
        char pjp[400];
        snprintf(pjp, sizeof pjp, "%s[%zu]", kjp, i);
        const char *a = json_string_value(json_array_get(pv, 0)), *b = json_string_value(json_array_get(pv, 1));
        enum epar_mech_id tr, as;
        int logn, ft;
        if (!json_is_array(pv) || json_array_size(pv) != 2 || !a || !b)
            return perr(p, pjp, "expected [\"a\", \"b\"]: two series names");
        for (int k = 0; k < 2; k++) {
            char g[64];
            if (strlen(k ? b : a) >= sizeof x->pair_a[0]) return perr(p, pjp, "a name of at most 47 characters");
            snprintf(g, sizeof g, "%s", k ? b : a);
            for (char *save = NULL, *m = strtok_r(g, "|", &save); m; m = strtok_r(NULL, "|", &save))
                if (!parse_series(x, m, &tr, &as, &logn, &ft))
                    return perr(p, pjp, "'%s' is not a series of the study (a trainable mechanism, a variant or an "
                                "arm's '<series>+ft'; 'a|b|c': the per-seed mean of a group)", m);
        }
        if (x->n_pairs >= EPAR_BX_MAX_PAIRS) return perr(p, pjp, "at most %d pairs", EPAR_BX_MAX_PAIRS);
        snprintf(x->pair_a[x->n_pairs], sizeof x->pair_a[0], "%s", a);
        snprintf(x->pair_b[x->n_pairs++], sizeof x->pair_b[0], "%s", b);
    }
    if ((st = read_budget(c, p, r.budgets, budget))) return st;
    epar_bx_select(c);
    return EPAR_OK;
}

static const struct epar_bx_cells *cells_of(const struct epar_bench_extrap *x, const char *task)
{
    for (int i = 0; i < x->n_cells; i++)
        if (!strcmp(x->cells[i].task, task)) return &x->cells[i];
    return NULL;
}

void epar_bx_select(struct epar_bench_cfg *c)
{
    struct epar_bench_extrap *x = &c->extrap;
    x->n_extra = 0;
    if (!x->on || x->restricted) return;
    for (int i = 0; i < x->n_cells; i++) {
        if (task_index(c, x->cells[i].task) < 0) continue;
        for (int k = 0; k < x->cells[i].n_mech; k++) {
            enum epar_mech_id id = x->cells[i].mech[k];
            int have = 0;
            for (int m = 0; m < c->n_mech + x->n_extra; m++) have |= c->mech[m] == id;
            if (!have && c->n_mech + x->n_extra < EPAR_MECH_COUNT) c->mech[c->n_mech + x->n_extra++] = id;
        }
    }
}

int epar_bx_has_cell(const struct epar_bench_cfg *c, int t, int m)
{
    if (m < c->n_mech) return 1;
    if (m >= c->n_mech + c->extrap.n_extra || t < 0 || t >= c->n_tasks) return 0;
    const struct epar_bx_cells *cl = cells_of(&c->extrap, c->tasks[t].id);
    for (int k = 0; cl && k < cl->n_mech; k++)
        if (cl->mech[k] == c->mech[m]) return 1;
    return 0;
}

/* ------------------------------------------------------------------------------------------------ */
/* the series of a cell                                                                               */

/* the series of the study on trained mechanism `mech`: itself, then the variants of its weights */
struct series {
    char name[48];
    enum epar_mech_id trained, as;
    int logn, ft;
    char base[48];   /* ft: the series it continues */
};

static int cell_series(const struct epar_bench_extrap *x, enum epar_mech_id mech, struct series *s, int max)
{
    int n = 0;
    s[n++] = (struct series){.trained = mech, .as = mech};
    snprintf(s[0].name, sizeof s[0].name, "%s", epar_nnpos_name(mech));
    for (int i = 0; i < x->n_variants && n < max; i++)
        if (x->variants[i].trained == mech) {
            s[n] = (struct series){.trained = mech, .as = x->variants[i].as, .logn = x->variants[i].logn};
            snprintf(s[n++].name, sizeof s[0].name, "%s", x->variants[i].name);
        }
    return n;
}

/* its fine-tuning arms */
static int cell_arms(const struct epar_bench_extrap *x, enum epar_mech_id mech, struct series *s, int max)
{
    int n = 0;
    for (int i = 0; i < x->n_ft && n < max; i++) {
        enum epar_mech_id tr, as;
        int logn, ft;
        if (!parse_series(x, x->ft[i], &tr, &as, &logn, &ft) || tr != mech) continue;
        s[n] = (struct series){.trained = tr, .as = as, .logn = logn, .ft = 1};
        snprintf(s[n].name, sizeof s[n].name, "%s+ft", x->ft[i]);
        snprintf(s[n++].base, sizeof s[0].base, "%s", x->ft[i]);
    }
    return n;
}

enum cell_kind { KIND_NONE, KIND_LM, KIND_RETRIEVAL };

static enum cell_kind kind_of(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell)
{
    if (!c->extrap.on || cell->task < 0) return KIND_NONE;
    const char *id = c->tasks[cell->task].id;
    if (!strcmp(id, c->extrap.lm_task)) return KIND_LM;
    if (!strcmp(id, c->extrap.retrieval_task)) return KIND_RETRIEVAL;
    return KIND_NONE;
}

/* the evaluation lengths of a cell's task: lm's, or the same multiples of the retrieval task's length */
static int eval_length(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell, int e)
{
    return c->b.extrap[e] / c->b.lm_length * c->tasks[cell->task].task.length;
}

json_t *epar_bx_cell_config(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell)
{
    enum cell_kind kind = kind_of(c, cell);
    if (kind == KIND_NONE) return NULL;
    const struct epar_bench_extrap *x = &c->extrap;
    struct series s[EPAR_BX_MAX_SERIES], a[EPAR_BX_MAX_FT];
    enum epar_mech_id mech = c->mech[cell->mech];
    int ns = cell_series(x, mech, s, EPAR_BX_MAX_SERIES), na = kind == KIND_LM ? cell_arms(x, mech, a, EPAR_BX_MAX_FT) : 0;
    json_t *o = json_object(), *sj = json_array(), *lj = json_array();
    struct epar_train_cfg t, f;
    epar_exp_benchmark_cell_cfg(c, cell, &t);
    for (int i = 0; i < ns; i++) {
        /* what it reads the weights as: the mechanism, its catalogue parameters (train_length = the trained length,
         * base = rope's on rope's weights) and the stacked log-n's length */
        epar_exp_train_as(&t, s[i].as, s[i].logn, 0, &f);
        json_t *row = json_pack("{s:s, s:s, s:i}", "series", s[i].name, "as", epar_nnpos_name(s[i].as), "log-n_length",
                                f.pos.logn_length);
        if (epar_nnpos_table[s[i].as].uses_params && epar_mech_table[s[i].as].params[0].name)
            json_object_set_new(row, "mechanism_params", epar_exp_train_params_json(s[i].as, f.pos.mp[s[i].as]));
        json_array_append_new(sj, row);
    }
    for (int e = 0; e < c->b.n_extrap; e++) json_array_append_new(lj, json_integer(eval_length(c, cell, e)));
    json_object_set_new(o, "series", sj);
    json_object_set_new(o, "lengths", lj);
    if (kind == KIND_LM) {
        json_object_set_new(o, "tokens", json_integer(c->b.extrap_tokens));
        if (na && x->ft_steps > 0 && x->n_ft_lengths) {
            json_t *aj = json_array(), *fl = json_array();
            for (int i = 0; i < na; i++) json_array_append_new(aj, json_string(a[i].name));
            for (int i = 0; i < x->n_ft_lengths; i++) json_array_append_new(fl, json_integer(x->ft_lengths[i]));
            json_object_set_new(o, "finetune", aj);
            json_object_set_new(o, "finetune_lengths", fl);
            json_object_set_new(o, "finetune_steps", json_integer(x->ft_steps));
        }
    } else {
        json_object_set_new(o, "sequences", json_integer(x->retrieval_sequences));
    }
    return o;
}

/* ------------------------------------------------------------------------------------------------ */
/* a cell's numbers                                                                                   */

/* lm at one length: the window mean, per bucket (bucket 0 = [0, L), j >= 1 = [2^(j-1) L, 2^j L)) and past L */
struct lm_row {
    const char *series;
    int length, defined;
    double bpc, past;
    double bucket[EPAR_BX_MAX_BUCKETS];
    int n_bucket;
    long tokens;
    int ft_steps;
    double ft_tokens;
};
#define LR struct lm_row
static const struct epar_field lm_row_rows[] = {
    EPAR_FIELD_(LR, "series", EPAR_FIELD_STRING, series, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_RANGE_(LR, "length", EPAR_FIELD_INT, length, 2, 1 << 20, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_(LR, "defined", EPAR_FIELD_BOOL, defined, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_(LR, "bpc", EPAR_FIELD_DOUBLE, bpc, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(LR, "past_train_length", EPAR_FIELD_DOUBLE, past, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_LIST_(LR, "buckets", EPAR_FIELD_DLIST, bucket, n_bucket, EPAR_BX_MAX_BUCKETS,
                     EPAR_FIELD_OPTIONAL | EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_RANGE_(LR, "tokens", EPAR_FIELD_LONG, tokens, 0, 1e15, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_RANGE_(LR, "finetune_steps", EPAR_FIELD_INT, ft_steps, 0, 1 << 30, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(LR, "finetune_tokens", EPAR_FIELD_DOUBLE, ft_tokens, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_END_};
#undef LR

/* retrieval at one length: answers and correct ones by the fact's distance d (index d, 0 unused) */
struct ret_row {
    const char *series;
    int length, defined;
    long *correct, *scored;
    int n_correct, n_scored;
};
#define RR struct ret_row
static const struct epar_field ret_row_rows[] = {
    EPAR_FIELD_(RR, "series", EPAR_FIELD_STRING, series, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_RANGE_(RR, "length", EPAR_FIELD_INT, length, 2, 1 << 20, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_(RR, "defined", EPAR_FIELD_BOOL, defined, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_LIST_(RR, "distance_correct", EPAR_FIELD_LLIST, correct, n_correct, 1 << 20,
                     EPAR_FIELD_OPTIONAL | EPAR_FIELD_ALLOC),
    EPAR_FIELD_LIST_(RR, "distance_scored", EPAR_FIELD_LLIST, scored, n_scored, 1 << 20,
                     EPAR_FIELD_OPTIONAL | EPAR_FIELD_ALLOC),
    EPAR_FIELD_END_};
#undef RR

#define BX_MAX_ROWS (EPAR_BX_MAX_SERIES * 16 + EPAR_BX_MAX_FT * 16)
struct study_rec {
    double cpu_seconds;   /* the calling thread's CPU time of the study's evaluations and arms (not read by the tables) */
    int n_lm, n_ret;
    struct lm_row lm[BX_MAX_ROWS];
    struct ret_row ret[EPAR_BX_MAX_SERIES * 16];
};
#define SR struct study_rec
static const struct epar_field study_rows[] = {
    EPAR_FIELD_(SR, "cpu_seconds", EPAR_FIELD_DOUBLE, cpu_seconds, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_OLIST_(SR, "lm", lm, n_lm, BX_MAX_ROWS, lm_row_rows, EPAR_FIELD_OPTIONAL | EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_OLIST_(SR, "retrieval", ret, n_ret, EPAR_BX_MAX_SERIES * 16, ret_row_rows,
                      EPAR_FIELD_OPTIONAL | EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_END_};
#undef SR

/* the buckets of a window of length T for training length L: their count and the edges of bucket j */
static int n_buckets(int T, int L)
{
    int n = 1;
    while (n < EPAR_BX_MAX_BUCKETS && (long)L << (n - 1) < T) n++;
    return n;
}

static void bucket_edges(int j, int L, int T, int *lo, int *hi)
{
    *lo = j == 0 ? 0 : L << (j - 1);
    *hi = L << j;
    if (*hi > T) *hi = T;
}

/* sums of loss and weight over positions [lo, hi) as bpc (NaN when nothing was scored) */
static double pos_bpc(const double *loss, const double *w, int lo, int hi)
{
    double a = 0, b = 0;
    for (int t = lo; t < hi; t++) {
        a += loss[t];
        b += w[t];
    }
    return b > 0 ? a / b / log(2.0) : NAN;
}

/* evaluate r's weights as configuration e on the lm windows of its length: the row's numbers */
static int lm_eval(struct epar_train_run *r, const struct epar_train_cfg *e, long windows, int L, struct lm_row *row)
{
    int T = e->task.length;
    double *loss = calloc((size_t)T, sizeof *loss), *w = calloc((size_t)T, sizeof *w);
    if (!loss || !w) {
        free(loss);
        free(w);
        return epar_err_set(EPAR_ENOMEM, "out of memory evaluating by position");
    }
    struct epar_train_eval ev;
    r->pos_loss = loss;
    r->pos_weight = w;
    int st = epar_exp_train_evaluate_as(r, e, windows, &ev);
    r->pos_loss = r->pos_weight = NULL;
    if (!st) {
        row->defined = 1;
        row->bpc = ev.metric;
        row->tokens = ev.scored;
        row->n_bucket = n_buckets(T, L);
        for (int j = 0; j < row->n_bucket; j++) {
            int lo, hi;
            bucket_edges(j, L, T, &lo, &hi);
            row->bucket[j] = pos_bpc(loss, w, lo, hi);
        }
        row->past = T > L ? pos_bpc(loss, w, L, T) : NAN;
    }
    free(loss);
    free(w);
    return st;
}

/* a fine-tuning arm: r's weights as series a continued at length T for ft_steps steps (the same tokens per step, the
 * schedule's final learning rate after a short warm-up, fresh AdamW moments, the data stream (seed, 1) shared by
 * every arm and length), then evaluated there */
static int lm_finetune(const struct epar_bench_cfg *c, struct epar_train_run *r, const struct series *a, int T,
                       struct lm_row *row)
{
    const struct epar_bench_extrap *x = &c->extrap;
    struct epar_train_cfg f;
    epar_exp_train_as(&r->cfg, a->as, a->logn, T, &f);
    f.optim.steps = x->ft_steps;
    f.optim.warmup = x->ft_steps / 10;
    f.optim.lr = r->cfg.optim.lr * r->cfg.optim.lr_min_ratio;
    f.optim.lr_min_ratio = 1;
    f.eval_every = x->ft_steps;
    f.eval_batches = 1;
    struct epar_train_run y;
    int st = epar_exp_train_derive(&y, r, &f);
    if (!st) {
        epar_rng_free(y.data);
        y.data = epar_rng_alloc(f.seed, 1, EPAR_RNG_DATA);
        if (!y.data) st = epar_err_set(EPAR_ENOMEM, "out of memory");
    }
    y.stop = r->stop;
    if (!st) st = epar_exp_train_loop(&y);
    if (!st) {
        long windows = c->b.extrap_tokens / T > 0 ? c->b.extrap_tokens / T : 1;
        st = lm_eval(&y, &f, windows, r->cfg.task.length, row);
        row->ft_steps = (int)y.step;
        row->ft_tokens = y.tokens;
    }
    epar_exp_train_free(&y);
    return st;
}

struct dist_acc {
    const struct epar_task *task;
    long *correct, *scored;
};

static void on_item(void *ctx, long item, long correct, long scored)
{
    struct dist_acc *g = ctx;
    int d = epar_task_eval_group(g->task, item);
    g->correct[d] += correct;
    g->scored[d] += scored;
}

/* the needle at one length: answers by distance over retrieval_sequences items spread over the distances */
static int ret_eval(const struct epar_bench_cfg *c, struct epar_train_run *r, const struct epar_train_cfg *e,
                    struct ret_row *row)
{
    struct epar_train_cfg f = *e;
    f.task.eval_sequences = c->extrap.retrieval_sequences;
    struct epar_train_run y;
    int st = epar_exp_train_derive(&y, r, &f), D = epar_task_max_group(&f.task);
    row->correct = calloc((size_t)D + 1, sizeof *row->correct);
    row->scored = calloc((size_t)D + 1, sizeof *row->scored);
    if (!st && (!row->correct || !row->scored)) st = epar_err_set(EPAR_ENOMEM, "out of memory");
    if (!st) {
        row->n_correct = row->n_scored = D + 1;
        struct dist_acc g = {&y.task, row->correct, row->scored};
        y.eval_item = on_item;
        y.eval_ctx = &g;
        struct epar_train_eval ev;
        st = epar_exp_train_evaluate(&y, 0, &ev);
        row->defined = 1;
    }
    epar_exp_train_free(&y);
    return st;
}

int epar_bx_cell_run(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell, struct epar_train_run *r,
                     json_t **out)
{
    *out = NULL;
    enum cell_kind kind = kind_of(c, cell);
    if (kind == KIND_NONE) return EPAR_OK;
    const struct epar_bench_extrap *x = &c->extrap;
    struct series s[EPAR_BX_MAX_SERIES], a[EPAR_BX_MAX_FT];
    enum epar_mech_id mech = c->mech[cell->mech];
    int ns = cell_series(x, mech, s, EPAR_BX_MAX_SERIES), na = kind == KIND_LM ? cell_arms(x, mech, a, EPAR_BX_MAX_FT) : 0;
    struct study_rec *rec = EPAR_CALLOC(1, sizeof *rec);
    if (!rec) return EPAR_ENOMEM;
    int st = EPAR_OK, L = r->cfg.task.length;
    double c0 = epar_nn_thread_cpu();
    for (int i = 0; i < ns && !st; i++)
        for (int e = 0; e < c->b.n_extrap && !st; e++) {
            int T = eval_length(c, cell, e);
            struct epar_train_cfg f;
            int defined = epar_exp_train_as(&r->cfg, s[i].as, s[i].logn, T, &f);
            if (kind == KIND_LM) {
                struct lm_row *row = &rec->lm[rec->n_lm++];
                *row = (struct lm_row){s[i].name, T, 0, NAN, NAN, {0}, 0, -1, -1, NAN};
                long windows = c->b.extrap_tokens / T > 0 ? c->b.extrap_tokens / T : 1;
                if (defined) st = lm_eval(r, &f, windows, L, row);
            } else {
                struct ret_row *row = &rec->ret[rec->n_ret++];
                *row = (struct ret_row){s[i].name, T, 0, NULL, NULL, 0, 0};
                if (defined) st = ret_eval(c, r, &f, row);
            }
        }
    for (int i = 0; i < na && !st && x->ft_steps > 0; i++)
        for (int e = 0; e < x->n_ft_lengths && !st; e++) {
            struct lm_row *row = &rec->lm[rec->n_lm++];
            *row = (struct lm_row){a[i].name, x->ft_lengths[e], 0, NAN, NAN, {0}, 0, -1, -1, NAN};
            if (!epar_nnpos_fixed_length(a[i].as, &r->cfg.pos)) st = lm_finetune(c, r, &a[i], x->ft_lengths[e], row);
        }
    rec->cpu_seconds = epar_nn_thread_cpu() - c0;
    if (!st && !(*out = epar_fields_json(study_rows, rec, NULL))) st = epar_err_set(EPAR_ENOMEM, "out of memory");
    for (int i = 0; i < rec->n_ret; i++) {
        free(rec->ret[i].correct);
        free(rec->ret[i].scored);
    }
    free(rec);
    return st;
}

/* ------------------------------------------------------------------------------------------------ */
/* tables                                                                                             */

/* what a cell file gives the study: its seed, chance level, study rows and the grid's needle counts */
struct cell_read {
    long seed;
    double chance;
    struct study_rec *study;
    long *correct, *scored;
    int n_correct, n_scored;
    json_t *doc;   /* the study's document (its rows' strings borrow from it) */
};
#define CR struct cell_read
static const struct epar_field cell_read_rows[] = {
    EPAR_FIELD_RANGE_(CR, "seed", EPAR_FIELD_LONG, seed, 0, 1e15, 0),
    EPAR_FIELD_(CR, "chance", EPAR_FIELD_DOUBLE, chance, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_LIST_(CR, "distance_correct", EPAR_FIELD_LLIST, correct, n_correct, 65537, EPAR_FIELD_OPTIONAL | EPAR_FIELD_ALLOC),
    EPAR_FIELD_LIST_(CR, "distance_scored", EPAR_FIELD_LLIST, scored, n_scored, 65537, EPAR_FIELD_OPTIONAL | EPAR_FIELD_ALLOC),
    EPAR_FIELD_END_};
#undef CR
static const struct epar_field cell_study_rows[] = {
    {"extrapolation_study", EPAR_FIELD_OBJ, 0, 0, 0, 0, NULL, 0, 0, 0, 0, 0, study_rows, 0}, EPAR_FIELD_END_};

static int cell_index(const struct epar_bench_plan *plan, int t, int m, int s)
{
    for (int k = 0; k < plan->n; k++)
        if (plan->cells[k].task == t && plan->cells[k].mech == m && plan->cells[k].seed == s) return k;
    return -1;
}

/* read cell (t, m, s) under root into r (r->study allocated); EPAR_EIO when it is missing */
static int read_cell(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root, int t, int m,
                     int s, struct cell_read *r)
{
    memset(r, 0, sizeof *r);
    r->chance = NAN;
    int k = cell_index(plan, t, m, s);
    if (k < 0) return epar_err_set(EPAR_EINVAL, "no cell of task %s, %s, seed %lu in the plan", c->tasks[t].id,
                                   epar_nnpos_name(c->mech[m]), c->b.seeds[s]);
    char dir[512], path[4800];
    epar_exp_benchmark_cell_dir(c, &plan->cells[k], dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%s/cell.json", root, dir);
    if (!(r->study = EPAR_CALLOC(1, sizeof *r->study))) return EPAR_ENOMEM;
    int st = epar_fields_load(path, "cell file", cell_read_rows, r, NULL);
    if (!st) st = epar_fields_load(path, "cell file", cell_study_rows, r->study, &r->doc);
    return st;
}

static void free_cell(struct cell_read *r)
{
    epar_fields_free(cell_read_rows, r);
    if (r->study) epar_fields_free(study_rows, r->study);
    free(r->study);
    r->study = NULL;
    json_decref(r->doc);
    r->doc = NULL;
}

/* the lm study in memory: per series, seed, length: the bins (window, past L, buckets) */
#define NBIN (2 + EPAR_BX_MAX_BUCKETS)
struct lm_series {
    struct series s;
    int m;                          /* mechanism index of its cells */
    double *v;                      /* (S, NL, NBIN) bpc; NaN: absent */
    double *ref, *H;                /* (S) b(1) (the window at the trained length of the series, or of the arm's base) and H */
    int ft_steps;
    double ft_tokens;
    int present;                    /* any row read */
};

struct lm_study {
    int n, S, NL, L;
    const int *lengths;
    struct lm_series *s;
};

static double *lmv(const struct lm_study *d, int i, int s, int e, int b)
{
    return d->s[i].v + (((size_t)s * d->NL + e) * NBIN + b);
}

static int lm_find(const struct lm_study *d, const char *name)
{
    for (int i = 0; i < d->n; i++)
        if (!strcmp(d->s[i].s.name, name)) return i;
    return -1;
}

static int bin_name(int b, char *buf, size_t n)
{
    if (b == 0) return snprintf(buf, n, "window");
    if (b == 1) return snprintf(buf, n, "past_L");
    int j = b - 2;
    return j == 0 ? snprintf(buf, n, "0-1") : snprintf(buf, n, "%d-%d", 1 << (j - 1), 1 << j);
}

/* the registry: the trained mechanisms' own series, then the variants, then the arms (of mechanisms with cells) */
static int lm_study_build(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                          struct lm_study *d)
{
    const struct epar_bench_extrap *x = &c->extrap;
    int t = task_index(c, x->lm_task), S = c->b.n_seeds, NL = c->b.n_extrap;
    memset(d, 0, sizeof *d);
    if (t < 0) return EPAR_OK;
    d->S = S;
    d->NL = NL;
    d->L = c->tasks[t].task.length;
    d->lengths = c->b.extrap;
    int M = c->n_mech + x->n_extra, cap = M * (1 + x->n_variants + x->n_ft) + 1;
    d->s = EPAR_CALLOC((size_t)cap, sizeof *d->s);
    if (!d->s) return EPAR_ENOMEM;
    for (int pass = 0; pass < 3; pass++)
        for (int m = 0; m < M; m++) {
            if (!epar_bx_has_cell(c, t, m)) continue;
            struct series sv[EPAR_BX_MAX_SERIES];
            int n = pass == 2 ? cell_arms(x, c->mech[m], sv, EPAR_BX_MAX_FT) : cell_series(x, c->mech[m], sv, EPAR_BX_MAX_SERIES);
            for (int i = pass == 1 ? 1 : 0; i < (pass == 0 ? 1 : n) && d->n < cap; i++) {
                struct lm_series *ls = &d->s[d->n++];
                ls->s = sv[i];
                ls->m = m;
                ls->v = malloc((size_t)S * NL * NBIN * sizeof *ls->v);
                ls->ref = malloc((size_t)S * sizeof *ls->ref);
                ls->H = malloc((size_t)S * sizeof *ls->H);
                if (!ls->v || !ls->ref || !ls->H) return epar_err_set(EPAR_ENOMEM, "out of memory");
                for (size_t q = 0; q < (size_t)S * NL * NBIN; q++) ls->v[q] = NAN;
                for (int q = 0; q < S; q++) ls->ref[q] = ls->H[q] = NAN;
            }
        }
    /* the cells' rows */
    int st = EPAR_OK;
    for (int m = 0; m < M && !st; m++) {
        if (!epar_bx_has_cell(c, t, m)) continue;
        for (int s = 0; s < S && !st; s++) {
            struct cell_read cr;
            st = read_cell(c, plan, root, t, m, s, &cr);
            for (int r = 0; !st && r < cr.study->n_lm; r++) {
                const struct lm_row *row = &cr.study->lm[r];
                int i = lm_find(d, row->series), e = -1;
                for (int q = 0; q < NL; q++)
                    if (d->lengths[q] == row->length) e = q;
                if (i < 0 || e < 0 || d->s[i].m != m || !row->defined) continue;
                struct lm_series *ls = &d->s[i];
                ls->present = 1;
                *lmv(d, i, s, e, 0) = row->bpc;
                *lmv(d, i, s, e, 1) = row->past;
                for (int j = 0; j < row->n_bucket && j < EPAR_BX_MAX_BUCKETS; j++) *lmv(d, i, s, e, 2 + j) = row->bucket[j];
                if (row->ft_steps >= 0) {
                    ls->ft_steps = row->ft_steps;
                    ls->ft_tokens = row->ft_tokens;
                }
            }
            for (int i = 0; !st && i < d->n; i++)
                if (d->s[i].m == m) d->s[i].H[s] = cr.chance;
            free_cell(&cr);
        }
    }
    /* b(1): the series' window at the trained length, an arm's from the series it continues */
    int e1 = -1;
    for (int q = 0; q < NL; q++)
        if (d->lengths[q] == d->L) e1 = q;
    for (int i = 0; i < d->n && e1 >= 0; i++) {
        int from = d->s[i].s.ft ? lm_find(d, d->s[i].s.base) : i;
        for (int s = 0; s < S && from >= 0; s++) d->s[i].ref[s] = *lmv(d, from, s, e1, 0);
    }
    return st;
}

static void lm_study_free(struct lm_study *d)
{
    for (int i = 0; d->s && i < d->n; i++) {
        free(d->s[i].v);
        free(d->s[i].ref);
        free(d->s[i].H);
    }
    free(d->s);
    d->s = NULL;
}

/* per seed: bpc of bin b at length e, and the lost-gain share (b - b(1)) / (H - b(1)); 1 when every seed has both */
static int lm_values(const struct lm_study *d, int i, int e, int b, double *bpc, double *share, double *rel)
{
    int ok = 1;
    for (int s = 0; s < d->S; s++) {
        const struct lm_series *ls = &d->s[i];
        bpc[s] = *lmv(d, i, s, e, b);
        share[s] = (bpc[s] - ls->ref[s]) / (ls->H[s] - ls->ref[s]);
        if (rel) rel[s] = (bpc[s] - ls->ref[s]) / ls->ref[s];
        ok &= isfinite(bpc[s]);
    }
    return ok;
}

/* a pair's side: a series, or "a|b|c" the per-seed mean of a group's (every member defined); 0: absent or undefined */
static int group_values(const struct lm_study *d, const char *name, int e, int b, double *bpc, double *share)
{
    char g[64];
    double x[EPAR_MAX_SEEDS], y[EPAR_MAX_SEEDS];
    int n = 0, ok = 1;
    snprintf(g, sizeof g, "%s", name);
    for (int s = 0; s < d->S; s++) bpc[s] = share[s] = 0;
    for (char *save = NULL, *m = strtok_r(g, "|", &save); m && ok; m = strtok_r(NULL, "|", &save)) {
        int i = lm_find(d, m);
        ok = i >= 0 && lm_values(d, i, e, b, x, y, NULL);
        for (int s = 0; ok && s < d->S; s++) {
            bpc[s] += x[s];
            share[s] += y[s];
        }
        n++;
    }
    for (int s = 0; s < d->S; s++) {
        bpc[s] = ok && n ? bpc[s] / n : NAN;
        share[s] = ok && n ? share[s] / n : NAN;
    }
    return ok && n;
}

/* does bin b exist at length T (training length L)? */
static int bin_exists(int b, int T, int L)
{
    return b == 0 || (b == 1 && T > L) || (b >= 2 && b - 2 < n_buckets(T, L));
}

/* the rows of series i, bin b (window, past_L) for the figure: first and last row index in the table */
struct fig_range {
    int first[EPAR_BX_MAX_SERIES * 3][2], last[EPAR_BX_MAX_SERIES * 3][2];
};

static struct epar_table *lm_table(const struct epar_bench_cfg *c, const struct lm_study *d, struct fig_range *fr)
{
    struct epar_table *t = epar_csv_new("task,series,trained,as,log_n,finetuned,length,k,train_length,bin,pos_lo,pos_hi,"
                                        "defined,seeds,bpc,bpc_sd,share,share_sd,share_lo,share_hi,rel,rel_sd,rel_lo,"
                                        "rel_hi,finetune_steps,finetune_tokens");
    double bpc[EPAR_MAX_SEEDS], sh[EPAR_MAX_SEEDS], rl[EPAR_MAX_SEEDS];
    for (int i = 0; t && i < d->n; i++)
        for (int b = 0; b < NBIN; b++) {
            if (i < EPAR_BX_MAX_SERIES * 3 && b < 2) fr->first[i][b] = fr->last[i][b] = -1;
            for (int e = 0; e < d->NL; e++) {
                int T = d->lengths[e];
                if (!bin_exists(b, T, d->L)) continue;
                const struct lm_series *ls = &d->s[i];
                int isft = ls->s.ft, at_ft = 0;
                for (int q = 0; isft && q < c->extrap.n_ft_lengths; q++) at_ft |= c->extrap.ft_lengths[q] == T;
                if (isft && !at_ft) continue;
                int ok = lm_values(d, i, e, b, bpc, sh, rl);
                if (!ok && b > 0) continue;   /* an undefined length is said once, in its window row */
                struct epar_stats_paired ps, pr;
                epar_stats_paired(sh, ok ? d->S : 0, c->level, &ps);
                epar_stats_paired(rl, ok ? d->S : 0, c->level, &pr);
                double mb, sb, msh, ssh, mr, sr;
                epar_stats_mean_sd(bpc, ok ? (size_t)d->S : 0, &mb, &sb);
                epar_stats_mean_sd(sh, ok ? (size_t)d->S : 0, &msh, &ssh);
                epar_stats_mean_sd(rl, ok ? (size_t)d->S : 0, &mr, &sr);
                int lo, hi;
                char bn[16];
                bin_name(b, bn, sizeof bn);
                if (b == 0) lo = 0, hi = T;
                else if (b == 1) lo = d->L, hi = T;
                else bucket_edges(b - 2, d->L, T, &lo, &hi);
                if (i < EPAR_BX_MAX_SERIES * 3 && b < 2) {
                    if (fr->first[i][b] < 0) fr->first[i][b] = (int)t->nrows;
                    fr->last[i][b] = (int)t->nrows;
                }
                if (epar_csv_append(t, "ssssiiiiisiiiiddddddddddid", c->extrap.lm_task, ls->s.name,
                                    epar_nnpos_name(ls->s.trained), epar_nnpos_name(ls->s.as), ls->s.logn, isft, T,
                                    T / d->L, d->L, bn, lo, hi, ok, d->S, mb, sb, msh, ssh, ps.lo, ps.hi, mr, sr, pr.lo,
                                    pr.hi, isft ? ls->ft_steps : 0, isft ? ls->ft_tokens : 0.0)) {
                    epar_csv_free(t);
                    return NULL;
                }
            }
        }
    return t;
}

/* the retrieval grid in memory: per series, seed, length: answers and correct ones by distance */
struct ret_series {
    struct series s;
    int m;
    long **correct, **scored;       /* (S * NL) arrays of D_e + 1, NULL: undefined */
};

struct ret_study {
    int n, S, NL, L, t;
    int lengths[EPAR_BENCH_MAX_EXTRAP];
    struct ret_series *s;
    double chance;
};

static void ret_study_free(struct ret_study *d)
{
    for (int i = 0; d->s && i < d->n; i++) {
        for (int q = 0; q < d->S * d->NL; q++) {
            free(d->s[i].correct[q]);
            free(d->s[i].scored[q]);
        }
        free(d->s[i].correct);
        free(d->s[i].scored);
    }
    free(d->s);
    d->s = NULL;
}

static int ret_study_build(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                           struct ret_study *d)
{
    const struct epar_bench_extrap *x = &c->extrap;
    int t = task_index(c, x->retrieval_task), S = c->b.n_seeds, NL = c->b.n_extrap;
    memset(d, 0, sizeof *d);
    d->chance = NAN;
    if (t < 0) return EPAR_OK;
    d->S = S;
    d->NL = NL;
    d->t = t;
    d->L = c->tasks[t].task.length;
    for (int e = 0; e < NL; e++) d->lengths[e] = c->b.extrap[e] / c->b.lm_length * d->L;
    int M = c->n_mech + x->n_extra, cap = M * (1 + x->n_variants);
    d->s = EPAR_CALLOC((size_t)cap + 1, sizeof *d->s);
    if (!d->s) return EPAR_ENOMEM;
    for (int pass = 0; pass < 2; pass++)
        for (int m = 0; m < M; m++) {
            if (!epar_bx_has_cell(c, t, m)) continue;
            struct series sv[EPAR_BX_MAX_SERIES];
            int n = cell_series(x, c->mech[m], sv, EPAR_BX_MAX_SERIES);
            for (int i = pass; i < (pass == 0 ? 1 : n) && d->n < cap; i++) {
                struct ret_series *rs = &d->s[d->n++];
                rs->s = sv[i];
                rs->m = m;
                rs->correct = EPAR_CALLOC((size_t)S * NL, sizeof *rs->correct);
                rs->scored = EPAR_CALLOC((size_t)S * NL, sizeof *rs->scored);
                if (!rs->correct || !rs->scored) return EPAR_ENOMEM;
            }
        }
    int st = EPAR_OK;
    double ch = 0;
    int nch = 0;
    for (int m = 0; m < M && !st; m++) {
        if (!epar_bx_has_cell(c, t, m)) continue;
        for (int s = 0; s < S && !st; s++) {
            struct cell_read cr;
            st = read_cell(c, plan, root, t, m, s, &cr);
            if (!st && isfinite(cr.chance)) {
                ch += cr.chance;
                nch++;
            }
            for (int r = 0; !st && r < cr.study->n_ret; r++) {
                struct ret_row *row = &cr.study->ret[r];
                int i = -1, e = -1;
                for (int q = 0; q < d->n; q++)
                    if (d->s[q].m == m && !strcmp(d->s[q].s.name, row->series)) i = q;
                for (int q = 0; q < NL; q++)
                    if (d->lengths[q] == row->length) e = q;
                if (i < 0 || e < 0 || !row->defined || !row->correct || !row->scored || row->n_correct != row->n_scored)
                    continue;
                /* the arrays move from the cell's record into the study */
                d->s[i].correct[s * NL + e] = row->correct;
                d->s[i].scored[s * NL + e] = row->scored;
                row->correct = row->scored = NULL;
                row->n_correct = row->n_scored = 0;
            }
            free_cell(&cr);
        }
    }
    d->chance = nch ? ch / nch : NAN;
    return st;
}

/* depth bins at length T of a needle with `pairs` facts: positions p = 0 .. P - 1 of the fact (P = T - 3 pairs + 1 = the
 * largest distance), bin b of nb holds p in [ceil(b P / nb), ceil((b + 1) P / nb)); distance d = P - p */
static void depth_bin(int b, int nb, int P, int *dlo, int *dhi)
{
    int plo = (int)(((long)b * P + nb - 1) / nb), phi = (int)(((long)(b + 1) * P + nb - 1) / nb) - 1;
    *dlo = P - phi;
    *dhi = P - plo;
}

/* per seed: the accuracy over distances [dlo, dhi] (NaN: no answer there, or undefined) */
static long acc_values(const long *const *correct, const long *const *scored, int S, int stride, int dlo, int dhi,
                       double *acc)
{
    long answers = 0;
    for (int s = 0; s < S; s++) {
        const long *cc = correct[(size_t)s * stride], *ss = scored[(size_t)s * stride];
        long a = 0, b = 0;
        for (int dd = dlo; cc && ss && dd <= dhi; dd++) {
            a += cc[dd];
            b += ss[dd];
        }
        acc[s] = cc && ss && b > 0 ? (double)a / b : NAN;
        answers += b;
    }
    return answers;
}

static struct epar_table *ret_table(const struct epar_bench_cfg *c, const struct ret_study *d, int *grid_first,
                                    int *grid_last)
{
    struct epar_table *t = epar_csv_new("task,series,trained,as,log_n,length,k,train_length,bin,depth_lo,depth_hi,"
                                        "distance_lo,distance_hi,defined,seeds,answers,accuracy,accuracy_sd,lo,hi,chance");
    int nb = c->extrap.depth_bins, N = c->tasks[d->t].task.pairs;
    double acc[EPAR_MAX_SEEDS];
    for (int i = 0; t && i < d->n; i++) {
        grid_first[i] = (int)t->nrows;
        for (int pass = 0; pass < 2; pass++)   /* the length x depth grid (the heatmap), then "all" per length */
            for (int e = 0; e < d->NL; e++) {
                int T = d->lengths[e], P = T - 3 * N + 1, bins = nb < P ? nb : P;
                for (int b = pass ? -1 : 0; b < (pass ? 0 : nb); b++) {
                    int dlo = 1, dhi = P;
                    if (b >= 0 && b < bins) depth_bin(b, bins, P, &dlo, &dhi);
                    long answers = b >= bins ? 0 : acc_values((const long *const *)d->s[i].correct + e,
                                                              (const long *const *)d->s[i].scored + e, d->S, d->NL,
                                                              dlo, dhi, acc);
                    int ok = b < bins;
                    for (int s = 0; s < d->S && ok; s++) ok = isfinite(acc[s]);
                    double m, sd;
                    epar_stats_mean_sd(acc, ok ? (size_t)d->S : 0, &m, &sd);
                    struct epar_stats_paired pr;
                    epar_stats_paired(acc, ok ? d->S : 0, c->level, &pr);
                    char bn[16];
                    snprintf(bn, sizeof bn, b < 0 ? "all" : "%d", b);
                    double dl = b < 0 ? 0 : (double)b / nb, dh = b < 0 ? 1 : (double)(b + 1) / nb;
                    if (epar_csv_append(t, "ssssiiiisddiiiiiddddd", c->extrap.retrieval_task, d->s[i].s.name,
                                        epar_nnpos_name(d->s[i].s.trained), epar_nnpos_name(d->s[i].s.as), d->s[i].s.logn,
                                        T, T / d->L, d->L, bn, dl, dh, dlo, dhi, ok, d->S, (int)answers, m, sd, pr.lo,
                                        pr.hi, d->chance)) {
                        epar_csv_free(t);
                        return NULL;
                    }
                }
                if (!pass) grid_last[i] = (int)t->nrows - 1;
            }
    }
    return t;
}

/* ---- pairs.csv: per named pair, the per-seed paired difference a - b ---- */

static int pair_row(struct epar_table *t, const struct epar_bench_cfg *c, const char *task, const char *a, const char *b,
                    const char *quantity, int T, int k, const char *bin, const double *x, const double *y, int S)
{
    double dlt[EPAR_MAX_SEEDS];
    int ok = 1;
    for (int s = 0; s < S; s++) {
        dlt[s] = x[s] - y[s];
        ok &= isfinite(dlt[s]);
    }
    if (!ok) return EPAR_OK;   /* undefined on either side: no row */
    struct epar_stats_paired pr;
    epar_stats_paired(dlt, S, c->level, &pr);
    double m, sd;
    epar_stats_mean_sd(dlt, (size_t)S, &m, &sd);
    return epar_csv_append(t, "ssssiisidddddd", task, a, b, quantity, T, k, bin, S, m, sd, pr.lo, pr.hi, pr.t, pr.p)
               ? EPAR_ENOMEM : EPAR_OK;
}

/* the grid's needle tasks other than the retrieval task, at their own length: per depth bin from the cells' counts */
static int grid_needle_pairs(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                             struct epar_table *t, int pi)
{
    const struct epar_bench_extrap *x = &c->extrap;
    enum epar_mech_id ia, ib;
    if (epar_mech_find(x->pair_a[pi], &ia) || epar_mech_find(x->pair_b[pi], &ib)) return EPAR_OK;
    int ma = -1, mb = -1, S = c->b.n_seeds, st = EPAR_OK;
    for (int m = 0; m < c->n_mech + x->n_extra; m++) {
        if (c->mech[m] == ia) ma = m;
        if (c->mech[m] == ib) mb = m;
    }
    if (ma < 0 || mb < 0) return EPAR_OK;
    for (int tk = 0; tk < c->n_tasks && !st; tk++) {
        if (c->tasks[tk].task.id != EPAR_TASK_NEEDLE || !strcmp(c->tasks[tk].id, x->retrieval_task) ||
            !epar_bx_has_cell(c, tk, ma) || !epar_bx_has_cell(c, tk, mb))
            continue;
        long *cc[2][EPAR_MAX_SEEDS] = {{NULL}}, *ss[2][EPAR_MAX_SEEDS] = {{NULL}};
        struct cell_read cr[2][EPAR_MAX_SEEDS];
        memset(cr, 0, sizeof cr);
        for (int w = 0; w < 2 && !st; w++)
            for (int s = 0; s < S && !st; s++) {
                st = read_cell(c, plan, root, tk, w ? mb : ma, s, &cr[w][s]);
                cc[w][s] = cr[w][s].correct;
                ss[w][s] = cr[w][s].scored;
            }
        int T = c->tasks[tk].task.length, P = T - 3 * c->tasks[tk].task.pairs + 1, nb = x->depth_bins < P ? x->depth_bins : P;
        int sized = 1;
        for (int w = 0; w < 2 && !st; w++)
            for (int s = 0; s < S; s++) sized &= cr[w][s].n_correct > P && cr[w][s].n_scored > P;
        for (int b = -1; b < nb && !st && sized; b++) {
            int dlo = 1, dhi = P;
            if (b >= 0) depth_bin(b, nb, P, &dlo, &dhi);
            double va[EPAR_MAX_SEEDS], vb[EPAR_MAX_SEEDS];
            acc_values((const long *const *)cc[0], (const long *const *)ss[0], S, 1, dlo, dhi, va);
            acc_values((const long *const *)cc[1], (const long *const *)ss[1], S, 1, dlo, dhi, vb);
            char bn[16];
            snprintf(bn, sizeof bn, b < 0 ? "all" : "%d", b);
            st = pair_row(t, c, c->tasks[tk].id, x->pair_a[pi], x->pair_b[pi], "accuracy", T, 1, bn, va, vb, S);
        }
        for (int w = 0; w < 2; w++)
            for (int s = 0; s < S; s++) free_cell(&cr[w][s]);
    }
    return st;
}

static struct epar_table *pairs_table(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                                      const struct lm_study *lm, const struct ret_study *rt, int *st)
{
    const struct epar_bench_extrap *x = &c->extrap;
    struct epar_table *t = epar_csv_new("task,a,b,quantity,length,k,bin,seeds,mean,sd,lo,hi,t,p");
    if (!t) *st = EPAR_ENOMEM;
    double ba[EPAR_MAX_SEEDS], bb[EPAR_MAX_SEEDS], sa[EPAR_MAX_SEEDS], sb[EPAR_MAX_SEEDS];
    for (int pi = 0; t && !*st && pi < x->n_pairs; pi++) {
        const char *a = x->pair_a[pi], *b = x->pair_b[pi];
        for (int q = 0; lm->n && q < NBIN && !*st; q++)
            for (int e = 0; e < lm->NL && !*st; e++) {
                int T = lm->lengths[e];
                if (!bin_exists(q, T, lm->L)) continue;
                char bn[16];
                bin_name(q, bn, sizeof bn);
                if (!group_values(lm, a, e, q, ba, sa) || !group_values(lm, b, e, q, bb, sb)) continue;
                *st = pair_row(t, c, x->lm_task, a, b, "bpc", T, T / lm->L, bn, ba, bb, lm->S);
                if (!*st) *st = pair_row(t, c, x->lm_task, a, b, "share", T, T / lm->L, bn, sa, sb, lm->S);
            }
        int ra = -1, rb = -1;
        for (int q = 0; q < rt->n; q++) {
            if (!strcmp(rt->s[q].s.name, a)) ra = q;
            if (!strcmp(rt->s[q].s.name, b)) rb = q;
        }
        int N = rt->n ? c->tasks[rt->t].task.pairs : 1;
        for (int e = 0; ra >= 0 && rb >= 0 && e < rt->NL && !*st; e++) {
            int T = rt->lengths[e], P = T - 3 * N + 1, nb = x->depth_bins < P ? x->depth_bins : P;
            for (int q = -1; q < nb && !*st; q++) {
                int dlo = 1, dhi = P;
                if (q >= 0) depth_bin(q, nb, P, &dlo, &dhi);
                acc_values((const long *const *)rt->s[ra].correct + e, (const long *const *)rt->s[ra].scored + e, rt->S,
                           rt->NL, dlo, dhi, ba);
                acc_values((const long *const *)rt->s[rb].correct + e, (const long *const *)rt->s[rb].scored + e, rt->S,
                           rt->NL, dlo, dhi, bb);
                char bn[16];
                snprintf(bn, sizeof bn, q < 0 ? "all" : "%d", q);
                *st = pair_row(t, c, x->retrieval_task, a, b, "accuracy", T, T / rt->L, bn, ba, bb, rt->S);
            }
        }
        if (!*st) *st = grid_needle_pairs(c, plan, root, t, pi);
    }
    if (*st) {
        epar_csv_free(t);
        return NULL;
    }
    return t;
}

/* ---- figures ---- */

static int lm_figure(const struct epar_bench_cfg *c, const struct lm_study *d, const struct fig_range *fr,
                     struct epar_out *o)
{
    size_t cap = 65536, len = 0;
    char *body = malloc(cap);
    if (!body) return EPAR_ENOMEM;
#define P(...) len += (size_t)snprintf(body + len, len < cap ? cap - len : 0, __VA_ARGS__)
    int maxk = d->lengths[d->NL - 1] / d->L;
    P("set terminal @epar_term size 1500,1050\n"
      "set multiplot layout 2,2 title 'lm trained at L = %d, evaluated on held-out windows of k L (mean over %d seed(s); "
      "band: ± sd across seeds)'\n"
      "set logscale x 2\nset xrange [%g:%g]\nset xlabel 'evaluation length (log scale; dashed: the training length)'\n"
      "set ylabel 'bits per character (lower is better)'\nset key outside right top font ',8'\n"
      "set arrow 1 from %d, graph 0 to %d, graph 1 nohead dt 2 lc rgb '#555555'\n"
      "set style fill transparent solid 0.15 noborder\n",
      d->L, d->S, d->L / 1.25, d->L * maxk * 1.25, d->L, d->L);
    static const char *const titles[4] = {"each mechanism on its own weights: all positions of the window",
                                          "the same weights read otherwise (and fine-tuned, +ft): all positions",
                                          "each mechanism on its own weights: positions past L only (at L: the window)",
                                          "the same weights read otherwise: positions past L only (at L: the window)"};
    for (int panel = 0; panel < 4; panel++) {
        int bin = panel / 2, same = panel % 2;
        /* the panel's rows, so a panel whose every value is nan (or that has none) draws "no data" (plots/epar.gp) */
        char cond[4096];
        size_t cl = (size_t)snprintf(cond, sizeof cond, "0");
        for (int pass = 0; pass < 2; pass++) {
            if (pass) P("set title '%s'\neval epar_check('extrapolation_bpc.csv', '((%s) ? $7 : NaN):15')\n"
                        "if (epar_ok) {\nplot ", titles[panel], cond);
            int lt = 0, any = 0;
            for (int i = 0; i < d->n && i < EPAR_BX_MAX_SERIES * 3; i++) {
                const struct lm_series *ls = &d->s[i];
                /* the left panels: the mechanisms' own series; the right: the variants, the arms and what they read */
                int own = !ls->s.ft && ls->s.as == ls->s.trained && !ls->s.logn, reads = 0;
                for (int q = 0; q < d->n; q++)
                    reads |= (d->s[q].s.ft || d->s[q].s.as != d->s[q].s.trained || d->s[q].s.logn) &&
                             d->s[q].s.trained == ls->s.trained;
                if (same ? !(!own || reads) : !own) continue;
                lt++;
                if (fr->first[i][bin] < 0) continue;
                int a = fr->first[i][bin], b = fr->last[i][bin], ty = (lt - 1) % 8 + 1, dt = (lt - 1) / 8 + 1;
                if (!pass) {
                    if (cl < sizeof cond) cl += (size_t)snprintf(cond + cl, sizeof cond - cl, " || ($0 >= %d && $0 <= %d)", a, b);
                    continue;
                }
                P("%s'extrapolation_bpc.csv' skip 1 every ::%d::%d using 7:($15-sd(16)):($15+sd(16)) with filledcurves "
                  "lt %d notitle, \\\n '' skip 1 every ::%d::%d using 7:15 with linespoints lt %d dt %d %s title '%s'",
                  any ? ", \\\n " : "", a, b, ty, a, b, ty, dt, ls->s.ft ? "pt 6 ps 1.2" : "", ls->s.name);
                if (bin == 1 && !ls->s.ft && fr->first[i][0] >= 0)   /* the reference at L: the window's first row */
                    P(", \\\n '' skip 1 every ::%d::%d using 7:15:(sd(16)) with yerrorbars lt %d notitle",
                      fr->first[i][0], fr->first[i][0], ty);
                any = 1;
            }
            if (pass && !any) P("NaN notitle");
        }
        if (cl >= sizeof cond) return free(body), epar_err_set(EPAR_ENOMEM, "the figure script is too long");
        P(EPAR_PLOT_END);
    }
    P("unset multiplot\n");
#undef P
    int st = len < cap ? epar_plot_script(o, "extrapolation_bpc", "Length extrapolation of lm: bpc against length", body)
                       : epar_err_set(EPAR_ENOMEM, "the figure script is too long");
    free(body);
    (void)c;
    return st;
}

static int ret_figure(const struct epar_bench_cfg *c, const struct ret_study *d, const int *first, const int *last,
                      struct epar_out *o)
{
    if (!d->n) return EPAR_OK;
    size_t cap = 65536, len = 0;
    char *body = malloc(cap);
    if (!body) return EPAR_ENOMEM;
    int cols = d->n < 4 ? d->n : 4, rows = (d->n + cols - 1) / cols, nb = c->extrap.depth_bins;
#define P(...) len += (size_t)snprintf(body + len, len < cap ? cap - len : 0, __VA_ARGS__)
    P("set terminal @epar_term size %d,%d\n"
      "set multiplot layout %d,%d title '%s trained at L = %d: answer accuracy by evaluation length and depth of the "
      "fact (mean over %d seed(s); white: undefined)'\n"
      "set datafile missing 'NA'   # an undefined cell (nan) stays in the grid, drawn white\n"
      "unset key\nset view map\nset cbrange [0:1]\nset tics out\nunset grid\n"
      "set xlabel 'evaluation length / L'\nset ylabel 'depth of the fact (bin; 0 = the start)'\n"
      "set xrange [-0.5:%g]\nset yrange [-0.5:%g]\nset ytics 1\nset xtics (",
      380 * cols, 330 * rows + 60, rows, cols, c->extrap.retrieval_task, d->L, d->S, d->NL - 0.5, nb - 0.5);
    for (int e = 0; e < d->NL; e++) P("%s'%d' %g", e ? ", " : "", d->lengths[e] / d->L, log2((double)d->lengths[e] / d->L));
    P(")\n");
    for (int i = 0; i < d->n; i++)   /* a series whose every cell is undefined draws "no data" (plots/epar.gp) */
        P("set title '%s'\neval epar_check('retrieval.csv', '(($0 >= %d && $0 <= %d) ? log($7)/log(2) : NaN):17')\n"
          "if (epar_ok) {\nplot '%s' skip 1 every ::%d::%d using (log($7)/log(2)):9:17 with image\n" EPAR_PLOT_END,
          d->s[i].s.name, first[i], last[i], "retrieval.csv", first[i], last[i]);
    P("unset multiplot\n");
#undef P
    int st = len < cap ? epar_plot_script(o, "retrieval", "Retrieval at length: accuracy by length and depth", body)
                       : epar_err_set(EPAR_ENOMEM, "the figure script is too long");
    free(body);
    return st;
}

/* the study's settings for run.json */
static json_t *study_json(const struct epar_bench_cfg *c)
{
    const struct epar_bench_extrap *x = &c->extrap;
    json_t *o = json_object(), *v = json_object(), *ft = json_array(), *pairs = json_array(), *fl = json_array(),
           *cells = json_object();
    for (int i = 0; i < x->n_variants; i++)
        json_object_set_new(v, x->variants[i].name, json_string(epar_nnpos_name(x->variants[i].trained)));
    for (int i = 0; i < x->n_ft; i++) json_array_append_new(ft, json_string(x->ft[i]));
    for (int i = 0; i < x->n_pairs; i++) json_array_append_new(pairs, json_pack("[s,s]", x->pair_a[i], x->pair_b[i]));
    for (int i = 0; i < x->n_ft_lengths; i++) json_array_append_new(fl, json_integer(x->ft_lengths[i]));
    for (int i = 0; i < x->n_cells; i++) {
        json_t *a = json_array();
        for (int k = 0; k < x->cells[i].n_mech; k++) json_array_append_new(a, json_string(epar_nnpos_name(x->cells[i].mech[k])));
        json_object_set_new(cells, x->cells[i].task, a);
    }
    json_object_set_new(o, "lm_task", json_string(x->lm_task));
    json_object_set_new(o, "retrieval_task", json_string(x->retrieval_task));
    json_object_set_new(o, "depth_bins", json_integer(x->depth_bins));
    json_object_set_new(o, "variants", v);
    json_object_set_new(o, "finetune", ft);
    json_object_set_new(o, "finetune_steps", json_integer(x->ft_steps));
    json_object_set_new(o, "finetune_lengths", fl);
    json_object_set_new(o, "retrieval_sequences", json_integer(x->retrieval_sequences));
    json_object_set_new(o, "cells", cells);
    json_object_set_new(o, "cells_run", json_boolean(!x->restricted));
    json_object_set_new(o, "pairs", pairs);
    json_object_set_new(o, "share", json_string("(b(k) - b(1)) / (H - b(1)) per seed: b bits per character, H the held-out "
                                                "characters' entropy (the cell's chance level)"));
    return o;
}

int epar_bx_write(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                  struct epar_out *o, json_t *run_extra)
{
    if (!c->extrap.on) return EPAR_OK;
    struct lm_study lm;
    struct ret_study rt;
    struct fig_range fr;
    int gf[EPAR_MECH_COUNT * (EPAR_BX_MAX_SERIES + 1)], gl[EPAR_MECH_COUNT * (EPAR_BX_MAX_SERIES + 1)];
    struct epar_table *lt = NULL, *rtt = NULL, *pt = NULL;
    int st = lm_study_build(c, plan, root, &lm);
    if (!st) st = ret_study_build(c, plan, root, &rt);
    else memset(&rt, 0, sizeof rt);
    if (!st && lm.n && !(lt = lm_table(c, &lm, &fr))) st = epar_err_set(EPAR_ENOMEM, "out of memory");
    if (!st && rt.n && !(rtt = ret_table(c, &rt, gf, gl))) st = epar_err_set(EPAR_ENOMEM, "out of memory");
    if (!st) pt = pairs_table(c, plan, root, &lm, &rt, &st);
    if (!st && lt) st = epar_exp_write_table(o, "extrapolation_bpc.csv", lt);
    if (!st && rtt) st = epar_exp_write_table(o, "retrieval.csv", rtt);
    if (!st && pt) st = epar_exp_write_table(o, "pairs.csv", pt);
    if (!st && lt) st = lm_figure(c, &lm, &fr, o);
    if (!st && rtt) st = ret_figure(c, &rt, gf, gl, o);
    if (!st && run_extra) json_object_set_new(run_extra, "extrapolation_study", study_json(c));
    epar_csv_free(lt);
    epar_csv_free(rtt);
    epar_csv_free(pt);
    lm_study_free(&lm);
    ret_study_free(&rt);
    return st;
}
