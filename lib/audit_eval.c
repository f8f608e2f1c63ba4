/* audit, evaluation: each claim's measurement selected from its file (or computed), judged by its rule, and the
 * audit's rows with their verdicts (see audit.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <gsl/gsl_statistics_double.h>
#include "audit.h"
#include "audit_int.h"
#include "runrec.h"
#include "stats.h"
#include "err.h"

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

/* the rows of t that match `where` into *match (allocated, t->nrows + 1 entries; free it), their count in *nm */
static int match_rows(const struct epar_table *t, json_t *where, size_t **match, size_t *nm, char *why, size_t nwhy)
{
    char cols[512];
    int wc[32];
    json_t *wv[32];
    int nw = 0;
    *match = NULL;
    *nm = 0;
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
    if (!(*match = malloc((t->nrows + 1) * sizeof **match))) return why_set(why, nwhy, "out of memory");
    for (size_t r = 0; r < t->nrows; r++) {
        int ok = 1;
        for (int w = 0; w < nw && ok; w++) ok = cell_matches(t, r, wc[w], wv[w]);
        if (ok) (*match)[(*nm)++] = r;
    }
    return EPAR_OK;
}

int epar_audit_select(const struct epar_table *t, json_t *where, const char *col, const char *sd_col,
                      const char *aggregate, double *value, double *sd, int *nrows, long *row, char *why, size_t nwhy)
{
    char cols[512];
    *value = *sd = NAN;
    *nrows = 0;
    if (row) *row = -1;
    int ci = epar_csv_col(t, col), si = sd_col ? epar_csv_col(t, sd_col) : -1;
    if (ci < 0 || (sd_col && si < 0)) {
        list_columns(t, cols, sizeof cols);
        return why_set(why, nwhy, "column '%s' not in the file (columns: %s)", ci < 0 ? col : sd_col, cols);
    }
    size_t *match, nm;
    int mst = match_rows(t, where, &match, &nm, why, nwhy);
    if (mst) return mst;
    int st = EPAR_OK;
    *nrows = (int)nm;
    if (nm == 0) {
        char *sel = where ? json_dumps(where, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(15)) : NULL;
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
                if (row) *row = (long)match[0];
            } else if (!strcmp(aggregate, "mean")) {
                *value = gsl_stats_mean(v, 1, nv);
                *sd = si >= 0 ? gsl_stats_mean(s, 1, nv) : gsl_stats_sd(v, 1, nv);
            } else if (!strcmp(aggregate, "min") || !strcmp(aggregate, "max")) {
                int mx = !strcmp(aggregate, "max");
                size_t best = mx ? gsl_stats_max_index(v, 1, nv) : gsl_stats_min_index(v, 1, nv);
                *value = v[best];
                *sd = s[best];
                if (row) *row = (long)match[best];
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
    if (epar_audit_parse_distance(PICK("d"), &fr, &off)) return epar_err_set(EPAR_EINVAL, "bad distance");
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

/* ---- claims: evaluation ---- */

/* One measurement of a claim (the claim itself, or one of its readings). */
#define EPAR_AUDIT_MAX_EVERY 64

struct reading {
    const char *label;          /* NULL for a claim's single measurement */
    double r, u;                /* reported value and the unit of its last printed digit (0 if not printed) */
    struct epar_audit_meas m;
    enum epar_audit_outcome out;
    int available, missing_file, spec_problem, stale;
    int not_learned;            /* learned_column of the selected rows is 0: no model beat a constant answer */
    int n_other;                /* its n counts something else than seeds (n_column "pairs", "trials", rows) */
    int every;                  /* aggregate "every": each selected row's own interval is judged (every_interval) */
    int nev;                    /* ... its rows: value, sd and run-level se */
    double ev[EPAR_AUDIT_MAX_EVERY], es[EPAR_AUDIT_MAX_EVERY], er[EPAR_AUDIT_MAX_EVERY];
    double ev_lo, ev_hi;        /* ... the lowest (below: highest) row's own interval at the level: what claims.csv shows
                                 * (m.lo, m.hi hold the decision's two ends, which are at two levels) */
    double ev_adj;              /* ... the adjusted level of the other end */
    char desc[512];             /* what was measured: file[where].column or the computation */
    char accepted[1024];        /* what the rule accepts (beats_all with a gain: about 450 characters) */
    char why[1024];             /* why the measurement is not available */
    char input[160], hash[32], seeds[256], version[32], stale_why[512];
};

static void reported_of(json_t *rep, double *r, double *u)
{
    *r = NAN;
    *u = 0;
    if (json_is_number(rep)) *r = json_number_value(rep);
    else if (json_is_string(rep) && epar_audit_printed_parse(json_string_value(rep), r, u)) *r = NAN;
}

/* run.json of the folder of `file`: its fingerprint, and whether it is the run being audited */
static void read_run(struct reading *rd, const struct epar_audit_ctx *ctx, const char *file)
{
    char dir[128], path[4200];
    snprintf(dir, sizeof dir, "%.*s", (int)(strchr(file, '/') - file), file);
    snprintf(rd->input, sizeof rd->input, "%s/run.json", dir);
    snprintf(path, sizeof path, "%s/%s", ctx->out_root, rd->input);
    const struct epar_audit_expect *e = NULL;
    for (int i = 0; i < ctx->n_expect; i++)
        if (!strcmp(ctx->expect[i].dir, dir)) e = &ctx->expect[i];
    struct epar_runrec_fp fp;
    if (epar_runrec_fp_read(path, &fp)) {
        /* no run.json: if the measured file is missing too the experiment has not run (the claim is "not
         * reproducible here", rerun it), not stale; a file without its run.json cannot be placed, so it is stale */
        char fp_path[4200];
        snprintf(fp_path, sizeof fp_path, "%s/%s", ctx->out_root, file);
        if (e && access(fp_path, F_OK) == 0) {
            rd->stale = 1;
            snprintf(rd->stale_why, sizeof rd->stale_why, "output/%s is missing or unreadable", rd->input);
        }
        return;
    }
    const char *hash = fp.protocol_hash, *over = fp.cli_overrides, *ver = fp.epar_version, *preset = fp.preset;
    snprintf(rd->hash, sizeof rd->hash, "%s", hash ? hash : "");
    snprintf(rd->version, sizeof rd->version, "%s", ver ? ver : "");
    int ns = fp.n_seeds;
    snprintf(rd->seeds, sizeof rd->seeds, "%s", fp.seeds_text);
    if (rd->m.stochastic && rd->m.n == 0) rd->m.n = ns;
    if (e) {
        char w[320] = "";
        if (e->protocol_hash && (!hash || strcmp(hash, e->protocol_hash)))
            snprintf(w, sizeof w, "protocol %s, not this protocol's %s", hash ? hash : "(none)", e->protocol_hash);
        else if (e->preset && (!preset || strcmp(preset, e->preset)))
            snprintf(w, sizeof w, "preset %s, not %s", preset ? preset : "(none)", e->preset);
        else if (over && *over)
            snprintf(w, sizeof w, "run with command-line changes '%s'", over);
        else if (e->version && (!ver || strcmp(ver, e->version)))
            snprintf(w, sizeof w, "written by epar %s, not %s", ver ? ver : "(unknown)", e->version);
        else if (e->n_seeds) {
            int same = ns == e->n_seeds;
            for (int i = 0; same && i < ns; i++) same = (unsigned long)fp.seeds[i] == e->seeds[i];
            if (!same) snprintf(w, sizeof w, "seeds %s, not the %d seed(s) of this run", rd->seeds, e->n_seeds);
        }
        if (*w) {
            rd->stale = 1;
            snprintf(rd->stale_why, sizeof rd->stale_why, "output/%s: %s", rd->input, w);
        }
    }
    epar_runrec_fp_free(&fp);
}

static void where_text(json_t *w, char *buf, size_t n)
{
    const char *k;
    json_t *v;
    size_t used = 0;
    buf[0] = '\0';
    json_object_foreach(w, k, v) {
        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));
        int wr = snprintf(buf + used, n - used, "%s%s=%s", used ? "," : "", k, s ? s : "?");
        free(s);
        if (wr < 0 || (size_t)wr >= n - used) break;
        used += (size_t)wr;
    }
}

/* a value of another column of the same selected rows: their mean (aggregate mean), else the row the measurement took
 * (the one row, or for min/max the row of the measured column's extreme: a companion column, e.g. its se_run, is that
 * row's, not the extreme of the companion column); NaN when absent */
static double same_rows(const struct epar_table *t, json_t *m, const char *col, char *why, size_t nwhy)
{
    double v, sd;
    int nr;
    long row;
    const char *ag = jstr(m, "aggregate", NULL);
    if (!col) return NAN;
    if (ag && !strcmp(ag, "every")) ag = "min";   /* "every" shows its lowest row: companions are that row's */
    if (ag && (!strcmp(ag, "min") || !strcmp(ag, "max"))) {
        int ci = epar_csv_col(t, col);
        if (ci < 0 || epar_audit_select(t, json_object_get(m, "where"), jstr(m, "column", ""), NULL, ag, &v, &sd, &nr,
                                        &row, why, nwhy) || row < 0)
            return NAN;
        const struct epar_cell *c = &t->cells[(size_t)row * (size_t)t->ncols + ci];
        return c->s ? NAN : c->v;
    }
    if (epar_audit_select(t, json_object_get(m, "where"), col, NULL, ag && !strcmp(ag, "mean") ? "mean" : ag, &v, &sd,
                          &nr, NULL, why, nwhy))
        return NAN;
    return v;
}

/* "group_by": the mean of the selected rows whose spread is the sd across the groups' means (e.g. the per-seed average
 * over the importance types: the sd of that average, not the average of the per-type sds); n = the groups. With a
 * run-level standard error per row (se_col), *floor is that of a group's mean, sqrt(sum of the rows' se^2) / rows (the
 * rows of a group are independent draws: one seed's importance types), as the root mean square over the groups; the
 * same floor the per-row claims get, carried to their average. NaN without se_col. */
static int grouped_spread(const struct epar_table *t, json_t *m, const char *col, const char *by, const char *se_col,
                          double *sd, double *floor, int *n, char *why, size_t nwhy)
{
    int gi = epar_csv_col(t, by), si = se_col ? epar_csv_col(t, se_col) : -1;
    *floor = NAN;
    if (gi < 0) return why_set(why, nwhy, "group_by column '%s' not in the file", by);
    if (se_col && si < 0) return why_set(why, nwhy, "se_run column '%s' not in the file", se_col);
    json_t *where = json_deep_copy(json_object_get(m, "where"));
    if (!where) where = json_object();
    double *means = epar_err_alloc(t->nrows + 1, sizeof *means, "the audit's group means"), fsum = 0;
    int st = where && means ? EPAR_OK : why_set(why, nwhy, "out of memory");
    size_t ng = 0;
    for (size_t r = 0; r < t->nrows && !st; r++) {
        const struct epar_cell *c = &t->cells[r * (size_t)t->ncols + gi];
        json_t *key = c->s ? json_string(c->s) : json_real(c->v);
        int seen = 0;
        for (size_t q = 0; q < r && !seen; q++) seen = cell_matches(t, q, gi, key);
        double v, s;
        int nr;
        if (!seen && !json_object_set(where, by, key) &&
            !epar_audit_select(t, where, col, NULL, "mean", &v, &s, &nr, NULL, why, nwhy)) {
            means[ng++] = v;
            size_t *rows, nm;
            if (si >= 0 && !(st = match_rows(t, where, &rows, &nm, why, nwhy))) {
                double q2 = 0;
                for (size_t i = 0; i < nm; i++) {
                    double e = t->cells[rows[i] * (size_t)t->ncols + si].v;
                    q2 += e * e;
                }
                fsum += nm ? q2 / ((double)nm * (double)nm) : NAN;
                free(rows);
            }
        }
        json_decref(key);
    }
    *n = (int)ng;
    *sd = ng > 1 ? gsl_stats_sd(means, 1, ng) : NAN;
    if (si >= 0 && ng) *floor = sqrt(fsum / (double)ng);
    free(means);
    json_decref(where);
    return st;
}

/* aggregate "every": keep each selected row's value, sd and run-level se (every_interval judges them together) */
static int every_rows(struct reading *rd, const struct epar_table *t, json_t *m, const char *col, const char *sdc,
                      char *why, size_t nwhy)
{
    size_t *rows, nm;
    int ci = epar_csv_col(t, col), si = epar_csv_col(t, sdc), ri = epar_csv_col(t, jstr(m, "se_run_column", ""));
    int st = match_rows(t, json_object_get(m, "where"), &rows, &nm, why, nwhy);
    if (st) return st;
    if (nm > EPAR_AUDIT_MAX_EVERY) st = why_set(why, nwhy, "aggregate every judges at most %d rows, %zu match",
                                                EPAR_AUDIT_MAX_EVERY, nm);
    for (size_t i = 0; i < nm && !st; i++) {
        const struct epar_cell *row = &t->cells[rows[i] * (size_t)t->ncols];
        rd->ev[i] = row[ci].v;
        rd->es[i] = row[si].v;
        rd->er[i] = ri >= 0 ? row[ri].v : NAN;
    }
    rd->nev = st ? 0 : (int)nm;
    free(rows);
    return st;
}

/* aggregate "every" under the rule above (below: mirrored): the claim that every row lies above r holds when every row's
 * interval at the level does (the lowest lower end > r), and fails when some row lies below r after a Holm adjustment
 * across the rows: at least one of them is rejected exactly when one is at Bonferroni's level, i.e. when the lowest
 * upper end of the intervals at level 1 - (1 - level) / rows is below r. The measurement becomes that interval [lowest
 * lower end, lowest adjusted upper end]; its value the lowest row's. Each row's sd is floored by its run-level se. */
static void every_interval(struct reading *rd, int above, double level)
{
    struct epar_audit_meas *m = &rd->m;
    int k = rd->nev;
    double adj = 1 - (1 - level) / (k > 0 ? k : 1);
    if (m->n < 2 || k < 1) return;   /* no spread: the threshold rule says so */
    double q = epar_stats_quantile(level, m->n - 1), qa = epar_stats_quantile(adj, m->n - 1), sq = sqrt((double)m->n);
    double lo = above ? INFINITY : -INFINITY, hi = lo, val = lo, sd = NAN;
    for (int i = 0; i < k; i++) {
        double s = rd->es[i];
        if (isfinite(rd->er[i]) && !(s >= rd->er[i])) s = rd->er[i];
        if (!isfinite(rd->ev[i]) || !isfinite(s)) {
            lo = hi = NAN;
            break;
        }
        double l = rd->ev[i] - (above ? q : qa) * s / sq, h = rd->ev[i] + (above ? qa : q) * s / sq;
        if (above ? rd->ev[i] < val : rd->ev[i] > val) {
            val = rd->ev[i];
            sd = rd->es[i];
        }
        lo = above ? fmin(lo, l) : fmax(lo, l);
        hi = above ? fmin(hi, h) : fmax(hi, h);
    }
    m->value = val;
    m->sd = sd;
    m->stochastic = m->interval = 1;
    m->lo = lo;
    m->hi = hi;
    rd->ev_adj = adj;
    rd->ev_lo = rd->ev_hi = NAN;
    if (isfinite(lo) && isfinite(sd)) {   /* the deciding row's own interval, one level for both ends */
        double s = sd;
        for (int i = 0; i < k; i++)
            if (rd->ev[i] == val && isfinite(rd->er[i]) && !(s >= rd->er[i])) s = rd->er[i];
        rd->ev_lo = val - q * s / sq;
        rd->ev_hi = val + q * s / sq;
    }
    snprintf(rd->desc + strlen(rd->desc), sizeof rd->desc - strlen(rd->desc), " (each of the %d rows' interval; the other "
             "end at the Holm/Bonferroni-adjusted level %.4g)", k, adj);
}

static void measure_file(struct reading *rd, json_t *m, const struct epar_audit_ctx *ctx)
{
    const char *file = jstr(m, "file", ""), *col = jstr(m, "column", ""), *sdc = jstr(m, "sd_column", NULL),
               *ag = jstr(m, "aggregate", NULL), *ac = jstr(m, "against_column", NULL);
    char path[4200], w[256];
    where_text(json_object_get(m, "where"), w, sizeof w);
    snprintf(rd->desc, sizeof rd->desc, "%s%s%s%s.%s%s%s%s%s", file, *w ? "[" : "", w, *w ? "]" : "", col,
             sdc ? " +- " : "", sdc ? sdc : "", ag ? ", " : "", ag ? ag : "");
    if (ag) snprintf(rd->desc + strlen(rd->desc), sizeof rd->desc - strlen(rd->desc), " over the rows");
    snprintf(path, sizeof path, "%s/%s", ctx->out_root, file);
    if (!file_exists(path)) {
        rd->missing_file = 1;
        snprintf(rd->why, sizeof rd->why, "measurement file output/%s missing: the experiment that writes it has not run "
                 "(rerun it, or 'epar run-all')", file);
        read_run(rd, ctx, file);
        return;
    }
    struct epar_table *t = NULL;
    if (epar_csv_read(path, &t)) {
        rd->spec_problem = 1;
        snprintf(rd->why, sizeof rd->why, "cannot read output/%s: %s", file, epar_err_message());
        return;
    }
    int nr;
    char why[512];
    rd->m = EPAR_AUDIT_MEAS_NONE;
    rd->every = ag && !strcmp(ag, "every");
    if (epar_audit_select(t, json_object_get(m, "where"), col, sdc, rd->every ? "min" : ag, &rd->m.value, &rd->m.sd, &nr,
                          NULL, why, sizeof why) ||
        (rd->every && every_rows(rd, t, m, col, sdc, why, sizeof why)) ||
        (ac && isnan(rd->r = same_rows(t, m, ac, why, sizeof why)))) {
        rd->spec_problem = 1;
        snprintf(rd->why, sizeof rd->why, "the measurement does not fit output/%s: %s", file, why);
    } else {
        rd->available = 1;
        rd->m.stochastic = sdc != NULL || (ag && !strcmp(ag, "mean") && nr > 1);
        if (!sdc && rd->m.stochastic) rd->m.n = nr;
        rd->m.se_run = same_rows(t, m, jstr(m, "se_run_column", NULL), why, sizeof why);
        rd->m.se = same_rows(t, m, jstr(m, "se_column", NULL), why, sizeof why);
        if (jstr(m, "n_column", NULL)) rd->m.n = (int)same_rows(t, m, jstr(m, "n_column", NULL), why, sizeof why);
        /* a mean of rows without an sd column counts rows, unless grouped by seed (n = the seeds' means, below) */
        rd->n_other = (jstr(m, "n_column", NULL) && !strstr(jstr(m, "n_column", ""), "seed")) ||
                      jstr(m, "trials_column", NULL) ||
                      (ag && !sdc && !(jstr(m, "group_by", NULL) && strstr(jstr(m, "group_by", ""), "seed")));
        if (jstr(m, "lo_column", NULL)) {
            /* the measurement's own interval: columns the file must have (NaN in them: no interval at this n) */
            rd->m.stochastic = rd->m.interval = 1;
            const char *lc = jstr(m, "lo_column", NULL), *hc = jstr(m, "hi_column", NULL);
            if (epar_csv_col(t, lc) < 0 || epar_csv_col(t, hc) < 0) {
                rd->available = 0;
                rd->spec_problem = 1;
                snprintf(rd->why, sizeof rd->why, "the measurement does not fit output/%s: interval column '%s' not in "
                         "the file", file, epar_csv_col(t, lc) < 0 ? lc : hc);
            }
            rd->m.lo = same_rows(t, m, lc, why, sizeof why);
            rd->m.hi = same_rows(t, m, hc, why, sizeof why);
            snprintf(rd->desc + strlen(rd->desc), sizeof rd->desc - strlen(rd->desc), " in [%s, %s]", lc, hc);
        }
        if (jstr(m, "trials_column", NULL)) {
            /* a share of n independent trials: Wilson's score interval at the level, which is not certain at 0 or n
             * successes (a Wald interval p +- z sqrt(p(1-p)/n) is [1, 1] from 10 of 10) */
            double nt = same_rows(t, m, jstr(m, "trials_column", NULL), why, sizeof why), p = rd->m.value;
            rd->m.stochastic = rd->m.interval = 1;
            rd->m.lo = rd->m.hi = NAN;
            if (nt >= 1 && p >= 0 && p <= 1) {
                double z = epar_stats_quantile(ctx->level, 0), z2n = z * z / nt, c = (p + z2n / 2) / (1 + z2n);
                double h = z / (1 + z2n) * sqrt(p * (1 - p) / nt + z2n / (4 * nt));
                rd->m.lo = fmax(0, c - h);
                rd->m.hi = fmin(1, c + h);
                rd->m.n = (int)nt;
            }
            snprintf(rd->desc + strlen(rd->desc), sizeof rd->desc - strlen(rd->desc), " of %s trials (Wilson's interval)",
                     jstr(m, "trials_column", NULL));
        }
        rd->m.holm = same_rows(t, m, jstr(m, "holm_column", NULL), why, sizeof why);
        rd->m.nonsup = same_rows(t, m, jstr(m, "nonsup_column", NULL), why, sizeof why);
        if (jstr(m, "group_by", NULL)) {
            rd->m.stochastic = 1;
            if (grouped_spread(t, m, col, jstr(m, "group_by", NULL), jstr(m, "se_run_column", NULL), &rd->m.sd,
                               &rd->m.se_run, &rd->m.n, why, sizeof why)) {
                rd->available = 0;
                rd->spec_problem = 1;
                snprintf(rd->why, sizeof rd->why, "the measurement does not fit output/%s: %s", file, why);
            }
            snprintf(rd->desc + strlen(rd->desc), sizeof rd->desc - strlen(rd->desc), ", sd across the %s means",
                     jstr(m, "group_by", NULL));
        }
        /* NaN (a run from before the column, or cells without a chance level): unknown, judged as before */
        rd->not_learned = same_rows(t, m, jstr(m, "learned_column", NULL), why, sizeof why) == 0.0;
        if (ac) snprintf(rd->desc + strlen(rd->desc), sizeof rd->desc - strlen(rd->desc), " vs column %s", ac);
    }
    epar_csv_free(t);
    read_run(rd, ctx, file);
    if (rd->spec_problem && rd->stale) {
        /* the folder holds another run (other types, lengths, mechanisms ...): the row or column the claim reads is
         * absent because that run did not produce it, not because the claim's spec is wrong */
        char w2[2048];
        int len = snprintf(w2, sizeof w2, "%s, because output/%s holds another run (%s): rerun the experiment that writes "
                 "output/%.*s/ with the protocol (or 'epar run-all')", rd->why, file, rd->stale_why,
                 (int)(strchr(file, '/') - file), file);
        size_t keep = len < 0 ? 0 : (size_t)len < sizeof rd->why ? (size_t)len : sizeof rd->why - 1;
        memcpy(rd->why, w2, keep);
        rd->why[keep] = '\0';
        rd->spec_problem = 0;
        rd->missing_file = 1;
    }
    char reduced[512];
    if (rd->spec_problem && !strncmp(file, "benchmark/", 10) &&
        epar_runrec_reduced_at(ctx->out_root, reduced, sizeof reduced)) {
        /* a reduced grid (the smoke budget, a subset) leaves rows or whole tables empty: the run's size, not the
         * claim's spec, is what is missing */
        char w2[2048];
        int len = snprintf(w2, sizeof w2, "%s, because output/benchmark/ holds a reduced run (%s) that does not produce "
                           "it: rerun 'epar benchmark' with the quick or full budget and the whole grid", rd->why, reduced);
        size_t keep = len < 0 ? 0 : (size_t)len < sizeof rd->why ? (size_t)len : sizeof rd->why - 1;
        memcpy(rd->why, w2, keep);
        rd->why[keep] = '\0';
        rd->spec_problem = 0;
        rd->missing_file = 1;
    }
}

static void measure(struct reading *rd, json_t *m, json_t *claim_rep, const struct epar_audit_ctx *ctx)
{
    json_t *own = json_object_get(m, "reported");
    reported_of(own ? own : claim_rep, &rd->r, &rd->u);
    rd->m = EPAR_AUDIT_MEAS_NONE;
    if (json_object_get(m, "posfx")) {
        char desc[256];
        if (posfx_eval(json_object_get(m, "posfx"), NULL, &rd->m.value, desc, sizeof desc) == EPAR_OK) {
            rd->available = 1;
            snprintf(rd->desc, sizeof rd->desc, "computed: %s", desc);
            snprintf(rd->input, sizeof rd->input, "none (the closed form of lib/posfx, docs/MECHANISMS.md §3-4)");
        } else {
            rd->spec_problem = 1;
            snprintf(rd->why, sizeof rd->why, "cannot compute %s: %s", desc, epar_err_message());
        }
    } else {
        measure_file(rd, m, ctx);
    }
}

static const char *outcome_word(enum epar_audit_outcome o)
{
    switch (o) {
    case EPAR_AUDIT_HOLDS: return "holds";
    case EPAR_AUDIT_FAILS: return "does not hold";
    case EPAR_AUDIT_OPEN: return "undecided at this level (the interval straddles the threshold)";
    case EPAR_AUDIT_FEW_SEEDS: return "needs >= 2 seeds for a spread";
    case EPAR_AUDIT_NOT_LEARNED: return "not judged: no model learned the task (none beat the best constant answer), "
                                        "so the difference says nothing about the claim";
    case EPAR_AUDIT_NO_SPREAD: return "not judged: no interval (every seed gave the same value, e.g. every model at "
                                      "accuracy 1.0, or a comparison is missing), so it says nothing about the claim";
    default: return "cannot be judged (the measured value is not a number)";
    }
}

/* one reading's sentence: "[label: ]measured v (sd s over n seeds) vs reported r: accepted A -> holds" */
static void reading_note(const struct reading *rd, char *note, size_t n)
{
    if (!rd->available) {
        note_add(note, n, "%s%s%s", rd->label ? rd->label : "", rd->label ? ": " : "", rd->why);
        return;
    }
    char spread[128] = "";
    if (rd->m.stochastic && isfinite(rd->m.sd))
        snprintf(spread, sizeof spread, " (sd %.3g over %d%s)", rd->m.sd, rd->m.n, rd->m.n == 1 ? "" : " seeds/rows");
    else if (rd->m.stochastic && !rd->m.interval)
        snprintf(spread, sizeof spread, " (no spread: %d seed)", rd->m.n);
    else if (isfinite(rd->m.se))
        snprintf(spread, sizeof spread, " (se %.3g)", rd->m.se);
    if (isfinite(rd->m.lo) || isfinite(rd->m.hi))
        snprintf(spread + strlen(spread), sizeof spread - strlen(spread), " [%.6g, %.6g]", rd->m.lo, rd->m.hi);
    char vs[64] = "";   /* a range claim has no single reported value: no "vs nan" */
    if (isfinite(rd->r)) snprintf(vs, sizeof vs, " vs %.6g", rd->r);
    note_add(note, n, "%s%smeasured %.6g%s%s: accepted %s -> %s", rd->label ? rd->label : "",
             rd->label ? ": " : "", rd->m.value, spread, vs, rd->accepted[0] ? rd->accepted : "-",
             outcome_word(rd->out));
}

/* quorum k > 0 (the measure's "quorum": the statement holds when k of the n readings do, "most tasks", "some task"):
 * reproduced when at least k hold, not reproduced when fewer than k can (more than n - k fail), else inconclusive;
 * 0: every reading must hold: reproduced when all do, partly reproduced when some hold and some fail, not reproduced
 * when some fail and none holds (the open ones, whatever they turn out to be, cannot make the claim reproduced: at
 * best partly), inconclusive when none fails and some are open */
static enum epar_audit_verdict combine(const struct reading *rd, int n, int quorum)
{
    int nh = 0, nf = 0, ns = 0, nu = 0; /* open and unlearned readings are the rest: with them, inconclusive */
    for (int i = 0; i < n; i++) {
        if (!rd[i].available) return EPAR_AUDIT_NOT_HERE;
        nh += rd[i].out == EPAR_AUDIT_HOLDS;
        nf += rd[i].out == EPAR_AUDIT_FAILS;
        ns += rd[i].out == EPAR_AUDIT_FEW_SEEDS;
        nu += rd[i].out == EPAR_AUDIT_UNDECIDED;
    }
    if (nu) return EPAR_AUDIT_NOT_HERE;
    if (ns) return EPAR_AUDIT_NEEDS_SEEDS;
    if (quorum > 0) return nh >= quorum ? EPAR_AUDIT_REPRODUCED : nf > n - quorum ? EPAR_AUDIT_NOT_REPRODUCED
                                                                                  : EPAR_AUDIT_INCONCLUSIVE;
    if (nh == n) return EPAR_AUDIT_REPRODUCED;
    if (nh && nf) return EPAR_AUDIT_PARTLY;
    if (nf) return EPAR_AUDIT_NOT_REPRODUCED;
    return EPAR_AUDIT_INCONCLUSIVE;
}

static const char *verdict_reason(enum epar_audit_verdict v)
{
    switch (v) {
    case EPAR_AUDIT_REPRODUCED: return "reproduced: the measurement meets the rule";
    case EPAR_AUDIT_PARTLY: return "partly reproduced: some readings meet the rule, some do not";
    case EPAR_AUDIT_NOT_REPRODUCED: return "not reproduced: the measurement does not meet the rule";
    case EPAR_AUDIT_INCONCLUSIVE: return "inconclusive: the measurement's interval neither clears nor misses the claim";
    case EPAR_AUDIT_TRIVIAL: return "trivially true: holds by construction, and the check confirms it";
    case EPAR_AUDIT_ILL_POSED: return "ill-posed: the statement cannot be true or false as written";
    case EPAR_AUDIT_NEEDS_SEEDS: return "needs >= 2 seeds: the rule judges against a spread, and one seed has none";
    case EPAR_AUDIT_NOT_HERE: return "not reproducible here";
    case EPAR_AUDIT_STALE: return "stale: the measurement comes from another run than the one audited";
    default: return "";
    }
}

static void alternatives_note(json_t *c, json_t *m, const struct epar_audit_tol *tol, const struct reading *rd,
                              double level, char *note, size_t n)
{
    json_t *alts = json_object_get(c, "alternatives"), *alt;
    size_t j;
    json_array_foreach(alts, j, alt) {
        struct epar_audit_meas am = EPAR_AUDIT_MEAS_NONE;
        char d2[256], acc[256];
        if (posfx_eval(json_object_get(m, "posfx"), alt, &am.value, d2, sizeof d2) == EPAR_OK) {
            enum epar_audit_outcome o = epar_audit_judge(tol, rd->r, rd->u, &am, level, acc, sizeof acc);
            note_add(note, n, "alternative reading (%s, shown, never used for the verdict): %.6g, %s",
                     jstr(alt, "label", ""), am.value, o == EPAR_AUDIT_HOLDS ? "would match" : "would not match");
        }
    }
}

static int row_strings(struct epar_audit_row *row, json_t *c, const struct reading *rd, int nrd, const char *rule,
                       const char *note)
{
    json_t *rj = json_object_get(c, "reported");
    const char *rtext = jstr(c, "reported_text", NULL);
    char meas[512] = "", desc[1024] = "", acc[4096] = "", lo[512] = "", hi[512] = "";
    int any_interval = 0;
    for (int i = 0; i < nrd; i++) {
        size_t l = strlen(meas), ld = strlen(desc), la = strlen(acc);
        char num[64];
        epar_csv_format_number(rd[i].m.value, num, sizeof num);
        snprintf(meas + l, sizeof meas - l, "%s%s", i ? "; " : "", rd[i].available && !isnan(rd[i].m.value) ? num : "");
        /* the interval of each reading, where its file gives one */
        for (int k = 0; k < 2; k++) {
            double x = rd[i].every ? (k ? rd[i].ev_hi : rd[i].ev_lo) : k ? rd[i].m.hi : rd[i].m.lo;
            char *b = k ? hi : lo;
            epar_csv_format_number(x, num, sizeof num);
            snprintf(b + strlen(b), sizeof lo - strlen(b), "%s%s", i ? "; " : "", rd[i].available && !isnan(x) ? num : "");
            any_interval |= rd[i].available && !isnan(x);
        }
        snprintf(desc + ld, sizeof desc - ld, "%s%s%s%s", i ? "; " : "", rd[i].label ? rd[i].label : "",
                 rd[i].label ? ": " : "", rd[i].desc);
        snprintf(acc + la, sizeof acc - la, "%s%s", i ? "; " : "", rd[i].accepted);
    }
    const struct reading *r0 = &rd[0];
    row->id = sdup(jstr(c, "id", ""));
    row->source = sdup(jstr(c, "source", ""));
    row->statement = sdup(jstr(c, "statement", ""));
    row->section = sdup(jstr(c, "section", "other"));
    row->reported = rtext ? sdup(rtext) : json_is_number(rj) ? fmtnum(json_number_value(rj)) : sdup(jstr(c, "reported", ""));
    row->measured = nrd == 1 ? (r0->available ? fmtnum(r0->m.value) : sdup("")) : sdup(meas);
    row->measured_sd = nrd == 1 && r0->m.stochastic ? fmtnum(r0->m.sd) : sdup("");
    row->measured_lo = sdup(any_interval ? lo : "");
    row->measured_hi = sdup(any_interval ? hi : "");
    char nbuf[16] = "";
    if (nrd == 1 && r0->m.stochastic) snprintf(nbuf, sizeof nbuf, "%d", r0->m.n);
    row->n_seeds = sdup(nbuf);
    row->rule = sdup(rule);
    row->accepted = sdup(acc);
    row->measurement = sdup(desc);
    row->input = sdup(r0->input);
    row->run_hash = sdup(r0->hash);
    row->run_seeds = sdup(r0->seeds);
    row->run_version = sdup(r0->version);
    row->note = sdup(note);
    json_t *figs = json_object_get(c, "figures");
    if (figs && json_array_size(figs)) {
        row->figures = calloc(json_array_size(figs) + 1, sizeof *row->figures);
        if (row->figures)
            for (size_t k = 0; k < json_array_size(figs); k++)
                row->figures[k] = sdup(json_string_value(json_array_get(figs, k)));
    }
    return row->id && row->source && row->statement && row->section && row->reported && row->measured &&
                   row->measured_sd && row->measured_lo && row->measured_hi && row->n_seeds && row->rule &&
                   row->accepted && row->measurement && row->input && row->run_hash && row->run_seeds &&
                   row->run_version && row->note
               ? EPAR_OK
               : epar_err_set(EPAR_ENOMEM, "out of memory in the audit");
}

#define MAX_READINGS 16

/* The seeds at which every open reading of a claim would be decided, its mean and spread held at what was observed:
 * the reading's interval half-width h at n seeds scales as t(n'-1) sqrt(n) / (t(n-1) sqrt(n')), and the reading is
 * decided when h' is below the distance from its mean to the nearest end of the rule (the threshold, the range's
 * ends; beats_all: its reported threshold). A mean on a threshold is never decided (NaN). At most 1000 seeds. */
static double seeds_needed(const struct reading *rd, int nrd, const struct epar_audit_tol *t, double level)
{
    double most = 0;
    for (int i = 0; i < nrd; i++) {
        if (rd[i].out != EPAR_AUDIT_OPEN && rd[i].out != EPAR_AUDIT_FEW_SEEDS) continue;
        const struct epar_audit_meas *m = &rd[i].m;
        int n = m->n;
        if (rd[i].n_other) return NAN;   /* more seeds are not what its n counts */
        double h = NAN, v = m->value;
        if (m->interval && isfinite(m->lo) && isfinite(m->hi)) {
            h = (m->hi - m->lo) / 2;
            v = t->rule == EPAR_AUDIT_BEATS_ALL ? m->lo + h : (m->lo + m->hi) / 2;
        } else if (n >= 2 && isfinite(m->sd)) {
            double s = isfinite(m->se_run) && !(m->sd >= m->se_run) ? m->se_run : m->sd;
            h = epar_stats_quantile(level, n - 1) * s / sqrt((double)n);
        }
        if (!(n >= 2) || !(h > 0) || !isfinite(v)) return NAN;
        double d;
        if (t->rule == EPAR_AUDIT_RANGE) d = fmin(fabs(v - t->lo), fabs(v - t->hi));
        else d = fmax(fabs(v - rd[i].r), t->margin - fabs(v - rd[i].r));   /* either side, or inside the margin */
        if (!(d > 0)) return NAN;
        double unit = h * sqrt((double)n) / epar_stats_quantile(level, n - 1);   /* h at one seed, without the t */
        int k = n + 1;
        while (k <= 1000 && epar_stats_quantile(level, k - 1) * unit / sqrt((double)k) >= d) k++;
        if (k > 1000) return NAN;
        most = fmax(most, k);
    }
    return most > 0 ? most : NAN;
}

static int eval_claim(struct epar_audit *a, json_t *c, const struct epar_audit_ctx *ctx)
{
    struct epar_audit_row *row = new_row(a);
    if (!row) return epar_err_set(EPAR_ENOMEM, "out of memory in the audit");
    row->seeds_needed = NAN;
    struct epar_audit_ctx own;
    json_t *ov = ctx->overrides ? json_object_get(ctx->overrides, jstr(c, "id", "")) : NULL;
    if (ov) {   /* the staged benchmark's: this claim's own folder and level */
        own = *ctx;
        own.out_root = jstr(ov, "root", ctx->out_root);
        own.level = json_is_number(json_object_get(ov, "level")) ? json_number_value(json_object_get(ov, "level"))
                                                                  : ctx->level;
        ctx = &own;
    }
    json_t *m = json_object_get(c, "measure"), *rds = json_object_get(m, "readings");
    static struct reading rd[MAX_READINGS]; /* one claim at a time */
    int nrd = 0;
    char note[4096] = "", rule[160] = "";
    memset(rd, 0, sizeof rd);
    struct epar_audit_tol tol = {EPAR_AUDIT_EXACT, 0, NAN, NAN, 0, NAN, 0};
    json_t *tj = json_object_get(c, "tolerance");
    if (tj) {
        epar_audit_rule_parse(jstr(tj, "rule", ""), &tol.rule);
        tol.tol = jnum(tj, "tol", 0);
        tol.lo = jnum(tj, "lo", NAN);
        tol.hi = jnum(tj, "hi", NAN);
        tol.slack = jnum(tj, "slack", 0);
        tol.gain = jnum(tj, "gain", NAN);
        const char *fam = jstr(tj, "equivalence", NULL);
        if (fam && ctx->equivalence) tol.margin = jnum(json_object_get(ctx->equivalence, fam), "margin", 0);
        snprintf(rule, sizeof rule, "%s", epar_audit_rule_name(tol.rule));
        if (tol.rule == EPAR_AUDIT_PREDICTION || tol.rule == EPAR_AUDIT_ESTIMATE || tol.rule == EPAR_AUDIT_ABOVE ||
            tol.rule == EPAR_AUDIT_BELOW || tol.rule == EPAR_AUDIT_RANGE)
            snprintf(rule + strlen(rule), sizeof rule - strlen(rule), tol.margin > 0 ? " (level %g, margin %g)" : " (level %g)",
                     ctx->level, tol.margin);
    }
    enum epar_audit_verdict v;
    if (json_object_get(m, "needs")) {
        nrd = 1;
        row->needs = 1;
        snprintf(rd[0].desc, sizeof rd[0].desc, "not measured: needs %s", jstr(m, "needs", ""));
        snprintf(rd[0].input, sizeof rd[0].input, "none");
        v = EPAR_AUDIT_NOT_HERE;
        note_add(note, sizeof note, "not reproducible here: needs %s", jstr(m, "needs", ""));
    } else {
        if (rds) {
            size_t j;
            json_t *x;
            json_array_foreach(rds, j, x) if (nrd < MAX_READINGS) {
                rd[nrd].label = jstr(x, "label", NULL);
                measure(&rd[nrd++], x, json_object_get(c, "reported"), ctx);
            }
        } else {
            measure(&rd[nrd++], m, json_object_get(c, "reported"), ctx);
        }
        int stale = 0;
        for (int i = 0; i < nrd; i++) {
            if (rd[i].available && rd[i].every) {
                if (tol.rule == EPAR_AUDIT_ABOVE || tol.rule == EPAR_AUDIT_BELOW)
                    every_interval(&rd[i], tol.rule == EPAR_AUDIT_ABOVE, ctx->level);
                else {
                    rd[i].available = 0;
                    rd[i].spec_problem = 1;
                    snprintf(rd[i].why, sizeof rd[i].why, "aggregate every is for the rules above and below");
                }
            }
            if (rd[i].available) rd[i].out = epar_audit_judge(&tol, rd[i].r, rd[i].u, &rd[i].m, ctx->level, rd[i].accepted,
                                                               sizeof rd[i].accepted);
            if (rd[i].available && rd[i].every && rd[i].nev > 0 && isfinite(rd[i].m.lo)) {
                int above = tol.rule == EPAR_AUDIT_ABOVE;
                snprintf(rd[i].accepted, sizeof rd[i].accepted, "every one of the %d rows' intervals at level %.4g %s "
                         "%.6g (the %s of their %s ends: %.6g); not reproduced if the %s of their %s ends at the "
                         "Holm/Bonferroni-adjusted level %.4g is %s %.6g (it is %.6g)", rd[i].nev, ctx->level,
                         above ? "above" : "below", rd[i].r, above ? "lowest" : "highest", above ? "lower" : "upper",
                         above ? rd[i].m.lo : rd[i].m.hi, above ? "lowest" : "highest", above ? "upper" : "lower",
                         rd[i].ev_adj, above ? "at or below" : "at or above", rd[i].r, above ? rd[i].m.hi : rd[i].m.lo);
            }
            if (rd[i].available && rd[i].not_learned) rd[i].out = EPAR_AUDIT_NOT_LEARNED;
            reading_note(&rd[i], note, sizeof note);
            row->missing_file |= rd[i].missing_file;
            row->spec_problem |= rd[i].spec_problem;
            stale |= rd[i].stale;
        }
        if (!rds && json_object_get(m, "posfx")) alternatives_note(c, m, &tol, &rd[0], ctx->level, note, sizeof note);
        json_t *qj = json_object_get(m, "quorum");
        v = combine(rd, nrd, qj ? (int)json_integer_value(qj) : 0);
        if (qj) note_add(note, sizeof note, "quorum: %d of %d readings", (int)json_integer_value(qj), nrd);
        const char *triv = jstr(c, "trivial", NULL), *ill = jstr(c, "ill_posed", NULL);
        if (triv && v == EPAR_AUDIT_REPRODUCED) v = EPAR_AUDIT_TRIVIAL;
        else if (triv && v == EPAR_AUDIT_NOT_REPRODUCED) {
            row->broken_identity = 1;
            note_add(note, sizeof note, "the by-construction property does not hold here (%s): a defect of epar, or "
                     "parameters outside the property's assumptions", triv);
        }
        if (ill && v != EPAR_AUDIT_NOT_HERE) v = EPAR_AUDIT_ILL_POSED;
        if (stale) {
            for (int i = 0; i < nrd; i++)
                if (rd[i].stale) { note_add(note, sizeof note, "input %s", rd[i].stale_why); break; }
            note_add(note, sizeof note, "would be: %s", epar_audit_verdict_name(v));
            v = EPAR_AUDIT_STALE;
        }
        int nl = 0, nz = 0, nf = 0, no = 0;
        for (int i = 0; i < nrd; i++) {
            nl += rd[i].out == EPAR_AUDIT_NOT_LEARNED;
            nz += rd[i].out == EPAR_AUDIT_NO_SPREAD;
            nf += rd[i].out == EPAR_AUDIT_FAILS;
            no += rd[i].out == EPAR_AUDIT_OPEN || rd[i].out == EPAR_AUDIT_FEW_SEEDS;
        }
        row->seeds_help = (v == EPAR_AUDIT_INCONCLUSIVE || v == EPAR_AUDIT_NEEDS_SEEDS) && no > 0;
        if (row->seeds_help) row->seeds_needed = seeds_needed(rd, nrd, &tol, ctx->level);
        if (v == EPAR_AUDIT_INCONCLUSIVE && nz && !nl)
            note_add(note, sizeof note, nz == nrd ? "inconclusive: the measurement has no interval (every seed gave the "
                                                    "same value: a saturated or degenerate reading)"
                                                  : "inconclusive: %d of the %d readings have no interval (every seed "
                                                    "gave the same value); the others alone do not decide the claim",
                     nz, nrd);
        else if (v == EPAR_AUDIT_INCONCLUSIVE && nl)
            note_add(note, sizeof note, nl == nrd ? "inconclusive: no model learned this proxy's task at this budget "
                                                    "(none beat the best constant answer)"
                                                  : "inconclusive: no model learned the task of %d of the %d readings at "
                                                    "this budget; the others alone do not decide the claim", nl, nrd);
        else if (v == EPAR_AUDIT_NOT_REPRODUCED && !qj && nf < nrd)
            note_add(note, sizeof note, "not reproduced: %d of the %d readings do not meet the rule and none does; the "
                     "%d open ones could at best make it partly reproduced", nf, nrd, nrd - nf);
        else
            note_add(note, sizeof note, "%s", verdict_reason(v));
        if (triv) note_add(note, sizeof note, "by construction: %s", triv);
        if (ill) note_add(note, sizeof note, "ill-posed: %s", ill);
        if (tj && jstr(tj, "why", NULL)) note_add(note, sizeof note, "tolerance: %s", jstr(tj, "why", ""));
    }
    if (jstr(c, "note", NULL)) note_add(note, sizeof note, "%s", jstr(c, "note", ""));
    row->verdict = v;
    int st = row_strings(row, c, rd, nrd, rule, note);
    if (st) return st;
    a->counts[v]++;
    a->spec_problems += row->spec_problem;
    a->missing_files += row->missing_file;
    a->needs += row->needs;
    a->stale += v == EPAR_AUDIT_STALE;
    return EPAR_OK;
}

int epar_audit_run(json_t *claims, const struct epar_audit_ctx *ctx, struct epar_audit *a)
{
    memset(a, 0, sizeof *a);
    size_t i;
    json_t *c;
    json_array_foreach(claims, i, c) {
        int st = eval_claim(a, c, ctx);
        if (st) return st;
    }
    return EPAR_OK;
}

void epar_audit_free(struct epar_audit *a)
{
    for (size_t i = 0; i < a->n; i++) {
        struct epar_audit_row *r = &a->rows[i];
        char **s[] = {&r->id, &r->source, &r->statement, &r->section, &r->reported, &r->measured, &r->measured_sd,
                      &r->measured_lo, &r->measured_hi, &r->n_seeds, &r->rule, &r->accepted, &r->measurement, &r->input, &r->run_hash, &r->run_seeds,
                      &r->run_version, &r->note};
        for (size_t k = 0; k < sizeof s / sizeof *s; k++) free(*s[k]);
        for (char **f = r->figures; f && *f; f++) free(*f);
        free(r->figures);
    }
    free(a->rows);
    memset(a, 0, sizeof *a);
}
