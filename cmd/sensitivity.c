/* epar sensitivity: appendix (docs/PROTOCOLS.md Experiment 3) -> output/parameter/ */
#include <stdio.h>
#include <string.h>
#include "lib/err.h"
#include "experiments/analysis/experiment.h"
#include "experiments/analysis/sensitivity.h"
#include "cli.h"

/* a command-line sweep list: copy it, checking the parameter's range (exit 2 naming the option) */
static int take_list(const struct opt *opts, const char *name, const struct opt_dlist *l, enum epar_sens_param which,
                     double *out, int *n)
{
    if (!cli_seen(opts, name)) return 0;
    for (int i = 0; i < l->n; i++) {
        const char *bad = epar_exp_sensitivity_range(which, l->v[i]);
        if (bad) return cli_usage_error("invalid value for --%s: '%g' (%s)", name, l->v[i], bad);
    }
    memcpy(out, l->v, (size_t)l->n * sizeof *out);
    *n = l->n;
    return 0;
}

struct sens_opts {
    struct opt_dlist av, bv, gv;
    const char *draws;
    int window;
};

static int apply(void *cfgv, const struct opt *opts, void *ctx)
{
    struct epar_sensitivity_cfg *cfg = cfgv;
    struct sens_opts *so = ctx;
    int rc;
    if ((rc = take_list(opts, "alpha-values", &so->av, EPAR_SENS_P_ALPHA, cfg->alpha_values, &cfg->n_alpha)) ||
        (rc = take_list(opts, "beta-values", &so->bv, EPAR_SENS_P_BETA, cfg->beta_values, &cfg->n_beta)) ||
        (rc = take_list(opts, "gamma-values", &so->gv, EPAR_SENS_P_GAMMA, cfg->gamma_values, &cfg->n_gamma)))
        return rc;
    if (cli_seen(opts, "locality-window")) {
        if (so->window < 0)
            return cli_usage_error("invalid value for --locality-window: '%d' (expected an integer >= 0)", so->window);
        cfg->locality_window = so->window;
    }
    if (so->draws) {
        if (strcmp(so->draws, "fresh") && strcmp(so->draws, "common")) {
            cli_usage_error("invalid value for --draws: '%s'", so->draws);
            fputs("hint: use fresh or common\n", stderr);
            return 2;
        }
        cfg->common_draws = !strcmp(so->draws, "common");
    }
    return 0;
}

static void describe(const void *cfgv, char *buf, size_t n)
{
    const struct epar_sensitivity_cfg *cfg = cfgv;
    const struct epar_params *p = &cfg->prm;
    snprintf(buf, n, "L=%d hidden=%d batch=%d seeds=%d runs=%d form=%s alpha=%g beta=%g gamma=%g, "
                     "%d alpha x %d beta x %d gamma values",
             p->length, p->hidden, p->batch, p->n_seeds, p->runs, epar_posfx_form_name(p->form), p->alpha, p->beta,
             p->gamma, cfg->n_alpha, cfg->n_beta, cfg->n_gamma);
}

static void summary(const struct cli_common *c, const void *cfgv, const void *resv)
{
    const struct epar_sensitivity_cfg *cfg = cfgv;
    printf("sensitivity (%s preset, %s form, L=%d, %d seeds): wrote %s/parameter/\n", cfg->prm.preset,
           epar_posfx_form_name(cfg->prm.form), cfg->prm.length, cfg->prm.n_seeds, c->out);
    epar_exp_sensitivity_summary(cfg, resv, stdout);
}

int cmd_sensitivity(int argc, char **argv)
{
    struct cli_common c = {0};
    struct sens_opts so = {0};
    struct opt opts[] = {
        OPTS_MODEL(&c),
        {"Sweeps (the model parameters above fix the values that are not swept)", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"alpha-values", 0, OPT_DLIST, &so.av, "LIST", "alpha sweep, e.g. 0.1,0.5,1 (each > 0)", 0},
        {"beta-values", 0, OPT_DLIST, &so.bv, "LIST", "beta sweep (each >= 0)", 0},
        {"gamma-values", 0, OPT_DLIST, &so.gv, "LIST", "gamma sweep (each >= 0; really applied)", 0},
        {"locality-window", 0, OPT_INT, &so.window, "W", "attention_locality sums |i-j| <= W (default 1)", 0},
        {"draws", 0, OPT_STRING, &so.draws, "MODE", "fresh (weights and data per point, the reference) or common", 0},
        OPTS_COMMON(&c),
        {NULL, 0, OPT_END, NULL, NULL, NULL, 0}};
    int rc = cli_parse("sensitivity", "[options]", opts, argc, argv);
    if (rc >= 0) return rc;
    struct epar_sensitivity_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    return cli_experiment(&epar_exp_sensitivity, &c, opts, &cfg, apply, &so, describe, summary);
}
