/* audit: names, the rules (judging one measurement by one rule), position-effect quantities and checking the
 * protocol's claims (see audit.h; evaluation: audit_eval.c, tables: audit_table.c). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_poly.h>
#include "audit.h"
#include "stats.h"
#include "err.h"
#include "audit_int.h"

static const char *const rule_names[EPAR_AUDIT_RULE_COUNT] = {"printed", "prediction", "estimate", "exact", "relative",
                                                             "above", "below", "range", "at_least", "beats_all"};
static const char *const verdict_names[EPAR_AUDIT_VERDICT_COUNT] = {
    "reproduced", "partly reproduced", "not reproduced", "inconclusive", "trivially true", "ill-posed",
    "needs >= 2 seeds", "not reproducible here", "stale"};
static const char *const verdict_keys[EPAR_AUDIT_VERDICT_COUNT] = {
    "reproduced", "partly_reproduced", "not_reproduced", "inconclusive", "trivially_true", "ill_posed",
    "needs_2_seeds", "not_reproducible_here", "stale"};
static const char *const qty_names[EPAR_AUDIT_Q_COUNT] = {"value", "retention", "gain", "infimum", "bound_margin",
                                                         "position_strength", "decay_speed", "extra_params"};

const char *epar_audit_rule_name(enum epar_audit_rule r)
{
    return (unsigned)r < EPAR_AUDIT_RULE_COUNT ? rule_names[r] : "?";
}

int epar_audit_rule_parse(const char *name, enum epar_audit_rule *r)
{
    for (int i = 0; i < EPAR_AUDIT_RULE_COUNT; i++)
        if (name && !strcmp(name, rule_names[i])) { *r = (enum epar_audit_rule)i; return EPAR_OK; }
    return epar_err_set(EPAR_EINVAL, "unknown tolerance rule '%s'", name ? name : "");
}

const char *epar_audit_verdict_name(enum epar_audit_verdict v)
{
    return (unsigned)v < EPAR_AUDIT_VERDICT_COUNT ? verdict_names[v] : "?";
}

const char *epar_audit_verdict_key(enum epar_audit_verdict v)
{
    return (unsigned)v < EPAR_AUDIT_VERDICT_COUNT ? verdict_keys[v] : "?";
}

int epar_audit_qty_parse(const char *name, enum epar_audit_qty *q)
{
    for (int i = 0; i < EPAR_AUDIT_Q_COUNT; i++)
        if (name && !strcmp(name, qty_names[i])) { *q = (enum epar_audit_qty)i; return EPAR_OK; }
    return epar_err_set(EPAR_EINVAL, "unknown position-effect quantity '%s'", name ? name : "");
}

const char *epar_audit_qty_name(enum epar_audit_qty q)
{
    return (unsigned)q < EPAR_AUDIT_Q_COUNT ? qty_names[q] : "?";
}

int epar_audit_printed_parse(const char *s, double *value, double *unit)
{
    if (!s) return EPAR_EINVAL;
    const char *p = s;
    if (*p == '-' || *p == '+') p++;
    int digits = 0, decimals = -1;
    for (; *p; p++) {
        if (*p >= '0' && *p <= '9') {
            digits++;
            if (decimals >= 0) decimals++;
        } else if (*p == '.' && decimals < 0) {
            decimals = 0;
        } else {
            break;
        }
    }
    int pct = *p == '%';
    if (!digits || p[pct] != '\0') return EPAR_EINVAL;
    char *end;
    *value = strtod(s, &end);
    *unit = pow(10.0, -(decimals > 0 ? decimals : 0));
    if (pct) { *value /= 100; *unit /= 100; }
    return EPAR_OK;
}

/* ---- judging one measurement by one rule ---- */


/* the measurement's confidence half-width for its mean (or estimate): q s / sqrt(n), or z se; NaN if none */
static double conf_half(const struct epar_audit_meas *m, double level, char *how, size_t n)
{
    if (isfinite(m->se)) {
        double z = epar_stats_quantile(level, 0);
        snprintf(how, n, "z=%.3g x se %.3g", z, m->se);
        return z * m->se;
    }
    double s = m->sd;
    if (isfinite(m->se_run) && !(s >= m->se_run)) s = m->se_run;
    double q = epar_stats_quantile(level, m->n - 1);
    snprintf(how, n, "t(%d)=%.3g x sd %.3g%s / sqrt(%d)", m->n - 1, q, s, s == m->sd ? "" : " (run-level floor)", m->n);
    return q * s / sqrt((double)m->n);
}

static int needs_spread(const struct epar_audit_meas *m)
{
    return m->stochastic && !isfinite(m->se) && (m->n < 2 || !isfinite(m->sd));
}

/* a stochastic mean over >= 2 seeds whose values were all the same (sd exactly 0, no run-level floor): a saturated
 * reading (every model at 1.0) or a degenerate one; its interval of width 0 would count as certain and says nothing */
static int no_spread(const struct epar_audit_meas *m)
{
    return m->stochastic && !isfinite(m->se) && m->n >= 2 && m->sd == 0 && !(m->se_run > 0);
}

/* the confidence interval of a stochastic measurement for the threshold rules: its own (lo_column, hi_column) or
 * m +- conf_half; EPAR_AUDIT_FEW_SEEDS when a spread is needed and there is none, EPAR_AUDIT_OPEN when its own
 * interval is undefined (too few values for one at the level: it is the whole line), else 0 */
static int threshold_interval(const struct epar_audit_meas *m, double level, double *lo, double *hi, char *how, size_t n)
{
    *lo = *hi = NAN;
    if (!m->interval && no_spread(m)) {
        snprintf(how, n, "every seed gave the same value: no spread, no interval");
        return EPAR_AUDIT_NO_SPREAD;
    }
    if (m->interval) {
        snprintf(how, n, "the measurement's own interval at the level, from its file");
        *lo = m->lo;
        *hi = m->hi;
        return isfinite(m->lo) && isfinite(m->hi) ? 0 : EPAR_AUDIT_OPEN;
    }
    if (needs_spread(m)) return EPAR_AUDIT_FEW_SEEDS;
    double half = conf_half(m, level, how, n);
    *lo = m->value - half;
    *hi = m->value + half;
    return 0;
}

enum epar_audit_outcome epar_audit_judge(const struct epar_audit_tol *t, double r, double u,
                                         const struct epar_audit_meas *m, double level, char *acc, size_t n)
{
    double v = m->value;
    char how[160];
    acc[0] = '\0';
    if (t->rule == EPAR_AUDIT_BEATS_ALL && m->n == 1) return EPAR_AUDIT_FEW_SEEDS;   /* one seed: no interval */
    if (!isfinite(v) && t->rule != EPAR_AUDIT_BEATS_ALL) return EPAR_AUDIT_UNDECIDED;
    switch (t->rule) {
    case EPAR_AUDIT_PRINTED: {
        double lo = r - u / 2, hi = r + u / 2;
        snprintf(acc, n, "[%.10g, %.10g)", lo, hi);
        return v >= lo && v < hi ? EPAR_AUDIT_HOLDS : EPAR_AUDIT_FAILS;
    }
    case EPAR_AUDIT_PREDICTION: {
        /* a prediction interval is always about a spread: one row (a mean over one seed, an sd_column of NaN) has
         * none, whatever the measure says about being stochastic */
        double s = m->sd;
        int floored = isfinite(m->se_run) && !(s >= m->se_run);
        if (floored) s = m->se_run;
        if (m->n < 2 || !isfinite(s)) return EPAR_AUDIT_FEW_SEEDS;
        double q = epar_stats_quantile(level, m->n - 1);
        double half = q * s * sqrt(1.0 + 1.0 / m->n) + u / 2;
        snprintf(acc, n, "[%.6g, %.6g] = m +- t(%d)=%.3g x sd %.3g%s x sqrt(1+1/%d)%s", v - half, v + half, m->n - 1, q,
                 s, floored ? " (run-level floor)" : "", m->n, u > 0 ? " + half a printed unit" : "");
        return fabs(r - v) <= half ? EPAR_AUDIT_HOLDS : EPAR_AUDIT_FAILS;
    }
    case EPAR_AUDIT_ESTIMATE: {
        if (!isfinite(m->se)) return EPAR_AUDIT_UNDECIDED;
        double half = conf_half(m, level, how, sizeof how) + u / 2;
        snprintf(acc, n, "[%.6g, %.6g] = m +- %s", v - half, v + half, how);
        return fabs(r - v) <= half ? EPAR_AUDIT_HOLDS : EPAR_AUDIT_FAILS;
    }
    case EPAR_AUDIT_EXACT: {
        double tol = t->tol > 0 ? t->tol : 1e-12 * fmax(1.0, fabs(r));
        snprintf(acc, n, "%.10g +- %.3g", r, tol);
        return fabs(v - r) <= tol ? EPAR_AUDIT_HOLDS : EPAR_AUDIT_FAILS;
    }
    case EPAR_AUDIT_RELATIVE:
        snprintf(acc, n, "%.10g +- %.3g relative", r, t->tol);
        return fabs(v - r) <= t->tol * fabs(r) ? EPAR_AUDIT_HOLDS : EPAR_AUDIT_FAILS;
    case EPAR_AUDIT_ABOVE:
    case EPAR_AUDIT_BELOW: {
        int above = t->rule == EPAR_AUDIT_ABOVE;
        if (!m->stochastic && !isfinite(m->se) && !m->interval) {
            snprintf(acc, n, "%s %.10g", above ? ">" : "<", r);
            return (above ? v > r : v < r) ? EPAR_AUDIT_HOLDS : EPAR_AUDIT_FAILS;
        }
        double lo, hi;
        int no = threshold_interval(m, level, &lo, &hi, how, sizeof how);
        if (no == EPAR_AUDIT_FEW_SEEDS) return no;
        if (no == EPAR_AUDIT_NO_SPREAD) {
            snprintf(acc, n, "%s %.6g for the whole interval (%s)", above ? ">" : "<", r, how);
            return no;
        }
        int len = snprintf(acc, n, "%s %.6g for the whole interval [%.6g, %.6g] (%s)", above ? ">" : "<", r, lo, hi, how);
        if (t->margin > 0 && len >= 0 && (size_t)len < n)
            snprintf(acc + len, n - (size_t)len, "; not reproduced also when the interval lies inside %.6g +- %.4g (no "
                     "effect as large as the family's smallest effect of interest: two one-sided tests)", r, t->margin);
        if (no) return no;
        if (above ? lo > r : hi < r) return EPAR_AUDIT_HOLDS;
        if (above ? hi <= r : lo >= r) return EPAR_AUDIT_FAILS;
        if (t->margin > 0 && lo > r - t->margin && hi < r + t->margin) return EPAR_AUDIT_FAILS;
        return EPAR_AUDIT_OPEN;
    }
    case EPAR_AUDIT_RANGE: {
        if (!m->stochastic && !isfinite(m->se) && !m->interval) {
            snprintf(acc, n, "[%.10g, %.10g]", t->lo, t->hi);
            return v >= t->lo && v <= t->hi ? EPAR_AUDIT_HOLDS : EPAR_AUDIT_FAILS;
        }
        /* as above and below: the claim (lo <= x <= hi) holds when the whole confidence interval of the mean lies
         * in the range, fails when it misses the range, and is open when it straddles an end (an interval that
         * merely meets the range is what few seeds give for any range) */
        double lo, hi;
        int no = threshold_interval(m, level, &lo, &hi, how, sizeof how);
        if (no == EPAR_AUDIT_FEW_SEEDS) return no;
        if (no == EPAR_AUDIT_NO_SPREAD) {
            snprintf(acc, n, "the whole interval in [%.6g, %.6g] (%s)", t->lo, t->hi, how);
            return no;
        }
        snprintf(acc, n, "the whole interval [%.6g, %.6g] in [%.6g, %.6g] (%s)", lo, hi, t->lo, t->hi, how);
        if (no) return no;
        if (lo >= t->lo && hi <= t->hi) return EPAR_AUDIT_HOLDS;
        if (hi < t->lo || lo > t->hi) return EPAR_AUDIT_FAILS;
        return EPAR_AUDIT_OPEN;
    }
    case EPAR_AUDIT_BEATS_ALL: {
        /* "the subject improves on every rival" (an intersection-union test: each comparison at the level, no
         * correction): v is the smallest paired improvement over the rivals, lo the smallest lower end of their
         * intervals at the audit's level (computed where the comparisons are, e.g. benchmark/main_table.csv; NaN when a
         * comparison has no spread, so the test cannot succeed). Holds when lo > r. Not reproduced when a rival is
         * better after a Holm adjustment across the rivals, or, for a claim that reports the size of the gain, when
         * some rival's improvement interval at the Bonferroni-adjusted level ends below that gain (the reported effect
         * is excluded: non-superiority; Holm's first step, so at least one rival rejects exactly when Bonferroni
         * does); else inconclusive */
        char p[64] = "no rival is better with a defined p";
        if (isfinite(m->holm)) snprintf(p, sizeof p, "smallest such p: %.3g", m->holm);
        int gain = isfinite(t->gain);
        int len = snprintf(acc, n, "every rival's interval above %.6g (smallest improvement %.6g, interval [%.6g, %.6g]: "
                           "smallest lower end %.6g); not reproduced if a rival is better at Holm-adjusted p < %.3g (%s)",
                           r, v, m->lo, m->hi, m->lo, 1 - level, p);
        if (gain && len >= 0 && (size_t)len < n)
            snprintf(acc + len, n - (size_t)len, " or if some rival's adjusted interval ends below the reported gain %.4g "
                     "(smallest upper end: %.4g)", t->gain, m->nonsup);
        if (isfinite(m->holm) && m->holm < 1 - level) return EPAR_AUDIT_FAILS;
        if (gain && isfinite(m->nonsup) && m->nonsup < t->gain) return EPAR_AUDIT_FAILS;
        if (m->lo > r) return EPAR_AUDIT_HOLDS;
        return isnan(m->lo) ? EPAR_AUDIT_NO_SPREAD : EPAR_AUDIT_OPEN;
    }
    case EPAR_AUDIT_AT_LEAST:
        snprintf(acc, n, ">= %.6g = %.6g x (1 - %.3g)", r * (1 - t->slack), r, t->slack);
        return v >= r * (1 - t->slack) ? EPAR_AUDIT_HOLDS : EPAR_AUDIT_FAILS;
    default:
        return EPAR_AUDIT_UNDECIDED;
    }
}

/* ---- position-effect quantities ---- */

int epar_audit_posfx_quantity(enum epar_audit_qty q, const struct epar_posfx *fx, int L, double d, double *out)
{
    if (L < 2) return epar_err_set(EPAR_EINVAL, "sequence length must be >= 2, got '%d'", L);
    if (epar_posfx_validate(fx)) return EPAR_EINVAL;
    if (!(d >= 0)) return epar_err_set(EPAR_EINVAL, "distance must be >= 0, got '%g'", d);
    double Ld = (double)L;
    switch (q) {
    case EPAR_AUDIT_Q_VALUE: *out = epar_posfx_value(fx, d, Ld); break;
    case EPAR_AUDIT_Q_RETENTION: *out = epar_posfx_value(fx, d, Ld) / epar_posfx_value(fx, 0, Ld); break;
    case EPAR_AUDIT_Q_GAIN: {
        struct epar_posfx b = *fx;
        b.form = EPAR_FORM_BASIC;
        double rb = epar_posfx_value(&b, d, Ld) / epar_posfx_value(&b, 0, Ld);
        *out = (epar_posfx_value(fx, d, Ld) / epar_posfx_value(fx, 0, Ld)) / rb;
        break;
    }
    case EPAR_AUDIT_Q_INFIMUM: *out = epar_posfx_infimum(fx); break;
    case EPAR_AUDIT_Q_BOUND_MARGIN: *out = epar_posfx_value(fx, Ld - 1, Ld) - epar_posfx_infimum(fx); break;
    case EPAR_AUDIT_Q_POSITION_STRENGTH: *out = epar_posfx_strength(fx, L); break;
    case EPAR_AUDIT_Q_DECAY_SPEED:
        if (L < 4) return epar_err_set(EPAR_EINVAL, "decay speed needs L >= 4, got '%d'", L);
        *out = epar_posfx_decay_speed(fx, L);
        break;
    case EPAR_AUDIT_Q_EXTRA_PARAMS: *out = epar_posfx_nparams(fx->form) - epar_posfx_nparams(EPAR_FORM_BASIC); break;
    default: return epar_err_set(EPAR_EINVAL, "unknown position-effect quantity");
    }
    return EPAR_OK;
}

int epar_audit_implied_params(double r_mid, double r_max, double *beta, double *gamma)
{
    /* x = e^(beta/2): x = r_mid (1+g) - g,  x^2 = r_max (1+g) - g
     * => (r_mid - 1)^2 g^2 + (2 r_mid (r_mid - 1) + 1 - r_max) g + r_mid^2 - r_max = 0 */
    double a = (r_mid - 1) * (r_mid - 1), b = 2 * r_mid * (r_mid - 1) + 1 - r_max, c = r_mid * r_mid - r_max;
    double g[2];
    int n = gsl_poly_solve_quadratic(a, b, c, &g[0], &g[1]);
    for (int i = n - 1; i >= 0; i--) {
        double x = r_mid * (1 + g[i]) - g[i];
        if (g[i] >= 0 && x > 1) {
            *gamma = g[i];
            *beta = 2 * log(x);
            return EPAR_OK;
        }
    }
    return epar_err_set(EPAR_ECHECK, "no beta > 0, gamma >= 0 gives gains %g and %g", r_mid, r_max);
}

struct vctx {
    const char *path;
    char jp[256];
};

static int verr(struct vctx *v, const char *what, ...) __attribute__((format(printf, 2, 3)));
static int verr(struct vctx *v, const char *what, ...)
{
    char w[512];
    va_list ap;
    va_start(ap, what);
    vsnprintf(w, sizeof w, what, ap);
    va_end(ap);
    epar_err_set(EPAR_EPROTOCOL, "invalid protocol '%s': %s: %s", v->path, v->jp, w);
    return EPAR_EPROTOCOL;
}

static int allowed(const char *k, const char *const *list)
{
    if (k[0] == '_' || !strcmp(k, "description") || !strcmp(k, "comment")) return 1;
    for (; *list; list++)
        if (!strcmp(k, *list)) return 1;
    return 0;
}

static int check_obj_keys(struct vctx *v, json_t *obj, const char *base, const char *const *keys)
{
    const char *k;
    json_t *x;
    json_object_foreach(obj, k, x) {
        (void)x;
        if (!allowed(k, keys)) {
            snprintf(v->jp, sizeof v->jp, "%s.%s", base, k);
            int st = verr(v, "unknown key");
            epar_err_hint("check the spelling; keys starting with '_' are ignored");
            return st;
        }
    }
    return EPAR_OK;
}

static const char *const claim_keys[] = {"id", "section", "source", "statement", "reported", "reported_text",
                                         "measure", "tolerance", "trivial", "ill_posed", "note", "figures",
                                         "alternatives", NULL};
static const char *const measure_keys[] = {"file", "where", "column", "sd_column", "se_run_column", "se_column",
                                           "n_column", "against_column", "learned_column", "holm_column", "aggregate",
                                           "group_by", "lo_column", "hi_column", "nonsup_column", "trials_column", "posfx", "needs", "readings", "quorum", NULL};
static const char *const reading_keys[] = {"label", "reported", "file", "where", "column", "sd_column",
                                           "se_run_column", "se_column", "n_column", "against_column", "learned_column",
                                           "holm_column", "aggregate", "group_by", "lo_column", "hi_column",
                                           "nonsup_column", "trials_column", "posfx", NULL};
static const char *const posfx_keys[] = {"quantity", "form", "alpha", "beta", "gamma", "L", "d", "label", NULL};
static const char *const tol_keys[] = {"rule", "tol", "lo", "hi", "slack", "gain", "why", "equivalence", NULL};

/* "L", "L-1", "L/2", "0", a number -> d = frac L + off */
int epar_audit_parse_distance(json_t *d, double *frac, double *off)
{
    *frac = 0;
    *off = 0;
    if (!d) return EPAR_OK;
    if (json_is_number(d)) {
        *off = json_number_value(d);
        return *off >= 0 ? EPAR_OK : EPAR_EINVAL;
    }
    if (!json_is_string(d)) return EPAR_EINVAL;
    const char *s = json_string_value(d);
    if (!strcmp(s, "L")) *frac = 1;
    else if (!strcmp(s, "L-1")) { *frac = 1; *off = -1; }
    else if (!strcmp(s, "L/2")) *frac = 0.5;
    else {
        char *end;
        *off = strtod(s, &end);
        if (!*s || *end || *off < 0) return EPAR_EINVAL;
    }
    return EPAR_OK;
}

static int check_posfx(struct vctx *v, json_t *p, const char *base, int need_quantity)
{
    if (!json_is_object(p)) { snprintf(v->jp, sizeof v->jp, "%s", base); return verr(v, "expected an object"); }
    int st = check_obj_keys(v, p, base, posfx_keys);
    if (st) return st;
    json_t *q = json_object_get(p, "quantity");
    enum epar_audit_qty qq;
    if ((q || need_quantity) && (!json_is_string(q) || epar_audit_qty_parse(json_string_value(q), &qq))) {
        snprintf(v->jp, sizeof v->jp, "%s.quantity", base);
        return verr(v, "expected one of value, retention, gain, infimum, bound_margin, position_strength, "
                       "decay_speed, extra_params");
    }
    json_t *f = json_object_get(p, "form");
    enum epar_form form;
    if (f && (!json_is_string(f) || epar_posfx_form_parse(json_string_value(f), &form))) {
        snprintf(v->jp, sizeof v->jp, "%s.form", base);
        return verr(v, "expected \"basic\", \"enhanced\" or \"none\"");
    }
    const char *nums[] = {"alpha", "beta", "gamma"};
    for (int i = 0; i < 3; i++) {
        json_t *x = json_object_get(p, nums[i]);
        if (x && (!json_is_number(x) || json_number_value(x) < 0)) {
            snprintf(v->jp, sizeof v->jp, "%s.%s", base, nums[i]);
            return verr(v, "expected a number >= 0");
        }
    }
    json_t *L = json_object_get(p, "L");
    if ((L || need_quantity) && (!json_is_integer(L) || json_integer_value(L) < 4)) {
        snprintf(v->jp, sizeof v->jp, "%s.L", base);
        return verr(v, "expected an integer sequence length >= 4");
    }
    double fr, off;
    if (epar_audit_parse_distance(json_object_get(p, "d"), &fr, &off)) {
        snprintf(v->jp, sizeof v->jp, "%s.d", base);
        return verr(v, "expected \"L\", \"L-1\", \"L/2\" or a distance >= 0");
    }
    return EPAR_OK;
}

static int check_string(struct vctx *v, json_t *o, const char *base, const char *key, int required)
{
    json_t *x = json_object_get(o, key);
    if (!x && !required) return EPAR_OK;
    if (!json_is_string(x) || !*json_string_value(x)) {
        snprintf(v->jp, sizeof v->jp, "%s.%s", base, key);
        return verr(v, "expected a non-empty string");
    }
    return EPAR_OK;
}

/* a "file" or "posfx" measurement (one reading) */
static int check_one_measure(struct vctx *v, json_t *m, const char *mb)
{
    int st;
    if (!!json_object_get(m, "file") + !!json_object_get(m, "posfx") != 1) {
        snprintf(v->jp, sizeof v->jp, "%s", mb);
        return verr(v, "expected exactly one of file, posfx");
    }
    if (json_object_get(m, "posfx")) {
        char pb[192];
        snprintf(pb, sizeof pb, "%s.posfx", mb);
        return check_posfx(v, json_object_get(m, "posfx"), pb, 1);
    }
    json_t *f = json_object_get(m, "file");
    snprintf(v->jp, sizeof v->jp, "%s.file", mb);
    if (!json_is_string(f) || !*json_string_value(f) || json_string_value(f)[0] == '/' ||
        strstr(json_string_value(f), "..") || !strchr(json_string_value(f), '/'))
        return verr(v, "expected a path relative to the output folder, e.g. \"optimal/consistency.csv\"");
    if ((st = check_string(v, m, mb, "column", 1))) return st;
    static const char *const cols[] = {"sd_column", "se_run_column", "se_column", "n_column", "against_column",
                                       "learned_column", "holm_column", "group_by", "lo_column", "hi_column",
                                       "nonsup_column", "trials_column"};
    for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++)
        if ((st = check_string(v, m, mb, cols[k], 0))) return st;
    snprintf(v->jp, sizeof v->jp, "%s", mb);
    if (!json_object_get(m, "lo_column") != !json_object_get(m, "hi_column"))
        return verr(v, "lo_column and hi_column go together (the two ends of one interval)");
    if (json_object_get(m, "trials_column") && (json_object_get(m, "lo_column") || json_object_get(m, "sd_column")))
        return verr(v, "trials_column (a share of independent trials: Wilson's interval) takes no lo_column or sd_column");
    json_t *w = json_object_get(m, "where"), *ag = json_object_get(m, "aggregate");
    snprintf(v->jp, sizeof v->jp, "%s.where", mb);
    if (w && !json_is_object(w)) return verr(v, "expected an object {column: value | [values]}");
    snprintf(v->jp, sizeof v->jp, "%s.aggregate", mb);
    if (ag && (!json_is_string(ag) || (strcmp(json_string_value(ag), "mean") && strcmp(json_string_value(ag), "min") &&
                                       strcmp(json_string_value(ag), "max") && strcmp(json_string_value(ag), "every"))))
        return verr(v, "expected \"mean\", \"min\", \"max\" or \"every\"");
    if (ag && !strcmp(json_string_value(ag), "every") && !json_object_get(m, "sd_column"))
        return verr(v, "aggregate every judges each row's interval: it needs an \"sd_column\"");
    snprintf(v->jp, sizeof v->jp, "%s.group_by", mb);
    if (json_object_get(m, "group_by") && (!ag || strcmp(json_string_value(ag), "mean") || json_object_get(m, "sd_column")))
        return verr(v, "group_by needs \"aggregate\": \"mean\" and no \"sd_column\" (the spread is the groups')");
    return EPAR_OK;
}

/* reported: a number, or a printed figure ("0.934", "78%"); the rule printed needs the printed form */
static int check_reported(struct vctx *v, json_t *rep, const char *jp, enum epar_audit_rule r, int against)
{
    double val, unit;
    snprintf(v->jp, sizeof v->jp, "%s", jp);
    if ((against || r == EPAR_AUDIT_RANGE) && !rep) return EPAR_OK;
    if (r == EPAR_AUDIT_RANGE && json_is_string(rep)) return EPAR_OK; /* the range itself is in lo, hi */
    if (json_is_number(rep)) {
        if (r == EPAR_AUDIT_PRINTED)
            return verr(v, "rule printed needs the figure as printed, a string such as \"0.934\" or \"78%%\"");
        return EPAR_OK;
    }
    if (json_is_string(rep) && epar_audit_printed_parse(json_string_value(rep), &val, &unit) == EPAR_OK) return EPAR_OK;
    if (against) return EPAR_OK; /* compared with a column: reported is only shown */
    return verr(v, "expected a number or a printed figure such as \"0.934\" or \"78%%\" (put other text in reported_text)");
}

static int check_rule(struct vctx *v, json_t *t, const char *tb, enum epar_audit_rule *r)
{
    int st;
    snprintf(v->jp, sizeof v->jp, "%s", tb);
    if (!json_is_object(t)) return verr(v, "expected an object {\"rule\": ..., ...}");
    if ((st = check_obj_keys(v, t, tb, tol_keys))) return st;
    json_t *rn = json_object_get(t, "rule");
    snprintf(v->jp, sizeof v->jp, "%s.rule", tb);
    if (!json_is_string(rn) || epar_audit_rule_parse(json_string_value(rn), r))
        return verr(v, "expected one of printed, prediction, estimate, exact, relative, above, below, range, at_least, "
                       "beats_all");
    const char *need = *r == EPAR_AUDIT_RELATIVE ? "tol" : *r == EPAR_AUDIT_AT_LEAST ? "slack" : NULL;
    if (need) {
        json_t *x = json_object_get(t, need);
        snprintf(v->jp, sizeof v->jp, "%s.%s", tb, need);
        if (!json_is_number(x) || json_number_value(x) <= 0) return verr(v, "expected a number > 0");
    }
    /* a tolerance beyond the default is a choice: it must say why */
    if ((need || json_object_get(t, "tol")) && (st = check_string(v, t, tb, "why", 1))) return st;
    json_t *g = json_object_get(t, "gain");
    snprintf(v->jp, sizeof v->jp, "%s.gain", tb);
    if (g && *r != EPAR_AUDIT_BEATS_ALL) return verr(v, "only rule beats_all takes a reported gain");
    if (g && (!json_is_number(g) || !(json_number_value(g) > 0)))
        return verr(v, "expected the reported gain as a number > 0 (0.047 for 4.7%%)");
    json_t *eq = json_object_get(t, "equivalence");
    snprintf(v->jp, sizeof v->jp, "%s.equivalence", tb);
    if (eq && (!json_is_string(eq) || (*r != EPAR_AUDIT_ABOVE && *r != EPAR_AUDIT_BELOW)))
        return verr(v, "expected the name of a family of $.audit.equivalence, with rule above or below");
    if (*r == EPAR_AUDIT_RANGE) {
        json_t *lo = json_object_get(t, "lo"), *hi = json_object_get(t, "hi");
        snprintf(v->jp, sizeof v->jp, "%s", tb);
        if (!json_is_number(lo) || !json_is_number(hi) || json_number_value(lo) > json_number_value(hi))
            return verr(v, "rule range needs numbers lo <= hi");
    }
    return EPAR_OK;
}

static int check_claim(struct vctx *v, json_t *c, size_t i)
{
    char base[96], mb[128], tb[128];
    int st;
    snprintf(base, sizeof base, "$.claims[%zu]", i);
    snprintf(v->jp, sizeof v->jp, "%s", base);
    if (!json_is_object(c)) return verr(v, "expected an object");
    if ((st = check_obj_keys(v, c, base, claim_keys))) return st;
    static const char *const req[] = {"id", "source", "statement"}, *const opt[] = {"section", "note",
                                                                                    "reported_text", "trivial",
                                                                                    "ill_posed"};
    for (int k = 0; k < 3; k++)
        if ((st = check_string(v, c, base, req[k], 1))) return st;
    for (int k = 0; k < 5; k++)
        if ((st = check_string(v, c, base, opt[k], 0))) return st;
    json_t *fig = json_object_get(c, "figures");
    if (fig) {
        size_t j;
        json_t *x;
        snprintf(v->jp, sizeof v->jp, "%s.figures", base);
        if (!json_is_array(fig)) return verr(v, "expected an array of paths relative to the output folder");
        json_array_foreach(fig, j, x) if (!json_is_string(x)) return verr(v, "expected strings");
    }
    json_t *m = json_object_get(c, "measure");
    snprintf(mb, sizeof mb, "%s.measure", base);
    snprintf(v->jp, sizeof v->jp, "%s", mb);
    if (!json_is_object(m)) return verr(v, "expected an object with one of file, posfx, readings, needs");
    if ((st = check_obj_keys(v, m, mb, measure_keys))) return st;
    int kinds = !!json_object_get(m, "file") + !!json_object_get(m, "posfx") + !!json_object_get(m, "needs") +
                !!json_object_get(m, "readings");
    if (kinds != 1) return verr(v, "expected exactly one of file, posfx, readings, needs");
    if (json_object_get(m, "needs")) return check_string(v, m, mb, "needs", 1);
    enum epar_audit_rule r;
    snprintf(tb, sizeof tb, "%s.tolerance", base);
    if ((st = check_rule(v, json_object_get(c, "tolerance"), tb, &r))) return st;
    char rj[128];
    snprintf(rj, sizeof rj, "%s.reported", base);
    json_t *rd = json_object_get(m, "readings");
    if (r == EPAR_AUDIT_BEATS_ALL) { /* the rule judges the lower end of the interval: the file must give it */
        size_t j;
        json_t *x;
        json_t *one = json_array();
        if (!rd) json_array_append(one, m);
        json_array_foreach(rd ? rd : one, j, x) {
            if (json_object_get(x, "posfx") || json_object_get(x, "lo_column")) continue;
            if (rd) snprintf(v->jp, sizeof v->jp, "%s.readings[%zu]", mb, j);
            else snprintf(v->jp, sizeof v->jp, "%s", mb);
            json_decref(one);
            return verr(v, "rule beats_all judges the lower end of the interval: add \"lo_column\" (and \"hi_column\")");
        }
        json_decref(one);
    }
    json_t *quorum = json_object_get(m, "quorum");
    if (quorum) {
        snprintf(v->jp, sizeof v->jp, "%s.quorum", mb);
        if (!json_is_integer(quorum) || !json_is_array(rd) || json_integer_value(quorum) < 1 ||
            (size_t)json_integer_value(quorum) > json_array_size(rd))
            return verr(v, "expected an integer from 1 to the number of readings");
    }
    if (!rd) {
        if ((st = check_one_measure(v, m, mb))) return st;
        return check_reported(v, json_object_get(c, "reported"), rj, r, json_object_get(m, "against_column") != NULL);
    }
    snprintf(v->jp, sizeof v->jp, "%s.readings", mb);
    if (!json_is_array(rd) || json_array_size(rd) < 1) return verr(v, "expected a non-empty array of measurements");
    size_t j;
    json_t *x;
    json_array_foreach(rd, j, x) {
        char xb[160], xr[180];
        snprintf(xb, sizeof xb, "%s.readings[%zu]", mb, j);
        snprintf(v->jp, sizeof v->jp, "%s", xb);
        if (!json_is_object(x)) return verr(v, "expected an object");
        if ((st = check_obj_keys(v, x, xb, reading_keys)) || (st = check_string(v, x, xb, "label", 1)) ||
            (st = check_one_measure(v, x, xb)))
            return st;
        snprintf(xr, sizeof xr, "%s.reported", xb);
        json_t *own = json_object_get(x, "reported");
        if ((st = check_reported(v, own ? own : json_object_get(c, "reported"), own ? xr : rj, r,
                                 json_object_get(x, "against_column") != NULL)))
            return st;
    }
    return EPAR_OK;
}

int epar_audit_check(json_t *claims, const char *protocol_path)
{
    struct vctx v = {protocol_path, ""};
    if (!claims) return EPAR_OK;
    if (!json_is_array(claims)) {
        snprintf(v.jp, sizeof v.jp, "$.claims");
        return verr(&v, "expected an array");
    }
    size_t i;
    json_t *c;
    json_array_foreach(claims, i, c) {
        int st = check_claim(&v, c, i);
        if (st) return st;
        const char *id = json_string_value(json_object_get(c, "id"));
        for (size_t j = 0; j < i; j++)
            if (!strcmp(id, json_string_value(json_object_get(json_array_get(claims, j), "id")))) {
                snprintf(v.jp, sizeof v.jp, "$.claims[%zu].id", i);
                return verr(&v, "duplicate claim id '%s' (also $.claims[%zu])", id, j);
            }
    }
    return EPAR_OK;
}

int epar_audit_level(json_t *root, const char *protocol_path, double *level)
{
    struct vctx v = {protocol_path, "$.audit"};
    *level = 0.95;
    json_t *a = json_object_get(root, "audit");
    if (!a) return EPAR_OK;
    static const char *const keys[] = {"level", "equivalence", NULL};
    if (!json_is_object(a)) return verr(&v, "expected an object {\"level\": 0.95}");
    int st = check_obj_keys(&v, a, "$.audit", keys);
    if (st) return st;
    json_t *l = json_object_get(a, "level");
    if (l) {
        snprintf(v.jp, sizeof v.jp, "$.audit.level");
        if (!json_is_number(l) || !(json_number_value(l) > 0.5 && json_number_value(l) < 1))
            return verr(&v, "expected a confidence level in (0.5, 1), e.g. 0.95");
        *level = json_number_value(l);
    }
    return EPAR_OK;
}

int epar_audit_equivalence(json_t *root, const char *protocol_path, json_t **eq)
{
    struct vctx v = {protocol_path, "$.audit.equivalence"};
    *eq = json_object_get(json_object_get(root, "audit"), "equivalence");
    if (!*eq) return EPAR_OK;
    if (!json_is_object(*eq)) return verr(&v, "expected {family: {\"margin\": x, \"why\": ...}}");
    const char *k;
    json_t *f;
    json_object_foreach(*eq, k, f) {
        if (k[0] == '_' || !strcmp(k, "description")) continue;
        snprintf(v.jp, sizeof v.jp, "$.audit.equivalence.%s", k);
        json_t *m = json_object_get(f, "margin"), *w = json_object_get(f, "why");
        if (!json_is_object(f) || !json_is_number(m) || !(json_number_value(m) > 0) || !json_is_string(w) ||
            !*json_string_value(w))
            return verr(&v, "expected {\"margin\": a number > 0, \"why\": why this is the smallest effect that matters}");
    }
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(root, "claims"), i, c) {
        json_t *fam = json_object_get(json_object_get(c, "tolerance"), "equivalence");
        snprintf(v.jp, sizeof v.jp, "$.claims[%zu].tolerance.equivalence", i);
        if (fam && (!json_is_string(fam) || !json_is_object(json_object_get(*eq, json_string_value(fam)))))
            return verr(&v, "no family '%s' in $.audit.equivalence", json_is_string(fam) ? json_string_value(fam) : "?");
    }
    return EPAR_OK;
}
