#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "err.h"
#include "optim.h"

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

double epar_optim_grad_norm(struct epar_optim *o, const float *g)
{
    size_t nb = o->nblocks, n = o->n;
#pragma omp parallel for schedule(static) if (nb > 8)
    for (size_t b = 0; b < nb; b++) {
        size_t i0 = b * NORM_BLOCK, i1 = i0 + NORM_BLOCK < n ? i0 + NORM_BLOCK : n;
        double s = 0.0;
        for (size_t i = i0; i < i1; i++) s += (double)g[i] * g[i];
        o->partial[b] = s;
    }
    double s = 0.0;
    for (size_t b = 0; b < nb; b++) s += o->partial[b];
    return sqrt(s);
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
    for (int k = 0; k < nseg; k++) {
        float wd = seg[k].decay ? (float)c->weight_decay : 0.0f;
        size_t i0 = seg[k].offset, i1 = seg[k].offset + seg[k].size;
#pragma omp parallel for schedule(static) if (i1 - i0 > 262144)
        for (size_t i = i0; i < i1; i++) {
            float g = grads[i] * gscale;
            float m = b1 * o->m[i] + (1.0f - b1) * g;
            float v = b2 * o->v[i] + (1.0f - b2) * g * g;
            o->m[i] = m;
            o->v[i] = v;
            float mh = m / c1, vh = v / c2;
            params[i] -= flr * (mh / (sqrtf(vh) + eps) + wd * params[i]);
        }
    }
    return norm;
}
