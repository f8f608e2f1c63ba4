#include <math.h>
#include <gsl/gsl_cdf.h>
#include <stdlib.h>
#include <gsl/gsl_sort_double.h>
#include <gsl/gsl_statistics_double.h>
#include "stats.h"

void epar_stats_mean_sd(const double *x, size_t n, double *mean, double *sd)
{
    *mean = n ? gsl_stats_mean(x, 1, n) : NAN;
    *sd = n > 1 ? gsl_stats_sd_m(x, 1, n, *mean) : NAN;
}

void epar_stats_mean_sd_finite(const double *x, size_t stride, size_t n, int ddof, double *scratch, double *mean,
                               double *sd)
{
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (!isnan(x[k * stride])) scratch[m++] = x[k * stride];
    if (!m) {
        *mean = *sd = NAN;
    } else if (ddof) {
        epar_stats_mean_sd(scratch, m, mean, sd);
    } else {
        *mean = gsl_stats_mean(scratch, 1, m);
        *sd = gsl_stats_sd_with_fixed_mean(scratch, 1, m, *mean);
    }
}

double epar_stats_quantile(double level, int df)
{
    double p = 0.5 + level / 2;
    return df > 0 ? gsl_cdf_tdist_Pinv(p, df) : gsl_cdf_ugaussian_Pinv(p);
}

void epar_stats_paired(const double *d, int n, double level, struct epar_stats_paired *r)
{
    *r = (struct epar_stats_paired){n, NAN, NAN, NAN, NAN, NAN, NAN, NAN, 1};
    if (n < 1) return;
    epar_stats_mean_sd(d, (size_t)n, &r->mean, &r->sd);
    if (n < 2 || !isfinite(r->mean) || !isfinite(r->sd) || !(r->sd > 0)) return;
    double se = r->sd / sqrt((double)n), q = epar_stats_quantile(level, n - 1);
    r->degenerate = 0;
    r->t = r->mean / se;
    r->p = 2.0 * gsl_cdf_tdist_Q(fabs(r->t), (double)(n - 1));
    r->lo = r->mean - q * se;
    r->hi = r->mean + q * se;
    r->mde = epar_stats_mde(r->sd, n, level, 0.8, 1);
}

void epar_stats_holm(const double *p, double *adj, int m)
{
    int k = 0, idx[EPAR_STATS_MAX_TESTS];
    for (int i = 0; i < m; i++) adj[i] = NAN;
    if (m > EPAR_STATS_MAX_TESTS) return;   /* beyond the capacity: nothing adjusted (a smaller family would understate) */
    for (int i = 0; i < m; i++) {
        if (isfinite(p[i])) idx[k++] = i;
    }
    for (int i = 1; i < k; i++)   /* insertion sort by p, ties by index */
        for (int j = i; j > 0 && p[idx[j]] < p[idx[j - 1]]; j--) {
            int tmp = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = tmp;
        }
    double run = 0;
    for (int i = 0; i < k; i++) {
        run = fmax(run, fmin(1.0, (double)(k - i) * p[idx[i]]));
        adj[idx[i]] = run;
    }
}

double epar_stats_mde(double sd, int n, double level, double power, int tests)
{
    if (!isfinite(sd) || n < 2 || tests < 1) return NAN;
    double each = 1.0 - (1.0 - power) / tests;
    return (epar_stats_quantile(level, n - 1) + gsl_cdf_tdist_Pinv(each, n - 1)) * sd / sqrt((double)n);
}

void epar_stats_group_medians(const double *x, const double *g, int n, double level, double *mean, double *lo,
                              double *hi, int *groups)
{
    *mean = *lo = *hi = NAN;
    *groups = 0;
    int G = 0;
    for (int i = 0; i < n; i++) G = g[i] + 1 > G ? (int)g[i] + 1 : G;
    double *v = malloc(((size_t)n + (size_t)G + 1) * sizeof *v), *med = v + n;
    if (!v) return;
    for (int h = 0; h < G; h++) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if ((int)g[i] == h) v[m++] = x[i];
        if (!m) continue;
        gsl_sort(v, 1, (size_t)m);
        med[(*groups)++] = gsl_stats_median_from_sorted_data(v, 1, (size_t)m);
    }
    double sd;
    if (*groups) epar_stats_mean_sd(med, (size_t)*groups, mean, &sd);
    if (*groups >= 2) {
        double half = epar_stats_quantile(level, *groups - 1) * sd / sqrt((double)*groups);
        *lo = *mean - half;
        *hi = *mean + half;
    }
    free(v);
}
