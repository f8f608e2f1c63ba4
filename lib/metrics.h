/* metrics: what epar measures on attention matrices. A is (L,L) row-major (rows = queries) unless
 * stated; batched arguments are (B,L,L). Ties in argmax go to the smallest index; NaN never wins. */
#ifndef EPAR_METRICS_H
#define EPAR_METRICS_H

#include <stddef.h>

/* V (L) = A (L,L) . I (L)  (BLAS dgemv) */
void epar_metric_value(const double *A, const double *I, int L, double *V);
/* index of the largest entry, first one on ties; 0 if all NaN */
size_t epar_metric_argmax(const double *x, size_t n);

/* H (L): per-row entropy -sum_{A>0} A ln A. */
void epar_metric_row_entropy(const double *A, int L, double *H);
/* The reference's entropy: mean over rows of -sum_j A_ij log(A_ij + 1e-8). */
double epar_metric_entropy_ref(const double *A, int L);
/* D (L): mean attended distance sum_j A_ij |i-j|. */
void epar_metric_mean_distance(const double *A, int L, double *D);
/* W (L): local mass sum_{|i-j|<=w} A_ij. */
void epar_metric_local_mass(const double *A, int L, int w, double *W);

/* Per key column j of A (L,L), statistics over the queries i: mean, sample sd (n-1), max, min. */
void epar_metric_key_stats(const double *A, int L, double *mean, double *sd, double *max, double *min);

/* Position correlation C (L,L): Pearson correlation between query rows i and j of A, each flattened over
 * the batch (vectors of length B*L), NaN (zero variance) -> 0. A is (B,L,L). work is (L, B*L).
 * One centring pass and one BLAS dsyrk, not L^2 separate correlations. */
void epar_metric_position_correlation(const double *A, int B, int L, double *C, double *work);

/* Spearman rank correlation of x, y (n) with average ranks for ties (GSL); NaN if either is constant.
 * work is (2n). */
double epar_metric_spearman(const double *x, const double *y, size_t n, double *work);

/* Sensitivity metrics (REPRODUCTION.md Experiment 3). A is (B,L,L).
 * batch_variance: mean over the n entries of the unbiased (n-1) variance across the B items of x (B,n)
 *   (the reference's attention_concentration with n = L*L); NaN when B < 2.
 * locality: mean over items and queries of sum_{|i-j|<=w} A_bij (w = 1 in the reference).
 * distance_profile: prof (L), prof[d] = mean of A_bij over every item and every pair with |i-j| = d
 *   (the mean attention weight a pair at distance d receives; 1/L everywhere for uniform rows).
 * matrix_stats: mean and unbiased sd of all L*L entries of M (L,L), and the mean of the entries off the
 *   diagonal i = j (the diagonal of a correlation matrix is all ones). */
double epar_metric_batch_variance(const double *x, int B, size_t n);
double epar_metric_locality(const double *A, int B, int L, int w);
void epar_metric_distance_profile(const double *A, int B, int L, double *prof);
void epar_metric_matrix_stats(const double *M, int L, double *mean, double *sd, double *offdiag_mean);

/* mean and sample sd (n-1) of x (n); sd = 0 when n < 2 */
void epar_metric_mean_sd(const double *x, size_t n, double *mean, double *sd);

#endif
