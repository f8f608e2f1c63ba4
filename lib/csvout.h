/* csvout: result tables, and the only caller of libcsv (writing and reading).
 *
 * A table has named columns; cells are numbers or strings. Numbers are written in one format
 * ("%.12g"; NaN as "nan", infinities as "inf"/"-inf"). Files are written atomically: a temp file in the
 * same folder, checked close, then rename(2) - a reader never sees half a file. */
#ifndef EPAR_CSVOUT_H
#define EPAR_CSVOUT_H

#include <stddef.h>

struct epar_cell {
    double v;
    char *s;            /* non-NULL: a string cell */
};

struct epar_table {
    int ncols;
    char **cols;
    size_t nrows, cap;
    struct epar_cell *cells; /* (nrows, ncols) */
};

/* cols: comma-separated header, e.g. "alpha,position_strength". NULL + EPAR_ENOMEM on failure. */
struct epar_table *epar_csv_new(const char *cols);
void epar_csv_free(struct epar_table *t);
/* Append a row; fmt has one letter per column: 'd' double, 'i' int, 's' string, '-' empty (NaN). */
int epar_csv_append(struct epar_table *t, const char *fmt, ...);
/* Column index by name, -1 if absent. */
int epar_csv_col(const struct epar_table *t, const char *name);
/* Number in (row, column name); NaN if absent or a string. */
double epar_csv_get(const struct epar_table *t, size_t row, const char *col);
const char *epar_csv_get_str(const struct epar_table *t, size_t row, const char *col);

/* Format one number the way every epar file does (buf >= 32 bytes). */
void epar_csv_format_number(double v, char *buf, size_t n);

/* Write atomically to path (lib/outdir's epar_out_fopen: temp file <path>.tmp.<host>.<pid>, every write checked,
 * then rename). EPAR_EIO with the path and errno text on failure; no file left behind. A path that exists
 * and is not a regular file (/dev/full, a FIFO, a folder) is refused, never renamed over. An interrupt's
 * epar_out_abort_all removes the temp file. */
int epar_csv_write(const struct epar_table *t, const char *path);
/* Read a CSV with a header row (libcsv). Numeric-looking cells become numbers. */
int epar_csv_read(const char *path, struct epar_table **out);

#endif
