/* regress: the regression pins of CI (tests/golden/): every number of a list of output files, keyed by
 * (file, row, column), compared with pinned values within a tolerance; verdict and pass columns exactly.
 *
 *   files.txt     output files (relative to the output root) whose numbers are pinned
 *   unpinned.txt  "file,row,column" patterns ('*' matches anything) left out: wall-clock measurements and what is
 *                 derived from them
 *   pins.csv      file,row,column,value,rel_tol,abs_tol
 * A row is keyed by its first column's text ("#2", "#3" ... for repeats). A file may be collected under a prefix
 * ("reference/report/claims.csv"), so the pins of two runs (the small golden protocol and the full reference
 * protocol) live in one pins.csv. Nothing here prints: callers format the result. */
#ifndef EPAR_REGRESS_H
#define EPAR_REGRESS_H

#include <stddef.h>

#define EPAR_REGRESS_MAX_FILES 128
#define EPAR_REGRESS_MAX_PATTERNS 64

struct epar_regress_pin {
    char *key;          /* file|row|column */
    char *file, *row, *col;
    double v;           /* NaN for a string */
    char *s;            /* string value (verdict / pass columns), else NULL */
    double rel, abs;    /* tolerance: |now - pinned| <= max(abs, rel |pinned|) */
};

struct epar_regress_set {
    size_t n, cap;
    struct epar_regress_pin *p;
};

struct epar_regress_unpinned {
    int n;
    char pat[EPAR_REGRESS_MAX_PATTERNS][3][128];
};

/* files.txt: one path per line, '#' comments; EPAR_EIO naming the file. */
int epar_regress_read_files(const char *path, char files[][256], int max, int *n);
/* unpinned.txt (optional: a missing file is no pattern). */
int epar_regress_read_unpinned(const char *path, struct epar_regress_unpinned *u);
int epar_regress_is_unpinned(const struct epar_regress_unpinned *u, const char *file, const char *row, const char *col);

/* Add every numeric cell (NaN cells skipped) and every "verdict"/"pass" cell of out_root/file to s, keyed by
 * prefix+file; only_col (may be NULL) restricts to one column. Tolerances are set to rel, abs. */
int epar_regress_collect(struct epar_regress_set *s, const char *out_root, const char *file, const char *prefix,
                         const struct epar_regress_unpinned *u, const char *only_col, double rel, double abs);
/* pins.csv -> s (tolerances from the file). */
int epar_regress_read_pins(const char *path, struct epar_regress_set *s);
/* Write now as pins.csv; a key also in old keeps old's tolerance (hand-set tolerances survive an update). */
int epar_regress_write_pins(const char *path, const struct epar_regress_set *now, const struct epar_regress_set *old);
const struct epar_regress_pin *epar_regress_find(const struct epar_regress_set *s, const char *key);
/* Does now match pinned within pinned's tolerance (strings exactly, NaN = NaN)? */
int epar_regress_same(const struct epar_regress_pin *pinned, const struct epar_regress_pin *now);
/* "0.934", a string value, or "(missing)" for NULL */
void epar_regress_text(const struct epar_regress_pin *p, char *buf, size_t n);
void epar_regress_free(struct epar_regress_set *s);

#endif
