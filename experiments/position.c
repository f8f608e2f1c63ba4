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
#include "common.h"
#include "position.h"
#include "experiments/experiment.h"

const char *const epar_exp_position_keys[] = {"distance_curve", NULL};

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

struct epar_table *epar_exp_position_properties(const struct epar_posfx *fx, int L, int *failed)
{
    struct epar_table *t = epar_csv_new("property,measured,reference,pass,note");
    if (!t) return NULL;
    int bad = 0; /* an append that fails (out of memory) fails the table, not a silent row less */
    *failed = 0;
    double Ld = (double)L, dmax = L > 1 ? Ld - 1 : 1.0;
    int decays = fx->form != EPAR_FORM_NONE && fx->beta > 0;

    /* continuity: on a fine grid the largest jump is bounded by sup|m'| * step (m is Lipschitz) */
    const int N = 10000;
    double h = dmax / N, jump = 0.0, lip = fabs(epar_posfx_deriv(fx, 0.0, Ld));
    for (int k = 0; k < N; k++) {
        double dj = fabs(epar_posfx_value(fx, (k + 1) * h, Ld) - epar_posfx_value(fx, k * h, Ld));
        if (dj > jump) jump = dj;
    }
    int ok = jump <= lip * h * (1 + 1e-9) + 1e-15;
    *failed += !ok;
    bad |= epar_csv_append(t, "sddss", "continuity_max_jump", jump, lip * h, ok ? "pass" : "fail",
                    "largest |P(d+h)-P(d)| on a 10000-step grid over [0, L-1] vs the Lipschitz bound |P'(0)| h");

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
    ok = worst <= 1e-8;
    *failed += !ok;
    bad |= epar_csv_append(t, "sddss", "derivative_max_abs_error", worst, 1e-8, ok ? "pass" : "fail",
                    worst_err > 0 ? "analytic dP/dd vs gsl_deriv_central at 201 points of [0, L-1]"
                                  : "analytic dP/dd vs gsl_deriv_central at 201 points of [0, L-1] (exact)");

    /* monotone decrease over the integer distances of the sequence */
    double rise = -INFINITY;
    for (int d = 0; d + 1 < L; d++) {
        double r = epar_posfx_value(fx, d + 1, Ld) - epar_posfx_value(fx, d, Ld);
        if (r > rise) rise = r;
    }
    if (L < 2) rise = 0.0;
    ok = L < 2 || (decays ? rise < 0 : rise <= 0); /* L = 1: one distance, vacuously monotone */
    *failed += !ok;
    bad |= epar_csv_append(t, "sddss", "monotone_max_increment", rise, 0.0, ok ? "pass" : "fail",
                    decays ? "max over d of P(d+1)-P(d); < 0 means strictly decreasing"
                           : "max over d of P(d+1)-P(d); beta = 0 or form none: P is constant");

    /* the bound alpha/(1+gamma) and the in-sequence minimum P(L-1) */
    double inf = epar_posfx_infimum(fx), pmin = epar_posfx_value(fx, dmax, Ld);
    ok = pmin >= inf;
    *failed += !ok;
    bad |= epar_csv_append(t, "sddss", "lower_bound", pmin, inf, ok ? "pass" : "fail",
                    fx->form == EPAR_FORM_ENHANCED ? "in-sequence minimum P(L-1) vs the bound alpha/(1+gamma)"
                    : fx->form == EPAR_FORM_BASIC  ? "in-sequence minimum P(L-1) vs the infimum 0 of the basic form"
                                                   : "form none: P = 1");
    ok = pmin - inf > 0;
    if (decays) *failed += !ok;
    bad |= epar_csv_append(t, "sddss", "bound_gap_in_sequence", pmin - inf, 0.0, !decays ? "n/a" : ok ? "pass" : "fail",
                    decays ? "P(L-1) - infimum: > 0 means the bound is an infimum never reached inside a sequence"
                           : "beta = 0 or form none: P is constant, so its bound is attained everywhere");
    /* the floor of the P matrix, measured over every in-sequence distance, is where Theorem 1 puts it */
    double floor_v = INFINITY;
    int floor_d = 0;
    for (int d = 0; d < L; d++) {
        double v = epar_posfx_value(fx, d, Ld);
        if (v < floor_v) { floor_v = v; floor_d = d; }
    }
    ok = floor_v == pmin || (L < 2);
    *failed += !ok;
    char note[160];
    snprintf(note, sizeof note, "minimum of P over distances 0..L-1 (at d=%d) vs P(L-1): the true floor of the matrix",
             floor_d);
    bad |= epar_csv_append(t, "sddss", "in_sequence_minimum", floor_v, pmin, ok ? "pass" : "fail", note);
    bad |= epar_csv_append(t, "sddss", "retention_at_max_distance", pmin / epar_posfx_value(fx, 0, Ld), NAN, "info",
                    "P(L-1)/P(0)");
    if (bad) {
        epar_csv_free(t);
        return NULL;
    }
    return t;
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

static int pos_setup(struct pos_run *c, const struct epar_position_cfg *cfg)
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
    c->jobs = epar_err_alloc((size_t)J, sizeof *c->jobs, "job results");
    c->pos_all = epar_err_alloc((size_t)J * B, sizeof *c->pos_all, "pos* table");
    c->vmax_all = epar_err_alloc((size_t)J * B, sizeof *c->vmax_all, "pos* table");
    /* job R-1 keeps its matrices for the figures */
    c->A0 = epar_err_alloc((size_t)B * LL, sizeof *c->A0, "attention (figures)");
    c->I0 = epar_err_alloc((size_t)B * L, sizeof *c->I0, "importance (figures)");
    c->V0 = epar_err_alloc((size_t)B * L, sizeof *c->V0, "position scores (figures)");
    c->P0 = epar_err_alloc(LL, sizeof *c->P0, "position effect");
    if (!c->jobs || !c->pos_all || !c->vmax_all || !c->A0 || !c->I0 || !c->V0 || !c->P0) return EPAR_ENOMEM;
    for (int j = 0; j < J; j++) {
        c->jobs[j].pos = c->pos_all + (size_t)j * B;
        c->jobs[j].vmax = c->vmax_all + (size_t)j * B;
    }
    return EPAR_OK;
}

static void pos_run_free(struct pos_run *c)
{
    free(c->jobs); free(c->pos_all); free(c->vmax_all);
    free(c->A0); free(c->I0); free(c->V0); free(c->P0);
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

/* p_matrix, attention, correlation and average attention of the figures' run */
static int pos_matrices(struct pos_run *c, struct epar_position_result *res)
{
    int L = c->L, B = c->B;
    size_t LL = c->LL;
    double *A0 = c->A0, *P0 = c->P0;
    if (c->prm->form == EPAR_FORM_NONE) for (size_t t = 0; t < LL; t++) P0[t] = 1.0;
    if (!(res->p_matrix = epar_exp_matrix_table("query,key,p_effect", P0, L, L))) return EPAR_ENOMEM;
    if (!(res->attention = epar_exp_matrix_table("query,key,weight", A0, L, L))) return EPAR_ENOMEM;
    {
        double *C = EPAR_MALLOC(LL * sizeof *C), *W = EPAR_MALLOC((size_t)L * B * L * sizeof *W);
        if (C && W) {
            epar_metric_position_correlation(A0, B, L, C, W);
            res->correlation = epar_exp_matrix_table("query_i,query_j,correlation", C, L, L);
        }
        free(C); free(W);
        if (!res->correlation) return EPAR_ENOMEM;
    }
    {
        double *Avg = EPAR_CALLOC(LL, sizeof *Avg);
        if (!Avg) return EPAR_ENOMEM;
        for (int b = 0; b < B; b++)
            for (size_t t = 0; t < LL; t++) Avg[t] += A0[(size_t)b * LL + t] / B;
        res->average = epar_exp_matrix_table("query,key,weight", Avg, L, L);
        free(Avg);
        if (!res->average) return EPAR_ENOMEM;
    }
    return EPAR_OK;
}

/* importance and scores per item (wide), per-key statistics, the distance curve */
static int pos_items(struct pos_run *c, struct epar_position_result *res)
{
    const struct epar_params *prm = c->prm;
    int L = c->L, B = c->B;
    const double *A0 = c->A0, *I0 = c->I0, *V0 = c->V0;
    struct epar_posfx fx = {prm->form, prm->alpha, prm->beta, prm->gamma};
    const struct epar_position_cfg *cfg = c->cfg;
    /* wide tables: position, item_0 .. item_{B-1} */
    {
        char cols[4096] = "position";
        for (int b = 0; b < B && strlen(cols) < sizeof cols - 16; b++)
            snprintf(cols + strlen(cols), sizeof cols - strlen(cols), ",item_%d", b);
        res->importance = epar_csv_new(cols);
        res->scores = epar_csv_new(cols);
        if (!res->importance || !res->scores) return EPAR_ENOMEM;
        int nb = res->importance->ncols - 1;
        for (int i = 0; i < L; i++) {
            if (epar_csv_append(res->importance, "i", i) || epar_csv_append(res->scores, "i", i)) return EPAR_ENOMEM;
            for (int b = 0; b < nb; b++) {
                res->importance->cells[(size_t)i * res->importance->ncols + 1 + b].v = I0[(size_t)b * L + i];
                res->scores->cells[(size_t)i * res->scores->ncols + 1 + b].v = V0[(size_t)b * L + i];
            }
        }
    }
    {
        double *mean = EPAR_MALLOC(4 * (size_t)L * sizeof *mean);
        if (!mean) return EPAR_ENOMEM;
        double *sd = mean + L, *mx = sd + L, *mn = mx + L;
        epar_metric_key_stats(A0, L, mean, sd, mx, mn);
        res->stats = epar_csv_new("key,mean,std,max,min");
        res->column_attention = epar_csv_new("key,attention_received");
        for (int j = 0; res->stats && res->column_attention && j < L; j++)
            if (epar_csv_append(res->stats, "idddd", j, mean[j], sd[j], mx[j], mn[j]) ||
                epar_csv_append(res->column_attention, "id", j, mean[j]))
                break;
        free(mean);
        if (!res->stats || !res->column_attention || res->stats->nrows != (size_t)L) return EPAR_ENOMEM;
    }
    {
        res->distance = epar_csv_new("distance,p_effect,basic,enhanced");
        if (!res->distance) return EPAR_ENOMEM;
        struct epar_posfx b = fx, e = fx;
        b.form = EPAR_FORM_BASIC;
        e.form = EPAR_FORM_ENHANCED;
        for (int d = 0; d < cfg->distance_curve; d++)
            if (epar_csv_append(res->distance, "iddd", d,
                                prm->form == EPAR_FORM_NONE ? 1.0 : epar_posfx_value(&fx, d, L),
                                epar_posfx_value(&b, d, L), epar_posfx_value(&e, d, L)))
                return EPAR_ENOMEM;
    }
    return EPAR_OK;
}

/* pos_star.csv and summary.csv over every item of every run and seed */
static int pos_summary(struct pos_run *c, struct epar_position_result *res)
{
    const struct epar_params *prm = c->prm;
    int L = c->L, B = c->B, R = c->R, S = c->S, J = c->J;
    const struct job_out *jobs = c->jobs;
    {
        res->pos_star = epar_csv_new("seed,run,item,pos_star,value_max");
        if (!res->pos_star) return EPAR_ENOMEM;
        size_t n = (size_t)J * B;
        double *pd = EPAR_MALLOC(n * sizeof *pd), *seed_means = EPAR_MALLOC((size_t)S * sizeof *seed_means);
        if (!pd || !seed_means) { free(pd); free(seed_means); return EPAR_ENOMEM; }
        double wsum = 0.0;
        for (int j = 0; j < J; j++) {
            wsum += jobs[j].mean_weight;
            for (int b = 0; b < B; b++) {
                pd[(size_t)j * B + b] = jobs[j].pos[b];
                if (epar_csv_append(res->pos_star, "iiiid", (int)prm->seeds[j / R], j % R, b, jobs[j].pos[b],
                                    jobs[j].vmax[b])) { free(pd); free(seed_means); return EPAR_ENOMEM; }
            }
        }
        for (int s = 0; s < S; s++) seed_means[s] = gsl_stats_mean(pd + (size_t)s * R * B, 1, (size_t)R * B);
        res->pos_mean = gsl_stats_mean(pd, 1, n);
        res->pos_std = gsl_stats_sd_with_fixed_mean(pd, 1, n, res->pos_mean); /* ddof = 0, as numpy */
        gsl_stats_minmax(&res->pos_min, &res->pos_max, pd, 1, n);
        res->mean_weight = wsum / J;
        double seed_mean, seed_sd;
        epar_stats_mean_sd(seed_means, (size_t)S, &seed_mean, &seed_sd);
        free(pd); free(seed_means);
        res->summary = epar_csv_new("metric,value,note");
        if (!res->summary) return EPAR_ENOMEM;
        char note[160];
        snprintf(note, sizeof note, "rows of A sum to 1, so this is 1/L = %.12g by construction, not a measurement",
                 1.0 / L);
        if (epar_csv_append(res->summary, "sds", "pos_star_mean", res->pos_mean, "over every item of every run and seed") ||
            epar_csv_append(res->summary, "sds", "pos_star_std", res->pos_std, "population std (ddof=0)") ||
            epar_csv_append(res->summary, "sds", "pos_star_min", res->pos_min, "") ||
            epar_csv_append(res->summary, "sds", "pos_star_max", res->pos_max, "") ||
            epar_csv_append(res->summary, "sds", "pos_star_seed_sd", seed_sd, "sample sd across seeds of the per-seed mean") ||
            epar_csv_append(res->summary, "sds", "items", (double)n, "seeds x runs x batch") ||
            epar_csv_append(res->summary, "sds", "mean_attention_weight", res->mean_weight, note))
            return EPAR_ENOMEM;
    }
    return EPAR_OK;
}

int epar_exp_position_run(const struct epar_position_cfg *cfg, struct epar_position_result *res)
{
    memset(res, 0, sizeof *res);
    struct pos_run c;
    int st = pos_setup(&c, cfg);
    if (!st) st = pos_iterate(&c);
    if (!st) st = pos_matrices(&c, res);
    if (!st) st = pos_items(&c, res);
    if (!st) st = pos_summary(&c, res);
    if (!st) {
        const struct epar_params *prm = &cfg->prm;
        struct epar_posfx fx = {prm->form, prm->alpha, prm->beta, prm->gamma};
        if (!(res->properties = epar_exp_position_properties(&fx, c.L, &res->properties_failed))) st = EPAR_ENOMEM;
    }
    pos_run_free(&c);
    if (st) epar_exp_position_free(res);
    return st;
}

void epar_exp_position_free(struct epar_position_result *res)
{
    struct epar_table **all[] = {&res->p_matrix, &res->attention, &res->correlation, &res->average,
                                 &res->importance, &res->scores, &res->stats, &res->distance,
                                 &res->column_attention, &res->pos_star, &res->summary, &res->properties};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        epar_csv_free(*all[i]);
        *all[i] = NULL;
    }
}

/* the tables and run.json */
static int pos_write_files(const struct epar_position_cfg *cfg, const struct epar_position_result *res,
                           struct epar_out *o, const char *protocol_path)
{
    const struct epar_params *prm = &cfg->prm;
    int st;
    const struct epar_exp_file files[] = {
        {"position_effect_matrix.csv", res->p_matrix}, {"attention_weights.csv", res->attention},
        {"position_correlation.csv", res->correlation}, {"average_attention.csv", res->average},
        {"information_importance.csv", res->importance}, {"position_scores.csv", res->scores},
        {"attention_statistics.csv", res->stats}, {"position_effect_distance.csv", res->distance},
        {"position_attention.csv", res->column_attention}, {"pos_star.csv", res->pos_star},
        {"summary.csv", res->summary}, {"properties.csv", res->properties}};
    if ((st = epar_exp_write_tables(o, files, sizeof files / sizeof files[0]))) return st;
    json_t *extra = json_pack("{s:i, s:{s:I, s:i, s:i}}", "distance_curve", cfg->distance_curve, "figures_from",
                              "seed", (json_int_t)prm->seeds[0], "run", prm->runs - 1, "item", 0);
    if ((st = epar_exp_write_run_json(o, "position-effect", protocol_path, prm, extra))) return st;

    return EPAR_OK;
}

/* the four L x L heatmaps; `where` names the seed and run the figures show */
static int pos_write_heatmaps(const struct epar_params *prm, const char *where, struct epar_out *o)
{
    int st, L = prm->length, B = prm->batch;
    char title[256];
    const char *form = epar_posfx_form_name(prm->form);

    snprintf(title, sizeof title, "Attention weights A_{ij} (item 0, %s, %s form)", where, form);
    if ((st = epar_exp_heatmap(o, "attention_weights", title, "attention_weights.csv", "key position j",
                               "query position i", "attention weight")))
        return st;
    snprintf(title, sizeof title, "Position effect P(i,j) (%s, {/Symbol a}=%g, {/Symbol b}=%g, {/Symbol g}=%g, L=%d)",
             form, prm->alpha, prm->beta, prm->gamma, L);
    if ((st = epar_exp_heatmap(o, "position_effect_matrix", title, "position_effect_matrix.csv", "key position j",
                               "query position i", "P(i,j)")))
        return st;
    snprintf(title, sizeof title, "Position correlation of attention rows (over %d items, %s)", B, where);
    if ((st = epar_exp_heatmap(o, "position_correlation", title, "position_correlation.csv", "query position j",
                               "query position i", "Pearson correlation")))
        return st;
    snprintf(title, sizeof title, "Average attention over the batch (%d items, %s)", B, where);
    if ((st = epar_exp_heatmap(o, "average_attention", title, "average_attention.csv", "key position j",
                               "query position i", "mean attention weight")))
        return st;
    return EPAR_OK;
}

/* importance, scores with pos*, per-key statistics, the distance curve, attention received */
static int pos_write_curves(const struct epar_params *prm, const char *where, struct epar_out *o)
{
    int st, L = prm->length, B = prm->batch;
    const char *form = epar_posfx_form_name(prm->form);
    if ((st = epar_plot_scriptf(o, "information_importance", "Information importance I_j = ||x_j||",
                                "set title 'Information importance I_j = ||x_j||_2 (%s)'\n"
                                "set xlabel 'position j'\nset ylabel 'I_j (L2 norm of the input)'\n"
                                "set key outside right\n"
                                EPAR_PLOT_IF("'information_importance.csv', '1:2'")
                                "plot for [c=2:%d] 'information_importance.csv' skip 1 using 1:c with lines "
                                "title sprintf('item %%d', c-2)" EPAR_PLOT_END,
                                where, B + 1)))
        return st;
    if ((st = epar_plot_scriptf(o, "position_scores", "Position score V(i) with pos* marked",
                                "set title 'Position score V(i) = {/Symbol S}_j A_{ij} I_j, pos* marked (%s)'\n"
                                "set xlabel 'position i'\nset ylabel 'V(i)'\nset key outside right\n"
                                EPAR_PLOT_IF("'position_scores.csv', '1:2'") "plot for [c=2:%d] 'position_scores.csv' skip 1 using 1:c with lines "
                                "title sprintf('item %%d', c-2), \\\n"
                                "     'pos_star.csv' skip 1 using (($1==%lu && $2==%d) ? $4 : NaN):5:($3+1) "
                                "with points pt 7 ps 1.6 lc variable title 'pos* (colour of its item)', \\\n"
                                "     '' skip 1 using (($1==%lu && $2==%d) ? $4 : NaN):5 with points pt 6 ps 1.7 "
                                "lc rgb 'black' notitle" EPAR_PLOT_END,
                                where, B + 1, prm->seeds[0], prm->runs - 1, prm->seeds[0], prm->runs - 1)))
        return st;
    if ((st = epar_plot_scriptf(o, "attention_statistics", "Attention statistics per key position",
                                "set terminal @epar_term size 1100,800\n"
                                "set multiplot layout 2,2 title 'Attention received per key position, over "
                                "queries (item 0, %s)'\n"
                                "unset key\nset xlabel 'key position j'\n"
                                "set ylabel 'mean weight'\n" EPAR_PLOT_IF("'attention_statistics.csv', '1:2'")
                                "plot 'attention_statistics.csv' skip 1 using 1:2 with lines lt 1 notitle" EPAR_PLOT_END
                                "set ylabel 'std of weight'\n" EPAR_PLOT_IF("'attention_statistics.csv', '1:3'")
                                "plot 'attention_statistics.csv' skip 1 using 1:3 with lines lt 2 notitle" EPAR_PLOT_END
                                "set ylabel 'max weight'\n" EPAR_PLOT_IF("'attention_statistics.csv', '1:4'")
                                "plot 'attention_statistics.csv' skip 1 using 1:4 with lines lt 3 notitle" EPAR_PLOT_END
                                "set ylabel 'min weight'\n" EPAR_PLOT_IF("'attention_statistics.csv', '1:5'")
                                "plot 'attention_statistics.csv' skip 1 using 1:5 with lines lt 4 notitle" EPAR_PLOT_END
                                "unset multiplot\n",
                                where)))
        return st;
    if ((st = epar_plot_scriptf(o, "position_effect_distance", "Position effect vs distance, and P(i,j) as a heatmap",
                                "set terminal @epar_term size 1300,550\n"
                                "set multiplot layout 1,2 title 'Position effect ({/Symbol a}=%g, "
                                "{/Symbol b}=%g, {/Symbol g}=%g, L=%d)'\n"
                                "set xlabel 'distance |i-j| (positions)'\nset ylabel 'P(|i-j|)'\n"
                                "set key bottom left\n" EPAR_PLOT_IF("'position_effect_distance.csv', '1:2'")
                                "plot 'position_effect_distance.csv' skip 1 using 1:3 with linespoints lt 2 "
                                "title 'basic', '' skip 1 using 1:4 with linespoints lt 1 title 'enhanced', "
                                "'' skip 1 using 1:2 with points pt 6 ps 1.4 lc rgb 'black' title 'this run (%s)'" EPAR_PLOT_END
                                "set title 'P(i,j) over all query-key pairs'\nset xlabel 'key position j'\n"
                                "set ylabel 'query position i'\nset cblabel 'P(i,j)'\n@epar_heatmap\n"
                                "set autoscale xfix\nset autoscale yfix\n"
                                "eval epar_cells('position_effect_matrix.csv', '2', '1', '3')\n"
                                "unset multiplot\n",
                                prm->alpha, prm->beta, prm->gamma, L, form)))
        return st;
    if ((st = epar_plot_scriptf(o, "position_attention", "Attention received per key position",
                                "set terminal @epar_term size 1300,550\n"
                                "set multiplot layout 1,2 title 'Position attention (item 0, %s)'\n"
                                "set xlabel 'key position j'\nset ylabel 'mean attention received'\n"
                                EPAR_PLOT_IF("'position_attention.csv', '1:2'")
                                "plot 'position_attention.csv' skip 1 using 1:2 with lines lt 1 notitle" EPAR_PLOT_END
                                "set xlabel 'key position j'\nset ylabel 'query position i'\n"
                                "set cblabel 'attention weight'\n@epar_heatmap\n"
                                "set autoscale xfix\nset autoscale yfix\n"
                                "eval epar_cells('attention_weights.csv', '2', '1', '3')\n"
                                "unset multiplot\n",
                                where)))
        return st;
    return EPAR_OK;
}

int epar_exp_position_write(const struct epar_position_cfg *cfg, const struct epar_position_result *res,
                            struct epar_out *o, const char *protocol_path)
{
    const struct epar_params *prm = &cfg->prm;
    int st;
    if ((st = pos_write_files(cfg, res, o, protocol_path))) return st;
    char where[128];
    snprintf(where, sizeof where, "seed %lu, run %d", prm->seeds[0], prm->runs - 1);
    if ((st = pos_write_heatmaps(prm, where, o))) return st;
    return pos_write_curves(prm, where, o);
}

int epar_exp_position_config(const struct epar_protocol *p, struct epar_position_cfg *cfg)
{
    cfg->distance_curve = 20;
    int st = epar_protocol_check_keys(p, "position-effect", epar_exp_position_keys);
    if (!st) st = epar_protocol_get_int(p, "position-effect", "distance_curve", &cfg->distance_curve, 1, 1 << 20);
    return st;
}

EPAR_EXPERIMENT(position, "position-effect", "position", NULL);
