/*
 * compact.h - rewriting sealed segments without the records an engine no
 * longer needs (format-spec/compaction.md).
 *
 * The engine decides, record by record, in seq order over the sealed
 * prefix of the log (every segment from the first up to the first that is
 * not sealed): keep it, or drop it. A segment that loses records is
 * written anew as <id>-<rev+1>.seg, version 2: the records kept, byte for
 * byte, and for each run of dropped records one hole (hole.h) that stands
 * for their seqs, outside any turn (the compaction lock keeps other
 * compactions off). Then, in one turn, one MANIFEST names every new file
 * at once, and the old files are unlinked: a reader either opened the old set of files or
 * the new one (a file vanishing under a reader's open makes it read the
 * MANIFEST again), and one that has a file open keeps it.
 * A crash before the MANIFEST leaves new files no entry names; after it,
 * old ones: the next writer open removes either.
 */
#ifndef CAIRN_COMPACT_H
#define CAIRN_COMPACT_H

#include <stddef.h>
#include <stdint.h>

#include "cairn.h"

#define CAIRN__KEEP 0
#define CAIRN__DROP 1
#define CAIRN__DROP_DEATH 2 /* dropped, and it recorded a memory's going
                               (counted in the hole's "deaths") */
#define CAIRN__DROP_UNREAD 3 /* dropped; no engine's fold reads it (an event):
                                dropped_upto stays, no handle folds again */

/* The engine's verdict on rec (not a hole): *verdict one of the above.
 * A status other than CAIRN_OK stops the compaction (nothing written). */
typedef int (*cairn__compact_fn)(void *user, const cairn_record *rec, int *verdict);

typedef struct cairn__compact_result {
    uint64_t segments;       /* sealed segments looked at */
    uint64_t rewritten;      /* of them, written anew (or that would be) */
    uint64_t dropped;        /* records dropped now */
    uint64_t dropped_bytes;  /* their encoded bytes */
    uint64_t records_before, records_after; /* records in the whole log */
    uint64_t bytes_before, bytes_after;     /* bytes of its segment files */
    uint64_t upto;           /* the last seq of the sealed prefix (0: none) */
} cairn__compact_result;

/* Called in the turn that swaps the new files in, before anything is
 * written (check), or just before that turn is taken (before, without
 * the db's lock: an engine takes its own locks there, in the order its
 * writers take them): CAIRN_OK to go on, else the status the compaction
 * returns (nothing changed; the new files go). */
typedef int (*cairn__compact_check_fn)(void *user);

/* Run it: fn sees every record of the sealed prefix but holes, in order;
 * dry_run computes the result and writes nothing. The MANIFEST's
 * deaths_dropped becomes the deaths the holes of the sealed prefix stand
 * for (written anew for that alone when it was wrong). `why` goes into the
 * holes. anchors (n_anchors, sorted or not): the seqs derived files of the
 * store cover; a dropped record at one of them leaves its checksum in its
 * hole, so the file's binding still holds. The caller holds the
 * compaction lock (cairn__compact_lock), not a turn: the files are read
 * and written outside any turn, and one turn swaps them in (check first).
 * stop (NULL: none), read with __atomic_load_n between segments and every
 * 4,096 records written: once set, the compaction is given up (nothing
 * changed) with CAIRN_ELOCKED.
 * Errors: fn's, check's;
 * CAIRN_EIO, CAIRN_EFULL (nothing changed: the temp is removed),
 * CAIRN_ECHECKSUM / CAIRN_ECORRUPT (a block that does not read: nothing
 * written), CAIRN_ENOMEM; the message in the db. */
int cairn__compact(cairn_db *db, const char *why, int dry_run, const uint64_t *anchors,
                   size_t n_anchors, cairn__compact_fn fn, cairn__compact_check_fn before,
                   cairn__compact_check_fn check, void *user, const int *stop,
                   cairn__compact_result *out);

/* Records in the log (a hole is one) and bytes of its segment files (a
 * log-form segment: its records). */
void cairn__compact_totals(cairn_db *db, uint64_t *records, uint64_t *bytes);

#endif /* CAIRN_COMPACT_H */
