/* Long-context scale analysis (issue 8) -> output/scale/
 * The single-head analysis (scores, position effect, softmax, V, pos*, entropy, mean distance) of one
 * input at length L on the materialised or the streaming path of lib/stream, timed. */
#ifndef EPAR_EXP_SCALE_H
#define EPAR_EXP_SCALE_H

#include "lib/csvout.h"
#include "lib/outdir.h"
#include "lib/protocol.h"
#include "lib/stream.h"

struct epar_scale_cfg {
    struct epar_params prm;         /* length, hidden (= the head width d), form, alpha, beta, gamma, T, seeds[0] */
    enum epar_stream_path path;     /* requested; AUTO picks by materialized_max_length */
    int materialized_max_length;
    int repeats;                    /* timed repetitions; seconds = their median */
    int threads;
    /* called (if set) after the inputs are drawn (rep = 0) and after each timed repetition rep = 1..repeats with its
     * seconds, so a long run (minutes at L = 131072) reports where it is */
    void (*progress)(void *ctx, int rep, int repeats, double seconds);
    void *progress_ctx;
};

struct epar_scale_result {
    enum epar_stream_path path;     /* the path that ran */
    int threads, simd;
    double seconds, gflops, peak_rss_mb;
    double seconds_min, seconds_max, cpu_seconds;
    struct epar_stream_result r;
    struct epar_table *scale, *summary;
};

/* "epar-enhanced" | "epar-basic" | "none" -> form; EPAR_EINVAL otherwise. */
int epar_exp_scale_mechanism(const char *name, enum epar_form *form);
const char *epar_exp_scale_mechanism_name(enum epar_form form);

/* Refuses (EPAR_ENOMEM, exit 4) a path whose memory does not fit before drawing anything. */
int epar_exp_scale_run(const struct epar_scale_cfg *cfg, struct epar_scale_result *res);
int epar_exp_scale_write(const struct epar_scale_cfg *cfg, const struct epar_scale_result *res, struct epar_out *o,
                         const char *protocol_path);
void epar_exp_scale_free(struct epar_scale_result *res);

#endif
