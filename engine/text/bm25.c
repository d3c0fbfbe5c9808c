/*
 * bm25.c - see bm25.h.
 */
#include "bm25.h"

#include <math.h>

double cairn__bm25_idf(uint64_t n_docs, uint64_t df)
{
    return log(1.0 + ((double)n_docs - (double)df + 0.5) / ((double)df + 0.5));
}

void cairn__bm25_topk_init(bm25_topk *t, bm25_hit *h, size_t k)
{
    t->h = h;
    t->n = 0;
    t->k = k;
}

/* The heap's root is the hit every other one ranks before: the worst. */
static void sift_down(bm25_topk *t, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = i;
        bm25_hit tmp;
        if (l < t->n && cairn__bm25_before(&t->h[w], &t->h[l]))
            w = l;
        if (r < t->n && cairn__bm25_before(&t->h[w], &t->h[r]))
            w = r;
        if (w == i)
            return;
        tmp = t->h[i];
        t->h[i] = t->h[w];
        t->h[w] = tmp;
        i = w;
    }
}

void cairn__bm25_topk_push(bm25_topk *t, uint32_t doc, double score)
{
    bm25_hit x = {doc, score};

    if (t->k == 0)
        return;
    if (t->n < t->k) {
        size_t i = t->n++;
        while (i > 0) {
            size_t p = (i - 1) / 2;
            if (!cairn__bm25_before(&t->h[p], &x))
                break;
            t->h[i] = t->h[p];
            i = p;
        }
        t->h[i] = x;
        return;
    }
    if (!cairn__bm25_before(&x, &t->h[0]))
        return;
    t->h[0] = x;
    sift_down(t, 0);
}

size_t cairn__bm25_topk_finish(bm25_topk *t)
{
    size_t n = t->n;
    /* Heap sort: move the worst to the end, n times. */
    while (t->n > 1) {
        bm25_hit tmp = t->h[0];
        t->h[0] = t->h[t->n - 1];
        t->h[t->n - 1] = tmp;
        t->n--;
        sift_down(t, 0);
    }
    t->n = n;
    return n;
}
