/* golden: the regression harness of `epar run-all --check / --update-golden` over lib/regress's pins.
 *
 * A golden folder (tests/golden) holds protocol.json (small fixed-seed runs), files.txt, unpinned.txt and pins.csv
 * (lib/regress). The harness has the caller run every experiment twice - with the golden protocol into
 * <out>/golden and with the full reference protocol into <out>/reference, both audited with the reference
 * protocol's claims - then collects the numbers of files.txt from the small runs and every verdict of the full
 * run's report/claims.csv (under the prefix "reference/"), and compares them with pins.csv (or rewrites it). <out>
 * is a temporary folder unless given; it goes after the check, and on an interrupt with the staging folders
 * (lib/outdir's epar_out_temp_dir: the one signal handler of the program cleans up). No experiment knowledge:
 * the runs are the caller's. Prints the numbers that moved and a summary line to stdout. */
#ifndef EPAR_GOLDEN_H
#define EPAR_GOLDEN_H

/* Run every experiment with protocol file `protocol` into `out` (no figures) and audit them; returns 0 or an exit
 * code (its errors already printed). */
typedef int (*epar_golden_run_fn)(void *ctx, const char *protocol, const char *out);

struct epar_golden {
    const char *dir;        /* the golden folder */
    const char *reference;  /* path of the full reference protocol */
    const char *out;        /* where the runs go; NULL: a temporary folder, removed after */
    int update;             /* 1: rewrite pins.csv from the runs (hand-set tolerances kept) */
    int quiet;              /* no notes on stderr, no "wrote" line */
};

/* The check (or update). Returns EPAR_OK with *rc the exit code - 0 every pin held (or the pins were written), 1 a
 * pinned number moved or went missing, else the exit code of a run that failed - or an error status (error set:
 * an unreadable golden folder, pins that cannot be read or written), *rc then unset. */
int epar_golden_check(const struct epar_golden *g, epar_golden_run_fn run, void *ctx, int *rc);

#endif
