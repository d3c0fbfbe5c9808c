/*
 * hole.h - the record compaction leaves where it dropped records
 * (format-spec/compaction.md): type CAIRN_REC_COMPACTED, in a sealed
 * segment of version 2 only. It takes the seq of the first record it
 * stands for and the timestamp of that record, and says in its JSON
 * payload how far it reaches and what it stood for:
 *
 *   {"upto":U,"records":R,"bytes":B,"deaths":D,"ends":[[S,N],...],
 *    "anchors":[[S,"checksum"],...],"chain_in":"hex","chain":"hex",
 *    "leaves":["hex",...],"why":W}
 *
 * upto: the last seq it stands for (>= its own); records: how many records
 * it stands for (1 .. upto - seq + 1); bytes: their encoded bytes; deaths
 * (optional, 0): memories whose going these records recorded, which the
 * memory engine still counts; ends (optional): the dropped records that
 * ended a commit of N >= 2 records (batch.h), at seq S inside the hole, so
 * a reader still finds the commit whole; anchors (optional): the
 * checksums (16 hex digits) of dropped records that a derived file of the
 * store is bound to (format-spec/README.md, "Binding of derived files"),
 * so the binding still holds; chain_in, chain: the log's hash chain
 * before and after the records it stands for, leaves (a purge's hole): each
 * one's leaf digest (chain.h); why: what dropped them
 * ("retain live:7d", "purge m12...").
 */
#ifndef CAIRN_HOLE_H
#define CAIRN_HOLE_H

#include <stddef.h>
#include <stdint.h>

#include "cairn.h"
#include "status.h"

typedef struct cairn__hole {
    uint64_t seq, upto, records, bytes, deaths;
} cairn__hole;

/* Decode a hole's payload (the record at seq); CAIRN_ECORRUPT with the
 * reason in e when it is not one, or out of its range. */
int cairn__hole_decode(const char *json, size_t len, uint64_t seq, cairn__hole *h,
                       cairn__err *e);

/* 1 if the hole lists a commit of n records ending at seq `end`. */
int cairn__hole_has_end(const char *json, size_t len, uint64_t end, uint64_t n);

/* 1 and *sum if the hole keeps the checksum of the dropped record seq. */
int cairn__hole_anchor(const char *json, size_t len, uint64_t seq, uint64_t *sum);

/* The hole's hash chain members (format-spec/chain.md): the chain before
 * the records it stands for (in), after them (out), and, for a purge's
 * hole, each record's leaf digest (n_leaves == the hole's records, 32
 * bytes each, malloc'd; NULL when none). */
typedef struct cairn__hole_chain {
    uint8_t in[32], out[32];
    uint8_t *leaves;
    size_t n_leaves;
} cairn__hole_chain;

/* 1 and *hc when the payload has chain_in and chain (and leaves); 0 when it
 * has none (a hole written before the chain); -1 when they are malformed:
 * one without the other, not 64 lowercase hex digits, leaves without them
 * or not one per record. Free with cairn__hole_chain_free. */
int cairn__hole_chain_read(const char *json, size_t len, cairn__hole_chain *hc);
void cairn__hole_chain_free(cairn__hole_chain *hc);

/* A hole being gathered from dropped records, in seq order. */
typedef struct cairn__holeb {
    const cairn_allocator *a;
    cairn__hole h;        /* h.records 0: nothing gathered */
    int64_t ts;
    uint64_t (*ends)[2];
    size_t n_ends, ends_cap;
    uint64_t (*anchors)[2];
    size_t n_anchors, anchors_cap;
    int has_chain;        /* emit writes "chain_in" and "chain" */
    uint8_t chain_in[32]; /* the hash chain before its first record */
    uint8_t chain[32];    /* and after its last */
    uint8_t *leaves;      /* with leaves_on: each record's leaf digest */
    size_t n_leaves, leaves_cap;
    int leaves_on;        /* emit writes "leaves" (a purge's holes) */
} cairn__holeb;

/* Add a dropped record: its seq, ts, encoded length, payload (for its
 * commit mark) and whether it recorded a memory's going. */
int cairn__holeb_add(cairn__holeb *b, const cairn_record *rec, size_t len, int death);
/* Keep the leaf digest of the record just added (leaves_on). */
int cairn__holeb_leaf(cairn__holeb *b, const uint8_t d[32]);
/* Keep the checksum of the record just added (a derived file's anchor). */
int cairn__holeb_anchor(cairn__holeb *b, uint64_t seq, uint64_t sum);
/* The gathered hole as a record encoded with salt (*out, *len: freed by
 * the caller with cairn__free); then the builder is empty again. */
int cairn__holeb_emit(cairn__holeb *b, uint64_t salt, const char *why, uint8_t **out,
                      size_t *len);
void cairn__holeb_free(cairn__holeb *b);

#endif /* CAIRN_HOLE_H */
