/* libFuzzer harness for the option parser (cmd/options.c, compiled in directly): the input is an
 * argument vector, arguments separated by NUL bytes. It is parsed against the option table of an
 * experiment command (model, list, figure and common options); when parsing succeeds the values are
 * resolved against the shipped paper_protocol.json as the commands do (the fuzzed --protocol value
 * is replaced: reading arbitrary paths such as /dev/stdin would block). Built and run by `make fuzz`. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "cmd/cli.h"

/* cmd/main.c is not linked: the help text looks commands up here */
const struct cmd_entry epar_commands[] = {
    {"fuzz", NULL, CMD_EXPERIMENT, "test", "output/fuzz/", "option parser under the fuzzer"},
    {NULL, NULL, 0, NULL, NULL, NULL}};

const struct cmd_entry *cli_find_command(const char *name)
{
    for (const struct cmd_entry *c = epar_commands; c->name; c++)
        if (!strcmp(c->name, name)) return c;
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    enum { MAXARG = 64 };
    if (size > 4096) return 0;
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAXARG + 2];
    int argc = 0;
    argv[argc++] = "fuzz";
    for (size_t i = 0; i <= size && argc <= MAXARG;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;

    struct cli_common c = {0};
    int dcurve = 0;
    struct opt_dlist alphas = {0};
    struct opt opts[] = {
        OPTS_MODEL(&c),
        {"Sweeps", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"alphas", 0, OPT_DLIST, &alphas, "LIST", "alpha values", 0},
        {"distance-curve", 0, OPT_INT, &dcurve, "N", "distances", 0},
        OPTS_COMMON(&c),
        {NULL, 0, OPT_END, NULL, NULL, NULL, 0}};
    int rc = cli_parse("fuzz", "[options]", opts, argc, argv);
    if (rc >= 0 && rc != 0 && rc != 2) __builtin_trap(); /* only help (0) or a usage error (2) */
    if (rc < 0) {
        if (alphas.n < 0 || alphas.n > EPAR_MAX_LIST) __builtin_trap();
        c.protocol = "paper_protocol.json";
        struct epar_protocol proto;
        struct epar_params prm;
        rc = cli_resolve(&c, opts, "position-effect", &proto, &prm);
        if (rc == 0) epar_protocol_free(&proto);
        else if (rc != 2 && rc != 3) __builtin_trap();
    }
    free(buf);
    return 0;
}
