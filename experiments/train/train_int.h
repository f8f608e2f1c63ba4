/* train: what train.c (the run), train_ckpt.c (its checkpoint) and train_write.c (its files) share: the config
 * section's record and rows. */
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

/* the rows the config section is read back with (train_ckpt.c's cfg_from_text): the run's settings, the head
 * (task, mechanism, preset, seed), the tail ("position", "task_options" of task, opts sized by
 * epar_task_option_rows) and one mechanism's catalogue parameters (row[0], with its parameters' rows mp) */
extern const struct epar_field epar_exp_train_run_fields[];
extern const struct epar_field epar_exp_train_cfg_head_fields[];
const struct epar_field *epar_exp_train_cfg_tail(enum epar_task_id task, struct epar_field rows[3], struct epar_field *opts);
void epar_exp_train_mech_params_row(enum epar_mech_id m, struct epar_field row[2],
                                    struct epar_field mp[EPAR_MECH_MAX_PARAMS + 1]);
/* a config section's text in today's form (epar_exp_train_cfg_upgrade), or NULL: already in it, or unparsable */
char *epar_exp_train_cfg_text_upgraded(const void *sec, size_t len, size_t *n);

#endif
