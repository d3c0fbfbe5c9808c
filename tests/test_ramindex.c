/*
 * test_ramindex.c - the in-RAM inverted index (engine/text/ramindex*.c).
 *
 * The main proof is differential: over a random corpus with a Zipfian
 * vocabulary, with documents removed along the way, the index's top k
 * (MaxScore with pruning) must be the top k of a brute-force BM25 written
 * here from the formula (every live document scored, N, df and avgdl
 * counted from the texts): same scores to 1e-6, same documents in the same
 * order, where two documents may only trade places if their brute-force
 * scores are equal to 1e-9. Then: pruning really skips documents, removal
 * and ordering errors, empty and unknown queries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "ramindex.h"
#include "tokenize.h"
#include "testutil.h"

#define VOCAB 400
#define NDOCS 3000
#define MAXTERMS 64

static uint64_t rng_state;

static uint64_t rnd(void)
{
    return tu_splitmix64(&rng_state);
}

/* Zipf-ish: word i with weight 1/(i+1), by inverting the harmonic CDF. */
static int zipf(void)
{
    static double cdf[VOCAB];
    double u;
    int lo = 0, hi = VOCAB - 1;
    if (cdf[VOCAB - 1] == 0) {
        double s = 0;
        for (int i = 0; i < VOCAB; i++)
            cdf[i] = (s += 1.0 / (i + 1));
        for (int i = 0; i < VOCAB; i++)
            cdf[i] /= s;
    }
    u = (double)(rnd() >> 11) / 9007199254740992.0;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void word(char *out, int i)
{
    /* letters only, so that the tokenizer keeps each word whole */
    out[0] = (char)('a' + i % 26);
    out[1] = (char)('a' + (i / 26) % 26);
    out[2] = 'q';
    out[3] = (char)('a' + i % 7);
    out[4] = 0;
}

/* ---- the brute-force reference ------------------------------------------ */

typedef struct rdoc {
    char text[MAXTERMS * 6 + 512];
    char terms[MAXTERMS][TOK_MAX_BYTES + 1];
    int nterms;
    int live;
} rdoc;

static rdoc *docs;

static int collect_terms(void *user, const char *term, size_t len, uint32_t pos)
{
    rdoc *d = user;
    (void)pos;
    assert_true(d->nterms < MAXTERMS);
    memcpy(d->terms[d->nterms], term, len);
    d->terms[d->nterms][len] = 0;
    d->nterms++;
    return 0;
}

typedef struct ref_hit {
    uint64_t doc;
    double score;
} ref_hit;

static int ref_cmp(const void *a, const void *b)
{
    const ref_hit *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->doc < y->doc ? -1 : x->doc > y->doc;
}

/* Every live document's score for the query's distinct terms. */
static size_t brute_force(const rdoc *q, ref_hit *out)
{
    double n = 0, sum = 0, avgdl;
    size_t nout = 0;
    char uniq[MAXTERMS][TOK_MAX_BYTES + 1];
    int nu = 0;
    double idf[MAXTERMS];

    for (int i = 0; i < NDOCS; i++)
        if (docs[i].live) {
            n++;
            sum += docs[i].nterms;
        }
    if (n == 0)
        return 0;
    avgdl = sum / n;
    for (int t = 0; t < q->nterms; t++) {
        int dup = 0;
        for (int u = 0; u < nu; u++)
            dup |= strcmp(uniq[u], q->terms[t]) == 0;
        if (!dup)
            strcpy(uniq[nu++], q->terms[t]);
    }
    for (int u = 0; u < nu; u++) {
        double df = 0;
        for (int i = 0; i < NDOCS; i++) {
            int has = 0;
            if (!docs[i].live)
                continue;
            for (int j = 0; j < docs[i].nterms && !has; j++)
                has = strcmp(docs[i].terms[j], uniq[u]) == 0;
            df += has;
        }
        idf[u] = log(1.0 + (n - df + 0.5) / (df + 0.5));
    }
    for (int i = 0; i < NDOCS; i++) {
        double s = 0;
        int any = 0;
        if (!docs[i].live)
            continue;
        for (int u = 0; u < nu; u++) {
            double tf = 0, dl = docs[i].nterms;
            for (int j = 0; j < docs[i].nterms; j++)
                tf += strcmp(docs[i].terms[j], uniq[u]) == 0;
            if (tf > 0) {
                any = 1;
                s += idf[u] * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl));
            }
        }
        if (any) {
            out[nout].doc = 1000 + 7 * (uint64_t)i; /* the caller's numbers */
            out[nout].score = s;
            nout++;
        }
    }
    qsort(out, nout, sizeof *out, ref_cmp);
    return nout;
}

static double ref_score_of(const ref_hit *all, size_t n, uint64_t doc)
{
    for (size_t i = 0; i < n; i++)
        if (all[i].doc == doc)
            return all[i].score;
    fail_msg("document %llu is not a match at all", (unsigned long long)doc);
    return 0;
}

static void compare_many(cairn__ramidx *const *xs, size_t nx, cairn__tokenizer *tok,
                         const char *qtext, size_t k)
{
    rdoc q;
    static ref_hit ref[NDOCS];
    uint64_t got_doc[64];
    double got_score[64];
    size_t nref, ngot = 0;

    memset(&q, 0, sizeof q);
    assert_int_equal(cairn__tok_run(tok, (const uint8_t *)qtext, strlen(qtext), collect_terms, &q),
                     CAIRN_OK);
    nref = brute_force(&q, ref);
    assert_int_equal(cairn__ramidx_search_many(xs, nx, (const uint8_t *)qtext, strlen(qtext), k,
                                               got_doc, got_score, &ngot, NULL),
                     CAIRN_OK);
    assert_int_equal(ngot, nref < k ? nref : k);
    for (size_t i = 0; i < ngot; i++) {
        if (fabs(got_score[i] - ref[i].score) > 1e-6)
            fail_msg("query '%s' k %zu rank %zu: score %.9f, brute force %.9f", qtext, k, i,
                     got_score[i], ref[i].score);
        if (got_doc[i] != ref[i].doc &&
            fabs(ref_score_of(ref, nref, got_doc[i]) - ref[i].score) > 1e-9)
            fail_msg("query '%s' k %zu rank %zu: doc %llu, brute force %llu", qtext, k, i,
                     (unsigned long long)got_doc[i], (unsigned long long)ref[i].doc);
        for (size_t j = 0; j < i; j++)
            assert_true(got_doc[j] != got_doc[i]);
    }
}

static void compare(cairn__ramidx *x, cairn__tokenizer *tok, const char *qtext, size_t k)
{
    compare_many(&x, 1, tok, qtext, k);
}

static void random_query(char *qtext)
{
    char *p = qtext;
    int n = 1 + (int)(rnd() % 4);
    for (int j = 0; j < n; j++) {
        /* common and rare words, sometimes a word no document has */
        int w = rnd() % 10 == 0 ? VOCAB + (int)(rnd() % 50) : zipf();
        word(p, w);
        if (w >= VOCAB)
            p[2] = 'z';
        p += 4;
        *p++ = ' ';
    }
    *p = 0;
}

static void make_doc(cairn__tokenizer *tok, int i)
{
    int n = 3 + (int)(rnd() % 40);
    char *p = docs[i].text;
    for (int j = 0; j < n; j++) {
        word(p, zipf());
        p += 4;
        *p++ = ' ';
    }
    *p = 0;
    assert_int_equal(cairn__tok_run(tok, (const uint8_t *)docs[i].text, strlen(docs[i].text),
                                    collect_terms, &docs[i]),
                     CAIRN_OK);
    docs[i].live = 1;
}

typedef struct image {
    uint8_t *b;
    size_t len, cap;
} image;

static int put_bytes(void *user, const void *bytes, size_t len)
{
    image *im = user;
    if (bytes == NULL)
        return CAIRN_OK; /* the head/postings marker */
    if (im->len + len > im->cap) {
        im->cap = (im->len + len) * 2;
        im->b = realloc(im->b, im->cap);
        assert_non_null(im->b);
    }
    memcpy(im->b + im->len, bytes, len);
    im->len += len;
    return CAIRN_OK;
}

static void remove_doc(cairn__ramidx *x, int i)
{
    assert_int_equal(cairn__ramidx_remove(x, 1000 + 7 * (uint64_t)i, (const uint8_t *)docs[i].text,
                                          strlen(docs[i].text)),
                     CAIRN_OK);
    docs[i].live = 0;
}

/* Two thirds of the corpus frozen into a file image and mapped, the rest
 * in RAM, removals in both before and after: searched as one, and merged
 * into one, the ranking is still the brute force's. */
static void mapped_and_ram_indexes_rank_as_one(void **state)
{
    cairn__ramidx *a = NULL, *f = NULL, *b = NULL, *merged = NULL, *xs[2];
    cairn__tokenizer *tok = NULL;
    image im = {NULL, 0, 0};
    uint8_t *aligned;
    size_t used = 0;
    static const size_t ks[] = {1, 5, 10, 50};
    (void)state;

    rng_state = 7;
    docs = calloc(NDOCS, sizeof *docs);
    assert_non_null(docs);
    assert_int_equal(cairn__tok_new(&tok, NULL, "english"), CAIRN_OK);
    assert_int_equal(cairn__ramidx_new(&a, NULL, "english"), CAIRN_OK);
    assert_int_equal(cairn__ramidx_new(&b, NULL, "english"), CAIRN_OK);
    for (int i = 0; i < NDOCS; i++) {
        make_doc(tok, i);
        assert_int_equal(cairn__ramidx_add(i < 2 * NDOCS / 3 ? a : b, 1000 + 7 * (uint64_t)i,
                                           (const uint8_t *)docs[i].text, strlen(docs[i].text)),
                         CAIRN_OK);
    }
    for (int i = 0; i < 2 * NDOCS / 3; i++)
        if (rnd() % 8 == 0)
            remove_doc(a, i);
    /* freeze: merge drops the removed documents, then write and map */
    assert_int_equal(cairn__ramidx_merge(&merged, NULL, "english", &a, 1), CAIRN_OK);
    assert_int_equal(cairn__ramidx_count(merged), cairn__ramidx_count(a));
    assert_int_equal(cairn__ramidx_write(merged, put_bytes, &im), CAIRN_OK);
    cairn__ramidx_free(merged);
    cairn__ramidx_free(a);
    aligned = aligned_alloc(8, (im.len + 7) / 8 * 8);
    assert_non_null(aligned);
    memcpy(aligned, im.b, im.len);
    assert_int_equal(cairn__ramidx_map(&f, NULL, "english", aligned, im.len, &used), CAIRN_OK);
    assert_int_equal(used, im.len);
    assert_int_equal(cairn__ramidx_add(f, 1u << 30, (const uint8_t *)"x", 1), CAIRN_EINVAL);
    for (int i = 0; i < NDOCS; i++)
        if (docs[i].live && rnd() % 8 == 0)
            remove_doc(i < 2 * NDOCS / 3 ? f : b, i);
    xs[0] = f;
    xs[1] = b;
    for (int qi = 0; qi < 150; qi++) {
        char qtext[64];
        random_query(qtext);
        compare_many(xs, 2, tok, qtext, ks[qi % 4]);
    }
    /* out of document order: refused, since ties would break wrongly */
    xs[0] = b;
    xs[1] = f;
    {
        uint64_t d[1];
        double sc[1];
        size_t n;
        assert_int_equal(cairn__ramidx_search_many(xs, 2, (const uint8_t *)"x", 1, 1, d, sc, &n, NULL),
                         CAIRN_EINVAL);
    }
    xs[0] = f;
    xs[1] = b;
    assert_int_equal(cairn__ramidx_merge(&merged, NULL, "english", xs, 2), CAIRN_OK);
    for (int qi = 0; qi < 100; qi++) {
        char qtext[64];
        random_query(qtext);
        compare(merged, tok, qtext, ks[qi % 4]);
    }
    /* Written as it goes, the merge is the same bytes as the merged index
     * written: of both (mapped and in RAM), and of each alone. */
    for (int c = 0; c < 3; c++) {
        image w1 = {NULL, 0, 0}, w2 = {NULL, 0, 0};
        cairn__ramidx *one = NULL, *const *from = c == 0 ? xs : c == 1 ? &xs[0] : &xs[1];
        size_t nfrom = c == 0 ? 2 : 1;
        if (c == 0) {
            assert_int_equal(cairn__ramidx_write(merged, put_bytes, &w1), CAIRN_OK);
        } else {
            assert_int_equal(cairn__ramidx_merge(&one, NULL, "english", from, 1), CAIRN_OK);
            assert_int_equal(cairn__ramidx_write(one, put_bytes, &w1), CAIRN_OK);
            cairn__ramidx_free(one);
        }
        assert_int_equal(
            cairn__ramidx_merge_write(NULL, "english", from, nfrom, put_bytes, &w2, NULL),
            CAIRN_OK);
        assert_true(w1.len > 72);
        assert_int_equal(w1.len, w2.len);
        assert_memory_equal(w1.b, w2.b, w1.len);
        free(w1.b);
        free(w2.b);
    }
    {
        /* out of document order: refused, as the merge refuses it */
        image w3 = {NULL, 0, 0};
        cairn__ramidx *rev[2] = {b, f};
        assert_int_equal(cairn__ramidx_merge_write(NULL, "english", rev, 2, put_bytes, &w3, NULL),
                         CAIRN_EINVAL);
        free(w3.b);
    }
    cairn__ramidx_free(merged);
    cairn__ramidx_free(f);
    cairn__ramidx_free(b);
    cairn__tok_free(tok);
    free(aligned);
    free(im.b);
    free(docs);
}

/* A damaged image: refused at map time when a bound breaks, or when a
 * query first reads the damaged postings. */
static void damaged_images_are_refused(void **state)
{
    cairn__ramidx *x = NULL, *f = NULL;
    image im = {NULL, 0, 0};
    uint64_t *copy, d[4];
    double sc[4];
    size_t n, words;
    (void)state;

    assert_int_equal(cairn__ramidx_new(&x, NULL, "none"), CAIRN_OK);
    assert_int_equal(cairn__ramidx_add(x, 1, (const uint8_t *)"alpha beta", 10), CAIRN_OK);
    assert_int_equal(cairn__ramidx_add(x, 2, (const uint8_t *)"beta beta gamma", 15), CAIRN_OK);
    assert_int_equal(cairn__ramidx_write(x, put_bytes, &im), CAIRN_OK);
    words = (im.len + 7) / 8;
    copy = calloc(words, 8);
    assert_non_null(copy);
    /* every truncation is refused */
    for (size_t cut = 0; cut < im.len; cut += 8) {
        memcpy(copy, im.b, cut);
        assert_int_equal(cairn__ramidx_map(&f, NULL, "none", copy, cut, NULL), CAIRN_ECORRUPT);
        assert_null(f);
    }
    /* a posting flipped: the map succeeds (postings are checked lazily),
     * the first query that reads it fails */
    memcpy(copy, im.b, im.len);
    {
        /* the postings end the image (their length at byte 40): beta's
         * block of two (its header: 0 bits a gap, 1 bit a tf - 1), its tfs
         * 1 and 2 in the byte 0x02; alpha and gamma, of one posting each,
         * have single records and no postings. beta's tf 2 made 1 */
        uint64_t post_len, nsingle;
        memcpy(&post_len, im.b + 40, 8);
        memcpy(&nsingle, im.b + 64, 8);
        assert_int_equal(nsingle, 2);
        assert_int_equal(post_len, 16); /* 3 bytes, 8 spare, padding */
        assert_int_equal(im.b[im.len - post_len], 0);
        assert_int_equal(im.b[im.len - post_len + 1], 1);
        assert_int_equal(im.b[im.len - post_len + 2], 0x02);
        ((uint8_t *)copy)[im.len - post_len + 2] ^= 0x02;
    }
    assert_int_equal(cairn__ramidx_map(&f, NULL, "none", copy, im.len, NULL), CAIRN_OK);
    assert_int_equal(cairn__ramidx_search(f, (const uint8_t *)"alpha", 5, 4, d, sc, &n, NULL),
                     CAIRN_OK); /* alpha's posting is intact */
    assert_int_equal(n, 1);
    assert_int_equal(cairn__ramidx_search(f, (const uint8_t *)"beta", 4, 4, d, sc, &n, NULL),
                     CAIRN_ECHECKSUM);
    cairn__ramidx_free(f);
    /* the magic */
    memcpy(copy, im.b, im.len);
    ((uint8_t *)copy)[0] ^= 0xff;
    assert_int_equal(cairn__ramidx_map(&f, NULL, "none", copy, im.len, NULL), CAIRN_ECORRUPT);
    cairn__ramidx_free(x);
    free(copy);
    free(im.b);
}

/* Postings are packed in as many bits as the image's document count and
 * each term's largest tf need: at every count around a power of two, and
 * tfs from 1 to 70,000, the mapped image ranks exactly as the index it
 * was written from (the same documents, the same scores), passes its
 * check, and is as long as its header says. */
static void packed_postings_read_back_at_every_width(void **state)
{
    static const int counts[] = {1, 2, 3, 4, 5, 127, 128, 129, 1000};
    static const char *const queries[] = {"rare", "big", "w0 big", "w3 w5 rare", "w1", "w6 w2"};
    (void)state;
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        cairn__ramidx *x = NULL, *f = NULL;
        image im = {NULL, 0, 0};
        uint64_t *aligned, post_len;
        size_t used = 0;
        assert_int_equal(cairn__ramidx_new(&x, NULL, "none"), CAIRN_OK);
        for (int i = 0; i < counts[c]; i++) {
            static char text[8 * 70000 + 64];
            int len = snprintf(text, sizeof text, "w%d w%d", i % 7, (i * 3) % 7);
            /* "big" 1..1000 times in one document of ten; in the largest
             * image 70,000 times in its first (tf - 1 in 17 bits) */
            int reps = counts[c] == 1000 && i == 0 ? 70000 : (i * 37) % 1000 + 1;
            for (int r = 0; i % 10 == 0 && r < reps; r++)
                len += snprintf(text + len, sizeof text - (size_t)len, " big");
            if (i == counts[c] - 1)
                len += snprintf(text + len, sizeof text - (size_t)len, " rare");
            assert_int_equal(cairn__ramidx_add(x, 5 + 2 * (uint64_t)i, (const uint8_t *)text,
                                               (size_t)len),
                             CAIRN_OK);
        }
        assert_int_equal(cairn__ramidx_write(x, put_bytes, &im), CAIRN_OK);
        aligned = aligned_alloc(8, (im.len + 7) / 8 * 8);
        assert_non_null(aligned);
        memcpy(aligned, im.b, im.len);
        assert_int_equal(cairn__ramidx_map(&f, NULL, "none", aligned, im.len, &used), CAIRN_OK);
        assert_int_equal(used, im.len); /* the postings end the image */
        assert_int_equal(cairn__ramidx_check(f), CAIRN_OK);
        memcpy(&post_len, im.b + 40, 8);
        assert_true(post_len >= 8 && post_len % 8 == 0 && post_len <= im.len);
        for (size_t q = 0; q < sizeof queries / sizeof queries[0]; q++) {
            uint64_t d1[16], d2[16];
            double s1[16], s2[16];
            size_t n1 = 0, n2 = 0;
            size_t ql = strlen(queries[q]);
            assert_int_equal(cairn__ramidx_search(x, (const uint8_t *)queries[q], ql, 16, d1, s1, &n1,
                                                  NULL),
                             CAIRN_OK);
            assert_int_equal(cairn__ramidx_search(f, (const uint8_t *)queries[q], ql, 16, d2, s2, &n2,
                                                  NULL),
                             CAIRN_OK);
            assert_int_equal(n1, n2);
            assert_true(q >= 2 || n1 > 0); /* rare and big are always there */
            for (size_t i = 0; i < n1; i++) {
                assert_int_equal(d1[i], d2[i]);
                assert_memory_equal(&s1[i], &s2[i], sizeof s1[i]);
            }
        }
        cairn__ramidx_free(f);
        cairn__ramidx_free(x);
        free(aligned);
        free(im.b);
    }
}

/* ---- postings in blocks ------------------------------------------------- */

/* x written, the image mapped (an aligned copy: *mem, freed by the caller). */
static cairn__ramidx *map_image(const cairn__ramidx *x, image *im, uint64_t **mem)
{
    cairn__ramidx *f = NULL;
    size_t used = 0;
    im->len = 0;
    assert_int_equal(cairn__ramidx_write(x, put_bytes, im), CAIRN_OK);
    *mem = calloc((im->len + 7) / 8, 8);
    assert_non_null(*mem);
    memcpy(*mem, im->b, im->len);
    assert_int_equal(cairn__ramidx_map(&f, NULL, "none", *mem, im->len, &used), CAIRN_OK);
    assert_int_equal(used, im->len);
    return f;
}

/* The same answer from a and b (documents and scores, bit for bit). */
static void same_answer(cairn__ramidx *a, cairn__ramidx *b, const char *q, size_t k)
{
    uint64_t d1[64], d2[64];
    double s1[64], s2[64];
    size_t n1 = 0, n2 = 0;
    assert_true(k <= 64);
    assert_int_equal(cairn__ramidx_search(a, (const uint8_t *)q, strlen(q), k, d1, s1, &n1, NULL),
                     CAIRN_OK);
    assert_int_equal(cairn__ramidx_search(b, (const uint8_t *)q, strlen(q), k, d2, s2, &n2, NULL),
                     CAIRN_OK);
    if (n1 != n2)
        fail_msg("query '%s' k %zu: %zu hits, then %zu", q, k, n1, n2);
    for (size_t i = 0; i < n1; i++)
        if (d1[i] != d2[i] || memcmp(&s1[i], &s2[i], sizeof s1[i]) != 0)
            fail_msg("query '%s' k %zu rank %zu: %llu %.9f, then %llu %.9f", q, k, i,
                     (unsigned long long)d1[i], s1[i], (unsigned long long)d2[i], s2[i]);
}

#define EDGE_DOCS 600

/* Terms of 1, 2, 127, 128, 129, 256 and 257 postings (spread over the
 * documents, the first and the last among them), one in every document
 * (gaps of 0 bits), one with a tf of 70,000: mapped, merged into another
 * index as it is written, each image ranks as the index it was made from
 * and passes its check. */
static void blocks_read_back_at_their_edges(void **state)
{
    static const int counts[] = {1, 2, 127, 128, 129, 256, 257};
    static const char *const queries[] = {
        "t1", "t2", "t127", "t128", "t129", "t256", "t257", "all", "big",
        "t129 all", "t257 all", "t1 t2 t128", "big t256", "t127 t129 t257 all"};
    static const size_t ks[] = {1, 3, 10, 64};
    static char text[8 * 70000 + 256];
    cairn__ramidx *x = NULL, *y = NULL, *f = NULL, *m = NULL, *fm = NULL, *xs[2];
    image im = {NULL, 0, 0}, w = {NULL, 0, 0};
    uint64_t *mem = NULL, *mem2 = NULL;
    size_t used = 0;
    (void)state;

    assert_int_equal(cairn__ramidx_new(&x, NULL, "none"), CAIRN_OK);
    assert_int_equal(cairn__ramidx_new(&y, NULL, "none"), CAIRN_OK);
    for (int i = 0; i < EDGE_DOCS; i++) {
        int len = snprintf(text, sizeof text, "all");
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            /* count postings: the documents j * EDGE_DOCS / count, and
             * for 2 the first and the last (the largest gap) */
            int has = 0;
            for (int j = 0; j < counts[c] && !has; j++)
                has = counts[c] == 2 ? i == 0 || i == EDGE_DOCS - 1 : i == j * EDGE_DOCS / counts[c];
            if (has)
                len += snprintf(text + len, sizeof text - (size_t)len, " t%d", counts[c]);
        }
        if (i % 3 == 0) { /* 200 postings, one of tf 70,000 */
            int reps = i == 300 ? 70000 : 1 + i % 5;
            for (int r = 0; r < reps; r++)
                len += snprintf(text + len, sizeof text - (size_t)len, " big");
        }
        assert_int_equal(cairn__ramidx_add(x, 10 + 3 * (uint64_t)i, (const uint8_t *)text,
                                           (size_t)len),
                         CAIRN_OK);
    }
    for (int i = 0; i < 300; i++) { /* a second index, after the first */
        const char *t = i % 2 ? "all t129 big" : "all t257";
        assert_int_equal(cairn__ramidx_add(y, 100000 + (uint64_t)i, (const uint8_t *)t, strlen(t)),
                         CAIRN_OK);
    }
    f = map_image(x, &im, &mem);
    assert_int_equal(cairn__ramidx_check(f), CAIRN_OK);
    for (size_t q = 0; q < sizeof queries / sizeof queries[0]; q++)
        for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
            same_answer(x, f, queries[q], ks[k]);
    /* merged as it is written (the mapped image and y): the bytes of the
     * merge written, and the same ranking as the merge in RAM */
    xs[0] = f;
    xs[1] = y;
    assert_int_equal(cairn__ramidx_merge(&m, NULL, "none", xs, 2), CAIRN_OK);
    assert_int_equal(cairn__ramidx_merge_write(NULL, "none", xs, 2, put_bytes, &w, NULL),
                     CAIRN_OK);
    im.len = 0;
    assert_int_equal(cairn__ramidx_write(m, put_bytes, &im), CAIRN_OK);
    assert_int_equal(w.len, im.len);
    assert_memory_equal(w.b, im.b, w.len);
    mem2 = calloc((w.len + 7) / 8, 8);
    assert_non_null(mem2);
    memcpy(mem2, w.b, w.len);
    assert_int_equal(cairn__ramidx_map(&fm, NULL, "none", mem2, w.len, &used), CAIRN_OK);
    assert_int_equal(cairn__ramidx_check(fm), CAIRN_OK);
    for (size_t q = 0; q < sizeof queries / sizeof queries[0]; q++)
        for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
            same_answer(m, fm, queries[q], ks[k]);
    cairn__ramidx_free(fm);
    cairn__ramidx_free(m);
    cairn__ramidx_free(f);
    cairn__ramidx_free(y);
    cairn__ramidx_free(x);
    free(mem);
    free(mem2);
    free(w.b);
    free(im.b);
}

/* One document (0 bits of document number): its postings read back. */
static void an_image_of_one_document_reads_back(void **state)
{
    cairn__ramidx *x = NULL, *f = NULL;
    image im = {NULL, 0, 0};
    uint64_t *mem = NULL;
    (void)state;
    assert_int_equal(cairn__ramidx_new(&x, NULL, "none"), CAIRN_OK);
    assert_int_equal(cairn__ramidx_add(x, 42, (const uint8_t *)"solo solo solo duo duo one", 26),
                     CAIRN_OK);
    f = map_image(x, &im, &mem);
    assert_int_equal(cairn__ramidx_check(f), CAIRN_OK);
    same_answer(x, f, "solo", 1);
    same_answer(x, f, "duo one", 1);
    {
        uint64_t d[1];
        double s[1];
        size_t n = 0;
        assert_int_equal(cairn__ramidx_search(f, (const uint8_t *)"duo", 3, 1, d, s, &n, NULL),
                         CAIRN_OK);
        assert_int_equal(n, 1);
        assert_int_equal(d[0], 42);
    }
    cairn__ramidx_free(f);
    cairn__ramidx_free(x);
    free(mem);
    free(im.b);
}

#define TABLE_TERMS 3000

static uint64_t image_u64(const image *im, size_t at);

/* The image's term table (format-spec/memindex.md, "Term hash table"):
 * n + n / 3 + 1 slots of 4 bytes, n of them filled, each with its term's
 * tag and number; every term is found in it, a word that is no term is
 * not, and a slot naming a term past the last is damage. */
static void the_term_table_is_three_quarters_full_and_finds_every_term(void **state)
{
    cairn__ramidx *x = NULL, *f = NULL;
    image im = {NULL, 0, 0};
    uint64_t *mem = NULL, nterms, tcap, nsingle, filled = 0;
    size_t table;
    (void)state;
    assert_int_equal(cairn__ramidx_new(&x, NULL, "none"), CAIRN_OK);
    for (int i = 0; i < TABLE_TERMS; i++) {
        char t[32];
        snprintf(t, sizeof t, "w%d shared", i);
        assert_int_equal(cairn__ramidx_add(x, 1 + (uint64_t)i, (const uint8_t *)t, strlen(t)),
                         CAIRN_OK);
    }
    f = map_image(x, &im, &mem);
    nterms = image_u64(&im, 16);
    tcap = image_u64(&im, 24);
    nsingle = image_u64(&im, 64);
    assert_int_equal(nterms, TABLE_TERMS + 1);
    assert_int_equal(tcap, nterms + nterms / 3 + 1);
    table = 80 + 40 * (size_t)(nterms - nsingle) + 16 * (size_t)nsingle;
    for (uint64_t i = 0; i < tcap; i++) {
        uint32_t v;
        memcpy(&v, im.b + table + 4 * i, 4);
        filled += v != 0;
    }
    assert_int_equal(filled, nterms);
    for (int i = 0; i < TABLE_TERMS; i += 97) {
        char w[16];
        snprintf(w, sizeof w, "w%d", i);
        same_answer(x, f, w, 1);
    }
    same_answer(x, f, "shared", 5);
    same_answer(x, f, "nosuchword", 5);
    assert_int_equal(cairn__ramidx_check(f), CAIRN_OK);
    cairn__ramidx_free(f);
    /* a slot naming term nterms + 1 (its tag kept): the check refuses it */
    for (uint64_t i = 0; i < tcap; i++) {
        uint32_t v, idmask = (1u << 12) - 1; /* 3,001 terms: 12 bits of number */
        memcpy(&v, (uint8_t *)mem + table + 4 * i, 4);
        if (v == 0)
            continue;
        v = (v & ~idmask) | (uint32_t)(nterms + 1);
        memcpy((uint8_t *)mem + table + 4 * i, &v, 4);
        break;
    }
    assert_int_equal(cairn__ramidx_map(&f, NULL, "none", mem, im.len, NULL), CAIRN_OK);
    assert_int_equal(cairn__ramidx_check(f), CAIRN_ECORRUPT);
    cairn__ramidx_free(f);
    cairn__ramidx_free(x);
    free(mem);
    free(im.b);
}

#define SEEK_DOCS 5000

/* An index where MaxScore seeks a common term's postings (3,333 in 27
 * blocks) across blocks: 3 words a document, "common" in two of three
 * (twice in three of the rare ones, each blocks after the one before:
 * they must come first), "rare" in nine. */
static cairn__ramidx *seek_index(void)
{
    static const int rare[] = {1, 129, 130, 700, 1301, 2600, 2601, 4998, 4999};
    cairn__ramidx *x = NULL;
    assert_int_equal(cairn__ramidx_new(&x, NULL, "none"), CAIRN_OK);
    for (int i = 0; i < SEEK_DOCS; i++) {
        char t[64];
        int is_rare = 0;
        for (size_t r = 0; r < sizeof rare / sizeof rare[0]; r++)
            is_rare |= rare[r] == i;
        snprintf(t, sizeof t, "%s %s %s", i % 3 ? "common" : "other",
                 is_rare && (i == 1301 || i == 2600 || i == 4999) ? "common" : "fill",
                 is_rare ? "rare" : "pad");
        assert_int_equal(cairn__ramidx_add(x, 7 + (uint64_t)i, (const uint8_t *)t, strlen(t)),
                         CAIRN_OK);
    }
    return x;
}

/* Seeking through the skip table finds what reading every posting finds:
 * the top 4 of "rare common" (once the 4 best so far are all rare,
 * "common" is only looked up: near, a few blocks on, many blocks on) are
 * the first 4 of the search that scores every match, in RAM and mapped. */
static void seek_jumps_blocks_and_finds_what_a_full_scan_finds(void **state)
{
    static const uint64_t want[4] = {7 + 1301, 7 + 2600, 7 + 4999, 7 + 1};
    cairn__ramidx *x = seek_index(), *f = NULL, *both[2];
    image im = {NULL, 0, 0};
    uint64_t *mem = NULL, dall[64], d[4];
    double sall[64], s[4];
    size_t nall = 0, n = 0;
    const char *q = "rare common";
    (void)state;

    f = map_image(x, &im, &mem);
    assert_int_equal(cairn__ramidx_check(f), CAIRN_OK);
    both[0] = x;
    both[1] = f;
    for (int i = 0; i < 2; i++) {
        ramidx_trace tr;
        assert_int_equal(cairn__ramidx_search(both[i], (const uint8_t *)q, strlen(q), 64, dall,
                                              sall, &nall, NULL),
                         CAIRN_OK);
        assert_int_equal(nall, 64);
        assert_int_equal(cairn__ramidx_search(both[i], (const uint8_t *)q, strlen(q), 4, d, s, &n,
                                              &tr),
                         CAIRN_OK);
        assert_int_equal(n, 4);
        for (size_t j = 0; j < 4; j++) {
            assert_int_equal(d[j], want[j]);
            assert_int_equal(dall[j], want[j]);
            assert_memory_equal(&s[j], &sall[j], sizeof s[j]);
        }
        assert_true(s[2] > s[3]); /* tf 2 above tf 1: the seek read tf */
        /* 3,336 documents match; after the first few hundred only rare
         * ones are enumerated, "common" sought for each */
        assert_true(tr.docs_scored + tr.docs_pruned < 1000);
    }
    cairn__ramidx_free(f);
    cairn__ramidx_free(x);
    free(mem);
    free(im.b);
}

/* Where term `word`'s record is in an image (stemmer "none"): *single
 * says which kind (a full record of 40 bytes, or a single one of 16). */
static size_t record_of(const image *im, const char *word, int *single)
{
    uint64_t ndocs, nterms, tcap, alen, nsingle, nfull, arena;
    memcpy(&ndocs, im->b + 8, 8);
    memcpy(&nterms, im->b + 16, 8);
    memcpy(&tcap, im->b + 24, 8);
    memcpy(&alen, im->b + 32, 8);
    memcpy(&nsingle, im->b + 64, 8);
    assert_true(nsingle <= nterms);
    nfull = nterms - nsingle;
    arena = 80 + 40 * nfull + 16 * nsingle + (4 * tcap + 7) / 8 * 8 + 8 * ndocs + (4 * ndocs + 7) / 8 * 8 +
            (ndocs + 63) / 64 * 8;
    for (uint64_t t = 0; t < nterms; t++) {
        size_t at = t < nfull ? 80 + 40 * t : 80 + 40 * nfull + 16 * (t - nfull);
        uint32_t off = 0, len = 0;
        memcpy(&off, im->b + at, 4);
        memcpy(&len, im->b + at + 4, t < nfull ? 4 : 2);
        if (len == strlen(word) && memcmp(im->b + arena + off, word, len) == 0) {
            *single = t >= nfull;
            return at;
        }
    }
    fail_msg("no term %s", word);
    return 0;
}

/* Where term `word`'s postings start in an image (stemmer "none"; a term
 * with a full record), and their count. */
static size_t postings_of(const image *im, const char *word, uint32_t *n)
{
    uint64_t post_len, first;
    int single = 1;
    size_t at = record_of(im, word, &single);
    assert_false(single);
    memcpy(&post_len, im->b + 40, 8);
    memcpy(&first, im->b + at + 8, 8);
    memcpy(n, im->b + at + 16, 4);
    return (size_t)(im->len - post_len + first);
}

/* A damaged skip entry or block header, or a term record whose max_tf is
 * below a tf its blocks hold (the postings' sum still matching): the map
 * succeeds, a query that reads the term (and the full check) fails with
 * CAIRN_ECORRUPT, never reading outside the image; the other terms still
 * answer. */
static void damaged_blocks_and_skip_entries_are_refused(void **state)
{
    cairn__ramidx *x = seek_index();
    image im = {NULL, 0, 0};
    uint64_t *mem = NULL;
    uint32_t n = 0;
    size_t at, rec;
    int single = 1;
    (void)state;

    cairn__ramidx_free(map_image(x, &im, &mem));
    at = postings_of(&im, "common", &n);
    rec = record_of(&im, "common", &single);
    assert_int_equal(n, 3333);
    for (int c = 0; c < 7; c++) {
        cairn__ramidx *f = NULL;
        uint8_t *b = (uint8_t *)mem;
        uint32_t nb = (n + 127) / 128, v;
        uint64_t d[4];
        double s[4];
        size_t k = 0;
        int want = CAIRN_ECORRUPT;
        memcpy(mem, im.b, im.len);
        assert_int_equal(nb, 27);
        switch (c) {
        case 0: /* block 0's last document */
            b[at] ^= 1;
            break;
        case 1: /* block 5's offset, far past the end */
            v = 0xfffffff0u;
            memcpy(b + at + 5 * 8 + 4, &v, 4);
            break;
        case 2: /* the last block's offset, one byte on */
            b[at + 26 * 8 + 4]++;
            break;
        case 3: /* block 0's gap width past 32 */
            b[at + nb * 8] = 40;
            break;
        case 4: /* block 0's widths past 56 together */
            b[at + nb * 8] = 30;
            b[at + nb * 8 + 1] = 30;
            break;
        case 5: /* block 0's tf width, in bounds but wrong */
            b[at + nb * 8 + 1] += 3;
            want = CAIRN_ECORRUPT; /* block 1 no longer starts where the table says */
            break;
        case 6: /* max_tf 1, where documents 1301, 2600 and 4999 have tf 2 */
            memcpy(&v, b + rec + 24, 4);
            assert_int_equal(v, 2);
            v = 1;
            memcpy(b + rec + 24, &v, 4);
            break;
        }
        assert_int_equal(cairn__ramidx_map(&f, NULL, "none", mem, im.len, NULL), CAIRN_OK);
        assert_int_equal(cairn__ramidx_search(f, (const uint8_t *)"rare", 4, 4, d, s, &k, NULL),
                         CAIRN_OK);
        assert_int_equal(k, 4);
        assert_int_equal(cairn__ramidx_search(f, (const uint8_t *)"rare common", 11, 4, d, s, &k,
                                              NULL),
                         want);
        assert_int_equal(cairn__ramidx_check(f), want);
        cairn__ramidx_free(f);
    }
    cairn__ramidx_free(x);
    free(mem);
    free(im.b);
}

/* An image made ahead (a close makes it while it writes its rows) owns
 * its bytes: put after its index is gone, it is the bytes the index would
 * have written, its head ending where the writer marks it, and it maps
 * and answers as that index does. */
typedef struct marked {
    image im;
    size_t mark; /* bytes before the head mark */
    int marks;
} marked;

static int put_marked(void *user, const void *bytes, size_t len)
{
    marked *m = user;
    if (bytes == NULL) {
        m->mark = m->im.len;
        m->marks++;
        return CAIRN_OK;
    }
    return put_bytes(&m->im, bytes, len);
}

static void an_image_made_ahead_is_the_written_one(void **state)
{
    cairn__ramidx *x = seek_index(), *y = seek_index(), *f = NULL;
    cairn__ramidx_image img;
    marked direct, ahead;
    uint64_t *mem;
    (void)state;

    memset(&direct, 0, sizeof direct);
    memset(&ahead, 0, sizeof ahead);
    assert_int_equal(cairn__ramidx_write(x, put_marked, &direct), CAIRN_OK);
    assert_int_equal(cairn__ramidx_image_make(y, &img), CAIRN_OK);
    cairn__ramidx_free(y);
    assert_int_equal(cairn__ramidx_image_put(&img, put_marked, &ahead), CAIRN_OK);
    cairn__ramidx_image_free(&img);
    cairn__ramidx_image_free(&img); /* twice: nothing left to free */
    assert_int_equal(direct.marks, 1);
    assert_int_equal(ahead.marks, 1);
    assert_int_equal(ahead.mark, direct.mark);
    assert_true(ahead.mark > 80 && ahead.mark < ahead.im.len);
    assert_int_equal(ahead.im.len, direct.im.len);
    assert_memory_equal(ahead.im.b, direct.im.b, direct.im.len);
    mem = calloc((ahead.im.len + 7) / 8, 8);
    assert_non_null(mem);
    memcpy(mem, ahead.im.b, ahead.im.len);
    assert_int_equal(cairn__ramidx_map(&f, NULL, "none", mem, ahead.im.len, NULL), CAIRN_OK);
    same_answer(x, f, "rare common", 4);
    same_answer(x, f, "other fill pad", 10);
    cairn__ramidx_free(f);
    cairn__ramidx_free(x);
    free(mem);
    free(direct.im.b);
    free(ahead.im.b);
}

/* ---- terms of one posting: single records ------------------------------ */

static void add_text(cairn__ramidx *x, uint64_t doc, const char *t)
{
    assert_int_equal(cairn__ramidx_add(x, doc, (const uint8_t *)t, strlen(t)), CAIRN_OK);
}

static void remove_text(cairn__ramidx *x, uint64_t doc, const char *t)
{
    assert_int_equal(cairn__ramidx_remove(x, doc, (const uint8_t *)t, strlen(t)), CAIRN_OK);
}

/* Hits of query q in x (k at most 8). */
static size_t hits(cairn__ramidx *x, const char *q, uint64_t *d)
{
    double s[8];
    size_t n = 0;
    assert_int_equal(cairn__ramidx_search(x, (const uint8_t *)q, strlen(q), 8, d, s, &n, NULL),
                     CAIRN_OK);
    return n;
}

static uint64_t image_u64(const image *im, size_t at)
{
    uint64_t v;
    memcpy(&v, im->b + at, 8);
    return v;
}

/* Index A's texts: solo1, twin, solo2 (tf 2), gone, dies, lonely and
 * ghost of one posting each (ghost's document removed before the image is
 * written); common and pair of more; huge of one posting whose tf - 1
 * (69,999) does not fit a single record. */
static const char *const single_a[4] = {
    "common solo1 twin pair", "common solo2 solo2 gone", "common dies pair", "common lonely"};

static cairn__ramidx *single_index_a(void)
{
    static char text[8 * 70000 + 16];
    cairn__ramidx *x = NULL;
    int len = snprintf(text, sizeof text, "common");
    assert_int_equal(cairn__ramidx_new(&x, NULL, "none"), CAIRN_OK);
    for (int i = 0; i < 4; i++)
        add_text(x, 10 + (uint64_t)i, single_a[i]);
    for (int r = 0; r < 70000; r++)
        len += snprintf(text + len, sizeof text - (size_t)len, " huge");
    add_text(x, 14, text);
    add_text(x, 15, "common ghost");
    remove_text(x, 15, "common ghost");
    return x;
}

static const char *const single_queries[] = {
    "solo1", "twin", "solo2", "gone", "dies", "lonely", "huge", "pair", "common", "fresh",
    "solo1 solo2", "common twin", "pair twin solo1", "huge common solo2", "lonely dies gone",
    "ghost", "ghost common"};

/* Terms of one posting written as single records: the image numbers the
 * full terms first (the table follows), a single term reads back through
 * search, removal and merge as in RAM; a term of one posting with tf
 * 70,000 keeps a full record. Merged: a single term in both sources
 * becomes a term of two postings, a term whose other postings are dead a
 * single one, a single term of a dead document is dropped. */
static void single_terms_read_back_and_merge_as_in_ram(void **state)
{
    cairn__ramidx *a = single_index_a(), *b = NULL, *f = NULL, *m = NULL, *mr = NULL, *fm = NULL,
                  *xs[2];
    image im = {NULL, 0, 0}, w = {NULL, 0, 0}, wr = {NULL, 0, 0};
    uint64_t *mem = NULL, *mem2 = NULL, d[8];
    int single = 0;
    (void)state;

    assert_int_equal(cairn__ramidx_new(&b, NULL, "none"), CAIRN_OK);
    add_text(b, 100, "common twin");
    add_text(b, 101, "common fresh");
    f = map_image(a, &im, &mem);
    assert_int_equal(image_u64(&im, 16), 10);
    assert_int_equal(image_u64(&im, 64), 7); /* solo1 twin solo2 gone dies lonely ghost */
    (void)record_of(&im, "ghost", &single);
    assert_true(single); /* its document dead: it counts none (the check below) */
    (void)record_of(&im, "solo2", &single);
    assert_true(single);
    (void)record_of(&im, "huge", &single);
    assert_false(single); /* tf - 1 past a u16 */
    (void)record_of(&im, "pair", &single);
    assert_false(single);
    assert_int_equal(cairn__ramidx_check(f), CAIRN_OK);
    for (size_t q = 0; q < sizeof single_queries / sizeof single_queries[0]; q++)
        for (size_t k = 1; k <= 8; k += 7)
            same_answer(a, f, single_queries[q], k);
    assert_int_equal(hits(f, "huge", d), 1);
    assert_int_equal(d[0], 14);
    assert_int_equal(hits(f, "ghost", d), 0);
    /* removed, mapped: lonely loaded by a query first, dies not yet
     * loaded; both count no live document after, as in RAM */
    assert_int_equal(hits(f, "lonely", d), 1);
    remove_text(f, 13, single_a[3]);
    remove_text(f, 12, single_a[2]);
    remove_text(a, 13, single_a[3]);
    remove_text(a, 12, single_a[2]);
    assert_int_equal(hits(f, "lonely", d), 0);
    assert_int_equal(hits(f, "dies", d), 0);
    assert_int_equal(cairn__ramidx_check(f), CAIRN_OK); /* df: the live postings */
    for (size_t q = 0; q < sizeof single_queries / sizeof single_queries[0]; q++)
        same_answer(a, f, single_queries[q], 8);
    /* merged: as written, as in RAM, as the merge of the RAM indexes */
    xs[0] = f;
    xs[1] = b;
    assert_int_equal(cairn__ramidx_merge_write(NULL, "none", xs, 2, put_bytes, &w, NULL),
                     CAIRN_OK);
    assert_int_equal(cairn__ramidx_merge(&m, NULL, "none", xs, 2), CAIRN_OK);
    assert_int_equal(cairn__ramidx_write(m, put_bytes, &wr), CAIRN_OK);
    assert_int_equal(w.len, wr.len);
    assert_memory_equal(w.b, wr.b, w.len);
    /* common solo1 twin pair solo2 gone huge fresh: dies, lonely, ghost gone */
    assert_int_equal(image_u64(&w, 16), 8);
    assert_int_equal(image_u64(&w, 64), 5); /* solo1 pair solo2 gone fresh */
    (void)record_of(&w, "twin", &single);
    assert_false(single); /* single in each source, two postings merged */
    (void)record_of(&w, "pair", &single);
    assert_true(single); /* its other posting's document is dead */
    mem2 = calloc((w.len + 7) / 8, 8);
    assert_non_null(mem2);
    memcpy(mem2, w.b, w.len);
    assert_int_equal(cairn__ramidx_map(&fm, NULL, "none", mem2, w.len, NULL), CAIRN_OK);
    assert_int_equal(cairn__ramidx_check(fm), CAIRN_OK);
    xs[0] = a;
    assert_int_equal(cairn__ramidx_merge(&mr, NULL, "none", xs, 2), CAIRN_OK);
    for (size_t q = 0; q < sizeof single_queries / sizeof single_queries[0]; q++)
        for (size_t k = 1; k <= 8; k += 7) {
            same_answer(m, fm, single_queries[q], k);
            same_answer(mr, fm, single_queries[q], k);
        }
    assert_int_equal(hits(fm, "twin", d), 2);
    assert_int_equal(hits(fm, "pair", d), 1);
    assert_int_equal(d[0], 10);
    cairn__ramidx_free(fm);
    cairn__ramidx_free(mr);
    cairn__ramidx_free(m);
    cairn__ramidx_free(f);
    cairn__ramidx_free(b);
    cairn__ramidx_free(a);
    free(mem);
    free(mem2);
    free(im.b);
    free(w.b);
    free(wr.b);
}

/* A single record's document number with one bit flipped (0 to 1: still
 * a document of the image) or its term's bytes moved: its check catches
 * it; the search that looks the term up and the full check fail with
 * CAIRN_ECORRUPT, never answering with the wrong document. */
static void a_damaged_single_record_is_refused(void **state)
{
    cairn__ramidx *a = single_index_a(), *f = NULL;
    image im = {NULL, 0, 0};
    uint64_t *mem = NULL, d[8];
    double s[8];
    size_t n = 0, at;
    int single = 0;
    (void)state;

    cairn__ramidx_free(map_image(a, &im, &mem));
    at = record_of(&im, "solo1", &single);
    assert_true(single);
    for (int c = 0; c < 3; c++) {
        uint8_t *r = (uint8_t *)mem + at;
        uint32_t doc;
        memcpy(mem, im.b, im.len);
        memcpy(&doc, r + 8, 4);
        assert_int_equal(doc, 0);
        if (c == 0)
            r[8] ^= 1;   /* document 1: in range */
        else if (c == 1)
            r[6] ^= 1;   /* tf 2 */
        else
            r[12] ^= 0x80; /* the check itself */
        assert_int_equal(cairn__ramidx_map(&f, NULL, "none", mem, im.len, NULL), CAIRN_OK);
        assert_int_equal(cairn__ramidx_search(f, (const uint8_t *)"solo2", 5, 8, d, s, &n, NULL),
                         CAIRN_OK); /* another single term: intact */
        assert_int_equal(n, 1);
        assert_int_equal(d[0], 11);
        assert_int_equal(cairn__ramidx_search(f, (const uint8_t *)"solo1", 5, 8, d, s, &n, NULL),
                         CAIRN_ECORRUPT);
        cairn__ramidx_free(f);
        assert_int_equal(cairn__ramidx_map(&f, NULL, "none", mem, im.len, NULL), CAIRN_OK);
        assert_int_equal(cairn__ramidx_check(f), CAIRN_ECORRUPT);
        cairn__ramidx_free(f);
    }
    /* the header's single count, sum recomputed: past the terms */
    memcpy(mem, im.b, im.len);
    {
        uint64_t bad = image_u64(&im, 16) + 1, sum;
        memcpy((uint8_t *)mem + 64, &bad, 8);
        sum = XXH3_64bits(mem, 72);
        memcpy((uint8_t *)mem + 72, &sum, 8);
    }
    assert_int_equal(cairn__ramidx_map(&f, NULL, "none", mem, im.len, NULL), CAIRN_ECORRUPT);
    cairn__ramidx_free(a);
    free(mem);
    free(im.b);
}

static void ranking_equals_brute_force_bm25(void **state)
{
    cairn__ramidx *x = NULL;
    cairn__tokenizer *tok = NULL;
    static const size_t ks[] = {1, 5, 10, 50};
    (void)state;

    rng_state = 42;
    docs = calloc(NDOCS, sizeof *docs);
    assert_non_null(docs);
    assert_int_equal(cairn__ramidx_new(&x, NULL, "english"), CAIRN_OK);
    assert_int_equal(cairn__tok_new(&tok, NULL, "english"), CAIRN_OK);
    for (int i = 0; i < NDOCS; i++) {
        make_doc(tok, i);
        assert_int_equal(cairn__ramidx_add(x, 1000 + 7 * (uint64_t)i, (const uint8_t *)docs[i].text,
                                           strlen(docs[i].text)),
                         CAIRN_OK);
    }
    /* remove about one in eight */
    for (int i = 0; i < NDOCS; i++)
        if (rnd() % 8 == 0)
            remove_doc(x, i);
    {
        uint64_t live = 0;
        for (int i = 0; i < NDOCS; i++)
            live += (uint64_t)docs[i].live;
        assert_int_equal(cairn__ramidx_count(x), live);
    }
    for (int qi = 0; qi < 150; qi++) {
        char qtext[64];
        random_query(qtext);
        compare(x, tok, qtext, ks[qi % 4]);
    }
    cairn__tok_free(tok);
    cairn__ramidx_free(x);
    free(docs);
}

/* A document is indexed from its words (surface forms), each stemmed once
 * and then remembered (ramidx.c, word_term): its terms must be the ones
 * cairn__tok_run gives, whatever the word. Documents and one-word queries
 * over words that stem, fold, compose, cut or split in every way the
 * tokenizer knows, ranked against the brute force (which tokenizes with
 * cairn__tok_run). */
static void words_are_indexed_as_the_tokenizer_gives_them(void **state)
{
    static const char *const vocab[] = {
        "running", "runs", "ran", "runner", "Running", "RUNS", "connection", "connected",
        "connecting", "connections", "generously", "generous", "caf\xc3\xa9", "Caf\xc3\xa9", "cafe",
        "na\xc3\xafve", "naive", "don't", "dont", "o'neill", "rock\xe2\x80\x99n\xe2\x80\x99roll",
        "Stra\xc3\x9f" "e", "strasse", "\xc4\xb0stanbul", "istanbul", "\xef\xac\x81le", "file",
        "\xef\xbc\xb2\xef\xbd\x95\xef\xbd\x8e", "run", "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
        "2024", "v1.2.3", "e\xcc\x81t\xc3\xa9", "internationalizations", "internationalization",
        "antidisestablishmentarianisms", /* past the stem cache's 22 bytes */
        "pneumonoultramicroscopicsilicovolcanoconiosispneumonoultramicroscopicsilicovolcanoA",
        "pneumonoultramicroscopicsilicovolcanoconiosispneumonoultramicroscopicsilicovolcanoB",
        "\xce\x9f\xce\xb4\xcf\x85\xcf\x83\xcf\x83\xce\xad\xce\xb1\xcf\x82", /* Greek, final sigma */
        "studies", "studying", "studied", "flies", "flying", "happily", "happiness", "the", "The",
        "a", "I", "x", "agreed", "agreement", "feed", "feeds", "relational", "conditional",
    };
    const size_t nv = sizeof vocab / sizeof vocab[0];
    cairn__ramidx *x = NULL;
    cairn__tokenizer *tok = NULL;
    const int nd = 600;
    (void)state;

    rng_state = 7;
    docs = calloc(NDOCS, sizeof *docs); /* the brute force looks at NDOCS (dead past nd) */
    assert_non_null(docs);
    assert_int_equal(cairn__ramidx_new(&x, NULL, "english"), CAIRN_OK);
    assert_int_equal(cairn__tok_new(&tok, NULL, "english"), CAIRN_OK);
    for (int i = 0; i < nd; i++) {
        int n = 1 + (int)(rnd() % 5);
        size_t at = 0;
        for (int j = 0; j < n; j++)
            at += (size_t)snprintf(docs[i].text + at, sizeof docs[i].text - at, "%s%s",
                                   vocab[rnd() % nv], rnd() % 3 ? " " : ", ");
        assert_int_equal(cairn__tok_run(tok, (const uint8_t *)docs[i].text, strlen(docs[i].text),
                                        collect_terms, &docs[i]),
                         CAIRN_OK);
        docs[i].live = 1;
        assert_int_equal(cairn__ramidx_add(x, 1000 + 7 * (uint64_t)i, (const uint8_t *)docs[i].text,
                                           strlen(docs[i].text)),
                         CAIRN_OK);
    }
    for (size_t v = 0; v < nv; v++)
        compare(x, tok, vocab[v], 50);
    cairn__tok_free(tok);
    cairn__ramidx_free(x);
    free(docs);
}

static void pruning_skips_documents_of_a_common_term(void **state)
{
    cairn__ramidx *x = NULL;
    ramidx_trace tr;
    uint64_t d[5];
    double s[5];
    size_t n = 0;
    const char *q = "common rare";
    (void)state;

    assert_int_equal(cairn__ramidx_new(&x, NULL, "none"), CAIRN_OK);
    for (uint64_t i = 0; i < 5000; i++) {
        const char *t = i % 50 == 7 ? "common filler rare" : "common filler words here";
        assert_int_equal(cairn__ramidx_add(x, i + 1, (const uint8_t *)t, strlen(t)), CAIRN_OK);
    }
    assert_int_equal(cairn__ramidx_search(x, (const uint8_t *)q, strlen(q), 5, d, s, &n, &tr),
                     CAIRN_OK);
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(d[i] % 50, 8); /* the rare documents, i % 50 == 7 */
    assert_true(d[0] < d[1]);           /* equal scores: lower number first */
    assert_int_equal(tr.postings, 5000 + 100);
    /* Without pruning all 5000 documents would be scored. */
    assert_true(tr.docs_scored < 5000 / 4);
    cairn__ramidx_free(x);
}

static void removal_and_order_errors(void **state)
{
    cairn__ramidx *x = NULL;
    const char *t = "alpha beta";
    uint64_t d[2];
    double s[2];
    size_t n = 9;
    (void)state;

    assert_int_equal(cairn__ramidx_new(&x, NULL, "none"), CAIRN_OK);
    assert_int_equal(cairn__ramidx_add(x, 10, (const uint8_t *)t, strlen(t)), CAIRN_OK);
    assert_int_equal(cairn__ramidx_add(x, 10, (const uint8_t *)t, strlen(t)), CAIRN_EINVAL);
    assert_int_equal(cairn__ramidx_add(x, 9, (const uint8_t *)t, strlen(t)), CAIRN_EINVAL);
    assert_int_equal(cairn__ramidx_remove(x, 11, (const uint8_t *)t, strlen(t)), CAIRN_ENOTFOUND);
    assert_int_equal(cairn__ramidx_remove(x, 10, (const uint8_t *)t, strlen(t)), CAIRN_OK);
    assert_int_equal(cairn__ramidx_remove(x, 10, (const uint8_t *)t, strlen(t)), CAIRN_ENOTFOUND);
    assert_int_equal(cairn__ramidx_count(x), 0);
    assert_int_equal(cairn__ramidx_search(x, (const uint8_t *)"alpha", 5, 2, d, s, &n, NULL),
                     CAIRN_OK);
    assert_int_equal(n, 0);
    assert_int_equal(cairn__ramidx_add(x, 12, (const uint8_t *)"gamma", 5), CAIRN_OK);
    assert_int_equal(cairn__ramidx_search(x, (const uint8_t *)"alpha", 5, 2, d, s, &n, NULL),
                     CAIRN_OK);
    assert_int_equal(n, 0); /* the removed document never comes back */
    assert_int_equal(cairn__ramidx_search(x, (const uint8_t *)"gamma", 5, 2, d, s, &n, NULL),
                     CAIRN_OK);
    assert_int_equal(n, 1);
    assert_int_equal(d[0], 12);
    assert_true(s[0] > 0);
    cairn__ramidx_free(x);
}

static void empty_and_unknown_queries_find_nothing(void **state)
{
    cairn__ramidx *x = NULL;
    uint64_t d[3];
    double s[3];
    size_t n = 9;
    (void)state;

    assert_int_equal(cairn__ramidx_new(&x, NULL, NULL), CAIRN_OK);
    assert_int_equal(cairn__ramidx_add(x, 1, (const uint8_t *)"the deploy failed", 17), CAIRN_OK);
    assert_int_equal(cairn__ramidx_search(x, (const uint8_t *)"", 0, 3, d, s, &n, NULL), CAIRN_OK);
    assert_int_equal(n, 0);
    assert_int_equal(cairn__ramidx_search(x, (const uint8_t *)"!!! ...", 7, 3, d, s, &n, NULL),
                     CAIRN_OK);
    assert_int_equal(n, 0);
    assert_int_equal(cairn__ramidx_search(x, (const uint8_t *)"kubernetes", 10, 3, d, s, &n, NULL),
                     CAIRN_OK);
    assert_int_equal(n, 0);
    assert_int_equal(cairn__ramidx_search(x, (const uint8_t *)"deploy", 6, 0, d, s, &n, NULL),
                     CAIRN_OK);
    assert_int_equal(n, 0);
    /* stemming on both sides: "deployments failing" finds "deploy failed" */
    assert_int_equal(cairn__ramidx_search(x, (const uint8_t *)"Deployments FAILING", 19, 3, d, s,
                                          &n, NULL),
                     CAIRN_OK);
    assert_int_equal(n, 1);
    assert_int_equal(d[0], 1);
    cairn__ramidx_free(x);
}

/* Words that share their first 7 bytes, of 7 bytes and more, ASCII and
 * not, each its own term (no stemmer): the word table tells them apart
 * (a slot holds a word of 7 bytes or fewer whole, a longer one's first 7
 * bytes and its entry), the first time and when the word is seen again.
 * 1,500 words of one 7-byte start fill the table's probe runs with slots
 * of their key. */
static void words_of_one_prefix_stay_apart(void **state)
{
    static const char *const stem[] = {"abcdefg", "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"};
    enum { NW = 1500 };
    static char w[NW][32];
    cairn__ramidx *x = NULL;
    uint64_t d[4];
    double s[4];
    size_t n;
    (void)state;

    /* 7 bytes, then 8 to 11: stem + "", stem + "0".."9999" */
    for (size_t i = 0; i < NW; i++) {
        if (i < 2)
            snprintf(w[i], sizeof w[i], "%.7s", stem[i]);
        else
            snprintf(w[i], sizeof w[i], "%s%zu", stem[i % 2], i);
    }
    assert_int_equal(cairn__ramidx_new(&x, NULL, "none"), CAIRN_OK);
    /* documents i + 1 and NW + i + 1 hold word i alone: the second time
     * the word table knows it */
    for (size_t round = 0; round < 2; round++)
        for (size_t i = 0; i < NW; i++)
            add_text(x, NW * round + i + 1, w[i]);
    for (size_t i = 0; i < NW; i++) {
        assert_int_equal(cairn__ramidx_search(x, (const uint8_t *)w[i], strlen(w[i]), 4, d, s, &n,
                                              NULL),
                         CAIRN_OK);
        assert_int_equal(n, 2);
        assert_true((d[0] == i + 1 && d[1] == NW + i + 1) || (d[1] == i + 1 && d[0] == NW + i + 1));
    }
    cairn__ramidx_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ranking_equals_brute_force_bm25),
        cmocka_unit_test(words_are_indexed_as_the_tokenizer_gives_them),
        cmocka_unit_test(words_of_one_prefix_stay_apart),
        cmocka_unit_test(mapped_and_ram_indexes_rank_as_one),
        cmocka_unit_test(the_term_table_is_three_quarters_full_and_finds_every_term),
        cmocka_unit_test(damaged_images_are_refused),
        cmocka_unit_test(packed_postings_read_back_at_every_width),
        cmocka_unit_test(blocks_read_back_at_their_edges),
        cmocka_unit_test(an_image_of_one_document_reads_back),
        cmocka_unit_test(seek_jumps_blocks_and_finds_what_a_full_scan_finds),
        cmocka_unit_test(damaged_blocks_and_skip_entries_are_refused),
        cmocka_unit_test(an_image_made_ahead_is_the_written_one),
        cmocka_unit_test(single_terms_read_back_and_merge_as_in_ram),
        cmocka_unit_test(a_damaged_single_record_is_refused),
        cmocka_unit_test(pruning_skips_documents_of_a_common_term),
        cmocka_unit_test(removal_and_order_errors),
        cmocka_unit_test(empty_and_unknown_queries_find_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
