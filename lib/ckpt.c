#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ckpt.h"
#include "outdir.h"
#include "err.h"

static const char MAGIC[8] = {'E', 'P', 'A', 'R', 'C', 'K', 'P', 'T'};
static const char END[8] = {'E', 'P', 'A', 'R', 'E', 'N', 'D', '\0'};
#define BOM 0x01020304u

uint64_t epar_ckpt_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* fwrite that also feeds the checksum */
static int put(FILE *f, uint64_t *h, const void *data, size_t n)
{
    *h = epar_ckpt_fnv1a(*h, data, n);
    return n == 0 || fwrite(data, 1, n, f) == n;
}

int epar_ckpt_write(const char *path, const struct epar_ckpt_section *s, int n)
{
    struct epar_out_file w;
    FILE *f = epar_out_fopen(&w, path); /* checked writes, then renamed into place */
    if (!f) return EPAR_EIO;
    uint64_t h = EPAR_CKPT_FNV_INIT, ns = (uint64_t)n;
    uint32_t ver = EPAR_CKPT_VERSION, bom = BOM;
    int ok = put(f, &h, MAGIC, 8) && put(f, &h, &ver, 4) && put(f, &h, &bom, 4) && put(f, &h, &ns, 8);
    for (int k = 0; ok && k < n; k++) {
        char tag[EPAR_CKPT_TAG] = {0};
        size_t tl = strlen(s[k].tag);
        memcpy(tag, s[k].tag, tl < EPAR_CKPT_TAG ? tl : EPAR_CKPT_TAG);
        uint64_t sz = s[k].size;
        ok = put(f, &h, tag, EPAR_CKPT_TAG) && put(f, &h, &sz, 8) && put(f, &h, s[k].data, s[k].size);
    }
    if (ok) ok = fwrite(&h, 8, 1, f) == 1 && fwrite(END, 8, 1, f) == 1;
    return epar_out_fclose(&w); /* a failed write above is remembered, with its reason */
}

static int bad(struct epar_ckpt *c, const char *path, const char *what)
{
    epar_ckpt_free(c);
    epar_err_set(EPAR_EIO, "%s '%s'", what, path);
    epar_err_hint("a checkpoint.bin is written by 'epar train' (output/train/<task>/<mechanism>/) and 'epar benchmark' "
                  "(output/benchmark/cells/<task>/<mechanism>/seed-<seed>/)");
    return EPAR_EIO;
}

int epar_ckpt_read(const char *path, struct epar_ckpt *c)
{
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "rb");
    if (!f) return epar_err_set(EPAR_EIO, "cannot read checkpoint '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return epar_err_set(EPAR_EIO, "cannot read checkpoint '%s': not a regular file", path);
    }
    size_t len = (size_t)sb.st_size;
    c->buf = malloc(len ? len : 1);
    if (!c->buf) {
        fclose(f);
        return epar_err_set(EPAR_ENOMEM, "out of memory reading checkpoint '%s'", path);
    }
    size_t got = fread(c->buf, 1, len, f);
    fclose(f);
    c->len = got;
    if (got != len) return bad(c, path, "cannot read checkpoint");
    const unsigned char *p = c->buf;
    if (len < 24 || memcmp(p, MAGIC, 8)) return bad(c, path, "not an epar checkpoint");
    uint32_t ver, bom;
    memcpy(&ver, p + 8, 4);
    memcpy(&bom, p + 12, 4);
    if (bom != BOM) return bad(c, path, "checkpoint written on a machine of the other byte order");
    if (ver != EPAR_CKPT_VERSION) {
        epar_ckpt_free(c);
        epar_err_set(EPAR_EIO, "checkpoint '%s' has format version %u; this epar reads version %d", path, ver,
                     EPAR_CKPT_VERSION);
        epar_err_hint("resume or inspect it with the epar that wrote it, or train the run again");
        return EPAR_EIO;
    }
    if (len < 40 || memcmp(p + len - 8, END, 8)) return bad(c, path, "truncated checkpoint (no end mark)");
    uint64_t want;
    memcpy(&want, p + len - 16, 8);
    if (epar_ckpt_fnv1a(EPAR_CKPT_FNV_INIT, p, len - 16) != want) return bad(c, path, "corrupt checkpoint (checksum mismatch)");
    uint64_t ns;
    memcpy(&ns, p + 16, 8);
    if (ns > 4096) return bad(c, path, "corrupt checkpoint (section count)");
    c->sec = calloc(ns ? ns : 1, sizeof *c->sec);
    if (!c->sec) {
        epar_ckpt_free(c);
        return epar_err_set(EPAR_ENOMEM, "out of memory reading checkpoint '%s'", path);
    }
    size_t off = 24, end = len - 16;
    for (uint64_t k = 0; k < ns; k++) {
        uint64_t sz;
        if (end - off < EPAR_CKPT_TAG + 8) return bad(c, path, "corrupt checkpoint (section header)");
        memcpy(c->sec[k].tag, p + off, EPAR_CKPT_TAG);
        memcpy(&sz, p + off + EPAR_CKPT_TAG, 8);
        off += EPAR_CKPT_TAG + 8;
        if (sz > end - off) return bad(c, path, "corrupt checkpoint (section size)");
        c->sec[k].data = p + off;
        c->sec[k].size = (size_t)sz;
        off += (size_t)sz;
    }
    if (off != end) return bad(c, path, "corrupt checkpoint (trailing bytes)");
    c->n = (int)ns;
    return EPAR_OK;
}

const void *epar_ckpt_get(const struct epar_ckpt *c, const char *tag, size_t *size)
{
    for (int k = 0; k < c->n; k++)
        if (!strcmp(c->sec[k].tag, tag)) {
            if (size) *size = c->sec[k].size;
            return c->sec[k].data;
        }
    if (size) *size = 0;
    return NULL;
}

void epar_ckpt_free(struct epar_ckpt *c)
{
    free(c->buf);
    free(c->sec);
    c->buf = NULL;
    c->sec = NULL;
    c->n = 0;
    c->len = 0;
}
