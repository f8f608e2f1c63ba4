/* What the reproduction report says of the verdicts, computed from the audit and the files beside it: the verdict
 * tallies, the SUMMARY sentences (SUMMARY.md, summary.json, README's quoted blocks), index.html's bottom line and the
 * reduced-benchmark banner (see report_int.h). */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/err.h"
#include "lib/publish.h"
#include "experiments/benchmark/bench_stage.h"
#include "experiments/report/report_int.h"

/* which proxy tasks the audited benchmark's models learned (main_table.csv `learned`, of nm mechanisms, beyond
 * chance by z standard errors: both from its run.json), as a sentence; "" when the table or its column is absent */
void epar_report_learned_sentence(const char *out_root, int nm, double z, char *buf, size_t n)
{
    char p[4200], yes[1024] = "", no[512] = "";
    struct epar_table *t = NULL;
    buf[0] = '\0';
    if (nm <= 0 || !(z > 0)) return;   /* a run.json from before the learned column */
    snprintf(p, sizeof p, "%s/benchmark/main_table.csv", out_root);
    if (access(p, R_OK) != 0 || epar_csv_read(p, &t) || epar_csv_col(t, "learned") < 0) {
        epar_csv_free(t);
        epar_err_clear();
        return;
    }
    for (size_t r = 0; r < t->nrows; r++) {
        double l = epar_csv_get(t, r, "learned");
        const char *task = epar_csv_get_str(t, r, "task");
        if (isnan(l) || !task) continue;
        char *dst = l > 0 ? yes : no;
        size_t sz = l > 0 ? sizeof yes : sizeof no, len = strlen(dst);
        if (l > 0) snprintf(dst + len, sz - len, "%s%s (%d of %d)", len ? ", " : "", task, (int)l, nm);
        else snprintf(dst + len, sz - len, "%s%s", len ? ", " : "", task);
    }
    epar_csv_free(t);
    if (!*yes && !*no) return;
    snprintf(buf, n, " Learned at this budget (mechanisms beating the best constant answer on the evaluation items by "
                     "more than %g standard errors): %s.%s%s%s", z, *yes ? yes : "none",
             *no ? " Learned by no mechanism: " : "", no, *no ? "; every model answers like a constant there, so the "
                                                             "proxy claims on these tasks are inconclusive." : "");
}


/* the claim sections in first-appearance order: id of the i-th (NULL past the end) */
const char *epar_report_nth_section(const struct epar_audit *a, int k)
{
    for (size_t i = 0; i < a->n; i++) {
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = !strcmp(a->rows[j].section, a->rows[i].section);
        if (!seen && k-- == 0) return a->rows[i].section;
    }
    return NULL;
}


static void sum_add(struct epar_report_summary *s, const char *block, const char *id, int is_static,
                    const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void sum_add(struct epar_report_summary *s, const char *block, const char *id, int is_static,
                    const char *fmt, ...)
{
    if (s->n >= SUM_MAX_LINES) return;
    struct epar_report_sum_line *l = &s->line[s->n];
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&l->text, fmt, ap) < 0) l->text = NULL;
    va_end(ap);
    if (!l->text) return;
    l->block = block;
    snprintf(l->id, sizeof l->id, "%s", id);
    l->is_static = is_static;
    s->n++;
}

/* a claim measured on the trained benchmark (its input is benchmark/run.json): not static */
static int reads_benchmark(const struct epar_audit_row *r)
{
    return r->input && !strncmp(r->input, "benchmark/", 10);
}

/* text for markdown: the characters markdown would take as marks, escaped */
static void md_text(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; s && *s && k + 3 < n; s++) {
        if (strchr("\\`*_[]<>|", *s)) out[k++] = '\\';
        out[k++] = *s;
    }
    out[k] = '\0';
}

/* "42–46" for consecutive seeds, else "42, 45, 49" */
static void seeds_text(const long *s, int n, char *out, size_t len)
{
    int run = n > 1;
    for (int i = 1; i < n; i++) run &= s[i] == s[i - 1] + 1;
    out[0] = '\0';
    if (run) {
        snprintf(out, len, "%ld–%ld", s[0], s[n - 1]);
        return;
    }
    for (int i = 0; i < n; i++) snprintf(out + strlen(out), len - strlen(out), "%s%ld", i ? ", " : "", s[i]);
}

/* "6 reproduced, 2 not reproduced" */
static void counts_text(const int *cnt, char *out, size_t n)
{
    out[0] = '\0';
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++)
        if (cnt[v])
            snprintf(out + strlen(out), n - strlen(out), "%s%d %s", out[0] ? ", " : "", cnt[v],
                     epar_audit_verdict_name((enum epar_audit_verdict)v));
}

json_t *epar_report_counts_json(const int *cnt)
{
    json_t *o = json_object();
    for (int v = 0; o && v < EPAR_AUDIT_VERDICT_COUNT; v++)
        json_object_set_new(o, epar_audit_verdict_name((enum epar_audit_verdict)v), json_integer(cnt[v]));
    return o;
}

/* the claims of section sec (NULL: all) that read the benchmark (bench 1) or not (0), or either (-1): counts */
int epar_report_count_rows(const struct epar_audit *a, const char *sec, int bench, int *cnt)
{
    int n = 0;
    memset(cnt, 0, EPAR_AUDIT_VERDICT_COUNT * sizeof *cnt);
    for (size_t i = 0; i < a->n; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        if ((sec && strcmp(r->section, sec)) || (bench >= 0 && reads_benchmark(r) != bench)) continue;
        cnt[r->verdict]++;
        n++;
    }
    return n;
}

/* "`id`: reported R, measured M" for up to `max` claims of the verdicts in `want` (sec NULL: any section), then how
 * many more; "" when none */
static void claim_examples(const struct epar_audit *a, const char *sec, int bench, const int *want, int nwant, int max,
                           char *out, size_t n)
{
    int shown = 0, more = 0;
    out[0] = '\0';
    for (size_t i = 0; i < a->n; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        int ok = 0;
        for (int k = 0; k < nwant; k++) ok |= r->verdict == (enum epar_audit_verdict)want[k];
        if (!ok || (sec && strcmp(r->section, sec)) || (bench >= 0 && reads_benchmark(r) != bench)) continue;
        if (shown >= max) { more++; continue; }
        char rep[256], meas[512], m[512];
        md_text(r->reported, rep, sizeof rep);
        epar_report_shown_measured(r, m, sizeof m);
        md_text(m, meas, sizeof meas);
        snprintf(out + strlen(out), n - strlen(out), "%s`%s`: reported %s, measured %s", shown ? "; " : "", r->id, rep,
                 *meas ? meas : "nothing");
        shown++;
    }
    if (more) snprintf(out + strlen(out), n - strlen(out), "; %d more in `report/claims.csv`", more);
}

/* a relative difference as a signed percentage: one decimal, more when that would print a nonzero value as 0 */
static void pct_text(double v, char *out, size_t n)
{
    int dec = 1;
    snprintf(out, n, "%+.*f %%", dec, 100 * v);
    while (v != 0 && strtod(out, NULL) == 0 && dec < 12) snprintf(out, n, "%+.*f %%", ++dec, 100 * v);
    if (v == 0) snprintf(out, n, "0.0 %%");
}

/* the benchmark block: what the trained proxies gave (main_table.csv, cost.csv of <out>/benchmark) */
static void summary_benchmark(struct epar_report_summary *s, const char *out_root, const struct epar_runrec_bench *br)
{
    char p[4200], buf[4096];
    epar_report_learned_sentence(out_root, br->n_mechanisms, br->learned_z, buf, sizeof buf);
    if (*buf) sum_add(s, "benchmark", "learned", 0, "-%s", buf);
    struct epar_table *t = NULL;
    snprintf(p, sizeof p, "%s/benchmark/main_table.csv", out_root);
    if (access(p, R_OK) == 0 && epar_csv_read(p, &t) == EPAR_OK && epar_csv_col(t, "enhanced_vs_best_rel") >= 0 &&
        epar_csv_col(t, "best_baseline") >= 0) {
        char best[2048] = "", every[2048] = "";
        int beats = 0, beaten = 0, tasks = 0;
        for (size_t r = 0; r < t->nrows; r++) {
            const char *task = epar_csv_get_str(t, r, "task"), *bb = epar_csv_get_str(t, r, "best_baseline");
            double rel = epar_csv_get(t, r, "enhanced_vs_best_rel");
            if (!task) continue;
            tasks++;
            char pc[32];
            pct_text(rel, pc, sizeof pc);
            if (isfinite(rel))
                snprintf(best + strlen(best), sizeof best - strlen(best), "%s%s %s (%s)", *best ? ", " : "", task, pc,
                         bb ? bb : "?");
            double nb = epar_csv_get(t, r, "enhanced_beats"), nw = epar_csv_get(t, r, "enhanced_beaten_holm"),
                   nbase = epar_csv_get(t, r, "baselines");
            beats += isfinite(nb) && isfinite(nbase) && nb == nbase && nbase > 0;
            if (isfinite(nw) && nw > 0) {
                beaten++;
                snprintf(every + strlen(every), sizeof every - strlen(every), "%s%s: %d of %d baselines",
                         *every ? "; " : "", task, (int)nw, (int)nbase);
            }
        }
        if (*best)
            sum_add(s, "benchmark", "versus_best", 0,
                    "- EPAR enhanced against the best baseline of each task (the baseline with the best mean, chosen "
                    "after the results, so descriptive only; relative difference of the means, positive = better, "
                    "for bits per character too): %s.", best);
        if (epar_csv_col(t, "enhanced_beats") >= 0)
            sum_add(s, "benchmark", "versus_every", 0,
                    "- Against every baseline (the pre-registered paired comparisons, `comparisons.csv`): EPAR enhanced "
                    "is above each baseline at the audit's level on %d of %d tasks; a baseline is better after the Holm "
                    "adjustment on %d task%s%s%s%s.", beats, tasks, beaten, beaten == 1 ? "" : "s", beaten ? " (" : "",
                    every, beaten ? ")" : "");
    }
    epar_csv_free(t);
    t = NULL;
    snprintf(p, sizeof p, "%s/benchmark/cost.csv", out_root);
    if (access(p, R_OK) == 0 && epar_csv_read(p, &t) == EPAR_OK && epar_csv_col(t, "overhead_vs_none") >= 0 &&
        epar_csv_col(t, "overhead_vs_none_hw") >= 0 && epar_csv_col(t, "attention_share") >= 0)
        for (size_t r = 0; r < t->nrows; r++) {
            const char *m = epar_csv_get_str(t, r, "mechanism");
            if (!m || strcmp(m, "epar-enhanced")) continue;
            double on = epar_csv_get(t, r, "overhead_vs_none"), onh = epar_csv_get(t, r, "overhead_vs_none_hw"),
                   ob = epar_csv_get(t, r, "overhead_vs_basic"), obh = epar_csv_get(t, r, "overhead_vs_basic_hw"),
                   share = epar_csv_get(t, r, "attention_share"), pairs = epar_csv_get(t, r, "repeats"),
                   gens = epar_csv_col(t, "generations") >= 0 ? epar_csv_get(t, r, "generations") : NAN;
            if (!isfinite(on)) break;
            char pn[32], pb[32];
            pct_text(on, pn, sizeof pn);
            pct_text(ob, pb, sizeof pb);
            sum_add(s, "benchmark", "cost", 0,
                    "- The training step's CPU time with EPAR enhanced: %s (± %.1f %%) over `none` and %s (± %.1f %%) "
                    "over the basic form (half-widths of the intervals across %.0f generations of freshly set-up "
                    "models, %.0f pairs of adjacent steps); the position mechanism and attention are %.0f %% "
                    "of this small model's step (`cost.csv`: scale an overhead by that share for another model). These "
                    "are timings of the thread's CPU time: they differ a little between runs.",
                    pn, 100 * onh, pb, 100 * obh, gens, pairs, 100 * share);
            break;
        }
    epar_csv_free(t);
    epar_err_clear();
}

/* the sentences, from the audit and the files beside it */
void epar_report_summary_lines(struct epar_report_summary *s, const char *out_root, const struct epar_audit *a,
                               const struct epar_report_info *info, const struct epar_runrec_audit *ar,
                               const struct epar_runrec_bench *br, int have_bench, const struct epar_table *im)
{
    char counts[1024], ex[4096], seeds[256] = "", bseeds[256] = "";
    if (ar->n_seeds) seeds_text(ar->seeds, ar->n_seeds, seeds, sizeof seeds);
    if (have_bench) seeds_text(br->parameters.seeds, br->parameters.n_seeds, bseeds, sizeof bseeds);
    int cnt[EPAR_AUDIT_VERDICT_COUNT];
    epar_report_count_rows(a, NULL, -1, cnt);
    counts_text(cnt, counts, sizeof counts);
    char bench[512];
    /* a staged grid (benchmark/stages.json, more than one look): its looks' seeds and its cells, not the first look's
     * seeds alone (the line stays under README's 300 characters) */
    json_t *sj = have_bench ? epar_bench_stage_record(out_root) : NULL, *looks = json_object_get(sj, "looks");
    if (have_bench && json_array_size(looks) > 1) {
        char seen[128] = "";   /* every look's seeds: "3, 5, 8" */
        for (size_t k = 0; k < json_array_size(looks); k++) {
            size_t l = strlen(seen);
            snprintf(seen + l, sizeof seen - l, "%s%d", k ? ", " : "",
                     (int)json_integer_value(json_object_get(json_array_get(looks, k), "seeds")));
        }
        snprintf(bench, sizeof bench, "the `%s` benchmark (staged at %s seeds; %d cells)",
                 br->budget.name ? br->budget.name : "?", seen, (int)json_integer_value(json_object_get(sj, "cells")));
    } else if (have_bench)
        snprintf(bench, sizeof bench, "the `%s` benchmark (seeds %s)", br->budget.name ? br->budget.name : "?", bseeds);
    else
        snprintf(bench, sizeof bench, "no trained benchmark");
    json_decref(sj);
    sum_add(s, "summary", "total", 0, "With `%s` (preset `%s`%s%s) and %s, epar %s judges **%zu claims**: %s.",
            info->protocol_path, ar->preset ? ar->preset : info->preset ? info->preset : "?", *seeds ? ", seeds " : "",
            seeds, bench, info->version, a->n, counts);
    /* one line per section, over the claims that need no benchmark */
    const char *sec;
    static const int fails[] = {EPAR_AUDIT_NOT_REPRODUCED, EPAR_AUDIT_PARTLY};
    for (int k = 0; (sec = epar_report_nth_section(a, k)); k++) {
        int n = epar_report_count_rows(a, sec, 0, cnt);
        if (!n) continue;
        counts_text(cnt, counts, sizeof counts);
        claim_examples(a, sec, 0, fails, 2, 4, ex, sizeof ex);
        char title[256];
        md_text(epar_report_group_title(sec), title, sizeof title);
        char id[64];
        snprintf(id, sizeof id, "section_%s", sec);
        sum_add(s, "summary", id, 1, "- **%s**: %d claim%s, %s%s%s.", title, n, n == 1 ? "" : "s", counts,
                *ex ? ". Not or partly reproduced: " : "", ex);
        /* after the retention figures: whether one (beta, gamma) gives them all (implied_parameters.csv) */
        if (!strcmp(sec, "retention") && im) {
            double b = NAN, g = NAN;
            int all = 0, total = 0;
            for (size_t r = 0; r < im->nrows; r++) {
                const char *q = epar_csv_get_str(im, r, "quantity");
                if (!q) continue;
                if (!strcmp(q, "implied_beta")) b = epar_csv_get(im, r, "value");
                if (!strcmp(q, "implied_gamma")) g = epar_csv_get(im, r, "value");
                if (isfinite(epar_csv_get(im, r, "reported")) && !strncmp(q, "implied_", 8)) {
                    total++;
                    all += !strcmp(epar_csv_get_str(im, r, "matches_reported"), "yes");
                }
            }
            if (total && isfinite(b) && isfinite(g))
                sum_add(s, "summary", "retention_implied", 1,
                        "- With the (beta, gamma) that the two printed gains imply (beta %.4g, gamma %.4g), %d of the "
                        "%d other printed retention figures come out, so %s (`report/implied_parameters.csv`).",
                        b, g, all, total, all == total ? "one setting gives all four" : "no single (beta, gamma) gives all four");
        }
    }
    /* the figures of another run: how many miss, beside how many would by chance */
    int np = 0, nrep = 0, nnot = 0;
    double level = NAN;
    for (size_t i = 0; i < a->n; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        if (!r->rule || strncmp(r->rule, "prediction", 10) || reads_benchmark(r)) continue;
        const char *l = strstr(r->rule, "(level ");
        if (l) level = strtod(l + 7, NULL);
        np++;
        nrep += r->verdict == EPAR_AUDIT_REPRODUCED;
        nnot += r->verdict == EPAR_AUDIT_NOT_REPRODUCED;
    }
    if (np && isfinite(level))
        sum_add(s, "summary", "prediction", 1,
                "- Figures of another run (the reference's committed numbers and the paper's stochastic figures, rule "
                "`prediction`): %d of %d lie in the prediction interval of a new run, %d do not; at level %g about "
                "%.1f (%d × %.2g) would miss by chance even if every figure held.",
                nrep, np, nnot, level, np * (1 - level), np, 1 - level);
    /* the trained proxies */
    int nproxy = epar_report_count_rows(a, NULL, 1, cnt);
    if (nproxy) {
        counts_text(cnt, counts, sizeof counts);
        if (!have_bench) {
            sum_add(s, "summary", "proxy", 0,
                    "- **Trained proxies** (`proxy_*`): no trained benchmark in this output folder (`epar run-all` "
                    "without `--no-benchmark` trains it): %d claims, %s.", nproxy, counts);
        } else {
            static const int rep[] = {EPAR_AUDIT_REPRODUCED}, not[] = {EPAR_AUDIT_NOT_REPRODUCED, EPAR_AUDIT_PARTLY};
            char yes[4096], no[4096];
            claim_examples(a, NULL, 1, rep, 1, 8, yes, sizeof yes);
            claim_examples(a, NULL, 1, not, 2, 8, no, sizeof no);
            int nb = 0, nbh = 0;
            for (size_t i = 0; i < a->n; i++)
                if (reads_benchmark(&a->rows[i]) && !strncmp(a->rows[i].rule, "beats_all", 9)) {
                    nb++;
                    nbh += a->rows[i].verdict == EPAR_AUDIT_REPRODUCED;
                }
            sum_add(s, "summary", "proxy", 0,
                    "- **Trained proxies** (`proxy_*`: small Transformers trained here, one per position mechanism, "
                    "task and seed, budget `%s`, %lld cells): %d claims, %s. Of the %d claims that EPAR beats "
                    "every baseline (rule `beats_all`: the enhanced form, and the basic one for the main table's Basic "
                    "column; measured: its smallest improvement over the baselines, with its interval), %d %s "
                    "reproduced. Reproduced: %s. Not or partly reproduced: %s.",
                    br->budget.name ? br->budget.name : "?", (long long)br->cells, nproxy, counts, nb, nbh,
                    nbh == 1 ? "is" : "are",
                    *yes ? yes : "none", *no ? no : "none");
            summary_benchmark(s, out_root, br);
        }
    }
}

/* "3 need >= 2 seeds, 1 inconclusive" for the verdicts that do not judge (inconclusive, ill-posed, needs seeds, not
 * reproducible here, stale); "" when none */
static void open_text(const int *cnt, char *out, size_t n)
{
    static const struct {
        enum epar_audit_verdict v;
        const char *words;
    } open[] = {{EPAR_AUDIT_NEEDS_SEEDS, "need >= 2 seeds"},
                {EPAR_AUDIT_INCONCLUSIVE, "inconclusive"},
                {EPAR_AUDIT_NOT_HERE, "not reproducible here"},
                {EPAR_AUDIT_ILL_POSED, "ill-posed"},
                {EPAR_AUDIT_STALE, "stale"}};
    out[0] = '\0';
    for (size_t i = 0; i < sizeof open / sizeof *open; i++)
        if (cnt[open[i].v])
            snprintf(out + strlen(out), n - strlen(out), "%s%d %s", *out ? ", " : "", cnt[open[i].v], open[i].words);
}

/* "[id](#claim-id)" for up to max claims of section sec (NULL: any) failing (not or partly reproduced) and, when
 * rule is not NULL, of that rule */
static void failing_links(const struct epar_audit *a, const char *sec, const char *rule, int max, char *out, size_t n)
{
    int shown = 0;
    out[0] = '\0';
    for (size_t i = 0; i < a->n && shown < max; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        if ((sec && strcmp(r->section, sec)) || (rule && (!r->rule || strncmp(r->rule, rule, strlen(rule)))) ||
            (r->verdict != EPAR_AUDIT_NOT_REPRODUCED && r->verdict != EPAR_AUDIT_PARTLY))
            continue;
        snprintf(out + strlen(out), n - strlen(out), "%s[%s](#claim-%s)", shown++ ? ", " : "", r->id, r->id);
    }
}

void epar_report_bottom_line(struct epar_report_summary *s, const struct epar_audit *a)
{
    char open[256], ex[1024];
    /* EPAR against every baseline, on the trained proxies (rule beats_all) */
    int cnt[EPAR_AUDIT_VERDICT_COUNT] = {0}, nb = 0;
    const char *first = NULL;
    for (size_t i = 0; i < a->n; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        if (!r->rule || strncmp(r->rule, "beats_all", 9)) continue;
        cnt[r->verdict]++;
        nb++;
        if (!first) first = r->section;
    }
    if (nb) {
        int hold = cnt[EPAR_AUDIT_REPRODUCED], fail = cnt[EPAR_AUDIT_NOT_REPRODUCED] + cnt[EPAR_AUDIT_PARTLY];
        open_text(cnt, open, sizeof open);
        failing_links(a, NULL, "beats_all", 2, ex, sizeof ex);
        char lead[256];
        if (hold == nb) snprintf(lead, sizeof lead, "EPAR beats every baseline in all %d of its claims", nb);
        else if (hold) snprintf(lead, sizeof lead, "EPAR beats every baseline in %d of the %d claims that say so", hold, nb);
        else if (fail) snprintf(lead, sizeof lead, "EPAR beats every baseline in none of the %d claims that say so", nb);
        else snprintf(lead, sizeof lead, "whether EPAR beats every baseline cannot be judged from this run (%d claims)", nb);
        char tail[1536] = "";
        if (fail) snprintf(tail, sizeof tail, "%d not reproduced (%s)", fail, ex);
        if (*open) snprintf(tail + strlen(tail), sizeof tail - strlen(tail), "%s%s", *tail ? ", " : "", open);
        sum_add(s, "bottom", "beats_all", 0, "**[On the trained proxies](#claims-%s)** — %s%s%s.", first, lead,
                *tail && hold != nb ? ": " : "", hold != nb ? tail : "");
    }
    const char *sec;
    for (int k = 0; (sec = epar_report_nth_section(a, k)); k++) {
        int n = epar_report_count_rows(a, sec, -1, cnt);
        int hold = cnt[EPAR_AUDIT_REPRODUCED] + cnt[EPAR_AUDIT_TRIVIAL], triv = cnt[EPAR_AUDIT_TRIVIAL];
        int fail = cnt[EPAR_AUDIT_NOT_REPRODUCED] + cnt[EPAR_AUDIT_PARTLY], rest = n - hold - fail;
        open_text(cnt, open, sizeof open);
        failing_links(a, sec, NULL, 2, ex, sizeof ex);
        char what[2048];
        if (!fail && hold && !rest)
            snprintf(what, sizeof what, "%s: %s", triv == n ? "holds by construction" : "holds",
                     n == 1 ? "its claim holds" : triv == n ? "every claim is true by construction"
                                                            : "every claim is reproduced");
        else if (!fail && hold)
            snprintf(what, sizeof what, "holds where it can be judged: %d of %d claims, the other %d cannot be judged "
                     "here (%s)", hold, n, rest, open);
        else if (fail && hold)
            snprintf(what, sizeof what, "holds in part: %d of %d claims hold, %d do not (%s)%s%s", hold, n, fail, ex,
                     rest ? ", " : "", open);
        else if (fail)
            snprintf(what, sizeof what, "does not hold%s: %d of %d claim%s not reproduced (%s)%s%s",
                     rest ? " where it can be judged" : "", fail, n,
                     n == 1 ? "" : "s", ex, rest ? ", " : "", open);
        else
            snprintf(what, sizeof what, "cannot be judged here: %s", open);
        if (triv && hold != triv && (fail || rest))
            snprintf(what + strlen(what), sizeof what - strlen(what), "; %d of those that hold %s true by construction",
                     triv, triv == 1 ? "is" : "are");
        else if (triv && triv == hold && hold < n)
            snprintf(what + strlen(what), sizeof what - strlen(what), "; those that hold are true by construction");
        char id[64];
        snprintf(id, sizeof id, "bottom_%s", sec);
        sum_add(s, "bottom", id, 0, "**[%s](#claims-%s)** — %s.", epar_report_group_plain(sec), sec, what);
    }
}

void epar_report_banner_html(FILE *f, const char *banner)
{
    const char *c = strchr(banner, ':');
    size_t n = c ? (size_t)(c - banner) + 1 : 0;
    fputs("<strong>", f);
    epar_pub_htmln(f, banner, n);
    fputs("</strong>", f);
    epar_pub_html(f, banner + n);
}

int epar_exp_report_banner(const char *out_root, const struct epar_audit *a, char *buf, size_t n)
{
    char why[512];
    buf[0] = '\0';
    if (!epar_runrec_reduced_at(out_root, why, sizeof why)) return 0;
    int cnt[EPAR_AUDIT_VERDICT_COUNT];
    int nb = epar_report_count_rows(a, NULL, 1, cnt);
    snprintf(buf, n, "Reduced benchmark: the %d claim%s measured on trained models come%s from %s, not from a "
             "reproduction run; %s verdicts only exercise the machinery. For the real ones run 'epar benchmark "
             "--budget quick' (or 'epar run-all') with the whole grid.", nb, nb == 1 ? "" : "s", nb == 1 ? "s" : "",
             why, nb == 1 ? "its" : "their");
    return 1;
}

void epar_report_summary_free(struct epar_report_summary *s)
{
    for (int i = 0; i < s->n; i++) free(s->line[i].text);
    s->n = 0;
}
