/* The manual page epar(1) and the bash/zsh completion, generated from the command table (cmd/commands.c) and from each
 * command's own --help (its option table), so neither can drift from the binary. `make install` installs both;
 * `epar --man` and `epar --completion bash|zsh` print them; `epar --mechanism-docs` prints the documentation of the
 * mechanisms that are one file each (lib/mechs/), docs/MECHANISMS.md §32. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "lib/err.h"
#include "lib/mech.h"
#include "lib/nnpos.h"
#include "lib/posfx.h"
#include "lib/protocol.h"
#include "lib/tasks.h"
#include "experiments/analysis/scale.h"
#include "cli.h"

/* the text a command prints for --help (stdout redirected into a temporary file while it runs) */
static char *capture_help(const struct cmd_entry *c)
{
    fflush(stdout);
    FILE *tmp = tmpfile();
    if (!tmp) return NULL;
    int saved = dup(STDOUT_FILENO);
    if (saved < 0 || dup2(fileno(tmp), STDOUT_FILENO) < 0) {
        if (saved >= 0) close(saved);
        fclose(tmp);
        return NULL;
    }
    char *argv[] = {(char *)c->name, "--help", NULL};
    cli_current_command = c;
    c->fn(2, argv);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    long n = ftell(tmp);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    rewind(tmp);
    if (text) text[fread(text, 1, (size_t)n, tmp)] = '\0';
    fclose(tmp);
    return text;
}

/* One line of a --help text: an option ("  -L, --length N   text") split into its left part and its text, or a
 * group title ("Model parameters:"). Returns 1 option, 2 group, 0 other. */
static int help_line(const char *line, char *left, size_t nl, char *text, size_t nt)
{
    size_t len = strlen(line);
    if (len > 1 && line[0] != ' ' && line[len - 1] == ':') {
        snprintf(left, nl, "%.*s", (int)(len - 1), line);
        return 2;
    }
    if (strncmp(line, "  ", 2)) return 0;
    const char *p = line;
    while (*p == ' ') p++;
    if (*p != '-') return 0;
    const char *gap = strstr(p, "  ");
    if (!gap) return 0;
    snprintf(left, nl, "%.*s", (int)(gap - p), p);
    while (*gap == ' ') gap++;
    snprintf(text, nt, "%s", gap);
    return 1;
}

/* roff text: backslashes doubled, a leading dot or quote protected, hyphens of option names as \- */
static void roff(FILE *f, const char *s, int hyphens)
{
    if (*s == '.' || *s == '\'') fputs("\\&", f);
    for (; *s; s++) {
        if (*s == '\\') fputs("\\e", f);
        else if (*s == '-' && hyphens) fputs("\\-", f);
        else fputc(*s, f);
    }
}

/* "-L, --length N" -> \fB\-L\fR, \fB\-\-length\fR \fIN\fR */
static void roff_option(FILE *f, const char *left)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", left);
    int first = 1;
    char *save = NULL;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        if (!first) fputc(' ', f);
        first = 0;
        size_t l = strlen(tok);
        int comma = l && tok[l - 1] == ',';
        if (comma) tok[l - 1] = '\0';
        fputs(tok[0] == '-' ? "\\fB" : "\\fI", f);
        roff(f, tok, 1);
        fputs("\\fR", f);
        if (comma) fputc(',', f);
    }
}

/* ---- the manual page ---- */

/* A command's --help as groups of options: a group title ("Common options") and its options (left part, text). */
#define MAN_MAX_GROUPS 12
#define MAN_MAX_OPTS 48
struct man_opt {
    char left[256], text[1024];
};
struct man_group {
    char title[256];
    int n;
    struct man_opt o[MAN_MAX_OPTS];
};
struct man_help {
    int n;
    struct man_group g[MAN_MAX_GROUPS];
};

static void parse_help(const struct cmd_entry *c, struct man_help *h)
{
    memset(h, 0, sizeof *h);
    char *help = capture_help(c), *save = NULL;
    struct man_group *g = NULL;
    for (char *line = help ? strtok_r(help, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
        char left[256], text[1024];
        int k = help_line(line, left, sizeof left, text, sizeof text);
        if (k == 2 && h->n < MAN_MAX_GROUPS && strcmp(left, "Examples")) {
            g = &h->g[h->n++];
            snprintf(g->title, sizeof g->title, "%s", left);
        } else if (k == 2) {
            g = NULL;   /* Examples: the EXAMPLES section has them */
        } else if (k == 1 && g && g->n < MAN_MAX_OPTS && strcmp(left, "-h, --help")) {
            char *here = strstr(text, "; here: "); /* the path this binary resolves now: not for the manual */
            if (here) strcpy(here, ")");
            snprintf(g->o[g->n].left, sizeof g->o[g->n].left, "%s", left);
            snprintf(g->o[g->n].text, sizeof g->o[g->n].text, "%s", text);
            g->n++;
        }
    }
    free(help);
}

static void man_option(FILE *f, const struct man_opt *o)
{
    fputs(".TP\n", f);
    roff_option(f, o->left);
    fputc('\n', f);
    roff(f, o->text, 0);
    fputc('\n', f);
}

/* the first command (in table order) whose --help has a group of this title, and that group; a group found in more
 * than one command is "shared": the manual gives it once, under OPTIONS SHARED BY THE COMMANDS */
static const struct man_group *shared_group(const struct man_help *all, int ncmd, const char *title, int *count)
{
    const struct man_group *first = NULL;
    *count = 0;
    for (int c = 0; c < ncmd; c++)
        for (int k = 0; k < all[c].n; k++)
            if (!strcmp(all[c].g[k].title, title)) {
                if (!first) first = &all[c].g[k];
                ++*count;
            }
    return first;
}

static const struct man_opt *find_opt(const struct man_group *g, const char *left)
{
    for (int k = 0; k < g->n; k++)
        if (!strcmp(g->o[k].left, left)) return &g->o[k];
    return NULL;
}

/* the long name of an option ("--out" of "-o, --out DIR") */
static void man_long_name(FILE *f, const char *left)
{
    const char *l = strstr(left, "--");
    if (!l) l = left;
    char name[96];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(l, " "), l);
    fputs("\\fB", f);
    roff(f, name, 1);
    fputs("\\fR", f);
}

/* a command's group: the whole group, or for a shared one the options it takes as the shared text has them (by
 * name), then in full those it takes with another text or that the shared group lacks */
static void man_command_group(FILE *f, const struct man_group *g, const struct man_group *shared, int nshared)
{
    fputs(".TP\n.I ", f);
    roff(f, g->title, 0);
    fputc('\n', f);
    if (nshared < 2) {
        fputs("\n", f);
        for (int k = 0; k < g->n; k++) man_option(f, &g->o[k]);
        return;
    }
    int same = 0;
    for (int k = 0; k < g->n; k++) {
        const struct man_opt *s = find_opt(shared, g->o[k].left);
        same += s && !strcmp(s->text, g->o[k].text);
    }
    if (same == shared->n && same == g->n) fputs("all of them, as under \\fBOPTIONS SHARED BY THE COMMANDS\\fR\n", f);
    else if (same) {
        fputs(same == shared->n ? "all of them, as under \\fBOPTIONS SHARED BY THE COMMANDS\\fR" : "", f);
        if (same < shared->n) {
            int first = 1;
            for (int k = 0; k < g->n; k++) {
                const struct man_opt *s = find_opt(shared, g->o[k].left);
                if (!s || strcmp(s->text, g->o[k].text)) continue;
                fputs(first ? "" : ", ", f);
                first = 0;
                man_long_name(f, g->o[k].left);
            }
            fputs(" as under \\fBOPTIONS SHARED BY THE COMMANDS\\fR", f);
        }
        fputs(same < g->n ? ", and:\n" : "\n", f);
    } else fputs("\n", f);
    for (int k = 0; k < g->n; k++) {
        const struct man_opt *s = find_opt(shared, g->o[k].left);
        if (!s || strcmp(s->text, g->o[k].text)) man_option(f, &g->o[k]);
    }
}

int cli_man(FILE *f)
{
    int ncmd = 0;
    for (const struct cmd_entry *c = epar_commands; c->name; c++) ncmd++;
    struct man_help *all = calloc((size_t)ncmd, sizeof *all);
    if (!all) return cli_fail(epar_err_set(EPAR_ENOMEM, "out of memory for the manual page"));
    for (int i = 0; i < ncmd; i++) parse_help(&epar_commands[i], &all[i]);
    fprintf(f, ".\\\" epar(1), generated by 'epar --man' from the command table and each command's --help\n"
               ".TH EPAR 1 \"\" \"epar %s\" \"User Commands\"\n"
               ".SH NAME\nepar \\- reproduce and audit the analyses of the EPAR paper, and compare position mechanisms\n"
               ".SH SYNOPSIS\n.B epar\n.I command\n.RI [ options ]\n.br\n.B epar help\n.RI [ command ]\n.br\n"
               ".B epar \\-\\-version\n.br\n.B epar \\-\\-man\n.br\n.B epar \\-\\-completion\n.BR bash | zsh\n"
               ".SH DESCRIPTION\n"
               "epar reproduces every analysis of the paper \"EPAR: Explicit Position-Attention Relationship for "
               "Interpretable Long-Range Attention in Transformers\", audits its reported numbers against rules fixed "
               "in the protocol file, and measures EPAR beside other position and attention mechanisms. Every command "
               "writes its section folder under the output root (default \\fIoutput/\\fR) as a whole: a run replaces "
               "the folder, a failed or interrupted run leaves the old one untouched.\n"
               ".SH COMMANDS\n", EPAR_VERSION);
    for (int i = 0; i < ncmd; i++) {
        const struct cmd_entry *c = &epar_commands[i];
        fprintf(f, ".SS %s\n", c->name);
        roff(f, c->summary, 0);
        fprintf(f, " (%s; writes \\fIoutput/", c->section);
        roff(f, cli_command_folder(c), 0);
        fputc('/', f);
        fputs("\\fR).\n", f);
        for (int k = 0; k < all[i].n; k++) {
            int count;
            const struct man_group *sh = shared_group(all, ncmd, all[i].g[k].title, &count);
            man_command_group(f, &all[i].g[k], sh, count);
        }
    }
    fputs(".SS help\nThe list of commands, or with a command name its options (as \\fBepar\\fR \\fIcommand\\fR "
          "\\fB\\-\\-help\\fR).\n", f);
    /* the groups found in several commands, once each (as the first command in the table has them) */
    fputs(".SH OPTIONS SHARED BY THE COMMANDS\nEvery command takes \\fB\\-h\\fR, \\fB\\-\\-help\\fR. "
          "Command-line values override the protocol's.\n", f);
    for (int i = 0; i < ncmd; i++)
        for (int k = 0; k < all[i].n; k++) {
            int count;
            const struct man_group *sh = shared_group(all, ncmd, all[i].g[k].title, &count);
            if (count < 2 || sh != &all[i].g[k]) continue;
            fputs(".SS ", f);
            roff(f, sh->title, 0);
            fputs("\n", f);
            for (int q = 0; q < sh->n; q++) man_option(f, &sh->o[q]);
        }
    fputs(".SH EXIT STATUS\n.TP\n0\nok\n.TP\n1\nran, but a check failed (e.g. \\fBrun-all \\-\\-check\\fR found a "
          "regression)\n.TP\n2\nusage error: unknown command or option, invalid value\n.TP\n3\ninput/output or "
          "protocol-file error\n.TP\n4\nresource limit: the requested size does not fit in memory\n.TP\n130, 143, 129\n"
          "interrupted by SIGINT, SIGTERM, SIGHUP (one line says so; no partial output is left)\n", f);
    /* every variable epar reads (grep getenv), and OMP_NUM_THREADS, which libgomp reads for it */
    fputs(".SH ENVIRONMENT\n"
          ".TP\n.B OPENBLAS_CORETYPE\nthe OpenBLAS kernel (e.g. Haswell, Zen, SkylakeX; \\fBepar \\-\\-version\\fR "
          "names the one in use). Decisions and verdicts are the same under every kernel; CSVs can differ in the 12th "
          "digit. Unset on a CPU with AVX-512 whose kernel OpenBLAS chose without it, \\fBepar scale\\fR re-executes "
          "itself once with SkylakeX.\n"
          ".TP\n.B OMP_NUM_THREADS\nthreads when \\fB\\-\\-jobs\\fR is not given (default: all cores); results do not "
          "depend on it.\n"
          ".TP\n.BR OMP_WAIT_POLICY \", \" GOMP_SPINCOUNT\nhow idle OpenMP threads wait. When neither is set, epar "
          "re-executes itself once at start with \\fBOMP_WAIT_POLICY=passive\\fR (libgomp reads it before main), so "
          "threads sleep instead of spinning.\n"
          ".TP\n.B OPENBLAS_NUM_THREADS\nthe size of OpenBLAS's thread pool. epar calls BLAS from one thread at a "
          "time, so when the pool would have two threads or more, epar re-executes itself once at start with "
          "\\fBOPENBLAS_NUM_THREADS=1\\fR: an idle OpenBLAS worker spins for its first 0.1 s.\n"
          ".TP\n.B TMPDIR\nwhere temporary folders go (\\fBrun-all \\-\\-check\\fR; default \\fI/tmp\\fR).\n"
          ".TP\n.B PATH\nwhere \\fBgnuplot\\fR (figures) and \\fBbible\\fR (the text of \\fBtrain \\-\\-task lm\\fR, "
          "package bible-kjv) are found.\n"
          ".TP\n.B LD_PRELOAD\nread only to notice valgrind (then no re-execution for OMP_WAIT_POLICY or "
          "OPENBLAS_NUM_THREADS).\n"
          ".TP\n.B EPAR_BLAS_REEXEC\nset by \\fBepar scale\\fR for the copy of itself it re-executes; not for users.\n"
          ".SH FILES\n.TP\n.I paper_protocol.json\nthe protocol (presets, experiment sizes, seeds, claims under audit): "
          "\\fI./paper_protocol.json\\fR if present, else the copy installed with epar (\\fIPREFIX/share/epar/\\fR)\n"
          ".TP\n.I output/index.html\nthe report a reviewer reads: verdicts, claims by paper section beside their "
          "figures\n.TP\n.I output/report/REPORT.html\nthe full report (also as REPORT.md) and \\fIclaims.csv\\fR, the "
          "audit in full precision\n"
          ".SH EXAMPLES\n", f);
    for (int i = 0; i < ncmd; i++)
        for (const char *const *e = epar_commands[i].examples; e && e[0] && e[1]; e += 2) {
            fputs(".TP\n.B ", f);
            roff(f, e[0], 1);
            fputc('\n', f);
            roff(f, e[1], 0);
            fputc('\n', f);
        }
    fputs(".SH SEE ALSO\n.BR gnuplot (1)\n", f);
    free(all);
    return ferror(f) ? 3 : 0;
}

/* ---- completion ---- */

/* One option of a command's --help: its names ("-m", "--mechanisms") and its argument ("LIST", "FILE"; "" for a
 * flag). */
struct comp_opt {
    char shortn[8], longn[64], arg[32];
};

/* the options of a command, from its --help; their count (at most max) */
static int command_options(const struct cmd_entry *c, struct comp_opt *o, int max)
{
    int n = 0;
    char *help = capture_help(c), *save = NULL;
    for (char *line = help ? strtok_r(help, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
        char left[256], text[1024], *tsave = NULL;
        if (help_line(line, left, sizeof left, text, sizeof text) != 1 || n >= max) continue;
        struct comp_opt *p = &o[n];
        memset(p, 0, sizeof *p);
        for (char *tok = strtok_r(left, " ", &tsave); tok; tok = strtok_r(NULL, " ", &tsave)) {
            size_t l = strlen(tok);
            if (l && tok[l - 1] == ',') tok[--l] = '\0';
            if (!strncmp(tok, "--", 2)) snprintf(p->longn, sizeof p->longn, "%s", tok);
            else if (tok[0] == '-') snprintf(p->shortn, sizeof p->shortn, "%s", tok);
            else snprintf(p->arg, sizeof p->arg, "%s", tok);
        }
        if (p->longn[0]) n++;
    }
    free(help);
    return n;
}

/* 1 when the command's usage line names arguments before its options ("usage: epar inspect CHECKPOINT... [...]") */
static int takes_args(const struct cmd_entry *c)
{
    char *help = capture_help(c);
    char head[128];
    snprintf(head, sizeof head, "usage: epar %s ", c->name);
    int yes = help && !strncmp(help, head, strlen(head)) && help[strlen(head)] >= 'A' && help[strlen(head)] <= 'Z';
    free(help);
    return yes;
}

/* The value lists of the completion, from the tables they are checked against: tasks (lib/tasks), mechanisms (every
 * one for compare, scale's own three, the trainable ones elsewhere), forms, and from the protocol file that epar
 * reads by default: its presets, the benchmark's budgets and tasks. */
struct comp_values {
    char tasks[512], mech_all[2048], mech_train[2048], mech_scale[128], forms[128];
    char presets[256], budgets[256], bench_tasks[512];
};

static void add_word(char *buf, size_t n, const char *w)
{
    snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? " " : "", w);
}

static int comp_values(struct comp_values *v)
{
    memset(v, 0, sizeof *v);
    for (int k = 0; k < EPAR_TASK_COUNT; k++) add_word(v->tasks, sizeof v->tasks, epar_task_table[k].id);
    for (int k = 0; k < EPAR_MECH_COUNT; k++) {
        add_word(v->mech_all, sizeof v->mech_all, epar_mech_row(k)->id);
        if (epar_nnpos_trainable((enum epar_mech_id)k)) add_word(v->mech_train, sizeof v->mech_train, epar_mech_row(k)->id);
    }
    for (int k = 0; k < EPAR_FORM_COUNT; k++) {
        add_word(v->forms, sizeof v->forms, epar_posfx_form_name((enum epar_form)k));
        const char *m = epar_exp_scale_mechanism_name((enum epar_form)k);
        if (m && strcmp(m, "?")) add_word(v->mech_scale, sizeof v->mech_scale, m);
    }
    char buf[4096];
    struct epar_protocol proto;
    int st = epar_protocol_load(cli_default_protocol(buf, sizeof buf), &proto);
    if (st) {
        epar_err_hint("the completion offers the protocol's presets, budgets and benchmark tasks: run 'epar --completion' "
                      "where paper_protocol.json is, or from an installed epar (make install)");
        return cli_fail(st);
    }
    const char *names[32];
    int np = epar_protocol_presets(&proto, names, 32);
    for (int k = 0; k < np && k < 32; k++) add_word(v->presets, sizeof v->presets, names[k]);
    json_t *bench = epar_protocol_section(&proto, "benchmark"), *t;
    const char *key;
    json_t *val;
    json_object_foreach(json_object_get(bench, "budgets"), key, val) {
        if (key[0] != '_') add_word(v->budgets, sizeof v->budgets, key);
    }
    size_t i;
    json_array_foreach(json_object_get(bench, "tasks"), i, t) {
        const char *id = json_string_value(json_object_get(t, "id"));
        if (id) add_word(v->bench_tasks, sizeof v->bench_tasks, id);
    }
    epar_protocol_free(&proto);
    return 0;
}

/* what the argument of option o of command c completes to: a word list (*list: a comma-separated list of them), or
 * "" for files (*files = 1), or NULL for nothing (a number, a free string) */
static const char *option_values(const struct cmd_entry *c, const struct comp_opt *o, const struct comp_values *v,
                                 int *files, int *list)
{
    const char *l = o->longn + 2;
    *files = !strcmp(o->arg, "FILE") || !strncmp(o->arg, "DIR", 3);
    *list = !strcmp(o->arg, "LIST");
    if (*files) return "";
    if (!strcmp(l, "form")) return v->forms;
    if (!strcmp(l, "preset")) return v->presets;
    if (!strcmp(l, "budget") || !strcmp(l, "benchmark-budget")) return v->budgets;
    if (!strcmp(l, "task")) return v->tasks;
    if (!strcmp(l, "tasks")) return v->bench_tasks;
    if (!strcmp(l, "mechanism") || !strcmp(l, "mechanisms"))
        return !strcmp(c->name, "compare") ? v->mech_all : !strcmp(c->name, "scale") ? v->mech_scale : v->mech_train;
    return NULL;
}

/* "-m|--mechanisms" */
static void option_pattern(FILE *f, const struct comp_opt *o)
{
    if (o->shortn[0]) fprintf(f, "%s|", o->shortn);
    fputs(o->longn, f);
}

#define COMP_MAX_OPTS 96

static void completion_bash(FILE *f, const char *cmds, const struct comp_values *v)
{
    fprintf(f, "# bash completion for epar %s, generated by 'epar --completion bash' from its command table, the\n"
               "# tables of tasks and mechanisms and the protocol's presets and budgets. Registered for 'epar' and\n"
               "# './epar' (bash looks up any other path to the binary by its last part, 'epar').\n"
               "_epar() {\n"
               "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} opts= vals= files=0 list=0 args=0\n"
               "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
               "        COMPREPLY=($(compgen -W \"%shelp --help --version --man --completion --mechanism-docs\" -- \"$cur\")); return\n"
               "    fi\n"
               "    case \"${COMP_WORDS[1]}\" in\n"
               "        --completion) [ \"$COMP_CWORD\" -eq 2 ] && COMPREPLY=($(compgen -W \"bash zsh\" -- \"$cur\")); "
               "return ;;\n"
               "        help) [ \"$COMP_CWORD\" -eq 2 ] && COMPREPLY=($(compgen -W \"%shelp\" -- \"$cur\")); return ;;\n",
            EPAR_VERSION, cmds, cmds);
    for (const struct cmd_entry *c = epar_commands; c->name; c++) {
        struct comp_opt o[COMP_MAX_OPTS];
        int n = command_options(c, o, COMP_MAX_OPTS), any_value = 0;
        fprintf(f, "        %s)\n            opts=\"", c->name);
        for (int k = 0; k < n; k++) fprintf(f, "%s%s", k ? " " : "", o[k].longn);
        fputs("\"\n", f);
        /* a command that takes arguments besides its options (inspect CHECKPOINT...): files */
        if (takes_args(c)) fputs("            args=1\n", f);
        fputs("            case \"$prev\" in\n", f);
        for (int k = 0; k < n; k++) {
            int files, list;
            const char *vals = option_values(c, &o[k], v, &files, &list);
            if (!o[k].arg[0]) continue;
            if (!files && !vals) {
                any_value = 1;
                continue;
            }
            fputs("                ", f);
            option_pattern(f, &o[k]);
            if (files) fputs(") files=1 ;;\n", f);
            else fprintf(f, ") vals=\"%s\"; list=%d ;;\n", vals, list);
        }
        if (any_value) {   /* options whose value is a number or a free string: nothing to offer */
            fputs("                ", f);
            int first = 1;
            for (int k = 0; k < n; k++) {
                int files, list;
                if (!o[k].arg[0] || option_values(c, &o[k], v, &files, &list)) continue;
                if (!first) fputc('|', f);
                first = 0;
                option_pattern(f, &o[k]);
            }
            fputs(") return ;;\n", f);
        }
        fputs("            esac ;;\n", f);
    }
    fputs("        *) return ;;\n"
          "    esac\n"
          "    if [ \"$files\" = 1 ]; then compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); return; fi\n"
          "    if [ -n \"$vals\" ]; then\n"
          "        local pre=\n"
          "        if [ \"$list\" = 1 ] && [[ $cur == *,* ]]; then pre=${cur%,*},; fi\n"
          "        COMPREPLY=($(compgen -P \"$pre\" -W \"$vals\" -- \"${cur##*,}\")); return\n"
          "    fi\n"
          "    if [ \"$args\" = 1 ] && [[ $cur != -* ]]; then\n"
          "        compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); return\n"
          "    fi\n"
          "    COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
          "}\n"
          "complete -F _epar epar ./epar\n", f);
}

static void zsh_quoted(FILE *f, const char *s)
{
    for (const char *p = s; *p; p++) fputs(*p == '\'' ? "'\\''" : *p == ':' ? "\\:" : (char[]){*p, 0}, f);
}

static void completion_zsh(FILE *f, const char *cmds, const struct comp_values *v)
{
    fprintf(f, "#compdef epar ./epar\n# zsh completion for epar %s, generated by 'epar --completion zsh' from its command "
               "table\n"
               "_epar() {\n"
               "    if (( CURRENT == 2 )); then\n"
               "        local -a cmds\n        cmds=(\n",
            EPAR_VERSION);
    for (const struct cmd_entry *c = epar_commands; c->name; c++) {
        fprintf(f, "            '%s:", c->name);
        zsh_quoted(f, c->summary);
        fputs("'\n", f);
    }
    fprintf(f, "            'help:the list of commands, or the options of one'\n        )\n"
               "        _describe 'epar command' cmds; return\n    fi\n"
               "    case $words[2] in\n"
               "        help) (( CURRENT == 3 )) && compadd %shelp; return ;;\n", cmds);
    for (const struct cmd_entry *c = epar_commands; c->name; c++) {
        struct comp_opt o[COMP_MAX_OPTS];
        int n = command_options(c, o, COMP_MAX_OPTS);
        fprintf(f, "        %s)\n            case $words[CURRENT-1] in\n", c->name);
        for (int k = 0; k < n; k++) {
            int files, list;
            const char *vals = option_values(c, &o[k], v, &files, &list);
            if (!o[k].arg[0]) continue;
            fputs("                ", f);
            option_pattern(f, &o[k]);
            if (files) fputs(") _files; return ;;\n", f);
            else if (vals && list) fprintf(f, ") _values -s , values %s; return ;;\n", vals);
            else if (vals) fprintf(f, ") compadd -- %s; return ;;\n", vals);
            else fputs(") return ;;\n", f);
        }
        fputs("            esac\n", f);
        if (takes_args(c)) fputs("            [[ $PREFIX != -* ]] && { _files; return }\n", f);
        fputs("            compadd --", f);
        for (int k = 0; k < n; k++) fprintf(f, " %s", o[k].longn);
        fputs(" ;;\n", f);
    }
    fputs("    esac\n}\n_epar \"$@\"\n", f);
}

int cli_completion(FILE *f, const char *shell)
{
    char cmds[1024] = "";
    for (const struct cmd_entry *c = epar_commands; c->name; c++)
        snprintf(cmds + strlen(cmds), sizeof cmds - strlen(cmds), "%s ", c->name);
    struct comp_values v;
    int rc = comp_values(&v);
    if (rc) return rc;
    if (!strcmp(shell, "bash")) completion_bash(f, cmds, &v);
    else completion_zsh(f, cmds, &v);
    return ferror(f) ? 3 : 0;
}

/* the file mechanisms' documentation sections, in registry order (docs/MECHANISMS.md §32 holds this output; the
 * docs test compares the two) */
int cli_mechanism_docs(FILE *f)
{
    for (int k = 0; k < EPAR_MECH_COUNT; k++) {
        const struct epar_mech_def *d = epar_mech_file((enum epar_mech_id)k);
        if (d && d->doc) fprintf(f, "%s\n", d->doc);   /* NULL: documented in its own section */
    }
    return ferror(f) ? 3 : 0;
}
