/*
 * seqfile.h - files named by the sequence number they cover, PREFIX + 16
 * hex digits + SUFFIX ("mem-00000000000003e8.cmx"): the derived files
 * (memory index, graph file) that cache a fold of the log up to that seq.
 * Finding the newest usable one, mapping it, and removing the older ones
 * are the same for every kind. A kind's prefix is lowercase letters ending
 * in '-' and its suffix '.' and 1..8 lowercase letters (see
 * cairn__seqfile_is_temp).
 */
#ifndef CAIRN_SEQFILE_H
#define CAIRN_SEQFILE_H

#include <stddef.h>
#include <stdint.h>

#include "cairn_sys.h"
#include "status.h"

typedef struct cairn__seqfile_kind {
    const char *prefix, *suffix;
    const char *site_open, *site_close, *site_unlink; /* fault-injection names */
} cairn__seqfile_kind;

/* The derived files of a store: the memory index, the graph file and the
 * graph generations. */
extern const cairn__seqfile_kind cairn__seqfile_memindex;
extern const cairn__seqfile_kind cairn__seqfile_graph;
extern const cairn__seqfile_kind cairn__seqfile_graphgen;

/* The seq a file name of this kind carries; 0 if it is not one. */
int cairn__seqfile_parse(const cairn__seqfile_kind *k, const char *name, uint64_t *seq);

/* Is name the temp file (NAME.tmp or NAME.<16 hex>.tmp, written and then
 * renamed over NAME) of a file of any kind? Every kind's prefix is
 * lowercase letters ending in '-' and its suffix '.' and 1..8 lowercase
 * letters, so this needs no list of the kinds: a kind added later is
 * covered too. */
int cairn__seqfile_is_temp(const char *name);

/* The file name of this kind for seq into out (cap bytes). */
void cairn__seqfile_name(const cairn__seqfile_kind *k, uint64_t seq, char *out, size_t cap);

/* The temp name a write of this file uses: NAME.tmp (salt 0: a write in
 * the writer's turn, the only one there can be), or NAME.<salt as 16 hex>.tmp
 * (a merger, which writes outside the turn and only renames inside it: two
 * merging at once never write one file). cap: at least SEQFILE_TEMP_MAX. */
#define SEQFILE_TEMP_MAX 72
void cairn__seqfile_temp(const cairn__seqfile_kind *k, uint64_t seq, uint64_t salt, char *out,
                         size_t cap);

/* Map (read-only, shared) the newest file of this kind whose seq is at most
 * max_seq: its name into name (cap bytes), its seq, its bytes. A file
 * shorter than min_len is CAIRN_ECORRUPT. CAIRN_ENOTFOUND: none. Other
 * errors (CAIRN_EIO, CAIRN_ECORRUPT) leave the name set for the caller to
 * set the file aside. */
int cairn__seqfile_map(const cairn__seqfile_kind *k, const cairn_io *io, int dirfd,
                       uint64_t max_seq, char *name, size_t cap, uint64_t *seq, uint8_t **map,
                       size_t *len, size_t min_len, cairn__err *e);

/* Remove every file of this kind but `keep`, and stray temp files
 * (NAME.tmp) of other seqs. Failures leave a stale file, which the next
 * open passes over for the newest. */
void cairn__seqfile_remove_older(const cairn__seqfile_kind *k, const cairn_io *io, int dirfd,
                                 const char *keep);

/* Remove every file of this kind whose seq is not among keep[0..n_keep),
 * and the temp files of those seqs. Best effort, as above. */
void cairn__seqfile_remove_except(const cairn__seqfile_kind *k, const cairn_io *io, int dirfd,
                                  const uint64_t *keep, size_t n_keep);

/* The highest seq a file of this kind in the directory carries (0: none).
 * Names only: the file may still be unusable. */
uint64_t cairn__seqfile_newest(const cairn__seqfile_kind *k, int dirfd);

/* The seqs of the files of this kind in the directory, up to cap of them
 * into out; returns how many there are (more than cap: call again). */
size_t cairn__seqfile_list(const cairn__seqfile_kind *k, int dirfd, uint64_t *out, size_t cap);

/* Remove every file of this kind (and its temp file) whose seq is at least
 * from_seq: files folded over records the log no longer holds. Best effort
 * (a file left is still refused by its binding). */
void cairn__seqfile_remove_from(const cairn__seqfile_kind *k, const cairn_io *io, int dirfd,
                                uint64_t from_seq);

#endif /* CAIRN_SEQFILE_H */
