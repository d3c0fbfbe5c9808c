/*
 * ramindex.c - see ramindex.h.
 *
 * Layout: a term dictionary (open addressing over term numbers, the bytes
 * in one arena), one postings array per term ({local doc, tf}, in document
 * order), and per local document its caller number, its length in terms and
 * a live bit. Local document numbers are dense (0, 1, ...) and follow the
 * caller's order, so ties broken by local number are broken by caller
 * number too.
 *
 * Search is MaxScore (Turtle & Flood 1995): each query term has an upper
 * bound on what it can add to a score (its idf times the tf part at its
 * largest tf and smallest document length); terms sorted by bound, the
 * cheapest ones whose bounds together cannot lift a document past the
 * current k-th score are "non-essential": documents are enumerated only
 * from the essential terms' postings, and non-essential terms are looked
 * up (binary search) only while the document can still make it.
 */
#include "ramindex.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "alloc.h"
#include "tokenize.h"

typedef struct posting {
    uint32_t doc; /* local document number */
    uint32_t tf;
} posting;

typedef struct term {
    uint32_t off;        /* bytes in the arena */
    uint32_t len;
    posting *p;          /* every document that had it, dead ones too */
    uint32_t n, cap;
    uint32_t df;         /* live documents holding it */
    uint32_t max_tf;     /* over all its postings: bounds stay valid */
    uint32_t min_dl;
    uint32_t mark;       /* last local document (+1) that counted it */
    uint32_t slot;       /* its place in the scratch list of that document */
} term;

typedef struct scratch_ent {
    uint32_t term;
    uint32_t tf;
} scratch_ent;

struct cairn__ramidx {
    const cairn_allocator *a;
    cairn__tokenizer *tok;
    char *arena;             /* term bytes */
    size_t arena_len, arena_cap;
    term *terms;
    size_t nterms, terms_cap;
    uint64_t *table;         /* slot: (hash >> 32) << 32 | term number + 1; 0 = empty;
                                size a power of 2. The hash half answers most
                                mismatches without touching the term. */
    size_t table_cap;
    uint64_t *ext;           /* caller's number of each local document */
    uint32_t *dl;            /* its length in terms */
    uint64_t *live;          /* bit per local document */
    size_t ndocs, docs_cap;
    uint64_t n_live, sum_dl; /* over live documents */
    scratch_ent *scr;        /* the document or query being tokenized */
    size_t nscr, scr_cap;
    uint32_t terms_seen;     /* terms of it, repeats included */
    uint32_t cur_mark;
    int failed;              /* no memory during the current tokenization */
    int lookup_only;         /* query: do not add unknown terms */
};

int cairn__ramidx_new(cairn__ramidx **out, const cairn_allocator *a, const char *stemmer)
{
    cairn__ramidx *x;
    int rc;

    *out = NULL;
    x = cairn__calloc(a, 1, sizeof *x);
    if (x == NULL)
        return CAIRN_ENOMEM;
    x->a = a;
    rc = cairn__tok_new(&x->tok, a, stemmer);
    if (rc != CAIRN_OK) {
        cairn__free(a, x);
        return rc;
    }
    *out = x;
    return CAIRN_OK;
}

void cairn__ramidx_free(cairn__ramidx *x)
{
    if (x == NULL)
        return;
    for (size_t i = 0; i < x->nterms; i++)
        cairn__free(x->a, x->terms[i].p);
    cairn__free(x->a, x->terms);
    cairn__free(x->a, x->arena);
    cairn__free(x->a, x->table);
    cairn__free(x->a, x->ext);
    cairn__free(x->a, x->dl);
    cairn__free(x->a, x->live);
    cairn__free(x->a, x->scr);
    cairn__tok_free(x->tok);
    cairn__free(x->a, x);
}

uint64_t cairn__ramidx_count(const cairn__ramidx *x)
{
    return x->n_live;
}

/* ---- the term dictionary ------------------------------------------------ */

static size_t find_slot(const cairn__ramidx *x, const char *s, size_t len, uint64_t h)
{
    size_t mask = x->table_cap - 1, i = (size_t)h & mask;
    uint64_t fp = h >> 32;
    for (;; i = (i + 1) & mask) {
        uint64_t v = x->table[i];
        uint32_t id = (uint32_t)v;
        if (v == 0)
            return i;
        if ((v >> 32) == fp && x->terms[id - 1].len == len &&
            memcmp(x->arena + x->terms[id - 1].off, s, len) == 0)
            return i;
    }
}

static int grow_table(cairn__ramidx *x)
{
    size_t cap = x->table_cap ? x->table_cap * 2 : 1024;
    uint64_t *t = cairn__calloc(x->a, cap, sizeof *t), *old = x->table;
    size_t old_cap = x->table_cap;
    if (t == NULL)
        return CAIRN_ENOMEM;
    x->table = t;
    x->table_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i] != 0) {
            const term *tm = &x->terms[(uint32_t)old[i] - 1];
            const char *s = x->arena + tm->off;
            x->table[find_slot(x, s, tm->len, XXH3_64bits(s, tm->len))] = old[i];
        }
    cairn__free(x->a, old);
    return CAIRN_OK;
}

/* The term's number, added if new (unless lookup_only): -1 unknown,
 * -2 no memory. */
static long term_id(cairn__ramidx *x, const char *s, size_t len)
{
    uint64_t h = XXH3_64bits(s, len);
    size_t slot;
    term *tm;

    if (x->table_cap == 0 || (x->nterms + 1) * 2 > x->table_cap) { /* load <= 1/2: short probes */
        if (x->lookup_only && x->table_cap == 0)
            return -1;
        if (!x->lookup_only && grow_table(x) != CAIRN_OK)
            return -2;
    }
    slot = find_slot(x, s, len, h);
    if (x->table[slot] != 0)
        return (long)(uint32_t)x->table[slot] - 1;
    if (x->lookup_only)
        return -1;
    if (cairn__grow(x->a, (void **)&x->terms, &x->terms_cap, x->nterms + 1, sizeof *x->terms) != CAIRN_OK ||
        cairn__grow(x->a, (void **)&x->arena, &x->arena_cap, x->arena_len + len, 1) != CAIRN_OK)
        return -2;
    tm = &x->terms[x->nterms];
    memset(tm, 0, sizeof *tm);
    tm->off = (uint32_t)x->arena_len;
    tm->len = (uint32_t)len;
    tm->min_dl = UINT32_MAX;
    memcpy(x->arena + x->arena_len, s, len);
    x->arena_len += len;
    x->table[slot] = (h >> 32) << 32 | (uint64_t)(x->nterms + 1);
    return (long)x->nterms++;
}

/* Tokenizer callback: count each distinct term once per text. */
static int on_term(void *user, const char *s, size_t len, uint32_t pos)
{
    cairn__ramidx *x = user;
    long id = term_id(x, s, len);
    term *tm;
    (void)pos;

    x->terms_seen++;
    if (id == -1)
        return 0;
    if (id == -2) {
        x->failed = 1;
        return CAIRN_ENOMEM;
    }
    tm = &x->terms[id];
    if (tm->mark == x->cur_mark) {
        x->scr[tm->slot].tf++;
        return 0;
    }
    if (cairn__grow(x->a, (void **)&x->scr, &x->scr_cap, x->nscr + 1, sizeof *x->scr) != CAIRN_OK) {
        x->failed = 1;
        return CAIRN_ENOMEM;
    }
    tm->mark = x->cur_mark;
    tm->slot = (uint32_t)x->nscr;
    x->scr[x->nscr].term = (uint32_t)id;
    x->scr[x->nscr].tf = 1;
    x->nscr++;
    return 0;
}

/* Tokenize into x->scr (distinct terms, tf each). */
static int gather(cairn__ramidx *x, const uint8_t *text, size_t len, int lookup_only)
{
    int rc;
    x->nscr = 0;
    x->terms_seen = 0;
    x->failed = 0;
    x->lookup_only = lookup_only;
    if (++x->cur_mark == 0) { /* wrapped: clear every mark once */
        for (size_t i = 0; i < x->nterms; i++)
            x->terms[i].mark = 0;
        x->cur_mark = 1;
    }
    rc = cairn__tok_run(x->tok, text, len, on_term, x);
    return x->failed ? CAIRN_ENOMEM : rc;
}

/* ---- documents ---------------------------------------------------------- */

/* Double the per-document arrays (a multiple of 64 documents, so the live
 * bitmap has whole words). A failure leaves the capacity as it was. */
static int grow_docs(cairn__ramidx *x)
{
    size_t cap = x->docs_cap ? x->docs_cap * 2 : 1024;
    size_t old_words = x->docs_cap / 64;
    void *p;

    p = cairn__realloc(x->a, x->ext, cap * sizeof *x->ext);
    if (p == NULL)
        return CAIRN_ENOMEM;
    x->ext = p;
    p = cairn__realloc(x->a, x->dl, cap * sizeof *x->dl);
    if (p == NULL)
        return CAIRN_ENOMEM;
    x->dl = p;
    p = cairn__realloc(x->a, x->live, cap / 64 * sizeof *x->live);
    if (p == NULL)
        return CAIRN_ENOMEM;
    x->live = p;
    memset(x->live + old_words, 0, (cap / 64 - old_words) * sizeof *x->live);
    x->docs_cap = cap;
    return CAIRN_OK;
}

int cairn__ramidx_add(cairn__ramidx *x, uint64_t doc, const uint8_t *text, size_t len)
{
    uint32_t local = (uint32_t)x->ndocs;
    int rc;

    if (x->ndocs > 0 && doc <= x->ext[x->ndocs - 1])
        return CAIRN_EINVAL;
    if (x->ndocs >= UINT32_MAX - 1)
        return CAIRN_ENOMEM;
    /* Room first, so that nothing is half-added. */
    if (x->ndocs == x->docs_cap && grow_docs(x) != CAIRN_OK)
        return CAIRN_ENOMEM;
    rc = gather(x, text, len, 0);
    if (rc != CAIRN_OK)
        return rc;
    for (size_t i = 0; i < x->nscr; i++) {
        term *tm = &x->terms[x->scr[i].term];
        size_t cap = tm->cap;
        if (cairn__grow(x->a, (void **)&tm->p, &cap, (size_t)tm->n + 1, sizeof *tm->p) != CAIRN_OK)
            return CAIRN_ENOMEM;
        tm->cap = (uint32_t)cap;
    }
    for (size_t i = 0; i < x->nscr; i++) {
        term *tm = &x->terms[x->scr[i].term];
        uint32_t tf = x->scr[i].tf;
        tm->p[tm->n].doc = local;
        tm->p[tm->n].tf = tf;
        tm->n++;
        tm->df++;
        if (tf > tm->max_tf)
            tm->max_tf = tf;
        if (x->terms_seen < tm->min_dl)
            tm->min_dl = x->terms_seen;
    }
    x->ext[local] = doc;
    x->dl[local] = x->terms_seen;
    x->live[local / 64] |= 1ull << (local % 64);
    x->ndocs++;
    x->n_live++;
    x->sum_dl += x->terms_seen;
    return CAIRN_OK;
}

static int is_live(const cairn__ramidx *x, uint32_t local)
{
    return (x->live[local / 64] >> (local % 64)) & 1;
}

int cairn__ramidx_remove(cairn__ramidx *x, uint64_t doc, const uint8_t *text, size_t len)
{
    size_t lo = 0, hi = x->ndocs;
    uint32_t local;
    int rc;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->ext[mid] < doc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == x->ndocs || x->ext[lo] != doc || !is_live(x, (uint32_t)lo))
        return CAIRN_ENOTFOUND;
    local = (uint32_t)lo;
    rc = gather(x, text, len, 1); /* every term of it is known */
    if (rc != CAIRN_OK)
        return rc;
    for (size_t i = 0; i < x->nscr; i++)
        if (x->terms[x->scr[i].term].df > 0)
            x->terms[x->scr[i].term].df--;
    x->live[local / 64] &= ~(1ull << (local % 64));
    x->n_live--;
    x->sum_dl -= x->dl[local];
    return CAIRN_OK;
}

/* ---- search ------------------------------------------------------------- */

typedef struct qterm {
    const term *t;
    double idf;
    double ub;   /* most it can add to a score */
    uint32_t at; /* cursor into t->p */
} qterm;

static int by_ub(const void *a, const void *b)
{
    const qterm *x = a, *y = b;
    return x->ub < y->ub ? -1 : x->ub > y->ub;
}

/* First posting at or after position `from` with doc >= d. */
static uint32_t seek(const term *t, uint32_t from, uint32_t d)
{
    uint32_t lo = from, hi = t->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->p[mid].doc < d)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int cairn__ramidx_search(cairn__ramidx *x, const uint8_t *query, size_t len, size_t k,
                         uint64_t *docs, double *scores, size_t *n_out, ramidx_trace *trace)
{
    qterm *q = NULL;
    double *cum = NULL, avgdl;
    bm25_hit *heap = NULL;
    bm25_topk top;
    size_t m = 0, p = 0;
    ramidx_trace tr = {0, 0, 0};
    int rc;

    *n_out = 0;
    if (k == 0 || x->n_live == 0)
        goto done_ok;
    rc = gather(x, query, len, 1);
    if (rc != CAIRN_OK)
        return rc;
    q = cairn__calloc(x->a, x->nscr ? x->nscr : 1, sizeof *q);
    cum = cairn__calloc(x->a, x->nscr ? x->nscr : 1, sizeof *cum);
    heap = cairn__calloc(x->a, k, sizeof *heap);
    if (q == NULL || cum == NULL || heap == NULL) {
        rc = CAIRN_ENOMEM;
        goto cleanup;
    }
    avgdl = (double)x->sum_dl / (double)x->n_live;
    for (size_t i = 0; i < x->nscr; i++) {
        const term *t = &x->terms[x->scr[i].term];
        if (t->df == 0)
            continue;
        q[m].t = t;
        q[m].idf = cairn__bm25_idf(x->n_live, t->df);
        /* Rounding must never make a real score exceed its bound. */
        q[m].ub = q[m].idf * cairn__bm25_tf(t->max_tf, t->min_dl, avgdl) * (1.0 + 1e-9);
        q[m].at = 0;
        tr.postings += t->n;
        m++;
    }
    qsort(q, m, sizeof *q, by_ub);
    for (size_t i = 0; i < m; i++)
        cum[i] = q[i].ub + (i ? cum[i - 1] : 0.0);
    cairn__bm25_topk_init(&top, heap, k);
    for (;;) {
        double floor = cairn__bm25_topk_floor(&top), s = 0.0, norm;
        uint32_t d = UINT32_MAX;
        int pruned = 0;
        /* Terms [0, p) cannot lift a document to the floor on their own. */
        while (p < m && cum[p] < floor)
            p++;
        if (p == m)
            break;
        for (size_t i = p; i < m; i++)
            if (q[i].at < q[i].t->n && q[i].t->p[q[i].at].doc < d)
                d = q[i].t->p[q[i].at].doc;
        if (d == UINT32_MAX)
            break;
        if (!is_live(x, d)) {
            for (size_t i = p; i < m; i++)
                if (q[i].at < q[i].t->n && q[i].t->p[q[i].at].doc == d)
                    q[i].at++;
            continue;
        }
        norm = (double)x->dl[d];
        for (size_t i = p; i < m; i++)
            if (q[i].at < q[i].t->n && q[i].t->p[q[i].at].doc == d) {
                s += q[i].idf * cairn__bm25_tf(q[i].t->p[q[i].at].tf, norm, avgdl);
                q[i].at++;
            }
        for (size_t i = p; i-- > 0;) {
            if (s + cum[i] < floor) {
                pruned = 1;
                break;
            }
            q[i].at = seek(q[i].t, q[i].at, d);
            if (q[i].at < q[i].t->n && q[i].t->p[q[i].at].doc == d) {
                s += q[i].idf * cairn__bm25_tf(q[i].t->p[q[i].at].tf, norm, avgdl);
                q[i].at++;
            }
        }
        if (pruned) {
            tr.docs_pruned++;
            continue;
        }
        tr.docs_scored++;
        cairn__bm25_topk_push(&top, d, s);
    }
    *n_out = cairn__bm25_topk_finish(&top);
    for (size_t i = 0; i < *n_out; i++) {
        docs[i] = x->ext[heap[i].doc];
        scores[i] = heap[i].score;
    }
done_ok:
    rc = CAIRN_OK;
cleanup:
    cairn__free(x->a, q);
    cairn__free(x->a, cum);
    cairn__free(x->a, heap);
    if (trace != NULL)
        *trace = tr;
    return rc;
}
