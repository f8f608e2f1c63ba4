/* The command table: the one list that --help, help, the manual page, completion and run-all read. One row per
 * command; adding a command is one row here and its cmd/<name>.c. The commands that read the table (run-all,
 * docgen) see it through epar_commands, which cmd/main.c points here before dispatching: the table points at
 * the commands and no command points back at the table's file. */
#include <string.h>
#include "experiments/analysis/experiment.h"
#include "cli.h"

#define EXAMPLES(...) ((const char *const[]){__VA_ARGS__, NULL})

/* name, function, experiment (run-all runs these, in this order), paper section, output folder of the other rows,
 * summary, examples */
const struct cmd_entry epar_command_table[] = {
    {"position-effect", cmd_position_effect, &epar_exp_position, "paper §4", NULL,
     "position effect P(i,j), attention, importance, V(i) and pos*, Theorem 1 checked numerically",
     EXAMPLES("epar position-effect", "the reference protocol: L 128, hidden 256, 5 seeds",
              "epar position-effect --gamma 0.5", "gamma really acts (the reference code ignores it)",
              "epar position-effect --preset paper --length 64", "the paper's sizes at a shorter length")},
    {"optimal-position", cmd_optimal_position, &epar_exp_optimal, "paper §4.3", NULL,
     "information importance, pos*, consistency and ranking per importance type",
     EXAMPLES("epar optimal-position", "every importance type of the protocol",
              "epar optimal-position --types structured,clustered --seed 42", "two types, one seed")},
    {"sensitivity", cmd_sensitivity, &epar_exp_sensitivity, "appendix", NULL,
     "alpha, beta and gamma sweeps with a measured baseline and retention",
     EXAMPLES("epar sensitivity", "the protocol's sweeps",
              "epar sensitivity --gamma-values 0,0.5,1.5 --seed 42", "a gamma sweep of three values, one seed")},
    {"adaptive", cmd_adaptive, &epar_exp_adaptive, "paper §5.4", NULL,
     "task- and content-aware attention; when and why EPAR helps",
     EXAMPLES("epar adaptive", "the sensitivity grid and the when-to-use study",
              "epar adaptive --when-lengths 64,128 --seed 42", "when to use EPAR at two lengths, one seed")},
    {"compare", cmd_compare, &epar_exp_compare, "all sources", NULL,
     "every attention/position mechanism of the sources, side by side",
     EXAMPLES("epar compare --list", "every mechanism with its source and formula section",
              "epar compare --mechanisms none,alibi,rope", "three mechanisms side by side",
              "epar compare --mechanisms rope --set rope.base=500", "a catalogue parameter changed")},
    {"scale", cmd_scale, NULL, "long context", "scale", "streaming analysis at large L",
     EXAMPLES("epar scale --length 16384", "the streaming analysis at L 16384",
              "epar scale --length 4096 --mechanism epar-basic --path materialized", "the dense path, basic form")},
    {"train", cmd_train, NULL, "main table (proxy)", "train",
     "train a small Transformer on one task (--task) with one position mechanism",
     EXAMPLES("epar train --task recall --steps 600", "EPAR enhanced learns recall (accuracy 1 at seed 42)",
              "epar train --task lm --mechanism rope", "character-level language model of the King James Bible",
              "epar train --task recall --mechanism alibi --until 100", "stop after step 100 with a checkpoint",
              "epar train --task recall --mechanism alibi --resume output/train/recall/alibi/checkpoint.bin",
              "... and go on from it")},
    {"benchmark", cmd_benchmark, NULL, "main table, when to use, cost (proxy)", "benchmark",
     "the grid proxy task x mechanism x seed of trained models",
     EXAMPLES("epar benchmark --budget smoke", "the default grid at the smallest budget (CI: about a minute)",
              "epar benchmark --budget quick --tasks recall --mechanisms none,rope,epar-enhanced",
              "one task, three mechanisms",
              "epar benchmark --budget quick --shard 1/2", "half of the cells (on another machine: --shard 2/2)")},
    {"inspect", cmd_inspect, NULL, "trained attention", "inspect",
     "what a trained checkpoint attends to, per layer and head: tables, heatmaps, a head view page",
     EXAMPLES("epar inspect output/train/recall/epar-enhanced/checkpoint.bin --item 0",
              "attention of every layer and head on evaluation item 0",
              "epar inspect output/train/recall/epar-enhanced/checkpoint.bin --mask-heads 0.1 --eval-items 128",
              "head 1 of layer 0 masked: the evaluation with and without")},
    {"run-all", cmd_run_all, NULL, "all", "report",
     "every experiment above with the protocol, then the claims audit",
     EXAMPLES("epar run-all --no-benchmark", "the analyses and the audit (about a minute), then open output/index.html",
              "epar run-all", "everything, the trained benchmark included",
              "epar run-all --check", "the regression check against the pins of tests/golden")},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL}};

const struct cmd_entry *cli_find_command(const char *name)
{
    for (const struct cmd_entry *c = epar_command_table; c->name; c++)
        if (!strcmp(c->name, name)) return c;
    return NULL;
}
