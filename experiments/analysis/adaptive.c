/* Experiment 4: task- and content-aware attention (random-initialised modules, nothing trained), its
 * alpha x beta grid, and the "when and why" sweep of §5.4 turned into measurements.
 *
 * Streams (lib/rng): for job (seed, run) the attention layer and then the adaptive modules are drawn from
 * (seed, run, WEIGHTS) in one sequence; X from (seed, run, DATA); task ids and then dropout masks from
 * (seed, run, EXTRA). Every job owns its streams and result slot, so the output does not depend on the
 * number of threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_statistics_double.h>
#include <omp.h>
#include "lib/err.h"
#include "lib/importance.h"
#include "lib/metrics.h"
#include "lib/stats.h"
#include "lib/model.h"
#include "lib/rng.h"
#include "experiments/common.h"
#include "experiments/analysis/adaptive.h"
#include "experiments/analysis/experiment.h"

/* experiments.adaptive: one row per setting (default, range, help); when_lengths (integers >= 2) apart */
#define AC struct epar_adaptive_cfg
static const struct epar_field adaptive_fields[] = {
    {.key = "tasks", .type = EPAR_FIELD_INT, .offset = offsetof(AC, tasks), .lo = 1, .hi = 1 << 20, .def = 10,
     .help = "task types of the main experiment"},
    {.key = "task_embedding", .type = EPAR_FIELD_INT, .offset = offsetof(AC, task_dim), .lo = 1, .hi = 1 << 20,
     .def = 64, .help = "task embedding width"},
    {.key = "content_types", .type = EPAR_FIELD_INT, .offset = offsetof(AC, content_types), .lo = 1, .hi = 1 << 20,
     .def = 5, .help = "content types"},
    {.key = "dropout", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(AC, dropout), .def = 0.1,
     .flags = EPAR_FIELD_NONNEG, .help = "the content estimator's Dropout p"},
    {.key = "grid_alpha", .type = EPAR_FIELD_DLIST, .offset = offsetof(AC, grid_alpha),
     .count_offset = offsetof(AC, n_grid_alpha), .max = EPAR_MAX_LIST, .help = "alphas of the sensitivity grid"},
    {.key = "grid_beta", .type = EPAR_FIELD_DLIST, .offset = offsetof(AC, grid_beta),
     .count_offset = offsetof(AC, n_grid_beta), .max = EPAR_MAX_LIST, .help = "betas of the sensitivity grid"},
    {.key = "grid_length", .type = EPAR_FIELD_INT, .offset = offsetof(AC, grid_length), .lo = 1, .hi = 1 << 20,
     .def = 32, .help = "grid: sequence length"},
    {.key = "grid_hidden", .type = EPAR_FIELD_INT, .offset = offsetof(AC, grid_hidden), .lo = 4, .hi = 1 << 20,
     .def = 64, .help = "grid: width"},
    {.key = "grid_batch", .type = EPAR_FIELD_INT, .offset = offsetof(AC, grid_batch), .lo = 1, .hi = 1 << 20, .def = 2,
     .help = "grid: inputs per seed"},
    {.key = "grid_runs", .type = EPAR_FIELD_INT, .offset = offsetof(AC, grid_runs), .lo = 1, .hi = 1 << 20, .def = 1,
     .help = "grid: runs per seed"},
    {.key = "dropout_in_grid", .type = EPAR_FIELD_BOOL, .offset = offsetof(AC, dropout_in_grid), .def = 0,
     .help = "grid: Dropout on"},
    {.key = "when_hidden", .type = EPAR_FIELD_INT, .offset = offsetof(AC, when_hidden), .lo = 1, .hi = 1 << 20,
     .def = 64, .help = "when-to-use: width"},
    {.key = "when_batch", .type = EPAR_FIELD_INT, .offset = offsetof(AC, when_batch), .lo = 1, .hi = 1 << 20, .def = 1,
     .help = "when-to-use: inputs per seed"},
    {.key = "when_local_window", .type = EPAR_FIELD_INT, .offset = offsetof(AC, when_window), .lo = 0, .hi = 1 << 20,
     .def = 1, .help = "when-to-use: local window"},
    {.key = "when_noise_sd", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(AC, when_noise_sd), .def = 1.0,
     .flags = EPAR_FIELD_NONNEG, .help = "when-to-use: noise sd"},
    {.key = "when_content_corr", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(AC, when_content_corr), .def = 0.9,
     .flags = EPAR_FIELD_NONNEG, .help = "when-to-use: content correlation"},
    {.key = "when_lengths", .type = EPAR_FIELD_ILIST, .offset = offsetof(AC, when_lengths),
     .count_offset = offsetof(AC, n_when), .max = EPAR_MAX_LIST, .lo = 2, .hi = 1 << 20,
     .help = "when-to-use: sequence lengths"},
    {0}};
#undef AC

enum { COND_CLEAN = EPAR_ADP_CLEAN, COND_SHUFFLED = EPAR_ADP_SHUFFLED, COND_NOISY = EPAR_ADP_NOISY,
       N_COND = EPAR_ADP_NCOND };
const char *const epar_adaptive_cond_name[N_COND] = {"clean", "shuffled", "noisy"};
const enum epar_form epar_adaptive_when_form[3] = {EPAR_FORM_NONE, EPAR_FORM_BASIC, EPAR_FORM_ENHANCED};
#define when_forms epar_adaptive_when_form

/* ---- configuration ---- */

int epar_exp_adaptive_config(const struct epar_protocol *p, struct epar_adaptive_cfg *cfg)
{
    static const double ga[] = {0.5, 1, 1.5, 2, 2.5}, gb[] = {1, 1.5, 2, 2.5, 3};
    static const int wl[] = {32, 64, 128, 256, 512, 1024, 2048};
    epar_fields_defaults(adaptive_fields, cfg);
    cfg->n_grid_alpha = 5;
    cfg->n_grid_beta = 5;
    memcpy(cfg->grid_alpha, ga, sizeof ga);
    memcpy(cfg->grid_beta, gb, sizeof gb);
    cfg->n_when = 7;
    memcpy(cfg->when_lengths, wl, sizeof wl);
    const char *E = "adaptive", *keys[40];
    epar_fields_keys(adaptive_fields, NULL, keys, 40);
    int st = epar_protocol_check_keys(p, E, keys);
    if (!st) st = epar_protocol_obj_fields(p, epar_protocol_section(p, E), "$.experiments.adaptive", adaptive_fields, cfg);
    return st;
}

int epar_exp_adaptive_check(const struct epar_adaptive_cfg *c)
{
    if (c->prm.hidden < 4) return epar_err_set(EPAR_EINVAL, "hidden must be >= 4 for the adaptive modules, got '%d'", c->prm.hidden);
    if (!(c->dropout >= 0 && c->dropout < 1)) return epar_err_set(EPAR_EINVAL, "dropout must be in [0, 1), got '%g'", c->dropout);
    if (c->grid_length < 1) return epar_err_set(EPAR_EINVAL, "grid length must be >= 1, got '%d'", c->grid_length);
    if (c->grid_hidden < 4) return epar_err_set(EPAR_EINVAL, "grid hidden must be >= 4, got '%d'", c->grid_hidden);
    if (c->grid_batch < 1) return epar_err_set(EPAR_EINVAL, "grid batch must be >= 1, got '%d'", c->grid_batch);
    for (int i = 0; i < c->n_grid_alpha; i++)
        if (!(c->grid_alpha[i] > 0) || !isfinite(c->grid_alpha[i]))
            return epar_err_set(EPAR_EINVAL, "grid alpha values must be finite numbers > 0, got '%g'", c->grid_alpha[i]);
    for (int i = 0; i < c->n_grid_beta; i++)
        if (!(c->grid_beta[i] >= 0) || !isfinite(c->grid_beta[i]))
            return epar_err_set(EPAR_EINVAL, "grid beta values must be finite numbers >= 0, got '%g'", c->grid_beta[i]);
    for (int i = 0; i < c->n_when; i++)
        if (c->when_lengths[i] < 2)
            return epar_err_set(EPAR_EINVAL, "when-to-use lengths must be integers >= 2, got '%d'", c->when_lengths[i]);
    if (c->when_hidden < 1) return epar_err_set(EPAR_EINVAL, "when-to-use hidden must be >= 1, got '%d'", c->when_hidden);
    if (c->when_batch < 1) return epar_err_set(EPAR_EINVAL, "when-to-use batch must be >= 1, got '%d'", c->when_batch);
    if (c->when_window < 0) return epar_err_set(EPAR_EINVAL, "local window must be >= 0, got '%d'", c->when_window);
    if (!(c->when_noise_sd >= 0) || !isfinite(c->when_noise_sd))
        return epar_err_set(EPAR_EINVAL, "noise sd must be a finite number >= 0, got '%g'", c->when_noise_sd);
    if (!(c->when_content_corr >= 0 && c->when_content_corr < 1))
        return epar_err_set(EPAR_EINVAL, "content correlation must be in [0, 1), got '%g'", c->when_content_corr);
    /* memory: the largest per-thread matrices */
    double big = 0;
    for (int i = 0; i < c->n_when; i++) {
        double m = (double)c->when_lengths[i] * c->when_lengths[i] * 8.0 +
                   3.0 * c->when_batch * c->when_lengths[i] * c->when_hidden * 8.0;
        if (m > big) big = m;
    }
    double main_mem = (double)c->prm.length * c->prm.length * 8.0 * 4 +
                      (double)c->prm.batch * c->prm.length * (c->prm.hidden + 8) * 8.0;
    double threads = omp_get_max_threads();
    if (big * threads > 8e9 || main_mem * threads > 8e9) {
        epar_err_set(EPAR_ENOMEM, "size does not fit: adaptive needs %.1f GB with %d threads",
                     (big > main_mem ? big : main_mem) * threads / 1e9, (int)threads);
        epar_err_hint("reduce --length, --batch or --when-lengths, or use fewer --jobs");
        return EPAR_ENOMEM;
    }
    return EPAR_OK;
}

/* ---- one-pass row metrics (when-to-use) ---- */

void epar_exp_adaptive_row_metrics(const double *S, int L, const struct epar_posfx *fx, double inv_temp, int window,
                                   const double *I, double *work, struct epar_adaptive_rowstats *out)
{
    double *m = work, *z = work + L, *V = work + 2 * (size_t)L;
    for (int d = 0; d < L; d++) m[d] = (fx->form == EPAR_FORM_NONE ? 1.0 : epar_posfx_value(fx, d, L)) * inv_temp;
    double H = 0, Dist = 0, W = 0;
    for (int i = 0; i < L; i++) {
        const double *s = S + (size_t)i * L;
        double M = -INFINITY;
        for (int j = 0; j < L; j++) {
            double v = s[j] * m[j > i ? j - i : i - j];
            z[j] = v;
            if (v > M) M = v;
        }
        double Z = 0, ez = 0, dist = 0, loc = 0, val = 0;
        for (int j = 0; j < L; j++) {
            int d = j > i ? j - i : i - j;
            double u = z[j] - M, p = exp(u);
            Z += p;
            ez += p * u;
            dist += p * d;
            if (d <= window) loc += p;
            val += p * I[j];
        }
        H += log(Z) - ez / Z;   /* -sum p ln p with p = e^u / Z */
        Dist += dist / Z;
        W += loc / Z;
        V[i] = val / Z;
    }
    out->entropy = H / L;
    out->distance = Dist / L;
    out->local = W / L;
    /* rows sum to 1, so the reference's "actual" scores (mean_j A_ij) I_i are I / L: a = argmax I */
    struct epar_metric_optimal mo;
    epar_metric_consistency(V, I, L, &mo);
    out->consistency = mo.consistency;
}

/* ---- the adaptive forward pass ---- */

/* Per-thread state for one size (L, D, B). A zeroed struct is safe to free. */
struct adp {
    struct epar_exp_model em;       /* layer (E, Wq, Wk ...), cfg, P, ws.x/Q/K */
    struct epar_model_adaptive am;
    double *X;      /* (B,L,D) */
    double *tw;     /* (B,D) */
    double *c;      /* (L) */
    double *probs;  /* (L,C) */
    double *f;      /* (L) */
    double *S;      /* (L,L) scores of one head */
    double *A;      /* (L,L) head-averaged attention */
    double *tp;     /* (T) */
    double *mws;    /* model workspace */
};

static void adp_free(struct adp *a)
{
    epar_exp_model_free(&a->em);
    epar_model_adaptive_free(&a->am);
    free(a->X); free(a->tw); free(a->c); free(a->probs); free(a->f); free(a->S); free(a->A); free(a->tp);
    free(a->mws);
    memset(a, 0, sizeof *a);
}

static int adp_alloc(struct adp *a, const struct epar_adaptive_cfg *cfg, const struct epar_params *prm)
{
    memset(a, 0, sizeof *a);
    int L = prm->length, D = prm->hidden, B = prm->batch;
    int st = epar_exp_model_alloc(&a->em, prm);
    if (st) {
        memset(a, 0, sizeof *a);
        return st;
    }
    if ((st = epar_model_adaptive_alloc(&a->am, D, cfg->tasks, cfg->task_dim, cfg->content_types, cfg->dropout))) {
        adp_free(a);
        return st;
    }
    size_t LL = (size_t)L * L;
    a->X = EPAR_MALLOC((size_t)B * L * D * sizeof *a->X);
    a->tw = EPAR_MALLOC((size_t)B * D * sizeof *a->tw);
    a->c = EPAR_MALLOC((size_t)L * sizeof *a->c);
    a->probs = EPAR_MALLOC((size_t)L * cfg->content_types * sizeof *a->probs);
    a->f = EPAR_MALLOC((size_t)L * sizeof *a->f);
    a->S = EPAR_MALLOC(LL * sizeof *a->S);
    a->A = EPAR_MALLOC(LL * sizeof *a->A);
    a->tp = EPAR_MALLOC((size_t)cfg->tasks * sizeof *a->tp);
    a->mws = EPAR_MALLOC(epar_model_adaptive_ws_size(&a->am, L > B ? L : B) * sizeof *a->mws);
    if (!a->X || !a->tw || !a->c || !a->probs || !a->f || !a->S || !a->A || !a->tp || !a->mws) {
        adp_free(a);
        return epar_err_set(EPAR_ENOMEM, "out of memory for the adaptive model (length %d, hidden %d)", L, D);
    }
    return EPAR_OK;
}

/* Weights of run `wrun`, data and task ids of run `run` under `seed`; ids (B). Returns the EXTRA stream
 * (for dropout) or NULL. */
static gsl_rng *adp_draw(struct adp *a, const struct epar_params *prm, int tasks, unsigned long seed,
                         unsigned long wrun, unsigned long run, int *ids)
{
    gsl_rng *r = epar_rng_alloc(seed, wrun, EPAR_RNG_WEIGHTS);
    if (!r) return NULL;
    epar_attn_layer_init(&a->em.layer, r);
    epar_model_adaptive_init(&a->am, r);
    epar_rng_free(r);
    if (epar_exp_data(prm, seed, run, a->X)) return NULL;
    gsl_rng *x = epar_rng_alloc(seed, run, EPAR_RNG_EXTRA);
    if (!x) return NULL;
    for (int b = 0; b < prm->batch; b++) ids[b] = (int)gsl_rng_uniform_int(x, (unsigned long)tasks);
    epar_model_task_weights(&a->am, ids, prm->batch, a->tw, a->mws);
    return x;
}

/* x = X_b + E, then Q, K into em.ws. */
static void adp_project(struct adp *a, int b)
{
    int L = a->em.cfg.L, D = a->em.cfg.D;
    size_t LD = (size_t)L * D;
    const double *Xb = a->X + (size_t)b * LD;
    for (size_t t = 0; t < LD; t++) a->em.ws.x[t] = Xb[t] + a->em.layer.E[t];
    struct epar_model_linear q = {D, D, a->em.layer.Wq, a->em.layer.bq}, k = {D, D, a->em.layer.Wk, a->em.layer.bk};
    epar_model_linear_forward(&q, a->em.ws.x, L, a->em.ws.Q);
    epar_model_linear_forward(&k, a->em.ws.x, L, a->em.ws.K);
}

/* A (L,L) = head average of softmax(fuse(S_h * P)/T) for item with task scalar t and content a->c;
 * P == NULL: no position effect. Returns the mean fusion weight. */
static double adp_attend(struct adp *a, const double *P, double t)
{
    const struct epar_attn_cfg *cfg = &a->em.cfg;
    int L = cfg->L, D = cfg->D, H = cfg->heads, dk = D / H;
    size_t LL = (size_t)L * L;
    double fsum = 0;
    for (int h = 0; h < H; h++) {
        double *S = H == 1 ? a->A : a->S;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, dk, cfg->scale, a->em.ws.Q + h * dk, D,
                    a->em.ws.K + h * dk, D, 0.0, S, L);
        if (P)
            for (size_t q = 0; q < LL; q++) S[q] *= P[q];
        epar_model_fuse(&a->am, S, L, t, a->c, a->f, a->mws);
        fsum += gsl_stats_mean(a->f, 1, (size_t)L);
        epar_attn_softmax_rows(cfg, NULL, h, S);
        if (H > 1) {
            if (h == 0) memcpy(a->A, S, LL * sizeof *S);
            else for (size_t q = 0; q < LL; q++) a->A[q] += S[q];
        }
    }
    if (H > 1)
        for (size_t q = 0; q < LL; q++) a->A[q] /= H;
    return fsum / H;
}

/* ---- main experiment, in named steps: set up, iterate (one job per seed x run), reduce, metrics table, type
 * counts, long tables, the figures' matrices ---- */

struct main_job {
    double *ent, *ent_none;     /* (B,L) reference entropy per row, EPAR and none */
    double *tw;                 /* (B,D) */
    double *c;                  /* (B,L) */
    int *types;                 /* (B,L) argmax content type */
    int *ids, *cls;             /* (B) given task id, classifier argmax */
    double fusion;              /* mean fusion weight */
};

struct main_run {
    const struct epar_adaptive_cfg *cfg;
    const struct epar_params *prm;
    int L, D, B, R, S, C, T, J;
    size_t LL, BL;
    struct main_job *jobs;      /* (J) slots into the result's arrays */
    double *A0;                 /* (L,L) first seed, last run, item 0: the figures */
};

static void stats4(const double *x, size_t n, double *mean, double *sd, double *mn, double *mx)
{
    epar_stats_mean_sd(x, n, mean, sd);  /* sample sd (unbiased, as torch.std) */
    gsl_stats_minmax(mn, mx, x, 1, n);
}

/* sizes, and every job's slots carved from two blocks */
static int main_setup(struct main_run *c, const struct epar_adaptive_cfg *cfg, struct epar_adaptive_result *res)
{
    memset(c, 0, sizeof *c);
    c->cfg = cfg;
    const struct epar_params *prm = c->prm = &cfg->prm;
    int L = c->L = prm->length, D = c->D = prm->hidden, B = c->B = prm->batch, R = c->R = prm->runs;
    int S = c->S = prm->n_seeds;
    c->C = cfg->content_types;
    c->T = cfg->tasks;
    int J = c->J = S * R;
    size_t LL = c->LL = (size_t)L * L, BL = c->BL = (size_t)B * L;
    res->L = L; res->D = D; res->B = B; res->S = S; res->R = R; res->C = c->C; res->T = c->T; res->J = J;
    struct main_job *jobs = c->jobs = EPAR_CALLOC((size_t)J, sizeof *jobs);
    res->ent = EPAR_MALLOC((size_t)J * BL * sizeof *res->ent);
    res->ent_none = EPAR_MALLOC((size_t)J * BL * sizeof *res->ent_none);
    res->content = EPAR_MALLOC((size_t)J * BL * sizeof *res->content);
    res->tw = EPAR_MALLOC((size_t)J * B * D * sizeof *res->tw);
    res->types = EPAR_MALLOC((size_t)J * BL * sizeof *res->types);
    res->ids = EPAR_MALLOC((size_t)J * B * sizeof *res->ids);
    res->cls = EPAR_MALLOC((size_t)J * B * sizeof *res->cls);
    c->A0 = res->A0 = EPAR_MALLOC(LL * sizeof *c->A0);
    res->key_stats = EPAR_MALLOC(4 * (size_t)L * sizeof *res->key_stats);
    if (!jobs || !res->ent || !res->ent_none || !res->content || !res->tw || !res->types || !res->ids || !res->cls ||
        !c->A0 || !res->key_stats)
        return EPAR_ENOMEM;
    for (int j = 0; j < J; j++) {
        jobs[j].ent = res->ent + j * BL; jobs[j].ent_none = res->ent_none + j * BL; jobs[j].c = res->content + j * BL;
        jobs[j].tw = res->tw + (size_t)j * B * D;
        jobs[j].types = res->types + j * BL; jobs[j].ids = res->ids + (size_t)j * B; jobs[j].cls = res->cls + (size_t)j * B;
    }
    return EPAR_OK;
}

static void main_run_free(struct main_run *c)
{
    free(c->jobs); /* the rest belongs to the result */
}

/* job j = (seed, run): draw the modules, data and task ids; per item the content estimates, the classifiers and
 * the row entropies with and without P; 0 or 1 (failed) */
static int main_run_job(struct main_run *c, int j, struct adp *a)
{
    const struct epar_params *prm = c->prm;
    int L = c->L, D = c->D, B = c->B, R = c->R, C = c->C, T = c->T;
    size_t LL = c->LL;
    struct main_job *o = &c->jobs[j];
    /* as the reference: one model per seed, reused by its repetitions (fresh data each) */
    gsl_rng *x = adp_draw(a, prm, T, prm->seeds[j / R], 0, (unsigned long)(j % R), o->ids);
    if (!x) return 1;
    epar_rng_free(x);   /* dropout is off in the main experiment */
    memcpy(o->tw, a->tw, (size_t)B * D * sizeof *o->tw);
    double fsum = 0;
    const double *P = prm->form == EPAR_FORM_NONE ? NULL : a->em.P;
    for (int b = 0; b < B; b++) {
        adp_project(a, b);
        double t = gsl_stats_mean(a->tw + (size_t)b * D, 1, (size_t)D);
        epar_model_content_importance(&a->am, a->em.ws.x, L, NULL, a->c, a->mws);
        memcpy(o->c + (size_t)b * L, a->c, (size_t)L * sizeof *a->c);
        epar_model_content_types(&a->am, a->em.ws.x, L, a->probs, a->mws);
        for (int i = 0; i < L; i++)
            o->types[(size_t)b * L + i] =
                (int)epar_metric_argmax_tied(a->probs + (size_t)i * C, (size_t)C, EPAR_METRIC_TIE_RTOL);
        epar_model_task_classify(&a->am, a->em.ws.x, L, a->tp, a->mws);
        o->cls[b] = (int)epar_metric_argmax_tied(a->tp, (size_t)T, EPAR_METRIC_TIE_RTOL);
        fsum += adp_attend(a, P, t);
        epar_metric_entropy_ref_rows(a->A, L, o->ent + (size_t)b * L);
        if (j == R - 1 && b == 0) memcpy(c->A0, a->A, LL * sizeof *c->A0); /* first seed, last run */
        adp_attend(a, NULL, t);
        epar_metric_entropy_ref_rows(a->A, L, o->ent_none + (size_t)b * L);
    }
    o->fusion = fsum / B;
    return 0;
}

static int main_iterate(struct main_run *c)
{
    struct epar_err_carry carry = EPAR_ERR_CARRY_INIT; /* a worker's message, to the caller */
#pragma omp parallel
    {
        struct adp a;
        int ok = adp_alloc(&a, c->cfg, c->prm) == EPAR_OK;
        if (!ok) epar_err_keep(&carry, EPAR_ENOMEM, -1);
#pragma omp for schedule(dynamic, 1)
        for (int j = 0; j < c->J; j++)
            if (ok && main_run_job(c, j, &a))
                epar_err_keep(&carry, epar_err_set(EPAR_ENOMEM, "out of memory running adaptive (length %d)", c->L), j);
        adp_free(&a);
    }
    return epar_err_carried(&carry);
}

/* the values of adaptive_metrics.csv: per run; per seed the mean over runs, min of mins, max of maxes, counts
 * summed; across seeds the mean and sample sd of the per-seed rows. The summary values of the result. */
static int main_reduce(struct main_run *c, struct epar_adaptive_result *res)
{
    const struct main_job *jobs = c->jobs;
    int B = c->B, D = c->D, R = c->R, S = c->S, C = c->C, J = c->J;
    size_t BL = c->BL;
    const int NV = EPAR_ADP_NMETRIC + 1;  /* numeric columns before the counts */
    const int nv = res->nv = NV - 1 + C;  /* values per row */
    double *rowv = res->rowv = EPAR_MALLOC((size_t)(J + S + 2) * nv * sizeof *rowv);
    if (!rowv) return EPAR_ENOMEM;
    /* per run */
    for (int j = 0; j < J; j++) {
        double *v = rowv + (size_t)j * nv;
        v[0] = gsl_stats_mean(jobs[j].ent, 1, BL);
        v[1] = gsl_stats_mean(jobs[j].ent_none, 1, BL);
        stats4(jobs[j].tw, (size_t)B * D, &v[2], &v[3], &v[4], &v[5]);
        stats4(jobs[j].c, BL, &v[6], &v[7], &v[8], &v[9]);
        v[10] = jobs[j].fusion;
        for (int k = 0; k < C; k++) v[NV - 1 + k] = 0;
        for (size_t q = 0; q < BL; q++) v[NV - 1 + jobs[j].types[q]] += 1;
    }
    /* per seed: mean over runs, min of mins, max of maxes, counts summed */
    double *seedv = rowv + (size_t)J * nv;
    for (int s = 0; s < S; s++) {
        double *v = seedv + (size_t)s * nv;
        for (int k = 0; k < nv; k++) {
            double acc = 0, mn = INFINITY, mx = -INFINITY;
            for (int r = 0; r < R; r++) {
                double u = rowv[(size_t)(s * R + r) * nv + k];
                acc += u;
                if (u < mn) mn = u;
                if (u > mx) mx = u;
            }
            v[k] = (k == 4 || k == 8) ? mn : (k == 5 || k == 9) ? mx : (k >= NV - 1) ? acc : acc / R;
        }
    }
    /* across seeds: mean and sample sd of the per-seed rows */
    double *mean = seedv + (size_t)S * nv, *sdv = mean + nv, *tmp = EPAR_MALLOC((size_t)S * sizeof *tmp);
    if (!tmp) return EPAR_ENOMEM;
    for (int k = 0; k < nv; k++) {
        for (int s = 0; s < S; s++) tmp[s] = seedv[(size_t)s * nv + k];
        epar_stats_mean_sd(tmp, (size_t)S, &mean[k], &sdv[k]);
    }
    free(tmp);
    res->entropy_mean = mean[0]; res->entropy_sd = sdv[0];
    res->entropy_none_mean = mean[1]; res->entropy_none_sd = sdv[1];
    res->task_mean = mean[2]; res->task_sd = sdv[2];
    res->content_mean = mean[6]; res->content_sd = sdv[6];
    res->fusion_mean = mean[10];
    return EPAR_OK;
}

/* the counts of task_types.csv and content_types.csv over every item of every run and seed */
static int main_types(const struct main_run *c, struct epar_adaptive_result *res)
{
    const struct main_job *jobs = c->jobs;
    int B = c->B, C = c->C, T = c->T, J = c->J;
    size_t BL = c->BL;
    long *given = res->given = EPAR_CALLOC((size_t)T, sizeof *given), *pred = res->pred = EPAR_CALLOC((size_t)T, sizeof *pred);
    long *ct = res->ct = EPAR_CALLOC((size_t)C, sizeof *ct);
    if (!given || !pred || !ct) return EPAR_ENOMEM;
    for (int j = 0; j < J; j++) {
        for (int b = 0; b < B; b++) { given[jobs[j].ids[b]]++; pred[jobs[j].cls[b]]++; }
        for (size_t q = 0; q < BL; q++) ct[jobs[j].types[q]]++;
    }
    return EPAR_OK;
}

static int run_main(const struct epar_adaptive_cfg *cfg, struct epar_adaptive_result *res)
{
    struct main_run c;
    int st = main_setup(&c, cfg, res);
    if (!st) st = main_iterate(&c);
    if (!st) st = main_reduce(&c, res);
    if (!st) st = main_types(&c, res);
    if (!st) epar_metric_key_stats(c.A0, c.L, res->key_stats, res->key_stats + c.L, res->key_stats + 2 * c.L,
                                   res->key_stats + 3 * c.L);
    main_run_free(&c);
    return st;
}

/* ---- sensitivity grid ---- */

static int grid_oom(void) { return epar_err_set(EPAR_ENOMEM, "out of memory in the adaptive grid"); }

static int run_grid(const struct epar_adaptive_cfg *cfg, struct epar_adaptive_result *res)
{
    struct epar_params g = cfg->prm;
    g.length = cfg->grid_length;
    g.hidden = cfg->grid_hidden;
    g.batch = cfg->grid_batch;
    g.heads = 1;    /* the reference's grid: one head over the full width, whatever the preset */
    int L = g.length, D = g.hidden, B = g.batch, R = cfg->grid_runs, S = g.n_seeds;
    int NA = cfg->n_grid_alpha, NB = cfg->n_grid_beta, NC = NA * NB, J = S * R;
    size_t LL = (size_t)L * L;
    /* per job and cell: entropy, task weight mean, content importance mean, fusion weight; plus none entropy */
    double *val = EPAR_CALLOC((size_t)J * (4 * (size_t)NC + 1), sizeof *val);
    double *Ps = EPAR_MALLOC((size_t)NC * LL * sizeof *Ps);
    int st = EPAR_ENOMEM;
    if (!val || !Ps) goto done;
    for (int ia = 0; ia < NA; ia++)
        for (int ib = 0; ib < NB; ib++) {
            struct epar_posfx fx = {g.form, cfg->grid_alpha[ia], cfg->grid_beta[ib], g.gamma};
            double *P = Ps + (size_t)(ia * NB + ib) * LL;
            if (g.form == EPAR_FORM_NONE) for (size_t q = 0; q < LL; q++) P[q] = 1.0;
            else epar_posfx_matrix(&fx, L, P);
        }
    struct epar_err_carry carry = EPAR_ERR_CARRY_INIT; /* a worker's message, to the caller */
#pragma omp parallel
    {
        struct adp a;
        memset(&a, 0, sizeof a);
        int *ids = EPAR_MALLOC((size_t)B * sizeof *ids);
        double *Hrow = EPAR_MALLOC((size_t)L * sizeof *Hrow);
        int ok = ids && Hrow && adp_alloc(&a, cfg, &g) == EPAR_OK;
        if (!ok) epar_err_keep(&carry, EPAR_ENOMEM, -1);
#pragma omp for schedule(dynamic, 1)
        for (int j = 0; j < J; j++) {
            if (!ok) continue;
            double *v = val + (size_t)j * (4 * (size_t)NC + 1);
            gsl_rng *x = adp_draw(&a, &g, cfg->tasks, g.seeds[j / R], (unsigned long)(j % R), (unsigned long)(j % R), ids);
            if (!x) { epar_err_keep(&carry, grid_oom(), j); continue; }
            for (int b = 0; b < B; b++) {
                adp_project(&a, b);
                double t = gsl_stats_mean(a.tw + (size_t)b * D, 1, (size_t)D);
                /* one content estimate per item, shared by all cells (dropout mask included) */
                epar_model_content_importance(&a.am, a.em.ws.x, L, cfg->dropout_in_grid ? x : NULL, a.c, a.mws);
                double cm = gsl_stats_mean(a.c, 1, (size_t)L);
                for (int k = 0; k < NC; k++) {
                    double fm = adp_attend(&a, g.form == EPAR_FORM_NONE ? NULL : Ps + (size_t)k * LL, t);
                    epar_metric_entropy_ref_rows(a.A, L, Hrow);
                    v[4 * k] += gsl_stats_mean(Hrow, 1, (size_t)L) / B;
                    v[4 * k + 1] += t / B;
                    v[4 * k + 2] += cm / B;
                    v[4 * k + 3] += fm / B;
                }
                adp_attend(&a, NULL, t);
                epar_metric_entropy_ref_rows(a.A, L, Hrow);
                v[4 * NC] += gsl_stats_mean(Hrow, 1, (size_t)L) / B;
            }
            epar_rng_free(x);
        }
        adp_free(&a);
        free(ids); free(Hrow);
    }
    if ((st = epar_err_carried(&carry))) goto done;
    st = EPAR_ENOMEM;
    res->grid_seeds = S;
    res->grid_dropout = cfg->dropout_in_grid && cfg->dropout > 0;
    res->grid_mean = EPAR_MALLOC((size_t)NC * EPAR_ADP_GRID_N * sizeof *res->grid_mean);
    res->grid_sd = EPAR_MALLOC((size_t)NC * EPAR_ADP_GRID_N * sizeof *res->grid_sd);
    double *per = EPAR_MALLOC(5 * (size_t)S * sizeof *per);
    if (!per || !res->grid_mean || !res->grid_sd) { free(per); goto done; }
    for (int k = 0; k < NC; k++) {
        /* per seed: mean over runs, then mean and sample sd across seeds */
        double *m = res->grid_mean + (size_t)k * EPAR_ADP_GRID_N, *sd = res->grid_sd + (size_t)k * EPAR_ADP_GRID_N;
        for (int q = 0; q < 5; q++) {
            for (int s = 0; s < S; s++) {
                double acc = 0;
                for (int r = 0; r < R; r++) {
                    const double *v = val + (size_t)(s * R + r) * (4 * (size_t)NC + 1);
                    acc += q < 4 ? v[4 * k + q] : v[4 * k] - v[4 * NC];
                }
                per[(size_t)q * S + s] = acc / R;
            }
            epar_stats_mean_sd(per + (size_t)q * S, (size_t)S, &m[q], &sd[q]);
        }
    }
    free(per);
    st = EPAR_OK;
done:
    free(val); free(Ps);
    return st;
}

/* ---- when-to-use sweep ---- */

static int when_job(const struct epar_adaptive_cfg *cfg, unsigned long seed, int k, double **Sbuf, size_t *Scap,
                    double *out /* (N_COND, 3, 4) */)
{
    const struct epar_params *prm = &cfg->prm;
    int L = cfg->when_lengths[k], D = cfg->when_hidden, B = cfg->when_batch;
    size_t LD = (size_t)L * D, LL = (size_t)L * L;
    if (*Scap < LL) {
        free(*Sbuf);
        *Scap = 0;
        if (!(*Sbuf = EPAR_MALLOC(LL * sizeof **Sbuf))) return EPAR_ENOMEM;
        *Scap = LL;
    }
    struct epar_layer layer;
    if (epar_attn_layer_alloc(&layer, L, D, 1)) return EPAR_ENOMEM;
    double *X = EPAR_MALLOC((size_t)B * LD * sizeof *X), *N = EPAR_MALLOC((size_t)B * LD * sizeof *N);
    double *x = EPAR_MALLOC(LD * sizeof *x), *Q = EPAR_MALLOC(LD * sizeof *Q), *K = EPAR_MALLOC(LD * sizeof *K);
    double *I = EPAR_MALLOC((size_t)L * sizeof *I), *Ip = EPAR_MALLOC((size_t)L * sizeof *Ip), *work = EPAR_MALLOC(3 * (size_t)L * sizeof *work);
    size_t *perm = EPAR_MALLOC((size_t)B * L * sizeof *perm);
    gsl_rng *rw = epar_rng_alloc(seed, (unsigned long)k, EPAR_RNG_WEIGHTS);
    gsl_rng *rd = epar_rng_alloc(seed, (unsigned long)k, EPAR_RNG_DATA);
    gsl_rng *re = epar_rng_alloc(seed, (unsigned long)k, EPAR_RNG_EXTRA);
    int st = EPAR_ENOMEM;
    if (!X || !N || !x || !Q || !K || !I || !Ip || !work || !perm || !rw || !rd || !re) goto done;
    epar_attn_layer_init(&layer, rw);
    /* sequential content: per feature an AR(1) along positions with unit variance and lag-1 correlation rho */
    double rho = cfg->when_content_corr, innov = sqrt(1 - rho * rho);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < L; i++)
            for (int d = 0; d < D; d++) {
                size_t q = (size_t)b * LD + (size_t)i * D + d;
                double e = gsl_ran_gaussian_ziggurat(rd, 1.0);
                X[q] = i == 0 ? e : rho * X[q - D] + innov * e;
            }
    epar_rng_normal(re, N, (size_t)B * LD, cfg->when_noise_sd);
    for (int b = 0; b < B; b++) epar_rng_permutation(re, perm + (size_t)b * L, (size_t)L);
    for (int j = 0; j < L; j++) I[j] = 0.5 + 0.5 * sin(2 * M_PI * j / L);
    epar_imp_minmax(I, (size_t)L);
    memset(out, 0, N_COND * 3 * 4 * sizeof *out);
    struct epar_model_linear q = {D, D, layer.Wq, layer.bq}, kk = {D, D, layer.Wk, layer.bk};
    double scale = 1.0 / sqrt((double)D), inv_temp = 1.0 / prm->temperature;
    for (int c = 0; c < N_COND; c++)
        for (int b = 0; b < B; b++) {
            const double *Xb = X + (size_t)b * LD, *Nb = N + (size_t)b * LD;
            const size_t *pb = perm + (size_t)b * L;
            for (int i = 0; i < L; i++) {
                const double *src = Xb + (size_t)(c == COND_SHUFFLED ? pb[i] : (size_t)i) * D;
                for (int d = 0; d < D; d++)
                    x[(size_t)i * D + d] = src[d] + layer.E[(size_t)i * D + d] + (c == COND_NOISY ? Nb[(size_t)i * D + d] : 0.0);
                Ip[i] = c == COND_SHUFFLED ? I[pb[i]] : I[i];
            }
            epar_model_linear_forward(&q, x, L, Q);
            epar_model_linear_forward(&kk, x, L, K);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, D, scale, Q, D, K, D, 0.0, *Sbuf, L);
            for (int f = 0; f < 3; f++) {
                struct epar_posfx fx = {when_forms[f], prm->alpha, prm->beta, prm->gamma};
                struct epar_adaptive_rowstats rs;
                epar_exp_adaptive_row_metrics(*Sbuf, L, &fx, inv_temp, cfg->when_window, Ip, work, &rs);
                double *o = out + (c * 3 + f) * 4;
                o[0] += rs.entropy / B;
                o[1] += rs.distance / B;
                o[2] += rs.local / B;
                o[3] += rs.consistency / B;
            }
        }
    st = EPAR_OK;
done:
    epar_attn_layer_free(&layer);
    free(X); free(N); free(x); free(Q); free(K); free(I); free(Ip); free(work); free(perm);
    if (rw) epar_rng_free(rw);
    if (rd) epar_rng_free(rd);
    if (re) epar_rng_free(re);
    return st;
}

static int run_when(const struct epar_adaptive_cfg *cfg, struct epar_adaptive_result *res)
{
    const struct epar_params *prm = &cfg->prm;
    int S = prm->n_seeds, NL = cfg->n_when, J = S * NL;
    const int per = N_COND * 3 * 4;
    double *val = EPAR_MALLOC((size_t)J * per * sizeof *val);
    int *order = EPAR_MALLOC((size_t)J * sizeof *order);
    int st = EPAR_ENOMEM;
    if (!val || !order) goto done;
    /* largest lengths first so the long jobs do not end up last on one thread */
    int n = 0;
    for (int pass = 0; pass < NL; pass++) {
        int best = -1;
        for (int k = 0; k < NL; k++) {
            int taken = 0;
            for (int q = 0; q < n; q += S) taken |= order[q] % NL == k;
            if (!taken && (best < 0 || cfg->when_lengths[k] > cfg->when_lengths[best])) best = k;
        }
        for (int s = 0; s < S; s++) order[n++] = s * NL + best;
    }
    int failed = 0;
#pragma omp parallel reduction(| : failed)
    {
        double *Sbuf = NULL;
        size_t cap = 0;
#pragma omp for schedule(dynamic, 1)
        for (int q = 0; q < J; q++) {
            int j = order[q];
            if (failed) continue;
            if (when_job(cfg, prm->seeds[j / NL], j % NL, &Sbuf, &cap, val + (size_t)j * per)) failed = 1;
        }
        free(Sbuf);
    }
    if (failed) {
        st = epar_err_set(EPAR_ENOMEM, "out of memory in the when-to-use sweep");
        goto done;
    }
    size_t nw = (size_t)N_COND * 3 * NL * EPAR_ADP_WHEN_N;
    res->when_mean = EPAR_MALLOC(nw * sizeof *res->when_mean);
    res->when_sd = EPAR_MALLOC(nw * sizeof *res->when_sd);
    res->when_dmean = EPAR_MALLOC(nw * sizeof *res->when_dmean);
    res->when_dsd = EPAR_MALLOC(nw * sizeof *res->when_dsd);
    double *tmp = EPAR_MALLOC((size_t)S * sizeof *tmp);
    if (!res->when_mean || !res->when_sd || !res->when_dmean || !res->when_dsd || !tmp) { free(tmp); goto done; }
    for (int c = 0; c < N_COND; c++)
        for (int f = 0; f < 3; f++)
            for (int k = 0; k < NL; k++) {
                size_t row = ((size_t)(c * 3 + f) * NL + k) * EPAR_ADP_WHEN_N;
                double *m = res->when_mean + row, *sd = res->when_sd + row, *dm = res->when_dmean + row,
                       *dsd = res->when_dsd + row;
                for (int q = 0; q < 4; q++) {
                    for (int pass = 0; pass < 2; pass++) {
                        for (int s = 0; s < S; s++) {
                            const double *v = val + (size_t)(s * NL + k) * per;
                            tmp[s] = v[(c * 3 + f) * 4 + q] - (pass ? v[(c * 3 + 0) * 4 + q] : 0.0);
                        }
                        double mm, ss;
                        epar_stats_mean_sd(tmp, (size_t)S, &mm, &ss);
                        if (pass) { dm[q] = mm; dsd[q] = ss; } else { m[q] = mm; sd[q] = ss; }
                    }
                }
            }
    free(tmp);
    st = EPAR_OK;
done:
    free(val); free(order);
    return st;
}

int epar_exp_adaptive_run(const struct epar_adaptive_cfg *cfg, struct epar_adaptive_result *res)
{
    memset(res, 0, sizeof *res);
    int st = epar_exp_adaptive_check(cfg);
    if (!st) st = run_main(cfg, res);
    if (!st) st = run_grid(cfg, res);
    if (!st) st = run_when(cfg, res);
    if (st) epar_exp_adaptive_free(res);
    return st;
}

void epar_exp_adaptive_free(struct epar_adaptive_result *res)
{
    free(res->ent); free(res->ent_none); free(res->tw); free(res->content); free(res->types); free(res->ids);
    free(res->cls); free(res->rowv); free(res->given); free(res->pred); free(res->ct); free(res->A0);
    free(res->key_stats); free(res->grid_mean); free(res->grid_sd); free(res->when_mean); free(res->when_sd);
    free(res->when_dmean); free(res->when_dsd);
    memset(res, 0, sizeof *res);
}

static int adaptive_check_v(const void *cfg) { return epar_exp_adaptive_check(cfg); }

EPAR_EXPERIMENT(adaptive, "adaptive", "adaptive", adaptive_check_v);
