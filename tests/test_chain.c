/*
 * test_chain.c - the log's hash chain (format-spec/chain.md): the head,
 * the values the MANIFEST keeps for sealed segments, and verify finding
 * every kind of tampering: a record rewritten with a valid checksum (in
 * the active segment and in a sealed one), the last record cut off, a
 * segment dropped, records reordered; and the chain kept whole through
 * sealing, compaction, purge and a store sealed before the chain existed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "bytes.h"
#include "cairn.h"
#include "chain.h"
#include "compact.h"
#include "filehdr.h"
#include "hole.h"
#include "logseg.h"
#include "manifest.h"
#include "record.h"
#include "sealed.h"
#include "store.h"
#include "testutil.h"

typedef struct fx {
    char *dir;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = tu_mkdtemp("chain");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    tu_rmrf(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static cairn_db *open_db(const char *dir, int ro, const char *retain)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_db *db = NULL;
    int rc;
    o.create = !ro;
    o.read_only = ro;
    o.background = 0;
    o.durability = CAIRN_DURABILITY_NONE;
    o.segment_size = 4096; /* many segments, sealed as they fill */
    o.retain = retain;
    rc = cairn_open(&db, dir, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        fail_msg("open %s: %s (%s)", dir, cairn_strerror(rc), err);
    return db;
}

/* n events of about 100 bytes, numbered from k0. */
static void fill(cairn_db *db, int k0, int n)
{
    for (int k = k0; k < k0 + n; k++) {
        char json[128];
        cairn_entry en;
        memset(&en, 0, sizeof en);
        snprintf(json, sizeof json, "{\"k\":%d,\"pad\":\"%060d\"}", k, k);
        en.type = CAIRN_REC_EVENT;
        en.ns = "agent";
        en.ns_len = 5;
        en.json = json;
        en.json_len = strlen(json);
        assert_int_equal(cairn_append(db, &en, NULL), CAIRN_OK);
    }
}

static cairn_head head_of(const char *dir)
{
    cairn_db *db = open_db(dir, 1, NULL);
    cairn_head h;
    assert_int_equal(cairn_head_get(db, &h), CAIRN_OK);
    cairn_close(db);
    return h;
}

typedef struct seen {
    uint64_t n;
    char last[CAIRN_ERRMSG_MAX];
} seen;

static void on_problem(void *user, const char *file, uint64_t off, int code, const char *msg)
{
    seen *s = user;
    (void)file;
    (void)off;
    (void)code;
    s->n++;
    snprintf(s->last, sizeof s->last, "%s", msg);
}

/* Problems verify finds, with want (may be NULL); *first_bad. */
static uint64_t verify(const char *dir, const cairn_head *want, uint64_t *first_bad, seen *s)
{
    cairn_db *db = open_db(dir, 1, NULL);
    cairn_verify_report r;
    seen local = {0, ""};
    if (s == NULL)
        s = &local;
    assert_int_equal(cairn_verify_head(db, want, on_problem, s, &r), CAIRN_OK);
    assert_int_equal(r.problems, s->n);
    /* a head is proven exactly when the chain found nothing (these stores
     * have no index files to find problems in) */
    if (want != NULL)
        assert_int_equal(r.head_proven, r.problems == 0);
    cairn_close(db);
    if (first_bad != NULL)
        *first_bad = r.first_bad;
    return r.problems;
}

static manifest read_manifest(const char *dir)
{
    char *p = tu_join(dir, "MANIFEST");
    size_t len;
    uint8_t *b = tu_read_file(p, &len);
    manifest m;
    cairn__err e;
    assert_non_null(b);
    assert_int_equal(cairn__manifest_decode(b, len, NULL, &m, &e), CAIRN_OK);
    free(b);
    free(p);
    return m;
}

/* A store of 200 events: several sealed segments and an active one. */
static void make_store(const char *dir)
{
    cairn_db *db = open_db(dir, 0, NULL);
    fill(db, 0, 200);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* The record at seq in a log-form segment file: its offset and length. */
static int find_in_log(const uint8_t *b, size_t len, uint64_t seq, size_t *off, size_t *rlen)
{
    for (size_t p = 64; p + 40 <= len;) {
        size_t l = get_le32(b + p);
        if (l < 40 || p + l > len)
            return 0;
        if (get_le64(b + p + 8) == seq) {
            *off = p;
            *rlen = l;
            return 1;
        }
        p += l;
    }
    return 0;
}

/* Set a record's checksum right again, as a forger would. */
static void reseal_record(uint8_t *rec, size_t len, uint64_t salt)
{
    put_le64(rec + len - 8, XXH3_64bits_withSeed(rec, len - 8, salt));
}

/* Change a payload byte of record seq in the active segment and give it a
 * valid checksum. */
static void forge_active(const char *dir, uint64_t seq)
{
    char *p = tu_find_last(dir, ".log");
    size_t len, off, rlen;
    uint8_t *b;
    assert_non_null(p);
    b = tu_read_file(p, &len);
    assert_true(find_in_log(b, len, seq, &off, &rlen));
    b[off + rlen - 10] ^= 0x01; /* a digit of the padding */
    reseal_record(b + off, rlen, get_le64(b + 24));
    assert_int_equal(tu_write_file(p, b, len), 0);
    free(b);
    free(p);
}

/* ---- the definition ------------------------------------------------------ */

static void test_step_is_sha256_of_the_previous_value_and_the_record(void **state)
{
    /* Expected values from Python's hashlib, an independent SHA-256. */
    static const char *abc = "589f9ffed4c477966bfb8d41f37895b08c69047df8f911d6f3b57fbe08faee8d";
    static const char *leaf = "a2c21e8a98ed6ea5b0ce98bbaf291553eda8ee653257ec5df955a50567222f67";
    static const char *one = "bc87292f920aa7566271aea8ca007710e6a6ea2c01855a7264a2b317c645e55b";
    static const char *two = "da3eba2a758f930da90495782b6e44cafd2e3900f10d1e7f55b8e774f22f3d20";
    uint8_t h[CHAIN_LEN] = {0};
    char hex[2 * CHAIN_LEN + 1];
    cairn__chain c;
    size_t len;
    const char *gd = getenv("CAIRN_GOLDEN_DIR");
    char *path = tu_join(gd && *gd ? gd : "tests/golden", "record-v1.bin");
    uint8_t *rec = tu_read_file(path, &len);
    (void)state;
    assert_non_null(rec);
    assert_int_equal(cairn__chain_init(&c), CAIRN_OK);
    assert_int_equal(cairn__chain_step(&c, h, (const uint8_t *)"abc", 3), CAIRN_OK);
    cairn__chain_hex(h, hex);
    assert_string_equal(hex, abc);
    assert_int_equal(cairn__chain_leaf(&c, rec, len, h), CAIRN_OK);
    cairn__chain_hex(h, hex);
    assert_string_equal(hex, leaf);
    memset(h, 0, sizeof h);
    assert_int_equal(cairn__chain_step(&c, h, rec, len), CAIRN_OK);
    cairn__chain_hex(h, hex);
    assert_string_equal(hex, one);
    assert_int_equal(cairn__chain_step(&c, h, rec, len), CAIRN_OK);
    cairn__chain_hex(h, hex);
    assert_string_equal(hex, two);
    /* hex parses back, in either case, and nothing else does */
    assert_true(cairn__chain_unhex(two, 64, h));
    cairn__chain_hex(h, hex);
    assert_string_equal(hex, two);
    assert_false(cairn__chain_unhex(two, 63, h));
    assert_false(cairn__chain_unhex("zz", 2, h));
    cairn__chain_free(&c);
    free(rec);
    free(path);
}

/* ---- the head and the MANIFEST's values ---------------------------------- */

static void test_head_covers_every_record_and_sealing_keeps_it(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, NULL);
    cairn_head h1, h2, h3;
    manifest m;
    size_t chained = 0;

    fill(db, 0, 200);
    assert_int_equal(cairn_head_get(db, &h1), CAIRN_OK); /* the writer's own */
    assert_int_equal(h1.seq, 200);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    h2 = head_of(f->dir); /* a reader's, after the close sealed what was closed */
    assert_int_equal(h2.seq, 200);
    assert_memory_equal(h1.hash, h2.hash, CAIRN_HASH_LEN);
    m = read_manifest(f->dir);
    assert_true(m.n > 3);
    for (size_t i = 0; i < m.n; i++) {
        if (m.e[i].kind != SEG_SEALED)
            continue;
        /* each value the MANIFEST keeps is a head of the store */
        cairn_head at = {m.e[i].last_seq, {0}};
        assert_true(m.e[i].chained);
        memcpy(at.hash, m.e[i].chain, CAIRN_HASH_LEN);
        assert_int_equal(verify(f->dir, &at, NULL, NULL), 0);
        chained++;
    }
    assert_true(chained >= 3);
    cairn__manifest_free(NULL, &m);
    assert_int_equal(verify(f->dir, &h2, NULL, NULL), 0);
    /* one more record: a new head, and the old one still proven */
    db = open_db(f->dir, 0, NULL);
    fill(db, 200, 1);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    h3 = head_of(f->dir);
    assert_int_equal(h3.seq, 201);
    assert_memory_not_equal(h3.hash, h2.hash, CAIRN_HASH_LEN);
    assert_int_equal(verify(f->dir, &h2, NULL, NULL), 0);
    assert_int_equal(verify(f->dir, &h3, NULL, NULL), 0);
}

static void test_an_empty_log_has_head_zero(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, NULL);
    static const uint8_t zero[CAIRN_HASH_LEN];
    cairn_head h;
    assert_int_equal(cairn_head_get(db, &h), CAIRN_OK);
    assert_int_equal(h.seq, 0);
    assert_memory_equal(h.hash, zero, CAIRN_HASH_LEN);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* ---- tampering ----------------------------------------------------------- */

static void test_a_head_of_another_history_is_not_proven(void **state)
{
    fx *f = *state;
    cairn_head h, bad;
    uint64_t first_bad;
    seen s = {0, ""};
    make_store(f->dir);
    h = head_of(f->dir);
    bad = h;
    bad.hash[7] ^= 0x40;
    assert_int_equal(verify(f->dir, &bad, &first_bad, &s), 1);
    assert_non_null(strstr(s.last, "not the history that head names"));
    assert_int_equal(first_bad, 0); /* where is not known: the head is all there is */
    /* a head past the end: the records after the log's end are missing */
    bad = h;
    bad.seq = h.seq + 3;
    s.n = 0;
    assert_int_equal(verify(f->dir, &bad, &first_bad, &s), 1);
    assert_int_equal(first_bad, h.seq + 1);
    assert_non_null(strstr(s.last, "missing"));
}

static void test_the_last_record_cut_off_is_found_with_the_head(void **state)
{
    fx *f = *state;
    char *p;
    size_t len, off, rlen;
    uint8_t *b;
    cairn_head h;
    uint64_t first_bad;
    make_store(f->dir);
    h = head_of(f->dir);
    p = tu_find_last(f->dir, ".log");
    b = tu_read_file(p, &len);
    assert_true(find_in_log(b, len, h.seq, &off, &rlen));
    assert_int_equal(off + rlen, len); /* the last whole record */
    assert_int_equal(tu_write_file(p, b, off), 0);
    assert_int_equal(verify(f->dir, &h, &first_bad, NULL), 1);
    assert_int_equal(first_bad, h.seq);
    free(b);
    free(p);
}

static void test_a_record_rewritten_with_its_checksum_is_found(void **state)
{
    fx *f = *state;
    cairn_head h;
    uint64_t first_bad;
    manifest m;
    make_store(f->dir);
    h = head_of(f->dir);
    forge_active(f->dir, h.seq - 1);
    /* the record checksums all hold: only the chain tells, and says the
     * MANIFEST's values hold up to the last sealed segment */
    {
        seen s = {0, ""};
        char up_to[64];
        assert_int_equal(verify(f->dir, NULL, NULL, NULL), 0);
        assert_int_equal(verify(f->dir, &h, &first_bad, &s), 1);
        m = read_manifest(f->dir);
        snprintf(up_to, sizeof up_to, "up to %llu:",
                 (unsigned long long)m.e[m.n - 2].last_seq);
        assert_non_null(strstr(s.last, up_to));
        cairn__manifest_free(NULL, &m);
    }
}

/* Rewrite the sealed segment of entry x (compacted or not) with record seq
 * changed and every checksum of the file (records, frames, index, footer)
 * right again, its holes as they are. */
static void forge_sealed(const char *dir, const manifest_entry *x, uint64_t seq)
{
    char name[64], *p;
    sealed_seg s;
    cairn__sealw w;
    cairn__err e;
    size_t len, cap = 0, raw_len;
    uint8_t *b, *raw = NULL;
    uint64_t size;
    int found = 0, dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (x->rev == 0)
        snprintf(name, sizeof name, "%016llx.seg", (unsigned long long)x->id);
    else
        snprintf(name, sizeof name, "%016llx-%08x.seg", (unsigned long long)x->id, x->rev);
    p = tu_join(dir, name);
    b = tu_read_file(p, &len);
    assert_non_null(b);
    assert_int_equal(cairn__sealed_open(b, len, &s, name, &e), CAIRN_OK);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(cairn__sealw_begin(&w, cairn_io_default(), NULL, dfd, name, s.id, s.salt,
                                        s.base_seq, s.created_ms, 0, s.dict, s.dict_len, &e),
                     CAIRN_OK);
    for (uint32_t i = 0; i < s.block_count; i++) {
        assert_int_equal(cairn__sealed_read_block(&s, i, NULL, &raw, &cap, &raw_len, name, &e),
                         CAIRN_OK);
        for (size_t pos = 0; pos < raw_len;) {
            size_t l = get_le32(raw + pos), rl;
            cairn_record rec;
            uint64_t upto;
            assert_int_equal(cairn__record_decode(raw + pos, raw_len - pos, s.salt, &rec, &rl),
                             REC_OK);
            upto = rec.seq;
            if (s.version >= 2 && rec.type == CAIRN_REC_COMPACTED) {
                cairn__hole h;
                assert_int_equal(cairn__hole_decode(rec.json, rec.json_len, rec.seq, &h, &e),
                                 CAIRN_OK);
                upto = h.upto;
            }
            if (rec.seq == seq) {
                raw[pos + l - 14] ^= 0x01; /* a padding digit */
                reseal_record(raw + pos, l, s.salt);
                found = 1;
            }
            assert_int_equal(cairn__sealw_add(&w, raw + pos, l, rec.seq, upto, rec.ts_ms, &e),
                             CAIRN_OK);
            pos += l;
        }
    }
    assert_true(found);
    assert_int_equal(cairn__sealw_finish(&w, &size, &e), CAIRN_OK);
    free(raw);
    free(b);
    free(p);
    close(dfd);
}

static void test_a_sealed_record_rewritten_whole_file_is_found_by_the_manifest(void **state)
{
    fx *f = *state;
    cairn_head h;
    uint64_t first_bad;
    seen s = {0, ""};
    manifest m;
    size_t k;
    make_store(f->dir);
    h = head_of(f->dir);
    m = read_manifest(f->dir);
    k = 1; /* the second sealed segment */
    assert_int_equal(m.e[k].kind, SEG_SEALED);
    forge_sealed(f->dir, &m.e[k], m.e[k].base_seq + 2);
    /* no head needed: the MANIFEST's value for that segment differs */
    assert_int_equal(verify(f->dir, NULL, &first_bad, &s), 1);
    assert_int_equal(first_bad, m.e[k].base_seq);
    assert_non_null(strstr(s.last, "MANIFEST kept"));
    /* and with the head: that, and the head not proven */
    assert_int_equal(verify(f->dir, &h, &first_bad, NULL), 2);
    assert_int_equal(first_bad, m.e[k].base_seq);
    cairn__manifest_free(NULL, &m);
}

static void test_a_dropped_segment_is_found(void **state)
{
    fx *f = *state;
    cairn_head h;
    uint64_t first_bad;
    manifest m;
    char name[64], *p;
    const cairn__err *unused = NULL;
    (void)unused;
    make_store(f->dir);
    h = head_of(f->dir);
    m = read_manifest(f->dir);
    assert_int_equal(m.e[1].kind, SEG_SEALED);
    assert_int_equal(m.e[2].kind, SEG_SEALED);
    /* segment 1 goes, file and entry: the numbers read as retired ones */
    snprintf(name, sizeof name, "%016llx.seg", (unsigned long long)m.e[1].id);
    p = tu_join(f->dir, name);
    assert_int_equal(unlink(p), 0);
    free(p);
    {
        uint64_t dropped_base = m.e[1].base_seq;
        int dfd = open(f->dir, O_RDONLY | O_DIRECTORY);
        cairn__err e;
        memmove(&m.e[1], &m.e[2], (m.n - 2) * sizeof *m.e);
        m.n--;
        assert_int_equal(cairn__manifest_write(cairn_io_default(), dfd, &m, NULL, &e), CAIRN_OK);
        close(dfd);
        assert_true(verify(f->dir, NULL, &first_bad, NULL) >= 1);
        assert_int_equal(first_bad, m.e[1].base_seq); /* the segment after the gap */
        assert_true(first_bad > dropped_base);
        assert_true(verify(f->dir, &h, &first_bad, NULL) >= 2);
    }
    cairn__manifest_free(NULL, &m);
}

static void test_reordered_records_are_found(void **state)
{
    fx *f = *state;
    cairn_head h;
    uint64_t first_bad;
    char *p;
    size_t len, o1, l1, o2, l2;
    uint8_t *b, tmp[256];
    make_store(f->dir);
    h = head_of(f->dir);
    p = tu_find_last(f->dir, ".log");
    b = tu_read_file(p, &len);
    /* two records of one length swap their payloads: each keeps its seq
     * and gets a valid checksum, the history's order changes */
    assert_true(find_in_log(b, len, h.seq - 3, &o1, &l1));
    assert_true(find_in_log(b, len, h.seq - 2, &o2, &l2));
    assert_int_equal(l1, l2);
    assert_true(l1 - 32 <= sizeof tmp);
    memcpy(tmp, b + o1 + 32, l1 - 40);
    memcpy(b + o1 + 32, b + o2 + 32, l1 - 40);
    memcpy(b + o2 + 32, tmp, l1 - 40);
    reseal_record(b + o1, l1, get_le64(b + 24));
    reseal_record(b + o2, l2, get_le64(b + 24));
    assert_int_equal(tu_write_file(p, b, len), 0);
    assert_int_equal(verify(f->dir, NULL, NULL, NULL), 0); /* every checksum holds */
    assert_int_equal(verify(f->dir, &h, &first_bad, NULL), 1);
    assert_true(first_bad <= h.seq - 3);
    free(b);
    free(p);
}

/* A torn tail after the head's seq (what a crash leaves until the next
 * writer's open) is a problem, but the head's history is whole. */
static void test_a_torn_tail_after_the_head_leaves_it_proven(void **state)
{
    fx *f = *state;
    cairn_verify_report r;
    cairn_db *db;
    cairn_head h;
    char *p;
    FILE *fp;
    make_store(f->dir);
    h = head_of(f->dir);
    p = tu_find_last(f->dir, ".log");
    fp = fopen(p, "ab");
    assert_non_null(fp);
    fputs("\x50\x00\x00\x00torn", fp); /* a record's start, cut short */
    fclose(fp);
    free(p);
    db = open_db(f->dir, 1, NULL);
    assert_int_equal(cairn_verify_head(db, &h, NULL, NULL, &r), CAIRN_OK);
    assert_int_equal(r.problems, 1);
    assert_true(r.head_proven);
    h.seq -= 1; /* the tail is after this head too... */
    assert_int_equal(cairn_verify_head(db, &h, NULL, NULL, &r), CAIRN_OK);
    assert_false(r.head_proven); /* ...whose hash is another one */
    cairn_close(db);
}

/* ---- compaction, purge, old stores ---------------------------------------- */

static void store_mem(cairn_mem *m, const char *content, char id[CAIRN_MEM_ID_MAX + 1])
{
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_memory *mem = NULL;
    assert_int_equal(cairn_mem_store(m, content, &o, &mem, NULL), CAIRN_OK);
    snprintf(id, CAIRN_MEM_ID_MAX + 1, "%s", mem->id);
    cairn_mem_free(mem);
}

static void test_compaction_and_purge_keep_every_head_proven(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:0");
    cairn_mem *m = NULL;
    char ids[120][CAIRN_MEM_ID_MAX + 1], text[160];
    cairn_head h_before, h_mid, h_after;
    cairn_compact_report rep;
    cairn_purge_report pr;

    assert_int_equal(cairn_mem_open(db, NULL, &m), CAIRN_OK);
    for (int i = 0; i < 120; i++) {
        snprintf(text, sizeof text, "memory %d about the build cache, padded %040d", i, i);
        store_mem(m, text, ids[i]);
    }
    assert_int_equal(cairn_head_get(db, &h_mid), CAIRN_OK);
    for (int i = 0; i < 100; i++)
        assert_int_equal(cairn_mem_delete(m, ids[i], "test"), CAIRN_OK);
    fill(db, 0, 60);
    assert_int_equal(cairn_head_get(db, &h_before), CAIRN_OK);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_true(rep.rewritten > 0);
    assert_true(rep.dropped >= 100);
    assert_int_equal(cairn_mem_purge(m, ids[110], &pr), CAIRN_OK);
    assert_true(pr.records >= 1);
    assert_int_equal(cairn_head_get(db, &h_after), CAIRN_OK);
    assert_true(h_after.seq > h_before.seq); /* the purge's own record */
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    /* the holes carry the chain: every head before still holds */
    assert_int_equal(verify(f->dir, NULL, NULL, NULL), 0);
    assert_int_equal(verify(f->dir, &h_before, NULL, NULL), 0);
    assert_int_equal(verify(f->dir, &h_after, NULL, NULL), 0);
    {
        cairn_head now = head_of(f->dir);
        assert_int_equal(now.seq, h_after.seq);
        assert_memory_equal(now.hash, h_after.hash, CAIRN_HASH_LEN);
    }
    /* h_mid's seq now lies in a hole or at a kept record: proven or named */
    {
        seen s = {0, ""};
        uint64_t n = verify(f->dir, &h_mid, NULL, &s);
        assert_true(n == 0 || strstr(s.last, "lies in a hole") != NULL);
    }
}

static void test_a_store_sealed_before_the_chain_gets_its_values(void **state)
{
    fx *f = *state;
    cairn_head h1, h2;
    manifest m;
    cairn_db *db;
    make_store(f->dir);
    h1 = head_of(f->dir);
    tu_manifest_file_as_version(f->dir, 7); /* no chain values */
    m = read_manifest(f->dir);
    for (size_t i = 0; i < m.n; i++)
        assert_false(m.e[i].chained);
    cairn__manifest_free(NULL, &m);
    h2 = head_of(f->dir); /* computed from the first record */
    assert_int_equal(h2.seq, h1.seq);
    assert_memory_equal(h2.hash, h1.hash, CAIRN_HASH_LEN);
    assert_int_equal(verify(f->dir, &h1, NULL, NULL), 0);
    /* the next seal computes the values of the ones before it */
    db = open_db(f->dir, 0, NULL);
    fill(db, 1000, 100);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    m = read_manifest(f->dir);
    assert_int_equal(m.version, MAN_VERSION);
    for (size_t i = 0; i < m.n; i++)
        assert_int_equal(m.e[i].chained, m.e[i].kind == SEG_SEALED);
    cairn__manifest_free(NULL, &m);
    assert_int_equal(verify(f->dir, &h1, NULL, NULL), 0);
    assert_int_equal(verify(f->dir, NULL, NULL, NULL), 0);
}


/* ---- holes, old stores, retired numbers ----------------------------------- */

static int g_run; /* 1: drop k in 40..49 (one long hole) instead of k % 4 == 1 */

/* Compaction's judge for events: drop those whose "k" is 1 mod 4. */
static int drop_some(void *u, const cairn_record *rec, int *verdict)
{
    int k = -1;
    (void)u;
    *verdict = CAIRN__KEEP;
    if (rec->type == CAIRN_REC_EVENT && sscanf(rec->json, "{\"k\":%d", &k) == 1 &&
        (g_run ? (k >= 40 && k < 50) : k % 4 == 1))
        *verdict = CAIRN__DROP_UNREAD;
    return CAIRN_OK;
}

static void compact_now(cairn_db *db, cairn__compact_check_fn before, void *user)
{
    cairn__compact_result out;
    assert_int_equal(cairn__compact_lock(db, 1), CAIRN_OK);
    assert_int_equal(cairn__compact(db, "test", 0, NULL, 0, drop_some, before, NULL, user, NULL,
                                    &out),
                     CAIRN_OK);
    (void)cairn__compact_lock(db, 0);
    assert_true(out.rewritten > 0);
}

/* A kept record before a hole, changed with a valid checksum: the hole's
 * chain_in no longer follows, with or without a head kept elsewhere. */
static void test_a_change_before_a_hole_is_found(void **state)
{
    fx *f = *state;
    cairn_db *db;
    cairn_head h0, h1;
    manifest m;
    seen s = {0, ""};
    uint64_t fb = 0, seq;
    make_store(f->dir);
    h0 = head_of(f->dir);
    db = open_db(f->dir, 0, NULL);
    compact_now(db, NULL, NULL);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    h1 = head_of(f->dir);
    assert_int_equal(h1.seq, h0.seq);
    assert_memory_equal(h1.hash, h0.hash, CAIRN_HASH_LEN);
    assert_int_equal(verify(f->dir, &h0, NULL, NULL), 0);
    m = read_manifest(f->dir);
    assert_true(m.e[1].kind == SEG_SEALED && m.e[1].rev == 1 && m.e[1].chained);
    /* seq s holds k = s - 1: a kept one (k % 4 != 1), a hole after it */
    for (seq = m.e[1].base_seq; (seq - 1) % 4 == 1; seq++)
        ;
    forge_sealed(f->dir, &m.e[1], seq);
    assert_int_equal(verify(f->dir, NULL, &fb, &s), 1);
    assert_non_null(strstr(s.last, "does not follow the hash chain before it"));
    assert_true(fb >= m.e[1].base_seq && fb <= seq);
    s.n = 0;
    assert_int_equal(verify(f->dir, &h0, &fb, &s), 1);
    assert_true(fb >= m.e[1].base_seq && fb <= seq);
    cairn__manifest_free(NULL, &m);
}

/* A purge's holes list their records' leaves: the chain goes through them
 * (not on trust), and a changed leaf is found. */
static void test_a_purge_hole_is_checked_through_its_leaves(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, NULL);
    cairn_mem *m = NULL;
    cairn_purge_report pr;
    cairn_verify_report vr;
    cairn_iter *it = NULL;
    cairn_record r;
    cairn_head h;
    char id[CAIRN_MEM_ID_MAX + 1];
    int holes = 0;

    assert_int_equal(cairn_mem_open(db, NULL, &m), CAIRN_OK);
    store_mem(m, "a secret that must go, padded to be long enough to matter", id);
    fill(db, 0, 80);
    assert_int_equal(cairn_head_get(db, &h), CAIRN_OK);
    assert_int_equal(cairn_mem_purge(m, id, &pr), CAIRN_OK);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_db(f->dir, 1, NULL);
    {
        cairn_range rg = CAIRN_RANGE_INIT;
        rg.type = CAIRN_REC_COMPACTED;
        assert_int_equal(cairn_iter_open(db, &rg, &it), CAIRN_OK);
        while (cairn_iter_next(it, &r) == CAIRN_OK) {
            char *json = strndup(r.json, r.json_len);
            assert_non_null(strstr(json, "\"leaves\":[\""));
            assert_non_null(strstr(json, "\"chain_in\":\""));
            free(json);
            holes++;
        }
        cairn_iter_close(it);
    }
    assert_true(holes >= 1);
    assert_int_equal(cairn_verify_head(db, &h, NULL, NULL, &vr), CAIRN_OK);
    assert_int_equal(vr.problems, 0);
    assert_true(vr.head_proven);
    assert_int_equal(vr.holes, 0); /* nothing taken on trust */
    cairn_close(db);
}

/* Everything rewritten, the MANIFEST's values too: the head kept elsewhere
 * finds it, and no first seq is claimed that could be wrong. */
static void test_a_full_rewrite_is_found_by_the_head_alone(void **state)
{
    fx *f = *state;
    cairn_db *db;
    cairn_head h;
    manifest m;
    uint64_t fb = 1;
    seen s = {0, ""};
    make_store(f->dir);
    h = head_of(f->dir);
    m = read_manifest(f->dir);
    forge_sealed(f->dir, &m.e[1], m.e[1].base_seq + 2);
    cairn__manifest_free(NULL, &m);
    tu_manifest_file_as_version(f->dir, 7); /* the next seal recomputes every value */
    db = open_db(f->dir, 0, NULL);
    fill(db, 1000, 100);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_int_equal(verify(f->dir, NULL, NULL, NULL), 0);
    assert_int_equal(verify(f->dir, &h, &fb, &s), 1);
    assert_int_equal(fb, 0);
    assert_non_null(strstr(s.last, "or they were rewritten too"));
}

/* A store without values (version 7) compacted while a seal fills them in,
 * and one compacted before any seal: every hole carries the chain, so the
 * store verifies and a head taken before stays proven. */
static int seal_meanwhile(void *u)
{
    cairn_db *db = u;
    fill(db, 5000, 60);
    return cairn_seal(db);
}

static void test_an_old_store_compacted_keeps_its_chain(void **state)
{
    fx *f = *state;
    cairn_db *db;
    cairn_head h;
    make_store(f->dir);
    tu_manifest_file_as_version(f->dir, 7);
    h = head_of(f->dir);
    db = open_db(f->dir, 0, NULL);
    compact_now(db, NULL, NULL);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_int_equal(verify(f->dir, &h, NULL, NULL), 0);
    tu_rmrf(f->dir);
    make_store(f->dir);
    tu_manifest_file_as_version(f->dir, 7);
    h = head_of(f->dir);
    db = open_db(f->dir, 0, NULL);
    compact_now(db, seal_meanwhile, db);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_int_equal(verify(f->dir, NULL, NULL, NULL), 0);
    assert_int_equal(verify(f->dir, &h, NULL, NULL), 0);
}

/* A seq inside a hole has no value; its ends have. */
static void test_a_head_inside_a_hole_is_refused(void **state)
{
    fx *f = *state;
    cairn_db *db;
    cairn_head h;
    seen s = {0, ""};
    make_store(f->dir);
    db = open_db(f->dir, 0, NULL);
    g_run = 1; /* k 40..49: seqs 41..50 */
    compact_now(db, NULL, NULL);
    g_run = 0;
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_db(f->dir, 1, NULL);
    {
        cairn_replay_report rr;
        char *copy = tu_join(f->dir, "copy");
        assert_int_equal(cairn_replay(db, 50, copy, &rr), CAIRN_OK);
        h = rr.head; /* the value at 50, the hole's end */
        tu_rmrf(copy);
        assert_int_equal(cairn_replay(db, 45, copy, &rr), CAIRN_ENOTFOUND);
        free(copy);
    }
    cairn_close(db);
    assert_int_equal(verify(f->dir, &h, NULL, NULL), 0);
    h.seq = 41; /* the hole's first seq: the same hash is not its value */
    assert_int_equal(verify(f->dir, &h, NULL, &s), 1);
    assert_non_null(strstr(s.last, "lies in a hole"));
}

/* An empty segment after retired numbers: the head's seq is the last
 * record's, not a retired number. */
static void build_gap_then_empty(const char *dir)
{
    const cairn_io *io = cairn_io_default();
    cairn_db *db = open_db(dir, 0, NULL);
    manifest man;
    manifest_entry *x;
    logseg seg;
    cairn__err e;
    char *p;
    size_t len, off, rlen;
    uint8_t *b;
    int dfd;
    int64_t ts;
    fill(db, 0, 10); /* seqs 1..10 in segment 1 (active) */
    assert_int_equal(cairn_close(db), CAIRN_OK);
    dfd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_int_equal(cairn__manifest_read(io, dfd, NULL, &man, &e), CAIRN_OK);
    assert_int_equal(man.n, 1);
    p = tu_join(dir, "0000000000000001.log");
    b = tu_read_file(p, &len);
    assert_true(find_in_log(b, len, 10, &off, &rlen));
    ts = (int64_t)get_le64(b + off + 16);
    x = realloc(man.e, 3 * sizeof *x);
    assert_non_null(x);
    man.e = x;
    x[0].kind = SEG_CLOSED;
    x[0].count = 10;
    x[0].last_seq = 10;
    x[0].first_ts = ts;
    x[0].last_ts = ts;
    memset(&x[1], 0, sizeof x[1]);
    x[1].id = 2;
    x[1].kind = SEG_CLOSED;
    x[1].base_seq = 11;
    x[1].last_seq = 15;
    x[1].count = 5;
    x[1].first_ts = ts;
    x[1].last_ts = ts;
    memset(&x[2], 0, sizeof x[2]);
    x[2].id = 3;
    x[2].kind = SEG_ACTIVE;
    x[2].base_seq = 16;
    man.n = 3;
    man.next_id = 4;
    man.generation++;
    assert_int_equal(cairn__logseg_create(io, dfd, &seg, 2, 0x1234567, 11, ts, &e), CAIRN_OK);
    cairn__logseg_free(io, NULL, &seg);
    assert_int_equal(cairn__logseg_create(io, dfd, &seg, 3, 0x7654321, 16, ts, &e), CAIRN_OK);
    cairn__logseg_free(io, NULL, &seg);
    assert_int_equal(cairn__manifest_write(io, dfd, &man, NULL, &e), CAIRN_OK);
    cairn__manifest_free(NULL, &man);
    /* segment 1 torn inside seq 6: 6..10 retired; segment 2 empty */
    assert_true(find_in_log(b, len, 6, &off, &rlen));
    assert_int_equal(truncate(p, (off_t)(off + 5)), 0);
    free(b);
    free(p);
    close(dfd);
    db = open_db(dir, 0, NULL); /* recovery, then the seals */
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_the_head_after_retired_numbers_is_the_last_record(void **state)
{
    fx *f = *state;
    cairn_head h;
    build_gap_then_empty(f->dir);
    h = head_of(f->dir);
    assert_int_equal(h.seq, 5);
    assert_int_equal(verify(f->dir, NULL, NULL, NULL), 0);
    assert_int_equal(verify(f->dir, &h, NULL, NULL), 0);
}

/* The empty history's head, 0 and the zero hash, is a head of every store. */
static void test_the_empty_head_is_proven(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, NULL);
    cairn_head h;
    assert_int_equal(cairn_head_get(db, &h), CAIRN_OK);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_int_equal(h.seq, 0);
    assert_int_equal(verify(f->dir, &h, NULL, NULL), 0);
    make_store(f->dir);
    assert_int_equal(verify(f->dir, &h, NULL, NULL), 0);
    h.hash[0] = 1;
    assert_int_equal(verify(f->dir, &h, NULL, NULL), 1);
}

/* ---- replay ---------------------------------------------------------------- */

/* Every record of a up to seq `to` is in b, the same, and b has no more. */
static void same_records_upto(const char *a_dir, const char *b_dir, uint64_t to)
{
    cairn_db *a = open_db(a_dir, 1, NULL), *b = open_db(b_dir, 1, NULL);
    cairn_range rg = CAIRN_RANGE_INIT;
    cairn_iter *ia = NULL, *ib = NULL;
    cairn_record ra, rb;
    uint64_t n = 0;
    rg.seq_to = to;
    assert_int_equal(cairn_iter_open(a, &rg, &ia), CAIRN_OK);
    assert_int_equal(cairn_iter_open(b, NULL, &ib), CAIRN_OK);
    while (cairn_iter_next(ia, &ra) == CAIRN_OK) {
        assert_int_equal(cairn_iter_next(ib, &rb), CAIRN_OK);
        assert_int_equal(ra.seq, rb.seq);
        assert_int_equal(ra.ts_ms, rb.ts_ms);
        assert_int_equal(ra.type, rb.type);
        assert_int_equal(ra.json_len, rb.json_len);
        assert_memory_equal(ra.json, rb.json, ra.json_len);
        assert_int_equal(ra.ns_len, rb.ns_len);
        n++;
    }
    assert_int_not_equal(cairn_iter_next(ib, &rb), CAIRN_OK);
    assert_true(n > 0);
    cairn_iter_close(ia);
    cairn_iter_close(ib);
    cairn_close(a);
    cairn_close(b);
}

static void test_replay_copies_the_log_up_to_a_seq_and_checks_it(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:0");
    cairn_mem *m = NULL;
    char ids[40][CAIRN_MEM_ID_MAX + 1], text[160], *copy;
    cairn_compact_report rep;
    cairn_replay_report rr;
    uint64_t seed = 7;
    cairn_head h;
    int done = 0, refused = 0;

    assert_int_equal(cairn_mem_open(db, NULL, &m), CAIRN_OK);
    fill(db, 0, 50);
    for (int i = 0; i < 40; i++) {
        snprintf(text, sizeof text, "replayed memory %d, padded %040d", i, i);
        store_mem(m, text, ids[i]);
    }
    for (int i = 0; i < 20; i++)
        assert_int_equal(cairn_mem_delete(m, ids[i], "test"), CAIRN_OK);
    fill(db, 50, 50);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_true(rep.dropped > 0);
    cairn_mem_close(m);
    assert_int_equal(cairn_head_get(db, &h), CAIRN_OK);
    /* seqs at random, through sealed, compacted and active segments; a
     * seq inside a hole is refused and names the hole */
    for (int k = 0; k < 12; k++) {
        uint64_t to = 1 + tu_splitmix64(&seed) % h.seq;
        int rc;
        copy = tu_join(f->dir, "copy");
        tu_rmrf(copy);
        rc = cairn_replay(db, to, copy, &rr);
        if (rc == CAIRN_ENOTFOUND) {
            /* inside a hole, or before what the compaction dropped: the
             * state then is not in the log any more */
            assert_true(strstr(cairn_errmsg(db), "lies in a hole") != NULL ||
                        strstr(cairn_errmsg(db), "cannot be rebuilt") != NULL);
            assert_non_null(strstr(cairn_errmsg(db), "live:0"));
            refused++;
            free(copy);
            continue;
        }
        assert_int_equal(rc, CAIRN_OK);
        assert_int_equal(rr.seq, to);
        assert_int_equal(rr.head.seq, to);
        /* the copy's head is a head of the source */
        assert_int_equal(verify(f->dir, &rr.head, NULL, NULL), 0);
        assert_int_equal(verify(copy, &rr.head, NULL, NULL), 0);
        same_records_upto(f->dir, copy, to);
        done++;
        free(copy);
    }
    assert_true(done >= 3);
    assert_true(refused >= 1);
    /* the whole log: the same head */
    copy = tu_join(f->dir, "copy");
    tu_rmrf(copy);
    assert_int_equal(cairn_replay(db, h.seq, copy, &rr), CAIRN_OK);
    assert_memory_equal(rr.head.hash, h.hash, CAIRN_HASH_LEN);
    /* errors: a directory not empty, a seq past the end */
    assert_int_equal(cairn_replay(db, h.seq - 1, copy, &rr), CAIRN_EEXIST);
    tu_rmrf(copy);
    assert_int_equal(cairn_replay(db, h.seq + 1, copy, &rr), CAIRN_ENOTFOUND);
    /* a view takes no chain value: the end is checked all the same */
    assert_int_equal(cairn_replay_ex(db, h.seq + 5, copy, CAIRN_REPLAY_VIEW, &rr),
                     CAIRN_ENOTFOUND);
    assert_non_null(strstr(cairn_errmsg(db), "past the end of the log"));
    assert_int_equal(cairn_replay(db, 0, copy, &rr), CAIRN_EINVAL);
    free(copy);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* A cut inside a sealed segment of many blocks: the blocks before the one
 * holding the seq are copied as they are (compressed), that one record by
 * record; the copy holds the same records and proves the same head. */
static void test_replay_cuts_a_sealed_segment_of_many_blocks(void **state)
{
    fx *f = *state;
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_db *db = NULL;
    cairn_replay_report rr;
    manifest m;
    uint64_t sealed_last = 0;
    o.create = 1;
    o.background = 0;
    o.durability = CAIRN_DURABILITY_NONE;
    o.segment_size = 1u << 20; /* about 16 blocks of 64 KiB, sealed at the roll */
    if (cairn_open(&db, f->dir, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("open: %s", err);
    fill(db, 0, 12000);
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    m = read_manifest(f->dir);
    for (size_t i = 0; i < m.n; i++)
        if (m.e[i].kind == SEG_SEALED && sealed_last == 0)
            sealed_last = m.e[i].last_seq;
    cairn__manifest_free(NULL, &m);
    assert_true(sealed_last > 4000); /* far past its first block */
    {
        /* the first block, one in the middle, the last record of the file */
        uint64_t tos[3] = {7, sealed_last / 2 + 3, sealed_last};
        for (int k = 0; k < 3; k++) {
            char *copy = tu_join(f->dir, "copy");
            tu_rmrf(copy);
            assert_int_equal(cairn_replay(db, tos[k], copy, &rr), CAIRN_OK);
            assert_int_equal(rr.seq, tos[k]);
            assert_int_equal(verify(f->dir, &rr.head, NULL, NULL), 0);
            assert_int_equal(verify(copy, &rr.head, NULL, NULL), 0);
            same_records_upto(f->dir, copy, tos[k]);
            tu_rmrf(copy);
            free(copy);
        }
    }
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* A view for --as-of: hard links of what it takes whole, this store's id,
 * the index files that cover at most its seq; and the seq at a time. */
static void test_a_view_links_its_files_and_finds_the_seq_at_a_time(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, NULL);
    cairn_mem *m = NULL;
    cairn_replay_report rr;
    cairn_stats a, b;
    cairn_head h;
    char id[CAIRN_MEM_ID_MAX + 1], text[128], *vdir, *p;
    struct stat st;
    uint64_t seq = 0, covered;
    int linked_index = 0;

    assert_int_equal(cairn_mem_open(db, NULL, &m), CAIRN_OK);
    for (int i = 0; i < 60; i++) {
        snprintf(text, sizeof text, "viewed memory %d, padded %040d", i, i);
        store_mem(m, text, id);
    }
    assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK); /* mem-<covered>.cmx */
    assert_int_equal(cairn_head_get(db, &h), CAIRN_OK);
    covered = h.seq;
    fill(db, 0, 40);
    cairn_mem_close(m);
    assert_int_equal(cairn_head_get(db, &h), CAIRN_OK);
    vdir = tu_join(f->dir, ".as-of-test");
    assert_int_equal(mkdir(vdir, 0755), 0);
    assert_int_equal(cairn_replay_ex(db, h.seq - 5, vdir, CAIRN_REPLAY_VIEW, &rr), CAIRN_OK);
    assert_int_equal(cairn_stats_get(db, &a), CAIRN_OK);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    p = tu_join(vdir, "0000000000000001.seg"); /* a sealed segment: the same file */
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_nlink, 2);
    free(p);
    {
        char name[64];
        snprintf(name, sizeof name, "mem-%016llx.cmx", (unsigned long long)covered);
        p = tu_join(vdir, name);
        linked_index = stat(p, &st) == 0 && st.st_nlink == 2;
        free(p);
    }
    assert_true(linked_index);
    db = open_db(vdir, 1, NULL);
    assert_int_equal(cairn_stats_get(db, &b), CAIRN_OK);
    assert_memory_equal(a.store_id, b.store_id, sizeof a.store_id);
    assert_int_equal(b.last_seq, h.seq - 5);
    cairn_close(db);
    tu_rmrf(vdir);
    free(vdir);
    /* the newest seq at or before a time: each record's own, and the last
     * of records sharing a millisecond */
    db = open_db(f->dir, 1, NULL);
    {
        cairn_iter *it = NULL;
        cairn_record r;
        int checked = 0;
        assert_int_equal(cairn_iter_open(db, NULL, &it), CAIRN_OK);
        while (cairn_iter_next(it, &r) == CAIRN_OK) {
            cairn_range rg = CAIRN_RANGE_INIT;
            cairn_iter *j = NULL;
            cairn_record n;
            uint64_t want = r.seq;
            rg.seq_from = r.seq + 1;
            assert_int_equal(cairn_iter_open(db, &rg, &j), CAIRN_OK);
            while (cairn_iter_next(j, &n) == CAIRN_OK && n.ts_ms == r.ts_ms)
                want = n.seq;
            cairn_iter_close(j);
            assert_int_equal(cairn_seq_at_time(db, r.ts_ms, &seq), CAIRN_OK);
            assert_int_equal(seq, want);
            if (++checked == 25)
                break;
        }
        cairn_iter_close(it);
        assert_int_equal(cairn_seq_at_time(db, INT64_MIN + 1, &seq), CAIRN_OK);
        assert_int_equal(seq, 0);
        assert_int_equal(cairn_seq_at_time(db, INT64_MAX, &seq), CAIRN_OK);
        assert_int_equal(seq, h.seq);
    }
    cairn_close(db);
}

/* ---- --as-of against a store rebuilt from the log cut at the seq --------- */

typedef struct digest {
    char *text; /* every live memory, one line each, sorted */
    size_t len, cap;
} digest;

static int digest_one(void *user, cairn_memory *mem)
{
    digest *d = user;
    char line[1024];
    int n = snprintf(line, sizeof line, "%s|%s|%s|%.6f|%s\n", mem->id, mem->ns, mem->content,
                     mem->importance, mem->metadata);
    if (d->len + (size_t)n + 1 > d->cap) {
        d->cap = (d->len + (size_t)n + 1) * 2;
        d->text = realloc(d->text, d->cap);
        assert_non_null(d->text);
    }
    memcpy(d->text + d->len, line, (size_t)n + 1);
    d->len += (size_t)n;
    cairn_mem_free(mem);
    return 0;
}

/* The live memories of the store in dir, as text (ids first: the order of
 * cairn_mem_each is by creation, the same in both). */
static char *memories_of(const char *dir)
{
    cairn_db *db = open_db(dir, 0, NULL);
    cairn_mem *m = NULL;
    digest d = {NULL, 0, 0};
    assert_int_equal(cairn_mem_open(db, NULL, &m), CAIRN_OK);
    assert_int_equal(cairn_mem_each(m, NULL, 0, digest_one, &d), CAIRN_OK);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    return d.text != NULL ? d.text : strdup("");
}

/* A store rebuilt by appending the source's records 1..to again, one by
 * one, into a new store (seqs the same: the source has no gap). */
static void rebuild(const char *src, const char *dst, uint64_t to)
{
    cairn_db *a = open_db(src, 1, NULL), *b = open_db(dst, 0, NULL);
    cairn_range rg = CAIRN_RANGE_INIT;
    cairn_iter *it = NULL;
    cairn_record r;
    rg.seq_to = to;
    assert_int_equal(cairn_iter_open(a, &rg, &it), CAIRN_OK);
    while (cairn_iter_next(it, &r) == CAIRN_OK) {
        cairn_entry en;
        uint64_t seq;
        memset(&en, 0, sizeof en);
        en.type = r.type;
        en.ns = r.ns;
        en.ns_len = r.ns_len;
        en.json = r.json;
        en.json_len = r.json_len;
        en.bin = r.bin;
        en.bin_len = r.bin_len;
        assert_int_equal(cairn_append(b, &en, &seq), CAIRN_OK);
        assert_int_equal(seq, r.seq);
    }
    cairn_iter_close(it);
    cairn_close(a);
    assert_int_equal(cairn_close(b), CAIRN_OK);
}

static void test_as_of_answers_as_a_store_rebuilt_from_the_log_cut_there(void **state)
{
    fx *f = *state;
    static const char *words[] = {"deploy", "rollback", "cache", "flaky", "docker", "token",
                                  "release", "index", "audit", "merge"};
    cairn_db *db = open_db(f->dir, 0, NULL);
    cairn_mem *m = NULL;
    char ids[200][CAIRN_MEM_ID_MAX + 1], text[256];
    size_t n_ids = 0;
    uint64_t seed = 2026, last;
    cairn_head h;
    int compared = 0;

    /* A random history: stores, updates, deletes, restores, checkpoints
     * (index files the views link and fold from) */
    assert_int_equal(cairn_mem_open(db, NULL, &m), CAIRN_OK);
    for (int op = 0; op < 400; op++) {
        uint64_t r = tu_splitmix64(&seed) % 100;
        if (r < 50 || n_ids == 0) {
            int k = snprintf(text, sizeof text, "memory %d:", op);
            for (int w = 0; w < 6; w++)
                k += snprintf(text + k, sizeof text - (size_t)k, " %s",
                              words[tu_splitmix64(&seed) % 10]);
            if (n_ids < 200)
                store_mem(m, text, ids[n_ids++]);
        } else if (r < 70) {
            cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;
            u.importance = (double)(tu_splitmix64(&seed) % 100) / 100.0;
            (void)cairn_mem_update(m, ids[tu_splitmix64(&seed) % n_ids], &u);
        } else if (r < 85) {
            (void)cairn_mem_delete(m, ids[tu_splitmix64(&seed) % n_ids], "test");
        } else if (r < 95) {
            cairn_memory *back = NULL;
            if (cairn_mem_restore(m, ids[tu_splitmix64(&seed) % n_ids], &back) == CAIRN_OK)
                cairn_mem_free(back);
        } else {
            assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK);
        }
    }
    cairn_mem_close(m);
    assert_int_equal(cairn_head_get(db, &h), CAIRN_OK);
    last = h.seq;
    for (int k = 0; k < 8; k++) {
        uint64_t to = 1 + tu_splitmix64(&seed) % last;
        char *vdir = tu_join(f->dir, ".as-of-1-test"), *rdir = tu_join(f->dir, "rebuilt");
        char *va, *vb;
        cairn_replay_report rr;
        tu_rmrf(vdir);
        tu_rmrf(rdir);
        assert_int_equal(cairn_replay_ex(db, to, vdir, CAIRN_REPLAY_VIEW, &rr), CAIRN_OK);
        rebuild(f->dir, rdir, to);
        va = memories_of(vdir);
        vb = memories_of(rdir);
        assert_string_equal(va, vb);
        compared += va[0] != '\0';
        free(va);
        free(vb);
        tu_rmrf(vdir);
        tu_rmrf(rdir);
        free(vdir);
        free(rdir);
    }
    assert_true(compared >= 6);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_is_sha256_of_the_previous_value_and_the_record),
        cmocka_unit_test_setup_teardown(test_head_covers_every_record_and_sealing_keeps_it,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_empty_log_has_head_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_head_of_another_history_is_not_proven, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_the_last_record_cut_off_is_found_with_the_head,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_record_rewritten_with_its_checksum_is_found,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_sealed_record_rewritten_whole_file_is_found_by_the_manifest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_dropped_segment_is_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reordered_records_are_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_torn_tail_after_the_head_leaves_it_proven, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_compaction_and_purge_keep_every_head_proven, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_store_sealed_before_the_chain_gets_its_values,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_copies_the_log_up_to_a_seq_and_checks_it,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_change_before_a_hole_is_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_purge_hole_is_checked_through_its_leaves, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_full_rewrite_is_found_by_the_head_alone, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_an_old_store_compacted_keeps_its_chain, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_head_inside_a_hole_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_head_after_retired_numbers_is_the_last_record,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_empty_head_is_proven, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_cuts_a_sealed_segment_of_many_blocks, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_view_links_its_files_and_finds_the_seq_at_a_time,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_as_of_answers_as_a_store_rebuilt_from_the_log_cut_there, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
