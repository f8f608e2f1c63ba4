/* plot: gnuplot scripts that render the figures, one .gp per figure, runnable on their own from the
 * output folder (`gnuplot name.gp` -> name.png). Every script carries a copy of the shared style
 * plots/epar.gp (compiled into the binary), so a folder of figures renders wherever it is copied. */
#ifndef EPAR_PLOT_H
#define EPAR_PLOT_H

#include "outdir.h"


/* Write <name>.gp into the staging folder of o: a header (title, how to run it), the shared style, the
 * output file name, then body. */
int epar_plot_script(struct epar_out *o, const char *name, const char *title, const char *body);
/* printf-style convenience over epar_plot_script. */
int epar_plot_scriptf(struct epar_out *o, const char *name, const char *title, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A script body built piece by piece (out of memory: oom set, later appends ignored); start with {0}. */
struct epar_plot_text {
    char *s;
    size_t n, cap;
    int oom;
};
void epar_plot_add(struct epar_plot_text *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* epar_plot_script of b's text (EPAR_ENOMEM if an append ran out of memory); frees the text either way. */
int epar_plot_script_text(struct epar_out *o, const char *name, const char *title, struct epar_plot_text *b);

/* A plot command that draws a "no data" panel instead when its data has no valid point (an empty table, every
 * value nan), where gnuplot would stop with "x range is invalid" (plots/epar.gp, epar_check): string literals
 * around the plot command of a script body, e.g.
 *   EPAR_PLOT_IF("'cost.csv', '6'") "plot 'cost.csv' skip 1 using 6:xtic(1)" EPAR_PLOT_END
 * the argument is the file and a using spec of one or two columns that the plot needs valid (both quoted for
 * gnuplot); the spec may be any expression of the plot's using spec, e.g. '(strcol(1) eq \"lm\" ? $3 : NaN):5'. */
#define EPAR_PLOT_IF(file_spec) "eval epar_check(" file_spec ")\nif (epar_ok) {\n"
#define EPAR_PLOT_END "\n} else { @epar_no_data }\n"

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

/* A figure title written in gnuplot's enhanced-text markup (the "# title" line of every .gp) as a reader of a web
 * page should see it: {/Symbol a} -> α (every Latin letter of the Symbol font, and its octal escapes such as \326 ->
 * √), x_{ij} and x_i -> subscripts, x^{2} -> superscripts, {/Italic x} and {/Bold x} -> italic and bold, other font
 * and size changes ({/=8 x}, a relative size, {x}) -> x, the escapes \_ \^ \{ \} \@ \& \~ \\ -> the character,
 * \n -> a space, @ (a phantom box) dropped, &{x} -> a space; a _ or ^ before a space stays as it is. as_html: HTML,
 * every other character escaped (<sub>, <sup>, <i>, <b>); else plain text for an alt attribute (x_ij, x^2;
 * unescaped). Writes at most n bytes including the terminating NUL (never a cut UTF-8 sequence or an unclosed tag);
 * returns out. */
char *epar_plot_title_render(const char *title, int as_html, char *out, size_t n);

/* The width and height of a PNG file (its IHDR chunk). EPAR_EIO when it cannot be read, EPAR_EINVAL when it is not
 * a PNG; *w and *h are 0 then. */
int epar_plot_png_size(const char *path, int *w, int *h);

#endif
