/*
 * iter.c - reading the log: forward iteration by sequence or time range,
 * and one record by sequence number.
 *
 * An iterator pins a view and remembers the last sequence number committed
 * when it was opened, so it sees a fixed prefix of the log however long it
 * lives. Finding the start is a binary search at each level: segments (the
 * manifest is ordered by sequence and time), then blocks (sealed index) or
 * records (the active segment's offset index). Log-form segments are then
 * read sequentially with pread in chunks; sealed ones a block at a time.
 *
 * A damaged block or record is reported (CAIRN_ECHECKSUM / CAIRN_ECORRUPT
 * with file and offset in the handle's message) and skipped: calling
 * cairn_iter_next again continues with the next block or segment, so one bad
 * block never hides the rest of the log.
 */
#include "store.h"

#include <string.h>
#include <zstd.h>

#include "alloc.h"
#include "bytes.h"
#include "hole.h"
#include "io.h"
#include "record.h"

#define READ_CHUNK (256u * 1024u)

struct cairn_iter {
    cairn_db *db;
    view *v;
    cairn_range r;
    uint64_t limit;       /* last sequence number visible to this iterator */
    size_t seg;           /* current segment in v */
    int positioned;       /* the cursor is inside v->segs[seg] */
    /* sealed cursor */
    uint32_t block;
    size_t pos, raw_len;
    /* log cursor */
    uint64_t off, end;    /* next record's offset; end of visible bytes */
    uint64_t buf_off;     /* file offset of buf[0] (log form) */
    size_t buf_len;
    uint8_t *buf;
    size_t cap;
    void *dctx;           /* sealed blocks' decompression context, made on first use */
};

static int seg_empty_or_before(const manifest_entry *x, const seg_ref *s, uint64_t n,
                               const cairn_range *r)
{
    int64_t last_ts;
    if (n == 0)
        return 1;
    if (x->base_seq + n - 1 < r->seq_from)
        return 1;
    last_ts = s->sealed ? x->last_ts : s->log.ts[n - 1];
    return last_ts < r->ts_from;
}

/* Seqs visible in segment i: sealed and closed ones are fixed (a sealed
 * one's holes stand for several); the active one up to the iterator's
 * limit. */
static uint64_t seg_count(const cairn_iter *it, size_t i)
{
    const manifest_entry *x = &it->v->m.e[i];
    const seg_ref *s = it->v->segs[i];
    if (s->sealed)
        return cairn__sealed_span(&s->s);
    if (x->kind == SEG_CLOSED)
        return s->log.n;
    return it->limit >= x->base_seq ? it->limit - x->base_seq + 1 : 0;
}

/* Offset of damage in log-form segment i that the iterator's range asks
 * for, or 0: a closed segment holding fewer valid records than the manifest
 * lists, or (read-only) an active one with valid records after damage. */
static uint64_t damage_in_range(const cairn_iter *it, size_t i)
{
    const manifest_entry *x = &it->v->m.e[i];
    seg_ref *s = it->v->segs[i];
    uint64_t at = 0, first_missing, last_missing;

    if (s->sealed)
        return 0;
    pthread_mutex_lock(&it->db->mu);
    first_missing = s->log.base_seq + s->log.n;
    if (x->kind == SEG_CLOSED && s->log.n < x->count) {
        at = s->log.end;
        last_missing = x->last_seq;
    } else if (s->damaged_at != 0) {
        at = s->damaged_at;
        last_missing = s->damaged_max_seq;
    }
    pthread_mutex_unlock(&it->db->mu);
    if (at == 0 || it->r.seq_to < first_missing || it->r.seq_from > last_missing)
        return 0;
    return at;
}

/* Place the cursor at the first candidate record of segment it->seg; returns
 * 0 if the segment holds none. */
static int position(cairn_iter *it)
{
    const manifest_entry *x = &it->v->m.e[it->seg];
    seg_ref *s = it->v->segs[it->seg];
    uint64_t n = seg_count(it, it->seg);
    cairn_db *db = it->db;
    int in;

    if (s->sealed) {
        uint32_t b = 0;
        if (n == 0 || s->s.last_seq < it->r.seq_from)
            return 0;
        if (it->r.seq_from > s->s.first_seq)
            b = cairn__sealed_find_seq(&s->s, it->r.seq_from);
        if (it->r.ts_from != INT64_MIN) {
            uint32_t bt = cairn__sealed_find_ts(&s->s, it->r.ts_from);
            if (bt > b)
                b = bt;
        }
        if (b >= s->s.block_count)
            return 0;
        it->block = b;
        it->pos = it->raw_len = 0; /* inflated on demand */
        return 1;
    }
    pthread_mutex_lock(&db->mu);
    in = !seg_empty_or_before(x, s, n, &it->r);
    if (in) {
        size_t i = 0;
        if (it->r.seq_from > x->base_seq)
            i = (size_t)(it->r.seq_from - x->base_seq);
        if (it->r.ts_from != INT64_MIN) {
            size_t t = cairn__logseg_lower_ts(&s->log, it->r.ts_from);
            if (t > i)
                i = t;
        }
        if (i >= n)
            in = 0;
        else {
            it->off = s->log.off[i];
            it->end = n < s->log.n ? s->log.off[n] : s->log.end;
        }
    }
    pthread_mutex_unlock(&db->mu);
    it->buf_len = 0;
    if (!in && damage_in_range(it, it->seg) != 0) {
        /* Nothing readable here, but the range asks for records behind
         * damage: stand at the end so the damage is reported. */
        pthread_mutex_lock(&db->mu);
        it->off = it->end = s->log.end;
        pthread_mutex_unlock(&db->mu);
        in = 1;
    }
    return in;
}

/* Next record of a log-form segment, or CAIRN_ENOTFOUND at its end. Reads
 * in chunks; a record longer than a chunk gets a read of its own size. */
static int next_log(cairn_iter *it, seg_ref *s, cairn_record *rec)
{
    cairn__err e;
    size_t len;
    rec_result r;
    int rc;

    if (it->off >= it->end)
        return CAIRN_ENOTFOUND;
    for (int attempt = 0; attempt < 3; attempt++) {
        uint64_t want = READ_CHUNK;
        size_t got;
        if (it->off >= it->buf_off && it->off < it->buf_off + it->buf_len) {
            size_t at = (size_t)(it->off - it->buf_off);
            r = cairn__record_decode(it->buf + at, it->buf_len - at, s->log.salt, rec, &len);
            if (r == REC_OK) {
                it->off += len;
                return CAIRN_OK;
            }
            if (r != REC_TRUNCATED && r != REC_END)
                break;
            if (it->buf_len - at >= 4 && get_le32(it->buf + at) > want)
                want = get_le32(it->buf + at); /* bounded by the decoder's length check */
        }
        if (want > it->end - it->off)
            want = it->end - it->off;
        if (cairn__grow(it->db->a, (void **)&it->buf, &it->cap, (size_t)want, 1) != CAIRN_OK)
            return cairn__db_failf(it->db, CAIRN_ENOMEM, "no memory to read %s", s->log.name);
        rc = cairn__io_read(it->db->io, "iter.read", s->log.fd, it->buf, (size_t)want, it->off,
                            &got, s->log.name, &e);
        if (rc != CAIRN_OK)
            return cairn__db_fail(it->db, rc, &e);
        it->buf_off = it->off;
        it->buf_len = got;
    }
    /* The bytes changed since they were indexed: report and skip the segment. */
    rc = cairn__db_failf(it->db, CAIRN_ECORRUPT, "%s: record at offset %llu no longer valid",
                         s->log.name, (unsigned long long)it->off);
    it->off = it->end;
    return rc;
}

/* Next record of a sealed segment, or CAIRN_ENOTFOUND at its end. */
static int next_sealed(cairn_iter *it, seg_ref *s, cairn_record *rec)
{
    for (;;) {
        cairn__err e;
        size_t len;
        rec_result r;
        if (it->pos >= it->raw_len) {
            int rc;
            if (it->raw_len != 0) {
                it->block++;
                it->pos = it->raw_len = 0;
            }
            if (it->block >= s->s.block_count)
                return CAIRN_ENOTFOUND;
            if (it->dctx == NULL && (it->dctx = ZSTD_createDCtx()) == NULL)
                return cairn__db_failf(it->db, CAIRN_ENOMEM, "no memory to read %s",
                                       s->log.name);
            rc = cairn__seg_read_block(it->db, s, it->block, it->dctx, &it->buf, &it->cap,
                                       &it->raw_len, &e);
            if (rc != CAIRN_OK) {
                it->block++; /* skip the bad block on the next call */
                it->raw_len = it->pos = 0;
                return cairn__db_fail(it->db, rc, &e);
            }
        }
        r = cairn__record_decode(it->buf + it->pos, it->raw_len - it->pos, s->s.salt, rec, &len);
        if (r != REC_OK) {
            sealed_block b;
            cairn__sealed_block(&s->s, it->block, &b);
            it->pos = it->raw_len; /* skip the rest of this block */
            return cairn__db_failf(it->db, r == REC_BAD_SUM ? CAIRN_ECHECKSUM : CAIRN_ECORRUPT,
                                   "%s: block %u at offset %llu: %s", s->log.name, it->block,
                                   (unsigned long long)b.offset, cairn__record_result_str(r));
        }
        it->pos += len;
        return CAIRN_OK;
    }
}

/* Is rec a hole of a compacted segment that stands for seq? */
static int covers(const seg_ref *s, const cairn_record *rec, uint64_t seq)
{
    cairn__hole h;
    return s->sealed && s->s.version >= 2 && rec->type == CAIRN_REC_COMPACTED &&
           cairn__hole_decode(rec->json, rec->json_len, rec->seq, &h, NULL) == CAIRN_OK &&
           h.upto >= seq;
}

int cairn_iter_open(cairn_db *db, const cairn_range *range, cairn_iter **out)
{
    cairn_range all = CAIRN_RANGE_INIT;
    cairn_iter *it;
    int rc = CAIRN_OK;

    *out = NULL;
    if (range != NULL && (range->version != CAIRN_RANGE_VERSION || range->type < -1 ||
                          range->type > 65535))
        return cairn__db_failf(db, CAIRN_EINVAL, "invalid range");
    it = cairn__calloc(db->a, 1, sizeof *it);
    if (it == NULL)
        return cairn__db_failf(db, CAIRN_ENOMEM, "no memory for an iterator");
    it->db = db;
    it->r = range ? *range : all;
    pthread_mutex_lock(&db->mu);
    if (!db->dead) /* other processes' records, and the buffer's */
        rc = cairn__refresh(db);
    if (rc == CAIRN_OK) {
        seg_ref *act;
        it->v = db->view;
        atomic_fetch_add(&it->v->refs, 1);
        act = it->v->segs[it->v->m.n - 1];
        it->limit = act->sealed ? act->s.last_seq : act->log.base_seq + act->log.n - 1;
    }
    pthread_mutex_unlock(&db->mu);
    if (rc != CAIRN_OK) {
        cairn__free(db->a, it);
        return rc;
    }
    *out = it;
    return CAIRN_OK;
}

int cairn_iter_next(cairn_iter *it, cairn_record *rec)
{
    while (it->seg < it->v->m.n) {
        seg_ref *s = it->v->segs[it->seg];
        int rc;
        if (!it->positioned) {
            const manifest_entry *x = &it->v->m.e[it->seg];
            if (x->base_seq > it->r.seq_to ||
                (x->base_seq > it->limit && damage_in_range(it, it->seg) == 0))
                break;
            if (!position(it)) {
                it->seg++;
                continue;
            }
            it->positioned = 1;
        }
        rc = s->sealed ? next_sealed(it, s, rec) : next_log(it, s, rec);
        if (rc == CAIRN_ENOTFOUND) {
            uint64_t damaged = damage_in_range(it, it->seg);
            it->seg++;
            it->positioned = 0;
            /* A reader stopped at damage that valid records follow: say so
             * rather than end quietly (the next writer open sets them aside). */
            if (damaged != 0 && it->off >= damaged)
                return cairn__db_failf(it->db, CAIRN_ECORRUPT,
                                       "%s: damaged record at offset %llu; the records after "
                                       "it are not readable (run cairn verify)",
                                       s->log.name, (unsigned long long)damaged);
            continue;
        }
        if (rc != CAIRN_OK)
            return rc;
        if (rec->seq > it->r.seq_to || rec->seq > it->limit || rec->ts_ms > it->r.ts_to)
            break;
        /* A hole that stands for seqs of the range is in it (an audit sees
         * what went); a lookup of one seq it stands for finds no record. */
        if (rec->seq < it->r.seq_from && covers(s, rec, it->r.seq_from) &&
            rec->ts_ms <= it->r.ts_to && (it->r.type < 0 || rec->type == (uint16_t)it->r.type))
            return CAIRN_OK;
        if (rec->seq < it->r.seq_from || rec->ts_ms < it->r.ts_from ||
            (it->r.type >= 0 && rec->type != (uint16_t)it->r.type))
            continue;
        return CAIRN_OK;
    }
    it->seg = it->v->m.n; /* stay at the end */
    return CAIRN_ENOTFOUND;
}

uint64_t cairn__iter_limit(const cairn_iter *it)
{
    return it->limit;
}

void cairn_iter_close(cairn_iter *it)
{
    if (it == NULL)
        return;
    cairn__view_release(it->db, it->v);
    ZSTD_freeDCtx(it->dctx);
    cairn__free(it->db->a, it->buf);
    cairn__free(it->db->a, it);
}

/* Copy a record into one allocation owned by the caller. */
static int record_copy(cairn_db *db, const cairn_record *src, cairn_record **out)
{
    size_t n = sizeof(cairn_record) + src->ns_len + src->json_len + src->bin_len + 1;
    cairn_record *r = cairn__malloc(db->a, n);
    char *p;
    if (r == NULL)
        return cairn__db_failf(db, CAIRN_ENOMEM, "no memory for a record");
    *r = *src;
    p = (char *)(r + 1);
    memcpy(p, src->ns, src->ns_len);
    r->ns = p;
    p += src->ns_len;
    memcpy(p, src->json, src->json_len);
    r->json = p;
    p += src->json_len;
    memcpy(p, src->bin, src->bin_len);
    r->bin = p;
    p[src->bin_len] = '\0';
    *out = r;
    return CAIRN_OK;
}

int cairn__each_record(cairn_db *db, uint64_t from, uint64_t to,
                       int (*fn)(void *user, const cairn_record *rec), void *user)
{
    cairn_range range = CAIRN_RANGE_INIT;
    cairn_iter *it = NULL;
    cairn_record rec;
    int rc, by_fn = 0;

    range.seq_from = from;
    range.seq_to = to;
    if ((rc = cairn_iter_open(db, &range, &it)) != CAIRN_OK)
        return rc;
    while ((rc = cairn_iter_next(it, &rec)) == CAIRN_OK)
        if ((rc = fn(user, &rec)) != CAIRN_OK) {
            by_fn = 1;
            break;
        }
    cairn_iter_close(it);
    return rc == CAIRN_ENOTFOUND && !by_fn ? CAIRN_OK : rc; /* the end of the range */
}

static int lookup(cairn_db *db, uint64_t seq, int *cover, cairn_record **out);

int cairn_get(cairn_db *db, uint64_t seq, cairn_record **out)
{
    return lookup(db, seq, NULL, out);
}

int cairn__record_covering(cairn_db *db, uint64_t seq, cairn_record **out, int *hole)
{
    *hole = 1;
    return lookup(db, seq, hole, out);
}

/* cover NULL: the record seq; else also a hole standing for it, and
 * *cover says whether it is one. */
static int lookup(cairn_db *db, uint64_t seq, int *cover, cairn_record **out)
{
    cairn_range r = CAIRN_RANGE_INIT;
    cairn_iter *it;
    cairn_record rec;
    int rc;

    *out = NULL;
    if (seq == 0)
        return cairn__db_failf(db, CAIRN_ENOTFOUND, "no record 0");
    r.seq_from = r.seq_to = seq;
    rc = cairn_iter_open(db, &r, &it);
    if (rc != CAIRN_OK)
        return rc;
    /* Segments before seq are skipped by the first-level search below
     * without being read: binary search for the segment holding seq. */
    {
        size_t lo = 0, hi = it->v->m.n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (it->v->m.e[mid].base_seq <= seq)
                lo = mid + 1;
            else
                hi = mid;
        }
        it->seg = lo ? lo - 1 : 0;
    }
    rc = cairn_iter_next(it, &rec);
    if (cover != NULL)
        *cover = rc == CAIRN_OK && it->seg < it->v->m.n && covers(it->v->segs[it->seg], &rec, seq);
    if (rc == CAIRN_OK && rec.seq != seq && !(cover != NULL && *cover))
        rc = CAIRN_ENOTFOUND;
    if (rc == CAIRN_OK)
        rc = record_copy(db, &rec, out);
    else if (rc == CAIRN_ENOTFOUND)
        cairn__db_failf(db, rc, "no record with sequence number %llu", (unsigned long long)seq);
    cairn_iter_close(it);
    return rc;
}

/* Find seq in an inflated block (or one record's bytes) of salt: the
 * records before it are passed over by their length and seq fields
 * (record.md: len at 0, seq at 8), and only the one found is decoded and
 * checked whole. */
static int find_in(cairn_db *db, const uint8_t *raw, size_t len, uint64_t salt, uint64_t seq,
                   const char *what, cairn_record *rec)
{
    size_t pos = 0;
    while (len - pos >= REC_OVERHEAD) {
        uint32_t rl = get_le32(raw + pos);
        uint64_t at = get_le64(raw + pos + 8);
        if (rl < REC_OVERHEAD || rl > len - pos || at > seq)
            break; /* damage (the decode below says which), or a hole's seqs */
        if (at == seq) {
            size_t used;
            rec_result r = cairn__record_decode(raw + pos, len - pos, salt, rec, &used);
            if (r != REC_OK)
                return cairn__db_failf(db, r == REC_BAD_SUM ? CAIRN_ECHECKSUM : CAIRN_ECORRUPT,
                                       "%s: the record of seq %llu does not read: %s", what,
                                       (unsigned long long)seq, cairn__record_result_str(r));
            return CAIRN_OK;
        }
        pos += rl;
    }
    if (pos < len && len - pos < REC_OVERHEAD)
        return cairn__db_failf(db, CAIRN_ECORRUPT, "%s: a torn record before seq %llu", what,
                               (unsigned long long)seq);
    if (pos < len && (get_le32(raw + pos) < REC_OVERHEAD || get_le32(raw + pos) > len - pos))
        return cairn__db_failf(db, CAIRN_ECORRUPT, "%s: a record of bad length before seq %llu",
                               what, (unsigned long long)seq);
    return cairn__db_failf(db, CAIRN_ENOTFOUND, "no record with sequence number %llu",
                           (unsigned long long)seq);
}

static int fetch_in(cairn_db *db, cairn__fetch *f, seg_ref *s, uint64_t seq, cairn_record *rec)
{
    cairn__err e;
    int rc;
    if (s->sealed) {
        uint32_t b = cairn__sealed_find_seq(&s->s, seq);
        if (b >= s->s.block_count)
            return cairn__db_failf(db, CAIRN_ENOTFOUND, "no record with sequence number %llu",
                                   (unsigned long long)seq);
        if (!(f->cached && f->id == s->id && f->rev == s->rev && f->block == b)) {
            f->cached = 0;
            if (f->dctx == NULL && (f->dctx = ZSTD_createDCtx()) == NULL)
                return cairn__db_failf(db, CAIRN_ENOMEM, "no memory to read %s", s->log.name);
            rc = cairn__seg_read_block(db, s, b, f->dctx, &f->buf, &f->cap, &f->len, &e);
            if (rc != CAIRN_OK)
                return cairn__db_fail(db, rc, &e);
            f->id = s->id;
            f->rev = s->rev;
            f->block = b;
            f->cached = 1;
        }
        return find_in(db, f->buf, f->len, s->s.salt, seq, s->log.name, rec);
    }
    {
        uint64_t off, end;
        size_t got;
        pthread_mutex_lock(&db->mu);
        if (seq - s->log.base_seq >= s->log.n) {
            pthread_mutex_unlock(&db->mu);
            return cairn__db_failf(db, CAIRN_ENOTFOUND, "no record with sequence number %llu",
                                   (unsigned long long)seq);
        }
        off = s->log.off[seq - s->log.base_seq];
        end = seq - s->log.base_seq + 1 < s->log.n ? s->log.off[seq - s->log.base_seq + 1]
                                                   : s->log.end;
        pthread_mutex_unlock(&db->mu);
        f->cached = 0;
        if (cairn__grow(db->a, (void **)&f->buf, &f->cap, (size_t)(end - off), 1) != CAIRN_OK)
            return cairn__db_failf(db, CAIRN_ENOMEM, "no memory to read %s", s->log.name);
        rc = cairn__io_read(db->io, "iter.read", s->log.fd, f->buf, (size_t)(end - off), off,
                            &got, s->log.name, &e);
        if (rc != CAIRN_OK)
            return cairn__db_fail(db, rc, &e);
        f->len = got;
        return find_in(db, f->buf, f->len, s->log.salt, seq, s->log.name, rec);
    }
}

int cairn__record_fetch(cairn_db *db, cairn__fetch *f, uint64_t seq, cairn_record *rec)
{
    view *v;
    size_t lo = 0, hi;
    int rc;

    pthread_mutex_lock(&db->mu);
    v = db->view;
    atomic_fetch_add(&v->refs, 1);
    pthread_mutex_unlock(&db->mu);
    hi = v->m.n;
    while (lo < hi) { /* the last segment whose base is at most seq */
        size_t mid = lo + (hi - lo) / 2;
        if (v->m.e[mid].base_seq <= seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (seq == 0 || lo == 0)
        rc = cairn__db_failf(db, CAIRN_ENOTFOUND, "no record with sequence number %llu",
                             (unsigned long long)seq);
    else
        rc = fetch_in(db, f, v->segs[lo - 1], seq, rec);
    cairn__view_release(db, v);
    return rc;
}

void cairn__fetch_free(cairn_db *db, cairn__fetch *f)
{
    ZSTD_freeDCtx(f->dctx);
    cairn__free(db->a, f->buf);
    memset(f, 0, sizeof *f);
}

void cairn_record_free(cairn_db *db, cairn_record *rec)
{
    if (rec != NULL)
        cairn__free(db ? db->a : NULL, rec);
}

int cairn__record_at_or_before(cairn_db *db, uint64_t seq, uint64_t *found, uint64_t *sum,
                               int *sealed)
{
    cairn_iter *it;
    cairn_record rec;
    int rc;

    *found = *sum = 0;
    *sealed = 0;
    if (seq == 0)
        return CAIRN_OK;
    if ((rc = cairn_iter_open(db, NULL, &it)) != CAIRN_OK)
        return rc;
    /* Records are contiguous inside a segment: the newest segment starting
     * at or before seq that holds a record holds the one wanted. */
    for (size_t i = it->v->m.n; i-- > 0;) {
        const manifest_entry *x = &it->v->m.e[i];
        uint64_t n = seg_count(it, i), want;
        if (x->base_seq > seq || n == 0)
            continue;
        want = x->base_seq + n - 1 < seq ? x->base_seq + n - 1 : seq;
        it->r.seq_from = it->r.seq_to = want;
        it->seg = i; /* a hole of a compacted segment may stand for it */
        *sealed = it->v->segs[i]->sealed;
        *found = want; /* also when reading it fails: the record that is there */
        rc = cairn_iter_next(it, &rec);
        if (rc == CAIRN_OK && rec.seq < want) {
            /* A hole of a compacted segment stands for it: the checksum it
             * kept of the record, or its own (which binds nothing). */
            if (!cairn__hole_anchor(rec.json, rec.json_len, want, sum))
                *sum = get_le64((const uint8_t *)rec.bin + rec.bin_len);
        } else if (rc == CAIRN_OK && rec.seq == want) {
            /* The checksum follows the record's last byte in the buffer it
             * was decoded from (format-spec/record.md). A hole at want
             * stands for a dropped record there: the same rule. */
            if (!(covers(it->v->segs[i], &rec, want) &&
                  cairn__hole_anchor(rec.json, rec.json_len, want, sum)))
                *sum = get_le64((const uint8_t *)rec.bin + rec.bin_len);
        } else if (rc == CAIRN_OK || rc == CAIRN_ENOTFOUND) {
            rc = cairn__db_failf(db, CAIRN_ECORRUPT, "record %llu is listed but not readable",
                                 (unsigned long long)want);
        }
        break;
    }
    cairn_iter_close(it);
    return rc;
}
