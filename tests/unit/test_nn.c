/* test_nn: every op's backward against central finite differences, the whole model's gradient on a tiny
 * configuration for every position mechanism, the mechanism tables against lib/mech (compare's), and a
 * tiny model that overfits one fixed batch for every mechanism.
 *
 * Tolerances (fp32): the engine is float32, so the finite differences are taken in float32 too, with
 * the loss summed in double. With step h, rounding of a loss of size |L| gives an error of about
 * 6e-8 |L| sqrt(n) / h in the difference quotient and truncation h^2 |f'''| / 6; h = 1e-2 for O(1)
 * inputs keeps both near 1e-4 relative for these sizes, so |analytic - numeric| <= 2e-3 + 2e-2 |numeric|
 * is 10-100x above the noise and far below any real error (a wrong sign, a missing term or a wrong
 * index changes a gradient by O(1)). Directional derivatives along random directions sum many entries
 * and are checked to 1e-2 relative. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_randist.h>
#include "lib/blas.h"
#include "lib/err.h"
#include "lib/mech.h"
#include "lib/nn.h"
#include "lib/nnpos.h"
#include "lib/optim.h"
#include "lib/rng.h"
#include "lib/seams.h"
#include "check.h"

static gsl_rng *R;
#ifndef STEPS
#define STEPS 200
#endif

static void randn(float *x, size_t n, double sd)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)gsl_ran_gaussian(R, sd);
}

static double proj(const float *y, const float *w, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)w[i] * y[i];
    return s;
}

static int close_enough(double a, double n) { return fabs(a - n) <= 2e-3 + 2e-2 * fabs(n); }

/* ---- per-op checks: L = sum(w * op(x)), dL/dx from backward with dout = w ---- */

static void test_matmul(void)
{
    int N = 300, C = 5, OC = 6;   /* N > 256: two row blocks of the products, five of the bias sums */
    float *x = malloc(N * C * sizeof *x), *W = malloc(OC * C * sizeof *W), *b = malloc(OC * sizeof *b);
    float *y = malloc(N * OC * sizeof *y), *w = malloc(N * OC * sizeof *w);
    float *dx = calloc(N * C, sizeof *dx), *dW = calloc(OC * C, sizeof *dW), *db = calloc(OC, sizeof *db);
    float *part = malloc(5 * OC * sizeof *part);
    randn(x, N * C, 1); randn(W, OC * C, 1); randn(b, OC, 1); randn(w, N * OC, 1);
    epar_nn_matmul_forward(y, x, W, b, N, C, OC, 0);
    /* forward against a naive product */
    double maxe = 0;
    for (int r = 0; r < N; r++)
        for (int o = 0; o < OC; o++) {
            double s = b[o];
            for (int k = 0; k < C; k++) s += (double)x[r * C + k] * W[o * C + k];
            maxe = fmax(maxe, fabs(s - y[r * OC + o]));
        }
    check_abs(maxe, 0, 1e-5, "matmul forward equals the naive product");
    epar_nn_matmul_backward(dx, dW, db, w, x, W, N, C, OC, 0, part);
    int bad = 0;
    const float h = 1e-2f;
    struct { float *v, *g; int n; const char *name; } vars[3] = {{x, dx, N * C, "x"}, {W, dW, OC * C, "W"}, {b, db, OC, "b"}};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < vars[k].n; i++) {
            float s = vars[k].v[i];
            vars[k].v[i] = s + h;
            epar_nn_matmul_forward(y, x, W, b, N, C, OC, 0);
            double lp = proj(y, w, N * OC);
            vars[k].v[i] = s - h;
            epar_nn_matmul_forward(y, x, W, b, N, C, OC, 0);
            double lm = proj(y, w, N * OC);
            vars[k].v[i] = s;
            double num = (lp - lm) / (2 * h);
            if (!close_enough(vars[k].g[i], num)) {
                if (bad++ < 5) printf("  matmul d%s[%d]: analytic %g numeric %g\n", vars[k].name, i, vars[k].g[i], num);
            }
        }
    check_int(bad, 0, "matmul backward (dx, dW, db) against finite differences");
    free(x); free(W); free(b); free(y); free(w); free(dx); free(dW); free(db); free(part);
}

/* the tiled products (rows in blocks of 512, weight gradient in 512 x 512 tiles, ragged edges) against
 * naive double sums, with accumulation into nonzero outputs */
static void test_matmul_tiles(int N, int C, int OC)
{
    float *x = malloc(N * C * sizeof *x), *W = malloc(OC * C * sizeof *W), *dy = malloc(N * OC * sizeof *dy);
    float *dx = malloc(N * C * sizeof *dx), *dW = malloc(OC * C * sizeof *dW), *db = malloc(OC * sizeof *db);
    float *dx0 = malloc(N * C * sizeof *dx0), *dW0 = malloc(OC * C * sizeof *dW0), *db0 = malloc(OC * sizeof *db0);
    float *part = malloc(((N + 63) / 64) * OC * sizeof *part), *y = malloc(N * OC * sizeof *y);
    float *y0 = malloc(N * OC * sizeof *y0);
    randn(x, N * C, 1); randn(W, OC * C, 1); randn(dy, N * OC, 1); randn(dx0, N * C, 1); randn(dW0, OC * C, 1);
    randn(db0, OC, 1); randn(y0, N * OC, 1);
    memcpy(dx, dx0, N * C * sizeof *dx); memcpy(dW, dW0, OC * C * sizeof *dW); memcpy(db, db0, OC * sizeof *db);
    memcpy(y, y0, N * OC * sizeof *y);
    epar_nn_matmul_forward(y, x, W, NULL, N, C, OC, 1);
    epar_nn_matmul_backward(dx, dW, db, dy, x, W, N, C, OC, 1, part);
    double ey = 0, ex = 0, ew = 0, eb = 0;
    for (int r = 0; r < N; r++)
        for (int o = 0; o < OC; o++) {
            double s = y0[r * OC + o];
            for (int k = 0; k < C; k++) s += (double)x[r * C + k] * W[o * C + k];
            ey = fmax(ey, fabs(s - y[r * OC + o]));
        }
    for (int r = 0; r < N; r++)
        for (int k = 0; k < C; k++) {
            double s = dx0[r * C + k];
            for (int o = 0; o < OC; o++) s += (double)dy[r * OC + o] * W[o * C + k];
            ex = fmax(ex, fabs(s - dx[r * C + k]));
        }
    for (int o = 0; o < OC; o++) {
        double sb = db0[o];
        for (int r = 0; r < N; r++) sb += dy[r * OC + o];
        eb = fmax(eb, fabs(sb - db[o]));
        for (int k = 0; k < C; k++) {
            double s = dW0[o * C + k];
            for (int r = 0; r < N; r++) s += (double)dy[r * OC + o] * x[r * C + k];
            ew = fmax(ew, fabs(s - dW[o * C + k]));
        }
    }
    /* sums of 70-1600 products of N(0,1) numbers: size ~8-40, fp32 rounding ~1e-5 (largest errors measured 2-8e-5) */
    check_abs(ey, 0, 1e-4, "tiled matmul forward (accumulate) equals the naive product");
    check_abs(ex, 0, 1e-4, "tiled matmul dinp (accumulate) equals the naive product");
    check_abs(ew, 0, 1e-4, "tiled matmul dW (512 x 512 tiles, ragged) equals the naive product");
    check_abs(eb, 0, 1e-4, "matmul dbias equals the naive column sums");
    /* the residual form (out = res + bias + x W^T, res another array) and the bias sums without dinp */
    epar_nn_matmul_forward_res(y, y0, x, W, db0, N, C, OC);
    ey = 0;
    for (int r = 0; r < N; r++)
        for (int o = 0; o < OC; o++) {
            double s = (double)y0[r * OC + o] + db0[o];
            for (int k = 0; k < C; k++) s += (double)x[r * C + k] * W[o * C + k];
            ey = fmax(ey, fabs(s - y[r * OC + o]));
        }
    check_abs(ey, 0, 1e-4, "matmul forward res + bias + product equals the naive sum");
    memcpy(db, db0, OC * sizeof *db);
    epar_nn_matmul_backward(NULL, dW, db, dy, x, W, N, C, OC, 0, part);
    eb = 0;
    for (int o = 0; o < OC; o++) {
        double sb = db0[o];
        for (int r = 0; r < N; r++) sb += dy[r * OC + o];
        eb = fmax(eb, fabs(sb - db[o]));
    }
    check_abs(eb, 0, 1e-4, "matmul dbias without dinp equals the naive column sums");
    free(x); free(W); free(dy); free(dx); free(dW); free(db); free(dx0); free(dW0); free(db0); free(part); free(y);
    free(y0);
}

/* The linear layers' products on one thread and on a team of two: forward, input gradient, weight gradient and bias
 * sums bit for bit the same. Row blocks chosen by the thread count would fail it: one sgemm of 1030 rows against
 * blocks of 512, 512 and 6, the last small enough for OpenBLAS's small-matrix kernel, differs in the last bits */
static void test_matmul_threads(int N, int C, int OC)
{
    size_t nx = (size_t)N * C, nw = (size_t)OC * C, ny = (size_t)N * OC;
    float *x = malloc(nx * sizeof *x), *W = malloc(nw * sizeof *W), *bias = malloc(OC * sizeof *bias);
    float *dy = malloc(ny * sizeof *dy), *part = malloc((size_t)((N + 63) / 64) * OC * sizeof *part);
    float *y[2], *dx[2], *dW[2], *db[2];
    randn(x, nx, 1); randn(W, nw, 1); randn(bias, OC, 1); randn(dy, ny, 1);
    int threads = omp_get_max_threads();
    for (int k = 0; k < 2; k++) {
        y[k] = malloc(ny * sizeof **y); dx[k] = calloc(nx, sizeof **dx); dW[k] = calloc(nw, sizeof **dW);
        db[k] = calloc(OC, sizeof **db);
        omp_set_num_threads(k + 1);
        epar_nn_matmul_forward(y[k], x, W, bias, N, C, OC, 0);
        epar_nn_matmul_backward(dx[k], dW[k], db[k], dy, x, W, N, C, OC, 1, part);
    }
    omp_set_num_threads(threads);
    check_true(!memcmp(y[0], y[1], ny * sizeof **y) && !memcmp(dx[0], dx[1], nx * sizeof **dx) &&
                   !memcmp(dW[0], dW[1], nw * sizeof **dW) && !memcmp(db[0], db[1], OC * sizeof **db),
               "matmul %d x %d -> %d: one thread and two, bit for bit", N, C, OC);
    for (int k = 0; k < 2; k++) { free(y[k]); free(dx[k]); free(dW[k]); free(db[k]); }
    free(x); free(W); free(bias); free(dy); free(part);
}

static void test_layernorm(void)
{
    int N = 67, C = 9;
    float *x = malloc(N * C * sizeof *x), *g = malloc(C * sizeof *g), *b = malloc(C * sizeof *b);
    float *y = malloc(N * C * sizeof *y), *w = malloc(N * C * sizeof *w), *mean = malloc(N * sizeof *mean),
          *rstd = malloc(N * sizeof *rstd);
    float *dx = calloc(N * C, sizeof *dx), *dg = calloc(C, sizeof *dg), *db = calloc(C, sizeof *db);
    float *part = malloc(2 * 2 * C * sizeof *part);
    randn(x, N * C, 1.3); randn(g, C, 1); randn(b, C, 1); randn(w, N * C, 1);
    epar_nn_layernorm_forward(y, mean, rstd, x, g, b, N, C);
    epar_nn_layernorm_backward(dx, dg, db, w, x, g, mean, rstd, N, C, part);
    int bad = 0;
    const float h = 1e-2f;
    struct { float *v, *gr; int n; } vars[3] = {{x, dx, N * C}, {g, dg, C}, {b, db, C}};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < vars[k].n; i++) {
            float s = vars[k].v[i];
            vars[k].v[i] = s + h;
            epar_nn_layernorm_forward(y, mean, rstd, x, g, b, N, C);
            double lp = proj(y, w, N * C);
            vars[k].v[i] = s - h;
            epar_nn_layernorm_forward(y, mean, rstd, x, g, b, N, C);
            double lm = proj(y, w, N * C);
            vars[k].v[i] = s;
            double num = (lp - lm) / (2 * h);
            if (!close_enough(vars[k].gr[i], num) && bad++ < 5)
                printf("  layernorm var %d [%d]: analytic %g numeric %g\n", k, i, vars[k].gr[i], num);
        }
    check_int(bad, 0, "layernorm backward (dx, dw, db) against finite differences");
    free(x); free(g); free(b); free(y); free(w); free(mean); free(rstd); free(dx); free(dg); free(db); free(part);
}

/* libmvec's 16-lane expf against its 8-lane one, which lib/nn's AVX-512 forms rely on for their bits: a million
 * floats spread over all 2^32 bit patterns (every one agreed with glibc 2.36, checked once outside the tests) */
#include <immintrin.h>
__m256 _ZGVdN8v_expf(__m256 x);
__m512 _ZGVeN16v_expf(__m512 x);

__attribute__((target("avx512f,avx512dq,avx2,fma"))) static long expf_lanes_differ(long *tried)
{
    long diff = 0;
    *tried = 0;
    for (uint64_t u = 0; u < (1ull << 32); u += 16 * 4093) {
        uint32_t b[16];
        float o16[16], o8[16];
        for (int k = 0; k < 16; k++) b[k] = (uint32_t)(u + (uint64_t)k * 4093);
        __m512 x = _mm512_loadu_ps((const float *)b);
        _mm512_storeu_ps(o16, _ZGVeN16v_expf(x));
        _mm256_storeu_ps(o8, _ZGVdN8v_expf(_mm512_castps512_ps256(x)));
        _mm256_storeu_ps(o8 + 8, _ZGVdN8v_expf(_mm256_loadu_ps((const float *)b + 8)));
        for (int k = 0; k < 16; k++) diff += memcmp(o16 + k, o8 + k, 4) && !(isnan(o16[k]) && isnan(o8[k]));
        *tried += 16;
    }
    return diff;
}

static void test_expf_lanes(void)
{
    if (!epar_nn_set_no_avx512(0)) {
        check_true(1, "libmvec expf in 16 lanes against 8: skipped (no AVX-512 forms here)");
        return;
    }
    long tried, diff = expf_lanes_differ(&tried);
    check_true(diff == 0, "libmvec expf in 16 lanes = in 8, bit for bit (%ld of %ld floats differ)", diff, tried);
}

static void test_gelu(void)
{
    int n = 200, bad = 0;
    float x[200], y[200], dx[200], one[200];
    for (int i = 0; i < n; i++) { x[i] = -5.0f + 10.0f * i / (n - 1) + 0.0137f; one[i] = 1.0f; }
    epar_nn_gelu_backward(dx, x, one, n);
    for (int i = 0; i < n; i++) {
        const float h = 1e-2f;
        float p = x[i] + h, m = x[i] - h, yp, ym;
        epar_nn_gelu_forward(&yp, &p, 1);
        epar_nn_gelu_forward(&ym, &m, 1);
        double num = ((double)yp - ym) / (2 * h);
        if (!close_enough(dx[i], num) && bad++ < 5) printf("  gelu'(%g): analytic %g numeric %g\n", x[i], dx[i], num);
    }
    check_int(bad, 0, "gelu backward against finite differences on [-5, 5]");
    epar_nn_gelu_forward(y, x, n);
    check_abs(y[n - 1], 5.0137, 1e-4, "gelu(5) ~ 5");
    /* the sigmoid form against the tanh form in double, relative (also where gelu(x) is tiny, x << 0),
     * on both code paths (AVX2 + libmvec and portable C), which must agree to a few ulp */
    double maxrel[2] = {0, 0}, maxd[2] = {0, 0};
    float yp[200], dxp[200];
    for (int path = 0; path < 2; path++) {
        epar_nn_set_portable(path);
        float *yy = path ? yp : y, *dd = path ? dxp : dx;
        epar_nn_gelu_forward(yy, x, n);
        epar_nn_gelu_backward(dd, x, one, n);
        for (int i = 0; i < n; i++) {
            double xd = x[i], u = 0.7978845608028654 * (xd + 0.044715 * xd * xd * xd), th = tanh(u);
            double ref = 0.5 * xd * (1.0 + th);
            double dref = 0.5 * (1.0 + th) + 0.5 * xd * (1.0 - th * th) * 0.7978845608028654 * (1.0 + 3 * 0.044715 * xd * xd);
            double e = fabs(yy[i] - ref) / fabs(ref), de = fabs(dd[i] - dref) / (fabs(dref) + 1e-3);
            if (e > maxrel[path]) maxrel[path] = e;
            if (de > maxd[path]) maxd[path] = de;
        }
    }
    epar_nn_set_portable(0);
    check_true(maxrel[0] < 1e-5 && maxrel[1] < 1e-5, "gelu = 0.5 x (1 + tanh u) to 1e-5 relative on [-5, 5] (%s: %.2g, C: %.2g)",
          epar_nn_simd() ? "AVX2" : "C again", maxrel[0], maxrel[1]);
    check_true(maxd[0] < 1e-4 && maxd[1] < 1e-4, "gelu' to 1e-4 relative (+1e-3 absolute) on both paths (%.2g, %.2g)", maxd[0],
          maxd[1]);
    double pd = 0;
    for (int i = 0; i < n; i++) pd = fmax(pd, fabs(y[i] - yp[i]) / (fabs(yp[i]) + 1e-30));
    check_true(pd < 4e-6, "gelu: AVX2 path and portable path agree to 4e-6 relative (%.2g)", pd);
    /* the model's form: the forward keeps s, the backward reads it; the bits of the plain form on both paths (a length
     * that is not a multiple of 8: the tail too) */
    int same[2] = {1, 1};
    for (int path = 0; path < 2; path++) {
        epar_nn_set_portable(path);
        float s[200], yk[200], dk[200], d0[200], g[200];
        for (int i = 0; i < n; i++) g[i] = 0.5f + 0.01f * (float)i;
        epar_nn_gelu_forward(y, x, 197);
        epar_nn_gelu_backward(d0, x, g, 197);
        epar_nn_gelu_forward_keep(yk, s, x, 197);
        memcpy(dk, g, sizeof dk);
        epar_nn_gelu_backward_kept(dk, x, s, dk, 197);   /* in place, as the model calls it */
        same[path] = !memcmp(y, yk, 197 * sizeof *y) && !memcmp(d0, dk, 197 * sizeof *d0);
    }
    epar_nn_set_portable(0);
    check_true(same[0] && same[1], "gelu with s kept: forward and backward bit-identical to the plain form (AVX2 %d, C %d)",
               same[0], same[1]);
    /* where the CPU has AVX-512: GELU 16 lanes at a time against 8, forward (with s kept) and backward, on lengths
     * whose tails are ragged in both (1, 7, 9, 15, 17, 197) and on values over [-12, 12] (exp saturates past it) */
    float xs[1000], gs[1000], out[2][3][1000];
    for (int i = 0; i < 1000; i++) {
        xs[i] = (float)gsl_ran_gaussian(R, i < 500 ? 2.0 : 6.0);
        gs[i] = (float)gsl_ran_gaussian(R, 1.0);
    }
    int lens[] = {1, 7, 9, 15, 17, 197, 1000}, wide = 0, bits = 1;
    for (size_t c = 0; c < sizeof lens / sizeof *lens; c++) {
        for (int p = 0; p < 2; p++) {
            int on = epar_nn_set_no_avx512(p);
            if (!p) wide = on;
            memset(out[p], 0, sizeof out[p]);
            epar_nn_gelu_forward_keep(out[p][0], out[p][1], xs, lens[c]);
            epar_nn_gelu_backward_kept(out[p][2], xs, out[p][1], gs, lens[c]);
        }
        bits &= !memcmp(out[0], out[1], sizeof out[0]);
    }
    epar_nn_set_no_avx512(0);
    check_true(bits, "gelu in 16 lanes and in 8: the same bits, forward, s and backward%s",
               wide ? "" : " (no AVX-512 here: both AVX2)");
}

static void test_crossentropy(void)
{
    int N = 5, V = 7, bad = 0;
    float z[35], p[35], dz[35], loss[5], mask[5] = {1, 0, 1, 0.5f, 1};
    int t[5] = {3, 1, 0, 6, 2};
    unsigned char cor[5];
    randn(z, N * V, 2);
    epar_nn_crossentropy_forward(p, loss, cor, z, t, mask, N, V);
    double L = 0;
    for (int i = 0; i < N; i++) L += loss[i];
    epar_nn_crossentropy_backward(dz, p, t, mask, 1.0, N, V);
    for (int i = 0; i < N * V; i++) {
        const float h = 1e-2f;
        float s = z[i];
        z[i] = s + h;
        epar_nn_crossentropy_forward(p, loss, cor, z, t, mask, N, V);
        double lp = 0;
        for (int r = 0; r < N; r++) lp += loss[r];
        z[i] = s - h;
        epar_nn_crossentropy_forward(p, loss, cor, z, t, mask, N, V);
        double lm = 0;
        for (int r = 0; r < N; r++) lm += loss[r];
        z[i] = s;
        double num = (lp - lm) / (2 * h);
        if (!close_enough(dz[i], num) && bad++ < 5) printf("  ce dz[%d]: analytic %g numeric %g\n", i, dz[i], num);
    }
    check_int(bad, 0, "cross-entropy backward (masked) against finite differences");
    check_true(L > 0 && loss[1] == 0.0f, "masked positions contribute no loss");
    /* in place: probs over the logits gives the same numbers */
    float z2[35];
    memcpy(z2, z, sizeof z);
    epar_nn_crossentropy_forward(p, loss, cor, z, t, mask, N, V);
    float l0 = loss[0];
    epar_nn_crossentropy_forward(z2, loss, cor, z2, t, mask, N, V);
    check_true(!memcmp(z2, p, sizeof p) && loss[0] == l0, "cross-entropy in place equals out of place");
}

/* the cross-entropy's two paths (AVX2: libmvec expf, 8 lanes, two double accumulators; portable: libm expf, one
 * double sum) against a double-precision softmax, at vocabularies with and without a ragged 8-lane tail */
/* the cross-entropy's exps 16 lanes at a time (AVX-512) and 8 (AVX2): the same probabilities and losses, bit for bit,
 * at vocabularies that leave every kind of tail */
static void test_crossentropy_lanes(void)
{
    int N = 3, Vs[] = {1, 7, 8, 9, 15, 16, 17, 24, 63, 100};
    int same = 1, wide = 0;
    for (size_t k = 0; k < sizeof Vs / sizeof *Vs; k++) {
        int V = Vs[k], t[3] = {0, V - 1, V / 2};
        float *z = malloc((size_t)N * V * sizeof *z), *p[2], loss[2][3];
        unsigned char cor[3];
        randn(z, (size_t)N * V, 3.0);
        for (int w = 0; w < 2; w++) {
            p[w] = malloc((size_t)N * V * sizeof(float));
            int on = epar_nn_set_no_avx512(w);
            if (!w) wide = on;
            epar_nn_crossentropy_forward(p[w], loss[w], cor, z, t, NULL, N, V);
        }
        epar_nn_set_no_avx512(0);
        same &= !memcmp(p[0], p[1], (size_t)N * V * sizeof(float)) && !memcmp(loss[0], loss[1], sizeof loss[0]);
        free(z); free(p[0]); free(p[1]);
    }
    check_true(same, "cross-entropy with exps in 16 lanes and in 8: the same bits%s",
               wide ? "" : " (no AVX-512 here: both AVX2)");
}

static void test_crossentropy_paths(void)
{
    int N = 4, Vs[3] = {63, 5, 1000};
    for (int k = 0; k < 3; k++) {
        int V = Vs[k];
        float *z = malloc((size_t)N * V * sizeof *z), *p = malloc((size_t)N * V * sizeof *p), loss[4];
        int t[4] = {0, V - 1, V / 2, 1};
        unsigned char cor[4];
        randn(z, (size_t)N * V, 3.0);
        for (int path = 0; path < 2; path++) {
            epar_nn_set_portable(path);
            epar_nn_crossentropy_forward(p, loss, cor, z, t, NULL, N, V);
            double ep = 0, el = 0;
            for (int r = 0; r < N; r++) {
                const float *zr = z + (size_t)r * V;
                double mx = zr[0], sum = 0;
                for (int v = 1; v < V; v++) mx = fmax(mx, zr[v]);
                /* exp of the float difference, as both paths take it (its rounding is not the exp's error) */
                for (int v = 0; v < V; v++) sum += exp((double)(zr[v] - (float)mx));
                for (int v = 0; v < V; v++) {
                    double ref = exp((double)(zr[v] - (float)mx)) / sum;
                    ep = fmax(ep, fabs(p[(size_t)r * V + v] - ref) / ref);
                }
                el = fmax(el, fabs(loss[r] - (mx + log(sum) - zr[t[r]])));
            }
            check_abs(ep, 0, 1e-6, "cross-entropy probabilities to 1e-6 relative of double (V=%d, %s path)", V,
                      path ? "portable" : "AVX2");
            check_abs(el, 0, 1e-5, "cross-entropy loss to 1e-5 of double (V=%d, %s path)", V, path ? "portable" : "AVX2");
        }
        epar_nn_set_portable(0);
        free(z);
        free(p);
    }
}

/* attention: L = sum w * out; gradients of qkv, and of the factor/bias tables through gfac/gbias */
static const float *PAIR;   /* the (i, j) table of the current case (stride ld), NULL: none */
static float *KWORK;        /* kernel attention (elu + 1) of the current case: its per-thread scratch, NULL: softmax */
static struct epar_nnpos KPOS;   /* with KWORK: linear-elu's trained form (lib/mechs/kernel.c), its own attention */
static size_t KW;                /* its per-thread scratch at the case's T */

/* with KWORK: linear-elu's own attention form into pos */
static void attn_own(struct epar_nn_attn_pos *pos)
{
    if (!KWORK) return;
    const struct epar_nnpos_info *in = epar_nnpos_row(EPAR_MECH_LINEAR_ELU);
    pos->own_forward = in->attn_forward;
    pos->own_backward = in->attn_backward;
    pos->mech = &KPOS;
    pos->own_work = KW;
}

static void attn_forward(float *out, float *pre, float *att, const float *qkv, const float *fac, const float *bias,
                         int ld, int B, int T, int C, int NH)
{
    struct epar_nn_attn_pos pos = {.fac = fac, .bias = bias, .ld = ld, .pair = PAIR, .work = KWORK, .nwork = 64};
    attn_own(&pos);
    epar_nn_attention_forward(out, pre, att, qkv, &pos, B, T, C, NH);
}

/* a (T, ld) pair table: -inf (masked) with probability 0.4 below the diagonal, else N(0, 0.5^2); diagonal 0 */
static float *random_pair(int T, int ld)
{
    float *pr = malloc((size_t)T * ld * sizeof *pr);
    for (int i = 0; i < T; i++)
        for (int j = 0; j < ld; j++)
            pr[(size_t)i * ld + j] = j == i ? 0.0f : gsl_rng_uniform(R) < 0.4 ? -INFINITY : (float)gsl_ran_gaussian(R, 0.5);
    return pr;
}

static void test_attention_case(int T, int use_fac, int use_bias, int use_pair, int use_kernel)
{
    int B = 2, C = 8, NH = 2, ld = T + 3;
    size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, na = (size_t)B * NH * T * T;
    float *qkv = malloc(nq * sizeof *qkv), *out = malloc(no * sizeof *out), *w = malloc(no * sizeof *w);
    /* att zeroed: the kernel writes row i only up to the end of its query block (the rest stays zero) */
    float *pre = malloc(na * sizeof *pre), *att = calloc(na, sizeof *att), *dqkv = malloc(nq * sizeof *dqkv);
    float *fac = malloc(NH * ld * sizeof *fac), *bias = malloc(NH * ld * sizeof *bias);
    float *gfac = malloc(B * NH * T * sizeof *gfac), *gbias = malloc(B * NH * T * sizeof *gbias);
    float *datt = malloc(64 * T * T * sizeof *datt);
    randn(qkv, nq, 1.0); randn(w, no, 1.0);
    for (int i = 0; i < NH * ld; i++) {
        fac[i] = (float)(0.5 + gsl_rng_uniform(R));
        bias[i] = (float)gsl_ran_gaussian(R, 0.5);
    }
    const float *F = use_fac ? fac : NULL, *Bi = use_bias ? bias : NULL;
    float *pair = use_pair ? random_pair(T, ld) : NULL;
    PAIR = pair;
    if (use_kernel) {   /* linear-elu at its default eps (1e-6) */
        struct epar_nnpos_settings ks;
        size_t bh;
        epar_nnpos_settings_default(&ks);
        check_int(epar_nnpos_alloc(&KPOS, EPAR_MECH_LINEAR_ELU, &ks, T, C, NH, 1), EPAR_OK, "linear-elu's trained form");
        epar_nnpos_scratch(EPAR_MECH_LINEAR_ELU, &ks, T, C / NH, &KW, &bh);
    }
    KWORK = use_kernel ? malloc((size_t)64 * KW * sizeof *KWORK) : NULL;
    attn_forward(out, pre, att, qkv, F, Bi, ld, B, T, C, NH);
    /* rows sum to 1, nothing is attended in the future nor where the pair table masks */
    double maxdev = 0, future = 0, masked = 0;
    for (size_t r = 0; r < (size_t)B * NH * T; r++) {
        int i = (int)(r % T);
        double s = 0;
        for (int j = 0; j < T; j++) {
            s += att[r * T + j];
            if (j > i) future += fabs(att[r * T + j]);
            else if (pair && isinf(pair[(size_t)i * ld + j])) masked += fabs(att[r * T + j]);
        }
        maxdev = fmax(maxdev, fabs(s - 1));
    }
    check_abs(maxdev, 0, 1e-5, "attention rows sum to 1 (T=%d fac=%d bias=%d pair=%d kernel=%d)", T, use_fac, use_bias,
              use_pair, use_kernel);
    check_abs(future, 0, 0, "causal: no weight on j > i (T=%d)", T);
    check_abs(masked, 0, 0, "no weight where the pair table is -inf (T=%d pair=%d)", T, use_pair);
    struct epar_nn_attn_pos pos = {.fac = F, .bias = Bi, .ld = ld, .gfac = use_fac ? gfac : NULL,
                                   .gbias = use_bias ? gbias : NULL, .pair = pair, .work = KWORK, .nwork = 64};
    attn_own(&pos);
    epar_nn_attention_backward(dqkv, w, qkv, pre, att, &pos, datt, 64, B, T, C, NH);
    int bad = 0;
    const float h = 1e-2f;
    size_t ncheck = nq < 400 ? nq : 400;   /* long cases: 400 random entries */
    for (size_t k = 0; k < ncheck; k++) {
        size_t i = ncheck == nq ? k : gsl_rng_uniform_int(R, nq);
        float s = qkv[i];
        qkv[i] = s + h;
        attn_forward(out, pre, att, qkv, F, Bi, ld, B, T, C, NH);
        double lp = proj(out, w, no);
        qkv[i] = s - h;
        attn_forward(out, pre, att, qkv, F, Bi, ld, B, T, C, NH);
        double lm = proj(out, w, no);
        qkv[i] = s;
        double num = (lp - lm) / (2 * h);
        if (!close_enough(dqkv[i], num) && bad++ < 5) printf("  attention dqkv[%zu]: analytic %g numeric %g\n", i, dqkv[i], num);
    }
    check_int(bad, 0, "attention backward dqkv against finite differences (T=%d fac=%d bias=%d pair=%d kernel=%d)", T,
              use_fac, use_bias, use_pair, use_kernel);
    /* table gradients: dL/dtable[h][d] = sum_b g[b][h][d] */
    for (int which = 0; which < 2; which++) {
        if ((which == 0 && !use_fac) || (which == 1 && !use_bias)) continue;
        float *tab = which == 0 ? fac : bias, *g = which == 0 ? gfac : gbias;
        int tbad = 0;
        for (int hh = 0; hh < NH; hh++)
            for (int d = 0; d < T; d++) {
                double an = 0;
                for (int b = 0; b < B; b++) an += g[((size_t)b * NH + hh) * T + d];
                float s = tab[hh * ld + d];
                tab[hh * ld + d] = s + h;
                attn_forward(out, pre, att, qkv, F, Bi, ld, B, T, C, NH);
                double lp = proj(out, w, no);
                tab[hh * ld + d] = s - h;
                attn_forward(out, pre, att, qkv, F, Bi, ld, B, T, C, NH);
                double lm = proj(out, w, no);
                tab[hh * ld + d] = s;
                double num = (lp - lm) / (2 * h);
                if (!close_enough(an, num) && tbad++ < 5)
                    printf("  attention d%s[%d][%d]: analytic %g numeric %g\n", which ? "bias" : "fac", hh, d, an, num);
            }
        check_int(tbad, 0, "attention %s-table gradient against finite differences (T=%d)", which ? "bias" : "factor", T);
    }
    free(qkv); free(out); free(w); free(pre); free(att); free(dqkv); free(fac); free(bias); free(gfac); free(gbias);
    free(datt); free(pair); free(KWORK);
    if (use_kernel) epar_nnpos_free(&KPOS);
    PAIR = NULL;
    KWORK = NULL;
}

/* the AVX2 path (lib/nn's own product tiles, libmvec expf, 8-lane sums, reversed table loads) against the portable
 * one (cblas products, C rows): forward weights, output and dqkv with a factor and a bias (no table gradients: the
 * path fixed EPAR runs), at lengths that leave ragged 8-lane and 4-row tails, head widths that leave partial 16-column
 * tiles (hs 8, 12, 40), and a head too wide for its transposed keys at once (hs 64, T 300: keys in chunks) */
/* the attention forward and backward run two ways on the same inputs: the AVX2 path against the portable one
 * (rows 0: agreement to rounding), or (rows 1) the AVX-512 forms (where the CPU has them: products in tiles of 8 rows,
 * the softmax's exps 16 lanes at a time) against the AVX2 ones (tiles of 4, exps 8 at a time): the same bits */
static void attention_two_ways(int T, int use_pair, int C, int NH, int rows)
{
    int B = 2, ld = T + 3;
    size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, na = (size_t)B * NH * T * T;
    float *qkv = malloc(nq * sizeof *qkv), *w = malloc(no * sizeof *w), *fac = malloc(NH * ld * sizeof *fac);
    float *bias = malloc(NH * ld * sizeof *bias), *datt = malloc(64 * T * T * sizeof *datt);
    float *out[2], *pre[2], *att[2], *dq[2];
    for (int p = 0; p < 2; p++) {
        out[p] = malloc(no * sizeof(float)); pre[p] = malloc(na * sizeof(float));
        att[p] = calloc(na, sizeof(float)); dq[p] = malloc(nq * sizeof(float));   /* calloc: see above */
    }
    randn(qkv, nq, 1.5); randn(w, no, 1.0);
    for (int i = 0; i < NH * ld; i++) {
        fac[i] = (float)(0.5 + gsl_rng_uniform(R));
        bias[i] = (float)gsl_ran_gaussian(R, 0.5);
    }
    float *pair = use_pair ? random_pair(T, ld) : NULL;
    struct epar_nn_attn_pos pos = {.fac = fac, .bias = bias, .ld = ld, .pair = pair};
    int tile[2] = {0, 0};
    for (int p = 0; p < 2; p++) {
        if (rows) tile[p] = epar_nn_set_no_avx512(p) ? 8 : 4;
        else epar_nn_set_portable(p);
        epar_nn_attention_forward(out[p], pre[p], att[p], qkv, &pos, B, T, C, NH);
        epar_nn_attention_backward(dq[p], w, qkv, pre[p], att[p], &pos, datt, 64, B, T, C, NH);
    }
    epar_nn_set_portable(0);
    epar_nn_set_no_avx512(0);
    if (rows) {
        int same = !memcmp(out[0], out[1], no * sizeof(float)) && !memcmp(dq[0], dq[1], nq * sizeof(float));
        for (int b = 0; b < B * NH; b++)   /* the weights on and below the diagonal (above it: scratch) */
            for (int i = 0; i < T; i++)
                same &= !memcmp(att[0] + ((size_t)b * T + i) * T, att[1] + ((size_t)b * T + i) * T,
                                (size_t)(i + 1) * sizeof(float));
        check_true(same, "attention in tiles of %d rows and of %d (exps in 16 lanes and in 8): the same bits (T=%d pair=%d "
                   "hs=%d)%s", tile[0], tile[1], T, use_pair, C / NH, tile[0] == 4 ? " (no AVX-512 here: both AVX2)" : "");
        goto done;
    }
    double ea = 0, eo = 0, ed = 0, sd = 0;
    for (size_t i = 0; i < na; i++) ea = fmax(ea, fabs(att[0][i] - att[1][i]));
    for (size_t i = 0; i < no; i++) eo = fmax(eo, fabs(out[0][i] - out[1][i]));
    for (size_t i = 0; i < nq; i++) {
        ed = fmax(ed, fabs(dq[0][i] - dq[1][i]));
        sd = fmax(sd, fabs(dq[1][i]));
    }
    /* the scores are sums of hs products in another order on each path: their rounding (a few ulp of scores up to
     * ~20 here) moves the weights by ~1e-6 of themselves at hs 64 */
    double wtol = C / NH <= 16 ? 1e-6 : 1e-5;
    check_abs(ea, 0, wtol, "attention weights: AVX2 path = portable path to %g (T=%d pair=%d hs=%d%s)", wtol, T,
              use_pair, C / NH, epar_nn_simd() ? "" : ", no AVX2 here");
    check_abs(eo, 0, 1e-5, "attention output: AVX2 path = portable path to 1e-5 (T=%d hs=%d)", T, C / NH);
    check_abs(ed / sd, 0, 1e-5, "attention dqkv: AVX2 path = portable path to 1e-5 of its largest entry (T=%d hs=%d)", T,
              C / NH);
done:
    for (int p = 0; p < 2; p++) { free(out[p]); free(pre[p]); free(att[p]); free(dq[p]); }
    free(qkv); free(w); free(fac); free(bias); free(datt); free(pair);
}

static void test_attention_paths(int T, int use_pair, int C, int NH) { attention_two_ways(T, use_pair, C, NH, 0); }

static void test_attention_rows(int T, int use_pair, int C, int NH) { attention_two_ways(T, use_pair, C, NH, 1); }

static void test_attention(void)
{
    test_attention_paths(67, 0, 16, 2);
    test_attention_paths(13, 0, 16, 2);
    test_attention_paths(67, 1, 16, 2);
    test_attention_case(5, 0, 0, 0, 0);
    test_attention_case(5, 1, 1, 0, 0);
    test_attention_case(70, 1, 0, 0, 0);    /* two query blocks */
    test_attention_case(67, 0, 1, 0, 0);
    test_attention_case(13, 0, 0, 1, 0);    /* a mask-like (i, j) table */
    test_attention_case(70, 1, 1, 1, 0);
    test_attention_case(9, 0, 0, 0, 1);     /* kernel attention (elu + 1), one block and two */
    test_attention_case(70, 0, 0, 0, 1);
}

/* ---- the whole model ---- */

static int TINY_NH = 2;   /* heads of the tiny model (4 for GQA with two groups) */

static int DEBERTA_ABS;   /* deberta.absolute of tiny() (the EMD's table) */

static struct epar_nn_config tiny(enum epar_mech_id pos, int learn)
{
    struct epar_nn_config c;
    memset(&c, 0, sizeof c);
    c.V = 11; c.Tmax = 9; c.Bmax = 3; c.C = 8; c.NH = TINY_NH; c.NL = 2; c.F = 12;
    c.pos = pos;
    c.init_sd = 0.3;   /* larger than GPT-2's 0.02 so every path carries a visible gradient */
    epar_nnpos_settings_default(&c.pos_settings);
    c.pos_settings.fx = (struct epar_posfx){EPAR_FORM_ENHANCED, 1.3, 1.7, 0.6};
    c.pos_settings.learn_posfx = learn;
    c.pos_settings.init_sd = 0.3;
    c.pos_settings.mp[EPAR_MECH_T5][0] = 8;       /* t5.num_buckets */
    c.pos_settings.mp[EPAR_MECH_T5][1] = 16;      /* t5.max_distance */
    c.pos_settings.mp[EPAR_MECH_T5][2] = 0.3;     /* t5.init_sd */
    /* the length-extrapolation variants act only past train_length: below the tested T = 8 */
    c.pos_settings.mp[EPAR_MECH_NTK_ROPE][1] = 5;
    c.pos_settings.mp[EPAR_MECH_INTERPOLATION][1] = 5;
    c.pos_settings.mp[EPAR_MECH_LOGN][0] = 3;
    c.pos_settings.mp[EPAR_MECH_APE_RAND][0] = 3;   /* 3 trained rows: T = 8 reads 5 random (fixed) rows past them */
    c.pos_settings.mp[EPAR_MECH_APE_HIER][0] = 3;   /* ... or their decomposition (3^2 = 9 = Tmax positions) */
    c.pos_settings.mp[EPAR_MECH_MULT_PE][1] = 0.3;
    c.pos_settings.mp[EPAR_MECH_FLOATER_LEARNED][1] = 3;   /* floater-learned.hidden: h of width 3 */
    c.pos_settings.mp[EPAR_MECH_FLOATER_LEARNED][2] = 5;   /* tau_t = t / 5 */
    c.pos_settings.mp[EPAR_MECH_SHAW][0] = 3;      /* k < T - 1: distances 4..7 share the clipped row */
    c.pos_settings.mp[EPAR_MECH_SHAW][1] = 0.3;
    c.pos_settings.mp[EPAR_MECH_TXL][0] = 0.3;
    c.pos_settings.mp[EPAR_MECH_DEBERTA][0] = 3;   /* deberta.span k < T - 1: both tables' row k shared by d >= 3 */
    c.pos_settings.mp[EPAR_MECH_DEBERTA][1] = 0.3;
    c.pos_settings.mp[EPAR_MECH_DEBERTA][2] = DEBERTA_ABS;
    c.pos_settings.mp[EPAR_MECH_PI_ATTENTION][0] = 2;   /* local band of 3 keys, pi-step 3 (§27's worked example) */
    c.pos_settings.mp[EPAR_MECH_PI_ATTENTION][1] = 3;
    c.pos_settings.mp[EPAR_MECH_GQA][0] = TINY_NH / 2;   /* 2 heads: MQA (one K/V head); 4 heads: 2 K/V heads */
    c.pos_settings.mp[EPAR_MECH_RANDOM_SPARSE][0] = 1;   /* band {i-1, i} and 2 random earlier keys per row */
    c.pos_settings.mp[EPAR_MECH_RANDOM_SPARSE][1] = 2;
    return c;
}

static void batch(int B, int T, int V, int *tok, int *tgt, float *mask)
{
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int)gsl_rng_uniform_int(R, V);
        tgt[i] = (int)gsl_rng_uniform_int(R, V);
        mask[i] = gsl_rng_uniform(R) < 0.7 ? 1.0f : 0.0f;
    }
    mask[0] = 1.0f;
}

/* (loss(p + h) - loss(p - h)) / 2h for the parameter *pp (restored) */
static double central_diff(struct epar_nn *m, float *pp, float h, const int *tok, const int *tgt, const float *mask,
                           int B, int T)
{
    float s = *pp;
    *pp = s + h;
    epar_nn_forward(m, tok, tgt, mask, B, T);
    double lp = m->loss;
    *pp = s - h;
    epar_nn_forward(m, tok, tgt, mask, B, T);
    double lm = m->loss;
    *pp = s;
    return (lp - lm) / (2.0 * h);
}

static void test_model_gradient(enum epar_mech_id id, int learn)
{
    struct epar_nn_config c = tiny(id, learn);
    struct epar_nn m;
    int st = epar_nn_alloc(&m, &c);
    check_int(st, EPAR_OK, "alloc %s", epar_nnpos_name(id));
    if (st) return;
    gsl_rng *r = epar_rng_alloc(7, 0, EPAR_RNG_WEIGHTS);
    epar_nn_init(&m, r);
    epar_rng_free(r);
    /* non-trivial LayerNorm parameters and biases */
    for (int k = 0; k < EPAR_NN_NTENSORS; k++)
        if (!epar_nn_decayed(k) && k != EPAR_NN_POS)
            for (size_t i = 0; i < m.sizes[k]; i++) m.params_mem[m.offsets[k] + i] += (float)gsl_ran_gaussian(R, 0.2);
    /* floater-learned: W2, b2 start at 0 (its table is floater's) and W1, b1, w would get no gradient: learned-looking
     * values for every parameter of h */
    for (size_t i = 0; id == EPAR_MECH_FLOATER_LEARNED && i < m.sizes[EPAR_NN_POS]; i++)
        m.params_mem[m.offsets[EPAR_NN_POS] + i] += (float)gsl_ran_gaussian(R, 0.5);
    int B = 3, T = 8;
    int tok[27], tgt[27];
    float mask[27];
    batch(B, T, c.V, tok, tgt, mask);
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    epar_nn_zero_grad(&m);
    epar_nn_backward(&m);
    float *grad = malloc(m.n_params * sizeof *grad);
    memcpy(grad, m.grads_mem, m.n_params * sizeof *grad);
    /* every tensor: its entry with the largest |gradient| and up to 15 random ones */
    int bad = 0, checked = 0;
    const float h = 1e-2f;
    for (int k = 0; k < EPAR_NN_NTENSORS; k++) {
        size_t n = m.sizes[k], off = m.offsets[k];
        if (!n) continue;
        for (int pick = 0; pick < 16 && pick < (int)n; pick++) {
            size_t i = 0;
            if (pick == 0) {
                for (size_t q = 1; q < n; q++)
                    if (fabsf(grad[off + q]) > fabsf(grad[off + i])) i = q;
            } else {
                i = gsl_rng_uniform_int(R, n);
            }
            /* Richardson's extrapolation of the central differences at h and h/2: the O(h^2) truncation cancels
             * (at h alone, one entry of global-local's dwte was 3% off: 0.697 at h, 0.7211 at h/64 = analytic) */
            float *pp = m.params_mem + off + i;
            double num = (4 * central_diff(&m, pp, h / 2, tok, tgt, mask, B, T) -
                          central_diff(&m, pp, h, tok, tgt, mask, B, T)) / 3;
            checked++;
            if (!close_enough(grad[off + i], num) && bad++ < 6)
                printf("  %s%s: d%s[%zu] analytic %g numeric %g\n", epar_nnpos_name(id), learn ? " (learned)" : "",
                       epar_nn_tensor_name(k), i, grad[off + i], num);
        }
    }
    check_int(bad, 0, "%s%s: model gradient against finite differences (%d entries)", epar_nnpos_name(id),
              learn ? " with --learn-posfx" : "", checked);
    /* directional derivatives along 3 random directions through every parameter */
    float *u = malloc(m.n_params * sizeof *u), *p0 = malloc(m.n_params * sizeof *p0);
    memcpy(p0, m.params_mem, m.n_params * sizeof *p0);
    for (int dir = 0; dir < 3; dir++) {
        randn(u, m.n_params, 1.0);
        double an = 0;
        for (size_t i = 0; i < m.n_params; i++) an += (double)grad[i] * u[i];
        /* the step has norm hd sqrt(n_params) ~ 0.015. At hd = 1e-3 the truncation error h^2 f'''/6 reached
         * 1.2% along one random direction with RoPE (a strongly curved direction); at 3e-4 it stays below
         * 0.15% in every case, and fp32 rounding of the loss still contributes < 0.1% (checked at 1e-4) */
        const float hd = 3e-4f;
        for (size_t i = 0; i < m.n_params; i++) m.params_mem[i] = p0[i] + hd * u[i];
        epar_nn_forward(&m, tok, tgt, mask, B, T);
        double lp = m.loss;
        for (size_t i = 0; i < m.n_params; i++) m.params_mem[i] = p0[i] - hd * u[i];
        epar_nn_forward(&m, tok, tgt, mask, B, T);
        double lm = m.loss;
        double num = (lp - lm) / (2 * hd);
        /* 1 % of the derivative, plus what the float32 losses' rounding (a few ulps of the loss) leaves in the
         * difference quotient: along a direction where the loss hardly moves (a fixed pattern's q, k carry no
         * gradient) that rounding, not the gradient, sets the agreement */
        double noise = 8 * FLT_EPSILON * fabs(lp) / (2 * hd);
        check_abs(an, num, 1e-2 * fabs(num) + noise, "%s%s: directional derivative %d", epar_nnpos_name(id),
                  learn ? " (learned)" : "", dir);
    }
    memcpy(m.params_mem, p0, m.n_params * sizeof *p0);
    free(u); free(p0); free(grad);
    epar_nn_free(&m);
}

/* GQA's parameters and sharing: the projection has C + 2 G hs rows (the parameter count the benchmark equalises),
 * the query heads of a group see the same k and v (copies of one K/V head), and G = NH is multi-head attention's
 * layout and count; a G that does not divide the heads is refused naming it */
static void test_gqa_shape(void)
{
    struct epar_nn_config c = tiny(EPAR_MECH_GQA, 0), mha = tiny(EPAR_MECH_NONE, 0);
    int C = c.C, NH = c.NH, hs = C / NH, G = epar_nn_kv_heads(&c);
    check_int(G, NH / 2, "gqa: %d K/V heads for %d query heads", G, NH);
    struct epar_nn m, m0;
    if (epar_nn_alloc(&m, &c) || epar_nn_alloc(&m0, &mha)) { check_true(0, "gqa shape: alloc"); return; }
    check_int((long)(m0.n_params - m.n_params), (long)c.NL * 2 * (NH - G) * hs * (C + 1),
              "gqa: %zu parameters, multi-head %zu: the K/V projections of NH - G heads fewer", m.n_params, m0.n_params);
    gsl_rng *r = epar_rng_alloc(5, 0, EPAR_RNG_WEIGHTS);
    epar_nn_init(&m, r);
    epar_rng_free(r);
    int tok[8];
    for (int t = 0; t < 8; t++) tok[t] = (int)gsl_rng_uniform_int(R, c.V);
    epar_nn_forward(&m, tok, NULL, NULL, 1, 8);
    int same = 1, differ = 0;
    for (int t = 0; t < 8; t++)
        for (int part = 1; part < 3; part++)
            for (int h = 0; h < NH; h++)
                for (int u = 0; u < hs; u++) {
                    const float *row = m.a.qkv + (size_t)t * 3 * C + part * C;
                    int lead = epar_mech_gqa_group(h, NH, G) * (NH / G);
                    same &= row[h * hs + u] == row[lead * hs + u];
                    differ |= epar_mech_gqa_group(h, NH, G) > 0 && row[h * hs + u] != row[u];
                }
    check_true(same && differ, "gqa: the heads of a group read one k and v, other groups another");
    epar_nn_free(&m);
    c.pos_settings.mp[EPAR_MECH_GQA][0] = NH;
    check_int(epar_nn_qkv_width(&c), 3 * C, "gqa with groups = heads: multi-head attention's projection");
    c.pos_settings.mp[EPAR_MECH_GQA][0] = 3;
    check_int(epar_nn_alloc(&m, &c), EPAR_EINVAL, "gqa.groups 3 with 4 heads is refused");
    check_true(strstr(epar_err_message(), "'3'") != NULL, "... naming the value: %s", epar_err_message());
    epar_nn_free(&m0);
}

/* float64 reference: layer 0's attention of the trained model's forward against lib/mech (what `epar compare`
 * computes in double) for the same q, k weights and the same LayerNorm output. The catalogue's parameters are
 * the training's: default settings (alibi max_bias 8, rope base 10000, EPAR 1, 1, 0.5 at L = T). Input mechanisms
 * (their table is inside the LayerNorm input) and T5 (learned table) are checked table by table in test_nnpos. */
static void test_reference_fp64(enum epar_mech_id id)
{
    enum epar_nnpos_hook hk = epar_nnpos_row(id)->hook;
    if (hk == EPAR_NNPOS_H_INPUT || id == EPAR_MECH_T5) return;
    struct epar_nn_config c = tiny(id, 0);
    struct epar_posfx fx = c.pos_settings.fx;
    epar_nnpos_settings_default(&c.pos_settings);
    c.pos_settings.fx = fx;
    memcpy(c.pos_settings.mp, tiny(id, 0).pos_settings.mp, sizeof c.pos_settings.mp);
    /* Performer: compare's at eps = 0 is FAVOR+'s kernel exactly, what training computes (its stabilisers need no
     * eps; compare adds eps times the largest feature over every key) */
    c.pos_settings.mp[EPAR_MECH_PERFORMER][3] = 0;
    int T = 8, C = c.C, NH = c.NH;
    struct epar_nn m;
    if (epar_nn_alloc(&m, &c)) { check_true(0, "fp64 reference: alloc %s", epar_nnpos_name(id)); return; }
    gsl_rng *r = epar_rng_alloc(11, 0, EPAR_RNG_WEIGHTS);
    epar_nn_init(&m, r);
    epar_rng_free(r);
    /* pi-attention: compare's gate is the untrained one, sigmoid(0) = pi-attention.gate: the gate's w = 0 (b starts
     * at logit(gate)) */
    for (int k = 0; id == EPAR_MECH_PI_ATTENTION && k < c.NL * NH; k++)
        memset(m.p.pos + (size_t)k * m.pos.ngate, 0, (size_t)(m.pos.ngate - 1) * sizeof *m.p.pos);
    /* a file mechanism that reads its learned pieces into compare's form (lib/mechs/): those pieces moved off their
     * initial values first, so the test compares a trained form, not two copies of the catalogue's defaults */
    const struct epar_mech_def *fd = epar_mech_file(id);
    for (size_t k = 0; fd && fd->from_trained && k < m.sizes[EPAR_NN_POS]; k++) m.p.pos[k] += (float)gsl_ran_gaussian(R, 0.3);
    int tok[9];
    for (int t = 0; t < T; t++) tok[t] = (int)gsl_rng_uniform_int(R, c.V);
    epar_nn_forward(&m, tok, NULL, NULL, 1, T);
    struct epar_layer layer;
    epar_attn_layer_alloc(&layer, T, C, 0);
    /* row of the projection giving output o of k (v): GQA's K/V head of o's query head (compare's mean over the
     * group's K slices, which are then all this row, is the same) */
    int G = epar_nn_kv_heads(&c), hs = C / NH;
    for (int o = 0; o < C; o++) {
        int ko = C + epar_mech_gqa_group(o / hs, NH, G) * hs + o % hs, vo = ko + G * hs;
        for (int k = 0; k < C; k++) {
            layer.Wq[o * C + k] = m.p.qkvw[(size_t)o * C + k];
            layer.Wk[o * C + k] = m.p.qkvw[(size_t)ko * C + k];
            layer.Wv[o * C + k] = m.p.qkvw[(size_t)vo * C + k];
        }
        layer.bq[o] = m.p.qkvb[o];
        layer.bk[o] = m.p.qkvb[ko];
        layer.bv[o] = m.p.qkvb[vo];
    }
    double X[8 * 8], A[8 * 8 * 8], prm[EPAR_MECH_MAX_PARAMS];   /* up to 8 heads (fixed-mix's 7 fixed + 1 learned) */
    for (int t = 0; t < T * C; t++) X[t] = m.a.ln1[t];
    memcpy(prm, c.pos_settings.mp[id], sizeof prm);
    if (id == EPAR_MECH_EPAR_BASIC || id == EPAR_MECH_EPAR_ENHANCED) {
        prm[0] = fx.alpha;
        prm[1] = fx.beta;
        if (id == EPAR_MECH_EPAR_ENHANCED) prm[2] = fx.gamma;
    }
    struct epar_mech mm;
    struct epar_attn_ws ws;
    /* fixed-mix, learnable-only (no compare form): the learned head is compare's none on the same weights, the others
     * lib/mech's fp64 pattern (epar_mech_fixed_pattern) or 0 (removed), filled in below */
    int mix = epar_mech_trained_only(id);
    /* DeBERTa: compare's 2k' table reaches the trained tables at k' = k + 1 (lib/mechs/relative.c, from_trained) */
    if (id == EPAR_MECH_DEBERTA) prm[0] += 1;
    int st = epar_mech_init(&mm, mix ? EPAR_MECH_NONE : id, prm, T, C, NH, 1, 42);
    if (!st && fd && fd->from_trained) st = fd->from_trained(&mm, &m.pos, 0);
    check_int(st, EPAR_OK, "fp64 reference: compare's %s", epar_nnpos_name(id));
    if (!st && id == EPAR_MECH_ORTHOGONAL_QK)   /* compare's frozen W_Q^h, W_K^h (D, dk): the model's layer-0 draws */
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < C; i++)
                for (int o = 0; o < hs; o++) {
                    mm.Wq[((size_t)h * C + i) * hs + o] = m.p.qkvw[(size_t)(h * hs + o) * C + i];
                    mm.Wk[((size_t)h * C + i) * hs + o] = m.p.qkvw[(size_t)(C + h * hs + o) * C + i];
                }
    if (!st && !epar_attn_ws_alloc(&ws, T, C)) {
        epar_mech_forward(&mm, &layer, X, A, &ws, NULL);
        for (int h = 0; mix && h < (id == EPAR_MECH_FIXED_ONLY ? NH : NH - 1); h++) {
            double *Ah = A + (size_t)h * T * T;
            if (id != EPAR_MECH_LEARNABLE_ONLY) epar_mech_fixed_pattern(epar_nnpos_mix_pattern(h), T, Ah);
            else memset(Ah, 0, (size_t)T * T * sizeof *Ah);
        }
        double e = 0;
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++)
                for (int j = 0; j <= i; j++)
                    e = fmax(e, fabs(A[((size_t)h * T + i) * T + j] - m.a.att[((size_t)h * T + i) * T + j]));
        check_abs(e, 0, 2e-6, "%s: trained attention (fp32) = compare's fp64 attention for the same weights, layer 0",
                  epar_nnpos_name(id));
        epar_attn_ws_free(&ws);
        epar_mech_free(&mm);
    }
    epar_attn_layer_free(&layer);
    epar_nn_free(&m);
}

/* Transformer-XL's own parameters: every entry of u and v of both layers (the random picks of test_model_gradient may
 * miss them: they are 2 C of each layer's C^2 + 2 C) against finite differences; and docs/MECHANISMS.md §10's
 * regression: with W_R = u = v = 0 the model is `none` (same weights, same attention) */
static void test_txl(void)
{
    struct epar_nn_config c = tiny(EPAR_MECH_TXL, 0), c0 = tiny(EPAR_MECH_NONE, 0);
    struct epar_nn m, m0;
    if (epar_nn_alloc(&m, &c) || epar_nn_alloc(&m0, &c0)) { check_true(0, "transformer-xl: alloc"); return; }
    gsl_rng *r = epar_rng_alloc(19, 0, EPAR_RNG_WEIGHTS);
    epar_nn_init(&m, r);
    epar_rng_free(r);
    int B = 3, T = 8, C = c.C, tok[27], tgt[27];
    float mask[27];
    batch(B, T, c.V, tok, tgt, mask);
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    epar_nn_zero_grad(&m);
    epar_nn_backward(&m);
    size_t per = (size_t)C * C + 2 * (size_t)C;
    check_int((long)m.sizes[EPAR_NN_POS], (long)(c.NL * per), "transformer-xl learns W_R (C, C), u, v (C) per layer");
    int bad = 0, n = 0;
    for (int l = 0; l < c.NL; l++)
        for (int q = 0; q < 2 * C; q++) {
            size_t i = l * per + (size_t)C * C + q;
            float *pp = m.p.pos + i;
            double num = (4 * central_diff(&m, pp, 5e-3f, tok, tgt, mask, B, T) -
                          central_diff(&m, pp, 1e-2f, tok, tgt, mask, B, T)) / 3;
            n++;
            if (!close_enough(m.g.pos[i], num) && bad++ < 4)
                printf("  transformer-xl: d%s[%d][%d] analytic %g numeric %g\n", q < C ? "u" : "v", l, q % C,
                       m.g.pos[i], num);
        }
    check_int(bad, 0, "transformer-xl: every entry of u and v against finite differences (%d)", n);
    r = epar_rng_alloc(19, 0, EPAR_RNG_WEIGHTS);
    epar_nn_init(&m0, r);
    epar_rng_free(r);
    memset(m.p.pos, 0, m.sizes[EPAR_NN_POS] * sizeof *m.p.pos);
    check_true(m0.offsets[EPAR_NN_POS] == m.offsets[EPAR_NN_POS] &&
               !memcmp(m0.params_mem, m.params_mem, m.offsets[EPAR_NN_POS] * sizeof(float)),
               "transformer-xl and none share every other weight for one seed");
    epar_nn_forward(&m, tok, NULL, NULL, B, T);
    epar_nn_forward(&m0, tok, NULL, NULL, B, T);
    double e = 0;
    for (int l = 0; l < c.NL; l++)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < c.NH; h++)
                for (int i = 0; i < T; i++)
                    for (int j = 0; j <= i; j++) {
                        size_t k = ((((size_t)l * B + b) * c.NH + h) * T + i) * T + j;
                        e = fmax(e, fabs(m.a.att[k] - m0.a.att[k]));
                    }
    check_abs(e, 0, 0, "transformer-xl with W_R = u = v = 0 attends as none (every layer, head and pair)");
    epar_nn_free(&m);
    epar_nn_free(&m0);
}

/* Performer at the scale of trained q, k: the q and k weights multiplied by `gain` (the exponents of FAVOR+'s features
 * then spread over tens of nats, as after 40-60 steps of recall). Every row keeps FAVOR+'s weights: against FAVOR+
 * computed here in double in log space from the same q, k and Omega, A_ij = sum_f exp(a_if + b_jf - M_i) / sum over
 * j' <= i, a_if = w_f . q' - |q'|^2 / 2 (b for k), q' = q hs^(-1/4), M_i the largest exponent of row i (the default
 * performer.eps, compare's stabiliser, is not added in training). Before the per-row stabilisers the keys' features
 * were divided by the largest over every key of the sequence and the denominators of most rows fell below eps. */
static void test_performer_scale(double gain)
{
    struct epar_nn_config c = tiny(EPAR_MECH_PERFORMER, 0);
    int T = 8, C = c.C, NH = c.NH, hs = C / NH;
    struct epar_nn m;
    if (epar_nn_alloc(&m, &c)) { check_true(0, "performer scale: alloc"); return; }
    int nf = m.pos.nf;
    gsl_rng *r = epar_rng_alloc(13, 0, EPAR_RNG_WEIGHTS);
    epar_nn_init(&m, r);
    epar_rng_free(r);
    for (size_t t = 0; t < (size_t)2 * C * C; t++) m.p.qkvw[t] *= (float)gain;   /* q and k rows of layer 0 */
    int tok[9];
    for (int t = 0; t < T; t++) tok[t] = (int)gsl_rng_uniform_int(R, c.V);
    epar_nn_forward(&m, tok, NULL, NULL, 1, T);
    double *ea = malloc((size_t)2 * T * nf * sizeof *ea), *eb = ea + (size_t)T * nf, e = 0, spread = 0;
    for (int h = 0; h < NH; h++) {
        for (int t = 0; t < T; t++)
            for (int part = 0; part < 2; part++) {
                const float *x = m.a.qkv + (size_t)t * 3 * C + part * C + h * hs;
                double s = pow(hs, -0.25), nx = 0;
                for (int u = 0; u < hs; u++) nx += 0.5 * s * s * x[u] * x[u];
                for (int f = 0; f < nf; f++) {
                    double w = 0;
                    for (int u = 0; u < hs; u++) w += s * m.pos.omega[(size_t)f * hs + u] * x[u];
                    (part ? eb : ea)[(size_t)t * nf + f] = w - nx;
                }
            }
        for (int i = 0; i < T; i++) {
            double M = -INFINITY, lo = INFINITY, num[8], den = 0;
            for (int j = 0; j <= i; j++)
                for (int f = 0; f < nf; f++) {
                    double z = ea[(size_t)i * nf + f] + eb[(size_t)j * nf + f];
                    M = fmax(M, z);
                    lo = fmin(lo, z);
                }
            spread = fmax(spread, M - lo);
            for (int j = 0; j <= i; j++) {
                num[j] = 0;
                for (int f = 0; f < nf; f++) num[j] += exp(ea[(size_t)i * nf + f] + eb[(size_t)j * nf + f] - M);
                den += num[j];
            }
            const float *a = m.a.att + ((size_t)h * T + i) * T;
            for (int j = 0; j <= i; j++) e = fmax(e, fabs(num[j] / den - a[j]));
        }
    }
    /* fp32 exponents of tens of nats carry tens of ulp of relative error into the weights */
    check_abs(e, 0, 1e-4, "performer, q and k weights x%g (exponents spread over %.0f nats): trained attention = "
              "FAVOR+ in fp64", gain, spread);
    free(ea);
    epar_nn_free(&m);
}

/* causal: changing the last token changes no earlier position's prediction (pi-attention's gate reads the means of
 * q, k, v over the positions seen so far; Performer's key stabiliser is the maximum over the keys a row sees) */
/* DeBERTa's EMD (deberta.absolute = 1): the absolute table E (Tmax, C) ends the position parameters; every entry of it
 * against finite differences (rows >= T: gradient 0); with E = 0 the model is deberta without EMD on the same weights;
 * with E != 0 the first position's output moves (the table reaches the last layer) */
static void test_causal(enum epar_mech_id id);

static void test_deberta_emd(void)
{
    DEBERTA_ABS = 1;
    struct epar_nn_config c = tiny(EPAR_MECH_DEBERTA, 0);
    DEBERTA_ABS = 0;
    struct epar_nn_config c0 = tiny(EPAR_MECH_DEBERTA, 0);
    struct epar_nn m, m0;
    if (epar_nn_alloc(&m, &c) || epar_nn_alloc(&m0, &c0)) { check_true(0, "deberta EMD: alloc"); return; }
    size_t ne = (size_t)c.Tmax * c.C, np = m.sizes[EPAR_NN_POS];
    check_int((long)(np - m0.sizes[EPAR_NN_POS]), (long)ne, "deberta EMD: Tmax x C more position parameters");
    gsl_rng *r = epar_rng_alloc(7, 0, EPAR_RNG_WEIGHTS);
    epar_nn_init(&m, r);
    epar_rng_free(r);
    for (int k = 0; k < EPAR_NN_NTENSORS; k++)
        memcpy(m0.params_mem + m0.offsets[k], m.params_mem + m.offsets[k], m0.sizes[k] * sizeof(float));
    float *E = m.params_mem + m.offsets[EPAR_NN_POS] + np - ne;
    int B = 3, T = 8, tok[24], tgt[24];
    float mask[24];
    batch(B, T, c.V, tok, tgt, mask);
    float *keep = malloc(ne * sizeof *keep);
    memcpy(keep, E, ne * sizeof *keep);
    memset(E, 0, ne * sizeof *E);
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    epar_nn_forward(&m0, tok, tgt, mask, B, T);
    double e = 0;
    for (size_t i = 0; i < (size_t)B * T * c.V; i++) e = fmax(e, fabs(m.a.probs[i] - m0.a.probs[i]));
    check_abs(e, 0, 0, "deberta EMD: E = 0 is deberta without EMD (same weights)");
    memcpy(E, keep, ne * sizeof *keep);
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    e = 0;
    for (int v = 0; v < c.V; v++) e = fmax(e, fabs(m.a.probs[v] - m0.a.probs[v]));
    check_true(e > 1e-4, "deberta EMD: the table moves position 0's prediction (by %g)", e);
    epar_nn_zero_grad(&m);
    epar_nn_backward(&m);
    const float *gE = m.grads_mem + m.offsets[EPAR_NN_POS] + np - ne;
    int bad = 0;
    for (size_t i = 0; i < ne; i++) {
        double num = (4 * central_diff(&m, E + i, 5e-3f, tok, tgt, mask, B, T) -
                      central_diff(&m, E + i, 1e-2f, tok, tgt, mask, B, T)) / 3;
        if (i >= (size_t)T * c.C ? gE[i] != 0.0f : !close_enough(gE[i], num))
            if (bad++ < 4) printf("  deberta EMD: dE[%zu] analytic %g numeric %g\n", i, gE[i], num);
    }
    check_int(bad, 0, "deberta EMD: every entry of E's gradient against finite differences (%zu)", ne);
    free(keep);
    epar_nn_free(&m);
    epar_nn_free(&m0);
    DEBERTA_ABS = 1;   /* the whole-model checks with the EMD on */
    test_model_gradient(EPAR_MECH_DEBERTA, 0);
    test_causal(EPAR_MECH_DEBERTA);
    DEBERTA_ABS = 0;
}

static void test_causal(enum epar_mech_id id)
{
    struct epar_nn_config c = tiny(id, 0);
    struct epar_nn m;
    if (epar_nn_alloc(&m, &c)) { check_true(0, "causal: alloc %s", epar_nnpos_name(id)); return; }
    gsl_rng *r = epar_rng_alloc(17, 0, EPAR_RNG_WEIGHTS);
    epar_nn_init(&m, r);
    epar_rng_free(r);
    int T = 8, tok[8];
    for (int t = 0; t < T; t++) tok[t] = (int)gsl_rng_uniform_int(R, c.V);
    epar_nn_forward(&m, tok, NULL, NULL, 1, T);
    float *p0 = malloc((size_t)T * c.V * sizeof *p0);
    memcpy(p0, m.a.probs, (size_t)T * c.V * sizeof *p0);
    tok[T - 1] = (tok[T - 1] + 1 + (int)gsl_rng_uniform_int(R, c.V - 1)) % c.V;
    epar_nn_forward(&m, tok, NULL, NULL, 1, T);
    double e = 0, last = 0;
    for (int t = 0; t < T; t++)
        for (int v = 0; v < c.V; v++) {
            double d = fabs(p0[(size_t)t * c.V + v] - m.a.probs[(size_t)t * c.V + v]);
            if (t < T - 1) e = fmax(e, d);
            else last = fmax(last, d);
        }
    check_true(e <= 1e-6 && last > 0, "%s: causal (the last token moves positions < T-1 by %g, the last by %g)",
               epar_nnpos_name(id), e, last);
    free(p0);
    epar_nn_free(&m);
}

/* kernel attention's vector forms (FAVOR+'s features and their gradient, the key weights: libmvec exps, 8-lane sums)
 * on a whole model: the AVX2 path against the portable one to rounding, and the AVX-512 exps against the AVX2 ones bit
 * for bit; nf features per head (Performer; a multiple of 16 and ragged tails) */
static void test_kernel_paths(enum epar_mech_id id, int nf)
{
    struct epar_nn_config c = tiny(id, 0);
    if (nf) c.pos_settings.mp[EPAR_MECH_PERFORMER][0] = nf;
    nf = id == EPAR_MECH_PERFORMER ? (int)c.pos_settings.mp[id][0] : c.C / c.NH;
    struct epar_nn m;
    if (epar_nn_alloc(&m, &c)) { check_true(0, "kernel paths: alloc %s", epar_nnpos_name(id)); return; }
    gsl_rng *r = epar_rng_alloc(19, 0, EPAR_RNG_WEIGHTS);
    epar_nn_init(&m, r);
    epar_rng_free(r);
    int B = 3, T = 8, tok[24], tgt[24];
    float mask[24];
    batch(B, T, c.V, tok, tgt, mask);
    float *g[3];
    double loss[3];
    int wide = 0;
    for (int p = 0; p < 3; p++) {   /* 0: the CPU's forms, 1: AVX2 without AVX-512, 2: portable C */
        int on = epar_nn_set_no_avx512(p == 1);
        if (p == 0) wide = on;
        epar_nn_set_portable(p == 2);
        epar_nn_forward(&m, tok, tgt, mask, B, T);
        epar_nn_zero_grad(&m);
        epar_nn_backward(&m);
        loss[p] = m.loss;
        g[p] = malloc(m.n_params * sizeof(float));
        memcpy(g[p], m.grads_mem, m.n_params * sizeof(float));
    }
    epar_nn_set_no_avx512(0);
    epar_nn_set_portable(0);
    double e = 0, sc = 0;
    for (size_t i = 0; i < m.n_params; i++) {
        e = fmax(e, fabs(g[0][i] - g[2][i]));
        sc = fmax(sc, fabs(g[2][i]));
    }
    check_true(loss[0] == loss[1] && !memcmp(g[0], g[1], m.n_params * sizeof(float)),
               "%s (%d features): 16-lane and 8-lane exps, the same loss and gradient bits%s", epar_nnpos_name(id), nf,
               wide ? "" : " (no AVX-512 here: both AVX2)");
    check_abs(loss[0], loss[2], 1e-6 * fabs(loss[2]), "%s (%d features): loss, AVX2 path = portable path to 1e-6",
              epar_nnpos_name(id), nf);
    check_abs(e / sc, 0, 2e-6, "%s (%d features): gradient, AVX2 path = portable path to 2e-6 of its largest entry%s",
              epar_nnpos_name(id), nf, epar_nn_simd() ? "" : " (no AVX2 here)");
    for (int p = 0; p < 3; p++) free(g[p]);
    epar_nn_free(&m);
}

/* H(y | x) in nats, mean over the n pairs (x, y) in [0, V)^2 */
static double cond_entropy(const int *x, const int *y, int n, int V)
{
    double h = 0;
    for (int v = 0; v < V; v++) {
        int cnt[64] = {0}, nv = 0;
        for (int i = 0; i < n; i++)
            if (x[i] == v) { cnt[y[i]]++; nv++; }
        for (int u = 0; u < V; u++)
            if (cnt[u]) h -= cnt[u] * log((double)cnt[u] / nv);
    }
    return h / n;
}

/* a tiny model fits one fixed batch of random tokens: the loss falls from ln V to near zero */
/* orthogonal-qk: each layer's q and k rows of one head are orthonormal (W_Q^h's columns), biases 0; the frozen ranges
 * are the q, k rows and biases, and the segments cover every other parameter exactly once */
static void test_frozen_qk(void)
{
    struct epar_nn_config c = tiny(EPAR_MECH_ORTHOGONAL_QK, 0);
    struct epar_nn m;
    if (epar_nn_alloc(&m, &c)) { check_true(0, "frozen qk: alloc"); return; }
    gsl_rng *r = epar_rng_alloc(5, 0, EPAR_RNG_WEIGHTS);
    check_int(epar_nn_init(&m, r), EPAR_OK, "orthogonal-qk: init");
    int C = c.C, hs = C / c.NH, W = epar_nn_qkv_width(&c);
    double worst = 0;
    for (int l = 0; l < c.NL; l++)
        for (int blk = 0; blk < 2; blk++)
            for (int h = 0; h < c.NH; h++)
                for (int a = 0; a < hs; a++)
                    for (int b = 0; b < hs; b++) {
                        const float *ra = m.p.qkvw + ((size_t)l * W + blk * C + h * hs + a) * C,
                                    *rb = m.p.qkvw + ((size_t)l * W + blk * C + h * hs + b) * C;
                        double d = 0;
                        for (int i = 0; i < C; i++) d += (double)ra[i] * rb[i];
                        worst = fmax(worst, fabs(d - (a == b)));
                    }
    check_abs(worst, 0, 1e-6, "orthogonal-qk: every head's q and k rows orthonormal (worst |<r_a, r_b> - [a = b]|)");
    size_t off[8], size[8];
    int nf = epar_nn_frozen(&m, off, size, 8);
    check_int(nf, 2 * c.NL, "frozen ranges: q, k rows and biases per layer");
    check_int((long)size[0], 2L * C * C, "a layer's frozen rows: 2 C x C");
    check_int((long)size[c.NL], 2L * C, "a layer's frozen biases: 2 C");
    struct epar_optim_segment seg[EPAR_NN_NTENSORS + 8];
    int ns = epar_nn_segments(&m, seg, EPAR_NN_NTENSORS + 8);
    size_t covered = 0, frozen = 0;
    for (int k = 0; k < ns; k++) covered += seg[k].size;
    for (int f = 0; f < nf; f++) frozen += size[f];
    check_int((long)(covered + frozen), (long)m.n_params, "segments + frozen ranges = every parameter");
    for (int k = 0; k + 1 < ns; k++) check_true(seg[k].offset + seg[k].size <= seg[k + 1].offset, "segments in order");
    epar_rng_free(r);
    epar_nn_free(&m);
    /* none: no frozen range, one segment per tensor */
    c = tiny(EPAR_MECH_NONE, 0);
    if (epar_nn_alloc(&m, &c)) return;
    check_int(epar_nn_frozen(&m, off, size, 8), 0, "none: nothing frozen");
    epar_nn_free(&m);
}

/* alibi-learned (F15): untrained it is alibi (the same weights draw, the same loss), its parameters are the NH slopes
 * at ALiBi's values, the bias table follows the slopes it is given (-m_h d), a slope's gradient is the finite
 * difference's, and the fitted slopes leave ALiBi's */
static void test_alibi_learned(void)
{
    struct epar_nn_config c = tiny(EPAR_MECH_ALIBI_LEARNED, 0), ca = tiny(EPAR_MECH_ALIBI, 0);
    struct epar_nn m, a;
    if (epar_nn_alloc(&m, &c)) { check_true(0, "alibi-learned: alloc"); return; }
    if (epar_nn_alloc(&a, &ca)) { check_true(0, "alibi: alloc"); epar_nn_free(&m); return; }
    gsl_rng *r = epar_rng_alloc(9, 0, EPAR_RNG_WEIGHTS), *ra = epar_rng_alloc(9, 0, EPAR_RNG_WEIGHTS);
    epar_nn_init(&m, r);
    epar_nn_init(&a, ra);
    check_int((long)m.sizes[EPAR_NN_POS], c.NH, "alibi-learned: one learned slope per head");
    check_int((long)(m.n_params - a.n_params), c.NH, "alibi-learned: alibi's parameters and the slopes");
    double want[8];
    epar_mech_alibi_slopes(c.NH, 8, want);
    for (int h = 0; h < c.NH; h++) check_rel(m.pos.theta[h], want[h], 1e-6, "alibi-learned: initial slope %d is ALiBi's", h);
    int B = 2, T = 8, tok[16], tgt[16];
    float mask[16];
    batch(B, T, c.V, tok, tgt, mask);
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    epar_nn_forward(&a, tok, tgt, mask, B, T);
    check_abs(m.loss, a.loss, 0, "alibi-learned untrained = alibi (same draw, same loss)");
    m.pos.theta[0] = 0.7f;
    m.pos.theta[1] = -0.2f;
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    const float *bias = epar_nnpos_bias(&m.pos, 0);
    double worst = 0;
    for (int h = 0; h < 2; h++)
        for (int d = 0; d < T; d++) worst = fmax(worst, fabs(bias[(size_t)h * c.Tmax + d] - -(h ? -0.2 : 0.7) * d));
    check_abs(worst, 0, 1e-6, "alibi-learned: the bias is -m_h d for the slopes it holds");
    check_rel(m.pos.slopes[0], 0.7, 1e-6, "alibi-learned: the slope inspect reads is the learned one");
    epar_nn_zero_grad(&m);
    epar_nn_backward(&m);
    for (int h = 0; h < 2; h++) {
        double an = m.pos.dtheta[h];
        double num = (4 * central_diff(&m, &m.pos.theta[h], 5e-3f, tok, tgt, mask, B, T) -
                      central_diff(&m, &m.pos.theta[h], 1e-2f, tok, tgt, mask, B, T)) / 3;
        check_true(fabs(an) > 1e-4, "alibi-learned: slope %d has a gradient (%g)", h, an);
        check_abs(an, num, 1e-2 * fabs(num) + 1e-5, "alibi-learned: dL/dm_%d = finite difference", h);
    }
    epar_rng_free(r);
    epar_rng_free(ra);
    epar_nn_free(&m);
    epar_nn_free(&a);
}

/* learned-ape-rand / -hier (F5, F6): with train_length = the model's length they are learned-ape (same draws, same
 * loss); past train_length hier's row p = i n + j is alpha u_i + (1 - alpha) u_j, u_k = (E_k - alpha E_0) / (1 - alpha)
 * (Su's decomposition, written out here), and rand's rows are the same whatever the table's length */
static void test_ape_ext(void)
{
    for (int v = 0; v < 2; v++) {
        enum epar_mech_id id = v ? EPAR_MECH_APE_HIER : EPAR_MECH_APE_RAND;
        struct epar_nn_config c = tiny(id, 0), ca = tiny(EPAR_MECH_LEARNED_APE, 0);
        c.pos_settings.mp[id][0] = c.Tmax;
        struct epar_nn m, a;
        if (epar_nn_alloc(&m, &c)) { check_true(0, "%s: alloc", epar_nnpos_name(id)); return; }
        if (epar_nn_alloc(&a, &ca)) { epar_nn_free(&m); return; }
        gsl_rng *r = epar_rng_alloc(11, 0, EPAR_RNG_WEIGHTS), *ra = epar_rng_alloc(11, 0, EPAR_RNG_WEIGHTS);
        epar_nn_init(&m, r);
        epar_nn_init(&a, ra);
        epar_rng_free(r);
        epar_rng_free(ra);
        check_int((long)m.n_params, (long)a.n_params, "%s at train_length = Tmax: learned-ape's parameter count", epar_nnpos_name(id));
        int B = 2, T = 8, tok[16], tgt[16];
        float mask[16];
        batch(B, T, c.V, tok, tgt, mask);
        epar_nn_forward(&m, tok, tgt, mask, B, T);
        epar_nn_forward(&a, tok, tgt, mask, B, T);
        check_abs(m.loss, a.loss, 0, "%s = learned-ape within the trained rows (same draws, same loss)", epar_nnpos_name(id));
        epar_nn_free(&m);
        epar_nn_free(&a);
    }
    /* hier past 3 trained rows, alpha 0.4 */
    struct epar_nnpos_settings s;
    epar_nnpos_settings_default(&s);
    s.mp[EPAR_MECH_APE_HIER][0] = 3;
    s.init_sd = 0.5;
    struct epar_nnpos p;
    if (epar_nnpos_alloc(&p, EPAR_MECH_APE_HIER, &s, 9, 4, 2, 1)) { check_true(0, "hier alloc"); return; }
    float theta[12];
    for (int k = 0; k < 12; k++) theta[k] = (float)gsl_ran_gaussian(R, 1.0);
    p.theta = theta;
    epar_nnpos_prepare(&p, 9);
    double worst = 0, al = 0.4;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int cc = 0; cc < 4; cc++) {
                double ui = (theta[i * 4 + cc] - al * theta[cc]) / (1 - al), uj = (theta[j * 4 + cc] - al * theta[cc]) / (1 - al);
                worst = fmax(worst, fabs(p.ext[(i * 3 + j) * 4 + cc] - (al * ui + (1 - al) * uj)));
            }
    check_abs(worst, 0, 1e-5, "learned-ape-hier: row i n + j = alpha u_i + (1 - alpha) u_j (rows < n: the table's)");
    p.theta = NULL;
    epar_nnpos_free(&p);
    /* rand: row 5 past 3 trained rows, in tables of 9 and 12 rows */
    struct epar_nnpos q9, q12;
    s.mp[EPAR_MECH_APE_RAND][0] = 3;
    s.seed = 42;
    if (epar_nnpos_alloc(&q9, EPAR_MECH_APE_RAND, &s, 9, 4, 2, 1)) return;
    if (epar_nnpos_alloc(&q12, EPAR_MECH_APE_RAND, &s, 12, 4, 2, 1)) { epar_nnpos_free(&q9); return; }
    check_true(!memcmp(q9.ext + 5 * 4, q12.ext + 5 * 4, 4 * sizeof(float)) && q9.ext[20] != 0,
               "learned-ape-rand: a random row is the same whatever the table's length");
    epar_nnpos_free(&q9);
    epar_nnpos_free(&q12);
    /* a fine-tuning arm's table (train_length 9: every row a parameter) grown from 3 trained rows starts as the 3-row
     * model reads its 9 positions; another mechanism is refused */
    for (int v = 0; v < 2; v++) {
        enum epar_mech_id id = v ? EPAR_MECH_APE_HIER : EPAR_MECH_APE_RAND;
        struct epar_nnpos sh, lg;
        struct epar_nnpos_settings s2 = s;
        s2.mp[id][0] = 3;
        if (epar_nnpos_alloc(&sh, id, &s2, 9, 4, 2, 1)) return;
        s2.mp[id][0] = 9;
        if (epar_nnpos_alloc(&lg, id, &s2, 9, 4, 2, 1)) { epar_nnpos_free(&sh); return; }
        float th3[12], th9[36];
        for (int k = 0; k < 12; k++) th3[k] = (float)gsl_ran_gaussian(R, 1.0);
        sh.theta = th3;
        lg.theta = th9;
        epar_nnpos_prepare(&sh, 9);
        check_int(epar_nnpos_ape_grow(&lg, th3, 3), EPAR_OK, "%s: grow 3 -> 9 rows", epar_nnpos_name(id));
        epar_nnpos_prepare(&lg, 9);
        double dev = 0;
        for (int k = 0; k < 36; k++) dev = fmax(dev, fabs(lg.ext[k] - sh.ext[k]));
        check_abs(dev, 0, 1e-6, "%s: the grown table reads as the trained one did", epar_nnpos_name(id));
        sh.theta = lg.theta = NULL;
        epar_nnpos_free(&sh);
        epar_nnpos_free(&lg);
    }
    struct epar_nnpos_settings s3;
    epar_nnpos_settings_default(&s3);
    struct epar_nnpos t5;
    if (!epar_nnpos_alloc(&t5, EPAR_MECH_ALIBI, &s3, 9, 4, 2, 1)) {
        float th[4] = {0};
        check_int(epar_nnpos_ape_grow(&t5, th, 1), EPAR_EINVAL, "grow refused for alibi");
        epar_nnpos_free(&t5);
    }
}

/* fixed-mix and learnable-only at 8 heads: the fixed heads' attention is their pattern whatever the weights, and no
 * gradient reaches their q, k (factor 0); learnable-only's removed heads attend nowhere and get no q, k, v gradient,
 * its learned head (the last) does; fixed-mix's learned head has the same attention as learnable-only's on the same
 * weights (the heads do not mix inside a layer's attention) */
static void test_mix_heads(void)
{
    struct epar_nn_config cf = tiny(EPAR_MECH_FIXED_MIX, 0), cl = tiny(EPAR_MECH_LEARNABLE_ONLY, 0);
    struct epar_nn mf, ml;
    if (epar_nn_alloc(&mf, &cf) || epar_nn_alloc(&ml, &cl)) { check_true(0, "fixed-mix: alloc"); return; }
    gsl_rng *r = epar_rng_alloc(23, 0, EPAR_RNG_WEIGHTS);
    epar_nn_init(&mf, r);
    epar_rng_free(r);
    memcpy(ml.params_mem, mf.params_mem, mf.n_params * sizeof *mf.params_mem);
    int B = 2, T = 8, C = cf.C, NH = cf.NH, hs = C / NH, W = epar_nn_qkv_width(&cf);
    int tok[16], tgt[16];
    float mask[16];
    batch(B, T, cf.V, tok, tgt, mask);
    epar_nn_forward(&mf, tok, tgt, mask, B, T);
    epar_nn_zero_grad(&mf);
    epar_nn_backward(&mf);
    epar_nn_forward(&ml, tok, tgt, mask, B, T);
    epar_nn_zero_grad(&ml);
    epar_nn_backward(&ml);
    double pat = 0, off = 0, same = 0, gfix = 0, goff = 0, glearn = 0;
    double Wp[8 * 8];
    size_t nA = (size_t)B * NH * T * T;
    for (int h = 0; h < NH - 1; h++) {
        epar_mech_fixed_pattern(epar_nnpos_mix_pattern(h), T, Wp);
        for (int l = 0; l < cf.NL; l++)
            for (int b = 0; b < B; b++)
                for (int t = 0; t < T * T; t++) {
                    size_t at = l * nA + ((size_t)b * NH + h) * T * T + t;
                    pat = fmax(pat, fabs(mf.a.att[at] - Wp[t]));
                    off = fmax(off, fabs(ml.a.att[at]));
                }
    }
    for (int l = 0; l < cf.NL; l++)
        for (int b = 0; b < B && l == 0; b++)   /* layer 0: the same input to both models */
            for (int t = 0; t < T * T; t++) {
                size_t at = ((size_t)b * NH + NH - 1) * T * T + t;
                same = fmax(same, fabs(mf.a.att[at] - ml.a.att[at]));
            }
    for (int l = 0; l < cf.NL; l++)
        for (int part = 0; part < 3; part++)   /* q, k, v rows of the layer's projection */
            for (int h = 0; h < NH; h++)
                for (int o = 0; o < hs; o++)
                    for (int i = 0; i < C; i++) {
                        size_t at = (size_t)l * W * C + (size_t)(part * C + h * hs + o) * C + i;
                        if (h < NH - 1 && part < 2) gfix = fmax(gfix, fabs(mf.g.qkvw[at]));
                        if (h < NH - 1) goff = fmax(goff, fabs(ml.g.qkvw[at]));
                        else glearn = fmax(glearn, fabs(ml.g.qkvw[at]));
                    }
    check_abs(pat, 0, 1e-6, "fixed-mix: heads 0..6 attend by their patterns (current, previous, left, first, cycled)");
    check_abs(off, 0, 0, "learnable-only: heads 0..6 have no attention");
    check_abs(same, 0, 1e-7, "fixed-mix's learned head = learnable-only's on the same weights (layer 0)");
    check_abs(gfix, 0, 0, "fixed-mix: no gradient reaches the fixed heads' q, k rows");
    check_abs(goff, 0, 0, "learnable-only: no gradient reaches the removed heads' q, k, v rows");
    check_true(glearn > 1e-6, "learnable-only: the learned head's q, k, v rows get a gradient (largest %g)", glearn);
    epar_nn_free(&mf);
    epar_nn_free(&ml);
}

/* floater-learned (S3 003:45-49): at its initialisation (W2 = b2 = 0) the model is floater's (same loss); with a
 * learned-looking h its table is the fp64 recursion p_0 = floater's, p_{t+1} = p_t + h(p_t, t), h(p, t) =
 * (R - I) p + W2 tanh(W1 p + b1 + (t / train_length) w) + b2, written out here (R: the rotation by base^(-2i/C) of
 * each pair (x, y) -> (x cos + y sin, -x sin + y cos)) */
static void test_floater_learned(void)
{
    struct epar_nn_config c = tiny(EPAR_MECH_FLOATER_LEARNED, 0), cf = tiny(EPAR_MECH_FLOATER, 0);
    struct epar_nn m, f;
    if (epar_nn_alloc(&m, &c)) { check_true(0, "floater-learned: alloc"); return; }
    if (epar_nn_alloc(&f, &cf)) { epar_nn_free(&m); return; }
    gsl_rng *r = epar_rng_alloc(11, 0, EPAR_RNG_WEIGHTS), *rf = epar_rng_alloc(11, 0, EPAR_RNG_WEIGHTS);
    epar_nn_init(&m, r);
    epar_nn_init(&f, rf);
    epar_rng_free(r);
    epar_rng_free(rf);
    int B = 2, T = 8, tok[16], tgt[16];
    float mask[16];
    batch(B, T, c.V, tok, tgt, mask);
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    double worst = 0;
    for (int i = 0; i < T * c.C; i++) worst = fmax(worst, fabs(m.pos.ext[i] - f.pos.pe[i]));
    check_abs(worst, 0, 1e-7, "floater-learned at init (W2 = b2 = 0): floater's table");
    /* the other draws of the model differ (h's draws come first in the stream): compare tables, not losses */
    epar_nn_free(&f);
    /* a learned-looking h, against the fp64 recursion */
    int H = 3, C = c.C;
    float *th = m.p.pos;
    for (size_t i = 0; i < m.sizes[EPAR_NN_POS]; i++) th[i] = (float)gsl_ran_gaussian(R, 0.7);
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    const float *W1 = th, *b1 = W1 + H * C, *w = b1 + H, *W2 = w + H, *b2 = W2 + C * H;
    double pt[64], nx[64], base = c.pos_settings.mp[EPAR_MECH_FLOATER_LEARNED][0];
    for (int k = 0; k < C; k++) pt[k] = k % 2;
    worst = 0;
    double norm = 0;
    for (int t = 0; t < T; t++) {
        for (int k = 0; k < C; k++) {
            worst = fmax(worst, fabs(m.pos.ext[t * C + k] - c.pos_settings.init_sd * pt[k]));
            norm = fmax(norm, fabs(pt[k]));
        }
        double a[3];
        for (int j = 0; j < H; j++) {
            double z = b1[j] + (t / 5.0) * w[j];
            for (int k = 0; k < C; k++) z += W1[j * C + k] * pt[k];
            a[j] = tanh(z);
        }
        for (int i = 0; i < C / 2; i++) {
            double om = pow(base, -2.0 * i / C), x = pt[2 * i], y = pt[2 * i + 1];
            nx[2 * i] = x * cos(om) + y * sin(om) - x;   /* (R - I) p */
            nx[2 * i + 1] = -x * sin(om) + y * cos(om) - y;
        }
        for (int k = 0; k < C; k++) {
            double v = nx[k] + b2[k];
            for (int j = 0; j < H; j++) v += W2[k * H + j] * a[j];
            nx[k] = pt[k] + v;   /* explicit Euler: p + h(p, t) */
        }
        memcpy(pt, nx, sizeof pt);
    }
    check_abs(worst / (c.pos_settings.init_sd * norm), 0, 1e-5,
              "floater-learned: table = init_sd x the fp64 Euler recursion p_{t+1} = p_t + h(p_t, t) (relative)");
    epar_nn_free(&m);
}

/* the small model of test_overfit and test_nested_team: V 16, T 16, batch 4, 2 layers of width 32, mechanism id */
static struct epar_nn_config small_config(enum epar_mech_id id)
{
    struct epar_nn_config c;
    memset(&c, 0, sizeof c);
    c.V = 16; c.Tmax = 16; c.Bmax = 4; c.C = 32; c.NH = 2; c.NL = 2; c.F = 64;
    c.pos = id;
    c.init_sd = 0.02;
    epar_nnpos_settings_default(&c.pos_settings);
    /* block-sparse with the default nb = 0: the first key of a block sees only itself, so the batch's
     * prefix-dependent targets there are out of reach; with one neighbour block every context is >= 5 tokens */
    c.pos_settings.mp[EPAR_MECH_BLOCK_SPARSE][1] = 1;
    c.pos_settings.mp[EPAR_MECH_GQA][0] = 1;   /* 2 heads: the default 2 groups would be multi-head attention */
    /* pi-attention's defaults (radius 32, pi 16) at T = 16 would be a full causal band: a band of 3 keys and pi 4 make
     * both masks matter (a row sees its 2 predecessors and every 4th key before it) */
    c.pos_settings.mp[EPAR_MECH_PI_ATTENTION][0] = 2;
    c.pos_settings.mp[EPAR_MECH_PI_ATTENTION][1] = 4;
    return c;
}

static void test_overfit(enum epar_mech_id id)
{
    struct epar_nn_config c = small_config(id);
    struct epar_nn m;
    if (epar_nn_alloc(&m, &c)) { check_true(0, "overfit alloc %s", epar_nnpos_name(id)); return; }
    gsl_rng *r = epar_rng_alloc(42, 0, EPAR_RNG_WEIGHTS), *rd = epar_rng_alloc(42, 0, EPAR_RNG_DATA);
    epar_nn_init(&m, r);
    int B = 4, T = 16, tok[64], tgt[64];
    float mask[64];
    /* sequences start with distinct tokens so every target is a function of its prefix */
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            tok[b * T + t] = t == 0 ? b : (int)gsl_rng_uniform_int(rd, c.V);
            mask[b * T + t] = 1.0f;
        }
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) tgt[b * T + t] = t + 1 < T ? tok[b * T + t + 1] : (int)gsl_rng_uniform_int(rd, c.V);
    struct epar_optim_config oc = {.lr = 1e-2, .lr_min_ratio = 0.1, .warmup = 10, .steps = STEPS, .beta1 = 0.9,
                                   .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.0, .clip = 1.0};
    struct epar_optim o;
    epar_optim_alloc(&o, &oc, m.n_params);
    struct epar_optim_segment seg[EPAR_NN_NTENSORS + 4];   /* orthogonal-qk: its frozen q, k rows left out */
    int nseg = epar_nn_segments(&m, seg, EPAR_NN_NTENSORS + 4);
    for (int k = 0; k < nseg; k++) seg[k].decay = 0;
    size_t foff[4], fsize[4];
    int nf = epar_nn_frozen(&m, foff, fsize, 4);
    float *frozen0 = malloc(m.n_params * sizeof *frozen0);
    if (frozen0) memcpy(frozen0, m.params_mem, m.n_params * sizeof *frozen0);
    double first = 0;
    for (int s = 0; s < oc.steps; s++) {
        epar_nn_forward(&m, tok, tgt, mask, B, T);
        if (s == 0) first = m.loss;
        epar_nn_zero_grad(&m);
        epar_nn_backward(&m);
        epar_nn_frozen_grad_zero(&m);
        epar_optim_step(&o, m.params_mem, m.grads_mem, seg, nseg, epar_optim_lr(&oc, s));
    }
    for (int f = 0; f < nf && frozen0; f++)
        check_true(!memcmp(frozen0 + foff[f], m.params_mem + foff[f], fsize[f] * sizeof(float)),
                   "%s: frozen range %d (%zu floats) unchanged by training", epar_nnpos_name(id), f, fsize[f]);
    free(frozen0);
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    check_rel(first, log(16.0), 0.05, "%s: initial loss is about ln V", epar_nnpos_name(id));
    /* fixed-current mixes no positions: it sees the current token only, so its best loss on the batch is the
     * conditional entropy H(target | token) of the batch (computed here), not 0 */
    double floor = id == EPAR_MECH_FIXED_CURRENT ? cond_entropy(tok, tgt, B * T, c.V) : 0.0;
    check_true(m.loss < floor + 0.05, "%s: overfits one batch in %d steps (loss %.4g -> %.4g nats, floor %.4g)",
               epar_nnpos_name(id), oc.steps, first, m.loss, floor);
    if (getenv("CHECK_VERBOSE")) printf("  %s: loss %.4g -> %.4g\n", epar_nnpos_name(id), first, m.loss);
    epar_optim_free(&o);
    epar_rng_free(r);
    epar_rng_free(rd);
    epar_nn_free(&m);
}


/* one forward and backward of a small model of mechanism id (small_config, seed 42) on the calling
 * thread's thread count: its loss and a copy of its gradient (NULL when out of memory) */
static float *nested_step(enum epar_mech_id id, double *loss, size_t *n)
{
    struct epar_nn_config c = small_config(id);
    struct epar_nn m;
    if (epar_nn_alloc(&m, &c)) return NULL;
    gsl_rng *r = epar_rng_alloc(42, 0, EPAR_RNG_WEIGHTS);
    epar_nn_init(&m, r);
    epar_rng_free(r);
    int B = 4, T = 16, tok[64], tgt[64];
    float mask[64];
    for (int i = 0; i < B * T; i++) {
        tok[i] = (i * 7 + 3) % c.V;
        tgt[i] = (i * 5 + 1) % c.V;
        mask[i] = 1.0f;
    }
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    epar_nn_zero_grad(&m);
    epar_nn_backward(&m);
    *loss = m.loss;
    *n = m.n_params;
    float *g = malloc(m.n_params * sizeof *g);
    if (g) memcpy(g, m.grads_mem, m.n_params * sizeof *g);
    epar_nn_free(&m);
    return g;
}

/* A model stepped by a thread of an enclosing team, itself given one thread (as the benchmark's cells run: its loops
 * then run without a team of their own, and per-thread scratch must be indexed by the loop's thread, not by
 * omp_get_thread_num(), which is the enclosing team's): the same loss and gradient, bit for bit, as alone */
static void test_nested_team(enum epar_mech_id id)
{
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    double loss = 0, tl[2] = {0, 0};
    size_t n = 0, tn[2] = {0, 0};
    float *g = nested_step(id, &loss, &n), *tg[2] = {NULL, NULL};
    int team = 0;
#pragma omp parallel num_threads(2)
    {
        int k = omp_get_thread_num();
        if (k == 0) team = omp_get_num_threads();
        omp_set_num_threads(1);
        tg[k] = nested_step(id, &tl[k], &tn[k]);
    }
    omp_set_num_threads(threads);
    check_true(team == 2, "%s: the enclosing team has 2 threads (has %d)", epar_nnpos_name(id), team);
    for (int k = 0; k < 2; k++)
        check_true(g && tg[k] && tn[k] == n && tl[k] == loss && !memcmp(g, tg[k], n * sizeof *g),
                   "%s: thread %d of an enclosing team, one thread of its own: loss and gradient as alone",
                   epar_nnpos_name(id), k);
    free(g);
    free(tg[0]);
    free(tg[1]);
}

/* F9 head masking: a masked head contributes nothing. By hand: residual2 of layer 0 = residual + attprojb + sum over
 * the heads of atty_h W_h^T, so masking head h changes it by exactly -atty_h W_h^T (atty_h, W_h its columns) computed
 * from the unmasked forward; the other heads' outputs of layer 0 are unchanged; an all-zero mask changes no bit; the
 * gradient of a masked forward matches central differences (the masked head gets no gradient through its output). */
static void test_head_mask(enum epar_mech_id id)
{
    struct epar_nn_config c = tiny(id, 0);
    struct epar_nn m;
    epar_nn_alloc(&m, &c);
    epar_nn_init(&m, R);
    int B = 2, T = 8, C = c.C, NH = c.NH, hs = C / NH, N = B * T;
    int tok[2 * 8], tgt[2 * 8];
    float mask[2 * 8];
    batch(B, T, c.V, tok, tgt, mask);
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    double loss0 = m.loss;
    size_t nC = (size_t)N * C;
    float *atty0 = malloc(nC * sizeof(float)), *res20 = malloc(nC * sizeof(float));
    memcpy(atty0, m.a.atty, nC * sizeof(float));        /* layer 0 */
    memcpy(res20, m.a.residual2, nC * sizeof(float));
    unsigned char hm[64] = {0};
    m.head_mask = hm;                                   /* all zero: no head masked */
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    check_true(m.loss == loss0, "nn %s: an all-zero head mask changes no bit of the loss", epar_nnpos_name(id));
    hm[1] = 1;                                          /* layer 0, head 1 */
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    double worst = 0, zero = 0, others = 0;
    for (int i = 0; i < N; i++) {
        for (int o = 0; o < C; o++) {
            double want = res20[(size_t)i * C + o];
            for (int d = 0; d < hs; d++)
                want -= (double)atty0[(size_t)i * C + hs + d] * m.p.attprojw[(size_t)o * C + hs + d];
            worst = fmax(worst, fabs(m.a.residual2[(size_t)i * C + o] - want));
        }
        for (int d = 0; d < C; d++) {
            if (d >= hs && d < 2 * hs) zero = fmax(zero, fabs(m.a.atty[(size_t)i * C + d]));
            else others = fmax(others, fabs(m.a.atty[(size_t)i * C + d] - atty0[(size_t)i * C + d]));
        }
    }
    check_abs(worst, 0, 1e-5, "nn %s: masking layer 0 head 1 removes exactly its projected output (hand computation)",
              epar_nnpos_name(id));
    check_true(zero == 0 && others == 0, "nn %s: the masked head's output is 0, the other heads' unchanged",
               epar_nnpos_name(id));
    check_true(m.loss != loss0, "nn %s: the masked model's loss differs", epar_nnpos_name(id));
    /* the backward of a masked forward: a query weight of the masked head gets no gradient at all, another head's
     * weight matches central differences */
    hm[NH + 0] = 1;                                     /* and layer 1, head 0 */
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    epar_nn_zero_grad(&m);
    epar_nn_backward(&m);
    size_t qm = (size_t)(1 * hs) * C + 3, qo = (size_t)(0 * hs) * C + 3;   /* layer 0: q row of head 1, of head 0 */
    check_true(m.g.qkvw[qm] == 0.0f, "nn %s: a masked head's q weights get no gradient", epar_nnpos_name(id));
    double fd = central_diff(&m, &m.p.qkvw[qo], 1e-2f, tok, tgt, mask, B, T);
    check_true(close_enough(m.g.qkvw[qo], fd), "nn %s: masked forward, another head's gradient = central difference "
               "(%g vs %g)", epar_nnpos_name(id), m.g.qkvw[qo], fd);
    m.head_mask = NULL;
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    check_true(m.loss == loss0, "nn %s: no mask again: the loss as before, bit for bit", epar_nnpos_name(id));
    free(atty0);
    free(res20);
    epar_nn_free(&m);
}

/* F8 attention boost: factor 1 is the identity (as written and renormalised: the loss within float rounding); a boost
 * of f on one key of a row, checked by hand against the unboosted weights a: as written a'_j = f a_j, the others
 * unchanged; renormalised a'_j = f a_j / (1 + (f - 1) a_j), the others a_k / (1 + (f - 1) a_j); the layer's output
 * then sum_j a'_j v_j */
static void test_boost(void)
{
    struct epar_nn_config c = tiny(EPAR_MECH_ROPE, 0);
    struct epar_nn m;
    epar_nn_alloc(&m, &c);
    epar_nn_init(&m, R);
    int B = 2, T = 8, C = c.C, NH = c.NH, hs = C / NH;
    int tok[2 * 8], tgt[2 * 8];
    float mask[2 * 8];
    batch(B, T, c.V, tok, tgt, mask);
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    double loss0 = m.loss;
    size_t nA = (size_t)B * NH * T * T, nC = (size_t)B * T * C;
    float *att0 = malloc(nA * sizeof(float));
    memcpy(att0, m.a.att + nA, nA * sizeof(float));       /* layer 1 */
    unsigned char keys[2 * 8 * 8] = {0};
    for (int b = 0; b < B; b++)
        for (int i = 0; i < T; i++) keys[((size_t)b * T + i) * T + i / 2] = 1;   /* key i / 2 of every query */
    for (int rn = 0; rn < 2; rn++) {
        m.boost = (struct epar_nn_boost){1.0, 1, rn, keys};
        epar_nn_forward(&m, tok, tgt, mask, B, T);
        check_abs(m.loss, loss0, 1e-6, "nn: boost factor 1 is the identity (%s)", rn ? "renormalised" : "as written");
        double f = 2.5, wa = 0, wo = 0, rs = 0;
        m.boost = (struct epar_nn_boost){f, 1, rn, keys};
        epar_nn_forward(&m, tok, tgt, mask, B, T);
        const float *qkv = m.a.qkv + 3 * nC;
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++)
                for (int i = 0; i < T; i++) {
                    const float *a0 = att0 + (((size_t)b * NH + h) * T + i) * T;
                    const float *a1 = m.a.att + nA + (((size_t)b * NH + h) * T + i) * T;
                    int jb = i / 2;
                    double den = rn ? 1.0 + (f - 1.0) * a0[jb] : 1.0, sum = 0;
                    for (int j = 0; j <= i; j++) {
                        double want = (j == jb ? f : 1.0) * a0[j] / den;
                        wa = fmax(wa, fabs(a1[j] - want));
                        sum += a1[j];
                    }
                    if (rn) rs = fmax(rs, fabs(sum - 1.0));
                    for (int d = 0; d < hs; d++) {
                        double o = 0;
                        for (int j = 0; j <= i; j++)
                            o += (j == jb ? f : 1.0) * a0[j] / den * qkv[((size_t)b * T + j) * 3 * C + 2 * C + h * hs + d];
                        wo = fmax(wo, fabs(m.a.atty[nC + ((size_t)b * T + i) * C + h * hs + d] - o));
                    }
                }
        check_abs(wa, 0, 1e-6, "nn: boost 2.5 on one key, the weights by hand (%s)", rn ? "renormalised" : "as written");
        check_abs(wo, 0, 1e-5, "nn: boost 2.5, the layer's output = sum_j a'_j v_j (%s)", rn ? "renormalised" : "as written");
        if (rn) check_abs(rs, 0, 1e-6, "nn: renormalised boost: rows sum to 1");
        check_true(m.loss != loss0, "nn: boost 2.5 changes the loss (%s)", rn ? "renormalised" : "as written");
    }
    m.boost.keys = NULL;
    epar_nn_forward(&m, tok, tgt, mask, B, T);
    check_true(m.loss == loss0, "nn: no boost again: the loss as before, bit for bit");
    free(att0);
    epar_nn_free(&m);
}

int main(void)
{
    epar_blas_threads(1);
    R = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(R, 2385);
    test_matmul();
    test_layernorm();
    test_matmul_tiles(1030, 140, 515);   /* one row block, two dW tiles (the second 3 rows) */
    test_matmul_tiles(1600, 140, 70);    /* two row blocks (832 and 768 rows), the bias sums across them */
    test_matmul_tiles(300, 516, 135);    /* one row block, dW tiles 135 x 512 and 135 x 4 */
    test_matmul_threads(1400, 64, 192);    /* a qkv product of one row block: dW and dinp forked (17M > 2^24) */
    test_matmul_threads(1030, 140, 515);   /* one block of 1030 rows, not 512 + 512 + 6 */
    test_matmul_threads(3100, 64, 192);    /* four blocks (832 x 3 and 604 rows; three made even) the team shares */
    test_expf_lanes();
    test_gelu();
    test_crossentropy();
    test_crossentropy_lanes();
    test_attention();
    for (int id = 0; id < EPAR_MECH_COUNT; id++)
        if (epar_nnpos_trainable((enum epar_mech_id)id)) test_model_gradient((enum epar_mech_id)id, 0);
    for (int id = 0; id < EPAR_MECH_COUNT; id++)
        if (epar_nnpos_trainable((enum epar_mech_id)id)) test_causal((enum epar_mech_id)id);
    TINY_NH = 4;   /* GQA proper: 4 query heads in 2 groups */
    test_model_gradient(EPAR_MECH_GQA, 0);
    test_reference_fp64(EPAR_MECH_GQA);
    test_gqa_shape();
    TINY_NH = 8;   /* S1's 7 fixed + 1 learned heads (hs = 1): every pattern of the cycle, the last head learned */
    test_model_gradient(EPAR_MECH_FIXED_MIX, 0);
    test_reference_fp64(EPAR_MECH_FIXED_MIX);
    test_model_gradient(EPAR_MECH_LEARNABLE_ONLY, 0);
    test_reference_fp64(EPAR_MECH_LEARNABLE_ONLY);
    test_model_gradient(EPAR_MECH_FIXED_ONLY, 0);
    test_reference_fp64(EPAR_MECH_FIXED_ONLY);
    test_mix_heads();
    TINY_NH = 2;
    test_model_gradient(EPAR_MECH_EPAR_BASIC, 1);
    test_model_gradient(EPAR_MECH_EPAR_ENHANCED, 1);
    for (int id = 0; id < EPAR_MECH_COUNT; id++)
        if (epar_nnpos_trainable((enum epar_mech_id)id)) test_reference_fp64((enum epar_mech_id)id);
    test_deberta_emd();
    test_kernel_paths(EPAR_MECH_PERFORMER, 0);
    test_kernel_paths(EPAR_MECH_PERFORMER, 37);
    test_kernel_paths(EPAR_MECH_LINEAR_ELU, 0);
    test_performer_scale(1);
    test_performer_scale(4);
    test_performer_scale(8);
    for (int id = 0; id < EPAR_MECH_COUNT; id++)
        if (epar_nnpos_trainable((enum epar_mech_id)id)) test_overfit((enum epar_mech_id)id);
    test_frozen_qk();
    test_alibi_learned();
    test_ape_ext();
    test_floater_learned();
    /* (last: the draws of the cases above stay as they were) */
    test_crossentropy_paths();
    test_attention_paths(37, 1, 24, 2);
    test_attention_paths(70, 0, 80, 2);
    test_attention_paths(300, 0, 128, 2);
    test_attention_rows(37, 0, 64, 4);
    test_attention_rows(131, 1, 32, 2);
    test_attention_rows(200, 0, 96, 2);
    test_txl();
    for (int id = 0; id < EPAR_MECH_COUNT; id++)
        if (epar_nnpos_trainable((enum epar_mech_id)id)) test_nested_team((enum epar_mech_id)id);
    test_head_mask(EPAR_MECH_NONE);
    test_head_mask(EPAR_MECH_ALIBI);
    test_boost();
    gsl_rng_free(R);
    return check_summary("test_nn");
}
