/* publish: unit tests of lib/publish (the same calls as markdown and as HTML, escaping, figures, PNG lists). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "lib/publish.h"
#include "check.h"

static char tmpdir[] = "/tmp/epar-test-publish.XXXXXX";

static void write_text(const char *dir, const char *name, const char *s)
{
    char p[400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f) return;
    fputs(s, f);
    fclose(f);
}

/* the document of a few calls, as markdown (html 0) or HTML, into buf */
static void sample(int html, char *buf, size_t n)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    struct epar_pub_doc d = {f, html, tmpdir};
    epar_pub_h(&d, 2, "sec-1", "Title %d", 1);
    epar_pub_p(&d, "**bold** and `a<b` and [link](x.html) and ![fig](f.png) & <tag>");
    epar_pub_ul(&d, 1);
    epar_pub_li(&d, "item %s", "one");
    epar_pub_ul(&d, 0);
    const char *head[] = {"a", "b|c"}, *row[] = {"1\n2", NULL};
    epar_pub_table(&d, 2, head);
    epar_pub_tr(&d, 2, row);
    epar_pub_table_end(&d);
    fclose(f);
    snprintf(buf, n, "%s", s ? s : "");
    free(s);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) return 2;
    /* f.gp gives the figure's size (the report's figures are rendered after the report is written) */
    write_text(tmpdir, "f.gp", "# A <title>\nset terminal pngcairo size 640,480\nset terminal pngcairo size 800,600\n");
    char md[2048], html[2048];
    sample(0, md, sizeof md);
    sample(1, html, sizeof html);
    const char *want_md = "## Title 1\n\n"
                          "**bold** and `a<b` and [link](x.html) and ![fig](f.png) & <tag>\n\n"
                          "- item one\n\n"
                          "| a | b\\|c |\n|---|---|\n| 1 2 |  |\n\n";
    check_true(!strcmp(md, want_md), "markdown: marks kept, '|' and newlines of cells escaped:\n%s", md);
    const char *want_html = "<h2 id=\"sec-1\">Title 1</h2>\n"
                            "<p><strong>bold</strong> and <code>a&lt;b</code> and <a href=\"x.html\">link</a> and "
                            "<img src=\"f.png\" alt=\"fig\" width=\"800\" height=\"600\"> &amp; &lt;tag&gt;</p>\n"
                            "<ul>\n<li>item one</li>\n</ul>\n"
                            "<div class=\"scroll\"><table>\n<tr><th>a</th><th>b|c</th></tr>\n"
                            "<tr><td>1\n2</td><td></td></tr>\n</table></div>\n";
    check_true(!strcmp(html, want_html), "HTML: tags from the marks, the rest escaped, image sized by its script:\n%s",
               html);

    /* the page head: escaped title, the given style */
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    epar_pub_page_head(f, "R&D <report>", "p{x:1}\n");
    epar_pub_htmln(f, "a\"bcdef", 3);
    fclose(f);
    check_true(s && strstr(s, "<title>R&amp;D &lt;report&gt;</title>") && strstr(s, "<style>\np{x:1}\n</style>"),
               "page head: title escaped, style in place");
    check_true(s && strstr(s, "</body>") == NULL && strstr(s, "<body>\na&quot;b") != NULL,
               "page head ends at <body>; htmln escapes n bytes only");
    free(s);

    /* a figure: caption from its script's title, a link to the script, no size for a file that is not a PNG */
    write_text(tmpdir, "f.png", "not a png");
    s = NULL;
    f = open_memstream(&s, &len);
    epar_pub_figure(f, tmpdir, "f.png");
    fclose(f);
    check_true(s && strstr(s, "alt=\"A &lt;title&gt;\"") && strstr(s, "<a href=\"f.gp\">script</a>") &&
                   !strstr(s, "width="),
               "figure: caption, script link, no size: %s", s ? s : "");
    free(s);

    /* PNGs of a folder, sorted, hidden files and other names skipped */
    write_text(tmpdir, "b.png", "");
    write_text(tmpdir, "a.png", "");
    write_text(tmpdir, ".c.png", "");
    write_text(tmpdir, "d.pngx", "");
    int n = 0;
    char **v = epar_pub_list_pngs(tmpdir, &n);
    check_int(n, 3, "three PNGs");
    check_true(v && n == 3 && !strcmp(v[0], "a.png") && !strcmp(v[1], "b.png") && !strcmp(v[2], "f.png") && !v[3],
               "sorted and NULL-terminated");
    epar_pub_free_list(v);
    char nodir[400];
    snprintf(nodir, sizeof nodir, "%s/none", tmpdir);
    check_true(epar_pub_list_pngs(nodir, &n) == NULL && n == 0, "no folder: NULL");
    char fp[400];
    snprintf(fp, sizeof fp, "%s/a.png", tmpdir);
    check_true(epar_pub_file_exists(fp) && !epar_pub_file_exists(tmpdir) && !epar_pub_file_exists(nodir),
               "file_exists: a file, not a folder, not a missing path");

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_summary("test_publish");
}
