/* sparse: attention kernels that exploit the structure of the mask mechanisms (docs/MECHANISMS.md §22-27).
 *
 * Each kernel computes the output of one head, O = A V, where A is the masked row softmax of
 * z_ij = scale * q_i . k_j over the allowed set S_i of the mechanism (docs/MECHANISMS.md §1: max over S_i, exp,
 * sum; an empty row follows the policy self, o_i = v_i), without forming the L x L matrix. The allowed pairs
 * of every mask are the union of a few regular pieces, and every piece is computed with dense tiles:
 * for a tile of T rows, one product gives the scores against the tile's contiguous (or evenly strided) key
 * range, the vector exp of libmvec turns the allowed ones into weights, and one product adds P V (AVX-512:
 * lib/sparse's own kernels on the 4 x 4 blocks holding allowed pairs; otherwise cblas_dgemm); a tile that is
 * mostly empty goes row by row (a dot product and an axpy per allowed pair). Pieces of one softmax are merged
 * exactly with a running maximum and sum (online softmax); a pair lying in two pieces is counted in one only.
 * The causal flag intersects every piece with j <= i. A pattern with at most 16 allowed keys per row on
 * average (sliding-window, block-sparse, global-local at their defaults) goes row by row without tiles, each
 * output row written once.
 *
 *   mechanism (§)        pieces
 *   sliding-window (24)  band max(0,i-w) .. i+w
 *   block-sparse (25)    the blocks B(i)-nb .. B(i)+nb of the block index B(i) = floor(i/b)
 *   strided (22)         band i-l .. i (i-l+1 .. i with openai_local)  U  residue class (i-j) mod l = 0, j <= i
 *                        (one dense tile per class: rows and keys with stride l)
 *   sparse-fixed (23)    own block floor(j/l) = floor(i/l), j <= i  U  summary columns j mod l >= l-c (gathered)
 *   global-local (26)    rows i < G dense; other rows: band |i-j| <= w  U  the G global columns
 *   pi-attention (27)    ring band rd(i,j) <= r (its own softmax) and the pi residue classes (i-j) mod pi = 0 (its
 *                        own softmax), mixed g A_loc V + (1-g) A_step V
 *
 * epar_sparse_dense_fast (below) is the dense kernel they are timed against.
 * Results agree with the dense masked path of lib/mech (epar_mech_forward, epar_mech_masked_output_dense) to
 * rounding (about 1e-15, tested at 1e-12); they are not bit-identical to it (other summation orders, and
 * libmvec's exp differs from libm's by a few ulp), nor between CPUs with and without AVX-512. Scores must be
 * finite.
 * Legend: L = sequence length, d = head dimension, ld = row stride of Q, K, V (e.g. the model width when they
 * are head slices). Arrays are row-major. */
#ifndef EPAR_SPARSE_H
#define EPAR_SPARSE_H

#include "mech.h"

enum epar_sparse_kind {
    EPAR_SPARSE_WINDOW = 0, EPAR_SPARSE_BLOCK, EPAR_SPARSE_STRIDED, EPAR_SPARSE_FIXED, EPAR_SPARSE_GLOBAL_LOCAL,
    EPAR_SPARSE_PI, EPAR_SPARSE_COUNT
};

/* The structure of one mask mechanism at length L. */
struct epar_sparse_pattern {
    enum epar_sparse_kind kind;
    int L;
    int causal;         /* intersect every piece with j <= i */
    int radius;         /* window w, global-local w, pi-attention r */
    int block, neighbours;  /* block-sparse b, nb */
    int stride;         /* strided and sparse-fixed l (>= 1) */
    int openai_local;   /* strided: local band of l keys (i-l < j <= i) instead of l+1 */
    int summary;        /* sparse-fixed c (1 <= c <= l) */
    int globals;        /* global-local: the first G tokens are global */
    int step, ring;     /* pi-attention: pi (>= 1); ring distance (ignored when causal) */
    double gate;        /* pi-attention: g */
    int tile;           /* rows per tile; 0 = the default (bench/bench_sparse.sh measures the choice) */
};

/* The pattern of an instantiated mask mechanism (kind EPAR_MK_MASK); EPAR_EINVAL for any other. */
int epar_sparse_pattern_from_mech(const struct epar_mech *m, struct epar_sparse_pattern *p);
/* 1: mask mechanism id has a structured kernel here (random-sparse has none: compare takes the dense path for it) */
int epar_sparse_has_kernel(enum epar_mech_id id);
/* Kernel name for reports, e.g. "band tiles + residue-class tiles, two softmaxes". */
const char *epar_sparse_kernel_name(enum epar_sparse_kind kind);

/* Number of (i, j) pairs whose weight the kernel computes: |S_i| summed over rows (with the causal flag);
 * for pi-attention |S^loc_i| + |S^pi_i|, as each mask has its own softmax. L^2 / pairs bounds the speed-up
 * over a dense kernel. */
long epar_sparse_pairs(const struct epar_sparse_pattern *p);

/* Workspace for patterns of length p->L and head dimension d; one per thread. */
struct epar_sparse_ws {
    int L, d, tile, width;  /* sizes it was allocated for; width = the widest key range of a tile */
    double *S;          /* (max(tile * width, 2 max(width, L))) scores and weights of one tile or of a few rows */
    double *m, *s;      /* (2, L) running maximum and sum of each softmax */
    double *O2;         /* (L, d) second softmax of pi-attention */
    double *Kg, *Vg;    /* (ng, d) gathered keys and values (ring wrap, summary columns) */
    double *Kt, *Ktc;   /* (d, L) keys transposed, in key order and in residue-class order (filled per call,
                         * when a tile first needs them) */
    double *Kgt;        /* (d, max(ng, width)) gathered keys transposed */
    int *iv;            /* (tile, 5) allowed key intervals of the rows of a tile */
    int *idx;           /* (ng) gathered key indices */
    int *ul;            /* (2 max(width, L)) allowed keys of a few rows (row-by-row paths) */
    int ng;
    int whole;          /* 1: the pattern is computed row by row (few keys per row: lib/sparse.c, rows_whole) */
};
int epar_sparse_ws_alloc(struct epar_sparse_ws *ws, const struct epar_sparse_pattern *p, int d);
void epar_sparse_ws_free(struct epar_sparse_ws *ws);

/* O (L, ldo) <- the attention output of pattern p for Q, K, V (L, ld) (the first d columns of each row are
 * used), scores scale * q_i . k_j. ws from epar_sparse_ws_alloc(ws, p, d) (or a larger pattern of the same
 * kind). Does not allocate. */
void epar_sparse_output(const struct epar_sparse_pattern *p, const double *Q, const double *K, const double *V,
                        int ld, int d, double scale, double *O, int ldo, struct epar_sparse_ws *ws);

/* The vector kernels: "avx512" (AVX-512F and VL: also the two products of a dense tile), "avx2" (AVX2 and FMA) or
 * "c" (portable; with "avx2", dense tiles go through cblas_dgemm): the best the CPU has (the tests force each one
 * with epar_sparse_set_isa, lib/seams.h). */

/* The dense kernel the speed-ups are timed against: O (L, ldo) <- softmax(scale Q K^T) V over every key (causal:
 * keys 0..i for row i), the way a user's dense attention runs: blocks of EPAR_SPARSE_DENSE_ROWS query rows, the
 * block's scores by one product, each row's max and exp-sum by the vector kernels above, P V by a second product and a
 * division by the sums. The products are lib/sparse's own register tiles over K and V packed once per call with
 * "avx512" and "avx2" (OpenBLAS packs K and V again for every block of rows), cblas_dgemm with "c". No mask is read
 * and no row is compacted or scattered. S is workspace of epar_sparse_dense_fast_ws(L, d) doubles (the block's scores,
 * the packed keys, values and queries). Does not allocate. */
#define EPAR_SPARSE_DENSE_ROWS 128
size_t epar_sparse_dense_fast_ws(int L, int d);
void epar_sparse_dense_fast(int causal, int L, const double *Q, const double *K, const double *V, int ld, int d,
                            double scale, double *O, int ldo, double *S);

/* The double-precision FMA peak of one thread in GFLOP/s, measured now (about 0.3 s: the best of 7 runs of
 * independent FMA chains on the widest vector ISA, AVX-512F or AVX2+FMA, whose name goes to *isa; NaN and "none"
 * without either). The reference the dense kernel's rate is read against (sparse_speed.csv). */
double epar_sparse_fma_peak(const char **isa);

#endif
