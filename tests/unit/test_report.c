/* report: unit tests of the report's generated words (experiments/report/report_summary.c): the bottom line of index.html
 * follows the verdicts (a sentence changes when a verdict changes), and the budget banner shows for a reduced
 * benchmark (the smoke budget, a subset of the grid) and not for a real one (lib/runrec's rule). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "experiments/report/report_int.h"
#include "lib/err.h"
#include "check.h"

#define MAXR 8
static struct epar_audit_row rows[MAXR];
static char ids[MAXR][32], secs[MAXR][32], rules[MAXR][32];

static void set_row(int i, const char *id, const char *sec, const char *rule, enum epar_audit_verdict v)
{
    snprintf(ids[i], sizeof ids[i], "%s", id);
    snprintf(secs[i], sizeof secs[i], "%s", sec);
    snprintf(rules[i], sizeof rules[i], "%s", rule);
    memset(&rows[i], 0, sizeof rows[i]);
    rows[i].id = ids[i];
    rows[i].section = secs[i];
    rows[i].rule = rules[i];
    rows[i].input = "";
    rows[i].verdict = v;
}

/* the bottom line's sentence with this id ("" when absent) */
static const char *line_of(const struct epar_report_summary *s, const char *id)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->line[i].id, id)) return s->line[i].text;
    return "";
}

static void write_text(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs(s, f);
    fclose(f);
}

int main(void)
{
    struct epar_audit a = {0};
    a.rows = rows;
    a.n = 5;
    set_row(0, "thm1_a", "thm1", "exact", EPAR_AUDIT_TRIVIAL);
    set_row(1, "thm1_b", "thm1", "exact", EPAR_AUDIT_TRIVIAL);
    set_row(2, "ret_a", "retention", "printed", EPAR_AUDIT_NOT_REPRODUCED);
    set_row(3, "proxy_a", "training", "beats_all", EPAR_AUDIT_NEEDS_SEEDS);
    set_row(4, "proxy_b", "training", "beats_all", EPAR_AUDIT_NOT_REPRODUCED);
    struct epar_report_summary *s = calloc(1, sizeof *s);
    if (!s) return 2;
    epar_report_bottom_line(s, &a);
    check_int(s->n, 4, "one sentence on the proxies, one per section");
    check_true(strstr(line_of(s, "bottom_thm1"), "holds by construction") != NULL, "all trivially true: by construction [%s]",
               line_of(s, "bottom_thm1"));
    check_true(strstr(line_of(s, "bottom_thm1"), "(#claims-thm1)") != NULL, "linked to its section's claims");
    check_true(strstr(line_of(s, "bottom_retention"), "does not hold") != NULL, "none holds: does not hold [%s]",
               line_of(s, "bottom_retention"));
    check_true(strstr(line_of(s, "bottom_retention"), "(#claim-ret_a)") != NULL, "the failing claim linked");
    check_true(strstr(line_of(s, "beats_all"), "in none of the 2 claims") != NULL, "EPAR beats no baseline [%s]",
               line_of(s, "beats_all"));
    check_true(strstr(line_of(s, "beats_all"), "1 need >= 2 seeds") != NULL, "the claims it cannot judge, counted");
    /* a verdict changes: the sentence changes */
    rows[2].verdict = EPAR_AUDIT_REPRODUCED;
    rows[4].verdict = EPAR_AUDIT_REPRODUCED;
    rows[1].verdict = EPAR_AUDIT_NOT_REPRODUCED;
    epar_report_summary_free(s);
    epar_report_bottom_line(s, &a);
    check_true(strstr(line_of(s, "bottom_retention"), "holds: its claim holds") != NULL, "reproduced: holds [%s]",
               line_of(s, "bottom_retention"));
    check_true(strstr(line_of(s, "bottom_thm1"), "holds in part: 1 of 2") != NULL, "one fails: in part [%s]",
               line_of(s, "bottom_thm1"));
    check_true(strstr(line_of(s, "beats_all"), "in 1 of the 2 claims") != NULL, "one beats_all reproduced [%s]",
               line_of(s, "beats_all"));
    epar_report_summary_free(s);
    a.n = 0;
    epar_report_bottom_line(s, &a);
    check_int(s->n, 0, "no claims: no bottom line");
    free(s);

    /* the banner: none without a benchmark, the smoke budget, a subset, a real budget */
    char tmpdir[] = "/tmp/epar-test-report.XXXXXX", dir[300], path[400], buf[1024];
    if (!mkdtemp(tmpdir)) return 2;
    a.n = 2;
    rows[1].input = "benchmark/run.json";
    check_int(epar_exp_report_banner(tmpdir, &a, buf, sizeof buf), 0, "no benchmark: no banner");
    check_true(buf[0] == '\0', "... and no text");
    snprintf(dir, sizeof dir, "%s/benchmark", tmpdir);
    snprintf(path, sizeof path, "%s/run.json", dir);
    mkdir(dir, 0755);
    write_text(path, "{\"experiment\":\"benchmark\",\"cli_overrides\":\"\",\"parameters\":{\"seeds\":[42]},"
                     "\"budget\":{\"name\":\"smoke\",\"layers\":1,\"dim\":32,\"steps\":30},\"cells\":4}");
    check_int(epar_exp_report_banner(tmpdir, &a, buf, sizeof buf), 1, "smoke budget: a banner");
    check_true(strstr(buf, "budget smoke (1 seed, 1 layer of width 32, 30 steps)") != NULL, "it names the budget [%s]", buf);
    check_true(strstr(buf, "the 1 claim measured on trained models") != NULL, "and counts the claims it concerns [%s]", buf);
    write_text(path, "{\"experiment\":\"benchmark\",\"cli_overrides\":\"tasks=lm\",\"parameters\":{\"seeds\":[42,43]},"
                     "\"budget\":{\"name\":\"quick\"},\"cells\":4}");
    check_int(epar_exp_report_banner(tmpdir, &a, buf, sizeof buf), 1, "a subset of the grid: a banner");
    check_true(strstr(buf, "command-line changes tasks=lm") != NULL, "it names the subset [%s]", buf);
    write_text(path, "{\"experiment\":\"benchmark\",\"cli_overrides\":\"\",\"parameters\":{\"seeds\":[42,43]},"
                     "\"budget\":{\"name\":\"quick\"},\"cells\":4}");
    check_int(epar_exp_report_banner(tmpdir, &a, buf, sizeof buf), 0, "the whole grid of a real budget: no banner");
    unlink(path);
    rmdir(dir);
    rmdir(tmpdir);
    epar_err_clear();
    return check_summary("test_report");
}
