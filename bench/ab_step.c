/* ab_step: two builds of lib/nn + lib/optim in one process, training steps alternated, for changes too small to see
 * in separate runs on a shared machine (bench/ab.sh builds the two shared libraries and runs this).
 *
 * Each library (dlopen, RTLD_LOCAL | RTLD_DEEPBIND: its own copy of every lib/ function) gets its own model of the
 * same configuration and seed; steps run A, B, B, A, A, B, ... (forward with the loss, backward, AdamW), and each
 * step's CPU time is read from CLOCK_THREAD_CPUTIME_ID, which other processes taking the core do not inflate. Printed:
 * the median of the per-pair ratios B / A over the timed pairs and its spread (quartiles), the medians of A and B, and
 * whether the two models' weights stayed bit-identical (they do when a change keeps the arithmetic).
 *
 * The driver reads struct epar_nn through the header of the tree it is built in: both libraries must share the
 * prefix of struct epar_nn up to grads_mem (config, position state, sizes, offsets, parameter buffers).
 *
 * usage: ab_step A.so B.so [--pairs N] [--warmup N] [--threads N] [--batch B] [--length T] [--dim C] [--layers NL]
 *                [--heads NH] [--mlp F] [--vocab V] [--mechanism NAME]
 * Exit 2: usage; 3: a library or symbol could not be loaded. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>
#include <gsl/gsl_rng.h>
#include "lib/nn.h"
#include "lib/optim.h"

struct lib {
    void *h;
    void (*settings_default)(struct epar_nnpos_settings *);
    int (*find)(const char *, enum epar_mech_id *);
    int (*alloc)(struct epar_nn *, const struct epar_nn_config *);
    void (*init)(struct epar_nn *, gsl_rng *);
    int (*decayed)(int);
    int (*forward)(struct epar_nn *, const int *, const int *, const float *, int, int);
    void (*zero_grad)(struct epar_nn *);
    void (*backward)(struct epar_nn *);
    int (*optim_alloc)(struct epar_optim *, const struct epar_optim_config *, size_t);
    double (*optim_step)(struct epar_optim *, float *, float *, const struct epar_optim_segment *, int, double);
    double (*lr)(const struct epar_optim_config *, int);
    void (*blas_threads)(int);
    struct epar_nn *m;
    struct epar_optim o;
    struct epar_optim_segment seg[EPAR_NN_NTENSORS];
    int nseg;
};

static void *sym(struct lib *l, const char *name, const char *file)
{
    void *p = dlsym(l->h, name);
    if (!p) {
        fprintf(stderr, "ab_step: %s: no symbol %s\n", file, name);
        exit(3);
    }
    return p;
}

static int load(struct lib *l, const char *file)
{
    l->h = dlopen(file, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!l->h) {
        fprintf(stderr, "ab_step: %s\n", dlerror());
        return 3;
    }
    *(void **)&l->settings_default = sym(l, "epar_nnpos_settings_default", file);
    *(void **)&l->find = sym(l, "epar_nnpos_find", file);
    *(void **)&l->alloc = sym(l, "epar_nn_alloc", file);
    *(void **)&l->init = sym(l, "epar_nn_init", file);
    *(void **)&l->decayed = sym(l, "epar_nn_decayed", file);
    *(void **)&l->forward = sym(l, "epar_nn_forward", file);
    *(void **)&l->zero_grad = sym(l, "epar_nn_zero_grad", file);
    *(void **)&l->backward = sym(l, "epar_nn_backward", file);
    *(void **)&l->optim_alloc = sym(l, "epar_optim_alloc", file);
    *(void **)&l->optim_step = sym(l, "epar_optim_step", file);
    *(void **)&l->lr = sym(l, "epar_optim_lr", file);
    *(void **)&l->blas_threads = sym(l, "epar_blas_threads", file);
    return 0;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(double *x, int n, double q)
{
    qsort(x, (size_t)n, sizeof *x, cmp);
    double pos = q * (n - 1);
    int i = (int)pos;
    return i + 1 < n ? x[i] + (pos - i) * (x[i + 1] - x[i]) : x[i];
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: ab_step A.so B.so [--pairs N] [--warmup N] [--batch B] [--length T] [--dim C] [--layers NL]\n"
                        "               [--heads NH] [--mlp F] [--vocab V] [--mechanism NAME]\n");
        return 2;
    }
    int pairs = 40, warm = 3, B = 24, T = 128, C = 64, NL = 2, NH = 4, F = 256, V = 63;
    const char *mech = "none";
    for (int i = 3; i + 1 < argc; i += 2) {
        int *dst = !strcmp(argv[i], "--pairs") ? &pairs : !strcmp(argv[i], "--warmup") ? &warm
                   : !strcmp(argv[i], "--batch") ? &B : !strcmp(argv[i], "--length") ? &T : !strcmp(argv[i], "--dim") ? &C
                   : !strcmp(argv[i], "--layers") ? &NL : !strcmp(argv[i], "--heads") ? &NH : !strcmp(argv[i], "--mlp") ? &F
                   : !strcmp(argv[i], "--vocab") ? &V : NULL;
        if (dst) *dst = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--mechanism")) mech = argv[i + 1];
        else {
            fprintf(stderr, "ab_step: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    omp_set_num_threads(1);
    struct lib L[2];
    memset(L, 0, sizeof L);
    if (load(&L[0], argv[1]) || load(&L[1], argv[2])) return 3;
    int *tok = malloc((size_t)B * T * sizeof *tok), *tgt = malloc((size_t)B * T * sizeof *tgt);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 42);
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int)gsl_rng_uniform_int(r, (unsigned long)V);
        tgt[i] = (int)gsl_rng_uniform_int(r, (unsigned long)V);
    }
    int steps = warm + 2 * pairs;
    for (int k = 0; k < 2; k++) {
        struct lib *l = &L[k];
        l->blas_threads(1);
        struct epar_nn_config cfg = {.V = V, .Tmax = T, .Bmax = B, .C = C, .NH = NH, .NL = NL, .F = F, .init_sd = 0.02};
        l->settings_default(&cfg.pos_settings);
        if (l->find(mech, &cfg.pos)) {
            fprintf(stderr, "ab_step: unknown mechanism '%s'\n", mech);
            return 2;
        }
        struct epar_optim_config oc = {.lr = 1e-3, .lr_min_ratio = 0.1, .warmup = 0, .steps = steps, .beta1 = 0.9,
                                       .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .clip = 1.0};
        l->m = calloc(1, 1 << 16);   /* room for either build's struct epar_nn */
        if (!l->m || l->alloc(l->m, &cfg) || l->optim_alloc(&l->o, &oc, l->m->n_params)) return 3;
        gsl_rng_set(r, 7);
        l->init(l->m, r);
        for (int t = 0; t < EPAR_NN_NTENSORS; t++)
            if (l->m->sizes[t])
                l->seg[l->nseg++] = (struct epar_optim_segment){l->m->offsets[t], l->m->sizes[t], l->decayed(t)};
    }
    double *ta = malloc(sizeof(double) * pairs), *tb = malloc(sizeof(double) * pairs), *q = malloc(sizeof(double) * pairs);
    int s[2] = {0, 0};
    for (int p = -warm; p < pairs; p++)
        for (int kk = 0; kk < 2; kk++) {
            int k = (p & 1) ? 1 - kk : kk;   /* A B, B A, A B, ... */
            struct lib *l = &L[k];
            double c0 = cpu_now();
            l->forward(l->m, tok, tgt, NULL, B, T);
            l->zero_grad(l->m);
            l->backward(l->m);
            l->optim_step(&l->o, l->m->params_mem, l->m->grads_mem, l->seg, l->nseg, l->lr(&l->o.cfg, s[k]++));
            double dt = cpu_now() - c0;
            if (p >= 0) (k ? tb : ta)[p] = dt;
        }
    for (int p = 0; p < pairs; p++) q[p] = tb[p] / ta[p];
    double q1 = quantile(q, pairs, 0.25), qm = quantile(q, pairs, 0.5), q3 = quantile(q, pairs, 0.75);
    double ma = quantile(ta, pairs, 0.5), mb = quantile(tb, pairs, 0.5);
    int same = L[0].m->n_params == L[1].m->n_params &&
               !memcmp(L[0].m->params_mem, L[1].m->params_mem, L[0].m->n_params * sizeof(float));
    printf("B/A step CPU time: median %.4f (quartiles %.4f-%.4f) over %d pairs; A %.6f s, B %.6f s per step; weights %s\n",
           qm, q1, q3, pairs, ma, mb, same ? "identical" : "differ");
    return 0;
}
