/* lib/metrics head summary (used by compare) against the worked example of docs/MECHANISMS.md §1, the distance MI, and the
 * --set / --mechanisms parsing of the experiment. */
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "experiments/analysis/compare.h"
#include "lib/metrics.h"
#include "check.h"

int main(void)
{
    /* §1: rows A_0 = [0.7,0.1,0.1,0.1], A_1 uniform, A_2 = [0.1,0.2,0.3,0.4], A_3 = [0,0,0,1] */
    const double A[16] = {0.7, 0.1, 0.1, 0.1, 0.25, 0.25, 0.25, 0.25, 0.1, 0.2, 0.3, 0.4, 0, 0, 0, 1};
    double out[EPAR_HEAD_COUNT];
    check_int(epar_metric_head_summary(A, 4, 0, 0, out), EPAR_OK, "head summary");
    check_rel(out[0], (0.940448 + 1.38629 + 1.27985 + 0) / 4, 1e-5, "mean entropy of the worked rows");
    check_rel(out[1], (0.678390 + 1 + 0.923220 + 0) / 4, 1e-5, "mean normalised entropy (0 when |S_i| = 1)");
    check_rel(out[2], (0.6 + 1.0 + 0.8 + 0) / 4, 1e-5, "mean attended distance");
    check_rel(out[3], (0.7 + 0.25 + 0.3 + 1) / 4, 1e-12, "local mass w=0 = mean diagonal");
    check_rel(out[4], 3.0 / 16, 1e-12, "sparsity: 3 exact zeros of 16");
    /* retention: uniform attention keeps everything */
    double U[64];
    for (int t = 0; t < 64; t++) U[t] = 0.125;
    check_int(epar_metric_head_summary(U, 8, 0, 1, out), EPAR_OK, "head summary");
    check_rel(out[5], 1, 1e-12, "uniform: retention at L/2 is 1");
    check_rel(out[6], 1, 1e-12, "uniform: retention at L-1 is 1");
    check_rel(out[3], (2 * 2 + 6 * 3) / 8.0 * 0.125, 1e-12, "uniform: local mass w=1");
    /* MI: uniform attention carries no distance information; a banded matrix carries some */
    double work[64];
    size_t idx[64];
    check_abs(epar_metric_distance_mi(U, 8, 0, work, idx), 0, 1e-15, "MI of uniform attention is 0");
    double Bd[64];
    for (int i = 0; i < 8; i++) {
        double s = 0;
        for (int j = 0; j < 8; j++) s += (Bd[i * 8 + j] = exp(-abs(i - j)));
        for (int j = 0; j < 8; j++) Bd[i * 8 + j] /= s;
    }
    double mi = epar_metric_distance_mi(Bd, 8, 0, work, idx);
    check_true(mi > 0.3, "MI of distance-decaying attention is large (%g nats)", mi);
    check_true(mi <= log(8.0) + 1e-12, "MI bounded by ln 8");

    /* configuration: --set and --mechanisms */
    struct epar_compare_cfg *cfg = calloc(1, sizeof *cfg);
    for (int id = 0; id < EPAR_MECH_COUNT; id++) epar_mech_defaults((enum epar_mech_id)id, cfg->p[id]);
    check_int(epar_exp_compare_set(cfg, "alibi.max_bias=4"), EPAR_OK, "--set alibi.max_bias=4");
    check_rel(cfg->p[EPAR_MECH_ALIBI][0], 4, 0, "max_bias set");
    check_int(epar_exp_compare_set(cfg, "alibi.max_bias=x"), EPAR_EINVAL, "non-number refused");
    check_int(epar_exp_compare_set(cfg, "alibi=4"), EPAR_EINVAL, "missing parameter refused");
    check_int(epar_exp_compare_set(cfg, "rop.base=4"), EPAR_EINVAL, "unknown mechanism refused");
    check_int(epar_exp_compare_select(cfg, "rope,alibi"), EPAR_OK, "select two");
    check_true(cfg->n_mech == 2 && cfg->mech[0] == EPAR_MECH_ROPE && cfg->mech[1] == EPAR_MECH_ALIBI, "order kept");
    check_int(epar_exp_compare_select(cfg, "rope,rope"), EPAR_EINVAL, "duplicate refused");
    check_int(epar_exp_compare_select(cfg, ""), EPAR_EINVAL, "empty refused");
    free(cfg);
    return check_summary("test_compare_metrics");
}
