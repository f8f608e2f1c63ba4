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
    {.key = "experiment", .type = EPAR_FIELD_STRING, .offset = offsetof(RH, experiment)},
    {.key = "epar_version", .type = EPAR_FIELD_STRING, .offset = offsetof(RH, epar_version)},
    {.key = "protocol", .type = EPAR_FIELD_STRING, .offset = offsetof(RH, protocol)},
    {.key = "protocol_version", .type = EPAR_FIELD_INT, .offset = offsetof(RH, protocol_version)},
    {.key = "protocol_hash", .type = EPAR_FIELD_STRING, .offset = offsetof(RH, protocol_hash),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "cli_overrides", .type = EPAR_FIELD_STRING, .offset = offsetof(RH, cli_overrides),
     .flags = EPAR_FIELD_OPTIONAL},
    {.key = "parameters", .type = EPAR_FIELD_JSON, .offset = offsetof(RH, parameters), .flags = EPAR_FIELD_OPTIONAL},
    {0}};
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

/* what the report reads back from an experiment's run.json: its "parameters" (epar_params_json) */
#define RPRM struct epar_runrec_params
static const struct epar_field run_params_rows[] = {
    {.key = "form", .type = EPAR_FIELD_STRING, .offset = offsetof(RPRM, form)},
    {.key = "alpha", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(RPRM, alpha)},
    {.key = "beta", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(RPRM, beta)},
    {.key = "gamma", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(RPRM, gamma)},
    {.key = "length", .type = EPAR_FIELD_INT, .offset = offsetof(RPRM, length)},
    {.key = "hidden", .type = EPAR_FIELD_INT, .offset = offsetof(RPRM, hidden)},
    {.key = "heads", .type = EPAR_FIELD_INT, .offset = offsetof(RPRM, heads)},
    {.key = "batch", .type = EPAR_FIELD_INT, .offset = offsetof(RPRM, batch)},
    {.key = "runs", .type = EPAR_FIELD_INT, .offset = offsetof(RPRM, runs)},
    {.key = "seeds", .type = EPAR_FIELD_LLIST, .offset = offsetof(RPRM, seeds),
     .count_offset = offsetof(RPRM, n_seeds), .max = EPAR_MAX_SEEDS, .flags = EPAR_FIELD_EMPTY_OK},
    {0}};
#undef RPRM
static const struct epar_field run_rows[] = {
    {.key = "parameters", .type = EPAR_FIELD_OBJ, .offset = offsetof(struct epar_runrec_run, parameters),
     .sub = run_params_rows, .flags = EPAR_FIELD_REQUIRED},
    {0}};

/* what the report reads back from the benchmark's run.json */
#define BB struct epar_runrec_budget
static const struct epar_field bench_budget_rows[] = {
    {.key = "name", .type = EPAR_FIELD_STRING, .offset = offsetof(BB, name)},
    {.key = "layers", .type = EPAR_FIELD_INT, .offset = offsetof(BB, layers)},
    {.key = "dim", .type = EPAR_FIELD_INT, .offset = offsetof(BB, dim)},
    {.key = "heads", .type = EPAR_FIELD_INT, .offset = offsetof(BB, heads)},
    {.key = "mlp", .type = EPAR_FIELD_INT, .offset = offsetof(BB, mlp)},
    {.key = "batch", .type = EPAR_FIELD_INT, .offset = offsetof(BB, batch)},
    {.key = "steps", .type = EPAR_FIELD_INT, .offset = offsetof(BB, steps)},
    {0}};
#undef BB
static const struct epar_field bench_params_rows[] = {
    {.key = "seeds", .type = EPAR_FIELD_LLIST, .offset = offsetof(struct epar_runrec_seeds, seeds),
     .count_offset = offsetof(struct epar_runrec_seeds, n_seeds), .max = EPAR_MAX_SEEDS, .flags = EPAR_FIELD_EMPTY_OK},
    {0}};
#define BR struct epar_runrec_bench
static const struct epar_field bench_rows[] = {
    {.key = "budget", .type = EPAR_FIELD_OBJ, .offset = offsetof(BR, budget), .sub = bench_budget_rows},
    {.key = "parameters", .type = EPAR_FIELD_OBJ, .offset = offsetof(BR, parameters), .sub = bench_params_rows},
    {.key = "cells", .type = EPAR_FIELD_LONG, .offset = offsetof(BR, cells)},
    {.key = "param_max_rel_diff", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BR, param_max_rel_diff)},
    {.key = "learned_z", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(BR, learned_z)},
    {.key = "mechanisms", .type = EPAR_FIELD_SLIST, .offset = offsetof(BR, mechanisms),
     .count_offset = offsetof(BR, n_mechanisms), .max = EPAR_MAX_LIST, .flags = EPAR_FIELD_EMPTY_OK},
    {.key = "cli_overrides", .type = EPAR_FIELD_STRING, .offset = offsetof(BR, cli_overrides)},
    {0}};
#undef BR

/* what summary.json and the opening line say about the run: the audit's run.json (written before the report) */
#define AR struct epar_runrec_audit
static const struct epar_field audit_run_rows[] = {
    {.key = "preset", .type = EPAR_FIELD_STRING, .offset = offsetof(AR, preset)},
    {.key = "protocol_hash", .type = EPAR_FIELD_STRING, .offset = offsetof(AR, hash)},
    {.key = "epar_version", .type = EPAR_FIELD_STRING, .offset = offsetof(AR, version)},
    {.key = "seeds", .type = EPAR_FIELD_LLIST, .offset = offsetof(AR, seeds), .count_offset = offsetof(AR, n_seeds),
     .max = EPAR_MAX_SEEDS, .flags = EPAR_FIELD_EMPTY_OK},
    {0}};
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

/* the CI budget's name in the protocol (experiments.benchmark.budgets): its cells only exercise the machinery */
#define SMOKE_BUDGET "smoke"

int epar_runrec_bench_reduced(const struct epar_runrec_bench *br, char *why, size_t n)
{
    int smoke = br->budget.name && !strcmp(br->budget.name, SMOKE_BUDGET);
    int subset = br->cli_overrides && *br->cli_overrides;
    if (why && n) why[0] = '\0';
    if (!smoke && !subset) return 0;
    if (!why || !n) return 1;
    if (smoke) {
        snprintf(why, n, "budget %s (%d seed%s", br->budget.name, br->parameters.n_seeds,
                 br->parameters.n_seeds == 1 ? "" : "s");
        if (br->budget.layers > 0 && br->budget.dim > 0)
            snprintf(why + strlen(why), n - strlen(why), ", %d layer%s of width %d", br->budget.layers,
                     br->budget.layers == 1 ? "" : "s", br->budget.dim);
        if (br->budget.steps > 0) snprintf(why + strlen(why), n - strlen(why), ", %d steps", br->budget.steps);
        snprintf(why + strlen(why), n - strlen(why), ")");
    }
    if (subset)
        snprintf(why + strlen(why), n - strlen(why), "%scommand-line changes %s", smoke ? " and " : "",
                 br->cli_overrides);
    return 1;
}

int epar_runrec_reduced_at(const char *out_root, char *why, size_t n)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/benchmark/run.json", out_root);
    struct epar_runrec_bench br;
    memset(&br, 0, sizeof br);
    json_t *doc = NULL;
    if (why && n) why[0] = '\0';
    if (access(p, R_OK) != 0 || epar_runrec_read_bench(p, &br, &doc) != EPAR_OK) {
        epar_err_clear();
        return 0;
    }
    int r = epar_runrec_bench_reduced(&br, why, n);
    json_decref(doc);
    return r;
}
