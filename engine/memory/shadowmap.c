/*
 * shadowmap.c - seq -> the shadow row that changes that memory
 * (shadowmap.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cairn.h"
#include "mix64.h"
#include "shadowmap.h"

/* seqs are consecutive, the slots must not be */
static size_t slot_of(uint64_t seq, size_t cap)
{
    return (size_t)cairn__mix64(seq) & (cap - 1);
}

cairn__shadowref *cairn__shadowmap_find(const cairn__shadowmap *s, uint64_t seq)
{
    if (s->n == 0 || seq == 0)
        return NULL;
    for (size_t i = slot_of(seq, s->cap);; i = (i + 1) & (s->cap - 1)) {
        if (s->slots[i].seq == seq)
            return &s->slots[i];
        if (s->slots[i].seq == 0)
            return NULL; /* the table is never full: an empty slot ends a probe */
    }
}

static void place(cairn__shadowref *slots, size_t cap, const cairn__shadowref *r)
{
    size_t i = slot_of(r->seq, cap);
    while (slots[i].seq != 0)
        i = (i + 1) & (cap - 1);
    slots[i] = *r;
}

int cairn__shadowmap_put(cairn__shadowmap *s, uint64_t seq, uint32_t gen, uint32_t row,
                         uint16_t flags)
{
    cairn__shadowref r = {seq, row, (uint16_t)gen, flags}, *old = cairn__shadowmap_find(s, seq);
    if (old != NULL) {
        *old = r;
        return CAIRN_OK;
    }
    if (2 * (s->n + 1) > s->cap) { /* at most half full */
        size_t cap = s->cap ? 2 * s->cap : 1024;
        cairn__shadowref *slots = calloc(cap, sizeof *slots);
        if (slots == NULL)
            return CAIRN_ENOMEM;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slots[i].seq != 0)
                place(slots, cap, &s->slots[i]);
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    place(s->slots, s->cap, &r);
    s->n++;
    return CAIRN_OK;
}

void cairn__shadowmap_clear(cairn__shadowmap *s)
{
    if (s->n != 0)
        memset(s->slots, 0, s->cap * sizeof *s->slots);
    s->n = 0;
}

void cairn__shadowmap_free(cairn__shadowmap *s)
{
    free(s->slots);
    memset(s, 0, sizeof *s);
}
