/* stream: both paths against the worked EPAR rows of docs/MECHANISMS.md §3-4, the materialised path against
 * lib/attn + lib/metrics, the float streaming path (AVX2 and portable loops) against the double
 * materialised path, and byte-identical results across thread counts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_rng.h>
#include "lib/attn.h"
#include "lib/err.h"
#include "lib/metrics.h"
#include "lib/rng.h"
#include "lib/stream.h"
#include "lib/seams.h"
#include "check.h"

/* Run both paths on double Q, K (L,d), importance imp (L). */
static int run_paths(const struct epar_stream_cfg *cfg, const double *Q, const double *K, const double *imp,
                     struct epar_stream_result *mat, struct epar_stream_result *str, double *work)
{
    size_t n = (size_t)cfg->L * cfg->d;
    float *Qf = malloc(n * sizeof *Qf), *Kf = malloc(n * sizeof *Kf);
    for (size_t t = 0; t < n; t++) { Qf[t] = (float)Q[t]; Kf[t] = (float)K[t]; }
    int st = epar_stream_materialized(cfg, Q, K, imp, work, mat);
    if (!st) st = epar_stream_streaming(cfg, Qf, Kf, imp, str);
    free(Qf); free(Kf);
    return st;
}

/* Row 0 of the worked examples: q_0 = 1, k = s (d = 1, scale 1), the other queries 0. */
static void worked_row(enum epar_form form, const double *want_A, const char *name)
{
    const double s[4] = {0.5, -2, -2, -2}, imp[4] = {1, 2, 3, 4};
    double Q[4] = {1, 0, 0, 0}, work[16];
    struct epar_stream_cfg cfg = {.L = 4, .d = 1, .scale = 1, .inv_temp = 1, .fx = {form, 1, 1, 0.5}, .threads = 1};
    double v = 0, h = 0, dist = 0;
    for (int j = 0; j < 4; j++) {
        v += want_A[j] * imp[j];
        h -= want_A[j] * log(want_A[j]);
        dist += want_A[j] * j;
    }
    for (int portable = 0; portable < 2; portable++) {
        struct epar_stream_result mat, str;
        epar_stream_result_alloc(&mat, 4);
        epar_stream_result_alloc(&str, 4);
        cfg.portable = portable;
        check_int(run_paths(&cfg, Q, s, imp, &mat, &str, work), 0, "%s: both paths run", name);
        for (int j = 0; j < 4; j++) check_rel(work[j], want_A[j], 1e-5, "%s: materialised A_0%d", name, j);
        check_rel(mat.V[0], v, 1e-5, "%s: materialised V(0)", name);
        check_rel(mat.H[0], h, 1e-5, "%s: materialised H_0", name);
        check_rel(mat.D[0], dist, 1e-5, "%s: materialised D_0", name);
        check_rel(str.V[0], v, 1e-5, "%s: streaming V(0) (portable %d)", name, portable);
        check_rel(str.H[0], h, 1e-5, "%s: streaming H_0 (portable %d)", name, portable);
        check_rel(str.D[0], dist, 1e-5, "%s: streaming D_0 (portable %d)", name, portable);
        /* rows 1..3 have q = 0: uniform rows, H = ln 4, V = mean I = 2.5 */
        check_rel(str.H[2], log(4.0), 1e-6, "%s: zero query gives a uniform row", name);
        check_rel(str.V[3], 2.5, 1e-6, "%s: uniform row V = mean I", name);
        epar_stream_result_free(&mat);
        epar_stream_result_free(&str);
    }
}

int main(void)
{
    const double basic_A[4] = {0.647718, 0.0827525, 0.116792, 0.152738};
    const double enh_A[4] = {0.758425, 0.0721473, 0.0809278, 0.0884998};
    worked_row(EPAR_FORM_BASIC, basic_A, "basic worked row");
    worked_row(EPAR_FORM_ENHANCED, enh_A, "enhanced worked row");

    /* random high-entropy inputs; L not a multiple of any tile, tiles small so that the online max is
     * rebased many times and both the vector body and the scalar tail run */
    const int L = 777, d = 96;   /* 2 L^2 d > 1e8: large enough that the streaming path really uses threads */
    size_t n = (size_t)L * d;
    double *Q = malloc(n * sizeof *Q), *K = malloc(n * sizeof *K), *imp = malloc(L * sizeof *imp);
    double *work = malloc((size_t)L * L * sizeof *work), *A = malloc((size_t)L * L * sizeof *A);
    double *P = malloc((size_t)L * L * sizeof *P), *ref = malloc(3 * (size_t)L * sizeof *ref);
    gsl_rng *r = epar_rng_alloc(7, 0, EPAR_RNG_DATA);
    epar_rng_normal(r, Q, n, 1.0);
    epar_rng_normal(r, K, n, 1.0);
    for (int i = 0; i < L; i++) {           /* rows from nearly flat to sharply peaked */
        double g = 0.2 + 6.0 * i / L;
        for (int k = 0; k < d; k++) Q[(size_t)i * d + k] *= g;
    }
    epar_rng_uniform(r, imp, L, 0.5, 3.0);
    epar_rng_free(r);

    const enum epar_form forms[] = {EPAR_FORM_ENHANCED, EPAR_FORM_BASIC, EPAR_FORM_NONE};
    for (int f = 0; f < 3; f++) {
        struct epar_stream_cfg cfg = {.L = L, .d = d, .scale = 1 / sqrt((double)d), .inv_temp = 1 / 0.8,
                                      .fx = {forms[f], 1.3, 2.0, 1.5}, .threads = 2, .row_block = 64, .key_block = 100};
        const char *fn = epar_posfx_form_name(forms[f]);

        /* materialised vs the generic layer (lib/attn) + metrics (lib/metrics) */
        struct epar_attn_cfg acfg = {.L = L, .D = d, .heads = 1, .scale = cfg.scale, .inv_temp = cfg.inv_temp};
        epar_posfx_matrix(&cfg.fx, L, P);
        struct epar_attn_mods mods = {.factor = forms[f] == EPAR_FORM_NONE ? NULL : P};
        epar_attn_head(&acfg, &mods, 0, Q, K, d, A, NULL);
        epar_metric_value(A, imp, L, ref);
        epar_metric_row_entropy(A, L, ref + L);
        epar_metric_mean_distance(A, L, ref + 2 * L);

        struct epar_stream_result mat, str, str1, str3;
        epar_stream_result_alloc(&mat, L);
        epar_stream_result_alloc(&str, L);
        epar_stream_result_alloc(&str1, L);
        epar_stream_result_alloc(&str3, L);
        check_int(run_paths(&cfg, Q, K, imp, &mat, &str, work), 0, "%s: both paths run", fn);
        double worst_a = 0, worst_sum = 0;
        for (size_t t = 0; t < (size_t)L * L; t++) worst_a = fmax(worst_a, fabs(work[t] - A[t]));
        for (int i = 0; i < L; i++) {
            double s = 0;
            for (int j = 0; j < L; j++) s += work[(size_t)i * L + j];
            worst_sum = fmax(worst_sum, fabs(s - 1));
        }
        check_abs(worst_a, 0, 1e-13, "%s: materialised A equals lib/attn softmax", fn);
        check_abs(worst_sum, 0, 1e-12, "%s: materialised rows sum to 1", fn);
        double wv = 0, wh = 0, wd = 0, sv = 0, sh = 0, sd = 0;
        for (int i = 0; i < L; i++) {
            wv = fmax(wv, fabs(mat.V[i] - ref[i]) / ref[i]);
            wh = fmax(wh, fabs(mat.H[i] - ref[L + i]));
            wd = fmax(wd, fabs(mat.D[i] - ref[2 * L + i]) / fmax(ref[2 * L + i], 1e-3));
            sv = fmax(sv, fabs(str.V[i] - mat.V[i]) / mat.V[i]);
            sh = fmax(sh, fabs(str.H[i] - mat.H[i]));
            sd = fmax(sd, fabs(str.D[i] - mat.D[i]) / fmax(mat.D[i], 1e-3));
        }
        check_abs(wv, 0, 1e-12, "%s: materialised V matches epar_metric_value", fn);
        check_abs(wh, 0, 1e-10, "%s: materialised H matches epar_metric_row_entropy", fn);
        check_abs(wd, 0, 1e-12, "%s: materialised D matches epar_metric_mean_distance", fn);
        check_abs(sv, 0, 1e-5, "%s: streaming V within 1e-5 (relative) of the double path", fn);
        check_abs(sh, 0, 1e-5, "%s: streaming H within 1e-5 of the double path", fn);
        check_abs(sd, 0, 1e-5, "%s: streaming D within 1e-5 (relative) of the double path", fn);
        check_int(str.pos_star, mat.pos_star, "%s: pos* agrees between paths", fn);
        check_int(mat.pos_star, (long)ref_argmax(ref, L), "%s: pos* = argmax V", fn);
        check_rel(str.mean_H, mat.mean_H, 1e-6, "%s: mean entropy agrees", fn);

        /* determinism: byte-identical for 1, 2 and 3 threads (streaming and materialised) */
        float *Qf = malloc(n * sizeof *Qf), *Kf = malloc(n * sizeof *Kf);
        for (size_t t = 0; t < n; t++) { Qf[t] = (float)Q[t]; Kf[t] = (float)K[t]; }
        cfg.threads = 1;
        epar_stream_streaming(&cfg, Qf, Kf, imp, &str1);
        cfg.threads = 3;
        epar_stream_streaming(&cfg, Qf, Kf, imp, &str3);
        size_t bytes = (size_t)L * sizeof(double);
        int same = !memcmp(str1.V, str.V, bytes) && !memcmp(str1.H, str.H, bytes) && !memcmp(str1.D, str.D, bytes) &&
                   !memcmp(str3.V, str.V, bytes) && !memcmp(str3.H, str.H, bytes) && !memcmp(str3.D, str.D, bytes);
        check_true(same, "%s: streaming byte-identical for 1, 2, 3 threads", fn);
        /* the rows' exps 8 lanes at a time where the CPU would take 16, and their sums one row at a time in 4-lane
         * vectors where it would take two rows at once in 8-lane ones: the same bits (key blocks of 100: pairs of
         * 8-lane groups, a lone group and a scalar tail). Fails when the second row's distances are off by one */
        epar_stream_set_no_avx512(1);
        epar_stream_streaming(&cfg, Qf, Kf, imp, &str3);
        int wide = epar_stream_set_no_avx512(0);
        check_true(!memcmp(str1.V, str3.V, bytes) && !memcmp(str1.H, str3.H, bytes) && !memcmp(str1.D, str3.D, bytes),
                   "%s: streaming exps in 16 lanes and in 8, sums of row pairs and of single rows: the same bits%s", fn,
                   wide ? "" : " (no AVX-512 here: both 8)");
        /* key blocks of 56 (the last one 49): a row's max over 32 + 16 + 8 lanes and over 32 + 16, whole 32-key panels
         * and a partial one, in 16-lane and 8-lane forms: the same bits */
        cfg.key_block = 56;
        epar_stream_streaming(&cfg, Qf, Kf, imp, &str1);
        epar_stream_set_no_avx512(1);
        epar_stream_streaming(&cfg, Qf, Kf, imp, &str3);
        epar_stream_set_no_avx512(0);
        check_true(!memcmp(str1.V, str3.V, bytes) && !memcmp(str1.H, str3.H, bytes) && !memcmp(str1.D, str3.D, bytes),
                   "%s: key blocks of 56: AVX-512 and AVX2 forms give the same bits%s", fn,
                   wide ? "" : " (no AVX-512 here: both AVX2)");
        cfg.key_block = 100;
        cfg.threads = 1;
        epar_stream_materialized(&cfg, Q, K, imp, work, &str1);
        check_true(!memcmp(str1.V, mat.V, bytes) && !memcmp(str1.H, mat.H, bytes) && !memcmp(str1.D, mat.D, bytes),
                   "%s: materialised byte-identical for 1 and 2 threads", fn);
        /* the portable loop agrees with the double path too */
        cfg.portable = 1;
        cfg.threads = 2;
        epar_stream_streaming(&cfg, Qf, Kf, imp, &str3);
        double pv = 0, ph = 0;
        for (int i = 0; i < L; i++) {
            pv = fmax(pv, fabs(str3.V[i] - mat.V[i]) / mat.V[i]);
            ph = fmax(ph, fabs(str3.H[i] - mat.H[i]));
        }
        check_abs(pv, 0, 1e-5, "%s: portable streaming V within 1e-5 of the double path", fn);
        check_abs(ph, 0, 1e-5, "%s: portable streaming H within 1e-5 of the double path", fn);
        free(Qf); free(Kf);
        epar_stream_result_free(&str1);
        epar_stream_result_free(&str3);
        epar_stream_result_free(&mat);
        epar_stream_result_free(&str);
    }
    free(Q); free(K); free(imp); free(work); free(A); free(P); free(ref);

    /* paths, memory estimate, the resource refusal */
    enum epar_stream_path path;
    check_int(epar_stream_path_parse("streaming", &path), 0, "parse streaming");
    check_int(path, EPAR_STREAM_STREAMING, "streaming parsed");
    check_int(epar_stream_path_parse("materialised", &path), 0, "British spelling accepted");
    check_int(epar_stream_path_parse("fast", &path), EPAR_EINVAL, "unknown path is a usage error");
    check_int(epar_stream_choose(EPAR_STREAM_AUTO, 2048, 2048), EPAR_STREAM_MATERIALIZED, "auto: small L materialised");
    check_int(epar_stream_choose(EPAR_STREAM_AUTO, 2049, 2048), EPAR_STREAM_STREAMING, "auto: large L streams");
    size_t need = epar_stream_bytes(EPAR_STREAM_MATERIALIZED, 1 << 22, 64, 2);   /* 128 TiB */
    check_true(need >= (size_t)1 << 47, "materialised bytes grow as L^2");
    check_int(epar_stream_check_fit(need, "materialized", 1 << 22), EPAR_ENOMEM, "a 128 TiB matrix is refused");
    /* O(L d): the packed copy of K (L d floats, 32 MiB here) and O(L) besides */
    size_t packed = (size_t)131072 * 64 * sizeof(float);
    check_true(epar_stream_bytes(EPAR_STREAM_STREAMING, 131072, 64, 2) >= packed &&
               epar_stream_bytes(EPAR_STREAM_STREAMING, 131072, 64, 2) < packed + ((size_t)8 << 20),
               "streaming scratch at L=131072, d=64 is the packed keys (32 MiB) and under 8 MiB more");
    check_int(epar_stream_check_fit(1 << 20, "streaming", 1000), 0, "1 MiB fits");
    return check_summary("test_stream");
}
