/* err and blas: status codes carry their message and hint; allocation failures are EPAR_ENOMEM with a
 * message; the OpenBLAS controls round-trip. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/blas.h"
#include "lib/err.h"
#include "check.h"

int main(void)
{
    check_int(epar_err_set(EPAR_EINVAL, "alpha must be > 0, got '%g'", -1.5), EPAR_EINVAL, "set returns its code");
    check_true(!strcmp(epar_err_message(), "alpha must be > 0, got '-1.5'"), "message formatted");
    check_true(!strcmp(epar_err_hint_text(), ""), "a new error has no hint");
    epar_err_hint("use --alpha %d", 1);
    check_true(!strcmp(epar_err_hint_text(), "use --alpha 1"), "hint attached");
    epar_err_clear();
    check_true(!strcmp(epar_err_hint_text(), ""), "clear removes the hint");
    void *p = epar_err_alloc(SIZE_MAX / 2, 4, "a huge table");
    check_true(p == NULL, "overflowing size refused");
    check_true(strstr(epar_err_message(), "a huge table") != NULL, "the message names what was allocated");
    p = epar_err_alloc(10, sizeof(double), "ten doubles");
    check_true(p && ((double *)p)[9] == 0.0, "allocation is zeroed");
    free(p);
    check_true(EPAR_EIO == 3 && EPAR_EPROTOCOL == 3 && EPAR_ENOMEM == 4 && EPAR_EINVAL == 2 && EPAR_ECHECK == 1,
               "status codes are the documented exit codes");

    int old = epar_blas_threads(1);
    check_int(epar_blas_threads(old), 1, "BLAS thread count round-trips");
    check_true(epar_blas_core() && *epar_blas_core(), "OpenBLAS names its kernel ('%s')", epar_blas_core());
    check_true(strstr(epar_blas_config(), "OpenBLAS") != NULL, "OpenBLAS configuration string");
    return check_summary("test_err");
}
