/* The staged grid: which trained claims a look judges, which cells a claim reads, the grid of a claim's own cells
 * (bench_stage.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "lib/err.h"
#include "experiments/benchmark/bench_extrap.h"
#include "experiments/benchmark/bench_stage.h"
#include "experiments/benchmark/benchmark.h"

static const char *jstr(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* calls fn on every (file, where) of a claim's measure and readings */
static void each_measure(json_t *claim, void (*fn)(json_t *m, void *arg), void *arg)
{
    json_t *m = json_object_get(claim, "measure"), *rds = json_object_get(m, "readings"), *r;
    size_t i;
    if (json_is_array(rds)) {
        json_array_foreach(rds, i, r) if (jstr(r, "file")) fn(r, arg);
    } else if (jstr(m, "file")) {
        fn(m, arg);
    }
}

static void is_bench(json_t *m, void *arg)
{
    *(int *)arg |= !strncmp(jstr(m, "file"), "benchmark/", 10);
}

int epar_bench_stage_trained(json_t *claim)
{
    int any = 0;
    each_measure(claim, is_bench, &any);
    return any;
}

/* ---- the families of a claim ---- */

enum kind { KIND_NONE, KIND_TASK, KIND_NAMED };

/* what a benchmark table reads: every grid mechanism of a task (the tables that compare against every baseline or
 * summarise a task), the mechanisms a row names, or nothing more seeds change */
static enum kind file_kind(const char *file)
{
    const char *f = file + 10;   /* after "benchmark/" */
    static const char *const task[] = {"main_table.csv", "comparisons.csv", "when_to_use.csv", "metrics.csv",
                                       "sanity.csv", "distance.csv", "steps_to_learn.csv", "extrapolation.csv", NULL};
    static const char *const named[] = {"pairs.csv", "extrapolation_bpc.csv", "extrapolation_entropy.csv",
                                        "retrieval.csv", "trained_attention.csv", "trained_heads.csv",
                                        "alibi_slopes.csv", NULL};
    for (int i = 0; task[i]; i++)
        if (!strcmp(f, task[i])) return KIND_TASK;
    for (int i = 0; named[i]; i++)
        if (!strcmp(f, named[i])) return KIND_NAMED;
    return KIND_NONE;   /* cost.csv, position_cost.csv (the cost of a step), head_masking*, boost* (the first seed) */
}

static int task_of(const struct epar_bench_cfg *c, const char *id)
{
    for (int t = 0; t < c->n_tasks + c->n_study; t++)
        if (!strcmp(c->tasks[t].id, id)) return t;
    return -1;
}

/* the mechanism index behind a series or pair name on task t (-1: none, e.g. "chance") */
static int mech_of(const struct epar_bench_cfg *c, int t, const char *name)
{
    char nm[64];
    snprintf(nm, sizeof nm, "%s", name);
    size_t l = strlen(nm);
    if (l > 3 && !strcmp(nm + l - 3, "+ft")) nm[l - 3] = '\0';   /* a fine-tuning arm: its cell's */
    for (int i = 0; i < c->extrap.n_variants; i++)   /* a reading of another mechanism's weights */
        if (!strcmp(c->extrap.variants[i].name, nm)) {
            snprintf(nm, sizeof nm, "%s", epar_nnpos_name(c->extrap.variants[i].trained));
            break;
        }
    for (int m = 0; m < c->n_mech + c->extrap.n_extra; m++)
        if (!strcmp(epar_bench_mech_name(c, m), nm)) return epar_bx_has_cell(c, t, m) ? m : -1;
    return -1;
}

struct fam_walk {
    const struct epar_bench_cfg *c;
    unsigned char (*fam)[EPAR_MECH_COUNT];
    int any_none;   /* a file whose reading more seeds cannot change */
};

static void all_cells(const struct epar_bench_cfg *c, int t, unsigned char *row, int grid_only)
{
    for (int m = 0; m < c->n_mech + c->extrap.n_extra; m++)
        if ((!grid_only || m < c->n_mech) && epar_bx_has_cell(c, t, m)) row[m] = 1;
}

/* the names of a where value (a string, "a|b|c", or an array of them) -> row; returns how many resolved */
static int add_names(const struct epar_bench_cfg *c, int t, json_t *v, unsigned char *row)
{
    int n = 0;
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) n += add_names(c, t, x, row);
        return n;
    }
    if (!json_is_string(v)) return 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", json_string_value(v));
    for (char *save = NULL, *tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) {
        int m = mech_of(c, t, tok);
        if (m >= 0) row[m] = 1, n++;
    }
    return n;
}

/* the tasks of a row selector: where.task (a string or an array), else the tasks of where.condition, else every grid
 * task */
static int tasks_of(const struct epar_bench_cfg *c, json_t *where, int *out)
{
    int n = 0;
    json_t *tv = json_object_get(where, "task");
    if (json_is_string(tv) && task_of(c, json_string_value(tv)) >= 0) out[n++] = task_of(c, json_string_value(tv));
    else if (json_is_array(tv)) {
        size_t i;
        json_t *x;
        json_array_foreach(tv, i, x) if (json_is_string(x) && task_of(c, json_string_value(x)) >= 0)
            out[n++] = task_of(c, json_string_value(x));
    } else if (jstr(where, "condition")) {
        for (int t = 0; t < c->n_tasks; t++)
            if (!strcmp(c->tasks[t].condition, jstr(where, "condition"))) out[n++] = t;
    } else if (!tv) {
        for (int t = 0; t < c->n_tasks; t++) out[n++] = t;
    }
    return n;
}

static void add_measure(json_t *m, void *arg)
{
    struct fam_walk *w = arg;
    const char *file = jstr(m, "file");
    if (strncmp(file, "benchmark/", 10)) return;
    enum kind k = file_kind(file);
    if (k == KIND_NONE) {
        w->any_none = 1;
        return;
    }
    json_t *where = json_object_get(m, "where");
    int tasks[EPAR_BENCH_MAX_TASKS], nt = tasks_of(w->c, where, tasks);
    for (int i = 0; i < nt; i++) {
        int t = tasks[i];
        unsigned char *row = w->fam[t];
        if (k == KIND_TASK) {
            all_cells(w->c, t, row, t < w->c->n_tasks);
            continue;
        }
        static const char *const keys[] = {"a", "b", "series", "mechanism", "versus"};
        int named = 0;
        for (size_t j = 0; j < sizeof keys / sizeof keys[0]; j++) named += add_names(w->c, t, json_object_get(where, keys[j]), row);
        if (!named) all_cells(w->c, t, row, 0);   /* names this grid does not resolve: every cell of the task */
        /* the trained-attention tables' columns against none (distance_ratio_vs_none, positional_share_vs_none) */
        int none = strstr(file, "trained_") ? mech_of(w->c, t, epar_nnpos_name(EPAR_MECH_NONE)) : -1;
        if (none >= 0) row[none] = 1;
    }
}

int epar_bench_stage_families(const struct epar_bench_cfg *c, json_t *claim,
                              unsigned char fam[EPAR_BENCH_MAX_TASKS][EPAR_MECH_COUNT])
{
    memset(fam, 0, sizeof(unsigned char[EPAR_BENCH_MAX_TASKS][EPAR_MECH_COUNT]));
    struct fam_walk w = {c, fam, 0};
    each_measure(claim, add_measure, &w);
    int n = 0;
    for (int t = 0; t < c->n_tasks + c->n_study; t++)
        for (int m = 0; m < c->n_mech + c->extrap.n_extra; m++) n += fam[t][m];
    return n;
}

/* ---- the grid of a claim's own cells ---- */

int epar_bench_stage_restrict(const struct epar_bench_cfg *full, const unsigned char fam[EPAR_BENCH_MAX_TASKS][EPAR_MECH_COUNT],
                              int n_seeds, struct epar_bench_cfg *sub)
{
    *sub = *full;
    char tasks[1024] = "", mechs[1024] = "";
    int n_grid_mech = 0;
    for (int t = 0; t < full->n_tasks + full->n_study; t++) {
        int any = 0;
        for (int m = 0; m < full->n_mech + full->extrap.n_extra; m++) any |= fam[t][m];
        if (!any) continue;
        size_t l = strlen(tasks);
        snprintf(tasks + l, sizeof tasks - l, "%s%s", l ? "," : "", full->tasks[t].id);
    }
    if (!tasks[0]) return epar_err_set(EPAR_EINVAL, "a staged look with no cells");
    /* the grid's mechanisms: those any grid task of the claim reads (one grid for its tasks) */
    for (int m = 0; m < full->n_mech; m++) {
        int any = 0;
        for (int t = 0; t < full->n_tasks; t++) any |= fam[t][m];
        if (!any) continue;
        size_t l = strlen(mechs);
        snprintf(mechs + l, sizeof mechs - l, "%s%s", l ? "," : "", epar_bench_mech_name(full, m));
        n_grid_mech++;
    }
    /* a grid task whose claim reads only the study's cells there still has a grid: none's cells (the grid needs a
     * mechanism; none is the cheapest, and the reference of most pairs) */
    if (!n_grid_mech) snprintf(mechs, sizeof mechs, "%s", epar_nnpos_name(EPAR_MECH_NONE));
    /* the study's own cells: those the claim reads */
    struct epar_bench_extrap *x = &sub->extrap;
    for (int i = 0; i < x->n_cells; i++) {
        int t = task_of(full, x->cells[i].task), k2 = 0;
        for (int k = 0; k < x->cells[i].n_mech; k++) {
            const char *name = x->cells[i].var[k].name[0] ? x->cells[i].var[k].name : epar_nnpos_name(x->cells[i].mech[k]);
            int keep = 0;
            /* by name: a study-only task's cells of a grid mechanism (lm-h8-low's none) are marked at its index */
            for (int m = 0; t >= 0 && m < full->n_mech + full->extrap.n_extra; m++)
                keep |= fam[t][m] && !strcmp(epar_bench_mech_name(full, m), name);
            if (!keep) continue;
            x->cells[i].mech[k2] = x->cells[i].mech[k];
            x->cells[i].var[k2++] = x->cells[i].var[k];
        }
        x->cells[i].n_mech = k2;
    }
    x->restricted = 0;
    int st = epar_exp_benchmark_select(sub, tasks, mechs);
    if (st) return st;
    sub->b.n_seeds = n_seeds;
    sub->sub = 1;
    return EPAR_OK;
}

void epar_bench_stage_path(const char *out_root, char *path, size_t n)
{
    snprintf(path, n, "%s/benchmark/stages.json", out_root);
}

json_t *epar_bench_stage_record(const char *out_root)
{
    char path[4400];
    epar_bench_stage_path(out_root, path, sizeof path);
    return json_load_file(path, 0, NULL);
}
