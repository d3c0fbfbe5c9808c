/*
 * filehdr.h - the 64-byte header every cairn file begins with
 * (format-spec/README.md "File header"):
 *
 *   off size field
 *    0   8   magic        "CAIRNLOG", "CAIRNSEG", "CAIRNMAN"
 *    8   2   version      format version of this file type
 *   10   2   header_len   64
 *   12   4   flags        0 (nonzero is corruption in version 1)
 *   16  40   fields       file-type specific (little-endian)
 *   56   8   checksum     XXH3-64 (seed 0) of bytes [0, 56)
 */
#ifndef CAIRN_FILEHDR_H
#define CAIRN_FILEHDR_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#define FILEHDR_SIZE 64u
#define FILEHDR_OFF_FIELDS 16u
#define FILEHDR_OFF_SUM 56u

#define MAGIC_LOG "CAIRNLOG"
#define MAGIC_SEG "CAIRNSEG"
#define MAGIC_MAN "CAIRNMAN"
#define MAGIC_END "CAIRNEND"

#define LOG_VERSION 1u
#define SEG_VERSION 3u /* 3: a dictionary section; 2: holes (a compacted segment); 1: neither */
#define MAN_VERSION 9u /* 2: the store block (store id, synced seq); 3: max_memories;
                          4: retention, an entry's rev; 5: deaths_dropped;
                          6: the label rule and the tier settings;
                          7: named record types; 8: an entry's hash chain;
                          9: the list of derived files */

/* Fill magic, version, header_len, flags; the caller fills the fields, then
 * calls cairn__filehdr_seal() to write the checksum. */
void cairn__filehdr_init(uint8_t *h, const char *magic, uint16_t version);
void cairn__filehdr_seal(uint8_t *h);

/* Validate a header: magic, version (newer = CAIRN_EVERSION), length, flags,
 * checksum. `what` names the file in the message. */
int cairn__filehdr_check(const uint8_t *buf, size_t len, const char *magic,
                         uint16_t version, const char *what, cairn__err *e);

#endif /* CAIRN_FILEHDR_H */
