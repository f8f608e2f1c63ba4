/* test_tasks: the Bible stripper on real `bible` lines, the lm task on a small UTF-8 text (vocabulary,
 * windows, held-out part, errors), and the structure of the synthetic tasks' sequences. */
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
    /* the decoded text is shared by the tasks reading the same bytes, and read again when they change */
    struct epar_task t2;
    c.length = 4;
    check_int(epar_task_open(&t2, &c), EPAR_OK, "open the same text again (another length)");
    check_true(t2.ids == t.ids && t2.n_text == 90 && t2.n_train == 72, "the same text: one decoded copy, shared");
    c.shuffle = 1;
    epar_task_close(&t2);
    check_int(epar_task_open(&t2, &c), EPAR_OK, "open the text with its words shuffled");
    check_true(t2.ids != t.ids, "shuffled: its own copy");
    epar_task_close(&t2);
    c.shuffle = 0;
    epar_task_close(&t);
    for (char *q = text; *q; q++)   /* the same size, other bytes */
        if (*q == 'a') *q = 'b';
    write_text(text);
    check_int(epar_task_open(&t2, &c), EPAR_OK, "open the edited text");
    check_int(t2.V, 9, "an edited file is decoded again (no a any more)");
    epar_task_close(&t2);
    c.length = 8;
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

/* recall and needle: a fact (key k, value v) is token 1 + k V + v, the question on k is 1 + K V + k, the answer v is
 * 1 + K V + K + v */
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
    int K = 10, V = 7, F = K * V;
    check_int(t.V, 1 + F + K + V, "vocabulary: pad + one token per fact + questions + answers");
    int T = 40, bad = 0, scored = 0;
    for (long k = 0; k < 50; k++) {
        int tok[40], tgt[40];
        float mask[40];
        epar_task_eval_item(&t, k, tok, tgt, mask);
        int seen[10] = {0}, val_of[10];
        for (int i = 0; i < 6; i++) {   /* the facts: distinct keys */
            int f = tok[i] - 1;
            if (f < 0 || f >= F || seen[f / V]++) { bad++; continue; }
            val_of[f / V] = f % V;
        }
        int q = 0, asked[10] = {0};
        for (int p = 6; p < T; p++) {
            if (mask[p] == 0) continue;
            q++;
            scored++;
            /* a scored position holds a question on a key of the facts; its target is that fact's answer, which
             * follows it */
            int key = tok[p] - 1 - F;
            if (key < 0 || key >= K || !seen[key] || asked[key]++) { bad++; continue; }
            int ans = 1 + F + K + val_of[key];
            if (tgt[p] != ans || p + 1 >= T || tok[p + 1] != ans) bad++;
        }
        if (q != 5) bad++;
        for (int p = 0; p + 1 < T; p++) if (tgt[p] != tok[p + 1]) bad++;
    }
    check_int(bad, 0, "recall: distinct keys, 5 questions on distinct facts each followed by its answer, targets shifted");
    check_int(scored, 250, "only the answers are scored");
    epar_task_close(&t);
    /* the same seed gives the same evaluation set */
    struct epar_task t2, t3, t4;
    epar_task_open(&t2, &c);
    epar_task_open(&t4, &c);
    c.seed = 43;
    epar_task_open(&t3, &c);
    check_true(!memcmp(t2.eval_tok, t4.eval_tok, 50 * 40 * sizeof(int)) &&
                   memcmp(t2.eval_tok, t3.eval_tok, 50 * 40 * sizeof(int)),
               "the evaluation set depends on the seed only");
    epar_task_close(&t2);
    epar_task_close(&t3);
    epar_task_close(&t4);
    c.pairs = 14;
    c.queries = 14;
    c.keys = 20;
    check_int(epar_task_validate(&c), EPAR_EINVAL, "14 facts and 14 questions do not fit in 40");
    check_true(strstr(epar_err_message(), "needs length >= 42") != NULL, "message gives the length needed");
    c.pairs = 11;
    c.queries = 0;
    c.keys = 10;
    c.length = 48;
    check_int(epar_task_validate(&c), EPAR_EINVAL, "more pairs than keys is refused");
    c.pairs = 4;
    c.queries = 5;
    check_int(epar_task_validate(&c), EPAR_EINVAL, "more questions than facts is refused (questions ask distinct facts)");
    c.queries = 0;
    c.keys = 300;
    c.values = 300;
    check_int(epar_task_validate(&c), EPAR_EINVAL, "a fact vocabulary over 65536 tokens is refused");
}

static int open_task(struct epar_task *t, enum epar_task_id id, int T, int keys, int values, int pairs, int E, double noise)
{
    struct epar_task_cfg c;
    epar_task_cfg_default(&c, id);
    c.length = T;
    c.keys = keys;
    c.values = values;
    c.pairs = pairs;
    c.eval_sequences = E;
    c.noise = noise;
    c.seed = 7;
    return epar_task_open(t, &c);
}

/* every scored position's target, and that a training batch has the same structure as the evaluation set */
static int needle_bad(const int *tok, const int *tgt, const float *mask, int T, int N, int K, int V, int d)
{
    int F = K * V, bad = 0, p = T - 2 * N - d - N + 1;   /* the block of facts starts at p */
    for (int q = 0; q < T; q++) {
        int in_block = q >= p && q < p + N, in_tail = q >= T - 2 * N;
        if (!in_block && !in_tail && tok[q] != 0) bad++;   /* pads elsewhere */
        if (in_block && (tok[q] < 1 || tok[q] > F)) bad++;
        if ((mask[q] != 0) != (in_tail && (q - (T - 2 * N)) % 2 == 0)) bad++;   /* the questions are scored */
    }
    for (int i = 0; i < N; i++) {
        int at = T - 2 * N + 2 * i, key = tok[at] - 1 - F, found = -1;
        for (int j = 0; j < N; j++)
            if (tok[p + j] >= 1 && (tok[p + j] - 1) / V == key) found = (tok[p + j] - 1) % V;
        if (key < 0 || key >= K || found < 0 || tgt[at] != 1 + F + K + found || tok[at + 1] != tgt[at]) bad++;
    }
    return bad;
}

static void test_needle(void)
{
    struct epar_task t;
    int T = 50, E = 96, N = 3, K = 9, V = 13;
    check_int(open_task(&t, EPAR_TASK_NEEDLE, T, K, V, N, E, 0), EPAR_OK, "open needle");
    check_int(t.V, 1 + K * V + K + V, "needle vocabulary: pad + facts + questions + answers");
    int bad = 0, dmin = 1 << 30, dmax = 0, prev = 0, mono = 1;
    for (long k = 0; k < E; k++) {
        int tok[50], tgt[50];
        float mask[50];
        epar_task_eval_item(&t, k, tok, tgt, mask);
        int d = epar_task_eval_group(&t, k);
        bad += needle_bad(tok, tgt, mask, T, N, K, V, d);
        if (d < dmin) dmin = d;
        if (d > dmax) dmax = d;
        if (d < prev) mono = 0;
        prev = d;
    }
    check_int(bad, 0, "needle: a block of 3 facts at distance d before their questions, pads elsewhere, answers scored");
    check_int(dmin, 1, "needle: shortest evaluated distance 1 (the last fact right before the first question)");
    check_int(dmax, epar_task_max_group(&t.cfg), "needle: the longest evaluated distance puts the block at the start");
    check_int(epar_task_max_group(&t.cfg), T - 3 * N + 1, "needle: largest distance T - 3 pairs + 1");
    check_true(mono, "needle: evaluation items are ordered by distance");
    int tok[4 * 50], tgt[4 * 50];
    float mask[4 * 50];
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    int tb = 0;
    for (int rep = 0; rep < 50; rep++) {
        epar_task_train_batch(&t, r, 4, tok, tgt, mask);
        for (int b = 0; b < 4; b++) {
            int *x = tok + b * T, p = -1;
            for (int q = 0; q < T && p < 0; q++) if (x[q] != 0) p = q;
            tb += p < 0 || needle_bad(x, tgt + b * T, mask + b * T, T, N, K, V, T - 3 * N + 1 - p);
        }
    }
    check_int(tb, 0, "needle: training draws have the same structure");
    gsl_rng_free(r);
    epar_task_close(&t);
    /* the depth of the fact (issue 33's retrieval grid): the same task at 4 times its length puts the first fact of
     * item k at epar_task_needle_position(d), so positions 0 .. T - 3N cover the whole sequence, start to end */
    check_int(open_task(&t, EPAR_TASK_NEEDLE, 4 * T, K, V, N, E, 0), EPAR_OK, "open needle at 4T");
    int misplaced = 0, pmin = 1 << 30, pmax = -1;
    for (long k = 0; k < E; k++) {
        int x[200], y[200];
        float m[200];
        epar_task_eval_item(&t, k, x, y, m);
        int d = epar_task_eval_group(&t, k), p = epar_task_needle_position(&t.cfg, d), first = -1;
        for (int q = 0; q < 4 * T && first < 0; q++) if (x[q] != 0) first = q;
        misplaced += first != p || p < 0 || p > 4 * T - 3 * N;
        if (p < pmin) pmin = p;
        if (p > pmax) pmax = p;
    }
    check_int(misplaced, 0, "needle at 4T: the first fact of every item sits at T' - 3 pairs + 1 - d");
    int D = epar_task_max_group(&t.cfg);
    check_int(pmin, D - (1 + (E - 1) * D / E), "needle at 4T: the deepest item's fact is within D / E of the start");
    check_int(pmax, 4 * T - 3 * N, "needle at 4T: the shallowest is right before the questions (depth 1)");
    epar_task_close(&t);
    struct epar_task_cfg c;
    epar_task_cfg_default(&c, EPAR_TASK_NEEDLE);
    c.length = 8; c.pairs = 3; c.keys = 4; c.values = 4;
    check_int(epar_task_validate(&c), EPAR_EINVAL, "needle: 3 facts and their questions do not fit in 8");
    c.length = 9;
    check_int(epar_task_validate(&c), EPAR_OK, "needle: 3 facts fit in 9 (distance 1 only)");
}

static void test_transduce(void)
{
    struct epar_task t;
    int T = 21, E = 20;
    check_int(open_task(&t, EPAR_TASK_TRANSDUCE, T, 0, 5, 0, E, 0), EPAR_OK, "open transduce");
    int bad = 0, scored = 0;
    for (long k = 0; k < E; k++) {
        int tok[21], tgt[21];
        float mask[21];
        epar_task_eval_item(&t, k, tok, tgt, mask);
        int n = 10;
        if (tok[n] != 1) bad++;
        for (int i = 0; i < n; i++) if (tok[i] < 2 || tok[i] > 6 || tok[n + 1 + i] != tok[n - 1 - i]) bad++;
        for (int q = 0; q < T; q++) {
            if (mask[q] != 0) {
                scored++;
                if (q < n || q >= 2 * n || tgt[q] != tok[q + 1]) bad++;
            }
        }
    }
    check_int(bad, 0, "transduce: source, separator, the source reversed; the reversal is scored");
    check_int(scored, 10 * E, "transduce: n scored tokens per sequence");
    epar_task_close(&t);
}

static void test_classify(void)
{
    struct epar_task t;
    int T = 30, E = 200, K = 3;
    check_int(open_task(&t, EPAR_TASK_CLASSIFY, T, 0, K, 0, E, 0), EPAR_OK, "open classify");
    int bad = 0, label_count[3] = {0};
    for (long k = 0; k < E; k++) {
        int tok[30], tgt[30], cnt[3] = {0};
        float mask[30];
        epar_task_eval_item(&t, k, tok, tgt, mask);
        for (int q = 0; q < T - 1; q++) cnt[tok[q] - 2]++;
        int lab = tgt[T - 1] - 2;
        if (tok[T - 1] != 1 || lab < 0 || lab >= K) { bad++; continue; }
        for (int c = 0; c < K; c++) if (c != lab && cnt[c] >= cnt[lab]) bad++;
        for (int q = 0; q < T; q++) if ((mask[q] != 0) != (q == T - 1)) bad++;
        label_count[lab]++;
    }
    check_int(bad, 0, "classify: the label is the unique majority symbol, scored at CLS only");
    check_true(label_count[0] > 40 && label_count[1] > 40 && label_count[2] > 40, "classify: every class occurs (%d %d %d)",
               label_count[0], label_count[1], label_count[2]);
    epar_task_close(&t);
}

static void test_select(void)
{
    struct epar_task t;
    int T = 60, E = 30, S = 6, k = 5;
    check_int(open_task(&t, EPAR_TASK_SELECT, T, 0, S, k, E, 0), EPAR_OK, "open select");
    check_int(t.V, 3 + S, "select vocabulary: pad, separator, noise, data symbols");
    int bad = 0;
    for (long e = 0; e < E; e++) {
        int tok[60], tgt[60];
        float mask[60];
        epar_task_eval_item(&t, e, tok, tgt, mask);
        int n = T - 1 - k, m = 0, want[5];
        for (int q = 0; q < n; q++) {
            if (tok[q] >= 3) { if (m < k) want[m] = tok[q]; m++; }
            else if (tok[q] != 2) bad++;
        }
        if (m != k || tok[n] != 1) { bad++; continue; }
        for (int i = 0; i < k; i++) if (tgt[n + i] != want[i] || mask[n + i] == 0 || tok[n + 1 + i] != want[i]) bad++;
        int sc = 0;
        for (int q = 0; q < T; q++) sc += mask[q] != 0;
        if (sc != k) bad++;
    }
    check_int(bad, 0, "select: k data symbols among noise tokens, copied in order after the separator");
    epar_task_close(&t);
}

static void test_set(void)
{
    struct epar_task t;
    int T = 40, E = 100, A = 4, M = 6;
    check_int(open_task(&t, EPAR_TASK_SET, T, A, M, 0, E, 0), EPAR_OK, "open set");
    check_int(t.V, 1 + A + M + 1 + 1, "set vocabulary: pad, items, counts 0..values, the start token");
    int bad = 0, zero = 0;
    for (long e = 0; e < E; e++) {
        int tok[40], tgt[40];
        float mask[40];
        epar_task_eval_item(&t, e, tok, tgt, mask);
        int qi = tok[T - 1], cnt = 0;
        if (tok[0] != A + M + 2) bad++;   /* the start token */
        for (int q = 0; q < T - 1; q++) cnt += tok[q] == qi;
        if (qi < 1 || qi > A || tgt[T - 1] != 1 + A + cnt) bad++;
        zero += cnt == 0;
        /* reversing the content gives the same answer: the task is order-free by construction */
        int rc = 0;
        for (int q = T - 2; q >= 0; q--) rc += tok[q] == qi;
        if (rc != cnt) bad++;
    }
    check_int(bad, 0, "set: the answer is the count of the queried item");
    check_true(zero > 0 && zero < E, "set: counts include 0 (%d of %d)", zero, E);
    epar_task_close(&t);
    struct epar_task_cfg c;
    epar_task_cfg_default(&c, EPAR_TASK_SET);
    c.length = 21; c.keys = 4; c.values = 5;
    check_int(epar_task_validate(&c), EPAR_EINVAL, "set: 4 items x 5 do not fit in the 19 places between start and query");
}

/* noise: unscored inputs replaced at about the given rate, scored ones and targets untouched */
static void test_noise(void)
{
    struct epar_task a, b;
    int T = 64, E = 200;
    check_int(open_task(&a, EPAR_TASK_TRANSDUCE, T, 0, 8, 0, E, 0), EPAR_OK, "open clean");
    check_int(open_task(&b, EPAR_TASK_TRANSDUCE, T, 0, 8, 0, E, 0.2), EPAR_OK, "open noisy");
    long changed = 0, unscored = 0, bad = 0;
    /* the noisy set draws more numbers, so compare structure: scored tokens and targets are the clean rule */
    for (long e = 0; e < E; e++) {
        int tok[64], tgt[64];
        float mask[64];
        epar_task_eval_item(&b, e, tok, tgt, mask);
        int n = (T - 1) / 2;
        for (int i = 0; i < n; i++) {
            unscored++;
            if (tok[i] != tok[2 * n - i]) changed++;   /* the source differs from its (clean, scored) reversal */
        }
        for (int q = n; q < 2 * n; q++)   /* the last reversed token (2n) is an unscored input: it may be noised */
            if (mask[q] == 0 || (q + 1 < 2 * n && tgt[q] != tok[q + 1])) bad++;
    }
    check_int(bad, 0, "noise: the scored tokens and targets stay clean");
    double rate = (double)changed / unscored;   /* a replaced token equals the old one with prob 1/V */
    check_true(rate > 0.2 * (1 - 1.0 / b.V) - 0.03 && rate < 0.2 * (1 - 1.0 / b.V) + 0.03,
               "noise: about 20 %% of the unscored inputs replaced (%.3f)", rate);
    epar_task_close(&a);
    epar_task_close(&b);
    struct epar_task_cfg c;
    epar_task_cfg_default(&c, EPAR_TASK_LM);
    c.noise = 0.2;
    check_int(epar_task_validate(&c), EPAR_EINVAL, "noise on lm is refused");
    epar_task_cfg_default(&c, EPAR_TASK_RECALL);
    c.shuffle = 1;
    check_int(epar_task_validate(&c), EPAR_EINVAL, "shuffle on recall is refused");
}

/* shuffle: every line keeps its words (as a multiset) and the text its length, the word order changes */
static void test_shuffle(void)
{
    char text[4096] = "";
    for (int i = 0; i < 40; i++) strcat(text, "in the beginning god created the heaven and the earth\nand the earth was\n");
    const char *path = write_text(text);
    struct epar_task_cfg c;
    epar_task_cfg_default(&c, EPAR_TASK_LM);
    c.text_path = path;
    c.length = 16;
    struct epar_task a, b;
    check_int(epar_task_open(&a, &c), EPAR_OK, "open the text");
    c.shuffle = 1;
    check_int(epar_task_open(&b, &c), EPAR_OK, "open the text word-shuffled");
    check_int((int)b.n_text, (int)a.n_text, "shuffled text: same length");
    long same = 1, moved = 0;
    int cnt_a[128] = {0}, cnt_b[128] = {0};
    for (long i = 0; i < a.n_text; i++) {
        uint32_t x = a.chars[a.ids[i]], y = b.chars[b.ids[i]];
        if ((x == '\n') != (y == '\n')) same = 0;
        if (x < 128) cnt_a[x]++;
        if (y < 128) cnt_b[y]++;
        moved += x != y;
    }
    check_true(same && !memcmp(cnt_a, cnt_b, sizeof cnt_a), "shuffled text: same lines, same characters");
    check_true(moved > a.n_text / 4, "shuffled text: the word order changed (%ld characters moved)", moved);
    struct epar_task b2;
    c.seed = 99;
    epar_task_open(&b2, &c);
    check_true(!memcmp(b.ids, b2.ids, (size_t)b.n_text * sizeof *b.ids), "shuffled text: the same for every seed");
    epar_task_close(&a);
    epar_task_close(&b);
    epar_task_close(&b2);
    unlink(path);
}

/* the best constant answer: worked numbers */
static void test_chance(void)
{
    struct epar_task t;
    memset(&t, 0, sizeof t);
    double v, se;
    t.cfg.id = EPAR_TASK_RECALL;   /* accuracy: the most frequent answer's share, binomial se */
    long acc[4] = {0, 6, 2, 0};
    epar_task_chance(&t, acc, 4, &v, &se);
    check_abs(v, 0.75, 1e-15, "accuracy chance = 6/8");
    check_abs(se, sqrt(0.75 * 0.25 / 8), 1e-15, "its se = sqrt(p (1-p) / n)");
    long tie[3] = {3, 3, 2};
    epar_task_chance(&t, tie, 3, &v, &se);
    check_abs(v, 3.0 / 8, 1e-15, "a tie: one constant answer, right on 3 of 8");
    t.cfg.id = EPAR_TASK_LM;       /* bits: the entropy of the counts, se of -log2 q over the tokens */
    long two[2] = {4, 4};
    epar_task_chance(&t, two, 2, &v, &se);
    check_abs(v, 1.0, 1e-15, "two equal characters: 1 bit");
    check_abs(se, 0.0, 1e-15, "every token costs 1 bit: se 0");
    long skew[3] = {3, 1, 0};
    epar_task_chance(&t, skew, 3, &v, &se);
    double h = 0.75 * log2(4.0 / 3) + 0.25 * 2, var = 0.75 * pow(log2(4.0 / 3) - h, 2) + 0.25 * pow(2 - h, 2);
    check_abs(v, h, 1e-15, "3:1 -> H = %.6f bits", h);
    check_abs(se, sqrt(var / 4), 1e-15, "its se over 4 tokens");
    long none[2] = {0, 0};
    epar_task_chance(&t, none, 2, &v, &se);
    check_true(isnan(v) && isnan(se), "no scored token: NaN");
}

/* train_sequences (F11, low resource): every training batch is made of the pool's N sequences, the same pool for the
 * same seed whatever the data stream, another for another seed; with 0 the draws are fresh (more than N distinct);
 * the evaluation set does not change; out of range refused */
static int distinct_rows(const int *tok, int B, int T, int *first)
{
    int n = 0;
    for (int b = 0; b < B; b++) {
        int seen = 0;
        for (int q = 0; q < b && !seen; q++) seen = !memcmp(tok + (size_t)b * T, tok + (size_t)q * T, T * sizeof *tok);
        if (!seen) first[n++] = b;
    }
    return n;
}

static void test_train_pool(void)
{
    enum epar_task_id ids[] = {EPAR_TASK_RECALL, EPAR_TASK_TRANSDUCE};
    for (int k = 0; k < 2; k++) {
        struct epar_task_cfg c;
        epar_task_cfg_default(&c, ids[k]);
        c.length = 40;
        c.pairs = 6;
        c.keys = 10;
        c.values = 7;
        c.eval_sequences = 20;
        struct epar_task t0, t1, t2, t3;
        check_int(epar_task_open(&t0, &c), EPAR_OK, "open %s", epar_task_name(ids[k]));
        c.train_sequences = 3;
        check_int(epar_task_open(&t1, &c), EPAR_OK, "open %s with 3 training sequences", epar_task_name(ids[k]));
        check_int(epar_task_open(&t2, &c), EPAR_OK, "open it again");
        c.seed = 43;
        check_int(epar_task_open(&t3, &c), EPAR_OK, "open it at another seed");
        int B = 60, T = 40, first[60];
        int *a = calloc((size_t)B * T, sizeof *a), *b = calloc((size_t)B * T, sizeof *b), *g = calloc((size_t)B * T, sizeof *g);
        float *m = calloc((size_t)B * T, sizeof *m);
        gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937), *r2 = gsl_rng_alloc(gsl_rng_mt19937);
        gsl_rng_set(r, 5);
        gsl_rng_set(r2, 6);
        epar_task_train_batch(&t0, r, B, a, g, m);
        check_true(distinct_rows(a, B, T, first) > 3, "%s: fresh draws without a pool", epar_task_name(ids[k]));
        epar_task_train_batch(&t1, r, B, a, g, m);
        int n1 = distinct_rows(a, B, T, first);
        check_int(n1, 3, "%s: 60 draws from a pool of 3 give its 3 sequences", epar_task_name(ids[k]));
        epar_task_train_batch(&t2, r2, B, b, g, m);   /* another data stream, the same pool */
        int same = 1;
        for (int i = 0; i < B; i++) {
            int in = 0;
            for (int q = 0; q < n1 && !in; q++) in = !memcmp(b + (size_t)i * T, a + (size_t)first[q] * T, T * sizeof *b);
            same &= in;
        }
        check_true(same, "%s: the pool depends on the seed only", epar_task_name(ids[k]));
        epar_task_train_batch(&t3, r2, B, b, g, m);
        int other = 0;
        for (int i = 0; i < B; i++)
            for (int q = 0; q < n1; q++) other += !memcmp(b + (size_t)i * T, a + (size_t)first[q] * T, T * sizeof *b);
        check_int(other, 0, "%s: another seed, another pool", epar_task_name(ids[k]));
        int e0[40], e1[40], ge[40];
        float me[40];
        epar_task_eval_item(&t0, 7, e0, ge, me);
        epar_task_eval_item(&t1, 7, e1, ge, me);
        check_true(!memcmp(e0, e1, sizeof e0), "%s: the evaluation set does not depend on the pool", epar_task_name(ids[k]));
        free(a); free(b); free(g); free(m);
        gsl_rng_free(r);
        gsl_rng_free(r2);
        epar_task_close(&t0);
        epar_task_close(&t1);
        epar_task_close(&t2);
        epar_task_close(&t3);
    }
    struct epar_task_cfg c;
    epar_task_cfg_default(&c, EPAR_TASK_RECALL);
    c.train_sequences = -1;
    struct epar_task t;
    check_int(epar_task_open(&t, &c), EPAR_EINVAL, "train_sequences -1 refused");
}

/* the option value of row f in c, as a double (INT, BOOL, DOUBLE) */
static double option_value(const struct epar_field *f, const struct epar_task_cfg *c)
{
    const char *at = (const char *)c + f->offset;
    return f->type == EPAR_FIELD_DOUBLE ? *(const double *)at : (double)*(const int *)at;
}

/* is task `name` named in help as a reader ("recall, needle: ...", "...; set: items")? */
static int names_task(const char *help, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(help, name); p; p = strstr(p + 1, name))
        if ((p == help || p[-1] == ' ') && (p[n] == ':' || (p[n] == ',' && p[n + 1] == ' '))) return 1;
    return 0;
}

/* the table of the task options (lib/tasks.h): the one place of every option's key, default and help */
static void test_options(void)
{
    int rows = 0;
    for (const struct epar_task_option *o = epar_task_options; o->f.key; o++) {
        const struct epar_field *f = &o->f;
        rows++;
        check_true(f->help && *f->help && o->tasks && !(o->tasks & ~EPAR_TASK_ALL) && o->use, "%s: help, tasks, use", f->key);
        check_true(f->offset + sizeof(int) <= sizeof(struct epar_task_cfg) && f->offset >= offsetof(struct epar_task_cfg, text_path),
                   "%s: a place among the options of struct epar_task_cfg", f->key);
        for (const struct epar_task_option *q = epar_task_options; q < o; q++)
            check_true(strcmp(q->f.key, f->key) && q->f.offset != f->offset, "%s: its own key and place (not %s's)", f->key,
                       q->f.key);
        check_true(!(o->use & EPAR_TASK_OPT_TRAIN) || f->type == EPAR_FIELD_BOOL || (o->arg && *o->arg),
                   "%s: train's command line names its value", f->key);
        /* a help text holds no default (the help line prints def): a "(32)" beside a default of 64 cannot come back */
        const char *h = f->help;
        int number_in_parens = 0;
        for (const char *p = strchr(h, '('); p; p = strchr(p + 1, '(')) {
            size_t d = strspn(p + 1, "0123456789.");
            number_in_parens |= d > 0 && p[1 + d] == ')';
        }
        check_true(!number_in_parens && !strstr(h, "default"), "%s: no default written in its help '%s'", f->key, h);
        /* the tasks it names are the tasks that read it: all (none named), the synthetic ones, or each by name */
        if (o->tasks == EPAR_TASK_SYNTHETIC && strstr(h, "synthetic tasks: ")) continue;
        for (int k = 0; k < EPAR_TASK_COUNT; k++)
            if (o->tasks != EPAR_TASK_ALL || names_task(h, epar_task_name((enum epar_task_id)k)))
                check_int(names_task(h, epar_task_name((enum epar_task_id)k)), !!(o->tasks & EPAR_TASK_BIT(k)),
                          "%s: its help names task %s iff it reads the option", f->key, epar_task_name((enum epar_task_id)k));
    }
    check_true(rows > 0 && rows <= EPAR_TASK_MAX_OPTIONS, "the table has %d rows (at most EPAR_TASK_MAX_OPTIONS)", rows);

    /* the defaults are the rows' (the benchmark's: bench_def where a row has one), for every task */
    for (int k = 0; k < EPAR_TASK_COUNT; k++) {
        struct epar_task_cfg c, b;
        epar_task_cfg_default(&c, (enum epar_task_id)k);
        epar_task_cfg_default_for(&b, (enum epar_task_id)k, EPAR_TASK_OPT_BENCH);
        check_true((int)c.id == k && (int)b.id == k && c.length == 64 && c.seed == 42 && !c.text_path && !c.cache_dir,
                   "%s: id, length 64, seed 42, no text", epar_task_name((enum epar_task_id)k));
        for (const struct epar_task_option *o = epar_task_options; o->f.key; o++) {
            if (o->f.type == EPAR_FIELD_STRING) continue;
            check_rel(option_value(&o->f, &c), o->f.def, 0, "%s: default %s is the row's", epar_task_name((enum epar_task_id)k),
                      o->f.key);
            check_rel(option_value(&o->f, &b), o->bench_def != 0 ? o->bench_def : o->f.def, 0,
                      "%s: the benchmark's default %s is the row's", epar_task_name((enum epar_task_id)k), o->f.key);
        }
    }
    struct epar_task_cfg b;
    epar_task_cfg_default_for(&b, EPAR_TASK_RECALL, EPAR_TASK_OPT_BENCH);
    check_true(b.keys == 32 && b.values == 32, "the benchmark's tasks start from 32 keys and 32 values (its cells say so)");

    /* train's rows, in the order run.json's task_options has them (its bytes, and a resumed run's, depend on it) */
    struct epar_field r[EPAR_TASK_MAX_OPTIONS + 1];
    const char *const want_lm[] = {"text", "holdout", "train_sequences", NULL};
    const char *const want_synth[] = {"pairs", "queries", "keys", "values", "eval_sequences", "train_sequences", NULL};
    const char *const want_cond[] = {"noise", "shuffle", NULL};
    const char *const *want[] = {want_lm, want_synth, want_cond};
    const unsigned use[] = {EPAR_TASK_OPT_TRAIN, EPAR_TASK_OPT_TRAIN, EPAR_TASK_OPT_CONDITION};
    const unsigned tasks[] = {EPAR_TASK_BIT(EPAR_TASK_LM), EPAR_TASK_SYNTHETIC, EPAR_TASK_ALL};
    for (int w = 0; w < 3; w++) {
        int n = epar_task_option_rows(use[w], tasks[w], 100, r, EPAR_TASK_MAX_OPTIONS + 1), m = 0;
        while (want[w][m]) m++;
        check_int(n, m, "rows %d: their count", w);
        for (int k = 0; k < n && k < m; k++) check_true(!strcmp(r[k].key, want[w][k]), "rows %d: %s at %d", w, want[w][k], k);
        check_true(r[n].key == NULL, "rows %d: end with {0}", w);
        for (const struct epar_task_option *o = epar_task_options; o->f.key; o++)
            if (!strcmp(o->f.key, r[0].key))
                check_int((long)r[0].offset, 100 + (long)o->f.offset, "rows %d: placed at base + the row's offset", w);
    }
    check_int(epar_task_option_rows(EPAR_TASK_OPT_TRAIN, EPAR_TASK_SYNTHETIC, 0, r, 3), 2, "at most max - 1 rows");
    check_true(r[2].key == NULL, "... and the end");
}

int main(void)
{
    test_options();
    test_chance();
    test_strip();
    test_lm();
    test_recall();
    test_needle();
    test_transduce();
    test_classify();
    test_select();
    test_set();
    test_noise();
    test_shuffle();
    test_train_pool();
    return check_summary("test_tasks");
}
