/* rng: seeded GSL random streams and the initialisers the experiments need.
 *
 * A stream is identified by (seed, run, tag): the same triple gives the same numbers whatever the
 * thread count or the order in which streams are created. Tags separate purposes inside one run so
 * that, e.g., the weights stay identical when only the data changes (paired comparisons). */
#ifndef EPAR_RNG_H
#define EPAR_RNG_H

#include <stddef.h>
#include <gsl/gsl_rng.h>

enum epar_rng_tag {
    EPAR_RNG_WEIGHTS = 1,   /* projections, position embeddings, module weights */
    EPAR_RNG_DATA = 2,      /* inputs X */
    EPAR_RNG_IMPORTANCE = 3,/* importance vectors */
    EPAR_RNG_EXTRA = 4,     /* task ids, dropout masks, random features ... */
    EPAR_RNG_MECH = 5       /* synthetic mechanism parameters (tables, slopes ...) */
};

/* Mersenne twister seeded by a splitmix64 hash of (seed, run, tag). NULL + EPAR_ENOMEM on failure. */
gsl_rng *epar_rng_alloc(unsigned long seed, unsigned long run, unsigned tag);
void epar_rng_free(gsl_rng *r);

/* x (n) <- N(0, sd^2) */
void epar_rng_normal(gsl_rng *r, double *x, size_t n, double sd);
/* the same draws in float (the trained models' parameters) */
void epar_rng_normal_f(gsl_rng *r, float *x, size_t n, double sd);
/* x (n) <- U(lo, hi) */
void epar_rng_uniform(gsl_rng *r, double *x, size_t n, double lo, double hi);
/* PyTorch nn.Linear default init: W (out,in) and b (out, may be NULL) ~ U(-1/sqrt(in), 1/sqrt(in)). */
void epar_rng_linear_init(gsl_rng *r, double *W, double *b, int out, int in);
/* Haar-distributed W (rows,cols), rows >= cols, orthonormal columns: QR of a Gaussian, sign-fixed
 * by sign(diag R). Returns EPAR_OK or EPAR_EINVAL / EPAR_ENOMEM. */
int epar_rng_orthogonal(gsl_rng *r, double *W, int rows, int cols);
/* perm (n) <- a uniform random permutation of 0..n-1 */
void epar_rng_permutation(gsl_rng *r, size_t *perm, size_t n);

#endif
