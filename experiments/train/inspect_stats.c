/* epar inspect: the summaries of one input's attention, per layer and head (heads.csv's columns): distance, entropy,
 * the previous, first and answer-relevant shares, the mass by distance beside the EPAR factor P(d), S1's fixed
 * patterns and the similarity of every pair of heads, and the paper's §4.3 on the trained head. */
#include <math.h>
#include <stdlib.h>
#include <gsl/gsl_statistics_double.h>
#include "lib/err.h"
#include "lib/metrics.h"
#include "experiments/train/inspect_int.h"

void epar_inspect_head_stats(const float *A, const unsigned char *rel, int T, double *s, double *mass)
{
    double dist = 0, ent = 0, ent_u = 0, prev = 0, first = 0, relv = 0, relu = 0;
    int nrel = 0;
    for (int d = 0; d < T; d++) mass[d] = 0;
    for (int i = 0; i < T; i++) {
        const float *a = A + (size_t)i * T;
        double h = epar_metric_entropy_f(a, i + 1, NULL), r = 0;
        int nr = 0;
        for (int j = 0; j <= i; j++) {
            dist += (double)a[j] * (i - j);
            mass[i - j] += a[j];
            if (rel && rel[(size_t)i * T + j]) {
                r += a[j];
                nr++;
            }
        }
        ent += h;
        ent_u += log((double)i + 1);
        if (i > 0) {
            prev += a[i - 1];
            first += a[0];
        }
        if (nr > 0) {
            relv += r;
            relu += (double)nr / (i + 1);
            nrel++;
        }
    }
    for (int d = 0; d < T; d++) mass[d] /= (double)(T - d);   /* T - d queries have a key at distance d */
    s[EPAR_INSPECT_DISTANCE] = dist / T;
    s[EPAR_INSPECT_ENTROPY] = ent / T;
    s[EPAR_INSPECT_ENTROPY_UNIFORM] = ent_u / T;
    s[EPAR_INSPECT_PREVIOUS] = T > 1 ? prev / (T - 1) : NAN;
    s[EPAR_INSPECT_FIRST] = T > 1 ? first / (T - 1) : NAN;
    s[EPAR_INSPECT_RELEVANT] = nrel ? relv / nrel : NAN;
    s[EPAR_INSPECT_RELEVANT_UNIFORM] = nrel ? relu / nrel : NAN;
    /* against the distance, relative to a uniform causal row's mass (which falls with d by itself) */
    double *work = malloc(4 * (size_t)T * sizeof *work);
    if (work && T > 2) {
        epar_inspect_uniform_mass(T, work + 3 * T);
        for (int d = 0; d < T; d++) {
            work[2 * T + d] = d;
            work[3 * T + d] = mass[d] / work[3 * T + d];
        }
        s[EPAR_INSPECT_DIST_SPEARMAN] = epar_metric_spearman(work + 3 * T, work + 2 * T, (size_t)T, work);
    } else {
        s[EPAR_INSPECT_DIST_SPEARMAN] = NAN;
    }
    free(work);
}

void epar_inspect_uniform_mass(int T, double *u)
{
    double tail = 0;   /* sum over i = d .. T-1 of 1 / (i + 1) */
    for (int d = T - 1; d >= 0; d--) {
        tail += 1.0 / (d + 1);
        u[d] = tail / (T - d);
    }
}

const char *const epar_inspect_pattern_names[EPAR_INSPECT_NPATTERNS] = {"current", "previous", "left", "first"};

/* the Pearson correlation of x and y (n); a constant row has none: 1 when both are constant, else 0 (the values are
 * shifted by their first, so a row of equal values has a variance of exactly 0) */
static double row_pearson(const double *x, const double *y, int n)
{
    double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
    for (int j = 0; j < n; j++) {
        mx += x[j] - x[0];
        my += y[j] - y[0];
    }
    mx /= n;
    my /= n;
    for (int j = 0; j < n; j++) {
        double a = x[j] - x[0] - mx, b = y[j] - y[0] - my;
        sxx += a * a;
        syy += b * b;
        sxy += a * b;
    }
    if (sxx == 0 || syy == 0) return sxx == 0 && syy == 0 ? 1.0 : 0.0;
    return sxy / sqrt(sxx * syy);
}

/* pattern p's row i (keys 0..i) into q */
static void pattern_row(int p, int i, double *q)
{
    for (int j = 0; j <= i; j++) q[j] = 0;
    if (p == EPAR_INSPECT_PATTERN_CURRENT) q[i] = 1;
    else if (p == EPAR_INSPECT_PATTERN_PREVIOUS) q[i - 1] = 1;
    else if (p == EPAR_INSPECT_PATTERN_FIRST) q[0] = 1;
    else {
        double z = 0;
        for (int j = 0; j <= i - 2; j++) z += pow(j + 1.0, 3);
        for (int j = 0; j <= i - 2; j++) q[j] = pow(j + 1.0, 3) / z;
    }
}

void epar_inspect_patterns(const float *A, int T, double pat[EPAR_INSPECT_NPATTERNS])
{
    double *a = T >= 3 ? malloc(2 * (size_t)T * sizeof *a) : NULL, *q = a ? a + T : NULL;
    for (int p = 0; p < EPAR_INSPECT_NPATTERNS; p++) pat[p] = a ? 0.0 : NAN;
    if (!a) return;
    for (int i = 2; i < T; i++) {
        for (int j = 0; j <= i; j++) a[j] = A[(size_t)i * T + j];
        for (int p = 0; p < EPAR_INSPECT_NPATTERNS; p++) {
            pattern_row(p, i, q);
            pat[p] += row_pearson(a, q, i + 1);
        }
    }
    for (int p = 0; p < EPAR_INSPECT_NPATTERNS; p++) pat[p] /= T - 2;
    free(a);
}

double epar_inspect_similarity(const float *A, const float *B, int T)
{
    double *a = T >= 3 ? malloc(2 * (size_t)T * sizeof *a) : NULL, *b = a ? a + T : NULL, s = 0;
    if (!a) return NAN;
    for (int i = 2; i < T; i++) {
        for (int j = 0; j <= i; j++) {
            a[j] = A[(size_t)i * T + j];
            b[j] = B[(size_t)i * T + j];
        }
        s += row_pearson(a, b, i + 1);
    }
    free(a);
    return s / (T - 2);
}

void epar_inspect_most_similar(const double *sim, int NL, int NH, int k, double *in_layer, double *other)
{
    int H = NL * NH;
    *in_layer = *other = NAN;
    for (int q = 0; q < H; q++) {
        double v = sim[(size_t)k * H + q], *to = q / NH == k / NH ? in_layer : other;
        if (q != k && !isnan(v) && (isnan(*to) || v > *to)) *to = v;
    }
}

/* every head's fixed-pattern correlations, the similarity of every pair and each head's most similar other head in its
 * layer and in another layer; ALiBi's slopes */
static void patterns_and_similarity(struct epar_inspect *x)
{
    int T = x->T, NH = x->NH, H = x->NL * NH;
    const double *slopes = x->run.cfg.mechanism == EPAR_MECH_ALIBI || x->run.cfg.mechanism == EPAR_MECH_ALIBI_LEARNED
                              ? x->run.model.pos.slopes : NULL;   /* alibi-learned: its learned slopes */
    for (int k = 0; k < H; k++) {
        double *s = x->stats + (size_t)k * EPAR_INSPECT_NSTATS, pat[EPAR_INSPECT_NPATTERNS];
        epar_inspect_patterns(x->att + (size_t)k * T * T, T, pat);
        s[EPAR_INSPECT_PAT_BEST] = -INFINITY;
        for (int p = 0; p < EPAR_INSPECT_NPATTERNS; p++) {
            s[EPAR_INSPECT_PAT_CURRENT + p] = pat[p];
            s[EPAR_INSPECT_PAT_BEST] = fmax(s[EPAR_INSPECT_PAT_BEST], pat[p]);
        }
        if (isnan(pat[0])) s[EPAR_INSPECT_PAT_BEST] = NAN;
        s[EPAR_INSPECT_SLOPE] = slopes ? slopes[k % NH] : NAN;
        x->sim[(size_t)k * H + k] = 1.0;
        for (int q = 0; q < k; q++)
            x->sim[(size_t)k * H + q] = x->sim[(size_t)q * H + k] =
                epar_inspect_similarity(x->att + (size_t)k * T * T, x->att + (size_t)q * T * T, T);
    }
    for (int k = 0; k < H; k++) {
        double *s = x->stats + (size_t)k * EPAR_INSPECT_NSTATS;
        epar_inspect_most_similar(x->sim, x->NL, NH, k, &s[EPAR_INSPECT_SIM_LAYER], &s[EPAR_INSPECT_SIM_OTHER]);
    }
}

int epar_inspect_is_epar(enum epar_mech_id id) { return id == EPAR_MECH_EPAR_BASIC || id == EPAR_MECH_EPAR_ENHANCED; }

/* §4.3 on every trained head (lib/metrics' consistency family, as `optimal-position` scores random layers): I_j =
 * ||wte[token_j]||_2, the input before any position term (the importance type "norm"), V = A I, pos* = argmax V,
 * against argmax of the actual scores (mean_j A_ij) I_i */
static int optimal_position(struct epar_inspect *x)
{
    int T = x->T, C = x->run.model.cfg.C;
    double *A = EPAR_MALLOC(((size_t)T * T + 7 * (size_t)T) * sizeof *A), *I = A ? A + (size_t)T * T : NULL;
    size_t *perm = EPAR_MALLOC((size_t)T * sizeof *perm);
    if (!A || !perm) {
        free(A);
        free(perm);
        return EPAR_ENOMEM;
    }
    for (int j = 0; j < T; j++) {
        const float *e = x->run.model.p.wte + (size_t)x->tok[j] * C;
        double n2 = 0;
        for (int c = 0; c < C; c++) n2 += (double)e[c] * e[c];
        I[j] = sqrt(n2);
    }
    for (size_t k = 0; k < (size_t)x->NL * x->NH; k++) {
        const float *a = x->att + k * T * T;
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) A[(size_t)i * T + j] = j <= i ? a[(size_t)i * T + j] : 0.0;
        struct epar_metric_optimal mo;
        epar_metric_optimal(A, I, T, I + T, perm, &mo);
        double *s = x->stats + k * EPAR_INSPECT_NSTATS;
        s[EPAR_INSPECT_POS_STAR] = mo.theoretical;
        s[EPAR_INSPECT_POS_ACTUAL] = mo.actual;
        s[EPAR_INSPECT_CONSISTENCY] = mo.consistency;
        s[EPAR_INSPECT_RANKING] = mo.ranking;
    }
    free(A);
    free(perm);
    return EPAR_OK;
}

/* every head's summaries; EPAR: its factor P(d) and how the mass by distance follows it */
int epar_inspect_summarise_heads(struct epar_inspect *x)
{
    const struct epar_nnpos *p = &x->run.model.pos;
    int T = x->T, epar = epar_inspect_is_epar(x->run.cfg.mechanism);
    double L = p->s.posfx_length > 0 ? p->s.posfx_length : T;   /* as the forward pass used it */
    double *work = EPAR_MALLOC(4 * (size_t)T * sizeof(double)), *u = work ? work + 2 * T : NULL, *relm = u ? u + T : NULL;
    int *scratch = EPAR_MALLOC((size_t)x->run.task.V * sizeof(int));
    if (!work || !scratch) {
        free(work);
        free(scratch);
        return EPAR_ENOMEM;
    }
    x->rel_rows = epar_task_relevant(&x->run.task, x->tok, T, x->rel, scratch);
    free(scratch);
    epar_inspect_uniform_mass(T, u);
    for (int l = 0; l < x->NL; l++)
        for (int h = 0; h < x->NH; h++) {
            size_t k = (size_t)l * x->NH + h;
            double *s = x->stats + k * EPAR_INSPECT_NSTATS, *mass = x->mass + k * T, *pe = x->peff + k * T;
            epar_inspect_head_stats(x->att + k * T * T, x->rel_rows ? x->rel : NULL, T, s, mass);
            struct epar_posfx fx = epar ? epar_nnpos_effect(p, l, h) : (struct epar_posfx){EPAR_FORM_NONE, NAN, NAN, NAN};
            for (int d = 0; d < T; d++) pe[d] = epar ? epar_posfx_value(&fx, d, L) : NAN;
            s[EPAR_INSPECT_ALPHA] = fx.alpha;
            s[EPAR_INSPECT_BETA] = fx.beta;
            s[EPAR_INSPECT_GAMMA] = epar && fx.form == EPAR_FORM_ENHANCED ? fx.gamma : NAN;
            for (int d = 0; d < T; d++) relm[d] = mass[d] / u[d];   /* as for distance_spearman */
            s[EPAR_INSPECT_PROFILE_PEARSON] = epar && T > 2 ? gsl_stats_correlation(relm, 1, pe, 1, (size_t)T) : NAN;
            s[EPAR_INSPECT_PROFILE_SPEARMAN] = epar && T > 2 ? epar_metric_spearman(relm, pe, (size_t)T, work) : NAN;
        }
    free(work);
    patterns_and_similarity(x);
    return optimal_position(x);
}
