#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cblas.h>      /* OpenBLAS: cblas_sgemm/dgemm and its thread / core controls */
#include <omp.h>
#include "blas.h"
#include "err.h"
#include "metrics.h"
#include "stream.h"
#include "target.h"

#define DEFAULT_ROW_BLOCK 128
#define DEFAULT_KEY_BLOCK 512
#define SP 32   /* keys per packed panel of K (the score tiles, below) */

int epar_stream_path_parse(const char *name, enum epar_stream_path *path)
{
    if (!strcmp(name, "auto")) *path = EPAR_STREAM_AUTO;
    else if (!strcmp(name, "materialized") || !strcmp(name, "materialised")) *path = EPAR_STREAM_MATERIALIZED;
    else if (!strcmp(name, "streaming")) *path = EPAR_STREAM_STREAMING;
    else {
        epar_err_set(EPAR_EINVAL, "unknown analysis path '%s'", name);
        epar_err_hint("use one of: auto, materialized, streaming");
        return EPAR_EINVAL;
    }
    return EPAR_OK;
}

const char *epar_stream_path_name(enum epar_stream_path path)
{
    switch (path) {
    case EPAR_STREAM_MATERIALIZED: return "materialized";
    case EPAR_STREAM_STREAMING: return "streaming";
    default: return "auto";
    }
}

enum epar_stream_path epar_stream_choose(enum epar_stream_path path, int L, int materialized_max_length)
{
    if (path != EPAR_STREAM_AUTO) return path;
    return L <= materialized_max_length ? EPAR_STREAM_MATERIALIZED : EPAR_STREAM_STREAMING;
}

int epar_stream_cfg_validate(const struct epar_stream_cfg *cfg)
{
    if (cfg->L < 1) return epar_err_set(EPAR_EINVAL, "length must be >= 1, got '%d'", cfg->L);
    if (cfg->d < 1) return epar_err_set(EPAR_EINVAL, "hidden must be >= 1, got '%d'", cfg->d);
    if (cfg->L > (1 << 24))
        return epar_err_set(EPAR_EINVAL, "length must be <= %d (distances are exact in float), got '%d'", 1 << 24,
                            cfg->L);
    if (!isfinite(cfg->scale)) return epar_err_set(EPAR_EINVAL, "score scale must be finite");
    if (!isfinite(cfg->inv_temp) || cfg->inv_temp <= 0)
        return epar_err_set(EPAR_EINVAL, "temperature must be a finite number > 0");
    if (cfg->threads < 1) return epar_err_set(EPAR_EINVAL, "threads must be >= 1, got '%d'", cfg->threads);
    if (cfg->row_block < 0 || cfg->key_block < 0)
        return epar_err_set(EPAR_EINVAL, "streaming tile sizes must be >= 0 (0 = default)");
    if (cfg->fx.form != EPAR_FORM_NONE) return epar_posfx_validate(&cfg->fx);
    return EPAR_OK;
}

double epar_stream_flops(int L, int d)
{
    return 2.0 * (double)L * (double)L * (double)d;
}

static int have_simd(void)
{
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return cached;
}

int epar_stream_simd(void)
{
    return have_simd();
}

int epar_stream_avx512(void)
{
    static int cached = -1;
    if (cached < 0)
        cached = have_simd() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
    return cached;
}

static int tile_rows(const struct epar_stream_cfg *cfg) { return cfg->row_block > 0 ? cfg->row_block : DEFAULT_ROW_BLOCK; }
static int tile_keys(const struct epar_stream_cfg *cfg) { return cfg->key_block > 0 ? cfg->key_block : DEFAULT_KEY_BLOCK; }

size_t epar_stream_bytes(enum epar_stream_path path, int L, int d, int threads)
{
    if (L < 1 || d < 1 || threads < 1) return 0;
    size_t l = (size_t)L;
    if (path == EPAR_STREAM_MATERIALIZED) {
        if (l > SIZE_MAX / l / sizeof(double) / 2) return SIZE_MAX;
        return l * l * sizeof(double) + (2 * l) * sizeof(double);
    }
    /* the effect table, the keys packed in panels (a copy of K: L d floats, rounded up to whole key blocks), and per
     * thread a tile of scores with two rows of exps and the rows' accumulators */
    size_t tile = ((size_t)DEFAULT_ROW_BLOCK + 2) * DEFAULT_KEY_BLOCK * sizeof(float) +
                  5 * DEFAULT_ROW_BLOCK * sizeof(double);
    size_t keys = (l + DEFAULT_KEY_BLOCK - 1) / DEFAULT_KEY_BLOCK * DEFAULT_KEY_BLOCK * (size_t)d * sizeof(float);
    return (2 * l + SP) * sizeof(float) + keys + (size_t)threads * tile;
}

/* memory available now, in bytes (0 if unknown) */
static size_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    size_t kb = 0;
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1) break;
        fclose(f);
    }
    if (kb) return kb * 1024;
    long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz : 0;
}

int epar_stream_check_fit(size_t bytes, const char *what, int L)
{
    size_t avail = mem_available();
    if (bytes == SIZE_MAX || (avail && bytes > avail)) {
        if (bytes == SIZE_MAX)
            epar_err_set(EPAR_ENOMEM, "the %s path at length %d needs more memory than can be addressed", what, L);
        else
            epar_err_set(EPAR_ENOMEM, "the %s path at length %d needs %.1f GiB but %.1f GiB are available", what, L,
                         bytes / 1073741824.0, avail / 1073741824.0);
        epar_err_hint("use --path streaming (memory O(L*d)) for long sequences");
        return EPAR_ENOMEM;
    }
    return EPAR_OK;
}

int epar_stream_result_alloc(struct epar_stream_result *r, int L)
{
    memset(r, 0, sizeof *r);
    double *m = epar_err_alloc(3 * (size_t)L, sizeof *m, "per-row results");
    if (!m) return EPAR_ENOMEM;
    r->V = m;
    r->H = m + L;
    r->D = m + 2 * (size_t)L;
    return EPAR_OK;
}

void epar_stream_result_free(struct epar_stream_result *r)
{
    free(r->V);
    memset(r, 0, sizeof *r);
}

/* m(|k|)/T for k = -(L-1)..L-1 at t[k + L-1]: a row i reads t + (L-1) - i + j for key j. */
static void effect_table_d(const struct epar_stream_cfg *cfg, double *t)
{
    int L = cfg->L;
    for (int k = 0; k < L; k++) {
        double m = cfg->fx.form == EPAR_FORM_NONE ? 1.0 : epar_posfx_value(&cfg->fx, (double)k, (double)L);
        t[L - 1 + k] = t[L - 1 - k] = m * cfg->inv_temp;
    }
}

/* pos*, largest V, means: sequential, fixed order */
static void summarise(struct epar_stream_result *r, int L)
{
    int best = (int)epar_metric_argmax_tied(r->V, (size_t)L, EPAR_METRIC_TIE_RTOL);
    double sh = 0.0, sd = 0.0;
    for (int i = 0; i < L; i++) {
        sh += r->H[i];
        sd += r->D[i];
    }
    r->pos_star = best;
    r->v_max = r->V[best];
    r->mean_H = sh / L;
    r->mean_D = sd / L;
}

/* ---------------- materialised (double) ---------------- */

int epar_stream_materialized(const struct epar_stream_cfg *cfg, const double *Q, const double *K,
                             const double *imp, double *work, struct epar_stream_result *r)
{
    int st = epar_stream_cfg_validate(cfg);
    if (st) return st;
    int L = cfg->L, d = cfg->d;
    double *mt = epar_err_alloc(2 * (size_t)L, sizeof *mt, "position-effect table");
    if (!mt) return EPAR_ENOMEM;
    effect_table_d(cfg, mt);

    /* fixed row blocks, each one dgemm then one fused sweep per row: the same BLAS calls whatever the
     * thread count (a multi-threaded dgemm splits its work by thread count and is not bit-stable) */
    int Br = tile_rows(cfg), nb = (L + Br - 1) / Br;
    int old = epar_blas_threads(1);
#pragma omp parallel for num_threads(cfg->threads) schedule(dynamic, 1)
    for (int rb = 0; rb < nb; rb++) {
        int r0 = rb * Br, nr = L - r0 < Br ? L - r0 : Br;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nr, L, d, cfg->scale, Q + (size_t)r0 * d, d, K, d,
                    0.0, work + (size_t)r0 * L, L);
        for (int i = r0; i < r0 + nr; i++) {
            double *z = work + (size_t)i * L;
            const double *m = mt + (L - 1) - i;
            double M = -INFINITY;
            for (int j = 0; j < L; j++) {   /* (4) factor on the scaled score, 1/T folded in */
                z[j] *= m[j];
                if (z[j] > M) M = z[j];
            }
            double S = 0.0, SZ = 0.0;
            for (int j = 0; j < L; j++) {
                double e = exp(z[j] - M);
                SZ += e * z[j];
                z[j] = e;
                S += e;
            }
            double inv = 1.0 / S, v = 0.0, dist = 0.0;
            for (int j = 0; j < L; j++) {
                double p = z[j] * inv;
                z[j] = p;
                v += p * imp[j];
                dist += p * (double)abs(i - j);
            }
            r->V[i] = v;
            r->D[i] = dist;
            r->H[i] = M + log(S) - SZ * inv;
        }
    }
    epar_blas_threads(old);
    free(mt);
    summarise(r, L);
    return EPAR_OK;
}

/* ---------------- streaming (float storage, double accumulation) ---------------- */

struct row_acc {
    double M, S, SV, SZ, SD;   /* running max; sums of e, e I_j, e z_j, e |i-j| with e = exp(z - M) */
};

/* Rescale the accumulators to a new running max. */
static inline void acc_rebase(struct row_acc *a, double bmax)
{
    if (bmax > a->M) {
        double f = a->M == -INFINITY ? 0.0 : exp(a->M - bmax);
        a->S *= f; a->SV *= f; a->SZ *= f; a->SD *= f;
        a->M = bmax;
    }
}

/* s[0..3] += the sums S, SV, SZ, SD over keys j0 .. n-1 of a row (e = exp(z_j - M) in float, summed in double, in
 * key order). Inlined into each form and compiled for its target (the AVX2 form's tail contracts to FMAs). */
static inline __attribute__((always_inline)) void row_sums(const float *z, const double *imp, int j0, int n, int off,
                                                          float M, double *s)
{
    double S = s[0], SV = s[1], SZ = s[2], SD = s[3];
    for (int j = j0; j < n; j++) {
        double e = expf(z[j] - M);
        S += e;
        SV += e * imp[j];
        SZ += e * z[j];
        SD += e * fabs((double)(off + j));
    }
    s[0] = S; s[1] = SV; s[2] = SZ; s[3] = SD;
}

/* One row of one key block, portable C. z (n) the row's scores, the effect already applied (score_block); imp (n)
 * importance; off = c0 - i, so key j is at signed offset off + j. */
static void row_block_c(const float *z, const double *imp, int n, int off, struct row_acc *a, float *ebuf)
{
    (void)ebuf;
    float bmax = -INFINITY;
    for (int j = 0; j < n; j++)
        if (z[j] > bmax) bmax = z[j];
    acc_rebase(a, bmax);
    double s[4] = {0, 0, 0, 0};
    row_sums(z, imp, 0, n, off, (float)a->M, s);
    a->S += s[0]; a->SV += s[1]; a->SZ += s[2]; a->SD += s[3];
}

#include <immintrin.h>
EPAR_TARGET_BEGIN("avx2,fma")

/* glibc libmvec: 8-lane AVX2 expf (max 4 ulp), linked through libm's AS_NEEDED libmvec. */
__m256 _ZGVdN8v_expf(__m256 x);

static inline double hsum4(__m256d v)
{
    __m128d lo = _mm256_castpd256_pd128(v), hi = _mm256_extractf128_pd(v, 1);
    lo = _mm_add_pd(lo, hi);
    return _mm_cvtsd_f64(_mm_add_sd(lo, _mm_unpackhi_pd(lo, lo)));
}

EPAR_TARGET_END
EPAR_TARGET_BEGIN("avx512f,avx2,fma")
__m512 _ZGVeN16v_expf(__m512 x);   /* glibc libmvec: 16 lanes (AVX-512) */
void epar_stream_exps16(float *out, const float *z, float M, int n)
{
    const __m512 vM = _mm512_set1_ps(M);
    int j = 0;
    for (; j + 16 <= n; j += 16) _mm512_storeu_ps(out + j, _ZGVeN16v_expf(_mm512_sub_ps(_mm512_loadu_ps(z + j), vM)));
    if (j < n) {   /* the lanes past n get exp(0) and are not stored */
        const __mmask16 m = (__mmask16)((1u << (n - j)) - 1u);
        _mm512_mask_storeu_ps(out + j, m, _ZGVeN16v_expf(_mm512_sub_ps(_mm512_mask_loadu_ps(vM, m, z + j), vM)));
    }
}
/* the largest of z[0 .. n) (n a multiple of 8), 16 lanes at a time in two chains (exact: the order does not matter) */
static float max16(const float *z, int n)
{
    __m512 a = _mm512_set1_ps(-INFINITY), b = a;
    int j = 0;
    for (; j + 32 <= n; j += 32) {
        a = _mm512_max_ps(a, _mm512_loadu_ps(z + j));
        b = _mm512_max_ps(b, _mm512_loadu_ps(z + j + 16));
    }
    if (j + 16 <= n) {
        a = _mm512_max_ps(a, _mm512_loadu_ps(z + j));
        j += 16;
    }
    if (j < n)   /* the last 8: into the low lanes of b only (a masked load would bring zeros into the max) */
        b = _mm512_mask_max_ps(b, 0x00ff, b, _mm512_maskz_loadu_ps(0x00ff, z + j));
    return _mm512_reduce_max_ps(_mm512_max_ps(a, b));
}
EPAR_TARGET_END
EPAR_TARGET_BEGIN("avx2,fma")

static int no_avx512;   /* 1: the 8-lane exps even with AVX-512 (lib/seams.h) */

static int have_avx512(void) { return !no_avx512 && epar_stream_avx512(); }

int epar_stream_set_no_avx512(int off)
{
    no_avx512 = off != 0;
    return have_avx512();
}

/* The first passes of row_block_avx2 over one row (scores z with the effect applied): the running max rebased,
 * ebuf (n8) = exp(z - M) for the whole groups of 8 lanes; returns n8 */
static int row_prep_avx2(const float *z, int n, struct row_acc *a, float *ebuf)
{
    int n8 = n & ~7, j = 0;
    float bmax = -INFINITY;
    /* independent chains of max (one chain waited on each max's latency: 16 % of the analysis), 16 lanes with
     * AVX-512; the max is exact, so neither the order nor the width changes a bit */
    if (have_avx512()) {
        if (n8) bmax = max16(z, n8);
        j = n8;
    } else {
        __m256 vmax = _mm256_set1_ps(-INFINITY), x1 = vmax, x2 = vmax, x3 = vmax;
        for (; j + 32 <= n8; j += 32) {
            vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(z + j));
            x1 = _mm256_max_ps(x1, _mm256_loadu_ps(z + j + 8));
            x2 = _mm256_max_ps(x2, _mm256_loadu_ps(z + j + 16));
            x3 = _mm256_max_ps(x3, _mm256_loadu_ps(z + j + 24));
        }
        for (; j < n8; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(z + j));
        vmax = _mm256_max_ps(_mm256_max_ps(vmax, x1), _mm256_max_ps(x2, x3));
        float lanes[8];
        _mm256_storeu_ps(lanes, vmax);
        for (int k = 0; k < 8; k++) if (lanes[k] > bmax) bmax = lanes[k];
    }
    for (; j < n; j++)
        if (z[j] > bmax) bmax = z[j];
    acc_rebase(a, bmax);
    float M = (float)a->M;
    __m256 vM = _mm256_set1_ps(M);
    /* exp in its own loop: libmvec's calls clobber every ymm register, so no accumulator lives across it */
    if (have_avx512())
        epar_stream_exps16(ebuf, z, M, n8);
    else
        for (j = 0; j < n8; j += 8) _mm256_storeu_ps(ebuf + j, _ZGVdN8v_expf(_mm256_sub_ps(_mm256_loadu_ps(z + j), vM)));
    return n8;
}

/* The last pass: sums[0..3] (S, SV, SZ, SD of lanes j < n8, from ebuf) and the lanes from n8 on in scalar, added
 * to the row's accumulators */
static void row_finish(const float *z, const double *imp, int n, int n8, int off, struct row_acc *a, double *sums)
{
    row_sums(z, imp, n8, n, off, (float)a->M, sums);
    a->S += sums[0]; a->SV += sums[1]; a->SZ += sums[2]; a->SD += sums[3];
}

/* AVX2 + FMA form of row_block_c: sums in double over 8 lanes (two vectors of 4) */
static void row_block_avx2(const float *z, const double *imp, int n, int off, struct row_acc *a, float *ebuf)
{
    int n8 = row_prep_avx2(z, n, a, ebuf), j;
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, v0 = s0, v1 = s0, z0 = s0, z1 = s0, d0 = s0, d1 = s0;
    const __m256d sign = _mm256_set1_pd(-0.0), step = _mm256_set1_pd(8.0);
    __m256d dlo = _mm256_setr_pd(off, off + 1, off + 2, off + 3), dhi = _mm256_add_pd(dlo, _mm256_set1_pd(4.0));
    for (j = 0; j < n8; j += 8) {
        __m256 zz = _mm256_loadu_ps(z + j);
        __m256 e = _mm256_loadu_ps(ebuf + j);
        __m256d elo = _mm256_cvtps_pd(_mm256_castps256_ps128(e)), ehi = _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1));
        __m256d zlo = _mm256_cvtps_pd(_mm256_castps256_ps128(zz)), zhi = _mm256_cvtps_pd(_mm256_extractf128_ps(zz, 1));
        s0 = _mm256_add_pd(s0, elo);
        s1 = _mm256_add_pd(s1, ehi);
        v0 = _mm256_fmadd_pd(elo, _mm256_loadu_pd(imp + j), v0);
        v1 = _mm256_fmadd_pd(ehi, _mm256_loadu_pd(imp + j + 4), v1);
        z0 = _mm256_fmadd_pd(elo, zlo, z0);
        z1 = _mm256_fmadd_pd(ehi, zhi, z1);
        d0 = _mm256_fmadd_pd(elo, _mm256_andnot_pd(sign, dlo), d0);
        d1 = _mm256_fmadd_pd(ehi, _mm256_andnot_pd(sign, dhi), d1);
        dlo = _mm256_add_pd(dlo, step);
        dhi = _mm256_add_pd(dhi, step);
    }
    double sums[4] = {hsum4(_mm256_add_pd(s0, s1)), hsum4(_mm256_add_pd(v0, v1)), hsum4(_mm256_add_pd(z0, z1)),
                      hsum4(_mm256_add_pd(d0, d1))};
    row_finish(z, imp, n, n8, off, a, sums);
}
EPAR_TARGET_END

/* Two rows of one key block (rows i and i + 1: z and z + ld, off and off - 1; ebuf and ebuf + ld) with
 * AVX-512: the sums of row_block_avx2 in 8 double lanes a vector, lane k holding what its s0 (k < 4) or s1 (k >= 4)
 * holds, folded the same way at the end: each row's sums bit for bit the AVX2 form's (test_stream). Each row's sums
 * are chains of dependent adds (4-cycle FMAs, one per 8 keys); two rows at once keep twice as many in flight. */
EPAR_TARGET_BEGIN("avx512f,avx2,fma")
static inline double fold8(__m512d v)
{
    return hsum4(_mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1)));
}

static void row_pair_512(const float *z, const double *imp, int n, int off, struct row_acc *a, float *ebuf,
                         ptrdiff_t ld)
{
    int n8 = row_prep_avx2(z, n, a, ebuf);
    row_prep_avx2(z + ld, n, a + 1, ebuf + ld);
    const float *zb = z + ld, *eb = ebuf + ld;
    __m512d sa = _mm512_setzero_pd(), va = sa, za = sa, da = sa, sb = sa, vb = sa, zbs = sa, db = sa;
    const __m512d step = _mm512_set1_pd(8.0), one = _mm512_set1_pd(1.0);
    __m512d dv = _mm512_setr_pd(off, off + 1, off + 2, off + 3, off + 4, off + 5, off + 6, off + 7);
    for (int j = 0; j < n8; j += 8) {
        __m512d w = _mm512_loadu_pd(imp + j);
        __m512d ea = _mm512_cvtps_pd(_mm256_loadu_ps(ebuf + j)), xa = _mm512_cvtps_pd(_mm256_loadu_ps(z + j));
        __m512d e2 = _mm512_cvtps_pd(_mm256_loadu_ps(eb + j)), x2 = _mm512_cvtps_pd(_mm256_loadu_ps(zb + j));
        sa = _mm512_add_pd(sa, ea);
        sb = _mm512_add_pd(sb, e2);
        va = _mm512_fmadd_pd(ea, w, va);
        vb = _mm512_fmadd_pd(e2, w, vb);
        za = _mm512_fmadd_pd(ea, xa, za);
        zbs = _mm512_fmadd_pd(e2, x2, zbs);
        da = _mm512_fmadd_pd(ea, _mm512_abs_pd(dv), da);
        db = _mm512_fmadd_pd(e2, _mm512_abs_pd(_mm512_sub_pd(dv, one)), db);
        dv = _mm512_add_pd(dv, step);
    }
    double sums_a[4] = {fold8(sa), fold8(va), fold8(za), fold8(da)};
    double sums_b[4] = {fold8(sb), fold8(vb), fold8(zbs), fold8(db)};
    row_finish(z, imp, n, n8, off, a, sums_a);
    row_finish(zb, imp, n, n8, off - 1, a + 1, sums_b);
}
EPAR_TARGET_END

/* ---------------- the score tiles ---------------- */

/* The scores of a row block against a key block: z_ij = ((q_i . k_j) * scale) * m(|i - j|) / T, each dot product one
 * chain of fused multiply-adds in the order of the d components (k = 0, 1, ...), from zero. Every form below computes
 * exactly that, so the scores have the same bits on every CPU and under every BLAS kernel (cblas_sgemm's order of
 * summation depends on the kernel OpenBLAS picks). The keys are packed once per analysis (pack_keys) into panels of
 * SP keys, d rows of SP floats each, so that a tile of rows reads one panel from L1 in vector loads and each row's
 * components are broadcast: at d = 64 and 128 x 512 tiles a stand-alone copy of the 8 x 32 tile, timed in a hot loop
 * outside bench/ (which measures the whole analysis against its floor), ran at 83-84 % of one core's fp32 FMA peak where
 * cblas_sgemm (OpenBLAS 0.3.21, SkylakeX kernel, Intel Xeon) reached 58-59 %: OpenBLAS packs both operands again in
 * every call, for a product of K = 64 only (bench/README.md). */
static int panels(int nc) { return (nc + SP - 1) / SP; }

/* Kp <- K (L, d) by key blocks of Bc keys: block b at Kp + b * panels(Bc) * SP * d, its keys in panels of SP (key
 * c0 + SP p + j of the block at column j of row k of panel p), zero past the block's last key */
static void pack_keys(float *Kp, const float *K, int L, int d, int Bc)
{
    for (int c0 = 0; c0 < L; c0 += Bc) {
        int nc = L - c0 < Bc ? L - c0 : Bc;
        float *blk = Kp + (size_t)(c0 / Bc) * panels(Bc) * SP * d;
        for (int p = 0; p < panels(nc); p++) {
            float *pn = blk + (size_t)p * SP * d;
            for (int j = 0; j < SP; j++) {
                int key = p * SP + j;
                for (int k = 0; k < d; k++) pn[(size_t)k * SP + j] = key < nc ? K[(size_t)(c0 + key) * d + k] : 0.0f;
            }
        }
    }
}

/* One tile of `rows` rows (q: row i's d components, rows at stride d) against one panel kp: z (rows at stride ldz)
 * columns 0 .. SP-1; m: the effect of row i at the panel's first key (row i + r reads m - r). Portable C, for x86-64
 * CPUs without AVX2 + FMA and the tests: fmaf keeps the vector forms' bits, at one library call per multiply-add
 * (about 10x the AVX2 path's time at L 2048 where sgemm had been 2.3x) */
static void tile_c(const float *q, int d, const float *kp, float *z, ptrdiff_t ldz, const float *m, float scale,
                   int rows)
{
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < SP; j++) {
            float s = 0.0f;
            for (int k = 0; k < d; k++) s = fmaf(q[(size_t)r * d + k], kp[(size_t)k * SP + j], s);
            z[r * ldz + j] = s * scale * m[j - r];
        }
}

EPAR_TARGET_BEGIN("avx2,fma")
/* tile_c with AVX2: R rows x 16 keys (half a panel) in 2R 8-lane accumulators, R <= 6 */
static inline __attribute__((always_inline)) void tile_avx2_r(int R, const float *q, int d, const float *kp, float *z,
                                                               ptrdiff_t ldz, const float *m, float scale)
{
    __m256 a0[6], a1[6];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) a0[r] = a1[r] = _mm256_setzero_ps();
    for (int k = 0; k < d; k++) {
        __m256 b0 = _mm256_loadu_ps(kp + (size_t)k * SP), b1 = _mm256_loadu_ps(kp + (size_t)k * SP + 8);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            __m256 qv = _mm256_set1_ps(q[(size_t)r * d + k]);
            a0[r] = _mm256_fmadd_ps(qv, b0, a0[r]);
            a1[r] = _mm256_fmadd_ps(qv, b1, a1[r]);
        }
    }
    const __m256 sc = _mm256_set1_ps(scale);
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
        _mm256_storeu_ps(z + r * ldz, _mm256_mul_ps(_mm256_mul_ps(a0[r], sc), _mm256_loadu_ps(m - r)));
        _mm256_storeu_ps(z + r * ldz + 8, _mm256_mul_ps(_mm256_mul_ps(a1[r], sc), _mm256_loadu_ps(m - r + 8)));
    }
}

static void tile_avx2(const float *q, int d, const float *kp, float *z, ptrdiff_t ldz, const float *m, float scale,
                      int rows)
{
    for (int t = 0; t < rows; t += 6) {
        const float *qt = q + (size_t)t * d, *mt = m - t;
        float *zt = z + t * ldz;
        for (int h = 0; h < SP; h += 16) switch (rows - t < 6 ? rows - t : 6) {
            case 6: tile_avx2_r(6, qt, d, kp + h, zt + h, ldz, mt + h, scale); break;
            case 5: tile_avx2_r(5, qt, d, kp + h, zt + h, ldz, mt + h, scale); break;
            case 4: tile_avx2_r(4, qt, d, kp + h, zt + h, ldz, mt + h, scale); break;
            case 3: tile_avx2_r(3, qt, d, kp + h, zt + h, ldz, mt + h, scale); break;
            case 2: tile_avx2_r(2, qt, d, kp + h, zt + h, ldz, mt + h, scale); break;
            default: tile_avx2_r(1, qt, d, kp + h, zt + h, ldz, mt + h, scale); break;
            }
    }
}
EPAR_TARGET_END

EPAR_TARGET_BEGIN("avx512f,avx2,fma")
/* tile_c with AVX-512: R rows x the whole panel (32 keys) in 2R 16-lane accumulators, R <= 8 */
static inline __attribute__((always_inline)) void tile_512_r(int R, const float *q, int d, const float *kp, float *z,
                                                              ptrdiff_t ldz, const float *m, float scale)
{
    __m512 a0[8], a1[8];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) a0[r] = a1[r] = _mm512_setzero_ps();
    for (int k = 0; k < d; k++) {
        __m512 b0 = _mm512_loadu_ps(kp + (size_t)k * SP), b1 = _mm512_loadu_ps(kp + (size_t)k * SP + 16);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            __m512 qv = _mm512_set1_ps(q[(size_t)r * d + k]);
            a0[r] = _mm512_fmadd_ps(qv, b0, a0[r]);
            a1[r] = _mm512_fmadd_ps(qv, b1, a1[r]);
        }
    }
    const __m512 sc = _mm512_set1_ps(scale);
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        _mm512_storeu_ps(z + r * ldz, _mm512_mul_ps(_mm512_mul_ps(a0[r], sc), _mm512_loadu_ps(m - r)));
        _mm512_storeu_ps(z + r * ldz + 16, _mm512_mul_ps(_mm512_mul_ps(a1[r], sc), _mm512_loadu_ps(m - r + 16)));
    }
}

static void tile_512(const float *q, int d, const float *kp, float *z, ptrdiff_t ldz, const float *m, float scale,
                     int rows)
{
    for (int t = 0; t < rows; t += 8) {
        const float *qt = q + (size_t)t * d, *mt = m - t;
        float *zt = z + t * ldz;
        switch (rows - t < 8 ? rows - t : 8) {
        case 8: tile_512_r(8, qt, d, kp, zt, ldz, mt, scale); break;
        case 7: tile_512_r(7, qt, d, kp, zt, ldz, mt, scale); break;
        case 6: tile_512_r(6, qt, d, kp, zt, ldz, mt, scale); break;
        case 5: tile_512_r(5, qt, d, kp, zt, ldz, mt, scale); break;
        case 4: tile_512_r(4, qt, d, kp, zt, ldz, mt, scale); break;
        case 3: tile_512_r(3, qt, d, kp, zt, ldz, mt, scale); break;
        case 2: tile_512_r(2, qt, d, kp, zt, ldz, mt, scale); break;
        default: tile_512_r(1, qt, d, kp, zt, ldz, mt, scale); break;
        }
    }
}
EPAR_TARGET_END

typedef void (*tile_fn)(const float *, int, const float *, float *, ptrdiff_t, const float *, float, int);

/* the scores of rows r0 .. r0+nr-1 against the key block at c0 (nc keys, packed at kb) into Sb (stride ldz, which
 * holds whole panels); mt: the effect table (padded by SP past its 2L - 1 entries) */
static void score_block(tile_fn tile, const float *Q, int d, int r0, int nr, const float *kb, int c0, int nc,
                        float *Sb, ptrdiff_t ldz, const float *mt, int L, float scale)
{
    /* a panel outermost: its d x SP floats stay in L1 while the row tiles pass over it */
    for (int p = 0; p < panels(nc); p++)
        tile(Q + (size_t)r0 * d, d, kb + (size_t)p * SP * d, Sb + p * SP, ldz, mt + (L - 1) + c0 + p * SP - r0, scale,
             nr);
}

int epar_stream_streaming(const struct epar_stream_cfg *cfg, const float *Q, const float *K, const double *imp,
                          struct epar_stream_result *r)
{
    int st = epar_stream_cfg_validate(cfg);
    if (st) return st;
    int L = cfg->L, d = cfg->d, Br = tile_rows(cfg), Bc = tile_keys(cfg);
    if (Br > L) Br = L;
    if (Bc > L) Bc = L;
    /* the effect table, padded with SP zeros: the last panel of a row's tiles reads past key L - 1 */
    float *mt = epar_err_alloc(2 * (size_t)L + SP, sizeof *mt, "position-effect table");
    double *mtd = epar_err_alloc(2 * (size_t)L, sizeof *mtd, "position-effect table");
    if (!mt || !mtd) {
        free(mt); free(mtd);
        return EPAR_ENOMEM;
    }
    effect_table_d(cfg, mtd);
    for (size_t k = 0; k < 2 * (size_t)L + SP; k++) mt[k] = k + 1 < 2 * (size_t)L ? (float)mtd[k] : 0.0f;
    free(mtd);

    int simd = have_simd() && !cfg->portable, wide = simd && have_avx512();   /* the AVX-512 forms */
    void (*kernel)(const float *, const double *, int, int, struct row_acc *, float *) =
        simd ? row_block_avx2 : row_block_c;
    tile_fn tile = wide ? tile_512 : simd ? tile_avx2 : tile_c;
    int nb = (L + Br - 1) / Br, T = cfg->threads;
    /* small problems: a fork-join costs more than it saves (and a scheduler quantum on a busy machine);
     * the thread count never changes the result */
    if (epar_stream_flops(L, d) < 1e8) T = 1;
    if (T > nb) T = nb;
    /* per-thread tiles allocated up front: no barrier inside the parallel region, so a thread that the
     * OS schedules late (a busy machine) never holds up the others */
    ptrdiff_t ldz = (ptrdiff_t)panels(Bc) * SP;   /* a row of scores holds whole panels */
    size_t tile_sz = ((size_t)Br + 2) * ldz;       /* scores (Br, ldz), then two rows of exp */
    size_t kp_sz = (size_t)((L + Bc - 1) / Bc) * panels(Bc) * SP * d;
    float *tiles = malloc((size_t)T * tile_sz * sizeof *tiles);
    float *Kp = aligned_alloc(64, (kp_sz * sizeof *Kp + 63) / 64 * 64);
    struct row_acc *accs = malloc((size_t)T * Br * sizeof *accs);
    if (!tiles || !accs || !Kp) {
        free(tiles); free(accs); free(Kp); free(mt);
        return epar_err_set(EPAR_ENOMEM, "out of memory for the streaming tiles (length %d)", L);
    }
    pack_keys(Kp, K, L, d, Bc);
#pragma omp parallel for num_threads(T) schedule(dynamic, 1)
    for (int rb = 0; rb < nb; rb++) {
        int tid = omp_get_thread_num();
        float *Sb = tiles + (size_t)tid * tile_sz, *ebuf = Sb + (size_t)Br * ldz;
        struct row_acc *acc = accs + (size_t)tid * Br;
        int r0 = rb * Br, nr = L - r0 < Br ? L - r0 : Br;
        for (int t = 0; t < nr; t++) acc[t] = (struct row_acc){-INFINITY, 0, 0, 0, 0};
        for (int c0 = 0; c0 < L; c0 += Bc) {
            int nc = L - c0 < Bc ? L - c0 : Bc;
            score_block(tile, Q, d, r0, nr, Kp + (size_t)(c0 / Bc) * panels(Bc) * SP * d, c0, nc, Sb, ldz, mt, L,
                        (float)cfg->scale);
            int t = 0;
            if (wide)   /* rows in pairs (AVX-512), an odd last one alone */
                for (; t + 1 < nr; t += 2) {
                    int i = r0 + t;
                    row_pair_512(Sb + (size_t)t * ldz, imp + c0, nc, c0 - i, acc + t, ebuf, ldz);
                }
            for (; t < nr; t++) {
                int i = r0 + t;
                kernel(Sb + (size_t)t * ldz, imp + c0, nc, c0 - i, acc + t, ebuf);
            }
        }
        for (int t = 0; t < nr; t++) {
            int i = r0 + t;
            double inv = 1.0 / acc[t].S;
            r->V[i] = acc[t].SV * inv;
            r->D[i] = acc[t].SD * inv;
            r->H[i] = acc[t].M + log(acc[t].S) - acc[t].SZ * inv;
        }
    }
    free(tiles);
    free(accs);
    free(Kp);
    free(mt);
    summarise(r, L);
    return EPAR_OK;
}
