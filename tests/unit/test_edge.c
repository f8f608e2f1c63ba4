/* Numerical edge cases with defined behaviour (docs/FAILURES.md "Failure behaviour"): overflowing scores (huge
 * alpha, tiny temperature), beta = 0, gamma = 0, L = 1, all-equal scores, fully masked rows, NaN
 * reaching the softmax and the metrics; csvout never replaces a device. */
#include <stdlib.h>
#include <sys/stat.h>
#include "lib/attn.h"
#include "lib/csvout.h"
#include "lib/err.h"
#include "lib/metrics.h"
#include "lib/stats.h"
#include "lib/posfx.h"
#include "check.h"

enum { L = 4 };

/* softmax of one L=4 score matrix S (L,L) with an optional factor/mask, in place */
static int softmax(double *S, const double *factor, const unsigned char *mask, double inv_temp,
                   enum epar_empty_policy empty)
{
    struct epar_attn_cfg cfg = {.L = L, .D = L, .heads = 1, .scale = 1, .inv_temp = inv_temp, .empty = empty};
    struct epar_attn_mods mods = {.factor = factor, .mask = mask};
    return epar_attn_softmax_rows(&cfg, &mods, 0, S);
}

static double row_sum(const double *r)
{
    double s = 0;
    for (int j = 0; j < L; j++) s += r[j];
    return s;
}

int main(void)
{
    double S[L * L], P[L * L];

    /* all-equal scores: exactly uniform */
    for (int t = 0; t < L * L; t++) S[t] = 3.7;
    softmax(S, NULL, NULL, 1.0, EPAR_EMPTY_SELF);
    for (int t = 0; t < L * L; t++) check_abs(S[t], 0.25, 0, "equal scores -> exactly 1/L (entry %d)", t);

    /* huge alpha: P ~ 1e308, scores overflow to +-inf; the softmax limit (hard attention), no NaN */
    struct epar_posfx huge = {EPAR_FORM_ENHANCED, 1e308, 2.0, 1.5};
    epar_posfx_matrix(&huge, L, P);
    const double s0[L] = {0.5, 3.0, -3.0, 3.0}; /* 3 * P overflows at distances 0..2, 0.5 * P never */
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++) S[i * L + j] = s0[j];
    softmax(S, P, NULL, 1.0, EPAR_EMPTY_SELF);
    for (int i = 0; i < L; i++) {
        check_rel(row_sum(S + i * L), 1.0, 1e-15, "huge alpha: row %d sums to 1", i);
        for (int j = 0; j < L; j++) check_true(!isnan(S[i * L + j]), "huge alpha: no NaN (row %d, key %d)", i, j);
    }
    /* row 1: keys 1 and 3 both overflow to +inf -> 1/2 each; the others 0 */
    check_abs(S[1 * L + 1], 0.5, 0, "overflow to +inf: tied maxima share the row");
    check_abs(S[1 * L + 3], 0.5, 0, "overflow to +inf: tied maxima share the row (key 3)");
    check_abs(S[1 * L + 0], 0.0, 0, "overflow to +inf: finite entries get 0");
    /* every score -inf (huge alpha on negative scores): uniform over the allowed keys */
    for (int t = 0; t < L * L; t++) S[t] = -1.0;
    softmax(S, P, NULL, 1e10, EPAR_EMPTY_SELF); /* -1 * 1e308 * 1e10 = -inf everywhere */
    for (int t = 0; t < L * L; t++) check_abs(S[t], 0.25, 0, "all scores -inf: uniform (entry %d)", t);
    /* large but finite scores: ordinary softmax, the maximum takes (almost) everything */
    for (int t = 0; t < L * L; t++) S[t] = (t % L) * 1e300;
    softmax(S, NULL, NULL, 1.0, EPAR_EMPTY_SELF);
    check_abs(S[L - 1], 1.0, 0, "finite huge scores: the maximum gets 1");
    check_abs(S[0], 0.0, 0, "finite huge scores: the others get 0");

    /* beta = 0: no decay, P = alpha (basic) and alpha (enhanced, any gamma) at every distance */
    struct epar_posfx b0 = {EPAR_FORM_BASIC, 2.0, 0.0, 0.5}, e0 = {EPAR_FORM_ENHANCED, 2.0, 0.0, 0.5};
    for (int d = 0; d < 5; d++) {
        check_rel(epar_posfx_value(&b0, d, 5), 2.0, 1e-15, "beta 0 basic: P(%d) = alpha", d);
        check_rel(epar_posfx_value(&e0, d, 5), 2.0, 1e-15, "beta 0 enhanced: P(%d) = alpha", d);
        check_abs(epar_posfx_deriv(&e0, d, 5), 0.0, 0, "beta 0: dP/dd = 0");
    }
    check_rel(epar_posfx_infimum(&b0), 2.0, 0, "beta 0 basic: infimum is alpha (not 0)");
    /* gamma = 0: the enhanced form is the constant alpha whatever beta */
    struct epar_posfx g0 = {EPAR_FORM_ENHANCED, 1.5, 3.0, 0.0};
    for (int d = 0; d < 5; d++) check_rel(epar_posfx_value(&g0, d, 5), 1.5, 1e-15, "gamma 0: P(%d) = alpha", d);
    check_rel(epar_posfx_infimum(&g0), 1.5, 1e-15, "gamma 0: infimum alpha/(1+0) = alpha");
    check_true(epar_posfx_validate(&g0) == EPAR_OK && epar_posfx_validate(&b0) == EPAR_OK,
               "beta = 0 and gamma = 0 are valid");

    /* L = 1: P = alpha*(1+gamma)/(1+gamma) = alpha; attention = 1; pos* = 0 */
    {
        struct epar_posfx e = {EPAR_FORM_ENHANCED, 1.0, 2.0, 1.5};
        double P1, S1 = -7.0, I1 = 0.3, V1;
        epar_posfx_matrix(&e, 1, &P1);
        check_rel(P1, 1.0, 1e-15, "L = 1: P = alpha");
        struct epar_attn_cfg cfg = {.L = 1, .D = 1, .heads = 1, .scale = 1, .inv_temp = 1};
        struct epar_attn_mods mods = {.factor = &P1};
        epar_attn_softmax_rows(&cfg, &mods, 0, &S1);
        check_abs(S1, 1.0, 0, "L = 1: the only key gets weight 1");
        epar_metric_value(&S1, &I1, 1, &V1);
        check_rel(V1, 0.3, 1e-15, "L = 1: V = I");
        check_int((long)epar_metric_argmax_tied(&V1, 1, EPAR_METRIC_TIE_RTOL), 0, "L = 1: pos* = 0");
    }

    /* fully masked rows: the empty-row policy, counted */
    {
        unsigned char M[L * L];
        for (int t = 0; t < L * L; t++) M[t] = 1;
        for (int j = 0; j < L; j++) M[2 * L + j] = 0; /* row 2 has no allowed key */
        for (int t = 0; t < L * L; t++) S[t] = t * 0.1;
        check_int(softmax(S, NULL, M, 1.0, EPAR_EMPTY_SELF), 1, "one fully masked row is reported");
        for (int j = 0; j < L; j++) check_abs(S[2 * L + j], j == 2 ? 1.0 : 0.0, 0, "EMPTY_SELF: row 2 attends to itself");
        for (int t = 0; t < L * L; t++) S[t] = t * 0.1;
        check_int(softmax(S, NULL, M, 1.0, EPAR_EMPTY_ZERO), 1, "EMPTY_ZERO: counted");
        check_abs(row_sum(S + 2 * L), 0.0, 0, "EMPTY_ZERO: row 2 is all zero");
        check_rel(row_sum(S + 1 * L), 1.0, 1e-15, "other rows still sum to 1");
        /* mask everything: every row empty */
        for (int t = 0; t < L * L; t++) M[t] = 0;
        check_int(softmax(S, NULL, M, 1.0, EPAR_EMPTY_SELF), L, "all masked: every row reported empty");
        for (int i = 0; i < L; i++) check_abs(S[i * L + i], 1.0, 0, "all masked: EMPTY_SELF diagonal");
    }

    /* NaN reaching the softmax (e.g. from a user-provided score or input file): the row becomes NaN in
     * every allowed entry, other rows are untouched; masked entries stay 0 */
    {
        unsigned char M[L * L];
        for (int t = 0; t < L * L; t++) M[t] = 1;
        M[1 * L + 3] = 0;
        for (int t = 0; t < L * L; t++) S[t] = 0.1 * t;
        S[1 * L + 2] = NAN;
        softmax(S, NULL, M, 1.0, EPAR_EMPTY_SELF);
        for (int j = 0; j < 3; j++) check_true(isnan(S[1 * L + j]), "NaN score: allowed entry %d of its row is NaN", j);
        check_abs(S[1 * L + 3], 0.0, 0, "NaN score: a masked entry stays 0");
        check_rel(row_sum(S), 1.0, 1e-15, "NaN score: other rows unaffected");
        check_rel(row_sum(S + 2 * L), 1.0, 1e-15, "NaN score: other rows unaffected (row 2)");
        /* metrics on a NaN row: V and entropy propagate NaN; argmax skips NaN; all-NaN -> index 0 */
        double I[L] = {1, 2, 3, 4}, V[L], H[L];
        epar_metric_value(S, I, L, V);
        check_true(isnan(V[1]) && !isnan(V[0]), "V = A.I: NaN only in the NaN row");
        epar_metric_row_entropy(S, L, H);
        check_true(!isnan(H[0]), "row entropy of a clean row is a number");
        double Hr[L];
        epar_metric_entropy_ref_rows(S, L, Hr);
        check_true(isnan(Hr[1]) && !isnan(Hr[0]), "reference entropy: NaN only in the NaN row");
        double vn[4] = {1.0, NAN, 3.0, 2.0};
        check_int((long)epar_metric_argmax_tied(vn, 4, EPAR_METRIC_TIE_RTOL), 2, "argmax skips NaN");
        double all_nan[3] = {NAN, NAN, NAN};
        check_int((long)epar_metric_argmax_tied(all_nan, 3, EPAR_METRIC_TIE_RTOL), 0, "argmax of all-NaN is 0 (documented; callers check)");
        double mean, sd;
        epar_stats_mean_sd(V, L, &mean, &sd);
        check_true(isnan(mean), "mean of values with a NaN is NaN");
        /* NaN written to a CSV is the literal "nan" */
        char buf[32];
        epar_csv_format_number(NAN, buf, sizeof buf);
        check_true(!strcmp(buf, "nan"), "NaN is written as 'nan'");
        epar_csv_format_number(-INFINITY, buf, sizeof buf);
        check_true(!strcmp(buf, "-inf"), "-inf is written as '-inf'");
    }

    /* a temperature whose inverse overflows is refused before any softmax */
    {
        struct epar_attn_cfg cfg = {.L = 2, .D = 2, .heads = 1, .scale = 1, .inv_temp = 1.0 / 1e-320};
        check_int(epar_attn_cfg_validate(&cfg), EPAR_EINVAL, "1/T = inf is refused");
    }

    /* csvout never writes over or renames a device node */
    {
        struct epar_table *t = epar_csv_new("a,b");
        epar_csv_append(t, "dd", 1.0, 2.0);
        struct stat before, after;
        int have = stat("/dev/full", &before) == 0;
        check_int(epar_csv_write(t, "/dev/full"), EPAR_EIO, "csv write to /dev/full refused");
        check_true(strstr(epar_err_message(), "not a regular file") != NULL, "message says why: %s",
                   epar_err_message());
        if (have) {
            check_true(stat("/dev/full", &after) == 0 && S_ISCHR(after.st_mode) && after.st_rdev == before.st_rdev,
                       "/dev/full is still the same character device");
        }
        epar_csv_free(t);
    }
    return check_summary("test_edge");
}
