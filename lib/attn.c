#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include "err.h"
#include "rng.h"
#include "attn.h"

int epar_attn_layer_alloc(struct epar_layer *layer, int L, int D, int has_pos_embedding)
{
    memset(layer, 0, sizeof *layer);
    layer->L = L;
    layer->D = D;
    layer->has_pos_embedding = has_pos_embedding;
    size_t LD = (size_t)L * D, DD = (size_t)D * D;
    /* one block: E | Wq bq | Wk bk | Wv bv */
    double *m = epar_err_alloc(LD + 3 * (DD + D), sizeof *m, "layer weights");
    if (!m) return EPAR_ENOMEM;
    layer->E = m;
    layer->Wq = m + LD;  layer->bq = layer->Wq + DD;
    layer->Wk = layer->bq + D; layer->bk = layer->Wk + DD;
    layer->Wv = layer->bk + D; layer->bv = layer->Wv + DD;
    return EPAR_OK;
}

void epar_attn_layer_init(struct epar_layer *layer, gsl_rng *r)
{
    int L = layer->L, D = layer->D;
    if (layer->has_pos_embedding) epar_rng_normal(r, layer->E, (size_t)L * D, 1.0);
    epar_rng_linear_init(r, layer->Wq, layer->bq, D, D);
    epar_rng_linear_init(r, layer->Wk, layer->bk, D, D);
    epar_rng_linear_init(r, layer->Wv, layer->bv, D, D);
}

void epar_attn_layer_free(struct epar_layer *layer)
{
    free(layer->E);
    memset(layer, 0, sizeof *layer);
}

int epar_attn_ws_alloc(struct epar_attn_ws *ws, int L, int D)
{
    size_t LD = (size_t)L * D;
    double *m = epar_err_alloc(3 * LD, sizeof *m, "attention workspace");
    if (!m) return EPAR_ENOMEM;
    ws->x = m; ws->Q = m + LD; ws->K = m + 2 * LD;
    return EPAR_OK;
}

void epar_attn_ws_free(struct epar_attn_ws *ws)
{
    free(ws->x);
    memset(ws, 0, sizeof *ws);
}

int epar_attn_cfg_validate(const struct epar_attn_cfg *cfg)
{
    if (cfg->L < 1) return epar_err_set(EPAR_EINVAL, "length must be >= 1, got '%d'", cfg->L);
    if (cfg->D < 1) return epar_err_set(EPAR_EINVAL, "hidden must be >= 1, got '%d'", cfg->D);
    if (cfg->heads < 1) return epar_err_set(EPAR_EINVAL, "heads must be >= 1, got '%d'", cfg->heads);
    if (cfg->D % cfg->heads) {
        epar_err_set(EPAR_EINVAL, "heads must divide hidden, got heads '%d' and hidden '%d'", cfg->heads, cfg->D);
        epar_err_hint("choose --heads among the divisors of --hidden");
        return EPAR_EINVAL;
    }
    if (!isfinite(cfg->scale) || !isfinite(cfg->inv_temp) || cfg->inv_temp <= 0)
        return epar_err_set(EPAR_EINVAL, "temperature must be a finite number > 0");
    return EPAR_OK;
}

/* y (L,D) = x (L,D) W^T + b, W is (D,D) as nn.Linear stores it */
static void linear(const double *x, const double *W, const double *b, double *y, int L, int D)
{
    for (int i = 0; i < L; i++) memcpy(y + (size_t)i * D, b, (size_t)D * sizeof *y);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, D, D, 1.0, x, D, W, D, 1.0, y, D);
}

int epar_attn_softmax_rows(const struct epar_attn_cfg *cfg, const struct epar_attn_mods *mods, int head,
                           double *S)
{
    int L = cfg->L, n_empty = 0;
    const double *bias = NULL;
    if (mods && mods->bias) bias = mods->bias + (mods->bias_per_head ? (size_t)head * L * L : 0);
    const double *factor = mods ? mods->factor : NULL;
    const unsigned char *mask = mods ? mods->mask : NULL;
    for (int i = 0; i < L; i++) {
        double *z = S + (size_t)i * L;
        const double *f = factor ? factor + (size_t)i * L : NULL;
        const double *b = bias ? bias + (size_t)i * L : NULL;
        const unsigned char *mk = mask ? mask + (size_t)i * L : NULL;
        int jmax = cfg->causal ? i + 1 : L;
        double M = -INFINITY;
        int allowed = 0, nan = 0;
        for (int j = 0; j < jmax; j++) {
            if (mk && !mk[j]) continue;
            double v = z[j];
            if (f) v *= f[j];        /* (4) factor multiplies the scaled content score only */
            if (b) v += b[j];        /* (5) */
            v *= cfg->inv_temp;
            z[j] = v;
            if (v > M) M = v;
            nan |= isnan(v);
            allowed++;
        }
        if (!allowed) {
            n_empty++;
            memset(z, 0, (size_t)L * sizeof *z);
            if (cfg->empty == EPAR_EMPTY_SELF) z[i] = 1.0;
            continue;
        }
        if (nan || isinf(M)) {
            /* NaN: the whole allowed row is NaN (never a plausible-looking number). Overflowed scores
             * (M = +-inf): the limit of the softmax, the mass shared equally by the entries equal to M. */
            int k = 0;
            for (int j = 0; j < jmax; j++)
                if (!(mk && !mk[j]) && z[j] == M) k++;
            for (int j = 0; j < L; j++) {
                if (j >= jmax || (mk && !mk[j])) z[j] = 0.0;
                else z[j] = nan ? NAN : z[j] == M ? 1.0 / k : 0.0;
            }
            continue;
        }
        double sum = 0.0;
        for (int j = 0; j < L; j++) {
            if (j >= jmax || (mk && !mk[j])) { z[j] = 0.0; continue; }
            z[j] = exp(z[j] - M);
            sum += z[j];
        }
        double inv = 1.0 / sum;
        for (int j = 0; j < jmax; j++) z[j] *= inv;
    }
    return n_empty;
}

void epar_attn_head(const struct epar_attn_cfg *cfg, const struct epar_attn_mods *mods, int head,
                    const double *Qh, const double *Kh, int ld, double *A, int *n_empty)
{
    int L = cfg->L, dk = cfg->D / cfg->heads;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, dk, cfg->scale, Qh, ld, Kh, ld, 0.0, A, L);
    int e = epar_attn_softmax_rows(cfg, mods, head, A);
    if (n_empty) *n_empty += e;
}

void epar_attn_project(const struct epar_attn_cfg *cfg, const struct epar_layer *layer,
                       const struct epar_attn_mods *mods, const double *X, struct epar_attn_ws *ws)
{
    int L = cfg->L, D = cfg->D, H = cfg->heads, dk = D / H;
    size_t LD = (size_t)L * D;
    if (layer->has_pos_embedding)
        for (size_t t = 0; t < LD; t++) ws->x[t] = X[t] + layer->E[t];
    else
        memcpy(ws->x, X, LD * sizeof *X);
    if (mods && mods->input) mods->input(mods->ctx, ws->x, L, D);
    linear(ws->x, layer->Wq, layer->bq, ws->Q, L, D);
    linear(ws->x, layer->Wk, layer->bk, ws->K, L, D);
    if (mods && mods->qk)
        for (int h = 0; h < H; h++) mods->qk(mods->ctx, h, ws->Q + h * dk, ws->K + h * dk, L, dk, D);
}

void epar_attn_values(const struct epar_attn_cfg *cfg, const struct epar_layer *layer, const double *x, double *V)
{
    linear(x, layer->Wv, layer->bv, V, cfg->L, cfg->D);
}

void epar_attn_forward(const struct epar_attn_cfg *cfg, const struct epar_layer *layer,
                       const struct epar_attn_mods *mods, const double *X, double *A,
                       struct epar_attn_ws *ws, int *n_empty)
{
    int L = cfg->L, D = cfg->D, H = cfg->heads, dk = D / H;
    epar_attn_project(cfg, layer, mods, X, ws);
    if (n_empty) *n_empty = 0;
    for (int h = 0; h < H; h++)
        epar_attn_head(cfg, mods, h, ws->Q + h * dk, ws->K + h * dk, D, A + (size_t)h * L * L, n_empty);
}

void epar_attn_head_average(const double *A, int H, int L, double *Abar)
{
    size_t LL = (size_t)L * L;
    memcpy(Abar, A, LL * sizeof *A);
    for (int h = 1; h < H; h++)
        for (size_t t = 0; t < LL; t++) Abar[t] += A[(size_t)h * LL + t];
    if (H > 1)
        for (size_t t = 0; t < LL; t++) Abar[t] /= H;
}
