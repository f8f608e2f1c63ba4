/* audit, writing: the audit as tables (claims.csv, verdicts.csv; see audit.h). */
#include <assert.h>
#include <stdio.h>
#include <string.h>
#include "audit.h"


struct epar_table *epar_audit_table(const struct epar_audit *a)
{
    struct epar_table *t = epar_csv_new("claim_id,section,source,statement,reported,measured,measured_sd,measured_lo,"
                                        "measured_hi,n_seeds,rule,accepted,verdict,measurement,input,"
                                        "run_protocol_hash,run_seeds,run_epar_version,note,seeds_needed");
    if (!t) return NULL;
    for (size_t i = 0; i < a->n; i++) {
        const struct epar_audit_row *r = &a->rows[i];
        if (epar_csv_append(t, "sssssssssssssssssssd", r->id, r->section, r->source, r->statement, r->reported,
                            r->measured, r->measured_sd, r->measured_lo, r->measured_hi, r->n_seeds, r->rule,
                            r->accepted, epar_audit_verdict_name(r->verdict), r->measurement, r->input, r->run_hash,
                            r->run_seeds, r->run_version, r->note, r->seeds_needed)) {
            epar_csv_free(t);
            return NULL;
        }
    }
    return t;
}

struct epar_table *epar_audit_section_counts(const struct epar_audit *a)
{
    char cols[512] = "section";
    for (int v = 0; v < EPAR_AUDIT_VERDICT_COUNT; v++)
        snprintf(cols + strlen(cols), sizeof cols - strlen(cols), ",%s",
                 epar_audit_verdict_key((enum epar_audit_verdict)v));
    struct epar_table *t = epar_csv_new(cols);
    for (size_t i = 0; t && i < a->n; i++) {
        const char *sec = a->rows[i].section;
        int seen = 0, cnt[EPAR_AUDIT_VERDICT_COUNT] = {0};
        for (size_t j = 0; j < i && !seen; j++) seen = !strcmp(a->rows[j].section, sec);
        if (seen) continue;
        for (size_t j = i; j < a->n; j++)
            if (!strcmp(a->rows[j].section, sec)) cnt[a->rows[j].verdict]++;
        static_assert(EPAR_AUDIT_VERDICT_COUNT == 9, "one count per verdict");
        if (epar_csv_append(t, "siiiiiiiii", sec, cnt[0], cnt[1], cnt[2], cnt[3], cnt[4], cnt[5], cnt[6], cnt[7], cnt[8])) {
            epar_csv_free(t);
            t = NULL;
        }
    }
    return t;
}
