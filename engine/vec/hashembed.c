/*
 * hashembed.c - see hashembed.h. Two tokenizer runs per text: one with the
 * English stemmer for the word features, one without a stemmer for the
 * trigrams (so "running" still shares "<ru", "run", "unn" with "runner").
 * Coordinates come from XXH3-64 of the feature with a per-kind seed: the low
 * bits choose the coordinate, the top bit its sign, so collisions cancel on
 * average instead of piling up.
 */
#include "hashembed.h"

#include <math.h>
#include <string.h>
#include <xxhash.h>

#include "alloc.h"
#include "tokenize.h"
#include "vscan.h"

#define SEED_STEM 0x636169726e2d7331ull /* "cairn-s1" */
#define SEED_TRI 0x636169726e2d7431ull  /* "cairn-t1" */

struct cairn__hashembed {
    const cairn_allocator *a;
    size_t dim;
    cairn__tokenizer *stem, *plain;
};

typedef struct acc {
    const cairn__hashembed *e;
    float *v;
} acc;

static void add(acc *s, const void *f, size_t len, uint64_t seed, float w)
{
    uint64_t h = XXH3_64bits_withSeed(f, len, seed);
    s->v[(h & 0x7fffffffffffffffull) % s->e->dim] += (h >> 63) ? -w : w;
}

static int on_stem(void *user, const char *term, size_t len, uint32_t pos)
{
    (void)pos;
    add(user, term, len, SEED_STEM, 1.0f);
    return 0;
}

static int on_word(void *user, const char *term, size_t len, uint32_t pos)
{
    char pad[TOK_MAX_BYTES + 2];
    size_t n = len + 2, grams;
    float w;
    (void)pos;
    pad[0] = '<';
    memcpy(pad + 1, term, len);
    pad[len + 1] = '>';
    /* Byte trigrams: a multi-byte letter spreads over a few of them, which
     * still matches the same letter elsewhere. */
    grams = n >= 3 ? n - 2 : 1;
    w = 1.0f / sqrtf((float)grams);
    if (n < 3) {
        add(user, pad, n, SEED_TRI, w);
        return 0;
    }
    for (size_t i = 0; i + 3 <= n; i++)
        add(user, pad + i, 3, SEED_TRI, w);
    return 0;
}

int cairn__hashembed_new(cairn__hashembed **out, const cairn_allocator *a, size_t dim)
{
    cairn__hashembed *e;
    int rc;

    *out = NULL;
    if (dim == 0 || dim > 65536)
        return CAIRN_EINVAL;
    e = cairn__calloc(a, 1, sizeof *e);
    if (e == NULL)
        return CAIRN_ENOMEM;
    e->a = a;
    e->dim = dim;
    /* cairn-hash-v1's vectors are made of the terms of tokenizer rules 1:
     * the same name must keep giving the same vectors. */
    rc = cairn__tok_new_rules(&e->stem, a, "english", 1);
    if (rc == CAIRN_OK)
        rc = cairn__tok_new_rules(&e->plain, a, "none", 1);
    if (rc != CAIRN_OK) {
        cairn__hashembed_free(e);
        return rc;
    }
    *out = e;
    return CAIRN_OK;
}

void cairn__hashembed_free(cairn__hashembed *e)
{
    if (e == NULL)
        return;
    cairn__tok_free(e->stem);
    cairn__tok_free(e->plain);
    cairn__free(e->a, e);
}

size_t cairn__hashembed_dim(const cairn__hashembed *e)
{
    return e->dim;
}

int cairn__hashembed_run(cairn__hashembed *e, const char *text, size_t len, float *out)
{
    acc s = {e, out};
    int rc;

    memset(out, 0, e->dim * sizeof *out);
    rc = cairn__tok_run(e->stem, (const uint8_t *)text, len, on_stem, &s);
    if (rc == CAIRN_OK)
        rc = cairn__tok_run(e->plain, (const uint8_t *)text, len, on_word, &s);
    if (rc != CAIRN_OK) {
        memset(out, 0, e->dim * sizeof *out);
        return rc;
    }
    cairn__vec_normalize(out, e->dim);
    return CAIRN_OK;
}
