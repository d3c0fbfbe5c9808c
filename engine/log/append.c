/*
 * append.c - the write path: encoding into the write buffer, writing it to
 * the active segment, group commit, rolling to a new segment, sealing closed
 * segments, and the background thread that does the periodic work.
 *
 * Durability (README "Durability"):
 *  - every mode: records are encoded into an in-memory buffer under `mu` and
 *    written to the segment file when the buffer fills, when a commit needs
 *    it, every batch_ms (background thread), and at flush/sync/close;
 *  - full: an append writes the buffer and waits until an fdatasync that
 *    started after its write has finished. Concurrent appenders share that
 *    fdatasync: the first waiter becomes the leader and syncs everything
 *    written so far while the others sleep on a wait word (a futex), from
 *    which those it covered return without taking `mu` again (group commit);
 *  - batch: the background thread writes and fdatasyncs every batch_ms;
 *  - none: written every batch_ms, never fsynced except at roll and close.
 * A failed write or fsync kills the handle (CAIRN_EDEAD afterwards): after
 * a failed fsync the kernel may have dropped the dirty pages, so no retry
 * could be trusted. Reopening recovers the valid prefix. The first error a
 * caller sees names the cause: when deferred work (the background threads,
 * a seal after a roll or at open, a checkpoint at close) met the failure,
 * the next call reports its status (a full disk: CAIRN_EFULL) before any
 * CAIRN_EDEAD.
 *
 * Roll: fdatasync the full segment, create the next one (header, fsync,
 * directory fsync), then swap in a manifest that lists the old one as CLOSED
 * and the new one as ACTIVE. Nothing is appended to the new file before the
 * manifest names it, so a crash in between leaves an orphan header that the
 * next open deletes. Sealing runs outside `mu` and swaps the manifest again.
 */
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "alloc.h"
#include "bytes.h"
#include "head.h"
#include "io.h"
#include "record.h"

/* Set while this thread runs work whose caller drops its error: the
 * background threads, the seal after a roll and at open, a checkpoint at
 * close (cairn__deferred_begin). */
static _Thread_local int deferred;

int cairn__deferred_begin(void)
{
    int was = deferred;
    deferred = 1;
    return was;
}

void cairn__deferred_end(int was)
{
    deferred = was;
}

/* mu held. */
static int kill_handle(cairn_db *db, int rc, const cairn__err *e)
{
    if (!db->dead) {
        db->dead = rc;
        /* Nobody will be told of a failure deferred work met: the next
         * call that finds the handle dead reports it (cairn__check_writable). */
        db->dead_untold = deferred;
        snprintf(db->dead_msg, sizeof db->dead_msg, "%s",
                 e != NULL && e->msg[0] ? e->msg : cairn_strerror(rc));
    }
    pthread_cond_broadcast(&db->sync_cv);
    cairn__waitword_bump(&db->synced);
    /* A dead handle writes no more: other processes need not wait for it
     * (the lock goes now if no call of this handle is in a turn, else at
     * the end of that call). */
    cairn__turn_release(db);
    return cairn__db_fail(db, rc, e);
}

/* mu held. A failure that killed the handle is reported once with its own
 * status (a full disk: CAIRN_EFULL) by the first call to find the handle
 * dead when deferred work met it and no caller was told; CAIRN_EDEAD
 * afterwards, and whenever the caller that met it got its status. */
int cairn__check_writable(cairn_db *db)
{
    if (db->read_only)
        return cairn__db_failf(db, CAIRN_EPERM, "handle is read-only");
    if (db->dead && db->dead_untold) {
        if (!deferred)
            db->dead_untold = 0;
        return cairn__db_failf(db, db->dead, "%s (met earlier by work no call waited for; "
                                             "this handle can write no more: reopen the store)",
                               db->dead_msg);
    }
    if (db->dead)
        return cairn__db_failf(db, CAIRN_EDEAD, "handle failed earlier (%s); reopen the store",
                               cairn_strerror(db->dead));
    return CAIRN_OK;
}

/* Truncate the active segment to wbuf_off, which frees the blocks reserved
 * past it. wbuf_off is the file's size only before the buffer is written
 * or after a flush: call it then. A failure only leaves them reserved. */
static void trim_to_size(cairn_db *db)
{
    cairn__err e;
    (void)cairn__io_truncate(db->io, "segment.trim", db->act->log.fd, db->wbuf_off,
                             db->act->log.name, &e);
}

void cairn__trim_reserved(cairn_db *db)
{
    /* Whether or not this handle reserved: a writer killed earlier may
     * have left a reservation behind. Only in a turn: then wbuf_off is the
     * log's end, past which no other process has written. */
    if (db->wbuf_len == 0 && !db->dead && db->turn_held)
        trim_to_size(db);
}

int cairn__flush_locked(cairn_db *db)
{
    cairn__err e;
    int rc;

    if (db->read_only || db->wbuf_len == 0)
        return CAIRN_OK;
    if (db->dead)
        return cairn__check_writable(db);
    if (!db->act_reserve_tried) {
        /* Reserve the segment's space once, up to where it rolls: the file
         * keeps few extents and an fdatasync that crosses into a new block
         * has no allocation to write (group commit's groups cross one
         * nearly every time). The file size, all readers see, is unchanged.
         * A failure may have taken part of the space (ENOSPC): give it back
         * at once, while nothing of the buffer is written. */
        db->act_reserve_tried = 1;
        if (db->wbuf_off + db->wbuf_len < db->segment_size &&
            cairn__io_reserve(db->io, "segment.reserve", db->act->log.fd, db->wbuf_off,
                              db->segment_size - db->wbuf_off) < 0)
            trim_to_size(db);
    }
    rc = cairn__io_write(db->io, "segment.append", db->act->log.fd, db->wbuf, db->wbuf_len,
                         db->wbuf_off, db->act->log.name, &e);
    if (rc != CAIRN_OK)
        return kill_handle(db, rc, &e);
    if (db->own_seg != db->act->id) {
        db->own_seg = db->act->id;
        db->own_bytes = 0;
    }
    db->own_bytes += db->wbuf_len;
    db->wbuf_off += db->wbuf_len;
    db->wbuf_len = 0;
    db->written_seq = db->next_seq - 1;
    db->last_flush_ms = cairn__now_ms();
    return CAIRN_OK;
}

static int64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Group commit, the leader's side: before it syncs, give appenders already
 * on their way (counted in `appenders`, whether they hold mu yet or not) a
 * bounded moment to add their records, so one fdatasync covers them too.
 * The wait is at most half the last fdatasync's duration (and 1 ms), and
 * none at all for a lone writer. (PostgreSQL's commit_delay, adaptive.)
 * `self` is 1 when the leader is not counted in sync_waiters. */
static void commit_delay(cairn_db *db, int self)
{
    int64_t wait_ns = db->last_sync_ns / 2, until;
    struct timespec ts;
    int want;

    /* Wait for everyone inside cairn_append, and for all the threads seen
     * when the last sync ended: those it released are on their way back
     * but not yet counted in `appenders`. */
    want = atomic_load(&db->appenders);
    if (want < db->writers_seen)
        want = db->writers_seen;
    if (wait_ns > 1000000)
        wait_ns = 1000000;
    if (wait_ns <= 0 || want <= db->sync_waiters + self)
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    until = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + wait_ns;
    ts.tv_sec = (time_t)(until / 1000000000);
    ts.tv_nsec = (long)(until % 1000000000);
    /* Waiters wake the leader only when the group is complete: a wakeup
     * per arrival costs more CPU than the wait saves. */
    db->delay_want = want - self;
    while (db->sync_waiters < db->delay_want && !db->dead) {
        if (pthread_cond_timedwait(&db->append_cv, &db->mu, &ts) != 0)
            break; /* time is up */
        if (atomic_load(&db->appenders) - self > db->delay_want)
            db->delay_want = atomic_load(&db->appenders) - self;
    }
    db->delay_want = 0;
}

/* Wait until every record up to `target` is fdatasynced (mu held). The
 * first thread to find no sync running leads one: it flushes the write
 * buffer, so every record encoded so far is in its group, and fdatasyncs
 * without mu. Threads arriving meanwhile count themselves in sync_waiters
 * (the next group) and sleep on `synced` without mu. When a sync ends, the
 * ones it covered leave at once; with `released` non-NULL they leave
 * without taking mu again (*released = 1: the caller must not unlock it),
 * which keeps sixteen writers from queueing on mu after every sync. */
static int commit_wait(cairn_db *db, uint64_t target, int *released)
{
    int counted = 0; /* this thread is in sync_waiters */

    while (atomic_load(&db->durable_seq) < target) {
        if (db->dead)
            return cairn__check_writable(db);
        if (!db->syncing) {
            seg_ref *s;
            uint64_t upto;
            int64_t t0;
            cairn__err e;
            int rc;
            db->syncing = 1;
            commit_delay(db, counted ? 0 : 1);
            rc = cairn__flush_locked(db);
            if (rc != CAIRN_OK) {
                db->syncing = 0;
                return rc; /* the handle is dead; waiters see it */
            }
            db->sync_waiters = 0; /* everyone counted is in this group */
            /* The group is in the file: other processes may write after it
             * while this one syncs (the fdatasync covers the file). */
            cairn__turn_release(db);
            s = db->act;
            upto = db->written_seq;
            atomic_fetch_add(&s->refs, 1);
            pthread_mutex_unlock(&db->mu);
            t0 = mono_ns();
            rc = cairn__io_fdatasync(db->io, "segment.fdatasync", s->log.fd, s->log.name, &e);
            t0 = mono_ns() - t0;
            pthread_mutex_lock(&db->mu);
            cairn__seg_release(db, s);
            db->syncing = 0;
            db->last_sync_ns = t0;
            /* Right now every thread appending in full mode is inside
             * cairn_append: the group just synced has not left yet, the
             * next one is waiting. */
            db->writers_seen = atomic_load(&db->appenders);
            if (rc != CAIRN_OK)
                return kill_handle(db, rc, &e);
            if (upto > atomic_load(&db->durable_seq))
                atomic_store(&db->durable_seq, upto);
            cairn__waitword_bump(&db->synced);
            pthread_cond_broadcast(&db->sync_cv); /* a roll waiting for !syncing */
        } else {
            uint32_t seen = cairn__waitword_load(&db->synced);
            if (!counted) {
                db->sync_waiters++;
                counted = 1;
                if (db->delay_want != 0 && db->sync_waiters >= db->delay_want)
                    pthread_cond_signal(&db->append_cv); /* the group is complete */
            }
            pthread_mutex_unlock(&db->mu);
            cairn__waitword_wait(&db->synced, seen);
            if (released != NULL && atomic_load(&db->durable_seq) >= target) {
                *released = 1;
                return CAIRN_OK;
            }
            pthread_mutex_lock(&db->mu);
            /* Not covered: this thread arrived after the flush of the sync
             * that ended, and sync_waiters already counts it for the next. */
        }
    }
    return CAIRN_OK;
}

/* Close the active segment and start the next one (mu held). The next
 * segment's first sequence number is at least seq_floor. */
static int roll_locked(cairn_db *db, uint64_t seq_floor)
{
    seg_ref *old, *nseg = NULL;
    view *cur, *nv = NULL;
    manifest m;
    manifest_entry *x;
    seg_ref **segs = NULL;
    cairn__err e;
    int rc;

    /* Let a group-commit leader finish first, and sync a segment an
     * earlier roll left unsynced (rolls outpaced the background thread).
     * Both release mu, so another thread may append or roll meanwhile:
     * read the state only once neither is needed. */
    for (;;) {
        while (db->syncing)
            pthread_cond_wait(&db->sync_cv, &db->mu);
        if (db->dead)
            return cairn__check_writable(db);
        if (db->closed_unsynced == NULL)
            break;
        rc = cairn__sync_closed(db);
        if (rc != CAIRN_OK)
            return rc;
    }
    old = db->act;
    cur = db->view;
    if (old->log.n == 0 && seq_floor <= db->next_seq)
        return CAIRN_OK;
    rc = cairn__flush_locked(db);
    if (rc != CAIRN_OK)
        return rc;
    if (db->durability == CAIRN_DURABILITY_FULL) {
        /* Group-commit waiters may be owed records in this segment. */
        rc = cairn__io_fdatasync(db->io, "roll.fdatasync", old->log.fd, old->log.name, &e);
        if (rc != CAIRN_OK)
            return kill_handle(db, rc, &e);
        old->closed_synced = 1;
        /* This sync covered every group-commit waiter: none is counted for
         * the next group any more. */
        db->sync_waiters = 0;
        atomic_store(&db->durable_seq, db->written_seq);
        cairn__waitword_bump(&db->synced);
    }
    if (seq_floor > db->next_seq)
        db->next_seq = seq_floor; /* numbers of records set aside are never reused */

    nseg = cairn__calloc(db->a, 1, sizeof *nseg);
    if (nseg == NULL)
        return cairn__db_failf(db, CAIRN_ENOMEM, "no memory to roll");
    atomic_init(&nseg->refs, 1);
    rc = cairn__logseg_create(db->io, db->dirfd, &nseg->log, cur->m.next_id,
                              cairn__random_salt(), db->next_seq, cairn__now_ms(), &e);
    if (rc != CAIRN_OK) {
        cairn__free(db->a, nseg);
        /* Nothing changed: the old segment stays active. */
        return cairn__db_fail(db, rc, &e);
    }
    nseg->id = nseg->log.id;
    nseg->log_file_size = nseg->log.end;
    /* Size the record index like the segment before, so appends do not pay
     * for doubling it (a failure only means it grows on demand). */
    (void)cairn__logseg_index_reserve(db->a, &nseg->log, old->log.n + old->log.n / 8);

    rc = cairn__manifest_copy(&cur->m, db->a, &m);
    if (rc == CAIRN_OK) {
        x = cairn__realloc(db->a, m.e, (m.n + 1) * sizeof *m.e);
        if (x == NULL)
            rc = CAIRN_ENOMEM;
        else
            m.e = x;
    }
    if (rc != CAIRN_OK) {
        cairn__manifest_free(db->a, &m);
        cairn__seg_release(db, nseg);
        db->io->unlinkat(db->io->user, "roll.cleanup", db->dirfd, nseg->log.name);
        return cairn__db_failf(db, CAIRN_ENOMEM, "no memory to roll");
    }
    x = &m.e[m.n - 1];
    x->kind = SEG_CLOSED;
    x->count = old->log.n;
    x->last_seq = old->log.base_seq + old->log.n - 1;
    x->first_ts = old->log.n ? old->log.ts[0] : 0;
    x->last_ts = old->log.n ? old->log.ts[old->log.n - 1] : 0;
    x = &m.e[m.n];
    memset(x, 0, sizeof *x);
    x->id = nseg->id;
    x->kind = SEG_ACTIVE;
    x->base_seq = db->next_seq;
    m.n++;
    m.next_id++;
    m.generation++;
    rc = cairn__db_manifest_write(db, &m, &e);
    if (rc != CAIRN_OK) {
        /* The rename may or may not have happened: only a reopen knows. */
        cairn__manifest_free(db->a, &m);
        cairn__seg_release(db, nseg);
        return kill_handle(db, rc, &e);
    }
    segs = cairn__calloc(db->a, m.n, sizeof *segs);
    if (segs != NULL) {
        memcpy(segs, cur->segs, (m.n - 1) * sizeof *segs);
        segs[m.n - 1] = nseg;
        rc = cairn__view_make(db, &m, segs, &nv);
    }
    cairn__free(db->a, segs);
    cairn__manifest_free(db->a, &m);
    cairn__seg_release(db, nseg); /* the view holds it now */
    if (segs == NULL || rc != CAIRN_OK)
        return kill_handle(db, CAIRN_ENOMEM, NULL);
    cairn__view_publish(db, nv);
    /* Give back what the closed segment has reserved past its end (an early
     * roll leaves most of it). Only now: a roll past damage set aside at
     * open must record the sequence floor in the MANIFEST before the
     * damaged tail is cut (cairn_open). */
    cairn__trim_reserved(db);
    if (db->durability == CAIRN_DURABILITY_BATCH) {
        /* No 64 MiB fdatasync on the append path: the flusher syncs the
         * closed segment within batch_ms (cairn_sync and close do it at
         * once). In `none` nobody does: its seal makes it durable, or
         * cairn_sync / close (cairn__sync_unsealed). A power loss before
         * then leaves it with a torn tail, which writer recovery accepts
         * (format-spec/segment.md). */
        atomic_fetch_add(&old->refs, 1);
        db->closed_unsynced = old;
    }
    atomic_fetch_add(&nseg->refs, 1); /* the handle's own, as for every db->act */
    cairn__seg_release(db, old);
    db->act = nseg;
    db->wbuf_off = nseg->log.end;
    db->act_reserve_tried = 0;
    db->seal_pending = 1;
    pthread_cond_signal(&db->bg_cv);
    pthread_cond_signal(&db->seal_cv);
    return CAIRN_OK;
}

static int seal_one_turn(cairn_db *db, uint64_t id);

/* Set on the sealer thread: its seals are catch-up work beside the
 * appenders, and do not split their compression over another thread (a
 * seal a caller waits for does: cairn__seal_write). */
static _Thread_local int on_sealer;

/* Seal one closed segment: write the .seg without holding mu, then swap the
 * manifest and the view under it, then unlink the .log. */
static int seal_one(cairn_db *db, uint64_t id)
{
    int rc;

    /* A turn: the .seg.tmp and the MANIFEST are written under the lock,
     * and another process may have sealed it already (then it is SEALED in
     * the view the catch-up gives). */
    pthread_mutex_lock(&db->mu);
    rc = cairn__turn_get(db);
    pthread_mutex_unlock(&db->mu);
    if (rc != CAIRN_OK)
        return rc;
    rc = seal_one_turn(db, id);
    pthread_mutex_lock(&db->mu);
    cairn__turn_put(db);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

static int seal_one_turn(cairn_db *db, uint64_t id)
{
    view *v = cairn__view_acquire(db);
    seg_ref *src = NULL, *sealed = NULL;
    uint64_t size;
    cairn__err e;
    manifest m;
    view *nv = NULL;
    size_t idx = 0, n_fill = 0;
    cairn__chain_fill *fill = NULL;
    uint8_t chain[CHAIN_LEN];
    int chained, rc;

    for (size_t i = 0; i < v->m.n; i++)
        if (v->m.e[i].id == id && v->m.e[i].kind == SEG_CLOSED) {
            src = v->segs[i];
            idx = i;
        }
    if (src == NULL) {
        cairn__view_release(db, v);
        return CAIRN_OK;
    }
    if (src->log.n != v->m.e[idx].count) {
        cairn__view_release(db, v);
        return cairn__db_failf(db, CAIRN_ECORRUPT,
                               "%s: %zu valid records, manifest says %llu; not sealing it",
                               src->log.name, src->log.n,
                               (unsigned long long)v->m.e[idx].count);
    }
    /* The hash chain before it (the entries before were chained when they
     * were sealed; a store sealed before the chain gets theirs now, once).
     * Damage before it that stops the chain leaves it sealed without one:
     * cairn verify names the damage. */
#ifdef CAIRN_NO_CHAIN
    chained = 0; /* bench/bench_chain's peer: the engine without the chain */
#else
    fill = idx > 0 ? cairn__calloc(db->a, idx, sizeof *fill) : NULL;
    if (idx > 0 && fill == NULL) {
        cairn__view_release(db, v);
        return cairn__db_failf(db, CAIRN_ENOMEM, "no memory to seal");
    }
    rc = cairn__chain_before(db, v, idx, chain, fill, &n_fill, &e);
    if (rc != CAIRN_OK && rc != CAIRN_ECORRUPT && rc != CAIRN_ECHECKSUM) {
        cairn__view_release(db, v);
        cairn__free(db->a, fill);
        return cairn__db_fail(db, rc, &e); /* an I/O error: the seal fails, as any */
    }
    chained = rc == CAIRN_OK;
#endif
    rc = cairn__seal_write(db->io, db->a, db->dirfd, &src->log, chained ? chain : NULL,
                           db->background || !db->caller_io ? 1 + !on_sealer : 0,
                           on_sealer ? &db->seal_hurry : NULL, &size, &e);
    if (rc == CAIRN_OK)
        rc = cairn__seg_open_sealed(db, id, 0, &sealed, &e);
    cairn__view_release(db, v);
    if (rc != CAIRN_OK) {
        cairn__free(db->a, fill);
        return cairn__db_fail(db, rc, &e);
    }

    pthread_mutex_lock(&db->mu);
    v = db->view;
    rc = cairn__manifest_copy(&v->m, db->a, &m);
    if (rc == CAIRN_OK) {
        for (idx = 0; idx < m.n && m.e[idx].id != id; idx++)
            ;
        if (idx == m.n) { /* cannot happen: only the sealer removes CLOSED entries */
            cairn__manifest_free(db->a, &m);
            pthread_mutex_unlock(&db->mu);
            cairn__seg_release(db, sealed);
            cairn__free(db->a, fill);
            return cairn__db_failf(db, CAIRN_ECORRUPT, "segment %llu vanished while sealing",
                                   (unsigned long long)id);
        }
        m.e[idx].kind = SEG_SEALED;
        if (chained) {
            cairn__chain_apply_fill(&m, fill, n_fill);
            m.e[idx].chained = 1;
            memcpy(m.e[idx].chain, chain, CHAIN_LEN);
        }
        m.generation++;
        rc = cairn__db_manifest_write(db, &m, &e);
        if (rc != CAIRN_OK) {
            kill_handle(db, rc, &e);
        } else {
            seg_ref **segs = cairn__calloc(db->a, m.n, sizeof *segs);
            rc = CAIRN_ENOMEM;
            if (segs != NULL) {
                memcpy(segs, v->segs, m.n * sizeof *segs);
                segs[idx] = sealed;
                rc = cairn__view_make(db, &m, segs, &nv);
                cairn__free(db->a, segs);
            }
            if (rc == CAIRN_OK)
                cairn__view_publish(db, nv);
            else
                kill_handle(db, rc, NULL);
        }
        cairn__manifest_free(db->a, &m);
    }
    pthread_mutex_unlock(&db->mu);
    cairn__seg_release(db, sealed);
    cairn__free(db->a, fill);
    if (rc == CAIRN_OK) {
        char name[LOGSEG_NAME_MAX];
        cairn__logseg_name(name, id, "log");
        /* Readers holding the old view keep the open fd; the name can go. */
        rc = cairn__io_unlink(db->io, "seal.unlink", db->dirfd, name, &e);
        if (rc != CAIRN_OK)
            cairn__db_fail(db, rc, &e);
    }
    return rc;
}

int cairn__sync_unsealed(cairn_db *db)
{
    uint64_t after = 0;

    for (;;) {
        view *v = db->view;
        seg_ref *s = NULL;
        cairn__err e;
        int rc;
        for (size_t i = 0; i + 1 < v->m.n && s == NULL; i++)
            if (v->m.e[i].kind == SEG_CLOSED && v->m.e[i].id > after && !v->segs[i]->sealed &&
                !v->segs[i]->closed_synced)
                s = v->segs[i];
        if (s == NULL)
            return CAIRN_OK;
        after = s->id;
        atomic_fetch_add(&s->refs, 1);
        pthread_mutex_unlock(&db->mu);
        /* The sealer may unlink the .log meanwhile: the fd keeps the file. */
        rc = cairn__io_fdatasync(db->io, "closed.fdatasync", s->log.fd, s->log.name, &e);
        pthread_mutex_lock(&db->mu);
        if (rc == CAIRN_OK)
            s->closed_synced = 1;
        cairn__seg_release(db, s);
        if (rc != CAIRN_OK)
            return kill_handle(db, rc, &e);
    }
}

int cairn__sync_closed(cairn_db *db)
{
    seg_ref *s = db->closed_unsynced;
    cairn__err e;
    int rc;

    if (s == NULL)
        return CAIRN_OK;
    db->closed_unsynced = NULL;
    pthread_mutex_unlock(&db->mu);
    rc = cairn__io_fdatasync(db->io, "closed.fdatasync", s->log.fd, s->log.name, &e);
    pthread_mutex_lock(&db->mu);
    if (rc == CAIRN_OK)
        s->closed_synced = 1;
    cairn__seg_release(db, s);
    return rc == CAIRN_OK ? CAIRN_OK : kill_handle(db, rc, &e);
}

/* Write the changed MANIFEST in a turn, over the MANIFEST as it is. */
int cairn__change_manifest(cairn_db *db, const manifest_change *c, uint64_t v)
{
    view *cur, *nv = NULL;
    manifest m;
    cairn__err e;
    int rc;

    pthread_mutex_lock(&db->mu);
    rc = cairn__check_writable(db);
    if (rc == CAIRN_OK)
        rc = cairn__turn_get(db); /* the MANIFEST as it is, under the lock */
    if (rc != CAIRN_OK) {
        pthread_mutex_unlock(&db->mu);
        return rc;
    }
    cur = db->view;
    rc = cairn__manifest_copy(&cur->m, db->a, &m);
    if (rc != CAIRN_OK) {
        cairn__turn_put(db);
        pthread_mutex_unlock(&db->mu);
        return cairn__db_failf(db, rc, "no memory for a MANIFEST");
    }
    rc = c->apply(db, &m, &cur->m, v);
    if (rc <= 0) { /* nothing to change, or refused */
        cairn__manifest_free(db->a, &m);
        cairn__turn_put(db);
        pthread_mutex_unlock(&db->mu);
        return rc < 0 ? rc : CAIRN_OK;
    }
    m.generation++;
    rc = cairn__db_manifest_write(db, &m, &e);
    if (rc != CAIRN_OK) {
        /* The rename may or may not have happened. Either MANIFEST is
         * right about the segments, so the handle lives on: its view takes
         * the new generation (never written twice with other contents)
         * and keeps the old value (a lower synced_seq only detects less;
         * the caller is told a setting was not changed, though a later
         * open may find either value). */
        int wrc = rc;
        c->undo(&m, &cur->m);
        if (cairn__view_make(db, &m, cur->segs, &nv) == CAIRN_OK)
            cairn__view_publish(db, nv);
        else
            kill_handle(db, CAIRN_ENOMEM, NULL);
        rc = cairn__db_fail(db, wrc, &e);
    } else if ((rc = cairn__view_make(db, &m, cur->segs, &nv)) != CAIRN_OK) {
        rc = kill_handle(db, rc, NULL);
    } else {
        cairn__view_publish(db, nv);
    }
    cairn__manifest_free(db->a, &m);
    cairn__turn_put(db);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

static int max_apply(cairn_db *db, manifest *m, const manifest *cur, uint64_t n)
{
    (void)db;
    if (cur->max_memories == n)
        return 0;
    m->max_memories = n;
    return 1;
}

static void max_undo(manifest *m, const manifest *cur)
{
    m->max_memories = cur->max_memories;
}

int cairn__set_max_memories(cairn_db *db, uint64_t n)
{
    static const manifest_change c = {max_apply, max_undo};
    return cairn__change_manifest(db, &c, n);
}

/* The name's address is the change's value; *out (a static of the call
 * below, under the turn) gets its number. */
typedef struct type_change {
    const char *name;
    uint16_t type;
} type_change;

static int type_apply(cairn_db *db, manifest *m, const manifest *cur, uint64_t v)
{
    type_change *tc = (type_change *)(uintptr_t)v;
    manifest_type *t;
    uint32_t next = CAIRN_REC_USER_MIN;
    for (size_t i = 0; i < cur->n_types; i++) {
        if (strcmp(cur->types[i].name, tc->name) == 0) {
            tc->type = cur->types[i].type;
            return 0; /* registered before */
        }
        next = (uint32_t)cur->types[i].type + 1;
    }
    if (cur->n_types >= MAN_TYPES_MAX || next > 0xffffu)
        return cairn__db_failf(db, CAIRN_EINVAL, "the store holds %u named types, the most it "
                               "takes", MAN_TYPES_MAX);
    if (m->types == NULL && (m->types = cairn__calloc(db->a, 1, sizeof *m->types)) == NULL)
        return cairn__db_failf(db, CAIRN_ENOMEM, "no memory");
    t = &m->types[m->n_types]; /* the copy has room for one more */
    t->type = (uint16_t)next;
    snprintf(t->name, sizeof t->name, "%s", tc->name);
    m->n_types++;
    tc->type = t->type;
    return 1;
}

static void type_undo(manifest *m, const manifest *cur)
{
    m->n_types = cur->n_types; /* the added slot is freed with the copy */
}

int cairn__register_type(cairn_db *db, const char *name, uint16_t *type)
{
    static const manifest_change c = {type_apply, type_undo};
    type_change tc = {name, 0};
    int rc;
    if (name == NULL || !cairn__type_name_ok(name, strlen(name)))
        return cairn__db_failf(db, CAIRN_EINVAL, "type name '%.64s': 1..%d of a-z 0-9 _ . -, a "
                               "letter first, not a name of the engine's types",
                               name ? name : "", CAIRN_TYPE_NAME_MAX);
    rc = cairn__change_manifest(db, &c, (uint64_t)(uintptr_t)&tc);
    if (rc == CAIRN_OK)
        *type = tc.type;
    return rc;
}

/* The settings' address is the change's value: {reflect, core, section},
 * 0 = unchanged. */
static int tiers_apply(cairn_db *db, manifest *m, const manifest *cur, uint64_t v)
{
    const uint32_t *t = (const uint32_t *)(uintptr_t)v;
    uint32_t r = t[0] ? t[0] : cur->reflect_threshold, c = t[1] ? t[1] : cur->core_budget,
             s = t[2] ? t[2] : cur->core_section_budget;
    if (!cairn__tier_settings_ok(r, c, s))
        return cairn__db_failf(db, CAIRN_EINVAL, "tier settings: the reflection threshold and "
                               "the budgets are 1..%u, a section's budget at most the core's "
                               "(%u > %u)", MAN_TIER_MAX, s, c);
    if (r == cur->reflect_threshold && c == cur->core_budget && s == cur->core_section_budget)
        return 0;
    m->reflect_threshold = r;
    m->core_budget = c;
    m->core_section_budget = s;
    return 1;
}

static void tiers_undo(manifest *m, const manifest *cur)
{
    m->reflect_threshold = cur->reflect_threshold;
    m->core_budget = cur->core_budget;
    m->core_section_budget = cur->core_section_budget;
}

int cairn__set_tiers(cairn_db *db, uint32_t reflect, uint32_t core, uint32_t section)
{
    static const manifest_change c = {tiers_apply, tiers_undo};
    uint32_t t[3] = {reflect, core, section};
    return cairn__change_manifest(db, &c, (uint64_t)(uintptr_t)t);
}

/* The policy's address is the change's value. */
static int retain_apply(cairn_db *db, manifest *m, const manifest *cur, uint64_t v)
{
    const cairn_retention *r = (const cairn_retention *)(uintptr_t)v;
    (void)db;
    if (cur->retain.memories == r->memories && cur->retain.grace_ms == r->grace_ms &&
        cur->retain.events_max_age_ms == r->events_max_age_ms &&
        cur->retain.events_max_bytes == r->events_max_bytes)
        return 0;
    m->retain = *r;
    return 1;
}

static void retain_undo(manifest *m, const manifest *cur)
{
    m->retain = cur->retain;
}

int cairn__set_retain(cairn_db *db, const cairn_retention *r)
{
    static const manifest_change c = {retain_apply, retain_undo};
    if (r == NULL || !cairn__retention_ok(r))
        return cairn__db_failf(db, CAIRN_EINVAL, "invalid retention policy");
    return cairn__change_manifest(db, &c, (uint64_t)(uintptr_t)r);
}

int cairn__kill(cairn_db *db, int rc, const cairn__err *e)
{
    return kill_handle(db, rc, e);
}

int cairn__roll_past(cairn_db *db, uint64_t seq_floor)
{
    return roll_locked(db, seq_floor);
}

int cairn__roll_at_close(cairn_db *db)
{
    int rc;
    if (db->act == NULL || db->act->log.end < ROLL_AT_CLOSE_MIN)
        return CAIRN_OK;
    /* the buffer still to write counts as written: the roll writes it */
    if (db->own_seg != db->act->id || db->own_bytes + db->wbuf_len < ROLL_AT_CLOSE_MIN)
        return CAIRN_OK;
    if ((rc = cairn__turn_get(db)) != CAIRN_OK)
        return rc;
    /* Another writer may have rolled it meanwhile: the turn's catch-up
     * made db->act the log's active segment. */
    rc = db->act->log.end >= ROLL_AT_CLOSE_MIN ? roll_locked(db, 0) : CAIRN_OK;
    cairn__turn_put(db);
    return rc;
}

/* Seal every CLOSED segment, oldest first; stops at the first failure. */
static int seal_all(cairn_db *db)
{
    int rc = CAIRN_OK;

    pthread_mutex_lock(&db->seal_mu);
    for (;;) {
        uint64_t id = 0;
        pthread_mutex_lock(&db->mu);
        for (size_t i = 0; i < db->view->m.n; i++)
            if (db->view->m.e[i].kind == SEG_CLOSED) {
                id = db->view->m.e[i].id;
                break;
            }
        if (id == 0)
            db->seal_pending = 0;
        pthread_mutex_unlock(&db->mu);
        if (id == 0)
            break;
        rc = seal_one(db, id);
        if (rc != CAIRN_OK)
            break;
    }
    db->seal_err = rc;
    pthread_mutex_unlock(&db->seal_mu);
    return rc;
}

int cairn__seal_pending(cairn_db *db)
{
    int was = cairn__deferred_begin(), rc = seal_all(db);
    cairn__deferred_end(was);
    return rc;
}

int cairn_seal(cairn_db *db)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = cairn__check_writable(db);
    pthread_mutex_unlock(&db->mu);
    return rc != CAIRN_OK ? rc : seal_all(db);
}

int cairn_roll(cairn_db *db)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = cairn__check_writable(db);
    if (rc == CAIRN_OK && (rc = cairn__turn_get(db)) == CAIRN_OK) {
        rc = roll_locked(db, 0);
        cairn__turn_put(db);
    }
    pthread_mutex_unlock(&db->mu);
    if (rc == CAIRN_OK && !db->background)
        rc = seal_all(db);
    return rc;
}

/* Inline work when there is no background thread (mu held): the records
 * go to the file at once (nobody would write them before the next call,
 * and the lock is not kept between calls), and in batch mode an
 * fdatasync every batch_ms. */
static int periodic_inline(cairn_db *db)
{
    int64_t now;
    int rc = cairn__flush_locked(db);
    if (rc != CAIRN_OK || db->durability != CAIRN_DURABILITY_BATCH)
        return rc;
    now = cairn__now_ms();
    if (now - db->last_sync_ms < (int64_t)db->batch_ms)
        return CAIRN_OK;
    db->last_sync_ms = now;
    rc = cairn__sync_closed(db);
    if (rc == CAIRN_OK)
        rc = commit_wait(db, db->written_seq, NULL);
    return rc;
}

int cairn_append_batch(cairn_db *db, const cairn_entry *entries, size_t n,
                       uint64_t *first_seq_out)
{
    return cairn__append_batch_ts(db, entries, n, first_seq_out, NULL);
}

int cairn__append_batch_ts(cairn_db *db, const cairn_entry *entries, size_t n,
                           uint64_t *first_seq_out, int64_t *ts_out)
{
    size_t total = 0, size, largest = 0;
    int64_t ts;
    int rc, rolled = 0, released = 0, turn = 0;

    if (entries == NULL || n == 0)
        return cairn__db_failf(db, CAIRN_EINVAL, "no entries to append");
    for (size_t i = 0; i < n; i++) {
        /* Holes are compaction's alone (format-spec/compaction.md). */
        if (entries[i].type == CAIRN_REC_COMPACTED)
            return cairn__db_failf(db, CAIRN_EINVAL, "entry %zu: type 12 (log.compacted) is "
                                   "written by compaction only", i);
        rc = cairn__record_size(&entries[i], &size);
        if (rc != CAIRN_OK)
            return cairn__db_failf(db, rc, "entry %zu: %s", i,
                                   rc == CAIRN_ETOOBIG ? "record larger than 16 MiB"
                                                       : "type 0, namespace over 255 bytes, "
                                                         "or NULL bytes with a length");
        if (size_add(&total, total, size) != 0)
            return cairn__db_failf(db, CAIRN_ETOOBIG, "batch too large");
        if (size > largest)
            largest = size;
    }
    if (db->durability == CAIRN_DURABILITY_FULL)
        atomic_fetch_add(&db->appenders, 1);
    pthread_mutex_lock(&db->mu);
    rc = cairn__check_writable(db);
    if (rc == CAIRN_OK)
        rc = cairn__turn_get(db); /* the lock, and the log as it is now */
    if (rc != CAIRN_OK)
        goto out;
    turn = 1;
    if (db->act->log.n > 0 && db->act->log.end + total > db->segment_size) {
        rc = roll_locked(db, 0);
        if (rc != CAIRN_OK)
            goto out;
        rolled = 1;
    }
    /* Reserve everything first so a failure leaves no half-appended batch:
     * room in the buffer for its largest record. A batch larger than the
     * buffer is written in several writes as it is encoded below, all under
     * mu, so nothing comes between them; the buffer never grows to the size
     * of a batch (an import of 100 000 memories). A crash can keep a prefix
     * of a batch either way (a write is not atomic on disk): the engine's
     * records mark their commits, and readers take them whole (batch.h). */
    if (db->wbuf_len + total > db->wbuf_cap) {
        rc = cairn__flush_locked(db);
        if (rc != CAIRN_OK)
            goto out;
        if (largest > db->wbuf_cap) {
            size_t cap = db->wbuf_cap;
            if (cairn__grow(db->a, (void **)&db->wbuf, &cap,
                            largest < WBUF_CAP ? WBUF_CAP : largest, 1) != CAIRN_OK) {
                rc = cairn__db_failf(db, CAIRN_ENOMEM, "no memory for the write buffer");
                goto out;
            }
            db->wbuf_cap = cap;
        }
    }
    if (db->act->log.n + n > db->act->log.cap) {
        logseg *l = &db->act->log;
        size_t want = l->cap ? l->cap : 1024;
        while (want < l->n + n)
            want *= 2;
        rc = cairn__logseg_index_reserve(db->a, l, want);
        if (rc != CAIRN_OK) {
            rc = cairn__db_failf(db, CAIRN_ENOMEM, "no memory for the record index");
            goto out;
        }
    }
    ts = cairn__now_ms();
    if (ts < db->last_ts)
        ts = db->last_ts; /* the clock went back: timestamps never do */
    db->last_ts = ts;
    if (ts_out != NULL)
        *ts_out = ts;
    if (first_seq_out != NULL)
        *first_seq_out = db->next_seq;
    for (size_t i = 0; i < n; i++) {
        logseg *l = &db->act->log;
        uint8_t *p;
        (void)cairn__record_size(&entries[i], &size); /* checked above */
        if (db->wbuf_len + size > db->wbuf_cap && (rc = cairn__flush_locked(db)) != CAIRN_OK)
            goto out; /* the handle is dead: no caller will be told of a seq */
        p = db->wbuf + db->wbuf_len;
        size = cairn__record_encode(p, &entries[i], db->next_seq, ts, l->salt);
        l->off[l->n] = l->end;
        l->ts[l->n] = ts;
        l->n++;
        l->end += size;
        l->raw_bytes += size;
        db->wbuf_len += size;
        db->next_seq++;
    }
    /* The lock stays while the buffer holds records: until the leader of
     * the group commit, the flusher thread or the inline write below puts
     * them in the file. */
    turn = 0;
    cairn__turn_put(db);
    if (db->durability == CAIRN_DURABILITY_FULL) {
        rc = commit_wait(db, db->next_seq - 1, &released); /* the leader writes the buffer */
    } else if (!db->background) {
        rc = periodic_inline(db);
        cairn__turn_release(db);
    }
out:
    if (turn)
        cairn__turn_put(db);
    if (db->durability == CAIRN_DURABILITY_FULL) {
        /* No wakeup for a delaying leader: a thread leaving now will most
         * likely be back with its next record, and the delay is bounded. */
        atomic_fetch_sub(&db->appenders, 1);
    }
    if (!released)
        pthread_mutex_unlock(&db->mu);
    /* The records are committed: a failed inline seal must not make the
     * caller think otherwise (and append them again). It loses nothing (the
     * .log stays live) and is reported by cairn_seal() or a later roll. */
    if (rc == CAIRN_OK && rolled && !db->background)
        cairn__seal_pending(db);
    return rc;
}

uint64_t cairn__last_seq(cairn_db *db)
{
    uint64_t s;
    pthread_mutex_lock(&db->mu);
    s = db->next_seq - 1;
    pthread_mutex_unlock(&db->mu);
    return s;
}

int cairn_append(cairn_db *db, const cairn_entry *entry, uint64_t *seq_out)
{
    if (entry == NULL)
        return cairn__db_failf(db, CAIRN_EINVAL, "no entry to append");
    return cairn_append_batch(db, entry, 1, seq_out);
}

int cairn_flush(cairn_db *db)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = cairn__check_writable(db);
    if (rc == CAIRN_OK)
        rc = cairn__flush_locked(db);
    cairn__turn_release(db);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

void cairn__sync_ask(cairn_db *db)
{
    pthread_mutex_lock(&db->mu);
    if (db->bg_running && !db->bg_stop && !db->read_only) {
        db->sync_asked = 1;
        pthread_cond_signal(&db->bg_cv);
    }
    pthread_mutex_unlock(&db->mu);
}

int cairn_sync(cairn_db *db)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = cairn__check_writable(db);
    if (rc == CAIRN_OK)
        rc = cairn__flush_locked(db);
    cairn__turn_release(db);
    if (rc == CAIRN_OK)
        rc = cairn__sync_closed(db);
    /* Every closed segment not sealed yet, whoever closed it: a record of
     * another process's batch-mode roll may not be synced yet, and a
     * checkpoint that follows records everything up to its seq as durable. */
    if (rc == CAIRN_OK)
        rc = cairn__sync_unsealed(db);
    /* Every record written (the flush wrote the buffer). Not next_seq - 1:
     * past numbers retired at open (damage set aside, records lost) there
     * is no record to wait for. */
    if (rc == CAIRN_OK)
        rc = commit_wait(db, db->written_seq, NULL);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* ---- the background threads --------------------------------------------- */

/* Two threads, because a seal takes a quarter of a second per 64 MiB segment
 * and batch mode promises an fdatasync every batch_ms: the flusher must never
 * wait behind the sealer. */

static void *flusher_main(void *arg)
{
    cairn_db *db = arg;

    (void)cairn__deferred_begin(); /* nobody is told of what this thread meets */
    pthread_mutex_lock(&db->mu);
    while (!db->bg_stop) {
        struct timespec until;
        int64_t due = db->last_flush_ms + db->batch_ms, now = cairn__now_ms();
        if (cairn__turn_linger_due(db)) {
            cairn__turn_let_go(db);
            continue;
        }
        if (db->lingering && now + 1 < due)
            due = now + 1; /* look again in 1 ms while the lock lingers */
        if (db->closed_unsynced != NULL && !db->dead) {
            cairn__sync_closed(db);
            continue;
        }
        if ((now >= db->last_flush_ms + db->batch_ms || db->sync_asked) && !db->dead) {
            int frc = cairn__flush_locked(db), asked = db->sync_asked;
            db->sync_asked = 0;
            cairn__turn_release(db);
            if (frc == CAIRN_OK && (db->durability == CAIRN_DURABILITY_BATCH || asked) &&
                atomic_load(&db->durable_seq) < db->written_seq)
                commit_wait(db, db->written_seq, NULL);
            db->last_flush_ms = cairn__now_ms();
            continue;
        }
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (due - now) / 1000;
        until.tv_nsec += ((due - now) % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&db->bg_cv, &db->mu, &until);
    }
    pthread_mutex_unlock(&db->mu);
    return NULL;
}

static void *sealer_main(void *arg)
{
    cairn_db *db = arg;

    on_sealer = 1;

#ifdef __linux__
    /* Sealing is catch-up work: on a busy host it yields the CPU to the
     * appenders (Linux nice values are per thread). Best effort. */
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
#endif

    (void)cairn__deferred_begin(); /* nobody is told of what this thread meets */
    pthread_mutex_lock(&db->mu);
    while (!db->bg_stop) {
        if (db->seal_pending && !db->dead) {
            int rc;
            pthread_mutex_unlock(&db->mu);
            rc = cairn__seal_pending(db);
            pthread_mutex_lock(&db->mu);
            /* A failed seal is retried at the next roll, not in a busy loop. */
            if (rc != CAIRN_OK)
                db->seal_pending = 0;
            continue;
        }
        pthread_cond_wait(&db->seal_cv, &db->mu);
    }
    pthread_mutex_unlock(&db->mu);
    return NULL;
}

int cairn__bg_start(cairn_db *db)
{
    int err;
    __atomic_store_n(&db->seal_hurry, 0, __ATOMIC_RELAXED);
    err = pthread_create(&db->bg, NULL, flusher_main, db);
    if (err == 0) {
        err = pthread_create(&db->sealer, NULL, sealer_main, db);
        if (err != 0) {
            pthread_mutex_lock(&db->mu);
            db->bg_stop = 1;
            pthread_cond_broadcast(&db->bg_cv);
            pthread_mutex_unlock(&db->mu);
            pthread_join(db->bg, NULL);
            db->bg_stop = 0;
        }
    }
    if (err != 0)
        return cairn__db_failf(db, CAIRN_EUNAVAIL, "cannot start a background thread: %s",
                               strerror(err));
    db->bg_running = 1;
    return CAIRN_OK;
}

void cairn__bg_stop(cairn_db *db)
{
    if (!db->bg_running)
        return;
    pthread_mutex_lock(&db->mu);
    db->bg_stop = 1;
    /* A seal under way finishes first: on both cores from here on. */
    __atomic_store_n(&db->seal_hurry, 1, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&db->bg_cv);
    pthread_cond_broadcast(&db->seal_cv);
    pthread_mutex_unlock(&db->mu);
    pthread_join(db->bg, NULL);
    pthread_join(db->sealer, NULL);
    db->bg_running = 0;
}
