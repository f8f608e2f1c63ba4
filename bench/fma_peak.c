/* fma_peak: measured fp32 FMA peak of this machine (GFLOP/s) for 1..T threads, on the widest FMA the CPU has.
 *
 * Runtime dispatch (__builtin_cpu_supports, which also checks that the OS saves the wide registers):
 *   avx512  16-lane AVX-512F FMA (vfmadd on zmm), 24 independent chains per thread;
 *   avx2     8-lane AVX2 FMA (vfmadd on ymm), 12 independent chains per thread.
 * The chain counts cover FMA latency x throughput (4-5 cycles x 2 ports = 8-10 FMAs in flight; AVX2 is
 * limited by its 16 ymm registers, AVX-512 has 32). One FMA = 2 FLOPs per lane. Each figure is the best
 * of 7 repetitions of about 0.1-0.3 s (other load only lowers a rate). On CPUs that split 512-bit operations
 * into two 256-bit halves (AMD Zen 4) both probes give about the same rate; on CPUs with full-width AVX-512
 * units the avx512 probe gives up to 2x the avx2 one, which is why the floor uses the widest.
 *
 * usage: fma_peak [--all | --isa avx512|avx2] [--cpu] [threads [only]]
 *   threads  measure 1..threads threads (default: the number of processors); "only": that count alone.
 *   --cpu    divide by each thread's CPU time (CLOCK_THREAD_CPUTIME_ID) instead of the wall time, and sum the
 *            threads' rates: the rate of the cores while they ran, which other processes taking the cores do
 *            not lower (on a loaded machine the wall-clock figure mostly measures the load). Pair it with CPU
 *            times of the work compared (bench/train_step's cpu_seconds_per_step).
 *   --all    also measure the narrower ISAs (default: only the widest, which is the peak).
 *   --isa X  measure ISA X only (exit 2 when the CPU lacks it).
 * Output (stdout), one line per (thread count, ISA), easy to parse:
 *   <threads> <GFLOP/s> <isa>
 * e.g. "2 210.31 avx512". With --all the widest ISA comes last for each thread count, so the peak of the
 * largest thread count is always the last line (`tail -n 1 | cut -d' ' -f2`). Exit 1 when the CPU has no
 * AVX2+FMA (nothing measured), 2 for a usage error.
 * Built by bench/bench_scale.sh (gcc -O2 -fopenmp bench/fma_peak.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>
#include <immintrin.h>

#define CHAINS_AVX2 12
#define CHAINS_AVX512 24

__attribute__((target("avx2,fma"), noinline)) static float probe_avx2(long iters, float seed)
{
    __m256 acc[CHAINS_AVX2];
    __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f * seed);
    for (int c = 0; c < CHAINS_AVX2; c++) acc[c] = _mm256_set1_ps((float)c * seed);
    for (long k = 0; k < iters; k++) {
#pragma GCC unroll 12
        for (int c = 0; c < CHAINS_AVX2; c++) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
    }
    __m256 s = acc[0];
    for (int c = 1; c < CHAINS_AVX2; c++) s = _mm256_add_ps(s, acc[c]);
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0] + out[7];
}

__attribute__((target("avx512f"), noinline)) static float probe_avx512(long iters, float seed)
{
    __m512 acc[CHAINS_AVX512];
    __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f * seed);
    for (int c = 0; c < CHAINS_AVX512; c++) acc[c] = _mm512_set1_ps((float)c * seed);
    for (long k = 0; k < iters; k++) {
#pragma GCC unroll 24
        for (int c = 0; c < CHAINS_AVX512; c++) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
    }
    __m512 s = acc[0];
    for (int c = 1; c < CHAINS_AVX512; c++) s = _mm512_add_ps(s, acc[c]);
    float out[16];
    _mm512_storeu_ps(out, s);
    return out[0] + out[15];
}

/* narrowest first: the widest supported one is the peak */
static const struct isa {
    const char *name;
    int lanes, chains;
    float (*probe)(long, float);
} isas[] = {{"avx2", 8, CHAINS_AVX2, probe_avx2}, {"avx512", 16, CHAINS_AVX512, probe_avx512}};
enum { N_ISA = sizeof isas / sizeof isas[0] };

static int supported(int k)
{
    if (k == 0) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return __builtin_cpu_supports("avx512f");
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }

static int usage(void)
{
    fprintf(stderr, "usage: fma_peak [--all | --isa avx512|avx2] [--cpu] [threads [only]]\n");
    return 2;
}

int main(int argc, char **argv)
{
    __builtin_cpu_init();
    int all = 0, forced = -1, a = 1, cpu = 0;
    for (; a < argc && argv[a][0] == '-'; a++) {
        if (!strcmp(argv[a], "--all")) all = 1;
        else if (!strcmp(argv[a], "--cpu")) cpu = 1;
        else if (!strcmp(argv[a], "--isa") && a + 1 < argc) {
            for (int k = 0; k < N_ISA; k++)
                if (!strcmp(argv[a + 1], isas[k].name)) forced = k;
            if (forced < 0) return usage();
            a++;
        } else return usage();
    }
    if (!supported(0)) {
        fprintf(stderr, "fma_peak: this CPU has no AVX2+FMA; the probes measure only AVX2 and AVX-512 FMA\n");
        return 1;
    }
    if (forced >= 0 && !supported(forced)) {
        fprintf(stderr, "fma_peak: this CPU (or OS) does not support %s\n", isas[forced].name);
        return 2;
    }
    int widest = 0;
    for (int k = 0; k < N_ISA; k++)
        if (supported(k)) widest = k;
    int T = a < argc ? atoi(argv[a]) : omp_get_num_procs();
    if (T < 1) return usage();
    int only = a + 1 < argc && !strcmp(argv[a + 1], "only");
    const long iters = 20000000;   /* AVX2 FMAs per chain: ~0.05-0.3 s per repetition */
    volatile float sink = 0;
    for (int t = only ? T : 1; t <= T; t++)
        for (int k = 0; k < N_ISA; k++) {
            if (forced >= 0 ? k != forced : !(k == widest || (all && supported(k)))) continue;
            const struct isa *is = &isas[k];
            long n = iters * CHAINS_AVX2 / is->chains;    /* the same number of FMA instructions per ISA */
            double best = 0;
            double flops = 2.0 * is->lanes * is->chains * (double)n;   /* per thread */
            for (int rep = 0; rep < 7; rep++) {
                double t0 = now(), rate = 0;
#pragma omp parallel num_threads(t) reduction(+ : sink, rate)
                {
                    double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
                    sink += is->probe(n, 1.0f + omp_get_thread_num());
                    rate += flops / (clock_s(CLOCK_THREAD_CPUTIME_ID) - c0) / 1e9;
                }
                double g = cpu ? rate : flops * t / (now() - t0) / 1e9;
                if (g > best) best = g;
            }
            printf("%d %.2f %s\n", t, best, is->name);
            fflush(stdout);
        }
    return sink == 12345.0f;
}
