/* nn: the Transformer's ops (forward, backward) and the whole model. Reading order: sizes and memory,
 * the ops (matmul, layernorm, gelu, attention, cross-entropy), then the model's forward and backward. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <time.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include <gsl/gsl_randist.h>
#include <omp.h>
#include "blas.h"
#include "err.h"
#include "nn.h"
#include "seams.h"
#include "stream.h"
#include "target.h"

#define ROWS 64         /* row block of the row reductions (fixed: determinism) */
/* Tiles of the matrix products, fixed (never from the thread count): every sgemm call has the same shape
 * whatever --jobs is, so each output element is summed the same way. Large enough that OpenBLAS's packing
 * of the shared operand is amortised (measured on one core, N = 4096, dim 128: 64-row blocks ran at
 * ~100 GFLOP/s, 256-row blocks at ~133; weight-gradient tiles of 32 output rows at ~75, 128 x 128 at ~120;
 * 512-row blocks and 128 x 512 tiles measured the same within noise in a whole step). Since 2026-11-23:
 * 512-row blocks and 512 x 512 weight-gradient tiles (at dim 128 / MLP 512 each weight gradient is one
 * sgemm, each operand packed once instead of once per 128-wide tile of the other): -2% of a whole step
 * against 256 rows and 128 x 128 (steps interleaved in one process, 60 pairs; 1024 rows measured the same
 * as 512). Since 2026-11-30: row blocks of up to 1536 rows, equal in size (mm_rows): at the benchmark's
 * quick sizes, L 128 batch 24 (3072 rows), 2 calls of sgemm instead of 6 per product, 2-3 % of a step.
 * Query blocks of the attention: 32 and 64 measured alike, 128 and 256 slower (more of the masked upper
 * triangle computed). */
#define MM_ROWS 1536    /* most rows of a row block of the products over rows (forward, input gradient) */
#define OUT_BLOCK 512   /* weight-gradient tile: output features ... */
#define COL_BLOCK 512   /* ... x input features */
#define EMB_BLOCK 128   /* column block of the token-embedding gradient */
#define ATT_BLOCK EPAR_NN_ATT_BLOCK   /* query block of the causal attention (keys 0..end of block; lib/nn.h) */
/* Parallel regions only above this much work: below it the fork/join costs more than the loop, and far
 * more when the cores are shared (a thread that has lost its core holds up the join for a time slice:
 * a 2-layer dim-32 model trained 3-10x slower with --jobs 2 than with 1 on the loaded 2-core machine,
 * with products of ~1.5M multiply-adds forked). Products (sgemm, ~100 GFLOP/s) count multiply-adds,
 * elementwise ops (a few ns each) count elements. Changes the thread count, never a result. Products: 2^24
 * multiply-adds, was 2^22 (bench/README.md, "Two threads"): on an idle 2-core VM, waking a passive thread costs
 * 25-90 us and the next op reads half its input from the other core's cache, so at the benchmark's short tasks
 * (1024 rows, dim 64, products of 4-17M multiply-adds) two threads ran a step 0.86-0.95x as fast as one; with 2^24,
 * 0.97-1.0x (L 128, batch 24, products of 12-50M: unchanged, 1.3x one thread; 2^25 lost that: 1.1x). */
#define PAR_MACS 16777216.0     /* ~100-200 us of sgemm */
/* below them a loop runs on the calling thread without a team (lib/blas.h: EPAR_OMP_FOR) */
static inline int fork_macs(double macs) { return epar_omp_fork(macs, PAR_MACS); }

static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int nblocks(int n, int blk) { return (n + blk - 1) / blk; }

/* ------------------------------------------------------------------------------------------------ */
/* ops                                                                                               */

/* the rows of each row block of a product over N rows: N split into as few blocks of at most MM_ROWS as there can
 * be, their number rounded up to an even one when there are several (two threads then share them equally: three
 * blocks on two threads ran the forward products at 1.5x one thread), of equal size rounded up to a multiple of
 * ROWS (no ragged little block at the end). A function of N only, never of the thread count: an sgemm of
 * M x N x K <= 1e6 runs OpenBLAS's small-matrix kernel, whose bits differ from the large one's, so the blocks must
 * be the same however many threads share them (test_nn) */
static inline int mm_rows(int N)
{
    int nb = nblocks(N, MM_ROWS);
    nb += nb > 1 && nb % 2;
    return (nblocks(N, nb) + ROWS - 1) / ROWS * ROWS;
}

/* row block blk (of mr rows) of epar_nn_matmul_forward_res */
static void mm_forward_block(float *out, const float *res, const float *inp, const float *W, const float *bias, int N,
                             int C, int OC, int mr, int blk)
{
    int r0 = blk * mr, rows = imin(mr, N - r0);
    float *o = out + (size_t)r0 * OC;
    const float *rs = res ? res + (size_t)r0 * OC : NULL;
    if (bias)
        for (int r = 0; r < rows; r++) {
            float *orow = o + (size_t)r * OC;
            const float *rrow = rs ? rs + (size_t)r * OC : NULL;
            if (rrow)
                for (int k = 0; k < OC; k++) orow[k] = rrow[k] + bias[k];
            else
                memcpy(orow, bias, (size_t)OC * sizeof *orow);
        }
    else if (rs && rs != o)
        memcpy(o, rs, (size_t)rows * OC * sizeof *o);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, OC, C, 1.0f, inp + (size_t)r0 * C, C, W, C,
                bias || rs ? 1.0f : 0.0f, o, OC);
}

void epar_nn_matmul_forward_res(float *out, const float *res, const float *inp, const float *W, const float *bias,
                                int N, int C, int OC)
{
    /* out is (N, OC), res (N, OC) or NULL (may equal out), inp (N, C), W (OC, C), bias (OC) or NULL.
     * Each row tile of out is first set to res + bias (while it is written anyway) and the product then added
     * with beta = 1: no separate pass of the bias over out afterwards, and no zeroing of out by sgemm's
     * beta = 0 (a pass of its own in OpenBLAS) when there is a bias. */
    int fork = fork_macs((double)N * C * OC), mr = mm_rows(N);
    EPAR_OMP_FOR(fork, int, blk, nblocks(N, mr), mm_forward_block(out, res, inp, W, bias, N, C, OC, mr, blk));
}

void epar_nn_matmul_forward(float *out, const float *inp, const float *W, const float *bias, int N, int C, int OC,
                            int accumulate)
{
    epar_nn_matmul_forward_res(out, accumulate ? out : NULL, inp, W, bias, N, C, OC);
}

/* pp (OC) = column sums of rows r0 .. r0+rows-1 of dout (N, OC), in order */
static void bias_part(float *pp, const float *dout, int r0, int rows, int OC)
{
    for (int k = 0; k < OC; k++) pp[k] = 0.0f;
    for (int r = 0; r < rows; r++) {
        const float *d = dout + (size_t)(r0 + r) * OC;
#pragma omp simd
        for (int k = 0; k < OC; k++) pp[k] += d[k];
    }
}

/* weight-gradient tile t of epar_nn_matmul_backward: dW tile (o0.., c0..) reduces over all N rows inside one sgemm
 * (no cross-thread sum) */
static void mm_backward_dw(float *dW, const float *dout, const float *inp, int N, int C, int OC, int t)
{
    int nc = nblocks(C, COL_BLOCK);
    int o0 = t / nc * OUT_BLOCK, cnt = imin(OUT_BLOCK, OC - o0);
    int c0 = t % nc * COL_BLOCK, ccnt = imin(COL_BLOCK, C - c0);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, cnt, ccnt, N, 1.0f, dout + o0, OC, inp + c0, C, 1.0f,
                dW + (size_t)o0 * C + c0, C);
}

/* row tile blk (of mr rows) of the input gradient, and the bias sums of its ROWS-row blocks while the tile of dout is
 * in cache (the same blocks as a pass of their own: mr is a multiple of ROWS) */
static void mm_backward_dinp(float *dinp, const float *dout, const float *W, float *part, int dbias, int N, int C,
                             int OC, int accumulate, int mr, int blk)
{
    int nb = nblocks(N, ROWS), r0 = blk * mr, rows = imin(mr, N - r0);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, C, OC, 1.0f, dout + (size_t)r0 * OC, OC, W, C,
                accumulate ? 1.0f : 0.0f, dinp + (size_t)r0 * C, C);
    if (dbias)
        for (int b = r0 / ROWS; b < nb && b * ROWS < r0 + rows; b++)
            bias_part(part + (size_t)b * OC, dout, b * ROWS, imin(ROWS, N - b * ROWS), OC);
}

/* dbias[k] += the sum of the row blocks' partial sums, in block order */
static void bias_sum(float *dbias, const float *part, int nb, int OC, int k)
{
    float acc = 0.0f;
    for (int blk = 0; blk < nb; blk++) acc += part[(size_t)blk * OC + k];
    dbias[k] += acc;
}

void epar_nn_matmul_backward(float *dinp, float *dW, float *dbias, const float *dout, const float *inp,
                             const float *W, int N, int C, int OC, int accumulate_dinp, float *part)
{
    /* dinp (N, C), dW (OC, C), dbias (OC), dout (N, OC), inp (N, C), W (OC, C), part (ceil(N/ROWS), OC) */
    int fork = fork_macs((double)N * C * OC), mr = mm_rows(N);
    int nb = nblocks(N, ROWS), nbm = nblocks(N, mr), ndw = nblocks(OC, OUT_BLOCK) * nblocks(C, COL_BLOCK);
    if (!fork) {
        for (int t = 0; t < ndw; t++) mm_backward_dw(dW, dout, inp, N, C, OC, t);
        for (int blk = 0; dinp && blk < nbm; blk++)
            mm_backward_dinp(dinp, dout, W, part, dbias != NULL, N, C, OC, accumulate_dinp, mr, blk);
        if (!dbias) return;
        for (int blk = 0; !dinp && blk < nb; blk++)
            bias_part(part + (size_t)blk * OC, dout, blk * ROWS, imin(ROWS, N - blk * ROWS), OC);
        for (int k = 0; k < OC; k++) bias_sum(dbias, part, nb, OC, k);
        return;
    }
#pragma omp parallel
    {
        /* the weight-gradient tiles first, all loops dynamic and nowait: a thread that takes a (large) dW tile leaves
         * the row tiles of dinp to the others, and joins them when done */
#pragma omp for schedule(dynamic) nowait
        for (int t = 0; t < ndw; t++) mm_backward_dw(dW, dout, inp, N, C, OC, t);
        if (dinp) {
#pragma omp for schedule(dynamic) nowait
            for (int blk = 0; blk < nbm; blk++)
                mm_backward_dinp(dinp, dout, W, part, dbias != NULL, N, C, OC, accumulate_dinp, mr, blk);
        }
        if (dbias) {
            if (!dinp) {
#pragma omp for schedule(static) nowait
                for (int blk = 0; blk < nb; blk++)
                    bias_part(part + (size_t)blk * OC, dout, blk * ROWS, imin(ROWS, N - blk * ROWS), OC);
            }
#pragma omp barrier
#pragma omp for schedule(static)
            for (int k = 0; k < OC; k++) bias_sum(dbias, part, nb, OC, k);
        }
    }
}

/* One row of LayerNorm, forward and backward. The reductions are in double; `omp simd` lets the compiler
 * split them into vector lanes (a fixed split for a given build and CPU: the bits do not depend on the
 * thread count), and target_clones builds an AVX2+FMA version beside the baseline one, chosen once at
 * load time from the CPU (before: scalar double sums, 4% of a training step). */
#define LN_CLONES __attribute__((target_clones("avx2", "default")))

LN_CLONES static void ln_row_forward(float *o, float *mean, float *rstd, const float *x, const float *w,
                                     const float *b, int C)
{
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (int c = 0; c < C; c++) s += x[c];
    float m = (float)(s / C);
    double v = 0.0;
#pragma omp simd reduction(+ : v)
    for (int c = 0; c < C; c++) {
        double d = (double)(x[c] - m);
        v += d * d;
    }
    float rs = (float)(1.0 / sqrt(v / C + 1e-5));
#pragma omp simd
    for (int c = 0; c < C; c++) o[c] = (x[c] - m) * rs * w[c] + b[c];
    *mean = m;
    *rstd = rs;
}

/* dx (C) += ..., pw, pb (C) += this row's share of dw, db */
LN_CLONES static void ln_row_backward(float *dx, float *pw, float *pb, const float *dy, const float *x,
                                      const float *w, float m, float rs, int C)
{
    double dnm = 0.0, dnnm = 0.0;
#pragma omp simd reduction(+ : dnm, dnnm)
    for (int c = 0; c < C; c++) {
        float n = (x[c] - m) * rs, dn = w[c] * dy[c];
        dnm += dn;
        dnnm += (double)dn * n;
    }
    float a = (float)(dnm / C), bb = (float)(dnnm / C);
#pragma omp simd
    for (int c = 0; c < C; c++) {
        float n = (x[c] - m) * rs, dn = w[c] * dy[c];
        dx[c] += (dn - a - n * bb) * rs;
        pw[c] += n * dy[c];
        pb[c] += dy[c];
    }
}

void epar_nn_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                               const float *b, int N, int C)
{
    /* out (N, C), mean and rstd (N), inp (N, C), w and b (C); eps 1e-5 as in PyTorch */
    EPAR_OMP_FOR(epar_omp_fork_elems((double)N * C), int, r, N,
                 ln_row_forward(out + (size_t)r * C, mean + r, rstd + r, inp + (size_t)r * C, w, b, C));
}

/* row block blk of epar_nn_layernorm_backward: dinp of its rows, and its partial sums of dw and db into part */
static void ln_backward_block(float *dinp, const float *dout, const float *inp, const float *w, const float *mean,
                              const float *rstd, int N, int C, float *part, int blk)
{
    float *pw = part + (size_t)blk * 2 * C, *pb = pw + C;
    for (int c = 0; c < C; c++) pw[c] = pb[c] = 0.0f;
    int r0 = blk * ROWS, r1 = imin(N, r0 + ROWS);
    for (int r = r0; r < r1; r++)
        ln_row_backward(dinp + (size_t)r * C, pw, pb, dout + (size_t)r * C, inp + (size_t)r * C, w, mean[r], rstd[r], C);
}

/* column c of dw and db += the blocks' partial sums, in block order */
static void ln_backward_sum(float *dw, float *db, const float *part, int nb, int C, int c)
{
    float aw = 0.0f, ab = 0.0f;
    for (int blk = 0; blk < nb; blk++) {
        aw += part[(size_t)blk * 2 * C + c];
        ab += part[(size_t)blk * 2 * C + C + c];
    }
    dw[c] += aw;
    db[c] += ab;
}

void epar_nn_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                const float *w, const float *mean, const float *rstd, int N, int C, float *part)
{
    /* dinp (N, C) +=, dw and db (C) +=, dout and inp (N, C), mean and rstd (N), part (ceil(N/ROWS), 2C) */
    int nb = nblocks(N, ROWS), fork = epar_omp_fork_elems((double)N * C);
    EPAR_OMP_FOR(fork, int, blk, nb, ln_backward_block(dinp, dout, inp, w, mean, rstd, N, C, part, blk));
    EPAR_OMP_FOR(fork, int, c, C, ln_backward_sum(dw, db, part, nb, C, c));
}

#define GELU_K 0.7978845608028654f   /* sqrt(2 / pi) */
#define GELU_A 0.044715f
#define EW_BLOCK 4096                 /* element block of the elementwise ops (fixed: determinism) */

/* GELU, tanh form, written with the identity 0.5 (1 + tanh u) = sigmoid(2u) = 1 / (1 + exp(-2u)):
 *   gelu(x)  = x s,                                   u = K (x + A x^3), s = 1 / (1 + exp(-2u))
 *   gelu'(x) = s + 2 x s (1 - s) K (1 + 3 A x^2)      (sech^2 u = 4 s (1 - s))
 * One exp per element instead of tanhf (glibc's tanhf -> expm1f was a third of a training step), accurate
 * in relative terms also where 1 + tanh u is tiny (x << 0). exp is glibc's: libmvec's 8-lane AVX2 expf
 * (max 4 ulp) when the CPU has AVX2+FMA, else libm's expf; every element of a run goes through the same
 * one (a block's tail is padded to 8 lanes), so the bits do not depend on where an element sits. */
static int nn_portable;

void epar_nn_set_portable(int portable) { nn_portable = portable != 0; }
int epar_nn_simd(void) { return !nn_portable && epar_stream_simd(); }

/* out (n) = gelu(inp) and, sv non-NULL, sv (n) = s; or (out NULL) dinp (n) = gelu'(inp) dout, with s read from sv
 * when given (the forward's, bit for bit the same) instead of computed again */
static void gelu_block_c(float *out, float *dinp, const float *inp, const float *dout, float *sv, int n)
{
    for (int i = 0; i < n; i++) {
        float x = inp[i], s;
        if (out || !sv) {
            float u = GELU_K * (x + GELU_A * x * x * x);
            s = 1.0f / (1.0f + expf(-2.0f * u));
        } else {
            s = sv[i];
        }
        if (out) {
            out[i] = x * s;
            if (sv) sv[i] = s;
        } else {
            dinp[i] = (s + 2.0f * x * s * (1.0f - s) * GELU_K * (1.0f + 3.0f * GELU_A * x * x)) * dout[i];
        }
    }
}

/* Causal attention rows. Row i of a head: z_j = s_j fac[i-j] + bias[i-j] + pr[j] (fac, bias, the pair row pr may
 * be NULL; pr holds 0 / -inf for masks, ln W for fixed patterns, and a row keeps at least one finite z), j <= i;
 * a = softmax(z) over j <= i; backward: dz_j = a_j (d_j - sum_k a_k d_k), ds_j = dz_j fac[i-j].
 * The C versions are the reference; the AVX2 versions do the same arithmetic 8 lanes at a time (libmvec expf, sums
 * in 8 lanes then a fixed horizontal order; GCC fuses the backward's dot-product multiply-adds into FMAs, GNU C's
 * default -ffp-contract=fast, where the C build for baseline x86-64 has none), so the two agree to a few ulp, not
 * bit for bit: a run uses one of them throughout and its bits depend neither on the thread count nor on which
 * AVX2 CPU runs it. */
static void softmax_row_c(float *a, const float *s, const float *fac, const float *bias, const float *pr, int i,
                          int lim)
{
    (void)lim;
    float mx = -INFINITY;
    for (int j = 0; j <= i; j++) {
        float z = s[j];
        if (fac) z *= fac[i - j];
        if (bias) z += bias[i - j];
        if (pr) z += pr[j];
        a[j] = z;
        if (z > mx) mx = z;
    }
    float sum = 0.0f;
    for (int j = 0; j <= i; j++) {
        float e = expf(a[j] - mx);
        a[j] = e;
        sum += e;
    }
    float inv = 1.0f / sum;
    for (int j = 0; j <= i; j++) a[j] *= inv;
}

void epar_nn_softmax_row(float *a, const float *s, const float *pr, int i) { softmax_row_c(a, s, NULL, NULL, pr, i, i + 1); }

/* d (i+1) <- ds of row i from d = dA and a = A; gf, gb (T): per-distance sums of dz s and dz (NULL: none) */
static void softmax_row_backward_c(float *d, const float *a, const float *s, const float *fac, float *gf, float *gb,
                                   int i)
{
    float dot = 0.0f;
    for (int j = 0; j <= i; j++) dot += a[j] * d[j];
    for (int j = 0; j <= i; j++) {
        float dz = a[j] * (d[j] - dot);
        int dist = i - j;
        if (gb) gb[dist] += dz;
        if (fac) {
            if (gf) gf[dist] += dz * s[j];
            dz *= fac[dist];
        }
        d[j] = dz;
    }
}

#include <immintrin.h>
#include "lanes8.h"   /* hsum8, hmax8 */
EPAR_TARGET_BEGIN("avx2,fma")
__m256 _ZGVdN8v_expf(__m256 x);   /* glibc libmvec (lib/stream.c uses it too) */

/* gelu_block_c 8 lanes at a time: the same arithmetic but libmvec's expf, and three of the multiply-adds fused
 * (written as FMAs, so that no compiler's contraction choice moves a bit; the C build for baseline x86-64 has
 * none): a few ulp apart (test_nn). gelu_block_512 below does exactly this 16 lanes at a time. */
static void gelu_block_avx2(float *out, float *dinp, const float *inp, const float *dout, float *sv, int n)
{
    const __m256 k = _mm256_set1_ps(GELU_K), a = _mm256_set1_ps(GELU_A), one = _mm256_set1_ps(1.0f);
    const __m256 m2 = _mm256_set1_ps(-2.0f), two = _mm256_set1_ps(2.0f), a3 = _mm256_set1_ps(3.0f * GELU_A);
    for (int i = 0; i < n; i += 8) {
        int w = n - i < 8 ? n - i : 8;
        float xb[8] = {0}, db[8] = {0}, sb[8] = {0}, ob[8];
        const float *xp = inp + i, *dp = out ? NULL : dout + i, *sp = sv && !out ? sv + i : NULL;
        if (w < 8) {   /* the tail, padded */
            memcpy(xb, xp, (size_t)w * sizeof(float));
            if (dp) memcpy(db, dp, (size_t)w * sizeof(float));
            if (sp) memcpy(sb, sp, (size_t)w * sizeof(float));
            xp = xb;
            dp = dp ? db : NULL;
            sp = sp ? sb : NULL;
        }
        __m256 x = _mm256_loadu_ps(xp), x2 = _mm256_mul_ps(x, x), s;
        if (sp) {
            s = _mm256_loadu_ps(sp);
        } else {
            __m256 u = _mm256_mul_ps(k, _mm256_fmadd_ps(_mm256_mul_ps(a, x2), x, x));
            s = _mm256_div_ps(one, _mm256_add_ps(one, _ZGVdN8v_expf(_mm256_mul_ps(m2, u))));
        }
        __m256 r;
        if (out) {
            r = _mm256_mul_ps(x, s);
            if (sv) {
                if (w == 8) {
                    _mm256_storeu_ps(sv + i, s);
                } else {
                    _mm256_storeu_ps(ob, s);
                    memcpy(sv + i, ob, (size_t)w * sizeof(float));
                }
            }
        } else {
            __m256 t = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(two, x), s), _mm256_sub_ps(one, s)), k);
            r = _mm256_mul_ps(_mm256_fmadd_ps(t, _mm256_fmadd_ps(a3, x2, one), s), _mm256_loadu_ps(dp));
        }
        if (w == 8) {
            _mm256_storeu_ps((out ? out : dinp) + i, r);
        } else {
            _mm256_storeu_ps(ob, r);
            memcpy((out ? out : dinp) + i, ob, (size_t)w * sizeof(float));
        }
    }
}

static inline __m256i att_mask(int n)   /* lanes < n (masked loads and stores of a row's tail) */
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

static inline __m256 rev8(__m256 v) { return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0)); }

/* lane k < w: t[w-1-k], from one masked load of t[0 .. w-1] (lanes from w on: 0); the tail of a row, whose last w
 * keys are at distances w-1 .. 0 (a scalar gather there stalled on its stores, read back as a vector) */
static inline __m256 tail_rev(const float *t, __m256i m, int w)
{
    __m256i idx = _mm256_and_si256(_mm256_sub_epi32(_mm256_set1_epi32(w - 1), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
                                   _mm256_set1_epi32(7));
    return _mm256_permutevar8x32_ps(_mm256_maskload_ps(t, m), idx);
}

/* lanes j .. j+w-1 of row i (w <= 8): z, with fac and bias read at distances i-j-7 .. i-j reversed, pr at j..; -inf in
 * the lanes from w on */
static inline __m256 row_z(const float *s, const float *fac, const float *bias, const float *pr, int i, int j, int w)
{
    if (w == 8) {
        __m256 z = _mm256_loadu_ps(s + j);
        if (fac) z = _mm256_mul_ps(z, rev8(_mm256_loadu_ps(fac + i - j - 7)));
        if (bias) z = _mm256_add_ps(z, rev8(_mm256_loadu_ps(bias + i - j - 7)));
        if (pr) z = _mm256_add_ps(z, _mm256_loadu_ps(pr + j));
        return z;
    }
    const __m256i m = att_mask(w);
    __m256 z = _mm256_maskload_ps(s + j, m);   /* lanes from w on: 0, memory not read */
    if (fac) z = _mm256_mul_ps(z, tail_rev(fac, m, w));   /* the row's last w keys: i - j = w - 1 */
    if (bias) z = _mm256_add_ps(z, tail_rev(bias, m, w));
    if (pr) z = _mm256_add_ps(z, _mm256_maskload_ps(pr + j, m));
    return _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), z, _mm256_castsi256_ps(m));
}

/* the exp pass of softmax_row_avx2 with AVX-512: exp(a[j] - mx) in place for j < n8 and *zt = exp(*zt - mx) (the tail
 * of w lanes, when w), two 8-lane groups per call of libmvec's 16-lane expf (the last group with the tail), each
 * group added to *vsum in the 8-lane order: the bits of the 8-lane pass, with half the calls. The lanes past the
 * row are set to 0 after the call instead of passing -inf to it (exp(-inf) = 0 too, but libmvec computes every
 * lane outside its range again with scalar expf). */
EPAR_TARGET_END
EPAR_TARGET_BEGIN("avx512f,avx512dq,avx2,fma")
__m512 _ZGVeN16v_expf(__m512 x);   /* glibc libmvec: bit for bit _ZGVdN8v_expf's (every float, glibc 2.36; test_nn) */
static void row_exp_512(float *a, int n8, int w, float mx, __m256 *zt, __m256 *vsum)
{
    const __m512 M = _mm512_set1_ps(mx);
    __m256 sum = *vsum;
    int j = 0;
    for (; j + 16 <= n8; j += 16) {
        __m512 e = _ZGVeN16v_expf(_mm512_sub_ps(_mm512_loadu_ps(a + j), M));
        _mm512_storeu_ps(a + j, e);
        sum = _mm256_add_ps(_mm256_add_ps(sum, _mm512_castps512_ps256(e)), _mm512_extractf32x8_ps(e, 1));
    }
    if (j < n8 || w) {   /* lanes past the row (the tail's padding, -inf, or no group at all) get exp(0), then 0 */
        const __mmask16 tail = (__mmask16)((1u << w) - 1u), in = j < n8 ? (__mmask16)(0xffu | tail << 8) : tail;
        __m256 lo = j < n8 ? _mm256_loadu_ps(a + j) : *zt, hi = j < n8 && w ? *zt : _mm256_setzero_ps();
        __m512 z = _mm512_mask_blend_ps(in, M, _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1));
        __m512 e = _mm512_maskz_mov_ps(in, _ZGVeN16v_expf(_mm512_sub_ps(z, M)));
        __m256 el = _mm512_castps512_ps256(e), eh = _mm512_extractf32x8_ps(e, 1);
        sum = _mm256_add_ps(sum, el);
        if (j < n8) {
            _mm256_storeu_ps(a + j, el);
            if (w) {
                *zt = eh;
                sum = _mm256_add_ps(sum, eh);
            }
        } else {
            *zt = el;
        }
    }
    *vsum = sum;
}
EPAR_TARGET_END
EPAR_TARGET_BEGIN("avx2,fma")

static int nn_avx512(void);

/* the tail (lanes from n8 on) stays in a register between the passes; it is written whole (zeros after i) when the
 * caller allows writing a[0 .. lim-1] that far, else by a masked store (slow on AMD Zen: microcoded) */
static void softmax_row_avx2(float *a, const float *s, const float *fac, const float *bias, const float *pr, int i,
                             int lim)
{
    int n = i + 1, n8 = n & ~7, w = n - n8;
    __m256 vmax = _mm256_set1_ps(-INFINITY), zt = vmax;
    for (int j = 0; j < n8; j += 8) {
        __m256 z = row_z(s, fac, bias, pr, i, j, 8);
        vmax = _mm256_max_ps(vmax, z);
        _mm256_storeu_ps(a + j, z);
    }
    if (w) {
        zt = row_z(s, fac, bias, pr, i, n8, w);   /* -inf in the padding lanes */
        vmax = _mm256_max_ps(vmax, zt);
    }
    float mx = hmax8(vmax);
    __m256 vM = _mm256_set1_ps(mx), vsum = _mm256_setzero_ps();
    if (nn_avx512()) {
        row_exp_512(a, n8, w, mx, &zt, &vsum);
    } else {
        for (int j = 0; j < n8; j += 8) {
            __m256 e = _ZGVdN8v_expf(_mm256_sub_ps(_mm256_loadu_ps(a + j), vM));
            _mm256_storeu_ps(a + j, e);
            vsum = _mm256_add_ps(vsum, e);
        }
        if (w) {   /* the padding lanes (-inf) get exp(0), then 0: libmvec redoes any lane outside its range in scalar */
            const __m256 in = _mm256_castsi256_ps(att_mask(w));
            zt = _mm256_and_ps(_ZGVdN8v_expf(_mm256_sub_ps(_mm256_blendv_ps(vM, zt, in), vM)), in);
            vsum = _mm256_add_ps(vsum, zt);
        }
    }
    __m256 inv = _mm256_set1_ps(1.0f / hsum8(vsum));
    for (int j = 0; j < n8; j += 8) _mm256_storeu_ps(a + j, _mm256_mul_ps(_mm256_loadu_ps(a + j), inv));
    if (w && n8 + 8 <= lim) _mm256_storeu_ps(a + n8, _mm256_mul_ps(zt, inv));   /* exp(-inf) inv = 0 after i */
    else if (w)
        _mm256_maskstore_ps(a + n8, att_mask(w), _mm256_mul_ps(zt, inv));
}

/* as softmax_row_backward_c without the per-distance sums (learned T5/EPAR use the C version); the tail's lanes are
 * written whole when row i may be written up to lim (the caller zeroes the keys after i), else w of them */
static void softmax_row_backward_avx2(float *d, const float *a, const float *fac, int i, int lim)
{
    int n = i + 1, n8 = n & ~7, w = n - n8;
    const __m256i m = att_mask(w);
    __m256 vdot = _mm256_setzero_ps(), at = vdot, dt = vdot;
    for (int j = 0; j < n8; j += 8) vdot = _mm256_add_ps(vdot, _mm256_mul_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(d + j)));
    if (w) {   /* lanes from w on: 0 */
        at = _mm256_maskload_ps(a + n8, m);
        dt = _mm256_maskload_ps(d + n8, m);
        vdot = _mm256_add_ps(vdot, _mm256_mul_ps(at, dt));
    }
    __m256 dot = _mm256_set1_ps(hsum8(vdot));
    for (int j = 0; j < n8; j += 8) {
        __m256 dz = _mm256_mul_ps(_mm256_loadu_ps(a + j), _mm256_sub_ps(_mm256_loadu_ps(d + j), dot));
        if (fac) dz = _mm256_mul_ps(dz, rev8(_mm256_loadu_ps(fac + i - j - 7)));
        _mm256_storeu_ps(d + j, dz);
    }
    if (w) {
        __m256 dz = _mm256_mul_ps(at, _mm256_sub_ps(dt, dot));
        if (fac) dz = _mm256_mul_ps(dz, tail_rev(fac, m, w));
        if (n8 + 8 <= lim) {
            _mm256_storeu_ps(d + n8, dz);
        } else {
            float db[8];
            _mm256_storeu_ps(db, dz);
            memcpy(d + n8, db, (size_t)w * sizeof(float));
        }
    }
}
/* ---- the attention's products (AVX2 + FMA; AVX-512 where the CPU has it) ----
 * One register tile: C[r][c] = alpha sum_{k < K} A(r, k) B(k, c) for r < rows <= 6 (8 with AVX-512: att_rows),
 * c < cols <= 16, with
 * A(r, k) = a[r lda + k ak] (broadcast) and B(k, c) = b[k ldb + c] (rows of B loaded as vectors). Every output
 * element is one FMA chain over k = 0, 1, ..., K-1 from 0, times alpha at the end: its bits depend on neither the
 * tile shape, the vector width nor the thread count. With strides this one tile serves all six products:
 *   scores Q K^T and dO V^T: A = the query rows, B = the keys transposed (att_kt);
 *   A V and dS K:            A = the weight rows, B = the value (key) rows, k over keys;
 *   A^T dO and dS^T Q:       A = columns of the weights (lda 1, ak = T), B = the query-side rows, k over queries.
 * B's columns beyond cols are never read (masked loads), so B may be a head's slice of a wider row. */
/* R rows (4 or 6, a constant where it is inlined) of 16 columns: 2R accumulators, two loads of b and one broadcast a
 * step. At 6 rows that is 15 of AVX2's 16 registers: each b row serves 6 rows instead of 4, and 12 chains are in flight
 * where 8 keep two FMA units only just fed. Each element is the same FMA chain whatever R, so the bits do not depend on
 * the tiling. */
static inline __attribute__((always_inline)) void att_tile_r16(int R, int K, const float *a, ptrdiff_t lda,
                                                                ptrdiff_t ak, const float *b, ptrdiff_t ldb, float *c,
                                                                ptrdiff_t ldc, float alpha)
{
    __m256 c0[6], c1[6];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) c0[r] = c1[r] = _mm256_setzero_ps();
    for (int k = 0; k < K; k++) {
        const float *ar = a + k * ak, *br = b + k * ldb;
        __m256 b0 = _mm256_loadu_ps(br), b1 = _mm256_loadu_ps(br + 8);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            __m256 x = _mm256_broadcast_ss(ar + r * lda);
            c0[r] = _mm256_fmadd_ps(x, b0, c0[r]);
            c1[r] = _mm256_fmadd_ps(x, b1, c1[r]);
        }
    }
    const __m256 al = _mm256_set1_ps(alpha);
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
        _mm256_storeu_ps(c + r * ldc, _mm256_mul_ps(c0[r], al));
        _mm256_storeu_ps(c + r * ldc + 8, _mm256_mul_ps(c1[r], al));
    }
}

/* the same for a partial tile (rows < 6 or cols < 16): the same chains, masked loads and stores */
static void att_tile_part(int K, const float *a, ptrdiff_t lda, ptrdiff_t ak, const float *b, ptrdiff_t ldb, float *c,
                          ptrdiff_t ldc, float alpha, int rows, int cols)
{
    const __m256i m0 = att_mask(cols), m1 = att_mask(cols - 8);
    __m256 acc[6][2];
    for (int r = 0; r < 6; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int k = 0; k < K; k++) {
        const float *ar = a + k * ak, *br = b + k * ldb;
        __m256 b0 = _mm256_maskload_ps(br, m0), b1 = cols > 8 ? _mm256_maskload_ps(br + 8, m1) : b0;
        for (int r = 0; r < rows; r++) {
            __m256 x = _mm256_broadcast_ss(ar + r * lda);
            acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(x, b1, acc[r][1]);
        }
    }
    const __m256 al = _mm256_set1_ps(alpha);
    for (int r = 0; r < rows; r++) {
        _mm256_maskstore_ps(c + r * ldc, m0, _mm256_mul_ps(acc[r][0], al));
        if (cols > 8) _mm256_maskstore_ps(c + r * ldc + 8, m1, _mm256_mul_ps(acc[r][1], al));
    }
}

/* A strip of tiles side by side: the same rows <= 6 of A against the column tiles c0 = 0, 16, ... < n of B and C (the
 * last one n - c0 wide). The full tiles' body is inlined in the loop: a strip costs one call, not one per tile (at
 * K = 16, the scores of a 16-wide head, a call and its dispatch were a fifth of the tile's time). */
static void att_strip6(int K, const float *a, ptrdiff_t lda, ptrdiff_t ak, const float *b, ptrdiff_t ldb, float *c,
                       ptrdiff_t ldc, float alpha, int rows, int n)
{
    int c0 = 0;
    if (rows == 6)
        for (; c0 + 16 <= n; c0 += 16) att_tile_r16(6, K, a, lda, ak, b + c0, ldb, c + c0, ldc, alpha);
    else if (rows == 4)
        for (; c0 + 16 <= n; c0 += 16) att_tile_r16(4, K, a, lda, ak, b + c0, ldb, c + c0, ldc, alpha);
    for (; c0 < n; c0 += 16) att_tile_part(K, a, lda, ak, b + c0, ldb, c + c0, ldc, alpha, rows, imin(16, n - c0));
}

/* out[j] = exp(z[j] - M) for j < n (out may be z), 8 lanes per libmvec call; the lanes past n get exp(0) and are not
 * stored. The values of epar_stream_exps16 (16 lanes). */
static void exps_avx2(float *out, const float *z, float M, int n)
{
    const __m256 vM = _mm256_set1_ps(M);
    int j = 0;
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(out + j, _ZGVdN8v_expf(_mm256_sub_ps(_mm256_loadu_ps(z + j), vM)));
    if (j < n) {
        const __m256i m = att_mask(n - j);
        __m256 x = _mm256_blendv_ps(vM, _mm256_maskload_ps(z + j, m), _mm256_castsi256_ps(m));
        _mm256_maskstore_ps(out + j, m, _ZGVdN8v_expf(_mm256_sub_ps(x, vM)));
    }
}
EPAR_TARGET_END

/* The same tile, 8 rows of 16 columns in AVX-512 registers (cols < 16: masked loads and stores), on CPUs that have
 * AVX-512: each output element is the same FMA chain over k from 0, so the bits are att_tile_r16's; at 16 lanes a
 * register the 8 chains keep both FMA units busy where 4 rows of 16 would wait on the FMA latency. */
EPAR_TARGET_BEGIN("avx512f,avx2,fma")
static inline __attribute__((always_inline)) void att_tile_8x16_512(int K, const float *a, ptrdiff_t lda,
                                                                     ptrdiff_t ak, const float *b, ptrdiff_t ldb,
                                                                     float *c, ptrdiff_t ldc, float alpha, int cols)
{
    const __mmask16 m = (__mmask16)((1u << cols) - 1u);
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
    for (int k = 0; k < K; k++) {
        const float *ar = a + k * ak;
        __m512 bv = cols == 16 ? _mm512_loadu_ps(b + k * ldb) : _mm512_maskz_loadu_ps(m, b + k * ldb);
        c0 = _mm512_fmadd_ps(_mm512_set1_ps(ar[0]), bv, c0);
        c1 = _mm512_fmadd_ps(_mm512_set1_ps(ar[lda]), bv, c1);
        c2 = _mm512_fmadd_ps(_mm512_set1_ps(ar[2 * lda]), bv, c2);
        c3 = _mm512_fmadd_ps(_mm512_set1_ps(ar[3 * lda]), bv, c3);
        c4 = _mm512_fmadd_ps(_mm512_set1_ps(ar[4 * lda]), bv, c4);
        c5 = _mm512_fmadd_ps(_mm512_set1_ps(ar[5 * lda]), bv, c5);
        c6 = _mm512_fmadd_ps(_mm512_set1_ps(ar[6 * lda]), bv, c6);
        c7 = _mm512_fmadd_ps(_mm512_set1_ps(ar[7 * lda]), bv, c7);
    }
    const __m512 al = _mm512_set1_ps(alpha);
    if (cols == 16) {   /* plain stores where the whole row is written (see gelu_block_512 on masks) */
        _mm512_storeu_ps(c, _mm512_mul_ps(c0, al));
        _mm512_storeu_ps(c + ldc, _mm512_mul_ps(c1, al));
        _mm512_storeu_ps(c + 2 * ldc, _mm512_mul_ps(c2, al));
        _mm512_storeu_ps(c + 3 * ldc, _mm512_mul_ps(c3, al));
        _mm512_storeu_ps(c + 4 * ldc, _mm512_mul_ps(c4, al));
        _mm512_storeu_ps(c + 5 * ldc, _mm512_mul_ps(c5, al));
        _mm512_storeu_ps(c + 6 * ldc, _mm512_mul_ps(c6, al));
        _mm512_storeu_ps(c + 7 * ldc, _mm512_mul_ps(c7, al));
        return;
    }
    _mm512_mask_storeu_ps(c, m, _mm512_mul_ps(c0, al));
    _mm512_mask_storeu_ps(c + ldc, m, _mm512_mul_ps(c1, al));
    _mm512_mask_storeu_ps(c + 2 * ldc, m, _mm512_mul_ps(c2, al));
    _mm512_mask_storeu_ps(c + 3 * ldc, m, _mm512_mul_ps(c3, al));
    _mm512_mask_storeu_ps(c + 4 * ldc, m, _mm512_mul_ps(c4, al));
    _mm512_mask_storeu_ps(c + 5 * ldc, m, _mm512_mul_ps(c5, al));
    _mm512_mask_storeu_ps(c + 6 * ldc, m, _mm512_mul_ps(c6, al));
    _mm512_mask_storeu_ps(c + 7 * ldc, m, _mm512_mul_ps(c7, al));
}

/* att_strip6's strip in 8-row tiles */
static void att_strip_512(int K, const float *a, ptrdiff_t lda, ptrdiff_t ak, const float *b, ptrdiff_t ldb, float *c,
                          ptrdiff_t ldc, float alpha, int n)
{
    for (int c0 = 0; c0 < n; c0 += 16) att_tile_8x16_512(K, a, lda, ak, b + c0, ldb, c + c0, ldc, alpha, imin(16, n - c0));
}

/* gelu_block_avx2 16 lanes at a time: the same operations in the same order, libmvec's 16-lane expf (whose results
 * are its 8-lane one's), the tail by masked loads and stores: the same bits, with half the calls of expf. Masked
 * loads only in the tail: on Zen 5 a masked load of a full vector made the loop slower than the 8-lane one once its
 * operands came from beyond L2 (a whole step +1 %, where plain loads give -4 %). */
static void gelu_block_512(float *out, float *dinp, const float *inp, const float *dout, float *sv, int n)
{
    const __m512 k = _mm512_set1_ps(GELU_K), a = _mm512_set1_ps(GELU_A), one = _mm512_set1_ps(1.0f);
    const __m512 m2 = _mm512_set1_ps(-2.0f), two = _mm512_set1_ps(2.0f), a3 = _mm512_set1_ps(3.0f * GELU_A);
    for (int i = 0; i < n; i += 16) {
        const int full = n - i >= 16;
        const __mmask16 m = full ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1u);
#define LD(p) (full ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p))
#define ST(p, v) (full ? _mm512_storeu_ps(p, v) : _mm512_mask_storeu_ps(p, m, v))
        __m512 x = LD(inp + i), x2 = _mm512_mul_ps(x, x), s, r;
        if (sv && !out) {
            s = LD(sv + i);
        } else {
            __m512 u = _mm512_mul_ps(k, _mm512_fmadd_ps(_mm512_mul_ps(a, x2), x, x));
            s = _mm512_div_ps(one, _mm512_add_ps(one, _ZGVeN16v_expf(_mm512_mul_ps(m2, u))));
        }
        if (out) {
            r = _mm512_mul_ps(x, s);
            if (sv) ST(sv + i, s);
        } else {
            __m512 t = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(two, x), s), _mm512_sub_ps(one, s)), k);
            r = _mm512_mul_ps(_mm512_fmadd_ps(t, _mm512_fmadd_ps(a3, x2, one), s), LD(dout + i));
        }
        ST((out ? out : dinp) + i, r);
#undef LD
#undef ST
    }
}
EPAR_TARGET_END

/* The AVX-512 forms (the 8-row tiles; GELU and the exps of the softmax and the cross-entropy in 16 lanes) where the
 * CPU has them (epar_stream_avx512) and the AVX2 forms are chosen (epar_nn_simd): the same bits as the AVX2 forms. */
static int avx512_off;   /* 1: the AVX2 forms even with AVX-512 (lib/seams.h) */

static int nn_avx512(void) { return !avx512_off && epar_nn_simd() && epar_stream_avx512(); }

int epar_nn_set_no_avx512(int off)
{
    avx512_off = off != 0;
    return nn_avx512();
}

/* libmvec 16 or 8 lanes a call (the same values), scalar expf in the C form (lib/nn.h) */
void epar_nn_exps(float *out, const float *z, float M, int n)
{
    if (nn_avx512()) epar_stream_exps16(out, z, M, n);
    else if (epar_nn_simd()) exps_avx2(out, z, M, n);
    else
        for (int j = 0; j < n; j++) out[j] = expf(z[j] - M);
}

/* the rows of a tile: 8 with AVX-512, else 6 (the callers' row blocks; the bits are the same either way). A tile never
 * crosses a query block (tile_rows), so the zeros after each row's diagonal reach every key a tile reads. */
static int att_rows(void) { return nn_avx512() ? 8 : 6; }

/* rows of the tile at row r0 < i1: at most R, and none past the end of r0's query block; with 6-row tiles the last 7
 * or 8 rows go as 4 + 3 or 4 + 4 (a tile of 1 or 2 rows runs the masked loop, slower than 4 rows of the full one) */
static inline int tile_rows(int r0, int i1, int R)
{
    int m = imin(i1, (r0 / ATT_BLOCK + 1) * ATT_BLOCK) - r0;
    return R == 6 && (m == 7 || m == 8) ? 4 : imin(R, m);
}

/* rows <= att_rows() of A against the column tiles c0 = 0, 16, ... < n (att_strip6) */
static void att_strip(int K, const float *a, ptrdiff_t lda, ptrdiff_t ak, const float *b, ptrdiff_t ldb, float *c,
                      ptrdiff_t ldc, float alpha, int rows, int n)
{
    if (rows == 8) att_strip_512(K, a, lda, ak, b, ldb, c, ldc, alpha, n);
    else if (rows > 6) {   /* the last rows of an AVX-512 block */
        att_strip6(K, a, lda, ak, b, ldb, c, ldc, alpha, 4, n);
        att_strip6(K, a + 4 * lda, lda, ak, b, ldb, c + 4 * ldc, ldc, alpha, rows - 4, n);
    } else
        att_strip6(K, a, lda, ak, b, ldb, c, ldc, alpha, rows, n);
}

/* keys of the transposed-key buffer on the stack of an attention (b, h): 64 KB; heads wider than ATT_KT / 16 = 1024
 * take the portable (cblas) path */
#define ATT_KT 16384

/* kt (hs, ldk) <- rows 0 .. n-1 of X (stride ldx) transposed; columns n .. ldk-1 zero. Whole 8 x 8 blocks go through
 * registers (AVX2 unpacks and lane permutes: moves only, no arithmetic); the edges element by element. */
__attribute__((target("avx2,fma"))) static void att_kt(float *kt, int ldk, const float *X, int ldx, int n, int hs)
{
    int n8 = n & ~7, h8 = hs & ~7;
    for (int d0 = 0; d0 < h8; d0 += 8)
        for (int j0 = 0; j0 < n8; j0 += 8) {
            const float *src = X + (size_t)j0 * ldx + d0;
            __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ldx), r2 = _mm256_loadu_ps(src + 2 * ldx);
            __m256 r3 = _mm256_loadu_ps(src + 3 * ldx), r4 = _mm256_loadu_ps(src + 4 * ldx);
            __m256 r5 = _mm256_loadu_ps(src + 5 * ldx), r6 = _mm256_loadu_ps(src + 6 * ldx);
            __m256 r7 = _mm256_loadu_ps(src + 7 * ldx);
            __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
            __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
            __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
            __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
            __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
            __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
            __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
            __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
            float *dst = kt + (size_t)d0 * ldk + j0;
            _mm256_storeu_ps(dst, _mm256_permute2f128_ps(u0, u4, 0x20));
            _mm256_storeu_ps(dst + ldk, _mm256_permute2f128_ps(u1, u5, 0x20));
            _mm256_storeu_ps(dst + 2 * (size_t)ldk, _mm256_permute2f128_ps(u2, u6, 0x20));
            _mm256_storeu_ps(dst + 3 * (size_t)ldk, _mm256_permute2f128_ps(u3, u7, 0x20));
            _mm256_storeu_ps(dst + 4 * (size_t)ldk, _mm256_permute2f128_ps(u0, u4, 0x31));
            _mm256_storeu_ps(dst + 5 * (size_t)ldk, _mm256_permute2f128_ps(u1, u5, 0x31));
            _mm256_storeu_ps(dst + 6 * (size_t)ldk, _mm256_permute2f128_ps(u2, u6, 0x31));
            _mm256_storeu_ps(dst + 7 * (size_t)ldk, _mm256_permute2f128_ps(u3, u7, 0x31));
        }
    for (int d = 0; d < hs; d++) {
        float *dst = kt + (size_t)d * ldk;
        for (int j = d < h8 ? n8 : 0; j < n; j++) dst[j] = X[(size_t)j * ldx + d];
        for (int j = n; j < ldk; j++) dst[j] = 0.0f;
    }
}

/* p (n, hs) <- rows 0 .. n-1 of X (stride ldx), packed */
static void att_pack(float *p, const float *X, int ldx, int n, int hs)
{
    for (int j = 0; j < n; j++) memcpy(p + (size_t)j * hs, X + (size_t)j * ldx, (size_t)hs * sizeof *p);
}

/* S[i][j] (row stride lds) = alpha X[i] . Y[j] for queries i in [i0, i1) and keys j in [0, i1), on the 8 x 16 tiles
 * that hold some j <= i (the others are not written; the rest of a written tile above the diagonal is garbage the
 * softmax never reads). X, Y: rows of hs floats at strides ldx, ldy. kt: Y transposed for every key (stride ldk), or
 * NULL: transposed here into buf (ATT_KT floats) a chunk of keys at a time. */
static void att_scores(float *S, int lds, const float *X, int ldx, const float *Y, int ldy, const float *kt, int ldk,
                       float *buf, int i0, int i1, int hs, float alpha)
{
    int kc = kt ? i1 : (ATT_KT / hs) & ~15, R = att_rows();
    for (int j0 = 0; j0 < i1; j0 += kc) {
        int j1 = imin(i1, j0 + kc), ld = kt ? ldk : (j1 - j0 + 15) & ~15;
        const float *B = kt ? kt : buf - j0;   /* B + j: key j's column */
        if (!kt) att_kt(buf, ld, Y + (size_t)j0 * ldy, ldy, j1 - j0, hs);
        for (int r0 = i0 + (j0 > i0 ? (j0 - i0) / R * R : 0), rows; r0 < i1; r0 += rows) {
            rows = tile_rows(r0, i1, R);
            /* the tiles c0 = j0, j0 + 16, ... below j1 and r0 + rows (the last one j1 - c0 wide) */
            int n = imin(j1, j0 + ((r0 + rows - j0 + 15) & ~15)) - j0;
            att_strip(hs, X + (size_t)r0 * ldx, ldx, 1, B + j0, ld, S + (size_t)r0 * lds + j0, lds, alpha, rows, n);
        }
    }
}

/* O[i] (row stride ldo, hs columns) = alpha sum_{j <= i} P[i][j] Y[j] for i in [i0, i1) (P: rows of stride ldp, zero
 * after i up to the end of their query block; Y: rows of stride ldy) */
static void att_values(float *O, int ldo, const float *P, int ldp, const float *Y, int ldy, int i0, int i1, int hs,
                       float alpha)
{
    for (int r0 = i0, R = att_rows(), rows; r0 < i1; r0 += rows) {
        rows = tile_rows(r0, i1, R);
        att_strip(r0 + rows, P + (size_t)r0 * ldp, ldp, 1, Y, ldy, O + (size_t)r0 * ldo, ldo, alpha, rows, hs);
    }
}

/* D[j] (row stride ldd, hs columns) = alpha sum_{i >= j} P[i][j] X[i] for j in [0, T) (P as for att_values) */
static void att_values_t(float *D, int ldd, const float *P, int ldp, const float *X, int ldx, int T, int hs, float alpha)
{
    for (int j0 = 0, R = att_rows(), rows; j0 < T; j0 += rows) {
        rows = tile_rows(j0, T, R);
        att_strip(T - j0, P + (size_t)j0 * ldp + j0, 1, ldp, X + (size_t)j0 * ldx, ldx, D + (size_t)j0 * ldd, ldd, alpha,
                  rows, hs);
    }
}

/* element block b of gelu_run */
static void gelu_block(void (*f)(float *, float *, const float *, const float *, float *, int), float *out,
                       float *dinp, const float *inp, const float *dout, float *sv, size_t n, size_t b)
{
    size_t i0 = b * EW_BLOCK;
    int w = (int)(n - i0 < EW_BLOCK ? n - i0 : EW_BLOCK);
    f(out ? out + i0 : NULL, out ? NULL : dinp + i0, inp + i0, out ? NULL : dout + i0, sv ? sv + i0 : NULL, w);
}

static void gelu_run(float *out, float *dinp, const float *inp, const float *dout, float *sv, size_t n)
{
    void (*f)(float *, float *, const float *, const float *, float *, int) =
        nn_avx512() ? gelu_block_512 : epar_nn_simd() ? gelu_block_avx2 : gelu_block_c;
    size_t nb = (n + EW_BLOCK - 1) / EW_BLOCK;
    EPAR_OMP_FOR(epar_omp_fork_elems((double)n), size_t, b, nb, gelu_block(f, out, dinp, inp, dout, sv, n, b));
}

void epar_nn_gelu_forward(float *out, const float *inp, size_t n) { gelu_run(out, NULL, inp, NULL, NULL, n); }

void epar_nn_gelu_forward_keep(float *out, float *s, const float *inp, size_t n) { gelu_run(out, NULL, inp, NULL, s, n); }

void epar_nn_gelu_backward_kept(float *dinp, const float *inp, const float *s, const float *dout, size_t n)
{
    gelu_run(NULL, dinp, inp, dout, (float *)s, n);   /* read only: the backward never writes s */
}

void epar_nn_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
    gelu_run(NULL, dinp, inp, dout, NULL, n);
}

/* what every (batch, head) of the attention forward shares */
struct att_fwd {
    float *out, *preatt, *att;
    const float *qkv;
    const struct epar_nn_attn_pos *pos;
    void (*row)(float *, const float *, const float *, const float *, const float *, int, int);
    int T, C, NH, hs, C3, fast, ldk;
    float scale;
};

/* (batch b, head h) of epar_nn_attention_forward, on thread tid of its team (its share of pos->work) */
static void att_forward_bh(const struct att_fwd *x, int b, int h, int tid)
{
    float *out = x->out, *preatt = x->preatt, *att = x->att;
    const float *qkv = x->qkv;
    const struct epar_nn_attn_pos *pos = x->pos;
    void (*row)(float *, const float *, const float *, const float *, const float *, int, int) = x->row;
    int T = x->T, C = x->C, NH = x->NH, hs = x->hs, C3 = x->C3, fast = x->fast, ldk = x->ldk;
    float scale = x->scale;
    const float *Q = qkv + (size_t)b * T * C3 + h * hs, *K = Q + C, *Vv = Q + 2 * C;
    size_t bh = ((size_t)b * NH + h) * T * T;
    float *A = att + bh, *O = out + (size_t)b * T * C + h * hs, *S = preatt ? preatt + bh : A;
    const float *fac = pos && pos->fac ? pos->fac + (size_t)h * pos->ld : NULL;
    const float *bias = pos && pos->bias ? pos->bias + (size_t)h * pos->ld : NULL;
    const float *pairh = pos && pos->pair ? pos->pair + (size_t)h * pos->pair_head : NULL;
    if (pos && pos->head_off && pos->head_off[h]) {   /* a removed head: weights and output 0 */
        memset(A, 0, (size_t)T * T * sizeof *A);
        for (int t = 0; t < T; t++) memset(O + (size_t)t * C, 0, (size_t)hs * sizeof *O);
        return;
    }
    if (pos && pos->own_forward) {   /* the mechanism's own form (lib/nnpos.h) */
        pos->own_forward(pos->mech, pos->layer, h, Q, K, Vv, S, A, O, pos->work + (size_t)tid * pos->own_work, T, C, hs,
                         scale);
        return;
    }
    float kbuf[ATT_KT], vpk[ATT_KT];   /* K transposed (att_scores), V packed (unused on the portable path) */
    const float *kt = NULL;
    if (fast && (size_t)ldk * hs <= ATT_KT) {   /* every key at once, else a chunk at a time */
        att_kt(kbuf, ldk, K, C3, T, hs);
        kt = kbuf;
    }
    /* V's rows of this head packed together when they span several cache lines (hs >= 32: the products then
     * read them in sequence; measured 6-25 % faster at hs 32 and 64, slower at hs 16) */
    const float *vp = Vv;
    int vld = C3;
    if (fast && hs >= 32 && (size_t)T * hs <= ATT_KT) {
        att_pack(vpk, Vv, C3, T, hs);
        vp = vpk;
        vld = hs;
    }
    /* a bias that reads q and k (the relative tables): its per-(b, h) terms in the thread's work */
    float *rw = pos && pos->rel_forward ? pos->work + (size_t)tid * pos->own_work : NULL;
    if (rw) pos->rel_forward(pos->mech, pos->layer, h, Q, K, rw, T, C, hs, scale);
    for (int i0 = 0; i0 < T; i0 += ATT_BLOCK) {
        int i1 = imin(T, i0 + ATT_BLOCK), ib = i1 - i0;
        /* pass 1: scaled scores of the block's queries against keys 0 .. i1-1 (into A when not kept) */
        if (fast) att_scores(S, T, Q, C3, K, C3, kt, ldk, kbuf, i0, i1, hs, scale);
        else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, ib, i1, hs, scale, Q + (size_t)i0 * C3, C3, K,
                         C3, 0.0f, S + (size_t)i0 * T, T);
        /* pass 2: position factor and bias, causal row softmax */
        for (int i = i0; i < i1; i++) {
            float *a = A + (size_t)i * T;
            const float *rb = rw ? pos->rel_row(pos->mech, rw, bias, i, T, hs) : bias;
            row(a, S + (size_t)i * T, fac, rb, pairh ? pairh + (size_t)i * pos->ld : NULL, i, i1);
            /* zeros only where pass 3 and the backward's dV product read them (keys < i1) */
            int g = (i + 8) & ~7;   /* the AVX2 row writes its last 8-lane group whole when it fits */
            for (int j = row == softmax_row_avx2 && g <= i1 ? g : i + 1; j < i1; j++) a[j] = 0.0f;
        }
        /* pass 3: weighted sum of the values of keys 0 .. i1-1 */
        if (fast) att_values(O, C, A, T, vp, vld, i0, i1, hs, 1.0f);
        else cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ib, hs, i1, 1.0f, A + (size_t)i0 * T, T, Vv,
                         C3, 0.0f, O + (size_t)i0 * C, C);
    }
}

void epar_nn_attention_forward(float *out, float *preatt, float *att, const float *qkv,
                               const struct epar_nn_attn_pos *pos, int B, int T, int C, int NH)
{
    /* out (B, T, C), preatt (or NULL) and att (B, NH, T, T), qkv (B, T, 3C); head h uses columns h*hs .. of q, k, v */
    int hs = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    void (*row)(float *, const float *, const float *, const float *, const float *, int, int) =
        epar_nn_simd() ? softmax_row_avx2 : softmax_row_c;
    int nt = pos && (pos->rel_forward || pos->own_forward) ? imin(omp_get_max_threads(), pos->nwork)
                                                           : omp_get_max_threads();
    int fast = epar_nn_simd() && hs <= ATT_KT / 16, ldk = (T + 15) & ~15;
    struct att_fwd x = {out, preatt, att, qkv, pos, row, T, C, NH, hs, C3, fast, ldk, scale};
    if (!fork_macs((double)B * T * T * C) || nt < 2) {
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) att_forward_bh(&x, b, h, 0);
        return;
    }
#pragma omp parallel for collapse(2) schedule(dynamic) num_threads(nt)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) att_forward_bh(&x, b, h, omp_get_thread_num());
}

/* what every (batch, head) of the attention backward shares */
struct att_bwd {
    float *dqkv, *datt;
    const float *dout, *qkv, *preatt, *att;
    const struct epar_nn_attn_pos *pos;
    int T, C, NH, hs, C3, simd, fast, ldk;
    float scale;
};

/* the (b, h)'s share of a bias that reads q and k: dQ, dK and its gradient slot from dz (in dA) */
static void rel_backward_bh(const struct epar_nn_attn_pos *pos, const float *dA, const float *Q, const float *K,
                            float *dQ, float *dK, int b, int h, int NH, int T, int C, int hs, float scale, int tid)
{
    pos->rel_backward(pos->mech, pos->layer, h, dA, Q, K, dQ, dK, pos->grel + ((size_t)b * NH + h) * pos->own_grad,
                      pos->work + (size_t)tid * pos->own_work, T, C, hs, scale);
}

/* (batch b, head h) of epar_nn_attention_backward, on thread tid of its team (its dA scratch, its share of pos->work) */
static void att_backward_bh(const struct att_bwd *x, int b, int h, int tid)
{
    float *dqkv = x->dqkv, *datt = x->datt;
    const float *dout = x->dout, *qkv = x->qkv, *preatt = x->preatt, *att = x->att;
    const struct epar_nn_attn_pos *pos = x->pos;
    int T = x->T, C = x->C, NH = x->NH, hs = x->hs, C3 = x->C3, simd = x->simd, fast = x->fast, ldk = x->ldk;
    float scale = x->scale;
    float *dA = datt + (size_t)tid * T * T;
    const float *Q = qkv + (size_t)b * T * C3 + h * hs, *K = Q + C, *Vv = Q + 2 * C;
    float *dQ = dqkv + (size_t)b * T * C3 + h * hs, *dK = dQ + C, *dV = dQ + 2 * C;
    const float *dO = dout + (size_t)b * T * C + h * hs;
    size_t bh = ((size_t)b * NH + h) * T * T;
    const float *S = preatt + bh, *A = att + bh;
    const float *fac = pos && pos->fac ? pos->fac + (size_t)h * pos->ld : NULL;
    float *gf = pos && pos->gfac ? pos->gfac + ((size_t)b * NH + h) * T : NULL;
    float *gb = pos && pos->gbias ? pos->gbias + ((size_t)b * NH + h) * T : NULL;
    float *gp = pos && pos->gpair && !fac ? pos->gpair + ((size_t)b * NH + h) * T * T : NULL;
    if (gf) memset(gf, 0, (size_t)T * sizeof *gf);
    if (gb) memset(gb, 0, (size_t)T * sizeof *gb);
    if (pos && pos->head_off && pos->head_off[h]) {   /* a removed head: no gradient to its q, k, v */
        for (int t = 0; t < T; t++) {
            memset(dQ + (size_t)t * C3, 0, (size_t)hs * sizeof *dQ);
            memset(dK + (size_t)t * C3, 0, (size_t)hs * sizeof *dK);
            memset(dV + (size_t)t * C3, 0, (size_t)hs * sizeof *dV);
        }
        return;
    }
    if (pos && pos->own_backward) {   /* the mechanism's own form (lib/nnpos.h) */
        pos->own_backward(pos->mech, pos->layer, h, Q, K, Vv, S, A, dO, dQ, dK, dV, dA,
                          pos->grel && pos->own_grad ? pos->grel + ((size_t)b * NH + h) * pos->own_grad : NULL,
                          pos->work + (size_t)tid * pos->own_work, T, C, hs, scale);
        return;
    }
    if (fast) {
        /* dA = dO V^T on the causal tiles, then the softmax backward row by row (dS in place in dA), then the
         * four products of lib/nn's own tiles over all rows at once: dV = A^T dO, dQ = scale dS K,
         * dK = scale dS^T Q (each element one FMA chain in a fixed order) */
        float vbuf[ATT_KT], pk[3][ATT_KT];   /* V transposed; dO, K, Q packed */
        const float *vt = NULL;
        if ((size_t)ldk * hs <= ATT_KT) {
            att_kt(vbuf, ldk, Vv, C3, T, hs);
            vt = vbuf;
        }
        for (int i0 = 0; i0 < T; i0 += ATT_BLOCK) {
            int i1 = imin(T, i0 + ATT_BLOCK);
            att_scores(dA, T, dO, C, Vv, C3, vt, ldk, vbuf, i0, i1, hs, 1.0f);
            for (int i = i0; i < i1; i++) {
                float *d = dA + (size_t)i * T;
                if (!gf && !gb) softmax_row_backward_avx2(d, A + (size_t)i * T, fac, i, i1);
                else softmax_row_backward_c(d, A + (size_t)i * T, S + (size_t)i * T, fac, gf, gb, i);
                if (gp) memcpy(gp + (size_t)i * T, d, (size_t)(i + 1) * sizeof *d);
                for (int j = i + 1; j < i1; j++) d[j] = 0.0f;
            }
        }
        const float *dOp = dO, *Kp = K, *Qp = Q;
        int ldo = C, ldq = C3;
        if (hs >= 32 && (size_t)T * hs <= ATT_KT) {   /* as V in the forward */
            att_pack(pk[0], dO, C, T, hs);
            att_pack(pk[1], K, C3, T, hs);
            att_pack(pk[2], Q, C3, T, hs);
            dOp = pk[0], Kp = pk[1], Qp = pk[2];
            ldo = ldq = hs;
        }
        att_values_t(dV, C3, A, T, dOp, ldo, T, hs, 1.0f);
        att_values(dQ, C3, dA, T, Kp, ldq, 0, T, hs, scale);
        att_values_t(dK, C3, dA, T, Qp, ldq, T, hs, scale);
        if (pos && pos->rel_backward) rel_backward_bh(pos, dA, Q, K, dQ, dK, b, h, NH, T, C, hs, scale, tid);
        return;
    }
    /* last query block first: it reaches every key, so its dK, dV products set them (beta = 0) and
     * the other blocks add to them (no zeroing pass over dK, dV) */
    for (int i0 = (T - 1) / ATT_BLOCK * ATT_BLOCK; i0 >= 0; i0 -= ATT_BLOCK) {
        int i1 = imin(T, i0 + ATT_BLOCK), ib = i1 - i0;
        float beta = i1 == T ? 0.0f : 1.0f;
        /* dA = dO V^T and dV += A^T dO over keys 0 .. i1-1 */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, ib, i1, hs, 1.0f, dO + (size_t)i0 * C, C, Vv, C3,
                    0.0f, dA + (size_t)i0 * T, T);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, i1, hs, ib, 1.0f, A + (size_t)i0 * T, T,
                    dO + (size_t)i0 * C, C, beta, dV, C3);
        /* softmax backward dz, the position tables' sums, then ds = dz * factor (in place in dA) */
        for (int i = i0; i < i1; i++) {
            float *d = dA + (size_t)i * T;
            if (simd && !gf && !gb) softmax_row_backward_avx2(d, A + (size_t)i * T, fac, i, i1);
            else softmax_row_backward_c(d, A + (size_t)i * T, S + (size_t)i * T, fac, gf, gb, i);
            if (gp) memcpy(gp + (size_t)i * T, d, (size_t)(i + 1) * sizeof *d);
            for (int j = i + 1; j < i1; j++) d[j] = 0.0f;
        }
        /* dQ = scale dS K, dK += scale dS^T Q */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ib, hs, i1, scale, dA + (size_t)i0 * T, T, K, C3,
                    0.0f, dQ + (size_t)i0 * C3, C3);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, i1, hs, ib, scale, dA + (size_t)i0 * T, T,
                    Q + (size_t)i0 * C3, C3, beta, dK, C3);
    }
    if (pos && pos->rel_backward) rel_backward_bh(pos, dA, Q, K, dQ, dK, b, h, NH, T, C, hs, scale, tid);
}

void epar_nn_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *preatt,
                                const float *att, const struct epar_nn_attn_pos *pos, float *datt, int nscratch,
                                int B, int T, int C, int NH)
{
    /* dqkv (B, T, 3C), dout (B, T, C), qkv (B, T, 3C), preatt and att (B, NH, T, T), datt (nscratch, T, T) */
    int hs = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    int nt = imin(omp_get_max_threads(), nscratch), simd = epar_nn_simd();
    int fast = simd && hs <= ATT_KT / 16, ldk = (T + 15) & ~15;
    struct att_bwd x = {dqkv, datt, dout, qkv, preatt, att, pos, T, C, NH, hs, C3, simd, fast, ldk, scale};
    if (!fork_macs((double)B * T * T * C) || nt < 2) {
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) att_backward_bh(&x, b, h, 0);
        return;
    }
#pragma omp parallel for collapse(2) schedule(dynamic) num_threads(nt)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) att_backward_bh(&x, b, h, omp_get_thread_num());
}

/* One row of the softmax cross-entropy: p (V) = softmax(z) in place allowed; returns ln sum_v exp(z_v - mx) in double.
 * exp in float (libm's expf, or libmvec's 8-lane expf on the AVX2 path), the sum of the exps and the division in
 * double. Before 2026-11-25 each exp was libm's double exp: 5 % of a small model's step (V = 63). */
static double ce_row_c(float *p, const float *z, float mx, int V)
{
    double sum = 0.0;
    for (int v = 0; v < V; v++) {
        float e = expf(z[v] - mx);
        p[v] = e;
        sum += e;
    }
    for (int v = 0; v < V; v++) p[v] = (float)((double)p[v] / sum);
    return log(sum);
}

EPAR_TARGET_BEGIN("avx2,fma")
/* ce_row_c 8 lanes at a time: the sum in two 4-lane double accumulators added in a fixed order; with AVX-512 the
 * exps 16 at a time first (epar_stream_exps16: the same values), then the same sums over them */
static double ce_row_avx2(float *p, const float *z, float mx, int V)
{
    const __m256 vm = _mm256_set1_ps(mx);
    __m256d s0 = _mm256_setzero_pd(), s1 = s0;
    int v = 0, wide = nn_avx512();
    if (wide) epar_stream_exps16(p, z, mx, V);
    for (; v + 8 <= V; v += 8) {
        __m256 e;
        if (wide) {
            e = _mm256_loadu_ps(p + v);
        } else {
            e = _ZGVdN8v_expf(_mm256_sub_ps(_mm256_loadu_ps(z + v), vm));
            _mm256_storeu_ps(p + v, e);
        }
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    if (v < V) {   /* the tail: exp(0) in the padding lanes, then 0 (an exp of -inf there, libmvec's scalar redo) */
        const __m256i m = att_mask(V - v);
        __m256 e;
        if (wide) {
            e = _mm256_maskload_ps(p + v, m);
        } else {
            __m256 x = _mm256_blendv_ps(vm, _mm256_maskload_ps(z + v, m), _mm256_castsi256_ps(m));
            e = _mm256_and_ps(_ZGVdN8v_expf(_mm256_sub_ps(x, vm)), _mm256_castsi256_ps(m));
            float eb[8];
            _mm256_storeu_ps(eb, e);
            memcpy(p + v, eb, (size_t)(V - v) * sizeof(float));
        }
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    __m256d s = _mm256_add_pd(s0, s1);
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    double sum = _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
    const __m256d vs = _mm256_set1_pd(sum);
    for (v = 0; v + 8 <= V; v += 8) {
        __m256 e = _mm256_loadu_ps(p + v);
        __m128 lo = _mm256_cvtpd_ps(_mm256_div_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(e)), vs));
        __m128 hi = _mm256_cvtpd_ps(_mm256_div_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)), vs));
        _mm256_storeu_ps(p + v, _mm256_set_m128(hi, lo));
    }
    for (; v < V; v++) p[v] = (float)((double)p[v] / sum);
    return log(sum);
}
EPAR_TARGET_END

/* row r of epar_nn_crossentropy_forward */
static void ce_forward_row(double (*row)(float *, const float *, float, int), float *probs, float *losses,
                           unsigned char *correct, const float *logits, const int *targets, const float *mask, int V, int r)
{
    const float *z = logits + (size_t)r * V;
    float *p = probs + (size_t)r * V;
    float mx = z[0];
    int arg = 0;
    for (int v = 1; v < V; v++)
        if (z[v] > mx) { mx = z[v]; arg = v; }
    int t = targets ? targets[r] : -1;
    double zt = t >= 0 ? (double)z[t] : 0.0;   /* read before z is overwritten (in place) */
    double lse = row(p, z, mx, V);
    double w = mask ? mask[r] : 1.0;
    if (losses) losses[r] = t >= 0 && w != 0.0 ? (float)(w * ((double)mx + lse - zt)) : 0.0f;
    if (correct) correct[r] = t >= 0 && arg == t;
}

void epar_nn_crossentropy_forward(float *probs, float *losses, unsigned char *correct, const float *logits,
                                  const int *targets, const float *mask, int N, int V)
{
    /* probs and logits (N, V) (may alias), losses and correct (N), targets and mask (N) */
    double (*row)(float *, const float *, float, int) = epar_nn_simd() ? ce_row_avx2 : ce_row_c;
    EPAR_OMP_FOR(epar_omp_fork_elems((double)N * V), int, r, N,
                 ce_forward_row(row, probs, losses, correct, logits, targets, mask, V, r));
}

/* row r of epar_nn_crossentropy_backward */
static void ce_backward_row(float *dlogits, const float *probs, const int *targets, const float *mask, double scale,
                            int V, int r)
{
    float w = (float)((mask ? mask[r] : 1.0f) * scale);
    const float *p = probs + (size_t)r * V;
    float *d = dlogits + (size_t)r * V;
    int t = targets[r];
    for (int v = 0; v < V; v++) d[v] = (p[v] - (v == t ? 1.0f : 0.0f)) * w;
}

void epar_nn_crossentropy_backward(float *dlogits, const float *probs, const int *targets, const float *mask,
                                   double scale, int N, int V)
{
    EPAR_OMP_FOR(epar_omp_fork_elems((double)N * V), int, r, N,
                 ce_backward_row(dlogits, probs, targets, mask, scale, V, r));
}

/* ------------------------------------------------------------------------------------------------ */
/* the model                                                                                         */

static const char *const tensor_names[EPAR_NN_NTENSORS] = {
    "wte", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb", "ln2w", "ln2b", "fcw", "fcb", "fcprojw",
    "fcprojb", "lnfw", "lnfb", "pos"};

const char *epar_nn_tensor_name(int k) { return k >= 0 && k < EPAR_NN_NTENSORS ? tensor_names[k] : "?"; }

int epar_nn_decayed(int k)
{
    return k == EPAR_NN_WTE || k == EPAR_NN_QKVW || k == EPAR_NN_ATTPROJW || k == EPAR_NN_FCW || k == EPAR_NN_FCPROJW;
}

int epar_nn_config_validate(const struct epar_nn_config *c)
{
    if (c->V < 2 || c->V > (1 << 24)) return epar_err_set(EPAR_EINVAL, "vocabulary must be in [2, 16777216], got '%d'", c->V);
    if (c->Tmax < 1 || c->Tmax > (1 << 16))
        return epar_err_set(EPAR_EINVAL, "length must be in [1, 65536], got '%d'", c->Tmax);
    if (c->Bmax < 1 || c->Bmax > (1 << 16)) return epar_err_set(EPAR_EINVAL, "batch must be in [1, 65536], got '%d'", c->Bmax);
    if (c->C < 1 || c->C > (1 << 16)) return epar_err_set(EPAR_EINVAL, "dim must be in [1, 65536], got '%d'", c->C);
    if (c->NH < 1 || c->C % c->NH) {
        epar_err_set(EPAR_EINVAL, "heads must divide dim, got heads '%d' and dim '%d'", c->NH, c->C);
        epar_err_hint("choose --heads among the divisors of --dim");
        return EPAR_EINVAL;
    }
    if (c->NL < 1 || c->NL > 1024) return epar_err_set(EPAR_EINVAL, "layers must be in [1, 1024], got '%d'", c->NL);
    if (c->F < 1 || c->F > (1 << 20)) return epar_err_set(EPAR_EINVAL, "mlp must be in [1, 1048576], got '%d'", c->F);
    if (!(c->init_sd >= 0) || !isfinite(c->init_sd))
        return epar_err_set(EPAR_EINVAL, "init_sd must be a finite number >= 0, got '%g'", c->init_sd);
    int st = epar_nnpos_validate(c->pos, &c->pos_settings, c->C / c->NH);
    return st ? st : epar_nnpos_check_heads(c->pos, &c->pos_settings, c->NH);
}

int epar_nn_kv_heads(const struct epar_nn_config *c) { return epar_nnpos_kv_heads(c->pos, &c->pos_settings, c->NH); }

int epar_nn_qkv_width(const struct epar_nn_config *c) { return c->C + 2 * epar_nn_kv_heads(c) * (c->C / c->NH); }

/* GQA: 1 when the projection's output is narrower than q, k, v of every head */
static int shared_kv(const struct epar_nn_config *c) { return epar_nn_kv_heads(c) < c->NH; }

/* qkv (N, 3C) <- the projection's output c (N, W = C + 2 G hs): q as is, k and v of query head h from K/V head
 * floor(h / (NH/G)) */
static void kv_expand_row(float *qkv, const float *qc, int C, int NH, int G, int hs, int n)
{
    int W = C + 2 * G * hs;
    float *d = qkv + (size_t)n * 3 * C;
    const float *x = qc + (size_t)n * W;
    memcpy(d, x, (size_t)C * sizeof *d);
    for (int h = 0; h < NH; h++) {
        int g = epar_mech_gqa_group(h, NH, G);
        memcpy(d + C + h * hs, x + C + g * hs, (size_t)hs * sizeof *d);
        memcpy(d + 2 * C + h * hs, x + C + (G + g) * hs, (size_t)hs * sizeof *d);
    }
}

static void kv_expand(float *qkv, const float *qc, int N, int C, int NH, int G, int hs)
{
    EPAR_OMP_FOR(epar_omp_fork_elems((double)N * 3 * C), int, n, N, kv_expand_row(qkv, qc, C, NH, G, hs, n));
}

/* its transpose: dc (N, W) <- dq as is, dk and dv of K/V head g the sums over its query heads (in head order) */
static void kv_reduce_row(float *dqc, const float *dqkv, int C, int NH, int G, int hs, int n)
{
    int W = C + 2 * G * hs;
    const float *d = dqkv + (size_t)n * 3 * C;
    float *x = dqc + (size_t)n * W;
    memcpy(x, d, (size_t)C * sizeof *x);
    memset(x + C, 0, (size_t)2 * G * hs * sizeof *x);
    for (int h = 0; h < NH; h++) {
        int g = epar_mech_gqa_group(h, NH, G);
        for (int t = 0; t < hs; t++) {
            x[C + g * hs + t] += d[C + h * hs + t];
            x[C + (G + g) * hs + t] += d[2 * C + h * hs + t];
        }
    }
}

static void kv_reduce(float *dqc, const float *dqkv, int N, int C, int NH, int G, int hs)
{
    EPAR_OMP_FOR(epar_omp_fork_elems((double)N * 3 * C), int, n, N, kv_reduce_row(dqc, dqkv, C, NH, G, hs, n));
}

static void param_sizes(const struct epar_nn_config *c, size_t n_pos, size_t *sz)
{
    size_t V = c->V, C = c->C, L = c->NL, F = c->F, W = (size_t)epar_nn_qkv_width(c);
    sz[EPAR_NN_WTE] = V * C;
    sz[EPAR_NN_LN1W] = sz[EPAR_NN_LN1B] = L * C;
    sz[EPAR_NN_QKVW] = L * W * C;
    sz[EPAR_NN_QKVB] = L * W;
    sz[EPAR_NN_ATTPROJW] = L * C * C;
    sz[EPAR_NN_ATTPROJB] = L * C;
    sz[EPAR_NN_LN2W] = sz[EPAR_NN_LN2B] = L * C;
    sz[EPAR_NN_FCW] = L * F * C;
    sz[EPAR_NN_FCB] = L * F;
    sz[EPAR_NN_FCPROJW] = L * C * F;
    sz[EPAR_NN_FCPROJB] = L * C;
    sz[EPAR_NN_LNFW] = sz[EPAR_NN_LNFB] = C;
    sz[EPAR_NN_POS] = n_pos;
}

/* activation floats for (B, T) = (Bmax, Tmax); the order of the carve in point_acts */
static size_t act_floats(const struct epar_nn_config *c, size_t *out_att)
{
    size_t BT = (size_t)c->Bmax * c->Tmax, L = c->NL, C = c->C;
    size_t att = L * c->Bmax * c->NH * (size_t)c->Tmax * c->Tmax;
    if (out_att) *out_att = att;
    return BT * C                    /* encoded */
           + 4 * L * BT * C          /* ln1, atty, residual2, ln2 */
           + L * BT * 3 * C          /* qkv */
           + 2 * att                 /* preatt, att */
           + 3 * L * BT * c->F       /* fch, fch_gelu, fch_s */
           + L * BT * C              /* residual3 */
           + BT * C                  /* lnf */
           + 4 * L * BT              /* ln1/ln2 mean, rstd */
           + 2 * BT                  /* lnf mean, rstd */
           + BT * c->V               /* probs */
           + BT;                     /* losses */
}

static size_t part_floats(const struct epar_nn_config *c)
{
    size_t w = 2 * (size_t)c->C;
    if ((size_t)3 * c->C > w) w = (size_t)3 * c->C;
    if ((size_t)c->F > w) w = c->F;
    if ((size_t)c->V > w) w = c->V;
    return (size_t)nblocks(c->Bmax * c->Tmax, ROWS) * w;
}

static size_t scratch_floats(const struct epar_nn_config *c, int nthreads)
{
    size_t BT = (size_t)c->Bmax * c->Tmax, tf, bhf;
    epar_nnpos_scratch(c->pos, &c->pos_settings, c->Tmax, c->C / c->NH, &tf, &bhf);
    return BT * (3 * (size_t)c->C + 3 * (size_t)c->C + c->F)   /* dres, dln, datty; dqkv; dfch */
           + (size_t)nthreads * c->Tmax * c->Tmax                /* datt */
           + 2 * (size_t)c->Bmax * c->NH * c->Tmax               /* gfac, gbias */
           + part_floats(c)
           + (size_t)nthreads * tf + (size_t)c->Bmax * c->NH * bhf   /* rwork, grel */
           + (shared_kv(c) ? BT * (size_t)epar_nn_qkv_width(c) : 0);  /* qkvc */
}

double epar_nn_bytes(const struct epar_nn_config *c, int nthreads)
{
    size_t sz[EPAR_NN_NTENSORS], np = 0;
    /* upper bound on n_pos over the trainable mechanisms (the last term: C (C + 2) per layer, Transformer-XL's) */
    param_sizes(c, (size_t)c->Tmax * c->C + (size_t)c->NL * c->NH * 3 + (size_t)c->NL * c->C * (c->C + 2), sz);
    for (int k = 0; k < EPAR_NN_NTENSORS; k++) np += sz[k];
    double BT = (double)c->Bmax * c->Tmax;
    return 4.0 * (2.0 * np + (double)act_floats(c, NULL) + (double)scratch_floats(c, nthreads)) + BT * 9.0;
}

static void point_params(float *mem, const size_t *sz, struct epar_nn_params *p)
{
    float **ptr[EPAR_NN_NTENSORS] = {&p->wte, &p->ln1w, &p->ln1b, &p->qkvw, &p->qkvb, &p->attprojw, &p->attprojb,
                                     &p->ln2w, &p->ln2b, &p->fcw, &p->fcb, &p->fcprojw, &p->fcprojb, &p->lnfw,
                                     &p->lnfb, &p->pos};
    for (int k = 0; k < EPAR_NN_NTENSORS; k++) {
        *ptr[k] = mem;
        mem += sz[k];
    }
}

static void point_acts(float *mem, const struct epar_nn_config *c, struct epar_nn_acts *a)
{
    size_t BT = (size_t)c->Bmax * c->Tmax, L = c->NL, C = c->C, att;
    act_floats(c, &att);
#define CARVE(field, n) do { a->field = mem; mem += (n); } while (0)
    CARVE(encoded, BT * C);
    CARVE(ln1, L * BT * C);
    CARVE(atty, L * BT * C);
    CARVE(residual2, L * BT * C);
    CARVE(ln2, L * BT * C);
    CARVE(qkv, L * BT * 3 * C);
    CARVE(preatt, att);
    CARVE(att, att);
    CARVE(fch, L * BT * c->F);
    CARVE(fch_gelu, L * BT * c->F);
    CARVE(fch_s, L * BT * c->F);
    CARVE(residual3, L * BT * C);
    CARVE(lnf, BT * C);
    CARVE(ln1_mean, L * BT);
    CARVE(ln1_rstd, L * BT);
    CARVE(ln2_mean, L * BT);
    CARVE(ln2_rstd, L * BT);
    CARVE(lnf_mean, BT);
    CARVE(lnf_rstd, BT);
    CARVE(probs, BT * c->V);
    CARVE(losses, BT);
#undef CARVE
}

static void point_scratch(float *mem, const struct epar_nn_config *c, int nthreads, struct epar_nn_scratch *s)
{
    size_t BT = (size_t)c->Bmax * c->Tmax, C = c->C;
#define CARVE(field, n) do { s->field = mem; mem += (n); } while (0)
    CARVE(dres, BT * C);
    CARVE(dln, BT * C);
    CARVE(datty, BT * C);
    CARVE(dqkv, BT * 3 * C);
    CARVE(dfch, BT * c->F);
    CARVE(datt, (size_t)nthreads * c->Tmax * c->Tmax);
    CARVE(gfac, (size_t)c->Bmax * c->NH * c->Tmax);
    CARVE(gbias, (size_t)c->Bmax * c->NH * c->Tmax);
    CARVE(part, part_floats(c));
    size_t tf, bhf;
    epar_nnpos_scratch(c->pos, &c->pos_settings, c->Tmax, (int)(C / c->NH), &tf, &bhf);
    CARVE(rwork, (size_t)nthreads * tf);
    CARVE(grel, (size_t)c->Bmax * c->NH * bhf);
    CARVE(qkvc, shared_kv(c) ? BT * (size_t)epar_nn_qkv_width(c) : 0);
#undef CARVE
}

/* n zeroed floats for the activations and the backward's scratch (tens of MB: every pass of a step walks them): from
 * 4 MiB on, 2 MiB aligned with transparent huge pages asked for (MADV_HUGEPAGE; the kernel may decline: then they
 * are ordinary pages, as calloc's). free() releases it either way. */
static float *alloc_big(size_t n, const char *what)
{
    const size_t huge = (size_t)2 << 20;
    if (n < ((size_t)1 << 20) || n > (SIZE_MAX - huge) / sizeof(float)) return epar_err_alloc(n, sizeof(float), what);
    size_t bytes = n * sizeof(float), len = (bytes + huge - 1) & ~(huge - 1);
    void *p = NULL;
    if (posix_memalign(&p, huge, len)) return epar_err_alloc(n, sizeof(float), what);
    madvise(p, len, MADV_HUGEPAGE);
    memset(p, 0, bytes);
    return p;
}

int epar_nn_alloc(struct epar_nn *m, const struct epar_nn_config *c)
{
    memset(m, 0, sizeof *m);
    int st = epar_nn_config_validate(c);
    if (st) return st;
    m->cfg = *c;
    if ((st = epar_nnpos_alloc(&m->pos, c->pos, &c->pos_settings, c->Tmax, c->C, c->NH, c->NL))) return st;
    param_sizes(c, epar_nnpos_n_params(&m->pos), m->sizes);
    for (int k = 0; k < EPAR_NN_NTENSORS; k++) {
        m->offsets[k] = m->n_params;
        m->n_params += m->sizes[k];
    }
    m->nthreads = omp_get_max_threads();
    size_t BT = (size_t)c->Bmax * c->Tmax;
    st = EPAR_ENOMEM;
    if (!(m->params_mem = epar_err_alloc(m->n_params, sizeof(float), "the model parameters"))) goto fail;
    if (!(m->grads_mem = epar_err_alloc(m->n_params, sizeof(float), "the gradients"))) goto fail;
    if (!(m->acts_mem = alloc_big(act_floats(c, NULL), "the activations"))) goto fail;
    if (!(m->scratch_mem = alloc_big(scratch_floats(c, m->nthreads), "the backward scratch")))
        goto fail;
    if (!(m->a.correct = epar_err_alloc(BT, 1, "the predictions"))) goto fail;
    if (!(m->targets = epar_err_alloc(BT, sizeof *m->targets, "the targets"))) goto fail;
    if (!(m->tokens = epar_err_alloc(BT, sizeof *m->tokens, "the tokens"))) goto fail;
    if (!(m->mask = epar_err_alloc(BT, sizeof *m->mask, "the loss mask"))) goto fail;
    point_params(m->params_mem, m->sizes, &m->p);
    point_params(m->grads_mem, m->sizes, &m->g);
    point_acts(m->acts_mem, c, &m->a);
    point_scratch(m->scratch_mem, c, m->nthreads, &m->s);
    m->pos.theta = m->sizes[EPAR_NN_POS] ? m->p.pos : NULL;
    m->pos.dtheta = m->sizes[EPAR_NN_POS] ? m->g.pos : NULL;
    return EPAR_OK;
fail:
    epar_nn_free(m);
    return st;
}

void epar_nn_free(struct epar_nn *m)
{
    epar_nnpos_free(&m->pos);
    free(m->params_mem); free(m->grads_mem); free(m->acts_mem); free(m->scratch_mem);
    free(m->a.correct); free(m->targets); free(m->tokens); free(m->mask);
    m->params_mem = m->grads_mem = m->acts_mem = m->scratch_mem = NULL;
    m->a.correct = NULL;
    m->targets = m->tokens = NULL;
    m->mask = NULL;
}

static void fill_normal(gsl_rng *r, float *x, size_t n, double sd)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)gsl_ran_gaussian_ziggurat(r, sd);
}

/* orthogonal-qk: layer l's q rows h hs + c = column c of W_Q^h (C, hs), the k rows likewise; their biases stay 0 */
static int init_frozen_qk(struct epar_nn *m, gsl_rng *r)
{
    const struct epar_nn_config *c = &m->cfg;
    int C = c->C, NH = c->NH, hs = C / NH, W = epar_nn_qkv_width(c);
    double *Wq = malloc((size_t)NH * C * hs * sizeof *Wq), *Wk = malloc((size_t)NH * C * hs * sizeof *Wk);
    int st = Wq && Wk ? EPAR_OK : epar_err_set(EPAR_ENOMEM, "out of memory drawing the frozen q, k projections");
    for (int l = 0; l < c->NL && !st; l++) {
        if ((st = epar_mech_orthogonal_qk_draw(r, C, hs, NH, (int)m->pos.mp[0], Wq, Wk))) break;
        float *q = m->p.qkvw + (size_t)l * W * C, *k = q + (size_t)C * C;
        for (int h = 0; h < NH; h++)
            for (int o = 0; o < hs; o++)
                for (int i = 0; i < C; i++) {
                    q[(size_t)(h * hs + o) * C + i] = (float)Wq[((size_t)h * C + i) * hs + o];
                    k[(size_t)(h * hs + o) * C + i] = (float)Wk[((size_t)h * C + i) * hs + o];
                }
    }
    free(Wq);
    free(Wk);
    return st;
}

int epar_nn_frozen(const struct epar_nn *m, size_t *offset, size_t *size, int max)
{
    const struct epar_nn_config *c = &m->cfg;
    if (!epar_nnpos_frozen_qk(m->pos.id)) return 0;
    int n = 0, C = c->C, W = epar_nn_qkv_width(c);
    for (int l = 0; l < c->NL && n < max; l++) {   /* the tensors in params_mem's order: QKVW before QKVB */
        offset[n] = m->offsets[EPAR_NN_QKVW] + (size_t)l * W * C;
        size[n++] = (size_t)2 * C * C;
    }
    for (int l = 0; l < c->NL && n < max; l++) {
        offset[n] = m->offsets[EPAR_NN_QKVB] + (size_t)l * W;
        size[n++] = (size_t)2 * C;
    }
    return n;
}

int epar_nn_segments(const struct epar_nn *m, struct epar_optim_segment *seg, int max)
{
    size_t off[2 * 1024], size[2 * 1024];   /* NL <= 1024 (epar_nn_config_validate) */
    int nf = epar_nn_frozen(m, off, size, 2 * 1024), n = 0;
    for (int k = 0, f = 0; k < EPAR_NN_NTENSORS; k++) {
        size_t at = m->offsets[k], end = at + m->sizes[k];
        for (; f < nf && off[f] < end; f++) {
            if (off[f] > at && n < max) seg[n++] = (struct epar_optim_segment){at, off[f] - at, epar_nn_decayed(k)};
            at = off[f] + size[f];
        }
        if (end > at && n < max) seg[n++] = (struct epar_optim_segment){at, end - at, epar_nn_decayed(k)};
    }
    return n;
}

void epar_nn_frozen_grad_zero(struct epar_nn *m)
{
    size_t off[2 * 1024], size[2 * 1024];
    int nf = epar_nn_frozen(m, off, size, 2 * 1024);
    for (int f = 0; f < nf; f++) memset(m->grads_mem + off[f], 0, size[f] * sizeof(float));
}

int epar_nn_init(struct epar_nn *m, gsl_rng *r)
{
    const struct epar_nn_config *c = &m->cfg;
    double sd = c->init_sd, sd_res = c->init_sd / sqrt(2.0 * c->NL);
    memset(m->params_mem, 0, m->n_params * sizeof(float));
    fill_normal(r, m->p.wte, m->sizes[EPAR_NN_WTE], sd);
    fill_normal(r, m->p.qkvw, m->sizes[EPAR_NN_QKVW], sd);
    fill_normal(r, m->p.attprojw, m->sizes[EPAR_NN_ATTPROJW], sd_res);
    fill_normal(r, m->p.fcw, m->sizes[EPAR_NN_FCW], sd);
    fill_normal(r, m->p.fcprojw, m->sizes[EPAR_NN_FCPROJW], sd_res);
    for (size_t i = 0; i < m->sizes[EPAR_NN_LN1W]; i++) m->p.ln1w[i] = m->p.ln2w[i] = 1.0f;
    for (size_t i = 0; i < m->sizes[EPAR_NN_LNFW]; i++) m->p.lnfw[i] = 1.0f;
    epar_nnpos_init(&m->pos, r);
    m->pos.T = 0;
    return epar_nnpos_frozen_qk(m->pos.id) ? init_frozen_qk(m, r) : EPAR_OK;
}

void epar_nn_zero_grad(struct epar_nn *m) { memset(m->grads_mem, 0, m->n_params * sizeof(float)); }

/* the per-op profile: PROF(m, op, statement) times the statement when m->profile is set (1: wall clock, 2: the
 * calling thread's CPU time) */
static double prof_now(const struct epar_nn *m) { return m->profile == 2 ? epar_nn_thread_cpu() : omp_get_wtime(); }
#define PROF(m, op, ...)                                                                                           \
    do {                                                                                                           \
        double prof_t0_ = (m)->profile ? prof_now(m) : 0;                                                          \
        __VA_ARGS__;                                                                                               \
        if ((m)->profile) (m)->op_seconds[op] += prof_now(m) - prof_t0_;                                           \
    } while (0)

/* per-layer views of the activations for the current (B, T) */
#define LAYER(ptr, l, n) ((ptr) + (size_t)(l) * (n))

double epar_nn_thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* head masking: the masked heads' columns of atty (B T, C) set to 0 (mask (NH) of this layer) */
static void mask_heads(float *atty, const unsigned char *mask, int N, int C, int NH)
{
    int hs = C / NH;
    for (int h = 0; h < NH; h++)
        if (mask[h])
            for (int i = 0; i < N; i++) memset(atty + (size_t)i * C + (size_t)h * hs, 0, (size_t)hs * sizeof(float));
}

/* the attention boost of one layer (struct epar_nn_boost): att (B, NH, T, T) changed in place on the selected keys,
 * and the changed rows' output out (B, T, C) recomputed from qkv (B, T, 3C) in double */
static void boost_layer(const struct epar_nn_boost *bo, float *att, float *out, const float *qkv, int B, int T, int C,
                        int NH)
{
    int hs = C / NH;
    float f = (float)bo->factor;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const unsigned char *k = bo->keys + ((size_t)b * T + i) * T;
                float *a = att + (((size_t)b * NH + h) * T + i) * T;
                int any = 0;
                for (int j = 0; j <= i; j++)
                    if (k[j]) {
                        a[j] *= f;
                        any = 1;
                    }
                if (!any) continue;
                if (bo->renorm) {
                    double sum = 0.0;
                    for (int j = 0; j <= i; j++) sum += a[j];
                    if (sum > 0)
                        for (int j = 0; j <= i; j++) a[j] = (float)(a[j] / sum);
                }
                float *o = out + ((size_t)b * T + i) * C + (size_t)h * hs;
                for (int d = 0; d < hs; d++) {
                    double acc = 0.0;
                    for (int j = 0; j <= i; j++) acc += (double)a[j] * qkv[((size_t)b * T + j) * 3 * C + 2 * C + (size_t)h * hs + d];
                    o[d] = (float)acc;
                }
            }
}

/* the mechanism's own attention form (lib/nnpos.h), if it has one, into ap: its functions, the model's mechanism and
 * the slices of its scratch at length T (ap's layer is set by the caller) */
static void own_form(const struct epar_nn *m, int T, struct epar_nn_attn_pos *ap)
{
    const struct epar_nnpos_info *in = epar_nnpos_row(m->pos.id);
    if (!in->attn_forward && !in->rel_forward) return;
    ap->own_forward = in->attn_forward;
    ap->own_backward = in->attn_backward;
    ap->rel_forward = in->rel_forward;
    ap->rel_row = in->rel_row;
    ap->rel_backward = in->rel_backward;
    ap->mech = &m->pos;
    epar_nnpos_scratch(m->pos.id, &m->pos.s, T, m->pos.hs, &ap->own_work, &ap->own_grad);
}

int epar_nn_forward(struct epar_nn *m, const int *tokens, const int *targets, const float *mask, int B, int T)
{
    const struct epar_nn_config *c = &m->cfg;
    if (B < 1 || B > c->Bmax || T < 1 || T > c->Tmax)
        return epar_err_set(EPAR_EINVAL, "batch %d x length %d exceeds the model's %d x %d", B, T, c->Bmax, c->Tmax);
    int C = c->C, NH = c->NH, F = c->F, V = c->V, N = B * T, G = epar_nn_kv_heads(c), W = epar_nn_qkv_width(c);
    for (int i = 0; i < N; i++)
        if (tokens[i] < 0 || tokens[i] >= V || (targets && (targets[i] < 0 || targets[i] >= V)))
            return epar_err_set(EPAR_EINVAL, "token %d at position %d is outside the vocabulary [0, %d)",
                                tokens[i] < 0 || tokens[i] >= V ? tokens[i] : targets[i], i, V);
    m->B = B;
    m->T = T;
    memcpy(m->tokens, tokens, (size_t)N * sizeof *tokens);
    struct epar_nn_params *p = &m->p;
    struct epar_nn_acts *a = &m->a;
    double pc0 = epar_nn_thread_cpu();
    PROF(m, EPAR_NN_OP_POSITION, epar_nnpos_prepare(&m->pos, T));
    m->pos_cpu_seconds += epar_nn_thread_cpu() - pc0;

    /* encoder: token embedding plus the input position term */
    double prof_t0 = m->profile ? prof_now(m) : 0;
    EPAR_OMP_FOR(epar_omp_fork_elems((double)N * C), int, i, N,
                 memcpy(a->encoded + (size_t)i * C, p->wte + (size_t)tokens[i] * C, (size_t)C * sizeof(float)));
    epar_nnpos_embed_forward(&m->pos, a->encoded, B, T);
    if (m->profile) m->op_seconds[EPAR_NN_OP_EMBED] += prof_now(m) - prof_t0;

    size_t nC = (size_t)N * C, nF = (size_t)N * F, nA = (size_t)B * NH * T * T;
    for (int l = 0; l < c->NL; l++) {
        float *res = l == 0 ? a->encoded : LAYER(a->residual3, l - 1, nC);
        /* the mechanism's term on the last layer's input (DeBERTa's EMD), in place (layer NL - 2's backward does not
         * read its output; the encoder's backward does not read encoded) */
        if (l == c->NL - 1) PROF(m, EPAR_NN_OP_POSITION, epar_nnpos_last_input_forward(&m->pos, res, B, T));
        float *ln1 = LAYER(a->ln1, l, nC), *qkv = LAYER(a->qkv, l, 3 * nC), *atty = LAYER(a->atty, l, nC);
        float *res2 = LAYER(a->residual2, l, nC), *ln2 = LAYER(a->ln2, l, nC), *res3 = LAYER(a->residual3, l, nC);
        float *fch = LAYER(a->fch, l, nF), *fchg = LAYER(a->fch_gelu, l, nF);
        PROF(m, EPAR_NN_OP_LAYERNORM, epar_nn_layernorm_forward(ln1, LAYER(a->ln1_mean, l, N), LAYER(a->ln1_rstd, l, N),
                                                                res, p->ln1w + (size_t)l * C, p->ln1b + (size_t)l * C, N, C));
        if (G < NH)
            PROF(m, EPAR_NN_OP_LINEAR, epar_nn_matmul_forward(m->s.qkvc, ln1, p->qkvw + (size_t)l * W * C,
                                                              p->qkvb + (size_t)l * W, N, C, W, 0);
                 kv_expand(qkv, m->s.qkvc, N, C, NH, G, C / NH));
        else
            PROF(m, EPAR_NN_OP_LINEAR, epar_nn_matmul_forward(qkv, ln1, p->qkvw + (size_t)l * W * C,
                                                              p->qkvb + (size_t)l * W, N, C, W, 0));
        double t0 = m->time_attention ? epar_nn_thread_cpu() : 0;
        PROF(m, EPAR_NN_OP_POSITION, epar_nnpos_qk_forward(&m->pos, qkv, B, T));
        struct epar_nn_attn_pos ap = {.fac = epar_nnpos_factor(&m->pos, l), .bias = epar_nnpos_bias(&m->pos, l),
                                      .ld = c->Tmax, .pair = epar_nnpos_pair(&m->pos, l), .work = m->s.rwork,
                                      .nwork = m->nthreads, .layer = l, .pair_head = epar_nnpos_pair_head(&m->pos),
                                      .head_off = epar_nnpos_head_off(&m->pos)};
        own_form(m, T, &ap);
        /* the scores are kept only for a learned factor's gradient and a mechanism's own form (kernel attention's N,
         * pi-attention's scores of its two softmaxes) (saves a (B, NH, T, T) store and load) */
        float *pre = (m->pos.dtheta && m->pos.fac) || ap.own_forward ? LAYER(a->preatt, l, nA) : NULL;
        PROF(m, EPAR_NN_OP_ATTENTION, epar_nn_attention_forward(atty, pre, LAYER(a->att, l, nA), qkv, &ap, B, T, C, NH));
        if (m->time_attention) m->attn_cpu_seconds += epar_nn_thread_cpu() - t0;
        if (m->boost.keys && m->boost.layer == l) boost_layer(&m->boost, LAYER(a->att, l, nA), atty, qkv, B, T, C, NH);
        if (m->head_mask) mask_heads(atty, m->head_mask + (size_t)l * NH, N, C, NH);
        PROF(m, EPAR_NN_OP_LINEAR, epar_nn_matmul_forward_res(res2, res, atty, p->attprojw + (size_t)l * C * C,
                                                              p->attprojb + (size_t)l * C, N, C, C));
        PROF(m, EPAR_NN_OP_LAYERNORM, epar_nn_layernorm_forward(ln2, LAYER(a->ln2_mean, l, N), LAYER(a->ln2_rstd, l, N),
                                                                res2, p->ln2w + (size_t)l * C, p->ln2b + (size_t)l * C, N, C));
        PROF(m, EPAR_NN_OP_LINEAR, epar_nn_matmul_forward(fch, ln2, p->fcw + (size_t)l * F * C, p->fcb + (size_t)l * F,
                                                          N, C, F, 0));
        PROF(m, EPAR_NN_OP_GELU, epar_nn_gelu_forward_keep(fchg, LAYER(a->fch_s, l, nF), fch, nF));
        PROF(m, EPAR_NN_OP_LINEAR, epar_nn_matmul_forward_res(res3, res2, fchg, p->fcprojw + (size_t)l * C * F,
                                                              p->fcprojb + (size_t)l * C, N, F, C));
    }
    PROF(m, EPAR_NN_OP_LAYERNORM, epar_nn_layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd,
                                                            LAYER(a->residual3, c->NL - 1, nC), p->lnfw, p->lnfb, N, C));
    PROF(m, EPAR_NN_OP_LINEAR, epar_nn_matmul_forward(a->probs, a->lnf, p->wte, NULL, N, C, V, 0));   /* logits, tied head */

    m->loss = 0.0;
    m->mask_sum = 0.0;
    if (targets) {
        memcpy(m->targets, targets, (size_t)N * sizeof *targets);
        for (int i = 0; i < N; i++) m->mask[i] = mask ? mask[i] : 1.0f;
    }
    PROF(m, EPAR_NN_OP_LOSS, epar_nn_crossentropy_forward(a->probs, a->losses, a->correct, a->probs,
                                                          targets ? m->targets : NULL, targets ? m->mask : NULL, N, V));
    if (targets) {
        double s = 0.0;
        for (int i = 0; i < N; i++) {
            s += a->losses[i];
            m->mask_sum += m->mask[i];
        }
        m->loss = m->mask_sum > 0 ? s / m->mask_sum : 0.0;
    }
    return EPAR_OK;
}

void epar_nn_accuracy(const struct epar_nn *m, long *correct, long *scored)
{
    long c = 0, n = 0;
    for (int i = 0; i < m->B * m->T; i++)
        if (m->mask[i] > 0) {
            n++;
            c += m->a.correct[i];
        }
    *correct = c;
    *scored = n;
}

/* columns cb*EMB_BLOCK.. of the token-embedding gradient: each column sums the positions in order */
static void wte_backward_block(float *gwte, const float *dres, const int *tokens, int N, int C, int cb)
{
    int c0 = cb * EMB_BLOCK, c1 = imin(C, c0 + EMB_BLOCK);
    for (int i = 0; i < N; i++) {
        float *row = gwte + (size_t)tokens[i] * C;
        const float *d = dres + (size_t)i * C;
        for (int k = c0; k < c1; k++) row[k] += d[k];
    }
}

void epar_nn_backward(struct epar_nn *m)
{
    const struct epar_nn_config *c = &m->cfg;
    int B = m->B, T = m->T, C = c->C, NH = c->NH, F = c->F, V = c->V, N = B * T, G = epar_nn_kv_heads(c);
    int W = epar_nn_qkv_width(c);
    struct epar_nn_params *p = &m->p, *g = &m->g;
    struct epar_nn_acts *a = &m->a;
    struct epar_nn_scratch *s = &m->s;
    size_t nC = (size_t)N * C, nF = (size_t)N * F, nA = (size_t)B * NH * T * T;
    if (m->mask_sum <= 0) return;   /* nothing scored: zero gradient */

    /* loss -> logits (in place over probs) -> final LayerNorm -> the tied head's share of dwte */
    PROF(m, EPAR_NN_OP_LOSS, epar_nn_crossentropy_backward(a->probs, a->probs, m->targets, m->mask, 1.0 / m->mask_sum,
                                                           N, V));
    PROF(m, EPAR_NN_OP_LINEAR_BWD, epar_nn_matmul_backward(s->dln, g->wte, NULL, a->probs, a->lnf, p->wte, N, C, V, 0,
                                                           s->part));
    PROF(m, EPAR_NN_OP_LAYERNORM_BWD, memset(s->dres, 0, nC * sizeof(float));
         epar_nn_layernorm_backward(s->dres, g->lnfw, g->lnfb, s->dln, LAYER(a->residual3, c->NL - 1, nC), p->lnfw,
                                    a->lnf_mean, a->lnf_rstd, N, C, s->part));

    for (int l = c->NL - 1; l >= 0; l--) {
        const float *res = l == 0 ? a->encoded : LAYER(a->residual3, l - 1, nC);
        /* MLP: residual3 = residual2 + fcproj(gelu(fc(ln2(residual2)))); dres holds d residual3 */
        PROF(m, EPAR_NN_OP_LINEAR_BWD,
             epar_nn_matmul_backward(s->dfch, g->fcprojw + (size_t)l * C * F, g->fcprojb + (size_t)l * C, s->dres,
                                     LAYER(a->fch_gelu, l, nF), p->fcprojw + (size_t)l * C * F, N, F, C, 0, s->part));
        PROF(m, EPAR_NN_OP_GELU_BWD,
             epar_nn_gelu_backward_kept(s->dfch, LAYER(a->fch, l, nF), LAYER(a->fch_s, l, nF), s->dfch, nF));
        PROF(m, EPAR_NN_OP_LINEAR_BWD,
             epar_nn_matmul_backward(s->dln, g->fcw + (size_t)l * F * C, g->fcb + (size_t)l * F, s->dfch,
                                     LAYER(a->ln2, l, nC), p->fcw + (size_t)l * F * C, N, C, F, 0, s->part));
        PROF(m, EPAR_NN_OP_LAYERNORM_BWD,
             epar_nn_layernorm_backward(s->dres, g->ln2w + (size_t)l * C, g->ln2b + (size_t)l * C, s->dln,
                                        LAYER(a->residual2, l, nC), p->ln2w + (size_t)l * C, LAYER(a->ln2_mean, l, N),
                                        LAYER(a->ln2_rstd, l, N), N, C, s->part));
        /* attention: residual2 = residual + attproj(attention(qkv(ln1(residual)))); dres holds d residual2 */
        PROF(m, EPAR_NN_OP_LINEAR_BWD,
             epar_nn_matmul_backward(s->datty, g->attprojw + (size_t)l * C * C, g->attprojb + (size_t)l * C, s->dres,
                                     LAYER(a->atty, l, nC), p->attprojw + (size_t)l * C * C, N, C, C, 0, s->part));
        if (m->head_mask) mask_heads(s->datty, m->head_mask + (size_t)l * NH, N, C, NH);   /* a masked head: no gradient */
        struct epar_nn_attn_pos ap = {.fac = epar_nnpos_factor(&m->pos, l), .bias = epar_nnpos_bias(&m->pos, l),
                                      .ld = c->Tmax, .gfac = m->pos.dtheta && m->pos.fac ? s->gfac : NULL,
                                      .gbias = m->pos.dtheta && m->pos.bias ? s->gbias : NULL,
                                      .pair = epar_nnpos_pair(&m->pos, l), .work = s->rwork, .nwork = m->nthreads,
                                      .grel = s->grel, .layer = l, .pair_head = epar_nnpos_pair_head(&m->pos),
                                      .head_off = epar_nnpos_head_off(&m->pos),
                                      .gpair = m->pos.dtheta && m->pos.pair_grad ? s->grel : NULL};
        own_form(m, T, &ap);
        struct epar_nnpos_grad pg = {ap.gfac, ap.gbias, ap.grel, ap.gpair};
        double t0 = m->time_attention ? epar_nn_thread_cpu() : 0;
        PROF(m, EPAR_NN_OP_ATTENTION_BWD,
             epar_nn_attention_backward(s->dqkv, s->datty, LAYER(a->qkv, l, 3 * nC), LAYER(a->preatt, l, nA),
                                        LAYER(a->att, l, nA), &ap, s->datt, m->nthreads, B, T, C, NH));
        PROF(m, EPAR_NN_OP_POSITION, epar_nnpos_backward(&m->pos, l, &pg, B, T);
             epar_nnpos_qk_backward(&m->pos, s->dqkv, B, T));
        if (m->time_attention) m->attn_cpu_seconds += epar_nn_thread_cpu() - t0;
        if (G < NH) PROF(m, EPAR_NN_OP_LINEAR_BWD, kv_reduce(s->qkvc, s->dqkv, N, C, NH, G, C / NH));
        PROF(m, EPAR_NN_OP_LINEAR_BWD,
             epar_nn_matmul_backward(s->dln, g->qkvw + (size_t)l * W * C, g->qkvb + (size_t)l * W,
                                     G < NH ? s->qkvc : s->dqkv, LAYER(a->ln1, l, nC), p->qkvw + (size_t)l * W * C, N,
                                     C, W, 0, s->part));
        PROF(m, EPAR_NN_OP_LAYERNORM_BWD,
             epar_nn_layernorm_backward(s->dres, g->ln1w + (size_t)l * C, g->ln1b + (size_t)l * C, s->dln, res,
                                        p->ln1w + (size_t)l * C, LAYER(a->ln1_mean, l, N), LAYER(a->ln1_rstd, l, N), N,
                                        C, s->part));
        if (l == c->NL - 1) PROF(m, EPAR_NN_OP_POSITION, epar_nnpos_last_input_backward(&m->pos, s->dres, B, T));
    }
    /* encoder: dres is d encoded; the learned position table, then the token rows in a fixed order */
    double prof_t0 = m->profile ? prof_now(m) : 0;
    epar_nnpos_embed_backward(&m->pos, s->dres, p->wte, m->tokens, B, T);
    /* token rows: parallel over column blocks, each column summing the positions in order */
    EPAR_OMP_FOR(epar_omp_fork_elems((double)N * C), int, cb, nblocks(C, EMB_BLOCK),
                 wte_backward_block(g->wte, s->dres, m->tokens, N, C, cb));
    if (m->profile) m->op_seconds[EPAR_NN_OP_EMBED] += prof_now(m) - prof_t0;
    double pc0 = epar_nn_thread_cpu();
    PROF(m, EPAR_NN_OP_POSITION, epar_nnpos_input_fold(&m->pos, T));
    m->pos_cpu_seconds += epar_nn_thread_cpu() - pc0;
}
