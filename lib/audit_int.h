/* audit's own parts shared by its files (private to lib/audit*.c; the interface is audit.h):
 *   audit.c        names, the rules (judging one measurement), position-effect quantities, checking the claims
 *   audit_eval.c   selecting numbers from a table, evaluating every claim into the audit's rows
 *   audit_table.c  the audit as tables */
#ifndef EPAR_AUDIT_INT_H
#define EPAR_AUDIT_INT_H

#include <jansson.h>

/* a distance of a posfx measurement: "L", "L-1", "L/2", "0", a number -> d = frac L + off (EPAR_EINVAL: none of
 * these, or negative; NULL: 0) */
int epar_audit_parse_distance(json_t *d, double *frac, double *off);

#endif
