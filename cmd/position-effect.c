/* epar position-effect: paper §4 -> output/position/ */
#include <stdio.h>
#include <string.h>
#include "lib/err.h"
#include "experiments/common.h"
#include "experiments/position.h"
#include "cli.h"

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

    struct epar_protocol proto;
    struct epar_position_cfg cfg = {.distance_curve = 20};
    if ((rc = cli_resolve(&c, opts, "position-effect", &proto, &cfg.prm))) return rc;
    int st = epar_protocol_check_keys(&proto, "position-effect", epar_position_keys);
    if (!st) st = epar_protocol_get_int(&proto, "position-effect", "distance_curve", &cfg.distance_curve, 1, 1 << 20);
    if (st) {
        epar_protocol_free(&proto);
        return cli_fail(st);
    }
    if (cli_seen(opts, "distance-curve")) cfg.distance_curve = distance_curve;
    if (cfg.distance_curve < 1) {
        epar_protocol_free(&proto);
        return cli_usage_error("invalid value for --distance-curve: '%d' (expected an integer >= 1)", distance_curve);
    }
    if (cfg.distance_curve > cfg.prm.length) cfg.distance_curve = cfg.prm.length;

    cli_progress(&c, "position-effect: L=%d hidden=%d heads=%d batch=%d runs=%d seeds=%d form=%s alpha=%g beta=%g gamma=%g",
                 cfg.prm.length, cfg.prm.hidden, cfg.prm.heads, cfg.prm.batch, cfg.prm.runs, cfg.prm.n_seeds,
                 epar_posfx_form_name(cfg.prm.form), cfg.prm.alpha, cfg.prm.beta, cfg.prm.gamma);
    struct epar_position_result res;
    if ((st = epar_exp_position_run(&cfg, &res))) {
        epar_protocol_free(&proto);
        return cli_fail(st);
    }
    struct epar_out o;
    if (!(st = epar_out_begin(&o, c.out, "position")))
        st = cli_publish(&c, "position-effect", &o, epar_exp_position_write(&cfg, &res, &o, proto.path));
    if (!st && !c.quiet) {
        printf("position-effect (%s preset, %s form, L=%d): wrote %s/position/\n", cfg.prm.preset,
               epar_posfx_form_name(cfg.prm.form), cfg.prm.length, c.out);
        printf("  pos*  mean %.4g  std %.4g  min %g  max %g  (%d items)\n", res.pos_mean, res.pos_std, res.pos_min,
               res.pos_max, cfg.prm.n_seeds * cfg.prm.runs * cfg.prm.batch);
        printf("  mean attention weight %.6g (= 1/L by construction)\n", res.mean_weight);
        printf("  Theorem 1 checks: %s\n", res.properties_failed ? "FAILED (see properties.csv)" : "all pass");
    }
    epar_exp_position_free(&res);
    epar_protocol_free(&proto);
    return st ? cli_fail(st) : 0;
}
