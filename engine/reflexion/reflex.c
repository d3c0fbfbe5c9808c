/*
 * reflex.c - the reflexion state: open (map the graph file, fold the
 * records after it), the fold itself, commit (append, then apply), and
 * checkpoint (write a new graph file from the state).
 *
 * The fold is the whole truth of the graph: every change is a record,
 * applied in log order by the cairn__rx_apply_* functions below, which
 * take nothing but the record (its fields and its time). That is what
 * makes a rebuild from the log give the same graph file byte for byte.
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include <xxhash.h>

#include "alloc.h"
#include "bytes.h"
#include "jsonnum.h"
#include "hole.h"
#include "rstate.h"
#include "store.h"

int cairn__rx_fail(cairn_reflex *r, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cairn__errbuf(r), CAIRN_ERRMSG_MAX, fmt, ap);
    va_end(ap);
    return code;
}

const char *cairn_reflex_errmsg(const cairn_reflex *r)
{
    return cairn__errbuf(r);
}

/* ---- small helpers --------------------------------------------------------- */

void cairn__rx_id(char prefix, uint64_t key, char *out)
{
    static const char hex[] = "0123456789abcdef";
    out[0] = prefix; /* what "%c%016" PRIx64 prints, without printf's cost */
    for (int i = 16; i >= 1; i--, key >>= 4)
        out[i] = hex[key & 15];
    out[17] = 0;
}

int cairn__rx_parse_id(const char *s, char prefix, uint64_t *key)
{
    if (s == NULL || s[0] != prefix || strlen(s) != 17)
        return 0;
    return cairn__hex_lower(s + 1, 16, key);
}

const char *const cairn__rx_outcomes[3] = {"success", "partial", "failure"};

int cairn__rx_outcome(const char *s, size_t len)
{
    for (int i = 0; i < 3; i++)
        if (strlen(cairn__rx_outcomes[i]) == len && memcmp(s, cairn__rx_outcomes[i], len) == 0)
            return i;
    return -1;
}

static const char *const node_types[CAIRN_NODE_TYPES] = {
    "decision", "event", "outcome", "pattern", "error",
    "tool_call", "commit", "milestone", "test", "handoff"};
static const char *const edge_types[CAIRN_EDGE_TYPES] = {"causes", "enables", "prevents",
                                                         "correlates"};

const char *cairn_node_type_name(unsigned t)
{
    return t < CAIRN_NODE_TYPES ? node_types[t] : NULL;
}

const char *cairn_edge_type_name(unsigned t)
{
    return t < CAIRN_EDGE_TYPES ? edge_types[t] : NULL;
}

static int parse_name(const char *const *names, unsigned n, const char *s, unsigned *out)
{
    for (unsigned i = 0; s != NULL && i < n; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return CAIRN_OK;
        }
    return CAIRN_EINVAL;
}

int cairn_node_type_parse(const char *name, unsigned *type)
{
    return parse_name(node_types, CAIRN_NODE_TYPES, name, type);
}

int cairn_edge_type_parse(const char *name, unsigned *type)
{
    return parse_name(edge_types, CAIRN_EDGE_TYPES, name, type);
}

int cairn__rx_fold(const char *s, size_t len, char **out, size_t *out_len)
{
    int ascii = 1;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] >= 0x80 || s[i] == 0)
            ascii = 0;
    if (ascii) { /* the common case, without utf8proc's allocation dance */
        char *p = malloc(len + 1);
        if (p == NULL)
            return CAIRN_ENOMEM;
        for (size_t i = 0; i < len; i++)
            p[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
        p[len] = 0;
        *out = p;
        *out_len = len;
        return CAIRN_OK;
    }
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &dst,
                                      UTF8PROC_CASEFOLD | UTF8PROC_COMPOSE | UTF8PROC_STABLE);
    if (n < 0)
        return n == UTF8PROC_ERROR_NOMEM ? CAIRN_ENOMEM : CAIRN_EINVAL;
    *out = (char *)dst;
    *out_len = (size_t)n;
    return CAIRN_OK;
}

/* ---- JSON payloads ------------------------------------------------------------ */

static void rj_grow(rjson *j, size_t more)
{
    if (j->oom || j->cap - j->len > more)
        return;
    size_t cap = j->cap ? j->cap * 2 : 256;
    while (cap - j->len <= more)
        cap *= 2;
    char *p = realloc(j->p, cap);
    if (p == NULL) {
        j->oom = 1;
        return;
    }
    j->p = p;
    j->cap = cap;
}

void cairn__rj_raw(rjson *j, const char *s, size_t len)
{
    rj_grow(j, len);
    if (j->oom)
        return;
    memcpy(j->p + j->len, s, len);
    j->len += len;
    j->p[j->len] = 0;
}

void cairn__rj_str(rjson *j, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    rj_grow(j, 6 * len + 2);
    if (j->oom)
        return;
    char *o = j->p + j->len;
    *o++ = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c < 0x20) {
            *o++ = '\\';
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        } else {
            *o++ = (char)c;
        }
    }
    *o++ = '"';
    *o = 0;
    j->len = (size_t)(o - j->p);
}

void cairn__rj_num(rjson *j, double v)
{
    char b[40];
    int n = cairn__json_fmt(b, sizeof b, "%.17g", v); /* '.' in any locale */
    cairn__rj_raw(j, b, (size_t)n);
}

void cairn__rj_key(rjson *j, const char *key)
{
    if (j->len > 1)
        cairn__rj_raw(j, ",", 1);
    cairn__rj_str(j, key, strlen(key));
    cairn__rj_raw(j, ":", 1);
}

/* ---- lookups ------------------------------------------------------------------ */

void cairn__rx_node(const cairn_reflex *r, uint32_t i, gi_node *o)
{
    const rnode *n;
    if (i < r->base_n && !r->bn[i].present) {
        cairn__gi_node(&r->gi, i, o);
        return;
    }
    n = i < r->base_n ? &r->bn[i] : &r->dn[i - r->base_n];
    o->key = n->key;
    o->label = n->label;
    o->fold = n->fold;
    o->label_len = n->label_len;
    o->fold_len = n->fold_len;
    o->type = n->type;
    o->frequency = n->frequency;
    o->success = n->success;
    o->created = n->created;
    o->eps = n->eps;
    o->n_eps = n->n_eps;
}

void cairn__rx_edge(const cairn_reflex *r, uint32_t i, gi_edge *o)
{
    uint32_t src = UINT32_MAX; /* no walk: a search */
    cairn__rx_edge_next(r, i, &src, o);
}

void cairn__rx_edge_next(const cairn_reflex *r, uint32_t i, uint32_t *src, gi_edge *o)
{
    const redge *d;
    if (i < r->base_m && !r->be[i].present) {
        cairn__gi_edge_next(&r->gi, i, src, o);
        return;
    }
    d = i < r->base_m ? &r->be[i] : &r->de[i - r->base_m];
    o->src = d->src;
    o->dst = d->dst;
    o->type = d->type;
    o->evidence = d->evidence;
    o->weight = d->weight;
    o->created = d->created;
    o->eps = d->eps;
    o->n_eps = d->n_eps;
}

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

uint32_t cairn__rx_find_key(const cairn_reflex *r, uint64_t key)
{
    if (r->ntab_cap != 0) {
        size_t mask = r->ntab_cap - 1, i = mix(key) & mask;
        for (; r->ntab[i] != 0; i = (i + 1) & mask)
            if (r->dn[r->ntab[i] - 1 - r->base_n].key == key)
                return r->ntab[i] - 1;
    }
    return r->gi.map != NULL ? cairn__gi_find_key(&r->gi, key) : R_NONE;
}

uint32_t cairn__rx_find_label(const cairn_reflex *r, const char *label, size_t len,
                              uint64_t *key_out)
{
    /* A label's key is the hash of the label, or of its case fold in a
     * store that folds (format-spec/manifest.md, label_rule); a label
     * whose hash another label took first gets the hash with seed 1, 2,
     * ...: deterministic in log order. */
    char *fold = NULL;
    size_t fl = 0;
    const char *k = label;
    size_t kl = len;
    uint32_t found = R_NONE;
    uint64_t key = 0;
    if (r->fold_labels && cairn__rx_fold(label, len, &fold, &fl) == CAIRN_OK) {
        k = fold;
        kl = fl;
    }
    for (uint64_t seed = 0;; seed++) {
        uint32_t i;
        gi_node n;
        key = XXH3_64bits_withSeed(k, kl, seed);
        if ((i = cairn__rx_find_key(r, key)) == R_NONE)
            break;
        cairn__rx_node(r, i, &n);
        if (k == fold ? n.fold_len == kl && memcmp(n.fold, k, kl) == 0
                      : n.label_len == kl && memcmp(n.label, k, kl) == 0) {
            found = i;
            break;
        }
    }
    free(fold);
    if (key_out != NULL)
        *key_out = key;
    return found;
}

int cairn__rx_same_name(const cairn_reflex *r, const char *a, const char *b)
{
    char *fa = NULL, *fb = NULL;
    size_t la = 0, lb = 0;
    int same;
    if (strcmp(a, b) == 0 || !r->fold_labels)
        return strcmp(a, b) == 0;
    if (cairn__rx_fold(a, strlen(a), &fa, &la) != CAIRN_OK ||
        cairn__rx_fold(b, strlen(b), &fb, &lb) != CAIRN_OK)
        same = 0; /* not foldable: only the same bytes are the same name */
    else
        same = la == lb && memcmp(fa, fb, la) == 0;
    free(fa);
    free(fb);
    return same;
}

uint64_t cairn__rx_name_key(const cairn_reflex *r, const char *name)
{
    char *f = NULL;
    size_t fl = 0;
    uint64_t key;
    if (r->fold_labels && cairn__rx_fold(name, strlen(name), &f, &fl) == CAIRN_OK) {
        key = XXH3_64bits(f, fl);
        free(f);
        return key;
    }
    return XXH3_64bits(name, strlen(name));
}

static int table_grow(uint32_t **tab, size_t *cap, size_t used, uint64_t (*key_of)(const void *, uint32_t),
                      const void *ctx)
{
    size_t ncap = *cap ? *cap : 64;
    uint32_t *t;
    if (*cap != 0 && (used + 1) * 2 <= *cap)
        return CAIRN_OK;
    while ((used + 1) * 2 > ncap)
        ncap *= 2;
    if ((t = calloc(ncap, sizeof *t)) == NULL)
        return CAIRN_ENOMEM;
    for (size_t i = 0; i < *cap; i++) {
        if ((*tab)[i] == 0)
            continue;
        size_t j = mix(key_of(ctx, (*tab)[i] - 1)) & (ncap - 1);
        while (t[j] != 0)
            j = (j + 1) & (ncap - 1);
        t[j] = (*tab)[i];
    }
    free(*tab);
    *tab = t;
    *cap = ncap;
    return CAIRN_OK;
}

static void table_put(uint32_t *tab, size_t cap, uint64_t key, uint32_t v)
{
    size_t j = mix(key) & (cap - 1);
    while (tab[j] != 0)
        j = (j + 1) & (cap - 1);
    tab[j] = v + 1;
}

static uint64_t node_key_of(const void *ctx, uint32_t v)
{
    const cairn_reflex *r = ctx;
    return r->dn[v - r->base_n].key;
}

static uint64_t edge_hash(uint32_t s, uint32_t d, uint32_t t)
{
    return ((uint64_t)s << 32 | d) * 0x9e3779b97f4a7c15ULL + t;
}

static uint64_t edge_key_of(const void *ctx, uint32_t v)
{
    const cairn_reflex *r = ctx;
    const redge *d = &r->de[v - r->base_m];
    return edge_hash(d->src, d->dst, d->type);
}

static uint64_t name_key_of(const void *ctx, uint32_t v)
{
    const cairn_reflex *r = ctx;
    return XXH3_64bits(r->names[v], r->name_len[v]);
}

uint32_t cairn__rx_name(cairn_reflex *r, const char *s, size_t len, int add)
{
    uint64_t h = XXH3_64bits(s, len);
    char *c;
    if (r->name_tab_cap != 0) {
        size_t mask = r->name_tab_cap - 1, i = mix(h) & mask;
        for (; r->name_tab[i] != 0; i = (i + 1) & mask) {
            uint32_t v = r->name_tab[i] - 1;
            if (r->name_len[v] == len && memcmp(r->names[v], s, len) == 0)
                return v;
        }
    }
    if (!add || len > CAIRN_LABEL_MAX)
        return R_NONE;
    if (r->n_names == r->cap_names) {
        size_t cap = r->cap_names ? 2 * r->cap_names : 64;
        char **nn = realloc(r->names, cap * sizeof *nn);
        if (nn != NULL)
            r->names = nn;
        uint32_t *nl = nn ? realloc(r->name_len, cap * sizeof *nl) : NULL;
        if (nl != NULL)
            r->name_len = nl;
        uint32_t *ne = nl ? realloc(r->epi_by_name, cap * sizeof *ne) : NULL;
        if (ne == NULL)
            return R_NONE;
        r->epi_by_name = ne;
        r->cap_names = cap;
    }
    if (table_grow(&r->name_tab, &r->name_tab_cap, r->n_names, name_key_of, r) != CAIRN_OK ||
        (c = malloc(len + 1)) == NULL)
        return R_NONE;
    memcpy(c, s, len);
    c[len] = 0;
    r->names[r->n_names] = c;
    r->name_len[r->n_names] = (uint32_t)len;
    r->epi_by_name[r->n_names] = 0;
    table_put(r->name_tab, r->name_tab_cap, h, (uint32_t)r->n_names);
    return (uint32_t)r->n_names++;
}

/* ---- applying changes ----------------------------------------------------------- */

static int eps_add(uint32_t **eps, uint32_t *n, uint32_t *cap, uint32_t name)
{
    for (uint32_t i = 0; i < *n; i++)
        if ((*eps)[i] == name)
            return CAIRN_OK;
    if (*n == *cap) {
        uint32_t nc = *cap ? 2 * *cap : 2;
        uint32_t *p = realloc(*eps, nc * sizeof *p);
        if (p == NULL)
            return CAIRN_ENOMEM;
        *eps = p;
        *cap = nc;
    }
    (*eps)[(*n)++] = name;
    return CAIRN_OK;
}

/* Row i of a table changes in this epoch: a row some file already holds
 * goes on the list of changed rows, once per epoch (rgen.c writes the
 * generations from it). */
static int touch(cairn_reflex *r, int table, uint32_t i, uint32_t *gen)
{
    uint32_t **list = table == GG_NODES ? &r->tnodes : &r->tedges;
    size_t *n = table == GG_NODES ? &r->n_tnodes : &r->n_tedges;
    size_t *cap = table == GG_NODES ? &r->cap_tnodes : &r->cap_tedges;
    if (*gen == r->epoch)
        return CAIRN_OK;
    if (r->n_chain != 0 && i < r->chain[r->n_chain - 1].counts[table]) {
        if (cairn__grow(NULL, (void **)list, cap, *n + 1, sizeof **list) != 0)
            return CAIRN_ENOMEM;
        (*list)[(*n)++] = i;
    }
    *gen = r->epoch;
    return CAIRN_OK;
}

/* Node i to change: a base node is copied into its overlay slot if not
 * yet. */
static rnode *node_mut(cairn_reflex *r, uint32_t i)
{
    rnode *n;
    if (i >= r->base_n) {
        n = &r->dn[i - r->base_n];
        return touch(r, GG_NODES, i, &n->gen) == CAIRN_OK ? n : NULL;
    }
    n = &r->bn[i];
    if (!n->present) {
        gi_node v;
        cairn__gi_node(&r->gi, i, &v);
        n->eps = malloc((v.n_eps ? v.n_eps : 1) * sizeof *n->eps);
        if (n->eps == NULL)
            return NULL;
        memcpy(n->eps, v.eps, (size_t)v.n_eps * sizeof *n->eps);
        n->n_eps = n->cap_eps = v.n_eps;
        n->key = v.key;
        n->label = (char *)(uintptr_t)v.label; /* borrowed from the mapping */
        n->fold = (char *)(uintptr_t)v.fold;
        n->label_len = v.label_len;
        n->fold_len = v.fold_len;
        n->type = v.type;
        n->frequency = v.frequency;
        n->success = v.success;
        n->created = v.created;
        n->owns = 0;
        n->present = 1;
    }
    return touch(r, GG_NODES, i, &n->gen) == CAIRN_OK ? n : NULL;
}

static redge *edge_mut(cairn_reflex *r, uint32_t i)
{
    redge *d;
    if (i >= r->base_m) {
        d = &r->de[i - r->base_m];
        return touch(r, GG_EDGES, i, &d->gen) == CAIRN_OK ? d : NULL;
    }
    d = &r->be[i];
    if (!d->present) {
        gi_edge v;
        cairn__gi_edge(&r->gi, i, &v);
        d->eps = malloc((v.n_eps ? v.n_eps : 1) * sizeof *d->eps);
        if (d->eps == NULL)
            return NULL;
        memcpy(d->eps, v.eps, (size_t)v.n_eps * sizeof *d->eps);
        d->n_eps = d->cap_eps = v.n_eps;
        d->src = v.src;
        d->dst = v.dst;
        d->type = v.type;
        d->evidence = v.evidence;
        d->weight = v.weight;
        d->created = v.created;
        d->present = 1;
    }
    return touch(r, GG_EDGES, i, &d->gen) == CAIRN_OK ? d : NULL;
}

static int adj_grow(cairn_reflex *r, size_t need)
{
    size_t cap = r->adj_cap ? r->adj_cap : 1024;
    uint32_t *o, *in;
    if (need <= r->adj_cap)
        return CAIRN_OK;
    while (cap < need)
        cap *= 2;
    o = calloc(cap, sizeof *o);
    in = calloc(cap, sizeof *in);
    if (o == NULL || in == NULL) {
        free(o);
        free(in);
        return CAIRN_ENOMEM;
    }
    if (r->adj_cap) {
        memcpy(o, r->dout, r->adj_cap * sizeof *o);
        memcpy(in, r->din, r->adj_cap * sizeof *in);
    }
    free(r->dout);
    free(r->din);
    r->dout = o;
    r->din = in;
    r->adj_cap = cap;
    return CAIRN_OK;
}

/* A new node at the end of the delta, with this key, label and folded
 * label (malloc'd: the node owns them once it exists), in this epoch;
 * NULL when out of memory (nothing taken). */
static rnode *new_node(cairn_reflex *r, uint64_t key, char *label, size_t len, char *fold,
                       size_t fl)
{
    rnode *n;
    if (cairn__grow(NULL, (void **)&r->dn, &r->cap_dn, r->n_dn + 1, sizeof *r->dn) != 0 ||
        table_grow(&r->ntab, &r->ntab_cap, r->n_dn, node_key_of, r) != CAIRN_OK)
        return NULL;
    n = &r->dn[r->n_dn];
    memset(n, 0, sizeof *n);
    n->key = key;
    n->label = label;
    n->fold = fold;
    n->label_len = (uint32_t)len;
    n->fold_len = (uint32_t)fl;
    n->present = 1;
    n->owns = 1;
    n->gen = r->epoch;
    table_put(r->ntab, r->ntab_cap, key, rx_nodes(r));
    r->n_dn++;
    return n;
}

/* A new edge (s, d, t) at the end of the delta, in this epoch, on the
 * delta adjacency lists; NULL when out of memory. */
static redge *new_edge(cairn_reflex *r, uint32_t s, uint32_t d, uint32_t t)
{
    uint32_t i = rx_edges(r);
    redge *x;
    if (cairn__grow(NULL, (void **)&r->de, &r->cap_de, r->n_de + 1, sizeof *r->de) != 0 ||
        table_grow(&r->etab, &r->etab_cap, r->n_de, edge_key_of, r) != CAIRN_OK ||
        adj_grow(r, rx_nodes(r)) != CAIRN_OK)
        return NULL;
    x = &r->de[r->n_de];
    memset(x, 0, sizeof *x);
    x->src = s;
    x->dst = d;
    x->type = t;
    x->present = 1;
    x->gen = r->epoch;
    /* Delta adjacency: pushed at the front, so the lists run newest first. */
    x->next_out = r->dout[s];
    x->next_in = r->din[d];
    r->dout[s] = i + 1;
    r->din[d] = i + 1;
    r->n_de++;
    table_put(r->etab, r->etab_cap, edge_hash(s, d, t), i);
    return x;
}

int cairn__rx_apply_node(cairn_reflex *r, uint32_t type, const char *label, size_t len,
                         const char *episode, size_t ep_len, int64_t ts, uint32_t *idx_out)
{
    uint64_t key;
    uint32_t i, name = R_NONE;
    rnode *n = NULL;
    char *copy, *fold = NULL;
    size_t fl = 0;
    int rc;

    if (type >= CAIRN_NODE_TYPES || len == 0 || len > CAIRN_LABEL_MAX)
        return CAIRN_EINVAL;
    if (episode != NULL && ep_len > 0 && (name = cairn__rx_name(r, episode, ep_len, 1)) == R_NONE)
        return CAIRN_ENOMEM;
    i = cairn__rx_find_label(r, label, len, &key);
    if (i != R_NONE) {
        /* As ReflexionMemory does: a label that exists counts once more; the first type stays. */
        if ((n = node_mut(r, i)) == NULL)
            return CAIRN_ENOMEM;
        if (name != R_NONE && eps_add(&n->eps, &n->n_eps, &n->cap_eps, name) != CAIRN_OK)
            return CAIRN_ENOMEM;
        n->frequency++;
        *idx_out = i;
        return CAIRN_OK;
    }
    if (rx_nodes(r) >= 0x7ffffffeu)
        return CAIRN_EINVAL;
    copy = cairn__rx_dup(label, len);
    rc = copy != NULL ? cairn__rx_fold(label, len, &fold, &fl) : CAIRN_ENOMEM;
    if (rc == CAIRN_OK && fl > CAIRN_LABEL_MAX * 4)
        rc = CAIRN_EINVAL;
    if (rc != CAIRN_OK || (n = new_node(r, key, copy, len, fold, fl)) == NULL) {
        free(copy);
        free(rc == CAIRN_OK ? fold : NULL);
        return rc != CAIRN_OK ? rc : CAIRN_ENOMEM;
    }
    if (name != R_NONE && eps_add(&n->eps, &n->n_eps, &n->cap_eps, name) != CAIRN_OK)
        return CAIRN_ENOMEM;
    n->type = type;
    n->frequency = 1;
    n->success = 1.0;
    n->created = ts;
    *idx_out = rx_nodes(r) - 1;
    return CAIRN_OK;
}

/* The edge (s, d, t), or R_NONE: the file's CSR row of s, then the delta. */
uint32_t cairn__rx_find_edge(const cairn_reflex *r, uint32_t s, uint32_t d, uint32_t t)
{
    if (s < r->base_n) {
        uint32_t first, n;
        const uint32_t *dst = cairn__gi_out(&r->gi, s, &first, &n);
        uint32_t lo = 0, hi = n;
        while (lo < hi) { /* the row is sorted by (dst, type) */
            uint32_t mid = (lo + hi) / 2, type;
            if (dst[mid] < d) {
                lo = mid + 1;
                continue;
            }
            if (dst[mid] > d) {
                hi = mid;
                continue;
            }
            type = cairn__gi_edge_type(&r->gi, first + mid);
            if (type < t)
                lo = mid + 1;
            else if (type > t)
                hi = mid;
            else
                return first + mid;
        }
    }
    if (r->etab_cap != 0) {
        size_t mask = r->etab_cap - 1, i = mix(edge_hash(s, d, t)) & mask;
        for (; r->etab[i] != 0; i = (i + 1) & mask) {
            const redge *x = &r->de[r->etab[i] - 1 - r->base_m];
            if (x->src == s && x->dst == d && x->type == t)
                return r->etab[i] - 1;
        }
    }
    return R_NONE;
}

int cairn__rx_apply_edge(cairn_reflex *r, uint64_t src_key, uint64_t dst_key, uint32_t type,
                         double weight, const char *episode, size_t ep_len, int64_t ts,
                         uint32_t *idx_out)
{
    uint32_t s = cairn__rx_find_key(r, src_key), d = cairn__rx_find_key(r, dst_key), i;
    uint32_t name = R_NONE;
    redge *x;

    if (s == R_NONE || d == R_NONE)
        return CAIRN_ENOTFOUND;
    if (type >= CAIRN_EDGE_TYPES || !(weight >= 0 && weight <= 1))
        return CAIRN_EINVAL;
    if (episode != NULL && ep_len > 0 && (name = cairn__rx_name(r, episode, ep_len, 1)) == R_NONE)
        return CAIRN_ENOMEM;
    i = cairn__rx_find_edge(r, s, d, type);
    if (i != R_NONE) {
        if ((x = edge_mut(r, i)) == NULL ||
            (name != R_NONE && eps_add(&x->eps, &x->n_eps, &x->cap_eps, name) != CAIRN_OK))
            return CAIRN_ENOMEM;
        /* ReflexionMemory's running average. */
        x->evidence++;
        x->weight = (x->weight * (double)(x->evidence - 1) + weight) / (double)x->evidence;
        *idx_out = i;
        return CAIRN_OK;
    }
    if (rx_edges(r) >= 0xfffffffeu)
        return CAIRN_EINVAL;
    if ((x = new_edge(r, s, d, type)) == NULL ||
        (name != R_NONE && eps_add(&x->eps, &x->n_eps, &x->cap_eps, name) != CAIRN_OK))
        return CAIRN_ENOMEM;
    x->evidence = 1;
    x->weight = weight;
    x->created = ts;
    *idx_out = rx_edges(r) - 1;
    return CAIRN_OK;
}

char *cairn__rx_dup(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p != NULL) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

static char *dup_str(const char *s)
{
    return cairn__rx_dup(s, strlen(s));
}

int cairn__rx_apply_pattern(cairn_reflex *r, const cairn_pattern_spec *s, int64_t ts,
                            size_t *idx_out)
{
    uint64_t key = cairn__rx_name_key(r, s->name);
    uint32_t name = R_NONE;
    rpat *p;
    size_t i;

    if (!(s->success_rate >= 0 && s->success_rate <= 1))
        return CAIRN_EINVAL;
    if (s->episode != NULL && s->episode[0] != 0 &&
        (name = cairn__rx_name(r, s->episode, strlen(s->episode), 1)) == R_NONE)
        return CAIRN_ENOMEM;
    for (i = 0; i < r->n_pat; i++)
        if (r->pat[i].key == key && cairn__rx_same_name(r, r->pat[i].name, s->name))
            break;
    if (i < r->n_pat) {
        p = &r->pat[i];
        if (name != R_NONE && eps_add(&p->eps, &p->n_eps, &p->cap_eps, name) != CAIRN_OK)
            return CAIRN_ENOMEM;
        p->occurrences++;
        p->last_used = ts;
        p->gen = r->epoch;
        p->success = (p->success * (double)(p->occurrences - 1) + s->success_rate) /
                     (double)p->occurrences;
        *idx_out = i;
        return CAIRN_OK;
    }
    if (cairn__grow(NULL, (void **)&r->pat, &r->cap_pat, r->n_pat + 1, sizeof *r->pat) != 0)
        return CAIRN_ENOMEM;
    p = &r->pat[r->n_pat];
    memset(p, 0, sizeof *p);
    p->name = dup_str(s->name);
    p->desc = dup_str(s->description ? s->description : "");
    p->trigger = dup_str(s->trigger);
    p->action = dup_str(s->action);
    if (p->name == NULL || p->desc == NULL || p->trigger == NULL || p->action == NULL ||
        (name != R_NONE && eps_add(&p->eps, &p->n_eps, &p->cap_eps, name) != CAIRN_OK)) {
        free(p->name);
        free(p->desc);
        free(p->trigger);
        free(p->action);
        free(p->eps);
        return CAIRN_ENOMEM;
    }
    /* Two names of one hash stay apart: the key of the id is seeded by
     * how many came before. */
    p->key = key;
    for (size_t j = 0; j < r->n_pat; j++)
        if (r->pat[j].key == p->key)
            p->key = XXH3_64bits_withSeed(s->name, strlen(s->name), p->key);
    p->success = s->success_rate;
    p->occurrences = 1;
    p->last_used = ts;
    p->created = ts;
    p->gen = r->epoch;
    *idx_out = r->n_pat++;
    return CAIRN_OK;
}

int cairn__rx_apply_episode(cairn_reflex *r, const char *id, size_t len, uint32_t outcome,
                            int64_t ts_episode, uint64_t seq)
{
    uint32_t name = cairn__rx_name(r, id, len, 1);
    repi *x;
    if (name == R_NONE)
        return CAIRN_ENOMEM;
    if (r->epi_by_name[name] != 0) {
        x = &r->epi[r->epi_by_name[name] - 1];
    } else {
        if (cairn__grow(NULL, (void **)&r->epi, &r->cap_epi, r->n_epi + 1, sizeof *r->epi) != 0)
            return CAIRN_ENOMEM;
        x = &r->epi[r->n_epi++];
        memset(x, 0, sizeof *x);
        x->name = name;
        r->epi_by_name[name] = (uint32_t)r->n_epi;
    }
    x->outcome = outcome;
    x->seq = seq;
    x->ts = ts_episode;
    x->gen = r->epoch;
    return CAIRN_OK;
}

int cairn__rx_apply_update(cairn_reflex *r, const char *id, size_t len)
{
    uint32_t name = cairn__rx_name(r, id, len, 0);
    if (name == R_NONE || r->epi_by_name[name] == 0)
        return CAIRN_EINVAL;
    r->epi[r->epi_by_name[name] - 1].processed = 1;
    r->epi[r->epi_by_name[name] - 1].gen = r->epoch;
    return CAIRN_OK;
}

/* ---- rows of a graph generation (rgen.c) ------------------------------------- */

static int eps_set(uint32_t **eps, uint32_t *n, uint32_t *cap, const uint32_t *from, uint32_t k)
{
    if (k > *cap) {
        uint32_t *p = realloc(*eps, (size_t)k * sizeof *p);
        if (p == NULL)
            return CAIRN_ENOMEM;
        *eps = p;
        *cap = k;
    }
    if (k)
        memcpy(*eps, from, (size_t)k * sizeof *from);
    *n = k;
    return CAIRN_OK;
}

int cairn__rx_put_node(cairn_reflex *r, uint32_t no, const gi_node *v)
{
    rnode *n;
    uint32_t i = rx_nodes(r);
    if (no < i) {
        if ((n = node_mut(r, no)) == NULL)
            return CAIRN_ENOMEM;
        if (n->key != v->key)
            return CAIRN_ECORRUPT;
    } else {
        char *label, *fold;
        if (no != i || cairn__rx_find_key(r, v->key) != R_NONE || i >= 0x7ffffffeu)
            return CAIRN_ECORRUPT;
        label = cairn__rx_dup(v->label, v->label_len);
        fold = cairn__rx_dup(v->fold, v->fold_len);
        if (label == NULL || fold == NULL ||
            (n = new_node(r, v->key, label, v->label_len, fold, v->fold_len)) == NULL) {
            free(label);
            free(fold);
            return CAIRN_ENOMEM;
        }
    }
    n->type = v->type;
    n->frequency = v->frequency;
    n->success = v->success;
    n->created = v->created;
    return eps_set(&n->eps, &n->n_eps, &n->cap_eps, v->eps, v->n_eps);
}

int cairn__rx_put_edge(cairn_reflex *r, uint32_t no, const gi_edge *v)
{
    redge *x;
    uint32_t i = rx_edges(r);
    if (no < i) {
        if ((x = edge_mut(r, no)) == NULL)
            return CAIRN_ENOMEM;
        if (x->src != v->src || x->dst != v->dst || x->type != v->type)
            return CAIRN_ECORRUPT;
    } else {
        if (no != i || v->src >= rx_nodes(r) || v->dst >= rx_nodes(r) || i >= 0xfffffffeu ||
            cairn__rx_find_edge(r, v->src, v->dst, v->type) != R_NONE)
            return CAIRN_ECORRUPT;
        if ((x = new_edge(r, v->src, v->dst, v->type)) == NULL)
            return CAIRN_ENOMEM;
    }
    x->evidence = v->evidence;
    x->weight = v->weight;
    x->created = v->created;
    return eps_set(&x->eps, &x->n_eps, &x->cap_eps, v->eps, v->n_eps);
}

int cairn__rx_put_episode(cairn_reflex *r, uint32_t no, const gi_episode *v)
{
    repi *x;
    if (v->name >= r->n_names)
        return CAIRN_ECORRUPT;
    if (no < r->n_epi) {
        x = &r->epi[no];
        if (x->name != v->name)
            return CAIRN_ECORRUPT;
    } else {
        if (no != r->n_epi || r->epi_by_name[v->name] != 0)
            return CAIRN_ECORRUPT;
        if (cairn__grow(NULL, (void **)&r->epi, &r->cap_epi, r->n_epi + 1, sizeof *r->epi) != 0)
            return CAIRN_ENOMEM;
        x = &r->epi[r->n_epi++];
        memset(x, 0, sizeof *x);
        x->name = v->name;
        r->epi_by_name[v->name] = (uint32_t)r->n_epi;
    }
    x->outcome = v->outcome;
    x->processed = v->processed;
    x->seq = v->seq;
    x->ts = v->ts;
    x->gen = r->epoch;
    return CAIRN_OK;
}

int cairn__rx_put_pattern(cairn_reflex *r, uint32_t no, const gi_pattern *v)
{
    rpat *x;
    if (no < r->n_pat) {
        x = &r->pat[no];
        if (x->key != v->key || strlen(x->name) != v->name.len ||
            memcmp(x->name, v->name.p, v->name.len) != 0)
            return CAIRN_ECORRUPT;
    } else {
        if (no != r->n_pat)
            return CAIRN_ECORRUPT;
        for (size_t j = 0; j < r->n_pat; j++)
            if (r->pat[j].key == v->key)
                return CAIRN_ECORRUPT;
        if (cairn__grow(NULL, (void **)&r->pat, &r->cap_pat, r->n_pat + 1, sizeof *r->pat) != 0)
            return CAIRN_ENOMEM;
        x = &r->pat[r->n_pat];
        memset(x, 0, sizeof *x);
        x->name = cairn__rx_dup(v->name.p, v->name.len);
        x->desc = cairn__rx_dup(v->desc.p, v->desc.len);
        x->trigger = cairn__rx_dup(v->trigger.p, v->trigger.len);
        x->action = cairn__rx_dup(v->action.p, v->action.len);
        if (x->name == NULL || x->desc == NULL || x->trigger == NULL || x->action == NULL) {
            free(x->name);
            free(x->desc);
            free(x->trigger);
            free(x->action);
            return CAIRN_ENOMEM;
        }
        x->key = v->key;
        r->n_pat++;
    }
    x->success = v->success;
    x->occurrences = v->occurrences;
    x->last_used = v->last_used;
    x->created = v->created;
    x->gen = r->epoch;
    return eps_set(&x->eps, &x->n_eps, &x->cap_eps, v->eps, v->n_eps);
}

/* ---- records ------------------------------------------------------------------ */

static const cJSON *member(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const char *str_of(const cJSON *o, const char *k)
{
    const cJSON *v = member(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int cairn__rx_apply(cairn_reflex *r, const rchange *c, uint64_t seq, int64_t ts)
{
    int64_t created = c->created != 0 ? c->created : ts;
    uint32_t idx;
    size_t pidx;
    int rc = CAIRN_OK;

    switch (c->rec) {
    case CAIRN_REC_CAUSAL_NODE:
        rc = cairn__rx_apply_node(r, c->type, c->label, c->len, c->episode, c->ep_len, created,
                                  &idx);
        break;
    case CAIRN_REC_CAUSAL_EDGE:
        rc = cairn__rx_apply_edge(r, c->src, c->dst, c->type, c->weight, c->episode, c->ep_len,
                                  created, &idx);
        break;
    case CAIRN_REC_PATTERN:
        rc = cairn__rx_apply_pattern(r, &c->pat, ts, &pidx);
        break;
    case CAIRN_REC_CAUSAL_UPDATE:
        for (size_t i = 0; i < c->n_ids; i++)
            if (cairn__rx_apply_update(r, c->ids[i], c->id_lens[i]) != CAIRN_OK)
                rc = CAIRN_EINVAL; /* the others still count */
        break;
    case CAIRN_REC_EPISODE:
        rc = cairn__rx_apply_episode(r, c->label, c->len, c->type, c->ep_ts, seq);
        break;
    default:
        return CAIRN_OK;
    }
    if (rc == CAIRN_OK || (c->rec == CAIRN_REC_CAUSAL_UPDATE && rc == CAIRN_EINVAL)) {
        r->delta_records++;
        if (c->rec != CAIRN_REC_EPISODE)
            r->updated = ts;
    }
    return rc;
}

void cairn__rx_encode(const rchange *c, rjson *j)
{
    cairn__rj_raw(j, "{", 1);
    switch (c->rec) {
    case CAIRN_REC_CAUSAL_NODE:
        cairn__rj_key(j, "type");
        cairn__rj_str(j, cairn_node_type_name(c->type), strlen(cairn_node_type_name(c->type)));
        cairn__rj_key(j, "label");
        cairn__rj_str(j, c->label, c->len);
        break;
    case CAIRN_REC_CAUSAL_EDGE: {
        char id[CAIRN_NODE_ID_MAX + 1];
        cairn__rx_id('n', c->src, id);
        cairn__rj_key(j, "source");
        cairn__rj_str(j, id, strlen(id));
        cairn__rx_id('n', c->dst, id);
        cairn__rj_key(j, "target");
        cairn__rj_str(j, id, strlen(id));
        cairn__rj_key(j, "type");
        cairn__rj_str(j, cairn_edge_type_name(c->type), strlen(cairn_edge_type_name(c->type)));
        cairn__rj_key(j, "weight");
        cairn__rj_num(j, c->weight);
        break;
    }
    case CAIRN_REC_PATTERN: {
        const char *d = c->pat.description ? c->pat.description : "";
        cairn__rj_key(j, "name");
        cairn__rj_str(j, c->pat.name, strlen(c->pat.name));
        cairn__rj_key(j, "trigger");
        cairn__rj_str(j, c->pat.trigger, strlen(c->pat.trigger));
        cairn__rj_key(j, "action");
        cairn__rj_str(j, c->pat.action, strlen(c->pat.action));
        cairn__rj_key(j, "description");
        cairn__rj_str(j, d, strlen(d));
        cairn__rj_key(j, "success_rate");
        cairn__rj_num(j, c->pat.success_rate);
        if (c->pat.episode != NULL && c->pat.episode[0] != 0) {
            cairn__rj_key(j, "episode");
            cairn__rj_str(j, c->pat.episode, strlen(c->pat.episode));
        }
        break;
    }
    case CAIRN_REC_EPISODE: /* the whole episode, as episode.c made it */
        j->len = 0;
        cairn__rj_raw(j, c->ep_json, c->ep_json_len);
        return;
    case CAIRN_REC_CAUSAL_UPDATE:
        cairn__rj_key(j, "episodes");
        cairn__rj_raw(j, "[", 1);
        for (size_t i = 0; i < c->n_ids; i++) {
            if (i)
                cairn__rj_raw(j, ",", 1);
            cairn__rj_str(j, c->ids[i], c->id_lens[i]);
        }
        cairn__rj_raw(j, "]", 1);
        break;
    }
    if ((c->rec == CAIRN_REC_CAUSAL_NODE || c->rec == CAIRN_REC_CAUSAL_EDGE) &&
        c->episode != NULL && c->ep_len > 0) {
        cairn__rj_key(j, "episode");
        cairn__rj_str(j, c->episode, c->ep_len);
    }
    if (c->created != 0) {
        char b[32];
        int n = snprintf(b, sizeof b, "%" PRId64, c->created);
        cairn__rj_key(j, "created");
        cairn__rj_raw(j, b, (size_t)n);
    }
    cairn__rj_raw(j, "}", 1);
}

/* The change a record's payload says; CAIRN_EINVAL if it says none. The
 * strings point into o. For an update, *ids is malloc'd (free it). */
static int decode(const cairn_record *rec, const cJSON *o, rchange *c, const char ***ids,
                  size_t **lens)
{
    const char *ep = str_of(o, "episode");
    const cJSON *cr = member(o, "created");
    unsigned t;

    memset(c, 0, sizeof *c);
    c->rec = rec->type;
    c->episode = ep;
    c->ep_len = ep ? strlen(ep) : 0;
    c->created = cJSON_IsNumber(cr) ? (int64_t)cr->valuedouble : 0;
    switch (rec->type) {
    case CAIRN_REC_CAUSAL_NODE:
        c->label = str_of(o, "label");
        if (c->label == NULL || cairn_node_type_parse(str_of(o, "type"), &t) != CAIRN_OK)
            return CAIRN_EINVAL;
        c->len = strlen(c->label);
        c->type = t;
        return CAIRN_OK;
    case CAIRN_REC_CAUSAL_EDGE: {
        const cJSON *w = member(o, "weight");
        if (!cairn__rx_parse_id(str_of(o, "source"), 'n', &c->src) ||
            !cairn__rx_parse_id(str_of(o, "target"), 'n', &c->dst) || !cJSON_IsNumber(w) ||
            cairn_edge_type_parse(str_of(o, "type"), &t) != CAIRN_OK)
            return CAIRN_EINVAL;
        c->type = t;
        c->weight = w->valuedouble;
        return CAIRN_OK;
    }
    case CAIRN_REC_PATTERN: {
        const cJSON *sr = member(o, "success_rate");
        c->pat.name = str_of(o, "name");
        c->pat.trigger = str_of(o, "trigger");
        c->pat.action = str_of(o, "action");
        c->pat.description = str_of(o, "description");
        c->pat.episode = ep;
        c->pat.success_rate = cJSON_IsNumber(sr) ? sr->valuedouble : -1;
        return c->pat.name && c->pat.trigger && c->pat.action ? CAIRN_OK : CAIRN_EINVAL;
    }
    case CAIRN_REC_CAUSAL_UPDATE: {
        const cJSON *eps = member(o, "episodes"), *x;
        size_t n = 0;
        if (!cJSON_IsArray(eps))
            return CAIRN_EINVAL;
        *ids = malloc(((size_t)cJSON_GetArraySize(eps) + 1) * sizeof **ids);
        *lens = malloc(((size_t)cJSON_GetArraySize(eps) + 1) * sizeof **lens);
        if (*ids == NULL || *lens == NULL)
            return CAIRN_ENOMEM;
        cJSON_ArrayForEach(x, eps) {
            if (!cJSON_IsString(x))
                return CAIRN_EINVAL;
            (*ids)[n] = x->valuestring;
            (*lens)[n++] = strlen(x->valuestring);
        }
        c->ids = *ids;
        c->id_lens = *lens;
        c->n_ids = n;
        return CAIRN_OK;
    }
    case CAIRN_REC_EPISODE: {
        const char *ts_s = str_of(o, "timestamp"), *oc = str_of(o, "outcome");
        int out = oc ? cairn__rx_outcome(oc, strlen(oc)) : -1;
        c->label = str_of(o, "id");
        if (c->label == NULL || ts_s == NULL || out < 0 ||
            cairn__rx_parse_time(ts_s, strlen(ts_s), &c->ep_ts) != CAIRN_OK)
            return CAIRN_EINVAL;
        c->len = strlen(c->label);
        c->type = (uint32_t)out;
        c->episode = NULL;
        c->ep_len = 0;
        return CAIRN_OK;
    }
    }
    return CAIRN_EINVAL;
}

/* What cairn__rx_apply_record returns to end a replay early, with no
 * error: the log ends inside a commit the writer is still writing. */
#define REPLAY_STOP 1

/* A record of a commit of several (an import, an update): CAIRN_OK to
 * apply it, CAIRN_EINVAL to skip it (a bad mark, or a commit cut short for
 * good), REPLAY_STOP, or the log's error (batch.h). */
static int commit_check(cairn_reflex *r, const cairn_record *rec, const cJSON *o)
{
    uint64_t i, n;
    int verdict = CAIRN_BATCH_TORN, m = cairn__batch_get(o, &i, &n), rc;
    if (m <= 0)
        return m == 0 ? CAIRN_OK : CAIRN_EINVAL;
    rc = cairn__batch_check(r->db, &r->batch, rec->seq, i, n, &verdict);
    if (rc != CAIRN_OK)
        return rc;
    if (verdict == CAIRN_BATCH_PENDING) {
        r->folded = rec->seq - i - 1; /* none of it was applied */
        return REPLAY_STOP;
    }
    return verdict == CAIRN_BATCH_WHOLE ? CAIRN_OK : CAIRN_EINVAL;
}

int cairn__rx_apply_record(cairn_reflex *r, const cairn_record *rec)
{
    const char **ids = NULL;
    size_t *lens = NULL;
    rchange c;
    cJSON *o;
    int rc;

    if (rec->seq > r->folded)
        r->folded = rec->seq;
    if (rec->type == CAIRN_REC_COMPACTED) {
        /* A hole of compaction: the seqs it stands for are folded too
         * (format-spec/compaction.md); it dropped no reflexion record. */
        cairn__hole h;
        if (cairn__hole_decode(rec->json, rec->json_len, rec->seq, &h, NULL) == CAIRN_OK &&
            h.upto > r->folded)
            r->folded = h.upto;
        return CAIRN_OK;
    }
    if (rec->type < CAIRN_REC_EPISODE || rec->type > CAIRN_REC_CAUSAL_UPDATE)
        return CAIRN_OK;
    o = cJSON_ParseWithLength(rec->json, rec->json_len);
    rc = cJSON_IsObject(o) ? commit_check(r, rec, o) : CAIRN_EINVAL;
    if (rc != CAIRN_OK && rc != CAIRN_EINVAL) {
        cJSON_Delete(o);
        return rc; /* stop here, or the log failed */
    }
    if (rc == CAIRN_OK)
        rc = decode(rec, o, &c, &ids, &lens);
    if (rc == CAIRN_OK)
        rc = cairn__rx_apply(r, &c, rec->seq, rec->ts_ms);
    free(ids);
    free(lens);
    cJSON_Delete(o);
    if (rc == CAIRN_ENOMEM)
        return rc;
    if (rc != CAIRN_OK)
        r->skipped++;
    return CAIRN_OK;
}

static int apply_one(void *r, const cairn_record *rec)
{
    return cairn__rx_apply_record(r, rec);
}

static int replay(cairn_reflex *r, uint64_t from, uint64_t to)
{
    int rc = cairn__each_record(r->db, from, to, apply_one, r);
    /* A commit found whole whose last records the iteration did not reach
     * (a read-only handle's view can end inside one another process was
     * writing when the iteration began): fold the rest now, never half. */
    if (rc == CAIRN_OK && r->batch.verdict == CAIRN_BATCH_WHOLE && r->batch.last > r->folded &&
        r->batch.last <= to) {
        rc = cairn__each_record(r->db, r->folded + 1, r->batch.last, apply_one, r);
        if (rc == CAIRN_OK && r->batch.last > r->folded)
            return cairn__rx_fail(r, CAIRN_ECORRUPT, "replaying the reflexion records: record "
                                  "%" PRIu64 " was read, then could not be", r->batch.last);
    }
    if (rc == CAIRN_OK || rc == REPLAY_STOP)
        return CAIRN_OK;
    return cairn__rx_fail(r, rc, "replaying the reflexion records: %s",
                          rc == CAIRN_ENOMEM ? "no memory" : cairn_errmsg(r->db));
}

int cairn__rx_catch_up(cairn_reflex *r)
{
    /* Other processes append: look (no read when nothing changed), and
     * fold only when the log is past what is folded. */
    int rc = cairn__db_refresh(r->db);
    if (rc != CAIRN_OK)
        return cairn__rx_fail(r, rc, "%s", cairn_errmsg(r->db));
    if (cairn__handed_seq(r->db) <= r->folded)
        return CAIRN_OK;
    rc = replay(r, r->folded + 1, UINT64_MAX);
    if (rc != CAIRN_OK)
        r->stale = 1; /* it may be past a record it could not apply */
    return rc;
}

/* While another process holds the lock: fold what it appended so far
 * (cairn__turn_begin_busy), so that the catch-up inside the turn is short.
 * A failure is the catch-up's: the handle is stale (it writes no graph
 * file and commits nothing), and the turn that follows returns the error,
 * kept in wait_rc and wait_err meanwhile. */
static int fold_waiting(void *user)
{
    cairn_reflex *r = user;
    uint64_t before;
    int rc, more;

    if (pthread_mutex_trylock(&r->mu) != 0)
        return 0; /* another thread of this handle works: leave it be */
    before = r->folded;
    if (r->stale || r->wait_rc != CAIRN_OK || cairn__db_refresh(r->db) != CAIRN_OK ||
        cairn__handed_seq(r->db) <= r->folded) {
        pthread_mutex_unlock(&r->mu);
        return 0;
    }
    rc = replay(r, r->folded + 1, UINT64_MAX);
    if (rc != CAIRN_OK) {
        r->stale = 1;
        r->wait_rc = rc;
        memcpy(r->wait_err, cairn__errbuf(r), sizeof r->wait_err);
    }
    more = rc == CAIRN_OK && r->folded > before;
    pthread_mutex_unlock(&r->mu);
    return more;
}

int cairn__rx_turn_begin(cairn_reflex *r)
{
    int rc;

    /* Readers of this handle go on while another process holds the lock. */
    pthread_mutex_unlock(&r->mu);
    rc = cairn__turn_begin_busy(r->db, fold_waiting, r);
    pthread_mutex_lock(&r->mu);
    if (rc == CAIRN_OK && r->wait_rc != CAIRN_OK) { /* the fold while waiting failed */
        rc = cairn__rx_fail(r, r->wait_rc, "%s", r->wait_err);
        r->wait_rc = CAIRN_OK;
        (void)cairn__turn_end(r->db);
        return rc;
    }
    if (rc != CAIRN_OK)
        return cairn__rx_fail(r, rc, "%s", cairn_errmsg(r->db));
    rc = cairn__rx_catch_up(r);
    if (rc != CAIRN_OK)
        (void)cairn__turn_end(r->db);
    return rc;
}

int cairn__rx_turn_end(cairn_reflex *r, int rc)
{
    int erc = cairn__turn_end(r->db);
    if (rc == CAIRN_OK && erc != CAIRN_OK)
        rc = cairn__rx_fail(r, erc, "%s", cairn_errmsg(r->db));
    return rc;
}

/* Record i of a commit of n: "batch":[i,n] as the last member of j's
 * object (every payload of a commit of several is one; an episode's, the
 * only one written as it came, is always committed alone). */
static void mark(rjson *j, size_t i, size_t n)
{
    char b[48];
    int k = snprintf(b, sizeof b, "[%zu,%zu]}", i, n);
    if (j->oom)
        return;
    while (j->len > 0 && (j->p[j->len - 1] == ' ' || j->p[j->len - 1] == '\n' ||
                          j->p[j->len - 1] == '\r' || j->p[j->len - 1] == '\t'))
        j->len--;
    if (j->len < 2 || j->p[j->len - 1] != '}') {
        j->oom = 1; /* cannot be: refused as "no memory" rather than written unmarked */
        return;
    }
    j->len--;
    cairn__rj_key(j, "batch");
    cairn__rj_raw(j, b, (size_t)k);
}

int cairn__rx_commit(cairn_reflex *r, const rchange *c, size_t n)
{
    cairn_entry one_ent;
    rjson one_js;
    /* A single change (the common call) needs no allocation here. */
    cairn_entry *ents = n <= 1 ? &one_ent : calloc(n, sizeof *ents);
    rjson *js = n <= 1 ? &one_js : calloc(n, sizeof *js);
    uint64_t first = 0;
    int64_t ts = 0;
    int rc = CAIRN_OK;

    memset(&one_ent, 0, sizeof one_ent);
    memset(&one_js, 0, sizeof one_js);
    if (ents == NULL || js == NULL) {
        rc = cairn__rx_fail(r, CAIRN_ENOMEM, "no memory");
        goto out;
    }
    if (r->db->read_only) {
        rc = cairn__rx_fail(r, CAIRN_EPERM, "the store is open read-only");
        goto out;
    }
    if (r->stale) {
        rc = cairn__rx_fail(r, CAIRN_EINVAL, "this handle missed a record of the log: reopen it");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        cairn__rx_encode(&c[i], &js[i]);
        if (n >= 2) /* one commit: a replay applies all of it or none (batch.h) */
            mark(&js[i], i, n);
        if (js[i].oom) {
            rc = cairn__rx_fail(r, CAIRN_ENOMEM, "no memory");
            goto out;
        }
        ents[i].type = c[i].rec;
        ents[i].json = js[i].p;
        ents[i].json_len = js[i].len;
    }
    rc = cairn__append_batch_ts(r->db, ents, n, &first, &ts);
    if (rc != CAIRN_OK) {
        rc = cairn__rx_fail(r, rc, "%s", cairn_errmsg(r->db));
        goto out;
    }
    /* Fold whatever another handle slipped in before ours, then ours. */
    if (first > r->folded + 1 && (rc = replay(r, r->folded + 1, first - 1)) != CAIRN_OK) {
        r->stale = 1;
        goto out;
    }
    for (size_t i = 0; i < n && rc == CAIRN_OK; i++) {
        r->folded = first + i;
        rc = cairn__rx_apply(r, &c[i], first + i, ts);
        if (rc == CAIRN_EINVAL || rc == CAIRN_ENOTFOUND) {
            r->skipped++; /* as a replay would: the callers check before */
            rc = CAIRN_OK;
        }
    }
    if (rc != CAIRN_OK) {
        r->stale = 1;
        rc = cairn__rx_fail(r, rc, "the records were appended but the in-memory graph could not "
                            "take them (no memory): reopen the store");
    }
out:
    for (size_t i = 0; js != NULL && i < n; i++)
        free(js[i].p);
    if (n > 1) {
        free(js);
        free(ents);
    }
    return rc;
}
