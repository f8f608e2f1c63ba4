/* importance: unit tests of lib/importance (worked values, round trips, error paths). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/importance.h"
#include "lib/rng.h"
#include "lib/err.h"
#include "check.h"

int main(void)
{
    /* importance generators: ranges, normalisation over the whole tensor, structure */
    gsl_rng *r = epar_rng_alloc(7, 0, EPAR_RNG_IMPORTANCE);
    int B = 2, L = 64;
    double I[128];
    for (int t = 0; t < 5; t++) {
        check_int(epar_imp_generate((enum epar_imp_type)t, r, B, L, I), EPAR_OK, "generate %s", epar_imp_name(t));
        double mn = 1e9, mx = -1e9;
        for (int k = 0; k < B * L; k++) { if (I[k] < mn) mn = I[k]; if (I[k] > mx) mx = I[k]; }
        check_rel(mn, 0, 1e-12, "%s min-max normalised: min 0", epar_imp_name(t));
        check_rel(mx, 1, 1e-12, "%s min-max normalised: max 1", epar_imp_name(t));
        if (t == EPAR_IMP_SPARSE) {
            int nz0 = 0;
            for (int k = 0; k < L; k++) nz0 += I[k] > 0;
            check_int(nz0, L / 10, "sparse: L/10 non-zero positions per item");
        }
        if (t == EPAR_IMP_CLUSTERED) check_true(I[0] == I[7] && I[8] == I[15], "clustered: blocks of L/8 share a value");
        if (t == EPAR_IMP_STRUCTURED) {
            check_int((long)(I[16] == 1.0), 1, "structured: peak at L/4");
            check_true(I[5] == I[L + 5], "structured: same for every item");
        }
    }
    enum epar_imp_type ty;
    check_int(epar_imp_parse("clustered", &ty), EPAR_OK, "parse type");
    check_int(epar_imp_parse("bogus", &ty), EPAR_EINVAL, "unknown type rejected");
    double X[2 * 3] = {3, 4, 0, 1, 2, 2};
    double n2[2];
    epar_imp_norm(X, 1, 2, 3, n2);
    check_rel(n2[0], 5, 1e-15, "norm importance ||(3,4,0)|| = 5");
    check_rel(n2[1], 3, 1e-15, "norm importance ||(1,2,2)|| = 3");
    epar_rng_free(r);
    return check_summary("test_importance");
}
