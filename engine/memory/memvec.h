/*
 * memvec.h - searching the memory engine's vectors (memvec.c); used with
 * cairn_mem.mu held.
 */
#ifndef CAIRN_MEMVEC_H
#define CAIRN_MEMVEC_H

#include "memstate.h"

/* The query's vector: `given` (the store's dim) or the handle's embedder
 * run on text, made into vq; *buf holds it (free() it after the search).
 * Errors: CAIRN_EUNAVAIL (no vectors stored, or no embedder and none
 * given), CAIRN_EINVAL (the handle's embedder is not the store's),
 * CAIRN_EIO (the embedder failed), CAIRN_ENOMEM; m->err says which. */
int cairn__mem_vec_query(cairn_mem *m, const char *text, const float *given, vec_query *vq,
                         float **buf);

/* The k memories of namespace nsi whose vectors are nearest the query,
 * best first (ties: the older memory), as (seq, cosine). nprobe > 0: the
 * vectors of the index file through the approximate index, probing that
 * many lists (those stored since are always searched exactly).
 * Errors: CAIRN_ENOMEM, CAIRN_ECHECKSUM (a mapped block). */
int cairn__mem_vec_search(cairn_mem *m, uint32_t nsi, const vec_query *vq, size_t k,
                          size_t nprobe, vec_hit *out, size_t *n_out);

/* The unit-length vector of memory seq (namespace nsi), or *row NULL when
 * it has none. Errors: CAIRN_ECHECKSUM, CAIRN_ECORRUPT (a mapped block). */
int cairn__mem_vec_get(cairn_mem *m, uint32_t nsi, uint64_t seq, const float **row);

/* The cosine similarity of memory seq (namespace nsi) to the query.
 * Errors: CAIRN_ENOTFOUND (it has no vector), CAIRN_ECHECKSUM. */
int cairn__mem_vec_similarity(cairn_mem *m, uint32_t nsi, uint64_t seq, const vec_query *vq,
                              double *sim);

#endif /* CAIRN_MEMVEC_H */
