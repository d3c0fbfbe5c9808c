/*
 * vecset.h - a set of vectors of one embedder, one row per document, kept
 * as unit-length f32 rows and as int8 rows with a scale each: either in
 * RAM (rows added as memories are stored) or read in place from a vector
 * image (format-spec/memindex.md, "Vector image"), the same way a text
 * index is either a cairn__ramidx in RAM or mapped from the index file.
 *
 * Documents are numbered by the caller in strictly increasing order (a
 * memory's sequence number). Removing one clears its bit in the live
 * bitmap, which every search and write honours.
 *
 * A mapped image is checked in proportion to what is read: the header, the
 * document numbers, the scales and the table of block sums at map time; a
 * block of 256 int8 rows the first time a search scans it, a block of f32
 * rows the first time one of its rows is read. A failed check is
 * CAIRN_ECHECKSUM or CAIRN_ECORRUPT from the call that read it.
 *
 * Not thread-safe: the owner serializes calls.
 */
#ifndef CAIRN_VECSET_H
#define CAIRN_VECSET_H

#include <stddef.h>
#include <stdint.h>

#include "bm25.h"
#include "cairn.h"
#include "vkernel.h"

/* An embedder's name: 1..VEC_NAME_MAX bytes, no NUL. */
#define VEC_NAME_MAX 63
#define VEC_BLOCK_ROWS 256

typedef struct cairn__vecset cairn__vecset;

/* A query, made once and searched against several sets. */
typedef struct vec_query {
    const float *q;      /* dim values, unit length */
    const int8_t *q8;    /* dim values */
    float q_scale;
    size_t dim;
} vec_query;

typedef struct vec_hit {
    uint64_t doc;
    double score;        /* cosine similarity */
} vec_hit;

/* An empty set in RAM. Errors: CAIRN_EINVAL (name, dim), CAIRN_ENOMEM. */
int cairn__vecset_new(cairn__vecset **out, const char *embedder, size_t dim);

/* Accepts NULL. */
void cairn__vecset_free(cairn__vecset *s);

const char *cairn__vecset_embedder(const cairn__vecset *s);
size_t cairn__vecset_dim(const cairn__vecset *s);
size_t cairn__vecset_live(const cairn__vecset *s);

/* Add doc's vector (dim values, any length but finite; it is stored scaled
 * to unit length). Errors: CAIRN_EINVAL (doc not above every earlier one,
 * a mapped set, a value not finite), CAIRN_ENOMEM. */
int cairn__vecset_add(cairn__vecset *s, uint64_t doc, const float *v);

/* Errors: CAIRN_ENOTFOUND (no such live document). */
int cairn__vecset_remove(cairn__vecset *s, uint64_t doc);

/* doc's unit-length row, or *row NULL when it has none (or is removed).
 * Errors: CAIRN_ECHECKSUM (a mapped block failed its check). */
int cairn__vecset_get(cairn__vecset *s, uint64_t doc, const float **row);

/* The k live documents most similar to the query, best first (ties: lower
 * doc first), into out[0..*n_out): int8 scan, f32 re-rank of the best
 * `rerank` (0: 4k, at least k + 16). Errors: CAIRN_ENOMEM, CAIRN_ECHECKSUM,
 * CAIRN_EINVAL (another dimension). */
int cairn__vecset_search(cairn__vecset *s, const vkernel *kern, const vec_query *q, size_t k,
                         size_t rerank, vec_hit *out, size_t *n_out);

/* Every live row in doc order: fn(user, doc, unit-length row); a non-zero
 * return stops the walk and is returned. Errors: CAIRN_ECHECKSUM. */
int cairn__vecset_each(cairn__vecset *s, int (*fn)(void *user, uint64_t doc, const float *row),
                       void *user);

/* The raw rows (for an index built over a mapped set, whose rows never
 * move): n rows of dim unit floats at *f32, their docs, and the live
 * bitmap (a bit per row). Checks every f32 block first (ECHECKSUM). A RAM
 * set's rows move when it grows: only for sets that no longer change. */
int cairn__vecset_rows(cairn__vecset *s, const float **f32, const uint64_t **docs,
                       const uint8_t **live, size_t *n);

/* Make a query from v (dim values): normalized and quantized into the
 * caller's buffers q (dim floats) and q8 (dim bytes). */
void cairn__vec_query_make(vec_query *vq, const float *v, size_t dim, float *q, int8_t *q8);

/* Write the image of the live rows of sets[0..n) (same embedder and dim;
 * docs increasing across them) through put, which appends bytes.
 * Errors: CAIRN_EINVAL (sets that differ), put's, CAIRN_ECHECKSUM. */
typedef int (*vec_put_fn)(void *user, const void *p, size_t len);
int cairn__vecset_write(cairn__vecset *const *sets, size_t n, vec_put_fn put, void *user);

/* Bytes the image of these sets takes (what write will put). */
uint64_t cairn__vecset_image_len(cairn__vecset *const *sets, size_t n);

/* Read an image in place (p 8-byte aligned, len bytes; p must outlive the
 * set). Errors: CAIRN_ECORRUPT, CAIRN_ECHECKSUM, CAIRN_EVERSION,
 * CAIRN_ENOMEM. */
int cairn__vecset_map(cairn__vecset **out, const uint8_t *p, size_t len);

/* Check every block of a mapped set now (verify). */
int cairn__vecset_check_all(cairn__vecset *s);

#endif /* CAIRN_VECSET_H */
