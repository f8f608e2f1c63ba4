/* optim: AdamW with linear warm-up and cosine decay of the learning rate, and global gradient-norm
 * clipping (Loshchilov & Hutter 2019; the GPT-2/llm.c recipe).
 *
 *   lr(s)  = lr_max (s + 1) / warmup                                   for s < warmup
 *          = lr_min + (lr_max - lr_min) (1 + cos(pi u)) / 2,  u = (s - warmup) / (steps - warmup - 1)   after
 *            (so the last step, s = steps - 1, runs at lr_min; lr_max throughout when steps - warmup <= 1)
 *   g     <- g min(1, clip / ||g||_2)                                  (clip <= 0: no clipping)
 *   m     <- beta1 m + (1 - beta1) g;  v <- beta2 v + (1 - beta2) g^2
 *   p     <- p - lr (m / (1 - beta1^t) / (sqrt(v / (1 - beta2^t)) + eps) + wd p)   (wd only where decayed)
 *
 * Arrays are flat (n); segments say which ranges get weight decay. The norm is a double sum over fixed
 * blocks in a fixed order: the same bits for any thread count. */
#ifndef EPAR_OPTIM_H
#define EPAR_OPTIM_H

#include <stddef.h>

struct epar_optim_config {
    double lr;              /* peak learning rate */
    double lr_min_ratio;    /* lr_min = lr * lr_min_ratio at the last step */
    int warmup;             /* warm-up steps */
    int steps;              /* total steps of the schedule */
    double beta1, beta2, eps, weight_decay;
    double clip;            /* max global gradient norm; <= 0: off */
};

struct epar_optim_segment {
    size_t offset, size;
    int decay;              /* 1: weight decay applies */
};

struct epar_optim {
    struct epar_optim_config cfg;
    size_t n;
    float *m, *v;           /* (n) first and second moments */
    long t;                 /* updates done (bias correction) */
    double *partial;        /* (nblocks) norm partial sums */
    size_t nblocks;
};

int epar_optim_config_validate(const struct epar_optim_config *c);
int epar_optim_alloc(struct epar_optim *o, const struct epar_optim_config *c, size_t n);
void epar_optim_free(struct epar_optim *o);
/* learning rate of step s (0-based) */
double epar_optim_lr(const struct epar_optim_config *c, int step);
/* ||g||_2 of g (n) */
double epar_optim_grad_norm(struct epar_optim *o, const float *g);
/* One AdamW update of params (n) with grads (n) scaled by min(1, clip / norm) (grads are not modified);
 * returns the norm before clipping. The AVX2 loop where the CPU has it, else the scalar C one: the same bits. */
double epar_optim_step(struct epar_optim *o, float *params, float *grads, const struct epar_optim_segment *seg,
                       int nseg, double lr);

#endif
