/* blas: the kernel upgrade decision of epar scale (never replace an AVX-512 kernel OpenBLAS chose, respect
 * OPENBLAS_CORETYPE, upgrade only on AVX-512 CPUs) and the kernel names of this process. */
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "lib/blas.h"
#include "check.h"

int main(int argc, char **argv)
{
    (void)argc;
    epar_blas_reexec(argv);   /* as epar's main: re-executes itself with passive waiting and one BLAS thread */
    /* the OpenMP wait policy: passive unless the user chose a policy or a spin count */
    const char *w = epar_omp_wait_default(NULL, NULL);
    check_true(w && !strcmp(w, "passive"), "no OMP_WAIT_POLICY or GOMP_SPINCOUNT: passive");
    check_true(epar_omp_wait_default("", "") && !strcmp(epar_omp_wait_default("", ""), "passive"),
               "empty OMP_WAIT_POLICY and GOMP_SPINCOUNT count as unset");
    check_true(epar_omp_wait_default("active", NULL) == NULL, "OMP_WAIT_POLICY=active stands");
    check_true(epar_omp_wait_default("passive", NULL) == NULL, "OMP_WAIT_POLICY=passive stands");
    check_true(epar_omp_wait_default(NULL, "10000") == NULL, "GOMP_SPINCOUNT stands");
    const char *pol = getenv("OMP_WAIT_POLICY"), *pre = getenv("LD_PRELOAD");
    int valgrind = pre && strstr(pre, "vgpreload");
    check_true((pol && pol[0]) || getenv("GOMP_SPINCOUNT") || omp_get_max_threads() < 2 || valgrind,
               "after epar_blas_reexec a policy is set (OMP_WAIT_POLICY '%s', %d threads)", pol ? pol : "",
               omp_get_max_threads());
    /* and OpenBLAS started with a pool of one thread: no worker spinning beside the process for its first 0.1 s */
    const char *nt = getenv("OPENBLAS_NUM_THREADS");
    int pool = epar_blas_threads(1);
    check_true(pool == 1 || valgrind, "after epar_blas_reexec OpenBLAS's pool has one thread, got %d "
               "(OPENBLAS_NUM_THREADS '%s')", pool, nt ? nt : "");

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
