/* The benchmark's cells: running one, its files (resume, shards, merge) and the grid read back from them. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/blas.h"
#include "lib/csvout.h"
#include "lib/err.h"
#include "lib/outdir.h"
#include "lib/rng.h"
#include "experiments/benchmark/benchmark_int.h"
#include "experiments/common.h"
#include "experiments/train/inspect.h"

/* ------------------------------------------------------------------------------------------------ */
/* cells                                                                                              */

/* ---- the cell files, as rows: cell.json is written from and read back into these records ---- */

#define CE struct cell_extrap
static const struct epar_field extrap_rows[] = {
    {.key = "length", .type = EPAR_FIELD_INT, .offset = offsetof(CE, length), .lo = 2, .hi = 65536,
     .flags = EPAR_FIELD_REQUIRED},
    {.key = "value", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(CE, value), .flags = EPAR_FIELD_REQUIRED},
    {.key = "defined", .type = EPAR_FIELD_BOOL, .offset = offsetof(CE, defined), .flags = EPAR_FIELD_REQUIRED},
    {.key = "sequences", .type = EPAR_FIELD_LONG, .offset = offsetof(CE, sequences), .lo = 0, .hi = 1e15},
    {0}};
#undef CE

/* the trained heads' summaries in a cell: epar inspect's, over TRAINED_ITEMS evaluation items */
#define TRAINED_ITEMS 16
/* ... and per head (trained_heads.csv); a double left out (NaN) reads back as NaN */
#define AH struct epar_inspect_head
#define AH_D(k, m) {.key = k, .type = EPAR_FIELD_DOUBLE, .offset = offsetof(AH, m), .def = NAN, .flags = EPAR_FIELD_OPTIONAL}
static const struct epar_field attn_head_rows[] = {
    {.key = "layer", .type = EPAR_FIELD_INT, .offset = offsetof(AH, layer), .lo = 0, .hi = 1 << 20,
     .flags = EPAR_FIELD_REQUIRED},
    {.key = "head", .type = EPAR_FIELD_INT, .offset = offsetof(AH, head), .lo = 0, .hi = 1 << 20,
     .flags = EPAR_FIELD_REQUIRED},
    AH_D("mean_distance", mean_distance), AH_D("entropy", entropy),
    AH_D("pattern_current", pattern[EPAR_INSPECT_PATTERN_CURRENT]),
    AH_D("pattern_previous", pattern[EPAR_INSPECT_PATTERN_PREVIOUS]),
    AH_D("pattern_left", pattern[EPAR_INSPECT_PATTERN_LEFT]), AH_D("pattern_first", pattern[EPAR_INSPECT_PATTERN_FIRST]),
    AH_D("pattern_best", pattern_best), AH_D("similar_layer", similar_layer), AH_D("similar_other", similar_other),
    AH_D("slope", slope),
    {0}};
#undef AH_D
#undef AH
#define AS struct epar_inspect_summary
static const struct epar_field attn_rows[] = {
    {.key = "items", .type = EPAR_FIELD_INT, .offset = offsetof(AS, items), .lo = 0, .hi = 1 << 30,
     .help = "evaluation items"},
    {.key = "heads", .type = EPAR_FIELD_INT, .offset = offsetof(AS, heads), .lo = 0, .hi = 1 << 20,
     .help = "layers x heads"},
    {.key = "length", .type = EPAR_FIELD_INT, .offset = offsetof(AS, length), .lo = 0, .hi = 1 << 20,
     .help = "sequence length"},
    {.key = "distance_spearman", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(AS, distance_spearman),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "distance_spearman_sd", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(AS, distance_spearman_sd),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "distance_ratio", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(AS, distance_ratio),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "first_share", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(AS, first_share),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "relevant_share", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(AS, relevant_share),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "relevant_uniform", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(AS, relevant_uniform),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "profile_spearman", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(AS, profile_spearman),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "per_head", .type = EPAR_FIELD_OLIST, .offset = offsetof(AS, head), .count_offset = offsetof(AS, n_head),
     .max = 1 << 20, .stride = sizeof(struct epar_inspect_head), .sub = attn_head_rows,
     .flags = EPAR_FIELD_ALLOC | EPAR_FIELD_OPTIONAL},
    {0}};
#undef AS

#define TCL struct train_cell
static const struct epar_field train_cell_rows[] = {
    {.key = "config", .type = EPAR_FIELD_JSON, .offset = offsetof(TCL, config)},
    {.key = "task", .type = EPAR_FIELD_STRING, .offset = offsetof(TCL, task)},
    {.key = "task_kind", .type = EPAR_FIELD_STRING, .offset = offsetof(TCL, task_kind)},
    {.key = "mechanism", .type = EPAR_FIELD_STRING, .offset = offsetof(TCL, mechanism)},
    {.key = "seed", .type = EPAR_FIELD_LONG, .offset = offsetof(TCL, seed), .lo = 0, .hi = 1e15},
    {.key = "params", .type = EPAR_FIELD_LONG, .offset = offsetof(TCL, params), .lo = 0, .hi = 1e15},
    {.key = "metric", .type = EPAR_FIELD_STRING, .offset = offsetof(TCL, metric)},
    {.key = "value", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TCL, value), .flags = EPAR_FIELD_REQUIRED},
    {.key = "eval_loss", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TCL, eval_loss)},
    /* sample efficiency: means over the learning curve (curve_means) */
    {.key = "curve_metric", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TCL, curve_metric),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "curve_loss", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TCL, curve_loss), .flags = EPAR_FIELD_OPTIONAL},
    {.key = "online_loss", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TCL, online_loss),
     .flags = EPAR_FIELD_OPTIONAL},
    /* low resource (train_sequences): the final model on its training pool (absent without a pool) */
    {.key = "train_pool_value", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TCL, pool_value),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "train_pool_loss", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TCL, pool_loss),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "scored", .type = EPAR_FIELD_LONG, .offset = offsetof(TCL, scored), .lo = 0, .hi = 1e15},
    {.key = "sequences", .type = EPAR_FIELD_LONG, .offset = offsetof(TCL, sequences), .lo = 0, .hi = 1e15},
    {.key = "steps", .type = EPAR_FIELD_LONG, .offset = offsetof(TCL, steps), .lo = 0, .hi = 1e15},
    {.key = "tokens", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TCL, tokens)},
    /* the best constant answer on the same items: what "learned nothing" looks like (absent: NaN) */
    {.key = "chance", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TCL, chance), .flags = EPAR_FIELD_OPTIONAL},
    {.key = "chance_se", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TCL, chance_se), .flags = EPAR_FIELD_OPTIONAL},
    {.key = "distance_correct", .type = EPAR_FIELD_LLIST, .offset = offsetof(TCL, correct),
     .count_offset = offsetof(TCL, n_correct), .max = 65537, .flags = EPAR_FIELD_OPTIONAL | EPAR_FIELD_ALLOC},
    {.key = "distance_scored", .type = EPAR_FIELD_LLIST, .offset = offsetof(TCL, answers),
     .count_offset = offsetof(TCL, n_answers), .max = 65537, .flags = EPAR_FIELD_OPTIONAL | EPAR_FIELD_ALLOC},
    {.key = "extrapolation", .type = EPAR_FIELD_OLIST, .offset = offsetof(TCL, extrap),
     .count_offset = offsetof(TCL, n_extrap), .max = EPAR_BENCH_MAX_EXTRAP, .stride = sizeof(struct cell_extrap),
     .sub = extrap_rows, .flags = EPAR_FIELD_OPTIONAL},
    {.key = "extrapolation_study", .type = EPAR_FIELD_JSON, .offset = offsetof(TCL, study),
     .flags = EPAR_FIELD_OPTIONAL},
    /* wall clock: not used by the tables except cost (which has its own cell) */
    {.key = "seconds", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TCL, seconds)},
    {.key = "train_step_seconds", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TCL, step_seconds)},
    /* floater-learned: the training steps' thread CPU seconds and those of its recursion (absent for the others) */
    {.key = "train_step_cpu_seconds", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TCL, step_cpu),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "train_position_cpu_seconds", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(TCL, pos_cpu),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "checkpoint", .type = EPAR_FIELD_STRING, .offset = offsetof(TCL, checkpoint), .flags = EPAR_FIELD_OPTIONAL},
    {.key = "attention_measured", .type = EPAR_FIELD_BOOL, .offset = offsetof(TCL, have_attn),
     .help = "the attention summaries below were measured"},
    {.key = "attention", .type = EPAR_FIELD_OBJ, .offset = offsetof(TCL, attn), .sub = attn_rows,
     .flags = EPAR_FIELD_OPTIONAL},
    {0}};
#undef TCL

#define CM struct cost_mech
static const struct epar_field cost_mech_rows[] = {
    {.key = "mechanism", .type = EPAR_FIELD_STRING, .offset = offsetof(CM, mechanism), .flags = EPAR_FIELD_REQUIRED},
    {.key = "params", .type = EPAR_FIELD_LONG, .offset = offsetof(CM, params), .lo = 0, .hi = 1e15},
    {.key = "bytes", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(CM, bytes)},
    {.key = "step_seconds", .type = EPAR_FIELD_DLIST, .offset = offsetof(CM, step),
     .count_offset = offsetof(CM, n_step), .max = EPAR_BENCH_MAX_COST_STEPS,
     .flags = EPAR_FIELD_ALLOC | (EPAR_FIELD_REQUIRED | EPAR_FIELD_EMPTY_OK)},   /* empty: never its turn */
    {.key = "attention_seconds", .type = EPAR_FIELD_DLIST, .offset = offsetof(CM, attention),
     .count_offset = offsetof(CM, n_attention), .max = EPAR_BENCH_MAX_COST_STEPS,
     .flags = EPAR_FIELD_ALLOC | (EPAR_FIELD_EMPTY_OK)},
    {.key = "warm_steps", .type = EPAR_FIELD_INT, .offset = offsetof(CM, warm_steps), .lo = 0, .hi = 1e9},
    {0}};
#undef CM
#define CP struct cost_pair
static const struct epar_field cost_pair_rows[] = {
    {.key = "mechanism", .type = EPAR_FIELD_STRING, .offset = offsetof(CP, mechanism), .flags = EPAR_FIELD_REQUIRED},
    {.key = "against", .type = EPAR_FIELD_STRING, .offset = offsetof(CP, against), .flags = EPAR_FIELD_REQUIRED},
    {.key = "decides", .type = EPAR_FIELD_BOOL, .offset = offsetof(CP, decides)},
    {.key = "seconds", .type = EPAR_FIELD_DLIST, .offset = offsetof(CP, a), .count_offset = offsetof(CP, n_a),
     .max = EPAR_BENCH_MAX_COST_STEPS, .flags = EPAR_FIELD_ALLOC | (EPAR_FIELD_REQUIRED | EPAR_FIELD_EMPTY_OK)},
    {.key = "against_seconds", .type = EPAR_FIELD_DLIST, .offset = offsetof(CP, b), .count_offset = offsetof(CP, n_b),
     .max = EPAR_BENCH_MAX_COST_STEPS, .flags = EPAR_FIELD_ALLOC | (EPAR_FIELD_REQUIRED | EPAR_FIELD_EMPTY_OK)},
    {.key = "generation", .type = EPAR_FIELD_DLIST, .offset = offsetof(CP, gen), .count_offset = offsetof(CP, n_gen),
     .max = EPAR_BENCH_MAX_COST_STEPS, .flags = EPAR_FIELD_ALLOC | (EPAR_FIELD_REQUIRED | EPAR_FIELD_EMPTY_OK)},
    {0}};
#undef CP
#define CC struct cost_cell
static const struct epar_field cost_cell_rows[] = {
    {.key = "config", .type = EPAR_FIELD_JSON, .offset = offsetof(CC, config)},
    {.key = "task", .type = EPAR_FIELD_STRING, .offset = offsetof(CC, task), .flags = EPAR_FIELD_REQUIRED},
    {.key = "length", .type = EPAR_FIELD_INT, .offset = offsetof(CC, length), .lo = 1, .hi = 1 << 30,
     .flags = EPAR_FIELD_REQUIRED},
    {.key = "batch", .type = EPAR_FIELD_INT, .offset = offsetof(CC, batch), .lo = 1, .hi = 1 << 30,
     .flags = EPAR_FIELD_REQUIRED},
    {.key = "threads", .type = EPAR_FIELD_INT, .offset = offsetof(CC, threads)},
    {.key = "clock", .type = EPAR_FIELD_STRING, .offset = offsetof(CC, clock)},
    {.key = "blas_core", .type = EPAR_FIELD_STRING, .offset = offsetof(CC, blas_core)},
    {.key = "design", .type = EPAR_FIELD_STRING, .offset = offsetof(CC, design)},
    {.key = "blocks", .type = EPAR_FIELD_INT, .offset = offsetof(CC, blocks)},
    {.key = "generations", .type = EPAR_FIELD_INT, .offset = offsetof(CC, generations)},
    {.key = "generation_blocks", .type = EPAR_FIELD_INT, .offset = offsetof(CC, generation_blocks)},
    {.key = "stopped", .type = EPAR_FIELD_STRING, .offset = offsetof(CC, stopped)},
    {.key = "cpu_seconds", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(CC, cpu_seconds)},
    {.key = "setup_cpu_seconds", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(CC, setup_seconds)},
    {.key = "limit_seconds", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(CC, limit_seconds)},
    {.key = "widest_halfwidth", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(CC, widest),
     .flags = EPAR_FIELD_OPTIONAL},   /* absent: an interval not yet defined (one generation) */
    {.key = "target_halfwidth", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(CC, target)},
    {.key = "mechanisms", .type = EPAR_FIELD_OLIST, .offset = offsetof(CC, mech), .count_offset = offsetof(CC, n_mech),
     .max = EPAR_MECH_COUNT, .stride = sizeof(struct cost_mech), .sub = cost_mech_rows, .flags = EPAR_FIELD_REQUIRED},
    {.key = "pairs", .type = EPAR_FIELD_OLIST, .offset = offsetof(CC, pair), .count_offset = offsetof(CC, n_pair),
     .max = EPAR_MECH_COUNT, .stride = sizeof(struct cost_pair), .sub = cost_pair_rows,
     .flags = EPAR_FIELD_REQUIRED | EPAR_FIELD_EMPTY_OK},
    {0}};
#undef CC

/* what a training cell reads of its trained heads (in its configuration: a cell of an earlier epar, without the
 * per-head record of trained_heads.csv, is redone rather than read as missing) */
#define HEADS_DESIGN "epar inspect's summaries over 16 items, per head: fixed-pattern correlations and head similarity"

/* what the cost cell does (in its configuration: a cell of an earlier design is redone) */
#define COST_DESIGN "adjacent step pairs in generations of fresh models at random places, a model in turn warmed by an untimed step; mean of the generations' median log ratios, t interval"

/* the configuration a cell folder was run with (whichever its kind) */
struct cell_head {
    json_t *config;
};
static const struct epar_field cell_head_rows[] = {
    {.key = "config", .type = EPAR_FIELD_JSON, .offset = offsetof(struct cell_head, config)},
    {0}};

/* a cell's configuration: a training cell's is its run's (train's rows) with the benchmark's evaluation; the cost
 * cell's every mechanism's (it times them all) */
struct cell_config {
    const char *task;
    struct epar_task_cfg data;   /* its conditions (noise, shuffle): lib/tasks' rows, written after benchmark_task */
    int eval_sequences, n_extrap, extrap_tokens;
    int extrap[EPAR_BENCH_MAX_EXTRAP];
    json_t *mechanisms;
    json_t *study;   /* the extrapolation study's settings of the cell (NULL: none) */
    const char *heads;   /* HEADS_DESIGN */
    const char *design;
    int repeats, max_repeats, generation;
    double halfwidth, seconds;
};
#define CF struct cell_config
static const struct epar_field cell_task_rows[] = {
    {.key = "benchmark_task", .type = EPAR_FIELD_STRING, .offset = offsetof(CF, task)},
    {0}};
static const struct epar_field cell_config_rows[] = {
    {.key = "eval_sequences", .type = EPAR_FIELD_INT, .offset = offsetof(CF, eval_sequences)},
    /* lm cells in order only */
    {.key = "extrapolation", .type = EPAR_FIELD_ILIST, .offset = offsetof(CF, extrap),
     .count_offset = offsetof(CF, n_extrap), .max = EPAR_BENCH_MAX_EXTRAP, .flags = EPAR_FIELD_OPTIONAL},
    {.key = "extrapolation_tokens", .type = EPAR_FIELD_INT, .offset = offsetof(CF, extrap_tokens),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "extrapolation_study", .type = EPAR_FIELD_JSON, .offset = offsetof(CF, study),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "attention_heads", .type = EPAR_FIELD_STRING, .offset = offsetof(CF, heads)},
    {0}};
static const struct epar_field cost_config_rows[] = {
    {.key = "mechanisms", .type = EPAR_FIELD_JSON, .offset = offsetof(CF, mechanisms)},
    {.key = "design", .type = EPAR_FIELD_STRING, .offset = offsetof(CF, design)},
    {.key = "repeats", .type = EPAR_FIELD_INT, .offset = offsetof(CF, repeats)},
    {.key = "max_repeats", .type = EPAR_FIELD_INT, .offset = offsetof(CF, max_repeats)},
    {.key = "generation", .type = EPAR_FIELD_INT, .offset = offsetof(CF, generation)},
    {.key = "halfwidth", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(CF, halfwidth)},
    {.key = "seconds", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(CF, seconds)},
    {0}};
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
        x.data = t.task;
        x.eval_sequences = t.task.id == EPAR_TASK_LM ? c->b.lm_eval_sequences : c->b.eval_sequences;
        x.heads = HEADS_DESIGN;
        if (t.task.id == EPAR_TASK_LM && !t.task.shuffle) {
            x.n_extrap = c->b.n_extrap;
            memcpy(x.extrap, c->b.extrap, sizeof x.extrap);
            x.extrap_tokens = c->b.extrap_tokens;
        }
        struct epar_field cond[EPAR_TASK_MAX_OPTIONS + 1];
        epar_task_option_rows(EPAR_TASK_OPT_CONDITION, EPAR_TASK_ALL, offsetof(struct cell_config, data), cond,
                              EPAR_TASK_MAX_OPTIONS + 1);
        json_t *j = epar_exp_train_cfg_json(&t);
        x.study = epar_bx_cell_config(c, cell);
        if (j && (!epar_fields_json(cell_task_rows, &x, j) || !epar_fields_json(cond, &x, j) ||
                  !epar_fields_json(cell_config_rows, &x, j))) {
            json_decref(j);
            j = NULL;
        }
        json_decref(x.study);
        return j;
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
    json_array_foreach(json_object_get(json_object_get(h.config, "extrapolation_study"), "series"), i, e)
        epar_exp_train_params_upgrade(e, json_string_value(json_object_get(e, "as")), h.config);
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
    struct train_cell x = {.config = NULL, .pool_value = NAN, .pool_loss = NAN, .step_cpu = NAN, .pos_cpu = NAN};
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
    if (t.task.train_sequences > 0) {   /* low resource: the fit to the pool it trained on (the gap: overfitting) */
        struct epar_train_eval pe;
        if ((st = epar_exp_train_evaluate_pool(&r, &pe))) goto done;
        x.pool_value = pe.metric;
        x.pool_loss = pe.loss;
    }
    struct epar_bx_own own;
    if ((st = epar_bx_cell_run(c, cell, &r, &x.study, &own))) goto done;   /* the extrapolation study's evaluations */
    if (t.task.id == EPAR_TASK_LM && !t.task.shuffle)
        for (int e = 0; e < c->b.n_extrap && !st; e++) {
            int L = c->b.extrap[e], defined;
            struct epar_train_eval ev;
            long n = c->b.extrap_tokens / L > 0 ? c->b.extrap_tokens / L : 1;
            if (e < own.n)   /* the study read the weights as trained at L: the same evaluation */
                x.extrap[x.n_extrap++] = (struct cell_extrap){L, own.defined[e], own.bpc[e], own.sequences[e]};
            else {
                st = epar_exp_train_evaluate_at(&r, L, n, &ev, &defined);
                x.extrap[x.n_extrap++] =
                    (struct cell_extrap){L, defined, defined ? ev.metric : 0.0, defined ? ev.sequences : 0};
            }
        }
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
    if (t.mechanism == EPAR_MECH_FLOATER_LEARNED) x.step_cpu = r.step_cpu_seconds, x.pos_cpu = r.step_pos_cpu_seconds;
    st = x.config ? epar_fields_save(epar_out_path(o, "cell.json"), train_cell_rows, &x, NULL, EPAR_SAVE_EXACT)
                  : epar_err_set(EPAR_ENOMEM, "out of memory writing a cell");
done:
    json_decref(x.config);
    json_decref(x.study);
    free(x.correct);
    free(x.answers);
    free(x.attn.head);
    epar_exp_train_free(&r);
    return st;
}

/* one training step of r, its thread CPU seconds and those of its attention into m (NULL: an untimed step) */
static int cost_step(struct epar_train_run *r, struct cost_mech *m)
{
    double c0 = r->step_cpu_seconds, a0 = r->model.attn_cpu_seconds;
    r->until = r->step + 1;
    int st = epar_exp_train_loop(r);
    if (st || !m) return st;
    m->step[m->n_step++] = r->step_cpu_seconds - c0;
    m->attention[m->n_attention++] = r->model.attn_cpu_seconds - a0;
    return EPAR_OK;
}

/* the cost cell: generations of freshly set up models (each model's first step left untimed; the models of the
 * comparisons in turn are set up once), cost_generation blocks each; a block's single steps (epar_bench_cost_block) put each comparison's two steps next to each other, so both see
 * the same state of the machine (other processes' load drifts over seconds; neighbouring steps' times correlate),
 * each step timed in the thread's CPU time (the cell runs on one thread: time other processes hold the core does
 * not count) with the share spent in the position mechanism and attention. Fresh models each generation, at random
 * places, set up in a rotating order: where a model's memory lands shifts its speed by up to about 1 % for as long
 * as it lives (two models of the same mechanism differed by that much), so one set-up would give every pair of a
 * run the same bias; over generations it varies and the interval (pair_overhead) includes it. Freeing and setting
 * up one model at a time gave each model its own memory back, so the bias stayed for the whole process (runs of
 * the cell in separate processes spread twice as far as their intervals said, bench/README.md 2026-11-26): every
 * model of a generation is freed first, and a touched spacer of random size (up to COST_SPACER_MAX) goes before
 * each set-up. Generations run until the interval of
 * every deciding comparison's overhead is at most cost_halfwidth wide (at least cost_repeats blocks), or
 * cost_max_repeats blocks, or cost_seconds CPU seconds (set-ups included). The stop looks at the intervals' width
 * only, never at where they lie, so it does not push them towards a threshold. */
static int run_cost_cell(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, int k, struct epar_out *o,
                         volatile sig_atomic_t *stop)
{
    int M = c->n_mech, Bmax = c->b.cost_max_repeats, GB = c->b.cost_generation, st = EPAR_OK;
    struct cost_design d;
    epar_bench_cost_design(c, &d);
    struct cost_cell x = {.task = epar_task_name(c->b.cost_task), .length = c->b.cost_length, .batch = c->b.batch,
                          .threads = 1, .clock = "thread CPU time", .blas_core = epar_blas_core(), .design = COST_DESIGN,
                          .stopped = "blocks", .widest = NAN, .target = c->b.cost_halfwidth, .generation_blocks = GB,
                          .limit_seconds = c->b.cost_seconds, .n_mech = M, .n_pair = d.n_pair};
    size_t cap = EPAR_BENCH_MAX_COST_STEPS;
    struct epar_train_run *runs = calloc((size_t)M, sizeof *runs);
    void *spacer[EPAR_MECH_COUNT] = {0};
    gsl_rng *place = epar_rng_alloc(c->b.seeds[0], 7000UL, EPAR_RNG_EXTRA);   /* the spacers' sizes */
    double *store = calloc((size_t)M * 2 * cap + (size_t)d.n_pair * 3 * Bmax + Bmax, sizeof *store), *scratch = store;
    if (!runs || !store || !place) {
        free(runs);
        free(store);
        if (place) gsl_rng_free(place);
        return epar_err_set(EPAR_ENOMEM, "out of memory timing the mechanisms");
    }
    for (int m = 0; m < M; m++, scratch += 2 * cap)
        x.mech[m] = (struct cost_mech){epar_bench_mech_name(c, m), 0, 0, scratch, scratch + cap, 0, 0, 0};
    for (int p = 0; p < d.n_pair; p++, scratch += 3 * (size_t)Bmax)
        x.pair[p] = (struct cost_pair){epar_bench_mech_name(c, d.unit[p].a), epar_bench_mech_name(c, d.unit[p].b),
                                       d.decides[p], scratch, scratch + Bmax, scratch + 2 * (size_t)Bmax, 0, 0, 0};
    int seq[COST_MAX_SEQ], pa[2 * EPAR_MECH_COUNT], pb[2 * EPAR_MECH_COUNT], prev = -1, full = 0;
    double t[COST_MAX_SEQ];
    while (!st && x.blocks < Bmax && !full) {
        /* a generation: every model set up afresh (in an order rotating with the generation), its first step (the
         * activations' pages touched for the first time) untimed */
        int g = x.generations;
        double c0 = epar_nn_thread_cpu();
        /* every model of the generation freed before any is set up (freed one at a time, each got its own memory
         * back and kept its placement for the whole process), and a spacer of random size (touched) before each
         * set-up, so that where a model's buffers land, in addresses and in physical pages, varies with the
         * generation */
        for (int m = 0; m < M; m++) {
            if (g && !d.fresh[m]) continue;
            epar_exp_train_free(&runs[m]);
            memset(&runs[m], 0, sizeof runs[m]);
            free(spacer[m]);
            spacer[m] = NULL;
        }
        for (int i = 0; i < M && !st; i++) {
            int m = (i + g) % M;
            if (g && !d.fresh[m]) continue;
            size_t bytes = 64 * (1 + gsl_rng_uniform_int(place, COST_SPACER_MAX / 64));
            if (!(spacer[m] = malloc(bytes))) {
                st = epar_err_set(EPAR_ENOMEM, "out of memory timing the mechanisms");
                break;
            }
            memset(spacer[m], 1, bytes);
            struct epar_train_cfg tc;
            struct epar_bench_cell mc = plan->cells[k];
            mc.mech = m;
            mc.mlp = plan->cost_mlp[m];
            epar_exp_benchmark_cell_cfg(c, &mc, &tc);
            struct epar_train_run *r = &runs[m];
            if ((st = epar_exp_train_setup(r, &tc))) break;
            r->stop = stop;
            st = cost_step(r, NULL);
            r->model.time_attention = 1;
            x.mech[m].params = (long)r->model.n_params;
            x.mech[m].bytes = epar_exp_train_bytes(&tc, r->task.V);
        }
        x.setup_seconds += epar_nn_thread_cpu() - c0;
        for (int b = 0; b < GB && !st && x.blocks < Bmax; b++) {
            for (int m = 0; m < M; m++) full |= x.mech[m].n_step > EPAR_BENCH_MAX_COST_STEPS - COST_MAX_SEQ;
            if (full) break;
            /* the models of the unit in turn (set up once) take one untimed step first: a model left alone for
             * seconds here ran its next step up to 3.5x slower in the thread's CPU time (every op of the forward,
             * no page faults; the step after it at full speed), which no user's training sees; the block does not
             * then start with that model (no two steps in a row) */
            int u = epar_bench_cost_turn(&d, x.blocks);
            for (int e = 0; u >= 0 && e < 2 && !st; e++) {
                int w = e ? d.unit[u].b : d.unit[u].a;
                if (w < 0 || d.fresh[w]) continue;
                double w0 = epar_nn_thread_cpu();
                st = cost_step(&runs[w], NULL);
                x.setup_seconds += epar_nn_thread_cpu() - w0;
                x.mech[w].warm_steps++;
                prev = w;
            }
            if (st) break;
            int n = epar_bench_cost_block(&d, x.blocks, prev, seq, pa, pb);
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
        x.widest = epar_bench_cost_widest(&x, c->level, scratch);
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
    for (int m = 0; m < M; m++) {
        epar_exp_train_free(&runs[m]);   /* (safe on one never set up: zeroed) */
        free(spacer[m]);
    }
    gsl_rng_free(place);
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
/* the grid read back                                                                                 */

int epar_bench_grid_read(struct grid *g, const struct epar_bench_cfg *c, const struct epar_bench_plan *plan,
                         const char *root)
{
    *g = (struct grid){.NT = c->n_tasks, .M = c->n_mech, .S = c->b.n_seeds};
    size_t ng = (size_t)g->NT * g->M * g->S + 1;
    g->value = calloc(ng, sizeof *g->value);
    int have = g->value != NULL;
    for (int k = 0; k < EPAR_BENCH_NPRIMARY; k++) have &= (g->cand[k] = calloc(ng, sizeof *g->cand[k])) != NULL;
    g->chance = calloc(ng, sizeof *g->chance);
    g->chance_se = calloc(ng, sizeof *g->chance_se);
    g->cell = calloc((size_t)plan->n, sizeof *g->cell);
    g->doc = calloc((size_t)plan->n, sizeof *g->doc);
    int st = have && g->chance && g->chance_se && g->cell && g->doc
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
            st = epar_fields_load(path, "cell file", cost_cell_rows, &g->cost, &g->doc[k]);
            continue;
        }
        /* a cell written before epar recorded them */
        g->cell[k].chance = g->cell[k].chance_se = g->cell[k].curve_metric = g->cell[k].curve_loss = NAN;
        g->cell[k].online_loss = g->cell[k].pool_value = g->cell[k].pool_loss = NAN;
        g->cell[k].step_cpu = g->cell[k].pos_cpu = NAN;
        struct epar_inspect_summary *as = &g->cell[k].attn;
        as->distance_spearman = as->distance_spearman_sd = as->distance_ratio = as->first_share = NAN;
        as->relevant_share = as->relevant_uniform = as->profile_spearman = NAN;
        if ((st = epar_fields_load(path, "cell file", train_cell_rows, &g->cell[k], &g->doc[k]))) break;
        if (cell->mech >= c->n_mech || cell->task >= c->n_tasks) continue;   /* the study's own cell (bench_extrap's) */
        size_t at = gi(g, cell->task, cell->mech, cell->seed);
        const struct train_cell *x = &g->cell[k];
        g->cand[EPAR_BENCH_FINAL][at] = x->value;
        g->cand[EPAR_BENCH_FINAL_LOSS][at] = x->eval_loss;
        g->cand[EPAR_BENCH_CURVE][at] = x->curve_metric;
        g->cand[EPAR_BENCH_CURVE_LOSS][at] = x->curve_loss;
        g->cand[EPAR_BENCH_ONLINE_LOSS][at] = x->online_loss;
        g->value[at] = g->cand[c->tasks[cell->task].primary][at];
        g->chance[at] = g->cell[k].chance;
        g->chance_se[at] = g->cell[k].chance_se;
    }
    return st;
}

void epar_bench_grid_free(struct grid *g, const struct epar_bench_plan *plan)
{
    for (int k = 0; g->cell && g->doc && k < plan->n; k++) {
        epar_fields_free(train_cell_rows, &g->cell[k]);
        json_decref(g->doc[k]);
    }
    epar_fields_free(cost_cell_rows, &g->cost);
    free(g->cell);
    free(g->doc);
    free(g->value);
    for (int k = 0; k < EPAR_BENCH_NPRIMARY; k++) free(g->cand[k]);
    free(g->chance);
    free(g->chance_se);
}
