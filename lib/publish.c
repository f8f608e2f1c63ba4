/* publish: the shared publishing kit of epar's reports (see publish.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "err.h"
#include "plot.h"
#include "publish.h"

int epar_pub_file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int epar_pub_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **epar_pub_list_pngs(const char *dir, int *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    size_t cap = 16;
    char **v = EPAR_MALLOC(cap * sizeof *v);
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
        qsort(v, (size_t)*n, sizeof *v, epar_pub_name_cmp);
        v[*n] = NULL;
    }
    return v;
}

void epar_pub_free_list(char **v)
{
    for (char **p = v; p && *p; p++) free(*p);
    free(v);
}

/* The size gnuplot gives <dir>/<name>.png: the last "set terminal ... size W,H" of its script (the shared style's,
 * or the script's own). The report's figures are rendered after the report is written, so their size comes from
 * their script; 0 when unknown. */
static int gp_png_size(const char *dir, const char *png, int *w, int *h)
{
    char p[4400], line[512];
    size_t l = strlen(png);
    *w = *h = 0;
    if (!dir || l < 5 || strcmp(png + l - 4, ".png")) return 0;
    snprintf(p, sizeof p, "%s/%.*s.gp", dir, (int)(l - 4), png);
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    while (fgets(line, sizeof line, f)) {
        int a, b;
        const char *z = strstr(line, " size ");
        if (!strncmp(line, "set terminal ", 13) && z && sscanf(z, " size %d,%d", &a, &b) == 2 && a > 0 && b > 0) {
            *w = a;
            *h = b;
        }
    }
    fclose(f);
    return *w > 0;
}

void epar_pub_htmln(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n && s[i]; i++) {
        switch (s[i]) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(s[i], f);
        }
    }
}

void epar_pub_html(FILE *f, const char *s)
{
    epar_pub_htmln(f, s ? s : "", s ? strlen(s) : 0);
}

/* the inline marks of s, as markdown (table cells: '|' escaped, newlines as spaces) or HTML */
void epar_pub_inline(struct epar_pub_doc *d, const char *s, int cell)
{
    if (!s) return;
    if (!d->html) {
        for (; *s; s++) {
            if (cell && *s == '|') fputs("\\|", d->f);
            else if (cell && *s == '\n') fputc(' ', d->f);
            else fputc(*s, d->f);
        }
        return;
    }
    int bold = 0;
    while (*s) {
        const char *e;
        if (s[0] == '*' && s[1] == '*') {
            fputs(bold ? "</strong>" : "<strong>", d->f);
            bold = !bold;
            s += 2;
        } else if (*s == '`' && (e = strchr(s + 1, '`'))) {
            fputs("<code>", d->f);
            epar_pub_htmln(d->f, s + 1, (size_t)(e - s - 1));
            fputs("</code>", d->f);
            s = e + 1;
        } else if ((s[0] == '[' || (s[0] == '!' && s[1] == '[')) && (e = strstr(s, "](")) && strchr(e, ')')) {
            int img = s[0] == '!';
            const char *t = s + 1 + img, *h = e + 2, *he = strchr(h, ')');
            fputs(img ? "<img src=\"" : "<a href=\"", d->f);
            epar_pub_htmln(d->f, h, (size_t)(he - h));
            fputs(img ? "\" alt=\"" : "\">", d->f);
            epar_pub_htmln(d->f, t, (size_t)(e - t));
            char src[512];
            int w, hh;
            snprintf(src, sizeof src, "%.*s", (int)(he - h), h);
            if (img && gp_png_size(d->dir, src, &w, &hh)) fprintf(d->f, "\" width=\"%d\" height=\"%d", w, hh);
            fputs(img ? "\">" : "</a>", d->f);
            s = he + 1;
        } else {
            epar_pub_htmln(d->f, s, 1);
            s++;
        }
    }
    if (bold) fputs("</strong>", d->f);
}

static void doc_vfmt(struct epar_pub_doc *d, int cell, const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) return;
    epar_pub_inline(d, s, cell);
    free(s);
}

void epar_pub_h(struct epar_pub_doc *d, int level, const char *id, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (d->html) {
        fprintf(d->f, "<h%d", level);
        if (id) { fputs(" id=\"", d->f); epar_pub_html(d->f, id); fputc('"', d->f); }
        fputc('>', d->f);
    } else {
        for (int i = 0; i < level; i++) fputc('#', d->f);
        fputc(' ', d->f);
    }
    doc_vfmt(d, 0, fmt, ap);
    va_end(ap);
    if (d->html) fprintf(d->f, "</h%d>\n", level);
    else fputs("\n\n", d->f);
}

void epar_pub_p(struct epar_pub_doc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(d->html ? "<p>" : "", d->f);
    doc_vfmt(d, 0, fmt, ap);
    va_end(ap);
    fputs(d->html ? "</p>\n" : "\n\n", d->f);
}

void epar_pub_ul(struct epar_pub_doc *d, int open)
{
    fputs(d->html ? (open ? "<ul>\n" : "</ul>\n") : (open ? "" : "\n"), d->f);
}

void epar_pub_li(struct epar_pub_doc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(d->html ? "<li>" : "- ", d->f);
    doc_vfmt(d, 0, fmt, ap);
    va_end(ap);
    fputs(d->html ? "</li>\n" : "\n", d->f);
}

/* a table: the head row, then epar_pub_tr per row, then epar_pub_table_end (HTML: in a box that scrolls sideways on
 * a narrow screen instead of widening the page) */
void epar_pub_table(struct epar_pub_doc *d, int n, const char *const *head)
{
    if (d->html) {
        fputs("<div class=\"scroll\"><table>\n<tr>", d->f);
        for (int i = 0; i < n; i++) { fputs("<th>", d->f); epar_pub_inline(d, head[i], 1); fputs("</th>", d->f); }
        fputs("</tr>\n", d->f);
        return;
    }
    for (int i = 0; i < n; i++) { fputs("| ", d->f); epar_pub_inline(d, head[i], 1); fputc(' ', d->f); }
    fputs("|\n", d->f);
    for (int i = 0; i < n; i++) fputs("|---", d->f);
    fputs("|\n", d->f);
}

void epar_pub_tr(struct epar_pub_doc *d, int n, const char *const *cells)
{
    fputs(d->html ? "<tr>" : "", d->f);
    for (int i = 0; i < n; i++) {
        fputs(d->html ? "<td>" : "| ", d->f);
        epar_pub_inline(d, cells[i] ? cells[i] : "", 1);
        fputs(d->html ? "</td>" : " ", d->f);
    }
    fputs(d->html ? "</tr>\n" : "|\n", d->f);
}

void epar_pub_table_end(struct epar_pub_doc *d)
{
    fputs(d->html ? "</table></div>\n" : "\n", d->f);
}

void epar_pub_page_head(FILE *f, const char *title, const char *css)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>", f);
    epar_pub_html(f, title);
    fprintf(f, "</title>\n<style>\n%s</style></head><body>\n", css);
}

/* what a figure shows: the title line its .gp script starts with ("# <title>", gnuplot's enhanced-text markup), else
 * its file name */
static void figure_caption(const char *out_root, const char *rel_png, char *out, size_t n)
{
    char p[4300];
    snprintf(p, sizeof p, "%s/%.*s.gp", out_root, (int)(strlen(rel_png) - 4), rel_png);
    snprintf(out, n, "%s", rel_png);
    FILE *f = fopen(p, "r");
    if (!f) return;
    char line[512];
    if (fgets(line, sizeof line, f) && line[0] == '#' && line[1] == ' ') {
        line[strcspn(line, "\n")] = '\0';
        snprintf(out, n, "%s", line + 2);
    }
    fclose(f);
}

/* one figure: the image at its own size (width and height from the PNG, so the page does not move when lazy images
 * load and a contents link lands at its heading), the caption with the title's markup rendered */
void epar_pub_figure(FILE *f, const char *out_root, const char *rel_png)
{
    char cap[512], cap_html[2048], cap_text[1024], gp[600], png[4300];
    figure_caption(out_root, rel_png, cap, sizeof cap);
    epar_plot_title_render(cap, 1, cap_html, sizeof cap_html);
    epar_plot_title_render(cap, 0, cap_text, sizeof cap_text);
    snprintf(png, sizeof png, "%s/%s", out_root, rel_png);
    int w = 0, h = 0;
    if (epar_plot_png_size(png, &w, &h)) epar_err_clear(); /* not a PNG gnuplot wrote: no size to reserve */
    fputs("<figure><a href=\"", f);
    epar_pub_html(f, rel_png);
    fputs("\"><img src=\"", f);
    epar_pub_html(f, rel_png);
    fputs("\" alt=\"", f);
    epar_pub_html(f, cap_text);
    if (w > 0) fprintf(f, "\" width=\"%d\" height=\"%d", w, h);
    fputs("\" loading=\"lazy\"></a><figcaption>", f);
    fputs(cap_html, f);
    fputs(" <small>(<code>", f);
    epar_pub_html(f, rel_png);
    fputs("</code>", f);
    snprintf(gp, sizeof gp, "%s/%.*s.gp", out_root, (int)(strlen(rel_png) - 4), rel_png);
    if (epar_pub_file_exists(gp)) {
        fputs(", <a href=\"", f);
        fprintf(f, "%.*s.gp", (int)(strlen(rel_png) - 4), rel_png);
        fputs("\">script</a>", f);
    }
    fputs(")</small></figcaption></figure>\n", f);
}
