/* The file mechanisms (lib/mechs/) against float64 references written from their papers: the worked numbers of
 * their documentation, their analysis form (compare) and their trained tables (lib/nnpos) at lengths and
 * settings where each one's own effect shows (the generic tests of test_nn.c run at sizes where some of them are
 * plain RoPE). Found by id, as a user names them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_randist.h>
#include "check.h"
#include "lib/err.h"
#include "lib/mech.h"
#include "lib/nnpos.h"

/* st is EPAR_OK, checked */
static int ok(int st, const char *what)
{
    check_int(st, EPAR_OK, "%s", what);
    return st == EPAR_OK;
}

static enum epar_mech_id find(const char *name)
{
    enum epar_mech_id id = EPAR_MECH_NONE;
    check_int(epar_mech_find(name, &id), EPAR_OK, "%s is in the catalogue", name);
    check_true(epar_mech_file(id) != NULL, "%s is a file mechanism", name);
    return id;
}

/* trained tables of mechanism id at Tmax for heads of width hs, NH heads, NL layers, with catalogue values set */
static int trained(struct epar_nnpos *p, enum epar_mech_id id, int Tmax, int C, int NH, int NL, const char *const *set)
{
    struct epar_nnpos_settings s;
    epar_nnpos_settings_default(&s);
    for (int k = 0; set && set[k]; k++) check_int(epar_nnpos_set(&s, set[k]), EPAR_OK, "--set %s", set[k]);
    return epar_nnpos_alloc(p, id, &s, Tmax, C, NH, NL);
}

/* KERPLE (Chi et al. 2022), log variant: b(d) = -r1 log(1 + r2 d) */
static void test_kerple(void)
{
    enum epar_mech_id id = find("kerple");
    double p[EPAR_MECH_MAX_PARAMS];
    epar_mech_defaults(id, p);
    struct epar_mech m;
    if (!ok(epar_mech_init(&m, id, p, 4, 8, 2, 1, 1), "kerple: compare's form")) return;
    check_abs(m.bias[0 * 16 + 1 * 4 + 0], -0.693147180560, 1e-12, "kerple r1=1 r2=1: b(1) = -ln 2");
    check_abs(m.bias[1 * 16 + 3 * 4 + 0], -1.386294361120, 1e-12, "kerple r1=1 r2=1: b(3) = -ln 4 (head 1)");
    check_abs(m.bias[2 * 4 + 2], 0, 0, "kerple: b(0) = 0");
    epar_mech_free(&m);
    p[epar_mech_param_index(id, "r1")] = 2;
    p[epar_mech_param_index(id, "r2")] = 0.5;
    if (!ok(epar_mech_init(&m, id, p, 4, 8, 2, 1, 1), "kerple r1=2 r2=0.5")) return;
    check_abs(m.bias[2 * 4 + 0], -1.386294361120, 1e-12, "kerple r1=2 r2=0.5: b(2) = -2 ln 2");
    epar_mech_free(&m);

    /* trained: theta = (ln r1, ln r2) per layer and head; the table of layer l, head h at distance d */
    struct epar_nnpos q;
    if (!ok(trained(&q, id, 16, 8, 2, 3, NULL), "kerple: trained form")) return;
    size_t n = epar_nnpos_n_params(&q);
    check_int((long)n, 3 * 2 * 2, "kerple learns r1, r2 per layer and head");
    float th[12];
    q.theta = th;
    epar_nnpos_init(&q, NULL);
    check_abs(th[0], 0, 0, "kerple: theta starts at ln r1 = ln 1");
    for (size_t k = 0; k < n; k++) th[k] = (float)(0.1 * (double)k - 0.4);
    epar_nnpos_prepare(&q, 12);
    double worst = 0;
    for (int l = 0; l < 3; l++) {
        const float *b = epar_nnpos_bias(&q, l);
        for (int h = 0; h < 2; h++)
            for (int d = 0; d < 12; d++) {
                double r1 = exp(0.1 * (double)(2 * (l * 2 + h)) - 0.4), r2 = exp(0.1 * (double)(2 * (l * 2 + h) + 1) - 0.4);
                worst = fmax(worst, fabs(b[h * 16 + d] - (-r1 * log(1 + r2 * d))));
            }
    }
    check_abs(worst, 0, 2e-6, "kerple: every layer's and head's trained table is -r1 log(1 + r2 d) of its theta");
    q.theta = NULL;
    epar_nnpos_free(&q);
}

/* xPos (Sun et al. 2022): q.k of pair i carries RoPE's rotation and zeta_i^((n - m)/B) */
static void test_xpos(void)
{
    enum epar_mech_id id = find("xpos");
    const struct epar_mech_def *d = epar_mech_file(id);
    double p[EPAR_MECH_MAX_PARAMS];
    epar_mech_defaults(id, p);
    p[epar_mech_param_index(id, "scale_base")] = 1;
    struct epar_mech m;
    int L = 6, dk = 4;
    if (!ok(epar_mech_init(&m, id, p, L, 8, 2, 1, 1), "xpos: compare's form")) return;
    /* every row the same q = k = (1, 0, 1, 0): after the transform q_n . k_m = sum_i zeta_i^(n-m) cos((n-m) theta_i) */
    double Q[6 * 4], K[6 * 4];
    for (int t = 0; t < L * dk; t++) Q[t] = K[t] = t % 2 ? 0 : 1;
    d->qk(&m, 0, Q, K, L, dk, dk);
    double z[2] = {0.4 / 1.4, 0.9 / 1.4}, th[2] = {1, 0.01}, worst = 0;
    for (int n = 0; n < L; n++)
        for (int j = 0; j < L; j++) {
            double got = 0, want = 0;
            for (int c = 0; c < dk; c++) got += Q[n * dk + c] * K[j * dk + c];
            for (int i = 0; i < 2; i++) want += pow(z[i], n - j) * cos((n - j) * th[i]);
            worst = fmax(worst, fabs(got - want) / fmax(1, fabs(want)));
        }
    check_abs(worst, 0, 1e-12, "xpos (B = 1): q_n . k_m = sum_i zeta_i^(n-m) cos((n-m) theta_i), every n, m");
    /* the documentation's zeta_0, measured: pair 0 alone, q_1 . k_0 = zeta_0 cos(theta_0) */
    for (int t = 0; t < L * dk; t++) Q[t] = K[t] = t % dk == 0 ? 1 : 0;
    d->qk(&m, 0, Q, K, L, dk, dk);
    double q1k0 = 0;
    for (int c = 0; c < dk; c++) q1k0 += Q[dk + c] * K[c];
    check_abs(q1k0 / cos(1.0), 0.285714, 1e-6, "xpos: zeta_0 = 0.4 / 1.4 measured at distance 1 (the documentation's)");
    epar_mech_free(&m);

    /* trained tables at B = 4: q's entry times k's entry of the same pair is the rotation by (n - m) theta_i times
     * zeta_i^((n-m)/4), in fp32 */
    struct epar_nnpos q;
    const char *set[] = {"xpos.scale_base=4", NULL};
    if (!ok(trained(&q, id, 32, 8, 2, 1, set), "xpos: trained form")) return;
    epar_nnpos_prepare(&q, 32);
    worst = 0;
    for (int n = 0; n < 32; n++)
        for (int j = 0; j < 32; j++)
            for (int i = 0; i < 2; i++) {
                /* (q rotated) . (k rotated) of the pair for q = k = (1, 0): cq ck + sq sk */
                double got = (double)q.rcos[n * 2 + i] * q.kcos[j * 2 + i] + (double)q.rsin[n * 2 + i] * q.ksin[j * 2 + i];
                double want = pow(z[i], (n - j) / 4.0) * cos((n - j) * th[i]);
                worst = fmax(worst, fabs(got - want) / fmax(1, fabs(want)));
            }
    check_abs(worst, 0, 1e-5, "xpos (B = 4, T = 32): trained q and k tables give zeta_i^((n-m)/B) cos((n-m) theta_i)");
    epar_nnpos_free(&q);
}

/* YaRN (Peng et al. 2023): the documentation's worked numbers, RoPE up to L, and compare = trained past L */
static void test_yarn(void)
{
    enum epar_mech_id id = find("yarn");
    const struct epar_mech_def *d = epar_mech_file(id);
    struct epar_nnpos q;
    const char *set[] = {"yarn.train_length=8", NULL};
    if (!ok(trained(&q, id, 16, 8, 2, 1, set), "yarn: trained form")) return;
    /* T = 16, L = 8: s = 2, theta'_0 = 0.504407, theta'_1 = 0.005, factor 0.1 ln 2 + 1 */
    epar_nnpos_prepare(&q, 16);
    double f = 0.1 * log(2) + 1, g = (8 / (2 * M_PI) - 1) / 31, th0 = (1 - g) / 2 + g;
    check_abs(atan2(q.rsin[1 * 2 + 0], q.rcos[1 * 2 + 0]), 0.504407, 1e-6,
              "yarn: theta'_0 measured at t = 1 (the documentation's)");
    check_abs(q.rcos[1 * 2 + 0], f * cos(th0), 1e-6, "yarn (T = 2L): pair 0 turns at theta'_0, times the factor");
    check_abs(q.rsin[3 * 2 + 1], f * sin(3 * 0.005), 1e-7, "yarn (T = 2L): pair 1 interpolated fully (0.01 / 2)");
    check_true(q.kcos == NULL, "yarn: k shares q's tables (the factor on both)");
    /* up to L it is RoPE: cos(t theta_i), no factor */
    epar_nnpos_prepare(&q, 8);
    check_abs(q.rcos[5 * 2 + 1], cos(5 * 0.01), 1e-7, "yarn (T = L): RoPE's table");
    check_abs(q.rsin[7 * 2 + 0], sin(7.0), 1e-6, "yarn (T = L): RoPE's table, pair 0");

    /* compare's form at L' = 16 with train_length 8 rotates as the trained tables at T = 16 */
    double p[EPAR_MECH_MAX_PARAMS];
    epar_mech_defaults(id, p);
    p[epar_mech_param_index(id, "train_length")] = 8;
    struct epar_mech m;
    if (!ok(epar_mech_init(&m, id, p, 16, 8, 2, 1, 1), "yarn: compare's form")) {
        epar_nnpos_free(&q);
        return;
    }
    epar_nnpos_prepare(&q, 16);
    double Q[16 * 4], K[16 * 4], worst = 0;
    for (int t = 0; t < 16 * 4; t++) Q[t] = K[t] = t % 2 ? 0 : 1;
    d->qk(&m, 0, Q, K, 16, 4, 4);
    for (int t = 0; t < 16; t++)
        for (int i = 0; i < 2; i++) {
            worst = fmax(worst, fabs(Q[t * 4 + 2 * i] - q.rcos[t * 2 + i]));
            worst = fmax(worst, fabs(Q[t * 4 + 2 * i + 1] - q.rsin[t * 2 + i]));
        }
    check_abs(worst, 0, 1e-6, "yarn: compare's transform at 2L = the trained tables at 2L");
    epar_mech_free(&m);
    epar_nnpos_free(&q);
}

/* A learned table's backward on its own: the loss sum_{b,h,i,j} G_bhij table_h(i, j) (pair tables, FIRE) or
 * sum_{b,h,d} G_bhd table_h(d) (bias tables, KERPLE) for random G, its gradient by the mechanism's backward against
 * central differences of its prepare, every parameter (the model's check picks 16 entries per tensor) */
static double table_loss(struct epar_nnpos *p, const float *G, int B, int T, int l)
{
    epar_nnpos_prepare(p, T);
    double s = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < p->NH; h++)
            for (int i = 0; i < T; i++) {
                if (p->pair_grad) {
                    const float *row = epar_nnpos_pair(p, l) + h * p->pair_head + (size_t)i * p->Tmax;
                    for (int j = 0; j <= i; j++) s += (double)G[(((size_t)b * p->NH + h) * T + i) * T + j] * row[j];
                } else {
                    s += (double)G[((size_t)b * p->NH + h) * T + i] * epar_nnpos_bias(p, l)[h * p->Tmax + i];
                }
            }
    return s;
}

static void test_learned_backward(const char *name, const char *const *set)
{
    enum epar_mech_id id = find(name);
    struct epar_nnpos p;
    int T = 9, B = 2, NL = 2;
    if (!ok(trained(&p, id, 12, 8, 2, NL, set), name)) return;
    size_t n = epar_nnpos_n_params(&p);
    float *th = calloc(n, sizeof *th), *dth = calloc(n, sizeof *dth), *G = calloc((size_t)B * 2 * T * T, sizeof *G);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    p.theta = th, p.dtheta = dth;
    epar_nnpos_init(&p, r);
    for (size_t k = 0; k < (size_t)B * 2 * T * T; k++) G[k] = (float)gsl_ran_gaussian(r, 1.0);
    int bad = 0;
    for (int l = 0; l < NL; l++) {
        memset(dth, 0, n * sizeof *dth);
        struct epar_nnpos_grad g = {NULL, p.pair_grad ? NULL : G, NULL, p.pair_grad ? G : NULL};
        epar_nnpos_prepare(&p, T);
        epar_nnpos_backward(&p, l, &g, B, T);
        for (size_t k = 0; k < n; k++) {
            float keep = th[k], h = 1e-3f * fmaxf(1, fabsf(keep));
            th[k] = keep + h;
            double up = table_loss(&p, G, B, T, l);
            th[k] = keep - h;
            double dn = table_loss(&p, G, B, T, l);
            th[k] = keep;
            double num = (up - dn) / (2 * h);
            if (fabs(num - dth[k]) > 2e-2 * fmax(1, fabs(num)) && bad++ < 4)
                printf("  %s layer %d: dtheta[%zu] analytic %g numeric %g\n", name, l, k, dth[k], num);
        }
    }
    check_int(bad, 0, "%s: the backward of its tables = central differences, every parameter of both layers", name);
    p.theta = p.dtheta = NULL;
    epar_nnpos_free(&p);
    gsl_rng_free(r);
    free(th), free(dth), free(G);
}

/* FIRE (Li et al. 2023): the documentation's worked numbers through compare's form */
static void test_fire(void)
{
    enum epar_mech_id id = find("fire");
    /* trained: the pair table of layer 0 is the MLP at x = psi(i - j) / psi(max(L, i)), read back from theta */
    struct epar_nnpos p;
    const char *set[] = {"fire.train_length=4", "fire.hidden=3", NULL};
    if (!ok(trained(&p, id, 12, 8, 2, 1, set), "fire: trained form")) return;
    size_t n = epar_nnpos_n_params(&p);
    check_int((long)n, 2 * 3 + 2 * 3 + 2 + 2, "fire: W1, b1 (3), W2 (2 x 3), b2 (2), ln c, L per layer");
    float th[16] = {0.5f, -1.0f, 2.0f, /* W1 */ 0.1f, 0.3f, -0.2f, /* b1 */ 1.0f, 2.0f, 3.0f, -1.0f, 0.5f, 0.25f, /* W2 */
                    0.05f, -0.05f, /* b2 */ 0.0f, 4.0f /* ln c = 0, L = 4 */};
    p.theta = th;
    epar_nnpos_prepare(&p, 10);
    double worst = 0;
    for (int i = 0; i < 10; i++)
        for (int j = 0; j <= i; j++) {
            double x = log(1.0 + (i - j)) / log(1.0 + fmax(4, i));
            for (int h = 0; h < 2; h++) {
                double want = th[12 + h];
                for (int k = 0; k < 3; k++) want += th[6 + h * 3 + k] * fmax(0, th[k] * x + th[3 + k]);
                worst = fmax(worst, fabs(epar_nnpos_pair(&p, 0)[h * p.pair_head + (size_t)i * p.Tmax + j] - want));
            }
        }
    check_abs(worst, 0, 1e-6, "fire: trained table = f_h(log(1 + (i-j)) / log(1 + max(4, i))) from the paper, every pair");
    /* the documentation's x, measured: an MLP that passes its input through (head 0: relu(x)), c = 1, L = 4 */
    float pass[16] = {1, 0, 0, /* W1 */ 0, 0, 0, /* b1 */ 1, 0, 0, 0, 0, 0, /* W2 */ 0, 0, /* b2 */ 0, 4};
    p.theta = pass;
    epar_nnpos_prepare(&p, 10);
    check_abs(epar_nnpos_pair(&p, 0)[2 * p.Tmax + 0], 0.682606, 1e-6, "fire: x(i 2, j 0) = ln 3 / ln 5 measured (the documentation's)");
    check_abs(epar_nnpos_pair(&p, 0)[8 * p.Tmax + 0], 1, 1e-6, "fire: x(i 8, j 0) = 1 past L measured (the documentation's)");
    p.theta = NULL;
    epar_nnpos_free(&p);
}

int main(void)
{
    test_kerple();
    test_xpos();
    test_yarn();
    test_fire();
    test_learned_backward("kerple", NULL);
    const char *fire_set[] = {"fire.train_length=5.5", "fire.hidden=4", "fire.c=0.7", NULL};   /* the threshold the max for rows 0..5 (not a tie: a kink) */
    test_learned_backward("fire", fire_set);
    return check_summary("test_mechs");
}
