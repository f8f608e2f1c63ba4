#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <gsl/gsl_cblas.h>
#include <immintrin.h>
#include "err.h"
#include "sparse.h"
#include "seams.h"
#include "target.h"

/* ================================================================== vector helpers
 * max of a range, and z <- exp(z - m) with the sum of the results. libmvec's exp (glibc, at most 4 ulp)
 * on AVX-512 or AVX2 when the CPU has them, libm's exp otherwise; chosen once per call. */

static int imin(int a, int b) { return a < b ? a : b; }

struct vops {
    double (*max)(const double *z, int n);
    double (*expsum)(double *z, int n, double m);
    /* z[k] <- scale q . K[u[k]] (rows of K with stride ldk), k < n */
    void (*dots)(const double *q, const double *K, int ldk, const int *u, int n, int d, double scale, double *z);
    /* o <- a o + sum_k p[k] V[u[k]] (rows of V with stride ldv), k < n; a = 0: o is not read */
    void (*axpys)(double *o, double a, const double *V, int ldv, const int *u, const double *p, int n, int d);
    /* the two products of a dense tile (NULL: cblas_dgemm), on the blocks of 4 rows x 4 keys that hold an allowed
     * pair (the intervals iv (nr, 5), see tile_dense): S (nr, kw) <- scale Q K^T there (other entries are left as
     * they are), and O (nr, d) += P V over the key range of each 4 rows (P (nr, kw) is 0 outside it) */
    void (*qk)(int nr, int kw, int d, double scale, const double *Q, int ldq, const double *K, int ldk, double *S,
               const int *iv);
    void (*pv)(int nr, int kw, int d, const double *P, const double *V, int ldv, double *O, int ldo, const int *iv);
};

/* the key range [lo, hi) of the allowed intervals of rows t0 .. t0+rb-1 (iv (nr, 5)); 0 if they have none */
static int block_range(const int *iv, int t0, int rb, int *lo, int *hi)
{
    *lo = INT_MAX;
    *hi = 0;
    for (int r = 0; r < rb; r++) {
        const int *v = iv + 5 * (t0 + r);
        if (!v[0]) continue;
        if (v[1] < *lo) *lo = v[1];
        if (v[2 * v[0]] > *hi) *hi = v[2 * v[0]];
    }
    return *hi > *lo;
}

static double max_c(const double *z, int n)
{
    double m = -INFINITY;
    for (int k = 0; k < n; k++)
        if (z[k] > m) m = z[k];
    return m;
}

static double expsum_c(double *z, int n, double m)
{
    double s = 0.0;
    for (int k = 0; k < n; k++) {
        z[k] = exp(z[k] - m);
        s += z[k];
    }
    return s;
}

static void dots_c(const double *q, const double *K, int ldk, const int *u, int n, int d, double scale, double *z)
{
    for (int k = 0; k < n; k++) {
        const double *kr = K + (size_t)u[k] * ldk;
        double a = 0.0;
        for (int c = 0; c < d; c++) a += q[c] * kr[c];
        z[k] = scale * a;
    }
}

static void axpys_c(double *o, double a, const double *V, int ldv, const int *u, const double *p, int n, int d)
{
    if (a == 0.0)
        memset(o, 0, (size_t)d * sizeof *o);
    else if (a != 1.0)
        for (int c = 0; c < d; c++) o[c] *= a;
    for (int k = 0; k < n; k++) {
        const double *vr = V + (size_t)u[k] * ldv;
        for (int c = 0; c < d; c++) o[c] += p[k] * vr[c];
    }
}

EPAR_TARGET_BEGIN("avx2,fma")
__m256d _ZGVdN4v_exp(__m256d x);   /* glibc libmvec, linked through libm's AS_NEEDED libmvec */

static double max_avx2(const double *z, int n)
{
    /* four independent chains, as max_avx512 (one waits on each max's latency); the max is exact */
    __m256d vm = _mm256_set1_pd(-INFINITY), x1 = vm, x2 = vm, x3 = vm;
    int k = 0;
    for (; k + 16 <= n; k += 16) {
        vm = _mm256_max_pd(vm, _mm256_loadu_pd(z + k));
        x1 = _mm256_max_pd(x1, _mm256_loadu_pd(z + k + 4));
        x2 = _mm256_max_pd(x2, _mm256_loadu_pd(z + k + 8));
        x3 = _mm256_max_pd(x3, _mm256_loadu_pd(z + k + 12));
    }
    for (; k + 4 <= n; k += 4) vm = _mm256_max_pd(vm, _mm256_loadu_pd(z + k));
    vm = _mm256_max_pd(_mm256_max_pd(vm, x1), _mm256_max_pd(x2, x3));
    double lane[4], m;
    _mm256_storeu_pd(lane, vm);
    m = lane[0] > lane[1] ? lane[0] : lane[1];
    if (lane[2] > m) m = lane[2];
    if (lane[3] > m) m = lane[3];
    for (; k < n; k++)
        if (z[k] > m) m = z[k];
    return m;
}

static double expsum_avx2(double *z, int n, double m)
{
    __m256d vm = _mm256_set1_pd(m), acc = _mm256_setzero_pd();
    int k = 0;
    for (; k + 4 <= n; k += 4) {
        __m256d e = _ZGVdN4v_exp(_mm256_sub_pd(_mm256_loadu_pd(z + k), vm));
        _mm256_storeu_pd(z + k, e);
        acc = _mm256_add_pd(acc, e);
    }
    if (k < n) {    /* the tail through a buffer padded with m (exp(0), dropped: padding with -inf would send
                     * the whole vector down libmvec's slow path for special inputs) */
        double t[4] = {m, m, m, m};
        memcpy(t, z + k, (size_t)(n - k) * sizeof *t);
        __m256d e = _ZGVdN4v_exp(_mm256_sub_pd(_mm256_loadu_pd(t), vm));
        _mm256_storeu_pd(t, e);
        for (int q = 0; q < n - k; q++) z[k + q] = t[q];
        __m256d keep = _mm256_castsi256_pd(_mm256_cmpgt_epi64(_mm256_set1_epi64x(n - k), _mm256_set_epi64x(3, 2, 1, 0)));
        acc = _mm256_add_pd(acc, _mm256_and_pd(e, keep));
    }
    double lane[4];
    _mm256_storeu_pd(lane, acc);
    return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}

static double hsum_avx2(__m256d a)
{
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}

static void dots_avx2(const double *q, const double *K, int ldk, const int *u, int n, int d, double scale, double *z)
{
    int k = 0;
    for (; k + 4 <= n; k += 4) {    /* four keys at a time: four independent accumulators */
        const double *k0 = K + (size_t)u[k] * ldk, *k1 = K + (size_t)u[k + 1] * ldk, *k2 = K + (size_t)u[k + 2] * ldk,
                     *k3 = K + (size_t)u[k + 3] * ldk;
        __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
        int c = 0;
        for (; c + 4 <= d; c += 4) {
            __m256d qv = _mm256_loadu_pd(q + c);
            a0 = _mm256_fmadd_pd(qv, _mm256_loadu_pd(k0 + c), a0);
            a1 = _mm256_fmadd_pd(qv, _mm256_loadu_pd(k1 + c), a1);
            a2 = _mm256_fmadd_pd(qv, _mm256_loadu_pd(k2 + c), a2);
            a3 = _mm256_fmadd_pd(qv, _mm256_loadu_pd(k3 + c), a3);
        }
        double t0 = hsum_avx2(a0), t1 = hsum_avx2(a1), t2 = hsum_avx2(a2), t3 = hsum_avx2(a3);
        for (; c < d; c++) {
            t0 += q[c] * k0[c]; t1 += q[c] * k1[c]; t2 += q[c] * k2[c]; t3 += q[c] * k3[c];
        }
        z[k] = scale * t0; z[k + 1] = scale * t1; z[k + 2] = scale * t2; z[k + 3] = scale * t3;
    }
    for (; k < n; k++) {
        const double *k0 = K + (size_t)u[k] * ldk;
        __m256d a0 = _mm256_setzero_pd();
        int c = 0;
        for (; c + 4 <= d; c += 4) a0 = _mm256_fmadd_pd(_mm256_loadu_pd(q + c), _mm256_loadu_pd(k0 + c), a0);
        double t0 = hsum_avx2(a0);
        for (; c < d; c++) t0 += q[c] * k0[c];
        z[k] = scale * t0;
    }
}

static void axpys_avx2(double *o, double a, const double *V, int ldv, const int *u, const double *p, int n, int d)
{
    __m256d va = _mm256_set1_pd(a);
    int c = 0;
    for (; c + 16 <= d; c += 16) {  /* 16 columns: four independent accumulators */
        __m256d o0 = _mm256_setzero_pd(), o1 = o0, o2 = o0, o3 = o0;
        if (a != 0.0) {
            o0 = _mm256_mul_pd(va, _mm256_loadu_pd(o + c)); o1 = _mm256_mul_pd(va, _mm256_loadu_pd(o + c + 4));
            o2 = _mm256_mul_pd(va, _mm256_loadu_pd(o + c + 8)); o3 = _mm256_mul_pd(va, _mm256_loadu_pd(o + c + 12));
        }
        for (int k = 0; k < n; k++) {
            const double *vr = V + (size_t)u[k] * ldv + c;
            __m256d pk = _mm256_set1_pd(p[k]);
            o0 = _mm256_fmadd_pd(pk, _mm256_loadu_pd(vr), o0);
            o1 = _mm256_fmadd_pd(pk, _mm256_loadu_pd(vr + 4), o1);
            o2 = _mm256_fmadd_pd(pk, _mm256_loadu_pd(vr + 8), o2);
            o3 = _mm256_fmadd_pd(pk, _mm256_loadu_pd(vr + 12), o3);
        }
        _mm256_storeu_pd(o + c, o0); _mm256_storeu_pd(o + c + 4, o1);
        _mm256_storeu_pd(o + c + 8, o2); _mm256_storeu_pd(o + c + 12, o3);
    }
    for (; c + 4 <= d; c += 4) {
        __m256d o0 = a != 0.0 ? _mm256_mul_pd(va, _mm256_loadu_pd(o + c)) : _mm256_setzero_pd();
        for (int k = 0; k < n; k++)
            o0 = _mm256_fmadd_pd(_mm256_set1_pd(p[k]), _mm256_loadu_pd(V + (size_t)u[k] * ldv + c), o0);
        _mm256_storeu_pd(o + c, o0);
    }
    for (; c < d; c++) {
        double x = a != 0.0 ? a * o[c] : 0.0;
        for (int k = 0; k < n; k++) x += p[k] * V[(size_t)u[k] * ldv + c];
        o[c] = x;
    }
}
EPAR_TARGET_END

EPAR_TARGET_BEGIN("avx512f,avx512vl,avx2,fma")
__m512d _ZGVeN8v_exp(__m512d x);

static double max_avx512(const double *z, int n)
{
    /* four independent chains (one waited on each max's latency: 5 % of the dense kernel); the max is exact */
    __m512d vm = _mm512_set1_pd(-INFINITY), x1 = vm, x2 = vm, x3 = vm;
    int k = 0;
    for (; k + 32 <= n; k += 32) {
        vm = _mm512_max_pd(vm, _mm512_loadu_pd(z + k));
        x1 = _mm512_max_pd(x1, _mm512_loadu_pd(z + k + 8));
        x2 = _mm512_max_pd(x2, _mm512_loadu_pd(z + k + 16));
        x3 = _mm512_max_pd(x3, _mm512_loadu_pd(z + k + 24));
    }
    for (; k + 8 <= n; k += 8) vm = _mm512_max_pd(vm, _mm512_loadu_pd(z + k));
    double m = _mm512_reduce_max_pd(_mm512_max_pd(_mm512_max_pd(vm, x1), _mm512_max_pd(x2, x3)));
    for (; k < n; k++)
        if (z[k] > m) m = z[k];
    return m;
}

static double expsum_avx512(double *z, int n, double m)
{
    __m512d vm = _mm512_set1_pd(m), acc = _mm512_setzero_pd();
    int k = 0;
    for (; k + 8 <= n; k += 8) {
        __m512d e = _ZGVeN8v_exp(_mm512_sub_pd(_mm512_loadu_pd(z + k), vm));
        _mm512_storeu_pd(z + k, e);
        acc = _mm512_add_pd(acc, e);
    }
    if (k < n) {    /* the tail masked; the lanes past it hold exp(0) and are dropped (padding them with -inf
                     * would send the whole vector down libmvec's slow path for special inputs) */
        __mmask8 mk = (__mmask8)((1u << (n - k)) - 1);
        __m512d e = _ZGVeN8v_exp(_mm512_sub_pd(_mm512_mask_loadu_pd(vm, mk, z + k), vm));
        _mm512_mask_storeu_pd(z + k, mk, e);
        acc = _mm512_mask_add_pd(acc, mk, acc, e);
    }
    return _mm512_reduce_add_pd(acc);
}

/* four sums of the lanes of a0..a3, times scale, in one vector */
static __m256d sum4_avx512(__m512d a0, __m512d a1, __m512d a2, __m512d a3, __m256d scale)
{
    __m256d b0 = _mm256_add_pd(_mm512_castpd512_pd256(a0), _mm512_extractf64x4_pd(a0, 1)),
            b1 = _mm256_add_pd(_mm512_castpd512_pd256(a1), _mm512_extractf64x4_pd(a1, 1)),
            b2 = _mm256_add_pd(_mm512_castpd512_pd256(a2), _mm512_extractf64x4_pd(a2, 1)),
            b3 = _mm256_add_pd(_mm512_castpd512_pd256(a3), _mm512_extractf64x4_pd(a3, 1));
    __m256d h01 = _mm256_hadd_pd(b0, b1), h23 = _mm256_hadd_pd(b2, b3);
    return _mm256_mul_pd(scale, _mm256_add_pd(_mm256_permute2f128_pd(h01, h23, 0x20),
                                              _mm256_permute2f128_pd(h01, h23, 0x31)));
}

static void dots_avx512(const double *q, const double *K, int ldk, const int *u, int n, int d, double scale, double *z)
{
    int k = 0, dt = d & 7;
    __mmask8 mt = (__mmask8)((1u << dt) - 1);     /* the last d mod 8 columns */
    for (; k + 4 <= n; k += 4) {    /* four keys at a time: four independent accumulators */
        const double *k0 = K + (size_t)u[k] * ldk, *k1 = K + (size_t)u[k + 1] * ldk, *k2 = K + (size_t)u[k + 2] * ldk,
                     *k3 = K + (size_t)u[k + 3] * ldk;
        __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
        int c = 0;
        for (; c + 8 <= d; c += 8) {
            __m512d qv = _mm512_loadu_pd(q + c);
            a0 = _mm512_fmadd_pd(qv, _mm512_loadu_pd(k0 + c), a0);
            a1 = _mm512_fmadd_pd(qv, _mm512_loadu_pd(k1 + c), a1);
            a2 = _mm512_fmadd_pd(qv, _mm512_loadu_pd(k2 + c), a2);
            a3 = _mm512_fmadd_pd(qv, _mm512_loadu_pd(k3 + c), a3);
        }
        if (dt) {
            __m512d qv = _mm512_maskz_loadu_pd(mt, q + c);
            a0 = _mm512_fmadd_pd(qv, _mm512_maskz_loadu_pd(mt, k0 + c), a0);
            a1 = _mm512_fmadd_pd(qv, _mm512_maskz_loadu_pd(mt, k1 + c), a1);
            a2 = _mm512_fmadd_pd(qv, _mm512_maskz_loadu_pd(mt, k2 + c), a2);
            a3 = _mm512_fmadd_pd(qv, _mm512_maskz_loadu_pd(mt, k3 + c), a3);
        }
        _mm256_storeu_pd(z + k, sum4_avx512(a0, a1, a2, a3, _mm256_set1_pd(scale)));
    }
    for (; k < n; k++) {    /* the last 1-3 keys: four accumulators along d (short dependency chains) */
        const double *k0 = K + (size_t)u[k] * ldk;
        __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
        int c = 0;
        for (; c + 32 <= d; c += 32) {
            a0 = _mm512_fmadd_pd(_mm512_loadu_pd(q + c), _mm512_loadu_pd(k0 + c), a0);
            a1 = _mm512_fmadd_pd(_mm512_loadu_pd(q + c + 8), _mm512_loadu_pd(k0 + c + 8), a1);
            a2 = _mm512_fmadd_pd(_mm512_loadu_pd(q + c + 16), _mm512_loadu_pd(k0 + c + 16), a2);
            a3 = _mm512_fmadd_pd(_mm512_loadu_pd(q + c + 24), _mm512_loadu_pd(k0 + c + 24), a3);
        }
        for (; c + 8 <= d; c += 8) a0 = _mm512_fmadd_pd(_mm512_loadu_pd(q + c), _mm512_loadu_pd(k0 + c), a0);
        if (dt) a1 = _mm512_fmadd_pd(_mm512_maskz_loadu_pd(mt, q + c), _mm512_maskz_loadu_pd(mt, k0 + c), a1);
        z[k] = scale * _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)));
    }
}

static void axpys_avx512(double *o, double a, const double *V, int ldv, const int *u, const double *p, int n, int d)
{
    __m512d va = _mm512_set1_pd(a);
    int c = 0;
    for (; c + 32 <= d; c += 32) {  /* 32 columns: four independent accumulators */
        __m512d o0 = _mm512_setzero_pd(), o1 = o0, o2 = o0, o3 = o0;
        if (a != 0.0) {
            o0 = _mm512_mul_pd(va, _mm512_loadu_pd(o + c)); o1 = _mm512_mul_pd(va, _mm512_loadu_pd(o + c + 8));
            o2 = _mm512_mul_pd(va, _mm512_loadu_pd(o + c + 16)); o3 = _mm512_mul_pd(va, _mm512_loadu_pd(o + c + 24));
        }
        for (int k = 0; k < n; k++) {
            const double *vr = V + (size_t)u[k] * ldv + c;
            __m512d pk = _mm512_set1_pd(p[k]);
            o0 = _mm512_fmadd_pd(pk, _mm512_loadu_pd(vr), o0);
            o1 = _mm512_fmadd_pd(pk, _mm512_loadu_pd(vr + 8), o1);
            o2 = _mm512_fmadd_pd(pk, _mm512_loadu_pd(vr + 16), o2);
            o3 = _mm512_fmadd_pd(pk, _mm512_loadu_pd(vr + 24), o3);
        }
        _mm512_storeu_pd(o + c, o0); _mm512_storeu_pd(o + c + 8, o1);
        _mm512_storeu_pd(o + c + 16, o2); _mm512_storeu_pd(o + c + 24, o3);
    }
    for (; c < d; c += 8) {         /* 8 columns at a time, the last ones masked */
        __mmask8 mk = d - c >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (d - c)) - 1);
        __m512d o0 = a != 0.0 ? _mm512_mul_pd(va, _mm512_maskz_loadu_pd(mk, o + c)) : _mm512_setzero_pd();
        for (int k = 0; k < n; k++)
            o0 = _mm512_fmadd_pd(_mm512_set1_pd(p[k]), _mm512_maskz_loadu_pd(mk, V + (size_t)u[k] * ldv + c), o0);
        _mm512_mask_storeu_pd(o + c, mk, o0);
    }
}

/* one row of a 4 x 4 block: a<r>0..3 += q<r> . k0..3 (macros: GCC -O2 keeps named variables in registers, a
 * 4 x 4 array of vectors went to the stack) */
#define QK_ROW(r, qv)                                                    \
    do {                                                                 \
        __m512d q_ = (qv);                                               \
        a##r##0 = _mm512_fmadd_pd(q_, kv0, a##r##0);                     \
        a##r##1 = _mm512_fmadd_pd(q_, kv1, a##r##1);                     \
        a##r##2 = _mm512_fmadd_pd(q_, kv2, a##r##2);                     \
        a##r##3 = _mm512_fmadd_pd(q_, kv3, a##r##3);                     \
    } while (0)

/* Q K^T by blocks of 4 rows x 4 keys, each a 4 x 4 set of dot products along d (K as stored: no packing, no
 * transposition); a block's last rows and keys past the tile repeat its last ones, their results dropped */
static void qk_avx512(int nr, int kw, int d, double scale, const double *Q, int ldq, const double *K, int ldk,
                      double *S, const int *iv)
{
    int dt = d & 7, lo, hi;
    __mmask8 mt = (__mmask8)((1u << dt) - 1);
    __m256d vs = _mm256_set1_pd(scale);
    for (int t0 = 0; t0 < nr; t0 += 4) {
        int rb = imin(4, nr - t0);
        if (!block_range(iv, t0, rb, &lo, &hi)) continue;
        const double *q0 = Q + (size_t)t0 * ldq, *q1 = Q + (size_t)(t0 + imin(1, rb - 1)) * ldq,
                     *q2 = Q + (size_t)(t0 + imin(2, rb - 1)) * ldq, *q3 = Q + (size_t)(t0 + imin(3, rb - 1)) * ldq;
        for (int u0 = lo / 4 * 4; u0 < hi; u0 += 4) {
            int kb = imin(4, kw - u0);
            const double *k0 = K + (size_t)u0 * ldk, *k1 = K + (size_t)(u0 + imin(1, kb - 1)) * ldk,
                         *k2 = K + (size_t)(u0 + imin(2, kb - 1)) * ldk, *k3 = K + (size_t)(u0 + imin(3, kb - 1)) * ldk;
            __m512d a00 = _mm512_setzero_pd(), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00, a12 = a00,
                    a13 = a00, a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00, a31 = a00, a32 = a00, a33 = a00;
            int c = 0;
            for (; c + 8 <= d; c += 8) {
                __m512d kv0 = _mm512_loadu_pd(k0 + c), kv1 = _mm512_loadu_pd(k1 + c), kv2 = _mm512_loadu_pd(k2 + c),
                        kv3 = _mm512_loadu_pd(k3 + c);
                QK_ROW(0, _mm512_loadu_pd(q0 + c));
                QK_ROW(1, _mm512_loadu_pd(q1 + c));
                QK_ROW(2, _mm512_loadu_pd(q2 + c));
                QK_ROW(3, _mm512_loadu_pd(q3 + c));
            }
            if (dt) {
                __m512d kv0 = _mm512_maskz_loadu_pd(mt, k0 + c), kv1 = _mm512_maskz_loadu_pd(mt, k1 + c),
                        kv2 = _mm512_maskz_loadu_pd(mt, k2 + c), kv3 = _mm512_maskz_loadu_pd(mt, k3 + c);
                QK_ROW(0, _mm512_maskz_loadu_pd(mt, q0 + c));
                QK_ROW(1, _mm512_maskz_loadu_pd(mt, q1 + c));
                QK_ROW(2, _mm512_maskz_loadu_pd(mt, q2 + c));
                QK_ROW(3, _mm512_maskz_loadu_pd(mt, q3 + c));
            }
            __mmask8 ms = (__mmask8)((1u << kb) - 1);
            double *s0 = S + (size_t)t0 * kw + u0;
            _mm256_mask_storeu_pd(s0, ms, sum4_avx512(a00, a01, a02, a03, vs));
            if (rb > 1) _mm256_mask_storeu_pd(s0 + kw, ms, sum4_avx512(a10, a11, a12, a13, vs));
            if (rb > 2) _mm256_mask_storeu_pd(s0 + 2 * (size_t)kw, ms, sum4_avx512(a20, a21, a22, a23, vs));
            if (rb > 3) _mm256_mask_storeu_pd(s0 + 3 * (size_t)kw, ms, sum4_avx512(a30, a31, a32, a33, vs));
        }
    }
}
#undef QK_ROW

/* one row of O += P V: a<r>0..3 += p<r>[u] v0..3 */
#define PV_ROW(r)                                                        \
    do {                                                                 \
        __m512d p_ = _mm512_set1_pd(p##r[u]);                            \
        a##r##0 = _mm512_fmadd_pd(p_, v0, a##r##0);                       \
        a##r##1 = _mm512_fmadd_pd(p_, v1, a##r##1);                       \
        a##r##2 = _mm512_fmadd_pd(p_, v2, a##r##2);                       \
        a##r##3 = _mm512_fmadd_pd(p_, v3, a##r##3);                       \
    } while (0)

/* O += P V by blocks of 4 rows: 4 x 32 columns of O in registers, over the keys of the block's range */
static void pv_avx512(int nr, int kw, int d, const double *P, const double *V, int ldv, double *O, int ldo,
                      const int *iv)
{
    int lo, hi;
    for (int t0 = 0; t0 < nr; t0 += 4) {
        int rb = imin(4, nr - t0);
        if (!block_range(iv, t0, rb, &lo, &hi)) continue;
        const double *p0 = P + (size_t)t0 * kw, *p1 = P + (size_t)(t0 + imin(1, rb - 1)) * kw,
                     *p2 = P + (size_t)(t0 + imin(2, rb - 1)) * kw, *p3 = P + (size_t)(t0 + imin(3, rb - 1)) * kw;
        double *o0 = O + (size_t)t0 * ldo, *o1 = O + (size_t)(t0 + imin(1, rb - 1)) * ldo,
               *o2 = O + (size_t)(t0 + imin(2, rb - 1)) * ldo, *o3 = O + (size_t)(t0 + imin(3, rb - 1)) * ldo;
        int c = 0;
        for (; c + 32 <= d; c += 32) {
            __m512d a00 = _mm512_loadu_pd(o0 + c), a01 = _mm512_loadu_pd(o0 + c + 8), a02 = _mm512_loadu_pd(o0 + c + 16),
                    a03 = _mm512_loadu_pd(o0 + c + 24), a10 = _mm512_loadu_pd(o1 + c), a11 = _mm512_loadu_pd(o1 + c + 8),
                    a12 = _mm512_loadu_pd(o1 + c + 16), a13 = _mm512_loadu_pd(o1 + c + 24), a20 = _mm512_loadu_pd(o2 + c),
                    a21 = _mm512_loadu_pd(o2 + c + 8), a22 = _mm512_loadu_pd(o2 + c + 16),
                    a23 = _mm512_loadu_pd(o2 + c + 24), a30 = _mm512_loadu_pd(o3 + c), a31 = _mm512_loadu_pd(o3 + c + 8),
                    a32 = _mm512_loadu_pd(o3 + c + 16), a33 = _mm512_loadu_pd(o3 + c + 24);
            for (int u = lo; u < hi; u++) {
                const double *vr = V + (size_t)u * ldv + c;
                __m512d v0 = _mm512_loadu_pd(vr), v1 = _mm512_loadu_pd(vr + 8), v2 = _mm512_loadu_pd(vr + 16),
                        v3 = _mm512_loadu_pd(vr + 24);
                PV_ROW(0);
                PV_ROW(1);
                PV_ROW(2);
                PV_ROW(3);
            }
            _mm512_storeu_pd(o0 + c, a00); _mm512_storeu_pd(o0 + c + 8, a01);
            _mm512_storeu_pd(o0 + c + 16, a02); _mm512_storeu_pd(o0 + c + 24, a03);
            if (rb > 1) {
                _mm512_storeu_pd(o1 + c, a10); _mm512_storeu_pd(o1 + c + 8, a11);
                _mm512_storeu_pd(o1 + c + 16, a12); _mm512_storeu_pd(o1 + c + 24, a13);
            }
            if (rb > 2) {
                _mm512_storeu_pd(o2 + c, a20); _mm512_storeu_pd(o2 + c + 8, a21);
                _mm512_storeu_pd(o2 + c + 16, a22); _mm512_storeu_pd(o2 + c + 24, a23);
            }
            if (rb > 3) {
                _mm512_storeu_pd(o3 + c, a30); _mm512_storeu_pd(o3 + c + 8, a31);
                _mm512_storeu_pd(o3 + c + 16, a32); _mm512_storeu_pd(o3 + c + 24, a33);
            }
        }
        for (; c < d; c += 8) {
            __mmask8 mk = d - c >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (d - c)) - 1);
            __m512d b0 = _mm512_maskz_loadu_pd(mk, o0 + c), b1 = _mm512_maskz_loadu_pd(mk, o1 + c),
                    b2 = _mm512_maskz_loadu_pd(mk, o2 + c), b3 = _mm512_maskz_loadu_pd(mk, o3 + c);
            for (int u = lo; u < hi; u++) {
                __m512d v0 = _mm512_maskz_loadu_pd(mk, V + (size_t)u * ldv + c);
                b0 = _mm512_fmadd_pd(_mm512_set1_pd(p0[u]), v0, b0);
                b1 = _mm512_fmadd_pd(_mm512_set1_pd(p1[u]), v0, b1);
                b2 = _mm512_fmadd_pd(_mm512_set1_pd(p2[u]), v0, b2);
                b3 = _mm512_fmadd_pd(_mm512_set1_pd(p3[u]), v0, b3);
            }
            _mm512_mask_storeu_pd(o0 + c, mk, b0);
            if (rb > 1) _mm512_mask_storeu_pd(o1 + c, mk, b1);
            if (rb > 2) _mm512_mask_storeu_pd(o2 + c, mk, b2);
            if (rb > 3) _mm512_mask_storeu_pd(o3 + c, mk, b3);
        }
    }
}
#undef PV_ROW
EPAR_TARGET_END

static const struct vops ops_c = {max_c, expsum_c, dots_c, axpys_c, NULL, NULL},
                         ops_avx2 = {max_avx2, expsum_avx2, dots_avx2, axpys_avx2, NULL, NULL},
                         ops_avx512 = {max_avx512, expsum_avx512, dots_avx512, axpys_avx512, qk_avx512, pv_avx512};

static const struct vops *isa_forced;   /* epar_sparse_set_isa */

int epar_sparse_set_isa(const char *name)
{
    __builtin_cpu_init();
    if (!name) {
        isa_forced = NULL;
        return EPAR_OK;
    }
    if (!strcmp(name, "c"))
        isa_forced = &ops_c;
    else if (!strcmp(name, "avx2") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        isa_forced = &ops_avx2;
    else if (!strcmp(name, "avx512") && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl"))
        isa_forced = &ops_avx512;
    else
        return epar_err_set(EPAR_EINVAL, "vector kernels '%s' unknown or not supported by this CPU", name);
    return EPAR_OK;
}

static const struct vops *vops(void)
{
    if (isa_forced) return isa_forced;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) return &ops_avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &ops_avx2;
    return &ops_c;
}

/* ================================================================== patterns and their pieces */

static const char *const kernel_names[EPAR_SPARSE_COUNT] = {
    [EPAR_SPARSE_WINDOW] = "row by row (<= 16 keys per row), or band tiles",
    [EPAR_SPARSE_BLOCK] = "row by row (<= 16 keys per row), or block-band tiles",
    [EPAR_SPARSE_STRIDED] = "band tiles + residue-class tiles (mod l), one softmax",
    [EPAR_SPARSE_FIXED] = "own-block tiles + gathered summary-column tiles, one softmax",
    [EPAR_SPARSE_GLOBAL_LOCAL] = "row by row (<= 16 keys per row), or dense global rows + band tiles + "
                                 "global-column tiles, one softmax",
    [EPAR_SPARSE_PI] = "ring-band tiles + residue-class tiles (mod pi), two softmaxes, gate"};
static_assert(sizeof kernel_names / sizeof kernel_names[0] == EPAR_SPARSE_COUNT, "one name per kind");

const char *epar_sparse_kernel_name(enum epar_sparse_kind kind)
{
    return kind < EPAR_SPARSE_COUNT ? kernel_names[kind] : "?";
}

/* The structured kernel of each mask mechanism, indexed by lib/mech's ids as lib/nnpos's training rows are: its
 * kind and where its catalogue parameters p[0..3] go in the pattern (the offset + 1 of an int field, 0 for none;
 * GATE: the double gate; STRIDE: p[0] read through epar_mech_stride, which applies the sqrt(L) default). */
#define F_(field) (offsetof(struct epar_sparse_pattern, field) + 1)
#define GATE_ ((size_t)-1)
#define STRIDE_ ((size_t)-2)
static const struct from_mech {
    int has;
    enum epar_sparse_kind kind;
    size_t param[4];
} from_mech[EPAR_MECH_COUNT] = {
    [EPAR_MECH_SLIDING_WINDOW] = {1, EPAR_SPARSE_WINDOW, {F_(radius)}},
    [EPAR_MECH_BLOCK_SPARSE] = {1, EPAR_SPARSE_BLOCK, {F_(block), F_(neighbours)}},
    [EPAR_MECH_STRIDED] = {1, EPAR_SPARSE_STRIDED, {STRIDE_, F_(openai_local)}},
    [EPAR_MECH_SPARSE_FIXED] = {1, EPAR_SPARSE_FIXED, {STRIDE_, F_(summary)}},
    [EPAR_MECH_GLOBAL_LOCAL] = {1, EPAR_SPARSE_GLOBAL_LOCAL, {F_(radius), F_(globals)}},
    [EPAR_MECH_PI_ATTENTION] = {1, EPAR_SPARSE_PI, {F_(radius), F_(step), GATE_, F_(ring)}},
};
#undef F_

int epar_sparse_has_kernel(enum epar_mech_id id)
{
    return id >= 0 && id < EPAR_MECH_COUNT && from_mech[id].has;
}

int epar_sparse_pattern_from_mech(const struct epar_mech *m, struct epar_sparse_pattern *p)
{
    memset(p, 0, sizeof *p);
    p->L = m->L;
    p->causal = m->causal;
    const struct from_mech *r = m->id >= 0 && m->id < EPAR_MECH_COUNT ? &from_mech[m->id] : NULL;
    if (!r || !r->has) return epar_err_set(EPAR_EINVAL, "mechanism '%s' has no structured kernel", m->info->id);
    p->kind = r->kind;
    for (int k = 0; k < 4; k++) {
        if (r->param[k] == GATE_) p->gate = m->p[k];
        else if (r->param[k] == STRIDE_) p->stride = epar_mech_stride(m);
        else if (r->param[k]) *(int *)((char *)p + r->param[k] - 1) = (int)m->p[k];
    }
    return EPAR_OK;
}
#undef STRIDE_
#undef GATE_

/* Keys of a piece, by the key coordinate u of its intervals: */
enum { KEYS_DIRECT,   /* j = u */
       KEYS_WRAP,     /* j = (u - shift) mod L: the ring band, u = i - r .. i + r shifted by r */
       KEYS_GATHER,   /* j = ws->idx[u]: gathered into ws->Kg, ws->Vg once per call */
       KEYS_CLASS };  /* residue class c mod p: row i = c + a p, key j = c + u p */

struct piece {
    int id;           /* rule of allowed() */
    int keys;         /* KEYS_* */
    int r0, r1;       /* rows r0 .. r1-1 (all but KEYS_CLASS) */
    int p;            /* KEYS_CLASS: modulus */
    int shift;        /* KEYS_WRAP */
    int group;        /* 0 or 1: the softmax it belongs to (pi-attention has two) */
};

#define MAX_PIECES 3

static int ring_full(const struct epar_sparse_pattern *p) { return 2L * p->radius + 1 >= p->L; }
static int ring_on(const struct epar_sparse_pattern *p) { return p->ring && !p->causal; }
static int imax(int a, int b) { return a > b ? a : b; }

static int pieces(const struct epar_sparse_pattern *p, struct piece *pc)
{
    int L = p->L;
    memset(pc, 0, MAX_PIECES * sizeof *pc);
    for (int k = 0; k < MAX_PIECES; k++) { pc[k].id = k; pc[k].r1 = L; }
    switch (p->kind) {
    case EPAR_SPARSE_WINDOW:
    case EPAR_SPARSE_BLOCK:
        return 1;
    case EPAR_SPARSE_STRIDED:
        pc[1].keys = KEYS_CLASS;
        pc[1].p = p->stride;
        return 2;
    case EPAR_SPARSE_FIXED:
        pc[1].keys = KEYS_GATHER;
        return 2;
    case EPAR_SPARSE_GLOBAL_LOCAL: {
        int G = imin(p->globals, L);
        pc[0].r1 = G;       /* global rows: every key */
        pc[1].r0 = G;       /* band */
        pc[2].r0 = G;       /* global columns */
        return 3;
    }
    case EPAR_SPARSE_PI:
        if (ring_on(p) && !ring_full(p)) {
            pc[0].keys = KEYS_WRAP;
            pc[0].shift = p->radius;
        }
        pc[1].keys = KEYS_CLASS;
        pc[1].p = p->step;
        pc[1].group = 1;
        return 2;
    default:
        return 0;
    }
}

/* Allowed keys of row i (for KEYS_CLASS: class row a of nc, i = c + a p) in the piece's key coordinate u:
 * iv[0] = number of half-open intervals (0..2), then lo1, hi1, lo2, hi2, sorted and disjoint. */
static void allowed(const struct epar_sparse_pattern *p, const struct piece *pc, int i, int a, int nc, int *iv)
{
    int L = p->L, lo = 0, hi = 0, top = p->causal ? i + 1 : L;    /* hi exclusive */
    switch (p->kind) {
    case EPAR_SPARSE_WINDOW:
        lo = imax(0, i - p->radius);
        hi = (int)(i + (long)p->radius + 1 < top ? i + p->radius + 1 : top);
        break;
    case EPAR_SPARSE_BLOCK: {
        long B = i / p->block, b = p->block, nb = p->neighbours;
        long l0 = (B - nb) * b, h0 = (B + nb + 1) * b;
        lo = l0 < 0 ? 0 : (int)l0;
        hi = h0 < top ? (int)h0 : top;
        break;
    }
    case EPAR_SPARSE_STRIDED:
        if (pc->id == 0) {                      /* band i-l .. i, or i-l+1 .. i (openai_local) */
            lo = (int)imax(0, (int)((long)i - p->stride + p->openai_local));
            hi = i + 1;
        } else {                                /* class pairs outside the band: a - b >= 2 (>= 1 openai) */
            lo = 0;
            hi = a - (p->openai_local ? 1 : 2) + 1;
        }
        break;
    case EPAR_SPARSE_FIXED:
        if (pc->id == 0) {                      /* own block, j <= i */
            lo = i / p->stride * p->stride;
            hi = i + 1;
        } else {                                /* summary columns of the earlier blocks: c per block */
            lo = 0;
            hi = (int)((long)(i / p->stride) * p->summary);
        }
        break;
    case EPAR_SPARSE_GLOBAL_LOCAL: {
        int G = imin(p->globals, L);
        if (pc->id == 0) { lo = 0; hi = top; }
        else if (pc->id == 1) {                 /* band without the global columns */
            lo = imax(i - p->radius, G);
            hi = (int)(i + (long)p->radius + 1 < top ? i + p->radius + 1 : top);
        } else { lo = 0; hi = G; }
        break;
    }
    case EPAR_SPARSE_PI:
        if (pc->id == 1) {                      /* residue class of i: every member (j <= i when causal) */
            lo = 0;
            hi = p->causal ? a + 1 : nc;
        } else if (pc->keys == KEYS_WRAP) {     /* ring band i-r .. i+r, shifted by r */
            lo = i;
            hi = i + 2 * p->radius + 1;
        } else if (ring_on(p)) {                /* the ring band covers every key */
            lo = 0;
            hi = L;
        } else {
            lo = imax(0, i - p->radius);
            hi = (int)(i + (long)p->radius + 1 < top ? i + p->radius + 1 : top);
        }
        break;
    default:
        break;
    }
    iv[0] = hi > lo;
    iv[1] = lo;
    iv[2] = hi;
}

static int class_size(int L, int p, int c) { return (L - 1 - c) / p + 1; }

long epar_sparse_pairs(const struct epar_sparse_pattern *p)
{
    struct piece pc[MAX_PIECES];
    int np = pieces(p, pc), iv[5] = {0};
    long n = 0;
    for (int k = 0; k < np; k++) {
        if (pc[k].keys == KEYS_CLASS) {
            for (int c = 0; c < imin(pc[k].p, p->L); c++) {
                int nc = class_size(p->L, pc[k].p, c);
                for (int a = 0; a < nc; a++) {
                    allowed(p, &pc[k], c + a * pc[k].p, a, nc, iv);
                    for (int q = 0; q < iv[0]; q++) n += iv[2 + 2 * q] - iv[1 + 2 * q];
                }
            }
        } else {
            for (int i = pc[k].r0; i < pc[k].r1; i++) {
                allowed(p, &pc[k], i, 0, 0, iv);
                for (int q = 0; q < iv[0]; q++) n += iv[2 + 2 * q] - iv[1 + 2 * q];
            }
        }
    }
    return n;
}

/* ================================================================== the tile engine
 *
 * A tile is nr consecutive rows of a piece (for KEYS_CLASS: consecutive rows of one residue class) with the
 * allowed key intervals of each row, in the tile's key coordinate 0..kw-1 (the union of the rows' ranges). It
 * is computed one of two ways, whichever costs less (tile_by_rows):
 *  - dense tile: S = scale Q K^T on the tile's entries, exp on the allowed ones (0 elsewhere), O += P V. With
 *    AVX-512 both products are vops qk, pv: blocks of 4 rows x 4 keys, skipping the blocks without an allowed
 *    pair (the triangles of a band tile or of a residue class), no packing (they replaced two cblas_dgemm
 *    calls: strided 12.3 -> 11.0 ns per pair at L = 4096, sparse-fixed 12.5 -> 11.3, bench/README.md). Otherwise
 *    two cblas_dgemm calls on all nr x kw entries; large tiles then take K^T from a transposed copy (ws->Kt,
 *    ws->Ktc in residue-class order, ws->Kgt; filled once per call when the first large tile needs it), see
 *    tile_nt;
 *  - row by row: only the allowed pairs, each score a dot product and each weight an axpy of the value row
 *    (vops dots, axpys). Cheaper when the tile is mostly empty (a band of a few keys, a block diagonal, single
 *    global columns, the first rows of a residue class): the dense tile pays for nr x kw entries. */

/* Row-by-row when the allowed pairs are few against the tile's area, or the tile is too thin for a dgemm to
 * pay. ROWS_FILL: 0, 0.3 and 0.5 measured on strided, sparse-fixed and pi-attention at L = 4096 (bench/README.md):
 * within the noise of each other; 0.3 was never the slowest. */
#define ROWS_FILL 0.3
#define ROWS_MIN_ROWS 4

static int tile_pairs(int nr, const int *iv)
{
    int n = 0;
    for (int t = 0; t < nr; t++)
        for (int q = 0; q < iv[5 * t]; q++) n += iv[5 * t + 2 + 2 * q] - iv[5 * t + 1 + 2 * q];
    return n;
}

static int tile_by_rows(int nr, int kw, const int *iv)
{
    return nr < ROWS_MIN_ROWS || tile_pairs(nr, iv) <= ROWS_FILL * nr * kw;
}

/* Rows per tile, measured at L = 4096, d = 64 (bench/README.md): strided 12 (a band tile spans 12 + l keys; 8-16
 * were within 10 %, 32 was 20 % slower), sparse-fixed 16 (a divisor of its blocks l = 64: tiles do not straddle
 * them), the others 32 (pi-attention's tiles of 32 x 96 and 32 x 256; the very sparse masks go row by row). */
static int default_tile(const struct epar_sparse_pattern *p)
{
    return p->kind == EPAR_SPARSE_STRIDED ? 12 : p->kind == EPAR_SPARSE_FIXED ? 16 : 32;
}

/* Q K^T of a dense tile: with K as it is stored (NT) up to NT_MAX_AREA entries, where OpenBLAS (0.3.21) runs it
 * on its small-matrix kernel without packing; above, on K^T transposed once per call (NN), as packing K for every
 * tile cost more than the transposition (pi-attention's 32 x 256 tiles). */
#define NT_MAX_AREA 1200
static int tile_nt(int nr, int kw) { return (long)nr * kw <= NT_MAX_AREA; }

struct run {
    const struct epar_sparse_pattern *p;
    const double *Q, *K, *V;
    int ld, d;
    double scale;
    double *O[2];       /* output of each softmax group, row stride ldo[g] */
    int ldo[2];
    double *m[2], *s[2];
    struct epar_sparse_ws *ws;
    const struct vops *ops;
    int dry;            /* 1: only measure the widest tile (ws->width) */
    int kt, ktc, kgt;   /* ws->Kt, ws->Ktc, ws->Kgt (gathered summary columns) filled */
};

/* The keys of a tile: key u (0..kw-1) is row u of K and V (stride ldk) and column u of Kt (d rows, stride ldt;
 * NULL on the row-by-row path). */
struct keys {
    const double *K, *V;
    int ldk;
    const double *Kt;
    int ldt;
};

/* B (d, ldb) <- A^T for the n rows of A (stride lda), d columns: B[c ldb + u] = A[u lda + c]; by blocks of 8 x 8
 * (the strides are often powers of two: a block touches 8 lines of each side) */
static void transpose(const double *A, size_t lda, int n, int d, double *B, int ldb)
{
    int u0 = 0;
    for (; u0 + 8 <= n; u0 += 8) {
        int c0 = 0;
        for (; c0 + 8 <= d; c0 += 8)    /* whole blocks: fixed trip counts, vectorised */
            for (int c = 0; c < 8; c++) {
                double *b = B + (size_t)(c0 + c) * ldb + u0;
                const double *a = A + (size_t)u0 * lda + c0 + c;
                for (int u = 0; u < 8; u++) b[u] = a[(size_t)u * lda];
            }
        for (int c = c0; c < d; c++)
            for (int u = u0; u < u0 + 8; u++) B[(size_t)c * ldb + u] = A[(size_t)u * lda + c];
    }
    for (int c = 0; c < d; c++)
        for (int u = u0; u < n; u++) B[(size_t)c * ldb + u] = A[(size_t)u * lda + c];
}

/* row stride of the transposed keys (d, >= L): L rounded up to 8, plus 8, so that it is never a power of two (the d
 * rows a dgemm tile reads would fall into one cache set) */
static int kt_ld(int L) { return (L + 7) / 8 * 8 + 8; }

/* first key of residue class c (mod P) in the class order of ws->Ktc */
static int class_start(int L, int P, int c) { return c * (L / P) + imin(c, L % P); }

/* Dense tile: rows of Qp (nr, ldq), keys kv, allowed intervals iv (nr, 5) in tile key coordinates 0..kw-1;
 * running max m and sum s of each row (stride ms) and the unnormalised output rows Op (nr, ldo) are updated:
 * with mn = max(m, tile max), O <- e^(m - mn) O + P V, P = exp(z - mn) on the allowed keys and 0 elsewhere. */
static void tile_dense(const struct run *R, int nr, int kw, const double *Qp, int ldq, const struct keys *kv,
                       double *Op, int ldo, double *m, double *s, int ms, const int *iv)
{
    int d = R->d;
    double *S = R->ws->S;
    if (R->ops->qk)
        R->ops->qk(nr, kw, d, R->scale, Qp, ldq, kv->K, kv->ldk, S, iv);
    else if (!kv->Kt)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nr, kw, d, R->scale, Qp, ldq, kv->K, kv->ldk, 0.0, S, kw);
    else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nr, kw, d, R->scale, Qp, ldq, kv->Kt, kv->ldt, 0.0, S,
                    kw);
    for (int t = 0; t < nr; t++) {
        double *z = S + (size_t)t * kw;
        const int *v = iv + 5 * t;
        if (!v[0]) {
            memset(z, 0, (size_t)kw * sizeof *z);
            continue;
        }
        double mt = -INFINITY;
        for (int q = 0; q < v[0]; q++) {
            double x = R->ops->max(z + v[1 + 2 * q], v[2 + 2 * q] - v[1 + 2 * q]);
            if (x > mt) mt = x;
        }
        double mo = m[(size_t)t * ms], mn = mt > mo ? mt : mo, st = 0.0;
        int prev = 0;
        for (int q = 0; q < v[0]; q++) {
            int lo = v[1 + 2 * q], hi = v[2 + 2 * q];
            memset(z + prev, 0, (size_t)(lo - prev) * sizeof *z);
            st += R->ops->expsum(z + lo, hi - lo, mn);
            prev = hi;
        }
        memset(z + prev, 0, (size_t)(kw - prev) * sizeof *z);
        double a1 = mo == mn ? 1.0 : mo == -INFINITY ? 0.0 : exp(mo - mn);
        s[(size_t)t * ms] = a1 * s[(size_t)t * ms] + st;
        m[(size_t)t * ms] = mn;
        if (a1 != 1.0) R->ops->axpys(Op + (size_t)t * ldo, a1, NULL, 0, NULL, NULL, 0, d);  /* o *= a1, vectorised */
    }
    if (R->ops->pv)
        R->ops->pv(nr, kw, d, S, kv->V, kv->ldk, Op, ldo, iv);
    else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nr, d, kw, 1.0, S, kw, kv->V, kv->ldk, 1.0, Op, ldo);
}

/* The same update, row by row on the allowed pairs only. */
static void tile_rows(const struct run *R, int nr, const double *Qp, int ldq, const struct keys *kv, double *Op,
                      int ldo, double *m, double *s, int ms, const int *iv)
{
    int d = R->d, *ul = R->ws->ul;
    double *z = R->ws->S;
    for (int t = 0; t < nr; t++) {
        const int *v = iv + 5 * t;
        int n = 0;
        for (int q = 0; q < v[0]; q++)
            for (int u = v[1 + 2 * q]; u < v[2 + 2 * q]; u++) ul[n++] = u;
        if (!n) continue;
        R->ops->dots(Qp + (size_t)t * ldq, kv->K, kv->ldk, ul, n, d, R->scale, z);
        double mt = R->ops->max(z, n), mo = m[(size_t)t * ms], mn = mt > mo ? mt : mo;
        double st = R->ops->expsum(z, n, mn);
        double a1 = mo == mn ? 1.0 : mo == -INFINITY ? 0.0 : exp(mo - mn);
        s[(size_t)t * ms] = a1 * s[(size_t)t * ms] + st;
        m[(size_t)t * ms] = mn;
        R->ops->axpys(Op + (size_t)t * ldo, a1, kv->V, kv->ldk, ul, z, n, d);
    }
}

/* intervals of rows (computed by the caller into iv) -> the tile's key range [ua, ub), intervals shifted */
static int key_range(int nr, int *iv, int *ua)
{
    int lo = INT_MAX, hi = 0;
    for (int t = 0; t < nr; t++) {
        const int *v = iv + 5 * t;
        if (!v[0]) continue;
        if (v[1] < lo) lo = v[1];
        if (v[2 * v[0]] > hi) hi = v[2 * v[0]];
    }
    if (hi <= lo) return 0;
    for (int t = 0; t < nr; t++) {
        int *v = iv + 5 * t;
        for (int q = 0; q < v[0]; q++) { v[1 + 2 * q] -= lo; v[2 + 2 * q] -= lo; }
    }
    *ua = lo;
    return hi - lo;
}

static void run_piece(struct run *R, const struct piece *pc)
{
    const struct epar_sparse_pattern *p = R->p;
    struct epar_sparse_ws *ws = R->ws;
    int L = p->L, ld = R->ld, d = R->d, T = ws->tile, g = pc->group, ua = 0;
    int *iv = ws->iv;
    double *O = R->O[g], *m = R->m[g], *s = R->s[g];
    int ldo = R->ldo[g];
    struct keys kv;
    if (pc->keys == KEYS_CLASS) {
        int P = pc->p;
        for (int c = 0; c < imin(P, L); c++) {
            int nc = class_size(L, P, c);
            for (int a0 = 0; a0 < nc; a0 += T) {
                int nr = imin(T, nc - a0);
                for (int t = 0; t < nr; t++) allowed(p, pc, c + (a0 + t) * P, a0 + t, nc, iv + 5 * t);
                int kw = key_range(nr, iv, &ua);
                if (!kw) continue;
                if (R->dry) { if (kw > ws->width) ws->width = kw; continue; }
                int ldr = nr > 1 ? P * ld : ld, ldor = nr > 1 ? P * ldo : ldo;
                size_t i0 = (size_t)c + (size_t)a0 * P, j0 = (size_t)c + (size_t)ua * P;
                kv = (struct keys){R->K + j0 * ld, R->V + j0 * ld, kw > 1 ? P * ld : ld, NULL, kt_ld(L)};
                if (tile_by_rows(nr, kw, iv)) {
                    tile_rows(R, nr, R->Q + i0 * ld, ldr, &kv, O + i0 * ldo, ldor, m + i0, s + i0, P, iv);
                    continue;
                }
                if (R->ops->qk || tile_nt(nr, kw)) {
                    tile_dense(R, nr, kw, R->Q + i0 * ld, ldr, &kv, O + i0 * ldo, ldor, m + i0, s + i0, P, iv);
                    continue;
                }
                if (!R->ktc) {  /* every class, keys in class order; K read in its order (prefetched) */
                    for (int jb = 0; jb < L; jb += P)
                        for (int c2 = 0; c2 < imin(P, L - jb); c2++) {
                            const double *kr = R->K + (size_t)(jb + c2) * ld;
                            double *b = ws->Ktc + class_start(L, P, c2) + jb / P;
                            for (int c3 = 0; c3 < d; c3++) b[(size_t)c3 * kt_ld(L)] = kr[c3];
                        }
                    R->ktc = 1;
                }
                kv.Kt = ws->Ktc + class_start(L, P, c) + ua;
                tile_dense(R, nr, kw, R->Q + i0 * ld, ldr, &kv, O + i0 * ldo, ldor, m + i0, s + i0, P, iv);
            }
        }
        return;
    }
    for (int i0 = pc->r0; i0 < pc->r1; i0 += T) {
        int nr = imin(T, pc->r1 - i0);
        for (int t = 0; t < nr; t++) allowed(p, pc, i0 + t, 0, 0, iv + 5 * t);
        int kw = key_range(nr, iv, &ua);
        if (!kw) continue;
        if (R->dry) { if (kw > ws->width) ws->width = kw; continue; }
        int rows = tile_by_rows(nr, kw, iv), nt = rows || R->ops->qk || tile_nt(nr, kw);
        if (pc->keys == KEYS_GATHER) {
            kv = (struct keys){ws->Kg + (size_t)ua * d, ws->Vg + (size_t)ua * d, d, NULL, ws->ng};
            if (!nt && !R->kgt) {
                transpose(ws->Kg, (size_t)d, ws->ng, d, ws->Kgt, ws->ng);
                R->kgt = 1;
            }
            if (!nt) kv.Kt = ws->Kgt + ua;
        } else if (pc->keys == KEYS_WRAP && (ua - pc->shift < 0 || ua + kw - pc->shift > L)) {
            for (int u = 0; u < kw; u++) {     /* keys past either end of the ring: gathered for this tile */
                int j = ((ua + u - pc->shift) % L + L) % L;
                memcpy(ws->Kg + (size_t)u * d, R->K + (size_t)j * ld, (size_t)d * sizeof(double));
                memcpy(ws->Vg + (size_t)u * d, R->V + (size_t)j * ld, (size_t)d * sizeof(double));
            }
            kv = (struct keys){ws->Kg, ws->Vg, d, nt ? NULL : ws->Kgt, kw};
            if (!nt) transpose(ws->Kg, (size_t)d, kw, d, ws->Kgt, kw);
        } else {
            size_t j0 = (size_t)(ua - (pc->keys == KEYS_WRAP ? pc->shift : 0));
            kv = (struct keys){R->K + j0 * ld, R->V + j0 * ld, ld, nt ? NULL : ws->Kt + j0, kt_ld(L)};
            if (!nt && !R->kt) {
                transpose(R->K, (size_t)ld, L, d, ws->Kt, kt_ld(L));
                R->kt = 1;
            }
        }
        if (rows)
            tile_rows(R, nr, R->Q + (size_t)i0 * ld, ld, &kv, O + (size_t)i0 * ldo, ldo, m + i0, s + i0, 1, iv);
        else
            tile_dense(R, nr, kw, R->Q + (size_t)i0 * ld, ld, &kv, O + (size_t)i0 * ldo, ldo, m + i0, s + i0, 1, iv);
    }
}

/* Very sparse patterns (a few keys per row: sliding-window, block-sparse, global-local at their defaults) row by
 * row in one pass, without tiles: for each row, the keys j of every piece of a softmax, their scores, the
 * softmax and o_i = sum_j A_ij v_j written once (no running maximum, no second pass over O). */
#define WHOLE_MAX_KEYS 16   /* mean allowed keys per row up to which a pattern goes row by row */

/* the keys j of row i in softmax group g, from every piece of the group, into ul; returns their number */
static int row_keys(const struct run *R, const struct piece *pc, int np, int i, int g, int *ul)
{
    const struct epar_sparse_pattern *p = R->p;
    int L = p->L, n = 0, iv[5];
    for (int k = 0; k < np; k++) {
        const struct piece *c = &pc[k];
        if (c->group != g) continue;
        int P = c->p, cls = c->keys == KEYS_CLASS;
        if (cls) allowed(p, c, i, i / P, class_size(L, P, i % P), iv);
        else if (i >= c->r0 && i < c->r1) allowed(p, c, i, 0, 0, iv);
        else continue;
        for (int q = 0; q < iv[0]; q++) {
            int lo = iv[1 + 2 * q], hi = iv[2 + 2 * q];
            if (c->keys == KEYS_DIRECT)
                for (int u = lo; u < hi; u++) ul[n++] = u;
            else
                for (int u = lo; u < hi; u++)
                    ul[n++] = cls ? i % P + u * P
                            : c->keys == KEYS_WRAP ? ((u - c->shift) % L + L) % L : R->ws->idx[u];
        }
    }
    return n;
}

/* Rows go by blocks of up to WHOLE_BLOCK: their scores, less each row's maximum, go through one vector exp call;
 * a row of 5 keys alone used one 8-lane vector and waited for its result (20 % slower at L = 256, d = 64). */
#define WHOLE_BLOCK 8

static void rows_whole(const struct run *R, const struct piece *pc, int np)
{
    const struct epar_sparse_pattern *p = R->p;
    struct epar_sparse_ws *ws = R->ws;
    int L = p->L, ld = R->ld, d = R->d, *ul = ws->ul, cap = ws->L > ws->width ? ws->L : ws->width;
    double *z = ws->S;
    for (int g = 0; g <= (p->kind == EPAR_SPARSE_PI); g++) {
        double w = p->kind == EPAR_SPARSE_PI ? (g ? 1.0 - p->gate : p->gate) : 1.0;
        for (int i = 0; i < L;) {
            int i0 = i, off[WHOLE_BLOCK + 1] = {0}, nb = 0;
            /* a row has at most cap keys: the buffers (2 cap) take one more while the block holds <= cap */
            for (; i < L && nb < WHOLE_BLOCK && off[nb] <= cap; i++, nb++) {
                int n = row_keys(R, pc, np, i, g, ul + off[nb]);
                off[nb + 1] = off[nb] + n;
                double *o = R->O[0] + (size_t)i * R->ldo[0];
                if (!n) {   /* policy self */
                    const double *v = R->V + (size_t)i * ld;
                    for (int c = 0; c < d; c++) o[c] = (g ? o[c] : 0.0) + w * v[c];
                    continue;
                }
                double *zr = z + off[nb];
                R->ops->dots(R->Q + (size_t)i * ld, R->K, ld, ul + off[nb], n, d, R->scale, zr);
                double mx = R->ops->max(zr, n);
                for (int k = 0; k < n; k++) zr[k] -= mx;
            }
            R->ops->expsum(z, off[nb], 0.0);
            for (int b = 0; b < nb; b++) {
                int n = off[b + 1] - off[b];
                if (!n) continue;
                double *zr = z + off[b], st = 0.0;
                for (int k = 0; k < n; k++) st += zr[k];
                double f = w / st;
                for (int k = 0; k < n; k++) zr[k] *= f;
                R->ops->axpys(R->O[0] + (size_t)(i0 + b) * R->ldo[0], g ? 1.0 : 0.0, R->V, ld, ul + off[b], zr, n, d);
            }
        }
    }
}

/* summary columns of sparse-fixed: j mod l >= l - c, increasing */
static int summary_columns(const struct epar_sparse_pattern *p, int *idx)
{
    int n = 0;
    if (p->kind != EPAR_SPARSE_FIXED) return 0;
    for (int j = 0; j < p->L; j++)
        if (j % p->stride >= p->stride - p->summary) {
            if (idx) idx[n] = j;
            n++;
        }
    return n;
}

static int pattern_valid(const struct epar_sparse_pattern *p, int d)
{
    if (p->L < 1 || d < 1 || p->kind < 0 || p->kind >= EPAR_SPARSE_COUNT || p->radius < 0 || p->neighbours < 0 ||
        p->globals < 0 || p->tile < 0 || (p->kind == EPAR_SPARSE_BLOCK && p->block < 1) ||
        ((p->kind == EPAR_SPARSE_STRIDED || p->kind == EPAR_SPARSE_FIXED) && p->stride < 1) ||
        (p->kind == EPAR_SPARSE_FIXED && (p->summary < 1 || p->summary > p->stride)) ||
        (p->kind == EPAR_SPARSE_PI && p->step < 1))
        return epar_err_set(EPAR_EINVAL, "invalid structured-attention pattern (kind %d, length %d)", (int)p->kind, p->L);
    return EPAR_OK;
}

int epar_sparse_ws_alloc(struct epar_sparse_ws *ws, const struct epar_sparse_pattern *p, int d)
{
    memset(ws, 0, sizeof *ws);
    int st = pattern_valid(p, d);
    if (st) return st;
    int L = p->L;
    ws->L = L;
    ws->d = d;
    ws->tile = p->tile > 0 ? p->tile : default_tile(p);
    if (!(ws->iv = epar_err_alloc((size_t)ws->tile * 5, sizeof *ws->iv, "sparse tile intervals"))) return EPAR_ENOMEM;
    /* dry run: the widest key range of any tile */
    struct piece pc[MAX_PIECES];
    int np = pieces(p, pc);
    struct run R = {.p = p, .ld = d, .d = d, .ws = ws, .dry = 1};
    int direct = 0, cls = 0;     /* pieces with keys in K's order (ws->Kt), with residue-class keys (ws->Ktc) */
    for (int k = 0; k < np; k++) {
        run_piece(&R, &pc[k]);
        direct |= pc[k].keys == KEYS_DIRECT || pc[k].keys == KEYS_WRAP;
        cls |= pc[k].keys == KEYS_CLASS;
    }
    if (ws->width < 1) ws->width = 1;
    int ns = summary_columns(p, NULL), nw = p->kind == EPAR_SPARSE_PI && ring_on(p) && !ring_full(p) ? ws->width : 0;
    ws->ng = ns > nw ? ns : nw;
    ws->whole = epar_sparse_pairs(p) <= (long)WHOLE_MAX_KEYS * L;
    size_t cap = (size_t)(L > ws->width ? L : ws->width), nS = (size_t)ws->tile * ws->width;
    if (nS < 2 * cap) nS = 2 * cap;    /* rows_whole: a block of rows' keys */
    if (!(ws->S = epar_err_alloc(nS, sizeof *ws->S, "sparse tile")) ||
        !(ws->m = epar_err_alloc((size_t)4 * L, sizeof *ws->m, "sparse softmax state")) ||
        (p->kind == EPAR_SPARSE_PI && !(ws->O2 = epar_err_alloc((size_t)L * d, sizeof *ws->O2, "sparse output"))) ||
        !(ws->ul = epar_err_alloc(2 * cap, sizeof *ws->ul, "sparse row keys")) ||
        (direct && !(ws->Kt = epar_err_alloc((size_t)d * kt_ld(L), sizeof *ws->Kt, "sparse transposed keys"))) ||
        (cls && !(ws->Ktc = epar_err_alloc((size_t)d * kt_ld(L), sizeof *ws->Ktc, "sparse transposed class keys"))) ||
        (ws->ng && (!(ws->Kg = epar_err_alloc((size_t)2 * ws->ng * d, sizeof *ws->Kg, "sparse gathered keys")) ||
                    !(ws->Kgt = epar_err_alloc((size_t)ws->ng * d, sizeof *ws->Kgt, "sparse gathered keys")) ||
                    !(ws->idx = epar_err_alloc((size_t)ws->ng, sizeof *ws->idx, "sparse key index"))))) {
        epar_sparse_ws_free(ws);
        return EPAR_ENOMEM;
    }
    ws->s = ws->m + 2 * (size_t)L;
    if (ws->Kg) ws->Vg = ws->Kg + (size_t)ws->ng * d;
    summary_columns(p, ws->idx);
    return EPAR_OK;
}

void epar_sparse_ws_free(struct epar_sparse_ws *ws)
{
    free(ws->S);
    free(ws->m);
    free(ws->O2);
    free(ws->Kg);
    free(ws->Kgt);
    free(ws->Kt);
    free(ws->Ktc);
    free(ws->iv);
    free(ws->idx);
    free(ws->ul);
    memset(ws, 0, sizeof *ws);
}

/* o (d) <- o / s, or v when the softmax had no allowed key (policy self); times w */
static void finish_row(const struct vops *ops, double *o, const double *v, double s, double w, int d)
{
    if (s > 0) {
        ops->axpys(o, w / s, NULL, 0, NULL, NULL, 0, d);
    } else {
        for (int c = 0; c < d; c++) o[c] = w * v[c];
    }
}

void epar_sparse_output(const struct epar_sparse_pattern *p, const double *Q, const double *K, const double *V,
                        int ld, int d, double scale, double *O, int ldo, struct epar_sparse_ws *ws)
{
    int L = p->L, gated = p->kind == EPAR_SPARSE_PI;
    struct run R = {.p = p, .Q = Q, .K = K, .V = V, .ld = ld, .d = d, .scale = scale, .O = {O, ws->O2},
                    .ldo = {ldo, d}, .m = {ws->m, ws->m + L}, .s = {ws->s, ws->s + L}, .ws = ws, .ops = vops()};
    struct piece pc[MAX_PIECES];
    int np = pieces(p, pc);
    if (ws->whole) {
        rows_whole(&R, pc, np);
        return;
    }
    if (p->kind == EPAR_SPARSE_FIXED)
        for (int u = 0; u < ws->ng; u++) {
            memcpy(ws->Kg + (size_t)u * d, K + (size_t)ws->idx[u] * ld, (size_t)d * sizeof *K);
            memcpy(ws->Vg + (size_t)u * d, V + (size_t)ws->idx[u] * ld, (size_t)d * sizeof *V);
        }
    for (int g = 0; g <= gated; g++)
        for (int i = 0; i < L; i++) {
            memset(R.O[g] + (size_t)i * R.ldo[g], 0, (size_t)d * sizeof *O);
            R.m[g][i] = -INFINITY;
            R.s[g][i] = 0.0;
        }
    for (int k = 0; k < np; k++) run_piece(&R, &pc[k]);
    for (int i = 0; i < L; i++) {
        double *o = O + (size_t)i * ldo;
        const double *v = V + (size_t)i * ld;
        if (!gated) {
            finish_row(R.ops, o, v, R.s[0][i], 1.0, d);
            continue;
        }
        double *o2 = ws->O2 + (size_t)i * d;
        finish_row(R.ops, o, v, R.s[0][i], p->gate, d);
        finish_row(R.ops, o2, v, R.s[1][i], 1.0 - p->gate, d);
        for (int c = 0; c < d; c++) o[c] += o2[c];
    }
}

/* ================================================================== the dense kernel */

/* used for timing: no mask, no compaction, one pass per block of query rows */

#define DK 16     /* keys per packed panel of K (AVX-512 products) */
#define DKC 128   /* keys per chunk of P V (AVX-512): its rows of V stay in L1 while the row tiles pass */
#define DV 32     /* columns per packed group of V (AVX-512) */

static size_t dense_panels(int L) { return (size_t)(L + DK - 1) / DK; }
static size_t dense_groups(int d) { return (size_t)(d + DV - 1) / DV; }


EPAR_TARGET_BEGIN("avx512f,avx512vl,avx2,fma")
/* scale Q K^T for R (<= 12) rows x one panel of DK keys (kp: d rows of DK), 2R accumulators, each score one FMA chain
 * along d; the columns past the last key not stored (masks m0, m1). (Tried: each row's max kept here while the scores
 * are in registers, so the softmax need not read them again for it: the whole kernel 0.87x as fast, alternated runs) */
static inline __attribute__((always_inline)) void dense_qk_r(int R, int d, const double *q, int ldq, const double *kp,
                                                              double *s, size_t lds, __m512d sc, __mmask8 m0,
                                                              __mmask8 m1)
{
    __m512d a0[12], a1[12];
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) a0[r] = a1[r] = _mm512_setzero_pd();
    for (int k = 0; k < d; k++) {
        __m512d b0 = _mm512_loadu_pd(kp + (size_t)k * DK), b1 = _mm512_loadu_pd(kp + (size_t)k * DK + 8);
#pragma GCC unroll 12
        for (int r = 0; r < R; r++) {
            __m512d qv = _mm512_set1_pd(q[(size_t)r * ldq + k]);
            a0[r] = _mm512_fmadd_pd(qv, b0, a0[r]);
            a1[r] = _mm512_fmadd_pd(qv, b1, a1[r]);
        }
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
        _mm512_mask_storeu_pd(s + r * lds, m0, _mm512_mul_pd(sc, a0[r]));
        _mm512_mask_storeu_pd(s + r * lds + 8, m1, _mm512_mul_pd(sc, a1[r]));
    }
}
/* S (nr, kw) <- scale Q K^T with K packed (Kp); causal: a row tile skips the panels past its last row's key i0 + t + R
 * - 1 (those scores are never read) */
static void dense_qk_512(int nr, int kw, int d, double scale, const double *Q, int ldq, const double *Kp, double *S,
                         int causal, int i0)
{
    const __m512d sc = _mm512_set1_pd(scale);
    for (int p = 0; p < (kw + DK - 1) / DK; p++) {
        int j0 = p * DK, nk = imin(DK, kw - j0);
        __mmask8 m0 = (__mmask8)(nk >= 8 ? 0xff : (1u << nk) - 1), m1 = (__mmask8)(nk > 8 ? (1u << (nk - 8)) - 1 : 0);
        const double *kp = Kp + (size_t)p * DK * d;
        for (int t = 0; t < nr; t += 12) {
            int R = imin(12, nr - t);
            if (causal && i0 + t + R - 1 < j0) continue;
            const double *q = Q + (size_t)t * ldq;
            double *s = S + (size_t)t * kw + j0;
            switch (R) {
            case 12: dense_qk_r(12, d, q, ldq, kp, s, kw, sc, m0, m1); break;
            case 11: dense_qk_r(11, d, q, ldq, kp, s, kw, sc, m0, m1); break;
            case 10: dense_qk_r(10, d, q, ldq, kp, s, kw, sc, m0, m1); break;
            case 9: dense_qk_r(9, d, q, ldq, kp, s, kw, sc, m0, m1); break;
            case 8: dense_qk_r(8, d, q, ldq, kp, s, kw, sc, m0, m1); break;
            case 7: dense_qk_r(7, d, q, ldq, kp, s, kw, sc, m0, m1); break;
            case 6: dense_qk_r(6, d, q, ldq, kp, s, kw, sc, m0, m1); break;
            case 5: dense_qk_r(5, d, q, ldq, kp, s, kw, sc, m0, m1); break;
            case 4: dense_qk_r(4, d, q, ldq, kp, s, kw, sc, m0, m1); break;
            case 3: dense_qk_r(3, d, q, ldq, kp, s, kw, sc, m0, m1); break;
            case 2: dense_qk_r(2, d, q, ldq, kp, s, kw, sc, m0, m1); break;
            default: dense_qk_r(1, d, q, ldq, kp, s, kw, sc, m0, m1); break;
            }
        }
    }
}

/* O (R <= 6 rows x 32 columns at o, masks m[4]) (+)= P V over keys u0 .. u1-1 (p: the rows of P at stride ldp; v: V's
 * rows at stride ldv from column c0), 4R accumulators; first: start from zero, else from O */
static inline __attribute__((always_inline)) void dense_pv_r(int R, const double *p, size_t ldp, const double *v,
                                                              size_t ldv, int u0, int u1, double *o, size_t ldo,
                                                              const __mmask8 *m, int first)
{
    __m512d a[6][4];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++)
            a[r][c] = first ? _mm512_setzero_pd() : _mm512_maskz_loadu_pd(m[c], o + r * ldo + 8 * c);
    for (int u = u0; u < u1; u++) {
        const double *vr = v + (size_t)u * ldv;
        __m512d b0 = _mm512_loadu_pd(vr), b1 = _mm512_loadu_pd(vr + 8), b2 = _mm512_loadu_pd(vr + 16),
                b3 = _mm512_loadu_pd(vr + 24);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            __m512d pv = _mm512_set1_pd(p[r * ldp + u]);
            a[r][0] = _mm512_fmadd_pd(pv, b0, a[r][0]);
            a[r][1] = _mm512_fmadd_pd(pv, b1, a[r][1]);
            a[r][2] = _mm512_fmadd_pd(pv, b2, a[r][2]);
            a[r][3] = _mm512_fmadd_pd(pv, b3, a[r][3]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) _mm512_mask_storeu_pd(o + r * ldo + 8 * c, m[c], a[r][c]);
}

/* O (nr, d) <- P (nr, kw) V with V packed (Vp: groups of DV columns, each L rows of DV, zero past column d - 1): each
 * element one FMA chain over the keys in order (the chunks of DKC keys continue it from O); causal: a row tile stops
 * at its last row's key */
static void dense_pv_512(int nr, int kw, int d, const double *P, const double *Vp, int L, double *O, int ldo,
                         int causal, int i0)
{
    for (int u0 = 0; u0 < kw; u0 += DKC)
        for (int c0 = 0; c0 < d; c0 += DV) {
            __mmask8 m[4];
            for (int c = 0; c < 4; c++) {
                int n = d - c0 - 8 * c;
                m[c] = (__mmask8)(n >= 8 ? 0xff : n > 0 ? (1u << n) - 1 : 0);
            }
            const double *v = Vp + (size_t)(c0 / DV) * DV * L;
            for (int t = 0; t < nr; t += 6) {
                int R = imin(6, nr - t), u1 = imin(u0 + DKC, causal ? imin(kw, i0 + t + R) : kw);
                if (u1 <= u0) continue;   /* causal: no key of this chunk for these rows (O as it is) */
                const double *p = P + (size_t)t * kw;
                double *o = O + (size_t)t * ldo + c0;
                int first = u0 == 0;
                switch (R) {
                case 6: dense_pv_r(6, p, kw, v, DV, u0, u1, o, ldo, m, first); break;
                case 5: dense_pv_r(5, p, kw, v, DV, u0, u1, o, ldo, m, first); break;
                case 4: dense_pv_r(4, p, kw, v, DV, u0, u1, o, ldo, m, first); break;
                case 3: dense_pv_r(3, p, kw, v, DV, u0, u1, o, ldo, m, first); break;
                case 2: dense_pv_r(2, p, kw, v, DV, u0, u1, o, ldo, m, first); break;
                default: dense_pv_r(1, p, kw, v, DV, u0, u1, o, ldo, m, first); break;
                }
            }
        }
}
EPAR_TARGET_END

#define DK2 8     /* keys per packed panel of K (AVX2 products) */
#define DKC2 128  /* keys per chunk of P V (AVX2): a chunk of one group of V is 8 KB of L1 */
#define DV2 8     /* columns per packed group of V (AVX2) */
#define DR2 6     /* rows per tile (AVX2); Q is packed by tiles of DR2 rows */
#define DROWS2 ((EPAR_SPARSE_DENSE_ROWS + DR2 - 1) / DR2 * DR2)
#define DPAD 16   /* the scores' rows (AVX2) are up to DPAD doubles longer than kw */
/* the AVX2 products' stride of the scores: kw rounded up to 8, plus 8 when that is a multiple of 512 bytes (at L 4096
 * every row of the block started on the same set of L1, the six rows a P V tile reads at once and the rows a Q K^T
 * tile writes competed for its 8 ways: P V ran at about half the speed it has at L 4000) */
static size_t dense_lds(int kw)
{
    size_t n = ((size_t)kw + 7) / 8 * 8;
    return n % 64 ? n : n + 8;
}

/* layout: the block's scores (EPAR_SPARSE_DENSE_ROWS rows of L + DPAD), K packed, V packed, the packed Q block (AVX2).
 * The AVX2 packing of K and V fits where the AVX-512 one goes (ceil(L/8) * 8 <= ceil(L/16) * 16, the same for d) */
size_t epar_sparse_dense_fast_ws(int L, int d)
{
    size_t dd = (size_t)(d > 0 ? d : 0);
    return (size_t)EPAR_SPARSE_DENSE_ROWS * ((size_t)L + DPAD) + dense_panels(L) * DK * dd +
           dense_groups(d) * DV * (size_t)L + (size_t)DROWS2 * dd;
}

EPAR_TARGET_BEGIN("avx2,fma")
/* the AVX2 forms of the two tiles above, for 16 ymm registers: 6 rows x 8 columns (12 accumulators, 2 loads of the
 * packed K or V, a broadcast of Q or P). Q's block is packed by tiles of 6 rows (the broadcasts read one sequential
 * stream); P is read in place, its rows dense_lds apart (packing it too cost 12 % of the kernel, more than it saved).
 * The same order of operations as the AVX-512 tiles (each score one FMA chain along d from zero, then times the
 * scale; each output one FMA chain over the keys in order), so the two products give the AVX-512 tiles' bits (the
 * softmax between them is each ISA's own vector exp) */
static inline __attribute__((always_inline)) __m256i dense_mask4(int n)
{
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_set_epi64x(3, 2, 1, 0));
}

/* nr rows of a (stride ld), n columns, into tiles of DR2 rows (zero past row nr - 1): dst[t][c][DR2] */
static void dense_pack_rows(const double *a, size_t ld, int nr, int n, double *dst)
{
    for (int t = 0; t < nr; t += DR2)
        for (int r = 0; r < DR2; r++) {
            double *o = dst + (size_t)t * n + r;
            if (t + r < nr) {
                const double *x = a + (size_t)(t + r) * ld;
                for (int c = 0; c < n; c++) o[(size_t)c * DR2] = x[c];
            } else
                for (int c = 0; c < n; c++) o[(size_t)c * DR2] = 0.0;
        }
}

/* scale Q K^T for R (<= DR2) rows (q: packed, d columns of DR2) x one panel of DK2 keys (kp: d rows of DK2), nk (<=
 * DK2) of them stored */
static inline __attribute__((always_inline)) void dense_qk2_r(int R, int d, const double *q, const double *kp,
                                                               double *s, size_t lds, __m256d sc, int nk)
{
    __m256d a0[DR2], a1[DR2];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) a0[r] = a1[r] = _mm256_setzero_pd();
    for (int k = 0; k < d; k++) {
        __m256d b0 = _mm256_loadu_pd(kp + (size_t)k * DK2), b1 = _mm256_loadu_pd(kp + (size_t)k * DK2 + 4);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            __m256d qv = _mm256_broadcast_sd(q + (size_t)k * DR2 + r);
            a0[r] = _mm256_fmadd_pd(qv, b0, a0[r]);
            a1[r] = _mm256_fmadd_pd(qv, b1, a1[r]);
        }
    }
    if (nk == DK2) {
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            _mm256_storeu_pd(s + r * lds, _mm256_mul_pd(sc, a0[r]));
            _mm256_storeu_pd(s + r * lds + 4, _mm256_mul_pd(sc, a1[r]));
        }
    } else {
        __m256i m0 = dense_mask4(nk), m1 = dense_mask4(nk - 4);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            _mm256_maskstore_pd(s + r * lds, m0, _mm256_mul_pd(sc, a0[r]));
            _mm256_maskstore_pd(s + r * lds + 4, m1, _mm256_mul_pd(sc, a1[r]));
        }
    }
}
/* S (nr, kw) <- scale Q K^T with Q packed by tiles of DR2 rows (Qp) and K by DK2 keys (Kp); causal: as dense_qk_512 */
static void dense_qk_256(int nr, int kw, int d, double scale, const double *Qp, const double *Kp, double *S,
                         size_t lds, int causal, int i0)
{
    const __m256d sc = _mm256_set1_pd(scale);
    for (int p = 0; p < (kw + DK2 - 1) / DK2; p++) {
        int j0 = p * DK2, nk = imin(DK2, kw - j0);
        const double *kp = Kp + (size_t)p * DK2 * d;
        for (int t = 0; t < nr; t += DR2) {
            int R = imin(DR2, nr - t);
            if (causal && i0 + t + R - 1 < j0) continue;
            const double *q = Qp + (size_t)t * d;
            double *s = S + (size_t)t * lds + j0;
            switch (R) {
            case 6: dense_qk2_r(6, d, q, kp, s, lds, sc, nk); break;
            case 5: dense_qk2_r(5, d, q, kp, s, lds, sc, nk); break;
            case 4: dense_qk2_r(4, d, q, kp, s, lds, sc, nk); break;
            case 3: dense_qk2_r(3, d, q, kp, s, lds, sc, nk); break;
            case 2: dense_qk2_r(2, d, q, kp, s, lds, sc, nk); break;
            default: dense_qk2_r(1, d, q, kp, s, lds, sc, nk); break;
            }
        }
    }
}

/* O (R <= DR2 rows x DV2 columns at o, nc of them real) (+)= P V over keys u0 .. u1-1 (p: the rows of P at stride
 * ldp; v: a group of V packed by DV2 columns); first: start from zero, else from O */
static inline __attribute__((always_inline)) void dense_pv2_r(int R, const double *p, size_t ldp, const double *v,
                                                               int u0, int u1, double *o, size_t ldo, int nc, int first)
{
    __m256d a0[DR2], a1[DR2];
    __m256i m0 = dense_mask4(nc), m1 = dense_mask4(nc - 4);
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
        if (first) a0[r] = a1[r] = _mm256_setzero_pd();
        else if (nc == DV2) {
            a0[r] = _mm256_loadu_pd(o + r * ldo);
            a1[r] = _mm256_loadu_pd(o + r * ldo + 4);
        } else {
            a0[r] = _mm256_maskload_pd(o + r * ldo, m0);
            a1[r] = _mm256_maskload_pd(o + r * ldo + 4, m1);
        }
    }
    for (int u = u0; u < u1; u++) {
        __m256d b0 = _mm256_loadu_pd(v + (size_t)u * DV2), b1 = _mm256_loadu_pd(v + (size_t)u * DV2 + 4);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            __m256d pv = _mm256_broadcast_sd(p + r * ldp + u);
            a0[r] = _mm256_fmadd_pd(pv, b0, a0[r]);
            a1[r] = _mm256_fmadd_pd(pv, b1, a1[r]);
        }
    }
    if (nc == DV2) {
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            _mm256_storeu_pd(o + r * ldo, a0[r]);
            _mm256_storeu_pd(o + r * ldo + 4, a1[r]);
        }
    } else
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            _mm256_maskstore_pd(o + r * ldo, m0, a0[r]);
            _mm256_maskstore_pd(o + r * ldo + 4, m1, a1[r]);
        }
}

/* O (nr, d) <- P (nr, kw, stride ldp) V with V packed by DV2 columns (Vp: groups of L rows of DV2, zero past column
 * d - 1); each element one FMA chain over the keys in order (chunks of DKC2 keys continue it from O); causal: as
 * dense_pv_512 */
static void dense_pv_256(int nr, int kw, int d, const double *P, size_t ldp, const double *Vp, int L, double *O,
                         int ldo, int causal, int i0)
{
    for (int u0 = 0; u0 < kw; u0 += DKC2)
        for (int c0 = 0; c0 < d; c0 += DV2) {
            const double *v = Vp + (size_t)(c0 / DV2) * DV2 * L;
            int nc = imin(DV2, d - c0);
            for (int t = 0; t < nr; t += DR2) {
                int R = imin(DR2, nr - t), u1 = imin(u0 + DKC2, causal ? imin(kw, i0 + t + R) : kw);
                if (u1 <= u0) continue;   /* causal: no key of this chunk for these rows (O as it is) */
                const double *p = P + (size_t)t * ldp;
                double *o = O + (size_t)t * ldo + c0;
                int first = u0 == 0;
                switch (R) {
                case 6: dense_pv2_r(6, p, ldp, v, u0, u1, o, ldo, nc, first); break;
                case 5: dense_pv2_r(5, p, ldp, v, u0, u1, o, ldo, nc, first); break;
                case 4: dense_pv2_r(4, p, ldp, v, u0, u1, o, ldo, nc, first); break;
                case 3: dense_pv2_r(3, p, ldp, v, u0, u1, o, ldo, nc, first); break;
                case 2: dense_pv2_r(2, p, ldp, v, u0, u1, o, ldo, nc, first); break;
                default: dense_pv2_r(1, p, ldp, v, u0, u1, o, ldo, nc, first); break;
                }
            }
        }
}
EPAR_TARGET_END

void epar_sparse_dense_fast(int causal, int L, const double *Q, const double *K, const double *V, int ld, int d,
                            double scale, double *O, int ldo, double *S)
{
    const struct vops *ops = vops();
    double inv[EPAR_SPARSE_DENSE_ROWS];
    /* with AVX-512 or AVX2 the two products are the kernels above over K and V packed once per call (after S in the
     * workspace): cblas_dgemm packs K and V again for every block of rows (17 % of the kernel's time, profiled) and
     * ran the whole kernel at 43-45 % of the double FMA peak on an Intel Xeon (OpenBLAS 0.3.21 SkylakeX), the AVX-512
     * tiles at 49-54 %; on an AMD EPYC Zen 3 (OpenBLAS Zen kernel, a busy machine) dgemm gave 35-51 % (median 46 %),
     * the AVX2 tiles 39-59 % (median 49 %), in alternated runs (bench/dense_kernel.c; bench/README.md) */
    int w512 = ops == &ops_avx512, own = w512 || ops == &ops_avx2;
    int dk = w512 ? DK : DK2, dv = w512 ? DV : DV2;
    size_t np = (size_t)(L + dk - 1) / dk, ng = (size_t)(d + dv - 1) / dv;
    double *Kp = S + (size_t)EPAR_SPARSE_DENSE_ROWS * ((size_t)L + DPAD), *Vp = Kp + np * dk * d;
    double *Qp = Kp + dense_panels(L) * DK * d + dense_groups(d) * DV * (size_t)L;
    if (own) {
        for (size_t p = 0; p < np; p++)
            for (int j = 0; j < dk; j++) {
                size_t key = p * dk + j;
                for (int k = 0; k < d; k++) Kp[(p * d + k) * dk + j] = key < (size_t)L ? K[key * ld + k] : 0.0;
            }
        /* V by groups of dv columns (each group's rows contiguous: a chunk of keys maps onto all of L1's sets) */
        for (size_t g = 0; g < ng; g++)
            for (int u = 0; u < L; u++)
                for (int c = 0; c < dv; c++) {
                    size_t col = g * dv + c;
                    Vp[(g * L + u) * dv + c] = col < (size_t)d ? V[(size_t)u * ld + col] : 0.0;
                }
    }
    for (int i0 = 0; i0 < L; i0 += EPAR_SPARSE_DENSE_ROWS) {
        int nr = L - i0 < EPAR_SPARSE_DENSE_ROWS ? L - i0 : EPAR_SPARSE_DENSE_ROWS, kw = causal ? i0 + nr : L;
        size_t lds = own && !w512 ? dense_lds(kw) : (size_t)kw;
        /* S (nr, kw; rows lds apart) <- scale Q_block K^T over the keys any row of the block reads */
        if (w512) dense_qk_512(nr, kw, d, scale, Q + (size_t)i0 * ld, ld, Kp, S, causal, i0);
        else if (own) {
            dense_pack_rows(Q + (size_t)i0 * ld, (size_t)ld, nr, d, Qp);
            dense_qk_256(nr, kw, d, scale, Qp, Kp, S, lds, causal, i0);
        } else cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nr, kw, d, scale, Q + (size_t)i0 * ld, ld, K, ld, 0.0, S, kw);
        for (int r = 0; r < nr; r++) {
            double *z = S + (size_t)r * lds;
            int n = causal ? i0 + r + 1 : kw;   /* causal: row i reads keys 0..i; the rest of the block's row is 0 */
            inv[r] = 1.0 / ops->expsum(z, n, ops->max(z, n));
            if (n < kw) memset(z + n, 0, (size_t)(kw - n) * sizeof *z);
        }
        /* O_block <- P V, then each row divided by its sum */
        if (w512) dense_pv_512(nr, kw, d, S, Vp, L, O + (size_t)i0 * ldo, ldo, causal, i0);
        else if (own) dense_pv_256(nr, kw, d, S, lds, Vp, L, O + (size_t)i0 * ldo, ldo, causal, i0);
        else cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nr, d, kw, 1.0, S, kw, V, ld, 0.0, O + (size_t)i0 * ldo, ldo);
        for (int r = 0; r < nr; r++) cblas_dscal(d, inv[r], O + (size_t)(i0 + r) * ldo, 1);
    }
}

/* ---- the machine's double-precision FMA peak, for one thread ---- */

/* independent chains: FMA latency (4-5 cycles) x 2 ports, within the register file (16 ymm, 32 zmm) */
#define PEAK_CHAINS_AVX2 12
#define PEAK_CHAINS_AVX512 24

__attribute__((target("avx2,fma"), noinline)) static double peak_avx2(long iters, double seed)
{
    __m256d acc[PEAK_CHAINS_AVX2], a = _mm256_set1_pd(0.999999), b = _mm256_set1_pd(1e-9 * seed);
    for (int c = 0; c < PEAK_CHAINS_AVX2; c++) acc[c] = _mm256_set1_pd((double)c * seed);
    for (long k = 0; k < iters; k++) {
#pragma GCC unroll 12
        for (int c = 0; c < PEAK_CHAINS_AVX2; c++) acc[c] = _mm256_fmadd_pd(acc[c], a, b);
    }
    __m256d t = acc[0];
    for (int c = 1; c < PEAK_CHAINS_AVX2; c++) t = _mm256_add_pd(t, acc[c]);
    double out[4];
    _mm256_storeu_pd(out, t);
    return out[0] + out[3];
}

__attribute__((target("avx512f"), noinline)) static double peak_avx512(long iters, double seed)
{
    __m512d acc[PEAK_CHAINS_AVX512], a = _mm512_set1_pd(0.999999), b = _mm512_set1_pd(1e-9 * seed);
    for (int c = 0; c < PEAK_CHAINS_AVX512; c++) acc[c] = _mm512_set1_pd((double)c * seed);
    for (long k = 0; k < iters; k++) {
#pragma GCC unroll 24
        for (int c = 0; c < PEAK_CHAINS_AVX512; c++) acc[c] = _mm512_fmadd_pd(acc[c], a, b);
    }
    __m512d t = acc[0];
    for (int c = 1; c < PEAK_CHAINS_AVX512; c++) t = _mm512_add_pd(t, acc[c]);
    double out[8];
    _mm512_storeu_pd(out, t);
    return out[0] + out[7];
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double epar_sparse_fma_peak(const char **isa)
{
    __builtin_cpu_init();
    int w512 = __builtin_cpu_supports("avx512f"), w256 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (isa) *isa = w512 ? "avx512" : w256 ? "avx2" : "none";
    if (!w512 && !w256) return NAN;
    long iters = 1 << 20;
    double best = 0, sink = 0;
    for (int rep = 0; rep < 7; rep++) {   /* the best of 7 runs of about 30-60 ms: other load only lowers a rate */
        double t0 = wall();
        sink += w512 ? peak_avx512(iters, 1.0 + rep) : peak_avx2(iters, 1.0 + rep);
        double dt = wall() - t0, flops = 2.0 * (w512 ? 8 * PEAK_CHAINS_AVX512 : 4 * PEAK_CHAINS_AVX2) * (double)iters;
        if (dt > 0 && flops / dt > best) best = flops / dt;
    }
    return isfinite(sink) ? best / 1e9 : NAN;
}

