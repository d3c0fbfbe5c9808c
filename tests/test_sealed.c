/*
 * test_sealed.c - sealed segments (engine/log/sealed.h, format-spec/sealed.md).
 *
 * Each test gets a fresh temporary directory holding a log segment written
 * record by record with cairn__logseg_create + cairn__record_encode + pwrite,
 * scanned back with cairn__logseg_open and sealed with cairn__seal_write.
 * Expectations (record count, sequence range, raw bytes, timestamps, the
 * records inside each block) are derived from the generator that wrote the
 * log, never from the sealed file itself; checksums are recomputed here with
 * XXH3. Every parse of a damaged file runs on a heap buffer of exactly the
 * file's length, so an over-read is a heap overflow under ASan.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "alloc.h"
#include "bytes.h"
#include "cairn.h"
#include "cairn_sys.h"
#include "filehdr.h"
#include "logseg.h"
#include "record.h"
#include "sealed.h"
#include "testutil.h"

#define SEG_ID 7u
#define SALT 0x9e3779b97f4a7c15ull
#define BASE 1001u
#define CREATED 1700000000000ll
#define NREC 400u
#define BIG_K 200u          /* this record alone is bigger than a block */
#define BIG_LEN (SEAL_BLOCK_TARGET + 5000u)
#define JSON_CAP (BIG_LEN + 64u)

/* ------------------------------------------------------------------------
 * The source records: a deterministic generator.
 * ---------------------------------------------------------------------- */

static size_t gen_json(char *out, unsigned k)
{
    static const char words[] = "the agent called the tool and stored the observation ";
    size_t want = k == BIG_K ? BIG_LEN : 200u + (k * 131u) % 1300u, n;
    uint32_t x = 2463534242u ^ (k * 2654435761u);
    n = (size_t)snprintf(out, JSON_CAP, "{\"k\":%u,\"t\":\"", k);
    while (n < want - 2) {
        /* Three quarters text, one quarter noise: compressible, not trivially. */
        if (n % 4 == 3) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            out[n] = (char)('a' + x % 26);
        } else {
            out[n] = words[(n + k) % (sizeof words - 1)];
        }
        n++;
    }
    out[n++] = '"';
    out[n++] = '}';
    return n;
}

static void gen_entry(unsigned k, cairn_entry *e, char *json, uint8_t *bin)
{
    static const char *const nss[] = {"", "agent/a", "agent/bb", "tools"};
    memset(e, 0, sizeof *e);
    e->type = k % 5 == 0 ? 0x8001u : CAIRN_REC_EVENT;
    e->ns = nss[k % 4];
    e->ns_len = strlen(e->ns);
    e->json = json;
    e->json_len = gen_json(json, k);
    if (k % 6 == 5) {
        for (unsigned i = 0; i < 24; i++)
            bin[i] = (uint8_t)(k + i * 7);
        e->bin = bin;
        e->bin_len = 24;
    }
}

/* Triples share a timestamp; there is one jump in the middle. */
static int64_t gen_ts(unsigned k)
{
    return CREATED + 1 + (int64_t)(k / 3) * 7 + (k >= 300 ? 100000 : 0);
}

static size_t gen_len(unsigned k, char *json, uint8_t *bin)
{
    cairn_entry e;
    size_t len;
    gen_entry(k, &e, json, bin);
    assert_int_equal(cairn__record_size(&e, &len), CAIRN_OK);
    return len;
}

/* ------------------------------------------------------------------------
 * Fixture: a sealed segment in a fresh directory.
 * ---------------------------------------------------------------------- */

typedef struct fx {
    char *dir;
    unsigned n;          /* records in the source log */
    uint64_t raw_total;  /* sum of their encoded lengths */
    uint64_t file_size;  /* as reported by cairn__seal_write */
    uint8_t *data;       /* the .seg file, malloc'd, exactly size bytes */
    size_t size;
    char *json;
    uint8_t bin[24];
} fx;

static int open_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    return fd;
}

/* Write <SEG_ID>.log with records 0..n-1 of the generator. */
static void write_log(fx *f, unsigned n)
{
    int dfd = open_dir(f->dir);
    logseg seg;
    cairn__err e;
    f->raw_total = 0;
    assert_int_equal(cairn__logseg_create(cairn_io_default(), dfd, &seg, SEG_ID, SALT, BASE,
                                          CREATED, &e),
                     CAIRN_OK);
    for (unsigned k = 0; k < n; k++) {
        cairn_entry en;
        size_t len;
        uint8_t *buf;
        gen_entry(k, &en, f->json, f->bin);
        assert_int_equal(cairn__record_size(&en, &len), CAIRN_OK);
        buf = malloc(len);
        assert_non_null(buf);
        cairn__record_encode(buf, &en, BASE + k, gen_ts(k), SALT);
        assert_int_equal(pwrite(seg.fd, buf, len, (off_t)seg.end), (ssize_t)len);
        seg.end += len;
        f->raw_total += len;
        free(buf);
    }
    cairn__logseg_free(cairn_io_default(), NULL, &seg);
    close(dfd);
    f->n = n;
}

static char *seg_path(const fx *f, const char *ext)
{
    char name[LOGSEG_NAME_MAX + 8];
    cairn__logseg_name(name, SEG_ID, ext);
    return tu_join(f->dir, name);
}

/* Scan the log, seal it, read the .seg into f->data. */
static void seal_log(fx *f)
{
    int dfd = open_dir(f->dir);
    logseg seg;
    logseg_stop stop;
    cairn__err e;
    char *path;
    assert_int_equal(cairn__logseg_open(cairn_io_default(), NULL, dfd, &seg, SEG_ID, 1, &stop,
                                        &e),
                     CAIRN_OK);
    assert_int_equal(seg.n, f->n);
    assert_int_equal(stop.why, REC_END);
    assert_int_equal(cairn__seal_write(cairn_io_default(), NULL, dfd, &seg, NULL, 0, NULL, &f->file_size, &e),
                     CAIRN_OK);
    cairn__logseg_free(cairn_io_default(), NULL, &seg);
    close(dfd);
    path = seg_path(f, "seg");
    f->data = tu_read_file(path, &f->size);
    assert_non_null(f->data);
    free(path);
}

static fx *fx_new(unsigned n)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = tu_mkdtemp("sealed");
    assert_non_null(f->dir);
    f->json = malloc(JSON_CAP);
    assert_non_null(f->json);
    write_log(f, n);
    seal_log(f);
    return f;
}

static int setup(void **state)
{
    *state = fx_new(NREC);
    return 0;
}

static int setup_one(void **state)
{
    *state = fx_new(1);
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    if (f != NULL) {
        tu_rmrf(f->dir);
        free(f->dir);
        free(f->data);
        free(f->json);
        free(f);
    }
    return 0;
}

static uint8_t *dup_exact(const uint8_t *src, size_t len)
{
    uint8_t *p = malloc(len ? len : 1);
    assert_non_null(p);
    if (len)
        memcpy(p, src, len);
    return p;
}

static void open_ok(const fx *f, sealed_seg *s)
{
    cairn__err e;
    e.msg[0] = '\0';
    if (cairn__sealed_open(f->data, f->size, s, "t.seg", &e) != CAIRN_OK)
        fail_msg("sealed_open of the intact file failed: %s", e.msg);
}

/* Problems reported by cairn__sealed_verify. */
typedef struct problems {
    uint64_t count;
    uint64_t size;       /* of the file verified */
    int bad_offset;      /* an offset outside the file was reported */
    int bad_code;        /* a code that is not a negative status */
    uint64_t offs[16];
} problems;

static void on_problem(void *user, uint64_t offset, int code, const char *msg)
{
    problems *p = user;
    if (p->count < 16)
        p->offs[p->count] = offset;
    p->count++;
    /* Inside the file (an empty file has only offset 0 to name). */
    if (offset >= p->size && !(p->size == 0 && offset == 0))
        p->bad_offset = 1;
    if (code >= 0 || msg == NULL || msg[0] == '\0')
        p->bad_code = 1;
}

static uint64_t verify(const uint8_t *data, size_t size, problems *p)
{
    uint8_t *copy = dup_exact(data, size);
    uint64_t n;
    memset(p, 0, sizeof *p);
    p->size = size;
    n = cairn__sealed_verify(copy, size, NULL, "t.seg", on_problem, p);
    free(copy);
    assert_int_equal(n, p->count);
    assert_false(p->bad_offset);
    assert_false(p->bad_code);
    return n;
}

/* Blocks: the index read with cairn__sealed_block. */
static void read_index(const sealed_seg *s, sealed_block *b)
{
    for (uint32_t i = 0; i < s->block_count; i++)
        cairn__sealed_block(s, i, &b[i]);
}

/* ------------------------------------------------------------------------
 * Tests.
 * ---------------------------------------------------------------------- */

static void test_footer_and_header_describe_the_source_log(void **state)
{
    fx *f = *state;
    sealed_seg s;
    char *path;
    const uint8_t *foot = f->data + f->size - SEAL_FOOTER_SIZE;
    open_ok(f, &s);
    assert_int_equal(f->size, f->file_size);
    assert_int_equal(s.id, SEG_ID);
    assert_int_equal(s.salt, SALT);
    assert_int_equal(s.base_seq, BASE);
    assert_true(s.created_ms == CREATED);
    assert_int_equal(s.record_count, f->n);
    assert_int_equal(s.first_seq, BASE);
    assert_int_equal(s.last_seq, BASE + f->n - 1);
    assert_int_equal(s.raw_bytes, f->raw_total);
    /* Enough data for several blocks: the block tests below mean something. */
    assert_true(s.block_count >= 4);
    /* Header and footer as the spec lays them out. */
    assert_memory_equal(f->data, MAGIC_SEG, 8);
    assert_int_equal(get_le64(f->data + FILEHDR_OFF_SUM), XXH3_64bits(f->data, FILEHDR_OFF_SUM));
    assert_memory_equal(foot, MAGIC_END, 8);
    assert_int_equal(get_le64(foot + 8), s.index_off);
    assert_int_equal(s.index_off + (uint64_t)s.block_count * SEAL_INDEX_ENTRY,
                     f->size - SEAL_FOOTER_SIZE);
    assert_int_equal(get_le64(foot + 56),
                     XXH3_64bits(f->data + s.index_off, s.block_count * SEAL_INDEX_ENTRY));
    assert_int_equal(get_le64(foot + 64), XXH3_64bits(foot, 64));
    assert_int_equal(get_le64(foot + 72), XXH3_64bits(f->data, f->size - 8));
    /* Compression happened. */
    assert_true(f->size < f->raw_total);
    /* The temp file is gone; the source log is left for the store to remove. */
    path = seg_path(f, "seg.tmp");
    assert_int_equal(access(path, F_OK), -1);
    free(path);
    path = seg_path(f, "log");
    assert_int_equal(access(path, F_OK), 0);
    free(path);
}

static void test_block_index_partitions_the_records(void **state)
{
    fx *f = *state;
    sealed_seg s;
    sealed_block *b;
    uint64_t pos, seq = BASE, raw = 0;
    int saw_single_big = 0;
    open_ok(f, &s);
    /* version 3: block 0 follows the dictionary section */
    assert_int_equal(s.version, 3);
    pos = FILEHDR_SIZE + SEAL_DICT_HEAD + s.dict_len;
    b = calloc(s.block_count, sizeof *b);
    assert_non_null(b);
    read_index(&s, b);
    for (uint32_t i = 0; i < s.block_count; i++) {
        uint64_t block_raw = 0;
        assert_int_equal(b[i].offset, pos);
        assert_true(b[i].comp_len > 0);
        assert_int_equal(b[i].first_seq, seq);
        assert_true(b[i].last_seq >= b[i].first_seq);
        assert_int_equal(b[i].count, b[i].last_seq - b[i].first_seq + 1);
        assert_true(b[i].first_ts == gen_ts((unsigned)(b[i].first_seq - BASE)));
        assert_true(b[i].last_ts == gen_ts((unsigned)(b[i].last_seq - BASE)));
        assert_int_equal(b[i].sum, XXH3_64bits(f->data + b[i].offset, b[i].comp_len));
        for (uint64_t q = b[i].first_seq; q <= b[i].last_seq; q++)
            block_raw += gen_len((unsigned)(q - BASE), f->json, f->bin);
        assert_int_equal(b[i].raw_len, block_raw);
        /* A block stays under the target unless one record alone is bigger. */
        assert_true(b[i].raw_len <= cairn__seal_block_target(s.dict_len) || b[i].count == 1);
        if (b[i].first_seq == BASE + BIG_K) {
            assert_int_equal(b[i].count, 1);
            saw_single_big = 1;
        }
        pos += b[i].comp_len;
        seq = b[i].last_seq + 1;
        raw += b[i].raw_len;
    }
    assert_true(saw_single_big);
    assert_int_equal(pos, s.index_off);
    assert_int_equal(seq, BASE + f->n);
    assert_int_equal(raw, f->raw_total);
    free(b);
}

static void count_problem(void *user, uint64_t off, int code, const char *msg)
{
    (void)off, (void)code, (void)msg;
    (*(int *)user)++;
}

/* A segment of some size is sealed with a dictionary trained on its own
 * records, in small blocks; one of a single record without, in large ones. */
static void test_a_segment_of_some_size_gets_a_dictionary(void **state)
{
    fx *f = *state, *one = fx_new(1);
    sealed_seg s;
    assert_true(f->raw_total >= SEAL_DICT_MIN_RAW);
    open_ok(f, &s);
    assert_true(s.dict_len > 0 && s.dict_len <= SEAL_DICT_TRAIN);
    assert_true(s.dict == f->data + FILEHDR_SIZE + SEAL_DICT_HEAD);
    assert_int_equal(get_le32(s.dict), 0xEC30A437u); /* zstd's dictionary magic */
    for (uint32_t i = 0; i < s.block_count; i++) {
        sealed_block b;
        cairn__sealed_block(&s, i, &b);
        assert_true(b.raw_len <= SEAL_DICT_BLOCK_TARGET || b.count == 1);
    }
    assert_true(s.block_count > f->raw_total / SEAL_BLOCK_TARGET + 1);
    open_ok(one, &s);
    assert_int_equal(s.version, 3);
    assert_int_equal(s.dict_len, 0);
    assert_null(s.dict);
    teardown((void **)&one);
}

/* The digested dictionary and a caller's context read the same bytes as a
 * read that makes its own. */
static void test_reads_with_the_digest_and_without_agree(void **state)
{
    fx *f = *state;
    sealed_seg s;
    cairn__err e;
    uint8_t *a = NULL, *b = NULL;
    size_t ca = 0, cb = 0, la, lb;
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    assert_non_null(dctx);
    open_ok(f, &s);
    assert_int_equal(cairn__sealed_digest(&s, "t.seg", &e), CAIRN_OK);
    assert_non_null(s.ddict);
    for (uint32_t i = 0; i < s.block_count; i++) {
        sealed_seg plain = s;
        plain.ddict = NULL;
        assert_int_equal(cairn__sealed_read_block_with(&s, i, dctx, s.ddict, NULL, &a, &ca, &la,
                                                       "t.seg", &e),
                         CAIRN_OK);
        assert_int_equal(cairn__sealed_read_block(&plain, i, NULL, &b, &cb, &lb, "t.seg", &e),
                         CAIRN_OK);
        assert_int_equal(la, lb);
        assert_memory_equal(a, b, la);
    }
    cairn__sealed_undigest(&s);
    assert_null(s.ddict);
    ZSTD_freeDCtx(dctx);
    free(a);
    free(b);
}

/* A byte of the dictionary changed: the open refuses the file by its sum;
 * with the sum made to match, the frames no longer give their records,
 * and verify says so. */
static void test_a_damaged_dictionary_is_found(void **state)
{
    fx *f = *state;
    sealed_seg s;
    cairn__err e;
    size_t at;
    uint8_t *d;
    int n = 0;
    open_ok(f, &s);
    at = FILEHDR_SIZE + SEAL_DICT_HEAD + s.dict_len - 100; /* in its content */
    d = dup_exact(f->data, f->size);
    d[at] ^= 0x5a;
    assert_int_equal(cairn__sealed_open(d, f->size, &s, "t.seg", &e), CAIRN_ECHECKSUM);
    assert_non_null(strstr(e.msg, "dictionary"));
    put_le64(d + FILEHDR_SIZE + 8, XXH3_64bits(d + FILEHDR_SIZE + SEAL_DICT_HEAD, s.dict_len));
    assert_int_equal(cairn__sealed_open(d, f->size, &s, "t.seg", &e), CAIRN_OK);
    assert_true(cairn__sealed_verify(d, f->size, NULL, "t.seg", count_problem, &n) > 0);
    assert_true(n > 0);
    free(d);
}

static void test_find_seq_returns_the_block_holding_each_seq(void **state)
{
    fx *f = *state;
    sealed_seg s;
    sealed_block b;
    open_ok(f, &s);
    for (uint64_t q = BASE; q < BASE + f->n; q++) {
        uint32_t i = cairn__sealed_find_seq(&s, q);
        assert_true(i < s.block_count);
        cairn__sealed_block(&s, i, &b);
        if (q < b.first_seq || q > b.last_seq)
            fail_msg("find_seq(%llu) gave block %u holding %llu..%llu", (unsigned long long)q,
                     i, (unsigned long long)b.first_seq, (unsigned long long)b.last_seq);
    }
    assert_int_equal(cairn__sealed_find_seq(&s, 0), s.block_count);
    assert_int_equal(cairn__sealed_find_seq(&s, BASE - 1), s.block_count);
    assert_int_equal(cairn__sealed_find_seq(&s, BASE + f->n), s.block_count);
    assert_int_equal(cairn__sealed_find_seq(&s, UINT64_MAX), s.block_count);
}

static void test_find_ts_returns_the_first_block_reaching_ts(void **state)
{
    fx *f = *state;
    sealed_seg s;
    sealed_block *b;
    open_ok(f, &s);
    b = calloc(s.block_count, sizeof *b);
    assert_non_null(b);
    read_index(&s, b);
    for (unsigned k = 0; k <= f->n; k++) {
        /* Probe each record's timestamp and its neighbours, plus the far ends. */
        int64_t base_t = k < f->n ? gen_ts(k) : gen_ts(f->n - 1) + 1;
        for (int d = -1; d <= 1; d++) {
            int64_t t = base_t + d;
            uint32_t want = s.block_count;
            uint64_t first = 0;
            /* The first record (by seq) with ts >= t; its block is the answer. */
            for (unsigned j = 0; j < f->n; j++)
                if (gen_ts(j) >= t) {
                    first = BASE + j;
                    break;
                }
            if (first != 0)
                for (uint32_t i = 0; i < s.block_count; i++)
                    if (first >= b[i].first_seq && first <= b[i].last_seq)
                        want = i;
            if (cairn__sealed_find_ts(&s, t) != want)
                fail_msg("find_ts(%lld) = %u, expected %u", (long long)t,
                         cairn__sealed_find_ts(&s, t), want);
        }
    }
    assert_int_equal(cairn__sealed_find_ts(&s, INT64_MIN), 0);
    assert_int_equal(cairn__sealed_find_ts(&s, INT64_MAX), s.block_count);
    free(b);
}

static void test_read_block_yields_the_source_records_in_order(void **state)
{
    fx *f = *state;
    sealed_seg s;
    uint8_t *buf = NULL;
    size_t cap = 0;
    uint64_t want = BASE;
    cairn__err e;
    open_ok(f, &s);
    for (uint32_t i = 0; i < s.block_count; i++) {
        sealed_block b;
        size_t raw_len = 0, pos = 0;
        cairn__sealed_block(&s, i, &b);
        assert_int_equal(cairn__sealed_read_block(&s, i, NULL, &buf, &cap, &raw_len, "t.seg",
                                                  &e),
                         CAIRN_OK);
        assert_int_equal(raw_len, b.raw_len);
        assert_true(cap >= raw_len);
        while (pos < raw_len) {
            cairn_record r;
            cairn_entry en;
            size_t rl;
            unsigned k = (unsigned)(want - BASE);
            assert_int_equal(cairn__record_decode(buf + pos, raw_len - pos, SALT, &r, &rl),
                             REC_OK);
            gen_entry(k, &en, f->json, f->bin);
            assert_int_equal(r.seq, want);
            assert_true(r.ts_ms == gen_ts(k));
            assert_int_equal(r.type, en.type);
            assert_int_equal(r.ns_len, en.ns_len);
            assert_memory_equal(r.ns, en.ns, en.ns_len);
            assert_int_equal(r.json_len, en.json_len);
            assert_memory_equal(r.json, en.json, en.json_len);
            assert_int_equal(r.bin_len, en.bin_len);
            if (en.bin_len)
                assert_memory_equal(r.bin, en.bin, en.bin_len);
            pos += rl;
            want++;
        }
        /* Records never span two blocks. */
        assert_int_equal(pos, raw_len);
        assert_int_equal(want, b.last_seq + 1);
    }
    assert_int_equal(want, BASE + f->n);
    cairn__free(NULL, buf);
}

static void test_verify_passes_an_intact_file(void **state)
{
    fx *f = *state;
    problems p;
    assert_int_equal(verify(f->data, f->size, &p), 0);
}

/* Flip one byte at off on a fresh copy; check verify and open. */
static void flip_and_check(const fx *f, size_t off, int open_must_fail)
{
    uint8_t *copy = dup_exact(f->data, f->size);
    problems p;
    sealed_seg s;
    cairn__err e;
    int rc;
    copy[off] ^= 0x20;
    if (verify(copy, f->size, &p) == 0)
        fail_msg("byte %zu of %zu flipped: verify found nothing", off, f->size);
    rc = cairn__sealed_open(copy, f->size, &s, "t.seg", &e);
    if (open_must_fail && rc == CAIRN_OK)
        fail_msg("byte %zu flipped: sealed_open accepted the file", off);
    if (rc != CAIRN_OK)
        assert_true(rc == CAIRN_ECORRUPT || rc == CAIRN_ECHECKSUM);
    free(copy);
}

static void test_verify_finds_a_flipped_byte_in_each_region(void **state)
{
    fx *f = *state;
    sealed_seg s;
    sealed_block b;
    size_t foot = f->size - SEAL_FOOTER_SIZE;
    static const size_t hdr_offs[] = {0, 8, 10, 12, 16, 24, 32, 40, 48, 56, 63};
    static const size_t foot_offs[] = {0, 8, 16, 20, 24, 32, 40, 48, 56, 64, 71};
    open_ok(f, &s);
    for (size_t i = 0; i < sizeof hdr_offs / sizeof hdr_offs[0]; i++)
        flip_and_check(f, hdr_offs[i], 1);
    for (size_t i = 0; i < sizeof foot_offs / sizeof foot_offs[0]; i++)
        flip_and_check(f, foot + foot_offs[i], 1);
    /* The whole-file checksum is only verify's business. */
    flip_and_check(f, f->size - 8, 0);
    flip_and_check(f, f->size - 1, 0);
    /* Every field of the first and last index entries. */
    for (size_t j = 0; j < SEAL_INDEX_ENTRY; j += 4) {
        flip_and_check(f, s.index_off + j, 1);
        flip_and_check(f, foot - SEAL_INDEX_ENTRY + j, 1);
    }
    /* A block: first, middle and last byte of the first, a middle and the last block. */
    for (uint32_t i = 0; i < s.block_count; i += s.block_count / 2 ? s.block_count / 2 : 1) {
        cairn__sealed_block(&s, i, &b);
        flip_and_check(f, b.offset, 0);
        flip_and_check(f, b.offset + b.comp_len / 2, 0);
        flip_and_check(f, b.offset + b.comp_len - 1, 0);
    }
    cairn__sealed_block(&s, s.block_count - 1, &b);
    flip_and_check(f, b.offset + b.comp_len / 3, 0);
}

static void test_a_flipped_block_costs_only_that_block(void **state)
{
    fx *f = *state;
    uint8_t *copy = dup_exact(f->data, f->size), *buf = NULL;
    size_t cap = 0, raw_len;
    sealed_seg s;
    sealed_block bad;
    problems p;
    cairn__err e;
    uint32_t victim;
    open_ok(f, &s);
    victim = s.block_count / 2;
    cairn__sealed_block(&s, victim, &bad);
    copy[bad.offset + bad.comp_len / 2] ^= 0x01;
    /* The index does not cover block bytes: open still succeeds. */
    assert_int_equal(cairn__sealed_open(copy, f->size, &s, "t.seg", &e), CAIRN_OK);
    for (uint32_t i = 0; i < s.block_count; i++) {
        int rc = cairn__sealed_read_block(&s, i, NULL, &buf, &cap, &raw_len, "t.seg", &e);
        if (i == victim) {
            assert_int_equal(rc, CAIRN_ECHECKSUM);
            assert_non_null(strstr(e.msg, "t.seg"));
        } else {
            assert_int_equal(rc, CAIRN_OK);
        }
    }
    /* verify names the damaged block by its offset. */
    assert_true(verify(copy, f->size, &p) >= 1);
    {
        int found = 0;
        for (uint64_t i = 0; i < p.count && i < 16; i++)
            if (p.offs[i] == bad.offset)
                found = 1;
        assert_true(found);
    }
    cairn__free(NULL, buf);
    free(copy);
}

static void test_verify_finds_flips_across_the_whole_file(void **state)
{
    fx *f = *state;
    /* A stride prime to everything in the layout, covering each region. */
    size_t stride = f->size / 400 + 1;
    stride |= 1;
    for (size_t off = 0; off < f->size; off += stride)
        flip_and_check(f, off, 0);
}

static void test_open_rejects_every_truncation(void **state)
{
    fx *f = *state;
    size_t from = f->size > 200 ? f->size - 200 : 0;
    for (size_t cut = 0; cut < f->size; cut++) {
        uint8_t *copy;
        sealed_seg s;
        cairn__err e;
        problems p;
        int rc;
        /* Every cut of the last 200 bytes, the first 200, and a sample between. */
        if (cut >= 200 && cut < from && cut % 811 != 0)
            continue;
        copy = dup_exact(f->data, cut);
        rc = cairn__sealed_open(copy, cut, &s, "t.seg", &e);
        if (rc == CAIRN_OK)
            fail_msg("truncated to %zu of %zu bytes: sealed_open accepted it", cut, f->size);
        assert_true(rc == CAIRN_ECORRUPT || rc == CAIRN_ECHECKSUM);
        free(copy);
        if (cut >= from || cut < 200)
            assert_true(verify(f->data, cut, &p) > 0);
    }
}

static void test_open_rejects_trailing_garbage(void **state)
{
    fx *f = *state;
    uint8_t *big = malloc(f->size + 80);
    sealed_seg s;
    cairn__err e;
    assert_non_null(big);
    memcpy(big, f->data, f->size);
    memset(big + f->size, 0, 80);
    for (size_t extra = 1; extra <= 80; extra += 79) {
        uint8_t *copy = dup_exact(big, f->size + extra);
        assert_int_not_equal(cairn__sealed_open(copy, f->size + extra, &s, "t.seg", &e),
                             CAIRN_OK);
        free(copy);
    }
    /* The footer repeated at the end does not fool it either. */
    memcpy(big + f->size, f->data + f->size - SEAL_FOOTER_SIZE, SEAL_FOOTER_SIZE);
    assert_int_not_equal(cairn__sealed_open(big, f->size + SEAL_FOOTER_SIZE, &s, "t.seg", &e),
                         CAIRN_OK);
    free(big);
}

static void test_seal_of_a_single_record_makes_one_block(void **state)
{
    fx *f = *state;
    sealed_seg s;
    sealed_block b;
    problems p;
    open_ok(f, &s);
    assert_int_equal(s.block_count, 1);
    assert_int_equal(s.record_count, 1);
    assert_int_equal(s.first_seq, BASE);
    assert_int_equal(s.last_seq, BASE);
    assert_int_equal(s.raw_bytes, f->raw_total);
    cairn__sealed_block(&s, 0, &b);
    assert_int_equal(b.count, 1);
    assert_int_equal(cairn__sealed_find_seq(&s, BASE), 0);
    assert_int_equal(cairn__sealed_find_seq(&s, BASE + 1), 1);
    assert_int_equal(verify(f->data, f->size, &p), 0);
}

static int reseal(fx *f, int parallel, int damage, unsigned damage_k, uint8_t **out,
                  size_t *len);

/* Neither a sealed file nor its temp file is in f->dir. */
static void no_sealed_file(fx *f)
{
    char *path = seg_path(f, "seg");
    assert_int_equal(access(path, F_OK), -1);
    free(path);
    path = seg_path(f, "seg.tmp");
    assert_int_equal(access(path, F_OK), -1);
    free(path);
}

static void test_seal_refuses_a_log_that_rotted_after_its_scan(void **state)
{
    fx *f = *state;
    uint8_t *data = NULL;
    size_t len = 0;
    /* Start over without the .seg, scan the log, then damage record 10:
     * refused, and neither a sealed file nor its temp file left behind. */
    assert_int_equal(reseal(f, 0, 1, 10, &data, &len), CAIRN_ECHECKSUM);
    assert_null(data);
    no_sealed_file(f);
}

/* A close that starts waiting for a seal under way: the sealer's reads
 * go through this io, which sets `hurry` at the hurry_at-th block read
 * (0: never). */
static int hurry, read_elsewhere; /* read_elsewhere: a block read on another thread */
static unsigned hurry_at, seal_reads;
static pthread_t sealing_thread;

static ssize_t counting_pread(void *user, const char *site, int fd, void *buf, size_t len,
                              off_t off)
{
    const cairn_io *d = cairn_io_default();
    (void)user;
    if (strcmp(site, "seal.read") == 0 && hurry_at != 0) {
        if (__atomic_add_fetch(&seal_reads, 1, __ATOMIC_RELAXED) == hurry_at)
            __atomic_store_n(&hurry, 1, __ATOMIC_RELAXED);
        if (!pthread_equal(pthread_self(), sealing_thread))
            __atomic_store_n(&read_elsewhere, 1, __ATOMIC_RELAXED);
    }
    return d->pread(d->user, site, fd, buf, len, off);
}

static int reseal(fx *f, int parallel, int damage, unsigned damage_k, uint8_t **out, size_t *len);

/* The same with hurry set at the hurry_at-th block read. */
static int reseal_hurried(fx *f, unsigned at, int damage, unsigned damage_k, uint8_t **out,
                          size_t *len)
{
    int rc;
    hurry = read_elsewhere = 0;
    seal_reads = 0;
    hurry_at = at;
    sealing_thread = pthread_self();
    rc = reseal(f, 1, damage, damage_k, out, len);
    hurry_at = 0;
    return rc;
}

/* Scan the log again and seal it with `parallel` (a .seg already there is
 * removed first); with damage, record damage_k's byte 40 is flipped after
 * the scan (a log that rots under a seal). The status, and the file's bytes
 * in *out on success. */
static int reseal(fx *f, int parallel, int damage, unsigned damage_k, uint8_t **out, size_t *len)
{
    cairn_io io = *cairn_io_default();
    int dfd = open_dir(f->dir), rc;
    logseg seg;
    logseg_stop stop;
    cairn__err e;
    uint64_t fsize = 0;
    char *path = seg_path(f, "seg");
    (void)unlink(path);
    assert_int_equal(cairn__logseg_open(cairn_io_default(), NULL, dfd, &seg, SEG_ID, 1, &stop,
                                        &e),
                     CAIRN_OK);
    assert_int_equal(seg.n, f->n);
    if (damage) {
        char *log = seg_path(f, "log");
        uint8_t byte;
        int fd = open(log, O_RDWR);
        assert_true(fd >= 0);
        assert_int_equal(pread(fd, &byte, 1, (off_t)seg.off[damage_k] + 40), 1);
        byte ^= 0xff;
        assert_int_equal(pwrite(fd, &byte, 1, (off_t)seg.off[damage_k] + 40), 1);
        close(fd);
        free(log);
    }
    io.pread = counting_pread;
    rc = cairn__seal_write(&io, NULL, dfd, &seg, NULL, parallel, hurry_at ? &hurry : NULL, &fsize,
                           &e);
    cairn__logseg_free(cairn_io_default(), NULL, &seg);
    close(dfd);
    *out = rc == CAIRN_OK ? tu_read_file(path, len) : NULL;
    free(path);
    return rc;
}

/* A seal a caller waits for (parallel 2: a close's) reads, checks and
 * compresses the second half of its blocks on a thread of its own: the
 * file is the one a single thread writes, byte for byte. A record that
 * rotted in that half after the scan fails the seal as it does otherwise,
 * and leaves no file. */
static void test_a_seal_split_over_two_threads_writes_the_same_bytes(void **state)
{
    fx *f = fx_new(40000);
    uint8_t *split = NULL;
    size_t len = 0;
    (void)state;

    assert_true(f->raw_total >= (4u << 20)); /* past SEAL_SPLIT_MIN: it splits */
    assert_int_equal(reseal(f, 2, 0, 0, &split, &len), CAIRN_OK);
    assert_non_null(split);
    assert_int_equal(len, f->size);
    assert_memory_equal(split, f->data, len);
    free(split);
    assert_int_equal(reseal(f, 2, 1, 30000, &split, &len), CAIRN_ECHECKSUM);
    assert_null(split);
    no_sealed_file(f);
    teardown((void **)&f);
}

/* A seal asked to hurry part way (a close waits for the sealer) splits
 * the blocks it has left over two threads from there: the same file, byte
 * for byte, wherever the ask comes; a rot in the part split off fails it
 * and leaves no file. */
static void test_a_seal_asked_to_hurry_splits_what_is_left(void **state)
{
    fx *f = fx_new(40000);
    uint8_t *out = NULL;
    size_t len = 0;
    unsigned reads, at[3];
    (void)state;

    /* Never asked: one thread reads every block. */
    assert_int_equal(reseal_hurried(f, UINT_MAX, 0, 0, &out, &len), CAIRN_OK);
    assert_int_equal(hurry, 0);
    assert_int_equal(read_elsewhere, 0);
    assert_memory_equal(out, f->data, len);
    free(out);
    reads = seal_reads;
    /* Asked at the 2nd read (the dictionary's samples, before the first
     * block), half way, and 20 blocks before the end (too little left to
     * split, as a seal of less than 4 MiB is not). */
    at[0] = 2;
    at[1] = reads / 2;
    at[2] = reads - 20;
    assert_true(f->raw_total >= (8u << 20));
    for (size_t k = 0; k < 3; k++) {
        assert_int_equal(reseal_hurried(f, at[k], 0, 0, &out, &len), CAIRN_OK);
        assert_int_equal(hurry, 1); /* it was asked before the end */
        assert_int_equal(read_elsewhere, k < 2);
        assert_non_null(out);
        assert_int_equal(len, f->size);
        assert_memory_equal(out, f->data, len);
        free(out);
    }
    assert_int_equal(reseal_hurried(f, at[1], 1, 39000, &out, &len), CAIRN_ECHECKSUM);
    assert_null(out);
    no_sealed_file(f);
    teardown((void **)&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_footer_and_header_describe_the_source_log, setup,
                                        teardown),
        cmocka_unit_test(test_a_seal_split_over_two_threads_writes_the_same_bytes),
        cmocka_unit_test(test_a_seal_asked_to_hurry_splits_what_is_left),
        cmocka_unit_test_setup_teardown(test_block_index_partitions_the_records, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_segment_of_some_size_gets_a_dictionary, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reads_with_the_digest_and_without_agree, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_damaged_dictionary_is_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_find_seq_returns_the_block_holding_each_seq, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_find_ts_returns_the_first_block_reaching_ts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_read_block_yields_the_source_records_in_order,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_passes_an_intact_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_finds_a_flipped_byte_in_each_region, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_flipped_block_costs_only_that_block, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_verify_finds_flips_across_the_whole_file, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_open_rejects_every_truncation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_rejects_trailing_garbage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seal_of_a_single_record_makes_one_block, setup_one,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_seal_refuses_a_log_that_rotted_after_its_scan,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
