/*
 * vecset.c - see vecset.h; the image layout is in format-spec/memindex.md
 * ("Vector image").
 */
#include "vecset.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "bytes.h"
#include "vscan.h"

#define VIX_MAGIC 0x31584956u /* "VIX1" */
#define VIX_VERSION 1u
#define VIX_HEAD 128u

#define CHECKED_I8 1u
#define CHECKED_F32 2u

struct cairn__vecset {
    char name[VEC_NAME_MAX + 1];
    size_t dim, stride;      /* stride: int8 row bytes, dim rounded up to 8 */
    size_t n, cap, n_live;
    float *f32;              /* n x dim */
    int8_t *i8;              /* n x stride */
    float *scale;
    uint64_t *doc;
    uint8_t *live;           /* a bit per row */
    /* mapped */
    int mapped;
    const uint64_t *sums;    /* per block: i8 sum, f32 sum */
    uint8_t *checked;        /* per block: CHECKED_* */
};

static uint64_t pad8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

static int name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    return n >= 1 && n <= VEC_NAME_MAX;
}

int cairn__vecset_new(cairn__vecset **out, const char *embedder, size_t dim)
{
    cairn__vecset *s;
    *out = NULL;
    if (!name_ok(embedder) || dim == 0 || dim > VEC_DIM_MAX)
        return CAIRN_EINVAL;
    if ((s = calloc(1, sizeof *s)) == NULL)
        return CAIRN_ENOMEM;
    strcpy(s->name, embedder);
    s->dim = dim;
    s->stride = (size_t)pad8(dim);
    *out = s;
    return CAIRN_OK;
}

void cairn__vecset_free(cairn__vecset *s)
{
    if (s == NULL)
        return;
    if (!s->mapped) {
        free(s->f32);
        free(s->i8);
        free(s->scale);
        free(s->doc);
    }
    free(s->live);
    free(s->checked);
    free(s);
}

const char *cairn__vecset_embedder(const cairn__vecset *s) { return s->name; }
size_t cairn__vecset_dim(const cairn__vecset *s) { return s->dim; }
size_t cairn__vecset_live(const cairn__vecset *s) { return s->n_live; }

static int is_live(const cairn__vecset *s, size_t i)
{
    return s->live[i >> 3] >> (i & 7) & 1;
}

static int grow(void **p, size_t cap, size_t elem)
{
    void *q = realloc(*p, cap * elem);
    if (q == NULL)
        return 0;
    *p = q;
    return 1;
}

int cairn__vecset_add(cairn__vecset *s, uint64_t doc, const float *v)
{
    float *row;
    if (s->mapped || (s->n > 0 && doc <= s->doc[s->n - 1]))
        return CAIRN_EINVAL;
    for (size_t i = 0; i < s->dim; i++)
        if (!isfinite(v[i]))
            return CAIRN_EINVAL;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        /* each array grows on its own: one that fails leaves the rest
         * bigger than needed, never smaller */
        if (!grow((void **)&s->f32, cap * s->dim, sizeof *s->f32) ||
            !grow((void **)&s->i8, cap * s->stride, 1) ||
            !grow((void **)&s->scale, cap, sizeof *s->scale) ||
            !grow((void **)&s->doc, cap, sizeof *s->doc) ||
            !grow((void **)&s->live, (cap + 7) / 8, 1))
            return CAIRN_ENOMEM;
        memset(s->live + (s->cap + 7) / 8, 0, (cap + 7) / 8 - (s->cap + 7) / 8);
        s->cap = cap;
    }
    row = s->f32 + s->n * s->dim;
    memcpy(row, v, s->dim * sizeof *row);
    (void)cairn__vec_normalize(row, s->dim);
    memset(s->i8 + s->n * s->stride, 0, s->stride);
    s->scale[s->n] = cairn__vec_quantize(row, s->dim, s->i8 + s->n * s->stride);
    s->doc[s->n] = doc;
    s->live[s->n >> 3] |= (uint8_t)(1u << (s->n & 7));
    s->n++;
    s->n_live++;
    return CAIRN_OK;
}

/* Row of doc, or n. */
static size_t find_row(const cairn__vecset *s, uint64_t doc)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->doc[mid] < doc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->n && s->doc[lo] == doc ? lo : s->n;
}

int cairn__vecset_remove(cairn__vecset *s, uint64_t doc)
{
    size_t i = find_row(s, doc);
    if (i == s->n || !is_live(s, i))
        return CAIRN_ENOTFOUND;
    s->live[i >> 3] &= (uint8_t)~(1u << (i & 7));
    s->n_live--;
    return CAIRN_OK;
}

/* ---- lazy checks of a mapped image ------------------------------------ */

static size_t block_rows(const cairn__vecset *s, size_t b)
{
    size_t first = b * VEC_BLOCK_ROWS;
    return s->n - first < VEC_BLOCK_ROWS ? s->n - first : VEC_BLOCK_ROWS;
}

static int check_block(cairn__vecset *s, size_t b, unsigned what)
{
    size_t first = b * VEC_BLOCK_ROWS, rows;
    if (!s->mapped || (s->checked[b] & what))
        return CAIRN_OK;
    rows = block_rows(s, b);
    if (what == CHECKED_I8) {
        if (XXH3_64bits(s->i8 + first * s->stride, rows * s->stride) != s->sums[2 * b])
            return CAIRN_ECHECKSUM;
    } else {
        const float *f = s->f32 + first * s->dim;
        if (XXH3_64bits(f, rows * s->dim * sizeof(float)) != s->sums[2 * b + 1])
            return CAIRN_ECHECKSUM;
        for (size_t i = 0; i < rows * s->dim; i++)
            if (!isfinite(f[i]) || fabsf(f[i]) > 1.0f + 1e-3f) /* rows are unit length */
                return CAIRN_ECORRUPT;
    }
    s->checked[b] |= (uint8_t)what;
    return CAIRN_OK;
}

static int check_blocks(cairn__vecset *s, unsigned what)
{
    size_t nb = (s->n + VEC_BLOCK_ROWS - 1) / VEC_BLOCK_ROWS;
    int rc = CAIRN_OK;
    for (size_t b = 0; b < nb && rc == CAIRN_OK; b++)
        rc = check_block(s, b, what);
    return rc;
}

int cairn__vecset_check_all(cairn__vecset *s)
{
    int rc = check_blocks(s, CHECKED_I8);
    return rc == CAIRN_OK ? check_blocks(s, CHECKED_F32) : rc;
}

int cairn__vecset_get(cairn__vecset *s, uint64_t doc, const float **row)
{
    size_t i = find_row(s, doc);
    int rc;
    *row = NULL;
    if (i == s->n || !is_live(s, i))
        return CAIRN_OK;
    if ((rc = check_block(s, i / VEC_BLOCK_ROWS, CHECKED_F32)) != CAIRN_OK)
        return rc;
    *row = s->f32 + i * s->dim;
    return CAIRN_OK;
}

int cairn__vecset_each(cairn__vecset *s, int (*fn)(void *user, uint64_t doc, const float *row),
                       void *user)
{
    for (size_t i = 0; i < s->n; i++) {
        int rc;
        if (!is_live(s, i))
            continue;
        if ((rc = check_block(s, i / VEC_BLOCK_ROWS, CHECKED_F32)) != CAIRN_OK)
            return rc;
        if ((rc = fn(user, s->doc[i], s->f32 + i * s->dim)) != 0)
            return rc;
    }
    return CAIRN_OK;
}

int cairn__vecset_rows(cairn__vecset *s, const float **f32, const uint64_t **docs,
                       const uint8_t **live, size_t *n)
{
    int rc = check_blocks(s, CHECKED_F32);
    if (rc != CAIRN_OK)
        return rc;
    *f32 = s->f32;
    *docs = s->doc;
    *live = s->live;
    *n = s->n;
    return CAIRN_OK;
}

void cairn__vec_query_make(vec_query *vq, const float *v, size_t dim, float *q, int8_t *q8)
{
    memcpy(q, v, dim * sizeof *q);
    (void)cairn__vec_normalize(q, dim);
    vq->q_scale = cairn__vec_quantize(q, dim, q8);
    vq->q = q;
    vq->q8 = q8;
    vq->dim = dim;
}

int cairn__vecset_search(cairn__vecset *s, const vkernel *kern, const vec_query *q, size_t k,
                         size_t rerank, vec_hit *out, size_t *n_out)
{
    vblock_view b;
    bm25_hit *tmp, *best;
    bm25_topk top;
    size_t nc, nb;
    int rc = CAIRN_OK;

    *n_out = 0;
    if (q->dim != s->dim)
        return CAIRN_EINVAL;
    if (k == 0 || s->n_live == 0)
        return CAIRN_OK;
    if ((rc = check_blocks(s, CHECKED_I8)) != CAIRN_OK)
        return rc;
    rerank = cairn__vscan_rerank_n(k, rerank);
    tmp = malloc((rerank + VSCAN_CHUNK) * sizeof *tmp);
    best = malloc(k * sizeof *best);
    if (tmp == NULL || best == NULL) {
        free(tmp);
        free(best);
        return CAIRN_ENOMEM;
    }
    memset(&b, 0, sizeof b);
    b.dim = s->dim;
    b.n = s->n;
    b.f32 = s->f32;
    b.i8 = s->i8;
    b.i8_stride = s->stride;
    b.scale = s->scale;
    b.live = s->live;
    nc = cairn__vscan_i8(kern, &b, q->q8, q->q_scale, rerank, tmp);
    cairn__bm25_topk_init(&top, best, k);
    for (size_t i = 0; i < nc && rc == CAIRN_OK; i++) {
        uint32_t r = tmp[i].doc;
        rc = check_block(s, r / VEC_BLOCK_ROWS, CHECKED_F32);
        if (rc == CAIRN_OK)
            cairn__bm25_topk_push(&top, r, kern->dot_f32(q->q, s->f32 + (size_t)r * s->dim, s->dim));
    }
    nb = cairn__bm25_topk_finish(&top);
    for (size_t i = 0; rc == CAIRN_OK && i < nb; i++) {
        out[i].doc = s->doc[best[i].doc];
        out[i].score = best[i].score;
    }
    if (rc == CAIRN_OK)
        *n_out = nb;
    free(tmp);
    free(best);
    return rc;
}

/* ---- the image ----------------------------------------------------------- */

typedef struct img_shape {
    uint64_t n, nblocks, doc_off, scale_off, sums_off, i8_off, f32_off, len;
} img_shape;

static void shape(img_shape *sh, uint64_t n, uint64_t dim)
{
    sh->n = n;
    sh->nblocks = (n + VEC_BLOCK_ROWS - 1) / VEC_BLOCK_ROWS;
    sh->doc_off = VIX_HEAD;
    sh->scale_off = sh->doc_off + 8 * n;
    sh->sums_off = sh->scale_off + pad8(4 * n);
    sh->i8_off = sh->sums_off + 16 * sh->nblocks;
    sh->f32_off = sh->i8_off + n * pad8(dim);
    sh->len = sh->f32_off + pad8(4 * n * dim);
}

static uint64_t live_rows(cairn__vecset *const *sets, size_t n)
{
    uint64_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += sets[i]->n_live;
    return k;
}

uint64_t cairn__vecset_image_len(cairn__vecset *const *sets, size_t n)
{
    img_shape sh;
    shape(&sh, live_rows(sets, n), n ? sets[0]->dim : 1);
    return sh.len;
}

/* The live rows of several sets, in order. */
typedef struct row_walk {
    cairn__vecset *const *sets;
    size_t n, si, ri;
} row_walk;

static int walk_next(row_walk *w, cairn__vecset **s, size_t *row)
{
    while (w->si < w->n) {
        cairn__vecset *x = w->sets[w->si];
        while (w->ri < x->n) {
            size_t i = w->ri++;
            if (is_live(x, i)) {
                *s = x;
                *row = i;
                return 1;
            }
        }
        w->si++;
        w->ri = 0;
    }
    return 0;
}

/* Block sums of the live rows: XXH3 over a block's int8 rows, then over
 * its f32 rows, as the image lays them out. */
static int block_sums(cairn__vecset *const *sets, size_t n, uint64_t *sums, uint64_t nblocks)
{
    row_walk w = {sets, n, 0, 0};
    XXH3_state_t *a = XXH3_createState(), *b = XXH3_createState();
    cairn__vecset *s;
    size_t row, k = 0;
    int rc = a && b ? CAIRN_OK : CAIRN_ENOMEM;

    while (rc == CAIRN_OK && walk_next(&w, &s, &row)) {
        if (k % VEC_BLOCK_ROWS == 0) {
            XXH3_64bits_reset(a);
            XXH3_64bits_reset(b);
        }
        /* a mapped source is checked before its bytes are summed again */
        if ((rc = check_block(s, row / VEC_BLOCK_ROWS, CHECKED_I8)) != CAIRN_OK ||
            (rc = check_block(s, row / VEC_BLOCK_ROWS, CHECKED_F32)) != CAIRN_OK)
            break;
        XXH3_64bits_update(a, s->i8 + row * s->stride, s->stride);
        XXH3_64bits_update(b, s->f32 + row * s->dim, s->dim * sizeof(float));
        k++;
        if (k % VEC_BLOCK_ROWS == 0) {
            sums[2 * (k / VEC_BLOCK_ROWS - 1)] = XXH3_64bits_digest(a);
            sums[2 * (k / VEC_BLOCK_ROWS - 1) + 1] = XXH3_64bits_digest(b);
        }
    }
    if (rc == CAIRN_OK && k % VEC_BLOCK_ROWS != 0) {
        sums[2 * (nblocks - 1)] = XXH3_64bits_digest(a);
        sums[2 * (nblocks - 1) + 1] = XXH3_64bits_digest(b);
    }
    XXH3_freeState(a);
    XXH3_freeState(b);
    return rc;
}

int cairn__vecset_write(cairn__vecset *const *sets, size_t n, vec_put_fn put, void *user)
{
    static const uint8_t zero[8];
    uint8_t h[VIX_HEAD];
    img_shape sh;
    uint64_t *sums = NULL;
    XXH3_state_t *cs = NULL;
    row_walk w;
    cairn__vecset *s;
    size_t row, dim;
    int rc = CAIRN_OK;

    if (n == 0)
        return CAIRN_EINVAL;
    dim = sets[0]->dim;
    for (size_t i = 1; i < n; i++)
        if (sets[i]->dim != dim || strcmp(sets[i]->name, sets[0]->name) != 0)
            return CAIRN_EINVAL;
    shape(&sh, live_rows(sets, n), dim);
    sums = calloc(sh.nblocks ? sh.nblocks * 2 : 1, sizeof *sums);
    cs = XXH3_createState();
    if (sums == NULL || cs == NULL) {
        rc = CAIRN_ENOMEM;
        goto out;
    }
    if ((rc = block_sums(sets, n, sums, sh.nblocks)) != CAIRN_OK)
        goto out;
    /* the sum of the doc and scale columns, padding included */
    XXH3_64bits_reset(cs);
    w = (row_walk){sets, n, 0, 0};
    while (walk_next(&w, &s, &row))
        XXH3_64bits_update(cs, &s->doc[row], 8);
    w = (row_walk){sets, n, 0, 0};
    while (walk_next(&w, &s, &row))
        XXH3_64bits_update(cs, &s->scale[row], 4);
    XXH3_64bits_update(cs, zero, pad8(4 * sh.n) - 4 * sh.n);

    memset(h, 0, sizeof h);
    put_le32(h, VIX_MAGIC);
    put_le32(h + 4, VIX_VERSION);
    put_le32(h + 8, (uint32_t)dim);
    put_le32(h + 12, VEC_BLOCK_ROWS);
    put_le64(h + 16, sh.n);
    put_le64(h + 24, sh.len);
    memcpy(h + 32, sets[0]->name, strlen(sets[0]->name));
    put_le64(h + 96, XXH3_64bits_digest(cs));
    put_le64(h + 104, XXH3_64bits(sums, sh.nblocks * 16));
    put_le64(h + 120, XXH3_64bits(h, 120));
    rc = put(user, h, sizeof h);
    w = (row_walk){sets, n, 0, 0};
    while (rc == CAIRN_OK && walk_next(&w, &s, &row))
        rc = put(user, &s->doc[row], 8);
    w = (row_walk){sets, n, 0, 0};
    while (rc == CAIRN_OK && walk_next(&w, &s, &row))
        rc = put(user, &s->scale[row], 4);
    if (rc == CAIRN_OK && pad8(4 * sh.n) != 4 * sh.n)
        rc = put(user, zero, pad8(4 * sh.n) - 4 * sh.n);
    if (rc == CAIRN_OK && sh.nblocks > 0)
        rc = put(user, sums, sh.nblocks * 16);
    w = (row_walk){sets, n, 0, 0};
    while (rc == CAIRN_OK && walk_next(&w, &s, &row))
        rc = put(user, s->i8 + row * s->stride, s->stride);
    w = (row_walk){sets, n, 0, 0};
    while (rc == CAIRN_OK && walk_next(&w, &s, &row))
        rc = put(user, s->f32 + row * s->dim, s->dim * sizeof(float));
    if (rc == CAIRN_OK && pad8(4 * sh.n * dim) != 4 * sh.n * dim)
        rc = put(user, zero, 4);
out:
    free(sums);
    XXH3_freeState(cs);
    return rc;
}

int cairn__vecset_map(cairn__vecset **out, const uint8_t *p, size_t len)
{
    cairn__vecset *s;
    img_shape sh;
    uint64_t n, dim;
    size_t nb;

    *out = NULL;
    if (len < VIX_HEAD || get_le32(p) != VIX_MAGIC)
        return CAIRN_ECORRUPT;
    if (XXH3_64bits(p, 120) != get_le64(p + 120))
        return CAIRN_ECHECKSUM;
    if (get_le32(p + 4) != VIX_VERSION)
        return CAIRN_EVERSION;
    dim = get_le32(p + 8);
    n = get_le64(p + 16);
    if (dim == 0 || dim > VEC_DIM_MAX || get_le32(p + 12) != VEC_BLOCK_ROWS ||
        n > len / (dim + 12) || p[32] == 0 || p[32 + VEC_NAME_MAX] != 0 || get_le64(p + 112) != 0)
        return CAIRN_ECORRUPT;
    shape(&sh, n, dim);
    if (sh.len != len || get_le64(p + 24) != len)
        return CAIRN_ECORRUPT;
    if (XXH3_64bits(p + sh.doc_off, sh.sums_off - sh.doc_off) != get_le64(p + 96) ||
        XXH3_64bits(p + sh.sums_off, sh.nblocks * 16) != get_le64(p + 104))
        return CAIRN_ECHECKSUM;
    if ((s = calloc(1, sizeof *s)) == NULL)
        return CAIRN_ENOMEM;
    memcpy(s->name, p + 32, VEC_NAME_MAX + 1);
    s->dim = (size_t)dim;
    s->stride = (size_t)pad8(dim);
    s->n = s->cap = s->n_live = (size_t)n;
    s->mapped = 1;
    s->doc = (uint64_t *)(uintptr_t)(p + sh.doc_off);
    s->scale = (float *)(uintptr_t)(p + sh.scale_off);
    s->sums = (const uint64_t *)(const void *)(p + sh.sums_off);
    s->i8 = (int8_t *)(uintptr_t)(p + sh.i8_off);
    s->f32 = (float *)(uintptr_t)(p + sh.f32_off);
    nb = (size_t)sh.nblocks;
    s->live = malloc(n ? (n + 7) / 8 : 1);
    s->checked = calloc(nb ? nb : 1, 1);
    if (s->live == NULL || s->checked == NULL) {
        cairn__vecset_free(s);
        return CAIRN_ENOMEM;
    }
    memset(s->live, 0xff, (n + 7) / 8);
    for (size_t i = 0; i < s->n; i++)
        if ((i > 0 && s->doc[i] <= s->doc[i - 1]) || !isfinite(s->scale[i]) || s->scale[i] < 0) {
            cairn__vecset_free(s);
            return CAIRN_ECORRUPT;
        }
    *out = s;
    return CAIRN_OK;
}
