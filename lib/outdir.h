/* outdir: staged, all-or-nothing output folders, and the one checked writer of every file epar writes.
 *
 * An experiment writes every file into a staging folder <root>/<section>.tmp-<host>-<pid>-XXXXXX (same depth
 * as the final folder), and only when everything succeeded does the staging folder replace <root>/<section>/
 * as a whole: files of an earlier run that this run did not write are gone, never mixed with the new ones. On
 * error or interrupt the staging folder is removed, so a failed run leaves nothing behind. A commit blocks
 * SIGINT/SIGTERM/SIGHUP in its thread while it moves the files, so an interrupt leaves either the complete
 * new files or none of them.
 *
 * Ownership: the process that made a staging folder holds an flock on <stage>/.epar-lock for the folder's
 * life (the lock file appears already locked, and is removed just before the commit's rename). A staging
 * folder that a killed process left behind (kill -9, power loss) is removed by the next epar_out_begin of the
 * same section, or by epar_out_sweep over a tree: only folders made on this host (the host name is in the
 * folder's name), not by this process, whose lock is free, or, without a lock file, whose pid is not running.
 * Folders of other hosts sharing a network file system are never touched. */
#ifndef EPAR_OUTDIR_H
#define EPAR_OUTDIR_H

#include <limits.h>
#include <stdio.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

struct epar_out {
    char root[PATH_MAX];
    char section[64];
    char final_dir[PATH_MAX];
    char stage_dir[PATH_MAX];
    char path[PATH_MAX + 256];  /* scratch returned by epar_out_path */
    char keep[64];              /* a sub-folder of the old folder that the commit carries over ("" = none) */
    int active;
    int lock_fd;                /* the flock held on <stage_dir>/.epar-lock while active (-1: none) */
};

/* Create root (and parents) if needed and a fresh staging folder. EPAR_EIO naming the path on failure
 * (root is a regular file, not writable, missing parent that cannot be created ...). */
int epar_out_begin(struct epar_out *o, const char *root, const char *section);
/* Path of `name` inside the staging folder (valid until the next call). */
const char *epar_out_path(struct epar_out *o, const char *name);
/* Replace <root>/<section>/ by the staging folder (atomically where the file system can exchange two
 * folders) and remove the old one. */
int epar_out_commit(struct epar_out *o);
/* Carry <root>/<section>/<name>/ of the existing folder over into the new one at commit (moved, not copied),
 * when the staging folder has no <name> of its own: for a section whose sub-folder is an incrementally built
 * store (the benchmark's cells/), not this run's output. Call after epar_out_begin. */
void epar_out_keep(struct epar_out *o, const char *name);
/* Remove the staging folder and everything in it. Safe to call twice. */
void epar_out_abort(struct epar_out *o);
/* Abort every active staging folder and remove the temp files of epar_out_fopen writes in progress and the
 * folders of epar_out_temp_dir: for signal handlers (async-signal-safe). Waits (at most 5 s) for a commit in progress in another thread to
 * finish, and makes every later commit fail with EPAR_EINTR. Returns 1 when a commit was in progress (its folder
 * was let finish: complete, never partial), else 0. */
int epar_out_abort_all(void);
/* Remove the staging folders under dir, down to `depth` levels of sub-folders, that no running process owns
 * (the rule above); for a store kept across runs (the benchmark's cells/). Returns how many were removed. */
int epar_out_sweep(const char *dir, int depth);
/* Remove the temp files of epar_out_fopen in dir (not its sub-folders) that a process of this host no longer running
 * left (kill -9 before the rename: <file>.tmp.<host>.<pid>); for files written outside a staging folder (the corpus
 * cache). Returns how many were removed. */
int epar_out_sweep_files(const char *dir);
/* Remove the staging folders of `section` in root that no running process owns (what epar_out_begin does first);
 * returns how many were removed. */
int epar_out_sweep_section(const char *root, const char *section);

/* A file written all or nothing, with every write checked: epar_out_fopen opens <path>.tmp.<host>.<pid> (a path
 * that exists and is not a regular file, e.g. /dev/full or a FIFO, is refused), the caller writes w->f
 * with stdio, and epar_out_fclose flushes, closes and renames it to path. The first failed write(2) or
 * close(2) is remembered, so the message names its reason: EPAR_EIO "cannot write '<path>': No space left
 * on device" (with a hint when the disk is full), and neither path nor the temp file is left. Used for every
 * file in a staging folder and for the few written outside one (index.html, checkpoints, the corpus cache). */
struct epar_out_file {
    FILE *f;
    int fd, err, slot;
    char path[PATH_MAX];
    char tmp[PATH_MAX + 64];
};
/* NULL (EPAR_EIO message set) when the file cannot be created. */
FILE *epar_out_fopen(struct epar_out_file *w, const char *path);
int epar_out_fclose(struct epar_out_file *w);
/* The whole of text as the file path, checked (a short report). */
int epar_out_write_text(const char *path, const char *text);
/* Record EPAR_EIO "cannot write '<path>': <strerror(err)>" (and the full-disk hint for ENOSPC/EDQUOT). */
int epar_out_write_error(const char *path, int err);
/* Close and remove without publishing (the caller's own error path). Safe after a failed epar_out_fopen. */
void epar_out_fdiscard(struct epar_out_file *w);

/* The output root of a command, checked before any work (cmd/options.c does it for every command's --out): create
 * root and its missing parents now, and make and remove a probe folder in it, so an unusable root (a file on the
 * way, no permission, a read-only file system) is EPAR_EIO naming the path and the reason before anything is
 * computed. The folders it created are remembered; epar_out_release removes those that are still empty (a failed
 * or interrupted command leaves no folder it created; async-signal-safe). */
int epar_out_prepare(const char *root);
void epar_out_release(void);

/* A temporary folder of this process: mkdtemp of $TMPDIR/epar-<what>.XXXXXX (/tmp without TMPDIR) into dir (n >=
 * PATH_MAX); an interrupt removes it after the staging folders (epar_out_abort_all, so the one signal handler of
 * cmd/main.c cleans it up). EPAR_EIO naming the folder when it cannot be made. */
int epar_out_temp_dir(char *dir, size_t n, const char *what);
/* Remove a folder of epar_out_temp_dir and everything in it, and forget it. */
void epar_out_temp_remove(const char *dir);

/* mkdir -p: create path and its missing parents (mode 0777 before the umask). 0, or -1 with errno set (also
 * ENOTDIR when path exists and is not a folder, ENAMETOOLONG beyond PATH_MAX). */
int epar_out_mkdir_p(const char *path);

#endif
