/*
 * logseg.c - segments in log form (format-spec/segment.md): creating one,
 * and scanning one into the offset/timestamp index, which is also the
 * recovery pass. A scan stops at the first record that is not whole and
 * valid *and in sequence*: sequence numbers in a segment are contiguous from
 * base_seq and timestamps never go backwards, so a record that validates but
 * breaks either rule is corruption, not data.
 */
#include "logseg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "bytes.h"
#include "filehdr.h"
#include "io.h"

#define SCAN_CHUNK (1u << 20)

void cairn__logseg_name(char *buf, uint64_t id, const char *ext)
{
    snprintf(buf, LOGSEG_NAME_MAX, "%016llx.%s", (unsigned long long)id, ext);
}

void cairn__logseg_header_encode(uint8_t *h, uint64_t id, uint64_t salt, uint64_t base_seq,
                                 int64_t created_ms)
{
    cairn__filehdr_init(h, MAGIC_LOG, LOG_VERSION);
    put_le64(h + 16, id);
    put_le64(h + 24, salt);
    put_le64(h + 32, base_seq);
    put_le64(h + 40, (uint64_t)created_ms);
    put_le64(h + 48, 0);
    cairn__filehdr_seal(h);
}

int cairn__logseg_header_decode(const uint8_t *buf, size_t len, logseg *seg, const char *what,
                                cairn__err *e)
{
    int rc = cairn__filehdr_check(buf, len, MAGIC_LOG, LOG_VERSION, what, e);
    if (rc != CAIRN_OK)
        return rc;
    if (get_le64(buf + 48) != 0 || get_le64(buf + 32) == 0)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: bad base_seq or reserved field in header",
                           what);
    seg->id = get_le64(buf + 16);
    seg->salt = get_le64(buf + 24);
    seg->base_seq = get_le64(buf + 32);
    seg->created_ms = (int64_t)get_le64(buf + 40);
    return CAIRN_OK;
}

int cairn__logseg_create(const cairn_io *io, int dirfd, logseg *seg, uint64_t id,
                         uint64_t salt, uint64_t base_seq, int64_t created_ms, cairn__err *e)
{
    uint8_t h[FILEHDR_SIZE];
    int rc;

    memset(seg, 0, sizeof *seg);
    seg->fd = -1;
    seg->id = id;
    seg->salt = salt;
    seg->base_seq = base_seq;
    seg->created_ms = created_ms;
    cairn__logseg_name(seg->name, id, "log");
    cairn__logseg_header_encode(h, id, salt, base_seq, created_ms);
    rc = cairn__io_open(io, "segment.create", dirfd, seg->name, O_RDWR | O_CREAT | O_EXCL, 0644,
                        &seg->fd, e);
    if (rc != CAIRN_OK)
        return rc;
    rc = cairn__io_write(io, "segment.create", seg->fd, h, sizeof h, 0, seg->name, e);
    if (rc == CAIRN_OK)
        rc = cairn__io_fsync(io, "segment.create", seg->fd, seg->name, e);
    if (rc == CAIRN_OK)
        rc = cairn__io_fsync(io, "segment.create.dir", dirfd, ".", e);
    if (rc != CAIRN_OK) {
        cairn__io_close(io, "segment.create", seg->fd);
        seg->fd = -1;
        /* Best effort: a half-made file is not in the manifest, so open removes it anyway. */
        io->unlinkat(io->user, "segment.create", dirfd, seg->name);
        return rc;
    }
    seg->end = FILEHDR_SIZE;
    return CAIRN_OK;
}

int cairn__logseg_index_reserve(const cairn_allocator *a, logseg *seg, size_t cap)
{
    size_t bytes;
    void *p;

    if (cap <= seg->cap)
        return CAIRN_OK;
    if (size_mul(&bytes, cap, sizeof(uint64_t)) != 0)
        return CAIRN_ENOMEM;
    p = cairn__realloc(a, seg->off, bytes);
    if (p == NULL)
        return CAIRN_ENOMEM;
    seg->off = p;
    p = cairn__realloc(a, seg->ts, bytes);
    if (p == NULL)
        return CAIRN_ENOMEM;
    seg->ts = p;
    seg->cap = cap;
    return CAIRN_OK;
}

int cairn__logseg_index_push(const cairn_allocator *a, logseg *seg, uint64_t off, int64_t ts)
{
    if (seg->n == seg->cap) {
        int rc = cairn__logseg_index_reserve(a, seg, seg->cap ? seg->cap * 2 : 1024);
        if (rc != CAIRN_OK)
            return rc;
    }
    seg->off[seg->n] = off;
    seg->ts[seg->n] = ts;
    seg->n++;
    return CAIRN_OK;
}

size_t cairn__logseg_lower_ts(const logseg *seg, int64_t ts_from)
{
    size_t lo = 0, hi = seg->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (seg->ts[mid] < ts_from)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int cairn__logseg_scan(const cairn_io *io, const cairn_allocator *a, logseg *seg,
                       logseg_stop *stop, cairn__err *e)
{
    size_t bufsize = SCAN_CHUNK;
    uint8_t *buf = NULL;
    uint64_t off = seg->end;
    struct stat st;
    int rc = CAIRN_OK;

    if (fstat(seg->fd, &st) != 0)
        return cairn__fail(e, cairn__errno_status(errno), "stat %s: %s", seg->name,
                           strerror(errno));
    stop->file_size = (uint64_t)st.st_size;
    /* Readers rescan the active tail on every refresh: size the buffer to
     * what is left, not to a whole chunk. */
    if ((uint64_t)st.st_size <= off + 4096)
        bufsize = 4096;
    else if ((uint64_t)st.st_size - off < SCAN_CHUNK)
        bufsize = (size_t)((uint64_t)st.st_size - off);
    buf = cairn__malloc(a, bufsize);
    if (buf == NULL)
        return cairn__fail(e, CAIRN_ENOMEM, "%s: no memory for scan", seg->name);
    stop->why = REC_END;
    for (;;) {
        size_t got, pos = 0;
        int more;
        rc = cairn__io_read(io, "segment.scan", seg->fd, buf, bufsize, off, &got, seg->name, e);
        if (rc != CAIRN_OK)
            goto cleanup;
        more = got == bufsize;
        if (got == 0)
            break;
        while (pos < got) {
            cairn_record rec;
            size_t len;
            rec_result r = cairn__record_decode(buf + pos, got - pos, seg->salt, &rec, &len);
            if (r == REC_OK) {
                int64_t prev_ts = seg->n ? seg->ts[seg->n - 1] : INT64_MIN;
                if (rec.seq != seg->base_seq + seg->n || rec.ts_ms < prev_ts) {
                    stop->why = REC_BAD_FIELD;
                    off += pos; /* end after the last record indexed */
                    goto done;
                }
                rc = cairn__logseg_index_push(a, seg, off + pos, rec.ts_ms);
                if (rc != CAIRN_OK) {
                    cairn__fail(e, rc, "%s: no memory for the record index", seg->name);
                    goto cleanup;
                }
                seg->raw_bytes += len;
                pos += len;
                continue;
            }
            if (more && (r == REC_TRUNCATED || (r == REC_END && got - pos < 4))) {
                /* The record continues past this chunk: read again from its start,
                 * with a buffer big enough for it (its length is bounded). */
                if (pos == 0) {
                    uint8_t *nb;
                    size_t need = get_le32(buf);
                    if (need <= bufsize)
                        need = bufsize * 2;
                    nb = cairn__realloc(a, buf, need);
                    if (nb == NULL) {
                        rc = cairn__fail(e, CAIRN_ENOMEM, "%s: no memory for scan", seg->name);
                        goto cleanup;
                    }
                    buf = nb;
                    bufsize = need;
                }
                break;
            }
            if (r == REC_END && got - pos < 4 && got - pos > 0)
                r = REC_TRUNCATED; /* 1..3 stray bytes: a torn length field */
            stop->why = r;
            off += pos;
            goto done;
        }
        off += pos;
        if (!more && pos == got)
            break;
    }
done:
    seg->end = off;
    stop->offset = off;
cleanup:
    cairn__free(a, buf);
    return rc;
}

int cairn__logseg_probe(const cairn_io *io, const cairn_allocator *a, const logseg *seg,
                        uint64_t from, uint64_t to, int *found, uint64_t *max_seq,
                        cairn__err *e)
{
    uint8_t *buf = cairn__malloc(a, SCAN_CHUNK), *big = NULL;
    uint64_t next = seg->base_seq + seg->n, off = from;
    int rc = CAIRN_OK;

    *found = 0;
    *max_seq = 0;
    if (buf == NULL)
        return cairn__fail(e, CAIRN_ENOMEM, "%s: no memory for a probe", seg->name);
    while (off + REC_OVERHEAD <= to && rc == CAIRN_OK) {
        size_t got, want = to - off < SCAN_CHUNK ? (size_t)(to - off) : SCAN_CHUNK, p = 0;
        rc = cairn__io_read(io, "segment.probe", seg->fd, buf, want, off, &got, seg->name, e);
        if (rc != CAIRN_OK || got < REC_OVERHEAD)
            break;
        /* Every offset is a candidate; the epoch (low salt) filters almost all. */
        while (p + REC_OVERHEAD <= got) {
            uint32_t len = get_le32(buf + p);
            cairn_record rec;
            size_t rl;
            rec_result r;
            if (get_le32(buf + p + REC_OFF_EPOCH) != (uint32_t)seg->salt || len < REC_OVERHEAD ||
                len > CAIRN_RECORD_MAX || off + p + len > to) {
                p++;
                continue;
            }
            if (p + len <= got) {
                r = cairn__record_decode(buf + p, got - p, seg->salt, &rec, &rl);
            } else {
                /* It runs past this chunk: read it whole on its own. */
                size_t g2;
                uint8_t *nb = cairn__realloc(a, big, len);
                if (nb == NULL) {
                    rc = cairn__fail(e, CAIRN_ENOMEM, "%s: no memory for a probe", seg->name);
                    break;
                }
                big = nb;
                rc = cairn__io_read(io, "segment.probe", seg->fd, big, len, off + p, &g2,
                                    seg->name, e);
                if (rc != CAIRN_OK)
                    break;
                r = cairn__record_decode(big, g2, seg->salt, &rec, &rl);
            }
            if (r == REC_OK && rec.seq >= next) {
                *found = 1;
                if (rec.seq > *max_seq)
                    *max_seq = rec.seq;
                p += rl;
            } else {
                p++;
            }
        }
        if (got < want)
            break;
        off += p;
    }
    cairn__free(a, buf);
    cairn__free(a, big);
    return rc;
}

int cairn__logseg_open(const cairn_io *io, const cairn_allocator *a, int dirfd, logseg *seg,
                       uint64_t id, int read_only, logseg_stop *stop, cairn__err *e)
{
    uint8_t h[FILEHDR_SIZE];
    size_t got;
    int rc;

    memset(seg, 0, sizeof *seg);
    seg->fd = -1;
    cairn__logseg_name(seg->name, id, "log");
    rc = cairn__io_open(io, "segment.open", dirfd, seg->name, read_only ? O_RDONLY : O_RDWR, 0,
                        &seg->fd, e);
    if (rc != CAIRN_OK)
        return rc;
    rc = cairn__io_read(io, "segment.open", seg->fd, h, sizeof h, 0, &got, seg->name, e);
    if (rc == CAIRN_OK)
        rc = cairn__logseg_header_decode(h, got, seg, seg->name, e);
    if (rc == CAIRN_OK && seg->id != id)
        rc = cairn__fail(e, CAIRN_ECORRUPT, "%s: header names segment %llu", seg->name,
                         (unsigned long long)seg->id);
    if (rc == CAIRN_OK) {
        seg->end = FILEHDR_SIZE;
        rc = cairn__logseg_scan(io, a, seg, stop, e);
    }
    if (rc != CAIRN_OK)
        cairn__logseg_free(io, a, seg);
    return rc;
}

void cairn__logseg_free(const cairn_io *io, const cairn_allocator *a, logseg *seg)
{
    if (seg == NULL)
        return;
    cairn__io_close(io, "segment.close", seg->fd);
    seg->fd = -1;
    cairn__free(a, seg->off);
    cairn__free(a, seg->ts);
    seg->off = NULL;
    seg->ts = NULL;
    seg->n = seg->cap = 0;
}
