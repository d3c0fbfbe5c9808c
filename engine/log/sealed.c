/*
 * sealed.c - sealing a full log segment into independently decodable zstd
 * blocks, and reading it back (format-spec/sealed.md).
 *
 * Sealing re-validates every record it copies (checksum and sequence), so
 * rot in a closed .log is caught before it is baked into a sealed file. The
 * sealed file is written as <id>.seg.tmp, fsynced and renamed, so a crash
 * leaves either no .seg or a whole one; the manifest swap that makes it live
 * happens afterwards, in the store.
 *
 * Reading trusts nothing: the footer has its own checksum, the index has a
 * checksum in the footer, and every index entry is checked for offsets inside
 * the file, contiguous frames and contiguous sequence numbers before any
 * pointer into the mapping is formed. Each frame has its own checksum, so a
 * flipped bit costs one block, never the file.
 */
#include "sealed.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>
#define ZDICT_STATIC_LINKING_ONLY /* fastCover's parameters (zstd >= 1.4) */
#include <zdict.h>
#include <zstd.h>

#include "alloc.h"
#include "bytes.h"
#include "chain.h"
#include "filehdr.h"
#include "hole.h"
#include "io.h"
#include "record.h"

/* Largest raw block: a block closes before it passes the target unless its
 * first record alone is bigger. */
#define SEAL_BLOCK_MAX (SEAL_BLOCK_TARGET + CAIRN_RECORD_MAX)

static void put_block(uint8_t *p, const sealed_block *b)
{
    put_le64(p, b->offset);
    put_le32(p + 8, b->comp_len);
    put_le32(p + 12, b->raw_len);
    put_le64(p + 16, b->first_seq);
    put_le64(p + 24, b->last_seq);
    put_le64(p + 32, (uint64_t)b->first_ts);
    put_le64(p + 40, (uint64_t)b->last_ts);
    put_le32(p + 48, b->count);
    put_le32(p + 52, 0);
    put_le64(p + 56, b->sum);
}

void cairn__sealed_block(const sealed_seg *s, uint32_t i, sealed_block *b)
{
    const uint8_t *p = s->data + s->index_off + (uint64_t)i * SEAL_INDEX_ENTRY;
    b->offset = get_le64(p);
    b->comp_len = get_le32(p + 8);
    b->raw_len = get_le32(p + 12);
    b->first_seq = get_le64(p + 16);
    b->last_seq = get_le64(p + 24);
    b->first_ts = (int64_t)get_le64(p + 32);
    b->last_ts = (int64_t)get_le64(p + 40);
    b->count = get_le32(p + 48);
    b->sum = get_le64(p + 56);
}

static int out_write(cairn__sealw *w, const void *buf, size_t len, cairn__err *e)
{
    /* a sealed segment is mapped by its readers (io.h) */
    int rc = cairn__io_write_mapped(w->io, w->sites->write, w->fd, buf, len, w->pos, w->tmp, e);
    if (rc == CAIRN_OK) {
        XXH3_64bits_update(w->hash, buf, len);
        w->pos += len;
    }
    return rc;
}

/* Check the records of one raw block: whole, valid, in sequence. */
static int check_block_records(const uint8_t *raw, size_t len, const logseg *src,
                               uint64_t first_seq, cairn__err *e)
{
    size_t pos = 0;
    uint64_t want = first_seq;
    while (pos < len) {
        cairn_record rec;
        size_t rl;
        rec_result r = cairn__record_decode(raw + pos, len - pos, src->salt, &rec, &rl);
        if (r != REC_OK || rec.seq != want)
            return cairn__fail(e, r == REC_BAD_SUM ? CAIRN_ECHECKSUM : CAIRN_ECORRUPT,
                               "%s: cannot seal: %s at seq %llu", src->name,
                               r == REC_OK ? "sequence gap" : cairn__record_result_str(r),
                               (unsigned long long)want);
        pos += rl;
        want++;
    }
    return CAIRN_OK;
}

static void setup_cctx(ZSTD_CCtx *c, const ZSTD_CDict *cdict);

/* Fault-injection names: a seal's, and a compaction's (version 2). */
static const cairn__sealw_sites seal_sites = {
    "seal.open", "seal.write", "seal.cleanup",
    {"seal.fsync", "seal.close", "seal.rename", "seal.dirsync"}};
static const cairn__sealw_sites compact_sites = {
    "compact.open", "compact.write", "compact.cleanup",
    {"compact.fsync", "compact.close", "compact.rename", "compact.dirsync"}};

int cairn__sealw_begin(cairn__sealw *w, const cairn_io *io, const cairn_allocator *a, int dirfd,
                       const char *fin, uint64_t id, uint64_t salt, uint64_t base_seq,
                       int64_t created_ms, int compacting, const uint8_t *dict,
                       size_t dict_len, cairn__err *e)
{
    uint8_t h[FILEHDR_SIZE + SEAL_DICT_HEAD];
    int rc;

    memset(w, 0, sizeof *w);
    w->io = io;
    w->a = a;
    w->dirfd = dirfd;
    w->fd = -1;
    w->base_seq = w->next_seq = base_seq;
    w->dict_len = dict_len;
    w->target = cairn__seal_block_target(dict_len);
    snprintf(w->fin, sizeof w->fin, "%s", fin);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp", fin);
    w->hash = XXH3_createState();
    w->cctx = ZSTD_createCCtx();
    if (dict_len)
        w->cdict = ZSTD_createCDict(dict, dict_len, SEAL_ZSTD_LEVEL);
    if (w->hash == NULL || w->cctx == NULL || (dict_len && w->cdict == NULL))
        return cairn__fail(e, CAIRN_ENOMEM, "%s: no memory to write", fin);
    XXH3_64bits_reset(w->hash);
    setup_cctx(w->cctx, w->cdict);
    w->sites = compacting ? &compact_sites : &seal_sites;
    rc = cairn__io_open(io, w->sites->open, dirfd, w->tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644,
                        &w->fd, e);
    if (rc != CAIRN_OK)
        return rc;
    cairn__filehdr_init(h, MAGIC_SEG, SEG_VERSION);
    put_le64(h + 16, id);
    put_le64(h + 24, salt);
    put_le64(h + 32, base_seq);
    put_le64(h + 40, (uint64_t)created_ms);
    cairn__filehdr_seal(h);
    put_le32(h + FILEHDR_SIZE, (uint32_t)dict_len);
    put_le32(h + FILEHDR_SIZE + 4, 0);
    put_le64(h + FILEHDR_SIZE + 8, XXH3_64bits(dict, dict_len));
    rc = out_write(w, h, sizeof h, e);
    if (rc == CAIRN_OK && dict_len)
        rc = out_write(w, dict, dict_len, e);
    return rc;
}

/* A compression context as the writer's: level, no checksum, the
 * dictionary by reference and its id left out (the file's section has it). */
static void setup_cctx(ZSTD_CCtx *c, const ZSTD_CDict *cdict)
{
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, SEAL_ZSTD_LEVEL);
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 0);
    if (cdict != NULL) {
        ZSTD_CCtx_setParameter(c, ZSTD_c_dictIDFlag, 0);
        ZSTD_CCtx_refCDict(c, cdict);
    }
}

/* A compressed block (clen bytes at comp) written and indexed. */
static int put_compressed(cairn__sealw *w, const uint8_t *comp, size_t clen, size_t raw_len,
                          uint64_t first_seq, uint64_t last_seq, int64_t first_ts,
                          int64_t last_ts, uint32_t count, cairn__err *e)
{
    sealed_block b;
    int rc;

    if (cairn__grow(w->a, (void **)&w->index, &w->index_cap,
                    (w->nblocks + 1) * SEAL_INDEX_ENTRY, 1) != CAIRN_OK)
        return cairn__fail(e, CAIRN_ENOMEM, "%s: no memory to write", w->fin);
    b.offset = w->pos;
    b.comp_len = (uint32_t)clen;
    b.raw_len = (uint32_t)raw_len;
    b.first_seq = first_seq;
    b.last_seq = last_seq;
    b.first_ts = first_ts;
    b.last_ts = last_ts;
    b.count = count;
    b.sum = XXH3_64bits(comp, clen);
    if ((rc = out_write(w, comp, clen, e)) != CAIRN_OK)
        return rc;
    put_block(w->index + w->nblocks * SEAL_INDEX_ENTRY, &b);
    w->nblocks++;
    w->raw_total += raw_len;
    w->records += count;
    w->next_seq = last_seq + 1;
    return CAIRN_OK;
}

int cairn__sealw_block(cairn__sealw *w, const uint8_t *raw, size_t raw_len, uint64_t first_seq,
                       uint64_t last_seq, int64_t first_ts, int64_t last_ts, uint32_t count,
                       cairn__err *e)
{
    size_t clen;

    if (cairn__grow(w->a, (void **)&w->comp, &w->comp_cap, ZSTD_compressBound(raw_len), 1) !=
        CAIRN_OK)
        return cairn__fail(e, CAIRN_ENOMEM, "%s: no memory to write", w->fin);
    clen = ZSTD_compress2(w->cctx, w->comp, w->comp_cap, raw, raw_len);
    if (ZSTD_isError(clen))
        return cairn__fail(e, CAIRN_EIO, "%s: zstd: %s", w->fin, ZSTD_getErrorName(clen));
    return put_compressed(w, w->comp, clen, raw_len, first_seq, last_seq, first_ts, last_ts,
                          count, e);
}

/* Write the block being gathered by cairn__sealw_add, if any. */
static int gathered_flush(cairn__sealw *w, cairn__err *e)
{
    int rc;
    if (w->g_count == 0)
        return CAIRN_OK;
    rc = cairn__sealw_block(w, w->g, w->g_len, w->g_first, w->g_last, w->g_first_ts,
                            w->g_last_ts, w->g_count, e);
    w->g_len = 0;
    w->g_count = 0;
    return rc;
}

int cairn__sealw_copy_block(cairn__sealw *w, const sealed_seg *src, uint32_t i, const char *what,
                            cairn__err *e)
{
    sealed_block b;
    const uint8_t *comp;
    int rc;

    cairn__sealed_block(src, i, &b);
    comp = src->data + b.offset;
    if (XXH3_64bits(comp, b.comp_len) != b.sum)
        return cairn__fail(e, CAIRN_ECHECKSUM, "%s: block %u at offset %llu has bad checksum",
                           what, i, (unsigned long long)b.offset);
    if ((rc = gathered_flush(w, e)) != CAIRN_OK) /* it may add a block */
        return rc;
    if (cairn__grow(w->a, (void **)&w->index, &w->index_cap, (w->nblocks + 1) * SEAL_INDEX_ENTRY,
                    1) != CAIRN_OK)
        return cairn__fail(e, CAIRN_ENOMEM, "%s: no memory to write", w->fin);
    b.offset = w->pos; /* its place in this file; every other field stays */
    if ((rc = out_write(w, comp, b.comp_len, e)) != CAIRN_OK)
        return rc;
    put_block(w->index + w->nblocks * SEAL_INDEX_ENTRY, &b);
    w->nblocks++;
    w->raw_total += b.raw_len;
    w->records += b.count;
    w->next_seq = b.last_seq + 1;
    return CAIRN_OK;
}

int cairn__sealw_add(cairn__sealw *w, const uint8_t *rec, size_t len, uint64_t seq,
                     uint64_t last, int64_t ts, cairn__err *e)
{
    int rc;
    if (w->g_count != 0 && w->g_len + len > w->target &&
        (rc = gathered_flush(w, e)) != CAIRN_OK)
        return rc;
    if (cairn__grow(w->a, (void **)&w->g, &w->g_cap, w->g_len + len, 1) != CAIRN_OK)
        return cairn__fail(e, CAIRN_ENOMEM, "%s: no memory to write", w->fin);
    memcpy(w->g + w->g_len, rec, len);
    w->g_len += len;
    if (w->g_count == 0) {
        w->g_first = seq;
        w->g_first_ts = ts;
    }
    w->g_last = last;
    w->g_last_ts = ts;
    w->g_count++;
    return CAIRN_OK;
}

int cairn__sealw_finish(cairn__sealw *w, uint64_t *file_size, cairn__err *e)
{
    uint8_t foot[SEAL_FOOTER_SIZE];
    size_t ilen;
    uint64_t index_off;
    int rc = gathered_flush(w, e);

    index_off = w->pos;
    ilen = w->nblocks * SEAL_INDEX_ENTRY;
    if (rc == CAIRN_OK && ilen)
        rc = out_write(w, w->index, ilen, e);
    memset(foot, 0, sizeof foot);
    memcpy(foot, MAGIC_END, 8);
    put_le64(foot + 8, index_off);
    put_le32(foot + 16, (uint32_t)w->nblocks);
    put_le64(foot + 24, w->records);
    put_le64(foot + 32, w->base_seq);
    put_le64(foot + 40, w->next_seq - 1);
    put_le64(foot + 48, w->raw_total);
    put_le64(foot + 56, XXH3_64bits(w->index, ilen));
    put_le64(foot + 64, XXH3_64bits(foot, 64));
    if (rc == CAIRN_OK) {
        XXH3_64bits_update(w->hash, foot, 72);
        put_le64(foot + 72, XXH3_64bits_digest(w->hash));
        rc = cairn__io_write(w->io, w->sites->write, w->fd, foot, sizeof foot, w->pos, w->tmp, e);
        w->pos += sizeof foot;
    }
    if (w->fd < 0) /* the open failed: its message is in e */
        rc = rc == CAIRN_OK ? CAIRN_EIO : rc;
    else {
        rc = cairn__io_publish(w->io, &w->sites->publish, rc, w->fd, w->dirfd, w->tmp, w->fin, e);
        w->fd = -1;
    }
    if (rc == CAIRN_OK)
        *file_size = w->pos;
    else
        w->io->unlinkat(w->io->user, w->sites->cleanup, w->dirfd, w->tmp);
    cairn__sealw_abort(w);
    return rc;
}

void cairn__sealw_abort(cairn__sealw *w)
{
    if (w->fd >= 0) {
        cairn__io_close(w->io, w->sites->publish.close, w->fd);
        w->io->unlinkat(w->io->user, w->sites->cleanup, w->dirfd, w->tmp);
        w->fd = -1;
    }
    XXH3_freeState(w->hash);
    ZSTD_freeCCtx(w->cctx);
    ZSTD_freeCDict(w->cdict);
    w->cdict = NULL;
    cairn__free(w->a, w->g);
    cairn__free(w->a, w->comp);
    cairn__free(w->a, w->index);
    w->hash = NULL;
    w->cctx = NULL;
    w->g = w->comp = w->index = NULL;
}

#define SEAL_CHAIN_THREAD_MIN (1u << 20) /* bytes of log */

/* The hash chain of a log segment, on a thread of its own beside the
 * sealing: SHA-256 and zstd take about as long as each other, and a close
 * waiting for its seals then has both cores at work. */
typedef struct chain_job {
    const cairn_io *io;
    const cairn_allocator *a;
    const logseg *src;
    uint8_t *chain;
    uint64_t last;
    int rc;
    cairn__err e;
} chain_job;

static void *chain_main(void *arg)
{
    chain_job *j = arg;
    cairn__chain c;
    if (cairn__chain_init(&c) != CAIRN_OK) {
        j->rc = cairn__fail(&j->e, CAIRN_ENOMEM, "%s: no memory to hash it", j->src->name);
        return NULL;
    }
    j->rc = cairn__chain_logseg(&c, j->io, "seal.chain", j->a, j->src->fd, j->src->name,
                                j->src->salt, j->src->end, j->chain, &j->last, &j->e);
    cairn__chain_free(&c);
    return NULL;
}

/* The hash job's outcome: its error, or a chain that stopped short. */
static int chain_done(const chain_job *job, const logseg *src, cairn__err *e)
{
    if (job->rc != CAIRN_OK) {
        *e = job->e;
        return job->rc;
    }
    if (src->n > 0 && job->last != src->base_seq + src->n - 1)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: the hash chain stopped at seq %llu, before "
                           "its end", src->name, (unsigned long long)job->last);
    return CAIRN_OK;
}

size_t cairn__seal_train(uint8_t *dict, const uint8_t *samples, const size_t *sample_lens,
                         unsigned n)
{
    ZDICT_fastCover_params_t p;
    size_t len;
    memset(&p, 0, sizeof p);
    /* fixed parameters, no search: ~20 ms for 1 MiB of samples. f 14 (a
     * table of 2^14 counts) gave memory records a ratio of 3.04 at 4 KiB
     * blocks against 2.95-3.00 with f 12 to 20, k 100 to 1000, d 6 */
    p.k = 200;
    p.d = 8;
    p.f = 14;
    p.accel = 1;
    p.zParams.compressionLevel = SEAL_ZSTD_LEVEL;
    len = ZDICT_trainFromBuffer_fastCover(dict, SEAL_DICT_TRAIN, samples, sample_lens, n, p);
    return ZDICT_isError(len) ? 0 : len;
}

/* The records [i, end) of src that make the block starting at record i:
 * while the next still fits under the target (a record alone may not). */
static size_t block_end(const logseg *src, size_t i, size_t target)
{
    size_t j = i + 1;
    uint64_t start = src->off[i];
    while (j < src->n && (j + 1 < src->n ? src->off[j + 1] : src->end) - start <= target)
        j++;
    return j;
}

static uint64_t rec_end(const logseg *src, size_t j)
{
    return j < src->n ? src->off[j] : src->end;
}

#define SEAL_SAMPLES 128u         /* runs of records sampled to train a dictionary */
#define SEAL_SAMPLE_BYTES 8192u   /* each about this long: ~1 MiB in all */

/* A dictionary for src's records, trained on SEAL_SAMPLES blocks spread
 * over it: its length in *dict_len (0: none, the segment is small or zstd
 * found nothing to learn). */
static int seal_dict(const cairn_io *io, const cairn_allocator *a, const logseg *src,
                     uint8_t **dict, size_t *dict_len, cairn__err *e)
{
    uint8_t *smp = NULL;
    size_t lens[SEAL_SAMPLES], used = 0, next = 0;
    unsigned n = 0;
    int rc = CAIRN_OK;

    *dict = NULL;
    *dict_len = 0;
    if (src->n == 0 || src->end - src->off[0] < SEAL_DICT_MIN_RAW)
        return CAIRN_OK;
    smp = cairn__malloc(a, (size_t)SEAL_SAMPLES * (SEAL_SAMPLE_BYTES + CAIRN_RECORD_MAX));
    *dict = cairn__malloc(a, SEAL_DICT_TRAIN);
    if (smp == NULL || *dict == NULL) {
        rc = cairn__fail(e, CAIRN_ENOMEM, "%s: no memory to seal", src->name);
        goto out;
    }
    for (unsigned k = 0; k < SEAL_SAMPLES; k++) {
        size_t i = (size_t)((uint64_t)k * src->n / SEAL_SAMPLES), j, got;
        uint64_t start;
        if (i < next)
            continue; /* a segment of few, large records: the blocks would overlap */
        j = block_end(src, i, SEAL_SAMPLE_BYTES);
        next = j;
        start = src->off[i];
        lens[n] = (size_t)(rec_end(src, j) - start);
        rc = cairn__io_read(io, "seal.read", src->fd, smp + used, lens[n], start, &got,
                            src->name, e);
        if (rc != CAIRN_OK)
            goto out;
        if (got != lens[n]) {
            rc = cairn__fail(e, CAIRN_ECORRUPT, "%s: short read at offset %llu while sealing",
                             src->name, (unsigned long long)start);
            goto out;
        }
        used += lens[n++];
    }
    *dict_len = cairn__seal_train(*dict, smp, lens, n);
out:
    cairn__free(a, smp);
    if (rc != CAIRN_OK || *dict_len == 0) {
        cairn__free(a, *dict);
        *dict = NULL;
    }
    return rc;
}

/* With parallel 2 (a close waiting for its seals: nothing else wants the
 * cores), the blocks of the segment's second half are read, checked and
 * compressed on a thread of their own into memory, while the sealing
 * thread compresses and writes the first half; then they are written in
 * order. The same blocks, the same bytes: only who compresses them
 * differs. */
#define SEAL_SPLIT_MIN (4u << 20) /* bytes of log before the compression is split */

typedef struct split_job {
    const cairn_io *io;
    const cairn_allocator *a;
    const logseg *src;
    const ZSTD_CDict *cdict;
    const size_t *cut;     /* block b holds records cut[b] .. cut[b + 1] - 1 */
    size_t from, to;       /* the job's blocks */
    uint8_t *out;          /* their compressed bytes, back to back */
    size_t out_len, out_cap;
    size_t *clen;          /* each one's length */
    int rc;
    cairn__err e;
} split_job;

static void *split_main(void *arg)
{
    split_job *j = arg;
    const logseg *src = j->src;
    ZSTD_CCtx *c = ZSTD_createCCtx();
    uint8_t *raw = NULL;
    size_t raw_cap = 0;

    if (c == NULL)
        j->rc = cairn__fail(&j->e, CAIRN_ENOMEM, "%s: no memory to seal", src->name);
    else
        setup_cctx(c, j->cdict);
    for (size_t b = j->from; j->rc == CAIRN_OK && b < j->to; b++) {
        size_t i = j->cut[b], raw_len, got, clen;
        uint64_t start = src->off[i];
        raw_len = (size_t)(rec_end(src, j->cut[b + 1]) - start);
        if (cairn__grow(j->a, (void **)&raw, &raw_cap, raw_len, 1) != CAIRN_OK ||
            cairn__grow(j->a, (void **)&j->out, &j->out_cap,
                        j->out_len + ZSTD_compressBound(raw_len), 1) != CAIRN_OK) {
            j->rc = cairn__fail(&j->e, CAIRN_ENOMEM, "%s: no memory to seal", src->name);
            break;
        }
        j->rc = cairn__io_read(j->io, "seal.read", src->fd, raw, raw_len, start, &got, src->name,
                               &j->e);
        if (j->rc == CAIRN_OK && got != raw_len)
            j->rc = cairn__fail(&j->e, CAIRN_ECORRUPT, "%s: short read at offset %llu while "
                                "sealing", src->name, (unsigned long long)start);
        if (j->rc == CAIRN_OK)
            j->rc = check_block_records(raw, raw_len, src, src->base_seq + i, &j->e);
        if (j->rc != CAIRN_OK)
            break;
        clen = ZSTD_compress2(c, j->out + j->out_len, j->out_cap - j->out_len, raw, raw_len);
        if (ZSTD_isError(clen)) {
            j->rc = cairn__fail(&j->e, CAIRN_EIO, "%s: zstd: %s", src->name,
                                ZSTD_getErrorName(clen));
            break;
        }
        j->clen[b - j->from] = clen;
        j->out_len += clen;
    }
    ZSTD_freeCCtx(c);
    cairn__free(j->a, raw);
    return NULL;
}

/* The record each block from record i on starts at, and n at the end,
 * into *cut (the blocks cairn__seal_write's loop makes): their number, 0
 * on no memory. */
static size_t cut_blocks(const cairn_allocator *a, const logseg *src, size_t i, size_t target,
                         size_t **cut)
{
    size_t nb = 0, cap = 0;
    *cut = NULL;
    while (i < src->n) {
        if (cairn__grow(a, (void **)cut, &cap, nb + 2, sizeof **cut) != CAIRN_OK) {
            cairn__free(a, *cut);
            *cut = NULL;
            return 0;
        }
        (*cut)[nb++] = i;
        i = block_end(src, i, target);
    }
    if (*cut != NULL)
        (*cut)[nb] = src->n;
    return nb;
}

/* The blocks from record i on, their second half on a thread of its own
 * (split_job), the first half left to the caller up to *upto. 1 if the
 * thread runs; else 0, nothing changed. */
static int split_from(const cairn_io *io, const cairn_allocator *a, const logseg *src,
                      const cairn__sealw *w, size_t i, split_job *split, size_t **cut,
                      pthread_t *th, size_t *upto)
{
    size_t nb = cut_blocks(a, src, i, w->target, cut);
    if (nb < 2 || (split->clen = cairn__calloc(a, nb - nb / 2, sizeof *split->clen)) == NULL) {
        cairn__free(a, *cut);
        *cut = NULL;
        return 0;
    }
    split->io = io;
    split->a = a;
    split->src = src;
    split->cdict = w->cdict;
    split->cut = *cut;
    split->from = nb / 2;
    split->to = nb;
    if (pthread_create(th, NULL, split_main, split) != 0) {
        cairn__free(a, split->clen);
        split->clen = NULL;
        cairn__free(a, *cut);
        *cut = NULL;
        return 0;
    }
    *upto = (*cut)[nb / 2];
    return 1;
}

int cairn__seal_write(const cairn_io *io, const cairn_allocator *a, int dirfd,
                      const logseg *src, uint8_t *chain, int parallel, const int *hurry,
                      uint64_t *file_size, cairn__err *e)
{
    char fin[LOGSEG_NAME_MAX];
    uint8_t *raw = NULL, *dict = NULL;
    size_t raw_cap = 0, i = 0, dict_len = 0;
    cairn__sealw w;
    chain_job job;
    split_job split;
    size_t *cut = NULL, upto = src->n;
    pthread_t th, split_th;
    int threaded = 0, split_on = 0, rc;

    memset(&job, 0, sizeof job);
    memset(&split, 0, sizeof split);
    if (chain != NULL) {
        job.io = io;
        job.a = a;
        job.src = src;
        job.chain = chain;
        /* a thread pays off for a segment of some size; a small one is
         * hashed first, here */
        threaded = parallel && src->end >= SEAL_CHAIN_THREAD_MIN &&
                   pthread_create(&th, NULL, chain_main, &job) == 0;
        if (!threaded) {
            chain_main(&job); /* here, first (and its I/O in a fixed order) */
            if ((rc = chain_done(&job, src, e)) != CAIRN_OK)
                return rc;
        }
    }
    cairn__logseg_name(fin, src->id, "seg");
    memset(&w, 0, sizeof w); /* what sealw_abort frees, if the dictionary fails */
    w.fd = -1;
    rc = seal_dict(io, a, src, &dict, &dict_len, e);
    if (rc == CAIRN_OK)
        rc = cairn__sealw_begin(&w, io, a, dirfd, fin, src->id, src->salt, src->base_seq,
                                src->created_ms, 0, dict, dict_len, e);
    cairn__free(a, dict); /* the writer digested it */
    /* The second half's blocks on a thread of their own (see split_job). */
    if (rc == CAIRN_OK && parallel >= 2 && src->end >= SEAL_SPLIT_MIN)
        split_on = split_from(io, a, src, &w, 0, &split, &cut, &split_th, &upto);
    while (rc == CAIRN_OK && i < upto) {
        size_t j, raw_len, got;
        uint64_t start = src->off[i];
        /* Asked to hurry (a close waits): what is left, split the same way. */
        if (!split_on && hurry != NULL && __atomic_load_n(hurry, __ATOMIC_RELAXED) &&
            src->end - start >= SEAL_SPLIT_MIN)
            split_on = split_from(io, a, src, &w, i, &split, &cut, &split_th, &upto);
        j = block_end(src, i, w.target);
        raw_len = (size_t)(rec_end(src, j) - start);
        if (cairn__grow(a, (void **)&raw, &raw_cap, raw_len, 1) != CAIRN_OK) {
            rc = cairn__fail(e, CAIRN_ENOMEM, "%s: no memory to seal", src->name);
            break;
        }
        rc = cairn__io_read(io, "seal.read", src->fd, raw, raw_len, start, &got, src->name, e);
        if (rc == CAIRN_OK && got != raw_len)
            rc = cairn__fail(e, CAIRN_ECORRUPT, "%s: short read at offset %llu while sealing",
                             src->name, (unsigned long long)start);
        if (rc == CAIRN_OK)
            rc = check_block_records(raw, raw_len, src, src->base_seq + i, e);
        if (rc == CAIRN_OK)
            rc = cairn__sealw_block(&w, raw, raw_len, src->base_seq + i, src->base_seq + j - 1,
                                    src->ts[i], src->ts[j - 1], (uint32_t)(j - i), e);
        i = j;
    }
    if (split_on) {
        pthread_join(split_th, NULL);
        if (rc == CAIRN_OK && split.rc != CAIRN_OK) {
            *e = split.e;
            rc = split.rc;
        }
        for (size_t b = split.from, at = 0; rc == CAIRN_OK && b < split.to; b++) {
            size_t k = cut[b + 1], len = split.clen[b - split.from];
            i = cut[b];
            rc = put_compressed(&w, split.out + at, len,
                                (size_t)(rec_end(src, k) - src->off[i]), src->base_seq + i,
                                src->base_seq + k - 1, src->ts[i], src->ts[k - 1],
                                (uint32_t)(k - i), e);
            at += len;
        }
    }
    cairn__free(a, cut);
    cairn__free(a, split.clen);
    cairn__free(a, split.out);
    /* The hash before the file is put in place: a seal whose chain failed
     * publishes nothing. */
    if (threaded) {
        pthread_join(th, NULL);
        if (rc == CAIRN_OK)
            rc = chain_done(&job, src, e);
    }
    if (rc == CAIRN_OK)
        rc = cairn__sealw_finish(&w, file_size, e);
    else
        cairn__sealw_abort(&w);
    cairn__free(a, raw);
    return rc;
}

int cairn__sealed_open(const uint8_t *data, size_t size, sealed_seg *s, const char *what,
                       cairn__err *e)
{
    const uint8_t *f;
    uint64_t pos = FILEHDR_SIZE, seq, recs = 0, raw = 0;
    int64_t ts = INT64_MIN;
    int rc;

    memset(s, 0, sizeof *s);
    rc = cairn__filehdr_check(data, size, MAGIC_SEG, SEG_VERSION, what, e);
    if (rc != CAIRN_OK)
        return rc;
    if (size < FILEHDR_SIZE + SEAL_FOOTER_SIZE)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: too short for a footer (%zu bytes)", what,
                           size);
    if (get_le64(data + 48) != 0 || get_le64(data + 32) == 0)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: bad base_seq or reserved field in header",
                           what);
    s->data = data;
    s->size = size;
    s->version = get_le16(data + 8);
    s->id = get_le64(data + 16);
    s->salt = get_le64(data + 24);
    s->base_seq = get_le64(data + 32);
    s->created_ms = (int64_t)get_le64(data + 40);
    if (s->version >= 3) {
        const uint8_t *d = data + FILEHDR_SIZE;
        if (size < FILEHDR_SIZE + SEAL_DICT_HEAD + SEAL_FOOTER_SIZE ||
            get_le32(d + 4) != 0 || get_le32(d) > SEAL_DICT_MAX ||
            get_le32(d) > size - FILEHDR_SIZE - SEAL_DICT_HEAD - SEAL_FOOTER_SIZE)
            return cairn__fail(e, CAIRN_ECORRUPT, "%s: bad dictionary section at offset %d",
                               what, FILEHDR_SIZE);
        s->dict_len = get_le32(d);
        s->dict = s->dict_len ? d + SEAL_DICT_HEAD : NULL;
        if (get_le64(d + 8) != XXH3_64bits(s->dict, s->dict_len))
            return cairn__fail(e, CAIRN_ECHECKSUM, "%s: dictionary checksum mismatch at offset %d",
                               what, FILEHDR_SIZE + 8);
        pos += SEAL_DICT_HEAD + s->dict_len;
    }

    f = data + size - SEAL_FOOTER_SIZE;
    if (memcmp(f, MAGIC_END, 8) != 0)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: bad footer magic at offset %zu", what,
                           size - SEAL_FOOTER_SIZE);
    if (get_le64(f + 64) != XXH3_64bits(f, 64))
        return cairn__fail(e, CAIRN_ECHECKSUM, "%s: footer checksum mismatch at offset %zu",
                           what, size - SEAL_FOOTER_SIZE + 64);
    s->index_off = get_le64(f + 8);
    s->block_count = get_le32(f + 16);
    s->record_count = get_le64(f + 24);
    s->first_seq = get_le64(f + 32);
    s->last_seq = get_le64(f + 40);
    s->raw_bytes = get_le64(f + 48);
    if (get_le32(f + 20) != 0 || s->index_off < pos ||
        s->index_off > size - SEAL_FOOTER_SIZE ||
        (size - SEAL_FOOTER_SIZE - s->index_off) != (uint64_t)s->block_count * SEAL_INDEX_ENTRY)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: footer at offset %zu: bad index bounds",
                           what, size - SEAL_FOOTER_SIZE);
    if (get_le64(f + 56) !=
        XXH3_64bits(data + s->index_off, (size_t)s->block_count * SEAL_INDEX_ENTRY))
        return cairn__fail(e, CAIRN_ECHECKSUM, "%s: block index checksum mismatch at offset %llu",
                           what, (unsigned long long)s->index_off);
    seq = s->base_seq;
    for (uint32_t i = 0; i < s->block_count; i++) {
        sealed_block b;
        cairn__sealed_block(s, i, &b);
        if (b.offset != pos || b.comp_len == 0 || b.comp_len > s->index_off - pos ||
            b.raw_len < REC_OVERHEAD || b.raw_len > SEAL_BLOCK_MAX || b.count == 0 ||
            b.first_seq != seq || b.last_seq < b.first_seq ||
            /* version 2: a hole stands for several seqs */
            (s->version == 1 ? b.last_seq - b.first_seq + 1 != b.count
                             : b.last_seq - b.first_seq + 1 < b.count) || b.first_ts > b.last_ts || b.first_ts < ts ||
            get_le32(data + s->index_off + (uint64_t)i * SEAL_INDEX_ENTRY + 52) != 0)
            return cairn__fail(e, CAIRN_ECORRUPT, "%s: block index entry %u at offset %llu is "
                               "inconsistent", what, i,
                               (unsigned long long)(s->index_off + (uint64_t)i * SEAL_INDEX_ENTRY));
        pos += b.comp_len;
        seq = b.last_seq + 1;
        ts = b.last_ts;
        recs += b.count;
        raw += b.raw_len;
    }
    if (pos != s->index_off || recs != s->record_count || raw != s->raw_bytes ||
        s->first_seq != s->base_seq || s->last_seq != seq - 1)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: footer totals disagree with the block index",
                           what);
    return CAIRN_OK;
}

uint32_t cairn__sealed_find_seq(const sealed_seg *s, uint64_t seq)
{
    uint32_t lo = 0, hi = s->block_count;
    if (seq < s->first_seq || seq > s->last_seq)
        return s->block_count;
    while (lo < hi) { /* on last_seq alone (entry offset 24): one load a step */
        uint32_t mid = lo + (hi - lo) / 2;
        if (get_le64(s->data + s->index_off + (uint64_t)mid * SEAL_INDEX_ENTRY + 24) < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint32_t cairn__sealed_find_ts(const sealed_seg *s, int64_t ts)
{
    uint32_t lo = 0, hi = s->block_count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        sealed_block b;
        cairn__sealed_block(s, mid, &b);
        if (b.last_ts < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int cairn__sealed_read_block_with(const sealed_seg *s, uint32_t i, void *dctx, const void *ddict,
                                  const cairn_allocator *a, uint8_t **buf, size_t *cap,
                                  size_t *raw_len, const char *what, cairn__err *e)
{
    sealed_block b;
    ZSTD_DCtx *own = NULL;
    size_t n;

    cairn__sealed_block(s, i, &b);
    if (XXH3_64bits(s->data + b.offset, b.comp_len) != b.sum)
        return cairn__fail(e, CAIRN_ECHECKSUM, "%s: block %u at offset %llu has bad checksum",
                           what, i, (unsigned long long)b.offset);
    if (cairn__grow(a, (void **)buf, cap, b.raw_len, 1) != CAIRN_OK)
        return cairn__fail(e, CAIRN_ENOMEM, "%s: no memory for block %u", what, i);
    if (dctx == NULL && (dctx = own = ZSTD_createDCtx()) == NULL)
        return cairn__fail(e, CAIRN_ENOMEM, "%s: no memory for block %u", what, i);
    if (ddict != NULL)
        n = ZSTD_decompress_usingDDict(dctx, *buf, b.raw_len, s->data + b.offset, b.comp_len,
                                       ddict);
    else
        n = ZSTD_decompress_usingDict(dctx, *buf, b.raw_len, s->data + b.offset, b.comp_len,
                                      s->dict, s->dict_len);
    ZSTD_freeDCtx(own);
    if (ZSTD_isError(n) || n != b.raw_len)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: block %u at offset %llu does not inflate to "
                           "%u bytes", what, i, (unsigned long long)b.offset, b.raw_len);
    *raw_len = n;
    return CAIRN_OK;
}

int cairn__sealed_read_block(const sealed_seg *s, uint32_t i, const cairn_allocator *a,
                             uint8_t **buf, size_t *cap, size_t *raw_len, const char *what,
                             cairn__err *e)
{
    return cairn__sealed_read_block_with(s, i, NULL, s->ddict, a, buf, cap, raw_len, what, e);
}

int cairn__sealed_digest(sealed_seg *s, const char *what, cairn__err *e)
{
    if (s->dict_len == 0 || s->ddict != NULL)
        return CAIRN_OK;
    s->ddict = ZSTD_createDDict(s->dict, s->dict_len);
    if (s->ddict == NULL)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: the dictionary at offset %d cannot be read",
                           what, FILEHDR_SIZE + (int)SEAL_DICT_HEAD);
    return CAIRN_OK;
}

void cairn__sealed_undigest(sealed_seg *s)
{
    ZSTD_freeDDict(s->ddict);
    s->ddict = NULL;
}

uint64_t cairn__sealed_verify(const uint8_t *data, size_t size, const cairn_allocator *a,
                              const char *what, sealed_problem_fn fn, void *user)
{
    sealed_seg s;
    cairn__err e;
    uint8_t *buf = NULL;
    size_t cap = 0;
    uint64_t problems = 0;
    int rc;

    rc = cairn__sealed_open(data, size, &s, what, &e);
    if (rc != CAIRN_OK) {
        /* Point at the structure that failed: the header, else the footer or index. */
        uint64_t off = 0;
        if (cairn__filehdr_check(data, size, MAGIC_SEG, SEG_VERSION, what, NULL) == CAIRN_OK)
            off = size >= SEAL_FOOTER_SIZE ? size - SEAL_FOOTER_SIZE : 0;
        if (s.index_off >= FILEHDR_SIZE && s.index_off < size && strstr(e.msg, "index"))
            off = s.index_off;
        fn(user, off, rc, e.msg);
        return 1;
    }
    /* the dictionary digested once for every block (a damaged one: each
     * block's read reports it) */
    (void)cairn__sealed_digest(&s, what, &e);
    for (uint32_t i = 0; i < s.block_count; i++) {
        sealed_block b;
        size_t raw_len, pos = 0;
        uint64_t want;
        cairn__sealed_block(&s, i, &b);
        rc = cairn__sealed_read_block(&s, i, a, &buf, &cap, &raw_len, what, &e);
        if (rc != CAIRN_OK) {
            fn(user, b.offset, rc, e.msg);
            problems++;
            continue;
        }
        uint32_t seen = 0;
        for (want = b.first_seq; pos < raw_len; want++, seen++) {
            cairn_record rec;
            cairn__hole h;
            size_t rl;
            rec_result r = cairn__record_decode(buf + pos, raw_len - pos, s.salt, &rec, &rl);
            int hole_bad = r == REC_OK && rec.seq == want && s.version >= 2 &&
                           rec.type == CAIRN_REC_COMPACTED &&
                           cairn__hole_decode(rec.json, rec.json_len, rec.seq, &h, &e) != CAIRN_OK;
            if (r != REC_OK || rec.seq != want || rec.ts_ms < b.first_ts ||
                rec.ts_ms > b.last_ts || hole_bad) {
                char m[CAIRN_ERRMSG_MAX];
                snprintf(m, sizeof m, "%s: block %u: record %llu at inflated offset %zu: %s",
                         what, i, (unsigned long long)want, pos,
                         hole_bad       ? "invalid compaction record"
                         : r == REC_OK ? "out of sequence"
                                       : cairn__record_result_str(r));
                fn(user, b.offset, r == REC_BAD_SUM ? CAIRN_ECHECKSUM : CAIRN_ECORRUPT, m);
                problems++;
                break;
            }
            pos += rl;
            if (s.version >= 2 && rec.type == CAIRN_REC_COMPACTED)
                want = h.upto; /* the loop steps past it */
        }
        if (pos == raw_len && (want != b.last_seq + 1 || seen != b.count)) {
            fn(user, b.offset, CAIRN_ECORRUPT,
               "block holds other records than its index says (count or seqs)");
            problems++;
        }
    }
    if (problems == 0 && get_le64(data + size - 8) != XXH3_64bits(data, size - 8)) {
        fn(user, size - 8, CAIRN_ECHECKSUM, "whole-file checksum mismatch");
        problems++;
    }
    cairn__sealed_undigest(&s);
    cairn__free(a, buf);
    return problems;
}
