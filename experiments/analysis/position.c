/* Experiment 1: the position effect, attention, information importance, V(i) and pos*.
 * As the reference: one model per seed, reused by its runs (each run draws fresh data); the figures show
 * the last run of the first seed (the reference plots its last repetition). One job per (seed, run). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_deriv.h>
#include <gsl/gsl_math.h>
#include <gsl/gsl_statistics_double.h>
#include <omp.h>
#include "lib/err.h"
#include "lib/importance.h"
#include "lib/metrics.h"
#include "lib/stats.h"
#include "experiments/common.h"
#include "experiments/analysis/position.h"
#include "experiments/analysis/experiment.h"

/* experiments.position-effect's own settings */
static const struct epar_field position_rows[] = {
    {.key = "distance_curve", .type = EPAR_FIELD_INT, .offset = offsetof(struct epar_position_cfg, distance_curve),
     .lo = 1, .hi = 1 << 20, .def = 20, .help = "distances of distance_curve.csv"},
    {0}};

struct job_out {
    int *pos;        /* (B) pos* per item */
    double *vmax;    /* (B) V(pos*) */
    double mean_weight;
};

/* ---- Theorem 1 ---- */

struct fx_at { const struct epar_posfx *fx; double L; };
static double fx_fn(double d, void *p)
{
    const struct fx_at *a = p;
    return epar_posfx_value(a->fx, d, a->L);
}

void epar_exp_position_properties(const struct epar_posfx *fx, int L, struct epar_position_props *out)
{
    memset(out, 0, sizeof *out);
    double *m = out->measured, *ref = out->reference;
    enum epar_pos_verdict *v = out->verdict;
    double Ld = (double)L, dmax = L > 1 ? Ld - 1 : 1.0;
    int decays = out->decays = fx->form != EPAR_FORM_NONE && fx->beta > 0;
    out->form = fx->form;
#define VERDICT(k, ok) (v[k] = (ok) ? EPAR_POS_PASS : EPAR_POS_FAIL, out->failed += !(ok))

    /* continuity: on a fine grid the largest jump is bounded by sup|m'| * step (m is Lipschitz) */
    const int N = 10000;
    double h = dmax / N, jump = 0.0, lip = fabs(epar_posfx_deriv(fx, 0.0, Ld));
    for (int k = 0; k < N; k++) {
        double dj = fabs(epar_posfx_value(fx, (k + 1) * h, Ld) - epar_posfx_value(fx, k * h, Ld));
        if (dj > jump) jump = dj;
    }
    m[EPAR_POS_CONTINUITY] = jump;
    ref[EPAR_POS_CONTINUITY] = lip * h;
    VERDICT(EPAR_POS_CONTINUITY, jump <= lip * h * (1 + 1e-9) + 1e-15);

    /* differentiability: analytic derivative vs GSL central difference */
    struct fx_at at = {fx, Ld};
    gsl_function F = {fx_fn, &at};
    double worst = 0.0, worst_err = 0.0;
    for (int k = 0; k <= 200; k++) {
        double d = dmax * k / 200.0, num, abserr;
        gsl_deriv_central(&F, d, 1e-3 * (Ld > 1 ? Ld : 1), &num, &abserr);
        double diff = fabs(num - epar_posfx_deriv(fx, d, Ld));
        if (diff > worst) { worst = diff; worst_err = abserr; }
    }
    m[EPAR_POS_DERIVATIVE] = worst;
    ref[EPAR_POS_DERIVATIVE] = 1e-8;
    out->derivative_exact = !(worst_err > 0);
    VERDICT(EPAR_POS_DERIVATIVE, worst <= 1e-8);

    /* monotone decrease over the integer distances of the sequence */
    double rise = -INFINITY;
    for (int d = 0; d + 1 < L; d++) {
        double r = epar_posfx_value(fx, d + 1, Ld) - epar_posfx_value(fx, d, Ld);
        if (r > rise) rise = r;
    }
    if (L < 2) rise = 0.0;
    m[EPAR_POS_MONOTONE] = rise;
    ref[EPAR_POS_MONOTONE] = 0.0;
    VERDICT(EPAR_POS_MONOTONE, L < 2 || (decays ? rise < 0 : rise <= 0)); /* L = 1: one distance, vacuously monotone */

    /* the bound alpha/(1+gamma) and the in-sequence minimum P(L-1) */
    double inf = epar_posfx_infimum(fx), pmin = epar_posfx_value(fx, dmax, Ld);
    m[EPAR_POS_LOWER_BOUND] = pmin;
    ref[EPAR_POS_LOWER_BOUND] = inf;
    VERDICT(EPAR_POS_LOWER_BOUND, pmin >= inf);
    m[EPAR_POS_BOUND_GAP] = pmin - inf;
    ref[EPAR_POS_BOUND_GAP] = 0.0;
    if (decays) VERDICT(EPAR_POS_BOUND_GAP, pmin - inf > 0);
    else v[EPAR_POS_BOUND_GAP] = EPAR_POS_NA;
    /* the floor of the P matrix, measured over every in-sequence distance, is where Theorem 1 puts it */
    double floor_v = INFINITY;
    for (int d = 0; d < L; d++) {
        double x = epar_posfx_value(fx, d, Ld);
        if (x < floor_v) { floor_v = x; out->floor_d = d; }
    }
    m[EPAR_POS_FLOOR] = floor_v;
    ref[EPAR_POS_FLOOR] = pmin;
    VERDICT(EPAR_POS_FLOOR, floor_v == pmin || (L < 2));
    m[EPAR_POS_RETENTION] = pmin / epar_posfx_value(fx, 0, Ld);
    ref[EPAR_POS_RETENTION] = NAN;
    v[EPAR_POS_RETENTION] = EPAR_POS_INFO;
#undef VERDICT
}

/* ---- the experiment ---- */

/* ---- the run, in named steps: set up, iterate (one job per seed x run), matrices, item tables, pos* summary ---- */

struct pos_run {
    const struct epar_position_cfg *cfg;
    const struct epar_params *prm;
    int L, D, B, R, S, J;
    size_t LL;
    struct job_out *jobs;       /* (J) */
    int *pos_all;               /* (J,B) pos* of every item */
    double *vmax_all;           /* (J,B) V(pos*) */
    double *A0, *I0, *V0, *P0;  /* first seed, last run, for the figures: (B,L,L) (B,L) (B,L) (L,L) */
};

static int pos_setup(struct pos_run *c, const struct epar_position_cfg *cfg, struct epar_position_result *res)
{
    memset(c, 0, sizeof *c);
    c->cfg = cfg;
    const struct epar_params *prm = c->prm = &cfg->prm;
    int L = c->L = prm->length, D = c->D = prm->hidden, B = c->B = prm->batch, R = c->R = prm->runs;
    c->S = prm->n_seeds;
    int J = c->J = c->S * R;
    size_t LL = c->LL = (size_t)L * L;
    double mem = (double)L * L * B * 8.0 * 2 + (double)B * L * D * 8.0;
    if (mem > 8e9) {
        epar_err_set(EPAR_ENOMEM, "size does not fit: length %d, batch %d needs %.1f GB", L, B, mem / 1e9);
        epar_err_hint("reduce --length or --batch");
        return EPAR_ENOMEM;
    }
    res->L = L;
    res->B = B;
    res->S = c->S;
    res->R = R;
    res->n_dist = cfg->distance_curve;
    c->jobs = epar_err_alloc((size_t)J, sizeof *c->jobs, "job results");
    c->pos_all = res->pos = epar_err_alloc((size_t)J * B, sizeof *c->pos_all, "pos* table");
    c->vmax_all = res->vmax = epar_err_alloc((size_t)J * B, sizeof *c->vmax_all, "pos* table");
    /* job R-1 keeps its matrices for the figures */
    c->A0 = res->A = epar_err_alloc((size_t)B * LL, sizeof *c->A0, "attention (figures)");
    c->I0 = res->I = epar_err_alloc((size_t)B * L, sizeof *c->I0, "importance (figures)");
    c->V0 = res->V = epar_err_alloc((size_t)B * L, sizeof *c->V0, "position scores (figures)");
    c->P0 = res->P = epar_err_alloc(LL, sizeof *c->P0, "position effect");
    res->C = epar_err_alloc(LL, sizeof *res->C, "position correlation");
    res->avg = epar_err_alloc(LL, sizeof *res->avg, "average attention");
    res->key_mean = epar_err_alloc(4 * (size_t)L, sizeof *res->key_mean, "attention statistics");
    res->dist = epar_err_alloc(3 * (size_t)(res->n_dist > 0 ? res->n_dist : 1), sizeof *res->dist, "distance curve");
    if (!c->jobs || !c->pos_all || !c->vmax_all || !c->A0 || !c->I0 || !c->V0 || !c->P0 || !res->C || !res->avg ||
        !res->key_mean || !res->dist)
        return EPAR_ENOMEM;
    res->key_sd = res->key_mean + L;
    res->key_max = res->key_sd + L;
    res->key_min = res->key_max + L;
    for (int j = 0; j < J; j++) {
        c->jobs[j].pos = c->pos_all + (size_t)j * B;
        c->jobs[j].vmax = c->vmax_all + (size_t)j * B;
    }
    return EPAR_OK;
}

static void pos_run_free(struct pos_run *c)
{
    free(c->jobs); /* the rest belongs to the result */
}

/* job j = (seed, run): draw the layer and the data, attention, V = A I and pos* per item; 0 or 1 (failed) */
static int pos_job(struct pos_run *c, int j, struct epar_exp_model *mp, double *X, double *A, double *I, double *V)
{
    const struct epar_params *prm = c->prm;
    int L = c->L, D = c->D, B = c->B, R = c->R;
    size_t LL = c->LL;
    struct job_out *jobs = c->jobs;
    double *A0 = c->A0, *I0 = c->I0, *V0 = c->V0, *P0 = c->P0;
            unsigned long seed = prm->seeds[j / R], run = (unsigned long)(j % R);
            if (epar_exp_model_init(mp, seed, 0) || epar_exp_data(prm, seed, run, X)) return 1;
            epar_imp_norm(X, B, L, D, I); /* I_j = ||x_j||, before the position embedding */
            epar_exp_attention(mp, X, B, A);
            double wsum = 0.0;
            for (int b = 0; b < B; b++) {
                epar_metric_value(A + (size_t)b * LL, I + (size_t)b * L, L, V + (size_t)b * L);
                size_t p = epar_metric_argmax_tied(V + (size_t)b * L, (size_t)L, EPAR_METRIC_TIE_RTOL);
                jobs[j].pos[b] = (int)p;
                jobs[j].vmax[b] = V[(size_t)b * L + p];
            }
            for (size_t t = 0; t < (size_t)B * LL; t++) wsum += A[t];
            jobs[j].mean_weight = wsum / ((double)B * LL);
            if (j == R - 1) { /* first seed, last run: the figures */
                memcpy(A0, A, (size_t)B * LL * sizeof *A);
                memcpy(I0, I, (size_t)B * L * sizeof *I);
                memcpy(V0, V, (size_t)B * L * sizeof *V);
                memcpy(P0, mp->P, LL * sizeof *P0);
            }
    return 0;
}

static int pos_iterate(struct pos_run *c)
{
    int B = c->B, L = c->L, D = c->D;
    struct epar_err_carry carry = EPAR_ERR_CARRY_INIT; /* a worker's message, to the caller */
#pragma omp parallel
    {
        struct epar_exp_model m;
        double *X = epar_err_alloc((size_t)B * L * D, sizeof *X, "position-effect's inputs (batch x length x dim)");
        double *A = epar_err_alloc((size_t)B * c->LL, sizeof *A, "position-effect's attention (batch x length^2)");
        double *I = epar_err_alloc((size_t)B * L, sizeof *I, "position-effect's importance (batch x length)");
        double *V = epar_err_alloc((size_t)B * L, sizeof *V, "position-effect's V (batch x length)");
        int ok = X && A && I && V && epar_exp_model_alloc(&m, c->prm) == EPAR_OK;
        if (!ok) epar_err_keep(&carry, EPAR_ENOMEM, -1);
#pragma omp for schedule(dynamic, 1)
        for (int j = 0; j < c->J; j++)
            if (ok && pos_job(c, j, &m, X, A, I, V))
                epar_err_keep(&carry, epar_err_set(EPAR_ENOMEM, "out of memory running position-effect (length %d)",
                                                   c->L), j);
        if (ok) epar_exp_model_free(&m);
        free(X); free(A); free(I); free(V);
    }
    return epar_err_carried(&carry);
}

/* the position correlation and the average attention of the figures' run */
static int pos_matrices(struct pos_run *c, struct epar_position_result *res)
{
    int L = c->L, B = c->B;
    size_t LL = c->LL;
    double *A0 = c->A0, *P0 = c->P0;
    if (c->prm->form == EPAR_FORM_NONE) for (size_t t = 0; t < LL; t++) P0[t] = 1.0;
    double *W = EPAR_MALLOC((size_t)L * B * L * sizeof *W);
    if (!W) return EPAR_ENOMEM;
    epar_metric_position_correlation(A0, B, L, res->C, W);
    free(W);
    for (size_t t = 0; t < LL; t++) res->avg[t] = 0.0;
    for (int b = 0; b < B; b++)
        for (size_t t = 0; t < LL; t++) res->avg[t] += A0[(size_t)b * LL + t] / B;
    return EPAR_OK;
}

/* per-key statistics of item 0, the distance curve */
static void pos_items(struct pos_run *c, struct epar_position_result *res)
{
    const struct epar_params *prm = c->prm;
    int L = c->L;
    epar_metric_key_stats(c->A0, L, res->key_mean, res->key_sd, res->key_max, res->key_min);
    struct epar_posfx fx = {prm->form, prm->alpha, prm->beta, prm->gamma}, b = fx, e = fx;
    b.form = EPAR_FORM_BASIC;
    e.form = EPAR_FORM_ENHANCED;
    for (int d = 0; d < res->n_dist; d++) {
        double *row = res->dist + 3 * (size_t)d;
        row[0] = prm->form == EPAR_FORM_NONE ? 1.0 : epar_posfx_value(&fx, d, L);
        row[1] = epar_posfx_value(&b, d, L);
        row[2] = epar_posfx_value(&e, d, L);
    }
}

/* the pos* summary over every item of every run and seed */
static int pos_summary(struct pos_run *c, struct epar_position_result *res)
{
    int B = c->B, R = c->R, S = c->S, J = c->J;
    const struct job_out *jobs = c->jobs;
    size_t n = (size_t)J * B;
    double *pd = EPAR_MALLOC(n * sizeof *pd), *seed_means = EPAR_MALLOC((size_t)S * sizeof *seed_means);
    if (!pd || !seed_means) { free(pd); free(seed_means); return EPAR_ENOMEM; }
    double wsum = 0.0;
    for (int j = 0; j < J; j++) {
        wsum += jobs[j].mean_weight;
        for (int b = 0; b < B; b++) pd[(size_t)j * B + b] = jobs[j].pos[b];
    }
    for (int s = 0; s < S; s++) seed_means[s] = gsl_stats_mean(pd + (size_t)s * R * B, 1, (size_t)R * B);
    res->pos_mean = gsl_stats_mean(pd, 1, n);
    res->pos_std = gsl_stats_sd_with_fixed_mean(pd, 1, n, res->pos_mean); /* ddof = 0, as numpy */
    gsl_stats_minmax(&res->pos_min, &res->pos_max, pd, 1, n);
    res->mean_weight = wsum / J;
    double seed_mean;
    epar_stats_mean_sd(seed_means, (size_t)S, &seed_mean, &res->pos_seed_sd);
    free(pd); free(seed_means);
    return EPAR_OK;
}

int epar_exp_position_run(const struct epar_position_cfg *cfg, struct epar_position_result *res)
{
    memset(res, 0, sizeof *res);
    struct pos_run c;
    int st = pos_setup(&c, cfg, res);
    if (!st) st = pos_iterate(&c);
    if (!st) st = pos_matrices(&c, res);
    if (!st) pos_items(&c, res);
    if (!st) st = pos_summary(&c, res);
    if (!st) {
        const struct epar_params *prm = &cfg->prm;
        struct epar_posfx fx = {prm->form, prm->alpha, prm->beta, prm->gamma};
        epar_exp_position_properties(&fx, c.L, &res->props);
        res->properties_failed = res->props.failed;
    }
    pos_run_free(&c);
    if (st) epar_exp_position_free(res);
    return st;
}

void epar_exp_position_free(struct epar_position_result *res)
{
    free(res->P); free(res->A); free(res->C); free(res->avg); free(res->I); free(res->V);
    free(res->key_mean); free(res->dist); free(res->pos); free(res->vmax);
    memset(res, 0, sizeof *res);
}

int epar_exp_position_config(const struct epar_protocol *p, struct epar_position_cfg *cfg)
{
    const char *keys[8];
    epar_fields_keys(position_rows, NULL, keys, 8);
    epar_fields_defaults(position_rows, cfg);
    int st = epar_protocol_check_keys(p, "position-effect", keys);
    if (!st) st = epar_protocol_obj_fields(p, epar_protocol_section(p, "position-effect"), "$.experiments.position-effect",
                                           position_rows, cfg);
    return st;
}

EPAR_EXPERIMENT(position, "position-effect", "position", NULL);
