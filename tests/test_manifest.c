/*
 * test_manifest.c - the MANIFEST file (engine/log/manifest.h): encode and
 * decode round trips, every class of corruption mapped to its status code,
 * and the atomic write/read through a directory.
 *
 * For the structural checks the test recomputes the header and trailer
 * checksums itself (XXH3-64, seed 0, per format-spec/README.md), or encodes
 * an inconsistent in-memory manifest with the (non-validating) encoder, so
 * that the structural check, not a checksum, is what fires. Decoding always
 * runs on a heap buffer of exactly the given length so ASan sees over-reads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "alloc.h"
#include "bytes.h"
#include "cairn.h"
#include "cairn_sys.h"
#include "filehdr.h"
#include "manifest.h"
#include "testutil.h"

/* Offsets of the manifest's header fields and entry fields (manifest.h). */
#define H_GEN 16
#define H_NEXT 24
#define H_SEGSIZE 32
#define H_BATCH 40
#define H_DUR 44
#define H_COUNT 48
#define H_ESIZE 52
#define E_KIND 8
/* The store block follows the header (version 6: 104 bytes, 5: 88, 4: 80, 3: 40, 2: 32);
 * the entries follow it. */
#define ENTRIES_OFF (FILEHDR_SIZE + MAN_STORE_BLOCK)

/* A valid manifest: sealed 1..100, closed 101..150, active from 151. */
static manifest_entry good_entries[3];

static void good_manifest(manifest *m)
{
    static const manifest_entry init[3] = {
        {4, SEG_SEALED, 1, 100, 100, -5, 1700000060000ll, 3, 1,
         {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
          19, 20, 21, 22, 23, 24, 25, 26, 27, 0xff}},
        {9, SEG_CLOSED, 101, 150, 50, 1700000060000ll, 1700000090000ll, 0, 0, {0}},
        {10, SEG_ACTIVE, 151, 0, 0, 0, 0, 0, 0, {0}},
    };
    memcpy(good_entries, init, sizeof init);
    cairn__manifest_init(m);
    m->generation = 0x1122334455667788ull;
    m->next_id = 11;
    m->segment_size = 1ull << 20;
    m->batch_ms = 250;
    m->durability = CAIRN_DURABILITY_FULL;
    for (unsigned i = 0; i < MAN_STORE_ID_LEN; i++)
        m->store_id[i] = (uint8_t)(0xa0 + i);
    m->synced_seq = 140;
    m->lost_total = 3;
    m->max_memories = 777; /* not the default: a decoder that ignored it fails */
    m->retain.memories = CAIRN_RETAIN_LIVE;
    m->retain.grace_ms = 3600000;
    m->retain.events_max_age_ms = 86400000;
    m->retain.events_max_bytes = 1u << 20;
    m->dropped_upto = 77;
    m->deaths_dropped = 19;
    m->e = good_entries;
    m->n = 3;
}

/* Encode m and hand back a malloc'd copy of exactly its length. */
static uint8_t *encode(const manifest *m, size_t *len)
{
    uint8_t *b, *copy;
    assert_int_equal(cairn__manifest_encode(m, NULL, &b, len), CAIRN_OK);
    assert_int_equal(*len, ENTRIES_OFF + m->n * MAN_ENTRY_SIZE + 8);
    copy = malloc(*len);
    assert_non_null(copy);
    memcpy(copy, b, *len);
    cairn__free(NULL, b);
    return copy;
}

/* Recompute both checksums: header [0,56) and trailer [0,len-8). */
static void reseal(uint8_t *b, size_t len)
{
    put_le64(b + FILEHDR_OFF_SUM, XXH3_64bits(b, FILEHDR_OFF_SUM));
    put_le64(b + len - 8, XXH3_64bits(b, len - 8));
}

/* Decode from an exact-size heap copy; frees the result on success. */
static int decode_exact(const uint8_t *buf, size_t len, cairn__err *e)
{
    uint8_t *copy = malloc(len ? len : 1);
    manifest m;
    int rc;
    assert_non_null(copy);
    if (len)
        memcpy(copy, buf, len);
    rc = cairn__manifest_decode(copy, len, NULL, &m, e);
    if (rc == CAIRN_OK)
        cairn__manifest_free(NULL, &m);
    free(copy);
    return rc;
}

/* Encode an in-memory manifest (valid checksums) and return decode's code. */
static int decode_of(const manifest *m)
{
    size_t len;
    uint8_t *b = encode(m, &len);
    cairn__err e;
    int rc;
    e.msg[0] = '\0';
    rc = decode_exact(b, len, &e);
    /* A failure always comes with a message naming the file. */
    if (rc != CAIRN_OK)
        assert_non_null(strstr(e.msg, "MANIFEST"));
    free(b);
    return rc;
}

static void assert_same_manifest(const manifest *a, const manifest *b)
{
    assert_int_equal(a->generation, b->generation);
    assert_int_equal(a->next_id, b->next_id);
    assert_int_equal(a->segment_size, b->segment_size);
    assert_int_equal(a->batch_ms, b->batch_ms);
    assert_int_equal(a->durability, b->durability);
    assert_memory_equal(a->store_id, b->store_id, MAN_STORE_ID_LEN);
    assert_int_equal(a->synced_seq, b->synced_seq);
    assert_int_equal(a->lost_total, b->lost_total);
    assert_int_equal(a->max_memories, b->max_memories);
    assert_int_equal(a->retain.memories, b->retain.memories);
    assert_int_equal(a->retain.grace_ms, b->retain.grace_ms);
    assert_int_equal(a->retain.events_max_age_ms, b->retain.events_max_age_ms);
    assert_int_equal(a->retain.events_max_bytes, b->retain.events_max_bytes);
    assert_int_equal(a->dropped_upto, b->dropped_upto);
    assert_int_equal(a->deaths_dropped, b->deaths_dropped);
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_int_equal(a->e[i].id, b->e[i].id);
        assert_int_equal(a->e[i].kind, b->e[i].kind);
        assert_int_equal(a->e[i].base_seq, b->e[i].base_seq);
        assert_int_equal(a->e[i].last_seq, b->e[i].last_seq);
        assert_int_equal(a->e[i].count, b->e[i].count);
        assert_int_equal(a->e[i].rev, b->e[i].rev);
        assert_int_equal(a->e[i].chained, b->e[i].chained);
        assert_memory_equal(a->e[i].chain, b->e[i].chain, 32);
        assert_true(a->e[i].last_ts == b->e[i].last_ts);
        assert_int_equal(a->e[i].rev, b->e[i].rev);
    }
}

/* What a MANIFEST of a version before 4 says of m: every record kept,
 * nothing compacted. */
static void as_before_version_4(manifest *m)
{
    memset(&m->retain, 0, sizeof m->retain);
    m->dropped_upto = 0;
    m->deaths_dropped = 0;
    for (size_t i = 0; i < m->n; i++)
        m->e[i].rev = 0;
}

static int open_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    return fd;
}

/* Fixture of the file tests: a fresh directory, removed even on failure. */
static int dir_setup(void **state)
{
    char *dir = tu_mkdtemp("manifest");
    *state = dir;
    return dir == NULL ? -1 : 0;
}

static int dir_teardown(void **state)
{
    char *dir = *state;
    tu_rmrf(dir);
    free(dir);
    return 0;
}

/* ------------------------------------------------------------------------ */

static void test_round_trip_keeps_every_field(void **state)
{
    manifest m, got;
    size_t len;
    uint8_t *b;
    cairn__err e;
    (void)state;
    good_manifest(&m);
    b = encode(&m, &len);
    /* The header is a CAIRNMAN file header with a valid checksum. */
    assert_memory_equal(b, MAGIC_MAN, 8);
    assert_int_equal(get_le16(b + 8), MAN_VERSION);
    assert_int_equal(get_le16(b + 10), FILEHDR_SIZE);
    assert_int_equal(get_le64(b + FILEHDR_OFF_SUM), XXH3_64bits(b, FILEHDR_OFF_SUM));
    assert_int_equal(get_le32(b + H_COUNT), 3);
    assert_int_equal(get_le32(b + H_ESIZE), MAN_ENTRY_SIZE);
    assert_int_equal(get_le64(b + len - 8), XXH3_64bits(b, len - 8));
    assert_int_equal(cairn__manifest_decode(b, len, NULL, &got, &e), CAIRN_OK);
    assert_same_manifest(&m, &got);
    cairn__manifest_free(NULL, &got);
    free(b);
}

static void test_round_trip_of_a_lone_active_entry_and_extreme_values(void **state)
{
    manifest m, got;
    manifest_entry act = {UINT64_MAX - 1, SEG_ACTIVE, UINT64_MAX, 0, 0, 0, 0, 0, 0, {0}};
    size_t len;
    uint8_t *b;
    cairn__err e;
    (void)state;
    cairn__manifest_init(&m);
    m.generation = UINT64_MAX;
    m.next_id = UINT64_MAX;
    m.segment_size = 4096;
    m.batch_ms = UINT32_MAX;
    m.durability = CAIRN_DURABILITY_NONE;
    memset(m.store_id, 0xff, sizeof m.store_id);
    m.synced_seq = MAN_SEQ_MAX - 1;
    m.lost_total = MAN_SEQ_MAX - 1;
    m.max_memories = UINT64_MAX;
    m.e = &act;
    m.n = 1;
    b = encode(&m, &len);
    assert_int_equal(cairn__manifest_decode(b, len, NULL, &got, &e), CAIRN_OK);
    assert_same_manifest(&m, &got);
    cairn__manifest_free(NULL, &got);
    free(b);
}

static void test_copy_is_deep_and_equal(void **state)
{
    manifest m, c;
    (void)state;
    good_manifest(&m);
    assert_int_equal(cairn__manifest_copy(&m, NULL, &c), CAIRN_OK);
    assert_ptr_not_equal(c.e, m.e);
    assert_same_manifest(&m, &c);
    c.e[0].id = 1;
    assert_int_equal(m.e[0].id, 4);
    cairn__manifest_free(NULL, &c);
    assert_null(c.e);
    assert_int_equal(c.n, 0);
}

static void test_bad_magic_is_corrupt(void **state)
{
    manifest m;
    size_t len;
    uint8_t *b;
    (void)state;
    good_manifest(&m);
    b = encode(&m, &len);
    memcpy(b, MAGIC_LOG, 8); /* another cairn file type */
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    b[0] = 'X';
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    free(b);
}

static void test_newer_version_is_version_error(void **state)
{
    manifest m;
    size_t len;
    uint8_t *b;
    (void)state;
    good_manifest(&m);
    b = encode(&m, &len);
    put_le16(b + 8, MAN_VERSION + 1);
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_EVERSION);
    put_le16(b + 8, 0xffff);
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_EVERSION);
    /* Version 0 never existed. */
    put_le16(b + 8, 0);
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    free(b);
}

static void test_bad_header_length_or_flags_is_corrupt(void **state)
{
    manifest m;
    size_t len;
    uint8_t *b, *orig;
    (void)state;
    good_manifest(&m);
    orig = encode(&m, &len);
    b = malloc(len);
    assert_non_null(b);
    memcpy(b, orig, len);
    put_le16(b + 10, FILEHDR_SIZE + 8);
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    for (unsigned bit = 0; bit < 32; bit++) {
        memcpy(b, orig, len);
        put_le32(b + 12, 1u << bit);
        reseal(b, len);
        assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    }
    free(b);
    free(orig);
}

static void test_header_checksum_mismatch_is_checksum_error(void **state)
{
    manifest m;
    size_t len;
    uint8_t *b;
    (void)state;
    good_manifest(&m);
    b = encode(&m, &len);
    /* Any header byte after the magic, the trailer recomputed: only the
     * header checksum can tell. */
    for (size_t i = 8; i < FILEHDR_SIZE; i++) {
        b[i] ^= 0x04;
        put_le64(b + len - 8, XXH3_64bits(b, len - 8));
        if (decode_exact(b, len, NULL) != CAIRN_ECHECKSUM)
            fail_msg("header byte %zu flipped: expected CAIRN_ECHECKSUM", i);
        b[i] ^= 0x04;
    }
    put_le64(b + len - 8, XXH3_64bits(b, len - 8));
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_OK);
    free(b);
}

static void test_trailer_checksum_mismatch_is_checksum_error(void **state)
{
    manifest m;
    size_t len;
    uint8_t *b;
    cairn__err e;
    (void)state;
    good_manifest(&m);
    b = encode(&m, &len);
    /* Every byte of the entries and of the trailer itself. */
    for (size_t i = FILEHDR_SIZE; i < len; i++) {
        b[i] ^= 0x40;
        if (decode_exact(b, len, &e) != CAIRN_ECHECKSUM)
            fail_msg("byte %zu flipped: expected CAIRN_ECHECKSUM", i);
        b[i] ^= 0x40;
    }
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_OK);
    free(b);
}

static void test_every_single_bit_flip_is_rejected(void **state)
{
    manifest m;
    size_t len;
    uint8_t *b;
    (void)state;
    good_manifest(&m);
    b = encode(&m, &len);
    for (size_t i = 0; i < len; i++)
        for (unsigned bit = 0; bit < 8; bit++) {
            int rc;
            b[i] ^= (uint8_t)(1u << bit);
            rc = decode_exact(b, len, NULL);
            if (rc >= 0)
                fail_msg("bit %u of byte %zu flipped: decoded (%d)", bit, i, rc);
            b[i] ^= (uint8_t)(1u << bit);
        }
    free(b);
}

static void test_nonzero_reserved_bytes_are_corrupt(void **state)
{
    manifest m;
    size_t len;
    uint8_t *b, *orig;
    (void)state;
    good_manifest(&m);
    orig = encode(&m, &len);
    b = malloc(len);
    assert_non_null(b);
    /* Header bytes 45..47. */
    for (size_t i = 45; i < 48; i++) {
        memcpy(b, orig, len);
        b[i] = 0x01;
        reseal(b, len);
        if (decode_exact(b, len, NULL) != CAIRN_ECORRUPT)
            fail_msg("header reserved byte %zu set: expected CAIRN_ECORRUPT", i);
    }
    /* Entry bytes 9..11 of every entry (12..15: the rev). */
    for (size_t k = 0; k < m.n; k++)
        for (size_t i = 9; i < 12; i++) {
            memcpy(b, orig, len);
            b[ENTRIES_OFF + k * MAN_ENTRY_SIZE + i] = 0x80;
            reseal(b, len);
            if (decode_exact(b, len, NULL) != CAIRN_ECORRUPT)
                fail_msg("entry %zu reserved byte %zu set: expected CAIRN_ECORRUPT", k, i);
        }
    /* synced_seq and lost_total at 2^62 or past: no seq derived from them may
     * wrap (a crafted synced_seq of 2^64-2 made the store hand out 0). */
    for (size_t at = 16; at <= 24; at += 8) {
        memcpy(b, orig, len);
        put_le64(b + FILEHDR_SIZE + at, MAN_SEQ_MAX);
        reseal(b, len);
        if (decode_exact(b, len, NULL) != CAIRN_ECORRUPT)
            fail_msg("store block field at %zu = 2^62: expected CAIRN_ECORRUPT", at);
        put_le64(b + FILEHDR_SIZE + at, MAN_SEQ_MAX - 1);
        reseal(b, len);
        assert_int_equal(decode_exact(b, len, NULL), CAIRN_OK);
    }
    memcpy(b, orig, len);
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_OK);
    free(b);
    free(orig);
}

static void test_bad_settings_are_corrupt(void **state)
{
    manifest m;
    size_t len;
    uint8_t *b, *orig;
    (void)state;
    good_manifest(&m);
    orig = encode(&m, &len);
    b = malloc(len);
    assert_non_null(b);
    /* Entry size other than 56. */
    memcpy(b, orig, len);
    put_le32(b + H_ESIZE, MAN_ENTRY_SIZE + 8);
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    /* An unknown durability mode. */
    memcpy(b, orig, len);
    b[H_DUR] = CAIRN_DURABILITY_FULL + 1;
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    /* Segment size outside 4 KiB..4 GiB (format-spec/README.md). */
    memcpy(b, orig, len);
    put_le64(b + H_SEGSIZE, 4095);
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    memcpy(b, orig, len);
    put_le64(b + H_SEGSIZE, (4ull << 30) + 1);
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    /* A huge entry count must not be believed (nor allocated). */
    memcpy(b, orig, len);
    put_le32(b + H_COUNT, UINT32_MAX);
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    free(b);
    free(orig);
}

/* Version 8: an entry's chain flag is for a sealed entry only, no other
 * bit is known, and an entry without the flag holds no chain bytes. */
static void test_chain_flag_and_value_are_checked(void **state)
{
    manifest m;
    size_t len;
    uint8_t *b, *orig;
    const size_t e0 = ENTRIES_OFF, e1 = ENTRIES_OFF + MAN_ENTRY_SIZE;
    (void)state;
    good_manifest(&m);
    orig = encode(&m, &len);
    b = malloc(len);
    assert_non_null(b);
    assert_int_equal(orig[e0 + 9], MAN_ENTRY_CHAINED);
    assert_memory_equal(orig + e0 + 56, good_entries[0].chain, 32);
    memcpy(b, orig, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_OK);
    memcpy(b, orig, len); /* an unknown flag */
    b[e0 + 9] |= 2;
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    memcpy(b, orig, len); /* chain bytes without the flag */
    b[e0 + 9] = 0;
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    memcpy(b, orig, len); /* a chain value on a closed segment */
    b[e1 + 9] = MAN_ENTRY_CHAINED;
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    memcpy(b, orig, len); /* no flag, no chain: valid (not computed yet) */
    b[e0 + 9] = 0;
    memset(b + e0 + 56, 0, 32);
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_OK);
    free(b);
    free(orig);
}

static void test_unknown_kind_is_corrupt(void **state)
{
    manifest m;
    static const uint8_t kinds[] = {0, SEG_ACTIVE + 1, 0x80, 0xff};
    (void)state;
    for (size_t i = 0; i < sizeof kinds; i++) {
        good_manifest(&m);
        m.e[1].kind = kinds[i];
        assert_int_equal(decode_of(&m), CAIRN_ECORRUPT);
    }
    good_manifest(&m);
    assert_int_equal(decode_of(&m), CAIRN_OK);
}

static void test_active_entry_not_last_is_corrupt(void **state)
{
    manifest m;
    (void)state;
    /* An active entry first, before a closed one and the real active one. */
    good_manifest(&m);
    m.e[0].kind = SEG_ACTIVE;
    assert_int_equal(decode_of(&m), CAIRN_ECORRUPT);
    /* Two active entries. */
    good_manifest(&m);
    m.e[0].kind = SEG_ACTIVE;
    m.e[1].kind = SEG_ACTIVE;
    m.n = 2;
    assert_int_equal(decode_of(&m), CAIRN_ECORRUPT);
    /* No active entry at all. */
    good_manifest(&m);
    m.n = 2;
    assert_int_equal(decode_of(&m), CAIRN_ECORRUPT);
    /* An active entry in the middle. */
    good_manifest(&m);
    m.e[1].kind = SEG_ACTIVE;
    assert_int_equal(decode_of(&m), CAIRN_ECORRUPT);
    /* No entries at all. */
    good_manifest(&m);
    m.n = 0;
    assert_int_equal(decode_of(&m), CAIRN_ECORRUPT);
    /* A lone active entry is fine. */
    good_manifest(&m);
    m.e = &m.e[2];
    m.n = 1;
    m.e[0].base_seq = 1;
    assert_int_equal(decode_of(&m), CAIRN_OK);
}

static void test_segment_ids_not_increasing_are_corrupt(void **state)
{
    manifest m;
    (void)state;
    good_manifest(&m);
    m.e[1].id = m.e[0].id; /* equal */
    assert_int_equal(decode_of(&m), CAIRN_ECORRUPT);
    good_manifest(&m);
    m.e[1].id = m.e[0].id - 1; /* decreasing */
    assert_int_equal(decode_of(&m), CAIRN_ECORRUPT);
    good_manifest(&m);
    m.e[2].id = m.next_id; /* not below next_segment_id */
    assert_int_equal(decode_of(&m), CAIRN_ECORRUPT);
    good_manifest(&m);
    m.e[0].id = 0; /* ids start at 1 */
    assert_int_equal(decode_of(&m), CAIRN_ECORRUPT);
}

static void test_sequence_ranges_may_have_gaps_but_never_overlap(void **state)
{
    manifest m;
    (void)state;
    /* A gap between sealed and closed is legal: recovery leaves one where it
     * set damaged records aside, so their numbers are never reused. */
    good_manifest(&m);
    m.e[1].base_seq++;
    m.e[1].count--;
    assert_int_equal(decode_of(&m), CAIRN_OK);
    /* An overlap. */
    good_manifest(&m);
    m.e[1].base_seq--;
    m.e[1].count++;
    assert_int_equal(decode_of(&m), CAIRN_ECORRUPT);
    /* The active segment may start after a gap, never inside the closed one. */
    good_manifest(&m);
    m.e[2].base_seq = m.e[1].last_seq + 2;
    assert_int_equal(decode_of(&m), CAIRN_OK);
    good_manifest(&m);
    m.e[2].base_seq = m.e[1].last_seq;
    assert_int_equal(decode_of(&m), CAIRN_ECORRUPT);
    /* A count that disagrees with the range. */
    good_manifest(&m);
    m.e[0].count = 99;
    assert_int_equal(decode_of(&m), CAIRN_ECORRUPT);
    /* last_seq below base_seq - 1 (the range would wrap). */
    good_manifest(&m);
    m.e[0].base_seq = 10;
    m.e[0].last_seq = 5;
    m.e[0].count = 0;
    m.e[1].base_seq = 6;
    m.e[1].count = 145;
    assert_int_equal(decode_of(&m), CAIRN_ECORRUPT);
    /* ... whereas an empty entry (last_seq = base_seq - 1, count 0) is fine. */
    good_manifest(&m);
    m.e[0].base_seq = 1;
    m.e[0].last_seq = 0;
    m.e[0].count = 0;
    m.e[1].base_seq = 1;
    m.e[1].count = 150;
    assert_int_equal(decode_of(&m), CAIRN_OK);
    /* First timestamp after the last. */
    good_manifest(&m);
    m.e[1].first_ts = m.e[1].last_ts + 1;
    assert_int_equal(decode_of(&m), CAIRN_ECORRUPT);
    /* base_seq 0 (sequence numbers start at 1). */
    good_manifest(&m);
    m.e = &m.e[2];
    m.n = 1;
    m.e[0].base_seq = 0;
    assert_int_equal(decode_of(&m), CAIRN_ECORRUPT);
}

static void test_wrong_length_is_corrupt(void **state)
{
    manifest m;
    size_t len;
    uint8_t *b, *big;
    (void)state;
    good_manifest(&m);
    b = encode(&m, &len);
    /* Every truncation: too short for a header, or not count entries. */
    for (size_t cut = 0; cut < len; cut++)
        if (decode_exact(b, cut, NULL) != CAIRN_ECORRUPT)
            fail_msg("truncated to %zu of %zu bytes: expected CAIRN_ECORRUPT", cut, len);
    /* A whole extra entry the count does not announce, checksum recomputed. */
    big = calloc(1, len + MAN_ENTRY_SIZE);
    assert_non_null(big);
    memcpy(big, b, len - 8);
    memcpy(big + len - 8 + MAN_ENTRY_SIZE, b + len - 8, 8);
    reseal(big, len + MAN_ENTRY_SIZE);
    assert_int_equal(decode_exact(big, len + MAN_ENTRY_SIZE, NULL), CAIRN_ECORRUPT);
    /* One trailing byte. */
    memcpy(big, b, len);
    big[len] = 0;
    assert_int_equal(decode_exact(big, len + 1, NULL), CAIRN_ECORRUPT);
    /* A count one short of the entries present. */
    memcpy(big, b, len);
    put_le32(big + H_COUNT, 2);
    reseal(big, len);
    assert_int_equal(decode_exact(big, len, NULL), CAIRN_ECORRUPT);
    free(big);
    free(b);
}

static void test_write_then_read_round_trips_and_leaves_no_temp(void **state)
{
    char *dir = *state, *path;
    manifest m, got;
    cairn__err e;
    int dfd;
    assert_non_null(dir);
    dfd = open_dir(dir);
    good_manifest(&m);
    assert_int_equal(cairn__manifest_write(cairn_io_default(), dfd, &m, NULL, &e), CAIRN_OK);
    assert_int_equal(cairn__manifest_read(cairn_io_default(), dfd, NULL, &got, &e), CAIRN_OK);
    assert_same_manifest(&m, &got);
    cairn__manifest_free(NULL, &got);
    /* The file holds exactly the encoding. */
    path = tu_join(dir, MANIFEST_NAME);
    assert_int_equal(tu_file_size(path), ENTRIES_OFF + 3 * MAN_ENTRY_SIZE + 8);
    free(path);
    path = tu_join(dir, MANIFEST_TMP);
    assert_int_equal(access(path, F_OK), -1);
    free(path);

    /* A second write replaces the first whole. */
    m.generation++;
    m.n = 1;
    m.e = &m.e[2];
    m.e[0].base_seq = 1;
    assert_int_equal(cairn__manifest_write(cairn_io_default(), dfd, &m, NULL, &e), CAIRN_OK);
    assert_int_equal(cairn__manifest_read(cairn_io_default(), dfd, NULL, &got, &e), CAIRN_OK);
    assert_same_manifest(&m, &got);
    cairn__manifest_free(NULL, &got);
    path = tu_join(dir, MANIFEST_TMP);
    assert_int_equal(access(path, F_OK), -1);
    free(path);
    close(dfd);
}

static void test_read_of_missing_manifest_is_not_found(void **state)
{
    char *dir = *state;
    manifest got;
    cairn__err e;
    int dfd;
    assert_non_null(dir);
    dfd = open_dir(dir);
    assert_int_equal(cairn__manifest_read(cairn_io_default(), dfd, NULL, &got, &e),
                     CAIRN_ENOTFOUND);
    close(dfd);
}

static void test_read_reports_a_damaged_file(void **state)
{
    char *dir = *state, *path;
    manifest m, got;
    cairn__err e;
    uint8_t *b;
    size_t len;
    int dfd;
    assert_non_null(dir);
    dfd = open_dir(dir);
    good_manifest(&m);
    assert_int_equal(cairn__manifest_write(cairn_io_default(), dfd, &m, NULL, &e), CAIRN_OK);
    path = tu_join(dir, MANIFEST_NAME);
    b = tu_read_file(path, &len);
    assert_non_null(b);
    /* A flipped entry byte on disk: checksum error through read. */
    b[ENTRIES_OFF + 20] ^= 1;
    assert_int_equal(tu_write_file(path, b, len), 0);
    assert_int_equal(cairn__manifest_read(cairn_io_default(), dfd, NULL, &got, &e),
                     CAIRN_ECHECKSUM);
    /* A torn file: corrupt. */
    b[ENTRIES_OFF + 20] ^= 1;
    assert_int_equal(tu_write_file(path, b, len - 1), 0);
    assert_int_equal(cairn__manifest_read(cairn_io_default(), dfd, NULL, &got, &e),
                     CAIRN_ECORRUPT);
    /* An empty file: corrupt. */
    assert_int_equal(tu_write_file(path, b, 0), 0);
    assert_int_equal(cairn__manifest_read(cairn_io_default(), dfd, NULL, &got, &e),
                     CAIRN_ECORRUPT);
    free(b);
    free(path);
    close(dfd);
}

/* Version 2 names the store: an id of all zeros is never written (a
 * writer draws 128 random bits), so reading one is corruption. */
static void test_a_zero_store_id_is_corrupt(void **state)
{
    manifest m;
    size_t len;
    uint8_t *b, *out = NULL;
    cairn__err e;
    (void)state;
    good_manifest(&m);
    b = encode(&m, &len);
    memset(b + FILEHDR_SIZE, 0, MAN_STORE_ID_LEN);
    reseal(b, len);
    e.msg[0] = '\0';
    assert_int_equal(decode_exact(b, len, &e), CAIRN_ECORRUPT);
    assert_non_null(strstr(e.msg, "store id"));
    free(b);
    /* and the encoder never writes one */
    memset(m.store_id, 0, sizeof m.store_id);
    assert_int_equal(cairn__manifest_encode(&m, NULL, &out, &len), CAIRN_EINVAL);
    assert_null(out);
}

/* What a MANIFEST before version 8 cannot say: no chain values. */
static void as_before_version_8(manifest *m)
{
    for (size_t i = 0; i < m->n; i++) {
        m->e[i].chained = 0;
        memset(m->e[i].chain, 0, sizeof m->e[i].chain);
    }
}

/* A version 1 MANIFEST (no store block) still decodes: no id, no synced
 * seq; the entries right after the header. */
static void test_a_version_1_manifest_still_decodes(void **state)
{
    manifest m, got;
    size_t len, len1;
    uint8_t *b, *v1;
    cairn__err e;
    (void)state;
    good_manifest(&m);
    b = encode(&m, &len);
    v1 = tu_manifest_as_version(b, len, 1, &len1);
    assert_int_equal(len1, len - MAN_STORE_BLOCK - m.n * (MAN_ENTRY_SIZE - MAN_ENTRY_SIZE_V7));
    as_before_version_8(&m);
    as_before_version_4(&m);
    assert_int_equal(cairn__manifest_decode(v1, len1, NULL, &got, &e), CAIRN_OK);
    assert_int_equal(got.version, 1);
    assert_true(cairn__store_id_is_zero(got.store_id));
    assert_int_equal(got.synced_seq, 0);
    memset(m.store_id, 0, sizeof m.store_id);
    m.synced_seq = 0;
    m.lost_total = 0;
    m.max_memories = MAN_DEFAULT_MAX_MEMORIES; /* what the engine applied then */
    assert_same_manifest(&m, &got);
    cairn__manifest_free(NULL, &got);
    /* The version-2 length under version 1 is a wrong length. */
    put_le16(b + 8, 1);
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    free(v1);
    free(b);
}

/* A version 2 MANIFEST (a 32-byte store block, no max_memories) still
 * decodes, with the limit the memory engine applied before the setting:
 * 10000. Its length in version 3 is a wrong length, and the other way. */
static void test_a_version_2_manifest_decodes_with_the_old_limit(void **state)
{
    manifest m, got;
    size_t len, len2;
    uint8_t *b, *v2;
    cairn__err e;
    (void)state;
    good_manifest(&m);
    m.max_memories = 0; /* "no limit" must not survive into version 2 */
    b = encode(&m, &len);
    v2 = tu_manifest_as_version(b, len, 2, &len2);
    assert_int_equal(len2, len - (MAN_STORE_BLOCK - MAN_STORE_BLOCK_V2) -
                               m.n * (MAN_ENTRY_SIZE - MAN_ENTRY_SIZE_V7));
    as_before_version_8(&m);
    as_before_version_4(&m);
    assert_int_equal(cairn__manifest_decode(v2, len2, NULL, &got, &e), CAIRN_OK);
    assert_int_equal(got.version, 2);
    assert_int_equal(got.max_memories, 10000);
    m.max_memories = 10000;
    assert_same_manifest(&m, &got);
    cairn__manifest_free(NULL, &got);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_OK);
    put_le16(b + 8, 2); /* a version 4 body under version 2 */
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    put_le16(v2 + 8, 4); /* and the other way */
    reseal(v2, len2);
    assert_int_equal(decode_exact(v2, len2, NULL), CAIRN_ECORRUPT);
    free(v2);
    free(b);
}

/* A version 4 MANIFEST (no deaths_dropped) still decodes: none known. */
static void test_a_version_4_manifest_decodes_without_deaths_dropped(void **state)
{
    manifest m, got;
    size_t len, len4;
    uint8_t *b, *v4;
    cairn__err e;
    (void)state;
    good_manifest(&m);
    b = encode(&m, &len);
    v4 = tu_manifest_as_version(b, len, 4, &len4);
    assert_int_equal(len4, len - (MAN_STORE_BLOCK - MAN_STORE_BLOCK_V4) -
                               m.n * (MAN_ENTRY_SIZE - MAN_ENTRY_SIZE_V7));
    as_before_version_8(&m);
    assert_int_equal(cairn__manifest_decode(v4, len4, NULL, &got, &e), CAIRN_OK);
    assert_int_equal(got.version, 4);
    m.deaths_dropped = 0;
    assert_same_manifest(&m, &got);
    cairn__manifest_free(NULL, &got);
    free(v4);
    free(b);
}

/* max_memories sits at offset 96 (store block + 32), little-endian. */
static void test_max_memories_is_stored_at_its_offset(void **state)
{
    manifest m, got;
    size_t len;
    uint8_t *b;
    cairn__err e;
    (void)state;
    good_manifest(&m);
    m.max_memories = 0x0102030405060708ull;
    b = encode(&m, &len);
    assert_int_equal(get_le64(b + FILEHDR_SIZE + 32), 0x0102030405060708ull);
    put_le64(b + FILEHDR_SIZE + 32, 0); /* 0: no limit */
    reseal(b, len);
    assert_int_equal(cairn__manifest_decode(b, len, NULL, &got, &e), CAIRN_OK);
    assert_int_equal(got.max_memories, 0);
    cairn__manifest_free(NULL, &got);
    free(b);
}

/* A rev on an entry that is not sealed, a policy past LIVE, a grace past
 * 2^53 or with ALL, reserved bytes of the retention, a dropped_upto or
 * deaths_dropped of 2^62: each is CAIRN_ECORRUPT. */
/* Version 6's label rule and tier settings: kept by a round trip; a rule
 * or a setting out of range is corruption. */
static void test_label_rule_and_tier_settings(void **state)
{
    manifest m, got;
    size_t len;
    uint8_t *b, *orig;
    const size_t blk = FILEHDR_SIZE;
    static const struct {
        size_t off;
        uint32_t v;
    } bad[] = {{88, 0}, {88, 3}, {92, 0}, {96, 0}, {100, 0}, {100, 9001}, {92, MAN_TIER_MAX + 1}};
    cairn__err e;
    (void)state;
    good_manifest(&m);
    m.label_rule = MAN_LABELS_EXACT;
    m.reflect_threshold = 40;
    m.core_budget = 9000;
    m.core_section_budget = 3000;
    orig = encode(&m, &len);
    assert_int_equal(cairn__manifest_decode(orig, len, NULL, &got, &e), CAIRN_OK);
    assert_int_equal(got.label_rule, MAN_LABELS_EXACT);
    assert_int_equal(got.reflect_threshold, 40);
    assert_int_equal(got.core_budget, 9000);
    assert_int_equal(got.core_section_budget, 3000);
    cairn__manifest_free(NULL, &got);
    b = malloc(len);
    assert_non_null(b);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memcpy(b, orig, len);
        put_le32(b + blk + bad[i].off, bad[i].v);
        reseal(b, len);
        assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    }
    free(b);
    free(orig);
}

static void test_bad_retention_and_rev_are_corrupt(void **state)
{
    manifest m;
    size_t len;
    uint8_t *b, *orig;
    const size_t blk = FILEHDR_SIZE;
    (void)state;
    good_manifest(&m);
    orig = encode(&m, &len);
    b = malloc(len);
    assert_non_null(b);
    assert_int_equal(decode_exact(orig, len, NULL), CAIRN_OK);
    memcpy(b, orig, len);
    put_le32(b + ENTRIES_OFF + MAN_ENTRY_SIZE + 12, 1); /* the closed entry */
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    memcpy(b, orig, len);
    put_le32(b + blk + 40, 2);
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    memcpy(b, orig, len);
    put_le32(b + blk + 44, 1);
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    memcpy(b, orig, len);
    put_le64(b + blk + 48, CAIRN_RETAIN_GRACE_MAX + 1);
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    memcpy(b, orig, len);
    put_le32(b + blk + 40, CAIRN_RETAIN_ALL); /* all, with a grace */
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    memcpy(b, orig, len);
    put_le64(b + blk + 56, MAN_SEQ_MAX);
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    memcpy(b, orig, len);
    put_le64(b + blk + 80, MAN_SEQ_MAX); /* deaths_dropped */
    reseal(b, len);
    assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    for (size_t at = 64; at <= 72; at += 8) { /* the event limits */
        memcpy(b, orig, len);
        put_le64(b + blk + at, CAIRN_RETAIN_GRACE_MAX + 1);
        reseal(b, len);
        assert_int_equal(decode_exact(b, len, NULL), CAIRN_ECORRUPT);
    }
    free(b);
    free(orig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_zero_store_id_is_corrupt),
        cmocka_unit_test(test_a_version_1_manifest_still_decodes),
        cmocka_unit_test(test_chain_flag_and_value_are_checked),
        cmocka_unit_test(test_bad_retention_and_rev_are_corrupt),
        cmocka_unit_test(test_label_rule_and_tier_settings),
        cmocka_unit_test(test_a_version_2_manifest_decodes_with_the_old_limit),
        cmocka_unit_test(test_a_version_4_manifest_decodes_without_deaths_dropped),
        cmocka_unit_test(test_max_memories_is_stored_at_its_offset),
        cmocka_unit_test(test_round_trip_keeps_every_field),
        cmocka_unit_test(test_round_trip_of_a_lone_active_entry_and_extreme_values),
        cmocka_unit_test(test_copy_is_deep_and_equal),
        cmocka_unit_test(test_bad_magic_is_corrupt),
        cmocka_unit_test(test_newer_version_is_version_error),
        cmocka_unit_test(test_bad_header_length_or_flags_is_corrupt),
        cmocka_unit_test(test_header_checksum_mismatch_is_checksum_error),
        cmocka_unit_test(test_trailer_checksum_mismatch_is_checksum_error),
        cmocka_unit_test(test_every_single_bit_flip_is_rejected),
        cmocka_unit_test(test_nonzero_reserved_bytes_are_corrupt),
        cmocka_unit_test(test_bad_settings_are_corrupt),
        cmocka_unit_test(test_unknown_kind_is_corrupt),
        cmocka_unit_test(test_active_entry_not_last_is_corrupt),
        cmocka_unit_test(test_segment_ids_not_increasing_are_corrupt),
        cmocka_unit_test(test_sequence_ranges_may_have_gaps_but_never_overlap),
        cmocka_unit_test(test_wrong_length_is_corrupt),
#define DIR_TEST(name) cmocka_unit_test_setup_teardown(name, dir_setup, dir_teardown)
        DIR_TEST(test_write_then_read_round_trips_and_leaves_no_temp),
        DIR_TEST(test_read_of_missing_manifest_is_not_found),
        DIR_TEST(test_read_reports_a_damaged_file),
#undef DIR_TEST
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
