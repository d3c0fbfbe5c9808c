/*
 * accfile.h - the bytes of the access side file `ACCESS`
 * (format-spec/access.md): its header and its entries, with no I/O, so
 * that the parser can be fuzzed (fuzz/fuzz_access.c).
 *
 *   off size field
 *    0   64  header       the common file header (filehdr.h), magic
 *                         "CAIRNACC"; fields: 16 u64 file_id (random, not
 *                         0), 24 store_id[16] (the store's id, or zeros),
 *                         40..56 reserved (0)
 *   64   24  entry...     0 u64 seq (the memory's store record, >= 1),
 *                         8 i64 at (ms, 0..2^53), 16 u64 sum: XXH3-64 of
 *                         bytes 0..15 seeded with file_id
 *
 * Entries are appended by concurrent processes with O_APPEND, so a reader
 * may meet bytes that are no entry (a torn append, a crash): it skips
 * them one byte at a time until an entry's sum holds again (resync).
 */
#ifndef CAIRN_ACCFILE_H
#define CAIRN_ACCFILE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#define ACC_NAME "ACCESS"
#define ACC_MAGIC "CAIRNACC"
#define ACC_VERSION 1u
#define ACC_HDR_SIZE 64u
#define ACC_OFF_FILE_ID 16u
#define ACC_OFF_STORE_ID 24u
#define ACC_STORE_ID_LEN 16u
#define ACC_OFF_RESERVED 40u
#define ACC_ENTRY_SIZE 24u
#define ACC_OFF_SEQ 0u
#define ACC_OFF_AT 8u
#define ACC_OFF_SUM 16u
#define ACC_AT_MAX 9007199254740992ll /* 2^53, as every time of memory.md */

typedef struct accfile_hdr {
    uint16_t version;
    uint64_t file_id;
    uint8_t store_id[ACC_STORE_ID_LEN];
} accfile_hdr;

/* The 64 header bytes for h (version ACC_VERSION) into out. */
void cairn__accfile_hdr_encode(uint8_t *out, uint64_t file_id, const uint8_t *store_id);

/* Check and decode a header from buf[0..len). Errors: CAIRN_ECORRUPT
 * (short, magic, version 0, header length, flags, file_id 0, reserved
 * bytes not zero), CAIRN_ECHECKSUM, CAIRN_EVERSION (a newer version: leave
 * the file alone). e names the field. */
int cairn__accfile_hdr_decode(const uint8_t *buf, size_t len, accfile_hdr *h, cairn__err *e);

/* One entry's 24 bytes into out. */
void cairn__accfile_entry_encode(uint8_t *out, uint64_t file_id, uint64_t seq, int64_t at);

/* What a scan found. */
typedef struct accfile_scan {
    size_t consumed;     /* bytes scanned: every position before it decided */
    uint64_t entries;    /* good entries passed to fn */
    uint64_t bad_entries; /* entries whose sum holds but whose values do not
                             (seq 0, a time outside 0..2^53): skipped whole */
    uint64_t skipped;    /* bytes skipped because no entry's sum held there */
} accfile_scan;

/* Scan the entry bytes buf[0..len) of a file with this file_id (buf[0] is
 * at file offset `off`, for fn): each good entry goes to fn (seq, at, its
 * offset). A position whose 24 bytes are no entry of this file is skipped
 * one byte at a time (resync). Stops when fewer than 24 bytes are left:
 * they may be an entry still being written, read again later. Never
 * fails; len may be anything. */
void cairn__accfile_scan(const uint8_t *buf, size_t len, uint64_t off, uint64_t file_id,
                         void (*fn)(void *user, uint64_t seq, int64_t at, uint64_t off),
                         void *user, accfile_scan *out);

#endif /* CAIRN_ACCFILE_H */
