/* What a trained model attends to (issue 24) -> <out>/inspect/<task>-<mechanism>-seed<S>-<item<N> | text-<hash>>/
 *
 * A checkpoint of `epar train` or `epar benchmark` is read (experiments/train: epar_exp_train_load, every byte
 * untrusted), one input is run through the training forward pass (lib/nn epar_nn_forward, batch 1) and its
 * attention weights are read where training keeps them (m->a.att, (NL, B, NH, T, T)): no second attention
 * implementation. From them, per layer and head: the weights of every causal pair, summaries (distance,
 * entropy, previous and first token, the answer-relevant positions of the synthetic tasks), the attention mass
 * by distance beside the EPAR factor P(d), the paper's §4.3 on the trained head (V(i) = sum_j A_ij I_j with I_j the
 * norm of token j's embedding, the input before any position term; pos* = argmax V against argmax I; the
 * consistency family of lib/metrics), heatmaps and a head view page. Prefix epar_inspect_.
 *
 * Legend: NL layers, NH heads, T the input's length, V the vocabulary. Arrays are row-major. */
#ifndef EPAR_EXP_INSPECT_H
#define EPAR_EXP_INSPECT_H

#include "lib/outdir.h"
#include "experiments/train/train.h"

#define EPAR_INSPECT_MAX_SEL 64

/* what to run and what to write */
struct epar_inspect_opts {
    long item;                          /* evaluation item of the task (default 0) ... */
    const char *text;                   /* ... or this text (lm: characters; others: symbols), when not NULL */
    int n_layers, layers[EPAR_INSPECT_MAX_SEL];   /* layers written (n_layers 0: all) */
    int n_heads, heads[EPAR_INSPECT_MAX_SEL];     /* heads written (n_heads 0: all) */
    /* interventions at evaluation (experiments/train/interv; F8, F9): the input's forward runs with them (attention.csv and
     * the rest show the changed weights) and intervention.csv compares the evaluation on interv_items items with and
     * without them */
    const char *mask_heads;             /* "L.H,...": these heads' outputs zeroed (NULL: none) */
    double boost;                       /* > 0: the answer-relevant keys' weights times this in the last layer ... */
    int boost_renorm;                   /* ... as written (0, rows no longer sum to 1) or renormalised (1) */
    long interv_items;                  /* evaluation items of intervention.csv (<= 0: 256 or the whole set; more than the set: an error) */
};

/* the per-head summaries of heads.csv, in its column order after layer and head */
enum {
    EPAR_INSPECT_DISTANCE, EPAR_INSPECT_ENTROPY, EPAR_INSPECT_ENTROPY_UNIFORM, EPAR_INSPECT_PREVIOUS,
    EPAR_INSPECT_FIRST, EPAR_INSPECT_RELEVANT, EPAR_INSPECT_RELEVANT_UNIFORM, EPAR_INSPECT_DIST_SPEARMAN,
    EPAR_INSPECT_ALPHA, EPAR_INSPECT_BETA, EPAR_INSPECT_GAMMA, EPAR_INSPECT_PROFILE_PEARSON,
    EPAR_INSPECT_PROFILE_SPEARMAN, EPAR_INSPECT_POS_STAR, EPAR_INSPECT_POS_ACTUAL, EPAR_INSPECT_CONSISTENCY,
    EPAR_INSPECT_RANKING,
    /* S1's fixed patterns (current, previous, left context, first token: EPAR_INSPECT_PATTERN_*), their best, the
     * largest similarity to another head of the same layer and to a head of another layer, ALiBi's slope m_h */
    EPAR_INSPECT_PAT_CURRENT, EPAR_INSPECT_PAT_PREVIOUS, EPAR_INSPECT_PAT_LEFT, EPAR_INSPECT_PAT_FIRST,
    EPAR_INSPECT_PAT_BEST, EPAR_INSPECT_SIM_LAYER, EPAR_INSPECT_SIM_OTHER, EPAR_INSPECT_SLOPE, EPAR_INSPECT_NSTATS
};

/* S1's fixed attention patterns (001:37-59), in the order of the EPAR_INSPECT_PAT_ columns: current j = i, previous
 * j = i - 1, left context f(j) = (j + 1)^3 / sum_{j' <= i-2} (j' + 1)^3 over j <= i - 2, first token j = 0 */
enum { EPAR_INSPECT_PATTERN_CURRENT, EPAR_INSPECT_PATTERN_PREVIOUS, EPAR_INSPECT_PATTERN_LEFT,
       EPAR_INSPECT_PATTERN_FIRST, EPAR_INSPECT_NPATTERNS };
extern const char *const epar_inspect_pattern_names[EPAR_INSPECT_NPATTERNS];

struct epar_inspect {
    char path[4096];                    /* the checkpoint */
    char name[64];                      /* <task>-<mechanism>-seed<S>: the run */
    char folder[160];                   /* <name>-<input tag>: its output folder (epar_inspect_run) */
    struct epar_train_run run;          /* configuration, task and weights */
    int NL, NH, T;
    int from_text;                      /* 1: --text, 0: an evaluation item */
    long item;                          /* the item (from_text 0) */
    int *tok, *tgt;                     /* (T) the input, and its targets (-1: none) */
    float *mask;                        /* (T) the task's loss mask (text: 0) */
    int *pred;                          /* (T) argmax of the model's output */
    double *p_target;                   /* (T) probability of the target (NaN: none) */
    float *att;                         /* (NL, NH, T, T) attention weights, row i holds keys 0..i */
    unsigned char *rel;                 /* (T, T) answer-relevant keys of each query (epar_task_relevant) */
    int rel_rows;                       /* queries with at least one */
    double *stats;                      /* (NL, NH, EPAR_INSPECT_NSTATS) */
    double *mass;                       /* (NL, NH, T) mean weight at distance d over the queries i >= d */
    double *peff;                       /* (NL, NH, T) the EPAR factor P(d) of the head (NaN: not EPAR) */
    double *sim;                        /* (NL NH, NL NH) epar_inspect_similarity of every pair of heads */
    /* the interventions of the options (interventions 0: none) */
    int interventions;
    unsigned char *head_mask;           /* (NL, NH) the masked heads (NULL: none) */
    struct epar_train_eval interv_base, interv_eval;   /* the evaluation without and with them */
};

/* Read and check checkpoint path (EPAR_EIO for anything a checkpoint of this epar would not hold) and open its
 * task (lm: the text, cached under cache_dir). Nothing is written. */
int epar_inspect_open(struct epar_inspect *x, const char *path, const char *cache_dir);
/* The input (the item or the text: EPAR_EINVAL when it does not fit the model), the forward pass, the
 * attention and every summary; x->folder. */
int epar_inspect_run(struct epar_inspect *x, const struct epar_inspect_opts *o);
/* attention.csv, tokens.csv, heads.csv, profile.csv, one heatmap per layer, head_view.html, inspect.json into o. */
int epar_inspect_write(const struct epar_inspect *x, const struct epar_inspect_opts *o, struct epar_out *out);
/* Several checkpoints: comparison.csv (head-mean attention per checkpoint and layer) and its grid figure. */
int epar_inspect_write_comparison(const struct epar_inspect *xs, int n, const struct epar_inspect_opts *o,
                                  struct epar_out *out);
/* The input's part of the output folder names, so inspecting another input does not replace a folder: "item<N>",
 * or "text-<8 hex digits of the FNV-1a hash of the text>" */
void epar_inspect_input_tag(const struct epar_inspect_opts *o, char *buf, size_t n);
/* Check o's layers and heads against the model (EPAR_EINVAL naming the first out of range). */
int epar_inspect_check_selection(const struct epar_inspect *x, const struct epar_inspect_opts *o);
void epar_inspect_free(struct epar_inspect *x);

/* A checkpoint's attention over several inputs (epar benchmark's trained_attention.csv): means over n evaluation items
 * (spread evenly over the set) and every layer and head of: the Spearman correlation of the attention mass by
 * distance relative to uniform rows' with the distance (negative: attention falls off with distance faster than
 * uniform causal rows' does; its sd across items and heads),
 * the mean attended distance over a uniform causal row's ((T - 1) / 4: below 1 is more local), the first-token
 * share, the answer-relevant share and a uniform row's, and (EPAR) the Spearman correlation of the mass with P(d). */
struct epar_inspect_head {
    int layer, head;
    double mean_distance, entropy;                  /* heads.csv's, mean over the items */
    double pattern[EPAR_INSPECT_NPATTERNS];         /* epar_inspect_patterns, mean over the items */
    double pattern_best;                            /* the largest of pattern[] */
    double similar_layer, similar_other;            /* the largest mean similarity (over the items) to another head
                                                     * of the layer, to a head of another layer (NaN: none) */
    double slope;                                   /* ALiBi's m_h (NaN: another mechanism) */
};
/* ... and per head (head: NL NH records, layer-major, allocated by epar_inspect_summarise: free() it) the means over
 * the same items of mean_distance, entropy, the fixed-pattern correlations and the pair similarities. */
struct epar_inspect_summary {
    int items, heads, length;
    double distance_spearman, distance_spearman_sd, distance_ratio, first_share, relevant_share, relevant_uniform,
        profile_spearman;
    struct epar_inspect_head *head;
    int n_head;
};
int epar_inspect_summarise(struct epar_inspect *x, int n_items, struct epar_inspect_summary *s);

/* ---- exported for the tests ---- */
/* The summaries of one head's attention A (T, T) (row i: keys 0..i) with rel (T, T) (NULL: none) into s
 * (EPAR_INSPECT_NSTATS; the EPAR columns left as they are), and mass (T) by distance; distance_spearman is the
 * Spearman correlation of mass / u (epar_inspect_uniform_mass) with d. */
void epar_inspect_head_stats(const float *A, const unsigned char *rel, int T, double *s, double *mass);
/* u (T): the mass by distance of uniform causal rows (row i: 1 / (i + 1) on each key), u[d] = mean over i >= d of
 * 1 / (i + 1). It falls with d by itself, so distance_spearman and the profile correlations use mass / u. */
void epar_inspect_uniform_mass(int T, double *u);
/* One head's attention A (T, T) against S1's fixed patterns: pat[p] = the mean over the queries i = 2 .. T-1 of the
 * Pearson correlation of row i (keys 0..i) with pattern p's row (keys 0..i); a constant row (uniform attention)
 * correlates 0 with a pattern (no pattern row is constant for i >= 2). NaN when T < 3. */
void epar_inspect_patterns(const float *A, int T, double pat[EPAR_INSPECT_NPATTERNS]);
/* The similarity of two heads' attention A and B (T, T) on the same input: the mean over the queries i = 2 .. T-1 of
 * the Pearson correlation of their rows i (keys 0..i): the measure of the patterns, so "like a pattern" and "like
 * another head" read on one scale; two constant rows (both uniform) count 1, one constant row against another 0. NaN
 * when T < 3. */
double epar_inspect_similarity(const float *A, const float *B, int T);
/* Head k's largest similarity in sim ((NL NH)^2, layer-major) to another head of its layer (*in_layer) and to a head
 * of another layer (*other); NaN where there is none. */
void epar_inspect_most_similar(const double *sim, int NL, int NH, int k, double *in_layer, double *other);

#endif
