#include "blas.h"

/* OpenBLAS extensions (cblas.h of OpenBLAS would clash with GSL's gsl_cblas.h, so declared here) */
void openblas_set_num_threads(int n);
int openblas_get_num_threads(void);
char *openblas_get_corename(void);
char *openblas_get_config(void);

int epar_blas_threads(int n)
{
    int old = openblas_get_num_threads();
    openblas_set_num_threads(n < 1 ? 1 : n);
    return old;
}

const char *epar_blas_core(void) { return openblas_get_corename(); }
const char *epar_blas_config(void) { return openblas_get_config(); }
