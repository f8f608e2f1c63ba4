/* plot: gnuplot scripts that render the figures, one .gp per figure, runnable on their own from the
 * output folder (`gnuplot name.gp` -> name.png). Every script loads the shared style plots/epar.gp by a
 * path relative to the output folder (absolute if no relative path exists). */
#ifndef EPAR_PLOT_H
#define EPAR_PLOT_H

#include "outdir.h"

/* Folder holding epar.gp: $EPAR_PLOTS_DIR, else next to the executable (plots/, ../plots/,
 * ../share/epar/plots/), else ./plots. Returns EPAR_EIO if none has epar.gp. */
int epar_plot_style_dir(char *buf, size_t n);

/* Write <name>.gp into the staging folder of o: a header (title, how to run it), the style load, the
 * output file name, then body. */
int epar_plot_script(struct epar_out *o, const char *name, const char *title, const char *body);
/* printf-style convenience over epar_plot_script. */
int epar_plot_scriptf(struct epar_out *o, const char *name, const char *title, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Is gnuplot on PATH? */
int epar_plot_available(void);
/* Run gnuplot on every .gp in the staging folder (up to `jobs` at once). Returns EPAR_OK, or EPAR_EIO
 * naming the first script gnuplot rejected. Does nothing if gnuplot is absent (*rendered = 0). */
int epar_plot_render(struct epar_out *o, int jobs, int *rendered);
/* Stop (SIGTERM) and reap the gnuplot children still running: for signal handlers (async-signal-safe). */
void epar_plot_kill_all(void);

#endif
