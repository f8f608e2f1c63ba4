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

int main(void)
{
    if (!mkdtemp(tmpdir)) return 2;
    char root[300], p[600];
    snprintf(p, sizeof p, "mkdir -p %s/out/deep", tmpdir);
    if (system(p) != 0) return 2;
    check_true(strstr(epar_plot_style(), "set datafile separator comma") != NULL, "the compiled-in style is plots/epar.gp");

    snprintf(root, sizeof root, "%s/out/deep", tmpdir);
    struct epar_out o;
    check_int(epar_out_begin(&o, root, "sec"), EPAR_OK, "open output folder");
    check_int(epar_plot_scriptf(&o, "fig", "A test figure", "plot '-' using 1:2 with lines\n%d,%d\n%d,%d\ne\n",
                                0, 1, 1, 2),
              EPAR_OK, "write a script");
    const char *gp = epar_out_path(&o, "fig.gp");
    check_true(!file_has(gp, "load "), "the script loads no other file");
    check_true(file_has(gp, "epar_heatmap = "), "the script carries the shared style");
    check_true(file_has(gp, "set output 'fig.png'"), "script names its PNG");
    check_true(file_has(gp, "# A test figure"), "script starts with its title");
    if (epar_plot_available()) {
        int rendered = 0;
        check_int(epar_plot_render(&o, 2, &rendered), EPAR_OK, "gnuplot renders the script");
        check_int(rendered, 1, "one figure rendered");
        check_true(access(epar_out_path(&o, "fig.png"), F_OK) == 0, "PNG written next to the script");
        check_int(epar_plot_script(&o, "bad", "broken", "plot this is not gnuplot\n"), EPAR_OK, "write a bad script");
        check_int(epar_plot_render(&o, 1, NULL), EPAR_EIO, "a script gnuplot rejects is an error");
        check_true(strstr(epar_err_message(), "bad.gp") != NULL, "the error names the script");
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
