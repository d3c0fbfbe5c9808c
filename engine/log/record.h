/*
 * record.h - encoding and decoding of one log record (format-spec/record.md).
 *
 *   off size field
 *    0   4   len       whole record, header to checksum, 40..CAIRN_RECORD_MAX
 *    4   4   epoch     low 32 bits of the segment salt
 *    8   8   seq       sequence number, > 0
 *   16   8   ts_ms     ms since the Unix epoch, UTC (signed)
 *   24   2   type      record type, != 0
 *   26   2   ns_len    namespace bytes, <= CAIRN_NS_MAX
 *   28   4   json_len  payload bytes
 *   32   .   ns, json, bin (bin_len = len - 40 - ns_len - json_len)
 *  len-8 8   checksum  XXH3-64 of bytes [0, len-8) seeded with the segment salt
 */
#ifndef CAIRN_RECORD_H
#define CAIRN_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "cairn.h"

#define REC_HEADER_SIZE 32u
#define REC_TRAILER_SIZE 8u
#define REC_OVERHEAD (REC_HEADER_SIZE + REC_TRAILER_SIZE)

#define REC_OFF_LEN 0
#define REC_OFF_EPOCH 4
#define REC_OFF_SEQ 8
#define REC_OFF_TS 16
#define REC_OFF_TYPE 24
#define REC_OFF_NSLEN 26
#define REC_OFF_JSONLEN 28

/* Encoded size of an entry; CAIRN_ETOOBIG past CAIRN_RECORD_MAX,
 * CAIRN_EINVAL for a bad entry (type 0, namespace too long, NULL bytes). */
int cairn__record_size(const cairn_entry *e, size_t *size);

/* Encode into buf (exactly cairn__record_size() bytes); returns that size. */
size_t cairn__record_encode(uint8_t *buf, const cairn_entry *e, uint64_t seq, int64_t ts_ms,
                          uint64_t salt);

/* Outcome of decoding at one position. */
typedef enum rec_result {
    REC_OK = 0,
    REC_END,       /* fewer than 4 bytes left, or a zero length: clean end */
    REC_TRUNCATED, /* the length runs past the buffer: a torn tail */
    REC_BAD_LEN,   /* length below the minimum or above CAIRN_RECORD_MAX */
    REC_BAD_EPOCH, /* bytes of another segment (stale salt) */
    REC_BAD_SUM,   /* checksum mismatch */
    REC_BAD_FIELD  /* fields inconsistent with the length, or type 0 */
} rec_result;

/* Decode the record at buf[0..avail). On REC_OK fills *rec (pointers into
 * buf) and *len. Never reads past avail. */
rec_result cairn__record_decode(const uint8_t *buf, size_t avail, uint64_t salt,
                                cairn_record *rec, size_t *len);

/* A short description of a rec_result, for messages. */
const char *cairn__record_result_str(rec_result r);

#endif /* CAIRN_RECORD_H */
