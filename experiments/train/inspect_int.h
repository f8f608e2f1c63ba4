/* epar inspect's own parts shared by its files (private to experiments/train/inspect*.c; the public interface is
 * inspect.h):
 *   inspect.c        reading the checkpoint, the input and its forward pass, the run of one input, the means over
 *                    several (epar_inspect_summarise)
 *   inspect_stats.c  the summaries of one input's attention per layer and head
 *   inspect_write.c  the tables and figures of one input's folder, the comparison of several checkpoints
 *   inspect_view.c   head_view.html
 * Calls go one way: inspect_write.c into the other three, inspect.c into inspect_stats.c, inspect_view.c into
 * inspect.c. Prefix epar_inspect_. */
#ifndef EPAR_EXP_INSPECT_INT_H
#define EPAR_EXP_INSPECT_INT_H

#include <stdio.h>
#include "lib/outdir.h"
#include "experiments/train/inspect.h"

/* ---- inspect.c ---- */
/* the symbol of token id of the task into buf ("" for id < 0) */
void epar_inspect_symbol(const struct epar_inspect *x, int id, char *buf, size_t n);
/* the input in words: "evaluation item 3" or "text of 12 tokens" */
void epar_inspect_input_desc(const struct epar_inspect *x, char *buf, size_t n);

/* ---- inspect_stats.c ---- */
/* every head's summaries of the input in x (x->stats, mass, peff, sim, rel, rel_rows); EPAR: its factor P(d) and how
 * the mass by distance follows it */
int epar_inspect_summarise_heads(struct epar_inspect *x);
/* the mechanism is one of EPAR's forms (its heads have a factor P(d)) */
int epar_inspect_is_epar(enum epar_mech_id id);

/* ---- inspect_view.c ---- */
/* head_view.html of the layers ls (nl) and heads hs (nh) into o */
int epar_inspect_head_view(const struct epar_inspect *x, const int *ls, int nl, const int *hs, int nh,
                           struct epar_out *o);

#endif
