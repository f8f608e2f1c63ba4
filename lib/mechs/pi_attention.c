/* pi-attention (docs/MECHANISMS.md §27, S2): two masked softmaxes of the same scaled scores, a local band and the
 * pi-step mask, fused by a gate, A = g softmax(s + local) + (1 - g) softmax(s + step). Its catalogue row and analysis
 * build (compare's forward of the two masks stays lib/mech.c's, chosen by m->mask2), its trained form (lib/nnpos hooks)
 * and that form's own attention of one (batch, head), which lib/nn calls in place of its softmax
 * (epar_nnpos_attn_fwd, lib/nnpos.h). It keeps the enum value it had before the files (lib/mechs/registry.h:
 * EPAR_MECH_FILE_AT).
 *
 * Trained: the local and pi-step masks of lib/mech (causal: the ring, which wraps the future onto the past, is off, as
 * compare's causal pi-attention), one softmax each, fused by a learned gate per layer and head:
 * theta = (NL, NH, 3 hs + 1) = (w, b), g_i = sigmoid(b + w . [mean_{t<=i} q_t; mean k_t; mean v_t]). The source's gate
 * is sigmoid(gate_net([mean q; mean k; mean v])) over the whole sequence; docs/MECHANISMS.md §27 reads it per head as
 * one linear layer, here over the positions seen so far. w starts N(0, init_sd^2), b at logit(pi-attention.gate)
 * (0.5: b = 0). */
#include <math.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include <gsl/gsl_randist.h>
#include "lib/err.h"
#include "lib/nn.h"
#include "lib/nnpos.h"

/* ---- the analysis form (epar compare): the two masks and the fixed gate ---- */

static int build(struct epar_mech *m, gsl_rng *r)
{
    (void)r;
    size_t n = (size_t)m->L * m->L;
    if (!(m->mask = epar_err_alloc(n, 1, "mask"))) return EPAR_ENOMEM;
    if (!(m->mask2 = epar_err_alloc(n, 1, "pi mask"))) return EPAR_ENOMEM;
    if (!(m->S2 = epar_err_alloc(n, sizeof *m->S2, "pi scores"))) return EPAR_ENOMEM;
    /* causal forces the ring off (the ring leaks the future, §27) */
    epar_mech_mask_pi_local(m->L, (int)m->p[0], (int)m->p[3] && !m->causal, m->mask);
    epar_mech_mask_pi_step(m->L, (int)m->p[1], m->mask2);
    m->gate = m->p[2];
    return EPAR_OK;
}

/* ---- the trained form: lib/nnpos hooks ---- */

static int check(enum epar_mech_id id, const struct epar_nnpos_settings *s, int hs)
{
    (void)hs;
    double g = s->mp[id][2];
    if (!(g > 0 && g < 1)) {
        epar_err_set(EPAR_EINVAL, "pi-attention.gate '%g' must be in (0, 1) for training", g);
        epar_err_hint("the gate is learned as sigmoid(b + ...), starting at b = logit(gate)");
        return EPAR_EINVAL;
    }
    return EPAR_OK;
}

/* pair: the local mask, pair2: the pi-step mask (Tmax, Tmax each, as additive tables 0 / -inf), work: the masks' bytes */
static int train_build(struct epar_nnpos *p)
{
    size_t n = (size_t)p->Tmax * p->Tmax;
    p->ngate = 3 * p->hs + 1;
    if (!(p->pair = epar_err_alloc(n, sizeof *p->pair, "the attention pattern")) ||
        !(p->work = epar_err_alloc(n, 1, "the attention pattern")) ||
        !(p->pair2 = epar_err_alloc(n, sizeof *p->pair2, "the pi-step mask")))
        return EPAR_ENOMEM;
    return EPAR_OK;
}

static size_t n_params(const struct epar_nnpos *p) { return (size_t)p->NL * p->NH * p->ngate; }

static void init(struct epar_nnpos *p, gsl_rng *r)
{
    double g = p->mp[2];
    for (int k = 0; k < p->NL * p->NH; k++) {
        float *w = p->theta + (size_t)k * p->ngate;
        for (int t = 0; t < p->ngate - 1; t++) w[t] = (float)gsl_ran_gaussian_ziggurat(r, p->s.init_sd);
        w[p->ngate - 1] = (float)log(g / (1.0 - g));
    }
}

static void prepare(struct epar_nnpos *p, int T)
{
    if (p->T == T) return;
    epar_mech_mask_pi_local(T, (int)p->mp[0], 0, p->work);
    epar_nnpos_mask_to_pair(p, p->pair, p->work, T);
    epar_mech_mask_pi_step(T, (int)p->mp[1], p->work);
    epar_nnpos_mask_to_pair(p, p->pair2, p->work, T);
}

/* floats of per-thread scratch at length T (the gates, two softmax rows, the gate's suffix sums: T each; the means'
 * sums: 3 hs) and the gradient slot of one (b, h): the head's gate parameters */
static void scratch(const struct epar_nnpos_settings *s, enum epar_mech_id id, int T, int hs, size_t *per_thread,
                    size_t *per_bh)
{
    (void)s; (void)id;
    *per_thread = 4 * (size_t)T + 3 * (size_t)hs;
    *per_bh = 3 * (size_t)hs + 1;
}

/* dtheta of layer l += the gate gradients of every (b, h) (the attention backward's slots) */
static void backward(struct epar_nnpos *p, int l, const struct epar_nnpos_grad *g, int B, int T)
{
    (void)T;
    size_t n = (size_t)p->ngate;
    /* fixed order: b, then h (deterministic whatever the thread count) */
    for (int b = 0; b < B; b++)
        for (int h = 0; h < p->NH; h++) {
            float *dw = p->dtheta + ((size_t)l * p->NH + h) * n;
            const float *gg = g->grel + ((size_t)b * p->NH + h) * n;
            for (size_t t = 0; t < n; t++) dw[t] += gg[t];
        }
}

/* ---- the trained form's own attention of one (b, h) (lib/nn calls it in place of its softmax) ---- */

/* the gate parameters (w, b) of layer l, head h */
static const float *gate_of(const struct epar_nnpos *p, int l, int h)
{
    return p->theta + ((size_t)l * p->NH + h) * p->ngate;
}

/* g (T) <- the gate of every row: sigmoid(b + w . [qbar_i; kbar_i; vbar_i]), the bars the means over t <= i (causal;
 * the source averages over the whole sequence); sums (3 hs) scratch */
static void pi_gates(const float *w, const float *Q, const float *K, const float *Vv, int T, int C3, int hs, float *sums,
                     float *g)
{
    memset(sums, 0, (size_t)3 * hs * sizeof *sums);
    for (int i = 0; i < T; i++) {
        float z = 0.0f;
        for (int t = 0; t < hs; t++) {
            sums[t] += Q[(size_t)i * C3 + t];
            sums[hs + t] += K[(size_t)i * C3 + t];
            sums[2 * hs + t] += Vv[(size_t)i * C3 + t];
        }
        for (int t = 0; t < 3 * hs; t++) z += w[t] * sums[t];
        z = w[3 * hs] + z / (float)(i + 1);
        g[i] = 1.0f / (1.0f + expf(-z));
    }
}

/* the two softmaxes of row i of S into pl and ps (i + 1 each) */
static void pi_rows(const struct epar_nnpos *p, const float *S, int T, int i, float *pl, float *ps)
{
    epar_nn_softmax_row(pl, S + (size_t)i * T, p->pair + (size_t)i * p->Tmax, i);
    epar_nn_softmax_row(ps, S + (size_t)i * T, p->pair2 + (size_t)i * p->Tmax, i);
}

/* one (b, h) of the forward: S = scale Q K^T (kept), A fused, O = A V; w: the head's gate parameters */
static void pi_forward_bh(const struct epar_nnpos *p, int l, int h, const float *Q, const float *K, const float *Vv,
                          float *S, float *A, float *O, float *work, int T, int C, int hs, float scale)
{
    int C3 = 3 * C;
    const float *w = gate_of(p, l, h);
    float *g = work, *ps = g + T, *sums = ps + T;
    pi_gates(w, Q, K, Vv, T, C3, hs, sums, g);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, Q, C3, K, C3, 0.0f, S, T);
    for (int i = 0; i < T; i++) {
        float *a = A + (size_t)i * T;
        pi_rows(p, S, T, i, a, ps);
        for (int j = 0; j <= i; j++) a[j] = g[i] * a[j] + (1.0f - g[i]) * ps[j];
        for (int j = i + 1; j < T; j++) a[j] = 0.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, A, T, Vv, C3, 0.0f, O, C);
}

/* one (b, h) of the backward: dA = dO V^T, dV = A^T dO; per row the gate's dg = dA.(pl - ps) and ds = g dz(pl) +
 * (1 - g) dz(ps) (in place in dA); dQ = scale dS K, dK = scale dS^T Q; then the gate: dz_i = dg_i g_i (1 - g_i),
 * c_t = sum_{i >= t} dz_i / (i + 1), dw = sum_t c_t [q_t; k_t; v_t], db = sum_i dz_i, and dq_t, dk_t, dv_t +=
 * c_t w_q, w_k, w_v. dgate (3 hs + 1) overwritten. */
static void pi_backward_bh(const struct epar_nnpos *p, int l, int h, const float *Q, const float *K,
                           const float *Vv, const float *S, const float *A, const float *dO, float *dQ, float *dK,
                           float *dV, float *dA, float *dgate, float *work, int T, int C, int hs, float scale)
{
    int C3 = 3 * C;
    const float *w = gate_of(p, l, h);
    float *g = work, *pl = g + T, *ps = pl + T, *cz = ps + T, *sums = cz + T;
    pi_gates(w, Q, K, Vv, T, C3, hs, sums, g);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, dO, C, Vv, C3, 0.0f, dA, T);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, A, T, dO, C, 0.0f, dV, C3);
    for (int i = 0; i < T; i++) {
        float *d = dA + (size_t)i * T, dg = 0.0f, dl = 0.0f, dsum = 0.0f;
        pi_rows(p, S, T, i, pl, ps);
        for (int j = 0; j <= i; j++) {
            dg += d[j] * (pl[j] - ps[j]);
            dl += d[j] * pl[j];
            dsum += d[j] * ps[j];
        }
        for (int j = 0; j <= i; j++) d[j] = g[i] * pl[j] * (d[j] - dl) + (1.0f - g[i]) * ps[j] * (d[j] - dsum);
        for (int j = i + 1; j < T; j++) d[j] = 0.0f;
        cz[i] = dg * g[i] * (1.0f - g[i]);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, dA, T, K, C3, 0.0f, dQ, C3);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, dA, T, Q, C3, 0.0f, dK, C3);
    float db = 0.0f, acc = 0.0f;
    for (int i = T - 1; i >= 0; i--) {   /* suffix sums, last row first */
        db += cz[i];
        acc += cz[i] / (float)(i + 1);
        cz[i] = acc;
    }
    memset(dgate, 0, (size_t)(3 * hs + 1) * sizeof *dgate);
    dgate[3 * hs] = db;
    for (int t = 0; t < T; t++)
        for (int u = 0; u < hs; u++) {
            dgate[u] += cz[t] * Q[(size_t)t * C3 + u];
            dgate[hs + u] += cz[t] * K[(size_t)t * C3 + u];
            dgate[2 * hs + u] += cz[t] * Vv[(size_t)t * C3 + u];
            dQ[(size_t)t * C3 + u] += cz[t] * w[u];
            dK[(size_t)t * C3 + u] += cz[t] * w[hs + u];
            dV[(size_t)t * C3 + u] += cz[t] * w[2 * hs + u];
        }
}

static const struct epar_nnpos_info train = {
    .hook = EPAR_NNPOS_H_PI, .uses_params = 1,
    .summary = "g softmax(local band) + (1 - g) softmax(pi-step), g a learned gate of the causal means of q, k, v per "
               "layer and head",
    .check = check, .build = train_build, .n_params = n_params, .init = init, .prepare = prepare,
    .backward = backward, .scratch = scratch, .attn_forward = pi_forward_bh, .attn_backward = pi_backward_bh,
};

/* no doc: documented in its own section of docs/MECHANISMS.md (§27) */
const struct epar_mech_def epar_mech_def_pi_attention = {
    .info = {"pi-attention", EPAR_MK_MASK, "S2", "§27",
             {{"radius", 32, 0, 1 << 20, 1, "r of the ring-local mask"}, {"step", 16, 1, 1 << 20, 1, "pi"},
              {"gate", 0.5, 0, 1, 0, "g (untrained gate sigmoid(0))"}, {"ring", 1, 0, 1, 1, "1: ring distance"},
              {NULL, 0, 0, 0, 0, NULL}},
             build, "g softmax(local) + (1-g) softmax(step), each its own row softmax"},
    .train = &train,
};
