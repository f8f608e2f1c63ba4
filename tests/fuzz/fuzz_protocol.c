/* libFuzzer harness for the protocol loader (lib/protocol.c): the input is a protocol file.
 * Each input is written to an in-memory file and loaded by path, exactly as `--protocol FILE` does;
 * when it loads, every resolution path the commands use is exercised (params for each preset,
 * validation, key checks, typed getters, run.json parameters). Contracts checked besides the
 * sanitizers: a failed load returns EPAR_EPROTOCOL or EPAR_EIO (both exit 3) naming the file and keeps nothing;
 * resolution returns 0, EPAR_EINVAL or EPAR_EPROTOCOL. Built and run by `make fuzz`. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "lib/err.h"
#include "lib/protocol.h"

static int fd = -1;
static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (fd < 0) {
        fd = memfd_create("protocol.json", 0);
        if (fd < 0) return 0;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) return 0;

    struct epar_protocol p;
    int st = epar_protocol_load(path, &p);
    if (st != EPAR_OK) {
        if (p.root) __builtin_trap();         /* a failed load must not keep the document */
        if (st != EPAR_EPROTOCOL && st != EPAR_EIO) __builtin_trap(); /* exit 3, with a message naming the file */
        if (!strstr(epar_err_message(), path)) __builtin_trap();
        return 0;
    }
    static const char *const exps[] = {"position-effect", "optimal-position", "sensitivity", "no-such"};
    static const char *const presets[] = {NULL, "reference_code", "paper"};
    static const char *const extra[] = {"distance_curve", "alphas", "name", NULL};
    for (size_t e = 0; e < sizeof exps / sizeof exps[0]; e++) {
        epar_protocol_check_keys(&p, exps[e], extra);
        /* a section read by rows of each kind the experiments use: an int with a range, a list, a string */
        struct {
            int iv;
            double list[EPAR_MAX_LIST];
            int n;
            const char *sv;
        } in = {0};
        const struct epar_field rows[] = {
            {.key = "distance_curve", .type = EPAR_FIELD_INT, .offset = offsetof(__typeof__(in), iv), .lo = 1, .hi = 1 << 20},
            {.key = "alphas", .type = EPAR_FIELD_DLIST, .offset = offsetof(__typeof__(in), list),
             .count_offset = offsetof(__typeof__(in), n), .max = EPAR_MAX_LIST},
            {.key = "name", .type = EPAR_FIELD_STRING, .offset = offsetof(__typeof__(in), sv)},
            {0}};
        epar_protocol_obj_fields(&p, epar_protocol_section(&p, exps[e]), "$.experiments.x", rows, &in);
        for (size_t k = 0; k < sizeof presets / sizeof presets[0]; k++) {
            struct epar_params prm;
            st = epar_protocol_params(&p, exps[e], presets[k], &prm);
            if (st != EPAR_OK && st != EPAR_EINVAL && st != EPAR_EPROTOCOL) __builtin_trap();
            if (st != EPAR_OK) continue;
            if (prm.n_seeds < 0 || prm.n_seeds > EPAR_MAX_SEEDS) __builtin_trap();
            epar_params_validate(&prm);
            json_t *j = epar_params_json(&prm);
            json_decref(j);
        }
    }
    const char *names[8];
    epar_protocol_presets(&p, names, 8);
    epar_protocol_free(&p);
    return 0;
}
