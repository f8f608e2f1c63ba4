/* The benchmark grid: configuration, plan (equal parameter counts), the cost cell's design and the learning-rate
 * study. The cells: benchmark_cells.c; the statistics: benchmark_stats.c; the tables and figures: benchmark_tables.c,
 * benchmark_figures.c (benchmark_int.h: what they share); the types, a cell's configuration and folder, which the
 * length-extrapolation study (bench_extrap.c) reads too: bench_grid.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
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
#include "experiments/benchmark/benchmark_int.h"
#include "experiments/common.h"
#include "experiments/train/inspect.h"

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
static const struct epar_field budget_fields[] = {
    {.key = "layers", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.layers), .lo = 1, .hi = 1024,
     .flags = EPAR_FIELD_REQUIRED, .help = "Transformer blocks"},
    {.key = "dim", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.dim), .lo = 1, .hi = 65536,
     .flags = EPAR_FIELD_REQUIRED, .help = "model width"},
    {.key = "heads", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.heads), .lo = 1, .hi = 65536,
     .flags = EPAR_FIELD_REQUIRED, .help = "attention heads (divide dim)"},
    {.key = "mlp", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.mlp), .lo = 1, .hi = 1 << 20,
     .flags = EPAR_FIELD_REQUIRED, .help = "MLP width of none (the others' are equalised to its count)"},
    {.key = "batch", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.batch), .lo = 1, .hi = 65536,
     .flags = EPAR_FIELD_REQUIRED, .help = "sequences per step"},
    {.key = "long_batch", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.long_batch), .lo = 1, .hi = 65536,
     .flags = EPAR_FIELD_REQUIRED, .help = "sequences per step of the long tasks"},
    {.key = "steps", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.steps), .lo = 1, .hi = 1 << 30,
     .flags = EPAR_FIELD_REQUIRED, .help = "optimiser steps of every cell"},
    {.key = "warmup", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.warmup), .lo = 0, .hi = 1 << 30,
     .flags = EPAR_FIELD_REQUIRED, .help = "linear warm-up steps"},
    {.key = "eval_every", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.eval_every), .lo = 1, .hi = 1 << 30,
     .flags = EPAR_FIELD_REQUIRED, .help = "steps between evaluations"},
    {.key = "eval_batches", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.eval_batches), .lo = 1, .hi = 1 << 20,
     .flags = EPAR_FIELD_REQUIRED, .help = "evaluation batches at those points"},
    {.key = "eval_sequences", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.eval_sequences), .lo = 1, .hi = 1000000,
     .flags = EPAR_FIELD_REQUIRED, .help = "fixed evaluation set of a synthetic task"},
    {.key = "lm_eval_sequences", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.lm_eval_sequences), .lo = 1,
     .hi = 1000000, .flags = EPAR_FIELD_REQUIRED, .help = "held-out windows of lm"},
    {.key = "lm_length", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.lm_length), .lo = 2, .hi = 65536,
     .flags = EPAR_FIELD_REQUIRED, .help = "lm's length"},
    {.key = "short_length", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.short_length), .lo = 3, .hi = 65536,
     .flags = EPAR_FIELD_REQUIRED, .help = "the short tasks' length"},
    {.key = "long_length", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.long_length), .lo = 3, .hi = 65536,
     .flags = EPAR_FIELD_REQUIRED, .help = "the long tasks' length"},
    {.key = "extrapolation_tokens", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.extrap_tokens), .lo = 1,
     .hi = 1 << 30, .flags = EPAR_FIELD_REQUIRED, .help = "tokens at each extrapolation length"},
    {.key = "cost_length", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.cost_length), .lo = 2, .hi = 65536,
     .flags = EPAR_FIELD_REQUIRED, .help = "length of the cost cell"},
    {.key = "cost_repeats", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.cost_repeats), .lo = 1, .hi = 4000,
     .flags = EPAR_FIELD_REQUIRED, .help = "least blocks of adjacent step pairs of the cost cell"},
    {.key = "cost_max_repeats", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.cost_max_repeats), .lo = 1,
     .hi = 4000, .flags = EPAR_FIELD_REQUIRED, .help = "most blocks of the cost cell"},
    {.key = "cost_generation", .type = EPAR_FIELD_INT, .offset = offsetof(BB, b.cost_generation), .lo = 1, .hi = 4000,
     .flags = EPAR_FIELD_REQUIRED, .help = "blocks of the cost cell between fresh set-ups of its models"},
    {.key = "lr", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BB, b.lr),
     .flags = EPAR_FIELD_REQUIRED | EPAR_FIELD_POSITIVE, .help = "peak learning rate"},
    {.key = "lr_min_ratio", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BB, b.lr_min_ratio),
     .flags = EPAR_FIELD_REQUIRED | EPAR_FIELD_NONNEG, .help = "final learning rate / peak"},
    {.key = "weight_decay", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BB, b.weight_decay),
     .flags = EPAR_FIELD_REQUIRED | EPAR_FIELD_NONNEG, .help = "AdamW weight decay"},
    {.key = "clip", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BB, b.clip),
     .flags = EPAR_FIELD_REQUIRED | EPAR_FIELD_NONNEG, .help = "global gradient-norm clip"},
    {.key = "init_sd", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BB, b.init_sd),
     .flags = EPAR_FIELD_REQUIRED | EPAR_FIELD_NONNEG, .help = "sd of the initial weights"},
    {.key = "cost_halfwidth", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BB, b.cost_halfwidth),
     .flags = EPAR_FIELD_REQUIRED | EPAR_FIELD_POSITIVE,
     .help = "blocks until the cost claims' intervals are this narrow"},
    {.key = "cost_seconds", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BB, b.cost_seconds),
     .flags = EPAR_FIELD_REQUIRED | EPAR_FIELD_POSITIVE,
     .help = "... or until the cost cell's timed steps took this many CPU seconds"},
    {.key = "seeds", .type = EPAR_FIELD_LLIST, .offset = offsetof(BB, seeds), .lo = 0, .hi = 4294967295.0,
     .count_offset = offsetof(BB, n_seeds), .max = EPAR_MAX_SEEDS, .flags = EPAR_FIELD_REQUIRED},
    {.key = "stages", .type = EPAR_FIELD_ILIST, .offset = offsetof(BB, b.stages), .count_offset = offsetof(BB, b.n_stages),
     .max = EPAR_BENCH_MAX_STAGES, .lo = 2, .hi = EPAR_MAX_SEEDS,
     .help = "the staged grid's looks: seeds of each, increasing, the last at most the seeds' count (default: one look "
             "at every seed)"},
    {.key = "extend_all_open", .type = EPAR_FIELD_BOOL, .offset = offsetof(BB, b.extend_all_open),
     .help = "a later look adds seeds to every open claim, even one whose seeds needed at the observed spread exceed "
             "the cap (default false: futility, the seeds go where they can close a claim)"},
    {.key = "extrapolation", .type = EPAR_FIELD_STRING, .offset = offsetof(BB, extrap), .flags = EPAR_FIELD_REQUIRED,
     .help = "comma-separated lm evaluation lengths"},
    {.key = "cost_task", .type = EPAR_FIELD_STRING, .offset = offsetof(BB, cost_task), .flags = EPAR_FIELD_REQUIRED,
     .help = "task of the cost cell"},
    {.key = "lr_scale", .type = EPAR_FIELD_JSON, .offset = offsetof(BB, lr_scale)},
    {0}};
#undef BB

/* a task: its id, task, the paper's row and condition, length class (lm, short, long) and options. Read twice:
 * once with the options into a scratch struct (the keys checked, the task known), then, once the task's defaults
 * are set, the options into the task itself */
struct task_read {
    const char *id, *task, *paper, *condition, *length, *primary, *lr_family;
    double steps_scale;
    int eval_sequences, study, heads;
    json_t *set;
    struct epar_task_cfg opt;
};
#define TR struct task_read
/* a task's own keys; its options (lib/tasks' rows the benchmark reads) follow them in task_fields */
static const struct epar_field task_own_fields[] = {
    {.key = "id", .type = EPAR_FIELD_STRING, .offset = offsetof(TR, id), .flags = EPAR_FIELD_REQUIRED},
    {.key = "task", .type = EPAR_FIELD_STRING, .offset = offsetof(TR, task), .flags = EPAR_FIELD_REQUIRED},
    {.key = "paper", .type = EPAR_FIELD_STRING, .offset = offsetof(TR, paper), .flags = EPAR_FIELD_REQUIRED},
    {.key = "condition", .type = EPAR_FIELD_STRING, .offset = offsetof(TR, condition), .flags = EPAR_FIELD_REQUIRED},
    {.key = "length", .type = EPAR_FIELD_STRING, .offset = offsetof(TR, length), .flags = EPAR_FIELD_REQUIRED},
    {.key = "primary", .type = EPAR_FIELD_STRING, .offset = offsetof(TR, primary),
     .help = "final, final_loss, curve, curve_loss or online_loss (default final)"},
    {.key = "steps_scale", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TR, steps_scale),
     .flags = EPAR_FIELD_POSITIVE, .help = "the task's steps: the budget's times this (default 1)"},
    {.key = "eval_sequences", .type = EPAR_FIELD_INT, .offset = offsetof(TR, eval_sequences), .lo = 1, .hi = 1000000,
     .help = "its evaluation set (default: the budget's)"},
    {.key = "lr_family", .type = EPAR_FIELD_STRING, .offset = offsetof(TR, lr_family),
     .help = "tasks whose learning rates are chosen together (default: its id)"},
    {.key = "heads", .type = EPAR_FIELD_INT, .offset = offsetof(TR, heads), .lo = 1, .hi = 65536,
     .help = "its models' attention heads (default: the budget's; must divide its dim)"},
    {.key = "study", .type = EPAR_FIELD_BOOL, .offset = offsetof(TR, study),
     .help = "1: study-only: only the extrapolation study's cells of it (budgets' cells), no grid cells or tables"},
    {.key = "set", .type = EPAR_FIELD_JSON, .offset = offsetof(TR, set),
     .help = "mechanism parameters on this task's cells, over the section's \"set\" (e.g. {\"sliding-window.radius\": 2})"},
    {0}};
#define N_OWN (sizeof task_own_fields / sizeof task_own_fields[0] - 1)
/* a task's keys: its own, then its options (into opt); filled once (task_fields_init), before the section is read */
static struct epar_field task_fields[N_OWN + EPAR_TASK_MAX_OPTIONS + 1];
static pthread_once_t task_fields_once = PTHREAD_ONCE_INIT;
static void task_fields_init(void)
{
    memcpy(task_fields, task_own_fields, N_OWN * sizeof task_fields[0]);
    epar_task_option_rows(EPAR_TASK_OPT_BENCH, EPAR_TASK_ALL, offsetof(TR, opt), task_fields + N_OWN,
                          EPAR_TASK_MAX_OPTIONS + 1);
}
#undef N_OWN
#undef TR

/* the benchmark section (its "preset" is read with the run's parameters) */
struct bench_read {
    const char *mechanisms, *equalise;
    double param_tol, sanity_margin, head_pattern, head_similarity, head_mask_threshold;
    double boost[EPAR_BENCH_MAX_BOOST];
    int distance_bins, n_tasks, interv_sequences, n_boost;
    struct task_read tasks[EPAR_BENCH_MAX_TASKS];
    json_t *budgets;
};
#define BS struct bench_read
static const struct epar_field bench_fields[] = {
    {.key = "mechanisms", .type = EPAR_FIELD_STRING, .offset = offsetof(BS, mechanisms), .flags = EPAR_FIELD_REQUIRED,
     .help = "the mechanisms of the grid"},
    {.key = "equalise", .type = EPAR_FIELD_STRING, .offset = offsetof(BS, equalise),
     .help = "mlp (the MLP width equalises the parameter counts) or none"},
    {.key = "param_tolerance", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BS, param_tol),
     .flags = EPAR_FIELD_NONNEG, .help = "largest relative parameter-count difference"},
    {.key = "distance_bins", .type = EPAR_FIELD_INT, .offset = offsetof(BS, distance_bins), .lo = 1, .hi = 1024,
     .help = "bins of needle distance"},
    {.key = "sanity_margin", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BS, sanity_margin),
     .flags = EPAR_FIELD_NONNEG, .help = "margin of the sanity checks"},
    {.key = "head_pattern_threshold", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BS, head_pattern),
     .help = "a trained head is positional when its best fixed-pattern correlation is at least this (trained_heads.csv)"},
    {.key = "head_similarity_threshold", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BS, head_similarity),
     .help = "two trained heads are highly similar when their similarity is at least this (trained_heads.csv)"},
    {.key = "intervention_sequences", .type = EPAR_FIELD_INT, .offset = offsetof(BS, interv_sequences), .lo = 1,
     .hi = 1 << 20, .help = "evaluation items of the interventions on the kept checkpoints (head_masking.csv, boost.csv)"},
    {.key = "head_mask_threshold", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BS, head_mask_threshold),
     .flags = EPAR_FIELD_NONNEG,
     .help = "a head is removable when masking it worsens the metric by less than this share of it (head_masking.csv)"},
    {.key = "boost_factors", .type = EPAR_FIELD_DLIST, .offset = offsetof(BS, boost), .count_offset = offsetof(BS, n_boost),
     .max = EPAR_BENCH_MAX_BOOST, .help = "the attention boost factors of boost.csv (each > 0)"},
    {.key = "tasks", .type = EPAR_FIELD_OLIST, .offset = offsetof(BS, tasks), .count_offset = offsetof(BS, n_tasks),
     .max = EPAR_BENCH_MAX_TASKS, .stride = sizeof(struct task_read), .sub = task_fields,
     .flags = EPAR_FIELD_REQUIRED | EPAR_FIELD_STRICT, .help = "the tasks"},
    {.key = "budgets", .type = EPAR_FIELD_JSON, .offset = offsetof(BS, budgets), .flags = EPAR_FIELD_REQUIRED,
     .help = "the budgets by name"},
    {0}};
#undef BS
static const char *const bench_extra[] = {"description", "preset", "set", "extrapolation", NULL};

const char *const epar_bench_primary_names[EPAR_BENCH_NPRIMARY] = {"final", "final_loss", "curve", "curve_loss",
                                                                    "online_loss"};

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
    char stjp[360];
    snprintf(stjp, sizeof stjp, "%s.stages", jp);
    for (int k = 0; k < b->n_stages; k++)
        if ((k && b->stages[k] <= b->stages[k - 1]) || b->stages[k] > b->n_seeds)
            return epar_protocol_error(p, stjp, "expected increasing seed counts, the last at most the budget's seeds");
    if (b->n_stages == 0) {   /* a fixed design: one look at every seed */
        b->n_stages = 1;
        b->stages[0] = b->n_seeds;
    }
    b->n_extrap = 0;
    char buf[256], sjp[360];
    snprintf(buf, sizeof buf, "%s", r.extrap);
    snprintf(sjp, sizeof sjp, "%s.extrapolation", jp);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        long L = strtol(tok, &end, 10);
        if (*end || L < 2 || L > 65536 || b->n_extrap >= EPAR_BENCH_MAX_EXTRAP)
            return epar_protocol_error(p, sjp, "expected up to 16 comma-separated lengths in [2, 65536]");
        b->extrap[b->n_extrap++] = (int)L;
    }
    if (b->n_extrap < 1) return epar_protocol_error(p, sjp, "expected at least one length");
    if (epar_task_find(r.cost_task, &b->cost_task)) {
        snprintf(sjp, sizeof sjp, "%s.cost_task", jp);
        return epar_protocol_error(p, sjp, "unknown task");
    }
    if (b->dim % b->heads) return epar_protocol_error(p, jp, "heads must divide dim");
    if (b->cost_max_repeats < b->cost_repeats) return epar_protocol_error(p, jp, "cost_max_repeats must be >= cost_repeats");
    return EPAR_OK;
}

/* task k's names checked into c->tasks[k], its defaults set (the options are read over them afterwards) */
static int check_task(struct epar_bench_task *t, const struct task_read *r, const struct epar_protocol *p, const char *jp)
{
    const char *id = r->id;
    if (strlen(id) >= sizeof t->id || strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789-_") != strlen(id))
        return epar_protocol_error(p, jp, "id: lower-case letters, digits, '-' and '_', at most 31");
    enum epar_task_id tid;
    if (epar_task_find(r->task, &tid)) return epar_protocol_error(p, jp, "unknown task");
    const char *len = r->length;
    if (strcmp(len, "lm") && strcmp(len, "short") && strcmp(len, "long")) return epar_protocol_error(p, jp, "length is lm, short or long");
    snprintf(t->id, sizeof t->id, "%s", id);
    snprintf(t->paper, sizeof t->paper, "%s", r->paper);
    snprintf(t->condition, sizeof t->condition, "%s", r->condition);
    snprintf(t->length_class, sizeof t->length_class, "%s", len);
    t->primary = EPAR_BENCH_NPRIMARY;
    for (int k = 0; k < EPAR_BENCH_NPRIMARY; k++)
        if (!strcmp(r->primary ? r->primary : "final", epar_bench_primary_names[k])) t->primary = (enum epar_bench_primary)k;
    if (t->primary == EPAR_BENCH_NPRIMARY) return epar_protocol_error(p, jp, "primary: final, final_loss, curve, curve_loss or online_loss");
    t->steps_scale = r->steps_scale > 0 ? r->steps_scale : 1.0;
    t->study = r->study;
    t->heads = r->heads;
    t->eval_sequences = r->eval_sequences;
    const char *fam = r->lr_family ? r->lr_family : id;
    if (strlen(fam) >= sizeof t->lr_family) return epar_protocol_error(p, jp, "lr_family: at most 15 characters");
    snprintf(t->lr_family, sizeof t->lr_family, "%s", fam);
    for (int m = 0; m < EPAR_MECH_COUNT; m++) t->lr_scale[m] = 1.0;
    epar_task_cfg_default_for(&t->task, tid, EPAR_TASK_OPT_BENCH);
    return EPAR_OK;
}

/* a budget's "lr_scale": {family: {mechanism: scale}} into every task of that family (each mechanism's learning rate
 * there = lr x scale); a family no task has, an unknown mechanism or a scale that is not > 0 is a protocol error */
static int read_lr_scale(struct epar_bench_cfg *c, const struct epar_protocol *p, json_t *o, const char *bjp)
{
    char jp[512];
    snprintf(jp, sizeof jp, "%s.lr_scale", bjp);
    if (!o) return EPAR_OK;
    if (!json_is_object(o)) return epar_protocol_error(p, jp, "expected {family: {mechanism: scale}}");
    const char *fam, *mech;
    json_t *mo, *v;
    json_object_foreach(o, fam, mo) {
        snprintf(jp, sizeof jp, "%s.lr_scale.%s", bjp, fam);
        if (fam[0] == '_') continue;
        int any = 0;
        for (int k = 0; k < c->n_tasks; k++) any |= !strcmp(c->tasks[k].lr_family, fam);
        if (!any) return epar_protocol_error(p, jp, "no task has this lr_family");
        if (!json_is_object(mo)) return epar_protocol_error(p, jp, "expected {mechanism: scale}");
        json_object_foreach(mo, mech, v) {
            enum epar_mech_id id;
            snprintf(jp, sizeof jp, "%s.lr_scale.%s.%s", bjp, fam, mech);
            if (epar_nnpos_find(mech, &id)) return epar_protocol_error(p, jp, "not a trainable mechanism");
            if (!json_is_number(v) || !(json_number_value(v) > 0)) return epar_protocol_error(p, jp, "expected a scale > 0");
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
            if (!strcmp(c->tasks[k].id, c->tasks[i].id)) return epar_protocol_error(p, tjp, "repeated id");
    }
    struct epar_field task_options[EPAR_TASK_MAX_OPTIONS + 1];
    epar_task_option_rows(EPAR_TASK_OPT_BENCH, EPAR_TASK_ALL, offsetof(struct epar_bench_task, task), task_options,
                          EPAR_TASK_MAX_OPTIONS + 1);
    const struct epar_field options[] = {
        {.key = "tasks", .type = EPAR_FIELD_OLIST, .offset = offsetof(struct epar_bench_cfg, tasks),
         .count_offset = offsetof(struct epar_bench_cfg, n_tasks), .max = EPAR_BENCH_MAX_TASKS,
         .stride = sizeof(struct epar_bench_task), .sub = task_options},
        {0}};
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
    pthread_once(&task_fields_once, task_fields_init);
    const char *jp = "$.experiments.benchmark";
    json_t *sec = epar_protocol_section(p, "benchmark");
    if (!sec) return epar_protocol_error(p, jp, "missing (the benchmark needs its section)");
    const char *keys[24];
    epar_fields_keys(bench_fields, bench_extra, keys, 24);
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
    r->head_pattern = r->head_similarity = 0.8;
    r->interv_sequences = 256;
    r->head_mask_threshold = 0.02;
    st = epar_protocol_obj_fields(p, sec, jp, bench_fields, r);
    for (int i = 0; !st && i < r->n_boost; i++)
        if (!(r->boost[i] > 0) || !isfinite(r->boost[i])) st = epar_protocol_error(p, jp, "boost_factors are numbers > 0");
    if (!st && (st = epar_exp_benchmark_select(c, NULL, r->mechanisms)))
        st = epar_err_set(EPAR_EPROTOCOL, "invalid protocol '%s': %s.mechanisms: %s", p->path, jp, epar_err_message());
    if (!st && strcmp(r->equalise, "mlp") && strcmp(r->equalise, "none")) st = epar_protocol_error(p, jp, "equalise is 'mlp' or 'none'");
    c->equalise_mlp = !st && !strcmp(r->equalise, "mlp");
    c->param_tol = r->param_tol;
    c->distance_bins = r->distance_bins;
    c->sanity_margin = r->sanity_margin;
    c->head_pattern = r->head_pattern;
    c->head_similarity = r->head_similarity;
    c->interv_sequences = r->interv_sequences;
    c->head_mask_threshold = r->head_mask_threshold;
    c->n_boost = r->n_boost;
    memcpy(c->boost, r->boost, sizeof c->boost);
    if (!st) st = epar_audit_level(p->root, p->path, &c->audit_level);
    if (!st) st = read_tasks_budget(c, p, r, budget);
    if (!st) epar_bench_levels(c);
    /* issue 33: mechanism parameters of the protocol (as --set), a task's own over them, then the length-extrapolation
     * study */
    if (!st) st = epar_exp_sets(p, json_object_get(sec, "set"), "$.experiments.benchmark.set", epar_exp_train_set, &c->base);
    for (int i = 0; !st && i < c->n_tasks; i++) {
        if (!r->tasks[i].set) continue;
        char tjp[300];
        snprintf(tjp, sizeof tjp, "$.experiments.benchmark.tasks[%d].set", i);
        struct epar_train_cfg t = c->base;
        if (!(st = epar_exp_sets(p, r->tasks[i].set, tjp, epar_exp_train_set, &t))) {
            c->tasks[i].pos = t.pos;
            c->tasks[i].own_pos = 1;
        }
    }
    free(r);
    /* the study-only tasks after the grid's (the order of each kept): n_tasks counts the grid's */
    if (!st) {
        struct epar_bench_task *keep = EPAR_CALLOC(EPAR_BENCH_MAX_TASKS, sizeof *keep);
        if (!keep) return EPAR_ENOMEM;
        int n = 0, all = c->n_tasks;
        for (int pass = 0; pass < 2; pass++)
            for (int k = 0; k < all; k++)
                if (c->tasks[k].study == pass) keep[n++] = c->tasks[k];
        memcpy(c->tasks, keep, (size_t)all * sizeof *keep);
        free(keep);
        c->n_study = 0;
        for (int k = 0; k < all; k++) c->n_study += c->tasks[k].study;
        c->n_tasks = all - c->n_study;
    }
    if (!st) st = epar_bx_config(c, p, budget);
    if (st) return st;
    snprintf(c->b.name, sizeof c->b.name, "%s", budget);
    /* lengths from the budget, the evaluation set size, then every task checked as it will run */
    char tjp[300];
    for (int k = 0; k < c->n_tasks + c->n_study; k++) {
        struct epar_bench_task *t = &c->tasks[k];
        t->task.length = !strcmp(t->length_class, "lm") ? c->b.lm_length
                         : !strcmp(t->length_class, "short") ? c->b.short_length : c->b.long_length;
        t->task.eval_sequences = t->eval_sequences > 0 ? t->eval_sequences : c->b.eval_sequences;
        if (epar_task_validate(&t->task)) {
            snprintf(tjp, sizeof tjp, "%s.tasks[%d] (%s) with budget %s", jp, k, t->id, budget);
            return epar_protocol_error(p, tjp, "%s", epar_err_message());
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
        int n = 0, all = c->n_tasks + c->n_study;
        snprintf(buf, sizeof buf, "%s", tasks);
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            int found = -1;
            for (int k = 0; k < all; k++)
                if (!strcmp(c->tasks[k].id, tok)) found = k;
            if (found < 0) {
                epar_err_set(EPAR_EINVAL, "unknown benchmark task '%s'", tok);
                char list[512] = "";
                struct epar_nearest near;
                epar_nearest_init(&near, tok);
                for (int k = 0; k < all; k++) {
                    size_t l = strlen(list);
                    snprintf(list + l, sizeof list - l, "%s%s", k ? ", " : "", c->tasks[k].id);
                    epar_nearest_add(&near, c->tasks[k].id);
                }
                if (near.best) epar_err_hint("did you mean %s? (tasks of the protocol: %s)", epar_nearest_text(&near, ""), list);
                else epar_err_hint("tasks of the protocol: %s", list);
                return EPAR_EINVAL;
            }
            for (int k = 0; k < n; k++)
                if (!strcmp(keep[k].id, tok)) return epar_err_set(EPAR_EINVAL, "task '%s' is listed twice", tok);
            keep[n++] = c->tasks[found];
        }
        if (!n) return epar_err_set(EPAR_EINVAL, "no task in '%s'", tasks);
        int g = 0;   /* the grid's tasks first, then the study-only ones */
        for (int pass = 0; pass < 2; pass++)
            for (int k = 0; k < n; k++)
                if (keep[k].study == pass) c->tasks[g++] = keep[k];
        c->n_study = 0;
        for (int k = 0; k < n; k++) c->n_study += keep[k].study;
        c->n_tasks = n - c->n_study;
    }
    epar_bx_select(c);   /* the extrapolation study's own mechanisms after the grid's */
    return EPAR_OK;
}

/* ------------------------------------------------------------------------------------------------ */
/* plan                                                                                               */

int epar_bench_mech_index(const struct epar_bench_cfg *c, enum epar_mech_id id)
{
    for (int m = 0; m < c->n_mech; m++)
        if (c->mech[m] == id) return m;
    return -1;
}

/* the cost cell's design (struct cost_design in benchmark_int.h says what it is) */
void epar_bench_cost_design(const struct epar_bench_cfg *c, struct cost_design *d)
{
    memset(d, 0, sizeof *d);
    d->n_mech = c->n_mech;
    int none = epar_bench_mech_index(c, EPAR_MECH_NONE), basic = epar_bench_mech_index(c, EPAR_MECH_EPAR_BASIC);
    int enh = epar_bench_mech_index(c, EPAR_MECH_EPAR_ENHANCED), covered[EPAR_MECH_COUNT] = {0}, any = 0;
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

/* block B as a sequence of steps (seq: mechanism indices; returns its length) after a block that ended with step
 * prev (-1: none) and, for each unit k in it, the positions of its two steps (pa[k], pb[k]; -1 for a unit not in
 * this block, pb -1 for a step alone). A pair's two steps are adjacent and its own: no step is in two pairs of one
 * comparison. Orders, fixed by B alone (deterministic): a pair's order alternates, between blocks (a unit in turn:
 * between its turns); the units come in an order drawn from B, so what precedes a pair varies and falls on both
 * of its sides alike; and no model takes two steps in a row (a step right after its own model's previous step finds
 * that model's weights and optimiser state in the caches and is faster: 2-5 % here, bench/README.md): a unit that
 * would start with the last step's model waits for the next, and when all would, a step of another model is put
 * in between (a spacer: timed, in no pair) */
int epar_bench_cost_turn(const struct cost_design *d, int B) { return d->n_oth && !(B & 1) ? d->oth[B / 2 % d->n_oth] : -1; }

int epar_bench_cost_block(const struct cost_design *d, int B, int prev, int *seq, int *pa, int *pb)
{
    int order[2 * EPAR_MECH_COUNT + 1], flip[2 * EPAR_MECH_COUNT + 1], nu = 0, n = 0;
    for (int i = 0; i < d->n_dec; i++) {
        order[nu] = d->dec[i];
        flip[nu++] = B & 1;
    }
    int turn = epar_bench_cost_turn(d, B);
    if (turn >= 0) {   /* every other block: its turn T = B / 2 */
        order[nu] = turn;
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
    return epar_bench_cost_block(d, 0, -1, seq, pa, pb);
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

/* relative work of a cell: tokens x epar_bench_token_work, of the training steps and the evaluations (eval_batches
 * batches every eval_every steps, then the final evaluation set; the forward only, a third of a training step's work
 * per token; the cost cell evaluates nothing), and of the extrapolation study's evaluations and fine-tuning in the
 * cell. The schedule's and the estimate's unit: bench_sched.c times a few training steps of it. */
static double cell_weight(const struct epar_bench_cfg *c, const struct epar_bench_cell *cell,
                          const struct epar_train_cfg *t, int evaluated)
{
    double T = t->task.length, evals = 0, final = 0, study = 0;
    if (evaluated) {
        evals = t->eval_every > 0 ? floor((double)t->optim.steps / t->eval_every) * t->eval_batches * t->batch : 0;
        final = t->task.id == EPAR_TASK_LM ? c->b.lm_eval_sequences : t->task.eval_sequences;
        study = epar_bx_cell_work(c, cell, t);
    }
    return ((double)t->optim.steps * t->batch + (evals + final) / 3.0) * T * epar_bench_token_work(t, T) + study;
}

int epar_bench_plan(const struct epar_bench_cfg *c, struct epar_bench_plan *plan)
{
    int S = c->b.n_seeds, M = c->n_mech, X = c->extrap.n_extra, nx = 0, NT = c->n_tasks, cost = NT + c->n_study;
    /* the extrapolation study's own cells: after the grid's (tables index those), those of the study-only tasks (any
     * mechanism it lists) last; then the cost cell */
    for (int i = 0; i < cost; i++)
        for (int m = i < NT ? M : 0; m < M + X; m++) nx += epar_bx_has_cell(c, i, m);
    plan->n = c->n_tasks * M * S + nx * S + 1;
    struct cost_design cd;
    epar_bench_cost_design(c, &cd);
    double cost_steps_least = (double)c->b.cost_repeats * cost_block_steps(&cd);
    plan->cells = calloc((size_t)plan->n, sizeof *plan->cells);
    if (!plan->cells) return epar_err_set(EPAR_ENOMEM, "out of memory planning the grid");
    int k = 0, kx = c->n_tasks * M * S;
    for (int i = 0; i <= cost; i++) {
        struct epar_bench_cell probe = {i < cost ? i : -1, 0, 0, c->b.mlp, 0, 0};
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
            if (i == cost ? m >= M : (m >= M || i >= NT) && !epar_bx_has_cell(c, i, m)) continue;
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
                             epar_nnpos_name(u.mechanism), i < cost ? c->tasks[i].id : "the cost task", n0,
                             100 * rel, ref, 100 * c->param_tol);
                epar_err_hint("raise param_tolerance or set equalise to 'mlp' in $.experiments.benchmark");
                return EPAR_ECHECK;
            }
            if (i == cost) {
                plan->cost_mlp[m] = u.mlp;
                plan->cost_params[m] = n0;
            }
            int nseeds = i < cost ? S : (m == 0 ? 1 : 0);   /* the cost cell: one for all mechanisms */
            for (int s = 0; s < nseeds; s++) {
                struct epar_bench_cell *cell = &plan->cells[i == cost ? plan->n - 1 : m < M && i < NT ? k++ : kx++];
                *cell = (struct epar_bench_cell){i < cost ? i : -1, m, s, u.mlp, n0, 0};
                struct epar_train_cfg w;
                epar_exp_benchmark_cell_cfg(c, cell, &w);
                /* the cost cell: the steps of its least number of blocks (more when the intervals need them) */
                cell->weight = i < cost ? cell_weight(c, cell, &w, 1)
                                        : cell_weight(c, cell, &w, 0) * (double)cost_steps_least / (double)w.optim.steps;
            }
        }
    }
    if (c->sub) plan->n--;   /* a staged look's grid of one claim: no cost cell (it does not depend on the seeds) */
    return EPAR_OK;
}

void epar_exp_benchmark_plan_free(struct epar_bench_plan *plan)
{
    free(plan->cells);
    plan->cells = NULL;
    plan->n = 0;
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

/* the scores of mechanism mech on the lr_family of task i (its first task) in the n study folders' metrics.csv (in;
 * one: scale 1's): per scale k the mean over the family's tasks of the relative improvement of the primary metric
 * over scale 1 (NaN: no task has both), *ntask the most tasks behind a score; returns the chosen scale's index */
static int lr_scores(const struct epar_bench_cfg *c, const struct epar_table *const *in, int n, int one, int i,
                     const char *mech, double *score, int *ntask)
{
    const char *fam = c->tasks[i].lr_family;
    int best = one;
    *ntask = 0;
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
        *ntask = cnt > *ntask ? cnt : *ntask;
    }
    for (int k = 0; k < n; k++)   /* the best score above scale 1's 0; ties go to the earlier scale */
        if (isfinite(score[k]) && score[k] > (best == one ? 0 : score[best])) best = k;
    return best;
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
            const char *mech = epar_bench_mech_name(c, m);
            double score[EPAR_BENCH_MAX_SCALES];
            int ntask, best = lr_scores(c, (const struct epar_table *const *)in, n, one, i, mech, score, &ntask);
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
