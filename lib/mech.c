/* mech: every attention/position mechanism of docs/MECHANISMS.md as pieces plugged into lib/attn.
 * Formulas cite the docs/MECHANISMS.md section; pitfalls noted there are handled where marked. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_randist.h>
#include "err.h"
#include "posfx.h"
#include "rng.h"
#include "mech.h"

/* ================================================================== formulas */

void epar_mech_sinusoid(double k, int D, double base, int concat, double *p)
{
    int half = D / 2;
    if (concat) { /* [sin(k w_0) .. sin(k w_{h-1}) | cos(k w_0) .. cos(k w_{h-1})], odd D: last entry 0 */
        for (int t = 0; t < half; t++) {
            double a = k * pow(base, -2.0 * t / D);
            p[t] = sin(a);
            p[half + t] = cos(a);
        }
        if (D & 1) p[D - 1] = 0.0;
        return;
    }
    for (int t = 0; 2 * t < D; t++) {
        double a = k * pow(base, -2.0 * t / D);
        p[2 * t] = sin(a);
        if (2 * t + 1 < D) p[2 * t + 1] = cos(a);
    }
}

void epar_mech_floater_angles(int D, double base, double *cs)
{
    for (int t = 0; 2 * t < D; t++) {
        double w = pow(base, -2.0 * t / D);
        cs[2 * t] = cos(w);
        cs[2 * t + 1] = sin(w);
    }
}

void epar_mech_floater_rotate(int D, const double *cs, int dir, const double *a, double *b)
{
    /* each pair (x,y) -> (x cos w + y sin w, -x sin w + y cos w); dir -1: sin w -> -sin w (the transpose) */
    for (int t = 0; 2 * t < D; t++) {
        double c = cs[2 * t], s = dir * cs[2 * t + 1];
        double x = a[2 * t], y = 2 * t + 1 < D ? a[2 * t + 1] : 0.0;
        b[2 * t] = x * c + y * s;
        if (2 * t + 1 < D) b[2 * t + 1] = -x * s + y * c;
    }
}

void epar_mech_floater(int L, int D, double base, double *P)
{
    /* p_0 = [0,1,0,1,...]; p_k = R p_{k-1} */
    for (int t = 0; t < D; t++) P[t] = (t & 1) ? 1.0 : 0.0;
    if (L < 2) return;
    double *cs = malloc((size_t)(D + 1) * sizeof *cs);
    if (!cs) {
        for (size_t i = 0; i < (size_t)L * D; i++) P[i] = NAN;
        return;
    }
    epar_mech_floater_angles(D, base, cs);
    for (int k = 1; k < L; k++) epar_mech_floater_rotate(D, cs, 1, P + (size_t)(k - 1) * D, P + (size_t)k * D);
    free(cs);
}

void epar_mech_rope_rotate(double *v, int d, double pos, double base, int half)
{
    for (int t = 0; t < d / 2; t++) {
        double th = pos * pow(base, -2.0 * t / d), c = cos(th), s = sin(th);
        int ia = half ? t : 2 * t, ib = half ? t + d / 2 : 2 * t + 1;
        double a = v[ia], b = v[ib];
        v[ia] = a * c - b * s;
        v[ib] = a * s + b * c;
    }
}

double epar_mech_ntk_base(double base, double s, int d) { return base * pow(s, (double)d / (d - 2)); }

double epar_mech_logn(double n, double train_length, int clamp)
{
    double k = log(n) / log(train_length);
    return clamp && k < 1.0 ? 1.0 : k;
}

int epar_mech_t5_bucket(int rel, int bidirectional, int num_buckets, int max_distance)
{
    int n = -rel, off = 0, nb = num_buckets;
    if (bidirectional) {
        nb /= 2;
        if (n < 0) off = nb;
        n = abs(n);
    } else if (n < 0) {
        n = 0;
    }
    int me = nb / 2;
    if (n < me) return off + n;
    /* floor of a positive double (pitfall: truncation of the log bucket) */
    int v = me + (int)floor(log((double)n / me) / log((double)max_distance / me) * (nb - me));
    return off + (v < nb - 1 ? v : nb - 1);
}

static void alibi_pow2(int n, double max_bias, double *m)
{
    for (int h = 0; h < n; h++) m[h] = pow(2.0, -max_bias * (h + 1) / n);
}

void epar_mech_alibi_slopes(int n, double max_bias, double *m)
{
    int c = 1;
    while (c * 2 <= n) c *= 2;
    alibi_pow2(c, max_bias, m);
    /* the rest: slopes(2c) at even indices 0, 2, 4, ... (they come after the first c) */
    for (int k = 0; k < n - c; k++) m[c + k] = pow(2.0, -max_bias * (2 * k + 1) / (2.0 * c));
}

int epar_mech_fixed_pattern(int pattern, int L, double *W)
{
    memset(W, 0, (size_t)L * L * sizeof *W);
    int fallback = 0;
    for (int i = 0; i < L; i++) {
        double *w = W + (size_t)i * L;
        double sum = 0.0;
        switch (pattern) {
        case 1: w[i] = 1; sum = 1; break;
        case 2: if (i >= 1) { w[i - 1] = 1; sum = 1; } break;
        case 3: if (i + 1 < L) { w[i + 1] = 1; sum = 1; } break;
        case 4: for (int j = 0; j <= i - 2; j++) { w[j] = pow(j + 1.0, 3); sum += w[j]; } break;
        case 5: for (int j = i + 2; j < L; j++) { w[j] = pow((double)(L - j), 3); sum += w[j]; } break;
        case 6: for (int j = 0; j < L; j++) { w[j] = pow(j + 1.0, 3); sum += w[j]; } break;
        case 7: for (int j = 0; j < L; j++) { w[j] = pow((double)(L - j), 3); sum += w[j]; } break;
        case 8: w[0] = 1; sum = 1; break;
        default: break;
        }
        if (sum <= 0) {     /* empty context: epar's self fallback (§19) */
            w[i] = 1.0;
            fallback++;
            continue;
        }
        for (int j = 0; j < L; j++) w[j] /= sum;
    }
    return fallback;
}

static long mask_count(const unsigned char *M, int L)
{
    long n = 0;
    for (size_t t = 0; t < (size_t)L * L; t++) n += M[t];
    return n;
}

long epar_mech_mask_strided(int L, int l, int openai_local, unsigned char *M)
{
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++) {
            int a = 0;
            if (j <= i) {
                int dd = i - j;
                a = (openai_local ? dd < l : dd <= l) || dd % l == 0;
            }
            M[(size_t)i * L + j] = (unsigned char)a;
        }
    return mask_count(M, L);
}

/* splitmix64 of x: a uniform 64-bit word */
static unsigned long long mix64(unsigned long long x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

long epar_mech_mask_random(int L, int l, int k, unsigned long long key, unsigned char *M)
{
    for (int i = 0; i < L; i++) {
        unsigned char *row = M + (size_t)i * L;
        int c = i - l > 0 ? i - l : 0;            /* candidates 0 .. c - 1, before the band */
        int need = k > 0 ? k : i / l - 1;
        if (need > c) need = c;
        if (need < 0) need = 0;
        unsigned long long ki = mix64(key ^ mix64((unsigned long long)i + 1));
        for (int j = 0; j < L; j++) row[j] = (unsigned char)(j <= i && j >= i - l);
        /* selection sampling (Knuth's Algorithm S): candidate j is taken with probability need / (c - j) */
        for (int j = 0; j < c && need > 0; j++) {
            double u = (double)(mix64(ki ^ mix64(0x5851f42d4c957f2dULL + (unsigned long long)j)) >> 11) * 0x1.0p-53;
            if (u * (c - j) < need) {
                row[j] = 1;
                need--;
            }
        }
    }
    return mask_count(M, L);
}

unsigned long long epar_mech_random_key(gsl_rng *r)
{
    unsigned long long hi = gsl_rng_get(r) & 0xffffffffULL, lo = gsl_rng_get(r) & 0xffffffffULL;
    return hi << 32 | lo;
}

long epar_mech_mask_sparse_fixed(int L, int l, int c, unsigned char *M)
{
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++)
            M[(size_t)i * L + j] = (unsigned char)(j <= i && (j / l == i / l || j % l >= l - c));
    return mask_count(M, L);
}

long epar_mech_mask_window(int L, int w, unsigned char *M)
{
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++) M[(size_t)i * L + j] = (unsigned char)(abs(i - j) <= w);
    return mask_count(M, L);
}

long epar_mech_mask_block(int L, int b, int nb, int causal, unsigned char *M)
{
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++)
            M[(size_t)i * L + j] = (unsigned char)(abs(i / b - j / b) <= nb && (!causal || j <= i));
    return mask_count(M, L);
}

long epar_mech_mask_global_local(int L, int w, int n_global, unsigned char *M)
{
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++)
            M[(size_t)i * L + j] = (unsigned char)(abs(i - j) <= w || j < n_global || i < n_global);
    return mask_count(M, L);
}

long epar_mech_mask_pi_local(int L, int r, int ring, unsigned char *M)
{
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++) {
            int d = abs(i - j);
            if (ring && L - d < d) d = L - d;
            M[(size_t)i * L + j] = (unsigned char)(d <= r);
        }
    return mask_count(M, L);
}

long epar_mech_mask_pi_step(int L, int pi, unsigned char *M)
{
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++) M[(size_t)i * L + j] = (unsigned char)((i - j) % pi == 0); /* sign-safe */
    return mask_count(M, L);
}

long epar_mech_pi_union_pairs(int L, int pi, int r, int ring)
{
    long n = 0;
    for (int i = 0; i < L; i++) {
        n += (L - 1 - i % pi) / pi + 1; /* j = i mod pi, 0 <= j < L: the step part */
        /* band keys not already on the step: distinct j within (ring) distance r */
        int lo = i - r, hi = i + r;
        if (!ring || 2 * r + 1 >= L) {
            if (ring) { lo = 0; hi = L - 1; } /* the band covers the whole ring */
            if (lo < 0) lo = 0;
            if (hi > L - 1) hi = L - 1;
            for (int j = lo; j <= hi; j++) n += (i - j) % pi != 0;
        } else {
            for (int k = -r; k <= r; k++) {
                int j = ((i + k) % L + L) % L;
                n += (i - j) % pi != 0;
            }
        }
    }
    return n;
}

int epar_mech_gqa_group(int h, int H, int G) { return h / (H / G); }

double epar_mech_elu1(double x) { return x > 0 ? x + 1.0 : exp(x); }

void epar_mech_performer_blocks(int m, int d, int *full, int *rest)
{
    *full = m / d;
    *rest = m % d;
}

int epar_mech_performer_omega(gsl_rng *r, int m, int d, int orthogonal, int scaling, double *Omega)
{
    if (!orthogonal) {
        epar_rng_normal(r, Omega, (size_t)m * d, 1.0);
    } else {
        int full, rest;
        epar_mech_performer_blocks(m, d, &full, &rest);
        double *W = epar_err_alloc((size_t)d * d, sizeof *W, "performer block");
        if (!W) return EPAR_ENOMEM;
        for (int b = 0; b < full + (rest > 0); b++) {
            /* W (d,d) orthonormal columns = Q of a Gaussian's QR; rows of Q^T are orthonormal */
            int st = epar_rng_orthogonal(r, W, d, d);
            if (st) { free(W); return st; }
            int rows = b < full ? d : rest;
            for (int q = 0; q < rows; q++)
                for (int t = 0; t < d; t++) Omega[((size_t)b * d + q) * d + t] = W[(size_t)t * d + q];
        }
        free(W);
        for (int q = 0; q < m; q++) {
            double norm;
            if (scaling) norm = sqrt((double)d);
            else norm = sqrt(gsl_ran_chisq(r, (double)d)); /* chi_d: each row marginally N(0, I) */
            for (int t = 0; t < d; t++) Omega[(size_t)q * d + t] *= norm;
        }
    }
    return EPAR_OK;
}

void epar_mech_performer_features(const double *Omega, int m, int d, const double *x, int n, int is_query,
                                  double eps, double *phi)
{
    double s = pow((double)d, -0.25), inv_sqrt_m = 1.0 / sqrt((double)m);
    double cg = -INFINITY;
    /* phi <- w_r . x' ; then the stabiliser and the exponent */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, m, d, s, x, d, Omega, d, 0.0, phi, m);
    if (!is_query)
        for (size_t t = 0; t < (size_t)n * m; t++)
            if (phi[t] > cg) cg = phi[t];
    for (int i = 0; i < n; i++) {
        double *f = phi + (size_t)i * m;
        double nx = 0.0;
        for (int t = 0; t < d; t++) nx += x[(size_t)i * d + t] * x[(size_t)i * d + t];
        nx *= s * s * 0.5;
        double c = cg;
        if (is_query) {
            c = -INFINITY;
            for (int q = 0; q < m; q++) if (f[q] > c) c = f[q];
        }
        for (int q = 0; q < m; q++) f[q] = inv_sqrt_m * (exp(f[q] - nx - c) + eps);
    }
}

int epar_mech_kernel_attention(const double *phiq, const double *phik, int L, int nf, int causal, double eps,
                               double *A)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, nf, 1.0, phiq, nf, phik, nf, 0.0, A, L);
    int empty = 0;
    for (int i = 0; i < L; i++) {
        double *a = A + (size_t)i * L, den = 0.0;
        int jmax = causal ? i + 1 : L;
        for (int j = 0; j < jmax; j++) den += a[j];
        for (int j = jmax; j < L; j++) a[j] = 0.0;
        if (!(fabs(den) > eps)) {
            memset(a, 0, (size_t)L * sizeof *a);
            a[i] = 1.0;
            empty++;
            continue;
        }
        for (int j = 0; j < jmax; j++) a[j] /= den;
    }
    return empty;
}

void epar_mech_kernel_output(const double *phiq, const double *phik, const double *V, int L, int nf, int dv,
                             int causal, double eps, double *O, double *work)
{
    double *S = work, *z = work + (size_t)nf * dv; /* S (nf,dv), z (nf) */
    memset(work, 0, (size_t)nf * (dv + 1) * sizeof *work);
    if (!causal) {
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nf, dv, L, 1.0, phik, nf, V, dv, 0.0, S, dv);
        for (int j = 0; j < L; j++) cblas_daxpy(nf, 1.0, phik + (size_t)j * nf, 1, z, 1);
    }
    for (int i = 0; i < L; i++) {
        if (causal) { /* prefix sums */
            cblas_dger(CblasRowMajor, nf, dv, 1.0, phik + (size_t)i * nf, 1, V + (size_t)i * dv, 1, S, dv);
            cblas_daxpy(nf, 1.0, phik + (size_t)i * nf, 1, z, 1);
        }
        double den = cblas_ddot(nf, phiq + (size_t)i * nf, 1, z, 1);
        double *o = O + (size_t)i * dv;
        if (!(fabs(den) > eps)) {
            memcpy(o, V + (size_t)i * dv, (size_t)dv * sizeof *o);
            continue;
        }
        cblas_dgemv(CblasRowMajor, CblasTrans, nf, dv, 1.0 / den, S, dv, phiq + (size_t)i * nf, 1, 0.0, o, 1);
    }
}

void epar_mech_masked_output_dense(const double *Q, const double *K, const double *V, const unsigned char *M,
                                   int L, int d, double scale, double *O, double *S)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, d, scale, Q, d, K, d, 0.0, S, L);
    for (int i = 0; i < L; i++) {
        double *z = S + (size_t)i * L, mx = -INFINITY, sum = 0.0;
        const unsigned char *mk = M + (size_t)i * L;
        for (int j = 0; j < L; j++) if (mk[j] && z[j] > mx) mx = z[j];
        for (int j = 0; j < L; j++) {
            z[j] = mk[j] ? exp(z[j] - mx) : 0.0;
            sum += z[j];
        }
        if (sum > 0) for (int j = 0; j < L; j++) z[j] /= sum;
        else z[i] = 1.0;
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, d, L, 1.0, S, L, V, d, 0.0, O, d);
}

void epar_mech_boost(const double *a, int n, int j, double b, double *out)
{
    double den = 1.0 + a[j] * (b - 1.0);
    for (int t = 0; t < n; t++) out[t] = (t == j ? a[t] * b : a[t]) / den;
}

/* ================================================================== hooks (one per kind) */

static void hook_input(void *ctx, double *x, int L, int D)
{
    struct epar_mech *m = ctx;
    m->xref = x;
    if (!m->pe) return;
    size_t n = (size_t)L * D;
    if (m->pe_mul) for (size_t t = 0; t < n; t++) x[t] *= m->pe[t];
    else for (size_t t = 0; t < n; t++) x[t] += m->pe[t];
}

static void rope_apply(const struct epar_mech *m, double *X, int L, int dk, int ld)
{
    int h2 = dk / 2;
    for (int i = 0; i < L; i++) {
        double *v = X + (size_t)i * ld;
        const double *c = m->rcos + (size_t)i * h2, *s = m->rsin + (size_t)i * h2;
        for (int t = 0; t < h2; t++) {
            int ia = m->rope_half ? t : 2 * t, ib = m->rope_half ? t + h2 : 2 * t + 1;
            double a = v[ia], b = v[ib];
            v[ia] = a * c[t] - b * s[t];
            v[ib] = a * s[t] + b * c[t];
        }
    }
}

static void hook_qk(void *ctx, int h, double *Q, double *K, int L, int dk, int ld)
{
    struct epar_mech *m = ctx;
    if (m->Wq) { /* orthogonal-qk: q = x W_Q^h, k = x W_K^h with frozen Haar W (no bias) */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, dk, m->D, 1.0, m->xref, m->D,
                    m->Wq + (size_t)h * m->D * dk, dk, 0.0, Q, ld);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, dk, m->D, 1.0, m->xref, m->D,
                    m->Wk + (size_t)h * m->D * dk, dk, 0.0, K, ld);
    }
    if (m->groups) {
        /* GQA: one K head per group of g = H/G query heads. pool = mean (default): the mean of the group's K
         * slices, the GQA paper's conversion of a multi-head checkpoint (Ainslie et al. 2023, §2.1); pool = first:
         * the slice of the group's first query head. Heads come in order h = 0..H-1 (lib/attn), so the group's
         * first head computes the pooled K from untouched slices into tab (L, dk) and every head copies it. */
        int g = m->H / m->groups, lead = epar_mech_gqa_group(h, m->H, m->groups) * g;
        const double *src = K - (size_t)(h - lead) * dk; /* the first slice of the group */
        if (m->p[1] == 0) { /* mean */
            if (h == lead)
                for (int i = 0; i < L; i++)
                    for (int t = 0; t < dk; t++) {
                        double s = 0.0;
                        for (int u = 0; u < g; u++) s += src[(size_t)i * ld + (size_t)u * dk + t];
                        m->tab[(size_t)i * dk + t] = s / g;
                    }
            for (int i = 0; i < L; i++) memcpy(K + (size_t)i * ld, m->tab + (size_t)i * dk, (size_t)dk * sizeof *K);
        } else if (lead != h) {
            for (int i = 0; i < L; i++) memcpy(K + (size_t)i * ld, src + (size_t)i * ld, (size_t)dk * sizeof *K);
        }
    }
    if (m->rcos) {
        rope_apply(m, Q, L, dk, ld);
        rope_apply(m, K, L, dk, ld);
    }
    const struct epar_mech_def *d = epar_mech_file(m->id);
    if (d && d->qk) d->qk(m, h, Q, K, L, dk, ld);
}

/* ================================================================== build functions (one per mechanism) */

static int alloc_d(double **p, size_t n, const char *what)
{
    *p = epar_err_alloc(n, sizeof **p, what);
    return *p ? EPAR_OK : EPAR_ENOMEM;
}

static int build_none(struct epar_mech *m, gsl_rng *r) { (void)m; (void)r; return EPAR_OK; }

static int build_epar(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    struct epar_posfx fx = {m->id == EPAR_MECH_EPAR_BASIC ? EPAR_FORM_BASIC : EPAR_FORM_ENHANCED, m->p[0], m->p[1],
                            m->id == EPAR_MECH_EPAR_BASIC ? 0.0 : m->p[2]};
    int st = epar_posfx_validate(&fx);
    if (st) return st;
    if ((st = alloc_d(&m->factor, (size_t)m->L * m->L, "EPAR factor"))) return st;
    epar_posfx_matrix(&fx, m->L, m->factor);
    int prefix = (int)m->p[m->id == EPAR_MECH_EPAR_BASIC ? 2 : 3];
    if (prefix && m->causal) /* L_mode=prefix: the sequence so far, i+1 keys, normalises the distance (§3) */
        for (int i = 0; i < m->L; i++)
            for (int j = 0; j < m->L; j++) m->factor[(size_t)i * m->L + j] = epar_posfx_value(&fx, abs(i - j), i + 1.0);
    return EPAR_OK;
}

static int build_sinusoidal(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    int st = alloc_d(&m->pe, (size_t)m->L * m->D, "sinusoidal PE");
    if (st) return st;
    for (int k = 0; k < m->L; k++) epar_mech_sinusoid(k, m->D, m->p[0], 0, m->pe + (size_t)k * m->D);
    return EPAR_OK;
}

static int build_learned(struct epar_mech *m, gsl_rng *r)
{
    int Lmax = (int)m->p[0];
    if (m->L > Lmax) {
        epar_err_set(EPAR_EINVAL, "learned-ape table has %d positions, sequence length '%d' exceeds it", Lmax, m->L);
        epar_err_hint("raise learned-ape.max_length (silent wrap-around is not allowed, docs/MECHANISMS.md §6)");
        return EPAR_EINVAL;
    }
    int st = alloc_d(&m->pe, (size_t)m->L * m->D, "learned PE");
    if (st) return st;
    /* the table has Lmax rows; the first L are drawn in order, so a longer table keeps them */
    epar_rng_normal(r, m->pe, (size_t)m->L * m->D, m->p[1]);
    return EPAR_OK;
}

void epar_mech_ape_hier_coef(int p, int n, double alpha, int idx[3], double w[3])
{
    if (p < n) {
        idx[0] = idx[1] = idx[2] = p;
        w[0] = 1;
        w[1] = w[2] = 0;
        return;
    }
    idx[0] = p / n;
    idx[1] = p % n;
    idx[2] = 0;
    w[0] = alpha / (1 - alpha);
    w[1] = 1;
    w[2] = -alpha / (1 - alpha);
}

void epar_mech_ape_rand_row(unsigned long seed, int p, int C, double sd, double *row)
{
    gsl_rng *r = epar_rng_alloc(seed, EPAR_MECH_APE_RAND_RUN + (unsigned long)p, EPAR_RNG_WEIGHTS);
    if (!r) {
        for (int c = 0; c < C; c++) row[c] = NAN;
        return;
    }
    epar_rng_normal(r, row, (size_t)C, sd);
    epar_rng_free(r);
}

/* learned-ape-rand / -hier (§6): a synthetic trained table of min(L, train_length) rows N(0, 0.02^2), the rows past it
 * random (rand, seed 0) or the hierarchical decomposition of the table (hier) */
static int build_ape_ext(struct epar_mech *m, gsl_rng *r)
{
    int n = (int)m->p[0] < m->L ? (int)m->p[0] : m->L, D = m->D;
    if (m->id == EPAR_MECH_APE_HIER && (long)n * n < m->L)
        return epar_err_set(EPAR_EINVAL, "learned-ape-hier covers train_length^2 = %ld positions, sequence length '%d' exceeds it",
                            (long)n * n, m->L);
    int st = alloc_d(&m->pe, (size_t)m->L * D, "learned PE");
    if (st) return st;
    epar_rng_normal(r, m->pe, (size_t)n * D, 0.02);
    for (int p = n; p < m->L; p++) {
        double *row = m->pe + (size_t)p * D;
        if (m->id == EPAR_MECH_APE_RAND) {
            epar_mech_ape_rand_row(0, p, D, 0.02, row);
            continue;
        }
        int idx[3];
        double w[3];
        epar_mech_ape_hier_coef(p, n, m->p[1], idx, w);
        for (int c = 0; c < D; c++)
            row[c] = w[0] * m->pe[(size_t)idx[0] * D + c] + w[1] * m->pe[(size_t)idx[1] * D + c] + w[2] * m->pe[(size_t)idx[2] * D + c];
    }
    return EPAR_OK;
}

static int build_floater(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    int st = alloc_d(&m->pe, (size_t)m->L * m->D, "FLOATER PE");
    if (st) return st;
    epar_mech_floater(m->L, m->D, m->p[0], m->pe);
    return EPAR_OK;
}

static int build_mult_pe(struct epar_mech *m, gsl_rng *r)
{
    int st = alloc_d(&m->pe, (size_t)m->L * m->D, "multiplicative PE");
    if (st) return st;
    m->pe_mul = 1;
    int variant = (int)m->p[0];
    size_t n = (size_t)m->L * m->D;
    if (variant == 0) {
        epar_rng_normal(r, m->pe, n, m->p[1]);
        for (size_t t = 0; t < n; t++) m->pe[t] += 1.0;
    } else {
        for (int k = 0; k < m->L; k++) epar_mech_sinusoid(k, m->D, 10000.0, 0, m->pe + (size_t)k * m->D);
        if (variant == 2) for (size_t t = 0; t < n; t++) m->pe[t] += 1.0;
    }
    return EPAR_OK;
}

static int need_bias(struct epar_mech *m) { return alloc_d(&m->bias, (size_t)m->H * m->L * m->L, "bias"); }

static void t5_fill(struct epar_mech *m, const double *B, int nb, int maxd, double *bias, int add)
{
    int L = m->L, H = m->H;
    for (int h = 0; h < H; h++)
        for (int i = 0; i < L; i++)
            for (int j = 0; j < L; j++) {
                double v = B[(size_t)epar_mech_t5_bucket(j - i, !m->causal, nb, maxd) * H + h];
                double *o = bias + ((size_t)h * L + i) * L + j;
                *o = add ? *o + v : v;
            }
}

static int build_t5(struct epar_mech *m, gsl_rng *r)
{
    int nb = (int)m->p[0], maxd = (int)m->p[1], st;
    if (!m->causal && nb % 2) {
        epar_err_set(EPAR_EINVAL, "t5.num_buckets must be even when bidirectional, got '%d'", nb);
        return EPAR_EINVAL;
    }
    if ((st = need_bias(m)) || (st = alloc_d(&m->tab, (size_t)nb * m->H, "T5 table"))) return st;
    epar_rng_normal(r, m->tab, (size_t)nb * m->H, m->p[2]);   /* B (num_buckets, H) */
    t5_fill(m, m->tab, nb, maxd, m->bias, 0);
    return EPAR_OK;
}

static int build_tupe(struct epar_mech *m, gsl_rng *r)
{
    int L = m->L, D = m->D, dk = m->dk, H = m->H, st;
    double *P = NULL, *U = NULL, *PU = NULL;
    if ((st = need_bias(m)) || (st = alloc_d(&m->factor, (size_t)L * L, "TUPE factor")) ||
        (st = alloc_d(&P, (size_t)L * D, "TUPE p")) || (st = alloc_d(&U, (size_t)2 * D * D, "TUPE U")) ||
        (st = alloc_d(&PU, (size_t)2 * L * D, "TUPE pU"))) {
        free(P); free(U);
        return st;
    }
    for (int k = 0; k < L; k++) epar_mech_sinusoid(k, D, 10000.0, 0, P + (size_t)k * D);
    epar_rng_linear_init(r, U, NULL, D, D);
    epar_rng_linear_init(r, U + (size_t)D * D, NULL, D, D);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, D, D, 1.0, P, D, U, D, 0.0, PU, D);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, D, D, 1.0, P, D, U + (size_t)D * D, D, 0.0,
                PU + (size_t)L * D, D);
    double s2 = 1.0 / sqrt(2.0 * dk), theta[2];
    for (int h = 0; h < H; h++) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, dk, s2, PU + h * dk, D, PU + (size_t)L * D + h * dk,
                    D, 0.0, m->bias + (size_t)h * L * L, L);
        epar_rng_normal(r, theta, 2, m->p[2]);
        if ((int)m->p[0]) { /* [CLS] untie: row 0 -> theta1, column 0 (i != 0) -> theta2 */
            double *B = m->bias + (size_t)h * L * L;
            for (int j = 0; j < L; j++) B[j] = theta[0];
            for (int i = 1; i < L; i++) B[(size_t)i * L] = theta[1];
        }
    }
    free(P); free(U); free(PU);
    if ((int)m->p[1]) { /* TUPE-R: + T5 bias, 32 buckets, max_distance 128 */
        if ((st = alloc_d(&m->tab, (size_t)32 * H, "TUPE-R table"))) return st;
        epar_rng_normal(r, m->tab, (size_t)32 * H, m->p[2]);
        t5_fill(m, m->tab, 32, 128, m->bias, 1);
    }
    for (size_t t = 0; t < (size_t)L * L; t++) m->factor[t] = 1.0 / sqrt(2.0); /* content / sqrt(2 dk) */
    return EPAR_OK;
}

/* RoPE family: angle table pos(k) * theta_t with theta_t = base^(-2t/dk) */
static int rope_tables(struct epar_mech *m, double base, double pos_scale)
{
    if (m->dk % 2) {
        epar_err_set(EPAR_EINVAL, "%s needs an even head dimension, got '%d'", m->info->id, m->dk);
        epar_err_hint("choose --hidden and --heads so that hidden/heads is even");
        return EPAR_EINVAL;
    }
    int h2 = m->dk / 2, st;
    if ((st = alloc_d(&m->rcos, (size_t)m->L * h2, "RoPE cos")) || (st = alloc_d(&m->rsin, (size_t)m->L * h2, "RoPE sin")))
        return st;
    for (int k = 0; k < m->L; k++)
        for (int t = 0; t < h2; t++) {
            double a = k * pos_scale * pow(base, -2.0 * t / m->dk); /* i*theta in double, never accumulated */
            m->rcos[(size_t)k * h2 + t] = cos(a);
            m->rsin[(size_t)k * h2 + t] = sin(a);
        }
    return EPAR_OK;
}

static int build_rope(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    m->rope_half = (int)m->p[1];
    return rope_tables(m, m->p[0], 1.0);
}

static int build_ntk(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    double s = m->L / m->p[1];
    if (s < 1) s = 1;
    if (m->dk < 4) return epar_err_set(EPAR_EINVAL, "ntk-rope needs a head dimension >= 4, got '%d'", m->dk);
    return rope_tables(m, s > 1 ? epar_mech_ntk_base(m->p[0], s, m->dk) : m->p[0], 1.0);
}

static int build_interp(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    double f = m->L > m->p[1] ? m->p[1] / m->L : 1.0;  /* pi(k) = k L_train / L when L > L_train */
    return rope_tables(m, m->p[0], f);
}

static int build_logn(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    return epar_mech_stack_logn(m, m->p[0], (int)m->p[1]);
}

static int build_alibi(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    int st = need_bias(m), L = m->L;
    if (st) return st;
    double *sl = epar_err_alloc((size_t)m->H, sizeof *sl, "ALiBi slopes");
    if (!sl) return EPAR_ENOMEM;
    epar_mech_alibi_slopes(m->H, m->p[0], sl);
    /* causal: -m (i-j) for j <= i; bidirectional: the symmetric variant -m |i-j|; not scaled by sqrt(dk) */
    for (int h = 0; h < m->H; h++)
        for (int i = 0; i < L; i++)
            for (int j = 0; j < L; j++) m->bias[((size_t)h * L + i) * L + j] = -sl[h] * abs(i - j);
    free(sl);
    return EPAR_OK;
}

/* the Raganato pattern of a fixed row: current, previous, next, left, right, start (pattern 7), end (pattern 6) */
static int fixed_pattern_of(enum epar_mech_id id)
{
    static const int pattern_of[] = {1, 2, 3, 4, 5, 7, 6};
    return pattern_of[id - EPAR_MECH_FIXED_CURRENT];
}

static int pattern_looks_ahead(int pattern) { return pattern == 3 || pattern == 5 || pattern == 6 || pattern == 7; }

int epar_mech_looks_ahead(enum epar_mech_id id)
{
    return epar_mech_row(id)->kind == EPAR_MK_FIXED && pattern_looks_ahead(fixed_pattern_of(id));
}

int epar_mech_trained_only(enum epar_mech_id id)
{
    return id == EPAR_MECH_FIXED_MIX || id == EPAR_MECH_LEARNABLE_ONLY || id == EPAR_MECH_FIXED_ONLY;
}

static int build_trained_only(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    epar_err_set(EPAR_EINVAL, "mechanism '%s' exists only as a trained model", m->info->id);
    epar_err_hint("train it with 'epar train --mechanism %s' (compare has no per-head form of it)", m->info->id);
    return EPAR_EINVAL;
}

static int build_fixed(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    int pattern = fixed_pattern_of(m->id);
    if (m->causal && pattern_looks_ahead(pattern)) {
        epar_err_set(EPAR_EINVAL, "mechanism '%s' looks ahead and is refused under --causal", m->info->id);
        epar_err_hint("drop it from --mechanisms, or run without --causal");
        return EPAR_EINVAL;
    }
    int st = alloc_d(&m->fixed, (size_t)m->L * m->L, "fixed pattern");
    if (st) return st;
    m->fixed_fallback = epar_mech_fixed_pattern(pattern, m->L, m->fixed);
    return EPAR_OK;
}

int epar_mech_kernel_pieces(struct epar_mech *m, int nf)
{
    int st;
    m->nfeat = nf;
    if ((st = alloc_d(&m->phiq, (size_t)m->L * nf, "kernel features")) ||
        (st = alloc_d(&m->phik, (size_t)m->L * nf, "kernel features")) ||
        (st = alloc_d(&m->work, (size_t)m->L * m->dk * 2, "kernel scratch")))
        return st;
    return EPAR_OK;
}

/* linear-cos (cosFormer): [relu(x) cos, relu(x) sin], 2 dk features (linear-elu and performer: lib/mechs/kernel.c) */
static int build_kernel(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    return epar_mech_kernel_pieces(m, 2 * m->dk);
}

static unsigned char *alloc_mask(struct epar_mech *m)
{
    return m->mask = epar_err_alloc((size_t)m->L * m->L, 1, "mask");
}

int epar_mech_auto_stride(double v, int L)
{
    int l = v > 0 ? (int)v : (int)lround(sqrt((double)L));
    return l < 1 ? 1 : l;
}

static int auto_stride(const struct epar_mech *m, double v) { return epar_mech_auto_stride(v, m->L); }

int epar_mech_stride(const struct epar_mech *m) { return auto_stride(m, m->p[0]); }

static int build_strided(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    if (!alloc_mask(m)) return EPAR_ENOMEM;
    epar_mech_mask_strided(m->L, auto_stride(m, m->p[0]), (int)m->p[1], m->mask);
    return EPAR_OK;
}

static int build_random(struct epar_mech *m, gsl_rng *r)
{
    if (!alloc_mask(m)) return EPAR_ENOMEM;
    epar_mech_mask_random(m->L, auto_stride(m, m->p[0]), (int)m->p[1], epar_mech_random_key(r), m->mask);
    return EPAR_OK;
}

static int build_sparse_fixed(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    int l = auto_stride(m, m->p[0]), c = (int)m->p[1];
    if (c > l) return epar_err_set(EPAR_EINVAL, "sparse-fixed.summary '%d' exceeds the stride %d", c, l);
    if (!alloc_mask(m)) return EPAR_ENOMEM;
    epar_mech_mask_sparse_fixed(m->L, l, c, m->mask);
    return EPAR_OK;
}

static int build_window(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    if (!alloc_mask(m)) return EPAR_ENOMEM;
    epar_mech_mask_window(m->L, (int)m->p[0], m->mask);
    return EPAR_OK;
}

static int build_block(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    if (!alloc_mask(m)) return EPAR_ENOMEM;
    epar_mech_mask_block(m->L, (int)m->p[0], (int)m->p[1], 0, m->mask);
    return EPAR_OK;
}

static int build_global_local(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    if (!alloc_mask(m)) return EPAR_ENOMEM;
    epar_mech_mask_global_local(m->L, (int)m->p[0], (int)m->p[1], m->mask);
    return EPAR_OK;
}

static int build_gqa(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    int G = (int)m->p[0];
    if (m->H % G) {
        epar_err_set(EPAR_EINVAL, "gqa.groups '%d' must divide the number of heads %d", G, m->H);
        epar_err_hint("set --set gqa.groups=N with N a divisor of --heads");
        return EPAR_EINVAL;
    }
    m->groups = G;
    return alloc_d(&m->tab, (size_t)m->L * (m->D / m->H), "GQA pooled keys");
}

/* Haar W (rows, cols), rows >= cols: the first cols columns of Q of the QR of a Gaussian, applied as Q e_j
 * (O(rows cols^2), instead of unpacking the full rows x rows Q), sign-fixed by sign(diag R) as
 * epar_rng_orthogonal. */
static int haar_thin(gsl_rng *r, double *W, int rows, int cols)
{
    gsl_matrix *G = gsl_matrix_alloc((size_t)rows, (size_t)cols);
    gsl_vector *tau = gsl_vector_alloc((size_t)cols), *e = gsl_vector_alloc((size_t)rows);
    int st = EPAR_OK;
    if (!G || !tau || !e) {
        st = epar_err_set(EPAR_ENOMEM, "out of memory in orthogonal init (%dx%d)", rows, cols);
        goto done;
    }
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) gsl_matrix_set(G, (size_t)i, (size_t)j, gsl_ran_gaussian_ziggurat(r, 1.0));
    if (gsl_linalg_QR_decomp(G, tau)) {
        st = epar_err_set(EPAR_EINVAL, "QR decomposition failed in orthogonal init");
        goto done;
    }
    for (int j = 0; j < cols; j++) {
        gsl_vector_set_basis(e, (size_t)j);
        if (gsl_linalg_QR_Qvec(G, tau, e)) {
            st = epar_err_set(EPAR_EINVAL, "QR decomposition failed in orthogonal init");
            goto done;
        }
        double sg = gsl_matrix_get(G, (size_t)j, (size_t)j) < 0 ? -1.0 : 1.0; /* diag of R */
        for (int i = 0; i < rows; i++) W[(size_t)i * cols + j] = sg * gsl_vector_get(e, (size_t)i);
    }
done:
    gsl_matrix_free(G); gsl_vector_free(tau); gsl_vector_free(e);
    return st;
}

int epar_mech_orthogonal_qk_draw(gsl_rng *r, int D, int dk, int H, int jl, double *Wq, double *Wk)
{
    int st;
    double s = jl ? sqrt((double)D / dk) : 1.0;
    for (int h = 0; h < H; h++) {
        if ((st = haar_thin(r, Wq + (size_t)h * D * dk, D, dk))) return st;
        if ((st = haar_thin(r, Wk + (size_t)h * D * dk, D, dk))) return st;
    }
    for (size_t t = 0; t < (size_t)H * D * dk; t++) { Wq[t] *= s; Wk[t] *= s; }
    return EPAR_OK;
}

static int build_orthogonal(struct epar_mech *m, gsl_rng *r)
{
    int D = m->D, dk = m->dk, st;
    if ((st = alloc_d(&m->Wq, (size_t)m->H * D * dk, "orthogonal W_Q")) ||
        (st = alloc_d(&m->Wk, (size_t)m->H * D * dk, "orthogonal W_K")))
        return st;
    return epar_mech_orthogonal_qk_draw(r, D, dk, m->H, (int)m->p[0], m->Wq, m->Wk);
}

/* ================================================================== the table */

#define P_SD EPAR_MECH_PARAM_SD
#define P_BASE {"base", 10000, 1.0001, 1e12, 0, "rotation / sinusoid base"}
#define P_TRAIN {"train_length", 512, 2, 1 << 24, 0, "training length L_train"}
#define P_END EPAR_MECH_PARAM_END
#define P_PREFIX {"prefix", 0, 0, 1, 1, "1 (causal only): L = i+1 keys so far instead of the full length (L_mode=prefix)"}
#define FIXED_ROW(name, p, note) \
    {name, EPAR_MK_FIXED, "S1 §1.1", "§19", {P_END}, build_fixed, "Raganato pattern " p "; " note}

static const struct epar_mech_info mech_rows[EPAR_MECH_COUNT] = {
    [EPAR_MECH_NONE] = {"none", EPAR_MK_BASELINE, "S1 §2.1, S4 §3", "§2", {P_END}, build_none,
                        "standard scaled dot-product attention, softmax(q.k/sqrt(dk))"},
    [EPAR_MECH_EPAR_BASIC] = {"epar-basic", EPAR_MK_FACTOR, "S0", "§3",
        {{"alpha", 1, 1e-12, 1e6, 0, "global inverse temperature"}, {"beta", 1, 0, 1e6, 0, "decay rate"}, P_PREFIX, P_END},
        build_epar, "s_ij * alpha exp(-beta |i-j|/L); inverts locality for negative scores"},
    [EPAR_MECH_EPAR_ENHANCED] = {"epar-enhanced", EPAR_MK_FACTOR, "S0", "§4",
        {{"alpha", 1, 1e-12, 1e6, 0, "global inverse temperature"}, {"beta", 1, 0, 1e6, 0, "decay rate"},
         {"gamma", 0.5, 0, 1e6, 0, "enhancement"}, P_PREFIX, P_END},
        build_epar, "s_ij * alpha (1 + gamma exp(-beta |i-j|/L))/(1+gamma)"},
    [EPAR_MECH_SINUSOIDAL] = {"sinusoidal", EPAR_MK_INPUT, "S1 §1.2.2, S3 1.1(2)", "§5", {P_BASE, P_END},
        build_sinusoidal, "x + p, interleaved sin/cos"},
    [EPAR_MECH_LEARNED_APE] = {"learned-ape", EPAR_MK_INPUT, "S3 1.1(1)", "§6",
        {{"max_length", 512, 1, 1 << 24, 1, "table rows L_max (longer sequences are refused)"}, P_SD, P_END},
        build_learned, "x + P[k], synthetic table"},
    [EPAR_MECH_FLOATER] = {"floater", EPAR_MK_INPUT, "S3 1.1(3)", "§7", {P_BASE, P_END}, build_floater,
        "recursive rotation p_{k+1} = R p_k (equals the sinusoid); synthetic linear h"},
    [EPAR_MECH_MULT_PE] = {"multiplicative-pe", EPAR_MK_INPUT, "S3 1.1(4)", "§8",
        {{"variant", 0, 0, 2, 1, "0: 1 + N(0, init_sd^2), 1: sinusoid, 2: 1 + sinusoid"}, P_SD, P_END},
        build_mult_pe, "x * p (exploratory, unverified variant)"},
    [EPAR_MECH_T5] = {"t5", EPAR_MK_BIAS, "S3 1.2(3)", "§11",
        {{"num_buckets", 32, 2, 1024, 1, "buckets"}, {"max_distance", 128, 2, 1 << 24, 1, "log-bucket horizon"},
         P_SD, P_END},
        build_t5, "+ B_h[bucket(j-i)], bidirectional unless --causal; added to the scaled score"},
    [EPAR_MECH_TUPE] = {"tupe", EPAR_MK_BIAS, "S3 1.2(3)", "§13",
        {{"cls_untie", 0, 0, 1, 1, "1: token 0 is [CLS] (theta1 row, theta2 column)"},
         {"relative", 0, 0, 1, 1, "1: TUPE-R, adds the T5 bias (32 buckets, 128)"}, P_SD, P_END},
        build_tupe, "content / sqrt(2dk) + (p_i U_Q).(p_j U_K) / sqrt(2dk), untied positions"},
    [EPAR_MECH_ROPE] = {"rope", EPAR_MK_QK, "S0, S3 1.3(3)", "§14",
        {P_BASE, {"half", 0, 0, 1, 1, "1: pairs (t, t+dk/2) as GPT-NeoX; 0: interleaved"}, P_END}, build_rope,
        "rotate q_i by i theta_t and k_j by j theta_t"},
    [EPAR_MECH_NTK_ROPE] = {"ntk-rope", EPAR_MK_QK, "S3 1.3(4), §4.2(4)", "§15", {P_BASE, P_TRAIN, P_END},
        build_ntk, "RoPE with base * s^(dk/(dk-2)), s = L/L_train when L > L_train (identity otherwise)"},
    [EPAR_MECH_INTERPOLATION] = {"interpolation", EPAR_MK_QK, "S3 §4", "§16", {P_BASE, P_TRAIN, P_END},
        build_interp, "RoPE at positions k L_train/L when L > L_train (position interpolation)"},
    [EPAR_MECH_LOGN] = {"log-n", EPAR_MK_FACTOR, "S3 §4.2(5)", "§17",
        {P_TRAIN, {"clamp", 1, 0, 1, 1, "1: kappa = max(1, log_{L_train} n)"}, P_END}, build_logn,
        "s_ij * log_{L_train}(n_i): multiplies (S3 says divide: errata)"},
    [EPAR_MECH_ALIBI] = {"alibi", EPAR_MK_BIAS, "S0, S3 §3", "§18",
        {{"max_bias", 8, 0, 64, 0, "slopes 2^(-max_bias (h+1)/n)"}, P_END}, build_alibi,
        "- m_h |i-j| added to the scaled score (symmetric variant when bidirectional)"},
    [EPAR_MECH_FIXED_CURRENT] = FIXED_ROW("fixed-current", "1", "xi_ij = [j = i]"),
    [EPAR_MECH_FIXED_PREVIOUS] = FIXED_ROW("fixed-previous", "2", "[j = i-1], row 0 falls back to self"),
    [EPAR_MECH_FIXED_NEXT] = FIXED_ROW("fixed-next", "3", "[j = i+1], looks ahead (refused under --causal)"),
    [EPAR_MECH_FIXED_LEFT] = FIXED_ROW("fixed-left", "4", "(j+1)^3 for j <= i-2, normalised"),
    [EPAR_MECH_FIXED_RIGHT] = FIXED_ROW("fixed-right", "5", "(L-j)^3 for j >= i+2, looks ahead"),
    [EPAR_MECH_FIXED_START] = FIXED_ROW("fixed-start", "7", "(L-j)^3 over every j, looks ahead"),
    [EPAR_MECH_FIXED_END] = FIXED_ROW("fixed-end", "6", "(j+1)^3 over every j, looks ahead"),
    [EPAR_MECH_LINEAR_COS] = {"linear-cos", EPAR_MK_KERNEL, "S1 §2.1.4", "§20",
        {{"eps", 1e-6, 0, 1, 0, "denominator guard (rows below it fall back to self)"}, P_END}, build_kernel,
        "cosFormer: relu(q).relu(k) cos(pi (i-j) / 2L) (not S1's phi = cos)"},
    [EPAR_MECH_STRIDED] = {"strided", EPAR_MK_MASK, "S1 §2.3.2", "§22",
        {{"stride", 0, 0, 1 << 20, 1, "l (0: round(sqrt(L)))"}, {"openai_local", 0, 0, 1, 1, "1: local band of l keys"},
         P_END},
        build_strided, "causal {i-l..i} U {(i-j) mod l = 0}, merged head"},
    [EPAR_MECH_SPARSE_FIXED] = {"sparse-fixed", EPAR_MK_MASK, "S1 §2.3.1", "§23",
        {{"stride", 0, 0, 1 << 20, 1, "l (0: round(sqrt(L)))"}, {"summary", 1, 1, 1 << 20, 1, "c summary keys per block"},
         P_END},
        build_sparse_fixed, "causal same block U last c of every block"},
    [EPAR_MECH_SLIDING_WINDOW] = {"sliding-window", EPAR_MK_MASK, "S1 §2.3.4, S4", "§24",
        {{"radius", 2, 0, 1 << 20, 1, "w: |i-j| <= w"}, P_END}, build_window, "local band of radius w"},
    [EPAR_MECH_BLOCK_SPARSE] = {"block-sparse", EPAR_MK_MASK, "S1 §2.3.4, S4", "§25",
        {{"block", 4, 1, 1 << 20, 1, "block size b"}, {"neighbours", 0, 0, 1 << 20, 1, "|B(i)-B(j)| <= nb"}, P_END},
        build_block, "block-diagonal layout (last block short, no padding)"},
    [EPAR_MECH_GLOBAL_LOCAL] = {"global-local", EPAR_MK_MASK, "S1 §2.3.4", "§26",
        {{"radius", 1, 0, 1 << 20, 1, "w"}, {"globals", 1, 0, 1 << 20, 1, "first tokens that are global"}, P_END},
        build_global_local, "band U G, global rows dense (Longformer-style)"},
    [EPAR_MECH_GQA] = {"gqa", EPAR_MK_HEADS, "S4", "§28", {{"groups", 2, 1, 4096, 1, "KV heads G (divides H)"},
                                                 {"pool", 0, 0, 1, 1, "KV head of a group: 0 mean of its K slices (GQA paper), 1 the first head's"}, P_END},
        build_gqa, "query head h uses KV head floor(h/(H/G)); K heads mean-pooled per group"},
    [EPAR_MECH_ORTHOGONAL_QK] = {"orthogonal-qk", EPAR_MK_QK, "S1 §4", "§29",
        {{"jl", 0, 0, 1, 1, "1: scale by sqrt(D/dk)"}, P_END}, build_orthogonal,
        "frozen Haar W_Q, W_K (independent), exploratory (the seed's hypothesis)"},
    [EPAR_MECH_RANDOM_SPARSE] = {"random-sparse", EPAR_MK_MASK, "S2 1.2, 4.1", "§22b",
        {{"window", 0, 0, 1 << 20, 1, "l: band {i-l..i} (0: round(sqrt(L)), strided's)"},
         {"keys", 0, 0, 1 << 20, 1, "random earlier keys per row (0: strided's count, floor(i/l) - 1)"}, P_END},
        build_random, "causal band U random earlier keys drawn once from the seed (as many as strided's)"},
    [EPAR_MECH_ALIBI_LEARNED] = {"alibi-learned", EPAR_MK_BIAS, "S3 §3", "§18",
        {{"max_bias", 8, 0, 64, 0, "initial slopes 2^(-max_bias (h+1)/n)"}, P_END}, build_alibi,
        "ALiBi with the per-head slopes m_h learned (trained from ALiBi's); untrained: alibi's bias"},
    [EPAR_MECH_APE_RAND] = {"learned-ape-rand", EPAR_MK_INPUT, "S3 1.1(1)", "§6", {P_TRAIN, P_END}, build_ape_ext,
        "learned-ape's table of train_length rows; rows past it random N(0, sd^2), fixed (S3 003:20)"},
    [EPAR_MECH_APE_HIER] = {"learned-ape-hier", EPAR_MK_INPUT, "S3 1.1(1)", "§6",
        {P_TRAIN, {"alpha", 0.4, 0, 0.99, 0, "hierarchical decomposition: p = i n + j -> alpha u_i + (1 - alpha) u_j"}, P_END},
        build_ape_ext, "learned-ape's table of train_length rows; past it Su's hierarchical decomposition of the table"},
    [EPAR_MECH_FIXED_MIX] = {"fixed-mix", EPAR_MK_HEADS, "S1 §1.3, §4.1", "§19", {P_END}, build_trained_only,
        "per layer heads 0..H-2 causal Raganato patterns (current, previous, left, first token, cycled), head H-1 "
        "learned softmax (S1's 7F+1L at 8 heads); trained only"},
    [EPAR_MECH_LEARNABLE_ONLY] = {"learnable-only", EPAR_MK_HEADS, "S1 §1.3", "§19", {P_END}, build_trained_only,
        "fixed-mix without its fixed heads: only head H-1 attends (S1's 1L ablation), the others output 0; trained only"},
    [EPAR_MECH_FIXED_ONLY] = {"fixed-only", EPAR_MK_HEADS, "S1 §1.3, §4.1", "§19", {P_END}, build_trained_only,
        "fixed-mix with its last head fixed too: every head a causal Raganato pattern, cycled (S1's all-fixed models, 001:462); "
        "trained only"},
    [EPAR_MECH_FLOATER_LEARNED] = {"floater-learned", EPAR_MK_INPUT, "S3 1.1(3)", "§7",
        {P_BASE, {"hidden", 16, 1, 4096, 1, "width H of the learned map h"},
         {"train_length", 512, 2, 1 << 24, 0, "time scale of h's input t / train_length"}, P_END}, build_floater,
        "FLOATER with learned dynamics p_{t+1} = R p_t + W2 tanh(W1 p_t + b1 + (t / train_length) w) + b2 (S3 003:45-49); "
        "untrained (W2 = b2 = 0): floater's table"},
};
static_assert(sizeof mech_rows / sizeof mech_rows[0] == EPAR_MECH_COUNT, "one row per mechanism");

/* the file mechanisms (lib/mechs/registry.h): their rows are theirs, mech_rows' are zero */
#define EPAR_MECH_FILE(ID, name) extern const struct epar_mech_def epar_mech_def_##name;
#define EPAR_MECH_FILE_AT(ID, name) EPAR_MECH_FILE(ID, name)
#include "mechs/registry.h"
#undef EPAR_MECH_FILE
#undef EPAR_MECH_FILE_AT
static const struct epar_mech_def *const mech_files[EPAR_MECH_COUNT] = {
#define EPAR_MECH_FILE(ID, name) [EPAR_MECH_##ID] = &epar_mech_def_##name,
#define EPAR_MECH_FILE_AT(ID, name) EPAR_MECH_FILE(ID, name)
#include "mechs/registry.h"
#undef EPAR_MECH_FILE
#undef EPAR_MECH_FILE_AT
};

const struct epar_mech_def *epar_mech_file(enum epar_mech_id id)
{
    return id >= 0 && id < EPAR_MECH_COUNT ? mech_files[id] : NULL;
}

const struct epar_mech_info *epar_mech_row(enum epar_mech_id id)
{
    const struct epar_mech_def *d = epar_mech_file(id);
    return d ? &d->info : &mech_rows[id];
}

static const char *const kind_names[EPAR_MK_COUNT] = {
    "baseline", "input PE", "q/k transform", "multiplicative factor", "additive bias", "mask", "fixed weights",
    "kernel feature map", "head sharing"};
static_assert(sizeof kind_names / sizeof kind_names[0] == EPAR_MK_COUNT, "one name per kind");

const char *epar_mech_kind_name(enum epar_mech_kind k) { return k < EPAR_MK_COUNT ? kind_names[k] : "?"; }

int epar_mech_family_of(const char *name)
{
    char id[64];
    size_t n = strcspn(name, "@+");
    snprintf(id, sizeof id, "%.*s", (int)(n < sizeof id ? n : sizeof id - 1), name);
    enum epar_mech_id m = EPAR_MECH_COUNT;
    for (int i = 0; i < EPAR_MECH_COUNT; i++)
        if (!strcmp(id, epar_mech_row(i)->id)) m = (enum epar_mech_id)i;
    if (m == EPAR_MECH_COUNT) return -1;
    if (m == EPAR_MECH_EPAR_BASIC || m == EPAR_MECH_EPAR_ENHANCED) return EPAR_MF_EPAR;
    if (m == EPAR_MECH_LOGN) return EPAR_MF_QK;
    switch (epar_mech_row(m)->kind) {
    case EPAR_MK_BASELINE: return EPAR_MF_NONE;
    case EPAR_MK_INPUT: return EPAR_MF_INPUT;
    case EPAR_MK_BIAS: return EPAR_MF_BIAS;
    case EPAR_MK_QK: return EPAR_MF_QK;
    case EPAR_MK_HEADS: return m == EPAR_MECH_GQA ? EPAR_MF_QK : EPAR_MF_SPARSE;
    case EPAR_MK_FACTOR: return EPAR_MF_EPAR;
    default: return EPAR_MF_SPARSE; /* mask, fixed, kernel */
    }
}

const char *epar_mech_family_name(int family)
{
    static const char *const names[EPAR_MF_COUNT] = {"no position information", "input position encodings",
                                                     "relative position biases", "q/k transforms and length scaling",
                                                     "sparse, fixed and linear attention", "EPAR"};
    return family >= 0 && family < EPAR_MF_COUNT ? names[family] : "?";
}

/* ================================================================== registry */

int epar_mech_find(const char *name, enum epar_mech_id *id)
{
    for (int i = 0; i < EPAR_MECH_COUNT; i++)
        if (!strcmp(name, epar_mech_row(i)->id)) {
            *id = (enum epar_mech_id)i;
            return EPAR_OK;
        }
    epar_err_set(EPAR_EINVAL, "unknown mechanism '%s'", name);
    struct epar_nearest near;
    epar_nearest_init(&near, name);
    for (int i = 0; i < EPAR_MECH_COUNT; i++) epar_nearest_add(&near, epar_mech_row(i)->id);
    if (near.best)
        epar_err_hint("did you mean %s? ('epar compare --list' lists the mechanisms)", epar_nearest_text(&near, ""));
    else epar_err_hint("see 'epar compare --list' for the mechanisms");
    return EPAR_EINVAL;
}

void epar_mech_defaults(enum epar_mech_id id, double *p)
{
    memset(p, 0, EPAR_MECH_MAX_PARAMS * sizeof *p);
    const struct epar_mech_param *q = epar_mech_row(id)->params;
    for (int k = 0; k < EPAR_MECH_MAX_PARAMS && q[k].name; k++) p[k] = q[k].def;
}

int epar_mech_param_index(enum epar_mech_id id, const char *name)
{
    const struct epar_mech_param *q = epar_mech_row(id)->params;
    for (int k = 0; k < EPAR_MECH_MAX_PARAMS && q[k].name; k++)
        if (!strcmp(q[k].name, name)) return k;
    return -1;
}

int epar_mech_set_param(enum epar_mech_id id, double *p, const char *name, double value)
{
    const struct epar_mech_info *in = epar_mech_row(id);
    int k = epar_mech_param_index(id, name);
    if (k < 0) {
        epar_err_set(EPAR_EINVAL, "unknown parameter '%s.%s'", in->id, name);
        char list[256] = "";
        for (int t = 0; t < EPAR_MECH_MAX_PARAMS && in->params[t].name; t++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "", in->params[t].name);
        }
        if (list[0]) epar_err_hint("parameters of %s: %s", in->id, list);
        else epar_err_hint("%s has no parameters", in->id);
        return EPAR_EINVAL;
    }
    const struct epar_mech_param *q = &in->params[k];
    if (!isfinite(value) || value < q->lo || value > q->hi || (q->integer && value != floor(value))) {
        epar_err_set(EPAR_EINVAL, "invalid value for %s.%s: '%g'", in->id, name, value);
        epar_err_hint("expected %s in [%g, %g]", q->integer ? "an integer" : "a number", q->lo, q->hi);
        return EPAR_EINVAL;
    }
    p[k] = value;
    return EPAR_OK;
}

void epar_mech_free(struct epar_mech *m)
{
    double **d[] = {&m->factor, &m->bias, &m->pe, &m->rcos, &m->rsin, &m->fixed, &m->tab, &m->tab2, &m->tab3,
                    &m->omega, &m->Wq, &m->Wk, &m->work, &m->S2, &m->phiq, &m->phik};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) { free(*d[i]); *d[i] = NULL; }
    free(m->mask);
    free(m->mask2);
    m->mask = m->mask2 = NULL;
}

int epar_mech_init(struct epar_mech *m, enum epar_mech_id id, const double *p, int L, int D, int H, int causal,
                   unsigned long seed)
{
    memset(m, 0, sizeof *m);
    if (id < 0 || id >= EPAR_MECH_COUNT) return epar_err_set(EPAR_EINVAL, "unknown mechanism '%d'", (int)id);
    m->id = id;
    m->info = epar_mech_row(id);
    if (p) memcpy(m->p, p, sizeof m->p);
    else epar_mech_defaults(id, m->p);
    m->L = L; m->D = D; m->H = H; m->causal = causal;
    if (L < 1 || D < 1 || H < 1 || D % H) return epar_err_set(EPAR_EINVAL, "invalid sizes L=%d D=%d H=%d", L, D, H);
    m->dk = D / H;
    m->cfg = (struct epar_attn_cfg){.L = L, .D = D, .heads = H, .scale = 1.0 / sqrt((double)m->dk), .inv_temp = 1.0,
                                    .causal = causal, .empty = EPAR_EMPTY_SELF};
    gsl_rng *r = epar_rng_alloc(seed, 1000UL + (unsigned long)id, EPAR_RNG_MECH);
    if (!r) return EPAR_ENOMEM;
    int st = m->info->build(m, r);
    epar_rng_free(r);
    if (st) { epar_mech_free(m); return st; }
    m->mods = (struct epar_attn_mods){.input = hook_input, .qk = hook_qk, .ctx = m, .factor = m->factor,
                                      .bias = m->bias, .bias_per_head = 1, .mask = m->mask};
    return EPAR_OK;
}

int epar_mech_stack_logn(struct epar_mech *m, double train_length, int clamp)
{
    int L = m->L;
    if (!m->factor) {
        if (alloc_d(&m->factor, (size_t)L * L, "log-n factor")) return EPAR_ENOMEM;
        for (size_t t = 0; t < (size_t)L * L; t++) m->factor[t] = 1.0;
    }
    for (int i = 0; i < L; i++) {
        double k = epar_mech_logn(m->causal ? i + 1.0 : (double)L, train_length, clamp);
        for (int j = 0; j < L; j++) m->factor[(size_t)i * L + j] *= k;
    }
    m->mods.factor = m->factor;
    m->logn_stacked = 1;
    return EPAR_OK;
}

/* ================================================================== forward per kind */

static int forward_kernel(struct epar_mech *m, const struct epar_attn_ws *ws, double *A)
{
    int L = m->L, D = m->D, dk = m->dk, nf = m->nfeat, empty = 0;
    for (int h = 0; h < m->H; h++) {
        const double *Q = ws->Q + h * dk, *K = ws->K + h * dk;
        double *q = m->work, *k = m->work + (size_t)L * dk; /* contiguous copies (L,dk) */
        for (int i = 0; i < L; i++) {
            memcpy(q + (size_t)i * dk, Q + (size_t)i * D, (size_t)dk * sizeof *q);
            memcpy(k + (size_t)i * dk, K + (size_t)i * D, (size_t)dk * sizeof *k);
        }
        if (m->id == EPAR_MECH_PERFORMER) {
            epar_mech_performer_features(m->omega, nf, dk, q, L, 1, m->p[3], m->phiq);
            epar_mech_performer_features(m->omega, nf, dk, k, L, 0, m->p[3], m->phik);
        } else if (m->id == EPAR_MECH_LINEAR_ELU) {
            for (size_t t = 0; t < (size_t)L * dk; t++) {
                m->phiq[t] = epar_mech_elu1(q[t]);
                m->phik[t] = epar_mech_elu1(k[t]);
            }
        } else { /* cosFormer: [relu(x) cos(pi k / 2M), relu(x) sin(pi k / 2M)], M = L */
            for (int i = 0; i < L; i++) {
                double c = cos(M_PI * i / (2.0 * L)), s = sin(M_PI * i / (2.0 * L));
                for (int t = 0; t < dk; t++) {
                    double a = q[(size_t)i * dk + t] > 0 ? q[(size_t)i * dk + t] : 0.0;
                    double b = k[(size_t)i * dk + t] > 0 ? k[(size_t)i * dk + t] : 0.0;
                    m->phiq[(size_t)i * nf + t] = a * c; m->phiq[(size_t)i * nf + dk + t] = a * s;
                    m->phik[(size_t)i * nf + t] = b * c; m->phik[(size_t)i * nf + dk + t] = b * s;
                }
            }
        }
        double eps = m->id == EPAR_MECH_PERFORMER ? 1e-6 : m->p[0];
        empty += epar_mech_kernel_attention(m->phiq, m->phik, L, nf, m->causal, eps, A + (size_t)h * L * L);
    }
    return empty;
}

static int forward_pi(struct epar_mech *m, const struct epar_attn_ws *ws, double *A)
{
    int L = m->L, dk = m->dk, empty = 0;
    size_t LL = (size_t)L * L;
    struct epar_attn_mods loc = {.mask = m->mask}, step = {.mask = m->mask2};
    for (int h = 0; h < m->H; h++) {
        double *Ah = A + (size_t)h * LL;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, dk, m->cfg.scale, ws->Q + h * dk, m->D,
                    ws->K + h * dk, m->D, 0.0, Ah, L);
        memcpy(m->S2, Ah, LL * sizeof *Ah);
        int e1 = epar_attn_softmax_rows(&m->cfg, &loc, h, Ah);
        int e2 = epar_attn_softmax_rows(&m->cfg, &step, h, m->S2);
        empty += e1 > e2 ? e1 : e2;
        for (size_t t = 0; t < LL; t++) Ah[t] = m->gate * Ah[t] + (1.0 - m->gate) * m->S2[t];
    }
    return empty;
}

int epar_mech_forward(struct epar_mech *m, const struct epar_layer *layer, const double *X, double *A,
                      struct epar_attn_ws *ws, int *n_empty)
{
    int empty = 0, L = m->L;
    size_t LL = (size_t)L * L;
    switch (m->info->kind) {
    case EPAR_MK_FIXED:
        for (int h = 0; h < m->H; h++) memcpy(A + (size_t)h * LL, m->fixed, LL * sizeof *A);
        empty = m->fixed_fallback * m->H;
        break;
    case EPAR_MK_KERNEL:
        epar_attn_project(&m->cfg, layer, &m->mods, X, ws);
        empty = forward_kernel(m, ws, A);
        break;
    default:
        if (m->mask2) {
            epar_attn_project(&m->cfg, layer, &m->mods, X, ws);
            empty = forward_pi(m, ws, A);
        } else {
            epar_attn_forward(&m->cfg, layer, &m->mods, X, A, ws, &empty);
        }
    }
    if (n_empty) *n_empty = empty;
    return EPAR_OK;
}

double epar_mech_flops_row(const struct epar_mech *m)
{
    double L = m->L, dk = m->dk, D = m->D;
    double dense = 4 * L * dk + 3 * L; /* q.k for L keys, exp/sum/divide, weighted sum of L values */
    const struct epar_mech_def *d = epar_mech_file(m->id);
    if (d && d->flops_extra) return dense + d->flops_extra(m);
    switch (m->info->kind) {
    case EPAR_MK_FIXED: {
        long nnz = 0;
        for (size_t t = 0; t < (size_t)m->L * m->L; t++) nnz += m->fixed[t] != 0;
        return 2.0 * dk * nnz / L;
    }
    case EPAR_MK_KERNEL: {
        double nf = m->nfeat, fmap = m->id == EPAR_MECH_PERFORMER ? 2 * 2 * nf * dk + 4 * nf : 2 * nf;
        return fmap + 4 * nf * dk + 2 * nf;  /* features of q_i and k_i, S update and phi(q)^T S, denominator */
    }
    case EPAR_MK_MASK: {
        double nnz = (double)mask_count(m->mask, m->L);
        if (m->mask2) nnz += (double)mask_count(m->mask2, m->L);
        if (m->causal && !m->mask2) { /* count only j <= i */
            long c = 0;
            for (int i = 0; i < m->L; i++) for (int j = 0; j <= i; j++) c += m->mask[(size_t)i * m->L + j];
            nnz = (double)c;
        }
        return (4 * dk + 3) * nnz / L + (m->mask2 ? dk : 0);
    }
    case EPAR_MK_INPUT: return dense + D;
    case EPAR_MK_QK:
        if (m->Wq) return dense + 4 * D * dk; /* frozen projections replace W_Q, W_K: same cost */
        return dense + 6 * dk;
    case EPAR_MK_FACTOR: return dense + L;
    case EPAR_MK_BIAS:
        return dense + L;
    default: return dense;
    }
}
