/*
 * context.c - cairn_mem_context: recalled memories formatted for a prompt
 * (Engram's four formats: bullets, prose, xml, json), cut to a
 * token budget by cairn_token_estimate.
 *
 * The block is built piece by piece: a memory goes in only if the block
 * with it (and its closing text) still fits the budget, so the result
 * never exceeds max_tokens and always ends well formed.
 */
#include <stdlib.h>
#include <string.h>

#include "cairn.h"
#include "status.h"

size_t cairn_token_estimate(const char *s, size_t len)
{
    size_t chars = 0;
    for (size_t i = 0; i < len; i++)
        chars += ((unsigned char)s[i] & 0xC0) != 0x80; /* count lead bytes only */
    return (chars + 3) / 4;
}

typedef struct buf {
    char *p;
    size_t len, cap;
    int oom;
} buf;

static void put(buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *p;
        while (cap < b->len + n + 1)
            cap *= 2;
        p = realloc(b->p, cap);
        if (p == NULL) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void puts_(buf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* s escaped for XML text and attributes. */
static void put_xml(buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': puts_(b, "&amp;"); break;
        case '<': puts_(b, "&lt;"); break;
        case '>': puts_(b, "&gt;"); break;
        case '"': puts_(b, "&quot;"); break;
        default: put(b, s, 1);
        }
    }
}

/* s as a JSON string literal. */
static void put_json(buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    puts_(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            put(b, e, 2);
        } else if (c == '\n') {
            puts_(b, "\\n");
        } else if (c == '\t') {
            puts_(b, "\\t");
        } else if (c == '\r') {
            puts_(b, "\\r");
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put(b, e, 6);
        } else {
            put(b, s, 1);
        }
    }
    puts_(b, "\"");
}

/* One memory in the format, the `first` one or not. */
static void put_item(buf *b, cairn_context_format f, const cairn_memory *m, int first)
{
    size_t n = strlen(m->content);
    switch (f) {
    case CAIRN_CONTEXT_BULLETS:
        puts_(b, "\n- ");
        puts_(b, m->content);
        puts_(b, " [");
        puts_(b, m->category);
        puts_(b, "]");
        break;
    case CAIRN_CONTEXT_PROSE:
        puts_(b, " ");
        puts_(b, m->content);
        if (n > 0 && strchr(".!?", m->content[n - 1]) == NULL)
            puts_(b, ".");
        break;
    case CAIRN_CONTEXT_XML:
        puts_(b, "\n  <memory category=\"");
        put_xml(b, m->category);
        puts_(b, "\">");
        put_xml(b, m->content);
        puts_(b, "</memory>");
        break;
    case CAIRN_CONTEXT_JSON:
        puts_(b, first ? "\n  {\"content\": " : ",\n  {\"content\": ");
        put_json(b, m->content);
        puts_(b, ", \"category\": ");
        put_json(b, m->category);
        puts_(b, "}");
        break;
    }
}

static const char *head_of(cairn_context_format f)
{
    switch (f) {
    case CAIRN_CONTEXT_BULLETS: return "Relevant memories:";
    case CAIRN_CONTEXT_PROSE: return "Relevant memories:";
    case CAIRN_CONTEXT_XML: return "<memories>";
    case CAIRN_CONTEXT_JSON: return "[";
    }
    return "";
}

static const char *tail_of(cairn_context_format f)
{
    return f == CAIRN_CONTEXT_XML ? "\n</memories>" : f == CAIRN_CONTEXT_JSON ? "\n]" : "";
}

int cairn_mem_context(cairn_mem *m, const char *query, const cairn_context_opts *o, char **out,
                      size_t *n_included)
{
    cairn_context_opts def = CAIRN_CONTEXT_OPTS_INIT;
    cairn_recall_hit *h = NULL;
    size_t n = 0, used = 0;
    buf b = {NULL, 0, 0, 0};
    int rc;

    *out = NULL;
    if (n_included != NULL)
        *n_included = 0;
    if (o == NULL)
        o = &def;
    if ((rc = cairn__opts_version(m, "cairn_context_opts", o->version, CAIRN_CONTEXT_OPTS_VERSION)) != CAIRN_OK)
        return rc;
    if ((unsigned)o->format > CAIRN_CONTEXT_JSON)
        return CAIRN_EINVAL;
    rc = cairn_mem_recall(m, query, &o->recall, &h, &n);
    if (rc != CAIRN_OK)
        return rc;
    puts_(&b, head_of(o->format));
    for (size_t i = 0; i < n && !b.oom; i++) {
        size_t keep = b.len;
        put_item(&b, o->format, &h[i].mem, i == 0);
        puts_(&b, tail_of(o->format));
        if (!b.oom && o->max_tokens > 0 && cairn_token_estimate(b.p, b.len) > o->max_tokens) {
            b.len = keep; /* it does not fit: the block ends before it */
            b.p[b.len] = 0;
            break;
        }
        b.len -= strlen(tail_of(o->format));
        b.p[b.len] = 0;
        used++;
    }
    puts_(&b, tail_of(o->format));
    cairn_recall_free(h, n);
    if (b.oom) {
        free(b.p);
        return CAIRN_ENOMEM;
    }
    if (used == 0)
        b.p[0] = 0;
    *out = b.p;
    if (n_included != NULL)
        *n_included = used;
    return CAIRN_OK;
}
