/*
 * retain.c - what the memory engine lets compaction drop
 * (format-spec/compaction.md): cairn_mem_compact under the store's
 * retention policy, and cairn_mem_purge of one memory.
 *
 * A memory's records are its lives: the `memory` record that stored it,
 * the updates applied to it, and the record that ended it (a delete, a
 * clear, a purge). Replay applies records by rules (a second store of a
 * live id, an update of an id that is not live, a commit cut short are
 * not applied), so the lives are found by a fold of the log with the
 * same rules, kept lean: ids, seqs and times, no text.
 *
 * Pass 1 folds the whole log and learns every life's start and end;
 * then each life is judged. Pass 2 is the compaction itself (compact.c):
 * it sees the sealed records again, in order, folds them the same way,
 * and gives each its verdict from the life it belongs to. Only whole
 * lives go: the `memory` record and its going together, never one
 * without the other, so a fold of what is left from any point has the
 * same live memories.
 *
 * What stays although its time has come:
 *  - a life an index file holds live (a file covering a seq from its start
 *    up to before its end): a reader that opens the file and folds the log
 *    after it must still meet the life's end. The next checkpoint covers
 *    its end and frees it. (A dropped record at the seq a file covers is
 *    its binding's anchor: its hole keeps its checksum, compact.h.)
 *  - records replay does not apply (a skipped update or delete, a store of
 *    an id already live, a commit cut short, a record that does not
 *    decode): kept as they are, so replay skips and counts them as before.
 *  - clears, access folds and purge markers: small, and still read.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "alloc.h"
#include "cairn.h"
#include "compact.h"
#include "memstate.h"
#include "merger.h"
#include "seqfile.h"
#include "store.h"

#define END_DELETE 1
#define END_CLEAR 2
#define END_PURGE 3
#define END_PURGE_LIVE 4 /* a purge marker that found it live: it counts the death */

typedef struct life {
    char id[CAIRN_MEM_ID_MAX + 1];
    uint64_t put, end;  /* its memory record; the record that ended it (0: live) */
    int64_t end_ts;
    uint32_t nsi;
    uint8_t end_kind;   /* END_* */
    uint8_t drop;
    uint8_t needed;     /* replay still needs it: to skip another record (a
                           second store of its id while it was live), for
                           the embedder its vector fixed, or for restore (an
                           earlier life of its id stays: restore must not
                           bring that one back instead) */
    uint32_t prev;      /* the id's life before it + 1 (0: none) */
} life;

/* What track returns to end pass 1 early, with no error: the log ends
 * inside a commit another writer is still writing. */
#define LEARN_STOP 2

/* What a record did to the lives. */
enum { T_NONE, T_PUT, T_UPDATE, T_END, T_OTHER };

typedef struct tracker {
    cairn_mem *m;
    int pass;            /* 1: learn the lives; 2: judge the records */
    life *lv;
    size_t n, cap, next; /* lives; pass 2: the next one to meet */
    uint32_t *slot;      /* id -> latest life + 1 (open addressing) */
    size_t scap;
    char **ns;
    size_t nns, ns_cap;
    char vname[CAIRN_EMBEDDER_NAME_MAX + 1];
    uint32_t vdim;
    size_t vfix;         /* pass 1: the life whose vector fixed the embedder + 1 */
    cairn__batch batch;
    cairn__memscan scan;
    const char *purge;   /* cairn_mem_purge: the id whose records all go */
    uint64_t purge_records, purge_bytes;
    uint64_t purge_named;  /* records that name it (applied or not) */
    int purge_marked;      /* a memory.purge record of it is in the log */
    /* what the judgement left, for the report */
    uint64_t n_drop, n_grace, n_pinned, n_needed;
    uint64_t n_unsealed; /* free to go but for a record past the sealed prefix */
    uint64_t learned;    /* pass 1 folded the log up to here */
    const uint64_t *cov; /* the seqs memory index files cover (they pin lives) */
    size_t ncov;
    const uint64_t *anchors; /* those of every derived file (a hole ends at one) */
    size_t nanchors;
    /* a dry run's pass 2 over the whole log */
    uint64_t dry_dropped, dry_bytes, dry_runs, dry_segs;
    size_t dry_seg;      /* the segment (its bases index + 1) of the last drop */
    int dry_prev_drop;
    uint64_t *bases;     /* a dry run: where segments begin (a hole ends there) */
    size_t n_bases, next_base;
    /* events: the limits, and per namespace (t->ns) their bytes and the
     * bytes dropped so far */
    cairn_retention events;
    int64_t now;
    uint64_t event_upto; /* events after it stay (not sealed) */
    uint64_t *ev_bytes, *ev_dropped;
    size_t ev_cap;
    uint64_t ev_n, ev_n_bytes; /* dropped, for the report */
    /* a compaction in the background (cairn__mem_compact_step) */
    const int *stop;     /* set: give up (CAIRN_ELOCKED) */
    cairn_mem *hold;     /* the handle whose lock the swap takes */
    int held;            /* it holds hold->mu */
} tracker;

/* Is a background compaction asked to give up? */
static int stopped(const tracker *t)
{
    return t->stop != NULL && __atomic_load_n(t->stop, __ATOMIC_ACQUIRE);
}

static uint64_t id_hash(const char *id)
{
    return XXH3_64bits(id, strlen(id));
}

/* The slot of id: where it is, or the empty slot it would go to. */
static size_t slot_of(const tracker *t, const char *id)
{
    size_t mask = t->scap - 1, i = (size_t)id_hash(id) & mask;
    while (t->slot[i] != 0 && strcmp(t->lv[t->slot[i] - 1].id, id) != 0)
        i = (i + 1) & mask;
    return i;
}

static int slots_grow(tracker *t)
{
    size_t old = t->scap, cap = old ? old * 2 : 1024;
    uint32_t *os = t->slot, *ns = calloc(cap, sizeof *ns);
    if (ns == NULL)
        return CAIRN_ENOMEM;
    t->slot = ns;
    t->scap = cap;
    for (size_t i = 0; i < old; i++)
        if (os[i] != 0)
            t->slot[slot_of(t, t->lv[os[i] - 1].id)] = os[i];
    free(os);
    return CAIRN_OK;
}

/* The latest life of id, or NULL. */
static life *latest(const tracker *t, const char *id)
{
    size_t i;
    if (t->scap == 0)
        return NULL;
    i = slot_of(t, id);
    return t->slot[i] ? &t->lv[t->slot[i] - 1] : NULL;
}

/* Is life x live just before the record at seq? */
static int live_at(const tracker *t, const life *x, uint64_t seq)
{
    if (t->pass == 1)
        return x->end == 0;
    return x->put < seq && (x->end == 0 || seq <= x->end);
}

static long ns_index(tracker *t, const char *ns, size_t len)
{
    for (size_t i = t->nns; i-- > 0;)
        if (strlen(t->ns[i]) == len && memcmp(t->ns[i], ns, len) == 0)
            return (long)i;
    if (cairn__grow(NULL, (void **)&t->ns, &t->ns_cap, t->nns + 1, sizeof *t->ns) != CAIRN_OK ||
        (t->ns[t->nns] = malloc(len + 1)) == NULL)
        return -1;
    memcpy(t->ns[t->nns], ns, len);
    t->ns[t->nns][len] = 0;
    return (long)t->nns++;
}

static void end_life(tracker *t, life *x, const cairn_record *rec, int kind)
{
    if (t->pass == 1) {
        x->end = rec->seq;
        x->end_ts = rec->ts_ms;
        x->end_kind = (uint8_t)kind;
    }
}

/* Fold one record as replay does; *what says what it did, *k the life. */
static int track(tracker *t, const cairn_record *rec, int *what, life **k)
{
    memrec r;
    life *x;
    int rc = CAIRN_OK;

    *what = T_NONE;
    *k = NULL;
    if ((rec->type < CAIRN_REC_MEMORY || rec->type > CAIRN_REC_MEMORY_CLEAR) &&
        rec->type != CAIRN_REC_MEMORY_PURGE) {
        *what = T_OTHER;
        return CAIRN_OK;
    }
    if (cairn__memrec_decode_scan(&t->scan, rec->type, rec->json, rec->json_len, rec->bin,
                                  rec->bin_len, &r, NULL) != CAIRN_OK)
        return CAIRN_OK; /* skipped by replay too */
    if (r.batch_n >= 2) {
        int verdict = CAIRN_BATCH_TORN;
        rc = cairn__batch_check(t->m->db, &t->batch, rec->seq, r.batch_i, r.batch_n, &verdict);
        if (rc == CAIRN_OK && verdict == CAIRN_BATCH_PENDING) {
            /* Another writer is writing it (pass 1 runs outside any turn):
             * learn no further; pass 2 keeps everything from it on. */
            t->learned = rec->seq - r.batch_i - 1;
            rc = LEARN_STOP;
        }
        if (rc != CAIRN_OK || verdict != CAIRN_BATCH_WHOLE)
            goto done; /* torn: kept, as replay skips it */
    }
    switch (r.type) {
    case CAIRN_REC_MEMORY: {
        long nsi;
        size_t i;
        life *prev;
        x = latest(t, r.id);
        if (x != NULL && live_at(t, x, rec->seq)) {
            x->needed |= t->pass == 1; /* without it replay would apply this one */
            break;                     /* a second store of a live id */
        }
        if (r.embedder != NULL && t->vdim != 0 &&
            (t->vdim != r.dim || strcmp(t->vname, r.embedder) != 0))
            break; /* another embedder's vector */
        if (r.embedder != NULL && t->vdim == 0) {
            snprintf(t->vname, sizeof t->vname, "%s", r.embedder);
            t->vdim = r.dim;
            t->vfix = t->pass == 1 ? t->n + 1 : 0; /* the life made just below */
        }
        if (t->pass == 2) {
            /* The same fold meets the same lives in the same order. */
            if (t->next >= t->n || t->lv[t->next].put != rec->seq) {
                rc = cairn__mem_fail(t->m, CAIRN_ECORRUPT, "compaction: the log changed under "
                                     "it at seq %" PRIu64, rec->seq);
                break;
            }
            x = &t->lv[t->next++];
        } else {
            if ((nsi = ns_index(t, rec->ns, rec->ns_len)) < 0 ||
                cairn__grow(NULL, (void **)&t->lv, &t->cap, t->n + 1, sizeof *t->lv) != CAIRN_OK) {
                rc = cairn__mem_fail(t->m, CAIRN_ENOMEM, "no memory to compact");
                break;
            }
            prev = latest(t, r.id);
            x = &t->lv[t->n++];
            memset(x, 0, sizeof *x);
            snprintf(x->id, sizeof x->id, "%s", r.id);
            x->put = rec->seq;
            x->nsi = (uint32_t)nsi;
            x->prev = prev != NULL ? (uint32_t)(prev - t->lv) + 1 : 0;
            /* The life whose vector fixed the store's embedder stays: a
             * rebuild without it could take another embedder's. */
            x->needed = t->vfix == t->n;
        }
        if ((t->n + 1) * 2 > t->scap && (rc = slots_grow(t)) != CAIRN_OK) {
            rc = cairn__mem_fail(t->m, rc, "no memory to compact");
            break;
        }
        i = slot_of(t, r.id);
        t->slot[i] = (uint32_t)(x - t->lv) + 1;
        *what = T_PUT;
        *k = x;
        break;
    }
    case CAIRN_REC_MEMORY_UPDATE:
        if ((x = latest(t, r.id)) != NULL && live_at(t, x, rec->seq)) {
            *what = T_UPDATE;
            *k = x;
        }
        break;
    case CAIRN_REC_MEMORY_DELETE:
    case CAIRN_REC_MEMORY_PURGE:
        if ((x = latest(t, r.id)) != NULL && live_at(t, x, rec->seq)) {
            end_life(t, x, rec,
                     r.type == CAIRN_REC_MEMORY_DELETE ? END_DELETE : END_PURGE_LIVE);
            *what = r.type == CAIRN_REC_MEMORY_DELETE ? T_END : T_OTHER;
            *k = x;
        }
        break;
    case CAIRN_REC_MEMORY_CLEAR:
        *what = T_OTHER;
        if (t->pass == 2)
            break; /* the ends were learnt in pass 1 */
        for (size_t j = 0; j < t->n; j++) {
            x = &t->lv[j];
            if (x->end == 0 && (r.clear_ns == NULL || strcmp(t->ns[x->nsi], r.clear_ns) == 0))
                end_life(t, x, rec, END_CLEAR);
        }
        break;
    default:
        *what = T_OTHER;
        break;
    }
done:
    cairn__memrec_done(&r);
    return rc;
}

/* Does a record (of any life or none) name the purged id? */
static int names_purged(const tracker *t, const cairn_record *rec)
{
    memrec r;
    int yes;
    if (t->purge == NULL || rec->type < CAIRN_REC_MEMORY || rec->type > CAIRN_REC_MEMORY_DELETE ||
        rec->type == CAIRN_REC_MEMORY_ACCESS)
        return 0;
    if (cairn__memrec_decode_bin(rec->type, rec->json, rec->json_len, rec->bin, rec->bin_len,
                                 &r, NULL) != CAIRN_OK)
        return 0;
    yes = r.id != NULL && strcmp(r.id, t->purge) == 0;
    cairn__memrec_done(&r);
    return yes;
}

static uint64_t rec_bytes(const cairn_record *rec)
{
    return 40 + rec->ns_len + rec->json_len + rec->bin_len;
}

/* The namespace of an event, its byte counters grown to match. -1: no
 * memory. */
static long event_ns(tracker *t, const cairn_record *rec)
{
    long nsi = ns_index(t, rec->ns, rec->ns_len);
    size_t cap = t->ev_cap;
    if (nsi < 0)
        return -1;
    if ((size_t)nsi >= t->ev_cap) {
        size_t ncap = t->ns_cap > (size_t)nsi ? t->ns_cap : (size_t)nsi + 1;
        uint64_t *b = realloc(t->ev_bytes, ncap * sizeof *b);
        uint64_t *d = b ? realloc(t->ev_dropped, ncap * sizeof *d) : NULL;
        if (b != NULL)
            t->ev_bytes = b;
        if (d == NULL)
            return -1;
        t->ev_dropped = d;
        memset(b + cap, 0, (ncap - cap) * sizeof *b);
        memset(d + cap, 0, (ncap - cap) * sizeof *d);
        t->ev_cap = ncap;
    }
    return nsi;
}

static int names_purged(const tracker *t, const cairn_record *rec);

/* Pass 1 of a purge: the lives, and whatever else names the id. */
static int learn_purge(void *user, const cairn_record *rec)
{
    tracker *t = user;
    int what;
    life *k;
    if (rec->type == CAIRN_REC_MEMORY_PURGE) {
        memrec r;
        if (cairn__memrec_decode_own(rec->type, rec->json, rec->json_len, &r, NULL) == CAIRN_OK) {
            t->purge_marked |= strcmp(r.id, t->purge) == 0;
            cairn__memrec_done(&r);
        }
    }
    t->purge_named += names_purged(t, rec);
    return track(t, rec, &what, &k);
}

static int learn(void *user, const cairn_record *rec)
{
    tracker *t = user;
    int what;
    life *k;
    if (stopped(t))
        return cairn__mem_fail(t->m, CAIRN_ELOCKED, "compaction given up");
    if (rec->type == CAIRN_REC_EVENT && t->events.events_max_bytes != 0) {
        long nsi = event_ns(t, rec);
        if (nsi < 0)
            return cairn__mem_fail(t->m, CAIRN_ENOMEM, "no memory to compact");
        t->ev_bytes[nsi] += rec_bytes(rec);
        return CAIRN_OK;
    }
    return track(t, rec, &what, &k);
}

/* An event past the limits: the older than the age, and the oldest of a
 * namespace while its events take more than the size (seen oldest first).
 * *verdict stays KEEP otherwise. */
static int judge_event(tracker *t, const cairn_record *rec, int *verdict)
{
    uint64_t len = rec_bytes(rec);
    long nsi = -1;
    int drop;
    if (rec->seq > t->event_upto)
        return CAIRN_OK;
    drop = t->events.events_max_age_ms != 0 &&
               rec->ts_ms < t->now - (int64_t)t->events.events_max_age_ms;
    if (t->events.events_max_bytes != 0) {
        if ((nsi = event_ns(t, rec)) < 0)
            return cairn__mem_fail(t->m, CAIRN_ENOMEM, "no memory to compact");
        drop = drop || t->ev_bytes[nsi] - t->ev_dropped[nsi] > t->events.events_max_bytes;
    }
    if (drop) {
        if (nsi >= 0)
            t->ev_dropped[nsi] += len;
        t->ev_n++;
        t->ev_n_bytes += len;
        *verdict = CAIRN__DROP_UNREAD;
    }
    return CAIRN_OK;
}

/* Pass 2: the verdict on one record. */
static int judge(void *user, const cairn_record *rec, int *verdict)
{
    tracker *t = user;
    int what, rc;
    life *k;

    *verdict = CAIRN__KEEP;
    if (stopped(t))
        return cairn__mem_fail(t->m, CAIRN_ELOCKED, "compaction given up");
    if (rec->seq > t->learned)
        return CAIRN_OK; /* appended after pass 1 looked (another handle of this db) */
    if (rec->type == CAIRN_REC_EVENT)
        return t->events.events_max_age_ms | t->events.events_max_bytes
                   ? judge_event(t, rec, verdict)
                   : CAIRN_OK;
    if ((rc = track(t, rec, &what, &k)) != CAIRN_OK)
        return rc;
    if (k != NULL && k->drop && (what == T_PUT || what == T_UPDATE || what == T_END))
        *verdict = what == T_PUT && k->end_kind != END_PURGE_LIVE ? CAIRN__DROP_DEATH
                                                                  : CAIRN__DROP;
    else if (what == T_NONE && names_purged(t, rec))
        *verdict = CAIRN__DROP; /* a record of it replay skips: its text too */
    if (*verdict != CAIRN__KEEP && t->purge != NULL) {
        t->purge_records++;
        t->purge_bytes += rec_bytes(rec);
    }
    return CAIRN_OK;
}

/* A dry run: pass 2 over the whole log, counting. */
static int judge_dry(void *user, const cairn_record *rec)
{
    tracker *t = user;
    int v, rc;
    if (rec->type == CAIRN_REC_COMPACTED) {
        t->dry_prev_drop = 0; /* an earlier hole stays as it is */
        return CAIRN_OK;
    }
    while (t->next_base < t->n_bases && rec->seq >= t->bases[t->next_base]) {
        t->next_base++;
        t->dry_prev_drop = 0;
    }
    if ((rc = judge(user, rec, &v)) != CAIRN_OK)
        return rc;
    if (v != CAIRN__KEEP) {
        t->dry_dropped++;
        t->dry_bytes += rec_bytes(rec);
        t->dry_runs += !t->dry_prev_drop;
    }
    t->dry_prev_drop = v != CAIRN__KEEP;
    for (size_t c = 0; c < t->nanchors && t->dry_prev_drop; c++)
        if (t->anchors[c] == rec->seq)
            t->dry_prev_drop = 0; /* a hole ends at a covered seq (compact.c) */
    if (v != CAIRN__KEEP && t->next_base != t->dry_seg) {
        t->dry_seg = t->next_base; /* a segment with a drop: written anew */
        t->dry_segs++;
    }
    return CAIRN_OK;
}

/* The seqs the index files (and with graph, the graph files) of the store
 * cover. A memory index's pins lives (its reader holds them); every one's
 * is an anchor. */
static int covered_seqs(cairn_mem *m, int graph, uint64_t **out, size_t *n)
{
    const cairn__seqfile_kind *const *kinds = cairn__seqfile_kinds;
    size_t got = 0;
    *out = NULL;
    *n = 0;
    for (int k = 0; k < 1 + 2 * (graph != 0); k++) {
        size_t want, have;
        cairn__err e;
        uint64_t *p;
        int rc = cairn__seqfile_list(kinds[k], m->db->io, m->db->dirfd, NULL, 0, &want, &e);
        if (rc != CAIRN_OK) {
            free(*out);
            *out = NULL;
            return rc;
        }
        p = realloc(*out, (got + want + 1) * sizeof *p);
        if (p == NULL) {
            free(*out);
            *out = NULL;
            return CAIRN_ENOMEM;
        }
        *out = p;
        rc = cairn__seqfile_list(kinds[k], m->db->io, m->db->dirfd, p + got, want, &have, &e);
        if (rc != CAIRN_OK) {
            free(*out);
            *out = NULL;
            return rc;
        }
        got += have < want ? have : want;
    }
    *n = got;
    return CAIRN_OK;
}

/* In the turn of the swap: did a checkpoint write a derived file since the
 * lives were judged? Its reader may hold a life judged free live, or its
 * anchor be a record dropped: then nothing is swapped in (again later). */
#define CHECKPOINT_RACED 1
static int derived_unchanged(void *user)
{
    tracker *t = user;
    uint64_t *now = NULL;
    size_t n = 0;
    int same = 1;
    int rc = covered_seqs(t->m, 1, &now, &n);
    if (rc != CAIRN_OK)
        return cairn__mem_fail(t->m, rc, rc == CAIRN_ENOMEM ? "no memory to compact"
                                                            : "compaction: the MANIFEST could not "
                                                              "be read");
    for (size_t i = 0; i < n && same; i++) {
        /* A file past what pass 1 learnt holds no life judged free live
         * (each ended by then) and covers no record dropped: it does not
         * matter. */
        same = now[i] > t->learned;
        for (size_t k = 0; k < t->nanchors && !same; k++)
            same = now[i] == t->anchors[k];
    }
    free(now);
    return same ? CAIRN_OK : CHECKPOINT_RACED;
}

/* A compaction in the background, just before the swap's turn: the
 * handle's lock, then its turn, in the order its writers take them (the
 * lock is let go while the turn is waited for), so that no checkpoint of
 * the handle runs during the swap (one in this process shares the turn).
 * The caller lets both go (t->held). */
static int swap_enter(void *user)
{
    tracker *t = user;
    char err[CAIRN_ERRMSG_MAX];
    int rc;
    pthread_mutex_lock(&t->hold->mu);
    memcpy(err, cairn__errbuf(t->hold), sizeof err); /* the handle's last message stays */
    rc = cairn__mem_turn_begin(t->hold);
    if (rc == CAIRN_OK && stopped(t)) {
        /* a close asked while this waited for the lock: nothing swapped */
        (void)cairn__mem_turn_end(t->hold, CAIRN_OK);
        rc = CAIRN_ELOCKED;
    }
    memcpy(cairn__errbuf(t->hold), err, sizeof err);
    if (rc != CAIRN_OK) {
        pthread_mutex_unlock(&t->hold->mu);
        return rc;
    }
    t->held = 1;
    return CAIRN_OK;
}

static void swap_leave(tracker *t)
{
    char err[CAIRN_ERRMSG_MAX];
    if (!t->held)
        return;
    memcpy(err, cairn__errbuf(t->hold), sizeof err);
    (void)cairn__mem_turn_end(t->hold, CAIRN_OK);
    memcpy(cairn__errbuf(t->hold), err, sizeof err);
    pthread_mutex_unlock(&t->hold->mu);
    t->held = 0;
}

/* The last seq of the sealed prefix of the log (0: none). */
static uint64_t sealed_upto(cairn_db *db)
{
    view *v = cairn__view_acquire(db);
    uint64_t upto = 0;
    for (size_t i = 0; i < v->m.n && v->m.e[i].kind == SEG_SEALED; i++)
        upto = v->m.e[i].last_seq;
    cairn__view_release(db, v);
    return upto;
}

/* The first seq of every segment (a hole never spans two). */
static int segment_bases(cairn_db *db, uint64_t **out, size_t *n)
{
    view *v = cairn__view_acquire(db);
    *out = malloc((v->m.n + 1) * sizeof **out);
    *n = 0;
    if (*out != NULL)
        for (size_t i = 0; i < v->m.n; i++)
            (*out)[(*n)++] = v->m.e[i].base_seq;
    cairn__view_release(db, v);
    return *out != NULL ? CAIRN_OK : CAIRN_ENOMEM;
}

/* Which lives go. `sealed`: the last seq compaction can drop now. */
static void judge_lives(tracker *t, unsigned retain, uint64_t grace, const uint64_t *cov,
                        size_t ncov, uint64_t sealed, int64_t now)
{
    t->n_drop = t->n_grace = t->n_pinned = t->n_needed = t->n_unsealed = 0;
    for (size_t i = 0; i < t->n; i++) {
        life *x = &t->lv[i];
        int pinned = 0;
        x->drop = 0;
        if (t->purge != NULL) {
            x->drop = strcmp(x->id, t->purge) == 0;
            t->n_drop += x->drop;
            continue;
        }
        if (retain != CAIRN_RETAIN_LIVE || x->end == 0)
            continue;
        if (x->needed || (x->prev != 0 && !t->lv[x->prev - 1].drop)) {
            t->n_needed++;
            continue;
        }
        for (size_t c = 0; c < ncov && !pinned; c++)
            pinned = x->put <= cov[c] && cov[c] < x->end;
        if (x->end_ts > now - (int64_t)grace) {
            t->n_grace++;
        } else if (pinned) {
            t->n_pinned++;
        } else if (x->end <= sealed) {
            x->drop = 1;
            t->n_drop++;
        } else {
            t->n_unsealed++;
        }
    }
}

/* Any life to drop whose records reach past the sealed prefix? */
static int needs_roll(const tracker *t, unsigned retain, uint64_t grace, const uint64_t *cov,
                      size_t ncov, uint64_t sealed, int64_t now)
{
    tracker probe = *t; /* judge_lives only writes drop flags and counts */
    uint64_t before;
    judge_lives(&probe, retain, grace, cov, ncov, UINT64_MAX, now);
    before = probe.n_drop;
    judge_lives(&probe, retain, grace, cov, ncov, sealed, now);
    return probe.n_drop < before;
}

static void tracker_free(tracker *t)
{
    free(t->bases);
    free(t->ev_bytes);
    free(t->ev_dropped);
    free(t->lv);
    free(t->slot);
    for (size_t i = 0; i < t->nns; i++)
        free(t->ns[i]);
    free(t->ns);
    cairn__memscan_free(&t->scan);
}

/* Reset the fold for pass 2 (the lives and their verdicts stay). */
static void tracker_rewind(tracker *t)
{
    t->pass = 2;
    t->next = 0;
    if (t->scap)
        memset(t->slot, 0, t->scap * sizeof *t->slot);
    t->vname[0] = 0;
    t->vdim = 0;
    memset(&t->batch, 0, sizeof t->batch);
    if (t->ev_cap)
        memset(t->ev_dropped, 0, t->ev_cap * sizeof *t->ev_dropped);
    t->ev_n = t->ev_n_bytes = 0;
}

/* The compaction proper, holding the compaction lock (and mu). */
static int compact_turn(cairn_mem *m, tracker *t, int dry_run, int background, const char *why,
                        cairn_compact_report *out)
{
    cairn_config cfg;
    uint64_t *cov = NULL, *anc = NULL, sealed, last;
    size_t ncov = 0, nanc = 0;
    int64_t now = cairn__mem_wall_ms();
    cairn__compact_result res;
    int rc, roll, stacked;

    if ((rc = cairn_config_get(m->db, &cfg)) != CAIRN_OK)
        return cairn__mem_fail(m, rc, "%s", cairn_errmsg(m->db));
    out->retain = cfg.retain;
    t->events = cfg.retain;
    t->now = now;
    t->event_upto = UINT64_MAX; /* the compaction sees the sealed prefix only */
    out->dry_run = dry_run;
    /* Before anything changes (a roll and its seal change the bytes). */
    cairn__compact_totals(m->db, &out->records_before, &out->bytes_before);
    out->records_after = out->records_before;
    out->bytes_after = out->bytes_before;
    if (t->purge != NULL) /* a purge drops no event */
        t->events.events_max_age_ms = t->events.events_max_bytes = 0;
    if (t->purge == NULL && cfg.retain.memories == CAIRN_RETAIN_ALL &&
        cfg.retain.events_max_age_ms == 0 && cfg.retain.events_max_bytes == 0 && !dry_run)
        return CAIRN_OK; /* nothing to drop: only the figures */
    /* Every index file pins the lives it holds live (a reader may fold from
     * it alone), and a whole file under generations may be old: fold the
     * generations into one whole file first, so that the pins are those of
     * now (a dry run reports as if it had). */
    stacked = t->purge == NULL && cfg.retain.memories == CAIRN_RETAIN_LIVE && !background;
    if (stacked) {
        size_t files;
        cairn__err e;
        rc = cairn__seqfile_list(&cairn__seqfile_memindex, m->db->io, m->db->dirfd, NULL, 0, &files,
                                 &e);
        if (rc != CAIRN_OK)
            return cairn__mem_fail(m, rc, "%s", e.msg);
        stacked = files > 1;
    }
    if (stacked && !dry_run && (rc = cairn__mem_checkpoint_whole(m)) != CAIRN_OK)
        return rc;
    if ((rc = cairn__db_refresh(m->db)) != CAIRN_OK) /* the log as it is now */
        return cairn__mem_fail(m, rc, "%s", cairn_errmsg(m->db));
    last = cairn__handed_seq(m->db);
    t->m = m;
    t->pass = 1;
    t->learned = last;
    rc = cairn__each_record(m->db, 1, last, learn, t);
    if (rc == LEARN_STOP)
        rc = CAIRN_OK;
    if (rc != CAIRN_OK)
        return cairn__errbuf(m)[0] ? rc : cairn__mem_fail(m, rc, "compaction: %s", cairn_errmsg(m->db));
    if ((rc = covered_seqs(m, 0, &cov, &ncov)) != CAIRN_OK ||
        (rc = covered_seqs(m, 1, &anc, &nanc)) != CAIRN_OK) {
        free(cov);
        free(anc);
        return cairn__mem_fail(m, rc, "no memory to compact");
    }
    if (stacked && dry_run && ncov > 0) {
        cov[0] = last; /* the whole file a real run writes first */
        ncov = 1;
    }
    sealed = sealed_upto(m->db);
    /* In the background, only what is sealed already: the segment rolls
     * when it is full. */
    roll = !background &&
           needs_roll(t, cfg.retain.memories, cfg.retain.grace_ms, cov, ncov, sealed, now);
    if (!dry_run && roll) {
        /* Its records are in the active segment: close it and seal it. */
        if ((rc = cairn_roll(m->db)) == CAIRN_OK)
            rc = cairn_seal(m->db);
        if (rc != CAIRN_OK) {
            free(cov);
            free(anc);
            return cairn__mem_fail(m, rc, "compaction: %s", cairn_errmsg(m->db));
        }
        out->rolled = 1;
        sealed = sealed_upto(m->db);
    }
    judge_lives(t, cfg.retain.memories, cfg.retain.grace_ms, cov, ncov,
                dry_run ? UINT64_MAX : sealed, now);
    out->memories_dropped = t->n_drop;
    out->memories_in_grace = t->n_grace;
    out->memories_pinned = t->n_pinned;
    out->memories_needed = t->n_needed;
    t->cov = cov;
    t->ncov = ncov;
    t->anchors = anc;
    t->nanchors = nanc;
    tracker_rewind(t);
    if (dry_run) {
        /* Bytes after: those dropped, at the compression of the rest. */
        int events = (t->events.events_max_age_ms | t->events.events_max_bytes) != 0;
        /* Events in the active segment stay: compaction rolls it only for
         * memories, and then they are sealed with it. */
        t->event_upto = roll ? UINT64_MAX : sealed;
        if ((t->n_drop > 0 || events) &&
            (rc = segment_bases(m->db, &t->bases, &t->n_bases)) != CAIRN_OK) {
            free(cov);
            free(anc);
            return cairn__mem_fail(m, rc, "no memory to compact");
        }
        if ((t->n_drop > 0 || events) &&
            (rc = cairn__each_record(m->db, 1, last, judge_dry, t)) != CAIRN_OK) {
            free(cov);
            free(anc);
            return cairn__errbuf(m)[0] ? rc : cairn__mem_fail(m, rc, "compaction: %s", cairn_errmsg(m->db));
        }
        out->records_after = out->records_before - t->dry_dropped + t->dry_runs;
        out->dropped = t->dry_dropped;
        out->dropped_bytes = t->dry_bytes;
        out->events_dropped = t->ev_n;
        out->events_dropped_bytes = t->ev_n_bytes;
        {
            /* Dropped raw bytes at the compression the files have. */
            cairn_stats st;
            double ratio = cairn_stats_get(m->db, &st) == CAIRN_OK && st.log_bytes > 0
                               ? (double)out->bytes_before / (double)st.log_bytes
                               : 1.0;
            uint64_t less = (uint64_t)((double)t->dry_bytes * ratio);
            out->bytes_after = out->bytes_before > less ? out->bytes_before - less : 0;
        }
        out->rewritten = t->dry_segs;
        free(cov);
        free(anc);
        return CAIRN_OK;
    }
    /* A purge drops its records whatever the derived files: a checkpoint
     * meanwhile is written anew after it anyway. */
    rc = cairn__compact(m->db, why, 0, anc, nanc, judge, background ? swap_enter : NULL,
                        t->purge ? NULL : derived_unchanged, t, t->stop, &res);
    free(cov);
    free(anc);
    if (rc == CHECKPOINT_RACED)
        return rc; /* the caller tries again */
    if (rc != CAIRN_OK)
        return cairn__errbuf(m)[0] ? rc : cairn__mem_fail(m, rc, "compaction: %s", cairn_errmsg(m->db));
    out->segments = res.segments;
    out->rewritten = res.rewritten;
    out->records_after = res.records_after;
    out->bytes_after = res.bytes_after;
    out->dropped = res.dropped;
    out->dropped_bytes = res.dropped_bytes;
    out->events_dropped = t->ev_n;
    out->events_dropped_bytes = t->ev_n_bytes;
    return CAIRN_OK;
}

int cairn_mem_compact(cairn_mem *m, int dry_run, cairn_compact_report *out)
{
    tracker t;
    char why[128], pol[96];
    cairn_config cfg;
    int rc;

    memset(out, 0, sizeof *out);
    memset(&cfg, 0, sizeof cfg);
    /* The handle's own compaction in the background gives way. */
    if (!dry_run)
        cairn__merger_hold(m->merger);
    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    if (m->db->read_only) {
        rc = cairn__mem_fail(m, CAIRN_EPERM, "a read-only handle cannot compact");
        pthread_mutex_unlock(&m->mu);
        if (!dry_run)
            cairn__merger_release(m->merger);
        return rc;
    }
    /* No turn: other writers go on; one turn swaps the files in. */
    if (!dry_run && (rc = cairn__compact_lock(m->db, 1)) != CAIRN_OK) {
        rc = cairn__mem_fail(m, rc, "%s", cairn_errmsg(m->db));
        pthread_mutex_unlock(&m->mu);
        cairn__merger_release(m->merger);
        return rc;
    }
    rc = cairn_config_get(m->db, &cfg);
    cairn_retain_format(&cfg.retain, pol, sizeof pol);
    snprintf(why, sizeof why, "retain %s", pol);
    for (int attempt = 0; rc == CAIRN_OK; attempt++) {
        memset(&t, 0, sizeof t);
        memset(out, 0, sizeof *out);
        rc = compact_turn(m, &t, dry_run, 0, why, out);
        tracker_free(&t);
        if (rc != CHECKPOINT_RACED)
            break;
        rc = attempt < 3 ? CAIRN_OK
                         : cairn__mem_fail(m, CAIRN_ELOCKED, "checkpoints kept being written "
                                           "while compacting; nothing was changed; try again");
    }
    if (rc != CAIRN_OK && cairn__errbuf(m)[0] == 0)
        rc = cairn__mem_fail(m, rc, "%s", cairn_errmsg(m->db));
    if (!dry_run)
        (void)cairn__compact_lock(m->db, 0);
    if (rc == CAIRN_OK)
        rc = cairn__mem_catch_up(m); /* what others wrote meanwhile */
    pthread_mutex_unlock(&m->mu);
    if (!dry_run)
        cairn__merger_release(m->merger);
    return rc;
}

/* ---- compaction in the background ---------------------------------------- */

int cairn__compact_due(const cairn_retention *r, const cairn__compact_look *now,
                       const cairn__compact_pace *p)
{
    uint64_t step;
    if (r->memories == CAIRN_RETAIN_LIVE) {
        step = now->live / 4 > COMPACT_MIN_GONE ? now->live / 4 : COMPACT_MIN_GONE;
        if (now->gone >= p->gone + step)
            return 1;
        /* those the last one had to keep for a record not sealed yet or
         * an index file that held them, once the log or the files moved */
        if (p->pending >= step && (now->sealed > p->sealed || now->covered > p->covered))
            return 1;
    }
    if (r->events_max_age_ms != 0 || r->events_max_bytes != 0) {
        step = p->log_bytes / 4 > now->segment_size ? p->log_bytes / 4 : now->segment_size;
        if (now->log_bytes >= p->log_bytes + step)
            return 1;
    }
    return 0;
}

/* What the pace compares: the memories gone whose records the log may
 * still hold (every death the handle knows, less those compaction
 * dropped), the live ones, the log's bytes, the end of its sealed prefix,
 * and the newest index file. */
static void pace_now(cairn_mem *m, const cairn_config *cfg, cairn__compact_look *now)
{
    uint64_t dropped, records;
    (void)cairn__db_refresh(m->db); /* another process's compaction counts */
    dropped = cairn__deaths_dropped(m->db);
    memset(now, 0, sizeof *now);
    pthread_mutex_lock(&m->mu);
    now->gone = cairn__mem_gone(m);
    now->live = cairn__mem_live(m);
    now->covered = cairn__mem_index_covered(m);
    pthread_mutex_unlock(&m->mu);
    now->gone = now->gone > dropped ? now->gone - dropped : 0;
    cairn__compact_totals(m->db, &records, &now->log_bytes);
    now->sealed = sealed_upto(m->db);
    now->segment_size = cfg != NULL ? cfg->segment_size : 0;
}

void cairn__compact_pace_init(cairn_mem *m, cairn__compact_pace *p)
{
    cairn__compact_look now;
    cairn_config cfg;
    memset(p, 0, sizeof *p);
    /* The memories gone before count (gone from 0); events only as the
     * log grows from here (their ages are not known without a scan). A
     * policy that keeps everything needs no look (one set later counts
     * the log from 0). */
    if (cairn_config_get(m->db, &cfg) != CAIRN_OK ||
        (cfg.retain.memories == CAIRN_RETAIN_ALL && cfg.retain.events_max_age_ms == 0 &&
         cfg.retain.events_max_bytes == 0))
        return;
    pace_now(m, &cfg, &now);
    p->log_bytes = now.log_bytes;
}

int cairn__mem_compact_step(cairn_mem *m, cairn__compact_pace *p, const int *stop)
{
    cairn_config cfg;
    cairn_compact_report rep;
    cairn__compact_look now;
    cairn_mem *s;
    tracker t;
    char why[128], pol[96];
    uint64_t pending = 0, in_grace = 0;
    int rc;

    if (cairn_config_get(m->db, &cfg) != CAIRN_OK)
        return 0; /* tried again at the next kick */
    if (cfg.retain.memories == CAIRN_RETAIN_ALL && cfg.retain.events_max_age_ms == 0 &&
        cfg.retain.events_max_bytes == 0)
        return 0; /* the policy keeps everything */
    pace_now(m, &cfg, &now);
    if (!cairn__compact_due(&cfg.retain, &now, p) &&
        (p->retry_ms == 0 || cairn__mem_wall_ms() < p->retry_ms))
        return 0;
    /* Tried now, whatever comes of it: the next try waits for as much new
     * work again. */
    p->retry_ms = 0;
    p->gone = now.gone;
    p->log_bytes = now.log_bytes;
    p->pending = 0;
    p->sealed = now.sealed;
    p->covered = now.covered;
    if (cairn__compact_lock(m->db, 1) != CAIRN_OK)
        return 0; /* another runs (a user's, another process's): its work is done */
    /* The index files pin the lives they hold live: a whole file of what
     * the files hold now pins only those live now (its failure only keeps
     * more). */
    if (cfg.retain.memories == CAIRN_RETAIN_LIVE) {
        size_t files = 0;
        cairn__err e;
        if (cairn__seqfile_list(&cairn__seqfile_memindex, m->db->io, m->db->dirfd, NULL, 0, &files,
                                &e) == CAIRN_OK &&
            files > 1)
            (void)cairn__mem_merge_whole(m, stop);
    }
    /* What is full is sealed first (the sealer may lag behind): only the
     * sealed prefix of the log is compacted. */
    (void)cairn_seal(m->db);
    /* A state of its own: the compaction reads the log alone, and the
     * handle's lock is taken only for the swap. */
    if ((s = calloc(1, sizeof *s)) == NULL) {
        (void)cairn__compact_lock(m->db, 0);
        return CAIRN_ENOMEM;
    }
    s->db = m->db;
    pthread_mutex_init(&s->mu, NULL);
    cairn_retain_format(&cfg.retain, pol, sizeof pol);
    snprintf(why, sizeof why, "retain %s", pol);
    for (int attempt = 0;; attempt++) {
        memset(&t, 0, sizeof t);
        memset(&rep, 0, sizeof rep);
        t.stop = stop;
        t.hold = m;
        rc = compact_turn(s, &t, 0, 1, why, &rep);
        swap_leave(&t);
        pending = t.n_pinned + t.n_unsealed;
        in_grace = t.n_grace;
        tracker_free(&t);
        if (rc != CHECKPOINT_RACED || attempt >= 2)
            break;
    }
    if (rc == CHECKPOINT_RACED)
        rc = CAIRN_ELOCKED; /* tried again after as much new work */
    (void)cairn__compact_lock(m->db, 0);
    pthread_mutex_destroy(&s->mu);
    free(s);
    pace_now(m, &cfg, &now);
    p->gone = now.gone;
    p->log_bytes = now.log_bytes;
    p->runs++;
    p->last_rc = rc;
    if (rc == CAIRN_OK) {
        p->dropped += rep.dropped;
        p->pending = pending;
        p->sealed = now.sealed;
        p->covered = now.covered;
    }
    /* Many kept only for their grace period: again once it is over (the
     * idle look sees the time come). */
    if (rc == CAIRN_OK && in_grace >= COMPACT_MIN_GONE)
        p->retry_ms = cairn__mem_wall_ms() + (int64_t)cfg.retain.grace_ms;
    return rc == CAIRN_OK ? 1 : rc;
}

/* The purge marker (mu held, in a turn): kills the memory if live; with
 * the embedder its vector fixed, if it did (format-spec/memory.md). */
static int write_marker(cairn_mem *m, const char *id, const char *embedder, uint32_t dim,
                        cairn_purge_report *out)
{
    ment *x = cairn__mem_find_id(m, id);
    const char *ns = "";
    memrec r;
    memset(&r, 0, sizeof r);
    r.type = CAIRN_REC_MEMORY_PURGE;
    r.id = id;
    r.accessed_at = cairn__mem_wall_ms();
    r.purge_live = x != NULL;
    r.embedder = embedder;
    r.dim = dim;
    out->was_live = x != NULL;
    if (x != NULL)
        ns = m->ns[x->nsi].name;
    return cairn__mem_write_rec(m, ns, &r, &out->marker_seq);
}

/* A purge whose records went already (an earlier purge whose index file
 * write failed): only the index file is written anew. */
#define PURGED_BEFORE 1

int cairn_mem_purge(cairn_mem *m, const char *id, cairn_purge_report *out)
{
    tracker t;
    cairn_compact_report rep;
    char why[64], vname[CAIRN_EMBEDDER_NAME_MAX + 1] = "";
    uint32_t vdim = 0;
    int rc;

    memset(out, 0, sizeof *out);
    memset(&t, 0, sizeof t);
    memset(&rep, 0, sizeof rep);
    if (id == NULL || !cairn__memrec_id_ok(id)) {
        pthread_mutex_lock(&m->mu);
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "not a memory id: %s", id ? id : "(null)");
        pthread_mutex_unlock(&m->mu);
        return rc;
    }
    cairn__merger_hold(m->merger); /* the handle's own compaction gives way */
    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    /* views left by --as-of processes that are gone keep the bytes as hard
     * links: away with them (a live one's goes when its command ends) */
    (void)cairn__views_sweep(m->db, 0);
    if ((rc = cairn__compact_lock(m->db, 1)) != CAIRN_OK) {
        rc = cairn__mem_fail(m, rc, "%s", cairn_errmsg(m->db));
        pthread_mutex_unlock(&m->mu);
        cairn__merger_release(m->merger);
        return rc;
    }
    if ((rc = cairn__mem_turn_begin(m)) != CAIRN_OK) {
        (void)cairn__compact_lock(m->db, 0);
        pthread_mutex_unlock(&m->mu);
        cairn__merger_release(m->merger);
        return rc;
    }
    /* Is there anything of it? (A fold of the lives answers that too, but
     * the marker must come first: it ends the memory everywhere before
     * its records go.) */
    t.m = m;
    t.pass = 1;
    t.purge = id;
    rc = cairn__each_record(m->db, 1, cairn__handed_seq(m->db), learn_purge, &t);
    if (rc == LEARN_STOP)
        rc = CAIRN_OK; /* in a turn: cannot be, but a stop is no error */
    if (rc == CAIRN_OK && t.purge_named == 0 && !t.purge_marked)
        rc = cairn__mem_fail(m, CAIRN_ENOTFOUND, "the log holds no memory %s", id);
    else if (rc == CAIRN_OK && t.purge_named == 0)
        rc = PURGED_BEFORE; /* its records went: the index file may still hold it */
    if (t.vfix != 0 && strcmp(t.lv[t.vfix - 1].id, id) == 0) {
        snprintf(vname, sizeof vname, "%s", t.vname); /* it fixed the embedder */
        vdim = t.vdim;
    }
    tracker_free(&t);
    memset(&t, 0, sizeof t);
    if (rc == CAIRN_OK && (rc = cairn__mem_access_fold(m)) == CAIRN_OK)
        rc = write_marker(m, id, vname[0] ? vname : NULL, vdim, out);
    /* No hash of the purged content stays in KEYS: the file goes, and the
     * next writer that needs it makes it anew (format-spec/keys.md). */
    if (rc == CAIRN_OK) {
        if (m->keys.fixed) {
            cairn__memkeys_detach(&m->keys);
            m->keyed = 0;
        }
        rc = cairn__keyfile_remove(&m->kf, m->db);
    }
    /* The marker is in the log: the memory is gone for every reader. Its
     * records go outside the turn (other writers go on). */
    rc = cairn__mem_turn_end(m, rc);
    if (rc == CAIRN_OK && (rc = cairn_roll(m->db)) == CAIRN_OK &&
        (rc = cairn_seal(m->db)) == CAIRN_OK) {
        t.purge = id;
        snprintf(why, sizeof why, "purge %s", id);
        rc = compact_turn(m, &t, 0, 0, why, &rep);
    } else if (rc != CAIRN_OK && rc != PURGED_BEFORE && cairn__errbuf(m)[0] == 0) {
        rc = cairn__mem_fail(m, rc, "purge: %s", cairn_errmsg(m->db));
    }
    if (rc == PURGED_BEFORE)
        rc = CAIRN_OK; /* again: the index file is written anew below */
    out->records = t.purge_records;
    out->bytes = t.purge_bytes;
    out->segments = rep.rewritten;
    tracker_free(&t);
    (void)cairn__compact_lock(m->db, 0);
    if (rc == CAIRN_OK)
        rc = cairn__mem_catch_up(m);
    /* The index files may hold its text: write one whole file anew without
     * it (the older files go). */
    if (rc == CAIRN_OK && (rc = cairn__mem_checkpoint_whole(m)) != CAIRN_OK) {
        char why_not[CAIRN_ERRMSG_MAX];
        snprintf(why_not, sizeof why_not, "%s", cairn__errbuf(m));
        rc = cairn__mem_fail(m, rc, "purged from the log, but writing the memory index anew "
                             "failed (it may still hold the memory's text; purge again): %s",
                             why_not);
    }
    pthread_mutex_unlock(&m->mu);
    cairn__merger_release(m->merger);
    return rc;
}
