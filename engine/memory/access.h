/*
 * access.h - access statistics without a log write per read
 * (format-spec/access.md, README "Access statistics").
 *
 * A recall appends one 24-byte entry per memory it returns to the side
 * file ACCESS (accfile.h), in one write(2) with O_APPEND: any handle, also a
 * read-only one (the one file a read-only handle writes), never the log.
 * A memory's accessCount and accessedAt are its folded values (the log's
 * memory.access records) plus the entries of ACCESS no record has folded
 * yet ("pending"), which every handle reads as the file grows (only the new
 * bytes: fstat + pread). A writer folds the pending entries into the log,
 * one memory.access record per fold, coalesced per memory, and replaces
 * ACCESS by a fresh file first; see cairn__mem_access_fold.
 *
 * Everything here runs with cairn_mem.mu held.
 */
#ifndef CAIRN_ACCESS_H
#define CAIRN_ACCESS_H

#include <stddef.h>
#include <stdint.h>

struct cairn_mem;
struct ment;
typedef struct cairn__access cairn__access;

/* Pending entries past which a writer's close folds them (a handle that
 * recalls for hours folds at its next write, or at close past this). */
#define ACC_FOLD_AT_CLOSE (64u * 1024u)

/* Read what ACCESS gained since this handle last looked; open it again if
 * it was replaced. Never fails: a file that cannot be read adds nothing
 * (the ranking then uses the folded statistics alone). */
void cairn__access_refresh(struct cairn_mem *m);

/* Append an entry (seqs[i], at) for each of the n memories in one write.
 * 1: recorded; 0: not (no room, read-only file system, no permission, a
 * damaged file: counted in cairn_mem_access_unrecorded). Creates ACCESS if
 * it is missing. */
int cairn__access_record(struct cairn_mem *m, const uint64_t *seqs, size_t n, int64_t at);

/* x's accessCount / accessedAt: folded plus pending. */
uint64_t cairn__access_count(const struct cairn_mem *m, const struct ment *x);
int64_t cairn__access_last(const struct cairn_mem *m, const struct ment *x);

/* Whether a writer's close should fold: pending entries past
 * ACC_FOLD_AT_CLOSE bytes, or a damaged file to replace. */
int cairn__access_fold_due(struct cairn_mem *m);

/* Accesses this handle could not write to ACCESS since it opened. */
uint64_t cairn__access_unrecorded(const struct cairn_mem *m);

/* Close the file and free the handle's state of it. */
void cairn__access_free(struct cairn_mem *m);

#endif /* CAIRN_ACCESS_H */
