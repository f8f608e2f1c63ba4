/* blas: the one place that talks to OpenBLAS beyond CBLAS (thread count, kernel, build).
 *
 * epar parallelises over jobs, row blocks and seeds with OpenMP; BLAS calls inside those jobs must be
 * single-threaded, or OpenBLAS's own threads spin against the OpenMP ones. cmd/main.c therefore sets
 * one BLAS thread for the whole process; code that wants BLAS threads sets and restores them here.
 *
 * Kernel choice: OpenBLAS (DYNAMIC_ARCH) picks its kernel in a constructor, before main, from the CPU id
 * or from OPENBLAS_CORETYPE. Some releases do not map every AVX-512 CPU to an AVX-512 kernel (0.3.21 gives
 * AMD Zen 4 the AVX2 "Zen" kernel). epar_blas_upgrade_core names the kernel a process should re-execute
 * with (only `epar scale` does, see cmd/scale.c): an upgrade, never a replacement of an AVX-512 kernel
 * OpenBLAS already chose (SkylakeX, Cooperlake, SapphireRapids). */
#ifndef EPAR_BLAS_H
#define EPAR_BLAS_H

/* The OpenMP wait policy epar runs with unless the user chose one: "passive" (a thread with nothing to do sleeps
 * at once instead of spinning ~300 000 rounds first) when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set
 * (policy, spincount: their values, NULL when unset), else NULL (the user's setting stands).
 *
 * Why: epar's parallel regions are short (a tile of sgemm, a few hundred microseconds), so between and at the end
 * of regions libgomp's threads spin nearly all the time a step lasts. On a busy machine those spins take the cores
 * from the threads with work: `epar train --task recall` took 237 s with libgomp's default and two threads against
 * 27 s with `--jobs 1` (load 9 on 2 cores), and 7 s against 6-7 s with passive waiting (200 steps, load 12). */
const char *epar_omp_wait_default(const char *policy, const char *spincount);
/* Two libraries read their settings once, in constructors, before main:
 * - libgomp reads OMP_WAIT_POLICY (above);
 * - OpenBLAS sizes its thread pool from OPENBLAS_NUM_THREADS (else OMP_NUM_THREADS, else the cores) and starts the
 *   workers at once; an idle worker spins on sched_yield for 2^28 cycles of the time-stamp counter before it sleeps,
 *   so every process of two threads or more ran one core flat out for its first 0.1 s (`epar scale --length 4096
 *   --repeats 1 --jobs 1`: 0.076 s of CPU for 0.038 s of analysis), although epar calls BLAS single-threaded only
 *   (cmd/main.c). With OPENBLAS_NUM_THREADS=1 the pool has no workers.
 * So when epar_omp_wait_default gives a policy and OpenMP has two threads or more, or OpenBLAS's pool has two threads
 * or more, the process re-executes itself (/proc/self/exe, same argv) with OMP_WAIT_POLICY set to that policy and
 * OPENBLAS_NUM_THREADS=1 respectively. Returns without exec when neither is needed, under valgrind (LD_PRELOAD names
 * vgpreload: the new image would run outside it) or when exec fails. Call first thing in main. */
void epar_blas_reexec(char **argv);

/* Whether a loop of this much work forks a team of threads: work > threshold and more than one thread to run it.
 * When not, EPAR_OMP_FOR runs the loop on the calling thread with no team at all. An `if` clause that fails (or a
 * cell of the benchmark given one thread) still makes libgomp build a team of one and join it with a futex system
 * call: 1.3 us alone and 2.9 us beside another cell on a 2-vCPU VM, and a small model's training step runs about 65
 * such loops (6-9 % of its step at length 32). A body run this way that wants per-thread scratch takes the thread's
 * index as an argument: outside a team of its own, omp_get_thread_num() is the enclosing team's. */
int epar_omp_fork(double work, double threshold);
/* The threshold of an elementwise loop, in elements (a few ns each): below it the fork and join cost more than the
 * loop (lib/nn.c says how it was chosen) */
#define EPAR_OMP_MIN_ELEMS 262144.0
/* epar_omp_fork for an elementwise loop over n elements */
static inline int epar_omp_fork_elems(double n) { return epar_omp_fork(n, EPAR_OMP_MIN_ELEMS); }
/* for (I = 0; I < N; I++) CALL: by a team of threads (static schedule) when FORK and there are two iterations or
 * more (a team for one iteration would wake threads with nothing to do: 25-90 us a wake-up on a 2-vCPU VM), else on
 * the calling thread. One body for both (CALL, usually a function of I); the iterations must be independent, as in
 * any `omp for`. */
#define EPAR_OMP_FOR(FORK, TYPE, I, N, CALL)                                                                  \
    do {                                                                                                      \
        if ((FORK) && (N) > 1) {                                                                              \
            _Pragma("omp parallel for schedule(static)") for (TYPE I = 0; I < (N); I++) CALL;                 \
        } else                                                                                                \
            for (TYPE I = 0; I < (N); I++) CALL;                                                              \
    } while (0)

/* Set OpenBLAS's thread count to n (>= 1); returns the previous count. */
int epar_blas_threads(int n);
/* The kernel OpenBLAS selected for this CPU (e.g. "Haswell", "SkylakeX"). */
const char *epar_blas_core(void);
/* OpenBLAS's build configuration string (version, threading, ...). */
const char *epar_blas_config(void);

/* 1 when the OpenBLAS kernel name is one of the AVX-512 kernels (SkylakeX, Cooperlake, SapphireRapids;
 * case-insensitive), 0 otherwise. */
int epar_blas_core_is_avx512(const char *core);
/* The decision, as a pure function: the kernel to re-execute with, or NULL to keep `loaded`.
 * "SkylakeX" only when the CPU (and OS) support AVX-512F (cpu_avx512), the user set no OPENBLAS_CORETYPE
 * (coretype_env NULL or empty) and `loaded` is not an AVX-512 kernel. */
const char *epar_blas_upgrade_for(const char *loaded, int cpu_avx512, const char *coretype_env);
/* The same for this process: epar_blas_core(), __builtin_cpu_supports("avx512f"), getenv("OPENBLAS_CORETYPE"). */
const char *epar_blas_upgrade_core(void);

#endif
