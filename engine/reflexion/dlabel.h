/*
 * dlabel.h - the label index of the RAM delta (engine/reflexion/dlabel.c):
 * the same 4-gram postings the graph file holds (format-spec/graph.md,
 * "Lookups"), for the nodes added since the file, so a path query does not
 * scan every new label. Built on the first lookup once the delta holds
 * DL_MIN nodes, then kept up to date on later lookups; dropped with the
 * delta at a checkpoint.
 */
#ifndef CAIRN_DLABEL_H
#define CAIRN_DLABEL_H

#include <stddef.h>
#include <stdint.h>

#define DL_MIN 2048

typedef struct dl_list {
    uint32_t key, n, cap;
    uint32_t *post;           /* delta node numbers, ascending; NULL: empty slot */
} dl_list;

typedef struct dlabel {
    dl_list *tab;             /* open addressing on the 4-gram */
    size_t cap, used;
    size_t indexed;           /* delta nodes indexed so far */
} dlabel;

struct rnode;

/* Index nodes[x->indexed .. n). CAIRN_ENOMEM leaves every node before
 * x->indexed wholly indexed and none after it (a caller may scan instead,
 * and a later call goes on from there). */
int cairn__dl_sync(dlabel *x, const struct rnode *nodes, size_t n);

/* The first of nodes[0 .. x->indexed) whose folded label holds the folded
 * q (len >= 3), or UINT32_MAX. */
uint32_t cairn__dl_find(const dlabel *x, const struct rnode *nodes, const char *q, size_t len);

void cairn__dl_free(dlabel *x);

#endif
