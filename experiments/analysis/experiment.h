/* One shape for every analysis experiment: what cmd/ drives (cli_experiment in cmd/options.c).
 *
 * Each experiment (position-effect, optimal-position, sensitivity, adaptive, compare) fills one struct
 * epar_experiment in its own .c, pointing at its typed functions through thin adapters. Its configuration
 * struct begins with `struct epar_params prm` (the common parameters cli_resolve fills from the protocol,
 * the preset and the command line). The verbs, one per role, in the order they run:
 *
 *   config  the experiment's protocol section -> cfg (checks that the section has only known keys)
 *   (the command applies its own options here)
 *   check   the whole cfg is valid (EPAR_EINVAL naming the value)
 *   run     cfg -> res (the computation; res is zeroed by the caller; on error run leaves nothing to free)
 *   write   res -> every file into the staging folder of `folder` (tables, run.json, one .gp per figure)
 *   free    res
 *
 * Adding an experiment: experiments/<name>.{c,h} with epar_exp_<name>_{config,check,run,write,free} and its
 * struct epar_experiment, cmd/<name>.c (its options, a progress line, a printed summary) and a row of the
 * command table in cmd/commands.c. See docs/DEVELOPMENT.md "Adding an experiment". */
#ifndef EPAR_EXP_EXPERIMENT_H
#define EPAR_EXP_EXPERIMENT_H

#include <stddef.h>
#include "lib/outdir.h"
#include "lib/protocol.h"

struct epar_experiment {
    const char *name;           /* the command and its key under $.experiments */
    const char *folder;         /* output sub-folder under --out */
    size_t cfg_size, res_size;  /* sizeof the configuration and result structs */
    int (*config)(const struct epar_protocol *p, void *cfg);
    int (*check)(const void *cfg);                  /* NULL: nothing beyond config */
    int (*run)(const void *cfg, void *res);
    int (*write)(const void *cfg, const void *res, struct epar_out *o, const char *protocol_path);
    void (*free)(void *res);
};

extern const struct epar_experiment epar_exp_position, epar_exp_optimal, epar_exp_sensitivity, epar_exp_adaptive,
    epar_exp_compare;

/* Typed adapters: EPAR_EXPERIMENT(position, "position-effect", "position") defines epar_exp_position from
 * epar_exp_position_{config,run,write,free} and struct epar_position_{cfg,result};
 * `check` is given separately (a function of (const void *) or NULL). */
#define EPAR_EXPERIMENT(id, cmd, dir, check_fn)                                                                  \
    static int id##_config_v(const struct epar_protocol *p, void *c) { return epar_exp_##id##_config(p, c); }   \
    static int id##_run_v(const void *c, void *r) { return epar_exp_##id##_run(c, r); }                          \
    static int id##_write_v(const void *c, const void *r, struct epar_out *o, const char *pp)                   \
    {                                                                                                            \
        return epar_exp_##id##_write(c, r, o, pp);                                                              \
    }                                                                                                            \
    static void id##_free_v(void *r) { epar_exp_##id##_free(r); }                                                \
    const struct epar_experiment epar_exp_##id = {cmd, dir, sizeof(struct epar_##id##_cfg),                      \
                                                  sizeof(struct epar_##id##_result), id##_config_v, check_fn,    \
                                                  id##_run_v, id##_write_v, id##_free_v}

#endif
