/* YaRN (Peng, Quesnelle, Fan & Shippole 2023, "YaRN: Efficient Context Window Extension of Large Language Models"):
 * RoPE read past its trained length L by "NTK-by-parts" interpolation plus an attention temperature. At a length
 * T > L, s = T / L; pair i turns at theta_i = base^(-2i/hs), r_i = L theta_i / (2 pi) times within L, and
 *   theta'_i = (1 - g(r_i)) theta_i / s + g(r_i) theta_i,   g(r) = 0 below alpha, 1 above beta, linear between,
 * so pairs that turn many times within L keep their frequency and those that turn less than once are interpolated
 * fully; q and k are each multiplied by 0.1 ln s + 1 (the logits by its square). At T <= L it is RoPE exactly. The
 * whole mechanism: its catalogue row, its analysis form, its trained form and its documentation (lib/mech.h). */
#include <math.h>
#include <stdlib.h>
#include "lib/err.h"
#include "lib/nnpos.h"

enum { P_BASE, P_TRAIN, P_ALPHA, P_BETA };

/* the frequency of pair i at length T and the factor on q and k */
static double yarn_theta(const double *p, int hs, int i, int T)
{
    double theta = pow(p[P_BASE], -2.0 * i / hs), s = T / p[P_TRAIN];
    if (s <= 1) return theta;
    double r = p[P_TRAIN] * theta / (2 * M_PI), a = p[P_ALPHA], b = p[P_BETA];
    double g = r < a ? 0 : r > b ? 1 : (r - a) / (b - a);
    return (1 - g) * theta / s + g * theta;
}

static double yarn_factor(const double *p, int T)
{
    double s = T / p[P_TRAIN];
    return s > 1 ? 0.1 * log(s) + 1 : 1;
}

static int check_values(const double *p, int hs)
{
    if (hs % 2) return epar_err_set(EPAR_EINVAL, "yarn needs an even head width (dim / heads), got '%d'", hs);
    if (!(p[P_ALPHA] < p[P_BETA]))
        return epar_err_set(EPAR_EINVAL, "yarn.alpha must be below yarn.beta, got '%g' and '%g'", p[P_ALPHA], p[P_BETA]);
    return EPAR_OK;
}

/* ---- the analysis form (epar compare): q and k of every head rotated by theta' and scaled, interleaved pairs ---- */

static int build(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    return check_values(m->p, m->dk) ? EPAR_EINVAL : EPAR_OK;
}

static void rotate(const double *p, double *V, int L, int dk, int ld)
{
    double f = yarn_factor(p, L);
    for (int t = 0; t < L; t++)
        for (int i = 0; i < dk / 2; i++) {
            double th = t * yarn_theta(p, dk, i, L), c = f * cos(th), s = f * sin(th);
            double *v = V + (size_t)t * ld + 2 * i, a = v[0], b = v[1];
            v[0] = a * c - b * s;
            v[1] = a * s + b * c;
        }
}

static void qk(struct epar_mech *m, int h, double *Q, double *K, int L, int dk, int ld)
{
    (void)h;
    rotate(m->p, Q, L, dk, ld);
    rotate(m->p, K, L, dk, ld);
}

/* ---- the trained form (lib/nnpos's q/k hook: the factor is in the tables, which q and k share) ---- */

static int check(enum epar_mech_id id, const struct epar_nnpos_settings *s, int hs)
{
    return check_values(s->mp[id], hs);
}

static int train_build(struct epar_nnpos *p)
{
    size_t n = (size_t)p->Tmax * (p->hs / 2);
    if (!(p->rcos = epar_err_alloc(n, sizeof *p->rcos, "the YaRN tables")) ||
        !(p->rsin = epar_err_alloc(n, sizeof *p->rsin, "the YaRN tables")))
        return EPAR_ENOMEM;
    return EPAR_OK;
}

static void prepare(struct epar_nnpos *p, int T)
{
    if (p->T == T) return;
    int h2 = p->hs / 2;
    double f = yarn_factor(p->mp, T);
    for (int i = 0; i < h2; i++) {
        double th = yarn_theta(p->mp, p->hs, i, T);
        for (int t = 0; t < T; t++) {
            p->rcos[(size_t)t * h2 + i] = (float)(f * cos(t * th));
            p->rsin[(size_t)t * h2 + i] = (float)(f * sin(t * th));
        }
    }
}

static const struct epar_nnpos_info train = {
    .hook = EPAR_NNPOS_H_QK, .uses_params = 1,
    .summary = "RoPE; for T > train_length NTK-by-parts frequencies and q, k times 0.1 ln(T/train_length) + 1",
    .check = check, .build = train_build, .prepare = prepare,
};

const struct epar_mech_def epar_mech_def_yarn = {
    .info = {"yarn", EPAR_MK_QK, "Peng et al. 2023", "§32",
             {{"base", 10000, 1.0001, 1e12, 0, "rotation base, as RoPE's"},
              {"train_length", 512, 2, 1 << 24, 0, "training length L (trained: the run's)"},
              {"alpha", 1, 0, 1e6, 0, "turns within L below which a pair is interpolated fully (the paper's 1)"},
              {"beta", 32, 0, 1e6, 0, "turns within L above which a pair keeps its frequency (the paper's 32)"},
              {NULL, 0, 0, 0, 0, NULL}},
             build, "YaRN: RoPE read past L by NTK-by-parts interpolation and the temperature (0.1 ln s + 1)^2"},
    .train = &train,
    .qk = qk,
    .doc = "### yarn — YaRN, NTK-by-parts interpolation with a temperature\n\n"
           "Peng, Quesnelle, Fan & Shippole (2023), \"YaRN: Efficient Context Window Extension of Large Language "
           "Models\". At a length T past the trained L, s = T/L; pair i of RoPE (theta_i = base^(-2i/d_k)) turns "
           "r_i = L theta_i / 2 pi times within L, and its frequency becomes (1 - g) theta_i / s + g theta_i with the ramp "
           "g(r) = 0 for r < alpha, 1 for r > beta, linear between; q and k are each multiplied by 0.1 ln s + 1. At "
           "T <= L it is RoPE.\n\n"
           "- Parameters: `yarn.base` (10000), `yarn.train_length` (trained: the run's length), `yarn.alpha` (1), "
           "`yarn.beta` (32), the paper's for LLaMA.\n"
           "- Pitfall: alpha and beta assume L in the thousands. At L = 32 and d_k = 16 the fastest pair turns "
           "5.1 times within L, so at beta = 32 every pair is interpolated by at least 84 %: YaRN is then position "
           "interpolation with the temperature. The benchmark's extrapolation study sets beta for its lengths (its "
           "protocol's `set`) and says so.\n"
           "- Worked numbers: base 10000, d_k = 4, L = 8, T = 16 (s = 2), alpha 1, beta 32: theta_0 = 1, r_0 = 1.273240, "
           "g = 0.008814, theta'_0 = 0.504407; theta_1 = 0.01, r_1 = 0.012732, theta'_1 = 0.005; factor 1.069315.\n"
           "- In the study it reads RoPE's weights past L, beside ntk-rope and interpolation, with and without the "
           "fine-tuning arm.\n",
};
