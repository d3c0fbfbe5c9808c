/*
 * fuzz_record.c - cairn__record_decode() over a buffer of records back to
 * back, decoded one after another as a segment scan does, with the fixed
 * salt FUZZ_RECORD_SALT. Input: the bytes of a segment body (no header).
 *
 * Invariants: on REC_OK the record lies inside the bytes left and encodes
 * back to the same bytes (fuzz_check_record); every other result agrees
 * with what the length field says (REC_END, REC_TRUNCATED, REC_BAD_LEN);
 * decoding is deterministic. Run as given and with checksums repaired.
 */
#include "fuzz.h"

static void scan(const uint8_t *buf, size_t size, uint64_t salt)
{
    size_t pos = 0;

    for (;;) {
        cairn_record rec, rec2;
        size_t len = 0, len2 = 0, avail = size - pos;
        rec_result r = cairn__record_decode(buf + pos, avail, salt, &rec, &len);
        rec_result r2 = cairn__record_decode(buf + pos, avail, salt, &rec2, &len2);

        FUZZ_CHECK(r == r2);
        FUZZ_CHECK(cairn__record_result_str(r) != NULL);
        if (r != REC_OK) {
            uint32_t lf = avail >= 4 ? get_le32(buf + pos) : 0;
            if (r == REC_END)
                FUZZ_CHECK(avail < 4 || lf == 0);
            else if (r == REC_TRUNCATED)
                FUZZ_CHECK(lf > avail && lf >= REC_OVERHEAD && lf <= CAIRN_RECORD_MAX);
            else if (r == REC_BAD_LEN)
                FUZZ_CHECK(lf != 0 && (lf < REC_OVERHEAD || lf > CAIRN_RECORD_MAX));
            else
                FUZZ_CHECK(lf >= REC_OVERHEAD && lf <= avail);
            return;
        }
        FUZZ_CHECK(len2 == len && rec2.seq == rec.seq && rec2.ns == rec.ns);
        fuzz_check_record(buf + pos, avail, salt, &rec, len);
        /* Same epoch, other salt: the seeded checksum must reject it. */
        FUZZ_CHECK(cairn__record_decode(buf + pos, avail, salt ^ (1ull << 32), &rec2, &len2) ==
                   REC_BAD_SUM);
        pos += len;
        FUZZ_CHECK(pos <= size);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = fuzz_dup(data, size);

    if (buf == NULL)
        return 0;
    scan(buf, size, FUZZ_RECORD_SALT);
    fuzz_fix_records(buf, size, FUZZ_RECORD_SALT);
    scan(buf, size, FUZZ_RECORD_SALT);
    free(buf);
    return 0;
}
