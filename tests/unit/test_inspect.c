/* test_inspect: the attention epar inspect reports is the training forward pass's. A small model is trained a few
 * steps for each of several mechanisms (a factor: epar-basic with learned parameters per head, epar-enhanced; a
 * bias: alibi; a rotation: rope; none), saved as a checkpoint, read back by epar_inspect_open and run on an
 * evaluation item; then rows of its attention are recomputed by hand, in double, from the loaded weights: the
 * LayerNorm of the layer's input, the q and k rows of the qkv product, RoPE's rotation, the scaled scores, the
 * mechanism's factor or bias, the causal softmax. Layer 0 starts from the token embeddings; layer 1 from layer 0's
 * block output as the forward pass kept it. Also: the per-head summaries on hand-made attention, the answer-relevant
 * positions and token symbols of the tasks, and a checkpoint cut short or foreign is refused with EPAR_EIO.
 *
 * Tolerance: the engine computes in float32 (sgemm, expf); a row's weights agree with the double recomputation to
 * about 1e-7 at these sizes (measured: 8e-8 to 1.1e-7); 1e-5 absolute is far below any real difference (the factor
 * taken one distance off moves weights by 2e-2 to 6e-2 here). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/ckpt.h"
#include "lib/err.h"
#include "lib/mech.h"
#include "lib/posfx.h"
#include "experiments/train/inspect.h"
#include "experiments/train/train.h"
#include "check.h"

static char tmpdir[] = "/tmp/epar-test-inspect.XXXXXX";

/* a small recall run of mechanism id, trained `steps` steps, saved; returns the checkpoint's path in buf */
static int train_small(enum epar_mech_id id, int learn, int steps, char *buf, size_t n)
{
    struct epar_train_cfg c;
    epar_exp_train_defaults(&c);
    epar_task_cfg_default(&c.task, EPAR_TASK_RECALL);
    c.task.length = 12; c.task.pairs = 3; c.task.keys = 6; c.task.values = 5; c.task.eval_sequences = 8;
    c.mechanism = id;
    c.layers = 2; c.dim = 16; c.heads = 2; c.mlp = 32; c.batch = 4;
    c.optim.steps = steps; c.optim.warmup = 1; c.optim.lr = 1e-2;
    c.eval_every = steps; c.eval_batches = 1;
    c.pos.fx = (struct epar_posfx){EPAR_FORM_ENHANCED, 1.3, 2.1, 0.7};
    c.pos.learn_posfx = learn;
    c.init_sd = 0.2;   /* large enough weights that no row is near uniform */
    struct epar_train_run r;
    int st = epar_exp_train_setup(&r, &c);
    if (!st) st = epar_exp_train_loop(&r);
    snprintf(buf, n, "%s/%s.bin", tmpdir, epar_nnpos_name(id));
    if (!st) st = epar_exp_train_checkpoint(&r, buf);
    epar_exp_train_free(&r);
    return st;
}

/* x (C) -> LayerNorm(x) w + b, in double (eps 1e-5, population variance) */
static void layernorm(const float *x, const float *w, const float *b, int C, double *out)
{
    double m = 0, v = 0;
    for (int k = 0; k < C; k++) m += x[k];
    m /= C;
    for (int k = 0; k < C; k++) v += (x[k] - m) * (x[k] - m);
    double rs = 1.0 / sqrt(v / C + 1e-5);
    for (int k = 0; k < C; k++) out[k] = (x[k] - m) * rs * w[k] + b[k];
}

/* head h's query (which 0) or key (1) at position t of layer l from the block input xin (T, C); RoPE rotated */
static void qk_row(const struct epar_nn *m, int l, int h, int which, const float *xin, int t, double *out)
{
    int C = m->cfg.C, hs = C / m->cfg.NH;
    double ln[256];
    layernorm(xin + (size_t)t * C, m->p.ln1w + (size_t)l * C, m->p.ln1b + (size_t)l * C, C, ln);
    const float *W = m->p.qkvw + (size_t)l * 3 * C * C, *bias = m->p.qkvb + (size_t)l * 3 * C;
    for (int d = 0; d < hs; d++) {
        int row = which * C + h * hs + d;
        double s = bias[row];
        for (int k = 0; k < C; k++) s += (double)W[(size_t)row * C + k] * ln[k];
        out[d] = s;
    }
    if (m->cfg.pos == EPAR_MECH_ROPE) epar_mech_rope_rotate(out, hs, t, m->cfg.pos_settings.mp[EPAR_MECH_ROPE][0], 0);
}

/* row i of head h in layer l, by hand: softmax over j <= i of (q_i . k_j / sqrt(hs)) m(d) + bias(d) */
static void hand_row(const struct epar_inspect *x, int l, int h, int i, const float *xin, double *a)
{
    const struct epar_nn *m = &x->run.model;
    int hs = m->cfg.C / m->cfg.NH, T = x->T, NH = m->cfg.NH;
    double q[64], k[64], mx = -INFINITY, sum = 0;
    qk_row(m, l, h, 0, xin, i, q);
    struct epar_posfx fx = epar_nnpos_effect(&m->pos, l, h);
    int epar = m->cfg.pos == EPAR_MECH_EPAR_BASIC || m->cfg.pos == EPAR_MECH_EPAR_ENHANCED;
    double slope = pow(2.0, -m->cfg.pos_settings.mp[EPAR_MECH_ALIBI][0] * (h + 1) / NH);   /* NH a power of 2 */
    for (int j = 0; j <= i; j++) {
        qk_row(m, l, h, 1, xin, j, k);
        double s = 0;
        for (int d = 0; d < hs; d++) s += q[d] * k[d];
        s /= sqrt((double)hs);
        if (epar) s *= epar_posfx_value(&fx, i - j, T);
        if (m->cfg.pos == EPAR_MECH_ALIBI) s -= slope * (i - j);
        a[j] = s;
        mx = fmax(mx, s);
    }
    for (int j = 0; j <= i; j++) sum += a[j] = exp(a[j] - mx);
    for (int j = 0; j <= i; j++) a[j] /= sum;
}

static void test_attention_by_hand(enum epar_mech_id id, int learn)
{
    char path[256];
    int st = train_small(id, learn, 8, path, sizeof path);
    check_int(st, EPAR_OK, "%s: trained and saved (%s)", epar_nnpos_name(id), st ? epar_err_message() : "");
    struct epar_inspect x;
    struct epar_inspect_opts o = {.item = 3};
    st = epar_inspect_open(&x, path, tmpdir);
    if (!st) st = epar_inspect_run(&x, &o);
    check_int(st, EPAR_OK, "%s: inspected (%s)", epar_nnpos_name(id), st ? epar_err_message() : "");
    if (st) return;
    const struct epar_nn *m = &x.run.model;
    int T = x.T, C = m->cfg.C;
    /* layer 0's input: the token embeddings (these mechanisms add nothing to the input) */
    float *emb = malloc((size_t)T * C * sizeof *emb);
    for (int t = 0; t < T; t++) memcpy(emb + (size_t)t * C, m->p.wte + (size_t)x.tok[t] * C, (size_t)C * sizeof *emb);
    double worst = 0, a[64], spread = 0;
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < x.NH; h++)
            for (int i = 0; i < T; i++) {
                const float *xin = l == 0 ? emb : m->a.residual3;   /* layer 1: layer 0's output, batch 1 */
                hand_row(&x, l, h, i, xin, a);
                const float *row = x.att + (((size_t)l * x.NH + h) * T + i) * T;
                for (int j = 0; j < T; j++) {
                    worst = fmax(worst, fabs(row[j] - (j <= i ? a[j] : 0.0)));
                    if (j <= i) spread = fmax(spread, fabs(a[j] - 1.0 / (i + 1)));
                }
            }
    check_abs(worst, 0, 1e-5, "%s%s: every attention row equals the hand computation from the weights",
              epar_nnpos_name(id), learn ? " (learned factors)" : "");
    check_true(spread > 0.05, "%s: the rows are far from uniform (max |a - 1/(i+1)| = %.3g)", epar_nnpos_name(id), spread);
    /* §4.3 on a trained head, by hand: I_j = ||embedding of token j||, V(i) = sum_j A_ij I_j, pos* = argmax V (first
     * of ties), against argmax I; consistency = (1 - |V(t) - V(a)| / V(t) + 1 - |t - a| / T) / 2 */
    double I[64], V[64];
    for (int j = 0; j < T; j++) {
        double n2 = 0;
        for (int c = 0; c < C; c++) n2 += (double)emb[(size_t)j * C + c] * emb[(size_t)j * C + c];
        I[j] = sqrt(n2);
    }
    int bad = 0;
    for (int k = 0; k < 2 * x.NH; k++) {
        const float *A = x.att + (size_t)k * T * T;
        int t = 0, ia = 0;
        for (int i = 0; i < T; i++) {
            V[i] = 0;
            for (int j = 0; j <= i; j++) V[i] += A[(size_t)i * T + j] * I[j];
            if (V[i] > V[t] * (1 + 1e-12)) t = i;
            if (I[i] > I[ia] * (1 + 1e-12)) ia = i;
        }
        double want = ((1 - fabs(V[t] - V[ia]) / (V[t] + 1e-8)) + (1 - fabs((double)t - ia) / T)) / 2;
        const double *st4 = x.stats + (size_t)k * EPAR_INSPECT_NSTATS;
        bad += (int)st4[EPAR_INSPECT_POS_STAR] != t || (int)st4[EPAR_INSPECT_POS_ACTUAL] != ia ||
               fabs(st4[EPAR_INSPECT_CONSISTENCY] - want) > 1e-6;
    }
    check_int(bad, 0, "%s: pos*, argmax I and the consistency of every head equal the hand computation",
              epar_nnpos_name(id));
    free(emb);
    epar_inspect_free(&x);
}

/* summaries on a hand-made attention: T = 3, rows [1], [0.25 0.75], [0.5 0.2 0.3] */
static void test_head_stats(void)
{
    float A[9] = {1, 0, 0, 0.25f, 0.75f, 0, 0.5f, 0.2f, 0.3f};
    unsigned char rel[9] = {0, 0, 0, 0, 0, 0, 1, 0, 0};   /* query 2 needs key 0 */
    double s[EPAR_INSPECT_NSTATS], mass[3];
    epar_inspect_head_stats(A, rel, 3, s, mass);
    check_rel(s[EPAR_INSPECT_DISTANCE], (0 + 0.25 + (2 * 0.5 + 0.2)) / 3, 1e-6, "mean distance");
    double h1 = -(0.25 * log(0.25) + 0.75 * log(0.75)), h2 = -(0.5 * log(0.5) + 0.2 * log(0.2) + 0.3 * log(0.3));
    check_rel(s[EPAR_INSPECT_ENTROPY], (h1 + h2) / 3, 1e-6, "entropy");
    check_rel(s[EPAR_INSPECT_ENTROPY_UNIFORM], (log(2) + log(3)) / 3, 1e-12, "entropy of uniform rows");
    check_rel(s[EPAR_INSPECT_PREVIOUS], (0.25 + 0.2) / 2, 1e-6, "previous-token share over queries 1..");
    check_rel(s[EPAR_INSPECT_FIRST], (0.25 + 0.5) / 2, 1e-6, "first-token share over queries 1..");
    check_rel(s[EPAR_INSPECT_RELEVANT], 0.5, 1e-6, "relevant share");
    check_rel(s[EPAR_INSPECT_RELEVANT_UNIFORM], 1.0 / 3, 1e-12, "relevant share of a uniform row");
    check_rel(mass[0], (1 + 0.75 + 0.3) / 3, 1e-6, "mass at distance 0 over 3 queries");
    check_rel(mass[1], (0.25 + 0.2) / 2, 1e-6, "mass at distance 1 over 2 queries");
    check_rel(mass[2], 0.5, 1e-6, "mass at distance 2 over 1 query");
    double u[3];
    epar_inspect_uniform_mass(3, u);
    check_rel(u[0], (1 + 0.5 + 1.0 / 3) / 3, 1e-12, "uniform rows' mass at distance 0");
    check_rel(u[1], (0.5 + 1.0 / 3) / 2, 1e-12, "uniform rows' mass at distance 1");
    check_rel(u[2], 1.0 / 3, 1e-12, "uniform rows' mass at distance 2");
    /* mass / u = 1.118, 0.54, 1.5: ranks 2 1 3 against 1 2 3 */
    check_rel(s[EPAR_INSPECT_DIST_SPEARMAN], 0.5, 1e-12, "Spearman of mass over uniform rows' mass against distance");
    epar_inspect_head_stats(A, NULL, 3, s, mass);
    check_true(isnan(s[EPAR_INSPECT_RELEVANT]), "no relevant positions: NaN share");
}

/* S1's fixed patterns and the head similarity on hand-made attention (rows 0 and 1 are never read: queries i >= 2).
 * By hand, Pearson is invariant to scale, so rows are written as integers: row 2 = (2, 3, 5)/10 centred x3 is
 * (-4, -1, 5), sxx = 42; current (0, 0, 1) centred x3 (-1, -1, 2), syy 6, sxy 15: r = 15/sqrt(252) = 5/(2 sqrt 7);
 * previous (-1, 2, -1): sxy -3, r = -1/(2 sqrt 7); left context at i = 2 is key 0 alone (f(0) = 1), as first token
 * (2, -1, -1): sxy -12, r = -2/sqrt 7. Row 3 = (1, 2, 3, 4)/10 centred x2 (-3, -1, 1, 3), sxx 20; current centred x4
 * (-1, -1, -1, 3), syy 12, sxy 12: r = 3/sqrt 15; previous (-1, -1, 3, -1): sxy 4, r = 1/sqrt 15; first (3, -1, -1,
 * -1): sxy -12, r = -3/sqrt 15; left context (j <= 1: 1/9, 8/9) scaled (1, 8, 0, 0) centred x4 (-5, 23, -9, -9), syy
 * 716, sxy 15 - 23 - 9 - 27 = -44: r = -44/sqrt(14320). */
static void test_patterns_similarity(void)
{
    float A3[9] = {1, 0, 0, 0.9f, 0.1f, 0, 0.2f, 0.3f, 0.5f};
    double pat[EPAR_INSPECT_NPATTERNS], r7 = sqrt(7.0), r15 = sqrt(15.0);
    epar_inspect_patterns(A3, 3, pat);
    check_rel(pat[EPAR_INSPECT_PATTERN_CURRENT], 5 / (2 * r7), 1e-6, "T = 3: current-token correlation 5/(2 sqrt 7)");
    check_rel(pat[EPAR_INSPECT_PATTERN_PREVIOUS], -1 / (2 * r7), 1e-6, "T = 3: previous-token correlation");
    check_rel(pat[EPAR_INSPECT_PATTERN_LEFT], -2 / r7, 1e-6, "T = 3: left context at i = 2 is key 0 alone");
    check_rel(pat[EPAR_INSPECT_PATTERN_FIRST], -2 / r7, 1e-6, "T = 3: first-token correlation");
    float A4[16] = {1, 0, 0, 0, 0.6f, 0.4f, 0, 0, 0.2f, 0.3f, 0.5f, 0, 0.1f, 0.2f, 0.3f, 0.4f};
    epar_inspect_patterns(A4, 4, pat);
    check_rel(pat[EPAR_INSPECT_PATTERN_CURRENT], (5 / (2 * r7) + 3 / r15) / 2, 1e-6, "T = 4: current, mean of rows 2, 3");
    check_rel(pat[EPAR_INSPECT_PATTERN_PREVIOUS], (-1 / (2 * r7) + 1 / r15) / 2, 1e-6, "T = 4: previous");
    check_rel(pat[EPAR_INSPECT_PATTERN_LEFT], (-2 / r7 - 44 / sqrt(14320.0)) / 2, 1e-6,
              "T = 4: left context (j + 1)^3 over j <= i - 2");
    check_rel(pat[EPAR_INSPECT_PATTERN_FIRST], (-2 / r7 - 3 / r15) / 2, 1e-6, "T = 4: first token");
    /* a head that is the pattern correlates 1 with it */
    float P4[16] = {1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
    epar_inspect_patterns(P4, 4, pat);
    check_rel(pat[EPAR_INSPECT_PATTERN_PREVIOUS], 1, 1e-12, "a previous-token head: correlation 1");
    /* uniform rows have no pattern: 0 */
    float U3[9] = {1, 0, 0, 0.5f, 0.5f, 0, 1.0f / 3, 1.0f / 3, 1.0f / 3};
    epar_inspect_patterns(U3, 3, pat);
    check_abs(fabs(pat[0]) + fabs(pat[1]) + fabs(pat[2]) + fabs(pat[3]), 0, 0, "a uniform row correlates 0 with every pattern");
    float Z2[4] = {1, 0, 0.5f, 0.5f};
    epar_inspect_patterns(Z2, 2, pat);
    check_true(isnan(pat[0]), "T = 2: no query i >= 2, NaN");
    /* similarity: row 2 (2, 3, 5) against (5, 3, 2): centred x3 (-4, -1, 5), (5, -1, -4): sxy -39, r = -39/42 */
    float B3[9] = {1, 0, 0, 0.1f, 0.9f, 0, 0.5f, 0.3f, 0.2f};
    check_rel(epar_inspect_similarity(A3, B3, 3), -13.0 / 14, 1e-6, "similarity of two heads: row Pearson -13/14");
    check_rel(epar_inspect_similarity(A3, A3, 3), 1, 1e-12, "a head is similar 1 to itself");
    check_rel(epar_inspect_similarity(U3, U3, 3), 1, 0, "two uniform heads: 1");
    check_abs(epar_inspect_similarity(U3, A3, 3), 0, 0, "a uniform head against another: 0");
    /* T = 4: the mean over rows 2 and 3; row 3 of A4 (1, 2, 3, 4) against P4's (0, 0, 1, 0): r = 1/sqrt 15, row 2
     * against (0, 1, 0): -1/(2 sqrt 7) */
    check_rel(epar_inspect_similarity(A4, P4, 4), (-1 / (2 * r7) + 1 / r15) / 2, 1e-6, "similarity: mean over rows 2..T-1");
    /* the most similar head: 2 layers x 2 heads */
    double sim[16] = {1, 0.3, 0.9, 0.2,  0.3, 1, 0.1, 0.4,  0.9, 0.1, 1, 0.5,  0.2, 0.4, 0.5, 1};
    double in, other;
    epar_inspect_most_similar(sim, 2, 2, 0, &in, &other);
    check_true(in == 0.3 && other == 0.9, "head 0: 0.3 in its layer, 0.9 in the other (got %g, %g)", in, other);
    epar_inspect_most_similar(sim, 2, 2, 3, &in, &other);
    check_true(in == 0.5 && other == 0.4, "head 3: 0.5 in its layer, 0.4 in the other (got %g, %g)", in, other);
    epar_inspect_most_similar(sim, 1, 4, 3, &in, &other);
    check_true(in == 0.5 && isnan(other), "one layer: no other layer (NaN)");
}

/* the per-head record of epar_inspect_summarise is the mean over its items of each item's heads (pattern_best: the
 * largest mean, not the mean of the largest; similarities: the largest mean), ALiBi's slopes its heads' */
static void test_summary_per_head(void)
{
    char path[256];
    int st = train_small(EPAR_MECH_ALIBI, 0, 8, path, sizeof path);
    struct epar_inspect x;
    struct epar_inspect_summary sm = {0};
    if (!st) st = epar_inspect_open(&x, path, tmpdir);
    if (!st) st = epar_inspect_summarise(&x, 2, &sm);
    check_int(st, EPAR_OK, "alibi: summarised over 2 items (%s)", st ? epar_err_message() : "");
    if (st) return;
    int H = x.NL * x.NH;
    check_int(sm.n_head, H, "one record per head");
    long count = epar_task_eval_count(&x.run.task);
    double *sum = calloc((size_t)H * (EPAR_INSPECT_NPATTERNS + 2), sizeof *sum), *ssum = calloc((size_t)H * H, sizeof *ssum);
    for (long k = 0; k < 2; k++) {
        struct epar_inspect_opts o = {.item = k * count / 2};
        epar_inspect_run(&x, &o);
        for (int h = 0; h < H; h++) {
            const double *s = x.stats + (size_t)h * EPAR_INSPECT_NSTATS;
            for (int p = 0; p < EPAR_INSPECT_NPATTERNS; p++) sum[h * (EPAR_INSPECT_NPATTERNS + 2) + p] += s[EPAR_INSPECT_PAT_CURRENT + p] / 2;
            sum[h * (EPAR_INSPECT_NPATTERNS + 2) + EPAR_INSPECT_NPATTERNS] += s[EPAR_INSPECT_DISTANCE] / 2;
            sum[h * (EPAR_INSPECT_NPATTERNS + 2) + EPAR_INSPECT_NPATTERNS + 1] += s[EPAR_INSPECT_ENTROPY] / 2;
            for (int q = 0; q < H; q++) ssum[h * H + q] += epar_inspect_similarity(x.att + (size_t)h * x.T * x.T,
                                                                                 x.att + (size_t)q * x.T * x.T, x.T) / 2;
        }
    }
    double worst = 0;
    int bad = 0;
    for (int h = 0; h < H; h++) {
        const struct epar_inspect_head *r = &sm.head[h];
        const double *w = sum + h * (EPAR_INSPECT_NPATTERNS + 2);
        double best = -INFINITY, in = -INFINITY, other = -INFINITY;
        for (int p = 0; p < EPAR_INSPECT_NPATTERNS; p++) {
            worst = fmax(worst, fabs(r->pattern[p] - w[p]));
            best = fmax(best, w[p]);
        }
        for (int q = 0; q < H; q++)
            if (q != h) {
                if (q / x.NH == h / x.NH) in = fmax(in, ssum[h * H + q]);
                else other = fmax(other, ssum[h * H + q]);
            }
        worst = fmax(worst, fabs(r->pattern_best - best));
        worst = fmax(worst, fabs(r->mean_distance - w[EPAR_INSPECT_NPATTERNS]));
        worst = fmax(worst, fabs(r->entropy - w[EPAR_INSPECT_NPATTERNS + 1]));
        worst = fmax(worst, fmax(fabs(r->similar_layer - in), fabs(r->similar_other - other)));
        bad += r->layer != h / x.NH || r->head != h % x.NH ||
               fabs(r->slope - pow(2.0, -8.0 * (h % x.NH + 1) / x.NH)) > 1e-12;
    }
    check_abs(worst, 0, 1e-12, "every head's record is the mean over the items of its per-item summaries");
    check_int(bad, 0, "layer, head and ALiBi slope 2^(-8 (h + 1) / heads) of every record");
    free(sum);
    free(ssum);
    free(sm.head);
    epar_inspect_free(&x);
}

/* recall's symbols round-trip through the text parser, and a question's relevant key is its fact */
static void test_symbols_relevance(void)
{
    struct epar_task_cfg c;
    epar_task_cfg_default(&c, EPAR_TASK_RECALL);
    c.length = 12; c.pairs = 3; c.keys = 6; c.values = 5; c.eval_sequences = 4;
    struct epar_task t;
    check_int(epar_task_open(&t, &c), EPAR_OK, "recall task opens");
    int tok[12], scratch[64], n = 0, bad = 0;   /* scratch: (V = 42) */
    char sym[64];
    for (int v = 0; v < t.V; v++) {
        epar_task_symbol(&t, v, sym, sizeof sym);
        int id, k;
        bad += epar_task_parse_text(&t, sym, &id, 1, &k) || k != 1 || id != v;
    }
    check_int(bad, 0, "every recall symbol parses back to its id");
    int got = epar_task_parse_text(&t, "k1:v2 k4:v0 _ k4? =v0 k1? 3", tok, 12, &n);
    check_int(got == EPAR_OK && n == 7 && tok[6] == 3, 1, "a text of symbols and an id");
    unsigned char rel[144];
    int rows = epar_task_relevant(&t, tok, n, rel, scratch);
    check_int(rows, 2, "two questions have a relevant key");
    check_int(rel[3 * n + 1] + rel[3 * n + 0] * 2, 1, "question k4? (position 3) needs the fact k4:v0 (position 1)");
    check_int(rel[5 * n + 0] + rel[5 * n + 1] * 2, 1, "question k1? (position 5) needs the fact k1:v2 (position 0)");
    check_int(epar_task_parse_text(&t, "k1? k9?", tok, 12, &n), EPAR_EINVAL, "a key outside the vocabulary is refused");
    check_int(epar_task_parse_text(&t, "_ _ _ _ _ _ _ _ _ _ _ _ _", tok, 12, &n), EPAR_EINVAL, "more tokens than the length");
    check_int(epar_task_parse_text(&t, "  ", tok, 12, &n), EPAR_EINVAL, "an empty text");
    epar_task_close(&t);
}

/* every synthetic task: the symbols of its vocabulary parse back; on its evaluation items the positions with
 * relevant keys are exactly the scored ones, and those keys hold the answer (recall, needle: the fact of the
 * answer's value; transduce, select: the target symbol; classify: the label; set: as many places as the count) */
static void test_relevance_tasks(void)
{
    enum epar_task_id ids[] = {EPAR_TASK_RECALL, EPAR_TASK_NEEDLE, EPAR_TASK_TRANSDUCE, EPAR_TASK_CLASSIFY,
                               EPAR_TASK_SELECT, EPAR_TASK_SET};
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        struct epar_task_cfg c;
        epar_task_cfg_default(&c, ids[k]);
        c.length = 24; c.pairs = 3; c.keys = ids[k] == EPAR_TASK_SET ? 4 : 6; c.values = 5; c.eval_sequences = 16;
        struct epar_task t;
        if (epar_task_open(&t, &c)) {
            check_true(0, "%s opens: %s", epar_task_name(ids[k]), epar_err_message());
            continue;
        }
        int bad = 0, V = t.V, T = c.length, tok[24], tgt[24], *scratch = malloc((size_t)V * sizeof *scratch), one, n;
        float mask[24];
        char sym[64];
        for (int v = 0; v < V; v++) {
            epar_task_symbol(&t, v, sym, sizeof sym);
            bad += epar_task_parse_text(&t, sym, &one, 1, &n) || one != v;
        }
        check_int(bad, 0, "%s: every symbol of %d parses back to its id", epar_task_name(ids[k]), V);
        int wrong = 0, rows = 0, scored = 0;
        unsigned char rel[24 * 24];
        for (long item = 0; item < c.eval_sequences; item++) {
            epar_task_eval_item(&t, item, tok, tgt, mask);
            rows += epar_task_relevant(&t, tok, T, rel, scratch);
            for (int q = 0; q < T; q++) {
                int nrel = 0, holds = 0;
                scored += mask[q] > 0;
                for (int j = 0; j <= q; j++) {
                    if (!rel[q * T + j]) continue;
                    nrel++;
                    if (ids[k] == EPAR_TASK_RECALL || ids[k] == EPAR_TASK_NEEDLE)
                        holds += (tok[j] - 1) % c.values == tgt[q] - 1 - c.keys * c.values - c.keys;
                    else if (ids[k] == EPAR_TASK_SET) holds = 1;
                    else holds += tok[j] == tgt[q];
                }
                if (ids[k] == EPAR_TASK_SET && nrel > 0) holds = nrel == tgt[q] - 1 - c.keys;
                if ((mask[q] > 0) != (nrel > 0) || (nrel > 0 && !holds)) wrong++;
            }
        }
        /* set: an item present 0 times has no relevant place but is scored */
        if (ids[k] == EPAR_TASK_SET) check_true(rows <= scored && wrong <= scored - rows, "set: relevant places hold the count");
        else check_int(wrong, 0, "%s: relevant keys are at the scored positions and hold the answer (%d of %d rows)",
                       epar_task_name(ids[k]), rows, scored);
        free(scratch);
        epar_task_close(&t);
    }
}

/* a checkpoint cut short or with a flipped byte: EPAR_EIO, nothing loaded */
static void test_bad_checkpoints(void)
{
    char path[256], cut[300];
    check_int(train_small(EPAR_MECH_NONE, 0, 2, path, sizeof path), EPAR_OK, "small run saved");
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    unsigned char *buf = malloc((size_t)len);
    check_int((long)fread(buf, 1, (size_t)len, f), len, "checkpoint read");
    fclose(f);
    snprintf(cut, sizeof cut, "%s/cut.bin", tmpdir);
    long lens[] = {0, 10, 100, len / 2, len - 1};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        f = fopen(cut, "wb");
        fwrite(buf, 1, (size_t)lens[k], f);
        fclose(f);
        struct epar_inspect x;
        check_int(epar_inspect_open(&x, cut, tmpdir), EPAR_EIO, "a checkpoint cut to %ld of %ld bytes", lens[k], len);
        epar_inspect_free(&x);
    }
    buf[len / 3] ^= 0x40;
    f = fopen(cut, "wb");
    fwrite(buf, 1, (size_t)len, f);
    fclose(f);
    struct epar_inspect x;
    check_int(epar_inspect_open(&x, cut, tmpdir), EPAR_EIO, "a checkpoint with one flipped bit");
    epar_inspect_free(&x);
    free(buf);
    unlink(cut);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) return 1;
    test_attention_by_hand(EPAR_MECH_EPAR_ENHANCED, 0);
    test_attention_by_hand(EPAR_MECH_EPAR_BASIC, 1);
    test_attention_by_hand(EPAR_MECH_ALIBI, 0);
    test_attention_by_hand(EPAR_MECH_ROPE, 0);
    test_attention_by_hand(EPAR_MECH_NONE, 0);
    test_head_stats();
    test_patterns_similarity();
    test_summary_per_head();
    test_symbols_relevance();
    test_relevance_tasks();
    test_bad_checkpoints();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) return 1;
    return check_summary("test_inspect");
}
