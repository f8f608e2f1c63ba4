/* nnpos: the position mechanisms of the trained Transformer (lib/nn), one registry row each.
 *
 * The analyses use lib/mech; training uses this second registry, which shares its formulas: the
 * sinusoid (epar_mech_sinusoid), the RoPE rotation (epar_mech_rope_rotate), the ALiBi slopes
 * (epar_mech_alibi_slopes), the T5 buckets (epar_mech_t5_bucket) and the EPAR effect (lib/posfx).
 * Nothing is re-typed here: the tables below are filled by calling those functions.
 *
 *   id              kind     what it changes (docs/MECHANISMS.md section)                     learned
 *   none            baseline causal mask only (§2)                                        -
 *   sinusoidal      input    x_t += init_sd p_t, interleaved sin/cos, base 10000 (§5)          -
 *   learned         input    x_t += E[t], E (Tmax, C) ~ N(0, 0.02^2) (§6)                  E
 *   rope            qk       q_t, k_t rotated by t theta_i, interleaved pairs, theta base 10000 (§14)  -
 *   alibi           bias     z_ij = s_ij - m_h (i - j), the standard slopes (§18)          -
 *   t5              bias     z_ij = s_ij + B[bucket(i - j), h], 32 causal buckets, max distance 128,
 *                            one table shared by all layers, B ~ N(0, 0.02^2) (§11)         B
 *   epar-basic      factor   z_ij = s_ij * alpha exp(-beta |i-j| / L) (§3)                  (alpha, beta) per layer and head with --learn-posfx
 *   epar-enhanced   factor   z_ij = s_ij * alpha (1 + gamma exp(-beta |i-j|/L)) / (1 + gamma) (§4)
 *
 * s_ij = q_i . k_j / sqrt(hs) is the scaled content score, so EPAR multiplies the scaled score as the paper
 * writes A = softmax((Q K^T / sqrt(d_k)) . P(i, j, L)). Every bias and factor depends on the distance
 * d = i - j >= 0 only (the model is causal), so the attention kernel reads per-head tables indexed by d.
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
 * Adding a mechanism: one enum value before EPAR_NNPOS_COUNT, one row in epar_nnpos_table (nnpos.c) with
 * its kind and its functions (parameter count, init, tables for a length T, gradient of its parameters).
 * Legend: T = sequence length (<= Tmax), C = model width, NH heads, hs = C / NH, NL layers, B batch. */
#ifndef EPAR_NNPOS_H
#define EPAR_NNPOS_H

#include <stddef.h>
#include <gsl/gsl_rng.h>
#include "posfx.h"

enum epar_nnpos_id {
    EPAR_NNPOS_NONE = 0, EPAR_NNPOS_SINUSOIDAL, EPAR_NNPOS_LEARNED, EPAR_NNPOS_ROPE, EPAR_NNPOS_ALIBI,
    EPAR_NNPOS_T5, EPAR_NNPOS_EPAR_BASIC, EPAR_NNPOS_EPAR_ENHANCED,
    EPAR_NNPOS_COUNT
};

enum epar_nnpos_kind { EPAR_NNPOS_K_BASELINE = 0, EPAR_NNPOS_K_INPUT, EPAR_NNPOS_K_QK, EPAR_NNPOS_K_BIAS,
                       EPAR_NNPOS_K_FACTOR };

/* Settings of the mechanisms (from the protocol; defaults in epar_nnpos_settings_default). */
struct epar_nnpos_settings {
    struct epar_posfx fx;       /* EPAR alpha, beta, gamma (form set from the mechanism) */
    int learn_posfx;            /* 1: alpha, beta (gamma) trainable per layer and head */
    int posfx_length;           /* 0: L = current sequence length T; > 0: this fixed L */
    double rope_base;           /* 10000 */
    double sinusoid_base;       /* 10000 */
    double alibi_max_bias;      /* 8: slopes 2^(-8 (h+1) / NH) */
    int t5_buckets;             /* 32 */
    int t5_max_distance;        /* 128 */
    double init_sd;             /* 0.02: learned tables (E, B); the sinusoid's scale (the token embeddings' sd) */
};

/* A mechanism instantiated for one model. Tables are sized for Tmax and filled for the current T. */
struct epar_nnpos {
    enum epar_nnpos_id id;
    struct epar_nnpos_settings s;
    int Tmax, C, NH, NL, hs;
    int T;                      /* length the tables were last prepared for (0: none) */
    float *theta, *dtheta;      /* learned parameters and their gradient (in lib/nn's flat buffers), or NULL */
    /* tables (NULL when the kind does not use them) */
    float *pe;                  /* (Tmax, C) input PE (sinusoidal) */
    float *rcos, *rsin;         /* (Tmax, hs/2) RoPE cos / sin of t theta_i */
    float *bias;                /* (NH, Tmax) additive bias by distance d (alibi, t5) */
    int *bucket;                /* (Tmax) T5 bucket of distance d */
    double *slopes;             /* (NH) ALiBi slopes */
    float *fac;                 /* (NL, NH, Tmax) factor m(d) (epar) */
    float *dfac;                /* (NL, NH, 3, Tmax) dm(d)/dtheta_k (epar with learn_posfx) */
};

struct epar_nnpos_info {
    const char *id;
    enum epar_nnpos_kind kind;
    const char *section;        /* docs/MECHANISMS.md */
    const char *summary;
    /* fixed tables (independent of T and of the learned parameters), once at alloc */
    int (*build)(struct epar_nnpos *p);
    /* learned parameters of the mechanism (floats) */
    size_t (*n_params)(const struct epar_nnpos *p);
    /* draw the learned parameters (theta) */
    void (*init)(struct epar_nnpos *p, gsl_rng *r);
    /* fill the tables for length T from the settings and theta */
    void (*prepare)(struct epar_nnpos *p, int T);
    /* dtheta += gradient, from the per-(b, h) distance sums of layer l: gfac, gbias (B, NH, T) */
    void (*backward)(struct epar_nnpos *p, int l, const float *gfac, const float *gbias, int B, int T);
};

extern const struct epar_nnpos_info epar_nnpos_table[EPAR_NNPOS_COUNT];

/* id string -> enum; EPAR_EINVAL naming the value, with the list as hint. */
int epar_nnpos_find(const char *name, enum epar_nnpos_id *id);
const char *epar_nnpos_name(enum epar_nnpos_id id);
/* "none, sinusoidal, ..." */
const char *epar_nnpos_list(void);
void epar_nnpos_settings_default(struct epar_nnpos_settings *s);

/* Check the settings for mechanism id with head width hs (EPAR_EINVAL with a message). */
int epar_nnpos_validate(enum epar_nnpos_id id, const struct epar_nnpos_settings *s, int hs);
/* Allocate the tables; theta/dtheta are attached later by lib/nn. */
int epar_nnpos_alloc(struct epar_nnpos *p, enum epar_nnpos_id id, const struct epar_nnpos_settings *s, int Tmax,
                     int C, int NH, int NL);
void epar_nnpos_free(struct epar_nnpos *p);
/* Number of learned floats (the slice of the model's parameter buffer). */
size_t epar_nnpos_n_params(const struct epar_nnpos *p);
void epar_nnpos_init(struct epar_nnpos *p, gsl_rng *r);
/* Tables for length T (every forward: learned parameters change between steps). */
void epar_nnpos_prepare(struct epar_nnpos *p, int T);
void epar_nnpos_backward(struct epar_nnpos *p, int l, const float *gfac, const float *gbias, int B, int T);

/* Input kind: x (B,T,C) += the position term of t; backward: the learned table's gradient from dx. */
void epar_nnpos_embed_forward(const struct epar_nnpos *p, float *x, int B, int T);
void epar_nnpos_embed_backward(struct epar_nnpos *p, const float *dx, int B, int T);
/* qk kind: rotate q and k of qkv (B,T,3C) in place by position; backward rotates dq, dk back. */
void epar_nnpos_qk_forward(const struct epar_nnpos *p, float *qkv, int B, int T);
void epar_nnpos_qk_backward(const struct epar_nnpos *p, float *dqkv, int B, int T);
/* Per-head tables of layer l for the attention kernel: factor (NH, T) and bias (NH, T), or NULL.
 * The row stride of both is Tmax. */
const float *epar_nnpos_factor(const struct epar_nnpos *p, int l);
const float *epar_nnpos_bias(const struct epar_nnpos *p);
/* Current alpha, beta, gamma of layer l, head h (learned or fixed). */
struct epar_posfx epar_nnpos_effect(const struct epar_nnpos *p, int l, int h);

#endif
