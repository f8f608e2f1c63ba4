/* attn: one attention layer with random (PyTorch-default) weights and the composition order of
 * docs/MECHANISMS.md §1:
 *   (1) input PE: x = X + E (the reference's learned embedding) and the optional input hook;
 *   (2) projections q = x W_Q^T + b_Q, k = x W_K^T + b_K (BLAS), then the optional q/k transform hook;
 *   (3) s_ij = scale * q_i . k_j   (reference: scale = 1/sqrt(hidden); paper: 1/sqrt(head dim));
 *   (4) multiplicative factor (EPAR m_ij, log-n, ...);
 *   (5) additive bias (ALiBi, T5, ...);
 *   (6) boolean mask and the causal flag;
 *   (7) row softmax of z / T over the allowed set, with the empty-row policy;
 *       edge cases (defined, tested in tests/unit/test_edge.c): a row with no allowed key follows the
 *       empty-row policy; equal scores give exactly 1/n; scores that overflow to +-inf (huge alpha,
 *       tiny T) give the softmax limit, the row's mass shared equally by the entries equal to the
 *       maximum; a NaN score makes every allowed entry of its row NaN (masked ones stay 0);
 *   (8) head average (epar_attn_head_average).
 * Shapes: X and x are (L,D); Q, K are (L,D) with head h in columns h*dk..(h+1)*dk-1; A is (H,L,L). */
#ifndef EPAR_ATTN_H
#define EPAR_ATTN_H

#include <stddef.h>
#include <gsl/gsl_rng.h>

enum epar_empty_policy { EPAR_EMPTY_SELF = 0, EPAR_EMPTY_ZERO = 1 };

/* The layer's random parameters. E may be absent (has_pos_embedding = 0). */
struct epar_layer {
    int L, D;
    int has_pos_embedding;
    double *E;          /* (L,D) learned absolute position embedding, N(0,1) */
    double *Wq, *bq;    /* (D,D), (D) */
    double *Wk, *bk;
    double *Wv, *bv;
};

/* Hooks that later mechanisms plug into; every member may be NULL / 0. */
struct epar_attn_mods {
    void (*input)(void *ctx, double *x, int L, int D);                      /* (1) in place, x (L,D) */
    void (*qk)(void *ctx, int head, double *Q, double *K, int L, int dk, int ld); /* (2) head slice, row stride ld */
    void *ctx;
    const double *factor;       /* (4) (L,L), shared by all heads, or NULL */
    const double *bias;         /* (5) (L,L) if bias_per_head == 0, else (H,L,L); or NULL */
    int bias_per_head;
    const unsigned char *mask;  /* (6) (L,L) 1 = allowed, or NULL */
};

struct epar_attn_cfg {
    int L, D, heads;
    double scale;       /* multiplies q.k */
    double inv_temp;    /* 1/T */
    int causal;
    enum epar_empty_policy empty;
};

/* Workspace for one forward pass (one batch item); allocate once per thread. */
struct epar_attn_ws {
    double *x, *Q, *K;  /* (L,D) each */
};

int epar_attn_layer_alloc(struct epar_layer *layer, int L, int D, int has_pos_embedding);
/* Draw E ~ N(0,1) (if present), then W_Q, b_Q, W_K, b_K, W_V, b_V ~ U(+-1/sqrt(D)) in that order. */
void epar_attn_layer_init(struct epar_layer *layer, gsl_rng *r);
void epar_attn_layer_free(struct epar_layer *layer);

int epar_attn_ws_alloc(struct epar_attn_ws *ws, int L, int D);
void epar_attn_ws_free(struct epar_attn_ws *ws);

/* Validate L >= 1, D >= 1, heads >= 1 dividing D. */
int epar_attn_cfg_validate(const struct epar_attn_cfg *cfg);

/* Full forward for one item: X (L,D) -> A (H,L,L). Returns the number of empty rows in *n_empty
 * (may be NULL). Uses ws; does not allocate. */
void epar_attn_forward(const struct epar_attn_cfg *cfg, const struct epar_layer *layer,
                       const struct epar_attn_mods *mods, const double *X, double *A,
                       struct epar_attn_ws *ws, int *n_empty);

/* Steps (1)-(2) for one item: ws->x = X + E (+ input hook), ws->Q, ws->K (+ q/k hook of every head).
 * epar_attn_forward = this + epar_attn_head per head; call it alone to score several effects on the
 * same projections. */
void epar_attn_project(const struct epar_attn_cfg *cfg, const struct epar_layer *layer,
                       const struct epar_attn_mods *mods, const double *X, struct epar_attn_ws *ws);

/* V (L,D) <- x W_V^T + b_V for the input x (L,D) after step (1) (ws->x once epar_attn_project has run). The
 * analyses need A only; the attention output O = A V (its cost is what compare times) needs V. */
void epar_attn_values(const struct epar_attn_cfg *cfg, const struct epar_layer *layer, const double *x, double *V);

/* Steps (3)-(7) for one head from given Q, K (L, ld) head slices: A (L,L). */
void epar_attn_head(const struct epar_attn_cfg *cfg, const struct epar_attn_mods *mods, int head,
                    const double *Qh, const double *Kh, int ld, double *A, int *n_empty);

/* Steps (4)-(7) in place on a score matrix S (L,L) for one head; returns the number of empty rows. */
int epar_attn_softmax_rows(const struct epar_attn_cfg *cfg, const struct epar_attn_mods *mods, int head,
                           double *S);

/* Abar (L,L) = mean over heads of A (H,L,L). */
void epar_attn_head_average(const double *A, int H, int L, double *Abar);

#endif
