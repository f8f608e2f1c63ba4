/* epar benchmark: the grid proxy task x mechanism x seed -> output/benchmark/
 *
 *   epar benchmark --budget smoke|quick|full [--tasks ..] [--mechanisms ..] [--seeds ..] [--jobs N]
 *   epar benchmark --budget full --shard K/N          (cells k with k mod N = K-1 only; no tables)
 *   epar benchmark --budget full --merge DIR...       (gather the cells of other --out folders, then the tables)
 *   mpirun -np N epar benchmark --budget full         (built with make MPI=1: ranks share the cells, rank 0 writes)
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <omp.h>
#ifdef EPAR_MPI
#include <mpi.h>
#endif
#include "lib/err.h"
#include "lib/outdir.h"
#include "experiments/benchmark.h"
#include "experiments/common.h"
#include "cli.h"

#define MAX_MERGE 256

static void fmt_time(double s, char *buf, size_t n)
{
    if (!isfinite(s) || s < 0) snprintf(buf, n, "?");
    else if (s < 60) snprintf(buf, n, "%.0f s", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

/* seconds per unit of weight for cell k: a few steps of it (the cost cell: its first mechanism), on one thread as
 * the cells run, in the thread's CPU time (threads of the previous step of run-all still spinning on the other
 * core made three wall-clock steps look twelve times slower) */
static double calibrate_one(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, int k)
{
    omp_set_num_threads(1);
    struct epar_bench_cell cell = plan->cells[k];
    if (cell.task < 0) {
        cell.mech = 0;
        cell.mlp = plan->cost_mlp[0];
    }
    struct epar_train_cfg t;
    epar_exp_benchmark_cell_cfg(c, &cell, &t);
    t.optim.steps = 3;
    t.eval_every = 4;
    struct epar_train_run r;
    double spw = NAN;
    int st = epar_exp_train_setup(&r, &t);
    r.until = 1;   /* the first step is not timed (first touch of the activations) */
    if (!st && !epar_exp_train_loop(&r)) {
        double first = r.step_cpu_seconds;
        r.until = 0;
        if (!epar_exp_train_loop(&r) && r.step > 1) {
            double T = t.task.length;
            double w = (double)(r.step - 1) * t.batch * T * epar_bench_token_work(&t, T);
            spw = (r.step_cpu_seconds - first) / w;
        }
    }
    epar_exp_train_free(&r);
    return spw;
}

/* the same, `jobs` copies at once as the cells will run: cells side by side are each 20-30 % slower than alone
 * (shared caches and memory; measured on 2 cores), and one copy alone made the first estimate of a quick run-all
 * 15 minutes for 22 */
static double calibrate(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, int k, int jobs)
{
    int threads = omp_get_max_threads(), n = 0;
    double sum = 0;
#pragma omp parallel num_threads(jobs) reduction(+ : sum, n)
    {
        double s = calibrate_one(c, plan, k);
        if (isfinite(s)) sum += s, n++;
    }
    omp_set_num_threads(threads);
    return n ? sum / n : NAN;
}

static int parse_shard(const char *s, int *k, int *n)
{
    char *end;
    long a = strtol(s, &end, 10);
    if (end == s || *end != '/') return -1;
    const char *q = end + 1;
    long b = strtol(q, &end, 10);
    if (end == q || *end || b < 1 || b > 1000000 || a < 1 || a > b) return -1;
    *k = (int)a;
    *n = (int)b;
    return 0;
}

struct run_state {
    int done, total;
    double w_done, w_total, t0;
};

static int run_cells(const struct cli_common *c, const struct epar_bench_cfg *cfg, const struct epar_bench_plan *plan,
                     const char *root, const int *pending, int np, int jobs, struct run_state *rs)
{
    int st = EPAR_OK;
    char err[600] = "", hint[600] = "";
    #pragma omp parallel for schedule(dynamic, 1) num_threads(jobs)
    for (int q = 0; q < np; q++) {
        int failed;
        #pragma omp atomic read
        failed = st;
        if (failed || cli_stop_signal) continue;
        omp_set_num_threads(1);   /* one thread per cell: cells run side by side */
        int k = pending[q];
        double t0 = omp_get_wtime();
        int s = epar_exp_benchmark_cell_run(cfg, plan, k, root, &cli_stop_signal);
        double dt = omp_get_wtime() - t0;
        #pragma omp critical(bench_progress)
        {
            if (s && !st) {
                st = s;
                snprintf(err, sizeof err, "%s", epar_err_message());
                snprintf(hint, sizeof hint, "%s", epar_err_hint_text());
            }
            if (!s) {
                rs->done++;
                rs->w_done += plan->cells[k].weight;
                double el = omp_get_wtime() - rs->t0, eta = el / rs->w_done * (rs->w_total - rs->w_done);
                char e1[32];
                fmt_time(eta, e1, sizeof e1);
                const struct epar_bench_cell *cell = &plan->cells[k];
                if (cell->task >= 0)
                    cli_progress(c, "benchmark: [%d/%d] %s / %s / seed %lu done in %.1f s, ETA %s", rs->done, rs->total,
                                 cfg->tasks[cell->task].id, epar_bench_mech_name(cfg, cell->mech),
                                 cfg->b.seeds[cell->seed], dt, e1);
                else
                    cli_progress(c, "benchmark: [%d/%d] cost cell done in %.1f s", rs->done, rs->total, dt);
            }
        }
    }
    if (st && st != EPAR_EINTR) {
        epar_err_set(st, "%s", err);
        if (*hint) epar_err_hint("%s", hint);
    }
    return st;
}

/* the arguments without "--merge DIR...", and the folders it names (up to the next option) */
static int take_merge(int argc, char **argv, char **av, int *ac, const char **merge, int *n_merge, int *merging)
{
    *ac = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--merge")) {
            *merging = 1;
            for (; i + 1 < argc && strncmp(argv[i + 1], "-", 1); i++) {
                if (*n_merge >= MAX_MERGE) return cli_usage_error("--merge takes at most %d folders", MAX_MERGE);
                merge[(*n_merge)++] = argv[i + 1];
            }
            continue;
        }
        av[(*ac)++] = argv[i];
    }
    av[*ac] = NULL;
    return -1;
}

/* --merge: every cell from the first folder that has it (this configuration), unless root has it already. Every
 * cell is found before any is copied: a merge that lacks cells copies nothing. */
static int merge_cells(const struct cli_common *c, const struct epar_bench_cfg *cfg, const struct epar_bench_plan *plan,
                       const char *root, const char *const *merge, int n_merge)
{
    int st = EPAR_OK, missing = 0;
    int *from = malloc((size_t)plan->n * sizeof *from);   /* the folder of cell k (-1: root has it) */
    if (!from) return epar_err_set(EPAR_ENOMEM, "out of memory");
    char dir[4300];
    for (int k = 0; k < plan->n; k++) {
        from[k] = -1;
        if (epar_exp_benchmark_cell_state(cfg, plan, k, root) == 1) continue;
        for (int d = 0; d < n_merge && from[k] < 0; d++) {
            snprintf(dir, sizeof dir, "%s/benchmark", merge[d]);
            if (epar_exp_benchmark_cell_state(cfg, plan, k, dir) == 1) from[k] = d;
        }
        missing += from[k] < 0;
    }
    if (missing) {
        free(from);
        st = epar_err_set(EPAR_EIO, "%d of %d cells are in none of the %d folder(s) merged", missing, plan->n, n_merge);
        epar_err_hint("run the missing shards (same --budget, --tasks, --mechanisms, --seeds and protocol), then merge again");
        return st;
    }
    for (int k = 0; k < plan->n && !st; k++) {
        if (from[k] < 0) continue;
        snprintf(dir, sizeof dir, "%s/benchmark", merge[from[k]]);
        st = epar_exp_benchmark_cell_copy(cfg, &plan->cells[k], dir, root);
    }
    free(from);
    if (!st) cli_progress(c, "benchmark: merged %d cells from %d folder(s)", plan->n, n_merge);
    return st;
}

/* every --merge folder is a readable folder holding benchmark/ (the --out of a shard); 0 or an exit code (printed) */
static int check_merge(const char *const *merge, int n_merge)
{
    for (int d = 0; d < n_merge; d++) {
        char b[4300];
        struct stat sb;
        snprintf(b, sizeof b, "%s/benchmark", merge[d]);
        if (stat(merge[d], &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            epar_err_set(EPAR_EIO, "cannot merge '%s': %s", merge[d], stat(merge[d], &sb) ? strerror(errno) : "not a folder");
            epar_err_hint("--merge takes the --out folders of 'epar benchmark --shard K/N' runs");
            return cli_fail(EPAR_EIO);
        }
        if (stat(b, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            epar_err_set(EPAR_EIO, "cannot merge '%s': it has no benchmark/ folder", merge[d]);
            epar_err_hint("--merge takes the --out folders of 'epar benchmark --shard K/N' runs");
            return cli_fail(EPAR_EIO);
        }
    }
    return 0;
}

/* the cells of shard K/N not done yet in root: the cost cell first, beside the others (its claims read ratios of
 * adjacent steps in thread CPU time, which keep their verdicts with a training job on the other core:
 * bench/README.md 2026-11-28; alone at the end it left a core idle for its 100-150 s), then the heaviest first;
 * *stopped = 128 + the signal when interrupted (finished cells are kept) */
static int run_here(const struct cli_common *c, const struct epar_bench_cfg *cfg, const struct epar_bench_plan *plan,
                    const char *root, int K, int N, int jobs, int size, int *stopped)
{
    int st = EPAR_OK, total = plan->n, mine = 0, have = 0, redo = 0;
    int *pending = malloc((size_t)plan->n * sizeof *pending), np = 0, cost_pending = 0;
    if (!pending) return epar_err_set(EPAR_ENOMEM, "out of memory");
    struct run_state rs = {0, 0, 0, 0, 0};
    for (int k = 0; k < plan->n; k++) {
        if (k % N != K - 1) continue;
        mine++;
        int s = epar_exp_benchmark_cell_state(cfg, plan, k, root);
        if (s == 1) {
            have++;
            continue;
        }
        redo += s < 0;
        if (plan->cells[k].task < 0) cost_pending = 1;
        else pending[np++] = k;
        rs.w_total += plan->cells[k].weight;
    }
    /* the heaviest cells first (the schedule ends with short cells on every thread) */
    for (int i = 1; i < np; i++)
        for (int j = i; j > 0 && plan->cells[pending[j]].weight > plan->cells[pending[j - 1]].weight; j--) {
            int tmp = pending[j];
            pending[j] = pending[j - 1];
            pending[j - 1] = tmp;
        }
    if (cost_pending) {
        memmove(pending + 1, pending, (size_t)np * sizeof *pending);
        pending[0] = plan->n - 1;
        np++;
    }
    rs.total = np;
    /* the estimate: seconds per unit of weight of each task and mechanism (a few steps of one of its cells: small
     * models use the cores less well per FLOP than the cost cell's, and T5 or Shaw cost more than none), times the
     * weight of its pending cells. Every mechanism is timed on one reference task (the one with the most
     * mechanisms); every other task on one mechanism, scaled by that mechanism's ratios on the reference task
     * (timing all ~130 pairs of a quick run-all took about 5 s before its first cell, 40 pairs about 2 s); a pair
     * the reference task cannot scale, and the cost cell, are timed themselves. */
    double spw[EPAR_BENCH_MAX_TASKS + 1][EPAR_MECH_COUNT], est_s = 0;
    int at_once = np > jobs ? jobs : (np ? np : 1);   /* cells side by side */
    int n_of[EPAR_BENCH_MAX_TASKS] = {0}, ref = -1, one[EPAR_BENCH_MAX_TASKS];
    unsigned char seen[EPAR_BENCH_MAX_TASKS][EPAR_MECH_COUNT] = {{0}};
    for (int t = 0; t <= EPAR_BENCH_MAX_TASKS; t++)
        for (int m = 0; m < EPAR_MECH_COUNT; m++) spw[t][m] = NAN;
    for (int i = 0; i < np; i++) {   /* the reference task: the most mechanisms pending */
        int t = plan->cells[pending[i]].task, m = plan->cells[pending[i]].mech;
        if (t >= 0 && !seen[t][m]) n_of[t]++, seen[t][m] = 1;
    }
    for (int t = 0; t < EPAR_BENCH_MAX_TASKS; t++) {
        if (n_of[t] && (ref < 0 || n_of[t] > n_of[ref])) ref = t;
        one[t] = -1;
    }
    for (int i = 0; i < np; i++) {   /* the reference task's every mechanism */
        int k = pending[i], m = plan->cells[k].mech;
        if (ref >= 0 && plan->cells[k].task == ref && isnan(spw[ref][m]))
            spw[ref][m] = calibrate(cfg, plan, k, at_once);
    }
    for (int i = 0; i < np; i++) {
        int k = pending[i];
        int t = plan->cells[k].task < 0 ? EPAR_BENCH_MAX_TASKS : plan->cells[k].task, m = plan->cells[k].mech;
        if (isnan(spw[t][m]) && t < EPAR_BENCH_MAX_TASKS && ref >= 0) {
            if (one[t] < 0 && !isnan(spw[ref][m])) {   /* the task's one timed mechanism */
                one[t] = m;
                spw[t][m] = calibrate(cfg, plan, k, at_once);
            } else if (one[t] >= 0 && !isnan(spw[ref][m]) && isfinite(spw[ref][one[t]]) && spw[ref][one[t]] > 0)
                spw[t][m] = spw[t][one[t]] * spw[ref][m] / spw[ref][one[t]];
        }
        if (isnan(spw[t][m])) spw[t][m] = calibrate(cfg, plan, k, at_once);
        est_s += spw[t][m] * plan->cells[k].weight;
    }
    char est[32], own[96] = "";
    fmt_time(est_s / at_once, est, sizeof est);
    int grid = cfg->n_tasks * cfg->n_mech * cfg->b.n_seeds;
    if (plan->n - 1 > grid)   /* the extrapolation study's own cells (experiments/bench_extrap) */
        snprintf(own, sizeof own, " + %d of the extrapolation study", plan->n - 1 - grid);
    cli_progress(c, "benchmark: budget %s, %d tasks x %d mechanisms x %d seeds = %d cells%s + cost; %d to run here "
                     "(%d done already%s), %d at once; estimated %s",
                 cfg->b.name, cfg->n_tasks, cfg->n_mech, cfg->b.n_seeds, grid, own, rs.total, have,
                 redo ? ", others of another configuration are redone" : "", jobs, est);
    if (N > 1) cli_progress(c, "benchmark: shard %d/%d: %d of the %d cells", K, N, mine, total);
    cli_stop_signal = 0;
    cli_catch_stop(1);
    rs.t0 = omp_get_wtime();
    /* the lm text is read (and cached) once before the threads start */
    st = run_cells(c, cfg, plan, root, pending, np, jobs, &rs);
    cli_catch_stop(0);
    if (cli_stop_signal) {
        fprintf(stderr, "epar: benchmark: interrupted; %d finished cells are kept\n", have + rs.done);
        fprintf(stderr, "hint: run the same command again to resume\n");
        free(pending);
        *stopped = 128 + cli_stop_signal;
        return EPAR_OK;
    }
    free(pending);
    if (!st && N > 1 && size == 1 && !c->quiet)   /* under mpirun rank 0 writes the tables instead */
        printf("benchmark: shard %d/%d wrote its %d cells under %s/cells/; gather every shard with\n"
               "  epar benchmark --budget %s --merge DIR... --out DIR (same options)\n",
               K, N, mine, root, cfg->b.name);
    return st;
}

/* the tables into a fresh benchmark/ (cells/ carried over), published; the main table on stdout */
static int write_tables(const struct cli_common *c, const struct epar_bench_cfg *cfg, const struct epar_bench_plan *plan,
                        const char *root, const char *mode, int jobs)
{
    int st;
    struct epar_out o;
    if ((st = epar_out_begin(&o, c->out, "benchmark"))) return st;
    epar_out_keep(&o, "cells"); /* the cells are the grid's store (resume, merge): the tables replace the rest */
    json_t *extra = json_pack("{s:s, s:i}", "mode", mode, "jobs", jobs);
    st = epar_exp_benchmark_write(cfg, plan, root, &o, extra);
    st = cli_publish(c, "benchmark", &o, st);
    if (!st && !c->quiet) {
        printf("benchmark (budget %s, %d cells): wrote %s/benchmark/\n", cfg->b.name, plan->n, c->out);
        char md[4400];
        snprintf(md, sizeof md, "%s/benchmark/main_table.md", c->out);
        FILE *f = fopen(md, "r");
        char line[1024];
        int shown = 0;
        while (f && fgets(line, sizeof line, f))
            if (line[0] == '|' && shown++ < 40) fputs(line, stdout);
        if (f) fclose(f);
    }
    return st;
}

static void mpi_finish(void)
{
#ifdef EPAR_MPI
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
#endif
}

/* the protocol's grid for the budget, with the command line's seeds, tasks and mechanisms: 0 (proto loaded) or an
 * exit code (nothing loaded) */
static int grid_config(struct cli_common *c, struct opt *opts, const char *budget, const char *tasks, const char *mechs,
                       char **argv, int argc, struct epar_protocol *proto, struct epar_bench_cfg *cfg)
{
    /* the budget, the sharding and merging do not change what a cell computes: not command-line changes of the
     * run (run.json cli_overrides, which the audit reads); --tasks and --mechanisms do (another grid) */
    for (struct opt *o = opts; o->type != OPT_END; o++)
        if (o->name && (!strcmp(o->name, "budget") || !strcmp(o->name, "shard") || !strcmp(o->name, "merge"))) o->seen = 0;
    struct epar_params prm;
    int rc = cli_resolve(c, opts, "benchmark", proto, &prm);
    if (rc) return rc;
    int st = epar_exp_benchmark_config(cfg, proto, &prm, budget);
    if (!st && (cli_seen(opts, "seed") || cli_seen(opts, "seeds"))) {
        cfg->b.n_seeds = prm.n_seeds;
        memcpy(cfg->b.seeds, prm.seeds, sizeof cfg->b.seeds);
    }
    /* an unknown budget (EPAR_EINVAL) is a usage error; --mechanisms chooses every mechanism (no cells of the
     * extrapolation study's own) */
    cfg->extrap.restricted = mechs != NULL;
    if (!st) st = epar_exp_benchmark_select(cfg, tasks, mechs);
    if (!st) st = cli_each_set(argc, argv, epar_exp_train_set, &cfg->base);
    for (int i = 0; !st && i < cfg->n_tasks; i++) {   /* the command line over a task's own "set" too */
        if (!cfg->tasks[i].own_pos) continue;
        struct epar_train_cfg t = cfg->base;
        t.pos = cfg->tasks[i].pos;
        if (!(st = cli_each_set(argc, argv, epar_exp_train_set, &t))) cfg->tasks[i].pos = t.pos;
    }
    if (st) {
        epar_protocol_free(proto);
        return cli_fail(st);
    }
    return 0;
}

/* --lr-study S1,S2,...: the grid at every scale (each a benchmark of its own under --out/x<scale>/, resumable), then
 * the choice of each mechanism's scale per lr_family into --out/benchmark-lr/ (experiments/benchmark.c) */
static int lr_study(const struct cli_common *c, struct epar_bench_cfg *cfg, const struct opt_dlist *scales, int conflict)
{
    if (conflict) return cli_fail(epar_err_set(EPAR_EINVAL, "--lr-study runs its own grids: no --lr-scale, --shard or --merge"));
    int one = 0;
    for (int k = 0; k < scales->n; k++) {
        one |= scales->v[k] == 1;
        if (!(scales->v[k] > 0 && scales->v[k] <= 1000))
            return cli_fail(epar_err_set(EPAR_EINVAL, "invalid value for --lr-study: '%g' (expected scales in (0, 1000])",
                                         scales->v[k]));
    }
    if (!one || scales->n < 2 || scales->n > EPAR_BENCH_MAX_SCALES)
        return cli_fail(epar_err_set(EPAR_EINVAL, "--lr-study needs 2 to %d scales, one of them 1 (the reference)",
                                     EPAR_BENCH_MAX_SCALES));
    char dirs[EPAR_BENCH_MAX_SCALES][4200];
    const char *dp[EPAR_BENCH_MAX_SCALES];
    int jobs = c->jobs > 0 ? c->jobs : omp_get_max_threads(), st = EPAR_OK;
    snprintf(cfg->cache_dir, sizeof cfg->cache_dir, "%s/train/data", c->out);
    for (int k = 0; k < scales->n && !st; k++) {
        struct cli_common sub = *c;
        struct epar_bench_plan plan = {0};
        snprintf(dirs[k], sizeof dirs[k], "%s/x%g", c->out, scales->v[k]);
        dp[k] = dirs[k];
        sub.out = dirs[k];
        cfg->lr_scale = scales->v[k];
        cli_progress(c, "benchmark: learning-rate study, scale %g (%d of %d) into %s/", scales->v[k], k + 1, scales->n,
                     dirs[k]);
        char root[4300];
        snprintf(root, sizeof root, "%.4190s/benchmark", dirs[k]);
        int stopped = 0;
        if (!(st = epar_bench_plan(cfg, &plan))) st = run_here(&sub, cfg, &plan, root, 1, 1, jobs, 1, &stopped);
        if (stopped) {
            epar_exp_benchmark_plan_free(&plan);
            return stopped;
        }
        if (!st) st = write_tables(&sub, cfg, &plan, root, "single", jobs);
        epar_exp_benchmark_plan_free(&plan);
    }
    struct epar_out o;
    if (!st && !(st = epar_out_begin(&o, c->out, "benchmark-lr"))) {
        st = epar_exp_benchmark_lr_choose(cfg, dp, scales->v, scales->n, &o);
        st = cli_publish(c, "benchmark", &o, st);
    }
    if (!st && !c->quiet) printf("learning-rate study: wrote %s/benchmark-lr/ (lr_study.csv, lr_scale.json)\n", c->out);
    return st ? cli_fail(st) : 0;
}

int cmd_benchmark(int argc, char **argv)
{
    /* --merge DIR...: the folders up to the next option */
    const char *merge[MAX_MERGE];
    int n_merge = 0, merging = 0, ac;
    char **av = malloc(((size_t)argc + 1) * sizeof *av);
    if (!av) return cli_fail(epar_err_set(EPAR_ENOMEM, "out of memory"));
    int rc = take_merge(argc, argv, av, &ac, merge, &n_merge, &merging);
    if (rc >= 0) {
        free(av);
        return rc;
    }

    struct cli_common c = {0};
    const char *budget = "quick", *tasks = NULL, *mechs = NULL, *shard = NULL, *set = NULL;
    int merge_flag = 0;
    double lr_scale = 0;
    struct opt_dlist study = {0};   /* --lr-study: its scales */
    struct opt opts[] = {
        {"Grid", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"budget", 'b', OPT_STRING, &budget, "NAME", "smoke (CI, < 1 min), quick (4 seeds, about 20 min on 2 cores) or full (5 seeds, hours)", 0},
        {"tasks", 0, OPT_STRING, &tasks, "LIST", "benchmark task ids (default: all of the protocol's)", 0},
        {"mechanisms", 'm', OPT_STRING, &mechs, "LIST", "trainable catalogue ids (default: the paper table's eight)", 0},
        {"set", 0, OPT_STRING, &set, "M.P=V", "catalogue parameter of a mechanism, as in train and compare, e.g. rope.base=20000 (repeatable)", 0},
        {"lr-scale", 0, OPT_DOUBLE, &lr_scale, "X", "every cell at the budget's lr times X instead of its mechanism's tuned scale (the learning-rate study)", 0},
        {"lr-study", 0, OPT_DLIST, &study, "LIST", "the learning-rate study: the grid at each scale (one of them 1) into --out/x<scale>/, then each mechanism's scale per lr_family into --out/benchmark-lr/", 0},
        {"shard", 0, OPT_STRING, &shard, "K/N", "run only the cells k with k mod N = K-1 (no tables; gather with --merge)", 0},
        {"merge", 0, OPT_FLAG, &merge_flag, "DIR...", "gather the cells of these --out folders into --out, then write the tables", 0},
        {"Common options", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"protocol", 0, OPT_STRING, &c.protocol, "FILE", "protocol file (default ./paper_protocol.json)", 0},
        {"preset", 0, OPT_STRING, &c.preset, "NAME", "preset of alpha, beta, gamma (default: the benchmark section's, paper)", 0},
        {"seed", 0, OPT_INT, &c.seed, "N", "run with this one seed (default: the budget's seeds)", 0},
        {"seeds", 0, OPT_SEEDS, &c.seeds, "LIST", "comma-separated seeds (default: the budget's)", 0},
        {"out", 'o', OPT_STRING, &c.out, "DIR", "output root folder (default output)", 0},
        {"no-render", 0, OPT_FLAG, &c.no_render, NULL, "write the .gp scripts but do not run gnuplot", 0},
        {"quiet", 'q', OPT_FLAG, &c.quiet, NULL, "no progress on stderr, no summary on stdout", 0},
        {"jobs", 'j', OPT_INT, &c.jobs, "N", "cells trained at once (default: all cores); results do not depend on it", 0},
        {NULL, 0, OPT_END, NULL, NULL, NULL, 0}};
    rc = cli_parse("benchmark", "--budget smoke|quick|full [--tasks LIST] [--mechanisms LIST] [--shard K/N | --merge DIR...] [options]",
                   opts, ac, av);
    free(av);
    if (rc >= 0) return rc;
    if (merging && n_merge == 0) return cli_usage_error("--merge needs at least one folder (the --out of a shard)");
    int K = 1, N = 1;
    if (shard && parse_shard(shard, &K, &N)) return cli_usage_error("invalid value for --shard: '%s' (expected K/N with 1 <= K <= N)", shard);
    if (shard && merging) return cli_usage_error("'--shard' and '--merge' cannot be combined");
    if ((rc = check_merge(merge, n_merge))) return rc;
    int rank = 0, size = 1;
    (void)rank;
#ifdef EPAR_MPI
    int mpi_on = 0;
    MPI_Initialized(&mpi_on);
    if (!mpi_on) MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1 && (shard || merging)) return cli_usage_error("under mpirun the ranks are the shards: no --shard or --merge");
    if (size > 1) {
        K = rank + 1;
        N = size;
        if (rank) c.quiet = 1;
    }
#endif

    struct epar_protocol proto;
    static struct epar_bench_cfg cfg;
    struct epar_bench_plan plan = {0};
    if ((rc = grid_config(&c, opts, budget, tasks, mechs, argv, argc, &proto, &cfg))) {
        mpi_finish();
        return rc;
    }
    if (cli_seen(opts, "lr-scale") && !(lr_scale > 0 && lr_scale <= 1000)) {
        epar_protocol_free(&proto);
        mpi_finish();
        return cli_fail(epar_err_set(EPAR_EINVAL, "invalid value for --lr-scale: '%g' (expected a scale in (0, 1000])",
                                     lr_scale));
    }
    cfg.lr_scale = lr_scale;
    if (cli_seen(opts, "lr-study")) {
        rc = lr_study(&c, &cfg, &study, cli_seen(opts, "lr-scale") || merging || shard);
        epar_protocol_free(&proto);
        mpi_finish();
        return rc;
    }
    int jobs = c.jobs > 0 ? c.jobs : omp_get_max_threads();
    int st = EPAR_OK;
    snprintf(cfg.cache_dir, sizeof cfg.cache_dir, "%s/train/data", c.out);
    char root[4300];
    snprintf(root, sizeof root, "%s/benchmark", c.out);
    if (!st) st = epar_bench_plan(&cfg, &plan);
    if (st) goto done;
    /* staging folders a killed run left, of its cells (cells/<task>/<mechanism>/seed-<s>.tmp-...) and of its tables
     * (benchmark.tmp-...: killed while writing them), and a corpus cache file it was writing (train/data): a folder
     * another process (a shard, an MPI rank) is writing holds its lock and stays (lib/outdir.h) */
    int swept = epar_out_sweep(root, 3) + epar_out_sweep_section(c.out, "benchmark");
    int files = epar_out_sweep_files(cfg.cache_dir);
    if (swept) cli_progress(&c, "benchmark: removed %d staging folder(s) left by a killed run", swept);
    if (files) cli_progress(&c, "benchmark: removed %d temp file(s) left by a killed run in %s", files, cfg.cache_dir);

    if (merging) {
        st = merge_cells(&c, &cfg, &plan, root, merge, n_merge);
    } else {
        int stopped = 0;
        st = run_here(&c, &cfg, &plan, root, K, N, jobs, size, &stopped);
        if (stopped) {
            epar_exp_benchmark_plan_free(&plan);
            epar_protocol_free(&proto);
            return stopped;
        }
    }
#ifdef EPAR_MPI
    if (size > 1) {
        int mine_st = st, any = 0;
        MPI_Allreduce(&mine_st, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (!st && any) st = epar_err_set(EPAR_ECHECK, "another rank failed");
        N = 1;   /* rank 0 writes the tables below; the others stop here */
        if (rank) goto done;
    }
#endif
    if (!st && N == 1) st = write_tables(&c, &cfg, &plan, root, merging ? "merge" : size > 1 ? "mpi" : "single", jobs);
done:
    epar_exp_benchmark_plan_free(&plan);
    epar_protocol_free(&proto);
    mpi_finish();
    return st ? cli_fail(st) : 0;
}
