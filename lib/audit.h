/* audit: claims vs measurements -> verdicts (REPRODUCTION.md "Claims under audit").
 *
 * A claim (one element of the protocol's "claims" array) names a reported value, the measurement that
 * checks it and a tolerance rule. Measurements are of four kinds:
 *   "file":     a number read from an experiment's CSV under the output root: file + row selector
 *               ("where": {column: value | [values]}) + "column" (+ optional "sd_column"), and for several
 *               matching rows an "aggregate" (mean | min | max; the sd is then the sample sd across rows);
 *   "posfx":    a deterministic function of the position effect (alpha, beta, gamma, L), computed here;
 *   "needs":    what it would take (e.g. training a 110M model): the verdict is "not reproducible here";
 *   "import":   rows of another audit table (compare/seed_claims.csv), copied as they are.
 * A measurement that cannot be made (file missing: experiment not run; column absent: spec to fix) gives
 * the verdict "not reproducible here" with the reason in the note, never a crash.
 *
 * Tolerance rules: exact (|m-r| <= 1e-12 |r|), relative (|m-r| <= tol |r|), abs (|m-r| <= tol),
 * sd (|m-r| <= k * measured_sd), above (m > r), below (m < r), range (lo <= m <= hi).
 * A "file" measurement may compare against another column of the same row ("against_column") instead of
 * the reported number (e.g. a bound computed by the experiment).
 * Verdicts: reproduced, not reproduced, not reproducible here, trivially true (a claim flagged as an
 * identity whose check holds). */
#ifndef EPAR_AUDIT_H
#define EPAR_AUDIT_H

#include <stddef.h>
#include <jansson.h>
#include "csvout.h"
#include "posfx.h"

enum epar_audit_rule {
    EPAR_AUDIT_EXACT = 0,
    EPAR_AUDIT_RELATIVE,
    EPAR_AUDIT_ABS,
    EPAR_AUDIT_SD,
    EPAR_AUDIT_ABOVE,
    EPAR_AUDIT_BELOW,
    EPAR_AUDIT_RANGE,
    EPAR_AUDIT_RULE_COUNT
};

enum epar_audit_verdict {
    EPAR_AUDIT_REPRODUCED = 0,
    EPAR_AUDIT_NOT_REPRODUCED,
    EPAR_AUDIT_NOT_HERE,
    EPAR_AUDIT_TRIVIAL,
    EPAR_AUDIT_VERDICT_COUNT
};

struct epar_audit_tol {
    enum epar_audit_rule rule;
    double tol;         /* relative / abs tolerance, or k for rule sd */
    double lo, hi;      /* rule range */
};

const char *epar_audit_rule_name(enum epar_audit_rule r);
int epar_audit_rule_parse(const char *name, enum epar_audit_rule *r);
const char *epar_audit_verdict_name(enum epar_audit_verdict v);
/* "relative 1e-06", "within 3 x sd", "> 0.7", "in [0.885, 0.935]" */
void epar_audit_tol_format(const struct epar_audit_tol *t, char *buf, size_t n);

/* Does the measurement satisfy the rule? 1 yes, 0 no, -1 cannot be judged (measured not finite, or rule sd
 * without a finite sd). */
int epar_audit_within(const struct epar_audit_tol *t, double reported, double measured, double sd);
/* available: the measurement was made; holds: result of epar_audit_within; trivial: the claim is an
 * identity. Not available or holds = -1 -> not reproducible here. */
enum epar_audit_verdict epar_audit_verdict(int available, int holds, int trivial);

/* ---- deterministic position-effect quantities ----
 * Distances are given as fractions of L or absolute: d = frac * L + offset (so "L-1" is frac 1, offset -1).
 *   value:             P(d)
 *   retention:         P(d) / P(0)
 *   gain:              retention of fx at d / retention of the basic form with the same alpha, beta
 *   infimum:           alpha/(1+gamma) (enhanced), 0 (basic), 1 (none)
 *   bound_margin:      P(L-1) - infimum (> 0: the bound holds in a sequence and is never reached)
 *   position_strength: mean of the (L,L) matrix P
 *   decay_speed:       mean of P[c, c+k] for c = L/2 (integer division), k = 1 .. c-1
 *   extra_params:      parameters the form adds over the basic form (1 for enhanced: gamma) */
enum epar_audit_qty {
    EPAR_AUDIT_Q_VALUE = 0,
    EPAR_AUDIT_Q_RETENTION,
    EPAR_AUDIT_Q_GAIN,
    EPAR_AUDIT_Q_INFIMUM,
    EPAR_AUDIT_Q_BOUND_MARGIN,
    EPAR_AUDIT_Q_POSITION_STRENGTH,
    EPAR_AUDIT_Q_DECAY_SPEED,
    EPAR_AUDIT_Q_EXTRA_PARAMS,
    EPAR_AUDIT_Q_COUNT
};
int epar_audit_qty_parse(const char *name, enum epar_audit_qty *q);
const char *epar_audit_qty_name(enum epar_audit_qty q);
/* Value of quantity q for effect fx at length L (>= 2) and distance d. EPAR_EINVAL on bad input. */
int epar_audit_posfx_quantity(enum epar_audit_qty q, const struct epar_posfx *fx, int L, double d, double *out);

/* The enhanced-vs-basic gains (x r_mid at d = L/2, x r_max at d = L, continuous limit) determine beta and
 * gamma: with x = e^(beta/2), r = (e^(beta d/L) + gamma)/(1 + gamma). Solves the quadratic in gamma (GSL);
 * EPAR_ECHECK if no solution with gamma >= 0, beta > 0. */
int epar_audit_implied_params(double r_mid, double r_max, double *beta, double *gamma);

/* ---- selecting a number from a table ----
 * where: JSON object {column: value | [values]} (NULL: every row); numbers match numerically (relative
 * 1e-9), strings exactly. aggregate: NULL / "mean" / "min" / "max". Several matching rows without an
 * aggregate is an error. sd_col (may be NULL): taken from the row (aggregate: mean of it); without it and
 * with an aggregate over >= 2 rows, the sample sd across the rows; else NaN.
 * Returns EPAR_OK, or EPAR_EINVAL with the problem in `why` (column absent, no row matches ...). */
int epar_audit_select(const struct epar_table *t, json_t *where, const char *col, const char *sd_col,
                      const char *aggregate, double *value, double *sd, int *nrows, char *why, size_t nwhy);

/* ---- the claims ---- */

/* One evaluated claim (strings owned by the result). */
struct epar_audit_row {
    char *id, *source, *statement, *section, *reported, *measured, *measured_sd, *tolerance, *note;
    enum epar_audit_verdict verdict;
    int spec_problem;           /* the measurement spec does not fit the file (fix the JSON) */
    int imported;               /* copied from an imported table */
    int missing_file;           /* its measurement file is absent (experiment not run / not built) */
    int needs;                  /* cannot be measured here at all (measure.needs) */
    char **figures;             /* relative to the output root; NULL-terminated (may be NULL) */
};

struct epar_audit {
    size_t n, cap;
    struct epar_audit_row *rows;
    int counts[EPAR_AUDIT_VERDICT_COUNT];
    int spec_problems, missing_files, needs;
};

/* Validate the "claims" array (ids unique, fields typed, rules and quantities known). EPAR_EPROTOCOL with
 * the JSON path ($.claims[3].measure.file) on failure. claims may be NULL (no claims). */
int epar_audit_check(json_t *claims, const char *protocol_path);
/* Evaluate every claim against the files under out_root. Only allocation failures are errors. */
int epar_audit_run(json_t *claims, const char *out_root, struct epar_audit *a);
void epar_audit_free(struct epar_audit *a);
/* claims.csv: claim_id,source,statement,reported,measured,measured_sd,tolerance,verdict,note */
struct epar_table *epar_audit_table(const struct epar_audit *a);
/* Verdict counts per claim section, in first-appearance order:
 * section,reproduced,not_reproduced,not_reproducible_here,trivially_true. NULL + EPAR_ENOMEM on failure. */
struct epar_table *epar_audit_section_counts(const struct epar_audit *a);

#endif
