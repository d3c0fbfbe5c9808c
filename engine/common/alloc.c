/*
 * alloc.c - the library's one allocation path. Size arithmetic is
 * overflow-checked; a failed allocation is a CAIRN_ENOMEM for the caller,
 * never an abort.
 */
#include "alloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

/* Below this, a block is zeroed whole as calloc does: it is soon touched. */
#define LAZY_MIN ((size_t)1 << 20)

void *cairn__calloc_lazy(const cairn_allocator *a, size_t n, size_t size)
{
    size_t total;
    void *p;

    if (size_mul(&total, n, size) != 0)
        return NULL;
    if (a != NULL || total < LAZY_MIN)
        return cairn__calloc(a, n, size);
    p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void cairn__free_lazy(const cairn_allocator *a, void *ptr, size_t n, size_t size)
{
    size_t total;
    if (ptr == NULL)
        return;
    if (a != NULL || size_mul(&total, n, size) != 0 || total < LAZY_MIN)
        cairn__free(a, ptr);
    else
        munmap(ptr, total);
}
