/* importance: information-importance vectors I (B,L) (docs/PROTOCOLS.md Experiment 2).
 *
 *   random      U(0,1)
 *   structured  0.5 + 0.5 sin(2 pi j / L), the same for every item
 *   sparse      zeros except L/10 distinct random positions set to U(0.2, 1.0)
 *   dense       U(0.7, 1.0)
 *   clustered   blocks of L/8 positions, each block one value U(0.4, 1.0)
 *   norm        I_j = ||x_j||_2 of the input before any position embedding (the paper's definition)
 * The five synthetic types are min-max normalised over the whole (B,L) tensor, as the reference does. */
#ifndef EPAR_IMPORTANCE_H
#define EPAR_IMPORTANCE_H

#include <gsl/gsl_rng.h>

enum epar_imp_type {
    EPAR_IMP_RANDOM = 0, EPAR_IMP_STRUCTURED, EPAR_IMP_SPARSE, EPAR_IMP_DENSE, EPAR_IMP_CLUSTERED,
    EPAR_IMP_NORM, EPAR_IMP_COUNT
};

int epar_imp_parse(const char *name, enum epar_imp_type *type);
const char *epar_imp_name(enum epar_imp_type type);

/* I (B,L) <- synthetic importance of `type` (not norm), min-max normalised over the tensor.
 * If the tensor is constant it is left as is (the reference would divide by ~1e-8). */
int epar_imp_generate(enum epar_imp_type type, gsl_rng *r, int B, int L, double *I);
/* I (B,L) <- ||X[b,j,:]||_2, X is (B,L,D). */
void epar_imp_norm(const double *X, int B, int L, int D, double *I);
/* Min-max normalise x (n) in place over all n entries; returns 0 if constant (left unchanged). */
int epar_imp_minmax(double *x, size_t n);

#endif
