/* train_step: training throughput of epar's Transformer (lib/nn + lib/optim), for bench/bench_train.sh.
 *
 * One training step is what experiments/train/train.c's step does, minus drawing the batch: forward with the
 * loss, zero the gradients, backward, AdamW with clipping (lib/optim). The batch is random tokens (fixed
 * seed), as in bench/torch_train.py, so neither side measures data loading.
 *
 * Several mechanisms in one run are interleaved step by step (none, epar-basic, then epar-basic, none, ...:
 * the order rotates each step), so a drift of the shared machine's speed hits all of them alike; each gets
 * the median of its timed steps.
 *
 * --floor adds a row "linear-products": only the step's matrix products of the linear layers and the tied
 * head (qkv, projection, fc, fc projection per layer; forward, then input and weight gradients), through
 * lib/nn's own matmul functions on the model's shapes, interleaved with the mechanisms like one of them.
 * PyTorch's Linear layers call the same OpenBLAS sgemm on the same shapes, so this time is a floor under
 * any step built on that sgemm, epar's or PyTorch's: bench_train.sh turns it into the largest speed-up
 * over PyTorch that is possible at that thread count.
 *
 * --profile FILE writes the step's time per op (lib/nn's EPAR_NN_OP_* plus zero-grad and adamw) to FILE as CSV
 * mechanism,op,seconds_per_step,share_of_step: the median over the timed steps of each op's seconds (the calling
 * thread's CPU time with one thread, wall time with more), share = that / the median step; the row "other" is the
 * median step minus the ops' medians (the step's glue, and the noise of the medians).
 *
 * usage: train_step [--threads N] [--mechanisms a,b,...] [--steps N] [--warmup-steps N] [--batch B]
 *                   [--length T] [--dim C] [--layers NL] [--heads NH] [--mlp F] [--vocab V] [--floor]
 *                   [--profile FILE]
 * Prints one CSV line per mechanism (header first):
 *   mechanism,threads,batch,length,dim,layers,heads,mlp,vocab,params,seconds_per_step,tokens_per_second,
 *   forward_s,backward_s,optim_s,cpu_seconds_per_step
 * (each seconds figure is the median over the timed steps of that phase; cpu_seconds_per_step is the
 * process CPU time of a step, which a shared machine's other processes do not inflate when they take the
 * core away). Exit 2: usage; 3: setup failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>
#include <gsl/gsl_rng.h>
#include "lib/blas.h"
#include "lib/err.h"
#include "lib/nn.h"
#include "lib/optim.h"

#define MAXMECH 8

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* the profile's clock: the calling thread's CPU time with one thread, else wall time (as lib/nn's profile) */
static double prof_clock(int threads) { return threads == 1 ? epar_nn_thread_cpu() : omp_get_wtime(); }

static int usage(void)
{
    fprintf(stderr, "usage: train_step [--threads N] [--mechanisms a,b,...] [--steps N] [--warmup-steps N] [--batch B]\n"
                    "                  [--length T] [--dim C] [--layers NL] [--heads NH] [--mlp F] [--vocab V] [--floor]\n"
                    "                  [--profile FILE]\n");
    return 2;
}

struct run {
    struct epar_nn m;
    struct epar_optim o;
    struct epar_optim_segment seg[EPAR_NN_NTENSORS];
    int nseg;
    double *t_step, *t_fwd, *t_bwd, *t_opt, *t_cpu;   /* (steps) */
    double *t_ops;                                     /* (NPROF, steps) with --profile */
};

/* profile rows: lib/nn's ops (in the order of its EPAR_NN_OP_ enum), then the two outside it */
enum { PROF_ZERO = EPAR_NN_NOPS, PROF_ADAMW, NPROF };
static const char *const prof_names[NPROF] = {
    "embedding", "layernorm", "linear", "position", "attention", "gelu", "loss", "linear-backward",
    "attention-backward", "gelu-backward", "layernorm-backward", "zero-grad", "adamw"};
_Static_assert(EPAR_NN_NOPS == 11, "a name for every op of lib/nn (prof_names)");
static const char *prof_name(int k) { return prof_names[k]; }

/* timed step i of a run: started at CPU time c0 and wall time t0, forward done at t1, backward at t2, the
 * optimizer at t3 (= t2: none); the CPU time is read now */
static void record(struct run *u, int i, double c0, double t0, double t1, double t2, double t3)
{
    u->t_cpu[i] = cpu_now() - c0;
    u->t_step[i] = t3 - t0;
    u->t_fwd[i] = t1 - t0;
    u->t_bwd[i] = t2 - t1;
    u->t_opt[i] = t3 - t2;
}

/* the linear products of one step (see --floor), on the model's own parameter, gradient and scratch buffers
 * (their contents are only operands here: the run is never trained) */
static void linear_forward(struct epar_nn *m, float *x, float *y, int N)
{
    const struct epar_nn_config *c = &m->cfg;
    const struct epar_nn_params *p = &m->p;
    int C = c->C, F = c->F;
    for (int l = 0; l < c->NL; l++) {
        epar_nn_matmul_forward(y, x, p->qkvw + (size_t)l * 3 * C * C, p->qkvb + (size_t)l * 3 * C, N, C, 3 * C, 0);
        epar_nn_matmul_forward_res(x, x, y, p->attprojw + (size_t)l * C * C, p->attprojb + (size_t)l * C, N, C, C);
        epar_nn_matmul_forward(y, x, p->fcw + (size_t)l * F * C, p->fcb + (size_t)l * F, N, C, F, 0);
        epar_nn_matmul_forward_res(x, x, y, p->fcprojw + (size_t)l * C * F, p->fcprojb + (size_t)l * C, N, F, C);
    }
    epar_nn_matmul_forward(y, x, p->wte, NULL, N, C, c->V, 0);
}

static void linear_backward(struct epar_nn *m, float *x, float *y, float *dx, float *dy, float *part, int N)
{
    const struct epar_nn_config *c = &m->cfg;
    const struct epar_nn_params *p = &m->p, *g = &m->g;
    int C = c->C, F = c->F;
    epar_nn_matmul_backward(dx, g->wte, NULL, y, x, p->wte, N, C, c->V, 0, part);
    for (int l = c->NL - 1; l >= 0; l--) {
        epar_nn_matmul_backward(dy, g->fcprojw + (size_t)l * C * F, g->fcprojb + (size_t)l * C, dx, y,
                                p->fcprojw + (size_t)l * C * F, N, F, C, 0, part);
        epar_nn_matmul_backward(dx, g->fcw + (size_t)l * F * C, g->fcb + (size_t)l * F, dy, x, p->fcw + (size_t)l * F * C,
                                N, C, F, 1, part);
        epar_nn_matmul_backward(dy, g->attprojw + (size_t)l * C * C, g->attprojb + (size_t)l * C, dx, x,
                                p->attprojw + (size_t)l * C * C, N, C, C, 0, part);
        epar_nn_matmul_backward(dx, g->qkvw + (size_t)l * 3 * C * C, g->qkvb + (size_t)l * 3 * C, dy, x,
                                p->qkvw + (size_t)l * 3 * C * C, N, C, 3 * C, 1, part);
    }
}

int main(int argc, char **argv)
{
    epar_blas_reexec(argv);   /* as epar: passive OpenMP waiting, no idle OpenBLAS workers (lib/blas.h) */
    int threads = 1, steps = 20, warm = 3, B = 16, T = 256, C = 128, NL = 4, NH = 4, F = 512, V = 63;
    char mechs[256] = "none";
    const char *profile = NULL;
    int floor_row = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--floor")) {
            floor_row = 1;
            continue;
        }
        int *dst = !strcmp(a, "--threads") ? &threads : !strcmp(a, "--steps") ? &steps
                   : !strcmp(a, "--warmup-steps") ? &warm : !strcmp(a, "--batch") ? &B
                   : !strcmp(a, "--length") ? &T : !strcmp(a, "--dim") ? &C : !strcmp(a, "--layers") ? &NL
                   : !strcmp(a, "--heads") ? &NH : !strcmp(a, "--mlp") ? &F : !strcmp(a, "--vocab") ? &V : NULL;
        if (!v) return usage();
        if (dst) {
            char *end;
            long x = strtol(v, &end, 10);
            if (*end || x < (dst == &warm ? 0 : 1) || x > 1 << 20) {
                fprintf(stderr, "train_step: bad value '%s' for %s\n", v, a);
                return 2;
            }
            *dst = (int)x;
        } else if (!strcmp(a, "--mechanisms")) {
            snprintf(mechs, sizeof mechs, "%s", v);
        } else if (!strcmp(a, "--profile")) {
            profile = v;
        } else {
            return usage();
        }
        i++;
    }
    epar_blas_threads(1);   /* as cmd/main.c: BLAS single-threaded inside epar's OpenMP threads */
    omp_set_num_threads(threads);

    struct run runs[MAXMECH + 1];
    enum epar_mech_id ids[MAXMECH + 1];
    int nm = 0;
    for (char *tok = strtok(mechs, ","); tok; tok = strtok(NULL, ",")) {
        if (nm == MAXMECH || epar_nnpos_find(tok, &ids[nm])) {
            fprintf(stderr, "train_step: unknown mechanism (or more than %d) '%s'\n", MAXMECH, tok);
            return 2;
        }
        nm++;
    }
    int nmech = nm;   /* runs[nmech], with --floor: the linear products alone, on a model of mechanism none */
    if (floor_row) ids[nm++] = EPAR_MECH_NONE;
    int N = B * T, wide = 3 * C > F ? 3 * C : F;
    if (V > wide) wide = V;
    float *fx = NULL, *fy = NULL, *fdx = NULL, *fdy = NULL, *fpart = NULL;
    if (floor_row) {
        fx = calloc((size_t)N * wide, sizeof *fx);
        fy = calloc((size_t)N * wide, sizeof *fy);
        fdx = calloc((size_t)N * wide, sizeof *fdx);
        fdy = calloc((size_t)N * wide, sizeof *fdy);
        fpart = calloc((size_t)(N / 64 + 1) * wide, sizeof *fpart);
        if (!fx || !fy || !fdx || !fdy || !fpart) return 3;
    }
    int *tok = malloc((size_t)B * T * sizeof *tok), *tgt = malloc((size_t)B * T * sizeof *tgt);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!tok || !tgt || !r) return 3;
    gsl_rng_set(r, 42);
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int)gsl_rng_uniform_int(r, (unsigned long)V);
        tgt[i] = (int)gsl_rng_uniform_int(r, (unsigned long)V);
    }
    for (int k = 0; k < nm; k++) {
        struct run *u = &runs[k];
        struct epar_nn_config cfg = {.V = V, .Tmax = T, .Bmax = B, .C = C, .NH = NH, .NL = NL, .F = F, .pos = ids[k],
                                     .init_sd = 0.02};
        epar_nnpos_settings_default(&cfg.pos_settings);
        struct epar_optim_config oc = {.lr = 1e-3, .lr_min_ratio = 0.1, .warmup = 0, .steps = warm + steps,
                                       .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .clip = 1.0};
        if (epar_nn_alloc(&u->m, &cfg) || epar_optim_alloc(&u->o, &oc, u->m.n_params)) {
            fprintf(stderr, "train_step: %s\n", epar_err_message());
            return 3;
        }
        epar_nn_init(&u->m, r);
        u->nseg = 0;
        for (int t = 0; t < EPAR_NN_NTENSORS; t++)
            if (u->m.sizes[t])
                u->seg[u->nseg++] = (struct epar_optim_segment){u->m.offsets[t], u->m.sizes[t], epar_nn_decayed(t)};
        u->t_step = calloc((size_t)steps * 5, sizeof(double));
        if (!u->t_step) return 3;
        u->t_fwd = u->t_step + steps;
        u->t_bwd = u->t_fwd + steps;
        u->t_opt = u->t_bwd + steps;
        u->t_cpu = u->t_opt + steps;
        u->t_ops = NULL;
        if (profile) {
            if (!(u->t_ops = calloc((size_t)NPROF * steps, sizeof(double)))) return 3;
            u->m.profile = threads == 1 ? 2 : 1;
        }
    }
    for (int s = 0; s < warm + steps; s++)
        for (int kk = 0; kk < nm; kk++) {
            int k = (kk + s) % nm;   /* rotate the order: no mechanism always runs first (caches, TLB) */
            struct run *u = &runs[k];
            double c0 = cpu_now(), t0 = omp_get_wtime();
            if (k == nmech) {   /* the floor row: linear products only, no optimizer step */
                linear_forward(&u->m, fx, fy, N);
                double t1 = omp_get_wtime();
                linear_backward(&u->m, fx, fy, fdx, fdy, fpart, N);
                double t2 = omp_get_wtime();
                if (s >= warm) record(u, s - warm, c0, t0, t1, t2, t2);
                continue;
            }
            memset(u->m.op_seconds, 0, sizeof u->m.op_seconds);
            if (epar_nn_forward(&u->m, tok, tgt, NULL, B, T)) {
                fprintf(stderr, "train_step: %s\n", epar_err_message());
                return 3;
            }
            double t1 = omp_get_wtime(), z0 = prof_clock(threads);
            epar_nn_zero_grad(&u->m);
            double z1 = prof_clock(threads);
            epar_nn_backward(&u->m);
            double t2 = omp_get_wtime(), o0 = prof_clock(threads);
            epar_optim_step(&u->o, u->m.params_mem, u->m.grads_mem, u->seg, u->nseg, epar_optim_lr(&u->o.cfg, s));
            double o1 = prof_clock(threads), t3 = omp_get_wtime();
            if (s >= warm) record(u, s - warm, c0, t0, t1, t2, t3);
            if (s >= warm && u->t_ops) {
                for (int op = 0; op < EPAR_NN_NOPS; op++) u->t_ops[(size_t)op * steps + s - warm] = u->m.op_seconds[op];
                u->t_ops[(size_t)PROF_ZERO * steps + s - warm] = z1 - z0;
                u->t_ops[(size_t)PROF_ADAMW * steps + s - warm] = o1 - o0;
            }
        }
    printf("mechanism,threads,batch,length,dim,layers,heads,mlp,vocab,params,seconds_per_step,tokens_per_second,"
           "forward_s,backward_s,optim_s,cpu_seconds_per_step\n");
    FILE *pf = profile ? fopen(profile, "w") : NULL;
    if (profile && !pf) {
        fprintf(stderr, "train_step: cannot write '%s'\n", profile);
        return 3;
    }
    if (pf) fprintf(pf, "mechanism,op,seconds_per_step,share_of_step\n");
    for (int k = 0; k < nm; k++) {
        struct run *u = &runs[k];
        if (pf && k != nmech) {
            double st = median(threads == 1 ? u->t_cpu : u->t_step, steps), sum = 0;
            for (int op = 0; op < NPROF; op++) {
                double x = median(u->t_ops + (size_t)op * steps, steps);
                sum += x;
                fprintf(pf, "%s,%s,%.6g,%.4f\n", epar_nnpos_name(ids[k]), prof_name(op), x, x / st);
            }
            fprintf(pf, "%s,other,%.6g,%.4f\n", epar_nnpos_name(ids[k]), st - sum, (st - sum) / st);
        }
        free(u->t_ops);
        double sps = median(u->t_step, steps);
        printf("%s,%d,%d,%d,%d,%d,%d,%d,%d,%zu,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n",
               k == nmech ? "linear-products" : epar_nnpos_name(ids[k]), threads, B, T,
               C, NL, NH, F, V, u->m.n_params, sps, (double)B * T / sps, median(u->t_fwd, steps),
               median(u->t_bwd, steps), median(u->t_opt, steps), median(u->t_cpu, steps));
        epar_nn_free(&u->m);
        epar_optim_free(&u->o);
        free(u->t_step);
    }
    if (pf && fclose(pf)) return 3;
    free(fx);
    free(fy);
    free(fdx);
    free(fdy);
    free(fpart);
    gsl_rng_free(r);
    free(tok);
    free(tgt);
    return 0;
}
