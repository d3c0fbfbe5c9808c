/*
 * fuzz_sealed.c - a sealed segment file (<id>.seg) as untrusted bytes:
 * cairn__sealed_open(), then every block through cairn__sealed_read_block()
 * and its records through cairn__record_decode(), the block lookups, and
 * cairn__sealed_verify(). Run as given and with every checksum outside the
 * compressed frames repaired (header, frame sums, index, footer, file).
 *
 * A file that opens is also re-sealed: each frame is inflated, the records
 * in it get their epochs and checksums repaired, and the frames are
 * compressed again behind a recomputed index and footer (the index keeps
 * the original sequence and time ranges). Mutations inside the frames thus
 * reach the record checks of cairn__sealed_verify(), which checksums inside
 * compressed bytes would otherwise keep them from.
 *
 * Version 3 has a dictionary section after the header (its length, a
 * zero, its sum, the zstd dictionary every frame is compressed with); its
 * sum is repaired too, and the re-seal compresses with the same one.
 *
 * Version 2 (a compacted segment), and 3: a record of type log.compacted is a
 * hole standing for the seqs from its own to the "upto" of its payload
 * (cairn__hole_decode), so a block holds count records for seqs first_seq
 * .. last_seq, count <= last_seq - first_seq + 1; a hole whose payload does
 * not decode, or that reaches past its block, is a problem.
 *
 * Invariants: no crash, no leak, no read outside the input; an opened file's
 * index and blocks lie inside it and add up; verify reports a problem for a
 * file this target could not read cleanly (a block whose records are not
 * whole, valid, in sequence and in the block's time range, or are more or
 * fewer than its index entry counts), and at most the whole-file checksum
 * for one it could; every problem offset lies inside the file.
 */
#include "fuzz.h"

#include <zstd.h>

#include "alloc.h"
#include "hole.h"
#include "sealed.h"

#define WHAT "fuzz.seg"

typedef struct problems {
    uint64_t n;
    size_t size;
} problems;

static void on_problem(void *user, uint64_t offset, int code, const char *msg)
{
    problems *p = user;
    FUZZ_CHECK(code < 0 && msg != NULL);
    FUZZ_CHECK(offset < p->size || offset == 0);
    p->n++;
}

/* Decode the records of one inflated block; 1 if all are whole, valid and
 * match the block's index entry: in sequence from first_seq to last_seq
 * (in version 2 a hole stands for the seqs up to its upto), in its time
 * range, and as many as it counts. */
static int block_records_ok(const uint8_t *raw, size_t raw_len, const sealed_seg *s,
                            const sealed_block *b)
{
    size_t pos = 0;
    uint64_t want = b->first_seq, n = 0;

    while (pos < raw_len) {
        cairn_record rec;
        size_t len = 0;
        rec_result r = cairn__record_decode(raw + pos, raw_len - pos, s->salt, &rec, &len);
        if (r != REC_OK)
            return 0;
        fuzz_check_record(raw + pos, raw_len - pos, s->salt, &rec, len);
        if (rec.seq != want || rec.ts_ms < b->first_ts || rec.ts_ms > b->last_ts)
            return 0;
        pos += len;
        n++;
        if (s->version >= 2 && rec.type == CAIRN_REC_COMPACTED) {
            cairn__hole h;
            if (cairn__hole_decode(rec.json, rec.json_len, rec.seq, &h, NULL) != CAIRN_OK)
                return 0;
            FUZZ_CHECK(h.seq == rec.seq && h.upto >= rec.seq);
            if (h.upto > b->last_seq)
                return 0; /* a hole reaching past its block */
            want = h.upto;
        }
        want++;
    }
    return want == b->last_seq + 1 && n == b->count;
}

/* Read the whole file; 1 if every block and record was clean. */
static int read_all(const uint8_t *buf, size_t size, const sealed_seg *s)
{
    uint8_t *raw = NULL;
    size_t cap = 0;
    uint64_t seq = s->base_seq, recs = 0, rawsum = 0;
    int clean = 1;

    FUZZ_CHECK(s->data == buf && s->size == size);
    FUZZ_CHECK(s->index_off >= FILEHDR_SIZE &&
               s->index_off + (uint64_t)s->block_count * SEAL_INDEX_ENTRY + SEAL_FOOTER_SIZE ==
                   size);
    for (uint32_t i = 0; i < s->block_count; i++) {
        sealed_block b;
        size_t raw_len = 0;
        cairn__err e;
        int rc;

        cairn__sealed_block(s, i, &b);
        FUZZ_CHECK(b.offset >= FILEHDR_SIZE && b.comp_len > 0 &&
                   b.offset + b.comp_len <= s->index_off);
        FUZZ_CHECK(b.first_seq == seq && b.last_seq >= b.first_seq);
        if (s->version == 1)
            FUZZ_CHECK(b.count == b.last_seq - b.first_seq + 1);
        else
            FUZZ_CHECK(b.count >= 1 && b.count - 1 <= b.last_seq - b.first_seq);
        FUZZ_CHECK(cairn__sealed_find_seq(s, b.first_seq) == i);
        FUZZ_CHECK(cairn__sealed_find_seq(s, b.last_seq) == i);
        FUZZ_CHECK(cairn__sealed_find_ts(s, b.last_ts) <= i);
        seq = b.last_seq + 1;
        recs += b.count;
        rawsum += b.raw_len;

        rc = cairn__sealed_read_block(s, i, NULL, &raw, &cap, &raw_len, WHAT, &e);
        if (rc != CAIRN_OK) {
            FUZZ_CHECK(rc < 0);
            clean = 0;
            continue;
        }
        FUZZ_CHECK(raw != NULL && raw_len == b.raw_len && cap >= raw_len);
        if (!block_records_ok(raw, raw_len, s, &b))
            clean = 0;
    }
    FUZZ_CHECK(recs == s->record_count && rawsum == s->raw_bytes);
    FUZZ_CHECK(s->version >= 1 && s->version <= 3);
    FUZZ_CHECK(s->version >= 3 || s->dict_len == 0);
    FUZZ_CHECK(s->dict_len == 0 || (s->dict == buf + FILEHDR_SIZE + SEAL_DICT_HEAD &&
                                    s->dict_len <= SEAL_DICT_MAX &&
                                    s->dict + s->dict_len <= buf + s->index_off));
    FUZZ_CHECK(s->first_seq == s->base_seq && s->last_seq == seq - 1);
    if (s->version == 1)
        FUZZ_CHECK(s->last_seq == s->base_seq + recs - 1);
    else
        FUZZ_CHECK(recs == 0 || recs - 1 <= s->last_seq - s->base_seq);
    FUZZ_CHECK(cairn__sealed_find_seq(s, s->last_seq + 1) == s->block_count);
    FUZZ_CHECK(cairn__sealed_find_seq(s, 0) == s->block_count);
    FUZZ_CHECK(cairn__sealed_find_ts(s, INT64_MIN) == 0);
    cairn__free(NULL, raw);
    return clean;
}

static void one(const uint8_t *buf, size_t size)
{
    sealed_seg s;
    cairn__err e;
    problems p = {0, size};
    uint64_t v;
    int rc, clean = 0;

    memset(e.msg, 'x', sizeof e.msg);
    rc = cairn__sealed_open(buf, size, &s, WHAT, &e);
    if (rc == CAIRN_OK)
        clean = read_all(buf, size, &s);
    else
        FUZZ_CHECK(rc < 0 && memchr(e.msg, '\0', sizeof e.msg) != NULL);

    v = cairn__sealed_verify(buf, size, NULL, WHAT, on_problem, &p);
    FUZZ_CHECK(v == p.n);
    if (rc != CAIRN_OK)
        FUZZ_CHECK(v == 1);
    else if (!clean)
        FUZZ_CHECK(v > 0);
    else
        FUZZ_CHECK(v <= 1); /* at most the whole-file checksum */
}

/* Recompute every checksum a mutation would break outside the frames. */
static void fix_sums(uint8_t *buf, size_t size)
{
    uint8_t *f;
    uint64_t index_off, ilen;
    uint32_t nb;

    fuzz_fix_filehdr(buf, size);
    if (size < FILEHDR_SIZE + SEAL_FOOTER_SIZE)
        return;
    if (get_le16(buf + 8) >= 3 && size >= FILEHDR_SIZE + SEAL_DICT_HEAD + SEAL_FOOTER_SIZE &&
        get_le32(buf + FILEHDR_SIZE) <=
            size - FILEHDR_SIZE - SEAL_DICT_HEAD - SEAL_FOOTER_SIZE)
        put_le64(buf + FILEHDR_SIZE + 8,
                 XXH3_64bits(buf + FILEHDR_SIZE + SEAL_DICT_HEAD, get_le32(buf + FILEHDR_SIZE)));
    f = buf + size - SEAL_FOOTER_SIZE;
    index_off = get_le64(f + 8);
    nb = get_le32(f + 16);
    ilen = (uint64_t)nb * SEAL_INDEX_ENTRY;
    if (index_off >= FILEHDR_SIZE && index_off <= size - SEAL_FOOTER_SIZE &&
        size - SEAL_FOOTER_SIZE - index_off == ilen) {
        for (uint32_t i = 0; i < nb; i++) {
            uint8_t *p = buf + index_off + (uint64_t)i * SEAL_INDEX_ENTRY;
            uint64_t off = get_le64(p);
            uint32_t clen = get_le32(p + 8);
            if (off <= index_off && clen <= index_off - off)
                put_le64(p + 56, XXH3_64bits(buf + off, clen));
        }
        put_le64(f + 56, XXH3_64bits(buf + index_off, (size_t)ilen));
    }
    put_le64(f + 64, XXH3_64bits(f, 64));
    put_le64(f + 72, XXH3_64bits(buf, size - 8));
}

/* Largest block the re-seal pass inflates: keeps each run fast. */
#define RESEAL_MAX (1u << 20)

typedef struct obuf {
    uint8_t *p;
    size_t n, cap;
} obuf;

static int oput(obuf *o, const void *p, size_t n)
{
    if (o->n + n > o->cap) {
        size_t cap = o->cap ? o->cap : 4096;
        uint8_t *q;
        while (cap < o->n + n)
            cap *= 2;
        q = realloc(o->p, cap);
        if (q == NULL)
            return -1;
        o->p = q;
        o->cap = cap;
    }
    memcpy(o->p + o->n, p, n);
    o->n += n;
    return 0;
}

/* Build a copy of an opened file whose frames hold the same records with
 * repaired checksums, then run the checks on it. */
static void reseal(const sealed_seg *s)
{
    obuf out = {0}, index = {0};
    uint8_t *raw = NULL, *comp = NULL, ent[SEAL_INDEX_ENTRY], foot[SEAL_FOOTER_SIZE];
    uint64_t recs = 0, rawsum = 0, index_off;
    size_t head = FILEHDR_SIZE + (s->version >= 3 ? SEAL_DICT_HEAD + s->dict_len : 0);
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    ZSTD_CCtx *cctx = ZSTD_createCCtx();

    if (dctx == NULL || cctx == NULL || oput(&out, s->data, head) != 0)
        goto cleanup;
    for (uint32_t i = 0; i < s->block_count; i++) {
        sealed_block b;
        size_t n, clen, bound;
        cairn__sealed_block(s, i, &b);
        if (b.raw_len > RESEAL_MAX)
            goto cleanup;
        free(raw);
        raw = malloc(b.raw_len);
        if (raw == NULL)
            goto cleanup;
        n = ZSTD_decompress_usingDict(dctx, raw, b.raw_len, s->data + b.offset, b.comp_len,
                                      s->dict, s->dict_len);
        if (ZSTD_isError(n) || n < REC_OVERHEAD)
            goto cleanup;
        fuzz_fix_records(raw, n, s->salt);
        bound = ZSTD_compressBound(n);
        free(comp);
        comp = malloc(bound);
        if (comp == NULL)
            goto cleanup;
        clen = ZSTD_compress_usingDict(cctx, comp, bound, raw, n, s->dict, s->dict_len,
                                       SEAL_ZSTD_LEVEL);
        if (ZSTD_isError(clen))
            goto cleanup;
        put_le64(ent, out.n);
        put_le32(ent + 8, (uint32_t)clen);
        put_le32(ent + 12, (uint32_t)n);
        put_le64(ent + 16, b.first_seq);
        put_le64(ent + 24, b.last_seq);
        put_le64(ent + 32, (uint64_t)b.first_ts);
        put_le64(ent + 40, (uint64_t)b.last_ts);
        put_le32(ent + 48, b.count);
        put_le32(ent + 52, 0);
        put_le64(ent + 56, XXH3_64bits(comp, clen));
        if (oput(&out, comp, clen) != 0 || oput(&index, ent, sizeof ent) != 0)
            goto cleanup;
        recs += b.count;
        rawsum += n;
    }
    index_off = out.n;
    if (index.n && oput(&out, index.p, index.n) != 0)
        goto cleanup;
    memset(foot, 0, sizeof foot);
    memcpy(foot, MAGIC_END, 8);
    put_le64(foot + 8, index_off);
    put_le32(foot + 16, s->block_count);
    put_le64(foot + 24, recs);
    put_le64(foot + 32, s->first_seq);
    put_le64(foot + 40, s->last_seq);
    put_le64(foot + 48, rawsum);
    put_le64(foot + 56, XXH3_64bits(index.p, index.n));
    put_le64(foot + 64, XXH3_64bits(foot, 64));
    if (oput(&out, foot, sizeof foot) != 0)
        goto cleanup;
    put_le64(out.p + out.n - 8, XXH3_64bits(out.p, out.n - 8));
    {
        /* Exact-size copy so ASan sees reads past the end. */
        uint8_t *f = fuzz_dup(out.p, out.n);
        if (f != NULL) {
            sealed_seg s2;
            FUZZ_CHECK(cairn__sealed_open(f, out.n, &s2, WHAT, NULL) == CAIRN_OK);
            one(f, out.n);
            free(f);
        }
    }
cleanup:
    ZSTD_freeDCtx(dctx);
    ZSTD_freeCCtx(cctx);
    free(out.p);
    free(index.p);
    free(raw);
    free(comp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = fuzz_dup(data, size);
    sealed_seg s;

    if (buf == NULL)
        return 0;
    one(buf, size);
    fix_sums(buf, size);
    one(buf, size);
    if (cairn__sealed_open(buf, size, &s, WHAT, NULL) == CAIRN_OK)
        reseal(&s);
    free(buf);
    return 0;
}
