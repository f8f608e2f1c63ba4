/* epar adaptive: paper §5.4 (task- and content-aware attention; when and why EPAR helps) -> output/adaptive/ */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "lib/err.h"
#include "experiments/adaptive.h"
#include "experiments/common.h"
#include "cli.h"

static int int_list(const char *opt, const struct opt_dlist *l, int lo, int *out)
{
    for (int i = 0; i < l->n; i++) {
        if (l->v[i] != floor(l->v[i]) || l->v[i] < lo || l->v[i] > (1 << 20))
            return cli_usage_error("invalid value for --%s: '%g' (expected integers >= %d)", opt, l->v[i], lo);
        out[i] = (int)l->v[i];
    }
    return 0;
}

int cmd_adaptive(int argc, char **argv)
{
    struct cli_common c = {0};
    struct opt_dlist ga = {0}, gb = {0}, wl = {0};
    int grid_length = 0, grid_hidden = 0, grid_batch = 0, grid_runs = 0, dropout_in_grid = 0;
    int when_hidden = 0, when_batch = 0, window = 0;
    double noise_sd = 0, corr = 0;
    struct opt opts[] = {
        OPTS_MODEL(&c),
        {"Sensitivity grid", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"grid-alpha", 0, OPT_DLIST, &ga, "LIST", "alpha values of the grid (default 0.5,1,1.5,2,2.5)", 0},
        {"grid-beta", 0, OPT_DLIST, &gb, "LIST", "beta values of the grid (default 1,1.5,2,2.5,3)", 0},
        {"grid-length", 0, OPT_INT, &grid_length, "N", "sequence length in the grid (default 32)", 0},
        {"grid-hidden", 0, OPT_INT, &grid_hidden, "N", "hidden width in the grid (default 64)", 0},
        {"grid-batch", 0, OPT_INT, &grid_batch, "N", "batch items per seed in the grid (default 2)", 0},
        {"grid-runs", 0, OPT_INT, &grid_runs, "N", "repetitions per seed in the grid (default 1)", 0},
        {"dropout-in-grid", 0, OPT_FLAG, &dropout_in_grid, NULL,
         "keep the content estimator's Dropout(0.1) active in the grid, as the reference does (default: off, "
         "as in the main experiment)", 0},
        {"When to use", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"when-lengths", 0, OPT_DLIST, &wl, "LIST", "sequence lengths of the sweep (default 32,64,...,2048)", 0},
        {"when-hidden", 0, OPT_INT, &when_hidden, "N", "hidden width of the sweep (default 64)", 0},
        {"when-batch", 0, OPT_INT, &when_batch, "N", "items per seed and length (default 1)", 0},
        {"noise-sd", 0, OPT_DOUBLE, &noise_sd, "X", "sd of the Gaussian noise added to the inputs (default 1)", 0},
        {"content-corr", 0, OPT_DOUBLE, &corr, "X", "lag-1 correlation of neighbouring tokens, in [0,1) (default 0.9)", 0},
        {"local-window", 0, OPT_INT, &window, "N", "local mass counts |i-j| <= N (default 1)", 0},
        OPTS_COMMON(&c),
        {NULL, 0, OPT_END, NULL, NULL, NULL, 0}};
    int rc = cli_parse("adaptive", "[options]", opts, argc, argv);
    if (rc >= 0) return rc;

    struct epar_protocol proto;
    struct epar_adaptive_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    if ((rc = cli_resolve(&c, opts, "adaptive", &proto, &cfg.prm))) return rc;
    int st = epar_exp_adaptive_config(&proto, &cfg);
    if (st) {
        epar_protocol_free(&proto);
        return cli_fail(st);
    }
    rc = 0;
    if (cli_seen(opts, "grid-alpha")) { cfg.n_grid_alpha = ga.n; memcpy(cfg.grid_alpha, ga.v, sizeof ga.v); }
    if (cli_seen(opts, "grid-beta")) { cfg.n_grid_beta = gb.n; memcpy(cfg.grid_beta, gb.v, sizeof gb.v); }
    if (cli_seen(opts, "when-lengths")) {
        cfg.n_when = wl.n;
        rc = int_list("when-lengths", &wl, 2, cfg.when_lengths);
    }
#define OVER(opt, field, var) if (cli_seen(opts, opt)) cfg.field = var
    OVER("grid-length", grid_length, grid_length); OVER("grid-hidden", grid_hidden, grid_hidden);
    OVER("grid-batch", grid_batch, grid_batch); OVER("grid-runs", grid_runs, grid_runs);
    OVER("when-hidden", when_hidden, when_hidden); OVER("when-batch", when_batch, when_batch);
    OVER("noise-sd", when_noise_sd, noise_sd); OVER("content-corr", when_content_corr, corr);
    OVER("local-window", when_window, window);
#undef OVER
    if (dropout_in_grid) cfg.dropout_in_grid = 1;
    if (!rc && cli_seen(opts, "grid-runs") && grid_runs < 1)
        rc = cli_usage_error("invalid value for --grid-runs: '%d' (expected an integer >= 1)", grid_runs);
    if (rc) {
        epar_protocol_free(&proto);
        return rc;
    }
    if ((st = epar_exp_adaptive_validate(&cfg))) {
        epar_protocol_free(&proto);
        return cli_fail(st);
    }

    cli_progress(&c, "adaptive: L=%d hidden=%d heads=%d batch=%d runs=%d seeds=%d form=%s alpha=%g beta=%g gamma=%g; "
                 "grid %dx%d at L=%d; when-to-use %d lengths up to %d",
                 cfg.prm.length, cfg.prm.hidden, cfg.prm.heads, cfg.prm.batch, cfg.prm.runs, cfg.prm.n_seeds,
                 epar_posfx_form_name(cfg.prm.form), cfg.prm.alpha, cfg.prm.beta, cfg.prm.gamma, cfg.n_grid_alpha,
                 cfg.n_grid_beta, cfg.grid_length, cfg.n_when, cfg.when_lengths[cfg.n_when - 1]);
    struct epar_adaptive_result res;
    if ((st = epar_exp_adaptive_run(&cfg, &res))) {
        epar_protocol_free(&proto);
        return cli_fail(st);
    }
    struct epar_out o;
    if (!(st = epar_out_begin(&o, c.out, "adaptive")))
        st = cli_publish(&c, "adaptive", &o, epar_exp_adaptive_write(&cfg, &res, &o, proto.path));
    if (!st && !c.quiet) {
        const struct epar_params *p = &cfg.prm;
        printf("adaptive (%s preset, %s form, L=%d, hidden %d): wrote %s/adaptive/\n", p->preset,
               epar_posfx_form_name(p->form), p->length, p->hidden, c.out);
        printf("  across %d seeds (mean +- sd of per-seed means; %d runs x %d items each):\n", p->n_seeds, p->runs,
               p->batch);
        printf("  attention entropy   %.6g +- %.3g  (same modules without P: %.6g +- %.3g; ln L = %.6g)\n",
               res.entropy_mean, res.entropy_sd, res.entropy_none_mean, res.entropy_none_sd, log((double)p->length));
        printf("  task weight mean    %.6g +- %.3g\n", res.task_mean, res.task_sd);
        printf("  content importance  %.6g +- %.3g\n", res.content_mean, res.content_sd);
        printf("  fusion weight mean  %.6g\n", res.fusion_mean);
        printf("  when to use (enhanced - none, paired; entropy nats / local mass):\n");
        const struct epar_table *w = res.when;
        for (size_t r = 0; r < w->nrows; r++) {
            const char *f = epar_csv_get_str(w, r, "form");
            if (!f || strcmp(f, "enhanced")) continue;
            printf("    L=%-5.0f %-8s  dH %+.4g  dlocal %+.4g  dconsistency %+.4g\n", epar_csv_get(w, r, "length"),
                   epar_csv_get_str(w, r, "condition"), epar_csv_get(w, r, "entropy_delta_mean"),
                   epar_csv_get(w, r, "local_mass_delta_mean"), epar_csv_get(w, r, "consistency_delta_mean"));
        }
    }
    epar_exp_adaptive_free(&res);
    epar_protocol_free(&proto);
    return st ? cli_fail(st) : 0;
}
