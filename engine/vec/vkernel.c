/*
 * vkernel.c - see vkernel.h. The SIMD forms are compiled with per-function
 * target attributes, so the library is built for the baseline x86-64 (or any
 * other architecture, where only the scalar forms exist) and picks the
 * widest form the CPU reports through __builtin_cpu_supports.
 *
 * int8 products: sign-extend bytes to 16 bits and multiply-add adjacent
 * pairs into 32-bit lanes (pmaddwd); 16 lanes x 2 products per step are far
 * from overflowing for d <= VEC_DIM_MAX.
 */
#include "vkernel.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define VK_X86 1
#include <immintrin.h>
#else
#define VK_X86 0
#endif

static float dot_f32_scalar(const float *a, const float *b, size_t d)
{
    /* Four partial sums, as the SIMD forms have lanes: the same rounding
     * class, and the compiler can pipeline them. */
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= d; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
    for (; i < d; i++)
        s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

static int32_t dot_i8_scalar(const int8_t *a, const int8_t *b, size_t d)
{
    int32_t s = 0;
    for (size_t i = 0; i < d; i++)
        s += (int32_t)a[i] * (int32_t)b[i];
    return s;
}

static void dot_i8_many_scalar(const int8_t *q, const int8_t *rows, size_t stride, size_t d,
                               size_t n, int32_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = dot_i8_scalar(q, rows + i * stride, d);
}

#if VK_X86
__attribute__((target("avx2,fma"))) static float dot_f32_avx2(const float *a, const float *b,
                                                                 size_t d)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    __m128 h;
    size_t i = 0;
    float r;
    for (; i + 16 <= d; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    for (; i + 8 <= d; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s0 = _mm256_add_ps(s0, s1);
    h = _mm_add_ps(_mm256_castps256_ps128(s0), _mm256_extractf128_ps(s0, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    r = _mm_cvtss_f32(h);
    for (; i < d; i++)
        r += a[i] * b[i];
    return r;
}

__attribute__((target("avx2"))) static inline __m256i madd_i8_avx2(__m128i a, __m128i b)
{
    return _mm256_madd_epi16(_mm256_cvtepi8_epi16(a), _mm256_cvtepi8_epi16(b));
}

__attribute__((target("avx2"))) static inline int32_t hsum_i32_avx2(__m256i v)
{
    __m128i x = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4e));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xb1));
    return _mm_cvtsi128_si32(x);
}

__attribute__((target("avx2"))) static int32_t dot_i8_avx2(const int8_t *a, const int8_t *b,
                                                             size_t d)
{
    __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
    size_t i = 0;
    int32_t r;
    for (; i + 32 <= d; i += 32) {
        s0 = _mm256_add_epi32(s0, madd_i8_avx2(_mm_loadu_si128((const __m128i *)(a + i)),
                                               _mm_loadu_si128((const __m128i *)(b + i))));
        s1 = _mm256_add_epi32(s1,
                              madd_i8_avx2(_mm_loadu_si128((const __m128i *)(a + i + 16)),
                                           _mm_loadu_si128((const __m128i *)(b + i + 16))));
    }
    for (; i + 16 <= d; i += 16)
        s0 = _mm256_add_epi32(s0, madd_i8_avx2(_mm_loadu_si128((const __m128i *)(a + i)),
                                               _mm_loadu_si128((const __m128i *)(b + i))));
    r = hsum_i32_avx2(_mm256_add_epi32(s0, s1));
    for (; i < d; i++)
        r += (int32_t)a[i] * (int32_t)b[i];
    return r;
}

__attribute__((target("avx2"))) static void dot_i8_many_avx2(const int8_t *q,
                                                               const int8_t *rows,
                                                               size_t stride, size_t d,
                                                               size_t n, int32_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = dot_i8_avx2(q, rows + i * stride, d);
}

__attribute__((target("avx512f,avx512bw"))) static float dot_f32_avx512(const float *a,
                                                                         const float *b,
                                                                         size_t d)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    size_t i = 0;
    float r;
    for (; i + 32 <= d; i += 32) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    }
    for (; i + 16 <= d; i += 16)
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    r = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
    for (; i < d; i++)
        r += a[i] * b[i];
    return r;
}

__attribute__((target("avx512f,avx512bw"))) static inline __m512i madd_i8_avx512(__m256i a,
                                                                                  __m256i b)
{
    return _mm512_madd_epi16(_mm512_cvtepi8_epi16(a), _mm512_cvtepi8_epi16(b));
}

__attribute__((target("avx512f,avx512bw"))) static int32_t dot_i8_avx512(const int8_t *a,
                                                                          const int8_t *b,
                                                                          size_t d)
{
    __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
    size_t i = 0;
    int32_t r;
    for (; i + 64 <= d; i += 64) {
        s0 = _mm512_add_epi32(s0, madd_i8_avx512(_mm256_loadu_si256((const __m256i *)(a + i)),
                                                 _mm256_loadu_si256((const __m256i *)(b + i))));
        s1 = _mm512_add_epi32(
            s1, madd_i8_avx512(_mm256_loadu_si256((const __m256i *)(a + i + 32)),
                               _mm256_loadu_si256((const __m256i *)(b + i + 32))));
    }
    for (; i + 32 <= d; i += 32)
        s0 = _mm512_add_epi32(s0, madd_i8_avx512(_mm256_loadu_si256((const __m256i *)(a + i)),
                                                 _mm256_loadu_si256((const __m256i *)(b + i))));
    r = _mm512_reduce_add_epi32(_mm512_add_epi32(s0, s1));
    for (; i < d; i++)
        r += (int32_t)a[i] * (int32_t)b[i];
    return r;
}

/* The scan: the query's 16-bit form is computed once per call and kept in
 * registers for dimensions up to 384 (the common embedding sizes); longer
 * ones fall back to one product at a time. */
__attribute__((target("avx512f,avx512bw"))) static void dot_i8_many_avx512(const int8_t *q,
                                                                            const int8_t *rows,
                                                                            size_t stride,
                                                                            size_t d, size_t n,
                                                                            int32_t *out)
{
    enum { QMAX = 12 }; /* 12 x 32 = 384 dimensions */
    __m512i qw[QMAX];
    size_t steps = d / 32;

    if (d % 32 != 0 || steps > QMAX) {
        for (size_t i = 0; i < n; i++)
            out[i] = dot_i8_avx512(q, rows + i * stride, d);
        return;
    }
    for (size_t s = 0; s < steps; s++)
        qw[s] = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(q + 32 * s)));
    for (size_t i = 0; i < n; i++) {
        const int8_t *r = rows + i * stride;
        __m512i acc = _mm512_setzero_si512();
        if (i + 4 < n)
            _mm_prefetch((const char *)(rows + (i + 4) * stride), _MM_HINT_T0);
        for (size_t s = 0; s < steps; s++)
            acc = _mm512_add_epi32(
                acc, _mm512_madd_epi16(qw[s], _mm512_cvtepi8_epi16(_mm256_loadu_si256(
                                                  (const __m256i *)(r + 32 * s)))));
        out[i] = _mm512_reduce_add_epi32(acc);
    }
}
#endif /* VK_X86 */

static const vkernel k_scalar = {VK_SCALAR, "scalar", dot_f32_scalar, dot_i8_scalar,
                                 dot_i8_many_scalar};
#if VK_X86
static const vkernel k_avx2 = {VK_AVX2, "avx2", dot_f32_avx2, dot_i8_avx2, dot_i8_many_avx2};
static const vkernel k_avx512 = {VK_AVX512, "avx512", dot_f32_avx512, dot_i8_avx512,
                                 dot_i8_many_avx512};
#endif

const vkernel *cairn__vkernel_get(vkernel_level level)
{
    switch (level) {
    case VK_SCALAR:
        return &k_scalar;
#if VK_X86
    case VK_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? &k_avx2
                                                                               : NULL;
    case VK_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
                   ? &k_avx512
                   : NULL;
#endif
    default:
        return NULL;
    }
}

const vkernel *cairn__vkernel_best(void)
{
    /* Idempotent: racing threads compute and store the same pointer. */
    static const vkernel *_Atomic best;
    const vkernel *k = best;
    if (k != NULL)
        return k;
    for (int l = VK_LEVELS - 1; l >= 0 && k == NULL; l--)
        k = cairn__vkernel_get((vkernel_level)l);
    best = k;
    return k;
}
