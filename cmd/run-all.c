/* epar run-all: every experiment of the command table with the protocol, then the claims audit
 * (output/report/, output/index.html); --check / --update-golden: the regression pins of tests/golden/. */
#define _XOPEN_SOURCE 700
#include <math.h>
#include <stdio.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/audit.h"
#include "lib/golden.h"
#include "lib/regress.h"
#include "lib/csvout.h"
#include "lib/err.h"
#include "lib/outdir.h"
#include "lib/runrec.h"
#include "experiments/benchmark/bench_stage.h"
#include "experiments/common.h"
#include "experiments/analysis/experiment.h"
#include "experiments/report/report.h"
#include "cli.h"

#define MAX_EXPERIMENTS 32

/* ---- progress: a bar on a terminal, plain lines otherwise ---- */

static void progress(const struct cli_common *c, int tty, int i, int n, const char *what)
{
    if (c->quiet) return;
    if (!tty) {
        fprintf(stderr, "epar: run-all: [%d/%d] %s\n", i + 1, n, what);
        return;
    }
    int width = 30, done = n ? (i * width) / n : width;
    fputs("\r\033[Kepar: run-all [", stderr);
    for (int k = 0; k < width; k++) fputc(k < done ? '#' : '.', stderr);
    fprintf(stderr, "] %d/%d %s", i, n, what);
    if (i == n) fputc('\n', stderr);
    fflush(stderr);
}

/* ---- running the experiments ---- */

struct runset {
    const char *ran[MAX_EXPERIMENTS + 1], *failed[MAX_EXPERIMENTS + 1];
    int n_ran, n_failed, worst;
};

/* pinned: the runs of --check / --update-golden: no figures, and compare times its dense and structured kernels
 * at L = 256 only (PINNED_SPEED_LENGTH), since no wall-clock number is pinned and the protocol's lengths (up to
 * 4096) would make every check pay seconds of timing */
#define PINNED_SPEED_LENGTH "256"
static int run_experiments(const struct cli_common *c, const struct opt *opts, const char *protocol,
                           const char *out, int pinned, int tty, struct runset *rs)
{
    char *fwd[32];
    int nf = 0;
    char jobs[32], seed[32], seeds[1024] = "";
    if (protocol) { fwd[nf++] = "--protocol"; fwd[nf++] = (char *)protocol; }
    if (c->preset) { fwd[nf++] = "--preset"; fwd[nf++] = (char *)c->preset; }
    fwd[nf++] = "--out";
    fwd[nf++] = (char *)out;
    if (c->no_render || pinned) fwd[nf++] = "--no-render";
    fwd[nf++] = "--quiet"; /* run-all shows its own progress; each experiment's summary is in its files */
    if (cli_seen(opts, "jobs")) { snprintf(jobs, sizeof jobs, "%d", c->jobs); fwd[nf++] = "--jobs"; fwd[nf++] = jobs; }
    if (cli_seen(opts, "seed")) { snprintf(seed, sizeof seed, "%d", c->seed); fwd[nf++] = "--seed"; fwd[nf++] = seed; }
    if (cli_seen(opts, "seeds")) {
        for (int i = 0; i < c->seeds.n_seeds; i++)
            snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), "%s%lu", i ? "," : "", c->seeds.seeds[i]);
        fwd[nf++] = "--seeds";
        fwd[nf++] = seeds;
    }
    int n = 0;
    for (const struct cmd_entry *e = epar_commands; e->name; e++)
        if (e->exp) n++;
    memset(rs, 0, sizeof *rs);
    int i = 0;
    for (const struct cmd_entry *e = epar_commands; e->name; e++) {
        if (!e->exp || i >= MAX_EXPERIMENTS) continue;
        char label[128];
        snprintf(label, sizeof label, "%s (%s)", e->name, e->section);
        progress(c, tty, i, n, label);
        char *av[40];
        int ac = 0;
        av[ac++] = (char *)e->name;
        for (int k = 0; k < nf; k++) av[ac++] = fwd[k];
        if (pinned && !strcmp(e->name, "compare")) {
            av[ac++] = "--speed-lengths";
            av[ac++] = PINNED_SPEED_LENGTH;
        }
        av[ac] = NULL;
        cli_current_command = e;
        int r = e->fn(ac, av);
        i++;
        if (r) {
            if (tty && !c->quiet) fputc('\n', stderr);
            fprintf(stderr, "epar: run-all: %s failed (exit %d)\n", e->name, r);
            rs->failed[rs->n_failed++] = e->name;
            if (r > rs->worst) rs->worst = r;
            if (r == 2) return r; /* bad options: the same for every experiment */
        } else {
            rs->ran[rs->n_ran++] = e->name;
        }
    }
    if (tty) progress(c, tty, n, n, "experiments done");
    return 0;
}

/* ---- the audit ---- */

/* What each experiment folder's run.json must say to be this run's input: the protocol's hash, the preset and
 * seeds run-all resolves for that experiment, this epar's version, and no command-line changes. */
struct expectations {
    struct epar_audit_expect e[MAX_EXPERIMENTS];
    struct epar_params prm[MAX_EXPERIMENTS];
    char dirs[MAX_EXPERIMENTS][64];
    int n;
};

static int expectations(struct expectations *x, const struct epar_protocol *proto, const struct cli_common *c,
                        const struct opt *opts)
{
    x->n = 0;
    for (const struct cmd_entry *e = epar_commands; e->name && x->n < MAX_EXPERIMENTS; e++) {
        if (!e->exp) continue;
        struct epar_params *p = &x->prm[x->n];
        int st = epar_protocol_params(proto, e->name, c->preset, p);
        if (st) return st;
        if (cli_seen(opts, "seed")) { p->n_seeds = 1; p->seeds[0] = (unsigned long)c->seed; }
        if (cli_seen(opts, "seeds")) { p->n_seeds = c->seeds.n_seeds; memcpy(p->seeds, c->seeds.seeds, sizeof p->seeds); }
        snprintf(x->dirs[x->n], sizeof x->dirs[x->n], "%s", e->exp->folder);
        x->e[x->n] = (struct epar_audit_expect){x->dirs[x->n], proto->hash, p->preset, p->n_seeds, p->seeds,
                                                EPAR_VERSION};
        x->n++;
    }
    /* the benchmark (not an experiment of run-all: it trains for minutes to hours) is audited when its folder
     * exists (absent, its claims are "not reproducible here", never stale): it must come from this protocol, preset
     * and epar; its seeds are the budget's */
    if (x->n < MAX_EXPERIMENTS && epar_protocol_section(proto, "benchmark") &&
        epar_runrec_exists(c->out ? c->out : "output", "benchmark")) {
        struct epar_params *p = &x->prm[x->n];
        int st = epar_protocol_params(proto, "benchmark", c->preset, p);
        if (st) return st;
        snprintf(x->dirs[x->n], sizeof x->dirs[x->n], "benchmark");
        x->e[x->n] = (struct epar_audit_expect){x->dirs[x->n], proto->hash, p->preset, 0, NULL, EPAR_VERSION};
        x->n++;
    }
    return EPAR_OK;
}

static int folders_from_table(struct epar_report_folder *f, char labels[][160], int max)
{
    int n = 0;
    for (const struct cmd_entry *e = epar_commands; e->name && n < max; e++) {
        snprintf(labels[n], 160, "%s: epar %s", e->section, e->name);
        f[n].dir = cli_command_folder(e);
        f[n].label = labels[n];
        n++;
    }
    return n;
}

/* --audit-only needs runs to audit: at least one experiment folder with its run.json */
static int any_run(const char *out, const struct expectations *x)
{
    for (int i = 0; i < x->n; i++)
        if (epar_runrec_exists(out, x->dirs[i])) return 1;
    return 0;
}

/* the staged benchmark's record (benchmark/stages.json, experiments/benchmark/bench_stage_looks.c): each trained claim is judged on the tables
 * of the look that decided it (or the last), at the per-look level; NULL without one (a fixed design) */
static json_t *staged_overrides(const char *out, json_t *doc)
{
    json_t *ov = NULL, *e;
    const char *id;
    json_object_foreach(json_object_get(doc, "claims"), id, e) {
        const char *rel = json_string_value(json_object_get(e, "root"));
        if (!ov) ov = json_object();
        char root[4400];
        snprintf(root, sizeof root, "%s%s%s", out, rel && *rel ? "/" : "", rel && *rel ? rel : "");
        json_object_set_new(ov, id, json_pack("{s:s, s:O}", "root", root, "level", json_object_get(e, "level")));
    }
    return ov;
}

/* a claim still open after the staged grid's looks (at the cap, or stopped before it for futility): what would close
 * it, in its note */
static int staged_notes(json_t *doc, struct epar_audit *a)
{
    json_t *cl = json_object_get(doc, "claims"), *stages = json_object_get(doc, "stages");
    int cap = (int)json_integer_value(json_array_get(stages, json_array_size(stages) - 1));
    const char *budget = json_string_value(json_object_get(doc, "budget"));
    int st = EPAR_OK;
    for (size_t i = 0; cl && budget && i < a->n && !st; i++) {
        struct epar_audit_row *r = &a->rows[i];
        json_t *e = json_object_get(cl, r->id);
        if (!json_is_true(json_object_get(e, "open")) || r->verdict != EPAR_AUDIT_INCONCLUSIVE) continue;
        char add[512];
        int seeds = (int)json_integer_value(json_object_get(e, "seeds"));
        if (isfinite(r->seeds_needed) && r->seeds_needed <= EPAR_MAX_SEEDS)
            snprintf(add, sizeof add, "; open after the staged grid's looks at %d seeds (cap %d): about %.0f seeds would "
                     "decide it at the observed spread: epar benchmark --budget %s --cap %.0f (or mpirun -np N epar-mpi "
                     "benchmark --budget %s --cap %.0f) adds them, reusing every finished cell", seeds, cap,
                     r->seeds_needed, budget, r->seeds_needed, budget, r->seeds_needed);
        else
            snprintf(add, sizeof add, "; open after the staged grid's looks at %d seeds (cap %d): %s", seeds, cap,
                     isfinite(r->seeds_needed) ? "more seeds than epar's pool would be needed at the observed spread"
                                               : "the seeds that would decide it are not known (its mean on the "
                                                 "threshold, over 1000 seeds, or an n that counts more than seeds)");
        size_t l = strlen(r->note), la = strlen(add);
        char *nn = realloc(r->note, l + la + 1);
        if (!nn) st = epar_err_set(EPAR_ENOMEM, "out of memory");
        else {
            memcpy(nn + l, add, la + 1);
            r->note = nn;
        }
    }
    return st;
}

static int run_audit(const struct epar_params *prm, struct epar_protocol *proto, const struct expectations *x,
                     const char *out, int no_render, int jobs, const struct runset *rs, struct epar_audit *a)
{
    json_t *claims = json_object_get(proto->root, "claims");
    struct epar_audit_ctx ctx = {out, 0.95, x->e, x->n, NULL, NULL};
    int st = epar_audit_level(proto->root, proto->path, &ctx.level);
    if (!st) st = epar_audit_equivalence(proto->root, proto->path, &ctx.equivalence);
    json_t *stages = epar_bench_stage_record(out);
    if (!st) ctx.overrides = staged_overrides(out, stages);
    if (!st) st = epar_audit_run(claims, &ctx, a);
    if (!st) st = staged_notes(stages, a);
    json_decref(ctx.overrides);
    json_decref(stages);
    if (st) return st;
    struct epar_report_folder folders[MAX_EXPERIMENTS];
    char labels[MAX_EXPERIMENTS][160];
    struct epar_report_info info = {proto->path, proto, prm->preset, EPAR_VERSION, folders, 0, rs->ran,
                                    rs->failed, 0};
    info.n_folders = folders_from_table(folders, labels, MAX_EXPERIMENTS);
    info.figures = !no_render && epar_plot_available();
    struct epar_out o;
    if ((st = epar_out_begin(&o, out, "report"))) return st;
    json_t *ran = json_array(), *failed = json_array(), *verdicts = json_object();
    for (int i = 0; i < rs->n_ran; i++) json_array_append_new(ran, json_string(rs->ran[i]));
    for (int i = 0; i < rs->n_failed; i++) json_array_append_new(failed, json_string(rs->failed[i]));
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++)
        json_object_set_new(verdicts, epar_audit_verdict_name((enum epar_audit_verdict)v), json_integer(a->counts[v]));
    json_t *seeds = json_array();
    for (int i = 0; i < prm->n_seeds; i++) json_array_append_new(seeds, json_integer((json_int_t)prm->seeds[i]));
    /* run.json of the audit: what was audited (the experiments' own run.json hold their parameters) */
    json_t *rj = json_pack("{s:s, s:s, s:o, s:f, s:o, s:o, s:i, s:o, s:i, s:i}", "protocol_hash", proto->hash,
                           "preset", prm->preset, "seeds", seeds, "level", ctx.level, "experiments_run", ran,
                           "experiments_failed", failed, "claims", (int)a->n, "verdicts", verdicts, "spec_problems",
                           a->spec_problems, "stale", a->stale);
    if (!rj) st = epar_err_set(EPAR_ENOMEM, "out of memory building run.json");
    else st = epar_runrec_write(epar_out_path(&o, "run.json"), "run-all", proto->path, NULL, rj);
    if (st || (st = epar_exp_report_write(&o, out, a, &info))) {
        epar_out_abort(&o);
        return st;
    }
    if ((st = epar_exp_finish(&o, no_render, jobs))) return st;
    return epar_exp_report_index(out, a, &info);
}

static void print_counts(const int *cnt)
{
    int first = 1;
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++)
        if (cnt[v]) {
            printf("%s%d %s", first ? "" : ", ", cnt[v], epar_audit_verdict_name((enum epar_audit_verdict)v));
            first = 0;
        }
    putchar('\n');
}

static void print_verdicts(const struct epar_audit *a, const char *out)
{
    printf("audit: %zu claims -> %s/report/claims.csv, %s/report/REPORT.md, %s/index.html\n", a->n, out, out, out);
    struct epar_table *t = epar_audit_section_counts(a);
    for (size_t r = 0; t && r < t->nrows; r++) {
        int cnt[EPAR_AUDIT_VERDICT_COUNT];
        for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++)
            cnt[v] = (int)epar_csv_get(t, r, epar_audit_verdict_key((enum epar_audit_verdict)v));
        printf("  %-20s ", epar_csv_get_str(t, r, "section"));
        print_counts(cnt);
    }
    epar_csv_free(t);
    printf("  %-20s ", "total");
    print_counts(a->counts);
    if (a->counts[EPAR_AUDIT_NOT_HERE])
        printf("  not reproducible here: %d need what epar does not do (training), %d read a file of an experiment "
               "that did not run, %d have a spec to fix\n",
               a->needs, a->missing_files, a->spec_problems);
    for (int v = EPAR_AUDIT_NOT_REPRODUCED; v <= EPAR_AUDIT_STALE; v += EPAR_AUDIT_STALE - EPAR_AUDIT_NOT_REPRODUCED) {
        if (!a->counts[v]) continue;
        printf("  %s:", epar_audit_verdict_name((enum epar_audit_verdict)v));
        int shown = 0;
        for (size_t i = 0; i < a->n; i++)
            if (a->rows[i].verdict == (enum epar_audit_verdict)v && shown++ < 8) printf(" %s", a->rows[i].id);
        if (shown > 8) printf(" ... (%d more in %s/report/claims.csv)", shown - 8, out);
        putchar('\n');
    }
}

/* ---- regression: the runs of lib/golden's harness ---- */

struct pinned_ctx {
    struct cli_common *c;
    const struct opt *opts;
    struct epar_protocol *claims_proto;
    const struct epar_params *prm;
    int tty;
};

/* Run every experiment with protocol `path` into out (no figures), then audit with that protocol's
 * expectations and the claims of the reference protocol. Returns 0 or an exit code. */
static int pinned_run(void *ctxv, const char *path, const char *out)
{
    struct pinned_ctx *p = ctxv;
    struct epar_protocol rp;
    struct expectations x;
    int st = epar_protocol_load(path, &rp);
    if (st) return cli_fail(st);
    if ((st = expectations(&x, &rp, p->c, p->opts))) {
        epar_protocol_free(&rp);
        return cli_fail(st);
    }
    struct runset rs;
    int rc = run_experiments(p->c, p->opts, path, out, 1, p->tty, &rs);
    struct epar_audit a = {0};
    if (!rc && (st = run_audit(p->prm, p->claims_proto, &x, out, 1, p->c->jobs, &rs, &a))) rc = cli_fail(st);
    if (!rc && rs.n_failed) rc = 1;
    epar_audit_free(&a);
    epar_protocol_free(&rp);
    return rc;
}

static int golden(struct cli_common *c, const struct opt *opts, struct epar_protocol *proto,
                  const struct epar_params *prm, const char *gdir, int update, int tty)
{
    struct pinned_ctx ctx = {c, opts, proto, prm, tty};
    struct epar_golden g = {gdir, proto->path, cli_seen(opts, "out") ? c->out : NULL, update, c->quiet};
    int rc = 0, st = epar_golden_check(&g, pinned_run, &ctx, &rc);
    return st ? cli_fail(st) : rc;
}

/* the benchmark as a step of run-all: 'epar benchmark --budget B' into the same output root (its finished cells are
 * reused, so an interrupted run-all resumes); a failure is recorded in rs and the audit goes on (the proxy claims
 * then stay 'not reproducible here'); returns nonzero only for a signal (exit >= 128) */
static int run_benchmark(const struct cli_common *c, const char *budget, struct runset *rs)
{
    char jobs[32];
    snprintf(jobs, sizeof jobs, "%d", c->jobs > 0 ? c->jobs : omp_get_max_threads());
    char *bargv[16] = {"benchmark", "--budget", (char *)budget, "--out", (char *)c->out, "--jobs", jobs};
    int bn = 7;
    if (c->protocol) { bargv[bn++] = "--protocol"; bargv[bn++] = (char *)c->protocol; }
    if (c->preset) { bargv[bn++] = "--preset"; bargv[bn++] = (char *)c->preset; }
    if (c->no_render) bargv[bn++] = "--no-render";
    if (c->quiet) bargv[bn++] = "--quiet";
    bargv[bn] = NULL;
    if (!c->quiet) fprintf(stderr, "epar: run-all: benchmark, budget %s\n", budget);
    int brc = cmd_benchmark(bn, bargv);
    if (brc >= 128) return brc;
    if (brc) {
        fprintf(stderr, "epar: run-all: benchmark failed (exit %d)\n", brc);
        rs->failed[rs->n_failed++] = "benchmark";
    } else {
        rs->ran[rs->n_ran++] = "benchmark";
    }
    return 0;
}

/* stdout: what ran and the verdicts; stderr: warnings about specs that do not fit and stale claims */
static void print_outcome(const struct cli_common *c, int audit_only, const struct runset *rs,
                          const struct epar_audit *a)
{
    if (!c->quiet) {
        if (!audit_only) {
            printf("run-all: %d experiment(s) run, %d failed", rs->n_ran + rs->n_failed, rs->n_failed);
            for (int i = 0; i < rs->n_failed; i++) printf("%s%s", i ? ", " : " (", rs->failed[i]);
            printf("%s\n", rs->n_failed ? ")" : "");
        }
        print_verdicts(a, c->out);
        char banner[1024];
        if (epar_exp_report_banner(c->out, a, banner, sizeof banner)) printf("NOTE: %s\n", banner);
    }
    if (a->spec_problems)
        fprintf(stderr, "epar: run-all: warning: %d claim(s) have a measurement spec that does not fit its file; "
                        "see their notes in %s/report/claims.csv\n",
                a->spec_problems, c->out);
    if (a->stale)
        fprintf(stderr, "epar: run-all: warning: %d claim(s) read results of another run (verdict 'stale'); rerun "
                        "'epar run-all' to audit this protocol's own runs\n", a->stale);
}

int cmd_run_all(int argc, char **argv)
{
    struct cli_common c = {0};
    int check = 0, update = 0, audit_only = 0, no_benchmark = 0;
    const char *budget = "quick";
    const char *gdir = "tests/golden";
    struct opt opts[] = {
        {"Run-all", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"audit-only", 0, OPT_FLAG, &audit_only, NULL, "do not run the experiments: audit the files already in --out", 0},
        {"no-benchmark", 0, OPT_FLAG, &no_benchmark, NULL,
         "skip the trained benchmark (an existing <out>/benchmark/ is still audited); by default run-all runs "
         "'epar benchmark' after the experiments, reusing its finished cells", 0},
        {"benchmark-budget", 0, OPT_STRING, &budget, "NAME",
         "budget of that benchmark: quick (default: looks at 3, 5 and 8 seeds, docs/STAGED.md; epar benchmark --plan estimates the time here), smoke (seconds), full (hours)", 0},
        {"Regression", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"check", 0, OPT_FLAG, &check, NULL,
         "rerun the small fixed-seed runs of --golden and the full protocol (in a temporary folder unless --out), "
         "compare with the pins (numbers of the small runs, verdicts of the full one); exit 1 if one moved", 0},
        {"update-golden", 0, OPT_FLAG, &update, NULL, "rewrite the pins of --golden from those runs (deliberate)", 0},
        {"golden", 0, OPT_STRING, &gdir, "DIR", "regression folder: protocol.json, files.txt, unpinned.txt, pins.csv (default tests/golden)", 0},
        OPTS_COMMON(&c),
        {NULL, 0, OPT_END, NULL, NULL, NULL, 0}};
    int rc = cli_parse("run-all", "[options]", opts, argc, argv);
    if (rc >= 0) return rc;
    if (check && update) return cli_usage_error("'--check' and '--update-golden' cannot be combined");
    if (audit_only && (check || update)) return cli_usage_error("'--audit-only' cannot be combined with '--check' or '--update-golden'");
    if (cli_seen(opts, "benchmark-budget") && (no_benchmark || check || update || audit_only))
        return cli_usage_error("'--benchmark-budget' cannot be combined with '--no-benchmark', '--check', "
                               "'--update-golden' or '--audit-only'");
    if (cli_seen(opts, "golden") && !check && !update) return cli_usage_error("'--golden' needs '--check' or '--update-golden'");
    if ((check || update) && (cli_seen(opts, "seed") || cli_seen(opts, "seeds") || cli_seen(opts, "preset")))
        return cli_usage_error("'--%s' cannot change the pinned runs: their protocol and seeds are fixed (%s/protocol.json "
                               "and the protocol file)", check ? "check" : "update-golden", gdir);

    struct epar_protocol proto;
    struct epar_params prm;
    if ((rc = cli_resolve(&c, opts, "run-all", &proto, &prm))) return rc;
    double level;
    int st = epar_audit_check(json_object_get(proto.root, "claims"), proto.path);
    if (!st) st = epar_audit_level(proto.root, proto.path, &level);
    if (st) {
        epar_protocol_free(&proto);
        return cli_fail(st);
    }
    json_t *bsec = epar_protocol_section(&proto, "benchmark");
    if (bsec && !no_benchmark && !audit_only && !check && !update &&
        !json_object_get(json_object_get(bsec, "budgets"), budget)) {
        const char *near = epar_protocol_nearest_key(json_object_get(bsec, "budgets"), budget);
        cli_usage_error("unknown benchmark budget '%s' (the protocol's experiments.benchmark.budgets)", budget);
        if (near) fprintf(stderr, "hint: did you mean '%s'?\n", near);
        epar_protocol_free(&proto);
        return 2;
    }
    int tty = isatty(STDERR_FILENO);
    if (check || update) {
        rc = golden(&c, opts, &proto, &prm, gdir, update, tty);
        epar_protocol_free(&proto);
        return rc;
    }
    struct expectations x;
    if ((st = expectations(&x, &proto, &c, opts))) {
        epar_protocol_free(&proto);
        return cli_fail(st);
    }
    if (audit_only && !any_run(c.out, &x)) {
        epar_protocol_free(&proto);
        epar_err_set(EPAR_EIO, "nothing to audit in '%s': no experiment has run there", c.out);
        epar_err_hint("run 'epar run-all' (or the experiments) with --out pointing there first");
        return cli_fail(EPAR_EIO);
    }
    struct runset rs;
    memset(&rs, 0, sizeof rs);
    if (!audit_only && (rc = run_experiments(&c, opts, c.protocol, c.out, 0, tty, &rs))) {
        epar_protocol_free(&proto);
        return rc;
    }
    /* a protocol without a benchmark section (tests/golden's) has nothing to train */
    if (!audit_only && !no_benchmark && epar_protocol_section(&proto, "benchmark")) {
        if ((rc = run_benchmark(&c, budget, &rs))) {
            epar_protocol_free(&proto);
            return rc;
        }
        if ((st = expectations(&x, &proto, &c, opts))) {   /* now with the benchmark folder */
            epar_protocol_free(&proto);
            return cli_fail(st);
        }
    }
    struct epar_audit a;
    cli_progress(&c, "run-all: auditing %zu claims", json_array_size(json_object_get(proto.root, "claims")));
    st = run_audit(&prm, &proto, &x, c.out, c.no_render, c.jobs, &rs, &a);
    if (st) {
        epar_audit_free(&a);
        epar_protocol_free(&proto);
        return cli_fail(st);
    }
    print_outcome(&c, audit_only, &rs, &a);
    epar_audit_free(&a);
    epar_protocol_free(&proto);
    return rs.n_failed ? 1 : 0;
}
