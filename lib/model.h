/* model: small random-initialised dense layers and the adaptive-attention modules of the reference's
 * experiment 4 (docs/PROTOCOLS.md "Experiment 4"). Nothing is trained: every layer keeps its PyTorch-default
 * initial weights.
 *
 * Legend: N = rows (tokens or batch items), D = hidden width, L = sequence length, T = number of tasks,
 * C = number of content types. Every matrix is row-major; a Linear stores W as (out,in) like nn.Linear,
 * y = x W^T + b, computed with one BLAS dgemm for all N rows.
 *
 * The adaptive modules (D = hidden width; shapes as the reference builds them):
 *   task module       embedding(T=10, E=64) ~ N(0,1); generator Linear(E,D)-ReLU-Linear(D,D)-Sigmoid
 *                     -> task weights (D) per item, broadcast over L; the scalar t = mean over D.
 *   task classifier   Linear(D,D/2)-ReLU-Linear(D/2,T)-Softmax on the mean-pooled input (an assumption:
 *                     docs/PROTOCOLS.md does not give its shape; the reference's "detected task" is the given id).
 *   content estimator Linear(D,D/2)-ReLU-Dropout(p)-Linear(D/2,D/4)-ReLU-Linear(D/4,1)-Sigmoid -> c_i (L)
 *   content types     Linear(D,D/2)-ReLU-Linear(D/2,C=5)-Softmax -> (L,C)
 *   fusion            Linear(3,D)-ReLU-Linear(D,1)-Sigmoid on [mean_j base_ij, mean_j task_ij, mean_j content_ij]
 * and the combination before the softmax (base = S * P, the EPAR-modulated scaled scores):
 *   task_ij = t base_ij;  content_ij = c_i base_ij;  final_ij = (1-f_i) base_ij + 0.5 f_i task_ij + 0.5 f_i content_ij.
 * Weights are drawn in the order the struct lists them (embedding, generator 1, 2, classifier 1, 2,
 * content 1, 2, 3, type 1, 2, fusion 1, 2), each Linear weight then bias. */
#ifndef EPAR_MODEL_H
#define EPAR_MODEL_H

#include <stddef.h>
#include <gsl/gsl_rng.h>

struct epar_model_linear {
    int in, out;
    double *W;      /* (out,in) */
    double *b;      /* (out) */
};

struct epar_model_embedding {
    int num, dim;
    double *W;      /* (num,dim) */
};

int epar_model_linear_alloc(struct epar_model_linear *l, int in, int out);
/* W and b ~ U(-1/sqrt(in), 1/sqrt(in)) (PyTorch nn.Linear default). */
void epar_model_linear_init(struct epar_model_linear *l, gsl_rng *r);
void epar_model_linear_free(struct epar_model_linear *l);
/* y (N,out) = x (N,in) W^T + b. x and y must not overlap. */
void epar_model_linear_forward(const struct epar_model_linear *l, const double *x, int N, double *y);

int epar_model_embedding_alloc(struct epar_model_embedding *e, int num, int dim);
/* W ~ N(0,1) (PyTorch nn.Embedding default). */
void epar_model_embedding_init(struct epar_model_embedding *e, gsl_rng *r);
void epar_model_embedding_free(struct epar_model_embedding *e);
/* y (N,dim) = rows ids[0..N-1] of W; ids must be in 0..num-1. */
void epar_model_embedding_forward(const struct epar_model_embedding *e, const int *ids, int N, double *y);

/* in place on x (n) */
void epar_model_relu(double *x, size_t n);
void epar_model_sigmoid(double *x, size_t n);
/* x (N,d): each row replaced by its softmax (max-shifted). */
void epar_model_softmax_rows(double *x, int N, int d);
/* Inverted dropout on x (n): each entry zeroed with probability p, survivors scaled by 1/(1-p).
 * r == NULL or p == 0 is the identity (evaluation mode). */
void epar_model_dropout(double *x, size_t n, double p, gsl_rng *r);

/* The adaptive-attention modules for hidden width D. */
struct epar_model_adaptive {
    int D, n_tasks, task_dim, n_types;
    double dropout;                         /* content estimator's dropout probability (reference 0.1) */
    struct epar_model_embedding task_emb;   /* (T,E) */
    struct epar_model_linear task_g1, task_g2;      /* E->D, D->D */
    struct epar_model_linear task_c1, task_c2;      /* D->D/2, D/2->T */
    struct epar_model_linear content1, content2, content3; /* D->D/2, D/2->D/4, D/4->1 */
    struct epar_model_linear type1, type2;          /* D->D/2, D/2->C */
    struct epar_model_linear fuse1, fuse2;          /* 3->D, D->1 */
};

/* D >= 4 (D/4 hidden units), n_tasks, task_dim, n_types >= 1, 0 <= dropout < 1. EPAR_EINVAL / EPAR_ENOMEM. */
int epar_model_adaptive_alloc(struct epar_model_adaptive *m, int D, int n_tasks, int task_dim, int n_types,
                              double dropout);
void epar_model_adaptive_init(struct epar_model_adaptive *m, gsl_rng *r);
void epar_model_adaptive_free(struct epar_model_adaptive *m);
/* Doubles of workspace the functions below need for sequences of up to L tokens. */
size_t epar_model_adaptive_ws_size(const struct epar_model_adaptive *m, int L);

/* tw (N,D) task weights of the items with task ids (N). */
void epar_model_task_weights(const struct epar_model_adaptive *m, const int *ids, int N, double *tw, double *ws);
/* probs (T) of the task classifier on the mean over L of x (L,D). */
void epar_model_task_classify(const struct epar_model_adaptive *m, const double *x, int L, double *probs,
                              double *ws);
/* c (L) content importance of x (L,D); dropout drawn from r (NULL: off). */
void epar_model_content_importance(const struct epar_model_adaptive *m, const double *x, int L, gsl_rng *r,
                                   double *c, double *ws);
/* probs (L,C) content-type probabilities of x (L,D). */
void epar_model_content_types(const struct epar_model_adaptive *m, const double *x, int L, double *probs,
                              double *ws);
/* In place: base (L,L) -> final (L,L) as in the header comment, with task scalar t and content c (L).
 * f (L) receives the fusion weights. One pass over the matrix for the row means, one to combine. */
void epar_model_fuse(const struct epar_model_adaptive *m, double *base, int L, double t, const double *c,
                     double *f, double *ws);

#endif
