/* Option parsing and the shared resolution of protocol + command-line values. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <omp.h>
#include "lib/err.h"
#include "lib/outdir.h"
#include "experiments/common.h"
#include "experiments/analysis/experiment.h"
#include "cli.h"

/* One line on stderr: control characters of values (a newline in an argument, bytes of a binary
 * protocol file quoted by the JSON parser) are printed as '?', so an error is always one line. */
static void put_line(const char *prefix, const char *msg)
{
    fputs(prefix, stderr);
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
        fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, stderr);
    fputc('\n', stderr);
}

int cli_usage_error(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    put_line("epar: error: ", msg);
    return 2;
}

int cli_exit_code(int status)
{
    switch (status) {
    case EPAR_EPROTOCOL: return 3; /* a malformed protocol is an input error, as an unreadable file */
    default: return status;        /* 0 ok, 1 check, 2 usage, 3 I/O, 4 resource, 128 + signal */
    }
}

int cli_fail(int st)
{
    put_line("epar: error: ", epar_err_message());
    const char *h = epar_err_hint_text();
    if (h && *h) put_line("hint: ", h);
    return cli_exit_code(st ? st : 1);
}

void cli_vprogress(const struct cli_common *c, const char *fmt, va_list ap)
{
    if (c->quiet) return;
    fflush(stdout);   /* what was printed before it comes first when both go to one file */
    fputs("epar: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void cli_progress(const struct cli_common *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cli_vprogress(c, fmt, ap);
    va_end(ap);
}

int cli_publish(const struct cli_common *c, const char *cmd, struct epar_out *o, int st)
{
    if (st) {
        epar_out_abort(o);
        return st;
    }
    cli_progress(c, "%s: %s figures", cmd, c->no_render ? "skipping" : "rendering");
    return epar_exp_finish(o, c->no_render, c->jobs);
}

int cli_experiment(const struct epar_experiment *x, struct cli_common *c, const struct opt *opts, void *cfg,
                   int (*apply)(void *cfg, const struct opt *opts, void *ctx), void *ctx,
                   void (*describe)(const void *cfg, char *buf, size_t n),
                   void (*summary)(const struct cli_common *c, const void *cfg, const void *res))
{
    struct epar_protocol proto;
    int rc = cli_resolve(c, opts, x->name, &proto, (struct epar_params *)cfg);
    if (rc) return rc;
    int st = x->config(&proto, cfg);
    if (!st && apply && (rc = apply(cfg, opts, ctx))) {
        epar_protocol_free(&proto);
        return rc;
    }
    if (!st && x->check) st = x->check(cfg);
    void *res = st ? NULL : calloc(1, x->res_size);
    if (!st && !res) st = epar_err_set(EPAR_ENOMEM, "out of memory");
    if (st) {
        epar_protocol_free(&proto);
        return cli_fail(st);
    }
    char line[1024];
    describe(cfg, line, sizeof line);
    cli_progress(c, "%s: %s", x->name, line);
    if ((st = x->run(cfg, res))) {
        free(res);
        epar_protocol_free(&proto);
        return cli_fail(st);
    }
    struct epar_out o;
    if (!(st = epar_out_begin(&o, c->out, x->folder)))
        st = cli_publish(c, x->name, &o, x->write(cfg, res, &o, proto.path));
    if (!st && !c->quiet && summary) summary(c, cfg, res);
    x->free(res);
    free(res);
    epar_protocol_free(&proto);
    return st ? cli_fail(st) : 0;
}

void cli_set_jobs(const struct cli_common *c)
{
    if (c->jobs > 0) omp_set_num_threads(c->jobs);
}

static int parse_double(const char *opt, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno == ERANGE || !isfinite(v))
        return cli_usage_error("invalid value for --%s: '%s' (expected a finite number)", opt, s);
    *out = v;
    return 0;
}

static int parse_int(const char *opt, const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno == ERANGE || v < -2147483647L || v > 2147483647L)
        return cli_usage_error("invalid value for --%s: '%s' (expected an integer)", opt, s);
    *out = (int)v;
    return 0;
}

int cli_parse_dlist(const char *opt, const char *s, struct opt_dlist *out)
{
    out->n = 0;
    if (!*s) return cli_usage_error("invalid value for --%s: '' (expected a comma-separated list of numbers)", opt);
    const char *p = s;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char item[64];
        if (len == 0 || len >= sizeof item)
            return cli_usage_error("invalid value for --%s: '%s' (empty or overlong list item)", opt, s);
        if (out->n >= EPAR_MAX_LIST)
            return cli_usage_error("invalid value for --%s: too many values (at most %d)", opt, EPAR_MAX_LIST);
        memcpy(item, p, len);
        item[len] = '\0';
        char *end;
        errno = 0;
        double v = strtod(item, &end);
        if (*end || errno == ERANGE || !isfinite(v))
            return cli_usage_error("invalid value for --%s: '%s' (list item '%s' is not a finite number)", opt, s,
                                   item);
        out->v[out->n++] = v;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

static int parse_seeds(const char *opt, const char *s, struct epar_params *out)
{
    struct opt_dlist l;
    int rc = cli_parse_dlist(opt, s, &l);
    if (rc) return rc;
    if (l.n > EPAR_MAX_SEEDS) return cli_usage_error("invalid value for --%s: too many seeds (at most 64)", opt);
    for (int i = 0; i < l.n; i++) {
        if (l.v[i] < 0 || l.v[i] > 4294967295.0 || l.v[i] != floor(l.v[i]))
            return cli_usage_error("invalid value for --%s: '%s' (seeds are integers in [0, 4294967295])", opt, s);
        out->seeds[i] = (unsigned long)l.v[i];
    }
    out->n_seeds = l.n;
    return 0;
}

static int set_value(struct opt *o, const char *val)
{
    switch (o->type) {
    case OPT_INT: return parse_int(o->name, val, o->dest);
    case OPT_DOUBLE: return parse_double(o->name, val, o->dest);
    case OPT_STRING:
        *(const char **)o->dest = val;
        return 0;
    case OPT_DLIST: return cli_parse_dlist(o->name, val, o->dest);
    case OPT_SEEDS: return parse_seeds(o->name, val, o->dest);
    default: return 0;
    }
}

int cli_parse(const char *cmd, const char *usage, struct opt *opts, int argc, char **argv)
{
    return cli_parse_args(cmd, usage, opts, argc, argv, NULL, 0, NULL);
}

int cli_parse_args(const char *cmd, const char *usage, struct opt *opts, int argc, char **argv, const char **args,
                   int max_args, int *n_args)
{
    int na = 0;
    if (n_args) *n_args = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            cli_help(stdout, cmd, usage, opts);
            return 0;
        }
        if (!strcmp(a, "--")) {   /* the rest are arguments, even when they start with '-' */
            for (i++; i < argc; i++) {
                if (na >= max_args) return cli_usage_error("unexpected argument '%s'", argv[i]);
                args[na++] = argv[i];
            }
            break;
        }
        struct opt *o = NULL;
        const char *val = NULL;
        char name[128];
        if (a[0] == '-' && a[1] == '-' && a[2]) {
            const char *eq = strchr(a + 2, '=');
            size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            if (len >= sizeof name) len = sizeof name - 1;
            memcpy(name, a + 2, len);
            name[len] = '\0';
            if (eq) val = eq + 1;
            for (struct opt *p = opts; p->type != OPT_END; p++)
                if (p->type != OPT_GROUP && !strcmp(p->name, name)) o = p;
            if (!o) {
                cli_usage_error("unknown option '--%s' for '%s'", name, cmd);
                struct epar_nearest near;
                epar_nearest_init(&near, name);
                for (struct opt *p = opts; p->type != OPT_END; p++)
                    if (p->type != OPT_GROUP) epar_nearest_add(&near, p->name);
                if (near.best) fprintf(stderr, "hint: did you mean %s?\n", epar_nearest_text(&near, "--"));
                else fprintf(stderr, "hint: see 'epar %s --help'\n", cmd);
                return 2;
            }
        } else if (a[0] == '-' && a[1] && a[1] != '-' && !a[2]) {
            for (struct opt *p = opts; p->type != OPT_END; p++)
                if (p->type != OPT_GROUP && p->shortc == a[1]) o = p;
            if (!o) {
                cli_usage_error("unknown option '%s' for '%s'", a, cmd);
                fprintf(stderr, "hint: see 'epar %s --help'\n", cmd);
                return 2;
            }
        } else if (na < max_args) {
            args[na++] = a;
            continue;
        } else {
            if (max_args > 0) {
                cli_usage_error("too many arguments for '%s' (at most %d): '%s'", cmd, max_args, a);
                return 2;
            }
            cli_usage_error("unexpected argument '%s' for '%s'", a, cmd);
            fprintf(stderr, "hint: options start with '--'; see 'epar %s --help'\n", cmd);
            return 2;
        }
        if (o->type == OPT_FLAG) {
            if (val) return cli_usage_error("option '--%s' takes no value, got '%s'", o->name, val);
            *(int *)o->dest = 1;
        } else {
            if (!val) {
                if (i + 1 >= argc) return cli_usage_error("option '--%s' needs a value (%s)", o->name, o->arg);
                val = argv[++i];
            }
            int rc = set_value(o, val);
            if (rc) return rc;
        }
        o->seen = 1;
    }
    if (cli_seen(opts, "seed") && cli_seen(opts, "seeds")) {
        int seed = 0;
        char list[256] = "";
        for (struct opt *p = opts; p->type != OPT_END; p++) {
            if (p->type == OPT_INT && !strcmp(p->name, "seed")) seed = *(int *)p->dest;
            if (p->type == OPT_SEEDS) {
                const struct epar_params *sp = p->dest;
                for (int i = 0; i < sp->n_seeds; i++)
                    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%lu", i ? "," : "", sp->seeds[i]);
            }
        }
        cli_usage_error("options '--seed %d' and '--seeds %s' exclude each other", seed, list);
        fputs("hint: give one of them ('--seeds N' is the same as '--seed N')\n", stderr);
        return 2;
    }
    if (n_args) *n_args = na;
    return -1;
}

int cli_seen(const struct opt *opts, const char *name)
{
    for (const struct opt *p = opts; p->type != OPT_END; p++)
        if (p->type != OPT_GROUP && !strcmp(p->name, name)) return p->seen;
    return 0;
}

/* columns a UTF-8 string takes on a terminal (one per code point: "paper §4" is 8, not 9 bytes' worth) */
size_t cli_text_width(const char *s)
{
    size_t w = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) w += (*p & 0xC0) != 0x80;
    return w;
}

/* s, then spaces up to `width` columns (at least one space after s) */
void cli_pad(FILE *f, const char *s, size_t width)
{
    size_t w = cli_text_width(s);
    fputs(s, f);
    do fputc(' ', f); while (++w < width);
}


const char *cli_command_folder(const struct cmd_entry *e) { return e->exp ? e->exp->folder : e->folder; }

/* the command being run: set by the dispatcher (cmd/main.c, cmd/docgen.c), so the help shows its summary without
 * this file calling back into the command table */
const struct cmd_entry *cli_current_command;
/* the command table (cmd/commands.c), set by cmd/main.c before dispatching */
const struct cmd_entry *epar_commands;

void cli_help(FILE *f, const char *cmd, const char *usage, const struct opt *opts)
{
    const struct cmd_entry *ce =
        cli_current_command && !strcmp(cli_current_command->name, cmd) ? cli_current_command : NULL;
    fprintf(f, "usage: epar %s %s\n\n", cmd, usage ? usage : "[options]");
    if (ce) fprintf(f, "%s -> output/%s/\n", ce->summary, cli_command_folder(ce));
    for (const struct opt *p = opts; p->type != OPT_END; p++) {
        if (p->type == OPT_GROUP) {
            fprintf(f, "\n%s:\n", p->name);
            continue;
        }
        char left[64];
        if (p->shortc)
            snprintf(left, sizeof left, "-%c, --%s%s%s", p->shortc, p->name, p->arg ? " " : "", p->arg ? p->arg : "");
        else
            snprintf(left, sizeof left, "    --%s%s%s", p->name, p->arg ? " " : "", p->arg ? p->arg : "");
        fputs("  ", f);
        cli_pad(f, left, cli_text_width(left) + 2 > 31 ? cli_text_width(left) + 2 : 31);   /* two spaces at least */
        if (!strcmp(p->name, "protocol") && p->type == OPT_STRING) {
            /* the default as this binary resolves it: ./paper_protocol.json, else the installed copy */
            char buf[4200];
            fprintf(f, "protocol file (default: ./paper_protocol.json if present, else the copy installed with epar; "
                       "here: %s)\n", cli_default_protocol(buf, sizeof buf));
            continue;
        }
        fprintf(f, "%s\n", p->help);
    }
    fputs("  ", f);
    cli_pad(f, "-h, --help", 31);
    fputs("show this help\n", f);
    if (ce && ce->examples) {
        fputs("\nExamples:\n", f);
        for (const char *const *e = ce->examples; e[0] && e[1]; e += 2) fprintf(f, "  %s\n      %s\n", e[0], e[1]);
    }
    fputs("\nExit codes: 0 ok, 1 a check failed, 2 usage error, 3 input/output or protocol error, 4 resource limit.\n", f);
}

const char *cli_default_protocol(char *buf, size_t n)
{
    if (access("paper_protocol.json", R_OK) == 0) return "paper_protocol.json";
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        static const char *const rel[] = {"paper_protocol.json", "../paper_protocol.json",
                                          "../share/epar/paper_protocol.json"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            snprintf(buf, n, "%s/%s", exe, rel[i]);
            if (access(buf, R_OK) == 0) return buf;
        }
    }
    return "paper_protocol.json";
}

/* The experiment options given on the command line as "name=value;..." (table order): everything but the
 * options that choose what is run with which protocol and seeds (recorded apart) or how (threads, output, and
 * compare's kernel-timing lengths and tile: they change wall-clock columns only, which --jobs changes too, and
 * run.json records them). */
static void overrides(const struct opt *opts, char *buf, size_t n)
{
    static const char *const skip[] = {"protocol", "preset", "seed", "seeds", "out", "no-render", "quiet", "jobs",
                                       "speed-lengths", "speed-tile", NULL};
    size_t used = 0;
    buf[0] = '\0';
    for (const struct opt *p = opts; p->type != OPT_END; p++) {
        if (p->type == OPT_GROUP || !p->seen) continue;
        int skipped = 0;
        for (const char *const *k = skip; *k; k++) skipped |= !strcmp(*k, p->name);
        if (skipped) continue;
        char v[256] = "";
        switch (p->type) {
        case OPT_FLAG: snprintf(v, sizeof v, "1"); break;
        case OPT_INT: snprintf(v, sizeof v, "%d", *(const int *)p->dest); break;
        case OPT_DOUBLE: snprintf(v, sizeof v, "%.17g", *(const double *)p->dest); break;
        case OPT_STRING: snprintf(v, sizeof v, "%s", *(const char *const *)p->dest); break;
        case OPT_DLIST: {
            const struct opt_dlist *l = p->dest;
            for (int i = 0; i < l->n; i++)
                snprintf(v + strlen(v), sizeof v - strlen(v), "%s%.17g", i ? "," : "", l->v[i]);
            break;
        }
        default: break;
        }
        int w = snprintf(buf + used, n - used, "%s%s=%s", used ? ";" : "", p->name, v);
        if (w < 0 || (size_t)w >= n - used) break;
        used += (size_t)w;
    }
}

int cli_check_out(const char **out)
{
    if (!*out) *out = "output";
    if (!**out) return cli_usage_error("invalid value for --out: '' (expected a folder)");
    int st = epar_out_prepare(*out);
    return st ? cli_fail(st) : 0;
}

int cli_resolve(struct cli_common *c, const struct opt *opts, const char *experiment,
                struct epar_protocol *proto, struct epar_params *prm)
{
    int rc = cli_check_out(&c->out);   /* first: nothing is worth resolving for a folder that cannot be written */
    if (rc) return rc;
    char buf[4200];
    const char *path = c->protocol ? c->protocol : cli_default_protocol(buf, sizeof buf);
    int st = epar_protocol_load(path, proto);
    if (st) return cli_fail(st);
    st = epar_protocol_params(proto, experiment, c->preset, prm);
    /* the protocol's own values, before the command line changes them: a refused one is the file's error */
    if (!st && epar_params_validate(prm)) {
        char jp[128];
        snprintf(jp, sizeof jp, "$.experiments.%s (preset %s)", experiment, prm->preset);
        st = epar_protocol_blame(proto, jp);
    }
    if (st) {
        epar_protocol_free(proto);
        return cli_fail(st);
    }
    if (cli_seen(opts, "form") && (st = epar_posfx_form_parse(c->form, &prm->form))) goto fail;
#define OVER(field, name) if (cli_seen(opts, name)) prm->field = c->over.field
    OVER(alpha, "alpha"); OVER(beta, "beta"); OVER(gamma, "gamma"); OVER(temperature, "temperature");
    OVER(length, "length"); OVER(hidden, "hidden"); OVER(heads, "heads"); OVER(batch, "batch"); OVER(runs, "runs");
#undef OVER
    if (cli_seen(opts, "seed")) {
        if (c->seed < 0) {
            epar_err_set(EPAR_EINVAL, "invalid value for --seed: '%d' (seeds are integers >= 0)", c->seed);
            st = EPAR_EINVAL;
            goto fail;
        }
        prm->n_seeds = 1;
        prm->seeds[0] = (unsigned long)c->seed;
    }
    if (cli_seen(opts, "seeds")) {
        prm->n_seeds = c->seeds.n_seeds;
        memcpy(prm->seeds, c->seeds.seeds, sizeof prm->seeds);
    }
    if (cli_seen(opts, "jobs") && c->jobs < 1) {
        epar_err_set(EPAR_EINVAL, "invalid value for --jobs: '%d' (expected an integer >= 1)", c->jobs);
        st = EPAR_EINVAL;
        goto fail;
    }
    if ((st = epar_params_validate(prm))) goto fail;
    overrides(opts, prm->overrides, sizeof prm->overrides);
    cli_set_jobs(c);
    return 0;
fail:
    epar_protocol_free(proto);
    return cli_fail(st);
}

int cli_each_set(int argc, char **argv, int (*fn)(void *ctx, const char *assignment), void *ctx)
{
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--set") && i + 1 < argc) v = argv[++i];
        else if (!strncmp(argv[i], "--set=", 6)) v = argv[i] + 6;
        if (!v) continue;
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", v);
        char *save = NULL;
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            int st = fn(ctx, t);
            if (st) return st;
        }
    }
    return EPAR_OK;
}
