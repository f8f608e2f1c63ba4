/* The command table: the one list that --help, help, the manual page, completion and run-all read. One row per
 * command; adding a command is one row here and its cmd/<name>.c. The commands that read the table (run-all,
 * docgen) see it through epar_commands, which cmd/main.c points here before dispatching: the table points at
 * the commands and no command points back at the table's file. */
#include <string.h>
#include "experiments/experiment.h"
#include "cli.h"

/* name, function, experiment (run-all runs these, in this order), paper section, output folder of the other rows,
 * summary */
const struct cmd_entry epar_command_table[] = {
    {"position-effect", cmd_position_effect, &epar_exp_position, "paper §4", NULL,
     "position effect P(i,j), attention, importance, V(i) and pos*, Theorem 1 checked numerically"},
    {"optimal-position", cmd_optimal_position, &epar_exp_optimal, "paper §4.3", NULL,
     "information importance, pos*, consistency and ranking per importance type"},
    {"sensitivity", cmd_sensitivity, &epar_exp_sensitivity, "appendix", NULL,
     "alpha, beta and gamma sweeps with a measured baseline and retention"},
    {"adaptive", cmd_adaptive, &epar_exp_adaptive, "paper §5.4", NULL,
     "task- and content-aware attention; when and why EPAR helps"},
    {"compare", cmd_compare, &epar_exp_compare, "all sources", NULL,
     "every attention/position mechanism of the sources, side by side"},
    {"scale", cmd_scale, NULL, "long context", "scale", "streaming analysis at large L"},
    {"train", cmd_train, NULL, "main table (proxy)", "train",
     "train a small Transformer on one task (--task) with one position mechanism"},
    {"benchmark", cmd_benchmark, NULL, "main table, when to use, cost (proxy)", "benchmark",
     "the grid proxy task x mechanism x seed of trained models"},
    {"inspect", cmd_inspect, NULL, "trained attention", "inspect",
     "what a trained checkpoint attends to, per layer and head: tables, heatmaps, a head view page"},
    {"run-all", cmd_run_all, NULL, "all", "report",
     "every experiment above with the protocol, then the claims audit"},
    {NULL, NULL, NULL, NULL, NULL, NULL}};

const struct cmd_entry *cli_find_command(const char *name)
{
    for (const struct cmd_entry *c = epar_command_table; c->name; c++)
        if (!strcmp(c->name, name)) return c;
    return NULL;
}
