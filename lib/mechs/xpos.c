/* xPos (Sun, Dong, Patra, Ma, Huang, Benhaim, Chaudhary, Song & Wei 2022, "A Length-Extrapolatable Transformer"):
 * RoPE times a decay per rotation pair. Pair i of a head of width hs turns at theta_i = base^(-2i/hs) and carries
 * zeta_i = (2i/hs + g) / (1 + g); q at position n is rotated by n theta_i and scaled by zeta_i^(n/B), k at m rotated
 * by m theta_i and scaled by zeta_i^(-m/B), so q.k carries zeta_i^((n-m)/B): a decay with the distance, slow for
 * the fast-turning pairs (zeta near g/(1+g)) and none for the slow ones (zeta near 1). The whole mechanism: its
 * catalogue row, its analysis form, its trained form and its documentation (lib/mech.h, struct epar_mech_def).
 *
 * Positions enter the scale centred, (n - c) and -(m - c) with c = floor(T/2): the product is the same and neither
 * factor over- or underflows at long lengths (the paper's implementation centres them too). No learned parameters;
 * the blockwise causal attention the paper adds at inference is not used. */
#include <math.h>
#include <stdlib.h>
#include "lib/err.h"
#include "lib/nnpos.h"

/* the rotation and scale of pair i at position t of a sequence of length T: q's (dir 1) or k's (dir -1) */
static void xpos_pair(const double *p, int hs, int i, int t, int T, int dir, double *c, double *s)
{
    double theta = pow(p[0], -2.0 * i / hs), zeta = (2.0 * i / hs + p[1]) / (1 + p[1]);
    double scale = pow(zeta, dir * (t - T / 2) / p[2]);
    *c = scale * cos(t * theta);
    *s = scale * sin(t * theta);
}

static int check_hs(int hs)
{
    if (hs % 2) return epar_err_set(EPAR_EINVAL, "xpos needs an even head width (dim / heads), got '%d'", hs);
    return EPAR_OK;
}

/* ---- the analysis form (epar compare): q and k of every head rotated and scaled, interleaved pairs ---- */

static int build(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    if (check_hs(m->dk)) return EPAR_EINVAL;
    return EPAR_OK;
}

static void rotate(const double *p, double *V, int L, int dk, int ld, int dir)
{
    for (int t = 0; t < L; t++)
        for (int i = 0; i < dk / 2; i++) {
            double c, s, *v = V + (size_t)t * ld + 2 * i, a = v[0], b = v[1];
            xpos_pair(p, dk, i, t, L, dir, &c, &s);
            v[0] = a * c - b * s;
            v[1] = a * s + b * c;
        }
}

static void qk(struct epar_mech *m, int h, double *Q, double *K, int L, int dk, int ld)
{
    (void)h;
    rotate(m->p, Q, L, dk, ld, 1);
    rotate(m->p, K, L, dk, ld, -1);
}

/* ---- the trained form (lib/nnpos's q/k hook with k's own tables) ---- */

static int check(enum epar_mech_id id, const struct epar_nnpos_settings *s, int hs)
{
    (void)id; (void)s;
    return check_hs(hs);
}

static int train_build(struct epar_nnpos *p)
{
    size_t n = (size_t)p->Tmax * (p->hs / 2);
    float **t[] = {&p->rcos, &p->rsin, &p->kcos, &p->ksin};
    for (int k = 0; k < 4; k++)
        if (!(*t[k] = epar_err_alloc(n, sizeof(float), "the xPos tables"))) return EPAR_ENOMEM;
    return EPAR_OK;
}

/* the tables depend on T (the centre), not on learned parameters */
static void prepare(struct epar_nnpos *p, int T)
{
    if (p->T == T) return;
    int h2 = p->hs / 2;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < h2; i++) {
            double c, s;
            size_t k = (size_t)t * h2 + i;
            xpos_pair(p->mp, p->hs, i, t, T, 1, &c, &s);
            p->rcos[k] = (float)c, p->rsin[k] = (float)s;
            xpos_pair(p->mp, p->hs, i, t, T, -1, &c, &s);
            p->kcos[k] = (float)c, p->ksin[k] = (float)s;
        }
}

static const struct epar_nnpos_info train = {
    .hook = EPAR_NNPOS_H_QK, .uses_params = 1,
    .summary = "q and k rotated as RoPE (interleaved pairs) and scaled by zeta_i^(+-(t - T/2)/scale_base)",
    .check = check, .build = train_build, .prepare = prepare,
};

const struct epar_mech_def epar_mech_def_xpos = {
    .info = {"xpos", EPAR_MK_QK, "Sun et al. 2022", "§32",
             {{"base", 10000, 1.0001, 1e12, 0, "rotation base, as RoPE's"},
              {"gamma", 0.4, 0, 100, 0, "zeta_i = (2i/hs + gamma) / (1 + gamma): the paper's 0.4"},
              {"scale_base", 512, 1, 1e9, 0, "B: q.k carries zeta^((n - m)/B); the paper's 512"},
              {NULL, 0, 0, 0, 0, NULL}},
             build, "xPos: RoPE with a decay zeta_i^((i-j)/B) per rotation pair (interleaved)"},
    .train = &train,
    .qk = qk,
    .doc = "### xpos — xPos, RoPE with an exponential decay\n\n"
           "Sun et al. (2022), \"A Length-Extrapolatable Transformer\". Pair i of a head of width d_k turns at "
           "theta_i = base^(-2i/d_k) as in RoPE and has zeta_i = (2i/d_k + gamma)/(1 + gamma); the query at n is rotated "
           "and scaled by zeta_i^(n/B), the key at m by zeta_i^(-m/B), so q.k carries zeta_i^((n - m)/B).\n\n"
           "- Parameters: `xpos.base` (10000), `xpos.gamma` (0.4), `xpos.scale_base` B (512), the paper's.\n"
           "- Positions enter the scales centred on floor(T/2): the same product, no overflow at long T.\n"
           "- At the short lengths of the benchmark the decay is mild (d_k = 16, d = 32: zeta_0^(32/512) = 0.925); "
           "B is a parameter for that reason. The paper's blockwise causal attention at inference is not used.\n"
           "- Worked numbers: d_k = 4, gamma = 0.4: zeta_0 = 0.4/1.4 = 0.285714, zeta_1 = 0.9/1.4 = 0.642857; at B = 1 "
           "pair 0's part of q.k is RoPE's times zeta_0^(n - m): 0.285714 at distance 1, 0.081633 at 2.\n"
           "- Trained: no learned parameters; the tables (q's, k's) are rebuilt when the length changes.\n",
};
