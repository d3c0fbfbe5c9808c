/*
 * ramindex_search.c - BM25 top-k over RAM text indexes (ramindex.h:
 * cairn__ramidx_search, cairn__ramidx_search_many): a query's distinct
 * terms, their statistics over every index, then MaxScore over each.
 *
 * Search is MaxScore (Turtle & Flood 1995): each query term has an upper
 * bound on what it can add to a score (its idf times the tf part at its
 * largest tf and smallest document length); terms sorted by bound, the
 * cheapest ones whose bounds together cannot lift a document past the
 * current k-th score are "non-essential": documents are enumerated only
 * from the essential terms' postings, and non-essential terms are looked
 * up only while the document can still make it.
 *
 * A query term's cursor holds one block of its postings (ramindex_int.h,
 * PK_BLOCK), decoded (ramindex_postings.c); a lookup goes through the skip
 * table to the block that can hold the document (no block passed over is
 * decoded), then halves within it. Postings in RAM are read in place
 * through the same cursor, cut into blocks the same way. A mapped term's
 * postings are checked against their sum the first time a query reads
 * them (ramindex_image.c).
 */
#include "ramindex_int.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "bm25.h"
#include "tokenize.h"

/* ---- a query's terms ---------------------------------------------------- */

/* A distinct query term, and what every index says about it. */
typedef struct qword {
    uint32_t off, len; /* in the query's copy of term bytes */
    uint64_t df;       /* live documents holding it, over all indexes */
    double idf;
} qword;

typedef struct qbuf {
    const cairn_allocator *a;
    char *bytes;
    size_t len, cap;
    qword *w;
    size_t n, wcap;
    int failed;
} qbuf;

static int on_query_term(void *user, const char *s, size_t len, uint32_t pos)
{
    qbuf *q = user;
    (void)pos;
    for (size_t i = 0; i < q->n; i++)
        if (q->w[i].len == len && memcmp(q->bytes + q->w[i].off, s, len) == 0)
            return 0;
    if (cairn__grow(q->a, (void **)&q->w, &q->wcap, q->n + 1, sizeof *q->w) != CAIRN_OK ||
        cairn__grow(q->a, (void **)&q->bytes, &q->cap, q->len + len, 1) != CAIRN_OK) {
        q->failed = 1;
        return CAIRN_ENOMEM;
    }
    memcpy(q->bytes + q->len, s, len);
    q->w[q->n].off = (uint32_t)q->len;
    q->w[q->n].len = (uint32_t)len;
    q->w[q->n].df = 0;
    q->len += len;
    q->n++;
    return 0;
}

/* ---- a query term's cursor ---------------------------------------------- */

/* A query term and its cursor: the block it is in, decoded once into buf
 * (a mapped term's) or read in place (a term in RAM's). */
typedef struct qterm {
    const term *t;
    double idf;
    double ub;          /* most it can add to a score */
    const posting *p;   /* the cursor's block */
    posting *buf;       /* room for a block: not in the struct, which qsort moves */
    uint32_t i, k;      /* the cursor's place in p, p's postings */
    uint32_t blk;       /* p's block number */
    uint32_t doc;       /* p[i].doc (UINT32_MAX past the last): decoded once
                           however often the loop compares it */
} qterm;

/* The cursor at the first posting of block b (past the last if none). */
static void q_block(qterm *q, uint32_t b)
{
    q->blk = b;
    q->i = 0;
    q->k = b < nblocks(q->t) ? cairn__pk_term_block(q->t, b, q->buf, &q->p) : 0;
    /* k 0 in a checked term: never; read as the end */
    q->doc = q->k ? q->p[0].doc : UINT32_MAX;
}

static inline void q_next(qterm *q)
{
    if (++q->i < q->k)
        q->doc = q->p[q->i].doc;
    else
        q_block(q, q->blk + 1);
}

static inline uint32_t q_tf(const qterm *q)
{
    return q->p[q->i].tf;
}

static int by_ub(const void *a, const void *b)
{
    const qterm *x = a, *y = b;
    return x->ub < y->ub ? -1 : x->ub > y->ub;
}

/* The first block after b whose last document is >= d (nb: none):
 * galloping over the skip table, then halving, so that a near block is
 * found in a step or two and no block is decoded to be passed over. */
static uint32_t skip_to(const term *t, uint32_t b, uint32_t d)
{
    uint32_t nb = nblocks(t), lo = b + 1, step = 1, hi;
    while (lo < nb && block_last(t, lo) < d) {
        lo += step;
        step *= 2;
    }
    /* block lo - step / 2 (the last probed before lo) ends below d: the
     * answer is past it, and at most lo (whose last is >= d), or nb */
    hi = lo < nb ? lo : nb;
    if (step > 1)
        lo = lo - step / 2 + 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (block_last(t, mid) < d)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The cursor at its first posting with doc >= d (it never goes back). */
static void q_seek(qterm *q, uint32_t d)
{
    uint32_t lo, hi;
    if (q->doc >= d)
        return;
    if (q->p[q->k - 1].doc < d) {
        q_block(q, skip_to(q->t, q->blk, d));
        if (q->doc >= d)
            return;
    }
    lo = q->i + 1; /* p[i].doc < d <= p[k - 1].doc */
    hi = q->k - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (q->p[mid].doc < d)
            lo = mid + 1;
        else
            hi = mid;
    }
    q->i = lo;
    q->doc = q->p[lo].doc;
}

/* ---- MaxScore ----------------------------------------------------------- */

/* MaxScore over one index, into the shared top-k; its documents enter the
 * heap as base + local number. q: its query terms (m of them). */
#define DL_AHEAD 8 /* postings between a length's prefetch and its use */

static void maxscore(const cairn__ramidx *x, qterm *q, size_t m, double *cum, double avgdl,
                     uint32_t base, bm25_topk *top, ramidx_trace *tr)
{
    size_t p = 0;

    qsort(q, m, sizeof *q, by_ub);
    for (size_t i = 0; i < m; i++)
        cum[i] = q[i].ub + (i ? cum[i - 1] : 0.0);
    for (;;) {
        double floor = cairn__bm25_topk_floor(top), s = 0.0, norm;
        uint32_t d = UINT32_MAX;
        int pruned = 0;
        /* Terms [0, p) cannot lift a document to the floor on their own. */
        while (p < m && cum[p] < floor)
            p++;
        if (p == m)
            break;
        for (size_t i = p; i < m; i++)
            if (q[i].doc < d)
                d = q[i].doc;
        if (d == UINT32_MAX)
            break;
        if (!is_live(x, d)) {
            for (size_t i = p; i < m; i++)
                if (q[i].doc == d)
                    q_next(&q[i]);
            continue;
        }
        norm = (double)x->dl[d];
        for (size_t i = p; i < m; i++)
            if (q[i].doc == d) {
                s += q[i].idf * cairn__bm25_tf(q_tf(&q[i]), norm, avgdl);
                q_next(&q[i]);
                /* The lengths of the documents to come are scattered: ask
                 * for one a few postings ahead (in the same block), so
                 * that its miss overlaps the scoring of those before it. */
                if (q[i].i + DL_AHEAD < q[i].k)
                    __builtin_prefetch(&x->dl[q[i].p[q[i].i + DL_AHEAD].doc]);
            }
        for (size_t i = p; i-- > 0;) {
            if (s + cum[i] < floor) {
                pruned = 1;
                break;
            }
            q_seek(&q[i], d);
            if (q[i].doc == d) {
                s += q[i].idf * cairn__bm25_tf(q_tf(&q[i]), norm, avgdl);
                q_next(&q[i]);
            }
        }
        if (pruned) {
            tr->docs_pruned++;
            continue;
        }
        tr->docs_scored++;
        if (s >= floor) /* below it, the push would refuse it */
            cairn__bm25_topk_push(top, base + d, s);
    }
}

int cairn__ramidx_search_many(cairn__ramidx *const *xs, size_t nx, const uint8_t *text,
                              size_t len, size_t k, uint64_t *docs, double *scores,
                              size_t *n_out, ramidx_trace *trace)
{
    const cairn_allocator *a = nx ? xs[0]->a : NULL;
    qbuf qy;
    qterm *q = NULL;
    double *cum = NULL, avgdl;
    bm25_hit *heap = NULL;
    posting *bufs = NULL; /* a block for each query term */
    bm25_topk top;
    uint64_t n_live = 0, sum_dl = 0, ndocs = 0;
    ramidx_trace tr = {0, 0, 0};
    int rc = CAIRN_OK;

    *n_out = 0;
    memset(&qy, 0, sizeof qy);
    qy.a = a;
    for (size_t s = 0; s < nx; s++) {
        n_live += xs[s]->n_live;
        sum_dl += xs[s]->sum_dl;
        ndocs += xs[s]->ndocs;
        if (s > 0 && xs[s]->ndocs > 0 && xs[s - 1]->ndocs > 0 &&
            xs[s]->ext[0] <= xs[s - 1]->ext[xs[s - 1]->ndocs - 1])
            return CAIRN_EINVAL; /* ties would not follow document numbers */
    }
    if (ndocs >= UINT32_MAX)
        return CAIRN_EINVAL;
    if (k == 0 || n_live == 0)
        goto done;
    for (size_t s = 0; s < nx; s++)
        if (xs[s]->damaged)
            return CAIRN_ECORRUPT;
    rc = cairn__tok_run(xs[0]->tok, text, len, on_query_term, &qy);
    if (qy.failed)
        rc = CAIRN_ENOMEM;
    if (rc != CAIRN_OK)
        goto done;
    q = cairn__calloc(a, qy.n ? qy.n : 1, sizeof *q);
    cum = cairn__calloc(a, qy.n ? qy.n : 1, sizeof *cum);
    heap = cairn__calloc(a, k, sizeof *heap);
    bufs = cairn__calloc(a, (qy.n ? qy.n : 1) * PK_BLOCK, sizeof *bufs);
    if (q == NULL || cum == NULL || heap == NULL || bufs == NULL) {
        rc = CAIRN_ENOMEM;
        goto done;
    }
    /* Statistics over every index: the score of a document does not depend
     * on which index holds it. */
    for (size_t i = 0; i < qy.n; i++) {
        for (size_t s = 0; s < nx; s++) {
            long id = cairn__ramidx_lookup(xs[s], qy.bytes + qy.w[i].off, qy.w[i].len);
            if (id >= 0)
                qy.w[i].df += T(xs[s], (size_t)id)->df;
        }
        qy.w[i].idf = cairn__bm25_idf(n_live, qy.w[i].df);
    }
    /* A damaged record looked up reads as no term: the query fails
     * rather than answer without it. */
    for (size_t s = 0; s < nx; s++)
        if (xs[s]->damaged) {
            rc = CAIRN_ECORRUPT;
            goto done;
        }
    avgdl = (double)sum_dl / (double)n_live;
    cairn__bm25_topk_init(&top, heap, k);
    for (size_t s = 0, base = 0; s < nx; base += xs[s]->ndocs, s++) {
        size_t m = 0;
        for (size_t i = 0; i < qy.n; i++) {
            long id = cairn__ramidx_lookup(xs[s], qy.bytes + qy.w[i].off, qy.w[i].len);
            term *t = id >= 0 ? T(xs[s], (size_t)id) : NULL;
            if (t == NULL || t->df == 0)
                continue;
            if ((rc = cairn__ramidx_check_postings(xs[s], t)) != CAIRN_OK)
                goto done;
            if (xs[s]->damaged) {
                rc = CAIRN_ECORRUPT;
                goto done;
            }
            q[m].t = t;
            q[m].idf = qy.w[i].idf;
            /* Rounding must never make a real score exceed its bound. */
            q[m].ub = q[m].idf * cairn__bm25_tf(t->max_tf, t->min_dl, avgdl) * (1.0 + 1e-9);
            q[m].buf = bufs + m * PK_BLOCK;
            q_block(&q[m], 0);
            tr.postings += t->n;
            m++;
        }
        maxscore(xs[s], q, m, cum, avgdl, (uint32_t)base, &top, &tr);
    }
    *n_out = cairn__bm25_topk_finish(&top);
    for (size_t i = 0; i < *n_out; i++) {
        uint32_t d = heap[i].doc;
        size_t s = 0;
        while (d >= xs[s]->ndocs)
            d -= (uint32_t)xs[s++]->ndocs;
        docs[i] = xs[s]->ext[d];
        scores[i] = heap[i].score;
    }
done:
    cairn__free(a, qy.bytes);
    cairn__free(a, qy.w);
    cairn__free(a, q);
    cairn__free(a, cum);
    cairn__free(a, heap);
    cairn__free(a, bufs);
    if (trace != NULL)
        *trace = tr;
    return rc;
}

int cairn__ramidx_search(cairn__ramidx *x, const uint8_t *query, size_t len, size_t k,
                         uint64_t *docs, double *scores, size_t *n_out, ramidx_trace *trace)
{
    return cairn__ramidx_search_many(&x, 1, query, len, k, docs, scores, n_out, trace);
}
