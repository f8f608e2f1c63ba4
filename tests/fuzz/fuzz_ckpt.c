/* libFuzzer harness for the checkpoint reader (lib/ckpt.c) and the resume of a training run
 * (experiments/train/train.c), as `epar train --resume FILE` does: the input is a checkpoint file. A tiny recall run
 * (one layer, width 8) is configured once; each input is read by path, checked against that configuration and,
 * when it passes, restored into a freshly set-up run. When the input ends with the end mark, the harness first
 * rewrites the checksum before it, so mutations reach the sections instead of stopping at the checksum.
 * Contracts besides the sanitizers: a failed read returns EPAR_EIO naming the file and keeps no buffer;
 * resume returns 0, EPAR_EINVAL or EPAR_EIO; a message is set on every failure. The same file is also read as
 * epar inspect reads it (epar_exp_train_load, its configuration taken from the file): 0, EPAR_EIO or EPAR_ENOMEM.
 * PATH is cleared, so a checkpoint of task lm cannot start the Bible program.
 * EPAR_FUZZ_SEED=FILE: write the valid checkpoint of that run to FILE (tests/fuzz/ckpt/valid.bin) and exit. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "lib/ckpt.h"
#include "lib/err.h"
#include "experiments/train/train.h"

static int fd = -1;
static char path[64];
static struct epar_train_cfg cfg;

int LLVMFuzzerInitialize(int *argc, char ***argv);

/* a broken contract: say which, then stop the fuzzer (it saves the input) */
#define BROKEN(st) do { fprintf(stderr, "fuzz_ckpt: contract broken at line %d: status %d, message '%s'\n", __LINE__, \
                                (st), epar_err_message()); __builtin_trap(); } while (0)
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void tiny(struct epar_train_cfg *c)
{
    epar_exp_train_defaults(c);
    epar_task_cfg_default(&c->task, EPAR_TASK_RECALL);
    c->task.length = 32;
    c->layers = 1; c->dim = 8; c->heads = 1; c->mlp = 16; c->batch = 2;
    c->optim.steps = 4; c->optim.warmup = 1;
    c->eval_every = 2; c->eval_batches = 1;
    if (epar_exp_train_check(c)) abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tiny(&cfg);
    setenv("PATH", "/nonexistent", 1);
    const char *seed = getenv("EPAR_FUZZ_SEED");
    if (seed) {
        struct epar_train_run r;
        memset(&r, 0, sizeof r);
        if (epar_exp_train_setup(&r, &cfg)) abort();
        r.until = 2;
        if (epar_exp_train_loop(&r) || epar_exp_train_checkpoint(&r, seed)) abort();
        epar_exp_train_free(&r);
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20)) return 0;
    if (fd < 0) {
        fd = memfd_create("checkpoint.bin", 0);
        if (fd < 0) return 0;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    uint8_t *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    if (size >= 16 && !memcmp(buf + size - 8, "EPAREND", 8)) {
        uint64_t h = epar_ckpt_fnv1a(EPAR_CKPT_FNV_INIT, buf, size - 16);
        memcpy(buf + size - 16, &h, 8);
    }
    int okw = ftruncate(fd, 0) == 0 && pwrite(fd, buf, size, 0) == (ssize_t)size;
    free(buf);
    if (!okw) return 0;

    epar_err_clear();
    struct epar_ckpt ck;
    int st = epar_ckpt_read(path, &ck);
    if (st) {
        if (st != EPAR_EIO || !strstr(epar_err_message(), "fd/")) BROKEN(st);
        return 0;
    }
    size_t n;
    for (int i = 0; i < ck.n; i++)
        if (epar_ckpt_get(&ck, ck.sec[i].tag, &n) == NULL) BROKEN(i);
    st = epar_exp_train_resume_check(&cfg, &ck, path);
    if (!st) {
        struct epar_train_run r;
        memset(&r, 0, sizeof r);
        if (epar_exp_train_setup(&r, &cfg)) abort();
        st = epar_exp_train_resume(&r, &ck, path);
        epar_exp_train_free(&r);
    }
    if (st && st != EPAR_EINVAL && st != EPAR_EIO && st != EPAR_ENOMEM) BROKEN(st);
    /* epar inspect's reading: the configuration from the file itself; only EPAR_EIO (or ENOMEM), with a message */
    struct epar_train_run r;
    epar_err_clear();
    st = epar_exp_train_load(&r, &ck, path, "/nonexistent");
    epar_exp_train_free(&r);
    if (st && ((st != EPAR_EIO && st != EPAR_ENOMEM) || !strcmp(epar_err_message(), "unknown error"))) BROKEN(st);
    epar_ckpt_free(&ck);
    return 0;
}
