/*
 * ramindex_image.c - the text index's file image (format-spec/memindex.md,
 * "text index"): cairn__ramidx_write, cairn__ramidx_merge_write (the image
 * a merge would write, written as it is made), cairn__ramidx_map, and what
 * a mapped index reads on demand and checks: a term's record on first use
 * (cairn__ramidx_load_term, through T), the image's term table
 * (cairn__ramidx_frozen_lookup), a term's postings against their sum the
 * first time a query reads them (cairn__ramidx_check_postings), all of it
 * (cairn__ramidx_check).
 *
 * A mapped index reads term records, postings, term bytes and document
 * tables in place from the caller's bytes; only the live bitmap is copied.
 * A term of one posting (in bench_memory's texts, most terms: each memory's
 * own name) has a short record holding that posting and no postings bytes;
 * mapped, its posting is read in place as a term in RAM's is. The postings'
 * blocks are ramindex_postings.c's.
 */
#include "ramindex_int.h"

#include <stddef.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "alloc.h"

/* ---- bytes -------------------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4); /* little-endian hosts only: see cairn__ramidx_write */
}

static void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* ---- writing ------------------------------------------------------------ */

/* A term the image gives a single record (TIX_SINGLE bytes, its posting
 * in it) rather than a full one and postings: one posting, and a length
 * and tf - 1 that fit the record's u16s. Decided from counts the writers
 * know before the head is written (merge_write: once counted). */
static int is_single(const term *tm)
{
    return tm->n == 1 && tm->max_tf - 1 <= TIX_SINGLE_MAX && tm->len <= TIX_SINGLE_MAX;
}

/* An image's term table: u32 slots, 0 empty, else a tag (the top bits of
 * the term's XXH3-64 hash) above the term's image number + 1 in idbits
 * bits, the least that hold nterms; at most 3/4 full, of any size; a probe
 * starts at the hash's low 32 bits scaled to the table. 5.3 bytes a term,
 * where slots of 8 bytes in a power of 2 at most 3/4 full took 13.4 at
 * 312,144 terms. The RAM table keeps its own form, at most 1/2 full. */
static size_t image_tcap(size_t n)
{
    return n == 0 ? 0 : n + n / 3 + 1;
}

static unsigned image_idbits(uint64_t nterms)
{
    return bits_of(nterms);
}

static inline size_t image_slot(uint64_t h, size_t cap)
{
    return (size_t)(((uint64_t)(uint32_t)h * cap) >> 32);
}

/* The tag of hash h in a slot of idbits ids (none when they take all 32). */
static inline uint32_t image_tag(uint64_t h, unsigned idbits)
{
    return idbits >= 32 ? 0 : (uint32_t)(h >> (32 + idbits)) << idbits;
}

/* x's terms in a table of cap slots (in RAM: an image is written from
 * RAM), each under its image number img[id]. */
static uint32_t *image_table(const cairn__ramidx *x, size_t cap, const uint32_t *img)
{
    uint32_t *t = cairn__calloc(x->a, cap, sizeof *t);
    unsigned idbits = image_idbits(x->nterms);
    if (t == NULL)
        return NULL;
    for (size_t id = 0; id < x->nterms; id++) {
        const term *tm = &x->terms[id];
        uint64_t h = XXH3_64bits(x->arena + tm->off, tm->len);
        size_t i = image_slot(h, cap);
        while (t[i] != 0)
            i = i + 1 == cap ? 0 : i + 1;
        t[i] = image_tag(h, idbits) | (img[id] + 1);
    }
    return t;
}

/* The image numbers of x's terms: the full ones first, then the single
 * ones, each kind in x's order (NULL: no memory). *nsingle: how many
 * single ones. */
static uint32_t *image_numbers(const cairn__ramidx *x, uint64_t *nsingle)
{
    uint32_t *img = cairn__calloc(x->a, x->nterms ? x->nterms : 1, sizeof *img);
    uint32_t full = 0, one = 0;
    if (img == NULL)
        return NULL;
    for (size_t id = 0; id < x->nterms; id++)
        one += (uint32_t)is_single(&x->terms[id]);
    *nsingle = one;
    one = (uint32_t)(x->nterms - one);
    for (size_t id = 0; id < x->nterms; id++)
        img[id] = is_single(&x->terms[id]) ? one++ : full++;
    return img;
}

/* Term tm's full record (its postings at byte at of the section). With
 * sums, its postings sum is its `sum` (the postings are not in x:
 * cairn__ramidx_merge_write). */
static void full_record(uint8_t *t, const term *tm, uint64_t at, int sums)
{
    put32(t, tm->off);
    put32(t + 4, tm->len);
    put64(t + 8, at);
    put32(t + 16, tm->n);
    put32(t + 20, tm->df);
    put32(t + 24, tm->max_tf);
    put32(t + 28, tm->min_dl);
    put64(t + 32, sums ? tm->sum : XXH3_64bits(tm->p, (size_t)tm->n * sizeof *tm->p));
}

/* Term tm's single record: its posting is p. The check covers the rest,
 * so that a damaged document number is caught, not read as another. */
static void single_record(uint8_t *t, const term *tm, posting p)
{
    put32(t, tm->off);
    t[4] = (uint8_t)tm->len;
    t[5] = (uint8_t)(tm->len >> 8);
    t[6] = (uint8_t)(p.tf - 1);
    t[7] = (uint8_t)((p.tf - 1) >> 8);
    put32(t + 8, p.doc);
    put32(t + 12, (uint32_t)XXH3_64bits(t, 12));
}

/* x's term records, the full ones then the single ones (is_single). */
static int write_records(const cairn__ramidx *x, const pk_plan *pl, int sums,
                         cairn__ramidx_put_fn put, void *user)
{
    uint8_t t[TIX_TERM];
    uint64_t at = 0;
    int rc = CAIRN_OK;
    for (size_t i = 0; rc == CAIRN_OK && i < x->nterms; i++) {
        const term *tm = &x->terms[i];
        if (is_single(tm))
            continue;
        full_record(t, tm, at, sums);
        at += pl->len[i];
        rc = put(user, t, TIX_TERM);
    }
    for (size_t i = 0; rc == CAIRN_OK && i < x->nterms; i++) {
        const term *tm = &x->terms[i];
        if (!is_single(tm))
            continue;
        single_record(t, tm, sums ? tm->one : tm->p[0]);
        rc = put(user, t, TIX_SINGLE);
    }
    return rc;
}

/* The head of x's image (all but the postings), then the head mark. sums:
 * as full_record. */
static int write_head(const cairn__ramidx *x, const pk_plan *pl, int sums,
                      cairn__ramidx_put_fn put, void *user)
{
    static const uint8_t zeros[8];
    uint8_t h[TIX_HEAD];
    uint64_t post_len = pad8((size_t)pl->total + TIX_SLACK), nsingle = 0;
    uint32_t *table = NULL;
    size_t tcap = image_tcap(x->nterms);
    uint32_t *img;
    int rc;

    if (tcap > UINT32_MAX) /* a slot's start is its hash's low 32 bits times tcap */
        return CAIRN_EINVAL;
    if ((img = image_numbers(x, &nsingle)) == NULL)
        return CAIRN_ENOMEM;
    memset(h, 0, sizeof h);
    put32(h, TIX_MAGIC);
    put32(h + 4, TIX_VERSION);
    put64(h + 8, x->ndocs);
    put64(h + 16, x->nterms);
    put64(h + 24, tcap);
    put64(h + 32, x->arena_len);
    put64(h + 40, post_len);
    put64(h + 48, x->n_live);
    put64(h + 56, x->sum_dl);
    put64(h + 64, nsingle);
    put64(h + 72, XXH3_64bits(h, 72));
    if ((rc = put(user, h, sizeof h)) == CAIRN_OK)
        rc = write_records(x, pl, sums, put, user);
    if (rc == CAIRN_OK && tcap && (table = image_table(x, tcap, img)) == NULL)
        rc = CAIRN_ENOMEM;
    cairn__free(x->a, img);
    if (rc == CAIRN_OK && tcap)
        rc = put(user, table, tcap * 4);
    cairn__free(x->a, table);
    if (rc == CAIRN_OK)
        rc = put(user, zeros, pad8(tcap * 4) - tcap * 4);
    if (rc != CAIRN_OK ||
        (x->ndocs && (rc = put(user, x->ext, x->ndocs * 8)) != CAIRN_OK) ||
        (x->ndocs && (rc = put(user, x->dl, x->ndocs * 4)) != CAIRN_OK) ||
        (rc = put(user, zeros, pad8(x->ndocs * 4) - x->ndocs * 4)) != CAIRN_OK ||
        (x->ndocs && (rc = put(user, x->live, (x->ndocs + 63) / 64 * 8)) != CAIRN_OK) ||
        (x->arena_len && (rc = put(user, x->arena, x->arena_len)) != CAIRN_OK) ||
        (rc = put(user, zeros, pad8(x->arena_len) - x->arena_len)) != CAIRN_OK)
        return rc;
    return put(user, NULL, 0); /* the head ends: postings follow */
}

/* x's terms' postings in blocks, after its head (x->terms[t].n and
 * max_tf as they will be, pl their plan); more(t) gives term t's
 * postings to e. */
static int write_postings(const cairn__ramidx *x, const pk_plan *pl, pk_enc *e,
                          int (*more)(void *u, size_t t, pk_enc *e), void *u)
{
    const uint32_t *skip = pl->skip;
    int rc = CAIRN_OK;
    e->db = doc_bits(x->ndocs);
    for (size_t t = 0; rc == CAIRN_OK && t < x->nterms; t++) {
        uint64_t from = e->out;
        if (is_single(&x->terms[t]))
            continue; /* its posting is in its record */
        rc = cairn__pk_term(e, x->terms[t].n, x->terms[t].max_tf, &skip);
        if (rc == CAIRN_OK)
            rc = more(u, t, e);
        if (rc == CAIRN_OK && e->k)
            rc = cairn__pk_block(e);
        /* The head said where each term starts: a source that gave other
         * postings the second time through (it cannot, unless its bytes
         * changed under us) must not leave a file that says otherwise. */
        if (rc == CAIRN_OK && e->out - from != pl->len[t])
            rc = CAIRN_ECORRUPT;
    }
    return rc == CAIRN_OK ? cairn__pk_end(e) : rc;
}

/* The postings of a RAM index, made before its head (which gives each
 * term's offset) into memory: each term sized and encoded one after the
 * other, so that the encoder reads the postings the sizing has just
 * brought into the cache (sizing every term, then encoding every term,
 * missed the cache for each twice: a quarter of a close's text image). A
 * RAM index is a tail of at most a flush's memories: a few MB of postings. */
typedef struct membuf {
    const cairn_allocator *a;
    uint8_t *b;
    size_t n, cap;
} membuf;

static int membuf_put(void *u, const void *p, size_t n)
{
    membuf *m = u;
    if (p == NULL || n == 0)
        return CAIRN_OK;
    if (cairn__grow(m->a, (void **)&m->b, &m->cap, m->n + n, 1) != CAIRN_OK)
        return CAIRN_ENOMEM;
    memcpy(m->b + m->n, p, n);
    m->n += n;
    return CAIRN_OK;
}

static int ram_postings(const cairn__ramidx *x, pk_plan *pl, pk_enc *e)
{
    unsigned db = doc_bits(x->ndocs);
    int rc = CAIRN_OK;
    e->db = db;
    for (size_t t = 0; rc == CAIRN_OK && t < x->nterms; t++) {
        const term *tm = &x->terms[t];
        size_t first = pl->nskip;
        const uint32_t *skip;
        uint64_t from = e->out;
        cairn__pk_plan_feed(pl, tm->p, tm->n);
        if ((rc = cairn__pk_plan_end(pl, t, db, tm->max_tf, is_single(tm))) != CAIRN_OK ||
            is_single(tm))
            continue; /* a single term's posting is in its record */
        skip = pl->skip + first;
        rc = cairn__pk_term(e, tm->n, tm->max_tf, &skip);
        if (rc == CAIRN_OK)
            rc = cairn__pk_push(e, tm->p, tm->n);
        if (rc == CAIRN_OK && e->k)
            rc = cairn__pk_block(e);
        if (rc == CAIRN_OK && e->out - from != pl->len[t])
            rc = CAIRN_ECORRUPT; /* the sizing and the encoder disagree */
    }
    return rc == CAIRN_OK ? cairn__pk_end(e) : rc;
}

int cairn__ramidx_image_make(const cairn__ramidx *x, cairn__ramidx_image *img)
{
    membuf head = {x->a, NULL, 0, 0}, mb = {x->a, NULL, 0, 0};
    pk_enc *e = NULL;
    pk_plan pl;
    int rc;

    memset(img, 0, sizeof *img);
    img->a = x->a;
    if (x->frozen && x->nterms > 0) /* a mapped index is written by merging it */
        return CAIRN_EINVAL;
    rc = cairn__pk_plan_init(&pl, x->a, x->nterms);
    if (rc == CAIRN_OK && (e = cairn__calloc(x->a, 1, sizeof *e)) == NULL)
        rc = CAIRN_ENOMEM;
    if (rc == CAIRN_OK) {
        e->put = membuf_put;
        e->user = &mb;
        rc = ram_postings(x, &pl, e);
    }
    if (rc == CAIRN_OK)
        rc = write_head(x, &pl, 0, membuf_put, &head); /* its end mark: the put's */
    cairn__free(x->a, e);
    cairn__pk_plan_free(&pl);
    if (rc != CAIRN_OK) {
        cairn__free(x->a, head.b);
        cairn__free(x->a, mb.b);
        return rc;
    }
    img->head = head.b;
    img->head_len = head.n;
    img->post = mb.b;
    img->post_len = mb.n;
    return CAIRN_OK;
}

int cairn__ramidx_image_put(const cairn__ramidx_image *img, cairn__ramidx_put_fn put, void *user)
{
    int rc = img->head_len ? put(user, img->head, img->head_len) : CAIRN_OK;
    if (rc == CAIRN_OK)
        rc = put(user, NULL, 0); /* the head ends: postings follow */
    if (rc == CAIRN_OK && img->post_len)
        rc = put(user, img->post, img->post_len);
    return rc;
}

void cairn__ramidx_image_free(cairn__ramidx_image *img)
{
    cairn__free(img->a, img->head);
    cairn__free(img->a, img->post);
    memset(img, 0, sizeof *img);
}

int cairn__ramidx_write(const cairn__ramidx *x, cairn__ramidx_put_fn put, void *user)
{
    cairn__ramidx_image img;
    int rc = cairn__ramidx_image_make(x, &img);
    if (rc == CAIRN_OK)
        rc = cairn__ramidx_image_put(&img, put, user);
    cairn__ramidx_image_free(&img);
    return rc;
}

/* ---- a merge written as it goes ----------------------------------------- */

#define MW_CHUNK 512 /* postings made at a time */

/* The merge's state: the merged index without its postings (documents,
 * terms, table: made as cairn__ramidx_merge makes them), and where each
 * merged term's postings come from. */
typedef struct mwrite {
    cairn__ramidx *x;
    cairn__ramidx *const *src;
    size_t n;
    uint32_t **remap;    /* per source: its document -> merged (UINT32_MAX: dead) */
    uint32_t *first;     /* merged term t's sources: from[first[t]..first[t + 1]) */
    struct from { uint32_t s, i; } *from;
    const int *stop;
    uint64_t since;      /* postings made since *stop was last read */
} mwrite;

static int mw_stopped(mwrite *w, uint64_t more)
{
    if (w->stop == NULL || (w->since += more) < 16384)
        return 0;
    w->since = 0;
    return __atomic_load_n(w->stop, __ATOMIC_ACQUIRE);
}

static void mwrite_free(mwrite *w)
{
    const cairn_allocator *a = w->x ? w->x->a : NULL;
    for (size_t s = 0; w->remap != NULL && s < w->n; s++)
        cairn__free(a, w->remap[s]);
    cairn__free(a, w->remap);
    cairn__free(a, w->first);
    cairn__free(a, w->from);
    cairn__ramidx_free(w->x);
}

/* Documents and terms, source by source, in cairn__ramidx_merge's order;
 * then each merged term's sources, in source order. */
static int mw_plan(mwrite *w)
{
    cairn__ramidx *x = w->x;
    const cairn_allocator *a = x->a;
    uint32_t **tmap;
    size_t nfrom = 0;
    int rc = CAIRN_OK;

    w->remap = cairn__calloc(a, w->n ? w->n : 1, sizeof *w->remap);
    tmap = cairn__calloc(a, w->n ? w->n : 1, sizeof *tmap);
    if (w->remap == NULL || tmap == NULL)
        rc = CAIRN_ENOMEM;
    if (rc == CAIRN_OK) { /* at most every source's terms: the table never grows */
        size_t nt = 0, bytes = 0;
        for (size_t s = 0; s < w->n; s++) {
            nt += w->src[s]->nterms;
            bytes += w->src[s]->arena_len;
        }
        rc = cairn__ramidx_reserve(x, nt, bytes);
    }
    for (size_t s = 0; rc == CAIRN_OK && s < w->n; s++) {
        cairn__ramidx *y = w->src[s];
        w->remap[s] = cairn__calloc(a, y->ndocs ? y->ndocs : 1, sizeof **w->remap);
        tmap[s] = cairn__calloc(a, y->nterms ? y->nterms : 1, sizeof **tmap);
        if (w->remap[s] == NULL || tmap[s] == NULL) {
            rc = CAIRN_ENOMEM;
            break;
        }
        rc = cairn__ramidx_join_docs(x, y, w->remap[s]);
        for (size_t i = 0; rc == CAIRN_OK && i < y->nterms; i++) {
            term *t = T(y, i);
            long id;
            if (t->df == 0)
                continue;
            if ((id = cairn__ramidx_term_id(x, y->arena + t->off, t->len)) < 0) {
                rc = CAIRN_ENOMEM;
                break;
            }
            tmap[s][i] = (uint32_t)id + 1;
            nfrom++;
        }
        if (rc == CAIRN_OK && y->damaged) /* a term record failed: do not write its loss on */
            rc = CAIRN_ECORRUPT;
    }
    if (rc == CAIRN_OK) {
        w->first = cairn__calloc(a, x->nterms + 1, sizeof *w->first);
        w->from = cairn__calloc(a, nfrom ? nfrom : 1, sizeof *w->from);
        if (w->first == NULL || w->from == NULL)
            rc = CAIRN_ENOMEM;
    }
    if (rc == CAIRN_OK) {
        /* counts, then places: the sources of each term stay in order */
        for (size_t s = 0; s < w->n; s++)
            for (size_t i = 0; i < w->src[s]->nterms; i++)
                if (tmap[s][i])
                    w->first[tmap[s][i]]++;
        for (size_t t = 0; t < x->nterms; t++)
            w->first[t + 1] += w->first[t];
        for (size_t s = 0; s < w->n; s++)
            for (size_t i = 0; i < w->src[s]->nterms; i++)
                if (tmap[s][i]) {
                    struct from *f = &w->from[w->first[tmap[s][i] - 1]++];
                    f->s = (uint32_t)s;
                    f->i = (uint32_t)i;
                }
        /* first[t] went up to first[t + 1]: shift back */
        for (size_t t = x->nterms; t > 0; t--)
            w->first[t] = w->first[t - 1];
        w->first[0] = 0;
    }
    for (size_t s = 0; tmap != NULL && s < w->n; s++)
        cairn__free(a, tmap[s]);
    cairn__free(a, tmap);
    return rc;
}

/* Merged term t's postings, MW_CHUNK at a time, through fn. */
static int mw_postings(mwrite *w, size_t t, int (*fn)(void *u, const posting *p, size_t k),
                       void *u)
{
    posting buf[MW_CHUNK], blk[PK_BLOCK];
    size_t k = 0;
    int rc;
    for (uint32_t f = w->first[t]; f < w->first[t + 1]; f++) {
        cairn__ramidx *y = w->src[w->from[f].s];
        const uint32_t *remap = w->remap[w->from[f].s];
        term *from = T(y, w->from[f].i);
        if ((rc = cairn__ramidx_check_postings(y, from)) != CAIRN_OK)
            return rc;
        if (y->damaged)
            return CAIRN_ECORRUPT;
        if (mw_stopped(w, 1 + from->n))
            return CAIRN_ELOCKED; /* given up */
        for (uint32_t b = 0; b < nblocks(from); b++) {
            const posting *p;
            uint32_t kb = cairn__pk_term_block(from, b, blk, &p);
            for (uint32_t j = 0; j < kb; j++) {
                uint32_t nd = remap[p[j].doc];
                if (nd == UINT32_MAX)
                    continue;
                buf[k].doc = nd;
                buf[k].tf = p[j].tf;
                if (++k == MW_CHUNK) {
                    if ((rc = fn(u, buf, k)) != CAIRN_OK)
                        return rc;
                    k = 0;
                }
            }
        }
    }
    return k ? fn(u, buf, k) : CAIRN_OK;
}

typedef struct mw_sum {
    mwrite *w;
    term *t;
    XXH3_state_t *st;
    pk_plan *pl;
} mw_sum;

static int mw_count(void *u, const posting *p, size_t k)
{
    mw_sum *c = u;
    for (size_t j = 0; j < k; j++) {
        if (c->t->n == 0)
            c->t->one = p[j]; /* a single term's record holds it */
        c->t->n++;
        c->t->df++;
        if (p[j].tf > c->t->max_tf)
            c->t->max_tf = p[j].tf;
        if (c->w->x->dl[p[j].doc] < c->t->min_dl)
            c->t->min_dl = c->w->x->dl[p[j].doc];
    }
    cairn__pk_plan_feed(c->pl, p, k);
    return XXH3_64bits_update(c->st, p, k * sizeof *p) == XXH_OK ? CAIRN_OK : CAIRN_ENOMEM;
}

static int mw_put(void *u, const posting *p, size_t k)
{
    return cairn__pk_push(u, p, k);
}

static int mw_term(void *u, size_t t, pk_enc *e)
{
    return mw_postings(u, t, mw_put, e);
}

int cairn__ramidx_merge_write(const cairn_allocator *a, const char *stemmer,
                              cairn__ramidx *const *src, size_t n, cairn__ramidx_put_fn put,
                              void *user, const int *stop)
{
    mwrite w;
    XXH3_state_t st;
    pk_plan pl;
    int rc;

    memset(&w, 0, sizeof w);
    memset(&pl, 0, sizeof pl);
    w.src = src;
    w.n = n;
    w.stop = stop;
    if ((rc = cairn__ramidx_new(&w.x, a, stemmer)) != CAIRN_OK)
        return rc;
    rc = mw_plan(&w);
    if (rc == CAIRN_OK)
        rc = cairn__pk_plan_init(&pl, a, w.x->nterms);
    /* Each term's counts, the sum of its postings and its blocks' sizes,
     * made once to count and again to write: no term's postings are
     * held. */
    for (size_t t = 0; rc == CAIRN_OK && t < w.x->nterms; t++) {
        mw_sum c = {&w, &w.x->terms[t], &st, &pl};
        XXH3_64bits_reset(&st);
        rc = mw_postings(&w, t, mw_count, &c);
        w.x->terms[t].sum = XXH3_64bits_digest(&st);
        if (rc == CAIRN_OK)
            rc = cairn__pk_plan_end(&pl, t, doc_bits(w.x->ndocs), w.x->terms[t].max_tf,
                          is_single(&w.x->terms[t]));
    }
    if (rc == CAIRN_OK)
        rc = write_head(w.x, &pl, 1, put, user);
    if (rc == CAIRN_OK) {
        pk_enc *e = cairn__calloc(a, 1, sizeof *e);
        if (e == NULL) {
            rc = CAIRN_ENOMEM;
        } else {
            e->put = put;
            e->user = user;
            rc = write_postings(w.x, &pl, e, mw_term, &w);
            cairn__free(a, e);
        }
    }
    cairn__pk_plan_free(&pl);
    mwrite_free(&w);
    return rc;
}

/* ---- reading a mapped image --------------------------------------------- */

/* A term whose record failed its checks: it matches nothing, and the
 * index is damaged. */
static term *bad_term(cairn__ramidx *x, term *tm)
{
    x->damaged = 1;
    tm->len = 0;
    tm->n = tm->df = 0;
    tm->db = tm->tb = 0;
    tm->p = NULL;
    tm->pk = NULL;
    return tm;
}

/* Single term id's record, checked (its sum, its bounds): its posting
 * in tm->one. Its df is derived: 1 if its document is live now (a
 * removal loads the terms of the document before it clears its bit). */
static term *load_single(cairn__ramidx *x, size_t id)
{
    const uint8_t *t = x->sfile + (id - x->nfull) * TIX_SINGLE;
    term *tm = &x->terms[id];

    tm->loaded = 1;
    tm->off = get32(t);
    tm->len = (uint32_t)t[4] | (uint32_t)t[5] << 8;
    tm->one.tf = ((uint32_t)t[6] | (uint32_t)t[7] << 8) + 1;
    tm->one.doc = get32(t + 8);
    if (get32(t + 12) != (uint32_t)XXH3_64bits(t, 12) || tm->len == 0 ||
        (uint64_t)tm->off + tm->len > x->arena_len || tm->one.doc >= x->ndocs)
        return bad_term(x, tm);
    tm->n = 1;
    tm->df = (uint32_t)is_live(x, tm->one.doc);
    tm->max_tf = tm->one.tf;
    tm->min_dl = x->dl[tm->one.doc];
    tm->p = &tm->one; /* read in place, as a term in RAM's */
    tm->pk = NULL;
    tm->checked = 1;
    return tm;
}

/* A term's record, checked against the image's bounds. A bad one reads as
 * a term that matches nothing, and marks the index damaged. */
term *cairn__ramidx_load_term(cairn__ramidx *x, size_t id)
{
    const uint8_t *t = x->tfile + id * TIX_TERM;
    term *tm = &x->terms[id];
    uint64_t first, need;
    unsigned db = doc_bits(x->ndocs);

    if (id >= x->nfull)
        return load_single(x, id);
    first = get64(t + 8);
    tm->loaded = 1;
    tm->off = get32(t);
    tm->len = get32(t + 4);
    tm->n = get32(t + 16);
    tm->df = get32(t + 20);
    tm->max_tf = get32(t + 24);
    tm->min_dl = get32(t + 28);
    tm->sum = get64(t + 32);
    tm->db = (uint8_t)db;
    tm->tb = (uint8_t)tf_bits(tm->max_tf);
    /* x->npost: bytes of the postings, the spare ones after them included;
     * the least a term's postings take (its blocks are checked when read) */
    need = tm->n == 0 ? 0 : tm->n == 1 ? packed_len(1, db + tm->tb)
           : nblocks(tm) == 1 ? PK_HEAD : (uint64_t)nblocks(tm) * PK_SKIP;
    if ((uint64_t)tm->off + tm->len > x->arena_len || tm->len == 0 || db + tm->tb > TIX_MAX_W ||
        first > x->npost - TIX_SLACK || need > x->npost - TIX_SLACK - first || tm->df > tm->n)
        return bad_term(x, tm);
    tm->room = x->npost - TIX_SLACK - first;
    tm->p = NULL;
    tm->pk = x->image + x->post_off + first;
    return tm;
}

/* Probe the mapped table: every slot is checked before it is followed,
 * and a table with no empty slot cannot loop. */
long cairn__ramidx_frozen_lookup(cairn__ramidx *x, const char *s, size_t len)
{
    uint64_t h = XXH3_64bits(s, len);
    unsigned idbits = image_idbits(x->nterms);
    uint32_t tag = image_tag(h, idbits), idmask = idbits >= 32 ? UINT32_MAX : (1u << idbits) - 1;
    size_t i;
    if (x->itab_cap == 0)
        return -1;
    i = image_slot(h, x->itab_cap);
    for (size_t probes = 0; probes < x->itab_cap; probes++, i = i + 1 == x->itab_cap ? 0 : i + 1) {
        uint32_t v = x->itab[i], id = v & idmask;
        const term *tm;
        if (v == 0)
            return -1;
        if (id == 0 || id > x->nterms) {
            x->damaged = 1;
            return -1;
        }
        if ((v & ~idmask) != tag)
            continue;
        tm = T(x, id - 1);
        if (tm->len == len && memcmp(x->arena + tm->off, s, len) == 0)
            return (long)id - 1;
    }
    x->damaged = 1;
    return -1;
}

/* A mapped term's blocks against the skip table: block b starts where
 * block b - 1 ends (the first right after the table), and ends at the
 * document the table says. k: its postings; *at: where it starts, then
 * where the next one does. */
static int check_block(const term *t, uint32_t b, uint32_t k, const posting *p, uint64_t *at)
{
    uint32_t nb = nblocks(t), off;
    if (t->n == 1)
        return CAIRN_OK;
    if (nb > 1) {
        memcpy(&off, t->pk + (size_t)b * PK_SKIP + 4, 4);
        if (off != *at || block_last(t, b) != p[k - 1].doc)
            return CAIRN_ECORRUPT;
    }
    *at += PK_HEAD + packed_len(k, (unsigned)t->pk[*at] + t->pk[*at + 1]);
    return CAIRN_OK;
}

/* A mapped term's postings, checked once: the sum the file gives, the
 * blocks where the skip table says, document numbers in range and
 * increasing and every tf in 1..max_tf (the search relies on all of it). */
int cairn__ramidx_check_postings(const cairn__ramidx *x, term *t)
{
    posting buf[PK_BLOCK];
    XXH3_state_t st;
    uint32_t prev = 0, nb = nblocks(t);
    uint64_t at = nb > 1 ? (uint64_t)nb * PK_SKIP : 0;
    if (!x->frozen || t->checked)
        return CAIRN_OK;
    /* The sum is of the postings as (u32 doc, u32 tf) pairs, whatever
     * their packing: made of them decoded, a block at a time. */
    XXH3_64bits_reset(&st);
    for (uint32_t b = 0, i = 0; b < nb; b++) {
        const posting *p;
        uint64_t head = at, base = i > 0 ? (uint64_t)prev + 1 : 0;
        uint32_t k = cairn__pk_term_block(t, b, buf, &p);
        unsigned gw, tw;
        if (k == 0 || check_block(t, b, k, p, &at) != CAIRN_OK)
            return CAIRN_ECORRUPT;
        if (t->pk == NULL) { /* read in place: no widths */
            gw = tw = 32;
        } else if (t->n == 1) { /* no header: the image's widths */
            gw = t->db;
            tw = t->tb;
        } else {
            gw = t->pk[head];
            tw = t->pk[head + 1];
        }
        /* Widths that cannot carry a document past 2^32 - 1 (each is the
         * one before + 1 + a gap below 2^gw) nor a tf past max_tf leave
         * only the last document to check; others, every posting. */
        if (gw < 32 && tw < 32 && base + ((uint64_t)k << gw) <= ((uint64_t)1 << 32) &&
            ((uint64_t)1 << tw) <= t->max_tf) {
            if (p[k - 1].doc >= x->ndocs)
                return CAIRN_ECORRUPT;
        } else {
            for (uint32_t j = 0; j < k; j++) {
                /* tf 0: tf - 1 of 32 bits all ones */
                if (p[j].doc >= x->ndocs || (i + j > 0 && p[j].doc <= prev) || p[j].tf == 0 ||
                    p[j].tf > t->max_tf)
                    return CAIRN_ECORRUPT;
                prev = p[j].doc;
            }
        }
        prev = p[k - 1].doc;
        i += k;
        (void)XXH3_64bits_update(&st, p, k * sizeof *p);
    }
    if (XXH3_64bits_digest(&st) != t->sum)
        return CAIRN_ECHECKSUM;
    t->checked = 1;
    return CAIRN_OK;
}

int cairn__ramidx_map(cairn__ramidx **out, const cairn_allocator *a, const char *stemmer,
                      const void *bytes, size_t len, size_t *used)
{
    const uint8_t *b = bytes;
    uint64_t ndocs, nterms, nsingle, tcap, alen, npost, need, n_live, sum_dl;
    size_t o_terms, o_single, o_table, o_ext, o_dl, o_live, o_arena, o_post;
    cairn__ramidx *x = NULL;
    int rc;

    *out = NULL;
    if (((uintptr_t)bytes & 7) != 0 || len < TIX_HEAD || get32(b) != TIX_MAGIC ||
        get32(b + 4) != TIX_VERSION ||
        XXH3_64bits(b, 72) != get64(b + 72))
        return CAIRN_ECORRUPT;
    ndocs = get64(b + 8);
    nterms = get64(b + 16);
    tcap = get64(b + 24);
    alen = get64(b + 32);
    npost = get64(b + 40);
    n_live = get64(b + 48);
    sum_dl = get64(b + 56);
    nsingle = get64(b + 64);
    /* Every count bounded by the bytes there are before any product. */
    if (ndocs >= UINT32_MAX || nterms >= UINT32_MAX || tcap > len / 4 || tcap > UINT32_MAX ||
        alen > len || npost > len || npost < TIX_SLACK || npost % 8 != 0 ||
        (nterms == 0) != (tcap == 0) || tcap < image_tcap((size_t)nterms) || nsingle > nterms ||
        nterms - nsingle > len / TIX_TERM || nsingle > len / TIX_SINGLE || ndocs > len / 8 ||
        n_live > ndocs)
        return CAIRN_ECORRUPT;
    o_terms = TIX_HEAD;
    o_single = o_terms + (size_t)(nterms - nsingle) * TIX_TERM;
    o_table = o_single + (size_t)nsingle * TIX_SINGLE;
    o_ext = o_table + pad8((size_t)tcap * 4);
    o_dl = o_ext + (size_t)ndocs * 8;
    o_live = o_dl + pad8((size_t)ndocs * 4);
    o_arena = o_live + (size_t)(ndocs + 63) / 64 * 8;
    o_post = o_arena + pad8((size_t)alen);
    need = o_post + npost; /* (npost: bytes of the postings) */
    if (need > len)
        return CAIRN_ECORRUPT;
    rc = cairn__ramidx_new(&x, a, stemmer);
    if (rc != CAIRN_OK)
        return rc;
    x->frozen = 1;
    /* pages of terms never used are never touched (nor zeroed) */
    x->terms = cairn__calloc_lazy(a, nterms ? nterms : 1, sizeof *x->terms);
    x->terms_cap = (size_t)nterms; /* what cairn__ramidx_free gives back */
    x->live = cairn__calloc(a, (ndocs + 63) / 64 + 1, sizeof *x->live);
    if (x->terms == NULL || x->live == NULL) {
        cairn__ramidx_free(x);
        return CAIRN_ENOMEM;
    }
    memcpy(x->live, b + o_live, (size_t)(ndocs + 63) / 64 * 8);
    x->image = b;
    x->tfile = b + o_terms;
    x->sfile = b + o_single;
    x->nfull = (size_t)(nterms - nsingle);
    x->post_off = o_post;
    x->npost = npost;
    x->itab = (const uint32_t *)(const void *)(b + o_table);
    x->itab_cap = (size_t)tcap;
    x->ext = (uint64_t *)(uintptr_t)(b + o_ext);
    x->dl = (uint32_t *)(uintptr_t)(b + o_dl);
    x->arena = (char *)(uintptr_t)(b + o_arena);
    x->arena_len = (size_t)alen;
    x->ndocs = x->docs_cap = (size_t)ndocs;
    x->nterms = x->terms_cap = (size_t)nterms;
    /* Trusted from the header (under its sum); cairn__ramidx_check
     * recounts them from the bitmap. */
    x->n_live = n_live;
    x->sum_dl = sum_dl;
    if (used != NULL)
        *used = (size_t)need;
    *out = x;
    return CAIRN_OK;
}

int cairn__ramidx_check(cairn__ramidx *x)
{
    uint64_t n_live = 0, sum_dl = 0, live_postings = 0;
    if (!x->frozen)
        return CAIRN_OK;
    for (size_t d = 0; d < x->ndocs; d++) {
        if (d > 0 && x->ext[d] <= x->ext[d - 1])
            return CAIRN_ECORRUPT;
        if (is_live(x, (uint32_t)d)) {
            n_live++;
            sum_dl += x->dl[d];
        }
    }
    if (n_live != x->n_live || sum_dl != x->sum_dl)
        return CAIRN_ECORRUPT;
    for (size_t i = 0; i < x->itab_cap; i++) {
        unsigned idbits = image_idbits(x->nterms);
        uint32_t v = x->itab[i], idmask = idbits >= 32 ? UINT32_MAX : (1u << idbits) - 1;
        const term *tm;
        if (v == 0)
            continue;
        if ((v & idmask) == 0 || (v & idmask) > x->nterms)
            return CAIRN_ECORRUPT;
        tm = T(x, (v & idmask) - 1);
        if (x->damaged ||
            (v & ~idmask) != image_tag(XXH3_64bits(x->arena + tm->off, tm->len), idbits))
            return CAIRN_ECORRUPT;
    }
    for (size_t i = 0; i < x->nterms; i++) {
        int rc;
        term *tm = T(x, i);
        if (x->damaged)
            return CAIRN_ECORRUPT;
        if ((rc = cairn__ramidx_check_postings(x, tm)) != CAIRN_OK)
            return rc;
        for (uint32_t b = 0; b < nblocks(tm); b++) {
            posting buf[PK_BLOCK];
            const posting *p;
            uint32_t k = cairn__pk_term_block(tm, b, buf, &p);
            for (uint32_t j = 0; j < k; j++)
                live_postings += is_live(x, p[j].doc);
        }
        if (live_postings != tm->df)
            return CAIRN_ECORRUPT;
        live_postings = 0;
    }
    return CAIRN_OK;
}
