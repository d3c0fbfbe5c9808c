/*
 * alloc.c - the library's one allocation path. Size arithmetic is
 * overflow-checked; a failed allocation is a CAIRN_ENOMEM for the caller,
 * never an abort.
 */
#include "alloc.h"

#include <stdlib.h>
#include <string.h>

#include "bytes.h"

void *cairn__malloc(const cairn_allocator *a, size_t size)
{
    if (size == 0)
        size = 1;
    if (a != NULL)
        return a->malloc_fn(a->user, size);
    return malloc(size);
}

void *cairn__calloc(const cairn_allocator *a, size_t n, size_t size)
{
    size_t total;
    void *p;

    if (size_mul(&total, n, size) != 0)
        return NULL;
    if (a == NULL) /* large blocks come as fresh zero pages, touched only when used */
        return calloc(total ? total : 1, 1);
    p = cairn__malloc(a, total);
    if (p != NULL)
        memset(p, 0, total == 0 ? 1 : total);
    return p;
}

void *cairn__realloc(const cairn_allocator *a, void *ptr, size_t size)
{
    if (size == 0)
        size = 1;
    if (a != NULL)
        return a->realloc_fn(a->user, ptr, size);
    return realloc(ptr, size);
}

void cairn__free(const cairn_allocator *a, void *ptr)
{
    if (ptr == NULL)
        return;
    if (a != NULL)
        a->free_fn(a->user, ptr);
    else
        free(ptr);
}

int cairn__grow(const cairn_allocator *a, void **arr, size_t *cap, size_t need, size_t elem)
{
    size_t ncap, bytes;
    void *p;

    if (need <= *cap)
        return CAIRN_OK;
    ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return CAIRN_ENOMEM;
        ncap *= 2;
    }
    if (size_mul(&bytes, ncap, elem) != 0)
        return CAIRN_ENOMEM;
    p = cairn__realloc(a, *arr, bytes);
    if (p == NULL)
        return CAIRN_ENOMEM;
    *arr = p;
    *cap = ncap;
    return CAIRN_OK;
}
