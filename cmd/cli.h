/* cli: the command line only - option tables, parsing, protocol resolution, error printing.
 * Adding a command: write cmd/<name>.c with `int cmd_<name>(int argc, char **argv)`, declare it here,
 * add one row to the command table in cmd/commands.c. */
#ifndef EPAR_CLI_H
#define EPAR_CLI_H

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include "lib/protocol.h"

enum opt_type { OPT_END = 0, OPT_GROUP, OPT_FLAG, OPT_INT, OPT_DOUBLE, OPT_STRING, OPT_DLIST, OPT_SEEDS };

struct opt_dlist {
    int n;
    double v[EPAR_MAX_LIST];
};

struct opt {
    const char *name;   /* long name without "--" (group title for OPT_GROUP) */
    char shortc;        /* 0 if none */
    enum opt_type type;
    void *dest;         /* int*, double*, const char**, struct opt_dlist*, struct epar_params* (seeds) */
    const char *arg;    /* argument name in help, e.g. "X" */
    const char *help;
    int seen;           /* set by the parser */
};

/* Options every command takes, and the model parameters of the experiments. */
struct cli_common {
    const char *protocol, *preset, *out, *form, *importance;
    int no_render, quiet, jobs, help;
    int seed;
    struct epar_params seeds;   /* only n_seeds / seeds used */
    struct epar_params over;    /* CLI values of alpha ... runs */
};

#define OPTS_COMMON(c)                                                                                      \
    {"Common options", 0, OPT_GROUP, NULL, NULL, NULL, 0},                                                 \
    {"protocol", 0, OPT_STRING, &(c)->protocol, "FILE", "protocol file (default: ./paper_protocol.json, else the installed copy)", 0}, \
    {"preset", 0, OPT_STRING, &(c)->preset, "NAME", "protocol preset: reference_code (default) or paper", 0}, \
    {"seed", 0, OPT_INT, &(c)->seed, "N", "run with this one seed", 0},                                    \
    {"seeds", 0, OPT_SEEDS, &(c)->seeds, "LIST", "comma-separated seeds (default: the protocol's, 42-46)", 0}, \
    {"out", 'o', OPT_STRING, &(c)->out, "DIR", "output root folder (default output)", 0},                  \
    {"no-render", 0, OPT_FLAG, &(c)->no_render, NULL, "write .gp scripts but do not run gnuplot", 0},      \
    {"quiet", 'q', OPT_FLAG, &(c)->quiet, NULL, "no progress on stderr, no summary on stdout", 0},         \
    {"jobs", 'j', OPT_INT, &(c)->jobs, "N", "threads (default: all cores); results do not depend on it", 0}

#define OPTS_MODEL(c)                                                                                       \
    {"Model parameters (override the protocol)", 0, OPT_GROUP, NULL, NULL, NULL, 0},                       \
    {"alpha", 0, OPT_DOUBLE, &(c)->over.alpha, "X", "position-effect strength alpha > 0", 0},              \
    {"beta", 0, OPT_DOUBLE, &(c)->over.beta, "X", "decay rate beta >= 0", 0},                              \
    {"gamma", 0, OPT_DOUBLE, &(c)->over.gamma, "X", "enhancement gamma >= 0 (really applied)", 0},         \
    {"form", 0, OPT_STRING, &(c)->form, "F", "position effect: basic, enhanced or none", 0},               \
    {"temperature", 0, OPT_DOUBLE, &(c)->over.temperature, "T", "softmax temperature > 0", 0},             \
    {"length", 'L', OPT_INT, &(c)->over.length, "N", "sequence length", 0},                                \
    {"hidden", 0, OPT_INT, &(c)->over.hidden, "N", "hidden width", 0},                                     \
    {"heads", 0, OPT_INT, &(c)->over.heads, "N", "attention heads (must divide hidden)", 0},              \
    {"batch", 0, OPT_INT, &(c)->over.batch, "N", "batch items per run", 0},                                \
    {"runs", 0, OPT_INT, &(c)->over.runs, "N", "repetitions per seed", 0}

/* Parse argv (argv[0] is the command name). Returns -1 to go on, or an exit code (0 after --help,
 * 2 on a usage error, message printed). Positional arguments are refused. */
int cli_parse(const char *cmd, const char *usage, struct opt *opts, int argc, char **argv);
/* cli_parse for a command that also takes arguments (epar inspect CHECKPOINT...): the words that are not options
 * (and every word after "--") go to args, at most max_args of them (more: a usage error), their count to *n_args. */
int cli_parse_args(const char *cmd, const char *usage, struct opt *opts, int argc, char **argv, const char **args,
                   int max_args, int *n_args);
/* Was option `name` given? */
int cli_seen(const struct opt *opts, const char *name);
/* fn(ctx, a) for every assignment of every --set value in argv (repeatable; a value may hold comma-separated
 * "mech.param=value" assignments); the first failing status */
int cli_each_set(int argc, char **argv, int (*fn)(void *ctx, const char *assignment), void *ctx);
/* Columns a UTF-8 string takes on a terminal; print s padded with spaces to `width` columns. */
size_t cli_text_width(const char *s);
void cli_pad(FILE *f, const char *s, size_t width);
/* Print the help of a command from its option table. */
void cli_help(FILE *f, const char *cmd, const char *usage, const struct opt *opts);

/* The output root of a command (--out; NULL: "output"), checked and created before any work (lib/outdir
 * epar_out_prepare): 0, or 2 for an empty value, 3 for a folder that cannot be used (printed, naming it).
 * cmd/main.c removes the folders it created that the command left empty. cli_resolve calls it first, so every
 * command that resolves a protocol checks its --out; inspect calls it itself. */
int cli_check_out(const char **out);
/* The protocol file used when --protocol is not given: ./paper_protocol.json, else the copy installed beside the
 * executable (../share/epar/); buf holds the path when it is not the first */
const char *cli_default_protocol(char *buf, size_t n);
/* Check --out (cli_check_out), load the protocol (from --protocol, ./paper_protocol.json or the installed copy),
 * resolve the params of `experiment` and apply the command-line overrides; validate. Returns 0 or an exit code
 * (printed). */
int cli_resolve(struct cli_common *c, const struct opt *opts, const char *experiment,
                struct epar_protocol *proto, struct epar_params *prm);

/* Print "epar: error: <last error>" (+ hint) and return the exit code for status st. */
int cli_fail(int st);
/* The one map from a status (lib/err.h) to the process exit code: EPAR_EPROTOCOL -> 3, the others are their code
 * (cmd/main.c applies it to what a command returns, cli_fail to what it prints). */
int cli_exit_code(int status);
/* Print a usage error and return 2. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Progress line on stderr unless quiet. */
void cli_progress(const struct cli_common *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same from a va_list (the progress callback of a library driver that formats its own lines) */
void cli_vprogress(const struct cli_common *c, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* The end of every experiment command: st is the status of writing into the staging folder o. On error
 * the folder is removed; otherwise the figures are rendered (unless --no-render) and the files moved into
 * place. Returns the final status. */
struct epar_out;
int cli_publish(const struct cli_common *c, const char *cmd, struct epar_out *o, int st);
/* The body every analysis command shares (experiments/analysis/experiment.h): resolve the protocol into cfg (whose first
 * member is its struct epar_params), x->config, apply(cfg, opts, ctx) for the command's own options (returns 0
 * or an exit code it has printed), x->check, a progress line from describe, x->run, x->write into a staging
 * folder that replaces --out/<folder>, then summary(c, cfg, res) on stdout unless --quiet. Returns the exit code. */
struct epar_experiment;
int cli_experiment(const struct epar_experiment *x, struct cli_common *c, const struct opt *opts, void *cfg,
                   int (*apply)(void *cfg, const struct opt *opts, void *ctx), void *ctx,
                   void (*describe)(const void *cfg, char *buf, size_t n),
                   void (*summary)(const struct cli_common *c, const void *cfg, const void *res));
/* Apply --jobs. */
void cli_set_jobs(const struct cli_common *c);
/* Parse a comma-separated list of doubles / names; 0 or a usage error code (printed). */
int cli_parse_dlist(const char *opt, const char *s, struct opt_dlist *out);

/* commands */
int cmd_position_effect(int argc, char **argv);
int cmd_run_all(int argc, char **argv);
int cmd_adaptive(int argc, char **argv);
int cmd_optimal_position(int argc, char **argv);
int cmd_sensitivity(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_scale(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_benchmark(int argc, char **argv);
int cmd_inspect(int argc, char **argv);

/* the command table, for run-all and help. A row with `exp` is an analysis experiment: run-all runs it, and its
 * output folder is exp->folder (one place); other rows name their folder in `folder`. */
struct cmd_entry {
    const char *name;
    int (*fn)(int argc, char **argv);
    const struct epar_experiment *exp;  /* NULL: not an experiment of run-all */
    const char *section;                /* paper section */
    const char *folder;                 /* output sub-folder of a row without exp */
    const char *summary;
    /* examples, pairs of a command line and what it does, NULL-terminated: --help, the manual page's EXAMPLES and
     * tests/cli/test_docs_commands.sh (which runs or parses them) read them */
    const char *const *examples;
};
extern const struct cmd_entry epar_command_table[]; /* cmd/commands.c */
/* the table as the commands that read it see it (run-all, docgen): cmd/main.c sets it to epar_command_table, so
 * cmd/ has no circle of files (commands.c -> run-all.c -> commands.c) */
extern const struct cmd_entry *epar_commands;
const struct cmd_entry *cli_find_command(const char *name);
/* the command being dispatched (its help names its summary and folder); set before calling a row's fn */
extern const struct cmd_entry *cli_current_command;
/* the row's output sub-folder under the output root ("position", "report", ...) */
const char *cli_command_folder(const struct cmd_entry *e);

/* SIGINT/SIGTERM during a step loop (cmd/stop.c): cli_catch_stop(1) makes the first signal only set
 * cli_stop_signal (the loop finishes its step, saves, and the command exits 128 + signal); a second one goes to
 * the previous handler. cli_catch_stop(0) restores it. */
extern volatile sig_atomic_t cli_stop_signal;
void cli_catch_stop(int on);

/* Generated from the command table and each command's own --help (cmd/docgen.c): the manual page epar(1) in roff
 * (epar --man) and shell completion (epar --completion bash|zsh). Return an exit code. */
int cli_man(FILE *f);
int cli_completion(FILE *f, const char *shell);
int cli_mechanism_docs(FILE *f);

#include "lib/version.h"

#endif
