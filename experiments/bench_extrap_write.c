/* The length-extrapolation study of epar benchmark: the study gathered from the cell files, its tables, pairs and
 * figures (bench_extrap.c: what a cell evaluates). */
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
#include "bench_extrap_int.h"
#include "common.h"

/* ------------------------------------------------------------------------------------------------ */
/* tables                                                                                             */

/* the lm study in memory: per series, seed, length: the bins (window, past L, buckets) */
#define NBIN (2 + EPAR_BX_MAX_BUCKETS)
struct lm_series {
    struct series s;
    int m;                          /* mechanism index of its cells */
    double *v;                      /* (S, NL, NBIN) bpc; NaN: absent */
    double *ref, *H;                /* (S) b(1) (the window at the trained length of the series, or of the arm's base) and H */
    int ft_steps;
    double ft_tokens;
    int present;                    /* any row read */
};

struct lm_study {
    int n, S, NL, L;
    const int *lengths;
    struct lm_series *s;
};

static double *lmv(const struct lm_study *d, int i, int s, int e, int b)
{
    return d->s[i].v + (((size_t)s * d->NL + e) * NBIN + b);
}

static int lm_find(const struct lm_study *d, const char *name)
{
    for (int i = 0; i < d->n; i++)
        if (!strcmp(d->s[i].s.name, name)) return i;
    return -1;
}

static int bin_name(int b, char *buf, size_t n)
{
    if (b == 0) return snprintf(buf, n, "window");
    if (b == 1) return snprintf(buf, n, "past_L");
    int j = b - 2;
    return j == 0 ? snprintf(buf, n, "0-1") : snprintf(buf, n, "%d-%d", 1 << (j - 1), 1 << j);
}

/* the registry: the trained mechanisms' own series, then the variants, then the arms (of mechanisms with cells) */
static int lm_study_build(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                          struct lm_study *d)
{
    const struct epar_bench_extrap *x = &c->extrap;
    int t = task_index(c, x->lm_task), S = c->b.n_seeds, NL = c->b.n_extrap;
    memset(d, 0, sizeof *d);
    if (t < 0) return EPAR_OK;
    d->S = S;
    d->NL = NL;
    d->L = c->tasks[t].task.length;
    d->lengths = c->b.extrap;
    int M = c->n_mech + x->n_extra, cap = M * (1 + x->n_variants + x->n_ft) + 1;
    d->s = EPAR_CALLOC((size_t)cap, sizeof *d->s);
    if (!d->s) return EPAR_ENOMEM;
    for (int pass = 0; pass < 3; pass++)
        for (int m = 0; m < M; m++) {
            if (!epar_bx_has_cell(c, t, m)) continue;
            struct series sv[EPAR_BX_MAX_SERIES];
            int n = pass == 2 ? epar_bx_cell_arms(x, c->mech[m], sv, EPAR_BX_MAX_FT) : epar_bx_cell_series(x, c->mech[m], sv, EPAR_BX_MAX_SERIES);
            for (int i = pass == 1 ? 1 : 0; i < (pass == 0 ? 1 : n) && d->n < cap; i++) {
                struct lm_series *ls = &d->s[d->n++];
                ls->s = sv[i];
                ls->m = m;
                ls->v = malloc((size_t)S * NL * NBIN * sizeof *ls->v);
                ls->ref = malloc((size_t)S * sizeof *ls->ref);
                ls->H = malloc((size_t)S * sizeof *ls->H);
                if (!ls->v || !ls->ref || !ls->H) return epar_err_set(EPAR_ENOMEM, "out of memory");
                for (size_t q = 0; q < (size_t)S * NL * NBIN; q++) ls->v[q] = NAN;
                for (int q = 0; q < S; q++) ls->ref[q] = ls->H[q] = NAN;
            }
        }
    /* the cells' rows */
    int st = EPAR_OK;
    for (int m = 0; m < M && !st; m++) {
        if (!epar_bx_has_cell(c, t, m)) continue;
        for (int s = 0; s < S && !st; s++) {
            struct cell_read cr;
            st = epar_bx_read_cell(c, plan, root, t, m, s, &cr);
            for (int r = 0; !st && r < cr.study->n_lm; r++) {
                const struct lm_row *row = &cr.study->lm[r];
                int i = lm_find(d, row->series), e = -1;
                for (int q = 0; q < NL; q++)
                    if (d->lengths[q] == row->length) e = q;
                if (i < 0 || e < 0 || d->s[i].m != m || !row->defined) continue;
                struct lm_series *ls = &d->s[i];
                ls->present = 1;
                *lmv(d, i, s, e, 0) = row->bpc;
                *lmv(d, i, s, e, 1) = row->past;
                for (int j = 0; j < row->n_bucket && j < EPAR_BX_MAX_BUCKETS; j++) *lmv(d, i, s, e, 2 + j) = row->bucket[j];
                if (row->ft_steps >= 0) {
                    ls->ft_steps = row->ft_steps;
                    ls->ft_tokens = row->ft_tokens;
                }
            }
            for (int i = 0; !st && i < d->n; i++)
                if (d->s[i].m == m) d->s[i].H[s] = cr.chance;
            epar_bx_free_cell(&cr);
        }
    }
    /* b(1): the series' window at the trained length, an arm's from the series it continues */
    int e1 = -1;
    for (int q = 0; q < NL; q++)
        if (d->lengths[q] == d->L) e1 = q;
    for (int i = 0; i < d->n && e1 >= 0; i++) {
        int from = d->s[i].s.ft ? lm_find(d, d->s[i].s.base) : i;
        for (int s = 0; s < S && from >= 0; s++) d->s[i].ref[s] = *lmv(d, from, s, e1, 0);
    }
    return st;
}

static void lm_study_free(struct lm_study *d)
{
    for (int i = 0; d->s && i < d->n; i++) {
        free(d->s[i].v);
        free(d->s[i].ref);
        free(d->s[i].H);
    }
    free(d->s);
    d->s = NULL;
}

/* per seed: bpc of bin b at length e, and the lost-gain share (b - b(1)) / (H - b(1)); 1 when every seed has both */
static int lm_values(const struct lm_study *d, int i, int e, int b, double *bpc, double *share, double *rel)
{
    int ok = 1;
    for (int s = 0; s < d->S; s++) {
        const struct lm_series *ls = &d->s[i];
        bpc[s] = *lmv(d, i, s, e, b);
        share[s] = (bpc[s] - ls->ref[s]) / (ls->H[s] - ls->ref[s]);
        if (rel) rel[s] = (bpc[s] - ls->ref[s]) / ls->ref[s];
        ok &= isfinite(bpc[s]);
    }
    return ok;
}

/* a pair's side: a series, or "a|b|c" the per-seed mean of a group's (every member defined); 0: absent or undefined */
static int group_values(const struct lm_study *d, const char *name, int e, int b, double *bpc, double *share)
{
    char g[64];
    double x[EPAR_MAX_SEEDS], y[EPAR_MAX_SEEDS];
    int n = 0, ok = 1;
    snprintf(g, sizeof g, "%s", name);
    for (int s = 0; s < d->S; s++) bpc[s] = share[s] = 0;
    for (char *save = NULL, *m = strtok_r(g, "|", &save); m && ok; m = strtok_r(NULL, "|", &save)) {
        int i = lm_find(d, m);
        ok = i >= 0 && lm_values(d, i, e, b, x, y, NULL);
        for (int s = 0; ok && s < d->S; s++) {
            bpc[s] += x[s];
            share[s] += y[s];
        }
        n++;
    }
    for (int s = 0; s < d->S; s++) {
        bpc[s] = ok && n ? bpc[s] / n : NAN;
        share[s] = ok && n ? share[s] / n : NAN;
    }
    return ok && n;
}

/* does bin b exist at length T (training length L)? */
static int bin_exists(int b, int T, int L)
{
    return b == 0 || (b == 1 && T > L) || (b >= 2 && b - 2 < n_buckets(T, L));
}

/* series i at length e, bin b across the seeds (lm_values; ok 0: undefined): the mean and sd of the bpc (mb, sb), of
 * the lost-gain share (msh, ssh) and of the relative change (mr, sr), and the share's and change's paired intervals */
struct lm_stats {
    int ok;
    double mb, sb, msh, ssh, mr, sr;
    struct epar_stats_paired ps, pr;
};
static void lm_stats(const struct lm_study *d, int i, int e, int b, double level, struct lm_stats *x)
{
    double bpc[EPAR_MAX_SEEDS], sh[EPAR_MAX_SEEDS], rl[EPAR_MAX_SEEDS];
    int ok = x->ok = lm_values(d, i, e, b, bpc, sh, rl);
    epar_stats_paired(sh, ok ? d->S : 0, level, &x->ps);
    epar_stats_paired(rl, ok ? d->S : 0, level, &x->pr);
    epar_stats_mean_sd(bpc, ok ? (size_t)d->S : 0, &x->mb, &x->sb);
    epar_stats_mean_sd(sh, ok ? (size_t)d->S : 0, &x->msh, &x->ssh);
    epar_stats_mean_sd(rl, ok ? (size_t)d->S : 0, &x->mr, &x->sr);
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
                if (!bin_exists(b, T, d->L)) continue;
                const struct lm_series *ls = &d->s[i];
                int isft = ls->s.ft, at_ft = 0;
                for (int q = 0; isft && q < c->extrap.n_ft_lengths; q++) at_ft |= c->extrap.ft_lengths[q] == T;
                if (isft && !at_ft) continue;
                struct lm_stats x;
                lm_stats(d, i, e, b, c->level, &x);
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

/* the retrieval grid in memory: per series, seed, length: answers and correct ones by distance */
struct ret_series {
    struct series s;
    int m;
    long **correct, **scored;       /* (S * NL) arrays of D_e + 1, NULL: undefined */
};

struct ret_study {
    int n, S, NL, L, t;
    int lengths[EPAR_BENCH_MAX_EXTRAP];
    struct ret_series *s;
    double chance;
};

static void ret_study_free(struct ret_study *d)
{
    for (int i = 0; d->s && i < d->n; i++) {
        for (int q = 0; q < d->S * d->NL; q++) {
            free(d->s[i].correct[q]);
            free(d->s[i].scored[q]);
        }
        free(d->s[i].correct);
        free(d->s[i].scored);
    }
    free(d->s);
    d->s = NULL;
}

static int ret_study_build(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                           struct ret_study *d)
{
    const struct epar_bench_extrap *x = &c->extrap;
    int t = task_index(c, x->retrieval_task), S = c->b.n_seeds, NL = c->b.n_extrap;
    memset(d, 0, sizeof *d);
    d->chance = NAN;
    if (t < 0) return EPAR_OK;
    d->S = S;
    d->NL = NL;
    d->t = t;
    d->L = c->tasks[t].task.length;
    for (int e = 0; e < NL; e++) d->lengths[e] = c->b.extrap[e] / c->b.lm_length * d->L;
    int M = c->n_mech + x->n_extra, cap = M * (1 + x->n_variants);
    d->s = EPAR_CALLOC((size_t)cap + 1, sizeof *d->s);
    if (!d->s) return EPAR_ENOMEM;
    for (int pass = 0; pass < 2; pass++)
        for (int m = 0; m < M; m++) {
            if (!epar_bx_has_cell(c, t, m)) continue;
            struct series sv[EPAR_BX_MAX_SERIES];
            int n = epar_bx_cell_series(x, c->mech[m], sv, EPAR_BX_MAX_SERIES);
            for (int i = pass; i < (pass == 0 ? 1 : n) && d->n < cap; i++) {
                struct ret_series *rs = &d->s[d->n++];
                rs->s = sv[i];
                rs->m = m;
                rs->correct = EPAR_CALLOC((size_t)S * NL, sizeof *rs->correct);
                rs->scored = EPAR_CALLOC((size_t)S * NL, sizeof *rs->scored);
                if (!rs->correct || !rs->scored) return EPAR_ENOMEM;
            }
        }
    int st = EPAR_OK;
    double ch = 0;
    int nch = 0;
    for (int m = 0; m < M && !st; m++) {
        if (!epar_bx_has_cell(c, t, m)) continue;
        for (int s = 0; s < S && !st; s++) {
            struct cell_read cr;
            st = epar_bx_read_cell(c, plan, root, t, m, s, &cr);
            if (!st && isfinite(cr.chance)) {
                ch += cr.chance;
                nch++;
            }
            for (int r = 0; !st && r < cr.study->n_ret; r++) {
                struct ret_row *row = &cr.study->ret[r];
                int i = -1, e = -1;
                for (int q = 0; q < d->n; q++)
                    if (d->s[q].m == m && !strcmp(d->s[q].s.name, row->series)) i = q;
                for (int q = 0; q < NL; q++)
                    if (d->lengths[q] == row->length) e = q;
                if (i < 0 || e < 0 || !row->defined || !row->correct || !row->scored || row->n_correct != row->n_scored)
                    continue;
                /* the arrays move from the cell's record into the study */
                d->s[i].correct[s * NL + e] = row->correct;
                d->s[i].scored[s * NL + e] = row->scored;
                row->correct = row->scored = NULL;
                row->n_correct = row->n_scored = 0;
            }
            epar_bx_free_cell(&cr);
        }
    }
    d->chance = nch ? ch / nch : NAN;
    return st;
}

/* depth bins at length T of a needle with `pairs` facts: positions p = 0 .. P - 1 of the fact (P = T - 3 pairs + 1 = the
 * largest distance), bin b of nb holds p in [ceil(b P / nb), ceil((b + 1) P / nb)); distance d = P - p */
static void depth_bin(int b, int nb, int P, int *dlo, int *dhi)
{
    int plo = (int)(((long)b * P + nb - 1) / nb), phi = (int)(((long)(b + 1) * P + nb - 1) / nb) - 1;
    *dlo = P - phi;
    *dhi = P - plo;
}

/* per seed: the accuracy over distances [dlo, dhi] (NaN: no answer there, or undefined) */
static long acc_values(const long *const *correct, const long *const *scored, int S, int stride, int dlo, int dhi,
                       double *acc)
{
    long answers = 0;
    for (int s = 0; s < S; s++) {
        const long *cc = correct[(size_t)s * stride], *ss = scored[(size_t)s * stride];
        long a = 0, b = 0;
        for (int dd = dlo; cc && ss && dd <= dhi; dd++) {
            a += cc[dd];
            b += ss[dd];
        }
        acc[s] = cc && ss && b > 0 ? (double)a / b : NAN;
        answers += b;
    }
    return answers;
}

/* series i at length e over distances [dlo, dhi] across the seeds (acc_values; nothing when not in_grid): the
 * answers, whether every seed's accuracy is defined (ok), their mean, sd and paired interval */
struct ret_stats {
    long answers;
    int ok;
    double mean, sd;
    struct epar_stats_paired pr;
};
static void ret_stats(const struct ret_study *d, int i, int e, int dlo, int dhi, int in_grid, double level,
                      struct ret_stats *x)
{
    double acc[EPAR_MAX_SEEDS];
    x->answers = !in_grid ? 0 : acc_values((const long *const *)d->s[i].correct + e,
                                           (const long *const *)d->s[i].scored + e, d->S, d->NL, dlo, dhi, acc);
    int ok = in_grid;
    for (int s = 0; s < d->S && ok; s++) ok = isfinite(acc[s]);
    x->ok = ok;
    epar_stats_mean_sd(acc, ok ? (size_t)d->S : 0, &x->mean, &x->sd);
    epar_stats_paired(acc, ok ? d->S : 0, level, &x->pr);
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
                    if (b >= 0 && b < bins) depth_bin(b, bins, P, &dlo, &dhi);
                    struct ret_stats x;
                    ret_stats(d, i, e, dlo, dhi, b < bins, c->level, &x);
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
    double dlt[EPAR_MAX_SEEDS];
    int ok = 1;
    for (int s = 0; s < S; s++) {
        dlt[s] = x[s] - y[s];
        ok &= isfinite(dlt[s]);
    }
    if (!ok) return EPAR_OK;   /* undefined on either side: no row */
    struct epar_stats_paired pr;
    epar_stats_paired(dlt, S, c->level, &pr);
    double m, sd;
    epar_stats_mean_sd(dlt, (size_t)S, &m, &sd);
    return epar_csv_append(t, "ssssiisidddddd", task, a, b, quantity, T, k, bin, S, m, sd, pr.lo, pr.hi, pr.t, pr.p)
               ? EPAR_ENOMEM : EPAR_OK;
}

/* the grid's needle tasks other than the retrieval task, at their own length: per depth bin from the cells' counts */
static int grid_needle_pairs(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
                             struct epar_table *t, int pi)
{
    const struct epar_bench_extrap *x = &c->extrap;
    enum epar_mech_id ia, ib;
    if (epar_mech_find(x->pair_a[pi], &ia) || epar_mech_find(x->pair_b[pi], &ib)) return EPAR_OK;
    int ma = -1, mb = -1, S = c->b.n_seeds, st = EPAR_OK;
    for (int m = 0; m < c->n_mech + x->n_extra; m++) {
        if (c->mech[m] == ia) ma = m;
        if (c->mech[m] == ib) mb = m;
    }
    if (ma < 0 || mb < 0) return EPAR_OK;
    for (int tk = 0; tk < c->n_tasks && !st; tk++) {
        if (c->tasks[tk].task.id != EPAR_TASK_NEEDLE || !strcmp(c->tasks[tk].id, x->retrieval_task) ||
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
        int T = c->tasks[tk].task.length, P = T - 3 * c->tasks[tk].task.pairs + 1, nb = x->depth_bins < P ? x->depth_bins : P;
        int sized = 1;
        for (int w = 0; w < 2 && !st; w++)
            for (int s = 0; s < S; s++) sized &= cr[w][s].n_correct > P && cr[w][s].n_scored > P;
        for (int b = -1; b < nb && !st && sized; b++) {
            int dlo = 1, dhi = P;
            if (b >= 0) depth_bin(b, nb, P, &dlo, &dhi);
            double va[EPAR_MAX_SEEDS], vb[EPAR_MAX_SEEDS];
            acc_values((const long *const *)cc[0], (const long *const *)ss[0], S, 1, dlo, dhi, va);
            acc_values((const long *const *)cc[1], (const long *const *)ss[1], S, 1, dlo, dhi, vb);
            char bn[16];
            snprintf(bn, sizeof bn, b < 0 ? "all" : "%d", b);
            st = pair_row(t, c, c->tasks[tk].id, x->pair_a[pi], x->pair_b[pi], "accuracy", T, 1, bn, va, vb, S);
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
    double ba[EPAR_MAX_SEEDS], bb[EPAR_MAX_SEEDS], sa[EPAR_MAX_SEEDS], sb[EPAR_MAX_SEEDS];
    for (int pi = 0; t && !*st && pi < x->n_pairs; pi++) {
        const char *a = x->pair_a[pi], *b = x->pair_b[pi];
        for (int q = 0; lm->n && q < NBIN && !*st; q++)
            for (int e = 0; e < lm->NL && !*st; e++) {
                int T = lm->lengths[e];
                if (!bin_exists(q, T, lm->L)) continue;
                char bn[16];
                bin_name(q, bn, sizeof bn);
                if (!group_values(lm, a, e, q, ba, sa) || !group_values(lm, b, e, q, bb, sb)) continue;
                *st = pair_row(t, c, x->lm_task, a, b, "bpc", T, T / lm->L, bn, ba, bb, lm->S);
                if (!*st) *st = pair_row(t, c, x->lm_task, a, b, "share", T, T / lm->L, bn, sa, sb, lm->S);
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
                if (q >= 0) depth_bin(q, nb, P, &dlo, &dhi);
                acc_values((const long *const *)rt->s[ra].correct + e, (const long *const *)rt->s[ra].scored + e, rt->S,
                           rt->NL, dlo, dhi, ba);
                acc_values((const long *const *)rt->s[rb].correct + e, (const long *const *)rt->s[rb].scored + e, rt->S,
                           rt->NL, dlo, dhi, bb);
                char bn[16];
                snprintf(bn, sizeof bn, q < 0 ? "all" : "%d", q);
                *st = pair_row(t, c, x->retrieval_task, a, b, "accuracy", T, T / rt->L, bn, ba, bb, rt->S);
            }
        }
        if (!*st) *st = grid_needle_pairs(c, plan, root, t, pi);
    }
    if (*st) {
        epar_csv_free(t);
        return NULL;
    }
    return t;
}

/* ---- figures ---- */

static int lm_figure(const struct epar_bench_cfg *c, const struct lm_study *d, const struct fig_range *fr,
                     struct epar_out *o)
{
    size_t cap = 65536, len = 0;
    char *body = malloc(cap);
    if (!body) return EPAR_ENOMEM;
#define P(...) len += (size_t)snprintf(body + len, len < cap ? cap - len : 0, __VA_ARGS__)
    int maxk = d->lengths[d->NL - 1] / d->L;
    P("set terminal @epar_term size 1500,1050\n"
      "set multiplot layout 2,2 title 'lm trained at L = %d, evaluated on held-out windows of k L (mean over %d seed(s); "
      "band: ± sd across seeds)'\n"
      "set logscale x 2\nset xrange [%g:%g]\nset xlabel 'evaluation length (log scale; dashed: the training length)'\n"
      "set ylabel 'bits per character (lower is better)'\nset key outside right top font ',8'\n"
      "set arrow 1 from %d, graph 0 to %d, graph 1 nohead dt 2 lc rgb '#555555'\n"
      "set style fill transparent solid 0.15 noborder\n",
      d->L, d->S, d->L / 1.25, d->L * maxk * 1.25, d->L, d->L);
    static const char *const titles[4] = {"each mechanism on its own weights: all positions of the window",
                                          "the same weights read otherwise (and fine-tuned, +ft): all positions",
                                          "each mechanism on its own weights: positions past L only (at L: the window)",
                                          "the same weights read otherwise: positions past L only (at L: the window)"};
    for (int panel = 0; panel < 4; panel++) {
        int bin = panel / 2, same = panel % 2;
        /* the panel's rows, so a panel whose every value is nan (or that has none) draws "no data" (plots/epar.gp) */
        char cond[4096];
        size_t cl = (size_t)snprintf(cond, sizeof cond, "0");
        for (int pass = 0; pass < 2; pass++) {
            if (pass) P("set title '%s'\neval epar_check('extrapolation_bpc.csv', '((%s) ? $7 : NaN):15')\n"
                        "if (epar_ok) {\nplot ", titles[panel], cond);
            int lt = 0, any = 0;
            for (int i = 0; i < d->n && i < EPAR_BX_MAX_SERIES * 3; i++) {
                const struct lm_series *ls = &d->s[i];
                /* the left panels: the mechanisms' own series; the right: the variants, the arms and what they read */
                int own = !ls->s.ft && ls->s.as == ls->s.trained && !ls->s.logn, reads = 0;
                for (int q = 0; q < d->n; q++)
                    reads |= (d->s[q].s.ft || d->s[q].s.as != d->s[q].s.trained || d->s[q].s.logn) &&
                             d->s[q].s.trained == ls->s.trained;
                if (same ? !(!own || reads) : !own) continue;
                lt++;
                if (fr->first[i][bin] < 0) continue;
                int a = fr->first[i][bin], b = fr->last[i][bin], ty = (lt - 1) % 8 + 1, dt = (lt - 1) / 8 + 1;
                if (!pass) {
                    if (cl < sizeof cond) cl += (size_t)snprintf(cond + cl, sizeof cond - cl, " || ($0 >= %d && $0 <= %d)", a, b);
                    continue;
                }
                P("%s'extrapolation_bpc.csv' skip 1 every ::%d::%d using 7:($15-sd(16)):($15+sd(16)) with filledcurves "
                  "lt %d notitle, \\\n '' skip 1 every ::%d::%d using 7:15 with linespoints lt %d dt %d %s title '%s'",
                  any ? ", \\\n " : "", a, b, ty, a, b, ty, dt, ls->s.ft ? "pt 6 ps 1.2" : "", ls->s.name);
                if (bin == 1 && !ls->s.ft && fr->first[i][0] >= 0)   /* the reference at L: the window's first row */
                    P(", \\\n '' skip 1 every ::%d::%d using 7:15:(sd(16)) with yerrorbars lt %d notitle",
                      fr->first[i][0], fr->first[i][0], ty);
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

static int ret_figure(const struct epar_bench_cfg *c, const struct ret_study *d, const int *first, const int *last,
                      struct epar_out *o)
{
    if (!d->n) return EPAR_OK;
    size_t cap = 65536, len = 0;
    char *body = malloc(cap);
    if (!body) return EPAR_ENOMEM;
    int cols = d->n < 4 ? d->n : 4, rows = (d->n + cols - 1) / cols, nb = c->extrap.depth_bins;
#define P(...) len += (size_t)snprintf(body + len, len < cap ? cap - len : 0, __VA_ARGS__)
    P("set terminal @epar_term size %d,%d\n"
      "set multiplot layout %d,%d title '%s trained at L = %d: answer accuracy by evaluation length and depth of the "
      "fact (mean over %d seed(s); white: undefined)'\n"
      "set datafile missing 'NA'   # an undefined cell (nan) stays in the grid, drawn white\n"
      "unset key\nset view map\nset cbrange [0:1]\nset tics out\nunset grid\n"
      "set xlabel 'evaluation length / L'\nset ylabel 'depth of the fact (bin; 0 = the start)'\n"
      "set xrange [-0.5:%g]\nset yrange [-0.5:%g]\nset ytics 1\nset xtics (",
      380 * cols, 330 * rows + 60, rows, cols, c->extrap.retrieval_task, d->L, d->S, d->NL - 0.5, nb - 0.5);
    for (int e = 0; e < d->NL; e++) P("%s'%d' %g", e ? ", " : "", d->lengths[e] / d->L, log2((double)d->lengths[e] / d->L));
    P(")\n");
    for (int i = 0; i < d->n; i++)   /* a series whose every cell is undefined draws "no data" (plots/epar.gp) */
        P("set title '%s'\neval epar_check('retrieval.csv', '(($0 >= %d && $0 <= %d) ? log($7)/log(2) : NaN):17')\n"
          "if (epar_ok) {\nplot '%s' skip 1 every ::%d::%d using (log($7)/log(2)):9:17 with image\n" EPAR_PLOT_END,
          d->s[i].s.name, first[i], last[i], "retrieval.csv", first[i], last[i]);
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
    struct epar_table *lt = NULL, *rtt = NULL, *pt = NULL;
    int st = lm_study_build(c, plan, root, &lm);
    if (!st) st = ret_study_build(c, plan, root, &rt);
    else memset(&rt, 0, sizeof rt);
    if (!st && lm.n && !(lt = lm_table(c, &lm, &fr))) st = epar_err_set(EPAR_ENOMEM, "out of memory");
    if (!st && rt.n && !(rtt = ret_table(c, &rt, gf, gl))) st = epar_err_set(EPAR_ENOMEM, "out of memory");
    if (!st) pt = pairs_table(c, plan, root, &lm, &rt, &st);
    if (!st && lt) st = epar_exp_write_table(o, "extrapolation_bpc.csv", lt);
    if (!st && rtt) st = epar_exp_write_table(o, "retrieval.csv", rtt);
    if (!st && pt) st = epar_exp_write_table(o, "pairs.csv", pt);
    if (!st && lt) st = lm_figure(c, &lm, &fr, o);
    if (!st && rtt) st = ret_figure(c, &rt, gf, gl, o);
    if (!st && run_extra) json_object_set_new(run_extra, "extrapolation_study", study_json(c));
    epar_csv_free(lt);
    epar_csv_free(rtt);
    epar_csv_free(pt);
    lm_study_free(&lm);
    ret_study_free(&rt);
    return st;
}
