/* test_tasks: the Bible stripper on real `bible` lines, the lm task on a small UTF-8 text (vocabulary,
 * windows, held-out part, errors), and the structure of recall sequences. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/err.h"
#include "lib/rng.h"
#include "lib/tasks.h"
#include "check.h"

static void test_strip(void)
{
    /* lines as `bible -f` prints them (bible-kjv 4.38) */
    const char *line[] = {"Ge1:1 In the beginning God created the heaven and the earth.",
                          "1Sm3:4 That the LORD called Samuel: and he answered, Here am I.",
                          "SSol1:1 The song of songs, which is Solomon's.", "Psa119:176 I have gone astray like a lost sheep;",
                          "Rev22:21 The grace of our Lord Jesus Christ be with you all. Amen."};
    const char *want[] = {"In the beginning", "That the LORD", "The song", "I have gone", "The grace"};
    for (int k = 0; k < 5; k++) {
        int off = epar_task_kjv_strip(line[k]);
        check_true(off > 0 && !strncmp(line[k] + off, want[k], strlen(want[k])), "strip '%.12s'", line[k]);
    }
    check_int(epar_task_kjv_strip("In the beginning"), -1, "a line without a reference is refused");
    check_int(epar_task_kjv_strip("Ge1: x"), -1, "a reference without a verse is refused");
    check_int(epar_task_kjv_strip(""), -1, "an empty line is refused");
}

static const char *write_text(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/epar-test-text-%ld.txt", (long)getpid());
    FILE *f = fopen(path, "wb");
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_lm(void)
{
    /* 100 characters with a two-byte one (é) */
    char text[256] = "";
    for (int i = 0; i < 9; i++) strcat(text, "abcdefghé ");
    const char *path = write_text(text);
    struct epar_task_cfg c;
    epar_task_cfg_default(&c, EPAR_TASK_LM);
    c.text_path = path;
    c.length = 8;
    c.holdout = 0.2;
    struct epar_task t;
    check_int(epar_task_open(&t, &c), EPAR_OK, "open a UTF-8 text");
    check_int(t.V, 10, "vocabulary = distinct characters (a-h, e acute, space)");
    check_int(t.n_text, 90, "characters, not bytes");
    check_int(t.n_train, 72, "the last 20 %% are held out");
    check_int((long)t.chars[t.V - 1], 0xe9, "the largest code point is e acute");
    check_int(epar_task_eval_count(&t), (18 - 1) / 8, "held-out windows of length + 1 characters");
    int tok[16], tgt[16];
    float mask[16];
    epar_task_eval_item(&t, 1, tok, tgt, mask);
    check_int(tok[0], t.ids[72 + 8], "window 1 starts length characters into the held-out part");
    check_int(tgt[7], t.ids[72 + 16], "targets are the next characters");
    gsl_rng *r = epar_rng_alloc(1, 0, EPAR_RNG_DATA);
    int ok = 1;
    for (int rep = 0; rep < 200; rep++) {
        epar_task_train_batch(&t, r, 2, tok, tgt, mask);
        for (int i = 0; i < 16; i++) ok &= mask[i] == 1.0f && tok[i] >= 0 && tok[i] < t.V;
        for (int b = 0; b < 2; b++)
            for (int i = 0; i + 1 < 8; i++) ok &= tgt[b * 8 + i] == tok[b * 8 + i + 1];
    }
    check_true(ok, "training windows: every position scored, targets shifted by one");
    epar_rng_free(r);
    double m = epar_task_metric(&t, log(2.0) * 1.5, 0, 10);
    check_rel(m, 1.5, 1e-12, "bits per character = loss / ln 2");
    epar_task_close(&t);
    /* errors */
    c.length = 40;
    check_int(epar_task_open(&t, &c), EPAR_EINVAL, "a text too short for the length is refused");
    check_true(strstr(epar_err_message(), "too short") != NULL, "message says too short");
    write_text("ab\xff\xfe cd");
    c.length = 2;
    check_int(epar_task_open(&t, &c), EPAR_EINVAL, "invalid UTF-8 is refused");
    check_true(strstr(epar_err_message(), "offset 2") != NULL, "message gives the byte offset");
    write_text("\xc0\xaf overlong");
    check_int(epar_task_open(&t, &c), EPAR_EINVAL, "an overlong encoding is refused");
    c.text_path = "/nonexistent/text.txt";
    check_int(epar_task_open(&t, &c), EPAR_EIO, "a missing file is an I/O error");
    unlink(path);
}

static void test_recall(void)
{
    struct epar_task_cfg c;
    epar_task_cfg_default(&c, EPAR_TASK_RECALL);
    c.length = 40;
    c.pairs = 6;
    c.queries = 5;
    c.keys = 10;
    c.values = 7;
    c.eval_sequences = 50;
    struct epar_task t;
    check_int(epar_task_open(&t, &c), EPAR_OK, "open recall");
    check_int(t.V, 18, "vocabulary: pad + keys + values");
    int T = 40, bad = 0, scored = 0;
    for (long k = 0; k < 50; k++) {
        int tok[40], tgt[40];
        float mask[40];
        epar_task_eval_item(&t, k, tok, tgt, mask);
        int seen[11] = {0};
        for (int i = 0; i < 6; i++) {   /* pairs: distinct keys, then values */
            int key = tok[2 * i], val = tok[2 * i + 1];
            if (key < 1 || key > 10 || seen[key]++) bad++;
            if (val < 11 || val > 17) bad++;
        }
        int q = 0, asked[11] = {0};
        for (int p = 12; p < T; p++) {
            if (mask[p] == 0) continue;
            q++;
            scored++;
            /* a scored position holds a key of the pairs; its target is that key's value, which follows it */
            int key = tok[p], val = -1;
            for (int i = 0; i < 6; i++)
                if (tok[2 * i] == key) val = tok[2 * i + 1];
            if (val < 0 || tgt[p] != val || p + 1 >= T || tok[p + 1] != val || asked[key]++) bad++;
        }
        if (q != 5) bad++;
        for (int p = 0; p + 1 < T; p++) if (tgt[p] != tok[p + 1]) bad++;
    }
    check_int(bad, 0, "recall: distinct keys, 5 distinct queries each followed by its value, targets shifted");
    check_int(scored, 250, "only the answers are scored");
    epar_task_close(&t);
    /* the same seed gives the same evaluation set */
    struct epar_task t2, t3;
    epar_task_open(&t2, &c);
    c.seed = 43;
    epar_task_open(&t3, &c);
    check_true(!memcmp(t2.eval_tok, t2.eval_tok, 50 * 40 * sizeof(int)) &&
                   memcmp(t2.eval_tok, t3.eval_tok, 50 * 40 * sizeof(int)),
               "the evaluation set depends on the seed only");
    epar_task_close(&t2);
    epar_task_close(&t3);
    c.pairs = 12;
    c.queries = 0;
    c.keys = 20;
    check_int(epar_task_validate(&c), EPAR_EINVAL, "12 pairs and 12 queries do not fit in 40");
    check_true(strstr(epar_err_message(), "needs length >= 48") != NULL, "message gives the length needed");
    c.pairs = 11;
    c.keys = 10;
    c.length = 48;
    check_int(epar_task_validate(&c), EPAR_EINVAL, "more pairs than keys is refused");
}

int main(void)
{
    test_strip();
    test_lm();
    test_recall();
    return check_summary("test_tasks");
}
