#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "csvout.h"
#include "err.h"
#include "regress.h"

void epar_regress_free(struct epar_regress_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        struct epar_regress_pin *p = &s->p[i];
        free(p->key); free(p->file); free(p->row); free(p->col); free(p->s);
    }
    free(s->p);
    memset(s, 0, sizeof *s);
}

static char *dup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int add(struct epar_regress_set *s, const char *file, const char *row, const char *col, double v,
               const char *str, double rel, double abs)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        struct epar_regress_pin *q = realloc(s->p, cap * sizeof *q);
        if (!q) return epar_err_set(EPAR_ENOMEM, "out of memory collecting the numbers under regression");
        s->p = q;
        s->cap = cap;
    }
    struct epar_regress_pin *p = &s->p[s->n];
    memset(p, 0, sizeof *p);
    size_t kl = strlen(file) + strlen(row) + strlen(col) + 3;
    p->key = malloc(kl);
    if (p->key) snprintf(p->key, kl, "%s|%s|%s", file, row, col);
    p->file = dup(file);
    p->row = dup(row);
    p->col = dup(col);
    p->v = v;
    p->s = str ? dup(str) : NULL;
    p->rel = rel;
    p->abs = abs;
    s->n++; /* counted even when incomplete, so epar_regress_free releases what was allocated */
    if (!p->key || !p->file || !p->row || !p->col || (str && !p->s))
        return epar_err_set(EPAR_ENOMEM, "out of memory collecting the numbers under regression");
    return EPAR_OK;
}

const struct epar_regress_pin *epar_regress_find(const struct epar_regress_set *s, const char *key)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->p[i].key, key)) return &s->p[i];
    return NULL;
}

static void cell_text(const struct epar_cell *c, char *buf, size_t n)
{
    if (c->s) snprintf(buf, n, "%s", c->s);
    else epar_csv_format_number(c->v, buf, n);
}

int epar_regress_read_files(const char *path, char files[][256], int max, int *n)
{
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

int epar_regress_read_unpinned(const char *path, struct epar_regress_unpinned *u)
{
    u->n = 0;
    FILE *f = fopen(path, "r");
    if (!f) return EPAR_OK; /* optional */
    char line[512];
    while (fgets(line, sizeof line, f) && u->n < EPAR_REGRESS_MAX_PATTERNS) {
        line[strcspn(line, "\r\n#")] = '\0';
        char *save = NULL, *a = strtok_r(line, ",", &save), *b = a ? strtok_r(NULL, ",", &save) : NULL,
             *c = b ? strtok_r(NULL, ",", &save) : NULL;
        if (!a || !b || !c) continue;
        snprintf(u->pat[u->n][0], 128, "%s", a);
        snprintf(u->pat[u->n][1], 128, "%s", b);
        snprintf(u->pat[u->n][2], 128, "%s", c);
        u->n++;
    }
    fclose(f);
    return EPAR_OK;
}

int epar_regress_is_unpinned(const struct epar_regress_unpinned *u, const char *file, const char *row, const char *col)
{
    for (int i = 0; u && i < u->n; i++)
        if ((!strcmp(u->pat[i][0], "*") || !strcmp(u->pat[i][0], file)) &&
            (!strcmp(u->pat[i][1], "*") || !strcmp(u->pat[i][1], row)) &&
            (!strcmp(u->pat[i][2], "*") || !strcmp(u->pat[i][2], col)))
            return 1;
    return 0;
}

int epar_regress_collect(struct epar_regress_set *s, const char *out_root, const char *file, const char *prefix,
                         const struct epar_regress_unpinned *u, const char *only_col, double rel, double abs)
{
    char path[4096], key[512];
    if (snprintf(path, sizeof path, "%s/%s", out_root, file) >= (int)sizeof path ||
        snprintf(key, sizeof key, "%s%s", prefix ? prefix : "", file) >= (int)sizeof key)
        return epar_err_set(EPAR_EIO, "path too long '%s'", file);
    struct epar_table *t;
    int st = epar_csv_read(path, &t);
    if (st) return st;
    for (size_t r = 0; r < t->nrows && !st; r++) {
        char row[160], first[128];
        cell_text(&t->cells[r * (size_t)t->ncols], first, sizeof first);
        int dup_count = 0;
        for (size_t q = 0; q < r; q++) {
            char o[128];
            cell_text(&t->cells[q * (size_t)t->ncols], o, sizeof o);
            dup_count += !strcmp(o, first);
        }
        if (dup_count) snprintf(row, sizeof row, "%s#%d", first, dup_count + 1);
        else snprintf(row, sizeof row, "%s", first);
        for (int c = 1; c < t->ncols && !st; c++) {
            const struct epar_cell *cell = &t->cells[r * (size_t)t->ncols + c];
            if ((only_col && strcmp(t->cols[c], only_col)) || epar_regress_is_unpinned(u, key, row, t->cols[c])) continue;
            if (!cell->s) {
                if (!isnan(cell->v)) st = add(s, key, row, t->cols[c], cell->v, NULL, rel, abs); /* NaN: empty cell */
            } else if (!strcmp(t->cols[c], "verdict") || !strcmp(t->cols[c], "pass")) {
                st = add(s, key, row, t->cols[c], NAN, cell->s, rel, abs);
            }
        }
    }
    epar_csv_free(t);
    return st;
}

int epar_regress_read_pins(const char *path, struct epar_regress_set *s)
{
    struct epar_table *t;
    FILE *probe = fopen(path, "r");
    if (!probe) {
        epar_err_set(EPAR_EIO, "no regression pins '%s': %s", path, strerror(errno));
        epar_err_hint("create them deliberately with 'make regress-update' (epar run-all --update-golden)");
        return EPAR_EIO;
    }
    fclose(probe);
    int st = epar_csv_read(path, &t);
    if (st) return st;
    static const char *const need[] = {"file", "row", "column", "value", "rel_tol", "abs_tol"};
    for (int k = 0; k < 6; k++)
        if (epar_csv_col(t, need[k]) < 0) {
            epar_csv_free(t);
            return epar_err_set(EPAR_EIO, "malformed pins '%s': no column '%s'", path, need[k]);
        }
    int cf = epar_csv_col(t, "file"), cr = epar_csv_col(t, "row"), cc = epar_csv_col(t, "column"),
        cv = epar_csv_col(t, "value");
    for (size_t r = 0; r < t->nrows && !st; r++) {
        char f[512], row[160], col[128];
        cell_text(&t->cells[r * (size_t)t->ncols + cf], f, sizeof f);
        cell_text(&t->cells[r * (size_t)t->ncols + cr], row, sizeof row);
        cell_text(&t->cells[r * (size_t)t->ncols + cc], col, sizeof col);
        const struct epar_cell *v = &t->cells[r * (size_t)t->ncols + cv];
        double rel = epar_csv_get(t, r, "rel_tol"), abs = epar_csv_get(t, r, "abs_tol");
        if (!(isfinite(rel) && rel >= 0 && isfinite(abs) && abs >= 0))
            st = epar_err_set(EPAR_EIO, "malformed pins '%s': row %zu needs rel_tol and abs_tol >= 0", path, r + 2);
        else
            st = add(s, f, row, col, v->s ? NAN : v->v, v->s, rel, abs);
    }
    epar_csv_free(t);
    return st;
}

int epar_regress_write_pins(const char *path, const struct epar_regress_set *now, const struct epar_regress_set *old)
{
    struct epar_table *t = epar_csv_new("file,row,column,value,rel_tol,abs_tol");
    int st = t ? EPAR_OK : EPAR_ENOMEM;
    for (size_t i = 0; i < now->n && !st; i++) {
        const struct epar_regress_pin *p = &now->p[i], *o = old ? epar_regress_find(old, p->key) : NULL;
        double rel = o ? o->rel : p->rel, abs = o ? o->abs : p->abs;
        st = p->s ? epar_csv_append(t, "ssssdd", p->file, p->row, p->col, p->s, rel, abs)
                  : epar_csv_append(t, "sssddd", p->file, p->row, p->col, p->v, rel, abs);
    }
    if (!st) st = epar_csv_write(t, path);
    epar_csv_free(t);
    return st;
}

int epar_regress_same(const struct epar_regress_pin *pin, const struct epar_regress_pin *now)
{
    if (!now) return 0;
    if (pin->s || now->s) return pin->s && now->s && !strcmp(pin->s, now->s);
    if (isnan(pin->v) || isnan(now->v)) return isnan(pin->v) && isnan(now->v);
    if (isinf(pin->v) || isinf(now->v)) return pin->v == now->v;
    return fabs(now->v - pin->v) <= fmax(pin->abs, pin->rel * fabs(pin->v));
}

void epar_regress_text(const struct epar_regress_pin *p, char *buf, size_t n)
{
    if (!p) snprintf(buf, n, "(missing)");
    else if (p->s) snprintf(buf, n, "%s", p->s);
    else epar_csv_format_number(p->v, buf, n);
}
