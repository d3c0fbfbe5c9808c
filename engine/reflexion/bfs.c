/*
 * bfs.c - the shortest path between two nodes of the causal graph: a
 * bidirectional breadth-first search over the graph file's CSR rows (out
 * from the source, in from the target) and the RAM delta's edge lists,
 * always expanding the smaller frontier, cycle-safe through one visited
 * map per side.
 */
#include <stdlib.h>
#include <string.h>

#include "bfs.h"
#include "rstate.h"

/* A small open-addressing map node -> (link, level): the visited set of one
 * side, link being the parent (forward) or the child (backward). */
typedef struct vmap {
    uint32_t *key, *link;
    uint8_t *level;
    size_t cap, n;
} vmap;

static int vm_init(vmap *m, size_t cap)
{
    m->cap = cap;
    m->n = 0;
    m->key = malloc(cap * sizeof *m->key);
    m->link = malloc(cap * sizeof *m->link);
    m->level = malloc(cap);
    if (m->key == NULL || m->link == NULL || m->level == NULL)
        return CAIRN_ENOMEM;
    memset(m->key, 0xff, cap * sizeof *m->key);
    return CAIRN_OK;
}

static void vm_free(vmap *m)
{
    free(m->key);
    free(m->link);
    free(m->level);
}

static size_t vm_slot(const vmap *m, uint32_t v)
{
    size_t i = (v * 0x9e3779b1u) & (m->cap - 1);
    while (m->key[i] != UINT32_MAX && m->key[i] != v)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int vm_has(const vmap *m, uint32_t v, uint32_t *link, unsigned *level)
{
    size_t i = vm_slot(m, v);
    if (m->key[i] == UINT32_MAX)
        return 0;
    if (link != NULL)
        *link = m->link[i];
    if (level != NULL)
        *level = m->level[i];
    return 1;
}

static int vm_put(vmap *m, uint32_t v, uint32_t link, unsigned level)
{
    if ((m->n + 1) * 2 > m->cap) {
        vmap g;
        if (vm_init(&g, m->cap * 2) != CAIRN_OK) {
            vm_free(&g);
            return CAIRN_ENOMEM;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i] != UINT32_MAX) {
                size_t j = vm_slot(&g, m->key[i]);
                g.key[j] = m->key[i];
                g.link[j] = m->link[i];
                g.level[j] = m->level[i];
                g.n++;
            }
        vm_free(m);
        *m = g;
    }
    size_t i = vm_slot(m, v);
    m->key[i] = v;
    m->link[i] = link;
    m->level[i] = (uint8_t)level;
    m->n++;
    return CAIRN_OK;
}

/* Neighbours of v, out (dir 0) or in (dir 1): the file's CSR row, then
 * the delta list. Calls fn for each; stops early when fn returns non-zero. */
typedef struct walk {
    vmap side[2];             /* 0 forward from the source, 1 backward */
    uint32_t *front[2], *next;
    size_t nfront[2], cap;
    unsigned depth[2];
    uint32_t best_meet, best_len;
} walk;

static int push(walk *w, size_t *nn, uint32_t v)
{
    if (*nn == w->cap) {
        size_t cap = w->cap * 2;
        uint32_t *a = realloc(w->front[0], cap * sizeof *a), *b, *c;
        if (a == NULL)
            return CAIRN_ENOMEM;
        w->front[0] = a;
        if ((b = realloc(w->front[1], cap * sizeof *b)) == NULL)
            return CAIRN_ENOMEM;
        w->front[1] = b;
        if ((c = realloc(w->next, cap * sizeof *c)) == NULL)
            return CAIRN_ENOMEM;
        w->next = c;
        w->cap = cap;
    }
    w->next[(*nn)++] = v;
    return CAIRN_OK;
}

/* Reach u from v on side s at level lv: record it, check the other side. */
static int reach(walk *w, int s, uint32_t v, uint32_t u, unsigned lv, size_t *nn)
{
    uint32_t link;
    unsigned olv;
    int rc;
    if (vm_has(&w->side[s], u, NULL, NULL))
        return CAIRN_OK;
    if ((rc = vm_put(&w->side[s], u, v, lv)) != CAIRN_OK)
        return rc;
    if (vm_has(&w->side[!s], u, &link, &olv)) {
        if (lv + olv < w->best_len) {
            w->best_len = lv + olv;
            w->best_meet = u;
        }
        return CAIRN_OK;
    }
    return push(w, nn, u);
}

/* The frontier's rows lie scattered through the mapping, one or two cache
 * misses each; asking for them all before walking any lets the misses
 * overlap instead of queueing one behind the other. */
static void prefetch_rows(const cairn_reflex *r, const walk *w, int s)
{
    for (size_t k = 0; k < w->nfront[s]; k++)
        if (w->front[s][k] < r->base_n)
            cairn__gi_prefetch_row(&r->gi, w->front[s][k], s, 0);
    for (size_t k = 0; k < w->nfront[s]; k++)
        if (w->front[s][k] < r->base_n)
            cairn__gi_prefetch_row(&r->gi, w->front[s][k], s, 1);
}

static int expand(const cairn_reflex *r, walk *w, int s)
{
    size_t nn = 0;
    unsigned lv = ++w->depth[s];
    int rc = CAIRN_OK;
    if (w->nfront[s] > 1)
        prefetch_rows(r, w, s);
    for (size_t k = 0; k < w->nfront[s] && rc == CAIRN_OK; k++) {
        uint32_t v = w->front[s][k], n = 0, first;
        const uint32_t *nb = NULL, *eids;
        if (v < r->base_n)
            nb = s == 0 ? cairn__gi_out(&r->gi, v, &first, &n) : cairn__gi_in(&r->gi, v, &eids, &n);
        for (uint32_t j = 0; j < n && rc == CAIRN_OK; j++)
            rc = reach(w, s, v, nb[j], lv, &nn);
        if (v < r->adj_cap) {
            for (uint32_t e = s == 0 ? r->dout[v] : r->din[v]; e != 0 && rc == CAIRN_OK;) {
                const redge *d = &r->de[e - 1 - r->base_m];
                rc = reach(w, s, v, s == 0 ? d->dst : d->src, lv, &nn);
                e = s == 0 ? d->next_out : d->next_in;
            }
        }
    }
    uint32_t *t = w->front[s];
    w->front[s] = w->next;
    w->next = t;
    w->nfront[s] = nn;
    return rc;
}

int cairn__bfs_path(const cairn_reflex *r, uint32_t from, uint32_t to, unsigned max_depth,
                    uint32_t **path, size_t *n)
{
    walk w;
    int rc;
    memset(&w, 0, sizeof w);
    w.cap = 64;
    w.best_len = UINT32_MAX;
    w.front[0] = malloc(w.cap * sizeof(uint32_t));
    w.front[1] = malloc(w.cap * sizeof(uint32_t));
    w.next = malloc(w.cap * sizeof(uint32_t));
    rc = w.front[0] && w.front[1] && w.next ? CAIRN_OK : CAIRN_ENOMEM;
    if (rc == CAIRN_OK)
        rc = vm_init(&w.side[0], 256);
    if (rc == CAIRN_OK)
        rc = vm_init(&w.side[1], 256);
    if (rc == CAIRN_OK)
        rc = vm_put(&w.side[0], from, from, 0);
    if (rc == CAIRN_OK)
        rc = vm_put(&w.side[1], to, to, 0);
    *path = NULL;
    *n = 0;
    if (rc == CAIRN_OK && from == to)
        w.best_len = 0, w.best_meet = from;
    w.front[0][0] = from;
    w.front[1][0] = to;
    w.nfront[0] = w.nfront[1] = 1;
    while (rc == CAIRN_OK && w.best_len == UINT32_MAX && w.depth[0] + w.depth[1] < max_depth &&
           w.nfront[0] > 0 && w.nfront[1] > 0)
        rc = expand(r, &w, w.nfront[0] <= w.nfront[1] ? 0 : 1);
    if (rc == CAIRN_OK && w.best_len != UINT32_MAX) {
        uint32_t *p = malloc((w.best_len + 1) * sizeof *p), v, link;
        unsigned lv = 0;
        if (p == NULL) {
            rc = CAIRN_ENOMEM;
        } else {
            (void)vm_has(&w.side[0], w.best_meet, NULL, &lv);
            v = w.best_meet;
            for (unsigned k = lv + 1; k-- > 0;) { /* back to the source */
                p[k] = v;
                (void)vm_has(&w.side[0], v, &link, NULL);
                v = link;
            }
            v = w.best_meet;
            for (unsigned k = lv + 1; k <= w.best_len; k++) { /* on to the target */
                (void)vm_has(&w.side[1], v, &link, NULL);
                v = link;
                p[k] = v;
            }
            *path = p;
            *n = w.best_len + 1;
        }
    }
    vm_free(&w.side[0]);
    vm_free(&w.side[1]);
    free(w.front[0]);
    free(w.front[1]);
    free(w.next);
    return rc;
}
