/*
 * bfs.h - shortest paths in the causal graph (engine/reflexion/bfs.c).
 */
#ifndef CAIRN_BFS_H
#define CAIRN_BFS_H

#include <stddef.h>
#include <stdint.h>

#include "rstate.h"

/* A shortest path from node `from` to node `to` of at most max_depth edges
 * (out-edges from the source side, in-edges from the target side): *path
 * (malloc'd, *n nodes, from first) or NULL when there is none. Caller holds
 * r->mu (the search's scratch, r->bfs, is kept between calls). CAIRN_ENOMEM
 * only. */
int cairn__bfs_path(cairn_reflex *r, uint32_t from, uint32_t to, unsigned max_depth,
                    uint32_t **path, size_t *n);

/* Free a handle's search scratch; NULL ok. */
void cairn__bfs_free(struct rbfs *b);

#endif
