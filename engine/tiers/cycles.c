/*
 * cycles.c - the memory stream's fast paths (cycles.h): its metadata read
 * without a parser, entries written as JSON without a tree, and the cycle
 * index that lets a list by cycle read only the entries of the range.
 *
 * The index is the handle's, in RAM: per stream namespace, (cycle, seq)
 * of every entry stored up to `upto`, sorted by cycle when asked. A
 * refresh adds the entries stored since (found by seq: the state's rows
 * are in seq order), and starts again when the state's metadata changed
 * under it (an update of a memory's metadata, a rebuild of the state:
 * m->meta_changes). An entry that went (removed, forgotten, cleared) stays
 * in the index until then; readers check each row they use against the
 * state.
 */
#include "cycles.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

/* ---- reading the metadata ------------------------------------------------------ */

#define META_PREFIX "{\"tier\":\"stream\",\"entryId\":\""

static int parse_int(const char *p, int64_t *v)
{
    int64_t x = 0;
    int neg = *p == '-', digits = 0;
    if (neg)
        p++;
    while (*p >= '0' && *p <= '9' && digits < 18)
        x = x * 10 + (*p++ - '0'), digits++;
    if (digits == 0 || (*p != ',' && *p != '}'))
        return -1;
    *v = neg ? -x : x;
    return 0;
}

/* The string value that starts at p (after its opening quote): its length
 * up to the closing quote, -1 when it holds an escape (read it with cJSON). */
static long plain_string(const char *p)
{
    const char *q = p;
    while (*q != 0 && *q != '"' && *q != '\\')
        q++;
    return *q == '"' ? (long)(q - p) : -1;
}

int cairn__stream_meta_light(const char *meta, stream_meta *out)
{
    const char *p;
    long n;
    size_t len;
    if (meta == NULL || strncmp(meta, META_PREFIX, sizeof META_PREFIX - 1) != 0)
        return -1;
    p = meta + sizeof META_PREFIX - 1;
    if ((n = plain_string(p)) < 0)
        return -1;
    out->eid = p;
    out->eid_len = (size_t)n;
    p += n + 1;
    if (strncmp(p, ",\"cycle\":", 9) != 0 || parse_int(p + 9, &out->cycle) != 0)
        return -1;
    out->rest = p + 1; /* "cycle":... */
    len = strlen(out->rest);
    if (len == 0 || out->rest[len - 1] != '}')
        return -1;
    out->rest_len = len - 1;
    out->role = out->issues = NULL;
    return 0;
}

int cairn__stream_meta_row(const crow *r, const char *meta, stream_meta *out)
{
    const size_t pre = sizeof META_PREFIX - 1;
    if (r->rest_len != 0 && meta != NULL) {
        /* the same layout as when the index read it: the entry id's quote,
         * the cycle's key, the closing brace and the end where they were */
        const char *eid = meta + pre, *rest = eid + r->eid_len + 2;
        if (memcmp(meta, META_PREFIX, pre) == 0 && memchr(eid, 0, r->eid_len) == NULL &&
            eid[r->eid_len] == '"' && eid[r->eid_len + 1] == ',' &&
            memcmp(rest, "\"cycle\":", 8) == 0 && memchr(rest, 0, r->rest_len) == NULL &&
            rest[r->rest_len] == '}' && rest[r->rest_len + 1] == 0 &&
            parse_int(rest + 8, &out->cycle) == 0) {
            out->eid = eid;
            out->eid_len = r->eid_len;
            out->rest = rest;
            out->rest_len = r->rest_len;
            out->role = out->issues = NULL;
            return 0;
        }
    }
    return cairn__stream_meta_light(meta, out);
}

int cairn__stream_meta(const char *meta, stream_meta *out)
{
    const char *p, *r, *e;
    long n;
    if (cairn__stream_meta_light(meta, out) != 0)
        return -1;
    p = out->rest;
    /* the members are found by their key with the comma before it: inside a
     * string value a quote is escaped, so the bytes ,"role":" cannot occur
     * there */
    if ((r = strstr(p, ",\"role\":\"")) == NULL || (n = plain_string(r + 9)) < 0)
        return -1;
    out->role = r + 9;
    out->role_len = (size_t)n;
    if ((r = strstr(r, ",\"importance\":")) == NULL || parse_int(r + 14, &out->importance) != 0)
        return -1;
    if ((r = strstr(r, ",\"issueRefs\":[")) == NULL || (e = strchr(r + 13, ']')) == NULL)
        return -1;
    out->issues = r + 13;
    out->issues_len = (size_t)(e - out->issues + 1);
    /* plain integers only: a number printed in exponent form (1e+15) is
     * read by the parser */
    for (size_t i = 1; i + 1 < out->issues_len; i++)
        if (!((out->issues[i] >= '0' && out->issues[i] <= '9') || out->issues[i] == ','))
            return -1;
    return 0;
}

int cairn__stream_has_issue(const char *issues, size_t len, int64_t n)
{
    size_t i = 1;
    while (i < len) {
        int64_t v = 0;
        int digits = 0;
        while (i < len && issues[i] >= '0' && issues[i] <= '9' && digits < 18)
            v = v * 10 + (issues[i++] - '0'), digits++;
        if (digits > 0 && v == n)
            return 1;
        while (i < len && (issues[i] < '0' || issues[i] > '9'))
            i++;
    }
    return 0;
}

/* ---- writing entries ---------------------------------------------------------------- */

void cairn__tbuf_reserve(tbuf *b, size_t n)
{
    char *p;
    if (b->oom || b->len + n + 1 <= b->cap)
        return;
    if ((p = realloc(b->p, b->len + n + 1)) == NULL) {
        b->oom = 1;
        return;
    }
    b->p = p;
    b->cap = b->len + n + 1;
}

void cairn__tbuf_grow(tbuf *b, size_t n)
{
    size_t cap = b->cap ? b->cap : 4096;
    char *p;
    if (b->oom)
        return;
    while (b->len + n + 1 > cap)
        cap *= 2;
    if ((p = realloc(b->p, cap)) == NULL) {
        b->oom = 1;
        return;
    }
    b->p = p;
    b->cap = cap;
}

/* Does the 8-byte word w hold a byte that JSON escapes: below 0x20, '"'
 * or '\\'? (The usual has-less and has-zero bit tricks.) */
static inline int word_needs_escape(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t lt = (w - ones * 0x20) & ~w & highs;        /* a byte < 0x20 */
    uint64_t q = w ^ (ones * '"'), bs = w ^ (ones * '\\');
    uint64_t eq = ((q - ones) & ~q & highs) | ((bs - ones) & ~bs & highs);
    return (lt | eq) != 0;
}

void cairn__tbuf_str(tbuf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t run = 0, i = 0;
    cairn__tbuf_put(b, "\"", 1);
    while (i < n) {
        unsigned char c;
        char esc[6];
        size_t k = 0;
        /* eight plain bytes at a time */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (word_needs_escape(w))
                break;
            i += 8;
        }
        if (i >= n)
            break;
        c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            i++;
            continue;
        }
        cairn__tbuf_put(b, s + run, i - run);
        run = ++i;
        esc[k++] = '\\';
        switch (c) {
        case '"': esc[k++] = '"'; break;
        case '\\': esc[k++] = '\\'; break;
        case '\n': esc[k++] = 'n'; break;
        case '\r': esc[k++] = 'r'; break;
        case '\t': esc[k++] = 't'; break;
        case '\b': esc[k++] = 'b'; break;
        case '\f': esc[k++] = 'f'; break;
        default:
            esc[k++] = 'u';
            esc[k++] = '0';
            esc[k++] = '0';
            esc[k++] = hex[c >> 4];
            esc[k++] = hex[c & 15];
        }
        cairn__tbuf_put(b, esc, k);
    }
    cairn__tbuf_put(b, s + run, n - run);
    cairn__tbuf_put(b, "\"", 1);
}

void cairn__stream_entry_write(tbuf *b, const stream_meta *sm, const char *mid, const char *content,
                               size_t content_len, const char *scope, int with_score,
                               double score)
{
    cairn__tbuf_put(b, "{\"id\":\"", 7);
    cairn__tbuf_put(b, sm->eid, sm->eid_len);
    cairn__tbuf_put(b, "\",", 2);
    cairn__tbuf_put(b, sm->rest, sm->rest_len);
    cairn__tbuf_put(b, ",\"content\":", 11);
    cairn__tbuf_str(b, content, content_len);
    cairn__tbuf_put(b, ",\"scope\":", 9);
    cairn__tbuf_str(b, scope, strlen(scope));
    cairn__tbuf_put(b, ",\"memoryId\":\"", 13);
    cairn__tbuf_put(b, mid, strlen(mid));
    cairn__tbuf_put(b, "\"", 1);
    if (with_score) {
        char num[48];
        /* as cJSON prints a double: the shortest of 15 or 17 digits */
        int k = snprintf(num, sizeof num, ",\"score\":%.15g", score);
        if (strtod(num + 9, NULL) != score)
            k = snprintf(num, sizeof num, ",\"score\":%.17g", score);
        cairn__tbuf_put(b, num, (size_t)k);
    }
    cairn__tbuf_put(b, "}", 1);
}

/* ---- the cycle index ---------------------------------------------------------------- */

typedef struct cns {
    uint32_t nsi;
    crow *rows;
    size_t n, cap;
    int sorted;
} cns;

typedef struct cycles {
    uint64_t upto, meta_changes;
    cns *ns;
    size_t nns, cap;
} cycles;

static void cycles_free(void *p)
{
    cycles *c = p;
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->nns; i++)
        free(c->ns[i].rows);
    free(c->ns);
    free(c);
}

static cns *ns_of(cycles *c, uint32_t nsi, int create)
{
    for (size_t i = 0; i < c->nns; i++)
        if (c->ns[i].nsi == nsi)
            return &c->ns[i];
    if (!create || cairn__grow(NULL, (void **)&c->ns, &c->cap, c->nns + 1, sizeof *c->ns) != CAIRN_OK)
        return NULL;
    memset(&c->ns[c->nns], 0, sizeof c->ns[0]);
    c->ns[c->nns].nsi = nsi;
    c->ns[c->nns].sorted = 1;
    return &c->ns[c->nns++];
}

/* Drop every row: the next refresh reads the state from its start. */
static void reset(cycles *c)
{
    for (size_t i = 0; i < c->nns; i++)
        free(c->ns[i].rows);
    c->nns = 0;
    c->upto = 0;
}

static int by_cycle_seq(const void *a, const void *b)
{
    const crow *x = a, *y = b;
    if (x->cycle != y->cycle)
        return x->cycle < y->cycle ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The cycle of a stream memory, or -1 when it is no entry; *sm its light
 * read (eid_len and rest_len 0 when it has none). */
static int64_t cycle_of(const ment *x, stream_meta *sm)
{
    cJSON *meta;
    int64_t c;
    if (cairn__stream_meta_light(x->metadata, sm) == 0 && sm->eid_len < UINT32_MAX &&
        sm->rest_len < UINT32_MAX)
        return sm->cycle;
    sm->eid_len = sm->rest_len = 0;
    if ((meta = cairn__tier_meta(x, TIER_STREAM)) == NULL)
        return -1;
    c = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(meta, "cycle"));
    cJSON_Delete(meta);
    return c;
}

int cairn__cycles_refresh(cairn_mem *m)
{
    cycles *c = m->cycles;
    size_t total, first = 0;

    if (c == NULL) {
        if ((c = calloc(1, sizeof *c)) == NULL)
            return CAIRN_ENOMEM;
        m->cycles = c;
        m->cycles_free = cycles_free;
        c->meta_changes = m->meta_changes;
    }
    if (c->meta_changes != m->meta_changes) { /* start again */
        reset(c);
        c->meta_changes = m->meta_changes;
    }
    if (c->upto >= m->folded)
        return CAIRN_OK;
    total = cairn__mem_total(m);
    if (c->upto > 0) { /* the first entry stored after upto */
        size_t hi = total;
        while (first < hi) {
            size_t mid = first + (hi - first) / 2;
            if (cairn__mem_seq_at(m, mid) <= c->upto)
                first = mid + 1;
            else
                hi = mid;
        }
    }
    for (size_t i = first; i < total; i++) {
        const ment *x = cairn__mem_at_loaded(m, i);
        const char *name;
        stream_meta sm;
        int64_t cyc;
        cns *s;
        if (x == NULL) {
            reset(c);
            return CAIRN_ECORRUPT;
        }
        if (!x->live)
            continue;
        name = m->ns[x->nsi].name;
        if (strncmp(name, TIER_STREAM "@", sizeof TIER_STREAM) != 0 || (cyc = cycle_of(x, &sm)) < 0)
            continue;
        if ((s = ns_of(c, x->nsi, 1)) == NULL ||
            cairn__grow(NULL, (void **)&s->rows, &s->cap, s->n + 1, sizeof *s->rows) != CAIRN_OK) {
            reset(c); /* rows past upto added: the next refresh starts over */
            return CAIRN_ENOMEM;
        }
        if (s->n > 0 && cyc < s->rows[s->n - 1].cycle)
            s->sorted = 0;
        s->rows[s->n].cycle = cyc;
        s->rows[s->n].seq = x->seq;
        s->rows[s->n].eid_len = (uint32_t)sm.eid_len;
        s->rows[s->n].rest_len = (uint32_t)sm.rest_len;
        s->n++;
    }
    c->upto = m->folded;
    return CAIRN_OK;
}

const crow *cairn__cycles_rows(cairn_mem *m, uint32_t nsi, size_t *n)
{
    cycles *c = m->cycles;
    cns *s = c ? ns_of(c, nsi, 0) : NULL;
    *n = 0;
    if (s == NULL)
        return NULL;
    if (!s->sorted) {
        qsort(s->rows, s->n, sizeof *s->rows, by_cycle_seq);
        s->sorted = 1;
    }
    *n = s->n;
    return s->rows;
}
