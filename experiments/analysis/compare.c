/* compare: every mechanism side by side (issue 7), the 2x2 ablation, extrapolation, and the checkable
 * measurements behind the checkable statements of seeds 001-004 (seed_checks.csv, compare_checks.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <omp.h>
#include "lib/err.h"
#include "lib/importance.h"
#include "lib/metrics.h"
#include "lib/stats.h"
#include "lib/rng.h"
#include "lib/sparse.h"
#include "experiments/common.h"
#include "experiments/analysis/compare.h"
#include "experiments/analysis/experiment.h"

/* the jobs are small BLAS calls run in parallel by OpenMP: one BLAS thread each avoids oversubscription */

/* experiments.compare: one row per scalar setting (default, range, help); the lists, mechanisms and set apart */
#define CC struct epar_compare_cfg
static const struct epar_field compare_fields[] = {
    {.key = "causal", .type = EPAR_FIELD_INT, .offset = offsetof(CC, causal), .lo = 0, .hi = 1, .def = 0,
     .help = "1: causal attention (look-ahead fixed patterns dropped)"},
    {.key = "local_window", .type = EPAR_FIELD_INT, .offset = offsetof(CC, local_window), .lo = 0, .hi = 1 << 20,
     .def = 2, .help = "|i-j| of the local-mass metric"},
    {.key = "extrapolation_length", .type = EPAR_FIELD_INT, .offset = offsetof(CC, extrap_length), .lo = 2,
     .hi = 1 << 16, .def = 64, .help = "training length of the extrapolation"},
    {.key = "ablation_beta", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(CC, ablation_beta), .def = 1.0,
     .flags = EPAR_FIELD_POSITIVE, .help = "beta of the ablation"},
    {.key = "table_length", .type = EPAR_FIELD_INT, .offset = offsetof(CC, table_length), .lo = 2, .hi = 256,
     .def = 12, .help = "length of the printed tables"},
    {.key = "claims_length", .type = EPAR_FIELD_INT, .offset = offsetof(CC, claims_length), .lo = 64, .hi = 1 << 16,
     .def = 2048, .help = "length of the seeds' claims"},
    {.key = "speed_head_dim", .type = EPAR_FIELD_INT, .offset = offsetof(CC, speed_head_dim), .lo = 1, .hi = 4096,
     .def = 64, .help = "head width of the kernel timings"},
    {.key = "speed_repeats", .type = EPAR_FIELD_INT, .offset = offsetof(CC, speed_repeats), .lo = 1, .hi = 1000,
     .def = 3, .help = "repeats of each timing"},
    {.key = "speed_tile", .type = EPAR_FIELD_INT, .offset = offsetof(CC, speed_tile), .lo = 0, .hi = 1 << 16, .def = 0,
     .help = "rows per tile of the structured kernels (0: default)"},
    {.key = "extrapolation_factors", .type = EPAR_FIELD_ILIST, .offset = offsetof(CC, factors),
     .count_offset = offsetof(CC, n_factors), .max = EPAR_COMPARE_MAX_FACTORS, .lo = 1, .hi = 64,
     .help = "extrapolation: lengths as multiples of the training length"},
    {.key = "speed_lengths", .type = EPAR_FIELD_ILIST, .offset = offsetof(CC, speed_lengths),
     .count_offset = offsetof(CC, n_speed), .max = EPAR_COMPARE_MAX_FACTORS, .lo = 1, .hi = 16384,
     .help = "lengths of the kernel timings"},
    {0}};
#undef CC
/* the mechanisms to compare, a comma-separated list of catalogue ids (checked by epar_exp_compare_select) */
struct compare_list {
    const char *mechanisms;
};
static const struct epar_field compare_list_fields[] = {
    {.key = "mechanisms", .type = EPAR_FIELD_STRING, .offset = offsetof(struct compare_list, mechanisms)},
    {0}};
static const char *const compare_extra[] = {"mechanisms", "set", NULL};

/* ------------------------------------------------------------------ configuration */

int epar_exp_compare_select(struct epar_compare_cfg *cfg, const char *list)
{
    cfg->n_mech = 0;
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", list);
    if (!buf[0]) return epar_err_set(EPAR_EINVAL, "empty mechanism list ''");
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        enum epar_mech_id id;
        int st = epar_mech_find(t, &id);
        if (st) return st;
        if (epar_mech_trained_only(id)) {
            epar_err_set(EPAR_EINVAL, "mechanism '%s' exists only as a trained model", t);
            epar_err_hint("train it with 'epar train --mechanism %s'; compare has no per-head form of it", t);
            return EPAR_EINVAL;
        }
        for (int k = 0; k < cfg->n_mech; k++)
            if (cfg->mech[k] == id) return epar_err_set(EPAR_EINVAL, "mechanism listed twice '%s'", t);
        cfg->mech[cfg->n_mech++] = id;
    }
    return EPAR_OK;
}

int epar_exp_compare_set(struct epar_compare_cfg *cfg, const char *assignment)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", assignment);
    char *eq = strchr(buf, '='), *dot = strchr(buf, '.');
    if (!eq || !dot || dot > eq) {
        epar_err_set(EPAR_EINVAL, "invalid --set '%s'", assignment);
        epar_err_hint("write mechanism.parameter=value, e.g. --set alibi.max_bias=8");
        return EPAR_EINVAL;
    }
    *dot = '\0';
    *eq = '\0';
    enum epar_mech_id id;
    int st = epar_mech_find(buf, &id);
    if (st) return st;
    char *end;
    double v = strtod(eq + 1, &end);
    if (!eq[1] || *end || !isfinite(v)) {
        epar_err_set(EPAR_EINVAL, "invalid value in --set '%s'", assignment);
        epar_err_hint("the value must be a finite number");
        return EPAR_EINVAL;
    }
    return epar_mech_set_param(id, cfg->p[id], dot + 1, v);
}

static int compare_set(void *cfg, const char *assignment) { return epar_exp_compare_set(cfg, assignment); }

int epar_exp_compare_config(const struct epar_protocol *proto, struct epar_compare_cfg *cfg)
{
    const char *E = "compare";
    for (int id = 0; id < EPAR_MECH_COUNT; id++) epar_mech_defaults((enum epar_mech_id)id, cfg->p[id]);
    cfg->n_mech = 0;   /* every mechanism with an analysis form (not the trained-only per-head mixes) */
    for (int id = 0; id < EPAR_MECH_COUNT; id++)
        if (!epar_mech_trained_only((enum epar_mech_id)id)) cfg->mech[cfg->n_mech++] = (enum epar_mech_id)id;
    epar_fields_defaults(compare_fields, cfg);
    cfg->n_factors = 4;
    for (int k = 0; k < 4; k++) cfg->factors[k] = 1 << k;
    cfg->n_speed = 3;
    for (int k = 0; k < 3; k++) cfg->speed_lengths[k] = 1024 << k;
    const char *keys[32];
    epar_fields_keys(compare_fields, compare_extra, keys, 32);
    int st = epar_protocol_check_keys(proto, E, keys);
    if (st) return st;
    struct compare_list list = {NULL};
    json_t *sec = epar_protocol_section(proto, E);
    if ((st = epar_protocol_obj_fields(proto, sec, "$.experiments.compare", compare_fields, cfg)) ||
        (st = epar_protocol_obj_fields(proto, sec, "$.experiments.compare", compare_list_fields, &list)))
        return st;
    if (list.mechanisms && (st = epar_exp_compare_select(cfg, list.mechanisms))) return epar_protocol_blame(proto, "$.experiments.compare.mechanisms");
    st = epar_exp_sets(proto, json_object_get(sec, "set"), "$.experiments.compare.set",
                       compare_set, cfg);
    if (st) return st;
    return EPAR_OK;
}

/* ------------------------------------------------------------------ the main comparison */

enum { M_ENT = EPAR_CMP_ENT, M_NENT = EPAR_CMP_NENT, M_DIST = EPAR_CMP_DIST, M_LOCAL = EPAR_CMP_LOCAL,
       M_SPARS = EPAR_CMP_SPARS, M_RMID = EPAR_CMP_RMID, M_RMAX = EPAR_CMP_RMAX, M_MI = EPAR_CMP_MI,
       M_EMPTY = EPAR_CMP_EMPTY, M_CONS = EPAR_CMP_CONS, M_RANK = EPAR_CMP_RANK, M_TIME = EPAR_CMP_TIME,
       M_RNAN = EPAR_CMP_RNAN, M_COUNT = EPAR_CMP_NM };

struct seed_data {
    struct epar_layer layer;
    double *X;      /* (B,L,D) */
    double *I;      /* (T,B,L) importance of every type */
};

static int seed_data_make(struct seed_data *sd, int L, int D, int B, unsigned long seed, int with_importance)
{
    memset(sd, 0, sizeof *sd);
    int st = epar_attn_layer_alloc(&sd->layer, L, D, 0);
    if (st) return st;
    gsl_rng *r = epar_rng_alloc(seed, 0, EPAR_RNG_WEIGHTS);
    if (!r) return EPAR_ENOMEM;
    epar_attn_layer_init(&sd->layer, r);
    epar_rng_free(r);
    sd->X = epar_err_alloc((size_t)B * L * D, sizeof *sd->X, "inputs");
    if (!sd->X) return EPAR_ENOMEM;
    if (!(r = epar_rng_alloc(seed, 0, EPAR_RNG_DATA))) return EPAR_ENOMEM;
    epar_rng_normal(r, sd->X, (size_t)B * L * D, 1.0);
    epar_rng_free(r);
    if (!with_importance) return EPAR_OK;
    sd->I = epar_err_alloc((size_t)EPAR_IMP_COUNT * B * L, sizeof *sd->I, "importance");
    if (!sd->I) return EPAR_ENOMEM;
    if (!(r = epar_rng_alloc(seed, 0, EPAR_RNG_IMPORTANCE))) return EPAR_ENOMEM;
    for (int t = 0; t < EPAR_IMP_COUNT; t++) {
        double *I = sd->I + (size_t)t * B * L;
        if (t == EPAR_IMP_NORM) epar_imp_norm(sd->X, B, L, D, I);
        else if ((st = epar_imp_generate((enum epar_imp_type)t, r, B, L, I))) break;
    }
    epar_rng_free(r);
    return st;
}

static void seed_data_free(struct seed_data *sd)
{
    epar_attn_layer_free(&sd->layer);
    free(sd->X);
    free(sd->I);
    memset(sd, 0, sizeof *sd);
}

/* The attention output O (L,D) of every head for one item X (L,D), each mechanism on the fastest kernel epar
 * has for it: with sws (mask mechanisms), Q, K and V = x W_V + b_V, then lib/sparse's structured kernel per head
 * (the L x L matrix is never formed); otherwise epar_mech_forward (A (H,L,L), what the metrics use), V, and one
 * dgemm O_h = A_h V_h per head. This is what time_us_per_row times. Fixed weights use no q, k: their values come
 * from X itself (compare's layer has no position embedding). */
static void attention_output(struct epar_mech *m, const struct epar_layer *layer, const double *X,
                             struct epar_attn_ws *ws, const struct epar_sparse_pattern *pat,
                             struct epar_sparse_ws *sws, double *A, double *V, double *O)
{
    int L = m->L, D = m->D, dk = m->dk;
    if (sws) {
        epar_attn_project(&m->cfg, layer, &m->mods, X, ws);
        epar_attn_values(&m->cfg, layer, ws->x, V);
        for (int h = 0; h < m->H; h++)
            epar_sparse_output(pat, ws->Q + h * dk, ws->K + h * dk, V + h * dk, D, dk, m->cfg.scale * m->cfg.inv_temp,
                               O + h * dk, D, sws);
        return;
    }
    epar_mech_forward(m, layer, X, A, ws, NULL);
    epar_attn_values(&m->cfg, layer, m->info->kind == EPAR_MK_FIXED ? X : ws->x, V);
    for (int h = 0; h < m->H; h++)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, dk, L, 1.0, A + (size_t)h * L * L, L, V + h * dk, D,
                    0.0, O + h * dk, D);
}

/* one (mechanism, seed) job: fills out[M_COUNT]; Abar0 (L,L) of item 0 if not NULL */
static int run_job(const struct epar_compare_cfg *cfg, enum epar_mech_id id, unsigned long seed, double *out,
                   double *Abar0)
{
    const struct epar_params *prm = &cfg->prm;
    int L = prm->length, D = prm->hidden, H = prm->heads, B = prm->batch;
    size_t LL = (size_t)L * L;
    struct seed_data sd;
    struct epar_mech m;
    struct epar_attn_ws ws = {0};
    struct epar_sparse_pattern pat;
    struct epar_sparse_ws sws = {0};
    double *A = NULL, *Abar = NULL, *V = NULL, *work = NULL, *Vo = NULL, *O = NULL;
    size_t *idx = NULL;
    int st = seed_data_make(&sd, L, D, B, seed, 1), sparse = 0;
    if (st) { seed_data_free(&sd); return st; }
    if ((st = epar_mech_init(&m, id, cfg->p[id], L, D, H, cfg->causal, seed))) { seed_data_free(&sd); return st; }
    A = EPAR_MALLOC((size_t)H * LL * sizeof *A);
    Abar = EPAR_MALLOC(LL * sizeof *Abar);
    V = EPAR_MALLOC((size_t)6 * L * sizeof *V);     /* epar_metric_optimal's work */
    work = EPAR_MALLOC(LL * sizeof *work);
    idx = EPAR_MALLOC(LL * sizeof *idx);
    Vo = EPAR_MALLOC((size_t)L * D * sizeof *Vo);
    O = EPAR_MALLOC((size_t)L * D * sizeof *O);
    if (m.info->kind == EPAR_MK_MASK && epar_sparse_has_kernel(id)) {
        if ((st = epar_sparse_pattern_from_mech(&m, &pat)) || (st = epar_sparse_ws_alloc(&sws, &pat, m.dk))) goto done;
        sparse = 1;
    }
    if (!A || !Abar || !V || !work || !idx || !Vo || !O || epar_attn_ws_alloc(&ws, L, D)) {
        st = epar_err_set(EPAR_ENOMEM, "out of memory in compare (length %d)", L);
        goto done;
    }
    memset(out, 0, M_COUNT * sizeof *out);
    int nrank[EPAR_IMP_COUNT] = {0};
    double time = 0;
    for (int b = 0; b < B; b++) {
        int empty = 0;
        epar_mech_forward(&m, &sd.layer, sd.X + (size_t)b * L * D, A, &ws, &empty);
        out[M_EMPTY] += (double)empty / B;
        double hm[EPAR_HEAD_COUNT];
        for (int h = 0; h < H; h++) {
            if ((st = epar_metric_head_summary(A + (size_t)h * LL, L, cfg->causal, cfg->local_window, hm))) goto done;
            out[M_ENT] += hm[EPAR_HEAD_ENT] / (B * H);
            out[M_NENT] += hm[EPAR_HEAD_NENT] / (B * H);
            out[M_DIST] += hm[EPAR_HEAD_DIST] / (B * H);
            out[M_LOCAL] += hm[EPAR_HEAD_LOCAL] / (B * H);
            out[M_SPARS] += hm[EPAR_HEAD_SPARS] / (B * H);
            out[M_RMID] += hm[EPAR_HEAD_RMID] / (B * H);
            out[M_RMAX] += hm[EPAR_HEAD_RMAX] / (B * H);
        }
        epar_attn_head_average(A, H, L, Abar);
        if (b == 0 && Abar0) memcpy(Abar0, Abar, LL * sizeof *Abar);
        out[M_MI] += epar_metric_distance_mi(Abar, L, cfg->causal, work, idx) / B;
        for (int t = 0; t < EPAR_IMP_COUNT; t++) {
            struct epar_metric_optimal mo;
            epar_metric_optimal(Abar, sd.I + ((size_t)t * B + b) * L, L, V, idx, &mo);
            out[M_CONS + t] += mo.consistency / B;
            if (!isnan(mo.ranking)) { out[M_RANK + t] += mo.ranking; nrank[t]++; }
        }
        /* time_us_per_row: one untimed call (warm-up: first touch of this job's buffers, caches, lazy binding), then
         * the fastest of speed_repeats calls (other load only slows a call); A is overwritten, after its metrics */
        double best = INFINITY;
        for (int rep = -1; rep < cfg->speed_repeats; rep++) {
            double t0 = omp_get_wtime();
            attention_output(&m, &sd.layer, sd.X + (size_t)b * L * D, &ws, &pat, sparse ? &sws : NULL, A, Vo, O);
            if (rep >= 0) best = fmin(best, omp_get_wtime() - t0);
        }
        time += best;
    }
    for (int t = 0; t < EPAR_IMP_COUNT; t++) {
        out[M_RANK + t] = nrank[t] ? out[M_RANK + t] / nrank[t] : NAN;
        out[M_RNAN] += B - nrank[t]; /* items whose ranking is undefined (a constant vector): counted, not averaged */
    }
    out[M_TIME] = time / ((double)B * H * L) * 1e6;
done:
    epar_mech_free(&m);
    seed_data_free(&sd);
    epar_attn_ws_free(&ws);
    epar_sparse_ws_free(&sws);
    free(A); free(Abar); free(V); free(work); free(idx); free(Vo); free(O);
    return st;
}

/* ------------------------------------------------------------------ ablation: additive vs multiplicative x linear vs exponential */

enum { AB_NONE = EPAR_CMP_AB_NONE, AB_ADD_LIN = EPAR_CMP_AB_ADD_LIN, AB_ADD_EXP = EPAR_CMP_AB_ADD_EXP,
       AB_MUL_LIN = EPAR_CMP_AB_MUL_LIN, AB_MUL_EXP = EPAR_CMP_AB_MUL_EXP, AB_COUNT = EPAR_CMP_NAB };
const char *const epar_compare_ablation_name[AB_COUNT] = {"none", "additive-linear", "additive-exponential",
                                                          "multiplicative-linear", "multiplicative-exponential"};
enum { AM_ENT = EPAR_CMP_AM_ENT, AM_NENT = EPAR_CMP_AM_NENT, AM_DIST = EPAR_CMP_AM_DIST, AM_LOCAL = EPAR_CMP_AM_LOCAL,
       AM_RMID = EPAR_CMP_AM_RMID, AM_RMAX = EPAR_CMP_AM_RMAX, AM_FARPOS = EPAR_CMP_AM_FARPOS,
       AM_FARNEG = EPAR_CMP_AM_FARNEG, AM_NEGUP = EPAR_CMP_AM_NEGUP, AM_CONS = EPAR_CMP_AM_CONS,
       AM_RANK = EPAR_CMP_AM_RANK, AM_COUNT = EPAR_CMP_NAM };

static int ablation_seed(const struct epar_compare_cfg *cfg, unsigned long seed, double out[AB_COUNT][AM_COUNT])
{
    const struct epar_params *prm = &cfg->prm;
    int L = prm->length, D = prm->hidden, H = prm->heads, B = prm->batch, dk = D / H;
    size_t LL = (size_t)L * L;
    double beta = cfg->ablation_beta;
    struct seed_data sd;
    struct epar_attn_ws ws = {0};
    int st = seed_data_make(&sd, L, D, B, seed, 1);
    double *Abar = EPAR_MALLOC((size_t)AB_COUNT * LL * sizeof *Abar), *V = EPAR_MALLOC((size_t)6 * L * sizeof *V); /* epar_metric_optimal's work */
    size_t *perm = EPAR_MALLOC((size_t)L * sizeof *perm);
    int nrank[AB_COUNT][EPAR_IMP_COUNT] = {{0}};
    double *S = EPAR_MALLOC(LL * sizeof *S), *A0 = EPAR_MALLOC(LL * sizeof *A0), *A = EPAR_MALLOC(LL * sizeof *A),
           *fl = EPAR_MALLOC(LL * sizeof *fl), *fe = EPAR_MALLOC(LL * sizeof *fe), *bl = EPAR_MALLOC((size_t)H * LL * sizeof *bl),
           *be = EPAR_MALLOC((size_t)H * LL * sizeof *be), *sl = EPAR_MALLOC((size_t)H * sizeof *sl);
    if (st || !Abar || !V || !perm || !S || !A0 || !A || !fl || !fe || !bl || !be || !sl || epar_attn_ws_alloc(&ws, L, D)) {
        if (!st) st = epar_err_set(EPAR_ENOMEM, "out of memory in the ablation (length %d)", L);
        goto done;
    }
    /* additive: lambda_h (g(d) - 1) with lambda_h = m_h L / beta, so additive-linear is exactly ALiBi;
     * multiplicative: s * g(d) with the same g; g_lin = max(0, 1 - beta d/L), g_exp = exp(-beta d/L) */
    epar_mech_alibi_slopes(H, cfg->p[EPAR_MECH_ALIBI][0], sl);
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++) {
            double d = abs(i - j), x = beta * d / L, gl = x < 1 ? 1 - x : 0.0, ge = exp(-x);
            fl[(size_t)i * L + j] = gl;
            fe[(size_t)i * L + j] = ge;
            for (int h = 0; h < H; h++) {
                double lam = beta > 0 ? sl[h] * L / beta : 0.0;
                bl[((size_t)h * L + i) * L + j] = beta > 0 ? -sl[h] * d : 0.0;
                be[((size_t)h * L + i) * L + j] = lam * (ge - 1.0);
            }
        }
    struct epar_attn_cfg c = {.L = L, .D = D, .heads = H, .scale = 1.0 / sqrt((double)dk), .inv_temp = 1,
                              .causal = cfg->causal, .empty = EPAR_EMPTY_SELF};
    struct epar_attn_mods mods[AB_COUNT] = {{0}, {.bias = bl, .bias_per_head = 1}, {.bias = be, .bias_per_head = 1},
                                            {.factor = fl}, {.factor = fe}};
    memset(out, 0, sizeof(double) * AB_COUNT * AM_COUNT);
    double norm = 1.0 / ((double)B * H);
    for (int b = 0; b < B; b++) {
        memset(Abar, 0, (size_t)AB_COUNT * LL * sizeof *Abar);
        epar_attn_project(&c, &sd.layer, NULL, sd.X + (size_t)b * L * D, &ws);
        for (int h = 0; h < H; h++) {
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, dk, c.scale, ws.Q + h * dk, D, ws.K + h * dk, D,
                        0.0, S, L);
            for (int a = 0; a < AB_COUNT; a++) {
                memcpy(A, S, LL * sizeof *A);
                epar_attn_softmax_rows(&c, &mods[a], h, A);
                if (a == AB_NONE) memcpy(A0, A, LL * sizeof *A);
                double hm[EPAR_HEAD_COUNT];
                if ((st = epar_metric_head_summary(A, L, cfg->causal, cfg->local_window, hm))) goto done;
                out[a][AM_ENT] += hm[EPAR_HEAD_ENT] * norm;
                out[a][AM_NENT] += hm[EPAR_HEAD_NENT] * norm;
                out[a][AM_DIST] += hm[EPAR_HEAD_DIST] * norm;
                out[a][AM_LOCAL] += hm[EPAR_HEAD_LOCAL] * norm;
                out[a][AM_RMID] += hm[EPAR_HEAD_RMID] * norm;
                out[a][AM_RMAX] += hm[EPAR_HEAD_RMAX] * norm;
                for (size_t k = 0; k < LL; k++) Abar[(size_t)a * LL + k] += A[k] / H;
                /* far keys (d > L/2): change of mass vs none, split by the sign of the content score */
                double fp = 0, fn = 0;
                long nneg = 0, up = 0;
                for (int i = 0; i < L; i++)
                    for (int j = 0; j < L; j++) {
                        if (abs(i - j) <= L / 2 || (cfg->causal && j > i)) continue;
                        size_t k = (size_t)i * L + j;
                        double dA = A[k] - A0[k];
                        if (S[k] > 0) fp += dA;
                        else if (S[k] < 0) { fn += dA; nneg++; up += dA > 0; }
                    }
                out[a][AM_FARPOS] += fp / L * norm;
                out[a][AM_FARNEG] += fn / L * norm;
                out[a][AM_NEGUP] += (nneg ? (double)up / nneg : 0.0) * norm;
            }
        }
        /* consistency and ranking of the head-averaged attention, as in mechanisms.csv */
        for (int a = 0; a < AB_COUNT; a++)
            for (int t = 0; t < EPAR_IMP_COUNT; t++) {
                struct epar_metric_optimal mo;
                epar_metric_optimal(Abar + (size_t)a * LL, sd.I + ((size_t)t * B + b) * L, L, V, perm, &mo);
                out[a][AM_CONS + t] += mo.consistency / B;
                if (!isnan(mo.ranking)) { out[a][AM_RANK + t] += mo.ranking; nrank[a][t]++; }
            }
    }
    for (int a = 0; a < AB_COUNT; a++)
        for (int t = 0; t < EPAR_IMP_COUNT; t++)
            out[a][AM_RANK + t] = nrank[a][t] ? out[a][AM_RANK + t] / nrank[a][t] : NAN;
done:
    seed_data_free(&sd);
    epar_attn_ws_free(&ws);
    free(S); free(A0); free(A); free(fl); free(fe); free(bl); free(be); free(sl); free(Abar); free(V); free(perm);
    return st;
}

/* ------------------------------------------------------------------ extrapolation */

const enum epar_mech_id epar_compare_extrap_mech[EPAR_CMP_NEXTRAP] = {
    EPAR_MECH_ROPE, EPAR_MECH_NTK_ROPE, EPAR_MECH_INTERPOLATION, EPAR_MECH_ALIBI, EPAR_MECH_EPAR_ENHANCED};
#define extrap_mech epar_compare_extrap_mech
#define N_EXTRAP EPAR_CMP_NEXTRAP

/* out[4] = entropy, normalised entropy, mean distance, local mass (item 0, mean over heads and rows);
 * returns EPAR_EINVAL (message kept) when the mechanism refuses the setting */
static int extrap_job(const struct epar_compare_cfg *cfg, enum epar_mech_id id, int logn, int L, unsigned long seed,
                      double *out)
{
    int D = cfg->prm.hidden, H = cfg->prm.heads, L0 = cfg->extrap_length;
    size_t LL = (size_t)L * L;
    double p[EPAR_MECH_MAX_PARAMS];
    memcpy(p, cfg->p[id], sizeof p);
    int ti = epar_mech_param_index(id, "train_length");
    if (ti >= 0) p[ti] = L0;
    struct seed_data sd;
    struct epar_mech m;
    struct epar_attn_ws ws = {0};
    int st = seed_data_make(&sd, L, D, 1, seed, 0);
    if (st) { seed_data_free(&sd); return st; }
    if ((st = epar_mech_init(&m, id, p, L, D, H, cfg->causal, seed))) { seed_data_free(&sd); return st; }
    double *A = EPAR_MALLOC((size_t)H * LL * sizeof *A);
    if (!A || epar_attn_ws_alloc(&ws, L, D) || (logn && epar_mech_stack_logn(&m, L0, 1))) {
        st = epar_err_set(EPAR_ENOMEM, "out of memory in the extrapolation (length %d)", L);
        goto done;
    }
    epar_mech_forward(&m, &sd.layer, sd.X, A, &ws, NULL);
    memset(out, 0, 4 * sizeof *out);
    for (int h = 0; h < H; h++) {
        double hm[EPAR_HEAD_COUNT];
        if ((st = epar_metric_head_summary(A + (size_t)h * LL, L, cfg->causal, cfg->local_window, hm))) goto done;
        out[0] += hm[EPAR_HEAD_ENT] / H;
        out[1] += hm[EPAR_HEAD_NENT] / H;
        out[2] += hm[EPAR_HEAD_DIST] / H;
        out[3] += hm[EPAR_HEAD_LOCAL] / H;
    }
done:
    epar_mech_free(&m);
    seed_data_free(&sd);
    epar_attn_ws_free(&ws);
    free(A);
    return st;
}

/* Performer vs exact softmax on the same q, k (docs/MECHANISMS.md §21 pitfall): max |A_perf - A_exact| and the
 * mean over rows of KL(A_exact || A_perf), over items and heads of one seed. out[2]. */
static int performer_error(const struct epar_compare_cfg *cfg, unsigned long seed, double *out)
{
    const struct epar_params *prm = &cfg->prm;
    int L = prm->length, D = prm->hidden, H = prm->heads, B = prm->batch;
    size_t n = (size_t)H * L * L;
    struct seed_data sd;
    struct epar_mech mp, mn;
    struct epar_attn_ws ws = {0};
    int st = seed_data_make(&sd, L, D, B, seed, 0);
    if (st) { seed_data_free(&sd); return st; }
    if ((st = epar_mech_init(&mp, EPAR_MECH_PERFORMER, cfg->p[EPAR_MECH_PERFORMER], L, D, H, cfg->causal, seed))) {
        seed_data_free(&sd);
        return st;
    }
    if ((st = epar_mech_init(&mn, EPAR_MECH_NONE, NULL, L, D, H, cfg->causal, seed))) {
        epar_mech_free(&mp);
        seed_data_free(&sd);
        return st;
    }
    double *Ap = EPAR_MALLOC(n * sizeof *Ap), *Ae = EPAR_MALLOC(n * sizeof *Ae), mx = 0, kl = 0;
    if (!Ap || !Ae || epar_attn_ws_alloc(&ws, L, D)) {
        st = epar_err_set(EPAR_ENOMEM, "out of memory comparing performer with softmax (length %d)", L);
        goto done;
    }
    for (int b = 0; b < B; b++) {
        epar_mech_forward(&mp, &sd.layer, sd.X + (size_t)b * L * D, Ap, &ws, NULL);
        epar_mech_forward(&mn, &sd.layer, sd.X + (size_t)b * L * D, Ae, &ws, NULL);
        for (size_t r = 0; r < (size_t)H * L; r++) {
            double k = 0;
            for (int j = 0; j < L; j++) {
                double e = Ae[r * L + j], a = Ap[r * L + j];
                if (fabs(a - e) > mx) mx = fabs(a - e);
                if (e > 0) k += e * log(e / a);
            }
            kl += k / ((double)B * H * L);
        }
    }
    out[0] = mx;
    out[1] = kl;
done:
    epar_mech_free(&mp);
    epar_mech_free(&mn);
    seed_data_free(&sd);
    epar_attn_ws_free(&ws);
    free(Ap); free(Ae);
    return st;
}

/* ------------------------------------------------------------------ driver */

/* ---- the run, in named steps: preflight, set up, iterate (one job per mechanism x seed), mechanism tables,
 * reference curves, patterns and masks, ablation, extrapolation, performer error, then speed and seed checks ---- */

struct cmp_run {
    const struct epar_compare_cfg *cfg;
    const struct epar_params *prm;
    int L, S, K, J;
    size_t LL;
    double *R;                  /* (K,S,M_COUNT) metrics of every job */
    double *heat;               /* (K,L,L) head-averaged attention, first seed, item 0 */
    int *jst;                   /* (J) status of every job */
};

/* the size fits and every mechanism accepts the setting: usage errors, reported before anything is allocated */
static int cmp_preflight(const struct epar_compare_cfg *cfg)
{
    const struct epar_params *prm = &cfg->prm;
    int L = prm->length, K = cfg->n_mech, st = EPAR_OK;
    size_t LL = (size_t)L * L;
    double mem = (double)prm->heads * L * L * 8.0 * 3 * 2 + (double)K * LL * 8.0;
    if (mem > 8e9) {
        epar_err_set(EPAR_ENOMEM, "size does not fit: length %d with %d heads needs %.1f GB", L, prm->heads, mem / 1e9);
        epar_err_hint("reduce --length or --heads");
        return EPAR_ENOMEM;
    }
    /* preflight: every mechanism accepts the setting (errors are usage errors, nothing written) */
    for (int k = 0; k < K; k++) {
        struct epar_mech m;
        if ((st = epar_mech_init(&m, cfg->mech[k], cfg->p[cfg->mech[k]], L, prm->hidden, prm->heads, cfg->causal,
                                 prm->seeds[0])))
            return st;
        epar_mech_free(&m);
    }
    return st;
}

/* c is zeroed first: cmp_run_free is safe whatever fails */
static int cmp_setup(struct cmp_run *c, const struct epar_compare_cfg *cfg)
{
    memset(c, 0, sizeof *c);
    c->cfg = cfg;
    const struct epar_params *prm = c->prm = &cfg->prm;
    int L = c->L = prm->length, S = c->S = prm->n_seeds, K = c->K = cfg->n_mech;
    c->J = K * S;
    size_t LL = c->LL = (size_t)L * L;
    c->R = EPAR_CALLOC((size_t)K * S * M_COUNT, sizeof *c->R);
    c->heat = EPAR_CALLOC((size_t)K * LL, sizeof *c->heat);
    c->jst = EPAR_CALLOC((size_t)K * S, sizeof *c->jst);
    if (!c->R || !c->heat || !c->jst) return epar_err_set(EPAR_ENOMEM, "out of memory in compare");
    return EPAR_OK;
}

static void cmp_run_free(struct cmp_run *c)
{
    free(c->R); free(c->heat); free(c->jst);
}

/* job j = (mechanism j / S, seed j % S) into R; the first seed's job keeps its item-0 attention in heat */
static int cmp_iterate(struct cmp_run *c)
{
    const struct epar_compare_cfg *cfg = c->cfg;
    const struct epar_params *prm = c->prm;
    int S = c->S, J = c->J, *jst = c->jst;
    size_t LL = c->LL;
    double *R = c->R, *heat = c->heat;
    struct epar_err_carry carry = EPAR_ERR_CARRY_INIT; /* the failing job's own message, to the caller */
#pragma omp parallel for schedule(dynamic, 1)
    for (int j = 0; j < J; j++) {
        int k = j / S, s = j % S;
        jst[j] = run_job(cfg, cfg->mech[k], prm->seeds[s], R + (size_t)j * M_COUNT, s == 0 ? heat + (size_t)k * LL : NULL);
        epar_err_keep(&carry, jst[j], j);
    }
    return epar_err_carried(&carry);
}

const int epar_compare_fixed_pattern[EPAR_CMP_NFIXED] = {1, 2, 3, 4, 5, 7, 6};

/* across seeds, per mechanism: every metric (NaN seeds skipped), consistency and ranking per type, NaN ranking items,
 * flops per row */
static int cmp_mechanisms(struct cmp_run *c, struct epar_compare_result *res)
{
    const struct epar_compare_cfg *cfg = c->cfg;
    const struct epar_params *prm = c->prm;
    int L = c->L, S = c->S, K = c->K, st;
    const double *R = c->R;
    res->mean = EPAR_MALLOC((size_t)K * M_COUNT * sizeof *res->mean);
    res->sd = EPAR_MALLOC((size_t)K * M_COUNT * sizeof *res->sd);
    res->cons = EPAR_MALLOC((size_t)K * 4 * EPAR_IMP_COUNT * sizeof *res->cons);
    res->nan_items = EPAR_MALLOC((size_t)K * 2 * sizeof *res->nan_items);
    if (!res->mean || !res->sd || !res->cons || !res->nan_items) return EPAR_ENOMEM;
    res->cons_sd = res->cons + (size_t)K * EPAR_IMP_COUNT;
    res->rank = res->cons_sd + (size_t)K * EPAR_IMP_COUNT;
    res->rank_sd = res->rank + (size_t)K * EPAR_IMP_COUNT;
    res->flops = res->nan_items + K;
    for (int k = 0; k < K; k++) {
        double x[EPAR_MAX_SEEDS], tmp[EPAR_MAX_SEEDS];
        for (int q = 0; q < M_COUNT; q++) {
            for (int s = 0; s < S; s++) x[s] = R[((size_t)k * S + s) * M_COUNT + q];
            epar_stats_mean_sd_finite(x, 1, (size_t)S, 1, tmp, &res->mean[(size_t)k * M_COUNT + q],
                                      &res->sd[(size_t)k * M_COUNT + q]);
        }
        double nan_items = 0;
        for (int s = 0; s < S; s++) nan_items += R[((size_t)k * S + s) * M_COUNT + M_RNAN];
        res->nan_items[k] = nan_items; /* over seeds, items and importance types */
        struct epar_mech m;
        if ((st = epar_mech_init(&m, cfg->mech[k], cfg->p[cfg->mech[k]], L, prm->hidden, prm->heads, cfg->causal,
                                 prm->seeds[0])))
            return st;
        res->flops[k] = epar_mech_flops_row(&m);
        epar_mech_free(&m);
        for (int ty = 0; ty < EPAR_IMP_COUNT; ty++) {
            double cv[EPAR_MAX_SEEDS], rk[EPAR_MAX_SEEDS];
            size_t q = (size_t)k * EPAR_IMP_COUNT + ty;
            for (int s = 0; s < S; s++) {
                cv[s] = R[((size_t)k * S + s) * M_COUNT + M_CONS + ty];
                rk[s] = R[((size_t)k * S + s) * M_COUNT + M_RANK + ty];
            }
            epar_stats_mean_sd(cv, (size_t)S, &res->cons[q], &res->cons_sd[q]);
            epar_stats_mean_sd(rk, (size_t)S, &res->rank[q], &res->rank_sd[q]);
        }
    }
    return EPAR_OK;
}

/* the reference curves: ALiBi slopes (1..16 heads), T5 buckets (uni- and bidirectional) */
static void cmp_curves(struct cmp_run *c, struct epar_compare_result *res)
{
    const struct epar_compare_cfg *cfg = c->cfg;
    for (int n = 1; n <= 16; n++) epar_mech_alibi_slopes(n, cfg->p[EPAR_MECH_ALIBI][0], res->alibi_slope[n - 1]);
    int maxd = res->t5_max_distance = (int)cfg->p[EPAR_MECH_T5][1];
    for (int d = 0; d <= 256; d++) res->t5_uni[d] = epar_mech_t5_bucket(-d, 0, 16, maxd);
    for (int d = -256; d <= 256; d++) /* distance = i - j; negative = key to the right of the query */
        res->t5_bi[d + 256] = epar_mech_t5_bucket(-d, 1, 32, maxd);
}

/* the fixed patterns (table_length), the masks of the mask mechanisms (the run's length) */
static int cmp_patterns(struct cmp_run *c, struct epar_compare_result *res)
{
    const struct epar_compare_cfg *cfg = c->cfg;
    const struct epar_params *prm = c->prm;
    int L = c->L, K = c->K, st;
    size_t LL = c->LL;
    int Lt = res->table_length = cfg->table_length;
    res->fixed = EPAR_MALLOC((size_t)EPAR_CMP_NFIXED * Lt * Lt * sizeof *res->fixed);
    res->n_masks = EPAR_CALLOC((size_t)K, sizeof *res->n_masks);
    res->mask_slot = EPAR_MALLOC((size_t)K * sizeof *res->mask_slot);
    if (!res->fixed || !res->n_masks || !res->mask_slot) return EPAR_ENOMEM;
    int slots = 0;
    for (int k = 0; k < K; k++) res->mask_slot[k] = epar_mech_row(cfg->mech[k])->kind == EPAR_MK_MASK ? slots++ : -1;
    res->masks = slots ? EPAR_CALLOC((size_t)slots * 2 * LL, 1) : NULL;
    if (slots && !res->masks) return EPAR_ENOMEM;
    for (int f = 0; f < EPAR_CMP_NFIXED; f++)
        epar_mech_fixed_pattern(epar_compare_fixed_pattern[f], Lt, res->fixed + (size_t)f * Lt * Lt);
    for (int k = 0; k < K; k++) {
        if (epar_mech_row(cfg->mech[k])->kind != EPAR_MK_MASK) continue;
        struct epar_mech m;
        if ((st = epar_mech_init(&m, cfg->mech[k], cfg->p[cfg->mech[k]], L, prm->hidden, prm->heads, cfg->causal, prm->seeds[0])))
            return st;
        res->n_masks[k] = m.mask2 ? 2 : 1;
        for (int pass = 0; pass < res->n_masks[k]; pass++) {
            const unsigned char *M = pass ? m.mask2 : m.mask;
            unsigned char *out = res->masks + ((size_t)res->mask_slot[k] * 2 + pass) * LL;
            for (int i = 0; i < L; i++)
                for (int j = 0; j < L; j++) out[(size_t)i * L + j] = M[(size_t)i * L + j] && (!cfg->causal || j <= i);
        }
        epar_mech_free(&m);
    }
    return EPAR_OK;
}

/* the ablation: one job per seed, then mean and sd over seeds per design */
static int cmp_ablation(struct cmp_run *c, struct epar_compare_result *res)
{
    const struct epar_compare_cfg *cfg = c->cfg;
    const struct epar_params *prm = c->prm;
    int S = c->S, st = EPAR_OK;
    double (*ab)[AB_COUNT][AM_COUNT] = EPAR_CALLOC((size_t)S, sizeof *ab);
    int *ast = EPAR_CALLOC((size_t)S, sizeof *ast);
    if (!ab || !ast) { free(ab); free(ast); return EPAR_ENOMEM; }
    struct epar_err_carry carry = EPAR_ERR_CARRY_INIT; /* the failing seed's own message, to the caller */
#pragma omp parallel for schedule(dynamic, 1)
    for (int s = 0; s < S; s++) {
        ast[s] = ablation_seed(cfg, prm->seeds[s], ab[s]);
        epar_err_keep(&carry, ast[s], s);
    }
    st = epar_err_carried(&carry);
    for (int a = 0; a < AB_COUNT && !st; a++) {
        double x[EPAR_MAX_SEEDS], tmp[EPAR_MAX_SEEDS];
        for (int q = 0; q < AM_COUNT; q++) {
            for (int s = 0; s < S; s++) x[s] = ab[s][a][q];
            epar_stats_mean_sd_finite(x, 1, (size_t)S, 1, tmp, &res->ab_mean[a][q], &res->ab_sd[a][q]);
        }
    }
    free(ab); free(ast);
    return st;
}

/* the extrapolation study: one job per (mechanism, log-n, factor, seed); a mechanism refusing a length leaves a note */
static int cmp_extrapolation(struct cmp_run *c, struct epar_compare_result *res)
{
    const struct epar_compare_cfg *cfg = c->cfg;
    const struct epar_params *prm = c->prm;
    int S = c->S, st = EPAR_OK;
    int NF = res->n_factors = cfg->n_factors, NJ = N_EXTRAP * 2 * NF * S, NR = N_EXTRAP * 2 * NF;
    double *ex = EPAR_CALLOC((size_t)NJ * 4, sizeof *ex);
    int *est = EPAR_CALLOC((size_t)NJ, sizeof *est);
    char (*emsg)[160] = EPAR_CALLOC((size_t)NJ, sizeof *emsg);
    res->ex_mean = EPAR_MALLOC((size_t)NR * 4 * sizeof *res->ex_mean);
    res->ex_sd = EPAR_MALLOC((size_t)NR * 4 * sizeof *res->ex_sd);
    res->ex_note = EPAR_CALLOC((size_t)NR, sizeof *res->ex_note);
    if (!ex || !est || !emsg || !res->ex_mean || !res->ex_sd || !res->ex_note) {
        free(ex); free(est); free(emsg);
        return EPAR_ENOMEM;
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (int j = 0; j < NJ; j++) {
        int s = j % S, f = (j / S) % NF, lg = (j / (S * NF)) % 2, e = j / (S * NF * 2);
        est[j] = extrap_job(cfg, extrap_mech[e], lg, cfg->extrap_length * cfg->factors[f], prm->seeds[s], ex + (size_t)j * 4);
        if (est[j]) snprintf(emsg[j], sizeof emsg[j], "%s", epar_err_message());
    }
    for (int e = 0; e < N_EXTRAP && !st; e++)
        for (int lg = 0; lg < 2 && !st; lg++)
            for (int f = 0; f < NF && !st; f++) {
                int row = (e * 2 + lg) * NF + f, j0 = row * S;
                for (int s = 0; s < S; s++) {
                    if (est[j0 + s] == EPAR_ENOMEM) { st = epar_err_set(EPAR_ENOMEM, "%s", emsg[j0 + s]); break; }
                    if (est[j0 + s]) snprintf(res->ex_note[row], sizeof res->ex_note[row], "%s", emsg[j0 + s]);
                }
                if (st) break;
                double x[EPAR_MAX_SEEDS], tmp[EPAR_MAX_SEEDS];
                for (int q = 0; q < 4; q++) {
                    for (int s = 0; s < S; s++) x[s] = est[j0 + s] ? NAN : ex[(size_t)(j0 + s) * 4 + q];
                    epar_stats_mean_sd_finite(x, 1, (size_t)S, 1, tmp, &res->ex_mean[(size_t)row * 4 + q],
                                              &res->ex_sd[(size_t)row * 4 + q]);
                }
            }
    free(ex); free(est); free(emsg);
    return st;
}

/* Performer vs exact softmax: one measurement per seed */
static int cmp_performer(struct cmp_run *c, struct epar_compare_result *res)
{
    const struct epar_compare_cfg *cfg = c->cfg;
    const struct epar_params *prm = c->prm;
    int S = c->S, st;
    if (!(res->performer = EPAR_MALLOC((size_t)S * 2 * sizeof *res->performer))) return EPAR_ENOMEM;
    for (int s2 = 0; s2 < S; s2++) {
        double *pe = res->performer + (size_t)s2 * 2;
        pe[0] = pe[1] = NAN;
        if ((st = performer_error(cfg, prm->seeds[s2], pe))) return st;
    }
    return EPAR_OK;
}

int epar_exp_compare_run(const struct epar_compare_cfg *cfg, struct epar_compare_result *res)
{
    memset(res, 0, sizeof *res);
    int st = cmp_preflight(cfg);
    if (st) return st;
    struct cmp_run c;
    st = cmp_setup(&c, cfg);
    res->K = c.K;
    res->S = c.S;
    res->L = c.L;
    if (!st) st = cmp_iterate(&c);
    if (!st) {
        res->heat = c.heat;     /* the result keeps the figures' attention */
        c.heat = NULL;
        st = cmp_mechanisms(&c, res);
    }
    if (!st) cmp_curves(&c, res);
    if (!st) st = cmp_patterns(&c, res);
    if (!st) st = cmp_ablation(&c, res);
    if (!st) st = cmp_extrapolation(&c, res);
    if (!st) st = cmp_performer(&c, res);
    /* sparse_speed.csv, then seed_checks.csv: the measurements the seed claims of the protocol are judged on */
    if (!st) st = epar_exp_compare_speed(cfg, &res->speed);
    if (!st) st = epar_exp_compare_checks(cfg, &res->speed, &res->checks);
    cmp_run_free(&c);
    if (st) epar_exp_compare_free(res);
    return st;
}

void epar_exp_compare_free(struct epar_compare_result *res)
{
    free(res->mean); free(res->sd); free(res->cons); free(res->nan_items); free(res->heat); free(res->fixed);
    free(res->masks); free(res->n_masks); free(res->mask_slot); free(res->ex_mean); free(res->ex_sd); free(res->ex_note);
    free(res->performer); free(res->speed.row); free(res->checks.row);
    memset(res, 0, sizeof *res);
}

EPAR_EXPERIMENT(compare, "compare", "compare", NULL);
