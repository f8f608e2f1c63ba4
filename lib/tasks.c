#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gsl/gsl_sort.h>
#include "err.h"
#include "outdir.h"
#include "protocol.h"
#include "rng.h"
#include "tasks.h"

extern char **environ;

#define MAX_VOCAB 65536
#define MAX_TEXT (1L << 30)

/* ------------------------------------------------------------------------------------------------ */
/* the King James Bible through bible-kjv's `bible` program                                          */

int epar_task_kjv_strip(const char *line)
{
    /* "<book><chapter>:<verse> <text>", book = optional digit 1-3 then letters ("Ge", "1Sm", "SSol") */
    const char *p = line;
    if (*p >= '1' && *p <= '3') p++;
    const char *b = p;
    while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')) p++;
    if (p == b) return -1;
    const char *c = p;
    while (*p >= '0' && *p <= '9') p++;
    if (p == c || *p != ':') return -1;
    const char *v = ++p;
    while (*p >= '0' && *p <= '9') p++;
    if (p == v || *p != ' ') return -1;
    return (int)(p + 1 - line);
}

static int find_program(const char *name, char *out, size_t n)
{
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/bin:/bin";
    while (*path) {
        const char *e = strchr(path, ':');
        size_t len = e ? (size_t)(e - path) : strlen(path);
        if (len > 0 && (size_t)snprintf(out, n, "%.*s/%s", (int)len, path, name) < n && access(out, X_OK) == 0)
            return 1;
        path += len + (e ? 1 : 0);
    }
    return 0;
}

static int read_file(const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return epar_err_set(EPAR_EIO, "cannot read text '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return epar_err_set(EPAR_EIO, "cannot read text '%s': not a regular file", path);
    }
    if (sb.st_size > MAX_TEXT) {
        fclose(f);
        return epar_err_set(EPAR_EINVAL, "text '%s' is larger than 1 GiB", path);
    }
    char *buf = epar_err_alloc((size_t)sb.st_size + 1, 1, "the text");
    if (!buf) {
        fclose(f);
        return EPAR_ENOMEM;
    }
    size_t got = fread(buf, 1, (size_t)sb.st_size, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || got != (size_t)sb.st_size) {
        free(buf);
        return epar_err_set(EPAR_EIO, "cannot read text '%s': short read", path);
    }
    buf[got] = '\0';
    *text = buf;
    *len = got;
    return EPAR_OK;
}

/* run bible, strip every line into buf */
static int run_bible(const char *prog, char **text, size_t *len)
{
    int fd[2];
    if (pipe(fd) != 0) return epar_err_set(EPAR_EIO, "cannot run '%s': %s", prog, strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    posix_spawn_file_actions_addclose(&fa, fd[1]);
    char *argv[] = {(char *)prog, "-f", "Gen1:1-Rev22:21", NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, prog, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if (rc != 0) {
        close(fd[0]);
        return epar_err_set(EPAR_EIO, "cannot run '%s': %s", prog, strerror(rc));
    }
    FILE *f = fdopen(fd[0], "r");
    size_t cap = 1 << 22, n = 0;
    char *buf = malloc(cap), *line = NULL;
    size_t lcap = 0;
    long lineno = 0;
    int st = buf && f ? EPAR_OK : epar_err_set(EPAR_ENOMEM, "out of memory reading the Bible text");
    ssize_t got;
    while (!st && (got = getline(&line, &lcap, f)) > 0) {
        lineno++;
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = '\0';
        int off = epar_task_kjv_strip(line);
        if (off < 0) {
            st = epar_err_set(EPAR_EIO, "unexpected output of '%s' at line %ld: '%.60s'", prog, lineno, line);
            break;
        }
        size_t add = (size_t)(got - off) + 1;
        if (n + add + 1 > cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) { st = epar_err_set(EPAR_ENOMEM, "out of memory reading the Bible text"); break; }
            buf = nb;
        }
        memcpy(buf + n, line + off, add - 1);
        n += add;
        buf[n - 1] = '\n';
    }
    free(line);
    if (f) fclose(f);
    else close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (!st && (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || n == 0)) {
        st = epar_err_set(EPAR_EIO, "'%s -f Gen1:1-Rev22:21' failed (%s)", prog,
                          n == 0 ? "no output" : "non-zero exit");
        epar_err_hint("reinstall the text: sudo apt-get install --reinstall bible-kjv bible-kjv-text");
    }
    if (st) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return EPAR_OK;
}

/* The Bible text as this process read it from `bible`, and where it is to be cached: the cache is written by
 * epar_task_cache_commit once the command has succeeded (cmd/main.c), so a command that fails leaves no cache
 * behind; meanwhile every later read in the process (the benchmark's lm cells, in threads) copies it from here
 * instead of running `bible` again. */
static pthread_mutex_t kjv_lock = PTHREAD_MUTEX_INITIALIZER;
static char *kjv_text, kjv_path[4200], kjv_source[4200];
static size_t kjv_len;

int epar_task_kjv_text(const char *cache_dir, char **text, size_t *len, char *source, size_t source_len)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/kjv.txt", cache_dir);
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
        int st = read_file(path, text, len);
        if (!st) snprintf(source, source_len, "King James Bible (Debian bible-kjv), cached as %s", path);
        return st;
    }
    int st = EPAR_OK;
    pthread_mutex_lock(&kjv_lock);   /* one `bible` run at a time: the others then copy its text */
    if (!kjv_text) {
        char prog[4096];
        if (!find_program("bible", prog, sizeof prog)) {
            epar_err_set(EPAR_EIO, "the King James Bible needs the Debian package bible-kjv ('bible' is not on PATH)");
            epar_err_hint("sudo apt-get install bible-kjv (or scripts/install-deps), or train on a file with --text FILE");
            st = EPAR_EIO;
        } else if (!(st = run_bible(prog, &kjv_text, &kjv_len))) {
            snprintf(kjv_source, sizeof kjv_source,
                     "King James Bible (Debian bible-kjv: %s -f Gen1:1-Rev22:21, references stripped)", prog);
            snprintf(kjv_path, sizeof kjv_path, "%s", path);
        }
    }
    if (!st) {
        *text = malloc(kjv_len + 1);
        if (!*text) st = epar_err_set(EPAR_ENOMEM, "out of memory copying the Bible text");
        else {
            memcpy(*text, kjv_text, kjv_len + 1);
            *len = kjv_len;
            snprintf(source, source_len, "%s", kjv_source);
        }
    }
    pthread_mutex_unlock(&kjv_lock);
    return st;
}

void epar_task_cache_commit(void)
{
    pthread_mutex_lock(&kjv_lock);
    struct stat sb;
    if (kjv_text && kjv_path[0] && stat(kjv_path, &sb) != 0) {
        /* atomically: a reader never sees half a file; failing to cache is not an error */
        char dir[4200];
        snprintf(dir, sizeof dir, "%s", kjv_path);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = '\0';
        if (!slash || epar_out_mkdir_p(dir) == 0) {
            struct epar_out_file w;   /* checked writes, then rename; a failure (a full disk) leaves no file */
            FILE *f = epar_out_fopen(&w, kjv_path);
            if (f) {
                fwrite(kjv_text, 1, kjv_len, f);
                epar_out_fclose(&w);
            }
            epar_err_clear();
        }
    }
    free(kjv_text);
    kjv_text = NULL;
    kjv_path[0] = '\0';
    pthread_mutex_unlock(&kjv_lock);
}

/* ------------------------------------------------------------------------------------------------ */
/* lm                                                                                                 */

/* decode UTF-8 (strict: no overlong forms, no surrogates) into code points; returns the count or -1 with
 * the byte offset of the first bad sequence in *bad */
static long utf8_decode(const unsigned char *s, size_t n, uint32_t *out, size_t *bad)
{
    size_t i = 0;
    long k = 0;
    while (i < n) {
        uint32_t c = s[i];
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!len || i + len > n) { *bad = i; return -1; }
        if (len > 1) {
            c &= 0xff >> (len + 1);
            for (int q = 1; q < len; q++) {
                if ((s[i + q] & 0xc0) != 0x80) { *bad = i; return -1; }
                c = (c << 6) | (s[i + q] & 0x3f);
            }
            static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
            if (c < min[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) { *bad = i; return -1; }
        }
        out[k++] = c;
        i += (size_t)len;
    }
    return k;
}

/* the words (maximal runs without space or newline) of every line in a random order, joined by one space;
 * one fixed stream (0, 2, EPAR_RNG_EXTRA): the same text for every seed */
static int shuffle_words(uint32_t *cp, long n)
{
    long *start = malloc((size_t)(n + 1) * sizeof *start), *len = malloc((size_t)(n + 1) * sizeof *len);
    uint32_t *out = malloc((size_t)(n ? n : 1) * sizeof *out);
    gsl_rng *r = epar_rng_alloc(0, 2, EPAR_RNG_EXTRA);
    if (!start || !len || !out || !r) {
        free(start); free(len); free(out); epar_rng_free(r);
        return epar_err_set(EPAR_ENOMEM, "out of memory shuffling the text");
    }
    long o = 0, i = 0;
    while (i < n) {
        long w = 0, e = i;
        while (e < n && cp[e] != '\n') e++;
        for (long q = i; q < e;) {
            while (q < e && cp[q] == ' ') q++;
            if (q >= e) break;
            start[w] = q;
            while (q < e && cp[q] != ' ') q++;
            len[w] = q - start[w];
            w++;
        }
        for (long a = w - 1; a > 0; a--) {   /* Fisher-Yates */
            long b = (long)gsl_rng_uniform_int(r, (unsigned long)(a + 1)), ts = start[a], tl = len[a];
            start[a] = start[b]; len[a] = len[b];
            start[b] = ts; len[b] = tl;
        }
        long o0 = o;
        for (long a = 0; a < w; a++) {
            if (a) out[o++] = ' ';
            memcpy(out + o, cp + start[a], (size_t)len[a] * sizeof *out);
            o += len[a];
        }
        while (o - o0 < e - i) out[o++] = ' ';   /* keep the length: trailing spaces where runs were collapsed */
        if (e < n) out[o++] = '\n';
        i = e + 1;
    }
    memcpy(cp, out, (size_t)n * sizeof *cp);
    free(start); free(len); free(out); epar_rng_free(r);
    return EPAR_OK;
}

/* The decoded text of the lm tasks, shared by every task of the process that reads the same bytes: a benchmark
 * opens its text about ten times per lm cell (training, evaluation at each length, the cost cell), and decoding
 * 4.3 M characters into 40 MB of fresh pages took 0.1-0.3 s each time, more than training some cells. The text
 * is read every time and compared byte for byte with the entry's, so a file edited between two opens is decoded
 * again. An entry is immutable once made; tasks hold a reference; entries no task holds are kept for the next
 * open (at most LM_TEXTS_KEPT of them) and freed at exit. */
#define LM_TEXTS_KEPT 4
struct epar_task_text {
    struct epar_task_text *next;
    char *raw;                  /* the bytes read */
    size_t len;
    int shuffle;
    char source[512];
    int refs;
    int V;
    long n;
    int *ids;                   /* (n) token ids */
    uint32_t *chars;            /* (V) code points, ascending */
};
static pthread_mutex_t lm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct epar_task_text *lm_texts;

static void lm_text_free(struct epar_task_text *x)
{
    free(x->raw);
    free(x->ids);
    free(x->chars);
    free(x);
}

__attribute__((destructor)) static void lm_texts_free(void)
{
    while (lm_texts) {
        struct epar_task_text *x = lm_texts;
        lm_texts = x->next;
        lm_text_free(x);
    }
}

/* decode x->raw into x's token ids and vocabulary */
static int lm_text_decode(const struct epar_task_cfg *c, struct epar_task_text *x)
{
    const char *name = c->text_path ? c->text_path : "the Bible text";
    uint32_t *cp = epar_err_alloc(x->len ? x->len : 1, sizeof *cp, "the decoded text");
    int32_t *map = epar_err_alloc(0x110000, sizeof *map, "the character table");
    if (!cp || !map) {
        free(cp); free(map);
        return EPAR_ENOMEM;
    }
    size_t bad = 0;
    long n = utf8_decode((const unsigned char *)x->raw, x->len, cp, &bad);
    int st;
    if (n < 0) {
        free(cp); free(map);
        epar_err_set(EPAR_EINVAL, "text '%s' is not UTF-8 (bad byte sequence at offset %zu)", name, bad);
        epar_err_hint("convert it, e.g. iconv -f latin1 -t utf-8");
        return EPAR_EINVAL;
    }
    if (x->shuffle && (st = shuffle_words(cp, n))) {
        free(cp); free(map);
        return st;
    }
    /* vocabulary: the distinct code points, ascending */
    for (long i = 0; i < n; i++) map[cp[i]] = 1;
    int V = 0;
    for (uint32_t u = 0; u < 0x110000; u++)
        if (map[u]) map[u] = V++;
    st = EPAR_OK;
    if (V > MAX_VOCAB) st = epar_err_set(EPAR_EINVAL, "text '%s' has %d distinct characters (at most %d)", name, V, MAX_VOCAB);
    else if (V < 2) st = epar_err_set(EPAR_EINVAL, "text '%s' has fewer than 2 distinct characters", name);
    if (!st) {
        x->ids = malloc((size_t)(n ? n : 1) * sizeof *x->ids);
        x->chars = malloc((size_t)V * sizeof *x->chars);
        if (!x->ids || !x->chars) st = epar_err_set(EPAR_ENOMEM, "out of memory holding the text (%ld characters)", n);
    }
    if (!st) {
        for (long i = 0; i < n; i++) x->ids[i] = map[cp[i]];
        for (long i = 0; i < n; i++) x->chars[x->ids[i]] = cp[i];
        x->V = V;
        x->n = n;
    }
    free(cp);
    free(map);
    return st;
}

/* the decoded text of c, shared, referenced once more, into *out */
static int lm_text_get(const struct epar_task_cfg *c, struct epar_task_text **out)
{
    struct epar_task_text key = {.shuffle = c->shuffle != 0};
    int st = c->text_path ? read_file(c->text_path, &key.raw, &key.len)
                          : epar_task_kjv_text(c->cache_dir ? c->cache_dir : ".", &key.raw, &key.len, key.source,
                                               sizeof key.source);
    if (st) return st;
    if (c->text_path) snprintf(key.source, sizeof key.source, "%s", c->text_path);
    pthread_mutex_lock(&lm_lock);   /* held while decoding: a second thread wanting the same text waits for it */
    struct epar_task_text *x = lm_texts;
    for (; x; x = x->next)
        if (x->shuffle == key.shuffle && x->len == key.len && !strcmp(x->source, key.source) &&
            !memcmp(x->raw, key.raw, key.len))
            break;
    if (x) {
        free(key.raw);
    } else if (!(x = malloc(sizeof *x))) {
        free(key.raw);
        st = epar_err_set(EPAR_ENOMEM, "out of memory holding the text");
    } else {
        *x = key;
        if ((st = lm_text_decode(c, x))) {
            lm_text_free(x);
            x = NULL;
        } else {
            x->next = lm_texts;
            lm_texts = x;
            int kept = 0;   /* forget the oldest texts no task holds */
            for (struct epar_task_text **p = &lm_texts; *p;) {
                if ((*p)->refs == 0 && *p != x && ++kept >= LM_TEXTS_KEPT) {
                    struct epar_task_text *old = *p;
                    *p = old->next;
                    lm_text_free(old);
                } else {
                    p = &(*p)->next;
                }
            }
        }
    }
    if (x) x->refs++;
    pthread_mutex_unlock(&lm_lock);
    *out = x;
    return st;
}

static void lm_text_put(struct epar_task_text *x)
{
    if (!x) return;
    pthread_mutex_lock(&lm_lock);
    x->refs--;
    pthread_mutex_unlock(&lm_lock);
}

static int lm_open(struct epar_task *t)
{
    const struct epar_task_cfg *c = &t->cfg;
    struct epar_task_text *x;
    int st = lm_text_get(c, &x);
    if (st) return st;
    t->text = x;
    t->ids = x->ids;
    t->chars = x->chars;
    t->V = x->V;
    t->n_text = x->n;
    snprintf(t->source, sizeof t->source, "%s", x->source);
    long held = (long)floor(c->holdout * (double)x->n);
    t->n_train = x->n - held;
    if (x->n - held < c->length + 1 || held < c->length + 1) {
        epar_err_set(EPAR_EINVAL, "text '%s' is too short for length %d: %ld characters, %ld held out (each part needs length + 1)",
                     c->text_path ? c->text_path : "the Bible text", c->length, x->n, held);
        epar_err_hint("use a longer text or a smaller --length");
        return EPAR_EINVAL;
    }
    return EPAR_OK;
}

static void lm_train_batch(struct epar_task *t, gsl_rng *r, int B, int *tok, int *tgt, float *mask)
{
    int T = t->cfg.length;
    for (int b = 0; b < B; b++) {
        long o = (long)gsl_rng_uniform_int(r, (unsigned long)(t->n_train - T));   /* o + T < n_train */
        for (int k = 0; k < T; k++) {
            tok[b * T + k] = t->ids[o + k];
            tgt[b * T + k] = t->ids[o + k + 1];
            mask[b * T + k] = 1.0f;
        }
    }
}

static long lm_eval_count(const struct epar_task *t) { return (t->n_text - t->n_train - 1) / t->cfg.length; }

static void lm_eval_item(const struct epar_task *t, long k, int *tok, int *tgt, float *mask)
{
    int T = t->cfg.length;
    long o = t->n_train + k * T;   /* consecutive windows of the held-out text */
    for (int q = 0; q < T; q++) {
        tok[q] = t->ids[o + q];
        tgt[q] = t->ids[o + q + 1];
        mask[q] = 1.0f;
    }
}

/* ------------------------------------------------------------------------------------------------ */
/* recall                                                                                             */

static int recall_queries(const struct epar_task_cfg *c) { return c->queries > 0 ? c->queries : c->pairs; }

/* recall and needle share one layout of tokens: 0 pad; a fact (key k, value v) is ONE token, 1 + k V + v
 * (K V of them); the question "k?" is 1 + K V + k; the answer v is 1 + K V + K + v.
 * A fact bound in one token makes the lookup one attention hop by content, as a passage
 * holding the answer is for retrieval QA: with key and value in adjacent tokens (the Zoology form) the lookup
 * needs an induction circuit (a previous-token head, then a match) that none of the benchmark's models formed
 * within its budget (docs/TASKS.md has the measurements). */
static int fact_token(const struct epar_task_cfg *c, int k, int v) { return 1 + k * c->values + v; }
static int question_token(const struct epar_task_cfg *c, int k) { return 1 + c->keys * c->values + k; }
static int answer_token(const struct epar_task_cfg *c, int v) { return 1 + c->keys * c->values + c->keys + v; }

/* the N = pairs facts of a sequence: distinct keys in random order (partial Fisher-Yates over t->perm), values
 * with replacement, into key and val (t->counts) and as fact tokens at tok[0 .. N-1] */
static void draw_facts(struct epar_task *t, gsl_rng *r, int *tok)
{
    const struct epar_task_cfg *c = &t->cfg;
    int N = c->pairs, *key = t->counts, *val = t->counts + N;
    size_t *perm = t->perm;
    for (int i = 0; i < c->keys; i++) perm[i] = (size_t)i;
    for (int i = 0; i < N; i++) {
        size_t j = (size_t)i + gsl_rng_uniform_int(r, (unsigned long)(c->keys - i)), tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
        key[i] = (int)perm[i];
        val[i] = (int)gsl_rng_uniform_int(r, (unsigned long)c->values);
        tok[i] = fact_token(c, key[i], val[i]);
    }
}

/* Q questions on distinct facts of draw_facts, in random order: question i at at[i], its answer at at[i] + 1,
 * the question scored (its target is the answer that follows it) */
static void ask_facts(struct epar_task *t, gsl_rng *r, int Q, const int *at, int *tok, float *mask)
{
    const struct epar_task_cfg *c = &t->cfg;
    int N = c->pairs, *key = t->counts, *val = t->counts + N;
    size_t *perm = t->perm;
    for (int i = 0; i < N; i++) perm[i] = (size_t)i;
    for (int i = 0; i < Q; i++) {
        size_t j = (size_t)i + gsl_rng_uniform_int(r, (unsigned long)(N - i)), tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
        tok[at[i]] = question_token(c, key[perm[i]]);
        tok[at[i] + 1] = answer_token(c, val[perm[i]]);
        mask[at[i]] = 1.0f;
    }
}

/* recall: N facts at positions 0 .. N-1, then Q questions on distinct facts at random places of the rest, each
 * followed by its answer (pads elsewhere). */
static void recall_sequence(struct epar_task *t, gsl_rng *r, long item, int *tok, int *tgt, float *mask, int *group)
{
    (void)item;
    *group = 0;
    const struct epar_task_cfg *c = &t->cfg;
    int T = c->length, N = c->pairs, Q = recall_queries(c), R = T - N;
    for (int q = 0; q < T; q++) {
        tok[q] = 0;
        mask[q] = 0.0f;
    }
    draw_facts(t, r, tok);
    /* Q non-overlapping (question, answer) slots in the R positions after the facts: Q distinct numbers s_i of
     * 0 .. R-Q-1, sorted; slot i starts at N + s_i + i */
    int *slot = t->slots;
    for (int i = 0; i < R - Q; i++) slot[i] = i;
    for (int i = 0; i < Q; i++) {
        int j = i + (int)gsl_rng_uniform_int(r, (unsigned long)(R - Q - i)), tmp = slot[i];
        slot[i] = slot[j];
        slot[j] = tmp;
    }
    gsl_sort_int(slot, 1, (size_t)Q);
    for (int i = 0; i < Q; i++) slot[i] += N + i;
    ask_facts(t, r, Q, slot, tok, mask);
    for (int q = 0; q + 1 < T; q++) tgt[q] = tok[q + 1];
    tgt[T - 1] = 0;
}

static int recall_vocab(const struct epar_task_cfg *c) { return 1 + c->keys * c->values + c->keys + c->values; }
/* needle: N = pairs facts with distinct keys in one block at p .. p+N-1, the pad token everywhere else (as Mamba's
 * selective copying fills with one noise token), then the N questions (in random order), each followed by its
 * answer, in the last 2N positions; the target at a question is its answer. The item's distance d runs from the
 * block's last fact to the first question: d = T - 2N - (p + N - 1), in [1, T - 3N + 1] (epar_task_max_group).
 * Training draws d uniformly; evaluation item k of E has d = 1 + floor(k dmax / E). Several facts per sequence
 * give several answers a sequence at the same distance: one fact alone gave too few answers for a long sequence
 * to be learned within the benchmark's budget. */
static int needle_max_distance(const struct epar_task_cfg *c) { return c->length - 3 * c->pairs + 1; }

static void needle_sequence(struct epar_task *t, gsl_rng *r, long item, int *tok, int *tgt, float *mask, int *group)
{
    const struct epar_task_cfg *c = &t->cfg;
    int T = c->length, N = c->pairs, dmax = needle_max_distance(c), *at = t->slots;
    int d = item < 0 ? 1 + (int)gsl_rng_uniform_int(r, (unsigned long)dmax)
                     : 1 + (int)((long long)item * dmax / c->eval_sequences);
    int p = epar_task_needle_position(c, d);
    for (int q = 0; q < T; q++) {
        tok[q] = 0;
        mask[q] = 0.0f;
    }
    draw_facts(t, r, tok + p);
    for (int i = 0; i < N; i++) at[i] = T - 2 * N + 2 * i;   /* the questions in random order at the end */
    ask_facts(t, r, N, at, tok, mask);
    for (int q = 0; q + 1 < T; q++) tgt[q] = tok[q + 1];
    tgt[T - 1] = 0;
    *group = d;
}

int epar_task_max_group(const struct epar_task_cfg *c) { return c->id == EPAR_TASK_NEEDLE ? needle_max_distance(c) : 0; }

int epar_task_needle_position(const struct epar_task_cfg *c, int distance) { return c->length - 3 * c->pairs + 1 - distance; }

/* transduce: tokens 0 pad, 1 separator, 2 .. 1+values symbols. n = (T-1)/2 source symbols, the separator at n,
 * then the source reversed at n+1 .. 2n (a pad at T-1 when T is even); positions n .. 2n-1 are scored. */
static void transduce_sequence(struct epar_task *t, gsl_rng *r, long item, int *tok, int *tgt, float *mask, int *group)
{
    (void)item;
    int T = t->cfg.length, n = (T - 1) / 2;
    for (int q = 0; q < T; q++) {
        tok[q] = 0;
        tgt[q] = 0;
        mask[q] = 0.0f;
    }
    for (int i = 0; i < n; i++) tok[i] = 2 + (int)gsl_rng_uniform_int(r, (unsigned long)t->cfg.values);
    tok[n] = 1;
    for (int i = 0; i < n; i++) tok[n + 1 + i] = tok[n - 1 - i];
    for (int q = n; q < 2 * n; q++) {
        tgt[q] = tok[q + 1];
        mask[q] = 1.0f;
    }
    *group = 0;
}

static int transduce_vocab(const struct epar_task_cfg *c) { return 2 + c->values; }

/* classify: tokens 0 pad, 1 CLS, 2 .. 1+values the classes. T-1 symbols then CLS; the target at CLS is the label:
 * a class drawn first, then symbols drawn uniformly, then random non-label positions set to the label until
 * the label is the unique majority. */
static void classify_sequence(struct epar_task *t, gsl_rng *r, long item, int *tok, int *tgt, float *mask, int *group)
{
    (void)item;
    int T = t->cfg.length, K = t->cfg.values, n = T - 1, *cnt = t->counts;
    int label = (int)gsl_rng_uniform_int(r, (unsigned long)K);
    for (int k = 0; k < K; k++) cnt[k] = 0;
    for (int q = 0; q < n; q++) {
        int s = (int)gsl_rng_uniform_int(r, (unsigned long)K);
        tok[q] = 2 + s;
        cnt[s]++;
    }
    for (;;) {
        int unique = 1;
        for (int k = 0; k < K; k++)
            if (k != label && cnt[k] >= cnt[label]) unique = 0;
        if (unique) break;
        int q = (int)gsl_rng_uniform_int(r, (unsigned long)n);
        if (tok[q] - 2 == label) continue;
        cnt[tok[q] - 2]--;
        cnt[label]++;
        tok[q] = 2 + label;
    }
    tok[n] = 1;
    for (int q = 0; q < T; q++) {
        tgt[q] = q + 1 < T ? tok[q + 1] : 2 + label;
        mask[q] = 0.0f;
    }
    mask[n] = 1.0f;
    *group = 0;
}

static int classify_vocab(const struct epar_task_cfg *c) { return 2 + c->values; }

/* select (selective copying, Gu & Dao 2023): tokens 0 pad, 1 separator, 2 the noise token, 3 .. 2+values the data
 * symbols. k = pairs data symbols at random distinct places of the n = T-1-k content positions (the noise token
 * elsewhere), the separator at n, then the data symbols in order; positions n .. n+k-1 are scored (each predicts
 * the next data symbol). Finding the data is by content; their order is what position information gives. */
static void select_sequence(struct epar_task *t, gsl_rng *r, long item, int *tok, int *tgt, float *mask, int *group)
{
    (void)item;
    const struct epar_task_cfg *c = &t->cfg;
    int T = c->length, S = c->values, k = c->pairs, n = T - 1 - k, *slot = t->slots;
    for (int q = 0; q < n; q++) tok[q] = 2;
    for (int i = 0; i < n; i++) slot[i] = i;
    for (int i = 0; i < k; i++) {   /* k distinct places (partial Fisher-Yates), in order */
        int j = i + (int)gsl_rng_uniform_int(r, (unsigned long)(n - i)), tmp = slot[i];
        slot[i] = slot[j];
        slot[j] = tmp;
    }
    gsl_sort_int(slot, 1, (size_t)k);
    tok[n] = 1;
    for (int i = 0; i < k; i++) {
        tok[slot[i]] = 3 + (int)gsl_rng_uniform_int(r, (unsigned long)S);
        tok[n + 1 + i] = tok[slot[i]];
    }
    for (int q = 0; q < T; q++) {
        tgt[q] = q + 1 < T ? tok[q + 1] : 0;
        mask[q] = q >= n && q < n + k ? 1.0f : 0.0f;
    }
    *group = 0;
}

static int select_vocab(const struct epar_task_cfg *c) { return 3 + c->values; }

/* set: tokens 0 pad, 1 .. keys items, keys+1 .. keys+1+values the counts 0 .. values, keys+values+2 the start
 * token. The start token at 0; every item gets a count drawn in [0, values] and is placed that many times at
 * random distinct positions of 1 .. T-2 (pads elsewhere); the query item at T-1; its target is the count token.
 * The answer does not depend on the order. The start token gives attention a place to put the weight it does
 * not put on the queried item, which is how softmax attention can count (the share on the item falls with
 * its count otherwise not at all). */
static void set_sequence(struct epar_task *t, gsl_rng *r, long item, int *tok, int *tgt, float *mask, int *group)
{
    (void)item;
    const struct epar_task_cfg *c = &t->cfg;
    int T = c->length, A = c->keys, n = T - 2, *slot = t->slots, *cnt = t->counts, used = 0;
    for (int q = 0; q < T; q++) {
        tok[q] = 0;
        mask[q] = 0.0f;
    }
    tok[0] = A + c->values + 2;
    for (int i = 0; i < n; i++) slot[i] = 1 + i;
    for (int a = 0; a < A; a++) {
        cnt[a] = (int)gsl_rng_uniform_int(r, (unsigned long)(c->values + 1));
        for (int m = 0; m < cnt[a]; m++, used++) {   /* the next free place, drawn among the unused */
            int j = used + (int)gsl_rng_uniform_int(r, (unsigned long)(n - used)), tmp = slot[used];
            slot[used] = slot[j];
            slot[j] = tmp;
            tok[slot[used]] = 1 + a;
        }
    }
    int query = (int)gsl_rng_uniform_int(r, (unsigned long)A);
    tok[T - 1] = 1 + query;
    for (int q = 0; q + 1 < T; q++) tgt[q] = tok[q + 1];
    tgt[T - 1] = 1 + A + cnt[query];
    mask[T - 1] = 1.0f;
    *group = 0;
}

static int set_vocab(const struct epar_task_cfg *c) { return c->keys + c->values + 3; }

/* ---- the synthetic tasks' common path: a clean sequence, then the noise condition ---- */

static void synth_fill(struct epar_task *t, gsl_rng *r, long item, int *tok, int *tgt, float *mask, int *group)
{
    t->info->sequence(t, r, item, tok, tgt, mask, group);
    if (t->cfg.noise > 0)   /* unscored inputs only: the question itself stays; targets stay clean */
        for (int q = 0; q < t->cfg.length; q++)
            if (gsl_rng_uniform(r) < t->cfg.noise && mask[q] == 0.0f) tok[q] = (int)gsl_rng_uniform_int(r, (unsigned long)t->V);
}

static const char *task_source(const struct epar_task_cfg *c, char *buf, size_t n)
{
    switch (c->id) {
    case EPAR_TASK_RECALL:
        snprintf(buf, n, "multi-query associative recall: %d facts (key-value, one token each), %d questions, %d keys, %d values",
                 c->pairs, recall_queries(c), c->keys, c->values);
        break;
    case EPAR_TASK_NEEDLE:
        snprintf(buf, n, "needle: %d facts (key-value, one token each) in a block at distance 1..%d before their questions, among pads, %d keys, %d values",
                 c->pairs, needle_max_distance(c), c->keys, c->values);
        break;
    case EPAR_TASK_TRANSDUCE:
        snprintf(buf, n, "transduce: %d source symbols of %d, a separator, the reversal", (c->length - 1) / 2, c->values);
        break;
    case EPAR_TASK_CLASSIFY:
        snprintf(buf, n, "classify: %d symbols of %d classes then CLS, label = the majority class", c->length - 1, c->values);
        break;
    case EPAR_TASK_SELECT:
        snprintf(buf, n, "select: %d data symbols (alphabet %d) among %d noise tokens, copied in order", c->pairs,
                 c->values, c->length - 1 - 2 * c->pairs);
        break;
    case EPAR_TASK_SET:
        snprintf(buf, n, "set: a start token, %d items present 0..%d times, the count of a queried item", c->keys, c->values);
        break;
    default: snprintf(buf, n, "?");
    }
    size_t l = strlen(buf);
    if (c->noise > 0 && l < n) snprintf(buf + l, n - l, "; %g of unscored inputs replaced at random", c->noise);
    return buf;
}

static int synth_open(struct epar_task *t)
{
    const struct epar_task_cfg *c = &t->cfg;
    int T = c->length;
    size_t n = (size_t)c->eval_sequences * T;
    t->V = t->info->vocab(c);
    size_t np = (size_t)(c->keys > c->pairs ? c->keys : c->pairs);
    t->perm = epar_err_alloc(np ? np : 1, sizeof *t->perm, "the task scratch");
    t->slots = epar_err_alloc((size_t)T, sizeof *t->slots, "the task scratch");
    size_t nc = (size_t)(c->keys > c->values ? c->keys : c->values);
    if (nc < 2 * (size_t)c->pairs) nc = 2 * (size_t)c->pairs;   /* recall: the facts' keys and values */
    t->counts = epar_err_alloc(nc + 1, sizeof *t->counts, "the task scratch");
    t->eval_tok = epar_err_alloc(n, sizeof *t->eval_tok, "the evaluation set");
    t->eval_tgt = epar_err_alloc(n, sizeof *t->eval_tgt, "the evaluation set");
    t->eval_mask = epar_err_alloc(n, sizeof *t->eval_mask, "the evaluation set");
    t->eval_group = epar_err_alloc((size_t)c->eval_sequences, sizeof *t->eval_group, "the evaluation set");
    if (!t->perm || !t->slots || !t->counts || !t->eval_tok || !t->eval_tgt || !t->eval_mask || !t->eval_group)
        return EPAR_ENOMEM;
    gsl_rng *r = epar_rng_alloc(c->seed, 1, EPAR_RNG_EXTRA);
    if (!r) return EPAR_ENOMEM;
    for (int k = 0; k < c->eval_sequences; k++)
        synth_fill(t, r, k, t->eval_tok + (size_t)k * T, t->eval_tgt + (size_t)k * T, t->eval_mask + (size_t)k * T,
                   t->eval_group + k);
    epar_rng_free(r);
    task_source(c, t->source, sizeof t->source);
    return EPAR_OK;
}

static void synth_train_batch(struct epar_task *t, gsl_rng *r, int B, int *tok, int *tgt, float *mask)
{
    int T = t->cfg.length, g;
    for (int b = 0; b < B; b++)
        synth_fill(t, r, -1, tok + (size_t)b * T, tgt + (size_t)b * T, mask + (size_t)b * T, &g);
}

static long synth_eval_count(const struct epar_task *t) { return t->cfg.eval_sequences; }

static void synth_eval_item(const struct epar_task *t, long k, int *tok, int *tgt, float *mask)
{
    size_t T = (size_t)t->cfg.length;
    memcpy(tok, t->eval_tok + k * T, T * sizeof *tok);
    memcpy(tgt, t->eval_tgt + k * T, T * sizeof *tgt);
    memcpy(mask, t->eval_mask + k * T, T * sizeof *mask);
}

/* ------------------------------------------------------------------------------------------------ */
/* the registry                                                                                       */

#define SYNTH(name, seqfn, vocabfn) synth_open, synth_train_batch, synth_eval_count, synth_eval_item, seqfn, vocabfn
const struct epar_task_info epar_task_table[EPAR_TASK_COUNT] = {
    [EPAR_TASK_LM] = {"lm", "bpc", 0, "character-level language modelling, bits per character on the held-out 10 %",
                      lm_open, lm_train_batch, lm_eval_count, lm_eval_item, NULL, NULL},
    [EPAR_TASK_RECALL] = {"recall", "accuracy", 1, "multi-query associative recall, accuracy of the answers",
                          SYNTH(recall, recall_sequence, recall_vocab)},
    [EPAR_TASK_NEEDLE] = {"needle", "accuracy", 1, "facts at a controlled distance before their questions",
                          SYNTH(needle, needle_sequence, recall_vocab)},
    [EPAR_TASK_TRANSDUCE] = {"transduce", "accuracy", 1, "a source, a separator, then its reversal",
                             SYNTH(transduce, transduce_sequence, transduce_vocab)},
    [EPAR_TASK_CLASSIFY] = {"classify", "accuracy", 1, "one label per sequence: the majority symbol",
                            SYNTH(classify, classify_sequence, classify_vocab)},
    [EPAR_TASK_SELECT] = {"select", "accuracy", 1, "copy the marked symbols of a long sequence in order",
                          SYNTH(select, select_sequence, select_vocab)},
    [EPAR_TASK_SET] = {"set", "accuracy", 1, "order-free answer: the count of a queried item",
                       SYNTH(set, set_sequence, set_vocab)},
};
#undef SYNTH
_Static_assert(sizeof epar_task_table / sizeof epar_task_table[0] == EPAR_TASK_COUNT, "one row per task");

int epar_task_find(const char *name, enum epar_task_id *id)
{
    for (int k = 0; k < EPAR_TASK_COUNT; k++)
        if (!strcmp(name, epar_task_table[k].id)) {
            *id = (enum epar_task_id)k;
            return EPAR_OK;
        }
    epar_err_set(EPAR_EINVAL, "unknown task '%s'", name);
    struct epar_nearest near;
    epar_nearest_init(&near, name);
    for (int k = 0; k < EPAR_TASK_COUNT; k++) epar_nearest_add(&near, epar_task_table[k].id);
    if (near.best) epar_err_hint("did you mean %s? (tasks: %s)", epar_nearest_text(&near, ""), epar_task_list());
    else epar_err_hint("tasks: %s", epar_task_list());
    return EPAR_EINVAL;
}

static char task_list[256];

static void fill_task_list(void)
{
    for (int k = 0; k < EPAR_TASK_COUNT; k++) {
        size_t n = strlen(task_list);
        snprintf(task_list + n, sizeof task_list - n, "%s%s", k ? ", " : "", epar_task_table[k].id);
    }
}

const char *epar_task_list(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fill_task_list);
    return task_list;
}

const char *epar_task_name(enum epar_task_id id) { return id >= 0 && id < EPAR_TASK_COUNT ? epar_task_table[id].id : "?"; }

/* ------------------------------------------------------------------------------------------------ */
/* the task options (tasks.h): every reader's rows, defaults and help come from here                   */

#define OPT(m) offsetof(struct epar_task_cfg, m)
#define LM EPAR_TASK_BIT(EPAR_TASK_LM)
#define RECALL EPAR_TASK_BIT(EPAR_TASK_RECALL)
#define NEEDLE EPAR_TASK_BIT(EPAR_TASK_NEEDLE)
#define SELECT EPAR_TASK_BIT(EPAR_TASK_SELECT)
#define SET EPAR_TASK_BIT(EPAR_TASK_SET)
#define TRAIN EPAR_TASK_OPT_TRAIN
#define BENCH EPAR_TASK_OPT_BENCH
#define COND EPAR_TASK_OPT_CONDITION
const struct epar_task_option epar_task_options[] = {
    {.f = {.key = "text", .type = EPAR_FIELD_STRING, .offset = OPT(text_path),
           .help = "lm: train on this UTF-8 file instead of the King James Bible"},
     .tasks = LM, .use = TRAIN, .arg = "FILE"},
    {.f = {.key = "holdout", .type = EPAR_FIELD_DOUBLE, .offset = OPT(holdout), .flags = EPAR_FIELD_POSITIVE, .def = 0.1,
           .help = "lm: share of the text held out at its end"},
     .tasks = LM, .use = TRAIN, .arg = "X"},
    {.f = {.key = "pairs", .type = EPAR_FIELD_INT, .offset = OPT(pairs), .lo = 1, .hi = 1 << 20, .def = 8,
           .help = "recall, needle: facts (key-value pairs, one token each) per sequence; select: data symbols"},
     .tasks = RECALL | NEEDLE | SELECT, .use = TRAIN | BENCH, .arg = "N"},
    {.f = {.key = "queries", .type = EPAR_FIELD_INT, .offset = OPT(queries), .lo = 0, .hi = 1 << 20, .def = 0,
           .help = "recall: questions per sequence on distinct facts, 0 = as many as pairs"},
     .tasks = RECALL, .use = TRAIN | BENCH, .arg = "N"},
    /* the benchmark's tasks have started from fewer keys and values (bench_def) since its first grid; its cells record
     * them (task_options), so another default would make every finished cell one of another configuration */
    {.f = {.key = "keys", .type = EPAR_FIELD_INT, .offset = OPT(keys), .lo = 1, .hi = 1 << 20, .def = 64,
           .help = "recall, needle: size of the key vocabulary; set: items"},
     .tasks = RECALL | NEEDLE | SET, .use = TRAIN | BENCH, .arg = "N", .bench_def = 32},
    {.f = {.key = "values", .type = EPAR_FIELD_INT, .offset = OPT(values), .lo = 1, .hi = 1 << 20, .def = 64,
           .help = "recall, needle: values; transduce, select: symbols; classify: classes; set: largest count"},
     .tasks = EPAR_TASK_SYNTHETIC, .use = TRAIN | BENCH, .arg = "N", .bench_def = 32},
    /* the benchmark sizes the evaluation set from its budget (and a task's own "eval_sequences", benchmark.c) */
    {.f = {.key = "eval_sequences", .type = EPAR_FIELD_INT, .offset = OPT(eval_sequences), .lo = 1, .hi = 1000000,
           .def = 512, .help = "synthetic tasks: size of the fixed evaluation set"},
     .tasks = EPAR_TASK_SYNTHETIC, .use = TRAIN, .arg = "N"},
    {.f = {.key = "train_sequences", .type = EPAR_FIELD_INT, .offset = OPT(train_sequences), .lo = 0, .hi = 10000000,
           .flags = EPAR_FIELD_ZERO_OMIT, .def = 0,
           .help = "size of the training pool (low resource): 0 = a fresh draw every batch, N = N fixed sequences"},
     .tasks = EPAR_TASK_ALL, .use = TRAIN | BENCH, .arg = "N"},
    /* the conditions: the benchmark's tasks set them; train records them with the data, not as its settings */
    {.f = {.key = "noise", .type = EPAR_FIELD_DOUBLE, .offset = OPT(noise), .flags = EPAR_FIELD_NONNEG, .def = 0,
           .help = "synthetic tasks: share of the unscored input tokens replaced by random ones"},
     .tasks = EPAR_TASK_SYNTHETIC, .use = BENCH | COND, .arg = "X"},
    {.f = {.key = "shuffle", .type = EPAR_FIELD_BOOL, .offset = OPT(shuffle), .def = 0,
           .help = "lm: the words of every line shuffled (one fixed permutation)"},
     .tasks = LM, .use = BENCH | COND},
    {.f = {0}}};
#undef OPT
#undef LM
#undef RECALL
#undef NEEDLE
#undef SELECT
#undef SET
#undef TRAIN
#undef BENCH
#undef COND
_Static_assert(sizeof epar_task_options / sizeof epar_task_options[0] <= EPAR_TASK_MAX_OPTIONS + 1,
               "EPAR_TASK_MAX_OPTIONS rows at most: the readers size their row arrays by it");

int epar_task_option_rows(unsigned use, unsigned tasks, size_t base, struct epar_field *rows, int max)
{
    int n = 0;
    for (const struct epar_task_option *o = epar_task_options; o->f.key && n < max - 1; o++)
        if ((o->use & use) && (o->tasks & tasks)) {
            rows[n] = o->f;
            rows[n++].offset += base;
        }
    rows[n] = (struct epar_field){0};
    return n;
}

void epar_task_cfg_default_for(struct epar_task_cfg *c, enum epar_task_id id, unsigned use)
{
    struct epar_field rows[EPAR_TASK_MAX_OPTIONS + 1];
    int n = 0;
    for (const struct epar_task_option *o = epar_task_options; o->f.key; o++) {
        rows[n] = o->f;
        if (use == EPAR_TASK_OPT_BENCH && o->bench_def != 0) rows[n].def = o->bench_def;
        n++;
    }
    rows[n] = (struct epar_field){0};
    memset(c, 0, sizeof *c);
    c->id = id;
    c->length = 64;
    c->seed = 42;
    epar_fields_defaults(rows, c);
}

void epar_task_cfg_default(struct epar_task_cfg *c, enum epar_task_id id) { epar_task_cfg_default_for(c, id, 0); }

int epar_task_validate(const struct epar_task_cfg *c)
{
    if (c->id < 0 || c->id >= EPAR_TASK_COUNT) return epar_err_set(EPAR_EINVAL, "unknown task id %d", (int)c->id);
    if (c->length < 2) return epar_err_set(EPAR_EINVAL, "length must be >= 2, got '%d'", c->length);
    const char *name = epar_task_name(c->id);
    if (c->train_sequences < 0 || c->train_sequences > 10000000)
        return epar_err_set(EPAR_EINVAL, "train_sequences must be in [0, 10000000] (0: a fresh draw every time), got '%d'",
                            c->train_sequences);
    if (c->id == EPAR_TASK_LM) {
        if (!(c->holdout > 0 && c->holdout < 1))
            return epar_err_set(EPAR_EINVAL, "holdout must be in (0, 1), got '%g'", c->holdout);
        if (c->noise != 0) return epar_err_set(EPAR_EINVAL, "noise applies to the synthetic tasks, not lm (got '%g')", c->noise);
        return EPAR_OK;
    }
    if (c->shuffle) return epar_err_set(EPAR_EINVAL, "shuffle applies to lm only, not '%s'", name);
    if (!(c->noise >= 0 && c->noise < 1)) return epar_err_set(EPAR_EINVAL, "noise must be in [0, 1), got '%g'", c->noise);
    if (c->eval_sequences < 1 || c->eval_sequences > 1000000)
        return epar_err_set(EPAR_EINVAL, "eval_sequences must be in [1, 1000000], got '%d'", c->eval_sequences);
    if (c->values < 1) return epar_err_set(EPAR_EINVAL, "values must be >= 1, got '%d'", c->values);
    if (c->keys > MAX_VOCAB || c->values > MAX_VOCAB || c->pairs > MAX_VOCAB)
        return epar_err_set(EPAR_EINVAL, "keys, values and pairs must be at most %d", MAX_VOCAB);
    switch (c->id) {
    case EPAR_TASK_TRANSDUCE:
        if (c->length < 3) return epar_err_set(EPAR_EINVAL, "transduce needs length >= 3, got '%d'", c->length);
        return EPAR_OK;
    case EPAR_TASK_CLASSIFY:
        if (c->values < 2) return epar_err_set(EPAR_EINVAL, "classify needs values (classes) >= 2, got '%d'", c->values);
        return EPAR_OK;
    case EPAR_TASK_SELECT:
        if (c->pairs < 1) return epar_err_set(EPAR_EINVAL, "select needs pairs (marked symbols) >= 1, got '%d'", c->pairs);
        if (2L * c->pairs + 1 > c->length) {
            epar_err_set(EPAR_EINVAL, "select with %d marked symbols needs length >= %ld, got '%d'", c->pairs,
                         2L * c->pairs + 1, c->length);
            epar_err_hint("raise --length or lower --pairs");
            return EPAR_EINVAL;
        }
        return EPAR_OK;
    case EPAR_TASK_SET:
        if (c->keys < 1) return epar_err_set(EPAR_EINVAL, "set needs keys (items) >= 1, got '%d'", c->keys);
        if ((long)c->keys * c->values > c->length - 2) {
            epar_err_set(EPAR_EINVAL, "set with %d items present up to %d times needs length >= %ld, got '%d'", c->keys,
                         c->values, (long)c->keys * c->values + 2, c->length);
            epar_err_hint("raise --length or lower --keys / --values");
            return EPAR_EINVAL;
        }
        return EPAR_OK;
    default: break;
    }
    if ((long)c->keys * c->values + c->keys + 2L * c->values + 1 > MAX_VOCAB) {
        epar_err_set(EPAR_EINVAL, "%s with %d keys and %d values needs a vocabulary over %d tokens (one per fact: keys x values)",
                     name, c->keys, c->values, MAX_VOCAB);
        epar_err_hint("lower --keys or --values");
        return EPAR_EINVAL;
    }
    if (c->id == EPAR_TASK_NEEDLE) {
        if (c->pairs < 1 || c->keys < c->pairs)
            return epar_err_set(EPAR_EINVAL, "needle needs 1 <= pairs <= keys (distinct keys), got pairs '%d' and keys '%d'",
                                c->pairs, c->keys);
        if (3L * c->pairs > c->length) {
            epar_err_set(EPAR_EINVAL, "needle with %d facts needs length >= %ld, got '%d'", c->pairs, 3L * c->pairs, c->length);
            epar_err_hint("raise --length or lower --pairs");
            return EPAR_EINVAL;
        }
        return EPAR_OK;
    }
    int Q = recall_queries(c);
    if (c->pairs < 1) return epar_err_set(EPAR_EINVAL, "pairs must be >= 1, got '%d'", c->pairs);
    if (c->queries < 0) return epar_err_set(EPAR_EINVAL, "queries must be >= 0 (0: as many as pairs), got '%d'", c->queries);
    if (c->queries > c->pairs)
        return epar_err_set(EPAR_EINVAL, "recall asks distinct facts: queries must be <= pairs (%d), got '%d'", c->pairs,
                            c->queries);
    if (c->keys < c->pairs)
        return epar_err_set(EPAR_EINVAL, "recall needs at least as many keys as pairs, got keys '%d' and pairs '%d'",
                            c->keys, c->pairs);
    if ((long)c->pairs + 2L * Q > c->length) {
        epar_err_set(EPAR_EINVAL, "recall with %d pairs and %d queries needs length >= %ld, got '%d'", c->pairs, Q,
                     (long)c->pairs + 2L * Q, c->length);
        epar_err_hint("raise --length or lower --pairs");
        return EPAR_EINVAL;
    }
    return EPAR_OK;
}

static int open_pool(struct epar_task *t);

int epar_task_open(struct epar_task *t, const struct epar_task_cfg *c)
{
    memset(t, 0, sizeof *t);
    int st = epar_task_validate(c);
    if (st) return st;
    t->cfg = *c;
    t->info = &epar_task_table[c->id];
    if (!(st = t->info->open(t)) && c->train_sequences > 0) st = open_pool(t);
    if (st) epar_task_close(t);
    return st;
}

void epar_task_close(struct epar_task *t)
{
    lm_text_put(t->text);
    t->text = NULL;
    free(t->eval_tok); free(t->eval_tgt); free(t->eval_mask); free(t->perm);
    free(t->slots); free(t->eval_group); free(t->counts); free(t->pool_tok); free(t->pool_tgt); free(t->pool_mask);
    t->pool_tok = t->pool_tgt = NULL;
    t->pool_mask = NULL;
    t->ids = NULL;
    t->eval_tok = t->eval_tgt = t->slots = t->eval_group = t->counts = NULL;
    t->chars = NULL;
    t->eval_mask = NULL;
    t->perm = NULL;
}

void epar_task_train_batch(struct epar_task *t, gsl_rng *r, int B, int *tok, int *tgt, float *mask)
{
    if (!t->pool_tok) {
        t->info->train_batch(t, r, B, tok, tgt, mask);
        return;
    }
    size_t T = (size_t)t->cfg.length;
    for (int b = 0; b < B; b++) {
        size_t k = gsl_rng_uniform_int(r, (unsigned long)t->cfg.train_sequences);
        memcpy(tok + b * T, t->pool_tok + k * T, T * sizeof *tok);
        memcpy(tgt + b * T, t->pool_tgt + k * T, T * sizeof *tgt);
        memcpy(mask + b * T, t->pool_mask + k * T, T * sizeof *mask);
    }
}

/* the low-resource pool (train_sequences N > 0): N training draws of the task from stream (seed, 2, EPAR_RNG_EXTRA),
 * the same for every mechanism of a seed */
static int open_pool(struct epar_task *t)
{
    size_t n = (size_t)t->cfg.train_sequences * t->cfg.length;
    t->pool_tok = epar_err_alloc(n, sizeof *t->pool_tok, "the training pool");
    t->pool_tgt = epar_err_alloc(n, sizeof *t->pool_tgt, "the training pool");
    t->pool_mask = epar_err_alloc(n, sizeof *t->pool_mask, "the training pool");
    gsl_rng *r = epar_rng_alloc(t->cfg.seed, 2, EPAR_RNG_EXTRA);
    if (!t->pool_tok || !t->pool_tgt || !t->pool_mask || !r) {
        gsl_rng_free(r);
        return epar_err_set(EPAR_ENOMEM, "out of memory drawing the training pool of %d sequences", t->cfg.train_sequences);
    }
    t->info->train_batch(t, r, t->cfg.train_sequences, t->pool_tok, t->pool_tgt, t->pool_mask);
    gsl_rng_free(r);
    return EPAR_OK;
}

long epar_task_eval_count(const struct epar_task *t) { return t->info->eval_count(t); }

long epar_task_pool_count(const struct epar_task *t) { return t->pool_tok ? t->cfg.train_sequences : 0; }

void epar_task_pool_item(const struct epar_task *t, long k, int *tok, int *tgt, float *mask)
{
    size_t T = (size_t)t->cfg.length;
    memcpy(tok, t->pool_tok + k * T, T * sizeof *tok);
    memcpy(tgt, t->pool_tgt + k * T, T * sizeof *tgt);
    memcpy(mask, t->pool_mask + k * T, T * sizeof *mask);
}

void epar_task_eval_item(const struct epar_task *t, long k, int *tok, int *tgt, float *mask)
{
    t->info->eval_item(t, k, tok, tgt, mask);
}

int epar_task_eval_group(const struct epar_task *t, long k) { return t->eval_group ? t->eval_group[k] : 0; }

double epar_task_metric(const struct epar_task *t, double loss, long correct, long scored)
{
    if (t->cfg.id == EPAR_TASK_LM) return loss / log(2.0);
    return scored > 0 ? (double)correct / (double)scored : NAN;
}

void epar_task_chance(const struct epar_task *t, const long *counts, int V, double *value, double *se)
{
    long n = 0, top = 0;
    for (int v = 0; v < V; v++) {
        n += counts[v];
        if (counts[v] > top) top = counts[v];
    }
    *value = *se = NAN;
    if (n == 0) return;
    if (t->cfg.id != EPAR_TASK_LM) {   /* accuracy: one most frequent answer, right on a share p of the tokens */
        double p = (double)top / (double)n;
        *value = epar_task_metric(t, NAN, top, n);
        *se = sqrt(p * (1.0 - p) / (double)n);
        return;
    }
    /* bits: per token -log2 (c_v / n); its mean is the entropy of the counts */
    double mean = 0.0, var = 0.0;
    for (int v = 0; v < V; v++)
        if (counts[v] > 0) mean += (double)counts[v] * -log2((double)counts[v] / (double)n);
    mean /= (double)n;
    for (int v = 0; v < V; v++)
        if (counts[v] > 0) {
            double f = -log2((double)counts[v] / (double)n) - mean;
            var += (double)counts[v] * f * f;
        }
    *value = epar_task_metric(t, mean * log(2.0), 0, n);   /* the task's metric of a loss in nats: bpc */
    *se = sqrt(var / (double)n / (double)n);
}

json_t *epar_task_json(const struct epar_task *t)
{
    const struct epar_task_cfg *c = &t->cfg;
    json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:i}", "task", t->info->id, "metric", t->info->metric, "source",
                          t->source, "vocabulary", t->V, "length", c->length);
    if (!j) return NULL;
    if (c->id == EPAR_TASK_LM) {
        json_object_set_new(j, "characters", json_integer(t->n_text));
        json_object_set_new(j, "train_characters", json_integer(t->n_train));
        json_object_set_new(j, "heldout_characters", json_integer(t->n_text - t->n_train));
        json_object_set_new(j, "holdout", json_real(c->holdout));
        json_object_set_new(j, "eval_windows", json_integer(lm_eval_count(t)));
        json_object_set_new(j, "shuffle", json_boolean(c->shuffle));
    } else {
        json_object_set_new(j, "pairs", json_integer(c->pairs));
        json_object_set_new(j, "queries", json_integer(recall_queries(c)));
        json_object_set_new(j, "keys", json_integer(c->keys));
        json_object_set_new(j, "values", json_integer(c->values));
        json_object_set_new(j, "eval_sequences", json_integer(c->eval_sequences));
        json_object_set_new(j, "noise", json_real(c->noise));
    }
    if (c->train_sequences > 0) json_object_set_new(j, "train_sequences", json_integer(c->train_sequences));
    return j;
}

/* ------------------------------------------------------------------------------------------------ */
/* inspection: what a token shows as, a text as tokens, the positions an answer depends on             */

/* UTF-8 of one code point into buf (at least 5 bytes) */
static void utf8_put(uint32_t c, char *buf)
{
    unsigned char *b = (unsigned char *)buf;
    if (c < 0x80) { b[0] = (unsigned char)c; b[1] = 0; }
    else if (c < 0x800) { b[0] = (unsigned char)(0xc0 | c >> 6); b[1] = (unsigned char)(0x80 | (c & 0x3f)); b[2] = 0; }
    else if (c < 0x10000) {
        b[0] = (unsigned char)(0xe0 | c >> 12); b[1] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
        b[2] = (unsigned char)(0x80 | (c & 0x3f)); b[3] = 0;
    } else {
        b[0] = (unsigned char)(0xf0 | c >> 18); b[1] = (unsigned char)(0x80 | (c >> 12 & 0x3f));
        b[2] = (unsigned char)(0x80 | (c >> 6 & 0x3f)); b[3] = (unsigned char)(0x80 | (c & 0x3f)); b[4] = 0;
    }
}

/* a symbol of an alphabet of n: a letter when n <= 26, else s<k> */
static void alpha_symbol(int k, int n, char *buf, size_t len)
{
    if (n <= 26) snprintf(buf, len, "%c", 'a' + k);
    else snprintf(buf, len, "s%d", k);
}

void epar_task_symbol(const struct epar_task *t, int id, char *buf, size_t n)
{
    const struct epar_task_cfg *c = &t->cfg;
    int K = c->keys, Vv = c->values;
    if (id < 0 || id >= t->V) { snprintf(buf, n, "?%d", id); return; }
    switch (c->id) {
    case EPAR_TASK_LM: {
        uint32_t u = t->chars[id];
        char s[8];
        /* blanks and control characters as visible symbols: space ␣, newline ⏎, tab ⇥, others U+2400 + c */
        u = u == ' ' ? 0x2423 : u == '\n' ? 0x23ce : u == '\t' ? 0x21e5 : u < 0x20 ? 0x2400 + u : u == 0x7f ? 0x2421 : u;
        utf8_put(u, s);
        snprintf(buf, n, "%s", s);
        return;
    }
    case EPAR_TASK_RECALL:
    case EPAR_TASK_NEEDLE:
        if (id == 0) snprintf(buf, n, "_");
        else if (id <= K * Vv) snprintf(buf, n, "k%d:v%d", (id - 1) / Vv, (id - 1) % Vv);
        else if (id <= K * Vv + K) snprintf(buf, n, "k%d?", id - 1 - K * Vv);
        else snprintf(buf, n, "=v%d", id - 1 - K * Vv - K);
        return;
    case EPAR_TASK_TRANSDUCE:
    case EPAR_TASK_CLASSIFY:
        if (id == 0) snprintf(buf, n, "_");
        else if (id == 1) snprintf(buf, n, c->id == EPAR_TASK_TRANSDUCE ? "|" : "[CLS]");
        else alpha_symbol(id - 2, Vv, buf, n);
        return;
    case EPAR_TASK_SELECT:
        if (id == 0) snprintf(buf, n, "_");
        else if (id == 1) snprintf(buf, n, "|");
        else if (id == 2) snprintf(buf, n, "~");
        else alpha_symbol(id - 3, Vv, buf, n);
        return;
    case EPAR_TASK_SET:
        if (id == 0) snprintf(buf, n, "_");
        else if (id <= K) snprintf(buf, n, "i%d", id - 1);
        else if (id <= K + Vv + 1) snprintf(buf, n, "#%d", id - K - 1);
        else snprintf(buf, n, "[S]");
        return;
    default: snprintf(buf, n, "%d", id);
    }
}

/* lm: every character of the text must be in the vocabulary (t->chars is ascending) */
static int parse_chars(const struct epar_task *t, const char *text, int *tok, int max, int *count)
{
    size_t len = strlen(text), bad = 0;
    uint32_t *cp = epar_err_alloc(len ? len : 1, sizeof *cp, "the text");
    if (!cp) return EPAR_ENOMEM;
    long n = utf8_decode((const unsigned char *)text, len, cp, &bad);
    int st = EPAR_OK;
    if (n < 0) st = epar_err_set(EPAR_EINVAL, "the text is not UTF-8 (bad byte sequence at offset %zu)", bad);
    else if (n > max) st = epar_err_set(EPAR_EINVAL, "the text has %ld characters; the model reads at most %d", n, max);
    for (long i = 0; !st && i < n; i++) {
        int lo = 0, hi = t->V - 1;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (t->chars[mid] < cp[i]) lo = mid + 1;
            else hi = mid;
        }
        if (t->chars[lo] != cp[i]) {
            char s[8];
            utf8_put(cp[i], s);
            st = epar_err_set(EPAR_EINVAL, "character '%s' (U+%04X) at position %ld is not in the model's vocabulary",
                              cp[i] < 0x20 ? "?" : s, (unsigned)cp[i], i);
        }
        tok[i] = lo;
    }
    if (!st) *count = (int)n;
    free(cp);
    return st;
}

int epar_task_parse_text(const struct epar_task *t, const char *text, int *tok, int max, int *count)
{
    if (t->cfg.id == EPAR_TASK_LM) return parse_chars(t, text, tok, max, count);
    int n = 0;
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == ',') p++;
        if (!*p) break;
        size_t len = strcspn(p, " \t\n,");
        char word[64], sym[64];
        if (len >= sizeof word) return epar_err_set(EPAR_EINVAL, "token %d of the text is too long: '%.20s...'", n, p);
        memcpy(word, p, len);
        word[len] = '\0';
        p += len;
        if (n >= max) return epar_err_set(EPAR_EINVAL, "the text has more than %d tokens, the model's length", max);
        int id = -1;
        char *end;
        long v = strtol(word, &end, 10);
        if (word[0] >= '0' && word[0] <= '9' && !*end) id = v < t->V ? (int)v : -2;   /* a token id */
        for (int k = 0; id == -1 && k < t->V; k++) {
            epar_task_symbol(t, k, sym, sizeof sym);
            if (!strcmp(sym, word)) id = k;
        }
        if (id < 0) {
            epar_err_set(EPAR_EINVAL, "token '%s' (%d of the text) is not a symbol of task %s", word, n, t->info->id);
            epar_err_hint("write the tokens as tokens.csv shows them (e.g. --item 0), separated by spaces, or their ids");
            return EPAR_EINVAL;
        }
        tok[n++] = id;
    }
    if (n == 0) return epar_err_set(EPAR_EINVAL, "the text has no tokens");
    *count = n;
    return EPAR_OK;
}

/* classify: the class(es) most frequent among tok[0 .. q-1] */
static void relevant_majority(const int *tok, int q, int V, int *cnt, unsigned char *row)
{
    int top = 0;
    for (int k = 0; k < V; k++) cnt[k] = 0;
    for (int j = 0; j < q; j++)
        if (tok[j] >= 2 && ++cnt[tok[j]] > top) top = cnt[tok[j]];
    for (int j = 0; top > 0 && j < q; j++) row[j] = tok[j] >= 2 && cnt[tok[j]] == top;
}

/* the i-th position before n holding a token >= first (select's data symbols), -1 if none */
static int nth_at_least(const int *tok, int n, int first, int i)
{
    for (int j = 0; j < n; j++)
        if (tok[j] >= first && i-- == 0) return j;
    return -1;
}

static int first_of(const int *tok, int T, int id)
{
    for (int j = 0; j < T; j++)
        if (tok[j] == id) return j;
    return -1;
}

int epar_task_relevant(const struct epar_task *t, const int *tok, int T, unsigned char *rel, int *scratch)
{
    const struct epar_task_cfg *c = &t->cfg;
    int K = c->keys, Vv = c->values, sep = first_of(tok, T, 1);
    memset(rel, 0, (size_t)T * T);
    for (int q = 0; q < T; q++) {
        unsigned char *row = rel + (size_t)q * T;
        switch (c->id) {
        case EPAR_TASK_RECALL:
        case EPAR_TASK_NEEDLE:   /* a question "k?": the fact of key k */
            if (tok[q] > K * Vv && tok[q] <= K * Vv + K)
                for (int j = 0; j < q; j++) row[j] = tok[j] >= 1 && tok[j] <= K * Vv && (tok[j] - 1) / Vv == tok[q] - 1 - K * Vv;
            break;
        case EPAR_TASK_TRANSDUCE:   /* position sep + i predicts the source symbol sep - 1 - i */
            if (sep >= 0 && q >= sep && q + 1 < T && sep - 1 - (q - sep) >= 0) row[sep - 1 - (q - sep)] = 1;
            break;
        case EPAR_TASK_CLASSIFY:   /* CLS: the positions of the majority class */
            if (tok[q] == 1) relevant_majority(tok, q, t->V, scratch, row);
            break;
        case EPAR_TASK_SELECT: {   /* position sep + i predicts the i-th data symbol */
            int j = sep >= 0 && q >= sep ? nth_at_least(tok, sep, 3, q - sep) : -1;
            if (j >= 0) row[j] = 1;
            break;
        }
        case EPAR_TASK_SET:   /* the query (last position, an item): the places of that item */
            if (q == T - 1 && tok[q] >= 1 && tok[q] <= K)
                for (int j = 0; j < q; j++) row[j] = tok[j] == tok[q];
            break;
        default: break;
        }
    }
    int rows = 0;
    for (int q = 0; q < T; q++) {
        int any = 0;
        for (int j = 0; j <= q; j++) any |= rel[(size_t)q * T + j];
        rows += any;
    }
    return rows;
}
