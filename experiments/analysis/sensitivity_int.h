/* The sensitivity writer's own parts shared by its files (private to experiments/analysis/sensitivity_*.c; the
 * public interface is sensitivity.h):
 *   sensitivity_tables.c  every table derived from the result (sweeps, grids, baseline, retention)
 *   sensitivity_report.c  parameter_sensitivity_report.txt and the stdout summary
 *   sensitivity_write.c   the files and figures (epar_exp_sensitivity_write)
 * Calls go one way: the writer into the report and the tables, the report into the tables. Prefix epar_sens_. */
#ifndef EPAR_EXP_SENSITIVITY_INT_H
#define EPAR_EXP_SENSITIVITY_INT_H

#include <stdio.h>
#include "lib/csvout.h"
#include "experiments/analysis/sensitivity.h"

/* what every writer reads: the configuration and the result */
struct ctx {
    const struct epar_sensitivity_cfg *cfg;
    const struct epar_sensitivity_result *r;
};

/* the derived tables, built for writing (and the summary) and freed after */
struct tables {
    struct epar_table *alpha, *beta, *gamma, *baseline, *basic_vs_enhanced, *retention, *claims, *curves,
        *grid_ab, *grid_bg;
};

/* ---- sensitivity_tables.c ---- */
/* the column `name` of point p, form f (epar_sens_value of c's result) */
double epar_sens_ctx_value(const struct ctx *c, int p, int f, const char *name);
/* every table of the result (freed by the caller, also on error) */
int epar_sens_tables_build(const struct ctx *c, struct tables *res);
/* retention.csv, retention_curves.csv and retention_claims.csv (all the summary needs) */
int epar_sens_retention_tables(const struct ctx *c, struct tables *res);
/* free every table of t and set it NULL */
void epar_sens_tables_free(struct tables *t);

/* ---- sensitivity_report.c ---- */
/* parameter_sensitivity_report.txt, section by section (NULL: out of memory) */
char *epar_sens_build_report(const struct ctx *c, const struct tables *res);

#endif
