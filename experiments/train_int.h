/* train: what train.c (the run) and train_write.c (its files) share: the config section's record and rows. */
#ifndef EPAR_TRAIN_INT_H
#define EPAR_TRAIN_INT_H

#include "lib/protocol.h"
#include "train.h"

/* the config section (run.json's "config", the checkpoint's config section, compared on resume and read back by
 * epar inspect): the settings and the names of what they are of. c comes first, so that the settings tables'
 * offsets hold in the record. */
struct cfg_record {
    struct epar_train_cfg c;
    const char *task, *mechanism, *preset;
    long seed;
};

/* the section's rows for mechanism m and task t, in its order: the head, the run's settings, "position" (with the
 * catalogue parameters the mechanism's training reads) and "task_options"; rows of a saved record (every one
 * required when read back) */
struct cfg_table {
    struct epar_field top[48], pos[24], mp[EPAR_MECH_MAX_PARAMS + 1], opt[12];
};
void epar_exp_train_cfg_table(struct cfg_table *t, enum epar_mech_id m, enum epar_task_id task);
void epar_exp_train_cfg_record(struct cfg_record *r, const struct epar_train_cfg *c);

#endif
