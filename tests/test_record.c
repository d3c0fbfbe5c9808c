/*
 * test_record.c - one log record (format-spec/record.md): cairn__record_size,
 * cairn__record_encode and cairn__record_decode, and the record type names.
 *
 * Every decode runs on a heap buffer of exactly `avail` bytes, so a read
 * past the end is a heap overflow that the ASan build reports. Expected
 * checksums are computed here with XXH3 directly, never taken from the
 * encoder.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bytes.h"
#include "cairn.h"
#include "record.h"
#include "testutil.h"

#define SALT 0x5a17c0ffee123457ull

/* A heap copy of exactly len bytes (len 0 still gives a valid pointer). */
static uint8_t *dup_exact(const uint8_t *src, size_t len)
{
    uint8_t *p = malloc(len ? len : 1);
    assert_non_null(p);
    if (len)
        memcpy(p, src, len);
    return p;
}

/* Encode e into a fresh buffer of exactly its size. */
static uint8_t *encode(const cairn_entry *e, uint64_t seq, int64_t ts, uint64_t salt,
                       size_t *len)
{
    uint8_t *buf;
    assert_int_equal(cairn__record_size(e, len), CAIRN_OK);
    buf = malloc(*len);
    assert_non_null(buf);
    cairn__record_encode(buf, e, seq, ts, salt);
    return buf;
}

/* Decode buf[0, avail) from an exact-size heap copy. */
static rec_result decode_exact(const uint8_t *buf, size_t avail, uint64_t salt,
                               cairn_record *rec, size_t *len)
{
    uint8_t *copy = dup_exact(buf, avail);
    rec_result r = cairn__record_decode(copy, avail, salt, rec, len);
    free(copy);
    return r;
}

/* Recompute the trailing checksum of a record the way the spec says. */
static void reseal(uint8_t *buf, size_t len, uint64_t salt)
{
    put_le64(buf + len - 8, XXH3_64bits_withSeed(buf, len - 8, salt));
}

/* Encode, decode and check every field against the entry. */
static void check_round_trip(const cairn_entry *e, uint64_t seq, int64_t ts, uint64_t salt)
{
    size_t len, got_len = 0;
    uint8_t *buf = encode(e, seq, ts, salt, &len);
    cairn_record r;

    assert_int_equal(len, REC_OVERHEAD + e->ns_len + e->json_len + e->bin_len);
    assert_int_equal(get_le32(buf + REC_OFF_LEN), len);
    assert_int_equal(get_le32(buf + REC_OFF_EPOCH), (uint32_t)salt);
    assert_int_equal(get_le64(buf + len - 8), XXH3_64bits_withSeed(buf, len - 8, salt));

    memset(&r, 0xa5, sizeof r);
    assert_int_equal(cairn__record_decode(buf, len, salt, &r, &got_len), REC_OK);
    assert_int_equal(got_len, len);
    assert_int_equal(r.seq, seq);
    assert_true(r.ts_ms == ts);
    assert_int_equal(r.type, e->type);
    assert_int_equal(r.ns_len, e->ns_len);
    assert_int_equal(r.json_len, e->json_len);
    assert_int_equal(r.bin_len, e->bin_len);
    if (e->ns_len)
        assert_memory_equal(r.ns, e->ns, e->ns_len);
    if (e->json_len)
        assert_memory_equal(r.json, e->json, e->json_len);
    if (e->bin_len)
        assert_memory_equal(r.bin, e->bin, e->bin_len);
    /* The decoded pointers lie inside the record. */
    assert_true((const uint8_t *)r.ns >= buf && (const uint8_t *)r.ns + r.ns_len <= buf + len);
    assert_true((const uint8_t *)r.json >= buf &&
                (const uint8_t *)r.json + r.json_len <= buf + len);
    assert_true((const uint8_t *)r.bin >= buf &&
                (const uint8_t *)r.bin + r.bin_len <= buf + len - 8);
    free(buf);
}

/* A record with a namespace, a payload and a binary trailer. */
static uint8_t *sample_record(size_t *len)
{
    static const char ns[] = "agent/alpha";
    static const char json[] = "{\"k\":\"value\",\"n\":12}";
    static const uint8_t bin[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    cairn_entry e = {CAIRN_REC_EVENT, ns, sizeof ns - 1, json, sizeof json - 1, bin, sizeof bin};
    return encode(&e, 77, 1700000000555ll, SALT, len);
}

/* ------------------------------------------------------------------------ */

static void test_round_trip_keeps_every_field(void **state)
{
    static const char ns[] = "agent/alpha";
    static const char json[] = "{\"msg\":\"hello\",\"x\":[1,2,3]}";
    uint8_t bin[256];
    (void)state;
    for (unsigned i = 0; i < sizeof bin; i++)
        bin[i] = (uint8_t)i;
    cairn_entry e = {CAIRN_REC_EVENT, ns, sizeof ns - 1, json, sizeof json - 1, bin, sizeof bin};
    check_round_trip(&e, 1, 1700000000123ll, SALT);
    /* Extreme header values survive. */
    e.type = 0xffff;
    check_round_trip(&e, UINT64_MAX, INT64_MAX, SALT);
    e.type = CAIRN_REC_USER_MIN;
    check_round_trip(&e, 2, INT64_MIN, 0);
    check_round_trip(&e, 3, -1, UINT64_MAX);
}

static void test_round_trip_with_empty_ns_json_and_bin(void **state)
{
    static const char json[] = "{}";
    static const uint8_t bin[3] = {0, 0xff, 0};
    (void)state;
    /* All empty, with NULL pointers. */
    cairn_entry e = {CAIRN_REC_EVENT, NULL, 0, NULL, 0, NULL, 0};
    check_round_trip(&e, 5, 0, SALT);
    /* Only a payload. */
    e.json = json;
    e.json_len = 2;
    check_round_trip(&e, 6, 1, SALT);
    /* Only a binary trailer (empty namespace given as a non-NULL ""). */
    e.ns = "";
    e.json = NULL;
    e.json_len = 0;
    e.bin = bin;
    e.bin_len = sizeof bin;
    check_round_trip(&e, 7, 2, SALT);
}

static void test_round_trip_with_namespace_of_max_length(void **state)
{
    char ns[CAIRN_NS_MAX];
    (void)state;
    for (size_t i = 0; i < sizeof ns; i++)
        ns[i] = (char)('a' + i % 26);
    cairn_entry e = {CAIRN_REC_EVENT, ns, CAIRN_NS_MAX, "{}", 2, NULL, 0};
    check_round_trip(&e, 9, 10, SALT);
}

static void test_record_of_exactly_max_size_round_trips(void **state)
{
    size_t json_len = CAIRN_RECORD_MAX - REC_OVERHEAD - 3 - 5, size = 0;
    char *json = malloc(json_len);
    static const uint8_t bin[5] = {9, 8, 7, 6, 5};
    (void)state;
    assert_non_null(json);
    for (size_t i = 0; i < json_len; i++)
        json[i] = (char)('0' + i % 10);
    cairn_entry e = {CAIRN_REC_EVENT, "abc", 3, json, json_len, bin, sizeof bin};
    assert_int_equal(cairn__record_size(&e, &size), CAIRN_OK);
    assert_int_equal(size, CAIRN_RECORD_MAX);
    check_round_trip(&e, 11, 12, SALT);
    /* One byte more is too big. */
    e.json_len++;
    size = 12345;
    assert_int_equal(cairn__record_size(&e, &size), CAIRN_ETOOBIG);
    free(json);
}

static void test_size_refuses_bad_entries(void **state)
{
    char ns[CAIRN_NS_MAX + 1];
    size_t size;
    (void)state;
    memset(ns, 'n', sizeof ns);
    cairn_entry e = {CAIRN_REC_EVENT, ns, CAIRN_NS_MAX + 1, "{}", 2, NULL, 0};
    assert_int_equal(cairn__record_size(&e, &size), CAIRN_EINVAL);
    e.ns_len = CAIRN_NS_MAX;
    assert_int_equal(cairn__record_size(&e, &size), CAIRN_OK);
    e.type = 0;
    assert_int_equal(cairn__record_size(&e, &size), CAIRN_EINVAL);
    e.type = 1;
    /* A length with no bytes behind it. */
    e.ns = NULL;
    assert_int_equal(cairn__record_size(&e, &size), CAIRN_EINVAL);
    e.ns = ns;
    e.json = NULL;
    assert_int_equal(cairn__record_size(&e, &size), CAIRN_EINVAL);
    e.json = "{}";
    e.bin_len = 4;
    assert_int_equal(cairn__record_size(&e, &size), CAIRN_EINVAL);
}

static void test_size_refuses_too_big_without_overflow(void **state)
{
    static const char dummy[1] = {0};
    size_t size = 0;
    (void)state;
    /* The pointers are never read by cairn__record_size: only lengths. */
    cairn_entry e = {CAIRN_REC_EVENT, NULL, 0, dummy, CAIRN_RECORD_MAX, NULL, 0};
    assert_int_equal(cairn__record_size(&e, &size), CAIRN_ETOOBIG);
    e.json_len = CAIRN_RECORD_MAX - REC_OVERHEAD + 1;
    assert_int_equal(cairn__record_size(&e, &size), CAIRN_ETOOBIG);
    e.json_len = CAIRN_RECORD_MAX - REC_OVERHEAD;
    assert_int_equal(cairn__record_size(&e, &size), CAIRN_OK);
    assert_int_equal(size, CAIRN_RECORD_MAX);
    /* Lengths that would wrap a size_t sum must not come out small. */
    e.json_len = SIZE_MAX - 10;
    assert_int_equal(cairn__record_size(&e, &size), CAIRN_ETOOBIG);
    e.json_len = 10;
    e.bin = dummy;
    e.bin_len = SIZE_MAX - REC_OVERHEAD - 5;
    assert_int_equal(cairn__record_size(&e, &size), CAIRN_ETOOBIG);
    e.json_len = SIZE_MAX / 2 + 1;
    e.bin_len = SIZE_MAX / 2 + 1;
    assert_int_equal(cairn__record_size(&e, &size), CAIRN_ETOOBIG);
}

static void test_every_truncation_is_torn_or_end(void **state)
{
    size_t len, got;
    uint8_t *buf = sample_record(&len);
    cairn_record r;
    (void)state;
    for (size_t cut = 0; cut < len; cut++) {
        rec_result want = cut < 4 ? REC_END : REC_TRUNCATED;
        assert_int_equal(decode_exact(buf, cut, SALT, &r, &got), want);
    }
    assert_int_equal(decode_exact(buf, len, SALT, &r, &got), REC_OK);
    free(buf);
}

static void test_zero_length_is_clean_end(void **state)
{
    uint8_t zeros[64];
    size_t got;
    cairn_record r;
    (void)state;
    memset(zeros, 0, sizeof zeros);
    for (size_t avail = 4; avail <= sizeof zeros; avail += 30)
        assert_int_equal(decode_exact(zeros, avail, SALT, &r, &got), REC_END);
    /* A zero length followed by non-zero garbage is still the end. */
    zeros[10] = 0x77;
    assert_int_equal(decode_exact(zeros, sizeof zeros, SALT, &r, &got), REC_END);
}

static void test_length_out_of_range_is_bad_len_without_overread(void **state)
{
    size_t len, got;
    uint8_t *buf = sample_record(&len);
    static const uint32_t bad[] = {1, 4, 39, CAIRN_RECORD_MAX + 1, 0x7fffffffu, 0xffffffffu};
    cairn_record r;
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        put_le32(buf, bad[i]);
        /* Whatever the buffer holds after the length: only 4..len bytes given. */
        assert_int_equal(decode_exact(buf, 4, SALT, &r, &got), REC_BAD_LEN);
        assert_int_equal(decode_exact(buf, len, SALT, &r, &got), REC_BAD_LEN);
    }
    /* The smallest legal length is 40: an empty record. */
    put_le32(buf, REC_OVERHEAD);
    assert_int_not_equal(decode_exact(buf, len, SALT, &r, &got), REC_BAD_LEN);
    free(buf);
}

static void test_wrong_salt_is_bad_epoch(void **state)
{
    size_t len, got;
    uint8_t *buf = sample_record(&len);
    cairn_record r;
    (void)state;
    assert_int_equal(decode_exact(buf, len, SALT ^ 1u, &r, &got), REC_BAD_EPOCH);
    assert_int_equal(decode_exact(buf, len, SALT ^ 0x80000000u, &r, &got), REC_BAD_EPOCH);
    assert_int_equal(decode_exact(buf, len, 0, &r, &got), REC_BAD_EPOCH);
    /* Same low half, other high half: the epoch passes, the seeded checksum does not. */
    assert_int_equal(decode_exact(buf, len, SALT ^ (1ull << 63), &r, &got), REC_BAD_SUM);
    free(buf);
}

static void test_every_single_bit_flip_is_rejected(void **state)
{
    size_t len, got;
    uint8_t *buf = sample_record(&len);
    cairn_record r;
    (void)state;
    for (size_t i = 0; i < len; i++) {
        for (unsigned bit = 0; bit < 8; bit++) {
            rec_result res;
            buf[i] ^= (uint8_t)(1u << bit);
            res = decode_exact(buf, len, SALT, &r, &got);
            if (res == REC_OK)
                fail_msg("bit %u of byte %zu flipped, record still decodes", bit, i);
            buf[i] ^= (uint8_t)(1u << bit);
        }
    }
    assert_int_equal(decode_exact(buf, len, SALT, &r, &got), REC_OK);
    free(buf);
}

static void test_flipped_payload_byte_is_bad_sum(void **state)
{
    size_t len, got;
    uint8_t *buf = sample_record(&len);
    cairn_record r;
    (void)state;
    /* Bytes past the length and epoch fields: only the checksum can tell. */
    for (size_t i = REC_OFF_SEQ; i < len; i++) {
        buf[i] ^= 0x10;
        assert_int_equal(decode_exact(buf, len, SALT, &r, &got), REC_BAD_SUM);
        buf[i] ^= 0x10;
    }
    free(buf);
}

static void test_inconsistent_fields_with_valid_checksum_are_bad_field(void **state)
{
    size_t len, got;
    uint8_t *orig = sample_record(&len), *buf = malloc(len);
    cairn_record r;
    (void)state;
    assert_non_null(buf);
    struct {
        size_t off, width;
        uint64_t value;
    } cases[] = {
        {REC_OFF_NSLEN, 2, CAIRN_NS_MAX + 1},          /* namespace too long */
        {REC_OFF_NSLEN, 2, 0xffff},                    /* and past the record */
        {REC_OFF_JSONLEN, 4, 0},                       /* placeholder: set below */
        {REC_OFF_JSONLEN, 4, 0xffffffffu},             /* must not wrap in 32 bits */
        {REC_OFF_TYPE, 2, 0},                          /* type 0 */
        {REC_OFF_SEQ, 8, 0},                           /* seq 0 */
    };
    /* ns_len + json_len + 40 == len + 1: one byte too many. */
    cases[2].value = len - REC_OVERHEAD - get_le16(orig + REC_OFF_NSLEN) + 1;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(buf, orig, len);
        if (cases[i].width == 2)
            put_le16(buf + cases[i].off, (uint16_t)cases[i].value);
        else if (cases[i].width == 4)
            put_le32(buf + cases[i].off, (uint32_t)cases[i].value);
        else
            put_le64(buf + cases[i].off, cases[i].value);
        /* Without a new checksum it is a checksum error ... */
        assert_int_equal(decode_exact(buf, len, SALT, &r, &got), REC_BAD_SUM);
        /* ... with one, the field check is what fires. */
        reseal(buf, len, SALT);
        if (decode_exact(buf, len, SALT, &r, &got) != REC_BAD_FIELD)
            fail_msg("case %zu: expected REC_BAD_FIELD", i);
    }
    /* Shrinking json_len so that the rest becomes bin is consistent: OK. */
    memcpy(buf, orig, len);
    put_le32(buf + REC_OFF_JSONLEN, get_le32(orig + REC_OFF_JSONLEN) - 1);
    reseal(buf, len, SALT);
    assert_int_equal(decode_exact(buf, len, SALT, &r, &got), REC_OK);
    assert_int_equal(r.bin_len, len - REC_OVERHEAD - r.ns_len - r.json_len);
    free(buf);
    free(orig);
}

static void test_decode_stops_at_the_records_own_length(void **state)
{
    size_t l1, l2, got = 0;
    uint8_t *a = sample_record(&l1);
    cairn_entry e = {0x8001u, "b", 1, "[]", 2, NULL, 0};
    uint8_t *b = encode(&e, 78, 1700000000556ll, SALT, &l2);
    uint8_t *both = malloc(l1 + l2);
    cairn_record r;
    (void)state;
    assert_non_null(both);
    memcpy(both, a, l1);
    memcpy(both + l1, b, l2);
    assert_int_equal(decode_exact(both, l1 + l2, SALT, &r, &got), REC_OK);
    assert_int_equal(got, l1);
    assert_int_equal(r.seq, 77);
    assert_int_equal(cairn__record_decode(both + l1, l2, SALT, &r, &got), REC_OK);
    assert_int_equal(got, l2);
    assert_int_equal(r.seq, 78);
    assert_int_equal(r.type, 0x8001u);
    /* A torn second record after a whole first one. */
    assert_int_equal(decode_exact(both + l1, l2 - 1, SALT, &r, &got), REC_TRUNCATED);
    free(both);
    free(a);
    free(b);
}

static void test_result_strings_are_distinct(void **state)
{
    (void)state;
    for (int i = REC_OK; i <= REC_BAD_FIELD; i++) {
        const char *s = cairn__record_result_str((rec_result)i);
        assert_non_null(s);
        assert_true(strlen(s) > 0);
        for (int j = REC_OK; j < i; j++)
            assert_string_not_equal(s, cairn__record_result_str((rec_result)j));
    }
}

static void test_type_name_names_known_types_only(void **state)
{
    (void)state;
    assert_non_null(cairn_record_type_name(CAIRN_REC_EVENT));
    assert_string_equal(cairn_record_type_name(CAIRN_REC_EVENT), "event");
    assert_null(cairn_record_type_name(0));
    assert_null(cairn_record_type_name(CAIRN_REC_USER_MIN));
    assert_null(cairn_record_type_name(0xffff));
}

static void test_type_parse_round_trips_names_and_numbers(void **state)
{
    uint16_t t = 0;
    char num[16];
    (void)state;
    /* Every named type parses back to itself. */
    for (unsigned v = 1; v <= 0xffff; v++) {
        const char *n = cairn_record_type_name((uint16_t)v);
        if (n == NULL)
            continue;
        t = 0;
        assert_int_equal(cairn_record_type_parse(n, &t), CAIRN_OK);
        assert_int_equal(t, v);
    }
    static const unsigned nums[] = {1, 2, 9, 10, 0x7fff, 0x8000, 0x8001, 65535};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        snprintf(num, sizeof num, "%u", nums[i]);
        t = 0;
        assert_int_equal(cairn_record_type_parse(num, &t), CAIRN_OK);
        assert_int_equal(t, nums[i]);
    }
}

static void test_type_parse_refuses_invalid_input(void **state)
{
    static const char *const bad[] = {"",      "0",     "65536", "99999999999999999999999",
                                      "-1",    "+1",    " 1",    "1 ",
                                      "12a",   "0x10",  "Event", "events",
                                      "1.0"};
    uint16_t t = 4242;
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (cairn_record_type_parse(bad[i], &t) != CAIRN_EINVAL)
            fail_msg("cairn_record_type_parse(\"%s\") was accepted", bad[i]);
    assert_int_equal(cairn_record_type_parse(NULL, &t), CAIRN_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_keeps_every_field),
        cmocka_unit_test(test_round_trip_with_empty_ns_json_and_bin),
        cmocka_unit_test(test_round_trip_with_namespace_of_max_length),
        cmocka_unit_test(test_record_of_exactly_max_size_round_trips),
        cmocka_unit_test(test_size_refuses_bad_entries),
        cmocka_unit_test(test_size_refuses_too_big_without_overflow),
        cmocka_unit_test(test_every_truncation_is_torn_or_end),
        cmocka_unit_test(test_zero_length_is_clean_end),
        cmocka_unit_test(test_length_out_of_range_is_bad_len_without_overread),
        cmocka_unit_test(test_wrong_salt_is_bad_epoch),
        cmocka_unit_test(test_every_single_bit_flip_is_rejected),
        cmocka_unit_test(test_flipped_payload_byte_is_bad_sum),
        cmocka_unit_test(test_inconsistent_fields_with_valid_checksum_are_bad_field),
        cmocka_unit_test(test_decode_stops_at_the_records_own_length),
        cmocka_unit_test(test_result_strings_are_distinct),
        cmocka_unit_test(test_type_name_names_known_types_only),
        cmocka_unit_test(test_type_parse_round_trips_names_and_numbers),
        cmocka_unit_test(test_type_parse_refuses_invalid_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
