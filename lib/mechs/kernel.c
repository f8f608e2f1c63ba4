/* Kernel attention (docs/MECHANISMS.md §20, §21): linear-elu (Katharopoulos et al. 2020: phi = elu + 1 on q and k, no
 * 1/sqrt(dk)) and Performer (Choromanski et al. 2021, FAVOR+: positive random features approximating softmax), two
 * mechanisms in one file because they share their attention: A_ij = phi(q_i).phi(k_j) / sum_{j' <= i}, no softmax.
 * Here: their catalogue rows and analysis builds (epar compare's forward of the kernel kind stays lib/mech.c's, shared
 * with linear-cos), their trained form (lib/nnpos hooks: the features, the denominator guard) and that form's own
 * attention of one (batch, head), which lib/nn calls in place of its softmax (epar_nnpos_attn_fwd, lib/nnpos.h).
 * Both keep the enum values they had before the files (lib/mechs/registry.h: EPAR_MECH_FILE_AT), so Performer's
 * Omega is still drawn from the stream (seed, 1000 + EPAR_MECH_PERFORMER): the features compare draws. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <gsl/gsl_cblas.h>
#include "lib/err.h"
#include "lib/nn.h"
#include "lib/nnpos.h"
#include "lib/rng.h"
#include "lib/target.h"

/* ---- the analysis form (epar compare): the pieces of the kernel kind; lib/mech.c's forward computes phi per id ---- */

static int build_elu(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    return epar_mech_kernel_pieces(m, m->dk);
}

static int build_favor(struct epar_mech *m, gsl_rng *r)
{
    int nf = (int)m->p[0], st;
    if (!(m->omega = epar_err_alloc((size_t)nf * m->dk, sizeof *m->omega, "Performer Omega"))) return EPAR_ENOMEM;
    if ((st = epar_mech_performer_omega(r, nf, m->dk, (int)m->p[1], (int)m->p[2], m->omega))) return st;
    return epar_mech_kernel_pieces(m, nf);
}

/* ---- the trained form: lib/nnpos hooks (no learned parameters; no table but Performer's Omega) ---- */

/* floats of per-thread scratch at length T with nf features per head: phi(Q), phi(K) and their gradients (T nf each),
 * the keys' stabilisers, their running maximum and one row's key weights (T each) */
static size_t kernel_work(int T, int nf) { return (size_t)T * (4 * (size_t)nf + 3); }

static void scratch_elu(const struct epar_nnpos_settings *s, enum epar_mech_id id, int T, int hs, size_t *per_thread,
                        size_t *per_bh)
{
    (void)s; (void)id;
    *per_thread = kernel_work(T, hs);
    *per_bh = 0;
}

static void scratch_favor(const struct epar_nnpos_settings *s, enum epar_mech_id id, int T, int hs,
                          size_t *per_thread, size_t *per_bh)
{
    (void)hs;
    *per_thread = kernel_work(T, (int)s->mp[id][0]);
    *per_bh = 0;
}

static int train_build_elu(struct epar_nnpos *p)
{
    p->nf = p->hs;
    p->eps = p->mp[0];
    return EPAR_OK;
}

/* Omega: lib/mech's draw for the run's seed (the stream compare's Performer reads), in float */
static int train_build_favor(struct epar_nnpos *p)
{
    p->nf = (int)p->mp[0];
    p->eps = p->mp[3];
    size_t n = (size_t)p->nf * p->hs;
    double *om = epar_err_alloc(n, sizeof *om, "Performer's features");
    gsl_rng *r = epar_rng_alloc(p->s.seed, 1000UL + (unsigned long)p->id, EPAR_RNG_MECH);
    p->omega = om && r ? epar_err_alloc(n, sizeof *p->omega, "Performer's features") : NULL;
    int st = !om || !r || !p->omega ? EPAR_ENOMEM : EPAR_OK;
    if (!st) st = epar_mech_performer_omega(r, p->nf, p->hs, (int)p->mp[1], (int)p->mp[2], om);
    for (size_t t = 0; !st && t < n; t++) p->omega[t] = (float)om[t];
    free(om);
    epar_rng_free(r);
    return st;
}

/* ---- the trained form's own attention of one (b, h) (lib/nn calls it in place of its softmax):
 * A_ij = N_ij / D_i, N = phi(Q) phi(K)^T, D_i = sum_{j <= i} N_ij, materialised causally in lib/nn's query blocks ---- */

#include <immintrin.h>
#include "lib/lanes8.h"   /* hsum8, hmax8: lib/nn's lane orders */
EPAR_TARGET_BEGIN("avx2,fma")
/* FAVOR+'s features of one row in place: m = max_q f[q], f[q] = s exp(f[q] - m); returns m. The largest lane
 * (exact in any order; a NaN is passed over as by the C form's comparison), then elementwise operations: the C form's
 * values but for its expf */
static float favor_row_avx2(float *f, int nf, float s)
{
    __m256 vmax = _mm256_set1_ps(-INFINITY);
    int q = 0;
    for (; q + 8 <= nf; q += 8) vmax = _mm256_max_ps(_mm256_loadu_ps(f + q), vmax);
    float mx = hmax8(vmax);
    for (; q < nf; q++) mx = f[q] > mx ? f[q] : mx;
    epar_nn_exps(f, f, mx, nf);
    const __m256 vs = _mm256_set1_ps(s);
    for (q = 0; q + 8 <= nf; q += 8) _mm256_storeu_ps(f + q, _mm256_mul_ps(_mm256_loadu_ps(f + q), vs));
    for (; q < nf; q++) f[q] *= s;
    return mx;
}

/* FAVOR+'s backward of one row: g[q] *= F[q] in place, returns sum_q g[q] (8 lane sums, then hsum8's order, then the
 * tail: a few ulp from the C form's running sum) */
static float favor_grad_row_avx2(float *g, const float *F, int nf)
{
    __m256 acc = _mm256_setzero_ps();
    int q = 0;
    for (; q + 8 <= nf; q += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(g + q), _mm256_loadu_ps(F + q));
        _mm256_storeu_ps(g + q, v);
        acc = _mm256_add_ps(acc, v);
    }
    float gs = hsum8(acc);
    for (; q < nf; q++) {
        g[q] *= F[q];
        gs += g[q];
    }
    return gs;
}
EPAR_TARGET_END

/* F (n, nf) <- phi of rows X (n, hs; row stride ldx). elu + 1, or FAVOR+ in float with a stabiliser per row:
 * F_rf = exp(w_f . x' - |x'|^2 / 2 - c_r) / sqrt(nf), x' = x hs^(-1/4), c_r = max_f (w_f . x' - |x'|^2 / 2), so every
 * row's largest feature is 1 / sqrt(nf); c (n) is returned (NULL: not wanted). A query's c_i multiplies row i's
 * numerators and denominator alike and cancels; a key's c_j does not: the kernel multiplies it back in as
 * exp(c_j - max_{j' <= i} c_j') (kernel_forward_bh). No eps is added (performer.eps is the stabiliser of compare's
 * untrained FAVOR+, which divides the keys by the largest feature over every key): with these stabilisers the
 * features need none, and adding eps times a row's largest feature would move the weights away from FAVOR+'s
 * once the exponents spread over tens of nats (test_nn's test_performer_scale). */
static void kernel_features(const struct epar_nnpos *p, const float *X, int ldx, int n, int hs, float *F,
                            float *c)
{
    if (!p->omega) {
        for (int i = 0; i < n; i++)
            for (int t = 0; t < hs; t++) {
                float x = X[(size_t)i * ldx + t];
                F[(size_t)i * hs + t] = x > 0 ? x + 1.0f : expf(x);
            }
        return;
    }
    int nf = p->nf;
    float s = powf((float)hs, -0.25f), inv = 1.0f / sqrtf((float)nf);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, nf, hs, s, X, ldx, p->omega, hs, 0.0f, F, nf);
    for (int i = 0; i < n; i++) {
        float *f = F + (size_t)i * nf, nx = 0.0f, mx = -INFINITY;
        for (int t = 0; t < hs; t++) nx += X[(size_t)i * ldx + t] * X[(size_t)i * ldx + t];
        nx *= s * s * 0.5f;
        if (epar_nn_simd()) {
            mx = favor_row_avx2(f, nf, inv);
        } else {
            for (int q = 0; q < nf; q++) mx = f[q] > mx ? f[q] : mx;
            for (int q = 0; q < nf; q++) f[q] = inv * expf(f[q] - mx);
        }
        if (c) c[i] = mx - nx;
    }
}

/* dX (n, hs; stride lddx, overwritten) <- the gradient through phi of dF (n, nf), F = phi(X). elu + 1: dF phi'(x);
 * FAVOR+, the row factor exp(c_r) held outside (it cancels, or the kernel's weights carry it): G = dF F,
 * dX = s G Omega - s^2 x sum_f G */
static void kernel_features_backward(const struct epar_nnpos *p, const float *X, int ldx, const float *F,
                                     float *dF, int n, int hs, float *dX, int lddx)
{
    if (!p->omega) {
        for (int i = 0; i < n; i++)
            for (int t = 0; t < hs; t++) {
                float x = X[(size_t)i * ldx + t];
                dX[(size_t)i * lddx + t] = dF[(size_t)i * hs + t] * (x > 0 ? 1.0f : F[(size_t)i * hs + t]);
            }
        return;
    }
    int nf = p->nf;
    float s = powf((float)hs, -0.25f);
    for (int i = 0; i < n; i++) {
        float *g = dF + (size_t)i * nf, gs = 0.0f;
        if (epar_nn_simd()) {
            gs = favor_grad_row_avx2(g, F + (size_t)i * nf, nf);
        } else {
            for (int q = 0; q < nf; q++) {
                g[q] *= F[(size_t)i * nf + q];
                gs += g[q];
            }
        }
        for (int t = 0; t < hs; t++) dX[(size_t)i * lddx + t] = -s * s * X[(size_t)i * ldx + t] * gs;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, hs, nf, s, dF, nf, p->omega, hs, 1.0f, dX, lddx);
}

/* the kernel's row guard: elu + 1 takes linear-elu.eps; FAVOR+'s stabilised denominators are relative to the row's
 * largest weights, so a row falls back only when its denominator underflows (its best query and key features
 * disagree by ~87 nats) or is not finite */
static int kernel_row_ok(const struct epar_nnpos *p, float den)
{
    return p->omega ? den > FLT_MIN && den < INFINITY : den > (float)p->eps;
}

/* FAVOR+'s key weights of row i: w_ij = exp(c_j - M_i), M_i = max_{j' <= i} c_j' (M computed into cm, (T)) */
static void kernel_key_max(const float *ck, float *cm, int T)
{
    for (int j = 0; j < T; j++) cm[j] = j && cm[j - 1] > ck[j] ? cm[j - 1] : ck[j];
}

/* one (b, h) of the forward: N into S, A, O = A V; work: kernel_work floats. FAVOR+: N_ij = phi(q_i).phi(k_j)
 * exp(c_j - M_i) (the stabilised numerators: every row's largest key weight is 1, so the denominator is never small
 * relative to its terms, whatever the scale of q and k) */
static void kernel_forward_bh(const struct epar_nnpos *p, int l, int h, const float *Q, const float *K, const float *Vv,
                              float *S, float *A, float *O, float *work, int T, int C, int hs, float scale)
{
    (void)l; (void)h; (void)scale;   /* the same form in every layer and head; no 1/sqrt(hs) */
    int C3 = 3 * C, nf = p->nf;
    float *Fq = work, *Fk = work + (size_t)T * nf, *ck = work + (size_t)4 * T * nf, *cm = ck + T;
    kernel_features(p, Q, C3, T, hs, Fq, NULL);
    kernel_features(p, K, C3, T, hs, Fk, ck);
    if (p->omega) kernel_key_max(ck, cm, T);
    for (int i0 = 0; i0 < T; i0 += EPAR_NN_ATT_BLOCK) {
        int i1 = i0 + EPAR_NN_ATT_BLOCK < T ? i0 + EPAR_NN_ATT_BLOCK : T, ib = i1 - i0;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, ib, i1, nf, 1.0f, Fq + (size_t)i0 * nf, nf, Fk, nf, 0.0f,
                    S + (size_t)i0 * T, T);
        for (int i = i0; i < i1; i++) {
            float *n = S + (size_t)i * T;
            float *a = A + (size_t)i * T, den = 0.0f;
            if (p->omega) {   /* the key weights into a's row first (it is written below) */
                epar_nn_exps(a, ck, cm[i], i + 1);
                for (int j = 0; j <= i; j++) n[j] *= a[j];
            }
            for (int j = 0; j <= i; j++) den += n[j];
            if (kernel_row_ok(p, den))
                for (int j = 0; j <= i; j++) a[j] = n[j] / den;
            else
                for (int j = 0; j <= i; j++) a[j] = j == i ? 1.0f : 0.0f;   /* empty row: itself */
            for (int j = i + 1; j < i1; j++) a[j] = 0.0f;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ib, hs, i1, 1.0f, A + (size_t)i0 * T, T, Vv, C3, 0.0f,
                    O + (size_t)i0 * C, C);
    }
}

/* one (b, h) of the backward: dV, then dN = (dA - a.dA) / D per row (FAVOR+: times the key weights w_ij, the
 * gradient of the features' product), dphi(Q) = dN phi(K), dphi(K) = dN^T phi(Q), then through phi into dQ, dK
 * (overwritten); dA (T, T) scratch, work: kernel_work floats */
static void kernel_backward_bh(const struct epar_nnpos *p, int l, int h, const float *Q, const float *K,
                               const float *Vv, const float *S, const float *A, const float *dO, float *dQ, float *dK,
                               float *dV, float *dA, float *grad, float *work, int T, int C, int hs, float scale)
{
    (void)l; (void)h; (void)grad; (void)scale;   /* no parameters: no gradient slot */
    int C3 = 3 * C, nf = p->nf;
    float *Fq = work, *Fk = Fq + (size_t)T * nf, *dFq = Fk + (size_t)T * nf, *dFk = dFq + (size_t)T * nf;
    float *ck = work + (size_t)4 * T * nf, *cm = ck + T, *wk = cm + T;
    kernel_features(p, Q, C3, T, hs, Fq, NULL);
    kernel_features(p, K, C3, T, hs, Fk, ck);
    if (p->omega) kernel_key_max(ck, cm, T);
    for (int i0 = (T - 1) / EPAR_NN_ATT_BLOCK * EPAR_NN_ATT_BLOCK; i0 >= 0; i0 -= EPAR_NN_ATT_BLOCK) {
        int i1 = i0 + EPAR_NN_ATT_BLOCK < T ? i0 + EPAR_NN_ATT_BLOCK : T, ib = i1 - i0;
        float beta = i1 == T ? 0.0f : 1.0f;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, ib, i1, hs, 1.0f, dO + (size_t)i0 * C, C, Vv, C3, 0.0f,
                    dA + (size_t)i0 * T, T);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, i1, hs, ib, 1.0f, A + (size_t)i0 * T, T,
                    dO + (size_t)i0 * C, C, beta, dV, C3);
        for (int i = i0; i < i1; i++) {
            const float *n = S + (size_t)i * T, *a = A + (size_t)i * T;
            float *d = dA + (size_t)i * T, den = 0.0f, dot = 0.0f;
            for (int j = 0; j <= i; j++) den += n[j];
            for (int j = 0; j <= i; j++) dot += a[j] * d[j];
            int ok = kernel_row_ok(p, den);
            for (int j = 0; j <= i; j++) d[j] = ok ? (d[j] - dot) / den : 0.0f;
            if (ok && p->omega) {
                epar_nn_exps(wk, ck, cm[i], i + 1);
                for (int j = 0; j <= i; j++) d[j] *= wk[j];
            }
            for (int j = i + 1; j < i1; j++) d[j] = 0.0f;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ib, nf, i1, 1.0f, dA + (size_t)i0 * T, T, Fk, nf, 0.0f,
                    dFq + (size_t)i0 * nf, nf);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, i1, nf, ib, 1.0f, dA + (size_t)i0 * T, T,
                    Fq + (size_t)i0 * nf, nf, beta, dFk, nf);
    }
    kernel_features_backward(p, Q, C3, Fq, dFq, T, hs, dQ, C3);
    kernel_features_backward(p, K, C3, Fk, dFk, T, hs, dK, C3);
}

static const struct epar_nnpos_info train_elu = {
    .hook = EPAR_NNPOS_H_KERNEL, .uses_params = 1,
    .summary = "A_ij = phi(q_i).phi(k_j) / sum over j' <= i, phi = elu + 1 (no softmax)",
    .build = train_build_elu, .scratch = scratch_elu,
    .attn_forward = kernel_forward_bh, .attn_backward = kernel_backward_bh,
};

static const struct epar_nnpos_info train_favor = {
    .hook = EPAR_NNPOS_H_KERNEL, .uses_params = 1,
    .summary = "causal FAVOR+: the same, phi = positive random features (fixed Omega)",
    .build = train_build_favor, .scratch = scratch_favor,
    .attn_forward = kernel_forward_bh, .attn_backward = kernel_backward_bh,
};

/* no doc: they are documented in their own sections of docs/MECHANISMS.md (§20, §21) */
const struct epar_mech_def epar_mech_def_linear_elu = {
    .info = {"linear-elu", EPAR_MK_KERNEL, "S1 §2.1.4", "§20",
             {{"eps", 1e-6, 0, 1, 0, "denominator guard (rows below it fall back to self)"}, {NULL, 0, 0, 0, 0, NULL}},
             build_elu, "phi = elu + 1 on q and k without 1/sqrt(dk)"},
    .train = &train_elu,
};

const struct epar_mech_def epar_mech_def_performer = {
    .info = {"performer", EPAR_MK_KERNEL, "S1 §2.2, §3.3", "§21",
             {{"features", 256, 1, 65536, 1, "random features m"}, {"orthogonal", 1, 0, 1, 1, "orthogonal blocks"},
              {"scaling", 0, 0, 1, 1, "0: chi_d row norms, 1: sqrt(d)"}, {"eps", 1e-6, 0, 1, 0, "numerical stabiliser"},
              {NULL, 0, 0, 0, 0, NULL}},
             build_favor, "FAVOR+ positive random features approximating softmax"},
    .train = &train_favor,
};
