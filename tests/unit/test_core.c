/* rng, importance, csvout, outdir, protocol. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/csvout.h"
#include "lib/err.h"
#include "lib/importance.h"
#include "lib/outdir.h"
#include "lib/protocol.h"
#include "lib/rng.h"
#include "check.h"

static char tmpdir[] = "/tmp/epar-test-core.XXXXXX";

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
    /* rng: streams reproducible and independent of creation order */
    gsl_rng *a = epar_rng_alloc(42, 3, EPAR_RNG_DATA), *b = epar_rng_alloc(42, 4, EPAR_RNG_DATA),
            *c = epar_rng_alloc(42, 3, EPAR_RNG_DATA);
    double x = gsl_rng_uniform(a), y = gsl_rng_uniform(b), z = gsl_rng_uniform(c);
    check_true(x == z, "same (seed, run, tag) -> same numbers");
    check_true(x != y, "different run -> different numbers");
    double W[64 * 16], bias[64];
    epar_rng_linear_init(a, W, bias, 64, 16);
    double lo = 1, hi = -1;
    for (int i = 0; i < 64 * 16; i++) { if (W[i] < lo) lo = W[i]; if (W[i] > hi) hi = W[i]; }
    check_true(lo >= -0.25 && hi <= 0.25 && hi > 0.24 && lo < -0.24, "nn.Linear init in U(+-1/sqrt(fan_in)) = 0.25");
    double O[12 * 5];
    check_int(epar_rng_orthogonal(a, O, 12, 5), EPAR_OK, "orthogonal init");
    double worst = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            double s = 0;
            for (int r = 0; r < 12; r++) s += O[r * 5 + i] * O[r * 5 + j];
            if (fabs(s - (i == j)) > worst) worst = fabs(s - (i == j));
        }
    check_true(worst < 1e-12, "W^T W = I to 1e-12 (worst %g)", worst);
    epar_rng_free(a); epar_rng_free(b); epar_rng_free(c);

    /* importance generators: ranges, normalisation over the whole tensor, structure */
    gsl_rng *r = epar_rng_alloc(7, 0, EPAR_RNG_IMPORTANCE);
    int B = 2, L = 64;
    double I[128];
    for (int t = 0; t < 5; t++) {
        check_int(epar_imp_generate((enum epar_imp_type)t, r, B, L, I), EPAR_OK, "generate %s", epar_imp_name(t));
        double mn = 1e9, mx = -1e9;
        for (int k = 0; k < B * L; k++) { if (I[k] < mn) mn = I[k]; if (I[k] > mx) mx = I[k]; }
        check_rel(mn, 0, 1e-12, "%s min-max normalised: min 0", epar_imp_name(t));
        check_rel(mx, 1, 1e-12, "%s min-max normalised: max 1", epar_imp_name(t));
        if (t == EPAR_IMP_SPARSE) {
            int nz0 = 0;
            for (int k = 0; k < L; k++) nz0 += I[k] > 0;
            check_int(nz0, L / 10, "sparse: L/10 non-zero positions per item");
        }
        if (t == EPAR_IMP_CLUSTERED) check_true(I[0] == I[7] && I[8] == I[15], "clustered: blocks of L/8 share a value");
        if (t == EPAR_IMP_STRUCTURED) {
            check_int((long)(I[16] == 1.0), 1, "structured: peak at L/4");
            check_true(I[5] == I[L + 5], "structured: same for every item");
        }
    }
    enum epar_imp_type ty;
    check_int(epar_imp_parse("clustered", &ty), EPAR_OK, "parse type");
    check_int(epar_imp_parse("bogus", &ty), EPAR_EINVAL, "unknown type rejected");
    double X[2 * 3] = {3, 4, 0, 1, 2, 2};
    double n2[2];
    epar_imp_norm(X, 1, 2, 3, n2);
    check_rel(n2[0], 5, 1e-15, "norm importance ||(3,4,0)|| = 5");
    check_rel(n2[1], 3, 1e-15, "norm importance ||(1,2,2)|| = 3");
    epar_rng_free(r);

    /* csv: write, read back, quoting, number format, atomicity */
    struct epar_table *t = epar_csv_new("name,value,n");
    epar_csv_append(t, "sdi", "plain", 0.1, 3);
    epar_csv_append(t, "sdi", "with, comma \"q\"", NAN, -1);
    epar_csv_append(t, "s-i", "empty", 7);
    char path[256];
    snprintf(path, sizeof path, "%s/t.csv", tmpdir);
    check_int(epar_csv_write(t, path), EPAR_OK, "csv write");
    struct epar_table *back = NULL;
    check_int(epar_csv_read(path, &back), EPAR_OK, "csv read back");
    if (back) {
        check_int((long)back->nrows, 3, "rows read back");
        check_rel(epar_csv_get(back, 0, "value"), 0.1, 1e-12, "number read back");
        check_true(!strcmp(epar_csv_get_str(back, 1, "name"), "with, comma \"q\""), "quoted field read back");
        check_true(isnan(epar_csv_get(back, 1, "value")), "nan read back");
        epar_csv_free(back);
    }
    char buf[64];
    epar_csv_format_number(-0.0, buf, sizeof buf);
    check_true(!strcmp(buf, "0"), "no negative zero");
    epar_csv_format_number(1.0 / 3, buf, sizeof buf);
    check_true(!strcmp(buf, "0.333333333333"), "12 significant digits");
    check_int(epar_csv_write(t, "/dev/null"), EPAR_EIO, "a device is never replaced -> EPAR_EIO");
    check_int(epar_csv_write(t, "/nonexistent-dir/x.csv"), EPAR_EIO, "missing folder -> EPAR_EIO");
    epar_csv_free(t);

    /* outdir: staged files appear only on commit; abort leaves nothing */
    struct epar_out o;
    char root[256];
    snprintf(root, sizeof root, "%s/out", tmpdir);
    check_int(epar_out_begin(&o, root, "sec"), EPAR_OK, "out begin");
    FILE *f = fopen(epar_out_path(&o, "a.txt"), "w");
    fputs("x", f);
    fclose(f);
    char fin[300];
    snprintf(fin, sizeof fin, "%s/sec/a.txt", root);
    check_true(access(fin, F_OK) != 0, "nothing in the final folder before commit");
    check_int(epar_out_commit(&o), EPAR_OK, "commit");
    check_true(access(fin, F_OK) == 0, "file in place after commit");
    check_int(epar_out_begin(&o, root, "sec2"), EPAR_OK, "out begin 2");
    f = fopen(epar_out_path(&o, "b.txt"), "w");
    fclose(f);
    epar_out_abort(&o);
    char stage[300];
    snprintf(stage, sizeof stage, "%s/sec2", root);
    check_true(access(stage, F_OK) != 0, "abort leaves no folder");
    check_int(epar_out_begin(&o, fin, "x"), EPAR_EIO, "output root that is a regular file -> EPAR_EIO");

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
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) return 2;
    return check_summary("test_core");
}
