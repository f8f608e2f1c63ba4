/* nnpos: the training hooks of the catalogue's mechanisms (lib/mech ids), for the Transformer of lib/nn.
 *
 * One catalogue: lib/mech's table names every mechanism (id, kind, formula section, parameters, the analysis
 * builder); this module's table, indexed by the same enum epar_mech_id, holds the causal, differentiable form
 * of those that can be trained (as ggml's backends hold per-type traits indexed by ggml's type enum). A row with
 * hook EPAR_NNPOS_H_NONE is not trainable. Formulas are not re-typed here: the tables are filled by lib/mech's
 * functions (sinusoid, FLOATER, RoPE rotation and NTK base, log-n, ALiBi slopes, T5 buckets, the fixed patterns,
 * the sparse masks) and lib/posfx (the EPAR effect).
 *
 *   hook         mechanisms                         what the hook changes
 *   baseline     none                               causal mask only
 *   input        sinusoidal, floater, mult-pe       x_t = e_t + init_sd p_t (added), or e_t * p_t (multiplied)
 *   input        learned-ape                        x_t = e_t + E[t], E (Tmax, C) learned
 *   input        learned-ape-rand, learned-ape-hier x_t = e_t + E[t], E (train_length, C) learned; rows t >= train_length
 *                                                   random and fixed (rand) or Su's decomposition of E (hier)
 *   input        floater-learned                    x_t = e_t + init_sd p_t, p_{t+1} = R p_t + W2 tanh(W1 p_t + b1 + tau_t w) + b2
 *                                                   (FLOATER's rotation R plus a learned map; BPTT over positions)
 *   qk           rope, ntk-rope, interpolation      q_t, k_t rotated by pos(t) theta_i (interleaved pairs)
 *   qk           log-n                              q_t scaled by kappa_t = log_{L_train}(t + 1) (clamped at 1)
 *   bias         alibi, t5                          z_ij = s_ij + b_h(i - j)
 *   bias         shaw, deberta, transformer-xl      their content-dependent relative forms (lib/mechs/relative.c):
 *   bias         shaw                               z_ij = s_ij + q_i . w_l[min(i - j, k)] / sqrt(hs), w_l learned per layer
 *   bias         deberta                            z_ij = s_ij + [q_i . Kr_l[min(i - j, k)] + k_j . Qr_l[min(i - j, k)]] / sqrt(hs),
 *                                                   Kr, Qr learned per layer, shared by the heads (deberta.absolute = 1:
 *                                                   + EMD's absolute table E (Tmax, C) on the last layer's input)
 *   bias         transformer-xl                     z_ij = s_ij + [q_i . r_lh(i - j) + u_lh . k_j + v_lh . r_lh(i - j)]
 *                                                   / sqrt(hs), r_lh(d) = W_R^{lh} R_d (R_d the sinusoid of d, [sin | cos]);
 *                                                   W_R, u, v learned per layer (and head); no segment memory
 *   factor       epar-basic, epar-enhanced          z_ij = s_ij m_lh(i - j)
 *   mask         strided, sparse-fixed, sliding-window, block-sparse, global-local, random-sparse (its random keys
 *                drawn once from lib/mech's stream for the run's seed: the mask compare builds for that seed)
 *                                                   z_ij = s_ij + (0 if allowed, -inf if not), (T, T) table
 *   fixed        fixed-current, -previous, -left    z_ij = 0 s_ij + ln W_ij: A = W, no gradient to q, k
 *   fixed-mix    per layer heads 0..NH-2 fixed (patterns current, previous, left, first token, cycled: the pair table
 *                and factor 0 per head), head NH-1 learned softmax (factor 1, no pair); learnable-only: the same
 *                learned head, the others' output 0 (S1's 7F+1L and 1L at 8 heads); fixed-only: every head fixed
 *   kernel       linear-elu, performer              A_ij = phi(q_i).phi(k_j) / sum_{j' <= i} (no softmax), phi = elu + 1
 *                                                   or FAVOR+ with lib/mech's random features for the run's seed
 *                                                   (stabilised per query and per key, no eps: their own
 *                                                   attention form, lib/mechs/kernel.c)
 *   pi           pi-attention                       A = g_i softmax(s + local mask) + (1 - g_i) softmax(s + pi-step
 *                                                   mask), g_i = sigmoid(b + w . [mean_{t<=i} q_t; k_t; v_t]) per layer
 *                                                   and head (w, b learned); causal: no ring (its own
 *                                                   attention form, lib/mechs/pi_attention.c)
 *   heads        gqa                                G = gqa.groups K/V heads (G = 1: MQA), query head h reads K/V
 *                                                   head floor(h / (NH/G)); lib/nn's QKV projection is (C + 2 G hs, C)
 *
 * s_ij = q_i . k_j / sqrt(hs) is the scaled content score, so EPAR multiplies the scaled score as the paper
 * writes A = softmax((Q K^T / sqrt(d_k)) . P(i, j, L)). Biases and factors depend on d = i - j >= 0 only; masks
 * and fixed patterns on (i, j) (one table shared by the heads). A row of a mask or pattern with no allowed key
 * attends to itself (the catalogue's empty-row policy "self").
 *
 * Parameters: one namespace, the catalogue's. Every trainable mechanism but EPAR and learned-ape reads its
 * catalogue parameters (lib/mech row: rope.base, alibi.max_bias, t5.num_buckets, sliding-window.radius, ...) from
 * s.mp, set with `--set mech.param=value` as in `epar compare`; EPAR's alpha/beta/gamma are the settings' fx (the
 * preset's, or learned) and learned-ape's table has the trained length and the run's init_sd. A catalogue value
 * training cannot honour is refused by the row's check (rope.half = 1: training rotates interleaved pairs).
 *
 * L in P: by default L is the length T of the sequence being processed (the paper's and the reference
 * code's P(i, j, L) with L = seq_len), so at an evaluation length T' != T_train the same distance gets
 * m(d; T') (the decay stretches with the sequence). posfx_length > 0 fixes L instead (e.g. at the
 * training length, so m(d) is the same function of d at every length).
 *
 * Learned EPAR parameters (--learn-posfx) are stored as logarithms, theta = (ln alpha, ln beta, ln gamma)
 * per layer and head, and used as exp(theta): alpha, beta, gamma stay > 0 whatever the optimiser does
 * (so an initial beta or gamma of 0 cannot be learned and is refused).
 *
 * Adding a trainable mechanism: one file of lib/mechs/ whose struct epar_mech_def's `train` is its struct
 * epar_nnpos_info (hook and functions: check, build, parameter count, init, tables for a length T, gradient of its
 * parameters, scratch, or its own attention of one (b, h)), and its line in lib/mechs/registry.h (docs/DEVELOPMENT.md
 * "Adding a mechanism"); the generic tests of test_nn.c and test_nnpos.c then cover it. The older mechanisms are
 * rows of this module's table, read through epar_nnpos_row as the files are.
 * Legend: T = sequence length (<= Tmax), C = model width, NH heads, hs = C / NH, NL layers, B batch. */
#ifndef EPAR_NNPOS_H
#define EPAR_NNPOS_H

#include <stddef.h>
#include <gsl/gsl_rng.h>
#include "mech.h"
#include "posfx.h"

/* how a mechanism enters the model; NONE: not trainable */
enum epar_nnpos_hook { EPAR_NNPOS_H_NONE = 0, EPAR_NNPOS_H_BASELINE, EPAR_NNPOS_H_INPUT, EPAR_NNPOS_H_QK,
                       EPAR_NNPOS_H_BIAS, EPAR_NNPOS_H_FACTOR, EPAR_NNPOS_H_MASK, EPAR_NNPOS_H_FIXED,
                       EPAR_NNPOS_H_KERNEL, EPAR_NNPOS_H_HEADS, EPAR_NNPOS_H_PI,
                       EPAR_NNPOS_H_PROJ /* frozen q, k projections (lib/nn draws and keeps them) */ };

/* Settings of the mechanisms (from the protocol; defaults in epar_nnpos_settings_default). */
struct epar_nnpos_settings {
    struct epar_posfx fx;       /* EPAR alpha, beta, gamma (form set from the mechanism) */
    int learn_posfx;            /* 1: alpha, beta (gamma) trainable per layer and head */
    int posfx_length;           /* 0: L = current sequence length T; > 0: this fixed L */
    double init_sd;             /* 0.02: learned tables (E, B); the sinusoid's scale (the token embeddings' sd) */
    unsigned long seed;         /* the run's seed: Performer's features are lib/mech's stream (seed, 1000 + id) */
    /* log-n stacked on the mechanism (S3 §4.2(5) with (NTK-)RoPE): > 0: q_t also multiplied by
     * max(1, log_{logn_length}(t + 1)); 0: off. With the clamp it changes nothing up to logn_length, so it is an
     * evaluation-time variant of a model trained at that length (the extrapolation study's rope+log-n) */
    int logn_length;
    /* catalogue parameters of every mechanism (lib/mech defaults; read by the rows with uses_params). A
     * "train_length" (ntk-rope, interpolation, log-n) is 0 by default: the length the model is trained at
     * (epar_nnpos_resolve; a model built at Tmax without it takes Tmax), not the catalogue's analysis default */
    double mp[EPAR_MECH_COUNT][EPAR_MECH_MAX_PARAMS];
};

/* A mechanism instantiated for one model. Tables are sized for Tmax and filled for the current T. */
struct epar_nnpos {
    enum epar_mech_id id;
    struct epar_nnpos_settings s;
    const double *mp;           /* s.mp[id] */
    int Tmax, C, NH, NL, hs;
    int T;                      /* length the tables were last prepared for (0: none) */
    float *theta, *dtheta;      /* learned parameters and their gradient (in lib/nn's flat buffers), or NULL */
    /* tables (NULL when the kind does not use them) */
    float *pe;                  /* (Tmax, C) input PE (sinusoidal, floater, fixed mult-pe) */
    float *ext, *dext;          /* (Tmax, C) learned-ape-rand / -hier: the table read (theta's rows, then the rows past
                                 * train_length) and its gradient by row */
    double *ode;                /* floater-learned: its recursion's states p_t (Tmax, C), a_t (Tmax, H), the rotation's
                                 * cos / sin and the backward's adjoints (nnpos.c) */
    int ntrain;                 /* learned-ape-rand / -hier: the trained rows (train_length) */
    int pe_mul;                 /* 1: x = e * pe (or * theta when learned) instead of e + pe */
    float *rcos, *rsin;         /* (Tmax, hs/2) RoPE cos / sin of pos(t) theta_i */
    float *kcos, *ksin;         /* (Tmax, hs/2) k's own tables when they differ from q's (a scale on q and its inverse on
                                 * k, lib/mechs/), or NULL: k rotates with rcos / rsin */
    float *qscale;              /* (Tmax) log-n kappa_t multiplying q_t */
    float *bias;                /* (NH, Tmax) additive bias by distance d (alibi, t5), per layer when bias_layer > 0 */
    size_t bias_layer;          /* floats between two layers' bias tables; 0: one table shared by the layers */
    int *bucket;                /* (Tmax) T5 bucket of distance d */
    double *slopes;             /* (NH) ALiBi slopes */
    float *fac;                 /* (NL, NH, Tmax) factor m(d) (epar) */
    float *dfac;                /* (NL, NH, 3, Tmax) dm(d)/dtheta_k (epar with learn_posfx) */
    float *pair;                /* (Tmax, Tmax) additive table z_ij += pair[i][j] (masks: 0 / -inf; fixed: ln W) */
    size_t pair_head;           /* floats between two heads' pair tables (fixed-mix, learnable-only: (NH, Tmax, Tmax));
                                 * 0: one table shared by the heads */
    size_t pair_layer;          /* floats between two layers' pair tables; 0: one shared by the layers */
    int pair_grad;              /* 1: the pair table is learned: the attention backward hands its gradient (gpair), in
                                 * the per-(b, h) buffer the row's scratch sizes (Tmax^2 floats per (b, h)) */
    unsigned char *head_off;    /* (NH) 1: the head's output is 0 (learnable-only's removed heads), or NULL */
    float *pair2;               /* (Tmax, Tmax) pi-attention's second mask (pi-step; pair is the local one) */
    int ngate;                  /* pi-attention: gate parameters per layer and head (3 hs + 1) in theta; 0: none */
    int nrel;                   /* Shaw: k + 1 rows of the per-layer table w_l (nrel, hs) in theta; Transformer-XL: T
                                 * (the distances of the current length); 0: none */
    float *rdist;               /* (Tmax, C) Transformer-XL's R_d, lib/mech's sinusoid of distance d ([sin | cos]) */
    float *reltab;              /* (NL, NH, Tmax, hs) Transformer-XL's r_lh(d) = W_R^{lh} R_d (prepared from theta) */
    int nf;                     /* kernel features per head (elu: hs; Performer: m; lib/mechs/kernel.c) */
    float *omega;               /* (nf, hs) Performer's random features: lib/mech's for the same seed */
    double eps;                 /* kernel denominator guard / Performer stabiliser */
    void *work;                 /* (Tmax, Tmax) scratch of the pair table's builder (mask bytes or fp64 weights) */
    unsigned long long mask_key;/* random-sparse: the key of its draw (lib/mech's epar_mech_random_key for the seed) */
};

/* what the attention backward of one layer hands the mechanism (NULL: not computed) */
struct epar_nnpos_grad {
    const float *gfac;          /* (B, NH, T) per-(b, h) sums over pairs at distance d of dz_ij s_ij */
    const float *gbias;         /* (B, NH, T) per-(b, h) sums over pairs at distance d of dz_ij */
    const float *grel;          /* (B, NH, nrel, hs) per-(b, h) gradient of the Shaw table; Transformer-XL:
                                 * (B, NH, nrel hs + 2 hs), its table's then du, dv; pi: (B, NH, ngate) */
    const float *gpair;         /* (B, NH, T, T) per-(b, h) dL/dz_ij of the pair table, j <= i (pair_grad) */
};

/* A mechanism's own attention of one (batch b, head h) of layer l, in place of lib/nn's softmax (kernel attention: no
 * softmax at all), called by lib/nn's attention forward and backward for every (b, h) (a removed head aside). Q, K, V:
 * the head's columns of qkv, row t at + 3C t; S, A (T, T): the (b, h)'s scores (lib/nn keeps them for the backward:
 * the form may store there what its backward needs) and weights, row stride T; row i of A holds the weights of keys
 * j <= i and zeros up to the end of its query block (EPAR_NN_ATT_BLOCK; nothing past it is read); O, dO: row t at
 * + C t; dQ, dK, dV: as Q, K, V, overwritten; dA (T, T): scratch; work: this thread's scratch (the row's scratch hook
 * at length T: per_thread floats); grad: this (b, h)'s gradient slot (per_bh floats at length T, handed to the row's
 * backward as grel), or NULL; scale = 1 / sqrt(hs). The same bits whatever the thread count. */
typedef void (*epar_nnpos_attn_fwd)(const struct epar_nnpos *p, int l, int h, const float *Q, const float *K,
                                    const float *V, float *S, float *A, float *O, float *work, int T, int C, int hs,
                                    float scale);
typedef void (*epar_nnpos_attn_bwd)(const struct epar_nnpos *p, int l, int h, const float *Q, const float *K,
                                    const float *V, const float *S, const float *A, const float *dO, float *dQ,
                                    float *dK, float *dV, float *dA, float *grad, float *work, int T, int C, int hs,
                                    float scale);

/* A bias that reads the content as well as the distance, z_ij += f_h(q_i, k_j, i - j) (the relative tables of Shaw,
 * Transformer-XL, DeBERTa: lib/mechs/relative.c), in lib/nn's softmax for every (b, h) of layer l (a removed head aside).
 * rel_fwd fills this thread's work (the row's scratch hook at length T: per_thread floats) from the head's Q, K (row t
 * at + 3C t), once per (b, h); rel_row then returns row i's bias by distance d = i - j, d = 0 .. i (in work), the head's
 * bias table (by distance, or NULL) added; rel_bwd reads dz (dA rows i, keys j <= i), adds to dQ, dK (as Q, K) and writes
 * the (b, h)'s gradient slot grad (per_bh floats at length T, handed to the row's backward as grel). The same bits
 * whatever the thread count. */
typedef void (*epar_nnpos_rel_fwd)(const struct epar_nnpos *p, int l, int h, const float *Q, const float *K,
                                   float *work, int T, int C, int hs, float scale);
typedef const float *(*epar_nnpos_rel_row)(const struct epar_nnpos *p, float *work, const float *bias, int i, int T,
                                           int hs);
typedef void (*epar_nnpos_rel_bwd)(const struct epar_nnpos *p, int l, int h, const float *dA, const float *Q,
                                   const float *K, float *dQ, float *dK, float *grad, float *work, int T, int C, int hs,
                                   float scale);

struct epar_nnpos_info {
    enum epar_nnpos_hook hook;
    int uses_params;            /* 1: reads its catalogue parameters (s.mp[id]); 0: the settings above (EPAR's fx,
                                 * learned-ape's trained length and init_sd) */
    int fixed_length;           /* 1: positions past Tmax do not exist (learned table) */
    const char *summary;        /* its causal training form */
    /* settings the mechanism refuses (EPAR_EINVAL with a message), hs = head width; NULL: none */
    int (*check)(enum epar_mech_id id, const struct epar_nnpos_settings *s, int hs);
    /* tables it needs (allocated), filled when they do not depend on T or theta */
    int (*build)(struct epar_nnpos *p);
    /* learned parameters of the mechanism (floats) */
    size_t (*n_params)(const struct epar_nnpos *p);
    /* draw the learned parameters (theta) */
    void (*init)(struct epar_nnpos *p, gsl_rng *r);
    /* fill the tables for length T from the settings and theta */
    void (*prepare)(struct epar_nnpos *p, int T);
    /* dtheta += gradient of layer l from the attention kernel's sums */
    void (*backward)(struct epar_nnpos *p, int l, const struct epar_nnpos_grad *g, int B, int T);
    /* floats of per-thread scratch and of per-(b, h) gradient the attention kernel needs (NULL: none) */
    void (*scratch)(const struct epar_nnpos_settings *s, enum epar_mech_id id, int Tmax, int hs, size_t *per_thread,
                    size_t *per_bh);
    /* its own attention of one (b, h), forward and backward (both or neither; NULL: lib/nn's softmax with the tables
     * above); its scratch sizes per_thread and per_bh (at Tmax for the arena, at T for the slices) */
    epar_nnpos_attn_fwd attn_forward;
    epar_nnpos_attn_bwd attn_backward;
    /* a bias that reads q and k (all three or none; NULL: none): above; its scratch as attn_forward's */
    epar_nnpos_rel_fwd rel_forward;
    epar_nnpos_rel_row rel_row;
    epar_nnpos_rel_bwd rel_backward;
    /* a learned term added to the last layer's input x (B, T, C) (DeBERTa's EMD), and its gradient from that input's dx
     * (dx unchanged); NULL: none */
    void (*last_input)(const struct epar_nnpos *p, float *x, int B, int T);
    void (*last_input_backward)(struct epar_nnpos *p, const float *dx, int B, int T);
    /* 1 when these settings make the model defined at its trained length only (NULL: fixed_length above) */
    int (*fixed_length_of)(const struct epar_nnpos_settings *s, enum epar_mech_id id);
};

/* the trained form of mechanism id: a row of nnpos.c's table or a file mechanism's (lib/mechs/); a mechanism without a
 * causal differentiable form has hook NONE */
const struct epar_nnpos_info *epar_nnpos_row(enum epar_mech_id id);

/* 1 when a model of mechanism id with settings s has learned rows per position (learned-ape; multiplicative-pe's
 * learned variant 0): it is defined at its trained length only */
int epar_nnpos_fixed_length(enum epar_mech_id id, const struct epar_nnpos_settings *s);
/* K/V heads of a model of mechanism id with NH heads: gqa.groups for gqa, NH otherwise (lib/nn sizes its QKV
 * projection with it). 0 when gqa.groups does not divide NH (epar_nnpos_check_heads says so). */
int epar_nnpos_kv_heads(enum epar_mech_id id, const struct epar_nnpos_settings *s, int NH);
/* EPAR_EINVAL naming the value when mechanism id cannot run with NH heads (gqa: groups must divide NH) */
int epar_nnpos_check_heads(enum epar_mech_id id, const struct epar_nnpos_settings *s, int NH);
/* learned-ape-rand / -hier at a longer train_length (a fine-tuning arm, S3 003:20): the table theta (n rows, the
 * trained model's) copied into p's, and p's rows n .. train_length - 1, now parameters, initialised as the shorter
 * model reads them (rand: its random rows; hier: the decomposition of the n rows). EPAR_EINVAL for another mechanism
 * or n outside [1, train_length]. */
int epar_nnpos_ape_grow(struct epar_nnpos *p, const float *theta, int n);
/* 1 when mechanism id can be trained */
int epar_nnpos_trainable(enum epar_mech_id id);
/* 1: the model's q and k projections are frozen at orthogonal-qk's draws (hook PROJ; lib/nn) */
int epar_nnpos_frozen_qk(enum epar_mech_id id);
/* catalogue id string -> id of a trainable mechanism; EPAR_EINVAL naming the value, with the trainable list as
 * hint. "learned" (the name training used before the catalogue was one) is read as learned-ape. */
int epar_nnpos_find(const char *name, enum epar_mech_id *id);
/* the catalogue id ("?" out of range) */
const char *epar_nnpos_name(enum epar_mech_id id);
/* "none, epar-basic, ..." every trainable id in catalogue order */
const char *epar_nnpos_list(void);
void epar_nnpos_settings_default(struct epar_nnpos_settings *s);
/* Every catalogue "train_length" still 0 ("the trained length") set to trained_length: run once the length a model
 * is trained at is known, so the configuration records it and a model of that run built at another length (an
 * evaluation at 8x) keeps the trained one. */
void epar_nnpos_resolve(struct epar_nnpos_settings *s, int trained_length);
/* "mech.param=value": set a catalogue parameter a trainable mechanism reads (EPAR_EINVAL naming the problem:
 * unknown mechanism or parameter, value out of range, or a mechanism whose training uses its own settings: EPAR,
 * learned-ape). Values training cannot honour are refused later, by epar_nnpos_validate. */
int epar_nnpos_set(struct epar_nnpos_settings *s, const char *assignment);
/* after epar_nnpos_embed_backward: the input table's row gradients (ext) folded into dtheta (learned-ape-rand / -hier:
 * by row; floater-learned: back through its recursion); nothing for the other mechanisms */
void epar_nnpos_input_fold(struct epar_nnpos *p, int T);

/* Check the settings for mechanism id with head width hs (EPAR_EINVAL with a message). */
int epar_nnpos_validate(enum epar_mech_id id, const struct epar_nnpos_settings *s, int hs);
/* Allocate the tables; theta/dtheta are attached later by lib/nn. */
int epar_nnpos_alloc(struct epar_nnpos *p, enum epar_mech_id id, const struct epar_nnpos_settings *s, int Tmax,
                     int C, int NH, int NL);
void epar_nnpos_free(struct epar_nnpos *p);
/* Number of learned floats (the slice of the model's parameter buffer). */
size_t epar_nnpos_n_params(const struct epar_nnpos *p);
void epar_nnpos_init(struct epar_nnpos *p, gsl_rng *r);
/* Tables for length T (every forward: learned parameters change between steps). */
void epar_nnpos_prepare(struct epar_nnpos *p, int T);
void epar_nnpos_backward(struct epar_nnpos *p, int l, const struct epar_nnpos_grad *g, int B, int T);

/* Input hook: x (B,T,C) += (or *=) the position term of t. Backward: the learned table's gradient from dx and
 * (multiplied) dx <- dx * p in place; the token rows wte[tokens] (V,C), tokens (B,T) are the embedding before
 * the position term (read only by a learned multiplied table). */
void epar_nnpos_embed_forward(const struct epar_nnpos *p, float *x, int B, int T);
void epar_nnpos_embed_backward(struct epar_nnpos *p, float *dx, const float *wte, const int *tokens, int B, int T);
/* qk hook: rotate q and k of qkv (B,T,3C) in place by position (or scale q); backward maps dq, dk back. */
void epar_nnpos_qk_forward(const struct epar_nnpos *p, float *qkv, int B, int T);
void epar_nnpos_qk_backward(const struct epar_nnpos *p, float *dqkv, int B, int T);
/* Per-head tables of layer l for the attention kernel: factor (NH, T) and bias (NH, T), or NULL.
 * The row stride of both is Tmax. */
const float *epar_nnpos_factor(const struct epar_nnpos *p, int l);
const float *epar_nnpos_bias(const struct epar_nnpos *p, int l);
/* the attention kernel's scratch for mechanism id at length Tmax (lib/nn sizes its arena with it, and slices it with it
 * at the current length) */
void epar_nnpos_scratch(enum epar_mech_id id, const struct epar_nnpos_settings *s, int Tmax, int hs, size_t *per_thread,
                        size_t *per_bh);
/* the mechanism's term added to the last layer's input x (B, T, C) (last_input: DeBERTa's EMD); backward: its gradient
 * from that input's dx (B, T, C), dx unchanged. Nothing for a mechanism without one. */
void epar_nnpos_last_input_forward(const struct epar_nnpos *p, float *x, int B, int T);
void epar_nnpos_last_input_backward(struct epar_nnpos *p, const float *dx, int B, int T);
/* (T, T) additive table of masks and fixed patterns (layer l's when the tables differ by layer), row stride Tmax, or
 * NULL; the floats between two heads' tables
 * (0: shared by the heads; fixed-mix and learnable-only: one per head); the heads whose output is 0 (NH), or NULL */
const float *epar_nnpos_pair(const struct epar_nnpos *p, int l);
size_t epar_nnpos_pair_head(const struct epar_nnpos *p);
const unsigned char *epar_nnpos_head_off(const struct epar_nnpos *p);
/* fixed-mix's pattern of head h < NH - 1, fixed-only's of every head (lib/mech's numbering: current 1, previous 2,
 * left 4, first token 8, cycled) */
int epar_nnpos_mix_pattern(int h);
/* pair (T, T), row stride Tmax <- 0 where mask M (T, T) allows j <= i, -inf elsewhere; a row with no key attends to
 * itself (the masks' tables; pi-attention's two, lib/mechs/pi_attention.c) */
void epar_nnpos_mask_to_pair(const struct epar_nnpos *p, float *pair, const unsigned char *M, int T);
/* Current alpha, beta, gamma of layer l, head h (learned or fixed). */
struct epar_posfx epar_nnpos_effect(const struct epar_nnpos *p, int l, int h);

#endif
