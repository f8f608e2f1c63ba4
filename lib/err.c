#include <stdarg.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include "err.h"

static _Thread_local char err_msg[1024];
static _Thread_local char err_hint[1024];

int epar_err_set(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof err_msg, fmt, ap);
    va_end(ap);
    err_hint[0] = '\0';
    return code;
}

void epar_err_hint(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_hint, sizeof err_hint, fmt, ap);
    va_end(ap);
}

static void rename_in(char *buf, size_t cap, const char *from, const char *to)
{
    size_t lf = strlen(from);
    if (!lf || !strstr(buf, from)) return;
    char out[1024];
    size_t n = 0;
    const char *p = buf;
    for (const char *q; (q = strstr(p, from)) && n < sizeof out; p = q + lf)
        n += (size_t)snprintf(out + n, sizeof out - n, "%.*s%s", (int)(q - p), p, to);
    if (n < sizeof out) snprintf(out + n, sizeof out - n, "%s", p);
    snprintf(buf, cap, "%s", out);
}

void epar_err_rename(const char *from, const char *to)
{
    rename_in(err_msg, sizeof err_msg, from, to);
    rename_in(err_hint, sizeof err_hint, from, to);
}

const char *epar_err_message(void) { return err_msg[0] ? err_msg : "unknown error"; }
const char *epar_err_hint_text(void) { return err_hint; }
void epar_err_clear(void) { err_msg[0] = '\0'; err_hint[0] = '\0'; }

void *epar_err_alloc(size_t n, size_t size, const char *what)
{
    if (n != 0 && size > SIZE_MAX / n) {
        epar_err_set(EPAR_ENOMEM, "size overflow allocating %s", what);
        return NULL;
    }
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        epar_err_set(EPAR_ENOMEM, "out of memory allocating %s (%.1f MB)", what,
                     (double)n * (double)size / 1048576.0);
        epar_err_hint("reduce --length, --batch or --hidden");
    }
    return p;
}

void epar_err_keep(struct epar_err_carry *c, int status, long job)
{
    if (!status) return;
#pragma omp critical(epar_err_carry)
    if (!c->status || job < c->job) {
        c->status = status;
        c->job = job;
        snprintf(c->msg, sizeof c->msg, "%s", epar_err_message());
        snprintf(c->hint, sizeof c->hint, "%s", err_hint);
    }
}

int epar_err_carried(const struct epar_err_carry *c)
{
    if (!c->status) return EPAR_OK;
    snprintf(err_msg, sizeof err_msg, "%s", c->msg);
    snprintf(err_hint, sizeof err_hint, "%s", c->hint);
    return c->status;
}

void *epar_err_malloc(size_t bytes, const char *what, const char *where)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        epar_err_set(EPAR_ENOMEM, "out of memory allocating %s (%.1f MB) in %s", what, (double)bytes / 1048576.0, where);
        epar_err_hint("reduce --length, --batch or --hidden");
    }
    return p;
}

int epar_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40) return 99;
    int d[41][41];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < c) c = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < c) c = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < c)
                c = d[i - 2][j - 2] + 1;   /* two adjacent letters swapped: one edit */
            d[i][j] = c;
        }
    return d[la][lb];
}

void epar_nearest_init(struct epar_nearest *n, const char *name)
{
    memset(n, 0, sizeof *n);
    n->name = name ? name : "";
    n->d = 4;
}

void epar_nearest_add(struct epar_nearest *n, const char *candidate)
{
    if (!candidate || !strcmp(candidate, n->name)) return;
    size_t ln = strlen(n->name);
    if (ln && !strncmp(candidate, n->name, ln) && candidate[ln] == '-') {   /* "epar" of "epar-basic" */
        if (n->n_family < EPAR_NEAREST_FAMILY) n->family[n->n_family] = candidate;
        n->n_family++;
        if (n->d > 3) {
            n->d = 3;
            n->best = candidate;
        }
        return;
    }
    int d = !strcasecmp(candidate, n->name) ? -1 : epar_edit_distance(n->name, candidate);
    int most = strlen(candidate) > 5 ? 2 : 1;   /* "rop" is rope, "rope" is not "none" */
    if (d < n->d && d <= most) {
        n->d = d;
        n->best = candidate;
    }
}

const char *epar_nearest_text(struct epar_nearest *n, const char *prefix)
{
    if (!n->best) return NULL;
    if (!prefix) prefix = "";
    if (n->d < 3 || n->n_family < 2) {
        snprintf(n->text, sizeof n->text, "'%s%s'", prefix, n->best);
        return n->text;
    }
    int shown = n->n_family < EPAR_NEAREST_FAMILY ? n->n_family : EPAR_NEAREST_FAMILY;
    size_t k = 0;
    n->text[0] = '\0';
    for (int i = 0; i < shown && k < sizeof n->text; i++) {
        const char *sep = i == 0 ? "" : i == shown - 1 && shown == n->n_family ? " or " : ", ";
        k += (size_t)snprintf(n->text + k, sizeof n->text - k, "%s'%s%s'", sep, prefix, n->family[i]);
    }
    if (shown < n->n_family && k < sizeof n->text)
        snprintf(n->text + k, sizeof n->text - k, " or one of %d more", n->n_family - shown);
    return n->text;
}
