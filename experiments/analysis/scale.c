/* Long-context scale analysis: generate one input (the reference's model: x = X + E, q = x W_Q^T + b_Q,
 * k = x W_K^T + b_K, I_j = ||X_j||), then time the analysis itself on the chosen path. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <gsl/gsl_cblas.h>
#include <omp.h>
#include "lib/blas.h"
#include "lib/err.h"
#include "lib/rng.h"
#include "experiments/common.h"
#include "experiments/analysis/scale.h"

/* How the BLAS kernel of this process was chosen (cmd/scale.c re-executes to upgrade, see lib/blas.h). */
static const char *blas_core_source(void)
{
    static char buf[160];
    const char *orig = getenv("EPAR_BLAS_REEXEC"), *env = getenv("OPENBLAS_CORETYPE");
    if (orig && orig[0])
        snprintf(buf, sizeof buf, "epar scale re-executed with OPENBLAS_CORETYPE=%s (OpenBLAS had "
                 "chosen %s, without AVX-512, on an AVX-512 CPU)", env ? env : "?", orig);
    else if (env && env[0])
        snprintf(buf, sizeof buf, "set by OPENBLAS_CORETYPE=%s", env);
    else
        snprintf(buf, sizeof buf, "chosen by OpenBLAS for this CPU (as in epar --version)");
    return buf;
}

static const struct { const char *name; enum epar_form form; } mechanisms[] = {
    {"epar-enhanced", EPAR_FORM_ENHANCED}, {"epar-basic", EPAR_FORM_BASIC}, {"none", EPAR_FORM_NONE}};

int epar_exp_scale_mechanism(const char *name, enum epar_form *form)
{
    for (size_t k = 0; k < sizeof mechanisms / sizeof mechanisms[0]; k++)
        if (!strcmp(name, mechanisms[k].name)) {
            *form = mechanisms[k].form;
            return EPAR_OK;
        }
    epar_err_set(EPAR_EINVAL, "unknown mechanism '%s'", name);
    struct epar_nearest near;
    epar_nearest_init(&near, name);
    for (size_t k = 0; k < sizeof mechanisms / sizeof mechanisms[0]; k++) epar_nearest_add(&near, mechanisms[k].name);
    if (near.best) epar_err_hint("did you mean %s? (the scale analysis supports: epar-enhanced, epar-basic, none)",
                                 epar_nearest_text(&near, ""));
    else epar_err_hint("the scale analysis supports: epar-enhanced, epar-basic, none");
    return EPAR_EINVAL;
}

const char *epar_exp_scale_mechanism_name(enum epar_form form)
{
    for (size_t k = 0; k < sizeof mechanisms / sizeof mechanisms[0]; k++)
        if (mechanisms[k].form == form) return mechanisms[k].name;
    return "?";
}

#define GEN_ROWS 512

/* Head 0 of the layer: Q, K (L,d) with d = D/H as double (Qd/Kd) or float (Qf/Kf), imp (L).
 * Row chunks: never more than GEN_ROWS x D of X at a time. */
static int make_inputs(const struct epar_params *prm, double *Qd, double *Kd, float *Qf, float *Kf, double *imp)
{
    int L = prm->length, D = prm->hidden, d = D / prm->heads, st = EPAR_ENOMEM;
    size_t DD = (size_t)D * D, chunk = (size_t)GEN_ROWS * D;
    unsigned long seed = prm->seeds[0];
    /* weights stream: E (L,D) first, then W_Q, b_Q, W_K, b_K, as epar_attn_layer_init draws them */
    gsl_rng *re = epar_rng_alloc(seed, 0, EPAR_RNG_WEIGHTS), *rw = epar_rng_alloc(seed, 0, EPAR_RNG_WEIGHTS);
    gsl_rng *rx = epar_rng_alloc(seed, 0, EPAR_RNG_DATA);
    double *W = EPAR_MALLOC((2 * DD + 2 * (size_t)D) * sizeof *W);
    double *X = EPAR_MALLOC(4 * chunk * sizeof *X);
    if (!re || !rw || !rx || !W || !X) goto done;
    double *Wq = W, *bq = Wq + DD, *Wk = bq + D, *bk = Wk + DD;
    double *E = X + chunk, *q = E + chunk, *k = q + chunk;
    for (size_t left = (size_t)L * D; left > 0;) {   /* skip E to reach the projections */
        size_t n = left < chunk ? left : chunk;
        epar_rng_normal(rw, E, n, 1.0);
        left -= n;
    }
    epar_rng_linear_init(rw, Wq, bq, D, D);
    epar_rng_linear_init(rw, Wk, bk, D, D);
    for (int r0 = 0; r0 < L; r0 += GEN_ROWS) {
        int nr = L - r0 < GEN_ROWS ? L - r0 : GEN_ROWS;
        size_t n = (size_t)nr * D;
        epar_rng_normal(rx, X, n, 1.0);
        epar_rng_normal(re, E, n, 1.0);
        for (int i = 0; i < nr; i++) {
            double s = 0;
            for (int c = 0; c < D; c++) s += X[(size_t)i * D + c] * X[(size_t)i * D + c];
            imp[r0 + i] = sqrt(s);          /* importance: norm of the input before the embedding */
        }
        for (size_t t = 0; t < n; t++) E[t] += X[t];
        for (int i = 0; i < nr; i++) {
            memcpy(q + (size_t)i * D, bq, (size_t)D * sizeof *q);
            memcpy(k + (size_t)i * D, bk, (size_t)D * sizeof *k);
        }
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nr, D, D, 1.0, E, D, Wq, D, 1.0, q, D);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nr, D, D, 1.0, E, D, Wk, D, 1.0, k, D);
        for (int i = 0; i < nr; i++) {     /* head 0: columns 0..d-1 */
            size_t src = (size_t)i * D, dst = (size_t)(r0 + i) * d;
            for (int c = 0; c < d; c++) {
                if (Qd) {
                    Qd[dst + c] = q[src + c];
                    Kd[dst + c] = k[src + c];
                } else {
                    Qf[dst + c] = (float)q[src + c];
                    Kf[dst + c] = (float)k[src + c];
                }
            }
        }
    }
    st = EPAR_OK;
done:
    epar_rng_free(re); epar_rng_free(rw); epar_rng_free(rx);
    free(W); free(X);
    if (st) epar_err_set(st, "out of memory generating the inputs (length %d)", L);
    return st;
}

/* user + system CPU time of the process (all threads) */
static double cpu_seconds(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru)) return NAN;
    return ru.ru_utime.tv_sec + 1e-6 * ru.ru_utime.tv_usec + ru.ru_stime.tv_sec + 1e-6 * ru.ru_stime.tv_usec;
}

static double peak_rss_mb(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru)) return NAN;
    return ru.ru_maxrss / 1024.0;   /* Linux: kilobytes */
}

int epar_exp_scale_run(const struct epar_scale_cfg *cfg, struct epar_scale_result *res)
{
    memset(res, 0, sizeof *res);
    const struct epar_params *prm = &cfg->prm;
    int L = prm->length, D = prm->hidden / prm->heads, st;   /* D here: the head width d */
    struct epar_stream_cfg sc = {
        .L = L, .d = D, .scale = 1.0 / sqrt(prm->score_scale_head ? (double)D : (double)prm->hidden), .inv_temp = 1.0 / prm->temperature,
        .fx = {prm->form, prm->alpha, prm->beta, prm->gamma}, .threads = cfg->threads};
    if ((st = epar_stream_cfg_validate(&sc))) return st;
    if (cfg->repeats < 1) return epar_err_set(EPAR_EINVAL, "repeats must be >= 1, got '%d'", cfg->repeats);
    res->path = epar_stream_choose(cfg->path, L, cfg->materialized_max_length);
    res->threads = cfg->threads;
    res->simd = epar_stream_simd();
    int mat = res->path == EPAR_STREAM_MATERIALIZED;

    /* refuse before drawing anything: inputs + the path's own memory */
    size_t LD = (size_t)L * D;
    size_t inputs = mat ? 2 * LD * sizeof(double) : 2 * LD * sizeof(float);
    size_t need = epar_stream_bytes(res->path, L, D, cfg->threads);
    if ((st = epar_stream_check_fit(need == SIZE_MAX ? SIZE_MAX : need + inputs, epar_stream_path_name(res->path), L)))
        return st;

    double *Qd = NULL, *Kd = NULL, *work = NULL, *imp = NULL, *times = NULL;
    float *Qf = NULL, *Kf = NULL;
    st = EPAR_ENOMEM;
    if (!(imp = epar_err_alloc((size_t)L, sizeof *imp, "importance"))) goto done;
    if (!(times = epar_err_alloc((size_t)cfg->repeats, sizeof *times, "timings"))) goto done;
    if (mat) {
        if (!(Qd = epar_err_alloc(2 * LD, sizeof *Qd, "queries and keys"))) goto done;
        Kd = Qd + LD;
        if (!(work = epar_err_alloc((size_t)L * L, sizeof *work, "the materialised (L,L) matrix"))) {
            epar_err_hint("use --path streaming (memory O(L*d)) for long sequences");
            goto done;
        }
    } else {
        if (!(Qf = epar_err_alloc(2 * LD, sizeof *Qf, "queries and keys"))) goto done;
        Kf = Qf + LD;
    }
    if ((st = epar_stream_result_alloc(&res->r, L))) goto done;
    /* BLAS single-threaded from here on (both paths parallelise over row blocks themselves): a
     * multi-threaded dgemm while drawing the inputs would leave OpenBLAS workers spinning during the timing */
    int blas_old = epar_blas_threads(1);
    st = make_inputs(prm, Qd, Kd, Qf, Kf, imp);
    if (st) {
        epar_blas_threads(blas_old);
        goto done;
    }

    if (cfg->progress) cfg->progress(cfg->progress_ctx, 0, cfg->repeats, 0);
    double cpu0 = cpu_seconds();
    for (int rep = 0; rep < cfg->repeats; rep++) {
        double t0 = omp_get_wtime();
        st = mat ? epar_stream_materialized(&sc, Qd, Kd, imp, work, &res->r)
                 : epar_stream_streaming(&sc, Qf, Kf, imp, &res->r);
        times[rep] = omp_get_wtime() - t0;
        if (st) break;
        if (cfg->progress) cfg->progress(cfg->progress_ctx, rep + 1, cfg->repeats, times[rep]);
    }
    epar_blas_threads(blas_old);
    if (st) goto done;
    res->cpu_seconds = (cpu_seconds() - cpu0) / cfg->repeats;
    gsl_sort(times, 1, (size_t)cfg->repeats);
    res->seconds = gsl_stats_median_from_sorted_data(times, 1, (size_t)cfg->repeats);
    res->seconds_min = times[0];
    res->seconds_max = times[cfg->repeats - 1];
    res->gflops = epar_stream_flops(L, D) / res->seconds / 1e9;
    res->peak_rss_mb = peak_rss_mb();

    st = EPAR_ENOMEM;
    res->scale = epar_csv_new("length,hidden,path,threads,seconds,gflops,peak_rss_mb,pos_star");
    res->summary = epar_csv_new("metric,value,note");
    if (!res->scale || !res->summary) goto done;
    if (epar_csv_append(res->scale, "iisiddd" "i", L, prm->hidden, epar_stream_path_name(res->path), cfg->threads,
                        res->seconds, res->gflops, res->peak_rss_mb, res->r.pos_star))
        goto done;
    const struct epar_stream_result *r = &res->r;
    if (epar_csv_append(res->summary, "sds", "pos_star", (double)r->pos_star, "argmax_i V(i), first index on ties") ||
        epar_csv_append(res->summary, "sds", "value_max", r->v_max, "V(pos*) = sum_j A_ij I_j at pos*") ||
        epar_csv_append(res->summary, "sds", "mean_entropy", r->mean_H, "mean over rows of -sum_j A_ij ln A_ij (nats)") ||
        epar_csv_append(res->summary, "sds", "max_entropy", log((double)L), "ln L, the entropy of a uniform row") ||
        epar_csv_append(res->summary, "sds", "mean_distance", r->mean_D, "mean over rows of sum_j A_ij |i-j| (positions)") ||
        epar_csv_append(res->summary, "sds", "seconds_median", res->seconds, "wall time of the analysis, inputs excluded") ||
        epar_csv_append(res->summary, "sds", "seconds_min", res->seconds_min, "fastest repetition") ||
        epar_csv_append(res->summary, "sds", "seconds_max", res->seconds_max, "slowest repetition") ||
        epar_csv_append(res->summary, "sds", "cpu_seconds_mean", res->cpu_seconds,
                        "process CPU time (user+sys, all threads) per repetition; about threads x seconds on an idle machine") ||
        epar_csv_append(res->summary, "sds", "repeats", (double)cfg->repeats, "timed repetitions") ||
        epar_csv_append(res->summary, "sds", "head_dim", (double)D, "d = hidden / heads: the width of the analysed head") ||
        epar_csv_append(res->summary, "sds", "flops", epar_stream_flops(L, D), "2 L^2 d: the score product, the unit of gflops") ||
        epar_csv_append(res->summary, "sss", "blas_core", epar_blas_core(), blas_core_source()))   /* the kernel used */
        goto done;
    st = EPAR_OK;
done:
    free(Qd); free(Qf); free(work); free(imp); free(times);
    if (st) epar_exp_scale_free(res);
    return st;
}

int epar_exp_scale_write(const struct epar_scale_cfg *cfg, const struct epar_scale_result *res, struct epar_out *o,
                         const char *protocol_path)
{
    int st;
    if ((st = epar_exp_write_table(o, "scale.csv", res->scale))) return st;
    if ((st = epar_exp_write_table(o, "summary.csv", res->summary))) return st;
    json_t *extra = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:s, s:s, s:b, s:I}", "mechanism",
                              epar_exp_scale_mechanism_name(cfg->prm.form), "path_requested",
                              epar_stream_path_name(cfg->path), "path", epar_stream_path_name(res->path),
                              "materialized_max_length", cfg->materialized_max_length, "repeats", cfg->repeats,
                              "threads", res->threads, "blas_core", epar_blas_core(), "blas_core_source",
                              blas_core_source(), "simd_avx2_fma", res->simd, "input_seed",
                              (json_int_t)cfg->prm.seeds[0]);
    return epar_exp_write_run_json(o, "scale", protocol_path, &cfg->prm, extra);
}

void epar_exp_scale_free(struct epar_scale_result *res)
{
    epar_stream_result_free(&res->r);
    epar_csv_free(res->scale);
    epar_csv_free(res->summary);
    res->scale = res->summary = NULL;
}
