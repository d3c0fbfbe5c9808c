/*
 * seqfile.h - files named by the sequence number they cover, PREFIX + 16
 * hex digits + SUFFIX ("mem-00000000000003e8.cmx"): the derived files
 * (memory index, graph file, graph generations) that cache a fold of the
 * log up to that seq. A kind's prefix is lowercase letters ending in '-'
 * and its suffix '.' and 1..8 lowercase letters (see
 * cairn__seqfile_is_temp).
 *
 * The MANIFEST lists the live ones (format-spec/manifest.md, "Derived
 * files"): kind, seq, length and the file's header sum. A reader uses only
 * a listed file whose length and header sum are the listed ones; a file of
 * such a name the MANIFEST does not list is a leftover (a write a crash cut
 * short between its rename and the MANIFEST), never read, and removed by
 * the next writer's open. A writer renames a new file into place and then,
 * in the same turn, lists it in a new MANIFEST (cairn__seqfile_publish),
 * which drops the files it replaces; only then are those unlinked. Only a
 * writer's turn changes the list: readers, and a writer's fold while it
 * waits for the lock, never take the turn here (setting a damaged file
 * aside only unlinks it; the next writer's open settles the list).
 */
#ifndef CAIRN_SEQFILE_H
#define CAIRN_SEQFILE_H

#include <stddef.h>
#include <stdint.h>

#include "cairn.h"
#include "cairn_sys.h"
#include "status.h"

/* Which file a name held when it was mapped: a writer may put another in
 * place under the name since (even of the same bytes' header). */
typedef struct cairn__fileid {
    uint64_t dev, ino;
    int64_t ctime_ns;
} cairn__fileid;

struct stat;
/* The id of the file st describes. */
void cairn__seqfile_id_of(const struct stat *st, cairn__fileid *id);

typedef struct cairn__seqfile_kind {
    const char *prefix, *suffix;
    const char *site_open, *site_close, *site_unlink; /* fault-injection names */
    uint8_t code; /* its kind in the MANIFEST's list (MAN_FILE_*) */
    int has_base; /* header byte 24: u64 covered seq of the file it lies on (0: a
                     whole file); a merge may put its file under a listed name */
} cairn__seqfile_kind;

/* The derived files of a store: the memory index, the graph file and the
 * graph generations. */
extern const cairn__seqfile_kind cairn__seqfile_memindex;
extern const cairn__seqfile_kind cairn__seqfile_graph;
extern const cairn__seqfile_kind cairn__seqfile_graphgen;

/* Every kind, in the order of their codes (MAN_FILE_MEMINDEX first). */
#define SEQFILE_KINDS 3
extern const cairn__seqfile_kind *const cairn__seqfile_kinds[SEQFILE_KINDS];

/* The kind of a code of the MANIFEST's list (a valid one). */
const cairn__seqfile_kind *cairn__seqfile_kind_of(uint8_t code);

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
/* A temp a writer puts in place outside its turn (a merger's, a deferred
 * flush's, named with a salt) is held, from its creation to its rename or
 * removal, by an open-file-description write lock on its fd: a writer's
 * open leaves a held one alone (cairn__seqfile_temp_in_use), and the lock
 * goes with the last fd, so a crash leaves nothing held. Best effort. */
void cairn__seqfile_temp_hold(int fd);

/* Is n a salted temp that some fd holds (cairn__seqfile_temp_hold)? */
int cairn__seqfile_temp_in_use(int dirfd, const char *n);

void cairn__seqfile_temp(const cairn__seqfile_kind *k, uint64_t seq, uint64_t salt, char *out,
                         size_t cap);

/* Map (read-only, shared) the newest listed file of this kind whose seq is
 * at most max_seq: its name into name (cap bytes), its seq, its bytes. The
 * list is the MANIFEST's as it is now (a directory without MANIFEST: the
 * files it holds). A file being replaced under its name (a merge) is
 * waited for: its length or header sum differ from the list until the
 * writer's new MANIFEST lists it, moments later. A listed file that is
 * missing, or is not the listed bytes, is passed over for the next one
 * down (never set aside: it may be a writer's). CAIRN_ENOTFOUND: none.
 * Other errors (CAIRN_EIO; CAIRN_ECORRUPT: shorter than min_len) leave the
 * name set for the caller to set the file aside. */
int cairn__seqfile_map(const cairn__seqfile_kind *k, const cairn_io *io, int dirfd,
                       uint64_t max_seq, char *name, size_t cap, uint64_t *seq, uint8_t **map,
                       size_t *len, size_t min_len, cairn__fileid *id, cairn__err *e);

/* The highest seq a listed file of this kind carries (0: none). When the
 * MANIFEST cannot be read: UINT64_MAX, which every caller takes for "the
 * files changed" and reads them again (where the failure shows). */
uint64_t cairn__seqfile_newest(const cairn__seqfile_kind *k, const cairn_io *io, int dirfd);

/* The seqs of the listed files of this kind, up to cap of them into out
 * (oldest first); *n how many there are (more than cap: call again).
 * Errors: those of reading the MANIFEST (the message in e). */
int cairn__seqfile_list(const cairn__seqfile_kind *k, const cairn_io *io, int dirfd,
                        uint64_t *out, size_t cap, size_t *n, cairn__err *e);

/* A change of the list, written as one new MANIFEST in the caller's turn
 * (a writer; the caller must not hold db->mu). */
typedef struct cairn__seqfile_change {
    const cairn__seqfile_kind *k;
    int adding;            /* the file of seq `add` was just renamed into
                              place: listed (its length and header sum read
                              from it), and synced_seq raised to it (the
                              caller synced the log first) */
    uint64_t add;
    const uint64_t *keep;  /* with keep_only: every other file of k goes */
    size_t n_keep;
    int keep_only;
    const uint64_t *drop;  /* these files of k go */
    size_t n_drop;
    uint64_t drop_from;    /* the files of k from this seq on go (0: none) */
    const cairn__seqfile_kind *clear; /* every file of this kind goes (NULL: none) */
} cairn__seqfile_change;

/* Apply c: the new MANIFEST first, then the files that went are unlinked
 * (with keep_only, also unlisted files of k and their NAME.tmp: leftovers).
 * Unlinks are best effort (a file left is unlisted: never read, removed by
 * the next writer open). Errors: the MANIFEST write's and reading the
 * added file's header (the message in e); the added file then stays
 * unlisted. */
int cairn__seqfile_change_apply(cairn_db *db, const cairn__seqfile_change *c, cairn__err *e);

/* The common changes. Publish: list the file of seq just renamed into
 * place; keep (n_keep) as above, NULL: nothing else goes. */
int cairn__seqfile_publish(cairn_db *db, const cairn__seqfile_kind *k, uint64_t seq,
                           const uint64_t *keep, size_t n_keep, cairn__err *e);

/* Every file of this kind whose seq is not among keep[0..n_keep) goes, and
 * the temp files (NAME.tmp) of those seqs. Best effort. */
void cairn__seqfile_remove_except(cairn_db *db, const cairn__seqfile_kind *k,
                                  const uint64_t *keep, size_t n_keep);

/* Every file of this kind whose seq is at least from_seq goes (files
 * folded over records the log no longer holds). Best effort. */
void cairn__seqfile_remove_from(cairn_db *db, const cairn__seqfile_kind *k, uint64_t from_seq);

/* A writer's open (in its turn: no write of a derived file is in flight)
 * settles the list with the directory: a listed file that is missing, or
 * whose header is damaged, is dropped; one whose bytes are another whole
 * file (put in place under a listed name by a write whose MANIFEST never
 * came: a crash, a failed MANIFEST write) is listed as it is, for its own
 * checks and binding to decide; of a kind with has_base, the listed files
 * it replaces (between its base and its seq, when its base is listed and
 * there; every older one for a whole file) go in the same MANIFEST. */
void cairn__seqfile_settle(cairn_db *db);

/* Set the damaged file `name` of this kind aside: unlink it, if it is still
 * the file found damaged (seen: the file the name held when it was mapped),
 * never one a writer put in place since. The list is not changed (no turn
 * is taken: a reader, or a writer's fold while it waits for the lock):
 * readers pass a listed file that is missing over, and the next writer's
 * open drops it. Best effort. */
void cairn__seqfile_set_aside(cairn_db *db, const cairn__seqfile_kind *k, const char *name,
                              const cairn__fileid *seen);

/* Check every listed file that is present: of its listed length and header
 * sum (a missing one is taken as not there, as readers do). Each problem to
 * fn (as cairn_verify reports), counted in *problems. */
void cairn__seqfile_verify(cairn_db *db, cairn_verify_fn fn, void *user, uint64_t *problems);

#endif /* CAIRN_SEQFILE_H */
