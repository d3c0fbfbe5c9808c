/*
 * chain.h - the log's hash chain (format-spec/chain.md).
 *
 * Every record of the log folds, in seq order, into one SHA-256 value:
 *
 *   h = 32 zero bytes before the first record
 *   h = SHA-256(h || the record's bytes, from its length field to its checksum)
 *
 * except a hole of a compacted segment carrying "chain": it stands for
 * records compaction dropped, and h becomes the value it carries (the one
 * those records gave). The MANIFEST keeps h at the end of every sealed
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

/* h = SHA-256(h || rec[0, len)). */
int cairn__chain_step(cairn__chain *c, uint8_t h[CHAIN_LEN], const uint8_t *rec, size_t len);

/* Fold one record (raw bytes, len; decoded as rec) into h. compacted: it is
 * in a sealed segment of version 2, where a type-12 record is a hole; a
 * hole with a "chain" member sets h to it. CAIRN_ECORRUPT when that member
 * is there but not 64 lowercase hex digits. *set (may be NULL) is 1 when
 * the hole set h. */
int cairn__chain_record(cairn__chain *c, uint8_t h[CHAIN_LEN], const cairn_record *rec,
                        const uint8_t *raw, size_t len, int compacted, int *set);

/* Fold every valid record of a log-form segment, from offset 64 to end,
 * into h (the records of a log segment are contiguous, no hole). The last
 * seq folded goes to *last (unchanged when none). */
int cairn__chain_logseg(cairn__chain *c, const cairn_io *io, const cairn_allocator *a, int fd,
                        const char *name, uint64_t salt, uint64_t end, uint8_t h[CHAIN_LEN],
                        uint64_t *last, cairn__err *e);

/* 64 lowercase hex digits and a NUL. */
void cairn__chain_hex(const uint8_t h[CHAIN_LEN], char out[2 * CHAIN_LEN + 1]);
/* Parse exactly 64 hex digits (either case); 1 if they were. */
int cairn__chain_unhex(const char *s, size_t n, uint8_t h[CHAIN_LEN]);

#endif /* CAIRN_CHAIN_H */
