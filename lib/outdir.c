#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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

int epar_out_mkdir_p(const char *path)
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

/* ---- staging folders and who owns them ---- */

#define LOCK_NAME ".epar-lock"

/* this host's name as it appears in staging folder names: letters, digits and dots, others as '_' */
static char host_tag[40];
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

static void host_init(void)
{
    char h[256] = "";
    if (gethostname(h, sizeof h - 1) != 0 || !h[0]) snprintf(h, sizeof h, "localhost");
    size_t n = 0;
    for (const char *p = h; *p && n < sizeof host_tag - 1; p++, n++) {
        char c = *p;
        host_tag[n] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ? c : '_';
    }
    host_tag[n] = '\0';
}

/* the lock file appears already locked: made under another name, locked, then renamed (a sweeper that finds
 * <stage>/.epar-lock unlocked knows its owner is gone). -1 when the file system has no flock: the pid in the
 * folder's name protects it then. */
static int make_lock(const char *stage)
{
    char nw[PATH_MAX + 32], fin[PATH_MAX + 32];
    snprintf(nw, sizeof nw, "%s/" LOCK_NAME ".new", stage);
    snprintf(fin, sizeof fin, "%s/" LOCK_NAME, stage);
    int fd = open(nw, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 || rename(nw, fin) != 0) {
        unlink(nw);
        close(fd);
        return -1;
    }
    return fd;
}

/* "<section>.tmp-<host>-<pid>-XXXXXX": 1 with the host and pid, 0 when name is not a staging folder of
 * this form (an older epar's "<section>.tmp-XXXXXX" is not: its owner cannot be told) */
static int parse_stage(const char *name, char *host, size_t nh, long *pid)
{
    const char *t = NULL;
    for (const char *p = name; (p = strstr(p, ".tmp-")); p++) t = p;
    if (!t) return 0;
    t += 5;
    size_t len = strlen(t);
    if (len < 10 || t[len - 7] != '-') return 0;
    for (size_t i = len - 6; i < len; i++)
        if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= '0' && t[i] <= '9'))) return 0;
    size_t e = len - 7, b = e;
    while (b > 0 && t[b - 1] >= '0' && t[b - 1] <= '9') b--;
    if (b == e || b < 2 || t[b - 1] != '-' || e - b > 9) return 0;
    *pid = 0;
    for (size_t i = b; i < e; i++) *pid = *pid * 10 + (t[i] - '0');
    if (b - 1 >= nh) return 0;
    memcpy(host, t, b - 1);
    host[b - 1] = '\0';
    return 1;
}

static void remove_dir(const char *dir);

/* Remove dir/name if it is the temp file of an epar_out_fopen of this host ("<path>.tmp.<host>.<pid>") whose process
 * is not running here (killed before its rename); 1 when removed */
static int sweep_file(const char *dir, const char *name)
{
    size_t len = strlen(name), b = len;
    while (b > 0 && name[b - 1] >= '0' && name[b - 1] <= '9') b--;
    if (b == len || len - b > 9) return 0;
    long pid = atol(name + b);
    char tail[96], path[PATH_MAX];
    pthread_once(&host_once, host_init);
    int tl = snprintf(tail, sizeof tail, ".tmp.%s.%ld", host_tag, pid);
    if (tl >= (int)sizeof tail || (size_t)tl >= len || strcmp(name + len - tl, tail) != 0) return 0;
    if (pid <= 0 || pid == (long)getpid() || !(kill((pid_t)pid, 0) != 0 && errno == ESRCH)) return 0;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return 0;
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode) && unlink(path) == 0;
}

/* Remove the staging folder dir/name if no running process owns it; 1 when removed. Only folders of this
 * host and not of this process; the flock on its lock file decides, or without one, whether its pid runs. */
static int sweep_one(const char *dir, const char *name)
{
    char host[64], path[PATH_MAX], lock[PATH_MAX + 32];
    long pid;
    pthread_once(&host_once, host_init);
    if (!parse_stage(name, host, sizeof host, &pid) || strcmp(host, host_tag) != 0 || pid == (long)getpid())
        return 0;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return 0;
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
    snprintf(lock, sizeof lock, "%s/" LOCK_NAME, path);
    int fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    int stale;
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) stale = 1;           /* its owner is gone */
    else if (fd >= 0 && (errno == EWOULDBLOCK || errno == EINTR)) stale = 0; /* held: a running process */
    else stale = pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;  /* no lock (file or flock): the pid */
    if (stale) remove_dir(path); /* with the lock held: no one else takes it */
    if (fd >= 0) close(fd);
    return stale;
}

/* the staging folders in dir whose names start with prefix ("" = any), and in its sub-folders down to depth */
static int sweep_at(const char *dir, const char *prefix, int depth)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t pl = strlen(prefix);
    int removed = 0;
    struct dirent *de;
    char sub[PATH_MAX];
    /* names first, then the work: removing while reading a folder may skip entries */
    char (*names)[256] = NULL;
    size_t n = 0, cap = 0;
    while ((de = readdir(d))) {
        const char *nm = de->d_name;
        if (nm[0] == '.' || strncmp(nm, prefix, pl) != 0) continue;
        int stage = strstr(nm, ".tmp-") != NULL;
        if (!stage && depth <= 0) continue;
        if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) continue;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 32;
            char (*nn)[256] = realloc(names, nc * sizeof *names);
            if (!nn) break;
            names = nn;
            cap = nc;
        }
        snprintf(names[n++], 256, "%s", nm);
    }
    closedir(d);
    for (size_t i = 0; i < n; i++) {
        if (strstr(names[i], ".tmp-")) removed += sweep_one(dir, names[i]);
        else if (snprintf(sub, sizeof sub, "%s/%s", dir, names[i]) < (int)sizeof sub) {
            struct stat st;
            if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) removed += sweep_at(sub, "", depth - 1);
        }
    }
    free(names);
    return removed;
}

int epar_out_sweep(const char *dir, int depth)
{
    return sweep_at(dir, "", depth);
}

int epar_out_sweep_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d)))   /* unlinking a file while reading its folder: at worst one is seen next time */
        if ((de->d_type == DT_REG || de->d_type == DT_UNKNOWN) && strstr(de->d_name, ".tmp."))
            removed += sweep_file(dir, de->d_name);
    closedir(d);
    return removed;
}

int epar_out_sweep_section(const char *root, const char *section)
{
    char prefix[80];
    snprintf(prefix, sizeof prefix, "%s.tmp-", section);
    return sweep_at(root, prefix, 0);
}

int epar_out_begin(struct epar_out *o, const char *root, const char *section)
{
    memset(o, 0, sizeof *o);
    o->lock_fd = -1;
    if (!root || !*root) return epar_err_set(EPAR_EIO, "empty output folder ''");
    snprintf(o->root, sizeof o->root, "%s", root);
    snprintf(o->section, sizeof o->section, "%s", section);
    if (epar_out_mkdir_p(root) != 0) {
        epar_err_set(EPAR_EIO, "cannot create output folder '%s': %s", root, strerror(errno));
        epar_err_hint("pass a writable folder with --out DIR");
        return EPAR_EIO;
    }
    pthread_once(&host_once, host_init);
    epar_out_sweep_section(root, section); /* what a killed run of this section left */
    if (snprintf(o->final_dir, sizeof o->final_dir, "%s/%s", root, section) >= (int)sizeof o->final_dir ||
        snprintf(o->stage_dir, sizeof o->stage_dir, "%s/%s.tmp-%s-%ld-XXXXXX", root, section, host_tag,
                 (long)getpid()) >= (int)sizeof o->stage_dir)
        return epar_err_set(EPAR_EIO, "output path too long '%s'", root);
    if (!mkdtemp(o->stage_dir)) {
        epar_err_set(EPAR_EIO, "cannot write in output folder '%s': %s", root, strerror(errno));
        epar_err_hint("pass a writable folder with --out DIR");
        return EPAR_EIO;
    }
    o->lock_fd = make_lock(o->stage_dir);
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
static void drop(struct epar_out *o);
static void abort_files(void);

/* the folder is no longer this process's: untracked, its lock released (after its removal, if aborted) */
static void deactivate(struct epar_out *o)
{
    o->active = 0;
    track(o, 0);
    if (o->lock_fd >= 0) close(o->lock_fd);
    o->lock_fd = -1;
}

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
    /* the lock file is not part of the output; the folder stays ours (lock held, pid running) until deactivate */
    char lock[PATH_MAX + 32];
    snprintf(lock, sizeof lock, "%s/" LOCK_NAME, o->stage_dir);
    unlink(lock);
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
        deactivate(o);
        return EPAR_OK;
    }
    if (!S_ISDIR(st.st_mode)) {
        epar_out_abort(o);
        return epar_err_set(EPAR_EIO, "cannot create '%s': %s", o->final_dir, strerror(ENOTDIR));
    }
    int kept = move_kept(o, o->final_dir, o->stage_dir); /* put back below if the new folder cannot go in */
    if (renameat2(AT_FDCWD, o->stage_dir, AT_FDCWD, o->final_dir, RENAME_EXCHANGE) == 0) {
        drop(o); /* the staging path now holds the old folder */
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
    deactivate(o);
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

/* remove the staging folder (still holding its lock), then let it go */
static void drop(struct epar_out *o)
{
    o->active = 0;
    track(o, 0);
    remove_dir(o->stage_dir);
    deactivate(o);
}

void epar_out_abort(struct epar_out *o)
{
    if (!o->active) return;
    /* the error names the file where it was to go, not the staging folder that is about to disappear */
    epar_err_rename(o->stage_dir, o->final_dir);
    drop(o);
}

/* Temporary folders of this process (epar_out_temp_dir), removed by an interrupt. A slot is claimed atomically;
 * 0 free, 1 being filled, 2 holds a path. */
#define TEMP_DIRS 4
static struct { int state; char path[PATH_MAX]; } temp_dirs[TEMP_DIRS];

int epar_out_temp_dir(char *dir, size_t n, const char *what)
{
    const char *td = getenv("TMPDIR");
    snprintf(dir, n, "%s/epar-%s.XXXXXX", td && *td ? td : "/tmp", what);
    if (!mkdtemp(dir)) return epar_err_set(EPAR_EIO, "cannot create a temporary folder '%s': %s", dir, strerror(errno));
    for (int i = 0; i < TEMP_DIRS; i++) {
        int expect = 0;
        if (__atomic_compare_exchange_n(&temp_dirs[i].state, &expect, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            snprintf(temp_dirs[i].path, sizeof temp_dirs[i].path, "%s", dir);
            __atomic_store_n(&temp_dirs[i].state, 2, __ATOMIC_SEQ_CST);
            break;
        }
    }
    return EPAR_OK;
}

void epar_out_temp_remove(const char *dir)
{
    for (int i = 0; i < TEMP_DIRS; i++)
        if (__atomic_load_n(&temp_dirs[i].state, __ATOMIC_SEQ_CST) == 2 && !strcmp(temp_dirs[i].path, dir)) {
            __atomic_store_n(&temp_dirs[i].state, 1, __ATOMIC_SEQ_CST);
            remove_dir(dir);
            __atomic_store_n(&temp_dirs[i].state, 0, __ATOMIC_SEQ_CST);
            return;
        }
    remove_dir(dir);
}

int epar_out_abort_all(void)
{
    /* a commit in progress (signals blocked in its thread) is let finish: its output is complete */
    struct timespec ms = {0, 1000000};
    __atomic_store_n(&interrupted, 1, __ATOMIC_SEQ_CST);
    int was_committing = __atomic_load_n(&committing, __ATOMIC_SEQ_CST) > 0;
    for (int i = 0; __atomic_load_n(&committing, __ATOMIC_SEQ_CST) && i < 5000; i++) nanosleep(&ms, NULL);
    for (int i = 0; i < MAX_ACTIVE; i++) {
        struct epar_out *o = active_outs[i];
        if (o && o->active) {
            o->active = 0;
            remove_dir(o->stage_dir);
            if (o->lock_fd >= 0) close(o->lock_fd);
            o->lock_fd = -1;
        }
    }
    abort_files();
    for (int i = 0; i < TEMP_DIRS; i++)   /* after the staging folders, which may be inside */
        if (__atomic_load_n(&temp_dirs[i].state, __ATOMIC_SEQ_CST) == 2) remove_dir(temp_dirs[i].path);
    return was_committing;
}

/* ---- files: written to a temp file with every write checked, then renamed ---- */

/* Temp files being written right now, so an interrupt can remove them (abort_files). A slot is claimed
 * atomically; 0 free, 1 being filled, 2 holds a path. */
#define TMP_SLOTS 64
static struct { int state; char path[PATH_MAX + 64]; } tmp_slots[TMP_SLOTS];

static int tmp_claim(const char *tmp)
{
    for (int i = 0; i < TMP_SLOTS; i++) {
        int expect = 0;
        if (__atomic_compare_exchange_n(&tmp_slots[i].state, &expect, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            snprintf(tmp_slots[i].path, sizeof tmp_slots[i].path, "%s", tmp);
            __atomic_store_n(&tmp_slots[i].state, 2, __ATOMIC_SEQ_CST);
            return i;
        }
    }
    return -1; /* more writers than slots: still written, just not tracked (the staging folder is) */
}

static void tmp_release(int i)
{
    if (i >= 0) __atomic_store_n(&tmp_slots[i].state, 0, __ATOMIC_SEQ_CST);
}

static void abort_files(void)
{
    for (int i = 0; i < TMP_SLOTS; i++)
        if (__atomic_load_n(&tmp_slots[i].state, __ATOMIC_SEQ_CST) == 2) unlink(tmp_slots[i].path);
}

int epar_out_write_error(const char *path, int err)
{
    epar_err_set(EPAR_EIO, "cannot write '%s': %s", path, strerror(err));
    if (err == ENOSPC || err == EDQUOT) epar_err_hint("free some space on that disk, or write elsewhere with --out DIR");
    return EPAR_EIO;
}

/* the stream's writes go straight to write(2), so the first failure's errno is kept (stdio's own error flag
 * keeps no reason, and a later call may have changed errno) */
static ssize_t file_write(void *cookie, const char *buf, size_t n)
{
    struct epar_out_file *w = cookie;
    size_t done = 0;
    while (!w->err && done < n) {
        ssize_t k = write(w->fd, buf + done, n - done);
        if (k > 0) done += (size_t)k;
        else if (k < 0 && errno == EINTR) continue;
        else w->err = k < 0 ? errno : ENOSPC; /* write returning 0 for n > 0: nothing more fits */
    }
    return (ssize_t)done; /* short: stdio marks the stream failed */
}

static int file_close(void *cookie)
{
    struct epar_out_file *w = cookie;
    int r = close(w->fd); /* NFS reports a failed write-back here */
    if (r != 0 && !w->err) w->err = errno;
    w->fd = -1;
    return r;
}

FILE *epar_out_fopen(struct epar_out_file *w, const char *path)
{
    memset(w, 0, sizeof *w);
    w->fd = -1;
    w->slot = -1;
    struct stat st;
    pthread_once(&host_once, host_init);
    if (snprintf(w->path, sizeof w->path, "%s", path) >= (int)sizeof w->path || !path[0] ||
        snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%s.%ld", path, host_tag, (long)getpid()) >= (int)sizeof w->tmp) {
        epar_err_set(EPAR_EIO, "cannot write '%s': %s", path, strerror(ENAMETOOLONG));
        return NULL;
    }
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        epar_err_set(EPAR_EIO, "cannot write '%s': not a regular file", path);
        return NULL;
    }
    w->slot = tmp_claim(w->tmp);
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (w->fd < 0) {
        int e = errno;
        tmp_release(w->slot);
        w->slot = -1;
        epar_out_write_error(path, e);
        return NULL;
    }
    cookie_io_functions_t io = {.read = NULL, .write = file_write, .seek = NULL, .close = file_close};
    w->f = fopencookie(w, "w", io);
    if (!w->f) {
        close(w->fd);
        unlink(w->tmp);
        tmp_release(w->slot);
        w->fd = w->slot = -1;
        epar_err_set(EPAR_ENOMEM, "out of memory opening '%s'", path);
        return NULL;
    }
    return w->f;
}

int epar_out_fclose(struct epar_out_file *w)
{
    if (!w->f) return epar_err_set(EPAR_EIO, "cannot write '%s': not open", w->path);
    int bad = fflush(w->f) != 0 || ferror(w->f);
    if (fclose(w->f) != 0) bad = 1; /* closes the file (file_close) */
    w->f = NULL;
    if (bad && !w->err) w->err = EIO;
    if (!w->err && rename(w->tmp, w->path) != 0) w->err = errno;
    if (w->err) unlink(w->tmp);
    tmp_release(w->slot);
    w->slot = -1;
    return w->err ? epar_out_write_error(w->path, w->err) : EPAR_OK;
}

int epar_out_write_text(const char *path, const char *text)
{
    struct epar_out_file w;
    FILE *f = epar_out_fopen(&w, path);
    if (!f) return EPAR_EIO;
    fputs(text, f);
    return epar_out_fclose(&w);
}

void epar_out_fdiscard(struct epar_out_file *w)
{
    if (w->f) {
        w->err = w->err ? w->err : ECANCELED; /* nothing more is written */
        fclose(w->f);
        w->f = NULL;
        unlink(w->tmp);
    }
    tmp_release(w->slot);
    w->slot = -1;
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
