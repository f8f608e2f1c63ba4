/* libFuzzer harness for the option parser (cmd/options.c, compiled in directly): the input is an
 * argument vector, arguments separated by NUL bytes. It is parsed against the option table of an
 * experiment command (model, list, figure and common options); when parsing succeeds the values are
 * resolved against the shipped paper_protocol.json as the commands do (the fuzzed --protocol value
 * is replaced: reading arbitrary paths such as /dev/stdin would block; so is --out, since resolving creates it:
 * one temporary folder made for the run). What reaches stderr is
 * checked too: nothing on success or help, else exactly one "epar: error: " line, optionally followed
 * by one "hint: " line (run with -close_fd_mask=3: sanitizer reports keep their own descriptor).
 * Built and run by `make fuzz`. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "lib/err.h"
#include "cmd/cli.h"

/* the command table (cmd/commands.c) is not linked: the help shows this row's summary */
static const struct cmd_entry fuzz_command = {"fuzz", NULL, NULL, "test", "fuzz", "option parser under the fuzzer", NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the --out of the resolved inputs: an empty temporary folder (resolving checks it by creating and removing a probe) */
static char fuzz_out[64];
static void remove_fuzz_out(void) { rmdir(fuzz_out); }

static int errfd = -1;

/* stderr of one input: "" or "epar: error: ...\n" [+ "hint: ...\n"], nothing else */
static void check_stderr(int rc)
{
    fflush(stderr);
    off_t n = lseek(errfd, 0, SEEK_END);
    static char buf[8192];
    if (n < 0 || n >= (off_t)sizeof buf) __builtin_trap();
    if (pread(errfd, buf, (size_t)n, 0) != n) __builtin_trap();
    buf[n] = '\0';
    if (rc < 0 || rc == 0) {
        if (n != 0) __builtin_trap(); /* success and --help print nothing on stderr */
        return;
    }
    if (strncmp(buf, "epar: error: ", 13) != 0) __builtin_trap();
    char *nl = strchr(buf, '\n');
    if (!nl) __builtin_trap();
    if (nl[1] && (strncmp(nl + 1, "hint: ", 6) != 0 || strchr(nl + 1, '\n') != buf + n - 1)) __builtin_trap();
}

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

    if (errfd < 0) {
        errfd = memfd_create("stderr", 0);
        if (errfd < 0) abort();
    }
    fflush(stderr);
    if (ftruncate(errfd, 0) != 0 || dup2(errfd, 2) < 0) abort();
    lseek(errfd, 0, SEEK_SET);

    cli_current_command = &fuzz_command;
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
    if (rc >= 0) check_stderr(rc);
    if (rc < 0) {
        if (alphas.n < 0 || alphas.n > EPAR_MAX_LIST) __builtin_trap();
        c.protocol = "paper_protocol.json";
        if (!fuzz_out[0]) {
            const char *td = getenv("TMPDIR");
            snprintf(fuzz_out, sizeof fuzz_out, "%.40s/epar-fuzz-XXXXXX", td && *td ? td : "/tmp");
            if (!mkdtemp(fuzz_out)) abort();
            atexit(remove_fuzz_out);
        }
        c.out = fuzz_out;
        struct epar_protocol proto;
        struct epar_params prm;
        rc = cli_resolve(&c, opts, "position-effect", &proto, &prm);
        if (rc == 0) epar_protocol_free(&proto);
        else if (rc != 2 && rc != 3) __builtin_trap();
        check_stderr(rc == 0 ? -1 : rc);
    }
    free(buf);
    return 0;
}
