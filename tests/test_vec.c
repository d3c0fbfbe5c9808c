/*
 * test_vec.c - the vector kernels and the exact scan: every SIMD form the
 * CPU runs gives the scalar form's int8 products bit for bit and its f32
 * products to rounding; quantization stays in range and within half a step;
 * the int8 scan with f32 re-ranking returns the exact f32 top-k on random
 * and on clustered data, honouring the live bitmap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hashembed.h"
#include "testutil.h"
#include "vkernel.h"
#include "vscan.h"

static uint64_t rng = 0x5eed;

static uint64_t next_u64(void)
{
    return tu_splitmix64(&rng);
}

static double uniform(void)
{
    return (double)(next_u64() >> 11) * (1.0 / 9007199254740992.0);
}

static float normal(void)
{
    double u = uniform(), v = uniform();
    if (u < 1e-300)
        u = 1e-300;
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

static const size_t dims[] = {1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 384, 385, 1024};

static void int8_products_are_exact_at_every_simd_level(void **state)
{
    const vkernel *ref = cairn__vkernel_get(VK_SCALAR);
    int8_t a[1024], b[1024];
    int levels = 0;
    (void)state;

    assert_non_null(cairn__vkernel_best());
    for (int l = 0; l < VK_LEVELS; l++) {
        const vkernel *k = cairn__vkernel_get((vkernel_level)l);
        if (k == NULL)
            continue;
        levels++;
        for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
            size_t d = dims[di];
            for (int rep = 0; rep < 20; rep++) {
                for (size_t i = 0; i < d; i++) {
                    /* rep 0: the extremes, where an overflow would show */
                    a[i] = rep == 0 ? -127 : (int8_t)((int)(next_u64() % 255) - 127);
                    b[i] = rep == 0 ? (i & 1 ? 127 : -127) : (int8_t)((int)(next_u64() % 255) - 127);
                }
                assert_int_equal(k->dot_i8(a, b, d), ref->dot_i8(a, b, d));
            }
        }
    }
    assert_true(levels >= 1);
}

static void the_block_product_equals_one_product_per_row(void **state)
{
    enum { N = 37, STRIDE = 448 };
    static int8_t rows[N * STRIDE];
    int8_t q[STRIDE];
    int32_t out[N];
    (void)state;

    for (size_t i = 0; i < sizeof rows; i++)
        rows[i] = (int8_t)((int)(next_u64() % 255) - 127);
    for (size_t i = 0; i < STRIDE; i++)
        q[i] = (int8_t)((int)(next_u64() % 255) - 127);
    for (int l = 0; l < VK_LEVELS; l++) {
        const vkernel *k = cairn__vkernel_get((vkernel_level)l);
        if (k == NULL)
            continue;
        for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
            size_t d = dims[di];
            if (d > STRIDE)
                continue;
            memset(out, 0x55, sizeof out);
            k->dot_i8_many(q, rows, STRIDE, d, N, out);
            for (size_t i = 0; i < N; i++)
                assert_int_equal(out[i],
                                 cairn__vkernel_get(VK_SCALAR)->dot_i8(q, rows + i * STRIDE, d));
        }
    }
}

static void f32_products_agree_with_the_scalar_loop(void **state)
{
    const vkernel *ref = cairn__vkernel_get(VK_SCALAR);
    float a[1024], b[1024];
    (void)state;

    for (int l = 0; l < VK_LEVELS; l++) {
        const vkernel *k = cairn__vkernel_get((vkernel_level)l);
        if (k == NULL)
            continue;
        for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
            size_t d = dims[di];
            double plain = 0, mag = 0;
            for (size_t i = 0; i < d; i++) {
                a[i] = normal();
                b[i] = normal();
                plain += (double)a[i] * b[i];
                mag += fabs((double)a[i] * b[i]);
            }
            /* Within float rounding of the exact sum, for every form. */
            assert_true(fabs(k->dot_f32(a, b, d) - plain) <= 1e-5 * (mag + 1));
            assert_true(fabs(k->dot_f32(a, b, d) - ref->dot_f32(a, b, d)) <= 1e-5 * (mag + 1));
        }
    }
}

static void quantization_stays_in_range_and_within_half_a_step(void **state)
{
    float x[384];
    int8_t q[384];
    float s;
    (void)state;

    for (int rep = 0; rep < 50; rep++) {
        int saw_extreme = 0;
        for (size_t i = 0; i < 384; i++)
            x[i] = normal() * (rep + 1);
        s = cairn__vec_quantize(x, 384, q);
        assert_true(s > 0);
        for (size_t i = 0; i < 384; i++) {
            assert_true(q[i] >= -127 && q[i] <= 127);
            assert_true(fabsf(x[i] - s * q[i]) <= s * 0.5f * 1.0001f);
            saw_extreme |= q[i] == 127 || q[i] == -127;
        }
        assert_true(saw_extreme); /* the largest value maps to the end of the range */
    }
    memset(x, 0, sizeof x);
    memset(q, 9, sizeof q);
    assert_true(cairn__vec_quantize(x, 384, q) == 0.0f);
    for (size_t i = 0; i < 384; i++)
        assert_int_equal(q[i], 0);
    /* Normalizing gives unit length; a zero vector stays zero. */
    for (size_t i = 0; i < 384; i++)
        x[i] = normal();
    assert_true(cairn__vec_normalize(x, 384) > 0);
    assert_true(fabs(cairn__vkernel_get(VK_SCALAR)->dot_f32(x, x, 384) - 1.0) < 1e-5);
}

/* n rows of d values: random directions, or points around `clusters`
 * centres (spread 0.15), unit length; returned in a view with int8 rows. */
typedef struct block {
    vblock_view v;
    float *f32, *scale;
    int8_t *i8;
    uint8_t *live;
} block;

static void make_block(block *bl, size_t n, size_t d, size_t clusters, float spread)
{
    float *centres = NULL;
    memset(bl, 0, sizeof *bl);
    bl->f32 = malloc(n * d * sizeof(float));
    bl->i8 = malloc(n * d);
    bl->scale = malloc(n * sizeof(float));
    bl->live = malloc((n + 7) / 8);
    assert_non_null(bl->f32);
    assert_non_null(bl->i8);
    assert_non_null(bl->scale);
    assert_non_null(bl->live);
    if (clusters > 0) {
        centres = malloc(clusters * d * sizeof(float));
        assert_non_null(centres);
        for (size_t i = 0; i < clusters * d; i++)
            centres[i] = normal();
        for (size_t c = 0; c < clusters; c++)
            cairn__vec_normalize(centres + c * d, d);
    }
    for (size_t r = 0; r < n; r++) {
        float *x = bl->f32 + r * d;
        const float *c = centres ? centres + (next_u64() % clusters) * d : NULL;
        for (size_t i = 0; i < d; i++)
            x[i] = c ? c[i] + spread * normal() / sqrtf((float)d) * 4 : normal();
        cairn__vec_normalize(x, d);
        bl->scale[r] = cairn__vec_quantize(x, d, bl->i8 + r * d);
    }
    memset(bl->live, 0xff, (n + 7) / 8);
    bl->v.dim = d;
    bl->v.n = n;
    bl->v.f32 = bl->f32;
    bl->v.i8 = bl->i8;
    bl->v.i8_stride = d;
    bl->v.scale = bl->scale;
    bl->v.live = bl->live;
    free(centres);
}

static void free_block(block *bl)
{
    free(bl->f32);
    free(bl->i8);
    free(bl->scale);
    free(bl->live);
}

static void check_scan_is_exact(size_t clusters, float spread)
{
    enum { N = 20000, D = 384, K = 10, Q = 40 };
    block bl;
    float q[D];
    int8_t q8[D];
    bm25_hit tmp[4 * K + VSCAN_CHUNK], got[K], want[K];
    size_t ng, nw;

    make_block(&bl, N, D, clusters, spread);
    /* One row in eight is dead: never returned. */
    for (size_t r = 0; r < N; r += 8)
        bl.live[r >> 3] &= (uint8_t) ~(1u << (r & 7));
    for (int l = 0; l < VK_LEVELS; l++) {
        const vkernel *k = cairn__vkernel_get((vkernel_level)l);
        if (k == NULL)
            continue;
        for (int qi = 0; qi < Q; qi++) {
            /* Half the queries are near a stored row (the usual case). */
            const float *near = bl.f32 + (next_u64() % N) * D;
            float qs;
            for (size_t i = 0; i < D; i++)
                q[i] = qi % 2 ? near[i] + 0.05f * normal() / sqrtf(D) : normal();
            cairn__vec_normalize(q, D);
            qs = cairn__vec_quantize(q, D, q8);
            cairn__vscan_topk(k, &bl.v, q, q8, qs, K, 0, tmp, got, &ng);
            cairn__vscan_topk_f32(cairn__vkernel_get(VK_SCALAR), &bl.v, q, K, want, &nw);
            assert_int_equal(ng, K);
            assert_int_equal(nw, K);
            for (size_t i = 0; i < K; i++) {
                assert_true(got[i].doc % 8 != 0); /* live rows only */
                /* The same rows in the same order, but for rows whose f32
                 * scores tie to rounding under another summation order. */
                if (got[i].doc != want[i].doc)
                    assert_true(fabs(got[i].score - want[i].score) < 1e-6);
                assert_true(fabs(got[i].score - want[i].score) < 1e-5);
            }
        }
    }
    free_block(&bl);
}

static void int8_scan_with_f32_rerank_gives_the_exact_top_k_on_random_data(void **state)
{
    (void)state;
    check_scan_is_exact(0, 0);
}

static void int8_scan_with_f32_rerank_gives_the_exact_top_k_on_clustered_data(void **state)
{
    (void)state;
    check_scan_is_exact(50, 0.15f);
}

static float cosine_of(cairn__hashembed *e, const char *a, const char *b)
{
    float va[HASHEMBED_DIM_DEFAULT], vb[HASHEMBED_DIM_DEFAULT];
    assert_int_equal(cairn__hashembed_run(e, a, strlen(a), va), CAIRN_OK);
    assert_int_equal(cairn__hashembed_run(e, b, strlen(b), vb), CAIRN_OK);
    return cairn__vkernel_get(VK_SCALAR)->dot_f32(va, vb, HASHEMBED_DIM_DEFAULT);
}

static void the_hash_embedder_is_deterministic_and_unit_length(void **state)
{
    cairn__hashembed *e, *e2;
    float v1[HASHEMBED_DIM_DEFAULT], v2[HASHEMBED_DIM_DEFAULT];
    const char *t = "The deploy failed because the migration timed out";
    (void)state;

    assert_int_equal(cairn__hashembed_new(&e, NULL, HASHEMBED_DIM_DEFAULT), CAIRN_OK);
    assert_int_equal(cairn__hashembed_new(&e2, NULL, HASHEMBED_DIM_DEFAULT), CAIRN_OK);
    assert_int_equal(cairn__hashembed_dim(e), HASHEMBED_DIM_DEFAULT);
    assert_int_equal(cairn__hashembed_run(e, t, strlen(t), v1), CAIRN_OK);
    assert_int_equal(cairn__hashembed_run(e2, t, strlen(t), v2), CAIRN_OK);
    assert_memory_equal(v1, v2, sizeof v1); /* another instance, the same bytes */
    assert_true(fabs(cairn__vkernel_get(VK_SCALAR)->dot_f32(v1, v1, HASHEMBED_DIM_DEFAULT) - 1.0) <
                1e-5);
    /* No word at all: the zero vector. */
    assert_int_equal(cairn__hashembed_run(e, " ,.; ", 5, v1), CAIRN_OK);
    for (size_t i = 0; i < HASHEMBED_DIM_DEFAULT; i++)
        assert_true(v1[i] == 0.0f);
    {
        cairn__hashembed *bad = (cairn__hashembed *)1;
        assert_int_equal(cairn__hashembed_new(&bad, NULL, 0), CAIRN_EINVAL);
        assert_null(bad);
    }
    cairn__hashembed_free(e2);
    cairn__hashembed_free(e);
    cairn__hashembed_free(NULL);
}

/* cairn-hash-v1 names its vectors: they stay made of tokenizer rules 1,
 * where `don't` is one word (rules 2 give `don` + `t`, as `don t` does). */
static void the_hash_embedder_keeps_the_words_of_tokenizer_rules_1(void **state)
{
    cairn__hashembed *e;
    float a[HASHEMBED_DIM_DEFAULT], b[HASHEMBED_DIM_DEFAULT];
    (void)state;

    assert_int_equal(cairn__hashembed_new(&e, NULL, HASHEMBED_DIM_DEFAULT), CAIRN_OK);
    assert_int_equal(cairn__hashembed_run(e, "don't stop", 10, a), CAIRN_OK);
    assert_int_equal(cairn__hashembed_run(e, "don t stop", 10, b), CAIRN_OK);
    assert_true(memcmp(a, b, sizeof a) != 0);
    cairn__hashembed_free(e);
}

static void the_hash_embedder_tolerates_misspellings_and_word_forms(void **state)
{
    cairn__hashembed *e;
    (void)state;

    assert_int_equal(cairn__hashembed_new(&e, NULL, HASHEMBED_DIM_DEFAULT), CAIRN_OK);
    /* A misspelling BM25 would miss entirely stays close... */
    {
        float typo = cosine_of(e, "recieve the package", "receive the package");
        float other = cosine_of(e, "recieve the package", "bake a chocolate cake");
        assert_true(typo > 0.6f);
        assert_true(typo > other + 0.4f);
    }
    {
        float typo = cosine_of(e, "kubernetes", "kubernetse");
        float other = cosine_of(e, "kubernetes", "postgres");
        assert_true(typo > 0.3f);
        assert_true(typo > other + 0.2f);
    }
    /* ...and so do other forms of the same words. */
    {
        float forms = cosine_of(e, "deploying the services", "service deployment");
        float other = cosine_of(e, "deploying the services", "a quiet afternoon walk");
        assert_true(forms > other + 0.3f);
    }
    /* Synonyms share no letters: nothing to find (the documented limit). */
    assert_true(cosine_of(e, "car", "vehicle") < 0.3f);
    cairn__hashembed_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(int8_products_are_exact_at_every_simd_level),
        cmocka_unit_test(the_block_product_equals_one_product_per_row),
        cmocka_unit_test(f32_products_agree_with_the_scalar_loop),
        cmocka_unit_test(quantization_stays_in_range_and_within_half_a_step),
        cmocka_unit_test(int8_scan_with_f32_rerank_gives_the_exact_top_k_on_random_data),
        cmocka_unit_test(int8_scan_with_f32_rerank_gives_the_exact_top_k_on_clustered_data),
        cmocka_unit_test(the_hash_embedder_is_deterministic_and_unit_length),
        cmocka_unit_test(the_hash_embedder_tolerates_misspellings_and_word_forms),
        cmocka_unit_test(the_hash_embedder_keeps_the_words_of_tokenizer_rules_1),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
