/*
 * accfile.c - the access side file's bytes; see accfile.h and
 * format-spec/access.md. Pure functions over buffers: access.c does the
 * I/O, fuzz/fuzz_access.c feeds them anything.
 *
 * Why an entry's sum is seeded with the file id: a reader that has lost
 * its place (a torn append left a few bytes that are no entry, so every
 * entry after them is off by that much) finds the next entry by trying
 * each byte position, and only an entry written for this very file passes
 * (bytes of an older file, or zeros a crash left, do not).
 */
#include "accfile.h"

#include <string.h>
#include <xxhash.h>

#include "bytes.h"
#include "filehdr.h"

_Static_assert(ACC_HDR_SIZE == FILEHDR_SIZE, "the access file uses the common header");
_Static_assert(ACC_OFF_STORE_ID + ACC_STORE_ID_LEN == ACC_OFF_RESERVED, "header layout");
_Static_assert(ACC_OFF_RESERVED < FILEHDR_OFF_SUM, "reserved bytes before the header sum");
_Static_assert(ACC_OFF_SUM + 8 == ACC_ENTRY_SIZE, "entry layout");

void cairn__accfile_hdr_encode(uint8_t *out, uint64_t file_id, const uint8_t *store_id)
{
    cairn__filehdr_init(out, ACC_MAGIC, ACC_VERSION);
    put_le64(out + ACC_OFF_FILE_ID, file_id);
    if (store_id != NULL)
        memcpy(out + ACC_OFF_STORE_ID, store_id, ACC_STORE_ID_LEN);
    cairn__filehdr_seal(out);
}

int cairn__accfile_hdr_decode(const uint8_t *buf, size_t len, accfile_hdr *h, cairn__err *e)
{
    int rc = cairn__filehdr_check(buf, len, ACC_MAGIC, ACC_VERSION, ACC_NAME, e);

    memset(h, 0, sizeof *h);
    if (rc != CAIRN_OK)
        return rc;
    for (size_t i = ACC_OFF_RESERVED; i < FILEHDR_OFF_SUM; i++)
        if (buf[i] != 0)
            return cairn__fail(e, CAIRN_ECORRUPT, "%s: reserved byte at offset %zu is not zero",
                               ACC_NAME, i);
    h->version = get_le16(buf + 8);
    h->file_id = get_le64(buf + ACC_OFF_FILE_ID);
    if (h->file_id == 0)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: file id at offset %u is 0", ACC_NAME,
                           ACC_OFF_FILE_ID);
    memcpy(h->store_id, buf + ACC_OFF_STORE_ID, ACC_STORE_ID_LEN);
    return CAIRN_OK;
}

static uint64_t entry_sum(const uint8_t *p, uint64_t file_id)
{
    return XXH3_64bits_withSeed(p, ACC_OFF_SUM, file_id);
}

void cairn__accfile_entry_encode(uint8_t *out, uint64_t file_id, uint64_t seq, int64_t at)
{
    put_le64(out + ACC_OFF_SEQ, seq);
    put_le64(out + ACC_OFF_AT, (uint64_t)at);
    put_le64(out + ACC_OFF_SUM, entry_sum(out, file_id));
}

void cairn__accfile_scan(const uint8_t *buf, size_t len, uint64_t off, uint64_t file_id,
                         void (*fn)(void *user, uint64_t seq, int64_t at, uint64_t off),
                         void *user, accfile_scan *out)
{
    size_t p = 0;

    memset(out, 0, sizeof *out);
    while (len - p >= ACC_ENTRY_SIZE) {
        const uint8_t *q = buf + p;
        uint64_t seq;
        int64_t at;
        if (get_le64(q + ACC_OFF_SUM) != entry_sum(q, file_id)) {
            out->skipped++; /* no entry starts here: try the next byte */
            p++;
            continue;
        }
        seq = get_le64(q + ACC_OFF_SEQ);
        at = (int64_t)get_le64(q + ACC_OFF_AT);
        if (seq == 0 || at < 0 || at > ACC_AT_MAX)
            out->bad_entries++;
        else {
            out->entries++;
            if (fn != NULL)
                fn(user, seq, at, off + p);
        }
        p += ACC_ENTRY_SIZE;
    }
    out->consumed = p;
}
