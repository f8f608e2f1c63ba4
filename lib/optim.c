#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "blas.h"
#include "err.h"
#include "optim.h"
#include "seams.h"
#include "target.h"

#define NORM_BLOCK 4096

int epar_optim_config_validate(const struct epar_optim_config *c)
{
    if (!(c->lr > 0) || !isfinite(c->lr)) return epar_err_set(EPAR_EINVAL, "lr must be a finite number > 0, got '%g'", c->lr);
    if (!(c->lr_min_ratio >= 0 && c->lr_min_ratio <= 1))
        return epar_err_set(EPAR_EINVAL, "lr_min_ratio must be in [0, 1], got '%g'", c->lr_min_ratio);
    if (c->steps < 1) return epar_err_set(EPAR_EINVAL, "steps must be >= 1, got '%d'", c->steps);
    if (c->warmup < 0) return epar_err_set(EPAR_EINVAL, "warmup must be >= 0, got '%d'", c->warmup);
    if (!(c->beta1 >= 0 && c->beta1 < 1) || !(c->beta2 >= 0 && c->beta2 < 1))
        return epar_err_set(EPAR_EINVAL, "adam betas must be in [0, 1), got '%g' and '%g'", c->beta1, c->beta2);
    if (!(c->eps > 0) || !isfinite(c->eps)) return epar_err_set(EPAR_EINVAL, "eps must be a finite number > 0, got '%g'", c->eps);
    if (!(c->weight_decay >= 0) || !isfinite(c->weight_decay))
        return epar_err_set(EPAR_EINVAL, "weight decay must be a finite number >= 0, got '%g'", c->weight_decay);
    if (!isfinite(c->clip)) return epar_err_set(EPAR_EINVAL, "clip must be a finite number, got '%g'", c->clip);
    return EPAR_OK;
}

int epar_optim_alloc(struct epar_optim *o, const struct epar_optim_config *c, size_t n)
{
    memset(o, 0, sizeof *o);
    int st = epar_optim_config_validate(c);
    if (st) return st;
    o->cfg = *c;
    o->n = n;
    o->nblocks = (n + NORM_BLOCK - 1) / NORM_BLOCK;
    o->m = epar_err_alloc(n, sizeof *o->m, "the optimiser state");
    o->v = epar_err_alloc(n, sizeof *o->v, "the optimiser state");
    o->partial = epar_err_alloc(o->nblocks, sizeof *o->partial, "the optimiser state");
    if (!o->m || !o->v || !o->partial) {
        epar_optim_free(o);
        return EPAR_ENOMEM;
    }
    return EPAR_OK;
}

void epar_optim_free(struct epar_optim *o)
{
    free(o->m); free(o->v); free(o->partial);
    o->m = o->v = NULL;
    o->partial = NULL;
}

double epar_optim_lr(const struct epar_optim_config *c, int step)
{
    if (step < c->warmup) return c->lr * (step + 1) / c->warmup;
    double lr_min = c->lr * c->lr_min_ratio;
    int span = c->steps - c->warmup;
    if (span <= 1) return c->lr;
    double u = (double)(step - c->warmup) / (span - 1);
    if (u > 1) u = 1;
    return lr_min + (c->lr - lr_min) * 0.5 * (1.0 + cos(M_PI * u));
}

/* the sums of squares of blocks 4q .. 4q+3 of g into o->partial: each block's sum in its own order, from its first
 * element on; four full blocks as four independent chains in one loop (one chain alone waits on the latency of each
 * addition: 2 % of a small model's step), a partial or missing one alone: the same bits either way */
static void norm_quad(struct epar_optim *o, const float *g, size_t q)
{
    size_t b0 = 4 * q;
    if ((b0 + 4) * NORM_BLOCK <= o->n) {
        const float *g0 = g + b0 * NORM_BLOCK, *g1 = g0 + NORM_BLOCK, *g2 = g1 + NORM_BLOCK, *g3 = g2 + NORM_BLOCK;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        for (size_t i = 0; i < NORM_BLOCK; i++) {
            s0 += (double)g0[i] * g0[i];
            s1 += (double)g1[i] * g1[i];
            s2 += (double)g2[i] * g2[i];
            s3 += (double)g3[i] * g3[i];
        }
        o->partial[b0] = s0;
        o->partial[b0 + 1] = s1;
        o->partial[b0 + 2] = s2;
        o->partial[b0 + 3] = s3;
        return;
    }
    for (size_t b = b0; b < b0 + 4 && b < o->nblocks; b++) {
        size_t i0 = b * NORM_BLOCK, i1 = i0 + NORM_BLOCK < o->n ? i0 + NORM_BLOCK : o->n;
        double s = 0.0;
        for (size_t i = i0; i < i1; i++) s += (double)g[i] * g[i];
        o->partial[b] = s;
    }
}

double epar_optim_grad_norm(struct epar_optim *o, const float *g)
{
    size_t nb = o->nblocks, nq = (nb + 3) / 4;
    EPAR_OMP_FOR(epar_omp_fork_elems((double)o->n), size_t, q, nq, norm_quad(o, g, q));
    double s = 0.0;
    for (size_t b = 0; b < nb; b++) s += o->partial[b];
    return sqrt(s);
}

/* AdamW on elements [0, n) of one segment: the scalar reference, and an AVX2 version doing the same IEEE operations
 * in the same order 8 lanes at a time (no FMA; division and sqrt are correctly rounded in either form), so both give
 * the same bits and a run's result does not depend on which one ran (before: scalar only, 4 % of a small model's
 * step). */
static void adamw_c(float *params, const float *grads, float *mo, float *vo, size_t n, const float *k)
{
    float gscale = k[0], b1 = k[1], b2 = k[2], c1 = k[3], c2 = k[4], eps = k[5], flr = k[6], wd = k[7];
    for (size_t i = 0; i < n; i++) {
        float g = grads[i] * gscale;
        float m = b1 * mo[i] + (1.0f - b1) * g;
        float v = b2 * vo[i] + (1.0f - b2) * g * g;
        mo[i] = m;
        vo[i] = v;
        float mh = m / c1, vh = v / c2;
        params[i] -= flr * (mh / (sqrtf(vh) + eps) + wd * params[i]);
    }
}

#include <immintrin.h>
EPAR_TARGET_BEGIN("avx2")
static void adamw_avx2(float *params, const float *grads, float *mo, float *vo, size_t n, const float *k)
{
    const __m256 gs = _mm256_set1_ps(k[0]), b1 = _mm256_set1_ps(k[1]), b2 = _mm256_set1_ps(k[2]);
    const __m256 c1 = _mm256_set1_ps(k[3]), c2 = _mm256_set1_ps(k[4]), eps = _mm256_set1_ps(k[5]);
    const __m256 flr = _mm256_set1_ps(k[6]), wd = _mm256_set1_ps(k[7]);
    const __m256 a1 = _mm256_set1_ps(1.0f - k[1]), a2 = _mm256_set1_ps(1.0f - k[2]);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 g = _mm256_mul_ps(_mm256_loadu_ps(grads + i), gs);
        __m256 m = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(mo + i)), _mm256_mul_ps(a1, g));
        __m256 v = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(vo + i)), _mm256_mul_ps(_mm256_mul_ps(a2, g), g));
        _mm256_storeu_ps(mo + i, m);
        _mm256_storeu_ps(vo + i, v);
        __m256 mh = _mm256_div_ps(m, c1), vh = _mm256_div_ps(v, c2), p = _mm256_loadu_ps(params + i);
        __m256 u = _mm256_add_ps(_mm256_div_ps(mh, _mm256_add_ps(_mm256_sqrt_ps(vh), eps)), _mm256_mul_ps(wd, p));
        _mm256_storeu_ps(params + i, _mm256_sub_ps(p, _mm256_mul_ps(flr, u)));
    }
    adamw_c(params + i, grads + i, mo + i, vo + i, n - i, k);
}
EPAR_TARGET_END

static int optim_portable;
void epar_optim_set_portable(int portable) { optim_portable = portable != 0; }

#define STEP_BLOCK 65536   /* elements per parallel chunk (any split gives the same bits: elementwise) */

/* block b of the segment [i0, i0 + n) */
static void step_block(void (*span)(float *, const float *, float *, float *, size_t, const float *), struct epar_optim *o,
                       float *params, const float *grads, size_t i0, size_t n, size_t b, const float *kk)
{
    size_t j = i0 + b * STEP_BLOCK, w = n - b * STEP_BLOCK < STEP_BLOCK ? n - b * STEP_BLOCK : STEP_BLOCK;
    span(params + j, grads + j, o->m + j, o->v + j, w, kk);
}

double epar_optim_step(struct epar_optim *o, float *params, float *grads, const struct epar_optim_segment *seg,
                       int nseg, double lr)
{
    const struct epar_optim_config *c = &o->cfg;
    double norm = epar_optim_grad_norm(o, grads);
    float gscale = c->clip > 0 && norm > c->clip ? (float)(c->clip / norm) : 1.0f;
    o->t++;
    float b1 = (float)c->beta1, b2 = (float)c->beta2, eps = (float)c->eps;
    float c1 = (float)(1.0 - pow(c->beta1, (double)o->t)), c2 = (float)(1.0 - pow(c->beta2, (double)o->t));
    float flr = (float)lr;
    __builtin_cpu_init();
    void (*span)(float *, const float *, float *, float *, size_t, const float *) =
        !optim_portable && __builtin_cpu_supports("avx2") ? adamw_avx2 : adamw_c;
    for (int k = 0; k < nseg; k++) {
        const float kk[8] = {gscale, b1, b2, c1, c2, eps, flr, seg[k].decay ? (float)c->weight_decay : 0.0f};
        size_t i0 = seg[k].offset, n = seg[k].size, nb = (n + STEP_BLOCK - 1) / STEP_BLOCK;
        EPAR_OMP_FOR(epar_omp_fork_elems((double)n), size_t, b, nb,
                     step_block(span, o, params, grads, i0, n, b, kk));
    }
    return norm;
}
