/* plot: the emitted script loads the shared style by a path relative to the output folder, names its PNG,
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
    char dir[300], root[300], p[600];
    snprintf(dir, sizeof dir, "%s/share/plots", tmpdir);
    snprintf(p, sizeof p, "mkdir -p %s %s/out/deep", dir, tmpdir);
    if (system(p) != 0) return 2;
    snprintf(p, sizeof p, "%s/epar.gp", dir);
    FILE *f = fopen(p, "w");
    fputs("set terminal pngcairo size 200,150\nset datafile separator comma\n", f);
    fclose(f);
    setenv("EPAR_PLOTS_DIR", dir, 1);
    char found[300];
    check_int(epar_plot_style_dir(found, sizeof found), EPAR_OK, "style found through EPAR_PLOTS_DIR");
    check_true(!strcmp(found, dir), "style folder is the one given");

    /* output root two levels below the common ancestor: <tmp>/out/deep/<section> -> ../../../share/plots */
    snprintf(root, sizeof root, "%s/out/deep", tmpdir);
    struct epar_out o;
    check_int(epar_out_begin(&o, root, "sec"), EPAR_OK, "open output folder");
    check_int(epar_plot_scriptf(&o, "fig", "A test figure", "plot '-' using 1:2 with lines\n%d,%d\n%d,%d\ne\n",
                                0, 1, 1, 2),
              EPAR_OK, "write a script");
    const char *gp = epar_out_path(&o, "fig.gp");
    check_true(file_has(gp, "load '../../../share/plots/epar.gp'"), "style loaded by a path relative to the final folder");
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
    } else {
        printf("# gnuplot not installed: rendering checks skipped\n");
    }
    check_int(epar_out_commit(&o), EPAR_OK, "commit");
    snprintf(p, sizeof p, "%s/sec/fig.gp", root);
    check_true(access(p, F_OK) == 0, "script in the final folder after commit");
    /* the committed script runs on its own from its folder */
    if (epar_plot_available()) {
        snprintf(p, sizeof p, "cd %s/sec && rm -f fig.png && gnuplot fig.gp 2>/dev/null && test -s fig.png", root);
        check_int(system(p), 0, "gnuplot fig.gp from the final folder");
    }
    unsetenv("EPAR_PLOTS_DIR");
    snprintf(p, sizeof p, "rm -rf %s", tmpdir);
    if (system(p) != 0) return 2;
    return check_summary("test_plot");
}
