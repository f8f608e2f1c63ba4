#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include <gsl/gsl_randist.h>
#include "err.h"
#include "rng.h"
#include "model.h"

/* ---- layers ---- */

int epar_model_linear_alloc(struct epar_model_linear *l, int in, int out)
{
    memset(l, 0, sizeof *l);
    if (in < 1 || out < 1) return epar_err_set(EPAR_EINVAL, "linear layer needs in, out >= 1, got '%dx%d'", in, out);
    double *m = epar_err_alloc((size_t)out * in + (size_t)out, sizeof *m, "linear layer");
    if (!m) return EPAR_ENOMEM;
    l->in = in;
    l->out = out;
    l->W = m;
    l->b = m + (size_t)out * in;
    return EPAR_OK;
}

void epar_model_linear_init(struct epar_model_linear *l, gsl_rng *r)
{
    epar_rng_linear_init(r, l->W, l->b, l->out, l->in);
}

void epar_model_linear_free(struct epar_model_linear *l)
{
    free(l->W);
    memset(l, 0, sizeof *l);
}

void epar_model_linear_forward(const struct epar_model_linear *l, const double *x, int N, double *y)
{
    for (int i = 0; i < N; i++) memcpy(y + (size_t)i * l->out, l->b, (size_t)l->out * sizeof *y);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, l->out, l->in, 1.0, x, l->in, l->W, l->in, 1.0, y,
                l->out);
}

int epar_model_embedding_alloc(struct epar_model_embedding *e, int num, int dim)
{
    memset(e, 0, sizeof *e);
    if (num < 1 || dim < 1) return epar_err_set(EPAR_EINVAL, "embedding needs num, dim >= 1, got '%dx%d'", num, dim);
    if (!(e->W = epar_err_alloc((size_t)num * dim, sizeof *e->W, "embedding"))) return EPAR_ENOMEM;
    e->num = num;
    e->dim = dim;
    return EPAR_OK;
}

void epar_model_embedding_init(struct epar_model_embedding *e, gsl_rng *r)
{
    epar_rng_normal(r, e->W, (size_t)e->num * e->dim, 1.0);
}

void epar_model_embedding_free(struct epar_model_embedding *e)
{
    free(e->W);
    memset(e, 0, sizeof *e);
}

void epar_model_embedding_forward(const struct epar_model_embedding *e, const int *ids, int N, double *y)
{
    for (int i = 0; i < N; i++)
        memcpy(y + (size_t)i * e->dim, e->W + (size_t)ids[i] * e->dim, (size_t)e->dim * sizeof *y);
}

void epar_model_relu(double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(x[i] > 0)) x[i] = 0.0;
}

void epar_model_sigmoid(double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = 1.0 / (1.0 + exp(-x[i]));
}

void epar_model_softmax_rows(double *x, int N, int d)
{
    for (int i = 0; i < N; i++) {
        double *r = x + (size_t)i * d, M = -INFINITY, s = 0.0;
        for (int j = 0; j < d; j++)
            if (r[j] > M) M = r[j];
        for (int j = 0; j < d; j++) s += (r[j] = exp(r[j] - M));
        for (int j = 0; j < d; j++) r[j] /= s;
    }
}

void epar_model_dropout(double *x, size_t n, double p, gsl_rng *r)
{
    if (!r || p <= 0) return;
    double keep = 1.0 / (1.0 - p);
    for (size_t i = 0; i < n; i++) x[i] = gsl_rng_uniform(r) < p ? 0.0 : x[i] * keep;
}

/* ---- the adaptive modules ---- */

#define LINEARS(m) {&(m)->task_g1, &(m)->task_g2, &(m)->task_c1, &(m)->task_c2, &(m)->content1, &(m)->content2, \
                    &(m)->content3, &(m)->type1, &(m)->type2, &(m)->fuse1, &(m)->fuse2}

int epar_model_adaptive_alloc(struct epar_model_adaptive *m, int D, int n_tasks, int task_dim, int n_types,
                              double dropout)
{
    memset(m, 0, sizeof *m);
    if (D < 4) return epar_err_set(EPAR_EINVAL, "adaptive modules need hidden >= 4, got '%d'", D);
    if (n_tasks < 1 || task_dim < 1 || n_types < 1)
        return epar_err_set(EPAR_EINVAL, "adaptive modules need tasks, task embedding and content types >= 1");
    if (!(dropout >= 0 && dropout < 1)) return epar_err_set(EPAR_EINVAL, "dropout must be in [0, 1), got '%g'", dropout);
    m->D = D;
    m->n_tasks = n_tasks;
    m->task_dim = task_dim;
    m->n_types = n_types;
    m->dropout = dropout;
    int st = epar_model_embedding_alloc(&m->task_emb, n_tasks, task_dim);
    struct { struct epar_model_linear *l; int in, out; } sz[] = {
        {&m->task_g1, task_dim, D}, {&m->task_g2, D, D}, {&m->task_c1, D, D / 2}, {&m->task_c2, D / 2, n_tasks},
        {&m->content1, D, D / 2}, {&m->content2, D / 2, D / 4}, {&m->content3, D / 4, 1},
        {&m->type1, D, D / 2}, {&m->type2, D / 2, n_types}, {&m->fuse1, 3, D}, {&m->fuse2, D, 1}};
    for (size_t i = 0; !st && i < sizeof sz / sizeof sz[0]; i++) st = epar_model_linear_alloc(sz[i].l, sz[i].in, sz[i].out);
    if (st) epar_model_adaptive_free(m);
    return st;
}

void epar_model_adaptive_init(struct epar_model_adaptive *m, gsl_rng *r)
{
    epar_model_embedding_init(&m->task_emb, r);
    struct epar_model_linear *all[] = LINEARS(m);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) epar_model_linear_init(all[i], r);
}

void epar_model_adaptive_free(struct epar_model_adaptive *m)
{
    epar_model_embedding_free(&m->task_emb);
    struct epar_model_linear *all[] = LINEARS(m);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) epar_model_linear_free(all[i]);
}

size_t epar_model_adaptive_ws_size(const struct epar_model_adaptive *m, int L)
{
    size_t n = L > 1 ? (size_t)L : 1;
    return n * (2 * (size_t)m->D + m->task_dim + m->n_types + m->n_tasks + 8) + 2 * (size_t)m->D + m->n_tasks;
}

void epar_model_task_weights(const struct epar_model_adaptive *m, const int *ids, int N, double *tw, double *ws)
{
    double *e = ws, *h = ws + (size_t)N * m->task_dim;  /* (N,E), (N,D) */
    epar_model_embedding_forward(&m->task_emb, ids, N, e);
    epar_model_linear_forward(&m->task_g1, e, N, h);
    epar_model_relu(h, (size_t)N * m->D);
    epar_model_linear_forward(&m->task_g2, h, N, tw);
    epar_model_sigmoid(tw, (size_t)N * m->D);
}

void epar_model_task_classify(const struct epar_model_adaptive *m, const double *x, int L, double *probs,
                              double *ws)
{
    int D = m->D;
    double *pool = ws, *h = ws + D;  /* (D), (D/2) */
    memset(pool, 0, (size_t)D * sizeof *pool);
    for (int i = 0; i < L; i++) cblas_daxpy(D, 1.0 / L, x + (size_t)i * D, 1, pool, 1);
    epar_model_linear_forward(&m->task_c1, pool, 1, h);
    epar_model_relu(h, (size_t)D / 2);
    epar_model_linear_forward(&m->task_c2, h, 1, probs);
    epar_model_softmax_rows(probs, 1, m->n_tasks);
}

void epar_model_content_importance(const struct epar_model_adaptive *m, const double *x, int L, gsl_rng *r,
                                   double *c, double *ws)
{
    int D = m->D;
    double *h1 = ws, *h2 = ws + (size_t)L * (D / 2);  /* (L,D/2), (L,D/4) */
    epar_model_linear_forward(&m->content1, x, L, h1);
    epar_model_relu(h1, (size_t)L * (D / 2));
    epar_model_dropout(h1, (size_t)L * (D / 2), m->dropout, r);
    epar_model_linear_forward(&m->content2, h1, L, h2);
    epar_model_relu(h2, (size_t)L * (D / 4));
    epar_model_linear_forward(&m->content3, h2, L, c);
    epar_model_sigmoid(c, (size_t)L);
}

void epar_model_content_types(const struct epar_model_adaptive *m, const double *x, int L, double *probs,
                              double *ws)
{
    int D = m->D;
    double *h = ws;  /* (L,D/2) */
    epar_model_linear_forward(&m->type1, x, L, h);
    epar_model_relu(h, (size_t)L * (D / 2));
    epar_model_linear_forward(&m->type2, h, L, probs);
    epar_model_softmax_rows(probs, L, m->n_types);
}

void epar_model_fuse(const struct epar_model_adaptive *m, double *base, int L, double t, const double *c,
                     double *f, double *ws)
{
    double *in = ws, *h = ws + (size_t)L * 3;  /* (L,3), (L,D) */
    for (int i = 0; i < L; i++) {
        const double *row = base + (size_t)i * L;
        double s = 0.0;
        for (int j = 0; j < L; j++) s += row[j];
        double mb = s / L;
        /* row means of task = t base and content = c_i base, without forming them */
        in[3 * i] = mb;
        in[3 * i + 1] = t * mb;
        in[3 * i + 2] = c[i] * mb;
    }
    epar_model_linear_forward(&m->fuse1, in, L, h);
    epar_model_relu(h, (size_t)L * m->D);
    epar_model_linear_forward(&m->fuse2, h, L, f);
    epar_model_sigmoid(f, (size_t)L);
    for (int i = 0; i < L; i++) {
        double *row = base + (size_t)i * L;
        double k = (1.0 - f[i]) + 0.5 * f[i] * t + 0.5 * f[i] * c[i];
        for (int j = 0; j < L; j++) row[j] *= k;
    }
}
