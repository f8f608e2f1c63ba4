/* compare's seed checks, shared by compare_checks.c (the static measurements of seeds 001-004), compare_statements.c
 * (those of docs/SOURCE_STATEMENTS.md) and compare_speed.c (the wall-clock ones): one row of seed_checks.csv, and the
 * rows of each file. Calls go one way: compare_checks.c into the other two. Internal to experiments/analysis/compare*.c. */
#ifndef EPAR_EXP_COMPARE_ROWS_H
#define EPAR_EXP_COMPARE_ROWS_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <gsl/gsl_rng.h>
#include "lib/err.h"
#include "lib/csvout.h"
#include "experiments/analysis/compare.h"

/* Append (check, value, reference, se, detail) to the rows of seed_checks.csv; detail is printf-formatted
 * (EPAR_ENOMEM). Here, not in one of the two files, so neither needs the other for it. */
static inline __attribute__((format(printf, 6, 7))) int epar_exp_compare_row(struct epar_compare_checks *t,
                                                                             const char *check, double value,
                                                                             double reference, double se,
                                                                             const char *fmt, ...)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        struct epar_compare_check *row = realloc(t->row, cap * sizeof *row);
        if (!row) return EPAR_ENOMEM;
        t->row = row;
        t->cap = cap;
    }
    struct epar_compare_check *c = &t->row[t->n++];
    snprintf(c->check, sizeof c->check, "%s", check);
    c->value = value;
    c->reference = reference;
    c->se = se;
    c->trials = NAN;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->detail, sizeof c->detail, fmt, ap);
    va_end(ap);
    return EPAR_OK;
}

/* compare_statements.c: the rows of the statements of docs/SOURCE_STATEMENTS.md with a static check, each block on its
 * own stream (seed, 100 + k, EXTRA) */
int epar_exp_compare_statement_checks(const struct epar_compare_cfg *cfg, struct epar_compare_checks *t);
/* compare_statements.c: the variance of x (n) and the standard error of that variance from the fourth central
 * moment */
void epar_exp_compare_var_se(const double *x, int n, double *var, double *se);

/* compare_speed.c: the wall-clock rows: pi_speedup (read from speed when it holds pi-attention at its default
 * parameters, else measured) and the linear/performer cost exponents, with r the checks' stream. */
int epar_exp_compare_timing_checks(const struct epar_compare_cfg *cfg, const struct epar_compare_speed *speed,
                                   gsl_rng *r, struct epar_compare_checks *t);

#endif
