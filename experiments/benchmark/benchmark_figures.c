/* The benchmark's figures: gnuplot scripts over its tables and the cells' learning curves. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "lib/err.h"
#include "lib/outdir.h"
#include "lib/plot.h"
#include "experiments/benchmark/benchmark_int.h"

static void mech_words(const struct epar_bench_cfg *c, char *buf, size_t n)
{
    buf[0] = '\0';
    for (int m = 0; m < c->n_mech; m++) {
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%s%s", m ? " " : "", epar_bench_mech_name(c, m));
    }
}

/* steps_to_learn: a panel per task, a horizontal bar per mechanism (mean steps over the seeds that learned, error
 * bar: their sd), "k/n" seeds that learned beside each bar, "not learned" written where no seed did */
static int steps_figure(const struct epar_bench_cfg *c, struct epar_out *o, const char *mech)
{
    int M = c->n_mech, NT = c->n_tasks, cols = 1;
    while (cols * cols < NT && cols < 4) cols++;   /* 4 tasks 2 x 2, 10 tasks 4 x 3 */
    int rows = (NT + cols - 1) / cols, panel_h = 60 + 26 * M > 230 ? 60 + 26 * M : 230;
    struct epar_plot_text b = {0};
    epar_plot_add(&b, "mech = '%s'\nM = words(mech)\nmi(m) = sum [i=1:M] (word(mech, i) eq m ? i : 0)   # a mechanism's row\n"
                      "set terminal @epar_term size %d,%d\n"
                      "set multiplot layout %d,%d title \"Steps to learn: the first evaluation from which the metric stays "
                      "beyond chance + %g se to the end\\nbar: mean over the seeds that learned, whisker: their sd; "
                      "k/n: how many seeds learned\" noenhanced\n"
                      "unset key\nset grid xtics noytics\nset yrange [M + 0.6:0.4]\nset ytics (",
                  mech, 80 + 380 * cols, 60 + panel_h * rows, rows, cols, LEARNED_Z);
    for (int m = 0; m < M; m++) epar_plot_add(&b, "%s'%s' %d", m ? ", " : "", epar_bench_mech_name(c, m), m + 1);
    epar_plot_add(&b, ") noenhanced font ',8'\nset xtics font ',8'\nset xlabel 'optimiser steps' font ',9'\n"
                      "set style fill solid 0.75 noborder\nset errorbars small\n");
    for (int i = 0; i < NT; i++) {
        int steps = (int)lround(c->b.steps * c->tasks[i].steps_scale);   /* the task's own budget of steps */
        double tic = 100 * ceil(1.5 * steps / 800.0);   /* at most about 8 labelled tics */
        epar_plot_add(&b, "set xtics 0, %g\n", tic);
        epar_plot_add(&b, "set xrange [0:%g]\nset arrow 1 from %d, graph 0 to %d, graph 1 nohead dt 2 lc rgb '#777777'\n"
                          "set label 1 'budget' at %d, graph 1 right offset -0.3,-0.6 font ',7' tc rgb '#777777'\n",
                      1.5 * steps, steps, steps, steps);
        epar_plot_add(&b, "set title '%s (L=%d)' noenhanced font ',10'\nsel(v) = strcol(1) eq '%s' ? v : NaN\n"
                          "seeds(k, n) = k > 0 ? sprintf('%%d/%%d', k, n) : sprintf('not learned (0/%%d)', n)\n"
                          EPAR_PLOT_IF("'steps_to_learn.csv', '(sel($4)):4'")
                          "plot 'steps_to_learn.csv' skip 1 using (sel($6) / 2):(mi(strcol(2))):($6 / 2):(0.36):(mi(strcol(2))) "
                          "with boxxyerror lc variable, \\\n"
                          "     '' skip 1 using (sel($6)):(mi(strcol(2))):(sd(7)) with xerrorbars pt -1 lc rgb '#333333', \\\n"
                          "     '' skip 1 using (sel($5 > 0 ? column(6) + sd(7) : 0)):(mi(strcol(2))):(seeds($5, $4)) with labels "
                          "left offset 0.6,0 font ',8', \\\n"
                          "     '' skip 1 using (sel($5 > 0 ? NaN : 0)):(mi(strcol(2))) with points pt 2 ps 1.2 lc rgb '#d62728'"
                          EPAR_PLOT_END,
                      c->tasks[i].id, c->tasks[i].task.length, c->tasks[i].id);
    }
    epar_plot_add(&b, "unset multiplot\n");
    return epar_plot_script_text(o, "steps_to_learn", "Steps to learn each task per mechanism, with the seeds that learned", &b);
}

/* curves_<task>: the eval metric against training tokens, the first seed, and the chance level; two panels (at most
 * about 8 series each): no position information, input encodings, q/k transforms and the rest; then the relative
 * biases and EPAR, with none in both as the reference. A mechanism keeps its colour in both panels. */
static int curves_figure(const struct epar_bench_cfg *c, const struct grid *g, struct epar_out *o, int i)
{
    const char *id = c->tasks[i].id, *metric = epar_task_table[c->tasks[i].task.id].metric;
    unsigned long seed = c->b.seeds[0];
    char name[64], title[256], first[512];
    snprintf(name, sizeof name, "curves_%s", id);
    snprintf(title, sizeof title, "Learning curves on %s (L=%d): eval %s, seed %lu", id, c->tasks[i].task.length, metric,
             seed);
    snprintf(first, sizeof first, "../benchmark/cells/%s/%s/seed-%lu/learning_curve.csv", id, epar_bench_mech_name(c, 0), seed);
    int hib = task_hib(c, i), none = -1;
    for (int m = 0; m < c->n_mech; m++)
        if (c->mech[m] == EPAR_MECH_NONE) none = m;
    double chance, chance_se;   /* the best constant answer (main_table.csv chance), as a dashed line */
    int have_chance = epar_bench_task_learned(c, g, i, &chance, &chance_se) >= 0;
    struct epar_plot_text b = {0};
    epar_plot_add(&b, "set terminal @epar_term size 1300,560\nset multiplot layout 1,2 title '%s' noenhanced\n"
                      "set xlabel 'training tokens'\nset format x '%%.1s%%c'\nset ylabel 'eval %s%s'\n"
                      "set key below noenhanced maxrows 3\nset bmargin 8\n%s\n",
                  title, metric, hib ? "" : " (lower is better)", hib ? "set yrange [0:1.02]" : "set offsets 0, 0, graph 0.05, graph 0.05");
    static const char *const titles[2] = {"no position information, input encodings, q/k transforms, sparse",
                                          "relative position biases and EPAR (none: the reference)"};
    for (int panel = 0; panel < 2; panel++) {
        epar_plot_add(&b, "set title '%s'\n" EPAR_PLOT_IF("'%s', '2:5'") "plot ", titles[panel], first);
        int any = 0;
        for (int m = 0; m < c->n_mech; m++) {
            int f = epar_mech_family_of(epar_bench_mech_name(c, m));
            int second = f == EPAR_MF_BIAS || f == EPAR_MF_EPAR;
            if (panel ? !(second || m == none) : second) continue;
            epar_plot_add(&b, "%s'../benchmark/cells/%s/%s/seed-%lu/learning_curve.csv' skip 1 using 2:5 with linespoints "
                              "lt %d title '%s'", any++ ? ", \\\n     " : "", id, epar_bench_mech_name(c, m), seed, m + 1,
                          epar_bench_mech_name(c, m));
        }
        if (have_chance)
            epar_plot_add(&b, "%s%.10g with lines dt 2 lc rgb '#555555' title 'chance: %.3g'", any ? ", \\\n     " : "",
                          chance, chance);
        else if (!any)
            epar_plot_add(&b, "NaN notitle");
        epar_plot_add(&b, EPAR_PLOT_END);
    }
    epar_plot_add(&b, "unset multiplot\n");
    return epar_plot_script_text(o, name, title, &b);
}

int epar_bench_write_figures(const struct epar_bench_cfg *c, const struct grid *g, struct epar_out *o, int have_extrap,
                         int have_distance)
{
    char mech[512];
    mech_words(c, mech, sizeof mech);
    int st = EPAR_OK;
    if (have_extrap) {
        int L0 = c->b.lm_length;
        char title[160];
        snprintf(title, sizeof title, "Length extrapolation: lm trained at L=%d, bits per character at longer lengths", L0);
        char spread[64];   /* no "± sd" from one seed */
        if (g->S > 1) snprintf(spread, sizeof spread, "mean ± sd over %d seeds", g->S);
        else snprintf(spread, sizeof spread, "one seed");
        st = epar_plot_scriptf(o, "extrapolation", title,
                               "mech = '%s'\nset terminal @epar_term size 900,600\n"
                               "set title 'lm trained at L=%d, evaluated at longer L (%s; L in P = the evaluation length)'\n"
                               "set xlabel 'evaluation length (tokens)'\nset ylabel 'bits per character (lower is better)'\n"
                               "set logscale x 2\nset key outside right noenhanced\nset offsets graph 0.04, graph 0.04, 0, 0\n"
                               "set arrow 1 from %d, graph 0 to %d, graph 1 nohead dt 2 lc rgb '#555555'\n"
                               "set label 1 'training length L=%d' at %d, graph 0.97 left offset 0.6,0 tc rgb '#555555'\n"
                               EPAR_PLOT_IF("'extrapolation.csv', '3:5'")
                               "plot for [i=1:words(mech)] 'extrapolation.csv' skip 1 using (strcol(2) eq word(mech,i) ? $3 : NaN):5:(sd(6)) "
                               "with %s lt i title word(mech,i)" EPAR_PLOT_END,
                               mech, L0, spread, L0, L0, L0, L0, g->S > 1 ? "yerrorlines" : "linespoints");
    }
    if (!st && have_distance) {
        int nn = 0;
        for (int i = 0; i < c->n_tasks; i++) nn += c->tasks[i].task.id == EPAR_TASK_NEEDLE;
        /* one key for every panel, below them (in a panel it covered the curves) */
        struct epar_plot_text b = {0};
        epar_plot_add(&b, "mech = '%s'\nset terminal @epar_term size %d,680\n"
                          "set multiplot layout 1,%d margins 0.08,0.98,0.34,0.88 spacing 0.08,0 title 'needle: accuracy "
                          "vs distance of the fact before the query (mean over %d seed%s)'\n"
                          "set xlabel 'distance of the fact before the query (tokens, bin centre)'\n"
                          "set ylabel 'answer accuracy'\nset yrange [0:1.05]\n"
                          "set key at screen 0.5, screen 0.02 center bottom horizontal noenhanced nobox font ',9'\n",
                      mech, nn > 1 ? 520 * nn : 720, nn, g->S, g->S == 1 ? "" : "s");
        for (int i = 0, k = 0; i < c->n_tasks; i++)
            if (c->tasks[i].task.id == EPAR_TASK_NEEDLE) {
                const char *id = c->tasks[i].id;
                epar_plot_add(&b, "%sset title '%s (L=%d)' noenhanced\n"
                                  EPAR_PLOT_IF("'distance.csv', '(strcol(1) eq \"%s\" ? ($4+$5)/2 : NaN):6'")
                                  "plot for [i=1:words(mech)] 'distance.csv' skip 1 using "
                                  "(strcol(1) eq '%s' && strcol(2) eq word(mech,i) ? ($4+$5)/2 : NaN):6 with linespoints lt i "
                                  "title word(mech,i)" EPAR_PLOT_END,
                              k++ ? "unset key\n" : "", id, c->tasks[i].task.length, id, id);
            }
        epar_plot_add(&b, "unset multiplot\n");
        st = epar_plot_script_text(o, "distance", "Needle accuracy against the distance of the fact before the query", &b);
    }
    char wspread[64];   /* no sd bars from one seed */
    if (g->S > 1) snprintf(wspread, sizeof wspread, "bars: sd across %d seeds", g->S);
    else snprintf(wspread, sizeof wspread, "one seed: no spread");
    if (!st)
        st = epar_plot_scriptf(o, "when_to_use", "When to use EPAR: gain per condition",
                               "set terminal @epar_term size 1000,550\n"
                               "set title 'EPAR gain per condition (mean relative difference over the condition''s tasks; %s)'\n"
                               "set ylabel 'relative gain (positive = EPAR better)'\nset key outside right\n"
                               "set xzeroaxis lt -1\nset boxwidth 0.9\nset xtics scale 0\n"
                               "# rows come 4 per condition: basic vs none, basic vs best, enhanced vs none, enhanced vs best\n"
                               "x(r) = int(r / 4) * 5 + int(r) %% 4\n"
                               EPAR_PLOT_IF("'when_to_use.csv', '6'")
                               "plot 'when_to_use.csv' skip 1 using (x($0)):6:(int($0) %% 4 + 1) with boxes lc variable notitle, \\\n"
                               "%s"
                               "     '' skip 1 using (x($0)):(NaN):xtic(int($0) %% 4 == 1 ? strcol(1) : '') notitle, \\\n"
                               "     NaN with boxes lt 1 title 'basic vs none', NaN with boxes lt 2 title 'basic vs best baseline', \\\n"
                               "     NaN with boxes lt 3 title 'enhanced vs none', NaN with boxes lt 4 title 'enhanced vs best baseline'"
                               EPAR_PLOT_END,
                               wspread, g->S > 1 ? "     '' skip 1 using (x($0)):6:(sd(7)) with yerrorbars lt -1 pt -1 notitle, \\\n" : "");
    if (!st)
        st = epar_plot_scriptf(o, "cost", "Training cost per mechanism",
                               "set terminal @epar_term size 1100,480\nset multiplot layout 1,2 title 'Training step cost "
                               "(%s, L=%d, batch %d, 1 thread, CPU time): median ± sd; overhead ± half its interval'\n"
                               "set style data histograms\nset style histogram errorbars gap 1 lw 1\nset xtics rotate by -30\nunset key\n"
                               "set ylabel 'CPU ms per training step'\nset yrange [0:*]\n"
                               EPAR_PLOT_IF("'cost.csv', '6'") "plot 'cost.csv' skip 1 using 6:(sd(7)):xtic(1) lt 1" EPAR_PLOT_END
                               "set ylabel 'step-time overhead vs none (whisker: half the interval)'\nset yrange [*:*]\n"
                               "set xzeroaxis lt -1\n"
                               EPAR_PLOT_IF("'cost.csv', '11'") "plot 'cost.csv' skip 1 using 11:(sd(13)):xtic(1) lt 2" EPAR_PLOT_END
                               "unset multiplot\n",
                               epar_task_name(c->b.cost_task), c->b.cost_length, c->b.batch);
    if (!st) st = steps_figure(c, o, mech);
    for (int i = 0; !st && i < c->n_tasks; i++) st = curves_figure(c, g, o, i);
    return st;
}

