/*
 * bm25.h - the BM25 formula and a top-k collector, shared by every text
 * index (in RAM and memory-mapped) so that all of them rank alike.
 *
 *   score(d, q) = sum over distinct query terms t in d of
 *                 idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
 *   idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))
 *
 * N: live documents; df: live documents holding t; tf: occurrences of t in
 * d; dl: terms in d; avgdl: mean dl over live documents; k1 = 1.2, b = 0.75.
 * This idf (Lucene's) is never negative, so a term in more than half the
 * documents still adds a little. Ties: the lower document number first.
 */
#ifndef CAIRN_BM25_H
#define CAIRN_BM25_H

#include <stddef.h>
#include <stdint.h>

#include "cairn.h"

#define BM25_K1 1.2
#define BM25_B 0.75

typedef struct bm25_hit {
    uint32_t doc;   /* the index's document number */
    double score;
} bm25_hit;

double cairn__bm25_idf(uint64_t n_docs, uint64_t df);

/* The tf part: tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)). */
/* Inline: called once per posting scored. */
static inline double cairn__bm25_tf(double tf, double dl, double avgdl)
{
    return tf * (BM25_K1 + 1.0) / (tf + BM25_K1 * (1.0 - BM25_B + BM25_B * dl / avgdl));
}

/* a ranks before b: higher score, then lower document number. */
static inline int cairn__bm25_before(const bm25_hit *a, const bm25_hit *b)
{
    return a->score > b->score || (a->score == b->score && a->doc < b->doc);
}

/* The k best hits seen so far (a min-heap on "ranks before"). */
typedef struct bm25_topk {
    bm25_hit *h;
    size_t n, k;
} bm25_topk;

/* h: caller's array of k entries. */
void cairn__bm25_topk_init(bm25_topk *t, bm25_hit *h, size_t k);

/* Offer a hit; kept if it ranks before the worst of a full heap. */
void cairn__bm25_topk_push(bm25_topk *t, uint32_t doc, double score);

/* Score a document must exceed to get in (0 until the heap is full: every
 * matching document scores above 0). */
static inline double cairn__bm25_topk_floor(const bm25_topk *t)
{
    return t->n < t->k ? 0.0 : t->h[0].score;
}

/* Sort the kept hits best first, in place; returns their number. */
size_t cairn__bm25_topk_finish(bm25_topk *t);

#endif /* CAIRN_BM25_H */
