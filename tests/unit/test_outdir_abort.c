/* outdir under interruption: the signal-handler entry point epar_out_abort_all removes staged files, the
 * temp files of writes in progress (epar_out_fopen, under the CSVs too), nested folders, and blocks later
 * commits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/csvout.h"
#include "lib/err.h"
#include "lib/outdir.h"
#include "check.h"

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f) { fputs("x", f); fclose(f); }
}

int main(void)
{
    char tmpl[] = "/tmp/epar-abort.XXXXXX", root[300], p[600];
    const char *tmp = mkdtemp(tmpl);
    if (!tmp) return 1;
    snprintf(root, sizeof root, "%s/out", tmp);

    /* a staging folder with files, a csv temp file and a nested folder: abort_all removes all of it */
    struct epar_out a, b;
    check_int(epar_out_begin(&a, root, "one"), EPAR_OK, "begin one");
    check_int(epar_out_begin(&b, root, "two"), EPAR_OK, "begin two");
    touch(epar_out_path(&a, "t.csv"));
    touch(epar_out_path(&a, "t.csv.tmp.123"));
    snprintf(p, sizeof p, "%s", epar_out_path(&b, "sub"));
    mkdir(p, 0777);
    touch(epar_out_path(&b, "sub/inner.png"));
    touch(epar_out_path(&b, "u.gp"));
    char stage_a[4096], stage_b[4096];
    snprintf(stage_a, sizeof stage_a, "%s", a.stage_dir);
    snprintf(stage_b, sizeof stage_b, "%s", b.stage_dir);

    /* a committed section stays: abort_all only removes what is in progress */
    struct epar_out c;
    check_int(epar_out_begin(&c, root, "done"), EPAR_OK, "begin done");
    touch(epar_out_path(&c, "kept.csv"));
    check_int(epar_out_commit(&c), EPAR_OK, "commit done");

    /* a temporary folder of the process (run-all --check's): abort_all removes it, with what is inside */
    char tdir[4096], tf[4200];
    setenv("TMPDIR", tmp, 1);
    check_int(epar_out_temp_dir(tdir, sizeof tdir, "golden"), EPAR_OK, "make a temporary folder");
    check_true(!strncmp(tdir, tmp, strlen(tmp)) && strstr(tdir, "/epar-golden.") != NULL, "under TMPDIR, named epar-golden.*");
    snprintf(tf, sizeof tf, "%s/golden", tdir);
    mkdir(tf, 0777);
    snprintf(tf, sizeof tf, "%s/golden/x.csv", tdir);
    touch(tf);

    /* a file being written outside any staging folder (index.html, a checkpoint): its temp file goes too */
    struct epar_out_file w;
    char outside[600];
    snprintf(outside, sizeof outside, "%s/index.html", tmp);
    FILE *wf = epar_out_fopen(&w, outside);
    check_true(wf != NULL, "open a checked file outside a staging folder");
    if (wf) fputs("<html>", wf);
    if (wf) fflush(wf);
    check_true(access(w.tmp, F_OK) == 0, "its temp file exists while it is written");
    epar_out_abort_all();
    check_true(access(w.tmp, F_OK) != 0, "abort_all removed the temp file of the write in progress");
    check_true(access(outside, F_OK) != 0, "and nothing was published");
    epar_out_fdiscard(&w);
    check_true(access(tdir, F_OK) != 0, "abort_all removed the temporary folder and its contents");
    check_true(access(stage_a, F_OK) != 0, "staging folder one removed");
    check_true(access(stage_b, F_OK) != 0, "staging folder two (with a sub-folder) removed");
    snprintf(p, sizeof p, "%s/done/kept.csv", root);
    check_true(access(p, F_OK) == 0, "a committed folder is untouched");
    snprintf(p, sizeof p, "%s/one", root);
    check_true(access(p, F_OK) != 0, "no final folder for an aborted section");
    epar_out_abort(&a); /* safe after abort_all */

    /* after an interrupt no commit may start: the files stay staged for the handler to remove */
    struct epar_out d;
    check_int(epar_out_begin(&d, root, "late"), EPAR_OK, "begin after interrupt");
    touch(epar_out_path(&d, "x.csv"));
    check_int(epar_out_commit(&d), EPAR_EINTR, "commit after an interrupt fails with EPAR_EINTR");
    snprintf(p, sizeof p, "%s/late/x.csv", root);
    check_true(access(p, F_OK) != 0, "nothing moved into place after the interrupt");
    epar_out_abort(&d);

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) return 1;
    return check_summary("test_outdir_abort");
}
