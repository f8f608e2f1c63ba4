/* The reproduction report: REPORT.md / REPORT.html, its figures, SUMMARY.md and summary.json (see report.h and
 * report_int.h). */
#define _GNU_SOURCE
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
#include "lib/publish.h"
#include "experiments/common.h"
#include "experiments/report/report_int.h"


/* ---- figures ---- */

static int verdict_figure(struct epar_out *o, const struct epar_audit *a)
{
    if (a->n == 0) return EPAR_OK; /* a protocol without claims (tests/golden): nothing to plot */
    struct epar_table *t = epar_audit_section_counts(a);
    if (!t) return EPAR_ENOMEM;
    int st = epar_exp_write_table(o, "verdicts.csv", t);
    epar_csv_free(t);
    if (st) return st;
    /* one horizontal stacked bar per section (the first on top), named in words, one colour per verdict (a column
     * of verdicts.csv each); the bars' pieces are boxes from the sum of the columns before to that sum plus theirs */
    static const char *const colour[EPAR_AUDIT_VERDICT_COUNT] = {"#2ca02c", "#98df8a", "#d62728", "#ff7f0e", "#1f77b4",
                                                                 "#9467bd", "#e7ba52", "#aaaaaa", "#7f7f7f"};
    char body[8192];
    int nsec = 0;
    while (epar_report_nth_section(a, nsec)) nsec++;
    int u = snprintf(body, sizeof body,
                     "set terminal @epar_term size 1100,%d\n"
                     "set title 'Claims audit: verdicts per section (%zu claims)'\n"
                     "set style fill solid 0.9 noborder\nset xlabel 'number of claims'\nset xrange [0:*]\n"
                     "set yrange [%d - 0.4:-0.6]\nset ytics noenhanced font ',10'\nunset grid\nset grid x\n"
                     "set key outside right top noenhanced\nset lmargin 56\n"
                     "cum(k) = (k <= 2) ? 0 : cum(k - 1) + column(k - 1)\nlabel(s) = ",
                     160 + 32 * nsec, a->n, nsec);
    const char *sec;
    for (int k = 0; (sec = epar_report_nth_section(a, k)) && u < (int)sizeof body; k++) {
        char q[256];   /* a gnuplot single-quoted string: ' doubled */
        size_t l = 0;
        for (const char *c = epar_report_group_plain(sec); *c && l + 3 < sizeof q; c++) {
            if (*c == '\'') q[l++] = '\'';
            q[l++] = *c;
        }
        q[l] = '\0';
        u += snprintf(body + u, sizeof body - (size_t)u, "s eq '%s' ? '%s' : ", sec, q);
    }
    if (u < (int)sizeof body) u += snprintf(body + u, sizeof body - (size_t)u, "s\n" EPAR_PLOT_IF("'verdicts.csv', '2'") "plot ");
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT && u < (int)sizeof body; v++)
        u += snprintf(body + u, sizeof body - (size_t)u,
                      "%s'verdicts.csv' skip 1 using (cum(%d) + column(%d) / 2.0):0:(column(%d) / 2.0):(0.35)%s with "
                      "boxxyerror lc rgb '%s' title '%s'",
                      v ? ", \\\n     " : "", v + 2, v + 2, v + 2, v ? "" : ":ytic(label(strcol(1)))", colour[v],
                      epar_audit_verdict_name((enum epar_audit_verdict)v));
    if (u < (int)sizeof body) snprintf(body + u, sizeof body - (size_t)u, EPAR_PLOT_END);
    return epar_plot_script(o, "verdicts", "Verdicts per section of the audit", body);
}

/* P(d)/P(0) of both forms for every preset, against d/L, with the paper's 78% and 2.8% marked */
static int retention_figure(struct epar_out *o, const struct epar_report_proto *rp)
{
    double beta[8], gamma[8];
    const char *pn[8];
    int np = epar_report_collect_params(rp, beta, gamma, pn, 8);
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
    double renh = epar_report_claim_reported(rp, "retention_max_enhanced"),
           rbas = epar_report_claim_reported(rp, "retention_max_basic");
    if (isfinite(renh)) st = epar_csv_append(r, "dds", 1.0, renh, "paper: enhanced at max distance");
    if (!st && isfinite(rbas)) st = epar_csv_append(r, "dds", 1.0, rbas, "paper: basic at max distance");
    if (!st) st = epar_exp_write_table(o, "retention_reported.csv", r);
    epar_csv_free(r);
    if (st) return st;
    char body[2048];
    int u = snprintf(body, sizeof body,
                     "set title 'Retention P(d)/P(0) of the two forms ({/Symbol a} = 1; colour = form, dash = preset), and the paper''s reported values'\n"
                     "set xlabel 'distance d / L'\nset ylabel 'P(d) / P(0)'\nset yrange [0:1.05]\n"
                     "set key bottom left\n" EPAR_PLOT_IF("'retention_curves.csv', '1:2'") "plot ");
    for (int p = 0; p < np && u < (int)sizeof body; p++) {
        char name[64];
        snprintf(name, sizeof name, "%s", pn[p]);
        for (char *q = name; *q; q++)
            if (*q == '_') *q = ' ';
        /* colour = form (basic red, enhanced blue, as in parameter/retention_curves.png), dash = preset */
        u += snprintf(body + u, sizeof body - (size_t)u,
                      "'retention_curves.csv' skip 1 using 1:%d with lines lt 2 lw 2 dt %d title 'basic, %s ({/Symbol b}=%g)', "
                      "'' skip 1 using 1:%d with lines lt 1 lw 2 dt %d title 'enhanced, %s ({/Symbol b}=%g, {/Symbol g}=%g)', \\\n     ",
                      2 + 2 * p, p + 1, name, beta[p], 3 + 2 * p, p + 1, name, beta[p], gamma[p]);
    }
    if (u < (int)sizeof body)
        snprintf(body + u, sizeof body - (size_t)u,
                 "'retention_reported.csv' skip 1 using 1:2 with points pt 7 ps 1.6 lc rgb 'black' title 'reported by "
                 "the paper', \\\n     '' skip 1 using 1:2:3 with labels right offset -1,0.6 noenhanced notitle" EPAR_PLOT_END);
    return epar_plot_script(o, "retention_curves", "Retention of the basic and enhanced forms", body);
}



/* ---- REPORT.md / REPORT.html ---- */

/* how many prediction claims miss, beside how many would miss by chance at the audit's level if every figure held */
static void chance_note(struct epar_pub_doc *d, const struct epar_audit *a)
{
    int np = 0, nnot = 0;
    double level = NAN;
    for (size_t i = 0; i < a->n; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        if (!r->rule || strncmp(r->rule, "prediction", 10)) continue;
        const char *l = strstr(r->rule, "(level ");
        if (l) level = strtod(l + 7, NULL);
        np++;
        nnot += r->verdict == EPAR_AUDIT_NOT_REPRODUCED;
    }
    if (!np || !isfinite(level)) return;
    epar_pub_li(d, "Of the %d claims judged by **prediction**, %d are not reproduced; at level %g about %.0f (%d x "
                   "%.2g) would miss by chance even if every "
                   "figure held.", np, nnot, level, np * (1 - level), np, 1 - level);
}

static void write_verdict_table(struct epar_pub_doc *d, const struct epar_audit *a)
{
    static const char *const head[] = {"claim", "reported", "measured", "sd across seeds", "rule", "verdict"};
    epar_pub_table(d, 6, head);
    for (size_t i = 0; i < a->n; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        char id[160], meas[512], sd[64];
        snprintf(id, sizeof id, "`%s`", r->id);
        epar_report_shown_measured(r, meas, sizeof meas);
        epar_report_shown_sd(r, sd, sizeof sd);
        const char *cells[] = {id, r->reported, meas, sd, r->rule, epar_audit_verdict_name(r->verdict)};
        epar_pub_tr(d, 6, cells);
    }
    epar_pub_table_end(d);
}

/* ---- the sizes trained models actually had: their own records ---- */

/* distinct values of one quantity, sorted */
#define SIZE_SET_MAX 32
struct size_set {
    int n;
    double v[SIZE_SET_MAX];
};
struct trained_sizes {
    int models;
    struct size_set layers, dim, heads, length, batch, steps, seed, alpha, beta, gamma;
};

static void set_add(struct size_set *s, json_t *x)
{
    if (!json_is_number(x)) return;
    double v = json_number_value(x);
    int k = 0;
    while (k < s->n && s->v[k] < v) k++;
    if ((k < s->n && s->v[k] == v) || s->n == SIZE_SET_MAX) return;
    memmove(s->v + k + 1, s->v + k, (size_t)(s->n - k) * sizeof *s->v);
    s->v[k] = v;
    s->n++;
}

/* "32, 40, 72"; "42-46 (5)" for more than four values; "" for none */
static void set_text(const struct size_set *s, char *out, size_t n)
{
    out[0] = '\0';
    if (s->n > 4) {
        snprintf(out, n, "%g-%g (%d values)", s->v[0], s->v[s->n - 1], s->n);
        return;
    }
    for (int i = 0; i < s->n; i++) snprintf(out + strlen(out), n - strlen(out), "%s%g", i ? ", " : "", s->v[i]);
}

/* every record under dir (depth <= 4) with a training "config": the benchmark's cells (cells/<task>/<mechanism>/
 * seed-<s>/cell.json) and epar train's runs (<task>/<mechanism>/run.json) */
static void scan_trained(const char *dir, int depth, struct trained_sizes *t)
{
    DIR *dd = depth <= 4 ? opendir(dir) : NULL;
    if (!dd) return;
    struct dirent *de;
    while ((de = readdir(dd))) {
        if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp-") || strstr(de->d_name, ".old-")) continue;
        char p[4600];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(p, &st)) continue;
        if (S_ISDIR(st.st_mode)) {
            scan_trained(p, depth + 1, t);
            continue;
        }
        if (strcmp(de->d_name, "cell.json") && strcmp(de->d_name, "run.json")) continue;
        json_t *j = json_load_file(p, 0, NULL), *c = json_object_get(j, "config");
        if (json_is_object(c) && json_is_number(json_object_get(c, "layers"))) {
            t->models++;
            set_add(&t->layers, json_object_get(c, "layers"));
            set_add(&t->dim, json_object_get(c, "dim"));
            set_add(&t->heads, json_object_get(c, "heads"));
            set_add(&t->length, json_object_get(c, "length"));
            set_add(&t->batch, json_object_get(c, "batch"));
            set_add(&t->steps, json_object_get(c, "steps"));
            set_add(&t->seed, json_object_get(c, "seed"));
            const char *m = json_string_value(json_object_get(c, "mechanism"));
            json_t *pos = json_object_get(c, "position");
            if (m && !strncmp(m, "epar", 4) && json_is_object(pos)) {
                set_add(&t->alpha, json_object_get(pos, "alpha"));
                set_add(&t->beta, json_object_get(pos, "beta"));
                if (strstr(m, "enhanced")) set_add(&t->gamma, json_object_get(pos, "gamma"));
            }
        }
        json_decref(j);
    }
    closedir(dd);
}

/* a protocol-table row from the trained models' own records; 0 when dir holds none */
static int trained_row(struct epar_pub_doc *d, const char *out_root, const struct epar_report_folder *fo,
                       const char *dir)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", out_root, fo->dir);
    struct trained_sizes *t = EPAR_CALLOC(1, sizeof *t);
    if (!t) return 0;
    scan_trained(p, 0, t);
    int n = t->models;
    if (n) {
        char v[10][400], l[160], w[160];
        set_text(&t->alpha, v[0], sizeof v[0]);
        set_text(&t->beta, v[1], sizeof v[1]);
        set_text(&t->gamma, v[2], sizeof v[2]);
        set_text(&t->length, v[3], sizeof v[3]);
        set_text(&t->layers, l, sizeof l);
        set_text(&t->dim, w, sizeof w);
        snprintf(v[4], sizeof v[4], "%s x %s (layers x width)", l, w);
        set_text(&t->heads, v[5], sizeof v[5]);
        set_text(&t->batch, v[6], sizeof v[6]);
        set_text(&t->steps, l, sizeof l);
        snprintf(v[7], sizeof v[7], "%d model%s, %s steps", n, n == 1 ? "" : "s", l);
        set_text(&t->seed, v[8], sizeof v[8]);
        const char *cells[13] = {dir, fo->label, "ran (sizes from the models' own records)", "trained", v[0], v[1],
                                 v[2], v[3], v[4], v[5], v[6], v[7], v[8]};
        epar_pub_tr(d, 13, cells);
    }
    free(t);
    return n;
}

static void write_protocol_section(struct epar_pub_doc *d, const char *out_root, const struct epar_report_info *info)
{
    epar_pub_h(d, 2, "protocol", "Protocol");
    epar_pub_p(d, "Protocol file `%s` (version %d), preset `%s`. Each experiment's `run.json` records the exact "
                  "parameters; the main ones:", info->protocol_path, EPAR_PROTOCOL_VERSION,
               info->preset ? info->preset : "(the file's default)");
    static const char *const head[] = {"folder", "section", "status", "form", "alpha", "beta", "gamma",
                                       "L", "hidden", "heads", "batch", "runs", "seeds"};
    epar_pub_table(d, 13, head);
    for (int s = 0; s < info->n_folders; s++) {
        const struct epar_report_folder *fo = &info->folders[s];
        if (!strcmp(fo->dir, "report")) continue;
        char p[4096], dir[80];
        snprintf(p, sizeof p, "%s/%s/run.json", out_root, fo->dir);
        snprintf(dir, sizeof dir, "`%s/`", fo->dir);
        if (trained_row(d, out_root, fo, dir)) continue;
        struct epar_runrec_run rf = {0};
        json_t *doc = NULL;
        if (!epar_pub_file_exists(p) || epar_runrec_read_run(p, &rf, &doc)) {
            const char *cells[13] = {dir, fo->label, epar_pub_file_exists(p) ? "run.json unreadable" : "not run"};
            epar_pub_tr(d, 13, cells);
            continue;
        }
        const struct epar_runrec_params *prm = &rf.parameters;
        char seeds[256] = "", v[9][32];
        for (int i = 0; i < prm->n_seeds; i++)
            snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), "%s%lld", i ? "," : "", (long long)prm->seeds[i]);
        double num[] = {prm->alpha, prm->beta, prm->gamma};
        const char *form = prm->form ? prm->form : "";
        /* an experiment of every mechanism (compare) records EPAR's parameters per mechanism: the enhanced form's */
        json_t *mp = json_object_get(json_object_get(doc, "mechanism_parameters"), "epar-enhanced");
        if (!prm->form && json_is_object(mp)) {
            const char *key[] = {"alpha", "beta", "gamma"};
            for (int k = 0; k < 3; k++) num[k] = json_number_value(json_object_get(mp, key[k]));
            form = "every mechanism (EPAR's: epar-enhanced)";
        }
        const int integer[] = {prm->length, prm->hidden, prm->heads, prm->batch, prm->runs};
        for (int k = 0; k < 3; k++) snprintf(v[k], sizeof v[k], "%g", num[k]);
        for (int k = 0; k < 5; k++) /* 0: the experiment does not record it */
            if (integer[k]) snprintf(v[3 + k], sizeof v[3 + k], "%d", integer[k]);
            else v[3 + k][0] = '\0';
        const char *cells[13] = {dir, fo->label, "ran", form, v[0], v[1], v[2], v[3], v[4], v[5],
                                 v[6], v[7], seeds};
        epar_pub_tr(d, 13, cells);
        json_decref(doc);
    }
    epar_pub_table_end(d);
    if (info->failed && info->failed[0]) {
        char list[512] = "";
        for (const char *const *x = info->failed; *x; x++)
            snprintf(list + strlen(list), sizeof list - strlen(list), " `%s`", *x);
        epar_pub_p(d, "Experiments that FAILED in this run (their claims read older files or none):%s", list);
    }
    epar_pub_p(d, "Stochastic numbers are run once per seed and reported as the mean across seeds with the sample sd "
                  "across seeds; deterministic numbers (functions of alpha, beta, gamma, L) are computed exactly. "
                  "Numbers here are rounded to the precision of the figure they are compared with; `claims.csv` has "
                  "them in full.");
}

static void write_retention_section(struct epar_pub_doc *d, const struct epar_table *rt, const struct epar_table *im,
                                    int figures)
{
    epar_pub_h(d, 2, "retention", "Which definition of \"retention\" gives the paper's figures");
    epar_pub_p(d, "The paper gives x4.2 (mid range), x28.3 (maximum distance), 78%% and 2.8%% without a definition or "
                  "parameters. `retention_definitions.csv` computes the pre-softmax retention P(d)/P(0) of both forms "
                  "and their ratio (the gain) for every preset's (beta, gamma) and every sequence length of the "
                  "protocol, at d = L/2, L-1 and L:");
    static const char *const head[] = {"preset", "beta", "gamma", "L", "d", "basic", "enhanced", "gain"};
    epar_pub_table(d, 8, head);
    for (size_t r = 0; r < rt->nrows; r++) {
        char v[7][32];
        snprintf(v[0], sizeof v[0], "%g", epar_csv_get(rt, r, "beta"));
        snprintf(v[1], sizeof v[1], "%g", epar_csv_get(rt, r, "gamma"));
        snprintf(v[2], sizeof v[2], "%g", epar_csv_get(rt, r, "length"));
        snprintf(v[3], sizeof v[3], "%.4g", epar_csv_get(rt, r, "basic_retention"));
        snprintf(v[4], sizeof v[4], "%.4g", epar_csv_get(rt, r, "enhanced_retention"));
        snprintf(v[5], sizeof v[5], "%.4g", epar_csv_get(rt, r, "gain"));
        const char *cells[] = {epar_csv_get_str(rt, r, "preset"), v[0], v[1], v[2], epar_csv_get_str(rt, r, "distance"),
                               v[3], v[4], v[5]};
        epar_pub_tr(d, 8, cells);
    }
    epar_pub_table_end(d);
    /* the sentences below come from implied_parameters.csv (epar_report_implied_table): computed, never typed in */
    epar_pub_ul(d, 1);
    for (size_t r = 0; im && r < im->nrows; r++) {
        double v = epar_csv_get(im, r, "value"), rep = epar_csv_get(im, r, "reported");
        const char *m = epar_csv_get_str(im, r, "matches_reported");
        char tail[160] = "";
        if (isfinite(rep)) snprintf(tail, sizeof tail, " (reported %.4g; by the printed-figure rule: %s)", rep, m ? m : "");
        epar_pub_li(d, "%s: %.5g%s.", epar_csv_get_str(im, r, "meaning"), v, tail);
    }
    int all = 0, total = 0;
    for (size_t r = 0; im && r < im->nrows; r++)
        if (isfinite(epar_csv_get(im, r, "reported")) && !strncmp(epar_csv_get_str(im, r, "quantity"), "implied_", 8)) {
            total++;
            all += !strcmp(epar_csv_get_str(im, r, "matches_reported"), "yes");
        }
    if (total)
        epar_pub_li(d, "With the (beta, gamma) that the two gains imply, %d of the %d other printed figures come out, so %s.",
                    all, total, all == total ? "one setting does give all four figures"
                                             : "no single (beta, gamma) gives all four figures");
    epar_pub_ul(d, 0);
    if (figures) epar_pub_p(d, "![retention of both forms and the paper's values](retention_curves.png)");
    epar_pub_p(d, "The verdict of each figure (claims `retention_*`) uses the paper's own defaults; the other settings "
                  "are named in the claim's note as alternatives, never used to change the verdict.");
}

/* The reference's known defects: the protocol's "reference_defects" (data, like the claims), each followed by the
 * verdicts and measured values of the claims that show it. */
static void write_defects(struct epar_pub_doc *d, const struct epar_report_proto *rp, const struct epar_audit *a)
{
    if (!rp->n_defects) return;
    epar_pub_h(d, 2, "defects", "Known defects of the reference code (fixed in epar, not copied)");
    epar_pub_ul(d, 1);
    for (int i = 0; i < rp->n_defects; i++) {
        const struct rp_defect *x = &rp->defects[i];
        char shown[2048] = "";
        for (int k = 0; k < x->n_shown; k++)
            for (size_t r = 0; r < a->n; r++)
                if (!strcmp(a->rows[r].id, x->shown_by[k])) {
                    char meas[256] = "";
                    if (*a->rows[r].measured) {
                        char m[200];
                        epar_report_shown_measured(&a->rows[r], m, sizeof m);
                        snprintf(meas, sizeof meas, ", measured %s", m);
                    }
                    snprintf(shown + strlen(shown), sizeof shown - strlen(shown), "%s`%s` %s%s",
                             k ? "; " : " Shown by: ", a->rows[r].id, epar_audit_verdict_name(a->rows[r].verdict), meas);
                }
        epar_pub_li(d, "**%s**: %s%s%s", x->title, x->text, shown, x->n_shown ? "." : "");
    }
    epar_pub_ul(d, 0);
}

static void write_findings(struct epar_pub_doc *d, const char *out_root, const struct epar_audit *a, int figures)
{
    epar_pub_h(d, 2, "findings", "Findings by section");
    for (size_t i = 0; i < a->n; i++) {
        const char *sec = a->rows[i].section;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = !strcmp(a->rows[j].section, sec);
        if (seen) continue;
        int cnt[EPAR_AUDIT_VERDICT_COUNT] = {0};
        for (size_t j = i; j < a->n; j++)
            if (!strcmp(a->rows[j].section, sec)) cnt[a->rows[j].verdict]++;
        char anchor[96], counts[512] = "";
        snprintf(anchor, sizeof anchor, "findings-%s", sec);
        epar_pub_h(d, 3, anchor, "%s", epar_report_group_title(sec));
        for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++)
            if (cnt[v])
                snprintf(counts + strlen(counts), sizeof counts - strlen(counts), "%s%d %s", counts[0] ? ", " : "",
                         cnt[v], epar_audit_verdict_name((enum epar_audit_verdict)v));
        epar_pub_p(d, "%s.", counts);
        epar_pub_ul(d, 1);
        for (size_t j = i; j < a->n; j++) {
            const struct epar_audit_row *r = &a->rows[j];
            if (strcmp(r->section, sec)) continue;
            char meas[640] = "";
            if (*r->measured) {
                char m[512], sd[64];
                epar_report_shown_measured(r, m, sizeof m);
                epar_report_shown_sd(r, sd, sizeof sd);
                snprintf(meas, sizeof meas, ", measured %s%s%s%s", m, *sd ? " (sd " : "", sd, *sd ? ")" : "");
            }
            epar_pub_li(d, "`%s` **%s**: %s Reported %s%s. Source: %s. Measurement: %s. %s", r->id,
                        epar_audit_verdict_name(r->verdict), r->statement, r->reported, meas, r->source, r->measurement,
                        r->note);
        }
        epar_pub_ul(d, 0);
        /* the figures named by this section's claims */
        char figs[4096] = "";
        for (size_t j = i; j < a->n; j++) {
            const struct epar_audit_row *r = &a->rows[j];
            if (strcmp(r->section, sec)) continue;
            for (char **fg = r->figures; fg && *fg; fg++) {
                char mark[512];
                snprintf(mark, sizeof mark, "[%s](../%s)", *fg, *fg);
                if (strstr(figs, mark)) continue;
                char p[4096];
                snprintf(p, sizeof p, "%s/%s", out_root, *fg);
                /* the report's own figures are rendered after this file is written */
                int present = strncmp(*fg, "report/", 7) ? epar_pub_file_exists(p) : figures;
                if (present) snprintf(figs + strlen(figs), sizeof figs - strlen(figs), " %s", mark);
                else snprintf(figs + strlen(figs), sizeof figs - strlen(figs), " %s (not produced in this run)", *fg);
            }
        }
        if (figs[0]) epar_pub_p(d, "Figures:%s", figs);
    }
}

/* the style of both HTML pages: readable from 420 px up, no external fonts or scripts */
const char epar_report_css[] =
    "*{box-sizing:border-box}[hidden]{display:none !important}\n"
    /* the sources quote Chinese: a CJK font where the reader has one (Noto / Source Han / WenQuanYi / the systems') */
    "body{font-family:sans-serif,\"Noto Sans CJK SC\",\"Source Han Sans SC\",\"Noto Sans SC\",\"WenQuanYi Micro Hei\","
    "\"PingFang SC\",\"Microsoft YaHei\",sans-serif;line-height:1.4;margin:0 auto;padding:0 12px 3em;max-width:1400px;color:#222;overflow-wrap:break-word}\n"
    "h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}\n"
    "code{font-size:0.92em;background:#f3f3f3;padding:0 2px;overflow-wrap:anywhere}\n"
    "a{overflow-wrap:anywhere}\n"
    ".scroll{max-width:100%;overflow-x:auto}.scroll td code{overflow-wrap:normal;white-space:nowrap}\n"
    "table{border-collapse:collapse;font-size:0.88em}td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top;"
    "text-align:left}\n"
    "img{max-width:100%;height:auto}\n"
    ".grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,600px),1fr));gap:14px}\n"
    ".banner{background:#fff3cd;border:2px solid #d39e00;padding:4px 12px;margin:0.5em 0}\n"
    "#bottom-line{background:#f3f7fc;border:1px solid #b8cce4;padding:2px 14px 4px;font-size:0.93em;line-height:1.3}"
    "#bottom-line h2{margin:0.3em 0 0.2em;font-size:1.3em}#bottom-line ul{margin:0.2em 0;padding-left:1.2em}"
    "#bottom-line li{margin:0.05em 0}\n"
    "figure{margin:0}figure img{width:100%;border:1px solid #ddd}figcaption{font-size:0.85em;color:#333}\n"
    "nav.toc{background:#f6f6f6;padding:6px 12px;border:1px solid #ddd}nav.toc ul{margin:0.3em 0;padding-left:1.2em}\n"
    ".v-reproduced,.v-trivially-true{background:#e6f4e6}.v-partly-reproduced{background:#f4f4d8}"
    ".v-not-reproduced{background:#fbe3e3}.v-inconclusive,.v-stale{background:#fdf0dc}"
    ".v-ill-posed,.v-needs-2-seeds,.v-not-reproducible-here{background:#eeeeee}\n"
    /* figures wrap between words, never inside a number; the statement keeps room to be read */
    "table.claims{width:100%}table.claims td{overflow-wrap:anywhere}table.claims td.num{overflow-wrap:normal}"
    "td.meas span{white-space:nowrap}table.claims td[data-label=claim]{min-width:14em}\n"
    /* a verdict breaks between its words only ("not reproducible / here"), never inside one ("inconclusiv e") */
    "table.claims td.verdict,table.claims details summary{overflow-wrap:normal;word-break:normal;hyphens:none}"
    "table.claims td.verdict{min-width:7.5em}\n"
    "details{font-size:0.92em}details summary{cursor:pointer;color:#1f4e99}\n"
    ".chips button{margin:2px;padding:2px 8px;border:1px solid #999;border-radius:10px;cursor:pointer;font-size:0.9em}\n"
    "@media (max-width:760px){table.claims,table.claims tbody,table.claims tr,table.claims td{display:block;width:100%}"
    "table.claims tr.head{display:none}table.claims tr{border:1px solid #bbb;margin-bottom:8px}"
    "table.claims td{border:none;padding:2px 6px}table.claims td[data-label]::before{content:attr(data-label) \": \";"
    "font-weight:bold}table.claims td[data-label=claim]{min-width:0}}\n";

/* the trained proxy: what it is, what it cannot show, and which run is in <out>/benchmark */
static void write_proxy_section(struct epar_pub_doc *d, const char *out_root)
{
    epar_pub_h(d, 2, "proxy", "The trained proxy (`epar benchmark`)");
    char p[4200], run[2048] = " No benchmark has run in this output folder (`epar benchmark --budget quick`, or "
                                "`epar run-all` without `--no-benchmark`).";
    snprintf(p, sizeof p, "%s/benchmark/run.json", out_root);
    struct epar_runrec_bench br = {{NULL, 0, 0, 0, 0, 0, 0}, {0, {0}}, 0, 0, 0, 0, {NULL}, NULL};
    json_t *doc = NULL;
    if (epar_runrec_read_bench(p, &br, &doc) == EPAR_OK) {
        snprintf(run, sizeof run, " The run audited here: budget `%s`, %d seed(s), %lld cells, largest parameter-count "
                                  "difference %.3g%% of `none`'s; its table is [main_table.md](../benchmark/main_table.md).",
                 br.budget.name ? br.budget.name : "?", br.parameters.n_seeds, (long long)br.cells,
                 100 * br.param_max_rel_diff);
        size_t l = strlen(run);
        epar_report_learned_sentence(out_root, br.n_mechanisms, br.learned_z, run + l, sizeof run - l);
        json_decref(doc);
    }
    epar_pub_p(d, "The main table, the \"when to use\" figures and the training cost are claims about 110M-parameter "
                  "Transformers trained on WikiText-103, WMT'14, SQuAD 2.0, GLUE and ArXiv; they stay **not "
                  "reproducible here**. Each has a sibling claim (`proxy_<id>`) measured on a proxy: small causal "
                  "Transformers (tens of thousands of parameters) trained on this machine, one per position mechanism "
                  "and seed, on tasks that isolate what each row is about (character-level KJV text for perplexity, "
                  "reversal for translation, associative recall and a fact at a controlled distance for QA, the "
                  "majority symbol for classification, selective copying from a sequence four times the short length "
                  "for long documents; shuffled words, 20%% input noise and an order-free count for the conditions; "
                  "docs/TASKS.md), with equal steps, tokens and learning rate for every mechanism and parameter counts "
                  "within 1%%. A proxy verdict says whether the *direction* of the paper's effect (EPAR beats every "
                  "baseline, hurts under noise, costs little) holds for small trained models, judged by the per-seed "
                  "relative differences and their spread across seeds: \"EPAR improves on the baselines\" needs EPAR "
                  "above each baseline at the audit's level (comparisons.csv) and is not reproduced when a baseline is "
                  "better after a Holm adjustment across the baselines; the minimum detectable effects in "
                  "main_table.md say how large a difference these seeds could see. It cannot show the size of the "
                  "effect at 110M parameters, on the real data sets, with the paper's tuning, or the share of "
                  "attention in a large model's step (cost.csv gives this model's, to scale the overheads by); with "
                  "few seeds and short training many differences are inconclusive.%s", run);
}

static void write_report(struct epar_pub_doc *d, const char *out_root, const struct epar_audit *a,
                         const struct epar_report_info *info, const struct epar_report_proto *rp,
                         const struct epar_table *rt, const struct epar_table *im)
{
    if (d->html) epar_pub_page_head(d->f, "EPAR reproduction report", epar_report_css);
    epar_pub_h(d, 1, NULL, "EPAR reproduction report");
    epar_pub_p(d, "Written by `epar run-all` (epar %s). Every number below is computed by epar or read from its output "
                  "files; the reported values are the paper's and the reference repository's. The full audit table is "
                  "[claims.csv](claims.csv); the figures are collected in [../index.html](../index.html)%s.",
               info->version, d->html ? "; the same report as markdown: [REPORT.md](REPORT.md)" : "");
    char banner[1024];
    if (epar_exp_report_banner(out_root, a, banner, sizeof banner)) {
        if (d->html) {
            fputs("<p class=\"banner\" id=\"budget-banner\">", d->f);
            epar_report_banner_html(d->f, banner);
            fputs("</p>\n", d->f);
        } else epar_pub_p(d, "**%s**", banner);
    }
    write_protocol_section(d, out_root, info);
    epar_pub_h(d, 2, "verdicts", "Verdicts");
    static const char *const head[] = {"verdict", "claims"};
    epar_pub_table(d, 2, head);
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++) {
        char n[16];
        snprintf(n, sizeof n, "%d", a->counts[v]);
        const char *cells[] = {epar_audit_verdict_name((enum epar_audit_verdict)v), n};
        epar_pub_tr(d, 2, cells);
    }
    char tot[16];
    snprintf(tot, sizeof tot, "%zu", a->n);
    const char *total[] = {"**total**", tot};
    epar_pub_tr(d, 2, total);
    epar_pub_table_end(d);
    epar_pub_p(d, "How to read a verdict. Each claim is judged by the rule of its kind of figure, fixed in "
                  "`paper_protocol.json` before looking at results (column `rule`; `accepted` in claims.csv shows what "
                  "the rule accepts):");
    epar_pub_ul(d, 1);
    epar_pub_li(d, "**printed** (a figure the paper prints for a deterministic quantity): the measurement must round "
                   "to it, i.e. lie within half a unit of its last printed digit (78%% means [77.5%%, 78.5%%)).");
    epar_pub_li(d, "**prediction** (a figure of another run of a stochastic quantity): the reported value must fall in "
                   "the prediction interval of a new run, mean +- t(n-1) x sd x sqrt(1 + 1/n) over the n seeds, the sd "
                   "floored by the run-level standard error of each seed's mean, widened by half a printed unit; with "
                   "one seed: **needs >= 2 seeds**.");
    chance_note(d, a);
    epar_pub_li(d, "**estimate** (a Monte-Carlo estimate of an exact value): |estimate - exact| <= z x standard error.");
    epar_pub_li(d, "**exact** / **relative** (deterministic values; a tolerance beyond 1e-12 says why, e.g. the "
                   "reference's float32); **above** / **below** / **range** (thresholds: for a stochastic value the "
                   "whole confidence interval of the mean must be on the claimed side, else **inconclusive**); "
                   "**at_least** (a wall-clock speed-up, with a stated slack).");
    epar_pub_li(d, "Identities and by-construction properties are **trivially true** (the reason is given) when their "
                   "check holds; a statement that cannot be true or false as written is **ill-posed** (its readings "
                   "are shown); a claim with several readings, every one of which must hold, is **partly reproduced** "
                   "when some hold and some fail, **not reproduced** when some fail and none holds; a claim whose "
                   "input comes from another run than the one audited (protocol hash, preset, seeds, epar version or "
                   "command-line changes differ) is **stale**; **not reproducible here** gives the reason (training a "
                   "110M model, or an experiment that did not run: rerun it). Nearby settings that would match are "
                   "named in the note, never used for the verdict.");
    epar_pub_ul(d, 0);
    epar_pub_p(d, "Sources: `seed 00N_...txt §x` is a section of one of the five source documents, "
                  "`charles-wang888/...` a file of the reference repository; docs/SOURCES.md of the epar sources lists "
                  "each with its title, and the published papers behind every mechanism.");
    if (a->stale)
        epar_pub_p(d, "**%d claim(s) are stale**: their files come from another run (see their notes); rerun `epar "
                      "run-all` to audit this protocol's own runs.", a->stale);
    if (a->spec_problems)
        epar_pub_p(d, "**%d claim(s) have a measurement spec that does not fit its file** (see their notes): fix the "
                      "`measure` entry in `paper_protocol.json`.", a->spec_problems);
    if (info->figures && a->n) epar_pub_p(d, "![verdicts per section](verdicts.png)");
    write_verdict_table(d, a);
    write_findings(d, out_root, a, info->figures);
    write_proxy_section(d, out_root);
    write_retention_section(d, rt, im, info->figures);
    write_defects(d, rp, a);
    if (d->html) fputs("</body></html>\n", d->f);
}

static int write_doc(struct epar_out *o, const char *name, int as_html, const char *out_root,
                     const struct epar_audit *a, const struct epar_report_info *info,
                     const struct epar_report_proto *rp, const struct epar_table *rt, const struct epar_table *im)
{
    const char *path = epar_out_path(o, name);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    if (strrchr(dir, '/')) *strrchr(dir, '/') = '\0';
    else snprintf(dir, sizeof dir, ".");
    struct epar_out_file w;
    FILE *f = epar_out_fopen(&w, path);
    if (!f) return EPAR_EIO;
    struct epar_pub_doc d = {f, as_html, dir};
    write_report(&d, out_root, a, info, rp, rt, im);
    return epar_out_fclose(&w);
}

/* report/SUMMARY.md (the blocks README quotes) and report/summary.json (the same lines, and the counts) */
static int write_summary(struct epar_out *o, const char *out_root, const struct epar_audit *a,
                         const struct epar_report_info *info, const struct epar_table *im)
{
    struct epar_runrec_audit ar = {0};
    json_t *ardoc = NULL;
    const char *rjp = epar_out_path(o, "run.json");
    if (access(rjp, R_OK) != 0 || epar_runrec_read_audit(rjp, &ar, &ardoc)) {
        epar_err_clear();
        memset(&ar, 0, sizeof ar);
    }
    char p[4200];
    snprintf(p, sizeof p, "%s/benchmark/run.json", out_root);
    struct epar_runrec_bench br = {{NULL, 0, 0, 0, 0, 0, 0}, {0, {0}}, 0, 0, 0, 0, {NULL}, NULL};
    json_t *bdoc = NULL;
    int have_bench = access(p, R_OK) == 0 && epar_runrec_read_bench(p, &br, &bdoc) == EPAR_OK;
    if (!have_bench) epar_err_clear();
    struct epar_report_summary *s = EPAR_CALLOC(1, sizeof *s);
    if (!s) {
        json_decref(ardoc);
        json_decref(bdoc);
        return EPAR_ENOMEM;
    }
    epar_report_summary_lines(s, out_root, a, info, &ar, &br, have_bench, im);

    /* SUMMARY.md */
    int st = EPAR_OK;
    const char *path = epar_out_path(o, "SUMMARY.md");
    FILE *f = fopen(path, "w");
    if (!f) st = epar_err_set(EPAR_EIO, "cannot write '%s': %s", path, strerror(errno));
    static const char *const blocks[] = {"summary", "benchmark"};
    for (int b = 0; f && b < 2; b++) {
        int any = 0;
        for (int i = 0; i < s->n; i++) any |= !strcmp(s->line[i].block, blocks[b]);
        if (!any) continue;
        fprintf(f, "%s<!-- %s:begin (written by epar run-all from the audit; README.md quotes docs/SUMMARY.md: "
                   "refresh it with make summary-update) -->\n", b ? "\n" : "", blocks[b]);
        for (int i = 0, prev_item = 1; i < s->n; i++) {
            if (strcmp(s->line[i].block, blocks[b])) continue;
            int item = s->line[i].text[0] == '-';
            if (item && !prev_item) fputc('\n', f); /* a list after a paragraph */
            fprintf(f, "%s\n", s->line[i].text);
            prev_item = item;
        }
        fprintf(f, "<!-- %s:end -->\n", blocks[b]);
    }
    if (f && (ferror(f) | (fclose(f) != 0)) && !st) st = epar_err_set(EPAR_EIO, "cannot write '%s': %s", path, strerror(errno));

    /* summary.json */
    int cnt[EPAR_AUDIT_VERDICT_COUNT];
    json_t *root = json_object(), *lines = json_array(), *sections = json_array(), *stat = json_object();
    json_t *seeds = json_array(), *bseeds = json_array();
    for (int i = 0; i < ar.n_seeds; i++) json_array_append_new(seeds, json_integer(ar.seeds[i]));
    for (int i = 0; have_bench && i < br.parameters.n_seeds; i++)
        json_array_append_new(bseeds, json_integer(br.parameters.seeds[i]));
    for (int i = 0; i < s->n; i++)
        json_array_append_new(lines, json_pack("{s:s, s:s, s:b, s:s}", "block", s->line[i].block, "id", s->line[i].id,
                                               "static", s->line[i].is_static, "text", s->line[i].text));
    const char *sec;
    for (int k = 0; (sec = epar_report_nth_section(a, k)); k++) {
        int n = epar_report_count_rows(a, sec, 0, cnt);
        if (n) json_array_append_new(sections, json_pack("{s:s, s:i, s:o}", "section", sec, "claims", n, "verdicts",
                                                         epar_report_counts_json(cnt)));
    }
    int nstat = epar_report_count_rows(a, NULL, 0, cnt);
    json_object_set_new(stat, "claims", json_integer(nstat));
    json_object_set_new(stat, "verdicts", epar_report_counts_json(cnt));
    json_object_set_new(stat, "sections", sections);
    epar_report_count_rows(a, NULL, -1, cnt);
    json_t *all = epar_report_counts_json(cnt);
    int nproxy = epar_report_count_rows(a, NULL, 1, cnt);
    json_t *bench = have_bench ? json_pack("{s:s, s:o, s:I, s:i, s:o}", "budget", br.budget.name ? br.budget.name : "",
                                           "seeds", bseeds, "cells", (json_int_t)br.cells, "claims", nproxy, "verdicts",
                                           epar_report_counts_json(cnt))
                               : json_null();
    if (!have_bench) json_decref(bseeds);
    json_object_set_new(root, "written_by", json_string("epar run-all"));
    json_object_set_new(root, "epar_version", json_string(info->version));
    json_object_set_new(root, "protocol", json_string(info->protocol_path));
    json_object_set_new(root, "protocol_hash", json_string(ar.hash ? ar.hash : ""));
    json_object_set_new(root, "preset", json_string(ar.preset ? ar.preset : info->preset ? info->preset : ""));
    json_object_set_new(root, "seeds", seeds);
    json_object_set_new(root, "claims", json_integer((json_int_t)a->n));
    json_object_set_new(root, "verdicts", all);
    json_object_set_new(root, "static", stat);
    json_object_set_new(root, "benchmark", bench);
    json_object_set_new(root, "lines", lines);
    const char *jpath = epar_out_path(o, "summary.json");
    if (!st && json_dump_file(root, jpath, JSON_INDENT(2) | JSON_PRESERVE_ORDER))
        st = epar_err_set(EPAR_EIO, "cannot write '%s'", jpath);
    json_decref(root);
    epar_report_summary_free(s);
    free(s);
    json_decref(ardoc);
    json_decref(bdoc);
    return st;
}

int epar_exp_report_write(struct epar_out *o, const char *out_root, const struct epar_audit *a,
                          const struct epar_report_info *info)
{
    struct epar_report_proto *rp = NULL;
    int st = epar_report_proto_read(info->protocol, &rp);
    if (st) return st;
    struct epar_table *t = epar_audit_table(a), *rt = epar_report_retention_table(rp),
                      *im = epar_report_implied_table(rp);
    if (!t || !rt || !im) {
        epar_csv_free(t);
        epar_csv_free(rt);
        epar_csv_free(im);
        free(rp);
        return epar_err_set(EPAR_ENOMEM, "out of memory building the report tables");
    }
    st = epar_exp_write_table(o, "claims.csv", t);
    if (!st) st = epar_exp_write_table(o, "retention_definitions.csv", rt);
    if (!st) st = epar_exp_write_table(o, "implied_parameters.csv", im);
    if (!st) st = verdict_figure(o, a);
    if (!st) st = retention_figure(o, rp);
    if (!st) st = write_doc(o, "REPORT.md", 0, out_root, a, info, rp, rt, im);
    if (!st) st = write_doc(o, "REPORT.html", 1, out_root, a, info, rp, rt, im);
    if (!st) st = write_summary(o, out_root, a, info, im);
    epar_csv_free(t);
    epar_csv_free(rt);
    epar_csv_free(im);
    free(rp);
    return st;
}
