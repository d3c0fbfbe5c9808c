/*
 * ggen.h - a graph generation (`graph-<seq>.cgg`, format-spec/graph.md
 * "Generations"): what changed in the reflexion state between the file
 * below it (a whole graph file or another generation) and its covered
 * seq, so that a close writes what it changed instead of the whole graph.
 *
 * A generation is small and read once: an open folds it into the RAM
 * state on top of the whole file it lies on, as it folds log records,
 * without the JSON. Each of its five tables (episode names, nodes, edges,
 * episodes, patterns) holds rows by number: a number below the table's
 * `first` replaces that row ("overlay"), the others are appended in
 * order. The parser checks every length, count, order and reference
 * against the file before it hands a row to the caller.
 */
#ifndef CAIRN_GGEN_H
#define CAIRN_GGEN_H

#include <stddef.h>
#include <stdint.h>

#include "cairn_sys.h"
#include "gimage.h"
#include "logbind.h"
#include "status.h"

#define GG_VERSION 1
#define GG_HEAD 64    /* the common file header (filehdr.h) */
#define GG_FIXED 96   /* the block after it: binding, totals, table counts */

enum { GG_NAMES, GG_NODES, GG_EDGES, GG_EPISODES, GG_PATTERNS, GG_TABLES };

typedef struct gg_head {
    uint64_t covered;         /* every record up to it is folded in */
    uint64_t base;            /* the covered seq of the file below */
    uint32_t base_gen;        /* 1: that file is a generation; 0: a whole graph file */
    uint64_t skipped;         /* totals up to covered, as in a whole file */
    int64_t updated;
    cairn__logbind bind;
    uint32_t first[GG_TABLES]; /* rows of each table below this file */
    uint32_t count[GG_TABLES]; /* rows this file holds, overlays first */
    uint64_t file_len;
} gg_head;

/* What a writer gives: the head (file_len is computed) and, per table, the
 * rows with their numbers (overlays ascending, then the appended rows
 * first, first + 1, ...). An overlay node needs no label (the label of a
 * node never changes). */
typedef struct gg_in {
    gg_head head;
    const gi_str *names;      /* appended names only: numbers first[GG_NAMES] + i */
    const uint32_t *node_no;
    const gi_node *nodes;
    const uint32_t *edge_no;
    const gi_edge *edges;
    const uint32_t *episode_no;
    const gi_episode *episodes;
    const uint32_t *pattern_no;
    const gi_pattern *patterns;
} gg_in;

/* Write it as `graph-<covered>.cgg` (temp file, fsync, rename, fsync the
 * directory); removes no other file. Errors: CAIRN_EIO, CAIRN_EFULL,
 * CAIRN_ENOMEM, CAIRN_EINVAL (past the format's limits). */
int cairn__gg_write(const cairn_io *io, int dirfd, const gg_in *in, uint64_t *len_out,
                    cairn__err *e);

/* The rows of a parsed file, one call per row in file order (names,
 * nodes, edges, episodes, patterns). Strings and eps point into the
 * buffer; labels are not NUL-terminated. A callback's nonzero return
 * stops the walk and is returned. */
typedef struct gg_visit {
    int (*name)(void *user, uint32_t no, const char *s, uint32_t len);
    int (*node)(void *user, uint32_t no, const gi_node *n);
    int (*edge)(void *user, uint32_t no, const gi_edge *x);
    int (*episode)(void *user, uint32_t no, const gi_episode *x);
    int (*pattern)(void *user, uint32_t no, const gi_pattern *p);
} gg_visit;

/* Check buf (len bytes, 8-aligned; name for messages) whole, fill *h,
 * then, with v, walk its rows. CAIRN_ECORRUPT / ECHECKSUM / EVERSION with
 * the offset of the problem in *bad_off and the reason in e. */
int cairn__gg_parse(const uint8_t *buf, size_t len, const char *name, gg_head *h,
                    const gg_visit *v, void *user, uint64_t *bad_off, cairn__err *e);

/* Map the generation covering exactly seq, read-only (*id: the file the
 * name held then). CAIRN_ENOTFOUND: no such file. */
int cairn__gg_map(const cairn_io *io, int dirfd, uint64_t seq, uint8_t **map, size_t *len,
                  char *name, size_t cap, cairn__fileid *id, cairn__err *e);
void cairn__gg_unmap(uint8_t *map, size_t len);

#endif /* CAIRN_GGEN_H */
