/*
 * memkeys.c - the id and content keys of memories a writer has not folded
 * (memkeys.h).
 */
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "cairn.h"
#include "memkeys.h"
#include "memrec.h"

/* 0 marks an empty slot: a key that hashes to 0 is stored as 1 (a set
 * that over-approximates may merge the two). */
static uint64_t nonzero(uint64_t h)
{
    return h ? h : 1;
}

uint64_t cairn__memkeys_ns_key(const char *ns, size_t len)
{
    return nonzero(XXH3_64bits(ns, len));
}

uint64_t cairn__memkeys_content_key(uint64_t ns_key, const char *content, size_t len)
{
    return nonzero(XXH3_64bits_withSeed(content, len, ns_key));
}

uint64_t cairn__memkeys_id_key(const char *id, size_t len)
{
    return nonzero(XXH3_64bits(id, len));
}

/* A probe ends at the key, at an empty slot, or after every slot: a
 * file's sets are shared with other processes, and a damaged one may have
 * no empty slot left (then the key may be there: over-approximate). */
static int has(const uint64_t *t, size_t cap, uint64_t key)
{
    size_t i = (size_t)key & (cap - 1);
    for (size_t step = 0; step < cap; step++, i = (i + 1) & (cap - 1)) {
        if (t[i] == key)
            return 1;
        if (t[i] == 0)
            return 0;
    }
    return cap != 0;
}

/* 0 when no slot is left (only in a damaged file's sets). */
static int put(uint64_t *t, size_t cap, uint64_t key)
{
    size_t i = (size_t)key & (cap - 1);
    for (size_t step = 0; step < cap; step++, i = (i + 1) & (cap - 1))
        if (t[i] == 0 || t[i] == key) {
            t[i] = key;
            return 1;
        }
    return 0;
}

static cairn__memkeys_core *core(cairn__memkeys *k)
{
    if (k->core == NULL)
        k->core = &k->own;
    return k->core;
}

static const cairn__memkeys_core *core_c(const cairn__memkeys *k)
{
    return k->core != NULL ? k->core : &k->own;
}

/* Eight times the slots, every key put again. */
static int grow(cairn__memkeys *k)
{
    /* Few rehashes (each costs a cache miss a key): 8,192, 65,536 and
     * 524,288 slots, the last 8 MiB for both sets. */
    size_t cap = k->cap ? k->cap * 8 : 8192;
    uint64_t *c = calloc(cap, sizeof *c), *d = calloc(cap, sizeof *d);
    if (c == NULL || d == NULL) {
        free(c);
        free(d);
        return CAIRN_ENOMEM;
    }
    for (size_t i = 0; i < k->cap; i++) {
        if (k->content[i] != 0)
            (void)put(c, cap, k->content[i]);
        if (k->ids[i] != 0)
            (void)put(d, cap, k->ids[i]);
    }
    free(k->content);
    free(k->ids);
    k->content = c;
    k->ids = d;
    k->cap = cap;
    return CAIRN_OK;
}

/* Put the pending keys into the tables. */
static void drain(cairn__memkeys *k)
{
    for (size_t i = 0; i < k->n_pend; i++) {
        (void)put(k->content, k->cap, k->pend_content[i]);
        (void)put(k->ids, k->cap, k->pend_id[i]);
    }
    k->n_pend = 0;
}

/* The slot of ns_key in the per-namespace counts, or n_ns. */
static size_t ns_slot(const cairn__memkeys_core *c, uint64_t ns_key)
{
    size_t i = 0, n = c->n_ns < CAIRN__MEMKEYS_NS ? (size_t)c->n_ns : CAIRN__MEMKEYS_NS;
    while (i < n && c->ns_key[i] != ns_key)
        i++;
    return i;
}

long cairn__memkeys_ns_slot(const cairn__memkeys *k, uint64_t ns_key)
{
    const cairn__memkeys_core *c = core_c(k);
    size_t i = ns_slot(c, ns_key);
    return i < c->n_ns ? (long)i : -1;
}

uint64_t cairn__memkeys_in_ns(const cairn__memkeys *k, uint64_t ns_key)
{
    const cairn__memkeys_core *c = core_c(k);
    size_t i = ns_slot(c, ns_key);
    return i < c->n_ns ? c->ns_n[i] : 0;
}

uint64_t cairn__memkeys_count(const cairn__memkeys *k)
{
    return core_c(k)->n;
}

void cairn__memkeys_attach(cairn__memkeys *k, cairn__memkeys_core *c, uint64_t *content,
                           uint64_t *ids, size_t cap)
{
    cairn__memkeys_free(k);
    k->core = c;
    k->content = content;
    k->ids = ids;
    k->cap = cap;
    k->fixed = 1;
}

void cairn__memkeys_detach(cairn__memkeys *k)
{
    if (!k->fixed)
        return;
    memset(k, 0, sizeof *k);
}

int cairn__memkeys_add(cairn__memkeys *k, uint64_t ns_key, uint64_t content_key, uint64_t id_key)
{
    cairn__memkeys_core *c = core(k);
    size_t ns = ns_slot(c, ns_key);
    if (ns == CAIRN__MEMKEYS_NS)
        return CAIRN_EINVAL;
    if (k->fixed) {
        /* a file's sets: at most half full, and every key in its slot
         * before the turn ends */
        if ((c->n + 1) * 2 > k->cap || !put(k->content, k->cap, content_key) ||
            !put(k->ids, k->cap, id_key))
            return CAIRN_ENOMEM;
        c->n++;
        if (ns == c->n_ns) {
            c->ns_key[ns] = ns_key;
            c->ns_n[ns] = 0;
            c->n_ns++;
        }
        c->ns_n[ns]++;
        return CAIRN_OK;
    }
    /* at most half full: probes stay short */
    if ((c->n + 1) * 2 > k->cap) {
        drain(k);
        if (grow(k) != CAIRN_OK)
            return CAIRN_ENOMEM;
    }
    __builtin_prefetch(&k->content[(size_t)content_key & (k->cap - 1)], 1);
    __builtin_prefetch(&k->ids[(size_t)id_key & (k->cap - 1)], 1);
    k->pend_content[k->n_pend] = content_key;
    k->pend_id[k->n_pend] = id_key;
    c->n++;
    if (ns == c->n_ns) {
        c->ns_key[c->n_ns++] = ns_key;
        c->ns_n[ns] = 0;
    }
    c->ns_n[ns]++;
    if (++k->n_pend == CAIRN__MEMKEYS_GROUP)
        drain(k);
    return CAIRN_OK;
}

static int pending(const uint64_t *pend, size_t n, uint64_t key)
{
    for (size_t i = 0; i < n; i++)
        if (pend[i] == key)
            return 1;
    return 0;
}

int cairn__memkeys_has_content(const cairn__memkeys *k, uint64_t key)
{
    return pending(k->pend_content, k->n_pend, key) || has(k->content, k->cap, key);
}

int cairn__memkeys_has_id(const cairn__memkeys *k, uint64_t key)
{
    return pending(k->pend_id, k->n_pend, key) || has(k->ids, k->cap, key);
}

void cairn__memkeys_clear(cairn__memkeys *k)
{
    cairn__memkeys_core *c;
    if (k->fixed)
        return;
    c = core(k);
    k->n_pend = 0;
    c->n_ns = 0;
    if (c->n == 0)
        return;
    c->n = 0;
    if (k->cap > 8192) { /* given back: clearing would cost what they grew to */
        free(k->content);
        free(k->ids);
        k->content = k->ids = NULL;
        k->cap = 0;
        return;
    }
    memset(k->content, 0, k->cap * sizeof *k->content);
    memset(k->ids, 0, k->cap * sizeof *k->ids);
}

void cairn__memkeys_free(cairn__memkeys *k)
{
    if (k->fixed) { /* the file's mapping is its owner's */
        memset(k, 0, sizeof *k);
        return;
    }
    free(k->content);
    free(k->ids);
    memset(k, 0, sizeof *k);
}

/* No backslash and no byte below 0x20 in p[0..n): eight bytes at a time. */
static int plain(const char *p, size_t n)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w, bs;
        memcpy(&w, p + i, 8);
        bs = w ^ (0x5c * ones);
        /* a byte < 0x20 (its high bit clear and below after - 0x20), or a
         * byte equal to 0x5c (zero after the xor) */
        if ((((w - 0x20 * ones) & ~w) | ((bs - ones) & ~bs)) & highs)
            return 0;
    }
    for (; i < n; i++)
        if (p[i] == '\\' || (unsigned char)p[i] < 0x20)
            return 0;
    return 1;
}

static int hex4(const char *p, const char *end, uint32_t *out)
{
    uint32_t v = 0;
    if (end - p < 4)
        return 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return 0;
    }
    *out = v;
    return 1;
}

static size_t utf8_put(uint32_t cp, uint8_t *o)
{
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xC0 | (cp >> 6));
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | (cp >> 12));
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | (cp >> 18));
    o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* The key of a content whose JSON string (c up to end, after its opening
 * quote) holds escapes: hashed as it unescapes, the runs between escapes
 * as they are, so the key is the one of the decoded content. 1 with the
 * key and *q at the closing quote; 0 for a control byte, an escape JSON
 * has not, a lone surrogate, \u0000 (a decoder's string would end
 * there), an empty content or no closing quote. */
static int escaped_content_key(uint64_t ns_key, const char *c, const char *end, const char **q,
                               uint64_t *key)
{
    XXH3_state_t st;
    const char *p = c, *run = c;
    size_t total = 0;

    if (XXH3_64bits_reset_withSeed(&st, ns_key) != XXH_OK)
        return 0;
    while (p < end && *p != '"') {
        uint8_t out[4];
        size_t n = 1;
        uint32_t cp, lo;
        if ((unsigned char)*p < 0x20)
            return 0;
        if (*p != '\\') {
            p++;
            continue;
        }
        if (p > run) {
            (void)XXH3_64bits_update(&st, run, (size_t)(p - run));
            total += (size_t)(p - run);
        }
        if (end - p < 2)
            return 0;
        switch (p[1]) {
        case '"': out[0] = '"'; break;
        case '\\': out[0] = '\\'; break;
        case '/': out[0] = '/'; break;
        case 'b': out[0] = '\b'; break;
        case 'f': out[0] = '\f'; break;
        case 'n': out[0] = '\n'; break;
        case 'r': out[0] = '\r'; break;
        case 't': out[0] = '\t'; break;
        case 'u':
            if (!hex4(p + 2, end, &cp) || cp == 0 || (cp >= 0xDC00 && cp <= 0xDFFF))
                return 0;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (end - p < 12 || p[6] != '\\' || p[7] != 'u' || !hex4(p + 8, end, &lo) ||
                    lo < 0xDC00 || lo > 0xDFFF)
                    return 0;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            n = utf8_put(cp, out);
            p += 4;
            break;
        default:
            return 0;
        }
        p += 2;
        run = p;
        (void)XXH3_64bits_update(&st, out, n);
        total += n;
    }
    if (p >= end)
        return 0;
    if (p > run) {
        (void)XXH3_64bits_update(&st, run, (size_t)(p - run));
        total += (size_t)(p - run);
    }
    if (total == 0)
        return 0;
    *q = p;
    *key = nonzero(XXH3_64bits_digest(&st));
    return 1;
}

static int id_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == '.';
}

int cairn__memkeys_of_record(const char *ns, size_t ns_len, const char *json, size_t len,
                             uint64_t *ns_key, uint64_t *content_key, uint64_t *id_key)
{
    static const char head[] = "{\"id\":\"", mid[] = "\",\"content\":\"";
    const char *p = json, *end = json + len, *id, *c, *q;

    if (len < sizeof head - 1 || memcmp(p, head, sizeof head - 1) != 0)
        return 0;
    p += sizeof head - 1;
    id = p;
    while (p < end && id_char(*p))
        p++;
    if (p == id || p - id > MEM_ID_MAX || (size_t)(end - p) < sizeof mid - 1 ||
        memcmp(p, mid, sizeof mid - 1) != 0)
        return 0;
    *id_key = cairn__memkeys_id_key(id, (size_t)(p - id));
    c = p + sizeof mid - 1;
    *ns_key = cairn__memkeys_ns_key(ns, ns_len);
    /* The content's end: the first quote, when no escape or control byte
     * comes before it (the writer escapes quotes, backslashes and control
     * bytes); else the content is read escape by escape. */
    if ((q = memchr(c, '"', (size_t)(end - c))) != NULL && q != c && plain(c, (size_t)(q - c)))
        *content_key = cairn__memkeys_content_key(*ns_key, c, (size_t)(q - c));
    else if (!escaped_content_key(*ns_key, c, end, &q, content_key))
        return 0;
    /* A commit's mark ("batch":[i,n]) is a field of its own after it: such
     * a record counts only if its whole commit is in the log. A key is
     * read unescaped and up to a NUL: with either after the content, the
     * name cannot be told from its bytes. */
    if (!plain(q + 1, (size_t)(end - q - 1)))
        return 0;
    for (const char *b = q + 1; (b = memchr(b, 'b', (size_t)(end - b))) != NULL; b++)
        if (b[-1] == '"' && end - b >= 5 && memcmp(b, "batch", 5) == 0)
            return 0;
    return 1;
}
