#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "err.h"
#include "outdir.h"
#include "protocol.h"

int epar_protocol_error(const struct epar_protocol *p, const char *jpath, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int st = p->status ? p->status : EPAR_EPROTOCOL;
    epar_err_set(st, "invalid %s '%s': %s: %s", p->kind ? p->kind : "protocol", p->path, jpath, what);
    return st;
}

static int perr(const struct epar_protocol *p, const char *jpath, const char *what)
{
    return epar_protocol_error(p, jpath, "%s", what);
}

static int ignorable_key(const char *k)
{
    return k[0] == '_' || !strcmp(k, "description") || !strcmp(k, "comment");
}

static int in_list(const char *k, const char *const *list)
{
    for (; list && *list; list++)
        if (!strcmp(k, *list)) return 1;
    return 0;
}

static int check_keys(const struct epar_protocol *p, json_t *obj, const char *jpath, const char *const *a,
                      const char *const *b)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        (void)v;
        if (ignorable_key(k) || in_list(k, a) || in_list(k, b)) continue;
        char jp[512];
        snprintf(jp, sizeof jp, "%s.%s", jpath, k);
        int st = perr(p, jp, "unknown key");
        epar_err_hint("check the spelling; keys starting with '_' are ignored (use them for comments); a protocol newer "
                      "than this epar binary needs it rebuilt (make)");
        return st;
    }
    return EPAR_OK;
}

static const char *const preset_keys[] = {"alpha", "beta", "gamma", "form", "heads", "head_dim", "score_scale",
                                          "temperature", "seeds", NULL};
static const char *const common_keys[] = {"preset", "length", "hidden", "heads", "batch", "runs", "seeds",
                                          "alpha", "beta", "gamma", "form", NULL};
static const char *const top_keys[] = {"version", "default_preset", "seeds", "presets", "experiments", "claims", "audit",
                                       "reference_defects",
                                       NULL};

/* ---- typed readers on one JSON value ---- */

static int read_double(const struct epar_protocol *p, json_t *v, const char *jp, double *out, double lo,
                       int lo_incl)
{
    if (!json_is_number(v)) return perr(p, jp, "expected a number");
    double x = json_number_value(v);
    if (!isfinite(x)) return perr(p, jp, "expected a finite number");
    if (x < lo || (!lo_incl && x == lo)) {
        char w[96];
        snprintf(w, sizeof w, "expected a number %s %g, got %g", lo_incl ? ">=" : ">", lo, x);
        return perr(p, jp, w);
    }
    *out = x;
    return EPAR_OK;
}

static int read_integer(const struct epar_protocol *p, json_t *v, const char *jp, double lo, double hi, long *out)
{
    char w[160];
    if (!json_is_integer(v)) {   /* the value as written (2.5, "8", true), shortened */
        char *got = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        snprintf(w, sizeof w, "expected an integer in [%.0f, %.0f], got %.40s", lo, hi, got ? got : "?");
        free(got);
        return perr(p, jp, w);
    }
    json_int_t x = json_integer_value(v);
    if ((double)x < lo || (double)x > hi) {
        snprintf(w, sizeof w, "expected an integer in [%.0f, %.0f], got %lld", lo, hi, (long long)x);
        return perr(p, jp, w);
    }
    *out = (long)x;
    return EPAR_OK;
}

static int read_int(const struct epar_protocol *p, json_t *v, const char *jp, int *out, int lo, int hi)
{
    long x;
    int st = read_integer(p, v, jp, lo, hi, &x);
    if (!st) *out = (int)x;
    return st;
}

static int read_seeds(const struct epar_protocol *p, json_t *v, const char *jp, struct epar_params *prm)
{
    if (!json_is_array(v) || json_array_size(v) == 0) return perr(p, jp, "expected a non-empty array of seeds");
    if (json_array_size(v) > EPAR_MAX_SEEDS) return perr(p, jp, "too many seeds (at most 64)");
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        char ep[512];
        snprintf(ep, sizeof ep, "%s[%zu]", jp, i);
        if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) > 4294967295LL)
            return perr(p, ep, "expected an integer seed in [0, 4294967295]");
        prm->seeds[i] = (unsigned long)json_integer_value(e);
    }
    prm->n_seeds = (int)json_array_size(v);
    return EPAR_OK;
}

static int read_model_keys(const struct epar_protocol *p, json_t *obj, const char *jpath, struct epar_params *prm)
{
    char jp[512];
    json_t *v;
    int st;
#define JP(k) (snprintf(jp, sizeof jp, "%s.%s", jpath, k), jp)
    if ((v = json_object_get(obj, "alpha")) && (st = read_double(p, v, JP("alpha"), &prm->alpha, 0, 0))) return st;
    if ((v = json_object_get(obj, "beta")) && (st = read_double(p, v, JP("beta"), &prm->beta, 0, 1))) return st;
    if ((v = json_object_get(obj, "gamma")) && (st = read_double(p, v, JP("gamma"), &prm->gamma, 0, 1))) return st;
    if ((v = json_object_get(obj, "temperature")) &&
        (st = read_double(p, v, JP("temperature"), &prm->temperature, 0, 0)))
        return st;
    if ((v = json_object_get(obj, "form"))) {
        if (!json_is_string(v)) return perr(p, JP("form"), "expected \"basic\", \"enhanced\" or \"none\"");
        if (epar_posfx_form_parse(json_string_value(v), &prm->form))
            return perr(p, JP("form"), "expected \"basic\", \"enhanced\" or \"none\"");
    }
    if ((v = json_object_get(obj, "heads")) && (st = read_int(p, v, JP("heads"), &prm->heads, 1, 4096))) return st;
    if ((v = json_object_get(obj, "score_scale"))) {
        const char *s = json_is_string(v) ? json_string_value(v) : "";
        if (!strcmp(s, "hidden")) prm->score_scale_head = 0;
        else if (!strcmp(s, "head")) prm->score_scale_head = 1;
        else return perr(p, JP("score_scale"), "expected \"hidden\" or \"head\"");
    }
    if ((v = json_object_get(obj, "seeds")) && (st = read_seeds(p, v, JP("seeds"), prm))) return st;
#undef JP
    return EPAR_OK;
}

static void protocol_hash(json_t *root, char out[32])
{
    json_t *copy = json_copy(root); /* shallow: only the top-level "claims" key is removed */
    if (copy) { /* what judges runs, not what makes them */
        json_object_del(copy, "claims");
        json_object_del(copy, "audit");
        json_object_del(copy, "reference_defects");
    }
    char *text = copy ? json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    uint64_t h = 14695981039346656037ull; /* FNV-1a 64 */
    for (const unsigned char *c = (const unsigned char *)(text ? text : ""); *c; c++) {
        h ^= *c;
        h *= 1099511628211ull;
    }
    snprintf(out, 32, "fnv1a64:%016llx", (unsigned long long)h);
    free(text);
    json_decref(copy);
}

int epar_protocol_load(const char *path, struct epar_protocol *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->path, sizeof p->path, "%s", path);
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        epar_err_set(EPAR_EIO, "cannot read protocol '%s': is a folder", path);
        epar_err_hint("pass a protocol file with --protocol FILE");
        return EPAR_EIO;
    }
    json_error_t je;
    p->root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!p->root) {
        if (je.line < 1 || strstr(je.text, "unable to open")) {
            epar_err_set(EPAR_EIO, "cannot read protocol '%s': %s", path, je.text);
            epar_err_hint("pass an existing file with --protocol FILE");
            return EPAR_EIO;
        }
        epar_err_set(EPAR_EPROTOCOL, "malformed protocol '%s': %s at line %d column %d", path, je.text, je.line,
                     je.column);
        return EPAR_EPROTOCOL;
    }
    int st = EPAR_OK;
    if (!json_is_object(p->root)) { st = perr(p, "$", "expected a JSON object"); goto fail; }
    if ((st = check_keys(p, p->root, "$", top_keys, NULL))) goto fail;
    json_t *ver = json_object_get(p->root, "version");
    if (!ver) { st = perr(p, "$.version", "missing (expected 1)"); goto fail; }
    if (!json_is_integer(ver) || json_integer_value(ver) != EPAR_PROTOCOL_VERSION) {
        st = perr(p, "$.version", "unsupported version (this epar reads version 1)");
        epar_err_hint("convert the file to version 1 or use the paper_protocol.json shipped with epar");
        goto fail;
    }
    json_t *presets = json_object_get(p->root, "presets");
    if (!json_is_object(presets) || json_object_size(presets) == 0) {
        st = perr(p, "$.presets", "missing or not a non-empty object");
        goto fail;
    }
    const char *name;
    json_t *pv;
    json_object_foreach(presets, name, pv) {
        char jp[512];
        snprintf(jp, sizeof jp, "$.presets.%s", name);
        if (!json_is_object(pv)) { st = perr(p, jp, "expected an object"); goto fail; }
        if ((st = check_keys(p, pv, jp, preset_keys, NULL))) goto fail;
        struct epar_params tmp;
        memset(&tmp, 0, sizeof tmp);
        if ((st = read_model_keys(p, pv, jp, &tmp))) goto fail;
        json_t *hd = json_object_get(pv, "head_dim");
        int dummy;
        char hjp[540]; /* not strcat into jp: a long preset name fills jp (fuzzing regression) */
        snprintf(hjp, sizeof hjp, "%.500s.head_dim", jp);
        if (hd && (st = read_int(p, hd, hjp, &dummy, 1, 65536))) goto fail;
    }
    json_t *dp = json_object_get(p->root, "default_preset");
    if (!json_is_string(dp) || !json_object_get(presets, json_string_value(dp))) {
        st = perr(p, "$.default_preset", "missing or not the name of a preset");
        goto fail;
    }
    json_t *exps = json_object_get(p->root, "experiments");
    if (!json_is_object(exps)) { st = perr(p, "$.experiments", "missing or not an object"); goto fail; }
    json_object_foreach(exps, name, pv) {
        char jp[512];
        snprintf(jp, sizeof jp, "$.experiments.%s", name);
        if (!json_is_object(pv)) { st = perr(p, jp, "expected an object"); goto fail; }
    }
    json_t *seeds = json_object_get(p->root, "seeds");
    if (seeds) {
        struct epar_params tmp;
        if ((st = read_seeds(p, seeds, "$.seeds", &tmp))) goto fail;
    }
    json_t *claims = json_object_get(p->root, "claims");
    if (claims && !json_is_array(claims)) { st = perr(p, "$.claims", "expected an array"); goto fail; }
    protocol_hash(p->root, p->hash);
    return EPAR_OK;
fail:
    json_decref(p->root);
    p->root = NULL;
    return st;
}

void epar_protocol_free(struct epar_protocol *p)
{
    if (p->root) json_decref(p->root);
    p->root = NULL;
}

json_t *epar_protocol_section(const struct epar_protocol *p, const char *experiment)
{
    return json_object_get(json_object_get(p->root, "experiments"), experiment);
}

int epar_protocol_check_keys(const struct epar_protocol *p, const char *experiment, const char *const *allowed)
{
    json_t *s = epar_protocol_section(p, experiment);
    if (!s) return EPAR_OK;
    char jp[256];
    snprintf(jp, sizeof jp, "$.experiments.%s", experiment);
    return check_keys(p, s, jp, common_keys, allowed);
}

int epar_protocol_obj_check_keys(const struct epar_protocol *p, json_t *obj, const char *jpath,
                                 const char *const *allowed)
{
    if (!obj) return EPAR_OK;
    if (!json_is_object(obj)) return perr(p, jpath, "expected an object");
    return check_keys(p, obj, jpath, allowed, NULL);
}

void epar_protocol_key_list(json_t *obj, char *out, size_t n)
{
    const char *k;
    json_t *v;
    if (!n) return;
    out[0] = '\0';
    json_object_foreach(obj, k, v) {
        (void)v;
        size_t l = strlen(out);
        snprintf(out + l, n - l, "%s%s", l ? ", " : "", k);
    }
}

int epar_protocol_presets(const struct epar_protocol *p, const char **names, int max)
{
    int n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(p->root, "presets"), k, v) {
        (void)v;
        if (n < max) names[n] = k;
        n++;
    }
    return n;
}

int epar_protocol_params(const struct epar_protocol *p, const char *experiment, const char *preset,
                         struct epar_params *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->protocol_hash, sizeof out->protocol_hash, "%s", p->hash);
    /* built-in fallbacks: the reference code's values; the file normally sets all of them */
    out->form = EPAR_FORM_ENHANCED;
    out->alpha = 1.0; out->beta = 2.0; out->gamma = 1.5; out->temperature = 1.0;
    out->heads = 1; out->length = 64; out->hidden = 128; out->batch = 2; out->runs = 1;
    out->n_seeds = 1; out->seeds[0] = 42;
    int st;
    json_t *top_seeds = json_object_get(p->root, "seeds");
    if (top_seeds && (st = read_seeds(p, top_seeds, "$.seeds", out))) return st;

    char jp[256];
    snprintf(jp, sizeof jp, "$.experiments.%s", experiment);
    json_t *sec = epar_protocol_section(p, experiment);
    if (sec) {
        /* the sizes an experiment section may give (the preset's model keys come after) */
        static const struct epar_field size_rows[] = {
            {.key = "length", .type = EPAR_FIELD_INT, .offset = offsetof(struct epar_params, length), .lo = 1,
             .hi = 1 << 30},
            {.key = "hidden", .type = EPAR_FIELD_INT, .offset = offsetof(struct epar_params, hidden), .lo = 1,
             .hi = 1 << 20},
            {.key = "batch", .type = EPAR_FIELD_INT, .offset = offsetof(struct epar_params, batch), .lo = 1, .hi = 1 << 20},
            {.key = "runs", .type = EPAR_FIELD_INT, .offset = offsetof(struct epar_params, runs), .lo = 1, .hi = 1 << 24},
            {0}};
        struct {
            const char *preset;
        } in = {NULL};
        static const struct epar_field preset_rows[] = {{.key = "preset", .type = EPAR_FIELD_STRING, .offset = 0}, {0}};
        if ((st = epar_protocol_obj_fields(p, sec, jp, size_rows, out))) return st;
        if (!preset && (st = epar_protocol_obj_fields(p, sec, jp, preset_rows, &in))) return st;
        if (!preset) preset = in.preset;
    }
    if (!preset) preset = json_string_value(json_object_get(p->root, "default_preset"));
    json_t *presets = json_object_get(p->root, "presets");
    json_t *pv = json_object_get(presets, preset);
    if (!pv) {
        epar_err_set(EPAR_EINVAL, "unknown preset '%s'", preset);
        char list[512];
        epar_protocol_key_list(presets, list, sizeof list);
        const char *near = epar_protocol_nearest_key(presets, preset);
        if (near) epar_err_hint("did you mean '%s'? (presets in '%s': %s)", near, p->path, list);
        else epar_err_hint("presets in '%s': %s", p->path, list);
        return EPAR_EINVAL;
    }
    snprintf(out->preset, sizeof out->preset, "%s", preset);
    char pjp[256];
    snprintf(pjp, sizeof pjp, "$.presets.%s", preset);
    if ((st = read_model_keys(p, pv, pjp, out))) return st;
    json_t *hd = json_object_get(pv, "head_dim");
    if (hd) out->hidden = out->heads * (int)json_integer_value(hd);
    /* the section may pin model keys too (after the preset: it is the more specific) */
    if (sec && (st = read_model_keys(p, sec, jp, out))) return st;
    return EPAR_OK;
}

int epar_params_validate(const struct epar_params *prm)
{
    struct epar_posfx fx = {prm->form, prm->alpha, prm->beta, prm->gamma};
    int st = epar_posfx_validate(&fx);
    if (st) return st;
    if (!isfinite(prm->temperature) || prm->temperature <= 0 || !isfinite(1.0 / prm->temperature))
        return epar_err_set(EPAR_EINVAL, "temperature must be a finite number > 0 (with 1/T finite), got '%g'",
                            prm->temperature);
    if (prm->length < 1) return epar_err_set(EPAR_EINVAL, "length must be >= 1, got '%d'", prm->length);
    if (prm->hidden < 1) return epar_err_set(EPAR_EINVAL, "hidden must be >= 1, got '%d'", prm->hidden);
    if (prm->batch < 1) return epar_err_set(EPAR_EINVAL, "batch must be >= 1, got '%d'", prm->batch);
    if (prm->runs < 1) return epar_err_set(EPAR_EINVAL, "runs must be >= 1, got '%d'", prm->runs);
    if (prm->heads < 1) return epar_err_set(EPAR_EINVAL, "heads must be >= 1, got '%d'", prm->heads);
    if (prm->hidden % prm->heads) {
        epar_err_set(EPAR_EINVAL, "heads must divide hidden, got heads '%d' and hidden '%d'", prm->heads,
                     prm->hidden);
        epar_err_hint("choose --heads among the divisors of --hidden");
        return EPAR_EINVAL;
    }
    if (prm->n_seeds < 1) return epar_err_set(EPAR_EINVAL, "at least one seed is needed");
    return EPAR_OK;
}

json_t *epar_params_json(const struct epar_params *prm)
{
    json_t *seeds = json_array();
    for (int i = 0; i < prm->n_seeds; i++) json_array_append_new(seeds, json_integer((json_int_t)prm->seeds[i]));
    return json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:s, s:i, s:i, s:i, s:i, s:i, s:o}",
                     "preset", prm->preset, "form", epar_posfx_form_name(prm->form), "alpha", prm->alpha,
                     "beta", prm->beta, "gamma", prm->gamma, "temperature", prm->temperature,
                     "score_scale", prm->score_scale_head ? "head" : "hidden", "length", prm->length,
                     "hidden", prm->hidden, "heads", prm->heads, "batch", prm->batch, "runs", prm->runs,
                     "seeds", seeds);
}



static int clamp_int(double x) { return x < INT_MIN ? INT_MIN : x > INT_MAX ? INT_MAX : (int)x; }

/* an array of at most f->max elements (at least one unless EMPTY_OK) */
static int read_array(const struct epar_protocol *p, json_t *v, const char *jp, const struct epar_field *f)
{
    size_t n = json_array_size(v);
    if (json_is_array(v) && n <= (size_t)f->max && (n > 0 || (f->flags & EPAR_FIELD_EMPTY_OK))) return EPAR_OK;
    char w[96];
    snprintf(w, sizeof w, "expected a%s array of at most %d elements", f->flags & EPAR_FIELD_EMPTY_OK ? "n" : " non-empty",
             f->max);
    return perr(p, jp, w);
}


static int read_fields(const struct epar_protocol *p, json_t *obj, const char *jpath, const struct epar_field *f,
                       void *base);

/* the integer range of row f: its [lo, hi], or [tmin, tmax] (its C type's) when it gives none or the reader reads a
 * saved record */
static void int_range(const struct epar_protocol *p, const struct epar_field *f, double tmin, double tmax, double *lo,
                      double *hi)
{
    int any = p->saved || (f->lo == 0 && f->hi == 0);
    *lo = any ? tmin : f->lo;
    *hi = any ? tmax : f->hi;
}

/* a DOUBLE row's value (a DLIST's element) by its POSITIVE or NONNEG flag (none, or a saved record: any finite) */
static int read_real(const struct epar_protocol *p, json_t *v, const char *jp, const struct epar_field *f, double *out)
{
    unsigned sign = p->saved ? 0 : f->flags & (EPAR_FIELD_POSITIVE | EPAR_FIELD_NONNEG);
    return read_double(p, v, jp, out, sign ? 0 : -HUGE_VAL, sign != EPAR_FIELD_POSITIVE);
}

/* a nested object by the row's sub rows (STRICT: no other keys) */
static int read_object(const struct epar_protocol *p, json_t *v, const char *jp, const struct epar_field *f, void *at)
{
    if (!json_is_object(v)) return perr(p, jp, "expected an object");
    if (f->flags & EPAR_FIELD_STRICT) {
        const char *keys[128];
        if (epar_fields_keys(f->sub, NULL, keys, 128) >= 127) return perr(p, jp, "too many rows");
        int st = check_keys(p, v, jp, keys, NULL);
        if (st) return st;
    }
    return read_fields(p, v, jp, f->sub, at);
}

/* one element of a list row into at */
static int read_element(const struct epar_protocol *p, json_t *e, const char *ep, const struct epar_field *f, void *at)
{
    long x;
    double lo, hi;
    int st;
    switch (f->type) {
    case EPAR_FIELD_DLIST:
        if (!json_is_number(e) || !isfinite(json_number_value(e))) return perr(p, ep, "expected a finite number");
        return read_real(p, e, ep, f, at);
    case EPAR_FIELD_ILIST:
    case EPAR_FIELD_LLIST:
        int_range(p, f, f->type == EPAR_FIELD_ILIST ? INT_MIN : (double)LONG_MIN,
                  f->type == EPAR_FIELD_ILIST ? INT_MAX : (double)LONG_MAX, &lo, &hi);
        if ((st = read_integer(p, e, ep, lo, hi, &x))) return st;
        if (f->type == EPAR_FIELD_ILIST) *(int *)at = (int)x;
        else *(long *)at = x;
        return EPAR_OK;
    case EPAR_FIELD_SLIST:
        if (!json_is_string(e)) return perr(p, ep, "expected a string");
        *(const char **)at = json_string_value(e);
        return EPAR_OK;
    default: return read_object(p, e, ep, f, at);
    }
}

static size_t element_size(const struct epar_field *f)
{
    switch (f->type) {
    case EPAR_FIELD_DLIST: return sizeof(double);
    case EPAR_FIELD_ILIST: return sizeof(int);
    case EPAR_FIELD_LLIST: return sizeof(long);
    case EPAR_FIELD_SLIST: return sizeof(const char *);
    default: return f->stride;
    }
}

/* where a list row's elements are: the array member, or (ALLOC) the array its pointer member points to */
static char *list_at(const struct epar_field *f, const void *base)
{
    char *at = (char *)base + f->offset;
    return f->flags & EPAR_FIELD_ALLOC ? *(char **)at : at;
}

static int read_list(const struct epar_protocol *p, json_t *v, const char *jp, const struct epar_field *f, void *base)
{
    int st = read_array(p, v, jp, f);
    if (st) return st;
    if (f->flags & EPAR_FIELD_ALLOC) {
        char **at = (char **)((char *)base + f->offset);
        free(*at);
        *(int *)((char *)base + f->count_offset) = 0;
        if (!(*at = calloc(json_array_size(v) + 1, element_size(f))))
            return epar_err_set(EPAR_ENOMEM, "out of memory reading '%s' (%zu elements)", jp, json_array_size(v));
    }
    char *to = list_at(f, base);
    int *count = (int *)((char *)base + f->count_offset);
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        char ep[700];
        snprintf(ep, sizeof ep, "%.600s[%zu]", jp, i);
        *count = (int)i + 1;   /* counted before it is read: epar_fields_free reaches what a failed one allocated */
        /* a freshly allocated record starts from its rows' defaults (an OPTIONAL double left out: its def, e.g. NaN) */
        if (f->type == EPAR_FIELD_OLIST && (f->flags & EPAR_FIELD_ALLOC)) epar_fields_defaults(f->sub, to + i * element_size(f));
        if ((st = read_element(p, e, ep, f, to + i * element_size(f)))) return st;
    }
    *count = (int)json_array_size(v);
    return EPAR_OK;
}

/* one row's value v (present) at jp */
static int read_field(const struct epar_protocol *p, json_t *v, const char *jp, const struct epar_field *f, void *base)
{
    void *at = (char *)base + f->offset;
    long x;
    double lo, hi;
    int st;
    if (json_is_null(v) && (((f->flags & EPAR_FIELD_NULLNEG) &&
                             (f->type == EPAR_FIELD_INT || f->type == EPAR_FIELD_LONG)) ||
                            (f->type == EPAR_FIELD_STRING && (f->flags & EPAR_FIELD_NULLNEG || p->saved)))) {
        if (f->type == EPAR_FIELD_INT) *(int *)at = -1;
        else if (f->type == EPAR_FIELD_LONG) *(long *)at = -1;
        else *(const char **)at = NULL;
        return EPAR_OK;
    }
    switch (f->type) {
    case EPAR_FIELD_INT:
        int_range(p, f, INT_MIN, INT_MAX, &lo, &hi);
        return read_int(p, v, jp, at, clamp_int(lo), clamp_int(hi));
    case EPAR_FIELD_DOUBLE: return read_real(p, v, jp, f, at);
    case EPAR_FIELD_BOOL:
        if (!json_is_boolean(v)) return perr(p, jp, "expected true or false");
        *(int *)at = json_is_true(v);
        return EPAR_OK;
    case EPAR_FIELD_STRING:
        if (!json_is_string(v)) return perr(p, jp, "expected a string");
        *(const char **)at = json_string_value(v);
        return EPAR_OK;
    case EPAR_FIELD_LONG:
        int_range(p, f, (double)LONG_MIN, (double)LONG_MAX, &lo, &hi);
        if ((st = read_integer(p, v, jp, lo, hi, &x))) return st;
        *(long *)at = x;
        return EPAR_OK;
    case EPAR_FIELD_JSON: *(json_t **)at = v; return EPAR_OK;
    case EPAR_FIELD_OBJ: return read_object(p, v, jp, f, at);
    default: return read_list(p, v, jp, f, base);
    }
}

static int read_fields(const struct epar_protocol *p, json_t *obj, const char *jpath, const struct epar_field *f,
                       void *base)
{
    for (; f->key; f++) {
        if (f->write_only && !p->saved) continue;
        json_t *v = obj ? json_object_get(obj, f->key) : NULL;
        char jp[640];
        snprintf(jp, sizeof jp, "%.500s.%.100s", jpath, f->key);
        if (!v && p->saved && (f->flags & EPAR_FIELD_ZERO_OMIT)) {   /* a record omits it when 0 */
            if (f->type == EPAR_FIELD_LONG) *(long *)((char *)base + f->offset) = 0;
            else *(int *)((char *)base + f->offset) = 0;
            continue;
        }
        if (!v && ((f->flags & EPAR_FIELD_REQUIRED) || p->saved)) {
            char w[160];
            snprintf(w, sizeof w, "missing key '%.100s'", f->key);
            return perr(p, jpath, w);
        }
        int st = v ? read_field(p, v, jp, f, base) : EPAR_OK;
        if (st) return st;
    }
    return EPAR_OK;
}

int epar_protocol_obj_fields(const struct epar_protocol *p, json_t *obj, const char *jpath, const struct epar_field *f,
                             void *base)
{
    return read_fields(p, obj, jpath, f, base);
}

int epar_protocol_obj_map(const struct epar_protocol *p, json_t *obj, const char *jpath, const struct epar_field *list,
                          void *base, const char **names)
{
    int *count = (int *)((char *)base + list->count_offset);
    *count = 0;
    if (!obj) return EPAR_OK;
    if (!json_is_object(obj)) return perr(p, jpath, "expected an object");
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        if (ignorable_key(k)) continue;
        char jp[640];
        snprintf(jp, sizeof jp, "%.500s.%.100s", jpath, k);
        if (*count >= list->max) {
            char w[96];
            snprintf(w, sizeof w, "expected an object of at most %d members", list->max);
            return perr(p, jpath, w);
        }
        int st = read_element(p, v, jp, list, (char *)base + list->offset + (size_t)*count * list->stride);
        if (st) return st;
        names[(*count)++] = k;
    }
    return EPAR_OK;
}

void epar_fields_reader(struct epar_protocol *rd, const char *path, const char *kind, int saved)
{
    memset(rd, 0, sizeof *rd);
    snprintf(rd->path, sizeof rd->path, "%s", path);
    rd->kind = kind;
    rd->status = EPAR_EIO;
    rd->saved = saved;
}

/* the rows of f from the parsed document root (NULL: json_error je says why); the document kept in *doc or freed */
static int load_root(json_t *root, const json_error_t *je, const char *kind, const char *path,
                     const struct epar_field *f, void *base, json_t **doc)
{
    if (doc) *doc = NULL;
    if (!root) return epar_err_set(EPAR_EIO, "cannot read %s '%s': %s (line %d)", kind, path, je->text, je->line);
    struct epar_protocol *p = malloc(sizeof *p);
    if (!p) {
        json_decref(root);
        return epar_err_set(EPAR_ENOMEM, "out of memory reading '%s'", path);
    }
    epar_fields_reader(p, path, kind, 0);
    int st = json_is_object(root) ? read_fields(p, root, "$", f, base) : perr(p, "$", "expected an object");
    free(p);
    if (st || !doc) json_decref(root);
    else *doc = root;
    return st;
}

int epar_fields_load(const char *path, const char *kind, const struct epar_field *f, void *base, json_t **doc)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    return load_root(root, &je, kind, path, f, base, doc);
}

void epar_fields_free(const struct epar_field *f, void *base)
{
    for (; f->key; f++) {
        char *at = (char *)base + f->offset;
        if (f->flags & EPAR_FIELD_ALLOC) {
            free(*(char **)at);
            *(char **)at = NULL;
            *(int *)((char *)base + f->count_offset) = 0;
        } else if (f->type == EPAR_FIELD_OBJ) epar_fields_free(f->sub, at);
        else if (f->type == EPAR_FIELD_OLIST)
            for (int k = 0; k < *(int *)((char *)base + f->count_offset); k++) epar_fields_free(f->sub, at + k * f->stride);
    }
}

void epar_fields_defaults(const struct epar_field *f, void *base)
{
    for (; f->key; f++) {
        void *at = (char *)base + f->offset;
        if (f->type == EPAR_FIELD_DOUBLE) *(double *)at = f->def;
        else if (f->type == EPAR_FIELD_INT || f->type == EPAR_FIELD_BOOL) *(int *)at = (int)f->def;
    }
}

/* one element of a list; NULL for a double that is not finite (jansson has no NaN: the element is left out) */
static json_t *element_json(enum epar_field_type t, const void *at)
{
    switch (t) {
    case EPAR_FIELD_ILIST: return json_integer(*(const int *)at);
    case EPAR_FIELD_LLIST: return json_integer(*(const long *)at);
    case EPAR_FIELD_DLIST: return json_real(*(const double *)at);
    case EPAR_FIELD_SLIST: return json_string(*(const char *const *)at);
    default: return NULL;
    }
}

json_t *epar_fields_array(enum epar_field_type t, const void *v, int n)
{
    struct epar_field f = {.type = t};
    json_t *a = json_array();
    for (int k = 0; a && k < n; k++) {
        json_t *e = element_json(t, (const char *)v + (size_t)k * element_size(&f));
        if (e) json_array_append_new(a, e);
        else if (t != EPAR_FIELD_DLIST) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *list_json(const struct epar_field *f, const void *base)
{
    const char *at = list_at(f, base);
    int n = *(const int *)((const char *)base + f->count_offset);
    if (f->type != EPAR_FIELD_OLIST) return epar_fields_array(f->type, at, n);
    json_t *a = json_array();
    for (int k = 0; a && k < n; k++)
        if (json_array_append_new(a, epar_fields_json(f->sub, at + (size_t)k * f->stride, NULL))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* row f's value of base: NULL when left out (OPTIONAL), *fail when out of memory */
static json_t *field_json(const struct epar_field *f, const void *base, int *fail)
{
    const void *at = (const char *)base + f->offset;
    int opt = f->flags & EPAR_FIELD_OPTIONAL;
    json_t *v = NULL;
    long x;
    switch (f->type) {
    case EPAR_FIELD_INT:
    case EPAR_FIELD_LONG:
        x = f->type == EPAR_FIELD_INT ? *(const int *)at : *(const long *)at;
        if ((x < 0 && opt) || (x == 0 && (f->flags & EPAR_FIELD_ZERO_OMIT))) return NULL;
        v = x < 0 && (f->flags & EPAR_FIELD_NULLNEG) ? json_null() : json_integer(x);
        break;
    case EPAR_FIELD_DOUBLE:
        if (opt && !isfinite(*(const double *)at)) return NULL;
        v = json_real(*(const double *)at);
        break;
    case EPAR_FIELD_BOOL: v = json_boolean(*(const int *)at); break;
    case EPAR_FIELD_STRING:
        if (opt && !*(const char *const *)at) return NULL;
        v = *(const char *const *)at ? json_string(*(const char *const *)at) : json_null();
        break;
    case EPAR_FIELD_JSON:
        if (!*(json_t *const *)at) return opt ? NULL : json_null();
        v = json_incref(*(json_t *const *)at);
        break;
    case EPAR_FIELD_OBJ: v = epar_fields_json(f->sub, at, NULL); break;
    default:
        if (opt && *(const int *)((const char *)base + f->count_offset) <= 0) return NULL;
        v = list_json(f, base);
        break;
    }
    if (!v) *fail = 1;
    return v;
}

json_t *epar_fields_json(const struct epar_field *f, const void *base, json_t *into)
{
    json_t *j = into ? into : json_object();
    for (; j && f->key; f++) {
        int fail = 0;
        json_t *v = field_json(f, base, &fail);
        if (fail || (v && json_object_set_new(j, f->key, v))) {
            if (!into) json_decref(j);
            return NULL;
        }
    }
    return j;
}

int epar_fields_keys(const struct epar_field *f, const char *const *extra, const char **keys, int max)
{
    int n = 0;
    for (; f->key && n < max - 1; f++)
        if (!f->write_only) keys[n++] = f->key;
    for (; extra && *extra && n < max - 1; extra++) keys[n++] = *extra;
    keys[n] = NULL;
    return n;
}

int epar_fields_loadb(const void *text, size_t len, const char *kind, const char *path, const struct epar_field *f,
                      void *base, json_t **doc)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    return load_root(root, &je, kind, path, f, base, doc);
}

/* j as the file path (lib/outdir's checked writer) */
static int dump_file(const char *path, const json_t *j, size_t json_flags)
{
    struct epar_out_file w;
    FILE *f = epar_out_fopen(&w, path);
    if (!f) return EPAR_EIO;
    if (json_dumpf(j, f, json_flags) != 0 && !ferror(f)) { /* not a write error: a value jansson cannot encode */
        epar_out_fdiscard(&w);
        return epar_err_set(EPAR_EIO, "cannot write '%s': the JSON could not be encoded", path);
    }
    return epar_out_fclose(&w);
}

int epar_fields_save(const char *path, const struct epar_field *f, const void *base, json_t *extra, size_t json_flags)
{
    json_t *j = f ? epar_fields_json(f, base, NULL) : json_object();
    int bad = !j || (extra && json_object_update(j, extra));
    json_decref(extra);
    if (bad) {
        json_decref(j);
        return epar_err_set(EPAR_ENOMEM, "out of memory building '%s'", path);
    }
    int st = dump_file(path, j, json_flags);
    json_decref(j);
    return st;
}


/* compact sorted JSON of v (any value) into out, truncated */
static void dump_into(const json_t *v, char *out, size_t n)
{
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
    snprintf(out, n, "%s", s ? s : "?");
    free(s);
}

int epar_fields_differ(const void *saved, size_t len, json_t *now, const char **key, char *was, size_t nwas, char *is,
                       size_t nis)
{
    *key = NULL;
    json_t *old = json_loadb(saved, len, 0, NULL);
    if (!old) return -1;
    const char *k;
    json_t *v;
    json_object_foreach(now, k, v) {
        json_t *o = json_object_get(old, k);
        if (o && json_equal(o, v)) continue;
        *key = k;
        if (o) dump_into(o, was, nwas);
        else snprintf(was, nwas, "absent");
        dump_into(v, is, nis);
        break;
    }
    json_decref(old);
    return *key != NULL;
}

int epar_protocol_blame(const struct epar_protocol *p, const char *jpath)
{
    char msg[512], hint[512], head[80];
    snprintf(msg, sizeof msg, "%s", epar_err_message());
    snprintf(hint, sizeof hint, "%s", epar_err_hint_text());
    snprintf(head, sizeof head, "invalid %s '", p->kind ? p->kind : "protocol");
    if (!strncmp(msg, head, strlen(head)) || !strncmp(msg, "malformed ", 10)) {
        epar_err_set(EPAR_EPROTOCOL, "%s", msg);
    } else {
        epar_err_set(EPAR_EPROTOCOL, "invalid %s '%s': %s: %s", p->kind ? p->kind : "protocol", p->path, jpath, msg);
    }
    if (hint[0]) epar_err_hint("%s", hint);
    return EPAR_EPROTOCOL;
}

const char *epar_protocol_nearest_key(json_t *obj, const char *name)
{
    struct epar_nearest near;
    epar_nearest_init(&near, name);
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        (void)v;
        if (k[0] != '_') epar_nearest_add(&near, k);
    }
    return near.best;
}
