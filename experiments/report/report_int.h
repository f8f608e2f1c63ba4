/* The reproduction report's own parts shared by its files (private to experiments/report/report*.c; the public interface
 * is report.h):
 *   report_data.c     what the report reads and how it shows numbers: the protocol's parts it reads, the retention
 *                     definitions, numbers as a reader sees them
 *   report_summary.c  what the report says of the verdicts: the tallies, the SUMMARY sentences, index.html's bottom
 *                     line, the banner
 *   report.c          writing REPORT.md / REPORT.html, the report's figures, SUMMARY.md and summary.json
 *   report_index.c    writing output/index.html
 * The markdown/HTML writer itself is lib/publish's (epar_pub_). Prefix epar_report_. */
#ifndef EPAR_EXP_REPORT_INT_H
#define EPAR_EXP_REPORT_INT_H

#include <jansson.h>
#include "lib/audit.h"
#include "lib/csvout.h"
#include "lib/protocol.h"
#include "lib/runrec.h"
#include "experiments/report/report.h"

/* ---- the protocol's parts the report reads, as rows ----
 * Its claims (id, reported value, measure.posfx.L), reference_defects (title, text, shown_by), the presets' (beta,
 * gamma) and every experiment section's length, read once by the rows below; strings borrow from the protocol. */
#define RP_MAX_CLAIMS 4096
#define RP_MAX_DEFECTS 64
#define RP_MAX_SHOWN 64
#define RP_MAX_MEMBERS 256

struct rp_posfx {
    int L;              /* 0: none */
};
struct rp_measure {
    struct rp_posfx posfx;
};
struct rp_claim {
    const char *id;
    json_t *reported;   /* a number, or a printed figure as a string */
    struct rp_measure measure;
};
struct rp_defect {
    const char *title, *text;
    int n_shown;
    const char *shown_by[RP_MAX_SHOWN];
};
struct rp_section {
    int length;         /* 0: none */
};
struct rp_preset {
    double beta, gamma; /* NaN: not given */
};
struct epar_report_proto {
    json_t *experiments, *presets;
    int n_claims, n_defects, n_sections, n_presets;
    struct rp_claim claims[RP_MAX_CLAIMS];
    struct rp_defect defects[RP_MAX_DEFECTS];
    struct rp_section sections[RP_MAX_MEMBERS];
    struct rp_preset preset[RP_MAX_MEMBERS];
    const char *section_name[RP_MAX_MEMBERS], *preset_name[RP_MAX_MEMBERS];
};

/* ---- SUMMARY.md and summary.json: the headline numbers, computed from the audit ----
 * Exactly the sentences README.md quotes: its opening (block "summary") and its benchmark section (block
 * "benchmark"), each between the markers <!-- <block>:begin --> and <!-- <block>:end -->. README quotes the copy of
 * a full run pinned in docs/ (`make summary-update`); tests/cli/test_summary.sh fails when README and the pin
 * disagree, or when a fresh `run-all --no-benchmark` disagrees with the pin on what needs no trained benchmark (the
 * lines marked static, and the counts under "static" in summary.json). */

#define SUM_MAX_LINES 64
struct epar_report_sum_line {
    const char *block;  /* "summary" or "benchmark" */
    char id[64];
    int is_static;      /* needs no trained benchmark: `run-all --no-benchmark` writes the same line */
    char *text;         /* markdown */
};
struct epar_report_summary {
    int n;
    struct epar_report_sum_line line[SUM_MAX_LINES];
};

/* the style of both HTML pages (report.c) */
extern const char epar_report_css[];

/* the paper-section title of a claim group (the "section" of each claim); unknown groups: their name */
const char *epar_report_group_title(const char *id);
/* the few plain words the bottom line and the verdict figure call a claim group by ("Theorem 1 and its lower
 * bound"); unknown groups: their name */
const char *epar_report_group_plain(const char *id);
/* *out (free it) or an error naming the JSON path of the malformed part */
int epar_report_proto_read(const struct epar_protocol *p, struct epar_report_proto **out);
/* (beta, gamma) pairs: those of the presets (the paper's text and the reference code) */
int epar_report_collect_params(const struct epar_report_proto *rp, double *beta, double *gamma, const char **name,
                               int max);
/* retention_definitions.csv: the retention of both forms under every definition, length and preset */
struct epar_table *epar_report_retention_table(const struct epar_report_proto *rp);
/* reported value of a claim by id (NaN if absent) */
double epar_report_claim_reported(const struct epar_report_proto *rp, const char *id);
/* The four retention figures against one (beta, gamma): the two gains determine beta, gamma
 * (epar_audit_implied_params); with those, the two retentions are computed and judged by the printed-figure rule,
 * as the claims are. Also the beta a basic retention of 2.8% would need, and the paper's own setting.
 * quantity,meaning,value,reported,matches_reported */
struct epar_table *epar_report_implied_table(const struct epar_report_proto *rp);
/* the measured column of a claim ("a; b; c" for several readings), each number rounded like the reported figure and
 * followed by its interval where the audit has one ("-45.7% [-142.0%, 50.1%]": the smallest improvement over the
 * baselines of a beats-all claim, between the smallest lower and upper ends) */
void epar_report_shown_measured(const struct epar_audit_row *r, char *out, size_t n);
/* the across-seed sd: two significant digits, "n/a (one seed)" when there is no spread, "" when not stochastic */
void epar_report_shown_sd(const struct epar_audit_row *r, char *out, size_t n);
/* which proxy tasks the audited benchmark's models learned (main_table.csv `learned`, of nm mechanisms, beyond
 * chance by z standard errors: both from its run.json), as a sentence; "" when the table or its column is absent */
void epar_report_learned_sentence(const char *out_root, int nm, double z, char *buf, size_t n);
/* the claim sections in first-appearance order: id of the i-th (NULL past the end) */
const char *epar_report_nth_section(const struct epar_audit *a, int k);
/* the verdict counts cnt as {"<verdict>": n, ...} */
json_t *epar_report_counts_json(const int *cnt);
/* the claims of section sec (NULL: all) that read the benchmark (bench 1) or not (0), or either (-1): counts */
int epar_report_count_rows(const struct epar_audit *a, const char *sec, int bench, int *cnt);
/* the sentences, from the audit and the files beside it */
void epar_report_summary_lines(struct epar_report_summary *s, const char *out_root, const struct epar_audit *a,
                               const struct epar_report_info *info, const struct epar_runrec_audit *ar,
                               const struct epar_runrec_bench *br, int have_bench, const struct epar_table *im);
/* index.html's bottom line (block "bottom"), computed from the verdicts only: first what the trained proxies say of
 * EPAR against the baselines (the claims of rule beats_all), then one sentence per claim section in plain words
 * (holds, holds by construction, holds where it can be judged, holds in part, does not hold, cannot be judged here)
 * with its counts and, where something fails, up to two examples. Markdown with lib/publish's inline marks, each
 * sentence linked to its section's claims (#claims-<section>) and each example to its claim (#claim-<id>). */
void epar_report_bottom_line(struct epar_report_summary *s, const struct epar_audit *a);
/* the banner (epar_exp_report_banner) as HTML: its words up to the first ':' bold, the rest escaped */
void epar_report_banner_html(FILE *f, const char *banner);
/* free the lines of s */
void epar_report_summary_free(struct epar_report_summary *s);

#endif
