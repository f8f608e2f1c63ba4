/* The length-extrapolation study of epar benchmark, gathered from the cell files, and its statistics across the seeds
 * (per seed values, their means, sds and paired intervals): what bench_extrap_write.c formats. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "lib/stats.h"
#include "experiments/benchmark/bench_extrap_int.h"



double *epar_bx_lmv(const struct lm_study *d, int i, int s, int e, int b)
{
    return d->s[i].v + (((size_t)s * d->NL + e) * NBIN + b);
}

int epar_bx_lm_find(const struct lm_study *d, const char *name)
{
    for (int i = 0; i < d->n; i++)
        if (!strcmp(d->s[i].s.name, name)) return i;
    return -1;
}


/* the registry: the trained mechanisms' own series, then the variants, then the arms (of mechanisms with cells) */
int epar_bx_lm_study_build(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
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
            int n = pass == 2 ? (c->mvar[m].name[0] ? 0 : epar_bx_cell_arms(x, c->mech[m], sv, EPAR_BX_MAX_FT))
                             : epar_bx_cell_series(x, c->mech[m], epar_bench_mech_name(c, m), sv, EPAR_BX_MAX_SERIES);
            for (int i = pass == 1 ? 1 : 0; i < (pass == 0 ? 1 : n) && d->n < cap; i++) {
                struct lm_series *ls = &d->s[d->n++];
                ls->s = sv[i];
                ls->m = m;
                ls->v = malloc((size_t)S * NL * NBIN * sizeof *ls->v);
                ls->att = malloc((size_t)S * NL * 2 * sizeof *ls->att);
                ls->ref = malloc((size_t)S * sizeof *ls->ref);
                ls->H = malloc((size_t)S * sizeof *ls->H);
                if (!ls->v || !ls->att || !ls->ref || !ls->H) return epar_err_set(EPAR_ENOMEM, "out of memory");
                for (size_t q = 0; q < (size_t)S * NL * NBIN; q++) ls->v[q] = NAN;
                for (size_t q = 0; q < (size_t)S * NL * 2; q++) ls->att[q] = NAN;
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
                int i = epar_bx_lm_find(d, row->series), e = -1;
                for (int q = 0; q < NL; q++)
                    if (d->lengths[q] == row->length) e = q;
                if (i < 0 || e < 0 || d->s[i].m != m || !row->defined) continue;
                struct lm_series *ls = &d->s[i];
                ls->present = 1;
                *epar_bx_lmv(d, i, s, e, 0) = row->bpc;
                *epar_bx_lmv(d, i, s, e, 1) = row->past;
                for (int j = 0; j < row->n_bucket && j < EPAR_BX_MAX_BUCKETS; j++) *epar_bx_lmv(d, i, s, e, 2 + j) = row->bucket[j];
                ls->att[((size_t)s * NL + e) * 2] = row->entropy;
                ls->att[((size_t)s * NL + e) * 2 + 1] = row->uniformity;
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
        int from = d->s[i].s.ft ? epar_bx_lm_find(d, d->s[i].s.base) : i;
        for (int s = 0; s < S && from >= 0; s++) d->s[i].ref[s] = *epar_bx_lmv(d, from, s, e1, 0);
    }
    return st;
}

void epar_bx_lm_study_free(struct lm_study *d)
{
    for (int i = 0; d->s && i < d->n; i++) {
        free(d->s[i].v);
        free(d->s[i].att);
        free(d->s[i].ref);
        free(d->s[i].H);
    }
    free(d->s);
    d->s = NULL;
}

/* per seed: bpc of bin b at length e, and the lost-gain share (b - b(1)) / (H - b(1)); 1 when every seed has both */
int epar_bx_lm_values(const struct lm_study *d, int i, int e, int b, double *bpc, double *share, double *rel)
{
    int ok = 1;
    for (int s = 0; s < d->S; s++) {
        const struct lm_series *ls = &d->s[i];
        bpc[s] = *epar_bx_lmv(d, i, s, e, b);
        share[s] = (bpc[s] - ls->ref[s]) / (ls->H[s] - ls->ref[s]);
        if (rel) rel[s] = (bpc[s] - ls->ref[s]) / ls->ref[s];
        ok &= isfinite(bpc[s]);
    }
    return ok;
}

/* a pair's side: a series, or "a|b|c" the per-seed mean of a group's (every member defined); 0: absent or undefined */
int epar_bx_group_values(const struct lm_study *d, const char *name, int e, int b, double *bpc, double *share)
{
    char g[64];
    double x[EPAR_MAX_SEEDS], y[EPAR_MAX_SEEDS];
    int n = 0, ok = 1;
    snprintf(g, sizeof g, "%s", name);
    for (int s = 0; s < d->S; s++) bpc[s] = share[s] = 0;
    for (char *save = NULL, *m = strtok_r(g, "|", &save); m && ok; m = strtok_r(NULL, "|", &save)) {
        int i = epar_bx_lm_find(d, m);
        ok = i >= 0 && epar_bx_lm_values(d, i, e, b, x, y, NULL);
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
int epar_bx_bin_exists(int b, int T, int L)
{
    return b == 0 || (b == 1 && T > L) || (b >= 2 && b - 2 < n_buckets(T, L));
}

void epar_bx_att_stats(const struct lm_study *d, int i, int e, int q, double level, struct att_stats *x)
{
    double v[EPAR_MAX_SEEDS], r[EPAR_MAX_SEEDS];
    int e1 = -1, from = d->s[i].s.ft ? epar_bx_lm_find(d, d->s[i].s.base) : i, ok = from >= 0;
    for (int k = 0; k < d->NL; k++)
        if (d->lengths[k] == d->L) e1 = k;
    ok &= e1 >= 0;
    for (int s = 0; s < d->S; s++) {
        v[s] = d->s[i].att[((size_t)s * d->NL + e) * 2 + q];
        r[s] = ok ? v[s] - d->s[from].att[((size_t)s * d->NL + e1) * 2 + q] : NAN;
        ok &= isfinite(v[s]) && isfinite(r[s]);
    }
    x->ok = ok;
    epar_stats_paired(r, ok ? d->S : 0, level, &x->pr);
    epar_stats_mean_sd(v, ok ? (size_t)d->S : 0, &x->m, &x->sd);
    epar_stats_mean_sd(r, ok ? (size_t)d->S : 0, &x->mr, &x->sr);
}

void epar_bx_lm_stats(const struct lm_study *d, int i, int e, int b, double level, struct lm_stats *x)
{
    double bpc[EPAR_MAX_SEEDS], sh[EPAR_MAX_SEEDS], rl[EPAR_MAX_SEEDS];
    int ok = x->ok = epar_bx_lm_values(d, i, e, b, bpc, sh, rl);
    epar_stats_paired(sh, ok ? d->S : 0, level, &x->ps);
    epar_stats_paired(rl, ok ? d->S : 0, level, &x->pr);
    epar_stats_mean_sd(bpc, ok ? (size_t)d->S : 0, &x->mb, &x->sb);
    epar_stats_mean_sd(sh, ok ? (size_t)d->S : 0, &x->msh, &x->ssh);
    epar_stats_mean_sd(rl, ok ? (size_t)d->S : 0, &x->mr, &x->sr);
}



void epar_bx_ret_study_free(struct ret_study *d)
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

int epar_bx_ret_study_build(const struct epar_bench_cfg *c, const struct epar_bench_plan *plan, const char *root,
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
            int n = epar_bx_cell_series(x, c->mech[m], epar_bench_mech_name(c, m), sv, EPAR_BX_MAX_SERIES);
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
void epar_bx_depth_bin(int b, int nb, int P, int *dlo, int *dhi)
{
    int plo = (int)(((long)b * P + nb - 1) / nb), phi = (int)(((long)(b + 1) * P + nb - 1) / nb) - 1;
    *dlo = P - phi;
    *dhi = P - plo;
}

/* per seed: the accuracy over distances [dlo, dhi] (NaN: no answer there, or undefined) */
long epar_bx_acc_values(const long *const *correct, const long *const *scored, int S, int stride, int dlo, int dhi,
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

void epar_bx_ret_stats(const struct ret_study *d, int i, int e, int dlo, int dhi, int in_grid, double level,
                      struct ret_stats *x)
{
    double acc[EPAR_MAX_SEEDS];
    x->answers = !in_grid ? 0 : epar_bx_acc_values((const long *const *)d->s[i].correct + e,
                                           (const long *const *)d->s[i].scored + e, d->S, d->NL, dlo, dhi, acc);
    int ok = in_grid;
    for (int s = 0; s < d->S && ok; s++) ok = isfinite(acc[s]);
    x->ok = ok;
    epar_stats_mean_sd(acc, ok ? (size_t)d->S : 0, &x->mean, &x->sd);
    epar_stats_paired(acc, ok ? d->S : 0, level, &x->pr);
}


int epar_bx_pair_stats(const double *x, const double *y, int S, double level, struct epar_stats_paired *pr, double *mean,
                       double *sd)
{
    double dlt[EPAR_MAX_SEEDS];
    int ok = 1;
    for (int s = 0; s < S; s++) {
        dlt[s] = x[s] - y[s];
        ok &= isfinite(dlt[s]);
    }
    if (!ok) return 0;
    epar_stats_paired(dlt, S, level, pr);
    epar_stats_mean_sd(dlt, (size_t)S, mean, sd);
    return 1;
}
