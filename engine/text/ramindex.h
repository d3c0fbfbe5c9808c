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

/* Documents ever added (live or removed). */
uint64_t cairn__ramidx_docs(const cairn__ramidx *x);

/* How far an index being built has grown: its terms, the distinct words
 * it has seen, and their bytes. A writer's next RAM index grows as its
 * last did; made that big at once (cairn__ramidx_presize), its tables are
 * not rehashed at every doubling on the way. */
typedef struct cairn__ramidx_size {
    size_t terms, term_bytes, words, word_bytes;
} cairn__ramidx_size;

void cairn__ramidx_size_of(const cairn__ramidx *x, cairn__ramidx_size *s);

/* Room for s in an index being built. Errors: CAIRN_EINVAL (a mapped
 * index), CAIRN_ENOMEM (it works as before, growing as it goes). */
int cairn__ramidx_presize(cairn__ramidx *x, const cairn__ramidx_size *s);

/* The best k live documents for query, best first, into docs/scores
 * (arrays of k); *n_out = how many (fewer when fewer match). Query terms
 * count once each however often they occur. trace may be NULL.
 * Errors: CAIRN_ENOMEM. */
int cairn__ramidx_search(cairn__ramidx *x, const uint8_t *query, size_t len, size_t k,
                         uint64_t *docs, double *scores, size_t *n_out, ramidx_trace *trace);

/* The same over several indexes searched as one: N, df and avgdl are
 * summed over all of them, so a document scores the same whichever holds
 * it. xs must be in document order (every document of xs[i] below every
 * one of xs[i + 1]). Errors: CAIRN_ENOMEM, CAIRN_EINVAL (out of order),
 * CAIRN_ECHECKSUM / CAIRN_ECORRUPT (a mapped index's postings are
 * damaged: they are checked the first time a query reads them). */
int cairn__ramidx_search_many(cairn__ramidx *const *xs, size_t nx, const uint8_t *query,
                              size_t len, size_t k, uint64_t *docs, double *scores,
                              size_t *n_out, ramidx_trace *trace);

/* A new in-RAM index of the live documents of src[0..n) (in document
 * order, as for search_many), without re-tokenizing anything. */
int cairn__ramidx_merge(cairn__ramidx **out, const cairn_allocator *a, const char *stemmer,
                        cairn__ramidx *const *src, size_t n);


/* Write x as the text-index image of format-spec/memindex.md, in pieces,
 * through put (which returns CAIRN_OK or an error that stops the write).
 * put(user, NULL, 0) marks where the head (all but the postings) ends.
 * x must not be mapped (merge a mapped index first): CAIRN_EINVAL. */
typedef int (*cairn__ramidx_put_fn)(void *user, const void *bytes, size_t len);
int cairn__ramidx_write(const cairn__ramidx *x, cairn__ramidx_put_fn put, void *user);

/* The same image made in memory first (the head, then the postings), to
 * be put later: a close makes it on another thread while it writes its
 * rows. x must not change until made. CAIRN_ENOMEM, or CAIRN_EINVAL as
 * for cairn__ramidx_write (img holds nothing then). */
typedef struct cairn__ramidx_image {
    const cairn_allocator *a;
    uint8_t *head, *post;
    size_t head_len, post_len;
} cairn__ramidx_image;
int cairn__ramidx_image_make(const cairn__ramidx *x, cairn__ramidx_image *img);

/* Put a made image through put as cairn__ramidx_write would: the same
 * bytes, the head's end marked. */
int cairn__ramidx_image_put(const cairn__ramidx_image *img, cairn__ramidx_put_fn put, void *user);

/* Free what a make holds; accepts an image never made (zeroed). */
void cairn__ramidx_image_free(cairn__ramidx_image *img);

/* The image cairn__ramidx_merge of src[0..n) would write, the same bytes,
 * written as it is made: the merged documents and terms are held (about
 * 13 bytes a document), each term's postings are made from the sources
 * twice (to count, sum and size them, then to write them) and never held:
 * only their length (8 bytes a term) and the skip table of a term of more
 * than one block (8 bytes a block) are kept between the two.
 * Mapped sources' postings are checked as they are read. Given up with
 * CAIRN_ELOCKED once *stop is set (stop NULL: never). Errors: put's,
 * CAIRN_ENOMEM, CAIRN_EINVAL (out of order), CAIRN_ECHECKSUM /
 * CAIRN_ECORRUPT (a source is damaged). */
int cairn__ramidx_merge_write(const cairn_allocator *a, const char *stemmer,
                              cairn__ramidx *const *src, size_t n, cairn__ramidx_put_fn put,
                              void *user, const int *stop);

/* An index over an image written by cairn__ramidx_write, 8-byte aligned,
 * which must outlive it: term records, postings, term bytes and document
 * tables are read in place; the live bitmap is copied (a mapped index
 * accepts cairn__ramidx_remove, not cairn__ramidx_add). O(1) apart from
 * that copy (documents / 8 bytes): the header is checked against its sum
 * and its counts against the length; a term record is bounds-checked when
 * first read, its postings checked against their sum when a query first
 * reads them, a table slot before it is followed. A damaged record or slot
 * makes searches fail with CAIRN_ECORRUPT, never read out of bounds.
 * *used = the image's length. Errors: CAIRN_ECORRUPT, CAIRN_ENOMEM. */
int cairn__ramidx_map(cairn__ramidx **out, const cairn_allocator *a, const char *stemmer,
                      const void *bytes, size_t len, size_t *used);

/* Check all of a mapped index (every term, slot and posting, the
 * document order, the live counts). CAIRN_OK for an index in RAM.
 * Errors: CAIRN_ECORRUPT, CAIRN_ECHECKSUM. */
int cairn__ramidx_check(cairn__ramidx *x);

#endif /* CAIRN_RAMINDEX_H */
