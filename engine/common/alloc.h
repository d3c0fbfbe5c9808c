/*
 * alloc.h - every allocation of the library goes through these, backed by
 * the embedder's cairn_allocator or by libc when it is NULL.
 */
#ifndef CAIRN_ALLOC_H
#define CAIRN_ALLOC_H

#include <stddef.h>

#include "cairn.h"

void *cairn__malloc(const cairn_allocator *a, size_t size);
void *cairn__calloc(const cairn_allocator *a, size_t n, size_t size);
void *cairn__realloc(const cairn_allocator *a, void *ptr, size_t size);
void cairn__free(const cairn_allocator *a, void *ptr);

/* n zeroed elements whose pages cost nothing until touched: a large array
 * mostly left alone (a mapped text index's term slots). libc's calloc
 * zeroes a block whole when it reuses freed memory; with a NULL allocator
 * a block of 1 MiB or more comes from the system instead, as fresh zero
 * pages. Freed by cairn__free_lazy with the same a, n and size. */
void *cairn__calloc_lazy(const cairn_allocator *a, size_t n, size_t size);
void cairn__free_lazy(const cairn_allocator *a, void *ptr, size_t n, size_t size);

/* Grow *arr (elements of `elem` bytes, capacity *cap) to hold at least
 * `need` elements, doubling. 0 on success, CAIRN_ENOMEM on failure (the
 * array is untouched then). */
int cairn__grow(const cairn_allocator *a, void **arr, size_t *cap, size_t need, size_t elem);

#endif /* CAIRN_ALLOC_H */
