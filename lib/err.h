/* err: status codes and the last error's message (GSL style: return a code, never print, never exit).
 *
 * Every lib/ and experiments/ function that can fail returns an int status. On failure it records a
 * one-line message ("problem 'subject'") and optionally a hint; cmd/ prints them as
 *   epar: error: <message>
 *   hint: <hint>
 * and maps the status to the process exit code in one place (cli_exit_code). The buffer is thread-local: a
 * message set inside an OpenMP worker is carried to the caller with epar_err_keep / epar_err_carried (below). */
#ifndef EPAR_ERR_H
#define EPAR_ERR_H

#include <stddef.h>

enum epar_status {
    EPAR_OK = 0,
    EPAR_ECHECK = 1,    /* ran, but a check failed (exit 1) */
    EPAR_EINVAL = 2,    /* invalid parameter value or combination (exit 2) */
    EPAR_EIO = 3,       /* file could not be read or written (exit 3) */
    EPAR_ENOMEM = 4,    /* size does not fit / allocation failed (exit 4) */
    EPAR_EPROTOCOL = 5, /* protocol file malformed or invalid (exit 3, with I/O: cli_exit_code in cmd/options.c) */
    EPAR_EINTR = 130    /* interrupted by a signal */
};

/* Record an error; returns code so callers can write `return epar_err_set(EPAR_EINVAL, ...)`. */
int epar_err_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Attach a hint to the current error (known fix). */
void epar_err_hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Replace every `from` in the current message and hint by `to` (a staging folder by the folder it stood for). */
void epar_err_rename(const char *from, const char *to);
const char *epar_err_message(void);
const char *epar_err_hint_text(void); /* "" when none */
void epar_err_clear(void);

/* "Did you mean": the candidates nearest to a name that was not found, for the hint of an unknown command, option,
 * form, task or mechanism (one rule for all of them). Feed the candidates with epar_nearest_add; best is a candidate
 * that equals the name but for letter case ("Rope" -> "rope"), else the closest within two edits of a candidate
 * longer than 5 letters, one edit of a shorter one (insertions, deletions, substitutions and swaps of two adjacent
 * letters: "rop" and "trian" are typos of "rope" and "train", but "rope" is not "none"), the first of equals; else,
 * when the name is the family of hyphenated candidates ("epar" of "epar-basic" and "epar-enhanced"), the first of
 * them (all of them are in family, up to EPAR_NEAREST_FAMILY, their count in n_family); NULL when none is near.
 * epar_nearest_text quotes what to suggest ("'epar-basic' or 'epar-enhanced'"). */
#define EPAR_NEAREST_FAMILY 4
struct epar_nearest {
    const char *name, *best;
    int d;                      /* edits from name to best (-1: equal but for case; 3: a family member) */
    const char *family[EPAR_NEAREST_FAMILY];
    int n_family;               /* candidates of the family, also those beyond EPAR_NEAREST_FAMILY */
    char text[256];
};
void epar_nearest_init(struct epar_nearest *n, const char *name);
void epar_nearest_add(struct epar_nearest *n, const char *candidate);
/* The suggestion as text, each candidate quoted with prefix before it ("--", "epar "): "'x'", or for a family
 * "'a' or 'b'", "'a', 'b' or 'c'", "'a', 'b', 'c', 'd' or one of 3 more"; NULL when there is none. */
const char *epar_nearest_text(struct epar_nearest *n, const char *prefix);
/* Edit distance with adjacent swaps (optimal string alignment; strings up to 40 bytes; 99 beyond) */
int epar_edit_distance(const char *a, const char *b);

/* malloc/calloc that record an EPAR_ENOMEM error naming what was being allocated. */
void *epar_err_alloc(size_t n, size_t size, const char *what);

/* malloc that records an EPAR_ENOMEM error naming what (the size expression) and where (the function) */
void *epar_err_malloc(size_t bytes, const char *what, const char *where);
/* The allocation helpers of experiments/: on failure the message says what could not be allocated, e.g.
 * "out of memory allocating (size_t)B * L * D * sizeof *X (12.5 MB) in pos_iterate" */
#define EPAR_MALLOC(bytes) epar_err_malloc((bytes), #bytes, __func__)
#define EPAR_CALLOC(n, size) epar_err_alloc((n), (size), #n " x " #size " in a zeroed buffer")

/* A worker's error carried to the caller (the buffer is per thread, so a message set inside an OpenMP worker
 * would be lost): a failing job calls epar_err_keep(&carry, status, job) (thread-safe; of several failures the
 * lowest job is kept, so the message does not depend on the schedule), and the caller, after the parallel region,
 * returns epar_err_carried(&carry): that status with its message and hint now in the caller's buffer, or EPAR_OK. */
struct epar_err_carry {
    int status;
    long job;
    char msg[1024], hint[1024];
};
#define EPAR_ERR_CARRY_INIT {0, -1, "", ""}
void epar_err_keep(struct epar_err_carry *c, int status, long job);
int epar_err_carried(const struct epar_err_carry *c);

#endif
