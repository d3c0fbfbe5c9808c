/*
 * fuzz_gimage.c - the graph file reader (engine/graph/gimage.c) over
 * arbitrary bytes: cairn__gi_parse, then, when it accepts, every accessor
 * the engine uses on a file it trusts.
 *
 * Invariants: no crash, no read outside the buffer (ASan), no leak; a
 * rejected file says why; an accepted one has every node's strings,
 * episode references and CSR rows inside the file, every out-edge's
 * source found where its row is, every in-edge is an out-edge of its source, the id
 * table and the label index answer with a node of the file or none.
 * Checksums are repaired in the second pass (fuzz.h) so mutations reach
 * the structural checks behind them.
 */
#include "fuzz.h"

#include "gimage.h"

static void walk(gimage *g)
{
    for (uint64_t v = 0; v < g->n_nodes && v < 4096; v++) {
        gi_node n;
        uint32_t first, cnt, icnt;
        const uint32_t *dst, *src, *eids;
        cairn__gi_node(g, (uint32_t)v, &n);
        FUZZ_CHECK(n.label_len > 0 && n.label[n.label_len] == 0 && n.fold[n.fold_len] == 0);
        FUZZ_CHECK(n.type < CAIRN_NODE_TYPES);
        for (uint32_t k = 0; k < n.n_eps; k++)
            FUZZ_CHECK(n.eps[k] < g->n_names);
        /* A file whose sums were repaired after a mutation may hold a
         * wrong table: the lookups must stay in bounds, not be right. */
        uint32_t found = cairn__gi_find_key(g, n.key);
        FUZZ_CHECK(found == GI_NONE || found < g->n_nodes);
        uint32_t byl = cairn__gi_find_label(g, n.fold, n.fold_len);
        FUZZ_CHECK(byl == GI_NONE || byl < g->n_nodes);
        for (uint32_t q = 1; q <= 4 && q <= n.fold_len; q++) { /* each query length's path */
            byl = cairn__gi_find_label(g, n.fold + n.fold_len - q, q);
            FUZZ_CHECK(byl == GI_NONE || byl < g->n_nodes);
        }
        dst = cairn__gi_out(g, (uint32_t)v, &first, &cnt);
        for (uint32_t j = 0; j < cnt; j++) {
            gi_edge e;
            cairn__gi_edge(g, first + j, &e);
            FUZZ_CHECK(e.src == v && e.dst == dst[j] && dst[j] < g->n_nodes);
        }
        src = cairn__gi_in(g, (uint32_t)v, &eids, &icnt);
        for (uint32_t j = 0; j < icnt; j++) {
            gi_edge e;
            cairn__gi_edge(g, eids[j], &e);
            FUZZ_CHECK(e.src == src[j] && e.dst == v);
        }
    }
    for (uint32_t i = 0, src = 0; i < g->n_edges && i < 4096; i++) { /* a walk and a search agree */
        gi_edge a, b;
        cairn__gi_edge_next(g, i, &src, &a);
        cairn__gi_edge(g, i, &b);
        FUZZ_CHECK(a.src == b.src && a.src < g->n_nodes && a.dst == b.dst && a.type == b.type);
    }
    for (uint64_t i = 0; i < g->n_patterns; i++) {
        gi_pattern p;
        cairn__gi_pattern(g, (uint32_t)i, &p);
        FUZZ_CHECK(p.name.p[p.name.len] == 0 && p.action.p[p.action.len] == 0);
    }
    for (uint64_t i = 0; i < g->n_episodes; i++) {
        gi_episode e;
        cairn__gi_episode(g, (uint32_t)i, &e);
        FUZZ_CHECK(e.name < g->n_names && e.outcome <= 2);
        gi_str s = cairn__gi_name(g, e.name);
        FUZZ_CHECK(s.p[s.len] == 0);
    }
    (void)cairn__gi_find_label(g, "ab", 2);
    (void)cairn__gi_find_label(g, "error", 5);
}

static void one(const uint8_t *data, size_t size)
{
    uint64_t *buf = malloc((size + 8) & ~(size_t)7);
    gimage g;
    cairn__err e;
    if (buf == NULL)
        return;
    memcpy(buf, data, size);
    memset(&g, 0, sizeof g);
    g.map = (uint8_t *)buf;
    g.len = size;
    strcpy(g.name, "fuzz.cgx");
    e.msg[0] = 0;
    if (cairn__gi_parse(&g, &e) == CAIRN_OK)
        walk(&g);
    else
        FUZZ_CHECK(e.msg[0] != 0);
    free(buf);
}

/* The sums of a graph file recomputed where its version keeps them:
 * versions 4 and 5 have the common file header and a 176-byte header in
 * all (the graph header's sum at 48, the common one at 56), version 3 a
 * 160-byte header (its sum at 152), versions 1 and 2 a 128-byte one (at
 * 120). The section table follows the header (31 sections in version 5,
 * 16 before); its last sum slot covers all before it, the blob's sum is
 * in the header. */
static void repair(uint8_t *p, size_t size)
{
    size_t head, blob_sum, nsec;
    if (size < 176 + 16 * 24)
        return;
    if (get_le16(p + 10) == 64) {
        head = 176;
        blob_sum = 128;
        nsec = get_le16(p + 8) >= 5 ? 31 : 16;
    } else {
        head = get_le32(p + 8) >= 3 ? 160 : 128;
        blob_sum = 112;
        nsec = 16;
    }
    if (size < head + nsec * 24)
        return;
    for (size_t s = 0; s < nsec; s++) {
        uint8_t *t = p + head + 24 * s;
        uint64_t off = get_le64(t), len = get_le64(t + 8);
        if (off > size || len > size - off)
            continue;
        uint64_t sum = XXH3_64bits(p + off, (size_t)len);
        if (s == nsec - 1)
            put_le64(p + blob_sum, sum);
        else
            put_le64(t + 16, sum);
    }
    if (head == 176) {
        put_le64(p + 48, XXH3_64bits(p + 64, 176 - 64));
        put_le64(p + 56, XXH3_64bits(p, 56));
    } else if (head == 160) {
        put_le64(p + 152, XXH3_64bits(p, 152));
    } else {
        put_le64(p + 120, XXH3_64bits(p, 120));
    }
    put_le64(p + head + nsec * 24 - 8, XXH3_64bits(p, head + nsec * 24 - 8));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy;
    if (size > (8u << 20))
        return 0;
    one(data, size);
    copy = malloc(size ? size : 1);
    if (copy == NULL)
        return 0;
    memcpy(copy, data, size);
    repair(copy, size);
    one(copy, size);
    free(copy);
    return 0;
}
