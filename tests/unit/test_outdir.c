/* outdir: unit tests of lib/outdir (worked values, round trips, error paths). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

static int exists(const char *dir, const char *name)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static void make_dir(const char *dir, const char *name)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (mkdir(p, 0755) != 0) fprintf(stderr, "cannot create %s\n", p);
}

static void check_str(const char *got, const char *want, const char *desc)
{
    check_true(strcmp(got, want) == 0, "%s: got '%s', want '%s'", desc, got, want);
}

/* a pid that ran and is gone */
static long dead_pid(void)
{
    pid_t p = fork();
    if (p == 0) _exit(0);
    waitpid(p, NULL, 0);
    return (long)p;
}

/* the checked writer: the reason of the first failed write, no file left; and the ownership of staging folders */
static void test_files_and_owners(const char *base)
{
    char root[400], path[600];
    snprintf(root, sizeof root, "%s/own", base);
    if (mkdir(root, 0755) != 0) return;
    struct epar_out_file w;
    snprintf(path, sizeof path, "%s/t.txt", root);
    FILE *f = epar_out_fopen(&w, path);
    check_true(f != NULL, "open a checked file");
    fputs("hello\n", f);
    check_true(access(path, F_OK) != 0, "nothing at the path before the close");
    check_int(epar_out_fclose(&w), EPAR_OK, "close a checked file");
    check_true(access(path, F_OK) == 0 && access(w.tmp, F_OK) != 0, "renamed into place, no temp file left");
    /* a write that fails (the file size limit: EFBIG, as a full disk gives ENOSPC) */
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 64;
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &lim);
    snprintf(path, sizeof path, "%s/big.txt", root);
    f = epar_out_fopen(&w, path);
    for (int i = 0; f && i < 1000; i++) fprintf(f, "line %d\n", i);
    check_int(epar_out_fclose(&w), EPAR_EIO, "a failed write is an error at the close");
    setrlimit(RLIMIT_FSIZE, &old);
    char want[700];
    snprintf(want, sizeof want, "cannot write '%s': File too large", path);
    check_str(epar_err_message(), want, "the error names the file and the reason of the failed write");
    check_true(access(path, F_OK) != 0 && access(w.tmp, F_OK) != 0, "no file and no temp file after a failed write");
    check_int(epar_out_write_error("x.csv", ENOSPC), EPAR_EIO, "a full disk");
    check_true(strstr(epar_err_hint_text(), "free some space") != NULL, "has the full-disk hint");
    f = epar_out_fopen(&w, "/dev/null");
    check_true(f == NULL && strstr(epar_err_message(), "not a regular file"), "a device is refused, never renamed over");

    /* staging folders: the name says host and pid; what a killed run left is removed, nothing else */
    struct epar_out o;
    check_int(epar_out_begin(&o, root, "sec"), EPAR_OK, "begin");
    const char *tag = strstr(o.stage_dir, "sec.tmp-") + 8, *last = strrchr(tag, '-');
    char host[128], mine[256];
    snprintf(mine, sizeof mine, "%s", strrchr(o.stage_dir, '/') + 1);
    int hl = (int)(strrchr(tag, '-') - tag);
    while (hl > 0 && tag[hl - 1] != '-') hl--;
    snprintf(host, sizeof host, "%.*s", hl - 1, tag);
    check_true(last && strlen(last) == 7 && exists(o.stage_dir, ".epar-lock"), "staging folder <sec>.tmp-<host>-<pid>-XXXXXX, with its lock");
    char stale[300], other[300], older[300], nested[600];
    snprintf(stale, sizeof stale, "sec.tmp-%s-%ld-AbC123", host, dead_pid());
    snprintf(other, sizeof other, "sec.tmp-another.host-%ld-AbC123", dead_pid());
    snprintf(older, sizeof older, "sec.tmp-Zx9Qw1");
    make_dir(root, stale);
    make_dir(root, other);
    make_dir(root, older);
    check_int(epar_out_sweep(root, 0), 1, "sweep removes one folder");
    check_true(!exists(root, stale), "a folder of this host whose pid is gone (no lock file) is removed");
    check_true(exists(root, other), "a folder of another host is left alone (its owner cannot be told)");
    check_true(exists(root, older), "a folder of an older epar (no owner in its name) is left alone");
    check_true(exists(root, mine), "this process's own folder is left alone");
    /* a folder whose lock a running process holds stays; once that process is killed it goes */
    int pfd[2];
    if (pipe(pfd) != 0) return;
    pid_t child = fork();
    if (child == 0) {
        struct epar_out c;
        if (epar_out_begin(&c, root, "live") != EPAR_OK) _exit(1);
        if (write(pfd[1], "x", 1) != 1) _exit(1);
        for (;;) pause(); /* until killed */
    }
    char byte;
    check_true(read(pfd[0], &byte, 1) == 1, "a child made its staging folder");
    check_int(epar_out_sweep(root, 0), 0, "sweep while the child runs");
    struct epar_out o2;
    check_int(epar_out_begin(&o2, root, "live"), EPAR_OK, "a second begin of the same section (it sweeps its siblings)");
    epar_out_abort(&o2);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "test $(ls -d %s/live.tmp-* | wc -l) = 1", root);
    check_int(system(cmd), 0, "the running child's folder is still there");
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    check_int(epar_out_sweep(root, 0), 1, "sweep after the child was killed (kill -9: no cleanup of its own)");
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -d %s/live.tmp-* 2>/dev/null)\"", root);
    check_int(system(cmd), 0, "its folder (lock free) is removed");
    /* a store's tree: only down to the depth asked */
    snprintf(nested, sizeof nested, "%s/cells/t/m", root);
    snprintf(cmd, sizeof cmd, "mkdir -p %s/seed-1.tmp-%s-%ld-AbC123", nested, host, dead_pid());
    check_int(system(cmd), 0, "make a nested stale folder");
    check_int(epar_out_sweep(root, 2), 0, "not found above its depth");
    check_int(epar_out_sweep(root, 3), 1, "found at cells/<task>/<mechanism>/ (depth 3)");
    /* temp files of checked writes: one a process killed before its rename left goes; this process's own open one,
     * another host's and a name with no owner stay */
    char fdir[500], fpath[600];
    snprintf(fdir, sizeof fdir, "%s/cache", root);
    mkdir(fdir, 0755);
    snprintf(fpath, sizeof fpath, "%s/kjv.txt", fdir);
    pid_t writer = fork();
    if (writer == 0) {
        struct epar_out_file cw;
        FILE *cf = epar_out_fopen(&cw, fpath);
        if (cf) fputs("half a corpus", cf), fflush(cf);
        kill(getpid(), SIGKILL);   /* before epar_out_fclose: no rename, no cleanup */
        _exit(1);
    }
    waitpid(writer, NULL, 0);
    snprintf(cmd, sizeof cmd, "test $(ls %s/kjv.txt.tmp.%s.%ld | wc -l) = 1", fdir, host, (long)writer);
    check_int(system(cmd), 0, "a killed writer leaves <file>.tmp.<host>.<pid>");
    struct epar_out_file ow;
    char opath[600], foreign[300], bare[300];
    snprintf(opath, sizeof opath, "%s/open.csv", fdir);
    FILE *of = epar_out_fopen(&ow, opath);
    snprintf(foreign, sizeof foreign, "x.csv.tmp.another.host.%ld", (long)writer);
    snprintf(bare, sizeof bare, "y.csv.tmp.%ld", (long)writer);
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "touch %s/%s", fdir, k ? bare : foreign);
        check_int(system(cmd), 0, "make a temp file that is not this host's");
    }
    check_int(epar_out_sweep(fdir, 0), 0, "a sweep of staging folders leaves temp files alone");
    check_int(epar_out_sweep_files(fdir), 1, "a sweep of temp files removes one");
    snprintf(cmd, sizeof cmd, "test -z \"$(ls %s/kjv.txt.tmp.* 2>/dev/null)\"", fdir);
    check_int(system(cmd), 0, "the killed writer's temp file is gone");
    check_true(of && access(ow.tmp, F_OK) == 0 && exists(fdir, foreign) && exists(fdir, bare),
               "this process's open temp file, another host's and an ownerless one stay");
    if (of) check_int(epar_out_fclose(&ow), EPAR_OK, "the open file still closes into place");
    /* the error of an aborted folder names the final folder, not the staging one */
    epar_err_set(EPAR_EIO, "cannot write '%s': No space left on device", epar_out_path(&o, "a.csv"));
    epar_out_abort(&o);
    snprintf(want, sizeof want, "cannot write '%s/sec/a.csv': No space left on device", root);
    check_str(epar_err_message(), want, "an abort's error names the file where it was to go");
    check_true(!exists(root, mine), "and its staging folder is gone");
    close(pfd[0]);
    close(pfd[1]);
}

/* mkdir -p (every missing parent, an existing folder is fine, a file on the way is ENOTDIR) and the temporary
 * folders of run-all --check (made under TMPDIR, removed with their contents) */
static void test_mkdir_and_temp(const char *base)
{
    char d[600], f[4200], t[4096];
    snprintf(d, sizeof d, "%s/mk/a/b/c", base);
    check_int(epar_out_mkdir_p(d), 0, "mkdir -p of three missing levels");
    struct stat sb;
    check_true(stat(d, &sb) == 0 && S_ISDIR(sb.st_mode), "the deepest folder exists");
    check_int(epar_out_mkdir_p(d), 0, "mkdir -p of an existing folder");
    snprintf(f, sizeof f, "%s/mk/file", base);
    FILE *g = fopen(f, "w");
    if (g) fclose(g);
    errno = 0;
    check_int(epar_out_mkdir_p(f), -1, "mkdir -p of a regular file fails");
    check_int(errno, ENOTDIR, "  with ENOTDIR");
    snprintf(f, sizeof f, "%s/mk/file/sub", base);
    check_int(epar_out_mkdir_p(f), -1, "mkdir -p below a regular file fails");
    char *old = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    setenv("TMPDIR", base, 1);
    check_int(epar_out_temp_dir(t, sizeof t, "golden"), EPAR_OK, "a temporary folder");
    check_true(!strncmp(t, base, strlen(base)) && strstr(t, "/epar-golden.") != NULL, "under TMPDIR: '%s'", t);
    snprintf(f, sizeof f, "%s/golden/report", t);
    check_int(epar_out_mkdir_p(f), 0, "a tree inside it");
    epar_out_temp_remove(t);
    check_true(access(t, F_OK) != 0, "removed with its contents");
    setenv("TMPDIR", "/nonexistent-epar-dir", 1);
    check_int(epar_out_temp_dir(t, sizeof t, "golden"), EPAR_EIO, "an unusable TMPDIR is EPAR_EIO");
    check_true(strstr(epar_err_message(), "/nonexistent-epar-dir/epar-golden.") != NULL, "naming the folder");
    if (old) setenv("TMPDIR", old, 1);
    else unsetenv("TMPDIR");
    free(old);
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
    test_files_and_owners(tmpdir);
    test_mkdir_and_temp(tmpdir);
    cleanup();
    return check_summary("test_outdir");
}
