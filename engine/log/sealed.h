/*
 * sealed.h - sealed segments (format-spec/sealed.md): a full log segment
 * rewritten as independently decodable zstd blocks with a block index and a
 * footer, so any one record is read by inflating one block, and the file can
 * be shipped or audited on its own.
 *
 *   [file header 64: "CAIRNSEG"; fields as in the .log header]
 *   [version 3: dictionary section: u32 dict_len, u32 0, u64 XXH3-64 of the
 *    dictionary, then dict_len bytes of zstd dictionary (0: none)]
 *   [block 0: zstd frame] ... [block n-1: zstd frame]
 *   [block index: n entries of 64 bytes]
 *   [footer: 80 bytes]
 *
 * Block index entry: 0 u64 offset, 8 u32 comp_len, 12 u32 raw_len,
 *   16 u64 first_seq, 24 u64 last_seq, 32 i64 first_ts, 40 i64 last_ts,
 *   48 u32 record_count, 52 u32 reserved (0), 56 u64 XXH3-64 of the frame.
 * Footer: 0 "CAIRNEND", 8 u64 index_offset, 16 u32 block_count,
 *   20 u32 flags (0), 24 u64 record_count, 32 u64 first_seq,
 *   40 u64 last_seq, 48 u64 raw_bytes, 56 u64 XXH3-64 of the index,
 *   64 u64 XXH3-64 of footer bytes [0,64), 72 u64 XXH3-64 of every byte of
 *   the file before this field.
 * Records inside a block are encoded exactly as in the .log file, with the
 * segment's salt; a record never spans two blocks. Version 3 compresses
 * every block with the file's dictionary (trained on its own records), so
 * blocks can be small, and one record is read by inflating a few KiB.
 */
#ifndef CAIRN_SEALED_H
#define CAIRN_SEALED_H

#include <stddef.h>
#include <stdint.h>

#include "cairn.h"
#include "cairn_sys.h"
#include "io.h"
#include "logseg.h"
#include "status.h"

#define SEAL_BLOCK_TARGET (64u * 1024u) /* raw bytes per block, before compression */
/* With a dictionary a small block compresses about as well as a large one
 * without (2.95 against 3.05 on memory records), and a record is read by
 * inflating 4 KiB, not 64: ~4 us, not ~70 us (a recall reads one for each
 * hit it returns: format-spec/memindex.md, the content). */
#define SEAL_DICT_BLOCK_TARGET (4u * 1024u)
#define SEAL_DICT_MAX (32u * 1024u)      /* bytes of a file's dictionary, at most */
/* What sealing trains: 8 KiB compress these records as well as 32 KiB
 * (2.97 against 2.95 at 4 KiB blocks), and a recall's reads, made with
 * cold caches, find less of it to fetch (10-11 us a record against 13). */
#define SEAL_DICT_TRAIN (8u * 1024u)
#define SEAL_DICT_MIN_RAW (256u * 1024u) /* a segment smaller is sealed without one */
#define SEAL_DICT_HEAD 16u               /* dict_len, zero, sum */
#define SEAL_INDEX_ENTRY 64u
#define SEAL_FOOTER_SIZE 80u
#define SEAL_ZSTD_LEVEL 1

typedef struct sealed_block {
    uint64_t offset;
    uint32_t comp_len, raw_len;
    uint64_t first_seq, last_seq;
    int64_t first_ts, last_ts;
    uint32_t count;
    uint64_t sum;
} sealed_block;

/* A validated view of a sealed file held in memory (normally an mmap). */
typedef struct sealed_seg {
    const uint8_t *data;
    size_t size;
    unsigned version;     /* 1; 2: holes stand for several seqs; 3: a dictionary
                             section (and holes allowed) */
    const uint8_t *dict;  /* version 3: the dictionary (inside data), or NULL */
    size_t dict_len;
    void *ddict;          /* its digested form (ZSTD_DDict), made by the owner of
                             the mapping (store.c) and freed by it; NULL:
                             each read digests the dictionary itself */
    uint64_t id, salt, base_seq;
    int64_t created_ms;
    uint64_t index_off;
    uint32_t block_count;
    uint64_t record_count, first_seq, last_seq, raw_bytes; /* record_count: records
                             in the file; first_seq..last_seq: the seqs they
                             stand for (more, in version 2) */
} sealed_seg;

/* The seqs a sealed file stands for (last_seq - base_seq + 1; 0 if none). */
static inline uint64_t cairn__sealed_span(const sealed_seg *s)
{
    return s->last_seq + 1 - s->base_seq;
}

/* Block target of a file with / without a dictionary. */
static inline size_t cairn__seal_block_target(size_t dict_len)
{
    return dict_len ? SEAL_DICT_BLOCK_TARGET : SEAL_BLOCK_TARGET;
}

/* Train a dictionary for a segment's records from samples of them
 * (sample_lens[i] bytes each, concatenated in samples) into dict
 * (SEAL_DICT_TRAIN bytes): its length, or 0 when zstd could not train one
 * (too few or too uniform samples); the file is then sealed without. */
size_t cairn__seal_train(uint8_t *dict, const uint8_t *samples, const size_t *sample_lens,
                         unsigned n);

/* Write <id>.seg from the records of `src` (a scanned log segment): to
 * <id>.seg.tmp, fsync, rename, fsync the directory. *file_size gets the
 * size of the sealed file. chain (may be NULL): the hash chain before the
 * segment, folded on through its records (chain.h): on a thread of its own
 * beside the sealing when parallel, else first. parallel 2: the second
 * half of the blocks compressed on another thread. hurry (may be NULL):
 * once it reads nonzero (a close waits for this seal), the blocks left
 * are split so, as with parallel 2; the same bytes either way. */
int cairn__seal_write(const cairn_io *io, const cairn_allocator *a, int dirfd,
                      const logseg *src, uint8_t *chain, int parallel, const int *hurry,
                      uint64_t *file_size, cairn__err *e);

/* A sealed file being written (sealing, compaction): begin writes the
 * header to <fin>.tmp; blocks follow, given whole (block) or gathered
 * record by record up to the block target (add); finish writes the index
 * and the footer, fsyncs, renames to fin and fsyncs the directory (on
 * failure it removes the temp). abort gives everything back. Every file
 * is written as version 3; dict (dict_len bytes, may be 0) compresses its
 * blocks, and a block copied from another file must come from a file
 * with the same dictionary. `compacting` names the fault-injection sites
 * of a compaction, not a seal's. */
typedef struct cairn__sealw_sites {
    const char *open, *write, *cleanup;
    cairn__publish_sites publish;
} cairn__sealw_sites;

typedef struct cairn__sealw {
    const cairn_io *io;
    const cairn__sealw_sites *sites; /* fault-injection names */
    const cairn_allocator *a;
    int dirfd, fd;
    char fin[LOGSEG_NAME_MAX], tmp[LOGSEG_NAME_MAX + 8];
    uint64_t pos;
    struct XXH3_state_s *hash;
    struct ZSTD_CCtx_s *cctx;
    struct ZSTD_CDict_s *cdict;
    size_t dict_len, target;
    uint64_t dict_sum;
    uint8_t *comp, *index;
    size_t comp_cap, index_cap, nblocks;
    uint64_t raw_total, records, base_seq, next_seq;
    uint8_t *g;           /* the block being gathered by add */
    size_t g_len, g_cap;
    uint64_t g_first, g_last;
    int64_t g_first_ts, g_last_ts;
    uint32_t g_count;
} cairn__sealw;

int cairn__sealw_begin(cairn__sealw *w, const cairn_io *io, const cairn_allocator *a, int dirfd,
                       const char *fin, uint64_t id, uint64_t salt, uint64_t base_seq,
                       int64_t created_ms, int compacting, const uint8_t *dict,
                       size_t dict_len, cairn__err *e);
int cairn__sealw_block(cairn__sealw *w, const uint8_t *raw, size_t raw_len, uint64_t first_seq,
                       uint64_t last_seq, int64_t first_ts, int64_t last_ts, uint32_t count,
                       cairn__err *e);
/* Block i of `src` as it is, compressed bytes and all (its checksum
 * checked first): the writer must have the same salt and dictionary and
 * come to the block's first seq. `what` names src in messages. */
int cairn__sealw_copy_block(cairn__sealw *w, const sealed_seg *src, uint32_t i, const char *what,
                            cairn__err *e);
/* One record (len bytes, encoded with the file's salt) standing for
 * seq..last (last > seq: a hole). */
int cairn__sealw_add(cairn__sealw *w, const uint8_t *rec, size_t len, uint64_t seq,
                     uint64_t last, int64_t ts, cairn__err *e);
int cairn__sealw_finish(cairn__sealw *w, uint64_t *file_size, cairn__err *e);
void cairn__sealw_abort(cairn__sealw *w);

/* Validate header, footer (its own checksum), index checksum and every index
 * entry (offsets inside the file and increasing, sequence numbers contiguous
 * from base_seq, timestamps non-decreasing). Does not read the blocks nor the
 * whole-file checksum (cairn__sealed_verify does). `what` names the file. */
int cairn__sealed_open(const uint8_t *data, size_t size, sealed_seg *s, const char *what,
                       cairn__err *e);

/* Entry i of the block index (i < block_count). */
void cairn__sealed_block(const sealed_seg *s, uint32_t i, sealed_block *b);

/* Index of the block holding seq, or block_count if none. */
uint32_t cairn__sealed_find_seq(const sealed_seg *s, uint64_t seq);
/* Index of the first block whose last_ts >= ts, or block_count if none. */
uint32_t cairn__sealed_find_ts(const sealed_seg *s, int64_t ts);

/* Check block i's frame checksum and inflate it into *buf (grown as needed,
 * capacity *cap); *raw_len gets its size. dctx: a decompression context
 * of the caller's (ZSTD_DCtx), reused from read to read; NULL: one made
 * for this read. ddict: the file's digested dictionary (ZSTD_DDict, as
 * the caller loaded it), or NULL: the read digests s->dict itself. */
int cairn__sealed_read_block_with(const sealed_seg *s, uint32_t i, void *dctx, const void *ddict,
                                  const cairn_allocator *a, uint8_t **buf, size_t *cap,
                                  size_t *raw_len, const char *what, cairn__err *e);
int cairn__sealed_read_block(const sealed_seg *s, uint32_t i, const cairn_allocator *a,
                             uint8_t **buf, size_t *cap, size_t *raw_len, const char *what,
                             cairn__err *e);

/* The digested dictionary of a version 3 file (s->ddict), made once by
 * the owner of its mapping; cairn__sealed_undigest frees it. */
int cairn__sealed_digest(sealed_seg *s, const char *what, cairn__err *e);
void cairn__sealed_undigest(sealed_seg *s);

/* Check everything: whole-file checksum, every block and every record in it.
 * Calls fn for each problem with the offset it concerns; returns the count. */
typedef void (*sealed_problem_fn)(void *user, uint64_t offset, int code, const char *msg);
uint64_t cairn__sealed_verify(const uint8_t *data, size_t size, const cairn_allocator *a,
                              const char *what, sealed_problem_fn fn, void *user);

#endif /* CAIRN_SEALED_H */
