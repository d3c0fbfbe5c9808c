/*
 * bfs.c - the shortest path between two nodes of the causal graph: a
 * bidirectional breadth-first search over the graph file's CSR rows (out
 * from the source, in from the target) and the RAM delta's edge lists,
 * always expanding the smaller frontier, cycle-safe through one visited
 * map per side.
 *
 * The maps and frontiers are kept in the handle between searches (under
 * its mutex) and cleared by bumping a stamp, so a search allocates and
 * clears nothing unless it grows past what an earlier one used.
 */
#include <stdlib.h>
#include <string.h>

#include "bfs.h"
#include "rstate.h"

/* A visited node of one side: link is its parent (forward side) or child
 * (backward side); the slot is empty unless stamp is the current search's. */
typedef struct vslot {
    uint32_t key, link, stamp;
    uint32_t level;
} vslot;

typedef struct vmap {
    vslot *s;
    size_t cap, n;
} vmap;

struct rbfs {
    vmap side[2];             /* 0 forward from the source, 1 backward */
    uint32_t stamp;
    uint32_t *front[2], *next;
    size_t cap;
};

enum { MAP_MIN = 1024, FRONT_MIN = 256, KEEP_MAX = 1 << 16 };

void cairn__bfs_free(struct rbfs *b)
{
    if (b == NULL)
        return;
    free(b->side[0].s);
    free(b->side[1].s);
    free(b->front[0]);
    free(b->front[1]);
    free(b->next);
    free(b);
}

/* v's slot in m: its own, or the empty one where it would go. */
static size_t vm_slot(const vmap *m, uint32_t v, uint32_t stamp)
{
    size_t mask = m->cap - 1, i = (v * 0x9e3779b1u) & mask;
    while (m->s[i].stamp == stamp && m->s[i].key != v)
        i = (i + 1) & mask;
    return i;
}

static int vm_has(const vmap *m, uint32_t v, uint32_t stamp, uint32_t *link, unsigned *level)
{
    size_t i = vm_slot(m, v, stamp);
    if (m->s[i].stamp != stamp)
        return 0;
    if (link != NULL)
        *link = m->s[i].link;
    if (level != NULL)
        *level = m->s[i].level;
    return 1;
}

/* Room for one more at load <= 1/2; the search's entries move along. */
static int vm_reserve(vmap *m, uint32_t stamp)
{
    vmap g;
    if (m->cap != 0 && (m->n + 1) * 2 <= m->cap)
        return CAIRN_OK;
    g.cap = m->cap ? m->cap * 2 : MAP_MIN;
    g.n = 0;
    if ((g.s = calloc(g.cap, sizeof *g.s)) == NULL) /* stamp 0: empty */
        return CAIRN_ENOMEM;
    for (size_t i = 0; i < m->cap; i++)
        if (m->s[i].stamp == stamp) {
            g.s[vm_slot(&g, m->s[i].key, stamp)] = m->s[i];
            g.n++;
        }
    free(m->s);
    *m = g;
    return CAIRN_OK;
}

/* Add v (absent) to m. */
static int vm_put(vmap *m, uint32_t v, uint32_t link, unsigned level, uint32_t stamp)
{
    if (vm_reserve(m, stamp) != CAIRN_OK)
        return CAIRN_ENOMEM;
    vslot *x = &m->s[vm_slot(m, v, stamp)];
    x->key = v;
    x->link = link;
    x->stamp = stamp;
    x->level = level;
    m->n++;
    return CAIRN_OK;
}

/* One search's working state. */
typedef struct walk {
    struct rbfs *b;
    size_t nfront[2];
    unsigned depth[2];
    uint32_t best_meet, best_len;
} walk;

static int push(struct rbfs *b, size_t *nn, uint32_t v)
{
    if (*nn == b->cap) {
        size_t cap = b->cap * 2;
        uint32_t *a = realloc(b->front[0], cap * sizeof *a), *c;
        if (a == NULL)
            return CAIRN_ENOMEM;
        b->front[0] = a;
        if ((a = realloc(b->front[1], cap * sizeof *a)) == NULL)
            return CAIRN_ENOMEM;
        b->front[1] = a;
        if ((c = realloc(b->next, cap * sizeof *c)) == NULL)
            return CAIRN_ENOMEM;
        b->next = c;
        b->cap = cap;
    }
    b->next[(*nn)++] = v;
    return CAIRN_OK;
}

/* Reach u from v on side s at level lv: record it, check the other side. */
static int reach(walk *w, int s, uint32_t v, uint32_t u, unsigned lv, size_t *nn)
{
    struct rbfs *b = w->b;
    vmap *m = &b->side[s];
    unsigned olv;
    size_t i = vm_slot(m, u, b->stamp);
    if (m->s[i].stamp == b->stamp)
        return CAIRN_OK; /* seen on this side */
    if ((m->n + 1) * 2 <= m->cap) { /* the usual case: no growth, one probe */
        m->s[i].key = u;
        m->s[i].link = v;
        m->s[i].stamp = b->stamp;
        m->s[i].level = lv;
        m->n++;
    } else if (vm_put(m, u, v, lv, b->stamp) != CAIRN_OK) {
        return CAIRN_ENOMEM;
    }
    if (vm_has(&b->side[!s], u, b->stamp, NULL, &olv)) {
        if (lv + olv < w->best_len) {
            w->best_len = lv + olv;
            w->best_meet = u;
        }
        return CAIRN_OK;
    }
    return push(b, nn, u);
}

/* The frontier's rows lie scattered through the mapping, one or two cache
 * misses each; asking for them all before walking any lets the misses
 * overlap instead of queueing one behind the other. */
static void prefetch_rows(const cairn_reflex *r, const walk *w, int s)
{
    const uint32_t *f = w->b->front[s];
    for (size_t k = 0; k < w->nfront[s]; k++)
        if (f[k] < r->base_n)
            cairn__gi_prefetch_row(&r->gi, f[k], s, 0);
    for (size_t k = 0; k < w->nfront[s]; k++)
        if (f[k] < r->base_n)
            cairn__gi_prefetch_row(&r->gi, f[k], s, 1);
}

static int expand(const cairn_reflex *r, walk *w, int s)
{
    struct rbfs *b = w->b;
    size_t nn = 0;
    unsigned lv = ++w->depth[s];
    int rc = CAIRN_OK;
    if (w->nfront[s] > 1)
        prefetch_rows(r, w, s);
    for (size_t k = 0; k < w->nfront[s] && rc == CAIRN_OK; k++) {
        uint32_t v = b->front[s][k], n = 0, first;
        const uint32_t *nb = NULL, *eids;
        if (v < r->base_n)
            nb = s == 0 ? cairn__gi_out(&r->gi, v, &first, &n) : cairn__gi_in(&r->gi, v, &eids, &n);
        for (uint32_t j = 0; j < n && rc == CAIRN_OK; j++)
            rc = reach(w, s, v, nb[j], lv, &nn);
        if (v < r->adj_cap && r->n_de != 0) {
            for (uint32_t e = s == 0 ? r->dout[v] : r->din[v]; e != 0 && rc == CAIRN_OK;) {
                const redge *d = &r->de[e - 1 - r->base_m];
                rc = reach(w, s, v, s == 0 ? d->dst : d->src, lv, &nn);
                e = s == 0 ? d->next_out : d->next_in;
            }
        }
    }
    uint32_t *t = b->front[s];
    b->front[s] = b->next;
    b->next = t;
    w->nfront[s] = nn;
    return rc;
}

/* The handle's scratch, made on first use, with a fresh stamp. */
static int begin(cairn_reflex *r, struct rbfs **out)
{
    struct rbfs *b = r->bfs;
    if (b == NULL) {
        if ((b = calloc(1, sizeof *b)) == NULL)
            return CAIRN_ENOMEM;
        r->bfs = b;
    }
    if (b->cap == 0) {
        b->front[0] = malloc(FRONT_MIN * sizeof(uint32_t));
        b->front[1] = malloc(FRONT_MIN * sizeof(uint32_t));
        b->next = malloc(FRONT_MIN * sizeof(uint32_t));
        if (b->front[0] == NULL || b->front[1] == NULL || b->next == NULL) {
            free(b->front[0]);
            free(b->front[1]);
            free(b->next);
            b->front[0] = b->front[1] = b->next = NULL;
            return CAIRN_ENOMEM;
        }
        b->cap = FRONT_MIN;
    }
    if (++b->stamp == 0) { /* wrapped: every old stamp could match again */
        for (int s = 0; s < 2; s++)
            if (b->side[s].s != NULL)
                memset(b->side[s].s, 0, b->side[s].cap * sizeof *b->side[s].s);
        b->stamp = 1;
    }
    b->side[0].n = b->side[1].n = 0;
    *out = b;
    return CAIRN_OK;
}

/* A search that grew the scratch past KEEP_MAX gives the memory back. */
static void end(struct rbfs *b)
{
    for (int s = 0; s < 2; s++)
        if (b->side[s].cap > KEEP_MAX) {
            free(b->side[s].s);
            memset(&b->side[s], 0, sizeof b->side[s]);
        }
    if (b->cap > KEEP_MAX) {
        free(b->front[0]);
        free(b->front[1]);
        free(b->next);
        b->front[0] = b->front[1] = b->next = NULL;
        b->cap = 0;
    }
}

int cairn__bfs_path(cairn_reflex *r, uint32_t from, uint32_t to, unsigned max_depth,
                    uint32_t **path, size_t *n)
{
    walk w;
    int rc;
    memset(&w, 0, sizeof w);
    w.best_len = UINT32_MAX;
    *path = NULL;
    *n = 0;
    rc = begin(r, &w.b);
    if (rc == CAIRN_OK)
        rc = vm_put(&w.b->side[0], from, from, 0, w.b->stamp);
    if (rc == CAIRN_OK)
        rc = vm_put(&w.b->side[1], to, to, 0, w.b->stamp);
    if (rc != CAIRN_OK)
        return rc;
    if (from == to)
        w.best_len = 0, w.best_meet = from;
    w.b->front[0][0] = from;
    w.b->front[1][0] = to;
    w.nfront[0] = w.nfront[1] = 1;
    while (rc == CAIRN_OK && w.best_len == UINT32_MAX && w.depth[0] + w.depth[1] < max_depth &&
           w.nfront[0] > 0 && w.nfront[1] > 0)
        rc = expand(r, &w, w.nfront[0] <= w.nfront[1] ? 0 : 1);
    if (rc == CAIRN_OK && w.best_len != UINT32_MAX) {
        uint32_t *p = malloc((w.best_len + 1) * sizeof *p), v, link = 0, st = w.b->stamp;
        unsigned lv = 0;
        if (p == NULL) {
            rc = CAIRN_ENOMEM;
        } else {
            (void)vm_has(&w.b->side[0], w.best_meet, st, NULL, &lv);
            v = w.best_meet;
            for (unsigned k = lv + 1; k-- > 0;) { /* back to the source */
                p[k] = v;
                (void)vm_has(&w.b->side[0], v, st, &link, NULL);
                v = link;
            }
            v = w.best_meet;
            for (unsigned k = lv + 1; k <= w.best_len; k++) { /* on to the target */
                (void)vm_has(&w.b->side[1], v, st, &link, NULL);
                v = link;
                p[k] = v;
            }
            *path = p;
            *n = w.best_len + 1;
        }
    }
    end(w.b);
    return rc;
}
