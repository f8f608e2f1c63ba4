/* The fuzz harnesses without libFuzzer, as unit programs of `make test` (build/tests/test_fuzz_<name>): every file
 * of the seed corpus tests/fuzz/<name>/ and of the regressions tests/fuzz/regress/<name>/ (inputs that once
 * crashed, copied there from build-fuzz/crash-<name>-*) goes through the harness once. A crash or a broken
 * contract kills the program, which the test runner reports; otherwise "# test_fuzz_<name>: N passed, 0 failed". */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        rewind(f);
        uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
        if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) { fprintf(stdout, "not ok cannot read %s\n", path); exit(1); }
        fclose(f);
        LLVMFuzzerTestOneInput(buf, (size_t)len);
        free(buf);
        n++;
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    const char *name = strncmp(base, "test_fuzz_", 10) ? base : base + 10;
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    char dir[512];
    snprintf(dir, sizeof dir, "tests/fuzz/%s", name);
    int n = replay_dir(dir);
    snprintf(dir, sizeof dir, "tests/fuzz/regress/%s", name);
    n += replay_dir(dir);
    if (n == 0) {
        printf("not ok test_fuzz_%s: no inputs under tests/fuzz/%s/ (run from the source folder)\n", name, name);
        printf("# test_fuzz_%s: 0 passed, 1 failed\n", name);
        return 1;
    }
    printf("# test_fuzz_%s: %d passed, 0 failed\n", name, n);
    return 0;
}
