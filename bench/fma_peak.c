/* fma_peak: measured fp32 FMA peak of this machine (GFLOP/s) for 1..T threads.
 * Each thread runs 12 independent 8-lane FMA chains (enough to cover the FMA latency on two ports);
 * one FMA = 2 FLOPs per lane. The best of several repetitions is the peak (other load only lowers it).
 * usage: fma_peak [threads [only]]   prints "threads gflops" lines for 1..threads (or threads only).
 * Built by bench/bench_scale.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <omp.h>
#include <immintrin.h>

#define CHAINS 12

__attribute__((target("avx2,fma"), noinline)) static float probe_avx2(long iters, float seed)
{
    __m256 acc[CHAINS];
    __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f * seed);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_set1_ps((float)c * seed);
    for (long k = 0; k < iters; k++) {
#pragma GCC unroll 12
        for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
    }
    __m256 s = acc[0];
    for (int c = 1; c < CHAINS; c++) s = _mm256_add_ps(s, acc[c]);
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0] + out[7];
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        fprintf(stderr, "fma_peak: this CPU has no AVX2+FMA; the probe measures only that kernel\n");
        return 1;
    }
    int T = argc > 1 ? atoi(argv[1]) : omp_get_num_procs();
    const long iters = 20000000;   /* ~0.1-0.3 s per repetition */
    volatile float sink = 0;
    for (int t = argc > 2 ? T : 1; t <= T; t++) {
        double best = 0;
        for (int rep = 0; rep < 7; rep++) {
            double t0 = now();
#pragma omp parallel num_threads(t) reduction(+ : sink)
            sink += probe_avx2(iters, 1.0f + omp_get_thread_num());
            double s = now() - t0, g = 2.0 * 8 * CHAINS * (double)iters * t / s / 1e9;
            if (g > best) best = g;
        }
        printf("%d %.2f\n", t, best);
    }
    return sink == 12345.0f;
}
