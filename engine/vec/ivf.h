/*
 * ivf.h - an inverted-file (IVF) index over unit-length vectors: the rows
 * are clustered by spherical k-means into `nlist` lists, and a query scans
 * only the `nprobe` lists whose centroids are nearest to it (int8 scan,
 * f32 re-rank, as the exact search). Approximate: a true neighbour whose
 * list is not probed is missed; recall@10 against exact is measured in
 * bench/ (bench_vec) and rises with nprobe.
 *
 * Why IVF rather than a graph (HNSW): it is built from the vector blocks
 * in one pass of k-means without a per-row graph (so it needs no more RAM
 * than a copy of the int8 rows, a quarter of hnswlib's f32 copy), it keeps
 * the int8 scan kernels, and it answers "every row within similarity t of
 * row r" (merge) by probing the lists near r.
 *
 * Built in RAM from rows the caller owns (they must outlive the index);
 * not thread-safe for building, read-only afterwards.
 */
#ifndef CAIRN_IVF_H
#define CAIRN_IVF_H

#include <stddef.h>
#include <stdint.h>

#include "vecset.h"
#include "vkernel.h"

typedef struct cairn__ivf cairn__ivf;

/* Rows to index: n unit-length rows of dim floats, row i at rows[i]
 * (pointers, so rows may live in several sets or a mapping). */
typedef struct ivf_rows {
    size_t n, dim;
    const float *const *rows;
} ivf_rows;

/* nlist 0: about 4 sqrt(n) (at least 1, at most n). seed: the k-means
 * sample and start (deterministic for a given seed and rows).
 * Errors: CAIRN_EINVAL, CAIRN_ENOMEM. */
int cairn__ivf_build(cairn__ivf **out, const vkernel *kern, const ivf_rows *rows, size_t nlist,
                     uint64_t seed);
void cairn__ivf_free(cairn__ivf *x);

size_t cairn__ivf_nlist(const cairn__ivf *x);

/* Bytes the index holds (centroids, lists, the int8 copies). */
size_t cairn__ivf_bytes(const cairn__ivf *x);

/* The k rows nearest the query among the nprobe nearest lists, best first
 * (out[i].doc is the row number). live: a bit per row (NULL: all).
 * Errors: CAIRN_ENOMEM. */
int cairn__ivf_search(const cairn__ivf *x, const vkernel *kern, const vec_query *q, size_t k,
                      size_t nprobe, const uint8_t *live, vec_hit *out, size_t *n_out);

/* Every row within cosine `t` of the query among the nprobe nearest lists:
 * rows whose int8 estimate is at least t - margin are checked in f32, and
 * fn(user, row, similarity) is called for each at or above t (in list
 * order). For merge: no top-k heap, and few f32 checks. */
#define IVF_WITHIN_MARGIN 0.05
int cairn__ivf_within(const cairn__ivf *x, const vkernel *kern, const vec_query *q, double t,
                      size_t nprobe, void (*fn)(void *user, uint32_t row, double sim),
                      void *user);

#endif /* CAIRN_IVF_H */
