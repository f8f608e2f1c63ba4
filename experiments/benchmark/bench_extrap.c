/* The length-extrapolation study of epar benchmark: configuration, what a cell evaluates and its cell file (tables
 * and figures: bench_extrap_write.c). */
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
#include "experiments/benchmark/bench_extrap_int.h"
#include "experiments/common.h"

/* ------------------------------------------------------------------------------------------------ */
/* configuration                                                                                      */

struct bx_read {
    const char *lm_task, *retrieval_task, *finetune;
    int depth_bins;
    json_t *variants, *pairs, *budgets;
};
#define BR struct bx_read
static const struct epar_field bx_rows[] = {
    {.key = "lm_task", .type = EPAR_FIELD_STRING, .offset = offsetof(BR, lm_task),
     .help = "benchmark task id of the bpc study (an lm task in order)"},
    {.key = "retrieval_task", .type = EPAR_FIELD_STRING, .offset = offsetof(BR, retrieval_task),
     .help = "benchmark task id of the retrieval grid (a needle task)"},
    {.key = "depth_bins", .type = EPAR_FIELD_INT, .offset = offsetof(BR, depth_bins), .lo = 1, .hi = 1024,
     .help = "bins of the fact's depth in the retrieval grid"},
    {.key = "variants", .type = EPAR_FIELD_JSON, .offset = offsetof(BR, variants)},
    {.key = "finetune", .type = EPAR_FIELD_STRING, .offset = offsetof(BR, finetune),
     .help = "series continued at the longer lengths (comma-separated)"},
    {.key = "pairs", .type = EPAR_FIELD_JSON, .offset = offsetof(BR, pairs)},
    {.key = "budgets", .type = EPAR_FIELD_JSON, .offset = offsetof(BR, budgets), .flags = EPAR_FIELD_REQUIRED,
     .help = "the study's sizes by budget"},
    {0}};
#undef BR
static const char *const bx_extra[] = {"description", NULL};

struct bx_budget_read {
    json_t *cells;
    int retrieval_sequences, ft_steps;
    const char *ft_lengths;
};
#define BB struct bx_budget_read
static const struct epar_field bx_budget_rows[] = {
    {.key = "cells", .type = EPAR_FIELD_JSON, .offset = offsetof(BB, cells)},
    {.key = "retrieval_sequences", .type = EPAR_FIELD_INT, .offset = offsetof(BB, retrieval_sequences), .lo = 1,
     .hi = 1000000, .help = "needle items at each length"},
    {.key = "finetune_steps", .type = EPAR_FIELD_INT, .offset = offsetof(BB, ft_steps), .lo = 0, .hi = 1 << 30,
     .help = "steps of each fine-tuning arm (0: none)"},
    {.key = "finetune_lengths", .type = EPAR_FIELD_STRING, .offset = offsetof(BB, ft_lengths),
     .help = "lengths the arms continue at (comma-separated)"},
    {0}};
#undef BB

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
    if (strchr(base, '@')) {   /* a study cell's own parameters: "pi-attention@step=4" */
        struct epar_bench_mvar mv;
        if (*ft || epar_bench_mvar_parse(base, trained, &mv)) return 0;
        *as = *trained;
        *logn = 0;
        return 1;
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
    if (!json_is_object(o)) return epar_protocol_error(p, jp, "missing (the study states its sizes for every budget)");
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
        return epar_protocol_error(p, kjp, "expected up to 16 comma-separated lengths in [2, 65536]");
    for (int i = 0; i < x->n_ft_lengths; i++) {
        int in = 0;
        for (int e = 0; e < c->b.n_extrap; e++) in |= c->b.extrap[e] == x->ft_lengths[i];
        if (!in || x->ft_lengths[i] <= c->b.lm_length)
            return epar_protocol_error(p, kjp, "%d is not one of the budget's extrapolation lengths above lm_length", x->ft_lengths[i]);
    }
    x->n_cells = 0;
    if (r.cells && !json_is_object(r.cells)) return epar_protocol_error(p, jp, "cells: expected {task id: \"mechanism,...\"}");
    const char *tk;
    json_t *tv;
    json_object_foreach(r.cells, tk, tv) {
        snprintf(kjp, sizeof kjp, "%s.cells.%s", jp, tk);
        if (task_index(c, tk) < 0) return epar_protocol_error(p, kjp, "not a task of the benchmark");
        if (!json_is_string(tv)) return epar_protocol_error(p, kjp, "expected \"mechanism,...\"");
        if (x->n_cells >= EPAR_BX_MAX_CELLS) return epar_protocol_error(p, kjp, "at most %d tasks", EPAR_BX_MAX_CELLS);
        struct epar_bx_cells *cl = &x->cells[x->n_cells++];
        snprintf(cl->task, sizeof cl->task, "%s", tk);
        cl->n_mech = 0;
        char buf[512];
        snprintf(buf, sizeof buf, "%s", json_string_value(tv));
        for (char *save = NULL, *m = strtok_r(buf, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
            enum epar_mech_id id;
            struct epar_bench_mvar v;
            if (epar_bench_mvar_parse(m, &id, &v)) return epar_protocol_error(p, kjp, "%s", epar_err_message());
            if (cl->n_mech < EPAR_MECH_COUNT) {
                cl->var[cl->n_mech] = v;
                cl->mech[cl->n_mech++] = id;
            }
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
        return epar_protocol_error(p, kjp, "'%s' is not an lm task of the benchmark in order", r.lm_task);
    snprintf(x->lm_task, sizeof x->lm_task, "%s", r.lm_task ? r.lm_task : "");
    t = task_index(c, r.retrieval_task);
    snprintf(kjp, sizeof kjp, "%s.retrieval_task", jp);
    if (r.retrieval_task && (t < 0 || c->tasks[t].task.id != EPAR_TASK_NEEDLE))
        return epar_protocol_error(p, kjp, "'%s' is not a needle task of the benchmark", r.retrieval_task);
    snprintf(x->retrieval_task, sizeof x->retrieval_task, "%s", r.retrieval_task ? r.retrieval_task : "");
    /* the evaluation lengths: multiples of lm's (the retrieval grid evaluates its task at the same multiples) */
    for (int e = 0; e < c->b.n_extrap; e++)
        if (c->b.extrap[e] % c->b.lm_length)
            return epar_protocol_error(p, "$.experiments.benchmark.budgets", "budget %s: extrapolation length %d is not a multiple of "
                        "lm_length %d (the study evaluates at k times the trained length)", budget, c->b.extrap[e],
                        c->b.lm_length);
    /* variants: {"name": "trained mechanism"}; the same weights (the same parameter count) */
    snprintf(kjp, sizeof kjp, "%s.variants", jp);
    if (r.variants && !json_is_object(r.variants)) return epar_protocol_error(p, kjp, "expected {\"variant\": \"trained mechanism\"}");
    const char *vk;
    json_t *vv;
    json_object_foreach(r.variants, vk, vv) {
        char vjp[400];
        snprintf(vjp, sizeof vjp, "%s.%s", kjp, vk);
        struct epar_bx_variant v = {.logn = 0};
        if (strlen(vk) >= sizeof v.name || !parse_variant_name(vk, &v.as, &v.logn))
            return epar_protocol_error(p, vjp, "expected a trainable mechanism, optionally with '+log-n'");
        if (!json_is_string(vv) || epar_nnpos_find(json_string_value(vv), &v.trained))
            return epar_protocol_error(p, vjp, "expected the trainable mechanism whose weights it reads");
        if (v.as == v.trained && !v.logn) return epar_protocol_error(p, vjp, "a variant differs from its trained mechanism");
        snprintf(v.name, sizeof v.name, "%s", vk);
        struct epar_train_cfg a = c->base, b = c->base;
        a.mechanism = v.trained;
        b.mechanism = v.as;
        a.task.length = b.task.length = c->b.lm_length;
        size_t na = 0, nb = 0;
        if (epar_exp_train_param_count(&a, 2, &na) || epar_exp_train_param_count(&b, 2, &nb) || na != nb)
            return epar_protocol_error(p, vjp, "%s has other parameters than %s: not a reading of the same weights",
                        epar_nnpos_name(v.as), epar_nnpos_name(v.trained));
        if (x->n_variants >= EPAR_BX_MAX_SERIES) return epar_protocol_error(p, vjp, "at most %d variants", EPAR_BX_MAX_SERIES);
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
            return epar_protocol_error(p, kjp, "'%s' is not a trained mechanism or a variant (at most %d arms)", s, EPAR_BX_MAX_FT);
        snprintf(x->ft[x->n_ft++], sizeof x->ft[0], "%s", s);
    }
    /* pairs: [["a", "b"], ...] of series names */
    snprintf(kjp, sizeof kjp, "%s.pairs", jp);
    if (r.pairs && !json_is_array(r.pairs)) return epar_protocol_error(p, kjp, "expected [[\"a\", \"b\"], ...]");
    size_t i;
    json_t *pv;
    json_array_foreach(r.pairs, i, pv) {
        char pjp[400];
        snprintf(pjp, sizeof pjp, "%s[%zu]", kjp, i);
        const char *a = json_string_value(json_array_get(pv, 0)), *b = json_string_value(json_array_get(pv, 1));
        enum epar_mech_id tr, as;
        int logn, ft;
        if (!json_is_array(pv) || json_array_size(pv) != 2 || !a || !b)
            return epar_protocol_error(p, pjp, "expected [\"a\", \"b\"]: two series names");
        for (int k = 0; k < 2; k++) {
            char g[64];
            if (strlen(k ? b : a) >= sizeof x->pair_a[0]) return epar_protocol_error(p, pjp, "a name of at most 47 characters");
            snprintf(g, sizeof g, "%s", k ? b : a);
            for (char *save = NULL, *m = strtok_r(g, "|", &save); m; m = strtok_r(NULL, "|", &save))
                if (!parse_series(x, m, &tr, &as, &logn, &ft))
                    return epar_protocol_error(p, pjp, "'%s' is not a series of the study (a trainable mechanism, a variant or an "
                                "arm's '<series>+ft'; 'a|b|c': the per-seed mean of a group)", m);
        }
        if (x->n_pairs >= EPAR_BX_MAX_PAIRS) return epar_protocol_error(p, pjp, "at most %d pairs", EPAR_BX_MAX_PAIRS);
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
    memset(c->mvar, 0, sizeof c->mvar);   /* the grid's own mechanisms have no parameters of their own */
    if (!x->on || x->restricted) return;
    for (int i = 0; i < x->n_cells; i++) {
        if (task_index(c, x->cells[i].task) < 0) continue;
        for (int k = 0; k < x->cells[i].n_mech; k++) {
            enum epar_mech_id id = x->cells[i].mech[k];
            const struct epar_bench_mvar *v = &x->cells[i].var[k];
            const char *name = v->name[0] ? v->name : epar_nnpos_name(id);
            int have = 0;
            for (int m = 0; m < c->n_mech + x->n_extra; m++) have |= !strcmp(epar_bench_mech_name(c, m), name);
            if (!have && c->n_mech + x->n_extra < EPAR_MECH_COUNT) {
                c->mvar[c->n_mech + x->n_extra] = *v;
                c->mech[c->n_mech + x->n_extra++] = id;
            }
        }
    }
}

int epar_bx_has_cell(const struct epar_bench_cfg *c, int t, int m)
{
    if (m < c->n_mech && t < c->n_tasks) return 1;   /* a grid cell (a study-only task has only its listed cells) */
    if (m >= c->n_mech + c->extrap.n_extra || t < 0 || t >= c->n_tasks + c->n_study) return 0;
    const struct epar_bx_cells *cl = cells_of(&c->extrap, c->tasks[t].id);
    for (int k = 0; cl && k < cl->n_mech; k++)
        if (!strcmp(cl->var[k].name[0] ? cl->var[k].name : epar_nnpos_name(cl->mech[k]), epar_bench_mech_name(c, m))) return 1;
    return 0;
}

/* ------------------------------------------------------------------------------------------------ */
/* the series of a cell                                                                               */

/* the series of the study on trained mechanism `mech` (struct series, bench_extrap_int.h) */
int epar_bx_cell_series(const struct epar_bench_extrap *x, enum epar_mech_id mech, const char *name, struct series *s,
                        int max)
{
    int n = 0;
    s[n++] = (struct series){.trained = mech, .as = mech};
    snprintf(s[0].name, sizeof s[0].name, "%s", name);
    if (strchr(name, '@')) return n;   /* a study cell's own parameters: its own series only */
    for (int i = 0; i < x->n_variants && n < max; i++)
        if (x->variants[i].trained == mech) {
            s[n] = (struct series){.trained = mech, .as = x->variants[i].as, .logn = x->variants[i].logn};
            snprintf(s[n++].name, sizeof s[0].name, "%s", x->variants[i].name);
        }
    return n;
}

/* its fine-tuning arms */
int epar_bx_cell_arms(const struct epar_bench_extrap *x, enum epar_mech_id mech, struct series *s, int max)
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

/* a cell's series (returned, into s) and, for an lm cell of a catalogue mechanism, its fine-tuning arms (*na, into
 * a): what epar_bx_cell_config records, epar_bx_cell_run evaluates and epar_bx_cell_work counts */
static int cell_series(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell, enum cell_kind kind,
                       struct series *s, struct series *a, int *na)
{
    enum epar_mech_id mech = c->mech[cell->mech];
    *na = kind == KIND_LM && !c->mvar[cell->mech].name[0] ? epar_bx_cell_arms(&c->extrap, mech, a, EPAR_BX_MAX_FT) : 0;
    return epar_bx_cell_series(&c->extrap, mech, epar_bench_mech_name(c, cell->mech), s, EPAR_BX_MAX_SERIES);
}

/* lm windows of length T in the budget's extrap_tokens (at least one) */
static long lm_windows(const struct epar_bench_cfg *c, int T)
{
    return c->b.extrap_tokens / T > 0 ? c->b.extrap_tokens / T : 1;
}

json_t *epar_bx_cell_config(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell)
{
    enum cell_kind kind = kind_of(c, cell);
    if (kind == KIND_NONE) return NULL;
    const struct epar_bench_extrap *x = &c->extrap;
    struct series s[EPAR_BX_MAX_SERIES], a[EPAR_BX_MAX_FT];
    int na, ns = cell_series(c, cell, kind, s, a, &na);
    json_t *o = json_object(), *sj = json_array(), *lj = json_array();
    struct epar_train_cfg t, f;
    epar_exp_benchmark_cell_cfg(c, cell, &t);
    for (int i = 0; i < ns; i++) {
        /* what it reads the weights as: the mechanism, its catalogue parameters (train_length = the trained length,
         * base = rope's on rope's weights) and the stacked log-n's length */
        epar_exp_train_as(&t, s[i].as, s[i].logn, 0, &f);
        json_t *row = json_pack("{s:s, s:s, s:i}", "series", s[i].name, "as", epar_nnpos_name(s[i].as), "log-n_length",
                                f.pos.logn_length);
        if (epar_nnpos_row(s[i].as)->uses_params && epar_mech_row(s[i].as)->params[0].name)
            json_object_set_new(row, "mechanism_params", epar_exp_train_params_json(s[i].as, f.pos.mp[s[i].as]));
        json_array_append_new(sj, row);
    }
    for (int e = 0; e < c->b.n_extrap; e++) json_array_append_new(lj, json_integer(eval_length(c, cell, e)));
    json_object_set_new(o, "series", sj);
    json_object_set_new(o, "lengths", lj);
    if (kind == KIND_LM) {
        json_object_set_new(o, "tokens", json_integer(c->b.extrap_tokens));
        /* what a row measures: a cell written before the attention entropy was is run again */
        json_object_set_new(o, "measures", json_pack("[s, s]", "bpc", "attention_entropy"));
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

/* the records of the cell file (struct lm_row, ret_row, study_rec: bench_extrap_int.h) */
#define LR struct lm_row
static const struct epar_field lm_row_rows[] = {
    {.key = "series", .type = EPAR_FIELD_STRING, .offset = offsetof(LR, series), .flags = EPAR_FIELD_REQUIRED},
    {.key = "length", .type = EPAR_FIELD_INT, .offset = offsetof(LR, length), .lo = 2, .hi = 1 << 20,
     .flags = EPAR_FIELD_REQUIRED},
    {.key = "defined", .type = EPAR_FIELD_BOOL, .offset = offsetof(LR, defined), .flags = EPAR_FIELD_REQUIRED},
    {.key = "bpc", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(LR, bpc), .flags = EPAR_FIELD_OPTIONAL},
    {.key = "past_train_length", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(LR, past), .flags = EPAR_FIELD_OPTIONAL},
    {.key = "entropy", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(LR, entropy), .flags = EPAR_FIELD_OPTIONAL,
     .help = "mean attention entropy (nats) of the rows of the window's second half, every layer and head"},
    {.key = "uniformity", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(LR, uniformity), .flags = EPAR_FIELD_OPTIONAL,
     .help = "the same rows' mean H / ln n (n: a row's positive weights): 1 is uniform"},
    {.key = "buckets", .type = EPAR_FIELD_DLIST, .offset = offsetof(LR, bucket),
     .count_offset = offsetof(LR, n_bucket), .max = EPAR_BX_MAX_BUCKETS,
     .flags = EPAR_FIELD_OPTIONAL | EPAR_FIELD_EMPTY_OK},
    {.key = "tokens", .type = EPAR_FIELD_LONG, .offset = offsetof(LR, tokens), .lo = 0, .hi = 1e15,
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "finetune_steps", .type = EPAR_FIELD_INT, .offset = offsetof(LR, ft_steps), .lo = 0, .hi = 1 << 30,
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "finetune_tokens", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(LR, ft_tokens),
     .flags = EPAR_FIELD_OPTIONAL},
    {0}};
#undef LR

#define RR struct ret_row
static const struct epar_field ret_row_rows[] = {
    {.key = "series", .type = EPAR_FIELD_STRING, .offset = offsetof(RR, series), .flags = EPAR_FIELD_REQUIRED},
    {.key = "length", .type = EPAR_FIELD_INT, .offset = offsetof(RR, length), .lo = 2, .hi = 1 << 20,
     .flags = EPAR_FIELD_REQUIRED},
    {.key = "defined", .type = EPAR_FIELD_BOOL, .offset = offsetof(RR, defined), .flags = EPAR_FIELD_REQUIRED},
    {.key = "distance_correct", .type = EPAR_FIELD_LLIST, .offset = offsetof(RR, correct),
     .count_offset = offsetof(RR, n_correct), .max = 1 << 20, .flags = EPAR_FIELD_OPTIONAL | EPAR_FIELD_ALLOC},
    {.key = "distance_scored", .type = EPAR_FIELD_LLIST, .offset = offsetof(RR, scored),
     .count_offset = offsetof(RR, n_scored), .max = 1 << 20, .flags = EPAR_FIELD_OPTIONAL | EPAR_FIELD_ALLOC},
    {0}};
#undef RR

#define SR struct study_rec
static const struct epar_field study_rows[] = {
    {.key = "cpu_seconds", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(SR, cpu_seconds),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "lm", .type = EPAR_FIELD_OLIST, .offset = offsetof(SR, lm), .count_offset = offsetof(SR, n_lm),
     .max = BX_MAX_ROWS, .stride = sizeof(struct lm_row), .sub = lm_row_rows,
     .flags = EPAR_FIELD_OPTIONAL | EPAR_FIELD_EMPTY_OK},
    {.key = "retrieval", .type = EPAR_FIELD_OLIST, .offset = offsetof(SR, ret), .count_offset = offsetof(SR, n_ret),
     .max = EPAR_BX_MAX_SERIES * 16, .stride = sizeof(struct ret_row), .sub = ret_row_rows,
     .flags = EPAR_FIELD_OPTIONAL | EPAR_FIELD_EMPTY_OK},
    {0}};
#undef SR

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
    double ent[3] = {0, 0, 0};
    r->pos_loss = loss;
    r->pos_weight = w;
    r->att_entropy = ent;
    int st = epar_exp_train_evaluate_as(r, e, windows, &ev);
    r->pos_loss = r->pos_weight = r->att_entropy = NULL;
    if (!st) {
        row->defined = 1;
        row->bpc = ev.metric;
        row->entropy = ent[2] > 0 ? ent[0] / ent[2] : NAN;
        row->uniformity = ent[2] > 0 ? ent[1] / ent[2] : NAN;
        row->tokens = ev.scored;
        row->sequences = ev.sequences;
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
    /* learned-ape-rand / -hier: the rows past L become parameters of the arm, initialised as the model read them (S3
     * 003:20: random rows, then fine-tuned; the decomposition as the longer table's start) */
    int tl = epar_mech_param_index(a->as, "train_length");
    if ((a->as == EPAR_MECH_APE_RAND || a->as == EPAR_MECH_APE_HIER) && tl >= 0) f.pos.mp[a->as][tl] = T;
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
        long windows = lm_windows(c, T);
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
                     json_t **out, struct epar_bx_own *own)
{
    *out = NULL;
    own->n = 0;
    enum cell_kind kind = kind_of(c, cell);
    if (kind == KIND_NONE) return EPAR_OK;
    const struct epar_bench_extrap *x = &c->extrap;
    struct series s[EPAR_BX_MAX_SERIES], a[EPAR_BX_MAX_FT];
    int na, ns = cell_series(c, cell, kind, s, a, &na);
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
                *row = (struct lm_row){.series = s[i].name, .length = T, .bpc = NAN, .past = NAN, .entropy = NAN,
                                       .uniformity = NAN, .tokens = -1, .ft_steps = -1, .ft_tokens = NAN};
                long windows = lm_windows(c, T);
                if (defined) st = lm_eval(r, &f, windows, L, row);
                /* series 0 reads the weights as trained (without a stacked log-n): at the budget's lengths it is
                 * the cell's own extrapolation evaluation, which then takes it from here instead of a second pass */
                if (i == 0 && !st && T == c->b.extrap[e] && r->cfg.pos.logn_length == 0) {
                    own->defined[e] = defined;
                    own->bpc[e] = defined ? row->bpc : 0.0;
                    own->sequences[e] = defined ? row->sequences : 0;
                    own->n += own->n == e;
                }
            } else {
                struct ret_row *row = &rec->ret[rec->n_ret++];
                *row = (struct ret_row){s[i].name, T, 0, NULL, NULL, 0, 0};
                if (defined) st = ret_eval(c, r, &f, row);
            }
        }
    for (int i = 0; i < na && !st && x->ft_steps > 0; i++)
        for (int e = 0; e < x->n_ft_lengths && !st; e++) {
            struct lm_row *row = &rec->lm[rec->n_lm++];
            *row = (struct lm_row){.series = a[i].name, .length = x->ft_lengths[e], .bpc = NAN, .past = NAN, .entropy = NAN,
                                   .uniformity = NAN, .tokens = -1, .ft_steps = -1, .ft_tokens = NAN};
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

double epar_bx_cell_work(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell,
                         const struct epar_train_cfg *t)
{
    enum cell_kind kind = kind_of(c, cell);
    if (kind == KIND_NONE) return 0;
    const struct epar_bench_extrap *x = &c->extrap;
    struct series s[EPAR_BX_MAX_SERIES], a[EPAR_BX_MAX_FT];
    int na, ns = cell_series(c, cell, kind, s, a, &na);
    double w = 0;
    struct epar_train_cfg f;
    for (int i = 0; i < ns; i++)   /* as epar_bx_cell_run: lm windows of extrap_tokens, or the needle's items */
        for (int e = 0; e < c->b.n_extrap; e++) {
            int T = eval_length(c, cell, e);
            if (!epar_exp_train_as(t, s[i].as, s[i].logn, T, &f)) continue;
            long windows = lm_windows(c, T);
            double seqs = kind == KIND_LM ? (double)windows : x->retrieval_sequences;
            w += seqs * T * epar_bench_token_work(&f, T) / 3.0;
        }
    for (int i = 0; i < na && x->ft_steps > 0; i++)   /* as lm_finetune: its steps, one evaluation batch, the windows */
        for (int e = 0; e < x->n_ft_lengths; e++) {
            int T = x->ft_lengths[e];
            if (epar_nnpos_fixed_length(a[i].as, &t->pos)) continue;
            epar_exp_train_as(t, a[i].as, a[i].logn, T, &f);
            long windows = lm_windows(c, T);
            w += ((double)x->ft_steps * f.batch + (f.batch + (double)windows) / 3.0) * T *
                 epar_bench_token_work(&f, T);
        }
    return w;
}

/* ------------------------------------------------------------------------------------------------ */
/* a cell's numbers read back                                                                         */

/* what a cell file gives the study (struct cell_read, bench_extrap_int.h) */
#define CR struct cell_read
static const struct epar_field cell_read_rows[] = {
    {.key = "seed", .type = EPAR_FIELD_LONG, .offset = offsetof(CR, seed), .lo = 0, .hi = 1e15},
    {.key = "chance", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(CR, chance), .flags = EPAR_FIELD_OPTIONAL},
    {.key = "value", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(CR, value), .flags = EPAR_FIELD_OPTIONAL},
    {.key = "train_pool_value", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(CR, pool), .flags = EPAR_FIELD_OPTIONAL},
    {.key = "curve_metric", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(CR, curve), .flags = EPAR_FIELD_OPTIONAL},
    {.key = "distance_correct", .type = EPAR_FIELD_LLIST, .offset = offsetof(CR, correct),
     .count_offset = offsetof(CR, n_correct), .max = 65537, .flags = EPAR_FIELD_OPTIONAL | EPAR_FIELD_ALLOC},
    {.key = "distance_scored", .type = EPAR_FIELD_LLIST, .offset = offsetof(CR, scored),
     .count_offset = offsetof(CR, n_scored), .max = 65537, .flags = EPAR_FIELD_OPTIONAL | EPAR_FIELD_ALLOC},
    {0}};
#undef CR
static const struct epar_field cell_study_rows[] = {
    {.key = "extrapolation_study", .type = EPAR_FIELD_OBJ, .offset = 0, .sub = study_rows}, {0}};

static int cell_index(const struct epar_bench_plan *plan, int t, int m, int s)
{
    for (int k = 0; k < plan->n; k++)
        if (plan->cells[k].task == t && plan->cells[k].mech == m && plan->cells[k].seed == s) return k;
    return -1;
}

/* read cell (t, m, s) under root into r (r->study allocated); EPAR_EIO when it is missing */
int epar_bx_read_cell(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root, int t, int m,
                     int s, struct cell_read *r)
{
    memset(r, 0, sizeof *r);
    r->chance = r->value = r->pool = r->curve = NAN;
    int k = cell_index(plan, t, m, s);
    if (k < 0) return epar_err_set(EPAR_EINVAL, "no cell of task %s, %s, seed %lu in the plan", c->tasks[t].id,
                                   epar_bench_mech_name(c, m), c->b.seeds[s]);
    char dir[512], path[4800];
    epar_exp_benchmark_cell_dir(c, &plan->cells[k], dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%s/cell.json", root, dir);
    if (!(r->study = EPAR_CALLOC(1, sizeof *r->study))) return EPAR_ENOMEM;
    int st = epar_fields_load(path, "cell file", cell_read_rows, r, NULL);
    if (!st) st = epar_fields_load(path, "cell file", cell_study_rows, r->study, &r->doc);
    return st;
}

void epar_bx_free_cell(struct cell_read *r)
{
    epar_fields_free(cell_read_rows, r);
    if (r->study) epar_fields_free(study_rows, r->study);
    free(r->study);
    r->study = NULL;
    json_decref(r->doc);
    r->doc = NULL;
}
