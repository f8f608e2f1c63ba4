/* test_ckpt: round trip of the checkpoint container, and every kind of bad file is a clear EPAR_EIO. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/ckpt.h"
#include "lib/err.h"
#include "check.h"

static char path[64];

static size_t file_size(void)
{
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return (size_t)n;
}

static void poke(long at, unsigned char v)
{
    FILE *f = fopen(path, "r+b");
    fseek(f, at, at < 0 ? SEEK_END : SEEK_SET);
    fputc(v, f);
    fclose(f);
}

static void write_ok(void)
{
    float p[5] = {1.5f, -2, 3, 4, 5};
    double d[2] = {0.25, 7};
    struct epar_ckpt_section s[] = {{"config", "{\"a\":1}", 7}, {"params", p, sizeof p}, {"state", d, sizeof d},
                                    {"empty", NULL, 0}};
    check_int(epar_ckpt_write(path, s, 4), EPAR_OK, "write");
}

static void expect_bad(const char *what, const char *msg)
{
    struct epar_ckpt c;
    int st = epar_ckpt_read(path, &c);
    check_int(st, EPAR_EIO, "%s: read fails with an I/O error", what);
    check_true(strstr(epar_err_message(), msg) != NULL, "%s: message '%s' (got '%s')", what, msg, epar_err_message());
    check_true(strstr(epar_err_message(), path) != NULL, "%s: message names the file", what);
}

int main(void)
{
    snprintf(path, sizeof path, "/tmp/epar-test-ckpt-%ld.bin", (long)getpid());
    write_ok();
    struct epar_ckpt c;
    check_int(epar_ckpt_read(path, &c), EPAR_OK, "read back");
    size_t n;
    /* section data sits at any byte offset: copied out, as epar_ckpt_get's callers must */
    float p[5] = {0};
    double d[2] = {0};
    const void *pp = epar_ckpt_get(&c, "params", &n);
    if (pp && n == sizeof p) memcpy(p, pp, sizeof p);
    check_true(pp && n == 5 * sizeof(float) && p[0] == 1.5f && p[4] == 5.0f, "params round trip");
    const void *dp = epar_ckpt_get(&c, "state", &n);
    if (dp && n == sizeof d) memcpy(d, dp, sizeof d);
    check_true(dp && n == 2 * sizeof(double) && d[0] == 0.25, "state round trip");
    check_true(epar_ckpt_get(&c, "empty", &n) != NULL && n == 0, "empty section");
    check_true(epar_ckpt_get(&c, "missing", &n) == NULL, "absent section");
    epar_ckpt_free(&c);
    size_t len = file_size();

    poke(40, 0x5a);
    expect_bad("a flipped byte", "checksum mismatch");
    write_ok();
    check_int(truncate(path, (off_t)(len - 30)), 0, "truncate the file");
    expect_bad("truncated", "truncated checkpoint");
    write_ok();
    poke(0, 'X');
    expect_bad("foreign magic", "not an epar checkpoint");
    FILE *f = fopen(path, "wb");
    fputs("{\"not\": \"a checkpoint\"}\n", f);
    fclose(f);
    expect_bad("a JSON file", "not an epar checkpoint");
    write_ok();
    poke(8, 2);   /* version 2 */
    expect_bad("another version", "version 2");
    write_ok();
    poke(12, 0x01); poke(15, 0x04);   /* byte-order mark reversed */
    expect_bad("other byte order", "other byte order");
    unlink(path);
    check_int(epar_ckpt_read(path, &c), EPAR_EIO, "a missing file is an I/O error");
    check_true(strstr(epar_err_message(), "No such file") != NULL, "message has the system's reason");
    return check_summary("test_ckpt");
}
