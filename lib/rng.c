#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include "err.h"
#include "rng.h"

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

gsl_rng *epar_rng_alloc(unsigned long seed, unsigned long run, unsigned tag)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r) {
        epar_err_set(EPAR_ENOMEM, "out of memory allocating a random stream");
        return NULL;
    }
    uint64_t h = splitmix64(splitmix64(splitmix64((uint64_t)seed) ^ (uint64_t)run) ^ (uint64_t)tag);
    unsigned long s = (unsigned long)(h & 0xffffffffUL);
    gsl_rng_set(r, s ? s : 4357UL); /* mt19937 treats 0 as its default seed */
    return r;
}

void epar_rng_free(gsl_rng *r) { gsl_rng_free(r); }

void epar_rng_normal(gsl_rng *r, double *x, size_t n, double sd)
{
    for (size_t i = 0; i < n; i++) x[i] = gsl_ran_gaussian_ziggurat(r, sd);
}

void epar_rng_normal_f(gsl_rng *r, float *x, size_t n, double sd)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)gsl_ran_gaussian_ziggurat(r, sd);
}

void epar_rng_uniform(gsl_rng *r, double *x, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * gsl_rng_uniform(r);
}

void epar_rng_linear_init(gsl_rng *r, double *W, double *b, int out, int in)
{
    double bound = 1.0 / sqrt((double)in);
    epar_rng_uniform(r, W, (size_t)out * (size_t)in, -bound, bound);
    if (b) epar_rng_uniform(r, b, (size_t)out, -bound, bound);
}

int epar_rng_orthogonal(gsl_rng *r, double *W, int rows, int cols)
{
    if (rows < cols || cols < 1)
        return epar_err_set(EPAR_EINVAL, "orthogonal init needs rows >= cols >= 1, got %dx%d", rows, cols);
    gsl_matrix *G = gsl_matrix_alloc((size_t)rows, (size_t)cols);
    gsl_vector *tau = gsl_vector_alloc((size_t)cols);
    gsl_matrix *Q = gsl_matrix_alloc((size_t)rows, (size_t)rows);
    gsl_matrix *R = gsl_matrix_alloc((size_t)rows, (size_t)cols);
    int st = EPAR_OK;
    if (!G || !tau || !Q || !R) {
        st = epar_err_set(EPAR_ENOMEM, "out of memory in orthogonal init (%dx%d)", rows, cols);
        goto done;
    }
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) gsl_matrix_set(G, (size_t)i, (size_t)j, gsl_ran_gaussian_ziggurat(r, 1.0));
    if (gsl_linalg_QR_decomp(G, tau) || gsl_linalg_QR_unpack(G, tau, Q, R)) {
        st = epar_err_set(EPAR_EINVAL, "QR decomposition failed in orthogonal init");
        goto done;
    }
    for (int j = 0; j < cols; j++) {
        double s = gsl_matrix_get(R, (size_t)j, (size_t)j) < 0 ? -1.0 : 1.0;
        for (int i = 0; i < rows; i++) W[(size_t)i * cols + j] = s * gsl_matrix_get(Q, (size_t)i, (size_t)j);
    }
done:
    gsl_matrix_free(G);
    gsl_vector_free(tau);
    gsl_matrix_free(Q);
    gsl_matrix_free(R);
    return st;
}

void epar_rng_permutation(gsl_rng *r, size_t *perm, size_t n)
{
    for (size_t i = 0; i < n; i++) perm[i] = i;
    if (n > 1) gsl_ran_shuffle(r, perm, n, sizeof *perm);
}
