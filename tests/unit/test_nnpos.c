/* test_nnpos: the training position mechanisms' tables against lib/mech (what `epar compare` uses) and
 * the docs/MECHANISMS.md worked numbers: RoPE's relative property, ALiBi slopes and bias, T5 buckets and
 * bias, the sinusoid, the EPAR factor and its learned parametrisation, the registry. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "lib/mech.h"
#include "lib/nnpos.h"
#include "lib/posfx.h"
#include "lib/rng.h"
#include "check.h"

static struct epar_nnpos_settings settings(void)
{
    struct epar_nnpos_settings s;
    epar_nnpos_settings_default(&s);
    return s;
}

static void test_registry(void)
{
    int n = 0;
    for (int k = 0; k < EPAR_MECH_COUNT; k++) {
        const struct epar_nnpos_info *in = epar_nnpos_row(k);
        if (in->hook == EPAR_NNPOS_H_NONE) {
            enum epar_mech_id id;
            check_int(epar_nnpos_find(epar_mech_row(k)->id, &id), EPAR_EINVAL, "'%s' is refused by training",
                      epar_mech_row(k)->id);
            check_true(strstr(epar_err_message(), "untrainable") != NULL, "the error says why ('%s')",
                       epar_mech_row(k)->id);
            continue;
        }
        n++;
        enum epar_mech_id id;
        check_int(epar_nnpos_find(epar_mech_row(k)->id, &id), EPAR_OK, "find '%s'", epar_mech_row(k)->id);
        check_int(id, k, "'%s' maps to its catalogue row", epar_mech_row(k)->id);
        /* a file mechanism (lib/mechs/) leaves NULL what it does not need; a row of nnpos.c's table has every one */
        const struct epar_mech_def *d = epar_mech_file(k);
        check_true(in->summary && (d || (in->build && in->n_params && in->init && in->prepare && in->backward)),
                   "'%s' has its function set", epar_mech_row(k)->id);
        check_true(!d || (!in->n_params) == (!in->init && !in->backward),
                   "'%s': learned parameters come with their init and gradient", epar_mech_row(k)->id);
    }
    check_true(n >= 20, "at least 20 of the %d catalogue mechanisms are trainable (%d)", EPAR_MECH_COUNT, n);
    enum epar_mech_id id;
    check_int(epar_nnpos_find("alibii", &id), EPAR_EINVAL, "unknown mechanism refused");
    check_true(strstr(epar_err_message(), "'alibii'") != NULL, "the error names the value");
    check_int(epar_nnpos_find("learned", &id), EPAR_OK, "'learned' (the name before the one catalogue) is read");
    check_int(id, EPAR_MECH_LEARNED_APE, "... as learned-ape");
    struct epar_nnpos_settings s = settings();
    check_int(epar_nnpos_validate(EPAR_MECH_ROPE, &s, 7), EPAR_EINVAL, "rope refuses an odd head width");
    check_int(epar_nnpos_validate(EPAR_MECH_INTERPOLATION, &s, 7), EPAR_EINVAL, "interpolation refuses an odd head width");
    check_int(epar_nnpos_set(&s, "sliding-window.radius=5"), EPAR_OK, "--set sliding-window.radius=5");
    check_abs(s.mp[EPAR_MECH_SLIDING_WINDOW][0], 5, 0, "... sets the catalogue parameter");
    check_int(epar_nnpos_set(&s, "sliding-window.radius=-1"), EPAR_EINVAL, "a value out of the catalogue's range");
    check_int(epar_nnpos_set(&s, "sliding-window.width=3"), EPAR_EINVAL, "an unknown parameter");
    check_int(epar_nnpos_set(&s, "epar-enhanced.alpha=2"), EPAR_EINVAL, "EPAR is set through --alpha --beta --gamma");
    check_true(strstr(epar_err_message(), "--alpha") != NULL, "... and the error says so");
    check_int(epar_nnpos_set(&s, "learned-ape.init_sd=1"), EPAR_EINVAL, "learned-ape's table is the run's");
    check_int(epar_nnpos_set(&s, "radius=4"), EPAR_EINVAL, "no mechanism named");
    check_int(epar_nnpos_set(&s, "gqa.groups=1"), EPAR_OK, "--set gqa.groups=1 (multi-query attention)");
    check_int(epar_nnpos_kv_heads(EPAR_MECH_GQA, &s, 8), 1, "... one K/V head for 8 query heads");
    check_int(epar_nnpos_kv_heads(EPAR_MECH_ROPE, &s, 8), 8, "every other mechanism: a K/V head per query head");
    s.mp[EPAR_MECH_GQA][0] = 3;
    check_int(epar_nnpos_check_heads(EPAR_MECH_GQA, &s, 8), EPAR_EINVAL, "gqa.groups 3 does not divide 8 heads");
    s.learn_posfx = 1;
    s.fx.gamma = 0;
    check_int(epar_nnpos_validate(EPAR_MECH_EPAR_ENHANCED, &s, 8), EPAR_EINVAL, "learned gamma cannot start at 0");
    check_int(epar_nnpos_validate(EPAR_MECH_EPAR_BASIC, &s, 8), EPAR_OK, "basic has no gamma to learn");
}

/* the input tables against compare's (lib/mech, fp64): FLOATER scaled by init_sd as the sinusoid, and the fixed
 * multiplicative variants */
static void test_inputs(void)
{
    int L = 20, C = 8;
    struct epar_nnpos_settings s = settings();
    struct epar_nnpos p;
    struct epar_mech mm;
    double prm[EPAR_MECH_MAX_PARAMS];
    check_int(epar_nnpos_alloc(&p, EPAR_MECH_FLOATER, &s, L, C, 2, 1), EPAR_OK, "floater alloc");
    epar_mech_defaults(EPAR_MECH_FLOATER, prm);
    check_int(epar_mech_init(&mm, EPAR_MECH_FLOATER, prm, L, C, 2, 1, 42), EPAR_OK, "compare's floater");
    double e = 0;
    for (int t = 0; t < L * C; t++) e = fmax(e, fabs(p.pe[t] - s.init_sd * mm.pe[t]));
    check_abs(e, 0, 1e-8, "floater table = init_sd x compare's FLOATER table");
    epar_mech_free(&mm);
    epar_nnpos_free(&p);
    for (int variant = 1; variant <= 2; variant++) {
        s.mp[EPAR_MECH_MULT_PE][0] = variant;
        check_int(epar_nnpos_alloc(&p, EPAR_MECH_MULT_PE, &s, L, C, 2, 1), EPAR_OK, "mult-pe alloc");
        check_int((long)epar_nnpos_n_params(&p), 0L, "mult-pe variant %d is fixed", variant);
        memcpy(prm, s.mp[EPAR_MECH_MULT_PE], sizeof prm);
        check_int(epar_mech_init(&mm, EPAR_MECH_MULT_PE, prm, L, C, 2, 1, 42), EPAR_OK, "compare's mult-pe");
        e = 0;
        for (int t = 0; t < L * C; t++) e = fmax(e, fabs(p.pe[t] - mm.pe[t]));
        check_abs(e, 0, 1e-6, "mult-pe variant %d table = compare's", variant);
        float x[2 * 20 * 8];
        for (int t = 0; t < 2 * L * C; t++) x[t] = 2.0f;
        epar_nnpos_embed_forward(&p, x, 2, L);
        check_rel(x[L * C + 3 * C + 1], 2.0 * mm.pe[3 * C + 1], 1e-6, "mult-pe multiplies the embedding");
        epar_mech_free(&mm);
        epar_nnpos_free(&p);
    }
    s.mp[EPAR_MECH_MULT_PE][0] = 0;
    check_int(epar_nnpos_alloc(&p, EPAR_MECH_MULT_PE, &s, L, C, 2, 1), EPAR_OK, "mult-pe variant 0 alloc");
    check_int((long)epar_nnpos_n_params(&p), (long)L * C, "mult-pe variant 0 learns its (Tmax, C) table");
    epar_nnpos_free(&p);
}

/* masks and patterns: the (i, j) table against compare's mask and fixed weights at two lengths (rebuilt with T) */
static void test_patterns(void)
{
    static const enum epar_mech_id ids[] = {EPAR_MECH_STRIDED, EPAR_MECH_SPARSE_FIXED, EPAR_MECH_SLIDING_WINDOW,
                                            EPAR_MECH_BLOCK_SPARSE, EPAR_MECH_GLOBAL_LOCAL, EPAR_MECH_FIXED_CURRENT,
                                            EPAR_MECH_FIXED_PREVIOUS, EPAR_MECH_FIXED_LEFT, EPAR_MECH_RANDOM_SPARSE};
    int Tmax = 40, C = 8, H = 2;
    struct epar_nnpos_settings s = settings();
    s.mp[EPAR_MECH_BLOCK_SPARSE][1] = 1;
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        struct epar_nnpos p;
        enum epar_mech_id id = ids[k];
        check_int(epar_nnpos_alloc(&p, id, &s, Tmax, C, H, 2), EPAR_OK, "%s alloc", epar_nnpos_name(id));
        for (int T = 17; T <= 40; T += 23) {
            epar_nnpos_prepare(&p, T);
            struct epar_mech mm;
            check_int(epar_mech_init(&mm, id, s.mp[id], T, C, H, 1, 42), EPAR_OK, "compare's %s", epar_nnpos_name(id));
            int bad = 0;
            for (int i = 0; i < T; i++) {
                int any = 0;
                for (int j = 0; j <= i; j++) any |= mm.mask ? mm.mask[(size_t)i * T + j] : 1;
                for (int j = 0; j <= i; j++) {
                    float z = p.pair[(size_t)i * Tmax + j];
                    if (mm.fixed) bad += fabs(exp((double)z) - mm.fixed[(size_t)i * T + j]) > 1e-6;
                    else bad += (mm.mask[(size_t)i * T + j] || (!any && j == i)) ? z != 0.0f : !isinf(z);
                }
            }
            check_int(bad, 0, "%s at T = %d: the pair table is compare's %s", epar_nnpos_name(id), T,
                      mm.fixed ? "fixed weights (exp)" : "causal mask (empty rows: self)");
            epar_mech_free(&mm);
        }
        epar_nnpos_free(&p);
    }
}

static void test_rope(void)
{
    int T = 40, C = 8, NH = 2, hs = 4;
    struct epar_nnpos_settings s = settings();
    struct epar_nnpos p;
    check_int(epar_nnpos_alloc(&p, EPAR_MECH_ROPE, &s, T, C, NH, 1), EPAR_OK, "rope alloc");
    epar_nnpos_prepare(&p, T);
    /* worked: rot([1,2,3,4], pos=1), d=4 = [-1.14264, 1.92208, 2.95985, 4.0298] (head 0 of q at t=1) */
    float qkv[2 * 3 * 8];
    memset(qkv, 0, sizeof qkv);
    float v[4] = {1, 2, 3, 4};
    memcpy(qkv + 3 * C, v, sizeof v);
    epar_nnpos_qk_forward(&p, qkv, 1, 2);
    const double want[4] = {-1.14264, 1.92208, 2.95985, 4.0298};
    for (int i = 0; i < 4; i++) check_rel(qkv[3 * C + i], want[i], 1e-5, "rope worked number [%d]", i);
    /* relative property: <rot(q, i), rot(k, j)> depends on i - j only (q=[1,2,3,4], k=[0.5,-1,2,0.25]) */
    float *buf = calloc((size_t)T * 3 * C, sizeof *buf);
    const float q[4] = {1, 2, 3, 4}, k[4] = {0.5f, -1, 2, 0.25f};
    for (int t = 0; t < T; t++) {
        memcpy(buf + (size_t)t * 3 * C + hs, q, sizeof q);      /* head 1 of q */
        memcpy(buf + (size_t)t * 3 * C + C + hs, k, sizeof k);  /* head 1 of k */
    }
    epar_nnpos_qk_forward(&p, buf, 1, T);
    double maxdev = 0;
    for (int d = 0; d < 10; d++) {
        double ref = 0;
        for (int i = d; i < T; i++) {
            const float *qi = buf + (size_t)i * 3 * C + hs, *kj = buf + (size_t)(i - d) * 3 * C + C + hs;
            double dot = 0;
            for (int c = 0; c < hs; c++) dot += (double)qi[c] * kj[c];
            if (i == d) ref = dot;
            else maxdev = fmax(maxdev, fabs(dot - ref));
        }
    }
    check_abs(maxdev, 0, 2e-5, "rope: q.k at (i, i-d) is the same for every i (float32 tables)");
    /* worked: <rot(q,3), rot(k,1)> = 5.65924 */
    double dot = 0;
    for (int c = 0; c < hs; c++) dot += (double)buf[3 * 3 * C + hs + c] * buf[1 * 3 * C + C + hs + c];
    check_rel(dot, 5.65924, 1e-5, "rope worked number <rot(q,3), rot(k,1)>");
    /* backward rotates back: qk_backward(qk_forward(x)) = x */
    float *x = malloc((size_t)T * 3 * C * sizeof *x), *y = malloc((size_t)T * 3 * C * sizeof *y);
    gsl_rng *r = epar_rng_alloc(1, 0, EPAR_RNG_DATA);
    for (int i = 0; i < T * 3 * C; i++) x[i] = y[i] = (float)gsl_rng_uniform(r);
    epar_nnpos_qk_forward(&p, y, 1, T);
    epar_nnpos_qk_backward(&p, y, 1, T);
    double e = 0;
    for (int i = 0; i < T * 3 * C; i++) e = fmax(e, fabs(x[i] - y[i]));
    check_abs(e, 0, 1e-5, "rope backward is the inverse rotation");
    epar_rng_free(r);
    free(x); free(y); free(buf);
    epar_nnpos_free(&p);
}

/* lib/mech's bias (H, L, L) of a causal mechanism against the nnpos table bias[h][i - j], j <= i */
static double max_bias_diff(const struct epar_mech *mm, const struct epar_nnpos *p, int L, int H)
{
    double e = 0;
    for (int h = 0; h < H; h++)
        for (int i = 0; i < L; i++)
            for (int j = 0; j <= i; j++)
                e = fmax(e, fabs(mm->bias[((size_t)h * L + i) * L + j] - p->bias[(size_t)h * p->Tmax + (i - j)]));
    return e;
}

static void test_alibi(void)
{
    int L = 50, H = 12, C = 48;
    struct epar_nnpos_settings s = settings();
    struct epar_nnpos p;
    check_int(epar_nnpos_alloc(&p, EPAR_MECH_ALIBI, &s, L, C, H, 1), EPAR_OK, "alibi alloc");
    epar_nnpos_prepare(&p, L);
    /* docs/MECHANISMS.md §18 worked: 12 heads = the 8 of 8 heads then 0.707107, 0.353553, 0.176777, 0.0883883 */
    const double want[12] = {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625,
                             0.707107, 0.353553, 0.176777, 0.0883883};
    for (int h = 0; h < H; h++) check_rel(p.slopes[h], want[h], 1e-5, "alibi slope, 12 heads, head %d", h);
    struct epar_mech mm;
    double prm[EPAR_MECH_MAX_PARAMS];
    epar_mech_defaults(EPAR_MECH_ALIBI, prm);
    check_int(epar_mech_init(&mm, EPAR_MECH_ALIBI, prm, L, C, H, 1, 42), EPAR_OK, "compare's alibi");
    check_abs(max_bias_diff(&mm, &p, L, H), 0, 1e-5 * L, "alibi bias equals compare's (causal, every head and pair)");
    epar_mech_free(&mm);
    epar_nnpos_free(&p);
}

static void test_t5(void)
{
    int L = 200, H = 4, C = 16;
    struct epar_nnpos_settings s = settings();
    struct epar_nnpos p;
    check_int(epar_nnpos_alloc(&p, EPAR_MECH_T5, &s, L, C, H, 1), EPAR_OK, "t5 alloc");
    /* docs/MECHANISMS.md §11 worked, unidirectional 32/128, distance i-j: bucket */
    const int dist[8] = {7, 15, 16, 20, 32, 64, 100, 127}, bk[8] = {7, 15, 16, 17, 21, 26, 30, 31};
    for (int k = 0; k < 8; k++) check_int(p.bucket[dist[k]], bk[k], "t5 causal bucket of distance %d", dist[k]);
    check_int(p.bucket[199], 31, "t5: distances past max_distance share the last bucket");
    /* the same table as compare's synthetic one gives the same bias */
    struct epar_mech mm;
    double prm[EPAR_MECH_MAX_PARAMS];
    epar_mech_defaults(EPAR_MECH_T5, prm);
    check_int(epar_mech_init(&mm, EPAR_MECH_T5, prm, L, C, H, 1, 42), EPAR_OK, "compare's t5");
    size_t n = epar_nnpos_n_params(&p);
    check_int((long)n, 32L * H, "t5 learns a (32, heads) table");
    float *theta = malloc(n * sizeof *theta);
    for (size_t i = 0; i < n; i++) theta[i] = (float)mm.tab[i];
    p.theta = theta;
    epar_nnpos_prepare(&p, L);
    check_abs(max_bias_diff(&mm, &p, L, H), 0, 1e-6, "t5 bias equals compare's for the same table (causal)");
    free(theta);
    epar_mech_free(&mm);
    epar_nnpos_free(&p);
}

/* Transformer-XL (§10): R_d is the [sin | cos] sinusoid of the distance (the worked R_1 at width 4), and the prepared
 * table r_h(d) = W_R^h R_d equals compare's r_n (lib/mech, fp64) for the same W_R: compare's W_R, u, v drawn again from
 * its stream (seed, 1000 + id) in its order (u, v of every head, then W_R (D, dk) head by head) */
static void test_txl(void)
{
    struct epar_nnpos_settings s = settings();
    struct epar_nnpos p;
    check_int(epar_nnpos_alloc(&p, EPAR_MECH_TXL, &s, 5, 4, 1, 1), EPAR_OK, "transformer-xl alloc (width 4)");
    const double want[4] = {0.841471, 0.00999983, 0.540302, 0.99995};
    for (int c = 0; c < 4; c++) check_rel(p.rdist[4 + c], want[c], 1e-5, "transformer-xl R_1[%d] ([sin | cos])", c);
    epar_nnpos_free(&p);
    int L = 20, C = 16, H = 4, dk = C / H;
    s.mp[EPAR_MECH_TXL][0] = 0.5;
    check_int(epar_nnpos_alloc(&p, EPAR_MECH_TXL, &s, L, C, H, 1), EPAR_OK, "transformer-xl alloc");
    size_t n = epar_nnpos_n_params(&p);
    check_int((long)n, (long)(C * C + 2 * C), "transformer-xl learns W_R (C, C), u and v (C) per layer");
    struct epar_mech mm;
    check_int(epar_mech_init(&mm, EPAR_MECH_TXL, s.mp[EPAR_MECH_TXL], L, C, H, 1, 42), EPAR_OK, "compare's transformer-xl");
    float *theta = malloc(n * sizeof *theta);
    double *uv = malloc((size_t)H * 2 * dk * sizeof *uv), *WR = malloc((size_t)C * dk * sizeof *WR);
    gsl_rng *r = epar_rng_alloc(42, 1000UL + EPAR_MECH_TXL, EPAR_RNG_MECH);
    epar_rng_normal(r, uv, (size_t)H * 2 * dk, s.mp[EPAR_MECH_TXL][0]);
    for (int h = 0; h < H; h++) {
        epar_rng_normal(r, WR, (size_t)C * dk, s.mp[EPAR_MECH_TXL][0]);
        for (int t = 0; t < dk; t++) {
            for (int c = 0; c < C; c++) theta[(size_t)(h * dk + t) * C + c] = (float)WR[(size_t)c * dk + t];
            theta[C * C + h * dk + t] = (float)uv[(size_t)h * 2 * dk + t];
            theta[C * C + C + h * dk + t] = (float)uv[(size_t)h * 2 * dk + dk + t];
        }
    }
    epar_rng_free(r);
    p.theta = theta;
    epar_nnpos_prepare(&p, L);
    double e = 0, big = 0;
    /* the trained tables read into a second compare form (the file's from_trained) whose tables were cleared first: a
     * reading that copied nothing would leave zeros */
    struct epar_mech m2;
    check_int(epar_mech_init(&m2, EPAR_MECH_TXL, s.mp[EPAR_MECH_TXL], L, C, H, 1, 42), EPAR_OK, "a second compare form");
    memset(m2.tab, 0, (size_t)H * (2 * L - 1) * dk * sizeof *m2.tab);
    memset(m2.tab2, 0, (size_t)H * 2 * dk * sizeof *m2.tab2);
    const struct epar_mech_def *fd = epar_mech_file(EPAR_MECH_TXL);
    check_int(fd && fd->from_trained ? fd->from_trained(&m2, &p, 0) : -1, EPAR_OK, "transformer-xl reads a trained model");
    for (int h = 0; h < H; h++)
        for (int d = 0; d < L; d++)
            for (int t = 0; t < dk; t++) {
                size_t at = ((size_t)h * (2 * L - 1) + d + L - 1) * dk + t;
                e = fmax(e, fabs(m2.tab[at] - mm.tab[at]));
                big = fmax(big, fabs(mm.tab[at]));
            }
    check_true(big > 0.5, "compare's r_n is not small (max |r| %g)", big);
    check_abs(e, 0, 2e-6 * big, "transformer-xl r_h(d) = W_R^h R_d equals compare's r_{i-j} (every head, d < %d)", L);
    e = 0;
    for (size_t q = 0; q < (size_t)H * 2 * dk; q++) e = fmax(e, fabs(m2.tab2[q] - mm.tab2[q]));
    check_abs(e, 0, 1e-6, "... and its u, v are compare's");
    epar_mech_free(&m2);
    free(theta); free(uv); free(WR);
    epar_mech_free(&mm);
    epar_nnpos_free(&p);
}

/* one parameter namespace (issue 34): --set of rope, alibi, t5 and sinusoidal reaches their tables as compare's
 * with the same values; what training cannot honour is refused naming it */
static void test_namespace(void)
{
    int L = 30, H = 4, C = 16;
    struct epar_nnpos_settings s = settings();
    struct epar_nnpos p;
    struct epar_mech mm;
    check_int(epar_nnpos_set(&s, "alibi.max_bias=4"), EPAR_OK, "--set alibi.max_bias=4");
    check_int(epar_nnpos_alloc(&p, EPAR_MECH_ALIBI, &s, L, C, H, 1), EPAR_OK, "alibi alloc");
    epar_nnpos_prepare(&p, L);
    check_rel(p.slopes[0], pow(2.0, -4.0 / H), 1e-12, "alibi.max_bias=4: head 0's slope is 2^(-4/4)");
    check_int(epar_mech_init(&mm, EPAR_MECH_ALIBI, s.mp[EPAR_MECH_ALIBI], L, C, H, 1, 42), EPAR_OK, "compare's alibi");
    check_abs(max_bias_diff(&mm, &p, L, H), 0, 1e-5 * L, "alibi.max_bias=4: the bias equals compare's");
    epar_mech_free(&mm);
    epar_nnpos_free(&p);

    check_int(epar_nnpos_set(&s, "rope.base=20000"), EPAR_OK, "--set rope.base=20000");
    check_int(epar_nnpos_alloc(&p, EPAR_MECH_ROPE, &s, L, 8, 2, 1), EPAR_OK, "rope alloc");
    double v[4] = {1, 0, 1, 0}, w[4] = {1, 0, 1, 0};
    epar_mech_rope_rotate(v, 4, 7, 20000, 0);
    epar_mech_rope_rotate(w, 4, 7, 10000, 0);
    for (int i = 0; i < 2; i++) {
        check_rel(p.rcos[7 * 2 + i], v[2 * i], 1e-6, "rope.base=20000: cos of t=7, pair %d", i);
        check_rel(p.rsin[7 * 2 + i], v[2 * i + 1], 1e-6, "rope.base=20000: sin of t=7, pair %d", i);
    }
    check_true(fabs(p.rsin[7 * 2 + 1] - w[3]) > 1e-4, "... not the angle of base 10000");
    epar_nnpos_free(&p);
    check_int(epar_nnpos_set(&s, "rope.half=1"), EPAR_OK, "rope.half is a catalogue parameter");
    check_int(epar_nnpos_validate(EPAR_MECH_ROPE, &s, 4), EPAR_EINVAL, "... training refuses half pairs");
    check_true(strstr(epar_err_message(), "rope.half") != NULL, "... naming rope.half");

    check_int(epar_nnpos_set(&s, "t5.num_buckets=16"), EPAR_OK, "--set t5.num_buckets=16");
    check_int(epar_nnpos_set(&s, "t5.max_distance=64"), EPAR_OK, "--set t5.max_distance=64");
    check_int(epar_nnpos_alloc(&p, EPAR_MECH_T5, &s, L, C, H, 1), EPAR_OK, "t5 alloc");
    int bad = 0;
    for (int d = 0; d < L; d++) bad += p.bucket[d] != epar_mech_t5_bucket(-d, 0, 16, 64);
    check_int(bad, 0, "t5 16/64: the causal buckets of every distance");
    check_int((long)epar_nnpos_n_params(&p), 16L * H, "t5 learns a (16, heads) table");
    epar_nnpos_free(&p);
    check_int(epar_nnpos_set(&s, "t5.max_distance=8"), EPAR_OK, "t5.max_distance=8 is in the catalogue's range");
    check_int(epar_nnpos_validate(EPAR_MECH_T5, &s, 4), EPAR_EINVAL, "... but not above num_buckets / 2: refused");
    check_true(strstr(epar_err_message(), "t5.max_distance '8'") != NULL, "... naming it");

    check_int(epar_nnpos_set(&s, "sinusoidal.base=100"), EPAR_OK, "--set sinusoidal.base=100");
    check_int(epar_nnpos_alloc(&p, EPAR_MECH_SINUSOIDAL, &s, 5, 4, 1, 1), EPAR_OK, "sinusoidal alloc");
    double row[4];
    epar_mech_sinusoid(3.0, 4, 100, 0, row);
    for (int c = 0; c < 4; c++) check_rel(p.pe[3 * 4 + c], s.init_sd * row[c], 1e-5, "sinusoidal.base=100: p_3[%d]", c);
    epar_nnpos_free(&p);
    check_int(epar_nnpos_set(&s, "none.base=1"), EPAR_EINVAL, "none has no parameters");
}

static void test_sinusoid(void)
{
    struct epar_nnpos_settings s = settings();
    struct epar_nnpos p;
    check_int(epar_nnpos_alloc(&p, EPAR_MECH_SINUSOIDAL, &s, 5, 4, 1, 1), EPAR_OK, "sinusoidal alloc");
    /* §5 worked: p_1 (d=4) = [0.841471, 0.540302, 0.00999983, 0.99995], scaled by init_sd (Vaswani's balance of
     * token embedding and sinusoid for embeddings of sd init_sd) */
    const double want[4] = {0.841471, 0.540302, 0.00999983, 0.99995};
    for (int c = 0; c < 4; c++) check_rel(p.pe[4 + c], s.init_sd * want[c], 1e-5, "sinusoid p_1[%d]", c);
    float x[2 * 5 * 4];
    memset(x, 0, sizeof x);
    epar_nnpos_embed_forward(&p, x, 2, 5);
    check_rel(x[20 + 4], s.init_sd * 0.841471, 1e-5, "the sinusoid is added to every batch item");
    epar_nnpos_free(&p);
}

static void test_epar(void)
{
    int L = 16, C = 8, H = 2, NL = 2;
    struct epar_nnpos_settings s = settings();   /* alpha 1, beta 1, gamma 0.5 */
    struct epar_nnpos p;
    check_int(epar_nnpos_alloc(&p, EPAR_MECH_EPAR_ENHANCED, &s, L, C, H, NL), EPAR_OK, "epar alloc");
    epar_nnpos_prepare(&p, 8);
    /* §4 worked: L=8, |i-j|=7 gives 0.805621; the factor uses L = the current length by default */
    check_rel(epar_nnpos_factor(&p, 1)[L + 7], 0.805621, 1e-6, "enhanced factor, L = T = 8, d = 7, layer 1 head 1");
    epar_nnpos_prepare(&p, 16);
    struct epar_posfx fx = {EPAR_FORM_ENHANCED, 1, 1, 0.5};
    check_rel(epar_nnpos_factor(&p, 0)[7], epar_posfx_value(&fx, 7, 16), 1e-7, "at T = 16 the same distance uses L = 16");
    epar_nnpos_free(&p);
    s.posfx_length = 8;
    check_int(epar_nnpos_alloc(&p, EPAR_MECH_EPAR_BASIC, &s, L, C, H, NL), EPAR_OK, "epar basic, fixed L");
    epar_nnpos_prepare(&p, 16);
    /* §3 worked: L=8, |i-j|=7: 0.416862 */
    check_rel(epar_nnpos_factor(&p, 0)[7], 0.416862, 1e-6, "basic factor with posfx_length 8 at T = 16");
    epar_nnpos_free(&p);
    /* learned: theta = ln(alpha, beta, gamma) per layer and head */
    s = settings();
    s.learn_posfx = 1;
    s.fx = (struct epar_posfx){EPAR_FORM_ENHANCED, 1.0, 2.0, 1.5};
    check_int(epar_nnpos_alloc(&p, EPAR_MECH_EPAR_ENHANCED, &s, L, C, H, NL), EPAR_OK, "epar learned alloc");
    size_t n = epar_nnpos_n_params(&p);
    check_int((long)n, (long)NL * H * 3, "learned: 3 numbers per layer and head");
    float *theta = calloc(n, sizeof *theta), *dtheta = calloc(n, sizeof *dtheta);
    p.theta = theta;
    p.dtheta = dtheta;
    epar_nnpos_init(&p, NULL);
    check_rel(theta[1], log(2.0), 1e-6, "theta starts at ln(beta)");
    theta[3 * 3 + 0] = -40.0f;    /* layer 1 head 1: alpha = exp(-40) is still > 0 */
    struct epar_posfx e = epar_nnpos_effect(&p, 1, 1);
    check_true(e.alpha > 0 && e.beta > 0 && e.gamma > 0, "exp parametrisation keeps alpha, beta, gamma > 0");
    free(theta); free(dtheta);
    epar_nnpos_free(&p);
}

/* q, k rows (T, 3C) with random entries, transformed by mechanism id's qk hook at length T; the model was "trained"
 * at L (settings resolved there) and is built at Tmax = T */
static float *qk_at(enum epar_mech_id id, struct epar_nnpos_settings s, int L, int T, const float *x)
{
    int C = 8, NH = 2;
    struct epar_nnpos p;
    epar_nnpos_resolve(&s, L);
    float *y = malloc((size_t)T * 3 * C * sizeof *y);
    memcpy(y, x, (size_t)T * 3 * C * sizeof *y);
    if (epar_nnpos_alloc(&p, id, &s, T, C, NH, 1) != EPAR_OK) {
        free(y);
        return NULL;
    }
    epar_nnpos_prepare(&p, T);
    epar_nnpos_qk_forward(&p, y, 1, T);
    epar_nnpos_free(&p);
    return y;
}

/* largest |a - b| over the rows t in [t0, t1) */
static double rows_diff(const float *a, const float *b, int t0, int t1)
{
    double e = 0;
    for (size_t i = (size_t)t0 * 24; i < (size_t)t1 * 24; i++) e = fmax(e, fabs((double)a[i] - b[i]));
    return e;
}

/* issue 33: ntk-rope, interpolation and log-n take the length the model was trained at by default (not the
 * catalogue's 512), so a model trained at L = 16 and evaluated at 64 differs from rope / none past L; stacked log-n */
static void test_trained_length(void)
{
    int L = 16, T = 64;
    struct epar_nnpos_settings s = settings();
    epar_nnpos_settings_default(&s);
    check_int((int)s.mp[EPAR_MECH_NTK_ROPE][1], 0, "ntk-rope.train_length defaults to 0: the trained length");
    check_int((int)s.mp[EPAR_MECH_INTERPOLATION][1], 0, "interpolation.train_length defaults to the trained length");
    check_int((int)s.mp[EPAR_MECH_LOGN][0], 0, "log-n.train_length defaults to the trained length");
    struct epar_nnpos_settings r = s;
    epar_nnpos_resolve(&r, 32);
    check_int((int)r.mp[EPAR_MECH_NTK_ROPE][1], 32, "resolved to the run's length");
    struct epar_nnpos_settings e = s;
    check_int(epar_nnpos_set(&e, "ntk-rope.train_length=100"), EPAR_OK, "train_length set explicitly");
    epar_nnpos_resolve(&e, 32);
    check_int((int)e.mp[EPAR_MECH_NTK_ROPE][1], 100, "an explicit train_length is kept");
    check_int(epar_nnpos_set(&e, "ntk-rope.train_length=0"), EPAR_EINVAL, "0 is not a length one can set");

    float *x = malloc((size_t)T * 24 * sizeof *x);
    gsl_rng *g = epar_rng_alloc(3, 0, EPAR_RNG_DATA);
    for (int i = 0; i < T * 24; i++) x[i] = (float)(gsl_rng_uniform(g) - 0.5);
    epar_rng_free(g);
    float *none = qk_at(EPAR_MECH_NONE, s, L, T, x), *rope = qk_at(EPAR_MECH_ROPE, s, L, T, x);
    float *ntk = qk_at(EPAR_MECH_NTK_ROPE, s, L, T, x), *pi = qk_at(EPAR_MECH_INTERPOLATION, s, L, T, x);
    float *logn = qk_at(EPAR_MECH_LOGN, s, L, T, x);
    /* within L: the same model (bit for bit) */
    float *ntk_in = qk_at(EPAR_MECH_NTK_ROPE, s, L, L, x), *pi_in = qk_at(EPAR_MECH_INTERPOLATION, s, L, L, x);
    float *rope_in = qk_at(EPAR_MECH_ROPE, s, L, L, x);
    check_true(none && rope && ntk && pi && logn && ntk_in && pi_in && rope_in, "every model built");
    if (none && rope && ntk && pi && logn && ntk_in && pi_in && rope_in) {
        check_abs(rows_diff(ntk_in, rope_in, 0, L), 0, 0, "ntk-rope at the trained length is rope");
        check_abs(rows_diff(pi_in, rope_in, 0, L), 0, 0, "interpolation at the trained length is rope");
        check_abs(rows_diff(logn, none, 0, L - 1), 0, 0, "log-n is none up to the trained length (t + 1 <= L)");
        check_true(rows_diff(logn, none, L, T) > 1e-3, "log-n differs from none past the trained length");
        check_true(rows_diff(ntk, rope, 1, T) > 1e-4, "ntk-rope at 4L differs from rope");
        check_true(rows_diff(pi, rope, 1, T) > 1e-3, "interpolation at 4L differs from rope");
        /* interpolation at 4L is rope at positions t / 4: with one row repeated, row 4t of PI is row t of rope */
        float *same = malloc((size_t)T * 24 * sizeof *same);
        for (int t = 0; t < T; t++) memcpy(same + (size_t)t * 24, x, 24 * sizeof *same);
        float *pis = qk_at(EPAR_MECH_INTERPOLATION, s, L, T, same), *ropes = qk_at(EPAR_MECH_ROPE, s, L, T, same);
        double d = 0;
        for (int t = 0; pis && ropes && 4 * t < T; t++)
            for (int c = 0; c < 24; c++) d = fmax(d, fabs((double)pis[4 * t * 24 + c] - ropes[t * 24 + c]));
        check_true(pis && ropes, "repeated-row models built");
        check_abs(d, 0, 1e-5, "interpolation at 4L: position 4t is rope's position t");
        free(pis);
        free(ropes);
        free(same);
        /* the catalogue's analysis default 512 would make them rope and none at 64: what issue 33 found */
        struct epar_nnpos_settings old = s;
        old.mp[EPAR_MECH_NTK_ROPE][1] = old.mp[EPAR_MECH_LOGN][0] = 512;
        float *ntk512 = qk_at(EPAR_MECH_NTK_ROPE, old, L, T, x), *logn512 = qk_at(EPAR_MECH_LOGN, old, L, T, x);
        check_true(ntk512 && rows_diff(ntk512, rope, 0, T) == 0, "with train_length 512 ntk-rope at 64 is rope (the old default)");
        check_true(logn512 && rows_diff(logn512, none, 0, T) == 0, "with train_length 512 log-n at 64 is none");
        free(ntk512);
        free(logn512);
        /* log-n stacked on rope: rope's rows times max(1, log_L(t + 1)) */
        struct epar_nnpos_settings st = s;
        st.logn_length = L;
        float *rl = qk_at(EPAR_MECH_ROPE, st, L, T, x);
        double dq = 0;
        for (int t = 0; rl && t < T; t++) {
            double k = epar_mech_logn(t + 1.0, L, 1);
            for (int c = 0; c < 24; c++) {
                double want = c < 8 ? k * rope[t * 24 + c] : rope[t * 24 + c];   /* q scaled, k and v not */
                dq = fmax(dq, fabs(rl[t * 24 + c] - want));
            }
        }
        check_true(rl != NULL, "rope + log-n built");
        check_abs(dq, 0, 1e-5, "rope + log-n: q rotated then scaled by max(1, log_L(t + 1)), k unchanged");
        free(rl);
        st.logn_length = 1;
        struct epar_nnpos bad;
        check_int(epar_nnpos_alloc(&bad, EPAR_MECH_ROPE, &st, T, 8, 2, 1), EPAR_EINVAL, "a stacked log-n of length 1 is refused");
        st.logn_length = L;
        check_int(epar_nnpos_alloc(&bad, EPAR_MECH_LOGN, &st, T, 8, 2, 1), EPAR_EINVAL, "log-n on log-n is refused");
    }
    free(none); free(rope); free(ntk); free(pi); free(logn); free(ntk_in); free(pi_in); free(rope_in);
    free(x);
}

int main(void)
{
    test_registry();
    test_inputs();
    test_patterns();
    test_rope();
    test_alibi();
    test_t5();
    test_txl();
    test_sinusoid();
    test_namespace();
    test_epar();
    test_trained_length();
    return check_summary("test_nnpos");
}
