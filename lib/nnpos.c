#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include "blas.h"
#include "err.h"
#include "mech.h"
#include "nnpos.h"
#include "rng.h"

/* ---- shared helpers ---- */

/* *ptr <- n zeroed elements of size sz; EPAR_ENOMEM naming what could not be allocated */
static int need(void *ptr, size_t n, size_t sz, const char *what)
{
    void *q = epar_err_alloc(n, sz, what);
    memcpy(ptr, &q, sizeof q);
    return q ? EPAR_OK : EPAR_ENOMEM;
}

static int build_nothing(struct epar_nnpos *p) { (void)p; return EPAR_OK; }
static size_t n_zero(const struct epar_nnpos *p) { (void)p; return 0; }
static void init_nothing(struct epar_nnpos *p, gsl_rng *r) { (void)p; (void)r; }
static void prepare_nothing(struct epar_nnpos *p, int T) { (void)p; (void)T; }
static void backward_nothing(struct epar_nnpos *p, int l, const struct epar_nnpos_grad *g, int B, int T)
{
    (void)p; (void)l; (void)g; (void)B; (void)T;
}

/* ---- sinusoidal (§5): the table is built once for Tmax at alloc ----
 * Scaled as Vaswani et al. use it: x = sqrt(d) E + PE with E ~ N(0, 1/d), i.e. unit-variance token entries beside a
 * sinusoid of rms 1/sqrt(2). Our token embeddings are N(0, init_sd^2) and tied to the head, so the same balance is
 * x = E' + init_sd PE (= init_sd times Vaswani's x in distribution at init). Unscaled, the sinusoid had ~35 times
 * the norm of a token embedding and the model saw positions and hardly any characters. */


static int build_sinusoidal(struct epar_nnpos *p)
{
    if (need(&p->pe, (size_t)p->Tmax * p->C, sizeof *p->pe, "the sinusoid table")) return EPAR_ENOMEM;
    double *row = epar_err_alloc((size_t)p->C, sizeof *row, "the sinusoid table");
    if (!row) return EPAR_ENOMEM;
    for (int t = 0; t < p->Tmax; t++) {
        epar_mech_sinusoid((double)t, p->C, p->mp[0], 0, row);   /* sinusoidal.base */
        for (int c = 0; c < p->C; c++) p->pe[(size_t)t * p->C + c] = (float)(p->s.init_sd * row[c]);
    }
    free(row);
    return EPAR_OK;
}

/* ---- learned absolute (§6): theta = E (Tmax, C) ---- */

static size_t n_learned(const struct epar_nnpos *p) { return (size_t)p->Tmax * p->C; }
static void init_learned(struct epar_nnpos *p, gsl_rng *r) { epar_rng_normal_f(r, p->theta, n_learned(p), p->s.init_sd); }
/* the table's gradient comes from the embedding backward (epar_nnpos_embed_backward) */
static void backward_learned(struct epar_nnpos *p, int l, const struct epar_nnpos_grad *g, int B, int T)
{
    backward_nothing(p, l, g, B, T);
}

/* ---- learned-ape-rand / -hier (§6, S3 003:20): theta = E (n, C), n = train_length (the trained length: the same
 * parameters and draws as learned-ape's table there); ext = the table read: E's rows, then past n lib/mech's random rows
 * (rand: fixed, N(0, init_sd^2) from the run's seed) or E's hierarchical decomposition (hier, alpha) ---- */

static size_t n_ape_ext(const struct epar_nnpos *p) { return (size_t)p->ntrain * p->C; }
static void init_ape_ext(struct epar_nnpos *p, gsl_rng *r) { epar_rng_normal_f(r, p->theta, n_ape_ext(p), p->s.init_sd); }

static int build_ape_ext(struct epar_nnpos *p)
{
    p->ntrain = (int)p->mp[0];
    if (p->id == EPAR_MECH_APE_HIER && (long)p->ntrain * p->ntrain < p->Tmax)
        return epar_err_set(EPAR_EINVAL, "learned-ape-hier covers train_length^2 = %ld positions, length '%d' exceeds it",
                            (long)p->ntrain * p->ntrain, p->Tmax);
    size_t n = (size_t)p->Tmax * p->C;
    if (need(&p->ext, n, sizeof *p->ext, "the position table") || need(&p->dext, n, sizeof *p->dext, "the position table"))
        return EPAR_ENOMEM;
    if (p->id != EPAR_MECH_APE_RAND) return EPAR_OK;
    double *row = epar_err_alloc((size_t)p->C, sizeof *row, "the position table");
    if (!row) return EPAR_ENOMEM;
    for (int t = p->ntrain; t < p->Tmax; t++) {
        epar_mech_ape_rand_row(p->s.seed, t, p->C, p->s.init_sd, row);
        for (int c = 0; c < p->C; c++) p->ext[(size_t)t * p->C + c] = (float)row[c];
    }
    free(row);
    return EPAR_OK;
}

static void prepare_ape_ext(struct epar_nnpos *p, int T)
{
    int C = p->C, n = p->ntrain < T ? p->ntrain : T;
    memcpy(p->ext, p->theta, (size_t)n * C * sizeof *p->ext);
    for (int t = n; t < T && p->id == EPAR_MECH_APE_HIER; t++) {
        int idx[3];
        double w[3];
        epar_mech_ape_hier_coef(t, p->ntrain, p->mp[1], idx, w);
        for (int c = 0; c < C; c++)
            p->ext[(size_t)t * C + c] = (float)(w[0] * p->theta[(size_t)idx[0] * C + c] + w[1] * p->theta[(size_t)idx[1] * C + c] +
                                                w[2] * p->theta[(size_t)idx[2] * C + c]);
    }
}

/* dext (T rows, the embedding backward's) folded into dtheta: row t < n its own; hier's row t >= n through its three
 * coefficients (in order of t: deterministic); rand's rows past n are fixed */
static void fold_ape_ext(struct epar_nnpos *p, int T)
{
    int C = p->C;
    for (int t = 0; t < T; t++) {
        const float *g = p->dext + (size_t)t * C;
        if (t < p->ntrain) {
            for (int c = 0; c < C; c++) p->dtheta[(size_t)t * C + c] += g[c];
            continue;
        }
        if (p->id != EPAR_MECH_APE_HIER) continue;
        int idx[3];
        double w[3];
        epar_mech_ape_hier_coef(t, p->ntrain, p->mp[1], idx, w);
        for (int k = 0; k < 3; k++)
            for (int c = 0; c < C; c++) p->dtheta[(size_t)idx[k] * C + c] += (float)(w[k] * g[c]);
    }
}

int epar_nnpos_ape_grow(struct epar_nnpos *p, const float *theta, int n)
{
    if ((p->id != EPAR_MECH_APE_RAND && p->id != EPAR_MECH_APE_HIER) || n < 1 || n > p->ntrain || !p->theta)
        return epar_err_set(EPAR_EINVAL, "%s cannot take a table of %d rows", epar_nnpos_name(p->id), n);
    int C = p->C;
    memmove(p->theta, theta, (size_t)n * C * sizeof *p->theta);
    double *row = epar_err_alloc((size_t)C, sizeof *row, "the position table");
    if (!row) return EPAR_ENOMEM;
    for (int t = n; t < p->ntrain; t++) {
        if (p->id == EPAR_MECH_APE_RAND) {
            epar_mech_ape_rand_row(p->s.seed, t, C, p->s.init_sd, row);
        } else {
            int idx[3];
            double w[3];
            epar_mech_ape_hier_coef(t, n, p->mp[1], idx, w);
            for (int c = 0; c < C; c++)
                row[c] = w[0] * p->theta[(size_t)idx[0] * C + c] + w[1] * p->theta[(size_t)idx[1] * C + c] +
                         w[2] * p->theta[(size_t)idx[2] * C + c];
        }
        for (int c = 0; c < C; c++) p->theta[(size_t)t * C + c] = (float)row[c];
    }
    free(row);
    p->T = 0;
    return EPAR_OK;
}

/* ---- FLOATER (§7): the recursive rotation's table, scaled as the sinusoid ---- */

static int build_floater(struct epar_nnpos *p)
{
    size_t n = (size_t)p->Tmax * p->C;
    if (need(&p->pe, n, sizeof *p->pe, "the FLOATER table")) return EPAR_ENOMEM;
    double *P = epar_err_alloc(n, sizeof *P, "the FLOATER table");
    if (!P) return EPAR_ENOMEM;
    epar_mech_floater(p->Tmax, p->C, p->mp[0], P);
    for (size_t t = 0; t < n; t++) p->pe[t] = (float)(p->s.init_sd * P[t]);
    free(P);
    return EPAR_OK;
}

/* ---- FLOATER with learned dynamics (§7, S3 003:45-49): p_0 = floater's p_0 (fixed), one explicit Euler step per
 * position p_{t+1} = p_t + h(p_t, t) with h(p, t) = (R - I) p + W2 tanh(W1 p + b1 + tau_t w) + b2, i.e.
 * p_{t+1} = R p_t + W2 a_t + b2, a_t = tanh(W1 p_t + b1 + tau_t w), tau_t = t / train_length; R is floater's rotation
 * (the sinusoid's dynamics, fixed), the rest of h learned. theta = W1 (H, C), b1 (H), w (H), W2 (C, H), b2 (C),
 * H = floater-learned.hidden; init W1 ~ N(0, 1/C), w ~ N(0, 1), b1 = W2 = b2 = 0, so the table starts as floater's
 * (the particular solution h = (R - I) p). ext = init_sd p_t (floater's scale), computed once per forward for the
 * length T (batch independent, O(T H C)); its gradient goes back through the recursion (BPTT over positions) ---- */

#define FL_H(p) ((int)(p)->mp[1])
static size_t n_floater_learned(const struct epar_nnpos *p)
{
    size_t H = (size_t)FL_H(p), C = (size_t)p->C;
    return 2 * H * C + 2 * H + C;
}

static void init_floater_learned(struct epar_nnpos *p, gsl_rng *r)
{
    size_t H = (size_t)FL_H(p), C = (size_t)p->C;
    memset(p->theta, 0, n_floater_learned(p) * sizeof *p->theta);
    epar_rng_normal_f(r, p->theta, H * C, 1 / sqrt((double)C));
    epar_rng_normal_f(r, p->theta + H * C + H, H, 1.0);
}

static int build_floater_learned(struct epar_nnpos *p)
{
    int H = FL_H(p), C = p->C;
    size_t n = (size_t)p->Tmax * C;
    if (need(&p->ext, n, sizeof *p->ext, "the FLOATER table") || need(&p->dext, n, sizeof *p->dext, "the FLOATER table"))
        return EPAR_ENOMEM;
    /* ode: states p_t (Tmax, C), activations a_t (Tmax, H), the rotation's cos / sin (C + 1), adjoints (3 C), dz (H) */
    size_t nw = n + (size_t)p->Tmax * H + (size_t)(C + 1) + 3 * (size_t)C + (size_t)H;
    if (need(&p->ode, nw, sizeof *p->ode, "the FLOATER recursion")) return EPAR_ENOMEM;
    epar_mech_floater_angles(C, p->mp[0], p->ode + n + (size_t)p->Tmax * H);
    return EPAR_OK;
}

static void prepare_floater_learned(struct epar_nnpos *p, int T)
{
    int H = FL_H(p), C = p->C;
    const float *W1 = p->theta, *b1 = W1 + (size_t)H * C, *w = b1 + H, *W2 = w + H, *b2 = W2 + (size_t)C * H;
    double *P = p->ode, *A = P + (size_t)p->Tmax * C, *cs = A + (size_t)p->Tmax * H;
    epar_mech_floater(1, C, p->mp[0], P);
    for (int t = 0; t < T; t++) {
        const double *pt = P + (size_t)t * C;
        double *at = A + (size_t)t * H;
        for (int c = 0; c < C; c++) p->ext[(size_t)t * C + c] = (float)(p->s.init_sd * pt[c]);
        if (t + 1 == T) break;
        double tau = t / p->mp[2];
        for (int k = 0; k < H; k++) {
            double z = b1[k] + tau * w[k];
            for (int c = 0; c < C; c++) z += (double)W1[(size_t)k * C + c] * pt[c];
            at[k] = tanh(z);
        }
        double *nx = P + (size_t)(t + 1) * C;
        epar_mech_floater_rotate(C, cs, 1, pt, nx);
        for (int c = 0; c < C; c++) {
            double v = b2[c];
            for (int k = 0; k < H; k++) v += (double)W2[(size_t)c * H + k] * at[k];
            nx[c] += v;
        }
    }
}

/* dext (T rows: dL/d ext_t) back through the recursion: lambda_t = dL/dp_t = init_sd dext_t + R^T lambda_{t+1}
 * + W1^T dz_t, dz_t = (1 - a_t^2) (W2^T lambda_{t+1}); dW2 += lambda_{t+1} a_t^T, db2 += lambda_{t+1}, dW1 += dz_t p_t^T,
 * db1 += dz_t, dw += tau_t dz_t (p_0 fixed) */
static void fold_floater_learned(struct epar_nnpos *p, int T)
{
    int H = FL_H(p), C = p->C;
    const float *W1 = p->theta, *W2 = W1 + (size_t)H * C + 2 * (size_t)H;
    float *gW1 = p->dtheta, *gb1 = gW1 + (size_t)H * C, *gw = gb1 + H, *gW2 = gw + H, *gb2 = gW2 + (size_t)C * H;
    double *P = p->ode, *A = P + (size_t)p->Tmax * C, *cs = A + (size_t)p->Tmax * H, *lam = cs + (C + 1), *nxt = lam + C,
           *tmp = nxt + C, *dz = tmp + C;
    for (int c = 0; c < C; c++) lam[c] = p->s.init_sd * p->dext[(size_t)(T - 1) * C + c];
    for (int t = T - 2; t >= 0; t--) {
        memcpy(nxt, lam, (size_t)C * sizeof *nxt);   /* lambda_{t+1} */
        const double *pt = P + (size_t)t * C, *at = A + (size_t)t * H;
        double tau = t / p->mp[2];
        for (int c = 0; c < C; c++) {
            gb2[c] += (float)nxt[c];
            for (int k = 0; k < H; k++) gW2[(size_t)c * H + k] += (float)(nxt[c] * at[k]);
        }
        for (int k = 0; k < H; k++) {
            double v = 0;
            for (int c = 0; c < C; c++) v += (double)W2[(size_t)c * H + k] * nxt[c];
            dz[k] = (1 - at[k] * at[k]) * v;
            gb1[k] += (float)dz[k];
            gw[k] += (float)(tau * dz[k]);
            for (int c = 0; c < C; c++) gW1[(size_t)k * C + c] += (float)(dz[k] * pt[c]);
        }
        epar_mech_floater_rotate(C, cs, -1, nxt, tmp);
        for (int c = 0; c < C; c++) {
            double v = tmp[c] + p->s.init_sd * p->dext[(size_t)t * C + c];
            for (int k = 0; k < H; k++) v += (double)W1[(size_t)k * C + c] * dz[k];
            lam[c] = v;
        }
    }
}

/* ---- multiplicative PE (§8): x_t = e_t * p_t; variant 0 learns p (from 1 + N(0, sd^2)), 1 and 2 are fixed
 * (sinusoid, 1 + sinusoid) ---- */

static int build_mult_pe(struct epar_nnpos *p)
{
    p->pe_mul = 1;
    int variant = (int)p->mp[0];
    if (variant == 0) return EPAR_OK;   /* the learned table is theta */
    if (need(&p->pe, (size_t)p->Tmax * p->C, sizeof *p->pe, "the multiplicative table")) return EPAR_ENOMEM;
    double *row = epar_err_alloc((size_t)p->C, sizeof *row, "the multiplicative table");
    if (!row) return EPAR_ENOMEM;
    for (int t = 0; t < p->Tmax; t++) {
        epar_mech_sinusoid((double)t, p->C, 10000.0, 0, row);
        for (int c = 0; c < p->C; c++) p->pe[(size_t)t * p->C + c] = (float)(row[c] + (variant == 2 ? 1.0 : 0.0));
    }
    free(row);
    return EPAR_OK;
}

static size_t n_mult_pe(const struct epar_nnpos *p) { return (int)p->mp[0] == 0 ? (size_t)p->Tmax * p->C : 0; }
/* variant 0's learned table has a row per position: defined at the trained length only */
static int fixed_mult_pe(const struct epar_nnpos_settings *s, enum epar_mech_id id) { return (int)s->mp[id][0] == 0; }

static void init_mult_pe(struct epar_nnpos *p, gsl_rng *r)
{
    size_t n = n_mult_pe(p);
    epar_rng_normal_f(r, p->theta, n, p->mp[1]);
    for (size_t t = 0; t < n; t++) p->theta[t] += 1.0f;
}

/* ---- RoPE family (§14-16): cos/sin of pos(t) theta_i from epar_mech_rope_rotate applied to (1, 0) pairs;
 * rope: pos(t) = t at the settings' base; ntk-rope: base * s^(hs/(hs-2)) with s = T / L_train when T > L_train;
 * interpolation: pos(t) = t L_train / T when T > L_train ---- */

static int check_rope(enum epar_mech_id id, const struct epar_nnpos_settings *s, int hs)
{
    if (id == EPAR_MECH_ROPE && s->mp[id][1] != 0) {
        epar_err_set(EPAR_EINVAL, "invalid value for rope.half: '%g' (training rotates interleaved pairs)", s->mp[id][1]);
        epar_err_hint("rope.half=1 (GPT-NeoX pairs) is compare's analysis variant; train with rope.half=0");
        return EPAR_EINVAL;
    }
    if (hs % 2) return epar_err_set(EPAR_EINVAL, "%s needs an even head width (dim / heads), got '%d'",
                                    epar_nnpos_name(id), hs);
    if (id == EPAR_MECH_NTK_ROPE && hs < 4)
        return epar_err_set(EPAR_EINVAL, "ntk-rope needs a head width >= 4, got '%d'", hs);
    return EPAR_OK;
}

static void rope_fill(struct epar_nnpos *p, int T, double base, double pos_scale)
{
    int h2 = p->hs / 2;
    double *v = (double *)p->work;   /* (hs) */
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < h2; i++) { v[2 * i] = 1.0; v[2 * i + 1] = 0.0; }
        epar_mech_rope_rotate(v, p->hs, t * pos_scale, base, 0);  /* (1,0) -> (cos, sin) */
        for (int i = 0; i < h2; i++) {
            p->rcos[(size_t)t * h2 + i] = (float)v[2 * i];
            p->rsin[(size_t)t * h2 + i] = (float)v[2 * i + 1];
        }
    }
}

static int alloc_rope(struct epar_nnpos *p)
{
    size_t n = (size_t)p->Tmax * (p->hs / 2);
    if (need(&p->rcos, n, sizeof *p->rcos, "the RoPE table") || need(&p->rsin, n, sizeof *p->rsin, "the RoPE table") ||
        need(&p->work, (size_t)p->hs, sizeof(double), "the RoPE table"))
        return EPAR_ENOMEM;
    return EPAR_OK;
}

static int build_rope(struct epar_nnpos *p)
{
    int st = alloc_rope(p);
    if (!st) rope_fill(p, p->Tmax, p->mp[0], 1.0);   /* rope.base */
    return st;
}

static void prepare_ntk(struct epar_nnpos *p, int T)
{
    if (p->T == T) return;
    double s = T / p->mp[1];
    rope_fill(p, T, s > 1 ? epar_mech_ntk_base(p->mp[0], s, p->hs) : p->mp[0], 1.0);
}

static void prepare_interp(struct epar_nnpos *p, int T)
{
    if (p->T == T) return;
    rope_fill(p, T, p->mp[0], T > p->mp[1] ? p->mp[1] / T : 1.0);
}

/* ---- log-n (§17): kappa_t = log_{L_train}(t + 1) (n = t + 1 keys visible, causal), clamped at 1 ---- */

static int build_logn(struct epar_nnpos *p)
{
    if (need(&p->qscale, (size_t)p->Tmax, sizeof *p->qscale, "the log-n scales")) return EPAR_ENOMEM;
    for (int t = 0; t < p->Tmax; t++) p->qscale[t] = (float)epar_mech_logn(t + 1.0, p->mp[0], (int)p->mp[1]);
    return EPAR_OK;
}

/* ---- ALiBi (§18): bias[h][d] = -m_h d ---- */

static int build_alibi(struct epar_nnpos *p)
{
    if (need(&p->bias, (size_t)p->NH * p->Tmax, sizeof *p->bias, "the ALiBi table") ||
        need(&p->slopes, (size_t)p->NH, sizeof *p->slopes, "the ALiBi slopes"))
        return EPAR_ENOMEM;
    epar_mech_alibi_slopes(p->NH, p->mp[0], p->slopes);   /* alibi.max_bias */
    for (int h = 0; h < p->NH; h++)
        for (int d = 0; d < p->Tmax; d++) p->bias[(size_t)h * p->Tmax + d] = (float)(-p->slopes[h] * d);
    return EPAR_OK;
}

/* ---- alibi-learned (§18): theta = the NH slopes m_h, shared by the layers, initialised at ALiBi's (alibi-learned.max_bias);
 * bias[h][d] = -m_h d as ALiBi's, prepared from theta before every forward; dL/dm_h = -sum_{b, d} d gbias[b][h][d] ---- */

static size_t n_alibi_learned(const struct epar_nnpos *p) { return (size_t)p->NH; }

static void init_alibi_learned(struct epar_nnpos *p, gsl_rng *r)
{
    (void)r;
    for (int h = 0; h < p->NH; h++) p->theta[h] = (float)p->slopes[h];
}

static void prepare_alibi_learned(struct epar_nnpos *p, int T)
{
    for (int h = 0; h < p->NH; h++) {
        p->slopes[h] = p->theta[h];   /* what inspect reports as the head's slope: the learned one */
        for (int d = 0; d < T; d++) p->bias[(size_t)h * p->Tmax + d] = -p->theta[h] * (float)d;
    }
}

static void backward_alibi_learned(struct epar_nnpos *p, int l, const struct epar_nnpos_grad *gr, int B, int T)
{
    (void)l;
    /* fixed order: b, then d, for each head (deterministic whatever the thread count); fp64 sum per head */
    for (int h = 0; h < p->NH; h++) {
        double g = 0;
        for (int b = 0; b < B; b++) {
            const float *gb = gr->gbias + ((size_t)b * p->NH + h) * T;
            for (int d = 1; d < T; d++) g -= (double)d * gb[d];
        }
        p->dtheta[h] += (float)g;
    }
}

/* ---- T5 (§11): theta = B (buckets, NH), causal (unidirectional) buckets of rel = j - i = -d; t5.num_buckets,
 * t5.max_distance, the table drawn N(0, t5.init_sd^2) ---- */

static size_t n_t5(const struct epar_nnpos *p) { return (size_t)p->mp[0] * p->NH; }
static void init_t5(struct epar_nnpos *p, gsl_rng *r) { epar_rng_normal_f(r, p->theta, n_t5(p), p->mp[2]); }

static int check_t5(enum epar_mech_id id, const struct epar_nnpos_settings *s, int hs)
{
    (void)hs;
    int nb = (int)s->mp[id][0], md = (int)s->mp[id][1];
    if (md <= nb / 2)
        return epar_err_set(EPAR_EINVAL, "t5 needs max_distance > num_buckets / 2 (causal buckets), got t5.num_buckets "
                            "'%d' and t5.max_distance '%d'", nb, md);
    return EPAR_OK;
}

static int build_t5(struct epar_nnpos *p)
{
    if (need(&p->bias, (size_t)p->NH * p->Tmax, sizeof *p->bias, "the T5 bias table") ||
        need(&p->bucket, (size_t)p->Tmax, sizeof *p->bucket, "the T5 buckets"))
        return EPAR_ENOMEM;
    for (int d = 0; d < p->Tmax; d++) p->bucket[d] = epar_mech_t5_bucket(-d, 0, (int)p->mp[0], (int)p->mp[1]);
    return EPAR_OK;
}

static void prepare_t5(struct epar_nnpos *p, int T)
{
    for (int h = 0; h < p->NH; h++)
        for (int d = 0; d < T; d++) p->bias[(size_t)h * p->Tmax + d] = p->theta[(size_t)p->bucket[d] * p->NH + h];
}

static void backward_t5(struct epar_nnpos *p, int l, const struct epar_nnpos_grad *gr, int B, int T)
{
    (void)l;
    const float *gbias = gr->gbias;
    /* fixed order: b, then d, for each head (deterministic whatever the thread count) */
    for (int h = 0; h < p->NH; h++)
        for (int b = 0; b < B; b++) {
            const float *g = gbias + ((size_t)b * p->NH + h) * T;
            for (int d = 0; d < T; d++) p->dtheta[(size_t)p->bucket[d] * p->NH + h] += g[d];
        }
}

/* ---- EPAR (§3, §4): fac[l][h][d] = m(d; alpha, beta, gamma, L) from lib/posfx ---- */

static size_t n_epar(const struct epar_nnpos *p) { return p->s.learn_posfx ? (size_t)p->NL * p->NH * 3 : 0; }

static void init_epar(struct epar_nnpos *p, gsl_rng *r)
{
    (void)r;
    if (!p->s.learn_posfx) return;
    for (int k = 0; k < p->NL * p->NH; k++) {
        p->theta[3 * k + 0] = (float)log(p->s.fx.alpha);
        p->theta[3 * k + 1] = (float)log(p->s.fx.beta);
        /* basic has no gamma: keep a finite placeholder, its gradient is 0 */
        p->theta[3 * k + 2] = (float)(p->s.fx.gamma > 0 ? log(p->s.fx.gamma) : 0.0);
    }
}

struct epar_posfx epar_nnpos_effect(const struct epar_nnpos *p, int l, int h)
{
    struct epar_posfx fx = p->s.fx;
    if (p->theta && p->s.learn_posfx && epar_nnpos_row(p->id)->hook == EPAR_NNPOS_H_FACTOR) {
        const float *th = p->theta + ((size_t)l * p->NH + h) * 3;
        fx.alpha = exp((double)th[0]);
        fx.beta = exp((double)th[1]);
        if (fx.form == EPAR_FORM_ENHANCED) fx.gamma = exp((double)th[2]);
    }
    return fx;
}

static int check_epar(enum epar_mech_id id, const struct epar_nnpos_settings *s, int hs)
{
    (void)hs;
    struct epar_posfx fx = s->fx;
    fx.form = id == EPAR_MECH_EPAR_BASIC ? EPAR_FORM_BASIC : EPAR_FORM_ENHANCED;
    int st = epar_posfx_validate(&fx);
    if (st) return st;
    if (s->learn_posfx && (fx.beta <= 0 || (fx.form == EPAR_FORM_ENHANCED && fx.gamma <= 0))) {
        epar_err_set(EPAR_EINVAL, "--learn-posfx needs beta > 0%s to start from, got beta '%g' gamma '%g'",
                     fx.form == EPAR_FORM_ENHANCED ? " and gamma > 0" : "", fx.beta, fx.gamma);
        epar_err_hint("learned parameters are exp(theta) to stay positive, so they cannot start at 0");
        return EPAR_EINVAL;
    }
    return EPAR_OK;
}

static int build_epar(struct epar_nnpos *p)
{
    size_t tm = (size_t)p->Tmax;
    p->s.fx.form = p->id == EPAR_MECH_EPAR_BASIC ? EPAR_FORM_BASIC : EPAR_FORM_ENHANCED;
    if (need(&p->fac, (size_t)p->NL * p->NH * tm, sizeof *p->fac, "the position-effect tables")) return EPAR_ENOMEM;
    if (p->s.learn_posfx &&
        need(&p->dfac, (size_t)p->NL * p->NH * 3 * tm, sizeof *p->dfac, "the position-effect derivatives"))
        return EPAR_ENOMEM;
    return EPAR_OK;
}

static void prepare_epar(struct epar_nnpos *p, int T)
{
    double L = p->s.posfx_length > 0 ? (double)p->s.posfx_length : (double)T;
    if (!p->s.learn_posfx && p->T == T) return;   /* fixed effect: tables only change with T */
    for (int l = 0; l < p->NL; l++)
        for (int h = 0; h < p->NH; h++) {
            struct epar_posfx fx = epar_nnpos_effect(p, l, h);
            float *f = p->fac + ((size_t)l * p->NH + h) * p->Tmax;
            for (int d = 0; d < T; d++) f[d] = (float)epar_posfx_value(&fx, (double)d, L);
            if (!p->s.learn_posfx) continue;
            double par[3] = {fx.alpha, fx.beta, fx.gamma};
            float *df = p->dfac + ((size_t)l * p->NH + h) * 3 * p->Tmax;
            for (int d = 0; d < T; d++) {
                double g[3];
                epar_posfx_param_grad(&fx, (double)d, L, g);
                /* chain rule through the exp parametrisation: dm/dtheta = dm/dpar * par */
                for (int k = 0; k < 3; k++) df[(size_t)k * p->Tmax + d] = (float)(g[k] * par[k]);
            }
        }
}

static void backward_epar(struct epar_nnpos *p, int l, const struct epar_nnpos_grad *gr, int B, int T)
{
    const float *gfac = gr->gfac;
    if (!p->s.learn_posfx) return;
    for (int h = 0; h < p->NH; h++) {
        const float *df = p->dfac + ((size_t)l * p->NH + h) * 3 * p->Tmax;
        for (int k = 0; k < 3; k++) {
            double acc = 0.0;
            for (int b = 0; b < B; b++) {
                const float *g = gfac + ((size_t)b * p->NH + h) * T;
                for (int d = 0; d < T; d++) acc += (double)g[d] * df[(size_t)k * p->Tmax + d];
            }
            p->dtheta[((size_t)l * p->NH + h) * 3 + k] += (float)acc;
        }
    }
}

/* ---- GQA / MQA (§28): G = gqa.groups K/V heads, each shared by NH/G query heads; lib/nn projects x onto C + 2 G hs
 * outputs (q of every head, then G k heads, then G v heads) and gives query head h the pair floor(h / (NH/G))
 * (lib/mech's epar_mech_gqa_group). Trained from the start, the G heads are learned directly: gqa.pool (how compare
 * converts a multi-head model's K slices, mean or first) does not apply. ---- */

int epar_nnpos_kv_heads(enum epar_mech_id id, const struct epar_nnpos_settings *s, int NH)
{
    if (id != EPAR_MECH_GQA) return NH;
    int G = (int)s->mp[id][0];
    return G >= 1 && NH % G == 0 ? G : 0;
}

int epar_nnpos_check_heads(enum epar_mech_id id, const struct epar_nnpos_settings *s, int NH)
{
    if (epar_nnpos_kv_heads(id, s, NH) > 0) return EPAR_OK;
    epar_err_set(EPAR_EINVAL, "gqa.groups '%g' must divide the number of heads %d", s->mp[id][0], NH);
    epar_err_hint("set --set gqa.groups=N with N a divisor of --heads (1: multi-query attention)");
    return EPAR_EINVAL;
}

/* ---- masks (§22-26) and fixed patterns (§19): one (T, T) table added to z, rebuilt when T changes ---- */

static int build_pair(struct epar_nnpos *p, size_t work_elem)
{
    size_t n = (size_t)p->Tmax * p->Tmax;
    if (need(&p->pair, n, sizeof *p->pair, "the attention pattern") || need(&p->work, n, work_elem, "the attention pattern"))
        return EPAR_ENOMEM;
    return EPAR_OK;
}

static int build_mask(struct epar_nnpos *p) { return build_pair(p, 1); }

/* the fixed patterns: the weights ln W_ij with the content score multiplied by 0 (no gradient reaches q, k) */
static int build_fixed(struct epar_nnpos *p)
{
    int st = build_pair(p, sizeof(double));
    if (!st) st = need(&p->fac, (size_t)p->NL * p->NH * p->Tmax, sizeof *p->fac, "the fixed pattern's factor");
    return st;
}

static int check_sparse_fixed(enum epar_mech_id id, const struct epar_nnpos_settings *s, int hs)
{
    (void)hs;
    const double *mp = s->mp[id];
    if (mp[0] > 0 && mp[1] > mp[0])
        return epar_err_set(EPAR_EINVAL, "sparse-fixed.summary '%g' exceeds the stride %g", mp[1], mp[0]);
    return EPAR_OK;
}

void epar_nnpos_mask_to_pair(const struct epar_nnpos *p, float *pair, const unsigned char *M, int T)
{
    for (int i = 0; i < T; i++) {
        float *row = pair + (size_t)i * p->Tmax;
        int any = 0;
        for (int j = 0; j <= i; j++) {
            row[j] = M[(size_t)i * T + j] ? 0.0f : -INFINITY;
            any |= M[(size_t)i * T + j];
        }
        if (!any) row[i] = 0.0f;
    }
}

static void prepare_strided(struct epar_nnpos *p, int T)
{
    if (p->T == T) return;
    epar_mech_mask_strided(T, epar_mech_auto_stride(p->mp[0], T), (int)p->mp[1], p->work);
    epar_nnpos_mask_to_pair(p, p->pair, p->work, T);
}

/* random-sparse: the band of strided's l and random earlier keys, drawn from the key of the run's seed (the draw of
 * row i does not depend on T) */
static int build_random(struct epar_nnpos *p)
{
    gsl_rng *r = epar_rng_alloc(p->s.seed, 1000UL + (unsigned long)p->id, EPAR_RNG_MECH);
    int st = !r ? EPAR_ENOMEM : build_mask(p);
    if (!st) p->mask_key = epar_mech_random_key(r);
    epar_rng_free(r);
    return st;
}

static void prepare_random(struct epar_nnpos *p, int T)
{
    if (p->T == T) return;
    epar_mech_mask_random(T, epar_mech_auto_stride(p->mp[0], T), (int)p->mp[1], p->mask_key, p->work);
    epar_nnpos_mask_to_pair(p, p->pair, p->work, T);
}

static void prepare_sparse_fixed(struct epar_nnpos *p, int T)
{
    if (p->T == T) return;
    epar_mech_mask_sparse_fixed(T, epar_mech_auto_stride(p->mp[0], T), (int)p->mp[1], p->work);
    epar_nnpos_mask_to_pair(p, p->pair, p->work, T);
}

static void prepare_window(struct epar_nnpos *p, int T)
{
    if (p->T == T) return;
    epar_mech_mask_window(T, (int)p->mp[0], p->work);
    epar_nnpos_mask_to_pair(p, p->pair, p->work, T);
}

static void prepare_block(struct epar_nnpos *p, int T)
{
    if (p->T == T) return;
    epar_mech_mask_block(T, (int)p->mp[0], (int)p->mp[1], 1, p->work);
    epar_nnpos_mask_to_pair(p, p->pair, p->work, T);
}

static void prepare_global_local(struct epar_nnpos *p, int T)
{
    if (p->T == T) return;
    epar_mech_mask_global_local(T, (int)p->mp[0], (int)p->mp[1], p->work);
    epar_nnpos_mask_to_pair(p, p->pair, p->work, T);
}

/* Raganato pattern (lib/mech numbering) at length T: pair = ln W (-inf where W = 0) */
static void prepare_pattern(struct epar_nnpos *p, int T, int pattern)
{
    if (p->T == T) return;
    double *W = p->work;
    epar_mech_fixed_pattern(pattern, T, W);
    for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++) {
            double w = W[(size_t)i * T + j];
            p->pair[(size_t)i * p->Tmax + j] = w > 0 ? (float)log(w) : -INFINITY;
        }
}

static void prepare_fixed_current(struct epar_nnpos *p, int T) { prepare_pattern(p, T, 1); }
static void prepare_fixed_previous(struct epar_nnpos *p, int T) { prepare_pattern(p, T, 2); }
static void prepare_fixed_left(struct epar_nnpos *p, int T) { prepare_pattern(p, T, 4); }

/* ---- fixed-mix and learnable-only (S1 §1.3, Raganato et al.'s 7F+1L and 1L): per layer the last head learned,
 * heads 0..NH-2 fixed patterns (factor 0, their own pair table) or removed (output 0); one pair table per head, the
 * same in every layer ---- */

int epar_nnpos_mix_pattern(int h)
{
    static const int pattern[] = {1, 2, 4, 8};   /* the causal ones of S1's current, previous, next, left, right, first */
    return pattern[h % 4];
}

static int build_mix(struct epar_nnpos *p)
{
    int learned = p->id != EPAR_MECH_FIXED_ONLY;   /* the last head learned (fixed-mix, learnable-only) */
    if (p->NH < 1 + learned) {
        epar_err_set(EPAR_EINVAL, "mechanism '%s' needs at least 2 heads (fixed heads and one learned), got %d",
                     epar_mech_row(p->id)->id, p->NH);
        epar_err_hint("set --heads 8 for S1's 7 fixed + 1 learned heads");
        return EPAR_EINVAL;
    }
    size_t n = (size_t)p->Tmax * p->Tmax;
    p->pair_head = n;
    if (need(&p->pair, n * p->NH, sizeof *p->pair, "the per-head patterns") || need(&p->work, n, sizeof(double), "the patterns") ||
        need(&p->fac, (size_t)p->NL * p->NH * p->Tmax, sizeof *p->fac, "the per-head factor"))
        return EPAR_ENOMEM;
    for (int l = 0; l < p->NL && learned; l++)   /* the learned head's factor 1; the fixed heads' 0 (no q, k gradient) */
        for (int d = 0; d < p->Tmax; d++) p->fac[((size_t)l * p->NH + p->NH - 1) * p->Tmax + d] = 1.0f;
    if (p->id == EPAR_MECH_LEARNABLE_ONLY) {
        if (need(&p->head_off, (size_t)p->NH, 1, "the removed heads")) return EPAR_ENOMEM;
        memset(p->head_off, 1, (size_t)p->NH - 1);
    }
    return EPAR_OK;
}

static void prepare_mix(struct epar_nnpos *p, int T)
{
    if (p->T == T) return;
    double *W = p->work;
    int nfix = p->id == EPAR_MECH_FIXED_ONLY ? p->NH : p->NH - 1;
    for (int h = 0; h < nfix; h++) {   /* a learned last head's table stays 0 (its causal rows: the kernel's j <= i) */
        float *pair = p->pair + (size_t)h * p->pair_head;
        epar_mech_fixed_pattern(epar_nnpos_mix_pattern(h), T, W);
        for (int i = 0; i < T; i++)
            for (int j = 0; j <= i; j++) {
                double w = W[(size_t)i * T + j];
                pair[(size_t)i * p->Tmax + j] = w > 0 ? (float)log(w) : -INFINITY;
            }
    }
}

/* ---- the registry: one row per trainable catalogue mechanism ---- */

#define H_(hook, uses, fixed_len, summary) EPAR_NNPOS_H_##hook, uses, fixed_len, summary
#define FIXED_FNS(prep) NULL, build_fixed, n_zero, init_nothing, prep, backward_nothing, NULL
#define MASK_FNS(check, prep) check, build_mask, n_zero, init_nothing, prep, backward_nothing, NULL
/* no content bias (rel_forward, rel_row, rel_backward) and no term on the last layer's input (last_input, _backward):
 * the hooks of lib/mechs/relative.c, named in every row so that no field is left to an implicit zero */
#define NO_REL_INPUT NULL, NULL, NULL, NULL, NULL

static const struct epar_nnpos_info nnpos_rows[EPAR_MECH_COUNT] = {
    [EPAR_MECH_NONE] = {H_(BASELINE, 1, 0, "causal mask only, no position information"),
                        NULL, build_nothing, n_zero, init_nothing, prepare_nothing, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_EPAR_BASIC] = {H_(FACTOR, 0, 0, "scaled score times alpha exp(-beta |i-j|/L)"),
                              check_epar, build_epar, n_epar, init_epar, prepare_epar, backward_epar, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_EPAR_ENHANCED] = {H_(FACTOR, 0, 0, "scaled score times alpha (1 + gamma exp(-beta |i-j|/L)) / (1 + gamma)"),
                                 check_epar, build_epar, n_epar, init_epar, prepare_epar, backward_epar, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_SINUSOIDAL] = {H_(INPUT, 1, 0, "init_sd times the sinusoid added to the token embeddings"),
                              NULL, build_sinusoidal, n_zero, init_nothing, prepare_nothing, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_LEARNED_APE] = {H_(INPUT, 0, 1, "learned absolute table added to the embeddings"),
                               NULL, build_nothing, n_learned, init_learned, prepare_nothing, backward_learned, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_APE_RAND] = {H_(INPUT, 1, 0, "learned table of train_length rows added to the embeddings; rows past it random, fixed"),
                            NULL, build_ape_ext, n_ape_ext, init_ape_ext, prepare_ape_ext, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_APE_HIER] = {H_(INPUT, 1, 0, "learned table of train_length rows added to the embeddings; rows past it its "
                                            "hierarchical decomposition"),
                            NULL, build_ape_ext, n_ape_ext, init_ape_ext, prepare_ape_ext, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_FLOATER] = {H_(INPUT, 1, 0, "init_sd times the FLOATER rotation table added to the embeddings"),
                           NULL, build_floater, n_zero, init_nothing, prepare_nothing, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_FLOATER_LEARNED] = {H_(INPUT, 1, 0, "init_sd times FLOATER's table with learned dynamics p_{t+1} = R p_t + "
                                                  "W2 tanh(W1 p_t + b1 + tau_t w) + b2 added to the embeddings"),
                                   NULL, build_floater_learned, n_floater_learned, init_floater_learned,
                                   prepare_floater_learned, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_MULT_PE] = {H_(INPUT, 1, 0, "embeddings times p_t (variant 0: p learned from 1 + N(0, sd^2))"),
                           NULL, build_mult_pe, n_mult_pe, init_mult_pe, prepare_nothing, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT,
                           fixed_mult_pe},
    [EPAR_MECH_T5] = {H_(BIAS, 1, 0, "learned bias per head and distance bucket (causal), shared by the layers"),
                      check_t5, build_t5, n_t5, init_t5, prepare_t5, backward_t5, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_ROPE] = {H_(QK, 1, 0, "q and k rotated by position (interleaved pairs)"),
                        check_rope, build_rope, n_zero, init_nothing, prepare_nothing, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_NTK_ROPE] = {H_(QK, 1, 0, "RoPE with the NTK base for T > train_length"),
                            check_rope, alloc_rope, n_zero, init_nothing, prepare_ntk, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_INTERPOLATION] = {H_(QK, 1, 0, "RoPE at positions t train_length / T for T > train_length"),
                                 check_rope, alloc_rope, n_zero, init_nothing, prepare_interp, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_LOGN] = {H_(QK, 1, 0, "q_t scaled by log_{train_length}(t + 1)"),
                        NULL, build_logn, n_zero, init_nothing, prepare_nothing, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_ALIBI] = {H_(BIAS, 1, 0, "linear distance bias -m_h (i-j), standard slopes"),
                         NULL, build_alibi, n_zero, init_nothing, prepare_nothing, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_ALIBI_LEARNED] = {H_(BIAS, 1, 0, "linear distance bias -m_h (i-j), the slopes m_h learned (from ALiBi's), shared by "
                                         "the layers"),
                                 NULL, build_alibi, n_alibi_learned, init_alibi_learned, prepare_alibi_learned,
                                 backward_alibi_learned, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_FIXED_CURRENT] = {H_(FIXED, 1, 0, "A = I"), FIXED_FNS(prepare_fixed_current), NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_FIXED_PREVIOUS] = {H_(FIXED, 1, 0, "A_i,i-1 = 1 (row 0: itself)"), FIXED_FNS(prepare_fixed_previous), NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_FIXED_LEFT] = {H_(FIXED, 1, 0, "(j+1)^3 over j <= i-2, normalised (rows 0, 1: themselves)"),
                              FIXED_FNS(prepare_fixed_left), NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_GQA] = {H_(HEADS, 1, 0, "groups K/V heads, each shared by heads/groups query heads (groups 1: MQA)"),
                       NULL, build_nothing, n_zero, init_nothing, prepare_nothing, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_STRIDED] = {H_(MASK, 1, 0, "causal {i-l..i} U {(i-j) mod l = 0}"), MASK_FNS(NULL, prepare_strided), NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_SPARSE_FIXED] = {H_(MASK, 1, 0, "causal same block U last c of every block"),
                                MASK_FNS(check_sparse_fixed, prepare_sparse_fixed), NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_SLIDING_WINDOW] = {H_(MASK, 1, 0, "the last radius + 1 keys"), MASK_FNS(NULL, prepare_window), NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_BLOCK_SPARSE] = {H_(MASK, 1, 0, "causal keys of the same and nb previous blocks"),
                                MASK_FNS(NULL, prepare_block), NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_GLOBAL_LOCAL] = {H_(MASK, 1, 0, "causal band U the first globals keys (global rows dense)"),
                                MASK_FNS(NULL, prepare_global_local), NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_ORTHOGONAL_QK] = {H_(PROJ, 1, 0, "q and k projections frozen at independent Haar orthonormal rows per layer and "
                                          "head (no bias; jl: times sqrt(dim/hs)); v and the rest learned"),
                                 NULL, build_nothing, n_zero, init_nothing, prepare_nothing, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_RANDOM_SPARSE] = {H_(MASK, 1, 0, "causal {i-l..i} U random earlier keys, as many as strided's, drawn once from "
                                          "the seed"),
                                 NULL, build_random, n_zero, init_nothing, prepare_random, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_FIXED_MIX] = {H_(FIXED, 0, 0, "heads 0..H-2: A = W_h (current, previous, left, first token, cycled), head "
                                             "H-1 learned softmax"),
                             NULL, build_mix, n_zero, init_nothing, prepare_mix, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_LEARNABLE_ONLY] = {H_(FIXED, 0, 0, "head H-1 learned softmax, heads 0..H-2 output 0"),
                                  NULL, build_mix, n_zero, init_nothing, prepare_mix, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
    [EPAR_MECH_FIXED_ONLY] = {H_(FIXED, 0, 0, "every head h: A = W_h (current, previous, left, first token, cycled)"),
                              NULL, build_mix, n_zero, init_nothing, prepare_mix, backward_nothing, NULL, NULL, NULL, NO_REL_INPUT, NULL},
};
#undef H_
#undef FIXED_FNS
#undef MASK_FNS
#undef NO_REL_INPUT

const struct epar_nnpos_info *epar_nnpos_row(enum epar_mech_id id)
{
    static const struct epar_nnpos_info untrained;   /* hook NONE */
    const struct epar_mech_def *d = epar_mech_file(id);
    if (d) return d->train ? d->train : &untrained;
    return id >= 0 && id < EPAR_MECH_COUNT ? &nnpos_rows[id] : &untrained;
}

void epar_nnpos_scratch(enum epar_mech_id id, const struct epar_nnpos_settings *s, int Tmax, int hs, size_t *per_thread,
                        size_t *per_bh)
{
    *per_thread = *per_bh = 0;
    if (epar_nnpos_trainable(id) && epar_nnpos_row(id)->scratch)
        epar_nnpos_row(id)->scratch(s, id, Tmax, hs, per_thread, per_bh);
}

int epar_nnpos_fixed_length(enum epar_mech_id id, const struct epar_nnpos_settings *s)
{
    if (!epar_nnpos_trainable(id)) return 0;
    const struct epar_nnpos_info *in = epar_nnpos_row(id);
    return in->fixed_length || (in->fixed_length_of && in->fixed_length_of(s, id));
}

int epar_nnpos_frozen_qk(enum epar_mech_id id)
{
    return epar_nnpos_trainable(id) && epar_nnpos_row(id)->hook == EPAR_NNPOS_H_PROJ;
}

int epar_nnpos_trainable(enum epar_mech_id id)
{
    return id >= 0 && id < EPAR_MECH_COUNT && epar_nnpos_row(id)->hook != EPAR_NNPOS_H_NONE;
}

int epar_nnpos_find(const char *name, enum epar_mech_id *id)
{
    enum epar_mech_id k;
    if (!strcmp(name, "learned")) name = "learned-ape";   /* checkpoints and protocols before the one catalogue */
    if (epar_mech_find(name, &k) || !epar_nnpos_trainable(k)) {
        int unknown = epar_mech_find(name, &k) != EPAR_OK;
        epar_err_set(EPAR_EINVAL, "%s mechanism '%s'", unknown ? "unknown" : "untrainable", name);
        struct epar_nearest near;
        epar_nearest_init(&near, name);
        for (int q = 0; unknown && q < EPAR_MECH_COUNT; q++)
            if (epar_nnpos_trainable((enum epar_mech_id)q)) epar_nearest_add(&near, epar_mech_row(q)->id);
        if (near.best) epar_err_hint("did you mean %s? (training supports: %s)", epar_nearest_text(&near, ""),
                                     epar_nnpos_list());
        else epar_err_hint("training supports: %s", epar_nnpos_list());
        return EPAR_EINVAL;
    }
    *id = k;
    return EPAR_OK;
}

const char *epar_nnpos_name(enum epar_mech_id id)
{
    return id >= 0 && id < EPAR_MECH_COUNT ? epar_mech_row(id)->id : "?";
}

const char *epar_nnpos_list(void)
{
    static char buf[1024];
    if (!buf[0])
        for (int k = 0; k < EPAR_MECH_COUNT; k++)
            if (epar_nnpos_trainable((enum epar_mech_id)k)) {
                size_t n = strlen(buf);
                snprintf(buf + n, sizeof buf - n, "%s%s", n ? ", " : "", epar_mech_row(k)->id);
            }
    return buf;
}

void epar_nnpos_settings_default(struct epar_nnpos_settings *s)
{
    memset(s, 0, sizeof *s);
    s->fx = (struct epar_posfx){EPAR_FORM_ENHANCED, 1.0, 1.0, 0.5};
    s->init_sd = 0.02;
    s->seed = 42;
    for (int k = 0; k < EPAR_MECH_COUNT; k++) {
        epar_mech_defaults((enum epar_mech_id)k, s->mp[k]);
        int i = epar_mech_param_index((enum epar_mech_id)k, "train_length");
        if (i >= 0) s->mp[k][i] = 0;   /* the trained length (epar_nnpos_resolve), not the analysis default */
    }
}

void epar_nnpos_resolve(struct epar_nnpos_settings *s, int trained_length)
{
    for (int k = 0; k < EPAR_MECH_COUNT; k++) {
        int i = epar_mech_param_index((enum epar_mech_id)k, "train_length");
        if (i >= 0 && s->mp[k][i] == 0) s->mp[k][i] = trained_length;
    }
}

int epar_nnpos_set(struct epar_nnpos_settings *s, const char *assignment)
{
    const char *dot = strchr(assignment, '.'), *eq = strchr(assignment, '=');
    if (!dot || !eq || eq < dot || dot == assignment)
        return epar_err_set(EPAR_EINVAL, "--set expects mech.param=value, got '%s'", assignment);
    char mech[64], param[64];
    snprintf(mech, sizeof mech, "%.*s", (int)(dot - assignment), assignment);
    snprintf(param, sizeof param, "%.*s", (int)(eq - dot - 1), dot + 1);
    enum epar_mech_id id;
    int st = epar_nnpos_find(mech, &id);
    if (st) return st;
    if (!epar_nnpos_row(id)->uses_params) {   /* EPAR (the preset's or learned alpha, beta, gamma), learned-ape */
        int epar = id == EPAR_MECH_EPAR_BASIC || id == EPAR_MECH_EPAR_ENHANCED;
        epar_err_set(EPAR_EINVAL, "'%s': training sets %s %s", assignment, mech,
                     epar ? "through --alpha --beta --gamma or the preset" :
                            "from the run (its table has the trained length and the run's init_sd)");
        epar_err_hint("see 'epar train --help' (Position mechanism)");
        return EPAR_EINVAL;
    }
    char *end;
    double v = strtod(eq + 1, &end);
    if (end == eq + 1 || *end) return epar_err_set(EPAR_EINVAL, "--set %s: '%s' is not a number", assignment, eq + 1);
    return epar_mech_set_param(id, s->mp[id], param, v);
}

int epar_nnpos_validate(enum epar_mech_id id, const struct epar_nnpos_settings *s, int hs)
{
    if (!epar_nnpos_trainable(id)) return epar_err_set(EPAR_EINVAL, "mechanism '%s' cannot be trained", epar_nnpos_name(id));
    const struct epar_nnpos_info *in = epar_nnpos_row(id);
    int st = in->check ? in->check(id, s, hs) : EPAR_OK;
    if (st) return st;
    if (s->posfx_length < 0) return epar_err_set(EPAR_EINVAL, "posfx_length must be >= 0, got '%d'", s->posfx_length);
    if (!(s->init_sd >= 0) || !isfinite(s->init_sd))
        return epar_err_set(EPAR_EINVAL, "init_sd must be a finite number >= 0, got '%g'", s->init_sd);
    if (s->logn_length < 0 || s->logn_length == 1)
        return epar_err_set(EPAR_EINVAL, "the stacked log-n's length must be 0 (off) or >= 2, got '%d'", s->logn_length);
    if (s->logn_length && id == EPAR_MECH_LOGN)
        return epar_err_set(EPAR_EINVAL, "log-n cannot be stacked on log-n");
    return EPAR_OK;
}

int epar_nnpos_alloc(struct epar_nnpos *p, enum epar_mech_id id, const struct epar_nnpos_settings *s, int Tmax,
                     int C, int NH, int NL)
{
    memset(p, 0, sizeof *p);
    int st = epar_nnpos_validate(id, s, C / NH);
    if (!st) st = epar_nnpos_check_heads(id, s, NH);
    if (st) return st;
    p->id = id;
    p->s = *s;
    p->mp = p->s.mp[id];
    if (epar_nnpos_row(id)->hook != EPAR_NNPOS_H_FACTOR) p->s.learn_posfx = 0;
    p->Tmax = Tmax; p->C = C; p->NH = NH; p->NL = NL; p->hs = C / NH;
    epar_nnpos_resolve(&p->s, Tmax);   /* a model built without its run's length: the length it is built at */
    st = epar_nnpos_row(id)->build ? epar_nnpos_row(id)->build(p) : EPAR_OK;
    if (!st && p->s.logn_length > 0) {   /* log-n stacked: q_t times kappa_t after the mechanism's own transform */
        if (need(&p->qscale, (size_t)Tmax, sizeof *p->qscale, "the log-n scales")) st = EPAR_ENOMEM;
        for (int t = 0; !st && t < Tmax; t++) p->qscale[t] = (float)epar_mech_logn(t + 1.0, p->s.logn_length, 1);
    }
    if (st) epar_nnpos_free(p);
    return st;
}

void epar_nnpos_free(struct epar_nnpos *p)
{
    free(p->pe); free(p->ode); free(p->ext); free(p->dext); free(p->rcos); free(p->rsin); free(p->qscale); free(p->bias); free(p->bucket); free(p->slopes);
    free(p->fac); free(p->dfac); free(p->pair); free(p->pair2); free(p->work); free(p->omega); free(p->head_off);
    p->head_off = NULL;
    p->pair_head = 0;
    free(p->rdist); free(p->reltab); free(p->kcos); free(p->ksin);
    p->rdist = p->reltab = p->kcos = p->ksin = NULL;
    p->pair2 = NULL;
    p->omega = NULL;
    p->pe = p->rcos = p->rsin = p->qscale = p->bias = p->fac = p->dfac = p->pair = NULL;
    p->work = NULL;
    p->bucket = NULL;
    p->slopes = NULL;
}

/* a file mechanism's row leaves NULL the functions it does not need (lib/mechs/) */
size_t epar_nnpos_n_params(const struct epar_nnpos *p)
{
    const struct epar_nnpos_info *in = epar_nnpos_row(p->id);
    return in->n_params ? in->n_params(p) : 0;
}

void epar_nnpos_init(struct epar_nnpos *p, gsl_rng *r)
{
    const struct epar_nnpos_info *in = epar_nnpos_row(p->id);
    if (in->init) in->init(p, r);
}

void epar_nnpos_prepare(struct epar_nnpos *p, int T)
{
    const struct epar_nnpos_info *in = epar_nnpos_row(p->id);
    if (in->prepare) in->prepare(p, T);
    p->T = T;
}

void epar_nnpos_backward(struct epar_nnpos *p, int l, const struct epar_nnpos_grad *g, int B, int T)
{
    const struct epar_nnpos_info *in = epar_nnpos_row(p->id);
    if (in->backward) in->backward(p, l, g, B, T);
}

/* the input table: fixed (pe) or learned (theta: learned-ape, mult-pe variant 0) */
static const float *input_table(const struct epar_nnpos *p)
{
    if (epar_nnpos_row(p->id)->hook != EPAR_NNPOS_H_INPUT) return NULL;
    return p->ext ? p->ext : p->pe ? p->pe : p->theta;
}

/* row bt = b T + t of x: plus (times) the table's row t */
static void embed_row(float *x, const float *tab, int C, int mul, int T, int bt)
{
    float *xr = x + (size_t)bt * C;
    const float *pr = tab + (size_t)(bt % T) * C;
    if (mul)
        for (int c = 0; c < C; c++) xr[c] *= pr[c];
    else
        for (int c = 0; c < C; c++) xr[c] += pr[c];
}

void epar_nnpos_embed_forward(const struct epar_nnpos *p, float *x, int B, int T)
{
    const float *tab = input_table(p);
    if (!tab) return;
    int C = p->C, mul = p->pe_mul;
    EPAR_OMP_FOR(epar_omp_fork_elems((double)B * T * C), int, bt, B * T, embed_row(x, tab, C, mul, T, bt));
}

/* position t of epar_nnpos_embed_backward: the table's gradient row t (gtab, or none) sums over b in order */
static void embed_backward_pos(float *dx, float *gtab, const float *tab, const float *wte, const int *tokens, int B,
                               int T, int C, int mul, int t)
{
    const float *pr = tab + (size_t)t * C;
    float *g = gtab ? gtab + (size_t)t * C : NULL;
    for (int b = 0; b < B; b++) {
        float *d = dx + ((size_t)b * T + t) * C;
        const float *er = wte + (size_t)tokens[(size_t)b * T + t] * C;
        if (g)
            for (int c = 0; c < C; c++) g[c] += mul ? d[c] * er[c] : d[c];
        if (mul)
            for (int c = 0; c < C; c++) d[c] *= pr[c];
    }
}

void epar_nnpos_embed_backward(struct epar_nnpos *p, float *dx, const float *wte, const int *tokens, int B, int T)
{
    const float *tab = input_table(p);
    if (!tab) return;
    int C = p->C, learned = tab == p->theta || tab == p->ext, mul = p->pe_mul;
    if (!learned && !mul) return;   /* a fixed added table passes dx on unchanged */
    if (tab == p->ext) memset(p->dext, 0, (size_t)T * C * sizeof *p->dext);
    /* the learned table: each position's row sums over b in order (parallel over t, deterministic); added: dx,
     * multiplied: dx e. Then a multiplied table passes dx p on to the token rows. */
    float *gtab = !learned ? NULL : tab == p->ext ? p->dext : p->dtheta;
    EPAR_OMP_FOR(epar_omp_fork_elems((double)B * T * C), int, t, T,
                 embed_backward_pos(dx, gtab, tab, wte, tokens, B, T, C, mul, t));
}

void epar_nnpos_input_fold(struct epar_nnpos *p, int T)
{
    if (!p->ext || epar_nnpos_row(p->id)->hook != EPAR_NNPOS_H_INPUT) return;
    if (p->id == EPAR_MECH_FLOATER_LEARNED) fold_floater_learned(p, T);
    else fold_ape_ext(p, T);
}

/* rotate the (2i, 2i+1) pairs of every head of q and k at position t by +angle (dir 1) or -angle (dir -1) */
/* row bt = b T + t of qkv: q and k of every head rotated (rope_apply) */
static void rope_row(const struct epar_nnpos *p, float *qkv, int T, float dir, int bt)
{
    int C = p->C, hs = p->hs, h2 = hs / 2, NH = p->NH, t = bt % T;
    float *row = qkv + (size_t)bt * 3 * C;
    for (int part = 0; part < 2; part++) {     /* q, then k (with its own tables when it has them) */
        const float *cs = (part && p->kcos ? p->kcos : p->rcos) + (size_t)t * h2;
        const float *sn = (part && p->ksin ? p->ksin : p->rsin) + (size_t)t * h2;
        for (int h = 0; h < NH; h++) {
            float *v = row + part * C + h * hs;
            for (int i = 0; i < h2; i++) {
                float a = v[2 * i], c2 = v[2 * i + 1], co = cs[i], si = dir * sn[i];
                v[2 * i] = a * co - c2 * si;
                v[2 * i + 1] = a * si + c2 * co;
            }
        }
    }
}

static void rope_apply(const struct epar_nnpos *p, float *qkv, int B, int T, float dir)
{
    EPAR_OMP_FOR(epar_omp_fork_elems((double)B * T * p->C), int, bt, B * T, rope_row(p, qkv, T, dir, bt));
}

/* q_t (every head) times kappa_t; its own transpose */
static void qscale_apply(const struct epar_nnpos *p, float *qkv, int B, int T)
{
    int C = p->C;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *q = qkv + ((size_t)b * T + t) * 3 * C, k = p->qscale[t];
            for (int c = 0; c < C; c++) q[c] *= k;
        }
}

void epar_nnpos_qk_forward(const struct epar_nnpos *p, float *qkv, int B, int T)
{
    if (p->rcos) rope_apply(p, qkv, B, T, 1.0f);
    if (p->qscale) qscale_apply(p, qkv, B, T);
}

/* the rotation is orthogonal: its transpose (the gradient map) is the rotation by -angle; a scaled rotation s R (tables
 * s cos, s sin: a decay or a temperature of lib/mechs/) has the transpose s R^T, the same tables at -angle */
void epar_nnpos_qk_backward(const struct epar_nnpos *p, float *dqkv, int B, int T)
{
    if (p->rcos) rope_apply(p, dqkv, B, T, -1.0f);
    if (p->qscale) qscale_apply(p, dqkv, B, T);
}

const float *epar_nnpos_factor(const struct epar_nnpos *p, int l)
{
    return p->fac ? p->fac + (size_t)l * p->NH * p->Tmax : NULL;
}

const float *epar_nnpos_bias(const struct epar_nnpos *p, int l)
{
    return p->bias ? p->bias + (size_t)l * p->bias_layer : NULL;
}
const float *epar_nnpos_pair(const struct epar_nnpos *p, int l)
{
    return p->pair ? p->pair + (size_t)l * p->pair_layer : NULL;
}
size_t epar_nnpos_pair_head(const struct epar_nnpos *p) { return p->pair_head; }
const unsigned char *epar_nnpos_head_off(const struct epar_nnpos *p) { return p->head_off; }

void epar_nnpos_last_input_forward(const struct epar_nnpos *p, float *x, int B, int T)
{
    const struct epar_nnpos_info *in = epar_nnpos_row(p->id);
    if (in->last_input) in->last_input(p, x, B, T);
}

void epar_nnpos_last_input_backward(struct epar_nnpos *p, const float *dx, int B, int T)
{
    const struct epar_nnpos_info *in = epar_nnpos_row(p->id);
    if (in->last_input_backward) in->last_input_backward(p, dx, B, T);
}
