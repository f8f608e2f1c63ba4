/* outdir: unit tests of lib/outdir (worked values, round trips, error paths). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/outdir.h"
#include "lib/err.h"
#include "check.h"

static char tmpdir[] = "/tmp/epar-test-outdir.XXXXXX";

static void cleanup(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) return 2;
    umask(022);
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
    /* a second run replaces the folder as a whole: a file it does not write is gone */
    check_int(epar_out_begin(&o, root, "sec"), EPAR_OK, "out begin again");
    f = fopen(epar_out_path(&o, "c.txt"), "w");
    fclose(f);
    check_int(epar_out_commit(&o), EPAR_OK, "commit again");
    char fc[300];
    snprintf(fc, sizeof fc, "%s/sec/c.txt", root);
    check_true(access(fc, F_OK) == 0, "new file in place after the second commit");
    check_true(access(fin, F_OK) != 0, "the first run's file is gone (replaced, not merged)");
    struct stat sb;
    snprintf(fc, sizeof fc, "%s/sec", root);
    check_int(stat(fc, &sb) == 0 ? (int)(sb.st_mode & 0777) : -1, 0755, "final folder mode 0777 & ~umask 022, not mkdtemp's 0700");
    check_int(epar_out_begin(&o, root, "sec2"), EPAR_OK, "out begin 2");
    f = fopen(epar_out_path(&o, "b.txt"), "w");
    fclose(f);
    epar_out_abort(&o);
    char stage[300];
    snprintf(stage, sizeof stage, "%s/sec2", root);
    check_true(access(stage, F_OK) != 0, "abort leaves no folder");
    {   /* a kept sub-folder (the benchmark's cells/) survives the replacement; the rest is replaced */
        char d[600], k[700];
        snprintf(d, sizeof d, "%s/sec/cells", root);
        check_int(mkdir(d, 0755), 0, "make sec/cells");
        snprintf(k, sizeof k, "%s/one.json", d);
        FILE *g = fopen(k, "w");
        fputs("{}", g);
        fclose(g);
        check_int(epar_out_begin(&o, root, "sec"), EPAR_OK, "out begin, keeping cells");
        epar_out_keep(&o, "cells");
        g = fopen(epar_out_path(&o, "t.csv"), "w");
        fclose(g);
        check_int(epar_out_commit(&o), EPAR_OK, "commit keeping cells");
        check_true(access(k, F_OK) == 0, "cells/one.json carried over");
        snprintf(k, sizeof k, "%s/sec/c.txt", root);
        check_true(access(k, F_OK) != 0, "the old top-level file is gone");
        check_int(epar_out_begin(&o, root, "sec"), EPAR_OK, "out begin, not keeping");
        check_int(epar_out_commit(&o), EPAR_OK, "commit without keep");
        check_true(access(d, F_OK) != 0, "without keep, cells/ is replaced like everything else");
    }
    snprintf(fc, sizeof fc, "%s/sec/t.csv", root);
    check_int(epar_out_begin(&o, root, "sec"), EPAR_OK, "out begin for a file root");
    FILE *h = fopen(epar_out_path(&o, "t.csv"), "w");
    fclose(h);
    check_int(epar_out_commit(&o), EPAR_OK, "commit t.csv");
    check_int(epar_out_begin(&o, fc, "x"), EPAR_EIO, "output root that is a regular file -> EPAR_EIO");
    cleanup();
    return check_summary("test_outdir");
}
