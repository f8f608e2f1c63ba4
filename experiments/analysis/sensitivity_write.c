/* Appendix: parameter sensitivity, the writer: every table (sensitivity_tables.c), the report
 * (sensitivity_report.c), run.json and the figures into the output folder. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "experiments/common.h"
#include "experiments/analysis/sensitivity_int.h"

static int col1(const struct epar_table *t, const char *name) /* gnuplot column number */
{
    return epar_csv_col(t, name) + 1;
}

/* gnuplot lines that read the baseline of row `row` of baseline.csv into bm/bs and draw it as a band */
static void band(char *out, size_t n, const struct epar_table *base, int row, const char *metric)
{
    char sdn[96];
    snprintf(sdn, sizeof sdn, "%s_sd", metric);
    snprintf(out, n,
             "undefine STATS_*\nstats [*:*][*:*] 'baseline.csv' skip 1 every ::%d::%d using %d nooutput\n"
             "bm = exists('STATS_min') ? STATS_min : NaN\n"
             "undefine STATS_*\nstats [*:*][*:*] 'baseline.csv' skip 1 every ::%d::%d using (sd(%d)) nooutput\n"
             "bs = exists('STATS_min') ? STATS_min : 0\n"
             "if (bm == bm) { set object 1 rect from graph 0, first (bm-bs) to graph 1, first (bm+bs) behind "
             "fc rgb '#f4c7c3' fs solid 0.7 noborder }\n",
             row, row, col1(base, metric), row, row, col1(base, sdn));
}

static int baseline_row(const struct epar_table *base, const char *sweep)
{
    for (size_t r = 0; r < base->nrows; r++)
        if (!strcmp(epar_csv_get_str(base, r, "sweep"), sweep)) return (int)r;
    return 0;
}

struct panel { const char *metric, *label; int stochastic; };

/* a 2x2 figure of four metrics of one sweep against its parameter, error bars = sd across seeds */
static int sweep_figure(struct epar_out *o, const char *name, const char *title, const char *csv,
                        const struct epar_table *t, const struct epar_table *base, const char *sweep,
                        const char *xlabel, int logx, const struct panel *pn)
{
    char body[16384], b[1024];
    int row = baseline_row(base, sweep);
    int n = snprintf(body, sizeof body,
                     "set terminal @epar_term size 1200,900\n"
                     "set multiplot layout 2,2 title '%s'\n"
                     "set xlabel '%s'\n%s"
                     "set autoscale xfix\nset offsets graph 0.04, graph 0.04, graph 0.05, graph 0.05\n"
                     "set key top left opaque box lc rgb '#bbbbbb' font ',8'\n",
                     title, xlabel, logx ? "set logscale x\n" : "");
    for (int q = 0; q < 4 && n < (int)sizeof body; q++) {
        const struct panel *p = &pn[q];
        char sdn[96];
        snprintf(sdn, sizeof sdn, "%s_sd", p->metric);
        if (p->stochastic) {
            band(b, sizeof b, base, row, p->metric);
            n += snprintf(body + n, sizeof body - n,
                          "%s%sset ylabel '%s'\n" EPAR_PLOT_IF("'%s', '1:%d'")
                          "plot '%s' skip 1 using 1:%d:(sd(%d)) with yerrorlines lt 1 title 'mean +- sd over seeds', \\\n"
                          "     bm with lines lc rgb '#c0392b' dt 2 title 'baseline (form none) +- sd', \\\n"
                          "     bm-bs with lines lc rgb '#f4c7c3' notitle, bm+bs with lines lc rgb '#f4c7c3' notitle" EPAR_PLOT_END
                          "unset object 1\nunset logscale y\nset format y '%%g'\n",
                          b, strcmp(p->metric, "attention_concentration") ? "" : "set logscale y\nset format y '10^{%L}'\n", p->label, csv,
                          col1(t, p->metric), csv, col1(t, p->metric), col1(t, sdn));
        } else {
            n += snprintf(body + n, sizeof body - n,
                          "set ylabel '%s'\n" EPAR_PLOT_IF("'%s', '1:%d'")
                          "plot '%s' skip 1 using 1:%d with linespoints lt 2 title 'exact (deterministic)'" EPAR_PLOT_END,
                          p->label, csv, col1(t, p->metric), csv, col1(t, p->metric));
        }
    }
    if (n >= (int)sizeof body) return epar_err_set(EPAR_ENOMEM, "figure script too long: '%s'", name);
    snprintf(body + n, sizeof body - n, "unset multiplot\n");
    return epar_plot_script(o, name, title, body);
}

static void tics(char *out, size_t n, const char *axis, const double *v, int k)
{
    size_t l = (size_t)snprintf(out, n, "set %s (", axis);
    for (int i = 0; i < k && l < n; i++) l += (size_t)snprintf(out + l, n - l, "%s'%g' %d", i ? ", " : "", v[i], i);
    if (l < n) snprintf(out + l, n - l, ")\n");
}

/* three heatmaps of a grid: locality, concentration, off-diagonal correlation */
static int grid_figure(struct epar_out *o, const char *name, const char *title, const char *csv,
                       const struct epar_table *t, const char *xidx, const char *yidx, const char *xlabel,
                       const char *ylabel, const double *xv, int nx, const double *yv, int ny, int window)
{
    char loc[96];
    snprintf(loc, sizeof loc, "attention locality (mass on |i-j| <= %d)", window);
    const struct panel pn[3] = {{"attention_locality", loc, 1},
                                {"attention_concentration", "attention concentration (variance over batch)", 1},
                                {"position_correlation_offdiag_mean", "position correlation, off-diagonal mean", 1}};
    char body[16384], xt[4096], yt[4096];
    /* log colours for concentration only when it spans more than a decade and a bit */
    double lo = INFINITY, hi = 0.0;
    for (size_t r = 0; r < t->nrows; r++) {
        double v = epar_csv_get(t, r, "attention_concentration");
        if (v < lo) lo = v;
        if (v > hi) hi = v;
    }
    int logcb = lo > 0 && hi / lo > 20;
    /* gnuplot draws no image under 2 x 2: a grid of one row or column cell by cell */
    const char *cells = nx > 1 && ny > 1 ? "" : "(0.5):(0.5):",
               *style = nx > 1 && ny > 1 ? "image" : "boxxyerror fs solid noborder fc palette";
    tics(xt, sizeof xt, "xtics", xv, nx);
    tics(yt, sizeof yt, "ytics", yv, ny);
    int n = snprintf(body, sizeof body,
                     "set terminal @epar_term size 1800,620\n"
                     "set multiplot layout 1,3 title '%s'\n"
                     "unset key\nset view map\nunset grid\nset tics out\n"
                     "set style textbox opaque fc rgb '#ffffff' noborder\n"
                     "%s%sset xrange [-0.5:%g]\nset yrange [-0.5:%g]\nset xlabel '%s'\nset ylabel '%s'\n",
                     title, xt, yt, nx - 0.5, ny - 0.5, xlabel, ylabel);
    for (int q = 0; q < 3 && n < (int)sizeof body; q++)
        n += snprintf(body + n, sizeof body - n,
                      "set title '%s'\n%s" EPAR_PLOT_IF("'%s', '%d:%d'")
                      "plot '%s' skip 1 using %d:%d:%s%d with %s, \\\n"
                      "     '' skip 1 using %d:%d:(sprintf('%%.3g', column(%d))) with labels boxed font ',6'" EPAR_PLOT_END,
                      pn[q].label, q == 1 && logcb ? "set logscale cb\nset format cb '10^{%L}'\n" : "unset logscale cb\nset format cb '%g'\n",
                      csv, col1(t, xidx), col1(t, pn[q].metric), csv, col1(t, xidx), col1(t, yidx), cells, col1(t, pn[q].metric), style,
                      col1(t, xidx), col1(t, yidx), col1(t, pn[q].metric));
    if (n >= (int)sizeof body) return epar_err_set(EPAR_ENOMEM, "figure script too long: '%s'", name);
    snprintf(body + n, sizeof body - n, "unset multiplot\n");
    return epar_plot_script(o, name, title, body);
}

static int write_text(struct epar_out *o, const char *name, const char *text)
{
    return epar_out_write_text(epar_out_path(o, name), text);
}

/* run.json: the common fields, the sweeps, the draws and the paper's parameters */
#define SC struct epar_sensitivity_cfg
static const struct epar_field sweep_rows[] = {
    {.key = "alpha_values", .type = EPAR_FIELD_DLIST, .offset = offsetof(SC, alpha_values),
     .count_offset = offsetof(SC, n_alpha), .max = EPAR_MAX_LIST},
    {.key = "beta_values", .type = EPAR_FIELD_DLIST, .offset = offsetof(SC, beta_values),
     .count_offset = offsetof(SC, n_beta), .max = EPAR_MAX_LIST},
    {.key = "gamma_values", .type = EPAR_FIELD_DLIST, .offset = offsetof(SC, gamma_values),
     .count_offset = offsetof(SC, n_gamma), .max = EPAR_MAX_LIST},
    {0}};
static const struct epar_field paper_rows[] = {
    {.key = "alpha", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(SC, paper_alpha)},
    {.key = "beta", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(SC, paper_beta)},
    {.key = "gamma", .type = EPAR_FIELD_DOUBLE, .offset = offsetof(SC, paper_gamma)},
    {0}};
#undef SC

static int write_run_json(const struct epar_sensitivity_cfg *cfg, struct epar_out *o, const char *protocol_path)
{
    json_t *extra = json_pack("{s:o, s:i, s:s, s:s, s:s, s:o*}", "sweeps", epar_fields_json(sweep_rows, cfg, NULL),
                              "locality_window", cfg->locality_window, "draws", cfg->common_draws ? "common" : "fresh",
                              "baseline", "form none on the same seeds and draws (paired)", "grid_beta_gamma_form",
                              "enhanced", "paper_parameters",
                              cfg->has_paper ? epar_fields_json(paper_rows, cfg, NULL) : NULL);
    if (!extra) return epar_err_set(EPAR_ENOMEM, "out of memory building run.json");
    return epar_exp_write_run_json(o, "sensitivity", protocol_path, &cfg->prm, extra);
}

/* the alpha, beta and gamma sweeps: four metrics each against the swept parameter */
static int fig_sweeps(const struct epar_sensitivity_cfg *cfg, const struct tables *res,
                      struct epar_out *o)
{
    const struct epar_params *prm = &cfg->prm;
    int st, L = prm->length;
    char title[512];
    const char *form = epar_posfx_form_name(prm->form);
    struct panel pa[4] = {{"position_strength", "position strength (mean of P)", 0},
                          {"attention_concentration", "attention concentration", 1},
                          {"position_correlation_mean", "position correlation mean", 1},
                          {"position_correlation_std", "position correlation std", 1}};
    snprintf(title, sizeof title, "{/Symbol a} sensitivity (%s, {/Symbol b}=%g, {/Symbol g}=%g, L=%d, %d seeds)", form,
             prm->beta, prm->gamma, L, prm->n_seeds);
    if ((st = sweep_figure(o, "alpha_parameter_sensitivity", title, "alpha_parameter_data.csv", res->alpha,
                           res->baseline, "alpha", "{/Symbol a}", 1, pa)))
        return st;
    struct panel pb[4] = {{"decay_speed", "decay speed (mean P[c,c+k])", 0},
                          {"attention_locality", "attention locality", 1},
                          {"position_correlation_mean", "position correlation mean", 1},
                          {"position_correlation_std", "position correlation std", 1}};
    snprintf(title, sizeof title, "{/Symbol b} sensitivity (%s, {/Symbol a}=%g, {/Symbol g}=%g, L=%d, %d seeds)", form,
             prm->alpha, prm->gamma, L, prm->n_seeds);
    if ((st = sweep_figure(o, "beta_parameter_sensitivity", title, "beta_parameter_data.csv", res->beta,
                           res->baseline, "beta", "{/Symbol b}", 1, pb)))
        return st;
    struct panel pg[4] = {{"position_strength", "position strength (mean of P)", 0},
                          {"decay_speed", "decay speed (mean P[c,c+k])", 0},
                          {"attention_concentration", "attention concentration", 1},
                          {"attention_locality", "attention locality", 1}};
    snprintf(title, sizeof title, "{/Symbol g} sensitivity (%s, {/Symbol a}=%g, {/Symbol b}=%g, L=%d, %d seeds)", form,
             prm->alpha, prm->beta, L, prm->n_seeds);
    if ((st = sweep_figure(o, "gamma_parameter_sensitivity", title, "gamma_parameter_data.csv", res->gamma,
                           res->baseline, "gamma", "{/Symbol g}", 0, pg)))
        return st;
    return EPAR_OK;
}

/* the alpha x beta and beta x gamma grids as heatmaps */
static int fig_grids(const struct epar_sensitivity_cfg *cfg, const struct tables *res,
                     struct epar_out *o)
{
    const struct epar_params *prm = &cfg->prm;
    int st;
    char title[512];
    const char *form = epar_posfx_form_name(prm->form);
    snprintf(title, sizeof title, "Measured metrics over {/Symbol a} x {/Symbol b} (%s, {/Symbol g}=%g, mean of %d seeds)",
             form, prm->gamma, prm->n_seeds);
    if ((st = grid_figure(o, "heatmap_alpha_beta", title, "grid_alpha_beta.csv", res->grid_ab, "beta_index",
                          "alpha_index", "{/Symbol b}", "{/Symbol a}", cfg->beta_values, cfg->n_beta,
                          cfg->alpha_values, cfg->n_alpha, cfg->locality_window)))
        return st;
    snprintf(title, sizeof title, "Measured metrics over {/Symbol b} x {/Symbol g} (enhanced, {/Symbol a}=%g, mean of %d seeds)",
             prm->alpha, prm->n_seeds);
    if ((st = grid_figure(o, "heatmap_beta_gamma", title, "grid_beta_gamma.csv", res->grid_bg, "gamma_index",
                          "beta_index", "{/Symbol g}", "{/Symbol b}", cfg->gamma_values, cfg->n_gamma,
                          cfg->beta_values, cfg->n_beta, cfg->locality_window)))
        return st;
    return EPAR_OK;
}

/* basic vs enhanced over the alpha and beta sweeps (same weights and data) */
static int fig_basic_vs_enhanced(const struct epar_sensitivity_cfg *cfg, const struct tables *res,
                                 struct epar_out *o)
{
    const struct epar_params *prm = &cfg->prm;
    int st, L = prm->length;
    char title[512];
    const struct epar_table *bv = res->basic_vs_enhanced;
    char ba[1024], bb[1024];
    band(ba, sizeof ba, res->baseline, baseline_row(res->baseline, "alpha"), "attention_locality");
    band(bb, sizeof bb, res->baseline, baseline_row(res->baseline, "beta"), "attention_locality");
    int cl = col1(bv, "attention_locality"), cls = col1(bv, "attention_locality_sd"),
        cc = col1(bv, "position_correlation_offdiag_mean"), ccs = col1(bv, "position_correlation_offdiag_mean_sd"),
        cd = col1(bv, "decay_speed");
    /* rows: alpha sweep (basic, enhanced per value), then beta, then gamma */
    int a0 = 0, a1 = 2 * cfg->n_alpha - 1, b0 = 2 * cfg->n_alpha, b1 = b0 + 2 * cfg->n_beta - 1;
    snprintf(title, sizeof title, "Basic vs enhanced on the same weights and data ({/Symbol g}=%g, L=%d, %d seeds)",
             prm->gamma, L, prm->n_seeds);
    if ((st = epar_plot_scriptf(
             o, "basic_vs_enhanced", title,
             "set terminal @epar_term size 1200,900\n"
             "set multiplot layout 2,2 title '%s'\n"
             "set key top left opaque box lc rgb '#bbbbbb' font ',8'\nset logscale x\n"
             "set autoscale xfix\nset offsets graph 0.04, graph 0.04, graph 0.05, graph 0.05\n"
             "f = 'basic_vs_enhanced.csv'\nrows(a, b) = $0 >= a && $0 <= b   # the rows of a sweep\n"
             "set xlabel '{/Symbol a} ({/Symbol b}=%g)'\nset ylabel 'attention locality'\n%s"
             EPAR_PLOT_IF("f, '(rows(%d, %d) ? $2 : NaN):%d'")
             "plot f skip 1 every 2::%d::%d using 2:%d:(sd(%d)) with yerrorlines lt 2 title 'basic', \\\n"
             "     f skip 1 every 2::%d::%d using 2:%d:(sd(%d)) with yerrorlines lt 1 title 'enhanced', \\\n"
             "     bm with lines lc rgb '#c0392b' dt 2 title 'none (baseline) +- sd'" EPAR_PLOT_END "unset object 1\n"
             "set xlabel '{/Symbol a} ({/Symbol b}=%g)'\nset ylabel 'position correlation, off-diagonal mean'\n"
             EPAR_PLOT_IF("f, '(rows(%d, %d) ? $2 : NaN):%d'")
             "plot f skip 1 every 2::%d::%d using 2:%d:(sd(%d)) with yerrorlines lt 2 title 'basic', \\\n"
             "     f skip 1 every 2::%d::%d using 2:%d:(sd(%d)) with yerrorlines lt 1 title 'enhanced'" EPAR_PLOT_END
             "set xlabel '{/Symbol b} ({/Symbol a}=%g)'\nset ylabel 'attention locality'\n%s"
             EPAR_PLOT_IF("f, '(rows(%d, %d) ? $3 : NaN):%d'")
             "plot f skip 1 every 2::%d::%d using 3:%d:(sd(%d)) with yerrorlines lt 2 title 'basic', \\\n"
             "     f skip 1 every 2::%d::%d using 3:%d:(sd(%d)) with yerrorlines lt 1 title 'enhanced', \\\n"
             "     bm with lines lc rgb '#c0392b' dt 2 title 'none (baseline) +- sd'" EPAR_PLOT_END "unset object 1\n"
             "set xlabel '{/Symbol b} ({/Symbol a}=%g)'\nset ylabel 'decay speed (mean P[c,c+k], exact)'\n"
             EPAR_PLOT_IF("f, '(rows(%d, %d) ? $3 : NaN):%d'")
             "plot f skip 1 every 2::%d::%d using 3:%d with linespoints lt 2 title 'basic', \\\n"
             "     f skip 1 every 2::%d::%d using 3:%d with linespoints lt 1 title 'enhanced'" EPAR_PLOT_END
             "unset multiplot\n",
             title, prm->beta, ba, a0, a1, cl, a0, a1, cl, cls, a0 + 1, a1, cl, cls, prm->beta, a0, a1, cc, a0, a1, cc, ccs,
             a0 + 1, a1, cc, ccs, prm->alpha, bb, b0, b1, cl, b0, b1, cl, cls, b0 + 1, b1, cl, cls, prm->alpha, b0, b1, cd, b0,
             b1, cd, b0 + 1, b1, cd)))
        return st;
    return EPAR_OK;
}

/* retention_curves: pre-softmax P(d)/P(0) and the measured attention per pair at distance d */
static int fig_retention(const struct epar_sensitivity_cfg *cfg, struct epar_out *o)
{
    const struct epar_params *prm = &cfg->prm;
    int st, L = prm->length;
    char title[512];
    snprintf(title, sizeof title, "Retention: pre-softmax P(d)/P(0) and measured attention per pair (L=%d)", L);
    char paper[512] = "";
    if (cfg->has_paper)
        snprintf(paper, sizeof paper,
                 ", \\\n     '' skip 1 using 1:4 with lines lt 2 dt 2 title 'basic, paper text ({/Symbol b}=%g)', \\\n"
                 "     '' skip 1 using 1:5 with lines lt 1 dt 2 title 'enhanced, paper text ({/Symbol b}=%g, {/Symbol g}=%g)'",
                 cfg->paper_beta, cfg->paper_beta, cfg->paper_gamma);
    if ((st = epar_plot_scriptf(
             o, "retention_curves", title,
             "set terminal @epar_term size 1400,600\n"
             "set multiplot layout 1,2 title '%s'\n"
             "set key bottom left opaque box lc rgb '#bbbbbb' font ',8'\nset xrange [0:%d]\n"
             "set arrow 1 from %d, graph 0 to %d, graph 1 nohead dt 3 lc rgb '#555555'\n"
             "set arrow 2 from %d, graph 0 to %d, graph 1 nohead dt 3 lc rgb '#555555'\n"
             "set title 'pre-softmax effect (exact), marks at d = L/2 and L-1'\n"
             "set xlabel 'distance d = |i-j| (positions)'\nset ylabel 'P(d) / P(0)'\nset yrange [0:1.05]\n"
             "plot 'retention_curves.csv' skip 1 using 1:2 with lines lt 2 lw 2 title 'basic ({/Symbol b}=%g)', \\\n"
             "     '' skip 1 using 1:3 with lines lt 1 lw 2 title 'enhanced ({/Symbol b}=%g, {/Symbol g}=%g)'%s\n"
             "set title 'post-softmax: mean attention weight of a pair at distance d (mean +- sd over %d seeds)'\n"
             "set ylabel 'mean A_{ij} over pairs with |i-j| = d'\nset autoscale y\nset key top right\n"
             "plot 'retention_curves.csv' skip 1 using 1:6:(sd(7)) with yerrorlines lt 8 pt 7 ps 0.3 title 'none', \\\n"
             "     '' skip 1 using 1:8:(sd(9)) with yerrorlines lt 2 pt 5 ps 0.3 title 'basic', \\\n"
             "     '' skip 1 using 1:10:(sd(11)) with yerrorlines lt 1 pt 9 ps 0.3 title 'enhanced', \\\n"
             "     %.17g with lines lc rgb '#555555' dt 2 title '1/L (uniform rows)'\n"
             "unset multiplot\n",
             title, L, L / 2, L / 2, L - 1, L - 1, prm->beta, prm->beta, prm->gamma, paper, prm->n_seeds, 1.0 / L)))
        return st;
    return EPAR_OK;
}

/* improvement over the measured baseline (the reference's "improvement" figure, with a real baseline) */
static int fig_improvement(const struct epar_sensitivity_cfg *cfg, const struct tables *res,
                           struct epar_out *o)
{
    const struct epar_params *prm = &cfg->prm;
    char title[512];
    const struct epar_table *ts[3] = {res->alpha, res->beta, res->gamma};
    const char *csvs[3] = {"alpha_parameter_data.csv", "beta_parameter_data.csv", "gamma_parameter_data.csv"};
    const char *xl[3] = {"{/Symbol a}", "{/Symbol b}", "{/Symbol g}"};
    char body[16384];
    snprintf(title, sizeof title, "Change over the measured baseline (form none, same draws; mean +- sd over %d seeds)",
             prm->n_seeds);
    int n = snprintf(body, sizeof body, "set terminal @epar_term size 1500,850\nset multiplot layout 2,3 title '%s'\n"
                                        "unset key\nset autoscale xfix\n"
                                        "set offsets graph 0.04, graph 0.04, graph 0.05, graph 0.05\n", title);
    for (int r = 0; r < 2; r++)
        for (int q = 0; q < 3 && n < (int)sizeof body; q++) {
            const char *m = r ? "attention_locality_delta" : "correlation_improvement_pct";
            char sdn[96];
            snprintf(sdn, sizeof sdn, "%s_sd", m);
            n += snprintf(body + n, sizeof body - n,
                          "%s\nset xlabel '%s'\nset ylabel '%s'\n"
                          EPAR_PLOT_IF("'%s', '1:%d'")
                          "plot '%s' skip 1 using 1:%d:(sd(%d)) with yerrorlines lt %d, 0 with lines lc rgb '#c0392b' dt 2"
                          EPAR_PLOT_END,
                          q < 2 ? "set logscale x" : "unset logscale x", xl[q],
                          r ? "locality - baseline locality" : "correlation mean: % over baseline", csvs[q],
                          col1(ts[q], m), csvs[q], col1(ts[q], m), col1(ts[q], sdn), q + 1);
        }
    if (n >= (int)sizeof body) return epar_err_set(EPAR_ENOMEM, "figure script too long: 'improvement_over_baseline'");
    snprintf(body + n, sizeof body - n, "unset multiplot\n");
    return epar_plot_script(o, "improvement_over_baseline", title, body);
}

static int write_all(const struct epar_sensitivity_cfg *cfg, const struct tables *res, const char *report,
                     struct epar_out *o, const char *protocol_path)
{
    int st;
    const struct epar_exp_file files[] = {
        {"alpha_parameter_data.csv", res->alpha}, {"beta_parameter_data.csv", res->beta},
        {"gamma_parameter_data.csv", res->gamma}, {"baseline.csv", res->baseline},
        {"basic_vs_enhanced.csv", res->basic_vs_enhanced}, {"retention.csv", res->retention},
        {"retention_claims.csv", res->claims}, {"retention_curves.csv", res->curves},
        {"grid_alpha_beta.csv", res->grid_ab}, {"grid_beta_gamma.csv", res->grid_bg}};
    if ((st = epar_exp_write_tables(o, files, sizeof files / sizeof files[0]))) return st;
    if ((st = write_text(o, "parameter_sensitivity_report.txt", report))) return st;
    if ((st = write_run_json(cfg, o, protocol_path))) return st;
    if ((st = fig_sweeps(cfg, res, o))) return st;
    if ((st = fig_grids(cfg, res, o))) return st;
    if ((st = fig_basic_vs_enhanced(cfg, res, o))) return st;
    if ((st = fig_retention(cfg, o))) return st;
    return fig_improvement(cfg, res, o);
}

int epar_exp_sensitivity_write(const struct epar_sensitivity_cfg *cfg, const struct epar_sensitivity_result *r,
                               struct epar_out *o, const char *protocol_path)
{
    const struct ctx c = {cfg, r};
    struct tables t = {0};
    char *report = NULL;
    int st = epar_sens_tables_build(&c, &t);
    if (!st && !(report = epar_sens_build_report(&c, &t))) st = epar_err_set(EPAR_ENOMEM, "out of memory building the report");
    if (!st) st = write_all(cfg, &t, report, o, protocol_path);
    free(report);
    epar_sens_tables_free(&t);
    return st;
}
