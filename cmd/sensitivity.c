/* epar sensitivity: appendix (docs/PROTOCOLS.md Experiment 3) -> output/parameter/ */
#include <stdio.h>
#include <string.h>
#include "lib/err.h"
#include "experiments/common.h"
#include "experiments/sensitivity.h"
#include "cli.h"

/* a command-line sweep list: copy it, checking the parameter's range (exit 2 naming the option) */
static int take_list(const struct opt *opts, const char *name, const struct opt_dlist *l, double lo, int lo_incl,
                     const char *what, double *out, int *n)
{
    if (!cli_seen(opts, name)) return 0;
    for (int i = 0; i < l->n; i++)
        if (l->v[i] < lo || (!lo_incl && l->v[i] == lo))
            return cli_usage_error("invalid value for --%s: '%g' (%s)", name, l->v[i], what);
    memcpy(out, l->v, (size_t)l->n * sizeof *out);
    *n = l->n;
    return 0;
}

int cmd_sensitivity(int argc, char **argv)
{
    struct cli_common c = {0};
    struct opt_dlist av = {0}, bv = {0}, gv = {0};
    const char *draws = NULL;
    int window = 0;
    struct opt opts[] = {
        OPTS_MODEL(&c),
        {"Sweeps (the model parameters above fix the values that are not swept)", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"alpha-values", 0, OPT_DLIST, &av, "LIST", "alpha sweep, e.g. 0.1,0.5,1 (each > 0)", 0},
        {"beta-values", 0, OPT_DLIST, &bv, "LIST", "beta sweep (each >= 0)", 0},
        {"gamma-values", 0, OPT_DLIST, &gv, "LIST", "gamma sweep (each >= 0; really applied)", 0},
        {"locality-window", 0, OPT_INT, &window, "W", "attention_locality sums |i-j| <= W (default 1)", 0},
        {"draws", 0, OPT_STRING, &draws, "MODE", "fresh (weights and data per point, the reference) or common", 0},
        OPTS_COMMON(&c),
        {NULL, 0, OPT_END, NULL, NULL, NULL, 0}};
    int rc = cli_parse("sensitivity", "[options]", opts, argc, argv);
    if (rc >= 0) return rc;

    struct epar_protocol proto;
    struct epar_sensitivity_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    if ((rc = cli_resolve(&c, opts, "sensitivity", &proto, &cfg.prm))) return rc;
    int st = epar_exp_sensitivity_config(&proto, &cfg);
    if (st) {
        epar_protocol_free(&proto);
        return cli_fail(st);
    }
    if ((rc = take_list(opts, "alpha-values", &av, 0, 0, "alpha must be > 0", cfg.alpha_values, &cfg.n_alpha)) ||
        (rc = take_list(opts, "beta-values", &bv, 0, 1, "beta must be >= 0", cfg.beta_values, &cfg.n_beta)) ||
        (rc = take_list(opts, "gamma-values", &gv, 0, 1, "gamma must be >= 0", cfg.gamma_values, &cfg.n_gamma))) {
        epar_protocol_free(&proto);
        return rc;
    }
    if (cli_seen(opts, "locality-window")) {
        if (window < 0) {
            epar_protocol_free(&proto);
            return cli_usage_error("invalid value for --locality-window: '%d' (expected an integer >= 0)", window);
        }
        cfg.locality_window = window;
    }
    if (draws) {
        if (strcmp(draws, "fresh") && strcmp(draws, "common")) {
            epar_protocol_free(&proto);
            cli_usage_error("invalid value for --draws: '%s'", draws);
            fputs("hint: use fresh or common\n", stderr);
            return 2;
        }
        cfg.common_draws = !strcmp(draws, "common");
    }
    if ((st = epar_exp_sensitivity_check(&cfg))) {
        epar_protocol_free(&proto);
        return cli_fail(st);
    }

    cli_progress(&c, "sensitivity: L=%d hidden=%d batch=%d seeds=%d runs=%d form=%s alpha=%g beta=%g gamma=%g, "
                     "%d alpha x %d beta x %d gamma values",
                 cfg.prm.length, cfg.prm.hidden, cfg.prm.batch, cfg.prm.n_seeds, cfg.prm.runs,
                 epar_posfx_form_name(cfg.prm.form), cfg.prm.alpha, cfg.prm.beta, cfg.prm.gamma, cfg.n_alpha, cfg.n_beta,
                 cfg.n_gamma);
    struct epar_sensitivity_result res;
    if ((st = epar_exp_sensitivity_run(&cfg, &res))) {
        epar_protocol_free(&proto);
        return cli_fail(st);
    }
    struct epar_out o;
    if (!(st = epar_out_begin(&o, c.out, "parameter")))
        st = cli_publish(&c, "sensitivity", &o, epar_exp_sensitivity_write(&cfg, &res, &o, proto.path));
    if (!st && !c.quiet) {
        printf("sensitivity (%s preset, %s form, L=%d, %d seeds): wrote %s/parameter/\n", cfg.prm.preset,
               epar_posfx_form_name(cfg.prm.form), cfg.prm.length, cfg.prm.n_seeds, c.out);
        fputs(res.summary, stdout);
    }
    epar_exp_sensitivity_free(&res);
    epar_protocol_free(&proto);
    return st ? cli_fail(st) : 0;
}
