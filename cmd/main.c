/* epar: entry point: dispatch through the command table (cmd/commands.c), the main help, signals. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <csv.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_version.h>
#include <jansson.h>
#include "lib/blas.h"
#include "lib/err.h"
#include "lib/outdir.h"
#include "lib/plot.h"
#include "lib/tasks.h"
#include "experiments/analysis/experiment.h"
#include "cli.h"


static void main_help(FILE *f)
{
    fputs("usage: epar <command> [options]\n"
          "       epar help <command> | epar <command> --help | epar --version\n\n"
          "Reproduces and audits the analyses of \"EPAR: Explicit Position-Attention Relationship for\n"
          "Interpretable Long-Range Attention in Transformers\", and compares EPAR with other mechanisms.\n\n"
          "Commands:\n", f);
    size_t wn = 0, ws = 0; /* column widths from the table, in terminal columns ("§" is one) */
    for (const struct cmd_entry *c = epar_commands; c->name; c++) {
        if (cli_text_width(c->name) > wn) wn = cli_text_width(c->name);
        if (cli_text_width(c->section) > ws) ws = cli_text_width(c->section);
    }
    for (const struct cmd_entry *c = epar_commands; c->name; c++) {
        fputs("  ", f);
        cli_pad(f, c->name, wn + 2);
        cli_pad(f, c->section, ws + 2);
        fprintf(f, "%s\n", c->summary);
    }
    fputs("\nExamples:\n"
          "  epar position-effect --gamma 0.5\n"
          "  epar run-all\n\n"
          "Exit codes: 0 ok, 1 a check failed, 2 usage error, 3 input/output or protocol error,\n"
          "4 resource limit, 130/143 interrupted.\n", f);
}

static void version(void)
{
    printf("epar %s\n", EPAR_VERSION);
    printf("GSL %s\n", gsl_version);
    /* "OpenBLAS 0.3.21 ... (kernel X)"; epar scale reports the same kernel unless it upgrades (lib/blas.h) */
    const char *up = epar_blas_upgrade_core();
    if (up) printf("%s (kernel %s; epar scale re-executes with %s: the CPU has AVX-512)\n", epar_blas_config(),
                   epar_blas_core(), up);
    else printf("%s (kernel %s)\n", epar_blas_config(), epar_blas_core());
    printf("libcsv %d.%d.%d\n", CSV_MAJOR, CSV_MINOR, CSV_RELEASE);
    printf("jansson %s\n", jansson_version_str());
}

/* SIGINT/SIGTERM/SIGHUP: stop gnuplot children, remove temp files and staging folders, say so in one line on
 * stderr, exit 128+sig. Only async-signal-safe calls (write(2), no stdio); it may run in any thread (OpenMP workers
 * too), and only once. */
static void on_signal(int sig)
{
    static int entered;
    if (__atomic_exchange_n(&entered, 1, __ATOMIC_SEQ_CST))
        for (;;) pause(); /* a second signal: the first handler is cleaning up and will exit */
    epar_plot_kill_all();
    int committed = epar_out_abort_all();
    epar_out_release();
    const char *name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
    const char *what = committed ? "; the output folder being put into place was completed first, no partial output "
                                   "was left\n"
                                 : "; unfinished output removed, no partial output was left\n";
    ssize_t w = write(STDERR_FILENO, "epar: interrupted by ", 21);
    w += write(STDERR_FILENO, name, strlen(name));
    w += write(STDERR_FILENO, what, strlen(what));
    (void)w;
    _exit(128 + sig);
}

static int run(int argc, char **argv);

/* an unknown command: the error, and the nearest command name when one is close (a typo) */
static int unknown_command(const char *name)
{
    cli_usage_error("unknown command '%s'", name);
    struct epar_nearest near;
    epar_nearest_init(&near, name);
    for (const struct cmd_entry *c = epar_commands; c->name; c++) epar_nearest_add(&near, c->name);
    epar_nearest_add(&near, "help");
    if (near.best) fprintf(stderr, "hint: did you mean %s?\n", epar_nearest_text(&near, "epar "));
    else fputs("hint: see 'epar --help' for the commands\n", stderr);
    return 2;
}

int main(int argc, char **argv)
{
    epar_blas_reexec(argv);   /* passive OpenMP waiting unless the user chose, no idle OpenBLAS workers (lib/blas.h) */
    gsl_set_error_handler_off();
    epar_commands = epar_command_table;
    /* BLAS calls run inside OpenMP jobs: one BLAS thread (see lib/blas.h) */
    epar_blas_threads(1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigfillset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    int rc = run(argc, argv);
    /* what the command deferred until it succeeded (the lm text's cache); then the output folders the option check
     * created that nothing was written into (a failed command leaves no folder it created) */
    if (rc == 0) epar_task_cache_commit();
    epar_out_release();
    /* help, version and summaries go to stdout: a failed write (full disk, /dev/full) is an I/O error */
    if ((fflush(stdout) != 0 || ferror(stdout)) && rc == 0) {
        fprintf(stderr, "epar: error: cannot write to standard output\n");
        return 3;
    }
    return rc;
}

static int run(int argc, char **argv)
{
    if (argc < 2) {
        main_help(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
        main_help(stdout);
        return 0;
    }
    if (!strcmp(name, "--version") || !strcmp(name, "version")) {
        version();
        return 0;
    }
    if (!strcmp(name, "help")) {
        if (argc < 3) {
            main_help(stdout);
            return 0;
        }
        if (!strcmp(argv[2], "help") || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")) {
            puts("usage: epar help [<command>]\n\n"
                 "Without a command: the list of commands. With one: its options, as 'epar <command> --help'.\n"
                 "The manual page is epar(1) ('man epar' after 'make install').");
            return 0;
        }
        const struct cmd_entry *c = cli_find_command(argv[2]);
        if (!c) return unknown_command(argv[2]);
        char *hargv[] = {argv[2], "--help", NULL};
        cli_current_command = c;
        return c->fn(2, hargv);
    }
    if (!strcmp(name, "--man")) return cli_man(stdout);
    if (!strcmp(name, "--mechanism-docs")) return cli_mechanism_docs(stdout);
    if (!strcmp(name, "--completion")) {
        if (argc != 3 || (strcmp(argv[2], "bash") && strcmp(argv[2], "zsh")))
            return cli_usage_error("'--completion' needs 'bash' or 'zsh', got '%s'", argc > 2 ? argv[2] : "");
        return cli_completion(stdout, argv[2]);
    }
    const struct cmd_entry *c = cli_find_command(name);
    if (!c) return unknown_command(name);
    cli_current_command = c;
    return cli_exit_code(c->fn(argc - 1, argv + 1));
}
