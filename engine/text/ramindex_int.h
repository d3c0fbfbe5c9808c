/*
 * ramindex_int.h - what the files of the RAM text index share; internal to
 * engine/text/ramindex*.c (everyone else includes ramindex.h):
 *
 *   ramindex.c           the index: its life, the term dictionary, documents,
 *                        add and remove, the merge in RAM
 *   ramindex_search.c    a query's terms, MaxScore, cairn__ramidx_search(_many)
 *   ramindex_postings.c  the postings' block codec: a block decoded, the encoder
 *   ramindex_image.c     the file image (format-spec/memindex.md, "text
 *                        index"): write, merge_write, map, term records read
 *                        on first use, check
 *
 * Here: the image's constants, the index's structures, the postings' block
 * layout, the functions the files call across, and as static inline what
 * the search loop calls per posting or per block (T, nblocks, block_last,
 * is_live, the bit counts), so that it costs the same as in one file.
 */
#ifndef CAIRN_RAMINDEX_INT_H
#define CAIRN_RAMINDEX_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cairn.h"
#include "ramindex.h"
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
    const uint8_t *pk;   /* mapped: its postings, in blocks (cairn__pk_term_block);
                            else p */
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

static inline uint64_t packed_len(uint64_t n, unsigned w)
{
    return (n * w + 7) / 8;
}

static inline size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

static inline unsigned bits_of(uint64_t v)
{
    return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

/* Bits of a packed posting's document number in an image of ndocs
 * documents, and of its tf - 1 for a term whose largest tf is max_tf. */
static inline unsigned doc_bits(uint64_t ndocs)
{
    return ndocs > 1 ? bits_of(ndocs - 1) : 0u;
}

static inline unsigned tf_bits(uint32_t max_tf)
{
    return max_tf > 1 ? bits_of(max_tf - 1) : 0u;
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
     * the term table again: slots over `words` (wslot). */
    struct wslot *wtable;
    size_t wtable_cap;
    struct wordent { uint32_t off, len, term; } *words; /* bytes in warena */
    size_t nwords, words_cap;
    char *warena;
    size_t warena_len, warena_cap;
    /* Adding a document: its tokens first, then their lookups, so that
     * the cache misses of one lookup overlap those of the others. h: the
     * word's hash, key: its slot key (wslot). */
    struct tokref { uint32_t off, len; uint64_t h, key; } *toks;
    size_t ntoks, toks_cap;
    char *tbytes;
    size_t tb_len, tb_cap;
    /* The first TERM_FIRST postings of each term (ramindex.c, term_room):
     * chunks of CHUNK_TERMS terms' room, owned here. */
    posting **chunks;
    size_t nchunks, chunks_cap;
    posting *chunk_next;     /* the next term's room in the newest chunk */
    size_t chunk_left;       /* terms' room left there */
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

/* probe_slot reads an entry by its leading off and len. */
_Static_assert(offsetof(term, off) == 0 && offsetof(term, len) == 4, "term starts with off, len");

/* A slot of the word table. key: a word of 7 bytes or fewer, padded with
 * zeros (no word holds a NUL); a longer word's first 7 bytes and 0xFF (a
 * byte UTF-8 never holds). So the slot alone matches a short word, and a
 * hit reads nothing else. term: the word's term; word: its entry in
 * words, + 1 (0: an empty slot). */
struct wslot {
    uint64_t key;
    uint32_t term, word;
};

/* ---- the postings encoder (ramindex_postings.c) ------------------------- */

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

/* Postings written in blocks as they come, each term's from a byte of its
 * own, through put a buffer at a time: a term's skip table (from its
 * plan), then each block's header and bits (unpack's fields). */
typedef struct pk_enc {
    cairn__ramidx_put_fn put;
    void *user;
    unsigned db, tb; /* a term of one posting: its widths, no header */
    uint32_t n;    /* the term's postings */
    posting blk[PK_BLOCK]; /* the open block */
    uint32_t k;
    uint32_t prev; /* the document before it (UINT32_MAX: none) */
    uint64_t out;  /* bytes made so far */
    size_t len;
    uint8_t buf[4096];
} pk_enc;

/* ---- across the files --------------------------------------------------- */

/* ramindex.c */

/* The term's number, added if new (a mapped index: looked up, never
 * added): -1 unknown, -2 no memory. */
long cairn__ramidx_term_id(cairn__ramidx *x, const char *s, size_t len);

/* Room for nterms terms of arena bytes in all in an index being built, so
 * that adding them moves nothing (a merge knows its bound). Errors:
 * CAIRN_EINVAL (a mapped index), CAIRN_ENOMEM. */
int cairn__ramidx_reserve(cairn__ramidx *x, size_t nterms, size_t arena);

/* The term's number in x, or -1 (never added). */
long cairn__ramidx_lookup(cairn__ramidx *x, const char *s, size_t len);

/* Append y's live documents to x (a merge); remap[d]: their numbers in x. */
int cairn__ramidx_join_docs(cairn__ramidx *x, const cairn__ramidx *y, uint32_t *remap);

/* ramindex_image.c */

/* A mapped index's term id, read from its record (through T, once). */
term *cairn__ramidx_load_term(cairn__ramidx *x, size_t id);

/* A mapped index's term number, from the image's table: -1 unknown. */
long cairn__ramidx_frozen_lookup(cairn__ramidx *x, const char *s, size_t len);

/* A mapped term's postings, checked the first time they are read
 * (CAIRN_OK at once for a term in RAM). */
int cairn__ramidx_check_postings(const cairn__ramidx *x, term *t);

/* ramindex_postings.c: the decoder, then the encoder */

uint32_t cairn__pk_term_block(const term *t, uint32_t b, posting *buf, const posting **out);

int cairn__pk_plan_init(pk_plan *pl, const cairn_allocator *a, size_t nterms);
void cairn__pk_plan_feed(pk_plan *pl, const posting *p, size_t k);
int cairn__pk_plan_end(pk_plan *pl, size_t t, unsigned db, uint32_t max_tf, int single);
void cairn__pk_plan_free(pk_plan *pl);

int cairn__pk_term(pk_enc *e, uint32_t n, uint32_t max_tf, const uint32_t **skip);
int cairn__pk_push(pk_enc *e, const posting *p, size_t k);
int cairn__pk_block(pk_enc *e);
int cairn__pk_end(pk_enc *e);

/* Term id, read from the file first if the index is mapped. */
static inline term *T(cairn__ramidx *x, size_t id)
{
    term *t = &x->terms[id];
    return !x->frozen || t->loaded ? t : cairn__ramidx_load_term(x, id);
}

static inline int is_live(const cairn__ramidx *x, uint32_t local)
{
    return (x->live[local / 64] >> (local % 64)) & 1;
}

#endif /* CAIRN_RAMINDEX_INT_H */
