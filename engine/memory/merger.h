/*
 * merger.h - the memory engine's merging thread (format-spec/memindex.md,
 * "Generations").
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
 */
#ifndef CAIRN_MERGER_H
#define CAIRN_MERGER_H

#include "cairn.h"

typedef struct cairn__merger cairn__merger;

/* Start the thread for m. CAIRN_ENOMEM, or CAIRN_EIO when no thread starts. */
int cairn__merger_new(cairn__merger **out, cairn_mem *m);

/* Ask for a merge step (the thread merges while the policy says so). */
void cairn__merger_kick(cairn__merger *g);

/* Stop the thread, giving up a merge under way (its temp file removed),
 * and free. Accepts NULL. Call without the handle's lock. */
void cairn__merger_free(cairn__merger *g);

/* One merge by the policy over m's files on disk, if one is due, given up
 * when *stop is set (read with __atomic_load_n; memory.c). Returns 1 if it merged, 0 if none was due
 * or it gave up, or an error. */
int cairn__mem_merge_step(cairn_mem *m, const int *stop);

#endif /* CAIRN_MERGER_H */
