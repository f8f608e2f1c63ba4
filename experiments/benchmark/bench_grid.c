/* The benchmark grid's shared part (bench_grid.h): a cell's training configuration and its folder, used by the grid
 * (benchmark*.c) and the length-extrapolation study (bench_extrap*.c) alike. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "lib/nnpos.h"
#include "experiments/benchmark/bench_grid.h"

const char *epar_bench_mech_name(const struct epar_bench_cfg *c, int m)
{
    return c->mvar[m].name[0] ? c->mvar[m].name : epar_nnpos_name(c->mech[m]);
}

int epar_bench_mvar_parse(const char *s, enum epar_mech_id *id, struct epar_bench_mvar *v)
{
    char buf[64];
    memset(v, 0, sizeof *v);
    if (strlen(s) >= sizeof v->name) return epar_err_set(EPAR_EINVAL, "'%s': a name of at most 47 characters", s);
    snprintf(buf, sizeof buf, "%s", s);
    char *at = strchr(buf, '@');
    if (at) *at = '\0';
    int st = epar_nnpos_find(buf, id);
    if (st || !at) return st;
    double p[EPAR_MECH_MAX_PARAMS];
    epar_mech_defaults(*id, p);
    for (char *save = NULL, *a = strtok_r(at + 1, "@", &save); a; a = strtok_r(NULL, "@", &save)) {
        char *eq = strchr(a, '='), *end = NULL;
        if (eq) *eq = '\0';
        double x = eq ? strtod(eq + 1, &end) : 0;
        int k = epar_mech_param_index(*id, a);
        if (!eq || end == eq + 1 || *end || k < 0 || v->n >= EPAR_BENCH_MVAR_MAX)
            return epar_err_set(EPAR_EINVAL, "'%s': expected mechanism@parameter=value (a parameter of %s, at most %d)", s,
                                epar_nnpos_name(*id), EPAR_BENCH_MVAR_MAX);
        if ((st = epar_mech_set_param(*id, p, a, x))) return st;
        v->idx[v->n] = k;
        v->val[v->n++] = x;
    }
    snprintf(v->name, sizeof v->name, "%s", s);
    return EPAR_OK;
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
    t->heads = cell->task >= 0 && c->tasks[cell->task].heads > 0 ? c->tasks[cell->task].heads : b->heads;
    t->mlp = cell->mlp;
    t->batch = cell->task >= 0 && !strcmp(c->tasks[cell->task].length_class, "long") ? b->long_batch : b->batch;
    /* the cost cell: one untimed step, then up to EPAR_BENCH_MAX_COST_STEPS timed ones */
    const struct epar_bench_task *bt = cell->task >= 0 ? &c->tasks[cell->task] : NULL;
    if (bt && bt->own_pos) t->pos = bt->pos;   /* the task's own mechanism parameters ("set" of the task) */
    for (int k = 0; k < c->mvar[cell->mech].n; k++)   /* a study cell's own ("pi-attention@step=4") over both */
        t->pos.mp[t->mechanism][c->mvar[cell->mech].idx[k]] = c->mvar[cell->mech].val[k];
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
    else snprintf(buf, n, "cells/%s/%s/seed-%lu", c->tasks[cell->task].id, epar_bench_mech_name(c, cell->mech),
                  c->b.seeds[cell->seed]);
}

int epar_exp_benchmark_distance_bin(const struct epar_bench_cfg *c, int i, int bin, int *lo, int *hi)
{
    int D = epar_task_max_group(&c->tasks[i].task), nb = c->distance_bins < D ? c->distance_bins : D;
    /* distances 1 .. D (lib/tasks' needle) in nb bins of (nearly) equal width */
    if (lo && hi) *lo = 1 + (int)((long)bin * D / nb), *hi = (int)((long)(bin + 1) * D / nb);
    return nb;
}

int epar_exp_benchmark_window_reach(const struct epar_bench_cfg *c, int i)
{
    const struct epar_nnpos_settings *s = i >= 0 && c->tasks[i].own_pos ? &c->tasks[i].pos : &c->base.pos;
    return c->b.layers * (int)s->mp[EPAR_MECH_SLIDING_WINDOW][0];   /* sliding-window.radius per layer */
}

double epar_bench_token_work(const struct epar_train_cfg *t, double T)
{
    double C = t->dim;
    return (12.0 * C * C + 2.0 * t->mlp * C + 4.0 * T * C) * t->layers;
}

void epar_bench_levels(struct epar_bench_cfg *c)
{
    int looks = c->b.n_stages > 0 ? c->b.n_stages : 1;
    c->level = 1 - (1 - c->audit_level) / looks;
}
