/*
 * archival.c - archival memory: documents kept for later search
 * (archivalInsert, archivalSearch of the cognitive memory design).
 *
 * An entry is a memory of "archival@SCOPE" with metadata {"tier":
 * "archival", "entryId", "type", "source", "date", "dateMs", "tags"}
 * (format-spec/tiers.md). An insert that does not wait stores the entry
 * at once without a vector (it is found by its words from then on) and
 * queues its embedding on the handle's archival thread, which stores a
 * copy with the vector and then removes the first (reason
 * "archival.indexed"); the copy's memory id is derived from the entry id
 * too, so that an entry is added once whatever state it is in. A waiting
 * insert embeds first and stores once. Entries left without a vector
 * (the handle closed first, or had no embedder) are embedded by
 * cairn_archival_index.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memvec.h"
#include "tiers.h"
#include "utf8.h"

#define TYPE_MAX 64
#define QUEUE_MAX 100000

/* ---- the embedding thread ------------------------------------------------------ */

struct tier_archiver {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* work queued, or stop */
    pthread_cond_t idle;  /* the queue emptied */
    char (*ids)[CAIRN_MEM_ID_MAX + 1];
    size_t head, n, cap;
    int busy, stop;
    int err;              /* the first failure, CAIRN_OK if none */
    char errmsg[CAIRN_ERRMSG_MAX];
    uint64_t done;
};

static void indexed_id(const char *ns, const char *eid, char *out)
{
    char key[160];
    snprintf(key, sizeof key, "%s#indexed", eid);
    cairn__tier_mem_id(ns, key, out);
}

/* Store a copy of the entry with its vector, then remove the entry. */
static int index_one(cairn_mem *m, const char *id)
{
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_memory *mem = NULL;
    cJSON *meta;
    const char *eid;
    char nid[CAIRN_MEM_ID_MAX + 1];
    float *vec = NULL;
    uint64_t gen = 0;
    int rc = cairn_mem_get(m, id, &mem);
    if (rc == CAIRN_ENOTFOUND)
        return CAIRN_OK; /* removed meanwhile */
    if (rc != CAIRN_OK)
        return rc;
    meta = cJSON_Parse(mem->metadata);
    eid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "entryId"));
    if (eid == NULL) {
        cJSON_Delete(meta);
        cairn_mem_free(mem);
        return CAIRN_OK; /* not an entry */
    }
    indexed_id(mem->ns, eid, nid);
    if (strcmp(nid, id) == 0) { /* the copy with its vector already */
        cJSON_Delete(meta);
        cairn_mem_free(mem);
        return CAIRN_OK;
    }
    so.ns = mem->ns;
    so.category = mem->category;
    so.importance = mem->importance;
    so.metadata = mem->metadata;
    so.keep_duplicate = 1;
    so.no_limit = 1;
    so.id = nid;
    /* the vector first: no writer of another process waits for the embedder */
    if ((rc = cairn__mem_embed_one(m, mem->content, &vec, &gen)) == CAIRN_OK &&
        (rc = cairn__mem_turn_hold(m)) == CAIRN_OK) {
        so.vector = vec != NULL && cairn__mem_embedder_is(m, gen) ? vec : NULL;
        rc = cairn_mem_store(m, mem->content, &so, NULL, NULL);
        if (rc == CAIRN_OK)
            rc = cairn_mem_delete(m, id, "archival.indexed");
        rc = cairn__mem_turn_release(m, rc);
    }
    free(vec);
    cJSON_Delete(meta);
    cairn_mem_free(mem);
    return rc;
}

static void *archiver_main(void *arg)
{
    cairn_mem *m = arg;
    struct tier_archiver *a = m->archiver;
    char id[CAIRN_MEM_ID_MAX + 1];
    pthread_mutex_lock(&a->mu);
    for (;;) {
        int rc;
        while (a->n == 0 && !a->stop)
            pthread_cond_wait(&a->cv, &a->mu);
        if (a->n == 0)
            break; /* stopped with nothing left */
        memcpy(id, a->ids[a->head], sizeof id);
        a->head = (a->head + 1) % a->cap;
        a->n--;
        a->busy = 1;
        pthread_mutex_unlock(&a->mu);
        rc = index_one(m, id);
        pthread_mutex_lock(&a->mu);
        a->busy = 0;
        a->done++;
        if (rc != CAIRN_OK && a->err == CAIRN_OK) {
            a->err = rc;
            snprintf(a->errmsg, sizeof a->errmsg, "embedding archival entry %s: %s", id,
                     cairn_mem_errmsg(m));
        }
        if (a->n == 0)
            pthread_cond_broadcast(&a->idle);
    }
    pthread_cond_broadcast(&a->idle);
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* At the handle's close: the queue is worked off, then the thread ends. */
static void archiver_close(cairn_mem *m)
{
    struct tier_archiver *a = m->archiver;
    if (a == NULL)
        return;
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->th, NULL);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    pthread_cond_destroy(&a->idle);
    free(a->ids);
    free(a);
    m->archiver = NULL;
}

/* Queue id on the thread (started on first use; tier_mu held). */
static int archiver_push(cairn_mem *m, const char *id)
{
    struct tier_archiver *a = m->archiver;
    if (a == NULL) {
        if ((a = calloc(1, sizeof *a)) == NULL)
            return CAIRN_ENOMEM;
        pthread_mutex_init(&a->mu, NULL);
        pthread_cond_init(&a->cv, NULL);
        pthread_cond_init(&a->idle, NULL);
        m->archiver = a;
        if (pthread_create(&a->th, NULL, archiver_main, m) != 0) {
            pthread_mutex_destroy(&a->mu);
            pthread_cond_destroy(&a->cv);
            pthread_cond_destroy(&a->idle);
            free(a);
            m->archiver = NULL;
            return CAIRN_EUNAVAIL;
        }
        m->on_close = archiver_close;
    }
    pthread_mutex_lock(&a->mu);
    if (a->n >= QUEUE_MAX) {
        pthread_mutex_unlock(&a->mu);
        return CAIRN_EFULL;
    }
    if (a->n == a->cap) { /* grow the ring, unrolled */
        size_t cap = a->cap ? a->cap * 2 : 64;
        char (*p)[CAIRN_MEM_ID_MAX + 1] = malloc(cap * sizeof *p);
        if (p == NULL) {
            pthread_mutex_unlock(&a->mu);
            return CAIRN_ENOMEM;
        }
        for (size_t i = 0; i < a->n; i++)
            memcpy(p[i], a->ids[(a->head + i) % a->cap], sizeof p[i]);
        free(a->ids);
        a->ids = p;
        a->cap = cap;
        a->head = 0;
    }
    snprintf(a->ids[(a->head + a->n) % a->cap], sizeof a->ids[0], "%s", id);
    a->n++;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return CAIRN_OK;
}

int cairn_archival_wait(cairn_mem *m)
{
    struct tier_archiver *a;
    int rc = CAIRN_OK;
    /* The thread, once started, lives until the handle closes: it is
     * waited for without tier_mu, which a tier write holding the turn may
     * need while the thread waits for that turn. */
    pthread_mutex_lock(&m->tier_mu);
    a = m->archiver;
    pthread_mutex_unlock(&m->tier_mu);
    if (a != NULL) {
        pthread_mutex_lock(&a->mu);
        while (a->n > 0 || a->busy)
            pthread_cond_wait(&a->idle, &a->mu);
        if ((rc = a->err) != CAIRN_OK)
            cairn__mem_fail(m, rc, "%s", a->errmsg);
        a->err = CAIRN_OK;
        pthread_mutex_unlock(&a->mu);
    }
    return rc;
}

/* ---- entries ----------------------------------------------------------------------- */

static cJSON *entry_from(const char *scope, const cairn_memory *c, int indexed)
{
    ment probe;
    cJSON *meta, *o;
    static const char *const keys[] = {"type", "source", "date", "tags"};
    memset(&probe, 0, sizeof probe);
    probe.metadata = c->metadata;
    if ((meta = cairn__tier_meta(&probe, TIER_ARCHIVAL)) == NULL || (o = cJSON_CreateObject()) == NULL) {
        cJSON_Delete(meta);
        return NULL;
    }
    cJSON_AddItemToObject(o, "id", cJSON_DetachItemFromObjectCaseSensitive(meta, "entryId"));
    cJSON_AddStringToObject(o, "content", c->content);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(meta, keys[i]);
        if (v != NULL)
            cJSON_AddItemToObject(o, keys[i], v);
    }
    cJSON_AddBoolToObject(o, "indexed", indexed);
    cJSON_AddStringToObject(o, "scope", scope);
    cJSON_AddStringToObject(o, "memoryId", c->id);
    cJSON_Delete(meta);
    return o;
}

/* "2026-02-14" or an ISO 8601 UTC time into ms. */
static int parse_date(const char *s, int64_t *ms)
{
    char buf[40];
    if (strlen(s) == 10) {
        snprintf(buf, sizeof buf, "%sT00:00:00Z", s);
        s = buf;
    }
    return cairn__tier_parse_time(s, ms);
}

int cairn_archival_insert(cairn_mem *m, const char *scope, const char *content,
                          const char *meta_json, unsigned flags, char **out_json)
{
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    tier_scope sc;
    cJSON *in = NULL, *meta = NULL, *tags = NULL, *o, *e;
    cairn_memory *mem = NULL, *there = NULL;
    const char *type, *source, *date, *eid;
    char ns[CAIRN_SCOPE_MAX + 16], uuid[40], mid[CAIRN_MEM_ID_MAX + 1], xid[CAIRN_MEM_ID_MAX + 1];
    char *meta_text = NULL;
    int64_t date_ms = 0;
    int rc, existed = 0, queued = 0, wait = (flags & CAIRN_ARCHIVAL_WAIT) != 0;
    int has_emb = m->emb.dim != 0 && (m->emb.embed != NULL || m->emb.embed_batch != NULL);
    cairn__err err;

    if (out_json != NULL)
        *out_json = NULL;
    if ((rc = cairn__tier_scope(m, scope, &sc)) != CAIRN_OK)
        return rc;
    if (content == NULL || content[0] == 0)
        return cairn__mem_fail(m, CAIRN_EQUERY, "content: required");
    if (meta_json != NULL && ((in = cJSON_Parse(meta_json)) == NULL || !cJSON_IsObject(in))) {
        cJSON_Delete(in);
        return cairn__mem_fail(m, CAIRN_EQUERY, "the metadata is not a JSON object");
    }
    if ((rc = cairn__tier_str(m, in, "type", TYPE_MAX, "document", 0, &type)) != CAIRN_OK ||
        (rc = cairn__tier_str(m, in, "source", 4096, NULL, 0, &source)) != CAIRN_OK ||
        (rc = cairn__tier_str(m, in, "date", 40, NULL, 0, &date)) != CAIRN_OK ||
        (rc = cairn__tier_str(m, in, "id", 128, NULL, 0, &eid)) != CAIRN_OK)
        goto out;
    if (date != NULL && parse_date(date, &date_ms) != 0) {
        rc = cairn__mem_fail(m, CAIRN_EQUERY, "date: YYYY-MM-DD or an ISO 8601 UTC time, not '%.40s'", date);
        goto out;
    }
    tags = cJSON_GetObjectItemCaseSensitive(in, "tags");
    if (tags != NULL) {
        cJSON *x;
        int ok = cJSON_IsArray(tags);
        cJSON_ArrayForEach(x, tags)
            ok &= cJSON_IsString(x) && x->valuestring[0] != 0 &&
                  cairn__utf8_check(&err, "tags", x->valuestring, strlen(x->valuestring)) == CAIRN_OK;
        if (!ok) {
            rc = cairn__mem_fail(m, CAIRN_EQUERY, "tags: an array of strings wanted");
            goto out;
        }
    }
    if (eid == NULL) {
        cairn__tier_uuid(uuid);
        eid = uuid;
    }
    cairn__tier_ns(ns, sizeof ns, TIER_ARCHIVAL, sc.name);
    cairn__tier_mem_id(ns, eid, mid);
    indexed_id(ns, eid, xid);
    /* in either state already: the one there is */
    if (cairn_mem_get(m, xid, &there) == CAIRN_OK || cairn_mem_get(m, mid, &there) == CAIRN_OK) {
        if (strcmp(there->content, content) != 0) {
            rc = cairn__mem_fail(m, CAIRN_EEXIST, "archival entry %.128s holds other content", eid);
            goto out;
        }
        mem = there;
        there = NULL;
        existed = 1;
    } else {
        meta = cJSON_CreateObject();
        cJSON_AddStringToObject(meta, "tier", TIER_ARCHIVAL);
        cJSON_AddStringToObject(meta, "entryId", eid);
        cJSON_AddStringToObject(meta, "type", type);
        if (source != NULL)
            cJSON_AddStringToObject(meta, "source", source);
        if (date != NULL) {
            cJSON_AddStringToObject(meta, "date", date);
            cJSON_AddNumberToObject(meta, "dateMs", (double)date_ms);
        }
        cJSON_AddItemToObject(meta, "tags", tags ? cJSON_Duplicate(tags, 1) : cJSON_CreateArray());
        if ((meta_text = cJSON_PrintUnformatted(meta)) == NULL) {
            rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
            goto out;
        }
        so.ns = ns;
        so.category = "archival";
        so.metadata = meta_text;
        so.keep_duplicate = 1;
        so.no_limit = 1;
        /* with its vector now (waiting), or without one, embedded on the
         * thread or by cairn_archival_index */
        so.id = wait && has_emb ? xid : mid;
        so.no_embed = !(wait && has_emb);
        if ((rc = cairn_mem_store(m, content, &so, &mem, NULL)) != CAIRN_OK)
            goto out;
        if (!wait && has_emb) {
            pthread_mutex_lock(&m->tier_mu);
            rc = archiver_push(m, mem->id);
            pthread_mutex_unlock(&m->tier_mu);
            if (rc != CAIRN_OK) {
                rc = cairn__mem_fail(m, rc, "the entry is stored, its embedding could not be "
                                     "queued (cairn_archival_index embeds it later)");
                goto out;
            }
            queued = 1;
        }
    }
    if (out_json != NULL) {
        o = cJSON_CreateObject();
        e = entry_from(sc.name, mem, strcmp(mem->id, xid) == 0);
        if (o == NULL || e == NULL) {
            cJSON_Delete(o);
            cJSON_Delete(e);
            rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
            goto out;
        }
        cJSON_AddItemToObject(o, "entry", e);
        cJSON_AddBoolToObject(o, "existed", existed);
        cJSON_AddBoolToObject(o, "queued", queued);
        rc = cairn__tier_emit(m, o, out_json);
    }
out:
    cairn_mem_free(mem);
    cairn_mem_free(there);
    free(meta_text);
    cJSON_Delete(meta);
    cJSON_Delete(in);
    return rc;
}

/* ---- indexing what is left --------------------------------------------------------- */

typedef struct unindexed {
    char (*ids)[CAIRN_MEM_ID_MAX + 1];
    size_t n, cap;
} unindexed;

static int on_unindexed(void *user, cairn_mem *m, const ment *x)
{
    unindexed *u = user;
    const float *row = NULL;
    cJSON *meta = cairn__tier_meta(x, TIER_ARCHIVAL);
    if (meta == NULL)
        return 0;
    cJSON_Delete(meta);
    if (cairn__mem_vec_get(m, x->nsi, x->seq, &row) == CAIRN_OK && row != NULL)
        return 0;
    if (u->n == u->cap) {
        size_t cap = u->cap ? u->cap * 2 : 64;
        void *p = realloc(u->ids, cap * sizeof *u->ids);
        if (p == NULL)
            return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        u->ids = p;
        u->cap = cap;
    }
    memcpy(u->ids[u->n++], x->id, sizeof u->ids[0]);
    return 0;
}

int cairn_archival_index(cairn_mem *m, const char *scope, uint64_t *indexed)
{
    tier_scope sc;
    unindexed u = {NULL, 0, 0};
    char ns[CAIRN_SCOPE_MAX + 16];
    const char *one[1] = {ns};
    int rc;

    if (indexed != NULL)
        *indexed = 0;
    if ((rc = cairn__tier_scope(m, scope, &sc)) != CAIRN_OK)
        return rc;
    if (m->emb.dim == 0 || (m->emb.embed == NULL && m->emb.embed_batch == NULL))
        return cairn__mem_fail(m, CAIRN_EUNAVAIL, "no embedder: give the handle one "
                               "(cairn_mem_set_embedder; --embed-cmd or --embed-builtin)");
    if ((rc = cairn_archival_wait(m)) != CAIRN_OK)
        return rc;
    cairn__tier_ns(ns, sizeof ns, TIER_ARCHIVAL, sc.name);
    rc = cairn__mem_scan(m, one, 1, 0, on_unindexed, &u);
    for (size_t i = 0; rc == CAIRN_OK && i < u.n; i++) {
        rc = index_one(m, u.ids[i]);
        if (rc == CAIRN_OK && indexed != NULL)
            (*indexed)++;
    }
    free(u.ids);
    return rc;
}

/* ---- search ---------------------------------------------------------------------------- */

int cairn_archival_search(cairn_mem *m, const char *query, const cairn_archival_query *q,
                          char **out_json)
{
    cairn_archival_query def = CAIRN_ARCHIVAL_QUERY_INIT;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    cairn_where w[4];
    char nsbuf[3][CAIRN_SCOPE_MAX + 16], since[32], until[32];
    const char *nss[3];
    char *type_json = NULL;
    cairn_recall_hit *h = NULL;
    size_t nh = 0, nw = 0;
    tier_scope sc;
    cJSON *arr, *seen;
    int rc;

    *out_json = NULL;
    if (q == NULL)
        q = &def;
    if ((rc = cairn__opts_version(m, "cairn_archival_query", q->version, CAIRN_ARCHIVAL_QUERY_VERSION)) != CAIRN_OK ||
        (rc = cairn__tier_scope(m, q->scope, &sc)) != CAIRN_OK)
        return rc;
    if (q->limit > 1000)
        return cairn__mem_fail(m, CAIRN_EQUERY, "limit: 1..1000");
    if (q->since != 0 && q->until != 0 && q->since > q->until)
        return cairn__mem_fail(m, CAIRN_EQUERY, "date range: since is after until");
    if (q->type != NULL && (q->type[0] == 0 || strlen(q->type) > TYPE_MAX))
        return cairn__mem_fail(m, CAIRN_EQUERY, "type: 1..%d bytes", TYPE_MAX);
    ro.n_ns = q->only_scope ? 1 : sc.n_chain;
    for (size_t i = 0; i < ro.n_ns; i++) {
        cairn__tier_ns(nsbuf[i], sizeof nsbuf[i], TIER_ARCHIVAL, sc.chain[i]);
        nss[i] = nsbuf[i];
    }
    ro.ns = nss;
    ro.k = q->limit ? q->limit : 5;
    w[nw++] = (cairn_where){"tier", CAIRN_WHERE_EQ, TIER_ARCHIVAL};
    if (q->type != NULL) {
        cJSON *js = cJSON_CreateString(q->type);
        type_json = js ? cJSON_PrintUnformatted(js) : NULL;
        cJSON_Delete(js);
        if (type_json == NULL)
            return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        w[nw++] = (cairn_where){"type", CAIRN_WHERE_EQ, type_json};
    }
    if (q->since != 0) {
        snprintf(since, sizeof since, "%" PRId64, q->since);
        w[nw++] = (cairn_where){"dateMs", CAIRN_WHERE_GE, since};
    }
    if (q->until != 0) {
        snprintf(until, sizeof until, "%" PRId64, q->until);
        w[nw++] = (cairn_where){"dateMs", CAIRN_WHERE_LE, until};
    }
    ro.where = w;
    ro.n_where = nw;
    rc = cairn_mem_recall(m, query ? query : "", &ro, &h, &nh);
    free(type_json);
    if (rc != CAIRN_OK)
        return rc;
    arr = cJSON_CreateArray();
    seen = cJSON_CreateObject(); /* entry ids: a copy being indexed shows once */
    for (size_t i = 0; arr != NULL && i < nh; i++) {
        const char *at = strchr(h[i].mem.ns, '@');
        const float *row = NULL;
        int indexed;
        cJSON *e;
        long nsi;
        pthread_mutex_lock(&m->mu);
        nsi = cairn__mem_ns_index(m, h[i].mem.ns, strlen(h[i].mem.ns), 0);
        indexed = nsi >= 0 && cairn__mem_vec_get(m, (uint32_t)nsi, h[i].mem.seq, &row) == CAIRN_OK && row != NULL;
        pthread_mutex_unlock(&m->mu);
        e = entry_from(at ? at + 1 : "", &h[i].mem, indexed);
        if (e == NULL)
            continue;
        {
            const char *eid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "id"));
            if (eid != NULL && cJSON_GetObjectItemCaseSensitive(seen, eid) != NULL) {
                cJSON_Delete(e);
                continue;
            }
            if (eid != NULL)
                cJSON_AddTrueToObject(seen, eid);
        }
        cJSON_AddNumberToObject(e, "score", h[i].score);
        cJSON_AddItemToArray(arr, e);
    }
    cJSON_Delete(seen);
    cairn_recall_free(h, nh);
    return cairn__tier_emit(m, arr, out_json);
}
