/*
 * gen_corpus.c - writes the seed corpora of the fuzz targets with the
 * engine's own encoders, so every valid seed is exactly what the engine
 * writes. Not part of the build or of `make test`; run by hand (fuzz/README.md):
 *
 *   make lib
 *   cc -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
 *      -Iengine/include -Iengine/common -Iengine/log -Iengine/memory \
 *      fuzz/gen_corpus.c build/libcairn.a -lzstd -lxxhash -pthread -o build/gen_corpus
 *   build/gen_corpus fuzz/corpora tests/golden
 *
 * Writes <out>/{record,manifest,logseg,sealed,access}/seed-*: valid inputs, and a
 * few hand-mangled ones (truncated, flipped, bad fields under a repaired
 * checksum) so the error paths are in the corpus from the start. If a golden
 * directory is given, its files are copied in as golden-* seeds. Seeds are
 * fixed: no clock, no randomness, so a rerun gives the same bytes (except
 * the sealed seeds if the zstd version changes).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "accfile.h"
#include "bytes.h"
#include "cairn.h"
#include "cairn_sys.h"
#include "filehdr.h"
#include "logseg.h"
#include "manifest.h"
#include "record.h"
#include "sealed.h"

#define REC_SALT 0x0123456789abcdefull /* FUZZ_RECORD_SALT in fuzz.h */
#define SEG_SALT 0x5eed0fca1a5a17edull
#define T0 1700000000000ll

static const char *outdir;

static void die(const char *what)
{
    fprintf(stderr, "gen_corpus: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* A growable byte buffer. */
typedef struct bytes {
    uint8_t *p;
    size_t n, cap;
} bytes;

static void b_put(bytes *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        if (b->p == NULL)
            die("realloc");
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void write_seed(const char *target, const char *name, const uint8_t *p, size_t n)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", outdir, target);
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        die(path);
    snprintf(path, sizeof path, "%s/%s/%s", outdir, target, name);
    f = fopen(path, "wb");
    if (f == NULL || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0)
        die(path);
}

/* Write a copy of p[0..n) with byte `at` XORed with `x` (at < n). */
static void write_flipped(const char *target, const char *name, const uint8_t *p, size_t n,
                          size_t at, uint8_t x)
{
    uint8_t *c = malloc(n ? n : 1);
    if (c == NULL)
        die("malloc");
    memcpy(c, p, n);
    if (at < n)
        c[at] ^= x;
    write_seed(target, name, c, n);
    free(c);
}

static uint8_t *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    bytes b = {0};
    uint8_t chunk[4096];
    size_t got;

    if (f == NULL)
        return NULL;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        b_put(&b, chunk, got);
    fclose(f);
    *n = b.n;
    if (b.p == NULL)
        b.p = malloc(1);
    return b.p;
}

/* ---- records ---------------------------------------------------------- */

static const float vec[4] = {1.0f, -0.5f, 0.25f, 2.0f};

/* The k-th sample entry: a spread of types, namespaces, payloads, trailers. */
static void sample_entry(unsigned k, cairn_entry *e, char *json, size_t cap)
{
    static const char *const nss[] = {"agent/alpha", "", "agent/beta/tools", "n"};
    memset(e, 0, sizeof *e);
    e->type = k % 5 == 4 ? 0x8001u : CAIRN_REC_EVENT;
    e->ns = nss[k % 4];
    e->ns_len = strlen(e->ns);
    e->json = json;
    e->json_len = (size_t)snprintf(json, cap, "{\"k\":%u,\"msg\":\"event %u\",\"tags\":[\"t%u\"]}",
                                   k, k, k % 3);
    if (k % 3 == 2) {
        e->bin = vec;
        e->bin_len = sizeof vec;
    }
}

static void put_record(bytes *b, const cairn_entry *e, uint64_t seq, int64_t ts, uint64_t salt)
{
    size_t len;
    uint8_t *buf;
    if (cairn__record_size(e, &len) != CAIRN_OK)
        die("record_size");
    buf = malloc(len);
    if (buf == NULL)
        die("malloc");
    cairn__record_encode(buf, e, seq, ts, salt);
    b_put(b, buf, len);
    free(buf);
}

/* Records k0..k0+n-1 with sequence numbers from seq, non-decreasing times. */
static void put_records(bytes *b, unsigned k0, unsigned n, uint64_t seq, uint64_t salt)
{
    char json[128];
    for (unsigned k = k0; k < k0 + n; k++) {
        cairn_entry e;
        sample_entry(k, &e, json, sizeof json);
        put_record(b, &e, seq + (k - k0), T0 + (int64_t)(k / 2) * 10, salt);
    }
}

/* Recompute the checksum of the record at p (after a field was edited). */
static void reseal_record(uint8_t *p, uint64_t salt)
{
    uint32_t len = get_le32(p);
    put_le64(p + len - REC_TRAILER_SIZE, XXH3_64bits_withSeed(p, len - REC_TRAILER_SIZE, salt));
}

static void gen_record(void)
{
    const char *T = "record";
    bytes b = {0};
    char ns[CAIRN_NS_MAX + 1], big[3000];
    cairn_entry e;
    size_t first;

    memset(&e, 0, sizeof e);
    e.type = CAIRN_REC_EVENT;
    put_record(&b, &e, 1, 0, REC_SALT); /* the smallest record: 40 bytes */
    write_seed(T, "seed-minimal", b.p, b.n);

    for (unsigned k = 0; k < 4; k++) {
        char json[128], name[32];
        b.n = 0;
        sample_entry(k, &e, json, sizeof json);
        put_record(&b, &e, 100 + k, T0 + k, REC_SALT);
        snprintf(name, sizeof name, "seed-one-%u", k);
        write_seed(T, name, b.p, b.n);
    }

    b.n = 0;
    memset(ns, 'n', sizeof ns);
    memset(big, 'j', sizeof big);
    big[0] = '"';
    big[sizeof big - 1] = '"';
    e.type = 0xffffu;
    e.ns = ns;
    e.ns_len = CAIRN_NS_MAX;
    e.json = big;
    e.json_len = sizeof big;
    e.bin = vec;
    e.bin_len = sizeof vec;
    put_record(&b, &e, UINT64_MAX, INT64_MIN, REC_SALT); /* extremes of every field */
    write_seed(T, "seed-extremes", b.p, b.n);

    b.n = 0;
    put_records(&b, 0, 6, 1, REC_SALT);
    write_seed(T, "seed-six", b.p, b.n);
    first = get_le32(b.p);
    write_seed(T, "bad-truncated", b.p, b.n - 5);              /* torn last record */
    write_flipped(T, "bad-flip-sum", b.p, b.n, first + 50, 0x10); /* 2nd record: checksum */
    write_flipped(T, "bad-flip-epoch", b.p, b.n, first + 4, 1); /* 2nd record: stale epoch */
    write_flipped(T, "bad-len-small", b.p, b.n, first, 0x3f);   /* 2nd record: len < 40 */
    {
        uint8_t *c = malloc(b.n + 6);
        memcpy(c, b.p, b.n);
        memset(c + b.n, 0, 4);                        /* a zero length: clean end */
        write_seed(T, "seed-zero-tail", c, b.n + 4);
        c[b.n] = 0xab;                                /* then 2 stray bytes: torn length */
        write_seed(T, "bad-stray", c, b.n + 2);
        put_le32(c + first, 0xffffffffu);             /* length far past the maximum */
        write_seed(T, "bad-len-huge", c, b.n);
        free(c);
    }
    /* Field errors behind a valid checksum. */
    b.n = 0;
    put_records(&b, 0, 1, 7, REC_SALT);
    put_le32(b.p + REC_OFF_JSONLEN, 0xfffffff0u);
    reseal_record(b.p, REC_SALT);
    write_seed(T, "bad-json-len", b.p, b.n);
    b.n = 0;
    put_records(&b, 0, 1, 7, REC_SALT);
    put_le16(b.p + REC_OFF_TYPE, 0);
    reseal_record(b.p, REC_SALT);
    write_seed(T, "bad-type-0", b.p, b.n);
    b.n = 0;
    put_records(&b, 0, 1, 7, REC_SALT);
    put_le64(b.p + REC_OFF_SEQ, 0);
    reseal_record(b.p, REC_SALT);
    write_seed(T, "bad-seq-0", b.p, b.n);
    b.n = 0;
    put_records(&b, 0, 1, 7, REC_SALT);
    put_le16(b.p + REC_OFF_NSLEN, 300);
    reseal_record(b.p, REC_SALT);
    write_seed(T, "bad-ns-len", b.p, b.n);
    free(b.p);
}

/* ---- manifests -------------------------------------------------------- */

#define STORE_ID 0x5c, 0x1a, 0x7e, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0xd0

static void gen_manifest(void)
{
    const char *T = "manifest";
    manifest_entry es[3] = {
        {3, SEG_SEALED, 1, 120, 120, T0, T0 + 999},
        {5, SEG_CLOSED, 121, 130, 10, T0 + 1000, T0 + 1000},
        {6, SEG_ACTIVE, 131, 0, 0, 0, 0},
    };
    manifest m = {.generation = 7, .next_id = 7, .segment_size = 64u << 20, .batch_ms = 50,
                  .durability = CAIRN_DURABILITY_BATCH, .store_id = {STORE_ID},
                  .synced_seq = 120, .max_memories = 10000};
    uint8_t *out;
    size_t len;

    /* One entry: a new store (only the active segment), no memory limit. */
    {
        manifest_entry one = {1, SEG_ACTIVE, 1, 0, 0, 0, 0};
        manifest m1 = {.generation = 1, .next_id = 2, .segment_size = 4096, .batch_ms = 0,
                       .durability = CAIRN_DURABILITY_NONE, .store_id = {STORE_ID}, .e = &one,
                       .n = 1};
        if (cairn__manifest_encode(&m1, NULL, &out, &len) != CAIRN_OK)
            die("manifest_encode");
        write_seed(T, "seed-1-entry", out, len);
        free(out);
    }
    /* Two entries: an empty closed segment, then the active one. */
    {
        manifest_entry two[2] = {{2, SEG_CLOSED, 1, 0, 0, 0, 0}, {4, SEG_ACTIVE, 1, 0, 0, 0, 0}};
        manifest m2 = {.generation = 3, .next_id = 9, .segment_size = 1ull << 32,
                       .batch_ms = 1000, .durability = CAIRN_DURABILITY_FULL,
                       .store_id = {STORE_ID}, .max_memories = 1, .e = two, .n = 2};
        if (cairn__manifest_encode(&m2, NULL, &out, &len) != CAIRN_OK)
            die("manifest_encode");
        write_seed(T, "seed-2-entries", out, len);
        free(out);
    }
    /* Three: sealed, closed, active. */
    m.e = es;
    m.n = 3;
    if (cairn__manifest_encode(&m, NULL, &out, &len) != CAIRN_OK)
        die("manifest_encode");
    write_seed(T, "seed-3-entries", out, len);
    write_seed(T, "bad-truncated", out, len - 9);
    write_flipped(T, "bad-flip-trailer", out, len, len - 1, 0x80);
    write_flipped(T, "bad-flip-header", out, len, 20, 0x01);
    free(out);
    /* Rule violations behind valid checksums (encode computes them). */
    es[1].kind = 9;
    if (cairn__manifest_encode(&m, NULL, &out, &len) != CAIRN_OK)
        die("manifest_encode");
    write_seed(T, "bad-kind", out, len);
    free(out);
    es[1].kind = SEG_CLOSED;
    es[1].base_seq = 125; /* gap after entry 0 */
    if (cairn__manifest_encode(&m, NULL, &out, &len) != CAIRN_OK)
        die("manifest_encode");
    write_seed(T, "bad-seq-gap", out, len);
    free(out);
    es[1].base_seq = 121;
    es[2].kind = SEG_CLOSED; /* no active entry at the end */
    if (cairn__manifest_encode(&m, NULL, &out, &len) != CAIRN_OK)
        die("manifest_encode");
    write_seed(T, "bad-no-active", out, len);
    free(out);
    es[2].kind = SEG_ACTIVE;
    m.next_id = 6; /* an id not below next_id */
    if (cairn__manifest_encode(&m, NULL, &out, &len) != CAIRN_OK)
        die("manifest_encode");
    write_seed(T, "bad-next-id", out, len);
    free(out);
}

/* ---- log segments ----------------------------------------------------- */

static void seg_header(bytes *b, uint64_t id, uint64_t base_seq)
{
    uint8_t h[FILEHDR_SIZE];
    cairn__logseg_header_encode(h, id, SEG_SALT, base_seq, T0 - 5);
    b_put(b, h, sizeof h);
}

static void gen_logseg(void)
{
    const char *T = "logseg";
    bytes b = {0};
    size_t after2;

    seg_header(&b, 1, 1);
    write_seed(T, "seed-empty", b.p, b.n);
    put_records(&b, 0, 1, 1, SEG_SALT);
    write_seed(T, "seed-one", b.p, b.n);

    b.n = 0;
    seg_header(&b, 0x2a, 500);
    put_records(&b, 0, 2, 500, SEG_SALT);
    after2 = b.n;
    put_records(&b, 2, 5, 502, SEG_SALT);
    write_seed(T, "seed-seven", b.p, b.n);
    write_seed(T, "bad-torn-tail", b.p, b.n - 11);
    write_flipped(T, "bad-flip-header", b.p, b.n, 30, 0x04);
    write_flipped(T, "bad-flip-record", b.p, b.n, after2 + 40, 0x20);
    {
        uint8_t *c = malloc(b.n + 4096);
        memcpy(c, b.p, b.n);
        memset(c + b.n, 0, 4096); /* a preallocated tail of zeros */
        write_seed(T, "seed-zero-tail", c, b.n + 200);
        free(c);
    }
    /* Ids 7 and 6 make fuzz_logseg stretch the records across its 1 MiB
     * scan chunk (id % 8 == 7) and probe chunk (id % 8 == 6). */
    {
        bytes c = {0};
        seg_header(&c, 7, 500);
        b_put(&c, b.p + FILEHDR_SIZE, b.n - FILEHDR_SIZE);
        write_seed(T, "seed-stretch-scan", c.p, c.n);
        c.n = 0;
        seg_header(&c, 6, 500);
        b_put(&c, b.p + FILEHDR_SIZE, b.n - FILEHDR_SIZE - 11); /* a torn tail */
        write_seed(T, "seed-stretch-probe", c.p, c.n);
        free(c.p);
    }
    /* Valid records out of order: a sequence gap, then time going back. */
    b.n = after2;
    put_records(&b, 2, 1, 503, SEG_SALT);
    write_seed(T, "bad-seq-gap", b.p, b.n);
    b.n = after2;
    {
        char json[128];
        cairn_entry e;
        sample_entry(2, &e, json, sizeof json);
        put_record(&b, &e, 502, T0 - 1000, SEG_SALT);
    }
    write_seed(T, "bad-ts-back", b.p, b.n);
    /* A record of another segment (other salt) after valid ones. */
    b.n = after2;
    put_records(&b, 2, 1, 502, SEG_SALT ^ 0x10);
    write_seed(T, "bad-other-salt", b.p, b.n);
    free(b.p);
}

/* ---- sealed segments -------------------------------------------------- */

/* Seal n records (k from k0) into <dir>/<id>.seg with the engine's sealing
 * code and return the file's bytes. json_pad pads each payload so a few
 * hundred records cross the 64 KiB block target (it compresses to little). */
static uint8_t *make_sealed(const char *dir, int dfd, uint64_t id, unsigned n, size_t json_pad,
                            size_t *size)
{
    const cairn_io *io = cairn_io_default();
    logseg seg;
    cairn__err e;
    uint64_t fsize = 0;
    char path[512], name[LOGSEG_NAME_MAX];
    uint8_t *data;
    char *json = malloc(json_pad + 128);

    if (json == NULL)
        die("malloc");
    if (cairn__logseg_create(io, dfd, &seg, id, SEG_SALT, 10, T0 - 5, &e) != CAIRN_OK) {
        fprintf(stderr, "gen_corpus: %s\n", e.msg);
        exit(1);
    }
    for (unsigned k = 0; k < n; k++) {
        cairn_entry en;
        bytes b = {0};
        int64_t ts = T0 + (int64_t)(k / 2) * 10;
        sample_entry(k, &en, json, json_pad + 128);
        if (json_pad) {
            size_t l = en.json_len - 1;
            memset(json + l, ' ', json_pad);
            json[l + json_pad] = '}';
            en.json_len = l + json_pad + 1;
        }
        put_record(&b, &en, 10 + k, ts, SEG_SALT);
        if (pwrite(seg.fd, b.p, b.n, (off_t)seg.end) != (ssize_t)b.n)
            die("pwrite");
        if (cairn__logseg_index_push(NULL, &seg, seg.end, ts) != CAIRN_OK)
            die("index_push");
        seg.end += b.n;
        seg.raw_bytes += b.n;
        free(b.p);
    }
    if (cairn__seal_write(io, NULL, dfd, &seg, &fsize, &e) != CAIRN_OK) {
        fprintf(stderr, "gen_corpus: seal: %s\n", e.msg);
        exit(1);
    }
    cairn__logseg_free(io, NULL, &seg);
    cairn__logseg_name(name, id, "seg");
    snprintf(path, sizeof path, "%s/%s", dir, name);
    data = read_all(path, size);
    if (data == NULL || *size != fsize)
        die(path);
    unlink(path);
    cairn__logseg_name(name, id, "log");
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
    free(json);
    return data;
}

static void gen_sealed(void)
{
    const char *T = "sealed";
    char dir[] = "/tmp/cairn-gen-corpus-XXXXXX";
    int dfd;
    uint8_t *s;
    size_t n;

    if (mkdtemp(dir) == NULL)
        die("mkdtemp");
    dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd < 0)
        die(dir);

    s = make_sealed(dir, dfd, 1, 0, 0, &n);
    write_seed(T, "seed-empty", s, n);
    free(s);
    s = make_sealed(dir, dfd, 2, 1, 0, &n);
    write_seed(T, "seed-one", s, n);
    free(s);
    s = make_sealed(dir, dfd, 3, 6, 0, &n);
    write_seed(T, "seed-six", s, n);
    write_seed(T, "bad-truncated", s, n - 1);
    write_flipped(T, "bad-flip-header", s, n, 17, 0x01);
    write_flipped(T, "bad-flip-frame", s, n, FILEHDR_SIZE + 20, 0x40);
    write_flipped(T, "bad-flip-index", s, n, n - SEAL_FOOTER_SIZE - 64 + 16, 0x01);
    write_flipped(T, "bad-flip-footer", s, n, n - SEAL_FOOTER_SIZE + 24, 0x02);
    write_flipped(T, "bad-flip-filesum", s, n, n - 1, 0x08);
    free(s);
    s = make_sealed(dir, dfd, 4, 300, 400, &n); /* ~130 KiB raw: three blocks */
    write_seed(T, "seed-three-blocks", s, n);
    free(s);
    close(dfd);
    rmdir(dir);
}

/* ---- goldens ---------------------------------------------------------- */

static void copy_golden(const char *gdir, const char *file, const char *target)
{
    char path[512], name[128];
    size_t n;
    uint8_t *p;

    snprintf(path, sizeof path, "%s/%s", gdir, file);
    p = read_all(path, &n);
    if (p == NULL)
        die(path);
    snprintf(name, sizeof name, "golden-%s", file);
    write_seed(target, name, p, n);
    free(p);
}

/* ---- the access side file --------------------------------------------- */

static void gen_access(void)
{
    static const uint8_t sid[16] = "seed store id 16";
    const uint64_t id = 0x0a11ce55f11e1d01ull;
    uint8_t f[ACC_HDR_SIZE + 6 * ACC_ENTRY_SIZE + 16];
    size_t n = ACC_HDR_SIZE;

    cairn__accfile_hdr_encode(f, id, sid);
    write_seed("access", "seed-empty", f, ACC_HDR_SIZE);
    for (uint64_t i = 0; i < 4; i++, n += ACC_ENTRY_SIZE)
        cairn__accfile_entry_encode(f + n, id, 2 + i % 2, T0 + (int64_t)i * 1000);
    write_seed("access", "seed-four", f, n);
    write_seed("access", "seed-torn-tail", f, n - 7);
    write_flipped("access", "seed-flipped-entry", f, n, ACC_HDR_SIZE + ACC_ENTRY_SIZE + 2, 0x20);
    write_flipped("access", "seed-flipped-header", f, n, ACC_OFF_FILE_ID + 1, 0x01);
    /* 5 stray bytes in the middle, then entries at an odd offset */
    memmove(f + ACC_HDR_SIZE + ACC_ENTRY_SIZE + 5, f + ACC_HDR_SIZE + ACC_ENTRY_SIZE,
            n - ACC_HDR_SIZE - ACC_ENTRY_SIZE);
    memcpy(f + ACC_HDR_SIZE + ACC_ENTRY_SIZE, "junk!", 5);
    write_seed("access", "seed-misaligned", f, n + 5);
    /* entries whose sum holds and whose values do not: seq 0, a time past 2^53 */
    n = ACC_HDR_SIZE;
    cairn__accfile_entry_encode(f + n, id, 0, T0);
    cairn__accfile_entry_encode(f + n + ACC_ENTRY_SIZE, id, 7, ACC_AT_MAX + 1);
    cairn__accfile_entry_encode(f + n + 2 * ACC_ENTRY_SIZE, id, 7, -1);
    write_seed("access", "seed-bad-values", f, n + 3 * ACC_ENTRY_SIZE);
    /* a newer version and a reserved byte set (sums redone) */
    cairn__accfile_hdr_encode(f, id, sid);
    put_le16(f + 8, 2);
    put_le64(f + FILEHDR_OFF_SUM, XXH3_64bits(f, FILEHDR_OFF_SUM));
    write_seed("access", "seed-newer", f, ACC_HDR_SIZE);
    cairn__accfile_hdr_encode(f, id, sid);
    f[ACC_OFF_RESERVED + 3] = 1;
    put_le64(f + FILEHDR_OFF_SUM, XXH3_64bits(f, FILEHDR_OFF_SUM));
    write_seed("access", "seed-reserved", f, ACC_HDR_SIZE);
    write_seed("access", "seed-short", f, 40);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s OUT_DIR [GOLDEN_DIR]\n", argv[0]);
        return 2;
    }
    outdir = argv[1];
    if (mkdir(outdir, 0755) != 0 && errno != EEXIST)
        die(outdir);
    gen_record();
    gen_manifest();
    gen_logseg();
    gen_sealed();
    gen_access();
    if (argc == 3) {
        copy_golden(argv[2], "record-v1.bin", "record");
        copy_golden(argv[2], "manifest-v1.bin", "manifest");
        copy_golden(argv[2], "manifest-v2.bin", "manifest");
        copy_golden(argv[2], "manifest-v3.bin", "manifest");
        copy_golden(argv[2], "segment-v1.log", "logseg");
        copy_golden(argv[2], "sealed-v1.seg", "sealed");
        copy_golden(argv[2], "access-v1.bin", "access");
    }
    printf("seed corpora written to %s\n", outdir);
    return 0;
}
