/*
 * tokenize.c - see tokenize.h and format-spec/tokenizer.md.
 *
 * One pass over the bytes. ASCII takes a fast path (lower-casing a letter
 * is all NFKC + case folding do to it); anything else is decoded and
 * folded one code point at a time with utf8proc (compatibility
 * decomposition + case folding), marks following a Latin letter are
 * dropped, and at the end of a word the code points are put in canonical
 * order and recomposed (NFC of the folded form), then encoded and stemmed.
 * No allocation per word: the word is built in fixed buffers and a longer
 * one is cut (its remaining characters are consumed, not emitted).
 */
#include "tokenize.h"

#include <libstemmer.h>
#include <string.h>
#include <utf8proc.h>
#include <xxhash.h>

#include "alloc.h"

#define TOK_MAX_CP TOK_MAX_BYTES /* a code point is at least one byte */

/* Stemming is the tokenizer's dearest step, and words repeat (Zipf): a
 * direct-mapped cache of recent words and their stems answers most. It
 * starts small (188 KB: one per index, and a store may have many
 * namespaces) and doubles, up to STEM_CACHE_MAX, while more than one
 * lookup in STEM_MISS_MAX misses over a window of STEM_WINDOW lookups: a
 * large vocabulary (a big index) earns the memory, a small one never
 * pays it. */
#define STEM_CACHE 4096
#define STEM_CACHE_MAX 65536
#define STEM_WINDOW 65536
#define STEM_MISS_MAX 8
#define STEM_KEY_MAX 22

typedef struct stem_ent {
    uint8_t in_len, out_len; /* in_len 0: empty */
    char in[STEM_KEY_MAX];
    char out[STEM_KEY_MAX];
} stem_ent;

struct cairn__tokenizer {
    const cairn_allocator *a;
    struct sb_stemmer *stem; /* NULL: no stemming */
    stem_ent *cache;         /* cache_cap entries, or NULL (no memory: uncached) */
    size_t cache_cap;
    uint32_t lookups, misses; /* in the current window */
    int rules;                /* 1 or TOK_VERSION: see cairn__tok_new_rules */
    char name[32];
};

/* At the end of a window with too many misses: a cache twice the size
 * (empty; the old one is dropped). No memory: keep the old one. */
static void maybe_grow_cache(cairn__tokenizer *t)
{
    stem_ent *c;
    int grow = t->misses > STEM_WINDOW / STEM_MISS_MAX && t->cache_cap < STEM_CACHE_MAX;
    t->lookups = t->misses = 0;
    if (!grow || (c = cairn__calloc(t->a, t->cache_cap * 2, sizeof *c)) == NULL)
        return;
    cairn__free(t->a, t->cache);
    t->cache = c;
    t->cache_cap *= 2;
}

/* The stem of buf[0..len) into *term / *len (pointing into the cache, the
 * stemmer's buffer, or left as is). */
/* Snowball alone: 0 when it failed (no memory), leaving *term / *len. */
static int stem_raw(cairn__tokenizer *t, const char *buf, const char **term, size_t *len)
{
    const sb_symbol *s = sb_stemmer_stem(t->stem, (const sb_symbol *)buf, (int)*len);
    int sl = sb_stemmer_length(t->stem);
    if (s == NULL || sl <= 0 || sl > TOK_MAX_BYTES)
        return 0;
    *term = (const char *)s;
    *len = (size_t)sl;
    return 1;
}

static void stem_word(cairn__tokenizer *t, const char *buf, const char **term, size_t *len)
{
    size_t n = *len;
    stem_ent *e = NULL;
    const sb_symbol *s;
    int sl;

    if (t->cache == NULL) { /* on first use: a tokenizer that never stems pays nothing */
        t->cache = cairn__calloc(t->a, STEM_CACHE, sizeof *t->cache);
        t->cache_cap = t->cache != NULL ? STEM_CACHE : 0;
    }
    if (t->cache != NULL && n <= STEM_KEY_MAX) {
        if (++t->lookups == STEM_WINDOW)
            maybe_grow_cache(t);
        e = &t->cache[XXH3_64bits(buf, n) & (t->cache_cap - 1)];
        if (e->in_len == n && memcmp(e->in, buf, n) == 0) {
            *term = e->out;
            *len = e->out_len;
            return;
        }
        t->misses++;
    }
    if (!stem_raw(t, buf, term, len))
        return;
    sl = (int)*len;
    s = (const sb_symbol *)*term;
    if (e != NULL && sl <= STEM_KEY_MAX) {
        e->in_len = (uint8_t)n;
        memcpy(e->in, buf, n);
        e->out_len = (uint8_t)sl;
        memcpy(e->out, s, (size_t)sl);
    }
}

/* The word being built. */
typedef struct word {
    utf8proc_int32_t cp[TOK_MAX_CP + 8]; /* slack: one decomposition never
                                            adds more than a few */
    size_t n;
    int ascii;      /* every code point < 0x80: no composition needed */
    int latin_base; /* the last base character was a Latin letter */
} word;

int cairn__tok_new(cairn__tokenizer **out, const cairn_allocator *a, const char *stemmer)
{
    return cairn__tok_new_rules(out, a, stemmer, TOK_VERSION);
}

int cairn__tok_new_rules(cairn__tokenizer **out, const cairn_allocator *a, const char *stemmer,
                         int rules)
{
    cairn__tokenizer *t;
    const char *name = stemmer != NULL ? stemmer : "english";
    int known = 0;

    *out = NULL;
    if (strlen(name) >= sizeof t->name || (rules != 1 && rules != TOK_VERSION))
        return CAIRN_EINVAL;
    if (strcmp(name, "none") != 0) {
        for (const char **l = sb_stemmer_list(); *l != NULL; l++)
            if (strcmp(*l, name) == 0)
                known = 1;
        if (!known)
            return CAIRN_EINVAL;
    }
    t = cairn__calloc(a, 1, sizeof *t);
    if (t == NULL)
        return CAIRN_ENOMEM;
    t->a = a;
    t->rules = rules;
    strcpy(t->name, name);
    if (known) {
        t->stem = sb_stemmer_new(name, "UTF_8");
        if (t->stem == NULL) { /* listed, so only memory can fail */
            cairn__free(a, t);
            return CAIRN_ENOMEM;
        }
    }
    *out = t;
    return CAIRN_OK;
}

size_t cairn__tok_stem_cache(const cairn__tokenizer *t)
{
    return t->cache_cap;
}

void cairn__tok_free(cairn__tokenizer *t)
{
    if (t == NULL)
        return;
    if (t->stem != NULL)
        sb_stemmer_delete(t->stem);
    cairn__free(t->a, t->cache);
    cairn__free(t->a, t);
}

const char *cairn__tok_stemmer(const cairn__tokenizer *t)
{
    return t->name;
}

static int is_latin(utf8proc_int32_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= 0xC0 && c < 0x250 && c != 0xD7 && c != 0xF7) ||
           (c >= 0x1E00 && c < 0x1F00);
}

/* Characters that are words by themselves: scripts written without spaces
 * (a word segmenter would need a dictionary; unigrams still match). */
static int is_single(utf8proc_int32_t c)
{
    return (c >= 0x3040 && c <= 0x30FF) ||   /* Hiragana, Katakana */
           (c >= 0x3400 && c <= 0x4DBF) ||   /* CJK Extension A */
           (c >= 0x4E00 && c <= 0x9FFF) ||   /* CJK Unified Ideographs */
           (c >= 0xF900 && c <= 0xFAFF) ||   /* CJK Compatibility Ideographs */
           (c >= 0x20000 && c <= 0x323AF);   /* CJK Extensions B-H */
}

static int is_word_cat(utf8proc_category_t k)
{
    switch (k) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
        return 1;
    default:
        return 0;
    }
}

static int is_mark_cat(utf8proc_category_t k)
{
    return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_MC || k == UTF8PROC_CATEGORY_ME;
}

static void push(word *w, utf8proc_int32_t c)
{
    if (w->n < TOK_MAX_CP)
        w->cp[w->n++] = c;
}

/* Fold one non-ASCII word character into w. */
static void push_folded(word *w, utf8proc_int32_t c)
{
    utf8proc_int32_t d[18];
    int last = 0;
    utf8proc_ssize_t k =
        utf8proc_decompose_char(c, d, 18, UTF8PROC_COMPAT | UTF8PROC_DECOMPOSE | UTF8PROC_CASEFOLD,
                                &last);
    if (k < 0 || k > 18)
        return; /* unassigned or invalid: nothing to index */
    for (utf8proc_ssize_t i = 0; i < k; i++) {
        utf8proc_category_t cat = utf8proc_category(d[i]);
        if (is_mark_cat(cat)) {
            if (w->latin_base)
                continue; /* é -> e: accents do not separate Latin words */
        } else if (is_word_cat(cat)) {
            w->latin_base = is_latin(d[i]);
        } else {
            continue; /* compatibility forms may bring punctuation: drop it */
        }
        if (d[i] >= 0x80)
            w->ascii = 0;
        push(w, d[i]);
    }
}

/* Canonical order of combining marks (stable insertion sort by class),
 * then composition: the folded word in NFC. */
static size_t compose(word *w)
{
    for (size_t i = 1; i < w->n; i++) {
        utf8proc_int32_t c = w->cp[i];
        int cc = utf8proc_get_property(c)->combining_class;
        size_t j = i;
        if (cc == 0)
            continue;
        while (j > 0 && utf8proc_get_property(w->cp[j - 1])->combining_class > cc) {
            w->cp[j] = w->cp[j - 1];
            j--;
        }
        w->cp[j] = c;
    }
    {
        utf8proc_ssize_t r = utf8proc_normalize_utf32(w->cp, (utf8proc_ssize_t)w->n,
                                                      UTF8PROC_COMPOSE | UTF8PROC_STABLE);
        return r < 0 ? w->n : (size_t)r;
    }
}

/* A word's bytes, folded, to fn: stemmed first if asked. */
static int emit_bytes(cairn__tokenizer *t, const char *buf, size_t len, uint32_t *pos,
                      cairn__tok_fn fn, void *user, int stem)
{
    const char *term = buf;
    int rc;
    if (len == 0)
        return CAIRN_OK;
    if (stem && t->stem != NULL)
        stem_word(t, buf, &term, &len);
    rc = fn(user, term, len, *pos);
    (*pos)++;
    return rc;
}

static int emit(cairn__tokenizer *t, word *w, uint32_t *pos, cairn__tok_fn fn, void *user,
                int stem)
{
    char buf[TOK_MAX_BYTES + 4];
    size_t n = w->ascii ? w->n : compose(w), len = 0;

    /* Rules 1: a trailing apostrophe is not part of a word (it only joins
     * letters). Rules 2 never keep one. */
    while (n > 0 && w->cp[n - 1] == '\'')
        n--;
    if (w->ascii) { /* one byte a code point: no encoder needed */
        len = n < TOK_MAX_BYTES ? n : TOK_MAX_BYTES;
        for (size_t i = 0; i < len; i++)
            buf[i] = (char)w->cp[i];
        n = 0;
    }
    for (size_t i = 0; i < n; i++) {
        utf8proc_uint8_t enc[4];
        utf8proc_ssize_t k = utf8proc_encode_char(w->cp[i], enc);
        if (k <= 0 || len + (size_t)k > TOK_MAX_BYTES)
            break;
        memcpy(buf + len, enc, (size_t)k);
        len += (size_t)k;
    }
    w->n = 0;
    w->ascii = 1;
    w->latin_base = 0;
    return emit_bytes(t, buf, len, pos, fn, user, stem);
}

static inline int ascii_alnum(uint8_t b)
{
    return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9');
}

/* cairn__tok_run with stem = 1, cairn__tok_run_words with 0. */
static int run(cairn__tokenizer *t, const uint8_t *text, size_t len, cairn__tok_fn fn, void *user,
               int stem)
{
    word w;
    uint32_t pos = 0;
    size_t i = 0;
    int rc = CAIRN_OK;

    w.n = 0;
    w.ascii = 1;
    w.latin_base = 0;
    while (i < len && rc == CAIRN_OK) {
        uint8_t b = text[i];
        utf8proc_int32_t c;
        utf8proc_ssize_t k;

        if (w.n == 0 && ascii_alnum(b)) {
            /* A word of ASCII letters and digits ended by an ASCII
             * separator (not an apostrophe) or the end: what push and
             * emit would make of it, without them. */
            size_t j = i + 1;
            while (j < len && ascii_alnum(text[j]))
                j++;
            if (j == len || (text[j] < 0x80 && text[j] != '\'')) {
                char buf[TOK_MAX_BYTES];
                size_t n = j - i < TOK_MAX_BYTES ? j - i : TOK_MAX_BYTES;
                for (size_t at = 0; at < n; at++) {
                    uint8_t a = text[i + at];
                    buf[at] = (char)(a >= 'A' && a <= 'Z' ? a + ('a' - 'A') : a);
                }
                rc = emit_bytes(t, buf, n, &pos, fn, user, stem);
                i = j;
                continue;
            }
        }
        if (b < 0x80) {
            if ((b >= 'a' && b <= 'z') || (b >= '0' && b <= '9')) {
                push(&w, b);
                w.latin_base = b >= 'a';
            } else if (b >= 'A' && b <= 'Z') {
                push(&w, b + ('a' - 'A'));
                w.latin_base = 1;
            } else if (b == '\'' && w.n > 0 && w.latin_base && t->rules == 1) {
                push(&w, '\''); /* kept only if a letter follows (see emit) */
            } else if (w.n > 0) {
                rc = emit(t, &w, &pos, fn, user, stem);
            }
            i++;
            continue;
        }
        k = utf8proc_iterate(text + i, (utf8proc_ssize_t)(len - i), &c);
        if (k <= 0) { /* invalid UTF-8: one byte, a separator */
            if (w.n > 0)
                rc = emit(t, &w, &pos, fn, user, stem);
            i++;
            continue;
        }
        i += (size_t)k;
        if (c == 0x2019 && w.n > 0 && w.latin_base && t->rules == 1) { /* ’ as in don’t */
            push(&w, '\'');
        } else if (is_single(c)) {
            if (w.n > 0)
                rc = emit(t, &w, &pos, fn, user, stem);
            if (rc == CAIRN_OK) {
                push_folded(&w, c);
                rc = emit(t, &w, &pos, fn, user, stem);
            }
        } else if (is_word_cat(utf8proc_category(c))) {
            push_folded(&w, c);
        } else if (w.n > 0) {
            rc = emit(t, &w, &pos, fn, user, stem);
        }
    }
    if (rc == CAIRN_OK && w.n > 0)
        rc = emit(t, &w, &pos, fn, user, stem);
    return rc;
}

int cairn__tok_run(cairn__tokenizer *t, const uint8_t *text, size_t len, cairn__tok_fn fn,
                   void *user)
{
    return run(t, text, len, fn, user, 1);
}

int cairn__tok_run_words(cairn__tokenizer *t, const uint8_t *text, size_t len, cairn__tok_fn fn,
                         void *user)
{
    return run(t, text, len, fn, user, 0);
}

int cairn__tok_stem(cairn__tokenizer *t, const char *surface, size_t len, const char **term,
                    size_t *term_len)
{
    *term = surface;
    *term_len = len;
    /* Not through the stem cache: its caller remembers the stems itself,
     * and would send it only words it has not seen, all misses. */
    return t->stem == NULL || stem_raw(t, surface, term, term_len);
}
