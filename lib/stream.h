/* stream: the single-head position analysis at any length L, on two paths that give one result.
 *
 * Both paths compute, for every query row i of one bidirectional head,
 *   z_ij = (scale * q_i . k_j) * m(|i-j|) / T          (docs/MECHANISMS.md §1 steps 3, 4, 7; m from posfx)
 *   A_ij = softmax_j(z_ij)
 *   V(i) = sum_j A_ij I_j,   H_i = -sum_j A_ij ln A_ij,   D_i = sum_j A_ij |i-j|
 * and pos* = argmax_i V(i) (first index on ties).
 *
 *  - materialised: double precision; S = scale Q K^T by one BLAS dgemm per block of 128 rows into an
 *    (L,L) buffer, then one fused sweep per row (factor, max, exp, sum, normalise, V, H, D) that leaves A in the buffer.
 *    Memory O(L^2). The reference for every test.
 *  - streaming: Q, K stored as float; blocks of rows x blocks of keys; scores of a block by lib/stream's own
 *    tiles over K packed once in panels (each score one chain of FMAs in the order of d, the same bits in the
 *    AVX-512, AVX2 and portable forms and under every BLAS kernel), the position effect read from a (2L-1) table
 *    of m(|i-j|)/T and applied in the tile, online softmax with the running max, and V, H, D accumulated in
 *    double without storing any (L,L) array. Memory O(L d): the packed keys are a second copy of K.
 *    Inner loops use AVX-512 or AVX2+FMA (and glibc's libmvec expf) when the CPU has them, else portable C.
 *
 * Threads: OpenMP over row blocks. Every row is computed by the same sequence of operations whatever
 * the thread count (blocks are fixed, each row belongs to one block), so results are byte-identical for
 * any number of threads. The materialised path's BLAS runs single-threaded inside the parallel region (no
 * oversubscription; a multi-threaded dgemm also splits its work by thread count and is not bit-stable).
 *
 * H uses ln A_ij = z_ij - M_i - ln S_i, so no logarithm per element: H_i = M_i + ln S_i - sum_j A_ij z_ij. */
#ifndef EPAR_STREAM_H
#define EPAR_STREAM_H

#include <stddef.h>
#include "posfx.h"

enum epar_stream_path { EPAR_STREAM_AUTO = 0, EPAR_STREAM_MATERIALIZED = 1, EPAR_STREAM_STREAMING = 2 };

struct epar_stream_cfg {
    int L, d;
    double scale;               /* multiplies q.k (1/sqrt(d) normally) */
    double inv_temp;            /* 1/T > 0 */
    struct epar_posfx fx;       /* position effect; form none = no factor */
    int threads;                /* OpenMP threads (>= 1) */
    int row_block, key_block;   /* streaming tile (0: defaults 128 x 512) */
    int portable;               /* 1: force the portable C inner loop (tests compare it with AVX2) */
};

/* Per-row results; every array is (L). pos_star and the means summarise them. */
struct epar_stream_result {
    double *V, *H, *D;
    int pos_star;
    double v_max, mean_H, mean_D;
};

/* "auto" | "materialized" (also "materialised") | "streaming" -> path; EPAR_EINVAL otherwise. */
int epar_stream_path_parse(const char *name, enum epar_stream_path *path);
const char *epar_stream_path_name(enum epar_stream_path path);
/* The path used for AUTO: materialised when L <= materialized_max_length, else streaming. */
enum epar_stream_path epar_stream_choose(enum epar_stream_path path, int L, int materialized_max_length);

int epar_stream_cfg_validate(const struct epar_stream_cfg *cfg);

/* Bytes the analysis itself allocates on a path (inputs excluded); SIZE_MAX on overflow. */
size_t epar_stream_bytes(enum epar_stream_path path, int L, int d, int threads);
/* EPAR_ENOMEM (exit 4) with a hint if `bytes` exceed the memory available now (MemAvailable of
 * /proc/meminfo, else physical pages); `what` names the path in the message. */
int epar_stream_check_fit(size_t bytes, const char *what, int L);

int epar_stream_result_alloc(struct epar_stream_result *r, int L);
void epar_stream_result_free(struct epar_stream_result *r);

/* Materialised double path. Q, K (L,d) row-major; imp (L) importance I_j; work (L,L) receives A. */
int epar_stream_materialized(const struct epar_stream_cfg *cfg, const double *Q, const double *K,
                             const double *imp, double *work, struct epar_stream_result *r);

/* Streaming path. Q, K (L,d) row-major float; imp (L) importance I_j, double. Allocates only O(threads * tile) scratch. */
int epar_stream_streaming(const struct epar_stream_cfg *cfg, const float *Q, const float *K, const double *imp,
                          struct epar_stream_result *r);

/* FLOPs of the score product, 2 L^2 d: the unit of the reported GFLOP/s. */
double epar_stream_flops(int L, int d);

/* 1 when the inner loops of the streaming path run the AVX2+FMA code on this CPU. */
int epar_stream_simd(void);
/* 1 when this CPU also has AVX-512 F and DQ, so that glibc's 16-lane expf runs its SKX code, whose results are its
 * 8-lane one's bit for bit (every float, glibc 2.36; tests/unit/test_nn.c re-checks a million): the 16-lane forms of
 * lib/stream and lib/nn give the AVX2 forms' bits. */
int epar_stream_avx512(void);
/* out[j] = exp(z[j] - M) for j < n (out may be z), 16 lanes per call of that expf, the tail masked: the values of the
 * 8-lane calls. Only where epar_stream_avx512(). */
void epar_stream_exps16(float *out, const float *z, float M, int n);

#endif
