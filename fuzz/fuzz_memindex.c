/*
 * fuzz_memindex.c - the memory index file reader (engine/memory/memindex.c,
 * engine/text/ramindex_image.c's image reader) over arbitrary bytes: the
 * checks cairn_mem_open makes (cairn__mx_parse), then what a reader does
 * after (read rows, map each namespace's text index, search it), then the
 * full verification. Input: the file's bytes (the golden file is a seed).
 *
 * Invariants: no crash or out-of-bounds read whatever the bytes; a file the
 * full check accepts has every row and every namespace readable.
 */
#include "fuzz.h"

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "memindex.h"
#include "memrec.h"
#include "ramindex.h"
#include "vecset.h"

static const char *const queries[] = {"deploy", "friday deploy reviewers", "the canary", "x"};

/* What a reader does with a namespace's vectors: search, read rows. */
static void fuzz_vecset(cairn__vecset *v)
{
    size_t d = cairn__vecset_dim(v), n = 0;
    float *q = calloc(d * 3, sizeof *q);
    vec_query vq;
    vec_hit hits[4];
    if (q == NULL)
        return;
    q[0] = 1;
    cairn__vec_query_make(&vq, q, d, q + d, (int8_t *)(q + 2 * d));
    if (cairn__vecset_search(v, cairn__vkernel_best(), &vq, 4, 0, hits, &n) == CAIRN_OK) {
        FUZZ_CHECK(n <= 4);
        for (size_t i = 0; i < n; i++) {
            const float *row = NULL;
            if (cairn__vecset_get(v, hits[i].doc, &row) == CAIRN_OK)
                FUZZ_CHECK(row != NULL);
        }
    }
    (void)cairn__vecset_check_all(v);
    free(q);
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static void wr64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static unsigned bits_of(uint64_t v)
{
    unsigned b = 0;
    while (v >> b)
        b++;
    return b;
}

/* A full term record's postings sum (rec, of an image of tlen bytes at t
 * whose postings start at post): remade from the postings' bytes as
 * format-spec/memindex.md ("Postings") reads them, the XXH3-64 of their
 * (u32 document, u32 tf) pairs, wherever they lie within the image, so
 * that damage under a good sum reaches the reader's checks of the blocks
 * (document range and order, tf against max_tf). */
static void repair_postings(const uint8_t *t, uint64_t tlen, uint64_t post, uint64_t ndocs,
                            uint8_t *rec)
{
    uint64_t at = post + rd64(rec + 8);
    uint32_t n = rd32(rec + 16), max_tf = rd32(rec + 24), nb, prev = UINT32_MAX;
    unsigned db = ndocs > 1 ? bits_of(ndocs - 1) : 0, tb = max_tf > 1 ? bits_of(max_tf - 1) : 0;
    XXH3_state_t st;
    if (n == 0 || n > (1u << 20) || at < post || at >= tlen)
        return;
    nb = (n + 127) / 128;
    if (nb > 1 && (tlen - at) / 8 < nb)
        return;
    XXH3_64bits_reset(&st);
    for (uint32_t b = 0; b < nb; b++) {
        uint32_t k = b + 1 < nb ? 128 : n - b * 128;
        uint64_t p = at, gmask, tmask;
        unsigned gw = db, tw = tb;
        if (n > 1) {
            p = at + (nb > 1 ? rd32(t + at + (uint64_t)b * 8 + 4) : 0);
            if (b > 0)
                prev = rd32(t + at + (uint64_t)(b - 1) * 8);
            if (p < at || p >= tlen || tlen - p < 2)
                return;
            gw = t[p];
            tw = t[p + 1];
            p += 2;
        }
        if (gw > 32 || tw > 32 || gw + tw > 56 || tlen - p < ((uint64_t)k * (gw + tw) + 7) / 8 + 8)
            return;
        gmask = ((uint64_t)1 << gw) - 1;
        tmask = ((uint64_t)1 << tw) - 1;
        for (uint64_t j = 0, bit = 0; j < k; j++, bit += gw + tw) {
            uint64_t v;
            uint32_t pair[2];
            memcpy(&v, t + p + bit / 8, 8);
            v >>= bit % 8;
            prev += 1 + (uint32_t)(v & gmask);
            pair[0] = prev;
            pair[1] = (uint32_t)((v >> gw) & tmask) + 1;
            XXH3_64bits_update(&st, pair, sizeof pair);
        }
    }
    wr64(rec + 32, XXH3_64bits_digest(&st));
}

/* A text image's checks (tlen bytes at t, its head thead of them): each
 * full term's postings sum, each single record's check, the header's sum,
 * and the head's sum in the namespace entry ns. An image of version 1 to
 * 3 gets version 4 and no single record (its old header sum, where the
 * count now is, zeroed). */
static void repair_image(uint8_t *t, uint64_t tlen, uint64_t thead, uint8_t *ns)
{
    uint64_t nterms = rd64(t + 16), nsingle, ndocs = rd64(t + 8), tcap = rd64(t + 24),
             alen = rd64(t + 32);
    if (t[4] >= 1 && t[4] <= 3) {
        t[4] = 4;
        wr64(t + 64, 0);
    }
    nsingle = rd64(t + 64);
    /* the postings' offset, from the counts as the reader lays them out */
    if (nsingle <= nterms && nterms - nsingle <= tlen / 40 && nsingle <= tlen / 16 &&
        80 + (nterms - nsingle) * 40 <= tlen && tcap <= tlen / 4 && ndocs <= tlen / 8 &&
        alen <= tlen) {
        uint64_t post = 80 + (nterms - nsingle) * 40 + nsingle * 16 + (tcap * 4 + 7) / 8 * 8 +
                        ndocs * 8 + (ndocs * 4 + 7) / 8 * 8 + (ndocs + 63) / 64 * 8 +
                        (alen + 7) / 8 * 8;
        for (uint64_t i = 0; post < tlen && i < nterms - nsingle; i++)
            repair_postings(t, tlen, post, ndocs, t + 80 + i * 40);
    }
    if (nsingle <= nterms && nterms - nsingle <= tlen / 40 && nsingle <= tlen / 16 &&
        80 + (nterms - nsingle) * 40 + nsingle * 16 <= tlen)
        for (uint64_t i = 0; i < nsingle; i++) {
            uint8_t *r = t + 80 + (nterms - nsingle) * 40 + i * 16;
            uint32_t check = (uint32_t)XXH3_64bits(r, 12);
            memcpy(r + 12, &check, 4);
        }
    wr64(t + 72, XXH3_64bits(t, 72));
    if (thead <= tlen)
        wr64(ns + 48, XXH3_64bits(t, (size_t)thead));
}

/* Recompute the sums a reader checks before it looks further, where the
 * bytes say where they are (format-spec/memindex.md, version 10: the
 * common file header, then the memory index header, MX_HEAD_LEN bytes; a
 * row's part of the heap; each text image's checks), and make the
 * versions this build's (the file's 10, each text image's 4), so that
 * inputs of older versions (most of the corpus) reach today's readers;
 * their rows, of another layout, mostly fail their bounds, which
 * exercises those checks. */
static void repair(uint8_t *b, size_t len)
{
    uint64_t n_ns, tcap, nrows, ro, heap;
    if (len < MX_HEAD_LEN)
        return;
    b[8] = 10;
    b[9] = 0;
    n_ns = rd64(b + 64) & 0xffffffffu;
    nrows = rd64(b + 40);
    tcap = rd64(b + 96);
    if (n_ns > len / 64 || tcap > len / 8 || nrows > len / 80)
        goto header;
    ro = MX_HEAD_LEN + n_ns * 64 + 2 * tcap * 8;
    if (ro > len)
        goto header;
    for (uint64_t i = 0; i < n_ns; i++) {
        uint8_t *ns = b + MX_HEAD_LEN + i * 64;
        uint64_t toff = rd64(ns + 24), tlen = rd64(ns + 32);
        if (toff < len && tlen >= 80 && tlen <= len - toff)
            repair_image(b + toff, tlen, rd64(ns + 40), ns);
    }
    wr64(b + MX_NS_SUM, XXH3_64bits(b + MX_HEAD_LEN, (size_t)(n_ns * 64)));
    heap = ro + nrows * 80;
    for (uint64_t i = 0; heap <= len && i < nrows; i++) {
        uint8_t *r = b + ro + i * 80;
        uint64_t off = rd64(r + 48), total;
        uint32_t strs;
        XXH3_state_t st;
        memcpy(&strs, r + 60, 4); /* version 10: the row's part of the heap */
        total = strs;
        if (off > len - heap || total > len - heap - off)
            continue;
        XXH3_64bits_reset(&st);
        XXH3_64bits_update(&st, r, 72);
        XXH3_64bits_update(&st, b + heap + off, (size_t)total);
        wr64(r + 72, XXH3_64bits_digest(&st));
    }
header:
    wr64(b + 32, len); /* file_len */
    wr64(b + 48, XXH3_64bits(b + 64, MX_HEAD_LEN - 64));
    wr64(b + 56, XXH3_64bits(b, 56));
}

static void exercise(uint8_t *b, size_t len)
{
    memindex mx;
    cairn__err e;
    uint64_t off = 0;
    int all_ok;

    memset(&mx, 0, sizeof mx);
    mx.map = b;
    mx.len = len;
    strcpy(mx.name, "fuzz.cmx");
    if (cairn__mx_parse(&mx, &e) != CAIRN_OK)
        return;
    all_ok = cairn__mx_check_all(&mx, &off, &e) == CAIRN_OK;
    for (uint64_t i = 0; i < mx.nrows && i < 64; i++) {
        mx_row r;
        int rc = cairn__mx_row(&mx, (size_t)i, &r);
        FUZZ_CHECK(!all_ok || rc == CAIRN_OK);
        if (rc == CAIRN_OK)
            FUZZ_CHECK(r.content == NULL && r.content_len <= MEM_CONTENT_MAX &&
                       strlen(r.id) <= CAIRN_MEM_ID_MAX);
        (void)cairn__mx_row_seq(&mx, (size_t)i);
    }
    for (uint64_t i = 0; i < mx.n_ns && i < 16; i++) {
        const char *name;
        uint64_t live, docs[8];
        double sc[8];
        size_t n;
        cairn__ramidx *x = NULL;
        cairn__vecset *v = NULL;
        int rc = cairn__mx_ns(&mx, (size_t)i, "english", &name, &live, &x, &v);
        FUZZ_CHECK(!all_ok || rc == CAIRN_OK);
        if (rc != CAIRN_OK)
            continue;
        if (v != NULL) {
            fuzz_vecset(v);
            cairn__vecset_free(v);
        }
        for (size_t q = 0; q < sizeof queries / sizeof queries[0]; q++) {
            rc = cairn__ramidx_search(x, (const uint8_t *)queries[q], strlen(queries[q]), 8, docs,
                                      sc, &n, NULL);
            FUZZ_CHECK(!all_ok || rc == CAIRN_OK);
        }
        (void)cairn__ramidx_check(x);
        cairn__ramidx_free(x);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* 8-byte aligned copies, as a mapping would be */
    uint64_t *copy = malloc(size / 8 * 8 + 8);
    if (copy == NULL)
        return 0;
    memcpy(copy, data, size);
    exercise((uint8_t *)copy, size);
    memcpy(copy, data, size);
    repair((uint8_t *)copy, size);
    exercise((uint8_t *)copy, size);
    free(copy);
    return 0;
}
