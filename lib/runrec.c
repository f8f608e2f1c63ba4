/* runrec: epar's run.json records, written and read back here only (see runrec.h). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "err.h"
#include "runrec.h"
#include "version.h"

/* ---- writing ---- */

/* the head of every run.json, in this order; parameters and the protocol's fingerprint when the run resolved them */
struct run_head {
    const char *experiment, *epar_version, *protocol;
    int protocol_version;
    const char *protocol_hash, *cli_overrides;
    json_t *parameters;
};
#define RH struct run_head
static const struct epar_field run_head_fields[] = {
    EPAR_FIELD_(RH, "experiment", EPAR_FIELD_STRING, experiment, 0),
    EPAR_FIELD_(RH, "epar_version", EPAR_FIELD_STRING, epar_version, 0),
    EPAR_FIELD_(RH, "protocol", EPAR_FIELD_STRING, protocol, 0),
    EPAR_FIELD_(RH, "protocol_version", EPAR_FIELD_INT, protocol_version, 0),
    EPAR_FIELD_(RH, "protocol_hash", EPAR_FIELD_STRING, protocol_hash, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(RH, "cli_overrides", EPAR_FIELD_STRING, cli_overrides, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(RH, "parameters", EPAR_FIELD_JSON, parameters, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_END_};
#undef RH

int epar_runrec_write(const char *path, const char *experiment, const char *protocol_path,
                      const struct epar_params *prm, json_t *extra)
{
    struct run_head h = {experiment, EPAR_VERSION, protocol_path, EPAR_PROTOCOL_VERSION,
                         prm ? prm->protocol_hash : NULL, prm ? prm->overrides : NULL,
                         prm ? epar_params_json(prm) : NULL};
    int st = prm && !h.parameters ? epar_err_set(EPAR_ENOMEM, "out of memory building run.json")
                                  : epar_fields_save(path, run_head_fields, &h, extra, EPAR_SAVE_RUN);
    json_decref(h.parameters);
    return st;
}

/* ---- reading ---- */

int epar_runrec_exists(const char *out_root, const char *dir)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s/run.json", out_root, dir);
    return access(p, R_OK) == 0;
}

int epar_runrec_fp_read(const char *path, struct epar_runrec_fp *fp)
{
    memset(fp, 0, sizeof *fp);
    json_t *j = json_load_file(path, 0, NULL);
    if (!j) return EPAR_EIO;
    json_t *prm = json_object_get(j, "parameters"), *sj = json_object_get(prm, "seeds"), *x;
    fp->doc = j;
    fp->protocol_hash = json_string_value(json_object_get(j, "protocol_hash"));
    fp->cli_overrides = json_string_value(json_object_get(j, "cli_overrides"));
    fp->epar_version = json_string_value(json_object_get(j, "epar_version"));
    fp->preset = json_string_value(json_object_get(prm, "preset"));
    size_t k;
    fp->n_seeds = (int)json_array_size(sj);
    json_array_foreach(sj, k, x) {
        size_t l = strlen(fp->seeds_text);
        snprintf(fp->seeds_text + l, sizeof fp->seeds_text - l, "%s%lld", k ? "," : "",
                 (long long)json_integer_value(x));
        if (k < EPAR_MAX_SEEDS) fp->seeds[k] = (long long)json_integer_value(x);
    }
    return EPAR_OK;
}

void epar_runrec_fp_free(struct epar_runrec_fp *fp)
{
    json_decref(fp->doc);
    memset(fp, 0, sizeof *fp);
}

/* DOUBLE rows: any finite number (>= -1e300; a DOUBLE row's hi is its lo-inclusive flag, read as an int, so not the
 * 1e300 of EPAR_FIELD_) */
#define RR_NUMBER(S, key, member) EPAR_FIELD_RANGE_(S, key, EPAR_FIELD_DOUBLE, member, -1e300, 1, 0)

/* what the report reads back from an experiment's run.json: its "parameters" (epar_params_json) */
#define RPRM struct epar_runrec_params
static const struct epar_field run_params_rows[] = {
    EPAR_FIELD_(RPRM, "form", EPAR_FIELD_STRING, form, 0),
    RR_NUMBER(RPRM, "alpha", alpha),
    RR_NUMBER(RPRM, "beta", beta),
    RR_NUMBER(RPRM, "gamma", gamma),
    EPAR_FIELD_(RPRM, "length", EPAR_FIELD_INT, length, 0),
    EPAR_FIELD_(RPRM, "hidden", EPAR_FIELD_INT, hidden, 0),
    EPAR_FIELD_(RPRM, "heads", EPAR_FIELD_INT, heads, 0),
    EPAR_FIELD_(RPRM, "batch", EPAR_FIELD_INT, batch, 0),
    EPAR_FIELD_(RPRM, "runs", EPAR_FIELD_INT, runs, 0),
    EPAR_FIELD_LIST_(RPRM, "seeds", EPAR_FIELD_LLIST, seeds, n_seeds, EPAR_MAX_SEEDS, EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_END_};
#undef RPRM
static const struct epar_field run_rows[] = {
    EPAR_FIELD_OBJ_(struct epar_runrec_run, "parameters", parameters, run_params_rows, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_END_};

/* what the report reads back from the benchmark's run.json */
static const struct epar_field bench_budget_rows[] = {
    EPAR_FIELD_(struct epar_runrec_budget, "name", EPAR_FIELD_STRING, name, 0), EPAR_FIELD_END_};
static const struct epar_field bench_params_rows[] = {
    EPAR_FIELD_LIST_(struct epar_runrec_seeds, "seeds", EPAR_FIELD_LLIST, seeds, n_seeds, EPAR_MAX_SEEDS,
                     EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_END_};
#define BR struct epar_runrec_bench
static const struct epar_field bench_rows[] = {
    EPAR_FIELD_OBJ_(BR, "budget", budget, bench_budget_rows, 0),
    EPAR_FIELD_OBJ_(BR, "parameters", parameters, bench_params_rows, 0),
    EPAR_FIELD_(BR, "cells", EPAR_FIELD_LONG, cells, 0),
    RR_NUMBER(BR, "param_max_rel_diff", param_max_rel_diff),
    RR_NUMBER(BR, "learned_z", learned_z),
    EPAR_FIELD_LIST_(BR, "mechanisms", EPAR_FIELD_SLIST, mechanisms, n_mechanisms, EPAR_MAX_LIST, EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_END_};
#undef BR

/* what summary.json and the opening line say about the run: the audit's run.json (written before the report) */
#define AR struct epar_runrec_audit
static const struct epar_field audit_run_rows[] = {
    EPAR_FIELD_(AR, "preset", EPAR_FIELD_STRING, preset, 0),
    EPAR_FIELD_(AR, "protocol_hash", EPAR_FIELD_STRING, hash, 0),
    EPAR_FIELD_(AR, "epar_version", EPAR_FIELD_STRING, version, 0),
    EPAR_FIELD_LIST_(AR, "seeds", EPAR_FIELD_LLIST, seeds, n_seeds, EPAR_MAX_SEEDS, EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_END_};
#undef AR

int epar_runrec_read_run(const char *path, struct epar_runrec_run *r, json_t **doc)
{
    return epar_fields_load(path, "run file", run_rows, r, doc);
}

int epar_runrec_read_bench(const char *path, struct epar_runrec_bench *r, json_t **doc)
{
    return epar_fields_load(path, "run file", bench_rows, r, doc);
}

int epar_runrec_read_audit(const char *path, struct epar_runrec_audit *r, json_t **doc)
{
    return epar_fields_load(path, "run file", audit_run_rows, r, doc);
}
