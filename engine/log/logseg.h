/*
 * logseg.h - a segment in log form: the active segment (appended to) or a
 * closed one awaiting sealing. File `<id:016x>.log` (format-spec/segment.md):
 * a 64-byte file header, then records back to back.
 *
 * Header fields (offsets in the file):
 *   16  u64 segment_id    24  u64 salt
 *   32  u64 base_seq      40  i64 created_ms     48  u64 reserved (0)
 *
 * The in-memory index maps record i (sequence number base_seq + i) to its
 * file offset and timestamp; sequence numbers in a segment are contiguous.
 */
#ifndef CAIRN_LOGSEG_H
#define CAIRN_LOGSEG_H

#include <stddef.h>
#include <stdint.h>

#include "cairn.h"
#include "cairn_sys.h"
#include "record.h"
#include "status.h"

#define LOGSEG_NAME_MAX 32

typedef struct logseg {
    uint64_t id;
    uint64_t salt;
    uint64_t base_seq;   /* sequence number of record 0 */
    int64_t created_ms;
    int fd;              /* -1 when not open */
    char name[LOGSEG_NAME_MAX];
    uint64_t end;        /* offset just past the last valid record */
    uint64_t *off;       /* off[i]: file offset of record i */
    int64_t *ts;         /* ts[i]: its timestamp */
    size_t n, cap;       /* records indexed, capacity */
    uint64_t raw_bytes;  /* sum of record lengths */
} logseg;

/* Why a scan stopped. */
typedef struct logseg_stop {
    rec_result why;      /* REC_END at a clean end (EOF or zero length) */
    uint64_t offset;     /* where it stopped (== end) */
    uint64_t file_size;  /* bytes in the file */
} logseg_stop;

void cairn__logseg_name(char *buf, uint64_t id, const char *ext);

void cairn__logseg_header_encode(uint8_t *h, uint64_t id, uint64_t salt, uint64_t base_seq,
                                 int64_t created_ms);
int cairn__logseg_header_decode(const uint8_t *buf, size_t len, logseg *seg, const char *what,
                                cairn__err *e);

/* Create <id>.log with its header (O_EXCL), fsync it and the directory.
 * seg->fd stays open (read-write). */
int cairn__logseg_create(const cairn_io *io, int dirfd, logseg *seg, uint64_t id,
                         uint64_t salt, uint64_t base_seq, int64_t created_ms, cairn__err *e);

/* Open an existing <id>.log (read-write unless read_only), read and check
 * its header against the expected id, then scan from the header and index
 * every valid record. *stop tells where and why the scan ended. */
int cairn__logseg_open(const cairn_io *io, const cairn_allocator *a, int dirfd, logseg *seg,
                       uint64_t id, int read_only, logseg_stop *stop, cairn__err *e);

/* Continue scanning from seg->end (read-only handles follow the writer). */
int cairn__logseg_scan(const cairn_io *io, const cairn_allocator *a, logseg *seg,
                       logseg_stop *stop, cairn__err *e);

/* Look for whole, valid records of this segment (right salt and checksum,
 * seq beyond the indexed ones) anywhere in [from, to): what tells damage in
 * the middle of a segment (valid records follow) from a torn tail (nothing
 * valid follows). *found is 1 if any is found, *max_seq the highest seq. */
int cairn__logseg_probe(const cairn_io *io, const cairn_allocator *a, const logseg *seg,
                        uint64_t from, uint64_t to, int *found, uint64_t *max_seq,
                        cairn__err *e);

/* Make room for cap records in the index (never shrinks). */
int cairn__logseg_index_reserve(const cairn_allocator *a, logseg *seg, size_t cap);

/* Add record (offset, ts) to the index. */
int cairn__logseg_index_push(const cairn_allocator *a, logseg *seg, uint64_t off, int64_t ts);

/* Index of the first record with ts >= ts_from (n if none). */
size_t cairn__logseg_lower_ts(const logseg *seg, int64_t ts_from);

void cairn__logseg_free(const cairn_io *io, const cairn_allocator *a, logseg *seg);

#endif /* CAIRN_LOGSEG_H */
