/* plot: the emitted script carries the shared style (runs wherever the folder is copied), names its PNG,
 * and gnuplot renders it; a script gnuplot rejects is reported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/err.h"
#include "lib/outdir.h"
#include "lib/plot.h"
#include "check.h"

static char tmpdir[] = "/tmp/epar-test-plot.XXXXXX";

static int file_has(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, text) != NULL;
}

/* the title rendered as HTML (or plain) equals want */
static void title_is(const char *title, int as_html, const char *want)
{
    char out[512];
    epar_plot_title_render(title, as_html, out, sizeof out);
    check_true(!strcmp(out, want), "title %s '%s' -> '%s' (got '%s')", as_html ? "HTML" : "text", title, want, out);
}

/* a figure's title markup as a reader sees it: every construct gnuplot's enhanced text has, and truncation that never
 * leaves a tag open or a character cut */
static void titles(void)
{
    title_is("{/Symbol a} sensitivity (enhanced, {/Symbol b}=2, {/Symbol g}=1.5, L=64)", 1,
             "α sensitivity (enhanced, β=2, γ=1.5, L=64)");
    title_is("{/Symbol abgdlmpsDSW}", 1, "αβγδλμπσΔΣΩ");
    title_is("{/Symbol a=1, b} and {/Symbol \\326}", 0, "α=1, β and √");
    title_is("Attention weights A_{ij} (item 0)", 1, "Attention weights A<sub>ij</sub> (item 0)");
    title_is("Attention weights A_{ij} (item 0)", 0, "Attention weights A_ij (item 0)");
    title_is("Information importance I_j = ||x_j||", 1, "Information importance I<sub>j</sub> = ||x<sub>j</sub>||");
    title_is("x^{2} + y^2_i", 1, "x<sup>2</sup> + y<sup>2</sup><sub>i</sub>");
    title_is("e^{-{/Symbol b} d/L}", 1, "e<sup>-β d/L</sup>");
    title_is("{/Italic P}(d) and {/Bold bold} {/Times-BoldItalic x} {/=8 small} {/*0.8 smaller} {grouped}", 1,
             "<i>P</i>(d) and <b>bold</b> <b><i>x</i></b> small smaller grouped");
    title_is("{/Italic P}(d)", 0, "P(d)");
    title_is("a\\_b \\^c \\{d\\} \\@ \\& \\~ \\\\ two\\nlines", 1, "a_b ^c {d} @ &amp; ~ \\ two lines");
    title_is("@^{a}_{b} x&{space}y", 1, "<sup>a</sup><sub>b</sub> x y");
    title_is("<b> & \"q\" 'ok'", 1, "&lt;b&gt; &amp; &quot;q&quot; 'ok'");
    title_is("<b> & \"q\"", 0, "<b> & \"q\"");
    title_is("pos* marked, 100%, ratio < 1, unbalanced } and {open", 1, "pos* marked, 100%, ratio &lt; 1, unbalanced } and open");
    title_is("dangling_ and ^", 1, "dangling_ and ^");
    title_is("\\351t\\351", 1, "été");
    title_is("", 1, "");
    title_is(NULL, 1, "");
    /* truncated: the tags stay closed, no UTF-8 sequence is cut */
    for (size_t n = 1; n < 40; n++) {
        char out[64];
        epar_plot_title_render("x_{ijk} {/Symbol ab} {/Italic word}", 1, out, n);
        int open = 0, bad = strlen(out) >= n;
        for (const char *q = out; *q; q++) {
            if (!strncmp(q, "<sub>", 5) || !strncmp(q, "<i>", 3)) open++;
            if (!strncmp(q, "</sub>", 6) || !strncmp(q, "</i>", 4)) open--;
            if ((unsigned char)*q == 0xCE && !q[1]) bad = 1;   /* the first byte of α or β alone */
        }
        check_true(open == 0 && !bad, "title truncated to %zu bytes: '%s' (tags balanced, no cut character)", n, out);
    }
}

/* a PNG's size from its IHDR; other files are refused */
static void png_size(const char *dir)
{
    char p[600];
    snprintf(p, sizeof p, "%s/t.png", dir);
    static const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R',
                                        0, 0, 0x03, 0x84, 0, 0, 0x02, 0x58, 8, 6, 0, 0, 0};
    FILE *f = fopen(p, "wb");
    fwrite(png, 1, sizeof png, f);
    fclose(f);
    int w, h;
    check_int(epar_plot_png_size(p, &w, &h), EPAR_OK, "the size of a PNG");
    check_true(w == 900 && h == 600, "from its IHDR: 900 x 600 (got %d x %d)", w, h);
    f = fopen(p, "wb");
    fwrite(png, 1, 20, f);
    fclose(f);
    check_int(epar_plot_png_size(p, &w, &h), EPAR_EINVAL, "a truncated PNG is not a PNG");
    check_true(w == 0 && h == 0, "and gives no size");
    f = fopen(p, "wb");
    fputs("GIF89a, not a PNG at all", f);
    fclose(f);
    check_int(epar_plot_png_size(p, &w, &h), EPAR_EINVAL, "another format is not a PNG");
    snprintf(p, sizeof p, "%s/none.png", dir);
    check_int(epar_plot_png_size(p, &w, &h), EPAR_EIO, "a missing file is an I/O error");
    epar_err_clear();
}

int main(void)
{
    if (!mkdtemp(tmpdir)) return 2;
    char root[300], p[600];
    snprintf(p, sizeof p, "mkdir -p %s/out/deep", tmpdir);
    if (system(p) != 0) return 2;
    titles();
    png_size(tmpdir);

    snprintf(root, sizeof root, "%s/out/deep", tmpdir);
    struct epar_out o;
    check_int(epar_out_begin(&o, root, "sec"), EPAR_OK, "open output folder");
    check_int(epar_plot_scriptf(&o, "fig", "A test figure", "plot '-' using 1:2 with lines\n%d,%d\n%d,%d\ne\n",
                                0, 1, 1, 2),
              EPAR_OK, "write a script");
    const char *gp = epar_out_path(&o, "fig.gp");
    check_true(!file_has(gp, "load "), "the script loads no other file");
    check_true(file_has(gp, "epar_heatmap = ") && file_has(gp, "set datafile separator comma"),
               "the script carries the shared style (plots/epar.gp, compiled in)");
    check_true(file_has(gp, "set output 'fig.png'"), "script names its PNG");
    check_true(file_has(gp, "# A test figure"), "script starts with its title");
    if (epar_plot_available()) {
        int rendered = 0;
        check_int(epar_plot_render(&o, 2, &rendered), EPAR_OK, "gnuplot renders the script");
        check_int(rendered, 1, "one figure rendered");
        check_true(access(epar_out_path(&o, "fig.png"), F_OK) == 0, "PNG written next to the script");
        int w = 0, h = 0;
        check_int(epar_plot_png_size(epar_out_path(&o, "fig.png"), &w, &h), EPAR_OK, "gnuplot's PNG has a size");
        check_true(w > 100 && h > 100, "gnuplot's PNG: %d x %d", w, h);
        check_int(epar_plot_script(&o, "bad", "broken", "plot this is not gnuplot\n"), EPAR_OK, "write a bad script");
        check_int(epar_plot_render(&o, 1, NULL), EPAR_EIO, "a script gnuplot rejects is an error");
        check_true(strstr(epar_err_message(), "bad.gp") != NULL, "the error names the script");
        check_true(strstr(epar_err_message(), "\"bad.gp\" line ") != NULL, "the error has gnuplot's message");
        check_true(strstr(epar_err_hint_text(), "--no-render") != NULL, "the hint says how to keep the scripts");
        check_true(access(epar_out_path(&o, "fig.gp.log"), F_OK) != 0 && access(epar_out_path(&o, "bad.gp.log"), F_OK) != 0,
                   "gnuplot's logs are removed");
        remove(epar_out_path(&o, "bad.gp"));
        /* gnuplot exits 0 when cairo could not write the PNG (a full disk): the file is checked. Here the script
         * itself damages its figure after writing it: cut short, empty, absent. */
        const char *damage[][2] = {{"cut", "system('truncate -s 100 cut.png')"},
                                   {"nil", "system(': > nil.png')"},
                                   {"gone", "system('rm -f gone.png')"}};
        const char *why[] = {"incomplete PNG (100 bytes, no IEND chunk", "gnuplot left it empty", "gnuplot did not write it"};
        for (int k = 0; k < 3; k++) {
            check_int(epar_plot_scriptf(&o, damage[k][0], "damaged", "plot x\nset output\n%s\n", damage[k][1]), EPAR_OK,
                      "write a script that damages its PNG");
            check_int(epar_plot_render(&o, 2, NULL), EPAR_EIO, "a PNG that is not complete is an error, gnuplot's exit 0 or not");
            char want[4400], name[64];
            snprintf(want, sizeof want, "cannot write '%s/%s.png': ", o.stage_dir, damage[k][0]);
            check_true(strstr(epar_err_message(), want) != NULL, "the error names the PNG");
            check_true(strstr(epar_err_message(), why[k]) != NULL, "and what is wrong with it");
            snprintf(name, sizeof name, "%s.png", damage[k][0]);
            remove(epar_out_path(&o, name));
            snprintf(name, sizeof name, "%s.gp", damage[k][0]);
            remove(epar_out_path(&o, name));
        }
        check_int(epar_plot_render(&o, 2, &rendered), EPAR_OK, "the complete figure alone renders again");
        /* a script built piece by piece, longer than the first allocation, and a plot of an empty table: "no data" */
        FILE *f = fopen(epar_out_path(&o, "empty.csv"), "w");
        if (f) fputs("x,y\n", f);
        if (f) fclose(f);
        struct epar_plot_text t = {0};
        for (int i = 0; i < 400; i++) epar_plot_add(&t, "# filler line %03d to grow the text past its first allocation\n", i);
        epar_plot_add(&t, EPAR_PLOT_IF("'empty.csv', '1:2'") "plot 'empty.csv' skip 1 using 1:2 with lines" EPAR_PLOT_END
                          "# the end\n");
        check_true(t.n > 20000 && !t.oom, "the text grows");
        check_int(epar_plot_script_text(&o, "empty", "An empty table", &t), EPAR_OK, "write the built script");
        check_true(t.s == NULL, "the text is freed");
        check_int(epar_plot_render(&o, 2, &rendered), EPAR_OK, "a plot of an empty table renders");
        check_true(access(epar_out_path(&o, "empty.png"), F_OK) == 0, "its PNG, a 'no data' panel");
        snprintf(p, sizeof p, "tail -c 200 %s | grep -q '^# the end$'", epar_out_path(&o, "empty.gp"));
        check_int(system(p), 0, "the script is complete");
    } else {
        printf("# gnuplot not installed: rendering checks skipped\n");
    }
    check_int(epar_out_commit(&o), EPAR_OK, "commit");
    snprintf(p, sizeof p, "%s/sec/fig.gp", root);
    check_true(access(p, F_OK) == 0, "script in the final folder after commit");
    /* the committed script runs on its own from its folder, and from a copy of the folder anywhere */
    if (epar_plot_available()) {
        snprintf(p, sizeof p, "cd %s/sec && rm -f fig.png && gnuplot fig.gp 2>/dev/null && test -s fig.png", root);
        check_int(system(p), 0, "gnuplot fig.gp from the final folder");
        snprintf(p, sizeof p, "cp -r %s/sec %s/moved && rm -rf %s/out && cd %s/moved && rm -f fig.png && "
                              "gnuplot fig.gp 2>/dev/null && test -s fig.png", root, tmpdir, tmpdir, tmpdir);
        check_int(system(p), 0, "gnuplot fig.gp from a copy of the folder, the output root removed");
    }
    snprintf(p, sizeof p, "rm -rf %s", tmpdir);
    if (system(p) != 0) return 2;
    return check_summary("test_plot");
}
