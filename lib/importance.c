#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include <gsl/gsl_randist.h>
#include "err.h"
#include "rng.h"
#include "importance.h"

static const char *const imp_names[EPAR_IMP_COUNT] = {"random", "structured", "sparse", "dense", "clustered", "norm"};

int epar_imp_parse(const char *name, enum epar_imp_type *type)
{
    for (int t = 0; t < EPAR_IMP_COUNT; t++)
        if (strcmp(name, imp_names[t]) == 0) {
            *type = (enum epar_imp_type)t;
            return EPAR_OK;
        }
    epar_err_set(EPAR_EINVAL, "unknown importance type '%s'", name);
    epar_err_hint("use random, structured, sparse, dense, clustered or norm");
    return EPAR_EINVAL;
}

const char *epar_imp_name(enum epar_imp_type type)
{
    return (type >= 0 && type < EPAR_IMP_COUNT) ? imp_names[type] : "?";
}

int epar_imp_minmax(double *x, size_t n)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
    }
    if (!(hi > lo)) return 0;
    double inv = 1.0 / (hi - lo);
    for (size_t i = 0; i < n; i++) x[i] = (x[i] - lo) * inv;
    return 1;
}

int epar_imp_generate(enum epar_imp_type type, gsl_rng *r, int B, int L, double *I)
{
    size_t n = (size_t)B * L;
    switch (type) {
    case EPAR_IMP_RANDOM:
        epar_rng_uniform(r, I, n, 0.0, 1.0);
        break;
    case EPAR_IMP_STRUCTURED:
        for (int b = 0; b < B; b++)
            for (int j = 0; j < L; j++) I[(size_t)b * L + j] = 0.5 + 0.5 * sin(2.0 * M_PI * j / L);
        break;
    case EPAR_IMP_SPARSE: {
        /* k = L/10 distinct positions per item: partial Fisher-Yates over 0..L-1 */
        int k = L / 10 > 0 ? L / 10 : 1; /* max(1, L//10), as the reference */
        int *ix = epar_err_alloc((size_t)L, sizeof *ix, "sparse importance");
        if (!ix) return EPAR_ENOMEM;
        memset(I, 0, n * sizeof *I);
        for (int b = 0; b < B; b++) {
            for (int j = 0; j < L; j++) ix[j] = j;
            for (int t = 0; t < k; t++) {
                int u = t + (int)gsl_rng_uniform_int(r, (unsigned long)(L - t));
                int tmp = ix[t]; ix[t] = ix[u]; ix[u] = tmp;
                I[(size_t)b * L + ix[t]] = 0.2 + 0.8 * gsl_rng_uniform(r);
            }
        }
        free(ix);
        break;
    }
    case EPAR_IMP_DENSE:
        epar_rng_uniform(r, I, n, 0.7, 1.0);
        break;
    case EPAR_IMP_CLUSTERED: {
        int bs = L / 8 > 0 ? L / 8 : 1;
        for (int b = 0; b < B; b++)
            for (int s = 0; s < L; s += bs) {
                double v = 0.4 + 0.6 * gsl_rng_uniform(r);
                for (int j = s; j < s + bs && j < L; j++) I[(size_t)b * L + j] = v;
            }
        break;
    }
    default:
        return epar_err_set(EPAR_EINVAL, "importance type '%s' cannot be generated without inputs",
                            epar_imp_name(type));
    }
    epar_imp_minmax(I, n);
    return EPAR_OK;
}

void epar_imp_norm(const double *X, int B, int L, int D, double *I)
{
    for (size_t t = 0; t < (size_t)B * L; t++) I[t] = cblas_dnrm2(D, X + t * D, 1);
}
