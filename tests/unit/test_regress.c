/* regress: collecting pins from output files (keys, repeats, unpinned patterns, prefixes, one column), the
 * pins.csv round trip (hand-set tolerances survive an update), the tolerance rule and the error of a missing file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "lib/err.h"
#include "lib/regress.h"
#include "check.h"

static void put(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    fputs(text, f);
    fclose(f);
}

int main(void)
{
    char dir[] = "/tmp/epar-test-regress.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char p[512];
    snprintf(p, sizeof p, "%s/exp", dir);
    mkdir(p, 0777);
    put(dir, "exp/a.csv", "name,x,y,verdict,label\nalpha,1.5,nan,reproduced,free text\nalpha,2.5,3,stale,t\nbeta,0.25,4,,t\n");
    put(dir, "unpinned.txt", "# comment\nexp/a.csv,beta,y\n*,*,timing\n");
    put(dir, "files.txt", "# files\n  exp/a.csv  \n\n");

    char files[4][256];
    int n;
    snprintf(p, sizeof p, "%s/files.txt", dir);
    check_int(epar_regress_read_files(p, files, 4, &n), EPAR_OK, "files.txt read");
    check_true(n == 1 && !strcmp(files[0], "exp/a.csv"), "one file, blanks trimmed");
    struct epar_regress_unpinned u;
    snprintf(p, sizeof p, "%s/unpinned.txt", dir);
    check_int(epar_regress_read_unpinned(p, &u), EPAR_OK, "unpinned read");
    check_int(u.n, 2, "two patterns");
    check_true(epar_regress_is_unpinned(&u, "any", "row", "timing"), "'*' matches anything");

    struct epar_regress_set s = {0};
    check_int(epar_regress_collect(&s, dir, "exp/a.csv", NULL, &u, NULL, 1e-9, 1e-12), EPAR_OK, "collect");
    /* alpha: x, verdict (y is nan: not pinned; label is free text: not pinned); alpha#2: x, y, verdict; beta: x */
    check_int((long)s.n, 6, "numbers and verdicts, nan and free text left out, the unpinned cell left out");
    const struct epar_regress_pin *a2 = epar_regress_find(&s, "exp/a.csv|alpha#2|y");
    check_true(a2 && a2->v == 3, "a repeated first column is keyed #2");
    check_true(epar_regress_find(&s, "exp/a.csv|beta|y") == NULL, "unpinned cell not collected");
    const struct epar_regress_pin *v = epar_regress_find(&s, "exp/a.csv|alpha|verdict");
    check_true(v && v->s && !strcmp(v->s, "reproduced"), "verdict pinned as a string");

    struct epar_regress_set only = {0};
    check_int(epar_regress_collect(&only, dir, "exp/a.csv", "reference/", &u, "verdict", 1e-9, 1e-12), EPAR_OK,
              "collect one column under a prefix");
    check_int((long)only.n, 2, "two verdicts (the empty cell is not a verdict)");
    check_true(epar_regress_find(&only, "reference/exp/a.csv|alpha#2|verdict") != NULL, "prefixed key");

    /* tolerance: max(abs, rel |pinned|) */
    struct epar_regress_pin pin = {.v = 1000, .rel = 1e-9, .abs = 1e-12}, now = pin;
    now.v = 1000 + 0.9e-6;
    check_true(epar_regress_same(&pin, &now), "within rel 1e-9");
    now.v = 1000 + 1.1e-6;
    check_true(!epar_regress_same(&pin, &now), "beyond rel 1e-9");
    check_true(!epar_regress_same(&pin, NULL), "a missing number is not the same");

    /* round trip; a hand-set tolerance of an old pin survives */
    snprintf(p, sizeof p, "%s/pins.csv", dir);
    struct epar_regress_set old = {0};
    s.p[0].rel = 0.5;
    check_int(epar_regress_write_pins(p, &s, NULL), EPAR_OK, "write pins");
    check_int(epar_regress_read_pins(p, &old), EPAR_OK, "read pins");
    check_int((long)old.n, (long)s.n, "every pin back");
    s.p[0].rel = 1e-9;
    check_int(epar_regress_write_pins(p, &s, &old), EPAR_OK, "update keeping old tolerances");
    struct epar_regress_set back = {0};
    check_int(epar_regress_read_pins(p, &back), EPAR_OK, "read again");
    check_rel(back.p[0].rel, 0.5, 0, "hand-set tolerance kept");
    for (size_t i = 0; i < back.n; i++)
        check_true(epar_regress_same(&back.p[i], epar_regress_find(&s, back.p[i].key)), "pin %zu matches", i);

    char t[64];
    epar_regress_text(NULL, t, sizeof t);
    check_true(!strcmp(t, "(missing)"), "missing text");
    snprintf(p, sizeof p, "%s/none.csv", dir);
    struct epar_regress_set none = {0};
    check_int(epar_regress_read_pins(p, &none), EPAR_EIO, "no pins file");
    check_true(strstr(epar_err_message(), "no regression pins") != NULL, "message: %s", epar_err_message());

    epar_regress_free(&s);
    epar_regress_free(&only);
    epar_regress_free(&old);
    epar_regress_free(&back);
    epar_regress_free(&none);
    snprintf(p, sizeof p, "rm -rf '%s'", dir);
    if (system(p) != 0) check_true(0, "cleanup");
    return check_summary("test_regress");
}
