#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_randist.h>
#include "err.h"
#include "mech.h"
#include "nnpos.h"

/* ---- shared helpers ---- */

static void fill_normal(gsl_rng *r, float *x, size_t n, double sd)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)gsl_ran_gaussian_ziggurat(r, sd);
}

static size_t n_zero(const struct epar_nnpos *p) { (void)p; return 0; }
static void init_nothing(struct epar_nnpos *p, gsl_rng *r) { (void)p; (void)r; }
static void prepare_nothing(struct epar_nnpos *p, int T) { (void)p; (void)T; }
static void backward_nothing(struct epar_nnpos *p, int l, const float *gfac, const float *gbias, int B, int T)
{
    (void)p; (void)l; (void)gfac; (void)gbias; (void)B; (void)T;
}

/* ---- sinusoidal (§5): the table is built once for Tmax at alloc ----
 * Scaled as Vaswani et al. use it: x = sqrt(d) E + PE with E ~ N(0, 1/d), i.e. unit-variance token entries beside a
 * sinusoid of rms 1/sqrt(2). Our token embeddings are N(0, init_sd^2) and tied to the head, so the same balance is
 * x = E' + init_sd PE (= init_sd times Vaswani's x in distribution at init). Unscaled, the sinusoid had ~35 times
 * the norm of a token embedding and the model saw positions and hardly any characters. */

static int build_nothing(struct epar_nnpos *p) { (void)p; return EPAR_OK; }

static int build_sinusoidal(struct epar_nnpos *p)
{
    double *row = epar_err_alloc((size_t)p->C, sizeof *row, "the sinusoid table");
    if (!row) return EPAR_ENOMEM;
    for (int t = 0; t < p->Tmax; t++) {
        epar_mech_sinusoid((double)t, p->C, p->s.sinusoid_base, 0, row);
        for (int c = 0; c < p->C; c++) p->pe[(size_t)t * p->C + c] = (float)(p->s.init_sd * row[c]);
    }
    free(row);
    return EPAR_OK;
}

/* ---- learned absolute (§6): theta = E (Tmax, C) ---- */

static size_t n_learned(const struct epar_nnpos *p) { return (size_t)p->Tmax * p->C; }
static void init_learned(struct epar_nnpos *p, gsl_rng *r) { fill_normal(r, p->theta, n_learned(p), p->s.init_sd); }
/* the table's gradient comes from the embedding backward (epar_nnpos_embed_backward) */
static void backward_learned(struct epar_nnpos *p, int l, const float *gfac, const float *gbias, int B, int T)
{
    backward_nothing(p, l, gfac, gbias, B, T);
}

/* ---- RoPE (§14): cos/sin of t theta_i from epar_mech_rope_rotate applied to (1, 0) pairs ---- */

static int build_rope(struct epar_nnpos *p)
{
    int h2 = p->hs / 2;
    double *v = epar_err_alloc((size_t)p->hs, sizeof *v, "the RoPE table");
    if (!v) return EPAR_ENOMEM;
    for (int t = 0; t < p->Tmax; t++) {
        for (int i = 0; i < h2; i++) { v[2 * i] = 1.0; v[2 * i + 1] = 0.0; }
        epar_mech_rope_rotate(v, p->hs, (double)t, p->s.rope_base, 0);  /* (1,0) -> (cos, sin) */
        for (int i = 0; i < h2; i++) {
            p->rcos[(size_t)t * h2 + i] = (float)v[2 * i];
            p->rsin[(size_t)t * h2 + i] = (float)v[2 * i + 1];
        }
    }
    free(v);
    return EPAR_OK;
}

/* ---- ALiBi (§18): bias[h][d] = -m_h d ---- */

static int build_alibi(struct epar_nnpos *p)
{
    epar_mech_alibi_slopes(p->NH, p->s.alibi_max_bias, p->slopes);
    for (int h = 0; h < p->NH; h++)
        for (int d = 0; d < p->Tmax; d++) p->bias[(size_t)h * p->Tmax + d] = (float)(-p->slopes[h] * d);
    return EPAR_OK;
}

/* ---- T5 (§11): theta = B (buckets, NH), causal (unidirectional) buckets of rel = j - i = -d ---- */

static size_t n_t5(const struct epar_nnpos *p) { return (size_t)p->s.t5_buckets * p->NH; }
static void init_t5(struct epar_nnpos *p, gsl_rng *r) { fill_normal(r, p->theta, n_t5(p), p->s.init_sd); }

static int build_t5(struct epar_nnpos *p)
{
    for (int d = 0; d < p->Tmax; d++) p->bucket[d] = epar_mech_t5_bucket(-d, 0, p->s.t5_buckets, p->s.t5_max_distance);
    return EPAR_OK;
}

static void prepare_t5(struct epar_nnpos *p, int T)
{
    for (int h = 0; h < p->NH; h++)
        for (int d = 0; d < T; d++) p->bias[(size_t)h * p->Tmax + d] = p->theta[(size_t)p->bucket[d] * p->NH + h];
}

static void backward_t5(struct epar_nnpos *p, int l, const float *gfac, const float *gbias, int B, int T)
{
    (void)l; (void)gfac;
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
    if (p->theta && p->s.learn_posfx && (p->id == EPAR_NNPOS_EPAR_BASIC || p->id == EPAR_NNPOS_EPAR_ENHANCED)) {
        const float *th = p->theta + ((size_t)l * p->NH + h) * 3;
        fx.alpha = exp((double)th[0]);
        fx.beta = exp((double)th[1]);
        if (fx.form == EPAR_FORM_ENHANCED) fx.gamma = exp((double)th[2]);
    }
    return fx;
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

static void backward_epar(struct epar_nnpos *p, int l, const float *gfac, const float *gbias, int B, int T)
{
    (void)gbias;
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

/* ---- the registry ---- */

const struct epar_nnpos_info epar_nnpos_table[EPAR_NNPOS_COUNT] = {
    [EPAR_NNPOS_NONE] = {"none", EPAR_NNPOS_K_BASELINE, "§2", "causal mask only, no position information",
                         build_nothing, n_zero, init_nothing, prepare_nothing, backward_nothing},
    [EPAR_NNPOS_SINUSOIDAL] = {"sinusoidal", EPAR_NNPOS_K_INPUT, "§5", "sinusoid added to the token embeddings",
                               build_sinusoidal, n_zero, init_nothing, prepare_nothing, backward_nothing},
    [EPAR_NNPOS_LEARNED] = {"learned", EPAR_NNPOS_K_INPUT, "§6", "learned absolute table added to the embeddings",
                            build_nothing, n_learned, init_learned, prepare_nothing, backward_learned},
    [EPAR_NNPOS_ROPE] = {"rope", EPAR_NNPOS_K_QK, "§14", "q and k rotated by position (theta base 10000)",
                         build_rope, n_zero, init_nothing, prepare_nothing, backward_nothing},
    [EPAR_NNPOS_ALIBI] = {"alibi", EPAR_NNPOS_K_BIAS, "§18", "linear distance bias -m_h (i-j), standard slopes",
                          build_alibi, n_zero, init_nothing, prepare_nothing, backward_nothing},
    [EPAR_NNPOS_T5] = {"t5", EPAR_NNPOS_K_BIAS, "§11", "learned bias per head and distance bucket (causal)",
                       build_t5, n_t5, init_t5, prepare_t5, backward_t5},
    [EPAR_NNPOS_EPAR_BASIC] = {"epar-basic", EPAR_NNPOS_K_FACTOR, "§3", "scaled score times alpha exp(-beta |i-j|/L)",
                               build_nothing, n_epar, init_epar, prepare_epar, backward_epar},
    [EPAR_NNPOS_EPAR_ENHANCED] = {"epar-enhanced", EPAR_NNPOS_K_FACTOR, "§4",
                                  "scaled score times alpha (1 + gamma exp(-beta |i-j|/L)) / (1 + gamma)",
                                  build_nothing, n_epar, init_epar, prepare_epar, backward_epar},
};
static_assert(sizeof epar_nnpos_table / sizeof epar_nnpos_table[0] == EPAR_NNPOS_COUNT,
              "one row per training position mechanism");

int epar_nnpos_find(const char *name, enum epar_nnpos_id *id)
{
    for (int k = 0; k < EPAR_NNPOS_COUNT; k++)
        if (!strcmp(name, epar_nnpos_table[k].id)) {
            *id = (enum epar_nnpos_id)k;
            return EPAR_OK;
        }
    epar_err_set(EPAR_EINVAL, "unknown mechanism '%s'", name);
    epar_err_hint("training supports: %s", epar_nnpos_list());
    return EPAR_EINVAL;
}

const char *epar_nnpos_name(enum epar_nnpos_id id)
{
    return id >= 0 && id < EPAR_NNPOS_COUNT ? epar_nnpos_table[id].id : "?";
}

const char *epar_nnpos_list(void)
{
    static char buf[256];
    if (!buf[0])
        for (int k = 0; k < EPAR_NNPOS_COUNT; k++) {
            size_t n = strlen(buf);
            snprintf(buf + n, sizeof buf - n, "%s%s", k ? ", " : "", epar_nnpos_table[k].id);
        }
    return buf;
}

void epar_nnpos_settings_default(struct epar_nnpos_settings *s)
{
    memset(s, 0, sizeof *s);
    s->fx = (struct epar_posfx){EPAR_FORM_ENHANCED, 1.0, 1.0, 0.5};
    s->rope_base = 10000.0;
    s->sinusoid_base = 10000.0;
    s->alibi_max_bias = 8.0;
    s->t5_buckets = 32;
    s->t5_max_distance = 128;
    s->init_sd = 0.02;
}

int epar_nnpos_validate(enum epar_nnpos_id id, const struct epar_nnpos_settings *s, int hs)
{
    if (id < 0 || id >= EPAR_NNPOS_COUNT) return epar_err_set(EPAR_EINVAL, "unknown mechanism id %d", (int)id);
    if (id == EPAR_NNPOS_ROPE && hs % 2)
        return epar_err_set(EPAR_EINVAL, "rope needs an even head width (dim / heads), got '%d'", hs);
    if (id == EPAR_NNPOS_EPAR_BASIC || id == EPAR_NNPOS_EPAR_ENHANCED) {
        struct epar_posfx fx = s->fx;
        fx.form = id == EPAR_NNPOS_EPAR_BASIC ? EPAR_FORM_BASIC : EPAR_FORM_ENHANCED;
        int st = epar_posfx_validate(&fx);
        if (st) return st;
        if (s->learn_posfx && (fx.beta <= 0 || (fx.form == EPAR_FORM_ENHANCED && fx.gamma <= 0))) {
            epar_err_set(EPAR_EINVAL, "--learn-posfx needs beta > 0%s to start from, got beta '%g' gamma '%g'",
                         fx.form == EPAR_FORM_ENHANCED ? " and gamma > 0" : "", fx.beta, fx.gamma);
            epar_err_hint("learned parameters are exp(theta) to stay positive, so they cannot start at 0");
            return EPAR_EINVAL;
        }
    }
    if (!(s->rope_base > 1) || !(s->sinusoid_base > 1) || !isfinite(s->rope_base) || !isfinite(s->sinusoid_base))
        return epar_err_set(EPAR_EINVAL, "rope and sinusoid bases must be finite numbers > 1");
    if (!(s->alibi_max_bias > 0) || !isfinite(s->alibi_max_bias))
        return epar_err_set(EPAR_EINVAL, "alibi max_bias must be a finite number > 0, got '%g'", s->alibi_max_bias);
    if (s->t5_buckets < 2 || s->t5_max_distance <= s->t5_buckets / 2)
        return epar_err_set(EPAR_EINVAL, "t5 needs buckets >= 2 and max_distance > buckets / 2, got %d and %d",
                            s->t5_buckets, s->t5_max_distance);
    if (s->posfx_length < 0) return epar_err_set(EPAR_EINVAL, "posfx_length must be >= 0, got '%d'", s->posfx_length);
    if (!(s->init_sd >= 0) || !isfinite(s->init_sd))
        return epar_err_set(EPAR_EINVAL, "init_sd must be a finite number >= 0, got '%g'", s->init_sd);
    return EPAR_OK;
}

int epar_nnpos_alloc(struct epar_nnpos *p, enum epar_nnpos_id id, const struct epar_nnpos_settings *s, int Tmax,
                     int C, int NH, int NL)
{
    memset(p, 0, sizeof *p);
    int st = epar_nnpos_validate(id, s, C / NH);
    if (st) return st;
    p->id = id;
    p->s = *s;
    if (id == EPAR_NNPOS_EPAR_BASIC) p->s.fx.form = EPAR_FORM_BASIC;
    if (id == EPAR_NNPOS_EPAR_ENHANCED) p->s.fx.form = EPAR_FORM_ENHANCED;
    if (id != EPAR_NNPOS_EPAR_BASIC && id != EPAR_NNPOS_EPAR_ENHANCED) p->s.learn_posfx = 0;
    p->Tmax = Tmax; p->C = C; p->NH = NH; p->NL = NL; p->hs = C / NH;
    size_t tm = (size_t)Tmax;
    int fail = 0;
#define ALLOC(ptr, n, what) do { if (!((ptr) = epar_err_alloc((n), sizeof *(ptr), what))) fail = 1; } while (0)
    switch (id) {
    case EPAR_NNPOS_SINUSOIDAL: ALLOC(p->pe, tm * C, "the sinusoid table"); break;
    case EPAR_NNPOS_ROPE:
        ALLOC(p->rcos, tm * (p->hs / 2), "the RoPE table");
        ALLOC(p->rsin, tm * (p->hs / 2), "the RoPE table");
        break;
    case EPAR_NNPOS_ALIBI:
        ALLOC(p->bias, (size_t)NH * tm, "the ALiBi table");
        ALLOC(p->slopes, (size_t)NH, "the ALiBi slopes");
        break;
    case EPAR_NNPOS_T5:
        ALLOC(p->bias, (size_t)NH * tm, "the T5 bias table");
        ALLOC(p->bucket, tm, "the T5 buckets");
        break;
    case EPAR_NNPOS_EPAR_BASIC:
    case EPAR_NNPOS_EPAR_ENHANCED:
        ALLOC(p->fac, (size_t)NL * NH * tm, "the position-effect tables");
        if (p->s.learn_posfx) ALLOC(p->dfac, (size_t)NL * NH * 3 * tm, "the position-effect derivatives");
        break;
    default: break;
    }
#undef ALLOC
    if (fail || (st = epar_nnpos_table[id].build(p))) {
        epar_nnpos_free(p);
        return fail ? EPAR_ENOMEM : st;
    }
    return EPAR_OK;
}

void epar_nnpos_free(struct epar_nnpos *p)
{
    free(p->pe); free(p->rcos); free(p->rsin); free(p->bias); free(p->bucket); free(p->slopes);
    free(p->fac); free(p->dfac);
    p->pe = p->rcos = p->rsin = p->bias = p->fac = p->dfac = NULL;
    p->bucket = NULL;
    p->slopes = NULL;
}

size_t epar_nnpos_n_params(const struct epar_nnpos *p) { return epar_nnpos_table[p->id].n_params(p); }
void epar_nnpos_init(struct epar_nnpos *p, gsl_rng *r) { epar_nnpos_table[p->id].init(p, r); }

void epar_nnpos_prepare(struct epar_nnpos *p, int T)
{
    epar_nnpos_table[p->id].prepare(p, T);
    p->T = T;
}

void epar_nnpos_backward(struct epar_nnpos *p, int l, const float *gfac, const float *gbias, int B, int T)
{
    epar_nnpos_table[p->id].backward(p, l, gfac, gbias, B, T);
}

void epar_nnpos_embed_forward(const struct epar_nnpos *p, float *x, int B, int T)
{
    const float *tab = p->id == EPAR_NNPOS_SINUSOIDAL ? p->pe : p->id == EPAR_NNPOS_LEARNED ? p->theta : NULL;
    if (!tab) return;
    int C = p->C;
#pragma omp parallel for collapse(2) schedule(static) if ((double)B * T * C > 262144)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *xr = x + ((size_t)b * T + t) * C;
            const float *pr = tab + (size_t)t * C;
            for (int c = 0; c < C; c++) xr[c] += pr[c];
        }
}

void epar_nnpos_embed_backward(struct epar_nnpos *p, const float *dx, int B, int T)
{
    if (p->id != EPAR_NNPOS_LEARNED) return;
    int C = p->C;
    /* each position's row sums over b in order: parallel over t, deterministic */
#pragma omp parallel for schedule(static) if ((double)B * T * C > 262144)
    for (int t = 0; t < T; t++) {
        float *g = p->dtheta + (size_t)t * C;
        for (int b = 0; b < B; b++) {
            const float *d = dx + ((size_t)b * T + t) * C;
            for (int c = 0; c < C; c++) g[c] += d[c];
        }
    }
}

/* rotate the (2i, 2i+1) pairs of every head of q and k at position t by +angle (dir 1) or -angle (dir -1) */
static void rope_apply(const struct epar_nnpos *p, float *qkv, int B, int T, float dir)
{
    int C = p->C, hs = p->hs, h2 = hs / 2, NH = p->NH;
#pragma omp parallel for collapse(2) schedule(static) if ((double)B * T * C > 262144)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *row = qkv + ((size_t)b * T + t) * 3 * C;
            const float *cs = p->rcos + (size_t)t * h2, *sn = p->rsin + (size_t)t * h2;
            for (int part = 0; part < 2; part++)       /* q, then k */
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

void epar_nnpos_qk_forward(const struct epar_nnpos *p, float *qkv, int B, int T)
{
    if (p->id == EPAR_NNPOS_ROPE) rope_apply(p, qkv, B, T, 1.0f);
}

/* the rotation is orthogonal: its transpose (the gradient map) is the rotation by -angle */
void epar_nnpos_qk_backward(const struct epar_nnpos *p, float *dqkv, int B, int T)
{
    if (p->id == EPAR_NNPOS_ROPE) rope_apply(p, dqkv, B, T, -1.0f);
}

const float *epar_nnpos_factor(const struct epar_nnpos *p, int l)
{
    return p->fac ? p->fac + (size_t)l * p->NH * p->Tmax : NULL;
}

const float *epar_nnpos_bias(const struct epar_nnpos *p) { return p->bias; }
