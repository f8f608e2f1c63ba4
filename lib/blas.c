#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <omp.h>
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

int epar_blas_core_is_avx512(const char *core)
{
    static const char *const avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
    if (!core) return 0;
    for (size_t k = 0; k < sizeof avx512 / sizeof avx512[0]; k++)
        if (!strcasecmp(core, avx512[k])) return 1;
    return 0;
}

const char *epar_blas_upgrade_for(const char *loaded, int cpu_avx512, const char *coretype_env)
{
    if (!cpu_avx512 || (coretype_env && coretype_env[0]) || epar_blas_core_is_avx512(loaded)) return NULL;
    return "SkylakeX";  /* the AVX-512 kernel every AVX-512F CPU can run (Cooperlake needs AVX512-BF16) */
}

const char *epar_blas_upgrade_core(void)
{
    __builtin_cpu_init();
    return epar_blas_upgrade_for(epar_blas_core(), __builtin_cpu_supports("avx512f"), getenv("OPENBLAS_CORETYPE"));
}

int epar_omp_fork(double work, double threshold) { return work > threshold && omp_get_max_threads() > 1; }

const char *epar_omp_wait_default(const char *policy, const char *spincount)
{
    if ((policy && policy[0]) || (spincount && spincount[0])) return NULL;
    return "passive";
}

void epar_blas_reexec(char **argv)
{
    const char *pre = getenv("LD_PRELOAD");
    if (pre && strstr(pre, "vgpreload")) return;   /* under valgrind the new image would run outside it */
    const char *w = epar_omp_wait_default(getenv("OMP_WAIT_POLICY"), getenv("GOMP_SPINCOUNT"));
    /* nothing to wait for with one OpenMP thread; OpenBLAS's pool has workers only when it has two threads or more */
    int omp = w && omp_get_max_threads() > 1, pool = openblas_get_num_threads() > 1;
    if (!omp && !pool) return;
    if ((omp && setenv("OMP_WAIT_POLICY", w, 1)) || (pool && setenv("OPENBLAS_NUM_THREADS", "1", 1))) return;
    fflush(NULL);
    execv("/proc/self/exe", argv);
    /* exec failed (no /proc): carry on with libgomp's default (OPENBLAS_NUM_THREADS=1 says what main sets anyway) */
    if (omp) unsetenv("OMP_WAIT_POLICY");
}
