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

    /* "did you mean": one rule for commands, options, tasks and mechanisms */
    static const char *const names[] = {"lm", "recall", "needle", "rope", "none", "alibi", "epar-enhanced", "out"};
    struct epar_nearest near;
    const char *want[][2] = {{"recal", "recall"}, {"Rope", "rope"}, {"ALIBI", "alibi"}, {"rop", "rope"},
                             {"epar-enhaced", "epar-enhanced"}, {"lmm", "lm"}, {"ou", "out"}, {"rope", "rope"},
                             {"nome", "none"}, {"xyz", NULL}, {"ab", NULL}, {"rexall", "recall"}, {"", NULL}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        epar_nearest_init(&near, want[k][0]);
        for (size_t q = 0; q < sizeof names / sizeof names[0]; q++) epar_nearest_add(&near, names[q]);
        /* a name that is a candidate itself is found, not suggested */
        const char *exp = want[k][1] && strcmp(want[k][1], want[k][0]) ? want[k][1] : NULL;
        check_true(exp ? near.best && !strcmp(near.best, exp) : near.best == NULL, "nearest to '%s': '%s', want '%s'",
                   want[k][0], near.best ? near.best : "(none)", exp ? exp : "(none)");
    }
    epar_nearest_init(&near, "roep");   /* a swap of two adjacent letters is one edit: "trian" is "train" */
    epar_nearest_add(&near, "rope");
    epar_nearest_add(&near, "none");
    check_true(near.best && !strcmp(near.best, "rope"), "'roep' is one swap from 'rope' (got '%s')", near.best ? near.best : "");
    epar_nearest_init(&near, "trian");
    epar_nearest_add(&near, "train");
    check_true(near.best && !strcmp(epar_nearest_text(&near, "epar "), "'epar train'"), "'trian': %s",
               near.best ? epar_nearest_text(&near, "epar ") : "(none)");
    epar_nearest_init(&near, "rxpx");   /* two edits from a 4-letter name: none */
    epar_nearest_add(&near, "rope");
    epar_nearest_add(&near, "none");
    check_true(near.best == NULL && epar_nearest_text(&near, "") == NULL, "'rxpx': no suggestion");
    /* a family: "epar" of the hyphenated names, all of them, after any typo match */
    static const char *const mech[] = {"none", "epar-basic", "epar-enhanced", "rope", "fixed-a", "fixed-b", "fixed-c",
                                       "fixed-d", "fixed-e", "fixed-f"};
    const char *fam[][2] = {{"epar", "'epar-basic' or 'epar-enhanced'"}, {"rope-", "'rope'"}, {"tm", NULL},
                            {"fixed", "'fixed-a', 'fixed-b', 'fixed-c', 'fixed-d' or one of 2 more"}, {"ropes", "'rope'"}};
    for (size_t k = 0; k < sizeof fam / sizeof fam[0]; k++) {
        epar_nearest_init(&near, fam[k][0]);
        for (size_t q = 0; q < sizeof mech / sizeof mech[0]; q++) epar_nearest_add(&near, mech[q]);
        const char *t = epar_nearest_text(&near, "");
        check_true(fam[k][1] ? t && !strcmp(t, fam[k][1]) : t == NULL, "suggestion for '%s': %s, want %s", fam[k][0],
                   t ? t : "(none)", fam[k][1] ? fam[k][1] : "(none)");
    }
    epar_nearest_init(&near, "epar");
    epar_nearest_add(&near, "epar-basic");
    epar_nearest_add(&near, "epaz");
    check_true(near.best && !strcmp(near.best, "epaz"), "a typo beats a family (got '%s')", near.best ? near.best : "");
    check_int(epar_edit_distance("kitten", "sitting"), 3, "edit distance kitten/sitting");
    check_int(epar_edit_distance("trian", "train"), 1, "a swap is one edit");
    check_int(epar_edit_distance("", "abc"), 3, "edit distance from empty");

    int old = epar_blas_threads(1);
    check_int(epar_blas_threads(old), 1, "BLAS thread count round-trips");
    check_true(epar_blas_core() && *epar_blas_core(), "OpenBLAS names its kernel ('%s')", epar_blas_core());
    check_true(strstr(epar_blas_config(), "OpenBLAS") != NULL, "OpenBLAS configuration string");
    return check_summary("test_err");
}
