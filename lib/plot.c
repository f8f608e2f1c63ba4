#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "err.h"
#include "plot.h"

static int has_style(const char *dir)
{
    char p[PATH_MAX + 16];
    if (snprintf(p, sizeof p, "%s/epar.gp", dir) >= (int)sizeof p) return 0;
    return access(p, R_OK) == 0;
}

int epar_plot_style_dir(char *buf, size_t n)
{
    const char *env = getenv("EPAR_PLOTS_DIR");
    if (env && *env && has_style(env)) {
        snprintf(buf, n, "%s", env);
        return EPAR_OK;
    }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        static const char *const rel[] = {"plots", "../plots", "../share/epar/plots"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            char cand[PATH_MAX + 64];
            if (snprintf(cand, sizeof cand, "%s/%s", exe, rel[i]) >= (int)sizeof cand) continue;
            if (has_style(cand)) {
                snprintf(buf, n, "%s", cand);
                return EPAR_OK;
            }
        }
    }
    if (has_style("plots")) {
        snprintf(buf, n, "plots");
        return EPAR_OK;
    }
    epar_err_set(EPAR_EIO, "cannot find the gnuplot style 'plots/epar.gp'");
    epar_err_hint("set EPAR_PLOTS_DIR to the folder holding epar.gp");
    return EPAR_EIO;
}

/* relative path from folder `from` to folder `to` (both absolute, canonical), by path components */
static void relpath(const char *from, const char *to, char *out, size_t n)
{
    size_t i = 0, cut = 0; /* cut: end of the last whole component both share */
    for (;; i++) {
        char a = from[i], b = to[i];
        if ((a == '/' || a == '\0') && (b == '/' || b == '\0')) cut = i;
        if (a != b || a == '\0') break;
    }
    size_t used = 0;
    out[0] = '\0';
    for (const char *p = from + cut; *p; p++)
        if (*p == '/' && used + 4 < n) used += (size_t)snprintf(out + used, n - used, "../");
    const char *rest = to + cut;
    if (*rest == '/') rest++;
    snprintf(out + used, n - used, "%s", *rest ? rest : (used ? "" : "."));
    size_t l = strlen(out);
    if (l > 1 && out[l - 1] == '/') out[l - 1] = '\0';
}

static int style_ref(const struct epar_out *o, char *out, size_t n)
{
    char dir[PATH_MAX], sd[PATH_MAX], fd[PATH_MAX + 80];
    int st = epar_plot_style_dir(dir, sizeof dir);
    if (st) return st;
    if (!realpath(dir, sd)) return epar_err_set(EPAR_EIO, "cannot resolve '%s': %s", dir, strerror(errno));
    /* the final folder may not exist yet: resolve its root, which does */
    char root[PATH_MAX];
    if (!realpath(o->root, root)) return epar_err_set(EPAR_EIO, "cannot resolve '%s': %s", o->root, strerror(errno));
    snprintf(fd, sizeof fd, "%s/%s", root, o->section);
    char rel[2 * PATH_MAX];
    relpath(fd, sd, rel, sizeof rel);
    if (snprintf(out, n, "%s/epar.gp", rel) >= (int)n)
        return epar_err_set(EPAR_EIO, "path of the gnuplot style too long '%s'", rel);
    return EPAR_OK;
}

int epar_plot_script(struct epar_out *o, const char *name, const char *title, const char *body)
{
    char style[PATH_MAX + 16], file[300];
    int st = style_ref(o, style, sizeof style);
    if (st) return st;
    snprintf(file, sizeof file, "%s.gp", name);
    const char *path = epar_out_path(o, file);
    FILE *f = fopen(path, "w");
    if (!f) return epar_err_set(EPAR_EIO, "cannot write '%s': %s", path, strerror(errno));
    fprintf(f, "# %s\n# Written by epar. Run from this folder: gnuplot %s.gp  ->  %s.png\n", title, name, name);
    fprintf(f, "load '%s'\nset output '%s.png'\n", style, name);
    fputs(body, f);
    if (body[0] && body[strlen(body) - 1] != '\n') fputc('\n', f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return epar_err_set(EPAR_EIO, "cannot write '%s': %s", path, strerror(errno));
    return EPAR_OK;
}

int epar_plot_scriptf(struct epar_out *o, const char *name, const char *title, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *body = NULL;
    int n = vasprintf(&body, fmt, ap);
    va_end(ap);
    if (n < 0) return epar_err_set(EPAR_ENOMEM, "out of memory writing '%s.gp'", name);
    int st = epar_plot_script(o, name, title, body);
    free(body);
    return st;
}

int epar_plot_available(void)
{
    const char *path = getenv("PATH");
    if (!path) return 0;
    char buf[PATH_MAX];
    for (const char *p = path; *p;) {
        const char *e = strchr(p, ':');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len && len < sizeof buf - 10) {
            snprintf(buf, sizeof buf, "%.*s/gnuplot", (int)len, p);
            if (access(buf, X_OK) == 0) return 1;
        }
        p += len + (e ? 1 : 0);
    }
    return 0;
}

/* gnuplot children running now, so an interrupt can stop them (epar_plot_kill_all) */
#define MAX_CHILDREN 256
static pid_t children[MAX_CHILDREN];

void epar_plot_kill_all(void)
{
    for (int i = 0; i < MAX_CHILDREN; i++) {
        pid_t p = __atomic_load_n(&children[i], __ATOMIC_SEQ_CST);
        if (p > 0 && kill(p, SIGTERM) == 0) waitpid(p, NULL, 0);
    }
}

static void child_track(pid_t pid, int on)
{
    for (int i = 0; i < MAX_CHILDREN; i++) {
        pid_t expect = on ? 0 : pid;
        if (__atomic_compare_exchange_n(&children[i], &expect, on ? pid : 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            return;
    }
}

static pid_t spawn_gnuplot(const char *dir, const char *script)
{
    pid_t pid = fork();
    if (pid > 0) child_track(pid, 1);
    if (pid == 0) {
        /* the parent's interrupt handler must not run in the child: default actions, nothing blocked */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (chdir(dir) != 0) _exit(127);
        int dn = open("/dev/null", O_RDWR);
        if (dn >= 0) { dup2(dn, 0); dup2(dn, 1); dup2(dn, 2); }
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    return pid;
}

int epar_plot_render(struct epar_out *o, int jobs, int *rendered)
{
    if (rendered) *rendered = 0;
    if (!epar_plot_available()) return EPAR_OK;
    if (jobs < 1) jobs = 1;
    DIR *d = opendir(o->stage_dir);
    if (!d) return epar_err_set(EPAR_EIO, "cannot read '%s': %s", o->stage_dir, strerror(errno));
    char names[256][256];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 256) {
        size_t l = strlen(de->d_name);
        if (l > 3 && l < 256 && strcmp(de->d_name + l - 3, ".gp") == 0) snprintf(names[n++], 256, "%s", de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    pid_t pids[256];
    int st = EPAR_OK, next = 0, running = 0, done = 0;
    while (done < n) {
        while (running < jobs && next < n) {
            pids[next] = spawn_gnuplot(o->stage_dir, names[next]);
            if (pids[next] < 0) {
                st = epar_err_set(EPAR_EIO, "cannot start gnuplot: %s", strerror(errno));
                pids[next] = 0;
                done++;
            } else running++;
            next++;
        }
        int ws;
        pid_t p = wait(&ws);
        if (p < 0) break;
        child_track(p, 0);
        for (int i = 0; i < next; i++)
            if (pids[i] == p) {
                running--;
                done++;
                if ((!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) && st == EPAR_OK) {
                    st = epar_err_set(EPAR_EIO, "gnuplot failed on '%s'", names[i]);
                    epar_err_hint("run 'gnuplot %s' in the output folder to see the message", names[i]);
                } else if (rendered && WIFEXITED(ws) && WEXITSTATUS(ws) == 0) (*rendered)++;
            }
    }
    return st;
}
