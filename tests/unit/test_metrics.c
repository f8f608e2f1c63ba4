/* metrics: the worked example of docs/MECHANISMS.md §1, correlation vs naive, Spearman, ties. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_statistics_double.h>
#include "lib/metrics.h"
#include "lib/stats.h"
#include "check.h"

int main(void)
{
    const double A[16] = {0.7, 0.1, 0.1, 0.1, 0.25, 0.25, 0.25, 0.25, 0.1, 0.2, 0.3, 0.4, 0, 0, 0, 1};
    const double I[4] = {1, 2, 3, 4};
    double V[4], H[4], D[4], W[4];
    epar_metric_value(A, I, 4, V);
    const double wv[] = {1.6, 2.5, 3.0, 4.0}, wh[] = {0.940448, 1.38629, 1.27985, 0}, wd[] = {0.6, 1.0, 0.8, 0};
    for (int i = 0; i < 4; i++) check_rel(V[i], wv[i], 1e-12, "V[%d]", i);
    check_int((long)epar_metric_argmax_tied(V, 4, EPAR_METRIC_TIE_RTOL), 3, "pos* = 3");
    epar_metric_row_entropy(A, 4, H);
    for (int i = 0; i < 4; i++) check_rel(H[i], wh[i], 1e-5, "entropy row %d", i);
    {   /* a float row (a trained model's): the same worked entropies, its positive weights counted */
        const float f0[4] = {0.7f, 0.1f, 0.1f, 0.1f}, f3[4] = {0, 0, 0, 1}, f2[3] = {0.5f, 0, 0.5f};
        int n;
        check_rel(epar_metric_entropy_f(f0, 4, &n), wh[0], 1e-6, "float row 0 entropy");
        check_int(n, 4, "float row 0: 4 positive weights");
        check_abs(epar_metric_entropy_f(f3, 4, &n), 0, 0, "one-hot float row: 0");
        check_int(n, 1, "one-hot: 1 positive weight");
        check_rel(epar_metric_entropy_f(f2, 3, &n), log(2.0), 1e-7, "two halves: ln 2");
        check_int(n, 2, "a zero weight is not counted");
        /* rows of every length to 67 (the 4-lane body and its tail) with zeros among them, against the terms in long
         * double one at a time */
        float row[67];
        unsigned u = 12345;
        double worst = 0;
        int counts_ok = 1;
        for (int len = 1; len <= 67; len++) {
            long double ref = 0, tot = 0;
            int want = 0;
            for (int j = 0; j < len; j++) {
                u = u * 1103515245u + 12345u;
                row[j] = (u >> 8) % 5 == 0 ? 0.0f : (float)((u >> 8) % 1000 + 1) * 1e-3f;
                tot += row[j];
            }
            for (int j = 0; j < len; j++) {
                row[j] = (float)(row[j] / tot);
                if (row[j] > 0) {
                    ref -= (long double)row[j] * logl((long double)row[j]);
                    want++;
                }
            }
            double h = epar_metric_entropy_f(row, len, &n);
            worst = fmax(worst, fabs(h - (double)ref) / fmax(1e-300, fabs((double)ref)));
            counts_ok &= n == want;
        }
        check_abs(worst, 0, 1e-14, "float rows of length 1-67 with zeros: entropy to 1e-14 of long double's");
        check_true(counts_ok, "float rows of length 1-67: positive weights counted");
    }
    epar_metric_mean_distance(A, 4, D);
    for (int i = 0; i < 4; i++) check_rel(D[i], wd[i], 1e-12, "mean distance row %d", i);
    epar_metric_local_mass(A, 4, 1, W);
    check_rel(W[0], 0.8, 1e-12, "local mass w=1 row 0");
    check_rel(W[2], 0.9, 1e-12, "local mass w=1 row 2");
    const double ties[] = {1, 3, 3, 2};
    check_int((long)epar_metric_argmax_tied(ties, 4, EPAR_METRIC_TIE_RTOL), 1, "argmax ties go to the smallest index");
    const double nans[] = {NAN, 1, NAN};
    check_int((long)epar_metric_argmax_tied(nans, 3, EPAR_METRIC_TIE_RTOL), 1, "NaN never wins argmax");
    /* uniform rows: entropy ln L (reference entropy with its 1e-8 is within 1e-7 of it) */
    double U[64], Hu[8];
    for (int t = 0; t < 64; t++) U[t] = 1.0 / 8;
    epar_metric_entropy_ref_rows(U, 8, Hu);
    for (int i = 0; i < 8; i++) check_rel(Hu[i], log(8.0), 1e-6, "reference entropy of uniform row %d = ln L", i);
    {   /* per-row reference entropy: rows of a non-uniform matrix */
        double R[9] = {0.5, 0.5, 0, 0.2, 0.3, 0.5, 0, 0, 1}, Hr[3];
        epar_metric_entropy_ref_rows(R, 3, Hr);
        check_rel(Hr[0], -2 * 0.5 * log(0.5 + 1e-8), 1e-12, "row 0: two halves");
        check_abs(Hr[2], -log(1 + 1e-8), 1e-15, "one-hot row: -log(1+1e-8)");
    }

    /* position correlation: BLAS path vs naive per-pair Pearson */
    int B = 3, L = 7;
    double *Ab = malloc(sizeof(double) * B * L * L), *C = malloc(sizeof(double) * L * L),
           *Wk = malloc(sizeof(double) * L * B * L), x[21], y[21];
    unsigned s = 12345;
    for (int t = 0; t < B * L * L; t++) { s = s * 1103515245u + 12345u; Ab[t] = (s >> 8) / 16777216.0; }
    for (int j = 0; j < L; j++) Ab[((size_t)1 * L + 4) * L + j] = Ab[(size_t)4 * L + j] = Ab[((size_t)2 * L + 4) * L + j] = 0.5; /* row 4 constant */
    epar_metric_position_correlation(Ab, B, L, C, Wk);
    double worst = 0;
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++) {
            for (int b = 0; b < B; b++)
                for (int k = 0; k < L; k++) {
                    x[b * L + k] = Ab[((size_t)b * L + i) * L + k];
                    y[b * L + k] = Ab[((size_t)b * L + j) * L + k];
                }
            double r = gsl_stats_correlation(x, 1, y, 1, (size_t)B * L);
            if (isnan(r)) r = 0;
            if (fabs(r - C[i * L + j]) > worst) worst = fabs(r - C[i * L + j]);
        }
    check_true(worst < 1e-12, "position correlation equals naive Pearson (worst %g)", worst);
    check_rel(C[4 * L + 4], 0, 0, "constant row: correlation NaN -> 0");
    check_rel(C[2 * L + 2], 1, 1e-12, "diagonal is 1");
    free(Ab); free(C); free(Wk);

    /* Spearman vs naive ranks (no ties), with ties (average ranks), constant -> NaN */
    double a[6] = {0.3, 2.385, -1.2, 0.7, 5.1, 0.01}, bb[6] = {1.1, 0.2, -3, 2.2, 4, 0}, work[12];
    double ra[6], rb[6];
    for (int i = 0; i < 6; i++) {
        ra[i] = rb[i] = 1;
        for (int j = 0; j < 6; j++) { ra[i] += a[j] < a[i]; rb[i] += bb[j] < bb[i]; }
    }
    check_rel(epar_metric_spearman(a, bb, 6, work), gsl_stats_correlation(ra, 1, rb, 1, 6), 1e-12,
              "Spearman equals Pearson of ranks");
    double t1[4] = {1, 2, 2, 3}, t2[4] = {1, 2, 3, 4};
    /* average ranks of t1: 1, 2.5, 2.5, 4 */
    double r1[4] = {1, 2.5, 2.5, 4};
    check_rel(epar_metric_spearman(t1, t2, 4, work), gsl_stats_correlation(r1, 1, t2, 1, 4), 1e-12,
              "Spearman with ties uses average ranks");
    double cst[4] = {2, 2, 2, 2};
    check_true(isnan(epar_metric_spearman(cst, t2, 4, work)), "Spearman of a constant vector is NaN");
    double m, sd;
    epar_stats_mean_sd(t2, 4, &m, &sd);
    check_rel(sd, sqrt(5.0 / 3.0), 1e-12, "sample sd (n-1)");

    /* the tie rule: argmax_tied == argmax of the tie-merged vector; rounding noise of the size BLAS kernels
     * differ by (a few ulp) cannot move it, a real difference (1e-9 relative) does */
    const double near[] = {0.25, 0.9, 0.9 * (1 + 4e-16), 0.3, 0.9 * (1 - 3e-16)};
    check_int((long)ref_argmax(near, 5), 2, "plain argmax follows the last bit");
    check_int((long)epar_metric_argmax_tied(near, 5, EPAR_METRIC_TIE_RTOL), 1, "tied argmax: lowest index of the top group");
    const double apart[] = {0.25, 0.9, 0.9 * (1 + 1e-9), 0.3};
    check_int((long)epar_metric_argmax_tied(apart, 4, EPAR_METRIC_TIE_RTOL), 2, "a 1e-9 difference is not a tie");
    const double chain[] = {1 - 1.6e-12, 1 - 0.8e-12, 1.0, 0.5}; /* consecutive gaps <= tol: one group */
    check_int((long)epar_metric_argmax_tied(chain, 4, EPAR_METRIC_TIE_RTOL), 0, "chained ties: one group");
    const double gap[] = {1 - 1.6e-12, 1.0};
    check_int((long)epar_metric_argmax_tied(gap, 2, EPAR_METRIC_TIE_RTOL), 1, "a gap above tol is not a tie");
    const double nan3[] = {NAN, NAN, NAN};
    check_int((long)epar_metric_argmax_tied(nan3, 3, EPAR_METRIC_TIE_RTOL), 0, "all NaN -> 0");
    const double nan2[] = {NAN, 1, NAN, 1};
    check_int((long)epar_metric_argmax_tied(nan2, 4, EPAR_METRIC_TIE_RTOL), 1, "NaN never wins the tied argmax");
    {
        enum { N = 40 };
        double xs[N], ys[N];
        size_t perm[N];
        unsigned z = 2385u;
        int same = 1, stable = 1;
        for (int rep = 0; rep < 200; rep++) {
            for (int i = 0; i < N; i++) {
                z = z * 1103515245u + 12345u;
                xs[i] = (double)((z >> 16) % 7) / 7.0 + 0.125;          /* many exact ties */
                if (i % 5 == 0) xs[i] *= 1 + ((z >> 3) % 5 - 2) * 1e-16; /* and near ties of rounding size */
            }
            memcpy(ys, xs, sizeof xs);
            epar_metric_tie_merge(ys, N, EPAR_METRIC_TIE_RTOL, perm);
            size_t t = epar_metric_argmax_tied(xs, N, EPAR_METRIC_TIE_RTOL);
            if (t != ref_argmax(ys, N)) same = 0;
            for (int i = 0; i < N; i++) ys[i] = xs[i] * (1 + ((i * 7 + rep) % 3 - 1) * 2.2e-16); /* "another kernel" */
            if (epar_metric_argmax_tied(ys, N, EPAR_METRIC_TIE_RTOL) != t) stable = 0;
        }
        check_true(same, "argmax_tied equals argmax after tie_merge (200 vectors with ties)");
        check_true(stable, "argmax_tied does not move under 1-ulp perturbations (200 vectors)");
    }
    /* the consistency family from given scores (the one implementation): worked numbers */
    {
        const double Vc[4] = {1.0, 3.0, 2.0, 3.0}, sc[4] = {0.1, 0.2, 0.4, 0.3};
        struct epar_metric_optimal mo;
        epar_metric_consistency(Vc, sc, 4, &mo);
        check_int(mo.theoretical, 1, "t = first of the tied maxima of V");
        check_int(mo.actual, 2, "a = argmax s");
        check_rel(mo.score_similarity, 1 - 1.0 / (3 + 1e-8), 1e-15, "score similarity 1 - |V(t)-V(a)|/(V(t)+1e-8)");
        check_rel(mo.proximity, 0.75, 1e-15, "proximity 1 - |t-a|/L");
        check_rel(mo.consistency, 0.5 * (1 - 1.0 / (3 + 1e-8) + 0.75), 1e-15, "consistency = mean of the two");
        check_rel(mo.score_mean, 2.25, 1e-15, "score mean");
    }
    return check_summary("test_metrics");
}
