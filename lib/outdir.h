/* outdir: staged, all-or-nothing output folders.
 *
 * An experiment writes every file into a staging folder <root>/<section>.tmp-XXXXXX (same depth as the
 * final folder), and only when everything succeeded does the staging folder replace <root>/<section>/ as
 * a whole: files of an earlier run that this run did not write are gone, never mixed with the new ones. On error or interrupt the staging folder is removed, so a
 * failed run leaves nothing behind. A commit blocks SIGINT/SIGTERM/SIGHUP in its thread while it moves
 * the files, so an interrupt leaves either the complete new files or none of them. */
#ifndef EPAR_OUTDIR_H
#define EPAR_OUTDIR_H

#include <limits.h>

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
/* Abort every active staging folder: for signal handlers (async-signal-safe). Waits (at most 5 s) for a
 * commit in progress in another thread to finish, and makes every later commit fail with EPAR_EINTR. */
void epar_out_abort_all(void);

/* The output root of a command, checked before any work (cmd/options.c does it for every command's --out): create
 * root and its missing parents now, and make and remove a probe folder in it, so an unusable root (a file on the
 * way, no permission, a read-only file system) is EPAR_EIO naming the path and the reason before anything is
 * computed. The folders it created are remembered; epar_out_release removes those that are still empty (a failed
 * or interrupted command leaves no folder it created; async-signal-safe). */
int epar_out_prepare(const char *root);
void epar_out_release(void);

#endif
