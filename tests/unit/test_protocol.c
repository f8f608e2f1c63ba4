/* protocol: unit tests of lib/protocol (worked values, round trips, error paths). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/protocol.h"
#include "lib/err.h"
#include "check.h"

static char tmpdir[] = "/tmp/epar-test-protocol.XXXXXX";

static void cleanup(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

static void write_file(const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
}

static int load(const char *name, const char *text, struct epar_protocol *p)
{
    write_file(name, text);
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return epar_protocol_load(path, p);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) return 2;
    /* protocol: good file, then each kind of bad file names the JSON path */
    struct epar_protocol p;
    const char *good = "{\"version\":1,\"default_preset\":\"r\",\"seeds\":[1,2],"
                       "\"presets\":{\"r\":{\"alpha\":1.5,\"beta\":2,\"gamma\":0.5,\"form\":\"basic\",\"heads\":2},"
                       "\"p\":{\"alpha\":1,\"heads\":12,\"head_dim\":64,\"score_scale\":\"head\",\"seeds\":[9]}},"
                       "\"experiments\":{\"e\":{\"length\":32,\"hidden\":16,\"runs\":4,\"extra\":[1,2.5]}}}";
    check_int(load("good.json", good, &p), EPAR_OK, "good protocol loads");
    struct epar_params prm;
    check_int(epar_protocol_params(&p, "e", NULL, &prm), EPAR_OK, "params resolve");
    check_int(prm.length, 32, "length from the section");
    check_rel(prm.alpha, 1.5, 0, "alpha from the preset");
    check_int(prm.form, EPAR_FORM_BASIC, "form from the preset");
    check_int(prm.n_seeds, 2, "top-level seeds");
    check_int(epar_protocol_params(&p, "e", "p", &prm), EPAR_OK, "paper-like preset");
    check_int(prm.hidden, 768, "hidden = heads x head_dim");
    check_int(prm.n_seeds, 1, "preset seeds override top-level");
    check_int(epar_protocol_params(&p, "e", "nope", &prm), EPAR_EINVAL, "unknown preset is a usage error");
    double list[8];
    int n = 0;
    check_int(epar_protocol_get_dlist(&p, "e", "extra", list, 8, &n), EPAR_OK, "list getter");
    check_int(n, 2, "list length");
    const char *const allowed[] = {"extra", NULL};
    check_int(epar_protocol_check_keys(&p, "e", allowed), EPAR_OK, "known keys pass");
    check_int(epar_protocol_check_keys(&p, "e", NULL), EPAR_EPROTOCOL, "unknown section key rejected");
    check_true(strstr(epar_err_message(), "$.experiments.e.extra") != NULL, "error names the JSON path");
    epar_protocol_free(&p);
    struct { const char *name, *text, *path; } bad[] = {
        {"empty.json", "", "malformed"},
        {"trunc.json", "{\"version\":1,\"presets\":{", "malformed"},
        {"array.json", "[1,2]", "$"},
        {"ver.json", "{\"version\":2,\"default_preset\":\"r\",\"presets\":{\"r\":{}},\"experiments\":{}}", "$.version"},
        {"nover.json", "{\"default_preset\":\"r\",\"presets\":{\"r\":{}},\"experiments\":{}}", "$.version"},
        {"type.json", "{\"version\":1,\"default_preset\":\"r\",\"presets\":{\"r\":{\"alpha\":\"big\"}},\"experiments\":{}}", "$.presets.r.alpha"},
        {"neg.json", "{\"version\":1,\"default_preset\":\"r\",\"presets\":{\"r\":{\"beta\":-1}},\"experiments\":{}}", "$.presets.r.beta"},
        {"huge.json", "{\"version\":1,\"default_preset\":\"r\",\"presets\":{\"r\":{\"alpha\":1e999}},\"experiments\":{}}", "malformed"},
        {"unk.json", "{\"version\":1,\"default_preset\":\"r\",\"presets\":{\"r\":{\"gama\":1}},\"experiments\":{}}", "$.presets.r.gama"},
        {"dp.json", "{\"version\":1,\"default_preset\":\"x\",\"presets\":{\"r\":{}},\"experiments\":{}}", "$.default_preset"},
        {"seeds.json", "{\"version\":1,\"default_preset\":\"r\",\"presets\":{\"r\":{\"seeds\":[-1]}},\"experiments\":{}}", "$.presets.r.seeds[0]"},
        {"dup.json", "{\"version\":1,\"version\":1}", "malformed"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int st = load(bad[k].name, bad[k].text, &p);
        check_int(st, EPAR_EPROTOCOL, "bad protocol %s rejected", bad[k].name);
        check_true(strstr(epar_err_message(), bad[k].path) != NULL, "bad protocol %s names '%s': %s", bad[k].name,
                   bad[k].path, epar_err_message());
    }
    check_int(epar_protocol_load("/nonexistent/p.json", &p), EPAR_EIO, "missing protocol -> EPAR_EIO");
    cleanup();
    return check_summary("test_protocol");
}
