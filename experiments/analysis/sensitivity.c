/* Appendix: parameter sensitivity. One job per (point, seed, run): a draw of weights and data measured
 * with the forms none, basic and enhanced at the point's alpha, beta, gamma. Per-seed values are the
 * mean over runs; tables report the mean over seeds and the sample sd across seeds. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "lib/audit.h"
#include "lib/err.h"
#include "lib/metrics.h"
#include "lib/stats.h"
#include "experiments/common.h"
#include "experiments/analysis/sensitivity.h"
#include "experiments/analysis/experiment.h"


/* ---- points, blocks, metrics ---- */

const char *const epar_sens_block_name[EPAR_SENS_NBLK] = {"defaults", "paper", "alpha", "beta", "gamma", "alpha_beta",
                                                          "beta_gamma"};
const char *const epar_sens_metric_name[EPAR_SENS_NMETRIC] = {
    "attention_concentration", "attention_locality", "position_correlation_mean", "position_correlation_std",
    "position_correlation_offdiag_mean"};

static double *seed_means(const struct epar_sensitivity_result *c, int p, int s, int f)
{
    return c->sm + (((size_t)p * c->S + s) * EPAR_SENS_NF + f) * EPAR_SENS_NMETRIC;
}
static double *seed_profile(const struct epar_sensitivity_result *c, int p, int s, int f)
{
    return c->sp + (((size_t)p * c->S + s) * EPAR_SENS_NF + f) * (size_t)c->L;
}

static struct epar_posfx fx_of(const struct epar_sens_point *pt, int f)
{
    return (struct epar_posfx){(enum epar_form)f, pt->alpha, pt->beta, pt->gamma};
}

/* ---- configuration ---- */

const char *epar_exp_sensitivity_range(enum epar_sens_param which, double v)
{
    if (which == EPAR_SENS_P_ALPHA) return v > 0 ? NULL : "alpha must be > 0";
    if (v >= 0) return NULL;
    return which == EPAR_SENS_P_BETA ? "beta must be >= 0" : "gamma must be >= 0";
}

/* the sweeps (each value in the range of its parameter: epar_exp_sensitivity_range), the locality window and the
 * draws */
#define SC struct epar_sensitivity_cfg
static const struct epar_field sweep_rows[] = {
    {.key = "alpha_values", .type = EPAR_FIELD_DLIST, .offset = offsetof(SC, alpha_values),
     .count_offset = offsetof(SC, n_alpha), .max = EPAR_MAX_LIST, .flags = EPAR_FIELD_POSITIVE},
    {.key = "beta_values", .type = EPAR_FIELD_DLIST, .offset = offsetof(SC, beta_values),
     .count_offset = offsetof(SC, n_beta), .max = EPAR_MAX_LIST, .flags = EPAR_FIELD_NONNEG},
    {.key = "gamma_values", .type = EPAR_FIELD_DLIST, .offset = offsetof(SC, gamma_values),
     .count_offset = offsetof(SC, n_gamma), .max = EPAR_MAX_LIST, .flags = EPAR_FIELD_NONNEG},
    {.key = "locality_window", .type = EPAR_FIELD_INT, .offset = offsetof(SC, locality_window), .lo = 0, .hi = 1 << 20},
    {0}};
#undef SC
struct draws_in {
    const char *draws;
};
static const struct epar_field draws_rows[] = {
    {.key = "draws", .type = EPAR_FIELD_STRING, .offset = offsetof(struct draws_in, draws)},
    {0}};

static const char *const claim_ids[] = {"mid_range_gain", "max_distance_gain", "enhanced_max_retention",
                                        "basic_max_retention", NULL};

/* retention_claims, one row per key of a claim; the strings are borrowed from the protocol, then copied into cfg */
struct claim_in {
    const char *id, *text;
    double value, unit;
};
struct claims_in {
    int n;
    struct claim_in c[EPAR_SENS_MAX_CLAIMS];
};
#define CI struct claim_in
static const struct epar_field claim_rows[] = {
    {.key = "id", .type = EPAR_FIELD_STRING, .offset = offsetof(CI, id), .flags = EPAR_FIELD_REQUIRED},
    {.key = "text", .type = EPAR_FIELD_STRING, .offset = offsetof(CI, text), .flags = EPAR_FIELD_REQUIRED},
    {.key = "value", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(CI, value),
     .flags = EPAR_FIELD_REQUIRED | EPAR_FIELD_POSITIVE},  /* finite, > 0 */
    {.key = "unit", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(CI, unit),
     .flags = EPAR_FIELD_REQUIRED | EPAR_FIELD_POSITIVE},
    {0}};
#undef CI
static const struct epar_field claims_rows[] = {
    {.key = "retention_claims", .type = EPAR_FIELD_OLIST, .offset = offsetof(struct claims_in, c),
     .count_offset = offsetof(struct claims_in, n), .max = EPAR_SENS_MAX_CLAIMS, .stride = sizeof(struct claim_in),
     .sub = claim_rows, .flags = EPAR_FIELD_EMPTY_OK | EPAR_FIELD_STRICT},
    {0}};

static int read_claims(const struct epar_protocol *p, struct epar_sensitivity_cfg *cfg)
{
    struct claims_in in = {.n = -1};
    int st = epar_protocol_obj_fields(p, epar_protocol_section(p, "sensitivity"), "$.experiments.sensitivity",
                                      claims_rows, &in);
    if (st || in.n < 0) return st; /* absent: the defaults stay */
    for (int i = 0; i < in.n; i++) {
        int known = 0;
        for (const char *const *k = claim_ids; *k; k++) known |= !strcmp(*k, in.c[i].id);
        if (!known) {
            char jp[160];
            snprintf(jp, sizeof jp, "$.experiments.sensitivity.retention_claims[%d]", i);
            epar_protocol_error(p, jp, "unknown claim id");
            epar_err_hint("ids: mid_range_gain, max_distance_gain, enhanced_max_retention, basic_max_retention");
            return EPAR_EPROTOCOL;
        }
        struct epar_sens_claim *cl = &cfg->claims[i];
        snprintf(cl->id, sizeof cl->id, "%s", in.c[i].id);
        snprintf(cl->text, sizeof cl->text, "%s", in.c[i].text);
        cl->value = in.c[i].value;
        cl->unit = in.c[i].unit;
    }
    cfg->n_claims = in.n;
    return EPAR_OK;
}

int epar_exp_sensitivity_config(const struct epar_protocol *p, struct epar_sensitivity_cfg *cfg)
{
    /* the section's keys: the sweep rows', then draws (draws_rows) and retention_claims (read_claims) */
    static const char *const more[] = {"draws", "retention_claims", NULL};
    const char *keys[16];
    epar_fields_keys(sweep_rows, more, keys, 16);
    int st = epar_protocol_check_keys(p, "sensitivity", keys);
    if (st) return st;
    json_t *sec = epar_protocol_section(p, "sensitivity");
    const char *jp = "$.experiments.sensitivity";
    cfg->locality_window = 1;
    struct draws_in in = {"fresh"};
    if ((st = epar_protocol_obj_fields(p, sec, jp, sweep_rows, cfg))) return st;
    if ((st = epar_protocol_obj_fields(p, sec, jp, draws_rows, &in))) return st;
    const char *draws = in.draws;
    if (strcmp(draws, "fresh") && strcmp(draws, "common"))
        return epar_protocol_error(p, "$.experiments.sensitivity.draws", "expected \"fresh\" or \"common\"");
    cfg->common_draws = !strcmp(draws, "common");
    if ((st = read_claims(p, cfg))) return st;
    /* the paper's text parameters, for the retention claims (another preset: its alpha, beta, gamma only) */
    cfg->has_paper = 0;
    const char *names[64];
    int np = epar_protocol_presets(p, names, 64), paper = 0;
    for (int i = 0; i < np && i < 64; i++) paper |= !strcmp(names[i], "paper");
    if (paper) {
        struct epar_params pp;
        if ((st = epar_protocol_params(p, "sensitivity", "paper", &pp))) return st;
        cfg->has_paper = 1;
        cfg->paper_alpha = pp.alpha;
        cfg->paper_beta = pp.beta;
        cfg->paper_gamma = pp.gamma;
    }
    return EPAR_OK;
}

int epar_exp_sensitivity_check(const struct epar_sensitivity_cfg *cfg)
{
    if (cfg->prm.batch < 2) {
        epar_err_set(EPAR_EINVAL, "batch must be >= 2 for sensitivity, got '%d'", cfg->prm.batch);
        epar_err_hint("attention_concentration is a variance across the batch items");
        return EPAR_EINVAL;
    }
    if (cfg->prm.length < 4) {
        epar_err_set(EPAR_EINVAL, "length must be >= 4 for sensitivity, got '%d'", cfg->prm.length);
        epar_err_hint("decay_speed averages P[c, c+k] for k = 1 .. L/2-1");
        return EPAR_EINVAL;
    }
    if (cfg->n_alpha < 1 || cfg->n_beta < 1 || cfg->n_gamma < 1)
        return epar_err_set(EPAR_EINVAL, "the alpha, beta and gamma sweeps need at least one value each");
    const double *lists[3] = {cfg->alpha_values, cfg->beta_values, cfg->gamma_values};
    const int ns[3] = {cfg->n_alpha, cfg->n_beta, cfg->n_gamma};
    for (int q = 0; q < 3; q++)
        for (int i = 0; i < ns[q]; i++) {
            const char *bad = epar_exp_sensitivity_range((enum epar_sens_param)q, lists[q][i]);
            if (bad) return epar_err_set(EPAR_EINVAL, "%s, got '%g'", bad, lists[q][i]);
        }
    if (cfg->locality_window < 0)
        return epar_err_set(EPAR_EINVAL, "locality window must be >= 0, got '%d'", cfg->locality_window);
    return EPAR_OK;
}

/* ---- statistics across seeds ---- */

static void seed_stats(const struct epar_sensitivity_result *c, int p, int f, int m, double *mean, double *sd)
{
    double v[EPAR_MAX_SEEDS];
    for (int s = 0; s < c->S; s++) v[s] = seed_means(c, p, s, f)[m];
    epar_stats_mean_sd(v, (size_t)c->S, mean, sd);
}

/* paired difference form f - form none on the same draws */
static void delta_stats(const struct epar_sensitivity_result *c, int p, int f, int m, double *mean, double *sd)
{
    double v[EPAR_MAX_SEEDS];
    for (int s = 0; s < c->S; s++) v[s] = seed_means(c, p, s, f)[m] - seed_means(c, p, s, EPAR_FORM_NONE)[m];
    epar_stats_mean_sd(v, (size_t)c->S, mean, sd);
}

/* per-seed ratio of profile values: A_fn(dn) / A_fd(dd) */
void epar_sens_ratio_stats(const struct epar_sensitivity_result *c, int p, int fn, int dn, int fd, int dd, double *mean, double *sd)
{
    double v[EPAR_MAX_SEEDS];
    for (int s = 0; s < c->S; s++) v[s] = seed_profile(c, p, s, fn)[dn] / seed_profile(c, p, s, fd)[dd];
    epar_stats_mean_sd(v, (size_t)c->S, mean, sd);
}

void epar_sens_prof_stats(const struct epar_sensitivity_result *c, int p, int f, int d, double *mean, double *sd)
{
    double v[EPAR_MAX_SEEDS];
    for (int s = 0; s < c->S; s++) v[s] = seed_profile(c, p, s, f)[d];
    epar_stats_mean_sd(v, (size_t)c->S, mean, sd);
}

/* pooled baseline of a block: per seed, the mean over its points of form none; then across seeds */
void epar_sens_block_baseline(const struct epar_sensitivity_result *c, int b, int m, double *mean, double *sd)
{
    double v[EPAR_MAX_SEEDS];
    for (int s = 0; s < c->S; s++) {
        double acc = 0.0;
        for (int k = 0; k < c->count[b]; k++) acc += seed_means(c, c->first[b] + k, s, EPAR_FORM_NONE)[m];
        v[s] = acc / c->count[b];
    }
    epar_stats_mean_sd(v, (size_t)c->S, mean, sd);
}

/* The value of column `name` for point p measured with form f. */
double epar_sens_value(const struct epar_sensitivity_result *c, int p, int f, const char *name)
{
    const struct epar_sens_point *pt = &c->pts[p];
    struct epar_posfx fx = fx_of(pt, f);
    double m, sd;
    if (!strcmp(name, "alpha")) return pt->alpha;
    if (!strcmp(name, "beta")) return pt->beta;
    if (!strcmp(name, "gamma")) return pt->gamma;
    if (!strcmp(name, "alpha_index")) return pt->ia;
    if (!strcmp(name, "beta_index")) return pt->ib;
    if (!strcmp(name, "gamma_index")) return pt->ig;
    if (!strcmp(name, "seeds")) return c->S;
    if (!strcmp(name, "runs")) return c->R;
    if (!strcmp(name, "position_strength")) return epar_posfx_strength(&fx, c->L);
    if (!strcmp(name, "decay_speed")) return epar_posfx_decay_speed(&fx, c->L);
    if (!strncmp(name, "correlation_improvement_pct", 27)) {
        double b, bsd;
        seed_stats(c, p, EPAR_FORM_NONE, EPAR_SENS_CMEAN, &b, &bsd);
        delta_stats(c, p, f, EPAR_SENS_CMEAN, &m, &sd);
        return 100.0 * (name[27] ? sd : m) / b;
    }
    for (int k = 0; k < EPAR_SENS_NMETRIC; k++) {
        size_t n = strlen(epar_sens_metric_name[k]);
        if (strncmp(name, epar_sens_metric_name[k], n)) continue;
        const char *suf = name + n;
        if (!*suf || !strcmp(suf, "_sd")) {
            seed_stats(c, p, f, k, &m, &sd);
            return *suf ? sd : m;
        }
        if (!strcmp(suf, "_baseline")) {
            seed_stats(c, p, EPAR_FORM_NONE, k, &m, &sd);
            return m;
        }
        if (!strcmp(suf, "_delta") || !strcmp(suf, "_delta_sd")) {
            delta_stats(c, p, f, k, &m, &sd);
            return strcmp(suf, "_delta") ? sd : m;
        }
    }
    return NAN;
}

/* ---- retention ---- */

double epar_sens_retention_pre(int f, const struct epar_sens_point *pt, double d, int L)
{
    struct epar_posfx fx = fx_of(pt, f);
    return epar_posfx_value(&fx, d, L) / epar_posfx_value(&fx, 0.0, L);
}


int epar_sens_claim_definitions(const char *id, struct epar_sens_definition *out)
{
    int n = 0;
    if (!strcmp(id, "mid_range_gain")) {
        out[n++] = (struct epar_sens_definition){EPAR_SENS_PRE_RATIO, EPAR_SENS_D_MID, 0};
        out[n++] = (struct epar_sens_definition){EPAR_SENS_POST_RATIO_BASIC, EPAR_SENS_D_MID, 0};
        out[n++] = (struct epar_sens_definition){EPAR_SENS_POST_RATIO_NONE, EPAR_SENS_D_MID, 0};
    } else if (!strcmp(id, "max_distance_gain")) {
        out[n++] = (struct epar_sens_definition){EPAR_SENS_PRE_RATIO, EPAR_SENS_D_MAX, 0};
        out[n++] = (struct epar_sens_definition){EPAR_SENS_PRE_RATIO, EPAR_SENS_D_AT_L, 0};
        out[n++] = (struct epar_sens_definition){EPAR_SENS_POST_RATIO_BASIC, EPAR_SENS_D_MAX, 0};
        out[n++] = (struct epar_sens_definition){EPAR_SENS_POST_RATIO_NONE, EPAR_SENS_D_MAX, 0};
    } else {
        int f = !strcmp(id, "basic_max_retention") ? EPAR_FORM_BASIC : EPAR_FORM_ENHANCED;
        out[n++] = (struct epar_sens_definition){EPAR_SENS_PRE_RET, EPAR_SENS_D_MAX, f};
        out[n++] = (struct epar_sens_definition){EPAR_SENS_PRE_RET, EPAR_SENS_D_AT_L, f};
        out[n++] = (struct epar_sens_definition){EPAR_SENS_POST_RET, EPAR_SENS_D_MAX, f};
    }
    return n;
}

void epar_sens_definition_name(const struct epar_sens_definition *df, int L, char *buf, size_t n)
{
    char d[64];
    if (df->d == EPAR_SENS_D_MID) snprintf(d, sizeof d, "d=L/2=%d", L / 2);
    else if (df->d == EPAR_SENS_D_MAX) snprintf(d, sizeof d, "d=L-1=%d", L - 1);
    else snprintf(d, sizeof d, "d=L=%d (|i-j|/L=1; outside the sequence)", L);
    const char *fn = epar_posfx_form_name((enum epar_form)df->form);
    switch (df->kind) {
    case EPAR_SENS_PRE_RATIO: snprintf(buf, n, "pre-softmax P_enhanced(d)/P_basic(d) at %s", d); break;
    case EPAR_SENS_POST_RATIO_BASIC: snprintf(buf, n, "post-softmax mean weight A_enhanced(d)/A_basic(d) at %s", d); break;
    case EPAR_SENS_POST_RATIO_NONE: snprintf(buf, n, "post-softmax mean weight A_enhanced(d)/A_none(d) at %s", d); break;
    case EPAR_SENS_PRE_RET: snprintf(buf, n, "pre-softmax retention P_%s(d)/P_%s(0) at %s", fn, fn, d); break;
    default: snprintf(buf, n, "post-softmax retention A_%s(d)/A_%s(0) at %s", fn, fn, d); break;
    }
}

/* measured value (+ sd across seeds for post-softmax) and the beta a pre-softmax definition would need
 * to give `claimed` at the point's gamma (closed forms; NaN when unreachable or post-softmax) */
void epar_sens_definition_measure(const struct epar_sensitivity_result *c, int p, const struct epar_sens_definition *df, double claimed,
                               double *v, double *sd, double *beta_needed)
{
    const struct epar_sens_point *pt = &c->pts[p];
    int L = c->L;
    double d = df->d == EPAR_SENS_D_MID ? L / 2 : df->d == EPAR_SENS_D_MAX ? L - 1 : L;
    int di = df->d == EPAR_SENS_D_MID ? L / 2 : L - 1;
    double x = d / L, g = pt->gamma, e = NAN;
    *sd = 0.0;
    *beta_needed = NAN;
    switch (df->kind) {
    case EPAR_SENS_PRE_RATIO:
        *v = epar_sens_retention_pre(EPAR_FORM_ENHANCED, pt, d, L) / epar_sens_retention_pre(EPAR_FORM_BASIC, pt, d, L);
        e = 1.0 / (claimed * (1 + g) - g);
        break;
    case EPAR_SENS_POST_RATIO_BASIC: epar_sens_ratio_stats(c, p, EPAR_FORM_ENHANCED, di, EPAR_FORM_BASIC, di, v, sd); break;
    case EPAR_SENS_POST_RATIO_NONE: epar_sens_ratio_stats(c, p, EPAR_FORM_ENHANCED, di, EPAR_FORM_NONE, di, v, sd); break;
    case EPAR_SENS_PRE_RET:
        *v = epar_sens_retention_pre(df->form, pt, d, L);
        e = df->form == EPAR_FORM_BASIC ? claimed : (g > 0 ? (claimed * (1 + g) - 1) / g : NAN);
        break;
    default: epar_sens_ratio_stats(c, p, df->form, di, df->form, 0, v, sd); break;
    }
    if (e > 0 && e <= 1) *beta_needed = -log(e) / x;
}

/* the claim, as printed, agrees when the measurement rounds to it: the audit's rule for printed figures */
int epar_sens_agrees(double measured, const struct epar_sens_claim *cl)
{
    struct epar_audit_tol printed = {EPAR_AUDIT_PRINTED, 0, 0, 0, 0, NAN, 0};
    struct epar_audit_meas m = EPAR_AUDIT_MEAS_NONE;
    m.value = measured;
    char acc[128];
    return epar_audit_judge(&printed, cl->value, cl->unit, &m, 0.95, acc, sizeof acc) == EPAR_AUDIT_HOLDS;
}

/* ---- the run ---- */

static int add_block(struct epar_sensitivity_result *c, int b, int n, struct epar_sens_point *tmpl)
{
    c->first[b] = c->P;
    c->count[b] = n;
    for (int k = 0; k < n; k++) {
        struct epar_sens_point *pt = &c->pts[c->P++];
        *pt = tmpl[k];
        pt->blk = b;
        pt->k = k;
    }
    return EPAR_OK;
}

static int build_points(const struct epar_sensitivity_cfg *cfg, struct epar_sensitivity_result *c)
{
    const struct epar_params *prm = &cfg->prm;
    int na = cfg->n_alpha, nb = cfg->n_beta, ng = cfg->n_gamma;
    size_t maxp = 2 + (size_t)na + nb + ng + (size_t)na * nb + (size_t)nb * ng;
    c->pts = epar_err_alloc(maxp, sizeof *c->pts, "sweep points");
    struct epar_sens_point *tmp = epar_err_alloc(maxp, sizeof *tmp, "sweep points");
    if (!c->pts || !tmp) { free(tmp); return EPAR_ENOMEM; }
    struct epar_sens_point base = {0, 0, -1, -1, -1, prm->alpha, prm->beta, prm->gamma};
    c->P = 0;
    add_block(c, EPAR_SENS_DEFAULTS, 1, &base);
    struct epar_sens_point paper = base;
    paper.alpha = cfg->paper_alpha; paper.beta = cfg->paper_beta; paper.gamma = cfg->paper_gamma;
    add_block(c, EPAR_SENS_PAPER, cfg->has_paper, &paper);
    for (int i = 0; i < na; i++) { tmp[i] = base; tmp[i].alpha = cfg->alpha_values[i]; tmp[i].ia = i; }
    add_block(c, EPAR_SENS_ALPHA, na, tmp);
    for (int i = 0; i < nb; i++) { tmp[i] = base; tmp[i].beta = cfg->beta_values[i]; tmp[i].ib = i; }
    add_block(c, EPAR_SENS_BETA, nb, tmp);
    for (int i = 0; i < ng; i++) { tmp[i] = base; tmp[i].gamma = cfg->gamma_values[i]; tmp[i].ig = i; }
    add_block(c, EPAR_SENS_GAMMA, ng, tmp);
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++) {
            struct epar_sens_point *t = &tmp[i * nb + j];
            *t = base;
            t->alpha = cfg->alpha_values[i]; t->beta = cfg->beta_values[j]; t->ia = i; t->ib = j;
        }
    add_block(c, EPAR_SENS_AB, na * nb, tmp);
    for (int i = 0; i < nb; i++)
        for (int j = 0; j < ng; j++) {
            struct epar_sens_point *t = &tmp[i * ng + j];
            *t = base;
            t->beta = cfg->beta_values[i]; t->gamma = cfg->gamma_values[j]; t->ib = i; t->ig = j;
        }
    add_block(c, EPAR_SENS_BG, nb * ng, tmp);
    free(tmp);
    return EPAR_OK;
}

/* Measure every job; fills c->sm and c->sp. */
static int measure(const struct epar_sensitivity_cfg *cfg, struct epar_sensitivity_result *c)
{
    const struct epar_params *prm = &cfg->prm;
    int L = c->L, S = c->S, R = c->R, B = prm->batch, D = prm->hidden, w = cfg->locality_window;
    size_t LL = (size_t)L * L, J = (size_t)c->P * S * R;
    double mem = (double)B * L * D * 8.0 + (double)LL * (B + 1 + B) * 8.0;
    if (mem > 8e9) {
        epar_err_set(EPAR_ENOMEM, "size does not fit: length %d, batch %d needs %.1f GB per thread", L, B, mem / 1e9);
        epar_err_hint("reduce --length or --batch");
        return EPAR_ENOMEM;
    }
    double *jm = epar_err_alloc(J * EPAR_SENS_NF * EPAR_SENS_NMETRIC, sizeof *jm, "per-draw metrics");
    double *jp = epar_err_alloc(J * EPAR_SENS_NF * (size_t)L, sizeof *jp, "per-draw distance profiles");
    c->sm = epar_err_alloc((size_t)c->P * S * EPAR_SENS_NF * EPAR_SENS_NMETRIC, sizeof *c->sm, "per-seed metrics");
    c->sp = epar_err_alloc((size_t)c->P * S * EPAR_SENS_NF * (size_t)L, sizeof *c->sp, "per-seed profiles");
    if (!jm || !jp || !c->sm || !c->sp) { free(jm); free(jp); return EPAR_ENOMEM; }

    int failed = 0;
    struct epar_err_carry carry = EPAR_ERR_CARRY_INIT; /* a worker's message, to the caller */
#pragma omp parallel reduction(| : failed)
    {
        struct epar_exp_model m;
        double *X = EPAR_MALLOC((size_t)B * L * D * sizeof *X);
        double *A = EPAR_MALLOC((size_t)B * LL * sizeof *A);
        double *C = EPAR_MALLOC(LL * sizeof *C);
        double *W = EPAR_MALLOC((size_t)L * B * L * sizeof *W);
        int ok = X && A && C && W && epar_exp_model_alloc(&m, prm) == EPAR_OK;
        if (!ok) {
            failed = 1;
            epar_err_keep(&carry, EPAR_ENOMEM, -1);
        }
#pragma omp for schedule(dynamic, 4)
        for (size_t j = 0; j < J; j++) {
            if (!ok) continue;
            int p = (int)(j / ((size_t)S * R)), s = (int)(j / R % S), r = (int)(j % R);
            const struct epar_sens_point *pt = &c->pts[p];
            unsigned long seed = prm->seeds[s];
            unsigned long run = cfg->common_draws
                                    ? (unsigned long)r
                                    : ((unsigned long)pt->blk << 40) | ((unsigned long)pt->k << 20) | (unsigned long)r;
            if (epar_exp_model_init(&m, seed, run) || epar_exp_data(prm, seed, run, X)) {
                failed = 1;
                epar_err_keep(&carry, epar_err_set(EPAR_ENOMEM, "out of memory running sensitivity (length %d)", L),
                              (long)j);
                continue;
            }
            for (int f = 0; f < EPAR_SENS_NF; f++) {
                struct epar_posfx fx = fx_of(pt, f);
                epar_exp_model_set_effect(&m, &fx);
                epar_exp_attention(&m, X, B, A);
                double *out = jm + (j * EPAR_SENS_NF + f) * EPAR_SENS_NMETRIC;
                out[EPAR_SENS_CONC] = epar_metric_batch_variance(A, B, LL);
                out[EPAR_SENS_LOC] = epar_metric_locality(A, B, L, w);
                epar_metric_position_correlation(A, B, L, C, W);
                epar_metric_matrix_stats(C, L, &out[EPAR_SENS_CMEAN], &out[EPAR_SENS_CSTD], &out[EPAR_SENS_COFF]);
                epar_metric_distance_profile(A, B, L, jp + (j * EPAR_SENS_NF + f) * (size_t)L);
            }
        }
        if (ok) epar_exp_model_free(&m);
        free(X); free(A); free(C); free(W);
    }
    if (failed) {
        free(jm); free(jp);
        return epar_err_carried(&carry);
    }
    /* per seed: mean over runs, in a fixed order (independent of the thread count) */
    for (int p = 0; p < c->P; p++)
        for (int s = 0; s < S; s++)
            for (int f = 0; f < EPAR_SENS_NF; f++) {
                double *om = seed_means(c, p, s, f), *op = seed_profile(c, p, s, f);
                memset(om, 0, EPAR_SENS_NMETRIC * sizeof *om);
                memset(op, 0, (size_t)L * sizeof *op);
                for (int r = 0; r < R; r++) {
                    size_t j = ((size_t)p * S + s) * R + r;
                    for (int k = 0; k < EPAR_SENS_NMETRIC; k++) om[k] += jm[(j * EPAR_SENS_NF + f) * EPAR_SENS_NMETRIC + k] / R;
                    for (int d = 0; d < L; d++) op[d] += jp[(j * EPAR_SENS_NF + f) * (size_t)L + d] / R;
                }
            }
    free(jm); free(jp);
    return EPAR_OK;
}

int epar_exp_sensitivity_run(const struct epar_sensitivity_cfg *cfg, struct epar_sensitivity_result *res)
{
    memset(res, 0, sizeof *res);
    int st = epar_exp_sensitivity_check(cfg);
    if (st) return st;
    res->L = cfg->prm.length;
    res->S = cfg->prm.n_seeds;
    res->R = cfg->prm.runs;
    if ((st = build_points(cfg, res)) || (st = measure(cfg, res))) epar_exp_sensitivity_free(res);
    return st;
}

void epar_exp_sensitivity_free(struct epar_sensitivity_result *res)
{
    free(res->pts);
    free(res->sm);
    free(res->sp);
    res->pts = NULL;
    res->sm = res->sp = NULL;
}

static int sensitivity_check_v(const void *cfg) { return epar_exp_sensitivity_check(cfg); }

EPAR_EXPERIMENT(sensitivity, "sensitivity", "parameter", sensitivity_check_v);
