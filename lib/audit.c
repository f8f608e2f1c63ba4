#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <gsl/gsl_poly.h>
#include <gsl/gsl_statistics_double.h>
#include "audit.h"
#include "err.h"

static const char *const rule_names[EPAR_AUDIT_RULE_COUNT] = {"exact", "relative", "abs", "sd", "above", "below",
                                                             "range"};
static const char *const verdict_names[EPAR_AUDIT_VERDICT_COUNT] = {"reproduced", "not reproduced",
                                                                   "not reproducible here", "trivially true"};
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

void epar_audit_tol_format(const struct epar_audit_tol *t, char *buf, size_t n)
{
    switch (t->rule) {
    case EPAR_AUDIT_EXACT: snprintf(buf, n, "exact"); break;
    case EPAR_AUDIT_RELATIVE: snprintf(buf, n, "relative %g", t->tol); break;
    case EPAR_AUDIT_ABS: snprintf(buf, n, "abs %g", t->tol); break;
    case EPAR_AUDIT_SD: snprintf(buf, n, "within %g x sd", t->tol); break;
    case EPAR_AUDIT_ABOVE: snprintf(buf, n, "above reported"); break;
    case EPAR_AUDIT_BELOW: snprintf(buf, n, "below reported"); break;
    case EPAR_AUDIT_RANGE: snprintf(buf, n, "in [%g, %g]", t->lo, t->hi); break;
    default: snprintf(buf, n, "?"); break;
    }
}

int epar_audit_within(const struct epar_audit_tol *t, double r, double m, double sd)
{
    if (!isfinite(m)) return -1;
    double d = fabs(m - r);
    switch (t->rule) {
    case EPAR_AUDIT_EXACT: return d <= 1e-12 * fmax(1.0, fabs(r));
    case EPAR_AUDIT_RELATIVE: return d <= t->tol * fabs(r);
    case EPAR_AUDIT_ABS: return d <= t->tol;
    case EPAR_AUDIT_SD:
        if (!isfinite(sd)) return -1;
        return d <= t->tol * sd;
    case EPAR_AUDIT_ABOVE: return m > r;
    case EPAR_AUDIT_BELOW: return m < r;
    case EPAR_AUDIT_RANGE: return m >= t->lo && m <= t->hi;
    default: return -1;
    }
}

enum epar_audit_verdict epar_audit_verdict(int available, int holds, int trivial)
{
    if (!available || holds < 0) return EPAR_AUDIT_NOT_HERE;
    if (!holds) return EPAR_AUDIT_NOT_REPRODUCED;
    return trivial ? EPAR_AUDIT_TRIVIAL : EPAR_AUDIT_REPRODUCED;
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
    case EPAR_AUDIT_Q_POSITION_STRENGTH: {
        /* mean over the L x L matrix: distance k occurs L (k = 0) or 2 (L - k) times */
        double s = L * epar_posfx_value(fx, 0, Ld);
        for (int k = 1; k < L; k++) s += 2.0 * (L - k) * epar_posfx_value(fx, k, Ld);
        *out = s / (Ld * Ld);
        break;
    }
    case EPAR_AUDIT_Q_DECAY_SPEED: {
        int c = L / 2;
        if (c < 2) return epar_err_set(EPAR_EINVAL, "decay speed needs L >= 4, got '%d'", L);
        double s = 0;
        for (int k = 1; k < c; k++) s += epar_posfx_value(fx, k, Ld);
        *out = s / (c - 1);
        break;
    }
    case EPAR_AUDIT_Q_EXTRA_PARAMS: *out = fx->form == EPAR_FORM_ENHANCED ? 1 : 0; break;
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

/* ---- selecting numbers from a table ---- */

static int cell_matches(const struct epar_table *t, size_t row, int col, json_t *want)
{
    const struct epar_cell *c = &t->cells[row * (size_t)t->ncols + col];
    if (json_is_array(want)) {
        size_t i;
        json_t *w;
        json_array_foreach(want, i, w) if (cell_matches(t, row, col, w)) return 1;
        return 0;
    }
    if (json_is_number(want)) {
        double w = json_number_value(want);
        if (c->s) {
            char *end;
            double v = strtod(c->s, &end);
            return *c->s && !*end && fabs(v - w) <= 1e-9 * fmax(1.0, fabs(w));
        }
        return fabs(c->v - w) <= 1e-9 * fmax(1.0, fabs(w));
    }
    if (json_is_string(want)) {
        const char *w = json_string_value(want);
        if (c->s) return !strcmp(c->s, w);
        char *end;
        double v = strtod(w, &end);
        return *w && !*end && fabs(c->v - v) <= 1e-9 * fmax(1.0, fabs(v));
    }
    if (json_is_boolean(want)) {
        const char *w = json_is_true(want) ? "true" : "false";
        return c->s && !strcmp(c->s, w);
    }
    return 0;
}

static void list_columns(const struct epar_table *t, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int c = 0; c < t->ncols && used + 1 < n; c++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", c ? "," : "", t->cols[c]);
}

static int why_set(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int why_set(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return EPAR_EINVAL;
}

int epar_audit_select(const struct epar_table *t, json_t *where, const char *col, const char *sd_col,
                      const char *aggregate, double *value, double *sd, int *nrows, char *why, size_t nwhy)
{
    char cols[512];
    *value = *sd = NAN;
    *nrows = 0;
    int ci = epar_csv_col(t, col), si = sd_col ? epar_csv_col(t, sd_col) : -1;
    if (ci < 0 || (sd_col && si < 0)) {
        list_columns(t, cols, sizeof cols);
        return why_set(why, nwhy, "column '%s' not in the file (columns: %s)", ci < 0 ? col : sd_col, cols);
    }
    int wc[32];
    json_t *wv[32];
    int nw = 0;
    if (where) {
        const char *k;
        json_t *v;
        json_object_foreach(where, k, v) {
            if (nw == 32) return why_set(why, nwhy, "too many selector columns");
            if ((wc[nw] = epar_csv_col(t, k)) < 0) {
                list_columns(t, cols, sizeof cols);
                return why_set(why, nwhy, "selector column '%s' not in the file (columns: %s)", k, cols);
            }
            wv[nw++] = v;
        }
    }
    size_t *match = malloc((t->nrows + 1) * sizeof *match);
    if (!match) return why_set(why, nwhy, "out of memory");
    size_t nm = 0;
    for (size_t r = 0; r < t->nrows; r++) {
        int ok = 1;
        for (int w = 0; w < nw && ok; w++) ok = cell_matches(t, r, wc[w], wv[w]);
        if (ok) match[nm++] = r;
    }
    int st = EPAR_OK;
    *nrows = (int)nm;
    if (nm == 0) {
        char *sel = where ? json_dumps(where, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        st = why_set(why, nwhy, "no row matches %s", sel ? sel : "(every row)");
        free(sel);
    } else if (nm > 1 && !aggregate) {
        st = why_set(why, nwhy, "%zu rows match the selector: add columns to \"where\" or an \"aggregate\"", nm);
    } else {
        double *v = malloc(nm * sizeof *v), *s = malloc(nm * sizeof *s);
        if (!v || !s) st = why_set(why, nwhy, "out of memory");
        size_t nv = 0;
        for (size_t i = 0; i < nm && !st; i++) {
            const struct epar_cell *c = &t->cells[match[i] * (size_t)t->ncols + ci];
            if (c->s) { st = why_set(why, nwhy, "column '%s' holds text '%s', not a number", col, c->s); break; }
            v[nv] = c->v;
            s[nv] = si >= 0 ? t->cells[match[i] * (size_t)t->ncols + si].v : NAN;
            nv++;
        }
        if (!st) {
            if (nv == 1) {
                *value = v[0];
                *sd = s[0];
            } else if (!strcmp(aggregate, "mean")) {
                *value = gsl_stats_mean(v, 1, nv);
                *sd = si >= 0 ? gsl_stats_mean(s, 1, nv) : gsl_stats_sd(v, 1, nv);
            } else if (!strcmp(aggregate, "min") || !strcmp(aggregate, "max")) {
                int mx = !strcmp(aggregate, "max");
                size_t best = mx ? gsl_stats_max_index(v, 1, nv) : gsl_stats_min_index(v, 1, nv);
                *value = v[best];
                *sd = s[best];
            } else {
                st = why_set(why, nwhy, "unknown aggregate '%s'", aggregate);
            }
        }
        free(v);
        free(s);
    }
    free(match);
    return st;
}

/* ---- claims: validation ---- */

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
                                         "measure", "tolerance", "trivial", "note", "figures", "alternatives",
                                         NULL};
static const char *const measure_keys[] = {"file", "where", "column", "sd_column", "against_column", "aggregate",
                                           "posfx", "needs", "import", NULL};
static const char *const posfx_keys[] = {"quantity", "form", "alpha", "beta", "gamma", "L", "d", "label", NULL};
static const char *const tol_keys[] = {"rule", "tol", "k", "lo", "hi", NULL};

/* "L", "L-1", "L/2", "0", a number -> d = frac L + off */
static int parse_distance(json_t *d, double *frac, double *off)
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
    if (parse_distance(json_object_get(p, "d"), &fr, &off)) {
        snprintf(v->jp, sizeof v->jp, "%s.d", base);
        return verr(v, "expected \"L\", \"L-1\", \"L/2\" or a distance >= 0");
    }
    return EPAR_OK;
}

static int check_claim(struct vctx *v, json_t *c, size_t i)
{
    char base[96];
    snprintf(base, sizeof base, "$.claims[%zu]", i);
    snprintf(v->jp, sizeof v->jp, "%s", base);
    if (!json_is_object(c)) return verr(v, "expected an object");
    int st = check_obj_keys(v, c, base, claim_keys);
    if (st) return st;
    const char *strs[] = {"id", "source", "statement"};
    for (int k = 0; k < 3; k++) {
        json_t *x = json_object_get(c, strs[k]);
        if (!json_is_string(x) || !*json_string_value(x)) {
            snprintf(v->jp, sizeof v->jp, "%s.%s", base, strs[k]);
            return verr(v, "expected a non-empty string");
        }
    }
    const char *opt[] = {"section", "note", "reported_text"};
    for (int k = 0; k < 3; k++) {
        json_t *x = json_object_get(c, opt[k]);
        if (x && !json_is_string(x)) {
            snprintf(v->jp, sizeof v->jp, "%s.%s", base, opt[k]);
            return verr(v, "expected a string");
        }
    }
    json_t *fig = json_object_get(c, "figures");
    if (fig) {
        size_t j;
        json_t *x;
        snprintf(v->jp, sizeof v->jp, "%s.figures", base);
        if (!json_is_array(fig)) return verr(v, "expected an array of paths relative to the output folder");
        json_array_foreach(fig, j, x) if (!json_is_string(x)) return verr(v, "expected strings");
    }
    json_t *m = json_object_get(c, "measure");
    snprintf(v->jp, sizeof v->jp, "%s.measure", base);
    if (!json_is_object(m)) return verr(v, "expected an object with one of file, posfx, needs, import");
    char mb[128];
    snprintf(mb, sizeof mb, "%s.measure", base);
    if ((st = check_obj_keys(v, m, mb, measure_keys))) return st;
    int kinds = !!json_object_get(m, "file") + !!json_object_get(m, "posfx") + !!json_object_get(m, "needs") +
                !!json_object_get(m, "import");
    if (kinds != 1) return verr(v, "expected exactly one of file, posfx, needs, import");
    json_t *rep = json_object_get(c, "reported");
    int is_file = json_object_get(m, "file") != NULL, is_posfx = json_object_get(m, "posfx") != NULL;
    if (is_file || is_posfx) {
        snprintf(v->jp, sizeof v->jp, "%s.reported", base);
        if (!json_is_number(rep) && !(json_is_string(rep) && json_object_get(m, "against_column")))
            return verr(v, "expected a number (put the printed form in reported_text)");
        json_t *t = json_object_get(c, "tolerance");
        char tb[128];
        snprintf(tb, sizeof tb, "%s.tolerance", base);
        snprintf(v->jp, sizeof v->jp, "%s", tb);
        if (!json_is_object(t)) return verr(v, "expected an object {\"rule\": ..., ...}");
        if ((st = check_obj_keys(v, t, tb, tol_keys))) return st;
        enum epar_audit_rule r;
        json_t *rn = json_object_get(t, "rule");
        snprintf(v->jp, sizeof v->jp, "%s.rule", tb);
        if (!json_is_string(rn) || epar_audit_rule_parse(json_string_value(rn), &r))
            return verr(v, "expected one of exact, relative, abs, sd, above, below, range");
        const char *need = r == EPAR_AUDIT_RELATIVE || r == EPAR_AUDIT_ABS ? "tol" : r == EPAR_AUDIT_SD ? "k" : NULL;
        if (need) {
            json_t *x = json_object_get(t, need);
            snprintf(v->jp, sizeof v->jp, "%s.%s", tb, need);
            if (!json_is_number(x) || json_number_value(x) <= 0) return verr(v, "expected a number > 0");
        }
        if (r == EPAR_AUDIT_RANGE) {
            json_t *lo = json_object_get(t, "lo"), *hi = json_object_get(t, "hi");
            snprintf(v->jp, sizeof v->jp, "%s", tb);
            if (!json_is_number(lo) || !json_is_number(hi) || json_number_value(lo) > json_number_value(hi))
                return verr(v, "rule range needs numbers lo <= hi");
        }
    }
    if (is_file) {
        json_t *f = json_object_get(m, "file"), *col = json_object_get(m, "column");
        snprintf(v->jp, sizeof v->jp, "%s.measure.file", base);
        if (!json_is_string(f) || !*json_string_value(f) || json_string_value(f)[0] == '/' ||
            strstr(json_string_value(f), ".."))
            return verr(v, "expected a path relative to the output folder, e.g. \"optimal/consistency.csv\"");
        snprintf(v->jp, sizeof v->jp, "%s.measure.column", base);
        if (!json_is_string(col)) return verr(v, "expected the name of the value column");
        json_t *ac = json_object_get(m, "against_column");
        snprintf(v->jp, sizeof v->jp, "%s.measure.against_column", base);
        if (ac && !json_is_string(ac)) return verr(v, "expected a column name");
        json_t *sdc = json_object_get(m, "sd_column"), *w = json_object_get(m, "where"),
               *ag = json_object_get(m, "aggregate");
        snprintf(v->jp, sizeof v->jp, "%s.measure.sd_column", base);
        if (sdc && !json_is_string(sdc)) return verr(v, "expected a column name");
        snprintf(v->jp, sizeof v->jp, "%s.measure.where", base);
        if (w && !json_is_object(w)) return verr(v, "expected an object {column: value | [values]}");
        snprintf(v->jp, sizeof v->jp, "%s.measure.aggregate", base);
        if (ag && (!json_is_string(ag) || (strcmp(json_string_value(ag), "mean") &&
                                           strcmp(json_string_value(ag), "min") &&
                                           strcmp(json_string_value(ag), "max"))))
            return verr(v, "expected \"mean\", \"min\" or \"max\"");
    }
    if (is_posfx) {
        char pb[192];
        snprintf(pb, sizeof pb, "%s.measure.posfx", base);
        if ((st = check_posfx(v, json_object_get(m, "posfx"), pb, 1))) return st;
        json_t *alt = json_object_get(c, "alternatives");
        if (alt) {
            size_t j;
            json_t *a;
            snprintf(v->jp, sizeof v->jp, "%s.alternatives", base);
            if (!json_is_array(alt)) return verr(v, "expected an array of posfx overrides");
            json_array_foreach(alt, j, a) {
                snprintf(pb, sizeof pb, "%s.alternatives[%zu]", base, j);
                if ((st = check_posfx(v, a, pb, 0))) return st;
                if (!json_is_string(json_object_get(a, "label"))) {
                    snprintf(v->jp, sizeof v->jp, "%s.label", pb);
                    return verr(v, "expected a label naming the setting");
                }
            }
        }
    } else if (json_object_get(c, "alternatives")) {
        snprintf(v->jp, sizeof v->jp, "%s.alternatives", base);
        return verr(v, "alternatives are only for posfx measurements");
    }
    json_t *nd = json_object_get(m, "needs"), *im = json_object_get(m, "import");
    snprintf(v->jp, sizeof v->jp, "%s.measure", base);
    if (nd && (!json_is_string(nd) || !*json_string_value(nd))) return verr(v, "needs: expected the reason");
    if (im && (!json_is_string(im) || json_string_value(im)[0] == '/' || strstr(json_string_value(im), "..")))
        return verr(v, "import: expected a path relative to the output folder");
    json_t *tr = json_object_get(c, "trivial");
    snprintf(v->jp, sizeof v->jp, "%s.trivial", base);
    if (tr && !json_is_boolean(tr)) return verr(v, "expected true or false");
    return EPAR_OK;
}

int epar_audit_check(json_t *claims, const char *protocol_path)
{
    struct vctx v = {protocol_path, "$.claims"};
    if (!claims) return EPAR_OK;
    if (!json_is_array(claims)) return verr(&v, "expected an array of claims");
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

/* ---- claims: evaluation ---- */

static char *sdup(const char *s)
{
    size_t n = strlen(s ? s : "") + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s ? s : "", n);
    return d;
}

static char *fmtnum(double v)
{
    char b[64];
    if (isnan(v)) return sdup("");
    epar_csv_format_number(v, b, sizeof b);
    return sdup(b);
}

static const char *jstr(json_t *o, const char *k, const char *dflt)
{
    json_t *x = json_object_get(o, k);
    return json_is_string(x) ? json_string_value(x) : dflt;
}

static double jnum(json_t *o, const char *k, double dflt)
{
    json_t *x = json_object_get(o, k);
    return json_is_number(x) ? json_number_value(x) : dflt;
}

/* append to a note buffer, "; " separated */
static void note_add(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note_add(char *buf, size_t n, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used && used + 2 < n) { strcat(buf, "; "); used += 2; }
    if (used + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, n - used, fmt, ap);
    va_end(ap);
}

static struct epar_audit_row *new_row(struct epar_audit *a)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        struct epar_audit_row *r = realloc(a->rows, cap * sizeof *r);
        if (!r) return NULL;
        a->rows = r;
        a->cap = cap;
    }
    struct epar_audit_row *r = &a->rows[a->n++];
    memset(r, 0, sizeof *r);
    return r;
}

static void tol_from_json(json_t *t, struct epar_audit_tol *tol)
{
    memset(tol, 0, sizeof *tol);
    epar_audit_rule_parse(jstr(t, "rule", ""), &tol->rule);
    tol->tol = tol->rule == EPAR_AUDIT_SD ? jnum(t, "k", 0) : jnum(t, "tol", 0);
    tol->lo = jnum(t, "lo", NAN);
    tol->hi = jnum(t, "hi", NAN);
}

/* resolve a posfx spec (with overrides from alt, may be NULL) */
static int posfx_eval(json_t *base, json_t *alt, double *out, char *desc, size_t ndesc)
{
#define PICK(k) (alt && json_object_get(alt, k) ? json_object_get(alt, k) : json_object_get(base, k))
    struct epar_posfx fx = {EPAR_FORM_ENHANCED, 1, 1, 0.5};
    enum epar_audit_qty q;
    if (epar_audit_qty_parse(json_string_value(PICK("quantity")), &q)) return EPAR_EINVAL;
    json_t *f = PICK("form");
    if (f && epar_posfx_form_parse(json_string_value(f), &fx.form)) return EPAR_EINVAL;
    if (PICK("alpha")) fx.alpha = json_number_value(PICK("alpha"));
    if (PICK("beta")) fx.beta = json_number_value(PICK("beta"));
    if (PICK("gamma")) fx.gamma = json_number_value(PICK("gamma"));
    int L = (int)json_integer_value(PICK("L"));
    double fr, off;
    if (parse_distance(PICK("d"), &fr, &off)) return epar_err_set(EPAR_EINVAL, "bad distance");
    double d = fr * L + off;
    json_t *dj = PICK("d");
    snprintf(desc, ndesc, "%s of the %s form, alpha=%g beta=%g gamma=%g L=%d%s%s", epar_audit_qty_name(q),
             epar_posfx_form_name(fx.form), fx.alpha, fx.beta, fx.gamma, L, dj ? " d=" : "",
             dj ? (json_is_string(dj) ? json_string_value(dj) : "") : "");
    if (dj && json_is_number(dj)) {
        size_t u = strlen(desc);
        snprintf(desc + u, ndesc - u, "%g", json_number_value(dj));
    }
#undef PICK
    return epar_audit_posfx_quantity(q, &fx, L, d, out);
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int import_rows(struct epar_audit *a, json_t *c, const char *out_root, const char *file, int *done)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", out_root, file);
    *done = 0;
    if (!file_exists(path)) return EPAR_OK;
    struct epar_table *t;
    if (epar_csv_read(path, &t)) return EPAR_OK; /* reported as not reproducible by the caller */
    const char *need[] = {"claim_id", "source", "statement", "reported", "measured", "verdict", "note"};
    for (int k = 0; k < 7; k++)
        if (epar_csv_col(t, need[k]) < 0) { epar_csv_free(t); return EPAR_OK; }
    for (size_t r = 0; r < t->nrows; r++) {
        struct epar_audit_row *row = new_row(a);
        if (!row) { epar_csv_free(t); return epar_err_set(EPAR_ENOMEM, "out of memory in the audit"); }
        char *cells[9];
        const char *cols[9] = {"claim_id", "source", "statement", "reported", "measured", "measured_sd",
                               "tolerance", "verdict", "note"};
        for (int k = 0; k < 9; k++) {
            int ci = epar_csv_col(t, cols[k]);
            if (ci < 0) { cells[k] = sdup(""); continue; }
            const struct epar_cell *cell = &t->cells[r * (size_t)t->ncols + ci];
            cells[k] = cell->s ? sdup(cell->s) : fmtnum(cell->v);
        }
        row->id = cells[0];
        row->source = cells[1];
        row->statement = cells[2];
        row->reported = cells[3];
        row->measured = cells[4];
        row->measured_sd = cells[5];
        row->tolerance = cells[6];
        row->note = cells[8];
        row->section = sdup(jstr(c, "section", "seeds"));
        row->imported = 1;
        row->verdict = EPAR_AUDIT_VERDICT_COUNT;
        for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++)
            if (!strcmp(cells[7], verdict_names[v])) row->verdict = (enum epar_audit_verdict)v;
        if (row->verdict == EPAR_AUDIT_VERDICT_COUNT) {
            char nb[1024] = "";
            snprintf(nb, sizeof nb, "%s", row->note);
            note_add(nb, sizeof nb, "imported verdict '%s' is not one of the four; counted as not reproducible here",
                     cells[7]);
            free(row->note);
            row->note = sdup(nb);
            row->verdict = EPAR_AUDIT_NOT_HERE;
            row->spec_problem = 1;
            a->spec_problems++;
        }
        free(cells[7]);
        if (!row->id || !row->note || !row->section) { epar_csv_free(t); return epar_err_set(EPAR_ENOMEM, "out of memory"); }
        a->counts[row->verdict]++;
    }
    epar_csv_free(t);
    *done = 1;
    return EPAR_OK;
}

static int eval_claim(struct epar_audit *a, json_t *c, const char *out_root)
{
    json_t *m = json_object_get(c, "measure");
    const char *imp = jstr(m, "import", NULL);
    if (imp) {
        int done, st = import_rows(a, c, out_root, imp, &done);
        if (st || done) return st;
    }
    struct epar_audit_row *row = new_row(a);
    if (!row) return epar_err_set(EPAR_ENOMEM, "out of memory in the audit");
    char note[2048] = "";
    double rep = jnum(c, "reported", NAN), meas = NAN, sd = NAN;
    int available = 0, holds = -1, trivial = json_is_true(json_object_get(c, "trivial"));
    struct epar_audit_tol tol = {EPAR_AUDIT_EXACT, 0, NAN, NAN};
    char tolbuf[96] = "";
    json_t *tj = json_object_get(c, "tolerance");
    if (tj) {
        tol_from_json(tj, &tol);
        epar_audit_tol_format(&tol, tolbuf, sizeof tolbuf);
        const char *ac = jstr(m, "against_column", NULL);
        char *w = strstr(tolbuf, "reported");
        if (ac && w) snprintf(w, sizeof tolbuf - (size_t)(w - tolbuf), "column %s", ac);
    }
    const char *cnote = jstr(c, "note", NULL);
    if (imp) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", out_root, imp);
        if (!file_exists(path)) {
            note_add(note, sizeof note, "measurement file output/%s missing: experiment not run", imp);
            row->missing_file = 1;
        }
        else {
            note_add(note, sizeof note, "output/%s could not be imported: not a readable audit table with columns "
                                        "claim_id,source,statement,reported,measured,verdict,note", imp);
            row->spec_problem = 1;
        }
    } else if (json_object_get(m, "needs")) {
        note_add(note, sizeof note, "needs %s", jstr(m, "needs", ""));
        row->needs = 1;
    } else if (json_object_get(m, "posfx")) {
        char desc[256];
        json_t *p = json_object_get(m, "posfx");
        if (posfx_eval(p, NULL, &meas, desc, sizeof desc) == EPAR_OK) {
            available = 1;
            sd = 0;
            holds = epar_audit_within(&tol, rep, meas, tol.rule == EPAR_AUDIT_SD ? NAN : 0);
            note_add(note, sizeof note, "computed: %s", desc);
        } else {
            note_add(note, sizeof note, "cannot compute %s: %s", desc, epar_err_message());
            row->spec_problem = 1;
        }
        json_t *alts = json_object_get(c, "alternatives"), *alt;
        size_t j;
        json_array_foreach(alts, j, alt) {
            double v;
            char d2[256];
            if (posfx_eval(p, alt, &v, d2, sizeof d2) == EPAR_OK) {
                int h = epar_audit_within(&tol, rep, v, 0);
                note_add(note, sizeof note, "alternative (%s): %.6g, %s", jstr(alt, "label", ""), v,
                         h == 1 ? "matches" : "does not match");
            }
        }
    } else {
        const char *file = jstr(m, "file", "");
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", out_root, file);
        if (!file_exists(path)) {
            note_add(note, sizeof note, "measurement file output/%s missing: experiment not run", file);
            row->missing_file = 1;
        } else {
            struct epar_table *t = NULL;
            if (epar_csv_read(path, &t)) {
                note_add(note, sizeof note, "cannot read output/%s: %s", file, epar_err_message());
            } else {
                char why[768];
                int nr;
                if (epar_audit_select(t, json_object_get(m, "where"), jstr(m, "column", ""), jstr(m, "sd_column", NULL),
                                      jstr(m, "aggregate", NULL), &meas, &sd, &nr, why, sizeof why)) {
                    note_add(note, sizeof note, "measurement spec does not fit output/%s: %s", file, why);
                    row->spec_problem = 1;
                    meas = sd = NAN;
                } else if (jstr(m, "against_column", NULL) &&
                           epar_audit_select(t, json_object_get(m, "where"), jstr(m, "against_column", ""), NULL,
                                             jstr(m, "aggregate", NULL), &rep, &(double){0}, &nr, why, sizeof why)) {
                    note_add(note, sizeof note, "measurement spec does not fit output/%s: %s", file, why);
                    row->spec_problem = 1;
                    meas = sd = NAN;
                } else {
                    available = 1;
                    if (jstr(m, "against_column", NULL))
                        note_add(note, sizeof note, "compared with column %s = %.6g of the same row",
                                 jstr(m, "against_column", ""), rep);
                    holds = epar_audit_within(&tol, rep, meas, sd);
                    if (holds < 0 && tol.rule == EPAR_AUDIT_SD && isfinite(meas))
                        note_add(note, sizeof note, "no across-seed sd in output/%s to judge k x sd", file);
                    if (nr > 1)
                        note_add(note, sizeof note, "%s over %d rows of output/%s", jstr(m, "aggregate", ""), nr, file);
                }
                epar_csv_free(t);
            }
        }
    }
    row->verdict = epar_audit_verdict(available, holds, trivial);
    if (available && holds == 0 && isfinite(meas) && isfinite(rep))
        note_add(note, sizeof note, "measured %.6g%s vs reported %.6g", meas, isfinite(sd) && sd > 0 ? " (sd shown)" : "",
                 rep);
    if (cnote) note_add(note, sizeof note, "%s", cnote);
    json_t *rj = json_object_get(c, "reported");
    const char *rtext = jstr(c, "reported_text", NULL);
    row->id = sdup(jstr(c, "id", ""));
    row->source = sdup(jstr(c, "source", ""));
    row->statement = sdup(jstr(c, "statement", ""));
    row->section = sdup(jstr(c, "section", "other"));
    row->reported = rtext ? sdup(rtext) : json_is_number(rj) ? fmtnum(json_number_value(rj)) : sdup(jstr(c, "reported", ""));
    row->measured = fmtnum(meas);
    row->measured_sd = fmtnum(sd);
    row->tolerance = sdup(tolbuf);
    row->note = sdup(note);
    json_t *figs = json_object_get(c, "figures");
    if (figs && json_array_size(figs)) {
        row->figures = calloc(json_array_size(figs) + 1, sizeof *row->figures);
        if (row->figures)
            for (size_t k = 0; k < json_array_size(figs); k++)
                row->figures[k] = sdup(json_string_value(json_array_get(figs, k)));
    }
    if (!row->id || !row->source || !row->statement || !row->section || !row->reported || !row->measured ||
        !row->measured_sd || !row->tolerance || !row->note)
        return epar_err_set(EPAR_ENOMEM, "out of memory in the audit");
    a->counts[row->verdict]++;
    a->spec_problems += row->spec_problem;
    a->missing_files += row->missing_file;
    a->needs += row->needs;
    return EPAR_OK;
}

int epar_audit_run(json_t *claims, const char *out_root, struct epar_audit *a)
{
    memset(a, 0, sizeof *a);
    size_t i;
    json_t *c;
    json_array_foreach(claims, i, c) {
        int st = eval_claim(a, c, out_root);
        if (st) return st;
    }
    return EPAR_OK;
}

void epar_audit_free(struct epar_audit *a)
{
    for (size_t i = 0; i < a->n; i++) {
        struct epar_audit_row *r = &a->rows[i];
        free(r->id); free(r->source); free(r->statement); free(r->section); free(r->reported);
        free(r->measured); free(r->measured_sd); free(r->tolerance); free(r->note);
        for (char **f = r->figures; f && *f; f++) free(*f);
        free(r->figures);
    }
    free(a->rows);
    memset(a, 0, sizeof *a);
}

struct epar_table *epar_audit_table(const struct epar_audit *a)
{
    struct epar_table *t = epar_csv_new("claim_id,source,statement,reported,measured,measured_sd,tolerance,verdict,note");
    if (!t) return NULL;
    for (size_t i = 0; i < a->n; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        if (epar_csv_append(t, "sssssssss", r->id, r->source, r->statement, r->reported, r->measured, r->measured_sd,
                            r->tolerance, epar_audit_verdict_name(r->verdict), r->note)) {
            epar_csv_free(t);
            return NULL;
        }
    }
    return t;
}

struct epar_table *epar_audit_section_counts(const struct epar_audit *a)
{
    struct epar_table *t = epar_csv_new("section,reproduced,not_reproduced,not_reproducible_here,trivially_true");
    for (size_t i = 0; t && i < a->n; i++) {
        const char *sec = a->rows[i].section;
        int seen = 0, cnt[EPAR_AUDIT_VERDICT_COUNT] = {0};
        for (size_t j = 0; j < i && !seen; j++) seen = !strcmp(a->rows[j].section, sec);
        if (seen) continue;
        for (size_t j = i; j < a->n; j++)
            if (!strcmp(a->rows[j].section, sec)) cnt[a->rows[j].verdict]++;
        if (epar_csv_append(t, "siiii", sec, cnt[0], cnt[1], cnt[2], cnt[3])) {
            epar_csv_free(t);
            t = NULL;
        }
    }
    return t;
}
