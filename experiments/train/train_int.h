/* train: what train.c (the run) and train_write.c (its files) share: the config section's record and rows. */
#ifndef EPAR_TRAIN_INT_H
#define EPAR_TRAIN_INT_H

#include "lib/protocol.h"
#include "experiments/train/train.h"

/* the config section (run.json's "config", the checkpoint's config section, compared on resume and read back by
 * epar inspect): the settings and the names of what they are of. c comes first, so that the settings tables'
 * offsets hold in the record. */
struct cfg_record {
    struct epar_train_cfg c;
    const char *task, *mechanism, *preset;
    long seed;
};

void epar_exp_train_cfg_record(struct cfg_record *r, const struct epar_train_cfg *c);
/* the section as JSON, in its order: the head, the run's settings, "position" (with the catalogue parameters the
 * mechanism's training reads) and "task_options" (epar_exp_train_cfg_json: after resolving posfx_length) */
json_t *epar_exp_train_cfg_record_json(const struct epar_train_cfg *c);

#endif
