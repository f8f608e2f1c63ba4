/* epar inspect CHECKPOINT... : what a trained model attends to, per layer and head
 * -> <out>/inspect/<task>-<mechanism>-seed<S>-<input>/ (and <out>/inspect/comparison-<input>/ for several checkpoints),
 * <input> = item<N> or text-<hash> (epar_inspect_input_tag): another item or text does not replace a folder.
 * Every checkpoint is read, checked and run before anything is written: a bad file writes nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/err.h"
#include "lib/outdir.h"
#include "experiments/common.h"
#include "experiments/train/inspect.h"
#include "cli.h"

#define MAX_CHECKPOINTS 16

/* "0,2" -> indices (non-negative integers, no repeats); 0 or a usage error (printed) */
static int parse_indices(const char *opt, const char *s, int *out, int *n)
{
    struct opt_dlist l;
    int rc = cli_parse_dlist(opt, s, &l);
    if (rc) return rc;
    if (l.n > EPAR_INSPECT_MAX_SEL) return cli_usage_error("invalid value for --%s: at most %d values", opt, EPAR_INSPECT_MAX_SEL);
    for (int k = 0; k < l.n; k++) {
        if (l.v[k] < 0 || l.v[k] != floor(l.v[k]) || l.v[k] > 65536)
            return cli_usage_error("invalid value for --%s: '%s' (expected indices 0, 1, ...)", opt, s);
        out[k] = (int)l.v[k];
        for (int q = 0; q < k; q++)
            if (out[q] == out[k]) return cli_usage_error("invalid value for --%s: '%s' (%d repeated)", opt, s, out[k]);
    }
    *n = l.n;
    return 0;
}

/* read, check and run every checkpoint; an exit code (printed) or 0 */
static int load_all(const struct cli_common *c, const char **paths, int n, const struct epar_inspect_opts *o,
                    struct epar_inspect *xs)
{
    char cache[4200];
    snprintf(cache, sizeof cache, "%s/train/data", c->out);
    for (int k = 0; k < n; k++) {
        int st = epar_inspect_open(&xs[k], paths[k], cache);
        if (!st) cli_progress(c, "inspect: %s (%d layers x %d heads, %ld steps) from %s", xs[k].name, xs[k].NL, xs[k].NH,
                              xs[k].run.step, paths[k]);
        if (!st) st = epar_inspect_run(&xs[k], o);
        for (int q = 0; !st && q < k; q++)
            if (!strcmp(xs[q].name, xs[k].name))
                st = epar_err_set(EPAR_EINVAL, "checkpoints '%s' and '%s' are of the same run (%s): give each once",
                                  paths[q], paths[k], xs[k].name);
        if (st) return cli_fail(st);
    }
    return 0;
}

static int write_one(const struct cli_common *c, const char *root, const char *name, const struct epar_inspect *xs, int n,
                     const struct epar_inspect_opts *o)
{
    struct epar_out out;
    int st = epar_out_begin(&out, root, name);
    if (st) return st;
    st = n == 1 ? epar_inspect_write(xs, o, &out) : epar_inspect_write_comparison(xs, n, o, &out);
    return cli_publish(c, "inspect", &out, st);
}

static void summary(const struct cli_common *c, const char *root, const struct epar_inspect *x)
{
    if (c->quiet) return;
    printf("inspect %s: %d tokens, %d layers x %d heads -> %s/%s/\n", x->name, x->T, x->NL, x->NH, root, x->folder);
    for (int l = 0; l < x->NL; l++)
        for (int h = 0; h < x->NH; h++) {
            const double *s = x->stats + ((size_t)l * x->NH + h) * EPAR_INSPECT_NSTATS;
            printf("  layer %d head %d: mean distance %.3g, entropy %.3g (uniform %.3g), previous %.3f, first %.3f", l, h,
                   s[EPAR_INSPECT_DISTANCE], s[EPAR_INSPECT_ENTROPY], s[EPAR_INSPECT_ENTROPY_UNIFORM],
                   s[EPAR_INSPECT_PREVIOUS], s[EPAR_INSPECT_FIRST]);
            if (x->rel_rows) printf(", answer-relevant %.3f (uniform %.3f)", s[EPAR_INSPECT_RELEVANT], s[EPAR_INSPECT_RELEVANT_UNIFORM]);
            putchar('\n');
        }
    if (x->interventions)
        printf("  intervention on %ld items: %s %.4g -> %.4g (%+.4g), loss %.4g -> %.4g nats\n", x->interv_base.sequences,
               x->run.task.info->metric, x->interv_base.metric, x->interv_eval.metric,
               x->interv_eval.metric - x->interv_base.metric, x->interv_base.loss, x->interv_eval.loss);
}

static int run(const struct cli_common *c, const char **paths, int n, const struct epar_inspect_opts *o)
{
    struct epar_inspect *xs = calloc((size_t)n, sizeof *xs);
    if (!xs) return cli_fail(epar_err_set(EPAR_ENOMEM, "out of memory"));
    int rc = load_all(c, paths, n, o, xs), st = EPAR_OK;
    char root[4200], tag[32], cmp[64];
    snprintf(root, sizeof root, "%s/inspect", c->out);
    epar_inspect_input_tag(o, tag, sizeof tag);
    snprintf(cmp, sizeof cmp, "comparison-%s", tag);
    for (int k = 0; !rc && !st && k < n; k++) st = write_one(c, root, xs[k].folder, &xs[k], 1, o);
    if (!rc && !st && n > 1) st = write_one(c, root, cmp, xs, n, o);
    if (!rc && !st)
        for (int k = 0; k < n; k++) summary(c, root, &xs[k]);
    if (!rc && !st && n > 1 && !c->quiet) printf("comparison of the %d checkpoints -> %s/%s/\n", n, root, cmp);
    for (int k = 0; k < n; k++) epar_inspect_free(&xs[k]);
    free(xs);
    return rc ? rc : st ? cli_fail(st) : 0;
}

int cmd_inspect(int argc, char **argv)
{
    struct cli_common c = {0};
    struct epar_inspect_opts o = {0};
    const char *layers = NULL, *heads = NULL, *paths[MAX_CHECKPOINTS];
    int item = 0, n = 0, interv_items = 256;
    struct opt opts[] = {
        {"Input", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"item", 0, OPT_INT, &item, "N", "item N of the task's evaluation set (default 0)", 0},
        {"text", 0, OPT_STRING, &o.text, "STRING", "this input instead: lm its characters; other tasks the symbols of tokens.csv, space-separated", 0},
        {"Interventions (the input's forward runs with them; intervention.csv: the evaluation without and with)", 0,
         OPT_GROUP, NULL, NULL, NULL, 0},
        {"mask-heads", 0, OPT_STRING, &o.mask_heads, "L.H,..", "zero these heads' outputs (layer.head, from 0), e.g. 0.1,1.3", 0},
        {"boost", 0, OPT_DOUBLE, &o.boost, "X", "multiply the answer-relevant keys' attention weights in the last layer by X > 0 (004:716)", 0},
        {"boost-renorm", 0, OPT_FLAG, &o.boost_renorm, NULL, "renormalise the boosted rows (= ln X added to those logits); default: as written, rows no longer sum to 1", 0},
        {"eval-items", 0, OPT_INT, &interv_items, "N", "evaluation items of intervention.csv (default 256, or the whole set when smaller; more than the set is an error)", 0},
        {"What to write", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"layers", 0, OPT_STRING, &layers, "L,..", "only these layers (from 0; default all)", 0},
        {"heads", 0, OPT_STRING, &heads, "H,..", "only these heads (from 0; default all)", 0},
        {"Common options", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"out", 'o', OPT_STRING, &c.out, "DIR", "output root folder (default output): writes DIR/inspect/", 0},
        {"no-render", 0, OPT_FLAG, &c.no_render, NULL, "write the .gp scripts but do not run gnuplot", 0},
        {"quiet", 'q', OPT_FLAG, &c.quiet, NULL, "no progress on stderr, no summary on stdout", 0},
        {"jobs", 'j', OPT_INT, &c.jobs, "N", "threads (default: all cores)", 0},
        {NULL, 0, OPT_END, NULL, NULL, NULL, 0}};
    int rc = cli_parse_args("inspect", "CHECKPOINT... [--item N | --text STRING] [--layers L,..] [--heads H,..] [--mask-heads L.H,..] [--boost X] [options]",
                            opts, argc, argv, paths, MAX_CHECKPOINTS, &n);
    if (rc >= 0) return rc;
    if (cli_seen(opts, "jobs") && c.jobs < 1) return cli_usage_error("invalid value for --jobs: '%d' (expected >= 1)", c.jobs);
    if (n == 0) {
        cli_usage_error("no checkpoint given for 'inspect'");
        fputs("hint: epar inspect output/train/<task>/<mechanism>/checkpoint.bin (written by 'epar train')\n", stderr);
        return 2;
    }
    if (cli_seen(opts, "item") && cli_seen(opts, "text"))
        return cli_usage_error("options '--item' and '--text' exclude each other");
    if (o.text && !*o.text) {
        cli_usage_error("invalid value for --text: '' (--text is empty)");
        fputs("hint: give the input's characters (lm) or symbols (the other tasks), or --item N\n", stderr);
        return 2;
    }
    if (cli_seen(opts, "boost") && !(o.boost > 0 && isfinite(o.boost)))
        return cli_usage_error("invalid value for --boost: '%g' (expected a finite number > 0)", o.boost);
    if (o.boost_renorm && !cli_seen(opts, "boost")) return cli_usage_error("option '--boost-renorm' needs '--boost X'");
    if (cli_seen(opts, "eval-items") && (interv_items < 1 || !(o.mask_heads || cli_seen(opts, "boost"))))
        return cli_usage_error(interv_items < 1 ? "invalid value for --eval-items: '%d' (expected >= 1)"
                                                : "option '--eval-items' needs '--mask-heads' or '--boost' (got %d)",
                               interv_items);
    if (o.mask_heads && !*o.mask_heads) return cli_usage_error("invalid value for --mask-heads: '' (expected L.H,...)");
    o.interv_items = cli_seen(opts, "eval-items") ? interv_items : 0;   /* 0: 256, or the whole set when smaller */
    if (layers && (rc = parse_indices("layers", layers, o.layers, &o.n_layers))) return rc;
    if (heads && (rc = parse_indices("heads", heads, o.heads, &o.n_heads))) return rc;
    o.item = item;
    if ((rc = cli_check_out(&c.out))) return rc;
    cli_set_jobs(&c);
    return run(&c, paths, n, &o);
}
