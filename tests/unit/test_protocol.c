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
    EPAR_FIELD_RANGE_(RI, "length", EPAR_FIELD_INT, length, 2, 65536, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_(RI, "value", EPAR_FIELD_DOUBLE, value, 0),
    EPAR_FIELD_(RI, "defined", EPAR_FIELD_BOOL, defined, 0),
    EPAR_FIELD_(RI, "sequences", EPAR_FIELD_LONG, sequences, 0),
    EPAR_FIELD_END_};
#undef RI
#define R struct rec
static const struct epar_field rec_rows[] = {
    EPAR_FIELD_(R, "name", EPAR_FIELD_STRING, name, EPAR_FIELD_REQUIRED),
    EPAR_FIELD_(R, "big", EPAR_FIELD_LONG, big, 0),
    EPAR_FIELD_(R, "resumed", EPAR_FIELD_LONG, resumed, EPAR_FIELD_NULLNEG),
    EPAR_FIELD_(R, "x", EPAR_FIELD_DOUBLE, x, 0),
    EPAR_FIELD_(R, "nan_opt", EPAR_FIELD_DOUBLE, nan_opt, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_(R, "absent", EPAR_FIELD_INT, absent, EPAR_FIELD_OPTIONAL),
    EPAR_FIELD_LIST_(R, "ints", EPAR_FIELD_ILIST, ints, ni, 4, 0),
    EPAR_FIELD_LIST_(R, "longs", EPAR_FIELD_LLIST, longs, nl, 4, 0),
    EPAR_FIELD_LIST_(R, "strs", EPAR_FIELD_SLIST, strs, ns, 4, EPAR_FIELD_EMPTY_OK),
    EPAR_FIELD_LIST_(R, "d", EPAR_FIELD_DLIST, d, nd, 4, 0),
    EPAR_FIELD_OLIST_(R, "items", items, nitems, 3, item_rows, 0),
    EPAR_FIELD_OBJ_(R, "one", one, item_rows, 0),
    EPAR_FIELD_END_};
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
        EPAR_FIELD_LIST_(struct alloc_rec, "v", EPAR_FIELD_LLIST, v, n, 100, EPAR_FIELD_ALLOC),
        EPAR_FIELD_OBJ_(struct alloc_rec, "one", one, item_rows, EPAR_FIELD_STRICT), EPAR_FIELD_END_};
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

/* ---- added for train/compare ---- */
/* saved records: tables appended and made saved (every row required and read, sanity ranges), read from text in
 * memory (null strings), written as a file with extra keys, compared with a saved text */
struct saved {
    int layers;
    double alpha;
    const char *text;
    struct { int k; } sub;
};
#define SV struct saved
static const struct epar_field saved_a[] = {
    EPAR_FIELD_INT_(SV, "layers", layers, 1, 4, "a setting with a protocol range"),
    {"alpha", EPAR_FIELD_DOUBLE, offsetof(SV, alpha), 0, 0, 1, "write-only in the protocol", 0, 0, 0, 0, 0, NULL, 0},
    EPAR_FIELD_END_};
static const struct epar_field saved_b[] = {EPAR_FIELD_STR_(SV, "text", text, "a string"), EPAR_FIELD_END_};
static const struct epar_field saved_sub[] = {EPAR_FIELD_(SV, "k", EPAR_FIELD_INT, sub.k, 0), EPAR_FIELD_END_};

static void test_saved(void)
{
    struct epar_field t[8], sub[2];
    int n = epar_fields_append(t, 0, 8, saved_a);
    check_int(n, 2, "append: two rows");
    n = epar_fields_append(t, n, 8, saved_b);
    check_int(n, 3, "append: three rows");
    check_int(epar_fields_append(t, n, 5, saved_a), -1, "append: no room");
    check_true(t[3].key == NULL, "append: still ended");
    epar_fields_append(sub, 0, 2, saved_sub);
    t[n++] = (struct epar_field)EPAR_FIELD_OBJ_(SV, "o", layers, sub, 0);
    t[n] = (struct epar_field)EPAR_FIELD_END_;
    epar_fields_saved(t);
    epar_fields_saved(sub);
    struct saved w = {9, 0.5, NULL, {3}}, r = {0, 0, "x", {0}};
    json_t *j = epar_fields_json(t, &w, NULL);
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    check_true(s && !strcmp(s, "{\"layers\":9,\"alpha\":0.5,\"text\":null,\"o\":{\"k\":3}}"), "saved written: %s",
               s ? s : "(null)");
    check_int(epar_fields_loadb(s, strlen(s), "checkpoint config", "c.bin", t, &r, NULL), EPAR_OK, "loadb: %s",
              epar_err_message());
    check_true(r.layers == 9 && r.alpha == 0.5 && r.text == NULL && r.sub.k == 3,
               "loadb: out-of-range setting, write-only row, null string, nested object read back");
    const char *bad[][2] = {{"{\"layers\":1,\"text\":null,\"o\":{\"k\":1}}", "$: missing key 'alpha'"},
                            {"{\"layers\":1,\"alpha\":1,\"text\":null,\"o\":{}}", "$.o: missing key 'k'"},
                            {"{\"layers\":1.5,\"alpha\":1,\"text\":null,\"o\":{\"k\":1}}", "$.layers"},
                            {"{\"layers\":", "cannot read checkpoint config 'c.bin'"}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        check_int(epar_fields_loadb(bad[k][0], strlen(bad[k][0]), "checkpoint config", "c.bin", t, &r, NULL), EPAR_EIO,
                  "loadb: bad text %zu", k);
        check_true(strstr(epar_err_message(), bad[k][1]) != NULL, "loadb: bad text %zu names '%s': %s", k, bad[k][1],
                   epar_err_message());
    }
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
    check_int(epar_fields_save(path, t, &w, json_pack("{s:i, s:s}", "layers", 2, "extra", "e"), EPAR_SAVE_RUN), EPAR_OK,
              "save");
    json_t *back = json_load_file(path, 0, NULL);
    char *b = json_dumps(back, JSON_COMPACT | JSON_PRESERVE_ORDER);
    check_true(b && !strcmp(b, "{\"layers\":2,\"alpha\":0.5,\"text\":null,\"o\":{\"k\":3},\"extra\":\"e\"}"),
               "save: rows then extra's keys, a key of both in its place with extra's value: %s", b ? b : "(null)");
    snprintf(path, sizeof path, "%s/no/such/dir.json", tmpdir);
    check_int(epar_fields_save(path, NULL, NULL, NULL, EPAR_SAVE_RUN), EPAR_EIO, "save: unwritable path");
    free(b);
    json_decref(back);
    free(s);
    json_decref(j);
}
#undef SV
/* ---- end of added for train/compare ---- */
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
    test_records();
    test_saved();
    test_map_closed();
    cleanup();
    return check_summary("test_protocol");
}

/* ---- added for report/sensitivity ---- */
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
    EPAR_FIELD_(MD, "presets", EPAR_FIELD_JSON, presets, 0),
    EPAR_FIELD_OLIST_(MD, "items", items, nitems, 3, item_rows, EPAR_FIELD_EMPTY_OK | EPAR_FIELD_STRICT),
    EPAR_FIELD_OBJ_(MD, "one", one, item_rows, EPAR_FIELD_STRICT),
    EPAR_FIELD_END_};
static const struct epar_field map_rows[] = {EPAR_FIELD_OLIST_(MD, "", items, nitems, 3, item_rows, 0), EPAR_FIELD_END_};
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
