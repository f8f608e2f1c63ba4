/* golden: the regression harness (see golden.h). */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "err.h"
#include "golden.h"
#include "outdir.h"
#include "regress.h"

/* default tolerance of new pins. The runs are deterministic; across OpenBLAS kernels (and libm variants) every
 * decision (argmax, tie, threshold) is exact and plain floating-point sums agree to ~1e-11 relative (measured:
 * a flip of the 12th printed digit), so this absorbs that and nothing more. */
#define PIN_REL_TOL 1e-9
#define PIN_ABS_TOL 1e-12

/* the verdicts of the full reference protocol are pinned under this prefix */
#define REFERENCE_PREFIX "reference/"

static void print_moved(const struct epar_regress_set *pins, const struct epar_regress_set *now, int *moved, int *missing)
{
    int header = 0;
    *moved = *missing = 0;
    for (size_t i = 0; i < pins->n; i++) {
        const struct epar_regress_pin *pin = &pins->p[i], *cur = epar_regress_find(now, pin->key);
        if (epar_regress_same(pin, cur)) continue;
        if (!cur) (*missing)++;
        else (*moved)++;
        if (!header) {
            printf("regress: numbers that moved (tolerance max(abs_tol, rel_tol x |pinned|)):\n");
            printf("  %-34s %-24s %-26s %-16s %-16s %s\n", "file", "row", "column", "pinned", "now", "tolerance");
            header = 1;
        }
        char a1[64], a2[64], tl[64];
        epar_regress_text(pin, a1, sizeof a1);
        epar_regress_text(cur, a2, sizeof a2);
        if (pin->s) snprintf(tl, sizeof tl, "exact");
        else snprintf(tl, sizeof tl, "rel %g / abs %g", pin->rel, pin->abs);
        printf("  %-34s %-24s %-26s %-16s %-16s %s\n", pin->file, pin->row, pin->col, a1, a2, tl);
    }
}

/* the numbers of the runs in gout (files of files.txt) and rout (the reference verdicts) into now */
static int collect(const struct epar_golden *g, char files[][256], int nfiles, const struct epar_regress_unpinned *unp,
                   const char *gout, const char *rout, struct epar_regress_set *now)
{
    char path[4480];
    int skipped = 0, st = EPAR_OK;
    for (int i = 0; i < nfiles && !st; i++) {
        int len = snprintf(path, sizeof path, "%s/%s", gout, files[i]);
        if (len >= (int)sizeof path || access(path, R_OK) != 0) {
            if (!g->quiet)
                fprintf(stderr, "%s%s", skipped++ ? ", " : "epar: run-all: not produced by the small runs (skipped): ",
                        files[i]);
            continue;
        }
        st = epar_regress_collect(now, gout, files[i], NULL, unp, NULL, PIN_REL_TOL, PIN_ABS_TOL);
    }
    if (skipped && !g->quiet) fputc('\n', stderr);
    /* every verdict of the full reference protocol (the headline verdicts; timing claims are unpinned) */
    if (!st) st = epar_regress_collect(now, rout, "report/claims.csv", REFERENCE_PREFIX, unp, "verdict", PIN_REL_TOL,
                                       PIN_ABS_TOL);
    return st;
}

/* pins.csv rewritten from now (a key already pinned keeps its tolerance) */
static int update_pins(const struct epar_golden *g, const char *pp, int nfiles, const struct epar_regress_set *now)
{
    struct epar_regress_set old = {0};
    if (access(pp, R_OK) == 0 && epar_regress_read_pins(pp, &old)) epar_regress_free(&old);
    int st = epar_regress_write_pins(pp, now, &old);
    if (!st && !g->quiet)
        printf("regress: wrote %zu pins from %d file(s) and the reference run's verdicts to %s\n", now->n, nfiles, pp);
    epar_regress_free(&old);
    return st;
}

/* the pins against now: the moved numbers, a summary line; 1 when one moved or went missing */
static int compare_pins(const struct epar_golden *g, const struct epar_regress_set *pins,
                        const struct epar_regress_set *now)
{
    int moved, missing, added = 0;
    print_moved(pins, now, &moved, &missing);
    for (size_t i = 0; i < now->n; i++) added += epar_regress_find(pins, now->p[i].key) == NULL;
    printf("regress: %zu pinned numbers checked: %zu unchanged, %d moved, %d missing; %d new (not pinned)\n", pins->n,
           pins->n - moved - missing, moved, missing, added);
    if (added && !g->quiet)
        fprintf(stderr, "hint: new numbers are not checked until pinned deliberately with 'make regress-update'\n");
    return moved || missing;
}

int epar_golden_check(const struct epar_golden *g, epar_golden_run_fn run, void *ctx, int *rc)
{
    char files[EPAR_REGRESS_MAX_FILES][256], path[4480], gproto[4200], pp[4200];
    int nfiles, st;
    struct epar_regress_unpinned unp;
    struct epar_regress_set pins = {0}, now = {0};
    snprintf(path, sizeof path, "%s/files.txt", g->dir);
    if ((st = epar_regress_read_files(path, files, EPAR_REGRESS_MAX_FILES, &nfiles))) return st;
    snprintf(path, sizeof path, "%s/unpinned.txt", g->dir);
    epar_regress_read_unpinned(path, &unp);
    snprintf(gproto, sizeof gproto, "%s/protocol.json", g->dir);
    snprintf(pp, sizeof pp, "%s/pins.csv", g->dir);
    if (!g->update && (st = epar_regress_read_pins(pp, &pins))) {
        epar_regress_free(&pins);
        return st;
    }
    /* the runs go to a temporary folder (small runs in <tmp>/golden, the reference protocol in <tmp>/reference)
     * unless an output folder was given */
    char tmp[PATH_MAX], gout[PATH_MAX + 16], rout[PATH_MAX + 16];
    if (!g->out) {
        if ((st = epar_out_temp_dir(tmp, sizeof tmp, "golden"))) {
            epar_regress_free(&pins);
            return st;
        }
    } else {
        snprintf(tmp, sizeof tmp, "%s", g->out);
    }
    snprintf(gout, sizeof gout, "%s/golden", tmp);
    snprintf(rout, sizeof rout, "%s/reference", tmp);
    *rc = run(ctx, gproto, gout);
    if (!*rc) *rc = run(ctx, g->reference, rout);
    if (!*rc) st = collect(g, files, nfiles, &unp, gout, rout, &now);
    if (!*rc && !st) {
        if (g->update) st = update_pins(g, pp, nfiles, &now);
        else *rc = compare_pins(g, &pins, &now);
    }
    epar_regress_free(&pins);
    epar_regress_free(&now);
    if (!g->out) epar_out_temp_remove(tmp);
    return st;
}
