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
    check_true(EPAR_EIO == 3 && EPAR_ENOMEM == 4 && EPAR_EINVAL == 2 && EPAR_ECHECK == 1,
               "status codes are the documented exit codes");
    check_true(EPAR_EPROTOCOL != EPAR_EIO, "a malformed protocol and an unreadable file are told apart (both exit 3, "
               "mapped in cmd/options.c cli_exit_code)");

    /* a worker's message reaches the caller: the lowest failing job's, whatever the schedule */
    struct epar_err_carry carry = EPAR_ERR_CARRY_INIT;
    epar_err_clear();
#pragma omp parallel for schedule(dynamic, 1)
    for (int j = 0; j < 64; j++)
        if (j % 7 == 3) {
            void *q = epar_err_alloc(SIZE_MAX / 2, 4, j == 3 ? "job three's table" : "another job's table");
            epar_err_hint("job %d", j);
            epar_err_keep(&carry, q ? EPAR_OK : EPAR_ENOMEM, j);
        }
    check_int(epar_err_carried(&carry), EPAR_ENOMEM, "the worker's status carried");
    check_true(strstr(epar_err_message(), "job three's table") != NULL, "the lowest job's message carried: %s",
               epar_err_message());
    check_true(!strcmp(epar_err_hint_text(), "job 3"), "and its hint");
    struct epar_err_carry none = EPAR_ERR_CARRY_INIT;
    check_int(epar_err_carried(&none), EPAR_OK, "no failure: EPAR_OK");

    int old = epar_blas_threads(1);
    check_int(epar_blas_threads(old), 1, "BLAS thread count round-trips");
    check_true(epar_blas_core() && *epar_blas_core(), "OpenBLAS names its kernel ('%s')", epar_blas_core());
    check_true(strstr(epar_blas_config(), "OpenBLAS") != NULL, "OpenBLAS configuration string");
    return check_summary("test_err");
}
