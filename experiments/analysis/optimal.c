/* Experiment 2: information importance, pos*, consistency and ranking per importance type, and the
 * paired comparison of the position-effect forms. See optimal.h for the design. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include <gsl/gsl_statistics_double.h>
#include <omp.h>
#include "lib/attn.h"
#include "lib/blas.h"
#include "lib/err.h"
#include "lib/metrics.h"
#include "lib/stats.h"
#include "lib/rng.h"
#include "experiments/common.h"
#include "experiments/analysis/optimal.h"
#include "experiments/analysis/experiment.h"

/* OpenBLAS (Debian's pthreads build) would start its own threads inside every OpenMP job and spin-wait
 * (half the run time here): the jobs are the parallelism, so BLAS runs single-threaded during them. */

/* experiments.optimal-position's own settings, read into struct optimal_in */
struct optimal_in {
    const char *types;
};
static const struct epar_field optimal_rows[] = {
    {.key = "types", .type = EPAR_FIELD_STRING, .offset = offsetof(struct optimal_in, types),
     .help = "importance types, comma-separated"},
    {0}};

static const enum epar_form form_of[EPAR_OPT_NFORMS] = {EPAR_FORM_BASIC, EPAR_FORM_ENHANCED, EPAR_FORM_NONE};

const char *epar_exp_optimal_form_name(int f)
{
    return (f >= 0 && f < EPAR_OPT_NFORMS) ? epar_posfx_form_name(form_of[f]) : "?";
}

int epar_exp_optimal_parse_types(const char *list, struct epar_optimal_cfg *cfg)
{
    cfg->n_types = 0;
    if (!list || !*list) {
        epar_err_set(EPAR_EINVAL, "empty list of importance types '%s'", list ? list : "");
        epar_err_hint("give one or more of random, structured, sparse, dense, clustered, norm separated by commas");
        return EPAR_EINVAL;
    }
    const char *p = list;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char item[32];
        if (len == 0 || len >= sizeof item) {
            epar_err_set(EPAR_EINVAL, "empty or overlong item in the list of importance types '%s'", list);
            epar_err_hint("give one or more of random, structured, sparse, dense, clustered, norm separated by commas");
            return EPAR_EINVAL;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        enum epar_imp_type t;
        int st = epar_imp_parse(item, &t);
        if (st) return st;
        for (int k = 0; k < cfg->n_types; k++)
            if (cfg->types[k] == t) return epar_err_set(EPAR_EINVAL, "importance type '%s' is listed twice", item);
        cfg->types[cfg->n_types++] = t;
        if (!e) break;
        p = e + 1;
    }
    return EPAR_OK;
}

/* Run-level standard error of a per-seed mean over R runs, pooled over the S seeds: the run-to-run variance
 * of each seed (std0^2 R/(R-1), std0 with ddof 0) averaged, divided by R. The audit floors the across-seed sd
 * with it (a lucky small spread of few seeds cannot be smaller than the run noise every seed mean carries).
 * NaN when R < 2. std0 (S) with stride. */
static double se_run(const double *std0, size_t stride, int S, int R)
{
    if (R < 2 || S < 1) return NAN;
    double v = 0.0;
    int n = 0;
    for (int s = 0; s < S; s++)
        if (!isnan(std0[s * stride])) { v += std0[s * stride] * std0[s * stride]; n++; }
    return n ? sqrt(v / n / (R - 1)) : NAN;
}

const int epar_exp_optimal_pairs[3][2] = {{1, 0}, {1, 2}, {0, 2}};

const char *epar_exp_optimal_verdict(double cons, double rank)
{
    if (cons > 0.7 && rank > 0.5) return "Excellent";
    if (cons > 0.5 && rank > 0.3) return "Good";
    return "Needs Improvement";
}

/* ---- the run, in named steps: set up, iterate (one job per seed x type x run), reduce, tabulate, report ---- */

struct opt_scratch {            /* per thread */
    struct epar_attn_ws ws;
    double *X, *I, *Sc, *Ah, *A, *work;  /* (B,L,D) (B,L) (H,L,L) (H,L,L) (L,L) (6L) */
    size_t *perm;                        /* (L) */
};

struct opt_run {
    const struct epar_optimal_cfg *cfg;
    const struct epar_params *prm;
    int L, D, B, R, S, T, H, J, mf;
    size_t LL;
    double *out;                /* (J,NF,NM) per-run metrics */
    long *nan_items;            /* (J,NF) items whose ranking is NaN */
    double *rowdev;             /* (J) largest |L mean_j A_ij - 1| */
    double *P;                  /* (NF,L,L) position effects */
    struct epar_attn_mods mods[EPAR_OPT_NFORMS];
    struct epar_exp_model *models;      /* (S) one layer per seed */
    int n_models;
    double *tmp, *col;          /* (R+S+1), (S+1) */
};

#define IDX(s, t, f, k) ((((size_t)(s) * T + (t)) * NF + (f)) * NM + (k))
static int opt_setup(struct opt_run *c, const struct epar_optimal_cfg *cfg, struct epar_optimal_result *res)
{
    memset(c, 0, sizeof *c);
    c->cfg = cfg;
    const struct epar_params *prm = c->prm = &cfg->prm;
    int L = c->L = prm->length, D = c->D = prm->hidden, B = c->B = prm->batch, R = c->R = prm->runs;
    int S = c->S = prm->n_seeds, T = c->T = cfg->n_types, H = c->H = prm->heads, NF = EPAR_OPT_NFORMS, NM = EPAR_OPT_NM;
    size_t LL = c->LL = (size_t)L * L;
    double mem = (double)B * L * D * 8.0 + (double)(2 * H + 1) * LL * 8.0 + (double)S * (L + 3.0 * D) * D * 8.0;
    double njobs = (double)S * T * R;
    if (mem > 8e9 || njobs * NF * NM * 8.0 > 8e9) {
        epar_err_set(EPAR_ENOMEM, "size does not fit: length %d, hidden %d, batch %d, %g jobs", L, D, B, njobs);
        epar_err_hint("reduce --length, --hidden, --batch or --runs");
        return EPAR_ENOMEM;
    }
    if (T < 1) return epar_err_set(EPAR_EINVAL, "empty list of importance types ''");
    int J = c->J = S * T * R;
    res->S = S;
    res->T = T;
    res->R = R;
    res->main_form = c->mf = prm->form == EPAR_FORM_BASIC ? 0 : prm->form == EPAR_FORM_ENHANCED ? 1 : 2;
    res->items = (long)J * B;
    c->out = epar_err_alloc((size_t)J * NF * NM, sizeof *c->out, "run results");
    c->nan_items = epar_err_alloc((size_t)J * NF, sizeof *c->nan_items, "run results");
    c->rowdev = epar_err_alloc((size_t)J, sizeof *c->rowdev, "run results");
    c->P = epar_err_alloc((size_t)NF * LL, sizeof *c->P, "position effects");
    c->models = epar_err_alloc((size_t)S, sizeof *c->models, "attention layers");
    if (!c->out || !c->nan_items || !c->rowdev || !c->P || !c->models) return EPAR_ENOMEM;
    /* one layer per seed: the reference builds one model and reuses it for every type and run */
    for (; c->n_models < S; c->n_models++) {
        struct epar_exp_model *m = &c->models[c->n_models];
        int st = epar_exp_model_alloc(m, prm);
        if (st) return st;
        if ((st = epar_exp_model_init(m, prm->seeds[c->n_models], 0))) { epar_exp_model_free(m); return st; }
    }
    for (int f = 0; f < NF; f++) {
        struct epar_posfx fx = {form_of[f], prm->alpha, prm->beta, prm->gamma};
        epar_posfx_matrix(&fx, L, c->P + (size_t)f * LL);
        c->mods[f].factor = form_of[f] == EPAR_FORM_NONE ? NULL : c->P + (size_t)f * LL;
    }
    return EPAR_OK;
}

static void opt_run_free(struct opt_run *c)
{
    for (int s = 0; s < c->n_models; s++) epar_exp_model_free(&c->models[s]);
    free(c->models); free(c->out); free(c->nan_items); free(c->rowdev); free(c->P);
    free(c->tmp); free(c->col);
}

static int opt_scratch_alloc(struct opt_scratch *w, const struct opt_run *c)
{
    memset(w, 0, sizeof *w);
    w->X = epar_err_alloc((size_t)c->B * c->L * c->D, sizeof *w->X, "optimal-position's inputs (batch x length x dim)");
    w->I = epar_err_alloc((size_t)c->B * c->L, sizeof *w->I, "optimal-position's importance (batch x length)");
    w->Sc = epar_err_alloc((size_t)c->H * c->LL, sizeof *w->Sc, "optimal-position's scores (heads x length^2)");
    w->Ah = epar_err_alloc((size_t)c->H * c->LL, sizeof *w->Ah, "optimal-position's attention (heads x length^2)");
    w->A = epar_err_alloc(c->LL, sizeof *w->A, "optimal-position's mean attention (length^2)");
    w->work = epar_err_alloc(6 * (size_t)c->L, sizeof *w->work, "optimal-position's work (6 x length)");
    w->perm = epar_err_alloc((size_t)c->L, sizeof *w->perm, "optimal-position's permutation (length)");
    return w->X && w->I && w->Sc && w->Ah && w->A && w->work && w->perm &&
           epar_attn_ws_alloc(&w->ws, c->L, c->D) == EPAR_OK;
}

static void opt_scratch_free(struct opt_scratch *w)
{
    epar_attn_ws_free(&w->ws);
    free(w->X); free(w->I); free(w->Sc); free(w->Ah); free(w->A); free(w->work); free(w->perm);
}

/* job j = (seed, type, run): draw data and importance, score every item under the three forms; 0 or 1 (failed) */
static int opt_job(struct opt_run *c, int j, struct opt_scratch *w)
{
    const struct epar_optimal_cfg *cfg = c->cfg;
    const struct epar_params *prm = c->prm;
    int L = c->L, D = c->D, B = c->B, R = c->R, T = c->T, H = c->H, NF = EPAR_OPT_NFORMS, NM = EPAR_OPT_NM;
    size_t LL = c->LL;
    double *X = w->X, *I = w->I, *Sc = w->Sc, *Ah = w->Ah, *A = w->A, *work = w->work;
    size_t *perm = w->perm;
    struct epar_attn_ws *ws = &w->ws;
    const struct epar_attn_mods *mods = c->mods;
    const struct epar_exp_model *models = c->models;
    double *out = c->out, *rowdev = c->rowdev;
    long *nan_items = c->nan_items;
    int failed = 0;
    do {
            int s = j / (T * R), t = (j / R) % T, r = j % R;
            enum epar_imp_type type = cfg->types[t];
            unsigned long seed = prm->seeds[s], run_id = (unsigned long)type * (unsigned long)R + (unsigned long)r;
            const struct epar_exp_model *m = &models[s];
            if (epar_exp_data(prm, seed, run_id, X)) { failed = 1; break; }
            if (type == EPAR_IMP_NORM) {
                epar_imp_norm(X, B, L, D, I); /* the paper's I_j = ||x_j||, before the position embedding */
            } else {
                gsl_rng *rg = epar_rng_alloc(seed, run_id, EPAR_RNG_IMPORTANCE);
                if (!rg) { failed = 1; break; }
                int e = epar_imp_generate(type, rg, B, L, I);
                epar_rng_free(rg);
                if (e) { failed = 1; break; }
            }
            double sim[EPAR_OPT_NFORMS] = {0}, prox[EPAR_OPT_NFORMS] = {0}, rank[EPAR_OPT_NFORMS] = {0},
                   score[EPAR_OPT_NFORMS] = {0}, dev = 0.0;
            long nrank[EPAR_OPT_NFORMS] = {0};
            int dk = D / H;
            for (int b = 0; b < B; b++) {
                const double *Xb = X + (size_t)b * L * D, *Ib = I + (size_t)b * L;
                /* projections once per item, the scores once per head, then one softmax per form */
                epar_attn_project(&m->cfg, &m->layer, NULL, Xb, ws);
                for (int h = 0; h < H; h++)
                    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, dk, m->cfg.scale, ws->Q + h * dk, D,
                                ws->K + h * dk, D, 0.0, Sc + (size_t)h * LL, L);
                for (int f = 0; f < NF; f++) {
                    double *Af = H == 1 ? A : Ah; /* one head: softmax straight into A */
                    memcpy(Af, Sc, (size_t)H * LL * sizeof *Af);
                    for (int h = 0; h < H; h++) epar_attn_softmax_rows(&m->cfg, &mods[f], h, Af + (size_t)h * LL);
                    if (H > 1) epar_attn_head_average(Ah, H, L, A);
                    struct epar_metric_optimal mo;
                    epar_metric_optimal(A, Ib, L, work, perm, &mo);
                    sim[f] += mo.score_similarity;
                    prox[f] += mo.proximity;
                    score[f] += mo.score_mean;
                    if (!isnan(mo.ranking)) { rank[f] += mo.ranking; nrank[f]++; }
                    /* rows sum to 1: the row means are 1/L up to rounding (stated in the report) */
                    if (mo.row_sum_dev > dev) dev = mo.row_sum_dev;
                }
            }
            rowdev[j] = dev;
            for (int f = 0; f < NF; f++) {
                double *o = out + ((size_t)j * NF + f) * NM;
                o[EPAR_OPT_SIM] = sim[f] / B;
                o[EPAR_OPT_PROX] = prox[f] / B;
                o[EPAR_OPT_CONS] = 0.5 * (o[EPAR_OPT_SIM] + o[EPAR_OPT_PROX]);
                o[EPAR_OPT_RANK] = nrank[f] ? rank[f] / nrank[f] : NAN; /* NaN items skipped */
                o[EPAR_OPT_SCORE] = score[f] / B;
                nan_items[(size_t)j * NF + f] = B - nrank[f];
            }
    } while (0);
    return failed;
}

static int opt_iterate(struct opt_run *c)
{
    int blas_threads = epar_blas_threads(1); /* parallelism comes from the jobs */
    struct epar_err_carry carry = EPAR_ERR_CARRY_INIT; /* a worker's message, to the caller */
#pragma omp parallel
    {
        struct opt_scratch w;
        int ok = opt_scratch_alloc(&w, c);
        if (!ok) epar_err_keep(&carry, EPAR_ENOMEM, -1);
#pragma omp for schedule(dynamic, 4)
        for (int j = 0; j < c->J; j++)
            if (ok && opt_job(c, j, &w))
                epar_err_keep(&carry, epar_err_set(EPAR_ENOMEM, "out of memory running optimal-position (length %d)",
                                                   c->L), j);
        opt_scratch_free(&w);
    }
    epar_blas_threads(blas_threads);
    return epar_err_carried(&carry);
}

/* per (seed, type, form): mean and std over the runs; then across seeds (every form), the main form's summary */
static int opt_reduce(struct opt_run *c, struct epar_optimal_result *res)
{
    int S = c->S, T = c->T, R = c->R, J = c->J, NF = EPAR_OPT_NFORMS, NM = EPAR_OPT_NM, mf = c->mf;
    size_t nst = (size_t)S * T * NF * NM;
    double *smean = res->smean = EPAR_MALLOC(nst * sizeof *smean), *sstd = res->sstd = EPAR_MALLOC(nst * sizeof *sstd);
    res->seed_se = EPAR_MALLOC((size_t)S * T * sizeof *res->seed_se);
    double *tmp = c->tmp = EPAR_MALLOC(((size_t)R + S + 1) * sizeof *tmp), *col = c->col = EPAR_MALLOC(((size_t)S + 1) * sizeof *col);
    if (!smean || !sstd || !res->seed_se || !tmp || !col) return EPAR_ENOMEM;
    for (int s = 0; s < S; s++)
        for (int t = 0; t < T; t++)
            for (int f = 0; f < NF; f++)
                for (int k = 0; k < NM; k++) {
                    size_t j0 = ((size_t)s * T + t) * R;
                    epar_stats_mean_sd_finite(c->out + (j0 * NF + f) * NM + k, (size_t)NF * NM, (size_t)R, 0, tmp,
                                              &smean[IDX(s, t, f, k)], &sstd[IDX(s, t, f, k)]);
                }
    /* consistency_se_run of one seed: se_run of its runs alone, which the audit carries to an average over types */
    for (int s = 0; s < S; s++)
        for (int t = 0; t < T; t++) res->seed_se[(size_t)s * T + t] = se_run(&sstd[IDX(s, t, mf, EPAR_OPT_CONS)], 1, 1, R);
    for (int f = 0; f < NF; f++)
        for (int j = 0; j < J; j++) res->nan_items[f] += c->nan_items[(size_t)j * NF + f];
    res->maxdev = 0.0;
    for (int j = 0; j < J; j++)
        if (c->rowdev[j] > res->maxdev) res->maxdev = c->rowdev[j];
    for (int f = 0; f < NF; f++)
        for (int t = 0; t < T; t++)
            for (int k = 0; k < NM; k++) {
                for (int s = 0; s < S; s++) col[s] = smean[IDX(s, t, f, k)];
                epar_stats_mean_sd_finite(col, 1, (size_t)S, 1, tmp, &res->am[f][t][k], &res->asd[f][t][k]);
                res->se[f][t][k] = se_run(&sstd[IDX(0, t, f, k)], (size_t)T * NF * NM, S, R);
                if (f == mf) {
                    double dummy;
                    for (int s = 0; s < S; s++) col[s] = sstd[IDX(s, t, f, k)];
                    epar_stats_mean_sd_finite(col, 1, (size_t)S, 1, tmp, &res->stdm[t][k], &dummy);
                }
            }
    res->avg_cons = res->avg_rank = 0.0;
    for (int t = 0; t < T; t++) {
        for (int s = 0; s < S; s++)
            col[s] = 0.6 * smean[IDX(s, t, mf, EPAR_OPT_CONS)] + 0.2 * (smean[IDX(s, t, mf, EPAR_OPT_RANK)] + 1.0);
        epar_stats_mean_sd_finite(col, 1, (size_t)S, 1, tmp, &res->perf[t], &res->perf_sd[t]);
        res->cons[t] = res->am[mf][t][EPAR_OPT_CONS];
        res->cons_sd[t] = res->asd[mf][t][EPAR_OPT_CONS];
        res->rank[t] = res->am[mf][t][EPAR_OPT_RANK];
        res->rank_sd[t] = res->asd[mf][t][EPAR_OPT_RANK];
        res->avg_cons += res->am[mf][t][EPAR_OPT_CONS] / T;
        res->avg_rank += res->am[mf][t][EPAR_OPT_RANK] / T;
    }
    res->verdict = epar_exp_optimal_verdict(res->avg_cons, res->avg_rank);
    for (int s = 0; s < S; s++) {
        double cs = 0.0, r = 0.0;
        for (int t = 0; t < T; t++) {
            cs += smean[IDX(s, t, mf, EPAR_OPT_CONS)] / T;
            r += smean[IDX(s, t, mf, EPAR_OPT_RANK)] / T;
        }
        res->seed_cons[s] = cs;
        res->seed_rank[s] = r;
    }
    return EPAR_OK;
}

/* paired differences, seed by seed (same weights, data and importance), then across seeds; their run-level standard
 * error: std (ddof 0) over the runs of the per-run difference, per seed, pooled as se_run does */
static int opt_paired(struct opt_run *c, struct epar_optimal_result *res)
{
    int S = c->S, T = c->T, R = c->R, NF = EPAR_OPT_NFORMS, NM = EPAR_OPT_NM;
    const double *smean = res->smean, *out = c->out;
    double *tmp = c->tmp, *col = c->col;
    double *diff = EPAR_MALLOC((size_t)R * sizeof *diff), *tmp2 = EPAR_MALLOC((size_t)R * sizeof *tmp2);
    if (!diff || !tmp2) { free(diff); free(tmp2); return EPAR_ENOMEM; }
    for (int p = 0; p < 3; p++)
        for (int t = 0; t < T; t++) {
            int f0 = epar_exp_optimal_pairs[p][0], f1 = epar_exp_optimal_pairs[p][1];
            double *pd = res->pd[p][t];
            for (int s = 0; s < S; s++) col[s] = smean[IDX(s, t, f0, EPAR_OPT_CONS)] - smean[IDX(s, t, f1, EPAR_OPT_CONS)];
            epar_stats_mean_sd_finite(col, 1, (size_t)S, 1, tmp, &pd[0], &pd[1]);
            for (int s = 0; s < S; s++) col[s] = smean[IDX(s, t, f0, EPAR_OPT_RANK)] - smean[IDX(s, t, f1, EPAR_OPT_RANK)];
            epar_stats_mean_sd_finite(col, 1, (size_t)S, 1, tmp, &pd[2], &pd[3]);
            double dstd[2][EPAR_MAX_SEEDS];
            for (int k = 0; k < 2; k++) {
                int km = k ? EPAR_OPT_RANK : EPAR_OPT_CONS;
                for (int s = 0; s < S; s++) {
                    size_t j0 = ((size_t)s * T + t) * R;
                    double dm;
                    for (int r = 0; r < R; r++)
                        diff[r] = out[((j0 + r) * NF + f0) * NM + km] - out[((j0 + r) * NF + f1) * NM + km];
                    epar_stats_mean_sd_finite(diff, 1, (size_t)R, 0, tmp2, &dm, &dstd[k][s]);
                }
                res->pd_se[p][t][k] = se_run(dstd[k], 1, S, R);
            }
        }
    free(diff);
    free(tmp2);
    return EPAR_OK;
}
#undef IDX

int epar_exp_optimal_run(const struct epar_optimal_cfg *cfg, struct epar_optimal_result *res)
{
    memset(res, 0, sizeof *res);
    struct opt_run c;
    int st = opt_setup(&c, cfg, res);
    if (!st) st = opt_iterate(&c);
    if (!st) st = opt_reduce(&c, res);
    if (!st) st = opt_paired(&c, res);
    opt_run_free(&c);
    if (st) epar_exp_optimal_free(res);
    return st;
}

void epar_exp_optimal_free(struct epar_optimal_result *res)
{
    free(res->smean); free(res->sstd); free(res->seed_se);
    res->smean = res->sstd = res->seed_se = NULL;
}

int epar_exp_optimal_config(const struct epar_protocol *p, struct epar_optimal_cfg *cfg)
{
    const char *keys[8];
    epar_fields_keys(optimal_rows, NULL, keys, 8);
    int st = epar_protocol_check_keys(p, "optimal-position", keys);
    if (st || cfg->n_types) return st;
    struct optimal_in in = {"random,structured,sparse,dense,clustered"};
    if ((st = epar_protocol_obj_fields(p, epar_protocol_section(p, "optimal-position"), "$.experiments.optimal-position",
                                       optimal_rows, &in)))
        return st;
    if (epar_exp_optimal_parse_types(in.types, cfg)) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", epar_err_message());
        return epar_err_set(EPAR_EPROTOCOL, "invalid protocol '%s': $.experiments.optimal-position.types: %s", p->path,
                            msg);
    }
    return EPAR_OK;
}

EPAR_EXPERIMENT(optimal, "optimal-position", "optimal", NULL);
