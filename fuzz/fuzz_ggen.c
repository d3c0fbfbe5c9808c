/*
 * fuzz_ggen.c - the graph generation reader (engine/graph/ggen.c) over
 * arbitrary bytes: cairn__gg_parse with a visitor that reads every row
 * it is handed.
 *
 * Invariants: no crash, no read outside the buffer (ASan), no leak; a
 * rejected file says why; an accepted one hands over exactly the rows its
 * header counts, numbered as the format says (overlays ascending below
 * `first`, then first, first + 1, ...), every node and name reference
 * below the table's end, every string without NUL, and parsing twice gives
 * the same answer. Sums (the header's and the body's) are repaired in the
 * second pass (fuzz.h) so mutations reach the row checks behind them.
 */
#include "fuzz.h"

#include "ggen.h"

typedef struct seen {
    const gg_head *h;
    uint32_t rows[GG_TABLES];
    int64_t last[GG_TABLES];
    uint64_t bytes;
} seen;

static void number(seen *s, int t, uint32_t no)
{
    uint32_t first = s->h->first[t];
    FUZZ_CHECK(no < first + s->h->count[t]);
    if (no < first)
        FUZZ_CHECK((int64_t)no > s->last[t] && s->last[t] < (int64_t)first);
    else
        FUZZ_CHECK((int64_t)no == (s->last[t] < (int64_t)first ? (int64_t)first : s->last[t] + 1));
    s->last[t] = no;
    s->rows[t]++;
}

static void eps(const seen *s, const uint32_t *e, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        FUZZ_CHECK(e[i] < s->h->first[GG_NAMES] + s->h->count[GG_NAMES]);
}

static void text(seen *s, const char *p, uint32_t len)
{
    FUZZ_CHECK(len == 0 || memchr(p, 0, len) == NULL);
    for (uint32_t i = 0; i < len; i++)
        s->bytes += (uint8_t)p[i];
}

static int v_name(void *u, uint32_t no, const char *p, uint32_t len)
{
    seen *s = u;
    FUZZ_CHECK(no >= s->h->first[GG_NAMES] && len <= CAIRN_LABEL_MAX);
    number(s, GG_NAMES, no);
    text(s, p, len);
    return 0;
}

static int v_node(void *u, uint32_t no, const gi_node *n)
{
    seen *s = u;
    number(s, GG_NODES, no);
    FUZZ_CHECK(n->type < CAIRN_NODE_TYPES);
    FUZZ_CHECK(no < s->h->first[GG_NODES] ? n->label_len == 0 && n->fold_len == 0 : n->label_len > 0);
    text(s, n->label, n->label_len);
    text(s, n->fold, n->fold_len);
    eps(s, n->eps, n->n_eps);
    return 0;
}

static int v_edge(void *u, uint32_t no, const gi_edge *x)
{
    seen *s = u;
    uint32_t nodes = s->h->first[GG_NODES] + s->h->count[GG_NODES];
    number(s, GG_EDGES, no);
    FUZZ_CHECK(x->src < nodes && x->dst < nodes && x->type < CAIRN_EDGE_TYPES);
    FUZZ_CHECK(x->weight >= 0 && x->weight <= 1);
    eps(s, x->eps, x->n_eps);
    return 0;
}

static int v_episode(void *u, uint32_t no, const gi_episode *x)
{
    seen *s = u;
    number(s, GG_EPISODES, no);
    FUZZ_CHECK(x->name < s->h->first[GG_NAMES] + s->h->count[GG_NAMES] && x->outcome <= 2);
    return 0;
}

static int v_pattern(void *u, uint32_t no, const gi_pattern *p)
{
    seen *s = u;
    number(s, GG_PATTERNS, no);
    text(s, p->name.p, p->name.len);
    text(s, p->desc.p, p->desc.len);
    text(s, p->trigger.p, p->trigger.len);
    text(s, p->action.p, p->action.len);
    eps(s, p->eps, p->n_eps);
    return 0;
}

static const gg_visit visit = {v_name, v_node, v_edge, v_episode, v_pattern};

static void one(const uint8_t *data, size_t size)
{
    uint64_t *buf = malloc((size + 8) & ~(size_t)7), bad = 0, bad2 = 0;
    gg_head h, h2;
    seen s;
    cairn__err e, e2;
    int rc, rc2;
    if (buf == NULL)
        return;
    memcpy(buf, data, size);
    memset(&s, 0, sizeof s);
    s.h = &h;
    for (int t = 0; t < GG_TABLES; t++)
        s.last[t] = -1;
    e.msg[0] = 0;
    rc = cairn__gg_parse((const uint8_t *)buf, size, "fuzz.cgg", &h, &visit, &s, &bad, &e);
    if (rc == CAIRN_OK) {
        for (int t = 0; t < GG_TABLES; t++)
            FUZZ_CHECK(s.rows[t] == h.count[t]);
        FUZZ_CHECK(h.base < h.covered && h.file_len == size);
    } else {
        FUZZ_CHECK(e.msg[0] != 0 && bad <= size);
    }
    rc2 = cairn__gg_parse((const uint8_t *)buf, size, "fuzz.cgg", &h2, NULL, NULL, &bad2, &e2);
    FUZZ_CHECK(rc2 == rc && bad2 == bad);
    free(buf);
}

/* The header's sum and the body's. */
static void repair(uint8_t *p, size_t size)
{
    if (size < GG_HEAD)
        return;
    put_le64(p + 32, size - GG_HEAD);
    put_le64(p + 40, XXH3_64bits(p + GG_HEAD, size - GG_HEAD));
    fuzz_fix_filehdr(p, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy;
    if (size > (8u << 20))
        return 0;
    one(data, size);
    if ((copy = fuzz_dup(data, size)) == NULL)
        return 0;
    repair(copy, size);
    one(copy, size);
    free(copy);
    return 0;
}
