/* The reproduction report (run-all's audit) -> output/report/ and output/index.html. Prefix epar_exp_report_.
 *
 * Files: claims.csv (the audit table), retention_definitions.csv (which definition of "retention" gives the
 * paper's figures, computed from the position effect), REPORT.md (protocol, verdicts, findings per section
 * with figures linked, the reference's known defects), and output/index.html (every PNG under the output
 * folder grouped by paper section, plus the verdict table; static, no external assets). */
#ifndef EPAR_EXP_REPORT_H
#define EPAR_EXP_REPORT_H

#include <jansson.h>
#include "lib/audit.h"
#include "lib/outdir.h"
#include "lib/protocol.h"

/* An output folder and the paper section it belongs to (from the command table). */
struct epar_report_folder {
    const char *dir;        /* "position" */
    const char *label;      /* "paper §4: epar position-effect" */
};

struct epar_report_info {
    const char *protocol_path;
    const struct epar_protocol *protocol;  /* the loaded protocol (lengths, presets, claims, reference_defects) */
    const char *preset;
    const char *version;
    const struct epar_report_folder *folders;
    int n_folders;
    const char *const *ran;     /* names of the experiments that ran successfully (NULL-terminated) */
    const char *const *failed;  /* and of those that failed (NULL-terminated) */
    int figures;                /* the report's own figures will be rendered (link them in REPORT.md) */
};

/* claims.csv, retention_definitions.csv and REPORT.md into o's staging folder (section "report"). */
int epar_exp_report_write(struct epar_out *o, const char *out_root, const struct epar_audit *a,
                          const struct epar_report_info *info);
/* The budget banner: when the benchmark audited in out_root is a reduced run (the smoke budget or a subset of the
 * grid, epar_runrec_bench_reduced), one plain-text sentence into buf saying so, how many claims read it, and how to
 * get the real one; returns 1. 0 (buf "") when the benchmark is the whole grid of a real budget or absent. */
int epar_exp_report_banner(const char *out_root, const struct epar_audit *a, char *buf, size_t n);
/* <out_root>/index.html, written atomically (temp file + rename). */
int epar_exp_report_index(const char *out_root, const struct epar_audit *a, const struct epar_report_info *info);

#endif
