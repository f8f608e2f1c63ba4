/* sparse: every structured kernel against the dense masked path of lib/mech, to 1e-12 relative to max |o|.
 *
 * For each mask mechanism (sliding-window, block-sparse, strided, sparse-fixed, global-local, pi-attention)
 * at several parameter sets, lengths L (1 .. 257, powers of two and not), head dimensions d, causal or not,
 * tile sizes (1 row, odd, the default, wider than L) and row strides (head slices, ld > d), under every set of
 * vector kernels the CPU can run (c, avx2, avx512: epar_sparse_set_isa) and on both paths (tiles, and row by
 * row for the whole pattern):
 *   - the reference: the mechanism's own mask(s) from epar_mech_init, with j <= i when causal, through
 *     epar_mech_masked_output_dense (pi-attention: g O(local) + (1-g) O(step));
 *   - epar_sparse_output agrees with it;
 *   - epar_sparse_pairs equals the number of allowed pairs of the mask(s);
 * and on one layer per kind, A of epar_mech_forward (the analysis path, with its causal handling) times V
 * agrees with the kernel on that layer's Q, K, V head slices. No mask here leaves a row empty (the diagonal is
 * always allowed; epar_mech_forward reports 0 empty rows, checked), but pieces do leave rows without keys (the
 * first rows of the strided residue classes, the first block of sparse-fixed, the global rows of
 * global-local), which the online softmax must skip. */
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include "lib/attn.h"
#include "lib/err.h"
#include "lib/mech.h"
#include "lib/rng.h"
#include "lib/sparse.h"
#include "lib/seams.h"
#include "check.h"

#define TOL 1e-12

struct setting {
    enum epar_mech_id id;
    const char *name;
    double p[EPAR_MECH_MAX_PARAMS];
    int np;                 /* parameters given (the rest are defaults) */
};

static void params(const struct setting *s, double *p)
{
    epar_mech_defaults(s->id, p);
    for (int k = 0; k < s->np; k++) p[k] = s->p[k];
}

/* max |a - b| / max(max |b|, tiny) over (L, d) blocks with row strides lda, ldb */
static double rel_err(const double *a, int lda, const double *b, int ldb, int L, int d)
{
    double e = 0, m = 0;
    for (int i = 0; i < L; i++)
        for (int c = 0; c < d; c++) {
            double x = a[(size_t)i * lda + c], y = b[(size_t)i * ldb + c];
            if (fabs(x - y) > e || isnan(x)) e = isnan(x) ? INFINITY : fabs(x - y);
            if (fabs(y) > m) m = fabs(y);
        }
    return e / (m > 1e-300 ? m : 1e-300);
}

/* M (L,L) &= j <= i; returns the pairs left */
static long apply_causal(unsigned char *M, int L, int causal)
{
    long n = 0;
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++) {
            if (causal && j > i) M[(size_t)i * L + j] = 0;
            n += M[(size_t)i * L + j];
        }
    return n;
}

/* compact copies (L, d) of the first d columns of the (L, ld) arrays, as epar_mech_masked_output_dense takes */
static void compact(const double *X, int ld, int L, int d, double *out)
{
    for (int i = 0; i < L; i++) memcpy(out + (size_t)i * d, X + (size_t)i * ld, (size_t)d * sizeof *out);
}

static void check_setting(const struct setting *s, int L, int d, int causal, int tile, int ld, gsl_rng *r)
{
    double p[EPAR_MECH_MAX_PARAMS];
    params(s, p);
    struct epar_mech m;
    if (epar_mech_init(&m, s->id, p, L, d, 1, causal, 7)) {
        check_true(0, "%s L=%d d=%d causal=%d: epar_mech_init refused (%s)", s->name, L, d, causal, epar_err_message());
        return;
    }
    struct epar_sparse_pattern pat;
    int st = epar_sparse_pattern_from_mech(&m, &pat);
    check_int(st, EPAR_OK, "%s L=%d: pattern from the mechanism", s->name, L);
    if (st) { epar_mech_free(&m); return; }
    pat.tile = tile;
    size_t LL = (size_t)L * L, Ld = (size_t)L * ld;
    unsigned char *M1 = malloc(LL), *M2 = malloc(LL);
    double *Q = malloc(Ld * sizeof *Q), *K = malloc(Ld * sizeof *K), *V = malloc(Ld * sizeof *V),
           *Qc = malloc((size_t)L * d * sizeof *Qc), *Kc = malloc((size_t)L * d * sizeof *Kc),
           *Vc = malloc((size_t)L * d * sizeof *Vc), *Oref = malloc((size_t)L * d * sizeof *Oref),
           *O2 = malloc((size_t)L * d * sizeof *O2), *S = malloc(LL * sizeof *S),
           *O = malloc((size_t)L * (d + 3) * sizeof *O), *Od = malloc((size_t)L * (d + 3) * sizeof *Od);
    if (!M1 || !M2 || !Q || !K || !V || !Qc || !Kc || !Vc || !Oref || !O2 || !S || !O || !Od) {
        check_true(0, "out of memory at L=%d", L);
        goto done;
    }
    /* high-entropy inputs, scores of order several units (peaked rows) */
    epar_rng_normal(r, Q, Ld, 1.7);
    epar_rng_normal(r, K, Ld, 1.3);
    epar_rng_normal(r, V, Ld, 2.385);
    compact(Q, ld, L, d, Qc);
    compact(K, ld, L, d, Kc);
    compact(V, ld, L, d, Vc);
    double scale = 1.0 / sqrt((double)d) * 1.25;
    memcpy(M1, m.mask, LL);
    long pairs = apply_causal(M1, L, causal);
    epar_mech_masked_output_dense(Qc, Kc, Vc, M1, L, d, scale, Oref, S);
    if (m.mask2) {
        memcpy(M2, m.mask2, LL);
        pairs += apply_causal(M2, L, causal);
        epar_mech_masked_output_dense(Qc, Kc, Vc, M2, L, d, scale, O2, S);
        for (size_t t = 0; t < (size_t)L * d; t++) Oref[t] = m.gate * Oref[t] + (1.0 - m.gate) * O2[t];
    }
    check_int(epar_sparse_pairs(&pat), pairs, "%s L=%d causal=%d: pairs = allowed pairs of the mask(s)", s->name, L,
              causal);

    struct epar_sparse_ws ws;
    if ((st = epar_sparse_ws_alloc(&ws, &pat, d))) {
        check_true(0, "%s L=%d: workspace (%s)", s->name, L, epar_err_message());
        goto done;
    }
    int ldo = d + 3;
    for (size_t t = 0; t < (size_t)L * ldo; t++) O[t] = Od[t] = 12345.0;  /* columns d..ldo-1 must stay */
    epar_sparse_output(&pat, Q, K, V, ld, d, scale, O, ldo, &ws);
    double e = rel_err(O, ldo, Oref, d, L, d);
    check_true(e <= TOL, "%s L=%d d=%d causal=%d tile=%d ld=%d: structured kernel vs dense masked (rel err %.3g)",
               s->name, L, d, causal, ws.tile, ld, e);
    int kept = 1;
    for (int i = 0; i < L; i++)
        for (int c = d; c < ldo; c++) kept &= O[(size_t)i * ldo + c] == 12345.0;
    check_true(kept, "%s L=%d: columns past d of O untouched", s->name, L);
    /* a second call on the same workspace gives the same result (state is reset) */
    epar_sparse_output(&pat, Q, K, V, ld, d, scale, Od, ldo, &ws);
    check_true(rel_err(Od, ldo, O, ldo, L, d) == 0, "%s L=%d: second call on the same workspace identical", s->name, L);
    /* the other path: row by row for the whole pattern (ws.whole, chosen for a few keys per row) or tiles */
    ws.whole = !ws.whole;
    for (size_t t = 0; t < (size_t)L * ldo; t++) Od[t] = 12345.0;
    epar_sparse_output(&pat, Q, K, V, ld, d, scale, Od, ldo, &ws);
    e = rel_err(Od, ldo, Oref, d, L, d);
    check_true(e <= TOL, "%s L=%d d=%d causal=%d tile=%d ld=%d %s: structured kernel vs dense masked (rel err %.3g)",
               s->name, L, d, causal, ws.tile, ld, ws.whole ? "row by row" : "tiles", e);
    kept = 1;
    for (int i = 0; i < L; i++)
        for (int c = d; c < ldo; c++) kept &= Od[(size_t)i * ldo + c] == 12345.0;
    check_true(kept, "%s L=%d %s: columns past d of O untouched", s->name, L, ws.whole ? "row by row" : "tiles");
    epar_sparse_ws_free(&ws);
done:
    epar_mech_free(&m);
    free(M1); free(M2); free(Q); free(K); free(V); free(Qc); free(Kc); free(Vc); free(Oref); free(O2); free(S);
    free(O); free(Od);
}

/* the analysis path: A (H,L,L) of epar_mech_forward on a random layer, times V of each head, against the kernel
 * on the same head slices of Q, K (recomputed by epar_attn_project) and V = x W_V + b_V */
static void check_forward(const struct setting *s, int L, int D, int H, int causal, gsl_rng *r)
{
    double p[EPAR_MECH_MAX_PARAMS];
    params(s, p);
    struct epar_mech m;
    struct epar_layer ly;
    struct epar_attn_ws aw;
    if (epar_mech_init(&m, s->id, p, L, D, H, causal, 11)) {
        check_true(0, "%s forward L=%d: init refused (%s)", s->name, L, epar_err_message());
        return;
    }
    epar_attn_layer_alloc(&ly, L, D, 0);
    epar_attn_layer_init(&ly, r);
    epar_attn_ws_alloc(&aw, L, D);
    int dk = D / H;
    size_t LL = (size_t)L * L;
    double *X = malloc((size_t)L * D * sizeof *X), *A = malloc((size_t)H * LL * sizeof *A),
           *V = malloc((size_t)L * D * sizeof *V), *Oref = malloc((size_t)L * D * sizeof *Oref),
           *O = malloc((size_t)L * D * sizeof *O);
    epar_rng_normal(r, X, (size_t)L * D, 1.0);
    int empty = -1;
    epar_mech_forward(&m, &ly, X, A, &aw, &empty);
    check_int(empty, 0, "%s forward L=%d causal=%d: no empty row", s->name, L, causal);
    epar_attn_project(&m.cfg, &ly, &m.mods, X, &aw);
    epar_attn_values(&m.cfg, &ly, aw.x, V);
    for (int h = 0; h < H; h++)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, dk, L, 1.0, A + h * LL, L, V + h * dk, D, 0.0,
                    Oref + h * dk, D);
    struct epar_sparse_pattern pat;
    struct epar_sparse_ws ws;
    epar_sparse_pattern_from_mech(&m, &pat);
    if (epar_sparse_ws_alloc(&ws, &pat, dk)) {
        check_true(0, "%s forward: workspace", s->name);
    } else {
        for (int h = 0; h < H; h++)
            epar_sparse_output(&pat, aw.Q + h * dk, aw.K + h * dk, V + h * dk, D, dk, m.cfg.scale * m.cfg.inv_temp,
                               O + h * dk, D, &ws);
        double e = rel_err(O, D, Oref, D, L, D);
        check_true(e <= TOL, "%s L=%d D=%d H=%d causal=%d: kernel = A of epar_mech_forward times V (rel err %.3g)",
                   s->name, L, D, H, causal, e);
        epar_sparse_ws_free(&ws);
    }
    epar_mech_free(&m);
    epar_attn_layer_free(&ly);
    epar_attn_ws_free(&aw);
    free(X); free(A); free(V); free(Oref); free(O);
}

/* every kernel path on the settings: lengths, causal, tiles, strides, head dimensions */
static void check_kernels(const struct setting *set, int nset, gsl_rng *r)
{
    static const int Ls[] = {1, 2, 7, 33, 64, 100, 257};
    static const int ds[] = {1, 5, 16};
    for (int k = 0; k < nset; k++)
        for (int a = 0; a < (int)(sizeof Ls / sizeof Ls[0]); a++)
            for (int causal = 0; causal <= 1; causal++) {
                int d = ds[(a + k) % 3];
                /* block-sparse and the ring leak the future: the mechanisms still apply j <= i when causal */
                check_setting(&set[k], Ls[a], d, causal, 0, d, r);
            }
    /* tile sizes and head-slice strides on a few settings */
    static const int tiles[] = {1, 3, 32, 300};
    for (int k = 0; k < nset; k += 3)
        for (int t = 0; t < 4; t++)
            for (int causal = 0; causal <= 1; causal++) check_setting(&set[k], 100, 8, causal, tiles[t], 13, r);
    for (int t = 0; t < 4; t++) check_setting(&set[nset - 3], 257, 16, 0, tiles[t], 24, r);
    /* head dimensions past the vector widths (the 4-key and 32-column blocks of the row-by-row kernels, masked
     * tails), L not a multiple of the tile, row strides ld > d */
    for (int k = 0; k < nset; k++)
        for (int causal = 0; causal <= 1; causal++) {
            check_setting(&set[k], 130, 37, causal, 0, 37, r);
            check_setting(&set[k], 75, 64, causal, 0, 67, r);
        }
    /* a length where strided and sparse-fixed (l = 32) use dense tiles and row-by-row tiles (the short last
     * tiles of the residue classes), pi-attention ring-wrapped tiles and (through cblas) tiles of more than
     * 1200 entries on the transposed keys, in key order and in residue-class order */
    for (int k = 6; k <= 11; k += k == 7 ? 3 : 1) check_setting(&set[k], 1024, 64, 0, 0, 64, r);
    check_setting(&set[16], 1024, 64, 0, 0, 64, r);
    check_setting(&set[0], 1024, 64, 0, 0, 64, r);
}

/* the dense kernel the speed-ups are timed against: plain softmax attention over every (causal: earlier) key,
 * against the dense masked reference (epar_mech_masked_output_dense) with an all-allowed (causal: lower-triangle)
 * mask, at lengths around its block of rows, every vector kernel set */
static void check_dense_fast(gsl_rng *r)
{
    static const int Ls[] = {1, 5, EPAR_SPARSE_DENSE_ROWS - 1, EPAR_SPARSE_DENSE_ROWS, EPAR_SPARSE_DENSE_ROWS + 1, 300};
    for (size_t q = 0; q < sizeof Ls / sizeof Ls[0]; q++)
        for (int causal = 0; causal <= 1; causal++) {
            int L = Ls[q], d = 37, ld = 40, ldo = 39;
            size_t n = (size_t)L * ld;
            double *Q = malloc(n * sizeof *Q), *K = malloc(n * sizeof *K), *V = malloc(n * sizeof *V);
            double *O1 = calloc((size_t)L * ldo, sizeof *O1), *O2 = calloc((size_t)L * ldo, sizeof *O2);
            double *S = malloc((size_t)L * L * sizeof *S), *W = malloc(epar_sparse_dense_fast_ws(L, d) * sizeof *W);
            double *Qc = malloc((size_t)L * d * sizeof *Qc), *Kc = malloc((size_t)L * d * sizeof *Kc),
                   *Vc = malloc((size_t)L * d * sizeof *Vc);
            unsigned char *M = malloc((size_t)L * L);
            memset(M, 1, (size_t)L * L);
            apply_causal(M, L, causal);
            epar_rng_normal(r, Q, n, 1.5);
            epar_rng_normal(r, K, n, 1.5);
            epar_rng_normal(r, V, n, 1);
            compact(Q, ld, L, d, Qc);
            compact(K, ld, L, d, Kc);
            compact(V, ld, L, d, Vc);
            double scale = 1 / sqrt((double)d);
            epar_mech_masked_output_dense(Qc, Kc, Vc, M, L, d, scale, O1, S);   /* O1 (L, d) */
            epar_sparse_dense_fast(causal, L, Q, K, V, ld, d, scale, O2, ldo, W);
            double worst = 0;
            for (int i = 0; i < L; i++)
                for (int c = 0; c < d; c++) {
                    double a = O1[(size_t)i * d + c], b = O2[(size_t)i * ldo + c];
                    worst = fmax(worst, fabs(a - b) / fmax(1.0, fabs(a)));
                }
            check_true(worst <= 1e-12, "dense kernel for timing = masked reference, L=%d causal=%d (%.2g)", L, causal,
                       worst);
            free(Q); free(K); free(V); free(O1); free(O2); free(S); free(W); free(M); free(Qc); free(Kc); free(Vc);
        }
}

int main(void)
{
    static const struct setting set[] = {
        {EPAR_MECH_SLIDING_WINDOW, "sliding-window w=2", {2}, 1},
        {EPAR_MECH_SLIDING_WINDOW, "sliding-window w=0", {0}, 1},
        {EPAR_MECH_SLIDING_WINDOW, "sliding-window w=37", {37}, 1},
        {EPAR_MECH_BLOCK_SPARSE, "block-sparse b=4 nb=0", {4, 0}, 2},
        {EPAR_MECH_BLOCK_SPARSE, "block-sparse b=7 nb=2", {7, 2}, 2},
        {EPAR_MECH_BLOCK_SPARSE, "block-sparse b=1 nb=3", {1, 3}, 2},
        {EPAR_MECH_STRIDED, "strided l=auto", {0, 0}, 2},
        {EPAR_MECH_STRIDED, "strided l=5 openai", {5, 1}, 2},
        {EPAR_MECH_STRIDED, "strided l=1", {1, 0}, 2},
        {EPAR_MECH_STRIDED, "strided l=300", {300, 0}, 2},
        {EPAR_MECH_SPARSE_FIXED, "sparse-fixed l=auto c=1", {0, 1}, 2},
        {EPAR_MECH_SPARSE_FIXED, "sparse-fixed l=6 c=2", {6, 2}, 2},
        {EPAR_MECH_SPARSE_FIXED, "sparse-fixed l=4 c=4", {4, 4}, 2},
        {EPAR_MECH_GLOBAL_LOCAL, "global-local w=1 G=1", {1, 1}, 2},
        {EPAR_MECH_GLOBAL_LOCAL, "global-local w=5 G=9", {5, 9}, 2},
        {EPAR_MECH_GLOBAL_LOCAL, "global-local w=3 G=0", {3, 0}, 2},
        {EPAR_MECH_PI_ATTENTION, "pi-attention default (r=32 pi=16 ring)", {32, 16, 0.5, 1}, 4},
        {EPAR_MECH_PI_ATTENTION, "pi-attention r=3 pi=5 g=0.3 ring", {3, 5, 0.3, 1}, 4},
        {EPAR_MECH_PI_ATTENTION, "pi-attention r=4 pi=7 g=0.8 no ring", {4, 7, 0.8, 0}, 4},
        {EPAR_MECH_PI_ATTENTION, "pi-attention r=0 pi=1 g=1", {0, 1, 1.0, 1}, 4},
    };
    const int nset = (int)(sizeof set / sizeof set[0]);
    gsl_rng *r = epar_rng_alloc(2385, 0, EPAR_RNG_DATA);
    /* every set of vector kernels the CPU can run (AVX-512 has its own products for dense tiles, the others go
     * through cblas_dgemm; the dense kernel for timing has its own products with AVX-512 and with AVX2, cblas_dgemm
     * with c), then the default (the CPU's best) for the rest */
    static const char *const isas[] = {"c", "avx2", "avx512"};
    for (int v = 0; v < 3; v++) {
        if (epar_sparse_set_isa(isas[v])) {
            printf("# %s kernels: not supported by this CPU, skipped\n", isas[v]);
            continue;
        }
        printf("# vector kernels: %s\n", isas[v]);
        check_kernels(set, nset, r);
        check_dense_fast(r);
    }
    check_int(epar_sparse_set_isa("avx1024"), EPAR_EINVAL, "unknown vector kernels refused");
    check_int(epar_sparse_set_isa(NULL), EPAR_OK, "the CPU's best vector kernels");
    /* the analysis path, several heads */
    for (int k = 0; k < nset; k += 2)
        for (int causal = 0; causal <= 1; causal++) check_forward(&set[k], 77, 24, 3, causal, r);
    check_forward(&set[16], 128, 32, 2, 0, r);

    /* refusals */
    struct epar_mech m;
    struct epar_sparse_pattern pat;
    double p[EPAR_MECH_MAX_PARAMS];
    epar_mech_defaults(EPAR_MECH_ALIBI, p);
    if (!epar_mech_init(&m, EPAR_MECH_ALIBI, p, 16, 8, 1, 0, 1)) {
        check_int(epar_sparse_pattern_from_mech(&m, &pat), EPAR_EINVAL, "alibi has no structured kernel");
        check_true(strstr(epar_err_message(), "alibi") != NULL, "the refusal names the mechanism: %s",
                   epar_err_message());
        epar_mech_free(&m);
    }
    struct epar_sparse_ws ws;
    struct epar_sparse_pattern bad = {.kind = EPAR_SPARSE_BLOCK, .L = 16, .block = 0};
    check_int(epar_sparse_ws_alloc(&ws, &bad, 8), EPAR_EINVAL, "block size 0 refused");
    struct epar_sparse_pattern bad2 = {.kind = EPAR_SPARSE_FIXED, .L = 16, .stride = 4, .summary = 5};
    check_int(epar_sparse_ws_alloc(&ws, &bad2, 8), EPAR_EINVAL, "summary > stride refused");
    struct epar_sparse_pattern bad3 = {.kind = EPAR_SPARSE_PI, .L = 16, .step = 0};
    check_int(epar_sparse_ws_alloc(&ws, &bad3, 8), EPAR_EINVAL, "pi = 0 refused");

    /* pair counts at a large L without any mask: pi-attention's union bound of the seed check */
    struct epar_sparse_pattern pi = {.kind = EPAR_SPARSE_PI, .L = 4096, .radius = 32, .step = 16, .gate = 0.5,
                                     .ring = 1};
    long want = 0;
    for (int i = 0; i < 4096; i++) want += 65 + 4096 / 16;   /* ring band 2r+1, the residue class L/pi */
    check_int(epar_sparse_pairs(&pi), want, "pi-attention pairs at L=4096: L (2r+1 + L/pi)");
    for (int k = 0; k < EPAR_SPARSE_COUNT; k++)
        check_true(strlen(epar_sparse_kernel_name((enum epar_sparse_kind)k)) > 0, "kernel %d has a name", k);
    const char *isa = NULL;
    double peak = epar_sparse_fma_peak(&isa);
    check_true(!strcmp(isa, "none") ? isnan(peak) : peak > 0 && isfinite(peak), "FMA peak measured on %s: %.3g GFLOP/s",
               isa, peak);
    gsl_rng_free(r);
    return check_summary("test_sparse");
}
