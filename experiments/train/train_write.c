/* One training run's files: the learning curve and evaluation tables, the learned position effect, the curve's
 * figure and run.json, written from a finished (or interrupted) run (train.c computes it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "lib/plot.h"
#include "experiments/common.h"
#include "lib/version.h"
#include <omp.h>
#include "lib/blas.h"
#include "experiments/train/train.h"
#include "experiments/train/train_int.h"


struct epar_table *epar_exp_train_curve_table(const struct epar_train_run *r)
{
    struct epar_table *t = epar_csv_new(EPAR_TRAIN_CURVE_HEADER);
    for (int i = 0; t && i < r->rows; i++) {
        const double *v = r->curve + (size_t)i * EPAR_TRAIN_CURVE_COLS;
        if (epar_csv_append(t, "iddddddd", (int)v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7])) {
            epar_csv_free(t);
            return NULL;
        }
    }
    return t;
}

static struct epar_table *eval_table(const struct epar_train_run *r)
{
    const struct epar_train_cfg *c = &r->cfg;
    struct epar_table *t = epar_csv_new("task,mechanism,seed,steps,tokens,length,params,metric,value,eval_loss,"
                                        "eval_bits_per_token,scored_tokens,sequences,train_loss,chance,chance_se");
    double train_loss = r->rows ? r->curve[(size_t)(r->rows - 1) * EPAR_TRAIN_CURVE_COLS + 2] : NAN;
    if (t && epar_csv_append(t, "ssdididsdddiiddd", epar_task_name(c->task.id), epar_nnpos_name(c->mechanism), (double)c->seed,
                             (int)r->step, r->tokens, c->task.length, (double)r->model.n_params, r->task.info->metric,
                             r->final.metric, r->final.loss, r->final.loss / log(2.0), (int)r->final.scored,
                             (int)r->final.sequences, train_loss, r->final.chance, r->final.chance_se)) {
        epar_csv_free(t);
        return NULL;
    }
    return t;
}

/* EPAR: alpha, beta, gamma per layer and head (learned or fixed) and m(d) at a few distances */
static struct epar_table *posfx_table(const struct epar_train_run *r)
{
    const struct epar_nnpos *p = &r->model.pos;
    int T = r->cfg.task.length;
    double L = p->s.posfx_length > 0 ? p->s.posfx_length : T;
    struct epar_table *t = epar_csv_new("layer,head,alpha,beta,gamma,m_1,m_half,m_last,learned");
    for (int l = 0; t && l < p->NL; l++)
        for (int h = 0; h < p->NH; h++) {
            struct epar_posfx fx = epar_nnpos_effect(p, l, h);
            if (epar_csv_append(t, "iiddddddi", l, h, fx.alpha, fx.beta, fx.form == EPAR_FORM_ENHANCED ? fx.gamma : NAN,
                                epar_posfx_value(&fx, 1, L), epar_posfx_value(&fx, T / 2, L),
                                epar_posfx_value(&fx, T - 1, L), p->s.learn_posfx)) {
                epar_csv_free(t);
                return NULL;
            }
        }
    return t;
}

static int write_figure(const struct epar_train_run *r, struct epar_out *o)
{
    const char *metric = r->task.info->metric, *task = epar_task_name(r->cfg.task.id),
               *mech = epar_nnpos_name(r->cfg.mechanism);
    int bpc = !strcmp(metric, "bpc");
    /* the best constant answer on the final evaluation's items (eval.csv chance), as a dashed line: a curve that
     * stays on it has learned nothing (no line without a final evaluation, e.g. an interrupted run) */
    char chance[256] = "";
    if (r->have_final && isfinite(r->final.chance))
        snprintf(chance, sizeof chance, ", \\\n     %.10g with lines dt 2 lc rgb '#555555' title 'chance (constant answer): %.3g'",
                 r->final.chance, r->final.chance);
    char title[160];
    snprintf(title, sizeof title, "Learning curve of %s on %s", mech, task);
    return epar_plot_scriptf(o, "learning_curve", title,
                             "set terminal @epar_term size 1100,500\n"
                             "set multiplot layout 1,2 margins 0.08,0.98,0.13,0.80 spacing 0.1 title '%s, %s (%ld parameters)'\n"
                             "set xlabel 'training tokens'\nset format x '%%.1s%%c'\n"   /* 50.0k, 1.5M: no crowded digits */
                             "set ylabel 'cross-entropy (nats per scored token)'\n"
                             "set key at graph 0.5, graph 1.03 center bottom horizontal nobox font ',9'\nset autoscale xfix\n"   /* above the axis: never on the data */
                             EPAR_PLOT_IF("'learning_curve.csv', '2:4'")
                             "plot 'learning_curve.csv' skip 1 using 2:3 with linespoints title 'train (mean since last row)', \\\n"
                             "     '' skip 1 using 2:4 with linespoints title 'eval'" EPAR_PLOT_END
                             "set ylabel '%s'\n%s\n"   /* accuracy: its whole range [0, 1], never 1.2 */
                             EPAR_PLOT_IF("'learning_curve.csv', '2:5'")
                             "plot 'learning_curve.csv' skip 1 using 2:5 with linespoints lt 3 title 'eval %s'%s" EPAR_PLOT_END
                             "unset multiplot\n",
                             task, mech, (long)r->model.n_params, bpc ? "bits per character" : "answer accuracy",
                             bpc ? "set yrange [*:*]" : "set yrange [0:1]", metric, chance);
}

unsigned long long epar_exp_train_params_hash(const struct epar_train_run *r)
{
    return (unsigned long long)epar_ckpt_fnv1a(EPAR_CKPT_FNV_INIT, r->model.params_mem, r->model.n_params * sizeof(float));
}

/* run.json after its head (epar_exp_write_run_json): the config, the model's size, the data, the machine, progress */
struct run_record {
    const char *status;
    json_t *config;
    long parameters, tensors[EPAR_NN_NTENSORS];
    json_t *data;
    const char *blas_core, *blas_config;
    int threads;
    const char *score_scale, *posfx_L, *checkpoint;
    long steps_done;
    const char *params_fnv1a;
    double tokens, seconds, train_step_seconds, tokens_per_second;   /* the rate: NaN (left out) before any step */
    long resumed_from_step;                                          /* -1 (null): not resumed */
    const char *eval_metric;                                         /* NULL, NaN (left out): no final evaluation */
    double eval_value, eval_loss;
};

static int write_run_json(const struct epar_train_run *r, struct epar_out *o, const char *status)
{
#define RR struct run_record
    const struct epar_train_cfg *c = &r->cfg;
    struct epar_field tensor_rows[EPAR_NN_NTENSORS + 1];
    struct run_record x = {
        .status = status, .parameters = (long)r->model.n_params, .data = epar_task_json(&r->task),
        .blas_core = epar_blas_core(), .blas_config = epar_blas_config(), .threads = omp_get_max_threads(),
        .score_scale = "1/sqrt(head dim)",
        .posfx_L = c->pos.posfx_length > 0 ? "fixed (posfx_length)" : "the length T of the sequence processed",
        .checkpoint = "checkpoint.bin", .steps_done = r->step, .tokens = r->tokens, .seconds = r->seconds,
        .train_step_seconds = r->step_seconds,
        .tokens_per_second = r->step_seconds > 0 ? r->tokens / r->step_seconds : NAN,   /* both add up over sessions */
        .resumed_from_step = r->resumed_from, .eval_metric = r->have_final ? r->task.info->metric : NULL,
        .eval_value = r->have_final ? r->final.metric : NAN, .eval_loss = r->have_final ? r->final.loss : NAN};
    char fnv[32];
    snprintf(fnv, sizeof fnv, "%016llx", epar_exp_train_params_hash(r));
    x.params_fnv1a = fnv;
    x.config = epar_exp_train_cfg_record_json(c);
    for (int k = 0; k < EPAR_NN_NTENSORS; k++) {   /* {"<tensor>": size} over x.tensors */
        x.tensors[k] = (long)r->model.sizes[k];
        tensor_rows[k] = (struct epar_field){.key = epar_nn_tensor_name(k), .type = EPAR_FIELD_LONG,
                                             .offset = (size_t)k * sizeof(long)};
    }
    tensor_rows[EPAR_NN_NTENSORS] = (struct epar_field){0};
    const struct epar_field rows[] = {
        {.key = "status", .type = EPAR_FIELD_STRING, .offset = offsetof(RR, status)},
        {.key = "config", .type = EPAR_FIELD_JSON, .offset = offsetof(RR, config)},
        {.key = "parameters", .type = EPAR_FIELD_LONG, .offset = offsetof(RR, parameters)},
        {.key = "parameter_tensors", .type = EPAR_FIELD_OBJ, .offset = offsetof(RR, tensors), .sub = tensor_rows},
        {.key = "data", .type = EPAR_FIELD_JSON, .offset = offsetof(RR, data)},
        {.key = "blas_core", .type = EPAR_FIELD_STRING, .offset = offsetof(RR, blas_core)},
        {.key = "blas_config", .type = EPAR_FIELD_STRING, .offset = offsetof(RR, blas_config)},
        {.key = "threads", .type = EPAR_FIELD_INT, .offset = offsetof(RR, threads)},
        {.key = "score_scale", .type = EPAR_FIELD_STRING, .offset = offsetof(RR, score_scale)},
        {.key = "posfx_L", .type = EPAR_FIELD_STRING, .offset = offsetof(RR, posfx_L)},
        {.key = "checkpoint", .type = EPAR_FIELD_STRING, .offset = offsetof(RR, checkpoint)},
        {.key = "steps_done", .type = EPAR_FIELD_LONG, .offset = offsetof(RR, steps_done)},
        {.key = "params_fnv1a", .type = EPAR_FIELD_STRING, .offset = offsetof(RR, params_fnv1a)},
        {.key = "tokens", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(RR, tokens)},
        {.key = "seconds", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(RR, seconds)},
        {.key = "train_step_seconds", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(RR, train_step_seconds)},
        {.key = "tokens_per_second", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(RR, tokens_per_second),
         .flags = EPAR_FIELD_OPTIONAL},
        {.key = "resumed_from_step", .type = EPAR_FIELD_LONG, .offset = offsetof(RR, resumed_from_step),
         .flags = EPAR_FIELD_NULLNEG},
        {.key = "eval_metric", .type = EPAR_FIELD_STRING, .offset = offsetof(RR, eval_metric),
         .flags = EPAR_FIELD_OPTIONAL},
        {.key = "eval_value", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(RR, eval_value),
         .flags = EPAR_FIELD_OPTIONAL},
        {.key = "eval_loss", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(RR, eval_loss),
         .flags = EPAR_FIELD_OPTIONAL},
        {0}};
#undef RR
    json_t *extra = x.data && x.config ? epar_fields_json(rows, &x, NULL) : NULL;
    json_decref(x.data);
    json_decref(x.config);
    if (!extra) return epar_err_set(EPAR_ENOMEM, "out of memory building run.json");
    return epar_exp_write_run_json(o, "train", c->protocol, NULL, extra);
}

int epar_exp_train_write(const struct epar_train_run *r, struct epar_out *o, const char *status)
{
    struct epar_table *curve = epar_exp_train_curve_table(r), *ev = r->have_final ? eval_table(r) : NULL;
    int is_epar = r->cfg.mechanism == EPAR_MECH_EPAR_BASIC || r->cfg.mechanism == EPAR_MECH_EPAR_ENHANCED;
    struct epar_table *pf = is_epar ? posfx_table(r) : NULL;
    int st = !curve || (r->have_final && !ev) || (is_epar && !pf) ? epar_err_set(EPAR_ENOMEM, "out of memory building the tables")
                                                                   : EPAR_OK;
    if (!st) st = epar_csv_write(curve, epar_out_path(o, "learning_curve.csv"));
    if (!st && ev) st = epar_csv_write(ev, epar_out_path(o, "eval.csv"));
    if (!st && pf) st = epar_csv_write(pf, epar_out_path(o, "posfx.csv"));
    if (!st) st = write_figure(r, o);
    if (!st) st = write_run_json(r, o, status);
    if (!st) st = epar_exp_train_checkpoint(r, epar_out_path(o, "checkpoint.bin"));
    epar_csv_free(curve);
    epar_csv_free(ev);
    epar_csv_free(pf);
    return st;
}
