/* epar run-all: every experiment of the command table with the protocol, then the claims audit. */
#include <stdio.h>
#include <string.h>
#include "cli.h"

int cmd_run_all(int argc, char **argv)
{
    struct cli_common c = {0};
    int check = 0;
    struct opt opts[] = {
        {"Run-all", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"check", 0, OPT_FLAG, &check, NULL, "compare the numbers under regression with tests/golden (exit 1 if moved)", 0},
        OPTS_COMMON(&c),
        {NULL, 0, OPT_END, NULL, NULL, NULL, 0}};
    int rc = cli_parse("run-all", "[options]", opts, argc, argv);
    if (rc >= 0) return rc;
    if (check) return cli_usage_error("'--check' is not built yet");

    /* forward the common options to every experiment */
    char *fwd[32];
    int nf = 0;
    char jobs[32], seed[32];
    if (c.protocol) { fwd[nf++] = "--protocol"; fwd[nf++] = (char *)c.protocol; }
    if (c.preset) { fwd[nf++] = "--preset"; fwd[nf++] = (char *)c.preset; }
    if (c.out) { fwd[nf++] = "--out"; fwd[nf++] = (char *)c.out; }
    if (c.no_render) fwd[nf++] = "--no-render";
    if (c.quiet) fwd[nf++] = "--quiet";
    if (cli_seen(opts, "jobs")) { snprintf(jobs, sizeof jobs, "%d", c.jobs); fwd[nf++] = "--jobs"; fwd[nf++] = jobs; }
    if (cli_seen(opts, "seed")) { snprintf(seed, sizeof seed, "%d", c.seed); fwd[nf++] = "--seed"; fwd[nf++] = seed; }
    char seeds[1024] = "";
    if (cli_seen(opts, "seeds")) {
        for (int i = 0; i < c.seeds.n_seeds; i++)
            snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), "%s%lu", i ? "," : "", c.seeds.seeds[i]);
        fwd[nf++] = "--seeds";
        fwd[nf++] = seeds;
    }
    int failed = 0, ran = 0;
    for (const struct cmd_entry *e = epar_commands; e->name; e++) {
        if (!(e->flags & CMD_EXPERIMENT) || !e->fn) continue;
        char *av[40];
        int ac = 0;
        av[ac++] = (char *)e->name;
        for (int i = 0; i < nf; i++) av[ac++] = fwd[i];
        av[ac] = NULL;
        if (!c.quiet) fprintf(stderr, "epar: run-all: %s (%s)\n", e->name, e->section);
        int r = e->fn(ac, av);
        ran++;
        if (r) {
            failed++;
            fprintf(stderr, "epar: run-all: %s failed (exit %d)\n", e->name, r);
            if (r == 2 || r == 3) return r; /* bad options or protocol: the same for every experiment */
        }
    }
    if (!c.quiet) printf("run-all: %d experiment(s) run, %d failed\n", ran, failed);
    return failed ? 1 : 0;
}
