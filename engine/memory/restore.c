/*
 * restore.c - cairn_mem_restore: a memory that is no longer live (deleted,
 * pruned past the limit, forgotten, merged away, cleared) brought back
 * from its records in the log, with its id, namespace, content, category,
 * metadata, importance, times, access statistics and vector as they were
 * when it went (format-spec/memory.md, "Restore").
 *
 * The state in RAM does not keep what a dead memory was (an index file
 * drops it), so the log is the source: one pass over it folds the history
 * of that one id by replay's rules (memory.c, apply_one): a `memory`
 * record of the id starts a life unless one is live, an update, an access
 * or a delete of the id and a clear of its namespace apply while it is
 * live, and nothing of a commit that is not whole in the log applies.
 * Only records whose payload names the id are decoded ("<id>" quoted: ids
 * need no escape), and clears only while the memory is live, so the pass
 * costs little more than reading the log. It reads most of the log before
 * it takes the writer's turn (other processes' writers go on meanwhile),
 * then, in the turn, the records appended since, and only then decides
 * and writes: nothing of another process comes between the last check
 * and the record.
 *
 * The memory comes back as a new `memory` record carrying every field and
 * "restoredFrom" (the seq of the record that stored the life it brings
 * back): replay applies it as any store, and a reader of before the field
 * does the same. A restore obeys what a store obeys: the id must not be
 * live, the content must not be live in the namespace, and the namespace
 * must stay within the limit (refused, not pruned: the caller asked for
 * this memory, not for another to go).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "civil.h"
#include "cairn.h"
#include "memstate.h"
#include "store.h"

/* What the log says of one id: its last life. */
typedef struct hist {
    cairn_mem *m;
    const char *id;
    char quoted[CAIRN_MEM_ID_MAX + 3]; /* "<id>" as the payloads hold it */
    size_t quoted_len;
    cairn__batch batch;        /* the commit last looked up (batch.h) */
    uint64_t next;             /* the first record the fold has not seen */
    int found;                 /* a `memory` record of the id applied */
    int live;                  /* as the fold stands */
    uint64_t store_seq;        /* the `memory` record of the last life */
    uint64_t end_seq;          /* the record that ended it */
    int64_t purged_at;         /* the last memory.purge record naming it: its time */
    uint64_t purged_seq;       /* and its seq */
    char *ns, *content, *category, *metadata;
    size_t content_len;
    double importance;
    int64_t created, accessed, expires;
    uint64_t access_count;
    char embedder[CAIRN_EMBEDDER_NAME_MAX + 1]; /* "" : no vector */
    uint32_t dim;
    float *vec;
} hist;

static void hist_free(hist *h)
{
    free(h->ns);
    free(h->content);
    free(h->category);
    free(h->metadata);
    free(h->vec);
    h->ns = h->content = h->category = h->metadata = NULL;
    h->vec = NULL;
}

static char *dup_n(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p != NULL) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

/* A new life of the id: every field from its store record. */
static int begin_life(hist *h, const cairn_record *rec, const memrec *r)
{
    hist_free(h);
    h->ns = dup_n(rec->ns, rec->ns_len);
    h->content = dup_n(r->content, r->content_len);
    h->category = dup_n(r->category, strlen(r->category));
    h->metadata = r->metadata ? dup_n(r->metadata, strlen(r->metadata)) : NULL;
    h->embedder[0] = 0;
    h->dim = 0;
    if (r->embedder != NULL) {
        h->vec = malloc((size_t)r->dim * sizeof *h->vec);
        if (h->vec != NULL) {
            memcpy(h->vec, r->vec, (size_t)r->dim * sizeof *h->vec); /* maybe unaligned */
            snprintf(h->embedder, sizeof h->embedder, "%s", r->embedder);
            h->dim = r->dim;
        }
    }
    if (h->ns == NULL || h->content == NULL || h->category == NULL ||
        (r->metadata != NULL && h->metadata == NULL) || (r->embedder != NULL && h->vec == NULL))
        return CAIRN_ENOMEM;
    h->content_len = r->content_len;
    h->importance = r->importance;
    h->created = r->created_at ? r->created_at : rec->ts_ms;
    h->accessed = r->accessed_at ? r->accessed_at : h->created;
    h->access_count = r->access_count;
    h->expires = r->expires_at;
    h->store_seq = rec->seq;
    h->found = h->live = 1;
    return CAIRN_OK;
}

static int update_life(hist *h, const memrec *r)
{
    if (r->has & MEMREC_HAS_IMPORTANCE)
        h->importance = r->importance;
    if (r->has & MEMREC_HAS_EXPIRES)
        h->expires = r->expires_at;
    if (r->has & MEMREC_HAS_CATEGORY) {
        char *c = dup_n(r->category, strlen(r->category));
        if (c == NULL)
            return CAIRN_ENOMEM;
        free(h->category);
        h->category = c;
    }
    if (r->has & MEMREC_HAS_METADATA) {
        char *c = r->metadata ? dup_n(r->metadata, strlen(r->metadata)) : NULL;
        if (r->metadata != NULL && c == NULL)
            return CAIRN_ENOMEM;
        free(h->metadata);
        h->metadata = c;
    }
    return CAIRN_OK;
}

/* One decoded record of the id (or a clear), by replay's rules. */
static int fold(hist *h, const cairn_record *rec, const memrec *r)
{
    switch (r->type) {
    case CAIRN_REC_MEMORY:
        if (h->live || strcmp(r->id, h->id) != 0)
            return CAIRN_OK; /* a second live one is not applied */
        return begin_life(h, rec, r);
    case CAIRN_REC_MEMORY_UPDATE:
        return h->live && strcmp(r->id, h->id) == 0 ? update_life(h, r) : CAIRN_OK;
    case CAIRN_REC_MEMORY_DELETE:
        if (h->live && strcmp(r->id, h->id) == 0) {
            h->live = 0;
            h->end_seq = rec->seq;
        }
        return CAIRN_OK;
    case CAIRN_REC_MEMORY_ACCESS:
        /* one recall's hits (one access each), or a fold of the side file
         * ACCESS (counts and last times) */
        for (size_t i = 0; h->live && i < r->n_ids; i++)
            if (strcmp(r->ids[i], h->id) == 0) {
                int64_t at = r->counts ? r->lasts[i] : r->accessed_at;
                if (at > h->accessed)
                    h->accessed = at;
                h->access_count += r->counts ? r->counts[i] : 1;
            }
        return CAIRN_OK;
    case CAIRN_REC_MEMORY_CLEAR:
        if (h->live && (r->clear_ns == NULL || strcmp(r->clear_ns, h->ns) == 0)) {
            h->live = 0;
            h->end_seq = rec->seq;
        }
        return CAIRN_OK;
    }
    return CAIRN_OK;
}

/* Does the payload hold "<id>"? */
static int names_id(const hist *h, const cairn_record *rec)
{
    return cairn__contains(rec->json, rec->json_len, h->quoted, h->quoted_len);
}

/* What visit returns to end a pass early, with no error: the log ends
 * inside a commit another process is still writing (h->next is its record
 * to look at again, in the turn). */
#define PASS_STOP 1

static int visit(void *user, const cairn_record *rec)
{
    hist *h = user;
    memrec r;
    int rc;

    h->next = rec->seq + 1;
    if (rec->type == CAIRN_REC_MEMORY_PURGE && names_id(h, rec)) {
        h->purged_at = rec->ts_ms; /* what it stood for is gone (compaction.md) */
        h->purged_seq = rec->seq;
        return CAIRN_OK;
    }
    if (rec->type < CAIRN_REC_MEMORY || rec->type > CAIRN_REC_MEMORY_CLEAR)
        return CAIRN_OK;
    if (rec->type == CAIRN_REC_MEMORY_CLEAR ? !h->live : !names_id(h, rec))
        return CAIRN_OK;
    if (cairn__memrec_decode_bin(rec->type, rec->json, rec->json_len, rec->bin, rec->bin_len, &r,
                                 NULL) != CAIRN_OK)
        return CAIRN_OK; /* replay skips it too */
    if (r.batch_n >= 2) {
        int verdict = CAIRN_BATCH_TORN;
        rc = cairn__batch_check(h->m->db, &h->batch, rec->seq, r.batch_i, r.batch_n, &verdict);
        if (rc == CAIRN_OK && verdict == CAIRN_BATCH_PENDING) {
            h->next = rec->seq; /* its records before this one do not name the id */
            rc = PASS_STOP;
        }
        if (rc != CAIRN_OK || verdict != CAIRN_BATCH_WHOLE) {
            cairn__memrec_done(&r);
            return rc; /* a commit not whole in the log: none of it applies */
        }
    }
    rc = fold(h, rec, &r);
    cairn__memrec_done(&r);
    return rc;
}

/* Fold the records from h->next to `to` (mu held). */
static int pass(cairn_mem *m, hist *h, uint64_t to)
{
    int rc = h->next <= to ? cairn__each_record(m->db, h->next, to, visit, h) : CAIRN_OK;
    if (rc == PASS_STOP)
        return CAIRN_OK;
    if (rc == CAIRN_ENOMEM)
        return cairn__mem_fail(m, rc, "restore: no memory");
    if (rc != CAIRN_OK)
        return cairn__mem_fail(m, rc, "restore: reading the log: %s", cairn_errmsg(m->db));
    return CAIRN_OK;
}

/* The id's memory is live: nothing to restore. */
static int is_live(cairn_mem *m, const ment *x, const char *id)
{
    return cairn__mem_fail(m, CAIRN_EEXIST, "memory %s is live%s: there is nothing to restore",
                           id, x != NULL && cairn__mem_expired(x, cairn__mem_wall_ms())
                                   ? " (it has expired: cairn_mem_update changes its expiry)"
                                   : "");
}

/* The checks a store makes, for the memory h describes (mu held). */
static int may_return(cairn_mem *m, const hist *h)
{
    const char *what;
    uint64_t lim = cairn__mem_limit(m, &what), live;
    long nsi = cairn__mem_ns_index(m, h->ns, strlen(h->ns), 0);
    ment *dup = cairn__mem_find_dup(m, h->ns, h->content, h->content_len);

    if (dup != NULL)
        return cairn__mem_fail(m, CAIRN_EEXIST, "memory %s of namespace \"%.64s\" holds the same "
                               "content as %s: restore nothing, or remove it first", dup->id,
                               h->ns, h->id);
    live = nsi >= 0 ? m->ns[nsi].live : 0;
    if (lim != 0 && live + 1 > lim)
        return cairn__mem_limit_fail(m, h->ns, live + 1, lim, what);
    if (h->dim != 0)
        return cairn__mem_vec_compatible(m, h->embedder, h->dim);
    return CAIRN_OK;
}

int cairn_mem_restore(cairn_mem *m, const char *id, cairn_memory **out)
{
    hist h;
    memrec r;
    ment *x;
    cairn_memory *copy = NULL;
    uint64_t seq = 0;
    int rc, turn = 0, restored = 0;

    if (out != NULL)
        *out = NULL;
    memset(&h, 0, sizeof h);
    h.m = m;
    h.id = id;
    h.next = 1;
    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    if (id == NULL || !cairn__memrec_id_ok(id)) {
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "not a memory id: 1..32 of [A-Za-z0-9_.-]");
        goto out;
    }
    if (m->db->read_only) {
        rc = cairn__mem_fail(m, CAIRN_EPERM, "a read-only handle cannot restore a memory");
        goto out;
    }
    h.quoted[0] = '"';
    memcpy(h.quoted + 1, id, strlen(id));
    h.quoted[strlen(id) + 1] = '"';
    h.quoted_len = strlen(id) + 2;
    /* Most of the log before the turn; what came since, in it. */
    if ((rc = cairn__mem_catch_up(m)) != CAIRN_OK)
        goto out;
    if ((x = cairn__mem_find_id(m, id)) != NULL) {
        rc = is_live(m, x, id);
        goto out;
    }
    if ((rc = pass(m, &h, cairn__handed_seq(m->db))) != CAIRN_OK)
        goto out;
    if ((rc = cairn__mem_turn_begin(m)) != CAIRN_OK)
        goto out;
    turn = 1;
    if ((x = cairn__mem_find_id(m, id)) != NULL) {
        rc = is_live(m, x, id);
        goto out;
    }
    if (m->damaged) {
        rc = CAIRN_ECORRUPT; /* a lookup met a damaged row of the index file: cairn__errbuf(m) says */
        goto out;
    }
    if ((rc = pass(m, &h, UINT64_MAX)) != CAIRN_OK)
        goto out;
    /* Purged after its last life began (records a failed compaction left
     * behind, or none): it stays purged. */
    if (h.purged_seq != 0 && h.purged_seq > h.store_seq) {
        int64_t y;
        unsigned mo, d;
        int64_t ms = h.purged_at, days = ms >= 0 ? ms / 86400000 : -((-ms + 86399999) / 86400000);
        int64_t in_day = ms - days * 86400000;
        cairn__civil_from_days(days, &y, &mo, &d);
        rc = cairn__mem_fail(m, CAIRN_ENOTFOUND, "memory %s was purged at "
                             "%04" PRId64 "-%02u-%02uT%02d:%02d:%02dZ: it cannot be restored", id,
                             y, mo, d, (int)(in_day / 3600000), (int)(in_day / 60000 % 60),
                             (int)(in_day / 1000 % 60));
        goto out;
    }
    if (!h.found) {
        rc = cairn__mem_fail(m, CAIRN_ENOTFOUND, "no memory with id %s in the log%s", id,
                             cairn__dropped_upto(m->db) != 0
                                 ? " (never stored, or compaction dropped its records under "
                                   "the store's retention policy)"
                                 : "");
        goto out;
    }
    if (h.live) { /* the log has it live where this handle did not look yet */
        rc = is_live(m, NULL, id);
        goto out;
    }
    if ((rc = may_return(m, &h)) != CAIRN_OK)
        goto out;
    memset(&r, 0, sizeof r);
    r.type = CAIRN_REC_MEMORY;
    r.id = id;
    r.content = h.content;
    r.content_len = h.content_len;
    r.category = h.category;
    r.importance = h.importance;
    r.created_at = h.created;
    r.accessed_at = h.accessed;
    r.access_count = h.access_count;
    r.expires_at = h.expires;
    r.metadata = h.metadata;
    r.restored_from = h.store_seq;
    if (h.dim != 0) {
        r.embedder = h.embedder;
        r.dim = h.dim;
        r.vec = h.vec;
    }
    rc = cairn__mem_write_rec(m, h.ns, &r, &seq);
    if (rc == CAIRN_OK)
        restored = 1;
    if (rc == CAIRN_OK && (out != NULL || m->nlisteners > 0)) {
        copy = malloc(sizeof *copy);
        x = cairn__mem_find_seq(m, seq);
        if (copy == NULL || x == NULL || cairn__mem_copy_out(m, x, copy) != CAIRN_OK) {
            free(copy);
            copy = NULL;
            /* a failure only for a caller who asked for the copy; listeners
             * hear of the restore without it, as of a store */
            if (out != NULL)
                rc = cairn__mem_fail(m, CAIRN_ENOMEM, "the memory was restored, but no copy "
                                     "of it could be made");
        }
    }
out:
    if (turn)
        rc = cairn__mem_turn_end(m, rc);
    pthread_mutex_unlock(&m->mu);
    hist_free(&h);
    if (restored) {
        cairn_mem_event ev;
        memset(&ev, 0, sizeof ev);
        ev.kind = CAIRN_EVENT_RESTORED;
        ev.memory = copy; /* NULL if no copy could be made */
        cairn__mem_emit(m, &ev); /* outside the lock, as every event */
        if (out != NULL && rc == CAIRN_OK)
            *out = copy;
        else
            cairn_mem_free(copy);
    }
    return rc;
}
