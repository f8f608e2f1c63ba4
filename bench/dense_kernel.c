/* dense_kernel: the rate of lib/sparse's dense attention kernel (epar_sparse_dense_fast, the baseline the structured
 * kernels' speed-ups are read against) as a fraction of the double-precision FMA peak, both per CPU-second of the
 * calling thread (CLOCK_THREAD_CPUTIME_ID), so other processes holding the core lower neither side; for
 * bench/bench_sparse.sh. epar compare's sparse_speed.csv gives the same fraction by wall clock (dense_fraction_of_peak),
 * which on a loaded machine mostly measures the load: the FMA probe runs in registers between other processes' time
 * slices, the kernel streams 4 MB of scores per block through caches they share.
 *
 * The peak: independent FMA chains on the widest vector ISA (AVX-512F, else AVX2+FMA) in double, best of 7 by CPU
 * time. The kernel: one head of d = 64, L = 4096 (argv), Q K V drawn from a fixed formula, best of 5 calls by CPU
 * time; its work counted as 4 d flops per score it computes (2 d for q.k, 2 d for its share of P V): L^2, or
 * L (L+1) / 2 causal.
 * usage: dense_kernel [L [causal]]; prints "L causal kernel_gflops peak_gflops fraction isa". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <immintrin.h>
#include "lib/blas.h"
#include "lib/sparse.h"

static double cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

#define CH512 24
#define CH256 12
__attribute__((target("avx512f"), noinline)) static double probe512(long n, double seed)
{
    __m512d acc[CH512], a = _mm512_set1_pd(0.999999), b = _mm512_set1_pd(1e-7 * seed);
    for (int c = 0; c < CH512; c++) acc[c] = _mm512_set1_pd(c * seed);
    for (long k = 0; k < n; k++) {
#pragma GCC unroll 24
        for (int c = 0; c < CH512; c++) acc[c] = _mm512_fmadd_pd(acc[c], a, b);
    }
    for (int c = 1; c < CH512; c++) acc[0] = _mm512_add_pd(acc[0], acc[c]);
    return _mm512_reduce_add_pd(acc[0]);
}
__attribute__((target("avx2,fma"), noinline)) static double probe256(long n, double seed)
{
    __m256d acc[CH256], a = _mm256_set1_pd(0.999999), b = _mm256_set1_pd(1e-7 * seed);
    for (int c = 0; c < CH256; c++) acc[c] = _mm256_set1_pd(c * seed);
    for (long k = 0; k < n; k++) {
#pragma GCC unroll 12
        for (int c = 0; c < CH256; c++) acc[c] = _mm256_fmadd_pd(acc[c], a, b);
    }
    for (int c = 1; c < CH256; c++) acc[0] = _mm256_add_pd(acc[0], acc[c]);
    double o[4];
    _mm256_storeu_pd(o, acc[0]);
    return o[0] + o[3];
}

int main(int argc, char **argv)
{
    int L = argc > 1 ? atoi(argv[1]) : 4096, causal = argc > 2 ? atoi(argv[2]) : 0, d = 64;
    if (L < 16) return 2;
    epar_blas_threads(1);
    __builtin_cpu_init();
    int w512 = __builtin_cpu_supports("avx512f");
    if (!w512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return 1;
    double peak = 0, sink = 0;
    long n = 4000000;
    for (int r = 0; r < 7; r++) {
        double t0 = cpu();
        sink += w512 ? probe512(n / 2, 1.0 + r) : probe256(n, 1.0 + r);
        double t = cpu() - t0, fl = w512 ? 2.0 * 8 * CH512 * (n / 2) : 2.0 * 4 * CH256 * n;
        if (fl / t > peak) peak = fl / t;
    }
    double *Q = malloc(sizeof(double) * L * d), *K = malloc(sizeof(double) * L * d), *V = malloc(sizeof(double) * L * d);
    double *O = malloc(sizeof(double) * L * d), *S = malloc(sizeof(double) * epar_sparse_dense_fast_ws(L, d));
    if (!Q || !K || !V || !O || !S) return 3;
    for (long i = 0; i < (long)L * d; i++) {
        Q[i] = (double)((i * 7919) % 1000) / 1000.0 - 0.5;
        K[i] = (double)((i * 104729) % 1000) / 1000.0 - 0.5;
        V[i] = (double)((i * 31) % 1000) / 1000.0;
    }
    double best = 1e300;
    for (int r = 0; r < 5; r++) {
        double t0 = cpu();
        epar_sparse_dense_fast(causal, L, Q, K, V, d, d, 0.125, O, d, S);
        double t = cpu() - t0;
        if (t < best) best = t;
    }
    double pairs = causal ? (double)L * (L + 1) / 2 : (double)L * L, gf = 4.0 * d * pairs / best / 1e9;
    printf("%d %d %.2f %.2f %.3f %s\n", L, causal, gf, peak / 1e9, gf / (peak / 1e9), w512 ? "avx512" : "avx2");
    free(Q); free(K); free(V); free(O); free(S);
    return sink == 12345.0;
}
