/* audit: claims vs measurements -> verdicts (docs/PROTOCOLS.md "Claims under audit"). The only place a verdict is
 * made: experiments write measurements, the protocol's "claims" array says what each claim states, what measures
 * it and by which rule it is judged, and this module turns measurement + rule into a verdict.
 *
 * A claim's measurement is one of:
 *   "file":     a number of an experiment's CSV under the output root: file + row selector ("where": {column: value
 *               | [values]}) + "column"; "sd_column" (across-seed sd; the measurement is then stochastic with n =
 *               the seeds of the folder's run.json, or "n_column"), "se_run_column" (run-level standard error that
 *               floors the sd), "se_column" (standard error of a Monte-Carlo estimate), "against_column" (compare
 *               with another column of the row instead of the reported number), "lo_column" + "hi_column" (the
 *               measurement's own confidence interval at the audit's level, e.g. a distribution-free one of a
 *               median: the threshold rules judge it; beats_all: the smallest ends of the paired intervals), "aggregate" (mean | min | max over several rows; the mean's
 *               spread is then the sample sd across the rows, n = rows), "group_by" (with a mean and no sd_column:
 *               the sd across the groups' means, n = groups: a per-seed average's spread);
 *   "posfx":    a deterministic function of the position effect (alpha, beta, gamma, L), computed here;
 *   "readings": several of the above, each with a "label" (and optionally its own "reported"), judged one by one:
 *               all hold -> reproduced, some -> partly reproduced, none -> not reproduced;
 *   "needs":    what it would take (training a 110M model): "not reproducible here".
 *
 * One rule per kind of figure (docs/commands/run-all.md "How to read a verdict"):
 *   printed     a figure printed by the paper, of a deterministic quantity: [r - u/2, r + u/2) with u one unit of
 *               the last printed digit ("78%" -> [77.5%, 78.5%));
 *   prediction  a figure of another run of a stochastic quantity: r must fall in the prediction interval of a new
 *               run, m +- t(n-1, (1+level)/2) s sqrt(1 + 1/n), s = the across-seed sd floored by the run-level
 *               standard error, widened by u/2 when r is printed; fewer than 2 seeds: "needs >= 2 seeds";
 *   estimate    a Monte-Carlo estimate against an exact value: |m - r| <= z((1+level)/2) se;
 *   exact       a deterministic equality: |m - r| <= tol (default 1e-12 max(1, |r|); a larger tol needs "why");
 *   relative    a deterministic value the reference computed in float32: |m - r| <= tol |r| ("why" required);
 *   above/below a threshold: deterministic m > r / m < r; stochastic: the confidence interval of the mean
 *               (t(n-1) s / sqrt(n), or z se, or the lo_column..hi_column interval) entirely on the claimed
 *               side -> holds, entirely on the other -> fails, else "inconclusive";
 *   range       lo <= m <= hi (stochastic: the confidence interval of the mean meets [lo, hi]);
 *   at_least    a wall-clock speed-up: m >= r (1 - slack), slack with "why";
 *   beats_all   "the subject improves on every rival": m is the smallest improvement over the rivals ("column"),
 *               with its interval ["lo_column", "hi_column"] (the smallest lower and upper ends of the paired
 *               intervals, required): holds when lo > r, fails when a rival is better at a Holm-adjusted p below
 *               1 - level ("holm_column") or, with "gain" in the tolerance (the reported size of the gain), when
 *               "nonsup_column" (the smallest upper end at the Bonferroni-adjusted level) is below it, else
 *               "inconclusive"; lo NaN (a comparison without spread) is judged like an unlearned task.
 * Flags: "trivial": "reason" (an identity or by-construction property: "trivially true" when its check holds, "not
 * reproduced" when it does not), "ill_posed": "reason" (the statement cannot be true or false as written: the
 * readings are shown, the verdict is "ill-posed").
 * Stale inputs: a claim read from a folder whose run.json does not match the run being audited (protocol hash,
 * preset, seeds, epar version, command-line overrides) gets the verdict "stale", with the verdict it would have
 * had in the note. */
#ifndef EPAR_AUDIT_H
#define EPAR_AUDIT_H

#include <stddef.h>
#include <jansson.h>
#include "csvout.h"
#include "posfx.h"

enum epar_audit_rule {
    EPAR_AUDIT_PRINTED = 0,
    EPAR_AUDIT_PREDICTION,
    EPAR_AUDIT_ESTIMATE,
    EPAR_AUDIT_EXACT,
    EPAR_AUDIT_RELATIVE,
    EPAR_AUDIT_ABOVE,
    EPAR_AUDIT_BELOW,
    EPAR_AUDIT_RANGE,
    EPAR_AUDIT_AT_LEAST,
    EPAR_AUDIT_BEATS_ALL,
    EPAR_AUDIT_RULE_COUNT
};

enum epar_audit_verdict {
    EPAR_AUDIT_REPRODUCED = 0,
    EPAR_AUDIT_PARTLY,
    EPAR_AUDIT_NOT_REPRODUCED,
    EPAR_AUDIT_INCONCLUSIVE,
    EPAR_AUDIT_TRIVIAL,
    EPAR_AUDIT_ILL_POSED,
    EPAR_AUDIT_NEEDS_SEEDS,
    EPAR_AUDIT_NOT_HERE,
    EPAR_AUDIT_STALE,
    EPAR_AUDIT_VERDICT_COUNT
};

/* Outcome of judging one measurement by one rule. */
enum epar_audit_outcome {
    EPAR_AUDIT_HOLDS = 1,
    EPAR_AUDIT_FAILS = 0,
    EPAR_AUDIT_UNDECIDED = -1,      /* the measurement is not a finite number */
    EPAR_AUDIT_OPEN = -2,           /* the confidence interval straddles the threshold: inconclusive */
    EPAR_AUDIT_FEW_SEEDS = -3,      /* a spread is needed and there is none (one seed) */
    EPAR_AUDIT_NOT_LEARNED = -4,    /* a trained proxy none of whose models beat a constant answer: not judged */
    EPAR_AUDIT_NO_SPREAD = -5       /* a stochastic measurement whose seeds all gave the same value (e.g. every model at
                                     * accuracy 1.0): an interval of width 0 is no measurement, judged like NOT_LEARNED */
};

struct epar_audit_tol {
    enum epar_audit_rule rule;
    double tol;         /* exact / relative tolerance (0: the default of exact) */
    double lo, hi;      /* range */
    double slack;       /* at_least */
    double gain;        /* beats_all: the effect the source reports ("paper: 4.7%" -> 0.047); not reproduced also when
                         * the interval of the comparison with some rival excludes it (non-superiority); NaN: none */
    double margin;      /* above / below: the smallest effect of interest of the claim's family ($.audit.equivalence,
                         * fixed before the run): not reproduced also when the interval lies inside r +- margin (two
                         * one-sided tests: no effect of that size); 0: none */
};

/* A measured value and what is known of its spread. */
struct epar_audit_meas {
    double value;
    int stochastic;     /* a mean over seeds (or rows): sd and n describe its spread */
    double sd;          /* across-seed (or across-row) sample sd; NaN with one seed */
    int n;              /* seeds (or rows) behind the mean */
    double se_run;      /* run-level standard error of a seed's mean (floors sd), NaN if unknown */
    double se;          /* standard error of a Monte-Carlo estimate (rule estimate and thresholds), else NaN */
    double holm;        /* beats_all: the smallest Holm-adjusted p of a rival better than the subject (NaN: none) */
    int interval;       /* 1: [lo, hi] is the measurement's own interval at the audit's level, computed where it was
                         * measured (e.g. distribution-free); the threshold rules judge it instead of m +- t s / sqrt(n) */
    double lo, hi;      /* that interval (NaN: too few values for one at the level); beats_all judges lo */
    double nonsup;      /* beats_all: the smallest, over the rivals, upper end of the improvement's interval at the
                         * Bonferroni-adjusted level 1 - (1 - level) / rivals (NaN: none); below the reported gain, the
                         * gain is excluded for some rival (Holm's first step: at least one rejection) */
};
/* a measurement with nothing known yet */
#define EPAR_AUDIT_MEAS_NONE                                                                                            \
    ((struct epar_audit_meas){.value = NAN, .sd = NAN, .se_run = NAN, .se = NAN, .holm = NAN, .lo = NAN, .hi = NAN,    \
                              .nonsup = NAN})

const char *epar_audit_rule_name(enum epar_audit_rule r);
int epar_audit_rule_parse(const char *name, enum epar_audit_rule *r);
const char *epar_audit_verdict_name(enum epar_audit_verdict v);     /* "partly reproduced" */
const char *epar_audit_verdict_key(enum epar_audit_verdict v);      /* "partly_reproduced" (CSV columns) */

/* A printed figure: "0.934" -> 0.934 and unit 0.001; "78%" -> 0.78 and 0.01; "4.2" -> 4.2 and 0.1; "16" -> 16 and
 * 1. EPAR_EINVAL when s is not a plain decimal number with an optional trailing '%'. */
int epar_audit_printed_parse(const char *s, double *value, double *unit);

/* Judge measurement m against the reported value r (unit u of its last printed digit, 0 when not printed) by rule
 * t at confidence level `level` (e.g. 0.95). accepted (n) gets what the rule accepts, e.g. "[0.9335, 0.9345)" or
 * "r within m +- 0.0412 (t(4)=2.78 x sd 0.0137 floored x 1.1)". */
enum epar_audit_outcome epar_audit_judge(const struct epar_audit_tol *t, double r, double u,
                                         const struct epar_audit_meas *m, double level, char *accepted, size_t n);

/* ---- deterministic position-effect quantities ----
 * Distances are given as fractions of L or absolute: d = frac * L + offset (so "L-1" is frac 1, offset -1).
 *   value:             P(d)
 *   retention:         P(d) / P(0)
 *   gain:              retention of fx at d / retention of the basic form with the same alpha, beta
 *   infimum:           alpha/(1+gamma) (enhanced), 0 (basic), 1 (none)
 *   bound_margin:      P(L-1) - infimum (> 0: the bound holds in a sequence and is never reached)
 *   position_strength: mean of the (L,L) matrix P
 *   decay_speed:       mean of P[c, c+k] for c = L/2 (integer division), k = 1 .. c-1
 *   extra_params:      parameters the form reads beyond the basic form's alpha, beta (epar_posfx_nparams) */
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
 * aggregate is an error. sd_col (may be NULL): taken from the row (aggregate mean: mean of it; min/max: the chosen
 * row's); without it and with the aggregate mean over >= 2 rows, the sample sd across the rows; else NaN.
 * row (may be NULL): the table row taken (the one row, or the chosen row of min/max), -1 for a mean. Returns EPAR_OK, or EPAR_EINVAL with the problem in `why` (column absent, no row matches ...). */
int epar_audit_select(const struct epar_table *t, json_t *where, const char *col, const char *sd_col,
                      const char *aggregate, double *value, double *sd, int *nrows, long *row, char *why, size_t nwhy);

/* ---- the run being audited ----
 * What a folder's run.json must say to be this run's input (NULL / n_seeds 0: not checked). */
struct epar_audit_expect {
    const char *dir;            /* "optimal" */
    const char *protocol_hash;
    const char *preset;
    int n_seeds;
    const unsigned long *seeds;
    const char *version;
};

struct epar_audit_ctx {
    const char *out_root;
    double level;                           /* confidence / prediction level ($.audit.level) */
    const struct epar_audit_expect *expect; /* one per experiment folder */
    int n_expect;
    json_t *equivalence;                    /* NULL, or $.audit.equivalence: {family: {"margin": x, "why": ...}} */
    json_t *overrides;                      /* NULL, or {claim id: {"root": folder, "level": x}}: that claim's files are
                                             * read under root instead of out_root and judged at level x (the staged
                                             * benchmark: a claim decided at stage k on the tables of its own cells at
                                             * that stage's seeds, at the per-look level) */
};

/* ---- the claims ---- */

/* One evaluated claim (strings owned by the result). */
struct epar_audit_row {
    char *id, *source, *statement, *section, *reported, *measured, *measured_sd, *measured_lo, *measured_hi, *n_seeds,
        *rule, *accepted, *measurement, *input, *run_hash, *run_seeds, *run_version, *note;
    enum epar_audit_verdict verdict;
    int spec_problem;           /* the measurement spec does not fit the file (fix the JSON) */
    int missing_file;           /* its measurement file is absent (experiment not run) */
    int needs;                  /* cannot be measured here at all (measure.needs) */
    int broken_identity;        /* a by-construction check failed: a defect of epar, or parameters outside its scope */
    int seeds_help;             /* inconclusive (or needs >= 2 seeds) with a reading whose interval straddles its
                                 * threshold: more seeds can decide it (a saturated or unlearned reading cannot) */
    double seeds_needed;        /* for such a claim: the seeds at which its intervals at the observed spread would
                                 * decide every open reading (t quantiles, the mean held); NaN: unknown or none */
    char **figures;             /* relative to the output root; NULL-terminated (may be NULL) */
};

struct epar_audit {
    size_t n, cap;
    struct epar_audit_row *rows;
    int counts[EPAR_AUDIT_VERDICT_COUNT];
    int spec_problems, missing_files, needs, stale;
};

/* Validate the "claims" array (ids unique, fields typed, rules and quantities known, reasons where a rule needs
 * them). EPAR_EPROTOCOL with the JSON path ($.claims[3].measure.file) on failure. claims may be NULL. */
int epar_audit_check(json_t *claims, const char *protocol_path);
/* The audit's level: $.audit.level of the protocol root (default 0.95); EPAR_EPROTOCOL when malformed. */
int epar_audit_level(json_t *root, const char *protocol_path, double *level);
/* $.audit.equivalence of the protocol root (NULL when absent; borrowed), checked: each family {"margin": > 0, "why":
 * text}, and every claim's tolerance.equivalence names one of them. EPAR_EPROTOCOL when malformed. */
int epar_audit_equivalence(json_t *root, const char *protocol_path, json_t **eq);
/* Evaluate every claim against the files under ctx->out_root. Only allocation failures are errors. */
int epar_audit_run(json_t *claims, const struct epar_audit_ctx *ctx, struct epar_audit *a);
void epar_audit_free(struct epar_audit *a);
/* claims.csv: claim_id,section,source,statement,reported,measured,measured_sd,measured_lo,measured_hi,n_seeds,rule,
 * (...,note,seeds_needed: lib/audit's seeds_needed of an open claim that more seeds can decide, else nan)
 * accepted,verdict,measurement,input,run_protocol_hash,run_seeds,run_epar_version,note (measured_lo, measured_hi:
 * the interval of the measured value at the audit's level, where the file gives one; "a; b" like measured) */
struct epar_table *epar_audit_table(const struct epar_audit *a);
/* Verdict counts per claim section, in first-appearance order: section, then one column per verdict
 * (epar_audit_verdict_key). NULL + EPAR_ENOMEM on failure. */
struct epar_table *epar_audit_section_counts(const struct epar_audit *a);

#endif
