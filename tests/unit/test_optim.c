/* test_optim: the learning-rate schedule, clipping and one AdamW update against hand-computed values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "lib/optim.h"
#include "lib/seams.h"
#include "check.h"

int main(void)
{
    struct epar_optim_config c = {.lr = 3e-3, .lr_min_ratio = 0.1, .warmup = 10, .steps = 110, .beta1 = 0.9,
                                  .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .clip = 1.0};
    check_rel(epar_optim_lr(&c, 0), 3e-4, 1e-12, "warm-up starts at lr / warmup");
    check_rel(epar_optim_lr(&c, 9), 3e-3, 1e-12, "warm-up ends at lr");
    check_rel(epar_optim_lr(&c, 10), 3e-3, 1e-12, "cosine starts at lr");
    check_rel(epar_optim_lr(&c, 109), 3e-4, 1e-12, "cosine ends at lr_min at the last step");
    /* midpoint u = 1/2: lr_min + (lr - lr_min)/2; (s - 10)/99 = 1/2 at s = 59.5: check s = 59 by formula */
    double u = 49.0 / 99.0, want = 3e-4 + 2.7e-3 * 0.5 * (1 + cos(M_PI * u));
    check_rel(epar_optim_lr(&c, 59), want, 1e-12, "cosine at step 59");
    struct epar_optim_config z = c;
    z.warmup = 0;
    check_rel(epar_optim_lr(&z, 0), 3e-3, 1e-12, "no warm-up: the first step uses lr");
    struct epar_optim_config bad = c;
    bad.lr = -1;
    check_int(epar_optim_config_validate(&bad), EPAR_EINVAL, "negative lr refused");
    bad = c;
    bad.beta2 = 1;
    check_int(epar_optim_config_validate(&bad), EPAR_EINVAL, "beta2 = 1 refused");

    struct epar_optim o;
    check_int(epar_optim_alloc(&o, &c, 3), EPAR_OK, "alloc");
    float p[3] = {0.5f, -1.25f, 2.0f}, g[3] = {3.0f, 4.0f, 0.0f};   /* ||g|| = 5 > clip 1 */
    struct epar_optim_segment seg[2] = {{0, 2, 1}, {2, 1, 0}};
    double norm = epar_optim_step(&o, p, g, seg, 2, 1e-2);
    check_rel(norm, 5.0, 1e-12, "norm before clipping");
    check_rel(g[0], 3.0, 0, "the gradient buffer is left as it was");
    /* first step with the clipped g' = g / 5: m = 0.1 g', v = 0.05 g'^2, mhat/sqrt(vhat) = sign(g): p -= lr (1 + wd p) */
    check_rel(p[0], 0.5 - 1e-2 * (1.0 + 0.1 * 0.5), 1e-5, "AdamW first step, decayed entry");
    check_rel(p[2], 2.0, 1e-7, "zero gradient, no decay: unchanged");
    float g2[3] = {0.3f, 0.0f, 0.0f};
    epar_optim_step(&o, p, g2, seg, 2, 1e-2);
    /* second step by hand */
    double m = 0.9 * 0.06 + 0.1 * 0.3, v = 0.95 * 0.05 * 0.36 + 0.05 * 0.09;
    double mh = m / (1 - 0.81), vh = v / (1 - 0.9025);
    double p0 = 0.5 - 1e-2 * (1.0 + 0.05);
    check_rel(p[0], p0 - 1e-2 * (mh / (sqrt(vh) + 1e-8) + 0.1 * p0), 1e-5, "AdamW second step by hand");
    epar_optim_free(&o);

    /* the vectorised update and the scalar one give the same bits (lengths around the 8-lane step, both segment kinds,
     * clipping on) */
    for (int n = 1; n <= 45; n += 11) {
        struct epar_optim oa, ob;
        check_int(epar_optim_alloc(&oa, &c, (size_t)n) | epar_optim_alloc(&ob, &c, (size_t)n), EPAR_OK, "alloc %d", n);
        float pa[45], pb[45], ga[45];
        unsigned x = 12345u;
        for (int i = 0; i < n; i++) {
            x = x * 1103515245u + 12345u;
            pa[i] = pb[i] = ((float)(x >> 8) / 16777216.0f - 0.5f) * 4.0f;
            x = x * 1103515245u + 12345u;
            ga[i] = ((float)(x >> 8) / 16777216.0f - 0.5f) * 3.0f;
        }
        struct epar_optim_segment sg[2] = {{0, (size_t)n / 2, 1}, {(size_t)n / 2, (size_t)(n - n / 2), 0}};
        for (int step = 0; step < 3; step++) {
            epar_optim_set_portable(0);
            epar_optim_step(&oa, pa, ga, sg, 2, 3e-3);
            epar_optim_set_portable(1);
            epar_optim_step(&ob, pb, ga, sg, 2, 3e-3);
        }
        epar_optim_set_portable(0);
        check_true(!memcmp(pa, pb, (size_t)n * sizeof *pa) && !memcmp(oa.m, ob.m, (size_t)n * sizeof(float)) &&
                       !memcmp(oa.v, ob.v, (size_t)n * sizeof(float)),
                   "n = %d: vector and scalar AdamW give the same bits", n);
        epar_optim_free(&oa);
        epar_optim_free(&ob);
    }
    /* the gradient norm: per block of 4096 a sum of squares in double from the block's first element, the blocks' sums
     * in order; the same bits whatever order the blocks are computed in (lengths with 4-block groups, leftover whole
     * blocks and a partial one) */
    size_t lens[] = {1, 4096, 4097, 4 * 4096, 9 * 4096 + 123, 7 * 4096};
    for (size_t c2 = 0; c2 < sizeof lens / sizeof *lens; c2++) {
        size_t n = lens[c2];
        float *gg = malloc(n * sizeof *gg);
        unsigned x = 777u;
        for (size_t i = 0; i < n; i++) {
            x = x * 1103515245u + 12345u;
            gg[i] = ((float)(x >> 8) / 16777216.0f - 0.5f) * 0.01f;
        }
        double total = 0.0;
        for (size_t b0 = 0; b0 < n; b0 += 4096) {
            double sb = 0.0;
            for (size_t i = b0; i < n && i < b0 + 4096; i++) sb += (double)gg[i] * gg[i];
            total += sb;
        }
        struct epar_optim on;
        check_int(epar_optim_alloc(&on, &c, n), EPAR_OK, "alloc %zu", n);
        double got = epar_optim_grad_norm(&on, gg), ref = sqrt(total);
        check_true(!memcmp(&got, &ref, sizeof got), "n = %zu: gradient norm = the block-by-block sum, bit for bit", n);
        epar_optim_free(&on);
        free(gg);
    }
    return check_summary("test_optim");
}
