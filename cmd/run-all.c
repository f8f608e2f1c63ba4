/* epar run-all: every experiment of the command table with the protocol, then the claims audit
 * (output/report/, output/index.html); --check / --update-golden: the regression pins of tests/golden/. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/audit.h"
#include "lib/csvout.h"
#include "lib/err.h"
#include "lib/outdir.h"
#include "experiments/common.h"
#include "experiments/report.h"
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

static int run_experiments(const struct cli_common *c, const struct opt *opts, const char *protocol,
                           const char *out, int force_no_render, int tty, struct runset *rs)
{
    char *fwd[32];
    int nf = 0;
    char jobs[32], seed[32], seeds[1024] = "";
    if (protocol) { fwd[nf++] = "--protocol"; fwd[nf++] = (char *)protocol; }
    if (c->preset) { fwd[nf++] = "--preset"; fwd[nf++] = (char *)c->preset; }
    fwd[nf++] = "--out";
    fwd[nf++] = (char *)out;
    if (c->no_render || force_no_render) fwd[nf++] = "--no-render";
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
        if ((e->flags & CMD_EXPERIMENT) && e->fn) n++;
    memset(rs, 0, sizeof *rs);
    int i = 0;
    for (const struct cmd_entry *e = epar_commands; e->name; e++) {
        if (!(e->flags & CMD_EXPERIMENT) || !e->fn || i >= MAX_EXPERIMENTS) continue;
        char label[128];
        snprintf(label, sizeof label, "%s (%s)", e->name, e->section);
        progress(c, tty, i, n, label);
        char *av[40];
        int ac = 0;
        av[ac++] = (char *)e->name;
        for (int k = 0; k < nf; k++) av[ac++] = fwd[k];
        av[ac] = NULL;
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

static int folders_from_table(struct epar_report_folder *f, char labels[][160], int max)
{
    int n = 0;
    for (const struct cmd_entry *e = epar_commands; e->name && n < max; e++) {
        if (!e->out || strncmp(e->out, "output/", 7)) continue;
        static char dirs[MAX_EXPERIMENTS][64];
        snprintf(dirs[n], sizeof dirs[n], "%s", e->out + 7);
        size_t l = strlen(dirs[n]);
        if (l && dirs[n][l - 1] == '/') dirs[n][l - 1] = '\0';
        snprintf(labels[n], 160, "%s: epar %s", e->section, e->name);
        f[n].dir = dirs[n];
        f[n].label = labels[n];
        n++;
    }
    return n;
}

static int run_audit(const struct epar_params *prm, struct epar_protocol *proto, const char *out, int no_render,
                     int jobs, const struct runset *rs, struct epar_audit *a)
{
    json_t *claims = json_object_get(proto->root, "claims");
    int st = epar_audit_run(claims, out, a);
    if (st) return st;
    struct epar_report_folder folders[MAX_EXPERIMENTS];
    char labels[MAX_EXPERIMENTS][160];
    struct epar_report_info info = {proto->path, proto->root, prm->preset, EPAR_VERSION, folders, 0, rs->ran,
                                    rs->failed, 0};
    info.n_folders = folders_from_table(folders, labels, MAX_EXPERIMENTS);
    info.figures = !no_render && epar_plot_available();
    struct epar_out o;
    if ((st = epar_out_begin(&o, out, "report"))) return st;
    json_t *ran = json_array(), *failed = json_array();
    for (int i = 0; i < rs->n_ran; i++) json_array_append_new(ran, json_string(rs->ran[i]));
    for (int i = 0; i < rs->n_failed; i++) json_array_append_new(failed, json_string(rs->failed[i]));
    json_t *seeds = json_array();
    for (int i = 0; i < prm->n_seeds; i++) json_array_append_new(seeds, json_integer((json_int_t)prm->seeds[i]));
    /* run.json of the audit: what was audited (the experiments' own run.json hold their parameters) */
    json_t *rj = json_pack("{s:s, s:s, s:s, s:i, s:s, s:o, s:o, s:o, s:i, s:{s:i, s:i, s:i, s:i}, s:i}", "experiment",
                           "run-all", "epar_version", EPAR_VERSION, "protocol", proto->path, "protocol_version",
                           EPAR_PROTOCOL_VERSION, "preset", prm->preset, "seeds", seeds, "experiments_run", ran,
                           "experiments_failed", failed, "claims", (int)a->n, "verdicts", "reproduced", a->counts[0],
                           "not reproduced", a->counts[1], "not reproducible here", a->counts[2], "trivially true",
                           a->counts[3], "spec_problems", a->spec_problems);
    if (!rj) st = epar_err_set(EPAR_ENOMEM, "out of memory building run.json");
    else if (json_dump_file(rj, epar_out_path(&o, "run.json"), JSON_INDENT(2) | JSON_PRESERVE_ORDER))
        st = epar_err_set(EPAR_EIO, "cannot write '%s'", epar_out_path(&o, "run.json"));
    json_decref(rj);
    if (st || (st = epar_exp_report_write(&o, out, a, &info))) {
        epar_out_abort(&o);
        return st;
    }
    if ((st = epar_exp_finish(&o, no_render, jobs))) return st;
    return epar_exp_report_index(out, a, &info);
}

static void print_verdicts(const struct epar_audit *a, const char *out)
{
    printf("audit: %zu claims -> %s/report/claims.csv, %s/report/REPORT.md, %s/index.html\n", a->n, out, out, out);
    printf("  %-20s %10s %14s %21s %14s\n", "section", "reproduced", "not reproduced", "not reproducible here",
           "trivially true");
    struct epar_table *t = epar_audit_section_counts(a);
    for (size_t r = 0; t && r < t->nrows; r++)
        printf("  %-20s %10.0f %14.0f %21.0f %14.0f\n", epar_csv_get_str(t, r, "section"),
               epar_csv_get(t, r, "reproduced"), epar_csv_get(t, r, "not_reproduced"),
               epar_csv_get(t, r, "not_reproducible_here"), epar_csv_get(t, r, "trivially_true"));
    epar_csv_free(t);
    printf("  %-20s %10d %14d %21d %14d\n", "total", a->counts[0], a->counts[1], a->counts[2], a->counts[3]);
    if (a->counts[EPAR_AUDIT_NOT_HERE])
        printf("  not reproducible here: %d need what epar does not do (training), %d read a file of an experiment "
               "that did not run, %d have a spec to fix\n",
               a->needs, a->missing_files, a->spec_problems);
    if (a->counts[EPAR_AUDIT_NOT_REPRODUCED]) {
        printf("  not reproduced:");
        int shown = 0;
        for (size_t i = 0; i < a->n; i++)
            if (a->rows[i].verdict == EPAR_AUDIT_NOT_REPRODUCED && shown++ < 8) printf(" %s", a->rows[i].id);
        if (shown > 8) printf(" ... (%d more in %s/report/claims.csv)", shown - 8, out);
        putchar('\n');
    }
}

/* ---- regression pins ---- */

struct pinval {
    char *key;          /* file|row|column */
    char *file, *row, *col;
    double v;
    char *s;            /* string value (verdict / pass columns), else NULL */
};

struct pinset {
    size_t n, cap;
    struct pinval *p;
};

static void pins_free(struct pinset *ps)
{
    for (size_t i = 0; i < ps->n; i++) {
        free(ps->p[i].key); free(ps->p[i].file); free(ps->p[i].row); free(ps->p[i].col); free(ps->p[i].s);
    }
    free(ps->p);
    memset(ps, 0, sizeof *ps);
}

static int pins_add(struct pinset *ps, const char *file, const char *row, const char *col, double v, const char *s)
{
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? 2 * ps->cap : 256;
        struct pinval *q = realloc(ps->p, cap * sizeof *q);
        if (!q) return epar_err_set(EPAR_ENOMEM, "out of memory collecting the numbers under regression");
        ps->p = q;
        ps->cap = cap;
    }
    struct pinval *p = &ps->p[ps->n];
    size_t kl = strlen(file) + strlen(row) + strlen(col) + 3;
    p->key = malloc(kl);
    if (p->key) snprintf(p->key, kl, "%s|%s|%s", file, row, col);
    p->file = strdup(file);
    p->row = strdup(row);
    p->col = strdup(col);
    p->v = v;
    p->s = s ? strdup(s) : NULL;
    if (!p->key || !p->file || !p->row || !p->col || (s && !p->s))
        return epar_err_set(EPAR_ENOMEM, "out of memory collecting the numbers under regression");
    ps->n++;
    return EPAR_OK;
}

static const struct pinval *pins_find(const struct pinset *ps, const char *key)
{
    for (size_t i = 0; i < ps->n; i++)
        if (!strcmp(ps->p[i].key, key)) return &ps->p[i];
    return NULL;
}

static void cell_text(const struct epar_cell *c, char *buf, size_t n)
{
    if (c->s) snprintf(buf, n, "%s", c->s);
    else epar_csv_format_number(c->v, buf, n);
}

/* every numeric cell (and the verdict/pass strings) of one output file, keyed by its first column */
/* Wall-clock measurements cannot be pinned: tests/golden/unpinned.txt lists "file,row,column" patterns
 * ('*' matches anything) whose values are left out of the pins (timings and what is derived from them). */
static char unpinned[64][3][128];
static int n_unpinned;

static int read_unpinned(const char *golden)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/unpinned.txt", golden);
    n_unpinned = 0;
    FILE *f = fopen(path, "r");
    if (!f) return EPAR_OK; /* optional */
    char line[512];
    while (fgets(line, sizeof line, f) && n_unpinned < 64) {
        line[strcspn(line, "\r\n#")] = '\0';
        char *a = strtok(line, ","), *b = a ? strtok(NULL, ",") : NULL, *c = b ? strtok(NULL, ",") : NULL;
        if (!a || !b || !c) continue;
        snprintf(unpinned[n_unpinned][0], 128, "%s", a);
        snprintf(unpinned[n_unpinned][1], 128, "%s", b);
        snprintf(unpinned[n_unpinned][2], 128, "%s", c);
        n_unpinned++;
    }
    fclose(f);
    return EPAR_OK;
}

static int is_unpinned(const char *file, const char *row, const char *col)
{
    for (int i = 0; i < n_unpinned; i++)
        if ((!strcmp(unpinned[i][0], "*") || !strcmp(unpinned[i][0], file)) &&
            (!strcmp(unpinned[i][1], "*") || !strcmp(unpinned[i][1], row)) &&
            (!strcmp(unpinned[i][2], "*") || !strcmp(unpinned[i][2], col)))
            return 1;
    return 0;
}

static int collect_file(struct pinset *ps, const char *out, const char *file)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", out, file) >= (int)sizeof path)
        return epar_err_set(EPAR_EIO, "path too long '%s'", file);
    struct epar_table *t;
    int st = epar_csv_read(path, &t);
    if (st) return st;
    for (size_t r = 0; r < t->nrows && !st; r++) {
        char row[160], first[128];
        cell_text(&t->cells[r * (size_t)t->ncols], first, sizeof first);
        int dup = 0;
        for (size_t q = 0; q < r; q++) {
            char o[128];
            cell_text(&t->cells[q * (size_t)t->ncols], o, sizeof o);
            dup += !strcmp(o, first);
        }
        if (dup) snprintf(row, sizeof row, "%s#%d", first, dup + 1);
        else snprintf(row, sizeof row, "%s", first);
        for (int c = 1; c < t->ncols && !st; c++) {
            const struct epar_cell *cell = &t->cells[r * (size_t)t->ncols + c];
            if (is_unpinned(file, row, t->cols[c])) continue;
            if (!cell->s) {
                if (!isnan(cell->v)) st = pins_add(ps, file, row, t->cols[c], cell->v, NULL); /* NaN: empty cell */
            }
            else if (!strcmp(t->cols[c], "verdict") || !strcmp(t->cols[c], "pass"))
                st = pins_add(ps, file, row, t->cols[c], NAN, cell->s);
        }
    }
    epar_csv_free(t);
    return st;
}

/* files.txt: one path (relative to the output root) per line, '#' comments */
static int read_file_list(const char *golden, char files[][256], int max, int *n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/files.txt", golden);
    FILE *f = fopen(path, "r");
    *n = 0;
    if (!f) {
        epar_err_set(EPAR_EIO, "cannot read '%s': %s", path, strerror(errno));
        epar_err_hint("pass the folder of the regression pins with --golden DIR (default tests/golden)");
        return EPAR_EIO;
    }
    char line[512];
    while (fgets(line, sizeof line, f) && *n < max) {
        line[strcspn(line, "\r\n#")] = '\0';
        char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        size_t l = strlen(s);
        while (l && (s[l - 1] == ' ' || s[l - 1] == '\t')) s[--l] = '\0';
        if (!*s) continue;
        if (l >= 256) {
            fclose(f);
            return epar_err_set(EPAR_EIO, "path too long in '%s': '%.40s...'", path, s);
        }
        memcpy(files[(*n)++], s, l + 1);
    }
    fclose(f);
    return EPAR_OK;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    remove(p);
    return 0;
}

struct pin_tol {
    double rel, abs;
};

/* pinned values with their tolerances */
static int read_pins(const char *golden, struct pinset *ps, struct pin_tol **tols)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/pins.csv", golden);
    *tols = NULL;
    if (access(path, R_OK) != 0) {
        epar_err_set(EPAR_EIO, "no regression pins '%s': %s", path, strerror(errno));
        epar_err_hint("create them deliberately with 'make regress-update' (epar run-all --update-golden)");
        return EPAR_EIO;
    }
    struct epar_table *t;
    int st = epar_csv_read(path, &t);
    if (st) return st;
    const char *need[] = {"file", "row", "column", "value", "rel_tol", "abs_tol"};
    for (int k = 0; k < 6; k++)
        if (epar_csv_col(t, need[k]) < 0) {
            epar_csv_free(t);
            return epar_err_set(EPAR_EIO, "malformed pins '%s': no column '%s'", path, need[k]);
        }
    *tols = calloc(t->nrows + 1, sizeof **tols);
    if (!*tols) { epar_csv_free(t); return epar_err_set(EPAR_ENOMEM, "out of memory reading the pins"); }
    int cf = epar_csv_col(t, "file"), cr = epar_csv_col(t, "row"), cc = epar_csv_col(t, "column"),
        cv = epar_csv_col(t, "value");
    for (size_t r = 0; r < t->nrows && !st; r++) {
        char f[256], row[160], col[128];
        cell_text(&t->cells[r * (size_t)t->ncols + cf], f, sizeof f);
        cell_text(&t->cells[r * (size_t)t->ncols + cr], row, sizeof row);
        cell_text(&t->cells[r * (size_t)t->ncols + cc], col, sizeof col);
        const struct epar_cell *v = &t->cells[r * (size_t)t->ncols + cv];
        st = pins_add(ps, f, row, col, v->s ? NAN : v->v, v->s);
        (*tols)[r].rel = epar_csv_get(t, r, "rel_tol");
        (*tols)[r].abs = epar_csv_get(t, r, "abs_tol");
        if (!(isfinite((*tols)[r].rel) && (*tols)[r].rel >= 0 && isfinite((*tols)[r].abs) && (*tols)[r].abs >= 0)) {
            st = epar_err_set(EPAR_EIO, "malformed pins '%s': row %zu needs rel_tol and abs_tol >= 0", path, r + 2);
        }
    }
    epar_csv_free(t);
    return st;
}

static int same_value(const struct pinval *pin, const struct pinval *now, const struct pin_tol *tol)
{
    if (pin->s || now->s) return pin->s && now->s && !strcmp(pin->s, now->s);
    if (isnan(pin->v) || isnan(now->v)) return isnan(pin->v) && isnan(now->v);
    if (isinf(pin->v) || isinf(now->v)) return pin->v == now->v;
    return fabs(now->v - pin->v) <= fmax(tol->abs, tol->rel * fabs(pin->v));
}

static void val_text(const struct pinval *p, char *buf, size_t n)
{
    if (!p) snprintf(buf, n, "(missing)");
    else if (p->s) snprintf(buf, n, "%s", p->s);
    else epar_csv_format_number(p->v, buf, n);
}

/* an interrupted --check removes its temporary folder too (the staging folders are aborted as usual) */
static char golden_tmp[4096];

static void golden_on_signal(int sig)
{
    epar_out_abort_all();
    if (golden_tmp[0]) nftw(golden_tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    _exit(128 + sig);
}

/* default tolerance of new pins. The runs are deterministic; across OpenBLAS kernels (and libm variants) every
 * decision (argmax, tie, threshold) is exact and plain floating-point sums agree to ~1e-11 relative (measured:
 * a flip of the 12th printed digit), so this absorbs that and nothing more. */
#define PIN_REL_TOL 1e-9
#define PIN_ABS_TOL 1e-12

static int golden(struct cli_common *c, const struct opt *opts, struct epar_protocol *proto,
                  const struct epar_params *prm,
                  const char *gdir, int update, int tty)
{
    char files[128][256];
    int nfiles, st;
    if ((st = read_file_list(gdir, files, 128, &nfiles)) || (st = read_unpinned(gdir))) return cli_fail(st);
    char gproto[4096];
    snprintf(gproto, sizeof gproto, "%s/protocol.json", gdir);
    struct pinset pins = {0}, now = {0};
    struct pin_tol *tols = NULL;
    if (!update && (st = read_pins(gdir, &pins, &tols))) {
        pins_free(&pins);
        return cli_fail(st);
    }
    /* the small runs go to a temporary folder unless --out was given */
    char tmp[4096];
    const char *out = c->out;
    int own_tmp = !cli_seen(opts, "out");
    if (own_tmp) {
        const char *td = getenv("TMPDIR");
        snprintf(tmp, sizeof tmp, "%s/epar-golden.XXXXXX", td && *td ? td : "/tmp");
        if (!mkdtemp(tmp)) {
            pins_free(&pins);
            free(tols);
            epar_err_set(EPAR_EIO, "cannot create a temporary folder '%s': %s", tmp, strerror(errno));
            return cli_fail(EPAR_EIO);
        }
        out = tmp;
        snprintf(golden_tmp, sizeof golden_tmp, "%s", tmp);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = golden_on_signal;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
    }
    struct runset rs;
    int rc = run_experiments(c, opts, gproto, out, 1, tty, &rs);
    struct epar_audit a = {0};
    if (!rc && (st = run_audit(prm, proto, out, 1, c->jobs, &rs, &a))) rc = cli_fail(st);
    if (!rc && rs.n_failed) rc = 1;
    int skipped = 0;
    for (int i = 0; i < nfiles && !rc; i++) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", out, files[i]) >= (int)sizeof path || access(path, R_OK) != 0) {
            if (!c->quiet)
                fprintf(stderr, "%s%s", skipped++ ? ", " : "epar: run-all: not produced by the small runs (skipped): ",
                        files[i]);
            continue;
        }
        if ((st = collect_file(&now, out, files[i]))) rc = cli_fail(st);
    }
    if (skipped && !c->quiet) fputc('\n', stderr);
    int moved = 0, missing = 0, added = 0;
    if (!rc && update) {
        struct epar_table *t = epar_csv_new("file,row,column,value,rel_tol,abs_tol");
        struct pinset old = {0};
        struct pin_tol *otol = NULL;
        char pp[4096];
        snprintf(pp, sizeof pp, "%s/pins.csv", gdir);
        if (access(pp, R_OK) == 0 && read_pins(gdir, &old, &otol)) { pins_free(&old); free(otol); otol = NULL; }
        for (size_t i = 0; t && i < now.n && !st; i++) {
            const struct pinval *p = &now.p[i];
            double rel = PIN_REL_TOL, abs = PIN_ABS_TOL;
            for (size_t k = 0; otol && k < old.n; k++)
                if (!strcmp(old.p[k].key, p->key)) { rel = otol[k].rel; abs = otol[k].abs; }
            st = p->s ? epar_csv_append(t, "ssssdd", p->file, p->row, p->col, p->s, rel, abs)
                      : epar_csv_append(t, "sssddd", p->file, p->row, p->col, p->v, rel, abs);
        }
        if (!t) st = EPAR_ENOMEM;
        if (!st) st = epar_csv_write(t, pp);
        epar_csv_free(t);
        pins_free(&old);
        free(otol);
        if (st) rc = cli_fail(st);
        else if (!c->quiet) printf("regress: wrote %zu pins from %d file(s) to %s\n", now.n, nfiles, pp);
    } else if (!rc) {
        int header = 0;
        for (size_t i = 0; i < pins.n; i++) {
            const struct pinval *pin = &pins.p[i], *cur = pins_find(&now, pin->key);
            if (cur && same_value(pin, cur, &tols[i])) continue;
            if (!cur) missing++;
            else moved++;
            if (!header) {
                printf("regress: numbers that moved (tolerance max(abs_tol, rel_tol x |pinned|)):\n");
                printf("  %-34s %-24s %-26s %-16s %-16s %s\n", "file", "row", "column", "pinned", "now", "tolerance");
                header = 1;
            }
            char a1[64], a2[64], tl[64];
            val_text(pin, a1, sizeof a1);
            val_text(cur, a2, sizeof a2);
            if (pin->s) snprintf(tl, sizeof tl, "exact");
            else snprintf(tl, sizeof tl, "rel %g / abs %g", tols[i].rel, tols[i].abs);
            printf("  %-34s %-24s %-26s %-16s %-16s %s\n", pin->file, pin->row, pin->col, a1, a2, tl);
        }
        for (size_t i = 0; i < now.n; i++) added += pins_find(&pins, now.p[i].key) == NULL;
        printf("regress: %zu pinned numbers checked: %zu unchanged, %d moved, %d missing; %d new (not pinned)\n",
               pins.n, pins.n - moved - missing, moved, missing, added);
        if (added && !c->quiet)
            fprintf(stderr, "hint: new numbers are not checked until pinned deliberately with 'make regress-update'\n");
        if (moved || missing) rc = 1;
    }
    epar_audit_free(&a);
    pins_free(&pins);
    pins_free(&now);
    free(tols);
    if (own_tmp) {
        nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        golden_tmp[0] = '\0';
    }
    return rc;
}

int cmd_run_all(int argc, char **argv)
{
    struct cli_common c = {0};
    int check = 0, update = 0, audit_only = 0;
    const char *gdir = "tests/golden";
    struct opt opts[] = {
        {"Run-all", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"audit-only", 0, OPT_FLAG, &audit_only, NULL, "do not run the experiments: audit the files already in --out", 0},
        {"Regression", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"check", 0, OPT_FLAG, &check, NULL,
         "rerun the small fixed-seed runs of --golden (in a temporary folder unless --out) and compare with its pins; exit 1 if a number moved", 0},
        {"update-golden", 0, OPT_FLAG, &update, NULL, "rewrite the pins of --golden from the small runs (deliberate)", 0},
        {"golden", 0, OPT_STRING, &gdir, "DIR", "regression folder: protocol.json, files.txt, pins.csv (default tests/golden)", 0},
        OPTS_COMMON(&c),
        {NULL, 0, OPT_END, NULL, NULL, NULL, 0}};
    int rc = cli_parse("run-all", "[options]", opts, argc, argv);
    if (rc >= 0) return rc;
    if (check && update) return cli_usage_error("'--check' and '--update-golden' cannot be combined");
    if (audit_only && (check || update)) return cli_usage_error("'--audit-only' cannot be combined with '--check' or '--update-golden'");
    if (cli_seen(opts, "golden") && !check && !update) return cli_usage_error("'--golden' needs '--check' or '--update-golden'");
    if ((check || update) && (cli_seen(opts, "seed") || cli_seen(opts, "seeds") || cli_seen(opts, "preset")))
        return cli_usage_error("'--%s' cannot change the pinned runs: their protocol and seeds are in %s/protocol.json",
                               check ? "check" : "update-golden", gdir);

    struct epar_protocol proto;
    struct epar_params prm;
    if ((rc = cli_resolve(&c, opts, "run-all", &proto, &prm))) return rc;
    int st = epar_audit_check(json_object_get(proto.root, "claims"), proto.path);
    if (st) {
        epar_protocol_free(&proto);
        return cli_fail(st);
    }
    int tty = isatty(STDERR_FILENO);
    if (check || update) {
        rc = golden(&c, opts, &proto, &prm, gdir, update, tty);
        epar_protocol_free(&proto);
        return rc;
    }
    struct runset rs;
    memset(&rs, 0, sizeof rs);
    if (!audit_only && (rc = run_experiments(&c, opts, c.protocol, c.out, 0, tty, &rs))) {
        epar_protocol_free(&proto);
        return rc;
    }
    struct epar_audit a;
    if (!c.quiet) fprintf(stderr, "epar: run-all: auditing %zu claims\n", json_array_size(json_object_get(proto.root, "claims")));
    st = run_audit(&prm, &proto, c.out, c.no_render, c.jobs, &rs, &a);
    if (st) {
        epar_audit_free(&a);
        epar_protocol_free(&proto);
        return cli_fail(st);
    }
    if (!c.quiet) {
        if (!audit_only) {
            printf("run-all: %d experiment(s) run, %d failed", rs.n_ran + rs.n_failed, rs.n_failed);
            for (int i = 0; i < rs.n_failed; i++) printf("%s%s", i ? ", " : " (", rs.failed[i]);
            printf("%s\n", rs.n_failed ? ")" : "");
        }
        print_verdicts(&a, c.out);
    }
    if (a.spec_problems)
        fprintf(stderr, "epar: run-all: warning: %d claim(s) have a measurement spec that does not fit its file; "
                        "see their notes in %s/report/claims.csv\n",
                a.spec_problems, c.out);
    epar_audit_free(&a);
    epar_protocol_free(&proto);
    return rs.n_failed ? 1 : 0;
}
