/* compare's seed checks, shared by compare_checks.c (the static measurements) and compare_speed.c (the wall-clock
 * ones): one row of seed_checks.csv, and the timing rows. Internal to experiments/compare*.c. */
#ifndef EPAR_EXP_COMPARE_ROWS_H
#define EPAR_EXP_COMPARE_ROWS_H

#include <stdarg.h>
#include <stdio.h>
#include <gsl/gsl_rng.h>
#include "lib/err.h"
#include "lib/csvout.h"
#include "compare.h"

/* Append (check, value, reference, se, detail) to seed_checks.csv; detail is printf-formatted (EPAR_ENOMEM). Here,
 * not in one of the two files, so neither needs the other for it. */
static inline __attribute__((format(printf, 6, 7))) int epar_exp_compare_row(struct epar_table *t, const char *check,
                                                                             double value, double reference, double se,
                                                                             const char *fmt, ...)
{
    char detail[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return epar_csv_append(t, "sddds", check, value, reference, se, detail) ? EPAR_ENOMEM : EPAR_OK;
}

/* The wall-clock rows: pi_speedup (read from speed when it holds pi-attention at its default parameters, else
 * measured) and the linear/performer cost exponents, with r the checks' stream. */
int epar_exp_compare_timing_checks(const struct epar_compare_cfg *cfg, const struct epar_table *speed, gsl_rng *r,
                                   struct epar_table *t);

#endif
