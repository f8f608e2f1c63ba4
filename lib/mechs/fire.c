/* FIRE (Li, Bhojanapalli, Kumar, Kale, Hutchins, Ontanon, Qi, Kale, Nguyen et al. 2023, "Functional Interpolation for
 * Relative Positions Improves Long Context Transformers"): a learned function of the log-transformed relative
 * distance, normalised by the query position, added to the scaled scores per head:
 *   b_h(i, j) = f_h(psi(i - j) / psi(max(L, i))),   psi(x) = log(c x + 1),
 * f a small MLP (one hidden layer of `hidden` ReLU units, one output per head), c > 0 and the threshold L learned.
 * Normalising by the query position keeps the MLP's input in [0, 1] at every length, which is what lets it read
 * past the trained length. Causal (j <= i); compare's bidirectional form reads |i - j|. The whole mechanism: its
 * catalogue row, its analysis form, its trained form and its documentation (lib/mech.h, struct epar_mech_def).
 *
 * Trained: per layer theta = W1 (hidden), b1 (hidden), W2 (NH, hidden), b2 (NH), ln c, L; W1, b1 ~ N(0, 1),
 * W2 ~ N(0, 1/hidden), b2 = 0, c = fire.c, L = fire.train_length (the run's length). The bias depends on (i, j),
 * so it rides on lib/nn's pair tables, one (T, T) table per layer and head, and the attention backward hands the
 * per-pair gradient dL/dz_ij (gpair), back-propagated here through the MLP, c and L (L only where it is the max). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_randist.h>
#include "lib/err.h"
#include "lib/nnpos.h"

enum { P_HIDDEN, P_C, P_TRAIN };

/* one layer's parameters, in theta's order */
struct fire {
    const float *w1, *b1, *w2, *b2;
    double c, L;
};

static size_t per_layer(int W, int NH) { return 2 * (size_t)W + (size_t)NH * W + NH + 2; }

static struct fire layer_of(const float *th, int W, int NH)
{
    const float *t = th + 2 * (size_t)W + (size_t)NH * W + NH;
    return (struct fire){th, th + W, th + 2 * W, th + 2 * W + (size_t)NH * W, exp(t[0]), t[1]};
}

static double psi(double c, double x) { return log1p(c * x); }

/* the MLP's input at query i, distance d >= 0; M = max(L, i, 1) (at least 1: psi(M) > 0) */
static double fire_x(const struct fire *f, int i, int d, double *M)
{
    *M = fmax(fmax(f->L, i), 1);
    return psi(f->c, d) / psi(f->c, *M);
}

/* out (NH) <- b_h for input x; hid (W) <- the hidden units' pre-activations */
static void fire_mlp(const struct fire *f, int W, int NH, double x, double *hid, double *out)
{
    for (int k = 0; k < W; k++) hid[k] = f->w1[k] * x + f->b1[k];
    for (int h = 0; h < NH; h++) {
        double s = f->b2[h];
        for (int k = 0; k < W; k++) s += f->w2[(size_t)h * W + k] * fmax(hid[k], 0);
        out[h] = s;
    }
}

/* the analysis form's bias (H, L, L) from one layer's parameters */
static int fill_bias(struct epar_mech *m, const struct fire *f)
{
    int L = m->L, W = (int)m->p[P_HIDDEN];
    double *hid = malloc((size_t)W * sizeof *hid), *out = malloc((size_t)m->H * sizeof *out);
    if (!hid || !out) {
        free(hid), free(out);
        return epar_err_set(EPAR_ENOMEM, "out of memory (the FIRE bias)");
    }
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++) {
            double M, x = fire_x(f, i, abs(i - j), &M);
            fire_mlp(f, W, m->H, x, hid, out);
            for (int h = 0; h < m->H; h++) m->bias[((size_t)h * L + i) * L + j] = out[h];
        }
    free(hid), free(out);
    return EPAR_OK;
}

/* draws of one layer's parameters (trained init and compare's synthetic parameters alike) */
static void draw(gsl_rng *r, float *th, int W, int NH, double c, double L)
{
    for (int k = 0; k < W; k++) th[k] = (float)gsl_ran_gaussian_ziggurat(r, 1.0);
    for (int k = 0; k < W; k++) th[W + k] = (float)gsl_ran_gaussian_ziggurat(r, 1.0);
    for (size_t k = 0; k < (size_t)NH * W; k++) th[2 * W + k] = (float)gsl_ran_gaussian_ziggurat(r, 1.0 / sqrt(W));
    float *t = th + 2 * (size_t)W + (size_t)NH * W;
    for (int h = 0; h < NH; h++) t[h] = 0;
    t[NH] = (float)log(c);
    t[NH + 1] = (float)L;
}

/* ---- the analysis form (epar compare): one layer of synthetic parameters from the mechanism's stream ---- */

static int build(struct epar_mech *m, gsl_rng *r)
{
    int W = (int)m->p[P_HIDDEN];
    float *th = malloc(per_layer(W, m->H) * sizeof *th);
    m->bias = epar_err_alloc((size_t)m->H * m->L * m->L, sizeof *m->bias, "the FIRE bias");
    if (!th || !m->bias) {
        free(th);
        return epar_err_set(EPAR_ENOMEM, "out of memory (the FIRE bias)");
    }
    draw(r, th, W, m->H, m->p[P_C], m->p[P_TRAIN]);
    struct fire f = layer_of(th, W, m->H);
    int st = fill_bias(m, &f);
    free(th);
    return st;
}

static int from_trained(struct epar_mech *m, const struct epar_nnpos *p, int l)
{
    int W = (int)p->mp[P_HIDDEN];
    if (!p->theta || p->NH != m->H || (int)m->p[P_HIDDEN] != W)
        return epar_err_set(EPAR_EINVAL, "fire: a trained model of %d heads and %d hidden units", p->NH, W);
    struct fire f = layer_of(p->theta + (size_t)l * per_layer(W, p->NH), W, p->NH);
    return fill_bias(m, &f);
}

/* ---- the trained form: a learned pair table per layer and head ---- */

static int train_build(struct epar_nnpos *p)
{
    p->pair_head = (size_t)p->Tmax * p->Tmax;
    p->pair_layer = (size_t)p->NH * p->pair_head;
    p->pair_grad = 1;
    int W = (int)p->mp[P_HIDDEN];
    p->pair = epar_err_alloc((size_t)p->NL * p->pair_layer, sizeof *p->pair, "the FIRE tables");
    /* the MLP's hidden units, outputs and hidden gradient (2 W + NH), then one layer's gradient in fp64 (per_layer) */
    p->work = epar_err_alloc(2 * (size_t)W + p->NH + per_layer(W, p->NH), sizeof(double), "the FIRE tables");
    return p->pair && p->work ? EPAR_OK : EPAR_ENOMEM;
}

static size_t n_params(const struct epar_nnpos *p) { return (size_t)p->NL * per_layer((int)p->mp[P_HIDDEN], p->NH); }

static void init(struct epar_nnpos *p, gsl_rng *r)
{
    int W = (int)p->mp[P_HIDDEN];
    for (int l = 0; l < p->NL; l++)
        draw(r, p->theta + (size_t)l * per_layer(W, p->NH), W, p->NH, p->mp[P_C], p->mp[P_TRAIN]);
}

/* every forward: theta changes between steps */
static void prepare(struct epar_nnpos *p, int T)
{
    int W = (int)p->mp[P_HIDDEN], NH = p->NH;
    double *hid = p->work, *out = hid + W;
    for (int l = 0; l < p->NL; l++) {
        struct fire f = layer_of(p->theta + (size_t)l * per_layer(W, NH), W, NH);
        float *tab = p->pair + (size_t)l * p->pair_layer;
        for (int i = 0; i < T; i++)
            for (int j = 0; j <= i; j++) {
                double M, x = fire_x(&f, i, i - j, &M);
                fire_mlp(&f, W, NH, x, hid, out);
                for (int h = 0; h < NH; h++) tab[(size_t)h * p->pair_head + (size_t)i * p->Tmax + j] = (float)out[h];
            }
    }
}

static void backward(struct epar_nnpos *p, int l, const struct epar_nnpos_grad *g, int B, int T)
{
    int W = (int)p->mp[P_HIDDEN], NH = p->NH;
    size_t per = per_layer(W, NH);
    struct fire f = layer_of(p->theta + (size_t)l * per, W, NH);
    double *hid = p->work, *out = hid + W, *dh = out + NH, *acc = dh + W;   /* train_build's layout */
    memset(acc, 0, per * sizeof *acc);   /* this layer's gradient, fp64, in a fixed order (i, j, then b) */
    double *gw1 = acc, *gb1 = acc + W, *gw2 = acc + 2 * W, *gb2 = gw2 + (size_t)NH * W, *gt = gb2 + NH;
    for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++) {
            int d = i - j;
            double M, x = fire_x(&f, i, d, &M), dx = 0;
            fire_mlp(&f, W, NH, x, hid, out);
            for (int k = 0; k < W; k++) dh[k] = 0;
            for (int h = 0; h < NH; h++) {
                double go = 0;
                for (int b = 0; b < B; b++) go += g->gpair[(((size_t)b * NH + h) * T + i) * T + j];
                gb2[h] += go;
                for (int k = 0; k < W; k++) {
                    gw2[(size_t)h * W + k] += go * fmax(hid[k], 0);
                    dh[k] += go * f.w2[(size_t)h * W + k];
                }
            }
            for (int k = 0; k < W; k++) {
                if (hid[k] <= 0) continue;   /* ReLU */
                gw1[k] += dh[k] * x;
                gb1[k] += dh[k];
                dx += dh[k] * f.w1[k];
            }
            /* x = psi(d) / psi(M): through c (stored as ln c) and, where L is the max, through L */
            double pm = psi(f.c, M), pd = psi(f.c, d);
            double dxdc = (d / (f.c * d + 1) * pm - pd * M / (f.c * M + 1)) / (pm * pm);
            gt[0] += dx * dxdc * f.c;
            if (f.L > i && f.L > 1) gt[1] += dx * (-pd * f.c / (f.c * M + 1) / (pm * pm));
        }
    float *dt = p->dtheta + (size_t)l * per;
    for (size_t k = 0; k < per; k++) dt[k] += (float)acc[k];
}

static void scratch(const struct epar_nnpos_settings *s, enum epar_mech_id id, int Tmax, int hs, size_t *per_thread,
                    size_t *per_bh)
{
    (void)s; (void)id; (void)hs;
    *per_thread = 0;
    *per_bh = (size_t)Tmax * Tmax;   /* gpair */
}

static const struct epar_nnpos_info train = {
    .hook = EPAR_NNPOS_H_BIAS, .uses_params = 1,
    .summary = "bias f_h(log(c (i-j) + 1) / log(c max(L, i) + 1)), f an MLP, c and L learned, per layer",
    .build = train_build, .n_params = n_params, .init = init, .prepare = prepare, .backward = backward,
    .scratch = scratch,
};

const struct epar_mech_def epar_mech_def_fire = {
    .info = {"fire", EPAR_MK_BIAS, "Li et al. 2023", "§32",
             {{"hidden", 32, 1, 4096, 1, "hidden ReLU units of the MLP f (the paper's 32)"},
              {"c", 1, 1e-6, 1e6, 0, "psi(x) = log(c x + 1): initial c > 0"},
              {"train_length", 512, 1, 1 << 24, 0, "initial threshold L of max(L, i) (trained: the run's length)"},
              {NULL, 0, 0, 0, 0, NULL}},
             build, "FIRE: bias f_h(psi(i-j)/psi(max(L,i))) per head, f a learned MLP, psi(x) = log(cx+1)"},
    .train = &train,
    .from_trained = from_trained,
    .doc = "### fire — FIRE, functional interpolation for relative positions\n\n"
           "Li et al. (2023), \"Functional Interpolation for Relative Positions Improves Long Context Transformers\". "
           "A bias per head b_h(i, j) = f_h(psi(i - j) / psi(max(L, i))) with psi(x) = log(c x + 1), f a one-hidden-layer "
           "ReLU MLP with one output per head, c and the threshold L learned. The input is in [0, 1] at every length: "
           "past L the distances are read as fractions of the query's position.\n\n"
           "- Parameters: `fire.hidden` (32, the paper's), `fire.c` (1), `fire.train_length` (the initial L; trained: "
           "the run's length). Compare draws the MLP from the mechanism's stream (W1, b1 ~ N(0, 1), W2 ~ N(0, 1/hidden), "
           "b2 = 0); a trained model draws the same way from its weights' stream, per layer.\n"
           "- Causal, j <= i; compare's bidirectional form reads |i - j| with the same normalisation.\n"
           "- Worked numbers: c = 1, L = 4, query i = 2, key j = 0: x = ln 3 / ln 5 = 0.682606; at i = 8, j = 0: "
           "x = ln 9 / ln 9 = 1 (the normalisation by the query's position past L).\n"
           "- Cost: the MLP at every pair, T^2/2 (hidden (1 + heads)) multiply-adds per layer and step, and the "
           "per-pair gradient (B heads T^2 floats) from the attention backward.\n",
};
