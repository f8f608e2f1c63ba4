/* mech: every worked number of docs/MECHANISMS.md (rel tol 1e-5), row sums, empty rows, the causal flag,
 * naive vs fast paths, and the registry. */
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_randist.h>
#include "lib/attn.h"
#include "lib/err.h"
#include "lib/mech.h"
#include "lib/rng.h"
#include "check.h"

#define TOL 1e-5

static void set_eq(const unsigned char *M, int L, int i, const int *want, int n, const char *what)
{
    int ok = 1, cnt = 0;
    for (int j = 0; j < L; j++) cnt += M[i * L + j];
    if (cnt != n) ok = 0;
    for (int t = 0; t < n; t++) if (!M[i * L + want[t]]) ok = 0;
    check_true(ok, "%s row %d", what, i);
}

/* a zero layer: Q = K = 0, so scores are 0 and only positional pieces act */
static void zero_layer(struct epar_layer *ly, int L, int D)
{
    epar_attn_layer_alloc(ly, L, D, 0);
    memset(ly->Wq, 0, ((size_t)3 * D * D + 3 * D) * sizeof(double));
}

static void test_sinusoid_floater(void)
{
    double p[8], q[8];
    const double p1[] = {0.841471, 0.540302, 0.00999983, 0.99995}, p2[] = {0.909297, -0.416147, 0.0199987, 0.9998};
    epar_mech_sinusoid(1, 4, 10000, 0, p);
    for (int t = 0; t < 4; t++) check_rel(p[t], p1[t], TOL, "sinusoid p_1 d=4 [%d]", t);
    epar_mech_sinusoid(2, 4, 10000, 0, p);
    for (int t = 0; t < 4; t++) check_rel(p[t], p2[t], TOL, "sinusoid p_2 d=4 [%d]", t);
    const double p18[] = {0.841471, 0.540302, 0.0998334, 0.995004, 0.00999983, 0.99995, 0.001, 1};
    epar_mech_sinusoid(1, 8, 10000, 0, p);
    for (int t = 0; t < 8; t++) check_rel(p[t], p18[t], TOL, "sinusoid p_1 d=8 [%d]", t);
    double a = 0, b = 0;
    epar_mech_sinusoid(1, 8, 10000, 0, p); epar_mech_sinusoid(3, 8, 10000, 0, q);
    for (int t = 0; t < 8; t++) a += p[t] * q[t];
    epar_mech_sinusoid(0, 8, 10000, 0, p); epar_mech_sinusoid(2, 8, 10000, 0, q);
    for (int t = 0; t < 8; t++) b += p[t] * q[t];
    check_rel(a, 2.56372, TOL, "p_1.p_3 d=8");
    check_rel(b, 2.56372, TOL, "p_0.p_2 d=8");
    const double r1[] = {0.841471, 0.00999983, 0.540302, 0.99995};
    epar_mech_sinusoid(1, 4, 10000, 1, p);
    for (int t = 0; t < 4; t++) check_rel(p[t], r1[t], TOL, "TXL R_1 concatenated d=4 [%d]", t);

    double P[6 * 4];
    epar_mech_floater(6, 4, 10000, P);
    const double p5[] = {-0.958924, 0.283662, 0.0499792, 0.99875};
    for (int t = 0; t < 4; t++) check_rel(P[20 + t], p5[t], TOL, "FLOATER p_5 d=4 [%d]", t);
    int L = 10000, D = 8;
    double *F = malloc((size_t)L * D * sizeof *F), worst = 0;
    epar_mech_floater(L, D, 10000, F);
    epar_mech_sinusoid(L - 1, D, 10000, 0, p);
    for (int t = 0; t < D; t++) if (fabs(F[(size_t)(L - 1) * D + t] - p[t]) > worst) worst = fabs(F[(size_t)(L - 1) * D + t] - p[t]);
    check_true(worst < 1e-9, "FLOATER drift at k=L-1=9999 below 1e-9 (got %g)", worst);
    free(F);
}

static void test_rope(void)
{
    double v[4] = {1, 2, 3, 4};
    epar_mech_rope_rotate(v, 4, 1, 10000, 0);
    const double w[] = {-1.14264, 1.92208, 2.95985, 4.0298};
    for (int t = 0; t < 4; t++) check_rel(v[t], w[t], TOL, "rot([1,2,3,4], 1) [%d]", t);
    double q[4] = {1, 2, 3, 4}, k[4] = {0.5, -1, 2, 0.25}, q2[4], k2[4];
    memcpy(q2, q, sizeof q); memcpy(k2, k, sizeof k);
    epar_mech_rope_rotate(q, 4, 3, 10000, 0); epar_mech_rope_rotate(k, 4, 1, 10000, 0);
    epar_mech_rope_rotate(q2, 4, 2, 10000, 0); epar_mech_rope_rotate(k2, 4, 0, 10000, 0);
    double a = 0, b = 0;
    for (int t = 0; t < 4; t++) { a += q[t] * k[t]; b += q2[t] * k2[t]; }
    check_rel(a, 5.65924, TOL, "RoPE <rot(q,3), rot(k,1)>");
    check_rel(b, 5.65924, TOL, "RoPE <rot(q,2), rot(k,0)>");
    const int dist[] = {1, 3, 10};
    const double want[] = {1.54025, 0.00955754, 0.155933};
    for (int c = 0; c < 3; c++) {
        double x[4] = {1, 0, 1, 0}, y[4] = {1, 0, 1, 0}, s = 0;
        epar_mech_rope_rotate(x, 4, dist[c], 10000, 0);
        for (int t = 0; t < 4; t++) s += x[t] * y[t];
        check_rel(s, want[c], TOL, "RoPE q=k=[1,0,1,0] at distance %d", dist[c]);
    }
    {   /* epar's frequencies, read off the rotation: position 1 turns pair t of a unit vector by theta_t */
        double e[8] = {1, 0, 1, 0, 1, 0, 1, 0};
        epar_mech_rope_rotate(e, 8, 1, 10000, 0);
        for (int t = 0; t < 4; t++)
            check_rel(atan2(e[2 * t + 1], e[2 * t]), (double[]){1, 0.1, 0.01, 0.001}[t], TOL, "theta d=8 [%d]", t);
    }
    /* half pairing gives different numbers for the same q (layout pitfall) but also preserves the norm */
    double h[4] = {1, 2, 3, 4}, n = 0;
    epar_mech_rope_rotate(h, 4, 1, 10000, 1);
    for (int t = 0; t < 4; t++) n += h[t] * h[t];
    check_rel(n, 30, 1e-12, "half-pairing rotation keeps the norm");
    check_true(fabs(h[0] - w[0]) > 1e-3, "half and interleaved layouts differ");

    check_rel(epar_mech_ntk_base(10000, 4, 128), 40889.9, TOL, "NTK base d=128 s=4");
    double bp = epar_mech_ntk_base(10000, 4, 128);
    {   /* the NTK base slows the lowest frequency by s and the highest almost not: angles of epar's rotation
         * at position 1 with the two bases (pair 63 of d = 128 turns by ~1e-4 rad, far from any wrap) */
        double ra[128], rb[128];
        for (int t = 0; t < 128; t++) ra[t] = rb[t] = t % 2 == 0;
        epar_mech_rope_rotate(ra, 128, 1, bp, 0);
        epar_mech_rope_rotate(rb, 128, 1, 10000, 0);
        check_rel(atan2(ra[127], ra[126]) / atan2(rb[127], rb[126]), 0.25, TOL, "NTK theta_63 ratio");
        check_rel(atan2(ra[3], ra[2]) / atan2(rb[3], rb[2]), 0.978236, TOL, "NTK theta_1 ratio");
    }
    check_rel(epar_mech_ntk_base(10000, 8, 128), 82684.6, TOL, "NTK base d=128 s=8");
    check_rel(epar_mech_ntk_base(10000, 2, 64), 20452.2, TOL, "NTK base d=64 s=2");

    /* position interpolation through the mechanism: L_train 2048, L 4096 maps position 3000 to 1500 */
    enum epar_mech_id id;
    epar_mech_find("interpolation", &id);
    double p[EPAR_MECH_MAX_PARAMS];
    epar_mech_defaults(id, p);
    epar_mech_set_param(id, p, "train_length", 2048);
    struct epar_mech m;
    check_int(epar_mech_init(&m, id, p, 4096, 4, 1, 0, 1), EPAR_OK, "interpolation init");
    check_rel(m.rcos[3000 * 2], cos(1500.0), 1e-12, "PI: position 3000 -> 1500 (cos table)");
    epar_mech_free(&m);
}

static void test_logn_t5_alibi(void)
{
    check_rel(epar_mech_logn(2048, 512, 1), 1.22222, TOL, "log-n 2048");
    check_rel(epar_mech_logn(4096, 512, 1), 1.33333, TOL, "log-n 4096");
    check_rel(epar_mech_logn(1024, 512, 1), 1.11111, TOL, "log-n 1024");
    check_rel(epar_mech_logn(256, 512, 0), 0.888889, TOL, "log-n 256 unclamped");
    check_rel(epar_mech_logn(256, 512, 1), 1, 0, "log-n 256 clamped");

    const int uni[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 8, 8, 9, 9, 9, 9};
    for (int n = 0; n < 16; n++) check_int(epar_mech_t5_bucket(-n, 0, 16, 128), uni[n], "T5 uni 16/128 distance %d", n);
    for (int n = 16; n <= 22; n++) check_int(epar_mech_t5_bucket(-n, 0, 16, 128), 10, "T5 uni 16/128 distance %d", n);
    for (int n = 23; n <= 31; n++) check_int(epar_mech_t5_bucket(-n, 0, 16, 128), 11, "T5 uni 16/128 distance %d", n);
    for (int n = 32; n <= 40; n++) check_int(epar_mech_t5_bucket(-n, 0, 16, 128), 12, "T5 uni 16/128 distance %d", n);
    const int starts[][2] = {{8, 8}, {9, 12}, {10, 16}, {11, 23}, {12, 32}, {13, 46}, {14, 64}, {15, 91}};
    for (int s = 0; s < 8; s++) {
        check_int(epar_mech_t5_bucket(-starts[s][1], 0, 16, 128), starts[s][0], "T5 bucket %d starts at %d", starts[s][0], starts[s][1]);
        check_int(epar_mech_t5_bucket(-(starts[s][1] - 1), 0, 16, 128), starts[s][0] - 1, "T5 bucket before %d", starts[s][1]);
    }
    check_int(epar_mech_t5_bucket(-100000, 0, 16, 128), 15, "T5 stays 15 far away");
    const int bi[][2] = {{0, 0}, {1, 1}, {7, 7}, {8, 8}, {12, 9}, {16, 10}, {50, 13}, {128, 15}, {-1, 17}, {-7, 23},
                         {-8, 24}, {-16, 26}, {-128, 31}, {-1000, 31}};
    for (size_t t = 0; t < sizeof bi / sizeof bi[0]; t++) /* given as i-j; rel = j-i */
        check_int(epar_mech_t5_bucket(-bi[t][0], 1, 32, 128), bi[t][1], "T5 bidir 32/128 i-j=%d", bi[t][0]);
    const int un[][2] = {{7, 7}, {15, 15}, {16, 16}, {20, 17}, {32, 21}, {64, 26}, {100, 30}, {127, 31}};
    for (size_t t = 0; t < sizeof un / sizeof un[0]; t++)
        check_int(epar_mech_t5_bucket(-un[t][0], 0, 32, 128), un[t][1], "T5 uni 32/128 i-j=%d", un[t][0]);

    double m[16];
    epar_mech_alibi_slopes(8, 8, m);
    for (int h = 0; h < 8; h++) check_rel(m[h], pow(0.5, h + 1), TOL, "ALiBi 8 heads h=%d", h);
    epar_mech_alibi_slopes(12, 8, m);
    const double s12[] = {0.707107, 0.353553, 0.176777, 0.0883883};
    for (int h = 0; h < 8; h++) check_rel(m[h], pow(0.5, h + 1), TOL, "ALiBi 12 heads h=%d", h);
    for (int h = 0; h < 4; h++) check_rel(m[8 + h], s12[h], TOL, "ALiBi 12 heads h=%d", 8 + h);
    epar_mech_alibi_slopes(6, 8, m);
    const double s6[] = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
    for (int h = 0; h < 6; h++) check_rel(m[h], s6[h], TOL, "ALiBi 6 heads h=%d", h);
    epar_mech_alibi_slopes(16, 8, m);
    const double s16[] = {0.707107, 0.5, 0.353553, 0.25};
    for (int h = 0; h < 4; h++) check_rel(m[h], s16[h], TOL, "ALiBi 16 heads h=%d", h);

    /* the ALiBi mechanism, 8 heads, causal, zero content: head 0 (m=0.5), row 3 */
    enum epar_mech_id id;
    epar_mech_find("alibi", &id);
    struct epar_mech mc;
    struct epar_layer ly;
    struct epar_attn_ws ws;
    zero_layer(&ly, 4, 8);
    epar_attn_ws_alloc(&ws, 4, 8);
    double X[32] = {0}, A[8 * 16];
    check_int(epar_mech_init(&mc, id, NULL, 4, 8, 8, 1, 1), EPAR_OK, "alibi init");
    epar_mech_forward(&mc, &ly, X, A, &ws, NULL);
    const double w[] = {0.101536, 0.167405, 0.276004, 0.455054};
    for (int j = 0; j < 4; j++) check_rel(A[12 + j], w[j], TOL, "ALiBi mechanism causal row 3 j=%d", j);
    check_rel(A[1], 0, 0, "ALiBi causal: zero above the diagonal");
    epar_mech_free(&mc);
    epar_attn_ws_free(&ws);
    epar_attn_layer_free(&ly);
}

static void test_relative_tables(void)
{
    const int shaw[] = {0, 0, 0, 1, 2, 3, 4, 4, 4};
    for (int r = -4; r <= 4; r++) check_int(epar_mech_shaw_index(r, 2), shaw[r + 4], "Shaw k=2 offset %d", r);
    const int deb[] = {0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 7, 7, 7};
    for (int n = -6; n <= 6; n++) check_int(epar_mech_deberta_delta(n, 0, 4), deb[n + 6], "DeBERTa k=4 i-j=%d", n);
    check_rel(1.0 / sqrt(3.0 * 64), 0.0721688, TOL, "DeBERTa scale d=64");
    check_rel(1.0 / sqrt(2.0 * 64), 0.0883883, TOL, "TUPE scale d=64");
    check_rel(1.0 / sqrt(64.0), 0.125, TOL, "1/sqrt(d_k) for d_model 768, 12 heads");
    check_rel(1.0 / sqrt(768.0), 0.0360844, TOL, "1/sqrt(d_model) 768");

    /* TXL with u = v = W_R = 0 reduces exactly to the plain score; Shaw, T5, DeBERTa likewise with zero tables */
    int L = 12, D = 16, H = 2;
    struct epar_layer ly;
    struct epar_attn_ws ws;
    epar_attn_layer_alloc(&ly, L, D, 0);
    gsl_rng *r = epar_rng_alloc(7, 0, EPAR_RNG_WEIGHTS);
    epar_attn_layer_init(&ly, r);
    double *X = malloc((size_t)L * D * sizeof *X), *A0 = malloc((size_t)H * L * L * sizeof *A0),
           *A1 = malloc((size_t)H * L * L * sizeof *A1);
    epar_rng_normal(r, X, (size_t)L * D, 1.0);
    epar_rng_free(r);
    epar_attn_ws_alloc(&ws, L, D);
    struct epar_mech m0, m1;
    epar_mech_init(&m0, EPAR_MECH_NONE, NULL, L, D, H, 0, 1);
    epar_mech_forward(&m0, &ly, X, A0, &ws, NULL);
    const enum epar_mech_id zs[] = {EPAR_MECH_TXL, EPAR_MECH_SHAW, EPAR_MECH_T5};
    for (int z = 0; z < 3; z++) {
        double p[EPAR_MECH_MAX_PARAMS];
        epar_mech_defaults(zs[z], p);
        epar_mech_set_param(zs[z], p, "init_sd", 0);
        epar_mech_init(&m1, zs[z], p, L, D, H, 0, 1);
        epar_mech_forward(&m1, &ly, X, A1, &ws, NULL);
        double worst = 0;
        for (size_t t = 0; t < (size_t)H * L * L; t++) if (fabs(A1[t] - A0[t]) > worst) worst = fabs(A1[t] - A0[t]);
        check_true(worst < 1e-14, "%s with zero tables equals plain attention (max diff %g)", epar_mech_row(zs[z])->id, worst);
        epar_mech_free(&m1);
    }
    /* a non-zero Shaw table changes A, and its bias equals q_i . w[clip(j-i)] / sqrt(dk) */
    {
        double p[EPAR_MECH_MAX_PARAMS];
        epar_mech_defaults(EPAR_MECH_SHAW, p);
        epar_mech_set_param(EPAR_MECH_SHAW, p, "max_relative", 2);
        epar_mech_set_param(EPAR_MECH_SHAW, p, "init_sd", 1);
        epar_mech_init(&m1, EPAR_MECH_SHAW, p, L, D, H, 0, 1);
        epar_mech_forward(&m1, &ly, X, A1, &ws, NULL);
        int dk = D / H, h = 1, i = 5, j = 11;
        double want = 0;
        for (int t = 0; t < dk; t++) want += ws.Q[i * D + h * dk + t] * m1.tab[epar_mech_shaw_index(j - i, 2) * dk + t];
        check_rel(m1.bias[(h * L + i) * L + j], want / sqrt((double)dk), 1e-12, "Shaw bias = q_i . w^K[clip(j-i)] / sqrt(dk)");
        epar_mech_free(&m1);
    }
    epar_mech_free(&m0);
    free(X); free(A0); free(A1);
    epar_attn_ws_free(&ws);
    epar_attn_layer_free(&ly);
}

static void test_fixed(void)
{
    /* the catalogue's look-ahead patterns are exactly the fixed rows refused under causal */
    for (int id = 0; id < EPAR_MECH_COUNT; id++) {
        struct epar_mech m;
        int st = epar_mech_init(&m, (enum epar_mech_id)id, NULL, 8, 8, 2, 1, 1);
        int refused = st == EPAR_EINVAL && epar_mech_row(id)->kind == EPAR_MK_FIXED;
        if (!st) epar_mech_free(&m);   /* a refused init frees what it made */
        check_int(epar_mech_looks_ahead((enum epar_mech_id)id), refused, "%s: looks ahead iff refused under causal",
                  epar_mech_row(id)->id);
    }
    int L = 6;
    double W[36];
    check_int(epar_mech_fixed_pattern(2, L, W), 1, "p2: one fallback row");
    check_rel(W[0], 1, 0, "p2 row 0 -> self");
    for (int i = 1; i < L; i++) check_rel(W[i * L + i - 1], 1, 0, "p2 row %d -> e_{i-1}", i);
    check_int(epar_mech_fixed_pattern(3, L, W), 1, "p3: one fallback row");
    check_rel(W[35], 1, 0, "p3 row 5 -> self");
    check_rel(W[4 * L + 5], 1, 0, "p3 row 4 -> e_5");
    check_int(epar_mech_fixed_pattern(4, L, W), 2, "p4: rows 0, 1 fall back");
    const double p4[4][6] = {{1, 0, 0, 0, 0, 0}, {0.111111, 0.888889, 0, 0, 0, 0}, {0.0277778, 0.222222, 0.75, 0, 0, 0},
                             {0.01, 0.08, 0.27, 0.64, 0, 0}};
    check_rel(W[0], 1, 0, "p4 row 0 self");
    check_rel(W[7], 1, 0, "p4 row 1 self");
    for (int i = 2; i < 6; i++)
        for (int j = 0; j < 6; j++) check_rel(W[i * L + j], p4[i - 2][j], TOL, "p4 row %d col %d", i, j);
    check_int(epar_mech_fixed_pattern(5, L, W), 2, "p5: rows 4, 5 fall back");
    const double p5[4][6] = {{0, 0, 0.64, 0.27, 0.08, 0.01}, {0, 0, 0, 0.75, 0.222222, 0.0277778},
                             {0, 0, 0, 0, 0.888889, 0.111111}, {0, 0, 0, 0, 0, 1}};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++) check_rel(W[i * L + j], p5[i][j], TOL, "p5 row %d col %d", i, j);
    check_rel(W[4 * L + 4], 1, 0, "p5 row 4 self");
    const double p6[] = {0.00226757, 0.0181406, 0.0612245, 0.145125, 0.283447, 0.489796};
    epar_mech_fixed_pattern(6, L, W);
    for (int i = 0; i < 6; i++) for (int j = 0; j < 6; j++) check_rel(W[i * L + j], p6[j], TOL, "p6 row %d col %d", i, j);
    epar_mech_fixed_pattern(7, L, W);
    for (int i = 0; i < 6; i++) for (int j = 0; j < 6; j++) check_rel(W[i * L + j], p6[5 - j], TOL, "p7 row %d col %d", i, j);
    epar_mech_fixed_pattern(1, L, W);
    for (int i = 0; i < 6; i++) check_rel(W[i * L + i], 1, 0, "p1 row %d", i);
    /* mechanism rows: fixed-start is pattern 7 and fixed-end pattern 6 */
    struct epar_mech m;
    epar_mech_init(&m, EPAR_MECH_FIXED_END, NULL, L, 4, 1, 0, 1);
    check_rel(m.fixed[5], 0.489796, TOL, "fixed-end = pattern 6");
    epar_mech_free(&m);
    epar_mech_init(&m, EPAR_MECH_FIXED_START, NULL, L, 4, 1, 0, 1);
    check_rel(m.fixed[0], 0.489796, TOL, "fixed-start = pattern 7");
    epar_mech_free(&m);
    check_int(epar_mech_init(&m, EPAR_MECH_FIXED_NEXT, NULL, L, 4, 1, 1, 1), EPAR_EINVAL, "fixed-next refused under causal");
    check_int(epar_mech_init(&m, EPAR_MECH_FIXED_RIGHT, NULL, L, 4, 1, 1, 1), EPAR_EINVAL, "fixed-right refused under causal");
}

static void test_kernels(void)
{
    check_rel(epar_mech_elu1(1), 2, TOL, "phi(1)");
    check_rel(epar_mech_elu1(0), 1, TOL, "phi(0)");
    check_rel(epar_mech_elu1(-1), 0.367879, TOL, "phi(-1)");
    double q[2] = {1, -1}, k[3][2] = {{1, 0}, {0, 1}, {-1, -1}}, phq[2], phk[6], u[3];
    for (int t = 0; t < 2; t++) phq[t] = epar_mech_elu1(q[t]);
    for (int j = 0; j < 3; j++) for (int t = 0; t < 2; t++) phk[j * 2 + t] = epar_mech_elu1(k[j][t]);
    const double wu[] = {4.36788, 2.73576, 0.871094}, wa[] = {0.547715, 0.343053, 0.109232};
    for (int j = 0; j < 3; j++) { u[j] = phq[0] * phk[j * 2] + phq[1] * phk[j * 2 + 1]; check_rel(u[j], wu[j], TOL, "elu1 unnormalised j=%d", j); }
    /* kernel attention through the library: row 0 of a 3x3 problem with q copied to every row */
    double PQ[6] = {phq[0], phq[1], phq[0], phq[1], phq[0], phq[1]}, A[9];
    epar_mech_kernel_attention(PQ, phk, 3, 2, 0, 1e-6, A);
    for (int j = 0; j < 3; j++) check_rel(A[j], wa[j], TOL, "elu1 kernel A j=%d", j);
    double sm[3], z = 0;
    for (int j = 0; j < 3; j++) { sm[j] = exp(q[0] * k[j][0] + q[1] * k[j][1]); z += sm[j]; }
    const double ws[] = {0.665241, 0.0900306, 0.244728};
    for (int j = 0; j < 3; j++) check_rel(sm[j] / z, ws[j], TOL, "softmax of the same q.k j=%d", j);
    const double cw[] = {1, 0.980785, 0.92388, 0.83147, 0.707107, 0.55557, 0.382683, 0.19509, 0};
    for (int d = 0; d < 8; d++) check_rel(cos(M_PI / 2 * d / 8), cw[d], TOL, "cosFormer weight M=8 d=%d", d);
    check_abs(cos(M_PI / 2 * 8 / 8), 0, 1e-12, "cosFormer weight M=8 d=8");
    /* the cosFormer feature decomposition reproduces relu(q).relu(k) cos(pi (i-j) / 2M) */
    {
        double a = 0.7, b = 1.3; int i = 5, j = 2, M = 8;
        double f = a * cos(M_PI * i / (2.0 * M)) * b * cos(M_PI * j / (2.0 * M)) + a * sin(M_PI * i / (2.0 * M)) * b * sin(M_PI * j / (2.0 * M));
        check_rel(f, a * b * cos(M_PI / 2 * (i - j) / M), 1e-12, "cosFormer features = cos re-weighting");
    }

    /* Performer */
    check_rel(exp(0.5 - 0.125), 1.45499, TOL, "Performer unscaled feature");
    double Om[2] = {1, 0}, x[2] = {0.5, 0}, ph;
    epar_mech_performer_features(Om, 1, 2, x, 1, 0, 0.0, &ph);
    double c = pow(2, -0.25) * 0.5; /* the global key stabiliser w.x' (one feature) */
    check_rel(ph * exp(c), 1.39384, TOL, "Performer feature with x' = 2^(-1/4) x (stabiliser removed)");
    int f, rr;
    epar_mech_performer_blocks(256, 64, &f, &rr); check_true(f == 4 && rr == 0, "m=256 d=64: 4 blocks");
    epar_mech_performer_blocks(100, 64, &f, &rr); check_true(f == 1 && rr == 36, "m=100 d=64: 1 + 36");
    epar_mech_performer_blocks(266, 64, &f, &rr); check_true(f == 4 && rr == 10, "m=266 d=64: 4 + 10");
    {   /* Monte Carlo: E[exp(w.q' - |q'|^2/2) exp(w.k' - |k'|^2/2)] = exp(q.k/sqrt(d)) */
        const double qq[4] = {0.3, -0.2, 0.5, 0.1}, kk[4] = {0.4, 0.1, -0.3, 0.2};
        double s = pow(4, -0.25), nq = 0, nk = 0, qk = 0;
        for (int t = 0; t < 4; t++) { nq += qq[t] * qq[t] * s * s; nk += kk[t] * kk[t] * s * s; qk += qq[t] * kk[t]; }
        check_rel(exp(qk / 2), 0.985112, TOL, "exact exp(q.k/2)");
        gsl_rng *r = epar_rng_alloc(1, 0, EPAR_RNG_EXTRA);
        double mean = 0;
        const int N = 400000;
        for (int n = 0; n < N; n++) {
            double wq = 0, wk = 0;
            for (int t = 0; t < 4; t++) { double w = gsl_ran_gaussian_ziggurat(r, 1); wq += w * qq[t] * s; wk += w * kk[t] * s; }
            mean += exp(wq - nq / 2) * exp(wk - nk / 2);
        }
        mean /= N;
        check_rel(mean, 0.985112, 0.01, "Performer Monte Carlo unbiased within 1%% (4e5 iid draws)");
        /* orthogonal Omega: rows orthogonal within each block */
        double Omega[10 * 4];
        epar_mech_performer_omega(r, 10, 4, 1, 1, Omega);
        double worst = 0;
        for (int a = 0; a < 4; a++) for (int b = 0; b < 4; b++) {
            double d = 0;
            for (int t = 0; t < 4; t++) d += Omega[a * 4 + t] * Omega[b * 4 + t];
            double want = a == b ? 4.0 : 0.0;
            if (fabs(d - want) > worst) worst = fabs(d - want);
        }
        check_true(worst < 1e-12, "orthogonal block: Omega_b Omega_b^T = d I (scaling 1)");
        epar_rng_free(r);
    }

    /* naive (materialised A then A V) vs fast (S, z and prefix sums) */
    for (int causal = 0; causal <= 1; causal++) {
        int L = 20, nf = 6, dv = 5;
        gsl_rng *r = epar_rng_alloc(3, causal, EPAR_RNG_EXTRA);
        double PQ2[120], PK2[120], V[100], A2[400], O1[100], O2[100], work[36];
        epar_rng_uniform(r, PQ2, 120, 0.01, 1); epar_rng_uniform(r, PK2, 120, 0.01, 1); epar_rng_normal(r, V, 100, 1);
        epar_rng_free(r);
        epar_mech_kernel_attention(PQ2, PK2, L, nf, causal, 1e-6, A2);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, dv, L, 1.0, A2, L, V, dv, 0.0, O1, dv);
        epar_mech_kernel_output(PQ2, PK2, V, L, nf, dv, causal, 1e-6, O2, work);
        double worst = 0, rs = 0;
        for (int t = 0; t < 100; t++) if (fabs(O1[t] - O2[t]) > worst) worst = fabs(O1[t] - O2[t]);
        check_true(worst < 1e-12, "kernel naive vs fast path agree (%s, max diff %g)", causal ? "causal" : "bidirectional", worst);
        for (int i = 0; i < L; i++) { double s = 0; for (int j = 0; j < L; j++) s += A2[i * L + j]; if (fabs(s - 1) > rs) rs = fabs(s - 1); }
        check_true(rs < 1e-9, "kernel rows sum to 1 within 1e-9 (%s)", causal ? "causal" : "bidirectional");
    }
}

static void test_masks(void)
{
    unsigned char M[16 * 16], M2[16 * 16];
    epar_mech_mask_strided(10, 3, 0, M);
    set_eq(M, 10, 7, (int[]){1, 4, 5, 6, 7}, 5, "strided L=10 l=3 A1 U A2");
    set_eq(M, 10, 9, (int[]){0, 3, 6, 7, 8, 9}, 6, "strided L=10 l=3 merged");
    set_eq(M, 10, 0, (int[]){0}, 1, "strided i=0");
    epar_mech_mask_strided(10, 3, 1, M);
    set_eq(M, 10, 7, (int[]){1, 4, 5, 6, 7}, 5, "strided openai_local i=7 (local {5,6,7} U stride {1,4,7})");
    {   /* the local band alone */
        int n = 0, ok = 1;
        for (int j = 0; j < 10; j++) { int dd = 7 - j; int loc = j <= 7 && dd < 3; n += loc; if (loc && !(j == 5 || j == 6 || j == 7)) ok = 0; }
        check_true(ok && n == 3, "openai_local band at i=7 is {5,6,7}");
    }
    epar_mech_mask_sparse_fixed(10, 4, 1, M);
    set_eq(M, 10, 9, (int[]){3, 7, 8, 9}, 4, "sparse-fixed L=10 l=4 c=1");
    set_eq(M, 10, 5, (int[]){3, 4, 5}, 3, "sparse-fixed");
    set_eq(M, 10, 0, (int[]){0}, 1, "sparse-fixed");
    epar_mech_mask_window(5, 2, M);
    const int sz[] = {3, 4, 5, 4, 3};
    for (int i = 0; i < 5; i++) { int n = 0; for (int j = 0; j < 5; j++) n += M[i * 5 + j]; check_int(n, sz[i], "window L=5 w=2 row %d size", i); }
    epar_mech_mask_block(8, 4, 0, 0, M);
    set_eq(M, 8, 5, (int[]){4, 5, 6, 7}, 4, "block L=8 b=4");
    epar_mech_mask_block(8, 4, 0, 1, M);
    set_eq(M, 8, 5, (int[]){4, 5}, 2, "block L=8 b=4 causal");
    epar_mech_mask_global_local(8, 1, 1, M);
    set_eq(M, 8, 5, (int[]){0, 4, 5, 6}, 4, "global-local");
    set_eq(M, 8, 0, (int[]){0, 1, 2, 3, 4, 5, 6, 7}, 8, "global-local");
    set_eq(M, 8, 7, (int[]){0, 6, 7}, 3, "global-local");
    long nl = epar_mech_mask_pi_local(16, 2, 1, M), ns = epar_mech_mask_pi_step(16, 3, M2);
    set_eq(M, 16, 0, (int[]){14, 15, 0, 1, 2}, 5, "pi local L=16 r=2");
    set_eq(M2, 16, 0, (int[]){0, 3, 6, 9, 12, 15}, 6, "pi step pi=3");
    set_eq(M, 16, 5, (int[]){3, 4, 5, 6, 7}, 5, "pi local");
    set_eq(M2, 16, 5, (int[]){2, 5, 8, 11, 14}, 5, "pi step");
    set_eq(M, 16, 15, (int[]){13, 14, 15, 0, 1}, 5, "pi local");
    long nu = 0;
    for (int t = 0; t < 256; t++) nu += M[t] || M2[t];
    check_int(nl, 80, "pi local non-zeros");
    check_int(ns, 86, "pi step non-zeros");
    check_int(nu, 148, "pi union non-zeros");
    check_rel(nu / 256.0, 0.578125, TOL, "pi union density");

    /* pi-attention with zero scores and g = 0.5, row 0 */
    struct epar_mech m;
    double p[EPAR_MECH_MAX_PARAMS];
    epar_mech_defaults(EPAR_MECH_PI_ATTENTION, p);
    epar_mech_set_param(EPAR_MECH_PI_ATTENTION, p, "radius", 2);
    epar_mech_set_param(EPAR_MECH_PI_ATTENTION, p, "step", 3);
    epar_mech_init(&m, EPAR_MECH_PI_ATTENTION, p, 16, 4, 1, 0, 1);
    struct epar_layer ly;
    struct epar_attn_ws ws;
    zero_layer(&ly, 16, 4);
    epar_attn_ws_alloc(&ws, 16, 4);
    double X[64] = {0}, A[256];
    epar_mech_forward(&m, &ly, X, A, &ws, NULL);
    check_rel(A[0], 0.183333, TOL, "pi A_00");
    check_rel(A[15], 0.183333, TOL, "pi A_0,15");
    check_rel(A[1], 0.1, TOL, "pi A_01");
    check_rel(A[2], 0.1, TOL, "pi A_02");
    check_rel(A[14], 0.1, TOL, "pi A_0,14");
    for (int j = 3; j <= 12; j += 3) check_rel(A[j], 0.0833333, TOL, "pi A_0,%d", j);
    epar_mech_free(&m);
    epar_attn_ws_free(&ws);
    epar_attn_layer_free(&ly);
}

static void test_gqa_orth_boost(void)
{
    const int g8[] = {0, 0, 0, 0, 1, 1, 1, 1}, g12[] = {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3};
    for (int h = 0; h < 8; h++) check_int(epar_mech_gqa_group(h, 8, 2), g8[h], "GQA H=8 G=2 h=%d", h);
    for (int h = 0; h < 12; h++) check_int(epar_mech_gqa_group(h, 12, 4), g12[h], "GQA H=12 G=4 h=%d", h);

    gsl_rng *r = epar_rng_alloc(9, 0, EPAR_RNG_MECH);
    int D = 768, dk = 64;
    double *W = malloc((size_t)D * dk * sizeof *W), worst = 0, fro = 0;
    epar_rng_orthogonal(r, W, D, dk);
    for (int a = 0; a < dk; a++)
        for (int b = 0; b < dk; b++) {
            double s = 0;
            for (int t = 0; t < D; t++) s += W[t * dk + a] * W[t * dk + b];
            if (fabs(s - (a == b)) > worst) worst = fabs(s - (a == b));
        }
    for (size_t t = 0; t < (size_t)D * dk; t++) fro += W[t] * W[t];
    check_true(worst < 1e-12, "orthogonal W^T W = I (max dev %g)", worst);
    check_rel(fro / D, 0.0833333, TOL, "E||xW||^2/||x||^2 = dk/D for 768/64");
    free(W);
    double Ws[16], x[4] = {1, -2, 0.5, 3}, y[4] = {0.2, 0.1, -1, 2}, xw[4] = {0}, yw[4] = {0}, a = 0, b = 0;
    epar_rng_orthogonal(r, Ws, 4, 4);
    for (int c = 0; c < 4; c++) for (int t = 0; t < 4; t++) { xw[c] += x[t] * Ws[t * 4 + c]; yw[c] += y[t] * Ws[t * 4 + c]; }
    for (int t = 0; t < 4; t++) { a += xw[t] * yw[t]; b += x[t] * y[t]; }
    check_rel(a, b, 1e-12, "dk = D: <xW, yW> = <x, y>");
    epar_rng_free(r);

    {   /* the orthogonal-qk mechanism's frozen W_Q (D, dk) per head has orthonormal columns */
        struct epar_mech m;
        epar_mech_init(&m, EPAR_MECH_ORTHOGONAL_QK, NULL, 8, 64, 4, 0, 3);
        double dev = 0;
        for (int h = 0; h < 4; h++)
            for (int a2 = 0; a2 < 16; a2++)
                for (int b2 = 0; b2 < 16; b2++) {
                    double s2 = 0;
                    for (int t = 0; t < 64; t++) s2 += m.Wq[(h * 64 + t) * 16 + a2] * m.Wq[(h * 64 + t) * 16 + b2];
                    if (fabs(s2 - (a2 == b2)) > dev) dev = fabs(s2 - (a2 == b2));
                    s2 = 0;
                    for (int t = 0; t < 64; t++) s2 += m.Wk[(h * 64 + t) * 16 + a2] * m.Wk[(h * 64 + t) * 16 + b2];
                    if (fabs(s2 - (a2 == b2)) > dev) dev = fabs(s2 - (a2 == b2));
                }
        check_true(dev < 1e-12, "orthogonal-qk: W_Q^T W_Q = W_K^T W_K = I per head (max dev %g)", dev);
        epar_mech_free(&m);
    }
    const double row[] = {0.7, 0.1, 0.1, 0.1}, want[] = {0.636364, 0.181818, 0.0909091, 0.0909091};
    double out[4];
    epar_mech_boost(row, 4, 1, 2, out);
    for (int j = 0; j < 4; j++) check_rel(out[j], want[j], TOL, "boost key 1 by 2, j=%d", j);
    /* the same through + ln b before a softmax */
    double z[4], s = 0;
    for (int j = 0; j < 4; j++) { z[j] = log(row[j]) + (j == 1 ? log(2.0) : 0); s += exp(z[j]); }
    check_rel(exp(z[1]) / s, out[1], 1e-12, "boost = + ln b before the softmax");
}

/* every mechanism: rows sum to 1, causal rows have nothing above the diagonal, deterministic init */
static void test_all_mechanisms(void)
{
    int L = 24, D = 32, H = 4;
    struct epar_layer ly;
    struct epar_attn_ws ws;
    epar_attn_layer_alloc(&ly, L, D, 0);
    gsl_rng *r = epar_rng_alloc(11, 0, EPAR_RNG_WEIGHTS);
    epar_attn_layer_init(&ly, r);
    double *X = malloc((size_t)L * D * sizeof *X), *A = malloc((size_t)H * L * L * sizeof *A),
           *B = malloc((size_t)H * L * L * sizeof *B);
    epar_rng_normal(r, X, (size_t)L * D, 1.0);
    epar_rng_free(r);
    epar_attn_ws_alloc(&ws, L, D);
    for (int causal = 0; causal <= 1; causal++)
        for (int id = 0; id < EPAR_MECH_COUNT; id++) {
            const char *name = epar_mech_row(id)->id;
            double p[EPAR_MECH_MAX_PARAMS];
            epar_mech_defaults((enum epar_mech_id)id, p);
            if (id == EPAR_MECH_PI_ATTENTION) { p[0] = 3; p[1] = 5; }
            struct epar_mech m;
            int st = epar_mech_init(&m, (enum epar_mech_id)id, p, L, D, H, causal, 42);
            int lookahead = id == EPAR_MECH_FIXED_NEXT || id == EPAR_MECH_FIXED_RIGHT || id == EPAR_MECH_FIXED_START ||
                            id == EPAR_MECH_FIXED_END;
            if (causal && lookahead) { check_int(st, EPAR_EINVAL, "%s refused under causal", name); continue; }
            if (epar_mech_trained_only((enum epar_mech_id)id)) {   /* no compare form: refused, naming it */
                check_int(st, EPAR_EINVAL, "%s (trained only) refused by compare's init (causal %d)", name, causal);
                continue;
            }
            check_int(st, EPAR_OK, "%s init (causal %d)", name, causal);
            if (st) continue;
            int empty = -1;
            epar_mech_forward(&m, &ly, X, A, &ws, &empty);
            double worst = 0, above = 0;
            int finite = 1;
            for (int h = 0; h < H; h++)
                for (int i = 0; i < L; i++) {
                    double s = 0;
                    for (int j = 0; j < L; j++) {
                        double a = A[((size_t)h * L + i) * L + j];
                        if (!isfinite(a) || a < 0) finite = 0;
                        s += a;
                        if (j > i && fabs(a) > above) above = fabs(a);
                    }
                    if (fabs(s - 1) > worst) worst = fabs(s - 1);
                }
            double tol = epar_mech_row(id)->kind == EPAR_MK_KERNEL ? 1e-9 : 1e-12;
            check_true(finite, "%s weights finite and >= 0 (causal %d)", name, causal);
            check_true(worst <= tol, "%s rows sum to 1 (causal %d, dev %g)", name, causal, worst);
            if (causal) check_true(above == 0, "%s causal: nothing above the diagonal", name);
            check_true(empty >= 0, "%s empty-row count reported", name);
            /* same seed -> same weights */
            struct epar_mech m2;
            epar_mech_init(&m2, (enum epar_mech_id)id, p, L, D, H, causal, 42);
            epar_mech_forward(&m2, &ly, X, B, &ws, NULL);
            check_true(!memcmp(A, B, (size_t)H * L * L * sizeof *A), "%s deterministic for a seed", name);
            check_true(epar_mech_flops_row(&m) > 0, "%s flops > 0", name);
            epar_mech_free(&m2);
            epar_mech_free(&m);
        }
    {   /* GQA, mean pooling (the default): the KV head of a group is the mean of its heads' K slices */
        struct epar_mech m, m0;
        double gp[EPAR_MECH_MAX_PARAMS];
        int dk = D / H;
        epar_mech_init(&m0, EPAR_MECH_NONE, NULL, L, D, H, 0, 1);
        epar_mech_forward(&m0, &ly, X, B, &ws, NULL);
        double *K0 = malloc((size_t)L * D * sizeof *K0);
        memcpy(K0, ws.K, (size_t)L * D * sizeof *K0);
        epar_mech_defaults(EPAR_MECH_GQA, gp);
        check_int((long)gp[1], 0, "GQA pools by the mean by default");
        epar_mech_init(&m, EPAR_MECH_GQA, gp, L, D, H, 0, 1);
        epar_mech_forward(&m, &ly, X, A, &ws, NULL);
        double worst = 0;
        for (int i = 0; i < L; i++)
            for (int h = 0; h < H; h++)
                for (int t = 0; t < dk; t++) {
                    int g0 = (h / 2) * 2 * dk;
                    double want = 0.5 * (K0[i * D + g0 + t] + K0[i * D + g0 + dk + t]);
                    worst = fmax(worst, fabs(ws.K[i * D + h * dk + t] - want));
                }
        check_true(worst < 1e-15, "GQA mean pooling: every head's K is its group's mean slice (worst %g)", worst);
        free(K0);
        epar_mech_free(&m0);
        epar_mech_free(&m);
    }
    {   /* GQA, pool = first: query heads of a group see the K of their first head; the other group keeps its own */
        struct epar_mech m;
        double gp[EPAR_MECH_MAX_PARAMS];
        epar_mech_defaults(EPAR_MECH_GQA, gp);
        gp[1] = 1;
        epar_mech_init(&m, EPAR_MECH_GQA, gp, L, D, H, 0, 1);   /* H=4, G=2: heads 0,1 -> 0; 2,3 -> 1 */
        epar_mech_forward(&m, &ly, X, A, &ws, NULL);
        int dk = D / H, same01 = 1, same23 = 1, diff02 = 0;
        for (int i = 0; i < L; i++)
            for (int t = 0; t < dk; t++) {
                same01 &= ws.K[i * D + t] == ws.K[i * D + dk + t];
                same23 &= ws.K[i * D + 2 * dk + t] == ws.K[i * D + 3 * dk + t];
                diff02 |= ws.K[i * D + t] != ws.K[i * D + 2 * dk + t];
            }
        check_true(same01 && same23 && diff02, "GQA first: heads 0,1 share KV head 0, heads 2,3 share KV head 1");
        struct epar_mech m0;
        epar_mech_init(&m0, EPAR_MECH_NONE, NULL, L, D, H, 0, 1);
        epar_mech_forward(&m0, &ly, X, B, &ws, NULL);
        check_true(!memcmp(A, B, (size_t)L * L * sizeof *A), "GQA head 0 (a group leader) equals MHA head 0");
        check_true(memcmp(A + (size_t)L * L, B + (size_t)L * L, (size_t)L * L * sizeof *A) != 0, "GQA head 1 differs from MHA head 1");
        epar_mech_free(&m0);
        epar_mech_free(&m);
    }
    /* empty rows: sparse-fixed causal with l=4, c=1 has none merged; fixed-previous has row 0 fallback */
    {
        struct epar_mech m;
        int e;
        epar_mech_init(&m, EPAR_MECH_FIXED_PREVIOUS, NULL, L, D, H, 0, 1);
        epar_mech_forward(&m, &ly, X, A, &ws, &e);
        check_int(e, H, "fixed-previous: one fallback row per head");
        check_rel(A[0], 1, 0, "fixed-previous row 0 -> self");
        epar_mech_free(&m);
        /* a mask with an empty row under the softmax path: global-local with radius 0, globals 0, then causal
         * block with L not a multiple of b is never empty; use the attn policy directly through a zero-radius
         * window (never empty, self allowed) and check the policy with an all-zero mask */
        struct epar_attn_cfg cfg = {.L = 3, .D = 3, .heads = 1, .scale = 1, .inv_temp = 1, .empty = EPAR_EMPTY_ZERO};
        double S[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
        unsigned char mk[9] = {0, 0, 0, 1, 1, 0, 1, 1, 1};
        struct epar_attn_mods mods = {.mask = mk};
        check_int(epar_attn_softmax_rows(&cfg, &mods, 0, S), 1, "empty row counted (policy zero)");
        check_true(S[0] == 0 && S[1] == 0 && S[2] == 0, "policy zero: the empty row is 0");
    }
    free(X); free(A); free(B);
    epar_attn_ws_free(&ws);
    epar_attn_layer_free(&ly);
}

/* random-sparse (§22b): causal, the band {i-l..i}, strided's count of keys per row (k = 0) or k more, one draw per row
 * that no length changes, a key that changes it, and each earlier key taken with probability need / candidates */
static void test_random_mask(void)
{
    enum { L = 40, S = 25 };
    static unsigned char M[L * L], M2[L * L], Ms[L * L];
    long n = epar_mech_mask_random(L, 4, 0, 12345ULL, M);
    long ns = epar_mech_mask_strided(L, 4, 0, Ms);
    check_int(n, ns, "random-sparse keeps as many keys as strided (l = 4, L = 40)");
    int future = 0, band = 0, rows = 0, corner = 0, differ = 0, moreok = 0;
    for (int i = 0; i < L; i++) {
        int a = 0, b = 0;
        for (int j = 0; j < L; j++) {
            future += j > i && M[i * L + j];
            band += j <= i && j >= i - 4 && !M[i * L + j];
            a += M[i * L + j];
            b += Ms[i * L + j];
        }
        rows += a == b;
    }
    check_int(future, 0, "random-sparse is causal");
    check_int(band, 0, "random-sparse keeps the band {i-l..i}");
    check_int(rows, L, "random-sparse: every row has strided's number of keys");
    epar_mech_mask_random(S, 4, 0, 12345ULL, M2);
    for (int i = 0; i < S; i++)
        for (int j = 0; j < S; j++) corner += M2[i * S + j] != M[i * L + j];
    check_int(corner, 0, "random-sparse at L = 25 is the corner of the mask at L = 40 (rows drawn independently of L)");
    epar_mech_mask_random(L, 4, 0, 12346ULL, M2);
    for (size_t t = 0; t < (size_t)L * L; t++) differ += M2[t] != M[t];
    check_true(differ > 0, "another key draws another mask (%d entries differ)", differ);
    epar_mech_mask_random(L, 4, 3, 99ULL, M2);
    for (int i = 0; i < L; i++) {
        int a = 0, c = i - 4 > 0 ? i - 4 : 0;
        for (int j = 0; j < L; j++) a += M2[i * L + j];
        moreok += a == (i < 4 ? i : 4) + 1 + (c < 3 ? c : 3);
    }
    check_int(moreok, L, "random-sparse.keys = 3: the band and min(3, i - l) earlier keys per row");
    /* uniform: row 39 at l = 4 takes 39 / 4 - 1 = 8 of the 35 earlier keys; over 4000 keys each is taken 8/35 of the
     * time (binomial sd about 26.5 counts): every count within 5 sd */
    long cnt[35] = {0};
    for (unsigned long long key = 0; key < 4000; key++) {
        epar_mech_mask_random(L, 4, 0, key * 7919ULL + 1, M2);
        for (int j = 0; j < 35; j++) cnt[j] += M2[39 * L + j];
    }
    double p = 8.0 / 35, mu = 4000 * p, sd = sqrt(4000 * p * (1 - p)), worst = 0;
    for (int j = 0; j < 35; j++) worst = fmax(worst, fabs(cnt[j] - mu) / sd);
    check_true(worst < 5, "random-sparse draws every earlier key with probability need / candidates (worst %.2f sd)", worst);
}

static void test_registry(void)
{
    enum epar_mech_id id;
    const char *ids = "none epar-basic epar-enhanced sinusoidal learned-ape floater multiplicative-pe shaw transformer-xl t5 "
                      "deberta tupe rope ntk-rope interpolation log-n alibi fixed-current fixed-previous fixed-next fixed-left "
                      "fixed-right fixed-start fixed-end linear-elu linear-cos performer strided sparse-fixed sliding-window "
                      "block-sparse global-local pi-attention gqa orthogonal-qk random-sparse alibi-learned learned-ape-rand learned-ape-hier fixed-mix learnable-only fixed-only "
                      "floater-learned";
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", ids);
    int n = 0;
    for (char *t = strtok(buf, " "); t; t = strtok(NULL, " "), n++) {
        check_int(epar_mech_find(t, &id), EPAR_OK, "canonical id %s", t);
        check_int(id, n, "id %s in canonical order", t);
    }
    /* the file mechanisms (lib/mechs/registry.h) follow the table's rows, each found by its own id; those moved into a
     * file from the table (EPAR_MECH_FILE_AT) keep their ids among the table's and their own docs section */
    int files = 0;
    for (int k = 0; k < EPAR_MECH_COUNT; k++) {
        const struct epar_mech_def *d = epar_mech_file((enum epar_mech_id)k);
        if (!d) continue;
        files += k >= n;
        check_true(!epar_mech_find(d->info.id, &id) && id == (enum epar_mech_id)k, "file mechanism %s found by its id", d->info.id);
        if (k >= n) check_true(d->doc && strstr(d->doc, d->info.id), "file mechanism %s has its documentation", d->info.id);
        else check_true(!d->doc && strcmp(d->info.section, "§32"), "file mechanism %s kept its table id and its section %s",
                        d->info.id, d->info.section);
    }
    check_int(n + files, EPAR_MECH_COUNT, "43 canonical ids of the table and the file mechanisms");
    check_int(epar_mech_find("alibii", &id), EPAR_EINVAL, "unknown mechanism refused");
    double p[EPAR_MECH_MAX_PARAMS];
    epar_mech_defaults(EPAR_MECH_ALIBI, p);
    check_rel(p[0], 8, 0, "alibi.max_bias default 8");
    check_int(epar_mech_set_param(EPAR_MECH_ALIBI, p, "max_bias", 4), EPAR_OK, "set alibi.max_bias");
    check_rel(p[0], 4, 0, "alibi.max_bias set");
    check_int(epar_mech_set_param(EPAR_MECH_ALIBI, p, "slope", 4), EPAR_EINVAL, "unknown parameter refused");
    check_int(epar_mech_set_param(EPAR_MECH_SHAW, p, "max_relative", 2.5), EPAR_EINVAL, "non-integer refused");
    check_int(epar_mech_set_param(EPAR_MECH_GQA, p, "groups", 0), EPAR_EINVAL, "out of range refused");
    struct epar_mech m;
    double g[EPAR_MECH_MAX_PARAMS];
    epar_mech_defaults(EPAR_MECH_GQA, g);
    g[0] = 3;
    check_int(epar_mech_init(&m, EPAR_MECH_GQA, g, 8, 8, 4, 0, 1), EPAR_EINVAL, "gqa groups must divide heads");
    check_int(epar_mech_init(&m, EPAR_MECH_ROPE, NULL, 8, 6, 2, 0, 1), EPAR_EINVAL, "rope refuses an odd head dim");
    double lp[EPAR_MECH_MAX_PARAMS];
    epar_mech_defaults(EPAR_MECH_LEARNED_APE, lp);
    lp[0] = 16;
    check_int(epar_mech_init(&m, EPAR_MECH_LEARNED_APE, lp, 32, 8, 1, 0, 1), EPAR_EINVAL, "learned-ape refuses L > L_max");
    /* multiplicative PE with the sinusoid: p_0 = [0,1,0,1] erases x_0 = [1,1,1,1] to [0,1,0,1] */
    double mp[EPAR_MECH_MAX_PARAMS];
    epar_mech_defaults(EPAR_MECH_MULT_PE, mp);
    mp[0] = 1;
    epar_mech_init(&m, EPAR_MECH_MULT_PE, mp, 4, 4, 1, 0, 1);
    double x[16];
    for (int t = 0; t < 16; t++) x[t] = 1;
    m.mods.input(m.mods.ctx, x, 4, 4);
    const double w[] = {0, 1, 0, 1};
    for (int t = 0; t < 4; t++) check_rel(x[t], w[t], 0, "multiplicative PE x_0 [%d]", t);
    epar_mech_free(&m);
    /* EPAR through the registry */
    epar_mech_init(&m, EPAR_MECH_EPAR_BASIC, NULL, 8, 4, 1, 0, 1);
    check_rel(m.factor[7], 0.416862, TOL, "epar-basic m at L=8 d=7");
    epar_mech_free(&m);
    epar_mech_init(&m, EPAR_MECH_EPAR_ENHANCED, NULL, 8, 4, 1, 0, 1);
    check_rel(m.factor[7], 0.805621, TOL, "epar-enhanced m at L=8 d=7");
    epar_mech_free(&m);
    {   /* L_mode=prefix under causal: row i uses i+1 keys */
        double ep[EPAR_MECH_MAX_PARAMS];
        epar_mech_defaults(EPAR_MECH_EPAR_BASIC, ep);
        epar_mech_set_param(EPAR_MECH_EPAR_BASIC, ep, "prefix", 1);
        epar_mech_init(&m, EPAR_MECH_EPAR_BASIC, ep, 8, 4, 1, 1, 1);
        check_rel(m.factor[7 * 8 + 0], 0.416862, TOL, "epar-basic prefix: row 7 (8 keys), d=7");
        check_rel(m.factor[3 * 8 + 0], exp(-3.0 / 4), 1e-12, "epar-basic prefix: row 3 uses L=4");
        epar_mech_free(&m);
    }
    epar_mech_init(&m, EPAR_MECH_TUPE, NULL, 8, 4, 1, 0, 1);
    check_rel(m.factor[0], 1 / sqrt(2.0), 1e-12, "TUPE: content term s_ij / sqrt(2)");
    epar_mech_free(&m);
    epar_mech_init(&m, EPAR_MECH_LOGN, NULL, 2048, 4, 1, 0, 1);
    check_rel(m.factor[5], 1.22222, TOL, "log-n mechanism at L=2048");
    epar_mech_free(&m);
}

int main(void)
{
    test_sinusoid_floater();
    test_rope();
    test_logn_t5_alibi();
    test_relative_tables();
    test_fixed();
    test_kernels();
    test_masks();
    test_random_mask();
    test_gqa_orth_boost();
    test_all_mechanisms();
    test_registry();
    {   /* the pi-attention pair count without the mask equals the count of the materialised union */
        int ok = 1;
        for (int Lq = 1; Lq <= 70; Lq += 3)
            for (int ring = 0; ring <= 1; ring++)
                for (int rr = 0; rr <= 6; rr += 3)
                    for (int pq = 1; pq <= 16; pq *= 2) {
                        unsigned char *M1 = malloc((size_t)Lq * Lq), *M2 = malloc((size_t)Lq * Lq);
                        epar_mech_mask_pi_local(Lq, rr, ring, M1);
                        epar_mech_mask_pi_step(Lq, pq, M2);
                        long n = 0;
                        for (size_t u = 0; u < (size_t)Lq * Lq; u++) n += M1[u] | M2[u];
                        if (n != epar_mech_pi_union_pairs(Lq, pq, rr, ring)) ok = 0;
                        free(M1);
                        free(M2);
                    }
        check_true(ok, "pi union pair count equals the materialised local | step masks (L <= 70)");
    }
    return check_summary("test_mech");
}
