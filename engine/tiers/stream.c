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
#include "alloc.h"
#include "cycles.h"
#include "tiers.h"
#include "utf8.h"

#define ROLE_MAX 64
#define ACTION_MAX 200
#define STREAM_LIMIT_MAX 100000

/* ---- entries as JSON ------------------------------------------------------- */

/* The entry a stream memory holds (memory id mid, content, metadata text
 * meta_text, namespace scope), as the design's MemoryEntry plus "scope" and
 * "memoryId"; NULL when it is no entry or memory ran out. */
static cJSON *entry_from(const char *scope, const char *mid, const char *content, size_t len,
                         const char *meta_text)
{
    static const char *const keys[] = {"cycle",     "timestamp", "role",   "action",
                                       "importance", "type",     "tags",   "issueRefs",
                                       "prRefs",    "tokenEstimate", NULL};
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
        if (keys[i] == NULL) { /* the content, last */
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
    float *vec = NULL;
    uint64_t vec_gen = 0;
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
    /* the vector first: no writer of another process waits for the embedder */
    if ((rc = cairn__mem_embed_one(m, content, &vec, &vec_gen)) != CAIRN_OK)
        goto out;
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
    so.no_limit = 1;
    so.id = mid;
    so.vector = vec != NULL && cairn__mem_embedder_is(m, vec_gen) ? vec : NULL;
    if ((rc = cairn_mem_store(m, content, &so, &mem, &existed)) != CAIRN_OK) {
        if (rc == CAIRN_EEXIST) /* the id is an entry of other content */
            rc = cairn__mem_fail(m, CAIRN_EEXIST, "entry %.128s is in the stream with other content", eid);
        goto out;
    }
    /* In the turn no other process wrote: the sum is the one before and
     * this entry's importance (the next read of the sum counts it too, from
     * the log, as it reads what came after its last look) */
    after = before;
    if (!existed)
        after.accumulated += importance;
    held = 0;
    if ((rc = cairn__mem_turn_release(m, CAIRN_OK)) != CAIRN_OK)
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
    free(vec);
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

/* Does the entry pass q's filters (its cycle range included)? From the
 * fast read of its metadata, else from the parsed metadata. */
static int passes_fast(const stream_meta *sm, const cairn_stream_query *q)
{
    if (q->has_cycles && (sm->cycle < q->cycle_from || sm->cycle > q->cycle_to))
        return 0;
    if (q->role != NULL && !(sm->role_len == strlen(q->role) && memcmp(sm->role, q->role, sm->role_len) == 0))
        return 0;
    if (q->min_importance > 0 && sm->importance < q->min_importance)
        return 0;
    return q->issue <= 0 || cairn__stream_has_issue(sm->issues, sm->issues_len, q->issue);
}

static int passes_json(const cJSON *meta, const cairn_stream_query *q)
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

/* Is memory x (with metadata text) an entry that passes q? */
static int entry_passes(const ment *x, const cairn_stream_query *q)
{
    stream_meta sm;
    cJSON *meta;
    int ok;
    if (cairn__stream_meta(x->metadata, &sm) == 0)
        return passes_fast(&sm, q);
    if ((meta = cairn__tier_meta(x, TIER_STREAM)) == NULL)
        return 0;
    ok = passes_json(meta, q);
    cJSON_Delete(meta);
    return ok;
}

/* Entry (memory id mid, content, metadata, scope) as JSON into b. */
static void write_entry(tbuf *b, const char *scope, const char *mid, const char *content,
                        size_t len, const char *meta_text, int with_score, double score)
{
    stream_meta sm;
    cJSON *e;
    char *t;
    if (cairn__stream_meta_light(meta_text, &sm) == 0) {
        cairn__stream_entry_write(b, &sm, mid, content, len, scope, with_score, score);
        return;
    }
    if ((e = entry_from(scope, mid, content, len, meta_text)) == NULL) {
        b->oom = 1; /* a memory that is an entry (checked before): only memory fails */
        return;
    }
    if (with_score)
        cJSON_AddNumberToObject(e, "score", score);
    if ((t = cJSON_PrintUnformatted(e)) == NULL)
        b->oom = 1;
    else
        cairn__tbuf_put(b, t, strlen(t));
    free(t);
    cJSON_Delete(e);
}

/* ---- list by cycle ----------------------------------------------------------- */

typedef struct lrow {
    int64_t cycle, created;
    int rank;        /* scope precedence: 0 the scope itself */
    uint64_t seq;
    const ment *x;
    int fast;        /* sm holds the light read of its metadata */
    stream_meta sm;
} lrow;

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

/* The live, unexpired entry of row r, or NULL. */
static const ment *row_entry(cairn_mem *m, const crow *r, int64_t now)
{
    const ment *x = cairn__mem_find_seq(m, r->seq);
    return x != NULL && x->live && !cairn__mem_expired(x, now) ? x : NULL;
}

/* The list, with m->mu held: the cycle index read over the range. */
static int list_locked(cairn_mem *m, const cairn_stream_query *q, const tier_scope *sc, size_t n_ns,
                       tbuf *b)
{
    int64_t now = cairn__mem_now(m), lo = 0, hi = 0;
    lrow *rows = NULL;
    size_t n = 0, cap = 0, take;
    int rc, in_range = 0, any = 0, filtered = q->role != NULL || q->min_importance > 0 || q->issue > 0;

    if ((rc = cairn__mem_catch_up(m)) != CAIRN_OK)
        return rc;
    if ((rc = cairn__cycles_refresh(m)) != CAIRN_OK)
        return rc == CAIRN_ENOMEM ? cairn__mem_fail(m, rc, "no memory for the cycle index") : rc;
    for (size_t k = 0; k < n_ns; k++) {
        char name[CAIRN_SCOPE_MAX + 16];
        const crow *cr;
        size_t nr, i = 0, j;
        long nsi;
        cairn__tier_ns(name, sizeof name, TIER_STREAM, sc->chain[k]);
        if ((nsi = cairn__mem_ns_index(m, name, strlen(name), 0)) < 0)
            continue;
        cr = cairn__cycles_rows(m, (uint32_t)nsi, &nr);
        /* the cycles it holds, for a range that holds none */
        for (j = 0; j < nr && row_entry(m, &cr[j], now) == NULL; j++)
            ;
        if (j < nr) {
            size_t e = nr;
            while (e > j && row_entry(m, &cr[e - 1], now) == NULL)
                e--;
            if (!any || cr[j].cycle < lo)
                lo = cr[j].cycle;
            if (!any || cr[e - 1].cycle > hi)
                hi = cr[e - 1].cycle;
            any = 1;
        }
        { /* the first row of the range */
            size_t h = nr;
            while (i < h) {
                size_t mid = i + (h - i) / 2;
                if (cr[mid].cycle < q->cycle_from)
                    i = mid + 1;
                else
                    h = mid;
            }
        }
        for (; i < nr && cr[i].cycle <= q->cycle_to; i++) {
            const ment *x = row_entry(m, &cr[i], now);
            stream_meta sm;
            int fast;
            if (x == NULL)
                continue;
            in_range = 1;
            /* the cycle is the index's: the rest of the filters, read as
             * little of the metadata as they need */
            fast = filtered ? cairn__stream_meta(x->metadata, &sm) == 0
                            : cairn__stream_meta_row(&cr[i], x->metadata, &sm) == 0;
            if (fast ? filtered && !passes_fast(&sm, q) : !entry_passes(x, q))
                continue;
            if (n == cap && cairn__grow(NULL, (void **)&rows, &cap, n + 1, sizeof *rows) != CAIRN_OK) {
                free(rows);
                return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
            }
            rows[n].fast = fast;
            rows[n].sm = sm;
            rows[n].cycle = cr[i].cycle;
            rows[n].created = x->created;
            rows[n].rank = (int)k;
            rows[n].seq = x->seq;
            rows[n].x = x;
            n++;
        }
    }
    if (!in_range) {
        free(rows);
        if (any)
            return cairn__mem_fail(m, CAIRN_ENOTFOUND, "no cycle in %" PRId64 "..%" PRId64
                                   ": the stream holds cycles %" PRId64 "..%" PRId64,
                                   q->cycle_from, q->cycle_to, lo, hi);
        return cairn__mem_fail(m, CAIRN_ENOTFOUND, "no cycle in %" PRId64 "..%" PRId64
                               ": the stream of %s is empty", q->cycle_from, q->cycle_to, sc->name);
    }
    { /* one namespace gives them in order already: sort only if not */
        size_t i = 1;
        while (i < n && by_cycle(&rows[i - 1], &rows[i]) <= 0)
            i++;
        if (i < n)
            qsort(rows, n, sizeof *rows, by_cycle);
    }
    take = q->limit > 0 && q->limit < n ? q->limit : n;
    /* room for all of it at once: an entry is its metadata, its content
     * and about 80 bytes more (escapes may ask for more: it grows then) */
    {
        size_t want = 16;
        for (size_t i = 0; i < take; i++)
            want += rows[i].x->content_len + (rows[i].fast ? rows[i].sm.rest_len : 512) + 96;
        cairn__tbuf_reserve(b, want);
    }
    cairn__tbuf_put(b, "[", 1);
    for (size_t i = 0; i < take; i++) {
        const ment *x = rows[i].x;
        const char *text;
        if ((rc = cairn__mem_text(m, x, &text)) != CAIRN_OK) {
            free(rows);
            return rc;
        }
        if (i > 0)
            cairn__tbuf_put(b, ",", 1);
        if (rows[i].fast)
            cairn__stream_entry_write(b, &rows[i].sm, x->id, text, x->content_len,
                                      sc->chain[rows[i].rank], 0, 0);
        else
            write_entry(b, sc->chain[rows[i].rank], x->id, text, x->content_len, x->metadata, 0,
                        0);
    }
    cairn__tbuf_put(b, "]", 1);
    free(rows);
    return b->oom ? cairn__mem_fail(m, CAIRN_ENOMEM, "no memory") : CAIRN_OK;
}

int cairn_stream_list(cairn_mem *m, const cairn_stream_query *q, char **out_json)
{
    cairn_stream_query def = CAIRN_STREAM_QUERY_INIT;
    tier_scope sc;
    tbuf b = {NULL, 0, 0, 0};
    int rc;

    *out_json = NULL;
    if (q == NULL)
        q = &def;
    if ((rc = check_query(m, q, &sc, 1)) != CAIRN_OK)
        return rc;
    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    rc = list_locked(m, q, &sc, q->only_scope ? 1 : sc.n_chain, &b);
    pthread_mutex_unlock(&m->mu);
    if (rc != CAIRN_OK) {
        free(b.p);
        return rc;
    }
    *out_json = b.p;
    return CAIRN_OK;
}

/* ---- search -------------------------------------------------------------------- */

static int search_pred(void *user, const ment *x)
{
    return entry_passes(x, user);
}

int cairn_stream_search(cairn_mem *m, const char *query, const cairn_stream_query *q,
                        char **out_json)
{
    cairn_stream_query def = CAIRN_STREAM_QUERY_INIT;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    char nsbuf[3][CAIRN_SCOPE_MAX + 16];
    const char *nss[3];
    cairn_recall_hit *h = NULL;
    tbuf b = {NULL, 0, 0, 0};
    size_t nh = 0;
    tier_scope sc;
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
    if ((rc = cairn__mem_recall_pred(m, query ? query : "", &ro, search_pred, (void *)(uintptr_t)q,
                                     &h, &nh)) != CAIRN_OK)
        return rc;
    cairn__tbuf_put(&b, "[", 1);
    for (size_t i = 0; i < nh; i++) {
        if (i > 0)
            cairn__tbuf_put(&b, ",", 1);
        write_entry(&b, mem_scope(&h[i].mem), h[i].mem.id, h[i].mem.content,
                    strlen(h[i].mem.content), h[i].mem.metadata, 1, h[i].score);
    }
    cairn__tbuf_put(&b, "]", 1);
    cairn_recall_free(h, nh);
    if (b.oom) {
        free(b.p);
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    }
    *out_json = b.p;
    return CAIRN_OK;
}
