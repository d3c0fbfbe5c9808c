/*
 * shadowmap.h - the shadow rows of a chain of memory index files that
 * change memories not read yet.
 *
 * A generation's shadow rows change memories of the files below it
 * (format-spec/memindex.md, "Generations"). Applying them all at open
 * reads each memory they change: a row and its strings, scattered over
 * the large files at the bottom of the chain. After many recalls (each
 * one updates the access statistics of the memories it returns) that is
 * thousands of rows, read by every open, of which a query reads a few.
 * So an open notes only which shadow row changes which memory, keyed by
 * the memory's seq, and a row's entry takes its shadow when it is first
 * made (memory.c, cairn__mem_row). The map lives in RAM only and is made
 * again by every open of the chain.
 */
#ifndef CAIRN_SHADOWMAP_H
#define CAIRN_SHADOWMAP_H

#include <stddef.h>
#include <stdint.h>

#define SHADOW_DEAD 1    /* the shadow row ended the memory (applied at open) */
#define SHADOW_APPLIED 2 /* the memory's entry has taken it */

typedef struct cairn__shadowref {
    uint64_t seq;        /* the memory's store record; 0: an empty slot */
    uint32_t row;        /* the shadow row's number in its file */
    uint16_t gen;        /* its file's place in the chain (oldest 0) */
    uint16_t flags;      /* SHADOW_* */
} cairn__shadowref;

typedef struct cairn__shadowmap {
    cairn__shadowref *slots; /* open addressing, linear probing */
    size_t cap, n;           /* cap a power of 2 (0: none yet) */
} cairn__shadowmap;

/* The newest shadow row noted for the memory stored at seq, or NULL. */
cairn__shadowref *cairn__shadowmap_find(const cairn__shadowmap *s, uint64_t seq);

/* Note that row `row` of file `gen` changes the memory stored at seq
 * (seq > 0), in place of any row noted before for it (files are noted
 * oldest first: the newest shadow row holds every field as of its file).
 * Errors: CAIRN_ENOMEM (the map is unchanged). */
int cairn__shadowmap_put(cairn__shadowmap *s, uint64_t seq, uint32_t gen, uint32_t row,
                         uint16_t flags);

/* Forget every row noted (the chain is let go), keeping the slots. */
void cairn__shadowmap_clear(cairn__shadowmap *s);
void cairn__shadowmap_free(cairn__shadowmap *s);

#endif
