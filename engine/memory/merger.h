/*
 * merger.h - the memory engine's background thread: merges of index files
 * (format-spec/memindex.md, "Generations") and compaction of the log.
 *
 * A checkpoint of a handle with background threads writes only what
 * changed since its files (a generation on them): a close and a flush of
 * a big RAM tail then cost what is new, never the whole index. Merging the
 * generations into larger files, by the size-ratio policy, is this
 * thread's work: it maps the files on its own, writes the merged file
 * beside them, and puts it in place in one turn, after checking that the
 * files it merged are still those on disk. The handle's own state is the
 * same before and after (a merge changes files, not the fold), so the
 * handle reads the merged chain only at its next checkpoint.
 *
 * It also puts a flush's file in place (memory.c, "Deferred flushes"):
 * its fsync outside the handle's lock, its rename and MANIFEST in a turn;
 * and it unmaps and frees what a flush let go of (the files it no longer
 * reads, the RAM tail's text index), which is then its time, not the
 * store loop's.
 *
 * The same thread compacts the log under the retention policy when the
 * pace says enough has gone (format-spec/compaction.md, "In the
 * background"): after merges, at open, and every 30 seconds. The
 * compaction itself is retain.c's.
 *
 * Shared and not: the thread itself (its kicks, its looks every 30 s, its
 * stop without waiting, the hand-over of what it unmaps and frees, and
 * its join) is the background worker the reflexion's merge uses too
 * (engine/log/bgwork.h); the step it runs, what an unmap or a free of an
 * index is, and the hold of the compaction are the memory layer's
 * (merger.c).
 */
#ifndef CAIRN_MERGER_H
#define CAIRN_MERGER_H

#include "cairn.h"

typedef struct cairn__merger cairn__merger;

/* Start the thread for m. CAIRN_ENOMEM, or CAIRN_EIO when no thread starts. */
int cairn__merger_new(cairn__merger **out, cairn_mem *m);

/* Ask for a merge step (the thread merges while the policy says so). */
void cairn__merger_kick(cairn__merger *g);

/* Hand the thread a mapping of an index file the handle no longer uses:
 * unmapping a file a merge replaced frees its page cache (tens to hundreds
 * of ms), which is then the thread's time, not a flush's. 0: the thread
 * unmaps it; -1: it cannot (stopping, no memory), the caller does. */
int cairn__merger_unmap(cairn__merger *g, void *map, size_t len);

/* The same for a text index the handle no longer uses: freed here, as
 * the thread's time. */
struct cairn__ramidx;
int cairn__merger_free_index(cairn__merger *g, struct cairn__ramidx *x);

/* The handle's user compacts or purges (cairn_mem_compact,
 * cairn_mem_purge): a compaction of the thread under way is given up and
 * waited for, and none starts until the release. Accepts NULL. Call
 * without the handle's lock (the compaction may wait for it). */
void cairn__merger_hold(cairn__merger *g);
void cairn__merger_release(cairn__merger *g);

/* Ask the thread to stop without waiting: the merge or compaction under
 * way gives up at its next look (a few ms), while the caller goes on
 * (a close writes its own file meanwhile). Nothing is merged or compacted
 * after it. Accepts NULL. */
void cairn__merger_ask_stop(cairn__merger *g);

/* Stop the thread, giving up a merge under way (its temp file removed),
 * and free. Accepts NULL. Call without the handle's lock. */
void cairn__merger_free(cairn__merger *g);

/* How a background compaction is paced: what was gone and the log's
 * bytes when the handle last compacted (or opened), and what came of it. */
typedef struct cairn__compact_pace {
    uint64_t gone;       /* memories gone whose records the log may hold */
    uint64_t log_bytes;  /* bytes of the log's files */
    uint64_t pending;    /* of them, kept by the last one only for a record
                            not sealed yet or an index file that held them */
    uint64_t sealed;     /* the end of the sealed prefix then */
    uint64_t covered;    /* the newest index file then */
    uint64_t runs, dropped; /* compactions run in the background, records dropped */
    int last_rc;         /* the last one's status */
    int64_t retry_ms;    /* wall ms: due again then whatever the counts (the
                            grace period of many kept is over); 0: none */
} cairn__compact_pace;

/* At least this many memories gone before a compaction is worth a pass. */
#define COMPACT_MIN_GONE 1000

/* What a look at the store sees (cairn__compact_pace fields, as of now). */
typedef struct cairn__compact_look {
    uint64_t gone, live, log_bytes, sealed, covered, segment_size;
} cairn__compact_look;

/* The policy (format-spec/compaction.md, "In the background"): under live,
 * once the memories gone whose records the log may still hold grew by a
 * quarter of the live memories (at least COMPACT_MIN_GONE), or as many were
 * pending and the sealed prefix or the newest index file moved; with an
 * event limit, once the log grew by a quarter (at least one segment).
 * 1: due. (cairn__mem_compact_step also runs one when p->retry_ms has
 * come.) */
int cairn__compact_due(const cairn_retention *r, const cairn__compact_look *now,
                       const cairn__compact_pace *p);

/* The pace as of now: memories gone so far count, the log's bytes do not. */
void cairn__compact_pace_init(cairn_mem *m, cairn__compact_pace *p);

/* A compaction under the store's retention policy, if the pace says one is
 * due: with its own state (the handle's lock taken only to swap the files
 * in; a merge of every index file into one first, under live), never
 * rolling the active segment, given up when *stop is set. 1 if it ran, 0
 * if none was due (or another compaction runs), or an error (nothing
 * changed). Call without m's lock. */
int cairn__mem_compact_step(cairn_mem *m, cairn__compact_pace *p, const int *stop);

/* Merge every index file on disk into one whole file (the merger's way:
 * without m's lock but for the swap). 1 if it merged, 0 if there was
 * nothing to merge or it gave up, or an error. */
int cairn__mem_merge_whole(cairn_mem *m, const int *stop);

/* One merge by the policy over m's files on disk, if one is due, given up
 * when *stop is set (read with __atomic_load_n; memory.c). Returns 1 if it merged, 0 if none was due
 * or it gave up, or an error. */
int cairn__mem_merge_step(cairn_mem *m, const int *stop);

/* Put a flush's file in place (memory.c, "Deferred flushes"): its fsync
 * without m's lock, given up when *stop is set, then the rename and the
 * MANIFEST in a turn. Nothing pending, or given up: nothing changes. Call
 * without m's lock. */
void cairn__mem_pend_step(cairn_mem *m, const int *stop);

#endif /* CAIRN_MERGER_H */
