/*
 * test_golden.c - golden files pin the on-disk formats (format-spec/).
 *
 * Each golden file under tests/golden/ was produced by this program from
 * fixed inputs (fixed sequence numbers, timestamps, salts, namespaces,
 * payloads). The tests re-encode the same inputs and compare byte for byte,
 * and decode each golden file with the engine's own readers and check every
 * field. A failure here means the bytes on disk changed: that is a format
 * change, which needs a new format version in format-spec/ (and its
 * changelog) before the goldens are regenerated.
 *
 * Regenerate (only together with a spec version change):
 *   build/tests/test_golden --regen tests/golden
 *   CAIRN_GOLDEN_REGEN=1 build/tests/test_golden     (writes to the golden dir)
 * The golden dir is $CAIRN_GOLDEN_DIR, else "tests/golden" relative to the
 * current directory (tests/run-tests.sh runs from the repository root).
 *
 * The sealed segment holds zstd frames; zstd only promises that its output
 * decodes, not that a later version compresses to the same bytes. So the
 * whole-file comparison of the sealed golden runs only when the linked zstd
 * is the version recorded in sealed-v1.zstd-version (for every sealed
 * golden of this program, despite its name); with any other version
 * the test still pins the header, every index field that does not depend
 * on the compressor, the footer totals and the inflated block bytes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "accfile.h"
#include "bytes.h"
#include "cairn.h"
#include "lockfile.h"
#include "cairn_sys.h"
#include "filehdr.h"
#include "ggen.h"
#include "gimage.h"
#include "logseg.h"
#include "io.h"
#include "hole.h"
#include "keyfile.h"
#include "manifest.h"
#include "store.h"
#include "memindex.h"
#include "record.h"
#include "sealed.h"
#include "testutil.h"

/* ------------------------------------------------------------------------
 * Fixed inputs. Changing any of these changes the goldens.
 * ---------------------------------------------------------------------- */

/* The record golden (record-v1.bin). */
#define REC_SALT 0x0123456789abcdefull
#define REC_SEQ 42u
#define REC_TS 1700000000123ll /* 2023-11-14T22:13:20.123Z */
static const char rec_ns[] = "agent/alpha";
static const char rec_json[] = "{\"a\":1}";
/* Two little-endian f32: 1.0, -2.5. */
static const uint8_t rec_bin[8] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc0};

/* The log segment golden (segment-v1.log): header plus three records. */
#define SEGL_ID 1u
#define SEGL_SALT 0x0123456789abcdefull
#define SEGL_BASE 1u
#define SEGL_CREATED 1700000000000ll
static const struct {
    uint16_t type;
    const char *ns;
    const char *json;
    size_t bin_len; /* bytes of rec_bin */
    int64_t ts;
} segl_recs[] = {
    {CAIRN_REC_EVENT, "", "{\"a\":1}", 0, 1700000000001ll},
    {CAIRN_REC_EVENT, "agent/alpha", "{\"msg\":\"hello\"}", 0, 1700000000005ll},
    {0x8001u, "agent/beta", "{}", 8, 1700000000005ll},
};
#define SEGL_N (sizeof segl_recs / sizeof segl_recs[0])

/* The manifest goldens (manifest-v1.bin .. -v8): sealed (version 4:
 * compacted twice, rev 2; version 8: its hash chain kept), closed, active. */
static const manifest_entry man_entries[] = {
    {1, SEG_SEALED, 1, 100, 100, 1700000000001ll, 1700000060000ll, 2, 1,
     {0xc0, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e,
      0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d,
      0x1e, 0xc1}},
    {2, SEG_CLOSED, 101, 150, 50, 1700000060000ll, 1700000090000ll, 0, 0, {0}},
    {3, SEG_ACTIVE, 151, 0, 0, 0, 0, 0, 0, {0}},
};
/* Version 9: the derived files it lists (a whole memory index and one
 * generation on it, a graph file and its generation). */
static const manifest_file man_files[] = {
    {MAN_FILE_MEMINDEX, 120, 4096, 0x1122334455667788ull},
    {MAN_FILE_MEMINDEX, 140, 1024, 0x0102030405060708ull},
    {MAN_FILE_GRAPH, 120, 2048, 0xa1a2a3a4a5a6a7a8ull},
    {MAN_FILE_GRAPHGEN, 140, 512, 0xf0e0d0c0b0a09080ull},
};
#define MAN_N_FILES (sizeof man_files / sizeof man_files[0])
#define MAN_GEN 7u
#define MAN_NEXT_ID 4u
#define MAN_SEGSIZE (64ull << 20)
#define MAN_BATCH_MS 50u
#define MAN_DURABILITY CAIRN_DURABILITY_BATCH
#define MAN_SYNCED_SEQ 123u
#define MAN_LOST_TOTAL 4u
#define MAN_MAX_MEMORIES 2500u /* version 3; not the default, so the golden shows it */
#define MAN_GRACE_MS 604800000ull /* version 4: retain live:7d */
#define MAN_DROPPED_UPTO 42u      /* version 4 */
#define MAN_EVENTS_AGE 2592000000ull  /* version 4: events:30d */
#define MAN_EVENTS_BYTES (10ull << 30) /* version 4: events:10GiB */
#define MAN_DEATHS_DROPPED 17u         /* version 5 */
#define MAN_REFLECT 120u               /* version 6: not the defaults */
#define MAN_CORE 6000u
#define MAN_SECTION 1500u
/* version 7: two named record types */
static const manifest_type man_types[] = {{0x8000, "tool_call"}, {0x8001, "commit.pushed"}};
static const uint8_t man_store_id[16] = {0x5c, 0x1a, 0x7e, 0x01, 0x02, 0x03, 0x04, 0x05,
                                         0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0xd0};
/* The binding block of the derived-file goldens (logbind.h). */
#define GOLD_ANCHOR_SUM 0x0123456789abcdefull

/* The sealed golden (sealed-v1.seg): a log segment of SEALS_N records,
 * about 80 KiB raw, so two blocks. */
#define SEALS_ID 2u
#define SEALS_SALT 0xfedcba9876543210ull
#define SEALS_BASE 101u
#define SEALS_CREATED 1700000060000ll
#define SEALS_N 90u
/* The sealed golden of version 3 (sealed-v3.seg): the first SEALS3_N
 * records of the same source, about 350 KiB raw, enough to train the
 * file's dictionary (SEAL_DICT_MIN_RAW). */
#define SEALS3_N 400u

/* The access side file golden (access-v1.bin): a header and three entries. */
#define ACC_GOLD_FILE_ID 0x5eed0fca1a5a17edull
static const struct {
    uint64_t seq;
    int64_t at;
} acc_entries[] = {{2, 1700000360000ll}, {5, 1700000360000ll}, {2, 1700000420000ll}};
#define ACC_GOLD_N (sizeof acc_entries / sizeof acc_entries[0])

/* The KEYS golden (keys-v1.bin): its first 4096 bytes (header, counts,
 * reserved), as a writer leaves them after 8 stores in two namespaces
 * (the sets after them are zeros but for those keys: not pinned). */
#define KEYS_GOLD_BOOT 0xb007b007b007b007ull
#define KEYS_GOLD_BASE 42u
#define KEYS_GOLD_COVERED 50u

static const char *golden_dir(void)
{
    const char *d = getenv("CAIRN_GOLDEN_DIR");
    return d && *d ? d : "tests/golden";
}

/* ------------------------------------------------------------------------
 * Producers: each builds one golden's bytes from the fixed inputs.
 * ---------------------------------------------------------------------- */

static uint8_t *make_record(size_t *len)
{
    cairn_entry e = {CAIRN_REC_EVENT, rec_ns,  sizeof rec_ns - 1, rec_json,
                     sizeof rec_json - 1, rec_bin, sizeof rec_bin};
    uint8_t *buf;
    assert_int_equal(cairn__record_size(&e, len), CAIRN_OK);
    buf = malloc(*len);
    assert_non_null(buf);
    cairn__record_encode(buf, &e, REC_SEQ, REC_TS, REC_SALT);
    return buf;
}

/* Text of the json payload of record k of the sealed source segment:
 * compressible and of varied length. */
static size_t seals_json(char *out, size_t cap, unsigned k)
{
    static const char words[] = "the agent observed the tool output and noted the result ";
    size_t n = (size_t)snprintf(out, cap, "{\"i\":%u,\"text\":\"", k);
    size_t want = 600 + (k * 37u) % 500u;
    while (n < want && n + 1 < cap) {
        out[n] = words[(n + k) % (sizeof words - 1)];
        n++;
    }
    n += (size_t)snprintf(out + n, cap - n, "\"}");
    return n;
}

static void seals_entry(unsigned k, cairn_entry *e, char *json, size_t cap, uint8_t *bin)
{
    static const char *const nss[] = {"agent/alpha", "agent/beta", ""};
    memset(e, 0, sizeof *e);
    e->type = k % 7 == 3 ? 0x8001u : CAIRN_REC_EVENT;
    e->ns = nss[k % 3];
    e->ns_len = strlen(e->ns);
    e->json = json;
    e->json_len = seals_json(json, cap, k);
    if (k % 10 == 9) {
        for (unsigned i = 0; i < 16; i++)
            bin[i] = (uint8_t)(k * 16 + i);
        e->bin = bin;
        e->bin_len = 16;
    }
}

static int64_t seals_ts(unsigned k)
{
    return SEALS_CREATED + 1 + (int64_t)(k / 2) * 250; /* pairs share a timestamp */
}

static int open_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    return fd;
}

/* Append one encoded record at seg->end of a freshly created segment. */
static void seg_append(logseg *seg, const cairn_entry *e, uint64_t seq, int64_t ts)
{
    size_t len;
    uint8_t *buf;
    assert_int_equal(cairn__record_size(e, &len), CAIRN_OK);
    buf = malloc(len);
    assert_non_null(buf);
    cairn__record_encode(buf, e, seq, ts, seg->salt);
    assert_int_equal(pwrite(seg->fd, buf, len, (off_t)seg->end), (ssize_t)len);
    seg->end += len;
    free(buf);
}

/* segment-v1.log, built in dir with the engine's segment code. */
static void build_segl(const char *dir)
{
    int dfd = open_dir(dir);
    logseg seg;
    cairn__err e;
    assert_int_equal(cairn__logseg_create(cairn_io_default(), dfd, &seg, SEGL_ID, SEGL_SALT,
                                          SEGL_BASE, SEGL_CREATED, &e),
                     CAIRN_OK);
    for (size_t i = 0; i < SEGL_N; i++) {
        cairn_entry en = {segl_recs[i].type, segl_recs[i].ns, strlen(segl_recs[i].ns),
                          segl_recs[i].json, strlen(segl_recs[i].json),
                          segl_recs[i].bin_len ? rec_bin : NULL, segl_recs[i].bin_len};
        seg_append(&seg, &en, SEGL_BASE + i, segl_recs[i].ts);
    }
    cairn__logseg_free(cairn_io_default(), NULL, &seg);
    close(dfd);
}

static uint8_t *make_segl(size_t *len)
{
    char *dir = tu_mkdtemp("golden"), *path;
    uint8_t *b;
    assert_non_null(dir);
    build_segl(dir);
    path = tu_join(dir, "0000000000000001.log");
    b = tu_read_file(path, len);
    assert_non_null(b);
    free(path);
    tu_rmrf(dir);
    free(dir);
    return b;
}

static uint8_t *make_manifest(size_t *len)
{
    manifest m;
    uint8_t *b, *copy;
    memset(&m, 0, sizeof m);
    m.generation = MAN_GEN;
    m.next_id = MAN_NEXT_ID;
    m.segment_size = MAN_SEGSIZE;
    m.batch_ms = MAN_BATCH_MS;
    m.durability = (uint8_t)MAN_DURABILITY;
    memcpy(m.store_id, man_store_id, sizeof m.store_id);
    m.synced_seq = MAN_SYNCED_SEQ;
    m.lost_total = MAN_LOST_TOTAL;
    m.max_memories = MAN_MAX_MEMORIES;
    m.retain.memories = CAIRN_RETAIN_LIVE;
    m.retain.grace_ms = MAN_GRACE_MS;
    m.retain.events_max_age_ms = MAN_EVENTS_AGE;
    m.retain.events_max_bytes = MAN_EVENTS_BYTES;
    m.dropped_upto = MAN_DROPPED_UPTO;
    m.deaths_dropped = MAN_DEATHS_DROPPED;
    m.label_rule = MAN_LABELS_FOLDED;
    m.reflect_threshold = MAN_REFLECT;
    m.core_budget = MAN_CORE;
    m.core_section_budget = MAN_SECTION;
    m.types = (manifest_type *)(uintptr_t)man_types;
    m.n_types = 2;
    m.e = (manifest_entry *)(uintptr_t)man_entries;
    m.n = sizeof man_entries / sizeof man_entries[0];
    m.files = (manifest_file *)(uintptr_t)man_files;
    m.n_files = MAN_N_FILES;
    assert_int_equal(cairn__manifest_encode(&m, NULL, &b, len), CAIRN_OK);
    /* Hand back a malloc'd copy: the engine buffer belongs to its allocator. */
    copy = malloc(*len);
    assert_non_null(copy);
    memcpy(copy, b, *len);
    free(b);
    return copy;
}

/* The sealed source segment in dir, as <SEALS_ID>.log, of n records;
 * returns its bytes. */
static uint8_t *build_seals_log(const char *dir, unsigned n, size_t *len)
{
    int dfd = open_dir(dir);
    logseg seg;
    cairn__err e;
    char json[2048], name[LOGSEG_NAME_MAX], *path;
    uint8_t bin[16], *b;
    assert_int_equal(cairn__logseg_create(cairn_io_default(), dfd, &seg, SEALS_ID, SEALS_SALT,
                                          SEALS_BASE, SEALS_CREATED, &e),
                     CAIRN_OK);
    for (unsigned k = 0; k < n; k++) {
        cairn_entry en;
        seals_entry(k, &en, json, sizeof json, bin);
        seg_append(&seg, &en, SEALS_BASE + k, seals_ts(k));
    }
    cairn__logseg_free(cairn_io_default(), NULL, &seg);
    close(dfd);
    cairn__logseg_name(name, SEALS_ID, "log");
    path = tu_join(dir, name);
    b = tu_read_file(path, len);
    assert_non_null(b);
    free(path);
    return b;
}

/* The compacted golden (sealed-v3-compacted.seg; sealed-v2.seg, of the
 * same records, is the older form): the sealed golden's records with
 * two runs of them dropped as compaction drops them, one hole each: seqs
 * SEALS_BASE+3..+8 (the first a memory's going, one a derived file's
 * anchor) and the last two records. */
#define V2_REV 1u
#define V2_ANCHOR (SEALS_BASE + 5u)
static int v2_dropped(unsigned k)
{
    return (k >= 3 && k <= 8) || k >= SEALS_N - 2;
}

static uint8_t *make_compacted(size_t *len)
{
    char *dir = tu_mkdtemp("golden"), *path, fin[LOGSEG_NAME_MAX];
    int dfd = open_dir(dir);
    cairn__sealw w;
    cairn__holeb hb;
    cairn__err e;
    uint64_t fsize = 0;
    uint8_t bin[16], *b, *rec = NULL;
    char json[2048];

    memset(&hb, 0, sizeof hb);
    cairn__seg_file_name(fin, SEALS_ID, V2_REV);
    assert_int_equal(cairn__sealw_begin(&w, cairn_io_default(), NULL, dfd, fin, SEALS_ID,
                                        SEALS_SALT, SEALS_BASE, SEALS_CREATED, 1, NULL, 0, &e),
                     CAIRN_OK);
    for (unsigned k = 0; k <= SEALS_N; k++) {
        cairn_entry en;
        cairn_record r;
        size_t rl = 0, hl;
        uint64_t seq = SEALS_BASE + k;
        if (k < SEALS_N) {
            seals_entry(k, &en, json, sizeof json, bin);
            assert_int_equal(cairn__record_size(&en, &rl), CAIRN_OK);
            rec = realloc(rec, rl);
            cairn__record_encode(rec, &en, seq, seals_ts(k), SEALS_SALT);
            assert_int_equal(cairn__record_decode(rec, rl, SEALS_SALT, &r, &rl), REC_OK);
        }
        if (k < SEALS_N && v2_dropped(k)) {
            assert_int_equal(cairn__holeb_add(&hb, &r, rl, k == 3), CAIRN_OK);
            if (seq == V2_ANCHOR)
                assert_int_equal(cairn__holeb_anchor(&hb, seq, get_le64(rec + rl - 8)),
                                 CAIRN_OK);
            continue;
        }
        if (hb.h.records > 0) { /* the run ended: its hole */
            uint8_t *h = NULL;
            uint64_t hs = hb.h.seq, hu = hb.h.upto;
            int64_t hts = hb.ts;
            assert_int_equal(cairn__holeb_emit(&hb, SEALS_SALT, "retain live:0", &h, &hl),
                             CAIRN_OK);
            assert_int_equal(cairn__sealw_add(&w, h, hl, hs, hu, hts, &e), CAIRN_OK);
            free(h);
        }
        if (k < SEALS_N)
            assert_int_equal(cairn__sealw_add(&w, rec, rl, seq, seq, seals_ts(k), &e), CAIRN_OK);
    }
    cairn__holeb_free(&hb);
    free(rec);
    assert_int_equal(cairn__sealw_finish(&w, &fsize, &e), CAIRN_OK);
    close(dfd);
    path = tu_join(dir, fin);
    b = tu_read_file(path, len);
    assert_non_null(b);
    assert_int_equal(*len, fsize);
    free(path);
    tu_rmrf(dir);
    free(dir);
    return b;
}

/* Seal the source segment of n records with the engine; returns the .seg
 * bytes and (optionally) the source log bytes. */
static uint8_t *make_sealed(unsigned n, size_t *len, uint8_t **log_out, size_t *log_len)
{
    char *dir = tu_mkdtemp("golden"), *path, name[LOGSEG_NAME_MAX];
    uint8_t *log, *b;
    size_t loglen;
    int dfd;
    logseg seg;
    logseg_stop stop;
    cairn__err e;
    uint64_t fsize = 0;

    assert_non_null(dir);
    log = build_seals_log(dir, n, &loglen);
    dfd = open_dir(dir);
    assert_int_equal(cairn__logseg_open(cairn_io_default(), NULL, dfd, &seg, SEALS_ID, 1, &stop,
                                        &e),
                     CAIRN_OK);
    assert_int_equal(seg.n, n);
    assert_int_equal(stop.why, REC_END);
    assert_int_equal(cairn__seal_write(cairn_io_default(), NULL, dfd, &seg, NULL, 0, NULL, &fsize, &e),
                     CAIRN_OK);
    cairn__logseg_free(cairn_io_default(), NULL, &seg);
    close(dfd);
    cairn__logseg_name(name, SEALS_ID, "seg");
    path = tu_join(dir, name);
    b = tu_read_file(path, len);
    assert_non_null(b);
    assert_int_equal(*len, fsize);
    free(path);
    tu_rmrf(dir);
    free(dir);
    if (log_out != NULL) {
        *log_out = log;
        *log_len = loglen;
    } else {
        free(log);
    }
    return b;
}


/* The memory index golden: four memories in two namespaces, a text index
 * each, covering seq 50 (format-spec/memindex.md). The first three have
 * ids as cairn makes them, kept as 8 bytes; the fourth's, in capitals,
 * stays text. */
#define MX_COVERED 50u
#define MX_GOLDEN "mem-0000000000000032.cmx"

static const mx_row mx_rows[] = {
    {7, 0.5, 1700000000000ll, 1700000001000ll, 0, 2, 0x1111111111111111ull,
     "the deploy failed on friday", "m0000000000000001", "fact", NULL, 27, 0, 0, ""},
    {9, 0.875, 1700000002000ll, 1700000002000ll, 1800000000000ll, 0, 0x2222222222222222ull,
     "use a canary before every deploy", "m0000000000000002", "lesson",
     "{\"source\":\"retro\"}", 32, 1, 0, ""},
    {12, 0.25, 1700000003000ll, 1700000004000ll, 0, 1, 0x3333333333333333ull,
     "friday deploys need two reviewers", "m0000000000000003", "decision", NULL, 33, 0, 0, ""},
    {14, 0.5, 1700000005000ll, 1700000005000ll, 1900000000000ll, 0, 0x4444444444444444ull,
     "keep the release notes short", "M0000000000000004", "fact", NULL, 28, 1, 0, ""},
};

static uint64_t mx_hash_id(const char *id)
{
    return XXH3_64bits(id, strlen(id));
}

/* The golden's vectors (format 2): dim 4, one per memory; the second
 * memory of namespace "" has none. Stored scaled to unit length. */
#define MX_VEC_NAME "golden-embedder"
static const float mx_vecs[3][4] = {{3, 4, 0, 0}, {0, 0, 0, 0}, {1, -1, 1, -1}};

/* Write the golden into a fresh directory, return its bytes. */
/* The bytes of the file an encoder wrote into a temp dir; the dir goes. */
static uint8_t *take_file(char *dir, int dirfd, const char *name, size_t *len)
{
    char *path = tu_join(dir, name);
    uint8_t *b = tu_read_file(path, len);
    assert_non_null(b);
    close(dirfd);
    tu_rmrf(dir);
    free(path);
    free(dir);
    return b;
}

static uint8_t *make_memindex(size_t *len)
{
    char *dir = tu_mkdtemp("golden-mx");
    cairn__ramidx *x[2] = {NULL, NULL};
    cairn__vecset *v[2] = {NULL, NULL};
    mx_ns_in ns[2] = {{"", 2, NULL, NULL, 0, NULL, 0, NULL}, {"work", 2, NULL, NULL, 0, NULL, 0, NULL}};
    mx_in in;
    cairn__err e;
    uint8_t *b;
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);

    assert_true(dirfd >= 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(cairn__ramidx_new(&x[i], NULL, "english"), CAIRN_OK);
    for (size_t i = 0; i < sizeof mx_rows / sizeof mx_rows[0]; i++)
        assert_int_equal(cairn__ramidx_add(x[mx_rows[i].nsi], mx_rows[i].seq,
                                           (const uint8_t *)mx_rows[i].content, mx_rows[i].content_len),
                         CAIRN_OK);
    ns[0].idx = x[0];
    ns[1].idx = x[1];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(cairn__vecset_new(&v[i], MX_VEC_NAME, 4), CAIRN_OK);
        ns[i].vecs = &v[i];
        ns[i].n_vecs = 1;
    }
    /* memory 0 (ns "") and memory 1 (ns "work") have vectors; 2 has none */
    assert_int_equal(cairn__vecset_add(v[0], mx_rows[0].seq, mx_vecs[0]), CAIRN_OK);
    assert_int_equal(cairn__vecset_add(v[1], mx_rows[1].seq, mx_vecs[2]), CAIRN_OK);
    memset(&in, 0, sizeof in);
    in.covered = MX_COVERED;
    memcpy(in.bind.store_id, man_store_id, sizeof in.bind.store_id);
    in.bind.anchor_seq = MX_COVERED;
    in.bind.anchor_sum = GOLD_ANCHOR_SUM;
    in.skipped = 1;
    in.deleted = 4;
    in.stemmer = "english";
    in.ns = ns;
    in.n_ns = 2;
    in.rows = mx_rows;
    in.nrows = sizeof mx_rows / sizeof mx_rows[0];
    in.hash_id = mx_hash_id;
    if (cairn__mx_write(cairn_io_default(), dirfd, &in, &e) != CAIRN_OK)
        fail_msg("cairn__mx_write: %s", e.msg);
    b = take_file(dir, dirfd, MX_GOLDEN, len);
    cairn__ramidx_free(x[0]);
    cairn__ramidx_free(x[1]);
    cairn__vecset_free(v[0]);
    cairn__vecset_free(v[1]);
    return b;
}

/* ACCESS as recalls leave it: the header, then one entry per hit. */
static uint8_t *make_access(size_t *len)
{
    uint8_t *b;
    *len = ACC_HDR_SIZE + ACC_GOLD_N * ACC_ENTRY_SIZE;
    b = malloc(*len);
    assert_non_null(b);
    cairn__accfile_hdr_encode(b, ACC_GOLD_FILE_ID, man_store_id);
    for (size_t i = 0; i < ACC_GOLD_N; i++)
        cairn__accfile_entry_encode(b + ACC_HDR_SIZE + i * ACC_ENTRY_SIZE, ACC_GOLD_FILE_ID,
                                    acc_entries[i].seq, acc_entries[i].at);
    return b;
}

static uint8_t *make_keys(size_t *len)
{
    uint8_t *b = malloc(KEYS_OFF_TABLES);
    cairn__memkeys_core c;
    assert_non_null(b);
    cairn__keyfile_head_encode(b, KEYS_GOLD_BOOT, man_store_id, KEYS_SLOTS, KEYS_GOLD_BASE);
    memcpy(&c, b + KEYS_OFF_CORE, sizeof c);
    c.covered = KEYS_GOLD_COVERED;
    c.n = 8;
    c.n_ns = 2;
    c.ns_key[0] = cairn__memkeys_ns_key("", 0);
    c.ns_key[1] = cairn__memkeys_ns_key("agent", 5);
    c.ns_n[0] = 5;
    c.ns_n[1] = 3;
    memcpy(b + KEYS_OFF_CORE, &c, sizeof c);
    *len = KEYS_OFF_TABLES;
    return b;
}

/* ------------------------------------------------------------------------
 * Golden file access.
 * ---------------------------------------------------------------------- */

static uint8_t *read_golden(const char *name, size_t *len)
{
    char *path = tu_join(golden_dir(), name);
    uint8_t *b = tu_read_file(path, len);
    if (b == NULL)
        fail_msg("cannot read golden file %s (run from the repository root, or set "
                 "CAIRN_GOLDEN_DIR)", path);
    free(path);
    return b;
}

/* Compare with a golden; on a mismatch name the first differing offset. */
static void assert_same_bytes(const char *name, const uint8_t *got, size_t got_len,
                              const uint8_t *want, size_t want_len)
{
    size_t n = got_len < want_len ? got_len : want_len;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("%s: byte 0x%zx is 0x%02x, golden has 0x%02x: the on-disk format changed "
                     "(bump the format version, see format-spec/README.md)",
                     name, i, got[i], want[i]);
    if (got_len != want_len)
        fail_msg("%s: %zu bytes, golden has %zu", name, got_len, want_len);
}

/* ------------------------------------------------------------------------
 * Tests.
 * ---------------------------------------------------------------------- */

/* XXH3-64 (xxHash 0.8) is part of the format: pin it with the published
 * value for empty input and with values this spec quotes. */
static void test_xxh3_is_the_specified_hash(void **state)
{
    (void)state;
    assert_int_equal(XXH3_64bits("", 0), 0x2d06800538d394c2ull);
    assert_int_equal(XXH3_64bits("cairn", 5), 0x00192f3582df1eeeull);
    assert_int_equal(XXH3_64bits_withSeed("cairn", 5, 0x0123456789abcdefull),
                     0xdaad3f43d9856810ull);
}

/* What `make` writes today against the golden file, byte for byte. */
static void matches_golden(const char *golden, uint8_t *(*make)(size_t *len))
{
    size_t len, glen;
    uint8_t *b = make(&len), *g = read_golden(golden, &glen);
    assert_same_bytes(golden, b, len, g, glen);
    free(b);
    free(g);
}

static void test_record_encoding_matches_golden(void **state)
{
    (void)state;
    matches_golden("record-v1.bin", make_record);
}

static void test_record_golden_decodes_to_its_fields(void **state)
{
    size_t glen, len = 0;
    uint8_t *g;
    cairn_record r;
    (void)state;
    g = read_golden("record-v1.bin", &glen);
    assert_int_equal(glen, 40 + 11 + 7 + 8);
    assert_int_equal(get_le32(g + REC_OFF_LEN), glen);
    assert_int_equal(get_le32(g + REC_OFF_EPOCH), (uint32_t)REC_SALT);
    assert_int_equal(cairn__record_decode(g, glen, REC_SALT, &r, &len), REC_OK);
    assert_int_equal(len, glen);
    assert_int_equal(r.seq, REC_SEQ);
    assert_int_equal(r.ts_ms, REC_TS);
    assert_int_equal(r.type, CAIRN_REC_EVENT);
    assert_int_equal(r.ns_len, 11);
    assert_memory_equal(r.ns, rec_ns, 11);
    assert_int_equal(r.json_len, 7);
    assert_memory_equal(r.json, rec_json, 7);
    assert_int_equal(r.bin_len, 8);
    assert_memory_equal(r.bin, rec_bin, 8);
    /* The checksum is XXH3-64 of [0, len-8) seeded with the full salt. */
    assert_int_equal(get_le64(g + glen - 8), XXH3_64bits_withSeed(g, glen - 8, REC_SALT));
    /* Another salt with the same low half: checksum mismatch; other epoch: stale. */
    assert_int_equal(cairn__record_decode(g, glen, REC_SALT ^ (1ull << 40), &r, &len),
                     REC_BAD_SUM);
    assert_int_equal(cairn__record_decode(g, glen, REC_SALT ^ 1u, &r, &len), REC_BAD_EPOCH);
    /* Every proper prefix is a torn record (or too short to be one). */
    for (size_t cut = 4; cut < glen; cut++)
        assert_int_equal(cairn__record_decode(g, cut, REC_SALT, &r, &len), REC_TRUNCATED);
    free(g);
}

static void test_segment_encoding_matches_golden(void **state)
{
    (void)state;
    matches_golden("segment-v1.log", make_segl);
}

static void test_segment_golden_scans_to_its_records(void **state)
{
    size_t glen;
    uint8_t *g, h[FILEHDR_SIZE];
    char *dir = tu_mkdtemp("golden"), *path;
    logseg seg;
    logseg_stop stop;
    cairn__err e;
    uint64_t off = FILEHDR_SIZE;
    int dfd;
    (void)state;

    g = read_golden("segment-v1.log", &glen);
    /* The header, field by field. */
    assert_memory_equal(g, "CAIRNLOG", 8);
    assert_int_equal(get_le16(g + 8), 1);
    assert_int_equal(get_le16(g + 10), 64);
    assert_int_equal(get_le32(g + 12), 0);
    assert_int_equal(get_le64(g + 16), SEGL_ID);
    assert_int_equal(get_le64(g + 24), SEGL_SALT);
    assert_int_equal(get_le64(g + 32), SEGL_BASE);
    assert_int_equal(get_le64(g + 40), (uint64_t)SEGL_CREATED);
    assert_int_equal(get_le64(g + 48), 0);
    assert_int_equal(get_le64(g + 56), XXH3_64bits(g, 56));
    cairn__logseg_header_encode(h, SEGL_ID, SEGL_SALT, SEGL_BASE, SEGL_CREATED);
    assert_memory_equal(h, g, FILEHDR_SIZE);

    /* The engine's scanner reads it back whole. */
    assert_non_null(dir);
    path = tu_join(dir, "0000000000000001.log");
    assert_int_equal(tu_write_file(path, g, glen), 0);
    dfd = open_dir(dir);
    assert_int_equal(cairn__logseg_open(cairn_io_default(), NULL, dfd, &seg, SEGL_ID, 1, &stop,
                                        &e),
                     CAIRN_OK);
    assert_int_equal(stop.why, REC_END);
    assert_int_equal(stop.offset, glen);
    assert_int_equal(seg.end, glen);
    assert_int_equal(seg.n, SEGL_N);
    assert_int_equal(seg.salt, SEGL_SALT);
    assert_int_equal(seg.base_seq, SEGL_BASE);
    assert_int_equal(seg.created_ms, SEGL_CREATED);
    for (size_t i = 0; i < SEGL_N; i++) {
        cairn_record r;
        size_t len;
        assert_int_equal(seg.off[i], off);
        assert_int_equal(cairn__record_decode(g + off, glen - off, SEGL_SALT, &r, &len), REC_OK);
        assert_int_equal(r.seq, SEGL_BASE + i);
        assert_int_equal(r.ts_ms, segl_recs[i].ts);
        assert_int_equal(r.type, segl_recs[i].type);
        assert_int_equal(r.ns_len, strlen(segl_recs[i].ns));
        assert_memory_equal(r.ns, segl_recs[i].ns, r.ns_len);
        assert_int_equal(r.json_len, strlen(segl_recs[i].json));
        assert_memory_equal(r.json, segl_recs[i].json, r.json_len);
        assert_int_equal(r.bin_len, segl_recs[i].bin_len);
        assert_int_equal(len, 40 + r.ns_len + r.json_len + r.bin_len);
        off += len;
    }
    assert_int_equal(off, glen);
    cairn__logseg_free(cairn_io_default(), NULL, &seg);
    close(dfd);
    free(path);
    tu_rmrf(dir);
    free(dir);
    free(g);
}

static void test_manifest_encoding_matches_golden(void **state)
{
    (void)state;
    matches_golden("manifest-v9.bin", make_manifest);
}

/* Version 5 (deaths_dropped), version 4 (retention, compacted segments), version 3 (the store block
 * with max_memories), version 2 (without it: the old default limit) and
 * version 1 (no store block: a store id of zeros, synced_seq 0) decode to
 * the same entries. */
static void manifest_golden_decodes(const char *golden, unsigned version)
{
    size_t glen, n = sizeof man_entries / sizeof man_entries[0];
    size_t block = version >= 7   ? 112
                   : version == 6 ? 104
                   : version == 5 ? 88
                   : version == 4 ? 80
                   : version == 3 ? 40
                   : version == 2 ? 32
                                  : 0;
    uint8_t *g;
    manifest m;
    cairn__err e;
    g = read_golden(golden, &glen);
    assert_int_equal(glen, 64 + block + n * (version >= 8 ? 88 : 56) +
                               (version >= 7 ? 2 * 72 : 0) + (version >= 9 ? MAN_N_FILES * 32 : 0) +
                               8);
    assert_memory_equal(g, "CAIRNMAN", 8);
    assert_int_equal(get_le16(g + 8), version);
    assert_int_equal(get_le32(g + 48), n);
    assert_int_equal(get_le32(g + 52), version >= 8 ? 88 : 56);
    assert_int_equal(get_le64(g + 56), XXH3_64bits(g, 56));
    assert_int_equal(get_le64(g + glen - 8), XXH3_64bits(g, glen - 8));
    assert_int_equal(cairn__manifest_decode(g, glen, NULL, &m, &e), CAIRN_OK);
    assert_int_equal(m.generation, MAN_GEN);
    assert_int_equal(m.next_id, MAN_NEXT_ID);
    assert_int_equal(m.segment_size, MAN_SEGSIZE);
    assert_int_equal(m.batch_ms, MAN_BATCH_MS);
    assert_int_equal(m.durability, MAN_DURABILITY);
    assert_int_equal(m.version, version);
    if (version >= 2) {
        assert_memory_equal(g + 64, man_store_id, 16);
        assert_memory_equal(m.store_id, man_store_id, 16);
        assert_int_equal(get_le64(g + 80), MAN_SYNCED_SEQ);
        assert_int_equal(m.synced_seq, MAN_SYNCED_SEQ);
        assert_int_equal(get_le64(g + 88), MAN_LOST_TOTAL);
        assert_int_equal(m.lost_total, MAN_LOST_TOTAL);
    } else {
        assert_true(cairn__store_id_is_zero(m.store_id));
        assert_int_equal(m.synced_seq, 0);
    }
    if (version >= 3) {
        assert_int_equal(get_le64(g + 96), MAN_MAX_MEMORIES);
        assert_int_equal(m.max_memories, MAN_MAX_MEMORIES);
    } else {
        assert_int_equal(m.max_memories, 10000); /* the limit before the setting */
    }
    if (version >= 4) {
        assert_int_equal(get_le32(g + 104), CAIRN_RETAIN_LIVE);
        assert_int_equal(m.retain.memories, CAIRN_RETAIN_LIVE);
        assert_int_equal(get_le64(g + 112), MAN_GRACE_MS);
        assert_int_equal(m.retain.grace_ms, MAN_GRACE_MS);
        assert_int_equal(get_le64(g + 120), MAN_DROPPED_UPTO);
        assert_int_equal(m.dropped_upto, MAN_DROPPED_UPTO);
        assert_int_equal(get_le64(g + 128), MAN_EVENTS_AGE);
        assert_int_equal(m.retain.events_max_age_ms, MAN_EVENTS_AGE);
        assert_int_equal(get_le64(g + 136), MAN_EVENTS_BYTES);
        assert_int_equal(m.retain.events_max_bytes, MAN_EVENTS_BYTES);
        assert_int_equal(get_le32(g + 64 + block + 12), 2); /* entry 0's rev */
    } else {
        assert_int_equal(m.retain.memories, CAIRN_RETAIN_ALL); /* every record kept */
        assert_int_equal(m.retain.events_max_age_ms, 0);
        assert_int_equal(m.retain.events_max_bytes, 0);
        assert_int_equal(m.dropped_upto, 0);
    }
    if (version >= 5) {
        assert_int_equal(get_le64(g + 144), MAN_DEATHS_DROPPED);
        assert_int_equal(m.deaths_dropped, MAN_DEATHS_DROPPED);
    } else {
        assert_int_equal(m.deaths_dropped, 0); /* none known */
    }
    if (version >= 6) {
        assert_int_equal(get_le32(g + 152), MAN_LABELS_FOLDED);
        assert_int_equal(m.label_rule, MAN_LABELS_FOLDED);
        assert_int_equal(get_le32(g + 156), MAN_REFLECT);
        assert_int_equal(m.reflect_threshold, MAN_REFLECT);
        assert_int_equal(get_le32(g + 160), MAN_CORE);
        assert_int_equal(m.core_budget, MAN_CORE);
        assert_int_equal(get_le32(g + 164), MAN_SECTION);
        assert_int_equal(m.core_section_budget, MAN_SECTION);
        if (version >= 7) {
            size_t t0 = 64 + block + n * (version >= 8 ? 88 : 56);
            assert_int_equal(get_le32(g + 168), 2);
            assert_int_equal(m.n_types, 2);
            assert_int_equal(get_le16(g + t0), 0x8000);
            assert_int_equal(g[t0 + 2], 9);
            assert_memory_equal(g + t0 + 8, "tool_call", 9);
            assert_string_equal(m.types[1].name, "commit.pushed");
            assert_int_equal(m.types[1].type, 0x8001);
        } else {
            assert_int_equal(m.n_types, 0);
        }
        if (version >= 9) { /* the derived files, after the named types */
            const uint8_t *f = g + 64 + block + n * 88 + 2 * 72;
            assert_int_equal(get_le32(g + 172), MAN_N_FILES);
            assert_int_equal(m.n_files, MAN_N_FILES);
            for (size_t i = 0; i < MAN_N_FILES; i++, f += 32) {
                assert_int_equal(f[0], man_files[i].kind);
                assert_int_equal(get_le64(f + 8), man_files[i].seq);
                assert_int_equal(get_le64(f + 16), man_files[i].len);
                assert_int_equal(get_le64(f + 24), man_files[i].sum);
                assert_int_equal(m.files[i].kind, man_files[i].kind);
                assert_int_equal(m.files[i].seq, man_files[i].seq);
                assert_int_equal(m.files[i].len, man_files[i].len);
                assert_int_equal(m.files[i].sum, man_files[i].sum);
            }
            assert_int_equal((size_t)(f + 8 - g), glen);
        } else {
            assert_int_equal(m.n_files, 0); /* the directory was the list */
        }
    } else { /* labels as they were compared, the tiers' defaults */
        assert_int_equal(m.label_rule, MAN_LABELS_EXACT);
        assert_int_equal(m.reflect_threshold, 150);
        assert_int_equal(m.core_budget, 8000);
        assert_int_equal(m.core_section_budget, 2000);
    }
    assert_int_equal(m.n, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(m.e[i].id, man_entries[i].id);
        assert_int_equal(m.e[i].kind, man_entries[i].kind);
        assert_int_equal(m.e[i].base_seq, man_entries[i].base_seq);
        assert_int_equal(m.e[i].last_seq, man_entries[i].last_seq);
        assert_int_equal(m.e[i].count, man_entries[i].count);
        assert_int_equal(m.e[i].first_ts, man_entries[i].first_ts);
        assert_int_equal(m.e[i].last_ts, man_entries[i].last_ts);
        assert_int_equal(m.e[i].rev, version >= 4 ? man_entries[i].rev : 0);
        assert_int_equal(m.e[i].chained, version >= 8 ? man_entries[i].chained : 0);
        if (version >= 8) {
            const uint8_t *x = g + 64 + block + i * 88;
            assert_int_equal(x[9], man_entries[i].chained);
            assert_memory_equal(x + 56, man_entries[i].chain, 32);
            assert_memory_equal(m.e[i].chain, man_entries[i].chain, 32);
        }
    }
    cairn__manifest_free(NULL, &m);
    free(g);
}

static void test_manifest_golden_decodes_to_its_entries(void **state)
{
    (void)state;
    manifest_golden_decodes("manifest-v9.bin", 9);
}

static void test_manifest_v8_golden_still_decodes_without_a_file_list(void **state)
{
    (void)state;
    manifest_golden_decodes("manifest-v8.bin", 8);
}

static void test_manifest_v7_golden_still_decodes_without_chain_values(void **state)
{
    (void)state;
    manifest_golden_decodes("manifest-v7.bin", 7);
}

static void test_manifest_v6_golden_still_decodes_without_named_types(void **state)
{
    (void)state;
    manifest_golden_decodes("manifest-v6.bin", 6);
}

static void test_manifest_v5_golden_still_decodes_with_exact_labels(void **state)
{
    (void)state;
    manifest_golden_decodes("manifest-v5.bin", 5);
}

static void test_manifest_v4_golden_still_decodes_without_deaths_dropped(void **state)
{
    (void)state;
    manifest_golden_decodes("manifest-v4.bin", 4);
}

static void test_manifest_v3_golden_still_decodes_keeping_everything(void **state)
{
    (void)state;
    manifest_golden_decodes("manifest-v3.bin", 3);
}

static void test_manifest_v2_golden_still_decodes_with_the_old_limit(void **state)
{
    (void)state;
    manifest_golden_decodes("manifest-v2.bin", 2);
}

static void test_manifest_v1_golden_still_decodes(void **state)
{
    (void)state;
    manifest_golden_decodes("manifest-v1.bin", 1);
}

static unsigned long golden_zstd_version(void)
{
    size_t len;
    char *path = tu_join(golden_dir(), "sealed-v1.zstd-version");
    uint8_t *b = tu_read_file(path, &len);
    unsigned long v = 0;
    free(path);
    if (b == NULL)
        return 0;
    for (size_t i = 0; i < len && b[i] >= '0' && b[i] <= '9'; i++)
        v = v * 10 + (unsigned long)(b[i] - '0');
    free(b);
    return v;
}

/* Fields of a sealed file that do not depend on the compressor's output:
 * the header, and per block raw_len, seqs, timestamps, count, reserved. */
static void assert_same_sealed_structure(const uint8_t *a, size_t alen, const uint8_t *b,
                                         size_t blen)
{
    sealed_seg sa, sb;
    cairn__err e;
    assert_int_equal(cairn__sealed_open(a, alen, &sa, "new", &e), CAIRN_OK);
    assert_int_equal(cairn__sealed_open(b, blen, &sb, "golden", &e), CAIRN_OK);
    assert_memory_equal(a, b, FILEHDR_SIZE);
    assert_int_equal(sa.block_count, sb.block_count);
    assert_int_equal(sa.record_count, sb.record_count);
    assert_int_equal(sa.first_seq, sb.first_seq);
    assert_int_equal(sa.last_seq, sb.last_seq);
    assert_int_equal(sa.raw_bytes, sb.raw_bytes);
    for (uint32_t i = 0; i < sa.block_count; i++) {
        sealed_block x, y;
        cairn__sealed_block(&sa, i, &x);
        cairn__sealed_block(&sb, i, &y);
        assert_int_equal(x.raw_len, y.raw_len);
        assert_int_equal(x.first_seq, y.first_seq);
        assert_int_equal(x.last_seq, y.last_seq);
        assert_int_equal(x.first_ts, y.first_ts);
        assert_int_equal(x.last_ts, y.last_ts);
        assert_int_equal(x.count, y.count);
    }
}

static void test_sealed_encoding_matches_golden(void **state)
{
    size_t len, glen, loglen;
    uint8_t *b, *g, *log;
    unsigned long want = golden_zstd_version();
    (void)state;
    b = make_sealed(SEALS3_N, &len, &log, &loglen);
    g = read_golden("sealed-v3.seg", &glen);
    assert_same_sealed_structure(b, len, g, glen);
    if (want == ZSTD_versionNumber())
        assert_same_bytes("sealed-v3.seg", b, len, g, glen);
    else
        print_message("note: zstd %u differs from the golden's %lu: compared the sealed "
                      "structure and inflated blocks, not the compressed bytes\n",
                      ZSTD_versionNumber(), want);
    free(b);
    free(g);
    free(log);
}

static void count_problem(void *user, uint64_t off, int code, const char *msg)
{
    (void)off, (void)code, (void)msg;
    (*(int *)user)++;
}

static void test_compacted_encoding_matches_golden(void **state)
{
    size_t len, glen;
    uint8_t *b, *g;
    unsigned long want = golden_zstd_version();
    (void)state;
    b = make_compacted(&len);
    g = read_golden("sealed-v3-compacted.seg", &glen);
    assert_same_sealed_structure(b, len, g, glen);
    if (want == ZSTD_versionNumber())
        assert_same_bytes("sealed-v3-compacted.seg", b, len, g, glen);
    free(b);
    free(g);
}

/* A compacted golden reads back: the seqs of the source, its kept
 * records byte for byte, two holes that stand for the dropped runs (the
 * first with a death and an anchor), and verify finds nothing. */
static void compacted_golden_decodes(const char *name, unsigned version)
{
    size_t glen, cap = 0, raw_len, holes = 0, kept = 0;
    uint8_t *g, *raw = NULL;
    sealed_seg s;
    cairn__err e;
    uint64_t want = SEALS_BASE, sum = 0;
    int n = 0;

    g = read_golden(name, &glen);
    assert_int_equal(get_le16(g + 8), version);
    assert_int_equal(cairn__sealed_open(g, glen, &s, name, &e), CAIRN_OK);
    assert_int_equal(s.version, version);
    assert_int_equal(s.base_seq, SEALS_BASE);
    assert_int_equal(cairn__sealed_span(&s), SEALS_N);
    assert_int_equal(s.record_count, SEALS_N - 8 + 2);
    for (uint32_t i = 0; i < s.block_count; i++) {
        size_t pos = 0;
        assert_int_equal(cairn__sealed_read_block(&s, i, NULL, &raw, &cap, &raw_len, name, &e),
                         CAIRN_OK);
        while (pos < raw_len) {
            cairn_record r;
            size_t rl;
            assert_int_equal(cairn__record_decode(raw + pos, raw_len - pos, s.salt, &r, &rl),
                             REC_OK);
            assert_int_equal(r.seq, want);
            if (r.type == CAIRN_REC_COMPACTED) {
                cairn__hole h;
                assert_int_equal(cairn__hole_decode(r.json, r.json_len, r.seq, &h, &e),
                                 CAIRN_OK);
                assert_true(v2_dropped((unsigned)(r.seq - SEALS_BASE)));
                assert_int_equal(h.records, h.upto - h.seq + 1);
                assert_int_equal(h.deaths, holes == 0 ? 1 : 0);
                assert_int_equal(cairn__hole_anchor(r.json, r.json_len, V2_ANCHOR, &sum),
                                 holes == 0);
                want = h.upto + 1;
                holes++;
            } else {
                assert_false(v2_dropped((unsigned)(r.seq - SEALS_BASE)));
                assert_int_equal(r.ts_ms, seals_ts((unsigned)(r.seq - SEALS_BASE)));
                want++;
                kept++;
            }
            pos += rl;
        }
    }
    assert_int_equal(holes, 2);
    assert_int_equal(kept, SEALS_N - 8);
    assert_int_equal(want, SEALS_BASE + SEALS_N);
    assert_int_equal(cairn__sealed_verify(g, glen, NULL, name, count_problem, &n), 0);
    assert_int_equal(n, 0);
    free(raw);
    free(g);
}

static void test_compacted_golden_decodes_to_kept_records_and_holes(void **state)
{
    (void)state;
    compacted_golden_decodes("sealed-v3-compacted.seg", 3);
}

static void test_compacted_v2_golden_still_decodes(void **state)
{
    (void)state;
    compacted_golden_decodes("sealed-v2.seg", 2);
}

/* A sealed golden of n records reads back to the source log's records,
 * block by block, with every field of its header, dictionary section (in
 * version 3), index and footer as the spec has them. */
static void sealed_golden_decodes(const char *name, unsigned n, unsigned version)
{
    size_t glen, loglen, cap = 0, raw_len, blen;
    uint8_t *g, *log, *raw = NULL, *b;
    sealed_seg s;
    cairn__err e;
    uint64_t pos = FILEHDR_SIZE, logpos = FILEHDR_SIZE, seq = SEALS_BASE, raw_total = 0;

    g = read_golden(name, &glen);
    b = make_sealed(n, &blen, &log, &loglen);
    free(b);
    /* Header: as the .log header, with magic CAIRNSEG. */
    assert_memory_equal(g, "CAIRNSEG", 8);
    assert_int_equal(get_le16(g + 8), version);
    assert_int_equal(get_le16(g + 10), 64);
    assert_int_equal(get_le32(g + 12), 0);
    assert_memory_equal(g + 16, log + 16, 40); /* id, salt, base_seq, created, reserved */
    assert_int_equal(get_le64(g + 56), XXH3_64bits(g, 56));

    assert_int_equal(cairn__sealed_open(g, glen, &s, name, &e), CAIRN_OK);
    if (version >= 3) {
        /* the dictionary section: its length, a zero, its sum, its bytes
         * (a zstd dictionary: magic 0xEC30A437) */
        assert_true(get_le32(g + 64) > 0 && get_le32(g + 64) <= SEAL_DICT_TRAIN);
        assert_int_equal(get_le32(g + 68), 0);
        assert_int_equal(get_le64(g + 72), XXH3_64bits(g + 80, get_le32(g + 64)));
        assert_int_equal(get_le32(g + 80), 0xEC30A437u);
        assert_int_equal(s.dict_len, get_le32(g + 64));
        pos += SEAL_DICT_HEAD + s.dict_len;
    } else {
        assert_int_equal(s.dict_len, 0);
    }
    assert_int_equal(s.id, SEALS_ID);
    assert_int_equal(s.salt, SEALS_SALT);
    assert_int_equal(s.base_seq, SEALS_BASE);
    assert_int_equal(s.created_ms, SEALS_CREATED);
    assert_int_equal(s.record_count, n);
    assert_int_equal(s.first_seq, SEALS_BASE);
    assert_int_equal(s.last_seq, SEALS_BASE + n - 1);
    assert_int_equal(s.raw_bytes, loglen - FILEHDR_SIZE);
    assert_true(s.block_count >= 2); /* the golden exercises a block boundary */
    /* Footer, field by field. */
    {
        const uint8_t *f = g + glen - SEAL_FOOTER_SIZE;
        assert_memory_equal(f, "CAIRNEND", 8);
        assert_int_equal(get_le64(f + 8), s.index_off);
        assert_int_equal(get_le32(f + 16), s.block_count);
        assert_int_equal(get_le32(f + 20), 0);
        assert_int_equal(get_le64(f + 56),
                         XXH3_64bits(g + s.index_off, (size_t)s.block_count * SEAL_INDEX_ENTRY));
        assert_int_equal(get_le64(f + 64), XXH3_64bits(f, 64));
        assert_int_equal(get_le64(f + 72), XXH3_64bits(g, glen - 8));
        assert_int_equal(s.index_off + (uint64_t)s.block_count * SEAL_INDEX_ENTRY +
                             SEAL_FOOTER_SIZE,
                         glen);
    }
    /* Each block: contiguous frames, and it inflates to exactly the bytes of
     * its records in the .log, which are never split across blocks. */
    for (uint32_t i = 0; i < s.block_count; i++) {
        sealed_block bl;
        cairn__sealed_block(&s, i, &bl);
        assert_int_equal(bl.offset, pos);
        assert_int_equal(bl.first_seq, seq);
        assert_int_equal(bl.count, bl.last_seq - bl.first_seq + 1);
        assert_true(bl.raw_len <= cairn__seal_block_target(s.dict_len));
        assert_int_equal(bl.sum, XXH3_64bits(g + bl.offset, bl.comp_len));
        assert_int_equal(get_le32(g + s.index_off + (uint64_t)i * SEAL_INDEX_ENTRY + 52), 0);
        assert_int_equal(cairn__sealed_read_block(&s, i, NULL, &raw, &cap, &raw_len, name, &e),
                         CAIRN_OK);
        assert_int_equal(raw_len, bl.raw_len);
        assert_true(logpos + raw_len <= loglen);
        assert_memory_equal(raw, log + logpos, raw_len);
        for (size_t p = 0; p < raw_len;) {
            cairn_record r;
            size_t rl;
            assert_int_equal(cairn__record_decode(raw + p, raw_len - p, SEALS_SALT, &r, &rl),
                             REC_OK);
            assert_int_equal(r.seq, seq);
            assert_int_equal(r.ts_ms, seals_ts((unsigned)(seq - SEALS_BASE)));
            if (r.seq == bl.first_seq)
                assert_int_equal(r.ts_ms, bl.first_ts);
            if (r.seq == bl.last_seq)
                assert_int_equal(r.ts_ms, bl.last_ts);
            p += rl;
            seq++;
        }
        assert_int_equal(seq, bl.last_seq + 1);
        pos += bl.comp_len;
        logpos += raw_len;
        raw_total += raw_len;
    }
    assert_int_equal(pos, s.index_off);
    assert_int_equal(logpos, loglen);
    assert_int_equal(raw_total, s.raw_bytes);
    assert_int_equal(seq, SEALS_BASE + n);
    free(raw);
    free(log);
    free(g);
}

static void test_sealed_golden_decodes_to_the_log_records(void **state)
{
    (void)state;
    sealed_golden_decodes("sealed-v3.seg", SEALS3_N, 3);
}

static void test_sealed_v1_golden_still_decodes(void **state)
{
    (void)state;
    sealed_golden_decodes("sealed-v1.seg", SEALS_N, 1);
}

static void test_sealed_golden_verifies_clean(void **state)
{
    static const char *const names[] = {"sealed-v3.seg", "sealed-v3-compacted.seg",
                                        "sealed-v1.seg", "sealed-v2.seg"};
    (void)state;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t glen;
        uint8_t *g = read_golden(names[i], &glen);
        int n = 0;
        assert_int_equal(cairn__sealed_verify(g, glen, NULL, names[i], count_problem, &n), 0);
        assert_int_equal(n, 0);
        free(g);
    }
}

/* ------------------------------------------------------------------------
 * Regeneration.
 * ---------------------------------------------------------------------- */


static void test_memindex_encoding_matches_golden(void **state)
{
    (void)state;
    matches_golden("memindex-v10.cmx", make_memindex);
}

/* Does b hold the bytes of s anywhere? */
static int holds_bytes(const uint8_t *b, size_t len, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; n <= len && i <= len - n; i++)
        if (memcmp(b + i, s, n) == 0)
            return 1;
    return 0;
}

/* Read the memory index golden back. */
static void test_memindex_golden_reads_back(void **state)
{
    const char *golden = "memindex-v10.cmx";
    char *dir = tu_mkdtemp("golden-mx-read"), *path = tu_join(dir, MX_GOLDEN);
    size_t glen;
    uint8_t *g = read_golden(golden, &glen);
    memindex mx;
    cairn__err e;
    uint64_t off = 0;
    int dirfd;
    (void)state;

    assert_int_equal(tu_write_file(path, g, glen), 0);
    dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(dirfd >= 0);
    /* not when the log ends before the covered seq */
    assert_int_equal(cairn__mx_open(&mx, cairn_io_default(), dirfd, MX_COVERED - 1, 0, &e), CAIRN_ENOTFOUND);
    if (cairn__mx_open(&mx, cairn_io_default(), dirfd, MX_COVERED, 0, &e) != CAIRN_OK)
        fail_msg("cairn__mx_open: %s", e.msg);
    assert_int_equal(mx.covered, MX_COVERED);
    assert_int_equal(mx.skipped, 1);
    assert_int_equal(mx.deleted, 4);
    assert_int_equal(mx.nrows, 4);
    assert_int_equal(mx.n_ns, 2);
    assert_string_equal(mx.stemmer, "english");
    assert_int_equal(mx.version, 10);
    assert_int_equal(mx.base, 0);
    assert_int_equal(mx.n_shadow, 0);
    assert_memory_equal(g + MX_BIND_OFF, man_store_id, 16);
    assert_memory_equal(mx.bind.store_id, man_store_id, 16);
    assert_int_equal(mx.bind.anchor_seq, MX_COVERED);
    assert_int_equal(mx.bind.anchor_sum, GOLD_ANCHOR_SUM);
    /* the common file header: its fields, its sum, then the memory index
     * header's sum */
    assert_memory_equal(g, "CAIRNMX1", 8);
    assert_int_equal(get_le16(g + 8), 10);
    assert_int_equal(get_le16(g + 10), 64);
    assert_int_equal(get_le32(g + 12), 0);
    assert_int_equal(get_le64(g + 16), MX_COVERED);
    assert_int_equal(get_le64(g + 24), 0);
    assert_int_equal(get_le64(g + 32), glen);
    assert_int_equal(get_le64(g + 40), 4);
    assert_int_equal(get_le64(g + 56), XXH3_64bits(g, 56));
    assert_int_equal(get_le64(g + 48), XXH3_64bits(g + 64, MX_HEAD_LEN - 64));
    assert_int_equal(cairn__filehdr_check(g, glen, "CAIRNMX1", 10, "golden", &e), CAIRN_OK);
    /* a checkpoint's file is synced: unsynced_boot 0 */
    assert_int_equal(get_le64(g + 192), 0);
    assert_int_equal(mx.unsynced_boot, 0);
    /* the same bytes naming a boot, under remade sums: read as such */
    {
        uint8_t *u = malloc(glen);
        memindex um;
        assert_non_null(u);
        memcpy(u, g, glen);
        put_le64(u + 192, 0x0123456789abcdefull);
        put_le64(u + 48, XXH3_64bits(u + 64, MX_HEAD_LEN - 64));
        put_le64(u + 56, XXH3_64bits(u, 56));
        um.map = u;
        um.len = glen;
        snprintf(um.name, sizeof um.name, "unsynced");
        if (cairn__mx_parse(&um, &e) != CAIRN_OK)
            fail_msg("cairn__mx_parse: %s", e.msg);
        assert_int_equal(um.unsynced_boot, 0x0123456789abcdefull);
        assert_int_equal(um.nrows, 4);
        free(u);
    }
    for (size_t i = 0; i < 4; i++) {
        mx_row r;
        const uint8_t *row = mx.rows + i * 80;
        const uint8_t *part = mx.heap + get_le64(row + 48) + (mx_rows[i].expires ? 8 : 0);
        assert_int_equal(cairn__mx_row(&mx, i, &r), CAIRN_OK);
        assert_int_equal(r.seq, mx_rows[i].seq);
        /* an id cairn makes is its 16 digits' value, u64, flag bit 2; the
         * capitals' stays text, its NUL after it */
        if (i < 3) {
            assert_int_equal(get_le32(row + 68) & 4, 4);
            assert_int_equal(get_le64(part), (uint64_t)i + 1);
            assert_false(holds_bytes(g, glen, mx_rows[i].id));
            assert_ptr_equal(r.id, r.idbuf);
        } else {
            assert_int_equal(get_le32(row + 68) & 4, 0);
            assert_memory_equal(part, mx_rows[i].id, strlen(mx_rows[i].id) + 1);
        }
        assert_int_equal(get_le32(row + 60), (mx_rows[i].expires ? 8 : 0) +
                                                 (i < 3 ? 8 : strlen(mx_rows[i].id) + 1) +
                                                 strlen(mx_rows[i].category) + 1 +
                                                 (mx_rows[i].metadata ? strlen(mx_rows[i].metadata) + 1 : 0));
        assert_true(r.importance == mx_rows[i].importance);
        assert_int_equal(r.created, mx_rows[i].created);
        assert_int_equal(r.accessed, mx_rows[i].accessed);
        assert_int_equal(r.expires, mx_rows[i].expires);
        assert_int_equal(r.access_count, mx_rows[i].access_count);
        assert_int_equal(r.content_hash, mx_rows[i].content_hash);
        /* the content is in the log alone: the row keeps its length */
        assert_null(r.content);
        assert_int_equal(r.content_len, strlen(mx_rows[i].content));
        assert_false(holds_bytes(g, glen, mx_rows[i].content));
        assert_string_equal(r.id, mx_rows[i].id);
        assert_string_equal(r.category, mx_rows[i].category);
        if (mx_rows[i].metadata)
            assert_string_equal(r.metadata, mx_rows[i].metadata);
        else
            assert_null(r.metadata);
        assert_int_equal(r.nsi, mx_rows[i].nsi);
        /* the id table finds it */
        {
            uint64_t h = mx_hash_id(r.id);
            /* the spec's start: the low 32 bits of h scaled to tcap */
            size_t slot = (size_t)(((unsigned __int128)(uint32_t)h * mx.tcap) >> 32);
            assert_int_equal(mx.tcap, 16); /* 4 rows: at least 16 slots */
            while (mx.idtab[slot] != 0 && (uint32_t)mx.idtab[slot] != i + 1)
                slot = slot + 1 == mx.tcap ? 0 : slot + 1;
            assert_int_equal(mx.idtab[slot], (h >> 32 << 32) | (i + 1)); /* tagged */
        }
    }
    for (size_t i = 0; i < 2; i++) {
        const char *name;
        uint64_t live;
        cairn__ramidx *x = NULL;
        cairn__vecset *v = NULL;
        uint64_t docs[4];
        double sc[4];
        size_t n = 0;
        assert_int_equal(cairn__mx_ns(&mx, i, "english", &name, &live, &x, &v), CAIRN_OK);
        {
            const float *row = NULL;
            const float *want = mx_vecs[i ? 2 : 0];
            double len2 = 0;
            assert_non_null(v);
            assert_string_equal(cairn__vecset_embedder(v), MX_VEC_NAME);
            assert_int_equal(cairn__vecset_dim(v), 4);
            assert_int_equal(cairn__vecset_live(v), 1);
            assert_int_equal(cairn__vecset_get(v, mx_rows[i].seq, &row), CAIRN_OK);
            assert_non_null(row);
            for (int d = 0; d < 4; d++)
                len2 += (double)want[d] * want[d];
            for (int d = 0; d < 4; d++)
                assert_float_equal(row[d], want[d] / sqrt(len2), 1e-6);
            /* the memory without a vector has no row */
            assert_int_equal(cairn__vecset_get(v, mx_rows[2].seq, &row), CAIRN_OK);
            assert_null(row);
            cairn__vecset_free(v);
        }
        assert_string_equal(name, i ? "work" : "");
        assert_int_equal(live, 2);
        assert_int_equal(cairn__ramidx_search(x, (const uint8_t *)"friday deploy", 13, 4, docs, sc,
                                              &n, NULL),
                         CAIRN_OK);
        assert_int_equal(n, i ? 1 : 2);
        assert_int_equal(docs[0], i ? 9 : 7);
        cairn__ramidx_free(x);
    }
    if (cairn__mx_check_all(&mx, &off, &e) != CAIRN_OK)
        fail_msg("check_all: %s", e.msg);
    cairn__mx_close(&mx);
    close(dirfd);
    tu_rmrf(dir);
    free(dir);
    free(path);
    free(g);
}

/* The generation golden: a file on the one above (base 50), covering 60:
 * two shadow rows (memory 7 changed, memory 9 dead) and one memory of its
 * own, stored at 55 in namespace "". */
#define MXG_COVERED 60u
#define MXG_GOLDEN "mem-000000000000003c.cmx"

static const mx_row mxg_rows[] = {
    {7, 0.75, 1700000000000ll, 1700000009000ll, 0, 5, 0x1111111111111111ull,
     "the deploy failed on friday", "m0000000000000001", "incident", "{\"seen\":true}", 27, 0, 0,
     ""},
    {9, 0.875, 1700000002000ll, 1700000002000ll, 1800000000000ll, 0, 0x2222222222222222ull,
     "use a canary before every deploy", "m0000000000000002", "lesson", "{\"x\":1}", 32, 1,
     MX_ROW_DEAD, ""},
    {55, 0.5, 1700000010000ll, 1700000010000ll, 0, 0, 0x5555555555555555ull,
     "roll back friday deploys first", "m0000000000000005", "lesson", NULL, 30, 0, 0, ""},
};

static uint8_t *make_memindex_gen(size_t *len)
{
    char *dir = tu_mkdtemp("golden-mxg");
    cairn__ramidx *x[2] = {NULL, NULL};
    mx_ns_in ns[2] = {{"", 1, NULL, NULL, 0, NULL, 0, NULL}, {"work", 0, NULL, NULL, 0, NULL, 0, NULL}};
    mx_in in;
    cairn__err e;
    uint8_t *b;
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);

    assert_true(dirfd >= 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(cairn__ramidx_new(&x[i], NULL, "english"), CAIRN_OK);
    assert_int_equal(cairn__ramidx_add(x[0], mxg_rows[2].seq, (const uint8_t *)mxg_rows[2].content,
                                       mxg_rows[2].content_len),
                     CAIRN_OK);
    ns[0].idx = x[0];
    ns[1].idx = x[1];
    memset(&in, 0, sizeof in);
    in.covered = MXG_COVERED;
    in.base = MX_COVERED;
    in.n_shadow = 2;
    memcpy(in.bind.store_id, man_store_id, sizeof in.bind.store_id);
    in.bind.anchor_seq = MXG_COVERED;
    in.bind.anchor_sum = GOLD_ANCHOR_SUM;
    in.skipped = 1;
    in.deleted = 5;
    in.stemmer = "english";
    in.ns = ns;
    in.n_ns = 2;
    in.rows = mxg_rows;
    in.nrows = 3;
    in.hash_id = mx_hash_id;
    if (cairn__mx_write(cairn_io_default(), dirfd, &in, &e) != CAIRN_OK)
        fail_msg("cairn__mx_write: %s", e.msg);
    b = take_file(dir, dirfd, MXG_GOLDEN, len);
    cairn__ramidx_free(x[0]);
    cairn__ramidx_free(x[1]);
    return b;
}

static void test_memindex_generation_matches_golden(void **state)
{
    (void)state;
    matches_golden("memindex-v10-gen.cmx", make_memindex_gen);
}

/* Read the generation golden back: its base, its shadow rows (content not
 * written again, the dead flag), the hash tables holding its own row only. */
static void test_memindex_generation_golden_reads_back(void **state)
{
    char *dir = tu_mkdtemp("golden-mxg-read"), *path = tu_join(dir, MXG_GOLDEN);
    size_t glen;
    uint8_t *g = read_golden("memindex-v10-gen.cmx", &glen);
    memindex mx;
    cairn__err e;
    uint64_t off = 0;
    mx_row r;
    int dirfd;
    (void)state;

    assert_int_equal(tu_write_file(path, g, glen), 0);
    dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(dirfd >= 0);
    /* the file it lies on is found by its exact seq, or not at all */
    assert_int_equal(cairn__mx_open(&mx, cairn_io_default(), dirfd, MX_COVERED, 1, &e),
                     CAIRN_ENOTFOUND);
    if (cairn__mx_open(&mx, cairn_io_default(), dirfd, MXG_COVERED, 1, &e) != CAIRN_OK)
        fail_msg("cairn__mx_open: %s", e.msg);
    assert_int_equal(mx.version, 10);
    assert_int_equal(mx.base, MX_COVERED);
    assert_int_equal(mx.n_shadow, 2);
    assert_int_equal(get_le64(g + 16), MXG_COVERED);
    assert_int_equal(get_le64(g + 24), MX_COVERED);
    assert_int_equal(get_le64(g + 72), 2);
    assert_int_equal(mx.nrows, 3);
    assert_int_equal(mx.deleted, 5);
    /* the dead shadow row: expiresAt, its id as 8 bytes, an empty category */
    assert_int_equal(get_le32(mx.rows + 80 + 68), 1 | 2 | 4);
    assert_int_equal(get_le32(mx.rows + 80 + 60), 8 + 8 + 1);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(cairn__mx_row(&mx, i, &r), CAIRN_OK);
        assert_int_equal(r.seq, mxg_rows[i].seq);
        assert_int_equal(r.flags, mxg_rows[i].flags);
        assert_string_equal(r.id, mxg_rows[i].id);
        /* a dead shadow row: its id alone */
        assert_string_equal(r.category, mxg_rows[i].flags ? "" : mxg_rows[i].category);
        if (mxg_rows[i].flags)
            assert_null(r.metadata);
        assert_int_equal(r.access_count, mxg_rows[i].access_count);
        /* no content in the file: a shadow row's length 0 (its memory is
         * the row's below), an own row's its memory's */
        assert_null(r.content);
        assert_int_equal(r.content_len, i < 2 ? 0 : strlen(mxg_rows[i].content));
        {
            uint64_t h = mx_hash_id(r.id);
            /* the spec's start: the low 32 bits of h scaled to tcap */
            size_t slot = (size_t)(((unsigned __int128)(uint32_t)h * mx.tcap) >> 32);
            assert_int_equal(mx.tcap, 16); /* 3 rows: at least 16 slots */
            while (mx.idtab[slot] != 0 && (uint32_t)mx.idtab[slot] != i + 1)
                slot = slot + 1 == mx.tcap ? 0 : slot + 1;
            assert_int_equal(mx.idtab[slot], i < 2 ? 0 : (h >> 32 << 32) | (i + 1));
        }
    }
    if (cairn__mx_check_all(&mx, &off, &e) != CAIRN_OK)
        fail_msg("check_all: %s", e.msg);
    /* a dead flag on a row of its own is damage */
    {
        uint8_t *copy = malloc(mx.len);
        memindex bad;
        const uint8_t *row2 = mx.rows + 2 * 80;
        assert_non_null(copy);
        memcpy(copy, mx.map, mx.len);
        uint8_t *p = copy + (size_t)(row2 - mx.map), *summed;
        size_t strs = get_le32(p + 60); /* the row's part of the heap */
        uint64_t sum;
        p[68] = 1; /* and the row's sum made to match */
        summed = malloc(72 + strs);
        assert_non_null(summed);
        memcpy(summed, p, 72);
        memcpy(summed + 72, mx.heap + get_le64(p + 48), strs);
        sum = XXH3_64bits(summed, 72 + strs);
        memcpy(p + 72, &sum, 8);
        free(summed);
        memset(&bad, 0, sizeof bad);
        bad.map = copy;
        bad.len = mx.len;
        strcpy(bad.name, "copy");
        assert_int_equal(cairn__mx_parse(&bad, &e), CAIRN_OK);
        assert_int_equal(cairn__mx_row(&bad, 2, &r), CAIRN_ECORRUPT);
        free(copy);
    }
    cairn__mx_close(&mx);
    close(dirfd);
    tu_rmrf(dir);
    free(dir);
    free(path);
    free(g);
}

/* Files of versions 1..3 are bound to no log, of version 4 lie on no
 * other, of version 5 index the content alone (not the name), of version
 * 6 have no common file header, of version 7 unpacked postings, of
 * version 8 a copy of each memory's content, of version 9 postings of
 * one width a term:
 * recognised as older (their header sum
 * checked where those versions keep it), never used; the memory layer
 * rebuilds from the log (test_memindex.c). A damaged one is damage. */
static void test_memindex_older_goldens_are_recognised_and_not_used(void **state)
{
    static const char *const goldens[] = {"memindex-v1.cmx", "memindex-v2.cmx",
                                          "memindex-v3.cmx", "memindex-v4.cmx",
                                          "memindex-v5.cmx", "memindex-v6.cmx",
                                          "memindex-v7.cmx", "memindex-v8.cmx",
                                          "memindex-v9.cmx"};
    (void)state;
    for (unsigned i = 0; i < sizeof goldens / sizeof goldens[0]; i++) {
        char *dir = tu_mkdtemp("golden-mx-old"), *path = tu_join(dir, MX_GOLDEN);
        size_t glen;
        uint8_t *g = read_golden(goldens[i], &glen);
        memindex mx;
        cairn__err e;
        int dirfd;
        assert_int_equal(tu_write_file(path, g, glen), 0);
        dirfd = open(dir, O_RDONLY | O_DIRECTORY);
        assert_true(dirfd >= 0);
        assert_int_equal(cairn__mx_open(&mx, cairn_io_default(), dirfd, MX_COVERED, 0, &e),
                         CAIRN_EVERSION);
        assert_int_equal(mx.version, i + 1);
        assert_true(cairn__mx_is_older(&mx));
        assert_null(mx.map);
        g[100] ^= 1; /* under the old header sum */
        assert_int_equal(tu_write_file(path, g, glen), 0);
        assert_int_equal(cairn__mx_open(&mx, cairn_io_default(), dirfd, MX_COVERED, 0, &e),
                         CAIRN_ECHECKSUM);
        close(dirfd);
        tu_rmrf(dir);
        free(dir);
        free(path);
        free(g);
    }
}

/* ------------------------------------------------------------------------
 * Graph file (format-spec/graph.md, version 2).
 * ---------------------------------------------------------------------- */

#define GX_COVERED 42
#define GX_GOLDEN "graph-000000000000002a.cgx"

static const uint32_t gx_ep0[] = {0};
static const gi_node gx_nodes[] = {
    {0x1111111111111111ull, "Ran the Tests", "ran the tests", 13, 13, 1, 2, 0.5, 1700000000000, gx_ep0, 1},
    {0x2222222222222222ull, "Fix", "fix", 3, 3, 0, 1, 1.0, 1700000001000, NULL, 0},
    {0x3333333333333333ull, "Tests PASS", "tests pass", 10, 10, 2, 1, 0.5, 1700000002000, gx_ep0, 1},
};
static const gi_edge gx_edges[] = { /* sorted by (src, dst, type) */
    {0, 2, 0, 3, 0.75, 1700000003000, gx_ep0, 1},
    {1, 0, 1, 1, 0.5, 1700000004000, NULL, 0},
};
static const gi_pattern gx_patterns[] = {
    {0x4444444444444444ull, {"retry", 5}, {"", 0}, {"flaky", 5}, {"rerun", 5}, 0.5, 2,
     1700000005000, 1700000000500, gx_ep0, 1},
};
static const gi_str gx_names[] = {{"episode-s1", 10}};
static const gi_episode gx_episodes[] = {{0, 0, 1, 5, 1700000000000}};

static uint8_t *make_graph(size_t *len)
{
    char *dir = tu_mkdtemp("golden-gx");
    gi_in in;
    cairn__err e;
    uint8_t *b;
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);

    assert_true(dirfd >= 0);
    memset(&in, 0, sizeof in);
    in.covered = GX_COVERED;
    memcpy(in.bind.store_id, man_store_id, sizeof in.bind.store_id);
    in.bind.anchor_seq = GX_COVERED;
    in.bind.anchor_sum = GOLD_ANCHOR_SUM;
    in.skipped = 1;
    in.updated = 1700000005000;
    in.nodes = gx_nodes;
    in.n_nodes = 3;
    in.edges = gx_edges;
    in.n_edges = 2;
    in.patterns = gx_patterns;
    in.n_patterns = 1;
    in.names = gx_names;
    in.n_names = 1;
    in.episodes = gx_episodes;
    in.n_episodes = 1;
    if (cairn__gi_write(cairn_io_default(), dirfd, &in, &e) != CAIRN_OK)
        fail_msg("cairn__gi_write: %s", e.msg);
    b = take_file(dir, dirfd, GX_GOLDEN, len);
    return b;
}

static void test_graph_encoding_matches_golden(void **state)
{
    (void)state;
    matches_golden("graph-v5.cgx", make_graph);
}

static void test_graph_golden_reads_back(void **state)
{
    char *dir = tu_mkdtemp("golden-gx-read"), *path = tu_join(dir, GX_GOLDEN);
    size_t glen;
    uint8_t *gb = read_golden("graph-v5.cgx", &glen);
    gimage g;
    cairn__err e;
    uint32_t first, n;
    const uint32_t *row, *eids;
    int dirfd;
    (void)state;

    assert_int_equal(tu_write_file(path, gb, glen), 0);
    dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(dirfd >= 0);
    memset(&g, 0, sizeof g);
    /* not when the log ends before the covered seq */
    assert_int_equal(cairn__gi_open(&g, cairn_io_default(), dirfd, GX_COVERED - 1, &e), CAIRN_ENOTFOUND);
    if (cairn__gi_open(&g, cairn_io_default(), dirfd, GX_COVERED, &e) != CAIRN_OK)
        fail_msg("cairn__gi_open: %s", e.msg);
    assert_int_equal(g.covered, GX_COVERED);
    assert_int_equal(g.version, 5);
    assert_memory_equal(gb + GI_BIND_OFF, man_store_id, 16);
    assert_memory_equal(g.bind.store_id, man_store_id, 16);
    assert_int_equal(g.bind.anchor_seq, GX_COVERED);
    assert_int_equal(g.bind.anchor_sum, GOLD_ANCHOR_SUM);
    /* the common file header, the graph header's sum, the table's */
    assert_memory_equal(gb, "CAIRNGX1", 8);
    assert_int_equal(get_le16(gb + 8), 5);
    assert_int_equal(get_le16(gb + 10), 64);
    assert_int_equal(get_le64(gb + 16), GX_COVERED);
    assert_int_equal(get_le64(gb + 24), glen);
    assert_int_equal(get_le64(gb + 56), XXH3_64bits(gb, 56));
    assert_int_equal(get_le64(gb + 48), XXH3_64bits(gb + 64, 176 - 64));
    assert_int_equal(get_le64(gb + 176 + 24 * 31 - 8), XXH3_64bits(gb, 176 + 24 * 31 - 8));
    assert_int_equal(cairn__filehdr_check(gb, glen, "CAIRNGX1", 5, "golden", &e), CAIRN_OK);
    /* packed columns: every node's type fits one byte, the keys differ in
     * their top byte (8), the edges' evidence counts differ by 2 (1) */
    assert_int_equal(get_le64(gb + 176 + 24 * GI_N_TYPE + 8), 16 + 3 * 1);
    assert_int_equal(get_le64(gb + 176 + 24 * GI_N_KEY + 8), 16 + 3 * 8);
    assert_int_equal(get_le64(gb + 176 + 24 * GI_E_EVIDENCE + 8), 16 + 2 * 1);
    assert_int_equal(get_le64(gb + get_le64(gb + 176 + 24 * GI_E_EVIDENCE)), 1); /* its base */
    assert_int_equal(g.skipped, 1);
    assert_int_equal(g.updated, 1700000005000);
    assert_int_equal(g.n_nodes, 3);
    assert_int_equal(g.n_edges, 2);
    for (uint32_t i = 0; i < 3; i++) {
        gi_node x;
        cairn__gi_node(&g, i, &x);
        assert_int_equal(x.key, gx_nodes[i].key);
        assert_string_equal(x.label, gx_nodes[i].label);
        assert_string_equal(x.fold, gx_nodes[i].fold);
        assert_int_equal(x.type, gx_nodes[i].type);
        assert_int_equal(x.frequency, gx_nodes[i].frequency);
        assert_true(x.success == gx_nodes[i].success);
        assert_int_equal(x.created, gx_nodes[i].created);
        assert_int_equal(x.n_eps, gx_nodes[i].n_eps);
        assert_int_equal(cairn__gi_find_key(&g, x.key), i);
    }
    for (uint32_t i = 0, src = 0; i < 2; i++) {
        gi_edge x, y;
        cairn__gi_edge(&g, i, &x);
        assert_int_equal(x.src, gx_edges[i].src);
        assert_int_equal(x.dst, gx_edges[i].dst);
        assert_int_equal(x.type, gx_edges[i].type);
        assert_int_equal(x.evidence, gx_edges[i].evidence);
        assert_true(x.weight == gx_edges[i].weight);
        assert_int_equal(x.created, gx_edges[i].created);
        assert_int_equal(x.n_eps, gx_edges[i].n_eps);
        for (uint32_t k = 0; k < x.n_eps; k++)
            assert_int_equal(x.eps[k], gx_edges[i].eps[k]);
        cairn__gi_edge_next(&g, i, &src, &y); /* the walk finds the same source */
        assert_int_equal(y.src, x.src);
        assert_int_equal(src, x.src);
        assert_int_equal(y.created, x.created);
    }
    row = cairn__gi_out(&g, 1, &first, &n); /* Fix -> Ran the Tests */
    assert_int_equal(n, 1);
    assert_int_equal(row[0], 0);
    assert_int_equal(first, 1);
    row = cairn__gi_in(&g, 2, &eids, &n); /* Ran the Tests -> Tests PASS */
    assert_int_equal(n, 1);
    assert_int_equal(row[0], 0);
    assert_int_equal(eids[0], 0);
    /* the label index: first match in node order, by each query length */
    assert_int_equal(cairn__gi_find_label(&g, "tests", 5), 0);  /* 4-gram join */
    assert_int_equal(cairn__gi_find_label(&g, "pass", 4), 2);
    assert_int_equal(cairn__gi_find_label(&g, "sts", 3), 0);    /* 4-gram key range */
    assert_int_equal(cairn__gi_find_label(&g, "fix", 3), 1);
    assert_int_equal(cairn__gi_find_label(&g, "ix", 2), 1);     /* a scan */
    assert_int_equal(cairn__gi_find_label(&g, "tests fail", 10), GI_NONE);
    assert_int_equal(cairn__gi_find_key(&g, 0x5555555555555555ull), GI_NONE);
    {
        gi_pattern x;
        gi_episode ep;
        gi_str nm;
        cairn__gi_pattern(&g, 0, &x);
        assert_int_equal(x.key, gx_patterns[0].key);
        assert_string_equal(x.name.p, "retry");
        assert_string_equal(x.trigger.p, "flaky");
        assert_string_equal(x.action.p, "rerun");
        assert_int_equal(x.occurrences, 2);
        cairn__gi_episode(&g, 0, &ep);
        assert_int_equal(ep.seq, 5);
        assert_int_equal(ep.processed, 1);
        nm = cairn__gi_name(&g, ep.name);
        assert_string_equal(nm.p, "episode-s1");
    }
    cairn__gi_close(&g);
    close(dirfd);
    tu_rmrf(dir);
    free(dir);
    free(path);
    free(gb);
}

/* Golden graph bytes b with section `sec` changed in place: that
 * section's sum and the table's redone, then parsed from an 8-byte aligned
 * copy, as a mapping; g keeps what the parse said (its map freed). */
static int parse_with_sums_redone(uint8_t *b, size_t glen, int sec, gimage *g, cairn__err *e)
{
    uint8_t *t = b + 176 + 24 * sec;
    uint64_t *copy = malloc((glen + 7) & ~(size_t)7);
    int rc;
    assert_non_null(copy);
    put_le64(t + 16, XXH3_64bits(b + get_le64(t), (size_t)get_le64(t + 8)));
    put_le64(b + 176 + 24 * 31 - 8, XXH3_64bits(b, 176 + 24 * 31 - 8));
    memcpy(copy, b, glen);
    memset(g, 0, sizeof *g);
    g->map = (uint8_t *)copy;
    g->len = glen;
    strcpy(g->name, "crafted.cgx");
    rc = cairn__gi_parse(g, e);
    free(copy);
    g->map = NULL;
    return rc;
}

/* Structural rules the sums cannot catch: a 4-gram listed with no
 * postings (a 3-byte lookup would read another list's posting, or past
 * the section) is rejected at the offset of its entry, sums redone. */
static void test_graph_with_an_empty_gram_list_is_rejected(void **state)
{
    size_t glen;
    uint8_t *b = read_golden("graph-v5.cgx", &glen), *t, *off;
    gimage g;
    cairn__err e;
    (void)state;
    t = b + 176 + 24 * GI_GRAM_OFF;
    off = b + get_le64(t);
    uint64_t n_gram = get_le64(b + 104), n_post = get_le64(b + 112);
    assert_true(n_gram > 1);
    put_le32(off + 4 * (n_gram - 1), (uint32_t)n_post); /* the last key: empty */
    assert_int_equal(parse_with_sums_redone(b, glen, GI_GRAM_OFF, &g, &e), CAIRN_ECORRUPT);
    assert_non_null(strstr(e.msg, "no postings"));
    assert_int_equal(g.bad_off, get_le64(t) + 4 * (n_gram - 1));
    free(b);
}

/* An in-edge naming another source than its edge's (sums redone): the
 * in-lists are not the out-edges, and the file is refused. */
static void test_graph_whose_in_edges_are_not_its_out_edges_is_rejected(void **state)
{
    size_t glen;
    uint8_t *b = read_golden("graph-v5.cgx", &glen), *src;
    gimage g;
    cairn__err e;
    (void)state;
    src = b + get_le64(b + 176 + 24 * GI_IN_SRC);
    /* node 0's one in-edge is edge 1, from node 1 (Fix -> Ran the Tests) */
    assert_int_equal(get_le32(src), 1);
    put_le32(src, 2);
    assert_int_equal(parse_with_sums_redone(b, glen, GI_IN_SRC, &g, &e), CAIRN_ECORRUPT);
    assert_non_null(strstr(e.msg, "not the out-edges"));
    assert_int_equal(g.bad_off, get_le64(b + 176 + 24 * GI_IN_SRC));
    put_le32(src, 1); /* as written: accepted */
    assert_int_equal(parse_with_sums_redone(b, glen, GI_IN_SRC, &g, &e), CAIRN_OK);
    free(b);
}

/* ------------------------------------------------------------------------
 * Graph generation (format-spec/graph.md, "Generations", version 1): on
 * the golden graph, an overlay and an appended row in every table that
 * has overlays, and an appended name.
 * ---------------------------------------------------------------------- */

#define GG_COVERED 50
#define GG_GOLDEN "graph-0000000000000032.cgg"

static const uint32_t gg_ep01[] = {0, 1};
static const uint32_t gg_ep1[] = {1};
static const gi_str gg_names[] = {{"episode-s2", 10}};
static const uint32_t gg_node_no[] = {0, 3};
static const gi_node gg_nodes[] = {
    {0x1111111111111111ull, NULL, NULL, 0, 0, 1, 3, 0.75, 1700000000000, gg_ep01, 2},
    {0x5555555555555555ull, "Deploy", "deploy", 6, 6, 7, 1, 1.0, 1700000006000, gg_ep1, 1},
};
static const uint32_t gg_edge_no[] = {1, 2};
static const gi_edge gg_edges[] = {
    {1, 0, 1, 2, 0.25, 1700000004000, gg_ep1, 1},
    {3, 0, 0, 1, 1.0, 1700000007000, NULL, 0},
};
static const uint32_t gg_epi_no[] = {0, 1};
static const gi_episode gg_episodes[] = {{0, 0, 1, 5, 1700000000000}, {1, 2, 0, 48, 1700000008000}};
static const uint32_t gg_pat_no[] = {0, 1};
static const gi_pattern gg_patterns[] = {
    {0x4444444444444444ull, {"retry", 5}, {"", 0}, {"flaky", 5}, {"rerun", 5}, 0.5, 3,
     1700000009000, 1700000000500, gg_ep01, 2},
    {0x6666666666666666ull, {"skip", 4}, {"a known failure", 15}, {"red", 3}, {"skip it", 7}, 0.0,
     1, 1700000009500, 1700000009500, NULL, 0},
};

static uint8_t *make_graph_gen(size_t *len)
{
    char *dir = tu_mkdtemp("golden-gg");
    gg_in in;
    cairn__err e;
    uint64_t written = 0;
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    static const uint32_t first[GG_TABLES] = {1, 3, 2, 1, 1}, count[GG_TABLES] = {1, 2, 2, 2, 2};

    assert_true(dirfd >= 0);
    memset(&in, 0, sizeof in);
    in.head.covered = GG_COVERED;
    in.head.base = GX_COVERED;
    memcpy(in.head.bind.store_id, man_store_id, sizeof in.head.bind.store_id);
    in.head.bind.anchor_seq = GG_COVERED;
    in.head.bind.anchor_sum = GOLD_ANCHOR_SUM;
    in.head.skipped = 2;
    in.head.updated = 1700000009500;
    memcpy(in.head.first, first, sizeof first);
    memcpy(in.head.count, count, sizeof count);
    in.names = gg_names;
    in.node_no = gg_node_no;
    in.nodes = gg_nodes;
    in.edge_no = gg_edge_no;
    in.edges = gg_edges;
    in.episode_no = gg_epi_no;
    in.episodes = gg_episodes;
    in.pattern_no = gg_pat_no;
    in.patterns = gg_patterns;
    if (cairn__gg_write(cairn_io_default(), dirfd, &in, &written, &e) != CAIRN_OK)
        fail_msg("cairn__gg_write: %s", e.msg);
    uint8_t *b = take_file(dir, dirfd, GG_GOLDEN, len);
    assert_int_equal(written, *len);
    return b;
}

static void test_graph_gen_encoding_matches_golden(void **state)
{
    (void)state;
    matches_golden("graph-gen-v1.cgg", make_graph_gen);
}

typedef struct gg_seen {
    int names, nodes, edges, episodes, patterns;
} gg_seen;

static int gg_name_cb(void *u, uint32_t no, const char *s, uint32_t len)
{
    gg_seen *x = u;
    assert_int_equal(no, 1);
    assert_int_equal(len, 10);
    assert_memory_equal(s, "episode-s2", 10);
    x->names++;
    return 0;
}

static int gg_node_cb(void *u, uint32_t no, const gi_node *n)
{
    gg_seen *x = u;
    const gi_node *w = &gg_nodes[x->nodes];
    assert_int_equal(no, gg_node_no[x->nodes]);
    assert_int_equal(n->key, w->key);
    assert_int_equal(n->label_len, w->label_len);
    if (w->label_len)
        assert_memory_equal(n->label, w->label, w->label_len);
    assert_int_equal(n->type, w->type);
    assert_int_equal(n->frequency, w->frequency);
    assert_true(n->success == w->success);
    assert_int_equal(n->created, w->created);
    assert_int_equal(n->n_eps, w->n_eps);
    assert_memory_equal(n->eps, w->eps, 4 * (size_t)w->n_eps);
    x->nodes++;
    return 0;
}

static int gg_edge_cb(void *u, uint32_t no, const gi_edge *e)
{
    gg_seen *x = u;
    const gi_edge *w = &gg_edges[x->edges];
    assert_int_equal(no, gg_edge_no[x->edges]);
    assert_int_equal(e->src, w->src);
    assert_int_equal(e->dst, w->dst);
    assert_int_equal(e->type, w->type);
    assert_int_equal(e->evidence, w->evidence);
    assert_true(e->weight == w->weight);
    assert_int_equal(e->n_eps, w->n_eps);
    x->edges++;
    return 0;
}

static int gg_episode_cb(void *u, uint32_t no, const gi_episode *e)
{
    gg_seen *x = u;
    const gi_episode *w = &gg_episodes[x->episodes];
    assert_int_equal(no, gg_epi_no[x->episodes]);
    assert_int_equal(e->name, w->name);
    assert_int_equal(e->outcome, w->outcome);
    assert_int_equal(e->processed, w->processed);
    assert_int_equal(e->seq, w->seq);
    assert_int_equal(e->ts, w->ts);
    x->episodes++;
    return 0;
}

static int gg_pattern_cb(void *u, uint32_t no, const gi_pattern *p)
{
    gg_seen *x = u;
    const gi_pattern *w = &gg_patterns[x->patterns];
    assert_int_equal(no, gg_pat_no[x->patterns]);
    assert_int_equal(p->key, w->key);
    assert_int_equal(p->desc.len, w->desc.len);
    assert_memory_equal(p->action.p, w->action.p, w->action.len);
    assert_int_equal(p->occurrences, w->occurrences);
    assert_int_equal(p->n_eps, w->n_eps);
    x->patterns++;
    return 0;
}

static void test_graph_gen_golden_reads_back(void **state)
{
    static const gg_visit v = {gg_name_cb, gg_node_cb, gg_edge_cb, gg_episode_cb, gg_pattern_cb};
    size_t glen;
    uint8_t *gb = read_golden("graph-gen-v1.cgg", &glen);
    uint64_t *copy = malloc((glen + 7) & ~(size_t)7), bad_off = 0;
    gg_seen seen = {0};
    gg_head h;
    cairn__err e;
    (void)state;

    assert_non_null(copy);
    memcpy(copy, gb, glen); /* 8-aligned, as a mapping */
    assert_memory_equal(gb, "CAIRNGGN", 8);
    if (cairn__gg_parse((const uint8_t *)copy, glen, GG_GOLDEN, &h, &v, &seen, &bad_off, &e) !=
        CAIRN_OK)
        fail_msg("cairn__gg_parse: %s", e.msg);
    assert_int_equal(h.covered, GG_COVERED);
    assert_int_equal(h.base, GX_COVERED);
    assert_int_equal(h.base_gen, 0);
    assert_int_equal(h.skipped, 2);
    assert_int_equal(h.updated, 1700000009500);
    assert_memory_equal(h.bind.store_id, man_store_id, 16);
    assert_int_equal(h.first[GG_NODES], 3);
    assert_int_equal(h.count[GG_PATTERNS], 2);
    assert_int_equal(seen.names, 1);
    assert_int_equal(seen.nodes, 2);
    assert_int_equal(seen.edges, 2);
    assert_int_equal(seen.episodes, 2);
    assert_int_equal(seen.patterns, 2);
    /* A row out of order is refused with its offset, the sum redone. */
    /* rows at 160: the name (8 + 16), the overlay node (56 + 2 eps), then
     * the appended node */
    assert_int_equal(get_le32((uint8_t *)copy + 248), 3);
    put_le32((uint8_t *)copy + 248, 4);
    put_le64((uint8_t *)copy + 40, XXH3_64bits((uint8_t *)copy + 64, glen - 64));
    cairn__filehdr_seal((uint8_t *)copy); /* the body's sum is in the header */
    assert_int_equal(cairn__gg_parse((const uint8_t *)copy, glen, GG_GOLDEN, &h, NULL, NULL,
                                     &bad_off, &e), CAIRN_ECORRUPT);
    assert_int_equal(bad_off, 248);
    assert_non_null(strstr(e.msg, "out of order"));
    free(copy);
    free(gb);
}

/* A graph file of version 2 is bound to no log, of version 3 has no
 * common file header, of version 4 keeps fixed rows for nodes and edges:
 * recognised as older (its sums checked where that version keeps them),
 * never used. */
static void test_graph_older_goldens_are_recognised_and_not_used(void **state)
{
    static const char *const goldens[] = {"graph-v2.cgx", "graph-v3.cgx", "graph-v4.cgx"};
    (void)state;
    for (unsigned i = 0; i < 3; i++) {
        char *dir = tu_mkdtemp("golden-gx-old"), *path = tu_join(dir, GX_GOLDEN);
        size_t glen;
        uint8_t *gb = read_golden(goldens[i], &glen);
        gimage g;
        cairn__err e;
        int dirfd;

        assert_int_equal(tu_write_file(path, gb, glen), 0);
        dirfd = open(dir, O_RDONLY | O_DIRECTORY);
        assert_true(dirfd >= 0);
        assert_int_equal(cairn__gi_open(&g, cairn_io_default(), dirfd, GX_COVERED, &e),
                         CAIRN_EVERSION);
        assert_int_equal(g.version, i + 2);
        assert_null(g.map);
        gb[100] ^= 1;
        assert_int_equal(tu_write_file(path, gb, glen), 0);
        assert_int_equal(cairn__gi_open(&g, cairn_io_default(), dirfd, GX_COVERED, &e),
                         CAIRN_ECHECKSUM);
        close(dirfd);
        tu_rmrf(dir);
        free(dir);
        free(path);
        free(gb);
    }
}

/* LOCK (format-spec/lock.md): pid 4096 written over the "140411\n" an
 * earlier writer left, without truncating; it reads back as 4096. */
static void test_lock_content_matches_golden_and_reads_back(void **state)
{
    size_t len;
    uint8_t *g = read_golden("lock-v2.txt", &len);
    char buf[16] = "140411\n";
    size_t n = cairn__lock_pid_encode(buf, 4096);

    (void)state;
    assert_int_equal(n, 5);
    assert_int_equal(len, 7);
    assert_memory_equal(buf, g, len);
    assert_int_equal(cairn__lock_pid_parse((const char *)g, len), 4096);
    assert_int_equal(cairn__lock_pid_parse("", 0), 0);
    assert_int_equal(cairn__lock_pid_parse("-5\n", 3), 0);
    assert_int_equal(cairn__lock_pid_parse("0\n", 2), 0);
    assert_int_equal(cairn__lock_pid_parse("2147483648\n", 11), 0);
    assert_int_equal(cairn__lock_pid_parse("2147483647", 10), 2147483647L);
    assert_int_equal(cairn__lock_pid_parse("12345678901", 11), 0);
    free(g);
}

static void test_access_encoding_matches_golden(void **state)
{
    (void)state;
    matches_golden("access-v1.bin", make_access);
}

static void test_keys_encoding_matches_golden(void **state)
{
    (void)state;
    matches_golden("keys-v1.bin", make_keys);
}

/* cairn__keyfile_check against this store's id. */
static int kcheck(const uint8_t *b, size_t len, uint64_t size, uint64_t boot, const uint8_t *sid,
                  uint64_t log_end)
{
    uint64_t slots;
    cairn__err e;
    return cairn__keyfile_check(b, len, size, boot, sid, log_end, &slots, &e);
}

/* The golden read with the engine's checks: its fields, then what makes a
 * writer remake the file (format-spec/keys.md). */
static void test_keys_golden_reads_back(void **state)
{
    const uint64_t size = KEYS_FILE_SIZE(KEYS_SLOTS);
    size_t len;
    uint8_t *g = read_golden("keys-v1.bin", &len), *c, other[16];
    cairn__memkeys_core k;
    uint64_t slots;
    cairn__err e;

    (void)state;
    assert_int_equal(len, KEYS_OFF_TABLES);
    assert_memory_equal(g, "CAIRNKEY", 8);
    assert_int_equal(get_le64(g + 16), KEYS_GOLD_BOOT);
    assert_memory_equal(g + 24, man_store_id, 16);
    assert_int_equal(get_le64(g + 40), KEYS_SLOTS);
    assert_int_equal(get_le64(g + 56), XXH3_64bits(g, 56));
    assert_int_equal(cairn__keyfile_check(g, len, size, KEYS_GOLD_BOOT, man_store_id, 50, &slots,
                                          &e),
                     CAIRN_OK);
    assert_int_equal(slots, KEYS_SLOTS);
    memcpy(&k, g + KEYS_OFF_CORE, sizeof k);
    assert_int_equal(k.base, KEYS_GOLD_BASE);
    assert_int_equal(k.covered, KEYS_GOLD_COVERED);
    assert_int_equal(k.n, 8);
    assert_int_equal(k.n_ns, 2);
    assert_int_equal(k.ns_key[1], XXH3_64bits("agent", 5));
    assert_int_equal(k.ns_n[0] + k.ns_n[1], 8);
    for (size_t i = KEYS_OFF_CORE + sizeof k; i < KEYS_OFF_TABLES; i++)
        assert_int_equal(g[i], 0);

    /* what a writer remakes: another boot, another store, a log that ends
     * before covered (a writer killed before its records reached it), a
     * file of another size, counts out of range */
    assert_int_equal(kcheck(g, len, size, KEYS_GOLD_BOOT + 1, man_store_id, 50), CAIRN_ECORRUPT);
    memcpy(other, man_store_id, 16);
    other[3] ^= 1;
    assert_int_equal(kcheck(g, len, size, KEYS_GOLD_BOOT, other, 50), CAIRN_ECORRUPT);
    assert_int_equal(kcheck(g, len, size, KEYS_GOLD_BOOT, man_store_id, 49), CAIRN_ECORRUPT);
    assert_int_equal(kcheck(g, len, size - 8, KEYS_GOLD_BOOT, man_store_id, 50), CAIRN_ECORRUPT);
    assert_int_equal(kcheck(g, len - 1, size, KEYS_GOLD_BOOT, man_store_id, 50), CAIRN_ECORRUPT);
    c = malloc(len);
    assert_non_null(c);
    memcpy(c, g, len);
    k.ns_n[1] = 4; /* the counts add up to more than the keys put */
    memcpy(c + KEYS_OFF_CORE, &k, sizeof k);
    assert_int_equal(kcheck(c, len, size, KEYS_GOLD_BOOT, man_store_id, 50), CAIRN_ECORRUPT);
    k.ns_n[1] = 3;
    k.n = KEYS_SLOTS / 2 + 1; /* past half the slots */
    memcpy(c + KEYS_OFF_CORE, &k, sizeof k);
    assert_int_equal(kcheck(c, len, size, KEYS_GOLD_BOOT, man_store_id, 50), CAIRN_ECORRUPT);
    /* a flipped header bit, a newer version, slots not a power of 2 */
    memcpy(c, g, len);
    c[17] ^= 1;
    assert_int_equal(kcheck(c, len, size, KEYS_GOLD_BOOT, man_store_id, 50), CAIRN_ECHECKSUM);
    memcpy(c, g, len);
    put_le16(c + 8, 2);
    put_le64(c + 56, XXH3_64bits(c, 56));
    assert_int_equal(kcheck(c, len, size, KEYS_GOLD_BOOT, man_store_id, 50), CAIRN_EVERSION);
    memcpy(c, g, len);
    put_le64(c + 40, KEYS_SLOTS + 1);
    put_le64(c + 56, XXH3_64bits(c, 56));
    assert_int_equal(kcheck(c, len, KEYS_FILE_SIZE(KEYS_SLOTS + 1), KEYS_GOLD_BOOT, man_store_id, 50),
                     CAIRN_ECORRUPT);
    free(c);
    free(g);
}

typedef struct acc_seen {
    size_t n;
    uint64_t seq[8], off[8];
    int64_t at[8];
} acc_seen;

static void acc_collect(void *user, uint64_t seq, int64_t at, uint64_t off)
{
    acc_seen *s = user;
    assert_true(s->n < 8);
    s->seq[s->n] = seq;
    s->at[s->n] = at;
    s->off[s->n++] = off;
}

/* The golden read with the engine's parser: every header field, every
 * entry at its offset; then the reader's rules on copies of it (format-spec/access.md). */
static void test_access_golden_reads_back(void **state)
{
    size_t len;
    uint8_t *g = read_golden("access-v1.bin", &len), *c;
    accfile_hdr h;
    accfile_scan sc;
    acc_seen seen;
    cairn__err e;

    (void)state;
    assert_int_equal(len, ACC_HDR_SIZE + ACC_GOLD_N * ACC_ENTRY_SIZE);
    assert_memory_equal(g, "CAIRNACC", 8);
    assert_int_equal(cairn__accfile_hdr_decode(g, len, &h, &e), CAIRN_OK);
    assert_int_equal(h.version, 1);
    assert_int_equal(h.file_id, ACC_GOLD_FILE_ID);
    assert_memory_equal(h.store_id, man_store_id, 16);
    assert_int_equal(get_le64(g + 56), XXH3_64bits(g, 56));
    memset(&seen, 0, sizeof seen);
    cairn__accfile_scan(g + ACC_HDR_SIZE, len - ACC_HDR_SIZE, ACC_HDR_SIZE, h.file_id, acc_collect,
                        &seen, &sc);
    assert_int_equal(sc.entries, ACC_GOLD_N);
    assert_int_equal(sc.consumed, len - ACC_HDR_SIZE);
    assert_int_equal(sc.skipped + sc.bad_entries, 0);
    for (size_t i = 0; i < ACC_GOLD_N; i++) {
        const uint8_t *p = g + ACC_HDR_SIZE + i * ACC_ENTRY_SIZE;
        assert_int_equal(seen.seq[i], acc_entries[i].seq);
        assert_int_equal(seen.at[i], acc_entries[i].at);
        assert_int_equal(seen.off[i], ACC_HDR_SIZE + i * ACC_ENTRY_SIZE);
        assert_int_equal(get_le64(p + 16), XXH3_64bits_withSeed(p, 16, ACC_GOLD_FILE_ID));
    }

    c = malloc(len);
    assert_non_null(c);
    /* a newer version (its sum redone) is refused as newer, never guessed */
    memcpy(c, g, len);
    put_le16(c + 8, 2);
    put_le64(c + 56, XXH3_64bits(c, 56));
    assert_int_equal(cairn__accfile_hdr_decode(c, len, &h, &e), CAIRN_EVERSION);
    /* a flipped header bit is a checksum error; a reserved byte set, corrupt */
    memcpy(c, g, len);
    c[17] ^= 1;
    assert_int_equal(cairn__accfile_hdr_decode(c, len, &h, &e), CAIRN_ECHECKSUM);
    memcpy(c, g, len);
    c[41] = 1;
    put_le64(c + 56, XXH3_64bits(c, 56));
    assert_int_equal(cairn__accfile_hdr_decode(c, len, &h, &e), CAIRN_ECORRUPT);
    assert_int_equal(cairn__accfile_hdr_decode(g, ACC_HDR_SIZE - 1, &h, &e), CAIRN_ECORRUPT);
    /* a flipped entry bit loses that entry alone; a torn last entry waits */
    memcpy(c, g, len);
    c[ACC_HDR_SIZE + ACC_ENTRY_SIZE + 9] ^= 0x40;
    memset(&seen, 0, sizeof seen);
    cairn__accfile_scan(c + ACC_HDR_SIZE, len - ACC_HDR_SIZE - 5, ACC_HDR_SIZE, ACC_GOLD_FILE_ID,
                        acc_collect, &seen, &sc);
    assert_int_equal(sc.entries, 1);
    assert_int_equal(seen.seq[0], 2);
    /* resync tries each position while 24 bytes are left: 24..43 fail,
     * and the scan stops at 44, 23 bytes before the end */
    assert_int_equal(sc.skipped, 20);
    assert_int_equal(sc.consumed, 44);
    /* once the torn entry is whole, the scan goes on from there */
    cairn__accfile_scan(c + ACC_HDR_SIZE + 44, len - ACC_HDR_SIZE - 44, ACC_HDR_SIZE + 44,
                        ACC_GOLD_FILE_ID, acc_collect, &seen, &sc);
    assert_int_equal(sc.skipped, 4);
    assert_int_equal(sc.entries, 1);
    assert_int_equal(seen.n, 2);
    assert_int_equal(seen.at[1], acc_entries[2].at);
    assert_int_equal(seen.off[1], ACC_HDR_SIZE + 2 * ACC_ENTRY_SIZE);
    /* entries of another file id are no entries */
    cairn__accfile_scan(g + ACC_HDR_SIZE, len - ACC_HDR_SIZE, ACC_HDR_SIZE, ACC_GOLD_FILE_ID + 1,
                        NULL, NULL, &sc);
    assert_int_equal(sc.entries, 0);
    free(c);
    free(g);
}

static void regen_one(const char *dir, const char *name, const uint8_t *b, size_t len)
{
    char *path = tu_join(dir, name);
    assert_int_equal(tu_write_file(path, b, len), 0);
    print_message("wrote %s (%zu bytes)\n", path, len);
    free(path);
}

static void regen(void **state)
{
    const char *dir = *state;
    size_t len;
    uint8_t *b;
    char ver[32];

    mkdir(dir, 0755);
    b = make_record(&len);
    regen_one(dir, "record-v1.bin", b, len);
    free(b);
    b = make_segl(&len);
    regen_one(dir, "segment-v1.log", b, len);
    free(b);
    b = make_manifest(&len);
    regen_one(dir, "manifest-v9.bin", b, len);
    free(b);
    b = make_sealed(SEALS3_N, &len, NULL, NULL);
    regen_one(dir, "sealed-v3.seg", b, len);
    free(b);
    b = make_compacted(&len);
    regen_one(dir, "sealed-v3-compacted.seg", b, len);
    free(b);
    b = make_memindex(&len);
    regen_one(dir, "memindex-v10.cmx", b, len);
    free(b);
    b = make_memindex_gen(&len);
    regen_one(dir, "memindex-v10-gen.cmx", b, len);
    free(b);
    b = make_graph(&len);
    regen_one(dir, "graph-v5.cgx", b, len);
    free(b);
    b = make_graph_gen(&len);
    regen_one(dir, "graph-gen-v1.cgg", b, len);
    free(b);
    b = make_access(&len);
    regen_one(dir, "access-v1.bin", b, len);
    free(b);
    b = make_keys(&len);
    regen_one(dir, "keys-v1.bin", b, len);
    free(b);
    snprintf(ver, sizeof ver, "%u\n", ZSTD_versionNumber());
    regen_one(dir, "sealed-v1.zstd-version", (const uint8_t *)ver, strlen(ver));
}

int main(int argc, char **argv)
{
    const char *regen_dir = NULL;
    const char *env = getenv("CAIRN_GOLDEN_REGEN");

    if (argc == 3 && strcmp(argv[1], "--regen") == 0)
        regen_dir = argv[2];
    else if (env != NULL && strcmp(env, "1") == 0)
        regen_dir = golden_dir();
    else if (argc > 1) {
        fprintf(stderr, "usage: %s [--regen DIR]\n", argv[0]);
        return 2;
    }
    if (regen_dir != NULL) {
        const struct CMUnitTest r[] = {
            cmocka_unit_test_prestate(regen, (void *)(uintptr_t)regen_dir),
        };
        return cmocka_run_group_tests_name("golden regen", r, NULL, NULL);
    }
    {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_xxh3_is_the_specified_hash),
            cmocka_unit_test(test_record_encoding_matches_golden),
            cmocka_unit_test(test_record_golden_decodes_to_its_fields),
            cmocka_unit_test(test_segment_encoding_matches_golden),
            cmocka_unit_test(test_segment_golden_scans_to_its_records),
            cmocka_unit_test(test_compacted_encoding_matches_golden),
            cmocka_unit_test(test_compacted_golden_decodes_to_kept_records_and_holes),
            cmocka_unit_test(test_compacted_v2_golden_still_decodes),
            cmocka_unit_test(test_manifest_encoding_matches_golden),
            cmocka_unit_test(test_manifest_golden_decodes_to_its_entries),
            cmocka_unit_test(test_manifest_v8_golden_still_decodes_without_a_file_list),
            cmocka_unit_test(test_manifest_v7_golden_still_decodes_without_chain_values),
            cmocka_unit_test(test_manifest_v6_golden_still_decodes_without_named_types),
            cmocka_unit_test(test_manifest_v5_golden_still_decodes_with_exact_labels),
        cmocka_unit_test(test_manifest_v4_golden_still_decodes_without_deaths_dropped),
            cmocka_unit_test(test_manifest_v3_golden_still_decodes_keeping_everything),
            cmocka_unit_test(test_manifest_v2_golden_still_decodes_with_the_old_limit),
            cmocka_unit_test(test_manifest_v1_golden_still_decodes),
            cmocka_unit_test(test_sealed_encoding_matches_golden),
            cmocka_unit_test(test_sealed_golden_decodes_to_the_log_records),
            cmocka_unit_test(test_sealed_v1_golden_still_decodes),
            cmocka_unit_test(test_sealed_golden_verifies_clean),
            cmocka_unit_test(test_memindex_encoding_matches_golden),
            cmocka_unit_test(test_memindex_golden_reads_back),
            cmocka_unit_test(test_memindex_generation_matches_golden),
        cmocka_unit_test(test_memindex_generation_golden_reads_back),
        cmocka_unit_test(test_memindex_older_goldens_are_recognised_and_not_used),
            cmocka_unit_test(test_graph_encoding_matches_golden),
            cmocka_unit_test(test_graph_golden_reads_back),
            cmocka_unit_test(test_graph_gen_encoding_matches_golden),
            cmocka_unit_test(test_graph_gen_golden_reads_back),
            cmocka_unit_test(test_graph_with_an_empty_gram_list_is_rejected),
        cmocka_unit_test(test_graph_whose_in_edges_are_not_its_out_edges_is_rejected),
            cmocka_unit_test(test_graph_older_goldens_are_recognised_and_not_used),
            cmocka_unit_test(test_lock_content_matches_golden_and_reads_back),
            cmocka_unit_test(test_access_encoding_matches_golden),
            cmocka_unit_test(test_access_golden_reads_back),
            cmocka_unit_test(test_keys_encoding_matches_golden),
            cmocka_unit_test(test_keys_golden_reads_back),
        };
        return cmocka_run_group_tests_name("golden", tests, NULL, NULL);
    }
}
