/* libFuzzer harness for the --text loader (lib/tasks.c, task lm, as `epar train --task lm --text FILE` does): the
 * input is the text file. It is opened at length 8 (and, with the word shuffle, a second time); when it opens, a
 * training batch and the first and last evaluation items are drawn, every token id must be inside the vocabulary
 * and the chance level is computed. Contracts besides the sanitizers: a failed open returns EPAR_EIO or
 * EPAR_EINVAL (a text not UTF-8 or too short) and leaves nothing to free; task JSON describes what opened. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <gsl/gsl_rng.h>
#include "lib/err.h"
#include "lib/tasks.h"

#define BROKEN(st) do { fprintf(stderr, "fuzz_text: contract broken at line %d: status %d, message '%s'\n", __LINE__, \
                                (st), epar_err_message()); __builtin_trap(); } while (0)

static int fd = -1;
static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(int shuffle)
{
    struct epar_task_cfg c;
    epar_task_cfg_default(&c, EPAR_TASK_LM);
    c.text_path = path;
    c.cache_dir = "/nonexistent";
    c.length = 8;
    c.shuffle = shuffle;
    if (epar_task_validate(&c)) BROKEN(-1);
    struct epar_task t;
    memset(&t, 0, sizeof t);
    int st = epar_task_open(&t, &c);
    if (st) {
        if (st != EPAR_EIO && st != EPAR_EINVAL) BROKEN(st);
        return;
    }
    enum { B = 2, T = 8 };
    int tok[B * T], tgt[B * T];
    float mask[B * T];
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r) abort();
    epar_task_train_batch(&t, r, B, tok, tgt, mask);
    for (int i = 0; i < B * T; i++)
        if (tok[i] < 0 || tok[i] >= t.V || tgt[i] < 0 || tgt[i] >= t.V) BROKEN(i);
    long ne = epar_task_eval_count(&t);
    long *counts = calloc((size_t)t.V, sizeof *counts);
    if (!counts) abort();
    for (long k = 0; k < ne; k += ne > 1 ? ne - 1 : 1) {
        epar_task_eval_item(&t, k, tok, tgt, mask);
        for (int i = 0; i < T; i++) {
            if (tok[i] < 0 || tok[i] >= t.V || tgt[i] < 0 || tgt[i] >= t.V) BROKEN(i);
            if (mask[i] > 0) counts[tgt[i]]++;
        }
    }
    double v, se;
    epar_task_chance(&t, counts, t.V, &v, &se);
    json_t *j = epar_task_json(&t);
    if (!j) BROKEN(0);
    json_decref(j);
    free(counts);
    gsl_rng_free(r);
    epar_task_close(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536) return 0;
    if (fd < 0) {
        fd = memfd_create("text.txt", 0);
        if (fd < 0) return 0;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) return 0;
    epar_err_clear();
    one(0);
    one(1);
    return 0;
}
