/* Minimal test vocabulary (GSL style): one line per check, a summary line, exit status = failures.
 * Each test program prints "ok <description>" / "not ok <description> ..." lines and ends with
 * "# <prog>: N passed, M failed"; tests/run.sh adds them up. */
#ifndef EPAR_TEST_CHECK_H
#define EPAR_TEST_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_passed, check_failed __attribute__((unused));

static inline void check_report(int ok, const char *fmt, va_list ap, const char *detail)
{
    if (ok) check_passed++;
    else check_failed++;
    if (ok && !getenv("CHECK_VERBOSE")) return;
    printf("%s ", ok ? "ok" : "not ok");
    vprintf(fmt, ap);
    if (!ok && detail) printf("  [%s]", detail);
    putchar('\n');
}

/* |got - want| <= rel * |want| (or <= rel when want == 0); NaN equals NaN */
static inline void check_rel(double got, double want, double rel, const char *fmt, ...)
{
    int ok = (isnan(got) && isnan(want)) || (isinf(want) && got == want) ||
             fabs(got - want) <= rel * (want != 0 ? fabs(want) : 1.0);
    char d[128];
    snprintf(d, sizeof d, "got %.12g, want %.12g, rel tol %g", got, want, rel);
    va_list ap;
    va_start(ap, fmt);
    check_report(ok, fmt, ap, d);
    va_end(ap);
}

static inline void check_abs(double got, double want, double tol, const char *fmt, ...)
{
    int ok = (isnan(got) && isnan(want)) || fabs(got - want) <= tol;
    char d[128];
    snprintf(d, sizeof d, "got %.12g, want %.12g, abs tol %g", got, want, tol);
    va_list ap;
    va_start(ap, fmt);
    check_report(ok, fmt, ap, d);
    va_end(ap);
}

static inline void check_int(long got, long want, const char *fmt, ...)
{
    char d[96];
    snprintf(d, sizeof d, "got %ld, want %ld", got, want);
    va_list ap;
    va_start(ap, fmt);
    check_report(got == want, fmt, ap, d);
    va_end(ap);
}

static inline void check_true(int cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    check_report(cond != 0, fmt, ap, "condition false");
    va_end(ap);
}

/* The tests' oracle of an argmax: index of the largest entry, the first one on exact ties, NaN skipped, 0 if all are
 * NaN. The library takes every argmax with epar_metric_argmax_tied (ties within rounding); this plain one is what
 * the tests compare it with (equal after epar_metric_tie_merge) and the naive form of one-pass statistics. */
static inline size_t ref_argmax(const double *x, size_t n)
{
    size_t best = 0;
    int found = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(x[i]) && (!found || x[i] > x[best])) {
            best = i;
            found = 1;
        }
    return best;
}

static inline int check_summary(const char *prog)
{
    printf("# %s: %d passed, %d failed\n", prog, check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
