/*
 * ivf.c - see ivf.h.
 *
 * Training: spherical k-means (centroids kept unit length) on a sample of
 * at most 32 rows per list, 8 rounds, started from evenly spaced sample
 * rows; an emptied centroid restarts at a sample row. Assignment of every
 * row uses int8 centroids and the int8 block kernel: the lists are only
 * a partition, so the estimate is enough.
 */
#include "ivf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bm25.h"
#include "mix64.h"
#include "vscan.h"

#define IVF_SAMPLE_PER_LIST 32
#define IVF_ROUNDS 8

struct cairn__ivf {
    size_t n, dim, stride, nlist;
    float *cent;             /* nlist x dim, unit length */
    int8_t *c8;              /* the centroids quantized (nlist x stride): probing */
    float *c8_scale;
    size_t *off;             /* nlist + 1: list l is ids[off[l]..off[l+1]) */
    uint32_t *ids;           /* row numbers, list by list */
    int8_t *i8;              /* the rows' int8 copies in list order (n x stride) */
    float *scale;
    const float *const *rows;
};

static uint64_t mix(uint64_t *s)
{
    return cairn__mix64(*s += 0x9E3779B97F4A7C15ull);
}

/* The nearest centroid of v among cents (f32). */
static size_t nearest(const vkernel *kern, const float *cents, size_t nlist, size_t dim,
                      const float *v)
{
    size_t best = 0;
    float bs = -INFINITY;
    for (size_t c = 0; c < nlist; c++) {
        float s = kern->dot_f32(v, cents + c * dim, dim);
        if (s > bs) {
            bs = s;
            best = c;
        }
    }
    return best;
}

static int train(cairn__ivf *x, const vkernel *kern, const ivf_rows *r, uint64_t seed)
{
    size_t ns = r->n < x->nlist * IVF_SAMPLE_PER_LIST ? r->n : x->nlist * IVF_SAMPLE_PER_LIST;
    size_t *sample = malloc(ns * sizeof *sample), *assign = malloc(ns * sizeof *assign);
    double *sum = malloc(x->nlist * x->dim * sizeof *sum);
    size_t *count = malloc(x->nlist * sizeof *count);
    uint64_t st = seed;
    int rc = CAIRN_OK;

    if (sample == NULL || assign == NULL || sum == NULL || count == NULL) {
        rc = CAIRN_ENOMEM;
        goto out;
    }
    /* a sample without repeats: a partial Fisher-Yates over row numbers,
     * done implicitly by striding from a random start (cheap, and evenly
     * spread over the rows, which are in insertion order) */
    {
        size_t start = r->n > ns ? (size_t)(mix(&st) % (r->n - ns + 1)) : 0;
        double step = r->n > ns ? (double)(r->n - start) / (double)ns : 1.0;
        for (size_t i = 0; i < ns; i++)
            sample[i] = start + (size_t)((double)i * step);
    }
    for (size_t c = 0; c < x->nlist; c++)
        memcpy(x->cent + c * x->dim, r->rows[sample[c * ns / x->nlist]], x->dim * sizeof(float));
    for (int round = 0; round < IVF_ROUNDS; round++) {
        memset(sum, 0, x->nlist * x->dim * sizeof *sum);
        memset(count, 0, x->nlist * sizeof *count);
        for (size_t i = 0; i < ns; i++) {
            const float *v = r->rows[sample[i]];
            size_t c = assign[i] = nearest(kern, x->cent, x->nlist, x->dim, v);
            double *s = sum + c * x->dim;
            for (size_t d = 0; d < x->dim; d++)
                s[d] += v[d];
            count[c]++;
        }
        for (size_t c = 0; c < x->nlist; c++) {
            float *cv = x->cent + c * x->dim;
            if (count[c] == 0) { /* restart an empty list at a random sample row */
                memcpy(cv, r->rows[sample[mix(&st) % ns]], x->dim * sizeof *cv);
                continue;
            }
            for (size_t d = 0; d < x->dim; d++)
                cv[d] = (float)sum[c * x->dim + d];
            (void)cairn__vec_normalize(cv, x->dim);
        }
    }
out:
    free(sample);
    free(assign);
    free(sum);
    free(count);
    return rc;
}

int cairn__ivf_build(cairn__ivf **out, const vkernel *kern, const ivf_rows *r, size_t nlist,
                     uint64_t seed)
{
    cairn__ivf *x;
    int8_t *c8 = NULL, *q8 = NULL;
    uint32_t *list_of = NULL;
    size_t *fill = NULL;
    int32_t dots[VSCAN_CHUNK];
    int rc;

    *out = NULL;
    if (r->n == 0 || r->dim == 0 || r->dim > VEC_DIM_MAX || r->n > UINT32_MAX)
        return CAIRN_EINVAL;
    if (nlist == 0)
        nlist = (size_t)(sqrt((double)r->n) + 0.5);
    if (nlist < 1)
        nlist = 1;
    if (nlist > r->n)
        nlist = r->n;
    if ((x = calloc(1, sizeof *x)) == NULL)
        return CAIRN_ENOMEM;
    x->n = r->n;
    x->dim = r->dim;
    x->stride = (r->dim + 7) & ~(size_t)7;
    x->nlist = nlist;
    x->rows = r->rows;
    x->cent = malloc(nlist * r->dim * sizeof *x->cent);
    x->off = calloc(nlist + 1, sizeof *x->off);
    x->ids = malloc(r->n * sizeof *x->ids);
    x->i8 = calloc(r->n, x->stride);
    x->scale = malloc(r->n * sizeof *x->scale);
    c8 = x->c8 = calloc(nlist, x->stride);
    x->c8_scale = malloc(nlist * sizeof *x->c8_scale);
    q8 = calloc(1, x->stride);
    list_of = malloc(r->n * sizeof *list_of);
    fill = calloc(nlist, sizeof *fill);
    if (x->cent == NULL || x->off == NULL || x->ids == NULL || x->i8 == NULL ||
        x->scale == NULL || c8 == NULL || x->c8_scale == NULL || q8 == NULL || list_of == NULL ||
        fill == NULL) {
        rc = CAIRN_ENOMEM;
        goto out;
    }
    if ((rc = train(x, kern, r, seed)) != CAIRN_OK)
        goto out;
    for (size_t c = 0; c < nlist; c++)
        x->c8_scale[c] = cairn__vec_quantize(x->cent + c * r->dim, r->dim, c8 + c * x->stride);
    /* assign every row to its nearest centroid by the int8 estimate */
    for (size_t i = 0; i < r->n; i++) {
        int32_t best = INT32_MIN;
        uint32_t bl = 0;
        (void)cairn__vec_quantize(r->rows[i], r->dim, q8);
        for (size_t base = 0; base < nlist; base += VSCAN_CHUNK) {
            size_t m = nlist - base < VSCAN_CHUNK ? nlist - base : VSCAN_CHUNK;
            kern->dot_i8_many(q8, c8 + base * x->stride, x->stride, r->dim, m, dots);
            for (size_t j = 0; j < m; j++)
                if (dots[j] > best) {
                    best = dots[j];
                    bl = (uint32_t)(base + j);
                }
        }
        list_of[i] = bl;
        x->off[bl + 1]++;
    }
    for (size_t c = 0; c < nlist; c++)
        x->off[c + 1] += x->off[c];
    for (size_t i = 0; i < r->n; i++) {
        size_t at = x->off[list_of[i]] + fill[list_of[i]]++;
        x->ids[at] = (uint32_t)i;
        x->scale[at] = cairn__vec_quantize(r->rows[i], r->dim, x->i8 + at * x->stride);
    }
    *out = x;
    x = NULL;
out:
    cairn__ivf_free(x);
    free(q8);
    free(list_of);
    free(fill);
    return rc;
}

void cairn__ivf_free(cairn__ivf *x)
{
    if (x == NULL)
        return;
    free(x->cent);
    free(x->c8);
    free(x->c8_scale);
    free(x->off);
    free(x->ids);
    free(x->i8);
    free(x->scale);
    free(x);
}

size_t cairn__ivf_nlist(const cairn__ivf *x)
{
    return x->nlist;
}

size_t cairn__ivf_bytes(const cairn__ivf *x)
{
    return sizeof *x + x->nlist * (x->dim * sizeof(float) + x->stride + sizeof(float)) +
           (x->nlist + 1) * sizeof(size_t) +
           x->n * (sizeof(uint32_t) + x->stride + sizeof(float));
}

/* The nprobe lists whose centroids score highest by the int8 estimate (a
 * quarter of the bytes of f32) into lists[]; returns how many. */
static size_t probe(const cairn__ivf *x, const vkernel *kern, const vec_query *q, size_t nprobe,
                    bm25_hit *lists)
{
    bm25_topk tl;
    int32_t dots[VSCAN_CHUNK];
    cairn__bm25_topk_init(&tl, lists, nprobe);
    for (size_t base = 0; base < x->nlist; base += VSCAN_CHUNK) {
        size_t m = x->nlist - base < VSCAN_CHUNK ? x->nlist - base : VSCAN_CHUNK;
        kern->dot_i8_many(q->q8, x->c8 + base * x->stride, x->stride, x->dim, m, dots);
        for (size_t j = 0; j < m; j++)
            cairn__bm25_topk_push(&tl, (uint32_t)(base + j), (double)dots[j] * x->c8_scale[base + j]);
    }
    return tl.n;
}

int cairn__ivf_search(const cairn__ivf *x, const vkernel *kern, const vec_query *q, size_t k,
                      size_t nprobe, const uint8_t *live, vec_hit *out, size_t *n_out)
{
    size_t rerank = cairn__vscan_rerank_n(k, 0), nl, nc, nb;
    bm25_hit *lists, *cand, *best;
    bm25_topk tc, tb;
    int32_t dots[VSCAN_CHUNK];

    *n_out = 0;
    if (q->dim != x->dim)
        return CAIRN_EINVAL;
    if (k == 0)
        return CAIRN_OK;
    if (nprobe == 0 || nprobe > x->nlist)
        nprobe = nprobe == 0 ? 1 : x->nlist;
    lists = malloc(nprobe * sizeof *lists);
    cand = malloc(rerank * sizeof *cand);
    best = malloc(k * sizeof *best);
    if (lists == NULL || cand == NULL || best == NULL) {
        free(lists);
        free(cand);
        free(best);
        return CAIRN_ENOMEM;
    }
    nl = probe(x, kern, q, nprobe, lists);
    cairn__bm25_topk_init(&tc, cand, rerank);
    for (size_t li = 0; li < nl; li++) {
        size_t l = lists[li].doc, lo = x->off[l], hi = x->off[l + 1];
        for (size_t base = lo; base < hi; base += VSCAN_CHUNK) {
            size_t m = hi - base < VSCAN_CHUNK ? hi - base : VSCAN_CHUNK;
            kern->dot_i8_many(q->q8, x->i8 + base * x->stride, x->stride, x->dim, m, dots);
            for (size_t j = 0; j < m; j++) {
                double est = (double)dots[j] * x->scale[base + j] * q->q_scale;
                uint32_t id = x->ids[base + j];
                if (tc.n == tc.k && est < tc.h[0].score)
                    continue;
                if (live == NULL || (live[id >> 3] >> (id & 7) & 1))
                    cairn__bm25_topk_push(&tc, id, est);
            }
        }
    }
    nc = tc.n;
    cairn__bm25_topk_init(&tb, best, k);
    for (size_t i = 0; i < nc; i++)
        cairn__bm25_topk_push(&tb, cand[i].doc, kern->dot_f32(q->q, x->rows[cand[i].doc], x->dim));
    nb = cairn__bm25_topk_finish(&tb);
    for (size_t i = 0; i < nb; i++) {
        out[i].doc = best[i].doc;
        out[i].score = best[i].score;
    }
    *n_out = nb;
    free(lists);
    free(cand);
    free(best);
    return CAIRN_OK;
}

int cairn__ivf_within(const cairn__ivf *x, const vkernel *kern, const vec_query *q, double t,
                      size_t nprobe, void (*fn)(void *user, uint32_t row, double sim),
                      void *user)
{
    bm25_hit *lists;
    int32_t dots[VSCAN_CHUNK];
    double floor = t - IVF_WITHIN_MARGIN;
    size_t nl;

    if (q->dim != x->dim)
        return CAIRN_EINVAL;
    if (nprobe == 0 || nprobe > x->nlist)
        nprobe = nprobe == 0 ? 1 : x->nlist;
    if ((lists = malloc(nprobe * sizeof *lists)) == NULL)
        return CAIRN_ENOMEM;
    nl = probe(x, kern, q, nprobe, lists);
    for (size_t li = 0; li < nl; li++) {
        size_t l = lists[li].doc, lo = x->off[l], hi = x->off[l + 1];
        for (size_t base = lo; base < hi; base += VSCAN_CHUNK) {
            size_t m = hi - base < VSCAN_CHUNK ? hi - base : VSCAN_CHUNK;
            kern->dot_i8_many(q->q8, x->i8 + base * x->stride, x->stride, x->dim, m, dots);
            for (size_t j = 0; j < m; j++) {
                uint32_t id;
                double sim;
                if ((double)dots[j] * x->scale[base + j] * q->q_scale < floor)
                    continue;
                id = x->ids[base + j];
                sim = kern->dot_f32(q->q, x->rows[id], x->dim);
                if (sim >= t)
                    fn(user, id, sim);
            }
        }
    }
    free(lists);
    return CAIRN_OK;
}
