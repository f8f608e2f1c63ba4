/* attn: the row tests of docs/MECHANISMS.md §3-4 and §18, composition order, masks, causal, heads. */
#include <stdlib.h>
#include "lib/attn.h"
#include "lib/posfx.h"
#include "lib/rng.h"
#include "lib/err.h"
#include "check.h"

/* one query row i=0 of an L=4 sequence with given scores and factor row */
static void row(const double *s, const double *m, double *A)
{
    struct epar_attn_cfg cfg = {.L = 4, .D = 4, .heads = 1, .scale = 1, .inv_temp = 1};
    double S[16] = {0}, F[16];
    for (int j = 0; j < 4; j++) S[j] = s[j];
    for (int t = 0; t < 16; t++) F[t] = 1;
    if (m) for (int j = 0; j < 4; j++) F[j] = m[j];
    struct epar_attn_mods mods = {.factor = F};
    epar_attn_softmax_rows(&cfg, &mods, 0, S);
    for (int j = 0; j < 4; j++) A[j] = S[j];
}

int main(void)
{
    double A[4];
    const double neg[] = {0.5, -2, -2, -2}, pos[] = {0, 2, 2, 2};
    row(neg, NULL, A);
    const double plain[] = {0.802404, 0.0658653, 0.0658653, 0.0658653};
    for (int j = 0; j < 4; j++) check_rel(A[j], plain[j], 1e-5, "plain softmax negative row j=%d", j);
    struct epar_posfx b = {EPAR_FORM_BASIC, 1, 1, 0}, e = {EPAR_FORM_ENHANCED, 1, 1, 0.5};
    double mb[4], me[4];
    for (int j = 0; j < 4; j++) { mb[j] = epar_posfx_value(&b, j, 4); me[j] = epar_posfx_value(&e, j, 4); }
    check_rel(mb[3], 0.472367, 1e-5, "basic m at d=3, L=4");
    row(neg, mb, A);
    const double wb[] = {0.647718, 0.0827525, 0.116792, 0.152738};
    for (int j = 0; j < 4; j++) check_rel(A[j], wb[j], 1e-5, "basic EPAR negative row j=%d (sign inversion)", j);
    check_true(A[3] > A[1], "negative scores: the farthest key gains the most");
    row(pos, NULL, A);
    const double pp[] = {0.0431645, 0.318945, 0.318945, 0.318945};
    for (int j = 0; j < 4; j++) check_rel(A[j], pp[j], 1e-5, "plain positive row j=%d", j);
    row(pos, mb, A);
    const double pb[] = {0.0855921, 0.406342, 0.287912, 0.220154};
    for (int j = 0; j < 4; j++) check_rel(A[j], pb[j], 1e-5, "basic EPAR positive row j=%d", j);
    check_rel(me[3], 0.824122, 1e-5, "enhanced m at d=3, L=4");
    row(neg, me, A);
    const double we[] = {0.758425, 0.0721473, 0.0809278, 0.0884998};
    for (int j = 0; j < 4; j++) check_rel(A[j], we[j], 1e-5, "enhanced EPAR negative row j=%d", j);

    /* ALiBi-like additive bias after the factor, causal, zero content: docs/MECHANISMS.md §18 */
    {
        struct epar_attn_cfg cfg = {.L = 4, .D = 4, .heads = 1, .scale = 1, .inv_temp = 1, .causal = 1};
        double S[16] = {0}, Bm[16];
        for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) Bm[i * 4 + j] = -0.5 * (i - j);
        struct epar_attn_mods mods = {.bias = Bm};
        epar_attn_softmax_rows(&cfg, &mods, 0, S);
        const double w[] = {0.101536, 0.167405, 0.276004, 0.455054};
        for (int j = 0; j < 4; j++) check_rel(S[12 + j], w[j], 1e-5, "ALiBi causal row i=3 j=%d", j);
        check_rel(S[0], 1.0, 1e-15, "causal row 0 attends only to itself");
        check_rel(S[1], 0.0, 0, "causal: no weight above the diagonal");
    }
    /* composition: factor multiplies the content score only, not the bias */
    {
        struct epar_attn_cfg cfg = {.L = 2, .D = 2, .heads = 1, .scale = 1, .inv_temp = 1};
        double S[4] = {1, 1, 1, 1}, F[4] = {1, 0.5, 0.5, 1}, Bm[4] = {0, 1, 1, 0};
        struct epar_attn_mods mods = {.factor = F, .bias = Bm};
        epar_attn_softmax_rows(&cfg, &mods, 0, S);
        /* z_00 = 1, z_01 = 0.5 + 1 = 1.5 */
        check_rel(S[1], 1.0 / (1.0 + exp(-0.5)), 1e-12, "factor before bias");
    }
    /* masks and the empty-row policy */
    {
        struct epar_attn_cfg cfg = {.L = 3, .D = 3, .heads = 1, .scale = 1, .inv_temp = 1, .empty = EPAR_EMPTY_SELF};
        double S[9] = {5, 1, 2, 3, 3, 3, 1e300, -1e300, 0};
        unsigned char M[9] = {0, 1, 1, 0, 0, 0, 1, 1, 1};
        struct epar_attn_mods mods = {.mask = M};
        int e1 = epar_attn_softmax_rows(&cfg, &mods, 0, S);
        check_int(e1, 1, "one empty row counted");
        check_rel(S[0], 0, 0, "masked entry is exactly 0");
        check_rel(S[1] + S[2], 1, 1e-12, "masked row sums to 1");
        check_rel(S[4], 1, 0, "empty row, policy self: A_ii = 1");
        check_rel(S[6], 1, 1e-12, "overflowing scores stay finite (max subtraction)");
        cfg.empty = EPAR_EMPTY_ZERO;
        double S2[9] = {0};
        epar_attn_softmax_rows(&cfg, &mods, 0, S2);
        check_rel(S2[3] + S2[4] + S2[5], 0, 0, "empty row, policy zero: all 0");
    }
    /* full forward: rows sum to 1, heads average, scale, determinism */
    {
        int L = 16, D = 12, H = 3;
        struct epar_layer layer;
        struct epar_attn_ws ws;
        check_int(epar_attn_layer_alloc(&layer, L, D, 1), EPAR_OK, "layer alloc");
        check_int(epar_attn_ws_alloc(&ws, L, D), EPAR_OK, "ws alloc");
        gsl_rng *r = epar_rng_alloc(42, 0, EPAR_RNG_WEIGHTS);
        epar_attn_layer_init(&layer, r);
        double X[16 * 12], *Ah = malloc(sizeof(double) * H * L * L), *Ab = malloc(sizeof(double) * L * L);
        epar_rng_normal(r, X, (size_t)L * D, 1.0);
        struct epar_attn_cfg cfg = {.L = L, .D = D, .heads = H, .scale = 1 / sqrt(4.0), .inv_temp = 1};
        check_int(epar_attn_cfg_validate(&cfg), EPAR_OK, "cfg valid");
        epar_attn_forward(&cfg, &layer, NULL, X, Ah, &ws, NULL);
        double worst = 0;
        for (int h = 0; h < H; h++)
            for (int i = 0; i < L; i++) {
                double s = 0;
                for (int j = 0; j < L; j++) s += Ah[(h * L + i) * L + j];
                if (fabs(s - 1) > worst) worst = fabs(s - 1);
            }
        check_true(worst < 1e-12, "softmax rows sum to 1 within 1e-12 (worst %g)", worst);
        epar_attn_head_average(Ah, H, L, Ab);
        check_rel(Ab[5], (Ah[5] + Ah[L * L + 5] + Ah[2 * L * L + 5]) / 3, 1e-14, "head average");
        /* naive recomputation of one score */
        double q[12], k[12];
        for (int o = 0; o < D; o++) {
            q[o] = layer.bq[o]; k[o] = layer.bk[o];
            for (int t = 0; t < D; t++) {
                double xi = X[3 * D + t] + layer.E[3 * D + t], xj = X[7 * D + t] + layer.E[7 * D + t];
                q[o] += layer.Wq[o * D + t] * xi;
                k[o] += layer.Wk[o * D + t] * xj;
            }
        }
        double z[16];
        for (int j = 0; j < L; j++) {
            double kk[12];
            for (int o = 0; o < D; o++) {
                kk[o] = layer.bk[o];
                for (int t = 0; t < D; t++) kk[o] += layer.Wk[o * D + t] * (X[j * D + t] + layer.E[j * D + t]);
            }
            z[j] = 0;
            for (int o = 0; o < 4; o++) z[j] += q[o] * kk[o];
            z[j] *= 0.5;
        }
        (void)k;
        double mx = z[0], sum = 0;
        for (int j = 1; j < L; j++) if (z[j] > mx) mx = z[j];
        for (int j = 0; j < L; j++) sum += exp(z[j] - mx);
        check_rel(Ah[3 * L + 7], exp(z[7] - mx) / sum, 1e-10, "BLAS path equals a naive head-0 computation");
        cfg.heads = 5;
        check_int(epar_attn_cfg_validate(&cfg), EPAR_EINVAL, "heads not dividing hidden rejected");
        free(Ah); free(Ab);
        epar_rng_free(r);
        epar_attn_layer_free(&layer);
        epar_attn_ws_free(&ws);
    }
    return check_summary("test_attn");
}
