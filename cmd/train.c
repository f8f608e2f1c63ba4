/* epar train: one small Transformer trained on one task with one position mechanism
 * -> output/train/<task>/<mechanism>/ */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <omp.h>
#include "lib/blas.h"
#include "lib/ckpt.h"
#include "lib/err.h"
#include "experiments/common.h"
#include "experiments/train/train.h"
#include "cli.h"

/* command-line values; a field counts only when its option was seen */
struct train_opts {
    const char *task, *mechanism, *resume;
    int until;
    int length, layers, dim, heads, mlp, steps, batch, warmup, eval_every, eval_batches, learn_posfx, posfx_length;
    double lr, lr_min_ratio, weight_decay, clip;
    struct epar_task_cfg task_opt;   /* the task options (lib/tasks' table), at their places in the task's settings */
    const char *set;    /* the last --set (every one is read from argv) */
    int argc;
    char **argv;
};

/* ---- the task options: one option per row of lib/tasks' table that train reads ---- */

/* --eval-sequences of key eval_sequences */
static void task_option_name(const char *key, char *name, size_t n)
{
    snprintf(name, n, "%s", key);
    for (char *c = name; *c; c++) *c = *c == '_' ? '-' : *c;
}

/* the row's help and its default: a run takes the option from the command line, else from the protocol's
 * experiments.train.<task>, else the row's def */
static void task_option_help(const struct epar_task_option *o, char *help, size_t n)
{
    if (o->f.type == EPAR_FIELD_INT || o->f.type == EPAR_FIELD_DOUBLE)
        snprintf(help, n, "%s (default: the protocol's, else %g)", o->f.help, o->f.def);
    else snprintf(help, n, "%s", o->f.help);
}

/* Rows of the option table for the task options, writing into t->task_opt; names and help hold their texts.
 * Returns their count. */
#define TASK_OPT_NAME 32
#define TASK_OPT_HELP 320
static int task_options(struct opt *opts, struct train_opts *t, char (*names)[TASK_OPT_NAME],
                        char (*help)[TASK_OPT_HELP])
{
    int n = 0;
    for (const struct epar_task_option *o = epar_task_options; o->f.key; o++) {
        if (!(o->use & EPAR_TASK_OPT_TRAIN)) continue;
        task_option_name(o->f.key, names[n], TASK_OPT_NAME);
        task_option_help(o, help[n], TASK_OPT_HELP);
        enum opt_type type = o->f.type == EPAR_FIELD_INT      ? OPT_INT
                             : o->f.type == EPAR_FIELD_DOUBLE ? OPT_DOUBLE
                             : o->f.type == EPAR_FIELD_STRING ? OPT_STRING
                                                              : OPT_FLAG;
        opts[n] = (struct opt){names[n], 0, type, (char *)&t->task_opt + o->f.offset, o->arg, help[n], 0};
        n++;
    }
    return n;
}

/* the task options seen on the command line into the task's settings */
static void apply_task_options(struct epar_task_cfg *task, const struct opt *opts, const struct train_opts *t)
{
    for (const struct epar_task_option *o = epar_task_options; o->f.key; o++) {
        char name[TASK_OPT_NAME];
        task_option_name(o->f.key, name, sizeof name);
        if (!(o->use & EPAR_TASK_OPT_TRAIN) || !cli_seen(opts, name)) continue;
        size_t size = o->f.type == EPAR_FIELD_DOUBLE ? sizeof(double)
                      : o->f.type == EPAR_FIELD_STRING ? sizeof(const char *) : sizeof(int);
        memcpy((char *)task + o->f.offset, (const char *)&t->task_opt + o->f.offset, size);
    }
}

/* ---- progress on stderr: a bar on a terminal, a line per evaluation otherwise ---- */

struct progress {
    int tty;
    double last;
    long steps;
};

static void fmt_eta(double s, char *buf, size_t n)
{
    if (!isfinite(s) || s < 0) snprintf(buf, n, "?");
    else if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

static void show_progress(void *ctx, const struct epar_train_run *r, int evaluated)
{
    struct progress *p = ctx;
    double t = omp_get_wtime();
    if (p->tty && !evaluated && t - p->last < 0.25 && r->step < p->steps) return;
    if (!p->tty && !evaluated) return;
    p->last = t;
    double tps = r->step_seconds > 0 ? r->tokens / r->step_seconds : 0;
    double per_step = r->step > 0 ? r->seconds / (r->step - (r->resumed_from > 0 ? r->resumed_from : 0)) : NAN;
    char eta[32];
    fmt_eta(per_step * (p->steps - r->step), eta, sizeof eta);
    /* the last evaluation of the trained model, with its step; "-" until the first (the curve's row at step 0 is
     * the untrained model's, not a measurement of training) */
    const double *row = r->rows ? r->curve + (size_t)(r->rows - 1) * EPAR_TRAIN_CURVE_COLS : NULL;
    char ev[64];
    if (row && row[0] > 0) snprintf(ev, sizeof ev, "%.4g (step %.0f)", row[4], row[0]);
    else snprintf(ev, sizeof ev, "-");
    char line[256];
    snprintf(line, sizeof line, "step %ld/%ld  loss %.4f  eval %s %s  %.3gk tok/s  ETA %s", r->step, p->steps,
             r->last_loss, r->task.info->metric, ev, tps / 1000, eta);
    if (p->tty) {
        int width = 20, done = (int)(width * r->step / (p->steps ? p->steps : 1));
        char bar[32];
        for (int i = 0; i < width; i++) bar[i] = i < done ? '#' : '.';
        bar[width] = '\0';
        fprintf(stderr, "\r\033[Kepar: train [%s] %s", bar, line);
        if (r->step >= p->steps) fputc('\n', stderr);
    } else {
        fprintf(stderr, "epar: train: %s\n", line);
    }
}

/* ---- configuration: protocol, then the command line ---- */

static int apply_options(struct epar_train_cfg *cfg, const struct opt *opts, const struct train_opts *t)
{
#define SET(name, field, value) if (cli_seen(opts, name)) (field) = (value)
    SET("length", cfg->task.length, t->length);
    SET("layers", cfg->layers, t->layers);
    SET("dim", cfg->dim, t->dim);
    SET("heads", cfg->heads, t->heads);
    SET("mlp", cfg->mlp, t->mlp);
    SET("steps", cfg->optim.steps, t->steps);
    SET("batch", cfg->batch, t->batch);
    SET("warmup", cfg->optim.warmup, t->warmup);
    SET("eval-every", cfg->eval_every, t->eval_every);
    SET("eval-batches", cfg->eval_batches, t->eval_batches);
    SET("learn-posfx", cfg->pos.learn_posfx, 1);
    SET("posfx-length", cfg->pos.posfx_length, t->posfx_length);
    SET("lr", cfg->optim.lr, t->lr);
    SET("lr-min-ratio", cfg->optim.lr_min_ratio, t->lr_min_ratio);
    SET("weight-decay", cfg->optim.weight_decay, t->weight_decay);
    SET("clip", cfg->optim.clip, t->clip);
#undef SET
    apply_task_options(&cfg->task, opts, t);
    if (t->mechanism && epar_nnpos_find(t->mechanism, &cfg->mechanism)) return EPAR_EINVAL;
    return cli_each_set(t->argc, t->argv, epar_exp_train_set, cfg);
}

/* load the protocol (common options, the preset's alpha/beta/gamma, the seed), read experiments.train,
 * apply the command line; protocol problems exit 3, command-line ones 2 */
static int resolve(struct cli_common *c, struct opt *opts, const struct train_opts *t, struct epar_protocol *proto,
                   struct epar_train_cfg *cfg)
{
    /* the generic resolution must not apply --length/--heads/--batch to the analyses' parameters */
    struct opt sub[64];
    int n = 0;
    for (struct opt *o = opts; o->type != OPT_END && n < 63; o++)
        if (o->type == OPT_GROUP || (strcmp(o->name, "length") && strcmp(o->name, "heads") && strcmp(o->name, "batch")))
            sub[n++] = *o;
    sub[n] = (struct opt){NULL, 0, OPT_END, NULL, NULL, NULL, 0};
    struct epar_params prm;
    int rc = cli_resolve(c, sub, "train", proto, &prm);
    if (rc) return rc;
    int task = -1;
    enum epar_task_id tid;
    int st = EPAR_OK;
    if (t->task && (st = epar_task_find(t->task, &tid))) goto fail;
    if (t->task) task = (int)tid;
    epar_exp_train_defaults(cfg);
    if ((st = epar_exp_train_config(cfg, proto, &prm, task)) || (st = epar_exp_train_check(cfg))) {
        /* a bad value in the file is a protocol error naming the file and the section it was read from */
        if (st == EPAR_EINVAL || st == EPAR_EPROTOCOL) {
            char jp[128];
            snprintf(jp, sizeof jp, "$.experiments.train.%s", epar_task_name(cfg->task.id));
            st = epar_protocol_blame(proto, jp);
        }
        goto fail;
    }
    if ((st = apply_options(cfg, opts, t)) || (st = epar_exp_train_check(cfg))) goto fail;
    return 0;
fail:
    epar_protocol_free(proto);
    return cli_fail(st);
}

/* ---- the command ---- */

static int finish_output(struct cli_common *c, struct epar_train_run *r, const char *status)
{
    char root[4300];
    snprintf(root, sizeof root, "%s/train/%s", c->out, epar_task_name(r->cfg.task.id));
    struct epar_out o;
    int st = epar_out_begin(&o, root, epar_nnpos_name(r->cfg.mechanism));
    if (st) return st;
    st = epar_exp_train_write(r, &o, status);
    return cli_publish(c, "train", &o, st);
}

static void summary(const struct cli_common *c, const struct epar_train_run *r, int interrupted, int partial)
{
    if (c->quiet) return;
    const struct epar_train_cfg *g = &r->cfg;
    printf("train %s / %s (%ld parameters, %d layers, dim %d, %d heads, length %d): wrote %s/train/%s/%s/\n",
           epar_task_name(g->task.id), epar_nnpos_name(g->mechanism), (long)r->model.n_params, g->layers, g->dim, g->heads,
           g->task.length, c->out, epar_task_name(g->task.id), epar_nnpos_name(g->mechanism));
    if (interrupted || partial) {
        printf("  %s after step %ld of %d: checkpoint saved\n", interrupted ? "interrupted" : "stopped (--until)", r->step,
               g->optim.steps);
        return;
    }
    printf("  %ld steps, %.4g tokens, %.1f s (%.3gk tokens/s in the steps, BLAS kernel %s)\n", r->step, r->tokens,
           r->seconds, r->step_seconds > 0 ? r->tokens / r->step_seconds / 1000 : 0.0, epar_blas_core());
    printf("  eval %s %.6g  (loss %.6g nats per scored token, %ld scored tokens in %ld sequences)\n",
           r->task.info->metric, r->final.metric, r->final.loss, r->final.scored, r->final.sequences);
    printf("  chance %.6g +- %.2g  (the best constant answer on the same items: %s)\n", r->final.chance,
           r->final.chance_se, strcmp(r->task.info->metric, "bpc") ? "the most frequent answer"
                                                                    : "the held-out characters' entropy");
}

/* after the options: resume or set up, the step loop (stoppable), the final evaluation, the output folder; an
 * exit code (128 + signal when interrupted, after saving) */
static int train_run(struct cli_common *c, const struct train_opts *t, const struct opt *opts,
                     struct epar_train_cfg *cfg)
{
    char cache[4200];
    snprintf(cache, sizeof cache, "%s/train/data", c->out);
    cfg->task.cache_dir = cache;

    /* a checkpoint is read and checked against the options before anything is written */
    struct epar_ckpt ck = {0};
    struct epar_train_run r;
    memset(&r, 0, sizeof r);
    int st = EPAR_OK;
    if (t->resume && ((st = epar_ckpt_read(t->resume, &ck)) || (st = epar_exp_train_resume_check(cfg, &ck, t->resume)))) goto done;
    if ((st = epar_exp_train_setup(&r, cfg))) goto done;
    if (t->resume && (st = epar_exp_train_resume(&r, &ck, t->resume))) goto done;
    epar_ckpt_free(&ck);
    if (t->resume && cli_seen(opts, "until") && t->until <= r.step) {
        st = epar_err_set(EPAR_EINVAL, "invalid value for --until: '%d' (the checkpoint '%s' is at step %ld already)",
                          t->until, t->resume, r.step);
        epar_err_hint("give a later step, up to --steps %d", cfg->optim.steps);
        goto done;
    }

    struct progress pg = {isatty(2), 0, cfg->optim.steps};
    if (!c->quiet) {
        r.progress = show_progress;
        r.progress_ctx = &pg;
        cli_progress(c, "train: %s / %s, %ld parameters, %d steps of %d x %d tokens, %d threads, BLAS kernel %s%s",
                     epar_task_name(cfg->task.id), epar_nnpos_name(cfg->mechanism), (long)r.model.n_params,
                     cfg->optim.steps, cfg->batch, cfg->task.length, omp_get_max_threads(), epar_blas_core(),
                     t->resume ? " (resumed)" : "");
    }
    r.until = cli_seen(opts, "until") ? t->until : 0;
    cli_stop_signal = 0;
    r.stop = &cli_stop_signal;
    cli_catch_stop(1);
    st = epar_exp_train_loop(&r);
    cli_catch_stop(0);
    int interrupted = st == EPAR_EINTR, partial = !st && r.step < cfg->optim.steps;
    if (interrupted && !c->quiet) {
        if (pg.tty) fputc('\n', stderr);
        fprintf(stderr, "epar: train: interrupted at step %ld; saving a checkpoint\n", r.step);
    }
    if (!st && !partial) {
        cli_progress(c, "train: final evaluation on %ld sequences", epar_task_eval_count(&r.task));
        st = epar_exp_train_final_eval(&r);
    }
    if (!st || interrupted)
        st = finish_output(c, &r, interrupted ? "interrupted" : partial ? "partial" : "complete");
    if (!st) summary(c, &r, interrupted, partial);
    if (!st && partial && !c->quiet)
        fprintf(stderr, "hint: continue with the same options and --resume %s/train/%s/%s/checkpoint.bin\n", c->out,
                epar_task_name(cfg->task.id), epar_nnpos_name(cfg->mechanism));
    if (!st && interrupted) {
        fprintf(stderr, "hint: continue with the same options and --resume %s/train/%s/%s/checkpoint.bin\n", c->out,
                epar_task_name(cfg->task.id), epar_nnpos_name(cfg->mechanism));
        epar_exp_train_free(&r);
        return 128 + cli_stop_signal;
    }
done:
    epar_ckpt_free(&ck);
    epar_exp_train_free(&r);
    return st ? cli_fail(st) : 0;
}

/* options without a help line take their protocol key's (experiments/train/train.c's field rows: one text per setting;
 * the task options have theirs from lib/tasks' table) */
static void fill_help(struct opt *opts)
{
    for (struct opt *o = opts; o->type != OPT_END; o++) {
        if (o->help || o->type == OPT_GROUP) continue;
        char key[64];
        snprintf(key, sizeof key, "%s", o->name);
        for (char *c = key; *c; c++) *c = *c == '-' ? '_' : *c;
        o->help = epar_exp_train_help(key);
    }
}

int cmd_train(int argc, char **argv)
{
    struct cli_common c = {0};
    struct train_opts t = {0};
    char task_help[300];   /* the task table's ids (lib/tasks), not a typed list */
    snprintf(task_help, sizeof task_help, "%s (lib/tasks.h)", epar_task_list());
    t.argc = argc;
    t.argv = argv;
    const struct opt before[] = {
        {"Task and model", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"task", 0, OPT_STRING, &t.task, "NAME", task_help, 0},
        {"mechanism", 'm', OPT_STRING, &t.mechanism, "ID", "a trainable catalogue id (epar compare --list: train yes)", 0},
        {"length", 'L', OPT_INT, &t.length, "N", "sequence length (training and evaluation)", 0},
        {"layers", 0, OPT_INT, &t.layers, "N", NULL, 0},
        {"dim", 0, OPT_INT, &t.dim, "N", NULL, 0},
        {"heads", 0, OPT_INT, &t.heads, "N", NULL, 0},
        {"mlp", 0, OPT_INT, &t.mlp, "N", NULL, 0},
        {"Training", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"steps", 0, OPT_INT, &t.steps, "N", NULL, 0},
        {"batch", 0, OPT_INT, &t.batch, "N", NULL, 0},
        {"lr", 0, OPT_DOUBLE, &t.lr, "X", NULL, 0},
        {"lr-min-ratio", 0, OPT_DOUBLE, &t.lr_min_ratio, "X", NULL, 0},
        {"warmup", 0, OPT_INT, &t.warmup, "N", NULL, 0},
        {"weight-decay", 0, OPT_DOUBLE, &t.weight_decay, "X", NULL, 0},
        {"clip", 0, OPT_DOUBLE, &t.clip, "X", NULL, 0},
        {"eval-every", 0, OPT_INT, &t.eval_every, "N", "steps between evaluations (rows of learning_curve.csv)", 0},
        {"eval-batches", 0, OPT_INT, &t.eval_batches, "N", "batches of the evaluation set used at those points", 0},
        {"seed", 0, OPT_INT, &c.seed, "N", "seed of the weights and the data (default: the protocol's first)", 0},
        {"resume", 0, OPT_STRING, &t.resume, "FILE", "continue the run saved in this checkpoint.bin", 0},
        {"until", 0, OPT_INT, &t.until, "N", "stop after step N of the schedule and save a checkpoint (resume later)", 0},
        {"Position mechanism", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"alpha", 0, OPT_DOUBLE, &c.over.alpha, "X", "EPAR alpha > 0 (default: the preset's)", 0},
        {"beta", 0, OPT_DOUBLE, &c.over.beta, "X", "EPAR beta >= 0", 0},
        {"gamma", 0, OPT_DOUBLE, &c.over.gamma, "X", "EPAR gamma >= 0 (enhanced)", 0},
        {"learn-posfx", 0, OPT_FLAG, &t.learn_posfx, NULL, NULL, 0},
        {"posfx-length", 0, OPT_INT, &t.posfx_length, "N", NULL, 0},
        {"set", 0, OPT_STRING, &t.set, "M.P=V", "catalogue parameter of the mechanism, as in compare, e.g. rope.base=20000 (repeatable; EPAR: --alpha --beta --gamma)", 0},
        {"Tasks", 0, OPT_GROUP, NULL, NULL, NULL, 0}};
    /* then the task options, from lib/tasks' table */
    const struct opt after[] = {
        {"Common options", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"protocol", 0, OPT_STRING, &c.protocol, "FILE", "protocol file (default ./paper_protocol.json)", 0},
        {"preset", 0, OPT_STRING, &c.preset, "NAME", "preset of alpha, beta, gamma (default: the train section's, paper)", 0},
        {"out", 'o', OPT_STRING, &c.out, "DIR", "output root folder (default output)", 0},
        {"no-render", 0, OPT_FLAG, &c.no_render, NULL, "write the .gp script but do not run gnuplot", 0},
        {"quiet", 'q', OPT_FLAG, &c.quiet, NULL, "no progress on stderr, no summary on stdout", 0},
        {"jobs", 'j', OPT_INT, &c.jobs, "N", "threads (default: all cores); results do not depend on it", 0},
        {NULL, 0, OPT_END, NULL, NULL, NULL, 0}};
    enum { N_BEFORE = sizeof before / sizeof before[0], N_AFTER = sizeof after / sizeof after[0] };
    struct opt opts[N_BEFORE + EPAR_TASK_MAX_OPTIONS + N_AFTER];
    char names[EPAR_TASK_MAX_OPTIONS][TASK_OPT_NAME], help[EPAR_TASK_MAX_OPTIONS][TASK_OPT_HELP];
    memcpy(opts, before, sizeof before);
    int n = N_BEFORE + task_options(opts + N_BEFORE, &t, names, help);
    memcpy(opts + n, after, sizeof after);
    fill_help(opts);
    int rc = cli_parse("train", "--task NAME --mechanism ID [--length N --layers N --dim N ...] [options]", opts,
                       argc, argv);
    if (rc >= 0) return rc;

    struct epar_protocol proto;
    struct epar_train_cfg cfg;
    if ((rc = resolve(&c, opts, &t, &proto, &cfg))) return rc;
    if (cli_seen(opts, "until") && (t.until < 1 || t.until > cfg.optim.steps)) {
        epar_protocol_free(&proto);
        if (t.until < 1) return cli_usage_error("invalid value for --until: '%d' (expected a step >= 1)", t.until);
        cli_usage_error("invalid value for --until: '%d' (the run ends at step %d, --steps)", t.until,
                        cfg.optim.steps);
        fprintf(stderr, "hint: give --until N with N <= %d, or more --steps\n", cfg.optim.steps);
        return 2;
    }
    rc = train_run(&c, &t, opts, &cfg);
    epar_protocol_free(&proto);
    return rc;
}
