/* tasks: what `epar train` trains on. Each task yields sequences as (tokens, targets, loss mask), a training
 * batch from a seeded random stream (so a batch is reproducible and a resumed run draws the same batches),
 * and a fixed evaluation set.
 *
 *   id       data                                                       metric (eval set)
 *   lm       character-level language modelling of a text: the King     bits per character = mean
 *            James Bible (Debian bible-kjv, read through its `bible`    cross-entropy / ln 2 on the
 *            program, verse references stripped, one verse per line)    held-out last 10 %
 *            or any UTF-8 file (--text); tokens = the distinct
 *            characters (Unicode code points) of the whole text
 *   recall   multi-query associative recall: N facts (a key-value pair    accuracy of the answers
 *            bound in one token), then Q questions (a key, then its     (argmax = the value) on a
 *            answer) at random places of the rest, pads between; only   fixed set of sequences
 *            the answers are scored
 *   needle   `pairs` facts (a key-value pair bound in one token) in a     accuracy of the answers, and
 *            block at distance d before their questions, pads           per distance d (eval items
 *            elsewhere; training draws d in [1, T - 3 pairs + 1]         spread evenly over d)
 *   transduce source symbols, a separator, then the source reversed;    accuracy of the reversed
 *            every token of the reversal is scored                      tokens
 *   classify T-1 symbols then a CLS token; the label is the symbol in   accuracy of the label
 *            the (unique) majority
 *   select   `pairs` data symbols at random places among noise tokens,  accuracy of the copied
 *            a separator, then the data symbols in order               symbols
 *   set      a start token, items 1..keys each present 0..values times  accuracy of the count
 *            at random places, then a query item: the answer is its
 *            count (order-free)
 * Conditions (any task but lm: `noise`, lm only: `shuffle`): noise replaces each input token that is not
 * itself scored by a uniform random token with probability noise (targets stay the clean answers);
 * shuffle permutes the words of every line of the text (one fixed permutation, the same for every seed:
 * stream (0, 2, EPAR_RNG_EXTRA)), so characters within a word keep their order and word order is lost.
 *
 * Adding a task: one enum value before EPAR_TASK_COUNT, one row in epar_task_table (tasks.c) with its
 * functions (open, train batch, eval item); a new option is a member of struct epar_task_cfg and one row of
 * epar_task_options (tasks.c), and nothing else: the readers below take it from there.
 * Legend: B batch, T sequence length. Arrays are row-major (B, T). */
#ifndef EPAR_TASKS_H
#define EPAR_TASKS_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <gsl/gsl_rng.h>
#include "protocol.h"

enum epar_task_id {
    EPAR_TASK_LM = 0, EPAR_TASK_RECALL, EPAR_TASK_NEEDLE, EPAR_TASK_TRANSDUCE, EPAR_TASK_CLASSIFY, EPAR_TASK_SELECT,
    EPAR_TASK_SET, EPAR_TASK_COUNT
};

/* A task's settings: id, length and seed (the run's), the cache, and the options, whose keys, ranges, defaults and
 * help are rows of epar_task_options (below), not written here. */
struct epar_task_cfg {
    enum epar_task_id id;
    int length;                 /* T */
    unsigned long seed;         /* the evaluation set of recall is drawn from (seed, 1, EPAR_RNG_EXTRA) */
    /* lm */
    const char *text_path;      /* NULL: the King James Bible from bible-kjv */
    const char *cache_dir;      /* where the stripped Bible text is cached (kjv.txt) */
    double holdout;             /* share of the text held out at its end */
    /* recall */
    int pairs;                  /* N key-value pairs */
    int queries;                /* Q queries (<= N: distinct keys; 0: Q = N) */
    int keys, values;           /* sizes of the key and value vocabularies */
    int eval_sequences;         /* size of the fixed evaluation set */
    int train_sequences;        /* every task: 0 = a fresh training sequence every draw (lm: a random window); N > 0 =
                                 * a fixed pool of N training sequences (the low-resource setting), drawn once from
                                 * stream (seed, 2, EPAR_RNG_EXTRA), batches sampled from it with replacement */
    /* conditions */
    double noise;               /* synthetic tasks: share of unscored input tokens replaced at random */
    int shuffle;                /* lm: 1 = words of every line shuffled */
};

/* ---- the task options: one table ----
 * Every option of struct epar_task_cfg is one row of epar_task_options (tasks.c): its key, C type and place, range,
 * default and help (a field row, lib/protocol.h), the tasks whose data it changes, and who reads it. The train
 * section's task objects (experiments.train.<task>) and run.json's task_options, `epar train`'s options and their
 * --help (so the manual page and the completions, cmd/docgen.c), the benchmark's task keys and the conditions its
 * cells record are made from these rows, and epar_task_cfg_default sets their defaults: a key, a default or a help
 * text is written here once. A help text holds no default: whoever shows one prints the row's def. */
#define EPAR_TASK_BIT(id) (1u << (id))
#define EPAR_TASK_ALL ((1u << EPAR_TASK_COUNT) - 1u)
#define EPAR_TASK_SYNTHETIC (EPAR_TASK_ALL & ~EPAR_TASK_BIT(EPAR_TASK_LM))

/* who reads an option (a row's use) */
#define EPAR_TASK_OPT_TRAIN 1u      /* experiments.train.<task> (and run.json's, a checkpoint's task_options) and the
                                     * command-line option --<key> of epar train ('_' written '-') */
#define EPAR_TASK_OPT_BENCH 2u      /* a task of experiments.benchmark.tasks */
#define EPAR_TASK_OPT_CONDITION 4u  /* a condition of the data: recorded with it (a checkpoint's data section, a
                                     * benchmark cell's configuration) rather than as a setting of train */
#define EPAR_TASK_MAX_OPTIONS 16    /* rows of the table, at most */

struct epar_task_option {
    struct epar_field f;        /* key, type, offset in struct epar_task_cfg, range, def, help (flags: as the readers
                                 * need them, e.g. ZERO_OMIT: run.json writes train_sequences only when set) */
    unsigned tasks;             /* EPAR_TASK_BIT of every task whose data it changes */
    unsigned use;               /* EPAR_TASK_OPT_* */
    const char *arg;            /* the command line's name of its value (N, X, FILE); NULL for a BOOL (a flag) */
    double bench_def;           /* the benchmark's default where it is not def (0: def) */
};
/* the table, in the order run.json and `epar train --help` list the options; ends with a row whose key is NULL */
extern const struct epar_task_option epar_task_options[];
/* The rows of the options read by `use` (any of its bits) for any task of `tasks` (EPAR_TASK_BIT), in the table's
 * order, as rows of a struct that holds a struct epar_task_cfg at byte `base` (0: the task settings themselves), into
 * rows (room for max, the last {0}); returns their count. */
int epar_task_option_rows(unsigned use, unsigned tasks, size_t base, struct epar_field *rows, int max);

struct epar_task;
struct epar_task_info {
    const char *id;
    const char *metric;         /* "bpc" or "accuracy" */
    int higher_is_better;
    const char *summary;
    int (*open)(struct epar_task *t);
    /* tok, tgt, mask (B, T) */
    void (*train_batch)(struct epar_task *t, gsl_rng *r, int B, int *tok, int *tgt, float *mask);
    /* number of evaluation sequences, and sequence k of them: tok, tgt, mask (T) */
    long (*eval_count)(const struct epar_task *t);
    void (*eval_item)(const struct epar_task *t, long k, int *tok, int *tgt, float *mask);
    /* synthetic tasks: one clean sequence (item < 0: a training draw; >= 0: evaluation item `item`, which
     * needle uses to spread the distances) and its group (needle: the distance; others 0); NULL for lm */
    void (*sequence)(struct epar_task *t, gsl_rng *r, long item, int *tok, int *tgt, float *mask, int *group);
    int (*vocab)(const struct epar_task_cfg *c);     /* synthetic tasks: V from the options */
};

struct epar_task {
    struct epar_task_cfg cfg;
    const struct epar_task_info *info;
    int V;                      /* vocabulary size */
    /* lm */
    struct epar_task_text *text; /* the decoded text, shared by the tasks of the process that read it */
    const int *ids;             /* (n_text) token ids of the text */
    long n_text, n_train;       /* characters; the first n_train are for training */
    const uint32_t *chars;      /* (V) the code point of every token id, ascending */
    char source[512];           /* where the text came from */
    /* recall */
    int *eval_tok, *eval_tgt;   /* (eval_sequences, T) */
    float *eval_mask;           /* (eval_sequences, T) */
    size_t *perm;               /* (max(keys, pairs)) scratch of the key draw */
    int *slots;                 /* (T) scratch of the query placement */
    int *eval_group;            /* (eval_sequences) group of each evaluation item (needle: distance), synthetic */
    int *counts;                /* (max(keys, values) + 1) scratch of classify and set */
    int *pool_tok, *pool_tgt;   /* (train_sequences, T) the training pool, or NULL (train_sequences 0) */
    float *pool_mask;
};

extern const struct epar_task_info epar_task_table[EPAR_TASK_COUNT];

int epar_task_find(const char *name, enum epar_task_id *id);
const char *epar_task_name(enum epar_task_id id);
/* "lm, recall, ...": every task id of the table, in its order (for help texts and hints) */
const char *epar_task_list(void);
/* c <- task id at length 64 and seed 42 with every option at its row's def (text: NULL, the Bible) */
void epar_task_cfg_default(struct epar_task_cfg *c, enum epar_task_id id);
/* The same with the defaults a reader starts from: `use` EPAR_TASK_OPT_BENCH (the benchmark's tasks) takes a row's
 * bench_def where it has one, any other use is epar_task_cfg_default. */
void epar_task_cfg_default_for(struct epar_task_cfg *c, enum epar_task_id id, unsigned use);
/* Check the options (EPAR_EINVAL naming the value); reads no file. */
int epar_task_validate(const struct epar_task_cfg *c);
/* Load or generate the data: EPAR_EIO for a missing or unreadable text (the Bible: with the install line
 * as hint), EPAR_EINVAL for a text too short for the length or not UTF-8. */
int epar_task_open(struct epar_task *t, const struct epar_task_cfg *c);
void epar_task_close(struct epar_task *t);
/* B training sequences: the task's fresh draws from r, or (train_sequences N > 0) B picks from its pool of N */
void epar_task_train_batch(struct epar_task *t, gsl_rng *r, int B, int *tok, int *tgt, float *mask);
long epar_task_eval_count(const struct epar_task *t);
/* the training pool (train_sequences > 0): its size (0: none) and sequence k of it (T each) */
long epar_task_pool_count(const struct epar_task *t);
void epar_task_pool_item(const struct epar_task *t, long k, int *tok, int *tgt, float *mask);
void epar_task_eval_item(const struct epar_task *t, long k, int *tok, int *tgt, float *mask);
/* The task's metric from a mean cross-entropy (nats per scored token) and the count of correct argmax
 * predictions: bpc = loss / ln 2, accuracy = correct / scored. */
double epar_task_metric(const struct epar_task *t, double loss, long correct, long scored);
/* The metric of the best constant predictor on a set of scored targets, from their counts (V): the one that
 * always answers the most frequent target (accuracy = its share) and gives every target its frequency as
 * probability (bpc = the entropy of the counts in bits). *value is that metric, *se the standard error of
 * its per-token mean over the n scored targets (the per-token metric's sd / sqrt n): a trained model whose
 * metric is not beyond it by a few se learned nothing a constant answer does not give. NaN when n = 0. */
void epar_task_chance(const struct epar_task *t, const long *counts, int V, double *value, double *se);
/* The largest group a task gives (needle: the largest distance, T - 3 pairs + 1; the others 0): groups run 1..it. */
int epar_task_max_group(const struct epar_task_cfg *c);
/* needle: the position of the first fact of the block at distance d before its questions: T - 3 pairs + 1 - d, in
 * [0, T - 3 pairs] (its depth in the sequence: position / (T - 3 pairs), 0 = the start, 1 = just before the questions) */
int epar_task_needle_position(const struct epar_task_cfg *c, int distance);
/* Group of evaluation item k (needle: its distance; lm and the other tasks: 0). */
int epar_task_eval_group(const struct epar_task *t, long k);
/* What the data is (for run.json): source, vocabulary, sizes. */
json_t *epar_task_json(const struct epar_task *t);

/* The King James Bible as plain text: `bible -f "Gen1:1-Rev22:21"` with the verse references stripped,
 * one verse per line; read from <cache_dir>/kjv.txt when that exists. A text read from `bible` is kept in the
 * process (later calls copy it) and cached only by epar_task_cache_commit, which the command line calls when the
 * command succeeded: a failed command leaves no cache. *text is malloc'ed, NUL-terminated. */
int epar_task_kjv_text(const char *cache_dir, char **text, size_t *len, char *source, size_t source_len);
/* Write what epar_task_kjv_text read from `bible` to <cache_dir>/kjv.txt (atomically; a failure to cache is not an
 * error), and free it. */
void epar_task_cache_commit(void);
/* Strip one line of `bible` output ("Ge1:1 In the beginning ...", "1Sm3:4 ...") to its verse text;
 * returns the offset of the text, or -1 when the line has no reference. */
int epar_task_kjv_strip(const char *line);

/* ---- inspection (epar inspect) ---- */
/* What token id shows as, for tables and figures: lm the character (space as U+2423, newline U+23CE, tab U+21E5,
 * other control characters U+2400 + c); recall and needle "_" pad, "k3:v7" the fact (key 3, value 7), "k3?" the
 * question, "=v7" the answer; transduce "_", "|" separator; classify "_", "[CLS]"; select "_", "|", "~" noise;
 * symbols as letters a.. when the alphabet has at most 26, else s<k>; set "_", items "i<a>", counts "#<c>",
 * the start token "[S]". An id outside the vocabulary is "?<id>". */
void epar_task_symbol(const struct epar_task *t, int id, char *buf, size_t n);
/* A text as tokens tok (at most max): lm its characters (UTF-8; each must be in the vocabulary); the synthetic
 * tasks its symbols as epar_task_symbol writes them, or token ids, separated by spaces or commas.
 * EPAR_EINVAL naming the first token that is not one. */
int epar_task_parse_text(const struct epar_task *t, const char *text, int *tok, int max, int *count);
/* The positions the answer at each position depends on, from the tokens alone: rel (T, T), rel[q T + j] = 1 when
 * key j <= q holds what query q's answer needs: recall, needle: the fact of the questioned key; transduce: the
 * source symbol being reversed; classify: the positions of the majority class (at CLS); select: the data symbol
 * being copied; set: the places of the queried item (at the last position); lm: none. scratch: (V) ints.
 * Returns the number of query positions with at least one such key. */
int epar_task_relevant(const struct epar_task *t, const int *tok, int T, unsigned char *rel, int *scratch);

#endif
