/* epar optimal-position: paper §4.3 -> output/optimal/ */
#include <stdio.h>
#include <string.h>
#include "lib/err.h"
#include "experiments/analysis/experiment.h"
#include "experiments/analysis/optimal.h"
#include "cli.h"

static void describe(const void *cfgv, char *buf, size_t n)
{
    const struct epar_optimal_cfg *cfg = cfgv;
    char tl[256] = "";
    for (int t = 0; t < cfg->n_types; t++) {
        size_t l = strlen(tl);
        snprintf(tl + l, sizeof tl - l, "%s%s", t ? "," : "", epar_imp_name(cfg->types[t]));
    }
    const struct epar_params *p = &cfg->prm;
    snprintf(buf, n, "L=%d hidden=%d heads=%d batch=%d runs=%d seeds=%d types=%s form=%s alpha=%g beta=%g gamma=%g "
                     "(paired: basic, enhanced, none)",
             p->length, p->hidden, p->heads, p->batch, p->runs, p->n_seeds, tl, epar_posfx_form_name(p->form), p->alpha,
             p->beta, p->gamma);
}

static void summary(const struct cli_common *c, const void *cfgv, const void *resv)
{
    const struct epar_optimal_cfg *cfg = cfgv;
    const struct epar_optimal_result *res = resv;
    printf("optimal-position (%s preset, %s form, L=%d, %d runs x %d seeds): wrote %s/optimal/\n", cfg->prm.preset,
           epar_posfx_form_name(cfg->prm.form), cfg->prm.length, cfg->prm.runs, cfg->prm.n_seeds, c->out);
    printf("  %-10s  %-17s  %-17s   (mean +- sd across seeds)\n", "type", "consistency", "ranking");
    for (int t = 0; t < cfg->n_types; t++)
        printf("  %-10s  %.4f +- %.4f  %+.4f +- %.4f\n", epar_imp_name(cfg->types[t]), res->cons[t], res->cons_sd[t],
               res->rank[t], res->rank_sd[t]);
    printf("  verdict (the reference's rule): %s\n", res->verdict);
    printf("  a = argmax (mean_j A_ij) I_i is argmax I: rows of A sum to 1 (see verification_report.txt)\n");
}

int cmd_optimal_position(int argc, char **argv)
{
    struct cli_common c = {0};
    const char *types = NULL;
    struct opt opts[] = {
        OPTS_MODEL(&c),
        {"Information importance", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"types", 0, OPT_STRING, &types, "LIST",
         "importance types: random,structured,sparse,dense,clustered (default: the protocol's) and/or norm", 0},
        {"importance", 0, OPT_STRING, &c.importance, "KIND",
         "synthetic (the --types list, default) or norm (the paper's I_j = ||x_j||, alone)", 0},
        OPTS_COMMON(&c),
        {NULL, 0, OPT_END, NULL, NULL, NULL, 0}};
    int rc = cli_parse("optimal-position", "[options]", opts, argc, argv);
    if (rc >= 0) return rc;

    /* option values that need no protocol are checked first */
    int norm = 0;
    if (c.importance) {
        if (!strcmp(c.importance, "norm")) norm = 1;
        else if (strcmp(c.importance, "synthetic")) {
            cli_usage_error("invalid value for --importance: '%s' (expected synthetic or norm)", c.importance);
            return 2;
        }
        if (norm && types)
            return cli_usage_error("--importance norm uses I_j = ||x_j|| alone; it cannot be combined with --types '%s'",
                                   types);
    }
    struct epar_optimal_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    if (types && epar_exp_optimal_parse_types(types, &cfg)) return cli_fail(EPAR_EINVAL);

    if (norm) {
        cfg.n_types = 1;
        cfg.types[0] = EPAR_IMP_NORM;
    }
    return cli_experiment(&epar_exp_optimal, &c, opts, &cfg, NULL, NULL, describe, summary);
}
