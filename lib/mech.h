/* mech: the registry of attention and position mechanisms of docs/MECHANISMS.md, side by side.
 *
 * One enum (epar_mech_id), one catalogue (epar_mech_row: a row per mechanism: id, kind, seeds, section,
 * parameters with defaults and ranges, and the function that builds its pieces), and one way of applying
 * each KIND through the composition hooks of lib/attn (docs/MECHANISMS.md §1):
 *
 *   kind       piece built once per (mechanism, seed, L)      applied at
 *   input      pe (L,D), added (x+p) or multiplied (x*p)       (1) attn input hook
 *   qk         rotation tables / frozen projections / GQA      (2) attn qk hook
 *   factor     factor (L,L)                                    (4) attn factor
 *   bias       bias (H,L,L); content-dependent rows filled     (5) attn bias (per head); qk hook fills
 *              per head from q, k in the qk hook (Shaw, TXL, DeBERTa)
 *   mask       mask (L,L); pi-attention: two masks + a gate    (6) attn mask; (8) row mix
 *   fixed      fixed (L,L) weights, no q or k                  replaces (2)-(7)
 *   kernel     feature map phi; A_ij = phi(q_i).phi(k_j)/sum    replaces (3)-(7)
 *   heads      query head h uses KV head floor(h/(H/G))        (2) attn qk hook
 *
 * Adding a mechanism = one file lib/mechs/<name>.c (struct epar_mech_def: the row, the trained form, the docs) and its
 * line in lib/mechs/registry.h; docs/DEVELOPMENT.md "Adding a mechanism" shows the template. The older mechanisms are
 * rows of the table in mech.c (epar_mech_row reads both).
 * Legend: L = sequence length, D = model width, H = heads, dk = D/H head dimension. Arrays are row-major. */
#ifndef EPAR_MECH_H
#define EPAR_MECH_H

#include <stddef.h>
#include <gsl/gsl_rng.h>
#include "attn.h"

enum epar_mech_id {
    EPAR_MECH_NONE = 0, EPAR_MECH_EPAR_BASIC, EPAR_MECH_EPAR_ENHANCED, EPAR_MECH_SINUSOIDAL,
    EPAR_MECH_LEARNED_APE, EPAR_MECH_FLOATER, EPAR_MECH_MULT_PE, EPAR_MECH_SHAW, EPAR_MECH_TXL, EPAR_MECH_T5,
    EPAR_MECH_DEBERTA, EPAR_MECH_TUPE, EPAR_MECH_ROPE, EPAR_MECH_NTK_ROPE, EPAR_MECH_INTERPOLATION,
    EPAR_MECH_LOGN, EPAR_MECH_ALIBI, EPAR_MECH_FIXED_CURRENT, EPAR_MECH_FIXED_PREVIOUS, EPAR_MECH_FIXED_NEXT,
    EPAR_MECH_FIXED_LEFT, EPAR_MECH_FIXED_RIGHT, EPAR_MECH_FIXED_START, EPAR_MECH_FIXED_END,
    EPAR_MECH_LINEAR_ELU, EPAR_MECH_LINEAR_COS, EPAR_MECH_PERFORMER, EPAR_MECH_STRIDED, EPAR_MECH_SPARSE_FIXED,
    EPAR_MECH_SLIDING_WINDOW, EPAR_MECH_BLOCK_SPARSE, EPAR_MECH_GLOBAL_LOCAL, EPAR_MECH_PI_ATTENTION,
    EPAR_MECH_GQA, EPAR_MECH_ORTHOGONAL_QK, EPAR_MECH_RANDOM_SPARSE, EPAR_MECH_ALIBI_LEARNED, EPAR_MECH_APE_RAND, EPAR_MECH_APE_HIER,
    EPAR_MECH_FIXED_MIX, EPAR_MECH_LEARNABLE_ONLY, EPAR_MECH_FIXED_ONLY,   /* trained only (epar train, benchmark): per-head, no compare form */
    EPAR_MECH_FLOATER_LEARNED,
    /* the mechanisms that are one file each (lib/mechs/registry.h) */
#define EPAR_MECH_FILE(ID, name) EPAR_MECH_##ID,
#define EPAR_MECH_FILE_AT(ID, name)   /* an existing value (above) */
#include "mechs/registry.h"
#undef EPAR_MECH_FILE
#undef EPAR_MECH_FILE_AT
    EPAR_MECH_COUNT
};

enum epar_mech_kind {
    EPAR_MK_BASELINE = 0, EPAR_MK_INPUT, EPAR_MK_QK, EPAR_MK_FACTOR, EPAR_MK_BIAS, EPAR_MK_MASK, EPAR_MK_FIXED,
    EPAR_MK_KERNEL, EPAR_MK_HEADS, EPAR_MK_COUNT
};

#define EPAR_MECH_MAX_PARAMS 6

struct epar_mech_param {
    const char *name;   /* NULL ends the list */
    double def, lo, hi; /* default and inclusive range */
    int integer;        /* 1: value must be an integer */
    const char *help;
};

/* the parameter every mechanism with synthetic learned parts has (the sd of their draws; the epar convention), and
 * the entry that ends a row's list */
#define EPAR_MECH_PARAM_SD {"init_sd", 0.02, 0, 100, 0, "sd of the synthetic trained parameters (epar convention)"}
#define EPAR_MECH_PARAM_END {NULL, 0, 0, 0, 0, NULL}

struct epar_mech;
struct epar_mech_info {
    const char *id;             /* canonical id, e.g. "alibi" */
    enum epar_mech_kind kind;
    const char *seeds;          /* where the sources name it, e.g. "S0, S3 §3" */
    const char *section;        /* docs/MECHANISMS.md section, e.g. "§18" */
    struct epar_mech_param params[EPAR_MECH_MAX_PARAMS];
    int (*build)(struct epar_mech *m, gsl_rng *r);  /* fills the pieces of m; EPAR_EINVAL when refused */
    const char *note;
};

/* A mechanism in one file, lib/mechs/<name>.c: its catalogue row (the analysis form `epar compare` runs, its parameters
 * with defaults, ranges and help), its trained form (lib/nnpos's hooks, NULL when it is not trained), and its
 * documentation section; registered by one line of lib/mechs/registry.h. The generic tests (gradient check, the fp64
 * reference, causality, overfit, inspect, -j1 = -j2) run on every registered mechanism without a test of its own. */
struct epar_nnpos_info;
struct epar_nnpos;
struct epar_mech_def {
    struct epar_mech_info info;
    const struct epar_nnpos_info *train;
    /* the analysis form's learned pieces from a trained model's layer l (the fp64 reference test reads the trained
     * attention through it); NULL: the analysis form at the catalogue parameters is the trained form as initialised */
    int (*from_trained)(struct epar_mech *m, const struct epar_nnpos *p, int l);
    /* the analysis form's own q/k transform of head h (Q, K: L rows of dk, row stride ld), after the catalogue's
     * (lib/attn's qk hook); NULL: none */
    void (*qk)(struct epar_mech *m, int h, double *Q, double *K, int L, int dk, int ld);
    /* operations per query row of the analysis form beyond the dense softmax attention's (epar_mech_flops_row adds
     * them to its count); NULL: its kind's count */
    double (*flops_extra)(const struct epar_mech *m);
    const char *doc;            /* markdown: the formula, the parameters' meaning, the source and its pitfalls
                                 * (docs/MECHANISMS.md, "Mechanisms in files", is printed from it: epar --mechanism-docs) */
};

/* the catalogue row of mechanism id (a row of lib/mech.c's table, or a file mechanism's); never NULL for a valid id */
const struct epar_mech_info *epar_mech_row(enum epar_mech_id id);
/* the definition of a file mechanism (lib/mechs/), NULL for a row of lib/mech.c's table */
const struct epar_mech_def *epar_mech_file(enum epar_mech_id id);
const char *epar_mech_kind_name(enum epar_mech_kind k);

/* A mechanism instantiated for one (seed, L, D, H, causal). Not shared between threads. */
struct epar_mech {
    enum epar_mech_id id;
    const struct epar_mech_info *info;
    double p[EPAR_MECH_MAX_PARAMS];
    int L, D, H, dk, causal;
    struct epar_attn_cfg cfg;   /* scale 1/sqrt(dk), temperature 1, empty policy self */
    struct epar_attn_mods mods; /* hooks into lib/attn, ctx = this */
    /* pieces (NULL when unused) */
    double *factor;             /* (L,L) */
    double *bias;               /* (H,L,L) */
    unsigned char *mask;        /* (L,L), 1 = allowed */
    unsigned char *mask2;       /* (L,L) pi-attention step mask */
    double gate;                /* pi-attention: A = gate A(mask) + (1-gate) A(mask2) */
    double *pe;                 /* (L,D) input PE */
    int pe_mul;                 /* 1: x*p, 0: x+p */
    double *rcos, *rsin;        /* (L, dk/2) RoPE tables */
    int rope_half;              /* 1: pairs (t, t+dk/2), 0: interleaved (2t, 2t+1) */
    double *fixed;              /* (L,L) fixed weights */
    int fixed_fallback;         /* rows that fell back to self */
    double *tab, *tab2, *tab3;  /* synthetic trained parameters (shapes in the build functions) */
    int ntab;                   /* rows of tab (Shaw 2k+1, TXL 2L-1, DeBERTa 2k) */
    double *omega;              /* (m, dk) Performer random features */
    int nfeat;                  /* Performer m */
    double *Wq, *Wk;            /* (H, D, dk) orthogonal-qk frozen projections */
    int groups;                 /* GQA G */
    const double *xref;         /* current input x (L,D), set by the input hook */
    double *work;               /* scratch, (max(L, 2k+1) * max(dk, ...)) */
    double *S2;                 /* (L,L) second score matrix (pi-attention) */
    double *phiq, *phik;        /* (L, nf) kernel features */
    int logn_stacked;           /* log-n factor multiplied in by epar_mech_stack_logn */
};

/* The families a figure splits mechanisms by (at most about 8 series a panel): no position information (none),
 * input position encodings, relative position biases, q/k transforms and length scaling, sparse / fixed / linear
 * attention, EPAR. From the kind, with the exceptions the kind does not tell (EPAR's two forms and log-n are
 * factors; the per-head fixed mixes are "heads"). */
enum epar_mech_family {
    EPAR_MF_NONE = 0, EPAR_MF_INPUT, EPAR_MF_BIAS, EPAR_MF_QK, EPAR_MF_SPARSE, EPAR_MF_EPAR, EPAR_MF_COUNT
};
/* the family of a mechanism id or a series named after one ("pi-attention@step=4", "rope+ft", "rope+log-n": the id
 * before the first '@' or '+'); -1 for a name that is no catalogue id */
int epar_mech_family_of(const char *name);
/* "input position encodings", ... ("?" out of range) */
const char *epar_mech_family_name(int family);

/* ---- registry ---- */
/* id string -> enum; EPAR_EINVAL naming the id (with a near match as hint) otherwise. */
int epar_mech_find(const char *name, enum epar_mech_id *id);
/* p <- the defaults of mechanism id */
void epar_mech_defaults(enum epar_mech_id id, double *p);
/* Set parameter `name` of mechanism id in p; EPAR_EINVAL for an unknown name or a value out of range. */
int epar_mech_set_param(enum epar_mech_id id, double *p, const char *name, double value);
/* 1: the mechanism exists only as a trained model (per-head mixes of S1's fixed patterns: fixed-mix, learnable-only,
 * fixed-only);
 * compare leaves it out of its default list and refuses it by name */
int epar_mech_trained_only(enum epar_mech_id id);
/* 1: the mechanism needs keys after the query (a look-ahead fixed pattern): refused under --causal */
int epar_mech_looks_ahead(enum epar_mech_id id);
/* Index of parameter `name` of id, -1 if absent. */
int epar_mech_param_index(enum epar_mech_id id, const char *name);

/* Instantiate: pieces for length L, width D, H heads; synthetic parameters from the stream
 * (seed, 1000 + id, EPAR_RNG_MECH). EPAR_EINVAL when the mechanism refuses the setting (e.g. look-ahead
 * patterns under causal, odd head dim for RoPE, L > max_length for learned-ape). */
int epar_mech_init(struct epar_mech *m, enum epar_mech_id id, const double *p, int L, int D, int H, int causal,
                   unsigned long seed);
void epar_mech_free(struct epar_mech *m);
/* The stride l of strided and sparse-fixed: the parameter, or round(sqrt(L)) when it is 0 (at least 1). */
int epar_mech_stride(const struct epar_mech *m);
/* The same rule for a stride parameter v at length L (lib/nnpos's masks use it at the training length) */
int epar_mech_auto_stride(double v, int L);
/* Multiply log-n scaling kappa_i = max(1, ln n_i / ln L_train) (clamp) into the factor (§17): stacking. */
int epar_mech_stack_logn(struct epar_mech *m, double train_length, int clamp);

/* A (H,L,L) <- the attention of every head for input X (L,D) through layer; *n_empty = empty rows
 * (policy self). ws from epar_attn_ws_alloc(L, D). */
int epar_mech_forward(struct epar_mech *m, const struct epar_layer *layer, const double *X, double *A,
                      struct epar_attn_ws *ws, int *n_empty);
/* Analytic FLOPs of one output row of one head in the mechanism's efficient implementation
 * (scores, normalisation, weighted sum of values with dv = dk). */
double epar_mech_flops_row(const struct epar_mech *m);

/* ---- formulas (tested against docs/MECHANISMS.md worked numbers) ---- */
/* p (D) <- sinusoid at position k, interleaved sin/cos (§5); concat: [sin... | cos...] (TXL, §10) */
void epar_mech_sinusoid(double k, int D, double base, int concat, double *p);
/* P (L,D) <- FLOATER recursive rotation from p_0 = [0,1,0,1,...] (§7) */
void epar_mech_floater(int L, int D, double base, double *P);
/* FLOATER's one-step rotation R (§7): cs (2 ceil(D/2)) <- cos w_i, sin w_i of the pairs, w_i = base^(-2i/D);
 * b <- R a (dir 1, the step p_{t+1} = R p_t of epar_mech_floater) or R^T a (dir -1, its adjoint); b != a */
void epar_mech_floater_angles(int D, double base, double *cs);
void epar_mech_floater_rotate(int D, const double *cs, int dir, const double *a, double *b);
/* v (d) rotated by position pos (§14); half: pairs (t, t+d/2) */
void epar_mech_rope_rotate(double *v, int d, double pos, double base, int half);
/* NTK-aware base (§15): base * s^(d/(d-2)) */
double epar_mech_ntk_base(double base, double s, int d);
/* log-n factor (§17) for n visible keys */
double epar_mech_logn(double n, double train_length, int clamp);
/* T5 bucket of rel = j - i (§11) */
int epar_mech_t5_bucket(int rel, int bidirectional, int num_buckets, int max_distance);
/* ALiBi slopes m (n) for n heads (§18); max_bias 8 is the paper's */
void epar_mech_alibi_slopes(int n, double max_bias, double *m);
/* Learned absolute PE past its n trained rows theta_0 .. theta_{n-1} (S3 003:20; Su's hierarchical decomposition):
 * position p = i n + j (0 <= j < n) reads alpha u_i + (1 - alpha) u_j with u_k = (theta_k - alpha theta_0) / (1 - alpha),
 * = w[0] theta_idx[0] + w[1] theta_idx[1] + w[2] theta_idx[2] (idx = i, j, 0; w = alpha / (1 - alpha), 1,
 * -alpha / (1 - alpha)); for p < n it is theta_p. Defined for p < n^2 and 0 <= alpha < 1. */
void epar_mech_ape_hier_coef(int p, int n, double alpha, int idx[3], double w[3]);
/* learned-ape-rand's row p past the trained rows: N(0, sd^2) from the stream (seed, EPAR_MECH_APE_RAND_RUN + p) of
 * lib/rng's weights, the same values whatever the table's length (an evaluation and a fine-tuning arm share them) */
#define EPAR_MECH_APE_RAND_RUN 1048576UL
void epar_mech_ape_rand_row(unsigned long seed, int p, int C, double sd, double *row);
/* Shaw table row of rel = j - i clipped to [-k, k] (§9); DeBERTa delta(i, j) (§12) */
int epar_mech_shaw_index(int rel, int k);
int epar_mech_deberta_delta(int i, int j, int k);
/* Raganato pattern p = 1..7 (§19) -> W (L,L); returns the number of rows that fell back to self */
int epar_mech_fixed_pattern(int pattern, int L, double *W);
/* pattern 8: the first token, W_i0 = 1 (causal; fixed-mix's heads, not a catalogue row of its own) */
/* masks (L,L) (§22-27); return the number of allowed pairs */
long epar_mech_mask_strided(int L, int l, int openai_local, unsigned char *M);
/* random-sparse (S2 1.2 "random sparse", BigBird's random part with its window): causal, row i keeps its band
 * {i-l..i} and n_i keys drawn uniformly without replacement from the earlier keys {0..i-l-1}: n_i = k, or when k is 0
 * strided's count there, max(0, floor(i/l) - 1) (the same keys per row as strided at stride l). The draw of row i is a
 * function of (key, i) only (splitmix64 of key, i, j; selection sampling), so a row is the same at every L (the mask at
 * L is the top-left corner of the mask at any longer length) and the same key gives the same mask in compare and in
 * a trained model. */
long epar_mech_mask_random(int L, int l, int k, unsigned long long key, unsigned char *M);
/* the key of random-sparse's draw for a run's seed: the first 64 bits of lib/mech's stream (seed, 1000 + id) */
unsigned long long epar_mech_random_key(gsl_rng *r);
long epar_mech_mask_sparse_fixed(int L, int l, int c, unsigned char *M);
long epar_mech_mask_window(int L, int w, unsigned char *M);
long epar_mech_mask_block(int L, int b, int nb, int causal, unsigned char *M);
long epar_mech_mask_global_local(int L, int w, int n_global, unsigned char *M);
long epar_mech_mask_pi_local(int L, int r, int ring, unsigned char *M);
long epar_mech_mask_pi_step(int L, int pi, unsigned char *M);
/* Pairs of the union local(r, ring) | step(pi) at length L, counted row by row without the L x L mask (for the
 * sparsity at the lengths S2 recommends, up to 32K); equals the count of epar_mech_mask_pi_local | _pi_step. */
long epar_mech_pi_union_pairs(int L, int pi, int r, int ring);
/* GQA: KV head of query head h (§28) */
int epar_mech_gqa_group(int h, int H, int G);
/* elu(x)+1 (§20) */
double epar_mech_elu1(double x);
/* Performer (§21): block structure, Omega (m,d), features phi (n, m) of rows x (n,d); query: c per row,
 * else one global c over all rows and features. */
void epar_mech_performer_blocks(int m, int d, int *full, int *rest);
int epar_mech_performer_omega(gsl_rng *r, int m, int d, int orthogonal, int scaling, double *Omega);
/* orthogonal-qk's frozen projections: per head h, W_Q^h then W_K^h (D, dk) with orthonormal columns (Haar, sign-fixed),
 * times sqrt(D / dk) when jl; Wq, Wk are (H, D, dk). The draws compare's mechanism and a trained model's share. */
int epar_mech_orthogonal_qk_draw(gsl_rng *r, int D, int dk, int H, int jl, double *Wq, double *Wk);
void epar_mech_performer_features(const double *Omega, int m, int d, const double *x, int n, int is_query,
                                  double eps, double *phi);
/* Kernel attention from features: A (L,L) naive, materialised; empty rows (den <= eps) follow policy self.
 * Returns the number of empty rows. */
int epar_mech_kernel_attention(const double *phiq, const double *phik, int L, int nf, int causal, double eps,
                               double *A);
/* the kernel kind's analysis pieces of m with nf features per head: phi(q), phi(k) (L, nf) and the head's q, k copies
 * (m->nfeat = nf); its build calls it (after drawing Performer's Omega into m->omega) */
int epar_mech_kernel_pieces(struct epar_mech *m, int nf);
/* Fast path: O (L,dv) = A V through S = sum_j phi(k_j) v_j^T and z = sum_j phi(k_j) (prefix sums when
 * causal), O(L nf dv). work is (nf*(dv+1)). Empty rows give v_i (policy self). */
void epar_mech_kernel_output(const double *phiq, const double *phik, const double *V, int L, int nf, int dv,
                             int causal, double eps, double *O, double *work);
/* Masked softmax attention output O (L,d) = softmax(scale Q K^T | mask) V with Q, K, V (L,d): the full score
 * matrix (BLAS), then masked rows (S (L,L) workspace). The sparse path over the allowed pairs only: lib/sparse. */
void epar_mech_masked_output_dense(const double *Q, const double *K, const double *V, const unsigned char *M,
                                   int L, int d, double scale, double *O, double *S);
/* Boost key j of row a (n) by factor b (§30): + ln b before the softmax, as a re-weighting of weights. */
void epar_mech_boost(const double *a, int n, int j, double b, double *out);

#endif
