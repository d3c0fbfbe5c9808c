/*
 * dlabel.c - the RAM delta's label index: 4-gram postings of the folded
 * labels of nodes added since the graph file (dlabel.h). Postings are kept
 * as u32 little-endian like the file's, so both go through one join
 * (cairn__gi_join).
 */
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "dlabel.h"
#include "gimage.h"
#include "rstate.h"

static size_t slot_of(const dlabel *x, uint32_t key)
{
    size_t mask = x->cap - 1, i = (key * 0x9e3779b1u) & mask;
    while (x->tab[i].post != NULL && x->tab[i].key != key)
        i = (i + 1) & mask;
    return i;
}

static int grow(dlabel *x)
{
    dlabel g = *x;
    if (x->cap != 0 && (x->used + 1) * 2 <= x->cap)
        return CAIRN_OK;
    g.cap = x->cap ? x->cap * 2 : 4096;
    if ((g.tab = calloc(g.cap, sizeof *g.tab)) == NULL)
        return CAIRN_ENOMEM;
    for (size_t i = 0; i < x->cap; i++)
        if (x->tab[i].post != NULL)
            g.tab[slot_of(&g, x->tab[i].key)] = x->tab[i];
    free(x->tab);
    *x = g;
    return CAIRN_OK;
}

static int add(dlabel *x, uint32_t key, uint32_t node)
{
    dl_list *l;
    if (grow(x) != CAIRN_OK)
        return CAIRN_ENOMEM;
    l = &x->tab[slot_of(x, key)];
    if (l->post == NULL) {
        if ((l->post = malloc(4 * sizeof *l->post)) == NULL)
            return CAIRN_ENOMEM;
        l->key = key;
        l->cap = 4;
        l->n = 0;
        x->used++;
    } else if (l->n == l->cap) {
        uint32_t *p = realloc(l->post, 2 * (size_t)l->cap * sizeof *p);
        if (p == NULL)
            return CAIRN_ENOMEM;
        l->post = p;
        l->cap *= 2;
    }
    put_le32((uint8_t *)&l->post[l->n++], node);
    return CAIRN_OK;
}

/* Take node i's postings back out (a failed sync): they are the newest. */
static void drop(dlabel *x, const uint32_t *grams, size_t ng, uint32_t node)
{
    if (x->cap == 0) /* the table itself could not be made: nothing to take out */
        return;
    for (size_t k = 0; k < ng; k++) {
        dl_list *l = &x->tab[slot_of(x, grams[k])];
        if (l->post != NULL && l->n > 0 && get_le32((const uint8_t *)&l->post[l->n - 1]) == node)
            l->n--;
    }
}

int cairn__dl_sync(dlabel *x, const struct rnode *nodes, size_t n)
{
    uint32_t *grams = NULL;
    size_t cap = 0;
    int rc = CAIRN_OK;
    while (x->indexed < n && rc == CAIRN_OK) {
        const rnode *d = &nodes[x->indexed];
        size_t ng, k;
        if (d->fold_len + 1 > cap) {
            free(grams);
            cap = d->fold_len + 1;
            if ((grams = malloc(cap * sizeof *grams)) == NULL) {
                rc = CAIRN_ENOMEM;
                break;
            }
        }
        ng = cairn__gi_grams(d->fold, d->fold_len, 1, grams);
        for (k = 0; k < ng && rc == CAIRN_OK; k++)
            rc = add(x, grams[k], (uint32_t)x->indexed);
        if (rc != CAIRN_OK)
            drop(x, grams, k, (uint32_t)x->indexed);
        else
            x->indexed++;
    }
    free(grams);
    return rc;
}

typedef struct dq {
    const rnode *nodes;
    const char *q;
    size_t len;
} dq;

static int holds(const void *ctx, uint32_t v)
{
    const dq *x = ctx;
    return cairn__gi_contains(x->nodes[v].fold, x->nodes[v].fold_len, x->q, x->len);
}

static int list_of(const dlabel *x, uint32_t key, gi_plist *out)
{
    const dl_list *l;
    if (x->cap == 0)
        return 0;
    l = &x->tab[slot_of(x, key)];
    if (l->post == NULL || l->n == 0)
        return 0;
    out->post = (const uint8_t *)l->post;
    out->n = l->n;
    out->at = 0;
    return 1;
}

uint32_t cairn__dl_find(const dlabel *x, const struct rnode *nodes, const char *q, size_t len)
{
    uint32_t grams[64], best = UINT32_MAX;
    gi_plist l[64];
    dq c = {nodes, q, len};
    size_t ng;
    if (len == 3) { /* a label holding q has a 4-gram q + some byte (NUL pad) */
        uint32_t k = (uint32_t)(uint8_t)q[0] << 24 | (uint32_t)(uint8_t)q[1] << 16 |
                     (uint32_t)(uint8_t)q[2] << 8;
        for (uint32_t b = 0; b < 256; b++) {
            gi_plist one;
            if (list_of(x, k | b, &one) && get_le32(one.post) < best)
                best = get_le32(one.post);
        }
        return best;
    }
    ng = cairn__gi_grams(q, len < 67 ? len : 67, 0, grams);
    for (size_t i = 0; i < ng; i++)
        if (!list_of(x, grams[i], &l[i]))
            return UINT32_MAX;
    return cairn__gi_join(l, ng, holds, &c);
}

void cairn__dl_free(dlabel *x)
{
    for (size_t i = 0; i < x->cap; i++)
        free(x->tab[i].post);
    free(x->tab);
    memset(x, 0, sizeof *x);
}
