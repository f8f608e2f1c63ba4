/* protocol: load and validate paper_protocol.json (jansson) and resolve run parameters.
 *
 * Resolution order for one experiment (later wins):
 *   top-level "seeds"  <  experiments.<name> sizes  <  presets.<preset> model parameters
 *   (and preset "seeds", and hidden = heads*head_dim when the preset gives head_dim)
 *   <  experiments.<name> "seeds"  <  command-line options (applied by cmd/).
 * Every validation error names the JSON path ($.presets.paper.alpha) and what was expected, and
 * returns EPAR_EPROTOCOL (exit 3). Unknown keys are errors (typos must not pass silently), except keys
 * starting with "_" or named "description"/"comment". */
#ifndef EPAR_PROTOCOL_H
#define EPAR_PROTOCOL_H

#include <stddef.h>
#include <jansson.h>
#include "posfx.h"

#define EPAR_PROTOCOL_VERSION 1
#define EPAR_MAX_SEEDS 64
#define EPAR_MAX_LIST 256

struct epar_protocol {
    json_t *root;
    char path[4096];
    char hash[32];           /* "fnv1a64:" + 16 hex digits (epar_protocol_load) */
    const char *kind;        /* in messages, "invalid <kind> '<path>'": NULL for "protocol" */
    int status;              /* the status of a reading error: 0 for EPAR_EPROTOCOL */
    int saved;               /* reading a record saved from settings rows (epar_fields_reader) */
};

/* Run parameters shared by the experiments. */
struct epar_params {
    char preset[64];
    enum epar_form form;
    double alpha, beta, gamma, temperature;
    int score_scale_head;   /* 0: scores / sqrt(hidden) (reference code); 1: / sqrt(hidden/heads) */
    int length, hidden, heads, batch, runs;
    int n_seeds;
    unsigned long seeds[EPAR_MAX_SEEDS];
    char protocol_hash[32]; /* the hash of the protocol these were resolved from */
    char overrides[512];    /* experiment options given on the command line, "name=value;..." in option-table
                             * order ("" when none): with protocol_hash, preset and seeds, what makes a run the
                             * protocol's own run or not (the audit marks claims read from another run stale) */
};

/* ---- the protocol file ---- */

/* Load and check path (p->hash: the protocol's fingerprint, FNV-1a 64 of its canonical JSON, sorted keys and compact,
 * with "claims", "audit" and "reference_defects" left out, so editing a claim does not make the experiments' runs
 * stale, while any change of a preset, size, sweep or seed does). */
int epar_protocol_load(const char *path, struct epar_protocol *p);
void epar_protocol_free(struct epar_protocol *p);

/* The key of obj nearest to name ("did you mean", lib/err epar_nearest; comment keys "_..." aside), NULL if none */
const char *epar_protocol_nearest_key(json_t *obj, const char *name);
/* A protocol error at jpath: "invalid protocol '<file>': <jpath>: <what>" (printf-formatted what; "protocol" is the
 * reader's kind when it has one), EPAR_EPROTOCOL (or the reader's status); returns that status. */
int epar_protocol_error(const struct epar_protocol *p, const char *jpath, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The error just recorded (a value of the protocol that a check refused) as a protocol error: its message becomes
 * "invalid protocol '<file>': <jpath>: <message>" (unless it names the file already), its hint is kept; returns
 * EPAR_EPROTOCOL. */
int epar_protocol_blame(const struct epar_protocol *p, const char *jpath);
/* The experiment section object (NULL if absent). */
json_t *epar_protocol_section(const struct epar_protocol *p, const char *experiment);
/* Reject keys of experiments.<experiment> not in allowed (NULL-terminated) or the common keys
 * (preset, length, hidden, heads, batch, runs, seeds, alpha, beta, gamma, form). */
int epar_protocol_check_keys(const struct epar_protocol *p, const char *experiment, const char *const *allowed);

/* The keys of an object as "a, b, c", in file order, truncated to n (empty: not an object); for hints that list
 * what there is ("presets in ...", "budgets in ..."). */
void epar_protocol_key_list(json_t *obj, char *out, size_t n);
/* Names of the presets, in file order; returns count. */
int epar_protocol_presets(const struct epar_protocol *p, const char **names, int max);

/* Resolve the parameters of `experiment` with preset `preset` (NULL: the section's "preset", else the
 * file's "default_preset"). Unknown preset -> EPAR_EINVAL naming it (usage error, it comes from the CLI
 * or the section) with the known presets as a hint. */
int epar_protocol_params(const struct epar_protocol *p, const char *experiment, const char *preset,
                         struct epar_params *out);
/* Check the resolved parameters (exit-2 class errors). */
int epar_params_validate(const struct epar_params *prm);
/* The params as a JSON object (for run.json). */
json_t *epar_params_json(const struct epar_params *prm);

/* Reject the keys of obj (NULL: none) not in allowed (NULL-terminated); jpath names obj in the message. */
int epar_protocol_obj_check_keys(const struct epar_protocol *p, json_t *obj, const char *jpath,
                                 const char *const *allowed);

/* ---- settings as data: rows ----
 * One row per setting of a configuration struct (or per value of a record epar writes and reads back): its key in
 * the JSON object, its C type and place (offsetof), its range and one line of help, written with designated
 * initialisers:
 *     {.key = "steps", .type = EPAR_FIELD_INT, .offset = offsetof(struct x, steps), .lo = 1, .hi = 1 << 30,
 *      .help = "optimiser steps"},
 * One reader fills the struct from an object (absent keys keep the struct's value: the defaults), one writer emits
 * the values as JSON in row order, and the allowed keys of an object are the rows' keys. A table ends with {0}. */
enum epar_field_type {
    EPAR_FIELD_INT = 1, /* int */
    EPAR_FIELD_DOUBLE,  /* double, finite */
    EPAR_FIELD_BOOL,    /* int, 0 or 1 (true, false) */
    EPAR_FIELD_STRING,  /* const char * (read: borrowed from the document; written: NULL as null) */
    EPAR_FIELD_DLIST,   /* double member[max] + int count */
    EPAR_FIELD_LONG,    /* long */
    EPAR_FIELD_ILIST,   /* int member[max] + int count */
    EPAR_FIELD_LLIST,   /* long member[max] + int count (seeds: unsigned long, read as long) */
    EPAR_FIELD_SLIST,   /* const char *member[max] + int count (read: borrowed from the document) */
    EPAR_FIELD_JSON,    /* json_t *member, any value (write: a new reference is taken; read: borrowed) */
    EPAR_FIELD_OBJ,     /* a nested struct at offset, described by sub */
    EPAR_FIELD_OLIST    /* an array of nested structs: member[max] of stride bytes + int count, each by sub */
};

/* flags of a row */
#define EPAR_FIELD_REQUIRED 1u   /* read: a missing key is an error */
#define EPAR_FIELD_OPTIONAL 2u   /* write: omitted when a DOUBLE is not finite, an INT/LONG is negative, a STRING or
                                  * JSON is NULL, a list is empty */
#define EPAR_FIELD_NULLNEG 4u    /* write: null when an INT/LONG is negative; read: null as -1 (INT/LONG) or NULL
                                  * (STRING) */
#define EPAR_FIELD_POSITIVE 8u   /* read, DOUBLE and DLIST: the value (each element) > 0 */
#define EPAR_FIELD_NONNEG 16u    /* read, DOUBLE and DLIST: the value (each element) >= 0 */
#define EPAR_FIELD_EMPTY_OK 32u  /* read: a list may be empty */
#define EPAR_FIELD_STRICT 64u    /* read, OBJ and OLIST rows: a key of the nested object that no row names is an error
                                  * (keys starting with '_', "description" and "comment" excepted) */
#define EPAR_FIELD_ZERO_OMIT 256u   /* INT/LONG: written only when not 0 (a knob whose default older records lack);
                                     * a saved record without it reads 0 */
#define EPAR_FIELD_ALLOC 128u    /* lists: the member is a pointer to the elements (the reader allocates them,
                                  * epar_fields_free frees them) instead of an array */

struct epar_field {
    const char *key;
    enum epar_field_type type;
    size_t offset;       /* of the member in the struct */
    double lo, hi;       /* INT, LONG, ILIST, LLIST: the inclusive range [lo, hi] of the value (of each element);
                          * left out (both 0): any value of the C type. DOUBLE, DLIST: see POSITIVE, NONNEG */
    size_t count_offset; /* lists: of the int count beside the array at offset */
    int max;             /* lists: capacity of the array */
    size_t stride;       /* OLIST: the size of one element */
    const struct epar_field *sub;   /* OBJ, OLIST: the nested struct's rows */
    double def;          /* INT, DOUBLE, BOOL: the default epar_fields_defaults sets */
    int write_only;      /* 1: written to JSON, not read from the protocol (set from elsewhere, e.g. the preset) */
    unsigned flags;      /* EPAR_FIELD_REQUIRED, ... */
    const char *help;
};

/* Fill base from the keys of obj that the rows name (obj may be NULL: nothing read); messages name jpath.key. */
int epar_protocol_obj_fields(const struct epar_protocol *p, json_t *obj, const char *jpath, const struct epar_field *f,
                             void *base);
/* An object whose members are the elements of a list (the protocol's "presets" and "experiments": one struct per
 * member, in file order). list is an OLIST row (its array, count, max and the element's rows); element k is read
 * from the k-th member by list->sub and names[k] (an array of list->max) gets the member's key, borrowed from the
 * document. Members with ignorable keys (_x, description, comment) are skipped; obj NULL: no elements. Messages
 * name jpath.key as epar_protocol_obj_fields does. */
int epar_protocol_obj_map(const struct epar_protocol *p, json_t *obj, const char *jpath, const struct epar_field *list,
                          void *base, const char **names);
/* Every INT, DOUBLE and BOOL row's def (0 when the row gives none) into base. */
void epar_fields_defaults(const struct epar_field *f, void *base);
/* keys[] <- the rows' keys (read rows only) then extra (NULL-terminated), NULL-terminated; at most max - 1 */
int epar_fields_keys(const struct epar_field *f, const char *const *extra, const char **keys, int max);

/* ---- epar's own records: one writer, one reader ----
 * run.json, cell.json, a checkpoint's JSON sections: written from rows and read back through the same rows. Ranges
 * of record rows are limits of sanity on files that may be damaged. */

/* Set every row's value of base into the object into (created when NULL); returns it (NULL: out of memory). */
json_t *epar_fields_json(const struct epar_field *f, const void *base, json_t *into);
/* An array of n values of a list type's elements (ILIST: int, LLIST: long, DLIST: double, SLIST: const char *),
 * for run.json's lists that are not a struct's member; NULL: out of memory. */
json_t *epar_fields_array(enum epar_field_type list_type, const void *v, int n);
/* Write the rows of base (f may be NULL: none) and then the keys of extra (stolen, may be NULL; a key already written
 * keeps its place and takes extra's value) as the JSON file path, keys in order, formatted by json_flags (below), by
 * lib/outdir's checked writer (all or nothing). EPAR_EIO naming path and the reason. */
int epar_fields_save(const char *path, const struct epar_field *f, const void *base, json_t *extra, size_t json_flags);
/* json_flags of epar_fields_save: run.json and inspect.json (indented by 2); records read back by epar (cell.json:
 * every double to 17 digits, so what is read back is what was computed) */
#define EPAR_SAVE_RUN (JSON_INDENT(2) | JSON_PRESERVE_ORDER)
#define EPAR_SAVE_EXACT (JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))

/* A reader (for epar_protocol_obj_fields) of one of epar's own files at path; kind names it in messages ("cell
 * file"): every problem is EPAR_EIO "invalid <kind> '<path>': $.key: ...". saved: the rows are a configuration's
 * settings rows and the file a record epar saved from them (a checkpoint's config): every row is read (also
 * write_only ones) and required (a missing key: a file of another version), ranges are not checked (they are the
 * protocol's; the caller validates the values it read) and a STRING's null reads as NULL. */
void epar_fields_reader(struct epar_protocol *rd, const char *path, const char *kind, int saved);
/* Read the JSON file at path into base by the rows (a reader of kind, not saved). The document stays alive in *doc
 * (strings and JSON rows borrow from it; json_decref it when done) or is freed when doc is NULL. */
int epar_fields_load(const char *path, const char *kind, const struct epar_field *f, void *base, json_t **doc);
/* As epar_fields_load, from the JSON text of len bytes (a checkpoint's section) held in memory; path names where it
 * was read from. */
int epar_fields_loadb(const void *text, size_t len, const char *kind, const char *path, const struct epar_field *f,
                      void *base, json_t **doc);
/* Free what the reader allocated (ALLOC lists, also in nested records) and zero their counts. */
void epar_fields_free(const struct epar_field *f, void *base);
/* The first key of the object now whose value differs from the saved JSON object text (len bytes), or is absent
 * there: 1 with *key (borrowed from now) and both values as compact sorted JSON, truncated to their buffers,
 * in was ("absent" when missing) and is; 0 when none differs; -1 when the text does not parse as JSON. */
int epar_fields_differ(const void *saved, size_t len, json_t *now, const char **key, char *was, size_t nwas, char *is,
                       size_t nis);

#endif
