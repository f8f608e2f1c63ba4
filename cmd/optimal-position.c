/* epar optimal-position: paper §4.3 -> output/optimal/ */
#include <stdio.h>
#include <string.h>
#include "lib/err.h"
#include "experiments/common.h"
#include "experiments/optimal.h"
#include "cli.h"

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

    struct epar_protocol proto;
    if ((rc = cli_resolve(&c, opts, "optimal-position", &proto, &cfg.prm))) return rc;
    int st = epar_protocol_check_keys(&proto, "optimal-position", epar_optimal_keys);
    if (!st && norm) {
        cfg.n_types = 1;
        cfg.types[0] = EPAR_IMP_NORM;
    } else if (!st && !types) {
        const char *pt = "random,structured,sparse,dense,clustered";
        if (!(st = epar_protocol_get_string(&proto, "optimal-position", "types", &pt)) &&
            epar_exp_optimal_parse_types(pt, &cfg)) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", epar_err_message());
            st = epar_err_set(EPAR_EPROTOCOL, "invalid protocol '%s': $.experiments.optimal-position.types: %s",
                              proto.path, msg);
        }
    }
    if (st) {
        epar_protocol_free(&proto);
        return cli_fail(st);
    }

    char tl[256] = "";
    for (int t = 0; t < cfg.n_types; t++) {
        size_t l = strlen(tl);
        snprintf(tl + l, sizeof tl - l, "%s%s", t ? "," : "", epar_imp_name(cfg.types[t]));
    }
    cli_progress(&c, "optimal-position: L=%d hidden=%d heads=%d batch=%d runs=%d seeds=%d types=%s form=%s alpha=%g "
                     "beta=%g gamma=%g (paired: basic, enhanced, none)",
                 cfg.prm.length, cfg.prm.hidden, cfg.prm.heads, cfg.prm.batch, cfg.prm.runs, cfg.prm.n_seeds, tl,
                 epar_posfx_form_name(cfg.prm.form), cfg.prm.alpha, cfg.prm.beta, cfg.prm.gamma);
    struct epar_optimal_result res;
    if ((st = epar_exp_optimal_run(&cfg, &res))) {
        epar_protocol_free(&proto);
        return cli_fail(st);
    }
    struct epar_out o;
    if (!(st = epar_out_begin(&o, c.out, "optimal")))
        st = cli_publish(&c, "optimal-position", &o, epar_exp_optimal_write(&cfg, &res, &o, proto.path));
    if (!st && !c.quiet) {
        printf("optimal-position (%s preset, %s form, L=%d, %d runs x %d seeds): wrote %s/optimal/\n", cfg.prm.preset,
               epar_posfx_form_name(cfg.prm.form), cfg.prm.length, cfg.prm.runs, cfg.prm.n_seeds, c.out);
        printf("  %-10s  %-17s  %-17s   (mean +- sd across seeds)\n", "type", "consistency", "ranking");
        for (int t = 0; t < cfg.n_types; t++)
            printf("  %-10s  %.4f +- %.4f  %+.4f +- %.4f\n", epar_imp_name(cfg.types[t]), res.cons[t], res.cons_sd[t],
                   res.rank[t], res.rank_sd[t]);
        printf("  verdict (the reference's rule): %s\n", res.verdict);
        printf("  a = argmax (mean_j A_ij) I_i is argmax I: rows of A sum to 1 (see verification_report.txt)\n");
    }
    epar_exp_optimal_free(&res);
    epar_protocol_free(&proto);
    return st ? cli_fail(st) : 0;
}
