/* epar benchmark: the grid proxy task x mechanism x seed -> output/benchmark/
 *
 *   epar benchmark --budget smoke|quick|full [--tasks ..] [--mechanisms ..] [--seeds ..] [--jobs N]
 *   epar benchmark --budget full --shard K/N          (cells k with k mod N = K-1 only; no tables)
 *   epar benchmark --budget full --merge DIR...       (gather the cells of other --out folders, then the tables)
 *   mpirun -np N epar benchmark --budget full         (built with make MPI=1: ranks share the cells, rank 0 writes)
 */
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
#include "experiments/benchmark/bench_sched.h"
#include "experiments/benchmark/bench_stage.h"
#include "experiments/benchmark/benchmark.h"
#include "cli.h"

#define MAX_MERGE 256

/* under mpirun: every rank's status, the worst of them (a barrier too); st itself without MPI or with one rank (size
 * points to the number of ranks) */
static int mpi_sync(int st, void *size)
{
#ifdef EPAR_MPI
    if (*(const int *)size > 1) {
        int mine = st, any = 0;
        MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (!st && any) st = epar_err_set(EPAR_ECHECK, "another rank failed");
    }
#else
    (void)size;
#endif
    return st;
}

static void progress(void *c, const char *fmt, va_list ap)
{
    cli_vprogress(c, fmt, ap);
}

/* what the cell scheduler takes from the command line (experiments/benchmark/bench_sched.h): one process, njobs cells
 * at once */
static struct epar_bench_sched sched_of(const struct cli_common *c, int njobs)
{
    return (struct epar_bench_sched){.out = c->out, .njobs = njobs, .render_jobs = c->jobs, .quiet = c->quiet,
                                     .no_render = c->no_render, .progress = progress, .progress_ctx = (void *)c,
                                     .stop = &cli_stop_signal, .catch_stop = cli_catch_stop, .rank = 0, .size = 1};
}

/* a run stopped by a signal: the exit code 128 + the signal (finished cells are kept) */
static int interrupted(const struct epar_bench_stopped *stopped)
{
    fprintf(stderr, "epar: benchmark: interrupted; %d finished cells are kept\n", stopped->kept);
    fprintf(stderr, "hint: run the same command again to resume\n");
    return stopped->code;
}

/* the tables into s->out/benchmark/, then that folder and the main table on stdout */
static int write_tables(const struct cli_common *c, const struct epar_bench_sched *s, const struct epar_bench_cfg *cfg,
                        const struct epar_bench_plan *plan, const char *root, const char *mode)
{
    int st = epar_bench_sched_tables(s, cfg, plan, root, mode);
    if (!st && !c->quiet) {
        printf("benchmark (budget %s, %d cells): wrote %s/benchmark/\n", cfg->b.name, plan->n, s->out);
        char md[4400];
        snprintf(md, sizeof md, "%s/benchmark/main_table.md", s->out);
        FILE *f = fopen(md, "r");
        char line[1024];
        int shown = 0;
        while (f && fgets(line, sizeof line, f))
            if (line[0] == '|' && shown++ < 40) fputs(line, stdout);
        if (f) fclose(f);
    }
    return st;
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
    if (!st && (cli_seen(opts, "seed") || cli_seen(opts, "seeds"))) {   /* the seeds given: one look at all of them */
        cfg->b.n_seeds = prm.n_seeds;
        memcpy(cfg->b.seeds, prm.seeds, sizeof cfg->b.seeds);
        cfg->b.n_stages = 1;
        cfg->b.stages[0] = prm.n_seeds;
        epar_bench_levels(cfg);
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
 * the choice of each mechanism's scale per lr_family into --out/benchmark-lr/ (experiments/benchmark/benchmark.c) */
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
        struct epar_bench_sched s = sched_of(c, jobs);
        struct epar_bench_plan plan = {0};
        snprintf(dirs[k], sizeof dirs[k], "%s/x%g", c->out, scales->v[k]);
        dp[k] = dirs[k];
        s.out = dirs[k];
        cfg->lr_scale = scales->v[k];
        cli_progress(c, "benchmark: learning-rate study, scale %g (%d of %d) into %s/", scales->v[k], k + 1, scales->n,
                     dirs[k]);
        char root[4300];
        snprintf(root, sizeof root, "%.4190s/benchmark", dirs[k]);
        struct epar_bench_stopped stopped = {0, 0};
        if (!(st = epar_bench_plan(cfg, &plan))) st = epar_bench_sched_first(&s, cfg, &plan, root, 1, 1, &stopped);
        if (stopped.code) {
            epar_exp_benchmark_plan_free(&plan);
            return interrupted(&stopped);
        }
        if (!st) st = write_tables(c, &s, cfg, &plan, root, "single");
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
    int merge_flag = 0, cap = 0, plan_only = 0;
    double lr_scale = 0;
    struct opt_dlist study = {0};   /* --lr-study: its scales */
    struct opt opts[] = {
        {"Grid", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"budget", 'b', OPT_STRING, &budget, "NAME", "smoke (CI, < 1 min), quick (looks at 3, 5 and 8 seeds; --plan estimates the time here) or full (5, 10, 20 seeds: hours)", 0},
        {"tasks", 0, OPT_STRING, &tasks, "LIST", "benchmark task ids (default: all of the protocol's)", 0},
        {"mechanisms", 'm', OPT_STRING, &mechs, "LIST", "trainable catalogue ids (default: the paper table's eight)", 0},
        {"set", 0, OPT_STRING, &set, "M.P=V", "catalogue parameter of a mechanism, as in train and compare, e.g. rope.base=20000 (repeatable)", 0},
        {"lr-scale", 0, OPT_DOUBLE, &lr_scale, "X", "every cell at the budget's lr times X instead of its mechanism's tuned scale (the learning-rate study)", 0},
        {"lr-study", 0, OPT_DLIST, &study, "LIST", "the learning-rate study: the grid at each scale (one of them 1) into --out/x<scale>/, then each mechanism's scale per lr_family into --out/benchmark-lr/", 0},
        {"shard", 0, OPT_STRING, &shard, "K/N", "run only the cells k with k mod N = K-1 (no tables; gather with --merge)", 0},
        {"merge", 0, OPT_FLAG, &merge_flag, "DIR...", "gather the cells of these --out folders into --out, then write the tables (and run the later looks here)", 0},
        {"cap", 0, OPT_INT, &cap, "N", "one more look of the staged grid at N seeds (every look's level is then the audit's over one more look; finished cells are reused)", 0},
        {"plan", 0, OPT_FLAG, &plan_only, NULL, "print the looks, their cells, the claims each feeds and the estimated time; train nothing", 0},
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
    if (cli_seen(opts, "cap")) {   /* one more look: the pool grows by the seeds after the last when it is too small */
        int last = cfg.b.stages[cfg.b.n_stages - 1];
        if (cap <= last || cap > EPAR_MAX_SEEDS || cfg.b.n_stages >= EPAR_BENCH_MAX_STAGES || cli_seen(opts, "seed") ||
            cli_seen(opts, "seeds")) {
            epar_protocol_free(&proto);
            mpi_finish();
            return cli_usage_error("invalid value for --cap: '%d' (expected more seeds than the last look's %d, at most "
                                   "%d, and no --seed/--seeds)", cap, last, EPAR_MAX_SEEDS);
        }
        for (int k = cfg.b.n_seeds; k < cap; k++) cfg.b.seeds[k] = cfg.b.seeds[k - 1] + 1;
        if (cap > cfg.b.n_seeds) cfg.b.n_seeds = cap;
        cfg.b.stages[cfg.b.n_stages++] = cap;
        epar_bench_levels(&cfg);
    }
    if (cli_seen(opts, "lr-study")) {
        rc = lr_study(&c, &cfg, &study, cli_seen(opts, "lr-scale") || merging || shard);
        epar_protocol_free(&proto);
        mpi_finish();
        return rc;
    }
    int jobs = c.jobs > 0 ? c.jobs : omp_get_max_threads();
    int st = EPAR_OK;
    struct epar_bench_sched s = sched_of(&c, jobs);
    s.rank = rank;
    s.size = size;
    s.sync = mpi_sync;
    s.sync_ctx = &size;
    snprintf(cfg.cache_dir, sizeof cfg.cache_dir, "%s/train/data", c.out);
    static struct epar_bench_cfg first;   /* the first look: the whole grid at its first seeds */
    first = cfg;
    first.b.n_seeds = cfg.b.stages[0];
    char root[4300];
    snprintf(root, sizeof root, "%s/benchmark", c.out);
    if (!st) st = epar_bench_plan(&first, &plan);
    if (!st && plan_only) {
        st = epar_bench_stage_plan(&s, &cfg, &first, &plan, &proto, root);
        goto done;
    }
    if (st) goto done;
    /* staging folders a killed run left, of its cells (cells/<task>/<mechanism>/seed-<s>.tmp-...) and of its tables
     * (benchmark.tmp-...: killed while writing them), and a corpus cache file it was writing (train/data): a folder
     * another process (a shard, an MPI rank) is writing holds its lock and stays (lib/outdir.h) */
    int swept = epar_out_sweep(root, 3) + epar_out_sweep_section(c.out, "benchmark");
    int files = epar_out_sweep_files(cfg.cache_dir);
    if (swept) cli_progress(&c, "benchmark: removed %d staging folder(s) left by a killed run", swept);
    if (files) cli_progress(&c, "benchmark: removed %d temp file(s) left by a killed run in %s", files, cfg.cache_dir);

    if (merging) {
        st = epar_bench_sched_merge(&s, &first, &plan, root, merge, n_merge);
    } else {
        struct epar_bench_stopped stopped = {0, 0};
        st = epar_bench_sched_first(&s, &first, &plan, root, K, N, &stopped);
        if (stopped.code) {
            epar_exp_benchmark_plan_free(&plan);
            epar_protocol_free(&proto);
            return interrupted(&stopped);
        }
        if (!st && N > 1 && size == 1 && !c.quiet)   /* under mpirun rank 0 writes the tables instead */
            printf("benchmark: shard %d/%d wrote its %d cells under %s/cells/; gather every shard with\n"
                   "  epar benchmark --budget %s --merge DIR... --out DIR (same options)\n",
                   K, N, plan.n, root, cfg.b.name);
    }
    if (size > 1) {
        st = mpi_sync(st, &size);
        N = 1;   /* rank 0 writes the tables below; the others wait for them (the later looks) or stop here */
        if (rank && cfg.b.n_stages == 1) goto done;
    }
    if (!st && N == 1 && !rank)
        st = write_tables(&c, &s, &first, &plan, root, merging ? "merge" : size > 1 ? "mpi" : "single");
    if (size > 1 && cfg.b.n_stages > 1) st = mpi_sync(st, &size);   /* the other ranks wait for the first look's tables */
    if (!st && N == 1 && cfg.b.n_stages > 1) {   /* the later looks: every rank judges, the ranks share the cells */
        struct epar_bench_stopped stopped = {0, 0};
        st = epar_bench_stage_looks(&s, &cfg, &first, &plan, &proto, root, &stopped);
        if (stopped.code) {
            epar_exp_benchmark_plan_free(&plan);
            epar_protocol_free(&proto);
            mpi_finish();
            return interrupted(&stopped);
        }
    }
done:
    epar_exp_benchmark_plan_free(&plan);
    epar_protocol_free(&proto);
    mpi_finish();
    return st ? cli_fail(st) : 0;
}
