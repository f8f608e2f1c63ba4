#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "err.h"
#include "outdir.h"

#define MAX_ACTIVE 16
static struct epar_out *volatile active_outs[MAX_ACTIVE];
static int committing;  /* > 0 while a commit moves files into place (atomic builtins) */
static int interrupted; /* set by epar_out_abort_all: no commit may start after it */

static void track(struct epar_out *o, int on)
{
    for (int i = 0; i < MAX_ACTIVE; i++) {
        if (on && !active_outs[i]) { active_outs[i] = o; return; }
        if (!on && active_outs[i] == o) { active_outs[i] = NULL; return; }
    }
}

static int mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) { errno = ENAMETOOLONG; return -1; }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
    struct stat st;
    if (stat(buf, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) { errno = ENOTDIR; return -1; }
    return 0;
}

int epar_out_begin(struct epar_out *o, const char *root, const char *section)
{
    memset(o, 0, sizeof *o);
    if (!root || !*root) return epar_err_set(EPAR_EIO, "empty output folder ''");
    snprintf(o->root, sizeof o->root, "%s", root);
    snprintf(o->section, sizeof o->section, "%s", section);
    if (mkdir_p(root) != 0) {
        epar_err_set(EPAR_EIO, "cannot create output folder '%s': %s", root, strerror(errno));
        epar_err_hint("pass a writable folder with --out DIR");
        return EPAR_EIO;
    }
    if (snprintf(o->final_dir, sizeof o->final_dir, "%s/%s", root, section) >= (int)sizeof o->final_dir ||
        snprintf(o->stage_dir, sizeof o->stage_dir, "%s/%s.tmp-XXXXXX", root, section) >= (int)sizeof o->stage_dir)
        return epar_err_set(EPAR_EIO, "output path too long '%s'", root);
    if (!mkdtemp(o->stage_dir)) {
        epar_err_set(EPAR_EIO, "cannot write in output folder '%s': %s", root, strerror(errno));
        epar_err_hint("pass a writable folder with --out DIR");
        return EPAR_EIO;
    }
    o->active = 1;
    track(o, 1);
    return EPAR_OK;
}

const char *epar_out_path(struct epar_out *o, const char *name)
{
    if (snprintf(o->path, sizeof o->path, "%s/%s", o->stage_dir, name) >= (int)sizeof o->path)
        o->path[0] = '\0'; /* an empty path makes the following open fail with a clear error */
    return o->path;
}

static int commit_files(struct epar_out *o);
static void remove_dir(const char *dir);

/* Moving the files into place is not interruptible: SIGINT/SIGTERM/SIGHUP are blocked in this thread
 * and a handler running in another thread waits (epar_out_abort_all), so an interrupt never leaves a
 * half-moved folder. A pending signal is delivered when the mask is restored. */
int epar_out_commit(struct epar_out *o)
{
    if (!o->active) return epar_err_set(EPAR_EIO, "output folder '%s' is not open", o->final_dir);
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    __atomic_add_fetch(&committing, 1, __ATOMIC_SEQ_CST);
    int st = __atomic_load_n(&interrupted, __ATOMIC_SEQ_CST)
                 ? epar_err_set(EPAR_EINTR, "interrupted before '%s' was written", o->final_dir)
                 : commit_files(o);
    __atomic_sub_fetch(&committing, 1, __ATOMIC_SEQ_CST);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return st;
}

/* The staged folder replaces <root>/<section>/ as a whole (stale files of an earlier run do not survive):
 * renameat2(RENAME_EXCHANGE) swaps the two folders atomically, and the staging path, which then holds the
 * old folder, is removed. Where the file system cannot exchange, the old folder is first renamed aside
 * (<section>.old-XXXXXX) and put back if the new one cannot be moved in. */
void epar_out_keep(struct epar_out *o, const char *name)
{
    snprintf(o->keep, sizeof o->keep, "%s", name ? name : "");
}

/* move <from>/<keep> to <to>/<keep> when there is one to move and nothing in the way; 1 when moved */
static int move_kept(const struct epar_out *o, const char *from, const char *to)
{
    if (!o->keep[0]) return 0;
    char a[PATH_MAX + 80], b[PATH_MAX + 80];
    snprintf(a, sizeof a, "%s/%s", from, o->keep);
    snprintf(b, sizeof b, "%s/%s", to, o->keep);
    struct stat st;
    if (lstat(a, &st) != 0 || !S_ISDIR(st.st_mode) || lstat(b, &st) == 0) return 0;
    return rename(a, b) == 0;
}

static int commit_files(struct epar_out *o)
{
    mode_t um = umask(0);
    umask(um);
    chmod(o->stage_dir, 0777 & ~um); /* mkdtemp made it 0700: the final folder gets the usual mode */
    struct stat st;
    if (lstat(o->final_dir, &st) != 0) {
        int e = errno;
        if (e != ENOENT) {
            epar_out_abort(o);
            return epar_err_set(EPAR_EIO, "cannot replace '%s': %s", o->final_dir, strerror(e));
        }
        if (rename(o->stage_dir, o->final_dir) != 0) {
            e = errno;
            epar_out_abort(o);
            return epar_err_set(EPAR_EIO, "cannot move '%s' into place: %s", o->final_dir, strerror(e));
        }
        o->active = 0;
        track(o, 0);
        return EPAR_OK;
    }
    if (!S_ISDIR(st.st_mode)) {
        epar_out_abort(o);
        return epar_err_set(EPAR_EIO, "cannot create '%s': %s", o->final_dir, strerror(ENOTDIR));
    }
    int kept = move_kept(o, o->final_dir, o->stage_dir); /* put back below if the new folder cannot go in */
    if (renameat2(AT_FDCWD, o->stage_dir, AT_FDCWD, o->final_dir, RENAME_EXCHANGE) == 0) {
        epar_out_abort(o); /* the staging path now holds the old folder */
        return EPAR_OK;
    }
    char old[PATH_MAX];
    if (snprintf(old, sizeof old, "%s.old-XXXXXX", o->final_dir) >= (int)sizeof old || !mkdtemp(old)) {
        int e = errno;
        if (kept) move_kept(o, o->stage_dir, o->final_dir);
        epar_out_abort(o);
        return epar_err_set(EPAR_EIO, "cannot replace '%s': %s", o->final_dir, strerror(e));
    }
    if (rename(o->final_dir, old) != 0) { /* onto the empty folder mkdtemp made */
        int e = errno;
        rmdir(old);
        if (kept) move_kept(o, o->stage_dir, o->final_dir);
        epar_out_abort(o);
        return epar_err_set(EPAR_EIO, "cannot replace '%s': %s", o->final_dir, strerror(e));
    }
    if (rename(o->stage_dir, o->final_dir) != 0) {
        int e = errno;
        if (rename(old, o->final_dir) != 0) remove_dir(old);
        else if (kept) move_kept(o, o->stage_dir, o->final_dir);
        epar_out_abort(o);
        return epar_err_set(EPAR_EIO, "cannot move '%s' into place: %s", o->final_dir, strerror(e));
    }
    o->active = 0;
    track(o, 0);
    remove_dir(old);
    return EPAR_OK;
}

/* Remove every entry of the folder open as fd, sub-folders too (at most 8 deep). */
static void remove_entries(int fd, int depth)
{
    char buf[1024];
    ssize_t n;
    while ((n = getdents64(fd, buf, sizeof buf)) > 0)
        for (ssize_t off = 0; off < n;) {
            struct dirent64 *de = (struct dirent64 *)(buf + off);
            off += de->d_reclen;
            const char *nm = de->d_name;
            if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2]))) continue;
            if (unlinkat(fd, nm, 0) == 0 || (errno != EISDIR && errno != EPERM) || depth >= 8) continue;
            int sub = openat(fd, nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                remove_entries(sub, depth + 1);
                close(sub);
            }
            unlinkat(fd, nm, AT_REMOVEDIR);
        }
}

/* Remove `dir` and everything in it. Async-signal-safe (open/getdents64/unlinkat/rmdir, no malloc,
 * no stdio), so the signal handler can call it. Files created meanwhile by another thread or a
 * gnuplot child are caught by the retries; once rmdir succeeds nothing can be created there. */
static void remove_dir(const char *dir)
{
    for (int attempt = 0; attempt < 50; attempt++) {
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return;
        remove_entries(fd, 0);
        close(fd);
        if (rmdir(dir) == 0 || errno == ENOENT) return;
    }
}

void epar_out_abort(struct epar_out *o)
{
    if (!o->active) return;
    o->active = 0;
    track(o, 0);
    remove_dir(o->stage_dir);
}

void epar_out_abort_all(void)
{
    /* a commit in progress (signals blocked in its thread) is let finish: its output is complete */
    struct timespec ms = {0, 1000000};
    __atomic_store_n(&interrupted, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; __atomic_load_n(&committing, __ATOMIC_SEQ_CST) && i < 5000; i++) nanosleep(&ms, NULL);
    for (int i = 0; i < MAX_ACTIVE; i++) {
        struct epar_out *o = active_outs[i];
        if (o && o->active) {
            o->active = 0;
            remove_dir(o->stage_dir);
        }
    }
}

/* ---- the output root, before any work ---- */

#define MAX_PREPARED 32
static char prepared[MAX_PREPARED][PATH_MAX]; /* folders epar_out_prepare created, outermost first */
static volatile int n_prepared;

void epar_out_release(void)
{
    for (int i = n_prepared - 1; i >= 0; i--) rmdir(prepared[i]);   /* only empty ones go */
    n_prepared = 0;
}

/* the first prefix of path (up to a '/') that exists and is not a folder, into out; 0 when none */
static int blocking_file(const char *path, char *out, size_t n)
{
    snprintf(out, n, "%s", path);
    for (char *p = out + 1;; p++) {
        char c = *p;
        if (c != '/' && c != '\0') continue;
        *p = '\0';
        struct stat st;
        if (stat(out, &st) == 0 && !S_ISDIR(st.st_mode)) return 1;
        if (!c) return 0;
        *p = c;
    }
}

int epar_out_prepare(const char *root)
{
    if (!root || !*root) return epar_err_set(EPAR_EINVAL, "invalid value for --out: '' (expected a folder)");
    char buf[PATH_MAX], why[PATH_MAX + 64];
    if (strlen(root) + 256 >= sizeof buf) return epar_err_set(EPAR_EIO, "output folder path too long '%.60s...'", root);
    snprintf(buf, sizeof buf, "%s", root);
    int first = n_prepared, e = 0;
    for (char *p = buf + 1;; p++) {
        char c = *p;
        if (c != '/' && c != '\0') continue;
        if (p[-1] != '/') {   /* "a//b" and "a/": no empty component */
            *p = '\0';
            if (mkdir(buf, 0777) == 0) {
                if (n_prepared < MAX_PREPARED) {
                    snprintf(prepared[n_prepared], PATH_MAX, "%s", buf);
                    n_prepared = n_prepared + 1;
                }
            } else if (errno != EEXIST) {
                e = errno;
            } else {
                struct stat st;
                if (stat(buf, &st) != 0) e = errno;
                else if (!S_ISDIR(st.st_mode)) e = ENOTDIR;
            }
            *p = c;
        }
        if (e || !c) break;
    }
    if (!e) {   /* a probe: permissions, a read-only file system, root's special file systems */
        char probe[PATH_MAX + 32];
        snprintf(probe, sizeof probe, "%s/.epar-probe-XXXXXX", root);
        if (mkdtemp(probe)) rmdir(probe);
        else e = errno;
        if (e) {
            for (int i = n_prepared - 1; i >= first; i--) rmdir(prepared[i]);
            n_prepared = first;
            epar_err_set(EPAR_EIO, "cannot write in output folder '%s': %s", root, strerror(e));
            epar_err_hint("pass a writable folder with --out DIR");
            return EPAR_EIO;
        }
        return EPAR_OK;
    }
    for (int i = n_prepared - 1; i >= first; i--) rmdir(prepared[i]);
    n_prepared = first;
    if (e == ENOTDIR && blocking_file(root, why, sizeof why - 32)) {
        if (!strcmp(why, root)) epar_err_set(EPAR_EIO, "cannot use output folder '%s': it is not a folder", root);
        else epar_err_set(EPAR_EIO, "cannot use output folder '%s': '%s' is not a folder", root, why);
    }
    else epar_err_set(EPAR_EIO, "cannot create output folder '%s': %s", root, strerror(e));
    epar_err_hint("pass a writable folder with --out DIR");
    return EPAR_EIO;
}
