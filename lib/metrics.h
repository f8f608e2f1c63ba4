/* metrics: what epar measures on attention matrices. A is (L,L) row-major (rows = queries) unless
 * stated; batched arguments are (B,L,L). Ties in argmax go to the smallest index; NaN never wins. */
#ifndef EPAR_METRICS_H
#define EPAR_METRICS_H

#include <stddef.h>

/* V (L) = A (L,L) . imp (L)  (BLAS dgemv). (No parameter is called I: <complex.h>, which OpenBLAS's cblas.h
 * includes, defines I as a macro.) */
void epar_metric_value(const double *A, const double *imp, int L, double *V);
/* argmax under the tie rule: the lowest index of the top tie group, where a tie group is a run of sorted values
 * whose consecutive gaps are <= rtol * max|x| (the groups of epar_metric_tie_merge, so this equals the plain argmax
 * of the merged vector, the first largest entry); 0 if all NaN. Every argmax taken on BLAS output goes through this: rounding that
 * differs between BLAS kernels (~1e-16 relative) cannot reorder values that are tied. NaN never wins. */
size_t epar_metric_argmax_tied(const double *x, size_t n, double rtol);

/* H (L): per-row entropy -sum_{A>0} A ln A. */
void epar_metric_row_entropy(const double *A, int L, double *H);
/* the entropy -sum_{a>0} a ln a (nats, in double) of one row a (n) of a trained model's float attention; *nonzero (may
 * be NULL): its count of positive weights. With AVX2 the terms 4 at a time (libmvec's log, 4 lane sums), else one at a
 * time in index order: the two within about 1e-15 of each other */
double epar_metric_entropy_f(const float *a, int n, int *nonzero);
/* Hrow (L): the reference's entropy of each row, -sum_j A_ij log(A_ij + 1e-8). */
void epar_metric_entropy_ref_rows(const double *A, int L, double *Hrow);
/* D (L): mean attended distance sum_j A_ij |i-j|. */
void epar_metric_mean_distance(const double *A, int L, double *D);
/* W (L): local mass sum_{|i-j|<=w} A_ij. */
void epar_metric_local_mass(const double *A, int L, int w, double *W);

/* One head's attention A (L,L) summarised (compare's mechanism table), out[EPAR_HEAD_COUNT]:
 *   ENT    mean over rows of the row entropy (epar_metric_row_entropy)
 *   NENT   mean over rows of H_i / ln n_i, n_i = the row's non-zero weights (0 when n_i <= 1)
 *   DIST   mean over rows of the mean attended distance (epar_metric_mean_distance)
 *   LOCAL  mean over rows of the local mass within w (epar_metric_local_mass)
 *   SPARS  share of exact zeros among the allowed pairs (j <= i when causal)
 *   RMID, RMAX  retention: mean allowed weight at distance L/2 (L-1) over the mean at distance 0; NaN when
 *          undefined. Returns EPAR_ENOMEM (out untouched) if its (3L) scratch cannot be allocated. */
enum { EPAR_HEAD_ENT, EPAR_HEAD_NENT, EPAR_HEAD_DIST, EPAR_HEAD_LOCAL, EPAR_HEAD_SPARS, EPAR_HEAD_RMID, EPAR_HEAD_RMAX,
       EPAR_HEAD_COUNT };
int epar_metric_head_summary(const double *A, int L, int causal, int w, double *out);
/* Binned mutual information (nats) between the distance |i-j| (8 equal-width bins) and the weight A_ij
 * (8 equal-count bins by rank; tied weights, by the tie rule, share their mid-rank so uniform attention has MI 0)
 * over the pairs of A (L,L) (j <= i when causal). work is (L*L) doubles and idx (L*L) size_t. NaN on allocation
 * failure. */
double epar_metric_distance_mi(const double *A, int L, int causal, double *work, size_t *idx);

/* Per key column j of A (L,L), statistics over the queries i: mean, population sd (ddof=0, as the
 * reference's numpy .std()), max, min. */
void epar_metric_key_stats(const double *A, int L, double *mean, double *sd, double *max, double *min);

/* Position correlation C (L,L): Pearson correlation between query rows i and j of A, each flattened over
 * the batch (vectors of length B*L), NaN (zero variance) -> 0. A is (B,L,L). work is (L, B*L).
 * One centring pass and one BLAS dsyrk, not L^2 separate correlations. */
void epar_metric_position_correlation(const double *A, int B, int L, double *C, double *work);

/* Spearman rank correlation of x, y (n) with average ranks for ties (GSL); NaN if either is constant.
 * work is (2n). */
double epar_metric_spearman(const double *x, const double *y, size_t n, double *work);

/* Sensitivity metrics (docs/PROTOCOLS.md Experiment 3). A is (B,L,L).
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

/* ---- Optimal position: the consistency family (docs/PROTOCOLS.md Experiment 2), one batch item ----
 * V = A I ("theoretical" position scores), s_i = (mean_j A_ij) I_i ("actual" scores).
 * Because every row of a softmax sums to 1, s = I/L up to rounding, so a = argmax s is argmax I.
 * Ties: values that agree to EPAR_METRIC_TIE_RTOL times the largest |value| are ties (this absorbs the
 * last-bit rounding of the row means, so equal I_i stay equal); argmax takes the lowest tied index, and
 * the ranking correlation gives tied values their average rank (Spearman, GSL). */
#define EPAR_METRIC_TIE_RTOL 1e-12

struct epar_metric_optimal {
    int theoretical;            /* t = argmax_i V(i) */
    int actual;                 /* a = argmax_i (mean_j A_ij) I_i */
    double score_similarity;    /* 1 - |V(t) - V(a)| / (V(t) + 1e-8) */
    double proximity;           /* 1 - |t - a| / L */
    double consistency;         /* (score_similarity + proximity) / 2 */
    double ranking;             /* Spearman of V against s; NaN when either is constant (after ties) */
    double score_mean;          /* mean of V */
    double row_sum_dev;         /* max_i |L mean_j A_ij - 1|: how far the rows are from summing to 1 */
};

/* m (L) <- row means of A (L,L). */
void epar_metric_row_mean(const double *A, int L, double *m);
/* In place on x (n): every group of values whose consecutive sorted gaps are <= rtol * max|x| is set to
 * the group's smallest value, so ties are exact. perm is (n) scratch. */
void epar_metric_tie_merge(double *x, size_t n, double rtol, size_t *perm);
/* 1 - |V(t) - V(a)| / (V(t) + 1e-8) for V (L). */
double epar_metric_score_similarity(const double *V, size_t t, size_t a);
/* 1 - |t - a| / L */
double epar_metric_proximity(size_t t, size_t a, int L);
/* The consistency family from given scores: V (L) theoretical, s (L) actual (e.g. I itself when rows sum to
 * 1). t, a by epar_metric_argmax_tied; fills theoretical, actual, score_similarity, proximity, consistency and
 * score_mean (not ranking, not row_sum_dev). The one implementation of the §4.3 consistency. */
void epar_metric_consistency(const double *V, const double *s, int L, struct epar_metric_optimal *out);
/* All of the above for one item: A (L,L), I (L). work is (6L) doubles, perm (L). */
void epar_metric_optimal(const double *A, const double *imp, int L, double *work, size_t *perm,
                         struct epar_metric_optimal *out);

#endif
