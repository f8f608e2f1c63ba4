/* epar scale: the single-head analysis at long context -> output/scale/ */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <omp.h>
#include "lib/blas.h"
#include "lib/err.h"
#include "experiments/common.h"
#include "experiments/analysis/scale.h"
#include "cli.h"

/* OpenBLAS picks its kernel in a constructor, before main. When that kernel lacks AVX-512 on a CPU that has
 * it (OpenBLAS 0.3.21 gives AMD Zen 4 its AVX2 "Zen" kernel) and the user set no OPENBLAS_CORETYPE,
 * re-execute once with OPENBLAS_CORETYPE=SkylakeX; an AVX-512 kernel OpenBLAS already chose (SkylakeX,
 * Cooperlake, SapphireRapids) is kept (lib/blas.h). EPAR_BLAS_REEXEC (the kernel OpenBLAS had chosen) guards
 * against a second exec and is recorded in run.json. */
static void select_blas_core(int argc, char **argv)
{
    const char *up = epar_blas_upgrade_core();
    if (!up || getenv("EPAR_BLAS_REEXEC")) return;
    char **nargv = calloc((size_t)argc + 2, sizeof *nargv);
    if (!nargv) return;
    nargv[0] = "epar";
    for (int i = 0; i < argc; i++) nargv[i + 1] = argv[i];
    setenv("OPENBLAS_CORETYPE", up, 1);
    setenv("EPAR_BLAS_REEXEC", epar_blas_core(), 1);
    fflush(NULL);
    execv("/proc/self/exe", nargv);
    /* exec failed: carry on with the kernel already loaded */
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("EPAR_BLAS_REEXEC");
    free(nargv);
}

/* progress on stderr: the inputs, then each timed repetition with an estimate of the time left */
static void scale_progress(void *ctx, int rep, int repeats, double seconds)
{
    const struct cli_common *c = ctx;
    if (rep == 0) cli_progress(c, "scale: inputs drawn; %d timed repetition(s) follow", repeats);
    else if (rep < repeats)
        cli_progress(c, "scale: repetition %d of %d took %.3g s (about %.3g s left)", rep, repeats, seconds,
                     seconds * (repeats - rep));
    else cli_progress(c, "scale: repetition %d of %d took %.3g s; writing the tables", rep, repeats, seconds);
}

/* experiments.scale: the mechanism and path by name, the materialised length limit and the repeats */
struct scale_in {
    const char *mechanism, *path;
    int materialized_max_length, repeats;
};
#define SI struct scale_in
static const struct epar_field scale_rows[] = {
    {.key = "mechanism", .type = EPAR_FIELD_STRING, .offset = offsetof(SI, mechanism)},
    {.key = "path", .type = EPAR_FIELD_STRING, .offset = offsetof(SI, path)},
    {.key = "materialized_max_length", .type = EPAR_FIELD_INT, .offset = offsetof(SI, materialized_max_length),
     .lo = 0, .hi = 1 << 24},
    {.key = "repeats", .type = EPAR_FIELD_INT, .offset = offsetof(SI, repeats), .lo = 1, .hi = 1000},
    {0}};
#undef SI

int cmd_scale(int argc, char **argv)
{
    struct cli_common c = {0};
    const char *mechanism = NULL, *path = NULL;
    int repeats = 0, mat_max = 0;
    struct opt opts[] = {
        {"Analysis", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"length", 'L', OPT_INT, &c.over.length, "N", "sequence length (default: protocol, 4096)", 0},
        {"hidden", 0, OPT_INT, &c.over.hidden, "N", "layer width; the head analysed is d = hidden/heads (default 64)", 0},
        {"mechanism", 'm', OPT_STRING, &mechanism, "NAME", "epar-enhanced (default), epar-basic or none", 0},
        {"path", 0, OPT_STRING, &path, "P", "auto (default), materialized or streaming", 0},
        {"materialized-max-length", 0, OPT_INT, &mat_max, "N", "auto picks materialized up to this length (2048)", 0},
        {"repeats", 0, OPT_INT, &repeats, "N", "timed repetitions; seconds is their median (default 3)", 0},
        {"Model parameters (override the protocol)", 0, OPT_GROUP, NULL, NULL, NULL, 0},
        {"alpha", 0, OPT_DOUBLE, &c.over.alpha, "X", "position-effect strength alpha > 0", 0},
        {"beta", 0, OPT_DOUBLE, &c.over.beta, "X", "decay rate beta >= 0", 0},
        {"gamma", 0, OPT_DOUBLE, &c.over.gamma, "X", "enhancement gamma >= 0", 0},
        {"temperature", 0, OPT_DOUBLE, &c.over.temperature, "T", "softmax temperature > 0", 0},
        OPTS_COMMON(&c),
        {NULL, 0, OPT_END, NULL, NULL, NULL, 0}};
    int rc = cli_parse("scale", "[--length L] [--hidden D] [--mechanism NAME] [--path P] [options]", opts, argc, argv);
    if (rc >= 0) return rc;
    select_blas_core(argc, argv);

    struct epar_protocol proto;
    struct epar_scale_cfg cfg = {.path = EPAR_STREAM_AUTO, .materialized_max_length = 2048, .repeats = 3};
    if ((rc = cli_resolve(&c, opts, "scale", &proto, &cfg.prm))) return rc;
    struct scale_in in = {NULL, NULL, cfg.materialized_max_length, cfg.repeats};
    const char *keys[8];
    epar_fields_keys(scale_rows, NULL, keys, 8);
    int st = epar_protocol_check_keys(&proto, "scale", keys);
    if (!st)
        st = epar_protocol_obj_fields(&proto, epar_protocol_section(&proto, "scale"), "$.experiments.scale", scale_rows,
                                      &in);
    const char *mech = in.mechanism, *pname = in.path;
    cfg.materialized_max_length = in.materialized_max_length;
    cfg.repeats = in.repeats;
    /* bad values inside the protocol file are protocol errors naming the file and the key */
    if (!st && mech && epar_exp_scale_mechanism(mech, &cfg.prm.form))
        st = epar_protocol_blame(&proto, "$.experiments.scale.mechanism");
    if (!st && pname && epar_stream_path_parse(pname, &cfg.path))
        st = epar_protocol_blame(&proto, "$.experiments.scale.path");
    if (st) {
        epar_protocol_free(&proto);
        return cli_fail(st == EPAR_EINVAL ? EPAR_EPROTOCOL : st);
    }
    if (mechanism && (st = epar_exp_scale_mechanism(mechanism, &cfg.prm.form))) goto fail;
    if (path && (st = epar_stream_path_parse(path, &cfg.path))) goto fail;
    if (cli_seen(opts, "repeats")) {
        if (repeats < 1) {
            epar_protocol_free(&proto);
            return cli_usage_error("invalid value for --repeats: '%d' (expected an integer >= 1)", repeats);
        }
        cfg.repeats = repeats;
    }
    if (cli_seen(opts, "materialized-max-length")) {
        if (mat_max < 0) {
            epar_protocol_free(&proto);
            return cli_usage_error("invalid value for --materialized-max-length: '%d' (expected an integer >= 0)",
                                   mat_max);
        }
        cfg.materialized_max_length = mat_max;
    }
    cfg.threads = c.jobs > 0 ? c.jobs : omp_get_max_threads();
    cfg.progress = scale_progress;
    cfg.progress_ctx = &c;

    cli_progress(&c, "scale: L=%d d=%d (head 0 of %d) mechanism=%s path=%s threads=%d repeats=%d (BLAS kernel %s)",
                 cfg.prm.length, cfg.prm.hidden / cfg.prm.heads, cfg.prm.heads, epar_exp_scale_mechanism_name(cfg.prm.form),
                 epar_stream_path_name(epar_stream_choose(cfg.path, cfg.prm.length, cfg.materialized_max_length)),
                 cfg.threads, cfg.repeats, epar_blas_core());
    struct epar_scale_result res;
    if ((st = epar_exp_scale_run(&cfg, &res))) goto fail;
    struct epar_out o;
    if (!(st = epar_out_begin(&o, c.out, "scale"))) {
        st = epar_exp_scale_write(&cfg, &res, &o, proto.path);
        if (st) epar_out_abort(&o);
        else st = epar_exp_finish(&o, 1, c.jobs);    /* no figures: the scaling figure is bench/'s */
    }
    if (!st && !c.quiet) {
        printf("scale (%s, L=%d, d=%d, %s path, %d threads): wrote %s/scale/\n",
               epar_exp_scale_mechanism_name(cfg.prm.form), cfg.prm.length, cfg.prm.hidden / cfg.prm.heads,
               epar_stream_path_name(res.path), res.threads, c.out);
        printf("  time %.6g s (median of %d)  %.4g GFLOP/s (2 L^2 d)  peak RSS %.1f MB\n", res.seconds, cfg.repeats,
               res.gflops, res.peak_rss_mb);
        printf("  pos* %d  V(pos*) %.6g  mean entropy %.6g nats (ln L = %.6g)  mean distance %.6g\n", res.r.pos_star,
               res.r.v_max, res.r.mean_H, log((double)cfg.prm.length), res.r.mean_D);
    }
    epar_exp_scale_free(&res);
    epar_protocol_free(&proto);
    return st ? cli_fail(st) : 0;
fail:
    epar_protocol_free(&proto);
    return cli_fail(st);
}
