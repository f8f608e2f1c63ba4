/* epar inspect: a checkpoint's attention on one input, its summaries, tables, heatmaps and the head view. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_statistics_double.h>
#include "lib/ckpt.h"
#include "lib/err.h"
#include "lib/metrics.h"
#include "lib/plot.h"
#include "lib/version.h"
#include "experiments/common.h"
#include "experiments/train/inspect.h"
#include "experiments/train/interv.h"

/* ------------------------------------------------------------------------------------------------ */
/* reading the checkpoint                                                                             */

int epar_inspect_open(struct epar_inspect *x, const char *path, const char *cache_dir)
{
    memset(x, 0, sizeof *x);
    snprintf(x->path, sizeof x->path, "%s", path);
    struct epar_ckpt ck;
    int st = epar_ckpt_read(path, &ck);
    if (st) return st;
    st = epar_exp_train_load(&x->run, &ck, path, cache_dir);
    epar_ckpt_free(&ck);
    if (st) return st;
    const struct epar_train_cfg *c = &x->run.cfg;
    snprintf(x->name, sizeof x->name, "%s-%s-seed%lu", x->run.label[0] ? x->run.label : epar_task_name(c->task.id),
             epar_nnpos_name(c->mechanism), c->seed);
    x->NL = c->layers;
    x->NH = c->heads;
    return EPAR_OK;
}

int epar_inspect_check_selection(const struct epar_inspect *x, const struct epar_inspect_opts *o)
{
    for (int k = 0; k < o->n_layers; k++)
        if (o->layers[k] < 0 || o->layers[k] >= x->NL)
            return epar_err_set(EPAR_EINVAL, "invalid value for --layers: '%d' (the model of '%s' has layers 0..%d)",
                                o->layers[k], x->path, x->NL - 1);
    for (int k = 0; k < o->n_heads; k++)
        if (o->heads[k] < 0 || o->heads[k] >= x->NH)
            return epar_err_set(EPAR_EINVAL, "invalid value for --heads: '%d' (the model of '%s' has heads 0..%d)",
                                o->heads[k], x->path, x->NH - 1);
    long count = epar_task_eval_count(&x->run.task);
    if ((o->mask_heads || o->boost > 0) && o->interv_items > count) {   /* never fewer items than asked, silently */
        epar_err_set(EPAR_EINVAL, "invalid value for --eval-items: '%ld' (the evaluation set of '%s' has %ld items)",
                     o->interv_items, x->path, count);
        epar_err_hint("use --eval-items %ld or fewer", count);
        return EPAR_EINVAL;
    }
    return EPAR_OK;
}

/* the selected layers (or heads): o's list, or 0..n-1; returns the count */
static int selection(const int *list, int nlist, int n, int *out)
{
    if (nlist == 0) {
        for (int k = 0; k < n; k++) out[k] = k;
        return n;
    }
    memcpy(out, list, (size_t)nlist * sizeof *out);
    return nlist;
}

/* ------------------------------------------------------------------------------------------------ */
/* the input and the forward pass                                                                     */

/* the arrays of the last input (a checkpoint runs several inputs in epar_inspect_summarise) */
static void free_input(struct epar_inspect *x)
{
    free(x->tok); free(x->tgt); free(x->mask); free(x->pred); free(x->p_target); free(x->att); free(x->rel);
    free(x->stats); free(x->mass); free(x->peff); free(x->sim); free(x->head_mask);
    x->head_mask = NULL;
    x->tok = x->tgt = x->pred = NULL;
    x->mask = x->att = NULL;
    x->p_target = x->stats = x->mass = x->peff = x->sim = NULL;
    x->rel = NULL;
}

static int alloc_input(struct epar_inspect *x, int T)
{
    free_input(x);
    x->T = T;
    size_t NLH = (size_t)x->NL * x->NH;
    x->tok = epar_err_alloc((size_t)T, sizeof *x->tok, "the input");
    x->tgt = epar_err_alloc((size_t)T, sizeof *x->tgt, "the input");
    x->mask = epar_err_alloc((size_t)T, sizeof *x->mask, "the input");
    x->pred = epar_err_alloc((size_t)T, sizeof *x->pred, "the predictions");
    x->p_target = epar_err_alloc((size_t)T, sizeof *x->p_target, "the predictions");
    x->att = epar_err_alloc(NLH * T * T, sizeof *x->att, "the attention weights");
    x->rel = epar_err_alloc((size_t)T * T, 1, "the relevant positions");
    x->stats = epar_err_alloc(NLH * EPAR_INSPECT_NSTATS, sizeof *x->stats, "the head summaries");
    x->mass = epar_err_alloc(NLH * T, sizeof *x->mass, "the distance profiles");
    x->peff = epar_err_alloc(NLH * T, sizeof *x->peff, "the distance profiles");
    x->sim = epar_err_alloc(NLH * NLH, sizeof *x->sim, "the head similarities");
    return x->tok && x->tgt && x->mask && x->pred && x->p_target && x->att && x->rel && x->stats && x->mass && x->peff &&
                   x->sim
               ? EPAR_OK : EPAR_ENOMEM;
}

/* the evaluation item o->item, or o->text as tokens */
static int make_input(struct epar_inspect *x, const struct epar_inspect_opts *o)
{
    struct epar_task *t = &x->run.task;
    int Tmax = x->run.cfg.task.length, st;
    if (!o->text) {
        long n = epar_task_eval_count(t);
        if (o->item < 0 || o->item >= n)
            return epar_err_set(EPAR_EINVAL, "invalid value for --item: '%ld' (the evaluation set of '%s' has items 0..%ld)",
                                o->item, x->path, n - 1);
        if ((st = alloc_input(x, Tmax))) return st;
        x->item = o->item;
        epar_task_eval_item(t, o->item, x->tok, x->tgt, x->mask);
        return EPAR_OK;
    }
    int *tok = epar_err_alloc((size_t)Tmax, sizeof *tok, "the text"), T = 0;
    if (!tok) return EPAR_ENOMEM;
    st = epar_task_parse_text(t, o->text, tok, Tmax, &T);
    if (!st) st = alloc_input(x, T);
    if (!st) {
        x->from_text = 1;
        memcpy(x->tok, tok, (size_t)T * sizeof *tok);
        for (int q = 0; q < T; q++) {   /* what follows in the text; lm scores every next character */
            x->tgt[q] = q + 1 < T ? tok[q + 1] : -1;
            x->mask[q] = t->cfg.id == EPAR_TASK_LM && q + 1 < T ? 1.0f : 0.0f;
        }
    }
    free(tok);
    return st;
}

/* the forward pass of training on the input (batch 1); attention, predictions */
static int forward(struct epar_inspect *x, const struct epar_inspect_opts *o)
{
    struct epar_nn *m = &x->run.model;
    int T = x->T, NH = x->NH, V = m->cfg.V, st = EPAR_OK;
    if (o && o->boost > 0) {   /* the keys the answer needs, boosted in the last layer (the source's attentions[-1]) */
        int *scratch = EPAR_MALLOC((size_t)x->run.task.V * sizeof(int));
        if (!scratch) return EPAR_ENOMEM;
        epar_task_relevant(&x->run.task, x->tok, T, x->rel, scratch);
        free(scratch);
        m->boost = (struct epar_nn_boost){o->boost, x->NL - 1, o->boost_renorm, x->rel};
    }
    m->head_mask = x->head_mask;
    st = epar_nn_forward(m, x->tok, NULL, NULL, 1, T);
    m->head_mask = NULL;
    memset(&m->boost, 0, sizeof m->boost);
    if (st) return st;
    size_t nA = (size_t)NH * T * T;   /* one layer of m->a.att at batch 1: (NH, T, T) */
    for (int l = 0; l < x->NL; l++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const float *src = m->a.att + l * nA + ((size_t)h * T + i) * T;
                float *dst = x->att + (((size_t)l * NH + h) * T + i) * T;
                for (int j = 0; j < T; j++) dst[j] = j <= i ? src[j] : 0.0f;   /* keys after i are not written */
            }
    for (int q = 0; q < T; q++) {
        const float *p = m->a.probs + (size_t)q * V;
        int best = 0;
        for (int v = 1; v < V; v++)
            if (p[v] > p[best]) best = v;
        x->pred[q] = best;
        x->p_target[q] = x->tgt[q] >= 0 && x->tgt[q] < V ? p[x->tgt[q]] : NAN;
    }
    return EPAR_OK;
}

/* ------------------------------------------------------------------------------------------------ */
/* summaries                                                                                          */

void epar_inspect_head_stats(const float *A, const unsigned char *rel, int T, double *s, double *mass)
{
    double dist = 0, ent = 0, ent_u = 0, prev = 0, first = 0, relv = 0, relu = 0;
    int nrel = 0;
    for (int d = 0; d < T; d++) mass[d] = 0;
    for (int i = 0; i < T; i++) {
        const float *a = A + (size_t)i * T;
        double h = epar_metric_entropy_f(a, i + 1, NULL), r = 0;
        int nr = 0;
        for (int j = 0; j <= i; j++) {
            dist += (double)a[j] * (i - j);
            mass[i - j] += a[j];
            if (rel && rel[(size_t)i * T + j]) {
                r += a[j];
                nr++;
            }
        }
        ent += h;
        ent_u += log((double)i + 1);
        if (i > 0) {
            prev += a[i - 1];
            first += a[0];
        }
        if (nr > 0) {
            relv += r;
            relu += (double)nr / (i + 1);
            nrel++;
        }
    }
    for (int d = 0; d < T; d++) mass[d] /= (double)(T - d);   /* T - d queries have a key at distance d */
    s[EPAR_INSPECT_DISTANCE] = dist / T;
    s[EPAR_INSPECT_ENTROPY] = ent / T;
    s[EPAR_INSPECT_ENTROPY_UNIFORM] = ent_u / T;
    s[EPAR_INSPECT_PREVIOUS] = T > 1 ? prev / (T - 1) : NAN;
    s[EPAR_INSPECT_FIRST] = T > 1 ? first / (T - 1) : NAN;
    s[EPAR_INSPECT_RELEVANT] = nrel ? relv / nrel : NAN;
    s[EPAR_INSPECT_RELEVANT_UNIFORM] = nrel ? relu / nrel : NAN;
    /* against the distance, relative to a uniform causal row's mass (which falls with d by itself) */
    double *work = malloc(4 * (size_t)T * sizeof *work);
    if (work && T > 2) {
        epar_inspect_uniform_mass(T, work + 3 * T);
        for (int d = 0; d < T; d++) {
            work[2 * T + d] = d;
            work[3 * T + d] = mass[d] / work[3 * T + d];
        }
        s[EPAR_INSPECT_DIST_SPEARMAN] = epar_metric_spearman(work + 3 * T, work + 2 * T, (size_t)T, work);
    } else {
        s[EPAR_INSPECT_DIST_SPEARMAN] = NAN;
    }
    free(work);
}

void epar_inspect_uniform_mass(int T, double *u)
{
    double tail = 0;   /* sum over i = d .. T-1 of 1 / (i + 1) */
    for (int d = T - 1; d >= 0; d--) {
        tail += 1.0 / (d + 1);
        u[d] = tail / (T - d);
    }
}

const char *const epar_inspect_pattern_names[EPAR_INSPECT_NPATTERNS] = {"current", "previous", "left", "first"};

/* the Pearson correlation of x and y (n); a constant row has none: 1 when both are constant, else 0 (the values are
 * shifted by their first, so a row of equal values has a variance of exactly 0) */
static double row_pearson(const double *x, const double *y, int n)
{
    double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
    for (int j = 0; j < n; j++) {
        mx += x[j] - x[0];
        my += y[j] - y[0];
    }
    mx /= n;
    my /= n;
    for (int j = 0; j < n; j++) {
        double a = x[j] - x[0] - mx, b = y[j] - y[0] - my;
        sxx += a * a;
        syy += b * b;
        sxy += a * b;
    }
    if (sxx == 0 || syy == 0) return sxx == 0 && syy == 0 ? 1.0 : 0.0;
    return sxy / sqrt(sxx * syy);
}

/* pattern p's row i (keys 0..i) into q */
static void pattern_row(int p, int i, double *q)
{
    for (int j = 0; j <= i; j++) q[j] = 0;
    if (p == EPAR_INSPECT_PATTERN_CURRENT) q[i] = 1;
    else if (p == EPAR_INSPECT_PATTERN_PREVIOUS) q[i - 1] = 1;
    else if (p == EPAR_INSPECT_PATTERN_FIRST) q[0] = 1;
    else {
        double z = 0;
        for (int j = 0; j <= i - 2; j++) z += pow(j + 1.0, 3);
        for (int j = 0; j <= i - 2; j++) q[j] = pow(j + 1.0, 3) / z;
    }
}

void epar_inspect_patterns(const float *A, int T, double pat[EPAR_INSPECT_NPATTERNS])
{
    double *a = T >= 3 ? malloc(2 * (size_t)T * sizeof *a) : NULL, *q = a ? a + T : NULL;
    for (int p = 0; p < EPAR_INSPECT_NPATTERNS; p++) pat[p] = a ? 0.0 : NAN;
    if (!a) return;
    for (int i = 2; i < T; i++) {
        for (int j = 0; j <= i; j++) a[j] = A[(size_t)i * T + j];
        for (int p = 0; p < EPAR_INSPECT_NPATTERNS; p++) {
            pattern_row(p, i, q);
            pat[p] += row_pearson(a, q, i + 1);
        }
    }
    for (int p = 0; p < EPAR_INSPECT_NPATTERNS; p++) pat[p] /= T - 2;
    free(a);
}

double epar_inspect_similarity(const float *A, const float *B, int T)
{
    double *a = T >= 3 ? malloc(2 * (size_t)T * sizeof *a) : NULL, *b = a ? a + T : NULL, s = 0;
    if (!a) return NAN;
    for (int i = 2; i < T; i++) {
        for (int j = 0; j <= i; j++) {
            a[j] = A[(size_t)i * T + j];
            b[j] = B[(size_t)i * T + j];
        }
        s += row_pearson(a, b, i + 1);
    }
    free(a);
    return s / (T - 2);
}

void epar_inspect_most_similar(const double *sim, int NL, int NH, int k, double *in_layer, double *other)
{
    int H = NL * NH;
    *in_layer = *other = NAN;
    for (int q = 0; q < H; q++) {
        double v = sim[(size_t)k * H + q], *to = q / NH == k / NH ? in_layer : other;
        if (q != k && !isnan(v) && (isnan(*to) || v > *to)) *to = v;
    }
}

/* every head's fixed-pattern correlations, the similarity of every pair and each head's most similar other head in its
 * layer and in another layer; ALiBi's slopes */
static void patterns_and_similarity(struct epar_inspect *x)
{
    int T = x->T, NH = x->NH, H = x->NL * NH;
    const double *slopes = x->run.cfg.mechanism == EPAR_MECH_ALIBI || x->run.cfg.mechanism == EPAR_MECH_ALIBI_LEARNED
                              ? x->run.model.pos.slopes : NULL;   /* alibi-learned: its learned slopes */
    for (int k = 0; k < H; k++) {
        double *s = x->stats + (size_t)k * EPAR_INSPECT_NSTATS, pat[EPAR_INSPECT_NPATTERNS];
        epar_inspect_patterns(x->att + (size_t)k * T * T, T, pat);
        s[EPAR_INSPECT_PAT_BEST] = -INFINITY;
        for (int p = 0; p < EPAR_INSPECT_NPATTERNS; p++) {
            s[EPAR_INSPECT_PAT_CURRENT + p] = pat[p];
            s[EPAR_INSPECT_PAT_BEST] = fmax(s[EPAR_INSPECT_PAT_BEST], pat[p]);
        }
        if (isnan(pat[0])) s[EPAR_INSPECT_PAT_BEST] = NAN;
        s[EPAR_INSPECT_SLOPE] = slopes ? slopes[k % NH] : NAN;
        x->sim[(size_t)k * H + k] = 1.0;
        for (int q = 0; q < k; q++)
            x->sim[(size_t)k * H + q] = x->sim[(size_t)q * H + k] =
                epar_inspect_similarity(x->att + (size_t)k * T * T, x->att + (size_t)q * T * T, T);
    }
    for (int k = 0; k < H; k++) {
        double *s = x->stats + (size_t)k * EPAR_INSPECT_NSTATS;
        epar_inspect_most_similar(x->sim, x->NL, NH, k, &s[EPAR_INSPECT_SIM_LAYER], &s[EPAR_INSPECT_SIM_OTHER]);
    }
}

static int is_epar(enum epar_mech_id id) { return id == EPAR_MECH_EPAR_BASIC || id == EPAR_MECH_EPAR_ENHANCED; }

/* §4.3 on every trained head (lib/metrics' consistency family, as `optimal-position` scores random layers): I_j =
 * ||wte[token_j]||_2, the input before any position term (the importance type "norm"), V = A I, pos* = argmax V,
 * against argmax of the actual scores (mean_j A_ij) I_i */
static int optimal_position(struct epar_inspect *x)
{
    int T = x->T, C = x->run.model.cfg.C;
    double *A = EPAR_MALLOC(((size_t)T * T + 7 * (size_t)T) * sizeof *A), *I = A ? A + (size_t)T * T : NULL;
    size_t *perm = EPAR_MALLOC((size_t)T * sizeof *perm);
    if (!A || !perm) {
        free(A);
        free(perm);
        return EPAR_ENOMEM;
    }
    for (int j = 0; j < T; j++) {
        const float *e = x->run.model.p.wte + (size_t)x->tok[j] * C;
        double n2 = 0;
        for (int c = 0; c < C; c++) n2 += (double)e[c] * e[c];
        I[j] = sqrt(n2);
    }
    for (size_t k = 0; k < (size_t)x->NL * x->NH; k++) {
        const float *a = x->att + k * T * T;
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++) A[(size_t)i * T + j] = j <= i ? a[(size_t)i * T + j] : 0.0;
        struct epar_metric_optimal mo;
        epar_metric_optimal(A, I, T, I + T, perm, &mo);
        double *s = x->stats + k * EPAR_INSPECT_NSTATS;
        s[EPAR_INSPECT_POS_STAR] = mo.theoretical;
        s[EPAR_INSPECT_POS_ACTUAL] = mo.actual;
        s[EPAR_INSPECT_CONSISTENCY] = mo.consistency;
        s[EPAR_INSPECT_RANKING] = mo.ranking;
    }
    free(A);
    free(perm);
    return EPAR_OK;
}

/* every head's summaries; EPAR: its factor P(d) and how the mass by distance follows it */
static int summarise(struct epar_inspect *x)
{
    const struct epar_nnpos *p = &x->run.model.pos;
    int T = x->T, epar = is_epar(x->run.cfg.mechanism);
    double L = p->s.posfx_length > 0 ? p->s.posfx_length : T;   /* as the forward pass used it */
    double *work = EPAR_MALLOC(4 * (size_t)T * sizeof(double)), *u = work ? work + 2 * T : NULL, *relm = u ? u + T : NULL;
    int *scratch = EPAR_MALLOC((size_t)x->run.task.V * sizeof(int));
    if (!work || !scratch) {
        free(work);
        free(scratch);
        return EPAR_ENOMEM;
    }
    x->rel_rows = epar_task_relevant(&x->run.task, x->tok, T, x->rel, scratch);
    free(scratch);
    epar_inspect_uniform_mass(T, u);
    for (int l = 0; l < x->NL; l++)
        for (int h = 0; h < x->NH; h++) {
            size_t k = (size_t)l * x->NH + h;
            double *s = x->stats + k * EPAR_INSPECT_NSTATS, *mass = x->mass + k * T, *pe = x->peff + k * T;
            epar_inspect_head_stats(x->att + k * T * T, x->rel_rows ? x->rel : NULL, T, s, mass);
            struct epar_posfx fx = epar ? epar_nnpos_effect(p, l, h) : (struct epar_posfx){EPAR_FORM_NONE, NAN, NAN, NAN};
            for (int d = 0; d < T; d++) pe[d] = epar ? epar_posfx_value(&fx, d, L) : NAN;
            s[EPAR_INSPECT_ALPHA] = fx.alpha;
            s[EPAR_INSPECT_BETA] = fx.beta;
            s[EPAR_INSPECT_GAMMA] = epar && fx.form == EPAR_FORM_ENHANCED ? fx.gamma : NAN;
            for (int d = 0; d < T; d++) relm[d] = mass[d] / u[d];   /* as for distance_spearman */
            s[EPAR_INSPECT_PROFILE_PEARSON] = epar && T > 2 ? gsl_stats_correlation(relm, 1, pe, 1, (size_t)T) : NAN;
            s[EPAR_INSPECT_PROFILE_SPEARMAN] = epar && T > 2 ? epar_metric_spearman(relm, pe, (size_t)T, work) : NAN;
        }
    free(work);
    patterns_and_similarity(x);
    return optimal_position(x);
}

void epar_inspect_input_tag(const struct epar_inspect_opts *o, char *buf, size_t n)
{
    if (o->text) snprintf(buf, n, "text-%08lx",
                          (unsigned long)(epar_ckpt_fnv1a(EPAR_CKPT_FNV_INIT, o->text, strlen(o->text)) & 0xffffffffUL));
    else snprintf(buf, n, "item%ld", o->item);
}

int epar_inspect_run(struct epar_inspect *x, const struct epar_inspect_opts *o)
{
    int st = epar_inspect_check_selection(x, o);
    if (!st) st = make_input(x, o);
    x->interventions = o->mask_heads || o->boost > 0;
    if (!st && o->mask_heads) {
        x->head_mask = EPAR_MALLOC((size_t)x->NL * x->NH);
        st = x->head_mask ? epar_interv_parse_heads(o->mask_heads, x->NL, x->NH, x->head_mask) : EPAR_ENOMEM;
        if (st == EPAR_EINVAL) {   /* the message copied first: epar_err_set writes where it lives */
            char msg[256];
            snprintf(msg, sizeof msg, "%s", epar_err_message());
            epar_err_set(EPAR_EINVAL, "invalid value for --mask-heads: %s", msg);
        }
    }
    if (!st) st = forward(x, o);
    if (!st) st = summarise(x);
    if (!st && x->interventions) {
        struct epar_interv iv = {x->head_mask, o->boost > 0 ? o->boost : 1.0, o->boost > 0 ? x->NL - 1 : -1,
                                 o->boost_renorm}, none = {NULL, 1.0, -1, 0};
        long n = o->interv_items > 0 ? o->interv_items : 256;
        st = epar_interv_eval(&x->run, n, &none, &x->interv_base);
        if (!st) st = epar_interv_eval(&x->run, n, &iv, &x->interv_eval);
    }
    char tag[32], itag[48] = "";
    epar_inspect_input_tag(o, tag, sizeof tag);
    /* an intervention's folder beside the plain one: "-mask<L.H+L.H>" (a long list: 8 hex digits of its FNV-1a hash),
     * then "-boost<X>" ("r": renormalised) */
    if (o->mask_heads && strlen(o->mask_heads) <= 20) {
        snprintf(itag, sizeof itag, "-mask%s", o->mask_heads);
        for (char *q = itag; *q; q++) if (*q == ',') *q = '+';
    } else if (o->mask_heads)
        snprintf(itag, sizeof itag, "-mask%08lx", (unsigned long)(epar_ckpt_fnv1a(EPAR_CKPT_FNV_INIT, o->mask_heads,
                                                                                    strlen(o->mask_heads)) & 0xffffffffUL));
    if (o->boost > 0) snprintf(itag + strlen(itag), sizeof itag - strlen(itag), "-boost%g%s", o->boost, o->boost_renorm ? "r" : "");
    snprintf(x->folder, sizeof x->folder, "%s-%s%s", x->name, tag, itag);
    return st;
}

void epar_inspect_free(struct epar_inspect *x)
{
    epar_exp_train_free(&x->run);
    free_input(x);
    memset(x, 0, sizeof *x);
}

/* the mean and sample sd of the finite values of v (n) */
static void finite_mean_sd(const double *v, int n, double *mean, double *sd)
{
    double s = 0, q = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) {
            s += v[i];
            k++;
        }
    *mean = k ? s / k : NAN;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) q += (v[i] - *mean) * (v[i] - *mean);
    *sd = k > 1 ? sqrt(q / (k - 1)) : NAN;
}

/* the per-head columns of the summary, and the pair similarities, summed over the items */
static const int head_cols[] = {EPAR_INSPECT_DISTANCE, EPAR_INSPECT_ENTROPY, EPAR_INSPECT_PAT_CURRENT,
                                EPAR_INSPECT_PAT_PREVIOUS, EPAR_INSPECT_PAT_LEFT, EPAR_INSPECT_PAT_FIRST};
#define NHEAD_COLS ((int)(sizeof head_cols / sizeof head_cols[0]))

/* the per-head means (acc: (H, NHEAD_COLS) sums, simsum: (H, H) sums over n items) into out->head */
static int head_means(const struct epar_inspect *x, const double *acc, double *simsum, long n,
                      struct epar_inspect_summary *out)
{
    int H = x->NL * x->NH;
    out->head = EPAR_MALLOC(((size_t)H + 1) * sizeof *out->head);
    if (!out->head) return EPAR_ENOMEM;
    out->n_head = H;
    for (size_t q = 0; q < (size_t)H * H; q++) simsum[q] /= (double)n;
    for (int k = 0; k < H; k++) {
        const double *a = acc + (size_t)k * NHEAD_COLS;
        struct epar_inspect_head *h = &out->head[k];
        *h = (struct epar_inspect_head){.layer = k / x->NH, .head = k % x->NH, .mean_distance = a[0] / n,
                                        .entropy = a[1] / n, .pattern_best = NAN,
                                        .slope = x->stats[(size_t)k * EPAR_INSPECT_NSTATS + EPAR_INSPECT_SLOPE]};
        for (int p = 0; p < EPAR_INSPECT_NPATTERNS; p++) {
            h->pattern[p] = a[2 + p] / n;
            if (isnan(h->pattern_best) || h->pattern[p] > h->pattern_best) h->pattern_best = h->pattern[p];
        }
        epar_inspect_most_similar(simsum, x->NL, x->NH, k, &h->similar_layer, &h->similar_other);
    }
    return EPAR_OK;
}

int epar_inspect_summarise(struct epar_inspect *x, int n_items, struct epar_inspect_summary *out)
{
    long count = epar_task_eval_count(&x->run.task), n = n_items < count ? n_items : count;
    int H = x->NL * x->NH;
    double *v = EPAR_MALLOC((size_t)n * H * 6 * sizeof(double));   /* (6 summaries, n items x H heads) */
    double *acc = EPAR_MALLOC(((size_t)H * NHEAD_COLS + (size_t)H * H) * sizeof(double)), *simsum = acc ? acc + (size_t)H * NHEAD_COLS : NULL;
    out->head = NULL;
    out->n_head = 0;
    if (!v || !acc) {
        free(v);
        free(acc);
        return EPAR_ENOMEM;
    }
    memset(acc, 0, ((size_t)H * NHEAD_COLS + (size_t)H * H) * sizeof(double));
    static const int cols[6] = {EPAR_INSPECT_DIST_SPEARMAN, EPAR_INSPECT_DISTANCE, EPAR_INSPECT_FIRST,
                                EPAR_INSPECT_RELEVANT, EPAR_INSPECT_RELEVANT_UNIFORM, EPAR_INSPECT_PROFILE_SPEARMAN};
    int st = EPAR_OK;
    for (long k = 0; !st && k < n; k++) {
        struct epar_inspect_opts o = {.item = (long)((double)k * count / n)};   /* spread evenly over the set */
        st = epar_inspect_run(x, &o);
        for (int hh = 0; !st && hh < H; hh++)
            for (int c = 0; c < 6; c++) {
                double val = x->stats[(size_t)hh * EPAR_INSPECT_NSTATS + cols[c]];
                if (c == 1) val /= (x->T - 1) / 4.0;   /* mean distance over a uniform causal row's, (T - 1) / 4 */
                v[((size_t)c * n + k) * H + hh] = val;
            }
        for (int hh = 0; !st && hh < H; hh++)
            for (int c = 0; c < NHEAD_COLS; c++) acc[(size_t)hh * NHEAD_COLS + c] += x->stats[(size_t)hh * EPAR_INSPECT_NSTATS + head_cols[c]];
        for (size_t q = 0; !st && q < (size_t)H * H; q++) simsum[q] += x->sim[q];
    }
    if (!st) {
        double m[6], sd[6];
        for (int c = 0; c < 6; c++) finite_mean_sd(v + (size_t)c * n * H, (int)n * H, &m[c], &sd[c]);
        *out = (struct epar_inspect_summary){(int)n, H, x->T, m[0], sd[0], m[1], m[2], m[3], m[4], m[5], NULL, 0};
        st = head_means(x, acc, simsum, n, out);
    }
    free(v);
    free(acc);
    return st;
}

/* ------------------------------------------------------------------------------------------------ */
/* tables                                                                                             */

static void symbol(const struct epar_inspect *x, int id, char *buf, size_t n)
{
    if (id < 0) buf[0] = '\0';
    else epar_task_symbol(&x->run.task, id, buf, n);
}

/* "item 3" or "text" */
static void input_desc(const struct epar_inspect *x, char *buf, size_t n)
{
    if (x->from_text) snprintf(buf, n, "text of %d tokens", x->T);
    else snprintf(buf, n, "evaluation item %ld", x->item);
}

static struct epar_table *attention_table(const struct epar_inspect *x, const int *ls, int nl, const int *hs, int nh)
{
    struct epar_table *t = epar_csv_new("layer,head,query,key,weight");
    int T = x->T;
    for (int a = 0; t && a < nl; a++)
        for (int b = 0; t && b < nh; b++) {
            const float *A = x->att + ((size_t)ls[a] * x->NH + hs[b]) * T * T;
            for (int i = 0; t && i < T; i++)
                for (int j = 0; j <= i; j++)
                    if (epar_csv_append(t, "iiiid", ls[a], hs[b], i, j, (double)A[(size_t)i * T + j])) {
                        epar_csv_free(t);
                        t = NULL;
                        break;
                    }
        }
    return t;
}

static struct epar_table *tokens_table(const struct epar_inspect *x)
{
    struct epar_table *t = epar_csv_new("position,token,symbol,target,target_symbol,scored,prediction,prediction_symbol,"
                                        "correct,p_target,relevant_keys");
    int T = x->T;
    for (int q = 0; t && q < T; q++) {
        char s[64], ts[64], ps[64], rel[512] = "";
        symbol(x, x->tok[q], s, sizeof s);
        symbol(x, x->tgt[q], ts, sizeof ts);
        symbol(x, x->pred[q], ps, sizeof ps);
        size_t used = 0;
        for (int j = 0; j <= q && used + 12 < sizeof rel; j++)
            if (x->rel[(size_t)q * T + j]) used += (size_t)snprintf(rel + used, sizeof rel - used, "%s%d", used ? " " : "", j);
        /* correct: the argmax is the target, at the scored positions only (empty elsewhere) */
        int bad = x->tgt[q] < 0 ? epar_csv_append(t, "iis--iis-ds", q, x->tok[q], s, x->mask[q] > 0, x->pred[q], ps,
                                                  x->p_target[q], rel)
                  : x->mask[q] > 0 ? epar_csv_append(t, "iisisiisids", q, x->tok[q], s, x->tgt[q], ts, 1, x->pred[q], ps,
                                                     x->pred[q] == x->tgt[q], x->p_target[q], rel)
                                   : epar_csv_append(t, "iisisiis-ds", q, x->tok[q], s, x->tgt[q], ts, 0, x->pred[q], ps,
                                                     x->p_target[q], rel);
        if (bad) {
            epar_csv_free(t);
            t = NULL;
        }
    }
    return t;
}

static struct epar_table *heads_table(const struct epar_inspect *x, const int *ls, int nl, const int *hs, int nh)
{
    struct epar_table *t = epar_csv_new("layer,head,mean_distance,entropy,entropy_uniform,previous_share,first_share,"
                                        "relevant_share,relevant_uniform,relevant_queries,distance_spearman,alpha,beta,"
                                        "gamma,profile_pearson,profile_spearman,pos_star,importance_argmax,consistency,"
                                        "ranking,pattern_current,pattern_previous,pattern_left,pattern_first,"
                                        "pattern_best,similar_layer,similar_other,slope");
    for (int a = 0; t && a < nl; a++)
        for (int b = 0; t && b < nh; b++) {
            const double *s = x->stats + ((size_t)ls[a] * x->NH + hs[b]) * EPAR_INSPECT_NSTATS;
            if (epar_csv_append(t, "iidddddddiddddddiidddddddddd", ls[a], hs[b], s[EPAR_INSPECT_DISTANCE],
                                s[EPAR_INSPECT_ENTROPY], s[EPAR_INSPECT_ENTROPY_UNIFORM], s[EPAR_INSPECT_PREVIOUS],
                                s[EPAR_INSPECT_FIRST], s[EPAR_INSPECT_RELEVANT], s[EPAR_INSPECT_RELEVANT_UNIFORM],
                                x->rel_rows, s[EPAR_INSPECT_DIST_SPEARMAN], s[EPAR_INSPECT_ALPHA], s[EPAR_INSPECT_BETA],
                                s[EPAR_INSPECT_GAMMA], s[EPAR_INSPECT_PROFILE_PEARSON], s[EPAR_INSPECT_PROFILE_SPEARMAN],
                                (int)s[EPAR_INSPECT_POS_STAR], (int)s[EPAR_INSPECT_POS_ACTUAL],
                                s[EPAR_INSPECT_CONSISTENCY], s[EPAR_INSPECT_RANKING], s[EPAR_INSPECT_PAT_CURRENT],
                                s[EPAR_INSPECT_PAT_PREVIOUS], s[EPAR_INSPECT_PAT_LEFT], s[EPAR_INSPECT_PAT_FIRST],
                                s[EPAR_INSPECT_PAT_BEST], s[EPAR_INSPECT_SIM_LAYER], s[EPAR_INSPECT_SIM_OTHER],
                                s[EPAR_INSPECT_SLOPE])) {
                epar_csv_free(t);
                t = NULL;
            }
        }
    return t;
}

static struct epar_table *profile_table(const struct epar_inspect *x, const int *ls, int nl, const int *hs, int nh)
{
    struct epar_table *t = epar_csv_new("layer,head,distance,attention_mass,uniform_mass,queries,p_effect");
    int T = x->T;
    double *u = EPAR_MALLOC((size_t)T * sizeof *u);
    if (!u) {
        epar_csv_free(t);
        return NULL;
    }
    epar_inspect_uniform_mass(T, u);
    for (int a = 0; t && a < nl; a++)
        for (int b = 0; t && b < nh; b++) {
            size_t k = (size_t)ls[a] * x->NH + hs[b];
            for (int d = 0; t && d < T; d++)
                if (epar_csv_append(t, "iiiddid", ls[a], hs[b], d, x->mass[k * T + d], u[d], T - d, x->peff[k * T + d])) {
                    epar_csv_free(t);
                    t = NULL;
                }
        }
    free(u);
    return t;
}

/* ------------------------------------------------------------------------------------------------ */
/* figures                                                                                            */

/* a token symbol as a gnuplot single-quoted string body ('' for a quote) */
static void sb_gp_quoted(struct epar_plot_text *b, const char *s)
{
    for (; *s; s++) epar_plot_add(b, *s == '\'' ? "''" : "%c", *s);
}

/* tic labels: every k-th position (k so that at most about `most` labels show), "'sym' pos, ..." */
static void sb_tics(struct epar_plot_text *b, const struct epar_inspect *x, int most)
{
    int T = x->T, k = (T + most - 1) / most;
    for (int q = 0; q < T; q += k) {
        char s[64];
        symbol(x, x->tok[q], s, sizeof s);
        epar_plot_add(b, "%s'", q ? ", " : "");
        sb_gp_quoted(b, s);
        epar_plot_add(b, "' %d", q);
    }
}

/* the axes of one heatmap panel of the input's tokens, at most `most` labels on each */
static void sb_panel_axes(struct epar_plot_text *b, const struct epar_inspect *x, int most, int font)
{
    int T = x->T;
    epar_plot_add(b, "set xrange [-0.5:%d.5]\nset yrange [%d.5:-0.5]\nset xtics (", T - 1, T - 1);
    sb_tics(b, x, most);
    epar_plot_add(b, ") noenhanced rotate by 90 right font ',%d'\nset ytics (", font);
    sb_tics(b, x, most);
    epar_plot_add(b, ") noenhanced font ',%d'\n", font);
}

/* one figure per layer: a heatmap per head (key position across, query position down), token labels */
static int heatmap_layer(const struct epar_inspect *x, int l, const int *hs, int nh, struct epar_out *o)
{
    int cols = 1;
    while (cols * cols < nh) cols++;   /* a square-ish grid: 4 heads 2 x 2 */
    int rows = (nh + cols - 1) / cols;
    char name[64], title[256];
    snprintf(name, sizeof name, "attention_layer%d", l);
    char in[64];
    input_desc(x, in, sizeof in);
    snprintf(title, sizeof title, "Attention of layer %d per head: %s, %s", l, x->name, in);
    struct epar_plot_text b = {0};
    epar_plot_add(&b, "set terminal @epar_term size %d,%d\n", 40 + 560 * cols, 50 + 540 * rows);
    epar_plot_add(&b, "set multiplot layout %d,%d title '%s, %s: layer %d (query position down, key position across)' "
                  "noenhanced\n", rows, cols, x->name, in, l);
    epar_plot_add(&b, "unset key\nunset grid\nset size ratio -1\nset tics out\n"
                  "set xlabel 'key' font ',9'\nset ylabel 'query' font ',9'\n");
    sb_panel_axes(&b, x, 32, 8);
    for (int k = 0; k < nh; k++) {
        /* the colour scale tops at the largest weight of rows 1.. (row 0 is always the single weight 1) */
        const float *A = x->att + ((size_t)l * x->NH + hs[k]) * x->T * x->T;
        double top = 0;
        for (int i = 1; i < x->T; i++)
            for (int j = 0; j <= i; j++) top = fmax(top, A[(size_t)i * x->T + j]);
        epar_plot_add(&b, "set title 'head %d (colour scale to %.2g)'\nset cbrange [0:%.3g]\n", hs[k], top, top > 0 ? top : 1.0);
        epar_plot_add(&b, EPAR_PLOT_IF("'attention.csv', '($1==%d && $2==%d ? $4 : NaN):5'")
                      "plot 'attention.csv' skip 1 using ($1==%d && $2==%d ? $4 : 1/0):3:(0.52):(0.52):5 "
                      "with boxxyerror fs solid noborder fc palette notitle" EPAR_PLOT_END, l, hs[k], l, hs[k]);
    }
    epar_plot_add(&b, "unset multiplot\n");
    return epar_plot_script_text(o, name, title, &b);
}

/* attention mass by distance per head, beside the EPAR factor P(d) on the right axis */
static int profile_figure(const struct epar_inspect *x, const int *ls, int nl, const int *hs, int nh, struct epar_out *o)
{
    int epar = is_epar(x->run.cfg.mechanism), learned = x->run.cfg.pos.learn_posfx;
    struct epar_plot_text b = {0};
    epar_plot_add(&b, "set terminal @epar_term size %d,480\nset multiplot layout 1,%d title '%s: attention by distance' "
                  "noenhanced\nset xlabel 'distance i - j'\nset ylabel 'mean attention weight at that distance'\n"
                  "set key bmargin center horizontal\nset bmargin 7\nset xrange [0:%d]\n", 80 + 520 * nl, nl, x->name, x->T - 1);
    if (epar) epar_plot_add(&b, "set y2label 'P(d): the EPAR factor of the score'\nset y2tics\nset ytics nomirror\n");
    for (int a = 0; a < nl; a++) {
        epar_plot_add(&b, "set title 'layer %d'\n" EPAR_PLOT_IF("'profile.csv', '($1==%d ? $3 : NaN):4'") "plot", ls[a], ls[a]);
        for (int k = 0; k < nh; k++)
            epar_plot_add(&b, "%s 'profile.csv' skip 1 using ($1==%d && $2==%d ? $3 : 1/0):4 with lines lt %d title 'head %d'",
                      k ? ", \\\n    " : " ", ls[a], hs[k], 1 + k % 8, hs[k]);
        epar_plot_add(&b, ", \\\n    'profile.csv' skip 1 using ($1==%d && $2==%d ? $3 : 1/0):5 with lines dt 3 lc rgb '#000000' "
                      "title 'uniform causal rows'", ls[a], hs[0]);
        for (int k = 0; epar && k < (learned ? nh : 1); k++) {   /* P(d) differs by head only when it is learned */
            char what[32] = " (every head)";
            if (learned) snprintf(what, sizeof what, ", head %d", hs[k]);
            epar_plot_add(&b, ", \\\n    'profile.csv' skip 1 using ($1==%d && $2==%d ? $3 : 1/0):7 axes x1y2 with lines "
                          "dt 2 lt %d title 'P(d)%s'", ls[a], hs[k], learned ? 1 + k % 8 : 8, what);
        }
        epar_plot_add(&b, EPAR_PLOT_END);
    }
    epar_plot_add(&b, "unset multiplot\n");
    return epar_plot_script_text(o, "profile", "Attention mass by distance per head, beside P(d)", &b);
}

/* ------------------------------------------------------------------------------------------------ */
/* the head view: one self-contained page (no network), tokens in two columns, lines weighted by attention  */

/* a JSON string (with "<" escaped, so no text can close the script element) */
static void script_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&') fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

/* html text */
static void html_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

static const char head_view_css[] =
    "<style>\n"
    "*{box-sizing:border-box}\n"
    "body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#222;margin:0 auto;max-width:1100px;padding:12px}\n"
    "h1{font-size:1.3em;margin:.2em 0;overflow-wrap:anywhere}\n"
    "h2{font-size:1.05em;margin:.8em 0 .2em}\n"
    "p{margin:.4em 0}\n"
    ".controls{display:flex;flex-wrap:wrap;gap:.5em 1.2em;align-items:center;margin:.6em 0;position:sticky;top:0;background:#fff;padding:.4em 0;border-bottom:1px solid #ddd;z-index:1}\n"
    "select{font-size:1em}\n"
    "#legend{display:flex;flex-wrap:wrap;gap:.3em 1em;align-items:center;font-size:.8em;color:#555}\n"
    "#legend svg{display:inline-block;width:auto;vertical-align:middle}\n"
    /* a fixed height: text that wraps onto more lines while hovering must not move the tokens under the pointer */
    "#info{flex:1 1 100%;height:4.4em;overflow-y:auto;margin:0;font-size:.9em;color:#333;overflow-wrap:anywhere}\n"
    ".model{display:grid;gap:4px;align-items:center;justify-content:start;overflow-x:auto;max-width:100%;padding-bottom:4px}\n"
    ".model .lab{font-size:.75em;color:#666;white-space:nowrap}\n"
    ".thumb{padding:0;border:1px solid #ccc;background:#fff;border-radius:3px;cursor:pointer;line-height:0}\n"
    ".thumb:hover,.thumb:focus-visible{border-color:#1f77b4}\n"
    ".thumb.sel{outline:3px solid #d62728;outline-offset:-1px;border-color:#d62728}\n"
    ".view{display:grid;grid-template-columns:minmax(0,6.5em) minmax(0,9em) minmax(0,1fr) minmax(0,9em);align-items:start}\n"
    ".hdr{font-size:.75em;color:#666;padding:0 4px 2px}\n"
    ".hdr.q,.hdr.p{text-align:right}\n"
    ".col{min-width:0}\n"
    ".tok,.pr{height:20px;line-height:20px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;font:13px ui-monospace,Menlo,Consolas,monospace;padding:0 4px;border-radius:3px}\n"
    ".tok{cursor:pointer}\n"
    ".pr{text-align:right}\n"
    ".pr.right{color:#1a7f37}\n"
    ".pr.wrong{color:#c62828}\n"
    ".tok .pos{color:#999;font-size:11px}\n"
    ".left .tok{text-align:right}\n"
    ".tok:hover,.tok:focus-visible,.tok.sel{outline:2px solid #1f77b4;outline-offset:-2px}\n"
    ".tok.scored{font-weight:bold}\n"
    ".tok.rel{text-decoration:underline;text-decoration-color:#d62728;text-decoration-thickness:2px}\n"
    "#lines{display:block;width:100%}\n"
    "line{stroke:#1f77b4}\n"
    ".legend{font-size:.85em;color:#555}\n"
    "@media (max-width:600px){.view{grid-template-columns:minmax(0,4.5em) minmax(0,6.5em) minmax(0,1fr) minmax(0,6.5em)}.tok .pos{display:none}body{padding:8px}}\n"
    "</style>\n";

static const char head_view_js[] =
    "<script>\n"
    "(function(){\n"
    "var D=JSON.parse(document.getElementById('data').textContent);\n"
    "var T=D.tokens.length,RH=20,NS='http://www.w3.org/2000/svg',MIN=0.02;\n"
    "var ls=document.getElementById('layer'),hs=document.getElementById('head'),svg=document.getElementById('lines');\n"
    "var left=document.getElementById('left'),right=document.getElementById('right'),info=document.getElementById('info');\n"
    "var predc=document.getElementById('pred'),model=document.getElementById('model'),legend=document.getElementById('legend');\n"
    "var sel=-1,side='',pinned=false;\n"
    /* one encoding of a weight, for the lines, the thumbnails and the legend */
    "function width(w){return 0.5+4*w;}\n"
    "function opacity(w){return Math.min(1,0.08+w);}\n"
    "function shading(w){return 'rgba(255,127,14,'+Math.min(1,w).toFixed(3)+')';}\n"
    "D.layers.forEach(function(l,a){var o=document.createElement('option');o.value=a;o.textContent='layer '+l;ls.appendChild(o);});\n"
    "D.heads.forEach(function(h,b){var o=document.createElement('option');o.value=b;o.textContent='head '+h;hs.appendChild(o);});\n"
    "if(D.heads.length>1){var m=document.createElement('option');m.value='mean';m.textContent='mean of the heads';hs.appendChild(m);}\n"
    "svg.setAttribute('viewBox','0 0 100 '+(T*RH));svg.setAttribute('preserveAspectRatio','none');svg.style.height=(T*RH)+'px';\n"
    "function el(tag,cls,text){var d=document.createElement(tag);if(cls)d.className=cls;if(text!==undefined)d.textContent=text;return d;}\n"
    "function tok(i,cls){var d=el('div','tok'+(D.scored[i]?' scored':''));d.tabIndex=0;\n"
    " d.dataset.i=i;d.dataset.side=cls;d.appendChild(el('span','pos',i+' '));\n"
    " d.appendChild(document.createTextNode(D.tokens[i]));d.title='position '+i+': '+D.tokens[i];return d;}\n"
    "function verdict(i){return D.correct[i]===1?'right':'wrong';}\n"
    "function pred(i){var d=el('div','pr');if(D.correct[i]<0)return d;\n"
    " d.classList.add(verdict(i));d.dataset.correct=D.correct[i];d.dataset.pred=D.pred[i];\n"
    " d.textContent=D.pred[i]+(D.correct[i]===1?' \\u2713':' \\u2717');\n"
    " d.title='position '+i+' predicts '+D.pred[i]+' ('+verdict(i)+'; the target is '+D.target[i]+', given p = '+fmt(D.p_target[i])+')';return d;}\n"
    "function fmt(w){return w===null?'nan':w.toFixed(3);}\n"
    "for(var i=0;i<T;i++){left.appendChild(tok(i,'q'));right.appendChild(tok(i,'k'));predc.appendChild(pred(i));}\n"
    "function rowsOf(a,b){if(b!=='mean')return D.att[a][+b];\n"
    " var n=D.heads.length,r=[];for(var i=0;i<T;i++){r.push([]);for(var j=0;j<=i;j++){var s=0;\n"
    " for(var h=0;h<n;h++)s+=D.att[a][h][i][j];r[i].push(s/n);}}return r;}\n"
    "function rows(){return rowsOf(+ls.value,hs.value);}\n"
    "function draw(){var R=rows();while(svg.firstChild)svg.removeChild(svg.firstChild);var n=0;\n"
    " for(var i=0;i<T;i++)for(var j=0;j<=i;j++){var w=R[i][j];\n"
    "  if(sel>=0&&((side==='q'&&i!==sel)||(side==='k'&&j!==sel)))continue;if(sel<0&&w<MIN)continue;\n"
    "  var e=document.createElementNS(NS,'line');e.setAttribute('x1',0);e.setAttribute('y1',i*RH+RH/2);\n"
    "  e.setAttribute('x2',100);e.setAttribute('y2',j*RH+RH/2);e.setAttribute('stroke-opacity',opacity(w).toFixed(3));\n"
    "  e.setAttribute('stroke-width',width(w).toFixed(2));e.setAttribute('vector-effect','non-scaling-stroke');\n"
    "  svg.appendChild(e);n++;}\n"
    " svg.dataset.lines=n;svg.dataset.view=ls.value+':'+hs.value+':'+side+sel;shade(R);describe(R);mark();}\n"
    "function shade(R){var L=left.children,K=right.children;\n"
    " for(var i=0;i<T;i++){L[i].style.background='';K[i].style.background='';L[i].classList.toggle('sel',side==='q'&&i===sel);\n"
    "  K[i].classList.toggle('sel',side==='k'&&i===sel);K[i].classList.toggle('rel',side==='q'&&sel>=0&&D.relevant[sel].indexOf(i)>=0);}\n"
    " if(sel<0)return;for(var k=0;k<T;k++){var w=side==='q'?(k<=sel?R[sel][k]:0):(k>=sel?R[k][sel]:0);\n"
    "  (side==='q'?K:L)[k].style.background=shading(w);}}\n"
    "function describe(R){var where=ls.options[ls.selectedIndex].text+', '+hs.options[hs.selectedIndex].text;\n"
    " if(sel<0){info.textContent=where+': every query row, lines for weights of '+MIN+' and more. Hover or click a token.';return;}\n"
    " var items=[];if(side==='q'){for(var j=0;j<=sel;j++)items.push([R[sel][j],j]);}else{for(var i=sel;i<T;i++)items.push([R[i][sel],i]);}\n"
    " items.sort(function(a,b){return b[0]-a[0];});var top=items.slice(0,5).map(function(p){return p[1]+' '+D.tokens[p[1]]+' ('+fmt(p[0])+')';});\n"
    " info.textContent=where+(pinned?' (pinned)':'')+': '+(side==='q'?'query '+sel+' '+D.tokens[sel]+' attends to ':'key '+sel+' '+D.tokens[sel]+' is attended by ')+top.join(', ')\n"
    "  +(side==='q'&&D.relevant[sel].length?'; answer-relevant: '+D.relevant[sel].join(' '):'')\n"
    "  +(side==='q'&&D.correct[sel]>=0?'; predicts '+D.pred[sel]+', the target is '+D.target[sel]+' ('+verdict(sel)+')':'');}\n"
    "function pick(e,click){var t=e.target.closest('.tok');if(!t)return;if(pinned&&!click)return;\n"
    " var i=+t.dataset.i,s=t.dataset.side;if(click){if(pinned&&i===sel&&s===side){pinned=false;sel=-1;side='';}else{pinned=true;sel=i;side=s;}}\n"
    " else{sel=i;side=s;}draw();}\n"
    "function leave(){if(!pinned&&sel>=0){sel=-1;side='';draw();}}\n"
    "[left,right].forEach(function(c){c.addEventListener('mouseover',function(e){pick(e,false);});c.addEventListener('mouseleave',leave);\n"
    " c.addEventListener('click',function(e){pick(e,true);});c.addEventListener('focusin',function(e){pick(e,false);});\n"
    " c.addEventListener('keydown',function(e){if(e.key==='Enter'||e.key===' '){e.preventDefault();pick(e,true);}});});\n"
    "ls.addEventListener('change',draw);hs.addEventListener('change',draw);\n"
    /* the legend: sample lines and the shading scale, drawn with the functions above */
    "(function(){var ws=[MIN,0.1,0.25,0.5,1],W=46,H=30,s=document.createElementNS(NS,'svg');\n"
    " s.setAttribute('width',W*ws.length);s.setAttribute('height',H);s.setAttribute('role','img');\n"
    " s.setAttribute('aria-label','line width and opacity for the weights '+ws.join(', '));s.id='legend-lines';\n"
    " ws.forEach(function(w,k){var e=document.createElementNS(NS,'line');e.setAttribute('x1',k*W+6);e.setAttribute('x2',k*W+W-6);\n"
    "  e.setAttribute('y1',9);e.setAttribute('y2',9);e.setAttribute('stroke-width',width(w).toFixed(2));\n"
    "  e.setAttribute('stroke-opacity',opacity(w).toFixed(3));e.dataset.weight=w;s.appendChild(e);\n"
    "  var t=document.createElementNS(NS,'text');t.setAttribute('x',k*W+W/2);t.setAttribute('y',27);t.setAttribute('text-anchor','middle');\n"
    "  t.setAttribute('font-size','11');t.setAttribute('fill','#555');t.textContent=String(w);s.appendChild(t);});\n"
    " var g=el('span');g.id='legend-shading';g.style.cssText='display:inline-block;width:90px;height:12px;vertical-align:middle;border:1px solid #ccc;background:linear-gradient(to right,'+shading(0)+','+shading(1)+')';\n"
    " legend.appendChild(el('span','','line: weight'));legend.appendChild(s);\n"
    " var sh=el('span','','shading of the other side: 0 ');sh.appendChild(g);sh.appendChild(document.createTextNode(' 1'));legend.appendChild(sh);})();\n"
    /* the model view: every layer (row) and head (column), the same lines on a canvas; a click shows it above */
    "var thumbs=[];\n"
    "(function(){var nh=D.heads.length,avail=(model.clientWidth||640)-70,dpr=window.devicePixelRatio||1;\n"
    " var S=Math.max(40,Math.min(96,Math.floor(avail/nh)-6));\n"   /* the heads of a layer fit the width when they can */
    " model.style.gridTemplateColumns='auto repeat('+nh+','+(S+2)+'px)';model.appendChild(el('span','lab',''));\n"
    " D.heads.forEach(function(h){model.appendChild(el('span','lab','head '+h));});\n"
    " D.layers.forEach(function(l,a){model.appendChild(el('span','lab','layer '+l));\n"
    "  D.heads.forEach(function(h,b){var btn=el('button','thumb');btn.type='button';btn.dataset.layer=a;btn.dataset.head=b;\n"
    "   btn.title='layer '+l+', head '+h;btn.setAttribute('aria-label','show layer '+l+', head '+h);\n"
    "   var c=el('canvas');c.width=S*dpr;c.height=S*dpr;c.style.width=S+'px';c.style.height=S+'px';btn.appendChild(c);\n"
    "   var x=c.getContext('2d'),R=D.att[a][b],y=function(i){return (i+0.5)/T*S*dpr;};x.strokeStyle='#1f77b4';\n"
    "   for(var i=0;i<T;i++)for(var j=0;j<=i;j++){var w=R[i][j];if(w<MIN)continue;x.globalAlpha=opacity(w);\n"
    "    x.lineWidth=Math.max(0.4,width(w)*S/(T*RH)*2)*dpr;x.beginPath();x.moveTo(0,y(i));x.lineTo(S*dpr,y(j));x.stroke();}\n"
    "   btn.addEventListener('click',function(){ls.value=a;hs.value=b;draw();});model.appendChild(btn);thumbs.push(btn);});});})();\n"
    "function mark(){thumbs.forEach(function(t){t.classList.toggle('sel',t.dataset.layer===ls.value&&t.dataset.head===hs.value);});}\n"
    "draw();\n"
    "})();\n"
    "</script>\n";

/* the symbols of ids (n) as a JSON array's items, comma-separated */
static void symbols_json(FILE *f, const struct epar_inspect *x, const int *ids, int n)
{
    for (int q = 0; q < n; q++) {
        char s[64];
        symbol(x, ids[q], s, sizeof s);
        if (q) fputc(',', f);
        script_json_str(f, s);
    }
}

/* the data the page draws: tokens, selected layers and heads, their causal rows, scored and relevant positions */
static void head_view_data(FILE *f, const struct epar_inspect *x, const int *ls, int nl, const int *hs, int nh)
{
    int T = x->T;
    fputs("<script type=\"application/json\" id=\"data\">{\"tokens\":[", f);
    symbols_json(f, x, x->tok, T);
    fputs("],\"scored\":[", f);
    for (int q = 0; q < T; q++) fprintf(f, "%s%d", q ? "," : "", x->mask[q] > 0);
    /* the model's argmax at each position, the target, and at the scored positions whether they agree (-1: not
     * scored), as tokens.csv has them */
    fputs("],\"pred\":[", f);
    symbols_json(f, x, x->pred, T);
    fputs("],\"target\":[", f);
    symbols_json(f, x, x->tgt, T);
    fputs("],\"correct\":[", f);
    for (int q = 0; q < T; q++)
        fprintf(f, "%s%d", q ? "," : "", x->mask[q] > 0 && x->tgt[q] >= 0 ? x->pred[q] == x->tgt[q] : -1);
    fputs("],\"p_target\":[", f);
    for (int q = 0; q < T; q++) {
        if (q) fputc(',', f);
        if (isfinite(x->p_target[q])) fprintf(f, "%.4g", (double)x->p_target[q]);
        else fputs("null", f);
    }
    fputs("],\"relevant\":[", f);
    for (int q = 0; q < T; q++) {
        fputs(q ? ",[" : "[", f);
        for (int j = 0, n = 0; j <= q; j++)
            if (x->rel[(size_t)q * T + j]) fprintf(f, "%s%d", n++ ? "," : "", j);
        fputc(']', f);
    }
    fputs("],\"layers\":[", f);
    for (int a = 0; a < nl; a++) fprintf(f, "%s%d", a ? "," : "", ls[a]);
    fputs("],\"heads\":[", f);
    for (int b = 0; b < nh; b++) fprintf(f, "%s%d", b ? "," : "", hs[b]);
    fputs("],\"att\":[", f);
    for (int a = 0; a < nl; a++) {
        fputs(a ? ",[" : "[", f);
        for (int b = 0; b < nh; b++) {
            const float *A = x->att + ((size_t)ls[a] * x->NH + hs[b]) * T * T;
            fputs(b ? ",[" : "[", f);
            for (int i = 0; i < T; i++) {
                fputs(i ? ",[" : "[", f);
                for (int j = 0; j <= i; j++) fprintf(f, "%s%.4g", j ? "," : "", (double)A[(size_t)i * T + j]);
                fputc(']', f);
            }
            fputc(']', f);
        }
        fputc(']', f);
    }
    fputs("]}</script>\n", f);
}

static int head_view(const struct epar_inspect *x, const int *ls, int nl, const int *hs, int nh, struct epar_out *o)
{
    struct epar_out_file w;
    FILE *f = epar_out_fopen(&w, epar_out_path(o, "head_view.html"));
    if (!f) return EPAR_EIO;
    char in[64];
    input_desc(x, in, sizeof in);
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>Head view: ", f);
    html_text(f, x->name);
    fputs("</title>\n", f);
    fputs(head_view_css, f);
    fputs("</head><body>\n<h1>Head view: ", f);
    html_text(f, x->name);
    fprintf(f, "</h1>\n<p>%s of task <code>%s</code>, %d tokens; model after %ld training steps, checkpoint <code>",
            in, epar_task_name(x->run.cfg.task.id), x->T, x->run.step);
    html_text(f, x->path);
    int scored = 0, right = 0;
    for (int q = 0; q < x->T; q++)
        if (x->mask[q] > 0 && x->tgt[q] >= 0) {
            scored++;
            right += x->pred[q] == x->tgt[q];
        }
    fprintf(f, "</code>. The model's prediction (its most probable next token) is right at %d of the %d scored positions.</p>\n",
            right, scored);
    fputs("<p class=\"legend\">Query positions on the left, key positions on the right. A line joins query i to "
          "key j &le; i, as thick and opaque as the weight i gives j (the scale is in the bar below). Hover over a token "
          "for its row (a query) or column (a key); click to pin it. Bold tokens are scored: beside them the model's "
          "prediction, &#x2713; when it is the target, &#x2717; when not. Underlined keys are the ones the answer needs. "
          "The model view below the bar has every layer and head; click one to show it here. Written by "
          "<code>epar inspect</code> (epar " EPAR_VERSION "); the numbers are in <code>attention.csv</code> and "
          "<code>tokens.csv</code>.</p>\n"
          "<div class=\"controls\"><label>Layer <select id=\"layer\"></select></label>"
          "<label>Head <select id=\"head\"></select></label><div id=\"legend\"></div>"
          "<p id=\"info\" aria-live=\"polite\"></p></div>\n"
          "<h2>Model view: every layer and head</h2>\n<div class=\"model\" id=\"model\"></div>\n"
          "<h2>Head view</h2>\n"
          "<div class=\"view\"><div class=\"hdr p\">prediction</div><div class=\"hdr q\">query</div><div></div>"
          "<div class=\"hdr k\">key</div><div class=\"col preds\" id=\"pred\"></div>"
          "<div class=\"col left\" id=\"left\"></div><svg id=\"lines\" role=\"img\" "
          "aria-label=\"attention lines\"></svg><div class=\"col right\" id=\"right\"></div></div>\n", f);
    head_view_data(f, x, ls, nl, hs, nh);
    fputs(head_view_js, f);
    fputs("</body></html>\n", f);
    return epar_out_fclose(&w);
}

/* ------------------------------------------------------------------------------------------------ */
/* the folder                                                                                         */

/* inspect.json: what was read and written, then the checkpoint's config */
static int write_json(const struct epar_inspect *x, const struct epar_inspect_opts *op, const int *ls, int nl, const int *hs,
                      int nh, struct epar_out *o)
{
    const struct epar_train_cfg *c = &x->run.cfg;
    json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:i, s:o, s:o, s:i, s:i, s:i, s:s, s:I, s:s*, s:o}",
                          "experiment", "inspect", "epar_version", EPAR_VERSION, "checkpoint", x->path, "folder", x->folder,
                          "task", epar_task_name(c->task.id), "mechanism", epar_nnpos_name(c->mechanism), "seed",
                          (json_int_t)c->seed, "steps_done", (json_int_t)x->run.step, "length", x->T, "layers_written",
                          epar_fields_array(EPAR_FIELD_ILIST, ls, nl), "heads_written",
                          epar_fields_array(EPAR_FIELD_ILIST, hs, nh), "model_layers", x->NL, "model_heads", x->NH,
                          "relevant_queries", x->rel_rows, "attention",
                          "lib/nn epar_nn_forward (the training forward pass), batch 1: m->a.att",
                          x->from_text ? "text" : "item", (json_int_t)(x->from_text ? x->T : x->item),
                          "benchmark_task", x->run.label[0] ? x->run.label : NULL, "config", epar_exp_train_cfg_json(c));
    if (j && x->interventions)   /* the weights written are the intervened ones (intervention.csv: the evaluation) */
        json_object_set_new(j, "interventions",
                            json_pack("{s:s*, s:f, s:i, s:s*}", "heads_masked", op->mask_heads, "boost",
                                      op->boost > 0 ? op->boost : 1.0, "boost_layer", op->boost > 0 ? x->NL - 1 : -1,
                                      "boost_mode", op->boost > 0 ? (op->boost_renorm ? "renormalised" : "as-written") : NULL));
    if (!j) return epar_err_set(EPAR_ENOMEM, "out of memory building inspect.json");
    return epar_fields_save(epar_out_path(o, "inspect.json"), NULL, NULL, j, EPAR_SAVE_RUN);
}

/* intervention.csv: the evaluation on the same items without and with the interventions of the options */
static int intervention_table(const struct epar_inspect *x, const struct epar_inspect_opts *o, struct epar_out *out)
{
    struct epar_table *t = epar_csv_new("heads_masked,boost,boost_layer,boost_mode,items,metric,base,intervened,delta,"
                                        "loss_base,loss_intervened,loss_delta");
    const struct epar_train_eval *b = &x->interv_base, *e = &x->interv_eval;
    int st = t ? EPAR_OK : epar_err_set(EPAR_ENOMEM, "out of memory");
    if (!st && epar_csv_append(t, "sdisisdddddd", o->mask_heads ? o->mask_heads : "", o->boost > 0 ? o->boost : 1.0,
                               o->boost > 0 ? x->NL - 1 : -1,
                               o->boost > 0 ? (o->boost_renorm ? "renormalised" : "as-written") : "",
                               (int)b->sequences, x->run.task.info->metric, b->metric, e->metric, e->metric - b->metric,
                               b->loss, e->loss, e->loss - b->loss))
        st = epar_err_set(EPAR_ENOMEM, "out of memory building intervention.csv");
    if (!st) st = epar_exp_write_table(out, "intervention.csv", t);
    epar_csv_free(t);
    return st;
}

int epar_inspect_write(const struct epar_inspect *x, const struct epar_inspect_opts *o, struct epar_out *out)
{
    int ls[1024], hs[1024];
    if (x->NL > 1024 || x->NH > 1024) return epar_err_set(EPAR_EINVAL, "more than 1024 layers or heads");
    int nl = selection(o->layers, o->n_layers, x->NL, ls), nh = selection(o->heads, o->n_heads, x->NH, hs);
    struct epar_table *att = attention_table(x, ls, nl, hs, nh), *tok = tokens_table(x);
    struct epar_table *heads = heads_table(x, ls, nl, hs, nh), *prof = profile_table(x, ls, nl, hs, nh);
    int st = !att || !tok || !heads || !prof ? epar_err_set(EPAR_ENOMEM, "out of memory building the tables") : EPAR_OK;
    struct epar_exp_file files[] = {{"attention.csv", att}, {"tokens.csv", tok}, {"heads.csv", heads},
                                    {"profile.csv", prof}};
    if (!st) st = epar_exp_write_tables(out, files, sizeof files / sizeof files[0]);
    for (int a = 0; !st && a < nl; a++) st = heatmap_layer(x, ls[a], hs, nh, out);
    if (!st) st = profile_figure(x, ls, nl, hs, nh, out);
    if (!st) st = head_view(x, ls, nl, hs, nh, out);
    if (!st) st = write_json(x, o, ls, nl, hs, nh, out);
    if (!st && x->interventions) st = intervention_table(x, o, out);
    epar_csv_free(att);
    epar_csv_free(tok);
    epar_csv_free(heads);
    epar_csv_free(prof);
    return st;
}

/* ---- several checkpoints side by side ---- */

static struct epar_table *comparison_table(const struct epar_inspect *xs, int n, const struct epar_inspect_opts *o)
{
    struct epar_table *t = epar_csv_new("checkpoint,folder,layer,query,key,weight");
    int ls[1024], hs[1024];
    for (int c = 0; t && c < n; c++) {
        const struct epar_inspect *x = &xs[c];
        int T = x->T, nl = selection(o->layers, o->n_layers, x->NL, ls), nh = selection(o->heads, o->n_heads, x->NH, hs);
        for (int a = 0; t && a < nl; a++)
            for (int i = 0; t && i < T; i++)
                for (int j = 0; t && j <= i; j++) {
                    double w = 0;
                    for (int b = 0; b < nh; b++) w += x->att[(((size_t)ls[a] * x->NH + hs[b]) * T + i) * T + j];
                    if (epar_csv_append(t, "isiiid", c, x->folder, ls[a], i, j, w / nh)) {
                        epar_csv_free(t);
                        t = NULL;
                    }
                }
    }
    return t;
}

/* the largest head-mean weight of rows 1.. of layer l (row 0 is always the single weight 1) */
static double mean_row_top(const struct epar_inspect *x, int l, const struct epar_inspect_opts *o)
{
    int hs[1024], T = x->T, nh = selection(o->heads, o->n_heads, x->NH, hs);
    double top = 0;
    for (int i = 1; i < T; i++)
        for (int j = 0; j <= i; j++) {
            double w = 0;
            for (int b = 0; b < nh; b++) w += x->att[(((size_t)l * x->NH + hs[b]) * T + i) * T + j];
            top = fmax(top, w / nh);
        }
    return top;
}

int epar_inspect_write_comparison(const struct epar_inspect *xs, int n, const struct epar_inspect_opts *o,
                                  struct epar_out *out)
{
    int rows = 0, ls[1024];
    for (int c = 0; c < n; c++) {
        if (xs[c].NL > 1024) return epar_err_set(EPAR_EINVAL, "more than 1024 layers");
        int nl = selection(o->layers, o->n_layers, xs[c].NL, ls);
        if (nl > rows) rows = nl;
    }
    struct epar_table *t = comparison_table(xs, n, o);
    int st = t ? epar_exp_write_table(out, "comparison.csv", t) : epar_err_set(EPAR_ENOMEM, "out of memory building comparison.csv");
    epar_csv_free(t);
    if (st) return st;
    /* small multiples: for each layer, the checkpoints side by side, at most 4 to a row (8 checkpoints of one layer:
     * 2 rows of 4 panels, not one row 4500 pixels wide) */
    int bands = (n + 3) / 4, cols = (n + bands - 1) / bands;   /* 5 checkpoints: 3 + 2 */
    char in[64];
    input_desc(&xs[0], in, sizeof in);
    struct epar_plot_text b = {0};
    /* one colour scale for every panel (they compare), up to the largest mean weight of rows 1.. (row 0 attends to
     * itself alone, weight 1) over the panels; one colour bar at the right of the page */
    double top = 0;
    for (int c = 0; c < n; c++) {
        int nl = selection(o->layers, o->n_layers, xs[c].NL, ls);
        for (int a = 0; a < nl; a++) {
            double pt = mean_row_top(&xs[c], ls[a], o);
            if (pt > top) top = pt;
        }
    }
    int W = 200 + 400 * cols, H = 100 + 420 * rows * bands;
    epar_plot_add(&b, "set terminal @epar_term size %d,%d\nset multiplot layout %d,%d margins %.4f,%.4f,%.4f,%.4f spacing "
                  "%.4f,%.4f title \"Attention on %s, mean of the heads\\none colour scale: up to the largest weight of the "
                  "rows after the first (row 0 sees only itself)\" noenhanced\n"
                  "unset key\nunset grid\nset size ratio -1\nset tics out\nunset colorbox\nset cbrange [0:%.3g]\n"
                  "set xlabel 'key position' font ',9'\nset ylabel 'query position' font ',9'\n",
                  W, H, rows * bands, cols, 100.0 / W, 1 - 150.0 / W, 80.0 / H, 1 - 90.0 / H, 110.0 / W, 150.0 / H, in,
                  top > 0 ? top : 1.0);
    int last_r = -1, last_c = -1;   /* the last panel drawn carries the colour bar */
    for (int a = 0; a < rows; a++)
        for (int c = 0; c < bands * cols && c < n; c++)
            if (a < selection(o->layers, o->n_layers, xs[c].NL, ls)) last_r = a, last_c = c;
    for (int a = 0; a < rows; a++)
        for (int c = 0; c < bands * cols; c++) {
            const struct epar_inspect *x = c < n ? &xs[c] : NULL;
            int nl = x ? selection(o->layers, o->n_layers, x->NL, ls) : 0;
            if (a >= nl) {   /* past the last checkpoint, or a model with fewer layers */
                epar_plot_add(&b, "set multiplot next\n");
                continue;
            }
            sb_panel_axes(&b, x, 16, 8);
            epar_plot_add(&b, "set title \"%s\\nlayer %d\" noenhanced font ',9'\n", x->name, ls[a]);
            if (a == last_r && c == last_c)
                epar_plot_add(&b, "set colorbox user origin screen %.4f, screen %.4f size screen %.4f, screen %.4f\n"
                                  "set cblabel 'attention weight'\nset cbtics font ',8'\n",
                              1 - 110.0 / W, 80.0 / H, 20.0 / W, 1 - 170.0 / H);
            epar_plot_add(&b, EPAR_PLOT_IF("'comparison.csv', '($1==%d && $3==%d ? $5 : NaN):6'")
                          "plot 'comparison.csv' skip 1 using ($1==%d && $3==%d ? $5 : 1/0):4:(0.52):(0.52):6 with boxxyerror "
                          "fs solid noborder fc palette notitle" EPAR_PLOT_END, c, ls[a], c, ls[a]);
        }
    epar_plot_add(&b, "unset multiplot\n");
    return epar_plot_script_text(out, "comparison", "Attention of several checkpoints on the same input, mean of the heads", &b);
}
