/* epar adaptive: paper §5.4 (task- and content-aware attention; when and why EPAR helps) -> output/adaptive/ */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "lib/err.h"
#include "experiments/analysis/adaptive.h"
#include "experiments/analysis/experiment.h"
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

struct adaptive_opts {
    struct opt_dlist ga, gb, wl;
    int grid_length, grid_hidden, grid_batch, grid_runs, dropout_in_grid;
    int when_hidden, when_batch, window;
    double noise_sd, corr;
};

static int apply(void *cfgv, const struct opt *opts, void *ctx)
{
    struct epar_adaptive_cfg *cfg = cfgv;
    const struct adaptive_opts *ao = ctx;
    int rc = 0;
    if (cli_seen(opts, "grid-alpha")) { cfg->n_grid_alpha = ao->ga.n; memcpy(cfg->grid_alpha, ao->ga.v, sizeof ao->ga.v); }
    if (cli_seen(opts, "grid-beta")) { cfg->n_grid_beta = ao->gb.n; memcpy(cfg->grid_beta, ao->gb.v, sizeof ao->gb.v); }
    if (cli_seen(opts, "when-lengths")) {
        cfg->n_when = ao->wl.n;
        rc = int_list("when-lengths", &ao->wl, 2, cfg->when_lengths);
    }
#define OVER(opt, field, var) if (cli_seen(opts, opt)) cfg->field = ao->var
    OVER("grid-length", grid_length, grid_length); OVER("grid-hidden", grid_hidden, grid_hidden);
    OVER("grid-batch", grid_batch, grid_batch); OVER("grid-runs", grid_runs, grid_runs);
    OVER("when-hidden", when_hidden, when_hidden); OVER("when-batch", when_batch, when_batch);
    OVER("noise-sd", when_noise_sd, noise_sd); OVER("content-corr", when_content_corr, corr);
    OVER("local-window", when_window, window);
#undef OVER
    if (ao->dropout_in_grid) cfg->dropout_in_grid = 1;
    if (!rc && cli_seen(opts, "grid-runs") && ao->grid_runs < 1)
        rc = cli_usage_error("invalid value for --grid-runs: '%d' (expected an integer >= 1)", ao->grid_runs);
    return rc;
}

static void describe(const void *cfgv, char *buf, size_t n)
{
    const struct epar_adaptive_cfg *cfg = cfgv;
    const struct epar_params *p = &cfg->prm;
    snprintf(buf, n, "L=%d hidden=%d heads=%d batch=%d runs=%d seeds=%d form=%s alpha=%g beta=%g gamma=%g; "
                     "grid %dx%d at L=%d; when-to-use %d lengths up to %d",
             p->length, p->hidden, p->heads, p->batch, p->runs, p->n_seeds, epar_posfx_form_name(p->form), p->alpha,
             p->beta, p->gamma, cfg->n_grid_alpha, cfg->n_grid_beta, cfg->grid_length, cfg->n_when,
             cfg->when_lengths[cfg->n_when - 1]);
}

static void summary(const struct cli_common *c, const void *cfgv, const void *resv)
{
    const struct epar_adaptive_cfg *cfg = cfgv;
    const struct epar_adaptive_result *res = resv;
    const struct epar_params *p = &cfg->prm;
    printf("adaptive (%s preset, %s form, L=%d, hidden %d): wrote %s/adaptive/\n", p->preset,
           epar_posfx_form_name(p->form), p->length, p->hidden, c->out);
    printf("  across %d seeds (mean +- sd of per-seed means; %d runs x %d items each):\n", p->n_seeds, p->runs,
           p->batch);
    printf("  attention entropy   %.6g +- %.3g  (same modules without P: %.6g +- %.3g; ln L = %.6g)\n",
           res->entropy_mean, res->entropy_sd, res->entropy_none_mean, res->entropy_none_sd, log((double)p->length));
    printf("  task weight mean    %.6g +- %.3g\n", res->task_mean, res->task_sd);
    printf("  content importance  %.6g +- %.3g\n", res->content_mean, res->content_sd);
    printf("  fusion weight mean  %.6g\n", res->fusion_mean);
    printf("  when to use (enhanced - none, paired; entropy nats / local mass):\n");
    for (int cond = 0; cond < EPAR_ADP_NCOND; cond++)
        for (int k = 0; k < cfg->n_when; k++) {
            size_t row = ((size_t)(cond * 3 + 2) * cfg->n_when + k) * EPAR_ADP_WHEN_N; /* form enhanced */
            const double *dm = res->when_dmean + row;
            printf("    L=%-5d %-8s  dH %+.4g  dlocal %+.4g  dconsistency %+.4g\n", cfg->when_lengths[k],
                   epar_adaptive_cond_name[cond], dm[EPAR_ADP_WHEN_ENTROPY], dm[EPAR_ADP_WHEN_LOCAL],
                   dm[EPAR_ADP_WHEN_CONSISTENCY]);
        }
}

int cmd_adaptive(int argc, char **argv)
{
    struct cli_common c = {0};
    struct adaptive_opts ao = {0};
    struct opt opts[] = {
        OPTS_MODEL(&c),
        {"Sensitivity grid", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"grid-alpha", 0, OPT_DLIST, &ao.ga, "LIST", "alpha values of the grid (default 0.5,1,1.5,2,2.5)", 0},
        {"grid-beta", 0, OPT_DLIST, &ao.gb, "LIST", "beta values of the grid (default 1,1.5,2,2.5,3)", 0},
        {"grid-length", 0, OPT_INT, &ao.grid_length, "N", "sequence length in the grid (default 32)", 0},
        {"grid-hidden", 0, OPT_INT, &ao.grid_hidden, "N", "hidden width in the grid (default 64)", 0},
        {"grid-batch", 0, OPT_INT, &ao.grid_batch, "N", "batch items per seed in the grid (default 2)", 0},
        {"grid-runs", 0, OPT_INT, &ao.grid_runs, "N", "repetitions per seed in the grid (default 1)", 0},
        {"dropout-in-grid", 0, OPT_FLAG, &ao.dropout_in_grid, NULL,
         "keep the content estimator's Dropout(0.1) active in the grid, as the reference does (default: off, "
         "as in the main experiment)", 0},
        {"When to use", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"when-lengths", 0, OPT_DLIST, &ao.wl, "LIST", "sequence lengths of the sweep (default 32,64,...,2048)", 0},
        {"when-hidden", 0, OPT_INT, &ao.when_hidden, "N", "hidden width of the sweep (default 64)", 0},
        {"when-batch", 0, OPT_INT, &ao.when_batch, "N", "items per seed and length (default 1)", 0},
        {"noise-sd", 0, OPT_DOUBLE, &ao.noise_sd, "X", "sd of the Gaussian noise added to the inputs (default 1)", 0},
        {"content-corr", 0, OPT_DOUBLE, &ao.corr, "X", "lag-1 correlation of neighbouring tokens, in [0,1) (default 0.9)", 0},
        {"local-window", 0, OPT_INT, &ao.window, "N", "local mass counts |i-j| <= N (default 1)", 0},
        OPTS_COMMON(&c),
        {NULL, 0, OPT_END, NULL, NULL, NULL, 0}};
    int rc = cli_parse("adaptive", "[options]", opts, argc, argv);
    if (rc >= 0) return rc;
    struct epar_adaptive_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    return cli_experiment(&epar_exp_adaptive, &c, opts, &cfg, apply, &ao, describe, summary);
}
