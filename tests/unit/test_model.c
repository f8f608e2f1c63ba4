/* model: layer shapes and PyTorch-default init ranges, the adaptive modules' output ranges, the fusion
 * arithmetic on a hand-made case, and the one-pass row metrics of the when-to-use sweep (uniform rows:
 * entropy ln L; random rows: against the naive metrics of lib/metrics). */
#include <stdlib.h>
#include <gsl/gsl_statistics_double.h>
#include "lib/metrics.h"
#include "lib/model.h"
#include "lib/posfx.h"
#include "lib/rng.h"
#include "experiments/analysis/adaptive.h"
#include "check.h"

static void range(const double *x, size_t n, double *lo, double *hi)
{
    gsl_stats_minmax(lo, hi, x, 1, n);
}

int main(void)
{
    gsl_rng *r = epar_rng_alloc(42, 0, EPAR_RNG_WEIGHTS);

    /* Linear(64,32): W (32,64), b (32), both in U(-1/8, 1/8), and they fill the range */
    struct epar_model_linear l;
    check_int(epar_model_linear_alloc(&l, 64, 32), 0, "linear alloc");
    check_int(l.in * 100 + l.out, 64 * 100 + 32, "linear shape in=64 out=32");
    epar_model_linear_init(&l, r);
    double lo, hi;
    range(l.W, 64 * 32, &lo, &hi);
    check_true(lo >= -0.125 && hi <= 0.125, "linear W within +-1/sqrt(64)");
    check_true(lo < -0.12 && hi > 0.12, "linear W spans +-1/sqrt(64) (not a narrower init)");
    range(l.b, 32, &lo, &hi);
    check_true(lo >= -0.125 && hi <= 0.125 && hi - lo > 0.1, "linear b within and spanning +-1/sqrt(fan_in)");
    /* forward = naive x W^T + b on 3 rows */
    double x[3 * 64], y[3 * 32];
    for (int t = 0; t < 3 * 64; t++) x[t] = sin(0.37 * t + 0.2);
    epar_model_linear_forward(&l, x, 3, y);
    double worst = 0;
    for (int n = 0; n < 3; n++)
        for (int o = 0; o < 32; o++) {
            double s = l.b[o];
            for (int i = 0; i < 64; i++) s += x[n * 64 + i] * l.W[o * 64 + i];
            if (fabs(s - y[n * 32 + o]) > worst) worst = fabs(s - y[n * 32 + o]);
        }
    check_abs(worst, 0, 1e-12, "linear forward (BLAS) = naive x W^T + b");
    epar_model_linear_free(&l);
    check_true(epar_model_linear_alloc(&l, 0, 3) == 2, "linear in=0 refused (EINVAL)");

    /* Embedding(10,64) ~ N(0,1) */
    struct epar_model_embedding e;
    epar_model_embedding_alloc(&e, 10, 64);
    epar_model_embedding_init(&e, r);
    double mean = gsl_stats_mean(e.W, 1, 640), sd = gsl_stats_sd(e.W, 1, 640);
    check_abs(mean, 0, 0.15, "embedding mean ~ 0 (640 draws, 3.8 se)");
    check_abs(sd, 1, 0.1, "embedding sd ~ 1");
    int ids[2] = {7, 2};
    double ey[128];
    epar_model_embedding_forward(&e, ids, 2, ey);
    check_rel(ey[64 + 5], e.W[2 * 64 + 5], 0, "embedding row lookup");
    epar_model_embedding_free(&e);

    /* activations */
    double a[4] = {-2.5, 0, 1.25, 3};
    epar_model_relu(a, 4);
    check_true(a[0] == 0 && a[1] == 0 && a[2] == 1.25 && a[3] == 3, "relu");
    double s[2] = {0, log(3.0)};
    epar_model_sigmoid(s, 2);
    check_rel(s[0], 0.5, 1e-15, "sigmoid(0) = 1/2");
    check_rel(s[1], 0.75, 1e-15, "sigmoid(ln 3) = 3/4");
    double sm[6] = {1, 2, 3, 1000, 1000, 1000};
    epar_model_softmax_rows(sm, 2, 3);
    check_rel(sm[2], 1 / (1 + exp(-1) + exp(-2)), 1e-12, "softmax row 0 (max-shifted)");
    check_rel(sm[4], 1.0 / 3, 1e-15, "softmax of large equal logits = 1/3");
    /* dropout: off = identity; on = zeros about p and survivors scaled by 1/(1-p) */
    double dr[10000];
    for (int t = 0; t < 10000; t++) dr[t] = 2.0;
    epar_model_dropout(dr, 10000, 0.1, NULL);
    check_rel(dr[17], 2.0, 0, "dropout without a stream is the identity");
    gsl_rng *rd = epar_rng_alloc(1, 0, EPAR_RNG_EXTRA);
    epar_model_dropout(dr, 10000, 0.1, rd);
    int zeros = 0, scaled = 0;
    for (int t = 0; t < 10000; t++) {
        zeros += dr[t] == 0;
        scaled += fabs(dr[t] - 2.0 / 0.9) < 1e-15;
    }
    check_int(zeros + scaled, 10000, "dropout: every entry zeroed or scaled by 1/(1-p)");
    check_abs(zeros / 10000.0, 0.1, 0.012, "dropout zeroes about p = 0.1");
    epar_rng_free(rd);

    /* the adaptive modules at D = 16 */
    struct epar_model_adaptive m;
    check_int(epar_model_adaptive_alloc(&m, 16, 10, 64, 5, 0.1), 0, "adaptive alloc D=16");
    check_int(m.task_g1.in * 1000 + m.task_g1.out, 64 * 1000 + 16, "task generator 1: Linear(64, D)");
    check_int(m.task_g2.in * 1000 + m.task_g2.out, 16 * 1000 + 16, "task generator 2: Linear(D, D)");
    check_int(m.content1.out * 10000 + m.content2.in * 100 + m.content2.out, 8 * 10000 + 8 * 100 + 4,
              "content: Linear(D,D/2), Linear(D/2,D/4)");
    check_int(m.content3.in * 10 + m.content3.out, 4 * 10 + 1, "content: Linear(D/4,1)");
    check_int(m.type2.in * 10 + m.type2.out, 8 * 10 + 5, "content types: Linear(D/2,5)");
    check_int(m.fuse1.in * 100 + m.fuse1.out, 3 * 100 + 16, "fusion: Linear(3,D)");
    check_int(m.fuse2.in * 100 + m.fuse2.out, 16 * 100 + 1, "fusion: Linear(D,1)");
    struct epar_model_adaptive refused;
    check_true(epar_model_adaptive_alloc(&refused, 16, 10, 64, 5, 1.0) == 2, "dropout 1 refused");
    check_true(epar_model_adaptive_alloc(&refused, 3, 10, 64, 5, 0.1) == 2, "hidden 3 refused (D/4 = 0)");
    epar_model_adaptive_init(&m, r);
    range(m.task_g1.W, 16 * 64, &lo, &hi);
    check_true(lo >= -0.125 && hi <= 0.125, "task generator 1 W in +-1/sqrt(64)");
    range(m.fuse1.W, 3 * 16, &lo, &hi);
    check_true(lo >= -1 / sqrt(3.0) && hi <= 1 / sqrt(3.0) && hi - lo > 0.5, "fusion 1 W in +-1/sqrt(3)");
    const int L = 12;
    double *ws = malloc(epar_model_adaptive_ws_size(&m, L) * sizeof *ws);
    double X[12 * 16], tw[2 * 16], c[12], probs[12 * 5], tp[10];
    for (int t = 0; t < L * 16; t++) X[t] = cos(1.3 * t) * 1.7;
    epar_model_task_weights(&m, ids, 2, tw, ws);
    range(tw, 32, &lo, &hi);
    check_true(lo > 0 && hi < 1, "task weights in (0,1) (sigmoid)");
    epar_model_content_importance(&m, X, L, NULL, c, ws);
    range(c, L, &lo, &hi);
    check_true(lo > 0 && hi < 1, "content importance in (0,1)");
    double c2[12];
    epar_model_content_importance(&m, X, L, NULL, c2, ws);
    check_rel(c2[5], c[5], 0, "content importance without dropout is deterministic");
    epar_model_content_types(&m, X, L, probs, ws);
    double rs = 0;
    for (int k = 0; k < 5; k++) rs += probs[3 * 5 + k];
    check_rel(rs, 1, 1e-14, "content-type probabilities sum to 1");
    epar_model_task_classify(&m, X, L, tp, ws);
    rs = 0;
    for (int k = 0; k < 10; k++) rs += tp[k];
    check_rel(rs, 1, 1e-14, "task-classifier probabilities sum to 1");

    /* fusion on a hand-made case: base rows with known means, t and c given; f computed here by hand from
     * the fusion weights, then final = (1-f) base + 0.5 f (t base) + 0.5 f (c_i base) term by term */
    {
        const int n = 3;
        double base[9] = {0.3, -1.2, 2.1, 0.5, 0.5, 0.5, -0.7, 1.9, 0.05}, orig[9], fw[3];
        const double t = 0.61, cc[3] = {0.2, 0.9, 0.45};
        memcpy(orig, base, sizeof base);
        epar_model_fuse(&m, base, n, t, cc, fw, ws);
        for (int i = 0; i < n; i++) {
            double mb = (orig[3 * i] + orig[3 * i + 1] + orig[3 * i + 2]) / 3, in[3] = {mb, t * mb, cc[i] * mb};
            double z2 = m.fuse2.b[0];
            for (int k = 0; k < m.D; k++) {
                double h = m.fuse1.b[k];
                for (int q = 0; q < 3; q++) h += m.fuse1.W[k * 3 + q] * in[q];
                z2 += m.fuse2.W[k] * (h > 0 ? h : 0);
            }
            double f = 1 / (1 + exp(-z2));
            check_rel(fw[i], f, 1e-12, "fusion weight row %d", i);
            for (int j = 0; j < n; j++) {
                double b0 = orig[3 * i + j];
                double want = (1 - f) * b0 + 0.5 * f * (t * b0) + 0.5 * f * (cc[i] * b0);
                check_rel(base[3 * i + j], want, 1e-12, "final[%d][%d]", i, j);
            }
        }
        /* a case with round numbers: f = 1/2 forced by zero fusion weights -> factor 0.5 + 0.25 t + 0.25 c */
        struct epar_model_adaptive z = m;
        double zero[64] = {0};
        z.fuse2.W = zero;
        z.fuse2.b = zero;
        double b1[4] = {2, -4, 1, 3}, c1[2] = {0.5, 1}, f1[2];
        epar_model_fuse(&z, b1, 2, 1.0, c1, f1, ws);
        check_rel(f1[0], 0.5, 1e-15, "fusion weight with zero last layer = sigmoid(0)");
        check_rel(b1[0], 2 * (0.5 + 0.25 + 0.125), 1e-15, "final = base (0.5 + 0.25 t + 0.25 c), row 0");
        check_rel(b1[3], 3 * (0.5 + 0.25 + 0.25), 1e-15, "final = base when t = c = 1, row 1");
    }
    free(ws);
    epar_model_adaptive_free(&m);

    /* one-pass row metrics (when-to-use): uniform rows -> entropy ln L */
    {
        const int n = 40;
        double *S = calloc((size_t)n * n, sizeof *S), *A = malloc((size_t)n * n * sizeof *A);
        double *I = malloc(n * sizeof *I), row[120], Hn[40], Dn[40], Wn[40], Vn[40];
        for (int j = 0; j < n; j++) I[j] = 0.5 + 0.5 * sin(2 * M_PI * j / n);
        struct epar_posfx none = {EPAR_FORM_NONE, 1, 2, 1.5}, enh = {EPAR_FORM_ENHANCED, 1.3, 2, 1.5};
        struct epar_adaptive_rowstats rsx;
        epar_exp_adaptive_row_metrics(S, n, &none, 1.0, 1, I, row, &rsx);
        check_rel(rsx.entropy, log((double)n), 1e-12, "entropy of uniform rows = ln L");
        /* mean distance of a uniform row i: sum_j |i-j| / L, averaged over i: (L^2-1)/(3L) */
        check_rel(rsx.distance, (n * n - 1.0) / (3.0 * n), 1e-12, "mean attended distance of uniform rows");
        /* local mass w=1 of uniform rows: (3L-2)/L^2 */
        check_rel(rsx.local, (3.0 * n - 2) / ((double)n * n), 1e-12, "local mass (w=1) of uniform rows");
        /* random scores with the enhanced effect vs the naive path through lib/metrics */
        gsl_rng *rs2 = epar_rng_alloc(7, 0, EPAR_RNG_DATA);
        epar_rng_normal(rs2, S, (size_t)n * n, 2.0);
        epar_rng_free(rs2);
        epar_exp_adaptive_row_metrics(S, n, &enh, 0.8, 2, I, row, &rsx);
        double *P = malloc((size_t)n * n * sizeof *P);
        epar_posfx_matrix(&enh, n, P);
        for (int t = 0; t < n * n; t++) A[t] = S[t] * P[t] * 0.8;
        epar_model_softmax_rows(A, n, n);
        epar_metric_row_entropy(A, n, Hn);
        epar_metric_mean_distance(A, n, Dn);
        epar_metric_local_mass(A, n, 2, Wn);
        epar_metric_value(A, I, n, Vn);
        check_rel(rsx.entropy, gsl_stats_mean(Hn, 1, n), 1e-10, "one-pass entropy = naive");
        check_rel(rsx.distance, gsl_stats_mean(Dn, 1, n), 1e-10, "one-pass mean distance = naive");
        check_rel(rsx.local, gsl_stats_mean(Wn, 1, n), 1e-10, "one-pass local mass (w=2) = naive");
        size_t tpos = ref_argmax(Vn, n), apos = ref_argmax(I, n);
        double sim = 1 - fabs(Vn[tpos] - Vn[apos]) / (Vn[tpos] + 1e-8), prox = 1 - fabs((double)tpos - apos) / n;
        check_rel(rsx.consistency, (sim + prox) / 2, 1e-10, "one-pass structured consistency = naive");
        free(P);
        free(S); free(A); free(I);
    }
    epar_rng_free(r);
    return check_summary("test_model");
}
