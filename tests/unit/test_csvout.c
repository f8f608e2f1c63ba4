/* csvout: unit tests of lib/csvout (worked values, round trips, error paths). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/csvout.h"
#include "lib/err.h"
#include "check.h"

static char tmpdir[] = "/tmp/epar-test-csvout.XXXXXX";

static void cleanup(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) return 2;
    /* csv: write, read back, quoting, number format, atomicity */
    struct epar_table *t = epar_csv_new("name,value,n");
    epar_csv_append(t, "sdi", "plain", 0.1, 3);
    epar_csv_append(t, "sdi", "with, comma \"q\"", NAN, -1);
    epar_csv_append(t, "s-i", "empty", 7);
    char path[256];
    snprintf(path, sizeof path, "%s/t.csv", tmpdir);
    check_int(epar_csv_write(t, path), EPAR_OK, "csv write");
    struct epar_table *back = NULL;
    check_int(epar_csv_read(path, &back), EPAR_OK, "csv read back");
    if (back) {
        check_int((long)back->nrows, 3, "rows read back");
        check_rel(epar_csv_get(back, 0, "value"), 0.1, 1e-12, "number read back");
        check_true(!strcmp(epar_csv_get_str(back, 1, "name"), "with, comma \"q\""), "quoted field read back");
        check_true(isnan(epar_csv_get(back, 1, "value")), "nan read back");
        epar_csv_free(back);
    }
    char buf[64];
    epar_csv_format_number(-0.0, buf, sizeof buf);
    check_true(!strcmp(buf, "0"), "no negative zero");
    epar_csv_format_number(1.0 / 3, buf, sizeof buf);
    check_true(!strcmp(buf, "0.333333333333"), "12 significant digits");
    check_int(epar_csv_write(t, "/dev/null"), EPAR_EIO, "a device is never replaced -> EPAR_EIO");
    check_int(epar_csv_write(t, "/nonexistent-dir/x.csv"), EPAR_EIO, "missing folder -> EPAR_EIO");
    epar_csv_free(t);
    cleanup();
    return check_summary("test_csvout");
}
