/* protocol: unit tests of lib/protocol (worked values, round trips, error paths). */
#include <math.h>
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

/* a record of the kind epar writes and reads back (cell.json): every row type, written then loaded */
struct rec_item {
    int length, defined;
    double value;
    long sequences;
};
struct rec {
    const char *name;
    int n, ni, nl, ns, nd, nitems, absent;
    long big, resumed;
    double x, nan_opt;
    int ints[4];
    long longs[4];
    const char *strs[4];
    double d[4];
    struct rec_item items[3];
    struct rec_item one;
};
#define RI struct rec_item
static const struct epar_field item_rows[] = {
    {.key = "length", .type = EPAR_FIELD_INT, .offset = offsetof(RI, length), .lo = 2, .hi = 65536,
     .flags = EPAR_FIELD_REQUIRED},
    {.key = "value", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(RI, value)},
    {.key = "defined", .type = EPAR_FIELD_BOOL, .offset = offsetof(RI, defined)},
    {.key = "sequences", .type = EPAR_FIELD_LONG, .offset = offsetof(RI, sequences)},
    {0}};
#undef RI
#define R struct rec
static const struct epar_field rec_rows[] = {
    {.key = "name", .type = EPAR_FIELD_STRING, .offset = offsetof(R, name), .flags = EPAR_FIELD_REQUIRED},
    {.key = "big", .type = EPAR_FIELD_LONG, .offset = offsetof(R, big)},
    {.key = "resumed", .type = EPAR_FIELD_LONG, .offset = offsetof(R, resumed), .flags = EPAR_FIELD_NULLNEG},
    {.key = "x", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(R, x)},
    {.key = "nan_opt", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(R, nan_opt), .flags = EPAR_FIELD_OPTIONAL},
    {.key = "absent", .type = EPAR_FIELD_INT, .offset = offsetof(R, absent), .flags = EPAR_FIELD_OPTIONAL},
    {.key = "ints", .type = EPAR_FIELD_ILIST, .offset = offsetof(R, ints), .count_offset = offsetof(R, ni), .max = 4},
    {.key = "longs", .type = EPAR_FIELD_LLIST, .offset = offsetof(R, longs), .count_offset = offsetof(R, nl), .max = 4},
    {.key = "strs", .type = EPAR_FIELD_SLIST, .offset = offsetof(R, strs), .count_offset = offsetof(R, ns), .max = 4,
     .flags = EPAR_FIELD_EMPTY_OK},
    {.key = "d", .type = EPAR_FIELD_DLIST, .offset = offsetof(R, d), .count_offset = offsetof(R, nd), .max = 4},
    {.key = "items", .type = EPAR_FIELD_OLIST, .offset = offsetof(R, items), .count_offset = offsetof(R, nitems),
     .max = 3, .stride = sizeof(struct rec_item), .sub = item_rows},
    {.key = "one", .type = EPAR_FIELD_OBJ, .offset = offsetof(R, one), .sub = item_rows},
    {0}};
#undef R

static void test_records(void)
{
    struct rec w = {.name = "cell", .big = 5000000000L, .resumed = -1, .x = 0.25, .nan_opt = NAN, .absent = -1,
                    .ni = 2, .ints = {3, -4}, .nl = 1, .longs = {7}, .ns = 0, .nd = 3, .d = {1.5, NAN, 2},
                    .nitems = 2, .items = {{4, 1, 0.5, 10}, {8, 0, 0, 0}}, .one = {2, 1, 1, 1}};
    json_t *j = epar_fields_json(rec_rows, &w, NULL);
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    check_true(s && !strcmp(s, "{\"name\":\"cell\",\"big\":5000000000,\"resumed\":null,\"x\":0.25,\"ints\":[3,-4],"
                                "\"longs\":[7],\"strs\":[],\"d\":[1.5,2.0],\"items\":[{\"length\":4,\"value\":0.5,"
                                "\"defined\":true,\"sequences\":10},{\"length\":8,\"value\":0.0,\"defined\":false,"
                                "\"sequences\":0}],\"one\":{\"length\":2,\"value\":1.0,\"defined\":true,\"sequences\":1}}"),
               "record written in row order, NaN and negative optional left out, NULLNEG null: %s", s ? s : "(null)");
    char path[256];
    snprintf(path, sizeof path, "%s/rec.json", tmpdir);
    json_dump_file(j, path, 0);
    free(s);
    json_decref(j);
    struct rec r = {.nan_opt = -7};
    json_t *doc = NULL;
    check_int(epar_fields_load(path, "cell file", rec_rows, &r, &doc), EPAR_OK, "record read back");
    check_true(r.name && !strcmp(r.name, "cell") && r.big == 5000000000L && r.x == 0.25 && r.nan_opt == -7,
               "scalars read back, absent keys keep their value");
    check_true(r.ni == 2 && r.ints[1] == -4 && r.nl == 1 && r.longs[0] == 7 && r.ns == 0 && r.nd == 2 && r.d[1] == 2,
               "lists read back");
    check_true(r.nitems == 2 && r.items[0].length == 4 && r.items[0].defined && r.items[0].sequences == 10 &&
               r.items[1].length == 8 && !r.items[1].defined && r.one.length == 2, "nested records read back");
    json_decref(doc);
    struct { const char *text, *path; } bad[] = {
        {"{\"big\":1}", "missing key 'name'"},
        {"{\"name\":3}", "$.name"},
        {"{\"name\":\"a\",\"items\":[{\"length\":1}]}", "$.items[0].length"},
        {"{\"name\":\"a\",\"items\":[{}]}", "$.items[0]: missing key 'length'"},
        {"{\"name\":\"a\",\"ints\":[1,2,3,4,5]}", "$.ints"},
        {"{\"name\":\"a\",\"ints\":[]}", "$.ints"},
        {"{\"name\":\"a\",\"d\":[1,\"x\"]}", "$.d[1]"},
        {"{\"name\":\"a\",\"one\":[]}", "$.one"},
        {"[1]", "$: expected an object"},
        {"{", "cannot read cell file"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        write_file("rec.json", bad[k].text);
        int st = epar_fields_load(path, "cell file", rec_rows, &r, NULL);
        check_int(st, EPAR_EIO, "bad record %zu rejected", k);
        check_true(strstr(epar_err_message(), bad[k].path) != NULL && strstr(epar_err_message(), "cell file"),
                   "bad record %zu names '%s': %s", k, bad[k].path, epar_err_message());
    }
    /* allocated lists (freed by epar_fields_free, also after a failed read) and strict nested objects */
    struct alloc_rec { long *v; int n; struct rec_item one; } ar = {NULL, 0, {0, 0, 0, 0}};
    static const struct epar_field alloc_rows[] = {
        {.key = "v", .type = EPAR_FIELD_LLIST, .offset = offsetof(struct alloc_rec, v),
         .count_offset = offsetof(struct alloc_rec, n), .max = 100, .flags = EPAR_FIELD_ALLOC},
        {.key = "one", .type = EPAR_FIELD_OBJ, .offset = offsetof(struct alloc_rec, one), .sub = item_rows,
         .flags = EPAR_FIELD_STRICT}, {0}};
    write_file("rec.json", "{\"v\":[5,6,7],\"one\":{\"length\":3}}");
    check_int(epar_fields_load(path, "cell file", alloc_rows, &ar, NULL), EPAR_OK, "allocated list read");
    check_true(ar.n == 3 && ar.v && ar.v[2] == 7 && ar.one.length == 3, "allocated list values");
    epar_fields_free(alloc_rows, &ar);
    check_true(!ar.v && ar.n == 0, "allocated list freed");
    write_file("rec.json", "{\"v\":[5,\"x\"]}");
    check_int(epar_fields_load(path, "cell file", alloc_rows, &ar, NULL), EPAR_EIO, "bad element of an allocated list");
    epar_fields_free(alloc_rows, &ar);
    write_file("rec.json", "{\"one\":{\"length\":3,\"lenght\":4}}");
    check_int(epar_fields_load(path, "cell file", alloc_rows, &ar, NULL), EPAR_EIO, "strict object: unknown key");
    check_true(strstr(epar_err_message(), "$.one.lenght") != NULL, "the unknown key named: %s", epar_err_message());
    char list[16];
    json_t *keys = json_pack("{s:i, s:i, s:i}", "quick", 1, "full", 2, "smoke", 3);
    epar_protocol_key_list(keys, list, sizeof list);
    check_true(!strcmp(list, "quick, full, sm"), "key list in file order, truncated: '%s'", list);
    epar_protocol_key_list(NULL, list, sizeof list);
    check_true(!list[0], "key list of no object is empty");
    json_decref(keys);
    double dv[2] = {1, NAN};
    const char *sv[2] = {"a", "b"};
    json_t *a = epar_fields_array(EPAR_FIELD_DLIST, dv, 2), *b = epar_fields_array(EPAR_FIELD_SLIST, sv, 2);
    check_true(json_array_size(a) == 1 && json_array_size(b) == 2, "arrays of C values (NaN left out)");
    json_decref(a);
    json_decref(b);
}

/* saved records: settings tables written in turn and read back in turn by a reader of saved records (every row
 * required and read, no ranges, null strings), written as a file with extra keys, compared with a saved text */
struct saved {
    int layers;
    double alpha;
    const char *text;
    struct { int k; } sub;
};
#define SV struct saved
static const struct epar_field saved_a[] = {
    {.key = "layers", .type = EPAR_FIELD_INT, .offset = offsetof(SV, layers), .lo = 1, .hi = 4,
     .help = "a setting with a protocol range"},
    {.key = "alpha", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(SV, alpha), .write_only = 1,
     .flags = EPAR_FIELD_POSITIVE, .help = "write-only in the protocol"},
    {0}};
static const struct epar_field saved_b[] = {
    {.key = "text", .type = EPAR_FIELD_STRING, .offset = offsetof(SV, text), .help = "a string"},
    {0}};
static const struct epar_field saved_sub[] = {{.key = "k", .type = EPAR_FIELD_INT, .offset = offsetof(SV, sub.k)}, {0}};
static const struct epar_field saved_o[] = {{.key = "o", .type = EPAR_FIELD_OBJ, .sub = saved_sub}, {0}};

/* the text s read as a saved record by the three tables in turn */
static int read_saved(const char *s, struct saved *r)
{
    struct epar_protocol rd;
    epar_fields_reader(&rd, "c.bin", "checkpoint config", 1);
    json_t *doc = json_loads(s, 0, NULL);
    int st = epar_protocol_obj_fields(&rd, doc, "$", saved_a, r);
    if (!st) st = epar_protocol_obj_fields(&rd, doc, "$", saved_b, r);
    if (!st) st = epar_protocol_obj_fields(&rd, doc, "$", saved_o, r);
    json_decref(doc);
    return st;
}

static void test_saved(void)
{
    struct saved w = {9, 0.5, NULL, {3}}, r = {0, 0, "x", {0}};
    json_t *j = epar_fields_json(saved_a, &w, NULL);
    check_true(j && epar_fields_json(saved_b, &w, j) && epar_fields_json(saved_o, &w, j), "tables written in turn");
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    check_true(s && !strcmp(s, "{\"layers\":9,\"alpha\":0.5,\"text\":null,\"o\":{\"k\":3}}"), "saved written: %s",
               s ? s : "(null)");
    check_int(read_saved(s, &r), EPAR_OK, "saved read: %s", epar_err_message());
    check_true(r.layers == 9 && r.alpha == 0.5 && r.text == NULL && r.sub.k == 3,
               "saved read: out-of-range setting, write-only row, null string, nested object read back");
    const char *bad[][2] = {{"{\"layers\":1,\"text\":null,\"o\":{\"k\":1}}", "$: missing key 'alpha'"},
                            {"{\"layers\":1,\"alpha\":1,\"text\":null,\"o\":{}}", "$.o: missing key 'k'"},
                            {"{\"layers\":1.5,\"alpha\":1,\"text\":null,\"o\":{\"k\":1}}", "$.layers"}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        check_int(read_saved(bad[k][0], &r), EPAR_EIO, "saved read: bad text %zu", k);
        check_true(strstr(epar_err_message(), bad[k][1]) && strstr(epar_err_message(), "checkpoint config 'c.bin'"),
                   "saved read: bad text %zu names '%s': %s", k, bad[k][1], epar_err_message());
    }
    /* not saved (epar_fields_loadb): the protocol's range holds, write-only rows are not read, null is no string */
    const char *text = "{\"layers\":2,\"alpha\":-1}";
    r.alpha = 7;
    check_int(epar_fields_loadb(text, strlen(text), "checkpoint config", "c.bin", saved_a, &r, NULL), EPAR_OK,
              "loadb: %s", epar_err_message());
    check_true(r.layers == 2 && r.alpha == 7, "loadb: write-only row not read");
    text = "{\"layers\":9}";
    check_int(epar_fields_loadb(text, strlen(text), "checkpoint config", "c.bin", saved_a, &r, NULL), EPAR_EIO,
              "loadb: range");
    check_true(strstr(epar_err_message(), "$.layers: expected an integer in [1, 4], got 9") != NULL, "loadb: %s",
               epar_err_message());
    text = "{\"text\":null}";
    check_int(epar_fields_loadb(text, strlen(text), "checkpoint config", "c.bin", saved_b, &r, NULL), EPAR_EIO,
              "loadb: null string");
    check_int(epar_fields_loadb("{\"layers\":", 10, "checkpoint config", "c.bin", saved_a, &r, NULL), EPAR_EIO,
              "loadb: malformed");
    check_true(strstr(epar_err_message(), "cannot read checkpoint config 'c.bin'") != NULL, "loadb: %s",
               epar_err_message());
    const char *key;
    char was[8], is[81];
    check_int(epar_fields_differ(s, strlen(s), j, &key, was, sizeof was, is, sizeof is), 0, "differ: the same");
    json_object_set_new(j, "alpha", json_real(0.25));
    json_object_set_new(j, "new", json_string("a rather long value"));
    check_int(epar_fields_differ(s, strlen(s), j, &key, was, sizeof was, is, sizeof is), 1, "differ: alpha");
    check_true(!strcmp(key, "alpha") && !strcmp(was, "0.5") && !strcmp(is, "0.25"), "differ: %s %s %s", key, was, is);
    json_object_set_new(j, "alpha", json_real(0.5));
    check_int(epar_fields_differ(s, strlen(s), j, &key, was, sizeof was, is, sizeof is), 1, "differ: new");
    check_true(!strcmp(key, "new") && !strcmp(was, "absent") && !strcmp(is, "\"a rather long value\""),
               "differ: absent there");
    check_int(epar_fields_differ("{", 1, j, &key, was, sizeof was, is, sizeof is), -1, "differ: not JSON");
    char path[256];
    snprintf(path, sizeof path, "%s/saved.json", tmpdir);
    check_int(epar_fields_save(path, saved_a, &w, json_pack("{s:i, s:s}", "layers", 2, "extra", "e"), EPAR_SAVE_RUN),
              EPAR_OK, "save");
    json_t *back = json_load_file(path, 0, NULL);
    char *b = json_dumps(back, JSON_COMPACT | JSON_PRESERVE_ORDER);
    check_true(b && !strcmp(b, "{\"layers\":2,\"alpha\":0.5,\"extra\":\"e\"}"),
               "save: rows then extra's keys, a key of both in its place with extra's value: %s", b ? b : "(null)");
    snprintf(path, sizeof path, "%s/no/such/dir.json", tmpdir);
    check_int(epar_fields_save(path, NULL, NULL, NULL, EPAR_SAVE_RUN), EPAR_EIO, "save: unwritable path");
    free(b);
    json_decref(back);
    free(s);
    json_decref(j);
}
#undef SV

/* ranges: a list's per-element range (DLIST by POSITIVE/NONNEG, ILIST by lo, hi), a row without one (any value of
 * its C type), defaults of every scalar row */
struct ranged {
    double v[4], d;
    int nv, iv[3], niv, i, k;
    long l;
};
#define RG struct ranged
static const struct epar_field ranged_rows[] = {
    {.key = "v", .type = EPAR_FIELD_DLIST, .offset = offsetof(RG, v), .count_offset = offsetof(RG, nv), .max = 4,
     .flags = EPAR_FIELD_POSITIVE},
    {.key = "iv", .type = EPAR_FIELD_ILIST, .offset = offsetof(RG, iv), .count_offset = offsetof(RG, niv), .max = 3,
     .lo = 1, .hi = 9},
    {.key = "d", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(RG, d), .def = 0.5},
    {.key = "i", .type = EPAR_FIELD_INT, .offset = offsetof(RG, i), .def = 3},
    {.key = "k", .type = EPAR_FIELD_INT, .offset = offsetof(RG, k)},
    {.key = "l", .type = EPAR_FIELD_LONG, .offset = offsetof(RG, l)},
    {0}};
#undef RG

static void test_ranges(void)
{
    struct epar_protocol p = {.path = "r.json"};
    struct ranged r = {.k = 7};
    epar_fields_defaults(ranged_rows, &r);
    check_true(r.d == 0.5 && r.i == 3 && r.k == 0, "defaults: every scalar row's def, 0 when it gives none");
    json_t *o = json_loads("{\"v\":[0.5,2],\"iv\":[1,9],\"d\":-1e300,\"i\":-2147483648,\"l\":-9000000000}", 0,
                           NULL);
    check_int(epar_protocol_obj_fields(&p, o, "$.x", ranged_rows, &r), EPAR_OK, "ranges: good values: %s",
              epar_err_message());
    check_true(r.nv == 2 && r.v[1] == 2 && r.niv == 2 && r.iv[1] == 9 && r.d == -1e300 && r.i == -2147483647 - 1 &&
                   r.l == -9000000000L,
               "ranges: lists read; rows without a range take any value of their type");
    json_decref(o);
    const char *bad[][2] = {{"{\"v\":[1,0]}", "$.x.v[1]: expected a number > 0, got 0"},
                            {"{\"v\":[1,\"a\"]}", "$.x.v[1]: expected a finite number"},
                            {"{\"v\":[1,2,3,4,5]}", "$.x.v: expected a non-empty array of at most 4 elements"},
                            {"{\"iv\":[3,10]}", "$.x.iv[1]: expected an integer in [1, 9], got 10"},
                            {"{\"i\":2147483648}", "$.x.i: expected an integer in [-2147483648, 2147483647]"}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        o = json_loads(bad[k][0], 0, NULL);
        check_int(epar_protocol_obj_fields(&p, o, "$.x", ranged_rows, &r), EPAR_EPROTOCOL, "ranges: bad %zu", k);
        check_true(strstr(epar_err_message(), bad[k][1]) != NULL, "ranges: bad %zu names '%s': %s", k, bad[k][1],
                   epar_err_message());
        json_decref(o);
    }
}

static void test_map_closed(void);

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
    struct {
        double v[8];
        int n;
    } list = {{0}, 0};
    const struct epar_field list_rows[] = {{.key = "extra", .type = EPAR_FIELD_DLIST, .offset = 0,
                                            .count_offset = offsetof(__typeof__(list), n), .max = 8},
                                           {0}};
    check_int(epar_protocol_obj_fields(&p, epar_protocol_section(&p, "e"), "$.experiments.e", list_rows, &list), EPAR_OK,
              "a section's list by a row");
    check_int(list.n, 2, "list length");
    check_rel(list.v[1], 2.5, 0, "list element");
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
    test_records();
    test_saved();
    test_ranges();
    test_map_closed();
    cleanup();
    return check_summary("test_protocol");
}

/* epar_protocol_obj_map: the members of an object as list elements, in file order, ignorable keys skipped, names
 * borrowed; STRICT rows: nested objects may have only their rows' keys */
struct map_doc {
    json_t *presets;
    int nitems;
    struct rec_item items[3];
    struct rec_item one;
};
#define MD struct map_doc
static const struct epar_field map_top_rows[] = {
    {.key = "presets", .type = EPAR_FIELD_JSON, .offset = offsetof(MD, presets)},
    {.key = "items", .type = EPAR_FIELD_OLIST, .offset = offsetof(MD, items), .count_offset = offsetof(MD, nitems),
     .max = 3, .stride = sizeof(struct rec_item), .sub = item_rows, .flags = EPAR_FIELD_EMPTY_OK | EPAR_FIELD_STRICT},
    {.key = "one", .type = EPAR_FIELD_OBJ, .offset = offsetof(MD, one), .sub = item_rows, .flags = EPAR_FIELD_STRICT},
    {0}};
static const struct epar_field map_rows[] = {{.key = "", .type = EPAR_FIELD_OLIST, .offset = offsetof(MD, items),
                                              .count_offset = offsetof(MD, nitems), .max = 3,
                                              .stride = sizeof(struct rec_item), .sub = item_rows}, {0}};
#undef MD

static void test_map_closed(void)
{
    struct epar_protocol p = {0};
    snprintf(p.path, sizeof p.path, "map.json");
    json_t *root = json_loads("{\"presets\":{\"b\":{\"length\":8,\"value\":0.5},\"_note\":\"x\","
                              "\"a\":{\"length\":4}},\"items\":[{\"length\":2}],\"one\":{\"length\":3},"
                              "\"other\":1}", 0, NULL);
    struct map_doc d = {0};
    const char *names[3];
    check_int(epar_protocol_obj_fields(&p, root, "$", map_top_rows, &d), EPAR_OK,
              "closed read: obj's own unknown key is the caller's");
    check_int(d.items[0].length, 2, "closed read fills the list");
    check_int(epar_protocol_obj_map(&p, d.presets, "$.presets", map_rows, &d, names), EPAR_OK, "map read");
    check_int(d.nitems, 2, "ignorable member skipped");
    check_true(!strcmp(names[0], "b") && !strcmp(names[1], "a"), "names in file order");
    check_int(d.items[0].length, 8, "first member");
    check_rel(d.items[0].value, 0.5, 0, "first member's double");
    check_int(d.items[1].length, 4, "second member");
    check_int(epar_protocol_obj_map(&p, NULL, "$.presets", map_rows, &d, names), EPAR_OK, "absent map");
    check_int(d.nitems, 0, "absent map: no elements");
    json_decref(root);
    struct { const char *text, *path; } bad[] = {
        {"{\"presets\":{\"a\":{\"length\":1}}}", "$.presets.a.length"},
        {"{\"presets\":{\"a\":3}}", "$.presets.a: expected an object"},
        {"{\"presets\":[1]}", "$.presets: expected an object"},
        {"{\"presets\":{\"a\":{\"length\":4},\"b\":{\"length\":4},\"c\":{\"length\":4},\"d\":{}}}",
         "$.presets: expected an object of at most 3 members"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        root = json_loads(bad[k].text, 0, NULL);
        check_int(epar_protocol_obj_map(&p, json_object_get(root, "presets"), "$.presets", map_rows, &d, names),
                  EPAR_EPROTOCOL, "bad map %zu rejected", k);
        check_true(strstr(epar_err_message(), bad[k].path) != NULL, "bad map names '%s': %s", bad[k].path,
                   epar_err_message());
        json_decref(root);
    }
    struct { const char *text, *path; } unk[] = {
        {"{\"items\":[{\"length\":2},{\"length\":2,\"lenght\":3}]}", "$.items[1].lenght: unknown key"},
        {"{\"one\":{\"length\":2,\"x\":1}}", "$.one.x: unknown key"},
        {"{\"items\":[{\"value\":1}]}", "$.items[0]: missing key 'length'"},
    };
    for (size_t k = 0; k < sizeof unk / sizeof unk[0]; k++) {
        root = json_loads(unk[k].text, 0, NULL);
        check_int(epar_protocol_obj_fields(&p, root, "$", map_top_rows, &d), EPAR_EPROTOCOL,
                  "closed read %zu rejected", k);
        check_true(strstr(epar_err_message(), unk[k].path) != NULL, "closed read names '%s': %s", unk[k].path,
                   epar_err_message());
        json_decref(root);
    }
    root = json_loads("{\"items\":[{\"length\":2,\"_c\":0}],\"one\":{\"length\":2,\"comment\":\"y\"}}", 0, NULL);
    check_int(epar_protocol_obj_fields(&p, root, "$", map_top_rows, &d), EPAR_OK,
              "closed read: ignorable keys pass");
    json_decref(root);
}
