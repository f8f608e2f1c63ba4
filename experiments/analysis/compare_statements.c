/* compare: the statements of docs/SOURCE_STATEMENTS.md with a static check (issue 33), rows of
 * compare/seed_checks.csv after compare_checks.c's (measurements only, as there).
 *
 * Each block draws from its own stream (seed, 100 + k, EXTRA) so the rows before keep their numbers, and works at
 * fixed small sizes (not the protocol's length): these are properties of formulas, not of a model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_randist.h>
#include "lib/err.h"
#include "lib/attn.h"
#include "lib/mech.h"
#include "lib/posfx.h"
#include "lib/rng.h"
#include "experiments/analysis/compare.h"
#include "experiments/analysis/compare_rows.h"

/* variance of x (n) and the standard error of that variance from the fourth central moment */
void epar_exp_compare_var_se(const double *x, int n, double *var, double *se)
{
    double m = 0, m2 = 0, m4 = 0;
    for (int i = 0; i < n; i++) m += x[i] / n;
    for (int i = 0; i < n; i++) {
        double d = (x[i] - m) * (x[i] - m);
        m2 += d / n;
        m4 += d * d / n;
    }
    *var = m2 * n / (n - 1);
    *se = sqrt(fmax(m4 - m2 * m2, 0) / n);
}

/* z (n) <- softmax(z) in place */
static void softmax_row(double *z, int n)
{
    double mx = -INFINITY, s = 0;
    for (int j = 0; j < n; j++) mx = fmax(mx, z[j]);
    for (int j = 0; j < n; j++) s += z[j] = exp(z[j] - mx);
    for (int j = 0; j < n; j++) z[j] /= s;
}

/* S0's ALiBi row (000:30 "+ m|i-j|"), S3 §3 (003:404-416): the bias of epar's alibi (Press et al.) per unit of
 * distance and per slope, and S3's softmax((QK^T + B)/sqrt(d_k)) against ALiBi's softmax(QK^T/sqrt(d_k) + B) */
static int checks_alibi_forms(const struct epar_compare_cfg *cfg, struct epar_compare_checks *t)
{
    enum { L = 16, H = 8, DK = 64 };
    double p[EPAR_MECH_MAX_PARAMS], sl[H];
    epar_mech_defaults(EPAR_MECH_ALIBI, p);
    struct epar_mech m;
    int st = epar_mech_init(&m, EPAR_MECH_ALIBI, p, L, H * DK, H, 0, cfg->prm.seeds[0]);
    if (st) return st;
    epar_mech_alibi_slopes(H, p[0], sl);
    double mean = 0, dev = 0;
    int n = 0;
    for (int h = 0; h < H; h++)
        for (int i = 0; i < L; i++)
            for (int j = 0; j < L; j++) {
                if (i == j) continue;
                double u = m.bias[((size_t)h * L + i) * L + j] / (sl[h] * abs(i - j)); /* bias / (m_h |i-j|) */
                mean += u;
                dev = fmax(dev, fabs(u - (-1.0)));
                n++;
            }
    mean /= n;
    gsl_rng *r = epar_rng_alloc(cfg->prm.seeds[0], 100, EPAR_RNG_EXTRA);
    double q[DK], k[L][DK], za[L], zb[L], worst = 0;
    if (!r) { epar_mech_free(&m); return EPAR_ENOMEM; }
    epar_rng_normal(r, q, DK, 1);
    for (int j = 0; j < L; j++) epar_rng_normal(r, k[j], DK, 1);
    epar_rng_free(r);
    int qi = L - 1;
    for (int h = 0; h < H; h++) {
        for (int j = 0; j < L; j++) {
            double s = cblas_ddot(DK, q, 1, k[j], 1), b = m.bias[((size_t)h * L + qi) * L + j];
            za[j] = s / sqrt((double)DK) + b;           /* ALiBi: the bias added to the scaled score */
            zb[j] = (s + b) / sqrt((double)DK);         /* S3 003:404: the bias inside the 1/sqrt(d_k) */
        }
        softmax_row(za, L);
        softmax_row(zb, L);
        for (int j = 0; j < L; j++) worst = fmax(worst, fabs(za[j] - zb[j]));
    }
    epar_mech_free(&m);
    if ((st = epar_exp_compare_row(t, "alibi_bias_per_unit_distance_and_slope", mean, NAN, NAN,
                  "mean over %d heads (max_bias %g) and key pairs i != j (L=%d) of the bias of epar's alibi divided by "
                  "m_h |i-j|: the preset matrix -|i-j| before the slope (S3 003:411, 416); largest deviation from -1: "
                  "%.3g. Its sign is that of the bias: ALiBi subtracts m|i-j|", H, p[0], L, dev)))
        return st;
    return epar_exp_compare_row(t, "alibi_bias_inside_scale_max_diff", worst, 0, NAN,
               "max over %d heads and %d keys of |softmax((q.k + B)/sqrt(d_k)) - softmax(q.k/sqrt(d_k) + B)| for one "
               "query (the last), q, k ~ N(0, I_%d): S3's formula divides each slope by sqrt(d_k) = %g", H, L, DK,
               sqrt((double)DK));
}

/* S3 1.1(2)-(3), §2, 1.3(4), §4.2(4): the sinusoid's addition formula and FLOATER's recursion, RoPE's angles
 * beyond the training length and its long-range decay, the NTK base as a base conversion */
static int checks_sinusoid_rope(struct epar_compare_checks *t)
{
    enum { D = 64, L = 512, NF = D / 2 };
    const double base = 10000;
    double pa[D], pb[D], pc[D], add = 0, *F = EPAR_MALLOC((size_t)L * D * sizeof *F), flo = 0;
    if (!F) return EPAR_ENOMEM;
    for (int a = 0; a < L / 2; a += 3)
        for (int b = 0; b < L / 2; b += 5) {
            epar_mech_sinusoid(a, D, base, 0, pa);
            epar_mech_sinusoid(b, D, base, 0, pb);
            epar_mech_sinusoid(a + b, D, base, 0, pc);
            for (int u = 0; u < NF; u++) { /* sin(x+y) = sin x cos y + cos x sin y; cos(x+y) = cos x cos y - sin x sin y */
                add = fmax(add, fabs(pc[2 * u] - (pa[2 * u] * pb[2 * u + 1] + pa[2 * u + 1] * pb[2 * u])));
                add = fmax(add, fabs(pc[2 * u + 1] - (pa[2 * u + 1] * pb[2 * u + 1] - pa[2 * u] * pb[2 * u])));
            }
        }
    epar_mech_floater(L, D, base, F);
    for (int k = 0; k < L; k++) {
        epar_mech_sinusoid(k, D, base, 0, pa);
        for (int u = 0; u < D; u++) flo = fmax(flo, fabs(F[(size_t)k * D + u] - pa[u]));
    }
    free(F);
    /* RoPE's angle per position of each pair, read from the rotation itself (interleaved pairs) */
    double th[NF], thn[NF], v[D];
    for (int pass = 0; pass < 2; pass++) {
        double b = pass ? epar_mech_ntk_base(base, 4, D) : base;
        for (int u = 0; u < D; u++) v[u] = (u & 1) ? 0.0 : 1.0;
        epar_mech_rope_rotate(v, D, 1.0, b, 0);
        for (int u = 0; u < NF; u++) (pass ? thn : th)[u] = atan2(v[2 * u + 1], v[2 * u]);
    }
    int unseen = 0;
    for (int u = 0; u < NF; u++) unseen += th[u] * (L - 1) < 2 * M_PI; /* never a full turn inside the training range */
    /* RoFormer's relative upper bound (1/(d/2)) sum_j |S_j(m)|, S_j(m) = sum_{u<j} e^{i m theta_u}, and the
     * sinusoid's |p_m . p_0| / (d/2), averaged near (m = 1..32) and far (m = 256..511) */
    double bnear = 0, bfar = 0, snear = 0, sfar = 0;
    epar_mech_sinusoid(0, D, base, 0, pb);
    for (int mm = 1; mm < L; mm++) {
        if (mm > 32 && mm < 256) continue;
        double re = 0, im = 0, bound = 0;
        for (int u = 0; u < NF; u++) {
            re += cos(mm * th[u]);
            im += sin(mm * th[u]);
            bound += hypot(re, im);
        }
        bound /= NF;
        epar_mech_sinusoid(mm, D, base, 0, pa);
        double dot = fabs(cblas_ddot(D, pa, 1, pb, 1)) / NF;
        if (mm <= 32) { bnear += bound / 32; snear += dot / 32; }
        else { bfar += bound / 256; sfar += dot / 256; }
    }
    int st;
    if ((st = epar_exp_compare_row(t, "sinusoidal_addition_max_diff", add, 0, NAN,
                  "max |p_{a+b} - combination of p_a and p_b by the addition formulas| over a < %d step 3, b < %d step 5 "
                  "(d=%d, base %g, interleaved sin/cos): the vector at a+b from the vectors at a and b", L / 2, L / 2, D,
                  base)) ||
        (st = epar_exp_compare_row(t, "floater_sinusoid_max_diff", flo, 0, NAN,
                  "max |p_k - sinusoid(k)| for k < %d (d=%d) of epar's floater: the recursion p_{k+1} = R p_k (a "
                  "rotation by omega_t per pair) from p_0 = [0,1,0,1,...]", L, D)) ||
        (st = epar_exp_compare_row(t, "rope_unseen_angle_fraction", (double)unseen / NF, NAN, NAN,
                  "share of the %d frequency pairs of RoPE (d=%d, base %g) whose angle never completes a turn within a "
                  "training length of %d (theta_t (L-1) < 2 pi): positions beyond it give those pairs angles never seen "
                  "in training; the other %d pairs wrap (periodic)", NF, D, base, L, NF - unseen)) ||
        (st = epar_exp_compare_row(t, "rope_decay_bound_ratio", bfar / bnear, 1, NAN,
                  "RoFormer's relative upper bound (1/(d/2)) sum_j |sum_{u<j} e^{i m theta_u}| (d=%d, base %g) averaged "
                  "over m = 256..511 (%.4g) over its average for m = 1..32 (%.4g): < 1 decays with distance", D, base,
                  bfar, bnear)) ||
        (st = epar_exp_compare_row(t, "sinusoidal_dot_decay_ratio", sfar / snear, 1, NAN,
                  "|p_m . p_0| / (d/2) of the sinusoid (d=%d) averaged over m = 256..511 (%.4g) over m = 1..32 (%.4g)", D,
                  sfar, snear)) ||
        (st = epar_exp_compare_row(t, "ntk_highest_frequency_ratio", thn[0] / th[0], 1, NAN,
                  "NTK-aware base %g * s^(d/(d-2)) = %.6g (s = 4, d = %d): angle per position of the fastest pair over "
                  "RoPE's (kept: adjacent positions stay as far apart)", base, epar_mech_ntk_base(base, 4, D), D)))
        return st;
    return epar_exp_compare_row(t, "ntk_lowest_frequency_ratio_times_s", 4 * thn[NF - 1] / th[NF - 1], 1, NAN,
               "s x the angle per position of the slowest pair with the NTK base over RoPE's (s = 4, d = %d): 1 means "
               "the slowest pair turns s times slower, so s L positions span the angles L positions did", D);
}

/* S0 §增强位置效应函数 (000:68) read literally, and Proposition 1 (000:110): softmax rows of N(0,1) scores times the
 * enhanced P at the paper's defaults */
static int checks_position_effect(const struct epar_compare_cfg *cfg, struct epar_compare_checks *t)
{
    enum { L = 512, ROWS = 64 };
    struct epar_posfx fx = {EPAR_FORM_ENHANCED, 1.0, 1.0, 0.5};
    gsl_rng *r = epar_rng_alloc(cfg->prm.seeds[0], 101, EPAR_RNG_EXTRA);
    double *z = EPAR_MALLOC(L * sizeof *z), *I = EPAR_MALLOC(L * sizeof *I), far = 0, viol = 0, sum1 = 0;
    int st = EPAR_ENOMEM;
    if (!r || !z || !I) goto done;
    epar_rng_uniform(r, I, L, 0, 1);
    double lo = INFINITY, hi = -INFINITY;
    for (int j = 0; j < L; j++) { lo = fmin(lo, I[j]); hi = fmax(hi, I[j]); }
    for (int q = 0; q < ROWS; q++) {
        int i = q * (L / ROWS);
        epar_rng_normal(r, z, L, 1);
        for (int j = 0; j < L; j++) z[j] *= epar_posfx_value(&fx, abs(i - j), L);
        softmax_row(z, L);
        double vi = 0, s = 0;
        for (int j = 0; j < L; j++) {
            if (abs(i - j) >= L / 2) far = fmax(far, z[j]);
            vi += z[j] * I[j];
            s += z[j];
        }
        viol = fmax(viol, fmax(lo - vi, vi - hi));
        sum1 = fmax(sum1, fabs(s - 1));
    }
    if ((st = epar_exp_compare_row(t, "epar_far_attention_max", far, epar_posfx_infimum(&fx), NAN,
                  "largest attention weight of any key at distance >= L/2 in %d rows of softmax(s_ij P(i,j)), s ~ N(0,1), "
                  "enhanced P at alpha=1 beta=1 gamma=0.5, L=%d; reference = alpha/(1+gamma): a row of L weights sums "
                  "to 1, so at most floor((1+gamma)/alpha) keys can hold that much", ROWS, L)))
        goto done;
    st = epar_exp_compare_row(t, "prop1_convex_violation", fmax(fmax(viol, 0), sum1), 0, NAN,
             "V(i) = sum_j A_ij I_j for the same %d rows and I ~ U(0,1): max of the amount V(i) leaves [min I, max I] "
             "(%.3g) and of |sum_j A_ij - 1| (%.3g)", ROWS, fmax(viol, 0), sum1);
done:
    if (r) epar_rng_free(r);
    free(z); free(I);
    return st;
}

/* S3 §1 (003:7): attention without position information cannot tell the order: permuting the input permutes A */
static int checks_order(const struct epar_compare_cfg *cfg, struct epar_compare_checks *t)
{
    enum { L = 16, D = 16, H = 4 };
    struct epar_layer layer = {0};
    struct epar_attn_ws ws = {0};
    gsl_rng *r = epar_rng_alloc(cfg->prm.seeds[0], 102, EPAR_RNG_EXTRA);
    double *X = EPAR_MALLOC(L * D * sizeof *X), *Xp = EPAR_MALLOC(L * D * sizeof *Xp),
           *A = EPAR_MALLOC((size_t)H * L * L * sizeof *A), *Ap = EPAR_MALLOC((size_t)H * L * L * sizeof *Ap), diff[2];
    size_t perm[L];
    int st = EPAR_ENOMEM;
    if (!r || !X || !Xp || !A || !Ap || epar_attn_layer_alloc(&layer, L, D, 0) || epar_attn_ws_alloc(&ws, L, D)) goto done;
    epar_attn_layer_init(&layer, r);
    epar_rng_normal(r, X, L * D, 1);
    epar_rng_permutation(r, perm, L);
    for (int i = 0; i < L; i++) memcpy(Xp + i * D, X + perm[i] * D, D * sizeof *X);
    for (int causal = 0; causal <= 1; causal++) {
        struct epar_attn_cfg c = {.L = L, .D = D, .heads = H, .scale = 1.0 / sqrt((double)D / H), .inv_temp = 1,
                                  .causal = causal, .empty = EPAR_EMPTY_SELF};
        epar_attn_forward(&c, &layer, NULL, X, A, &ws, NULL);
        epar_attn_forward(&c, &layer, NULL, Xp, Ap, &ws, NULL);
        diff[causal] = 0;
        for (int h = 0; h < H; h++)
            for (int i = 0; i < L; i++)
                for (int j = 0; j < L; j++)
                    diff[causal] = fmax(diff[causal], fabs(Ap[((size_t)h * L + i) * L + j] -
                                                           A[((size_t)h * L + perm[i]) * L + perm[j]]));
    }
    if ((st = epar_exp_compare_row(t, "no_pe_permutation_max_diff", diff[0], 0, NAN,
                  "max |A(PX)_ij - A(X)_{p(i)p(j)}| over %d heads, L=%d, D=%d: one random layer without position "
                  "information, input rows permuted; bidirectional", H, L, D)))
        goto done;
    st = epar_exp_compare_row(t, "no_pe_permutation_max_diff_causal", diff[1], 0, NAN,
             "the same with the causal mask: the mask itself carries the order");
done:
    if (r) epar_rng_free(r);
    epar_attn_layer_free(&layer);
    epar_attn_ws_free(&ws);
    free(X); free(Xp); free(A); free(Ap);
    return st;
}

/* S3 §4.2(5), §4.3 (003:486, 495): with the score distribution fixed, a longer row has a higher entropy */
static int checks_entropy_length(const struct epar_compare_cfg *cfg, struct epar_compare_checks *t)
{
    enum { ROWS = 64 };
    int n0 = cfg->extrap_length, n[2] = {n0, 8 * n0};
    double h[2] = {0, 0}, hn[2] = {0, 0};
    gsl_rng *r = epar_rng_alloc(cfg->prm.seeds[0], 103, EPAR_RNG_EXTRA);
    double *z = EPAR_MALLOC((size_t)n[1] * sizeof *z);
    if (!r || !z) { if (r) epar_rng_free(r); free(z); return EPAR_ENOMEM; }
    for (int k = 0; k < 2; k++)
        for (int q = 0; q < ROWS; q++) {
            epar_rng_normal(r, z, (size_t)n[k], 2.0);
            softmax_row(z, n[k]);
            double e = 0;
            for (int j = 0; j < n[k]; j++) if (z[j] > 0) e -= z[j] * log(z[j]);
            h[k] += e / ROWS;
            hn[k] += e / log((double)n[k]) / ROWS;
        }
    epar_rng_free(r);
    free(z);
    int st = epar_exp_compare_row(t, "entropy_change_8x", h[1] - h[0], 0, NAN,
                 "mean entropy of %d softmax rows of N(0,4) scores at n = %d (%.6g) and at 8n = %d (%.6g): the "
                 "difference", ROWS, n[0], h[0], n[1], h[1]);
    if (st) return st;
    return epar_exp_compare_row(t, "normalised_entropy_change_8x", hn[1] - hn[0], 0, NAN,
               "the same for entropy / ln n (1 = uniform): %.6g at n = %d, %.6g at 8n", hn[0], n[0], hn[1]);
}

/* mean, and the variance with its standard error (fourth moment), of x (n); mse (and its se) around `exact` */
struct est { double mean, mean_se, var, var_se, mse, mse_se; };
static struct est est_of(const double *x, int n, double exact)
{
    struct est e = {0};
    epar_exp_compare_var_se(x, n, &e.var, &e.var_se);
    double m = 0, s2 = 0, s4 = 0;
    for (int i = 0; i < n; i++) m += x[i] / n;
    for (int i = 0; i < n; i++) { double d = (x[i] - exact) * (x[i] - exact); s2 += d / n; s4 += d * d / n; }
    e.mean = m;
    e.mean_se = sqrt(e.var / n);
    e.mse = s2;
    e.mse_se = sqrt(fmax(s4 - s2 * s2, 0) / n);
    return e;
}

static double ratio_se(double a, double sa, double b, double sb)
{
    return a / b * sqrt(pow(sa / a, 2) + pow(sb / b, 2));
}

/* S1 §2.2.2, §2.2.4, §3.2.3, §3.3.2: S1's own orthogonal features (Gram-Schmidt, Omega^T Omega = I: unit rows) beside
 * iid and FAVOR+'s (chi-norm rows); trigonometric features; one draw against the kernel */
static int checks_performer_s1(const struct epar_compare_cfg *cfg, struct epar_compare_checks *t)
{
    enum { DRAWS = 10000, d = 16, m = 16, KINDS = 4 }; /* iid, S1's unit rows, chi rows, trig (iid) */
    gsl_rng *r = epar_rng_alloc(cfg->prm.seeds[0], 104, EPAR_RNG_EXTRA);
    double *est = EPAR_MALLOC((size_t)KINDS * DRAWS * sizeof *est), *rel = EPAR_MALLOC(DRAWS * sizeof *rel), Om[m * d],
           q[d], k[d], qs[d], ks[d];
    int st = EPAR_ENOMEM;
    if (!r || !est || !rel) goto done;
    epar_rng_normal(r, q, d, 0.5);
    epar_rng_normal(r, k, d, 0.5);
    double sc = pow(d, -0.25), hq = 0, hk = 0, qk = 0;
    for (int u = 0; u < d; u++) {
        qs[u] = q[u] * sc; ks[u] = k[u] * sc;
        hq += qs[u] * qs[u] / 2; hk += ks[u] * ks[u] / 2; qk += qs[u] * ks[u];
    }
    double exact = exp(qk);
    st = EPAR_OK;
    for (int n = 0; n < DRAWS && !st; n++)
        for (int kind = 0; kind < KINDS && !st; kind++) {
            if ((st = epar_mech_performer_omega(r, m, d, kind == 1 || kind == 2, kind == 1, Om))) break;
            if (kind == 1) for (int u = 0; u < m * d; u++) Om[u] /= sqrt((double)d); /* rows of norm 1 */
            double e = 0;
            for (int f = 0; f < m; f++) {
                double wq = cblas_ddot(d, Om + f * d, 1, qs, 1), wk = cblas_ddot(d, Om + f * d, 1, ks, 1);
                e += (kind == 3 ? exp(hq + hk) * cos(wq - wk) : exp(wq - hq) * exp(wk - hk)) / m;
            }
            est[(size_t)kind * DRAWS + n] = e;
            if (kind == 0) rel[n] = fabs(e - exact) / exact;
        }
    if (st) goto done;
    struct est E[KINDS];
    for (int kind = 0; kind < KINDS; kind++) E[kind] = est_of(est + (size_t)kind * DRAWS, DRAWS, exact);
    struct est R = est_of(rel, DRAWS, 0);
    const char *what = "of the m=16-feature estimate of exp(q.k/sqrt(d)) (d=16, q, k ~ N(0, 0.25 I))";
    if ((st = epar_exp_compare_row(t, "performer_gs_estimate_mean", E[1].mean, exact, E[1].mean_se,
                  "mean over %d draws %s with S1's orthogonal features: Gram-Schmidt of Gaussian vectors, Omega^T Omega = I "
                  "(rows of norm 1, 001:428-430); reference = the exact kernel", DRAWS, what)) ||
        (st = epar_exp_compare_row(t, "performer_orthogonal_estimate_mean", E[2].mean, exact, E[2].mean_se,
                  "the same with FAVOR+'s orthogonal features (rows rescaled to chi_d norms, each row marginally N(0, I))")) ||
        (st = epar_exp_compare_row(t, "performer_gs_variance_ratio", E[1].var / E[0].var, 1, ratio_se(E[1].var, E[1].var_se, E[0].var, E[0].var_se),
                  "variance %s: S1's unit-row orthogonal features %.4g over iid N(0, I) features %.4g (%d draws each)",
                  what, E[1].var, E[0].var, DRAWS)) ||
        (st = epar_exp_compare_row(t, "performer_gs_mse_ratio", E[1].mse / E[0].mse, 1, ratio_se(E[1].mse, E[1].mse_se, E[0].mse, E[0].mse_se),
                  "mean squared error around the kernel %s: S1's unit-row features %.4g over iid %.4g", what, E[1].mse,
                  E[0].mse)) ||
        (st = epar_exp_compare_row(t, "performer_orthogonal_mse_ratio", E[2].mse / E[0].mse, 1, ratio_se(E[2].mse, E[2].mse_se, E[0].mse, E[0].mse_se),
                  "the same for FAVOR+'s chi-norm orthogonal features: %.4g over iid %.4g", E[2].mse, E[0].mse)) ||
        (st = epar_exp_compare_row(t, "performer_single_draw_rel_error", R.mean, 0, R.mean_se,
                  "mean over %d draws of |phi(q).phi(k) - exp(q.k/sqrt(d))| / exp(q.k/sqrt(d)) for one draw of m=%d iid "
                  "positive features (d=%d): the error of the map as an equality", DRAWS, m, d)))
        goto done;
    st = epar_exp_compare_row(t, "trig_variance_ratio", E[3].var / E[0].var, 1, ratio_se(E[3].var, E[3].var_se, E[0].var, E[0].var_se),
             "variance %s: trigonometric features exp(|q'|^2/2 + |k'|^2/2) cos(w.(q'-k')) (TrigRF) %.4g over positive "
             "features %.4g, both iid w ~ N(0, I)", what, E[3].var, E[0].var);
done:
    if (r) epar_rng_free(r);
    free(est); free(rel);
    return st;
}

/* S1 §4.2.2, §4.3.1 (001:493-526): Johnson-Lindenstrauss for a random orthogonal projection to the theorem's k */
static int checks_jl(const struct epar_compare_cfg *cfg, struct epar_compare_checks *t)
{
    enum { N = 8, D = 256, TRIALS = 100 };   /* 10 of 10 cannot show 'at least 9 in 10' at 95 % (Wilson: 0.72) */
    const double eps = 0.5;
    int K = (int)ceil(4 * log((double)N) / (eps * eps / 2 - eps * eps * eps / 3));
    gsl_rng *r = epar_rng_alloc(cfg->prm.seeds[0], 105, EPAR_RNG_EXTRA);
    double *X = EPAR_MALLOC((size_t)N * D * sizeof *X), *W = EPAR_MALLOC((size_t)D * K * sizeof *W),
           *Y = EPAR_MALLOC((size_t)N * K * sizeof *Y), lo[2] = {INFINITY, INFINITY}, hi[2] = {0, 0};
    int ok[2] = {0, 0}, st = EPAR_ENOMEM;
    if (!r || !X || !W || !Y) goto done;
    epar_rng_normal(r, X, (size_t)N * D, 1);
    for (int tr = 0; tr < TRIALS; tr++) {
        if ((st = epar_rng_orthogonal(r, W, D, K))) goto done;   /* D x K, orthonormal columns: Omega = W^T */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, K, D, 1.0, X, D, W, K, 0.0, Y, K);
        int good[2] = {1, 1};
        for (int a = 0; a < N; a++)
            for (int b = a + 1; b < N; b++) {
                double dx = 0, dy = 0;
                for (int u = 0; u < D; u++) dx += pow(X[a * D + u] - X[b * D + u], 2);
                for (int u = 0; u < K; u++) dy += pow(Y[a * K + u] - Y[b * K + u], 2);
                for (int s = 0; s < 2; s++) {  /* 0: f = sqrt(D/K) Omega (the theorem's map), 1: Omega x as written */
                    double ratio = dy / dx * (s == 0 ? (double)D / K : 1.0);
                    lo[s] = fmin(lo[s], ratio);
                    hi[s] = fmax(hi[s], ratio);
                    good[s] &= ratio >= 1 - eps && ratio <= 1 + eps;
                }
            }
        ok[0] += good[0];
        ok[1] += good[1];
    }
    double f0 = (double)ok[0] / TRIALS, f1 = (double)ok[1] / TRIALS;
    if ((st = epar_exp_compare_row(t, "jl_orthogonal_success_fraction", f0, NAN, sqrt(f0 * (1 - f0) / TRIALS),
                  "share of %d random orthogonal projections R^%d -> R^k, k = %d = ceil(4 ln n / (eps^2/2 - eps^3/3)) "
                  "for n = %d points, eps = %g, scaled by sqrt(d/k), that keep every squared distance within (1 +- eps); "
                  "ratios seen %.4g .. %.4g", TRIALS, D, K, N, eps, lo[0], hi[0])))
        goto done;
    t->row[t->n - 1].trials = TRIALS;
    st = epar_exp_compare_row(t, "jl_unscaled_success_fraction", f1, NAN, sqrt(f1 * (1 - f1) / TRIALS),
             "the same for Omega x without the sqrt(d/k) (001:497 as written): ratios seen %.4g .. %.4g (about k/d = %.3g)",
             lo[1], hi[1], (double)K / D);
    if (!st) t->row[t->n - 1].trials = TRIALS;
done:
    if (r) epar_rng_free(r);
    free(X); free(W); free(Y);
    return st;
}

/* S2 §2.1.1-§2.1.2 examples (002:41-58), §2.3.2 and §4.2's sparsity table (002:140-141, 466-472) */
static int checks_pi_table(struct epar_compare_checks *t)
{
    unsigned char M[16 * 16];
    int bad_ring = 0, bad_step = 0, st;
    epar_mech_mask_pi_local(16, 2, 1, M);
    static const int row5[] = {3, 4, 5, 6, 7}, row0[] = {14, 15, 0, 1, 2}, step0[] = {0, 3, 6, 9, 12, 15};
    for (int j = 0; j < 16; j++) {
        int in5 = 0, in0 = 0;
        for (int k = 0; k < 5; k++) { in5 |= row5[k] == j; in0 |= row0[k] == j; }
        bad_ring += (M[5 * 16 + j] != 0) != in5;
        bad_ring += (M[0 * 16 + j] != 0) != in0;
    }
    epar_mech_mask_pi_step(16, 3, M);
    for (int j = 0; j < 16; j++) {
        int ins = 0;
        for (int k = 0; k < 6; k++) ins |= step0[k] == j;
        bad_step += (M[j] != 0) != ins;
    }
    if ((st = epar_exp_compare_row(t, "pi_ring_example_mismatches", bad_ring, 0, NAN,
                  "entries of rows i=5 and i=0 of the ring-local mask (n=16, r=2) that differ from S2's lists {3..7} and "
                  "{14,15,0,1,2}")) ||
        (st = epar_exp_compare_row(t, "pi_step_example_mismatches", bad_step, 0, NAN,
                  "entries of row 0 of the pi-step mask (n=16, pi=3) that differ from S2's list {0,3,6,9,12,15}")))
        return st;
    /* each pi of the table at the longest length S2 recommends it for (002:148-152; pi=4: none, 4096 as pi=16) */
    static const int pis[4] = {4, 8, 32, 64}, Lu[4] = {4096, 4096, 32768, 131072};
    for (int k = 0; k < 4; k++) {
        char id[64];
        double L = 4096;
        snprintf(id, sizeof id, "pi_sparsity_step_pi%d_L4096", pis[k]);
        if ((st = epar_exp_compare_row(t, id, 1.0 - epar_mech_pi_union_pairs(4096, pis[k], 0, 1) / (L * L), NAN, NAN,
                      "1 - pairs / L^2 of the step mask alone (pi=%d) at L=4096", pis[k])))
            return st;
        L = Lu[k];
        snprintf(id, sizeof id, "pi_sparsity_union_pi%d_L%d", pis[k], Lu[k]);
        if ((st = epar_exp_compare_row(t, id, 1.0 - epar_mech_pi_union_pairs(Lu[k], pis[k], 32, 1) / (L * L), NAN, NAN,
                      "1 - pairs / L^2 of the local (ring, r=32) + step (pi=%d) union at L=%d", pis[k], Lu[k])))
            return st;
    }
    return EPAR_OK;
}

/* S1 §2.3.2, §2.3.4, S4 §2 (001:260, 280; 004:49, 171-173): the pairs of each sparse pattern against L (log-log
 * slope); S4 §5 (004:242) what GQA saves; S1 §3.2.4 the kernel trick as an identity */
static int checks_costs(const struct epar_compare_cfg *cfg, struct epar_compare_checks *t)
{
    enum { NL = 4, NP = 5 };
    static const int Ls[NL] = {256, 512, 1024, 2048};
    double pw[EPAR_MECH_MAX_PARAMS], pg[EPAR_MECH_MAX_PARAMS], pb[EPAR_MECH_MAX_PARAMS];
    epar_mech_defaults(EPAR_MECH_SLIDING_WINDOW, pw);
    epar_mech_defaults(EPAR_MECH_GLOBAL_LOCAL, pg);
    epar_mech_defaults(EPAR_MECH_BLOCK_SPARSE, pb);
    unsigned char *M = EPAR_MALLOC((size_t)Ls[NL - 1] * Ls[NL - 1]);
    if (!M) return EPAR_ENOMEM;
    double lx[NL], ly[NP][NL];
    for (int k = 0; k < NL; k++) {
        int L = Ls[k];
        lx[k] = log((double)L);
        ly[0][k] = log((double)epar_mech_mask_strided(L, epar_mech_auto_stride(0, L), 0, M));
        ly[1][k] = log((double)epar_mech_mask_window(L, (int)pw[0], M));
        ly[2][k] = log((double)epar_mech_mask_global_local(L, (int)pg[0], (int)pg[1], M));
        ly[3][k] = log((double)epar_mech_mask_block(L, (int)pb[0], (int)pb[1], 0, M));
        ly[4][k] = log((double)epar_mech_mask_block(L, epar_mech_auto_stride(0, L), (int)pb[1], 0, M));
    }
    free(M);
    static const char *const ids[NP] = {"strided_pairs_exponent", "sliding_window_pairs_exponent",
                                         "global_local_pairs_exponent", "block_sparse_pairs_exponent",
                                         "block_sparse_sqrt_block_pairs_exponent"};
    static const double expect[NP] = {1.5, 1, 1, 1, 1.5};
    char what[NP][128];
    snprintf(what[0], sizeof what[0], "strided (causal, l = round(sqrt L))");
    snprintf(what[1], sizeof what[1], "sliding-window (radius %g)", pw[0]);
    snprintf(what[2], sizeof what[2], "global-local (radius %g, %g global)", pg[0], pg[1]);
    snprintf(what[3], sizeof what[3], "block-sparse (block %g, neighbours %g: epar's default)", pb[0], pb[1]);
    snprintf(what[4], sizeof what[4], "block-sparse with block round(sqrt L), neighbours %g", pb[1]);
    int st;
    for (int p = 0; p < NP; p++) {
        double c0, c1, cov00, cov01, cov11, ss;
        gsl_fit_linear(lx, 1, ly[p], 1, NL, &c0, &c1, &cov00, &cov01, &cov11, &ss);
        if ((st = epar_exp_compare_row(t, ids[p], c1, expect[p], NAN,
                      "least-squares slope of log(allowed pairs) against log L at L = %d, %d, %d, %d for %s; reference = "
                      "the exponent of its construction", Ls[0], Ls[1], Ls[2], Ls[3], what[p])))
            return st;
    }
    /* GQA vs MHA (none) at the same sizes: the attention core per query row, and the K/V projections */
    enum { Lg = 64, Hg = 8, DKg = 64 };
    double pq[EPAR_MECH_MAX_PARAMS], pn[EPAR_MECH_MAX_PARAMS];
    epar_mech_defaults(EPAR_MECH_GQA, pq);
    epar_mech_defaults(EPAR_MECH_NONE, pn);
    struct epar_mech mg, mn;
    if ((st = epar_mech_init(&mg, EPAR_MECH_GQA, pq, Lg, Hg * DKg, Hg, 0, cfg->prm.seeds[0]))) return st;
    if ((st = epar_mech_init(&mn, EPAR_MECH_NONE, pn, Lg, Hg * DKg, Hg, 0, cfg->prm.seeds[0]))) { epar_mech_free(&mg); return st; }
    double fg = epar_mech_flops_row(&mg), fn = epar_mech_flops_row(&mn);
    int G = mg.groups;
    epar_mech_free(&mg);
    epar_mech_free(&mn);
    if ((st = epar_exp_compare_row(t, "gqa_attention_flops_ratio", fg / fn, 1, NAN,
                  "flops per query row and head of the attention core (q.k over L keys, softmax, weighted sum of L "
                  "values; epar_mech_flops_row) of gqa (G=%d KV heads) over none (MHA), H=%d, d_k=%d, L=%d: %.6g / %.6g",
                  G, Hg, DKg, Lg, fg, fn)) ||
        (st = epar_exp_compare_row(t, "gqa_kv_projection_flops_ratio", (double)G / Hg, 1, NAN,
                  "flops of the K and V projections, 2 x 2 L D (G d_k) for GQA over 2 x 2 L D (H d_k) for MHA = G/H "
                  "(H=%d, G=%d)", Hg, G)))
        return st;
    /* the kernel trick: phi(q)^T S / phi(q)^T z (linear) against the explicit normalised phi(Q) phi(K)^T (quadratic) */
    enum { Lk = 64, NFk = 32, DVk = 16 };
    gsl_rng *r = epar_rng_alloc(cfg->prm.seeds[0], 106, EPAR_RNG_EXTRA);
    double *PQ = EPAR_MALLOC(Lk * NFk * sizeof *PQ), *PK = EPAR_MALLOC(Lk * NFk * sizeof *PK),
           *V = EPAR_MALLOC(Lk * DVk * sizeof *V), *A = EPAR_MALLOC(Lk * Lk * sizeof *A), *O1 = EPAR_MALLOC(Lk * DVk * sizeof *O1),
           *O2 = EPAR_MALLOC(Lk * DVk * sizeof *O2), *W = EPAR_MALLOC(NFk * (DVk + 1) * sizeof *W), worst = 0;
    st = EPAR_ENOMEM;
    if (r && PQ && PK && V && A && O1 && O2 && W) {
        epar_rng_uniform(r, PQ, Lk * NFk, 0.01, 1);
        epar_rng_uniform(r, PK, Lk * NFk, 0.01, 1);
        epar_rng_normal(r, V, Lk * DVk, 1);
        epar_mech_kernel_attention(PQ, PK, Lk, NFk, 0, 1e-6, A);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Lk, DVk, Lk, 1.0, A, Lk, V, DVk, 0.0, O1, DVk);
        epar_mech_kernel_output(PQ, PK, V, Lk, NFk, DVk, 0, 1e-6, O2, W);
        for (int u = 0; u < Lk * DVk; u++) worst = fmax(worst, fabs(O1[u] - O2[u]));
        st = epar_exp_compare_row(t, "kernel_associativity_max_diff", worst, 0, NAN,
                 "max |(phi(Q) phi(K)^T normalised) V - phi(Q)(phi(K)^T V) / phi(Q) z| for L=%d, %d features U(0.01, 1), "
                 "V ~ N(0,1) of width %d", Lk, NFk, DVk);
    }
    if (r) epar_rng_free(r);
    free(PQ); free(PK); free(V); free(A); free(O1); free(O2); free(W);
    return st;
}

int epar_exp_compare_statement_checks(const struct epar_compare_cfg *cfg, struct epar_compare_checks *t)
{
    int st;
    if ((st = checks_alibi_forms(cfg, t)) || (st = checks_sinusoid_rope(t)) || (st = checks_position_effect(cfg, t)) ||
        (st = checks_order(cfg, t)) || (st = checks_entropy_length(cfg, t)) || (st = checks_performer_s1(cfg, t)) ||
        (st = checks_jl(cfg, t)) || (st = checks_pi_table(t)) || (st = checks_costs(cfg, t)))
        return st;
    return EPAR_OK;
}
