/*
 * vscan.c - see vscan.h.
 *
 * Why the int8 pass can be trusted: with unit-length rows, the int8
 * estimate of a dot product is off by at most about d * (s_q * s_r) / 2 in
 * the worst case and far less in practice (rounding errors are independent
 * and cancel). Re-ranking 4k candidates in f32 makes the answer exact
 * unless a true top-k row falls behind 4k others in the estimate, which the
 * tests check does not happen on random and clustered data.
 */
#include "vscan.h"

#include <math.h>

double cairn__vec_normalize(float *x, size_t d)
{
    double ss = 0;
    for (size_t i = 0; i < d; i++)
        ss += (double)x[i] * x[i];
    if (ss > 0) {
        double len = sqrt(ss);
        if (fabs(len - 1.0) < 1e-7)
            return len; /* unit already: left as is, so normalizing is idempotent */
        float inv = (float)(1.0 / len);
        for (size_t i = 0; i < d; i++)
            x[i] *= inv;
        return len;
    }
    return 0;
}

float cairn__vec_quantize(const float *x, size_t d, int8_t *q)
{
    float m = 0, s, inv;
    for (size_t i = 0; i < d; i++) {
        float a = fabsf(x[i]);
        if (a > m)
            m = a;
    }
    if (!(m > 0)) { /* zero, or NaN somewhere: an all-zero row */
        for (size_t i = 0; i < d; i++)
            q[i] = 0;
        return 0;
    }
    s = m / 127.0f;
    inv = 127.0f / m;
    for (size_t i = 0; i < d; i++) {
        long v = lrintf(x[i] * inv);
        q[i] = (int8_t)(v > 127 ? 127 : v < -127 ? -127 : v);
    }
    return s;
}

size_t cairn__vscan_rerank_n(size_t k, size_t rerank)
{
    if (rerank == 0)
        rerank = k * 4 < k + 16 ? k + 16 : k * 4;
    return rerank < k ? k : rerank;
}

static int row_live(const vblock_view *b, size_t i)
{
    return b->live == NULL || (b->live[i >> 3] >> (i & 7) & 1);
}

size_t cairn__vscan_i8(const vkernel *kern, const vblock_view *b, const int8_t *q8,
                       float q_scale, size_t rerank, bm25_hit *tmp)
{
    bm25_topk cand;
    int32_t dots[VSCAN_CHUNK];

    cairn__bm25_topk_init(&cand, tmp, rerank);
    for (size_t base = 0; base < b->n; base += VSCAN_CHUNK) {
        size_t m = b->n - base < VSCAN_CHUNK ? b->n - base : VSCAN_CHUNK;
        kern->dot_i8_many(q8, b->i8 + base * b->i8_stride, b->i8_stride, b->dim, m, dots);
        for (size_t j = 0; j < m; j++) {
            double est = (double)dots[j] * b->scale[base + j] * q_scale;
            if (cand.n == cand.k && est < cand.h[0].score)
                continue; /* the common case, before the live check */
            if (row_live(b, base + j))
                cairn__bm25_topk_push(&cand, (uint32_t)(base + j), est);
        }
    }
    return cand.n;
}

void cairn__vscan_topk(const vkernel *kern, const vblock_view *b, const float *q,
                       const int8_t *q8, float q_scale, size_t k, size_t rerank,
                       bm25_hit *tmp, bm25_hit *out, size_t *n_out)
{
    bm25_topk best;
    size_t nc;

    rerank = cairn__vscan_rerank_n(k, rerank);
    nc = cairn__vscan_i8(kern, b, q8, q_scale, rerank, tmp);
    cairn__bm25_topk_init(&best, out, k);
    for (size_t i = 0; i < nc; i++) {
        uint32_t r = tmp[i].doc;
        cairn__bm25_topk_push(&best, r, kern->dot_f32(q, b->f32 + (size_t)r * b->dim, b->dim));
    }
    *n_out = cairn__bm25_topk_finish(&best);
}

void cairn__vscan_topk_f32(const vkernel *kern, const vblock_view *b, const float *q,
                           size_t k, bm25_hit *out, size_t *n_out)
{
    bm25_topk best;
    cairn__bm25_topk_init(&best, out, k);
    for (size_t i = 0; i < b->n; i++)
        if (row_live(b, i))
            cairn__bm25_topk_push(&best, (uint32_t)i,
                                  kern->dot_f32(q, b->f32 + i * b->dim, b->dim));
    *n_out = cairn__bm25_topk_finish(&best);
}
