/* output/index.html: every figure under the output folder grouped by paper section, the claims table with its
 * verdict filter, and the head views (see report.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/err.h"
#include "lib/plot.h"
#include "lib/publish.h"
#include "experiments/common.h"
#include "experiments/report/report_int.h"

/* ---- index.html ---- */

static int is_folder(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* "not reproduced" -> "not-reproduced", "needs >= 2 seeds" -> "needs-2-seeds": a class name / filter key */
static void verdict_slug(enum epar_audit_verdict v, char *out, size_t n)
{
    const char *s = epar_audit_verdict_name(v);
    size_t k = 0;
    int dash = 0;
    for (; *s && k + 1 < n; s++) {
        if ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')) {
            if (dash && k) out[k++] = '-';
            dash = 0;
            out[k++] = *s;
        } else dash = 1;
    }
    out[k] = '\0';
}


/* one claim as a table row (data-verdict: the filter's key) */
static void index_claim(FILE *f, const struct epar_audit_row *r)
{
    char slug[48], meas[512], sd[64];
    verdict_slug(r->verdict, slug, sizeof slug);
    epar_report_shown_measured(r, meas, sizeof meas);
    epar_report_shown_sd(r, sd, sizeof sd);
    fprintf(f, "<tr class=\"claim v-%s\" data-verdict=\"%s\" id=\"claim-", slug, slug);
    epar_pub_html(f, r->id);
    fputs("\"><td data-label=\"claim\"><code>", f);
    epar_pub_html(f, r->id);
    fputs("</code><br>", f);
    epar_pub_html(f, r->statement);
    fputs("</td><td data-label=\"reported\" class=\"num\">", f);
    epar_pub_html(f, r->reported);
    /* each reading on one line, several readings side by side as room allows */
    fputs("</td><td data-label=\"measured\" class=\"num meas\">", f);
    for (const char *p = meas; *p;) {
        const char *e = strstr(p, "; ");
        size_t len = e ? (size_t)(e - p) + 1 : strlen(p);
        fputs("<span>", f);
        epar_pub_htmln(f, p, len);
        fputs("</span>", f);
        if (!e) break;
        fputc(' ', f);
        p = e + 2;
    }
    if (*sd) {
        fputs(" <small>(sd ", f);
        epar_pub_html(f, sd);
        fputs(")</small>", f);
    }
    fputs("</td><td data-label=\"verdict\" class=\"verdict\"><strong>", f);
    epar_pub_html(f, epar_audit_verdict_name(r->verdict));
    fputs("</strong></td><td data-label=\"how\"><details><summary>rule, measurement, source, note</summary>"
          "<b>rule</b> ", f);
    epar_pub_html(f, r->rule);
    if (*r->accepted) {
        fputs("; <b>accepted</b> ", f);
        epar_pub_html(f, r->accepted);
    }
    fputs("<br><b>measurement</b> <code>", f);
    epar_pub_html(f, r->measurement);
    fputs("</code>", f);
    if (*r->input) {
        fputs(" <b>input</b> <code>", f);
        epar_pub_html(f, r->input);
        fputs("</code>", f);
    }
    fputs("<br><b>source</b> ", f);
    epar_pub_html(f, r->source);
    fputs("<br><b>how the verdict follows</b> ", f);
    epar_pub_html(f, r->note);
    fputs("</details></td></tr>\n", f);
}

static void section_counts(const struct epar_audit *a, const char *sec, char *out, size_t n)
{
    int cnt[EPAR_AUDIT_VERDICT_COUNT] = {0};
    for (size_t j = 0; j < a->n; j++)
        if (!sec || !strcmp(a->rows[j].section, sec)) cnt[a->rows[j].verdict]++;
    out[0] = '\0';
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++)
        if (cnt[v])
            snprintf(out + strlen(out), n - strlen(out), "%s%d %s", out[0] ? ", " : "", cnt[v],
                     epar_audit_verdict_name((enum epar_audit_verdict)v));
}

/* the claims of one section, then the figures they name */
static void index_claim_section(FILE *f, const char *out_root, const struct epar_audit *a, const char *sec)
{
    char counts[512];
    section_counts(a, sec, counts, sizeof counts);
    fputs("<section class=\"claims-section\" id=\"claims-", f);
    epar_pub_html(f, sec);
    fputs("\"><h2>", f);
    epar_pub_html(f, epar_report_group_title(sec));
    fputs("</h2>\n<p>", f);
    epar_pub_html(f, counts);
    fputs(".</p>\n<table class=\"claims\"><tr class=\"head\"><th>claim</th><th>reported</th><th>measured</th>"
          "<th>verdict</th><th>how</th></tr>\n", f);
    for (size_t j = 0; j < a->n; j++)
        if (!strcmp(a->rows[j].section, sec)) index_claim(f, &a->rows[j]);
    fputs("</table>\n", f);
    int shown = 0;
    for (size_t j = 0; j < a->n; j++) {
        const struct epar_audit_row *r = &a->rows[j];
        if (strcmp(r->section, sec)) continue;
        for (char **fg = r->figures; fg && *fg; fg++) {
            int dup = 0;
            for (size_t q = 0; q < j && !dup; q++)
                if (!strcmp(a->rows[q].section, sec))
                    for (char **h = a->rows[q].figures; h && *h && !dup; h++) dup = !strcmp(*h, *fg);
            for (char **h = r->figures; h < fg && !dup; h++) dup = !strcmp(*h, *fg);
            char p[4300];
            snprintf(p, sizeof p, "%s/%s", out_root, *fg);
            if (dup || !epar_pub_file_exists(p)) continue;
            if (!shown++) fputs("<h3>The figures these claims rest on</h3>\n<div class=\"grid\">\n", f);
            epar_pub_figure(f, out_root, *fg);
        }
    }
    if (shown) fputs("</div>\n", f);
    fputs("</section>\n", f);
}

/* every folder with figures: the command table's in its order, then any other, sorted */
static int figure_folders(const char *out_root, const struct epar_report_info *info, char ***dirs_out,
                          const char ***labels_out)
{
    DIR *d = opendir(out_root);
    char *others[64];
    int no = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp-") || strstr(de->d_name, ".old-") || no == 64) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", out_root, de->d_name);
        if (!is_folder(p)) continue;
        int known = 0;
        for (int s = 0; s < info->n_folders; s++) known |= !strcmp(info->folders[s].dir, de->d_name);
        if (!known) others[no++] = strdup(de->d_name);
    }
    if (d) closedir(d);
    qsort(others, (size_t)no, sizeof *others, epar_pub_name_cmp);
    int total = info->n_folders + no, n = 0;
    char **dirs = EPAR_CALLOC((size_t)total + 1, sizeof *dirs);
    const char **labels = EPAR_CALLOC((size_t)total + 1, sizeof *labels);
    for (int s = 0; dirs && labels && s < total; s++) {
        const char *dir = s < info->n_folders ? info->folders[s].dir : others[s - info->n_folders];
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", out_root, dir);
        int np;
        char **pngs = epar_pub_list_pngs(p, &np);
        epar_pub_free_list(pngs);
        if (np <= 0) continue;
        dirs[n] = strdup(dir);
        labels[n++] = s < info->n_folders ? info->folders[s].label : NULL;
    }
    for (int i = 0; i < no; i++) free(others[i]);
    *dirs_out = dirs;
    *labels_out = labels;
    return dirs && labels ? n : 0;
}

static void index_folder(FILE *f, const char *out_root, const char *dir, const char *label)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", out_root, dir);
    int n;
    char **pngs = epar_pub_list_pngs(p, &n);
    fputs("<section id=\"fig-", f);
    epar_pub_html(f, dir);
    fputs("\"><h3>", f);
    epar_pub_html(f, label ? label : dir);
    fprintf(f, " <small>(<code>%s/</code>, %d figures)</small></h3>\n<div class=\"grid\">\n", dir, n);
    for (int i = 0; i < n; i++) {
        char rel[600];
        snprintf(rel, sizeof rel, "%s/%s", dir, pngs[i]);
        epar_pub_figure(f, out_root, rel);
    }
    fputs("</div></section>\n", f);
    epar_pub_free_list(pngs);
}

/* the filter: a select of the verdicts present; rows of other verdicts are hidden, and so is a section left empty */
static const char filter_js[] =
    "<script>\n(function(){\n"
    "var sel=document.getElementById('verdict-filter'),status=document.getElementById('filter-status');\n"
    "function apply(){var v=sel.value,shown=0;\n"
    " document.querySelectorAll('tr.claim').forEach(function(r){var on=(v==='all'||r.dataset.verdict===v);"
    "r.hidden=!on;if(on)shown++;});\n"
    " document.querySelectorAll('section.claims-section').forEach(function(s){"
    "s.hidden=!s.querySelector('tr.claim:not([hidden])');});\n"
    " status.textContent=shown+' claim'+(shown===1?'':'s')+' shown';}\n"
    "sel.addEventListener('change',apply);\n"
    "document.querySelectorAll('button[data-verdict]').forEach(function(b){b.addEventListener('click',function(){"
    "sel.value=b.dataset.verdict;apply();document.getElementById('claims').scrollIntoView();});});\n"
    "apply();})();\n</script>\n";

/* the bottom line: the generated sentences (epar_report_bottom_line), before the counts */
static void index_bottom_line(FILE *f, const struct epar_audit *a)
{
    struct epar_report_summary *s = EPAR_CALLOC(1, sizeof *s);
    if (!s) return;
    epar_report_bottom_line(s, a);
    struct epar_pub_doc d = {f, 1, NULL};
    if (s->n) {
        fputs("<section id=\"bottom-line\"><h2>Bottom line</h2>\n<ul>\n", f);
        for (int i = 0; i < s->n; i++) {
            fputs("<li>", f);
            epar_pub_inline(&d, s->line[i].text, 0);
            fputs("</li>\n", f);
        }
        fputs("</ul></section>\n", f);
    }
    epar_report_summary_free(s);
    free(s);
}

/* index.html's summary: counts, verdict chips, one sentence per section, failed experiments, stale claims */
static void index_summary(FILE *f, const struct epar_audit *a, const struct epar_report_info *info)
{
    char counts[512];
    section_counts(a, NULL, counts, sizeof counts);
    fprintf(f, "<section id=\"summary\"><h2>Summary</h2>\n<p><strong>%zu claims:</strong> ", a->n);
    epar_pub_html(f, counts);
    fputs(".</p>\n<div class=\"chips\">", f);
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++) {
        if (!a->counts[v]) continue;
        char slug[48];
        verdict_slug((enum epar_audit_verdict)v, slug, sizeof slug);
        fprintf(f, "<button type=\"button\" class=\"v-%s\" data-verdict=\"%s\">%s: %d</button>", slug, slug,
                epar_audit_verdict_name((enum epar_audit_verdict)v), a->counts[v]);
    }
    fputs("</div>\n<ul>\n", f);
    const char *sec;
    for (int k = 0; (sec = epar_report_nth_section(a, k)); k++) {
        section_counts(a, sec, counts, sizeof counts);
        fputs("<li><a href=\"#claims-", f);
        epar_pub_html(f, sec);
        fputs("\">", f);
        epar_pub_html(f, epar_report_group_title(sec));
        fputs("</a>: ", f);
        epar_pub_html(f, counts);
        /* the first claim of the section that does not hold, as an example */
        for (size_t j = 0; j < a->n; j++) {
            const struct epar_audit_row *r = &a->rows[j];
            if (strcmp(r->section, sec) || r->verdict != EPAR_AUDIT_NOT_REPRODUCED) continue;
            char meas[256];
            epar_report_shown_measured(r, meas, sizeof meas);
            fputs(". Not reproduced, e.g. <a href=\"#claim-", f);
            epar_pub_html(f, r->id);
            fputs("\">", f);
            epar_pub_html(f, r->id);
            fputs("</a>: reported ", f);
            epar_pub_html(f, r->reported);
            fputs(", measured ", f);
            epar_pub_html(f, meas);
            break;
        }
        fputs(".</li>\n", f);
    }
    fputs("</ul>\n", f);
    if (info->failed && info->failed[0]) {
        fputs("<p><strong>Experiments that failed in this run:</strong>", f);
        for (const char *const *x = info->failed; *x; x++) { fputs(" <code>", f); epar_pub_html(f, *x); fputs("</code>", f); }
        fputs(" (their claims read older files or none).</p>\n", f);
    }
    if (a->stale) fprintf(f, "<p><strong>%d claim(s) are stale</strong>: their files come from another run; rerun "
                             "<code>epar run-all</code>.</p>\n", a->stale);
    fputs("<p>The full report: <a href=\"report/REPORT.html\">report/REPORT.html</a> (protocol, verdicts, findings, "
          "retention definitions, the reference's defects; as markdown: <a href=\"report/REPORT.md\">REPORT.md</a>); "
          "every number in full precision: <a href=\"report/claims.csv\">report/claims.csv</a>. Numbers on this page "
          "are rounded to the precision of the figure they are compared with.</p></section>\n", f);
}

/* the table of contents: the claim sections and the figure folders */
static void index_toc(FILE *f, const struct epar_audit *a, char **dirs, const char **labels, int nd, int n_views)
{
    const char *sec;
    fputs("<nav class=\"toc\" id=\"contents\"><strong>Contents</strong><ul>\n<li><a href=\"#summary\">Summary</a></li>\n"
          "<li><a href=\"#claims\">Claims by paper section</a><ul>\n", f);
    for (int k = 0; (sec = epar_report_nth_section(a, k)); k++) {
        fputs("<li><a href=\"#claims-", f);
        epar_pub_html(f, sec);
        fputs("\">", f);
        epar_pub_html(f, epar_report_group_title(sec));
        fputs("</a></li>\n", f);
    }
    fputs("</ul></li>\n<li><a href=\"#figures\">Figures by output folder</a><ul>\n", f);
    for (int i = 0; i < nd; i++) {
        fputs("<li><a href=\"#fig-", f);
        epar_pub_html(f, dirs[i]);
        fputs("\">", f);
        epar_pub_html(f, labels[i] ? labels[i] : dirs[i]);
        fputs("</a></li>\n", f);
    }
    fputs("</ul></li>\n", f);
    if (n_views > 0) fputs("<li><a href=\"#head-views\">Attention of trained models</a></li>\n", f);
    fputs("<li><a href=\"report/REPORT.html\">The full report</a></li>\n</ul></nav>\n", f);
}

/* the folders of epar inspect with a head view page: <out>/inspect/<name>/head_view.html, sorted */
static char **list_head_views(const char *out_root, int *n)
{
    char dir[4200], p[4600];
    snprintf(dir, sizeof dir, "%s/inspect", out_root);
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char **v = EPAR_CALLOC(257, sizeof *v);
    struct dirent *de;
    while (v && *n < 256 && (de = readdir(d))) {
        if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp-") || strstr(de->d_name, ".old-")) continue;
        snprintf(p, sizeof p, "%s/%s/head_view.html", dir, de->d_name);
        if (epar_pub_file_exists(p) && (v[*n] = strdup(de->d_name))) (*n)++;
    }
    closedir(d);
    if (v) qsort(v, (size_t)*n, sizeof *v, epar_pub_name_cmp);
    return v;
}

/* what trained models attend to (epar inspect), when it was run into this output folder */
static void index_head_views(FILE *f, const char *out_root, char **views, int n)
{
    if (n <= 0) return;
    fputs("<section id=\"head-views\"><h2>Attention of trained models</h2>\n<p>Written by <code>epar inspect</code> from "
          "checkpoints of <code>epar train</code> and <code>epar benchmark</code>: per layer and head, where the model "
          "looks on one input.</p>\n<ul>\n", f);
    for (int i = 0; i < n; i++) {
        char rel[600], png[4800];
        snprintf(rel, sizeof rel, "inspect/%s", views[i]);
        fputs("<li><a href=\"", f);
        epar_pub_html(f, rel);
        fputs("/head_view.html\">", f);
        epar_pub_html(f, views[i]);
        fputs("</a>: head view; <a href=\"", f);
        epar_pub_html(f, rel);
        fputs("/heads.csv\">heads.csv</a>", f);
        for (int l = 0; l < 64; l++) {
            snprintf(png, sizeof png, "%s/%s/attention_layer%d.png", out_root, rel, l);
            if (!epar_pub_file_exists(png)) continue;
            fprintf(f, ", <a href=\"");
            epar_pub_html(f, rel);
            fprintf(f, "/attention_layer%d.png\">layer %d</a>", l, l);
        }
        fputs("</li>\n", f);
    }
    fputs("</ul></section>\n", f);
}

/* the claims heading with its verdict filter */
static void index_filter(FILE *f, const struct epar_audit *a)
{
    fputs("<section id=\"claims\"><h2>Claims by paper section</h2>\n<p><label for=\"verdict-filter\">Show verdict: "
          "</label><select id=\"verdict-filter\"><option value=\"all\">all</option>", f);
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++) {
        if (!a->counts[v]) continue;
        char slug[48];
        verdict_slug((enum epar_audit_verdict)v, slug, sizeof slug);
        fprintf(f, "<option value=\"%s\">%s (%d)</option>", slug, epar_audit_verdict_name((enum epar_audit_verdict)v),
                a->counts[v]);
    }
    fprintf(f, "</select> <span id=\"filter-status\">%zu claims shown</span></p>\n</section>\n", a->n);
}

int epar_exp_report_index(const char *out_root, const struct epar_audit *a, const struct epar_report_info *info)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/index.html", out_root);
    struct epar_out_file w;
    FILE *f = epar_out_fopen(&w, path); /* checked writes, then renamed over the old index */
    if (!f) return EPAR_EIO;
    char title[128];
    snprintf(title, sizeof title, "EPAR reproduction (epar %s)", info->version);
    epar_pub_page_head(f, title, epar_report_css);
    fputs("<h1>EPAR reproduction and audit</h1>\n<p>Written by <code>epar run-all</code> (epar ", f);
    epar_pub_html(f, info->version);
    fputs(") from <code>", f);
    epar_pub_html(f, info->protocol_path);
    fputs("</code>, preset <code>", f);
    epar_pub_html(f, info->preset ? info->preset : "(the file's default)");
    fputs("</code>. The claims of the paper <i>EPAR: Explicit Position-Attention Relationship for Interpretable "
          "Long-Range Attention in Transformers</i>, of its reference code and of four other source documents, each "
          "judged by a rule fixed in the protocol before the results were seen.</p>\n", f);
    char banner[1024];
    if (epar_exp_report_banner(out_root, a, banner, sizeof banner)) {
        fputs("<p class=\"banner\" id=\"budget-banner\">", f);
        epar_report_banner_html(f, banner);
        fputs("</p>\n", f);
    }
    index_bottom_line(f, a);
    index_summary(f, a, info);
    char **dirs;
    const char **labels;
    int nd = figure_folders(out_root, info, &dirs, &labels);
    int n_views;
    char **views = list_head_views(out_root, &n_views);
    index_toc(f, a, dirs, labels, nd, n_views);
    index_filter(f, a);
    const char *sec;
    for (int k = 0; (sec = epar_report_nth_section(a, k)); k++) index_claim_section(f, out_root, a, sec);
    fputs("<section id=\"figures\"><h2>Figures by output folder</h2>\n", f);
    for (int i = 0; i < nd; i++) index_folder(f, out_root, dirs[i], labels[i]);
    fputs("</section>\n", f);
    index_head_views(f, out_root, views, n_views);
    for (int i = 0; views && i < n_views; i++) free(views[i]);
    free(views);
    for (int i = 0; dirs && i < nd; i++) free(dirs[i]);
    free(dirs);
    free(labels);
    fputs(filter_js, f);
    fputs("</body></html>\n", f);
    return epar_out_fclose(&w);
}
