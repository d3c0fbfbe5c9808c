/*
 * vscan.h - exact top-k by cosine similarity over a block of vectors kept
 * twice: as f32 rows (the truth) and as int8 rows with one scale per row
 * (a quarter of the bytes, what the scan reads). The scan ranks every live
 * row by its int8 estimate, keeps the best `rerank` candidates, and ranks
 * those again by their f32 dot product; the answer is the best k of those.
 *
 * Rows and queries are unit length (cairn__vec_normalize), so the dot
 * product is the cosine similarity.
 */
#ifndef CAIRN_VSCAN_H
#define CAIRN_VSCAN_H

#include <stddef.h>
#include <stdint.h>

#include "bm25.h"
#include "vkernel.h"

/* A block's rows, in RAM or in a mapped file. */
typedef struct vblock_view {
    size_t dim;           /* values per row */
    size_t n;             /* rows */
    const float *f32;     /* n x dim */
    const int8_t *i8;     /* n rows of i8_stride bytes (the first dim used) */
    size_t i8_stride;     /* >= dim */
    const float *scale;   /* n: row i is about scale[i] * i8 row i */
    const uint8_t *live;  /* bit i set: row i counts; NULL: every row does */
} vblock_view;

/* Scale x (d values) to unit length in place; a zero vector stays zero.
 * Returns the length it had. */
double cairn__vec_normalize(float *x, size_t d);

/* Quantize one row: q[i] = round(x[i] / s) with s = max|x| / 127, so every
 * q[i] is in -127..127. Returns s (0 for a zero row, whose q is all 0). */
float cairn__vec_quantize(const float *x, size_t d, int8_t *q);

/* The k rows of b most similar to the unit-length query q (d = b->dim),
 * best first, ties to the lower row number, into out[0..*n_out).
 * `rerank` >= k candidates from the int8 scan are re-ranked in f32 (0: 4k,
 * at least k + 16). `tmp` must hold rerank + VSCAN_CHUNK entries of
 * scratch (bm25_hit). Scores are f32 cosine similarities. */
#define VSCAN_CHUNK 256
size_t cairn__vscan_rerank_n(size_t k, size_t rerank);
void cairn__vscan_topk(const vkernel *kern, const vblock_view *b, const float *q,
                       const int8_t *q8, float q_scale, size_t k, size_t rerank,
                       bm25_hit *tmp, bm25_hit *out, size_t *n_out);

/* The int8 pass alone: the best `rerank` live rows by their estimate into
 * tmp[0..return) (unordered; tmp holds rerank + VSCAN_CHUNK entries), for
 * a caller that checks the f32 rows before it re-ranks them. */
size_t cairn__vscan_i8(const vkernel *kern, const vblock_view *b, const int8_t *q8,
                       float q_scale, size_t rerank, bm25_hit *tmp);

/* The same ranking from f32 alone, every live row (the reference). */
void cairn__vscan_topk_f32(const vkernel *kern, const vblock_view *b, const float *q,
                           size_t k, bm25_hit *out, size_t *n_out);

#endif /* CAIRN_VSCAN_H */
