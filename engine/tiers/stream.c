/*
 * stream.c - the memory stream: entries by cycle and role (memoryLog,
 * recallByCycle, recallSearch of the cognitive memory design).
 *
 * An entry is a memory of "stream@SCOPE": its content is the entry's,
 * its category the entry's type, its importance the entry's 1..10 over
 * 10, its metadata {"tier": "stream", "entryId", "cycle", "role",
 * "action", "type", "importance", "tags", "issueRefs", "prRefs",
 * "tokenEstimate", "timestamp"} (format-spec/tiers.md). Its memory id is
 * derived from the entry id, so that adding an entry twice (an import run
 * again) finds the first. Entries repeat texts ("Action execution
 * failed" in many cycles): they are stored with keep_duplicate.
 *
 * Search is cairn_mem_recall over the scopes' stream namespaces with
 * metadata filters; the list by cycle walks the namespaces.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "civil.h"
#include "tiers.h"
#include "utf8.h"

#define ROLE_MAX 64
#define ACTION_MAX 200
#define STREAM_LIMIT_MAX 100000

/* ---- entries as JSON ------------------------------------------------------- */

/* The entry a stream memory holds (memory id mid, content, metadata text
 * meta_text, namespace scope), as the seed's MemoryEntry plus "scope" and
 * "memoryId"; NULL when it is no entry or memory ran out. */
static cJSON *entry_from(const char *scope, const char *mid, const char *content, size_t len,
                         const char *meta_text)
{
    static const char *const keys[] = {"cycle",      "timestamp", "role",   "action",
                                       NULL,         "importance", "type",  "tags",
                                       "issueRefs",  "prRefs",   "tokenEstimate"};
    ment probe;
    cJSON *meta, *o;
    const char *eid;
    memset(&probe, 0, sizeof probe);
    probe.metadata = (char *)(uintptr_t)meta_text;
    if ((meta = cairn__tier_meta(&probe, TIER_STREAM)) == NULL || (o = cJSON_CreateObject()) == NULL) {
        cJSON_Delete(meta);
        return NULL;
    }
    eid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "entryId"));
    cJSON_AddStringToObject(o, "id", eid ? eid : mid);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        cJSON *v;
        if (keys[i] == NULL) { /* the content, in the seed's order */
            char *c = malloc(len + 1);
            if (c != NULL) {
                memcpy(c, content, len);
                c[len] = 0;
                cJSON_AddStringToObject(o, "content", c);
                free(c);
            }
            continue;
        }
        if ((v = cJSON_DetachItemFromObjectCaseSensitive(meta, keys[i])) != NULL)
            cJSON_AddItemToObject(o, keys[i], v);
    }
    cJSON_AddStringToObject(o, "scope", scope);
    cJSON_AddStringToObject(o, "memoryId", mid);
    cJSON_Delete(meta);
    return o;
}

static cJSON *entry_json(const cairn_mem *m, const ment *x)
{
    return entry_from(cairn__tier_ns_scope(m, x), x->id, x->content, x->content_len, x->metadata);
}

/* The scope of a memory returned by the API (its namespace "stream@S"). */
static const char *mem_scope(const cairn_memory *c)
{
    const char *at = strchr(c->ns, '@');
    return at ? at + 1 : "";
}

static int64_t get_i(const cJSON *o, const char *k)
{
    return (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* An array of strings (tags) or of positive integers (refs), or absent. */
static int check_list(cairn_mem *m, const cJSON *in, const char *name, int numbers, cJSON **out)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(in, name), *e;
    cairn__err err;
    *out = NULL;
    if (a == NULL || cJSON_IsNull(a)) {
        *out = cJSON_CreateArray();
        return CAIRN_OK;
    }
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) > 256)
        return cairn__mem_fail(m, CAIRN_EQUERY, "%s: an array of at most 256 %s wanted", name,
                               numbers ? "positive integers" : "strings");
    cJSON_ArrayForEach(e, a) {
        if (numbers ? !(cJSON_IsNumber(e) && e->valuedouble >= 1 && e->valuedouble <= 9007199254740992.0 &&
                        e->valuedouble == (double)(int64_t)e->valuedouble)
                    : !(cJSON_IsString(e) && e->valuestring[0] != 0 && strlen(e->valuestring) <= 256))
            return cairn__mem_fail(m, CAIRN_EQUERY, "%s: an array of %s wanted", name,
                                   numbers ? "positive integers" : "strings of 1..256 bytes");
        if (!numbers && cairn__utf8_check(&err, name, e->valuestring, strlen(e->valuestring)) != CAIRN_OK)
            return cairn__mem_fail(m, CAIRN_EQUERY, "%s", err.msg);
    }
    *out = cJSON_Duplicate(a, 1);
    return CAIRN_OK;
}

/* ---- add ------------------------------------------------------------------------ */

int cairn_stream_add(cairn_mem *m, const char *scope, const char *entry_json_text, char **out_json)
{
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    tier_scope sc;
    tier_reflect_state before, after;
    tier_settings set;
    cJSON *in = NULL, *meta = NULL, *tags = NULL, *issues = NULL, *prs = NULL, *o, *r;
    cairn_memory *mem = NULL;
    const char *role, *content, *action, *type, *eid, *ts;
    char ns[CAIRN_SCOPE_MAX + 16], uuid[40], mid[CAIRN_MEM_ID_MAX + 1], action_buf[ACTION_MAX + 8];
    char *meta_text = NULL;
    int64_t cycle, importance, tokens, ts_ms = 0;
    int rc, existed = 0, due_now, held = 0;

    if (out_json != NULL)
        *out_json = NULL;
    if ((rc = cairn__tier_scope(m, scope, &sc)) != CAIRN_OK)
        return rc;
    if (entry_json_text == NULL || (in = cJSON_Parse(entry_json_text)) == NULL || !cJSON_IsObject(in)) {
        cJSON_Delete(in);
        return cairn__mem_fail(m, CAIRN_EQUERY, "the entry is not a JSON object");
    }
    if ((rc = cairn__tier_int(m, in, "cycle", 0, 9007199254740992ll, 0, 0, &cycle)) != CAIRN_OK ||
        (rc = cairn__tier_str(m, in, "role", ROLE_MAX, NULL, 1, &role)) != CAIRN_OK ||
        (rc = cairn__tier_str(m, in, "content", 1u << 20, NULL, 1, &content)) != CAIRN_OK ||
        (rc = cairn__tier_str(m, in, "action", ACTION_MAX * 4, NULL, 0, &action)) != CAIRN_OK ||
        (rc = cairn__tier_str(m, in, "type", 16, "action", 0, &type)) != CAIRN_OK ||
        (rc = cairn__tier_int(m, in, "importance", 1, 10, 5, 1, &importance)) != CAIRN_OK ||
        (rc = cairn__tier_int(m, in, "tokenEstimate", 0, 1ll << 40,
                              (int64_t)cairn_tokens_estimate(content, strlen(content)), 1, &tokens)) != CAIRN_OK ||
        (rc = cairn__tier_str(m, in, "id", 128, NULL, 0, &eid)) != CAIRN_OK ||
        (rc = cairn__tier_str(m, in, "timestamp", 64, NULL, 0, &ts)) != CAIRN_OK ||
        (rc = check_list(m, in, "tags", 0, &tags)) != CAIRN_OK ||
        (rc = check_list(m, in, "issueRefs", 1, &issues)) != CAIRN_OK ||
        (rc = check_list(m, in, "prRefs", 1, &prs)) != CAIRN_OK)
        goto out;
    if (strcmp(type, "action") != 0 && strcmp(type, "observation") != 0 && strcmp(type, "decision") != 0) {
        rc = cairn__mem_fail(m, CAIRN_EQUERY, "type: action, observation or decision, not '%.40s'", type);
        goto out;
    }
    if (ts != NULL && cairn__tier_parse_time(ts, &ts_ms) != 0) {
        rc = cairn__mem_fail(m, CAIRN_EQUERY, "timestamp: ISO 8601 UTC wanted, not '%.40s'", ts);
        goto out;
    }
    if (action == NULL) { /* the content's first line, cut at a character */
        size_t n = strcspn(content, "\r\n");
        if (n > ACTION_MAX) {
            n = ACTION_MAX;
            while (n > 0 && ((unsigned char)content[n] & 0xC0) == 0x80)
                n--;
        }
        memcpy(action_buf, content, n);
        action_buf[n] = 0;
        action = n > 0 ? action_buf : content;
    }
    if (eid == NULL) {
        cairn__tier_uuid(uuid);
        eid = uuid;
    }
    cairn__tier_ns(ns, sizeof ns, TIER_STREAM, sc.name);
    cairn__tier_mem_id(ns, eid, mid);
    meta = cJSON_CreateObject();
    cJSON_AddStringToObject(meta, "tier", TIER_STREAM);
    cJSON_AddStringToObject(meta, "entryId", eid);
    cJSON_AddNumberToObject(meta, "cycle", (double)cycle);
    if (ts != NULL) {
        cJSON_AddStringToObject(meta, "timestamp", ts);
    } else {
        char now[40];
        cairn__iso_time(cairn__mem_wall_ms(), now, sizeof now);
        cJSON_AddStringToObject(meta, "timestamp", now);
    }
    cJSON_AddStringToObject(meta, "role", role);
    cJSON_AddStringToObject(meta, "action", action);
    cJSON_AddNumberToObject(meta, "importance", (double)importance);
    cJSON_AddStringToObject(meta, "type", type);
    cJSON_AddItemToObject(meta, "tags", tags);
    cJSON_AddItemToObject(meta, "issueRefs", issues);
    cJSON_AddItemToObject(meta, "prRefs", prs);
    tags = issues = prs = NULL;
    cJSON_AddNumberToObject(meta, "tokenEstimate", (double)tokens);
    if ((meta_text = cJSON_PrintUnformatted(meta)) == NULL) {
        rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        goto out;
    }
    /* The sum before, to tell the entry that reaches the threshold: in one
     * turn with the store, so that of many processes one tells it. */
    if ((rc = cairn__mem_turn_hold(m)) != CAIRN_OK)
        goto out;
    held = 1;
    if ((rc = cairn__tier_reflect_state(m, sc.name, &before)) != CAIRN_OK)
        goto out;
    so.ns = ns;
    so.category = type;
    so.importance = (double)importance / 10.0;
    so.metadata = meta_text;
    so.keep_duplicate = 1;
    so.id = mid;
    if ((rc = cairn_mem_store(m, content, &so, &mem, &existed)) != CAIRN_OK) {
        if (rc == CAIRN_EEXIST) /* the id is an entry of other content */
            rc = cairn__mem_fail(m, CAIRN_EEXIST, "entry %.128s is in the stream with other content", eid);
        goto out;
    }
    rc = cairn__tier_reflect_state(m, sc.name, &after);
    held = 0;
    if ((rc = cairn__mem_turn_release(m, rc)) != CAIRN_OK)
        goto out;
    set = cairn__tier_settings(m);
    due_now = !existed && before.accumulated < set.reflect && after.accumulated >= set.reflect;
    if (due_now) {
        cairn_mem_event ev;
        memset(&ev, 0, sizeof ev);
        ev.kind = CAIRN_EVENT_REFLECTION_DUE;
        ev.memory = mem;
        ev.kept = (uint64_t)after.accumulated;
        ev.pruned = (uint64_t)set.reflect;
        ev.reason = "reflectionDue";
        cairn__mem_emit(m, &ev);
    }
    if (out_json != NULL) {
        cJSON *e = entry_from(sc.name, mem->id, mem->content, strlen(mem->content), mem->metadata);
        o = cJSON_CreateObject();
        if (e == NULL || o == NULL) {
            cJSON_Delete(e);
            cJSON_Delete(o);
            rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
            goto out;
        }
        cJSON_AddItemToObject(o, "entry", e);
        cJSON_AddBoolToObject(o, "existed", existed);
        r = cJSON_AddObjectToObject(o, "reflection");
        cJSON_AddNumberToObject(r, "importanceSinceReflection", (double)after.accumulated);
        cJSON_AddNumberToObject(r, "threshold", (double)set.reflect);
        cJSON_AddBoolToObject(r, "due", after.accumulated >= set.reflect);
        rc = cairn__tier_emit(m, o, out_json);
    }
out:
    if (held)
        rc = cairn__mem_turn_release(m, rc);
    cairn_mem_free(mem);
    free(meta_text);
    cJSON_Delete(meta);
    cJSON_Delete(tags);
    cJSON_Delete(issues);
    cJSON_Delete(prs);
    cJSON_Delete(in);
    return rc;
}

/* ---- filters ---------------------------------------------------------------- */

static int check_query(cairn_mem *m, const cairn_stream_query *q, tier_scope *sc, int need_cycles)
{
    int rc = cairn__opts_version(m, "cairn_stream_query", q->version, CAIRN_STREAM_QUERY_VERSION);
    if (rc != CAIRN_OK)
        return rc;
    if ((rc = cairn__tier_scope(m, q->scope, sc)) != CAIRN_OK)
        return rc;
    if (need_cycles && !q->has_cycles)
        return cairn__mem_fail(m, CAIRN_EQUERY, "a cycle range is required");
    if (q->has_cycles && (q->cycle_from < 0 || q->cycle_to < 0))
        return cairn__mem_fail(m, CAIRN_EQUERY, "cycles are 0 or more, not %" PRId64 "..%" PRId64,
                               q->cycle_from, q->cycle_to);
    if (q->has_cycles && q->cycle_from > q->cycle_to)
        return cairn__mem_fail(m, CAIRN_EQUERY, "cycle range %" PRId64 "..%" PRId64 " is inverted",
                               q->cycle_from, q->cycle_to);
    if (q->min_importance < 0 || q->min_importance > 10)
        return cairn__mem_fail(m, CAIRN_EQUERY, "minImportance: 1..10, not %d", q->min_importance);
    if (q->issue < 0)
        return cairn__mem_fail(m, CAIRN_EQUERY, "issue: a positive number, not %" PRId64, q->issue);
    if (q->limit > STREAM_LIMIT_MAX)
        return cairn__mem_fail(m, CAIRN_EQUERY, "limit: 1..%d", STREAM_LIMIT_MAX);
    if (q->role != NULL && (q->role[0] == 0 || strlen(q->role) > ROLE_MAX))
        return cairn__mem_fail(m, CAIRN_EQUERY, "role: 1..%d bytes", ROLE_MAX);
    return CAIRN_OK;
}

/* Does the entry's metadata pass q (its cycle range included)? */
static int entry_passes(const cJSON *meta, const cairn_stream_query *q)
{
    int64_t c = get_i(meta, "cycle");
    if (q->has_cycles && (c < q->cycle_from || c > q->cycle_to))
        return 0;
    if (q->role != NULL) {
        const char *r = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "role"));
        if (r == NULL || strcmp(r, q->role) != 0)
            return 0;
    }
    if (q->min_importance > 0 && get_i(meta, "importance") < q->min_importance)
        return 0;
    if (q->issue > 0) {
        const cJSON *e, *a = cJSON_GetObjectItemCaseSensitive(meta, "issueRefs");
        int found = 0;
        cJSON_ArrayForEach(e, a)
            found |= cJSON_IsNumber(e) && e->valuedouble == (double)q->issue;
        if (!found)
            return 0;
    }
    return 1;
}

/* ---- list by cycle ----------------------------------------------------------- */

typedef struct lrow {
    int64_t cycle, created;
    int rank;        /* scope precedence: 0 the scope itself */
    uint64_t seq;
    cJSON *entry;
} lrow;

typedef struct list_scan {
    const cairn_stream_query *q;
    const tier_scope *sc;
    lrow *rows;
    size_t n, cap;
    int64_t lo, hi;  /* the cycles the scopes' stream holds */
    int any, in_range;
} list_scan;

static int scope_rank(const tier_scope *sc, const char *scope)
{
    for (size_t i = 0; i < sc->n_chain; i++)
        if (strcmp(sc->chain[i], scope) == 0)
            return (int)i;
    return (int)sc->n_chain;
}

static int on_list(void *user, cairn_mem *m, const ment *x)
{
    list_scan *s = user;
    cJSON *meta = cairn__tier_meta(x, TIER_STREAM);
    int64_t c;
    if (meta == NULL)
        return 0;
    c = get_i(meta, "cycle");
    if (!s->any || c < s->lo)
        s->lo = c;
    if (!s->any || c > s->hi)
        s->hi = c;
    s->any = 1;
    if (c >= s->q->cycle_from && c <= s->q->cycle_to)
        s->in_range = 1;
    if (entry_passes(meta, s->q)) {
        lrow *r;
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 64;
            lrow *p = realloc(s->rows, cap * sizeof *p);
            if (p == NULL) {
                cJSON_Delete(meta);
                return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
            }
            s->rows = p;
            s->cap = cap;
        }
        r = &s->rows[s->n];
        r->cycle = c;
        r->created = x->created;
        r->seq = x->seq;
        r->rank = scope_rank(s->sc, cairn__tier_ns_scope(m, x));
        if ((r->entry = entry_json(m, x)) == NULL) {
            cJSON_Delete(meta);
            return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        }
        s->n++;
    }
    cJSON_Delete(meta);
    return 0;
}

static int by_cycle(const void *a, const void *b)
{
    const lrow *x = a, *y = b;
    if (x->cycle != y->cycle)
        return x->cycle < y->cycle ? -1 : 1;
    if (x->created != y->created)
        return x->created < y->created ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int cairn_stream_list(cairn_mem *m, const cairn_stream_query *q, char **out_json)
{
    cairn_stream_query def = CAIRN_STREAM_QUERY_INIT;
    tier_scope sc;
    list_scan s;
    char nsbuf[3][CAIRN_SCOPE_MAX + 16];
    const char *nss[3];
    size_t n_ns, take;
    cJSON *arr;
    int rc;

    *out_json = NULL;
    if (q == NULL)
        q = &def;
    if ((rc = check_query(m, q, &sc, 1)) != CAIRN_OK)
        return rc;
    n_ns = q->only_scope ? 1 : sc.n_chain;
    for (size_t i = 0; i < n_ns; i++) {
        cairn__tier_ns(nsbuf[i], sizeof nsbuf[i], TIER_STREAM, sc.chain[i]);
        nss[i] = nsbuf[i];
    }
    memset(&s, 0, sizeof s);
    s.q = q;
    s.sc = &sc;
    rc = cairn__mem_scan(m, nss, n_ns, 0, on_list, &s);
    if (rc == CAIRN_OK && !s.in_range) {
        if (s.any)
            rc = cairn__mem_fail(m, CAIRN_ENOTFOUND, "no cycle in %" PRId64 "..%" PRId64
                                 ": the stream holds cycles %" PRId64 "..%" PRId64,
                                 q->cycle_from, q->cycle_to, s.lo, s.hi);
        else
            rc = cairn__mem_fail(m, CAIRN_ENOTFOUND, "no cycle in %" PRId64 "..%" PRId64
                                 ": the stream of %s is empty", q->cycle_from, q->cycle_to, sc.name);
    }
    if (rc == CAIRN_OK) {
        if (s.n > 1)
            qsort(s.rows, s.n, sizeof *s.rows, by_cycle);
        take = q->limit > 0 && q->limit < s.n ? q->limit : s.n;
        if ((arr = cJSON_CreateArray()) == NULL)
            rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        for (size_t i = 0; rc == CAIRN_OK && i < take; i++) {
            cJSON_AddItemToArray(arr, s.rows[i].entry);
            s.rows[i].entry = NULL;
        }
        if (rc == CAIRN_OK)
            rc = cairn__tier_emit(m, arr, out_json);
    }
    for (size_t i = 0; i < s.n; i++)
        cJSON_Delete(s.rows[i].entry);
    free(s.rows);
    return rc;
}

/* ---- search -------------------------------------------------------------------- */

int cairn_stream_search(cairn_mem *m, const char *query, const cairn_stream_query *q,
                        char **out_json)
{
    cairn_stream_query def = CAIRN_STREAM_QUERY_INIT;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    cairn_where w[6];
    char nsbuf[3][CAIRN_SCOPE_MAX + 16], from[24], to[24], issue[24], imp[16];
    const char *nss[3];
    cairn_recall_hit *h = NULL;
    char *role_json = NULL;
    size_t nh = 0, nw = 0;
    tier_scope sc;
    cJSON *arr;
    int rc;

    *out_json = NULL;
    if (q == NULL)
        q = &def;
    if ((rc = check_query(m, q, &sc, 0)) != CAIRN_OK)
        return rc;
    ro.n_ns = q->only_scope ? 1 : sc.n_chain;
    for (size_t i = 0; i < ro.n_ns; i++) {
        cairn__tier_ns(nsbuf[i], sizeof nsbuf[i], TIER_STREAM, sc.chain[i]);
        nss[i] = nsbuf[i];
    }
    ro.ns = nss;
    ro.k = q->limit ? q->limit : 5;
    w[nw++] = (cairn_where){"tier", CAIRN_WHERE_EQ, TIER_STREAM};
    if (q->has_cycles) {
        snprintf(from, sizeof from, "%" PRId64, q->cycle_from);
        snprintf(to, sizeof to, "%" PRId64, q->cycle_to);
        w[nw++] = (cairn_where){"cycle", CAIRN_WHERE_GE, from};
        w[nw++] = (cairn_where){"cycle", CAIRN_WHERE_LE, to};
    }
    if (q->role != NULL) { /* as a JSON string: "7" is a role, not a number */
        cJSON *js = cJSON_CreateString(q->role);
        role_json = js ? cJSON_PrintUnformatted(js) : NULL;
        cJSON_Delete(js);
        if (role_json == NULL)
            return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        w[nw++] = (cairn_where){"role", CAIRN_WHERE_EQ, role_json};
    }
    if (q->issue > 0) {
        snprintf(issue, sizeof issue, "%" PRId64, q->issue);
        w[nw++] = (cairn_where){"issueRefs", CAIRN_WHERE_EQ, issue};
    }
    if (q->min_importance > 0) {
        snprintf(imp, sizeof imp, "%d", q->min_importance);
        w[nw++] = (cairn_where){"importance", CAIRN_WHERE_GE, imp};
    }
    ro.where = w;
    ro.n_where = nw;
    rc = cairn_mem_recall(m, query ? query : "", &ro, &h, &nh);
    free(role_json);
    if (rc != CAIRN_OK)
        return rc;
    arr = cJSON_CreateArray();
    for (size_t i = 0; arr != NULL && i < nh; i++) {
        cJSON *e = entry_from(mem_scope(&h[i].mem), h[i].mem.id, h[i].mem.content,
                              strlen(h[i].mem.content), h[i].mem.metadata);
        if (e != NULL) {
            cJSON_AddNumberToObject(e, "score", h[i].score);
            cJSON_AddItemToArray(arr, e);
        }
    }
    cairn_recall_free(h, nh);
    return cairn__tier_emit(m, arr, out_json);
}
