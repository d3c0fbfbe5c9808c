/*
 * memory.c - the memory engine (cairn_mem_* in cairn.h): memories as log
 * records (format-spec/memory.md), their current state in RAM with a BM25
 * index per namespace, replay, store, get, update, delete. Recall is in
 * recall.c.
 *
 * Invariants:
 * - Every change is appended to the log before it is applied in RAM, and
 *   replay applies records through the same functions, so a reopened
 *   cairn_mem has exactly the state the old one had.
 * - Entries are kept in sequence order of their store record (appends and
 *   replay both go forward), so a document number (the store record's seq)
 *   finds its entry by binary search.
 * - An entry is "live" until deleted or cleared; expiry is checked when
 *   reading, against the wall clock, and never changes the state.
 * - With an index file (memindex.h), the memories it holds are read in
 *   place, an entry of a row made on first use; only records after it are
 *   replayed. Every seq in the file is below every seq in m->e.
 */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>
#include <xxhash.h>

#include "cairn.h"
#include "indexer.h"
#include "merger.h"
#include "ivf.h"
#include "hole.h"
#include "boot.h"
#include "memstate.h"
#include "prefetch.h"
#include "alloc.h"
#include "bytes.h"
#include "filehdr.h"
#include "genpolicy.h"
#include "io.h"
#include "status.h"
#include "seqfile.h"
#include "store.h"
#include "utf8.h"

int cairn__mem_fail(cairn_mem *m, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cairn__errbuf(m), CAIRN_ERRMSG_MAX, fmt, ap);
    va_end(ap);
    return code;
}

int64_t cairn__mem_wall_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The clock is read without m->mu (some readers take it before). */
int64_t cairn__mem_now(const cairn_mem *m)
{
    int64_t c = __atomic_load_n(&m->clock_ms, __ATOMIC_RELAXED);
    return c != 0 ? c : cairn__mem_wall_ms();
}

void cairn_mem_set_clock(cairn_mem *m, int64_t now_ms)
{
    __atomic_store_n(&m->clock_ms, now_ms, __ATOMIC_RELAXED);
}

static char *dup_str(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p != NULL) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

/* ---- tables -------------------------------------------------------------- */

/* A NUL-terminated copy of s[0..n) among the entries' strings. */
static char *keep_str(cairn_mem *m, const char *s, size_t n)
{
    const size_t std = 65536 - sizeof(strchunk);
    strchunk *c = m->strs;
    char *p;
    if (c == NULL || c->cap - c->used < n + 1) {
        size_t cap = n + 1 > std ? n + 1 : std;
        if ((c = malloc(sizeof *c + cap)) == NULL)
            return NULL;
        c->used = 0;
        c->cap = cap;
        if (cap > std && m->strs != NULL) {
            /* a string of its own goes behind the head, whose room is kept */
            c->next = m->strs->next;
            m->strs->next = c;
        } else {
            c->next = m->strs;
            m->strs = c;
        }
    }
    p = c->data + c->used;
    memcpy(p, s, n);
    p[n] = 0;
    c->used += n + 1;
    return p;
}

static void free_strs(cairn_mem *m)
{
    while (m->strs != NULL) {
        strchunk *c = m->strs;
        m->strs = c->next;
        free(c);
    }
}

static uint64_t hash_id(const char *id)
{
    return XXH3_64bits(id, strlen(id));
}

static uint64_t hash_content(uint32_t nsi, const char *c, size_t len)
{
    return XXH3_64bits_withSeed(c, len, 0x9E3779B97F4A7C15ull * (nsi + 1));
}

/* A slot of the RAM tables: entry + 1, tagged with the hash's top bits. */
#define SLOT_TAG(h) ((h) >> 32 << 32)
#define SLOT_ENTRY(s) ((uint32_t)(s) - 1)

static void table_put(uint64_t *t, size_t cap, uint64_t h, uint32_t idx, const ment *e,
                      int by_id)
{
    size_t i = (size_t)h & (cap - 1);
    for (;; i = (i + 1) & (cap - 1)) {
        /* by id: the newest entry of an id replaces the older one */
        if (t[i] == 0 || (by_id && SLOT_TAG(t[i]) == SLOT_TAG(h) &&
                          strcmp(e[SLOT_ENTRY(t[i])].id, e[idx].id) == 0)) {
            t[i] = SLOT_TAG(h) | ((uint64_t)idx + 1);
            return;
        }
    }
}

static int tables_grow(cairn_mem *m)
{
    size_t cap = m->tcap ? m->tcap * 2 : 1024;
    uint64_t *a = calloc(cap, sizeof *a), *b = calloc(cap, sizeof *b);
    if (a == NULL || b == NULL) {
        free(a);
        free(b);
        return CAIRN_ENOMEM;
    }
    free(m->by_id);
    free(m->by_content);
    m->by_id = a;
    m->by_content = b;
    m->tcap = cap;
    for (size_t i = 0; i < m->n; i++) {
        table_put(m->by_id, cap, hash_id(m->e[i].id), (uint32_t)i, m->e, 1);
        table_put(m->by_content, cap, m->e[i].content_hash, (uint32_t)i, m->e, 0);
    }
    return CAIRN_OK;
}

static int index_damaged_at(cairn_mem *m, size_t g, int rc, const char *what);

/* The row a slot of file g's hash tables names, checked; NULL (and the
 * handle damaged) for a slot out of range. */
static ment *gen_slot(cairn_mem *m, size_t g, uint32_t v)
{
    const memindex *mx = &m->gen[g].mx;
    if (v > mx->nrows || v <= mx->n_shadow) {
        index_damaged_at(m, g, CAIRN_ECORRUPT, "a hash table");
        return NULL;
    }
    return cairn__mem_row(m, g, v - 1);
}

/* What a probe looks for. A match that is dead ends the search of its
 * table (an id's newest entry is the one its slot holds); a matcher that
 * wants a live entry checks liveness itself. */
typedef int (*ment_match)(const ment *x, const void *key);

/* Ask for the first slot of key h in every table probe will read, at
 * once: a store probes every file for keys mostly in none, and the misses
 * overlap instead of following one another. */
static void probe_ask(const cairn_mem *m, const uint64_t *t, int content, uint64_t h)
{
    if (m->tcap)
        cairn__prefetch(&t[(size_t)h & (m->tcap - 1)]);
    for (size_t g = m->ng; g-- > 0;) {
        const memindex *mx = &m->gen[g].mx;
        if (mx->tcap)
            cairn__prefetch(&(content ? mx->ctab : mx->idtab)[cairn__mx_slot(h, mx->tcap)]);
    }
}

/* The live entry matching key: first in the RAM table t, then in each
 * file's id table (content: its content table), newest first, all probed
 * from hash h. Ids and contents are unique among live memories, so the
 * first live match is the only one. */
static ment *probe(cairn_mem *m, const uint64_t *t, int content, uint64_t h, ment_match match,
                   const void *key)
{
    size_t i;
    probe_ask(m, t, content, h);
    for (i = (size_t)h & (m->tcap - 1); m->tcap && t[i]; i = (i + 1) & (m->tcap - 1)) {
        ment *x;
        if (SLOT_TAG(t[i]) != SLOT_TAG(h))
            continue;
        x = &m->e[SLOT_ENTRY(t[i])];
        if (match(x, key)) {
            if (x->live)
                return x;
            break; /* dead here; a file may hold a live one */
        }
    }
    for (size_t g = m->ng; g-- > 0;) {
        const memindex *mx = &m->gen[g].mx;
        const uint64_t *ft = content ? mx->ctab : mx->idtab;
        size_t probes = 0;
        for (i = mx->tcap ? (size_t)cairn__mx_slot(h, mx->tcap) : 0; mx->tcap && ft[i];
             i = i + 1 == mx->tcap ? 0 : i + 1) {
            ment *x;
            if (++probes > mx->tcap) { /* a table with no empty slot */
                index_damaged_at(m, g, CAIRN_ECORRUPT, "a hash table");
                return NULL;
            }
            if (SLOT_TAG(ft[i]) != SLOT_TAG(h))
                continue;
            if ((x = gen_slot(m, g, (uint32_t)ft[i])) == NULL)
                return NULL;
            if (match(x, key)) {
                if (x->live)
                    return x;
                break;
            }
        }
    }
    return NULL;
}

static int same_id(const ment *x, const void *key)
{
    return strcmp(x->id, key) == 0;
}

ment *cairn__mem_find_id(cairn_mem *m, const char *id)
{
    return probe(m, m->by_id, 0, hash_id(id), same_id, id);
}

typedef struct content_key {
    cairn_mem *m;
    uint32_t nsi;
    const char *c;
    size_t len;
    uint64_t h;
} content_key;

/* Live only: an older, deleted copy of the content must not hide a live
 * one. A memory of the index files whose store record does not read is
 * taken for the same by its 64-bit hash, namespace and length (reading
 * it, the caller meets the damage). */
static int same_content(const ment *x, const void *key)
{
    const content_key *k = key;
    const char *t;
    if (!(x->live && x->content_hash == k->h && x->nsi == k->nsi && x->content_len == k->len))
        return 0;
    return cairn__mem_text(k->m, x, &t) != CAIRN_OK || memcmp(t, k->c, k->len) == 0;
}

static ment *find_content(cairn_mem *m, uint32_t nsi, const char *c, size_t len, uint64_t h)
{
    content_key k = {m, nsi, c, len, h};
    return probe(m, m->by_content, 1, h, same_content, &k);
}

/* ---- the index files' rows ---------------------------------------------- */

uint64_t cairn__mem_index_covered(const cairn_mem *m)
{
    return m->ng ? m->gen[m->ng - 1].mx.covered : 0;
}

long cairn__mem_gen_of(const cairn_mem *m, uint64_t seq)
{
    for (size_t g = 0; g < m->ng; g++)
        if (seq <= m->gen[g].mx.covered)
            return (long)g;
    return -1;
}

/* File g of the chain is damaged: remove it and the files on it, so that
 * the next open uses the files below (or rebuilds from the log) instead of
 * tripping on it again; by a reader too (the reads of a store never wait
 * for a writer to come and do it). Index files are never changed in
 * place, so the damage is real; a reader that has it mapped keeps its
 * pages. A scratch state that only checks (verify) removes nothing. */
static void set_aside_from(cairn_mem *m, size_t g)
{
    for (; g < m->ng && !m->check_only; g++) {
        /* only the file found damaged, not one a writer put in place since */
        cairn__seqfile_set_aside(m->db, &cairn__seqfile_memindex, m->gen[g].mx.name,
                                 &m->gen[g].mx.id);
    }
}

static int index_damaged_at(cairn_mem *m, size_t g, int rc, const char *what)
{
    char names[2 * MX_NAME_MAX + 16];
    if (m->ng == 0 || m->damaged)
        return m->damaged ? CAIRN_ECORRUPT : cairn__mem_fail(m, rc, "%s: %s", what, cairn_strerror(rc));
    set_aside_from(m, g);
    m->damaged = 1;
    if (g + 1 == m->ng)
        snprintf(names, sizeof names, "%s", m->gen[g].mx.name);
    else
        snprintf(names, sizeof names, "%s (and %zu on it)", m->gen[g].mx.name, m->ng - g - 1);
    return cairn__mem_fail(m, CAIRN_ECORRUPT, "memory index file %s is damaged (%s: %s): %s; "
                           "reopen the store to rebuild it from the log", names, what,
                           cairn_strerror(rc), "removed");
}

int cairn__mem_index_damaged(cairn_mem *m, int rc, const char *what)
{
    return index_damaged_at(m, 0, rc, what); /* which file is not known: all */
}

/* Row i of file g decoded and checked into *r; NULL-safe message. */
static int gen_row_read(cairn_mem *m, size_t g, size_t i, mx_row *r)
{
    const memindex *mx = &m->gen[g].mx;
    int rc = cairn__mx_row(mx, i, r);
    if (rc == CAIRN_OK && (r->nsi >= mx->n_ns || r->seq == 0 || r->seq > mx->covered))
        rc = CAIRN_ECORRUPT;
    if (rc != CAIRN_OK) {
        char what[96];
        snprintf(what, sizeof what, "%s row %zu at offset %" PRIu64, mx->name, i,
                 cairn__mx_row_offset(mx, i));
        index_damaged_at(m, g, rc, what);
    }
    return rc;
}

/* A new entry for a row of file g: NULL, the handle damaged (without
 * setting the file aside: nothing is wrong with it), when out of memory. */
static ment *gen_entry_new(cairn_mem *m, mgen *G)
{
    mentchunk *c = G->chunks;
    if (c == NULL || c->used == MENT_CHUNK) {
        if ((c = malloc(sizeof *c)) == NULL) {
            m->damaged = 1;
            m->row_nomem = 1;
            (void)cairn__mem_fail(m, CAIRN_ENOMEM, "no memory for a row of %s: reopen the store",
                                  G->mx.name);
            return NULL;
        }
        c->next = G->chunks;
        c->used = 0;
        G->chunks = c;
    }
    return &c->e[c->used++];
}

static int note_changed(cairn_mem *m, ment *x, uint64_t changed);

/* A shadow row's fields onto the entry of the memory it changes. */
static void take_shadow_fields(ment *x, const mx_row *r)
{
    x->importance = r->importance;
    x->accessed = r->accessed;
    x->expires = r->expires;
    x->access_count = r->access_count;
    x->category = (char *)(uintptr_t)r->category;
    x->metadata = (char *)(uintptr_t)r->metadata;
}

/* The entry x of a row of file g, just made, takes the shadow row s of a
 * newer file noted for it: checked now (at open only the row's own sum
 * was), as the open once did. */
static int apply_shadow(cairn_mem *m, size_t g, ment *x, cairn__shadowref *s)
{
    mx_row r;
    if (gen_row_read(m, s->gen, s->row, &r) != CAIRN_OK)
        return CAIRN_ECORRUPT;
    if (s->gen <= g || r.seq != x->seq || r.nsi != x->nsi || strcmp(r.id, x->id) != 0 ||
        (r.flags & MX_ROW_DEAD) != 0) {
        char what[160];
        snprintf(what, sizeof what, "%s row %" PRIu32 " changes memory %s (seq %" PRIu64
                 "), which no file below holds", m->gen[s->gen].mx.name, s->row, r.id, r.seq);
        return index_damaged_at(m, s->gen, CAIRN_ECORRUPT, what);
    }
    take_shadow_fields(x, &r);
    if (note_changed(m, x, m->gen[s->gen].mx.covered) != CAIRN_OK) {
        /* the entry is not kept: the next read makes it and tries again */
        m->damaged = 1;
        m->row_nomem = 1;
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory for a row of %s: reopen the store",
                               m->gen[g].mx.name);
    }
    s->flags |= SHADOW_APPLIED;
    return CAIRN_OK;
}

ment *cairn__mem_row(cairn_mem *m, size_t g, size_t i)
{
    mgen *G = &m->gen[g];
    ment *x = G->rowp[i];
    cairn__shadowref *s;
    mx_row r;

    if (x != NULL)
        return x;
    if (gen_row_read(m, g, i, &r) != CAIRN_OK || (x = gen_entry_new(m, G)) == NULL)
        return NULL;
    strcpy(x->id, r.id);
    x->nsi = r.nsi;
    x->live = 1;
    x->content = NULL; /* in the log: cairn__mem_text */
    x->content_len = r.content_len;
    x->category = (char *)(uintptr_t)r.category;
    x->metadata = (char *)(uintptr_t)r.metadata;
    x->importance = r.importance;
    x->created = r.created;
    x->accessed = r.accessed;
    x->expires = r.expires;
    x->access_count = r.access_count;
    x->content_hash = r.content_hash;
    x->owns = 0;
    x->changed = 0;
    x->seq = r.seq;
    s = cairn__shadowmap_find(&m->shadows, r.seq);
    if (s != NULL && (s->flags & (SHADOW_DEAD | SHADOW_APPLIED)) == 0 &&
        apply_shadow(m, g, x, s) != CAIRN_OK)
        return NULL;
    G->rowp[i] = x;
    return x;
}

static long gen_find_row(const cairn_mem *m, size_t g, uint64_t seq);

/* Make the entries of the memories that shadow rows of files from..ng-1
 * change and have not been made (a file written in place of those files
 * carries their changes: write_gen; a visit of every memory: a shadow row
 * naming a memory no file below holds is found). Errors: CAIRN_ECORRUPT,
 * CAIRN_ENOMEM (the handle damaged, cairn__errbuf(m) says why). */
static int shadows_take(cairn_mem *m, size_t from)
{
    for (size_t k = 0; k < m->shadows.cap; k++) {
        cairn__shadowref *s = &m->shadows.slots[k];
        long lg, row;
        if (s->seq == 0 || (s->flags & (SHADOW_DEAD | SHADOW_APPLIED)) != 0 || s->gen < from)
            continue;
        lg = cairn__mem_gen_of(m, s->seq);
        row = lg >= 0 && lg < (long)s->gen ? gen_find_row(m, (size_t)lg, s->seq) : -1;
        if (row < 0) {
            char what[160];
            snprintf(what, sizeof what, "%s row %" PRIu32 " changes the memory of seq %" PRIu64
                     ", which no file below holds", m->gen[s->gen].mx.name, s->row, s->seq);
            return index_damaged_at(m, s->gen, CAIRN_ECORRUPT, what);
        }
        m->row_nomem = 0;
        if (cairn__mem_row(m, (size_t)lg, (size_t)row) == NULL)
            return m->row_nomem ? CAIRN_ENOMEM : CAIRN_ECORRUPT;
    }
    return CAIRN_OK;
}

int cairn__mem_read_all(cairn_mem *m)
{
    for (size_t g = 0; g < m->ng; g++)
        for (size_t i = (size_t)m->gen[g].mx.n_shadow; i < m->gen[g].mx.nrows; i++)
            if (cairn__mem_row(m, g, i) == NULL)
                return CAIRN_ECORRUPT;
    return shadows_take(m, 0);
}

/* Rows of the files that are their own memories (not shadows), in all. */
static size_t gen_rows(const cairn_mem *m)
{
    return m->ng ? m->gen[m->ng - 1].at + (size_t)(m->gen[m->ng - 1].mx.nrows -
                                                   m->gen[m->ng - 1].mx.n_shadow)
                 : 0;
}

size_t cairn__mem_total(const cairn_mem *m)
{
    return gen_rows(m) + m->n;
}

ment *cairn__mem_at(cairn_mem *m, size_t i)
{
    size_t g = m->ng;
    if (i >= gen_rows(m))
        return &m->e[i - gen_rows(m)];
    while (g-- > 0 && m->gen[g].at > i)
        ;
    /* made by cairn__mem_read_all, which the callers ran first */
    return m->gen[g].rowp[i - m->gen[g].at + m->gen[g].mx.n_shadow];
}

ment *cairn__mem_at_loaded(cairn_mem *m, size_t i)
{
    size_t g = m->ng;
    if (i >= gen_rows(m))
        return &m->e[i - gen_rows(m)];
    while (g-- > 0 && m->gen[g].at > i)
        ;
    return cairn__mem_row(m, g, i - m->gen[g].at + (size_t)m->gen[g].mx.n_shadow);
}

uint64_t cairn__mem_seq_at(const cairn_mem *m, size_t i)
{
    size_t g = m->ng;
    if (i >= gen_rows(m))
        return m->e[i - gen_rows(m)].seq;
    while (g-- > 0 && m->gen[g].at > i)
        ;
    return cairn__mx_row_seq(&m->gen[g].mx, i - m->gen[g].at + (size_t)m->gen[g].mx.n_shadow);
}

/* The row of file g holding the memory stored at seq, or -1. The rows
 * are in seq order and their seqs spread about evenly (memories are most
 * of the records), so the search interpolates while the range is wide: a
 * few probes of the mapping instead of log2(rows), each a likely cache
 * miss. */
static long gen_find_row(const cairn_mem *m, size_t g, uint64_t seq)
{
    const memindex *mx = &m->gen[g].mx;
    size_t lo = (size_t)mx->n_shadow, hi = (size_t)mx->nrows;
    for (int probes = 0; hi - lo > 64 && probes < 4; probes++) {
        uint64_t a = cairn__mx_row_seq(mx, lo), b = cairn__mx_row_seq(mx, hi - 1);
        size_t mid;
        if (seq <= a)
            return seq == a ? (long)lo : -1;
        if (seq > b)
            return -1;
        /* a < seq <= b: the guess lies in (lo, hi - 1] */
        mid = lo + 1 + (size_t)((double)(seq - a - 1) / (double)(b - a) * (double)(hi - 2 - lo));
        if (cairn__mx_row_seq(mx, mid) < seq)
            lo = mid + 1;
        else
            hi = mid + 1;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cairn__mx_row_seq(mx, mid) < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < mx->nrows && cairn__mx_row_seq(mx, lo) == seq ? (long)lo : -1;
}

ment *cairn__mem_find_seq(cairn_mem *m, uint64_t seq)
{
    size_t lo = 0, hi = m->n;
    long g;
    if (m->n > 0 && m->e[m->n - 1].seq == seq)
        return &m->e[m->n - 1]; /* the memory just stored: no search */
    if ((g = cairn__mem_gen_of(m, seq)) >= 0) {
        long row = gen_find_row(m, (size_t)g, seq);
        ment *x = row >= 0 ? cairn__mem_row(m, (size_t)g, (size_t)row) : NULL;
        return x != NULL && x->seq == seq ? x : NULL;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->e[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->n && m->e[lo].seq == seq ? &m->e[lo] : NULL;
}

/* The namespace's index, created if asked. -1: absent (or no memory). */
long cairn__mem_ns_index(cairn_mem *m, const char *name, size_t len, int create)
{
    nspace *p;
    for (size_t i = 0; i < m->nns; i++)
        if (strlen(m->ns[i].name) == len && memcmp(m->ns[i].name, name, len) == 0)
            return (long)i;
    if (!create)
        return -1;
    p = realloc(m->ns, (m->nns + 1) * sizeof *p);
    if (p == NULL)
        return -1;
    m->ns = p;
    p = &m->ns[m->nns];
    memset(p, 0, sizeof *p);
    p->name = dup_str(name, len);
    if (p->name == NULL || cairn__ramidx_new(&p->idx, NULL, m->stemmer) != CAIRN_OK) {
        free(p->name);
        return -1;
    }
    if (m->n_ns_sizes > 0) {
        uint64_t h = XXH3_64bits(name, len);
        for (size_t i = 0; i < m->n_ns_sizes; i++)
            if (m->ns_sizes[i].name == h) {
                (void)cairn__ramidx_presize(p->idx, &m->ns_sizes[i].size); /* a hint */
                break;
            }
    }
    return (long)m->nns++;
}

/* ---- applying records (live appends and replay alike) -------------------- */

/* The store's embedder is name/dim from now on (the first vector, or an
 * index file's). */
static int set_store_embedder(cairn_mem *m, const char *name, uint32_t dim)
{
    float *t;
    if (m->vdim == dim && strcmp(m->vname, name) == 0)
        return CAIRN_OK;
    if ((t = realloc(m->vtmp, (size_t)dim * sizeof *t)) == NULL)
        return CAIRN_ENOMEM;
    m->vtmp = t;
    snprintf(m->vname, sizeof m->vname, "%s", name);
    m->vdim = dim;
    return CAIRN_OK;
}

/* r's vector (an unaligned trailer) into namespace p's set. */
static int add_vector(cairn_mem *m, nspace *p, uint64_t seq, const memrec *r)
{
    int rc = set_store_embedder(m, r->embedder, r->dim);
    if (rc == CAIRN_OK && p->vec == NULL)
        rc = cairn__vecset_new(&p->vec, r->embedder, r->dim);
    if (rc != CAIRN_OK)
        return rc;
    memcpy(m->vtmp, r->vec, (size_t)r->dim * sizeof(float));
    return cairn__vecset_add(p->vec, seq, m->vtmp);
}

/* Add x's text to its namespace's index: on the indexing thread if there
 * is one, else now. */
/* The text a memory is indexed under: its content, then the words of its
 * metadata "name" when it has one, so that a search finds a memory by its
 * name (a markdown file's stem, "powershell-arrays") as Search-Memory
 * does. *buf (free()) is set when it is not the content alone.
 * CAIRN_ENOMEM. */
static int indexed_text(cairn_mem *m, const ment *x, const char **text, size_t *len, char **buf)
{
    const char *nm, *content;
    cJSON *o;
    int rc;
    *buf = NULL;
    if ((rc = cairn__mem_text(m, x, &content)) != CAIRN_OK)
        return rc;
    *text = content;
    *len = x->content_len;
    if (x->metadata == NULL || strstr(x->metadata, "\"name\"") == NULL)
        return CAIRN_OK;
    if ((o = cJSON_Parse(x->metadata)) == NULL)
        return CAIRN_ENOMEM; /* stored metadata is JSON: only memory can fail */
    nm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "name"));
    if (nm != NULL && nm[0] != 0) {
        size_t nl = strlen(nm);
        if ((*buf = malloc(x->content_len + 1 + nl)) == NULL) {
            cJSON_Delete(o);
            return CAIRN_ENOMEM;
        }
        memcpy(*buf, content, x->content_len);
        (*buf)[x->content_len] = '\n';
        memcpy(*buf + x->content_len + 1, nm, nl);
        *text = *buf;
        *len = x->content_len + 1 + nl;
    }
    cJSON_Delete(o);
    return CAIRN_OK;
}

/* Texts a read-only handle indexes inline before it starts a thread. */
#define INDEXER_AFTER 4096

static int index_text(cairn_mem *m, const ment *x)
{
    cairn__ramidx *idx = m->ns[x->nsi].idx;
    const char *text;
    size_t len;
    char *buf;
    int rc = indexed_text(m, x, &text, &len, &buf);
    if (rc != CAIRN_OK)
        return rc;
    /* A read-only handle that may run a thread starts one when a fold
     * turns out long (an open far past the newest index file, a view):
     * texts are indexed beside the decoding. Failing to start: inline. */
    if (m->ix == NULL && m->db->read_only && m->db->may_thread && !m->ix_tried &&
        ++m->inline_texts > INDEXER_AFTER) {
        m->ix_tried = 1;
        if (cairn__indexer_new(&m->ix) != CAIRN_OK)
            m->ix = NULL;
    }
    if (m->ix != NULL) /* it frees buf */
        return cairn__indexer_add(m->ix, idx, x->seq, text, len, buf, m->ix_bound);
    rc = cairn__ramidx_add(idx, x->seq, (const uint8_t *)text, len);
    free(buf);
    return rc;
}

static int apply_store(cairn_mem *m, const char *ns, size_t ns_len, uint64_t seq, int64_t ts,
                       const memrec *r)
{
    long nsi = cairn__mem_ns_index(m, ns, ns_len, 1);
    ment *x;
    int rc;

    if (nsi < 0)
        return CAIRN_ENOMEM;
    if (!m->id_checked && cairn__mem_find_id(m, r->id) != NULL)
        return CAIRN_EEXIST; /* a second live memory with one id: not applied */
    if (r->embedder != NULL && (m->vdim != 0 && (m->vdim != r->dim || strcmp(m->vname, r->embedder) != 0)))
        return CAIRN_EINVAL; /* another embedder's vector: never mixed */
    if ((m->n > 0 && seq <= m->e[m->n - 1].seq) || seq <= cairn__mem_index_covered(m))
        return CAIRN_EINVAL;
    if ((m->n + 1) * 2 > m->tcap && tables_grow(m) != CAIRN_OK)
        return CAIRN_ENOMEM;
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        ment *p = realloc(m->e, cap * sizeof *p);
        if (p == NULL)
            return CAIRN_ENOMEM;
        m->e = p;
        m->cap = cap;
    }
    x = &m->e[m->n];
    memset(x, 0, sizeof *x);
    strcpy(x->id, r->id);
    x->nsi = (uint32_t)nsi;
    x->content = keep_str(m, r->content, r->content_len);
    x->content_len = r->content_len;
    x->category = keep_str(m, r->category, strlen(r->category));
    x->metadata = r->metadata ? keep_str(m, r->metadata, strlen(r->metadata)) : NULL;
    if (x->content == NULL || x->category == NULL || (r->metadata && x->metadata == NULL))
        return CAIRN_ENOMEM; /* what it kept is freed with the rest */
    x->importance = r->importance;
    x->created = r->created_at ? r->created_at : ts;
    x->accessed = r->accessed_at ? r->accessed_at : x->created;
    x->access_count = r->access_count;
    x->expires = r->expires_at;
    x->seq = seq;
    x->owns = 0;
    x->content_hash = hash_content(x->nsi, x->content, x->content_len);
    rc = r->embedder != NULL ? add_vector(m, &m->ns[nsi], seq, r) : CAIRN_OK;
    if (rc == CAIRN_OK && (m->lazy_mode || m->n_lazy > 0)) {
        /* After the deferred ones, in seq order (the index takes no other). */
        rc = cairn__grow(NULL, (void **)&m->lazy, &m->lazy_cap, m->n_lazy + 1, sizeof *m->lazy);
        if (rc == CAIRN_OK)
            m->lazy[m->n_lazy++] = m->n;
    } else if (rc == CAIRN_OK) {
        rc = index_text(m, x);
    }
    if (rc != CAIRN_OK && r->embedder != NULL)
        (void)cairn__vecset_remove(m->ns[nsi].vec, seq);
    if (rc != CAIRN_OK)
        return rc;
    x->live = 1;
    m->ns[nsi].live++;
    table_put(m->by_id, m->tcap, hash_id(x->id), (uint32_t)m->n, m->e, 1);
    table_put(m->by_content, m->tcap, x->content_hash, (uint32_t)m->n, m->e, 0);
    m->n++;
    return CAIRN_OK;
}

/* Is x a row of an index file (not of m->e)? */
static int in_files(const cairn_mem *m, const ment *x)
{
    return m->n == 0 || x < m->e || x >= m->e + m->n;
}

/* A row of a file is about to own malloc'd strings: remember it for
 * free_state. */
static int note_owned(cairn_mem *m, ment *x)
{
    if (!in_files(m, x) || x->owns != 0)
        return CAIRN_OK;
    if (cairn__grow(NULL, (void **)&m->owned, &m->owned_cap, m->n_owned + 1, sizeof *m->owned) != CAIRN_OK)
        return CAIRN_ENOMEM;
    m->owned[m->n_owned++] = x;
    return CAIRN_OK;
}

/* A row of a file changes: the next generation carries it as a shadow
 * row. `changed` is CHANGED_RAM, or at open the covered seq of the file
 * whose shadow row changed it. */
static int note_changed(cairn_mem *m, ment *x, uint64_t changed)
{
    if (!in_files(m, x))
        return CAIRN_OK;
    if (x->changed == 0) {
        if (cairn__grow(NULL, (void **)&m->touched, &m->touched_cap, m->n_touched + 1,
                        sizeof *m->touched) != CAIRN_OK) {
            m->stale = 1; /* a generation written now would miss the change */
            return CAIRN_ENOMEM;
        }
        m->touched[m->n_touched++] = x;
    }
    x->changed = changed;
    return CAIRN_OK;
}

static void apply_update(cairn_mem *m, ment *x, const memrec *r)
{
    if ((r->has & (MEMREC_HAS_CATEGORY | MEMREC_HAS_METADATA)) && note_owned(m, x) != CAIRN_OK)
        return; /* no memory: not applied, as a failed strdup below */
    (void)note_changed(m, x, CHANGED_RAM);
    if (r->has & MEMREC_HAS_IMPORTANCE)
        x->importance = r->importance;
    if (r->has & MEMREC_HAS_CATEGORY) {
        char *c = dup_str(r->category, strlen(r->category));
        if (c != NULL) {
            if (x->owns & OWN_CATEGORY)
                free(x->category);
            x->category = c;
            x->owns |= OWN_CATEGORY;
        }
    }
    if (r->has & MEMREC_HAS_METADATA) {
        char *c = r->metadata ? dup_str(r->metadata, strlen(r->metadata)) : NULL;
        m->meta_changes++;
        if (c != NULL || r->metadata == NULL) {
            if (x->owns & OWN_METADATA)
                free(x->metadata);
            x->metadata = c;
            x->owns |= OWN_METADATA;
        }
    }
    if (r->has & MEMREC_HAS_EXPIRES)
        x->expires = r->expires_at;
}

int cairn__mem_index_settle(cairn_mem *m)
{
    int rc = CAIRN_OK;
    for (size_t i = 0; i < m->n_lazy && rc == CAIRN_OK; i++)
        rc = index_text(m, &m->e[m->lazy[i]]);
    m->n_lazy = 0;
    m->lazy_mode = 0;
    if (m->ix != NULL) {
        int wrc = cairn__indexer_wait(m->ix);
        if (rc == CAIRN_OK)
            rc = wrc;
    }
    return cairn__mem_index_settled(m, rc);
}

int cairn__mem_index_settled(cairn_mem *m, int rc)
{
    if (rc == CAIRN_OK)
        return CAIRN_OK;
    m->stale = 1; /* never write an index file that would miss it */
    return cairn__mem_fail(m, rc, "a memory stored earlier could not be added to the text index "
                           "(%s): recall may miss it; reopen the store", cairn_strerror(rc));
}

static void kill_entry_as(cairn_mem *m, ment *x, uint64_t changed)
{
    nspace *p = &m->ns[x->nsi];
    long g = cairn__mem_gen_of(m, x->seq);
    cairn__vecset *v = g >= 0 ? p->gvec[g] : p->vec;
    cairn__ramidx *idx = g >= 0 ? p->gidx[g] : p->idx;
    (void)cairn__mem_index_settle(m); /* it may still be queued (a failure stays in cairn__errbuf(m)) */
    (void)note_changed(m, x, changed);
    if (idx != NULL) {
        const char *text;
        size_t len;
        char *buf;
        if (indexed_text(m, x, &text, &len, &buf) == CAIRN_OK)
            (void)cairn__ramidx_remove(idx, x->seq, (const uint8_t *)text, len);
        free(buf);
    }
    if (v != NULL)
        (void)cairn__vecset_remove(v, x->seq); /* ENOTFOUND: it had no vector */
    x->live = 0;
    m->ns[x->nsi].live--;
}

static void kill_entry(cairn_mem *m, ment *x)
{
    kill_entry_as(m, x, CHANGED_RAM);
}

static int apply_clear(cairn_mem *m, const char *ns)
{
    long nsi = ns ? cairn__mem_ns_index(m, ns, strlen(ns), 0) : -1;
    if (ns != NULL && nsi < 0)
        return CAIRN_OK;
    if (cairn__mem_read_all(m) != CAIRN_OK)
        return CAIRN_ECORRUPT;
    for (size_t i = 0; i < cairn__mem_total(m); i++) {
        ment *x = cairn__mem_at(m, i);
        if (x->live && (ns == NULL || x->nsi == (uint32_t)nsi))
            kill_entry(m, x);
    }
    return CAIRN_OK;
}

static int apply_one(cairn_mem *m, const cairn_record *rec, const memrec *r);

/* Apply one decoded record. A record that cannot apply (unknown id, a
 * second store of a live id) changes nothing and is counted as skipped.
 * A damaged index row met on the way is an error (CAIRN_ECORRUPT): the
 * state can no longer be trusted. */
static int apply(cairn_mem *m, const cairn_record *rec, const memrec *r)
{
    int rc = apply_one(m, rec, r);
    if (rc == CAIRN_OK && m->damaged)
        rc = CAIRN_ECORRUPT;
    if (rc == CAIRN_OK) {
        m->tail_records++;
        m->tail_weight += r->type == CAIRN_REC_MEMORY_ACCESS && r->n_ids > 1 ? r->n_ids : 1;
        if (rec->seq > m->folded)
            m->folded = rec->seq;
    }
    return rc;
}

static int apply_one(cairn_mem *m, const cairn_record *rec, const memrec *r)
{
    ment *x;
    int rc;

    switch (r->type) {
    case CAIRN_REC_MEMORY:
        rc = apply_store(m, rec->ns, rec->ns_len, rec->seq, rec->ts_ms, r);
        if (rc == CAIRN_EEXIST || rc == CAIRN_EINVAL) {
            m->skipped++;
            return CAIRN_OK;
        }
        return rc;
    case CAIRN_REC_MEMORY_UPDATE:
        if ((x = cairn__mem_find_id(m, r->id)) != NULL)
            apply_update(m, x, r);
        else
            m->skipped++;
        return CAIRN_OK;
    case CAIRN_REC_MEMORY_DELETE:
        if ((x = cairn__mem_find_id(m, r->id)) != NULL)
            kill_entry(m, x);
        else
            m->skipped++;
        return CAIRN_OK;
    case CAIRN_REC_MEMORY_ACCESS:
        /* One recall's hits (one access each), or a fold of the side file
         * ACCESS (counts and last times; access.c). */
        for (size_t i = 0; i < r->n_ids; i++)
            if ((x = cairn__mem_find_id(m, r->ids[i])) != NULL) {
                int64_t at = r->counts ? r->lasts[i] : r->accessed_at;
                if (at > x->accessed)
                    x->accessed = at;
                x->access_count += r->counts ? r->counts[i] : 1;
                (void)note_changed(m, x, CHANGED_RAM);
            }
        if (r->counts != NULL) {
            m->acc_fold_file = r->acc_file;
            m->acc_fold_upto = r->acc_upto;
        }
        return CAIRN_OK;
    case CAIRN_REC_MEMORY_CLEAR:
        return apply_clear(m, r->clear_ns);
    case CAIRN_REC_MEMORY_PURGE:
        /* Its other records are gone from the log; it is dead as of here.
         * One a fold never saw live was counted dead when purged. */
        if ((x = cairn__mem_find_id(m, r->id)) != NULL)
            kill_entry(m, x);
        else if (r->purge_live)
            m->base_deleted++;
        /* Its vector fixed the store's embedder: it still does. */
        if (r->embedder != NULL && m->vdim == 0) {
            snprintf(m->vname, sizeof m->vname, "%s", r->embedder);
            m->vdim = r->dim;
        }
        return CAIRN_OK;
    }
    return CAIRN_OK;
}

/* ---- open / close -------------------------------------------------------- */

/* What replay_one returns to end a replay early, with no error: the log
 * ends inside a commit the writer is still writing. */
#define REPLAY_STOP 1

/* One record of a replay: memory records are folded, the rest only
 * counted as seen. */
static int replay_one(void *user, const cairn_record *rec)
{
    cairn_mem *m = user;
    memrec r;
    uint64_t before = m->folded;
    int rc;
    if (rec->seq > m->folded)
        m->folded = rec->seq;
    if (rec->type == CAIRN_REC_COMPACTED) {
        /* Records compaction dropped: the memories they stored are dead,
         * and still counted as such (format-spec/compaction.md). */
        cairn__hole h;
        if (cairn__hole_decode(rec->json, rec->json_len, rec->seq, &h, NULL) == CAIRN_OK) {
            /* A hole that began at or before the fold (its memory records
             * all there, folded as records; the rest events) counts no
             * death again. */
            if (rec->seq > before)
                m->base_deleted += h.deaths;
            if (h.upto > m->folded) /* the seqs it stands for are folded too */
                m->folded = h.upto;
        }
        return CAIRN_OK;
    }
    if ((rec->type < CAIRN_REC_MEMORY || rec->type > CAIRN_REC_MEMORY_CLEAR) &&
        rec->type != CAIRN_REC_MEMORY_PURGE)
        return CAIRN_OK;
    if (cairn__memrec_decode_scan(&m->scan, rec->type, rec->json, rec->json_len, rec->bin,
                                  rec->bin_len, &r, NULL) != CAIRN_OK) {
        m->skipped++;
        return CAIRN_OK;
    }
    if (r.batch_n >= 2) {
        /* A record of a commit of several (an import, a forget): applied
         * only if all of it is in the log (batch.h). */
        int verdict = CAIRN_BATCH_TORN;
        rc = cairn__batch_check(m->db, &m->batch, rec->seq, r.batch_i, r.batch_n, &verdict);
        if (rc == CAIRN_OK && verdict == CAIRN_BATCH_PENDING) {
            /* Not written whole yet (a read-only handle): the fold stops
             * before the first record of it, none of which it applied. */
            m->folded = rec->seq - r.batch_i - 1;
            rc = REPLAY_STOP;
        } else if (rc == CAIRN_OK && verdict == CAIRN_BATCH_TORN) {
            m->skipped++;
            m->unfinished++;
        }
        if (rc != CAIRN_OK || verdict != CAIRN_BATCH_WHOLE) {
            cairn__memrec_done(&r);
            return rc;
        }
    }
    rc = apply(m, rec, &r);
    cairn__memrec_done(&r);
    return rc;
}

/* Fold the records from seq `from` to `to`. */
static int replay_range(cairn_mem *m, uint64_t from, uint64_t to)
{
    int rc = cairn__each_record(m->db, from, to, replay_one, m);
    if (rc == REPLAY_STOP)
        return CAIRN_OK;
    /* A commit found whole whose last records the iteration did not reach:
     * a read-only handle's view can end inside one another process was
     * writing when the iteration began, and its lookup of the last record
     * came later. Fold the rest now: never half of a commit. */
    if (rc == CAIRN_OK && m->batch.verdict == CAIRN_BATCH_WHOLE && m->batch.last > m->folded &&
        m->batch.last <= to) {
        rc = cairn__each_record(m->db, m->folded + 1, m->batch.last, replay_one, m);
        if (rc == CAIRN_OK && m->batch.last > m->folded)
            return cairn__mem_fail(m, CAIRN_ECORRUPT, "replaying memories: record %" PRIu64
                                   " was read, then could not be", m->batch.last);
    }
    if (rc == CAIRN_OK)
        return CAIRN_OK;
    if (m->damaged)
        return CAIRN_ECORRUPT; /* cairn__errbuf(m) names the file */
    return cairn__mem_fail(m, rc, "replaying memories: %s",
                rc == CAIRN_ENOMEM ? "no memory" : cairn_errmsg(m->db));
}

/* Fold the records from seq `from` on. */
static int replay(cairn_mem *m, uint64_t from)
{
    return replay_range(m, from, UINT64_MAX);
}

/* What open_index returns when a file of the chain went missing while it
 * was read (a writer replaced the chain meanwhile): read it again. */
#define CHAIN_MOVED 3

static int open_index(cairn_mem *m, uint64_t max_seq);
static int chain_present(cairn_mem *m);
static void free_state(cairn_mem *m);

/* The state from the newest index file (use_index) and the log after it.
 * Compaction keeps every file there is whole (format-spec/compaction.md),
 * but not one a checkpoint replaced before it ran: when records past the
 * file were dropped and the file is gone, a newer one is there: again. */
static int fold_all(cairn_mem *m, int use_index)
{
    int rc = CAIRN_OK;
    for (int attempt = 0; attempt < 8; attempt++) {
        if (attempt > 0) {
            free_state(m);
            (void)cairn__db_refresh(m->db);
        }
        rc = use_index ? open_index(m, cairn__handed_seq(m->db)) : CAIRN_OK;
        if (rc == CHAIN_MOVED && attempt >= 5) {
            /* Files missing under the newest one for good (set aside as
             * damaged): without them; the writer's close writes a whole one. */
            snprintf(m->index_note, sizeof m->index_note, "a memory index file the newest one "
                     "lies on is missing; rebuilt from the log");
            m->index_outdated = 1;
            use_index = 0;
            rc = CAIRN_OK;
        }
        if (rc == CHAIN_MOVED)
            continue;
        if (rc == CAIRN_OK)
            rc = replay(m, cairn__mem_index_covered(m) + 1);
        if (rc != CAIRN_OK || m->ng == 0 ||
            cairn__dropped_upto(m->db) <= cairn__mem_index_covered(m) || chain_present(m))
            return rc;
    }
    return cairn__mem_fail(m, CAIRN_EIO, "the memory index files kept changing while this "
                           "handle read them; try again");
}

/* ---- keys: a store's fold of others' stores (memkeys.h) ---------------- */

/* What keys_one returns to end a fold by keys: a record the keys cannot
 * stand for (the caller folds the full way). */
#define KEYS_FULL 5

/* Memories the keys hold at most before a store folds the full way (and
 * flushes what it folded): bounds their RAM (8 MiB, memkeys.c: half of
 * its largest tables). */
#define KEYS_MAX 262144

static int keys_active(const cairn_mem *m)
{
    return m->keyed > m->folded;
}

/* Records the keys stand for that the state does not hold: what a close
 * weighs as the tail. */
static uint64_t keys_weight(const cairn_mem *m)
{
    if (!keys_active(m))
        return 0;
    return m->keys.fixed ? m->keyed - m->folded : cairn__memkeys_count(&m->keys);
}

static void keys_drop(cairn_mem *m)
{
    cairn__memkeys_clear(&m->keys);
    m->keyed = 0;
}

/* The last seq this handle has seen: folded, or held as keys. */
static uint64_t seen_seq(const cairn_mem *m)
{
    return keys_active(m) ? m->keyed : m->folded;
}

static int keys_one(void *user, const cairn_record *rec)
{
    cairn_mem *m = user;
    uint64_t nk, ck, ik;

    if (rec->seq <= m->keyed)
        return CAIRN_OK;
    if (rec->type == CAIRN_REC_MEMORY) {
        if (!cairn__memkeys_of_record(rec->ns, rec->ns_len, rec->json, rec->json_len, &nk, &ck, &ik) ||
            cairn__memkeys_count(&m->keys) >= KEYS_MAX ||
            cairn__memkeys_add(&m->keys, nk, ck, ik) != CAIRN_OK)
            return KEYS_FULL;
    } else if (rec->type == CAIRN_REC_COMPACTED || rec->type == CAIRN_REC_MEMORY_PURGE ||
               (rec->type > CAIRN_REC_MEMORY && rec->type <= CAIRN_REC_MEMORY_CLEAR)) {
        return KEYS_FULL; /* changes memories the state or the keys hold */
    }
    m->keyed = rec->seq;
    return CAIRN_OK;
}

/* ---- KEYS: the sets the writer processes share (keyfile.h) ---------- */

/* Is KEYS mapped, checked and attached as this handle's sets for this
 * turn? A file that cannot serve leaves the handle its own sets. */
static int shared_keys(cairn_mem *m, uint64_t log_end, uint64_t fresh_base, int renew)
{
    cairn__memkeys_core *c;

    if (cairn__keyfile_use(&m->kf, m->db, log_end, fresh_base, renew) != CAIRN_OK) {
        if (m->keys.fixed) {
            cairn__memkeys_detach(&m->keys);
            m->keyed = 0;
        }
        return 0;
    }
    c = cairn__keyfile_core(&m->kf);
    if (!m->keys.fixed || m->keys.core != c) {
        cairn__memkeys_attach(&m->keys, c, cairn__keyfile_content(&m->kf),
                              cairn__keyfile_ids(&m->kf), (size_t)m->kf.slots);
        m->keyed = 0;
    }
    return 1;
}

/* The records up to seq are not in the sets, the ones after it will be. */
static void shared_restart(cairn__memkeys_core *c, uint64_t seq)
{
    c->base = seq;
    c->n_ns = 0;
}

/* keys_one for KEYS: a record the keys cannot stand for moves the base
 * past it; full sets, or a purge (no hash of purged content stays), end
 * the fold with m->keys_renew set: the caller makes the file afresh. */
static int keys_one_shared(void *user, const cairn_record *rec)
{
    cairn_mem *m = user;
    cairn__memkeys_core *c = m->keys.core;
    uint64_t nk, ck, ik;

    if (rec->seq <= c->covered)
        return CAIRN_OK;
    if (rec->type == CAIRN_REC_MEMORY) {
        int rc = CAIRN_EINVAL;
        if (cairn__memkeys_of_record(rec->ns, rec->ns_len, rec->json, rec->json_len, &nk, &ck, &ik))
            rc = cairn__memkeys_add(&m->keys, nk, ck, ik);
        if (rc == CAIRN_ENOMEM) {
            m->keys_renew = rec->seq;
            return KEYS_FULL;
        }
        if (rc != CAIRN_OK) /* another shape, or a namespace past the counts' room */
            shared_restart(c, rec->seq);
    } else if (rec->type == CAIRN_REC_MEMORY_PURGE) {
        m->keys_renew = rec->seq;
        return KEYS_FULL;
    } else if (rec->type == CAIRN_REC_COMPACTED ||
               (rec->type > CAIRN_REC_MEMORY && rec->type <= CAIRN_REC_MEMORY_CLEAR &&
                rec->type != CAIRN_REC_MEMORY_ACCESS)) {
        shared_restart(c, rec->seq); /* an update, a delete, a clear, a hole */
    }
    c->covered = rec->seq;
    return CAIRN_OK;
}

/* Count a store record of (base, folded] into the snapshot of the KEYS
 * counts (every memory record there is one KEYS counted: any other kind
 * would have moved the base past it). */
static int keys_count_one(void *user, const cairn_record *rec)
{
    cairn_mem *m = user;
    long slot;

    if (rec->type != CAIRN_REC_MEMORY)
        return CAIRN_OK;
    slot = cairn__memkeys_ns_slot(&m->keys, cairn__memkeys_ns_key(rec->ns, rec->ns_len));
    if (slot < 0)
        return CAIRN_EINVAL; /* not counted: the counts stay unknown */
    m->ksnap_n[slot]++;
    return CAIRN_OK;
}

/* keys_fold through KEYS: bring its sets up to `to` (the records other
 * writers appended without adding their keys, or that a writer killed in
 * its turn left out), then take them when they start at or before this
 * handle's state. -1: KEYS does not serve this handle (its own sets do);
 * KEYS_FULL: the state must fold the full way. */
static int keys_fold_shared(cairn_mem *m, uint64_t to)
{
    uint64_t base = m->folded;
    cairn__memkeys_core *c = NULL;
    int renew = 0, rc = CAIRN_OK;

    for (int round = 0; round < 3; round++) {
        if (!shared_keys(m, to, base, renew))
            return -1;
        c = m->keys.core;
        if (c->covered >= to)
            break;
        m->keys_renew = 0;
        rc = cairn__each_record(m->db, c->covered + 1, to, keys_one_shared, m);
        if (rc != KEYS_FULL || m->keys_renew == 0)
            break;
        renew = 1; /* afresh, holding the records after keys_renew */
        base = m->keys_renew;
    }
    if (rc != CAIRN_OK || c->covered < to || c->base > m->folded)
        return KEYS_FULL;
    m->keyed = to;
    /* The counts' share the state holds (keys_in_ns): none at the base,
     * all of them at covered, else those of the records in between, read
     * once (until the state or the base moves). */
    if (m->ksnap_ok && m->ksnap_seq == m->folded && m->ksnap_base == c->base &&
        m->ksnap_ino == m->kf.ino)
        return CAIRN_OK;
    m->ksnap_ok = 0;
    memset(m->ksnap_n, 0, sizeof m->ksnap_n);
    if (c->covered == m->folded) {
        for (uint64_t i = 0; i < c->n_ns && i < CAIRN__MEMKEYS_NS; i++)
            m->ksnap_n[i] = c->ns_n[i];
    } else if (c->base != m->folded &&
               cairn__each_record(m->db, c->base + 1, m->folded, keys_count_one, m) != CAIRN_OK) {
        return CAIRN_OK; /* the counts stay unknown: a store that reports them folds */
    }
    m->ksnap_ok = 1;
    m->ksnap_seq = m->folded;
    m->ksnap_base = c->base;
    m->ksnap_ino = m->kf.ino;
    return CAIRN_OK;
}

/* Memories of the namespace of ns_key the keys hold and the state does
 * not: 1 and *n when exact, 0 and an upper bound when the handle cannot
 * tell (KEYS counted some the state holds too). */
static int keys_in_ns(const cairn_mem *m, uint64_t ns_key, uint64_t *n)
{
    uint64_t all = cairn__memkeys_in_ns(&m->keys, ns_key);
    long slot;

    *n = all;
    if (!m->keys.fixed)
        return 1; /* the handle's own sets: only what it has not folded */
    if (!m->ksnap_ok || m->ksnap_seq != m->folded || m->ksnap_base != m->keys.core->base ||
        m->ksnap_ino != m->kf.ino)
        return 0;
    if ((slot = cairn__memkeys_ns_slot(&m->keys, ns_key)) >= 0)
        *n = all - (m->ksnap_n[slot] <= all ? m->ksnap_n[slot] : all);
    return 1;
}

/* Hold the records up to `to` as keys. KEYS_FULL when they cannot stand
 * for them (the records from keyed on are then for the full fold; the
 * keys taken so far stay right). */
static int keys_fold(cairn_mem *m, uint64_t to)
{
    int rc;
    if (m->stale || m->damaged || cairn__dropped_upto(m->db) > m->folded)
        return KEYS_FULL;
    if ((rc = keys_fold_shared(m, to)) != -1)
        return rc;
    if (!keys_active(m)) {
        keys_drop(m);
        m->keyed = m->folded;
    }
    if (to <= m->keyed)
        return CAIRN_OK;
    rc = cairn__each_record(m->db, m->keyed + 1, to, keys_one, m);
    if (rc != CAIRN_OK || m->keyed < to)
        return KEYS_FULL; /* an error is the full fold's to report */
    return CAIRN_OK;
}

/* Before applying a record this handle appended at seq: fold what other
 * handles appended since this one last looked, so that the state is always
 * the fold of a prefix of the log (an index file written from it covers
 * exactly what it says). */
static int reload(cairn_mem *m);

/* Fold the log after m->folded up to `to`. A compaction that dropped
 * records this handle had not folded (before the fold, or while it ran:
 * its iterator may read the new files) took with them what they did to
 * memories this handle holds: fold again from the index file, which
 * compaction keeps whole (format-spec/compaction.md). Returns
 * FOLD_RELOADED when it did (the state then covers the whole log). */
#define FOLD_RELOADED 2
static int fold_on(cairn_mem *m, uint64_t to)
{
    uint64_t before = m->folded;
    int rc = CAIRN_OK;

    keys_drop(m); /* the records they stand for are folded now */

    if (cairn__dropped_upto(m->db) <= before && to > before)
        rc = replay_range(m, before + 1, to);
    if (rc == CAIRN_OK && cairn__dropped_upto(m->db) > before)
        rc = reload(m) == CAIRN_OK ? FOLD_RELOADED : CAIRN_ECORRUPT;
    return rc;
}

/* What other handles appended before the record this handle appended at
 * seq. FOLD_RELOADED: the state was folded again and holds seq and what
 * follows already (a compaction by another handle of this store in the
 * same turn: the records are not to be applied again). */
static int fold_gap(cairn_mem *m, uint64_t seq)
{
    int rc = seq > m->folded + 1 || cairn__dropped_upto(m->db) > m->folded
                 ? fold_on(m, seq - 1)
                 : CAIRN_OK;
    if (rc != CAIRN_OK && rc != FOLD_RELOADED)
        m->stale = 1;
    return rc;
}

/* Fold what other handles appended since this one last looked; keys: a
 * store's, which may hold others' stores as keys alone. */
static int catch_up(cairn_mem *m, int keys)
{
    uint64_t last;
    int rc = cairn__db_refresh(m->db);

    if (rc != CAIRN_OK)
        return cairn__mem_fail(m, rc, "%s", cairn_errmsg(m->db));
    last = cairn__handed_seq(m->db);
    if (last <= seen_seq(m) && cairn__dropped_upto(m->db) <= m->folded &&
        (keys || !keys_active(m)))
        return CAIRN_OK;
    /* A store's turn folds others' stores as keys, when they can serve. */
    if (keys && keys_fold(m, last) == CAIRN_OK)
        return CAIRN_OK;
    m->lazy_mode = 1; /* texts wait until a read needs the index */
    rc = fold_on(m, last);
    if (rc == FOLD_RELOADED)
        rc = CAIRN_OK;
    if (rc != CAIRN_OK)
        m->stale = 1;
    return rc;
}

int cairn__mem_catch_up(cairn_mem *m)
{
    return catch_up(m, 0);
}

int cairn__mem_unkey(cairn_mem *m)
{
    return keys_active(m) ? cairn__mem_catch_up(m) : CAIRN_OK;
}

typedef struct wait_fold {
    cairn_mem *m;
    int keys;                /* a store's turn: catch_up's keys */
} wait_fold;

/* While another process holds the lock (cairn__turn_begin_busy): fold
 * what it appended so far, so that the catch-up at the start of the turn,
 * which every other writer waits for, is short. A fold of a whole prefix
 * of the log, as a reader's; a store's wait takes others' stores as keys
 * when they can serve (keys_fold). A failure is the catch-up's: the handle is
 * stale (it writes no index file), and the turn that follows returns the
 * error, kept in wait_rc and wait_err meanwhile (another thread of the
 * handle may reset cairn__errbuf(m)). */
static int fold_waiting(void *user)
{
    cairn_mem *m = ((wait_fold *)user)->m;
    uint64_t before, last;
    int rc, more;

    if (pthread_mutex_trylock(&m->mu) != 0)
        return 0; /* another thread of this handle works: leave it be */
    before = seen_seq(m);
    if (m->stale || m->damaged || m->wait_rc != CAIRN_OK || cairn__db_refresh(m->db) != CAIRN_OK ||
        ((last = cairn__handed_seq(m->db)) <= before &&
         cairn__dropped_upto(m->db) <= m->folded)) {
        pthread_mutex_unlock(&m->mu);
        return 0;
    }
    /* KEYS is read and changed in turns only: a wait with it has nothing
     * to do (the holder adds its keys itself) but to map it ahead. */
    if (((wait_fold *)user)->keys && !m->kf.off) {
        cairn__keyfile_premap(&m->kf, m->db);
        pthread_mutex_unlock(&m->mu);
        return 0;
    }
    if (((wait_fold *)user)->keys && keys_fold(m, last) == CAIRN_OK) {
        more = m->keyed > before;
        pthread_mutex_unlock(&m->mu);
        return more;
    }
    m->lazy_mode = 1;
    rc = fold_on(m, last);
    if (rc == FOLD_RELOADED)
        rc = CAIRN_OK;
    if (rc != CAIRN_OK) {
        m->stale = 1;
        m->wait_rc = rc;
        memcpy(m->wait_err, cairn__errbuf(m), sizeof m->wait_err);
    }
    more = rc == CAIRN_OK && m->folded > before;
    pthread_mutex_unlock(&m->mu);
    return more;
}

static int turn_begin(cairn_mem *m, int keys)
{
    wait_fold wf = {m, keys};
    int rc;

    /* Readers of this handle go on while another process holds the lock. */
    pthread_mutex_unlock(&m->mu);
    rc = cairn__turn_begin_busy(m->db, fold_waiting, &wf);
    pthread_mutex_lock(&m->mu);
    if (rc == CAIRN_OK && m->wait_rc != CAIRN_OK) { /* the fold while waiting failed */
        rc = cairn__mem_fail(m, m->wait_rc, "%s", m->wait_err);
        m->wait_rc = CAIRN_OK;
        (void)cairn__turn_end(m->db);
        return rc;
    }
    if (rc != CAIRN_OK)
        return cairn__mem_fail(m, rc, "%s", cairn_errmsg(m->db));
    rc = catch_up(m, keys);
    if (rc != CAIRN_OK)
        (void)cairn__turn_end(m->db);
    return rc;
}

int cairn__mem_turn_begin(cairn_mem *m)
{
    return turn_begin(m, 0);
}

int cairn__mem_turn_hold(cairn_mem *m)
{
    int rc;
    pthread_mutex_lock(&m->tier_write_mu);
    if ((rc = cairn__turn_begin(m->db)) == CAIRN_OK)
        return CAIRN_OK;
    pthread_mutex_unlock(&m->tier_write_mu);
    return cairn__mem_fail(m, rc, "%s", cairn_errmsg(m->db));
}

int cairn__mem_turn_release(cairn_mem *m, int rc)
{
    int erc = cairn__turn_end(m->db);
    pthread_mutex_unlock(&m->tier_write_mu);
    if (rc == CAIRN_OK && erc != CAIRN_OK)
        rc = cairn__mem_fail(m, erc, "%s", cairn_errmsg(m->db));
    return rc;
}

int cairn__mem_embed_one(cairn_mem *m, const char *text, float **out, uint64_t *gen)
{
    size_t len = strlen(text);
    int rc = CAIRN_OK;
    *out = NULL;
    pthread_mutex_lock(&m->mu);
    *gen = m->emb_gen;
    if (m->emb.dim != 0 && (m->emb.embed != NULL || m->emb.embed_batch != NULL)) {
        if ((*out = malloc((size_t)m->emb.dim * sizeof **out)) == NULL)
            rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        else if ((rc = cairn__mem_embed(m, &text, &len, 1, *out)) != CAIRN_OK) {
            free(*out);
            *out = NULL;
        }
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int cairn__mem_embedder_is(cairn_mem *m, uint64_t gen)
{
    int same;
    pthread_mutex_lock(&m->mu);
    same = m->emb_gen == gen;
    pthread_mutex_unlock(&m->mu);
    return same;
}

int cairn__mem_turn_end(cairn_mem *m, int rc)
{
    int erc = cairn__turn_end(m->db);
    if (rc == CAIRN_OK && erc != CAIRN_OK)
        rc = cairn__mem_fail(m, erc, "%s", cairn_errmsg(m->db));
    return rc;
}

/* Free a text index the state no longer uses: on the merger thread if
 * there is one (a RAM tail's index of 65,536 memories is ~100,000 blocks
 * to free, ~30 ms a flush would wait for). */
static void let_go_index(cairn_mem *m, cairn__ramidx *x)
{
    if (x != NULL && (m->merger == NULL || cairn__merger_free_index(m->merger, x) != 0))
        cairn__ramidx_free(x);
}

/* Drop the index files from m (namespaces keep their RAM indexes). */
static void drop_index(cairn_mem *m)
{
    for (size_t i = 0; i < m->nns; i++) {
        for (size_t g = 0; g < MEM_GEN_MAX; g++) {
            let_go_index(m, m->ns[i].gidx[g]);
            m->ns[i].gidx[g] = NULL;
            cairn__vecset_free(m->ns[i].gvec[g]);
            m->ns[i].gvec[g] = NULL;
        }
        cairn__ivf_free(m->ns[i].ivf);
        m->ns[i].ivf = NULL;
        free(m->ns[i].ivf_rows);
        m->ns[i].ivf_rows = NULL;
    }
    for (size_t g = 0; g < m->ng; g++) {
        free(m->gen[g].rowp);
        for (mentchunk *c = m->gen[g].chunks, *next; c != NULL; c = next) {
            next = c->next;
            free(c);
        }
        if (m->merger == NULL || m->gen[g].mx.map == NULL ||
            cairn__merger_unmap(m->merger, m->gen[g].mx.map, m->gen[g].mx.len) != 0)
            cairn__mx_close(&m->gen[g].mx);
    }
    memset(m->gen, 0, sizeof m->gen);
    m->ng = 0;
    cairn__shadowmap_clear(&m->shadows);
    m->n_touched = 0;
    m->index_live = 0;
}

static void pend_drop(cairn_mem *m);

/* Map the chain of files whose top is the newest file covering at most
 * last_seq, top first into chain (*n of them). */
static int map_chain(cairn_mem *m, uint64_t last_seq, memindex *chain, size_t *n, cairn__err *e)
{
    uint64_t want = last_seq;
    int rc = CAIRN_OK;
    *n = 0;
    /* A flush's file not in place yet is the top (see "Deferred flushes"),
     * unless a compaction dropped records since it was written. */
    if (m->pend.on && m->pend.covered <= last_seq) {
        if (cairn__dropped_upto(m->db) == m->pend.dropped &&
            cairn__mx_map_fd(&chain[0], m->pend.fd, m->pend.covered, e) == CAIRN_OK) {
            if (chain[0].base == 0) {
                *n = 1;
                return CAIRN_OK;
            }
            want = chain[0].base;
            *n = 1;
        } else {
            pend_drop(m);
        }
    }
    for (;;) {
        if (*n == MEM_GEN_MAX)
            return cairn__fail(e, CAIRN_ECORRUPT, "%s: more than %d memory index files lie on "
                               "one another", chain[0].name, MEM_GEN_MAX);
        rc = cairn__mx_open(&chain[*n], m->db->io, m->db->dirfd, want, *n > 0, e);
        if (rc != CAIRN_OK)
            break;
        if (chain[*n].base == 0) {
            (*n)++;
            return CAIRN_OK;
        }
        want = chain[(*n)++].base;
    }
    /* The file a flush's file not in place lies on is gone (another
     * process's checkpoint replaced it): the chain on disk without it. */
    if (rc == CAIRN_ENOTFOUND && *n == 1 && m->pend.on && chain[0].covered == m->pend.covered) {
        cairn__mx_close(&chain[0]);
        pend_drop(m);
        return map_chain(m, last_seq, chain, n, e);
    }
    /* A file below the top is gone: replaced meanwhile, or set aside. */
    return rc == CAIRN_ENOTFOUND && *n > 0 ? CHAIN_MOVED : rc;
}

/* File g's namespaces into m (each file lists every namespace of the
 * files below it first, in their order), and its rows' place. */
static int take_gen(cairn_mem *m, size_t g, cairn__err *e)
{
    mgen *G = &m->gen[g];
    int rc = CAIRN_OK;

    if ((G->rowp = calloc(G->mx.nrows ? G->mx.nrows : 1, sizeof *G->rowp)) == NULL)
        return cairn__fail(e, CAIRN_ENOMEM, "no memory for %s", G->mx.name);
    G->at = g == 0 ? 0
                   : m->gen[g - 1].at + (size_t)(m->gen[g - 1].mx.nrows - m->gen[g - 1].mx.n_shadow);
    if (G->mx.n_ns < (g == 0 ? 0 : m->gen[g - 1].mx.n_ns))
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: fewer namespaces than the file below",
                           G->mx.name);
    for (size_t i = 0; rc == CAIRN_OK && i < G->mx.n_ns; i++) {
        const char *name = NULL;
        uint64_t live = 0;
        cairn__ramidx *x = NULL;
        cairn__vecset *v = NULL;
        long nsi;
        rc = cairn__mx_ns(&G->mx, i, m->stemmer, &name, &live, &x, &v);
        if (rc != CAIRN_OK)
            return cairn__fail(e, rc, "%s: namespace %zu is damaged", G->mx.name, i);
        if (v != NULL && m->vdim != 0 &&
            (cairn__vecset_dim(v) != m->vdim || strcmp(cairn__vecset_embedder(v), m->vname) != 0))
            rc = cairn__fail(e, CAIRN_ECORRUPT, "%s: namespace %zu holds vectors of another embedder",
                             G->mx.name, i);
        else if (v != NULL)
            rc = set_store_embedder(m, cairn__vecset_embedder(v), (uint32_t)cairn__vecset_dim(v));
        if (rc != CAIRN_OK) {
            cairn__ramidx_free(x);
            cairn__vecset_free(v);
            if (rc == CAIRN_ENOMEM)
                (void)cairn__fail(e, rc, "no memory for the vectors of %s", G->mx.name);
            break;
        }
        nsi = cairn__mem_ns_index(m, name, strlen(name), 1);
        if (nsi != (long)i) { /* no memory, or a name twice, or out of order */
            cairn__ramidx_free(x);
            cairn__vecset_free(v);
            rc = cairn__fail(e, nsi < 0 ? CAIRN_ENOMEM : CAIRN_ECORRUPT, "%s: namespace %zu: %s",
                             G->mx.name, i, nsi < 0 ? "no memory" : "not in the order of the file below");
            break;
        }
        m->ns[i].gidx[g] = x;
        m->ns[i].gvec[g] = v;
        m->ns[i].live += live;
    }
    return rc;
}

/* Take file g's shadow rows: note those that change a memory of the files
 * below (its entry takes it when made), apply those that end one (the
 * namespaces' counts and text indexes change now). A state that only
 * checks (verify) applies them all, checking each against the memory it
 * changes. Returns the memories they ended in *kills. */
static int take_shadows(cairn_mem *m, size_t g, uint64_t *kills, cairn__err *e)
{
    const memindex *mx = &m->gen[g].mx;
    if (mx->n_shadow > UINT32_MAX)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: too many shadow rows", mx->name);
    for (size_t i = 0; i < mx->n_shadow; i++) {
        mx_row r;
        long lg, row;
        ment *x = NULL;
        cairn__shadowref *before;
        int rc = gen_row_read(m, g, i, &r);
        if (rc != CAIRN_OK)
            return cairn__fail(e, rc, "%s: row %zu is damaged", mx->name, i);
        if (r.seq > mx->base)
            return cairn__fail(e, CAIRN_ECORRUPT, "%s: shadow row %zu changes seq %" PRIu64
                               ", which is not below it", mx->name, i, r.seq);
        before = cairn__shadowmap_find(&m->shadows, r.seq);
        if (before != NULL && (before->flags & SHADOW_DEAD) != 0)
            return cairn__fail(e, CAIRN_ECORRUPT, "%s: row %zu changes memory %s (seq %" PRIu64
                               "), which a file below ended", mx->name, i, r.id, r.seq);
        if (!m->check_only && (r.flags & MX_ROW_DEAD) == 0) {
            if (cairn__shadowmap_put(&m->shadows, r.seq, (uint32_t)g, (uint32_t)i, 0) != CAIRN_OK)
                return cairn__fail(e, CAIRN_ENOMEM, "no memory for %s", mx->name);
            continue;
        }
        lg = cairn__mem_gen_of(m, r.seq);
        row = lg >= 0 && (size_t)lg < g ? gen_find_row(m, (size_t)lg, r.seq) : -1;
        m->row_nomem = 0;
        if (row >= 0)
            x = cairn__mem_row(m, (size_t)lg, (size_t)row);
        if (x == NULL && m->row_nomem)
            return cairn__fail(e, CAIRN_ENOMEM, "no memory for %s", mx->name);
        if (x == NULL || !x->live || x->nsi != r.nsi || strcmp(x->id, r.id) != 0)
            return cairn__fail(e, CAIRN_ECORRUPT, "%s: row %zu changes memory %s (seq %" PRIu64
                               "), which no file below holds live", mx->name, i, r.id, r.seq);
        if (r.flags & MX_ROW_DEAD) {
            kill_entry_as(m, x, mx->covered);
            ++*kills;
            if (cairn__shadowmap_put(&m->shadows, r.seq, (uint32_t)g, (uint32_t)i, SHADOW_DEAD) !=
                CAIRN_OK)
                return cairn__fail(e, CAIRN_ENOMEM, "no memory for %s", mx->name);
            continue;
        }
        take_shadow_fields(x, &r);
        if (note_changed(m, x, mx->covered) != CAIRN_OK)
            return cairn__fail(e, CAIRN_ENOMEM, "no memory for %s", mx->name);
    }
    return CAIRN_OK;
}

/* Take the newest usable chain of index files, or note why none is used. */
static int open_index(cairn_mem *m, uint64_t last_seq)
{
    memindex chain[MEM_GEN_MAX + 1];
    char below[MX_NAME_MAX] = "";
    cairn__fileid below_id;
    cairn__err e;
    size_t n = 0, bad = 0;
    uint64_t kills = 0;
    int rc;

    memset(chain, 0, sizeof chain);
    rc = map_chain(m, last_seq, chain, &n, &e);
    if (rc == CAIRN_ENOTFOUND && n == 0)
        return CAIRN_OK;
    if (rc == CHAIN_MOVED) {
        for (size_t i = 0; i < n; i++)
            cairn__mx_close(&chain[i]);
        return CHAIN_MOVED;
    }
    /* The file below the mapped ones that failed to map (if that is what
     * failed; a chain too long names none). */
    if (rc != CAIRN_OK && n < MEM_GEN_MAX)
        snprintf(below, sizeof below, "%s", chain[n].name);
    below_id = rc != CAIRN_OK && n < MEM_GEN_MAX ? chain[n].id : (cairn__fileid){0, 0, 0};
    /* This build can never use an older file (not bound to its log, terms
     * of older tokenizer rules, no generations): the writer's close
     * replaces it, however few records the store has. */
    if (rc == CAIRN_EVERSION && n < MEM_GEN_MAX && cairn__mx_is_older(&chain[n]))
        m->index_outdated = 1;
    /* A file put in place unsynced in an earlier boot may be torn (the
     * machine went down before its pages reached the disk): it and the
     * files on it are set aside, and the chain is read again from the file
     * below; the records they held are replayed from the log. */
    if (rc == CAIRN_OK && !m->check_only)
        for (size_t k = n; k-- > 0;) {
            uint64_t boot = chain[k].unsynced_boot;
            if (boot == 0 || boot == cairn__boot_id())
                continue;
            snprintf(m->index_note, sizeof m->index_note, "%s was put in place unsynced before "
                     "the machine restarted: set aside, its records replayed from the log",
                     chain[k].name);
            m->unsynced_gone = 1;
            for (size_t i = 0; i <= k; i++)
                cairn__seqfile_set_aside(m->db, &cairn__seqfile_memindex, chain[i].name,
                                         &chain[i].id);
            for (size_t i = 0; i < n; i++)
                cairn__mx_close(&chain[i]);
            return CHAIN_MOVED;
        }
    /* Oldest first into m->gen: each file's rows apply on those below (a
     * shadow row's memory is found below it: cairn__mem_gen_of looks from
     * the oldest up). */
    for (size_t k = 0; k < n; k++)
        m->gen[k] = (mgen){chain[n - 1 - k], NULL, NULL, 0};
    m->ng = n;
    for (size_t g = 0; rc == CAIRN_OK && g < n; g++) {
        const memindex *mx = &m->gen[g].mx;
        bad = g;
        /* Only a file folded from this store's log as it is now: not
         * another store's, not one of records a cut tail took away. */
        rc = cairn__logbind_check(m->db, mx->name, mx->covered, &mx->bind, &e);
        if (rc == CAIRN_OK && strcmp(mx->stemmer, m->stemmer) != 0)
            rc = cairn__fail(&e, CAIRN_EINVAL, "%s was built with stemmer \"%s\", not \"%s\"",
                             mx->name, mx->stemmer, m->stemmer);
        if (rc == CAIRN_OK)
            rc = take_gen(m, g, &e);
        if (rc == CAIRN_OK && g > 0)
            rc = take_shadows(m, g, &kills, &e);
    }
    if (rc == CAIRN_ENOMEM)
        return cairn__mem_fail(m, rc, "%s", e.msg); /* the caller frees the state */
    if (rc != CAIRN_OK) {
        size_t k = strlen(e.msg) < sizeof m->index_note - 32 ? strlen(e.msg) : sizeof m->index_note - 32;
        memcpy(m->index_note, e.msg, k);
        strcpy(m->index_note + k, "; rebuilt from the log");
        /* Damaged: remove it and the files on it (those below it are
         * sound). Unreadable for now (EIO), or built with another stemmer
         * or tokenizer: leave them be. */
        if (rc == CAIRN_ECORRUPT || rc == CAIRN_ECHECKSUM) {
            if (below[0] != 0 && !m->check_only)
                cairn__seqfile_set_aside(m->db, &cairn__seqfile_memindex, below, &below_id);
            m->damaged = 0;
            set_aside_from(m, below[0] != 0 ? 0 : bad);
            m->index_outdated = 1; /* the writer's close writes a good one */
        }
        m->damaged = 0;
        drop_index(m);
        for (size_t i = 0; i < m->nns; i++) {
            free(m->ns[i].name);
            cairn__ramidx_free(m->ns[i].idx);
            cairn__vecset_free(m->ns[i].vec);
            m->ns[i].vec = NULL;
        }
        m->nns = 0;
        m->vdim = 0;
        m->vname[0] = 0;
        m->base_deleted = 0;
        return CAIRN_OK;
    }
    {
        const memindex *top = &m->gen[m->ng - 1].mx;
        m->folded = top->covered;
        m->skipped = top->skipped;
        m->base_deleted = top->deleted - (kills < top->deleted ? kills : top->deleted);
        for (size_t i = 0; i < m->nns; i++)
            m->index_live += m->ns[i].live;
    }
    return CAIRN_OK;
}

/* Are the files of the chain in use still there? */
static int chain_present(cairn_mem *m)
{
    for (size_t g = 0; g < m->ng; g++)
        if (!(m->pend.on && m->gen[g].mx.covered == m->pend.covered) &&
            faccessat(m->db->dirfd, m->gen[g].mx.name, F_OK, 0) != 0)
            return 0;
    return 1;
}

static int open_mem(cairn_db *db, const cairn_mem_options *o, int use_index, cairn_mem **out);
static void free_state(cairn_mem *m);
static void free_all(cairn_mem *m);

/* How a checkpoint came about. */
enum {
    CKPT_EXPLICIT, /* cairn_mem_checkpoint: the tail, and merges by the policy */
    CKPT_CLOSE,    /* cairn_mem_close */
    CKPT_FLUSH,    /* the RAM tail reached MEM_FLUSH_ROWS memories */
    CKPT_WHOLE     /* one whole file (a purge, a compaction) */
};

static int checkpoint_locked(cairn_mem *m, int mode);
static int checkpoint_turn(cairn_mem *m, int mode);

int cairn_mem_open(cairn_db *db, const cairn_mem_options *o, cairn_mem **out)
{
    int rc = open_mem(db, o, 1, out);
    if (rc == CAIRN_ECORRUPT && *out == NULL) /* a damaged index row: without the file */
        rc = open_mem(db, o, 0, out);
    return rc;
}

static int open_mem(cairn_db *db, const cairn_mem_options *o, int use_index, cairn_mem **out)
{
    cairn_mem_options def = CAIRN_MEM_OPTIONS_INIT;
    cairn_stats st;
    cairn_mem *m;
    int rc;

    *out = NULL;
    if (o == NULL)
        o = &def;
    if (db == NULL || o->version != CAIRN_MEM_OPTIONS_VERSION || o->half_life_days < 0 ||
        o->max_retention_days < 0 ||
        o->w_relevance < 0 || o->w_importance < 0 || o->w_recency < 0 || o->w_access < 0 ||
        (o->fusion != CAIRN_FUSION_RRF && o->fusion != CAIRN_FUSION_SCORE) ||
        !(o->semantic_weight >= 0 && o->semantic_weight <= 1))
        return CAIRN_EINVAL;
    if (o->stemmer != NULL && strlen(o->stemmer) >= sizeof m->stemmer)
        return CAIRN_EINVAL;
    m = calloc(1, sizeof *m);
    cairn__errbuf_drop(m); /* a handle that lived here before */
    if (m == NULL)
        return CAIRN_ENOMEM;
    m->db = db;
    m->flush_rows = MEM_FLUSH_ROWS;
    strcpy(m->stemmer, o->stemmer ? o->stemmer : "english");
    m->half_life = o->half_life_days > 0 ? o->half_life_days : 30.0;
    m->max_retention = o->max_retention_days > 0 ? o->max_retention_days : 90.0;
    m->max_memories = o->max_memories; /* 0: the store's setting */
    m->fusion = o->fusion;
    m->w_sem = o->semantic_weight > 0            ? o->semantic_weight
               : o->fusion == CAIRN_FUSION_RRF ? 1.0
                                               : MEM_SEMANTIC_WEIGHT;
    if (o->w_relevance + o->w_importance + o->w_recency + o->w_access == 0) {
        m->w_rel = 0.5;
        m->w_imp = 0.3;
        m->w_rec = 0.2;
        m->w_acc = 0.0;
    } else {
        m->w_rel = o->w_relevance;
        m->w_imp = o->w_importance;
        m->w_rec = o->w_recency;
        m->w_acc = o->w_access;
    }
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->tier_mu, NULL);
    pthread_mutex_init(&m->tier_write_mu, NULL);
    m->kern = cairn__vkernel_best();
    rc = cairn__tok_new(&m->tok, NULL, m->stemmer);
    if (rc == CAIRN_OK && tables_grow(m) != CAIRN_OK)
        rc = CAIRN_ENOMEM;
    if (rc == CAIRN_OK)
        rc = cairn_stats_get(db, &st);
    /* A writable store that may run threads indexes on one more; a
     * failure to start it only means indexing inline. */
    if (rc == CAIRN_OK && !db->read_only && db->background && cairn__indexer_new(&m->ix) != CAIRN_OK)
        m->ix = NULL;
    if (rc == CAIRN_OK)
        rc = fold_all(m, use_index);
    if (rc == CAIRN_OK)
        rc = cairn__mem_index_settle(m);
    if (rc != CAIRN_OK) {
        /* the handle goes: its detail stays readable as the store's */
        if (cairn__errbuf(m)[0] != 0)
            snprintf(cairn__errbuf(db), CAIRN_ERRMSG_MAX, "%s", cairn__errbuf(m));
        cairn_mem_close(m);
        return rc;
    }
    m->opened = 1;
    /* A writable handle proves itself on the first store (CAIRN_EPERM). */
    m->read_only = 0;
    /* A writable handle on a store with background threads merges its
     * index files and compacts the log on one more (merger.h); without
     * it, merges are inline and compaction is asked for. */
    if (!db->read_only && db->background) {
        m->bg_merge = 1; /* set before the thread reads it */
        if (cairn__merger_new(&m->merger, m) != CAIRN_OK)
            m->bg_merge = 0;
        else if (m->ng >= 2)
            cairn__merger_kick(m->merger);
    }
    *out = m;
    return CAIRN_OK;
}

static void free_entry(ment *x)
{
    if (x->owns & OWN_CONTENT)
        free(x->content);
    if (x->owns & OWN_CATEGORY)
        free(x->category);
    if (x->owns & OWN_METADATA)
        free(x->metadata);
    x->owns = 0; /* a row noted twice in m->owned is freed once */
}

/* Memory records after the newest index file in the directory: another
 * process may have written one since this handle opened, and a close
 * writes a new file only when that one leaves MEM_CHECKPOINT_MIN records
 * out (many processes closing one after the other write one file, not
 * one each). Past a file of another process, the seqs after it bound the
 * count. */
static uint64_t records_after_newest_file(cairn_mem *m)
{
    uint64_t newest = cairn__seqfile_newest(&cairn__seqfile_memindex, m->db->io, m->db->dirfd);
    if (newest <= cairn__mem_index_covered(m))
        return m->tail_weight + keys_weight(m);
    return seen_seq(m) > newest ? seen_seq(m) - newest : 0;
}

/* Should a close write an index file? Only when the newest file in the
 * directory leaves out MEM_CHECKPOINT_MIN memory records. The file it
 * writes holds what changed after the files in use (a generation; see
 * merge_from), so its cost follows the records, not the store. Asked
 * before the turn and again inside it, after the catch-up: of many
 * processes closing at once, the first writes the file. */
static int close_wants_checkpoint(cairn_mem *m)
{
    if (m->index_outdated || m->chain_reread || m->unsynced_gone)
        return 1;
    return m->tail_weight + keys_weight(m) >= MEM_CHECKPOINT_MIN &&
           records_after_newest_file(m) >= MEM_CHECKPOINT_MIN;
}

/* Records a close leaves to fold in its turn, at most (close_prefold). */
#define CLOSE_PREFOLD_LEFT 1024

/* A close whose state is behind the log by the stores of other processes
 * (held as keys while it stored) folds them before its turn, as a reader
 * does, and has their texts indexed: in its turn it then folds only what
 * came after, and the other writers wait for its file's write, not for
 * the fold. Best effort: what fails here is done again in the turn. */
static void close_prefold(cairn_mem *m)
{
    uint64_t newest;
    int rc;

    if (!keys_active(m) || m->stale || m->damaged || m->db->read_only ||
        cairn__db_refresh(m->db) != CAIRN_OK)
        return;
    newest = cairn__seqfile_newest(&cairn__seqfile_memindex, m->db->io, m->db->dirfd);
    if (cairn__handed_seq(m->db) < newest + MEM_CHECKPOINT_MIN)
        return; /* another close's file holds nearly all: the turn decides */
    rc = newest > cairn__mem_index_covered(m) ? reload(m) : CAIRN_OK;
    /* Again while the others appended much meanwhile, the texts indexed
     * each time: the turn folds and indexes the last few thousand. */
    for (int round = 0; rc == CAIRN_OK && round < 8; round++) {
        if ((rc = cairn__db_refresh(m->db)) != CAIRN_OK ||
            cairn__handed_seq(m->db) < m->folded + CLOSE_PREFOLD_LEFT)
            break;
        if ((rc = cairn__mem_catch_up(m)) == CAIRN_OK)
            rc = cairn__mem_index_settle(m);
    }
    if (rc == CAIRN_OK)
        (void)cairn__mem_index_settle(m);
}

void cairn_mem_close(cairn_mem *m)
{
    if (m == NULL)
        return;
    /* A layer above (the archival tier's embedding thread) finishes
     * first: it calls the handle. */
    if (m->on_close != NULL)
        m->on_close(m);
    /* A merge under way is given up (its temp file removed): a close
     * writes what changed, never more. The merger stops while the close
     * writes its file, and is waited for before the state goes. */
    cairn__merger_ask_stop(m->merger);
    /* Best effort: the log has everything; a failure only makes the next
     * open replay more. Access statistics pending in ACCESS past
     * ACC_FOLD_AT_CLOSE are folded (a checkpoint folds them all). */
    if (m->opened && !m->db->read_only) {
        /* Deferred: a failure that kills the handle is cairn_close's. */
        int was = cairn__deferred_begin();
        pthread_mutex_lock(&m->mu);
        if (close_wants_checkpoint(m) || m->pend.on) { /* (a flush's file goes in place) */
            /* Of many writers closing at once, one folds and writes at a
             * time; the next finds its file and folds what came after. */
            int writer = cairn__index_writer_lock(m->db, 1);
            close_prefold(m);
            (void)checkpoint_locked(m, CKPT_CLOSE);
            if (writer)
                (void)cairn__index_writer_lock(m->db, 0);
        }
        else if (cairn__access_fold_due(m) && cairn__mem_turn_begin(m) == CAIRN_OK) {
            /* In a turn: once. A fold of many accesses weighs what it
             * names (tail_weight): every open would replay it, so the
             * file that holds it is written in the same turn. */
            int rc = cairn__mem_access_fold(m);
            if (rc == CAIRN_OK && !m->stale && !m->damaged && close_wants_checkpoint(m))
                rc = checkpoint_turn(m, CKPT_CLOSE);
            (void)cairn__mem_turn_end(m, rc);
        }
        pthread_mutex_unlock(&m->mu);
        cairn__deferred_end(was);
    }
    cairn__merger_free(m->merger);
    m->merger = NULL;
    cairn__indexer_free(m->ix); /* finishes the queue first */
    m->ix = NULL;
    if (m->cycles_free != NULL)
        m->cycles_free(m->cycles);
    cairn__access_free(m);
    free_all(m);
    cairn__tok_free(m->tok);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->tier_mu);
    pthread_mutex_destroy(&m->tier_write_mu);
    cairn__errbuf_drop(m);
    free(m);
}

uint64_t cairn_mem_skipped(const cairn_mem *m)
{
    return m->skipped;
}

uint64_t cairn_mem_unfinished(const cairn_mem *m)
{
    return m->unfinished;
}

uint64_t cairn_mem_access_unrecorded(cairn_mem *m)
{
    uint64_t n;
    pthread_mutex_lock(&m->mu);
    n = cairn__access_unrecorded(m);
    pthread_mutex_unlock(&m->mu);
    return n;
}

const char *cairn_mem_index_note(const cairn_mem *m)
{
    return m->index_note;
}

const char *cairn_mem_errmsg(const cairn_mem *m)
{
    return cairn__errbuf(m);
}

/* ---- contents read from the log ---------------------------------------- */

/* The store record at seq of the memory id of namespace nsi, whose
 * content is len bytes with hash: decoded into *r with sc's buffer (free
 * with cairn__memrec_done) when it is that memory's. CAIRN_ECORRUPT with
 * *why saying what the log holds instead; any other error (*why NULL) is
 * the fetch's: the log does not read there. The one rule for a read of a
 * content and for verify. */
static int store_record_of(cairn_db *db, cairn__fetch *f, cairn__memscan *sc, uint64_t seq,
                           const char *id, uint32_t nsi, size_t len, uint64_t hash, memrec *r,
                           const char **why)
{
    cairn_record rec;
    int rc = cairn__record_fetch(db, f, seq, &rec);
    *why = NULL;
    if (rc == CAIRN_ENOTFOUND)
        *why = "the log holds no record at its seq";
    else if (rc != CAIRN_OK)
        return rc;
    else if (rec.type != CAIRN_REC_MEMORY ||
             cairn__memrec_decode_scan(sc, rec.type, rec.json, rec.json_len, rec.bin,
                                       rec.bin_len, r, NULL) != CAIRN_OK)
        *why = "the record at its seq is not a memory's store record";
    else if (strcmp(r->id, id) != 0 || r->content_len != len ||
             hash_content(nsi, r->content, r->content_len) != hash) {
        *why = strcmp(r->id, id) != 0 ? "the record at its seq stores another memory"
                                      : "its store record holds other content";
        cairn__memrec_done(r);
    }
    return *why != NULL ? CAIRN_ECORRUPT : CAIRN_OK;
}

int cairn__mem_text(cairn_mem *m, const ment *x, const char **text)
{
    memrec r;
    const char *why;
    int rc;

    *text = x->content;
    if (x->content != NULL)
        return CAIRN_OK;
    rc = store_record_of(m->db, &m->fetch, &m->text_scan, x->seq, x->id, x->nsi, x->content_len,
                         x->content_hash, &r, &why);
    if (why != NULL)
        return cairn__mem_fail(m, rc, "memory %s: the record at its seq is not its store record "
                               "(%s; the index file and the log disagree: run cairn verify)",
                               x->id, why);
    if (rc != CAIRN_OK)
        return cairn__mem_fail(m, rc, "memory %s: its store record (seq %" PRIu64 ") does not "
                               "read: %s", x->id, x->seq, cairn_errmsg(m->db));
    rc = cairn__grow(NULL, (void **)&m->text, &m->text_cap, r.content_len + 1, 1);
    if (rc == CAIRN_OK) {
        memcpy(m->text, r.content, r.content_len);
        m->text[r.content_len] = 0;
        *text = m->text;
    }
    cairn__memrec_done(&r);
    return rc == CAIRN_OK ? CAIRN_OK
                          : cairn__mem_fail(m, CAIRN_ENOMEM, "memory %s: no memory to read its "
                                            "content", x->id);
}

/* ---- copies for the caller ----------------------------------------------- */

int cairn__mem_copy_out(cairn_mem *m, const ment *x, cairn_memory *c)
{
    const char *text;
    int rc = cairn__mem_text(m, x, &text);
    memset(c, 0, sizeof *c);
    if (rc != CAIRN_OK)
        return rc;
    strcpy(c->id, x->id);
    c->ns = dup_str(m->ns[x->nsi].name, strlen(m->ns[x->nsi].name));
    c->content = dup_str(text, x->content_len);
    c->category = dup_str(x->category, strlen(x->category));
    c->metadata = x->metadata ? dup_str(x->metadata, strlen(x->metadata)) : dup_str("{}", 2);
    c->importance = x->importance;
    c->created_at = x->created;
    c->accessed_at = cairn__access_last(m, x); /* with what ACCESS holds unfolded */
    c->access_count = cairn__access_count(m, x);
    c->expires_at = x->expires;
    c->seq = x->seq;
    if (c->ns == NULL || c->content == NULL || c->category == NULL || c->metadata == NULL) {
        free(c->ns);
        free(c->content);
        free(c->category);
        free(c->metadata);
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory for a copy of memory %s", x->id);
    }
    return CAIRN_OK;
}

static void free_fields(cairn_memory *c)
{
    free(c->ns);
    free(c->content);
    free(c->category);
    free(c->metadata);
}

void cairn_mem_free(cairn_memory *mem)
{
    if (mem == NULL)
        return;
    free_fields(mem);
    free(mem);
}

void cairn_recall_free(cairn_recall_hit *hits, size_t n)
{
    if (hits == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        free_fields(&hits[i].mem);
    free(hits);
}

static int copy_new(cairn_mem *m, const ment *x, cairn_memory **out)
{
    cairn_memory *c = malloc(sizeof *c);
    int rc;
    if (c == NULL)
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    if ((rc = cairn__mem_copy_out(m, x, c)) != CAIRN_OK) {
        free(c);
        return rc;
    }
    *out = c;
    return CAIRN_OK;
}

int cairn__mem_expired(const ment *x, int64_t now)
{
    return x->expires != 0 && x->expires <= now;
}

/* ---- writes -------------------------------------------------------------- */

/* Append r to the log (nothing applied): *seq its seq. */
static int append_rec(cairn_mem *m, const char *ns, const memrec *r, uint64_t *seq)
{
    cairn__err e;
    char *json = NULL;
    size_t len = 0;
    cairn_entry ent;
    int rc = cairn__memrec_encode(r, &json, &len, &e);

    if (rc != CAIRN_OK)
        return cairn__mem_fail(m, rc, "%s", e.msg);
    memset(&ent, 0, sizeof ent);
    ent.type = r->type;
    ent.ns = ns;
    ent.ns_len = strlen(ns);
    ent.json = json;
    ent.json_len = len;
    if (r->type == CAIRN_REC_MEMORY && r->embedder != NULL) {
        ent.bin = r->vec;
        ent.bin_len = (size_t)r->dim * sizeof(float);
    }
    rc = cairn_append(m->db, &ent, seq);
    free(json);
    if (rc != CAIRN_OK)
        return cairn__mem_fail(m, rc, "%s", cairn_errmsg(m->db));
    return CAIRN_OK;
}

/* Append r as a record of namespace ns, then apply it. */
int cairn__mem_write_rec(cairn_mem *m, const char *ns, const memrec *r, uint64_t *seq_out)
{
    cairn_record rec;
    uint64_t seq = 0;
    int checked = m->id_checked, rc;

    m->id_checked = 0;
    if ((rc = append_rec(m, ns, r, &seq)) != CAIRN_OK)
        return rc;
    /* The check holds only if no other record is folded before this one. */
    checked = checked && seq == m->folded + 1 && cairn__dropped_upto(m->db) <= m->folded;
    memset(&rec, 0, sizeof rec);
    rec.seq = seq;
    rec.ts_ms = cairn__mem_wall_ms();
    rec.type = r->type;
    rec.ns = ns;
    rec.ns_len = strlen(ns);
    rc = fold_gap(m, seq);
    if (rc == CAIRN_OK) {
        m->ix_bound = IX_BOUND_STORE; /* one memory: see indexer.h */
        m->id_checked = checked;
        rc = apply(m, &rec, r);
        m->id_checked = 0;
        m->ix_bound = 0;
    } else if (rc == FOLD_RELOADED)
        rc = CAIRN_OK; /* folded with the rest */
    if (rc == CAIRN_ECORRUPT && m->damaged)
        return rc; /* cairn__errbuf(m) names the index file */
    if (rc != CAIRN_OK)
        m->stale = 1; /* never write an index file that would skip it */
    if (seq_out != NULL)
        *seq_out = seq;
    /* Appended but not applied (no memory): the log is right, this handle
     * is not; a reopen would be. Say so rather than pretend. */
    return rc == CAIRN_OK ? CAIRN_OK
                          : cairn__mem_fail(m, rc, "the record was appended but the in-memory state could "
                                        "not take it; reopen the store");
}

int cairn__mem_write_commit(cairn_mem *m, const char *const *nss, const memrec *const *rs,
                            size_t n)
{
    cairn_entry *ents = calloc(n ? n : 1, sizeof *ents);
    char **json = calloc(n ? n : 1, sizeof *json);
    uint64_t first = 0;
    int64_t ts = 0;
    size_t i, napply;
    int rc = CAIRN_OK;

    if (ents == NULL || json == NULL) {
        rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        goto out;
    }
    for (i = 0; i < n && rc == CAIRN_OK; i++) {
        memrec r = *rs[i];
        size_t len = 0;
        cairn__err e;
        r.batch_i = i;
        r.batch_n = n >= 2 ? n : 0;
        rc = cairn__memrec_encode(&r, &json[i], &len, &e);
        if (rc != CAIRN_OK) {
            rc = cairn__mem_fail(m, rc, "%s", e.msg);
            break;
        }
        ents[i].type = r.type;
        ents[i].ns = nss[i];
        ents[i].ns_len = strlen(nss[i]);
        ents[i].json = json[i];
        ents[i].json_len = len;
        if (r.type == CAIRN_REC_MEMORY && r.embedder != NULL) {
            ents[i].bin = r.vec;
            ents[i].bin_len = (size_t)r.dim * sizeof(float);
        }
    }
    if (rc != CAIRN_OK || n == 0)
        goto out;
    rc = cairn__append_batch_ts(m->db, ents, n, &first, &ts);
    for (i = 0; i < n; i++) { /* the log has them now (or never will) */
        free(json[i]);
        json[i] = NULL;
    }
    if (rc != CAIRN_OK) {
        rc = cairn__mem_fail(m, rc, "%s", cairn_errmsg(m->db));
        goto out;
    }
    rc = fold_gap(m, first);
    napply = n;
    if (rc == FOLD_RELOADED) {
        napply = 0; /* folded with the rest */
        rc = CAIRN_OK;
    }
    for (i = 0; i < napply && rc == CAIRN_OK; i++) {
        cairn_record rec;
        memset(&rec, 0, sizeof rec);
        rec.seq = first + i;
        rec.ts_ms = ts;
        rec.type = rs[i]->type;
        rec.ns = nss[i];
        rec.ns_len = ents[i].ns_len;
        rc = apply(m, &rec, rs[i]);
    }
    if (rc == CAIRN_ECORRUPT && m->damaged)
        goto out; /* cairn__errbuf(m) names the index file */
    if (rc != CAIRN_OK) {
        m->stale = 1; /* never write an index file that would skip them */
        rc = cairn__mem_fail(m, rc, "the records were appended but the in-memory state could "
                             "not take them; reopen the store");
    }
out:
    for (i = 0; json != NULL && i < n; i++)
        free(json[i]);
    free(json);
    free(ents);
    return rc;
}

/* Text by the one rule (utf8.h): valid UTF-8 without NUL. */
static int check_text(cairn_mem *m, const char *what, const char *p, size_t len)
{
    cairn__err e;
    if (cairn__utf8_check(&e, what, p, len) != CAIRN_OK)
        return cairn__mem_fail(m, CAIRN_EINVAL, "%s", e.msg);
    return CAIRN_OK;
}

/* Check metadata text; *norm (malloc'd) gets it as the log will give it
 * back (cJSON's text: a memory reads the same in this handle as after a
 * fold, in this process or another). */
static int check_metadata(cairn_mem *m, const char *meta, char **norm)
{
    memrec probe, back;
    char *json = NULL;
    size_t len;
    cairn__err e;
    int rc;
    *norm = NULL;
    /* Its text first: parsed, a \u0000 would cut a string unseen. */
    if (cairn__utf8_check_json(&e, "metadata: ", NULL, meta, strlen(meta)) != CAIRN_OK)
        return cairn__mem_fail(m, CAIRN_EINVAL, "%s", e.msg);
    /* The encoder parses it back: the one place that says what is valid. */
    memset(&probe, 0, sizeof probe);
    probe.type = CAIRN_REC_MEMORY_UPDATE;
    probe.id = "x";
    probe.metadata = (char *)(uintptr_t)meta;
    probe.has = MEMREC_HAS_METADATA;
    rc = cairn__memrec_encode(&probe, &json, &len, &e);
    if (rc != CAIRN_OK) {
        free(json);
        return cairn__mem_fail(m, CAIRN_EINVAL, "--meta: %s", e.msg);
    }
    memset(&back, 0, sizeof back);
    rc = cairn__memrec_decode_own(CAIRN_REC_MEMORY_UPDATE, json, len, &back, &e);
    free(json);
    if (rc == CAIRN_OK && back.metadata != NULL) {
        *norm = back.metadata;
        back.metadata = NULL;
    }
    cairn__memrec_done(&back);
    if (rc != CAIRN_OK || *norm == NULL)
        return cairn__mem_fail(m, rc == CAIRN_OK || rc == CAIRN_ENOMEM ? CAIRN_ENOMEM : CAIRN_EINVAL,
                               "--meta: %s", rc == CAIRN_OK ? "no memory" : e.msg);
    return CAIRN_OK;
}

static int check_category(cairn_mem *m, const char *c)
{
    size_t n = strlen(c);
    if (n == 0 || n > MEM_CATEGORY_MAX)
        return cairn__mem_fail(m, CAIRN_EINVAL, "category must be 1..%d bytes", MEM_CATEGORY_MAX);
    return check_text(m, "category", c, n);
}

/* An id cairn__mem_new_id would try, not looked up. */
static void id_candidate(cairn_mem *m, const char *content, char *id)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t seed = (uint64_t)cairn__mem_wall_ms() ^ (++m->id_counter << 40) ^ (uint64_t)(uintptr_t)m;
    uint64_t h = XXH3_64bits_withSeed(content, strlen(content), seed);
    id[0] = 'm'; /* "m%016llx", without printf: it was 4% of a store */
    for (int i = 0; i < 16; i++)
        id[1 + i] = hex[(h >> (60 - 4 * i)) & 15];
    id[17] = 0;
}

void cairn__mem_new_id(cairn_mem *m, const char *content, char *id)
{
    do
        id_candidate(m, content, id);
    while (cairn__mem_find_id(m, id) != NULL);
}

uint64_t cairn__mem_limit(cairn_mem *m, const char **what)
{
    if (m->max_memories != 0) {
        if (what != NULL)
            *what = "this handle's max_memories option";
        return m->max_memories;
    }
    if (what != NULL)
        *what = "the store's max-memories setting";
    return cairn__max_memories(m->db);
}

int cairn__mem_limit_fail(cairn_mem *m, const char *ns, uint64_t would, uint64_t lim,
                          const char *what)
{
    return cairn__mem_fail(m, CAIRN_EINVAL,
                           "namespace \"%.64s%s\" would hold %" PRIu64 " memories, past %s "
                           "(%" PRIu64 "); nothing was written. Raise it with `cairn config "
                           "max-memories N` (N >= %" PRIu64 ", or 0 for no limit)",
                           ns, strlen(ns) > 64 ? "..." : "", would, what, lim, would);
}

/* max_memories: prune namespace nsi back to the limit, never `keep`
 * (mu held). *pruned gets how many went, *kept how many are left, *limit
 * the limit applied (0: none). */
static int enforce_limit(cairn_mem *m, uint32_t nsi, const ment *keep, uint64_t *pruned,
                         uint64_t *kept, uint64_t *limit)
{
    int64_t now = cairn__mem_wall_ms();
    size_t live = 0, nout = 0, nrest = 0;
    uint64_t lim = cairn__mem_limit(m, NULL);
    ment **out, **rest;
    int rc;

    *pruned = 0;
    *limit = lim;
    live = m->ns[nsi].live;
    *kept = live;
    if (lim == 0 || live <= lim)
        return CAIRN_OK; /* the common case, O(1) */
    if ((rc = cairn__mem_read_all(m)) != CAIRN_OK)
        return rc;
    /* Sized and counted from the entries themselves, not from the count
     * an index file gave. */
    out = calloc(cairn__mem_total(m) + 1, sizeof *out);
    rest = calloc(cairn__mem_total(m) + 1, sizeof *rest);
    if (out == NULL || rest == NULL) {
        free(out);
        free(rest);
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    }
    live = 0;
    for (size_t i = 0; i < cairn__mem_total(m); i++) {
        ment *x = cairn__mem_at(m, i);
        if (!x->live || x->nsi != nsi)
            continue;
        live++;
        if (x == keep)
            continue;
        /* forget's normal rule first */
        if (cairn__mem_expired(x, now) ||
            (double)(now - x->created) / DAY_MS > m->max_retention ||
            cairn__mem_decayed(m, x, now) < 0.01)
            out[nout++] = x;
        else
            rest[nrest++] = x;
    }
    /* then the lowest decayed importance (older first among equals) */
    while (live - nout > lim && nrest > 0) {
        size_t worst = 0;
        for (size_t i = 1; i < nrest; i++)
            if (cairn__mem_decayed(m, rest[i], now) < cairn__mem_decayed(m, rest[worst], now))
                worst = i;
        out[nout++] = rest[worst];
        rest[worst] = rest[--nrest];
    }
    rc = cairn__mem_delete_many(m, out, nout, "maxMemories");
    if (rc == CAIRN_OK) {
        *pruned = nout;
        *kept = live - nout;
        m->ns[nsi].live = live - nout; /* counted, so right even if a file's count was not */
    }
    free(out);
    free(rest);
    return rc;
}

/* The store record of draft d under id. */
static void store_rec(memrec *r, const cairn_mem_draft *d, const char *id, size_t len, int64_t now)
{
    memset(r, 0, sizeof *r);
    r->type = CAIRN_REC_MEMORY;
    r->id = id;
    r->content = d->content;
    r->content_len = len;
    r->category = d->category;
    r->importance = d->importance;
    r->created_at = r->accessed_at = now;
    r->expires_at = d->expires_at;
    r->metadata = (char *)(uintptr_t)d->metadata;
}

/* The copy for the caller of a memory store_keyed wrote: what the state
 * would hold once it folds the record. */
static int copy_keyed(cairn_mem *m, const cairn_mem_draft *d, const char *id, size_t len,
                      int64_t now, uint64_t seq, cairn_memory **out)
{
    cairn_memory *c = calloc(1, sizeof *c);
    const char *meta = d->metadata ? d->metadata : "{}";
    if (c == NULL)
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    snprintf(c->id, sizeof c->id, "%s", id);
    c->ns = dup_str(d->ns, strlen(d->ns));
    c->content = dup_str(d->content, len);
    c->category = dup_str(d->category, strlen(d->category));
    c->metadata = dup_str(meta, strlen(meta));
    c->importance = d->importance;
    c->created_at = c->accessed_at = now;
    c->expires_at = d->expires_at;
    c->seq = seq;
    if (c->ns == NULL || c->content == NULL || c->category == NULL || c->metadata == NULL) {
        cairn_mem_free(c);
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    }
    *out = c;
    return CAIRN_OK;
}

/* A store in a turn whose catch-up held others' stores as keys alone
 * (memkeys.h): decided from the state and the keys, the record appended
 * and added to the keys, nothing applied. *done 0: the keys cannot decide
 * (a possible duplicate, the namespace's limit within reach, the keys
 * full): nothing was written, and the caller folds the full way and
 * stores as usual. prune, out (a duplicate's copy) and copy (the stored
 * memory's; any may be NULL) as the full path fills them. */
static int store_keyed(cairn_mem *m, const cairn_mem_draft *d, size_t len, int keep_dup,
                       int no_limit, int64_t now, cairn_mem_prune *prune, cairn_memory **out,
                       cairn_memory **copy, int *existed, int *done)
{
    size_t ns_len = strlen(d->ns);
    long nsi = cairn__mem_ns_index(m, d->ns, ns_len, 0);
    uint64_t nk = cairn__memkeys_ns_key(d->ns, ns_len);
    uint64_t ck = cairn__memkeys_content_key(nk, d->content, len), ik;
    uint64_t lim = no_limit ? 0 : cairn__mem_limit(m, NULL), seq = 0, keyed_live;
    int exact = keys_in_ns(m, nk, &keyed_live);
    uint64_t live = (nsi >= 0 ? m->ns[nsi].live : 0) + keyed_live;
    char id[CAIRN_MEM_ID_MAX + 1];
    ment *x;
    memrec r;
    int rc;

    *done = 0;
    if (!keep_dup && nsi >= 0 &&
        (x = find_content(m, (uint32_t)nsi, d->content, len, hash_content((uint32_t)nsi, d->content, len))) != NULL) {
        /* Stored before the fold, and still live: the keys hold no record
         * that deletes or changes a memory. */
        if (existed != NULL)
            *existed = 1;
        *done = 1;
        return out != NULL ? copy_new(m, x, out) : CAIRN_OK; /* no event: nothing stored */
    }
    /* A count that may be high decides nothing the caller is told. */
    if ((!exact && prune != NULL && !no_limit) ||
        (!keep_dup && cairn__memkeys_has_content(&m->keys, ck)) ||
        cairn__memkeys_count(&m->keys) >= KEYS_MAX ||
        (lim != 0 && live + 1 > lim))
        return CAIRN_OK;
    do {
        cairn__mem_new_id(m, d->content, id);
        ik = cairn__memkeys_id_key(id, strlen(id));
    } while (cairn__memkeys_has_id(&m->keys, ik));
    store_rec(&r, d, id, len, now);
    if ((rc = append_rec(m, d->ns, &r, &seq)) != CAIRN_OK)
        return rc;
    *done = 1;
    /* The keys stand for every record up to seq, or for none. In KEYS, the
     * key is in before the file says it covers seq; a writer killed before
     * its record reached the log leaves covered past the log's end, and
     * the next writer makes the file afresh (keyfile.c). */
    if (seq != m->keyed + 1 || (m->keys.fixed && m->keys.core->covered != m->keyed) ||
        cairn__memkeys_add(&m->keys, nk, ck, ik) != CAIRN_OK) {
        keys_drop(m);
    } else {
        m->keyed = seq;
        if (m->keys.fixed)
            m->keys.core->covered = seq;
    }
    if (prune != NULL && !no_limit) { /* as enforce_limit reports */
        prune->kept = live + 1;
        prune->limit = lim;
    }
    /* The memory is stored: a copy that fails is reported, not undone. */
    return copy != NULL ? copy_keyed(m, d, id, len, now, seq, copy) : CAIRN_OK;
}

/* May a store go by keys (store_keyed)? Only when no hook, listener,
 * vector or id of the caller's needs the memory folded first. */
static int keys_serve(cairn_mem *m, const cairn_mem_store_opts *o, const cairn_mem_hooks *hooks,
                      int no_embed)
{
    return hooks->before_store == NULL && hooks->after_store == NULL && m->nlisteners == 0 &&
           o->vector == NULL && (o->version < 2 || o->id == NULL) &&
           (no_embed || m->emb.dim == 0 || (m->emb.embed == NULL && m->emb.embed_batch == NULL));
}

int cairn_mem_store(cairn_mem *m, const char *content, const cairn_mem_store_opts *o,
                    cairn_memory **out, int *existed)
{
    cairn_mem_store_opts def = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_mem_hooks hooks = cairn__mem_hooks(m);
    cairn_mem_draft d;
    cairn_memory *copy = NULL;
    size_t len;
    long nsi;
    ment *x;
    memrec r;
    char id[CAIRN_MEM_ID_MAX + 1];
    uint64_t seq = 0, pruned = 0, kept = 0, limit = 0;
    int64_t now = cairn__mem_wall_ms();
    float *vec = NULL;
    uint64_t vec_gen = 0;
    int rc, dup = 0, turn = 0, keep_dup, no_embed, keys;
    const char *want_id;
    char *meta = NULL; /* d.metadata as the log gives it back */

    if (o == NULL)
        o = &def;
    if ((rc = cairn__opts_version(m, "cairn_mem_store_opts", o->version, CAIRN_MEM_STORE_OPTS_VERSION)) != CAIRN_OK)
        return rc;
    keep_dup = o->version >= 2 && o->keep_duplicate;
    want_id = o->version >= 2 ? o->id : NULL;
    no_embed = o->version >= 2 && o->no_embed;
    if (out != NULL)
        *out = NULL;
    if (existed != NULL)
        *existed = 0;
    if (o->prune != NULL) {
        memset(o->prune, 0, sizeof *o->prune);
        o->prune->reason = "";
    }
    d.ns = o->ns ? o->ns : "";
    d.content = content;
    d.category = o->category ? o->category : "fact";
    d.importance = o->importance < 0 ? 0.5 : o->importance;
    d.expires_at = o->expires_at;
    d.metadata = o->metadata;
    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    if (hooks.before_store != NULL && content != NULL && *content) {
        /* not for a duplicate: it is not stored */
        nsi = cairn__mem_ns_index(m, d.ns, strlen(d.ns), 0);
        len = strlen(content);
        dup = !keep_dup && nsi >= 0 && find_content(m, (uint32_t)nsi, content, len,
                                       hash_content((uint32_t)nsi, content, len)) != NULL;
        if (!dup) {
            pthread_mutex_unlock(&m->mu);
            if (hooks.before_store(hooks.user, &d) != 0) {
                pthread_mutex_lock(&m->mu);
                rc = cairn__mem_fail(m, CAIRN_EINVAL, "rejected by the beforeStore hook");
                goto out;
            }
            pthread_mutex_lock(&m->mu);
        }
    }
    len = d.content ? strlen(d.content) : 0;
    if (len == 0 || len > MEM_CONTENT_MAX) {
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "content must be 1 byte..1 MiB");
        goto out;
    }
    if (d.ns == NULL || strlen(d.ns) > CAIRN_NS_MAX) {
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "namespace longer than %d bytes", CAIRN_NS_MAX);
        goto out;
    }
    if ((rc = check_text(m, "content", d.content, len)) != CAIRN_OK ||
        (rc = check_text(m, "namespace", d.ns, strlen(d.ns))) != CAIRN_OK)
        goto out;
    if (!(d.importance >= 0.0 && d.importance <= 1.0)) {
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "Invalid importance: must be between 0 and 1");
        goto out;
    }
    d.importance += 0.0; /* -0 is stored as 0 */
    if (d.category == NULL || (rc = check_category(m, d.category)) != CAIRN_OK) {
        rc = d.category ? rc : cairn__mem_fail(m, CAIRN_EINVAL, "no category");
        goto out;
    }
    if (d.metadata != NULL) {
        if ((rc = check_metadata(m, d.metadata, &meta)) != CAIRN_OK)
            goto out;
        d.metadata = meta;
    }
    if (d.expires_at < 0) {
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "expiry before 1970");
        goto out;
    }
    if (want_id != NULL && !cairn__memrec_id_ok(want_id)) {
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "id: 1..%d of A-Z a-z 0-9 _ . -", CAIRN_MEM_ID_MAX);
        goto out;
    }
    /* An embedder may take seconds (a model behind --embed-cmd): it runs
     * before the turn, so that other processes' writers do not wait for it.
     * The duplicate check inside the turn decides; a vector made for what
     * turned out to be a duplicate is dropped. */
    if (o->vector == NULL && !no_embed && m->emb.dim != 0 && (m->emb.embed || m->emb.embed_batch)) {
        if ((rc = cairn__mem_catch_up(m)) != CAIRN_OK)
            goto out;
        nsi = cairn__mem_ns_index(m, d.ns, strlen(d.ns), 0);
        if (!(!keep_dup && nsi >= 0 && find_content(m, (uint32_t)nsi, d.content, len,
                                       hash_content((uint32_t)nsi, d.content, len)) != NULL)) {
            if ((vec = malloc((size_t)m->emb.dim * sizeof *vec)) == NULL) {
                rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
                goto out;
            }
            if ((rc = cairn__mem_embed(m, &d.content, &len, 1, vec)) != CAIRN_OK)
                goto out; /* nothing stored */
            vec_gen = m->emb_gen;
        }
    }
    /* The duplicate check and the write see the log as it is: nothing of
     * another process comes between them. */
    keys = keys_serve(m, o, &hooks, no_embed);
    if ((rc = turn_begin(m, keys)) != CAIRN_OK)
        goto out;
    turn = 1;
    /* Accesses ACCESS holds go to the log with this write (access.c). */
    if ((rc = cairn__mem_access_fold(m)) != CAIRN_OK)
        goto out;
    /* Keys serve only a store that still needs nothing else (a listener
     * or an embedder may have come while it waited for the turn). */
    if (keys_active(m) && keys_serve(m, o, &hooks, no_embed)) {
        int done = 0;
        rc = store_keyed(m, &d, len, keep_dup, o->version >= 2 && o->no_limit, now, o->prune, out,
                         out != NULL ? &copy : NULL, existed, &done);
        if (rc != CAIRN_OK || done)
            goto out;
    }
    if ((rc = cairn__mem_unkey(m)) != CAIRN_OK) /* what the keys cannot decide */
        goto out;
    nsi = cairn__mem_ns_index(m, d.ns, strlen(d.ns), 0);
    if (want_id != NULL && (x = cairn__mem_find_id(m, want_id)) != NULL) {
        const char *t = "";
        if ((long)x->nsi == nsi && x->content_len == len &&
            (rc = cairn__mem_text(m, x, &t)) != CAIRN_OK)
            goto out;
        if (!((long)x->nsi == nsi && x->content_len == len && memcmp(t, d.content, len) == 0)) {
            rc = cairn__mem_fail(m, CAIRN_EEXIST, "id %s is a live memory of other content", want_id);
            goto out;
        }
        if (existed != NULL)
            *existed = 1;
        rc = out != NULL ? copy_new(m, x, out) : CAIRN_OK;
        goto out;
    }
    if (want_id == NULL) {
        /* The new memory's id is made now and its slots asked for, so
         * that their misses overlap the duplicate check's. */
        id_candidate(m, d.content, id);
        probe_ask(m, m->by_id, 0, hash_id(id));
    }
    if (!keep_dup && nsi >= 0 && (x = find_content(m, (uint32_t)nsi, d.content, len,
                                      hash_content((uint32_t)nsi, d.content, len))) != NULL) {
        if (existed != NULL)
            *existed = 1;
        rc = out != NULL ? copy_new(m, x, out) : CAIRN_OK;
        goto out;
    }
    if (o->vector != NULL || (!no_embed && m->emb.dim != 0 && (m->emb.embed || m->emb.embed_batch))) {
        if (m->emb.dim == 0) {
            rc = cairn__mem_fail(m, CAIRN_EINVAL, "a vector needs the embedder that made it "
                                 "(cairn_mem_set_embedder)");
            goto out;
        }
        if ((rc = cairn__mem_vec_compatible(m, m->emb.name, m->emb.dim)) != CAIRN_OK)
            goto out;
        if (vec == NULL || vec_gen != m->emb_gen) { /* not embedded before the turn */
            free(vec);
            if ((vec = malloc((size_t)m->emb.dim * sizeof *vec)) == NULL) {
                rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
                goto out;
            }
            if (o->vector != NULL) {
                memcpy(vec, o->vector, (size_t)m->emb.dim * sizeof *vec);
                for (uint32_t i = 0; i < m->emb.dim; i++)
                    if (!isfinite(vec[i])) {
                        rc = cairn__mem_fail(m, CAIRN_EINVAL, "vector value %u is not finite",
                                             i);
                        goto out;
                    }
            } else if ((rc = cairn__mem_embed(m, &d.content, &len, 1, vec)) != CAIRN_OK) {
                goto out; /* nothing stored */
            }
        }
    }
    if (want_id != NULL)
        snprintf(id, sizeof id, "%s", want_id); /* on no live memory: looked up above */
    else if (cairn__mem_find_id(m, id) != NULL)
        cairn__mem_new_id(m, d.content, id); /* the one made above is taken */
    store_rec(&r, &d, id, len, now);
    if (vec != NULL) {
        r.embedder = m->emb.name;
        r.dim = m->emb.dim;
        r.vec = vec;
    }
    m->id_checked = 1;
    rc = cairn__mem_write_rec(m, d.ns, &r, &seq);
    if (rc != CAIRN_OK)
        goto out;
    x = cairn__mem_find_seq(m, seq);
    /* The memory is stored: a failed prune is reported, not undone. */
    rc = o->version >= 2 && o->no_limit ? CAIRN_OK : enforce_limit(m, x->nsi, x, &pruned, &kept, &limit);
    if (o->prune != NULL) {
        o->prune->pruned = pruned;
        o->prune->kept = kept;
        o->prune->limit = limit;
        o->prune->reason = pruned > 0 ? "maxMemories" : "";
    }
    if (out != NULL || hooks.after_store != NULL || m->nlisteners > 0) {
        int crc = copy_new(m, x, &copy);
        rc = rc == CAIRN_OK ? crc : rc;
    }
out:
    if (turn)
        rc = cairn__mem_turn_end(m, rc);
    if (turn && rc == CAIRN_OK)
        cairn__mem_flush_if_due(m);
    pthread_mutex_unlock(&m->mu);
    free(vec);
    free(meta);
    if (copy != NULL || pruned > 0) {
        cairn_mem_event ev;
        if (copy != NULL && hooks.after_store != NULL)
            hooks.after_store(hooks.user, copy);
        memset(&ev, 0, sizeof ev);
        ev.kind = CAIRN_EVENT_STORED;
        ev.memory = copy;
        if (copy != NULL)
            cairn__mem_emit(m, &ev);
        if (pruned > 0) { /* every prune is told, whatever else failed */
            memset(&ev, 0, sizeof ev);
            ev.kind = CAIRN_EVENT_PRUNED;
            ev.memory = copy; /* the memory stored: its namespace was pruned */
            ev.pruned = pruned;
            ev.kept = kept;
            ev.reason = "maxMemories";
            cairn__mem_emit(m, &ev);
        }
        if (out != NULL && rc == CAIRN_OK)
            *out = copy;
        else
            cairn_mem_free(copy);
    }
    return rc;
}

void cairn__mem_emit(cairn_mem *m, const cairn_mem_event *ev)
{
    size_t n;
    cairn_mem_event_fn fn[8];
    void *user[8];
    pthread_mutex_lock(&m->mu);
    n = m->nlisteners;
    for (size_t i = 0; i < n; i++) {
        fn[i] = m->listeners[i].fn;
        user[i] = m->listeners[i].user;
    }
    pthread_mutex_unlock(&m->mu);
    for (size_t i = 0; i < n; i++)
        fn[i](user[i], ev);
}

cairn_mem_hooks cairn__mem_hooks(cairn_mem *m)
{
    cairn_mem_hooks h;
    pthread_mutex_lock(&m->mu);
    h = m->hooks;
    pthread_mutex_unlock(&m->mu);
    return h;
}

void cairn_mem_set_hooks(cairn_mem *m, const cairn_mem_hooks *hooks)
{
    pthread_mutex_lock(&m->mu);
    if (hooks != NULL)
        m->hooks = *hooks;
    else
        memset(&m->hooks, 0, sizeof m->hooks);
    pthread_mutex_unlock(&m->mu);
}

int cairn_mem_on(cairn_mem *m, cairn_mem_event_fn fn, void *user)
{
    int rc = CAIRN_OK;
    pthread_mutex_lock(&m->mu);
    if (fn == NULL || m->nlisteners == 8) {
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "at most 8 listeners, not NULL");
    } else {
        m->listeners[m->nlisteners].fn = fn;
        m->listeners[m->nlisteners].user = user;
        m->nlisteners++;
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* No live memory has this id, or a damaged index file hid it. */
static int not_found(cairn_mem *m, const char *id)
{
    if (m->damaged)
        return CAIRN_ECORRUPT; /* cairn__errbuf(m) names the file */
    return cairn__mem_fail(m, CAIRN_ENOTFOUND, "no memory with id %s", id ? id : "(null)");
}

int cairn_mem_get(cairn_mem *m, const char *id, cairn_memory **out)
{
    ment *x;
    int rc;

    *out = NULL;
    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    if ((rc = cairn__mem_catch_up(m)) != CAIRN_OK) {
        pthread_mutex_unlock(&m->mu);
        return rc;
    }
    cairn__access_refresh(m); /* its access statistics as ACCESS has them now */
    x = id ? cairn__mem_find_id(m, id) : NULL;
    if (x == NULL || cairn__mem_expired(x, cairn__mem_now(m)))
        rc = not_found(m, id);
    else
        rc = copy_new(m, x, out);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int cairn_mem_update(cairn_mem *m, const char *id, const cairn_mem_update_opts *u)
{
    ment *x;
    memrec r;
    char *meta = NULL;
    int rc = CAIRN_OK;

    if (u != NULL &&
        (rc = cairn__opts_version(m, "cairn_mem_update_opts", u->version,
                                  CAIRN_MEM_UPDATE_OPTS_VERSION)) != CAIRN_OK)
        return rc;
    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    if ((rc = cairn__mem_turn_begin(m)) != CAIRN_OK) {
        pthread_mutex_unlock(&m->mu);
        return rc;
    }
    /* Accesses ACCESS holds go to the log with this write (access.c). */
    if ((rc = cairn__mem_access_fold(m)) != CAIRN_OK)
        goto out;
    x = id ? cairn__mem_find_id(m, id) : NULL;
    if (x == NULL || u == NULL) {
        rc = x == NULL ? not_found(m, id)
                       : cairn__mem_fail(m, CAIRN_EINVAL, "nothing to update");
        goto out;
    }
    memset(&r, 0, sizeof r);
    r.type = CAIRN_REC_MEMORY_UPDATE;
    r.id = x->id;
    if (u->importance >= 0) {
        if (u->importance > 1.0) {
            rc = cairn__mem_fail(m, CAIRN_EINVAL, "Invalid importance: must be between 0 and 1");
            goto out;
        }
        r.importance = u->importance;
        r.has |= MEMREC_HAS_IMPORTANCE;
    }
    if (u->category != NULL) {
        if ((rc = check_category(m, u->category)) != CAIRN_OK)
            goto out;
        r.category = u->category;
        r.has |= MEMREC_HAS_CATEGORY;
    }
    if (u->metadata != NULL) {
        if ((rc = check_metadata(m, u->metadata, &meta)) != CAIRN_OK)
            goto out;
        r.metadata = meta;
        r.has |= MEMREC_HAS_METADATA;
    }
    if (u->set_expires) {
        if (u->expires_at < 0) {
            rc = cairn__mem_fail(m, CAIRN_EINVAL, "expiry before 1970");
            goto out;
        }
        r.expires_at = u->expires_at;
        r.has |= MEMREC_HAS_EXPIRES;
    }
    if (r.has == 0) {
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "nothing to update");
        goto out;
    }
    rc = cairn__mem_write_rec(m, m->ns[x->nsi].name, &r, NULL);
out:
    rc = cairn__mem_turn_end(m, rc);
    pthread_mutex_unlock(&m->mu);
    free(meta);
    return rc;
}

int cairn_mem_delete(cairn_mem *m, const char *id, const char *reason)
{
    ment *x;
    memrec r;
    int rc;

    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    if ((rc = cairn__mem_turn_begin(m)) != CAIRN_OK) {
        pthread_mutex_unlock(&m->mu);
        return rc;
    }
    /* Accesses ACCESS holds go to the log with this write (access.c). */
    if ((rc = cairn__mem_access_fold(m)) != CAIRN_OK)
        goto out;
    x = id ? cairn__mem_find_id(m, id) : NULL;
    if (x == NULL) {
        rc = not_found(m, id);
    } else if (reason == NULL ||
               (rc = check_text(m, "reason", reason, strlen(reason))) == CAIRN_OK) {
        memset(&r, 0, sizeof r);
        r.type = CAIRN_REC_MEMORY_DELETE;
        r.id = x->id;
        r.reason = reason;
        rc = cairn__mem_write_rec(m, m->ns[x->nsi].name, &r, NULL);
    }
out:
    rc = cairn__mem_turn_end(m, rc);
    pthread_mutex_unlock(&m->mu);
    return rc;
}


int cairn_mem_clear(cairn_mem *m, const char *ns)
{
    memrec r;
    int rc;

    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    memset(&r, 0, sizeof r);
    r.type = CAIRN_REC_MEMORY_CLEAR;
    r.clear_ns = ns;
    if (ns != NULL && strlen(ns) > CAIRN_NS_MAX)
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "namespace longer than %d bytes", CAIRN_NS_MAX);
    else if ((ns == NULL || (rc = check_text(m, "namespace", ns, strlen(ns))) == CAIRN_OK) &&
             (rc = cairn__mem_turn_begin(m)) == CAIRN_OK)
        rc = cairn__mem_turn_end(m, cairn__mem_write_rec(m, "", &r, NULL));
    pthread_mutex_unlock(&m->mu);
    return rc;
}

double cairn__mem_decayed(const cairn_mem *m, const ment *x, int64_t now)
{
    double days = (double)(now - cairn__access_last(m, x)) / DAY_MS;
    return x->importance * pow(0.5, (days > 0 ? days : 0) / m->half_life);
}

int cairn__mem_delete_many(cairn_mem *m, ment *const *xs, size_t n, const char *reason)
{
    return cairn__mem_delete_each(m, xs, n, reason, NULL);
}

int cairn__mem_delete_each(cairn_mem *m, ment *const *xs, size_t n, const char *reason,
                           const char *const *reasons)
{
    cairn_entry *ents;
    char **json;
    size_t i;
    int rc = CAIRN_OK;

    if (n == 0)
        return CAIRN_OK;
    ents = calloc(n, sizeof *ents);
    json = calloc(n, sizeof *json);
    if (ents == NULL || json == NULL) {
        rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        goto out;
    }
    for (i = 0; i < n && rc == CAIRN_OK; i++) {
        memrec r;
        size_t len = 0;
        cairn__err e;
        memset(&r, 0, sizeof r);
        r.type = CAIRN_REC_MEMORY_DELETE;
        r.id = xs[i]->id;
        r.reason = reasons != NULL ? reasons[i] : reason;
        r.batch_i = i; /* one commit: a replay applies all or none (batch.h) */
        r.batch_n = n >= 2 ? n : 0;
        rc = cairn__memrec_encode(&r, &json[i], &len, &e);
        if (rc != CAIRN_OK) {
            rc = cairn__mem_fail(m, rc, "%s", e.msg);
            break;
        }
        ents[i].type = CAIRN_REC_MEMORY_DELETE;
        ents[i].ns = m->ns[xs[i]->nsi].name;
        ents[i].ns_len = strlen(ents[i].ns);
        ents[i].json = json[i];
        ents[i].json_len = len;
    }
    if (rc == CAIRN_OK) {
        uint64_t first = 0;
        rc = cairn_append_batch(m->db, ents, n, &first);
        if (rc != CAIRN_OK) {
            rc = cairn__mem_fail(m, rc, "%s", cairn_errmsg(m->db));
        } else if (first > m->folded + 1) {
            /* Other handles' records first; applying them may move the
             * entries, so each is found again by its id. */
            char (*ids)[CAIRN_MEM_ID_MAX + 1] = malloc(n * sizeof *ids);
            if (ids == NULL) {
                m->stale = 1;
                rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
                goto out;
            }
            for (i = 0; i < n; i++)
                strcpy(ids[i], xs[i]->id);
            size_t napply = n;
            rc = fold_gap(m, first);
            if (rc == FOLD_RELOADED) {
                napply = 0; /* folded with the rest */
                rc = CAIRN_OK;
            }
            for (i = 0; rc == CAIRN_OK && i < napply; i++) {
                ment *x = cairn__mem_find_id(m, ids[i]);
                if (x != NULL) /* else another handle deleted it first */
                    kill_entry(m, x);
                m->tail_records++;
                m->tail_weight++;
            }
            free(ids);
        } else {
            for (i = 0; i < n; i++) {
                kill_entry(m, xs[i]);
                m->tail_records++;
                m->tail_weight++;
            }
        }
        if (rc == CAIRN_OK && first + n - 1 > m->folded)
            m->folded = first + n - 1;
    }
out:
    for (i = 0; json != NULL && i < n; i++)
        free(json[i]);
    free(json);
    free(ents);
    return rc;
}

ment *cairn__mem_find_dup(cairn_mem *m, const char *ns, const char *content, size_t len)
{
    long nsi = cairn__mem_ns_index(m, ns, strlen(ns), 0);
    if (nsi < 0)
        return NULL;
    return find_content(m, (uint32_t)nsi, content, len, hash_content((uint32_t)nsi, content, len));
}

/* ---- the index file ------------------------------------------------------ */

static int reload(cairn_mem *m);

static void fill_row(const ment *x, mx_row *r)
{
    r->seq = x->seq;
    r->importance = x->importance;
    r->created = x->created;
    r->accessed = x->accessed;
    r->expires = x->expires;
    r->access_count = x->access_count;
    r->content_hash = x->content_hash;
    r->content = x->content;
    r->content_len = (uint32_t)x->content_len;
    r->id = x->id;
    r->category = x->category;
    r->metadata = x->metadata;
    r->nsi = x->nsi;
}

/* The rows a checkpoint writes, as the writer asks for them (mx_in.row_at):
 * no copy of every row at once. */
typedef struct file_rows {
    ment **x;                /* shadow rows first, then the file's own */
} file_rows;

static void row_at(void *user, size_t i, mx_row *out)
{
    const file_rows *r = user;
    fill_row(r->x[i], out);
    out->flags = r->x[i]->live ? 0 : MX_ROW_DEAD; /* (its id alone is written) */
}

/* The state and the tables it lives in (a handle closing, a scratch state). */
static void free_all(cairn_mem *m)
{
    free_state(m);
    pend_drop(m);
    free(m->lazy);
    free(m->touched);
    cairn__shadowmap_free(&m->shadows);
    free(m->ns);
    free(m->e);
    free(m->by_id);
    free(m->by_content);
    free(m->vtmp);
    free(m->ns_sizes);
    cairn__memkeys_free(&m->keys);
    cairn__keyfile_close(&m->kf);
    cairn__fetch_free(m->db, &m->fetch);
    free(m->text);
    m->text = NULL;
    m->text_cap = 0;
    cairn__memscan_free(&m->scan);
    cairn__memscan_free(&m->text_scan);
}

/* Each RAM index that holds documents: its size, for its namespace made
 * again (m->ns_sizes; at most NS_SIZES_MAX namespaces are remembered). */
#define NS_SIZES_MAX 64
static void note_ns_sizes(cairn_mem *m)
{
    for (size_t i = 0; i < m->nns; i++) {
        uint64_t h;
        size_t j;
        if (m->ns[i].idx == NULL || cairn__ramidx_docs(m->ns[i].idx) == 0)
            continue;
        h = XXH3_64bits(m->ns[i].name, strlen(m->ns[i].name));
        for (j = 0; j < m->n_ns_sizes && m->ns_sizes[j].name != h; j++)
            ;
        if (j == m->n_ns_sizes) {
            struct ns_size *p;
            if (j == NS_SIZES_MAX || (p = realloc(m->ns_sizes, (j + 1) * sizeof *p)) == NULL)
                continue;
            m->ns_sizes = p;
            m->n_ns_sizes++;
        }
        m->ns_sizes[j].name = h;
        cairn__ramidx_size_of(m->ns[i].idx, &m->ns_sizes[j].size);
    }
}

/* Free the state (entries, namespaces, the file) but not the handle. */
static void free_state(cairn_mem *m)
{
    m->meta_changes++; /* what a layer above derived from the state is stale */
    m->n_lazy = 0; /* nothing will read these indexes any more */
    (void)cairn__mem_index_settle(m); /* the thread reads texts and indexes freed below */
    for (size_t i = 0; i < m->n; i++)
        free_entry(&m->e[i]);
    /* Only rows whose strings an update replaced own any: the rest were
     * never touched, and visiting them would read every entry made. */
    for (size_t i = 0; i < m->n_owned; i++)
        free_entry(m->owned[i]);
    free(m->owned);
    m->owned = NULL;
    m->n_owned = m->owned_cap = 0;
    drop_index(m);
    note_ns_sizes(m);
    for (size_t i = 0; i < m->nns; i++) {
        free(m->ns[i].name);
        let_go_index(m, m->ns[i].idx);
        cairn__vecset_free(m->ns[i].vec);
        m->ns[i].vec = NULL;
    }
    m->nns = 0;
    m->n = 0;
    free_strs(m);
    m->vdim = 0;
    m->vname[0] = 0;
    if (m->tcap) {
        memset(m->by_id, 0, m->tcap * sizeof *m->by_id);
        memset(m->by_content, 0, m->tcap * sizeof *m->by_content);
    }
    m->folded = m->tail_records = m->tail_weight = m->base_deleted = m->skipped = m->unfinished = 0;
    memset(&m->batch, 0, sizeof m->batch);
    keys_drop(m);
}

/* The state again from the newest index file and the records after it. */
static int reload(cairn_mem *m)
{
    cairn_stats st;
    int rc;
    free_state(m);
    rc = cairn_stats_get(m->db, &st);
    if (rc == CAIRN_OK)
        rc = fold_all(m, 1);
    if (rc == CAIRN_OK)
        m->chain_reread = 0; /* the chain on disk (with a flush's file not in place) */
    if (rc != CAIRN_OK) {
        m->damaged = 1;
        return cairn__mem_fail(m, rc, "folding the memories again failed (%s): reopen the store",
                               cairn_strerror(rc));
    }
    return CAIRN_OK;
}

/* The merge policy (format-spec/memindex.md, "Generations";
 * engine/log/genpolicy.h): a file written on the caller's time replaces
 * the files from the one returned on (m->ng: none; it lies on them all; 0:
 * a whole file), taking in each file, newest first, that holds at most
 * MEM_GEN_RATIO times the rows gathered so far, and as many as it takes
 * to stay within MEM_GEN_MAX: about log3(memories / MEM_CHECKPOINT_MIN)
 * files, and a row rewritten that many times over its life. The merger
 * thread's policy is tiered instead: it merges MEM_MERGE_FANIN files of
 * about one size into one, writing each memory about log4(memories /
 * flush) times (a long ingest runs beside it); its chains are a little
 * longer. */
#define MEM_GEN_RATIO 2
#define MEM_MERGE_FANIN 4
static size_t merge_from(const cairn_mem *m, uint64_t rows)
{
    uint64_t have[MEM_GEN_MAX];
    for (size_t g = 0; g < m->ng; g++)
        have[g] = m->gen[g].mx.nrows;
    return cairn__gen_take_from(have, m->ng, rows, MEM_GEN_RATIO, MEM_GEN_MAX, 0);
}

static int seq_order(const void *a, const void *b)
{
    uint64_t x = (*(ment *const *)a)->seq, y = (*(ment *const *)b)->seq;
    return x < y ? -1 : x > y;
}

/* The gate of a checkpoint's file: the log it covers is durable. */
typedef struct log_gate {
    cairn_mem *m;
    int failed;
} log_gate;

static int log_durable(void *user)
{
    log_gate *g = user;
    int rc = cairn_sync(g->m->db);
    g->failed = rc != CAIRN_OK;
    return rc;
}

/* A RAM text index a file takes whole: its namespace's only source,
 * with no dead document (written as it is, not merged). */
static int takes_whole(const cairn_mem *m, const mx_ns_in *ns, size_t i)
{
    return ns[i].n_merge == 1 && ns[i].merge[0] == m->ns[i].idx &&
           cairn__ramidx_count(ns[i].merge[0]) == cairn__ramidx_docs(ns[i].merge[0]);
}

/* Each namespace whose RAM text index the file takes whole has it
 * written as it is. */
static void gen_take_whole(cairn_mem *m, mx_ns_in *ns)
{
    for (size_t i = 0; i < m->nns; i++)
        if (takes_whole(m, ns, i)) {
            ns[i].idx = ns[i].merge[0];
            ns[i].merge = NULL;
            ns[i].n_merge = 0;
        }
}

/* A foreground write's text images, made on a thread of their own while
 * the caller writes the rows: once the indexing thread has added what is
 * queued, each RAM index the file takes whole is made into memory (a
 * close's images took 25-33 ms after its rows' 14-16 ms at the end of a
 * 1M ingest). Nothing else touches those indexes meanwhile: the handle's
 * lock is held, the rows read no text index. An image not made (no
 * memory) is written the usual way. */
typedef struct pre_images {
    cairn_mem *m;
    const mx_ns_in *ns;
    cairn__ramidx_image *img; /* per namespace; made[i]: img[i] holds it */
    unsigned char *made;
    int wait_rc;              /* the indexing thread's wait */
    int started, joined, handled;
    pthread_t t;
} pre_images;

static void *pre_images_main(void *user)
{
    pre_images *p = user;
    p->wait_rc = cairn__indexer_wait(p->m->ix);
    for (size_t i = 0; p->wait_rc == CAIRN_OK && i < p->m->nns; i++)
        if (takes_whole(p->m, p->ns, i) &&
            cairn__ramidx_image_make(p->m->ns[i].idx, &p->img[i]) == CAIRN_OK)
            p->made[i] = 1;
    return NULL;
}

/* Start it, when there is an indexing thread and nothing indexed on the
 * caller's thread first (lazy mode); else the images are made as they are
 * written. */
static void pre_images_start(pre_images *p, cairn_mem *m, const mx_ns_in *ns)
{
    memset(p, 0, sizeof *p);
    p->m = m;
    p->ns = ns;
    if (m->ix == NULL || m->lazy_mode || m->n_lazy > 0 || m->nns == 0)
        return;
    p->img = calloc(m->nns, sizeof *p->img);
    p->made = calloc(m->nns, 1);
    if (p->img != NULL && p->made != NULL && pthread_create(&p->t, NULL, pre_images_main, p) == 0)
        p->started = 1;
}

static void pre_images_join(pre_images *p)
{
    if (p->started && !p->joined) {
        pthread_join(p->t, NULL);
        p->joined = 1;
    }
}

static void pre_images_free(pre_images *p)
{
    pre_images_join(p);
    for (size_t i = 0; p->made != NULL && i < p->m->nns; i++)
        if (p->made[i])
            cairn__ramidx_image_free(&p->img[i]);
    free(p->img);
    free(p->made);
}

/* What a foreground write_gen hands cairn__mx_write's images_ready. */
typedef struct gen_hooks {
    cairn_mem *m;
    mx_ns_in *ns;
    pre_images *pre;
    int failed; /* the indexing failed: the message is m's */
} gen_hooks;

/* The rows are written: the texts still queued for the RAM text indexes
 * were added meanwhile (the indexing thread's backlog, 10-20 ms at the
 * end of a long ingest), and are waited for now, with the images made
 * meanwhile. */
static int gen_images_ready(void *user)
{
    gen_hooks *h = user;
    int rc;
    if (h->pre->started) {
        pre_images_join(h->pre);
        h->pre->handled = 1;
        rc = cairn__mem_index_settled(h->m, h->pre->wait_rc);
    } else {
        rc = cairn__mem_index_settle(h->m);
    }
    if (rc != CAIRN_OK) {
        h->failed = 1;
        return rc;
    }
    gen_take_whole(h->m, h->ns);
    for (size_t i = 0; h->pre->made != NULL && i < h->m->nns; i++)
        if (h->pre->made[i] && h->ns[i].n_merge == 0 && h->ns[i].idx == h->m->ns[i].idx)
            h->ns[i].img = &h->pre->img[i];
    return CAIRN_OK;
}

/* Write the file holding the state of m as of m->folded that replaces
 * m's files from j on (format-spec/memindex.md): shadow rows for the
 * memories of the files below j changed since, then every live memory of
 * the files from j on and of the RAM tail. gate and stop as in mx_in
 * (with a gate, the merger's scratch state: nothing is being indexed).
 * defer: left under a temp name of its own, unsynced, its fd and name in
 * *defer (mx_in.temp_fd). */
static int write_gen(cairn_mem *m, size_t j, int (*gate)(void *), void *gate_user,
                     const int *stop, mem_pending *defer, uint64_t unsynced_boot)
{
    cairn__err e;
    mx_in in;
    file_rows rows = {NULL};
    mx_ns_in *ns = NULL;
    cairn__vecset **vsrc = NULL;
    cairn__ramidx **src = NULL;
    size_t nrows = 0, n_shadow = 0, cap;
    uint64_t dead = 0, base = j == 0 ? 0 : m->gen[j - 1].mx.covered;
    int rc = CAIRN_OK, merge_damaged = 0;
    log_gate lg = {m, 0};
    pre_images pre;
    gen_hooks hk = {m, NULL, &pre, 0};

    memset(&e, 0, sizeof e);
    memset(&in, 0, sizeof in);
    memset(&pre, 0, sizeof pre);
    pre.m = m;

    /* The memories of the files below j that the files it replaces
     * change: the new file carries those changes as its shadow rows. */
    if ((rc = shadows_take(m, j)) != CAIRN_OK)
        return rc;
    /* Every row of the files it replaces, each memory once. */
    for (size_t g = j; g < m->ng; g++)
        for (size_t i = (size_t)m->gen[g].mx.n_shadow; i < m->gen[g].mx.nrows; i++) {
            if (stop != NULL && (i & 4095) == 0 && __atomic_load_n(stop, __ATOMIC_ACQUIRE))
                return CAIRN_ELOCKED; /* a merge given up */
            if (cairn__mem_row(m, g, i) == NULL)
                return CAIRN_ECORRUPT;
        }
    cap = cairn__mem_total(m) - (j < m->ng ? m->gen[j].at : gen_rows(m)) + m->n_touched + 1;
    rows.x = malloc(cap * sizeof *rows.x);
    ns = calloc(m->nns ? m->nns : 1, sizeof *ns);
    vsrc = calloc((m->nns ? m->nns : 1) * (MEM_GEN_MAX + 1), sizeof *vsrc);
    src = calloc((m->nns ? m->nns : 1) * (MEM_GEN_MAX + 1), sizeof *src);
    if (rows.x == NULL || ns == NULL || vsrc == NULL || src == NULL) {
        rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory for the memory index");
        goto out;
    }
    /* Shadow rows: memories of the files kept below, changed since. Every
     * one of them that died is among them (kill_entry notes it). */
    for (size_t i = 0; i < m->n_touched; i++) {
        ment *x = m->touched[i];
        if (cairn__mem_gen_of(m, x->seq) >= (long)j || x->changed <= base)
            continue;
        rows.x[n_shadow++] = x;
    }
    qsort(rows.x, n_shadow, sizeof *rows.x, seq_order);
    for (size_t i = 0; i < m->n_touched; i++)
        dead += !m->touched[i]->live && cairn__mem_gen_of(m, m->touched[i]->seq) < (long)j;
    nrows = n_shadow;
    for (size_t i = j < m->ng ? m->gen[j].at : gen_rows(m); i < cairn__mem_total(m); i++) {
        ment *x = cairn__mem_at(m, i);
        if (x->live) {
            rows.x[nrows++] = x;
            ns[x->nsi].live++;
        } else {
            dead++;
        }
    }
    for (size_t i = 0; i < m->nns; i++) {
        cairn__ramidx **from = src + (MEM_GEN_MAX + 1) * i;
        size_t nsrc = 0;
        ns[i].vecs = vsrc + (MEM_GEN_MAX + 1) * i;
        for (size_t g = j; g < m->ng; g++) {
            if (m->ns[i].gvec[g] != NULL)
                vsrc[(MEM_GEN_MAX + 1) * i + ns[i].n_vecs++] = m->ns[i].gvec[g];
            if (m->ns[i].gidx[g] != NULL)
                from[nsrc++] = m->ns[i].gidx[g];
        }
        if (m->ns[i].vec != NULL)
            vsrc[(MEM_GEN_MAX + 1) * i + ns[i].n_vecs++] = m->ns[i].vec;
        from[nsrc++] = m->ns[i].idx;
        ns[i].name = m->ns[i].name;
        /* The text images are merged as the file is written: no merged
         * index is held (cairn__ramidx_merge_write). */
        ns[i].merge = from;
        ns[i].n_merge = nsrc;
    }
    hk.ns = ns;
    if (gate != NULL) {
        gen_take_whole(m, ns);
    } else {
        in.images_ready = gen_images_ready;
        in.hook_user = &hk;
    }
    in.covered = m->folded;
    in.base = base;
    in.n_shadow = n_shadow;
    /* A checkpoint's file is bound now and put in place once the log is
     * durable (log_durable); a merger's covers what is durable already. */
    rc = gate != NULL ? cairn__logbind_make(m->db, in.covered, &in.bind, &e)
                      : cairn__logbind_make_unsynced(m->db, in.covered, &in.bind, &e);
    if (rc != CAIRN_OK) {
        rc = cairn__mem_fail(m, rc, "memory index: %s", e.msg);
        goto out;
    }
    in.skipped = m->skipped;
    in.deleted = m->base_deleted + dead;
    in.stemmer = m->stemmer;
    in.ns = ns;
    in.n_ns = m->nns;
    in.row_at = row_at;
    in.row_user = &rows;
    in.nrows = nrows;
    in.hash_id = hash_id;
    in.gate = gate != NULL ? gate : log_durable;
    in.gate_user = gate != NULL ? gate_user : &lg;
    /* a merger writes outside the turn, a deferred file is put in place
     * in a later one: a temp name of their own */
    in.temp_salt = gate != NULL || defer != NULL ? cairn__random_salt() | 1 : 0;
    if (defer != NULL) {
        defer->salt = in.temp_salt;
        defer->covered = in.covered;
        in.temp_fd = &defer->fd;
    }
    in.stop = stop;
    in.unsynced_boot = unsynced_boot;
    in.merge_damaged = &merge_damaged;
    if (gate == NULL)
        pre_images_start(&pre, m, ns);
    rc = cairn__mx_write(m->db->io, m->db->dirfd, &in, &e);
    pre_images_join(&pre); /* a write that failed before its images */
    if (pre.started && !pre.handled && pre.wait_rc != CAIRN_OK)
        (void)cairn__mem_index_settled(m, pre.wait_rc); /* the wait's failure is not lost */
    if (merge_damaged) {
        /* a text image merged from a file merged (j and up) is damaged:
         * those below are sound */
        rc = index_damaged_at(m, j, rc, "a text index, while merging it");
        goto out;
    }
    if (rc == CAIRN_ELOCKED && gate != NULL)
        goto out; /* a merge given up */
    if (rc != CAIRN_OK && !hk.failed)
        rc = cairn__mem_fail(m, rc, "%s", lg.failed ? cairn_errmsg(m->db) : e.msg);
out:
    pre_images_free(&pre);
    free(ns);
    free(vsrc);
    free(src);
    free(rows.x);
    return rc;
}

/* Are the files m reads still those on disk: the newest is its top, and
 * none of its chain was replaced? (Another process's checkpoint, or this
 * handle's merger, may have changed them.) */
static int chain_current(cairn_mem *m)
{
    return cairn__seqfile_newest(&cairn__seqfile_memindex, m->db->io, m->db->dirfd) ==
               cairn__mem_index_covered(m) &&
           chain_present(m);
}

/* Can a file lie on m's top? It is there (a merge may have put a file of
 * the same state under its name, and changed what is below). */
static int top_present(cairn_mem *m)
{
    return m->ng == 0 ? cairn__seqfile_newest(&cairn__seqfile_memindex, m->db->io, m->db->dirfd) == 0
                      : faccessat(m->db->dirfd, m->gen[m->ng - 1].mx.name, F_OK, 0) == 0;
}

/* ---- deferred flushes ----------------------------------------------------
 *
 * A flush (the RAM tail reached MEM_FLUSH_ROWS memories) of a handle with
 * a merger thread writes its file on the chain's top under a temp name of
 * its own, starts its writeback, and reads the chain with it on top in
 * place of the RAM tail (map_chain maps it through its fd), all in its
 * turn. The file's fsync runs on the merger thread, which then takes a
 * turn for the log's sync (done by then), the rename and the MANIFEST
 * (pend_publish, a few ms under the handle's lock); the handle's next
 * checkpoint, flush or close does that first if the thread has not. The
 * store loop goes on while the disk writes the file (70-90 ms a flush of
 * 50 MB at 1M memories), and the RAM tail's text index is freed on that
 * thread too (let_go_index). Until then the
 * file is this handle's alone: another process replays those records
 * from the log, and a crash loses nothing the log holds (the next writer's
 * open removes the temp once no descriptor holds its lock). When the store
 * changed under it meanwhile (another process's checkpoint, a compaction,
 * the temp gone) or its fsync failed, it is given up, and the next
 * checkpoint (a close's too) reads the chain on disk again first. */

/* Give it up: the handle's chain then has a top that is not in place, so
 * its next checkpoint (a close's too) reads the chain on disk again. */
static void pend_drop(cairn_mem *m)
{
    if (!m->pend.on)
        return;
    m->pend.on = 0;
    m->chain_reread = 1;
    cairn__mx_drop_temp(m->db->io, m->db->dirfd, m->pend.fd, m->pend.covered, m->pend.salt);
}

/* In a turn: put the flush's file in place and list it, unless the store
 * changed under it. Best effort, as the flush: the log holds it all. A
 * close does not wait for its fsync (the merger's, given up, or its own):
 * the file goes in place naming the boot (format-spec/memindex.md, "Files
 * written without a sync"; it holds at most MEM_FLUSH_ROWS rows). */
static void pend_publish(cairn_mem *m, int closing)
{
    mem_pending *p = &m->pend;
    char below[MX_NAME_MAX], name[MX_NAME_MAX];
    struct stat st;
    cairn__err e;
    int rc;

    if (!p->on)
        return;
    if (p->n_keep > 0)
        cairn__seqfile_name(&cairn__seqfile_memindex, p->keep[p->n_keep - 1], below, sizeof below);
    if (m->damaged || m->stale ||
        cairn__seqfile_newest(&cairn__seqfile_memindex, m->db->io, m->db->dirfd) >= p->covered ||
        cairn__dropped_upto(m->db) != p->dropped ||
        (p->n_keep > 0 && faccessat(m->db->dirfd, below, F_OK, 0) != 0) ||
        cairn_sync(m->db) != CAIRN_OK) { /* (it covers records that must be durable) */
        pend_drop(m);
        return;
    }
    p->on = 0;
    rc = cairn__mx_put_in_place(m->db->io, m->db->dirfd, p->fd, p->covered, p->salt,
                                closing ? cairn__boot_id() : 0, &e);
    if (rc == CAIRN_OK)
        rc = cairn__seqfile_publish(m->db, &cairn__seqfile_memindex, p->covered, p->keep, p->n_keep, &e);
    /* Not listed, or not surely (a failed directory fsync or MANIFEST
     * write): never a file on it before the chain is read again. (A file
     * renamed in and not listed is removed by the next writer's open.) */
    if (rc != CAIRN_OK)
        m->chain_reread = 1;
    /* The rename changed its ctime: the id the handle knows it by. */
    cairn__seqfile_name(&cairn__seqfile_memindex, p->covered, name, sizeof name);
    if (rc == CAIRN_OK && m->ng > 0 && m->gen[m->ng - 1].mx.covered == p->covered &&
        fstatat(m->db->dirfd, name, &st, 0) == 0)
        cairn__seqfile_id_of(&st, &m->gen[m->ng - 1].mx.id);
}

void cairn__mem_pend_step(cairn_mem *m, const int *stop)
{
    char name[MX_NAME_MAX], err[CAIRN_ERRMSG_MAX];
    uint64_t covered;
    struct stat st;
    cairn__err e;
    int fd, rc;

    pthread_mutex_lock(&m->mu);
    /* the handle may close its own fd meanwhile */
    fd = m->pend.on ? fcntl(m->pend.fd, F_DUPFD_CLOEXEC, 0) : -1;
    covered = m->pend.covered;
    pthread_mutex_unlock(&m->mu);
    if (fd < 0)
        return;
    cairn__seqfile_name(&cairn__seqfile_memindex, covered, name, sizeof name);
    rc = fstat(fd, &st) == 0 ? cairn__io_fsync_stoppable(m->db->io, "memindex.fsync", fd,
                                                         (uint64_t)st.st_size, stop, name, &e)
                             : CAIRN_EIO;
    close(fd);
    if (rc == CAIRN_ELOCKED)
        return; /* a close stopped it: the close puts the file in place */
    pthread_mutex_lock(&m->mu);
    if (rc != CAIRN_OK) {
        /* A failed fsync is never tried again: the kernel reported the
         * lost writeback once, and a second fsync would say all is well. */
        if (m->pend.on && m->pend.covered == covered)
            pend_drop(m);
        pthread_mutex_unlock(&m->mu);
        return;
    }
    memcpy(err, cairn__errbuf(m), sizeof err); /* the user's last error stays */
    if (m->pend.on && m->pend.covered == covered &&
        !__atomic_load_n(stop, __ATOMIC_ACQUIRE) && cairn__mem_turn_begin(m) == CAIRN_OK) {
        if (!__atomic_load_n(stop, __ATOMIC_ACQUIRE))
            pend_publish(m, 0);
        (void)cairn__mem_turn_end(m, CAIRN_OK);
    }
    memcpy(cairn__errbuf(m), err, sizeof err);
    pthread_mutex_unlock(&m->mu);
}

/* In a turn: the RAM tail as a file on the top (write_gen waits for the
 * texts still queued before its text images), read in place of the tail
 * at once, put in place later. */
static int flush_deferred(cairn_mem *m)
{
    mem_pending *p = &m->pend;
    int rc;

    memset(p, 0, sizeof *p);
    p->fd = -1;
    for (size_t g = 0; g < m->ng; g++)
        p->keep[g] = m->gen[g].mx.covered;
    p->n_keep = m->ng;
    p->dropped = cairn__dropped_upto(m->db);
    if ((rc = write_gen(m, m->ng, NULL, NULL, NULL, p, 0)) != CAIRN_OK)
        return rc;
    p->on = 1;
    m->index_outdated = 0;
    rc = reload(m);
    if (rc == CAIRN_OK && m->merger != NULL)
        cairn__merger_kick(m->merger);
    return rc;
}

/* A checkpoint's reload: the texts still queued go first, so that an add
 * that failed is this checkpoint's error (the reload's own wait only
 * notes it); a checkpoint that reloads nothing waits for them in
 * write_gen, once its rows are written. */
static int settled_reload(cairn_mem *m)
{
    int rc = cairn__mem_index_settle(m);
    return rc != CAIRN_OK ? rc : reload(m);
}

/* A close's file of at most MEM_UNSYNCED_ROWS rows goes in place without
 * its fsync (format-spec/memindex.md, "Files written without a sync"): the
 * boot it was written in, else 0. A crash of the machine costs at most
 * those rows' records replayed from the log at the next open. */
static uint64_t close_unsynced(const cairn_mem *m, int mode, size_t j)
{
    uint64_t rows = m->n + m->n_touched;
    if (mode != CKPT_CLOSE)
        return 0;
    for (size_t g = j; g < m->ng; g++)
        rows += m->gen[g].mx.nrows;
    return rows <= MEM_UNSYNCED_ROWS ? cairn__boot_id() : 0;
}

/* Write the file; then read it back in place of the RAM state, unless the
 * handle is closing. */
static int checkpoint_turn(cairn_mem *m, int mode);

static int checkpoint_locked(cairn_mem *m, int mode)
{
    int rc;

    if (m->db->read_only)
        return cairn__mem_fail(m, CAIRN_EPERM, "a read-only handle cannot write the memory index");
    if (m->damaged)
        return CAIRN_ECORRUPT;
    if (m->stale)
        return cairn__mem_fail(m, CAIRN_EINVAL, "this handle missed a record of the log (see the "
                               "error it returned then): reopen the store before writing the "
                               "memory index");
    /* In a turn: the file is written under the lock, and covers the log as
     * it is (every record of every process, folded by the catch-up). */
    if ((rc = turn_begin(m, mode == CKPT_CLOSE)) != CAIRN_OK)
        return rc;
    rc = checkpoint_turn(m, mode);
    return cairn__mem_turn_end(m, rc);
}

static int checkpoint_turn(cairn_mem *m, int mode)
{
    uint64_t keep[MEM_GEN_MAX + 1];
    size_t j;
    int rc;

    /* What follows reads the chain on disk: a flush's file first. */
    pend_publish(m, mode == CKPT_CLOSE);

    /* Another process may have written the file meanwhile. */
    if (mode == CKPT_CLOSE && !close_wants_checkpoint(m))
        return cairn__access_fold_due(m) ? cairn__mem_access_fold(m) : CAIRN_OK;
    /* A close's catch-up took others' stores as keys (many writers closing
     * at once: all but the first find the file written): the file needs
     * the state, from the newest file if another process wrote one. */
    if (keys_active(m)) {
        rc = cairn__seqfile_newest(&cairn__seqfile_memindex, m->db->io, m->db->dirfd) >
                     cairn__mem_index_covered(m)
                 ? reload(m)
                 : cairn__mem_catch_up(m);
        if (rc != CAIRN_OK)
            return rc;
        if (mode == CKPT_CLOSE && !close_wants_checkpoint(m)) /* the newer file holds it */
            return cairn__access_fold_due(m) ? cairn__mem_access_fold(m) : CAIRN_OK;
    }
    /* The file holds folded statistics: fold what ACCESS holds first. */
    if ((rc = cairn__mem_access_fold(m)) != CAIRN_OK)
        return rc;
    /* Everything the file covers must be durable before the file is in
     * place. The log's fdatasync (tens of ms when index files are being
     * written) runs on the flusher thread from here on, while this one
     * writes the file (and the indexing thread adds the texts still
     * queued: write_gen waits for them only once the rows are written);
     * write_gen waits for it just before the rename (log_durable). */
    cairn__sync_ask(m->db);
    /* Another process wrote a file newer than the chain in use (of many
     * writers, the first to flush writes the memories all of them hold):
     * take it rather than write the same memories again. */
    if (mode != CKPT_WHOLE && !m->index_outdated &&
        cairn__seqfile_newest(&cairn__seqfile_memindex, m->db->io, m->db->dirfd) > cairn__mem_index_covered(m) &&
        (rc = settled_reload(m)) != CAIRN_OK)
        return rc;
    for (int again = 0;; again = 1) {
        if (mode == CKPT_WHOLE || m->index_outdated) {
            j = 0;
        } else if (m->folded == cairn__mem_index_covered(m)) {
            return CAIRN_OK; /* the files in use hold all there is */
        } else {
            uint64_t top_rows = m->n; /* what a file on the top would hold */
            for (size_t i = 0; i < m->n_touched; i++)
                top_rows += m->touched[i]->changed == CHANGED_RAM;
            j = merge_from(m, top_rows);
            /* With a merger thread, a close or a flush writes the tail
             * alone and the merger merges in the background; on a full
             * chain, the tail and the newest file (the merger's own
             * choice there: the two newest), never the whole chain on
             * the caller's time. */
            if (m->bg_merge && mode != CKPT_EXPLICIT && m->ng > 0)
                j = m->ng + 1 <= MEM_GEN_MAX ? m->ng : m->ng - 1;
        }
        /* A file written on files no longer there would lie on nothing:
         * read the chain on disk first (the same state, folded from other
         * files). A file on the top needs only the top (a merge below it
         * changes nothing it says). */
        if (again || j == 0 ||
            (!m->chain_reread && (j == m->ng ? top_present(m) : chain_current(m))))
            break;
        if ((rc = settled_reload(m)) != CAIRN_OK)
            return rc;
    }
    if (mode == CKPT_FLUSH && m->bg_merge && j == m->ng)
        return flush_deferred(m);
    if ((rc = write_gen(m, j, NULL, NULL, NULL, NULL, close_unsynced(m, mode, j))) != CAIRN_OK)
        return rc;
    m->index_outdated = 0;
    /* Listed in the MANIFEST; the files the new one replaced go. Readers
     * that mapped them keep their pages, and one that was opening them
     * reads the chain again. */
    for (size_t g = 0; g < j; g++)
        keep[g] = m->gen[g].mx.covered;
    {
        cairn__err e;
        rc = cairn__seqfile_publish(m->db, &cairn__seqfile_memindex, m->folded, keep, j, &e);
        if (rc != CAIRN_OK)
            return cairn__mem_fail(m, rc, "memory index: %s", e.msg);
    }
    m->unsynced_gone = 0;
    /* Read the new file in place of the RAM copies: the handle's memory
     * use drops back to what a fresh open needs. */
    if (mode == CKPT_CLOSE)
        return CAIRN_OK;
    rc = reload(m);
    if (rc == CAIRN_OK && m->merger != NULL)
        cairn__merger_kick(m->merger);
    return rc;
}

int cairn_mem_checkpoint(cairn_mem *m)
{
    int rc;
    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    rc = checkpoint_locked(m, CKPT_EXPLICIT);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int cairn__mem_checkpoint_whole(cairn_mem *m)
{
    return checkpoint_locked(m, CKPT_WHOLE);
}

void cairn__mem_set_flush_rows(cairn_mem *m, size_t rows)
{
    pthread_mutex_lock(&m->mu);
    m->flush_rows = rows ? rows : 1;
    pthread_mutex_unlock(&m->mu);
}

void cairn__mem_flush_if_due(cairn_mem *m)
{
    char err[CAIRN_ERRMSG_MAX];
    if (m->n < m->flush_rows || m->db->read_only || m->stale || m->damaged || keys_active(m))
        return;
    /* Best effort: the memories are in the log; a failure only leaves the
     * tail in RAM (the next flush or close tries again). */
    memcpy(err, cairn__errbuf(m), sizeof err);
    (void)checkpoint_locked(m, CKPT_FLUSH);
    memcpy(cairn__errbuf(m), err, sizeof err);
}

/* ---- merges in the background -------------------------------------------- */

/* The merger's handle on the files: m's files as of the moment it read
 * them, mapped on its own (scratch state, no log replayed). */
typedef struct merge_job {
    cairn_mem *m;            /* the handle whose merger this is */
    cairn_mem *t;            /* the scratch state */
    size_t j;                /* the files j..t->ng-1 are merged */
    const int *stop;         /* the merger's stop (a close asks it) */
    int held;                /* the gate took m->mu and the turn */
    char err[CAIRN_ERRMSG_MAX];
} merge_job;

/* A header as it is on disk, compared with the one mapped. */
static int same_file(cairn_mem *m, const memindex *mx)
{
    uint8_t h[MX_HEAD_LEN];
    int fd = -1, same = 0;
    cairn__err e;
    if (cairn__io_open(m->db->io, "memindex.open", m->db->dirfd, mx->name, O_RDONLY, 0, &fd, &e) !=
        CAIRN_OK)
        return 0;
    same = pread(fd, h, sizeof h, 0) == (ssize_t)sizeof h && mx->len >= sizeof h &&
           memcmp(h, mx->map, sizeof h) == 0;
    cairn__io_close(m->db->io, "memindex.close", fd);
    return same;
}

/* Just before the merged file replaces the newest of those it merges:
 * take the handle and the turn, and check that the files merged and the
 * one below them are still those on disk. Holds both on success. */
static int merge_gate(void *user)
{
    merge_job *job = user;
    cairn_mem *m = job->m;
    int rc;

    /* A close asked the merge to give up while its file was synced: not
     * put in place (the close would wait for the rename and its sync). */
    if (job->stop != NULL && __atomic_load_n(job->stop, __ATOMIC_ACQUIRE))
        return CAIRN_ELOCKED;
    pthread_mutex_lock(&m->mu);
    memcpy(job->err, cairn__errbuf(m), sizeof job->err);
    if ((rc = cairn__mem_turn_begin(m)) != CAIRN_OK) {
        memcpy(cairn__errbuf(m), job->err, sizeof job->err);
        pthread_mutex_unlock(&m->mu);
        return rc;
    }
    /* ... or while it waited for the lock (a close holds it while it
     * writes): given up, so that the close waits for no rename. */
    if (job->stop != NULL && __atomic_load_n(job->stop, __ATOMIC_ACQUIRE)) {
        (void)cairn__mem_turn_end(m, CAIRN_OK);
        memcpy(cairn__errbuf(m), job->err, sizeof job->err);
        pthread_mutex_unlock(&m->mu);
        return CAIRN_ELOCKED;
    }
    for (size_t g = job->j ? job->j - 1 : 0; g < job->t->ng; g++)
        if (!same_file(m, &job->t->gen[g].mx)) {
            (void)cairn__mem_turn_end(m, CAIRN_OK);
            memcpy(cairn__errbuf(m), job->err, sizeof job->err);
            pthread_mutex_unlock(&m->mu);
            return CAIRN_ELOCKED; /* changed meanwhile: given up */
        }
    job->held = 1;
    return CAIRN_OK;
}

static void scratch_free(cairn_mem *t);

/* The chain whose newest file covers at most upto, mapped into a scratch
 * state (no log replayed). NULL with *rc 0 when there is nothing to merge
 * (fewer than two files, or they moved meanwhile), or an error. */
/* A scratch state of db's index files up to upto (no log replayed; with
 * check_only it removes no file it finds damaged). NULL: no memory. */
static cairn_mem *scratch_map(cairn_db *db, const char *stemmer, int check_only, uint64_t upto,
                              int *rc)
{
    cairn_mem *t = calloc(1, sizeof *t);
    *rc = CAIRN_ENOMEM;
    if (t == NULL)
        return NULL;
    t->db = db;
    t->check_only = check_only;
    snprintf(t->stemmer, sizeof t->stemmer, "%s", stemmer);
    *rc = tables_grow(t);
    if (*rc == CAIRN_OK)
        *rc = open_index(t, upto);
    return t;
}

static cairn_mem *scratch_open(cairn_mem *m, uint64_t upto, int *rc)
{
    cairn_mem *t = scratch_map(m->db, m->stemmer, 0, upto, rc);
    if (t == NULL)
        return NULL;
    if (*rc != CAIRN_OK || t->ng < 2 || t->index_note[0] != 0) {
        scratch_free(t);
        if (*rc == CHAIN_MOVED)
            *rc = 0;
        return NULL;
    }
    t->folded = t->gen[t->ng - 1].mx.covered;
    return t;
}

/* The merger's policy over the chain's row counts (rows[0] the oldest
 * file's): the newest run j..k of at least MEM_MERGE_FANIN files of about
 * one size, else the two newest when the chain is about full. 0: nothing
 * due. */
static int tiered_run(const uint64_t *rows, size_t ng, size_t *j_out, size_t *k_out)
{
    return cairn__gen_tiered_run(rows, ng, MEM_MERGE_FANIN, MEM_GEN_RATIO, MEM_GEN_MAX, j_out,
                                 k_out);
}

/* The row counts of the chain on disk, oldest file first, from the files'
 * headers alone (no table, image or row read): what the policy needs. 0
 * when a file does not read (the merge's own open then finds out why). */
static size_t chain_rows(cairn_mem *m, uint64_t *rows)
{
    uint64_t want = cairn__handed_seq(m->db);
    size_t n = 0;
    for (;;) {
        memindex mx;
        cairn__err e;
        int rc = cairn__mx_open(&mx, m->db->io, m->db->dirfd, want, n > 0, &e);
        if (rc != CAIRN_OK || n == MEM_GEN_MAX) {
            if (rc == CAIRN_OK)
                cairn__mx_close(&mx);
            return 0;
        }
        rows[n++] = mx.nrows;
        want = mx.base;
        cairn__mx_close(&mx);
        if (want == 0)
            break;
    }
    for (size_t i = 0; i < n / 2; i++) { /* newest first: turn it round */
        uint64_t x = rows[i];
        rows[i] = rows[n - 1 - i];
        rows[n - 1 - i] = x;
    }
    return n;
}

/* One merge of the files on disk: the run the policy names, or with
 * whole every file into one whole file. */
static int merge_step(cairn_mem *m, const int *stop, int whole)
{
    merge_job job;
    cairn_mem *t;
    size_t k;
    int rc;

    memset(&job, 0, sizeof job);
    if (!whole) {
        /* The policy from the headers first: mapping the chain costs more
         * (and a close would wait for it). */
        uint64_t rows[MEM_GEN_MAX];
        size_t n = chain_rows(m, rows);
        if (n > 0 && !tiered_run(rows, n, &job.j, &k))
            return 0; /* nothing due */
    }
    if ((t = scratch_open(m, cairn__handed_seq(m->db), &rc)) == NULL)
        return rc;
    /* The policy over the files alone (tiered): the newest run of at least
     * MEM_MERGE_FANIN files of about one size (each within MEM_GEN_RATIO
     * times the others'), anywhere in the chain; or the two newest when
     * the chain is about full. */
    if (whole) {
        job.j = 0;
        k = t->ng - 1;
    } else {
        uint64_t rows[MEM_GEN_MAX];
        for (size_t g = 0; g < t->ng; g++)
            rows[g] = t->gen[g].mx.nrows;
        if (!tiered_run(rows, t->ng, &job.j, &k)) {
            scratch_free(t);
            return 0; /* nothing due */
        }
    }
    if (k + 1 < t->ng) {
        /* A run below the newest: the files up to its newest, read again
         * (the merged file covers what that one covers, under its name). */
        uint64_t upto = t->gen[k].mx.covered;
        scratch_free(t);
        if ((t = scratch_open(m, upto, &rc)) == NULL)
            return rc;
        if (t->ng != k + 1 || t->gen[k].mx.covered != upto) {
            scratch_free(t);
            return 0; /* the files changed meanwhile */
        }
    }
    job.m = m;
    job.t = t;
    job.stop = stop;
    rc = write_gen(t, job.j, merge_gate, &job, stop, NULL, 0);
    if (job.held) {
        /* In place (named as the newest it merges, which it replaces), and
         * listed so: the others it merged go. */
        if (rc == CAIRN_OK) {
            uint64_t drop[MEM_GEN_MAX];
            cairn__seqfile_change c;
            cairn__err e;
            memset(&c, 0, sizeof c);
            for (size_t g = job.j; g + 1 < t->ng; g++)
                drop[c.n_drop++] = t->gen[g].mx.covered;
            c.k = &cairn__seqfile_memindex;
            c.adding = 1;
            c.add = t->gen[t->ng - 1].mx.covered;
            c.drop = drop;
            rc = cairn__seqfile_change_apply(m->db, &c, &e);
        }
        (void)cairn__mem_turn_end(m, CAIRN_OK);
        memcpy(cairn__errbuf(m), job.err, sizeof job.err);
        pthread_mutex_unlock(&m->mu);
    }
    scratch_free(t);
    if (rc == CAIRN_ELOCKED) /* given up, or the files changed meanwhile */
        return 0;
    return rc == CAIRN_OK ? 1 : rc;
}

int cairn__mem_merge_step(cairn_mem *m, const int *stop)
{
    return merge_step(m, stop, 0);
}

int cairn__mem_merge_whole(cairn_mem *m, const int *stop)
{
    return merge_step(m, stop, 1);
}

uint64_t cairn__mem_gone(const cairn_mem *m)
{
    /* As write_gen counts them: those no entry is left of, the files'
     * memories that died since, and those of the RAM tail. */
    uint64_t gone = m->base_deleted;
    for (size_t i = 0; i < m->n_touched; i++)
        gone += !m->touched[i]->live;
    for (size_t i = 0; i < m->n; i++)
        gone += !m->e[i].live;
    return gone;
}

uint64_t cairn__mem_live(const cairn_mem *m)
{
    uint64_t live = 0;
    for (size_t i = 0; i < m->nns; i++)
        live += m->ns[i].live;
    return live;
}

static void scratch_free(cairn_mem *t)
{
    free_all(t);
    free(t);
}

/* Check one file of the chain; a problem goes to fn. CAIRN_ENOMEM and
 * CAIRN_EIO stop the verify. */
/* Each memory of file mx against its store record in the log, where its
 * content is (the file keeps none): the record at the row's seq must be
 * a memory record of its id whose content has the row's length and hash.
 * A record the log cannot read is the log's damage (cairn_verify reports
 * it), not the file's. Rows in seq order read each log block once. */
static int verify_contents(cairn_db *db, const memindex *mx, cairn_verify_fn fn, void *user,
                           uint64_t *problems)
{
    cairn__fetch f;
    cairn__memscan sc;
    int rc = CAIRN_OK;

    memset(&f, 0, sizeof f);
    memset(&sc, 0, sizeof sc);
    for (uint64_t i = mx->n_shadow; i < mx->nrows && rc == CAIRN_OK; i++) {
        mx_row r;
        memrec mr;
        const char *why;
        int got;
        if (cairn__mx_row(mx, (size_t)i, &r) != CAIRN_OK)
            continue; /* its damage is reported by the file's check */
        got = store_record_of(db, &f, &sc, r.seq, r.id, r.nsi, r.content_len, r.content_hash,
                              &mr, &why);
        if (got == CAIRN_OK)
            cairn__memrec_done(&mr);
        else if (got == CAIRN_ENOMEM)
            rc = got;
        if (why != NULL) {
            char msg[CAIRN_ERRMSG_MAX];
            snprintf(msg, sizeof msg, "%s: row %" PRIu64 " (memory %s, seq %" PRIu64 "): %s",
                     mx->name, i, r.id, r.seq, why);
            (*problems)++;
            if (fn != NULL)
                fn(user, mx->name, cairn__mx_row_offset(mx, (size_t)i), CAIRN_ECORRUPT, msg);
        } /* else a record the log cannot read: the log's damage */
    }
    cairn__fetch_free(db, &f);
    cairn__memscan_free(&sc);
    return rc;
}

static int verify_file(cairn_db *db, memindex *mx, cairn_verify_fn fn, void *user,
                       uint64_t *problems)
{
    cairn__err e;
    uint64_t off = 0;
    int rc = cairn__logbind_check(db, mx->name, mx->covered, &mx->bind, &e);
    if (rc != CAIRN_OK)
        off = MX_BIND_OFF;
    if (rc == CAIRN_EIO)
        return CAIRN_EIO; /* its anchor record is unreadable: the log's damage */
    if (rc == CAIRN_OK)
        rc = cairn__mx_check_all(mx, &off, &e);
    if (rc == CAIRN_ENOMEM || rc == CAIRN_EIO)
        return rc;
    if (rc != CAIRN_OK) {
        (*problems)++;
        if (fn != NULL)
            fn(user, mx->name, off, rc, e.msg);
        return CAIRN_OK;
    }
    return verify_contents(db, mx, fn, user, problems);
}

/* Each file of a chain checked alone: do they fold as open folds them
 * (every shadow row names a memory live below it, the namespaces agree)?
 * A scratch state opens the chain, removing nothing. */
static int verify_chain(cairn_db *db, const char *top, const char *stemmer, cairn_verify_fn fn,
                        void *user, uint64_t *problems)
{
    int rc;
    cairn_mem *t = scratch_map(db, stemmer, 1, cairn__handed_seq(db), &rc);
    if (t == NULL)
        return rc;
    if (rc == CAIRN_OK && t->index_note[0] != 0) {
        (*problems)++;
        if (fn != NULL)
            fn(user, top, 0, CAIRN_ECORRUPT, t->index_note);
    }
    scratch_free(t);
    return rc == CHAIN_MOVED ? CAIRN_OK : rc;
}

int cairn_mem_verify_index(cairn_db *db, cairn_verify_fn fn, void *user, uint64_t *problems_out,
                           int *checked_out)
{
    cairn_stats st;
    memindex mx;
    cairn__err e;
    uint64_t want;
    char top[MX_NAME_MAX] = "", stemmer[32] = "";
    int rc = cairn_stats_get(db, &st), exact = 0, unchecked = 0;

    *problems_out = 0;
    if (checked_out != NULL)
        *checked_out = 0;
    if (rc != CAIRN_OK)
        return rc;
    want = cairn__handed_seq(db);
    /* The newest file, then each file it lies on. */
    for (int n = 0; n < MEM_GEN_MAX; n++) {
        rc = cairn__mx_open(&mx, db->io, db->dirfd, want, exact, &e);
        /* An older file is a stale cache, not damage: never used, replaced
         * by the next writer (as a graph file of an older version). */
        if ((rc == CAIRN_ENOTFOUND && !exact) || (rc == CAIRN_EVERSION && cairn__mx_is_older(&mx)))
            return CAIRN_OK;
        if (checked_out != NULL)
            *checked_out = 1;
        if (rc == CAIRN_ENOTFOUND) {
            char name[MX_NAME_MAX], msg[CAIRN_ERRMSG_MAX];
            cairn__seqfile_name(&cairn__seqfile_memindex, want, name, sizeof name);
            snprintf(msg, sizeof msg, "%s, which a newer memory index file lies on, is missing "
                     "(the next writer writes a whole file)", name);
            (*problems_out)++;
            if (fn != NULL)
                fn(user, name, 0, CAIRN_ENOTFOUND, msg);
            return CAIRN_OK;
        }
        if (rc == CAIRN_ENOMEM || rc == CAIRN_EIO)
            return rc;
        if (rc == CAIRN_OK)
            rc = verify_file(db, &mx, fn, user, problems_out);
        else if (++*problems_out, fn != NULL)
            fn(user, mx.name, 0, rc, e.msg);
        if (rc == CAIRN_EIO && mx.map != NULL) {
            /* its anchor record is unreadable: that damage is the log's,
             * which cairn_verify reports; the file is not blamed, nor the
             * chain (its open would fail on that record too) */
            rc = CAIRN_OK;
            unchecked = 1;
        }
        want = mx.base;
        if (n == 0 && mx.map != NULL) {
            snprintf(top, sizeof top, "%s", mx.name);
            memcpy(stemmer, mx.stemmer, sizeof stemmer);
        }
        cairn__mx_close(&mx);
        if (rc != CAIRN_OK && rc != CAIRN_ECORRUPT && rc != CAIRN_ECHECKSUM && rc != CAIRN_EVERSION)
            return rc;
        if (rc != CAIRN_OK)
            return CAIRN_OK;
        if (want == 0)
            return n > 0 && *problems_out == 0 && !unchecked
                       ? verify_chain(db, top, stemmer, fn, user, problems_out)
                       : CAIRN_OK;
        exact = 1;
    }
    /* still lying on another file: a chain longer than open takes */
    (*problems_out)++;
    if (fn != NULL) {
        char msg[CAIRN_ERRMSG_MAX];
        snprintf(msg, sizeof msg, "%s: more than %d memory index files lie on one another", top,
                 MEM_GEN_MAX);
        fn(user, top, 0, CAIRN_ECORRUPT, msg);
    }
    return CAIRN_OK;
}
