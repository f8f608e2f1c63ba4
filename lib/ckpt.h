/* ckpt: the checkpoint file of a training run - a versioned container of named binary sections with a
 * checksum, written atomically (temp file + rename).
 *
 *   offset  size   content
 *   0       8      magic "EPARCKPT"
 *   8       4      format version (uint32, 1)
 *   12      4      byte-order mark 0x01020304 (uint32; a file from a machine of the other order is refused)
 *   16      8      number of sections n (uint64)
 *   24      ...    n sections: tag (16 bytes, NUL-padded), size (uint64), size bytes of data
 *   end-16  8      FNV-1a 64 checksum of every byte before it
 *   end-8   8      end mark "EPAREND\0"
 *
 * What goes in the sections is the caller's (experiments/train/train.c: config, state, params, optimiser
 * moments, RNG state, learning curve). Reading checks everything before returning: a file that is not a
 * checkpoint, of another version or byte order, truncated, or whose checksum does not match is an
 * EPAR_EIO error naming the file and the problem. */
#ifndef EPAR_CKPT_H
#define EPAR_CKPT_H

#include <stddef.h>
#include <stdint.h>

#define EPAR_CKPT_VERSION 1
#define EPAR_CKPT_TAG 16

struct epar_ckpt_section {
    const char *tag;
    const void *data;
    size_t size;
};

struct epar_ckpt {
    unsigned char *buf;     /* the whole file */
    size_t len;
    int n;
    struct { char tag[EPAR_CKPT_TAG + 1]; const unsigned char *data; size_t size; } *sec;
};

/* FNV-1a 64 of n bytes continuing from h (start with EPAR_CKPT_FNV_INIT) */
#define EPAR_CKPT_FNV_INIT 0xcbf29ce484222325ULL
uint64_t epar_ckpt_fnv1a(uint64_t h, const void *data, size_t n);

int epar_ckpt_write(const char *path, const struct epar_ckpt_section *s, int n);
int epar_ckpt_read(const char *path, struct epar_ckpt *c);
/* data of section tag (NULL if absent; *size set). It sits at any byte offset of the file: copy it out
 * (memcpy) before reading it as float or double. */
const void *epar_ckpt_get(const struct epar_ckpt *c, const char *tag, size_t *size);
void epar_ckpt_free(struct epar_ckpt *c);

#endif
