/* sensitivity metrics (docs/PROTOCOLS.md Experiment 3): position_strength and decay_speed against closed
 * geometric-series forms (1e-12), and the variance, locality, distance-profile and correlation-summary
 * definitions on hand-made matrices. */
#include <stdlib.h>
#include <gsl/gsl_statistics_double.h>
#include "lib/metrics.h"
#include "lib/posfx.h"
#include "check.h"

/* sum_{d=1}^{n} r^d and sum_{d=1}^{n} d r^d, closed forms (r != 1) */
static double geo1(double r, int n) { return r * (1 - pow(r, n)) / (1 - r); }
static double geo2(double r, int n) { return r * (1 - (n + 1) * pow(r, n) + n * pow(r, n + 1)) / ((1 - r) * (1 - r)); }

static double strength_basic(double alpha, double beta, int L)
{
    double r = exp(-beta / L);
    return alpha * (L + 2.0 * (L * geo1(r, L - 1) - geo2(r, L - 1))) / ((double)L * L);
}

static double decay_basic(double alpha, double beta, int L)
{
    int c = L / 2;
    return alpha * geo1(exp(-beta / L), c - 1) / (c - 1);
}

int main(void)
{
    /* position_strength and decay_speed, basic and enhanced, even and odd L, high-entropy parameters */
    const int Ls[] = {4, 5, 17, 64, 128, 301};
    const double ab[][3] = {{1, 2, 1.5}, {0.1, 0.5, 0.25}, {2.385, 7.31, 0.6931}, {10, 12, 5}};
    for (size_t li = 0; li < sizeof Ls / sizeof Ls[0]; li++)
        for (size_t k = 0; k < sizeof ab / sizeof ab[0]; k++) {
            int L = Ls[li];
            double a = ab[k][0], b = ab[k][1], g = ab[k][2];
            struct epar_posfx fb = {EPAR_FORM_BASIC, a, b, g}, fe = {EPAR_FORM_ENHANCED, a, b, g};
            double sb = strength_basic(a, b, L), db = decay_basic(a, b, L);
            check_rel(epar_posfx_strength(&fb, L), sb, 1e-12, "strength basic L=%d a=%g b=%g", L, a, b);
            check_rel(epar_posfx_strength(&fe, L), a / (1 + g) + g / (1 + g) * sb, 1e-12,
                      "strength enhanced L=%d a=%g b=%g g=%g", L, a, b, g);
            check_rel(epar_posfx_decay_speed(&fb, L), db, 1e-12, "decay basic L=%d a=%g b=%g", L, a, b);
            check_rel(epar_posfx_decay_speed(&fe, L), a / (1 + g) + g / (1 + g) * db, 1e-12,
                      "decay enhanced L=%d a=%g b=%g g=%g", L, a, b, g);
            /* the reference's definitions on the materialised matrix: mean of P; mean of P[c, c+k] */
            double *P = malloc(sizeof(double) * L * L);
            epar_posfx_matrix(&fe, L, P);
            check_rel(epar_posfx_strength(&fe, L), gsl_stats_mean(P, 1, (size_t)L * L), 1e-12,
                      "strength = mean of the matrix L=%d", L);
            int c = L / 2;
            double s = 0;
            for (int o = 1; o < c; o++) s += P[(size_t)c * L + c + o];
            check_rel(epar_posfx_decay_speed(&fe, L), s / (c - 1), 1e-12, "decay = mean of P[c,c+k] L=%d", L);
            free(P);
        }
    /* L=4: c=2, the window is k=1 only; L<4: empty window -> NaN; beta=0 and form none: P = alpha or 1 */
    struct epar_posfx e = {EPAR_FORM_ENHANCED, 1.3, 2.2, 0.7};
    check_rel(epar_posfx_decay_speed(&e, 4), epar_posfx_value(&e, 1, 4), 1e-15, "L=4 window is P(1)");
    check_true(isnan(epar_posfx_decay_speed(&e, 3)), "L=3: empty window is NaN");
    struct epar_posfx flat = {EPAR_FORM_BASIC, 1.7, 0, 0}, none = {EPAR_FORM_NONE, 5, 5, 5};
    check_rel(epar_posfx_strength(&flat, 33), 1.7, 1e-15, "beta 0: strength alpha");
    check_rel(epar_posfx_strength(&none, 33), 1.0, 1e-15, "form none: strength 1");
    check_rel(epar_posfx_decay_speed(&none, 33), 1.0, 1e-15, "form none: decay 1");
    struct epar_posfx g0 = {EPAR_FORM_ENHANCED, 0.8, 3, 0};
    check_rel(epar_posfx_strength(&g0, 64), 0.8, 1e-15, "gamma 0: strength alpha");

    /* attention_concentration: unbiased variance across the batch, averaged over entries */
    const double x2[] = {1, 2, 3, 3, 2, 7}; /* B=2, n=3: variances 2, 0, 8 */
    check_rel(epar_metric_batch_variance(x2, 2, 3), 10.0 / 3.0, 1e-15, "batch variance B=2 by hand");
    const double x3[] = {0.5, 1, 2.385, 1.5, 1, 0.1, 2.5, 1, -1}; /* B=3, n=3 */
    double want = 0;
    for (int t = 0; t < 3; t++) {
        double col[3] = {x3[t], x3[3 + t], x3[6 + t]};
        want += gsl_stats_variance(col, 1, 3) / 3;
    }
    check_rel(epar_metric_batch_variance(x3, 3, 3), want, 1e-14, "batch variance B=3 vs GSL (n-1)");
    const double x1[] = {0.5, 1.5, 2.5}; /* B=3, n=1 */
    check_rel(epar_metric_batch_variance(x1, 3, 1), 1.0, 1e-15, "variance of 0.5, 1.5, 2.5 is 1 (n-1)");
    check_true(isnan(epar_metric_batch_variance(x3, 1, 3)), "batch of 1: variance undefined (NaN)");

    /* attention_locality on the worked rows of docs/MECHANISMS.md §1 (item 0) and the identity (item 1) */
    double A[32] = {0.7, 0.1, 0.1, 0.1, 0.25, 0.25, 0.25, 0.25, 0.1, 0.2, 0.3, 0.4, 0, 0, 0, 1};
    for (int i = 0; i < 4; i++) A[16 + i * 4 + i] = 1;
    check_rel(epar_metric_locality(A, 1, 4, 1), (0.8 + 0.75 + 0.9 + 1.0) / 4, 1e-15, "locality w=1, one item");
    check_rel(epar_metric_locality(A, 2, 4, 1), (0.8 + 0.75 + 0.9 + 1.0 + 4.0) / 8, 1e-15, "locality w=1, two items");
    check_rel(epar_metric_locality(A, 1, 4, 0), (0.7 + 0.25 + 0.3 + 1.0) / 4, 1e-15, "locality w=0 is the diagonal");
    check_rel(epar_metric_locality(A, 1, 4, 3), 1.0, 1e-15, "locality w=L-1 is the row sum");
    /* distance profile: mean weight of the pairs at each distance */
    double prof[5];
    epar_metric_distance_profile(A, 1, 4, prof);
    check_rel(prof[0], 0.5625, 1e-15, "profile d=0: mean of the diagonal");
    check_rel(prof[1], (0.1 + 0.25 + 0.25 + 0.2 + 0.4 + 0.0) / 6, 1e-15, "profile d=1: 6 pairs");
    check_rel(prof[2], (0.1 + 0.25 + 0.1 + 0.0) / 4, 1e-15, "profile d=2: 4 pairs");
    check_rel(prof[3], (0.1 + 0.0) / 2, 1e-15, "profile d=3: (0,3) and (3,0)");
    double U[2 * 25];
    for (int t = 0; t < 50; t++) U[t] = 0.2;
    epar_metric_distance_profile(U, 2, 5, prof);
    check_rel(prof[4], 0.2, 1e-15, "uniform rows: profile 1/L at every distance");

    /* correlation-matrix summaries: mean and unbiased sd over all entries, off-diagonal mean */
    const double C[9] = {1, 0.5, -0.2, 0.5, 1, 0.3, -0.2, 0.3, 1};
    double m, sd, off;
    epar_metric_matrix_stats(C, 3, &m, &sd, &off);
    check_rel(m, 4.2 / 9, 1e-15, "correlation mean includes the diagonal");
    check_rel(off, 0.2, 1e-15, "off-diagonal mean");
    double ss = 0;
    for (int t = 0; t < 9; t++) ss += (C[t] - 4.2 / 9) * (C[t] - 4.2 / 9);
    check_rel(sd, sqrt(ss / 8), 1e-14, "correlation std is the unbiased (n-1) sd");
    return check_summary("test_sensitivity");
}
