/* epar compare: every attention/position mechanism of the sources, side by side -> output/compare/ */
#include <stdio.h>
#include <string.h>
#include "lib/err.h"
#include "lib/mech.h"
#include "lib/nnpos.h"
#include "experiments/analysis/experiment.h"
#include "experiments/analysis/compare.h"
#include "cli.h"

static void list_mechanisms(void)
{
    printf("%-18s %-22s %-7s %-6s %s\n", "id", "kind", "section", "train", "parameters (default) / what it does");
    for (int id = 0; id < EPAR_MECH_COUNT; id++) {
        const struct epar_mech_info *in = epar_mech_row(id);
        char params[512] = "";
        for (int q = 0; q < EPAR_MECH_MAX_PARAMS && in->params[q].name; q++)
            snprintf(params + strlen(params), sizeof params - strlen(params), "%s%s.%s=%g", q ? " " : "", in->id,
                     in->params[q].name, in->params[q].def);
        /* "§" is 2 bytes: the section column is one wider in bytes */
        printf("%-18s %-22s %-8s %-6s %s\n", in->id, epar_mech_kind_name(in->kind), in->section,
               epar_mech_trained_only((enum epar_mech_id)id) ? "only"   /* no compare form: epar train, benchmark */
               : epar_nnpos_trainable((enum epar_mech_id)id) ? "yes" : "-", params[0] ? params : "-");
        printf("%-18s %-22s %-8s %-6s   %s [%s]\n", "", "", "", "", in->note, in->seeds);
        if (epar_nnpos_trainable((enum epar_mech_id)id))
            printf("%-18s %-22s %-8s %-6s   trained: %s\n", "", "", "", "", epar_nnpos_row(id)->summary);
    }
}

static int set_one(void *cfg, const char *assignment) { return epar_exp_compare_set(cfg, assignment); }

struct compare_opts {
    const char *mechanisms;
    const struct opt_dlist *speed;
    int speed_tile, argc;
    char **argv;
};

static int apply(void *cfgv, const struct opt *opts, void *ctx)
{
    struct epar_compare_cfg *cfg = cfgv;
    const struct compare_opts *co = ctx;
    int st = EPAR_OK;
    if (cli_seen(opts, "causal")) cfg->causal = 1;
    if (co->mechanisms) st = epar_exp_compare_select(cfg, co->mechanisms);
    else if (cfg->causal) { /* default list under causal: drop the look-ahead fixed patterns */
        int n = 0;
        for (int k = 0; k < cfg->n_mech; k++)
            if (!epar_mech_looks_ahead(cfg->mech[k])) cfg->mech[n++] = cfg->mech[k];
        cfg->n_mech = n;
    }
    if (!st) st = cli_each_set(co->argc, co->argv, set_one, cfg);
    if (st) return cli_fail(st);
    if (cli_seen(opts, "speed-lengths")) {
        const struct opt_dlist *sp = co->speed;
        if (sp->n < 1 || sp->n > EPAR_COMPARE_MAX_FACTORS)
            return cli_usage_error("--speed-lengths takes 1 to %d lengths", EPAR_COMPARE_MAX_FACTORS);
        for (int k = 0; k < sp->n; k++)
            if (sp->v[k] < 1 || sp->v[k] > 16384 || sp->v[k] != (int)sp->v[k])
                return cli_usage_error("invalid --speed-lengths value '%g' (an integer in [1, 16384])", sp->v[k]);
        cfg->n_speed = sp->n;
        for (int k = 0; k < sp->n; k++) cfg->speed_lengths[k] = (int)sp->v[k];
    }
    if (cli_seen(opts, "speed-tile")) {
        if (co->speed_tile < 0 || co->speed_tile > 65536)
            return cli_usage_error("invalid --speed-tile '%d' (0 to 65536)", co->speed_tile);
        cfg->speed_tile = co->speed_tile;
    }
    return 0;
}

static void describe(const void *cfgv, char *buf, size_t n)
{
    const struct epar_compare_cfg *cfg = cfgv;
    snprintf(buf, n, "%d mechanisms, L=%d hidden=%d heads=%d batch=%d seeds=%d%s", cfg->n_mech, cfg->prm.length,
             cfg->prm.hidden, cfg->prm.heads, cfg->prm.batch, cfg->prm.n_seeds, cfg->causal ? " causal" : "");
}

static void summary(const struct cli_common *c, const void *cfgv, const void *resv)
{
    const struct epar_compare_cfg *cfg = cfgv;
    const struct epar_compare_result *res = resv;
    printf("compare (L=%d, %d heads, %d seeds%s): wrote %s/compare/\n", cfg->prm.length, cfg->prm.heads,
           cfg->prm.n_seeds, cfg->causal ? ", causal" : "", c->out);
    printf("  %-18s %9s %9s %9s %9s\n", "mechanism", "norm.ent", "mean.dist", "local", "sparsity");
    for (int k = 0; k < res->K; k++) {
        const double *m = res->mean + (size_t)k * EPAR_CMP_NM;
        printf("  %-18s %9.4f %9.3f %9.4f %9.4f\n", epar_mech_row(cfg->mech[k])->id, m[EPAR_CMP_NENT],
               m[EPAR_CMP_DIST], m[EPAR_CMP_LOCAL], m[EPAR_CMP_SPARS]);
    }
    printf("  %zu measurements of the seeds' statements in seed_checks.csv (judged by 'epar run-all')\n",
           res->checks.n);
}

int cmd_compare(int argc, char **argv)
{
    struct cli_common c = {0};
    const char *mechanisms = NULL, *set = NULL;
    int causal = 0, list = 0, speed_tile = 0;
    struct opt_dlist speed = {0};
    struct opt opts[] = {
        {"Mechanisms", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"list", 0, OPT_FLAG, &list, NULL, "print every mechanism: id, kind, parameters and defaults", 0},
        {"mechanisms", 'm', OPT_STRING, &mechanisms, "LIST", "comma-separated ids (default: all)", 0},
        {"set", 0, OPT_STRING, &set, "M.P=V", "mechanism parameter, e.g. alibi.max_bias=8 (repeatable)", 0},
        {"causal", 0, OPT_FLAG, &causal, NULL, "causal attention (look-ahead fixed patterns are dropped)", 0},
        {"Sizes (override the protocol)", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"length", 'L', OPT_INT, &c.over.length, "N", "sequence length", 0},
        {"hidden", 0, OPT_INT, &c.over.hidden, "N", "model width", 0},
        {"heads", 0, OPT_INT, &c.over.heads, "N", "attention heads (must divide hidden)", 0},
        {"batch", 0, OPT_INT, &c.over.batch, "N", "inputs per seed", 0},
        {"Sparse speed (sparse_speed.csv, the pi_speedup check)", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"speed-lengths", 0, OPT_DLIST, &speed, "LIST", "lengths of the dense vs structured kernel timings (protocol: 1024,2048,4096)", 0},
        {"speed-tile", 0, OPT_INT, &speed_tile, "N", "rows per tile of the structured kernels (0: the default)", 0},
        OPTS_COMMON(&c),
        {NULL, 0, OPT_END, NULL, NULL, NULL, 0}};
    int rc = cli_parse("compare", "[--list] [--mechanisms a,b,...] [--set mech.param=value] [options]", opts, argc, argv);
    if (rc >= 0) return rc;
    if (list) {
        list_mechanisms();
        return 0;
    }
    (void)set;
    struct compare_opts co = {mechanisms, &speed, speed_tile, argc, argv};
    struct epar_compare_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    return cli_experiment(&epar_exp_compare, &c, opts, &cfg, apply, &co, describe, summary);
}
