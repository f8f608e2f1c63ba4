/* plot: gnuplot scripts that render the figures, one .gp per figure, runnable on their own from the
 * output folder (`gnuplot name.gp` -> name.png). Every script carries a copy of the shared style
 * plots/epar.gp (compiled into the binary), so a folder of figures renders wherever it is copied. */
#ifndef EPAR_PLOT_H
#define EPAR_PLOT_H

#include "outdir.h"

/* The shared gnuplot style (the text of plots/epar.gp at build time). */
const char *epar_plot_style(void);

/* Write <name>.gp into the staging folder of o: a header (title, how to run it), the shared style, the
 * output file name, then body. */
int epar_plot_script(struct epar_out *o, const char *name, const char *title, const char *body);
/* printf-style convenience over epar_plot_script. */
int epar_plot_scriptf(struct epar_out *o, const char *name, const char *title, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Is gnuplot on PATH? */
int epar_plot_available(void);
/* Run gnuplot on every .gp in the staging folder (up to `jobs` at once) and check each PNG it was to write
 * (present, the PNG signature first, the IEND chunk last: gnuplot exits 0 when cairo could not write the file).
 * Returns EPAR_OK, or EPAR_EIO naming the first script gnuplot rejected or the PNG that is missing or cut
 * short ("cannot write '<folder>/<name>.png': No space left on device" when the disk is full); no script is
 * started after a failure. Does nothing if gnuplot is absent (*rendered = 0). */
int epar_plot_render(struct epar_out *o, int jobs, int *rendered);
/* Stop (SIGTERM) and reap the gnuplot children still running: for signal handlers (async-signal-safe). */
void epar_plot_kill_all(void);

#endif
