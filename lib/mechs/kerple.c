/* KERPLE, logarithmic variant (Chi, Fan, Ramadge & Rudnicky 2022, "KERPLE: Kernelized Relative Positional Embedding for
 * Length Extrapolation", eq. for the log kernel): a bias per head, b_h(i, j) = -r1_h log(1 + r2_h |i - j|), r1, r2 > 0,
 * added to the scaled scores. The whole mechanism: its catalogue row, its analysis form, its trained form and its
 * documentation (lib/mech.h, struct epar_mech_def).
 *
 * Trained: r1, r2 learned per layer and head, stored as logarithms (theta = ln r1, ln r2; r = exp(theta) stays > 0
 * whatever the optimiser does, as EPAR's learned parameters), initialised at the catalogue's kerple.r1 and kerple.r2.
 * The bias depends on d = i - j only, so lib/nn's bias hook carries it: one (NH, Tmax) table per layer, and the
 * attention backward's per-distance sums g_h(d) = sum over pairs at distance d of dL/dz_ij give
 *   dL/d ln r1 = sum_d g_h(d) b_h(d),   dL/d ln r2 = -sum_d g_h(d) r1 r2 d / (1 + r2 d). */
#include <math.h>
#include <stdlib.h>
#include "lib/err.h"
#include "lib/nnpos.h"

/* b(d) of one head */
static double kerple_bias(double r1, double r2, double d) { return -r1 * log1p(r2 * d); }

/* ---- the analysis form (epar compare): every head at the catalogue's r1, r2; causal or symmetric |i - j| ---- */

static int build(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    int L = m->L;
    m->bias = epar_err_alloc((size_t)m->H * L * L, sizeof *m->bias, "the KERPLE bias");
    if (!m->bias) return EPAR_ENOMEM;
    for (int h = 0; h < m->H; h++)
        for (int i = 0; i < L; i++)
            for (int j = 0; j < L; j++) m->bias[((size_t)h * L + i) * L + j] = kerple_bias(m->p[0], m->p[1], abs(i - j));
    return EPAR_OK;
}

/* layer l's learned r1, r2 of every head into the analysis form's bias */
static int from_trained(struct epar_mech *m, const struct epar_nnpos *p, int l)
{
    if (!p->theta || p->NH != m->H) return epar_err_set(EPAR_EINVAL, "kerple: a trained model of %d heads", p->NH);
    int L = m->L;
    for (int h = 0; h < m->H; h++) {
        const float *th = p->theta + ((size_t)l * p->NH + h) * 2;
        double r1 = exp(th[0]), r2 = exp(th[1]);
        for (int i = 0; i < L; i++)
            for (int j = 0; j < L; j++) m->bias[((size_t)h * L + i) * L + j] = kerple_bias(r1, r2, abs(i - j));
    }
    return EPAR_OK;
}

/* ---- the trained form (lib/nnpos hooks) ---- */

static int train_build(struct epar_nnpos *p)
{
    p->bias_layer = (size_t)p->NH * p->Tmax;
    p->bias = epar_err_alloc((size_t)p->NL * p->bias_layer, sizeof *p->bias, "the KERPLE bias");
    return p->bias ? EPAR_OK : EPAR_ENOMEM;
}

static size_t n_params(const struct epar_nnpos *p) { return (size_t)p->NL * p->NH * 2; }

static void init(struct epar_nnpos *p, gsl_rng *r)
{
    (void)r;
    for (int k = 0; k < p->NL * p->NH; k++) {
        p->theta[2 * k] = (float)log(p->mp[0]);
        p->theta[2 * k + 1] = (float)log(p->mp[1]);
    }
}

/* every forward: theta changes between steps */
static void prepare(struct epar_nnpos *p, int T)
{
    for (int k = 0; k < p->NL * p->NH; k++) {
        double r1 = exp(p->theta[2 * k]), r2 = exp(p->theta[2 * k + 1]);
        float *b = p->bias + (size_t)k * p->Tmax;   /* layer k / NH, head k % NH: (NL, NH, Tmax) */
        for (int d = 0; d < T; d++) b[d] = (float)kerple_bias(r1, r2, d);
    }
}

static void backward(struct epar_nnpos *p, int l, const struct epar_nnpos_grad *g, int B, int T)
{
    /* fixed order (b, then d) per head, fp64 sums: the same whatever the thread count */
    for (int h = 0; h < p->NH; h++) {
        size_t k = (size_t)l * p->NH + h;
        double r1 = exp(p->theta[2 * k]), r2 = exp(p->theta[2 * k + 1]), g1 = 0, g2 = 0;
        for (int b = 0; b < B; b++) {
            const float *gb = g->gbias + ((size_t)b * p->NH + h) * T;
            for (int d = 1; d < T; d++) {
                g1 += gb[d] * kerple_bias(r1, r2, d);
                g2 -= gb[d] * r1 * r2 * d / (1 + r2 * d);
            }
        }
        p->dtheta[2 * k] += (float)g1;
        p->dtheta[2 * k + 1] += (float)g2;
    }
}

static const struct epar_nnpos_info train = {
    .hook = EPAR_NNPOS_H_BIAS, .uses_params = 1,
    .summary = "bias -r1 log(1 + r2 (i-j)) per layer and head, r1 and r2 learned (as logarithms)",
    .build = train_build, .n_params = n_params, .init = init, .prepare = prepare, .backward = backward,
};

const struct epar_mech_def epar_mech_def_kerple = {
    .info = {"kerple", EPAR_MK_BIAS, "Chi et al. 2022", "§32",
             {{"r1", 1, 1e-4, 1e4, 0, "bias scale r1 > 0 (trained: its initial value, every layer and head)"},
              {"r2", 1, 1e-4, 1e4, 0, "log-distance rate r2 > 0 (trained: its initial value)"},
              {NULL, 0, 0, 0, 0, NULL}},
             build, "KERPLE (log): bias -r1 log(1 + r2 |i-j|) per head, a kernelised relative bias"},
    .train = &train,
    .from_trained = from_trained,
    .doc = "### kerple — KERPLE, logarithmic variant\n\n"
           "Chi, Fan, Ramadge & Rudnicky (2022), \"KERPLE: Kernelized Relative Positional Embedding for Length "
           "Extrapolation\", NeurIPS. A conditionally positive definite kernel of the distance, shifted into a bias "
           "(the shift is absorbed by the softmax): z_ij = q_i.k_j / sqrt(d_k) - r1 log(1 + r2 |i - j|), r1, r2 > 0 "
           "per head. The paper's best variant; the power variant -r1 |i - j|^r2 is not implemented.\n\n"
           "- Parameters: `kerple.r1` (1), `kerple.r2` (1); compare uses them for every head.\n"
           "- Trained: r1, r2 per layer and head, learned as logarithms from those values; the gradient comes from the "
           "attention's per-distance sums, as ALiBi-learned's and T5's.\n"
           "- Worked numbers: r1 = 1, r2 = 1: b(0) = 0, b(1) = -ln 2 = -0.693147, b(3) = -ln 4 = -1.386294; r1 = 2, "
           "r2 = 0.5: b(2) = -2 ln 2 = -1.386294.\n"
           "- Past the trained length the bias keeps growing like log d, so far keys are damped less than by ALiBi's "
           "linear bias.\n",
};
