/*
 * bytes.h - little-endian integers on disk. Every on-disk integer is read and
 * written only through these helpers (memcpy inside, so unaligned and
 * strict-aliasing safe; the byte swap folds away on little-endian hosts).
 */
#ifndef CAIRN_BYTES_H
#define CAIRN_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint16_t get_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline uint64_t get_le64(const uint8_t *p)
{
    return (uint64_t)get_le32(p) | ((uint64_t)get_le32(p + 4) << 32);
}

static inline void put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
    put_le32(p, (uint32_t)v);
    put_le32(p + 4, (uint32_t)(v >> 32));
}

/* Overflow-checked size arithmetic: 0 on success, -1 on overflow. */
static inline int size_add(size_t *out, size_t a, size_t b)
{
    if (a > SIZE_MAX - b)
        return -1;
    *out = a + b;
    return 0;
}

static inline int size_mul(size_t *out, size_t a, size_t b)
{
    if (b != 0 && a > SIZE_MAX / b)
        return -1;
    *out = a * b;
    return 0;
}

/* Does hay[0, len) hold needle[0, nlen)? (memmem is not POSIX.) */
static inline int cairn__contains(const char *hay, size_t len, const char *needle, size_t nlen)
{
    const char *p = hay, *end = hay + len;
    if (nlen == 0)
        return 1;
    while ((size_t)(end - p) >= nlen &&
           (p = memchr(p, needle[0], (size_t)(end - p) - nlen + 1)) != NULL) {
        if (memcmp(p, needle, nlen) == 0)
            return 1;
        p++;
    }
    return 0;
}

/* The n lowercase hex digits at p as a number (at most 16 of them): 1, or
 * 0 when one is not 0-9 or a-f. Reads no further than the first that is
 * not (a NUL among them stops it). Names of files, ids cairn makes. */
static inline int cairn__hex_lower(const char *p, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return 0;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 1;
}

#endif /* CAIRN_BYTES_H */
