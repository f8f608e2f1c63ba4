/* runrec: epar's run.json records, written and read back here only. Prefix epar_runrec_.
 *
 * Every output folder has a run.json saying which run wrote it: the head (experiment, epar version, protocol path,
 * version and hash, the command line's overrides, the resolved parameters) and then the experiment's own keys.
 * The experiments write theirs through epar_runrec_write (experiments/common.c's epar_exp_write_run_json), and so
 * does run-all for the audit's report/run.json. What epar reads back:
 *   the audit     a folder's fingerprint (hash, overrides, version, preset, seeds): is it the run being audited?
 *   the report    an experiment's parameters (the protocol table), the benchmark's budget, cells and mechanisms,
 *                 and the audit's own record (preset, hash, version, seeds) for the summary
 *   run-all       whether a folder has a record at all */
#ifndef EPAR_RUNREC_H
#define EPAR_RUNREC_H

#include <jansson.h>
#include "protocol.h"

/* Write the run.json at path: the head (prm NULL: a run that has none of these, such as train's: no hash, overrides
 * or parameters), then the keys of extra (stolen, may be NULL; a key of the head keeps its place and takes extra's
 * value). EPAR_EIO naming path, EPAR_ENOMEM. */
int epar_runrec_write(const char *path, const char *experiment, const char *protocol_path,
                      const struct epar_params *prm, json_t *extra);

/* 1 when <out_root>/<dir>/run.json exists and is readable */
int epar_runrec_exists(const char *out_root, const char *dir);

/* A folder's fingerprint, read leniently (a key that is absent or of another type reads as NULL / 0). Strings
 * borrow from doc (json_decref it; epar_runrec_fp_free). */
struct epar_runrec_fp {
    json_t *doc;
    const char *protocol_hash, *cli_overrides, *epar_version;
    const char *preset;                 /* parameters.preset */
    int n_seeds;                        /* the length of parameters.seeds */
    long long seeds[EPAR_MAX_SEEDS];    /* its first EPAR_MAX_SEEDS elements (not an integer: 0) */
    char seeds_text[256];               /* all of them, "42,43,44", truncated */
};
/* EPAR_EIO when path is missing or not JSON (no message set; *fp zeroed) */
int epar_runrec_fp_read(const char *path, struct epar_runrec_fp *fp);
void epar_runrec_fp_free(struct epar_runrec_fp *fp);

/* An experiment's "parameters" (epar_params_json), the ones the report's protocol table shows. */
struct epar_runrec_params {
    const char *form;
    double alpha, beta, gamma;
    int length, hidden, heads, batch, runs, n_seeds;
    long seeds[EPAR_MAX_SEEDS];
};
struct epar_runrec_run {
    struct epar_runrec_params parameters;
};
/* The benchmark's run.json: its budget, seeds, cells, parameter-count spread, learned threshold and mechanisms. */
struct epar_runrec_budget {
    const char *name;
    int layers, dim, heads, mlp, batch, steps;  /* the sizes the cells trained (0: not recorded) */
};
struct epar_runrec_seeds {
    int n_seeds;
    long seeds[EPAR_MAX_SEEDS];
};
struct epar_runrec_bench {
    struct epar_runrec_budget budget;
    struct epar_runrec_seeds parameters;
    long cells;
    double param_max_rel_diff, learned_z;
    int n_mechanisms;
    const char *mechanisms[EPAR_MAX_LIST];
    const char *cli_overrides;  /* "tasks=lm;mechanisms=none,rope": a subset of the grid (NULL or "": none) */
};
/* The audit's own record (report/run.json, run-all's): what the summary says about the run. */
struct epar_runrec_audit {
    const char *preset, *hash, *version;
    int n_seeds;
    long seeds[EPAR_MAX_SEEDS];
};
/* Read one record by its kind's rows (epar_fields_load, kind "run file": a missing or malformed file is EPAR_EIO
 * naming it); strings borrow from *doc (json_decref it). */
int epar_runrec_read_run(const char *path, struct epar_runrec_run *r, json_t **doc);
int epar_runrec_read_bench(const char *path, struct epar_runrec_bench *r, json_t **doc);
int epar_runrec_read_audit(const char *path, struct epar_runrec_audit *r, json_t **doc);

/* Whether a benchmark record is a reduced run, whose verdicts are not the reproduction's: the CI budget "smoke" (it
 * only exercises the machinery: one seed, one small layer, a few steps) or a grid changed on the command line (a
 * subset of tasks or mechanisms, other seeds, --set ...). 1 with why (if not NULL) saying so in words, e.g.
 * "budget smoke (1 seed, 1 layer of width 32, 30 steps)" or "command-line changes tasks=lm"; 0 otherwise (why ""). */
int epar_runrec_bench_reduced(const struct epar_runrec_bench *br, char *why, size_t n);
/* the same read from <out_root>/benchmark/run.json; 0 when it is missing or unreadable (no message set) */
int epar_runrec_reduced_at(const char *out_root, char *why, size_t n);

#endif
