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
#include "experiments/benchmark/bench_extrap.h"
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

/* ---- the staged grid (experiments/benchmark/bench_stage.h, docs/STAGED.md) ---- */

struct trained {                /* a trained claim through the looks */
    json_t *claim;              /* the protocol's */
    const char *id;
    int look, seeds, families, open;
    enum epar_audit_verdict verdict;
    double seeds_needed;
    char root[320];             /* its tables' output root, relative to --out ("": the first look's) */
};

/* A later look trains a claim's cells only when the claim can close by the cap: open, and its seeds needed at the
 * observed spread (lib/audit's seeds_needed) at most the cap. A claim that would need more (or that no seed count
 * decides at its observed mean) stays open at the seeds it has and its note says the --cap that would close it.
 * Stopping for futility only ever withholds a decision, so it spends no error rate (docs/STAGED.md). */
static int extends(const struct trained *t, int cap, int all_open)
{
    return t->open && (all_open || (isfinite(t->seeds_needed) && t->seeds_needed <= cap));
}

/* judge claims (a JSON array) on the tables under out_root at the look's level; r[i] from row i */
static int judge(json_t *arr, const char *out_root, double level, json_t *eq, struct trained *const *r)
{
    struct epar_audit a;
    struct epar_audit_ctx ctx = {out_root, level, NULL, 0, eq, NULL};
    int st = epar_audit_run(arr, &ctx, &a);
    for (size_t i = 0; !st && i < a.n; i++) {
        r[i]->verdict = a.rows[i].verdict;
        r[i]->open = a.rows[i].seeds_help && r[i]->families > 0;
        r[i]->seeds_needed = a.rows[i].seeds_needed;
    }
    epar_audit_free(&a);
    return st;
}

/* stages.json: the looks, and each trained claim's look, seeds, verdict, folder and level (run-all's audit reads it) */
static int write_stages(const char *out, const struct epar_bench_cfg *cfg, const struct trained *tc, int n,
                        const int *cells, const int *open_at, int looks_run, int n_cells, double tokens, int decided)
{
    json_t *looks = json_array(), *claims = json_object(), *stages = json_array();
    for (int k = 0; k < cfg->b.n_stages; k++) json_array_append_new(stages, json_integer(cfg->b.stages[k]));
    for (int k = 0; k < looks_run; k++)
        json_array_append_new(looks, json_pack("{s:i, s:i, s:i, s:i}", "look", k + 1, "seeds", cfg->b.stages[k],
                                               "cells_read", cells[k], "open_after", open_at[k]));
    for (int i = 0; i < n; i++) {
        const struct trained *t = &tc[i];
        json_t *o = json_pack("{s:i, s:i, s:s, s:s, s:f, s:b, s:i}", "look", t->look, "seeds", t->seeds, "verdict",
                              epar_audit_verdict_name(t->verdict), "root", t->root, "level", cfg->level, "open", t->open,
                              "cells", t->families);
        json_object_set_new(o, "seeds_needed", isfinite(t->seeds_needed) && t->families > 0
                                                   ? json_integer((json_int_t)t->seeds_needed) : json_null());
        json_object_set_new(claims, t->id, o);
    }
    json_t *doc = json_pack("{s:s, s:s, s:o, s:f, s:f, s:s, s:o, s:o}", "written_by", "epar benchmark", "budget",
                            cfg->b.name, "stages", stages, "audit_level", cfg->audit_level, "look_level", cfg->level,
                            "spending", "Bonferroni over the planned looks: every look at 1 - (1 - audit_level) / looks",
                            "looks", looks, "claims", claims);
    json_object_set_new(doc, "futility", json_string(cfg->b.extend_all_open
                                                     ? "none (extend_all_open): a later look adds seeds to every open claim"
                                                     : "a later look adds seeds to an open claim only when its "
                                                       "seeds_needed at the observed spread is at most the cap"));
    json_object_set_new(doc, "cells", json_integer(n_cells));
    json_object_set_new(doc, "trained_tokens", json_real(tokens));
    json_object_set_new(doc, "decided_trained_claims", json_integer(decided));
    char path[4400];
    epar_bench_stage_path(out, path, sizeof path);
    char *text = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(doc);
    if (!text) return epar_err_set(EPAR_ENOMEM, "out of memory writing stages.json");
    struct epar_out_file w;
    FILE *f = epar_out_fopen(&w, path);
    int st = f ? EPAR_OK : EPAR_EIO;
    if (f) {
        fputs(text, f);
        fputc('\n', f);
        st = epar_out_fclose(&w);
    }
    free(text);
    return st;
}

/* a later look: the grid of each of its claims' own cells at the look's seeds, and their cells once each as jobs */
struct look {
    int n, nj, cap;
    struct epar_bench_cfg *sub;         /* n: claim i's grid */
    struct epar_bench_plan *plans;
    struct epar_bench_job *jobs;
    char (*dirs)[512];                  /* the jobs' cell folders */
};

static void look_free(struct look *L)
{
    for (int i = 0; L->plans && i < L->n; i++) epar_exp_benchmark_plan_free(&L->plans[i]);
    free(L->sub); free(L->plans); free(L->jobs); free(L->dirs);
    memset(L, 0, sizeof *L);
}

static int look_collect(const struct epar_bench_cfg *full, json_t *const *claims, int n, int S, struct look *L)
{
    memset(L, 0, sizeof *L);
    unsigned char (*fam)[EPAR_MECH_COUNT] = malloc(sizeof(unsigned char[EPAR_BENCH_MAX_TASKS][EPAR_MECH_COUNT]));
    L->sub = calloc((size_t)n + 1, sizeof *L->sub);
    L->plans = calloc((size_t)n + 1, sizeof *L->plans);
    int st = fam && L->sub && L->plans ? EPAR_OK : epar_err_set(EPAR_ENOMEM, "out of memory");
    for (int j = 0; !st && j < n; j++) {
        epar_bench_stage_families(full, claims[j], fam);
        if ((st = epar_bench_stage_restrict(full, fam, S, &L->sub[j])) || (st = epar_bench_plan(&L->sub[j], &L->plans[j])))
            break;
        L->n = j + 1;
        for (int k = 0; !st && k < L->plans[j].n; k++) {   /* its cells, once each */
            char d[512];
            epar_exp_benchmark_cell_dir(&L->sub[j], &L->plans[j].cells[k], d, sizeof d);
            int seen = 0;
            for (int q = 0; q < L->nj && !seen; q++) seen = !strcmp(L->dirs[q], d);
            if (seen) continue;
            if (L->nj == L->cap) {
                int cap = L->cap ? 2 * L->cap : 256;
                struct epar_bench_job *nj = realloc(L->jobs, (size_t)cap * sizeof *nj);
                if (nj) L->jobs = nj;
                char (*nd)[512] = nj ? realloc(L->dirs, (size_t)cap * sizeof *nd) : NULL;
                if (nd) L->dirs = nd;
                if (!nj || !nd) {
                    st = epar_err_set(EPAR_ENOMEM, "out of memory");
                    break;
                }
                L->cap = cap;
            }
            L->jobs[L->nj] = (struct epar_bench_job){&L->sub[j], &L->plans[j], k};
            snprintf(L->dirs[L->nj++], sizeof L->dirs[0], "%s", d);
        }
    }
    free(fam);
    return st;
}

/* the trained tokens of the cells (cell.json "tokens"), each cell once across the looks: seen holds the folders counted */
struct counted {
    int n, cap;
    char (*dir)[512];
    double tokens;
};

static void count_cell(struct counted *k, const struct epar_bench_cfg *cfg, const struct epar_bench_cell *cell,
                       const char *root)
{
    char d[512], path[4800];
    epar_exp_benchmark_cell_dir(cfg, cell, d, sizeof d);
    for (int i = 0; i < k->n; i++)
        if (!strcmp(k->dir[i], d)) return;
    if (k->n == k->cap) {
        int cap = k->cap ? 2 * k->cap : 1024;
        char (*nd)[512] = realloc(k->dir, (size_t)cap * sizeof *nd);
        if (!nd) return;
        k->dir = nd;
        k->cap = cap;
    }
    snprintf(k->dir[k->n++], sizeof k->dir[0], "%s", d);
    snprintf(path, sizeof path, "%s/%s/cell.json", root, d);
    json_t *doc = json_load_file(path, 0, NULL);
    double t = json_number_value(json_object_get(doc, "tokens"));
    if (isfinite(t)) k->tokens += t;
    json_decref(doc);
}

static int ranks_sync(const struct epar_bench_sched *s, int st)
{
    return s->sync ? s->sync(st, s->sync_ctx) : st;
}

/* the looks after the first (its tables written): each open claim judged again on its own cells at the next look's
 * seeds, until none is open or the cap; then stages.json and the claims still open with what would close them */
static int staged(const struct epar_bench_sched *s, const struct epar_bench_cfg *full, const struct epar_bench_cfg *first,
                  const struct epar_bench_plan *plan1, const struct epar_protocol *proto, const char *root,
                  struct epar_bench_stopped *stopped)
{
    const int rank = s->rank;
    json_t *claims = json_object_get(proto->root, "claims"), *cl;
    size_t ci;
    int n = 0, st = EPAR_OK, looks_run = 1;
    struct trained *tc = calloc(json_array_size(claims) + 1, sizeof *tc);
    struct trained **ptr = calloc(json_array_size(claims) + 1, sizeof *ptr);
    unsigned char (*fam)[EPAR_MECH_COUNT] = malloc(sizeof(unsigned char[EPAR_BENCH_MAX_TASKS][EPAR_MECH_COUNT]));
    json_t *arr = json_array();
    int cells[EPAR_BENCH_MAX_STAGES] = {0}, open_at[EPAR_BENCH_MAX_STAGES] = {0};
    json_t *eq = NULL;
    if (!tc || !ptr || !fam || !arr) st = epar_err_set(EPAR_ENOMEM, "out of memory");
    if (!st) st = epar_audit_equivalence(proto->root, proto->path, &eq);
    json_array_foreach(claims, ci, cl) {
        if (st || !epar_bench_stage_trained(cl)) continue;
        struct trained *t = &tc[n];
        t->claim = cl;
        t->id = json_string_value(json_object_get(cl, "id"));
        t->look = 1;
        t->seeds = full->b.stages[0];
        t->families = epar_bench_stage_families(full, cl, fam);
        ptr[n++] = t;
        json_array_append(arr, cl);
    }
    if (!st) st = judge(arr, s->out, full->level, eq, ptr);
    for (int i = 0; i < n; i++) open_at[0] += tc[i].open;
    cells[0] = plan1->n;
    struct counted cnt = {0, 0, NULL, 0};
    for (int k = 0; k < plan1->n; k++) count_cell(&cnt, first, &plan1->cells[k], root);
    int cap = full->b.stages[full->b.n_stages - 1];
    for (int look = 2; !st && look <= full->b.n_stages; look++) {
        int S = full->b.stages[look - 1], no = 0;
        for (int i = 0; i < n; i++) no += extends(&tc[i], cap, full->b.extend_all_open);
        if (!no) break;
        struct trained **which = calloc((size_t)no, sizeof *which);
        json_t **cls = calloc((size_t)no, sizeof *cls);
        struct look L = {0};
        if (!which || !cls) st = epar_err_set(EPAR_ENOMEM, "out of memory");
        for (int i = 0, j = 0; !st && i < n; i++)
            if (extends(&tc[i], cap, full->b.extend_all_open)) which[j] = &tc[i], cls[j++] = tc[i].claim;
        if (!st) st = look_collect(full, cls, no, S, &L);
        int nj = L.nj;
        char look_s[32], what[200];
        snprintf(look_s, sizeof look_s, "look %d/%d: ", look, full->b.n_stages);
        snprintf(what, sizeof what, "%d open claim(s) read %d cells at %d seeds", no, nj, S);
        if (!st) st = epar_bench_sched_run(s, L.jobs, nj, root, rank + 1, s->size, look_s, what, stopped);
        st = ranks_sync(s, st);   /* every rank's cells of the look are done */
        cells[look - 1] = nj;
        for (int q = 0; !st && !stopped->code && q < nj; q++) count_cell(&cnt, L.jobs[q].cfg, &L.jobs[q].plan->cells[L.jobs[q].k], root);
        for (int j = 0; !st && !stopped->code && j < no; j++) {
            struct epar_bench_sched sub = *s;   /* its tables quietly, not rendered */
            char out[4400];
            snprintf(which[j]->root, sizeof which[j]->root, "benchmark/stages/%d/%s", look, which[j]->id);
            snprintf(out, sizeof out, "%s/%s", s->out, which[j]->root);
            sub.out = out;
            sub.progress = NULL;
            sub.no_render = 1;
            if (!rank && epar_out_mkdir_p(out) != 0) st = epar_err_set(EPAR_EIO, "cannot create '%s': %s", out, strerror(errno));
            if (!st && !rank) st = epar_bench_sched_tables(&sub, &L.sub[j], &L.plans[j], root, "staged");
            st = ranks_sync(s, st);   /* rank 0's tables written: every rank judges them */
            json_t *one = json_array();
            json_array_append(one, which[j]->claim);
            which[j]->look = look;
            which[j]->seeds = S;
            if (!st) st = judge(one, out, full->level, eq, &which[j]);
            json_decref(one);
        }
        look_free(&L);
        free(which);
        free(cls);
        if (stopped->code) break;
        looks_run = look;
        for (int i = 0; i < n; i++) open_at[look - 1] += tc[i].open;
    }
    int decided = 0;
    for (int i = 0; i < n; i++) decided += tc[i].verdict <= EPAR_AUDIT_ILL_POSED && tc[i].verdict != EPAR_AUDIT_INCONCLUSIVE;
    if (!st && !stopped->code && !rank)
        st = write_stages(s->out, full, tc, n, cells, open_at, looks_run, cnt.n, cnt.tokens, decided);
    if (!st && !stopped->code && !s->quiet) {
        int open = 0, stuck = 0, here = 0, most = 0, beyond = 0;
        for (int i = 0; i < n; i++) {
            int undecided = tc[i].verdict == EPAR_AUDIT_INCONCLUSIVE || tc[i].verdict == EPAR_AUDIT_NEEDS_SEEDS;
            open += tc[i].open;
            beyond += tc[i].open && !extends(&tc[i], cap, full->b.extend_all_open) && tc[i].seeds < cap;
            stuck += undecided && !tc[i].open;
            here += tc[i].verdict == EPAR_AUDIT_NOT_HERE || tc[i].verdict == EPAR_AUDIT_STALE;
            if (tc[i].open && isfinite(tc[i].seeds_needed) && tc[i].seeds_needed <= EPAR_MAX_SEEDS &&
                tc[i].seeds_needed > most)
                most = (int)tc[i].seeds_needed;
        }
        printf("benchmark: staged grid, %d look(s) of %d, each at level %.4g: %d trained claims: %d decided, %d open (cap "
               "%d seeds), %d open that more seeds cannot decide (saturated, unlearned or not seed-dependent), "
               "%d not measured here\n", looks_run, full->b.n_stages, full->level, n, decided, open, cap, stuck, here);
        if (beyond)
            printf("benchmark: %d of the open claims stopped before the cap: at the observed spread they need more seeds "
                   "than the cap (futility: no error rate spent)\n", beyond);
        printf("benchmark: %d cells, %.1f M trained tokens: %.2f decided trained claims per million trained tokens\n",
               cnt.n, cnt.tokens / 1e6, cnt.tokens > 0 ? decided / (cnt.tokens / 1e6) : NAN);
        for (int i = 0; i < n; i++) {
            if (!tc[i].open) continue;
            if (isfinite(tc[i].seeds_needed))
                printf("  open: %s at %d seeds; about %.0f seeds would decide it at the observed spread\n", tc[i].id,
                       tc[i].seeds, tc[i].seeds_needed);
            else
                printf("  open: %s at %d seeds; the seeds that would decide it are not known (its mean on the "
                       "threshold, over 1000 seeds, or an n that counts more than seeds)\n", tc[i].id, tc[i].seeds);
        }
        if (open && most > cap)
            printf("  to add the seeds (every finished cell is reused; a look more, so every look's level is the audit's "
                   "over one more): epar benchmark --budget %s --cap %d   (or: mpirun -np N epar-mpi benchmark --budget %s "
                   "--cap %d)\n", full->b.name, most, full->b.name, most);
    }
    json_decref(arr);
    free(tc); free(ptr); free(fam); free(cnt.dir);
    return st;
}

/* --plan: each look's cells, the claims each (task, mechanism) feeds, and the estimated time here; nothing trained */
static int print_plan(const struct epar_bench_sched *s, const struct epar_bench_cfg *full, const struct epar_bench_cfg *first,
                      const struct epar_bench_plan *plan, const struct epar_protocol *proto, const char *root)
{
    const int njobs = s->njobs;
    json_t *claims = json_object_get(proto->root, "claims"), *cl;
    size_t ci;
    unsigned char (*fam)[EPAR_MECH_COUNT] = calloc(1, sizeof(unsigned char[EPAR_BENCH_MAX_TASKS][EPAR_MECH_COUNT]));
    if (!fam) {
        return epar_err_set(EPAR_ENOMEM, "out of memory");
    }
    int nj, np, have, redo, *pending = malloc(((size_t)plan->n + 1) * sizeof *pending), trained = 0, fixed = 0;
    struct epar_bench_job *jobs = epar_bench_sched_jobs(first, plan, &nj);
    double w, est = 0;
    if (!jobs || !pending) {
        free(fam); free(jobs); free(pending);
        return epar_err_set(EPAR_ENOMEM, "out of memory");
    }
    epar_bench_sched_pending(jobs, nj, root, 1, 1, njobs, pending, &np, &have, &redo, &w, &est);
    char e[32];
    epar_bench_sched_fmt_time(est, e, sizeof e);
    printf("benchmark --budget %s: %d look(s) at ", full->b.name, full->b.n_stages);
    for (int k = 0; k < full->b.n_stages; k++) printf("%s%d", k ? ", " : "", full->b.stages[k]);
    printf(" seeds; every look judges at level %.4g (the audit's %.4g over %d look(s), Bonferroni)\n", full->level,
           full->audit_level, full->b.n_stages);
    printf("look 1: every cell at %d seeds: %d cells (%d done already), %d to train at %d at once: estimated %s here\n",
           first->b.n_seeds, plan->n, have, np, njobs, e);
    printf("the claims each task and mechanism feeds (look 1 trains them all; a later look only those of open claims):\n");
    for (int t = 0; t < full->n_tasks + full->n_study; t++)
        for (int m = 0; m < full->n_mech + full->extrap.n_extra; m++) {
            if (!epar_bx_has_cell(full, t, m)) continue;
            int any = 0;
            json_array_foreach(claims, ci, cl) {
                if (!epar_bench_stage_trained(cl) || !epar_bench_stage_families(full, cl, fam) || !fam[t][m]) continue;
                const char *id = json_string_value(json_object_get(cl, "id"));
                if (any++) printf(", %s", id);
                else printf("  %s / %s: %s", full->tasks[t].id, epar_bench_mech_name(full, m), id);
            }
            if (any) putchar('\n');
        }
    json_array_foreach(claims, ci, cl) {
        if (!epar_bench_stage_trained(cl)) continue;
        trained++;
        fixed += !epar_bench_stage_families(full, cl, fam);
    }
    printf("%d trained claims; %d read what more seeds do not change (the cost cell, the first seed's interventions) and "
           "are judged at look 1 only\n", trained, fixed);
    json_t **ext = calloc(json_array_size(claims) + 1, sizeof *ext);
    int next = 0;
    json_array_foreach(claims, ci, cl) if (ext && epar_bench_stage_trained(cl) && epar_bench_stage_families(full, cl, fam))
        ext[next++] = cl;
    for (int look = 2; ext && look <= full->b.n_stages; look++) {   /* at most: every claim still open */
        struct look L;
        int st = look_collect(full, ext, next, full->b.stages[look - 1], &L);
        int *spn = st ? NULL : malloc(((size_t)L.nj + 1) * sizeof *spn);
        if (spn) {
            est = 0;
            epar_bench_sched_pending(L.jobs, L.nj, root, 1, 1, njobs, spn, &np, &have, &redo, &w, &est);
            epar_bench_sched_fmt_time(est, e, sizeof e);
            printf("look %d: the cells of the claims still open at %d seeds: at most %d cells (%d done already), at most "
                   "%s here\n", look, full->b.stages[look - 1], L.nj, have, e);
        }
        free(spn);
        look_free(&L);
        if (st) break;
    }
    free(ext);
    free(fam); free(jobs); free(pending);
    return EPAR_OK;
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
        st = print_plan(&s, &cfg, &first, &plan, &proto, root);
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
        st = staged(&s, &cfg, &first, &plan, &proto, root, &stopped);
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
