/* stats: the statistics epar's comparisons across seeds rest on — mean and sample sd, Student-t intervals, the
 * paired comparison of two mechanisms seed by seed, Holm's step-down adjustment and detectable effects. One
 * implementation for the benchmark's tables, the audit's rules and compare. Prefix epar_stats_.
 *
 * Conventions: `level` is a two-sided confidence level (0.95); NaN inputs are not skipped unless stated (a NaN
 * anywhere gives NaN results), so a missing value is never silently averaged away. */
#ifndef EPAR_STATS_H
#define EPAR_STATS_H

#include <stddef.h>

/* mean and sample sd (n - 1) of x (n): the spread across seeds, used everywhere one is reported. sd is NaN when n < 2
 * (one seed has no spread: a claim judged by spread then says so instead of demanding equality); both NaN when n = 0 */
void epar_stats_mean_sd(const double *x, size_t n, double *mean, double *sd);
/* the same over the non-NaN values x[k * stride], k < n (the ones an experiment could not measure left out, stated
 * where it is used); ddof 1: the sample sd as epar_stats_mean_sd, ddof 0: the population sd (numpy's np.std, the
 * reference's spread over runs; 0 with one value). Both NaN when no value is left. scratch: (n) */
void epar_stats_mean_sd_finite(const double *x, size_t stride, size_t n, int ddof, double *scratch, double *mean,
                               double *sd);

/* the two-sided quantile of `level`: t_{(1+level)/2, df}, or the normal's when df <= 0 */
double epar_stats_quantile(double level, int df);

/* One paired comparison across n seeds, from the per-seed differences d (n): their mean and sample sd, Student's t
 * and its two-sided p, the interval mean +- t_{(1+level)/2, n-1} sd / sqrt(n), and the minimum detectable effect of
 * that test at 80 % power (epar_stats_mde with one test). A comparison whose differences have no spread (sd 0, e.g.
 * every cell at 1.0 on both sides) or fewer than 2 seeds carries no information: t, p, lo, hi and mde are NaN and
 * `degenerate` is 1, so it can never count as a certain [0, 0] interval. */
struct epar_stats_paired {
    int n;
    double mean, sd;
    double t, p;
    double lo, hi;
    double mde;
    int degenerate;
};
void epar_stats_paired(const double *d, int n, double level, struct epar_stats_paired *r);

/* Holm's step-down adjustment of m p-values into adj (m): NaN p-values take no part and stay NaN; ties are ordered
 * by index, so the result is deterministic. A larger family than EPAR_STATS_MAX_TESTS gives NaN throughout. */
#define EPAR_STATS_MAX_TESTS 256
void epar_stats_holm(const double *p, double *adj, int m);

/* The smallest true effect a level-`level` two-sided paired t-test over n seeds with differences of sd `sd` detects
 * with probability `power`: (t_{(1+level)/2, n-1} + t_{power', n-1}) sd / sqrt(n). With tests > 1 it is the effect
 * at which an intersection-union test of `tests` such comparisons (every one must reject, each at the level) succeeds
 * with probability at least `power` by the union bound: each comparison's power is then 1 - (1 - power) / tests
 * (conservative: the comparisons' shared noise only raises the joint power). NaN when sd is not finite or n < 2. */
double epar_stats_mde(double sd, int n, double level, double power, int tests);

/* The mean of group medians with its t interval: n values x[i], each measured in group g[i] (an integer >= 0 stored as
 * a double; the benchmark's cost cell: the generation of freshly set-up models a pair of steps ran on). Each group's
 * median; their mean, and its t interval at `level` across the groups (groups - 1 degrees of freedom): the groups are
 * the independent units, so an effect shared within a group (where the models' memory landed) is in the interval.
 * *groups: groups with values; lo, hi NaN with fewer than 2; mean NaN with none. */
void epar_stats_group_medians(const double *x, const double *g, int n, double level, double *mean, double *lo,
                              double *hi, int *groups);

#endif
