#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/err.h"
#include "lib/plot.h"
#include "lib/posfx.h"
#include "common.h"
#include "report.h"

/* Paper-section titles of the claim groups (the "section" of each claim); unknown groups use their name. */
static const struct {
    const char *id, *title;
} group_titles[] = {
    {"thm1", "Theorem 1 and the lower bound (paper §4)"},
    {"retention", "Information retention of the enhanced form (paper §4)"},
    {"optimal", "Optimal position, consistency and ranking (paper §4.3)"},
    {"reference-optimal", "The reference's committed verification_report.txt (output/optimal)"},
    {"reference-parameter", "The reference's committed sensitivity CSVs (appendix, output/parameter)"},
    {"identities", "Identities the reference prints as measurements"},
    {"cost", "Cost of the position effect"},
    {"training", "Main results table (paper §5.2): trained 110M models"},
    {"when-to-use", "When to use EPAR (paper §5.4)"},
    {"seeds", "Statements of the other sources (seeds 001-004, epar compare)"},
};

static const char *group_title(const char *id)
{
    for (size_t i = 0; i < sizeof group_titles / sizeof *group_titles; i++)
        if (!strcmp(group_titles[i].id, id)) return group_titles[i].title;
    return id;
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- retention definitions ---- */

/* distinct sequence lengths: every experiments.<name>.length of the protocol and every posfx L of the claims */
static int collect_lengths(json_t *proto, int *Ls, int max)
{
    int n = 0;
    json_t *ex = json_object_get(proto, "experiments"), *sec, *c;
    const char *k;
    size_t i;
#define ADD(v)                                                                                                     \
    do {                                                                                                           \
        int v_ = (v), dup_ = 0;                                                                                    \
        for (int q_ = 0; q_ < n; q_++) dup_ |= Ls[q_] == v_;                                                       \
        if (!dup_ && v_ >= 4 && n < max) Ls[n++] = v_;                                                             \
    } while (0)
    json_object_foreach(ex, k, sec) if (json_is_integer(json_object_get(sec, "length")))
        ADD((int)json_integer_value(json_object_get(sec, "length")));
    json_array_foreach(json_object_get(proto, "claims"), i, c) {
        json_t *p = json_object_get(json_object_get(c, "measure"), "posfx");
        if (json_is_integer(json_object_get(p, "L"))) ADD((int)json_integer_value(json_object_get(p, "L")));
    }
#undef ADD
    for (int a = 1; a < n; a++) /* ascending */
        for (int b = a; b > 0 && Ls[b - 1] > Ls[b]; b--) { int t = Ls[b]; Ls[b] = Ls[b - 1]; Ls[b - 1] = t; }
    return n;
}

/* (beta, gamma) pairs: those of the presets (the paper's text and the reference code) */
static int collect_params(json_t *proto, double *beta, double *gamma, const char **name, int max)
{
    int n = 0;
    const char *k;
    json_t *p;
    json_object_foreach(json_object_get(proto, "presets"), k, p) {
        json_t *b = json_object_get(p, "beta"), *g = json_object_get(p, "gamma");
        if (!json_is_number(b) || !json_is_number(g) || n >= max) continue;
        beta[n] = json_number_value(b);
        gamma[n] = json_number_value(g);
        name[n++] = k;
    }
    return n;
}

static struct epar_table *retention_table(json_t *proto)
{
    struct epar_table *t = epar_csv_new("preset,beta,gamma,length,distance,d,basic_retention,enhanced_retention,gain");
    if (!t) return NULL;
    int Ls[16];
    int nL = collect_lengths(proto, Ls, 16);
    double beta[8], gamma[8];
    const char *pn[8];
    int np = collect_params(proto, beta, gamma, pn, 8);
    const char *dn[] = {"L/2", "L-1", "L"};
    for (int p = 0; p < np; p++)
        for (int l = 0; l < nL; l++)
            for (int k = 0; k < 3; k++) {
                double L = Ls[l], d = k == 0 ? L / 2 : k == 1 ? L - 1 : L;
                struct epar_posfx b = {EPAR_FORM_BASIC, 1, beta[p], gamma[p]}, e = b;
                e.form = EPAR_FORM_ENHANCED;
                double rb, re, g;
                if (epar_audit_posfx_quantity(EPAR_AUDIT_Q_RETENTION, &b, Ls[l], d, &rb) ||
                    epar_audit_posfx_quantity(EPAR_AUDIT_Q_RETENTION, &e, Ls[l], d, &re) ||
                    epar_audit_posfx_quantity(EPAR_AUDIT_Q_GAIN, &e, Ls[l], d, &g) ||
                    epar_csv_append(t, "sddisdddd", pn[p], beta[p], gamma[p], Ls[l], dn[k], d, rb, re, g)) {
                    epar_csv_free(t);
                    return NULL;
                }
            }
    return t;
}

/* reported value of a claim by id (NaN if absent) */
static double claim_reported(json_t *proto, const char *id)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(proto, "claims"), i, c)
        if (!strcmp(json_string_value(json_object_get(c, "id")), id))
        {
            json_t *r = json_object_get(c, "reported");
            double v, u;
            if (json_is_number(r)) return json_number_value(r);
            if (json_is_string(r) && epar_audit_printed_parse(json_string_value(r), &v, &u) == EPAR_OK) return v;
            return NAN;
        }
    return NAN;
}

/* ---- markdown ---- */

static void md_cell(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '|') fputs("\\|", f);
        else if (*s == '\n') fputc(' ', f);
        else fputc(*s, f);
    }
}

static void write_md_verdict_table(FILE *f, const struct epar_audit *a)
{
    fputs("| claim | reported | measured | sd | rule | accepted | verdict |\n|---|---|---|---|---|---|---|\n", f);
    for (size_t i = 0; i < a->n; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        fprintf(f, "| `%s` | ", r->id);
        md_cell(f, r->reported);
        fputs(" | ", f);
        md_cell(f, r->measured);
        fputs(" | ", f);
        md_cell(f, r->measured_sd);
        fputs(" | ", f);
        md_cell(f, r->rule);
        fputs(" | ", f);
        md_cell(f, r->accepted);
        fprintf(f, " | %s |\n", epar_audit_verdict_name(r->verdict));
    }
}

static void write_protocol_section(FILE *f, const char *out_root, const struct epar_report_info *info)
{
    fprintf(f, "## Protocol\n\nProtocol file `%s` (version %d), preset `%s`. Each experiment's `run.json` records "
               "the exact parameters; the main ones:\n\n",
            info->protocol_path, EPAR_PROTOCOL_VERSION, info->preset ? info->preset : "(the file's default)");
    fputs("| folder | section | status | form | alpha | beta | gamma | L | hidden | heads | batch | runs | seeds |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n", f);
    for (int s = 0; s < info->n_folders; s++) {
        const struct epar_report_folder *fo = &info->folders[s];
        if (!strcmp(fo->dir, "report")) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s/run.json", out_root, fo->dir);
        json_t *j = file_exists(p) ? json_load_file(p, 0, NULL) : NULL;
        json_t *prm = json_object_get(j, "parameters");
        fprintf(f, "| `%s/` | %s | ", fo->dir, fo->label);
        if (!prm) {
            fputs(file_exists(p) ? "run.json unreadable" : "not run", f);
            fputs(" | | | | | | | | | | |\n", f);
            json_decref(j);
            continue;
        }
        char seeds[256] = "";
        size_t i;
        json_t *sv;
        json_array_foreach(json_object_get(prm, "seeds"), i, sv)
            snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), "%s%lld", i ? "," : "",
                     (long long)json_integer_value(sv));
        const char *form = json_string_value(json_object_get(prm, "form"));
        fprintf(f, "ran | %s | %g | %g | %g | %lld | %lld | %lld | %lld | %lld | %s |\n", form ? form : "",
                json_number_value(json_object_get(prm, "alpha")), json_number_value(json_object_get(prm, "beta")),
                json_number_value(json_object_get(prm, "gamma")),
                (long long)json_integer_value(json_object_get(prm, "length")),
                (long long)json_integer_value(json_object_get(prm, "hidden")),
                (long long)json_integer_value(json_object_get(prm, "heads")),
                (long long)json_integer_value(json_object_get(prm, "batch")),
                (long long)json_integer_value(json_object_get(prm, "runs")), seeds);
        json_decref(j);
    }
    if (info->failed && info->failed[0]) {
        fputs("\nExperiments that FAILED in this run (their claims read older files or none):", f);
        for (const char *const *x = info->failed; *x; x++) fprintf(f, " `%s`", *x);
        fputc('\n', f);
    }
    fputs("\nStochastic numbers are run once per seed and reported as the mean across seeds with the sample sd "
          "across seeds (`measured_sd`); deterministic numbers (functions of alpha, beta, gamma, L) are computed "
          "exactly.\n\n",
          f);
}

/* The four retention figures against one (beta, gamma): the two gains determine beta, gamma
 * (epar_audit_implied_params); with those, the two retentions are computed and judged by the printed-figure rule,
 * as the claims are. Also the beta a basic retention of 2.8% would need, and the paper's own setting.
 * quantity,meaning,value,reported,matches_reported */
static struct epar_table *implied_table(json_t *proto)
{
    struct epar_table *t = epar_csv_new("quantity,meaning,value,reported,matches_reported");
    if (!t) return NULL;
    double rmid = claim_reported(proto, "retention_mid_gain"), rmax = claim_reported(proto, "retention_max_gain"),
           rbas = claim_reported(proto, "retention_max_basic"), renh = claim_reported(proto, "retention_max_enhanced");
    struct epar_audit_tol printed = {EPAR_AUDIT_PRINTED, 0, 0, 0, 0};
    int st = EPAR_OK;
#define ROW(q, meaning, v, rep, unit)                                                                            \
    do {                                                                                                         \
        struct epar_audit_meas m_ = {(v), 0, NAN, 0, NAN, NAN};                                                   \
        char acc_[128];                                                                                          \
        const char *yes = isfinite(rep) ? (epar_audit_judge(&printed, (rep), (unit), &m_, 0.95, acc_, sizeof acc_) == \
                                                   EPAR_AUDIT_HOLDS ? "yes" : "no")                               \
                                        : "";                                                                    \
        if (!st) st = epar_csv_append(t, "ssdds", q, meaning, (double)(v), (double)(rep), yes);                \
    } while (0)
    if (isfinite(rbas) && rbas > 0 && rbas < 1)
        ROW("beta_for_basic_retention", "beta a basic-form retention of the printed value at d = L needs (-ln r)",
            -log(rbas), NAN, 0.0);
    double b, g;
    if (isfinite(rmid) && isfinite(rmax) && epar_audit_implied_params(rmid, rmax, &b, &g) == EPAR_OK) {
        struct epar_posfx e = {EPAR_FORM_ENHANCED, 1, b, g}, bb = {EPAR_FORM_BASIC, 1, b, g};
        ROW("implied_beta", "beta implied by the two gains (d = L/2 and d = L)", b, NAN, 0.0);
        ROW("implied_gamma", "gamma implied by the two gains", g, NAN, 0.0);
        ROW("implied_enhanced_retention", "enhanced retention at d = L with the implied (beta, gamma)",
            epar_posfx_value(&e, 1, 1) / epar_posfx_value(&e, 0, 1), renh, 0.01);
        ROW("implied_basic_retention", "basic retention at d = L with the implied beta",
            epar_posfx_value(&bb, 1, 1) / epar_posfx_value(&bb, 0, 1), rbas, 0.001);
    }
#undef ROW
    if (st) { epar_csv_free(t); return NULL; }
    return t;
}

static void write_retention_section(FILE *f, const struct epar_table *rt, const struct epar_table *im, int figures)
{
    fputs("## Which definition of \"retention\" gives the paper's figures\n\n"
          "The paper gives x4.2 (mid range), x28.3 (maximum distance), 78% and 2.8% without a definition or "
          "parameters. `retention_definitions.csv` computes the pre-softmax retention P(d)/P(0) of both forms and "
          "their ratio (the gain) for every preset's (beta, gamma) and every sequence length of the protocol, at "
          "d = L/2, L-1 and L:\n\n"
          "| preset | beta | gamma | L | d | basic | enhanced | gain |\n|---|---|---|---|---|---|---|---|\n",
          f);
    for (size_t r = 0; r < rt->nrows; r++)
        fprintf(f, "| %s | %g | %g | %g | %s | %.4g | %.4g | %.4g |\n", epar_csv_get_str(rt, r, "preset"),
                epar_csv_get(rt, r, "beta"), epar_csv_get(rt, r, "gamma"), epar_csv_get(rt, r, "length"),
                epar_csv_get_str(rt, r, "distance"), epar_csv_get(rt, r, "basic_retention"),
                epar_csv_get(rt, r, "enhanced_retention"), epar_csv_get(rt, r, "gain"));
    fputc('\n', f);
    /* the sentences below come from implied_parameters.csv (implied_table): computed, never typed in */
    for (size_t r = 0; im && r < im->nrows; r++) {
        const char *q = epar_csv_get_str(im, r, "quantity");
        double v = epar_csv_get(im, r, "value"), rep = epar_csv_get(im, r, "reported");
        const char *m = epar_csv_get_str(im, r, "matches_reported");
        fprintf(f, "- %s: %.5g", epar_csv_get_str(im, r, "meaning"), v);
        if (isfinite(rep)) fprintf(f, " (reported %.4g; by the printed-figure rule: %s)", rep, m ? m : "");
        (void)q;
        fputs(".\n", f);
    }
    int all = 0, total = 0;
    for (size_t r = 0; im && r < im->nrows; r++)
        if (isfinite(epar_csv_get(im, r, "reported")) && !strncmp(epar_csv_get_str(im, r, "quantity"), "implied_", 8)) {
            total++;
            all += !strcmp(epar_csv_get_str(im, r, "matches_reported"), "yes");
        }
    if (total)
        fprintf(f, "- With the (beta, gamma) that the two gains imply, %d of the %d other printed figures come out, so "
                   "%s.\n", all, total, all == total ? "one setting does give all four figures"
                                                       : "no single (beta, gamma) gives all four figures");
    if (figures) fputs("\n![retention of both forms and the paper's values](retention_curves.png)\n", f);
    fputs("\nThe verdict of each figure (claims `retention_*`) uses the paper's own defaults; the other settings are "
          "named in the claim's note as alternatives, never used to change the verdict.\n\n",
          f);
}

/* The reference's known defects: the protocol's "reference_defects" (data, like the claims), each followed by the
 * verdicts and measured values of the claims that show it. */
static void write_defects(FILE *f, json_t *proto, const struct epar_audit *a)
{
    json_t *defs = json_object_get(proto, "reference_defects"), *d;
    size_t i;
    if (!json_array_size(defs)) return;
    fputs("## Known defects of the reference code (fixed in epar, not copied)\n\n", f);
    json_array_foreach(defs, i, d) {
        fprintf(f, "- **%s**: ", json_string_value(json_object_get(d, "title")));
        md_cell(f, json_string_value(json_object_get(d, "text")));
        size_t k;
        json_t *id;
        json_array_foreach(json_object_get(d, "shown_by"), k, id) {
            for (size_t r = 0; r < a->n; r++)
                if (!strcmp(a->rows[r].id, json_string_value(id))) {
                    fprintf(f, "%s`%s` %s", k ? "; " : " Shown by: ", a->rows[r].id,
                            epar_audit_verdict_name(a->rows[r].verdict));
                    if (*a->rows[r].measured) fprintf(f, ", measured %s", a->rows[r].measured);
                }
        }
        fputs(k ? ".\n" : "\n", f);
    }
    fputc('\n', f);
}

static int sort_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* PNG names of one folder, sorted; NULL-terminated, caller frees */
static char **list_pngs(const char *dir, int *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    size_t cap = 16;
    char **v = malloc(cap * sizeof *v);
    struct dirent *de;
    while (v && (de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".png") || de->d_name[0] == '.') continue;
        if ((size_t)*n + 1 >= cap) {
            char **w = realloc(v, (cap *= 2) * sizeof *v);
            if (!w) break;
            v = w;
        }
        v[(*n)++] = strdup(de->d_name);
    }
    closedir(d);
    if (v) {
        qsort(v, (size_t)*n, sizeof *v, sort_cmp);
        v[*n] = NULL;
    }
    return v;
}

static void free_list(char **v)
{
    for (char **p = v; p && *p; p++) free(*p);
    free(v);
}

static void write_findings(FILE *f, const char *out_root, const struct epar_audit *a, int figures)
{
    fputs("## Findings by section\n\n", f);
    for (size_t i = 0; i < a->n; i++) {
        const char *sec = a->rows[i].section;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = !strcmp(a->rows[j].section, sec);
        if (seen) continue;
        int cnt[EPAR_AUDIT_VERDICT_COUNT] = {0};
        for (size_t j = i; j < a->n; j++)
            if (!strcmp(a->rows[j].section, sec)) cnt[a->rows[j].verdict]++;
        fprintf(f, "### %s\n\n", group_title(sec));
        for (int v = 0, first = 1; v < EPAR_AUDIT_VERDICT_COUNT; v++)
            if (cnt[v]) {
                fprintf(f, "%s%d %s", first ? "" : ", ", cnt[v], epar_audit_verdict_name((enum epar_audit_verdict)v));
                first = 0;
            }
        fputs(".\n\n", f);
        for (size_t j = i; j < a->n; j++) {
            const struct epar_audit_row *r = &a->rows[j];
            if (strcmp(r->section, sec)) continue;
            fprintf(f, "- `%s` **%s**: ", r->id, epar_audit_verdict_name(r->verdict));
            md_cell(f, r->statement);
            fputs(" Reported ", f);
            md_cell(f, r->reported);
            if (*r->measured) {
                fputs(", measured ", f);
                md_cell(f, r->measured);
                if (*r->measured_sd) {
                    fputs(" (sd ", f);
                    md_cell(f, r->measured_sd);
                    fputc(')', f);
                }
            }
            fputs(". ", f);
            md_cell(f, r->note);
            fputc('\n', f);
        }
        /* the figures named by this section's claims */
        int header = 0;
        for (size_t j = i; j < a->n; j++) {
            const struct epar_audit_row *r = &a->rows[j];
            if (strcmp(r->section, sec)) continue;
            for (char **fg = r->figures; fg && *fg; fg++) {
                int dup = 0;
                for (size_t q = i; q < j && !dup; q++)
                    if (!strcmp(a->rows[q].section, sec))
                        for (char **h = a->rows[q].figures; h && *h && !dup; h++) dup = !strcmp(*h, *fg);
                for (char **h = r->figures; h < fg && !dup; h++) dup = !strcmp(*h, *fg);
                if (dup) continue;
                if (!header) { fputs("\nFigures:", f); header = 1; }
                char p[4096];
                snprintf(p, sizeof p, "%s/%s", out_root, *fg);
                /* the report's own figures are rendered after this file is written */
                int present = strncmp(*fg, "report/", 7) ? file_exists(p) : figures;
                if (present) fprintf(f, " [%s](../%s)", *fg, *fg);
                else fprintf(f, " %s (not produced in this run)", *fg);
            }
        }
        fputs(header ? "\n\n" : "\n", f);
    }
}

/* the trained proxy: what it is, what it cannot show, and which run is in <out>/benchmark */
static void write_proxy_section(FILE *f, const char *out_root)
{
    fputs("## The trained proxy (`epar benchmark`)\n\n"
          "The main table, the \"when to use\" figures and the training cost are claims about 110M-parameter "
          "Transformers trained on WikiText-103, WMT'14, SQuAD 2.0, GLUE and ArXiv; they stay **not reproducible here**. "
          "Each has a sibling claim (`proxy_<id>`) measured on a proxy: small causal Transformers (tens of thousands "
          "of parameters) trained on this machine, one per position mechanism and seed, on tasks that isolate what "
          "each row is about (character-level KJV text for perplexity, reversal for translation, associative recall "
          "and a needle at a controlled distance for QA, the majority symbol for classification, copying marked "
          "tokens of a sequence longer than 512 for long documents; shuffled words, 20% input noise and an "
          "order-free count for the conditions), with equal steps, tokens and learning rate for every mechanism and "
          "parameter counts within 1%. A proxy verdict says whether the *direction* of the paper's effect (EPAR "
          "beats the best baseline, hurts under noise, costs little) holds for small trained models, judged by the "
          "per-seed relative difference and its spread across seeds. It cannot show the size of the effect at 110M "
          "parameters, on the real data sets, with the paper's tuning, or the wall-clock share of attention in a "
          "large model (a small model spends relatively more time in attention, so its overheads are larger); with "
          "few seeds and short training most differences are inconclusive.", f);
    char p[4200];
    snprintf(p, sizeof p, "%s/benchmark/run.json", out_root);
    json_t *j = json_load_file(p, 0, NULL);
    if (!j) {
        fputs(" No benchmark has run in this output folder (`epar benchmark --budget quick`, or `epar run-all "
              "--with-benchmark`).\n\n", f);
        return;
    }
    json_t *b = json_object_get(j, "budget");
    fprintf(f, " The run audited here: budget `%s`, %d seed(s), %lld cells, largest parameter-count difference "
               "%.3g%% of `none`'s; its table is [main_table.md](../benchmark/main_table.md).\n\n",
            json_string_value(json_object_get(b, "name")) ? json_string_value(json_object_get(b, "name")) : "?",
            (int)json_array_size(json_object_get(json_object_get(j, "parameters"), "seeds")),
            (long long)json_integer_value(json_object_get(j, "cells")),
            100 * json_number_value(json_object_get(j, "param_max_rel_diff")));
    json_decref(j);
}

/* ---- figures ---- */

static int verdict_figure(struct epar_out *o, const struct epar_audit *a)
{
    struct epar_table *t = epar_audit_section_counts(a);
    if (!t) return EPAR_ENOMEM;
    int st = epar_exp_write_table(o, "verdicts.csv", t);
    epar_csv_free(t);
    if (st) return st;
    /* one stacked bar per section, one colour per verdict (a column of verdicts.csv each) */
    static const char *const colour[EPAR_AUDIT_VERDICT_COUNT] = {"#2ca02c", "#98df8a", "#d62728", "#ff7f0e", "#1f77b4",
                                                                 "#9467bd", "#e7ba52", "#aaaaaa", "#7f7f7f"};
    char body[4096];
    int u = snprintf(body, sizeof body,
                     "set title 'Claims audit: verdicts per section (%zu claims)'\n"
                     "set style data histograms\nset style histogram rowstacked\nset boxwidth 0.7\n"
                     "set xtics rotate by -35 noenhanced\nset xlabel 'claim section'\n"
                     "set ylabel 'number of claims'\nset yrange [0:*]\nset key outside right top noenhanced\nplot ",
                     a->n);
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT && u < (int)sizeof body; v++)
        u += snprintf(body + u, sizeof body - (size_t)u, "%s'verdicts.csv' skip 1 using %d%s title '%s' lc rgb '%s'",
                      v ? ", \\\n     " : "", v + 2, v ? "" : ":xtic(1)", epar_audit_verdict_name((enum epar_audit_verdict)v),
                      colour[v]);
    if (u < (int)sizeof body) snprintf(body + u, sizeof body - (size_t)u, "\n");
    return epar_plot_script(o, "verdicts", "Verdicts per section of the audit", body);
}

/* P(d)/P(0) of both forms for every preset, against d/L, with the paper's 78% and 2.8% marked */
static int retention_figure(struct epar_out *o, json_t *proto)
{
    double beta[8], gamma[8];
    const char *pn[8];
    int np = collect_params(proto, beta, gamma, pn, 8);
    if (np == 0) return EPAR_OK;
    char cols[512] = "d_over_L";
    for (int p = 0; p < np; p++)
        snprintf(cols + strlen(cols), sizeof cols - strlen(cols), ",basic_%s,enhanced_%s", pn[p], pn[p]);
    struct epar_table *t = epar_csv_new(cols);
    if (!t) return EPAR_ENOMEM;
    const int n = 200;
    int st = EPAR_OK;
    for (int k = 0; k <= n && !st; k++) {
        double x = (double)k / n;
        st = epar_csv_append(t, "d", x);
        for (int p = 0; p < np; p++) {
            struct epar_posfx b = {EPAR_FORM_BASIC, 1, beta[p], gamma[p]}, e = b;
            e.form = EPAR_FORM_ENHANCED;
            t->cells[(t->nrows - 1) * (size_t)t->ncols + 1 + 2 * p].v = epar_posfx_value(&b, x, 1);
            t->cells[(t->nrows - 1) * (size_t)t->ncols + 2 + 2 * p].v = epar_posfx_value(&e, x, 1);
        }
    }
    if (!st) st = epar_exp_write_table(o, "retention_curves.csv", t);
    epar_csv_free(t);
    if (st) return st;
    struct epar_table *r = epar_csv_new("d_over_L,retention,label");
    if (!r) return EPAR_ENOMEM;
    double renh = claim_reported(proto, "retention_max_enhanced"), rbas = claim_reported(proto, "retention_max_basic");
    if (isfinite(renh)) st = epar_csv_append(r, "dds", 1.0, renh, "paper: enhanced at max distance");
    if (!st && isfinite(rbas)) st = epar_csv_append(r, "dds", 1.0, rbas, "paper: basic at max distance");
    if (!st) st = epar_exp_write_table(o, "retention_reported.csv", r);
    epar_csv_free(r);
    if (st) return st;
    char body[2048];
    int u = snprintf(body, sizeof body,
                     "set title 'Retention P(d)/P(0) of the two forms ({/Symbol a} = 1), and the paper''s reported values'\n"
                     "set xlabel 'distance d / L'\nset ylabel 'P(d) / P(0)'\nset yrange [0:1.05]\n"
                     "set key bottom left\nplot ");
    for (int p = 0; p < np && u < (int)sizeof body; p++) {
        char name[64];
        snprintf(name, sizeof name, "%s", pn[p]);
        for (char *q = name; *q; q++)
            if (*q == '_') *q = ' ';
        u += snprintf(body + u, sizeof body - (size_t)u,
                      "'retention_curves.csv' skip 1 using 1:%d with lines lt %d dt 2 title 'basic, %s ({/Symbol b}=%g)', "
                      "'' skip 1 using 1:%d with lines lt %d title 'enhanced, %s ({/Symbol b}=%g, {/Symbol g}=%g)', \\\n     ",
                      2 + 2 * p, p + 1, name, beta[p], 3 + 2 * p, p + 1, name, beta[p], gamma[p]);
    }
    if (u < (int)sizeof body)
        snprintf(body + u, sizeof body - (size_t)u,
                 "'retention_reported.csv' skip 1 using 1:2 with points pt 7 ps 1.6 lc rgb 'black' title 'reported by "
                 "the paper', \\\n     '' skip 1 using 1:2:3 with labels right offset -1,0.6 noenhanced notitle\n");
    return epar_plot_script(o, "retention_curves", "Retention of the basic and enhanced forms", body);
}

int epar_exp_report_write(struct epar_out *o, const char *out_root, const struct epar_audit *a,
                          const struct epar_report_info *info)
{
    struct epar_table *t = epar_audit_table(a), *rt = retention_table(info->protocol), *im = implied_table(info->protocol);
    if (!t || !rt || !im) {
        epar_csv_free(t);
        epar_csv_free(rt);
        epar_csv_free(im);
        return epar_err_set(EPAR_ENOMEM, "out of memory building the report tables");
    }
    int st = epar_exp_write_table(o, "claims.csv", t);
    if (!st) st = epar_exp_write_table(o, "retention_definitions.csv", rt);
    if (!st) st = epar_exp_write_table(o, "implied_parameters.csv", im);
    if (!st) st = verdict_figure(o, a);
    if (!st) st = retention_figure(o, info->protocol);
    if (st) goto done;
    const char *path = epar_out_path(o, "REPORT.md");
    FILE *f = fopen(path, "w");
    if (!f) { st = epar_err_set(EPAR_EIO, "cannot write '%s': %s", path, strerror(errno)); goto done; }
    fprintf(f, "# EPAR reproduction report\n\n"
               "Written by `epar run-all` (epar %s). Every number below is computed by epar or read from its output "
               "files; the reported values are the paper's and the reference repository's. The full audit table is "
               "[claims.csv](claims.csv); the figures are collected in [../index.html](../index.html).\n\n",
            info->version);
    write_protocol_section(f, out_root, info);
    fprintf(f, "## Verdicts\n\n| verdict | claims |\n|---|---|\n");
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++)
        fprintf(f, "| %s | %d |\n", epar_audit_verdict_name((enum epar_audit_verdict)v), a->counts[v]);
    fprintf(f, "| **total** | %zu |\n\n", a->n);
    fputs("How to read a verdict. Each claim is judged by the rule of its kind of figure, fixed in "
          "`paper_protocol.json` before looking at results (column `rule`; `accepted` shows what the rule accepts):\n\n"
          "- **printed** (a figure the paper prints for a deterministic quantity): the measurement must round to it, "
          "i.e. lie within half a unit of its last printed digit (78% means [77.5%, 78.5%)).\n"
          "- **prediction** (a figure of another run of a stochastic quantity): the reported value must fall in the "
          "prediction interval of a new run, mean +- t(n-1) x sd x sqrt(1 + 1/n) over the n seeds, the sd floored by the "
          "run-level standard error of each seed's mean, widened by half a printed unit; with one seed: **needs >= 2 "
          "seeds**.\n"
          "- **estimate** (a Monte-Carlo estimate of an exact value): |estimate - exact| <= z x standard error.\n"
          "- **exact** / **relative** (deterministic values; a tolerance beyond 1e-12 says why, e.g. the reference's "
          "float32); **above** / **below** / **range** (thresholds: for a stochastic value the whole confidence interval "
          "of the mean must be on the claimed side, else **inconclusive**); **at_least** (a wall-clock speed-up, with "
          "a stated slack).\n"
          "- Identities and by-construction properties are **trivially true** (the reason is given) when their check "
          "holds; a statement that cannot be true or false as written is **ill-posed** (its readings are shown); a "
          "claim with several readings is **partly reproduced** when some hold; a claim whose input comes from another "
          "run than the one audited (protocol hash, preset, seeds, epar version or command-line changes differ) is "
          "**stale**; **not reproducible here** gives the reason (training a 110M model, or an experiment that did not "
          "run). Nearby settings that would match are named in the note, never used for the verdict.\n\n",
          f);
    if (a->stale)
        fprintf(f, "**%d claim(s) are stale**: their files come from another run (see their notes); rerun `epar run-all` "
                   "to audit this protocol's own runs.\n\n", a->stale);
    if (a->spec_problems)
        fprintf(f, "**%d claim(s) have a measurement spec that does not fit its file** (see their notes): fix the "
                   "`measure` entry in `paper_protocol.json`.\n\n",
                a->spec_problems);
    if (info->figures) fputs("![verdicts per section](verdicts.png)\n\n", f);
    write_md_verdict_table(f, a);
    fputc('\n', f);
    write_findings(f, out_root, a, info->figures);
    write_proxy_section(f, out_root);
    write_retention_section(f, rt, im, info->figures);
    write_defects(f, info->protocol, a);
    if (fclose(f) != 0) st = epar_err_set(EPAR_EIO, "cannot write '%s': %s", path, strerror(errno));
done:
    epar_csv_free(t);
    epar_csv_free(rt);
    epar_csv_free(im);
    return st;
}

/* ---- index.html ---- */

static void html(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

static int is_folder(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void index_figures(FILE *f, const char *out_root, const struct epar_report_info *info)
{
    /* known folders in command-table order, then any other folder with PNGs */
    DIR *d = opendir(out_root);
    char *others[64];
    int no = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp-") || no == 64) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", out_root, de->d_name);
        if (!is_folder(p)) continue;
        int known = 0;
        for (int s = 0; s < info->n_folders; s++) known |= !strcmp(info->folders[s].dir, de->d_name);
        if (!known) others[no++] = strdup(de->d_name);
    }
    if (d) closedir(d);
    qsort(others, (size_t)no, sizeof *others, sort_cmp);
    int total = info->n_folders + no;
    for (int s = 0; s < total; s++) {
        const char *dir = s < info->n_folders ? info->folders[s].dir : others[s - info->n_folders];
        const char *label = s < info->n_folders ? info->folders[s].label : dir;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", out_root, dir);
        int n;
        char **pngs = list_pngs(p, &n);
        if (n > 0) {
            fputs("<section><h2>", f);
            html(f, label);
            fprintf(f, " <small>(%s/, %d figures)</small></h2>\n<div class=\"grid\">\n", dir, n);
            for (int i = 0; i < n; i++) {
                fputs("<figure><a href=\"", f);
                html(f, dir);
                fputc('/', f);
                html(f, pngs[i]);
                fputs("\"><img src=\"", f);
                html(f, dir);
                fputc('/', f);
                html(f, pngs[i]);
                fputs("\" alt=\"", f);
                html(f, pngs[i]);
                fputs("\" loading=\"lazy\"></a><figcaption>", f);
                html(f, pngs[i]);
                fputs("</figcaption></figure>\n", f);
            }
            fputs("</div></section>\n", f);
        }
        free_list(pngs);
    }
    for (int i = 0; i < no; i++) free(others[i]);
}

int epar_exp_report_index(const char *out_root, const struct epar_audit *a, const struct epar_report_info *info)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/index.html", out_root);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return epar_err_set(EPAR_EIO, "cannot write '%s': %s", path, strerror(errno));
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
               "<title>EPAR reproduction (epar %s)</title>\n<style>\n"
               "body{font-family:sans-serif;margin:1.5em;max-width:1400px}\n"
               "table{border-collapse:collapse;font-size:0.85em}td,th{border:1px solid #ccc;padding:2px 6px;"
               "vertical-align:top}\n"
               ".grid{display:flex;flex-wrap:wrap;gap:12px}figure{margin:0;width:420px}figure img{width:100%%;"
               "border:1px solid #ddd}\n"
               "figcaption{font-size:0.8em;color:#444}\n"
               "tr.v0{background:#e6f4e6}tr.v1{background:#fbe3e3}tr.v2{background:#f1f1f1}tr.v3{background:#e8eefa}\n"
               "</style></head><body>\n<h1>EPAR reproduction</h1>\n<p>Written by <code>epar run-all</code> (epar %s) "
               "from <code>",
            info->version, info->version);
    html(f, info->protocol_path);
    fputs("</code>. Report: <a href=\"report/REPORT.md\">report/REPORT.md</a>, audit table: "
          "<a href=\"report/claims.csv\">report/claims.csv</a>.</p>\n<h2>Verdicts</h2>\n<p>",
          f);
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++)
        fprintf(f, "%s%s: %d", v ? ", " : "", epar_audit_verdict_name((enum epar_audit_verdict)v), a->counts[v]);
    fprintf(f, " (%zu claims).</p>\n<table><tr><th>claim</th><th>statement</th><th>reported</th><th>measured</th>"
               "<th>sd</th><th>rule</th><th>verdict</th><th>note</th></tr>\n",
            a->n);
    for (size_t g = 0; g < a->n; g++) {
        const char *sec = a->rows[g].section;
        int seen = 0;
        for (size_t j = 0; j < g && !seen; j++) seen = !strcmp(a->rows[j].section, sec);
        if (seen) continue;
        fputs("<tr><th colspan=\"8\" style=\"text-align:left\">", f);
        html(f, group_title(sec));
        fputs("</th></tr>\n", f);
        for (size_t i = g; i < a->n; i++) {
            const struct epar_audit_row *r = &a->rows[i];
            if (strcmp(r->section, sec)) continue;
            const char *cells[] = {r->id, r->statement, r->reported, r->measured, r->measured_sd, r->rule,
                                   epar_audit_verdict_name(r->verdict), r->note};
            fprintf(f, "<tr class=\"v%d\">", (int)r->verdict);
            for (int k = 0; k < 8; k++) {
                fputs("<td>", f);
                html(f, cells[k]);
                fputs("</td>", f);
            }
            fputs("</tr>\n", f);
        }
    }
    fputs("</table>\n<h2>Figures by paper section</h2>\n", f);
    index_figures(f, out_root, info);
    fputs("</body></html>\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0) bad = 1;
    if (bad || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return epar_err_set(EPAR_EIO, "cannot write '%s': %s", path, strerror(e));
    }
    return EPAR_OK;
}
