/*
 * ggen.c - see ggen.h; the bytes are format-spec/graph.md, "Generations".
 *
 *   common file header (64) | fixed block (96) | rows: names, nodes,
 *   edges, episodes, patterns
 *
 * Every row starts 8-aligned and is padded to 8 with zeros; a row's eps
 * (u32 episode name numbers) start 4-aligned, so they are read in place.
 */
#include "ggen.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <xxhash.h>

#include "bytes.h"
#include "filehdr.h"
#include "io.h"
#include "seqfile.h"

#define GG_MAGIC "CAIRNGGN"
#define GG_ROWS (GG_HEAD + GG_FIXED) /* where the rows start */
#define GG_NODE 56
#define GG_EDGE 48
#define GG_EPISODE 32
#define GG_PATTERN 64
#define GG_LIMIT 0x7ffffffeu

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "graph generations are little-endian and read in place"
#endif

static size_t pad4(size_t n)
{
    return (n + 3) & ~(size_t)3;
}

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

static double getf64(const uint8_t *p)
{
    double d;
    uint64_t v = get_le64(p);
    memcpy(&d, &v, 8);
    return d;
}

static void putf64(uint8_t *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    put_le64(p, v);
}

/* ---- writing ---- */

typedef struct gbuf {
    uint8_t *p;
    size_t len, cap;
    int oom;
} gbuf;

/* n zeroed bytes at the end; NULL when out of memory. */
static uint8_t *take(gbuf *b, size_t n)
{
    if (b->oom)
        return NULL;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        uint8_t *p;
        while (cap < b->len + n)
            cap *= 2;
        if ((p = realloc(b->p, cap)) == NULL) {
            b->oom = 1;
            return NULL;
        }
        b->p = p;
        b->cap = cap;
    }
    memset(b->p + b->len, 0, n);
    b->len += n;
    return b->p + b->len - n;
}

static void add_bytes(gbuf *b, const void *s, size_t n)
{
    uint8_t *p = take(b, n);
    if (p != NULL && n)
        memcpy(p, s, n);
}

static void align(gbuf *b, size_t to)
{
    size_t want = to == 4 ? pad4(b->len) : pad8(b->len);
    (void)take(b, want - b->len);
}

static void add_eps(gbuf *b, const uint32_t *eps, uint32_t n)
{
    align(b, 4);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *p = take(b, 4);
        if (p != NULL)
            put_le32(p, eps[i]);
    }
    align(b, 8);
}

static void write_rows(gbuf *b, const gg_in *in)
{
    const gg_head *h = &in->head;
    for (uint32_t i = 0; i < h->count[GG_NAMES]; i++) {
        uint8_t *p = take(b, 8);
        if (p != NULL)
            put_le32(p, in->names[i].len);
        add_bytes(b, in->names[i].p, in->names[i].len);
        align(b, 8);
    }
    for (uint32_t i = 0; i < h->count[GG_NODES]; i++) {
        const gi_node *n = &in->nodes[i];
        int over = in->node_no[i] < h->first[GG_NODES];
        uint8_t *p = take(b, GG_NODE);
        if (p == NULL)
            return;
        put_le32(p, in->node_no[i]);
        put_le32(p + 4, n->type);
        put_le64(p + 8, n->key);
        put_le64(p + 16, n->frequency);
        putf64(p + 24, n->success);
        put_le64(p + 32, (uint64_t)n->created);
        put_le32(p + 40, over ? 0 : n->label_len);
        put_le32(p + 44, over ? 0 : n->fold_len);
        put_le32(p + 48, n->n_eps);
        if (!over) {
            add_bytes(b, n->label, n->label_len);
            add_bytes(b, n->fold, n->fold_len);
        }
        add_eps(b, n->eps, n->n_eps);
    }
    for (uint32_t i = 0; i < h->count[GG_EDGES]; i++) {
        const gi_edge *x = &in->edges[i];
        uint8_t *p = take(b, GG_EDGE);
        if (p == NULL)
            return;
        put_le32(p, in->edge_no[i]);
        put_le32(p + 4, x->src);
        put_le32(p + 8, x->dst);
        put_le32(p + 12, x->type);
        put_le64(p + 16, x->evidence);
        putf64(p + 24, x->weight);
        put_le64(p + 32, (uint64_t)x->created);
        put_le32(p + 40, x->n_eps);
        add_eps(b, x->eps, x->n_eps);
    }
    for (uint32_t i = 0; i < h->count[GG_EPISODES]; i++) {
        const gi_episode *x = &in->episodes[i];
        uint8_t *p = take(b, GG_EPISODE);
        if (p == NULL)
            return;
        put_le32(p, in->episode_no[i]);
        put_le32(p + 4, x->name);
        put_le32(p + 8, x->outcome);
        put_le32(p + 12, x->processed);
        put_le64(p + 16, x->seq);
        put_le64(p + 24, (uint64_t)x->ts);
    }
    for (uint32_t i = 0; i < h->count[GG_PATTERNS]; i++) {
        const gi_pattern *x = &in->patterns[i];
        uint8_t *p = take(b, GG_PATTERN);
        if (p == NULL)
            return;
        put_le32(p, in->pattern_no[i]);
        put_le32(p + 4, x->n_eps);
        put_le64(p + 8, x->key);
        putf64(p + 16, x->success);
        put_le64(p + 24, x->occurrences);
        put_le64(p + 32, (uint64_t)x->last_used);
        put_le64(p + 40, (uint64_t)x->created);
        put_le32(p + 48, x->name.len);
        put_le32(p + 52, x->desc.len);
        put_le32(p + 56, x->trigger.len);
        put_le32(p + 60, x->action.len);
        add_bytes(b, x->name.p, x->name.len);
        add_bytes(b, x->desc.p, x->desc.len);
        add_bytes(b, x->trigger.p, x->trigger.len);
        add_bytes(b, x->action.p, x->action.len);
        add_eps(b, x->eps, x->n_eps);
    }
}

int cairn__gg_write(const cairn_io *io, int dirfd, const gg_in *in, uint64_t *len_out,
                    cairn__err *e)
{
    static const cairn__publish_sites sites = {"graphgen.fsync", "graphgen.close",
                                               "graphgen.rename", "graphgen.dirsync"};
    const gg_head *h = &in->head;
    gbuf b = {0};
    char name[64], tmp[72];
    int fd = -1, rc;
    uint8_t *p;

    for (int t = 0; t < GG_TABLES; t++)
        if (h->first[t] > GG_LIMIT || h->count[t] > GG_LIMIT - h->first[t])
            return cairn__fail(e, CAIRN_EINVAL, "graph generation: more than the format's 2^31 rows");
    if ((p = take(&b, GG_ROWS)) != NULL) {
        cairn__filehdr_init(p, GG_MAGIC, GG_VERSION);
        put_le64(p + 16, h->covered);
        put_le64(p + 24, h->base);
        put_le32(p + 48, h->base_gen);
        cairn__logbind_put(p + GG_HEAD, &h->bind);
        put_le64(p + 96, h->skipped);
        put_le64(p + 104, (uint64_t)h->updated);
        for (int t = 0; t < GG_TABLES; t++) {
            put_le32(p + 112 + 4 * t, h->first[t]);
            put_le32(p + 132 + 4 * t, h->count[t]);
        }
    }
    write_rows(&b, in);
    if (b.oom) {
        free(b.p);
        return cairn__fail(e, CAIRN_ENOMEM, "graph generation: no memory");
    }
    put_le64(b.p + 32, b.len - GG_HEAD);
    put_le64(b.p + 40, XXH3_64bits(b.p + GG_HEAD, b.len - GG_HEAD));
    cairn__filehdr_seal(b.p);
    cairn__seqfile_name(&cairn__seqfile_graphgen, h->covered, name, sizeof name);
    snprintf(tmp, sizeof tmp, "%s.tmp", name);
    rc = cairn__io_open(io, "graphgen.create", dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644, &fd, e);
    if (rc == CAIRN_OK) {
        rc = cairn__io_write_mapped(io, "graphgen.write", fd, b.p, b.len, 0, tmp, e);
        rc = cairn__io_publish(io, &sites, rc, fd, dirfd, tmp, name, e);
        if (rc != CAIRN_OK)
            (void)cairn__io_unlink(io, "graphgen.unlink", dirfd, tmp, NULL);
    }
    if (rc == CAIRN_OK && len_out != NULL)
        *len_out = b.len;
    free(b.p);
    return rc;
}

/* ---- reading ---- */

typedef struct cursor {
    const uint8_t *buf;
    size_t at, len;
    const char *name;
    uint64_t *bad_off;
    cairn__err *e;
} cursor;

static int bad(cursor *c, size_t off, const char *why)
{
    *c->bad_off = off;
    return cairn__fail(c->e, CAIRN_ECORRUPT, "%s: %s at offset %zu", c->name, why, off);
}

/* The next n bytes of the row area, or NULL (past the end). */
static const uint8_t *next(cursor *c, size_t n)
{
    if (n > c->len - c->at)
        return NULL;
    c->at += n;
    return c->buf + c->at - n;
}

/* The padding from here to the next multiple of `to`: inside the file
 * and zero. */
static int pad_ok(cursor *c, size_t to)
{
    size_t a = to == 4 ? pad4(c->at) : pad8(c->at);
    for (size_t i = c->at; i < a; i++)
        if (i >= c->len || c->buf[i] != 0)
            return bad(c, i < c->len ? i : c->len, "a pad byte is missing or not zero");
    c->at = a;
    return CAIRN_OK;
}

/* A row's eps: 4-aligned, n of them, each below names; then the row's
 * padding to 8. */
static int eps_at(cursor *c, uint32_t n, uint32_t names, const uint32_t **out)
{
    size_t off;
    const uint8_t *p;
    int rc = pad_ok(c, 4);
    if (rc != CAIRN_OK)
        return rc;
    if ((size_t)n > (c->len - c->at) / 4)
        return bad(c, c->at, "a row's episode list runs past the file");
    off = c->at;
    p = next(c, (size_t)n * 4);
    for (uint32_t i = 0; i < n; i++)
        if (get_le32(p + 4 * i) >= names)
            return bad(c, off + 4 * i, "an episode reference is out of range");
    *out = (const uint32_t *)(const void *)p;
    return pad_ok(c, 8);
}

/* A row's string of n bytes: inside the file, no NUL. */
static int str_at(cursor *c, uint32_t n, const char **out)
{
    size_t off = c->at;
    const uint8_t *p = next(c, n);
    if (p == NULL)
        return bad(c, off, "a string runs past the file");
    if (memchr(p, 0, n) != NULL)
        return bad(c, off, "a string holds a NUL byte");
    *out = (const char *)p;
    return CAIRN_OK;
}

/* Row numbers: overlays ascending below first, then first, first + 1... */
static int number_ok(cursor *c, size_t off, uint32_t no, uint32_t first, int64_t *prev)
{
    int64_t want_next = *prev < (int64_t)first ? (int64_t)first : *prev + 1;
    if (no < first ? (int64_t)no <= *prev || *prev >= (int64_t)first : (int64_t)no != want_next)
        return bad(c, off, "a row number is out of order");
    *prev = no;
    return CAIRN_OK;
}

static int walk(cursor *c, const gg_head *h, const gg_visit *v, void *user)
{
    uint32_t names = h->first[GG_NAMES] + h->count[GG_NAMES];
    uint32_t nodes = h->first[GG_NODES] + h->count[GG_NODES];
    int64_t prev;
    int rc;

    for (uint32_t i = 0; i < h->count[GG_NAMES]; i++) {
        size_t off = c->at;
        const uint8_t *p = next(c, 8);
        const char *s;
        uint32_t n;
        if (p == NULL)
            return bad(c, off, "the names run past the file");
        n = get_le32(p);
        if (n > CAIRN_LABEL_MAX || get_le32(p + 4) != 0)
            return bad(c, off, "a name is too long or its zero field is not");
        if ((rc = str_at(c, n, &s)) != CAIRN_OK || (rc = pad_ok(c, 8)) != CAIRN_OK)
            return rc;
        if (v != NULL && (rc = v->name(user, h->first[GG_NAMES] + i, s, n)) != 0)
            return rc;
    }
    prev = -1;
    for (uint32_t i = 0; i < h->count[GG_NODES]; i++) {
        size_t off = c->at;
        const uint8_t *p = next(c, GG_NODE);
        gi_node n;
        uint32_t no;
        if (p == NULL)
            return bad(c, off, "the nodes run past the file");
        no = get_le32(p);
        if ((rc = number_ok(c, off, no, h->first[GG_NODES], &prev)) != CAIRN_OK)
            return rc;
        memset(&n, 0, sizeof n);
        n.type = get_le32(p + 4);
        n.key = get_le64(p + 8);
        n.frequency = get_le64(p + 16);
        n.success = getf64(p + 24);
        n.created = (int64_t)get_le64(p + 32);
        n.label_len = get_le32(p + 40);
        n.fold_len = get_le32(p + 44);
        n.n_eps = get_le32(p + 48);
        if (n.type >= CAIRN_NODE_TYPES || get_le32(p + 52) != 0 || !(n.success >= 0 && n.success <= 1))
            return bad(c, off, "a node's type, success or zero field is out of range");
        if (no < h->first[GG_NODES] ? n.label_len != 0 || n.fold_len != 0
                                    : n.label_len == 0 || n.label_len > CAIRN_LABEL_MAX ||
                                          n.fold_len > 4u * CAIRN_LABEL_MAX)
            return bad(c, off, "a node's label length is out of range");
        if ((rc = str_at(c, n.label_len, &n.label)) != CAIRN_OK ||
            (rc = str_at(c, n.fold_len, &n.fold)) != CAIRN_OK ||
            (rc = eps_at(c, n.n_eps, names, &n.eps)) != CAIRN_OK)
            return rc;
        if (v != NULL && (rc = v->node(user, no, &n)) != 0)
            return rc;
    }
    prev = -1;
    for (uint32_t i = 0; i < h->count[GG_EDGES]; i++) {
        size_t off = c->at;
        const uint8_t *p = next(c, GG_EDGE);
        gi_edge x;
        uint32_t no;
        if (p == NULL)
            return bad(c, off, "the edges run past the file");
        no = get_le32(p);
        if ((rc = number_ok(c, off, no, h->first[GG_EDGES], &prev)) != CAIRN_OK)
            return rc;
        memset(&x, 0, sizeof x);
        x.src = get_le32(p + 4);
        x.dst = get_le32(p + 8);
        x.type = get_le32(p + 12);
        x.evidence = get_le64(p + 16);
        x.weight = getf64(p + 24);
        x.created = (int64_t)get_le64(p + 32);
        x.n_eps = get_le32(p + 40);
        if (x.src >= nodes || x.dst >= nodes || x.type >= CAIRN_EDGE_TYPES || x.evidence == 0 ||
            !(x.weight >= 0 && x.weight <= 1) || get_le32(p + 44) != 0)
            return bad(c, off, "an edge's node, type, evidence or weight is out of range");
        if ((rc = eps_at(c, x.n_eps, names, &x.eps)) != CAIRN_OK)
            return rc;
        if (v != NULL && (rc = v->edge(user, no, &x)) != 0)
            return rc;
    }
    prev = -1;
    for (uint32_t i = 0; i < h->count[GG_EPISODES]; i++) {
        size_t off = c->at;
        const uint8_t *p = next(c, GG_EPISODE);
        gi_episode x;
        uint32_t no;
        if (p == NULL)
            return bad(c, off, "the episodes run past the file");
        no = get_le32(p);
        if ((rc = number_ok(c, off, no, h->first[GG_EPISODES], &prev)) != CAIRN_OK)
            return rc;
        x.name = get_le32(p + 4);
        x.outcome = get_le32(p + 8);
        x.processed = get_le32(p + 12);
        x.seq = get_le64(p + 16);
        x.ts = (int64_t)get_le64(p + 24);
        if (x.name >= names || x.outcome > 2 || x.processed > 1)
            return bad(c, off, "an episode's name, outcome or flag is out of range");
        if (v != NULL && (rc = v->episode(user, no, &x)) != 0)
            return rc;
    }
    prev = -1;
    for (uint32_t i = 0; i < h->count[GG_PATTERNS]; i++) {
        size_t off = c->at;
        const uint8_t *p = next(c, GG_PATTERN);
        gi_pattern x;
        uint32_t no;
        if (p == NULL)
            return bad(c, off, "the patterns run past the file");
        no = get_le32(p);
        if ((rc = number_ok(c, off, no, h->first[GG_PATTERNS], &prev)) != CAIRN_OK)
            return rc;
        memset(&x, 0, sizeof x);
        x.n_eps = get_le32(p + 4);
        x.key = get_le64(p + 8);
        x.success = getf64(p + 16);
        x.occurrences = get_le64(p + 24);
        x.last_used = (int64_t)get_le64(p + 32);
        x.created = (int64_t)get_le64(p + 40);
        x.name.len = get_le32(p + 48);
        x.desc.len = get_le32(p + 52);
        x.trigger.len = get_le32(p + 56);
        x.action.len = get_le32(p + 60);
        if (!(x.success >= 0 && x.success <= 1) || x.occurrences == 0)
            return bad(c, off, "a pattern's success or count is out of range");
        if ((rc = str_at(c, x.name.len, &x.name.p)) != CAIRN_OK ||
            (rc = str_at(c, x.desc.len, &x.desc.p)) != CAIRN_OK ||
            (rc = str_at(c, x.trigger.len, &x.trigger.p)) != CAIRN_OK ||
            (rc = str_at(c, x.action.len, &x.action.p)) != CAIRN_OK ||
            (rc = eps_at(c, x.n_eps, names, &x.eps)) != CAIRN_OK)
            return rc;
        if (v != NULL && (rc = v->pattern(user, no, &x)) != 0)
            return rc;
    }
    if (c->at != c->len)
        return bad(c, c->at, "bytes after the last row");
    return CAIRN_OK;
}

int cairn__gg_parse(const uint8_t *buf, size_t len, const char *name, gg_head *h,
                    const gg_visit *v, void *user, uint64_t *bad_off, cairn__err *e)
{
    cursor c = {buf, GG_ROWS, len, name, bad_off, e};
    int rc;

    *bad_off = 0;
    memset(h, 0, sizeof *h);
    if ((rc = cairn__filehdr_check(buf, len, GG_MAGIC, GG_VERSION, name, e)) != CAIRN_OK) {
        *bad_off = rc == CAIRN_ECHECKSUM ? FILEHDR_OFF_SUM : 0;
        return rc;
    }
    h->covered = get_le64(buf + 16);
    h->base = get_le64(buf + 24);
    h->base_gen = get_le32(buf + 48);
    h->file_len = len;
    if (len < GG_ROWS || get_le64(buf + 32) != len - GG_HEAD)
        return bad(&c, 32, "the file's length is not the one its header says");
    if (h->base >= h->covered || h->base_gen > 1 || get_le32(buf + 52) != 0)
        return bad(&c, 24, "the file below is not older, or a zero field is not");
    if (XXH3_64bits(buf + GG_HEAD, len - GG_HEAD) != get_le64(buf + 40)) {
        *bad_off = 40;
        return cairn__fail(e, CAIRN_ECHECKSUM, "%s: checksum mismatch over bytes 64..%zu", name, len);
    }
    cairn__logbind_get(buf + GG_HEAD, &h->bind);
    h->skipped = get_le64(buf + 96);
    h->updated = (int64_t)get_le64(buf + 104);
    for (int t = 0; t < GG_TABLES; t++) {
        h->first[t] = get_le32(buf + 112 + 4 * t);
        h->count[t] = get_le32(buf + 132 + 4 * t);
        if (h->first[t] > GG_LIMIT || h->count[t] > GG_LIMIT - h->first[t])
            return bad(&c, 112 + 4 * (size_t)t, "a table is past the format's limits");
    }
    if (get_le64(buf + 152) != 0)
        return bad(&c, 152, "a zero field is not");
    /* Every check first, so that a caller folds a whole file or nothing. */
    if ((rc = walk(&c, h, NULL, NULL)) != CAIRN_OK || v == NULL)
        return rc;
    c.at = GG_ROWS;
    return walk(&c, h, v, user);
}

int cairn__gg_map(const cairn_io *io, int dirfd, uint64_t seq, uint8_t **map, size_t *len,
                  char *name, size_t cap, cairn__fileid *id, cairn__err *e)
{
    uint64_t got = 0;
    int rc = cairn__seqfile_map(&cairn__seqfile_graphgen, io, dirfd, seq, name, cap, &got, map, len,
                                GG_HEAD, id, e);
    if (rc == CAIRN_OK && got != seq) {
        cairn__gg_unmap(*map, *len);
        *map = NULL;
        rc = CAIRN_ENOTFOUND;
    }
    if (rc == CAIRN_ENOTFOUND)
        cairn__seqfile_name(&cairn__seqfile_graphgen, seq, name, cap);
    return rc;
}

void cairn__gg_unmap(uint8_t *map, size_t len)
{
    if (map != NULL)
        munmap(map, len);
}
