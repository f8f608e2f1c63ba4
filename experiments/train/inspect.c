/* epar inspect: reading the checkpoint, the input (an evaluation item or a text) and the forward pass that gives its
 * attention, the run of one input (epar_inspect_run) and the means over several (epar_inspect_summarise). What is
 * computed from the attention is inspect_stats.c's, the tables and figures inspect_write.c's, the head view page
 * inspect_view.c's (inspect_int.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/ckpt.h"
#include "lib/err.h"
#include "experiments/train/inspect_int.h"
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

void epar_inspect_symbol(const struct epar_inspect *x, int id, char *buf, size_t n)
{
    if (id < 0) buf[0] = '\0';
    else epar_task_symbol(&x->run.task, id, buf, n);
}

/* "item 3" or "text" */
void epar_inspect_input_desc(const struct epar_inspect *x, char *buf, size_t n)
{
    if (x->from_text) snprintf(buf, n, "text of %d tokens", x->T);
    else snprintf(buf, n, "evaluation item %ld", x->item);
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
    if (!st) st = epar_inspect_summarise_heads(x);
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
