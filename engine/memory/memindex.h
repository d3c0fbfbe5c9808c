/*
 * memindex.h - the memory index file (format-spec/memindex.md): the state
 * of every live memory up to one sequence number, with a text index per
 * namespace, written once and then read in place through mmap, so that
 * opening a store replays only the records after it.
 *
 * The file is a cache of the log, never the source of truth: a missing,
 * stale or damaged file is set aside and the state rebuilt from the log.
 * What is read at open (header, namespace table, id and content hash
 * tables, each text index's dictionary and document tables) is checked
 * against sums at open; a row is checked when first read, a term's
 * postings when a query first reads them.
 */
#ifndef CAIRN_MEMINDEX_H
#define CAIRN_MEMINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "cairn.h"
#include "cairn_sys.h"
#include "logbind.h"
#include "ramindex.h"
#include "seqfile.h"
#include "status.h"
#include "vecset.h"

#define MX_NAME_MAX 48
/* Offsets in the header (format-spec/memindex.md): the common file
 * header, then the memory index header, MX_HEAD_LEN bytes in all. */
#define MX_HEAD_LEN 200
#define MX_NS_SUM 144     /* XXH3-64 of the namespace table */
#define MX_TABLES_SUM 152 /* XXH3-64 of the two hash tables */
#define MX_BIND_OFF 160   /* the binding block (logbind.h) */
#define MX_UNSYNCED_BOOT 192 /* u64: 0, or the boot a file put in place unsynced was written in */

/* Slots of a file's id and content tables for n rows: at most 3/4 full
 * (and at least 16), of any size, not a power of 2: 21 bytes a row where a
 * power of 2 at most half full took 32 at 262,144 rows. */
#define MX_TCAP(n) ((n) + (n) / 3 + 1)

/* Where a probe of a file's table for hash h starts: the low 32 bits of h
 * scaled to tcap (the top 32 are the slot's tag). */
static inline uint64_t cairn__mx_slot(uint64_t h, uint64_t tcap)
{
    return (uint64_t)(((unsigned __int128)(uint32_t)h * tcap) >> 32);
}

/* A row's flags: a row that changes a memory of a file below (a shadow
 * row, at the front of a generation file) may say the memory died. */
#define MX_ROW_DEAD 1u

/* One row, decoded and checked. Strings point into the mapping and are
 * NUL-terminated; metadata is NULL when the memory has none. An id the
 * file keeps as its 64-bit value is rendered into idbuf, so id may point
 * into the struct itself and lives only as long as it: whoever copies a
 * row read by cairn__mx_row points the copy's id at the copy's idbuf when
 * the original's pointed at its own (or copies the id out). */
typedef struct mx_row {
    uint64_t seq;
    double importance;
    int64_t created, accessed, expires;
    uint64_t access_count;
    uint64_t content_hash;
    const char *content, *id, *category, *metadata;
    uint32_t content_len;
    uint32_t nsi;
    uint32_t flags;          /* MX_ROW_DEAD; 0 for every row but a shadow's */
    char idbuf[CAIRN_MEM_ID_MAX + 1]; /* "m" + 16 hex digits read from 8 bytes;
                                         unused by the writer */
} mx_row;

typedef struct memindex {
    uint8_t *map;
    size_t len;
    char name[MX_NAME_MAX];
    cairn__fileid id;        /* the file the name held when mapped (kept, as
                                the name, after a failed open) */
    char stemmer[32];
    uint32_t version;        /* as read; only the newest is used */
    cairn__logbind bind;     /* the log it was folded from */
    uint64_t covered;        /* every record up to this seq is folded in */
    uint64_t base;           /* 0: a whole file; else the covered seq of the
                                file this generation lies on */
    uint64_t n_shadow;       /* rows 0..n_shadow-1: changes to memories of
                                the files below (seq <= base) */
    uint64_t skipped;        /* records replay could not apply, up to covered */
    uint64_t deleted;        /* memories deleted or cleared, up to covered */
    uint64_t unsynced_boot;  /* 0: synced before it was put in place; else
                                written without a sync in this boot (boot.h) */
    uint64_t nrows, n_ns, tcap, heap_len;
    const uint8_t *nstab, *rows, *heap;
    const uint64_t *idtab, *ctab; /* row + 1 | the hash's top 32 bits << 32;
                                     0 empty; tcap slots */
} memindex;

/* Map the newest index file of the store directory whose covered seq is
 * at most max_seq; with exact set, the file covering exactly max_seq (a
 * generation's base). CAIRN_ENOTFOUND: there is none. Any other error (with
 * the file's name in e): the file is unusable (damaged, another version,
 * newer than the log); mx->name says which, for the caller to set aside. */
int cairn__mx_open(memindex *mx, const cairn_io *io, int dirfd, uint64_t max_seq, int exact,
                   cairn__err *e);

/* The checks of cairn__mx_open over bytes already in mx->map (8-byte
 * aligned, mx->len long; mx->name names them in messages): for tests and
 * fuzzing. mx->map is not unmapped by this call. */
int cairn__mx_parse(memindex *mx, cairn__err *e);

/* After cairn__mx_open failed with CAIRN_EVERSION: 1 if the file is of an
 * older version (a stale cache: rebuilt, and replaced by the next
 * checkpoint), 0 if newer (left alone). */
int cairn__mx_is_older(const memindex *mx);

/* Unmap; accepts a zeroed memindex. */
void cairn__mx_close(memindex *mx);

/* Namespace i: its name (NUL-terminated), live memories, its text index
 * and its vectors (NULL: none) mapped from the file (the caller frees
 * both before closing mx).
 * Errors: CAIRN_ECORRUPT, CAIRN_ECHECKSUM, CAIRN_ENOMEM. */
int cairn__mx_ns(const memindex *mx, size_t i, const char *stemmer, const char **name,
                 uint64_t *live, cairn__ramidx **idx, cairn__vecset **vec);

/* Row i, checked against its sum. Errors: CAIRN_ECHECKSUM, CAIRN_ECORRUPT. */
int cairn__mx_row(const memindex *mx, size_t i, mx_row *r);

/* The byte offset of row i in the file (for messages). */
uint64_t cairn__mx_row_offset(const memindex *mx, size_t i);

/* The seq of row i as stored (unchecked: for binary search only). */
uint64_t cairn__mx_row_seq(const memindex *mx, size_t i);

/* What one file holds, for cairn__mx_write. */
typedef struct mx_ns_in {
    const char *name;
    uint64_t live;
    const cairn__ramidx *idx; /* its live documents; not mapped */
    cairn__vecset *const *vecs; /* its vectors: the live rows of these */
    size_t n_vecs;
    cairn__ramidx *const *merge; /* or, n_merge > 0: the live documents of
                                    these, merged as they are written */
    size_t n_merge;
    const cairn__ramidx_image *img; /* n_merge 0: idx's image, made already
                                       (NULL: made as it is written) */
} mx_ns_in;

typedef struct mx_in {
    uint64_t covered, skipped, deleted;
    uint64_t base;           /* 0: a whole file; else a generation on the
                                file covering base */
    size_t n_shadow;         /* rows 0..n_shadow-1 change memories of the
                                files below: in no hash table, no text or
                                vector image; their content is not written */
    cairn__logbind bind;     /* cairn__logbind_make for covered */
    const char *stemmer;
    const mx_ns_in *ns;
    size_t n_ns;
    const mx_row *rows;      /* live memories in seq order; content_hash and
                                nsi as the engine computes them */
    size_t nrows;
    /* Or, with row_at set (rows unused): row i filled in on demand, so the
     * writer needs no copy of every row at once. */
    void (*row_at)(void *user, size_t i, mx_row *out);
    void *row_user;
    uint64_t (*hash_id)(const char *id);
    /* Optional. gate: called once the temp file is whole and synced, just
     * before it is renamed into place; an error stops there (the temp file
     * is removed) and is returned. stop: a write that finds *stop set ends
     * with CAIRN_ELOCKED (a merge given up; read with __atomic_load_n). */
    int (*gate)(void *user);
    void *gate_user;
    uint64_t temp_salt;      /* nonzero: the temp file's own name (seqfile.h) */
    /* Optional: the file is left under its temp name, whole but not
     * synced (its writeback started), and no gate is called; its fd (open
     * for reading and writing) is returned here, for cairn__mx_map_fd and
     * then cairn__mx_put_in_place or cairn__mx_drop_temp. */
    int *temp_fd;
    /* Optional: nonzero (cairn__boot_id), the file is put in place without
     * its fsync and says so (format-spec/memindex.md, "Files written
     * without a sync"); the gate is still called before the rename. */
    uint64_t unsynced_boot;
    const int *stop;
    /* Optional: called with hook_user once the rows and strings are
     * written, before the first text image is read (a thread still adding
     * texts to the indexes finishes meanwhile); an error ends the write. */
    int (*images_ready)(void *user);
    void *hook_user;
    int *merge_damaged;      /* set to 1 (if not NULL) when the write failed
                                because a text image merged from (mx_ns_in
                                merge) is damaged */
} mx_in;

/* Write the file for `in` (temp file, fsync, rename, fsync the directory).
 * Older files stay: the caller removes those no chain needs. Errors: CAIRN_EIO, CAIRN_EFULL,
 * CAIRN_ENOMEM, CAIRN_EINVAL. */
int cairn__mx_write(const cairn_io *io, int dirfd, const mx_in *in, cairn__err *e);

/* Map the file cairn__mx_write left under its temp name (in->temp_fd),
 * checked as cairn__mx_open checks a file; mx->name is the name it will
 * have in place. The fd stays open. Errors as cairn__mx_open's. */
int cairn__mx_map_fd(memindex *mx, int fd, uint64_t covered, cairn__err *e);

/* Put that file in place: fsync, close fd, rename to its name, fsync the
 * directory. With unsynced_boot (cairn__boot_id), instead: its header
 * made to name that boot, close, rename, no fsync (format-spec/
 * memindex.md, "Files written without a sync"). The temp file is removed
 * on failure. The caller has made the log it covers durable and lists the
 * file in the MANIFEST after. Errors: CAIRN_EIO, CAIRN_EFULL. */
int cairn__mx_put_in_place(const cairn_io *io, int dirfd, int fd, uint64_t covered,
                           uint64_t temp_salt, uint64_t unsynced_boot, cairn__err *e);

/* Or give it up: close fd, remove the temp file. */
void cairn__mx_drop_temp(const cairn_io *io, int dirfd, int fd, uint64_t covered,
                         uint64_t temp_salt);

/* Check every byte of a mapped file: rows, postings and all. For verify.
 * Errors as above, the first problem named in e with its byte offset in
 * the file, which also goes to *off. */
int cairn__mx_check_all(const memindex *mx, uint64_t *off, cairn__err *e);

#endif /* CAIRN_MEMINDEX_H */
