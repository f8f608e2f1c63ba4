/* blas: the kernel upgrade decision of epar scale (never replace an AVX-512 kernel OpenBLAS chose, respect
 * OPENBLAS_CORETYPE, upgrade only on AVX-512 CPUs) and the kernel names of this process. */
#include <string.h>
#include "lib/blas.h"
#include "check.h"

int main(void)
{
    static const char *const avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids", "skylakex", "COOPERLAKE"};
    static const char *const other[] = {"Haswell", "Zen", "Sandybridge", "Prescott", "", NULL};
    for (size_t k = 0; k < sizeof avx512 / sizeof avx512[0]; k++) {
        check_true(epar_blas_core_is_avx512(avx512[k]), "%s is an AVX-512 kernel", avx512[k]);
        check_true(epar_blas_upgrade_for(avx512[k], 1, NULL) == NULL, "%s is kept on an AVX-512 CPU", avx512[k]);
        check_true(epar_blas_upgrade_for(avx512[k], 1, "") == NULL, "%s is kept (empty OPENBLAS_CORETYPE)", avx512[k]);
    }
    for (size_t k = 0; k < sizeof other / sizeof other[0]; k++) {
        const char *name = other[k] ? other[k] : "(null)";
        check_true(!epar_blas_core_is_avx512(other[k]), "%s is not an AVX-512 kernel", name);
        const char *up = epar_blas_upgrade_for(other[k], 1, NULL);
        check_true(up && !strcmp(up, "SkylakeX"), "%s on an AVX-512 CPU is upgraded to SkylakeX", name);
        check_true(epar_blas_upgrade_for(other[k], 0, NULL) == NULL, "%s on a CPU without AVX-512 is kept", name);
        check_true(epar_blas_upgrade_for(other[k], 1, "Haswell") == NULL, "%s is kept when OPENBLAS_CORETYPE is set",
                   name);
    }
    /* this process: the upgrade target, if any, is an AVX-512 kernel, and never replaces one */
    const char *core = epar_blas_core(), *up = epar_blas_upgrade_core();
    check_true(core && core[0], "OpenBLAS reports its kernel ('%s')", core ? core : "");
    check_true(!up || (epar_blas_core_is_avx512(up) && !epar_blas_core_is_avx512(core)),
               "this process: upgrade '%s' from '%s' only from a non-AVX-512 kernel", up ? up : "none", core);
    return check_summary("test_blas");
}
