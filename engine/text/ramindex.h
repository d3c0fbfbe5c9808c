/*
 * ramindex.h - an inverted index in RAM, for the documents not yet in an
 * immutable index file (the active segment's memories), answering BM25
 * top-k queries with MaxScore dynamic pruning.
 *
 * Documents are numbered by the caller, in strictly increasing order (a
 * memory's sequence number fits). Removing a document needs its text again:
 * the index keeps postings, not texts, and the statistics BM25 uses (N, df,
 * avgdl) are kept exact over live documents.
 *
 * Not thread-safe: the owner serializes calls (it holds a tokenizer).
 */
#ifndef CAIRN_RAMINDEX_H
#define CAIRN_RAMINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "bm25.h"
#include "cairn.h"

typedef struct cairn__ramidx cairn__ramidx;

/* What a search did: the proof that pruning skips work. */
typedef struct ramidx_trace {
    uint64_t postings;      /* postings of the query's terms, in all */
    uint64_t docs_scored;   /* documents whose score was computed in full */
    uint64_t docs_pruned;   /* candidates dropped by an upper bound */
} ramidx_trace;

/* stemmer: as cairn__tok_new. Errors: CAIRN_EINVAL, CAIRN_ENOMEM. */
int cairn__ramidx_new(cairn__ramidx **out, const cairn_allocator *a, const char *stemmer);

/* Accepts NULL. */
void cairn__ramidx_free(cairn__ramidx *x);

/* Index text as document doc. Errors: CAIRN_EINVAL (doc not above every
 * earlier one), CAIRN_ENOMEM (the document is not indexed; the index is
 * otherwise as before). */
int cairn__ramidx_add(cairn__ramidx *x, uint64_t doc, const uint8_t *text, size_t len);

/* Remove document doc, whose text is given again. Errors:
 * CAIRN_ENOTFOUND (no such live document). */
int cairn__ramidx_remove(cairn__ramidx *x, uint64_t doc, const uint8_t *text, size_t len);

/* Live documents. */
uint64_t cairn__ramidx_count(const cairn__ramidx *x);

/* The best k live documents for query, best first, into docs/scores
 * (arrays of k); *n_out = how many (fewer when fewer match). Query terms
 * count once each however often they occur. trace may be NULL.
 * Errors: CAIRN_ENOMEM. */
int cairn__ramidx_search(cairn__ramidx *x, const uint8_t *query, size_t len, size_t k,
                         uint64_t *docs, double *scores, size_t *n_out, ramidx_trace *trace);

#endif /* CAIRN_RAMINDEX_H */
