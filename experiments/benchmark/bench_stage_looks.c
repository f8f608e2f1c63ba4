/* The staged grid's looks (bench_stage.h, docs/STAGED.md): after the first look's tables, each open claim judged again
 * on its own cells at the next look's seeds (trained by the scheduler, bench_sched.h) until none is open or the cap;
 * stages.json; and --plan, the looks and their estimated time without training. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "lib/outdir.h"
#include "experiments/benchmark/bench_extrap.h"
#include "experiments/benchmark/bench_sched.h"
#include "experiments/benchmark/bench_stage.h"
#include "experiments/benchmark/benchmark.h"

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

int epar_bench_stage_looks(const struct epar_bench_sched *s, const struct epar_bench_cfg *full,
                           const struct epar_bench_cfg *first, const struct epar_bench_plan *plan1,
                           const struct epar_protocol *proto, const char *root, struct epar_bench_stopped *stopped)
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

int epar_bench_stage_plan(const struct epar_bench_sched *s, const struct epar_bench_cfg *full,
                          const struct epar_bench_cfg *first, const struct epar_bench_plan *plan,
                          const struct epar_protocol *proto, const char *root)
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
