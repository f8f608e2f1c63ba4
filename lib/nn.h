/* nn: a small decoder-only (causal) Transformer in float32, forward and backward written out (after
 * karpathy/llm.c train_gpt2.c): token embedding (+ an input position term), NL pre-LayerNorm blocks
 * (multi-head attention with a position-mechanism hook, residual, MLP with GELU, residual), a final
 * LayerNorm, the output head tied to the token embedding, softmax cross-entropy with a per-position
 * loss mask.
 *
 * Legend: B batch, T sequence length (<= Tmax), C model width, NH heads, hs = C/NH head width, F MLP
 * width, NL layers, V vocabulary. Every array is row-major; every buffer states its shape.
 *
 * Memory: one flat parameter buffer, one flat gradient buffer (same layout), one activation arena and
 * one scratch arena, all allocated by epar_nn_alloc from the config; forward and backward never
 * allocate. Matrix products are OpenBLAS sgemm calls on fixed row blocks.
 *
 * Determinism: every parallel loop either writes disjoint outputs or reduces over fixed blocks in a
 * fixed order, so results are byte-identical for any OpenMP thread count. BLAS runs single-threaded
 * inside the threads (cmd/main.c sets it); a different OpenBLAS kernel (OPENBLAS_CORETYPE) changes the
 * last bits of the sgemm sums. */
#ifndef EPAR_NN_H
#define EPAR_NN_H

#include <stddef.h>
#include <gsl/gsl_rng.h>
#include "nnpos.h"
#include "optim.h"

struct epar_nn_config {
    int V;              /* vocabulary */
    int Tmax;           /* longest sequence the model runs (learned positions: table size) */
    int Bmax;           /* largest batch the activations are sized for */
    int C, NH, NL, F;   /* width, heads, layers, MLP width */
    enum epar_mech_id pos;  /* a trainable catalogue mechanism (lib/nnpos) */
    struct epar_nnpos_settings pos_settings;
    double init_sd;     /* 0.02 (GPT-2); residual projections get init_sd / sqrt(2 NL) */
};

/* parameter tensors, in the order of the flat buffer */
enum {
    EPAR_NN_WTE, EPAR_NN_LN1W, EPAR_NN_LN1B, EPAR_NN_QKVW, EPAR_NN_QKVB, EPAR_NN_ATTPROJW, EPAR_NN_ATTPROJB,
    EPAR_NN_LN2W, EPAR_NN_LN2B, EPAR_NN_FCW, EPAR_NN_FCB, EPAR_NN_FCPROJW, EPAR_NN_FCPROJB, EPAR_NN_LNFW,
    EPAR_NN_LNFB, EPAR_NN_POS, EPAR_NN_NTENSORS
};

struct epar_nn_params {
    float *wte;         /* (V, C) token embedding, also the output head */
    float *ln1w, *ln1b; /* (NL, C) */
    float *qkvw;        /* (NL, 3C, C); GQA: (NL, C + 2 G hs, C) (epar_nn_qkv_width) */
    float *qkvb;        /* (NL, 3C); GQA: (NL, C + 2 G hs) */
    float *attprojw;    /* (NL, C, C) */
    float *attprojb;    /* (NL, C) */
    float *ln2w, *ln2b; /* (NL, C) */
    float *fcw;         /* (NL, F, C) */
    float *fcb;         /* (NL, F) */
    float *fcprojw;     /* (NL, C, F) */
    float *fcprojb;     /* (NL, C) */
    float *lnfw, *lnfb; /* (C) */
    float *pos;         /* (n_pos) the position mechanism's learned parameters (lib/nnpos), may be empty */
};

struct epar_nn_acts {
    float *encoded;     /* (B, T, C) embedding + input position term */
    float *ln1;         /* (NL, B, T, C) */
    float *ln1_mean;    /* (NL, B, T) */
    float *ln1_rstd;    /* (NL, B, T) */
    float *qkv;         /* (NL, B, T, 3C) q, k (rotated by RoPE when that is the mechanism), v */
    float *preatt;      /* (NL, B, NH, T, T) s_ij = q_i . k_j / sqrt(hs), j <= i; written only when a learned
                         * factor needs it in backward (EPAR with learn_posfx) */
    float *att;         /* (NL, B, NH, T, T) attention weights, 0 for j > i */
    float *atty;        /* (NL, B, T, C) attention output (heads concatenated) */
    float *residual2;   /* (NL, B, T, C) residual + attention projection */
    float *ln2;         /* (NL, B, T, C) */
    float *ln2_mean;    /* (NL, B, T) */
    float *ln2_rstd;    /* (NL, B, T) */
    float *fch;         /* (NL, B, T, F) */
    float *fch_gelu;    /* (NL, B, T, F) */
    float *fch_s;       /* (NL, B, T, F) the GELU's s = sigmoid(2u) of fch, kept for the backward */
    float *residual3;   /* (NL, B, T, C) block output */
    float *lnf;         /* (B, T, C) */
    float *lnf_mean;    /* (B, T) */
    float *lnf_rstd;    /* (B, T) */
    float *probs;       /* (B, T, V) softmax of the logits; the logits' gradient in place after backward */
    float *losses;      /* (B, T) cross-entropy in nats per position (0 where the mask is 0) */
    unsigned char *correct; /* (B, T) argmax of the logits == target */
};

/* backward scratch: one layer at a time */
struct epar_nn_scratch {
    float *dres;        /* (B, T, C) gradient of the residual stream */
    float *dln;         /* (B, T, C) gradient of a LayerNorm output */
    float *dqkv;        /* (B, T, 3C) */
    float *datty;       /* (B, T, C) */
    float *dfch;        /* (B, T, F) */
    float *datt;        /* (nthreads, T, T) per-thread attention scratch */
    float *gfac;        /* (B, NH, T) per-(b,h) sum over pairs at distance d of dz_ij s_ij */
    float *gbias;       /* (B, NH, T) per-(b,h) sum over pairs at distance d of dz_ij */
    float *part;        /* (nblocks, 2 max(C, V)) partial sums of the reductions over rows */
    float *rwork;       /* (nthreads, the mechanism's per-thread floats: lib/nnpos's scratch hook) its own form's or its
                         * content bias's scratch */
    float *grel;        /* (B, NH, the mechanism's per-(b, h) floats) its gradient slots (relative tables, pi-attention's
                         * gate) or a learned pair table's gradient */
    float *qkvc;        /* (B, T, C + 2 G hs) GQA's projection output (forward) and its gradient (backward); else empty */
};

/* Evaluation-time interventions on a trained model (F8, F9 of docs/SOURCE_STATEMENTS.md): default none (a zeroed
 * struct epar_nn has none), and then the forward pass is the one training runs, bit for bit.
 * Head masking (001:89, "heads can be pruned"): head h of layer l with head_mask[l NH + h] != 0 has its output zeroed
 * before the attention projection (its columns h hs .. of atty), so the residual stream gets only the projection's
 * bias and the other heads. The backward honours it (the masked heads' output gradient is 0).
 * Attention boost (004:707-726, enforce_attention): in layer `layer` every weight A_ij of query i on a key j with
 * keys[(b T + i) T + j] != 0 is multiplied by `factor`, then the layer's output is recomputed from the changed weights
 * (O_i = sum_j A_ij v_j). As written (renorm 0) the rows then no longer sum to 1; renorm 1 divides each changed row by
 * its new sum, which is the same as adding ln(factor) to those keys' logits before the softmax. att keeps the changed
 * weights (epar inspect shows them). Forward only: a backward after a boosted forward is not that forward's. */
struct epar_nn_boost {
    double factor;              /* the multiplier of the selected weights (1: the weights unchanged) */
    int layer;                  /* the layer it acts on (0 .. NL-1) */
    int renorm;                 /* 0: as written (rows no longer sum to 1); 1: changed rows renormalised */
    const unsigned char *keys;  /* (B, T, T) of the next forward: 1 where query i's weight on key j <= i is boosted;
                                 * NULL: no boost */
};

/* the ops of a step, for the per-op profile (struct epar_nn's profile, op_seconds) */
enum {
    EPAR_NN_OP_EMBED,        /* token rows and the input position term, forward and backward */
    EPAR_NN_OP_LAYERNORM,    /* forward */
    EPAR_NN_OP_LINEAR,       /* the linear layers' and the head's products with bias and residual, forward */
    EPAR_NN_OP_POSITION,     /* the position mechanism outside the attention kernel (tables, RoPE), both ways */
    EPAR_NN_OP_ATTENTION,    /* the attention kernel: scores, softmax, weighted values, forward */
    EPAR_NN_OP_GELU,         /* forward */
    EPAR_NN_OP_LOSS,         /* softmax cross-entropy, forward and backward */
    EPAR_NN_OP_LINEAR_BWD,   /* input, weight and bias gradients of the linear layers and the head */
    EPAR_NN_OP_ATTENTION_BWD,
    EPAR_NN_OP_GELU_BWD,
    EPAR_NN_OP_LAYERNORM_BWD,
    EPAR_NN_NOPS
};

struct epar_nn {
    struct epar_nn_config cfg;
    struct epar_nnpos pos;
    size_t sizes[EPAR_NN_NTENSORS];
    size_t offsets[EPAR_NN_NTENSORS];
    size_t n_params;
    float *params_mem, *grads_mem;      /* (n_params) each */
    struct epar_nn_params p, g;          /* views into params_mem and grads_mem */
    float *acts_mem;
    struct epar_nn_acts a;
    float *scratch_mem;
    struct epar_nn_scratch s;
    int nthreads;                       /* per-thread scratch slots */
    int B, T;                           /* shape of the last forward */
    int *tokens;                        /* (Bmax, Tmax) copy of the last tokens */
    int *targets;                       /* (Bmax, Tmax) copy of the last targets */
    float *mask;                        /* (Bmax, Tmax) copy of the last loss mask */
    double mask_sum;                    /* sum of the last mask */
    double loss;                        /* mean cross-entropy over the masked positions (nats) */
    int time_attention;                 /* 1: add the calling thread's CPU seconds in the position mechanism and
                                         * attention (forward and backward) to attn_cpu_seconds; one thread only */
    double attn_cpu_seconds;
    double pos_cpu_seconds;     /* the calling thread's CPU seconds in the input position table's preparation and the
                                 * fold of its gradient (floater-learned's recursion both ways), always measured */
    int profile;                        /* add each op's seconds to op_seconds[EPAR_NN_OP_*] (bench/train_step's per-op
                                         * profile): 1 wall clock around the whole op (all its threads), 2 the calling
                                         * thread's CPU time (for one thread: not inflated by other processes) */
    double op_seconds[EPAR_NN_NOPS];
    const unsigned char *head_mask;     /* (NL, NH) 1: that head's output zeroed (above); NULL: none */
    struct epar_nn_boost boost;         /* keys NULL: none (above) */
};

/* CPU seconds of the calling thread (CLOCK_THREAD_CPUTIME_ID): unaffected by other processes holding the cores */
double epar_nn_thread_cpu(void);

/* K/V heads of the model (NH, or gqa.groups) and the width of the QKV projection's output, C + 2 KV hs (3C for
 * multi-head attention): qkvw is (NL, width, C), rows q (C), k (KV hs), v (KV hs). The activations keep q, k, v of
 * every head (B, T, 3C): a shared K/V head is copied to the query heads of its group, their gradients summed back. */
int epar_nn_kv_heads(const struct epar_nn_config *c);
int epar_nn_qkv_width(const struct epar_nn_config *c);
/* Check sizes and mechanism (EPAR_EINVAL naming the value). */
int epar_nn_config_validate(const struct epar_nn_config *c);
/* Bytes epar_nn_alloc would take (to refuse a size that cannot fit before allocating). */
double epar_nn_bytes(const struct epar_nn_config *c, int nthreads);
int epar_nn_alloc(struct epar_nn *m, const struct epar_nn_config *c);
void epar_nn_free(struct epar_nn *m);
/* GPT-2 init from r: weights N(0, init_sd^2), residual projections N(0, init_sd^2 / (2 NL)), biases 0,
 * LayerNorm 1 and 0, then the mechanism's parameters; orthogonal-qk then draws each layer's frozen q and k rows
 * (lib/mech's epar_mech_orthogonal_qk_draw, biases 0). EPAR_ENOMEM when that draw cannot allocate. */
int epar_nn_init(struct epar_nn *m, gsl_rng *r);
/* The parameters training keeps at their initial values (orthogonal-qk: every layer's q and k rows of the QKV
 * projection and their biases): up to max (offset, size) ranges of params_mem, increasing; returns their count
 * (0: none). The gradient is computed for them as for any parameter; the trainer leaves them out: */
int epar_nn_frozen(const struct epar_nn *m, size_t *offset, size_t *size, int max);
/* AdamW's segments (lib/optim): every tensor with its weight decay (epar_nn_decayed), less the frozen ranges; returns
 * their count, at most EPAR_NN_NTENSORS + 2 NL (max) */
int epar_nn_segments(const struct epar_nn *m, struct epar_optim_segment *seg, int max);
/* the frozen ranges' gradient set to 0 after a backward: no share of the clipping norm */
void epar_nn_frozen_grad_zero(struct epar_nn *m);
/* Weight decay applies to tensor k (the embedding and the four weight matrices per layer). */
int epar_nn_decayed(int k);
const char *epar_nn_tensor_name(int k);

/* tokens, targets (B, T) in [0, V); mask (B, T) loss weights (targets/mask NULL: no loss).
 * Returns EPAR_EINVAL for B > Bmax, T > Tmax or a token out of range. Sets m->loss. */
int epar_nn_forward(struct epar_nn *m, const int *tokens, const int *targets, const float *mask, int B, int T);
void epar_nn_zero_grad(struct epar_nn *m);
/* gradient of m->loss (the masked mean) into m->g; needs a forward with targets */
void epar_nn_backward(struct epar_nn *m);
/* correct predictions and scored positions of the last forward (mask > 0) */
void epar_nn_accuracy(const struct epar_nn *m, long *correct, long *scored);

/* ---- ops (exposed for the unit tests) ---- */
/* out (N, OC) = inp (N, C) W^T (W is (OC, C)) + bias (OC, may be NULL); accumulate: out += instead. */
void epar_nn_matmul_forward(float *out, const float *inp, const float *W, const float *bias, int N, int C, int OC,
                            int accumulate);
/* out (N, OC) = res (N, OC; NULL: 0; may equal out) + bias (OC, may be NULL) + inp (N, C) W^T */
void epar_nn_matmul_forward_res(float *out, const float *res, const float *inp, const float *W, const float *bias,
                                int N, int C, int OC);
/* dinp (N, C) = dout W (accumulate_dinp: +=); dW (OC, C) += dout^T inp; dbias (OC) += column sums of dout
 * (dinp, dbias may be NULL); part: (ceil(N/64), OC) scratch for the bias sums. */
void epar_nn_matmul_backward(float *dinp, float *dW, float *dbias, const float *dout, const float *inp,
                             const float *W, int N, int C, int OC, int accumulate_dinp, float *part);
/* out (N, C) = LayerNorm(inp) w + b; mean, rstd (N) saved */
void epar_nn_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                               const float *b, int N, int C);
/* dinp (N, C) += ...; dw, db (C) += ...; part: (ceil(N/64), 2C) scratch */
void epar_nn_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                const float *w, const float *mean, const float *rstd, int N, int C, float *part);
/* 1 when the AVX2 path runs (CPU has AVX2+FMA and not forced portable by epar_nn_set_portable, lib/seams.h) */
int epar_nn_simd(void);
/* out[j] = exp(z[j] - M), j < n (out may be z; every z[j] - M finite): libmvec 16 or 8 lanes a call on the vector
 * paths (the same values), scalar expf on the portable one (a mechanism's own attention form uses it, lib/mechs/) */
void epar_nn_exps(float *out, const float *z, float M, int n);
/* a (i + 1) <- softmax_j(s[j] + pr[j]) over keys j <= i (pr NULL: none), the portable C row of the softmax path (libm
 * expf; pi-attention's two softmaxes, lib/mechs/pi_attention.c, run it on every path) */
void epar_nn_softmax_row(float *a, const float *s, const float *pr, int i);
/* the query block of the causal attention (keys 0 .. end of block): row i of the weights is written up to the end of
 * its block */
#define EPAR_NN_ATT_BLOCK 64
/* GELU, tanh approximation (GPT-2); backward: dinp (n) = dout gelu'(inp) (in place allowed: dinp == dout) */
void epar_nn_gelu_forward(float *out, const float *inp, size_t n);
void epar_nn_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);
/* the same, the forward keeping s (n) = sigmoid(2u) and the backward reading it instead of computing it again (one
 * exp and one division per element fewer; the bits are the same) */
void epar_nn_gelu_forward_keep(float *out, float *s, const float *inp, size_t n);
void epar_nn_gelu_backward_kept(float *dinp, const float *inp, const float *s, const float *dout, size_t n);

/* position pieces of one layer for the attention kernel: tables indexed [h * ld + d], d = i - j, and [i * ld + j] */
struct epar_nn_attn_pos {
    const float *fac;   /* (NH, ld) multiplicative factor of the scaled score, NULL: none */
    const float *bias;  /* (NH, ld) additive bias after the factor, NULL: none */
    int ld;             /* row stride of fac and bias (>= T) */
    float *gfac;        /* (B, NH, T) out of backward, NULL: not needed */
    float *gbias;       /* (B, NH, T) out of backward, NULL: not needed */
    const float *pair;  /* (T, ld) additive table by (i, j), shared by the heads (masks, fixed patterns; per head: pair_head
                         * below), NULL: none */
    float *work;        /* (nwork, own_work) per-thread scratch of a mechanism's own form or content bias */
    int nwork;
    float *grel;        /* (B, NH, own_grad) out of backward: a mechanism's per-(b, h) gradient slot, or NULL */
    /* the mechanism's own attention of one (b, h) (lib/nnpos.h: epar_nnpos_attn_fwd, _bwd; kernel attention), in place
     * of the softmax (fac, bias, pair unused; preatt must be kept), or NULL: called with mech, layer, its thread's
     * slice of work (own_work floats apart: nwork of them) and, in the backward, the (b, h)'s slot of grel (own_grad
     * floats apart; NULL when own_grad is 0) */
    epar_nnpos_attn_fwd own_forward;
    epar_nnpos_attn_bwd own_backward;
    /* the mechanism's bias that reads q and k (lib/nnpos.h: epar_nnpos_rel_fwd, _row, _bwd; the relative tables), added
     * to each row with bias (fac, pair still apply), or NULL: called as own_forward is (mech, layer, work, grel) */
    epar_nnpos_rel_fwd rel_forward;
    epar_nnpos_rel_row rel_row;
    epar_nnpos_rel_bwd rel_backward;
    const struct epar_nnpos *mech;
    int layer;
    size_t own_work, own_grad;
    /* fixed-mix, learnable-only: pair + h pair_head is head h's table (0: pair shared by the heads); head_off (NH, or
     * NULL): 1 marks a head whose output is 0 (its weights 0, no gradient to its q, k, v) */
    size_t pair_head;
    const unsigned char *head_off;
    /* (B, NH, T, T) out of backward, NULL: not needed: per (b, h) the gradient of the additive pair table, dL/dz_ij for
     * j <= i (a learned pair bias, lib/mechs/); only without a factor (fac NULL), where it is the row's softmax backward */
    float *gpair;
};
/* out (B, T, C) <- causal attention of qkv (B, T, 3C); preatt, att (B, NH, T, T) saved (preatt NULL: the
 * scores are not kept; backward then must not be asked for gfac). Row i of att holds the weights of keys
 * j <= i and zeros up to the end of its query block; entries after that are not written (the backward
 * reads none of them). */
void epar_nn_attention_forward(float *out, float *preatt, float *att, const float *qkv,
                               const struct epar_nn_attn_pos *pos, int B, int T, int C, int NH);
/* dqkv (B, T, 3C) overwritten; datt: (nscratch, T, T) per-thread scratch */
void epar_nn_attention_backward(float *dqkv, const float *dout, const float *qkv, const float *preatt,
                                const float *att, const struct epar_nn_attn_pos *pos, float *datt, int nscratch,
                                int B, int T, int C, int NH);
/* probs (N, V) = softmax(logits), losses (N) = mask (-log p[target]) (mask NULL: 1), correct (N) flags;
 * logits may equal probs (in place) */
void epar_nn_crossentropy_forward(float *probs, float *losses, unsigned char *correct, const float *logits,
                                  const int *targets, const float *mask, int N, int V);
/* dlogits (N, V) = (probs - onehot(target)) mask scale (in place allowed: dlogits == probs) */
void epar_nn_crossentropy_backward(float *dlogits, const float *probs, const int *targets, const float *mask,
                                   double scale, int N, int V);

#endif
