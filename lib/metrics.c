#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include <gsl/gsl_sort_double.h>
#include <gsl/gsl_statistics_double.h>
#include "err.h"
#include "metrics.h"
#include "target.h"

void epar_metric_value(const double *A, const double *I, int L, double *V)
{
    cblas_dgemv(CblasRowMajor, CblasNoTrans, L, L, 1.0, A, L, I, 1, 0.0, V, 1);
}

size_t epar_metric_argmax_tied(const double *x, size_t n, double rtol)
{
    double scale = 0.0, top = -INFINITY;
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i])) continue;
        if (fabs(x[i]) > scale) scale = fabs(x[i]);
        if (!found || x[i] > top) top = x[i];
        found = 1;
    }
    if (!found) return 0;
    /* lower the floor of the top group while the next smaller value is within tol of it (chained, as
     * epar_metric_tie_merge compares each sorted value with its predecessor) */
    double tol = rtol * scale, lo = top;
    for (;;) {
        double next = -INFINITY;
        int any = 0;
        for (size_t i = 0; i < n; i++)
            if (x[i] < lo && (!any || x[i] > next)) { next = x[i]; any = 1; }
        if (!any || lo - next > tol) break;
        lo = next;
    }
    for (size_t i = 0; i < n; i++)
        if (x[i] >= lo) return i;
    return 0;
}

void epar_metric_row_entropy(const double *A, int L, double *H)
{
    for (int i = 0; i < L; i++) {
        const double *a = A + (size_t)i * L;
        double h = 0.0;
        for (int j = 0; j < L; j++)
            if (a[j] > 0) h -= a[j] * log(a[j]);
        H[i] = h;
    }
}

#if defined(__x86_64__)
#include <immintrin.h>
EPAR_TARGET_BEGIN("avx2,fma")

/* glibc libmvec: 4-lane double log (AVX2), within 4 ulp of log */
__m256d _ZGVdN4v_log(__m256d x);

/* the terms of a[0 .. n4-1] (n4 a multiple of 4) 4 at a time into *h, the positive weights counted into *nz: a weight
 * <= 0 (or NaN) enters as 1, whose term 1 ln 1 is 0, and is not counted; the four lane sums added in a fixed order */
static void entropy_f_avx2(const float *a, int n4, double *h, int *nz)
{
    const __m128 zero = _mm_setzero_ps(), one = _mm_set1_ps(1.0f);
    __m256d acc = _mm256_setzero_pd();
    for (int j = 0; j < n4; j += 4) {
        __m128 f = _mm_loadu_ps(a + j), pos = _mm_cmpgt_ps(f, zero);
        *nz += __builtin_popcount((unsigned)_mm_movemask_ps(pos));
        __m256d x = _mm256_cvtps_pd(_mm_blendv_ps(one, f, pos));
        acc = _mm256_fnmadd_pd(x, _ZGVdN4v_log(x), acc);
    }
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(acc), _mm256_extractf128_pd(acc, 1));
    *h = _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
EPAR_TARGET_END
#endif

double epar_metric_entropy_f(const float *a, int n, int *nonzero)
{
    double h = 0.0;
    int nz = 0, j = 0;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {   /* the body; the tail below */
        j = n & ~3;
        entropy_f_avx2(a, j, &h, &nz);
    }
#endif
    for (; j < n; j++)
        if (a[j] > 0) {
            h -= (double)a[j] * log((double)a[j]);
            nz++;
        }
    if (nonzero) *nonzero = nz;
    return h;
}

void epar_metric_entropy_ref_rows(const double *A, int L, double *Hrow)
{
    for (int i = 0; i < L; i++) {
        const double *a = A + (size_t)i * L;
        double h = 0.0;
        for (int j = 0; j < L; j++) h -= a[j] * log(a[j] + 1e-8);
        Hrow[i] = h;
    }
}

void epar_metric_mean_distance(const double *A, int L, double *D)
{
    for (int i = 0; i < L; i++) {
        const double *a = A + (size_t)i * L;
        double d = 0.0;
        for (int j = 0; j < L; j++) d += a[j] * (double)(j > i ? j - i : i - j);
        D[i] = d;
    }
}

void epar_metric_local_mass(const double *A, int L, int w, double *W)
{
    for (int i = 0; i < L; i++) {
        const double *a = A + (size_t)i * L;
        int lo = i - w < 0 ? 0 : i - w, hi = i + w >= L ? L - 1 : i + w;
        double s = 0.0;
        for (int j = lo; j <= hi; j++) s += a[j];
        W[i] = s;
    }
}

void epar_metric_key_stats(const double *A, int L, double *mean, double *sd, double *max, double *min)
{
    for (int j = 0; j < L; j++) {
        mean[j] = gsl_stats_mean(A + j, (size_t)L, (size_t)L);
        sd[j] = gsl_stats_sd_with_fixed_mean(A + j, (size_t)L, (size_t)L, mean[j]); /* ddof = 0 */
        gsl_stats_minmax(&min[j], &max[j], A + j, (size_t)L, (size_t)L);
    }
}

void epar_metric_position_correlation(const double *A, int B, int L, double *C, double *work)
{
    size_t n = (size_t)B * L;
    /* work row i = centred, unit-norm concatenation of A[b,i,:] over b */
    for (int i = 0; i < L; i++) {
        double *z = work + (size_t)i * n;
        for (int b = 0; b < B; b++) memcpy(z + (size_t)b * L, A + ((size_t)b * L + i) * L, (size_t)L * sizeof *z);
        double m = gsl_stats_mean(z, 1, n), ss = 0.0;
        for (size_t t = 0; t < n; t++) {
            z[t] -= m;
            ss += z[t] * z[t];
        }
        /* zero variance: correlation undefined (NaN in numpy) -> 0, the reference's nan_to_num */
        double inv = ss > 0 ? 1.0 / sqrt(ss) : 0.0;
        for (size_t t = 0; t < n; t++) z[t] *= inv;
    }
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, L, (int)n, 1.0, work, (int)n, 0.0, C, L);
    for (int i = 0; i < L; i++)
        for (int j = 0; j < i; j++) C[(size_t)i * L + j] = C[(size_t)j * L + i];
}

double epar_metric_spearman(const double *x, const double *y, size_t n, double *work)
{
    if (n < 2) return NAN;
    int cx = 1, cy = 1;
    for (size_t i = 1; i < n; i++) {
        if (x[i] != x[0]) cx = 0;
        if (y[i] != y[0]) cy = 0;
    }
    if (cx || cy) return NAN;
    return gsl_stats_spearman(x, 1, y, 1, n, work);
}

/* ---- optimal position ---- */

void epar_metric_row_mean(const double *A, int L, double *m)
{
    /* a plain sum: gsl_stats_mean's running mean divides at every element (5x slower here) */
    for (int i = 0; i < L; i++) {
        const double *a = A + (size_t)i * L;
        double sum = 0.0;
        for (int j = 0; j < L; j++) sum += a[j];
        m[i] = sum / L;
    }
}

void epar_metric_tie_merge(double *x, size_t n, double rtol, size_t *perm)
{
    if (n < 2) return;
    double scale = 0.0;
    for (size_t i = 0; i < n; i++)
        if (fabs(x[i]) > scale) scale = fabs(x[i]);
    double tol = rtol * scale;
    gsl_sort_index(perm, x, 1, n);
    double base = x[perm[0]], prev = base;
    for (size_t k = 1; k < n; k++) {
        double v = x[perm[k]];
        if (v - prev <= tol) x[perm[k]] = base; /* chained: compares with the unmerged predecessor */
        else base = v;
        prev = v;
    }
}

double epar_metric_score_similarity(const double *V, size_t t, size_t a)
{
    return 1.0 - fabs(V[t] - V[a]) / (V[t] + 1e-8);
}

double epar_metric_proximity(size_t t, size_t a, int L)
{
    return 1.0 - fabs((double)t - (double)a) / L;
}

void epar_metric_consistency(const double *V, const double *s, int L, struct epar_metric_optimal *out)
{
    size_t n = (size_t)L;
    size_t t = epar_metric_argmax_tied(V, n, EPAR_METRIC_TIE_RTOL), a = epar_metric_argmax_tied(s, n, EPAR_METRIC_TIE_RTOL);
    out->theoretical = (int)t;
    out->actual = (int)a;
    out->score_similarity = epar_metric_score_similarity(V, t, a);
    out->proximity = epar_metric_proximity(t, a, L);
    out->consistency = 0.5 * (out->score_similarity + out->proximity);
    out->score_mean = gsl_stats_mean(V, 1, n);
}

void epar_metric_optimal(const double *A, const double *I, int L, double *work, size_t *perm,
                         struct epar_metric_optimal *out)
{
    size_t n = (size_t)L;
    double *V = work, *s = work + n, *Vt = work + 2 * n, *sp = work + 4 * n;
    epar_metric_value(A, I, L, V);
    epar_metric_row_mean(A, L, s);
    double dev = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (fabs(s[i] * L - 1.0) > dev) dev = fabs(s[i] * L - 1.0);
        s[i] *= I[i];
    }
    epar_metric_consistency(V, s, L, out);
    out->row_sum_dev = dev;
    /* ranking: Spearman of the tie-merged vectors, so tied values share their average rank */
    memcpy(Vt, V, n * sizeof *V);
    epar_metric_tie_merge(Vt, n, EPAR_METRIC_TIE_RTOL, perm);
    epar_metric_tie_merge(s, n, EPAR_METRIC_TIE_RTOL, perm);
    out->ranking = epar_metric_spearman(Vt, s, n, sp);
}

double epar_metric_batch_variance(const double *x, int B, size_t n)
{
    if (B < 2 || n == 0) return NAN;
    double total = 0.0;
    for (size_t t = 0; t < n; t++) {
        double m = 0.0, ss = 0.0;
        for (int b = 0; b < B; b++) m += x[(size_t)b * n + t];
        m /= B;
        for (int b = 0; b < B; b++) {
            double d = x[(size_t)b * n + t] - m;
            ss += d * d;
        }
        total += ss / (B - 1);
    }
    return total / (double)n;
}

double epar_metric_locality(const double *A, int B, int L, int w)
{
    double total = 0.0;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < L; i++) {
            const double *a = A + ((size_t)b * L + i) * L;
            int lo = i - w < 0 ? 0 : i - w, hi = i + w >= L ? L - 1 : i + w;
            for (int j = lo; j <= hi; j++) total += a[j];
        }
    return total / ((double)B * L);
}

void epar_metric_distance_profile(const double *A, int B, int L, double *prof)
{
    for (int d = 0; d < L; d++) prof[d] = 0.0;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < L; i++) {
            const double *a = A + ((size_t)b * L + i) * L;
            for (int j = 0; j < L; j++) prof[j > i ? j - i : i - j] += a[j];
        }
    for (int d = 0; d < L; d++) prof[d] /= (double)B * (d ? 2.0 * (L - d) : (double)L);
}

void epar_metric_matrix_stats(const double *M, int L, double *mean, double *sd, double *offdiag_mean)
{
    size_t n = (size_t)L * L;
    *mean = gsl_stats_mean(M, 1, n);
    *sd = n > 1 ? gsl_stats_sd_m(M, 1, n, *mean) : 0.0;
    double tr = 0.0;
    for (int i = 0; i < L; i++) tr += M[(size_t)i * L + i];
    *offdiag_mean = L > 1 ? (*mean * (double)n - tr) / ((double)n - L) : NAN;
}

int epar_metric_head_summary(const double *A, int L, int causal, int w, double *out)
{
    double *H = malloc(3 * (size_t)L * sizeof *H), *D = H + L, *W = D + L;
    if (!H) return EPAR_ENOMEM;
    epar_metric_row_entropy(A, L, H);
    epar_metric_mean_distance(A, L, D);
    epar_metric_local_mass(A, L, w, W);
    double ent = 0, nent = 0, dist = 0, loc = 0;
    long zeros = 0, pairs = 0;
    int dmid = L / 2, dmax = L - 1;
    double s0 = 0, smid = 0, smax = 0;
    long n0 = 0, nmid = 0, nmax = 0;
    for (int i = 0; i < L; i++) {
        const double *a = A + (size_t)i * L;
        int nz = 0, jmax = causal ? i + 1 : L;
        for (int j = 0; j < L; j++) {
            double v = a[j];
            int d = abs(i - j);
            nz += v > 0;
            if (j < jmax) {
                pairs++;
                zeros += v == 0;
                if (d == 0) { s0 += v; n0++; }
                if (d == dmid) { smid += v; nmid++; }
                if (d == dmax) { smax += v; nmax++; }
            }
        }
        ent += H[i];
        nent += nz > 1 ? H[i] / log((double)nz) : 0.0;
        dist += D[i];
        loc += W[i];
    }
    free(H);
    out[EPAR_HEAD_ENT] = ent / L;
    out[EPAR_HEAD_NENT] = nent / L;
    out[EPAR_HEAD_DIST] = dist / L;
    out[EPAR_HEAD_LOCAL] = loc / L;
    out[EPAR_HEAD_SPARS] = pairs ? (double)zeros / pairs : 0.0;
    /* retention: mean weight at distance d over the mean weight at distance 0 */
    double m0 = n0 ? s0 / n0 : 0.0;
    out[EPAR_HEAD_RMID] = (m0 > 0 && nmid) ? (smid / nmid) / m0 : NAN;
    out[EPAR_HEAD_RMAX] = (m0 > 0 && nmax && L > 1) ? (smax / nmax) / m0 : NAN;
    return EPAR_OK;
}

double epar_metric_distance_mi(const double *A, int L, int causal, double *work, size_t *idx)
{
    enum { NB = 8 };
    /* the pairs in row order: work = weight, and the distance is recomputed from the pair's position */
    size_t n = 0;
    for (int i = 0; i < L; i++)
        for (int j = 0; j < (causal ? i + 1 : L); j++) work[n++] = A[(size_t)i * L + j];
    if (n < 2) return 0.0;
    /* weight bins by rank; a run of tied weights (the tie rule of lib/metrics, so BLAS rounding cannot split a
     * tie) shares its mid-rank (so uniform attention has MI 0) */
    epar_metric_tie_merge(work, n, EPAR_METRIC_TIE_RTOL, idx);
    gsl_sort_index(idx, work, 1, n);
    size_t *rank = malloc(n * sizeof *rank);
    if (!rank) return NAN;
    for (size_t a = 0; a < n;) {
        size_t b = a + 1;
        while (b < n && work[idx[b]] == work[idx[a]]) b++;
        for (size_t r = a; r < b; r++) rank[idx[r]] = (a + b - 1) / 2;
        a = b;
    }
    double joint[NB][NB] = {{0}}, px[NB] = {0}, py[NB] = {0};
    size_t pos = 0;
    for (int i = 0; i < L; i++)
        for (int j = 0; j < (causal ? i + 1 : L); j++, pos++) {
            int xb = L > 1 ? abs(i - j) * NB / L : 0, yb = (int)(rank[pos] * NB / n);
            joint[xb][yb] += 1.0 / n;
        }
    free(rank);
    for (int x = 0; x < NB; x++)
        for (int y = 0; y < NB; y++) { px[x] += joint[x][y]; py[y] += joint[x][y]; }
    double mi = 0;
    for (int x = 0; x < NB; x++)
        for (int y = 0; y < NB; y++)
            if (joint[x][y] > 0) mi += joint[x][y] * log(joint[x][y] / (px[x] * py[y]));
    return mi;
}
