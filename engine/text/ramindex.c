/*
 * ramindex.c - see ramindex.h. This file: the index itself (its life, the
 * term dictionary, documents, add and remove, the merge in RAM). The search
 * is in ramindex_search.c, the postings' block codec in
 * ramindex_postings.c, the file image (format-spec/memindex.md, "text
 * index") in ramindex_image.c; what they share in ramindex_int.h.
 *
 * Layout: a term dictionary (open addressing over term numbers, the bytes
 * in one arena), one postings array per term ({local doc, tf}, in document
 * order), and per local document its caller number, its length in terms and
 * a live bit. Local document numbers are dense (0, 1, ...) and follow the
 * caller's order, so ties broken by local number are broken by caller
 * number too.
 */
#include "ramindex.h"

#include <stddef.h>
#include <string.h>
#define XXH_INLINE_ALL /* short words: the hash inline, not a call through the PLT */
#include <xxhash.h>

#include "alloc.h"
#include "prefetch.h"
#include "ramindex_int.h"
#include "tokenize.h"

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

/* ---- a term's postings' room -------------------------------------------- */

#define TERM_FIRST 16    /* postings of a term's room in a chunk */
#define CHUNK_TERMS 2048 /* terms' room a chunk holds (256 KiB) */

/* A term's first TERM_FIRST postings go in chunks the index owns, not in
 * a block of their own: most terms never have more (a word of one memory,
 * a rare one), and freeing a tail's index after a long ingest freed tens
 * of thousands of small blocks one by one (about 20 ms at 17,000
 * memories). A term that outgrows its room there moves to an array of its
 * own. cap == TERM_FIRST: the room is in a chunk (an array of its own
 * has at least 2 * TERM_FIRST: cairn__grow from 0 to more than TERM_FIRST
 * doubles 16 at least once). */
static int term_room(cairn__ramidx *x, term *tm, size_t need)
{
    size_t cap = tm->cap;
    posting *p;

    if (need <= tm->cap)
        return CAIRN_OK;
    if (tm->cap == 0 && need <= TERM_FIRST) {
        if (x->chunk_left == 0) {
            if (cairn__grow(x->a, (void **)&x->chunks, &x->chunks_cap, x->nchunks + 1,
                            sizeof *x->chunks) != CAIRN_OK ||
                (p = cairn__malloc(x->a, (size_t)CHUNK_TERMS * TERM_FIRST * sizeof *p)) == NULL)
                return CAIRN_ENOMEM;
            x->chunks[x->nchunks++] = p;
            x->chunk_next = p;
            x->chunk_left = CHUNK_TERMS;
        }
        tm->p = x->chunk_next;
        tm->cap = TERM_FIRST;
        x->chunk_next += TERM_FIRST;
        x->chunk_left--;
        return CAIRN_OK;
    }
    if (tm->cap == TERM_FIRST) { /* out of its chunk */
        cap = 2 * TERM_FIRST;
        while (cap < need)
            cap *= 2;
        if ((p = cairn__malloc(x->a, cap * sizeof *p)) == NULL)
            return CAIRN_ENOMEM;
        memcpy(p, tm->p, (size_t)tm->n * sizeof *p);
        tm->p = p;
        tm->cap = (uint32_t)cap;
        return CAIRN_OK;
    }
    if (cairn__grow(x->a, (void **)&tm->p, &cap, need, sizeof *tm->p) != CAIRN_OK)
        return CAIRN_ENOMEM;
    tm->cap = (uint32_t)cap;
    return CAIRN_OK;
}

void cairn__ramidx_free(cairn__ramidx *x)
{
    if (x == NULL)
        return;
    if (!x->frozen) {
        for (size_t i = 0; i < x->nterms; i++)
            if (x->terms[i].cap > TERM_FIRST) /* not in a chunk */
                cairn__free(x->a, x->terms[i].p);
        for (size_t i = 0; i < x->nchunks; i++)
            cairn__free(x->a, x->chunks[i]);
        cairn__free(x->a, x->chunks);
        cairn__free(x->a, x->arena);
        cairn__free(x->a, x->table);
        cairn__free(x->a, x->ext);
        cairn__free(x->a, x->dl);
        cairn__free(x->a, x->terms);
    } else {
        cairn__free_lazy(x->a, x->terms, x->terms_cap ? x->terms_cap : 1, sizeof *x->terms);
    }
    cairn__free(x->a, x->wtable);
    cairn__free(x->a, x->words);
    cairn__free(x->a, x->warena);
    cairn__free(x->a, x->toks);
    cairn__free(x->a, x->tbytes);
    cairn__free(x->a, x->live);
    cairn__free(x->a, x->scr);
    cairn__tok_free(x->tok);
    cairn__free(x->a, x);
}

uint64_t cairn__ramidx_count(const cairn__ramidx *x)
{
    return x->n_live;
}

uint64_t cairn__ramidx_docs(const cairn__ramidx *x)
{
    return x->ndocs;
}

/* ---- the term dictionary ------------------------------------------------ */

/* The slot of s (hash h) in a table of (h >> 32) << 32 | (entry + 1)
 * slots with linear probing: its entry's, or the empty one to put it in.
 * Entries are `stride` bytes apart and start with u32 off, u32 len of
 * their bytes in `arena` (the term dictionary and the word table). */
static size_t probe_slot(const uint64_t *table, size_t cap, const void *entries, size_t stride,
                         const char *arena, const char *s, size_t len, uint64_t h)
{
    size_t mask = cap - 1, i = (size_t)h & mask;
    uint64_t fp = h >> 32;
    for (;; i = (i + 1) & mask) {
        uint64_t v = table[i];
        const uint32_t *key;
        if (v == 0)
            return i;
        key = (const uint32_t *)(const void *)((const char *)entries +
                                               ((uint32_t)v - 1) * stride);
        if ((v >> 32) == fp && key[1] == len && memcmp(arena + key[0], s, len) == 0)
            return i;
    }
}

static size_t find_slot(const cairn__ramidx *x, const char *s, size_t len, uint64_t h)
{
    return probe_slot(x->table, x->table_cap, x->terms, sizeof *x->terms, x->arena, s, len, h);
}

/* The term table at cap slots (a power of 2 above the terms), rehashed. */
static int resize_table(cairn__ramidx *x, size_t cap)
{
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

static int grow_table(cairn__ramidx *x)
{
    return resize_table(x, x->table_cap ? x->table_cap * 2 : 1024);
}

int cairn__ramidx_reserve(cairn__ramidx *x, size_t nterms, size_t arena)
{
    size_t cap = x->table_cap ? x->table_cap : 1024;
    if (x->frozen)
        return CAIRN_EINVAL;
    while ((nterms + 1) * 2 > cap)
        cap *= 2;
    if ((cap > x->table_cap && resize_table(x, cap) != CAIRN_OK) ||
        cairn__grow(x->a, (void **)&x->terms, &x->terms_cap, nterms, sizeof *x->terms) !=
            CAIRN_OK ||
        cairn__grow(x->a, (void **)&x->arena, &x->arena_cap, arena, 1) != CAIRN_OK)
        return CAIRN_ENOMEM;
    return CAIRN_OK;
}

/* The term's number, added if new (unless lookup_only): -1 unknown,
 * -2 no memory. */
static long term_id_h(cairn__ramidx *x, const char *s, size_t len, uint64_t h)
{
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
    if (x->arena_len + len > UINT32_MAX || x->nterms >= UINT32_MAX - 1)
        return -2; /* term offsets and numbers are 32-bit */
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

long cairn__ramidx_term_id(cairn__ramidx *x, const char *s, size_t len)
{
    if (x->frozen)
        return cairn__ramidx_frozen_lookup(x, s, len);
    return term_id_h(x, s, len, XXH3_64bits(s, len));
}

/* The term's number in x, or -1. */
long cairn__ramidx_lookup(cairn__ramidx *x, const char *s, size_t len)
{
    size_t slot;
    if (x->frozen)
        return cairn__ramidx_frozen_lookup(x, s, len);
    if (x->table_cap == 0)
        return -1;
    slot = find_slot(x, s, len, XXH3_64bits(s, len));
    return x->table[slot] ? (long)(uint32_t)x->table[slot] - 1 : -1;
}

/* Tokenizer callback: count each distinct term once per text. */
static int count_term(cairn__ramidx *x, long id);

static int on_term(void *user, const char *s, size_t len, uint32_t pos)
{
    cairn__ramidx *x = user;
    (void)pos;
    return count_term(x, cairn__ramidx_term_id(x, s, len));
}

/* One occurrence of term id (-1 unknown, -2 no memory) in the text. */
static int count_term(cairn__ramidx *x, long id)
{
    term *tm;

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
    if (tm->n < tm->cap) /* where cairn__ramidx_add will put its posting */
        cairn__prefetch(&tm->p[tm->n]);
    x->scr[x->nscr].term = (uint32_t)id;
    x->scr[x->nscr].tf = 1;
    x->nscr++;
    return 0;
}

/* A new text: a new mark, so that each term counts once in it. */
static void next_mark(cairn__ramidx *x)
{
    if (++x->cur_mark == 0) { /* wrapped: clear every mark once */
        for (size_t i = 0; i < x->nterms; i++)
            x->terms[i].mark = 0;
        x->cur_mark = 1;
    }
}

/* Tokenize into x->scr (distinct terms, tf each). */
static int gather(cairn__ramidx *x, const uint8_t *text, size_t len, int lookup_only)
{
    int rc;
    x->nscr = 0;
    x->terms_seen = 0;
    x->failed = 0;
    x->lookup_only = lookup_only;
    next_mark(x);
    rc = cairn__tok_run(x->tok, text, len, on_term, x);
    return x->failed ? CAIRN_ENOMEM : rc;
}

/* A word's key in its slot (struct wslot). */
static inline uint64_t word_key(const char *s, size_t len)
{
    uint64_t k = 0;
    size_t n = len < 8 ? len : 7;
    for (size_t i = 0; i < n; i++)
        k |= (uint64_t)(uint8_t)s[i] << (8 * i);
    return len < 8 ? k : k | (uint64_t)0xFF << 56;
}

/* Tokenizer callback of gather_add: keep the word, start fetching its slot. */
static int on_collect(void *user, const char *s, size_t len, uint32_t pos)
{
    cairn__ramidx *x = user;
    uint64_t h = XXH3_64bits(s, len);
    (void)pos;
    if (cairn__grow(x->a, (void **)&x->toks, &x->toks_cap, x->ntoks + 1, sizeof *x->toks) != CAIRN_OK ||
        cairn__grow(x->a, (void **)&x->tbytes, &x->tb_cap, x->tb_len + len, 1) != CAIRN_OK) {
        x->failed = 1;
        return CAIRN_ENOMEM;
    }
    memcpy(x->tbytes + x->tb_len, s, len);
    x->toks[x->ntoks].off = (uint32_t)x->tb_len;
    x->toks[x->ntoks].len = (uint32_t)len;
    x->toks[x->ntoks].h = h;
    x->toks[x->ntoks].key = word_key(s, len);
    x->ntoks++;
    x->tb_len += len;
    if (x->wtable_cap)
        cairn__prefetch(&x->wtable[h & (x->wtable_cap - 1)]);
    return 0;
}

/* The word table's slot for s (h: its hash, key: word_key): its entry,
 * or the empty slot to put it in. */
static size_t word_slot(const cairn__ramidx *x, const char *s, size_t len, uint64_t h,
                        uint64_t key)
{
    size_t mask = x->wtable_cap - 1, i = (size_t)h & mask;
    for (;; i = (i + 1) & mask) {
        const struct wslot *e = &x->wtable[i];
        const struct wordent *we;
        if (e->word == 0)
            return i;
        if (e->key != key)
            continue;
        if (len < 8)
            return i; /* the key is the whole word */
        we = &x->words[e->word - 1];
        if (we->len == len && memcmp(x->warena + we->off, s, len) == 0)
            return i;
    }
}

/* Room for `more` new words at load <= 1/2. A slot keeps no hash, so a
 * bigger table hashes the words' bytes again. */
static int grow_words(cairn__ramidx *x, size_t more)
{
    size_t cap = x->wtable_cap ? x->wtable_cap : 1024;
    struct wslot *t;
    while ((x->nwords + more + 1) * 2 > cap)
        cap *= 2;
    if (cap == x->wtable_cap)
        return CAIRN_OK;
    if ((t = cairn__calloc(x->a, cap, sizeof *t)) == NULL)
        return CAIRN_ENOMEM;
    cairn__free(x->a, x->wtable);
    x->wtable = t;
    x->wtable_cap = cap;
    for (size_t w = 0; w < x->nwords; w++) {
        const struct wordent *we = &x->words[w];
        const char *s = x->warena + we->off;
        uint64_t key = word_key(s, we->len);
        struct wslot *e = &t[word_slot(x, s, we->len, XXH3_64bits(s, we->len), key)];
        e->key = key;
        e->term = we->term;
        e->word = (uint32_t)w + 1;
    }
    return CAIRN_OK;
}

void cairn__ramidx_size_of(const cairn__ramidx *x, cairn__ramidx_size *s)
{
    s->terms = x->nterms;
    s->term_bytes = x->arena_len;
    s->words = x->nwords;
    s->word_bytes = x->warena_len;
}

int cairn__ramidx_presize(cairn__ramidx *x, const cairn__ramidx_size *s)
{
    int rc = cairn__ramidx_reserve(x, s->terms, s->term_bytes);
    if (rc != CAIRN_OK)
        return rc;
    if (grow_words(x, s->words > x->nwords ? s->words - x->nwords : 0) != CAIRN_OK ||
        cairn__grow(x->a, (void **)&x->words, &x->words_cap, s->words, sizeof *x->words) !=
            CAIRN_OK ||
        cairn__grow(x->a, (void **)&x->warena, &x->warena_cap, s->word_bytes, 1) != CAIRN_OK)
        return CAIRN_ENOMEM;
    return CAIRN_OK;
}

/* The term number of a word (h: its hash), stemming and adding it (and
 * its term, if new) the first time: -2 no memory. The word table has room
 * (grow_words). */
static long word_term(cairn__ramidx *x, const char *s, size_t len, uint64_t h, uint64_t key)
{
    size_t slot = word_slot(x, s, len, h, key);
    const char *stem;
    size_t slen;
    long id;
    int stemmed;

    if (x->wtable[slot].word != 0)
        return (long)x->wtable[slot].term;
    stemmed = cairn__tok_stem(x->tok, s, len, &stem, &slen);
    id = term_id_h(x, stem, slen, XXH3_64bits(stem, slen));
    if (id < 0 || !stemmed)
        return id; /* a stemmer that failed: this once unstemmed, not for good */
    if (x->warena_len + len > UINT32_MAX)
        return -2; /* offsets are 32-bit */
    if (cairn__grow(x->a, (void **)&x->words, &x->words_cap, x->nwords + 1, sizeof *x->words) != CAIRN_OK ||
        cairn__grow(x->a, (void **)&x->warena, &x->warena_cap, x->warena_len + len, 1) != CAIRN_OK)
        return -2;
    x->words[x->nwords].off = (uint32_t)x->warena_len;
    x->words[x->nwords].len = (uint32_t)len;
    x->words[x->nwords].term = (uint32_t)id;
    memcpy(x->warena + x->warena_len, s, len);
    x->warena_len += len;
    x->wtable[slot].key = key;
    x->wtable[slot].term = (uint32_t)id;
    x->wtable[slot].word = (uint32_t)(x->nwords + 1);
    x->nwords++;
    return id;
}

/* gather() for a document being added, in three passes: tokenize into
 * words (and prefetch each word's slot), find the term of every word (and
 * prefetch it), count. Same result as gather(x, text, len, 0): a word's
 * term is what cairn__tok_run would have passed for it. */
static int gather_add(cairn__ramidx *x, const uint8_t *text, size_t len)
{
    int rc;
    x->ntoks = 0;
    x->tb_len = 0;
    x->failed = 0;
    rc = cairn__tok_run_words(x->tok, text, len, on_collect, x);
    if (x->failed)
        rc = CAIRN_ENOMEM;
    if (rc != CAIRN_OK)
        return rc;
    /* Room for every word to be new: the tables do not move below. */
    if (grow_words(x, x->ntoks) != CAIRN_OK)
        return CAIRN_ENOMEM;
    while (x->table_cap == 0 || (x->nterms + x->ntoks + 1) * 2 > x->table_cap)
        if (grow_table(x) != CAIRN_OK)
            return CAIRN_ENOMEM;
    x->lookup_only = 0;
    for (size_t i = 0; i < x->ntoks; i++) {
        long id = word_term(x, x->tbytes + x->toks[i].off, x->toks[i].len, x->toks[i].h,
                            x->toks[i].key);
        if (id < 0)
            return CAIRN_ENOMEM;
        x->toks[i].h = (uint64_t)id; /* the hash is spent: keep the id */
        /* its fields read below span two cache lines for most terms */
        cairn__prefetch(&x->terms[id]);
        cairn__prefetch((const char *)&x->terms[id] + offsetof(term, slot));
    }
    x->nscr = 0;
    x->terms_seen = 0;
    next_mark(x);
    for (size_t i = 0; i < x->ntoks; i++)
        if (count_term(x, (long)x->toks[i].h) != 0)
            return CAIRN_ENOMEM;
    return CAIRN_OK;
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

    if (x->frozen || (x->ndocs > 0 && doc <= x->ext[x->ndocs - 1]))
        return CAIRN_EINVAL;
    if (x->ndocs >= UINT32_MAX - 1)
        return CAIRN_ENOMEM;
    /* Room first, so that nothing is half-added. */
    if (x->ndocs == x->docs_cap && grow_docs(x) != CAIRN_OK)
        return CAIRN_ENOMEM;
    rc = gather_add(x, text, len);
    if (rc != CAIRN_OK)
        return rc;
    for (size_t i = 0; i < x->nscr; i++) {
        term *tm = &x->terms[x->scr[i].term];
        if (term_room(x, tm, (size_t)tm->n + 1) != CAIRN_OK)
            return CAIRN_ENOMEM;
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
        if (T(x, x->scr[i].term)->df > 0)
            T(x, x->scr[i].term)->df--;
    x->live[local / 64] &= ~(1ull << (local % 64));
    x->n_live--;
    x->sum_dl -= x->dl[local];
    return CAIRN_OK;
}

/* ---- merging ------------------------------------------------------------ */

/* Append y's live documents to x (a merge), remap[d] their numbers in x
 * (UINT32_MAX: dead). CAIRN_EINVAL: y's documents do not all come after
 * x's; CAIRN_ENOMEM. */
int cairn__ramidx_join_docs(cairn__ramidx *x, const cairn__ramidx *y, uint32_t *remap)
{
    for (size_t d = 0; d < y->ndocs; d++) {
        uint32_t nd = (uint32_t)x->ndocs;
        remap[d] = UINT32_MAX;
        if (!is_live(y, (uint32_t)d))
            continue;
        if (x->ndocs > 0 && y->ext[d] <= x->ext[x->ndocs - 1])
            return CAIRN_EINVAL;
        if (x->ndocs == x->docs_cap && grow_docs(x) != CAIRN_OK)
            return CAIRN_ENOMEM;
        x->ext[nd] = y->ext[d];
        x->dl[nd] = y->dl[d];
        x->live[nd / 64] |= 1ull << (nd % 64);
        x->ndocs++;
        x->n_live++;
        x->sum_dl += y->dl[d];
        remap[d] = nd;
    }
    return CAIRN_OK;
}

/* from's postings of live documents, renumbered by remap, after to's
 * (which has room for them); from's were checked. */
static void join_postings(cairn__ramidx *x, term *to, const term *from, const uint32_t *remap)
{
    posting buf[PK_BLOCK];
    for (uint32_t b = 0; b < nblocks(from); b++) {
        const posting *p;
        uint32_t k = cairn__pk_term_block(from, b, buf, &p);
        for (uint32_t j = 0; j < k; j++) {
            uint32_t nd = remap[p[j].doc], tf = p[j].tf;
            if (nd == UINT32_MAX)
                continue;
            to->p[to->n].doc = nd;
            to->p[to->n].tf = tf;
            to->n++;
            to->df++;
            if (tf > to->max_tf)
                to->max_tf = tf;
            if (x->dl[nd] < to->min_dl)
                to->min_dl = x->dl[nd];
        }
    }
}

int cairn__ramidx_merge(cairn__ramidx **out, const cairn_allocator *a, const char *stemmer,
                        cairn__ramidx *const *src, size_t n)
{
    cairn__ramidx *x = NULL;
    uint32_t *remap = NULL;
    int rc = cairn__ramidx_new(&x, a, stemmer);

    *out = NULL;
    for (size_t s = 0; rc == CAIRN_OK && s < n; s++) {
        cairn__ramidx *y = src[s];
        remap = cairn__calloc(a, y->ndocs ? y->ndocs : 1, sizeof *remap);
        if (remap == NULL) {
            rc = CAIRN_ENOMEM;
            break;
        }
        rc = cairn__ramidx_join_docs(x, y, remap);
        for (size_t i = 0; rc == CAIRN_OK && i < y->nterms; i++) {
            term *from = T(y, i), *to;
            long id;
            if (from->df == 0)
                continue;
            if ((rc = cairn__ramidx_check_postings(y, from)) != CAIRN_OK)
                break;
            if (y->damaged) {
                rc = CAIRN_ECORRUPT;
                break;
            }
            id = cairn__ramidx_term_id(x, y->arena + from->off, from->len);
            if (id < 0) {
                rc = CAIRN_ENOMEM;
                break;
            }
            to = &x->terms[id];
            /* n, not df: df is only a count the source claims */
            if (term_room(x, to, (size_t)to->n + from->n) != CAIRN_OK) {
                rc = CAIRN_ENOMEM;
                break;
            }
            join_postings(x, to, from, remap);
        }
        if (rc == CAIRN_OK && y->damaged) /* a term record failed: do not write its loss on */
            rc = CAIRN_ECORRUPT;
        cairn__free(a, remap);
        remap = NULL;
    }
    if (rc != CAIRN_OK) {
        cairn__free(a, remap);
        cairn__ramidx_free(x);
        return rc;
    }
    *out = x;
    return CAIRN_OK;
}
