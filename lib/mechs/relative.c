/* The content-dependent relative forms (docs/MECHANISMS.md §9, §10, §12): Shaw et al. 2018 (a learned key table by
 * clipped distance), Transformer-XL (Dai et al. 2019 §3.3, its relative attention without the segment memory) and
 * DeBERTa (He et al. 2021, content-to-position and position-to-content). Three mechanisms in one file because they
 * share their form: a bias that reads q_i (and k_j) as well as the distance, z_ij = s_ij + f_h(q_i, k_j, i - j).
 * Here: their catalogue rows and analysis builds (epar compare: the bias rows of head h computed from its q and k, the
 * catalogue's qk hook), their trained form (lib/nnpos hooks: the learned tables, and the per-(b, h) terms lib/nn's
 * softmax adds to each row, forward and backward), DeBERTa's EMD, and how compare reads a trained model's tables.
 * They keep the enum values they had before the files (lib/mechs/registry.h: EPAR_MECH_FILE_AT), so compare's synthetic
 * tables are still drawn from the stream (seed, 1000 + id). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cblas.h>
#include "lib/err.h"
#include "lib/nnpos.h"
#include "lib/rng.h"

#define P_SD EPAR_MECH_PARAM_SD
#define P_END EPAR_MECH_PARAM_END

/* ================================================================== the analysis form (epar compare) */

int epar_mech_shaw_index(int rel, int k)
{
    if (rel < -k) rel = -k;
    if (rel > k) rel = k;
    return rel + k;
}

int epar_mech_deberta_delta(int i, int j, int k)
{
    int n = i - j;
    if (n <= -k) return 0;
    if (n >= k) return 2 * k - 1;
    return n + k;
}

static int alloc_d(double **p, size_t n, const char *what)
{
    *p = epar_err_alloc(n, sizeof **p, what);
    return *p ? EPAR_OK : EPAR_ENOMEM;
}

static int need_bias(struct epar_mech *m) { return alloc_d(&m->bias, (size_t)m->H * m->L * m->L, "bias"); }

/* the bias rows of head h from its q and k (the catalogue's qk hook, after its own transforms) */
static void content_bias(struct epar_mech *m, int h, double *Q, double *K, int L, int dk, int ld)
{
    double *B = m->bias + (size_t)h * L * L, sc = m->cfg.scale;
    if (m->id == EPAR_MECH_SHAW) {
        int k = (int)m->p[0], R = 2 * k + 1;
        double *qw = m->work; /* (L, R) q_i . w^K[r] */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, R, dk, sc, Q, ld, m->tab, dk, 0.0, qw, R);
        for (int i = 0; i < L; i++)
            for (int j = 0; j < L; j++) B[(size_t)i * L + j] = qw[(size_t)i * R + epar_mech_shaw_index(j - i, k)];
    } else if (m->id == EPAR_MECH_TXL) {
        int R = 2 * L - 1;  /* r_n = R_n W_R for n = i-j in -(L-1)..L-1, row n + L-1 */
        const double *rn = m->tab + (size_t)h * R * dk, *u = m->tab2 + (size_t)h * 2 * dk, *v = u + dk;
        double *qr = m->work, *uk = m->work + (size_t)L * R, *vr = uk + L; /* (L,R), (L), (R) */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, R, dk, 1.0, Q, ld, rn, dk, 0.0, qr, R);
        cblas_dgemv(CblasRowMajor, CblasNoTrans, L, dk, 1.0, K, ld, u, 1, 0.0, uk, 1);
        cblas_dgemv(CblasRowMajor, CblasNoTrans, R, dk, 1.0, rn, dk, v, 1, 0.0, vr, 1);
        for (int i = 0; i < L; i++)
            for (int j = 0; j < L; j++) {
                int n = i - j + L - 1;
                B[(size_t)i * L + j] = sc * (qr[(size_t)i * R + n] + uk[j] + vr[n]);
            }
    } else {   /* DeBERTa */
        int k = (int)m->p[0]; /* rows [r0, r1] of the 2k table are the only ones within reach */
        int r0 = k - (L - 1) < 0 ? 0 : k - (L - 1), r1 = k + (L - 1) > 2 * k - 1 ? 2 * k - 1 : k + (L - 1);
        int n = r1 - r0 + 1;
        const double *qr = m->tab + (size_t)h * n * dk, *kr = m->tab2 + (size_t)h * n * dk;
        double *qkr = m->work, *kqr = m->work + (size_t)L * n; /* q_i . kr_r and k_j . qr_r: (L,n) each */
        double s3 = 1.0 / sqrt(3.0 * dk);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, n, dk, s3, Q, ld, kr, dk, 0.0, qkr, n);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, n, dk, s3, K, ld, qr, dk, 0.0, kqr, n);
        for (int i = 0; i < L; i++)
            for (int j = 0; j < L; j++)
                B[(size_t)i * L + j] = qkr[(size_t)i * n + epar_mech_deberta_delta(i, j, k) - r0] +
                                       kqr[(size_t)j * n + epar_mech_deberta_delta(j, i, k) - r0];
    }
}

static int build_shaw(struct epar_mech *m, gsl_rng *r)
{
    int k = (int)m->p[0], R = 2 * k + 1, st;
    if ((st = need_bias(m)) || (st = alloc_d(&m->tab, (size_t)R * m->dk, "Shaw table")) ||
        (st = alloc_d(&m->work, (size_t)m->L * R, "Shaw scratch")))
        return st;
    epar_rng_normal(r, m->tab, (size_t)R * m->dk, m->p[1]);   /* w^K (2k+1, dk), shared by the heads */
    m->ntab = R;
    return EPAR_OK;
}

static int build_txl(struct epar_mech *m, gsl_rng *r)
{
    int L = m->L, D = m->D, dk = m->dk, H = m->H, R = 2 * L - 1, st;
    double *WR = NULL, *Rn = NULL;
    if ((st = need_bias(m)) || (st = alloc_d(&m->tab, (size_t)H * R * dk, "TXL r_n")) ||
        (st = alloc_d(&m->tab2, (size_t)H * 2 * dk, "TXL u, v")) ||
        (st = alloc_d(&m->work, (size_t)L * R + L + R, "TXL scratch")) ||
        (st = alloc_d(&WR, (size_t)D * dk, "TXL W_R")) || (st = alloc_d(&Rn, (size_t)R * D, "TXL R"))) {
        free(WR);
        return st;
    }
    for (int n = -(L - 1); n <= L - 1; n++) epar_mech_sinusoid(n, D, 10000.0, 1, Rn + (size_t)(n + L - 1) * D);
    epar_rng_normal(r, m->tab2, (size_t)H * 2 * dk, m->p[0]);
    for (int h = 0; h < H; h++) {
        epar_rng_normal(r, WR, (size_t)D * dk, m->p[0]);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, R, dk, D, 1.0, Rn, D, WR, dk, 0.0,
                    m->tab + (size_t)h * R * dk, dk);
    }
    free(WR);
    free(Rn);
    m->ntab = R;
    return EPAR_OK;
}

static int build_deberta(struct epar_mech *m, gsl_rng *r)
{
    int k = (int)m->p[0], L = m->L, D = m->D, dk = m->dk, H = m->H, st;
    int r0 = k - (L - 1) < 0 ? 0 : k - (L - 1), r1 = k + (L - 1) > 2 * k - 1 ? 2 * k - 1 : k + (L - 1);
    int n = r1 - r0 + 1;
    double *P = NULL, *W = NULL;
    if (m->p[2] != 0)
        return epar_err_set(EPAR_EINVAL, "deberta.absolute '%g': the EMD's absolute table is trained only (epar train)",
                            m->p[2]);
    if ((st = need_bias(m)) || (st = alloc_d(&m->factor, (size_t)L * L, "DeBERTa factor")) ||
        (st = alloc_d(&m->tab, (size_t)H * n * dk, "DeBERTa qr")) ||
        (st = alloc_d(&m->tab2, (size_t)H * n * dk, "DeBERTa kr")) ||
        (st = alloc_d(&m->work, (size_t)2 * L * n, "DeBERTa scratch")) ||
        (st = alloc_d(&P, (size_t)2 * k * D, "DeBERTa P")) || (st = alloc_d(&W, (size_t)2 * D * D, "DeBERTa W"))) {
        free(P);
        return st;
    }
    epar_rng_normal(r, P, (size_t)2 * k * D, m->p[1]);      /* P (2k, D) relative embeddings */
    epar_rng_linear_init(r, W, NULL, D, D);                  /* W_qr (D,D): its own projection */
    epar_rng_linear_init(r, W + (size_t)D * D, NULL, D, D);  /* W_kr */
    for (int h = 0; h < H; h++) {
        /* qr = P W_qr^T head slice: rows r0..r1 only */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, dk, D, 1.0, P + (size_t)r0 * D, D,
                    W + (size_t)h * dk * D, D, 0.0, m->tab + (size_t)h * n * dk, dk);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, dk, D, 1.0, P + (size_t)r0 * D, D,
                    W + (size_t)D * D + (size_t)h * dk * D, D, 0.0, m->tab2 + (size_t)h * n * dk, dk);
    }
    free(P);
    free(W);
    /* content term / sqrt(3 dk): the base score is / sqrt(dk), so the factor is 1/sqrt(3) */
    for (size_t t = 0; t < (size_t)L * L; t++) m->factor[t] = 1.0 / sqrt(3.0);
    m->ntab = n;
    return EPAR_OK;
}

/* operations per query row beyond the dense softmax's: the relative terms' */
static double flops_rel(const struct epar_mech *m)
{
    double L = m->L, dk = m->dk;
    if (m->id == EPAR_MECH_SHAW) return 2 * (2 * m->p[0] + 1) * dk + L;
    return 4 * L * dk + 2 * L;
}

/* ================================================================== the trained form (lib/nnpos, lib/nn hooks) */

/* Shaw (§9), the key term: b_ij = q_i . w_l[min(i - j, k)] / sqrt(hs), theta = w (NL, k + 1, hs) ~ N(0, sd^2)
 * (compare's table row k - d is w[d]: causal keys have j - i = -d >= -k). The value term a^V of Shaw et al. is not
 * trained: the catalogue's form changes A only (docs/MECHANISMS.md §9).
 *
 * DeBERTa (§12) extends it with the position-to-content term, causal: z_ij = [q_i.k_j + q_i.Kr_l[min(i-j, k)] +
 * k_j.Qr_l[min(i-j, k)]] / sqrt(hs), k = deberta.span; theta = per layer Kr (k + 1, hs) then Qr (k + 1, hs), shared by
 * the heads as Shaw's table is, ~ N(0, sd^2). The content-to-position term is Shaw's key term (the same path below);
 * the scale is the content score's 1/sqrt(hs), not DeBERTa's 1/sqrt(3 hs) (the learned tables absorb a constant on the
 * position terms; one scale keeps q.k's as in every other mechanism). The relative table P of DeBERTa with its own
 * projections W_qr, W_kr is folded into the learned Kr, Qr (a table times a projection is a table).
 * deberta.absolute = 1 adds DeBERTa's EMD (below).
 *
 * Transformer-XL (§10; Dai et al. 2019 §3.3), without the segment memory:
 * z_ij = [q_i.k_j + q_i.r_lh(i-j) + u_lh.k_j + v_lh.r_lh(i-j)] / sqrt(hs), r_lh(d) = W_R^{lh} R_d, R_d lib/mech's
 * sinusoid of the distance d in the paper's [sin | cos] layout (base 10000, width C: as compare's). theta per layer:
 * W_R (C, C) (row h hs + t: head h's output t, column: entry of R_d), u (NH, hs), v (NH, hs), all N(0, init_sd^2).
 * u and v are per layer (the official code's untie_r, which its released enwik8 / WikiText-103 models use; the paper's
 * equation writes one u, v for the model): each layer's content and position biases are free as its W_R is. The
 * table r_lh (T, hs) is prepared every forward from theta (NL T C^2 multiply-adds). */

static int is_txl(const struct epar_nnpos *p) { return p->id == EPAR_MECH_TXL; }
static int is_deberta(const struct epar_nnpos *p) { return p->id == EPAR_MECH_DEBERTA; }

/* tables per layer: Shaw 1 (w), DeBERTa 2 (Kr, Qr) */
static size_t rel_tables(enum epar_mech_id id) { return id == EPAR_MECH_DEBERTA ? 2 : 1; }

/* DeBERTa's EMD (deberta.absolute = 1; He et al. §3.3, S3 003:136): a learned absolute table E (Tmax, C),
 * N(0, deberta.init_sd^2), after the layers' Kr, Qr in theta, added to the input of the last layer only (the hooks
 * last_input, last_input_backward); the other layers see relative positions only */
static int emd_on(const struct epar_nnpos *p) { return is_deberta(p) && p->mp[2] != 0; }
/* where theta's EMD table starts: after every layer's relative tables */
static size_t emd_offset(const struct epar_nnpos *p) { return (size_t)p->NL * rel_tables(p->id) * p->nrel * p->hs; }

static size_t txl_layer(const struct epar_nnpos *p) { return (size_t)p->C * p->C + 2 * (size_t)p->C; }

/* layer l's relative table: Shaw's w (nrel, hs) or DeBERTa's Kr, shared by the heads; Transformer-XL's r_lh (NH, Tmax,
 * hs); and the floats between two heads' tables (0: shared) */
static const float *rel_table(const struct epar_nnpos *p, int l)
{
    if (is_txl(p)) return p->reltab + (size_t)l * p->NH * p->Tmax * p->hs;
    return p->theta + (size_t)l * rel_tables(p->id) * p->nrel * p->hs;
}
static size_t rel_head(const struct epar_nnpos *p) { return is_txl(p) ? (size_t)p->Tmax * p->hs : 0; }
/* DeBERTa's position-to-content table Qr of layer l (nrel, hs), after its Kr */
static const float *rel_q(const struct epar_nnpos *p, int l) { return rel_table(p, l) + (size_t)p->nrel * p->hs; }
/* Transformer-XL's u (NH, hs) of layer l; its v follows (C floats on) */
static const float *txl_u(const struct epar_nnpos *p, int l)
{
    return p->theta + (size_t)l * txl_layer(p) + (size_t)p->C * p->C;
}

static int train_build_shaw(struct epar_nnpos *p)
{
    p->nrel = (int)p->mp[0] + 1;
    return EPAR_OK;
}

static size_t n_shaw(const struct epar_nnpos *p)
{
    return emd_offset(p) + (emd_on(p) ? (size_t)p->Tmax * p->C : 0);
}
static void init_shaw(struct epar_nnpos *p, gsl_rng *r) { epar_rng_normal_f(r, p->theta, n_shaw(p), p->mp[1]); }

static void scratch_shaw(const struct epar_nnpos_settings *s, enum epar_mech_id id, int Tmax, int hs, size_t *per_thread,
                         size_t *per_bh)
{
    size_t nrel = (size_t)s->mp[id][0] + 1;
    *per_thread = (size_t)Tmax * (rel_tables(id) * nrel + 1);
    *per_bh = rel_tables(id) * nrel * hs;
}

static void backward_shaw(struct epar_nnpos *p, int l, const struct epar_nnpos_grad *g, int B, int T)
{
    (void)T;
    size_t n = rel_tables(p->id) * p->nrel * p->hs;
    float *dw = p->dtheta + (size_t)l * n;
    /* fixed order: b, then h (deterministic whatever the thread count) */
    for (int b = 0; b < B; b++)
        for (int h = 0; h < p->NH; h++) {
            const float *gg = g->grel + ((size_t)b * p->NH + h) * n;
            for (size_t t = 0; t < n; t++) dw[t] += gg[t];
        }
}

/* a model defined at its trained length only: the EMD's absolute table */
static int fixed_length_deberta(const struct epar_nnpos_settings *s, enum epar_mech_id id) { return s->mp[id][2] != 0; }

static void emd_forward(const struct epar_nnpos *p, float *x, int B, int T)
{
    if (!emd_on(p) || !p->theta) return;
    const float *E = p->theta + emd_offset(p);
    size_t tc = (size_t)T * p->C;
    for (int b = 0; b < B; b++)
        for (size_t t = 0; t < tc; t++) x[(size_t)b * tc + t] += E[t];
}

static void emd_backward(struct epar_nnpos *p, const float *dx, int B, int T)
{
    if (!emd_on(p) || !p->dtheta) return;
    float *dE = p->dtheta + emd_offset(p);
    size_t tc = (size_t)T * p->C;
    for (int b = 0; b < B; b++)   /* fixed order: b (deterministic whatever the thread count) */
        for (size_t t = 0; t < tc; t++) dE[t] += dx[(size_t)b * tc + t];
}

static size_t n_txl(const struct epar_nnpos *p) { return (size_t)p->NL * txl_layer(p); }
static void init_txl(struct epar_nnpos *p, gsl_rng *r) { epar_rng_normal_f(r, p->theta, n_txl(p), p->mp[0]); }

static int train_build_txl(struct epar_nnpos *p)
{
    size_t tc = (size_t)p->Tmax * p->C;
    if (!(p->rdist = epar_err_alloc(tc, sizeof *p->rdist, "Transformer-XL's sinusoid")) ||
        !(p->reltab = epar_err_alloc((size_t)p->NL * p->NH * p->Tmax * p->hs, sizeof *p->reltab,
                                     "Transformer-XL's tables")) ||
        !(p->work = epar_err_alloc((size_t)p->Tmax * p->hs, sizeof(float), "Transformer-XL's gradient sums")))
        return EPAR_ENOMEM;
    double *row = epar_err_alloc((size_t)p->C, sizeof *row, "Transformer-XL's sinusoid");
    if (!row) return EPAR_ENOMEM;
    for (int d = 0; d < p->Tmax; d++) {
        epar_mech_sinusoid((double)d, p->C, 10000.0, 1, row);
        for (int c = 0; c < p->C; c++) p->rdist[(size_t)d * p->C + c] = (float)row[c];
    }
    free(row);
    return EPAR_OK;
}

static void prepare_txl(struct epar_nnpos *p, int T)
{
    int C = p->C, hs = p->hs;
    p->nrel = T;
    for (int l = 0; l < p->NL; l++) {
        const float *WR = p->theta + (size_t)l * txl_layer(p);
        for (int h = 0; h < p->NH; h++)   /* r_lh (T, hs) = R (T, C) W_R[h hs .. h hs + hs)^T */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, hs, C, 1.0f, p->rdist, C, WR + (size_t)h * hs * C,
                        C, 0.0f, p->reltab + ((size_t)l * p->NH + h) * p->Tmax * hs, hs);
    }
}

static void scratch_txl(const struct epar_nnpos_settings *s, enum epar_mech_id id, int Tmax, int hs, size_t *per_thread,
                        size_t *per_bh)
{
    (void)s; (void)id;
    *per_thread = (size_t)Tmax * (Tmax + 1) + (size_t)Tmax * (hs + 1);   /* rel_forward's work at nrel = T = Tmax */
    *per_bh = (size_t)Tmax * hs + 2 * (size_t)hs;
}

/* dW_R^{lh} += (sum_b dr_lh)^T R, du_lh, dv_lh += sum_b (b in order, then the product: deterministic) */
static void backward_txl(struct epar_nnpos *p, int l, const struct epar_nnpos_grad *g, int B, int T)
{
    int C = p->C, hs = p->hs;
    size_t gs = (size_t)T * hs + 2 * (size_t)hs, nr = (size_t)T * hs;
    float *dWR = p->dtheta + (size_t)l * txl_layer(p), *du = dWR + (size_t)C * C, *dv = du + C, *G = p->work;
    for (int h = 0; h < p->NH; h++) {
        memset(G, 0, nr * sizeof *G);
        for (int b = 0; b < B; b++) {
            const float *gg = g->grel + ((size_t)b * p->NH + h) * gs;
            for (size_t t = 0; t < nr; t++) G[t] += gg[t];
            for (int t = 0; t < hs; t++) {
                du[h * hs + t] += gg[nr + t];
                dv[h * hs + t] += gg[nr + hs + t];
            }
        }
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, hs, C, T, 1.0f, G, hs, p->rdist, C, 1.0f,
                    dWR + (size_t)h * hs * C, C);
    }
}

/* ---- the relative terms of one (b, h) in lib/nn's softmax (epar_nnpos_rel_fwd, _row, _bwd). The thread's work at
 * length T: R (T, nrel), row i's bias by distance (T), then Transformer-XL's q + v (T, hs) and u . k (T), or DeBERTa's
 * P (T, nrel). The grad slot: the table's gradient (nrel, hs), then Transformer-XL's du, dv (hs each) or DeBERTa's Qr
 * gradient (nrel, hs). ---- */

/* R = scale Q rel_h^T (Transformer-XL: scale (Q + v_h) rel_h^T, and u . k_j = scale u_h . k_j); DeBERTa: also
 * P = scale K Qr^T */
static void rel_forward(const struct epar_nnpos *p, int l, int h, const float *Q, const float *K, float *work, int T,
                        int C, int hs, float scale)
{
    int nrel = p->nrel, C3 = 3 * C;
    float *R = work;
    const float *relh = rel_table(p, l) + h * rel_head(p);
    if (!is_txl(p)) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, nrel, hs, scale, Q, C3, relh, hs, 0.0f, R, nrel);
        if (is_deberta(p))
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, nrel, hs, scale, K, C3, rel_q(p, l), hs, 0.0f,
                        R + (size_t)T * (nrel + 1), nrel);
        return;
    }
    const float *u = txl_u(p, l) + (size_t)h * hs, *v = u + p->C;
    float *Qv = R + (size_t)T * (nrel + 1), *ck = Qv + (size_t)T * hs;
    for (int i = 0; i < T; i++) {
        float dot = 0.0f;
        for (int t = 0; t < hs; t++) {
            Qv[(size_t)i * hs + t] = Q[(size_t)i * C3 + t] + v[t];
            dot += u[t] * K[(size_t)i * C3 + t];
        }
        ck[i] = scale * dot;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, nrel, hs, scale, Qv, hs, relh, hs, 0.0f, R, nrel);
}

/* row i's bias by distance d: R[i][min(d, nrel - 1)] (+ bias[d]; + u . k_{i-d} for Transformer-XL; + P[i - d][min(d,
 * nrel - 1)] for DeBERTa's position-to-content term) */
static const float *rel_row(const struct epar_nnpos *p, float *work, const float *bias, int i, int T, int hs)
{
    int nrel = p->nrel;
    const float *r = work + (size_t)i * nrel, *uk = is_txl(p) ? work + (size_t)T * (nrel + 1) + (size_t)T * hs : NULL;
    float *rb = work + (size_t)T * nrel;
    for (int d = 0; d <= i; d++)
        rb[d] = r[d < nrel ? d : nrel - 1] + (bias ? bias[d] : 0.0f) + (uk ? uk[i - d] : 0.0f);
    if (is_deberta(p)) {
        const float *P = work + (size_t)T * (nrel + 1);
        for (int d = 0; d <= i; d++) rb[d] += P[(size_t)(i - d) * nrel + (d < nrel ? d : nrel - 1)];
    }
    return rb;
}

/* from dz (dA rows i, keys j <= i): dR[i][min(i - j, k)] += dz_ij; dQ += scale dR rel_h and grad = scale dR^T Q.
 * Transformer-XL: grad = scale dR^T (Q + v_h), dv = scale sum_d (sum_i dR[i][d]) rel_h[d]; and the u . k_j term:
 * c_j = sum_{i >= j} dz_ij, du = scale sum_j c_j k_j, dK_j += scale c_j u_h. DeBERTa's k_j . Qr[min(i - j, k)] term:
 * dP[j][min(i - j, k)] += dz_ij, dK += scale dP Qr, grad's second table = scale dP^T K */
static void rel_backward(const struct epar_nnpos *p, int l, int h, const float *dA, const float *Q, const float *K,
                         float *dQ, float *dK, float *grad, float *work, int T, int C, int hs, float scale)
{
    int nrel = p->nrel, C3 = 3 * C;
    const float *relh = rel_table(p, l) + h * rel_head(p);
    float *dR = work, *g = grad;
    /* Transformer-XL's c (T) after Q + v (T, hs) in the thread's work, summed in the same pass over dA as dR */
    float *Qv = dR + (size_t)T * (nrel + 1), *c = is_txl(p) ? Qv + (size_t)T * hs : NULL;
    float *dP = is_deberta(p) ? dR + (size_t)T * (nrel + 1) : NULL;   /* DeBERTa (no Qv, c) */
    memset(dR, 0, (size_t)T * nrel * sizeof *dR);
    if (c) memset(c, 0, (size_t)T * sizeof *c);
    if (dP) memset(dP, 0, (size_t)T * nrel * sizeof *dP);
    for (int i = 0; i < T; i++) {
        const float *d = dA + (size_t)i * T;
        float *r = dR + (size_t)i * nrel;
        for (int j = 0; j <= i; j++) r[i - j < nrel ? i - j : nrel - 1] += d[j];
        if (c)
            for (int j = 0; j <= i; j++) c[j] += d[j];
        if (dP)
            for (int j = 0; j <= i; j++) dP[(size_t)j * nrel + (i - j < nrel ? i - j : nrel - 1)] += d[j];
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, nrel, scale, dR, nrel, relh, hs, 1.0f, dQ, C3);
    if (!c) {
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nrel, hs, T, scale, dR, nrel, Q, C3, 0.0f, g, hs);
        if (dP) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, nrel, scale, dP, nrel, rel_q(p, l), hs, 1.0f,
                        dK, C3);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nrel, hs, T, scale, dP, nrel, K, C3, 0.0f,
                        g + (size_t)nrel * hs, hs);
        }
        return;
    }
    const float *u = txl_u(p, l) + (size_t)h * hs, *v = u + p->C;
    float *du = g + (size_t)nrel * hs, *dv = du + hs;
    for (int i = 0; i < T; i++)
        for (int t = 0; t < hs; t++) Qv[(size_t)i * hs + t] = Q[(size_t)i * C3 + t] + v[t];
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nrel, hs, T, scale, dR, nrel, Qv, hs, 0.0f, g, hs);
    memset(du, 0, 2 * (size_t)hs * sizeof *du);
    for (int d = 0; d < nrel; d++) {
        float sd = 0.0f;
        for (int i = 0; i < T; i++) sd += dR[(size_t)i * nrel + d];
        for (int t = 0; t < hs; t++) dv[t] += scale * sd * relh[(size_t)d * hs + t];
    }
    for (int j = 0; j < T; j++)
        for (int t = 0; t < hs; t++) {
            du[t] += scale * c[j] * K[(size_t)j * C3 + t];
            dK[(size_t)j * C3 + t] += scale * c[j] * u[t];
        }
}

/* ---- compare's form with a trained model's tables of layer l (the fp64 reference test) ---- */

/* Shaw: compare's row k - d is the trained w[d] */
static int from_trained_shaw(struct epar_mech *m, const struct epar_nnpos *p, int l)
{
    int k = (int)m->p[0], hs = p->hs;
    if (k != p->nrel - 1)
        return epar_err_set(EPAR_EINVAL, "shaw.max_relative %d of compare's form, the trained model's %d", k, p->nrel - 1);
    const float *w = rel_table(p, l);
    for (int d = 0; d <= k; d++)
        for (int q = 0; q < hs; q++) m->tab[(size_t)(k - d) * hs + q] = w[(size_t)d * hs + q];
    return EPAR_OK;
}

/* DeBERTa: compare's 2k' table reaches, causally, k' + min(d, k' - 1) (the key term) and k' - min(d, k') (the third
 * term); at k' = k + 1 the first is the trained min(d, k) and the second is, once its rows 0 and 1 hold the same Qr[k],
 * too. The trained Kr, Qr go into compare's rows r0 .. r1 (qr: tab, kr: tab2, per head) times sqrt(3), with the content
 * factor 1: compare's 1/sqrt(3 dk) becomes the trained 1/sqrt(hs) on every term. */
static int from_trained_deberta(struct epar_mech *m, const struct epar_nnpos *p, int l)
{
    int k1 = (int)m->p[0], k = k1 - 1, T = m->L, hs = p->hs;
    if (k != p->nrel - 1)
        return epar_err_set(EPAR_EINVAL, "deberta.span %d of compare's form: the trained model's span %d plus 1 reads its "
                            "tables", k1, p->nrel - 1);
    int r0 = k1 - (T - 1) < 0 ? 0 : k1 - (T - 1), r1 = k1 + (T - 1) > 2 * k1 - 1 ? 2 * k1 - 1 : k1 + (T - 1);
    int n = r1 - r0 + 1;
    const float *kr = rel_table(p, l), *qr = rel_q(p, l);
    for (int h = 0; h < m->H; h++)
        for (int rr = r0; rr <= r1; rr++)
            for (int q = 0; q < hs; q++) {
                double *tq = m->tab + ((size_t)h * n + rr - r0) * hs + q, *tk = m->tab2 + ((size_t)h * n + rr - r0) * hs + q;
                int dq = k1 - rr < k ? k1 - rr : k;   /* rr <= k1: distance k1 - rr, clipped at k */
                *tq = rr <= k1 ? sqrt(3.0) * qr[(size_t)dq * hs + q] : 0.0;
                *tk = rr >= k1 ? sqrt(3.0) * kr[(size_t)(rr - k1) * hs + q] : 0.0;
            }
    for (size_t t = 0; t < (size_t)T * T; t++) m->factor[t] = 1.0;
    return EPAR_OK;
}

/* Transformer-XL: the trained r_lh(d) = W_R^{lh} R_d (compare's row d + L - 1, d < L, as prepared for the last length),
 * u and v */
static int from_trained_txl(struct epar_mech *m, const struct epar_nnpos *p, int l)
{
    int T = m->L, hs = p->hs;
    if (p->nrel < T)
        return epar_err_set(EPAR_EINVAL, "transformer-xl: the trained tables were prepared for length %d, compare's is %d",
                            p->nrel, T);
    const float *rt = rel_table(p, l), *u = txl_u(p, l), *v = u + p->C;
    for (int h = 0; h < m->H; h++) {
        for (int d = 0; d < T; d++)
            for (int q = 0; q < hs; q++)
                m->tab[((size_t)h * (2 * T - 1) + d + T - 1) * hs + q] = rt[((size_t)h * p->Tmax + d) * hs + q];
        for (int q = 0; q < hs; q++) {
            m->tab2[(size_t)h * 2 * hs + q] = u[h * hs + q];
            m->tab2[(size_t)h * 2 * hs + hs + q] = v[h * hs + q];
        }
    }
    return EPAR_OK;
}

/* ================================================================== the three definitions */

static const struct epar_nnpos_info train_shaw = {
    .hook = EPAR_NNPOS_H_BIAS, .uses_params = 1,
    .summary = "learned key table per layer: + q_i . w[min(i-j, k)] / sqrt(hs) (no value term)",
    .build = train_build_shaw, .n_params = n_shaw, .init = init_shaw, .backward = backward_shaw, .scratch = scratch_shaw,
    .rel_forward = rel_forward, .rel_row = rel_row, .rel_backward = rel_backward,
};

static const struct epar_nnpos_info train_deberta = {
    .hook = EPAR_NNPOS_H_BIAS, .uses_params = 1,
    .summary = "learned tables Kr, Qr per layer: + [q_i . Kr[min(i-j, k)] + k_j . Qr[min(i-j, k)]] / sqrt(hs) "
               "(deberta.absolute = 1: + EMD's absolute table in the last layer)",
    .build = train_build_shaw, .n_params = n_shaw, .init = init_shaw, .backward = backward_shaw, .scratch = scratch_shaw,
    .rel_forward = rel_forward, .rel_row = rel_row, .rel_backward = rel_backward,
    .last_input = emd_forward, .last_input_backward = emd_backward, .fixed_length_of = fixed_length_deberta,
};

static const struct epar_nnpos_info train_txl = {
    .hook = EPAR_NNPOS_H_BIAS, .uses_params = 1,
    .summary = "+ [q_i . W_R R_{i-j} + u . k_j + v . W_R R_{i-j}] / sqrt(hs), W_R, u, v learned per layer (and head); "
               "no segment memory",
    .build = train_build_txl, .n_params = n_txl, .init = init_txl, .prepare = prepare_txl, .backward = backward_txl,
    .scratch = scratch_txl, .rel_forward = rel_forward, .rel_row = rel_row, .rel_backward = rel_backward,
};

/* no doc: they are documented in their own sections of docs/MECHANISMS.md (§9, §10, §12) */
const struct epar_mech_def epar_mech_def_shaw = {
    .info = {"shaw", EPAR_MK_BIAS, "S0 table, S3 1.2(1)", "§9",
             {{"max_relative", 16, 1, 4096, 1, "clip k of j-i"}, P_SD, P_END}, build_shaw,
             "b_ij = q_i . w^K[clip(j-i)] / sqrt(dk); the value term a^V does not change A"},
    .train = &train_shaw, .from_trained = from_trained_shaw, .qk = content_bias, .flops_extra = flops_rel,
};

const struct epar_mech_def epar_mech_def_transformer_xl = {
    .info = {"transformer-xl", EPAR_MK_BIAS, "S3 1.2(2)", "§10", {P_SD, P_END}, build_txl,
             "+ q.W_R R_{i-j} + u.k_j + v.W_R R_{i-j}, all / sqrt(dk); u, v, W_R synthetic"},
    .train = &train_txl, .from_trained = from_trained_txl, .qk = content_bias, .flops_extra = flops_rel,
};

const struct epar_mech_def epar_mech_def_deberta = {
    .info = {"deberta", EPAR_MK_BIAS, "S3 1.2(4)", "§12",
             {{"span", 512, 1, 1 << 20, 1, "relative span k"}, P_SD,
              {"absolute", 0, 0, 1, 1, "1: EMD, a learned absolute table added to the last layer's input (training only)"},
              P_END},
             build_deberta, "(qc.kc + qc.kr_delta(i,j) + kc.qr_delta(j,i)) / sqrt(3 dk)"},
    .train = &train_deberta, .from_trained = from_trained_deberta, .qk = content_bias, .flops_extra = flops_rel,
};
