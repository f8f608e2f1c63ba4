/* enospc: an LD_PRELOAD shim for the tests, a disk that fills up (tests/cli/test_full_disk.sh).
 *
 *   ENOSPC_BYTES=N        room on the "disk": once N bytes were written to files, a write writes what still fits
 *                         and fails with ENOSPC
 *   ENOSPC_COUNTER=FILE   8 bytes holding the bytes written so far, shared by every process that has the shim
 *                         (epar and its gnuplot children: LD_PRELOAD is inherited), as a disk is; without it each
 *                         process has a disk of its own
 *   ENOSPC_MATCH=SUFFIX   only files whose name ends in SUFFIX count and fail (".png": only the figures)
 *
 * Counted: write, writev, pwrite of regular files other than the standard streams 0-2 (the test's own capture
 * files). stdio writes inside the C library do not go through the write symbol, so files opened for writing with
 * fopen/fopen64/fdopen get a stream (fopencookie) whose writes do. The file system itself is untouched: files are
 * created, renamed and removed as usual, only data beyond the room is refused. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static uint64_t budget = UINT64_MAX;
static uint64_t own_count;
static uint64_t *counter = &own_count;
static const char *match;

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static FILE *(*real_fopen)(const char *, const char *);
static FILE *(*real_fopen64)(const char *, const char *);
static FILE *(*real_fdopen)(int, const char *);

static void init(void) __attribute__((constructor));
static void init(void)
{
    real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    real_pwrite = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
    real_writev = (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
    real_fopen = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen");
    real_fopen64 = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen64");
    real_fdopen = (FILE * (*)(int, const char *)) dlsym(RTLD_NEXT, "fdopen");
    const char *b = getenv("ENOSPC_BYTES"), *c = getenv("ENOSPC_COUNTER");
    if (b && *b) budget = strtoull(b, NULL, 10);
    match = getenv("ENOSPC_MATCH");
    if (match && !*match) match = NULL;
    if (c && *c) {
        int fd = open(c, O_RDWR | O_CLOEXEC);
        void *m = fd >= 0 ? mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
        if (m != MAP_FAILED) counter = m;
        if (fd >= 0) close(fd);
    }
}

/* does this descriptor write to the disk under test? */
static int counted(int fd)
{
    struct stat st;
    if (fd <= 2 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    if (!match) return 1;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0) return 0;
    path[n] = '\0';
    size_t lm = strlen(match);
    return (size_t)n >= lm && strcmp(path + n - lm, match) == 0;
}

/* take up to n bytes of the room left (shared): how many may be written */
static size_t take(size_t n)
{
    uint64_t cur = __atomic_load_n(counter, __ATOMIC_SEQ_CST);
    for (;;) {
        uint64_t room = cur < budget ? budget - cur : 0, k = n < room ? n : room;
        if (k == 0) return 0;
        if (__atomic_compare_exchange_n(counter, &cur, cur + k, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return (size_t)k;
    }
}

static void give_back(size_t n)
{
    if (n) __atomic_sub_fetch(counter, (uint64_t)n, __ATOMIC_SEQ_CST);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    if (!real_write) init();
    if (n == 0 || !counted(fd)) return real_write(fd, buf, n);
    size_t k = take(n);
    if (k == 0) {
        errno = ENOSPC;
        return -1;
    }
    ssize_t w = real_write(fd, buf, k);
    give_back(w < 0 ? k : k - (size_t)w);
    return w;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    if (!real_pwrite) init();
    if (n == 0 || !counted(fd)) return real_pwrite(fd, buf, n, off);
    size_t k = take(n);
    if (k == 0) {
        errno = ENOSPC;
        return -1;
    }
    ssize_t w = real_pwrite(fd, buf, k, off);
    give_back(w < 0 ? k : k - (size_t)w);
    return w;
}
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) __attribute__((alias("pwrite")));

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    if (!real_writev) init();
    if (!counted(fd)) return real_writev(fd, iov, cnt);
    ssize_t total = 0;
    for (int i = 0; i < cnt; i++) {
        ssize_t w = write(fd, iov[i].iov_base, iov[i].iov_len);
        if (w < 0) return total ? total : -1;
        total += w;
        if ((size_t)w < iov[i].iov_len) break;
    }
    return total;
}

/* ---- stdio streams whose writes go through write() above ---- */

static ssize_t ck_read(void *c, char *buf, size_t n) { return read((int)(intptr_t)c, buf, n); }
static ssize_t ck_write(void *c, const char *buf, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = write((int)(intptr_t)c, buf + done, n - done);
        if (w <= 0) break;
        done += (size_t)w;
    }
    return (ssize_t)done; /* short: the stream is marked failed */
}
static int ck_seek(void *c, off64_t *off, int whence)
{
    off64_t r = lseek64((int)(intptr_t)c, *off, whence);
    if (r < 0) return -1;
    *off = r;
    return 0;
}
static int ck_close(void *c) { return close((int)(intptr_t)c); }

static int writes(const char *mode) { return strpbrk(mode, "wa+") != NULL; }

static FILE *cookie_stream(int fd, const char *mode)
{
    cookie_io_functions_t io = {ck_read, ck_write, ck_seek, ck_close};
    FILE *f = fopencookie((void *)(intptr_t)fd, mode, io);
    if (!f) close(fd);
    return f;
}

static FILE *open_stream(const char *path, const char *mode)
{
    int flags = strchr(mode, '+') ? O_RDWR : O_WRONLY;
    if (mode[0] == 'w') flags |= O_CREAT | O_TRUNC;
    else if (mode[0] == 'a') flags |= O_CREAT | O_APPEND;
    else if (mode[0] == 'r') flags = O_RDWR;
    if (strchr(mode, 'x')) flags |= O_EXCL;
    if (strchr(mode, 'e')) flags |= O_CLOEXEC;
    int fd = open(path, flags, 0666);
    if (fd < 0) return NULL;
    return cookie_stream(fd, mode);
}

FILE *fopen(const char *path, const char *mode)
{
    if (!real_fopen) init();
    return writes(mode) ? open_stream(path, mode) : real_fopen(path, mode);
}

FILE *fopen64(const char *path, const char *mode)
{
    if (!real_fopen64) init();
    return writes(mode) ? open_stream(path, mode) : real_fopen64(path, mode);
}

FILE *fdopen(int fd, const char *mode)
{
    if (!real_fdopen) init();
    return writes(mode) && counted(fd) ? cookie_stream(fd, mode) : real_fdopen(fd, mode);
}
