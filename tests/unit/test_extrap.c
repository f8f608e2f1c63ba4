/* test_extrap: the same trained weights read by another mechanism (experiments/train's epar_exp_train_as, _derive,
 * _evaluate_as; issue 33): ntk-rope, interpolation and log-n take the trained length by default and record it, are the
 * trained model at that length and differ from rope / none past it; a learned table is undefined past it; the
 * per-position sums of an evaluation add up to its mean. On the needle task (no text file needed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "lib/protocol.h"
#include "experiments/benchmark/bench_extrap.h"
#include "experiments/benchmark/benchmark.h"
#include "experiments/train/train.h"
#include "check.h"

static struct epar_train_cfg cfg(enum epar_mech_id mech, int T)
{
    struct epar_train_cfg c;
    epar_exp_train_defaults(&c);
    epar_task_cfg_default(&c.task, EPAR_TASK_NEEDLE);
    c.task.length = T;
    c.task.pairs = 1;
    c.task.keys = 4;
    c.task.values = 4;
    c.task.eval_sequences = 24;
    c.mechanism = mech;
    c.layers = 1;
    c.dim = 16;
    c.heads = 2;
    c.mlp = 32;
    c.batch = 4;
    c.optim.steps = 20;
    c.optim.warmup = 2;
    c.optim.lr = 3e-3;
    c.eval_every = 100;
    c.eval_batches = 1;
    c.init_sd = 0.3;   /* larger weights: position differences show in the loss */
    return c;
}

/* the loss of r's weights read as `as` (log-n stacked when logn) at length T; NaN when undefined or failed */
static double loss_as(struct epar_train_run *r, enum epar_mech_id as, int logn, int T)
{
    struct epar_train_cfg c;
    if (!epar_exp_train_as(&r->cfg, as, logn, T, &c)) return NAN;
    struct epar_train_eval e;
    return epar_exp_train_evaluate_as(r, &c, 0, &e) ? NAN : e.loss;
}

static void test_same_weights(void)
{
    int L = 16, T = 64;
    struct epar_train_cfg c = cfg(EPAR_MECH_ROPE, L);
    struct epar_train_run r;
    check_int(epar_exp_train_setup(&r, &c), EPAR_OK, "a rope model at L = 16");
    check_int(epar_exp_train_loop(&r), EPAR_OK, "trained a few steps");
    double rope_L = loss_as(&r, EPAR_MECH_ROPE, 0, L), rope_T = loss_as(&r, EPAR_MECH_ROPE, 0, T);
    double ntk_L = loss_as(&r, EPAR_MECH_NTK_ROPE, 0, L), ntk_T = loss_as(&r, EPAR_MECH_NTK_ROPE, 0, T);
    double pi_L = loss_as(&r, EPAR_MECH_INTERPOLATION, 0, L), pi_T = loss_as(&r, EPAR_MECH_INTERPOLATION, 0, T);
    double rl_L = loss_as(&r, EPAR_MECH_ROPE, 1, L), rl_T = loss_as(&r, EPAR_MECH_ROPE, 1, T);
    struct epar_train_eval e;
    check_int(epar_exp_train_evaluate(&r, 0, &e), EPAR_OK, "the model's own evaluation");
    check_true(isfinite(rope_L) && rope_L == e.loss, "rope read as itself at L is the model's own evaluation");
    check_true(ntk_L == rope_L, "ntk-rope on rope's weights at the trained length: the same loss, bit for bit");
    check_true(pi_L == rope_L, "interpolation on rope's weights at the trained length: the same loss");
    check_true(rl_L == rope_L, "rope + log-n at the trained length: the same loss");
    check_true(isfinite(ntk_T) && ntk_T != rope_T, "ntk-rope at 4L differs from rope (train_length = 16, not 512)");
    check_true(isfinite(pi_T) && pi_T != rope_T && pi_T != ntk_T, "interpolation at 4L differs from rope and ntk-rope");
    check_true(isfinite(rl_T) && rl_T != rope_T, "rope + log-n at 4L differs from rope");
    /* what the variant records: the trained length, rope's base */
    struct epar_train_cfg v;
    epar_exp_train_as(&r.cfg, EPAR_MECH_NTK_ROPE, 0, T, &v);
    check_int((int)v.pos.mp[EPAR_MECH_NTK_ROPE][1], L, "the variant's train_length is the trained length");
    check_int(v.task.length, T, "evaluated at 4L");
    check_int(v.batch, 1, "a batch of as many tokens as a training batch (4 x 16 / 64)");
    json_t *j = epar_exp_train_cfg_json(&v);
    json_t *tl = json_object_get(json_object_get(json_object_get(j, "position"), "mechanism_params"), "train_length");
    check_true(tl && json_number_value(tl) == L, "its configuration records train_length 16");
    json_decref(j);
    /* per-position sums add up to the mean */
    double *pl = calloc((size_t)T, sizeof *pl), *pw = calloc((size_t)T, sizeof *pw);
    r.pos_loss = pl;
    r.pos_weight = pw;
    check_int(epar_exp_train_evaluate_as(&r, &v, 0, &e), EPAR_OK, "evaluated by position");
    r.pos_loss = r.pos_weight = NULL;
    double a = 0, b = 0;
    for (int t = 0; t < T; t++) {
        a += pl[t];
        b += pw[t];
    }
    check_rel(a / b, e.loss, 1e-12, "the per-position sums give the evaluation's mean loss");
    check_rel(b, (double)e.scored, 1e-12, "their weights are the scored tokens");
    free(pl);
    free(pw);
    epar_exp_train_free(&r);

    /* log-n on none's weights; learned-ape is undefined past L and cannot be another model's reading */
    c = cfg(EPAR_MECH_NONE, L);
    check_int(epar_exp_train_setup(&r, &c), EPAR_OK, "a none model at L");
    check_int(epar_exp_train_loop(&r), EPAR_OK, "trained");
    double none_L = loss_as(&r, EPAR_MECH_NONE, 0, L), none_T = loss_as(&r, EPAR_MECH_NONE, 0, T);
    double logn_L = loss_as(&r, EPAR_MECH_LOGN, 0, L), logn_T = loss_as(&r, EPAR_MECH_LOGN, 0, T);
    check_true(isfinite(none_L) && logn_L == none_L, "log-n on none's weights at the trained length: the same loss");
    check_true(isfinite(logn_T) && logn_T != none_T, "log-n at 4L differs from none (log_16, not log_512)");
    check_true(isnan(loss_as(&r, EPAR_MECH_LEARNED_APE, 0, L)), "none's weights cannot be read as learned-ape (another parameter count)");
    epar_exp_train_free(&r);
    c = cfg(EPAR_MECH_LEARNED_APE, L);
    check_int(epar_exp_train_setup(&r, &c), EPAR_OK, "a learned-ape model at L");
    struct epar_train_cfg u;
    check_int(epar_exp_train_as(&r.cfg, EPAR_MECH_LEARNED_APE, 0, T, &u), 0, "learned-ape at 4L is undefined (its table has L rows)");
    check_int(epar_exp_train_as(&r.cfg, EPAR_MECH_LEARNED_APE, 0, L, &u), 1, "and defined at L");
    int defined = 1;
    check_int(epar_exp_train_evaluate_at(&r, T, 0, &e, &defined), EPAR_OK, "evaluate_at past L");
    check_int(defined, 0, "evaluate_at says it is undefined");
    epar_exp_train_free(&r);
    /* multiplicative-pe's learned variant (0) has a row per position too; its fixed variant 1 (the sinusoid) none */
    c = cfg(EPAR_MECH_MULT_PE, L);
    check_int(epar_exp_train_as(&c, EPAR_MECH_MULT_PE, 0, T, &u), 0, "multiplicative-pe (learned) at 4L is undefined");
    c.pos.mp[EPAR_MECH_MULT_PE][0] = 1;
    check_int(epar_exp_train_as(&c, EPAR_MECH_MULT_PE, 0, T, &u), 1, "multiplicative-pe (sinusoid) at 4L is defined");
}

/* a trained run of ntk-rope records and keeps the length it was trained at */
static void test_trained_run(void)
{
    struct epar_train_cfg c = cfg(EPAR_MECH_NTK_ROPE, 24);
    c.optim.steps = 1;
    struct epar_train_run r;
    check_int(epar_exp_train_setup(&r, &c), EPAR_OK, "an ntk-rope run at 24");
    check_int((int)r.cfg.pos.mp[EPAR_MECH_NTK_ROPE][1], 24, "its train_length is the run's length");
    check_int((int)r.model.pos.mp[1], 24, "and the model's");
    json_t *j = epar_exp_train_cfg_json(&c);
    json_t *tl = json_object_get(json_object_get(json_object_get(j, "position"), "mechanism_params"), "train_length");
    check_true(tl && json_number_value(tl) == 24, "run.json and the checkpoint record 24");
    json_decref(j);
    epar_exp_train_free(&r);
    c.pos.mp[EPAR_MECH_NTK_ROPE][1] = 100;
    check_int(epar_exp_train_setup(&r, &c), EPAR_OK, "an ntk-rope run with train_length set to 100");
    check_int((int)r.cfg.pos.mp[EPAR_MECH_NTK_ROPE][1], 100, "a set train_length is kept");
    epar_exp_train_free(&r);
}

/* the benchmark's lm cell takes its `extrapolation` list from the study's own series (bench_extrap's lm_eval: the
 * weights read as trained, with the per-position sums and the attention entropies collected) instead of a second
 * pass of epar_exp_train_evaluate_at: the two must agree bit for bit, at L and past it */
static void test_own_series(void)
{
    int L = 16;
    struct epar_train_cfg c = cfg(EPAR_MECH_ROPE, L);
    struct epar_train_run r;
    check_int(epar_exp_train_setup(&r, &c), EPAR_OK, "a rope model at L = 16");
    check_int(epar_exp_train_loop(&r), EPAR_OK, "trained a few steps");
    for (int T = L; T <= 4 * L; T *= 2) {
        struct epar_train_eval a, b;
        struct epar_train_cfg f;
        int defined = 0;
        check_int(epar_exp_train_evaluate_at(&r, T, 8, &a, &defined), EPAR_OK, "evaluate_at");
        check_int(epar_exp_train_as(&r.cfg, EPAR_MECH_ROPE, 0, T, &f), 1, "rope read as itself at T");
        double *loss = calloc((size_t)T, sizeof *loss), *w = calloc((size_t)T, sizeof *w), ent[3] = {0, 0, 0};
        r.pos_loss = loss;
        r.pos_weight = w;
        r.att_entropy = ent;
        check_int(epar_exp_train_evaluate_as(&r, &f, 8, &b), EPAR_OK, "evaluate_as with the study's sums");
        r.pos_loss = r.pos_weight = r.att_entropy = NULL;
        char what[96];
        snprintf(what, sizeof what, "at T = %d: the study's own series is evaluate_at's evaluation, bit for bit", T);
        check_true(defined && a.metric == b.metric && a.loss == b.loss && a.sequences == b.sequences &&
                       a.scored == b.scored && ent[2] > 0,
                   what);
        free(loss);
        free(w);
    }
    epar_exp_train_free(&r);
}

/* the plan's cell weights count the extrapolation study's work in a cell (the schedule and the start-up estimate):
 * the protocol's quick grid; a cell outside the study gets none; an lm cell of rope its three series (as trained,
 * ntk-rope, interpolation, and their log-n stacks) at each length and its fine-tuning arm; learned-ape's series is
 * undefined past L, so its lm cell has less study work than rope's */
static void test_study_weight(void)
{
    struct epar_protocol p;
    struct epar_params prm;
    struct epar_bench_cfg c;
    struct epar_bench_plan plan = {0};
    if (epar_protocol_load("paper_protocol.json", &p) != EPAR_OK) {
        check_true(0, "paper_protocol.json loads: %s", epar_err_message());
        return;
    }
    check_int(epar_protocol_params(&p, "benchmark", NULL, &prm), EPAR_OK, "parameters");
    check_int(epar_exp_benchmark_config(&c, &p, &prm, "quick"), EPAR_OK, "the quick grid: %s", epar_err_message());
    check_int(epar_bench_plan(&c, &plan), EPAR_OK, "planned");
    int lm = -1, needle = -1, recall = -1;
    for (int i = 0; i < c.n_tasks; i++) {
        if (!strcmp(c.tasks[i].id, c.extrap.lm_task)) lm = i;
        if (!strcmp(c.tasks[i].id, c.extrap.retrieval_task)) needle = i;
        if (!strcmp(c.tasks[i].id, "recall")) recall = i;
    }
    check_true(c.extrap.on && lm >= 0 && needle >= 0 && recall >= 0, "the study is on, on lm and needle");
    double w_rope = NAN, w_ape = NAN, w_needle = NAN, w_recall = NAN, t_rope = NAN, t_needle = NAN, want = 0;
    for (int k = 0; k < plan.n - 1; k++) {
        const struct epar_bench_cell *cell = &plan.cells[k];
        enum epar_mech_id m = c.mech[cell->mech];
        if (cell->seed || c.mvar[cell->mech].name[0]) continue;
        struct epar_train_cfg t;
        epar_exp_benchmark_cell_cfg(&c, cell, &t);
        double w = epar_bx_cell_work(&c, cell, &t);
        check_true(w >= 0 && w < cell->weight, "the study's work is part of the cell's weight");
        if (cell->task == lm && m == EPAR_MECH_ROPE) w_rope = w, t_rope = cell->weight - w;
        if (cell->task == lm && m == EPAR_MECH_LEARNED_APE) w_ape = w;
        if (cell->task == needle && m == EPAR_MECH_ALIBI) {
            w_needle = w, t_needle = cell->weight - w;
            /* one series (its own): retrieval_sequences items at each multiple of the needle's length */
            for (int e = 0; e < c.b.n_extrap; e++) {
                double T = (double)c.b.extrap[e] / c.b.lm_length * t.task.length;
                want += c.extrap.retrieval_sequences * T * epar_bench_token_work(&t, T) / 3.0;
            }
        }
        if (cell->task == recall && m == EPAR_MECH_ALIBI) w_recall = w;
    }
    check_true(w_recall == 0, "recall is outside the study: no study work");
    check_rel(w_needle, want, 1e-12, "alibi's needle cell: its items at each evaluation length, forward only");
    check_true(w_rope > w_ape && w_ape > 0, "rope's lm cell (variants, a fine-tuning arm) > learned-ape's (undefined "
               "past L): %g, %g", w_rope, w_ape);
    check_true(w_rope > 0.05 * t_rope && w_needle > 0.05 * t_needle,
               "the study is a visible share of those cells (rope lm %.2f, alibi needle %.2f of their training)",
               w_rope / t_rope, w_needle / t_needle);
    epar_exp_benchmark_plan_free(&plan);
    epar_protocol_free(&p);
}

int main(void)
{
    test_study_weight();
    test_same_weights();
    test_own_series();
    test_trained_run();
    return check_summary("test_extrap");
}
