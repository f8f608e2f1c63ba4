/* epar position-effect: paper §4 -> output/position/ */
#include <stdio.h>
#include <string.h>
#include "lib/err.h"
#include "experiments/analysis/experiment.h"
#include "experiments/analysis/position.h"
#include "cli.h"

static int apply(void *cfgv, const struct opt *opts, void *ctx)
{
    struct epar_position_cfg *cfg = cfgv;
    if (cli_seen(opts, "distance-curve")) cfg->distance_curve = *(int *)ctx;
    if (cfg->distance_curve < 1)
        return cli_usage_error("invalid value for --distance-curve: '%d' (expected an integer >= 1)", *(int *)ctx);
    if (cfg->distance_curve > cfg->prm.length) cfg->distance_curve = cfg->prm.length;
    return 0;
}

static void describe(const void *cfgv, char *buf, size_t n)
{
    const struct epar_params *p = &((const struct epar_position_cfg *)cfgv)->prm;
    snprintf(buf, n, "L=%d hidden=%d heads=%d batch=%d runs=%d seeds=%d form=%s alpha=%g beta=%g gamma=%g", p->length,
             p->hidden, p->heads, p->batch, p->runs, p->n_seeds, epar_posfx_form_name(p->form), p->alpha, p->beta,
             p->gamma);
}

static void summary(const struct cli_common *c, const void *cfgv, const void *resv)
{
    const struct epar_position_cfg *cfg = cfgv;
    const struct epar_position_result *res = resv;
    printf("position-effect (%s preset, %s form, L=%d): wrote %s/position/\n", cfg->prm.preset,
           epar_posfx_form_name(cfg->prm.form), cfg->prm.length, c->out);
    printf("  pos*  mean %.4g  std %.4g  min %g  max %g  (%d items)\n", res->pos_mean, res->pos_std, res->pos_min,
           res->pos_max, cfg->prm.n_seeds * cfg->prm.runs * cfg->prm.batch);
    printf("  mean attention weight %.6g (= 1/L by construction)\n", res->mean_weight);
    printf("  Theorem 1 checks: %s\n", res->properties_failed ? "FAILED (see properties.csv)" : "all pass");
}

int cmd_position_effect(int argc, char **argv)
{
    struct cli_common c = {0};
    int distance_curve = 0;
    struct opt opts[] = {
        OPTS_MODEL(&c),
        {"Figures", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"distance-curve", 0, OPT_INT, &distance_curve, "N", "distances 0..N-1 in the distance figure (default 20)", 0},
        OPTS_COMMON(&c),
        {NULL, 0, OPT_END, NULL, NULL, NULL, 0}};
    int rc = cli_parse("position-effect", "[options]", opts, argc, argv);
    if (rc >= 0) return rc;
    struct epar_position_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    return cli_experiment(&epar_exp_position, &c, opts, &cfg, apply, &distance_curve, describe, summary);
}
