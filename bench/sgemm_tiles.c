/* sgemm_tiles: the score product of the streaming path alone - OpenBLAS sgemm on the same 128 x 512 tiles
 * with K = d, single-threaded, over a full L x L sweep (no softmax). Best of 3, prints GFLOP/s.
 * usage: sgemm_tiles [L [d]]. Built by bench/bench_scale.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cblas.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int L = argc > 1 ? atoi(argv[1]) : 8192, d = argc > 2 ? atoi(argv[2]) : 64, Br = 128, Bc = 512;
    if (L < Bc || d < 1) return 2;
    openblas_set_num_threads(1);
    float *Q = malloc((size_t)L * d * sizeof *Q), *K = malloc((size_t)L * d * sizeof *K);
    float *S = malloc((size_t)Br * Bc * sizeof *S);
    if (!Q || !K || !S) return 1;
    srand(1);
    for (size_t t = 0; t < (size_t)L * d; t++) {
        Q[t] = rand() / (float)RAND_MAX - 0.5f;
        K[t] = rand() / (float)RAND_MAX - 0.5f;
    }
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now();
        for (int r0 = 0; r0 + Br <= L; r0 += Br)
            for (int c0 = 0; c0 + Bc <= L; c0 += Bc)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Br, Bc, d, 0.125f, Q + (size_t)r0 * d, d,
                            K + (size_t)c0 * d, d, 0.0f, S, Bc);
        double s = now() - t0;
        if (s < best) best = s;
    }
    double flops = 2.0 * (L / Br * Br) * (double)(L / Bc * Bc) * d;
    printf("%.2f\n", flops / best / 1e9);
    free(Q); free(K); free(S);
    return 0;
}
