/*
 * gimage.c - see gimage.h; the bytes are format-spec/graph.md.
 *
 * Layout, all little-endian, every section 8-byte aligned:
 *   common file header (64) | graph header (112) | section table (31 x 24) |
 *   the 31 sections in order: 17 packed columns (the nodes' and edges'
 *   fields), the CSR arrays, the id table, the 4-gram index, the rest
 * Each section table entry is (offset, length, XXH3-64 of the section);
 * the table's last sum slot covers everything before it.
 */
#include "gimage.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "bytes.h"
#include "filehdr.h"
#include "io.h"
#include "mix64.h"
#include "seqfile.h"

#define GI_MAGIC "CAIRNGX1"
#define GI_HEAD 176    /* the common file header, then the graph header */
#define GI_EXT_SUM 48  /* XXH3-64 of the graph header, bytes [64, GI_HEAD) */
#define GI_BLOB_SUM 128
#define GI_V3_HEAD 160 /* version 3: the header's own sum at 152 */
#define GI_OLD_HEAD 128 /* versions 1 and 2: no binding, the sum at 120 */
#define GI_TABLE (GI_SECTIONS * 24)
#define GI_V4_TABLE (16 * 24) /* versions 1 to 4: 16 sections */
#define GI_FIRST_FILEHDR 4    /* the first version with the common file header */
#define GI_COL_HEAD 16        /* a packed column's base and width */
#define GI_PATTERN 88
#define GI_EPISODE 32
#define GI_LIMIT 0xfffffffeu /* counts and blob offsets are u32 */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the graph file is little-endian and read in place"
#endif


static uint64_t pad8(uint64_t n)
{
    return (n + 7) & ~(uint64_t)7;
}

static uint32_t u32at(const uint8_t *p, uint64_t i)
{
    return get_le32(p + 4 * i);
}

/* ---- 4-grams ------------------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

size_t cairn__gi_grams(const char *s, size_t len, int pad, uint32_t *out)
{
    size_t n = 0, k = 0, end = len + (pad != 0);
    if (end < 4)
        return 0;
    for (size_t i = 0; i + 4 <= end; i++) {
        uint32_t g = 0;
        for (size_t j = i; j < i + 4; j++)
            g = g << 8 | (j < len ? (uint8_t)s[j] : 0);
        out[n++] = g;
    }
    qsort(out, n, sizeof *out, cmp_u32);
    for (size_t i = 0; i < n; i++)
        if (k == 0 || out[k - 1] != out[i])
            out[k++] = out[i];
    return k;
}

/* ---- reading ------------------------------------------------------------- */

void cairn__gi_close(gimage *g)
{
    if (g->map != NULL)
        munmap(g->map, g->len);
    memset(g, 0, sizeof *g);
}

/* A structural problem at `at` (a place in the mapping; NULL: the header). */
static int bad(gimage *g, cairn__err *e, const void *at, const char *what)
{
    g->bad_off = at != NULL ? (uint64_t)((const uint8_t *)at - g->map) : 0;
    return cairn__fail(e, CAIRN_ECORRUPT, "%s: %s at offset %" PRIu64, g->name, what, g->bad_off);
}

static int in_blob(const gimage *g, uint64_t off, uint64_t len)
{
    return off <= g->sec_len[GI_BLOB] && len <= g->sec_len[GI_BLOB] - off;
}

/* An episode list: (offset, count) in EPREFS, each a u32 as read. */
static int eps_ok(const gimage *g, uint64_t off, uint64_t n)
{
    uint64_t have = g->sec_len[GI_EPREFS] / 4;
    return off <= UINT32_MAX && n <= UINT32_MAX && off <= have && n <= have - off;
}

/* A string of the blob: len bytes at off, then a NUL. */
static int str_ok(const gimage *g, uint64_t off, uint64_t len)
{
    return off < g->sec_len[GI_BLOB] && len < g->sec_len[GI_BLOB] - off &&
           g->sec[GI_BLOB][off + len] == 0;
}

/* Value i of packed column c. */
static uint64_t col_at(const gimage *g, int c, uint64_t i)
{
    const gi_col *k = &g->col[c];
    const uint8_t *p = k->p + i * k->width;
    uint64_t v;
    switch (k->width) {
    case 0: v = 0; break;
    case 1: v = p[0]; break;
    case 2: v = get_le16(p); break;
    case 3: v = get_le16(p) | (uint64_t)p[2] << 16; break;
    case 4: v = get_le32(p); break;
    case 5: v = get_le32(p) | (uint64_t)p[4] << 32; break;
    case 6: v = get_le32(p) | (uint64_t)get_le16(p + 4) << 32; break;
    case 7: v = get_le32(p) | (uint64_t)get_le16(p + 4) << 32 | (uint64_t)p[6] << 48; break;
    default: v = get_le64(p); break;
    }
    return k->base + v;
}

/* Where value i of column c is, for a problem's offset. */
static const uint8_t *col_place(const gimage *g, int c, uint64_t i)
{
    return g->col[c].p + i * g->col[c].width;
}

/* The node whose out-edges hold edge i (< n_edges): the last v with
 * OUT_OFF[v] <= i. */
static uint32_t edge_src(const gimage *g, uint64_t i)
{
    uint64_t lo = 0, hi = g->n_nodes;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (u32at(g->sec[GI_OUT_OFF], mid) <= i)
            lo = mid;
        else
            hi = mid;
    }
    return (uint32_t)lo;
}

/* A CSR offset array: n + 1 entries, from 0 up to total, never down. */
static int csr_ok(const uint8_t *off, uint64_t n, uint64_t total)
{
    uint32_t prev = 0;
    if (u32at(off, 0) != 0 || u32at(off, n) != total)
        return 0;
    for (uint64_t i = 1; i <= n; i++) {
        uint32_t v = u32at(off, i);
        if (v < prev)
            return 0;
        prev = v;
    }
    return 1;
}

/* One (target, source, edge) triple of the in-lists as a 64-bit value:
 * the lists hold the out-edges, each once, when the sums of both sides'
 * triples agree. Sequential reads on both sides: checking each in-edge
 * against its out-edge read two arrays at random, a third of the open of a
 * large graph. */
static uint64_t triple(uint64_t target, uint64_t source, uint64_t edge)
{
    return cairn__mix64((target << 32 | source) ^ edge * 0x9E3779B97F4A7C15ull);
}

static int check_rows(gimage *g, cairn__err *e)
{
    const uint8_t *blob = g->sec[GI_BLOB];
    uint64_t out_sum = 0, in_sum = 0;
    for (uint64_t i = 0; i < g->n_nodes; i++) {
        if (col_at(g, GI_N_LABEL_LEN, i) == 0 ||
            !str_ok(g, col_at(g, GI_N_LABEL, i), col_at(g, GI_N_LABEL_LEN, i)))
            return bad(g, e, col_place(g, GI_N_LABEL, i), "a node's label is out of range");
        if (!str_ok(g, col_at(g, GI_N_FOLD, i), col_at(g, GI_N_FOLD_LEN, i)))
            return bad(g, e, col_place(g, GI_N_FOLD, i), "a node's folded label is out of range");
        if (!eps_ok(g, col_at(g, GI_N_EPS, i), col_at(g, GI_N_NEPS, i)))
            return bad(g, e, col_place(g, GI_N_EPS, i), "a node's episodes are out of range");
        if (col_at(g, GI_N_TYPE, i) >= CAIRN_NODE_TYPES)
            return bad(g, e, col_place(g, GI_N_TYPE, i), "a node's type is out of range");
    }
    for (uint64_t v = 0; v < g->n_nodes; v++) {
        uint32_t lo = u32at(g->sec[GI_OUT_OFF], v), hi = u32at(g->sec[GI_OUT_OFF], v + 1);
        for (uint64_t i = lo; i < hi; i++) {
            uint64_t t = col_at(g, GI_E_TYPE, i);
            if (t >= CAIRN_EDGE_TYPES)
                return bad(g, e, col_place(g, GI_E_TYPE, i), "an edge's type is out of range");
            if (!eps_ok(g, col_at(g, GI_E_EPS, i), col_at(g, GI_E_NEPS, i)))
                return bad(g, e, col_place(g, GI_E_EPS, i), "an edge's episodes are out of range");
            if (i > lo) { /* sorted by (dst, type) within the source, no two equal */
                uint32_t d = u32at(g->sec[GI_OUT_DST], i), pd = u32at(g->sec[GI_OUT_DST], i - 1);
                if (pd > d || (pd == d && col_at(g, GI_E_TYPE, i - 1) >= t))
                    return bad(g, e, g->sec[GI_OUT_DST] + 4 * i, "edges are not in order");
            }
            out_sum += triple(u32at(g->sec[GI_OUT_DST], i), v, i);
        }
    }
    for (uint64_t v = 0; v < g->n_nodes; v++) {
        uint32_t lo = u32at(g->sec[GI_IN_OFF], v), hi = u32at(g->sec[GI_IN_OFF], v + 1);
        for (uint64_t j = lo; j < hi; j++) {
            uint32_t s = u32at(g->sec[GI_IN_SRC], j), id = u32at(g->sec[GI_IN_EID], j);
            if (s >= g->n_nodes || id >= g->n_edges)
                return bad(g, e, g->sec[GI_IN_SRC] + 4 * j, "an in-edge is out of range");
            if (j > lo && u32at(g->sec[GI_IN_EID], j - 1) >= id) /* by edge number */
                return bad(g, e, g->sec[GI_IN_EID] + 4 * j, "in-edges are not in order");
            in_sum += triple(v, s, id);
        }
    }
    if (in_sum != out_sum)
        return bad(g, e, g->sec[GI_IN_SRC], "the in-edges are not the out-edges");
    for (uint64_t i = 0; i < g->tcap; i++) {
        uint32_t v = u32at(g->sec[GI_IDTAB], i);
        if (v > g->n_nodes)
            return bad(g, e, g->sec[GI_IDTAB] + 4 * i, "an id table slot is out of range");
    }
    for (uint64_t i = 0; i < g->n_gram; i++)
        if (i > 0 && u32at(g->sec[GI_GRAM_KEY], i) <= u32at(g->sec[GI_GRAM_KEY], i - 1))
            return bad(g, e, g->sec[GI_GRAM_KEY] + 4 * i, "4-grams are not in order");
    for (uint64_t i = 0; i < g->n_gram; i++) {
        uint32_t lo = u32at(g->sec[GI_GRAM_OFF], i), hi = u32at(g->sec[GI_GRAM_OFF], i + 1);
        if (lo == hi) /* a key is listed only for the labels holding it */
            return bad(g, e, g->sec[GI_GRAM_OFF] + 4 * i, "a 4-gram has no postings");
        for (uint32_t j = lo; j < hi; j++)
            if (u32at(g->sec[GI_GRAM_POST], j) >= g->n_nodes ||
                (j > lo && u32at(g->sec[GI_GRAM_POST], j) <= u32at(g->sec[GI_GRAM_POST], j - 1)))
                return bad(g, e, g->sec[GI_GRAM_POST] + 4 * (uint64_t)j,
                           "a 4-gram posting is out of range or order");
    }
    for (uint64_t i = 0; i < g->sec_len[GI_EPREFS] / 4; i++)
        if (u32at(g->sec[GI_EPREFS], i) >= g->n_names)
            return bad(g, e, g->sec[GI_EPREFS] + 4 * i, "an episode reference is out of range");
    for (uint64_t i = 0; i < g->n_names; i++) {
        uint32_t o = u32at(g->sec[GI_NAMES], 2 * i), l = u32at(g->sec[GI_NAMES], 2 * i + 1);
        if (!in_blob(g, o, (uint64_t)l + 1) || blob[o + l] != 0)
            return bad(g, e, g->sec[GI_NAMES] + 8 * i, "a name is out of range");
    }
    for (uint64_t i = 0; i < g->n_episodes; i++) {
        const uint8_t *p = g->sec[GI_EPISODES] + i * GI_EPISODE;
        if (get_le32(p) >= g->n_names || get_le32(p + 4) > 2 || get_le32(p + 8) > 1)
            return bad(g, e, p, "an episode row is out of range");
    }
    for (uint64_t i = 0; i < g->n_patterns; i++) {
        const uint8_t *p = g->sec[GI_PATTERNS] + i * GI_PATTERN;
        for (int k = 0; k < 4; k++) {
            uint32_t o = get_le32(p + 40 + 8 * k), l = get_le32(p + 44 + 8 * k);
            if (!in_blob(g, o, (uint64_t)l + 1) || blob[o + l] != 0)
                return bad(g, e, p, "a pattern string is out of range");
        }
        if (!eps_ok(g, get_le32(p + 72), get_le32(p + 76)))
            return bad(g, e, p, "a pattern row is out of range");
    }
    return CAIRN_OK;
}

int cairn__gi_parse(gimage *g, cairn__err *e)
{
    const uint8_t *h = g->map;
    uint64_t want[GI_SECTIONS], at = GI_HEAD + GI_TABLE;
    int rc;

    if (((uintptr_t)g->map & 7) != 0)
        return cairn__fail(e, CAIRN_EINVAL, "%s: not 8-byte aligned", g->name);
    if (g->len < GI_OLD_HEAD + GI_V4_TABLE || memcmp(h, GI_MAGIC, 8) != 0)
        return bad(g, e, NULL, "not a graph file");
    /* Versions 1..3 kept a u32 version at 8 (so 0 at 10, where the common
     * header keeps its length). Their sums first, where the version keeps
     * them: a damaged version byte is damage, not another build's file. */
    if (get_le16(h + 10) == 0 && get_le32(h + 8) >= 1 && get_le32(h + 8) < GI_FIRST_FILEHDR) {
        size_t head = get_le32(h + 8) < 3 ? GI_OLD_HEAD : GI_V3_HEAD;
        g->version = get_le32(h + 8);
        if (g->len < head + GI_V4_TABLE ||
            XXH3_64bits(h, head + GI_V4_TABLE - 8) != get_le64(h + head + GI_V4_TABLE - 8) ||
            XXH3_64bits(h, head - 8) != get_le64(h + head - 8)) {
            return cairn__fail(e, CAIRN_ECHECKSUM, "%s: header checksum mismatch", g->name);
        }
        g->bad_off = 8;
        return cairn__fail(e, CAIRN_EVERSION, "%s: version %" PRIu32 ", this build reads %d%s",
                           g->name, g->version, GI_VERSION,
                           g->version < 3 ? " (an older file is not bound to its log)"
                                          : " (an older file has no common file header)");
    }
    g->version = get_le16(h + 8);
    if ((rc = cairn__filehdr_check(h, g->len, GI_MAGIC, GI_VERSION, g->name, e)) != CAIRN_OK) {
        g->bad_off = rc == CAIRN_EVERSION ? 8 : 0;
        return rc;
    }
    if (g->version == GI_FIRST_FILEHDR) { /* its sums where version 4 keeps them, then older */
        if (g->len < GI_HEAD + GI_V4_TABLE ||
            XXH3_64bits(h + FILEHDR_SIZE, GI_HEAD - FILEHDR_SIZE) != get_le64(h + GI_EXT_SUM) ||
            XXH3_64bits(h, GI_HEAD + GI_V4_TABLE - 8) != get_le64(h + GI_HEAD + GI_V4_TABLE - 8))
            return cairn__fail(e, CAIRN_ECHECKSUM, "%s: header checksum mismatch", g->name);
        g->bad_off = 8;
        return cairn__fail(e, CAIRN_EVERSION,
                           "%s: version 4, this build reads %d (an older file keeps rows of 64 "
                           "and 48 bytes for nodes and edges)", g->name, GI_VERSION);
    }
    if (g->version != GI_VERSION) { /* 1..3 with a common header was never written */
        g->bad_off = 8;
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: version %" PRIu32 " with a common header",
                           g->name, g->version);
    }
    if (g->len < GI_HEAD + GI_TABLE ||
        XXH3_64bits(h + FILEHDR_SIZE, GI_HEAD - FILEHDR_SIZE) != get_le64(h + GI_EXT_SUM) ||
        XXH3_64bits(h, GI_HEAD + GI_TABLE - 8) != get_le64(h + GI_HEAD + GI_TABLE - 8))
        return cairn__fail(e, CAIRN_ECHECKSUM, "%s: header checksum mismatch", g->name);
    cairn__logbind_get(h + GI_BIND_OFF, &g->bind);
    g->covered = get_le64(h + 16);
    g->updated = (int64_t)get_le64(h + 32);
    g->skipped = get_le64(h + 40);
    g->n_nodes = get_le64(h + 64);
    g->n_edges = get_le64(h + 72);
    g->n_patterns = get_le64(h + 80);
    g->n_names = get_le64(h + 88);
    g->n_episodes = get_le64(h + 96);
    g->n_gram = get_le64(h + 104);
    g->n_post = get_le64(h + 112);
    g->tcap = get_le64(h + 120);
    if (get_le64(h + 168) != 0)
        return bad(g, e, h + 168, "reserved header bytes are not zero");
    if (get_le64(h + 24) != g->len)
        return bad(g, e, h + 24, "length differs from the header's");
    /* Bounded by the file before any product. */
    if (g->n_nodes > GI_LIMIT || g->n_edges > GI_LIMIT || g->n_patterns > GI_LIMIT ||
        g->n_names > GI_LIMIT || g->n_episodes > GI_LIMIT || g->n_gram > GI_LIMIT ||
        g->n_post > GI_LIMIT || g->tcap > GI_LIMIT || (g->tcap & (g->tcap - 1)) != 0 ||
        g->tcap < 16 || g->tcap < 2 * g->n_nodes)
        return bad(g, e, h + 64, "header counts out of range");
    for (int c = 0; c < GI_COLUMNS; c++)
        want[c] = UINT64_MAX; /* its own head says: below */
    want[GI_OUT_OFF] = want[GI_IN_OFF] = (g->n_nodes + 1) * 4;
    want[GI_OUT_DST] = want[GI_IN_SRC] = want[GI_IN_EID] = g->n_edges * 4;
    want[GI_IDTAB] = g->tcap * 4;
    want[GI_GRAM_KEY] = g->n_gram * 4;
    want[GI_GRAM_OFF] = (g->n_gram + 1) * 4;
    want[GI_GRAM_POST] = g->n_post * 4;
    want[GI_EPREFS] = UINT64_MAX; /* any multiple of 4 */
    want[GI_NAMES] = g->n_names * 8;
    want[GI_EPISODES] = g->n_episodes * GI_EPISODE;
    want[GI_PATTERNS] = g->n_patterns * GI_PATTERN;
    want[GI_BLOB] = UINT64_MAX;
    for (int s = 0; s < GI_SECTIONS; s++) {
        const uint8_t *t = h + GI_HEAD + 24 * s;
        uint64_t off = get_le64(t), len = get_le64(t + 8);
        if (off != at || len > g->len || off > g->len - len ||
            (want[s] != UINT64_MAX && len != want[s]) || (s == GI_EPREFS && len % 4 != 0) ||
            (s == GI_BLOB && len > GI_LIMIT))
            return bad(g, e, t, "section table out of range");
        g->sec[s] = h + off;
        g->sec_len[s] = len;
        at = off + pad8(len);
    }
    if (at != g->len)
        return bad(g, e, h + GI_HEAD, "sections do not fill the file");
    for (int s = 0; s < GI_SECTIONS; s++) {
        const uint8_t *t = h + GI_HEAD + 24 * s;
        uint64_t sum = s == GI_SECTIONS - 1 ? get_le64(h + GI_BLOB_SUM) : get_le64(t + 16);
        if (XXH3_64bits(g->sec[s], (size_t)g->sec_len[s]) != sum) {
            g->bad_off = (uint64_t)(g->sec[s] - h);
            return cairn__fail(e, CAIRN_ECHECKSUM, "%s: section %d checksum mismatch at offset %" PRIu64,
                               g->name, s, g->bad_off);
        }
    }
    for (int c = 0; c < GI_COLUMNS; c++) {
        const uint8_t *p = g->sec[c];
        uint64_t n = c < GI_E_TYPE ? g->n_nodes : g->n_edges;
        if (g->sec_len[c] < GI_COL_HEAD || p[8] > 8 || p[9] != 0 || p[10] != 0 || p[11] != 0 ||
            get_le32(p + 12) != 0 || g->sec_len[c] != GI_COL_HEAD + n * p[8])
            return bad(g, e, p, "a packed column is out of range");
        g->col[c].p = p + GI_COL_HEAD;
        g->col[c].base = get_le64(p);
        g->col[c].width = p[8];
    }
    if (!csr_ok(g->sec[GI_OUT_OFF], g->n_nodes, g->n_edges) ||
        !csr_ok(g->sec[GI_IN_OFF], g->n_nodes, g->n_edges) ||
        !csr_ok(g->sec[GI_GRAM_OFF], g->n_gram, g->n_post))
        return bad(g, e, !csr_ok(g->sec[GI_OUT_OFF], g->n_nodes, g->n_edges) ? g->sec[GI_OUT_OFF]
                         : !csr_ok(g->sec[GI_IN_OFF], g->n_nodes, g->n_edges) ? g->sec[GI_IN_OFF]
                                                                               : g->sec[GI_GRAM_OFF],
                   "an offset array is out of order");
    for (uint64_t i = 0; i < g->n_edges; i++)
        if (u32at(g->sec[GI_OUT_DST], i) >= g->n_nodes)
            return bad(g, e, g->sec[GI_OUT_DST] + 4 * i, "an out-edge is out of range");
    return check_rows(g, e);
}

void cairn__gi_close_keep_name(gimage *g)
{
    char name[GI_NAME_MAX];
    uint64_t off = g->bad_off;
    uint32_t version = g->version;
    cairn__fileid id = g->id;
    strcpy(name, g->name);
    cairn__gi_close(g);
    strcpy(g->name, name);
    g->bad_off = off;
    g->version = version;
    g->id = id;
}

int cairn__gi_open(gimage *g, const cairn_io *io, int dirfd, uint64_t max_seq, cairn__err *e)
{
    uint64_t covered = 0;
    int rc;

    memset(g, 0, sizeof *g);
    rc = cairn__seqfile_map(&cairn__seqfile_graph, io, dirfd, max_seq, g->name, sizeof g->name, &covered,
                            &g->map, &g->len, GI_OLD_HEAD + GI_V4_TABLE, &g->id, e);
    if (rc != CAIRN_OK)
        return rc;
    rc = cairn__gi_parse(g, e);
    if (rc == CAIRN_OK && g->covered != covered)
        rc = cairn__fail(e, CAIRN_ECORRUPT, "%s: covers seq %" PRIu64 ", not the one its name says",
                         g->name, g->covered);
    if (rc != CAIRN_OK)
        cairn__gi_close_keep_name(g);
    return rc;
}

static double getf64(const uint8_t *p)
{
    double d;
    uint64_t v = get_le64(p);
    memcpy(&d, &v, 8);
    return d;
}

static const uint32_t *eps_at(const gimage *g, uint32_t off)
{
    return (const uint32_t *)(const void *)(g->sec[GI_EPREFS] + 4 * (uint64_t)off);
}

void cairn__gi_node(const gimage *g, uint32_t i, gi_node *o)
{
    const char *blob = (const char *)g->sec[GI_BLOB];
    uint64_t bits = col_at(g, GI_N_SUCCESS, i);
    o->key = col_at(g, GI_N_KEY, i);
    o->created = (int64_t)col_at(g, GI_N_CREATED, i);
    memcpy(&o->success, &bits, 8);
    o->frequency = col_at(g, GI_N_FREQ, i);
    o->label = blob + col_at(g, GI_N_LABEL, i);
    o->label_len = (uint32_t)col_at(g, GI_N_LABEL_LEN, i);
    o->fold = blob + col_at(g, GI_N_FOLD, i);
    o->fold_len = (uint32_t)col_at(g, GI_N_FOLD_LEN, i);
    o->eps = eps_at(g, (uint32_t)col_at(g, GI_N_EPS, i));
    o->n_eps = (uint32_t)col_at(g, GI_N_NEPS, i);
    o->type = (uint32_t)col_at(g, GI_N_TYPE, i);
}

static void edge_fill(const gimage *g, uint32_t src, uint32_t i, gi_edge *o)
{
    uint64_t bits = col_at(g, GI_E_WEIGHT, i);
    o->src = src;
    o->dst = u32at(g->sec[GI_OUT_DST], i);
    o->type = (uint32_t)col_at(g, GI_E_TYPE, i);
    o->evidence = col_at(g, GI_E_EVIDENCE, i);
    memcpy(&o->weight, &bits, 8);
    o->created = (int64_t)col_at(g, GI_E_CREATED, i);
    o->eps = eps_at(g, (uint32_t)col_at(g, GI_E_EPS, i));
    o->n_eps = (uint32_t)col_at(g, GI_E_NEPS, i);
}

void cairn__gi_edge(const gimage *g, uint32_t i, gi_edge *o)
{
    edge_fill(g, edge_src(g, i), i, o);
}

void cairn__gi_edge_next(const gimage *g, uint32_t i, uint32_t *src, gi_edge *o)
{
    uint64_t v = *src;
    if (v >= g->n_nodes || u32at(g->sec[GI_OUT_OFF], v) > i)
        v = edge_src(g, i); /* not after the last one read */
    else /* OUT_OFF[n_nodes] = n_edges > i: stops before the end */
        while (u32at(g->sec[GI_OUT_OFF], v + 1) <= i)
            v++;
    *src = (uint32_t)v;
    edge_fill(g, (uint32_t)v, i, o);
}

uint32_t cairn__gi_edge_type(const gimage *g, uint32_t i)
{
    return (uint32_t)col_at(g, GI_E_TYPE, i);
}

static gi_str str_at(const gimage *g, const uint8_t *p)
{
    gi_str s;
    s.p = (const char *)g->sec[GI_BLOB] + get_le32(p);
    s.len = get_le32(p + 4);
    return s;
}

void cairn__gi_pattern(const gimage *g, uint32_t i, gi_pattern *o)
{
    const uint8_t *p = g->sec[GI_PATTERNS] + (uint64_t)i * GI_PATTERN;
    o->key = get_le64(p);
    o->success = getf64(p + 8);
    o->occurrences = get_le64(p + 16);
    o->last_used = (int64_t)get_le64(p + 24);
    o->created = (int64_t)get_le64(p + 32);
    o->name = str_at(g, p + 40);
    o->desc = str_at(g, p + 48);
    o->trigger = str_at(g, p + 56);
    o->action = str_at(g, p + 64);
    o->eps = eps_at(g, get_le32(p + 72));
    o->n_eps = get_le32(p + 76);
}

void cairn__gi_episode(const gimage *g, uint32_t i, gi_episode *o)
{
    const uint8_t *p = g->sec[GI_EPISODES] + (uint64_t)i * GI_EPISODE;
    o->name = get_le32(p);
    o->outcome = get_le32(p + 4);
    o->processed = get_le32(p + 8);
    o->seq = get_le64(p + 16);
    o->ts = (int64_t)get_le64(p + 24);
}

gi_str cairn__gi_name(const gimage *g, uint32_t i)
{
    return str_at(g, g->sec[GI_NAMES] + 8 * (uint64_t)i);
}

const uint32_t *cairn__gi_out(const gimage *g, uint32_t v, uint32_t *first, uint32_t *n)
{
    uint32_t lo = u32at(g->sec[GI_OUT_OFF], v), hi = u32at(g->sec[GI_OUT_OFF], (uint64_t)v + 1);
    *first = lo;
    *n = hi - lo;
    return (const uint32_t *)(const void *)g->sec[GI_OUT_DST] + lo;
}

const uint32_t *cairn__gi_in(const gimage *g, uint32_t v, const uint32_t **eids, uint32_t *n)
{
    uint32_t lo = u32at(g->sec[GI_IN_OFF], v), hi = u32at(g->sec[GI_IN_OFF], (uint64_t)v + 1);
    *n = hi - lo;
    *eids = (const uint32_t *)(const void *)g->sec[GI_IN_EID] + lo;
    return (const uint32_t *)(const void *)g->sec[GI_IN_SRC] + lo;
}

void cairn__gi_prefetch_row(const gimage *g, uint32_t v, int in, int stage)
{
    const uint8_t *off = g->sec[in ? GI_IN_OFF : GI_OUT_OFF] + 4 * (uint64_t)v;
    if (stage == 0) {
        __builtin_prefetch(off);
        return;
    }
    __builtin_prefetch(g->sec[in ? GI_IN_SRC : GI_OUT_DST] + 4 * (uint64_t)get_le32(off));
}

uint32_t cairn__gi_find_key(const gimage *g, uint64_t key)
{
    uint64_t mask = g->tcap - 1, i = key & mask;
    /* A damaged file cannot loop: at most tcap probes. */
    for (uint64_t probes = 0; probes < g->tcap; probes++, i = (i + 1) & mask) {
        uint32_t v = u32at(g->sec[GI_IDTAB], i);
        if (v == 0)
            return GI_NONE;
        if (col_at(g, GI_N_KEY, v - 1) == key)
            return v - 1;
    }
    return GI_NONE;
}

int cairn__gi_contains(const char *hay, size_t hlen, const char *q, size_t len)
{
    if (len == 0)
        return 1;
    for (const char *p = hay, *end = hay + hlen; (size_t)(end - p) >= len; p++) {
        p = memchr(p, q[0], (size_t)(end - p) - len + 1);
        if (p == NULL)
            return 0;
        if (memcmp(p, q, len) == 0)
            return 1;
    }
    return 0;
}

static int fold_has(const gimage *g, uint32_t v, const char *q, size_t len)
{
    const char *f = (const char *)g->sec[GI_BLOB] + col_at(g, GI_N_FOLD, v);
    return cairn__gi_contains(f, (size_t)col_at(g, GI_N_FOLD_LEN, v), q, len);
}

static int by_length(const void *a, const void *b)
{
    const gi_plist *x = a, *y = b;
    return x->n < y->n ? -1 : x->n > y->n;
}

/* Move l's cursor to its first posting >= v (galloping, then binary
 * search); UINT32_MAX once past the end. */
static uint32_t seek(gi_plist *l, uint32_t v)
{
    uint64_t lo = l->at, step = 1, hi;
    if (lo < l->n && u32at(l->post, lo) >= v)
        return u32at(l->post, lo);
    while (lo + step < l->n && u32at(l->post, lo + step) < v) {
        lo += step;
        step *= 2;
    }
    hi = lo + step < l->n ? lo + step : l->n; /* u32at(lo) < v; hi: >= v or the end */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (u32at(l->post, mid) < v)
            lo = mid;
        else
            hi = mid;
    }
    l->at = hi;
    return hi < l->n ? u32at(l->post, hi) : UINT32_MAX;
}

uint32_t cairn__gi_join(gi_plist *l, size_t nl, int (*accept)(const void *ctx, uint32_t v),
                        const void *ctx)
{
    uint32_t v = 0;
    size_t agree = 0, j = 0;
    if (nl == 0)
        return GI_NONE;
    /* Three rare lists leave few false candidates; galloping through the
     * common ones too would cost more cache misses than the label checks
     * they save. */
    qsort(l, nl, sizeof *l, by_length);
    if (nl > 3)
        nl = 3;
    for (;;) { /* leapfrog: each list in turn catches up with the candidate */
        uint32_t x = seek(&l[j], v);
        if (x == UINT32_MAX)
            return GI_NONE;
        if (x != v) {
            v = x;
            agree = 1;
        } else {
            agree++;
        }
        if (agree == nl) {
            if (accept(ctx, v))
                return v;
            if (v == UINT32_MAX - 1)
                return GI_NONE;
            v++;
            agree = 0;
        }
        j = j + 1 == nl ? 0 : j + 1;
    }
}

/* The first key >= k (n_gram if none). */
static uint64_t gram_at(const gimage *g, uint32_t k)
{
    uint64_t lo = 0, hi = g->n_gram;
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        if (u32at(g->sec[GI_GRAM_KEY], mid) < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The postings of key k, or 0 when no label has it. */
static int gram_list(const gimage *g, uint32_t k, gi_plist *l)
{
    uint64_t lo = gram_at(g, k);
    if (lo == g->n_gram || u32at(g->sec[GI_GRAM_KEY], lo) != k)
        return 0;
    uint64_t a = u32at(g->sec[GI_GRAM_OFF], lo), b = u32at(g->sec[GI_GRAM_OFF], lo + 1);
    l->post = g->sec[GI_GRAM_POST] + 4 * a;
    l->n = b - a;
    l->at = 0;
    return 1;
}

/* Three bytes: every label holding them has a 4-gram starting with them
 * (the NUL pad covers the end of a label), and those keys are adjacent;
 * the answer is the lowest first posting among them. */
static uint32_t find_3(const gimage *g, const char *q)
{
    uint32_t k = (uint32_t)(uint8_t)q[0] << 24 | (uint32_t)(uint8_t)q[1] << 16 |
                 (uint32_t)(uint8_t)q[2] << 8, best = GI_NONE;
    for (uint64_t lo = gram_at(g, k); lo < g->n_gram && u32at(g->sec[GI_GRAM_KEY], lo) >> 8 == k >> 8; lo++) {
        /* every listed key has a posting: checked at open */
        uint32_t v = u32at(g->sec[GI_GRAM_POST], u32at(g->sec[GI_GRAM_OFF], lo));
        if (v < best)
            best = v;
    }
    return best;
}

typedef struct label_q {
    const gimage *g;
    const char *q;
    size_t len;
} label_q;

static int holds(const void *ctx, uint32_t v)
{
    const label_q *x = ctx;
    return fold_has(x->g, v, x->q, x->len);
}

uint32_t cairn__gi_find_label(const gimage *g, const char *q, size_t len)
{
    uint32_t grams[64];
    gi_plist l[64];
    label_q x = {g, q, len};
    size_t nt;

    if (len < 3) { /* no 4-gram to go by: every label */
        for (uint64_t v = 0; v < g->n_nodes; v++)
            if (fold_has(g, (uint32_t)v, q, len))
                return (uint32_t)v;
        return GI_NONE;
    }
    if (len == 3)
        return find_3(g, q);
    /* Every match holds all the query's 4-grams (a long query: its first
     * 64 narrow it plenty); a missing one means no match. */
    nt = cairn__gi_grams(q, len < 67 ? len : 67, 0, grams);
    for (size_t i = 0; i < nt; i++)
        if (!gram_list(g, grams[i], &l[i]))
            return GI_NONE;
    return cairn__gi_join(l, nt, holds, &x);
}

/* ---- writing ------------------------------------------------------------- */

typedef struct sbuf {
    uint8_t *p;
    size_t len, cap;
} sbuf;

static int sb_need(sbuf *b, size_t more)
{
    if (b->cap - b->len >= more)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < more)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (p == NULL)
        return -1;
    memset(p + b->cap, 0, cap - b->cap);
    b->p = p;
    b->cap = cap;
    return 0;
}

/* Append bytes (a NUL after them if nul); their offset, or UINT64_MAX. */
static uint64_t sb_put(sbuf *b, const void *s, size_t len, int nul)
{
    uint64_t at = b->len;
    if (sb_need(b, len + 1) != 0)
        return UINT64_MAX;
    if (len)
        memcpy(b->p + b->len, s, len);
    b->len += len;
    if (nul)
        b->p[b->len++] = 0;
    return at;
}

static void putf64(uint8_t *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    put_le64(p, v);
}

/* A string into the blob; its (offset, length) at p. */
static int put_str(sbuf *blob, uint8_t *p, const char *s, uint32_t len)
{
    uint64_t at = sb_put(blob, s, len, 1);
    if (at == UINT64_MAX || at > GI_LIMIT)
        return -1;
    put_le32(p, (uint32_t)at);
    put_le32(p + 4, len);
    return 0;
}

/* A list of episode name numbers into EPREFS: its offset there (0 for an
 * empty list, so that a column of none packs to nothing), or UINT64_MAX. */
static uint64_t put_eps(sbuf *eprefs, const uint32_t *eps, uint32_t n)
{
    uint64_t at = eprefs->len / 4;
    if (n == 0)
        return 0;
    if (sb_put(eprefs, eps, (size_t)n * 4, 0) == UINT64_MAX || at > GI_LIMIT)
        return UINT64_MAX;
    return at;
}

/* A packed column of v[0..n): base the least value, width the bytes of
 * the largest difference from it. */
static int put_col(sbuf *out, const uint64_t *v, uint64_t n)
{
    uint64_t lo = n ? v[0] : 0, hi = lo;
    uint32_t w = 0;
    for (uint64_t i = 1; i < n; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    for (uint64_t r = hi - lo; r != 0; r >>= 8)
        w++;
    if (sb_need(out, GI_COL_HEAD + (size_t)n * w) != 0)
        return -1;
    put_le64(out->p, lo);
    out->p[8] = (uint8_t)w;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t d = v[i] - lo;
        memcpy(out->p + GI_COL_HEAD + i * w, &d, w);
    }
    out->len = GI_COL_HEAD + (size_t)n * w;
    return 0;
}

static uint64_t f64bits(double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    return v;
}

/* Stable counting sort of pairs (4-gram << 32 | node) by 4-gram, two
 * 16-bit passes: node order holds within a 4-gram. */
static int sort_pairs(uint64_t *a, size_t n)
{
    uint64_t *t = malloc((n ? n : 1) * sizeof *t);
    size_t *cnt = malloc(65537 * sizeof *cnt);
    if (t == NULL || cnt == NULL) {
        free(t);
        free(cnt);
        return -1;
    }
    for (int pass = 0; pass < 2; pass++) {
        int shift = 32 + 16 * pass;
        memset(cnt, 0, 65537 * sizeof *cnt);
        for (size_t i = 0; i < n; i++)
            cnt[((a[i] >> shift) & 65535) + 1]++;
        for (size_t i = 1; i <= 65536; i++)
            cnt[i] += cnt[i - 1];
        for (size_t i = 0; i < n; i++)
            t[cnt[(a[i] >> shift) & 65535]++] = a[i];
        memcpy(a, t, n * sizeof *a);
    }
    free(t);
    free(cnt);
    return 0;
}

typedef struct sections {
    sbuf s[GI_SECTIONS];
} sections;

/* Packed column c of the n values expr takes for i = 0..n-1, through the
 * scratch array v; on failure, goto out. */
#define PUT_COL(n, c, expr)                                                                  \
    do {                                                                                     \
        for (uint64_t i = 0; i < (n); i++)                                                   \
            v[i] = (expr);                                                                   \
        if (put_col(&x->s[c], v, (n)) != 0)                                                  \
            goto out;                                                                        \
    } while (0)

/* The nodes' columns (v: scratch of n_nodes values), the id table. */
static int build_nodes(const gi_in *in, sections *x, uint64_t *v, uint64_t *tcap_out)
{
    sbuf *blob = &x->s[GI_BLOB], *eprefs = &x->s[GI_EPREFS];
    uint64_t tcap = 16, npairs = 0, *pairs = NULL, k = 0, nn = in->n_nodes, *off = NULL;
    uint32_t *idtab, *grams = NULL;
    size_t grams_cap = 0;
    int rc = -1;

    while (tcap < 2 * nn)
        tcap *= 2;
    if (sb_need(&x->s[GI_IDTAB], (size_t)tcap * 4) != 0 ||
        (off = malloc((nn ? nn : 1) * 3 * sizeof *off)) == NULL)
        goto out;
    x->s[GI_IDTAB].len = (size_t)tcap * 4;
    idtab = (uint32_t *)(void *)x->s[GI_IDTAB].p;
    /* the strings first, in node order: label, then the folded label unless
     * it is the same bytes (then it is the label's) */
    for (uint64_t i = 0; i < nn; i++) {
        const gi_node *n = &in->nodes[i];
        uint64_t slot = n->key & (tcap - 1);
        off[3 * i] = sb_put(blob, n->label, n->label_len, 1);
        off[3 * i + 1] = n->fold_len == n->label_len && memcmp(n->fold, n->label, n->label_len) == 0
                             ? off[3 * i]
                             : sb_put(blob, n->fold, n->fold_len, 1);
        off[3 * i + 2] = put_eps(eprefs, n->eps, n->n_eps);
        if (off[3 * i] > GI_LIMIT || off[3 * i + 1] > GI_LIMIT || off[3 * i + 2] > GI_LIMIT)
            goto out;
        while (idtab[slot] != 0)
            slot = (slot + 1) & (tcap - 1);
        idtab[slot] = (uint32_t)i + 1;
        npairs += n->fold_len >= 3 ? n->fold_len - 2 : 0;
    }
    PUT_COL(nn, GI_N_KEY, in->nodes[i].key);
    PUT_COL(nn, GI_N_CREATED, (uint64_t)in->nodes[i].created);
    PUT_COL(nn, GI_N_SUCCESS, f64bits(in->nodes[i].success));
    PUT_COL(nn, GI_N_FREQ, in->nodes[i].frequency);
    PUT_COL(nn, GI_N_TYPE, in->nodes[i].type);
    PUT_COL(nn, GI_N_LABEL, off[3 * i]);
    PUT_COL(nn, GI_N_LABEL_LEN, in->nodes[i].label_len);
    PUT_COL(nn, GI_N_FOLD, off[3 * i + 1]);
    PUT_COL(nn, GI_N_FOLD_LEN, in->nodes[i].fold_len);
    PUT_COL(nn, GI_N_EPS, off[3 * i + 2]);
    PUT_COL(nn, GI_N_NEPS, in->nodes[i].n_eps);
    pairs = malloc((npairs ? npairs : 1) * sizeof *pairs);
    if (pairs == NULL)
        goto out;
    npairs = 0;
    for (uint64_t i = 0; i < in->n_nodes; i++) {
        const gi_node *n = &in->nodes[i];
        if (n->fold_len + 1 > grams_cap) {
            free(grams);
            grams_cap = n->fold_len + 1;
            if ((grams = malloc(grams_cap * sizeof *grams)) == NULL)
                goto out;
        }
        size_t ng = cairn__gi_grams(n->fold, n->fold_len, 1, grams);
        for (size_t j = 0; j < ng; j++)
            pairs[npairs++] = (uint64_t)grams[j] << 32 | i;
    }
    if (sort_pairs(pairs, npairs) != 0 || npairs > GI_LIMIT)
        goto out;
    if (sb_need(&x->s[GI_GRAM_POST], (size_t)npairs * 4) != 0 ||
        sb_need(&x->s[GI_GRAM_KEY], (size_t)npairs * 4 + 4) != 0 ||
        sb_need(&x->s[GI_GRAM_OFF], (size_t)npairs * 4 + 8) != 0)
        goto out;
    for (uint64_t i = 0; i < npairs; i++) {
        uint32_t t = (uint32_t)(pairs[i] >> 32);
        if (i == 0 || t != (uint32_t)(pairs[i - 1] >> 32)) {
            put_le32(x->s[GI_GRAM_KEY].p + 4 * k, t);
            put_le32(x->s[GI_GRAM_OFF].p + 4 * k, (uint32_t)i);
            k++;
        }
        put_le32(x->s[GI_GRAM_POST].p + 4 * i, (uint32_t)pairs[i]);
    }
    put_le32(x->s[GI_GRAM_OFF].p + 4 * k, (uint32_t)npairs);
    x->s[GI_GRAM_KEY].len = (size_t)k * 4;
    x->s[GI_GRAM_OFF].len = (size_t)(k + 1) * 4;
    x->s[GI_GRAM_POST].len = (size_t)npairs * 4;
    *tcap_out = tcap;
    rc = 0;
out:
    free(off);
    free(pairs);
    free(grams);
    return rc;
}

/* The edges' columns (v: scratch of n_edges values), the CSR arrays. */
static int build_edges(const gi_in *in, sections *x, uint64_t *v)
{
    uint64_t n = in->n_nodes, m = in->n_edges;
    uint8_t *oo, *io_, *od, *is, *ie;
    uint32_t *fill = NULL;
    int rc = -1;

    if (sb_need(&x->s[GI_OUT_OFF], (size_t)(n + 1) * 4) != 0 ||
        sb_need(&x->s[GI_IN_OFF], (size_t)(n + 1) * 4) != 0 ||
        sb_need(&x->s[GI_OUT_DST], (size_t)m * 4 + 1) != 0 ||
        sb_need(&x->s[GI_IN_SRC], (size_t)m * 4 + 1) != 0 ||
        sb_need(&x->s[GI_IN_EID], (size_t)m * 4 + 1) != 0 ||
        (fill = calloc(n + 1, sizeof *fill)) == NULL)
        goto out;
    x->s[GI_OUT_OFF].len = x->s[GI_IN_OFF].len = (size_t)(n + 1) * 4;
    x->s[GI_OUT_DST].len = x->s[GI_IN_SRC].len = x->s[GI_IN_EID].len = (size_t)m * 4;
    oo = x->s[GI_OUT_OFF].p;
    io_ = x->s[GI_IN_OFF].p;
    od = x->s[GI_OUT_DST].p;
    is = x->s[GI_IN_SRC].p;
    ie = x->s[GI_IN_EID].p;
    for (uint64_t i = 0; i < m; i++) {
        const gi_edge *d = &in->edges[i];
        if ((v[i] = put_eps(&x->s[GI_EPREFS], d->eps, d->n_eps)) > GI_LIMIT)
            goto out;
        put_le32(od + 4 * i, d->dst);
        put_le32(oo + 4 * ((uint64_t)d->src + 1), get_le32(oo + 4 * ((uint64_t)d->src + 1)) + 1);
        put_le32(io_ + 4 * ((uint64_t)d->dst + 1), get_le32(io_ + 4 * ((uint64_t)d->dst + 1)) + 1);
    }
    if (put_col(&x->s[GI_E_EPS], v, m) != 0)
        goto out;
    PUT_COL(m, GI_E_TYPE, in->edges[i].type);
    PUT_COL(m, GI_E_EVIDENCE, in->edges[i].evidence);
    PUT_COL(m, GI_E_WEIGHT, f64bits(in->edges[i].weight));
    PUT_COL(m, GI_E_CREATED, (uint64_t)in->edges[i].created);
    PUT_COL(m, GI_E_NEPS, in->edges[i].n_eps);
    for (uint64_t u = 1; u <= n; u++) {
        put_le32(oo + 4 * u, get_le32(oo + 4 * u) + get_le32(oo + 4 * (u - 1)));
        put_le32(io_ + 4 * u, get_le32(io_ + 4 * u) + get_le32(io_ + 4 * (u - 1)));
    }
    for (uint64_t i = 0; i < m; i++) { /* in-lists in edge order: by source */
        uint32_t d = in->edges[i].dst;
        uint32_t at = get_le32(io_ + 4 * (uint64_t)d) + fill[d]++;
        put_le32(is + 4 * (uint64_t)at, in->edges[i].src);
        put_le32(ie + 4 * (uint64_t)at, (uint32_t)i);
    }
    rc = 0;
out:
    free(fill);
    return rc;
}

#undef PUT_COL

static int build_rest(const gi_in *in, sections *x)
{
    sbuf *blob = &x->s[GI_BLOB];
    if (sb_need(&x->s[GI_NAMES], (size_t)in->n_names * 8 + 1) != 0 ||
        sb_need(&x->s[GI_EPISODES], (size_t)in->n_episodes * GI_EPISODE + 1) != 0 ||
        sb_need(&x->s[GI_PATTERNS], (size_t)in->n_patterns * GI_PATTERN + 1) != 0)
        return -1;
    x->s[GI_NAMES].len = (size_t)in->n_names * 8;
    x->s[GI_EPISODES].len = (size_t)in->n_episodes * GI_EPISODE;
    x->s[GI_PATTERNS].len = (size_t)in->n_patterns * GI_PATTERN;
    for (uint64_t i = 0; i < in->n_names; i++)
        if (put_str(blob, x->s[GI_NAMES].p + 8 * i, in->names[i].p, in->names[i].len) != 0)
            return -1;
    for (uint64_t i = 0; i < in->n_episodes; i++) {
        const gi_episode *d = &in->episodes[i];
        uint8_t *p = x->s[GI_EPISODES].p + i * GI_EPISODE;
        put_le32(p, d->name);
        put_le32(p + 4, d->outcome);
        put_le32(p + 8, d->processed);
        put_le64(p + 16, d->seq);
        put_le64(p + 24, (uint64_t)d->ts);
    }
    for (uint64_t i = 0; i < in->n_patterns; i++) {
        const gi_pattern *d = &in->patterns[i];
        uint8_t *p = x->s[GI_PATTERNS].p + i * GI_PATTERN;
        uint64_t at;
        put_le64(p, d->key);
        putf64(p + 8, d->success);
        put_le64(p + 16, d->occurrences);
        put_le64(p + 24, (uint64_t)d->last_used);
        put_le64(p + 32, (uint64_t)d->created);
        if (put_str(blob, p + 40, d->name.p, d->name.len) != 0 ||
            put_str(blob, p + 48, d->desc.p, d->desc.len) != 0 ||
            put_str(blob, p + 56, d->trigger.p, d->trigger.len) != 0 ||
            put_str(blob, p + 64, d->action.p, d->action.len) != 0 ||
            (at = put_eps(&x->s[GI_EPREFS], d->eps, d->n_eps)) == UINT64_MAX)
            return -1;
        put_le32(p + 72, (uint32_t)at);
        put_le32(p + 76, d->n_eps);
    }
    return 0;
}

int cairn__gi_write(const cairn_io *io, int dirfd, const gi_in *in, cairn__err *e)
{
    static const cairn__publish_sites sites = {"graph.fsync", "graph.close", "graph.rename",
                                               "graph.dirsync"};
    static const uint8_t zeros[8];
    sections x;
    uint64_t *scratch = NULL;
    uint8_t h[GI_HEAD + GI_TABLE];
    uint64_t tcap = 16, at = GI_HEAD + GI_TABLE;
    char name[GI_NAME_MAX], tmp[SEQFILE_TEMP_MAX];
    int fd = -1, rc = CAIRN_OK;

    if (in->n_nodes > GI_LIMIT / 2 || in->n_edges > GI_LIMIT || in->n_names > GI_LIMIT ||
        in->n_patterns > GI_LIMIT || in->n_episodes > GI_LIMIT)
        return cairn__fail(e, CAIRN_EINVAL, "graph file: more than the format's 2^31 nodes or 2^32 rows");
    memset(&x, 0, sizeof x);
    memset(h, 0, sizeof h);
    scratch = calloc((in->n_nodes > in->n_edges ? in->n_nodes : in->n_edges) + 1, sizeof *scratch);
    if (scratch == NULL || build_nodes(in, &x, scratch, &tcap) != 0 ||
        build_edges(in, &x, scratch) != 0 || build_rest(in, &x) != 0) {
        rc = cairn__fail(e, x.s[GI_BLOB].len > GI_LIMIT ? CAIRN_EINVAL : CAIRN_ENOMEM,
                         "graph file: %s", x.s[GI_BLOB].len > GI_LIMIT ? "strings past 4 GiB"
                                                                       : "no memory");
        goto out;
    }
    cairn__filehdr_init(h, GI_MAGIC, GI_VERSION);
    put_le64(h + 16, in->covered);
    put_le64(h + 32, (uint64_t)in->updated);
    put_le64(h + 40, in->skipped);
    put_le64(h + 64, in->n_nodes);
    put_le64(h + 72, in->n_edges);
    put_le64(h + 80, in->n_patterns);
    put_le64(h + 88, in->n_names);
    put_le64(h + 96, in->n_episodes);
    put_le64(h + 104, x.s[GI_GRAM_KEY].len / 4);
    put_le64(h + 112, x.s[GI_GRAM_POST].len / 4);
    put_le64(h + 120, tcap);
    for (int s = 0; s < GI_SECTIONS; s++) {
        uint8_t *t = h + GI_HEAD + 24 * s;
        uint64_t sum = XXH3_64bits(x.s[s].p ? x.s[s].p : zeros, x.s[s].len);
        put_le64(t, at);
        put_le64(t + 8, x.s[s].len);
        /* The last entry's sum slot holds the table's own sum; the blob's
         * sum goes in the header. */
        if (s == GI_SECTIONS - 1)
            put_le64(h + GI_BLOB_SUM, sum);
        else
            put_le64(t + 16, sum);
        at += pad8(x.s[s].len);
    }
    put_le64(h + 24, at);
    cairn__logbind_put(h + GI_BIND_OFF, &in->bind);
    put_le64(h + GI_EXT_SUM, XXH3_64bits(h + FILEHDR_SIZE, GI_HEAD - FILEHDR_SIZE));
    cairn__filehdr_seal(h);
    put_le64(h + GI_HEAD + GI_TABLE - 8, XXH3_64bits(h, GI_HEAD + GI_TABLE - 8));
    cairn__seqfile_name(&cairn__seqfile_graph, in->covered, name, sizeof name);
    cairn__seqfile_temp(&cairn__seqfile_graph, in->covered, in->temp_salt, tmp, sizeof tmp);
    rc = cairn__io_open(io, "graph.create", dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644, &fd, e);
    if (rc != CAIRN_OK)
        goto out;
    if (in->temp_salt != 0) /* renamed outside this turn: another writer's open leaves it */
        cairn__seqfile_temp_hold(fd);
    rc = cairn__io_write(io, "graph.write", fd, h, sizeof h, 0, tmp, e);
    at = GI_HEAD + GI_TABLE;
    for (int s = 0; s < GI_SECTIONS && rc == CAIRN_OK; s++) {
        if (x.s[s].len)
            rc = cairn__io_write_mapped(io, "graph.write", fd, x.s[s].p, x.s[s].len, at, tmp, e);
        if (rc == CAIRN_OK && pad8(x.s[s].len) != x.s[s].len)
            rc = cairn__io_write(io, "graph.write", fd, zeros, pad8(x.s[s].len) - x.s[s].len,
                                 at + x.s[s].len, tmp, e);
        at += pad8(x.s[s].len);
    }
    if (rc == CAIRN_OK && in->gate != NULL) {
        /* synced before the gate, which may hold others up while it is open */
        rc = cairn__io_fsync(io, "graph.fsync", fd, tmp, e);
        if (rc == CAIRN_OK && (rc = in->gate(in->gate_user)) != CAIRN_OK)
            (void)cairn__fail(e, rc, "graph file: %s not put in place", name);
    }
    rc = cairn__io_publish(io, &sites, rc, fd, dirfd, tmp, name, e);
    fd = -1;
    if (rc != CAIRN_OK)
        (void)cairn__io_unlink(io, "graph.unlink", dirfd, tmp, NULL);
out:
    for (int s = 0; s < GI_SECTIONS; s++)
        free(x.s[s].p);
    free(scratch);
    return rc;
}
