/* runrec: unit tests of lib/runrec (a record written and read back by every reader, lenient and strict reading). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "lib/err.h"
#include "lib/protocol.h"
#include "lib/runrec.h"
#include "lib/version.h"
#include "check.h"

static char tmpdir[] = "/tmp/epar-test-runrec.XXXXXX";

static void write_text(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs(s, f);
    fclose(f);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) return 2;
    char dir[300], path[400], text[4096];
    snprintf(dir, sizeof dir, "%s/position", tmpdir);
    snprintf(path, sizeof path, "%s/run.json", dir);
    check_true(!epar_runrec_exists(tmpdir, "position"), "no folder: no record");
    check_int(mkdir(dir, 0755), 0, "folder made");

    /* an experiment's record from resolved parameters: the audit's fingerprint and the report's parameters */
    struct epar_protocol proto;
    struct epar_params prm;
    check_int(epar_protocol_load("paper_protocol.json", &proto), EPAR_OK, "the repository's protocol loads");
    check_int(epar_protocol_params(&proto, "position-effect", NULL, &prm), EPAR_OK, "its position-effect parameters");
    snprintf(prm.overrides, sizeof prm.overrides, "runs=3");
    check_int(epar_runrec_write(path, "position-effect", "paper_protocol.json", &prm, json_pack("{s:i}", "extra", 7)),
              EPAR_OK, "write a record");
    check_true(epar_runrec_exists(tmpdir, "position"), "the record exists");
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f) fclose(f);
    const char *order[] = {"\"experiment\"", "\"epar_version\"", "\"protocol\"", "\"protocol_version\"",
                           "\"protocol_hash\"", "\"cli_overrides\"", "\"parameters\"", "\"extra\""};
    const char *prev = text;
    for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
        const char *at = strstr(text, order[k]);
        check_true(at && at >= prev, "head key %s in its place", order[k]);
        if (at) prev = at;
    }
    struct epar_runrec_fp fp;
    check_int(epar_runrec_fp_read(path, &fp), EPAR_OK, "fingerprint read");
    check_true(fp.protocol_hash && !strcmp(fp.protocol_hash, prm.protocol_hash), "fingerprint: the protocol's hash");
    check_true(fp.epar_version && !strcmp(fp.epar_version, EPAR_VERSION), "fingerprint: this epar's version");
    check_true(fp.cli_overrides && !strcmp(fp.cli_overrides, "runs=3"), "fingerprint: the overrides");
    check_true(fp.preset && !strcmp(fp.preset, prm.preset), "fingerprint: the preset of the parameters");
    check_int(fp.n_seeds, prm.n_seeds, "fingerprint: the number of seeds");
    char want[256] = "";
    for (int i = 0; i < prm.n_seeds; i++) {
        check_int((long)fp.seeds[i], (long)prm.seeds[i], "fingerprint: seed %d", i);
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lu", i ? "," : "", prm.seeds[i]);
    }
    check_true(!strcmp(fp.seeds_text, want), "fingerprint: seeds as text '%s'", fp.seeds_text);
    epar_runrec_fp_free(&fp);
    struct epar_runrec_run rr = {0};
    json_t *doc = NULL;
    check_int(epar_runrec_read_run(path, &rr, &doc), EPAR_OK, "the report's parameters read");
    check_int(rr.parameters.length, prm.length, "parameters: length");
    check_int(rr.parameters.runs, prm.runs, "parameters: runs");
    check_rel(rr.parameters.beta, prm.beta, 0, "parameters: beta");
    check_int(rr.parameters.n_seeds, prm.n_seeds, "parameters: seeds");
    json_decref(doc);
    epar_protocol_free(&proto);

    /* the audit's own record: no parameters, the fingerprint from extra, in the head's place */
    check_int(epar_runrec_write(path, "run-all", "p.json", NULL,
                                json_pack("{s:s, s:s, s:[i,i]}", "protocol_hash", "abc", "preset", "paper", "seeds",
                                          42, 43)),
              EPAR_OK, "write the audit's record");
    f = fopen(path, "r");
    n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f) fclose(f);
    const char *v = strstr(text, "\"protocol_version\""), *h = strstr(text, "\"protocol_hash\"");
    check_true(v && h && v < h && !strstr(text, "\"parameters\""),
               "audit record: the hash after the version, no parameters");
    struct epar_runrec_audit ar = {0};
    check_int(epar_runrec_read_audit(path, &ar, &doc), EPAR_OK, "the audit's record read");
    check_true(ar.hash && !strcmp(ar.hash, "abc") && ar.preset && !strcmp(ar.preset, "paper"), "audit: hash and preset");
    check_int(ar.n_seeds, 2, "audit: two seeds");
    check_int(ar.seeds[1], 43, "audit: the second seed");
    json_decref(doc);
    struct epar_runrec_run rr2 = {0};
    check_int(epar_runrec_read_run(path, &rr2, NULL), EPAR_EIO, "no parameters: not an experiment's record");
    epar_err_clear();

    /* the benchmark's record */
    write_text(path, "{\"experiment\": \"benchmark\", \"budget\": {\"name\": \"quick\"}, \"parameters\": {\"seeds\": [1, 2, "
                     "3]}, \"cells\": 369, \"param_max_rel_diff\": 0.004, \"learned_z\": 2, \"mechanisms\": [\"none\", "
                     "\"rope\"]}");
    struct epar_runrec_bench br = {{NULL, 0, 0, 0, 0, 0, 0}, {0, {0}}, 0, 0, 0, 0, {NULL}, NULL};
    check_int(epar_runrec_read_bench(path, &br, &doc), EPAR_OK, "the benchmark's record read");
    check_true(br.budget.name && !strcmp(br.budget.name, "quick"), "bench: budget");
    check_int(br.parameters.n_seeds, 3, "bench: seeds");
    check_int(br.cells, 369, "bench: cells");
    check_rel(br.param_max_rel_diff, 0.004, 1e-15, "bench: parameter-count spread");
    check_rel(br.learned_z, 2, 0, "bench: learned z");
    check_int(br.n_mechanisms, 2, "bench: mechanisms");
    json_decref(doc);

    /* lenient fingerprint: a key of another type reads as absent; a file that is not JSON is EPAR_EIO */
    write_text(path, "{\"protocol_hash\": 5, \"parameters\": {\"seeds\": [7, \"x\"]}}");
    check_int(epar_runrec_fp_read(path, &fp), EPAR_OK, "a record with odd types still reads");
    check_true(fp.protocol_hash == NULL && fp.preset == NULL, "odd types: no hash, no preset");
    check_int(fp.n_seeds, 2, "odd types: two seeds listed");
    check_true(!strcmp(fp.seeds_text, "7,0"), "odd types: a seed that is not an integer reads 0");
    epar_runrec_fp_free(&fp);
    write_text(path, "{not json");
    check_int(epar_runrec_fp_read(path, &fp), EPAR_EIO, "not JSON -> EPAR_EIO");
    check_true(fp.doc == NULL && fp.n_seeds == 0, "not JSON: nothing read");
    check_int(epar_runrec_read_bench(path, &br, NULL), EPAR_EIO, "not JSON -> EPAR_EIO for the strict readers");
    check_true(strstr(epar_err_message(), "run.json") != NULL, "the message names the file: %s", epar_err_message());
    epar_err_clear();

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_summary("test_runrec");
}
