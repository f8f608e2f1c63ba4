/* The length-extrapolation study of epar benchmark, the writer: its tables, pairs and figures from the study that
 * bench_extrap_study.c gathers from the cell files and its statistics (bench_extrap.c: what a cell evaluates). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "lib/nnpos.h"
#include "lib/outdir.h"
#include "lib/plot.h"
#include "lib/stats.h"
#include "experiments/benchmark/bench_extrap_int.h"
#include "experiments/common.h"

/* ------------------------------------------------------------------------------------------------ */
/* tables                                                                                             */

static int bin_name(int b, char *buf, size_t n)
{
    if (b == 0) return snprintf(buf, n, "window");
    if (b == 1) return snprintf(buf, n, "past_L");
    int j = b - 2;
    return j == 0 ? snprintf(buf, n, "0-1") : snprintf(buf, n, "%d-%d", 1 << (j - 1), 1 << j);
}

/* the rows of series i, bin b (window, past_L) for the figure: first and last row index in the table */
struct fig_range {
    int first[EPAR_BX_MAX_SERIES * 3][2], last[EPAR_BX_MAX_SERIES * 3][2];
};

static struct epar_table *lm_table(const struct epar_bench_cfg *c, const struct lm_study *d, struct fig_range *fr)
{
    struct epar_table *t = epar_csv_new("task,series,trained,as,log_n,finetuned,length,k,train_length,bin,pos_lo,pos_hi,"
                                        "defined,seeds,bpc,bpc_sd,share,share_sd,share_lo,share_hi,rel,rel_sd,rel_lo,"
                                        "rel_hi,finetune_steps,finetune_tokens");
    for (int i = 0; t && i < d->n; i++)
        for (int b = 0; b < NBIN; b++) {
            if (i < EPAR_BX_MAX_SERIES * 3 && b < 2) fr->first[i][b] = fr->last[i][b] = -1;
            for (int e = 0; e < d->NL; e++) {
                int T = d->lengths[e];
                if (!epar_bx_bin_exists(b, T, d->L)) continue;
                const struct lm_series *ls = &d->s[i];
                int isft = ls->s.ft, at_ft = 0;
                for (int q = 0; isft && q < c->extrap.n_ft_lengths; q++) at_ft |= c->extrap.ft_lengths[q] == T;
                if (isft && !at_ft) continue;
                struct lm_stats x;
                epar_bx_lm_stats(d, i, e, b, c->level, &x);
                int ok = x.ok;
                if (!ok && b > 0) continue;   /* an undefined length is said once, in its window row */
                int lo, hi;
                char bn[16];
                bin_name(b, bn, sizeof bn);
                if (b == 0) lo = 0, hi = T;
                else if (b == 1) lo = d->L, hi = T;
                else bucket_edges(b - 2, d->L, T, &lo, &hi);
                if (i < EPAR_BX_MAX_SERIES * 3 && b < 2) {
                    if (fr->first[i][b] < 0) fr->first[i][b] = (int)t->nrows;
                    fr->last[i][b] = (int)t->nrows;
                }
                if (epar_csv_append(t, "ssssiiiiisiiiiddddddddddid", c->extrap.lm_task, ls->s.name,
                                    epar_nnpos_name(ls->s.trained), epar_nnpos_name(ls->s.as), ls->s.logn, isft, T,
                                    T / d->L, d->L, bn, lo, hi, ok, d->S, x.mb, x.sb, x.msh, x.ssh, x.ps.lo, x.ps.hi, x.mr,
                                    x.sr, x.pr.lo, x.pr.hi, isft ? ls->ft_steps : 0, isft ? ls->ft_tokens : 0.0)) {
                    epar_csv_free(t);
                    return NULL;
                }
            }
        }
    return t;
}

/* the attention of each series' window at each length: entropy and uniformity, and their change from the trained
 * length; first[i], last[i]: series i's rows (-1: none) */
static struct epar_table *att_table(const struct epar_bench_cfg *c, const struct lm_study *d, int *first, int *last)
{
    struct epar_table *t = epar_csv_new("task,series,trained,as,log_n,finetuned,length,k,train_length,defined,seeds,"
                                        "entropy,entropy_sd,entropy_rise,entropy_rise_sd,entropy_rise_lo,"
                                        "entropy_rise_hi,uniformity,uniformity_sd,uniformity_rise,uniformity_rise_sd,"
                                        "uniformity_rise_lo,uniformity_rise_hi");
    for (int i = 0; t && i < d->n; i++) {
        first[i] = last[i] = -1;
        for (int e = 0; e < d->NL; e++) {
            int T = d->lengths[e];
            const struct lm_series *ls = &d->s[i];
            int isft = ls->s.ft, at_ft = 0;
            for (int q = 0; isft && q < c->extrap.n_ft_lengths; q++) at_ft |= c->extrap.ft_lengths[q] == T;
            if (isft && !at_ft) continue;
            struct att_stats h, u;
            epar_bx_att_stats(d, i, e, 0, c->level, &h);
            epar_bx_att_stats(d, i, e, 1, c->level, &u);
            if (first[i] < 0) first[i] = (int)t->nrows;
            last[i] = (int)t->nrows;
            if (epar_csv_append(t, "ssssiiiiiiidddddddddddd", c->extrap.lm_task, ls->s.name,
                                epar_nnpos_name(ls->s.trained), epar_nnpos_name(ls->s.as), ls->s.logn, isft, T,
                                T / d->L, d->L, h.ok && u.ok, d->S, h.m, h.sd, h.mr, h.sr, h.pr.lo, h.pr.hi, u.m, u.sd,
                                u.mr, u.sr, u.pr.lo, u.pr.hi)) {
                epar_csv_free(t);
                return NULL;
            }
        }
    }
    return t;
}

static struct epar_table *ret_table(const struct epar_bench_cfg *c, const struct ret_study *d, int *grid_first,
                                    int *grid_last)
{
    struct epar_table *t = epar_csv_new("task,series,trained,as,log_n,length,k,train_length,bin,depth_lo,depth_hi,"
                                        "distance_lo,distance_hi,defined,seeds,answers,accuracy,accuracy_sd,lo,hi,chance");
    int nb = c->extrap.depth_bins, N = c->tasks[d->t].task.pairs;
    for (int i = 0; t && i < d->n; i++) {
        grid_first[i] = (int)t->nrows;
        for (int pass = 0; pass < 2; pass++)   /* the length x depth grid (the heatmap), then "all" per length */
            for (int e = 0; e < d->NL; e++) {
                int T = d->lengths[e], P = T - 3 * N + 1, bins = nb < P ? nb : P;
                for (int b = pass ? -1 : 0; b < (pass ? 0 : nb); b++) {
                    int dlo = 1, dhi = P;
                    if (b >= 0 && b < bins) epar_bx_depth_bin(b, bins, P, &dlo, &dhi);
                    struct ret_stats x;
                    epar_bx_ret_stats(d, i, e, dlo, dhi, b < bins, c->level, &x);
                    long answers = x.answers;
                    int ok = x.ok;
                    double m = x.mean, sd = x.sd;
                    struct epar_stats_paired pr = x.pr;
                    char bn[16];
                    snprintf(bn, sizeof bn, b < 0 ? "all" : "%d", b);
                    double dl = b < 0 ? 0 : (double)b / nb, dh = b < 0 ? 1 : (double)(b + 1) / nb;
                    if (epar_csv_append(t, "ssssiiiisddiiiiiddddd", c->extrap.retrieval_task, d->s[i].s.name,
                                        epar_nnpos_name(d->s[i].s.trained), epar_nnpos_name(d->s[i].s.as), d->s[i].s.logn,
                                        T, T / d->L, d->L, bn, dl, dh, dlo, dhi, ok, d->S, (int)answers, m, sd, pr.lo,
                                        pr.hi, d->chance)) {
                        epar_csv_free(t);
                        return NULL;
                    }
                }
                if (!pass) grid_last[i] = (int)t->nrows - 1;
            }
    }
    return t;
}

/* ---- pairs.csv: per named pair, the per-seed paired difference a - b ---- */

static int pair_row(struct epar_table *t, const struct epar_bench_cfg *c, const char *task, const char *a, const char *b,
                    const char *quantity, int T, int k, const char *bin, const double *x, const double *y, int S)
{
    struct epar_stats_paired pr;
    double m, sd;
    if (!epar_bx_pair_stats(x, y, S, c->level, &pr, &m, &sd)) return EPAR_OK;   /* undefined on either side: no row */
    return epar_csv_append(t, "ssssiisidddddd", task, a, b, quantity, T, k, bin, S, m, sd, pr.lo, pr.hi, pr.t, pr.p)
               ? EPAR_ENOMEM : EPAR_OK;
}

/* the fact-at-distance accuracy of series `who` (cells cr, S seeds) against the cells' chance level over distances
 * [dlo, dhi], as a row of b = "chance", quantity z_vs_chance: (mean accuracy - chance) / chance_se, chance_se =
 * sqrt(chance (1 - chance) / answers) over the answers of every seed there (the best constant answer's binomial
 * standard error at that count); one number, no interval across seeds */
static int chance_row(struct epar_table *t, const struct epar_bench_cfg *c, int tk, const char *who, struct cell_read *cr,
                      int S, int T, const char *bin, int dlo, int dhi)
{
    long *cc[EPAR_MAX_SEEDS], *ss[EPAR_MAX_SEEDS], answers = 0;
    double acc[EPAR_MAX_SEEDS], ch[EPAR_MAX_SEEDS], m, sd, chance, chsd;
    for (int s = 0; s < S; s++) cc[s] = cr[s].correct, ss[s] = cr[s].scored, ch[s] = cr[s].chance;
    answers = epar_bx_acc_values((const long *const *)cc, (const long *const *)ss, S, 1, dlo, dhi, acc);
    epar_stats_mean_sd(acc, S, &m, &sd);
    epar_stats_mean_sd(ch, S, &chance, &chsd);
    double se = answers > 0 ? sqrt(chance * (1 - chance) / (double)answers) : NAN, z = se > 0 ? (m - chance) / se : NAN;
    if (!isfinite(z)) return EPAR_OK;
    return epar_csv_append(t, "ssssiisidddddd", c->tasks[tk].id, who, "chance", "z_vs_chance", T, 1, bin, S, z, NAN, NAN,
                           NAN, NAN, NAN) ? EPAR_ENOMEM : EPAR_OK;
}

/* the grid's tasks other than the study's own two (lm_task, retrieval_task), at their own length, where both
 * mechanisms of pair pi have cells: a needle task per depth bin, over every distance ("all") and past a sliding
 * window's reach ("past_reach": the distances of distance.csv's bins whose distance_lo exceeds layers x
 * sliding-window.radius), from the cells' counts, with each series' z_vs_chance there (chance_row; once per series);
 * any other task its final metric (bin "all") */
static int grid_pairs(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                      struct epar_table *t, int pi, unsigned char *zdone)
{
    const struct epar_bench_extrap *x = &c->extrap;
    enum epar_mech_id ia, ib;
    struct epar_bench_mvar va_, vb_;
    /* a pair names cells: catalogue ids or study cells with parameters of their own ("deberta@absolute=1"), found by
     * name (zdone, the chance rows done, is by catalogue id: a variant on a needle task shares its base's) */
    if (epar_bench_mvar_parse(x->pair_a[pi], &ia, &va_) || epar_bench_mvar_parse(x->pair_b[pi], &ib, &vb_)) {
        epar_err_clear();
        return EPAR_OK;
    }
    int ma = -1, mb = -1, S = c->b.n_seeds, st = EPAR_OK;
    for (int m = 0; m < c->n_mech + x->n_extra; m++) {
        if (!strcmp(epar_bench_mech_name(c, m), x->pair_a[pi])) ma = m;
        if (!strcmp(epar_bench_mech_name(c, m), x->pair_b[pi])) mb = m;
    }
    if (ma < 0 || mb < 0) return EPAR_OK;
    for (int tk = 0; tk < c->n_tasks + c->n_study && !st; tk++) {
        int needle = c->tasks[tk].task.id == EPAR_TASK_NEEDLE;
        if (!strcmp(c->tasks[tk].id, x->retrieval_task) || !strcmp(c->tasks[tk].id, x->lm_task) ||
            !epar_bx_has_cell(c, tk, ma) || !epar_bx_has_cell(c, tk, mb))
            continue;
        long *cc[2][EPAR_MAX_SEEDS] = {{NULL}}, *ss[2][EPAR_MAX_SEEDS] = {{NULL}};
        struct cell_read cr[2][EPAR_MAX_SEEDS];
        memset(cr, 0, sizeof cr);
        for (int w = 0; w < 2 && !st; w++)
            for (int s = 0; s < S && !st; s++) {
                st = epar_bx_read_cell(c, plan, root, tk, w ? mb : ma, s, &cr[w][s]);
                cc[w][s] = cr[w][s].correct;
                ss[w][s] = cr[w][s].scored;
            }
        int T = c->tasks[tk].task.length;
        if (!needle && !st) {
            double va[EPAR_MAX_SEEDS], vb[EPAR_MAX_SEEDS];
            for (int s = 0; s < S; s++) va[s] = cr[0][s].value, vb[s] = cr[1][s].value;
            st = pair_row(t, c, c->tasks[tk].id, x->pair_a[pi], x->pair_b[pi], epar_task_table[c->tasks[tk].task.id].metric,
                          T, 1, "all", va, vb, S);
            /* captured: the share of b's gain over the best constant answer that a reaches, (H - b_a) / (H - b_b) per
             * seed for bits per character, (acc_a - ch) / (acc_b - ch) for accuracy (against 0: its mean) */
            double cap[EPAR_MAX_SEEDS], zero[EPAR_MAX_SEEDS], ga[EPAR_MAX_SEEDS], gb[EPAR_MAX_SEEDS];
            for (int s = 0; s < S; s++) {
                cap[s] = (cr[0][s].chance - va[s]) / (cr[1][s].chance - vb[s]);
                zero[s] = 0.0;
                ga[s] = va[s] - cr[0][s].pool;   /* gap: held-out metric - training-pool metric */
                gb[s] = vb[s] - cr[1][s].pool;
            }
            double rel[EPAR_MAX_SEEDS], one[EPAR_MAX_SEEDS];   /* bits per character: (a - b) / b per seed */
            for (int s = 0; s < S; s++) rel[s] = va[s] / vb[s], one[s] = 1.0;
            if (!st && c->tasks[tk].task.id == EPAR_TASK_LM)
                st = pair_row(t, c, c->tasks[tk].id, x->pair_a[pi], x->pair_b[pi], "bpc_rel", T, 1, "all", rel, one, S);
            if (!st) st = pair_row(t, c, c->tasks[tk].id, x->pair_a[pi], x->pair_b[pi], "captured", T, 1, "all", cap, zero, S);
            if (!st) st = pair_row(t, c, c->tasks[tk].id, x->pair_a[pi], x->pair_b[pi], "gap", T, 1, "all", ga, gb, S);
            /* the metric's mean over the learning curve (how fast it is learned): it does not saturate where the final
             * metric does (every model at accuracy 1.0 on every seed has no spread, so no interval) */
            double ca[EPAR_MAX_SEEDS], cb[EPAR_MAX_SEEDS];
            int curves = 1;
            for (int s = 0; s < S; s++) ca[s] = cr[0][s].curve, cb[s] = cr[1][s].curve, curves &= isfinite(ca[s]) && isfinite(cb[s]);
            if (!st && curves && c->tasks[tk].task.id != EPAR_TASK_LM)
                st = pair_row(t, c, c->tasks[tk].id, x->pair_a[pi], x->pair_b[pi], "accuracy_curve", T, 1, "all", ca, cb, S);
        }
        int P = T - 3 * c->tasks[tk].task.pairs + 1, nb = x->depth_bins < P ? x->depth_bins : P;
        int sized = needle;
        for (int w = 0; w < 2 && !st && needle; w++)
            for (int s = 0; s < S; s++) sized &= cr[w][s].n_correct > P && cr[w][s].n_scored > P;
        /* bins -1 "all", the depth bins, then nb "past_reach" */
        int reach = epar_exp_benchmark_window_reach(c, tk), rlo = 0;
        for (int k = 0, nd = sized ? epar_exp_benchmark_distance_bin(c, tk, 0, NULL, NULL) : 0; k < nd && !rlo; k++) {
            int lo, hi;
            epar_exp_benchmark_distance_bin(c, tk, k, &lo, &hi);
            if (lo > reach) rlo = lo;
        }
        for (int b = -1; b <= nb && !st && sized; b++) {
            int dlo = 1, dhi = P;
            if (b >= 0 && b < nb) epar_bx_depth_bin(b, nb, P, &dlo, &dhi);
            if (b == nb && !rlo) break;
            if (b == nb) dlo = rlo;
            double va[EPAR_MAX_SEEDS], vb[EPAR_MAX_SEEDS];
            epar_bx_acc_values((const long *const *)cc[0], (const long *const *)ss[0], S, 1, dlo, dhi, va);
            epar_bx_acc_values((const long *const *)cc[1], (const long *const *)ss[1], S, 1, dlo, dhi, vb);
            char bn[16];
            snprintf(bn, sizeof bn, b < 0 ? "all" : b == nb ? "past_reach" : "%d", b);
            st = pair_row(t, c, c->tasks[tk].id, x->pair_a[pi], x->pair_b[pi], "accuracy", T, 1, bn, va, vb, S);
            for (int w = 0; w < 2 && !st && b == nb; w++) {
                unsigned char *done = &zdone[(size_t)tk * EPAR_MECH_COUNT + (w ? ib : ia)];
                if (!*done) st = chance_row(t, c, tk, w ? x->pair_b[pi] : x->pair_a[pi], cr[w], S, T, bn, dlo, dhi);
                *done = 1;
            }
        }
        for (int w = 0; w < 2; w++)
            for (int s = 0; s < S; s++) epar_bx_free_cell(&cr[w][s]);
    }
    return st;
}

static struct epar_table *pairs_table(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                                      const struct lm_study *lm, const struct ret_study *rt, int *st)
{
    const struct epar_bench_extrap *x = &c->extrap;
    struct epar_table *t = epar_csv_new("task,a,b,quantity,length,k,bin,seeds,mean,sd,lo,hi,t,p");
    if (!t) *st = EPAR_ENOMEM;
    double ba[EPAR_MAX_SEEDS], bb[EPAR_MAX_SEEDS], sa[EPAR_MAX_SEEDS], sb[EPAR_MAX_SEEDS], rel[EPAR_MAX_SEEDS],
        one[EPAR_MAX_SEEDS];
    unsigned char *zdone = calloc((size_t)EPAR_BENCH_MAX_TASKS * EPAR_MECH_COUNT, 1);   /* a series' z_vs_chance written */
    if (!zdone) *st = EPAR_ENOMEM;
    for (int pi = 0; t && !*st && pi < x->n_pairs; pi++) {
        const char *a = x->pair_a[pi], *b = x->pair_b[pi];
        for (int q = 0; lm->n && q < NBIN && !*st; q++)
            for (int e = 0; e < lm->NL && !*st; e++) {
                int T = lm->lengths[e];
                if (!epar_bx_bin_exists(q, T, lm->L)) continue;
                char bn[16];
                bin_name(q, bn, sizeof bn);
                if (!epar_bx_group_values(lm, a, e, q, ba, sa) || !epar_bx_group_values(lm, b, e, q, bb, sb)) continue;
                *st = pair_row(t, c, x->lm_task, a, b, "bpc", T, T / lm->L, bn, ba, bb, lm->S);
                /* the relative difference (a - b) / b per seed: a over b against 1 */
                for (int s = 0; s < lm->S; s++) rel[s] = ba[s] / bb[s], one[s] = 1.0;
                if (!*st) *st = pair_row(t, c, x->lm_task, a, b, "bpc_rel", T, T / lm->L, bn, rel, one, lm->S);
                if (!*st) *st = pair_row(t, c, x->lm_task, a, b, "share", T, T / lm->L, bn, sa, sb, lm->S);
            }
        /* the windows' attention entropy, a - b per seed (two series, not groups) */
        int ia = epar_bx_lm_find(lm, a), ib = epar_bx_lm_find(lm, b);
        for (int e = 0; ia >= 0 && ib >= 0 && e < lm->NL && !*st; e++) {
            for (int s = 0; s < lm->S; s++) {
                ba[s] = lm->s[ia].att[((size_t)s * lm->NL + e) * 2];
                bb[s] = lm->s[ib].att[((size_t)s * lm->NL + e) * 2];
            }
            *st = pair_row(t, c, x->lm_task, a, b, "entropy", lm->lengths[e], lm->lengths[e] / lm->L, "window", ba, bb,
                           lm->S);
        }
        int ra = -1, rb = -1;
        for (int q = 0; q < rt->n; q++) {
            if (!strcmp(rt->s[q].s.name, a)) ra = q;
            if (!strcmp(rt->s[q].s.name, b)) rb = q;
        }
        int N = rt->n ? c->tasks[rt->t].task.pairs : 1;
        for (int e = 0; ra >= 0 && rb >= 0 && e < rt->NL && !*st; e++) {
            int T = rt->lengths[e], P = T - 3 * N + 1, nb = x->depth_bins < P ? x->depth_bins : P;
            for (int q = -1; q < nb && !*st; q++) {
                int dlo = 1, dhi = P;
                if (q >= 0) epar_bx_depth_bin(q, nb, P, &dlo, &dhi);
                epar_bx_acc_values((const long *const *)rt->s[ra].correct + e, (const long *const *)rt->s[ra].scored + e, rt->S,
                           rt->NL, dlo, dhi, ba);
                epar_bx_acc_values((const long *const *)rt->s[rb].correct + e, (const long *const *)rt->s[rb].scored + e, rt->S,
                           rt->NL, dlo, dhi, bb);
                char bn[16];
                snprintf(bn, sizeof bn, q < 0 ? "all" : "%d", q);
                *st = pair_row(t, c, x->retrieval_task, a, b, "accuracy", T, T / rt->L, bn, ba, bb, rt->S);
            }
        }
        if (!*st) *st = grid_pairs(c, plan, root, t, pi, zdone);
    }
    free(zdone);
    if (*st) {
        epar_csv_free(t);
        return NULL;
    }
    return t;
}

/* ---- figures ---- */

/* the panels of the lm figure: one row per group of at most about 8 series, split by family (lib/mech), then the
 * other readings of the same weights and the fine-tuned arms; `none` is the reference of every row */
#define LM_GROUPS (EPAR_MF_COUNT + 2)
static int lm_member(const struct lm_study *d, int i, int g)
{
    const struct series *s = &d->s[i].s;
    int own = !s->ft && s->as == s->trained && !s->logn, read_other = 0, tuned = 0;
    for (int q = 0; q < d->n; q++) {
        const struct series *o = &d->s[q].s;
        if (o->trained != s->trained) continue;
        read_other |= !o->ft && (o->as != o->trained || o->logn);
        tuned |= o->ft;
    }
    int none = own && epar_mech_family_of(s->name) == EPAR_MF_NONE;
    if (g < EPAR_MF_COUNT) return own && (none || epar_mech_family_of(s->name) == g) && g != EPAR_MF_NONE;
    if (g == EPAR_MF_COUNT) return (!s->ft && !own) || (own && read_other) || none;
    return s->ft || (own && tuned) || none;
}

static const char *lm_group_title(int g)
{
    if (g < EPAR_MF_COUNT) return epar_mech_family_name(g);
    return g == EPAR_MF_COUNT ? "the same weights read otherwise (scaled RoPE, log-n)" : "fine-tuned at longer lengths (+ft)";
}

static int lm_figure(const struct epar_bench_cfg *c, const struct lm_study *d, const struct fig_range *fr,
                     struct epar_out *o)
{
    size_t cap = 131072, len = 0;
    char *body = malloc(cap);
    if (!body) return EPAR_ENOMEM;
#define P(...) len += (size_t)snprintf(body + len, len < cap ? cap - len : 0, __VA_ARGS__)
    int maxk = d->lengths[d->NL - 1] / d->L;
    /* the rows: groups with a series other than the reference */
    int groups[LM_GROUPS], ng = 0;
    for (int g = 0; g < LM_GROUPS; g++) {
        int n = 0;
        for (int i = 0; i < d->n && i < EPAR_BX_MAX_SERIES * 3; i++)
            n += lm_member(d, i, g) && epar_mech_family_of(d->s[i].s.name) != EPAR_MF_NONE;
        if (n) groups[ng++] = g;
    }
    if (!ng) groups[ng++] = EPAR_MF_EPAR;
    char band[64] = "";
    if (d->S > 1) snprintf(band, sizeof band, "; band: ± sd across the %d seeds", d->S);
    P("set terminal @epar_term size 1500,%d\n"
      "set multiplot layout %d,2 title 'lm trained at L = %d, evaluated on held-out windows of k L (mean over %d "
      "seed%s%s); left: all positions of the window, right: positions past L only (at L: the window)'\n"
      "set logscale x 2\nset xrange [%g:%g]\nset xlabel 'evaluation length (tokens, log scale; dashed: "
      "the training length)'\nset ylabel 'bits per character (lower is better)'\n"
      "set key outside right top font ',8' width -2 samplen 2.5\n"
      "set arrow 1 from %d, graph 0 to %d, graph 1 nohead dt 2 lc rgb '#555555'\n"
      "set style fill transparent solid 0.15 noborder\n",
      60 + 330 * ng, ng, d->L, d->S, d->S == 1 ? "" : "s", band, d->L / 1.25, d->L * maxk * 1.25, d->L, d->L);
    /* the x tics: the evaluation lengths */
    {
        char tics[256] = "";
        for (int e = 0; e < d->NL; e++)
            snprintf(tics + strlen(tics), sizeof tics - strlen(tics), "%s%d", e ? ", " : "", d->lengths[e]);
        P("set xtics (%s)\n", tics);
    }
    for (int panel = 0; panel < 2 * ng; panel++) {
        int g = groups[panel / 2], bin = panel % 2;
        /* the panel's rows, so a panel whose every value is nan (or that has none) draws "no data" (plots/epar.gp) */
        char cond[4096];
        size_t cl = (size_t)snprintf(cond, sizeof cond, "0");
        for (int pass = 0; pass < 2; pass++) {
            if (pass) P("set title '%s: %s' noenhanced\neval epar_check('extrapolation_bpc.csv', '((%s) ? $7 : NaN):15')\n"
                        "if (epar_ok) {\nplot ", lm_group_title(g), bin ? "positions past L" : "all positions", cond);
            int k = 0, any = 0;
            for (int i = 0; i < d->n && i < EPAR_BX_MAX_SERIES * 3; i++) {
                const struct lm_series *ls = &d->s[i];
                if (!lm_member(d, i, g)) continue;
                k++;
                if (fr->first[i][bin] < 0) continue;
                /* colour and dash of the k-th series of the panel: no two series of a panel share a colour */
                int a = fr->first[i][bin], b = fr->last[i][bin], ty = (k - 1) % 12 + 1, dt = (k - 1) % 5 + 1;
                if (!pass) {
                    if (cl < sizeof cond) cl += (size_t)snprintf(cond + cl, sizeof cond - cl, " || ($0 >= %d && $0 <= %d)", a, b);
                    continue;
                }
                if (d->S > 1)
                    P("%s'extrapolation_bpc.csv' skip 1 every ::%d::%d using 7:($15-sd(16)):($15+sd(16)) with "
                      "filledcurves lt %d notitle", any ? ", \\\n " : "", a, b, ty);
                P("%s'extrapolation_bpc.csv' skip 1 every ::%d::%d using 7:15 with linespoints lt %d dt %d %s title '%s' "
                  "noenhanced", any || d->S > 1 ? ", \\\n " : "", a, b, ty, dt, ls->s.ft ? "pt 6 ps 1.2" : "", ls->s.name);
                if (bin == 1 && !ls->s.ft && fr->first[i][0] >= 0)   /* the reference at L: the window's first row */
                    P(", \\\n '' skip 1 every ::%d::%d using 7:15:(sd(16)) with %s lt %d notitle", fr->first[i][0],
                      fr->first[i][0], d->S > 1 ? "yerrorbars" : "points", ty);
                any = 1;
            }
            if (pass && !any) P("NaN notitle");
        }
        if (cl >= sizeof cond) return free(body), epar_err_set(EPAR_ENOMEM, "the figure script is too long");
        P(EPAR_PLOT_END);
    }
    P("unset multiplot\n");
#undef P
    int st = len < cap ? epar_plot_script(o, "extrapolation_bpc", "Length extrapolation of lm: bpc against length", body)
                       : epar_err_set(EPAR_ENOMEM, "the figure script is too long");
    free(body);
    (void)c;
    return st;
}

/* entropy and uniformity of the attention against the evaluation length: each mechanism on its own weights */
static int att_figure(const struct lm_study *d, const int *first, const int *last, struct epar_out *o)
{
    size_t cap = 65536, len = 0;
    char *body = malloc(cap);
    if (!body) return EPAR_ENOMEM;
#define P(...) len += (size_t)snprintf(body + len, len < cap ? cap - len : 0, __VA_ARGS__)
    int maxk = d->lengths[d->NL - 1] / d->L;
    /* a row per mechanism family (lib/mech), none the reference of each: at most about 8 series a panel */
    int groups[EPAR_MF_COUNT], ng = 0;
    for (int g = 0; g < EPAR_MF_COUNT; g++) {
        int n = 0;
        for (int i = 0; i < d->n; i++)
            n += first[i] >= 0 && lm_member(d, i, g) && epar_mech_family_of(d->s[i].s.name) != EPAR_MF_NONE;
        if (n) groups[ng++] = g;
    }
    if (!ng) groups[ng++] = EPAR_MF_EPAR;
    char band[64] = "";
    if (d->S > 1) snprintf(band, sizeof band, "; band: ± sd across the %d seeds", d->S);
    P("set terminal @epar_term size 1500,%d\n"
      "set multiplot layout %d,2 title 'lm trained at L = %d: attention of the second half of held-out windows of k L, "
      "every layer and head (mean over %d seed%s%s)'\n"
      "set logscale x 2\nset xrange [%g:%g]\nset xlabel 'evaluation length (tokens, log scale; dashed: the training length)'\n"
      "set key outside right top font ',8'\nset arrow 1 from %d, graph 0 to %d, graph 1 nohead dt 2 lc rgb '#555555'\n"
      "set style fill transparent solid 0.15 noborder\n",
      60 + 330 * ng, ng, d->L, d->S, d->S == 1 ? "" : "s", band, d->L / 1.25, d->L * maxk * 1.25, d->L, d->L);
    {
        char tics[256] = "";
        for (int e = 0; e < d->NL; e++)
            snprintf(tics + strlen(tics), sizeof tics - strlen(tics), "%s%d", e ? ", " : "", d->lengths[e]);
        P("set xtics (%s)\n", tics);
    }
    static const char *const ylab[2] = {"row entropy H (nats)", "uniformity H / ln n (1: uniform)"};
    for (int pn = 0; pn < 2 * ng; pn++) {
        int g = groups[pn / 2], panel = pn % 2, col = panel ? 18 : 12;
        char cond[4096];
        size_t cl = (size_t)snprintf(cond, sizeof cond, "0");
        for (int i = 0; i < d->n; i++) {
            if (first[i] < 0 || !lm_member(d, i, g)) continue;
            if (cl < sizeof cond) cl += (size_t)snprintf(cond + cl, sizeof cond - cl, " || ($0 >= %d && $0 <= %d)", first[i], last[i]);
        }
        if (cl >= sizeof cond) return free(body), epar_err_set(EPAR_ENOMEM, "the figure script is too long");
        P("set title '%s: %s' noenhanced\nset ylabel '%s'\neval epar_check('extrapolation_entropy.csv', '((%s) ? $7 : NaN):%d')\n"
          "if (epar_ok) {\nplot ", epar_mech_family_name(g), panel ? "does it tend to uniform?" : "entropy", ylab[panel],
          cond, col);
        int k = 0;
        for (int i = 0; i < d->n; i++) {
            const struct lm_series *ls = &d->s[i];
            if (first[i] < 0 || !lm_member(d, i, g)) continue;
            int ty = k % 12 + 1, dt = k % 5 + 1;   /* no colour twice in a panel */
            if (d->S > 1)
                P("%s'extrapolation_entropy.csv' skip 1 every ::%d::%d using 7:($%d-sd(%d)):($%d+sd(%d)) with filledcurves "
                  "lt %d notitle", k ? ", \\\n " : "", first[i], last[i], col, col + 1, col, col + 1, ty);
            P("%s'extrapolation_entropy.csv' skip 1 every ::%d::%d using 7:%d with linespoints lt %d dt %d title '%s' "
              "noenhanced", k || d->S > 1 ? ", \\\n " : "", first[i], last[i], col, ty, dt, ls->s.name);
            k++;
        }
        if (!k) P("NaN notitle");
        P(EPAR_PLOT_END);
    }
    P("unset multiplot\n");
#undef P
    int st = len < cap ? epar_plot_script(o, "extrapolation_entropy", "Length extrapolation of lm: attention entropy", body)
                       : epar_err_set(EPAR_ENOMEM, "the figure script is too long");
    free(body);
    return st;
}

static int ret_figure(const struct epar_bench_cfg *c, const struct ret_study *d, const int *first, const int *last,
                      struct epar_out *o)
{
    if (!d->n) return EPAR_OK;
    size_t cap = 65536, len = 0;
    char *body = malloc(cap);
    if (!body) return EPAR_ENOMEM;
    int cols = d->n < 4 ? d->n : 4, rows = (d->n + cols - 1) / cols, nb = c->extrap.depth_bins;
#define P(...) len += (size_t)snprintf(body + len, len < cap ? cap - len : 0, __VA_ARGS__)
    /* one scale [0, 1] for every panel: one colour bar, at the right of the page */
    int W = 380 * cols + 110, H = 330 * rows + 60;
    P("set terminal @epar_term size %d,%d\n"
      "set multiplot layout %d,%d margins %.4f,%.4f,%.4f,%.4f spacing %.4f,%.4f title '%s trained at L = %d: answer "
      "accuracy by evaluation length and depth of the fact (mean over %d seed%s; white: undefined)'\n"
      "set datafile missing 'NA'   # an undefined cell (nan) stays in the grid, drawn white\n"
      "unset key\nset view map\nset cbrange [0:1]\nunset colorbox\nset tics out\nunset grid\n"
      "set xlabel 'evaluation length / L'\nset ylabel 'depth of the fact (bin; 0 = the start)'\n"
      "set xrange [-0.5:%g]\nset yrange [-0.5:%g]\nset ytics 1\nset xtics (",
      W, H, rows, cols, 70.0 / W, 1 - 130.0 / W, 50.0 / H, 1 - 50.0 / H, 80.0 / W, 90.0 / H, c->extrap.retrieval_task,
      d->L, d->S, d->S == 1 ? "" : "s", d->NL - 0.5, nb - 0.5);
    for (int e = 0; e < d->NL; e++) P("%s'%d' %g", e ? ", " : "", d->lengths[e] / d->L, log2((double)d->lengths[e] / d->L));
    P(")\n");
    for (int i = 0; i < d->n; i++) {   /* a series whose every cell is undefined draws "no data" (plots/epar.gp) */
        if (i == d->n - 1)
            P("set colorbox user origin screen %.4f, screen %.4f size screen %.4f, screen %.4f\n"
              "set cblabel 'answer accuracy'\n", 1 - 100.0 / W, 60.0 / H, 18.0 / W, 1 - 130.0 / H);
        P("set title '%s' noenhanced\neval epar_check('retrieval.csv', '(($0 >= %d && $0 <= %d) ? log($7)/log(2) : NaN):17')\n"
          "if (epar_ok) {\nplot '%s' skip 1 every ::%d::%d using (log($7)/log(2)):9:17 with image\n" EPAR_PLOT_END,
          d->s[i].s.name, first[i], last[i], "retrieval.csv", first[i], last[i]);
    }
    P("unset multiplot\n");
#undef P
    int st = len < cap ? epar_plot_script(o, "retrieval", "Retrieval at length: accuracy by length and depth", body)
                       : epar_err_set(EPAR_ENOMEM, "the figure script is too long");
    free(body);
    return st;
}

/* the study's settings for run.json */
static json_t *study_json(const struct epar_bench_cfg *c)
{
    const struct epar_bench_extrap *x = &c->extrap;
    json_t *o = json_object(), *v = json_object(), *ft = json_array(), *pairs = json_array(), *fl = json_array(),
           *cells = json_object();
    for (int i = 0; i < x->n_variants; i++)
        json_object_set_new(v, x->variants[i].name, json_string(epar_nnpos_name(x->variants[i].trained)));
    for (int i = 0; i < x->n_ft; i++) json_array_append_new(ft, json_string(x->ft[i]));
    for (int i = 0; i < x->n_pairs; i++) json_array_append_new(pairs, json_pack("[s,s]", x->pair_a[i], x->pair_b[i]));
    for (int i = 0; i < x->n_ft_lengths; i++) json_array_append_new(fl, json_integer(x->ft_lengths[i]));
    for (int i = 0; i < x->n_cells; i++) {
        json_t *a = json_array();
        for (int k = 0; k < x->cells[i].n_mech; k++) json_array_append_new(a, json_string(epar_nnpos_name(x->cells[i].mech[k])));
        json_object_set_new(cells, x->cells[i].task, a);
    }
    json_object_set_new(o, "lm_task", json_string(x->lm_task));
    json_object_set_new(o, "retrieval_task", json_string(x->retrieval_task));
    json_object_set_new(o, "depth_bins", json_integer(x->depth_bins));
    json_object_set_new(o, "variants", v);
    json_object_set_new(o, "finetune", ft);
    json_object_set_new(o, "finetune_steps", json_integer(x->ft_steps));
    json_object_set_new(o, "finetune_lengths", fl);
    json_object_set_new(o, "retrieval_sequences", json_integer(x->retrieval_sequences));
    json_object_set_new(o, "cells", cells);
    json_object_set_new(o, "cells_run", json_boolean(!x->restricted));
    json_object_set_new(o, "pairs", pairs);
    json_object_set_new(o, "share", json_string("(b(k) - b(1)) / (H - b(1)) per seed: b bits per character, H the held-out "
                                                "characters' entropy (the cell's chance level)"));
    json_object_set_new(o, "captured", json_string("(H - m_a) / (H - m_b) per seed, m the final metric, H the cell's chance "
                                                   "level: the share of b's gain over the best constant answer a reaches"));
    json_object_set_new(o, "gap", json_string("held-out metric minus the final model's on its training pool "
                                              "(train_sequences), a - b per seed: the difference in overfitting"));
    return o;
}

int epar_bx_write(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                  struct epar_out *o, json_t *run_extra)
{
    if (!c->extrap.on) return EPAR_OK;
    struct lm_study lm;
    struct ret_study rt;
    struct fig_range fr;
    int gf[EPAR_MECH_COUNT * (EPAR_BX_MAX_SERIES + 1)], gl[EPAR_MECH_COUNT * (EPAR_BX_MAX_SERIES + 1)];
    struct epar_table *lt = NULL, *rtt = NULL, *pt = NULL, *at = NULL;
    int *af = NULL, *al = NULL;   /* the entropy table's rows of each series */
    int st = epar_bx_lm_study_build(c, plan, root, &lm);
    if (!st) st = epar_bx_ret_study_build(c, plan, root, &rt);
    else memset(&rt, 0, sizeof rt);
    if (!st && lm.n && !(lt = lm_table(c, &lm, &fr))) st = epar_err_set(EPAR_ENOMEM, "out of memory");
    if (!st && lm.n && (!(af = calloc((size_t)lm.n, sizeof *af)) || !(al = calloc((size_t)lm.n, sizeof *al)) ||
                        !(at = att_table(c, &lm, af, al))))
        st = epar_err_set(EPAR_ENOMEM, "out of memory");
    if (!st && rt.n && !(rtt = ret_table(c, &rt, gf, gl))) st = epar_err_set(EPAR_ENOMEM, "out of memory");
    if (!st) pt = pairs_table(c, plan, root, &lm, &rt, &st);
    if (!st && lt) st = epar_exp_write_table(o, "extrapolation_bpc.csv", lt);
    if (!st && at) st = epar_exp_write_table(o, "extrapolation_entropy.csv", at);
    if (!st && rtt) st = epar_exp_write_table(o, "retrieval.csv", rtt);
    if (!st && pt) st = epar_exp_write_table(o, "pairs.csv", pt);
    if (!st && lt) st = lm_figure(c, &lm, &fr, o);
    if (!st && at) st = att_figure(&lm, af, al, o);
    if (!st && rtt) st = ret_figure(c, &rt, gf, gl, o);
    if (!st && run_extra) json_object_set_new(run_extra, "extrapolation_study", study_json(c));
    epar_csv_free(lt);
    epar_csv_free(rtt);
    epar_csv_free(pt);
    epar_csv_free(at);
    free(af);
    free(al);
    epar_bx_lm_study_free(&lm);
    epar_bx_ret_study_free(&rt);
    return st;
}
