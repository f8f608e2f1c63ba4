#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <csv.h>
#include "err.h"
#include "csvout.h"
#include "outdir.h"

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int add_col(struct epar_table *t, const char *name, size_t len)
{
    char **c = realloc(t->cols, (size_t)(t->ncols + 1) * sizeof *c);
    if (!c) return EPAR_ENOMEM;
    t->cols = c;
    if (!(c[t->ncols] = malloc(len + 1))) return EPAR_ENOMEM;
    memcpy(c[t->ncols], name, len);
    c[t->ncols][len] = '\0';
    t->ncols++;
    return EPAR_OK;
}

struct epar_table *epar_csv_new(const char *cols)
{
    struct epar_table *t = calloc(1, sizeof *t);
    if (!t) goto oom;
    for (const char *p = cols; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (add_col(t, p, len)) goto oom;
        p += len + (e ? 1 : 0);
    }
    return t;
oom:
    epar_csv_free(t);
    epar_err_set(EPAR_ENOMEM, "out of memory allocating a table");
    return NULL;
}

void epar_csv_free(struct epar_table *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++) free(t->cells[i].s);
    for (int c = 0; c < t->ncols; c++) free(t->cols[c]);
    free(t->cols);
    free(t->cells);
    free(t);
}

static struct epar_cell *new_row(struct epar_table *t)
{
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        struct epar_cell *c = realloc(t->cells, cap * (size_t)t->ncols * sizeof *c);
        if (!c) return NULL;
        t->cells = c;
        t->cap = cap;
    }
    struct epar_cell *row = t->cells + t->nrows * (size_t)t->ncols;
    for (int c = 0; c < t->ncols; c++) row[c] = (struct epar_cell){NAN, NULL};
    t->nrows++;
    return row;
}

int epar_csv_append(struct epar_table *t, const char *fmt, ...)
{
    struct epar_cell *row = new_row(t);
    if (!row) return epar_err_set(EPAR_ENOMEM, "out of memory growing a table");
    va_list ap;
    va_start(ap, fmt);
    for (int c = 0; c < t->ncols && fmt[c]; c++) {
        switch (fmt[c]) {
        case 'd': row[c].v = va_arg(ap, double); break;
        case 'i': row[c].v = (double)va_arg(ap, int); break;
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!(row[c].s = dupstr(s ? s : ""))) {
                va_end(ap);
                return epar_err_set(EPAR_ENOMEM, "out of memory growing a table");
            }
            break;
        }
        default: break; /* '-' */
        }
    }
    va_end(ap);
    return EPAR_OK;
}

int epar_csv_col(const struct epar_table *t, const char *name)
{
    for (int c = 0; c < t->ncols; c++)
        if (strcmp(t->cols[c], name) == 0) return c;
    return -1;
}

double epar_csv_get(const struct epar_table *t, size_t row, const char *col)
{
    int c = epar_csv_col(t, col);
    if (c < 0 || row >= t->nrows) return NAN;
    const struct epar_cell *cell = &t->cells[row * (size_t)t->ncols + c];
    return cell->s ? NAN : cell->v;
}

const char *epar_csv_get_str(const struct epar_table *t, size_t row, const char *col)
{
    int c = epar_csv_col(t, col);
    if (c < 0 || row >= t->nrows) return NULL;
    return t->cells[row * (size_t)t->ncols + c].s;
}

void epar_csv_format_number(double v, char *buf, size_t n)
{
    if (isnan(v)) snprintf(buf, n, "nan");
    else if (isinf(v)) snprintf(buf, n, v > 0 ? "inf" : "-inf");
    else if (v == 0) snprintf(buf, n, "0"); /* no "-0" */
    else snprintf(buf, n, "%.12g", v);
}

static int put_field(FILE *f, const char *s)
{
    /* libcsv quotes only when needed (CSV_APPEND_NULL not used: plain fwrite of the escaped field) */
    if (strpbrk(s, ",\"\r\n") == NULL) return fputs(s, f) < 0 ? -1 : 0;
    return csv_fwrite(f, s, strlen(s));
}

int epar_csv_write(const struct epar_table *t, const char *path)
{
    struct epar_out_file w;
    FILE *f = epar_out_fopen(&w, path);
    if (!f) return EPAR_EIO;
    int bad = 0;
    char num[64];
    for (int c = 0; c < t->ncols; c++) {
        if (c && fputc(',', f) == EOF) bad = 1;
        if (put_field(f, t->cols[c])) bad = 1;
    }
    if (fputc('\n', f) == EOF) bad = 1;
    for (size_t r = 0; r < t->nrows && !bad; r++) {
        const struct epar_cell *row = t->cells + r * (size_t)t->ncols;
        for (int c = 0; c < t->ncols; c++) {
            if (c && fputc(',', f) == EOF) bad = 1;
            if (row[c].s) {
                if (put_field(f, row[c].s)) bad = 1;
            } else {
                epar_csv_format_number(row[c].v, num, sizeof num);
                if (fputs(num, f) < 0) bad = 1;
            }
        }
        if (fputc('\n', f) == EOF) bad = 1;
    }
    return epar_out_fclose(&w); /* a failed write above is remembered by w, with its reason */
}

/* ---- reading ---- */

struct reader {
    struct epar_table *t;
    int header_done, col, failed;
    struct epar_cell *row;
};

static void on_field(void *s, size_t len, void *data)
{
    struct reader *rd = data;
    if (rd->failed) return;
    if (!rd->header_done) {
        if (add_col(rd->t, s ? s : "", s ? len : 0)) rd->failed = 1;
        return;
    }
    if (!rd->row) {
        if (!(rd->row = new_row(rd->t))) { rd->failed = 1; return; }
        rd->col = 0;
    }
    if (rd->col >= rd->t->ncols) { rd->failed = 2; return; }
    struct epar_cell *cell = &rd->row[rd->col++];
    char buf[128];
    if (len < sizeof buf) {
        memcpy(buf, s ? s : "", len);
        buf[len] = '\0';
        char *end;
        errno = 0;
        double v = strtod(buf, &end);
        if (len > 0 && *end == '\0') { cell->v = v; return; }
        if (len == 0) return; /* empty -> NaN */
    }
    if (!(cell->s = malloc(len + 1))) { rd->failed = 1; return; }
    memcpy(cell->s, s, len);
    cell->s[len] = '\0';
}

static void on_row(int c, void *data)
{
    (void)c;
    struct reader *rd = data;
    if (!rd->header_done) rd->header_done = 1;
    else if (rd->row && rd->col != rd->t->ncols && !rd->failed) rd->failed = 2;
    rd->row = NULL;
}

int epar_csv_read(const char *path, struct epar_table **out)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return epar_err_set(EPAR_EIO, "cannot read '%s': %s", path, strerror(errno));
    struct csv_parser p;
    if (csv_init(&p, CSV_APPEND_NULL) != 0) {
        fclose(f);
        return epar_err_set(EPAR_ENOMEM, "cannot initialise the CSV parser");
    }
    struct reader rd = {calloc(1, sizeof(struct epar_table)), 0, 0, 0, NULL};
    if (!rd.t) rd.failed = 1;
    char buf[65536];
    size_t n;
    while (!rd.failed && (n = fread(buf, 1, sizeof buf, f)) > 0)
        if (csv_parse(&p, buf, n, on_field, on_row, &rd) != n) rd.failed = 3;
    if (!rd.failed) csv_fini(&p, on_field, on_row, &rd);
    int ioerr = ferror(f);
    csv_free(&p);
    fclose(f);
    if (rd.failed || ioerr || !rd.t || rd.t->ncols == 0) {
        epar_csv_free(rd.t);
        if (rd.failed == 1) return epar_err_set(EPAR_ENOMEM, "out of memory reading '%s'", path);
        return epar_err_set(EPAR_EIO, "malformed CSV '%s'", path);
    }
    *out = rd.t;
    return EPAR_OK;
}
