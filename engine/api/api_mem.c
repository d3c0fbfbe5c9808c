/*
 * api_mem.c - the memory tools: add, recall, context, search, get, list,
 * update, remove, restore, forget, stats, history.
 *
 * Memories print as Engram's objects (camelCase: createdAt, accessCount),
 * as `cairn get --format json` prints them; arguments are snake_case.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "render.h"

#define A_NAMESPACE                                                                        \
    {"namespace", API_STRING, 0, 0, CAIRN_NS_MAX, NULL,                                   \
     "Namespace of the memory (default \"\", the one `cairn add` and `cairn log` use)."}
#define A_NAMESPACES                                                                       \
    {"namespace", API_STRING_OR_STRINGS, 0, 0, 0, NULL,                                   \
     "Namespace, or namespaces, to search (default \"\")."}
#define A_ID {"id", API_STRING, 1, 0, 64, NULL, "The memory's id, as memory_add returned it."}

static int fail_mem(api_call *c, int rc)
{
    return cairn__api_fail_msg(c, rc, cairn_mem_errmsg(c->s->mem));
}

/* The metadata text for a store or an update: the "metadata" argument (or
 * base, the memory's own, when tags alone change), with "tags" set from
 * the "tags" argument. *out NULL when neither is given. */
static int metadata_text(api_call *c, const char *base, char **out)
{
    const cJSON *meta = cairn__api_arg(c, "metadata"), *tags = cairn__api_arg(c, "tags");
    cJSON *o;

    *out = NULL;
    if (meta == NULL && tags == NULL)
        return CAIRN_OK;
    o = meta ? cJSON_Duplicate(meta, 1) : cJSON_Parse(base ? base : "{}");
    if (o == NULL)
        return cairn__api_fail(c, CAIRN_ENOMEM, "out of memory");
    if (tags != NULL) {
        cJSON_DeleteItemFromObjectCaseSensitive(o, "tags");
        cJSON_AddItemToObject(o, "tags", cJSON_Duplicate(tags, 1));
    }
    *out = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return *out ? CAIRN_OK : cairn__api_fail(c, CAIRN_ENOMEM, "out of memory");
}

/* ---- add ------------------------------------------------------------------------- */

static const api_param add_params[] = {
    {"content", API_STRING, 1, 0, 0, NULL,
     "What to remember: a fact, a decision, a preference (UTF-8, up to 1 MiB). The same "
     "content twice in a namespace is stored once."},
    A_NAMESPACE,
    {"category", API_STRING, 0, 0, 64, NULL,
     "A short class such as fact, decision, preference, lesson (default fact)."},
    {"importance", API_NUMBER, 0, 0, 1, NULL,
     "0 to 1 (default 0.5): how much it matters; it decays with a 30-day half-life since the "
     "last access."},
    {"tags", API_STRINGS, 0, 0, 0, NULL, "Tags, stored in metadata.tags; recall can filter on them."},
    {"metadata", API_OBJECT, 0, 0, 0, NULL, "Any JSON object kept with the memory."},
    {"expires_at", API_TIME, 0, 0, 0, NULL,
     "When it stops being recalled: ISO 8601 (2026-12-31T00:00:00Z) or ms since the epoch."},
    {NULL, 0, 0, 0, 0, NULL, NULL}};

static int mem_add(api_call *c)
{
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_mem_prune pr;
    cairn_memory *m = NULL;
    char *meta = NULL;
    int existed = 0, rc;

    o.ns = cairn__api_str(c, "namespace", NULL);
    o.category = cairn__api_str(c, "category", NULL);
    o.importance = cairn__api_num(c, "importance", -1.0);
    o.prune = &pr;
    if ((rc = cairn__api_time(c, "expires_at", &o.expires_at)) != CAIRN_OK ||
        (rc = metadata_text(c, NULL, &meta)) != CAIRN_OK)
        return rc;
    o.metadata = meta;
    rc = cairn_mem_store(c->s->mem, cairn__api_str(c, "content", ""), &o, &m, &existed);
    free(meta);
    if (rc != CAIRN_OK)
        return fail_mem(c, rc);
    cJSON_AddItemToObject(c->out, "memory", cairn__json_memory(m));
    cJSON_AddBoolToObject(c->out, "existed", existed);
    if (pr.pruned > 0) { /* never in silence: what the limit removed */
        cJSON *p = cJSON_AddObjectToObject(c->out, "pruned");
        cairn__json_add_int(p, "count", (int64_t)pr.pruned);
        cairn__json_add_int(p, "kept", (int64_t)pr.kept);
        cairn__json_add_int(p, "limit", (int64_t)pr.limit);
        cJSON_AddStringToObject(p, "reason", pr.reason);
        cJSON_AddStringToObject(p, "restore", "memory_restore brings a pruned memory back");
    }
    cairn_mem_free(m);
    return CAIRN_OK;
}

/* ---- recall, context, search ------------------------------------------------------ */

/* The recall options every query tool shares; lists owned by the caller
 * (free each). */
typedef struct query_lists {
    const char **ns, **cats, **tags;
} query_lists;

static void lists_free(query_lists *l)
{
    free(l->ns);
    free(l->cats);
    free(l->tags);
}

static int recall_opts(api_call *c, cairn_recall_opts *ro, query_lists *l)
{
    const char *mode = cairn__api_str(c, "mode", "hybrid");
    int rc;

    memset(l, 0, sizeof *l);
    ro->k = (size_t)cairn__api_num(c, "k", 5);
    ro->min_importance = cairn__api_num(c, "min_importance", 0);
    ro->mode = mode[0] == 'l' ? CAIRN_RECALL_LEXICAL
             : mode[0] == 's' ? CAIRN_RECALL_SEMANTIC
                              : CAIRN_RECALL_HYBRID;
    if ((rc = cairn__api_strs(c, "namespace", &l->ns, &ro->n_ns)) != CAIRN_OK ||
        (rc = cairn__api_strs(c, "categories", &l->cats, &ro->n_categories)) != CAIRN_OK ||
        (rc = cairn__api_strs(c, "tags", &l->tags, &ro->n_tags)) != CAIRN_OK ||
        (rc = cairn__api_time(c, "since", &ro->since)) != CAIRN_OK ||
        (rc = cairn__api_time(c, "until", &ro->until)) != CAIRN_OK)
        return rc;
    ro->ns = l->ns;
    ro->categories = l->cats;
    ro->tags = l->tags;
    return CAIRN_OK;
}

#define A_QUERY_FILTERS                                                                    \
    A_NAMESPACES,                                                                          \
    {"categories", API_STRINGS, 0, 0, 0, NULL, "Only memories of these categories."},     \
    {"tags", API_STRINGS, 0, 0, 0, NULL, "Only memories holding at least one of these tags."}

static const api_param recall_params[] = {
    {"query", API_STRING, 1, 0, 0, NULL,
     "What to look for, in plain words. An empty query ranks by importance, recency and "
     "access alone."},
    {"k", API_INTEGER, 0, 1, 1000, NULL, "How many memories to return, best first (default 5)."},
    A_QUERY_FILTERS,
    {"min_importance", API_NUMBER, 0, 0, 1, NULL, "Only memories stored with at least this importance."},
    {"since", API_TIME, 0, 0, 0, NULL, "Only memories created at or after this time."},
    {"until", API_TIME, 0, 0, 0, NULL, "Only memories created at or before this time."},
    {"mode", API_STRING, 0, 0, 0, "hybrid|lexical|semantic",
     "hybrid (default): BM25 and vectors fused; lexical: BM25 only; semantic: vectors only."},
    {"explain", API_BOOLEAN, 0, 0, 0, NULL, "Add every component of each score."},
    {NULL, 0, 0, 0, 0, NULL, NULL}};

static int mem_recall(api_call *c)
{
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    cairn_recall_hit *h = NULL;
    query_lists l;
    size_t n = 0;
    cJSON *arr;
    int rc, explain = cairn__api_bool(c, "explain", 0);

    if ((rc = recall_opts(c, &ro, &l)) == CAIRN_OK &&
        (rc = cairn_mem_recall(c->s->mem, cairn__api_str(c, "query", ""), &ro, &h, &n)) !=
            CAIRN_OK)
        rc = fail_mem(c, rc);
    lists_free(&l);
    if (rc != CAIRN_OK)
        return rc;
    arr = cJSON_AddArrayToObject(c->out, "memories");
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cairn__json_memory(&h[i].mem);
        cJSON_AddNumberToObject(o, "score", h[i].score);
        if (explain)
            cairn__json_explain(o, &h[i]);
        cJSON_AddItemToArray(arr, o);
    }
    cairn__json_add_int(c->out, "count", (int64_t)n);
    cairn_recall_free(h, n);
    return CAIRN_OK;
}

static const api_param context_params[] = {
    {"query", API_STRING, 1, 0, 0, NULL, "What the prompt is about."},
    {"format", API_STRING, 0, 0, 0, "bullets|prose|xml|json",
     "bullets (default): \"Relevant memories:\" and one line each; prose; xml; json."},
    {"max_tokens", API_INTEGER, 0, 0, 1000000000, NULL,
     "Budget for the whole block (characters / 4); 0 or absent: no limit."},
    {"k", API_INTEGER, 0, 1, 1000, NULL, "At most this many memories (default 5)."},
    A_QUERY_FILTERS,
    {NULL, 0, 0, 0, 0, NULL, NULL}};

static int mem_context(api_call *c)
{
    cairn_context_opts o = CAIRN_CONTEXT_OPTS_INIT;
    const char *f = cairn__api_str(c, "format", "bullets");
    query_lists l;
    size_t included = 0;
    char *text = NULL;
    int rc;

    o.format = f[0] == 'p' ? CAIRN_CONTEXT_PROSE
             : f[0] == 'x' ? CAIRN_CONTEXT_XML
             : f[0] == 'j' ? CAIRN_CONTEXT_JSON
                           : CAIRN_CONTEXT_BULLETS;
    o.max_tokens = (size_t)cairn__api_num(c, "max_tokens", 0);
    if ((rc = recall_opts(c, &o.recall, &l)) == CAIRN_OK &&
        (rc = cairn_mem_context(c->s->mem, cairn__api_str(c, "query", ""), &o, &text,
                                &included)) != CAIRN_OK)
        rc = fail_mem(c, rc);
    lists_free(&l);
    if (rc != CAIRN_OK)
        return rc;
    cJSON_AddStringToObject(c->out, "context", text);
    cairn__json_add_int(c->out, "included", (int64_t)included);
    cairn__json_add_int(c->out, "tokens", (int64_t)cairn_token_estimate(text, strlen(text)));
    free(text);
    return CAIRN_OK;
}

static const api_param search_params[] = {
    {"query", API_STRING, 1, 0, 500, NULL, "What to look for: 1-500 bytes of text."},
    {"max_results", API_INTEGER, 0, 1, 100, NULL, "1-100 (default 10)."},
    {"mode", API_STRING, 0, 0, 0, "unified|lexical|semantic",
     "unified (default): BM25 and vectors fused; lexical; semantic (fails without vectors)."},
    A_NAMESPACES,
    {NULL, 0, 0, 0, 0, NULL, NULL}};

/* The relevance-alone handle of memory_search, opened at its first call. */
static int search_handle(api_call *c, cairn_mem **out)
{
    cairn_session *s = c->s;
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    int rc;

    if (s->search == NULL) {
        mo.w_relevance = 1.0;
        if ((rc = cairn_mem_open(s->db, &mo, &s->search)) != CAIRN_OK)
            return cairn__api_fail_msg(c, rc, cairn_errmsg(s->db));
        if ((rc = cairn_mem_set_embedder(s->search, s->emb.dim ? &s->emb : NULL)) != CAIRN_OK) {
            rc = cairn__api_fail_msg(c, rc, cairn_mem_errmsg(s->search));
            cairn_mem_close(s->search);
            s->search = NULL;
            return rc;
        }
    }
    *out = s->search;
    return CAIRN_OK;
}

static int mem_search(api_call *c)
{
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    const char *mode = cairn__api_str(c, "mode", "unified"), *q = cairn__api_str(c, "query", "");
    cairn_recall_hit *h = NULL;
    cairn_mem *m = NULL;
    query_lists l = {0};
    size_t n = 0;
    cJSON *arr;
    int rc;

    if (q[0] == 0)
        return cairn__api_fail(c, CAIRN_EINVAL, "query: must be 1-500 characters");
    if ((rc = search_handle(c, &m)) != CAIRN_OK)
        return rc;
    if (mode[0] == 's' && c->s->emb.dim == 0)
        return cairn__api_fail(c, CAIRN_EUNAVAIL,
                               "semantic search is not available: no embedder for the store's "
                               "vectors; use mode lexical");
    ro.k = (size_t)cairn__api_num(c, "max_results", 10);
    ro.no_access = 1; /* a search only looks */
    ro.mode = mode[0] == 'l' ? CAIRN_RECALL_LEXICAL
            : mode[0] == 's' ? CAIRN_RECALL_SEMANTIC
                             : CAIRN_RECALL_HYBRID;
    if ((rc = cairn__api_strs(c, "namespace", &l.ns, &ro.n_ns)) != CAIRN_OK)
        return rc;
    ro.ns = l.ns;
    rc = cairn_mem_recall(m, q, &ro, &h, &n);
    lists_free(&l);
    if (rc != CAIRN_OK)
        return cairn__api_fail_msg(c, rc, cairn_mem_errmsg(m));
    cJSON_AddStringToObject(c->out, "query", q);
    cJSON_AddStringToObject(c->out, "source", mode);
    arr = cJSON_AddArrayToObject(c->out, "results");
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject(), *meta = cJSON_Parse(h[i].mem.metadata);
        const char *nm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "name"));
        cJSON_AddStringToObject(o, "id", h[i].mem.id);
        cJSON_AddStringToObject(o, "name", nm ? nm : h[i].mem.id);
        cJSON_AddStringToObject(o, "source", cairn__json_source(h[i].source));
        cJSON_AddNumberToObject(o, "score", h[i].relevance);
        cJSON_AddStringToObject(o, "content", h[i].mem.content);
        cJSON_AddStringToObject(o, "namespace", h[i].mem.ns);
        cJSON_AddItemToArray(arr, o);
        cJSON_Delete(meta);
    }
    cairn__json_add_int(c->out, "count", (int64_t)n);
    cairn_recall_free(h, n);
    return CAIRN_OK;
}

/* ---- get, list ------------------------------------------------------------------- */

static const api_param get_params[] = {A_ID, {NULL, 0, 0, 0, 0, NULL, NULL}};

static int mem_get(api_call *c)
{
    cairn_memory *m = NULL;
    int rc = cairn_mem_get(c->s->mem, cairn__api_str(c, "id", ""), &m);
    if (rc != CAIRN_OK)
        return rc == CAIRN_ENOTFOUND
                   ? cairn__api_fail(c, rc, "no live memory %.64s (memory_history shows what "
                                            "became of it)",
                                     cairn__api_str(c, "id", ""))
                   : fail_mem(c, rc);
    cJSON_AddItemToObject(c->out, "memory", cairn__json_memory(m));
    cairn_mem_free(m);
    return CAIRN_OK;
}

static const api_param list_params[] = {
    {"namespace", API_STRING_OR_STRINGS, 0, 0, 0, NULL,
     "Namespace, or namespaces, to list (default: every namespace)."},
    {"category", API_STRING, 0, 0, 64, NULL, "Only memories of this category."},
    {"since", API_TIME, 0, 0, 0, NULL, "Only memories created at or after this time."},
    {"until", API_TIME, 0, 0, 0, NULL, "Only memories created at or before this time."},
    {"limit", API_INTEGER, 0, 1, 1000, NULL, "At most this many, oldest first (default 100)."},
    {"offset", API_INTEGER, 0, 0, 1e12, NULL,
     "Skip this many matches first; to page on, pass the next_offset of the last answer."},
    {NULL, 0, 0, 0, 0, NULL, NULL}};

typedef struct list_walk {
    cJSON *arr;
    const char *category;
    int64_t since, until;
    size_t limit, n;
    uint64_t offset, seen; /* matches to skip; matches met */
    int truncated;
} list_walk;

static int list_one(void *user, cairn_memory *m)
{
    list_walk *w = user;
    int keep = (w->category == NULL || strcmp(m->category, w->category) == 0) &&
               (w->since == 0 || m->created_at >= w->since) &&
               (w->until == 0 || m->created_at <= w->until);
    if (keep && w->seen++ < w->offset) {
        cairn_mem_free(m);
        return 0;
    }
    if (keep && w->n == w->limit) {
        w->truncated = 1;
        cairn_mem_free(m);
        return 1; /* one more than the limit: enough to say there are more */
    }
    if (keep) {
        cJSON_AddItemToArray(w->arr, cairn__json_memory(m));
        w->n++;
    }
    cairn_mem_free(m);
    return 0;
}

static int mem_list(api_call *c)
{
    list_walk w = {0};
    const char **ns = NULL;
    size_t n_ns = 0;
    int rc;

    w.category = cairn__api_str(c, "category", NULL);
    w.limit = (size_t)cairn__api_num(c, "limit", 100);
    w.offset = (uint64_t)cairn__api_num(c, "offset", 0);
    if ((rc = cairn__api_time(c, "since", &w.since)) != CAIRN_OK ||
        (rc = cairn__api_time(c, "until", &w.until)) != CAIRN_OK ||
        (rc = cairn__api_strs(c, "namespace", &ns, &n_ns)) != CAIRN_OK)
        return rc;
    w.arr = cJSON_AddArrayToObject(c->out, "memories");
    rc = cairn_mem_each(c->s->mem, ns, n_ns, list_one, &w);
    free(ns);
    if (rc != CAIRN_OK && rc != 1)
        return fail_mem(c, rc);
    cairn__json_add_int(c->out, "count", (int64_t)w.n);
    cJSON_AddBoolToObject(c->out, "truncated", w.truncated);
    if (w.truncated)
        cairn__json_add_int(c->out, "next_offset", (int64_t)(w.offset + w.n));
    else
        cJSON_AddNullToObject(c->out, "next_offset");
    return CAIRN_OK;
}

/* ---- update, remove, restore ------------------------------------------------------- */

static const api_param update_params[] = {
    A_ID,
    {"category", API_STRING, 0, 0, 64, NULL, "New category."},
    {"importance", API_NUMBER, 0, 0, 1, NULL, "New importance, 0 to 1."},
    {"tags", API_STRINGS, 0, 0, 0, NULL, "New tags (replace metadata.tags)."},
    {"metadata", API_OBJECT, 0, 0, 0, NULL, "New metadata (replaces the object)."},
    {"expires_at", API_TIME, 0, 0, 0, NULL, "New expiry time; \"never\" removes it."},
    {NULL, 0, 0, 0, 0, NULL, NULL}};

static int mem_update(api_call *c)
{
    cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;
    const char *id = cairn__api_str(c, "id", "");
    const char *exp = cairn__api_str(c, "expires_at", NULL);
    cairn_memory *m = NULL;
    char *meta = NULL;
    int rc = CAIRN_OK;

    if (exp != NULL && strcmp(exp, "never") == 0) {
        u.set_expires = 1;
    } else if (cairn__api_arg(c, "expires_at") != NULL) {
        u.set_expires = 1;
        if ((rc = cairn__api_time(c, "expires_at", &u.expires_at)) != CAIRN_OK)
            return rc;
    }
    /* tags alone change: the memory's own metadata is the base. An expired
     * memory (get does not return it) gets its new expiry first, so that
     * it can be read back; then the rest is one more update. */
    if (cairn__api_arg(c, "tags") != NULL && cairn__api_arg(c, "metadata") == NULL &&
        (rc = cairn_mem_get(c->s->mem, id, &m)) == CAIRN_ENOTFOUND && u.set_expires) {
        cairn_mem_update_opts e = CAIRN_MEM_UPDATE_OPTS_INIT;
        e.set_expires = 1;
        e.expires_at = u.expires_at;
        if ((rc = cairn_mem_update(c->s->mem, id, &e)) == CAIRN_OK)
            rc = cairn_mem_get(c->s->mem, id, &m);
    }
    if (rc != CAIRN_OK)
        return rc == CAIRN_ENOTFOUND ? cairn__api_fail(c, rc, "no live memory %.64s", id)
                                     : fail_mem(c, rc);
    u.importance = cairn__api_num(c, "importance", -1.0);
    u.category = cairn__api_str(c, "category", NULL);
    rc = metadata_text(c, m ? m->metadata : NULL, &meta);
    cairn_mem_free(m);
    m = NULL;
    if (rc != CAIRN_OK)
        return rc;
    u.metadata = meta;
    rc = cairn_mem_update(c->s->mem, id, &u);
    free(meta);
    if (rc != CAIRN_OK)
        return rc == CAIRN_ENOTFOUND ? cairn__api_fail(c, rc, "no live memory %.64s", id)
                                     : fail_mem(c, rc);
    cJSON_AddStringToObject(c->out, "id", id);
    rc = cairn_mem_get(c->s->mem, id, &m);
    if (rc == CAIRN_ENOTFOUND) { /* updated, and expired by this update: say so */
        cJSON_AddNullToObject(c->out, "memory");
        cJSON_AddStringToObject(c->out, "note",
                                "expired: recall and get no longer return it; memory_update "
                                "with expires_at \"never\" or a later time brings it back");
        return CAIRN_OK;
    }
    if (rc != CAIRN_OK)
        return fail_mem(c, rc);
    cJSON_AddItemToObject(c->out, "memory", cairn__json_memory(m));
    cairn_mem_free(m);
    return CAIRN_OK;
}

static const api_param remove_params[] = {
    A_ID,
    {"reason", API_STRING, 0, 0, 256, NULL, "Why, kept in the log (default \"removed\")."},
    {NULL, 0, 0, 0, 0, NULL, NULL}};

static int mem_remove(api_call *c)
{
    const char *id = cairn__api_str(c, "id", "");
    int rc = cairn_mem_delete(c->s->mem, id, cairn__api_str(c, "reason", NULL));
    if (rc != CAIRN_OK)
        return rc == CAIRN_ENOTFOUND ? cairn__api_fail(c, rc, "no live memory %.64s", id)
                                     : fail_mem(c, rc);
    cJSON_AddStringToObject(c->out, "removed", id);
    cJSON_AddStringToObject(c->out, "restore", "memory_restore brings it back");
    return CAIRN_OK;
}

static int mem_restore(api_call *c)
{
    cairn_memory *m = NULL;
    int rc = cairn_mem_restore(c->s->mem, cairn__api_str(c, "id", ""), &m);
    if (rc != CAIRN_OK)
        return fail_mem(c, rc);
    cJSON_AddItemToObject(c->out, "memory", cairn__json_memory(m));
    cairn_mem_free(m);
    return CAIRN_OK;
}

/* ---- forget, stats, history -------------------------------------------------------- */

static const api_param forget_params[] = {
    {"mode", API_STRING, 0, 0, 0, "gentle|normal|aggressive",
     "gentle: expired and too old; normal (default): also decayed importance below 0.01; "
     "aggressive: also the bottom 10% of the rest."},
    {"max_age_days", API_NUMBER, 0, 0, 36500, NULL, "Older than this is pruned (default 90)."},
    {"min_importance", API_NUMBER, 0, 0, 1, NULL, "Decayed importance below this is pruned."},
    {"dry_run", API_BOOLEAN, 0, 0, 0, NULL, "Count what would be pruned; change nothing."},
    A_NAMESPACES,
    {NULL, 0, 0, 0, 0, NULL, NULL}};

static int mem_forget(api_call *c)
{
    cairn_forget_opts o = CAIRN_FORGET_OPTS_INIT;
    const char *mode = cairn__api_str(c, "mode", "normal");
    const char **ns = NULL;
    uint64_t pruned = 0, kept = 0;
    int rc;

    o.mode = mode[0] == 'g' ? CAIRN_FORGET_GENTLE
           : mode[0] == 'a' ? CAIRN_FORGET_AGGRESSIVE
                            : CAIRN_FORGET_NORMAL;
    o.max_age_days = cairn__api_num(c, "max_age_days", 0);
    o.min_importance = cairn__api_num(c, "min_importance", 0);
    o.dry_run = cairn__api_bool(c, "dry_run", 0);
    if ((rc = cairn__api_strs(c, "namespace", &ns, &o.n_ns)) != CAIRN_OK)
        return rc;
    o.ns = ns;
    rc = cairn_mem_forget(c->s->mem, &o, &pruned, &kept);
    free(ns);
    if (rc != CAIRN_OK)
        return fail_mem(c, rc);
    cJSON_AddStringToObject(c->out, "mode", mode);
    cJSON_AddBoolToObject(c->out, "dry_run", o.dry_run);
    cairn__json_add_int(c->out, "pruned", (int64_t)pruned);
    cairn__json_add_int(c->out, "kept", (int64_t)kept);
    if (pruned > 0 && !o.dry_run)
        cJSON_AddStringToObject(c->out, "restore", "memory_restore brings a pruned memory back");
    return CAIRN_OK;
}

static const api_param no_params[] = {{NULL, 0, 0, 0, 0, NULL, NULL}};

static int mem_stats(api_call *c)
{
    cairn_mem_stats st;
    char ename[CAIRN_EMBEDDER_NAME_MAX + 1];
    uint32_t dim = 0;
    uint64_t vectors = 0;
    cJSON *by, *v;
    int rc = cairn_mem_stats_get(c->s->mem, &st);

    if (rc != CAIRN_OK)
        return fail_mem(c, rc);
    cairn__json_add_int(c->out, "total", (int64_t)st.total);
    by = cJSON_AddObjectToObject(c->out, "byCategory");
    for (size_t i = 0; i < st.n_categories; i++)
        cairn__json_add_int(by, st.by_category[i].name, (int64_t)st.by_category[i].count);
    cJSON_AddNumberToObject(c->out, "avgImportance", st.avg_importance);
    cairn__json_add_int(c->out, "oldest", st.oldest);
    cairn__json_add_int(c->out, "newest", st.newest);
    cairn__json_add_int(c->out, "deleted", (int64_t)st.deleted);
    cairn__json_add_int(c->out, "namespaces", (int64_t)st.namespaces);
    cairn_mem_stats_free(&st);
    cairn_mem_vectors(c->s->mem, ename, &dim, &vectors);
    v = cJSON_AddObjectToObject(c->out, "vectors");
    cairn__json_add_int(v, "count", (int64_t)vectors);
    if (dim != 0)
        cJSON_AddStringToObject(v, "embedder", ename);
    else
        cJSON_AddNullToObject(v, "embedder");
    cairn__json_add_int(v, "dimensions", dim);
    return CAIRN_OK;
}

static const api_param history_params[] = {
    {"id", API_STRING, 1, 0, 64, NULL, "The memory's id (live or not)."},
    {NULL, 0, 0, 0, 0, NULL, NULL}};

static int mem_history(api_call *c)
{
    const char *id = cairn__api_str(c, "id", "");
    char *text = NULL;
    cJSON *arr;
    int rc = cairn_mem_history(c->s->db, id, &text);

    if (rc == CAIRN_ENOTFOUND)
        return cairn__api_fail(c, rc, "the log holds no record of %.64s", id);
    if (rc != CAIRN_OK)
        return cairn__api_fail_msg(c, rc, cairn_errmsg(c->s->db));
    arr = cJSON_Parse(text);
    free(text);
    if (arr == NULL)
        return cairn__api_fail(c, CAIRN_ENOMEM, "out of memory");
    cJSON_AddStringToObject(c->out, "id", id);
    cJSON_AddItemToObject(c->out, "records", arr);
    return CAIRN_OK;
}

/* ---- the table ------------------------------------------------------------------- */

const api_tool cairn__api_mem_tools[] = {
    {"memory_add", "Remember",
     "Store a memory (a fact, decision, preference or lesson) so that later recalls find it. "
     "Returns the memory with its id; the same content in the same namespace is stored once.",
     add_params, mem_add, API_IDEMPOTENT},
    {"memory_recall", "Recall",
     "Find the memories that best match a query, ranked by relevance (BM25 and, when the "
     "store has vectors, similarity), importance, recency and access. Counts as an access.",
     recall_params, mem_recall, 0},
    {"memory_context", "Context for a prompt",
     "Recall memories for a query and format them as one block to put in a prompt, within a "
     "token budget. Counts as an access.",
     context_params, mem_context, 0},
    {"memory_search", "Search",
     "Search memories by relevance alone (the best match scores 1.0); only looks: records no "
     "access.",
     search_params, mem_search, API_READ_ONLY},
    {"memory_get", "Get a memory", "One live memory by id.", get_params, mem_get, API_READ_ONLY},
    {"memory_list", "List memories",
     "The live memories of namespaces, oldest first, filtered by category and creation time.",
     list_params, mem_list, API_READ_ONLY},
    {"memory_update", "Update a memory",
     "Change a memory's category, importance, tags, metadata or expiry. Returns it as it is "
     "now.",
     update_params, mem_update, API_IDEMPOTENT},
    {"memory_remove", "Remove a memory",
     "Remove a memory from recall. Its records stay in the log: memory_restore brings it "
     "back.",
     remove_params, mem_remove, API_DESTRUCTIVE | API_IDEMPOTENT},
    {"memory_restore", "Restore a memory",
     "Bring back a memory that was removed, pruned, forgotten or merged, with its id and "
     "fields as they were.",
     get_params, mem_restore, 0},
    {"memory_forget", "Forget stale memories",
     "Prune expired, old and unimportant memories by a documented rule; says how many. Each "
     "can be brought back with memory_restore.",
     forget_params, mem_forget, API_DESTRUCTIVE},
    {"memory_stats", "Memory statistics",
     "Live memories in total and by category, average importance, oldest and newest, "
     "removed, namespaces and vectors.",
     no_params, mem_stats, API_READ_ONLY},
    {"memory_history", "History of a memory",
     "Every record of the log that made or changed a memory, oldest first (an audit).",
     history_params, mem_history, API_READ_ONLY},
    {NULL, NULL, NULL, NULL, NULL, 0}};
