/*
 * chain.h - the log's hash chain (format-spec/chain.md).
 *
 * Every record of the log folds, in seq order, into one SHA-256 value:
 *
 *   h = 32 zero bytes before the first record
 *   d = SHA-256(the record's bytes, from its length field to its checksum)
 *   h = SHA-256(h || d)
 *
 * A hole of a compacted segment carrying "chain_in" and "chain" stands for
 * records compaction dropped: h must be chain_in there, and becomes chain;
 * a purge's hole also lists the dropped records' d ("leaves"), and h is
 * folded through them. The MANIFEST keeps h at the end of every sealed
 * segment (the sealer computes it); the head is h after the newest record.
 * The record checksum finds accidents; the chain, compared with a head kept
 * elsewhere, finds a changed, dropped, reordered or cut history.
 */
#ifndef CAIRN_CHAIN_H
#define CAIRN_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "cairn.h"
#include "cairn_sys.h"
#include "status.h"

#define CHAIN_LEN 32u

/* A reusable SHA-256 context (OpenSSL's, so SHA-NI where the CPU has it). */
typedef struct cairn__chain {
    void *ctx;
    void *md;
} cairn__chain;

int cairn__chain_init(cairn__chain *c);     /* CAIRN_ENOMEM */
void cairn__chain_free(cairn__chain *c);

/* d = SHA-256(rec[0, len)): a record's leaf. */
int cairn__chain_leaf(cairn__chain *c, const uint8_t *rec, size_t len, uint8_t d[CHAIN_LEN]);
/* h = SHA-256(h || d). */
int cairn__chain_fold(cairn__chain *c, uint8_t h[CHAIN_LEN], const uint8_t d[CHAIN_LEN]);
/* Both: fold the record rec[0, len) into h. */
int cairn__chain_step(cairn__chain *c, uint8_t h[CHAIN_LEN], const uint8_t *rec, size_t len);

/* How a record went into the chain (cairn__chain_record). */
enum {
    CHAIN_STEPPED = 0, /* a record, folded */
    CHAIN_BRIDGED = 1, /* a hole: h was its chain_in, and is its chain now */
    CHAIN_THROUGH = 2, /* a hole listing its leaves: h folded through them to its chain */
    CHAIN_BROKEN = 3   /* a hole whose chain_in is not h, or whose leaves do not give its
                          chain: the history before it changed. h is its chain now */
};

/* Fold one record (raw bytes, len; decoded as rec) into h. compacted: it is
 * in a sealed segment of version 2, where a type-12 record is a hole; a
 * hole with chain members is applied as above, one without them (written
 * before the chain) is folded as a record. *how (may be NULL) gets a
 * CHAIN_* value. CAIRN_ECORRUPT when the hole's chain members are there
 * but malformed; CAIRN_ENOMEM. */
int cairn__chain_record(cairn__chain *c, uint8_t h[CHAIN_LEN], const cairn_record *rec,
                        const uint8_t *raw, size_t len, int compacted, int *how);

/* Fold every valid record of a log-form segment, from offset 64 to end,
 * into h (the records of a log segment are contiguous, no hole). The last
 * seq folded goes to *last (unchanged when none). site names the reads
 * (cairn_sys.h). */
int cairn__chain_logseg(cairn__chain *c, const cairn_io *io, const char *site,
                        const cairn_allocator *a, int fd, const char *name, uint64_t salt,
                        uint64_t end, uint8_t h[CHAIN_LEN], uint64_t *last, cairn__err *e);

/* 64 lowercase hex digits and a NUL. */
void cairn__chain_hex(const uint8_t h[CHAIN_LEN], char out[2 * CHAIN_LEN + 1]);
/* Parse exactly 64 hex digits (either case); 1 if they were. */
int cairn__chain_unhex(const char *s, size_t n, uint8_t h[CHAIN_LEN]);

#endif /* CAIRN_CHAIN_H */
