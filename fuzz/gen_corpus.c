/*
 * gen_corpus.c - writes the seed corpora of the fuzz targets with the
 * engine's own encoders, so every valid seed is exactly what the engine
 * writes. Not part of the build or of `make test`; run by hand (fuzz/README.md):
 *
 *   make lib
 *   cc -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
 *      -Iengine/include -Iengine/common -Iengine/log -Iengine/memory \
 *      fuzz/gen_corpus.c build/libcairn.a -lzstd -lxxhash -lutf8proc -lstemmer -lcjson \
 *      -lm -pthread -o build/gen_corpus
 *   build/gen_corpus fuzz/corpora tests/golden
 *
 * Writes <out>/{record,manifest,logseg,sealed,access,hole}/seed-*: valid
 * inputs, and a few hand-mangled ones (truncated, flipped, bad fields under
 * a repaired checksum) so the error paths are in the corpus from the start.
 * If a golden directory is given, its files are copied in as golden-*
 * seeds. Seeds are fixed: no clock, no randomness, so a rerun gives the
 * same bytes (except the sealed seeds if the zstd version changes) -- but
 * for the store-* seeds of sealed/ and manifest/: the compacted segments
 * and the MANIFEST of a real store made with the memory API and compacted
 * (random salts and store id, the clock), whose bytes differ on each run.
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

#include <dirent.h>

#include "accfile.h"
#include "bytes.h"
#include "cairn.h"
#include "cairn_sys.h"
#include "filehdr.h"
#include "hole.h"
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

static void gen_manifest_v4(void);

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
        manifest_entry one = {1, SEG_ACTIVE, 1, 0, 0, 0, 0, 0, 0, {0}};
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
    m.next_id = 7;
    gen_manifest_v4();
}

/* Version 4: the retention policy, dropped_upto, and compacted sealed
 * entries (rev: the file is <id>-<rev>.seg; count is the seqs spanned). */
static void write_manifest(const char *name, const manifest *m)
{
    uint8_t *out;
    size_t len;
    if (cairn__manifest_encode(m, NULL, &out, &len) != CAIRN_OK)
        die("manifest_encode");
    write_seed("manifest", name, out, len);
    free(out);
}

/* Encode m, set the store block's bytes [off, off+n) to v (little endian),
 * redo the trailer: a field error behind a valid checksum. */
static void write_manifest_poked(const char *name, const manifest *m, size_t off, uint64_t v,
                                 size_t n)
{
    uint8_t *out;
    size_t len;
    if (cairn__manifest_encode(m, NULL, &out, &len) != CAIRN_OK)
        die("manifest_encode");
    for (size_t i = 0; i < n; i++)
        out[FILEHDR_SIZE + off + i] = (uint8_t)(v >> (8 * i));
    put_le64(out + len - 8, XXH3_64bits(out, len - 8));
    write_seed("manifest", name, out, len);
    free(out);
}

static void gen_manifest_v4(void)
{
    manifest_entry es[5] = {
        {3, SEG_SEALED, 1, 120, 120, T0, T0 + 999, 1},
        {4, SEG_SEALED, 121, 300, 180, T0 + 1000, T0 + 5000, 0x0000000au},
        {5, SEG_SEALED, 301, 301, 1, T0 + 5000, T0 + 5000, 0},
        {8, SEG_CLOSED, 305, 330, 26, T0 + 6000, T0 + 7000, 0},
        {9, SEG_ACTIVE, 331, 0, 0, 0, 0, 0},
    };
    manifest m = {.generation = 12, .next_id = 10, .segment_size = 4096, .batch_ms = 5,
                  .durability = CAIRN_DURABILITY_STORED, .store_id = {STORE_ID},
                  .synced_seq = 330, .lost_total = 3, .max_memories = 0,
                  .retain = {CAIRN_RETAIN_LIVE, CAIRN_RETAIN_GRACE_DEFAULT, 30 * 86400000ull, 0},
                  .dropped_upto = 297, .e = es, .n = 5};

    write_manifest("seed-v4-compacted", &m);
    m.retain.grace_ms = 0; /* live:0 */
    m.dropped_upto = 0;
    es[0].rev = 0xffffffffu;
    write_manifest("seed-v4-live0", &m);
    m.retain.memories = CAIRN_RETAIN_ALL; /* back to all after a compaction: dropped_upto stays */
    m.dropped_upto = 120;
    write_manifest("seed-v4-all-after-live", &m);
    m.retain.memories = CAIRN_RETAIN_LIVE;
    m.retain.grace_ms = CAIRN_RETAIN_GRACE_MAX;
    m.dropped_upto = MAN_SEQ_MAX - 1;
    write_manifest("seed-v4-extremes", &m);

    /* Rule violations behind valid checksums. */
    m.retain.grace_ms = CAIRN_RETAIN_GRACE_DEFAULT;
    m.dropped_upto = 297;
    es[3].rev = 1; /* only a sealed entry is compacted */
    write_manifest("bad-v4-rev-closed", &m);
    es[3].rev = 0;
    es[4].rev = 2;
    write_manifest("bad-v4-rev-active", &m);
    es[4].rev = 0;
    m.retain.memories = 2;
    write_manifest("bad-v4-retain", &m);
    m.retain.memories = CAIRN_RETAIN_ALL; /* a grace without the live policy */
    write_manifest("bad-v4-grace-all", &m);
    m.retain.memories = CAIRN_RETAIN_LIVE;
    m.retain.grace_ms = CAIRN_RETAIN_GRACE_MAX + 1;
    write_manifest("bad-v4-grace-max", &m);
    m.retain.grace_ms = CAIRN_RETAIN_GRACE_DEFAULT;
    m.retain.events_max_bytes = CAIRN_RETAIN_GRACE_MAX + 1;
    write_manifest("bad-v4-events-bytes", &m);
    m.retain.events_max_bytes = 0;
    m.dropped_upto = MAN_SEQ_MAX;
    write_manifest("bad-v4-dropped", &m);
    m.dropped_upto = 297;
    write_manifest_poked("bad-v4-reserved", &m, 44, 1, 4);
    /* A compacted entry whose count is not its span. */
    es[1].count = 179;
    write_manifest("bad-v4-count", &m);
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
    if (cairn__seal_write(io, NULL, dfd, &seg, NULL, 0, NULL, &fsize, &e) != CAIRN_OK) {
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

/* ---- compacted sealed segments (version 2) ----------------------------- */

enum { V2_PATTERN, V2_ALL, V2_PAST_BLOCK, V2_BAD_PAYLOAD, V2_AS_V1 };

/* Which of records 0..n-1 a compaction drops in the pattern: the first,
 * runs of three, the last two of a commit (20..23, so its end is listed),
 * and the last three. */
static int v2_dropped(unsigned k, unsigned n, int mode)
{
    return mode == V2_ALL || k == 0 || (k % 7 >= 1 && k % 7 <= 3) || k == 22 || k == 23 ||
           k + 3 >= n;
}

/* Write what the hole builder gathered as one record standing for its seqs. */
static void v2_flush(cairn__sealw *w, cairn__holeb *hb, int mode, int last, cairn__err *e)
{
    uint64_t seq = hb->h.seq, upto = hb->h.upto;
    int64_t ts = hb->ts;
    uint8_t *rec;
    size_t len;

    if (hb->h.records == 0)
        return;
    if (mode == V2_BAD_PAYLOAD && last) {
        /* more records than seqs: the payload does not decode */
        char json[96];
        cairn_entry en;
        memset(&en, 0, sizeof en);
        en.type = CAIRN_REC_COMPACTED;
        en.json = json;
        en.json_len = (size_t)snprintf(json, sizeof json,
                                       "{\"upto\":%llu,\"records\":%llu,\"bytes\":99999}",
                                       (unsigned long long)upto,
                                       (unsigned long long)(upto - seq + 2));
        if (cairn__record_size(&en, &len) != CAIRN_OK || (rec = malloc(len)) == NULL)
            die("record");
        cairn__record_encode(rec, &en, seq, ts, SEG_SALT);
        memset(&hb->h, 0, sizeof hb->h);
        hb->n_ends = hb->n_anchors = 0;
    } else if (cairn__holeb_emit(hb, SEG_SALT, "retain live:0", &rec, &len) != CAIRN_OK) {
        die("holeb_emit");
    }
    /* V2_PAST_BLOCK: the index says the file ends a seq before its last hole does */
    if (cairn__sealw_add(w, rec, len, seq, mode == V2_PAST_BLOCK && last ? upto - 1 : upto, ts,
                         e) != CAIRN_OK) {
        fprintf(stderr, "gen_corpus: %s\n", e->msg);
        exit(1);
    }
    free(rec);
}

/* A compacted segment as cairn__compact writes it (the same writer and hole
 * builder): n records from seq 10 (k as in make_sealed, records 20..23 one
 * commit of four), the dropped ones left as holes with the commit ends they
 * held, the checksums of every dropped record with k % 14 == 2 kept as
 * anchors, and every third one a memory's going. */
static uint8_t *make_compacted(const char *dir, int dfd, uint64_t id, unsigned n, size_t json_pad,
                               int mode, size_t *size)
{
    const cairn_io *io = cairn_io_default();
    cairn__sealw w;
    cairn__holeb hb;
    cairn__err e;
    uint64_t fsize = 0;
    char path[512], name[64];
    char *json = malloc(json_pad + 128);
    uint8_t *data;

    if (json == NULL)
        die("malloc");
    snprintf(name, sizeof name, "v2-%llu.seg", (unsigned long long)id);
    memset(&hb, 0, sizeof hb);
    if (cairn__sealw_begin(&w, io, NULL, dfd, name, id, SEG_SALT, 10, T0 - 5, 1, NULL, 0,
                           &e) != CAIRN_OK) {
        fprintf(stderr, "gen_corpus: %s\n", e.msg);
        exit(1);
    }
    for (unsigned k = 0; k < n; k++) {
        cairn_entry en;
        cairn_record rec;
        bytes b = {0};
        int64_t ts = T0 + (int64_t)(k / 2) * 10;
        uint64_t seq = 10 + k;
        sample_entry(k, &en, json, json_pad + 128);
        if (k >= 20 && k < 24) /* one commit of four */
            en.json_len = (size_t)snprintf(json, json_pad + 128, "{\"k\":%u,\"batch\":[%u,4]}", k,
                                           k - 20);
        else if (json_pad) {
            size_t l = en.json_len - 1;
            memset(json + l, ' ', json_pad);
            json[l + json_pad] = '}';
            en.json_len = l + json_pad + 1;
        }
        put_record(&b, &en, seq, ts, SEG_SALT);
        if (v2_dropped(k, n, mode)) {
            memset(&rec, 0, sizeof rec);
            rec.seq = seq;
            rec.ts_ms = ts;
            rec.type = en.type;
            rec.ns = en.ns;
            rec.ns_len = en.ns_len;
            rec.json = en.json;
            rec.json_len = en.json_len;
            rec.bin = en.bin;
            rec.bin_len = en.bin_len;
            if (cairn__holeb_add(&hb, &rec, b.n, k % 3 == 0) != CAIRN_OK)
                die("holeb_add");
            if (k % 14 == 2 && cairn__holeb_anchor(&hb, seq, get_le64(b.p + b.n - 8)) != CAIRN_OK)
                die("holeb_anchor");
        } else {
            v2_flush(&w, &hb, mode, 0, &e);
            if (cairn__sealw_add(&w, b.p, b.n, seq, seq, ts, &e) != CAIRN_OK) {
                fprintf(stderr, "gen_corpus: %s\n", e.msg);
                exit(1);
            }
        }
        free(b.p);
    }
    v2_flush(&w, &hb, mode, 1, &e);
    cairn__holeb_free(&hb);
    if (cairn__sealw_finish(&w, &fsize, &e) != CAIRN_OK) {
        fprintf(stderr, "gen_corpus: %s\n", e.msg);
        exit(1);
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    data = read_all(path, size);
    if (data == NULL || *size != fsize)
        die(path);
    unlink(path);
    free(json);
    if (mode == V2_AS_V1) { /* the writer writes version 3: say 1 */
        put_le16(data + 8, 1);
        cairn__filehdr_seal(data);
    }
    return data;
}

static void gen_sealed_v2(const char *dir, int dfd)
{
    const char *T = "sealed";
    uint8_t *s;
    size_t n;

    s = make_compacted(dir, dfd, 11, 40, 0, V2_PATTERN, &n);
    write_seed(T, "seed-v2-holes", s, n);
    write_flipped(T, "bad-v2-flip-frame", s, n, FILEHDR_SIZE + 30, 0x10);
    write_flipped(T, "bad-v2-flip-index", s, n, n - SEAL_FOOTER_SIZE - 64 + 24, 0x01);
    free(s);
    s = make_compacted(dir, dfd, 12, 300, 400, V2_PATTERN, &n); /* several blocks */
    write_seed(T, "seed-v2-blocks", s, n);
    free(s);
    s = make_compacted(dir, dfd, 13, 25, 0, V2_ALL, &n); /* one hole for the whole file */
    write_seed(T, "seed-v2-one-hole", s, n);
    free(s);
    s = make_compacted(dir, dfd, 14, 40, 0, V2_PAST_BLOCK, &n);
    write_seed(T, "bad-v2-hole-past-block", s, n);
    free(s);
    s = make_compacted(dir, dfd, 15, 40, 0, V2_BAD_PAYLOAD, &n);
    write_seed(T, "bad-v2-hole-payload", s, n);
    free(s);
    s = make_compacted(dir, dfd, 16, 40, 0, V2_AS_V1, &n); /* holes in a version 1 file */
    write_seed(T, "bad-v2-as-v1", s, n);
    free(s);
}

/* ---- a real store, compacted ------------------------------------------ */

static void store_die(const char *what, int rc, const char *msg)
{
    fprintf(stderr, "gen_corpus: %s: %s (%s)\n", what, cairn_strerror(rc), msg ? msg : "");
    exit(1);
}

/* Copy the compacted segments (<id>-<rev>.seg) not copied before and the
 * MANIFEST of the store in dir in as store-<tag>-* seeds. */
static void copy_store_files(const char *dir, const char *tag)
{
    static char seen[64][64];
    static size_t n_seen;
    DIR *d = opendir(dir);
    struct dirent *de;
    char path[512], name[160];

    if (d == NULL)
        die(dir);
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name), n;
        uint8_t *p;
        const char *target;
        if (l > 4 && l < sizeof seen[0] && strcmp(de->d_name + l - 4, ".seg") == 0 &&
            strchr(de->d_name, '-') != NULL) {
            size_t i = 0;
            while (i < n_seen && strcmp(seen[i], de->d_name) != 0)
                i++;
            if (i < n_seen || n_seen == 64)
                continue;
            snprintf(seen[n_seen++], sizeof seen[0], "%s", de->d_name);
            target = "sealed";
        }
        else if (strcmp(de->d_name, "MANIFEST") == 0)
            target = "manifest";
        else
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if ((p = read_all(path, &n)) == NULL)
            die(path);
        snprintf(name, sizeof name, "store-%s-%s", tag, de->d_name);
        write_seed(target, name, p, n);
        free(p);
    }
    closedir(d);
}

static void rm_store(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char path[512];
    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

/* A store of small segments under "live:0": an import (one commit of four)
 * and 40 memories; most of them deleted (the import's last one too, so a
 * hole lists the commit's end), a memory index written over the deletions
 * (so a hole keeps the checksum it is bound to), compacted; then more
 * deleted, one purged, compacted again (holes next to holes, rev 2). */
static void gen_store(void)
{
    static const char input[] =
        "[{\"id\":\"i1\",\"content\":\"imported one\",\"category\":\"fact\"},"
        "{\"id\":\"i2\",\"content\":\"imported two\",\"category\":\"fact\"},"
        "{\"id\":\"i3\",\"content\":\"imported three\",\"category\":\"fact\"},"
        "{\"id\":\"i4\",\"content\":\"imported four\",\"category\":\"fact\"}]";
    char dir[] = "/tmp/cairn-gen-store-XXXXXX";
    char err[CAIRN_ERRMSG_MAX] = "", ids[40][CAIRN_MEM_ID_MAX + 1];
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_compact_report rep;
    cairn_purge_report pr;
    uint64_t imported = 0, skipped = 0;
    cairn_db *db = NULL;
    cairn_mem *m = NULL;
    int rc;

    if (mkdtemp(dir) == NULL)
        die("mkdtemp");
    o.create = 1;
    o.background = 0;
    o.durability = CAIRN_DURABILITY_NONE;
    o.segment_size = 4096; /* many segments, sealed as they fill */
    o.retain = "live:0";
    if ((rc = cairn_open(&db, dir, &o, err, sizeof err)) != CAIRN_OK)
        store_die("open", rc, err);
    if ((rc = cairn_mem_open(db, NULL, &m)) != CAIRN_OK)
        store_die("mem_open", rc, cairn_errmsg(db));
    if ((rc = cairn_mem_import(m, CAIRN_MEM_JSON, input, sizeof input - 1, NULL, &imported,
                               &skipped)) != CAIRN_OK)
        store_die("import", rc, cairn_mem_errmsg(m));
    for (int i = 0; i < 40; i++) {
        cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
        cairn_memory *mem = NULL;
        char text[96];
        snprintf(text, sizeof text, "note %d about topic %s with some padding words", i,
                 i % 3 == 0 ? "three" : "other");
        so.ns = i % 2 ? "b" : "a";
        if ((rc = cairn_mem_store(m, text, &so, &mem, NULL)) != CAIRN_OK)
            store_die("store", rc, cairn_mem_errmsg(m));
        snprintf(ids[i], sizeof ids[i], "%s", mem->id);
        cairn_mem_free(mem);
    }
    if ((rc = cairn_mem_delete(m, "i4", "gen")) != CAIRN_OK)
        store_die("delete", rc, cairn_mem_errmsg(m));
    for (int i = 0; i < 30; i++)
        if (i % 4 != 3 && (rc = cairn_mem_delete(m, ids[i], "gen")) != CAIRN_OK)
            store_die("delete", rc, cairn_mem_errmsg(m));
    if ((rc = cairn_mem_checkpoint(m)) != CAIRN_OK)
        store_die("checkpoint", rc, cairn_mem_errmsg(m));
    if ((rc = cairn_mem_compact(m, 0, &rep)) != CAIRN_OK || rep.dropped == 0)
        store_die("compact", rc, cairn_mem_errmsg(m));
    copy_store_files(dir, "rev1");
    for (int i = 30; i < 38; i++)
        if ((rc = cairn_mem_delete(m, ids[i], "gen")) != CAIRN_OK)
            store_die("delete", rc, cairn_mem_errmsg(m));
    if ((rc = cairn_mem_purge(m, ids[3], &pr)) != CAIRN_OK)
        store_die("purge", rc, cairn_mem_errmsg(m));
    if ((rc = cairn_mem_checkpoint(m)) != CAIRN_OK)
        store_die("checkpoint", rc, cairn_mem_errmsg(m));
    if ((rc = cairn_mem_compact(m, 0, &rep)) != CAIRN_OK)
        store_die("compact", rc, cairn_mem_errmsg(m));
    copy_store_files(dir, "rev2");
    cairn_mem_close(m);
    if ((rc = cairn_close(db)) != CAIRN_OK)
        store_die("close", rc, NULL);
    rm_store(dir);
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
    s = make_sealed(dir, dfd, 5, 700, 400, &n); /* ~360 KiB raw: a dictionary, 4 KiB blocks */
    write_seed(T, "seed-dict", s, n);
    write_flipped(T, "bad-flip-dict", s, n, FILEHDR_SIZE + SEAL_DICT_HEAD + 200, 0x04);
    write_flipped(T, "bad-flip-dict-len", s, n, FILEHDR_SIZE + 1, 0x01);
    free(s);
    gen_sealed_v2(dir, dfd);
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

/* ---- hole payloads ------------------------------------------------------ */

/* An input of fuzz_hole: the 8 bytes of parameters, then the payload. */
#define HOLE_PROGRAM 0x40 /* byte 7: the payload is also a builder program */
#define HOLE_NO_WHY 0x01

static void write_hole_bytes(const char *name, uint32_t seq, int top, int16_t delta, uint8_t n,
                             uint8_t flags, const void *p, size_t len)
{
    bytes b = {0};
    uint8_t h[8];
    put_le32(h, seq);
    put_le16(h + 4, (uint16_t)delta);
    h[6] = n;
    h[7] = (uint8_t)((top ? 0x80 : 0) | flags);
    b_put(&b, h, sizeof h);
    b_put(&b, p, len);
    write_seed("hole", name, b.p, b.n);
    free(b.p);
}

static void write_hole(const char *name, uint32_t seq, int top, int16_t delta, uint8_t n,
                       int no_why, const char *json)
{
    write_hole_bytes(name, seq, top, delta, n, no_why ? HOLE_NO_WHY : 0, json, strlen(json));
}

static void gen_hole(void)
{
    const char *T = "hole";
    cairn__holeb hb;
    uint8_t *rec;
    size_t len, rlen;
    cairn_record r;
    char json[256];

    write_hole("seed-minimal", 1, 0, 0, 2, 0, "{\"upto\":1,\"records\":1,\"bytes\":40}");
    write_hole("seed-store", 1, 0, 2, 2, 0,
               "{\"upto\":3,\"records\":3,\"bytes\":720,\"deaths\":3,\"why\":\"retain live:0\"}");
    write_hole("seed-ends-anchors", 100, 0, 5, 2, 0,
               "{\"upto\":140,\"records\":30,\"bytes\":4000,\"deaths\":2,"
               "\"ends\":[[105,2],[140,7]],"
               "\"anchors\":[[101,\"00000000000000ff\"],[140,\"ffffffffffffffff\"],"
               "[101,\"0123456789abcdef\"]],\"why\":\"purge m0123456789abcdef\"}");
    write_hole("seed-top", 0, 1, 0, 2, 0, /* seq 2^53: the largest */
               "{\"upto\":9007199254740992,\"records\":1,\"bytes\":40,"
               "\"ends\":[[9007199254740992,9007199254740992]]}");
    write_hole("seed-no-params", 0, 0, 0, 0, 0, "{}");
    {
        /* a short input: the payload alone, seq 1 */
        static const char shortj[] = "[1]";
        write_seed(T, "seed-short", (const uint8_t *)shortj, 3);
    }
    /* the rules, one at a time */
    write_hole("bad-records-0", 5, 0, 0, 2, 0, "{\"upto\":5,\"records\":0,\"bytes\":40}");
    write_hole("bad-records-span", 5, 0, 0, 2, 0, "{\"upto\":6,\"records\":3,\"bytes\":120}");
    write_hole("bad-bytes", 5, 0, 0, 2, 0, "{\"upto\":6,\"records\":2,\"bytes\":79}");
    write_hole("bad-upto-below", 5, 0, 0, 2, 0, "{\"upto\":4,\"records\":1,\"bytes\":40}");
    write_hole("bad-upto-missing", 5, 0, 0, 2, 0, "{\"records\":1,\"bytes\":40}");
    write_hole("bad-fraction", 5, 0, 0, 2, 0, "{\"upto\":5.5,\"records\":1,\"bytes\":40}");
    write_hole("bad-negative", 5, 0, 0, 2, 0, "{\"upto\":5,\"records\":1,\"bytes\":40,\"deaths\":-1}");
    write_hole("bad-past-2-53", 5, 0, 0, 2, 0,
               "{\"upto\":9007199254740994,\"records\":1,\"bytes\":40}");
    write_hole("bad-end-below", 5, 0, -1, 2, 0, /* decodes at seq 1, not at 5 */
               "{\"upto\":9,\"records\":2,\"bytes\":80,\"ends\":[[4,2]]}");
    write_hole("bad-end-above", 5, 0, 5, 2, 0,
               "{\"upto\":9,\"records\":2,\"bytes\":80,\"ends\":[[10,2]]}");
    write_hole("bad-end-n1", 5, 0, 0, 1, 0,
               "{\"upto\":9,\"records\":2,\"bytes\":80,\"ends\":[[5,1]]}");
    write_hole("bad-end-shape", 5, 0, 0, 2, 0,
               "{\"upto\":9,\"records\":2,\"bytes\":80,\"ends\":[[5,2,3]]}");
    write_hole("bad-ends-object", 5, 0, 0, 2, 0,
               "{\"upto\":9,\"records\":2,\"bytes\":80,\"ends\":{\"5\":2}}");
    write_hole("bad-anchor-upper", 5, 0, 1, 2, 0,
               "{\"upto\":9,\"records\":2,\"bytes\":80,\"anchors\":[[6,\"00000000000000FF\"]]}");
    write_hole("bad-anchor-short", 5, 0, 1, 2, 0,
               "{\"upto\":9,\"records\":2,\"bytes\":80,\"anchors\":[[6,\"0000000000000ff\"]]}");
    write_hole("bad-anchor-number", 5, 0, 1, 2, 0,
               "{\"upto\":9,\"records\":2,\"bytes\":80,\"anchors\":[[6,255]]}");
    write_hole("bad-why", 5, 0, 0, 2, 0, "{\"upto\":5,\"records\":1,\"bytes\":40,\"why\":7}");
    write_hole("bad-not-object", 5, 0, 0, 2, 0, "[{\"upto\":5,\"records\":1,\"bytes\":40}]");
    write_hole("bad-truncated", 5, 0, 0, 2, 0, "{\"upto\":5,\"records\":1,\"bytes\":4");

    /* Builder programs (fuzz_hole.c, build()): 3 bytes a record. */
    {
        static const uint8_t prog[] = {
            0x08, 10, 0x00,  /* seq, a death */
            0x11, 20, 0x05,  /* gap 2, anchored */
            0x20, 3, 0x02,   /* a mark [3 % 3, 4]: not the end */
            0x60, 4, 0x02,   /* the end of a commit of 4 */
            0x67, 0, 0x41,   /* a jump of 2^20, a mark one level down */
            0xb0, 255, 0x80, /* anchored (sum all ones), then emit */
            0x38, 0, 0xc3,   /* a death, anchored (sum 0), no object */
            0x21, 7, 0x3f,   /* a mark of a commit of 65 */
        };
        write_hole_bytes("seed-program", 1000, 0, 0, 2, HOLE_PROGRAM, prog, sizeof prog);
        write_hole_bytes("seed-program-top", 1, 1, 0, 2, HOLE_PROGRAM | HOLE_NO_WHY, prog,
                         sizeof prog);
    }
    write_hole_bytes("seed-program-json", 7, 0, 0, 2, HOLE_PROGRAM,
                     "{\"upto\":9,\"records\":2,\"bytes\":80}", 33);

    /* What the builder writes: gathered records, a commit end, anchors. */
    memset(&hb, 0, sizeof hb);
    for (unsigned k = 0; k < 6; k++) {
        memset(&r, 0, sizeof r);
        r.seq = 200 + 2 * k; /* with gaps: fewer records than seqs */
        r.ts_ms = T0 + k;
        r.type = CAIRN_REC_MEMORY;
        r.json = json;
        r.json_len = (size_t)snprintf(json, sizeof json, "{\"id\":\"m%u\",\"batch\":[%u,3]}", k,
                                      k % 3);
        if (cairn__holeb_add(&hb, &r, 100 + k, k == 1) != CAIRN_OK ||
            (k % 2 == 0 && cairn__holeb_anchor(&hb, r.seq, 0x1122334455667788ull * k) != CAIRN_OK))
            die("holeb");
    }
    if (cairn__holeb_emit(&hb, REC_SALT, "purge m0123456789abcdef", &rec, &len) != CAIRN_OK ||
        cairn__record_decode(rec, len, REC_SALT, &r, &rlen) != REC_OK)
        die("holeb_emit");
    {
        bytes b = {0};
        uint8_t h[8] = {200, 0, 0, 0, 4, 0, 3, 0}; /* probe the end [204,3] */
        b_put(&b, h, sizeof h);
        b_put(&b, r.json, r.json_len);
        write_seed(T, "seed-built", b.p, b.n);
        free(b.p);
    }
    free(rec);
    cairn__holeb_free(&hb);
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
    gen_hole();
    gen_store();
    if (argc == 3) {
        copy_golden(argv[2], "record-v1.bin", "record");
        copy_golden(argv[2], "manifest-v1.bin", "manifest");
        copy_golden(argv[2], "manifest-v2.bin", "manifest");
        copy_golden(argv[2], "manifest-v3.bin", "manifest");
        copy_golden(argv[2], "manifest-v4.bin", "manifest");
        copy_golden(argv[2], "segment-v1.log", "logseg");
        copy_golden(argv[2], "sealed-v1.seg", "sealed");
        copy_golden(argv[2], "sealed-v3.seg", "sealed");
        copy_golden(argv[2], "access-v1.bin", "access");
    }
    printf("seed corpora written to %s\n", outdir);
    return 0;
}
