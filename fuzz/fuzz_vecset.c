/*
 * fuzz_vecset.c - the vector image reader (engine/vec/vecset.c,
 * cairn__vecset_map) over arbitrary bytes, then what a reader does with a
 * mapped set: search it, read the rows it returns, remove one, check every
 * block, and write it out again. Input: an image's bytes (the one inside
 * tests/golden/memindex-v2.cmx is a seed).
 *
 * Invariants: no crash or out-of-bounds read whatever the bytes; search
 * returns at most k hits, best first, each a document whose row reads
 * back; an image that passes every check writes out to an image that maps
 * again with the same live rows.
 */
#include "fuzz.h"

#include "vecset.h"

/* Recompute the sums map checks (header, columns, block sums and the
 * blocks themselves), where the bytes say where they are. */
static void repair(uint8_t *b, size_t len)
{
    uint64_t dim, n, nb, stride, doc_off = 128, scale_off, sums_off, i8_off, f32_off, end;
    if (len < 128)
        return;
    dim = get_le32(b + 8);
    n = get_le64(b + 16);
    if (dim == 0 || dim > 65536 || n > len / (dim + 12))
        return;
    stride = (dim + 7) & ~7ull;
    nb = (n + 255) / 256;
    scale_off = doc_off + 8 * n;
    sums_off = scale_off + ((4 * n + 7) & ~7ull);
    i8_off = sums_off + 16 * nb;
    f32_off = i8_off + n * stride;
    end = f32_off + ((4 * n * dim + 7) & ~7ull);
    if (end > len)
        return;
    put_le64(b + 24, len);
    for (uint64_t k = 0; k < nb; k++) {
        uint64_t first = k * 256, rows = n - first < 256 ? n - first : 256;
        put_le64(b + sums_off + 16 * k, XXH3_64bits(b + i8_off + first * stride, rows * stride));
        put_le64(b + sums_off + 16 * k + 8,
             XXH3_64bits(b + f32_off + first * dim * 4, rows * dim * 4));
    }
    put_le64(b + 96, XXH3_64bits(b + doc_off, sums_off - doc_off));
    put_le64(b + 104, XXH3_64bits(b + sums_off, nb * 16));
    put_le64(b + 120, XXH3_64bits(b, 120));
}

typedef struct sink {
    uint8_t *p;
    size_t n, cap;
} sink;

static int sink_put(void *user, const void *p, size_t len)
{
    sink *s = user;
    if (s->n + len > s->cap) {
        size_t cap = (s->n + len) * 2;
        uint8_t *q = realloc(s->p, cap);
        if (q == NULL)
            return CAIRN_ENOMEM;
        s->p = q;
        s->cap = cap;
    }
    memcpy(s->p + s->n, p, len);
    s->n += len;
    return CAIRN_OK;
}

static void one(const uint8_t *data, size_t size)
{
    /* 8-byte aligned, as a mapping's section is */
    uint64_t *al = malloc(size / 8 * 8 + 8);
    cairn__vecset *s = NULL, *again = NULL;
    size_t d, n = 0;
    float *q;
    vec_query vq;
    vec_hit hits[8];
    sink out = {NULL, 0, 0};
    int checked;

    if (al == NULL)
        return;
    memcpy(al, data, size);
    if (cairn__vecset_map(&s, (const uint8_t *)al, size) != CAIRN_OK) {
        free(al);
        return;
    }
    d = cairn__vecset_dim(s);
    FUZZ_CHECK(d >= 1 && d <= 65536);
    q = calloc(d * 3, sizeof *q);
    if (q != NULL) {
        q[0] = 1;
        q[d - 1] = -0.5f;
        cairn__vec_query_make(&vq, q, d, q + d, (int8_t *)(q + 2 * d));
        if (cairn__vecset_search(s, cairn__vkernel_best(), &vq, 8, 0, hits, &n) == CAIRN_OK) {
            FUZZ_CHECK(n <= 8);
            for (size_t i = 0; i < n; i++) {
                const float *row = NULL;
                if (i > 0)
                    FUZZ_CHECK(hits[i - 1].score >= hits[i].score);
                if (cairn__vecset_get(s, hits[i].doc, &row) == CAIRN_OK)
                    FUZZ_CHECK(row != NULL);
            }
            if (n > 0) {
                FUZZ_CHECK(cairn__vecset_remove(s, hits[0].doc) == CAIRN_OK);
                FUZZ_CHECK(cairn__vecset_remove(s, hits[0].doc) == CAIRN_ENOTFOUND);
            }
        }
        free(q);
    }
    checked = cairn__vecset_check_all(s) == CAIRN_OK;
    if (checked && cairn__vecset_write(&s, 1, sink_put, &out) == CAIRN_OK) {
        uint64_t *al2 = malloc(out.n + 8);
        if (al2 != NULL) {
            memcpy(al2, out.p, out.n);
            FUZZ_CHECK(cairn__vecset_map(&again, (const uint8_t *)al2, out.n) == CAIRN_OK);
            FUZZ_CHECK(cairn__vecset_live(again) == cairn__vecset_live(s));
            cairn__vecset_free(again);
            free(al2);
        }
    }
    free(out.p);
    cairn__vecset_free(s);
    free(al);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy;
    if (size > (4u << 20))
        return 0;
    one(data, size);
    copy = fuzz_dup(data, size);
    if (copy != NULL) {
        repair(copy, size);
        one(copy, size);
        free(copy);
    }
    return 0;
}
