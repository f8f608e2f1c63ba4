/* optimal position: the consistency family of lib/metrics on hand-made A and I (worked by hand below),
 * ties, constant V, one-hot I, Spearman against a naive implementation, the importance generators, and the
 * type-list parser of experiments/analysis/optimal. */
#include <stdlib.h>
#include <gsl/gsl_statistics_double.h>
#include "lib/attn.h"
#include "lib/importance.h"
#include "lib/metrics.h"
#include "lib/rng.h"
#include "experiments/analysis/optimal.h"
#include "check.h"

/* naive Spearman: average ranks by counting, then Pearson (no GSL ranking) */
static double naive_spearman(const double *x, const double *y, int n)
{
    double *rx = malloc(sizeof(double) * n), *ry = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++) {
        int lx = 0, ex = 0, ly = 0, ey = 0;
        for (int j = 0; j < n; j++) {
            lx += x[j] < x[i]; ex += x[j] == x[i];
            ly += y[j] < y[i]; ey += y[j] == y[i];
        }
        rx[i] = lx + (ex + 1) / 2.0;
        ry[i] = ly + (ey + 1) / 2.0;
    }
    double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
    for (int i = 0; i < n; i++) { mx += rx[i] / n; my += ry[i] / n; }
    for (int i = 0; i < n; i++) {
        sxy += (rx[i] - mx) * (ry[i] - my);
        sxx += (rx[i] - mx) * (rx[i] - mx);
        syy += (ry[i] - my) * (ry[i] - my);
    }
    free(rx); free(ry);
    return sxy / sqrt(sxx * syy);
}

int main(void)
{
    double work[6 * 64];
    size_t perm[64];
    struct epar_metric_optimal mo;

    /* Hand-made A (rows sum to 1 exactly in binary) and I.
     * V = A I = (0.71875, 0.4375, 0.28125, 0.4375): t = 0.  s = I/4: a = argmax I = 2.
     * score similarity 1 - |0.71875 - 0.28125| / (0.71875 + 1e-8), proximity 1 - 2/4 = 0.5.
     * average ranks of V (4, 2.5, 1, 2.5), of I (1, 3, 4, 2): Spearman -4.5 / sqrt(4.5 * 5).
     * mean V = 1.875 / 4. */
    const double A[16] = {0.125, 0.125, 0.625, 0.125, 0.25, 0.25, 0.25, 0.25,
                          0.5, 0.25, 0.125, 0.125, 0.25, 0.25, 0.25, 0.25};
    const double I[4] = {0, 0.5, 1, 0.25};
    epar_metric_optimal(A, I, 4, work, perm, &mo);
    check_int(mo.theoretical, 0, "t = argmax V");
    check_int(mo.actual, 2, "a = argmax (mean_j A_ij) I_i = argmax I");
    double ss = 1.0 - 0.4375 / (0.71875 + 1e-8);
    check_rel(mo.score_similarity, ss, 1e-12, "score similarity");
    check_rel(mo.proximity, 0.5, 1e-12, "proximity 1 - |t-a|/L");
    check_rel(mo.consistency, (ss + 0.5) / 2, 1e-12, "consistency = (similarity + proximity)/2");
    check_rel(mo.ranking, -4.5 / sqrt(22.5), 1e-12, "ranking = Spearman of V vs s, ties averaged");
    check_rel(mo.score_mean, 0.46875, 1e-12, "position score mean");
    check_abs(mo.row_sum_dev, 0.0, 0.0, "rows of the hand-made A sum to 1 exactly");
    check_rel(epar_metric_score_similarity((const double[]){2, 1}, 0, 1), 1 - 1 / (2 + 1e-8), 1e-15,
              "score similarity alone");
    check_rel(epar_metric_proximity(3, 60, 64), 1 - 57.0 / 64, 1e-15, "proximity alone");

    /* one-hot I = e_2: V is column 2 of A = (0.625, 0.25, 0.125, 0.25), t = 0, a = 2;
     * ranks of V (4, 2.5, 1, 2.5), of s (2, 2, 4, 2): Spearman -3 / sqrt(4.5 * 3) */
    const double onehot[4] = {0, 0, 1, 0};
    epar_metric_optimal(A, onehot, 4, work, perm, &mo);
    check_int(mo.theoretical, 0, "one-hot: t");
    check_int(mo.actual, 2, "one-hot: a is the hot position");
    check_rel(mo.score_similarity, 1 - 0.5 / (0.625 + 1e-8), 1e-12, "one-hot: score similarity");
    check_rel(mo.ranking, -3 / sqrt(13.5), 1e-12, "one-hot: ranking");
    check_rel(mo.score_mean, 0.3125, 1e-12, "one-hot: mean V = mean of column 2");

    /* constant V (every row the same distribution) -> ranking NaN; t = 0 (ties: lowest index) */
    const double Arow[16] = {0.5, 0.25, 0.125, 0.125, 0.5, 0.25, 0.125, 0.125,
                             0.5, 0.25, 0.125, 0.125, 0.5, 0.25, 0.125, 0.125};
    epar_metric_optimal(Arow, I, 4, work, perm, &mo);
    check_true(isnan(mo.ranking), "constant V gives a NaN ranking correlation");
    check_int(mo.theoretical, 0, "constant V: t is the lowest index");
    check_int(mo.actual, 2, "constant V: a still argmax I");
    check_rel(mo.score_similarity, 1.0, 1e-12, "constant V: V(t) = V(a)");
    /* constant I -> s constant -> NaN, a = 0 */
    const double Ic[4] = {0.3, 0.3, 0.3, 0.3};
    epar_metric_optimal(A, Ic, 4, work, perm, &mo);
    check_true(isnan(mo.ranking), "constant I gives a NaN ranking correlation");
    check_int(mo.actual, 0, "constant I: a is the lowest index");

    /* ties in I: two maxima at 1 and 3 -> a = 1 */
    const double Itie[4] = {0.2, 1, 0.5, 1};
    epar_metric_optimal(A, Itie, 4, work, perm, &mo);
    check_int(mo.actual, 1, "tied maxima of I: a is the lowest index");

    /* real softmax rows (sum to 1 only up to rounding) and clustered I: the tie rule must still give the
     * lowest index of the top block, and the row means must be 1/L to rounding */
    {
        enum { L = 48 };
        double S[L * L], Ib[L];
        gsl_rng *r = epar_rng_alloc(7, 0, EPAR_RNG_EXTRA);
        epar_rng_normal(r, S, L * L, 3.0);
        epar_rng_free(r);
        struct epar_attn_cfg cfg = {.L = L, .D = 1, .heads = 1, .scale = 1, .inv_temp = 1};
        epar_attn_softmax_rows(&cfg, NULL, 0, S);
        for (int j = 0; j < L; j++) Ib[j] = (j / 6 == 5) ? 0.9 : 0.1 * (j / 6);
        epar_metric_optimal(S, Ib, L, work, perm, &mo);
        check_int(mo.actual, 30, "clustered I with softmax rows: a = first index of the top block");
        check_true(mo.row_sum_dev < 1e-13, "softmax rows sum to 1 up to rounding (%g)", mo.row_sum_dev);
        double Vn[L], s[L], rv[L], rs[L];
        epar_metric_value(S, Ib, L, Vn);
        epar_metric_row_mean(S, L, s);   /* s = (mean_j A_ij) I_i, as epar_metric_optimal forms it */
        for (int j = 0; j < L; j++) s[j] *= Ib[j];
        for (int j = 0; j < L; j++) { rv[j] = Vn[j]; rs[j] = Ib[j]; }
        check_rel(mo.ranking, naive_spearman(rv, rs, L), 1e-12, "softmax rows: ranking = Spearman of V vs I");
        /* without merging, rounding of the row means could split the tie; merged, s has the ties of I */
        epar_metric_tie_merge(s, L, EPAR_METRIC_TIE_RTOL, perm);
        check_true(s[30] == s[35] && s[30] == s[33], "tie merge restores the exact ties of the top block");
    }

    /* tie merge: values within 1e-12 relative become equal (the smallest); larger gaps stay */
    double x[6] = {1.0, 1.0 + 1e-15, 2.0, 1.0 - 1e-16, 3.0, 1.0 + 1e-9};
    epar_metric_tie_merge(x, 6, EPAR_METRIC_TIE_RTOL, perm);
    check_true(x[0] == x[1] && x[1] == x[3] && x[0] == 1.0 - 1e-16, "near-equal values merged to the smallest");
    check_true(x[5] == 1.0 + 1e-9 && x[2] == 2.0 && x[4] == 3.0, "distinct values untouched");

    /* Spearman (GSL) against the naive average-rank version, with many ties */
    {
        enum { N = 200 };
        double a[N], b[N], w[2 * N];
        gsl_rng *r = epar_rng_alloc(11, 0, EPAR_RNG_EXTRA);
        for (int i = 0; i < N; i++) {
            a[i] = (double)gsl_rng_uniform_int(r, 7);
            b[i] = a[i] + (double)gsl_rng_uniform_int(r, 5);
        }
        epar_rng_free(r);
        check_rel(epar_metric_spearman(a, b, N, w), naive_spearman(a, b, N), 1e-12, "Spearman = naive, with ties");
    }

    /* importance generators: ranges, min-max over the whole (B,L) tensor, shapes */
    {
        enum { B = 3, L = 64 };
        double Im[B * L], I2[B * L];
        for (int t = EPAR_IMP_RANDOM; t <= EPAR_IMP_CLUSTERED; t++) {
            gsl_rng *r = epar_rng_alloc(42, 1, EPAR_RNG_IMPORTANCE);
            check_int(epar_imp_generate((enum epar_imp_type)t, r, B, L, Im), 0, "generate %s", epar_imp_name(t));
            epar_rng_free(r);
            double lo, hi;
            gsl_stats_minmax(&lo, &hi, Im, 1, B * L);
            check_abs(lo, 0.0, 1e-15, "%s: min over the tensor is 0", epar_imp_name(t));
            check_abs(hi, 1.0, 1e-15, "%s: max over the tensor is 1", epar_imp_name(t));
            r = epar_rng_alloc(42, 1, EPAR_RNG_IMPORTANCE);
            epar_imp_generate((enum epar_imp_type)t, r, B, L, I2);
            epar_rng_free(r);
            check_true(!memcmp(Im, I2, sizeof Im), "%s: same stream, same values", epar_imp_name(t));
            if (t == EPAR_IMP_STRUCTURED) {
                check_true(!memcmp(Im, Im + L, L * sizeof *Im), "structured: the same for every item");
                check_abs(Im[16], 1.0, 1e-15, "structured: peak at L/4");
                check_abs(Im[48], 0.0, 1e-15, "structured: trough at 3L/4");
                check_abs(Im[0], 0.5, 1e-15, "structured: 0.5 at 0");
            }
            if (t == EPAR_IMP_SPARSE)
                for (int b = 0; b < B; b++) {
                    int nz = 0;
                    for (int j = 0; j < L; j++) nz += Im[b * L + j] != 0;
                    check_int(nz, L / 10, "sparse: L/10 non-zero positions in item %d", b);
                }
            if (t == EPAR_IMP_CLUSTERED) {
                int flat = 1;
                for (int b = 0; b < B; b++)
                    for (int j = 0; j < L; j++) flat &= Im[b * L + j] == Im[b * L + (j / 8) * 8];
                check_true(flat, "clustered: constant over blocks of L/8");
            }
            if (t == EPAR_IMP_DENSE || t == EPAR_IMP_RANDOM) {
                /* per-item ranges are not normalised separately: at most one item reaches 0 and one 1 */
                int items_with_zero = 0;
                for (int b = 0; b < B; b++) {
                    double l2, h2;
                    gsl_stats_minmax(&l2, &h2, Im + b * L, 1, L);
                    items_with_zero += l2 == 0.0;
                }
                check_int(items_with_zero, 1, "%s: min-max over the whole tensor, not per item", epar_imp_name(t));
            }
        }
    }

    /* short sequences: sparse keeps max(1, L/10) important positions, as the reference */
    {
        double Is[2 * 5];
        gsl_rng *r = epar_rng_alloc(3, 0, EPAR_RNG_IMPORTANCE);
        epar_imp_generate(EPAR_IMP_SPARSE, r, 2, 5, Is);
        epar_rng_free(r);
        for (int b = 0; b < 2; b++) {
            int nz = 0;
            for (int j = 0; j < 5; j++) nz += Is[b * 5 + j] != 0;
            check_int(nz, 1, "sparse at L=5: one important position in item %d", b);
        }
    }

    /* the type-list parser */
    {
        struct epar_optimal_cfg c;
        check_int(epar_exp_optimal_parse_types("random,structured,sparse,dense,clustered", &c), 0, "parse the five");
        check_int(c.n_types, 5, "five types");
        check_int(c.types[1], EPAR_IMP_STRUCTURED, "order kept");
        check_int(epar_exp_optimal_parse_types("norm", &c), 0, "norm parses");
        check_int(epar_exp_optimal_parse_types("", &c), 2, "empty list is a usage error");
        check_int(epar_exp_optimal_parse_types("random,,dense", &c), 2, "empty item is a usage error");
        check_int(epar_exp_optimal_parse_types("random,fancy", &c), 2, "unknown type is a usage error");
        check_int(epar_exp_optimal_parse_types("dense,dense", &c), 2, "repeated type is a usage error");
    }
    return check_summary("test_optimal");
}
