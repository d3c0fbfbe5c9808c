/*
 * fuzz_access.c - the access side file ACCESS (format-spec/access.md):
 * cairn__accfile_hdr_decode() on its first 64 bytes, then, when the header
 * holds, cairn__accfile_scan() over the rest with the file's id. Run as
 * given and with the header sum and every 24-byte-aligned entry's sum
 * repaired (so that mutations reach the value checks behind them).
 *
 * Invariants: a header that fails says why (CAIRN_ECORRUPT, _ECHECKSUM or
 * _EVERSION, with a message); one that decodes encodes back to the same
 * 64 bytes. The scan decides every position before `consumed` and stops
 * only with fewer than 24 bytes left; good entries, refused entries and
 * skipped bytes add up to what it consumed; each good entry lies inside the
 * input at increasing offsets, 24 or more apart, and re-encodes to its
 * bytes; and a scan done in two pieces (the first cut anywhere, the second
 * going on from where the first stopped), as a reader does while the file
 * grows, finds exactly the entries of one scan over the whole.
 */
#include "fuzz.h"

#include "accfile.h"

typedef struct seen {
    const uint8_t *base; /* the entry bytes, at file offset ACC_HDR_SIZE */
    uint64_t file_id;
    uint64_t n, last_off;
    uint64_t sum;        /* of (seq, at, off): compares two scans */
} seen;

static void on_entry(void *user, uint64_t seq, int64_t at, uint64_t off)
{
    seen *s = user;
    uint8_t e[ACC_ENTRY_SIZE];
    FUZZ_CHECK(off >= ACC_HDR_SIZE);
    FUZZ_CHECK(s->n == 0 || off >= s->last_off + ACC_ENTRY_SIZE);
    FUZZ_CHECK(seq != 0 && at >= 0 && at <= ACC_AT_MAX);
    cairn__accfile_entry_encode(e, s->file_id, seq, at);
    FUZZ_CHECK(memcmp(e, s->base + (off - ACC_HDR_SIZE), ACC_ENTRY_SIZE) == 0);
    s->n++;
    s->last_off = off;
    s->sum = s->sum * 0x9E3779B97F4A7C15ull + (seq ^ (uint64_t)at * 31 ^ off * 7);
}

static void one(const uint8_t *buf, size_t size, size_t cut)
{
    accfile_hdr h;
    accfile_scan a, b1, b2;
    seen all, split;
    cairn__err e;
    uint8_t re[ACC_HDR_SIZE];
    const uint8_t *body;
    size_t len;
    int rc;

    memset(e.msg, 'x', sizeof e.msg);
    rc = cairn__accfile_hdr_decode(buf, size, &h, &e);
    if (rc != CAIRN_OK) {
        FUZZ_CHECK(rc == CAIRN_ECORRUPT || rc == CAIRN_ECHECKSUM || rc == CAIRN_EVERSION);
        FUZZ_CHECK(memchr(e.msg, '\0', sizeof e.msg) != NULL && e.msg[0] != 0);
        return;
    }
    FUZZ_CHECK(size >= ACC_HDR_SIZE && h.file_id != 0 && h.version >= 1 && h.version <= ACC_VERSION);
    cairn__accfile_hdr_encode(re, h.file_id, h.store_id);
    FUZZ_CHECK(memcmp(re, buf, ACC_HDR_SIZE) == 0);

    body = buf + ACC_HDR_SIZE;
    len = size - ACC_HDR_SIZE;
    memset(&all, 0, sizeof all);
    all.base = body;
    all.file_id = h.file_id;
    cairn__accfile_scan(body, len, ACC_HDR_SIZE, h.file_id, on_entry, &all, &a);
    FUZZ_CHECK(a.consumed <= len);
    FUZZ_CHECK(len - a.consumed < ACC_ENTRY_SIZE);
    FUZZ_CHECK(a.entries == all.n);
    FUZZ_CHECK((a.entries + a.bad_entries) * ACC_ENTRY_SIZE + a.skipped == a.consumed);

    /* the same bytes read in two steps, as the file grows */
    cut = len ? cut % (len + 1) : 0;
    memset(&split, 0, sizeof split);
    split.base = body;
    split.file_id = h.file_id;
    cairn__accfile_scan(body, cut, ACC_HDR_SIZE, h.file_id, on_entry, &split, &b1);
    cairn__accfile_scan(body + b1.consumed, len - b1.consumed, ACC_HDR_SIZE + b1.consumed,
                        h.file_id, on_entry, &split, &b2);
    FUZZ_CHECK(b1.consumed + b2.consumed == a.consumed);
    FUZZ_CHECK(b1.entries + b2.entries == a.entries && split.n == all.n && split.sum == all.sum);
    FUZZ_CHECK(b1.skipped + b2.skipped == a.skipped && b1.bad_entries + b2.bad_entries == a.bad_entries);
}

/* The header sum, and each entry's sum at the 24-byte positions after it
 * under the header's file id. */
static void repair(uint8_t *buf, size_t size)
{
    uint64_t id;
    fuzz_fix_filehdr(buf, size);
    if (size < ACC_HDR_SIZE)
        return;
    id = get_le64(buf + ACC_OFF_FILE_ID);
    for (size_t p = ACC_HDR_SIZE; size - p >= ACC_ENTRY_SIZE; p += ACC_ENTRY_SIZE)
        put_le64(buf + p + ACC_OFF_SUM, XXH3_64bits_withSeed(buf + p, ACC_OFF_SUM, id));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t cut = size ? (size_t)data[size - 1] * 7 + size / 3 : 0;
    uint8_t *copy;
    one(data, size, cut);
    if (size == 0 || (copy = fuzz_dup(data, size)) == NULL)
        return 0;
    repair(copy, size);
    one(copy, size, cut);
    free(copy);
    return 0;
}
