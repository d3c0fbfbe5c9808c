/*
 * vkernel.h - the inner loops of vector search: dot products of f32 rows and
 * of int8 rows, in a portable scalar form and in SIMD forms chosen at run
 * time from what the CPU has (AVX2+FMA, AVX-512BW). Every form of the int8
 * product is exact (32-bit integer sums of at most 65,536 products of
 * |x| <= 127, which cannot overflow), so all forms give the same number; the
 * f32 forms differ only in summation order.
 */
#ifndef CAIRN_VKERNEL_H
#define CAIRN_VKERNEL_H

#include <stddef.h>
#include <stdint.h>

/* Longest vector the kernels accept: keeps the int8 sums exact in int32. */
#define VEC_DIM_MAX 65536u

typedef enum vkernel_level {
    VK_SCALAR = 0,
    VK_AVX2 = 1,   /* AVX2 + FMA */
    VK_AVX512 = 2, /* AVX-512F + AVX-512BW */
    VK_LEVELS = 3
} vkernel_level;

typedef struct vkernel {
    vkernel_level level;
    const char *name;
    float (*dot_f32)(const float *a, const float *b, size_t d);
    int32_t (*dot_i8)(const int8_t *a, const int8_t *b, size_t d);
    /* out[i] = dot_i8(q, rows + i * stride, d) for i < n: the scan loop,
     * one call per block so the query stays in registers. */
    void (*dot_i8_many)(const int8_t *q, const int8_t *rows, size_t stride, size_t d,
                        size_t n, int32_t *out);
} vkernel;

/* The best level this CPU runs (computed once; thread-safe). */
const vkernel *cairn__vkernel_best(void);

/* A given level, or NULL when the CPU cannot run it (tests and benches
 * compare every level they can run against the scalar one). */
const vkernel *cairn__vkernel_get(vkernel_level level);

#endif /* CAIRN_VKERNEL_H */
