/* libFuzzer harness for the benchmark's cell reader and merge (experiments/benchmark/benchmark*.c, through their public
 * functions as `epar benchmark` and `--merge` use them): the input is a cell.json. The quick budget of the shipped
 * paper_protocol.json is cut to one synthetic task, the mechanism none and one seed (one training cell + the cost
 * cell); the input is written as the cell.json of every cell of a scratch output root, whose state is then read
 * (epar_exp_benchmark_cell_state) and every table, figure script and run.json built from it
 * (epar_exp_benchmark_write) into a staging folder that is never published. Contracts besides the sanitizers:
 * cell state is -1, 0 or 1; the merge returns 0, EPAR_EIO, EPAR_EPROTOCOL, EPAR_EINVAL or EPAR_ENOMEM. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "lib/err.h"
#include "lib/outdir.h"
#include "lib/protocol.h"
#include "experiments/benchmark/benchmark.h"

#define BROKEN(st) do { fprintf(stderr, "fuzz_bench_cell: contract broken at line %d: status %d, message '%s'\n", \
                                __LINE__, (st), epar_err_message()); __builtin_trap(); } while (0)

static struct epar_protocol proto;
static struct epar_bench_cfg cfg;
static struct epar_bench_plan plan;
static char root[64] = "/tmp/epar-fuzz-bench.XXXXXX", bench[128];
static char (*paths)[4800];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void mkdirs(const char *p)
{
    char b[4800];
    snprintf(b, sizeof b, "%s", p);
    for (char *s = b + 1; *s; s++)
        if (*s == '/') { *s = '\0'; mkdir(b, 0777); *s = '/'; }
    mkdir(b, 0777);
}

static void cleanup(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "fuzz_bench_cell: cannot remove %s\n", root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    struct epar_params prm;
    if (epar_protocol_load("paper_protocol.json", &proto) || epar_protocol_params(&proto, "benchmark", NULL, &prm) ||
        epar_exp_benchmark_config(&cfg, &proto, &prm, "quick")) {
        fprintf(stderr, "fuzz_bench_cell: run from the source folder (paper_protocol.json): %s\n", epar_err_message());
        exit(1);
    }
    cfg.b.n_seeds = 1;
    int t = 0;
    while (t < cfg.n_tasks - 1 && cfg.tasks[t].task.id == EPAR_TASK_LM) t++; /* a synthetic task: no text needed */
    char task[32];
    snprintf(task, sizeof task, "%s", cfg.tasks[t].id);
    if (epar_exp_benchmark_select(&cfg, task, "none") || epar_bench_plan(&cfg, &plan)) abort();
    if (!mkdtemp(root)) abort();
    atexit(cleanup);
    snprintf(bench, sizeof bench, "%s/benchmark", root);
    paths = calloc((size_t)plan.n, sizeof *paths);
    if (!paths) abort();
    for (int k = 0; k < plan.n; k++) {
        char dir[512];
        epar_exp_benchmark_cell_dir(&cfg, &plan.cells[k], dir, sizeof dir);
        snprintf(paths[k], sizeof paths[k], "%s/%s", bench, dir);
        mkdirs(paths[k]);
        snprintf(paths[k] + strlen(paths[k]), sizeof paths[k] - strlen(paths[k]), "/cell.json");
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536) return 0;
    for (int k = 0; k < plan.n; k++) {
        FILE *f = fopen(paths[k], "wb");
        if (!f) abort();
        if (fwrite(data, 1, size, f) != size) abort();
        fclose(f);
    }
    epar_err_clear();
    for (int k = 0; k < plan.n; k++) {
        int s = epar_exp_benchmark_cell_state(&cfg, &plan, k, bench);
        if (s < -1 || s > 1) BROKEN(s);
    }
    struct epar_out o;
    if (epar_out_begin(&o, root, "merged")) abort();
    int st = epar_exp_benchmark_write(&cfg, &plan, bench, &o, NULL);
    epar_out_abort(&o);
    if (st && st != EPAR_EIO && st != EPAR_EPROTOCOL && st != EPAR_EINVAL && st != EPAR_ENOMEM) BROKEN(st);
    return 0;
}
