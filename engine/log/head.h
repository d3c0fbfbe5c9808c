/*
 * head.h - the hash chain over a store's segments (chain.h): what the
 * sealer and compaction need (the chain before a segment) and the check
 * cairn_verify runs (format-spec/chain.md).
 */
#ifndef CAIRN_HEAD_H
#define CAIRN_HEAD_H

#include "chain.h"
#include "store.h"

/* A chain value computed for a sealed entry the MANIFEST has none for (a
 * store sealed before the chain): the next MANIFEST written keeps it. */
typedef struct cairn__chain_fill {
    uint64_t id;
    uint32_t rev;
    uint8_t chain[CHAIN_LEN];
} cairn__chain_fill;

/* The chain before entry idx of v (zero before the first): the value of
 * the newest chained entry before it, folded on through the entries after
 * that. fill (room for idx entries, may be NULL) gets the values it
 * computed for sealed entries, *n_fill their count. */
int cairn__chain_before(cairn_db *db, const view *v, size_t idx, uint8_t h[CHAIN_LEN],
                        cairn__chain_fill *fill, size_t *n_fill, cairn__err *e);

/* The chain's value at seq (after the record at seq, or a hole ending
 * there). CAIRN_ENOTFOUND, with why in e, when seq has none: past the
 * log's end, a retired number, inside a hole. */
int cairn__chain_at(cairn_db *db, const view *v, uint64_t seq, uint8_t h[CHAIN_LEN],
                    cairn__err *e);

/* Put the computed values into m's entries still without one. */
void cairn__chain_apply_fill(manifest *m, const cairn__chain_fill *fill, size_t n_fill);

/* Recompute the chain from the first record of v: compare it with every
 * value the MANIFEST keeps, check every hole's chain_in (and leaves) and,
 * when want is not NULL, compare with want at its seq. fn gets each
 * problem; out (zeroed by the caller) counts them and says what held. */
void cairn__verify_chain(cairn_db *db, const view *v, const cairn_head *want,
                         cairn_verify_fn fn, void *user, cairn_verify_report *out);

#endif /* CAIRN_HEAD_H */
