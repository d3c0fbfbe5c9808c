/*
 * fuzz.h - what every fuzz target shares: the libFuzzer entry point's
 * prototype (so -Wmissing-prototypes holds in the gcc replay build), the
 * invariant check, and the checksum repair used to get past checksums.
 *
 * Each target runs an input twice: once exactly as given, and once in a
 * copy whose checksums (and record epochs) have been recomputed. The first
 * pass is what a reader meets on disk; the second lets mutations reach the
 * field validation behind the checksums, which random bytes would otherwise
 * never get through. Corpus files stay plain on-disk bytes either way.
 *
 * FUZZ_CHECK() traps on a broken invariant: a fuzz target may stop the
 * process, the library never does.
 */
#ifndef CAIRN_FUZZ_H
#define CAIRN_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "bytes.h"
#include "cairn.h"
#include "filehdr.h"
#include "record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

/* The salt the record target decodes with; it is the one the golden record
 * (tests/golden/record-v1.bin) was written with, so that file seeds it. */
#define FUZZ_RECORD_SALT 0x0123456789abcdefull

/* A heap copy of exactly `size` bytes (at least 1 allocated), so ASan sees
 * any read past the end. Returns NULL only when out of memory. */
static inline uint8_t *fuzz_dup(const uint8_t *data, size_t size)
{
    uint8_t *p = malloc(size ? size : 1);
    if (p != NULL && size)
        memcpy(p, data, size);
    return p;
}

/* Recompute the 64-byte file header's checksum, if there is a header. */
static inline void fuzz_fix_filehdr(uint8_t *buf, size_t size)
{
    if (size >= FILEHDR_SIZE)
        put_le64(buf + FILEHDR_OFF_SUM, XXH3_64bits(buf, FILEHDR_OFF_SUM));
}

/* Walk records from buf[0] as a scan would, and give each one whose length
 * is in range and fits the buffer the right epoch and checksum for `salt`.
 * Stops at the first length that is not. */
static inline void fuzz_fix_records(uint8_t *buf, size_t size, uint64_t salt)
{
    size_t pos = 0;
    while (size - pos >= 4) {
        uint32_t len = get_le32(buf + pos);
        if (len < REC_OVERHEAD || len > CAIRN_RECORD_MAX || len > size - pos)
            break;
        put_le32(buf + pos + REC_OFF_EPOCH, (uint32_t)salt);
        put_le64(buf + pos + len - REC_TRAILER_SIZE,
                 XXH3_64bits_withSeed(buf + pos, len - REC_TRAILER_SIZE, salt));
        pos += len;
    }
}

/* Check a record cairn__record_decode() accepted at buf[0..avail): its
 * length, that every pointer lies inside the record, the field rules, and
 * that encoding the decoded fields again gives back the very same bytes. */
static inline void fuzz_check_record(const uint8_t *buf, size_t avail, uint64_t salt,
                                     const cairn_record *rec, size_t len)
{
    const char *lo = (const char *)buf, *hi = lo + len;
    cairn_entry ent;
    size_t sz = 0;
    uint8_t *re;

    FUZZ_CHECK(len >= REC_OVERHEAD && len <= avail && len <= CAIRN_RECORD_MAX);
    FUZZ_CHECK(len == get_le32(buf));
    FUZZ_CHECK(rec->seq != 0 && rec->type != 0 && rec->ns_len <= CAIRN_NS_MAX);
    FUZZ_CHECK(rec->ns == lo + REC_HEADER_SIZE);
    FUZZ_CHECK(rec->json == rec->ns + rec->ns_len);
    FUZZ_CHECK((const char *)rec->bin == rec->json + rec->json_len);
    FUZZ_CHECK(rec->ns_len <= len && rec->json_len <= len && rec->bin_len <= len);
    FUZZ_CHECK((const char *)rec->bin + rec->bin_len == hi - REC_TRAILER_SIZE);
    FUZZ_CHECK(REC_OVERHEAD + rec->ns_len + rec->json_len + rec->bin_len == len);

    ent.type = rec->type;
    ent.ns = rec->ns;
    ent.ns_len = rec->ns_len;
    ent.json = rec->json;
    ent.json_len = rec->json_len;
    ent.bin = rec->bin;
    ent.bin_len = rec->bin_len;
    FUZZ_CHECK(cairn__record_size(&ent, &sz) == CAIRN_OK);
    FUZZ_CHECK(sz == len);
    re = malloc(sz);
    if (re == NULL)
        return;
    cairn__record_encode(re, &ent, rec->seq, rec->ts_ms, salt);
    FUZZ_CHECK(memcmp(re, buf, len) == 0);
    free(re);
}

/* A store for the targets that import into one: made once in a fresh
 * directory under /tmp (durability none, no background thread), its files
 * and directory removed by fuzz_store_remove (flat: files only). */
static inline cairn_db *fuzz_store_open(char *dir, size_t cap, const char *tag)
{
    char err[CAIRN_ERRMSG_MAX];
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    snprintf(dir, cap, "/tmp/cairn-fuzz-%s-XXXXXX", tag);
    FUZZ_CHECK(mkdtemp(dir) != NULL);
    o.create = 1;
    o.background = 0;
    o.durability = CAIRN_DURABILITY_NONE;
    FUZZ_CHECK(cairn_open(&db, dir, &o, err, sizeof err) == CAIRN_OK);
    return db;
}

static inline void fuzz_store_remove(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            (void)unlinkat(dirfd(d), de->d_name, 0);
    closedir(d);
    (void)rmdir(dir);
}

#endif /* CAIRN_FUZZ_H */
