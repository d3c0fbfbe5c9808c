/*
 * store.h - internals of a store handle shared by store.c (open, close,
 * views, stats), append.c (the write path, group commit, roll, seal, the
 * background thread), iter.c (reading) and verify.c.
 *
 * Concurrency model. `mu` guards the write path and every mutable field
 * below it, including the index of the active segment. A reader takes `mu`
 * only for an instant: to pin the current view (a refcounted snapshot of the
 * manifest and its open segments) and to look an offset up in the active
 * segment's index; it then reads files with pread or from a read-only mmap,
 * lock-free. Sealed files are immutable and a segment's fd lives as long as
 * any view holds it, so a file a snapshot uses is never closed under it
 * (unlinking it is fine: the fd keeps the inode).
 */
#ifndef CAIRN_STORE_H
#define CAIRN_STORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cairn.h"
#include "cairn_sys.h"
#include "logseg.h"
#include "manifest.h"
#include "sealed.h"
#include "status.h"
#include "waitword.h"

#define WBUF_CAP (256u * 1024u)
#define DEFAULT_SEGMENT_SIZE (64ull << 20)
#define DEFAULT_BATCH_MS 50u
#define LOCK_NAME "LOCK"

/* One live segment file, shared by the views that list it. */
typedef struct seg_ref {
    atomic_int refs;
    uint8_t sealed;       /* 1: `s` over a read-only mapping; 0: `log` */
    uint64_t id;
    uint32_t rev;         /* sealed: the file's compaction revision */
    void *map;            /* sealed: the mapping */
    size_t map_len;
    sealed_seg s;
    logseg log;           /* log form: fd and the offset/ts index (guarded by
                             mu while the segment is active) */
    uint64_t log_file_size; /* at open: bytes in the file (verify, torn tails) */
    uint64_t damaged_at;  /* read-only: offset of damage followed by valid
                             records (0: none); iteration reports it */
    uint64_t damaged_max_seq; /* the highest seq found after that damage */
    int closed_synced;    /* closed, and fdatasynced since by this handle (mu) */
} seg_ref;

/* A snapshot: the manifest and its segments, in order. */
typedef struct view {
    atomic_int refs;
    manifest m;
    seg_ref **segs;       /* m.n entries, parallel to m.e */
} view;

/* Work a writer does while it waits for the lock (cairn__turn_begin_busy). */
typedef int (*cairn__turn_busy_fn)(void *user);

struct cairn_db {
    const cairn_allocator *a;
    const cairn_io *io;
    cairn_allocator a_copy;
    cairn_io io_copy;
    int read_only;
    int caller_io;            /* cairn_options.io given: without background threads,
                                 every I/O call is the calling thread's, in order */
    int background;
    int may_thread;           /* cairn_options.background as asked: a read-only
                                 handle indexes a long fold on one more thread */
    cairn_durability durability; /* in force for this handle */
    uint32_t batch_ms;
    uint64_t segment_size;
    int dirfd;
    int lockfd;               /* LOCK, open read-write for a writer's whole life */
    uint32_t busy_ms;         /* how long a turn waits for the lock */
    char *path;

    pthread_mutex_t mu;
    pthread_cond_t sync_cv;   /* group commit: a sync finished */
    pthread_cond_t bg_cv;     /* wakes the flusher thread */
    pthread_cond_t seal_cv;   /* wakes the sealer thread */
    view *view;               /* current view (mu) */
    seg_ref *act;             /* the active segment, a reference of the handle's
                                 own (the view may drop it first; mu) */
    uint8_t *wbuf;            /* encoded records not yet written (mu) */
    size_t wbuf_len, wbuf_cap;
    uint64_t wbuf_off;        /* file offset of wbuf[0] */
    int act_reserve_tried;    /* the active segment's space was asked for (mu) */
    uint64_t own_seg;         /* the segment own_bytes counts in (mu) */
    uint64_t own_bytes;       /* bytes this handle wrote into it (mu) */
    uint64_t next_seq;        /* next sequence number to hand out (mu) */
    int64_t last_ts;          /* timestamps never go backwards (mu) */
    uint64_t written_seq;     /* last seq written to the file (mu) */
    _Atomic uint64_t durable_seq; /* last seq known fdatasynced (written under mu;
                                 waiters read it without) */
    cairn__waitword synced;   /* bumped when a sync ends or the handle dies:
                                 covered waiters leave without taking mu */
    int syncing;              /* a group-commit leader is in fdatasync (mu) */
    int sync_waiters;         /* appenders waiting for a sync that has not
                                 flushed yet: the next group (mu) */
    int writers_seen;         /* full-mode appenders when the last sync ended (mu) */
    int delay_want;           /* waiters a delaying leader waits for, 0 if none (mu) */
    atomic_int appenders;     /* `full`-mode appends in progress, mu or not */
    int64_t last_sync_ns;     /* duration of the last fdatasync (mu) */
    pthread_cond_t append_cv; /* an appender has encoded its records */
    int64_t last_flush_ms;
    int64_t last_sync_ms;     /* batch mode without the thread: last fdatasync (mu) */
    int dead;                 /* != 0: the status that killed the handle (mu) */
    int dead_untold;          /* deferred work met it and no call has returned it
                                 yet: the next one will, instead of CAIRN_EDEAD (mu) */
    char dead_msg[CAIRN_ERRMSG_MAX]; /* the message of that failure (mu) */
    int seal_pending;         /* closed segments await sealing (mu) */
    int bg_stop;
    int sync_asked;           /* cairn__sync_ask: the flusher syncs now (mu) */
    int bg_running;
    pthread_t bg;             /* flusher: batch/none syncs, never blocked by a seal */
    pthread_t sealer;         /* rewrites closed segments into sealed files */
    pthread_mutex_t seal_mu;  /* one sealer at a time */
    int seal_err;             /* last background seal failure, 0 if none */
    int seal_hurry;           /* a close waits for the sealer: its seal under
                                 way splits what it has left (atomic) */

    seg_ref *closed_unsynced; /* none/batch: a rolled segment not yet fdatasynced (mu) */
    uint64_t create_max_memories; /* cairn_options.max_memories, for a new store */
    cairn_retention create_retain; /* cairn_options.retain, for a new store */
    uint64_t seq_floor;       /* recovery: no seq below this may be handed out */
    uint64_t torn_bytes;      /* recovery at open: torn tail bytes truncated */
    uint64_t set_aside_bytes; /* recovery at open: damaged bytes moved aside */
    uint64_t lost_first, lost_last; /* at open: the log ended before the MANIFEST's
                                 synced_seq; these records are gone (0: none) */

    /* The writer lock (turn.c). Held while turn_users > 0 or the write
     * buffer holds records; each turn starts with a catch-up. (mu) */
    int turn_held;            /* this handle holds the flock */
    int turn_users;           /* operations in progress that need it */
    int turn_taking;          /* a thread waits for the flock, mu released */
    pthread_cond_t turn_cv;   /* turn_taking went to 0 */
    int64_t turn_ended_ns;    /* monotonic time the last turn ended */
    int64_t turn_got_ns;      /* monotonic time the flock was taken */
    int lingering;            /* the flock is kept after a turn (turn.c) */
    cairn__turn_busy_fn busy_fn; /* work to do while waiting for the flock:
                                 set by the taking thread (turn_taking) */
    void *busy_user;
    int inofd;                /* inotify watch of LOCK for waits; -2 none yet, -1 none */
    int compacting;           /* this handle holds the compaction lock (mu) */
    /* Identity of the MANIFEST last read (catch-up reads it only when it
     * changed: every write replaces it by rename). (mu) */
    uint64_t man_ino, man_size;
    int64_t man_mtime_ns, man_ctime_ns;

    pthread_mutex_t err_mu;
    /* its error detail: per thread, cairn__errbuf(db) */
};

/* Is name a temp file of the store (MANIFEST.tmp, <id>.seg.tmp, a derived
 * file's temp)? A writer open removes every one (temps.c). */
int cairn__temp_name(const char *name);
/* Does a writer hold the store's lock (this handle, if it is the writer)?
 * A read-only handle probes with a shared, non-blocking flock on LOCK. */
int cairn__writer_live(cairn_db *db);
/* Is a writer of another handle in its turn (so a commit the log ends
 * inside may still be being written)? Never this handle's own turn: in it,
 * nobody else writes. */
int cairn__other_writer_live(cairn_db *db);

/* Work whose caller drops its error (the background threads, the seal
 * after a roll and at open and close, a checkpoint at close) runs between
 * these, on its thread: if it meets a failure that kills the handle, the
 * next call that finds the handle dead returns that failure's status and
 * message instead of CAIRN_EDEAD, so the first error anyone sees names the
 * cause (a full disk: CAIRN_EFULL). begin returns what end restores. */
int cairn__deferred_begin(void);
void cairn__deferred_end(int was);

/* The handle can no longer trust its view of the store (a MANIFEST write
 * whose outcome it cannot know): every later call fails with CAIRN_EDEAD,
 * the first with rc and e's message. mu held. Returns rc. */
int cairn__kill(cairn_db *db, int rc, const cairn__err *e);

/* Record the message of `e` on the handle and return code. */
int cairn__db_fail(cairn_db *db, int code, const cairn__err *e);
int cairn__db_failf(cairn_db *db, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

int64_t cairn__now_ms(void);

/* Give back any reserved space past the active segment's end (mu held,
 * after a flush; nothing if the buffer is not empty or the handle is
 * dead). Best effort: reserved blocks are only wasted until the segment is
 * sealed and deleted. */
void cairn__trim_reserved(cairn_db *db);

/* cairn_append_batch(), also giving the records' timestamp (one for the
 * batch) in *ts_out (may be NULL): for folds that must match a replay. */
int cairn__append_batch_ts(cairn_db *db, const cairn_entry *entries, size_t n,
                           uint64_t *first_seq_out, int64_t *ts_out);
/* A fresh, random per-segment salt (never 0). */
uint64_t cairn__random_salt(void);
/* Views for --as-of live in the store as CAIRN_VIEW_PREFIX<pid>-XXXXXX
 * (cli_asof.c), their segments hard links of the store's. Remove those
 * whose process is gone (all: every one); returns how many. A writer's
 * open and a purge (whose bytes a view's links would keep) call it. */
#define CAIRN_VIEW_PREFIX ".as-of-"
uint64_t cairn__views_sweep(cairn_db *db, int all);
/* 128 random bits for a new store's id (never all zero). */
void cairn__store_id_new(uint8_t *id);

/* The store's id as the current view's MANIFEST has it (MAN_STORE_ID_LEN
 * bytes; zeros for a store that has none). */
void cairn__db_store_id(cairn_db *db, uint8_t *id);
/* Every record with seq in from..to, in order, through fn; stops at the
 * first non-OK it returns and returns that. CAIRN_OK at the end; an
 * iterator error as cairn_iter_open/next give it (message in the db). */
int cairn__each_record(cairn_db *db, uint64_t from, uint64_t to,
                       int (*fn)(void *user, const cairn_record *rec), void *user);
/* The record that stands for seq: the record, or in a compacted segment
 * the hole that stands for it (*hole 1; format-spec/compaction.md); as
 * cairn_get otherwise. */
int cairn__record_covering(cairn_db *db, uint64_t seq, cairn_record **out, int *hole);
/* Block i of sealed segment s, inflated into *buf (cairn__sealed_read_block)
 * with the segment's dictionary, digested on its first read; dctx: the
 * caller's zstd context, or NULL (one for this read). */
int cairn__seg_read_block(cairn_db *db, const seg_ref *s, uint32_t i, void *dctx, uint8_t **buf,
                          size_t *cap, size_t *raw_len, cairn__err *e);
/* A reader of single records by seq for a caller that reads many (a
 * memory's content, read where its index row points): it keeps its own
 * zstd context and the last sealed block it inflated, and takes no new
 * view of the log (the records it is asked for are in the handle's).
 * Zero it to start; cairn__fetch_free gives back what it holds. Used by
 * one thread at a time. */
typedef struct cairn__fetch {
    void *dctx;
    uint8_t *buf;         /* the inflated block, or one record's bytes */
    size_t cap, len;
    uint64_t id;          /* the cached block: segment id, revision, index */
    uint32_t rev, block;
    int cached;
} cairn__fetch;
/* The record seq into *rec (its fields point into f's buffer, valid until
 * the next fetch): CAIRN_ENOTFOUND if the log holds no record seq (past
 * the view's end, or dropped by a compaction), a read error or damage as
 * cairn_get gives it. Sets the db's message on failure. */
int cairn__record_fetch(cairn_db *db, cairn__fetch *f, uint64_t seq, cairn_record *rec);
void cairn__fetch_free(cairn_db *db, cairn__fetch *f);
/* The last sequence number this handle has handed out (0: none yet). */
uint64_t cairn__last_seq(cairn_db *db);
/* The last sequence number handed out as the handle's view sees it: the
 * newest record, or past it the numbers a writer retired (lost or set
 * aside). A derived file may cover up to it. Refresh first (cairn_stats_get)
 * for a reader's view to be current. */
uint64_t cairn__handed_seq(cairn_db *db);
/* Ask the background flusher to write and fdatasync what this handle
 * appended, now, without waiting for it: a caller that will need the log
 * durable (a checkpoint) overlaps the sync with work of its own, then
 * cairn_sync finds it done or under way. No-op without the thread. */
void cairn__sync_ask(cairn_db *db);

/* Views. */
view *cairn__view_acquire(cairn_db *db); /* takes mu briefly */
void cairn__view_release(cairn_db *db, view *v);
void cairn__seg_release(cairn_db *db, seg_ref *s);
/* The file of sealed segment id: <id>.seg, or <id>-<rev>.seg once
 * compaction rewrote it (rev > 0). buf holds LOGSEG_NAME_MAX bytes. */
void cairn__seg_file_name(char *buf, uint64_t id, uint32_t rev);
/* Open a sealed segment file and map it. */
int cairn__seg_open_sealed(cairn_db *db, uint64_t id, uint32_t rev, seg_ref **out,
                           cairn__err *e);
/* Replace the current view (mu held); takes ownership of nv. */
void cairn__view_publish(cairn_db *db, view *nv);
/* A new view with m (copied) and segs (each gets a reference). */
int cairn__view_make(cairn_db *db, const manifest *m, seg_ref **segs, view **out);

/* Pick up what other processes wrote since this handle last looked (mu
 * held): a MANIFEST they replaced (rolls, seals, settings), records they
 * appended. `locked`: the caller holds the writer lock (a turn), so the
 * log's end is this handle's to append at, and bytes after the last valid
 * record of the active segment are a tail a crashed writer tore:
 * recovered as an open recovers them. */
int cairn__catch_up(cairn_db *db, int locked);
/* Catch up before a read (mu held): a handle holding the lock flushes its
 * buffer instead (nobody else wrote meanwhile). */
int cairn__refresh(cairn_db *db);
/* The same, taking mu: what the memory and reflexion layers call before a
 * read. */
int cairn__db_refresh(cairn_db *db);

/* cairn__manifest_write for this store, in a turn (mu held, or the open):
 * notes the new file so that catch-up does not read it back. */
int cairn__db_manifest_write(cairn_db *db, const manifest *m, cairn__err *e);

/* Turns (turn.c; format-spec/lock.md). */
int cairn__lock_open(cairn_db *db, cairn__err *e);
/* Take the flock (waiting up to busy_ms) and write the pid; mu not held. */
int cairn__turn_lock(cairn_db *db, cairn__err *e);
/* Count one more user of the lock, taking it (and catching up) if this
 * handle does not hold it (mu held; released while waiting). */
int cairn__turn_get(cairn_db *db);
/* One user less; the lock goes when none is left and the buffer is
 * written (mu held). */
void cairn__turn_put(cairn_db *db);
/* Let the lock go if nothing needs it (mu held); with the background
 * thread, keep it (linger) while nobody waits. */
void cairn__turn_release(cairn_db *db);
/* Let the flock go now, waking waiters (mu held, no user left). */
void cairn__turn_let_go(cairn_db *db);
/* Should the flusher let a lingering lock go (1 ms without a turn, or a
 * waiter)? mu held. */
int cairn__turn_linger_due(cairn_db *db);
/* An operation of several appends that must see the log as it is and
 * have nothing of another process between its reads and its writes (the
 * memory and reflexion layers' commits; checkpoints): begin takes the
 * lock (mu not held), end writes the buffer and lets it go. */
int cairn__turn_begin(cairn_db *db);
int cairn__turn_end(cairn_db *db);
/* The same, calling busy(user) while another process holds the lock, with
 * no lock of this handle held: an engine folds what the holder appended
 * meanwhile, on a core the holder leaves free, so that its catch-up inside
 * the turn is short. busy returns 1 if it did some work (the flock is
 * tried again at once), 0 if there was nothing (the wait sleeps). */
int cairn__turn_begin_busy(cairn_db *db, cairn__turn_busy_fn busy, void *user);
/* Take (take 1) or let go of the compaction lock: an exclusive OFD lock on
 * byte 2 of LOCK, one compaction of the store at a time, in any process
 * (format-spec/lock.md). Not blocking: CAIRN_ELOCKED when another holds
 * it. mu not held. */
int cairn__compact_lock(cairn_db *db, int take);
/* Does another handle (in any process) hold the compaction lock? Its files
 * (<id>-<rev>.seg, their .tmp) are not orphans while it does. */
int cairn__compaction_live(cairn_db *db);
/* A writer's open, while it lists orphans: a shared lock on the same byte
 * (take 1), so no compaction starts meanwhile; 1 if it got it (no
 * compaction runs), 0 if one runs. take 0 lets it go. */
int cairn__compaction_guard(cairn_db *db, int take);

/* Byte 3 of LOCK (format-spec/lock.md): held by the one handle of the
 * store that folds the log and writes the memory index at its close, so
 * that many writers closing at once do that work once, one after the
 * other, and not all at once on the same records. take 1: wait for it,
 * at most the busy timeout; 1 when held, 0 when not (timed out, no OFD
 * locks, a read-only handle). take 0: let it go. */
int cairn__index_writer_lock(cairn_db *db, int take);
/* CAIRN_OK if the handle may write, else its error (mu held). */
int cairn__check_writable(cairn_db *db);

/* Recovery found damage followed by valid records in the active segment:
 * start a new segment at seq_floor so their numbers are never reused (mu
 * held). */
int cairn__roll_past(cairn_db *db, uint64_t seq_floor);

/* One change of the MANIFEST (a setting, the list of derived files).
 * `apply` makes it in m, a copy of the view's cur, and returns 1,
 * or 0 when there is nothing to change, or an error it recorded on db;
 * `undo` puts cur's values back in m (the write failed). */
typedef struct manifest_change {
    int (*apply)(cairn_db *db, manifest *m, const manifest *cur, uint64_t v);
    void (*undo)(manifest *m, const manifest *cur);
} manifest_change;

/* Write the changed MANIFEST in a turn, over the MANIFEST as it is: takes
 * db->mu (the caller must not hold it) and the turn (it may hold that). */
int cairn__change_manifest(cairn_db *db, const manifest_change *c, uint64_t v);

/* Change the store setting max_memories (0 = no limit) the same way, in
 * a turn: a new MANIFEST (generation + 1) with it, then a view of it
 * (takes mu). Nothing is written when the MANIFEST holds n already.
 * Errors: CAIRN_EPERM, CAIRN_EDEAD, CAIRN_ELOCKED (the busy timeout),
 * CAIRN_EIO, CAIRN_EFULL, CAIRN_ENOMEM (a failed write leaves the handle
 * usable, its view with the old value). */
int cairn__set_max_memories(cairn_db *db, uint64_t n);

/* Change the retention policy the same way (CAIRN_EINVAL for an invalid
 * one). */
int cairn__set_retain(cairn_db *db, const cairn_retention *r);

/* Change the tier settings (0 = unchanged): a new MANIFEST. Errors:
 * CAIRN_EINVAL (out of range: cairn__tier_settings_ok), CAIRN_EPERM,
 * the MANIFEST write's. */
int cairn__set_tiers(cairn_db *db, uint32_t reflect, uint32_t core, uint32_t section);

/* Register a named record type in the MANIFEST (cairn_type_register). */
int cairn__register_type(cairn_db *db, const char *name, uint16_t *type);

/* The store's label rule (MAN_LABELS_EXACT or _FOLDED). */
uint32_t cairn__label_rule(cairn_db *db);

/* The highest seq compaction ever dropped, as this handle's view has it
 * (takes mu; 0: none). An engine whose fold stopped before it folds again
 * from its index file: records it never read may be gone. */
uint64_t cairn__dropped_upto(cairn_db *db);
/* The MANIFEST's synced_seq as this handle last read it: every record up
 * to it was durable when it was recorded. */
uint64_t cairn__synced_seq(cairn_db *db);
/* Memories whose going compaction dropped, over the store's life
 * (MANIFEST deaths_dropped, as of the handle's view). */
uint64_t cairn__deaths_dropped(cairn_db *db);

/* The store setting max_memories as this handle's view has it (takes mu). */
uint64_t cairn__max_memories(cairn_db *db);

/* The newest record at or before seq (*found 0 when there is none, *sum 0)
 * and its checksum (the record's last 8 bytes, seeded with its segment's
 * salt: no other store or segment has the same); *sealed: it is in a
 * sealed segment. Errors: as cairn_iter_next (the message in the db), with
 * *found and *sealed naming the record that could not be read. */
int cairn__record_at_or_before(cairn_db *db, uint64_t seq, uint64_t *found, uint64_t *sum,
                               int *sealed);

/* fdatasync the segment a batch roll left unsynced, if any (mu held;
 * released during the sync). */
int cairn__sync_closed(cairn_db *db);

/* fdatasync every closed segment not sealed yet (`none` mode leaves them
 * to their seal; cairn_sync and close call this; mu held, released during
 * each sync). */
int cairn__sync_unsealed(cairn_db *db);

/* Write path (append.c). */
int cairn__flush_locked(cairn_db *db);
int cairn__bg_start(cairn_db *db);
void cairn__bg_stop(cairn_db *db);
/* A writer's close: an active segment into which this handle wrote
 * ROLL_AT_CLOSE_MIN bytes or more is rolled (in a turn), so that the
 * close seals it and later opens read its block index instead of scanning
 * it record by record (mu held). A handle that wrote less leaves it to
 * the writer that filled it: a CLI call next to a busy log pipeline does
 * not pay for sealing the pipeline's records. */
#define ROLL_AT_CLOSE_MIN (4ull << 20)
int cairn__roll_at_close(cairn_db *db);
/* Seal every closed segment: deferred work (its callers drop the error:
 * the sealer thread, a roll's append, open and close), so a failure that
 * kills the handle is reported by the next call. cairn_seal and cairn_roll
 * report theirs at once. */
int cairn__seal_pending(cairn_db *db);

/* The last seq an iterator can see: it has read every record of its range
 * up to it once cairn_iter_next says the end. */
uint64_t cairn__iter_limit(const cairn_iter *it);

#endif /* CAIRN_STORE_H */
