/* Test seams: the library's only functions without a caller in cmd/ or experiments/ (issue 34: no function
 * without a caller), included by tests/ alone.
 *
 * lib/nn, lib/optim and lib/sparse choose their vector kernels at run time from the CPU (AVX-512, AVX2 + FMA, or
 * portable C). Production runs every one of those paths, each on the CPUs that select it; on one machine only the
 * best it has runs. These switches force the others so that the tests can check, on any CPU, that every path
 * gives the promised result (the same bits, or agreement to rounding, as each module's header says). The forced
 * choice is global to the process and not thread-safe: set it between runs, never during one. */
#ifndef EPAR_SEAMS_H
#define EPAR_SEAMS_H

/* lib/nn: 1 = the kernels with an AVX2 form (GELU, softmax rows, cross-entropy, the attention kernel) run their
 * portable C form (libm expf) instead of AVX2 + libmvec (epar_nn_simd() then 0); 0 = the CPU's choice (the default) */
void epar_nn_set_portable(int portable);
/* lib/nn: 1 = the AVX2 forms (the attention's products in tiles of 4 rows; GELU and the exps of the softmax and the
 * cross-entropy 8 lanes at a time) even where the CPU has AVX-512 (whose forms, tiles of 8 rows and 16 lanes, give the
 * same bits); 0 = the CPU's choice (the default). Returns 1 when the AVX-512 forms now run. */
int epar_nn_set_no_avx512(int off);
/* lib/stream: 1 = the streaming rows' exps 8 lanes at a time even where the CPU has AVX-512 (16 lanes: the same bits);
 * 0 = the CPU's choice (the default). Returns 1 when the 16-lane exps now run. */
int epar_stream_set_no_avx512(int off);
/* lib/optim: 1 = the AdamW update runs the scalar C loop instead of the AVX2 one (the same bits); 0 = the default */
void epar_optim_set_portable(int portable);
/* lib/sparse: the vector kernels "avx512", "avx2" or "c" (lib/sparse.h), or NULL: the best the CPU has (the
 * default); EPAR_EINVAL naming a kernel set the CPU cannot run */
int epar_sparse_set_isa(const char *name);

#endif
