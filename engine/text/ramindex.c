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
 * up only while the document can still make it.
 *
 * A mapped index (an image, format-spec/memindex.md) keeps each term's
 * postings in blocks of PK_BLOCK document gaps, bit-packed at the widths
 * each block needs, behind a skip table (each block's last document and
 * offset). A query term's cursor holds one block, decoded; a lookup goes
 * through the skip table to the block that can hold the document (no block
 * passed over is decoded), then halves within it. Postings in RAM are read
 * in place through the same cursor, cut into blocks the same way. A term
 * of one posting (in bench_memory's texts, most terms: each memory's own
 * name) has a short record holding that posting and no postings bytes;
 * mapped, its posting is read in place as a term in RAM's is.
 */
#include "ramindex.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "alloc.h"
#include "tokenize.h"

/* ---- the file image's constants (format-spec/memindex.md, "text index") */

#define TIX_MAGIC 0x31584954u /* "TIX1" */
#define TIX_VERSION 4 /* 4: postings in blocks, gaps; 3: the term table at most 3/4 full */
#define TIX_HEAD 80
#define TIX_TERM 40
#define TIX_SINGLE 16     /* a term of one posting's record: no postings bytes */
#define TIX_SINGLE_MAX 0xffffu /* its len and tf - 1 are u16 */
#define TIX_SLACK 8  /* spare bytes after the postings: a field is one load */
#define TIX_MAX_W 56 /* bits of a posting at most: it fits one load past a byte */

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
    uint32_t checked;    /* mapped: its postings were verified */
    uint32_t loaded;     /* mapped: read from its file record */
    uint8_t db, tb;      /* mapped: bits of a document number, of tf - 1 at
                            max_tf (a term of one posting: no block header) */
    posting one;         /* mapped from a single record: its posting (p points
                            here); merge_write: the first posting counted */
    uint64_t sum;        /* mapped: XXH3-64 of its postings, from the file */
    const uint8_t *pk;   /* mapped: its postings, in blocks (term_block); else p */
    uint64_t room;       /* mapped: bytes from pk to the postings' spare bytes */
} term;

/* Postings come in blocks of PK_BLOCK (the last may be shorter): a
 * mapped term's are decoded a block at a time, a term in RAM's are read
 * in place, cut the same way. */
#define PK_BLOCK 128
#define PK_HEAD 2 /* a block's header: bits of its gaps, bits of its tf - 1 */
#define PK_SKIP 8 /* a skip entry: u32 last document, u32 byte offset */

static inline uint32_t nblocks(const term *t)
{
    return (uint32_t)(((uint64_t)t->n + PK_BLOCK - 1) / PK_BLOCK);
}

/* The last document of block b of t (b < nblocks; mapped: b > 0 or a
 * term of more than one block, whose skip table says it). */
static inline uint32_t block_last(const term *t, uint32_t b)
{
    uint64_t end = ((uint64_t)b + 1) * PK_BLOCK;
    uint32_t v;
    if (t->pk) {
        memcpy(&v, t->pk + (size_t)b * PK_SKIP, 4);
        return v;
    }
    return t->p[end < t->n ? end - 1 : t->n - 1].doc;
}

/* k fields of gw + tw bits (<= 56) from bit 0 of in into out: a document
 * gap (the documents between it and the one before) in the low gw bits,
 * tf - 1 above; prev: the document before the first (UINT32_MAX: none,
 * so that the first gap is the document itself). One unaligned load a
 * field: whoever calls it has 8 readable bytes past the fields. */
static void unpack(const uint8_t *in, uint32_t k, unsigned gw, unsigned tw, uint32_t prev,
                   posting *out)
{
    uint64_t gmask = ((uint64_t)1 << gw) - 1, tmask = ((uint64_t)1 << tw) - 1;
    unsigned w = gw + tw;
    size_t bit = 0;
    for (uint32_t j = 0; j < k; j++, bit += w) {
        uint64_t v;
        memcpy(&v, in + (bit >> 3), 8);
        v >>= bit & 7;
        prev += 1 + (uint32_t)(v & gmask); /* wraps past 2^32: seen as not increasing */
        out[j].doc = prev;
        out[j].tf = (uint32_t)((v >> gw) & tmask) + 1;
    }
}

static uint64_t packed_len(uint64_t n, unsigned w)
{
    return (n * w + 7) / 8;
}

/* Block b of t: its postings, in place (RAM) or decoded into buf (room
 * for PK_BLOCK), and how many (0: the block's header or offset points
 * outside the term's room, or a width is past 32 or their sum past 56).
 * Only bounds are checked here: check_postings checks what it holds. */
static uint32_t term_block(const term *t, uint32_t b, posting *buf, const posting **out)
{
    uint32_t nb = nblocks(t), k = b + 1 < nb ? PK_BLOCK : t->n - b * PK_BLOCK;
    uint64_t at = 0;
    unsigned gw = t->db, tw = t->tb;
    const uint8_t *h;

    *out = buf;
    if (t->pk == NULL) {
        *out = t->p + (size_t)b * PK_BLOCK;
        return k;
    }
    if (t->n > 1) {
        uint32_t off;
        if (nb > 1) {
            memcpy(&off, t->pk + (size_t)b * PK_SKIP + 4, 4);
            at = off;
        }
        if (at > t->room || t->room - at < PK_HEAD)
            return 0;
        h = t->pk + at;
        gw = h[0];
        tw = h[1];
        at += PK_HEAD;
        if (gw > 32 || tw > 32 || gw + tw > TIX_MAX_W)
            return 0;
    }
    if (packed_len(k, gw + tw) > t->room - at)
        return 0;
    unpack(t->pk + at, k, gw, tw, b > 0 ? block_last(t, b - 1) : UINT32_MAX, buf);
    return k;
}

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
    /* Adding a document: the term of each word (surface form) seen
     * before, so that a repeated word is neither stemmed nor looked up in
     * the term table again: slots as in `table`, over `words`. */
    uint64_t *wtable;
    size_t wtable_cap;
    struct wordent { uint32_t off, len, term; } *words; /* bytes in warena */
    size_t nwords, words_cap;
    char *warena;
    size_t warena_len, warena_cap;
    /* Adding a document: its tokens first, then their lookups, so that
     * the cache misses of one lookup overlap those of the others. */
    struct tokref { uint32_t off, len; uint64_t h; } *toks;
    size_t ntoks, toks_cap;
    char *tbytes;
    size_t tb_len, tb_cap;
    int frozen;              /* mapped from a file: arena, table, postings, ext
                                and dl point into the caller's bytes; a term is
                                read from its record on first use */
    const uint8_t *image;    /* mapped: the image's first byte */
    const uint8_t *tfile;    /* mapped: the full term records */
    const uint8_t *sfile;    /* mapped: the single records (terms nfull..) */
    const uint32_t *itab;    /* mapped: the image's term table (image_table) */
    size_t itab_cap;
    size_t nfull;            /* mapped: terms with a full record */
    size_t post_off;         /* mapped: the postings' offset in the image */
    uint64_t npost;          /* mapped: postings in the image */
    int damaged;             /* mapped: a record or slot failed its bounds */
};

/* probe_slot reads both kinds of entry by their leading off and len. */
_Static_assert(offsetof(term, off) == 0 && offsetof(term, len) == 4, "term starts with off, len");
_Static_assert(offsetof(struct wordent, off) == 0 && offsetof(struct wordent, len) == 4,
               "wordent starts with off, len");

static term *load_term(cairn__ramidx *x, size_t id);

/* Term id, read from the file first if the index is mapped. */
static inline term *T(cairn__ramidx *x, size_t id)
{
    term *t = &x->terms[id];
    return !x->frozen || t->loaded ? t : load_term(x, id);
}

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
    if (!x->frozen) {
        for (size_t i = 0; i < x->nterms; i++)
            cairn__free(x->a, x->terms[i].p);
        cairn__free(x->a, x->arena);
        cairn__free(x->a, x->table);
        cairn__free(x->a, x->ext);
        cairn__free(x->a, x->dl);
    }
    cairn__free(x->a, x->terms);
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
static long frozen_lookup(cairn__ramidx *x, const char *s, size_t len);

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

static long term_id(cairn__ramidx *x, const char *s, size_t len)
{
    if (x->frozen)
        return frozen_lookup(x, s, len);
    return term_id_h(x, s, len, XXH3_64bits(s, len));
}

/* Tokenizer callback: count each distinct term once per text. */
static int count_term(cairn__ramidx *x, long id);

static int on_term(void *user, const char *s, size_t len, uint32_t pos)
{
    cairn__ramidx *x = user;
    (void)pos;
    return count_term(x, term_id(x, s, len));
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
    x->ntoks++;
    x->tb_len += len;
    if (x->wtable_cap)
        __builtin_prefetch(&x->wtable[h & (x->wtable_cap - 1)]);
    return 0;
}

/* The word table's slot for s: its entry, or the empty slot to put it in. */
static size_t word_slot(const cairn__ramidx *x, const char *s, size_t len, uint64_t h)
{
    return probe_slot(x->wtable, x->wtable_cap, x->words, sizeof *x->words, x->warena, s, len, h);
}

/* Room for `more` new words at load <= 1/2. The slots keep only half of
 * each hash, so a bigger table rehashes the words' bytes. */
static int grow_words(cairn__ramidx *x, size_t more)
{
    size_t cap = x->wtable_cap ? x->wtable_cap : 1024;
    uint64_t *t, *old = x->wtable;
    size_t old_cap = x->wtable_cap;
    while ((x->nwords + more + 1) * 2 > cap)
        cap *= 2;
    if (cap == old_cap)
        return CAIRN_OK;
    if ((t = cairn__calloc(x->a, cap, sizeof *t)) == NULL)
        return CAIRN_ENOMEM;
    x->wtable = t;
    x->wtable_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i] != 0) {
            const struct wordent *we = &x->words[(uint32_t)old[i] - 1];
            const char *w = x->warena + we->off;
            x->wtable[word_slot(x, w, we->len, XXH3_64bits(w, we->len))] = old[i];
        }
    cairn__free(x->a, old);
    return CAIRN_OK;
}

/* The term number of a word (h: its hash), stemming and adding it (and
 * its term, if new) the first time: -2 no memory. The word table has room
 * (grow_words). */
static long word_term(cairn__ramidx *x, const char *s, size_t len, uint64_t h)
{
    size_t slot = word_slot(x, s, len, h);
    const char *stem;
    size_t slen;
    long id;
    int stemmed;

    if (x->wtable[slot] != 0)
        return (long)x->words[(uint32_t)x->wtable[slot] - 1].term;
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
    x->wtable[slot] = (h >> 32) << 32 | (uint64_t)(x->nwords + 1);
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
        long id = word_term(x, x->tbytes + x->toks[i].off, x->toks[i].len, x->toks[i].h);
        if (id < 0)
            return CAIRN_ENOMEM;
        x->toks[i].h = (uint64_t)id; /* the hash is spent: keep the id */
        __builtin_prefetch(&x->terms[id]);
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
        if (T(x, x->scr[i].term)->df > 0)
            T(x, x->scr[i].term)->df--;
    x->live[local / 64] &= ~(1ull << (local % 64));
    x->n_live--;
    x->sum_dl -= x->dl[local];
    return CAIRN_OK;
}

/* ---- search ------------------------------------------------------------- */

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

/* The term's number in x, or -1. */
static long lookup(cairn__ramidx *x, const char *s, size_t len)
{
    size_t slot;
    if (x->frozen)
        return frozen_lookup(x, s, len);
    if (x->table_cap == 0)
        return -1;
    slot = find_slot(x, s, len, XXH3_64bits(s, len));
    return x->table[slot] ? (long)(uint32_t)x->table[slot] - 1 : -1;
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
static int check_postings(const cairn__ramidx *x, term *t)
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
        uint32_t k = term_block(t, b, buf, &p);
        if (k == 0 || check_block(t, b, k, p, &at) != CAIRN_OK)
            return CAIRN_ECORRUPT;
        for (uint32_t j = 0; j < k; j++, i++) {
            /* tf 0: tf - 1 of 32 bits all ones */
            if (p[j].doc >= x->ndocs || (i > 0 && p[j].doc <= prev) || p[j].tf == 0 ||
                p[j].tf > t->max_tf)
                return CAIRN_ECORRUPT;
            prev = p[j].doc;
        }
        (void)XXH3_64bits_update(&st, p, k * sizeof *p);
    }
    if (XXH3_64bits_digest(&st) != t->sum)
        return CAIRN_ECHECKSUM;
    t->checked = 1;
    return CAIRN_OK;
}

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
    q->k = b < nblocks(q->t) ? term_block(q->t, b, q->buf, &q->p) : 0;
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
            long id = lookup(xs[s], qy.bytes + qy.w[i].off, qy.w[i].len);
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
            long id = lookup(xs[s], qy.bytes + qy.w[i].off, qy.w[i].len);
            term *t = id >= 0 ? T(xs[s], (size_t)id) : NULL;
            if (t == NULL || t->df == 0)
                continue;
            if ((rc = check_postings(xs[s], t)) != CAIRN_OK)
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

/* ---- merging ------------------------------------------------------------ */

/* Append y's live documents to x (a merge), remap[d] their numbers in x
 * (UINT32_MAX: dead). CAIRN_EINVAL: y's documents do not all come after
 * x's; CAIRN_ENOMEM. */
static int join_docs(cairn__ramidx *x, const cairn__ramidx *y, uint32_t *remap)
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
        uint32_t k = term_block(from, b, buf, &p);
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
        rc = join_docs(x, y, remap);
        for (size_t i = 0; rc == CAIRN_OK && i < y->nterms; i++) {
            term *from = T(y, i), *to;
            long id;
            size_t cap;
            if (from->df == 0)
                continue;
            if ((rc = check_postings(y, from)) != CAIRN_OK)
                break;
            if (y->damaged) {
                rc = CAIRN_ECORRUPT;
                break;
            }
            id = term_id(x, y->arena + from->off, from->len);
            if (id < 0) {
                rc = CAIRN_ENOMEM;
                break;
            }
            to = &x->terms[id];
            cap = to->cap;
            /* n, not df: df is only a count the source claims */
            if (cairn__grow(a, (void **)&to->p, &cap, (size_t)to->n + from->n, sizeof *to->p) != CAIRN_OK) {
                rc = CAIRN_ENOMEM;
                break;
            }
            to->cap = (uint32_t)cap;
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

/* ---- the file image (format-spec/memindex.md, "text index") ------------ */


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

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

static unsigned bits_of(uint64_t v)
{
    return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

/* Bits of a packed posting's document number in an image of ndocs
 * documents, and of its tf - 1 for a term whose largest tf is max_tf. */
static unsigned doc_bits(uint64_t ndocs)
{
    return ndocs > 1 ? bits_of(ndocs - 1) : 0u;
}

static unsigned tf_bits(uint32_t max_tf)
{
    return max_tf > 1 ? bits_of(max_tf - 1) : 0u;
}

/* A term the image gives a single record (TIX_SINGLE bytes, its posting
 * in it) rather than a full one and postings: one posting, and a length
 * and tf - 1 that fit the record's u16s. Decided from counts the writers
 * know before the head is written (merge_write: once counted). */
static int is_single(const term *tm)
{
    return tm->n == 1 && tm->max_tf - 1 <= TIX_SINGLE_MAX && tm->len <= TIX_SINGLE_MAX;
}

/* ---- postings in blocks (format-spec/memindex.md, "Postings") --------- */

/* Sizing each term's postings before any is written (the head gives each
 * term's offset): they are cut into blocks as they come, and each block's
 * last document and offset kept, the skip table of a term of more than
 * one block. */
typedef struct pk_plan {
    const cairn_allocator *a;
    uint64_t *len;        /* per term: bytes of its postings */
    uint32_t *skip;       /* the skip tables, in term order: last, offset */
    size_t nskip, cap;    /* u32s */
    uint64_t total;       /* bytes of every term's */
    /* the term being sized */
    size_t first;         /* its skip table in skip */
    uint32_t n, k;        /* its postings, those of the open block */
    uint32_t prev;        /* the document before (UINT32_MAX: none) */
    uint32_t gor, tor;    /* the open block's gaps, tf - 1, ORed together */
    uint64_t at;          /* bytes of its closed blocks */
    int failed;
} pk_plan;

/* Bytes of a block of k postings whose gaps OR to gor and tf - 1 to tor. */
static uint64_t block_len(uint32_t k, uint32_t gor, uint32_t tor)
{
    return PK_HEAD + packed_len(k, bits_of(gor) + bits_of(tor));
}

static void plan_close(pk_plan *pl)
{
    if (cairn__grow(pl->a, (void **)&pl->skip, &pl->cap, pl->nskip + 2, sizeof *pl->skip) !=
        CAIRN_OK) {
        pl->failed = 1;
        return;
    }
    pl->skip[pl->nskip++] = pl->prev;
    pl->skip[pl->nskip++] = (uint32_t)pl->at; /* the table's length added at the end */
    pl->at += block_len(pl->k, pl->gor, pl->tor);
    pl->k = pl->gor = pl->tor = 0;
}

static void plan_feed(pk_plan *pl, const posting *p, size_t k)
{
    for (size_t j = 0; j < k; j++) {
        pl->gor |= p[j].doc - pl->prev - 1; /* the first: the document itself */
        pl->tor |= p[j].tf - 1;
        pl->prev = p[j].doc;
        pl->n++;
        if (++pl->k == PK_BLOCK)
            plan_close(pl);
    }
}

/* Term t's postings were fed (the largest tf max_tf, db the bits of a
 * document number): its length (0 for a single term: its posting is in
 * its record). CAIRN_EINVAL: a posting of more than TIX_MAX_W bits, or a
 * term too long for its skip table's offsets. */
static int plan_end(pk_plan *pl, size_t t, unsigned db, uint32_t max_tf, int single)
{
    uint64_t nb;
    if (db + tf_bits(max_tf) > TIX_MAX_W)
        return CAIRN_EINVAL;
    if (pl->k)
        plan_close(pl);
    if (pl->failed)
        return CAIRN_ENOMEM;
    nb = (pl->nskip - pl->first) / 2;
    if (single)
        pl->len[t] = 0;
    else if (pl->n == 1) /* no header: the document in db bits */
        pl->len[t] = packed_len(1, db + tf_bits(max_tf));
    else if (nb == 1)
        pl->len[t] = pl->at;
    else if (pl->at + nb * PK_SKIP > UINT32_MAX)
        return CAIRN_EINVAL;
    else
        pl->len[t] = pl->at + nb * PK_SKIP;
    if (nb > 1)
        for (size_t i = pl->first + 1; i < pl->nskip; i += 2)
            pl->skip[i] += (uint32_t)(nb * PK_SKIP);
    else
        pl->nskip = pl->first; /* one block: no table */
    pl->total += pl->len[t];
    pl->first = pl->nskip;
    pl->n = 0;
    pl->prev = UINT32_MAX;
    pl->at = 0;
    return CAIRN_OK;
}

static int plan_init(pk_plan *pl, const cairn_allocator *a, size_t nterms)
{
    memset(pl, 0, sizeof *pl);
    pl->a = a;
    pl->prev = UINT32_MAX;
    pl->len = cairn__calloc(a, nterms ? nterms : 1, sizeof *pl->len);
    return pl->len ? CAIRN_OK : CAIRN_ENOMEM;
}

static void plan_free(pk_plan *pl)
{
    cairn__free(pl->a, pl->len);
    cairn__free(pl->a, pl->skip);
}

/* Postings written in blocks as they come, each term's from a byte of its
 * own, through put a buffer at a time: a term's skip table (from its
 * plan), then each block's header and bits (unpack's fields). */
typedef struct pk_enc {
    cairn__ramidx_put_fn put;
    void *user;
    uint64_t acc;  /* bits not written yet, the oldest lowest */
    unsigned nacc; /* how many (below 8 between fields) */
    unsigned db, tb; /* a term of one posting: its widths, no header */
    uint32_t n;    /* the term's postings */
    posting blk[PK_BLOCK]; /* the open block */
    uint32_t k;
    uint32_t prev; /* the document before it (UINT32_MAX: none) */
    uint64_t out;  /* bytes made so far */
    size_t len;
    uint8_t buf[4096];
} pk_enc;

static int pk_flush(pk_enc *e)
{
    int rc = e->len ? e->put(e->user, e->buf, e->len) : CAIRN_OK;
    e->len = 0;
    return rc;
}

static int pk_byte(pk_enc *e, uint8_t b)
{
    e->buf[e->len++] = b;
    e->out++;
    return e->len > sizeof e->buf - 8 ? pk_flush(e) : CAIRN_OK;
}

static int pk_u32(pk_enc *e, uint32_t v)
{
    int rc = CAIRN_OK;
    for (int i = 0; i < 4 && rc == CAIRN_OK; i++)
        rc = pk_byte(e, (uint8_t)(v >> 8 * i));
    return rc;
}

/* Each field's bits go in above those not written yet (fewer than 8
 * between fields, w <= 56: at most 63), then the whole bytes among them
 * leave in one 8-byte store: the buffer keeps 8 bytes of room past len. */
static int pk_bits(pk_enc *e, uint64_t v, unsigned w)
{
    unsigned whole;
    e->acc |= v << e->nacc;
    e->nacc += w;
    memcpy(e->buf + e->len, &e->acc, 8); /* little-endian: the oldest bits first */
    whole = e->nacc >> 3;
    e->len += whole;
    e->out += whole;
    e->acc = whole < 8 ? e->acc >> 8 * whole : 0;
    e->nacc &= 7;
    return e->len > sizeof e->buf - 8 ? pk_flush(e) : CAIRN_OK;
}

/* The open block out: its header (but in a term of one posting), its
 * fields, its last bits in a byte of their own. */
static int pk_block(pk_enc *e)
{
    uint32_t gor = 0, tor = 0, prev = e->prev;
    unsigned gw, tw;
    int rc = CAIRN_OK;
    for (uint32_t j = 0; j < e->k; prev = e->blk[j++].doc) {
        gor |= e->blk[j].doc - prev - 1;
        tor |= e->blk[j].tf - 1;
    }
    gw = e->n == 1 ? e->db : bits_of(gor);
    tw = e->n == 1 ? e->tb : bits_of(tor);
    if (e->n != 1 && ((rc = pk_byte(e, (uint8_t)gw)) != CAIRN_OK ||
                      (rc = pk_byte(e, (uint8_t)tw)) != CAIRN_OK))
        return rc;
    prev = e->prev;
    for (uint32_t j = 0; j < e->k && rc == CAIRN_OK; prev = e->blk[j++].doc)
        rc = pk_bits(e, (uint64_t)(e->blk[j].doc - prev - 1) | (uint64_t)(e->blk[j].tf - 1) << gw,
                     gw + tw);
    if (rc == CAIRN_OK && e->nacc)
        rc = pk_byte(e, (uint8_t)e->acc);
    e->acc = 0;
    e->nacc = 0;
    e->prev = prev;
    e->k = 0;
    return rc;
}

static int pk_push(pk_enc *e, const posting *p, size_t k)
{
    int rc = CAIRN_OK;
    for (size_t j = 0; j < k && rc == CAIRN_OK; j++) {
        e->blk[e->k++] = p[j];
        if (e->k == PK_BLOCK)
            rc = pk_block(e);
    }
    return rc;
}

/* A term of n postings (the largest tf max_tf) starts: its skip table,
 * the next nb pairs of *skip (nb > 1), goes out first. */
static int pk_term(pk_enc *e, uint32_t n, uint32_t max_tf, const uint32_t **skip)
{
    uint32_t nb = (uint32_t)(((uint64_t)n + PK_BLOCK - 1) / PK_BLOCK);
    int rc = CAIRN_OK;
    e->n = n;
    e->tb = tf_bits(max_tf);
    e->prev = UINT32_MAX;
    e->k = 0;
    for (uint32_t i = 0; nb > 1 && i < 2 * nb && rc == CAIRN_OK; i++)
        rc = pk_u32(e, (*skip)[i]);
    if (nb > 1)
        *skip += 2 * nb;
    return rc;
}

/* The postings end: the spare bytes, then padding to 8. */
static int pk_end(pk_enc *e)
{
    int rc = CAIRN_OK;
    uint64_t end = pad8((size_t)e->out + TIX_SLACK);
    while (e->out < end && rc == CAIRN_OK)
        rc = pk_byte(e, 0);
    return rc == CAIRN_OK ? pk_flush(e) : rc;
}

/* x's terms' postings sized into pl (in RAM: x is not mapped). */
static int plan_ram(const cairn__ramidx *x, pk_plan *pl)
{
    unsigned db = doc_bits(x->ndocs);
    int rc = plan_init(pl, x->a, x->nterms);
    for (size_t t = 0; rc == CAIRN_OK && t < x->nterms; t++) {
        plan_feed(pl, x->terms[t].p, x->terms[t].n);
        rc = plan_end(pl, t, db, x->terms[t].max_tf, is_single(&x->terms[t]));
    }
    return rc;
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
        rc = pk_term(e, x->terms[t].n, x->terms[t].max_tf, &skip);
        if (rc == CAIRN_OK)
            rc = more(u, t, e);
        if (rc == CAIRN_OK && e->k)
            rc = pk_block(e);
        /* The head said where each term starts: a source that gave other
         * postings the second time through (it cannot, unless its bytes
         * changed under us) must not leave a file that says otherwise. */
        if (rc == CAIRN_OK && e->out - from != pl->len[t])
            rc = CAIRN_ECORRUPT;
    }
    return rc == CAIRN_OK ? pk_end(e) : rc;
}

static int ram_postings(void *u, size_t t, pk_enc *e)
{
    const cairn__ramidx *x = u;
    return pk_push(e, x->terms[t].p, x->terms[t].n);
}

int cairn__ramidx_write(const cairn__ramidx *x, cairn__ramidx_put_fn put, void *user)
{
    pk_enc *e = NULL;
    pk_plan pl;
    int rc;

    if (x->frozen && x->nterms > 0) /* a mapped index is written by merging it */
        return CAIRN_EINVAL;
    rc = plan_ram(x, &pl);
    if (rc == CAIRN_OK)
        rc = write_head(x, &pl, 0, put, user);
    if (rc == CAIRN_OK && (e = cairn__calloc(x->a, 1, sizeof *e)) == NULL)
        rc = CAIRN_ENOMEM;
    if (rc == CAIRN_OK) {
        e->put = put;
        e->user = user;
        rc = write_postings(x, &pl, e, ram_postings, (void *)(uintptr_t)x);
    }
    cairn__free(x->a, e);
    plan_free(&pl);
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
    for (size_t s = 0; rc == CAIRN_OK && s < w->n; s++) {
        cairn__ramidx *y = w->src[s];
        w->remap[s] = cairn__calloc(a, y->ndocs ? y->ndocs : 1, sizeof **w->remap);
        tmap[s] = cairn__calloc(a, y->nterms ? y->nterms : 1, sizeof **tmap);
        if (w->remap[s] == NULL || tmap[s] == NULL) {
            rc = CAIRN_ENOMEM;
            break;
        }
        rc = join_docs(x, y, w->remap[s]);
        for (size_t i = 0; rc == CAIRN_OK && i < y->nterms; i++) {
            term *t = T(y, i);
            long id;
            if (t->df == 0)
                continue;
            if ((id = term_id(x, y->arena + t->off, t->len)) < 0) {
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
        if ((rc = check_postings(y, from)) != CAIRN_OK)
            return rc;
        if (y->damaged)
            return CAIRN_ECORRUPT;
        if (mw_stopped(w, 1 + from->n))
            return CAIRN_ELOCKED; /* given up */
        for (uint32_t b = 0; b < nblocks(from); b++) {
            const posting *p;
            uint32_t kb = term_block(from, b, blk, &p);
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
    plan_feed(c->pl, p, k);
    return XXH3_64bits_update(c->st, p, k * sizeof *p) == XXH_OK ? CAIRN_OK : CAIRN_ENOMEM;
}

static int mw_put(void *u, const posting *p, size_t k)
{
    return pk_push(u, p, k);
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
        rc = plan_init(&pl, a, w.x->nterms);
    /* Each term's counts, the sum of its postings and its blocks' sizes,
     * made once to count and again to write: no term's postings are
     * held. */
    for (size_t t = 0; rc == CAIRN_OK && t < w.x->nterms; t++) {
        mw_sum c = {&w, &w.x->terms[t], &st, &pl};
        XXH3_64bits_reset(&st);
        rc = mw_postings(&w, t, mw_count, &c);
        w.x->terms[t].sum = XXH3_64bits_digest(&st);
        if (rc == CAIRN_OK)
            rc = plan_end(&pl, t, doc_bits(w.x->ndocs), w.x->terms[t].max_tf,
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
    plan_free(&pl);
    mwrite_free(&w);
    return rc;
}

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
static term *load_term(cairn__ramidx *x, size_t id)
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
static long frozen_lookup(cairn__ramidx *x, const char *s, size_t len)
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
    /* calloc: pages of terms never used are never touched */
    x->terms = cairn__calloc(a, nterms ? nterms : 1, sizeof *x->terms);
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
        if ((rc = check_postings(x, tm)) != CAIRN_OK)
            return rc;
        for (uint32_t b = 0; b < nblocks(tm); b++) {
            posting buf[PK_BLOCK];
            const posting *p;
            uint32_t k = term_block(tm, b, buf, &p);
            for (uint32_t j = 0; j < k; j++)
                live_postings += is_live(x, p[j].doc);
        }
        if (live_postings != tm->df)
            return CAIRN_ECORRUPT;
        live_postings = 0;
    }
    return CAIRN_OK;
}
