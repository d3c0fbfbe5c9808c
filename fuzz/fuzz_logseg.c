/*
 * fuzz_logseg.c - a log segment file (<id>.log) as untrusted bytes:
 * cairn__logseg_header_decode(), then the records from offset 64 with the
 * header's salt, scanned the way recovery scans them (stop at the first
 * record that is not whole, valid and in sequence). The same bytes are then
 * put in a memory file and scanned by the real cairn__logseg_scan(), and
 * both scans must agree record for record: a differential check of the
 * chunked file scan against a plain in-memory loop. cairn__logseg_probe()
 * (does anything valid follow the stop?) is checked the same way against a
 * byte-by-byte search. Run as given and with the header checksum, record
 * epochs and record checksums repaired; the repaired pass may also stretch
 * the input across the 1 MiB read chunk (see stretch()).
 */
#if defined(__linux__)
#define _GNU_SOURCE /* memfd_create */
#endif
#include "fuzz.h"

#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "logseg.h"

#define WHAT "fuzz.log"

/*
 * The scan allocates a 1 MiB read buffer per call; under ASan each one is a
 * fresh mmap, which made this target ~40x slower. This allocator (it also
 * exercises the pluggable-allocator path) keeps one freed block of 64 KiB or
 * more and hands it back for the next request of the same size. Everything
 * else goes straight to malloc, so ASan still sees every other allocation.
 */
static struct {
    void *live, *spare;       /* the big block in use; the cached free one */
    size_t live_size, spare_size;
} big;

static void *fz_malloc(void *user, size_t size)
{
    void *p;
    (void)user;
    if (size < 65536)
        return malloc(size);
    if (big.spare != NULL && big.spare_size == size) {
        p = big.spare;
        big.spare = NULL;
    } else {
        p = malloc(size);
    }
    if (p != NULL && big.live == NULL) {
        big.live = p;
        big.live_size = size;
    }
    return p;
}

static void *fz_realloc(void *user, void *ptr, size_t size)
{
    void *p;
    (void)user;
    p = realloc(ptr, size);
    if (p != NULL && ptr != NULL && ptr == big.live) {
        big.live = p;
        big.live_size = size;
    }
    return p;
}

static void fz_free(void *user, void *ptr)
{
    (void)user;
    if (ptr != NULL && ptr == big.live) {
        big.live = NULL;
        free(big.spare);
        big.spare = ptr;
        big.spare_size = big.live_size;
        return;
    }
    free(ptr);
}

static const cairn_allocator fz_alloc = {fz_malloc, fz_realloc, fz_free, NULL};

/* What the in-memory scan found. */
typedef struct mscan {
    uint64_t *off;
    int64_t *ts;
    size_t n, cap;
    uint64_t end, raw_bytes;
    rec_result why;
} mscan;

static int push(mscan *m, uint64_t off, int64_t ts)
{
    if (m->n == m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 64;
        uint64_t *o = realloc(m->off, ncap * sizeof *o);
        int64_t *t;
        if (o == NULL)
            return -1;
        m->off = o;
        t = realloc(m->ts, ncap * sizeof *t);
        if (t == NULL)
            return -1;
        m->ts = t;
        m->cap = ncap;
    }
    m->off[m->n] = off;
    m->ts[m->n] = ts;
    m->n++;
    return 0;
}

static int mem_scan(const uint8_t *buf, size_t size, const logseg *seg, mscan *m)
{
    size_t pos = FILEHDR_SIZE;

    m->why = REC_END;
    while (pos < size) {
        cairn_record rec;
        size_t len = 0;
        rec_result r = cairn__record_decode(buf + pos, size - pos, seg->salt, &rec, &len);
        if (r != REC_OK) {
            if (r == REC_END && size - pos < 4)
                r = REC_TRUNCATED; /* 1..3 stray bytes */
            m->why = r;
            break;
        }
        fuzz_check_record(buf + pos, size - pos, seg->salt, &rec, len);
        if (rec.seq != seg->base_seq + m->n || (m->n && rec.ts_ms < m->ts[m->n - 1])) {
            m->why = REC_BAD_FIELD;
            break;
        }
        if (push(m, pos, rec.ts_ms) != 0)
            return -1;
        m->raw_bytes += len;
        pos += len;
    }
    m->end = pos;
    return 0;
}

/* What cairn__logseg_probe() must find in buf[from, to): records of this
 * segment at any offset, with seq >= next; a found record is skipped whole. */
static void mem_probe(const uint8_t *buf, uint64_t from, uint64_t to, uint64_t salt,
                      uint64_t next, int *found, uint64_t *max_seq)
{
    uint64_t q = from;

    *found = 0;
    *max_seq = 0;
    while (q + REC_OVERHEAD <= to) {
        cairn_record rec;
        size_t rl = 0;
        uint32_t len = get_le32(buf + q);
        if (get_le32(buf + q + REC_OFF_EPOCH) == (uint32_t)salt && len >= REC_OVERHEAD &&
            len <= CAIRN_RECORD_MAX && q + len <= to &&
            cairn__record_decode(buf + q, (size_t)(to - q), salt, &rec, &rl) == REC_OK &&
            rec.seq >= next) {
            *found = 1;
            if (rec.seq > *max_seq)
                *max_seq = rec.seq;
            q += rl;
        } else {
            q++;
        }
    }
}

static int mem_file(const uint8_t *buf, size_t size)
{
    int fd;
#if defined(__linux__)
    fd = memfd_create("fuzz_logseg", MFD_CLOEXEC);
#else
    FILE *f = tmpfile();
    fd = f ? dup(fileno(f)) : -1;
    if (f)
        fclose(f);
#endif
    if (fd < 0)
        return -1;
    if (size && pwrite(fd, buf, size, 0) != (ssize_t)size) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The real scan over a file holding the same bytes must agree with m. */
static void file_scan(const uint8_t *buf, size_t size, const logseg *hdr, const mscan *m)
{
    const cairn_io *io = cairn_io_default();
    logseg seg = *hdr;
    logseg_stop stop;
    cairn__err e;
    int rc;

    seg.fd = mem_file(buf, size);
    if (seg.fd < 0)
        return;
    seg.end = FILEHDR_SIZE;
    seg.off = NULL;
    seg.ts = NULL;
    seg.n = seg.cap = 0;
    seg.raw_bytes = 0;
    snprintf(seg.name, sizeof seg.name, "%s", WHAT);
    rc = cairn__logseg_scan(io, &fz_alloc, &seg, &stop, &e);
    if (rc == CAIRN_OK) {
        FUZZ_CHECK(stop.file_size == size && stop.offset == seg.end);
        FUZZ_CHECK(stop.why == m->why);
        FUZZ_CHECK(seg.n == m->n);
        FUZZ_CHECK(seg.end == m->end);
        FUZZ_CHECK(seg.raw_bytes == m->raw_bytes);
        FUZZ_CHECK(seg.raw_bytes == seg.end - FILEHDR_SIZE);
        for (size_t i = 0; i < seg.n; i++)
            FUZZ_CHECK(seg.off[i] == m->off[i] && seg.ts[i] == m->ts[i]);
        for (size_t i = 0; i < seg.n && i < 64; i++) {
            size_t k = cairn__logseg_lower_ts(&seg, seg.ts[i]);
            FUZZ_CHECK(k <= i && seg.ts[k] == seg.ts[i] && (k == 0 || seg.ts[k - 1] < seg.ts[i]));
        }
        if (seg.n)
            FUZZ_CHECK(cairn__logseg_lower_ts(&seg, INT64_MIN) == 0);
        /* What recovery asks after a stop: is anything valid beyond it? */
        {
            int found = 0, mfound = 0;
            uint64_t max_seq = 0, mmax = 0;
            rc = cairn__logseg_probe(io, &fz_alloc, &seg, seg.end, size, &found, &max_seq, &e);
            mem_probe(buf, seg.end, size, seg.salt, seg.base_seq + seg.n, &mfound, &mmax);
            if (rc == CAIRN_OK)
                FUZZ_CHECK(found == mfound && max_seq == mmax);
            else
                FUZZ_CHECK(rc == CAIRN_ENOMEM || rc == CAIRN_EIO);
        }
    } else {
        FUZZ_CHECK(rc == CAIRN_ENOMEM || rc == CAIRN_EIO);
    }
    cairn__logseg_free(io, &fz_alloc, &seg);
}

/* Both scans over buf, which has a valid header decoded into *seg. */
static void scan_both(const uint8_t *buf, size_t size, const logseg *seg)
{
    mscan m;

    memset(&m, 0, sizeof m);
    if (mem_scan(buf, size, seg, &m) == 0) {
        FUZZ_CHECK(m.end >= FILEHDR_SIZE && m.end <= size);
        FUZZ_CHECK(m.raw_bytes == m.end - FILEHDR_SIZE);
        FUZZ_CHECK(m.end < size || m.why == REC_END); /* REC_END also at a zero length */
        file_scan(buf, size, seg, &m);
    }
    free(m.off);
    free(m.ts);
}

/*
 * Inputs are small, so the scan and the probe never meet their 1 MiB chunk
 * boundary, where records are re-read whole. Two stretched layouts put the
 * input's records across it (chosen by the header's id, so the fuzzer
 * steers; only on the repaired pass, as they cost ~1 ms each):
 *   id % 8 == 7: header, one valid filler record of about 1 MiB (seq
 *     base_seq, the earliest time), then the input's records with seq + 1,
 *     so the scan's first chunk ends `shift` bytes into them;
 *   id % 8 == 6: header, the input's records, about 1 MiB of zeros (a clean
 *     end for the scan), the input's records again, so the probe after the
 *     stop crosses its chunk boundary inside the second copy.
 * shift = created_ms % 1024 picks where the boundary falls.
 */
#define FUZZ_SCAN_CHUNK (1u << 20) /* SCAN_CHUNK in engine/log/logseg.c */

static const uint8_t zeros[FUZZ_SCAN_CHUNK];
static uint8_t *stretch_buf;
static size_t stretch_cap;

static void stretch(const uint8_t *buf, size_t size, const logseg *seg)
{
    size_t body = size - FILEHDR_SIZE, shift = (size_t)((uint64_t)seg->created_ms & 1023u);
    size_t total, pos, fill = FUZZ_SCAN_CHUNK - shift;
    int layout = (int)(seg->id & 7u);

    if (layout != 6 && layout != 7)
        return;
    total = FILEHDR_SIZE + fill + body * (layout == 6 ? 2 : 1);
    if (total > stretch_cap) {
        uint8_t *p = realloc(stretch_buf, total);
        if (p == NULL)
            return;
        stretch_buf = p;
        stretch_cap = total;
    }
    memcpy(stretch_buf, buf, FILEHDR_SIZE);
    if (layout == 7) {
        cairn_entry f;
        memset(&f, 0, sizeof f);
        f.type = CAIRN_REC_EVENT;
        f.bin = zeros;
        f.bin_len = fill - REC_OVERHEAD;
        cairn__record_encode(stretch_buf + FILEHDR_SIZE, &f, seg->base_seq, INT64_MIN, seg->salt);
        pos = FILEHDR_SIZE + fill;
        memcpy(stretch_buf + pos, buf + FILEHDR_SIZE, body);
        /* Renumber the input's records after the filler, keeping their gaps. */
        for (size_t q = pos; total - q >= 4;) {
            uint32_t len = get_le32(stretch_buf + q);
            if (len < REC_OVERHEAD || len > CAIRN_RECORD_MAX || len > total - q)
                break;
            put_le64(stretch_buf + q + REC_OFF_SEQ, get_le64(stretch_buf + q + REC_OFF_SEQ) + 1);
            q += len;
        }
        fuzz_fix_records(stretch_buf + pos, body, seg->salt);
    } else {
        memcpy(stretch_buf + FILEHDR_SIZE, buf + FILEHDR_SIZE, body);
        memset(stretch_buf + FILEHDR_SIZE + body, 0, fill);
        memcpy(stretch_buf + FILEHDR_SIZE + body + fill, buf + FILEHDR_SIZE, body);
    }
    scan_both(stretch_buf, total, seg);
}

static void one(const uint8_t *buf, size_t size, int repaired)
{
    logseg seg;
    cairn__err e;
    uint8_t h[FILEHDR_SIZE];
    int rc;

    memset(&seg, 0, sizeof seg);
    seg.fd = -1;
    memset(e.msg, 'x', sizeof e.msg);
    rc = cairn__logseg_header_decode(buf, size, &seg, WHAT, &e);
    if (rc != CAIRN_OK) {
        FUZZ_CHECK(rc < 0 && memchr(e.msg, '\0', sizeof e.msg) != NULL);
        return;
    }
    FUZZ_CHECK(size >= FILEHDR_SIZE && seg.base_seq != 0);
    /* Every header byte is checked, so the header re-encodes exactly. */
    cairn__logseg_header_encode(h, seg.id, seg.salt, seg.base_seq, seg.created_ms);
    FUZZ_CHECK(memcmp(h, buf, FILEHDR_SIZE) == 0);
    scan_both(buf, size, &seg);
    if (repaired)
        stretch(buf, size, &seg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = fuzz_dup(data, size);

    if (buf == NULL)
        return 0;
    one(buf, size, 0);
    fuzz_fix_filehdr(buf, size);
    if (size > FILEHDR_SIZE)
        fuzz_fix_records(buf + FILEHDR_SIZE, size - FILEHDR_SIZE, get_le64(buf + 24));
    one(buf, size, 1);
    free(buf);
    return 0;
}
