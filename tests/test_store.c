/*
 * test_store.c - the public API of a store (cairn.h): opening and creating,
 * appending (single and batch), reading back (iteration by sequence, time
 * and type; cairn_get), read-only handles, stats, and the segment life cycle
 * (roll, seal; inline and in the background thread) as seen through the API.
 *
 * The content of record k is a pure function of k (gen_entry), so every
 * read can be checked against what was appended. Timestamps are chosen by
 * the engine; the tests take them from a full read-back (itself checked to
 * lie between the wall clock before and after each append) and derive the
 * expected answer of every time-range query from that list by brute force.
 * Each test works in a fresh temporary directory and removes it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <errno.h>
#include "cairn.h"
#include "cairn_sys.h"
#include "store.h"
#include "testutil.h"

#define JSON_MAX 512

/* ------------------------------------------------------------------------
 * Record content: a deterministic function of k.
 * ---------------------------------------------------------------------- */

static const uint16_t gen_types[3] = {CAIRN_REC_EVENT, 0x8001u, 0x8002u};

typedef struct gen {
    char json[JSON_MAX];
    uint8_t bin[16];
    cairn_entry e;
} gen;

static const cairn_entry *gen_entry(unsigned k, gen *g)
{
    static const char *const nss[] = {"", "agent/a", "agent/bb", "tools/x"};
    static const char filler[] = "observation observation observation ";
    size_t want = 40 + (k * 53u) % 200u, n;
    memset(&g->e, 0, sizeof g->e);
    n = (size_t)snprintf(g->json, sizeof g->json, "{\"k\":%u,\"t\":\"", k);
    for (; n < want; n++)
        g->json[n] = filler[n % (sizeof filler - 1)];
    g->json[n++] = '"';
    g->json[n++] = '}';
    g->e.type = gen_types[k % 3];
    g->e.ns = nss[k % 4];
    g->e.ns_len = strlen(g->e.ns);
    g->e.json = g->json;
    g->e.json_len = n;
    if (k % 5 == 4) {
        for (unsigned i = 0; i < sizeof g->bin; i++)
            g->bin[i] = (uint8_t)(k * 3 + i);
        g->e.bin = g->bin;
        g->e.bin_len = sizeof g->bin;
    }
    return &g->e;
}

/* Encoded size of record k (format-spec/record.md: 40 bytes of overhead). */
static uint64_t gen_size(unsigned k)
{
    gen g;
    const cairn_entry *e = gen_entry(k, &g);
    return 40u + e->ns_len + e->json_len + e->bin_len;
}

/* Does rec hold exactly the content of record k? */
static void check_content(const cairn_record *rec, unsigned k)
{
    gen g;
    const cairn_entry *e = gen_entry(k, &g);
    if (rec->type != e->type || rec->ns_len != e->ns_len || rec->json_len != e->json_len ||
        rec->bin_len != e->bin_len)
        fail_msg("seq %llu: type/lengths differ from record %u", (unsigned long long)rec->seq, k);
    if (e->ns_len)
        assert_memory_equal(rec->ns, e->ns, e->ns_len);
    assert_memory_equal(rec->json, e->json, e->json_len);
    if (e->bin_len)
        assert_memory_equal(rec->bin, e->bin, e->bin_len);
}

/* ------------------------------------------------------------------------
 * Helpers.
 * ---------------------------------------------------------------------- */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

typedef struct fx {
    char *dir;   /* the temp dir */
    char *path;  /* dir/db: the store (created by cairn_open) */
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (f == NULL)
        return -1;
    f->dir = tu_mkdtemp("store");
    if (f->dir == NULL)
        return -1;
    f->path = tu_join(f->dir, "db");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    tu_rmrf(f->dir);
    free(f->dir);
    free(f->path);
    free(f);
    return 0;
}

static cairn_db *open_db(const char *path, int create, int background, uint64_t segment_size)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    char err[CAIRN_ERRMSG_MAX] = "";
    int rc;
    o.create = create;
    o.background = background;
    o.segment_size = segment_size;
    if (create)
        o.durability = CAIRN_DURABILITY_NONE;
    rc = cairn_open(&db, path, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        fail_msg("cairn_open(%s): %d %s", path, rc, err);
    assert_non_null(db);
    return db;
}

static cairn_db *open_ro(const char *path)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    char err[CAIRN_ERRMSG_MAX] = "";
    int rc;
    o.read_only = 1;
    rc = cairn_open(&db, path, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        fail_msg("cairn_open(%s, read-only): %d %s", path, rc, err);
    return db;
}

/* Append records k = from..to-1; the store must hand out seq k + 1. */
static void append_range(cairn_db *db, unsigned from, unsigned to)
{
    for (unsigned k = from; k < to; k++) {
        gen g;
        uint64_t seq = 0;
        int rc = cairn_append(db, gen_entry(k, &g), &seq);
        if (rc != CAIRN_OK)
            fail_msg("append of record %u: %d %s", k, rc, cairn_errmsg(db));
        if (seq != (uint64_t)k + 1)
            fail_msg("append of record %u got seq %llu, expected %u", k,
                     (unsigned long long)seq, k + 1);
    }
}

/* What an iteration returned. */
typedef struct seen {
    uint64_t *seq;
    int64_t *ts;
    uint16_t *type;
    size_t n, cap;
} seen;

static void seen_free(seen *s)
{
    free(s->seq);
    free(s->ts);
    free(s->type);
    memset(s, 0, sizeof *s);
}

/* Iterate `r` (NULL = all), checking strictly increasing seqs,
 * non-decreasing timestamps and, with `content`, that seq s holds record
 * s - 1. */
static void collect_ex(cairn_db *db, const cairn_range *r, seen *out, int content)
{
    cairn_iter *it = NULL;
    cairn_record rec;
    int rc;
    memset(out, 0, sizeof *out);
    rc = cairn_iter_open(db, r, &it);
    if (rc != CAIRN_OK)
        fail_msg("cairn_iter_open: %d %s", rc, cairn_errmsg(db));
    while ((rc = cairn_iter_next(it, &rec)) == CAIRN_OK) {
        if (out->n == out->cap) {
            out->cap = out->cap ? out->cap * 2 : 64;
            out->seq = realloc(out->seq, out->cap * sizeof *out->seq);
            out->ts = realloc(out->ts, out->cap * sizeof *out->ts);
            out->type = realloc(out->type, out->cap * sizeof *out->type);
            assert_true(out->seq && out->ts && out->type);
        }
        assert_true(rec.seq > 0);
        if (content)
            check_content(&rec, (unsigned)(rec.seq - 1));
        if (out->n > 0) {
            assert_true(rec.seq > out->seq[out->n - 1]);
            assert_true(rec.ts_ms >= out->ts[out->n - 1]);
        }
        out->seq[out->n] = rec.seq;
        out->ts[out->n] = rec.ts_ms;
        out->type[out->n] = rec.type;
        out->n++;
    }
    if (rc != CAIRN_ENOTFOUND)
        fail_msg("cairn_iter_next: %d %s", rc, cairn_errmsg(db));
    /* The end stays the end. */
    assert_int_equal(cairn_iter_next(it, &rec), CAIRN_ENOTFOUND);
    cairn_iter_close(it);
}

static void collect(cairn_db *db, const cairn_range *r, seen *out)
{
    collect_ex(db, r, out, 1);
}

/* Everything: seqs 1..n exactly. */
static void check_all(cairn_db *db, uint64_t n, seen *all)
{
    collect(db, NULL, all);
    assert_int_equal(all->n, n);
    for (size_t i = 0; i < all->n; i++)
        assert_int_equal(all->seq[i], i + 1);
}

/* cairn_get of every seq 1..n, its content and (if ts != NULL) its timestamp;
 * and of absent seqs. */
static void check_get_all(cairn_db *db, uint64_t n, const int64_t *ts)
{
    static const uint64_t absent_off[] = {1, 2, 1000};
    cairn_record *rec;
    for (uint64_t s = 1; s <= n; s++) {
        int rc;
        rec = NULL;
        rc = cairn_get(db, s, &rec);
        if (rc != CAIRN_OK)
            fail_msg("cairn_get(%llu): %d %s", (unsigned long long)s, rc, cairn_errmsg(db));
        assert_non_null(rec);
        assert_int_equal(rec->seq, s);
        check_content(rec, (unsigned)(s - 1));
        if (ts != NULL)
            assert_true(rec->ts_ms == ts[s - 1]);
        cairn_record_free(db, rec);
    }
    rec = NULL;
    assert_int_equal(cairn_get(db, 0, &rec), CAIRN_ENOTFOUND);
    assert_null(rec);
    for (size_t i = 0; i < sizeof absent_off / sizeof absent_off[0]; i++) {
        assert_int_equal(cairn_get(db, n + absent_off[i], &rec), CAIRN_ENOTFOUND);
        assert_null(rec);
    }
    assert_int_equal(cairn_get(db, UINT64_MAX, &rec), CAIRN_ENOTFOUND);
    assert_null(rec);
}

/* Compare an iteration of r with the brute-force filter of `all` (whose
 * content was checked when it was collected). */
static void check_range(cairn_db *db, const cairn_range *r, const seen *all)
{
    seen got;
    size_t j = 0;
    collect_ex(db, r, &got, 0);
    for (size_t i = 0; i < all->n; i++) {
        if (all->seq[i] < r->seq_from || all->seq[i] > r->seq_to || all->ts[i] < r->ts_from ||
            all->ts[i] > r->ts_to || (r->type >= 0 && all->type[i] != r->type))
            continue;
        if (j >= got.n || got.seq[j] != all->seq[i])
            fail_msg("range seq %llu..%llu ts %lld..%lld type %d: missing seq %llu",
                     (unsigned long long)r->seq_from, (unsigned long long)r->seq_to,
                     (long long)r->ts_from, (long long)r->ts_to, r->type,
                     (unsigned long long)all->seq[i]);
        assert_true(got.ts[j] == all->ts[i]);
        j++;
    }
    if (j != got.n)
        fail_msg("range seq %llu..%llu ts %lld..%lld type %d: %zu records, expected %zu",
                 (unsigned long long)r->seq_from, (unsigned long long)r->seq_to,
                 (long long)r->ts_from, (long long)r->ts_to, r->type, got.n, j);
    seen_free(&got);
}

static void get_stats(cairn_db *db, cairn_stats *st)
{
    memset(st, 0xa5, sizeof *st);
    assert_int_equal(cairn_stats_get(db, st), CAIRN_OK);
}

static uint64_t sum_sizes(unsigned from, unsigned to)
{
    uint64_t s = 0;
    for (unsigned k = from; k < to; k++)
        s += gen_size(k);
    return s;
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (d == NULL)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

/* ------------------------------------------------------------------------
 * Opening.
 * ---------------------------------------------------------------------- */

/* The library's version is the header's, as a string and as a number
 * that follows from it. */
static void test_version_is_the_headers(void **state)
{
    unsigned a = 9, b = 9, c = 9;
    (void)state;
    assert_string_equal(cairn_version(), CAIRN_VERSION_STRING);
    assert_int_equal(cairn_version_number(), CAIRN_VERSION_NUMBER);
    assert_int_equal(sscanf(cairn_version(), "%u.%u.%u", &a, &b, &c), 3);
    assert_int_equal(cairn_version_number(), (int)(a * 10000 + b * 100 + c));
    assert_int_equal(a, CAIRN_VERSION_MAJOR);
}

static void test_create_close_reopen_keeps_records(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0);
    seen all;
    uint64_t seq = 0;
    gen g;
    append_range(db, 0, 3);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    /* The store directory and its manifest exist. */
    {
        char *m = tu_join(f->path, "MANIFEST");
        assert_true(tu_file_size(m) > 0);
        free(m);
    }
    db = open_db(f->path, 0, 0, 0);
    check_all(db, 3, &all);
    seen_free(&all);
    /* Sequence numbers continue where they were. */
    assert_int_equal(cairn_append(db, gen_entry(3, &g), &seq), CAIRN_OK);
    assert_int_equal(seq, 4);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    /* create = 1 on an existing store opens it, nothing lost. */
    db = open_db(f->path, 1, 1, 0);
    check_all(db, 4, &all);
    seen_free(&all);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* The store's stats from a fresh read-only handle, which finds every one
 * of its n records (n = 0: not checked). */
static void stats_reopened(const char *path, unsigned n, cairn_stats *st)
{
    cairn_db *db = open_ro(path);
    seen all;
    get_stats(db, st);
    if (n > 0) {
        assert_int_equal(st->records, n);
        check_all(db, n, &all);
        seen_free(&all);
    }
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* A writer's close seals an active segment it wrote 4 MiB or more of (the
 * next open reads its block index instead of scanning it); a writer that
 * wrote less leaves it active, and so does one closing a smaller segment.
 * Every record stays readable. */
static void test_a_close_seals_a_large_active_segment(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 1, 0), *other;
    cairn_stats st;
    uint64_t bytes = 0;
    unsigned n = 0;

    while (bytes < (5u << 20))
        bytes += gen_size(n++);
    append_range(db, 0, n);
    get_stats(db, &st);
    assert_int_equal(st.segments_sealed, 0);
    /* another writer appends a little and closes: the segment is not its */
    other = open_db(f->path, 0, 1, 0);
    append_range(other, n, n + 10);
    assert_int_equal(cairn_close(other), CAIRN_OK);
    stats_reopened(f->path, 0, &st);
    assert_int_equal(st.segments_sealed, 0);
    /* the writer that filled it seals it */
    assert_int_equal(cairn_close(db), CAIRN_OK);
    n += 10;
    stats_reopened(f->path, n, &st);
    assert_int_equal(st.segments_sealed, 1);
    assert_int_equal(st.segments_closed, 0);

    /* a small active segment stays as it is */
    db = open_db(f->path, 0, 1, 0);
    append_range(db, n, n + 1000);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    stats_reopened(f->path, n + 1000, &st);
    assert_int_equal(st.segments_sealed, 1);
    assert_int_equal(st.segments_active, 1);
}

/* The single-record reader (cairn__record_fetch, how a memory's content
 * is read where its index row points) gives each record as cairn_get
 * does, in any order, from sealed segments (a dictionary and small blocks)
 * and the active one; a seq the log does not hold is not found. */
static void test_fetch_reads_records_from_sealed_and_active_segments(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 1u << 20); /* 1 MiB segments, sealed inline */
    cairn__fetch fe;
    cairn_stats st;
    uint64_t bytes = 0, x = 77;
    unsigned n = 0;

    memset(&fe, 0, sizeof fe);
    while (bytes < (3u << 20))
        bytes += gen_size(n++);
    append_range(db, 0, n);
    get_stats(db, &st);
    assert_true(st.segments_sealed >= 2);
    for (unsigned i = 0; i < 3 * n; i++) {
        cairn_record r, *want;
        uint64_t seq;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        seq = 1 + (x >> 33) % n;
        assert_int_equal(cairn__record_fetch(db, &fe, seq, &r), CAIRN_OK);
        assert_int_equal(cairn_get(db, seq, &want), CAIRN_OK);
        assert_int_equal(r.seq, seq);
        assert_int_equal(r.ts_ms, want->ts_ms);
        assert_int_equal(r.type, want->type);
        assert_int_equal(r.json_len, want->json_len);
        assert_memory_equal(r.json, want->json, r.json_len);
        assert_int_equal(r.bin_len, want->bin_len);
        cairn_record_free(db, want);
    }
    {
        cairn_record r;
        assert_int_equal(cairn__record_fetch(db, &fe, 0, &r), CAIRN_ENOTFOUND);
        assert_int_equal(cairn__record_fetch(db, &fe, n + 1, &r), CAIRN_ENOTFOUND);
        assert_int_equal(cairn__record_fetch(db, &fe, n, &r), CAIRN_OK);
        assert_int_equal(r.seq, n);
    }
    cairn__fetch_free(db, &fe);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* Two threads read records of one handle at once, each with a reader of
 * its own: the first read of a segment digests its dictionary (whichever
 * thread comes first installs it, the other frees its own) and every read
 * gives the record with its seq and bytes. Run under TSan too. */
typedef struct fetch_job {
    cairn_db *db;
    unsigned n;
    uint64_t seed;
    int bad;
} fetch_job;

static void *fetch_main(void *arg)
{
    fetch_job *j = arg;
    cairn__fetch fe;
    uint64_t x = j->seed;
    memset(&fe, 0, sizeof fe);
    for (unsigned i = 0; i < 2 * j->n; i++) {
        cairn_record r;
        uint64_t seq;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        seq = 1 + (x >> 33) % j->n;
        if (cairn__record_fetch(j->db, &fe, seq, &r) != CAIRN_OK || r.seq != seq ||
            r.json_len == 0)
            j->bad++;
    }
    cairn__fetch_free(j->db, &fe);
    return NULL;
}

static void test_fetch_from_two_threads_at_once(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 1u << 20);
    fetch_job j[2];
    pthread_t th[2];
    uint64_t bytes = 0;
    unsigned n = 0;

    while (bytes < (3u << 20))
        bytes += gen_size(n++);
    append_range(db, 0, n);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_ro(f->path); /* no segment read yet: no dictionary digested */
    for (int t = 0; t < 2; t++) {
        j[t].db = db;
        j[t].n = n;
        j[t].seed = 11 + (uint64_t)t;
        j[t].bad = 0;
        assert_int_equal(pthread_create(&th[t], NULL, fetch_main, &j[t]), 0);
    }
    for (int t = 0; t < 2; t++) {
        assert_int_equal(pthread_join(th[t], NULL), 0);
        assert_int_equal(j[t].bad, 0);
    }
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_open_missing_store_without_create_is_not_found(void **state)
{
    fx *f = *state;
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = (cairn_db *)&o; /* not NULL: must be reset */
    char err[CAIRN_ERRMSG_MAX] = "";
    assert_int_equal(cairn_open(&db, f->path, &o, err, sizeof err), CAIRN_ENOTFOUND);
    assert_null(db);
    assert_true(strlen(err) > 0);
    /* An existing but empty directory is not a store either. */
    db = (cairn_db *)&o;
    assert_int_equal(cairn_open(&db, f->dir, &o, NULL, 0), CAIRN_ENOTFOUND);
    assert_null(db);
    /* Read-only never creates. */
    o.read_only = 1;
    o.create = 1;
    assert_int_not_equal(cairn_open(&db, f->path, &o, NULL, 0), CAIRN_OK);
    assert_null(db);
    assert_int_equal(access(f->path, F_OK), -1);
}

static void test_open_refuses_bad_options(void **state)
{
    fx *f = *state;
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    o.create = 1;
    o.version = CAIRN_OPTIONS_VERSION + 1;
    assert_int_equal(cairn_open(&db, f->path, &o, NULL, 0), CAIRN_EINVAL);
    assert_null(db);
    o.version = CAIRN_OPTIONS_VERSION;
    o.segment_size = 4095; /* below the 4 KiB minimum */
    assert_int_equal(cairn_open(&db, f->path, &o, NULL, 0), CAIRN_EINVAL);
    assert_null(db);
    /* Nothing was created by the refused calls. */
    assert_int_equal(access(f->path, F_OK), -1);
}

static void test_settings_chosen_at_creation_are_stored(void **state)
{
    fx *f = *state;
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    cairn_stats st;
    o.create = 1;
    o.durability = CAIRN_DURABILITY_FULL;
    o.batch_ms = 7;
    o.segment_size = 8192;
    o.background = 0;
    assert_int_equal(cairn_open(&db, f->path, &o, NULL, 0), CAIRN_OK);
    get_stats(db, &st);
    assert_int_equal(st.durability, CAIRN_DURABILITY_FULL);
    assert_int_equal(st.batch_ms, 7);
    assert_int_equal(st.segment_size, 8192);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_db(f->path, 0, 0, 0); /* everything "stored" */
    get_stats(db, &st);
    assert_int_equal(st.durability, CAIRN_DURABILITY_FULL);
    assert_int_equal(st.batch_ms, 7);
    assert_int_equal(st.segment_size, 8192);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void reopen_expect_records(const char *path, uint64_t n);

static long long mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Two writer handles on one store take turns: the lock is held while a
 * handle's buffer holds records (here: a background flusher with a long
 * period), and the other waits up to its busy timeout, then gets
 * CAIRN_ELOCKED naming the holder's pid; once the holder's records are in
 * the file, the other appends after them. */
static void test_writers_take_turns_and_a_busy_one_times_out(void **state)
{
    fx *f = *state;
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *a = NULL, *b = NULL;
    char err[CAIRN_ERRMSG_MAX] = "", pid[32];
    cairn_entry e = {CAIRN_REC_EVENT, "t", 1, "{}", 2, NULL, 0};
    uint64_t seq = 0;
    long long t0, waited;

    o.create = 1;
    o.durability = CAIRN_DURABILITY_NONE;
    o.batch_ms = 1000000; /* the flusher never comes round */
    assert_int_equal(cairn_open(&a, f->path, &o, err, sizeof err), CAIRN_OK);
    o.create = 0;
    o.busy_timeout_ms = 150;
    assert_int_equal(cairn_open(&b, f->path, &o, err, sizeof err), CAIRN_OK);

    assert_int_equal(cairn_append(a, &e, &seq), CAIRN_OK); /* buffered: a holds the lock */
    assert_int_equal(seq, 1);
    t0 = mono_ms();
    assert_int_equal(cairn_append(b, &e, &seq), CAIRN_ELOCKED);
    waited = mono_ms() - t0;
    if (waited < 140 || waited > 3000)
        fail_msg("the busy writer waited %lld ms, expected about 150", waited);
    snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
    if (strstr(cairn_errmsg(b), pid) == NULL)
        fail_msg("\"%s\" does not name the holder (%s)", cairn_errmsg(b), pid);

    assert_int_equal(cairn_flush(a), CAIRN_OK); /* a's turn ends */
    assert_int_equal(cairn_append(b, &e, &seq), CAIRN_OK);
    assert_int_equal(seq, 2);
    assert_int_equal(cairn_flush(b), CAIRN_OK);
    assert_int_equal(cairn_append(a, &e, &seq), CAIRN_OK); /* a caught up on b's record */
    assert_int_equal(seq, 3);
    /* a's handle has the background thread: after its turn it keeps the
     * lock while nobody waits, and lets it go within milliseconds of a
     * waiter (or of 1 ms without a turn), never at the busy timeout. */
    assert_int_equal(cairn_flush(a), CAIRN_OK);
    t0 = mono_ms();
    assert_int_equal(cairn_append(b, &e, &seq), CAIRN_OK);
    waited = mono_ms() - t0;
    if (waited > 100)
        fail_msg("a waiter got a lingering lock after %lld ms", waited);
    assert_int_equal(seq, 4);
    assert_int_equal(cairn_close(a), CAIRN_OK);
    assert_int_equal(cairn_close(b), CAIRN_OK);
    reopen_expect_records(f->path, 4);
}

/* Records a handle wrote vanish from the file under it (a file system
 * that lost them): its next turn refuses to write after the hole they
 * leave, and says so; a reopen has what is there. */
static void test_a_turn_refuses_to_write_after_records_that_vanished(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0);
    char *log = tu_join(f->path, "0000000000000001.log");
    long long before;
    uint64_t seq = 0;
    cairn_entry e = {CAIRN_REC_EVENT, "t", 1, "{}", 2, NULL, 0};

    append_range(db, 0, 3);
    before = tu_file_size(log);
    assert_int_equal(cairn_append(db, &e, &seq), CAIRN_OK); /* record 4 */
    assert_int_equal(seq, 4);
    assert_int_equal(truncate(log, (off_t)before), 0);     /* gone */
    assert_int_equal(cairn_append(db, &e, &seq), CAIRN_ECORRUPT);
    if (strstr(cairn_errmsg(db), "records are gone") == NULL)
        fail_msg("\"%s\" does not say records are gone", cairn_errmsg(db));
    assert_int_equal(tu_file_size(log), before); /* nothing written after the hole */
    (void)cairn_close(db);
    reopen_expect_records(f->path, 3);
    free(log);
}

/* Two `full` writer handles: one rolls and seals the segment the other
 * had appended to and not synced for a read's catch-up. The other keeps
 * the segment it wrote to until it has synced it, then appends to the new
 * one (it used to sync a freed segment, and fail for good). */
static void test_a_segment_another_handle_rolled_and_sealed_is_synced_then_left(void **state)
{
    fx *f = *state;
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *a = NULL, *b = NULL;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_entry e = {CAIRN_REC_EVENT, "t", 1, "{}", 2, NULL, 0};
    cairn_stats st;
    uint64_t seq = 0;

    o.create = 1;
    o.background = 0;
    o.durability = CAIRN_DURABILITY_FULL;
    assert_int_equal(cairn_open(&a, f->path, &o, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_open(&b, f->path, &o, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_append(b, &e, &seq), CAIRN_OK);
    assert_int_equal(cairn_append(a, &e, &seq), CAIRN_OK);
    assert_int_equal(cairn_stats_get(b, &st), CAIRN_OK); /* b reads a's record */
    assert_int_equal(cairn_roll(a), CAIRN_OK);            /* rolls and seals inline */
    assert_int_equal(cairn_stats_get(b, &st), CAIRN_OK);
    assert_int_equal(st.segments_sealed, 1);
    assert_int_equal(cairn_append(b, &e, &seq), CAIRN_OK);
    assert_int_equal(seq, 3);
    assert_int_equal(cairn_close(b), CAIRN_OK);
    assert_int_equal(cairn_close(a), CAIRN_OK);
    reopen_expect_records(f->path, 3);
}

/* A handle killed by a failed write (a full disk) lets the lock go at
 * once: another writer does not wait for it to be closed. */
static const cairn_io *real_io;
static int fail_next_append;

static ssize_t failing_pwrite(void *u, const char *site, int fd, const void *b, size_t l,
                              off_t o)
{
    (void)u;
    if (fail_next_append && strcmp(site, "segment.append") == 0) {
        fail_next_append = 0;
        errno = ENOSPC;
        return -1;
    }
    return real_io->pwrite(real_io->user, site, fd, b, l, o);
}

static void test_a_handle_killed_by_a_failed_write_lets_the_lock_go(void **state)
{
    fx *f = *state;
    cairn_options o = CAIRN_OPTIONS_INIT, oa;
    cairn_io io;
    cairn_db *a = NULL, *b = NULL;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_entry e = {CAIRN_REC_EVENT, "t", 1, "{}", 2, NULL, 0};
    uint64_t seq = 0;

    for (int bg = 0; bg <= 1; bg++) {
        real_io = cairn_io_default();
        io = *real_io;
        io.pwrite = failing_pwrite;
        o.create = 1;
        o.background = bg;
        o.durability = CAIRN_DURABILITY_FULL;
        o.busy_timeout_ms = 300;
        oa = o;
        oa.io = &io;
        assert_int_equal(cairn_open(&a, f->path, &oa, err, sizeof err), CAIRN_OK);
        assert_int_equal(cairn_open(&b, f->path, &o, err, sizeof err), CAIRN_OK);
        fail_next_append = 1;
        assert_int_equal(cairn_append(a, &e, &seq), CAIRN_EFULL);
        assert_int_equal(cairn_append(a, &e, &seq), CAIRN_EDEAD);
        if (cairn_append(b, &e, &seq) != CAIRN_OK)
            fail_msg("background %d: the other writer: %s", bg, cairn_errmsg(b));
        assert_int_equal(cairn_close(b), CAIRN_OK);
        (void)cairn_close(a);
    }
}

/* A writer killed in its turn leaves a torn record at the end of the
 * active segment. Another writer handle, open all along, finds it at its
 * next turn: cut off (as an open would), and its own records follow the
 * last valid one with the next number; a reader never sees the torn bytes
 * as a record. */
static void test_a_turn_recovers_a_tail_torn_by_a_writer_killed_in_its_turn(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0);
    char *log = tu_join(f->path, "0000000000000001.log");
    struct stat before, after;
    FILE *fp;
    cairn_stats st;
    uint64_t problems = 99;

    append_range(db, 0, 5);
    assert_int_equal(stat(log, &before), 0);
    /* What a write cut short by SIGKILL leaves: the start of a record. */
    fp = fopen(log, "ab");
    assert_non_null(fp);
    assert_int_equal(fwrite("\x40\x00\x00\x00\x01\x00garbage", 1, 13, fp), 13);
    assert_int_equal(fclose(fp), 0);
    append_range(db, 5, 8); /* numbers 6..8, after the last valid record */
    assert_int_equal(cairn_flush(db), CAIRN_OK);
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_int_equal(st.records, 8);
    assert_int_equal(st.recovered_torn_bytes, 13);
    assert_int_equal(cairn_verify(db, NULL, NULL, &problems), CAIRN_OK);
    assert_int_equal(problems, 0);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_int_equal(stat(log, &after), 0);
    assert_true(after.st_size > before.st_size);
    reopen_expect_records(f->path, 8);
    free(log);
}

/* ------------------------------------------------------------------------
 * Appending.
 * ---------------------------------------------------------------------- */

static void test_append_returns_increasing_seqs_from_one(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0);
    cairn_stats st;
    gen g;
    append_range(db, 0, 50); /* asserts seq == k + 1 */
    /* seq_out may be NULL. */
    assert_int_equal(cairn_append(db, gen_entry(50, &g), NULL), CAIRN_OK);
    get_stats(db, &st);
    assert_int_equal(st.records, 51);
    assert_int_equal(st.first_seq, 1);
    assert_int_equal(st.last_seq, 51);
    assert_int_equal(st.log_bytes, sum_sizes(0, 51));
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_empty_store_has_nothing_to_read(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0);
    cairn_stats st;
    seen all;
    check_all(db, 0, &all);
    seen_free(&all);
    check_get_all(db, 0, NULL);
    get_stats(db, &st);
    assert_int_equal(st.records, 0);
    assert_int_equal(st.first_seq, 0);
    assert_int_equal(st.last_seq, 0);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_append_refuses_invalid_entries(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0);
    char ns[CAIRN_NS_MAX + 1];
    cairn_entry e = {CAIRN_REC_EVENT, NULL, 0, "{}", 2, NULL, 0};
    cairn_stats st;
    uint64_t seq = 0;
    memset(ns, 'n', sizeof ns);
    e.type = 0;
    assert_int_equal(cairn_append(db, &e, &seq), CAIRN_EINVAL);
    e.type = 1;
    e.ns = ns;
    e.ns_len = CAIRN_NS_MAX + 1;
    assert_int_equal(cairn_append(db, &e, &seq), CAIRN_EINVAL);
    e.ns_len = CAIRN_NS_MAX;
    e.json = NULL;
    assert_int_equal(cairn_append(db, &e, &seq), CAIRN_EINVAL);
    assert_true(strlen(cairn_errmsg(db)) > 0);
    get_stats(db, &st);
    assert_int_equal(st.records, 0);
    /* The longest namespace is fine, and it gets seq 1: nothing was consumed. */
    e.json = "{}";
    assert_int_equal(cairn_append(db, &e, &seq), CAIRN_OK);
    assert_int_equal(seq, 1);
    /* An entry with nothing in it (NULL pointers, zero lengths) is fine too. */
    {
        cairn_entry empty = {CAIRN_REC_EVENT, NULL, 0, NULL, 0, NULL, 0};
        cairn_record *rec = NULL;
        assert_int_equal(cairn_append(db, &empty, &seq), CAIRN_OK);
        assert_int_equal(seq, 2);
        assert_int_equal(cairn_get(db, 2, &rec), CAIRN_OK);
        assert_int_equal(rec->type, CAIRN_REC_EVENT);
        assert_int_equal(rec->ns_len, 0);
        assert_int_equal(rec->json_len, 0);
        assert_int_equal(rec->bin_len, 0);
        cairn_record_free(db, rec);
        assert_int_equal(cairn_get(db, 1, &rec), CAIRN_OK);
        assert_int_equal(rec->ns_len, CAIRN_NS_MAX);
        assert_memory_equal(rec->ns, ns, CAIRN_NS_MAX);
        cairn_record_free(db, rec);
    }
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_record_too_big_is_refused_and_max_size_is_kept(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 4096);
    size_t json_len = CAIRN_RECORD_MAX - 40 - 2; /* ns "ns": exactly the maximum */
    char *json = malloc(json_len + 1);
    cairn_entry e = {0x8001u, "ns", 2, NULL, 0, NULL, 0};
    cairn_record *rec = NULL;
    cairn_stats st;
    uint64_t seq = 0;
    gen g;
    assert_non_null(json);
    for (size_t i = 0; i < json_len + 1; i++)
        json[i] = (char)('a' + i % 23);
    append_range(db, 0, 1);
    e.json = json;
    e.json_len = json_len + 1;
    assert_int_equal(cairn_append(db, &e, &seq), CAIRN_ETOOBIG);
    get_stats(db, &st);
    assert_int_equal(st.records, 1);
    /* The largest legal record goes in (far past the write buffer and the
     * segment size) and comes back whole. */
    e.json_len = json_len;
    assert_int_equal(cairn_append(db, &e, &seq), CAIRN_OK);
    assert_int_equal(seq, 2);
    assert_int_equal(cairn_append(db, gen_entry(2, &g), &seq), CAIRN_OK);
    assert_int_equal(seq, 3);
    assert_int_equal(cairn_get(db, 2, &rec), CAIRN_OK);
    assert_int_equal(rec->json_len, json_len);
    assert_memory_equal(rec->json, json, json_len);
    cairn_record_free(db, rec);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    /* And after a reopen. */
    db = open_db(f->path, 0, 0, 0);
    rec = NULL;
    assert_int_equal(cairn_get(db, 2, &rec), CAIRN_OK);
    assert_int_equal(rec->json_len, json_len);
    assert_memory_equal(rec->json, json, json_len);
    cairn_record_free(db, rec);
    assert_int_equal(cairn_get(db, 3, &rec), CAIRN_OK);
    check_content(rec, 2);
    cairn_record_free(db, rec);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    free(json);
}

static void test_append_batch_gives_consecutive_seqs(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0);
    gen g[10];
    cairn_entry es[10];
    uint64_t first = 0;
    seen all;
    append_range(db, 0, 5);
    for (unsigned i = 0; i < 10; i++)
        es[i] = *gen_entry(5 + i, &g[i]);
    assert_int_equal(cairn_append_batch(db, es, 10, &first), CAIRN_OK);
    assert_int_equal(first, 6);
    append_range(db, 15, 17);
    check_all(db, 17, &all);
    /* One commit: the batch shares one timestamp. */
    for (size_t i = 6; i < 15; i++)
        assert_true(all.ts[i] == all.ts[5]);
    seen_free(&all);
    check_get_all(db, 17, NULL);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_append_batch_is_all_or_nothing(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0);
    gen g[6];
    cairn_entry es[6];
    char ns[CAIRN_NS_MAX + 1];
    static const char dummy[1] = {0};
    uint64_t first = 12345;
    cairn_stats st;
    seen all;
    memset(ns, 'x', sizeof ns);
    append_range(db, 0, 4);
    for (unsigned i = 0; i < 6; i++)
        es[i] = *gen_entry(4 + i, &g[i]);
    /* type 0 in the middle */
    es[3].type = 0;
    assert_int_equal(cairn_append_batch(db, es, 6, &first), CAIRN_EINVAL);
    es[3].type = gen_entry(7, &g[3])->type;
    /* a namespace too long at the end */
    es[5].ns = ns;
    es[5].ns_len = CAIRN_NS_MAX + 1;
    assert_int_equal(cairn_append_batch(db, es, 6, &first), CAIRN_EINVAL);
    es[5] = *gen_entry(9, &g[5]);
    /* a record too big at the start (the bytes are never read) */
    es[0].json = dummy;
    es[0].json_len = CAIRN_RECORD_MAX;
    assert_int_equal(cairn_append_batch(db, es, 6, &first), CAIRN_ETOOBIG);
    es[0] = *gen_entry(4, &g[0]);
    /* Nothing of any of them is visible. */
    get_stats(db, &st);
    assert_int_equal(st.records, 4);
    assert_int_equal(st.last_seq, 4);
    check_all(db, 4, &all);
    seen_free(&all);
    /* The whole batch, fixed, goes in with the next seqs: no seq was used up. */
    assert_int_equal(cairn_append_batch(db, es, 6, &first), CAIRN_OK);
    assert_int_equal(first, 5);
    check_all(db, 10, &all);
    seen_free(&all);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_db(f->path, 0, 0, 0);
    check_all(db, 10, &all);
    seen_free(&all);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* ------------------------------------------------------------------------
 * Reading.
 * ---------------------------------------------------------------------- */

static void test_iterate_everything_in_order_with_content(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0);
    seen all;
    append_range(db, 0, 120);
    check_all(db, 120, &all); /* content checked record by record */
    seen_free(&all);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_iterator_sees_the_store_as_of_its_opening(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0);
    cairn_iter *it = NULL;
    cairn_record rec;
    uint64_t n = 0;
    int rc;
    append_range(db, 0, 10);
    assert_int_equal(cairn_iter_open(db, NULL, &it), CAIRN_OK);
    assert_int_equal(cairn_iter_next(it, &rec), CAIRN_OK);
    n++;
    append_range(db, 10, 20);
    while ((rc = cairn_iter_next(it, &rec)) == CAIRN_OK) {
        n++;
        assert_true(rec.seq <= 10);
    }
    assert_int_equal(rc, CAIRN_ENOTFOUND);
    assert_int_equal(n, 10);
    cairn_iter_close(it);
    cairn_iter_close(NULL);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_iter_open_refuses_an_invalid_range(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0);
    cairn_iter *it = NULL;
    cairn_range r = CAIRN_RANGE_INIT;
    append_range(db, 0, 3);
    r.version = CAIRN_RANGE_VERSION + 1;
    assert_int_equal(cairn_iter_open(db, &r, &it), CAIRN_EINVAL);
    r.version = CAIRN_RANGE_VERSION;
    r.type = 65536; /* not a record type */
    assert_int_equal(cairn_iter_open(db, &r, &it), CAIRN_EINVAL);
    r.type = -2;
    assert_int_equal(cairn_iter_open(db, &r, &it), CAIRN_EINVAL);
    /* The edges of the legal range are accepted. */
    r.type = 65535;
    assert_int_equal(cairn_iter_open(db, &r, &it), CAIRN_OK);
    cairn_iter_close(it);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_open_iterator_survives_sealing_of_its_segments(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0);
    cairn_iter *it = NULL;
    cairn_record rec;
    cairn_stats st;
    uint64_t n = 0;
    int rc;
    append_range(db, 0, 50);
    assert_int_equal(cairn_iter_open(db, NULL, &it), CAIRN_OK);
    assert_int_equal(cairn_iter_next(it, &rec), CAIRN_OK);
    check_content(&rec, 0);
    n++;
    /* The segment it reads is rolled, sealed and its .log unlinked. */
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    get_stats(db, &st);
    assert_int_equal(st.segments_sealed, 1);
    append_range(db, 50, 60);
    while ((rc = cairn_iter_next(it, &rec)) == CAIRN_OK) {
        assert_int_equal(rec.seq, n + 1);
        check_content(&rec, (unsigned)n);
        n++;
    }
    assert_int_equal(rc, CAIRN_ENOTFOUND);
    assert_int_equal(n, 50);
    cairn_iter_close(it);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_seq_range_iteration_returns_exactly_the_range(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 4096);
    seen all;
    static const uint64_t pts[] = {0, 1, 2, 17, 33, 59, 60, 61, 99, 100, 101, 500, UINT64_MAX};
    append_range(db, 0, 60);
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    append_range(db, 60, 100); /* 1..~60 sealed or closed, the rest active */
    check_all(db, 100, &all);
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++)
        for (size_t j = i; j < sizeof pts / sizeof pts[0]; j++) {
            cairn_range r = CAIRN_RANGE_INIT;
            r.seq_from = pts[i];
            r.seq_to = pts[j];
            check_range(db, &r, &all);
        }
    seen_free(&all);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_type_filter_returns_only_that_type(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 4096);
    seen all, got;
    append_range(db, 0, 40);
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    append_range(db, 40, 70);
    check_all(db, 70, &all);
    for (size_t t = 0; t < 3; t++) {
        cairn_range r = CAIRN_RANGE_INIT;
        r.type = gen_types[t];
        collect(db, &r, &got);
        assert_true(got.n > 0);
        for (size_t i = 0; i < got.n; i++)
            assert_int_equal(got.type[i], gen_types[t]);
        seen_free(&got);
        check_range(db, &r, &all);
        /* With a seq range too. */
        r.seq_from = 20;
        r.seq_to = 55;
        check_range(db, &r, &all);
    }
    {
        cairn_range r = CAIRN_RANGE_INIT;
        r.type = 0x7777; /* no such records */
        collect(db, &r, &got);
        assert_int_equal(got.n, 0);
        seen_free(&got);
    }
    seen_free(&all);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_time_range_iteration_matches_the_timestamps(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0);
    /* 6 groups (~90 KiB, so more than one sealed block) end up sealed, the
     * rest stays in the active segment; 3 ms between groups. */
    enum { GROUPS = 8, PER = 80, N = GROUPS * PER, SEALED_GROUPS = 6 };
    int64_t *before = calloc(N, sizeof *before), *after = calloc(N, sizeof *after);
    int64_t probes[3 * N + 2];
    size_t np = 0;
    seen all;
    assert_true(before && after);
    for (unsigned k = 0; k < N; k++) {
        if (k % PER == 0 && k > 0)
            sleep_ms(3);
        if (k == SEALED_GROUPS * PER) {
            assert_int_equal(cairn_roll(db), CAIRN_OK);
            assert_int_equal(cairn_seal(db), CAIRN_OK);
        }
        before[k] = wall_ms();
        append_range(db, k, k + 1);
        after[k] = wall_ms();
    }
    check_all(db, N, &all);
    for (size_t i = 0; i < N; i++) {
        /* A commit time lies between the clock before and after the append. */
        assert_true(all.ts[i] >= before[i] && all.ts[i] <= after[i]);
        if (i > 0 && all.ts[i] == all.ts[i - 1])
            continue; /* probe each distinct timestamp once */
        probes[np++] = all.ts[i] - 1;
        probes[np++] = all.ts[i];
        probes[np++] = all.ts[i] + 1;
    }
    /* The sleeps gave several distinct timestamps. */
    assert_true(all.ts[N - 1] - all.ts[0] >= 3 * (GROUPS - 1));
    assert_true(np >= 3 * GROUPS);
    probes[np++] = INT64_MIN;
    probes[np++] = INT64_MAX;
    check_get_all(db, N, all.ts);
    for (size_t i = 0; i < np; i++)
        for (size_t j = 0; j < np; j++) {
            cairn_range r = CAIRN_RANGE_INIT;
            if (probes[i] > probes[j])
                continue;
            r.ts_from = probes[i];
            r.ts_to = probes[j];
            check_range(db, &r, &all);
            if ((i + j) % 7 == 0) {
                /* Mixed with a seq range and a type. */
                r.seq_from = 100;
                r.seq_to = 520;
                check_range(db, &r, &all);
                r.type = gen_types[(i + j) % 3];
                check_range(db, &r, &all);
            }
        }
    seen_free(&all);
    free(before);
    free(after);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* ------------------------------------------------------------------------
 * Segments: roll, seal, get across them, reopen.
 * ---------------------------------------------------------------------- */

static void test_get_finds_every_seq_across_sealed_segments_and_reopen(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 4096);
    cairn_stats st;
    seen all;
    append_range(db, 0, 200); /* ~30 KiB: several automatic rolls */
    check_get_all(db, 200, NULL);
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    get_stats(db, &st);
    assert_true(st.segments_sealed >= 3);
    assert_int_equal(st.segments_closed, 0);
    check_get_all(db, 200, NULL);
    /* New records in the fresh active segment, next to the sealed ones. */
    append_range(db, 200, 230);
    check_all(db, 230, &all);
    check_get_all(db, 230, all.ts);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_db(f->path, 0, 0, 0);
    check_get_all(db, 230, all.ts);
    seen_free(&all);
    check_all(db, 230, &all);
    seen_free(&all);
    append_range(db, 230, 240);
    check_get_all(db, 240, NULL);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_roll_of_an_empty_active_segment_is_a_no_op(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0);
    cairn_stats a, b;
    append_range(db, 0, 5);
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    get_stats(db, &a);
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    get_stats(db, &b);
    assert_int_equal(a.segments_sealed, b.segments_sealed);
    assert_int_equal(a.segments_closed, b.segments_closed);
    assert_int_equal(a.generation, b.generation);
    assert_int_equal(b.records, 5);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_stats_count_records_segments_and_compression(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 4096);
    cairn_stats st, st2;
    append_range(db, 0, 150);
    get_stats(db, &st);
    assert_int_equal(st.records, 150);
    assert_int_equal(st.first_seq, 1);
    assert_int_equal(st.last_seq, 150);
    assert_int_equal(st.log_bytes, sum_sizes(0, 150));
    assert_int_equal(st.segments_active, 1);
    assert_int_equal(st.segment_size, 4096);
    assert_true(st.segments_closed + st.segments_sealed >= 4);
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    get_stats(db, &st2);
    assert_int_equal(st2.records, 150);
    assert_int_equal(st2.segments_closed, 0);
    /* The active segment held records, so the roll added one more to seal. */
    assert_true(st2.segments_sealed >= st.segments_sealed + st.segments_closed + 1);
    assert_true(st2.generation > st.generation);
    /* Everything was rolled out of the active segment, so all of it is sealed. */
    assert_int_equal(st2.sealed_raw_bytes, sum_sizes(0, 150));
    /* The payloads are repetitive: zstd makes them smaller. */
    assert_true(st2.sealed_bytes < st2.sealed_raw_bytes);
    assert_true(st2.bytes_on_disk >= st2.sealed_bytes);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    /* The same counts after a reopen. */
    db = open_db(f->path, 0, 0, 0);
    get_stats(db, &st);
    assert_int_equal(st.records, 150);
    assert_int_equal(st.last_seq, 150);
    assert_int_equal(st.segments_sealed, st2.segments_sealed);
    assert_int_equal(st.sealed_raw_bytes, st2.sealed_raw_bytes);
    assert_int_equal(st.sealed_bytes, st2.sealed_bytes);
    assert_int_equal(st.log_bytes, st2.log_bytes);
    /* With every record sealed and the active segment empty, the next seq
     * still follows the last. */
    append_range(db, 150, 151);
    check_get_all(db, 151, NULL);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_background_thread_seals_after_roll(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 1, 0);
    cairn_stats st;
    int64_t deadline;
    seen all;
    append_range(db, 0, 100);
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    deadline = wall_ms() + 10000;
    for (;;) {
        get_stats(db, &st);
        if (st.segments_sealed >= 1 && st.segments_closed == 0)
            break;
        if (wall_ms() > deadline)
            fail_msg("no seal within 10 s: %llu sealed, %llu closed",
                     (unsigned long long)st.segments_sealed,
                     (unsigned long long)st.segments_closed);
        sleep_ms(5);
    }
    assert_int_equal(st.records, 100);
    assert_int_equal(st.sealed_raw_bytes, sum_sizes(0, 100));
    check_all(db, 100, &all);
    check_get_all(db, 100, all.ts);
    seen_free(&all);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_handle_survives_many_rolls(void **state)
{
    fx *f = *state;
    int fds_before = count_fds();
    cairn_db *db = open_db(f->path, 1, 1, 4096);
    cairn_stats st;
    seen all;
    append_range(db, 0, 2000);
    get_stats(db, &st);
    assert_int_equal(st.records, 2000);
    assert_true(st.segments_sealed + st.segments_closed >= 50);
    check_all(db, 2000, &all);
    check_get_all(db, 2000, all.ts);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    /* Closing gave back every file descriptor (and stopped the thread). */
    assert_int_equal(count_fds(), fds_before);
    db = open_db(f->path, 0, 0, 0);
    check_get_all(db, 2000, all.ts);
    seen_free(&all);
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    get_stats(db, &st);
    assert_int_equal(st.segments_closed, 0);
    assert_int_equal(st.records, 2000);
    append_range(db, 2000, 2010);
    check_all(db, 2010, &all);
    seen_free(&all);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_int_equal(count_fds(), fds_before);
}

/* ------------------------------------------------------------------------
 * Read-only handles.
 * ---------------------------------------------------------------------- */

static void test_read_only_handle_refuses_appends(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0), *ro;
    gen g;
    cairn_entry e;
    uint64_t seq = 0;
    seen all;
    append_range(db, 0, 5);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    ro = open_ro(f->path);
    assert_int_equal(cairn_append(ro, gen_entry(5, &g), &seq), CAIRN_EPERM);
    e = *gen_entry(5, &g);
    assert_int_equal(cairn_append_batch(ro, &e, 1, &seq), CAIRN_EPERM);
    check_all(ro, 5, &all);
    seen_free(&all);
    check_get_all(ro, 5, NULL);
    assert_int_equal(cairn_close(ro), CAIRN_OK);
    /* Nothing was written: a writer continues at seq 6. */
    db = open_db(f->path, 0, 0, 0);
    assert_int_equal(cairn_append(db, gen_entry(5, &g), &seq), CAIRN_OK);
    assert_int_equal(seq, 6);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_read_only_handle_follows_the_writer(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 4096), *ro;
    seen all;
    append_range(db, 0, 10);
    assert_int_equal(cairn_flush(db), CAIRN_OK);
    ro = open_ro(f->path); /* no lock needed while the writer runs */
    check_all(ro, 10, &all);
    seen_free(&all);
    /* Flushed records, across rolls and a seal, show up in a new iterator. */
    append_range(db, 10, 80);
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    append_range(db, 80, 90);
    assert_int_equal(cairn_flush(db), CAIRN_OK);
    /* cairn_get alone (no iterator opened first) sees them too. */
    check_get_all(ro, 90, NULL);
    check_all(ro, 90, &all);
    seen_free(&all);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    check_all(ro, 90, &all);
    seen_free(&all);
    assert_int_equal(cairn_close(ro), CAIRN_OK);
}

/* Counts fdatasyncs of closed segments, and can make every seal fail. */
typedef struct countio {
    cairn_io io;
    int closed_syncs;
    int fail_seal;
} countio;

static ssize_t count_pwrite(void *user, const char *site, int fd, const void *buf, size_t len,
                            off_t off)
{
    countio *c = user;
    if (c->fail_seal && strcmp(site, "seal.write") == 0) {
        errno = EIO;
        return -1;
    }
    return cairn_io_default()->pwrite(NULL, site, fd, buf, len, off);
}

static int count_fdatasync(void *user, const char *site, int fd)
{
    countio *c = user;
    if (strcmp(site, "closed.fdatasync") == 0)
        c->closed_syncs++;
    return cairn_io_default()->fdatasync(NULL, site, fd);
}

static void closed_segments_sync(cairn_durability mode, const char *path)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    countio c;
    cairn_db *db = NULL;
    cairn_stats st;
    int after_roll;

    memset(&c, 0, sizeof c);
    c.io = *cairn_io_default();
    c.io.pwrite = count_pwrite;
    c.io.fdatasync = count_fdatasync;
    c.io.user = &c;
    c.fail_seal = 1; /* closed segments stay unsealed */
    o.create = 1;
    o.background = 0;
    o.segment_size = 4096;
    o.durability = mode;
    o.io = &c.io;
    assert_int_equal(cairn_open(&db, path, &o, err, sizeof err), CAIRN_OK);
    append_range(db, 0, 120); /* rolls; the inline seals fail, unreported */
    get_stats(db, &st);
    assert_true(st.segments_closed >= 1);
    assert_int_equal(st.segments_sealed, 0);
    after_roll = c.closed_syncs;
    assert_int_equal(cairn_sync(db), CAIRN_OK);
    if (mode == CAIRN_DURABILITY_NONE) {
        /* No sync at a roll; cairn_sync syncs every unsealed closed one. */
        assert_int_equal(after_roll, 0);
        assert_int_equal(c.closed_syncs, (int)st.segments_closed);
    } else {
        /* batch: each roll leaves its closed segment for the flusher, and
         * the next roll or cairn_sync syncs it at the latest. */
        assert_int_equal(c.closed_syncs, (int)st.segments_closed);
    }
    c.closed_syncs = 0;
    assert_int_equal(cairn_close(db), CAIRN_OK); /* its seals fail too */
    /* Closed segments never change: synced once, by this handle, is enough. */
    assert_int_equal(c.closed_syncs, 0);
    c.fail_seal = 0;
    o.create = 0;
    assert_int_equal(cairn_open(&db, path, &o, err, sizeof err), CAIRN_OK);
    get_stats(db, &st);
    assert_int_equal(st.records, 120);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_none_mode_syncs_closed_segments_only_when_asked(void **state)
{
    fx *f = *state;
    closed_segments_sync(CAIRN_DURABILITY_NONE, f->path);
}

static void test_batch_mode_syncs_every_closed_segment(void **state)
{
    fx *f = *state;
    closed_segments_sync(CAIRN_DURABILITY_BATCH, f->path);
}

/* Space reservation (cairn_sys.h): a table that records the reserve and
 * trim calls and forwards them to the real ones. */
enum { RES_REAL, RES_FAIL, RES_GRAB_THEN_FAIL };

typedef struct resio {
    cairn_io io;
    int mode;            /* RES_*: forward; fail with ENOSPC; reserve, then
                            fail with ENOSPC anyway (a partial reservation) */
    int reserves, reserved, trims;
    off_t off, len;      /* of the last reserve */
    off_t trim_len;      /* of the last trim */
} resio;

static int res_reserve(void *user, const char *site, int fd, off_t off, off_t len)
{
    resio *r = user;
    int rc = 0;
    r->reserves++;
    r->off = off;
    r->len = len;
    if (strcmp(site, "segment.reserve") != 0)
        fail_msg("reserve at unexpected site %s", site);
    if (r->mode != RES_FAIL)
        rc = cairn_io_default()->reserve(NULL, site, fd, off, len);
    if (rc == 0 && r->mode == RES_REAL)
        r->reserved++;
    if (r->mode != RES_REAL) {
        errno = ENOSPC;
        return -1;
    }
    return rc;
}

static int res_ftruncate(void *user, const char *site, int fd, off_t len)
{
    resio *r = user;
    if (strcmp(site, "segment.trim") == 0) {
        r->trims++;
        r->trim_len = len;
    }
    return cairn_io_default()->ftruncate(NULL, site, fd, len);
}

static cairn_db *open_res(const char *path, resio *r, int create, uint64_t segment_size)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    char err[CAIRN_ERRMSG_MAX] = "";
    r->io = *cairn_io_default();
    r->io.reserve = res_reserve;
    r->io.ftruncate = res_ftruncate;
    r->io.user = r;
    o.create = create;
    o.background = 0;
    o.segment_size = segment_size;
    o.durability = CAIRN_DURABILITY_FULL;
    o.io = &r->io;
    if (cairn_open(&db, path, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open(%s): %s", path, err);
    return db;
}

/* Bytes the file system has allocated to the newest .log of the store. */
static long long log_allocated(const char *path, long long *size)
{
    char *file = tu_find_last(path, ".log"); /* dir/name */
    struct stat st;
    assert_non_null(file);
    assert_int_equal(stat(file, &st), 0);
    free(file);
    *size = (long long)st.st_size;
    return (long long)st.st_blocks * 512;
}

/* A writer opened with the real I/O table finds n records. */
static void reopen_expect_records(const char *path, uint64_t n)
{
    cairn_db *db = open_db(path, 0, 0, 0);
    cairn_stats st;
    get_stats(db, &st);
    assert_int_equal(st.records, n);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* Can this file system reserve 1 MiB past a file's end? (tmpfs: no.) */
static int fs_reserves(const char *dir)
{
    char *file = tu_join(dir, "probe");
    int fd = open(file, O_CREAT | O_RDWR, 0644), ok;
    struct stat st;
    assert_true(fd >= 0);
    ok = cairn_io_default()->reserve(NULL, "probe", fd, 0, 1 << 20) == 0 &&
         fstat(fd, &st) == 0 && st.st_size == 0 && (long long)st.st_blocks * 512 >= 1 << 20;
    close(fd);
    unlink(file);
    free(file);
    if (!ok)
        print_message("(this file system reserves nothing: allocation not checked)\n");
    return ok;
}

static void test_writer_reserves_the_active_segment_and_gives_back_the_rest(void **state)
{
    fx *f = *state;
    const uint64_t seg = 1 << 20;
    resio r;
    cairn_db *db;
    cairn_stats st;
    long long size, alloc, size_before;
    int can = fs_reserves(f->dir);

    memset(&r, 0, sizeof r);
    db = open_res(f->path, &r, 1, seg);
    assert_int_equal(r.reserves, 0); /* nothing written yet */
    append_range(db, 0, 20);
    /* Once per segment: from the file's end when first written up to where
     * the segment rolls. */
    assert_int_equal(r.reserves, 1);
    assert_int_equal(r.reserved, can);
    assert_true(r.off > 0 && r.off < 4096);
    assert_int_equal((uint64_t)(r.off + r.len), seg);
    assert_int_equal(r.trims, 0); /* it worked (or did nothing): nothing to give back */
    alloc = log_allocated(f->path, &size);
    assert_true(size > r.off); /* the records are there, the size is theirs */
    assert_true(size < 20 * 4096);
    if (can)
        assert_true(alloc >= (long long)seg - 8192);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    /* Close gives the unused part back, at the file's size. */
    alloc = log_allocated(f->path, &size);
    assert_int_equal(r.trims, 1);
    assert_int_equal(r.trim_len, size);
    assert_true(alloc <= size + 8192);

    /* The next writer reserves from where the file ends now. */
    size_before = size;
    db = open_res(f->path, &r, 0, seg);
    append_range(db, 20, 30);
    assert_int_equal(r.reserves, 2);
    assert_int_equal(r.off, size_before);
    /* An early roll trims the segment it closes; the new one reserves when
     * first written. */
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    assert_int_equal(r.trims, 2);
    append_range(db, 30, 31);
    assert_int_equal(r.reserves, 3);
    get_stats(db, &st);
    assert_int_equal(st.records, 31);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    reopen_expect_records(f->path, 31);
}

static void test_a_failed_reservation_loses_nothing_and_reports_nothing(void **state)
{
    fx *f = *state;
    resio r;
    cairn_db *db;
    cairn_stats st;
    int rolls;

    memset(&r, 0, sizeof r);
    r.mode = RES_FAIL;
    db = open_res(f->path, &r, 1, 16 << 10);
    append_range(db, 0, 1);
    /* The failed call may have reserved part of the space: the file is cut
     * back to its size at once, before the records are written. */
    assert_int_equal(r.reserves, 1);
    assert_int_equal(r.trims, 1);
    assert_int_equal(r.trim_len, r.off);
    append_range(db, 1, 600); /* rolls a few times */
    get_stats(db, &st);
    rolls = (int)(st.segments_closed + st.segments_sealed);
    assert_true(rolls >= 2);
    assert_int_equal(r.reserves, rolls + 1); /* each segment asked once */
    assert_int_equal(r.trims, 2 * r.reserves - 1); /* each failure, each roll */
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_int_equal(r.trims, 2 * r.reserves);
    reopen_expect_records(f->path, 600);
}

static void test_a_partly_failed_reservation_gives_back_what_it_took(void **state)
{
    fx *f = *state;
    resio r;
    cairn_db *db;
    long long size, alloc;
    int can = fs_reserves(f->dir);

    memset(&r, 0, sizeof r);
    r.mode = RES_GRAB_THEN_FAIL; /* like fallocate running out of space half way */
    db = open_res(f->path, &r, 1, 4 << 20);
    append_range(db, 0, 10);
    assert_int_equal(r.reserves, 1);
    assert_int_equal(r.trims, 1);
    alloc = log_allocated(f->path, &size);
    if (can) /* 4 MiB were taken; nothing of it may stay while the writer is open */
        assert_true(alloc <= size + 8192);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* What a crash leaves reserved, the next writer gives back at close even if
 * it writes nothing. */
static void test_a_reservation_left_by_a_crash_is_given_back(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0);
    char *file;
    long long size, alloc;
    int fd;

    append_range(db, 0, 5);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    if (!fs_reserves(f->dir))
        return;
    file = tu_find_last(f->path, ".log");
    assert_non_null(file);
    fd = open(file, O_RDWR);
    assert_true(fd >= 0);
    log_allocated(f->path, &size);
    assert_int_equal(cairn_io_default()->reserve(NULL, "test", fd, size, 8 << 20), 0);
    close(fd);
    free(file);
    alloc = log_allocated(f->path, &size);
    assert_true(alloc >= 8 << 20);
    db = open_db(f->path, 0, 0, 0);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    alloc = log_allocated(f->path, &size);
    assert_true(alloc <= size + 8192);
}

/* A program built against CAIRN_OPTIONS_VERSION 1 passes an I/O table that
 * ends before `reserve`: it is read without it (ASan would see a read past
 * the table), and nothing is reserved. */
static void test_a_version_1_io_table_is_read_without_reserve(void **state)
{
    fx *f = *state;
    cairn_options o = CAIRN_OPTIONS_INIT;
    size_t old_size = offsetof(cairn_io, reserve);
    cairn_io *old = malloc(old_size);
    cairn_db *db = NULL;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_stats st;
    struct statvfs vfs;
    long long size, alloc;
    int can = fs_reserves(f->dir);

    assert_non_null(old);
    memcpy(old, cairn_io_default(), old_size);
    o.version = 1;
    o.create = 1;
    o.background = 0;
    o.durability = CAIRN_DURABILITY_FULL;
    o.io = (const struct cairn_io *)old;
    assert_int_equal(cairn_open(&db, f->path, &o, err, sizeof err), CAIRN_OK);
    append_range(db, 0, 10);
    alloc = log_allocated(f->path, &size);
    assert_true(alloc <= size + 8192); /* default segment size: 64 MiB not reserved */
    assert_int_equal(cairn_close(db), CAIRN_OK);
    free(old);
    /* The default table (io NULL) still reserves under version 1. */
    o.io = NULL;
    o.create = 0;
    assert_int_equal(cairn_open(&db, f->path, &o, err, sizeof err), CAIRN_OK);
    append_range(db, 10, 11);
    alloc = log_allocated(f->path, &size);
    if (can && statvfs(f->dir, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize > (1ull << 30))
        assert_true(alloc >= 32 << 20); /* (the default table reserves only with room to spare) */
    get_stats(db, &st);
    assert_int_equal(st.records, 11);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    o.version = 0;
    assert_int_equal(cairn_open(&db, f->path, &o, err, sizeof err), CAIRN_EINVAL);
}

/* ------------------------------------------------------------------------
 * Symlinks and temp files in the store directory.
 * ---------------------------------------------------------------------- */

static const char victim_bytes[] = "precious bytes of a file outside the store\n";

/* A file outside the store with known content; returns its malloc'd path. */
static char *make_victim(const char *dir, const char *name)
{
    char *p = tu_join(dir, name);
    assert_int_equal(tu_write_file(p, victim_bytes, sizeof victim_bytes - 1), 0);
    return p;
}

static void victim_unchanged(const char *path)
{
    size_t len = 0;
    uint8_t *b = tu_read_file(path, &len);
    assert_non_null(b);
    if (len != sizeof victim_bytes - 1 || memcmp(b, victim_bytes, len) != 0)
        fail_msg("%s was written through a symlink (%zu bytes now)", path, len);
    free(b);
}

/* name in the store is a regular file, not a symlink. */
static void is_regular(const char *store, const char *name)
{
    char *p = tu_join(store, name);
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    if (!S_ISREG(st.st_mode))
        fail_msg("%s is not a regular file (mode %o)", name, (unsigned)st.st_mode);
    free(p);
}

static void plant_symlink(const char *store, const char *name, const char *target)
{
    char *p = tu_join(store, name);
    assert_int_equal(symlink(target, p), 0);
    free(p);
}

/* A roll writes MANIFEST.tmp and a seal <id>.seg.tmp: symlinks planted
 * under those names are replaced, never written through, and what is
 * renamed into place is a regular file of the store's own. */
static void test_a_temp_name_planted_as_a_symlink_is_never_written_through(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 4096);
    char *v1 = make_victim(f->dir, "victim-manifest");
    char *v2 = make_victim(f->dir, "victim-seg");
    seen all;

    append_range(db, 0, 3);
    /* Planted while the writer runs (a writer open removes temps). */
    plant_symlink(f->path, "MANIFEST.tmp", v1);
    plant_symlink(f->path, "0000000000000001.seg.tmp", v2);
    assert_int_equal(cairn_roll(db), CAIRN_OK); /* new MANIFEST; inline seal of segment 1 */
    victim_unchanged(v1);
    victim_unchanged(v2);
    is_regular(f->path, "MANIFEST");
    is_regular(f->path, "0000000000000001.seg");
    append_range(db, 3, 5);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_db(f->path, 0, 0, 0);
    check_all(db, 5, &all);
    seen_free(&all);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    victim_unchanged(v1);
    victim_unchanged(v2);
    free(v1);
    free(v2);
}

static void expect_symlink_refused(const char *store, int read_only, const char *name)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    char err[CAIRN_ERRMSG_MAX] = "", want[128];
    int rc;
    o.read_only = read_only;
    o.background = 0;
    rc = cairn_open(&db, store, &o, err, sizeof err);
    snprintf(want, sizeof want, "%s is a symlink; refusing to follow it", name);
    if (rc != CAIRN_ECORRUPT || strstr(err, want) == NULL)
        fail_msg("%s open with %s a symlink: %s (%s); expected CAIRN_ECORRUPT naming it",
                 read_only ? "read-only" : "writer", name, cairn_strerror(rc), err);
    assert_null(db);
}

/* A segment or MANIFEST that is a symlink is refused by every open, and the
 * file it points to is never touched (a writer open would truncate the
 * active segment's torn tail through it). */
static void test_a_store_file_that_is_a_symlink_is_refused(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0);
    char *log = tu_join(f->path, "0000000000000001.log");
    char *moved = tu_join(f->dir, "moved.log");
    char *man = tu_join(f->path, "MANIFEST");
    char *moved_man = tu_join(f->dir, "moved-MANIFEST");
    static const char junk[40] = "torn tail that a writer open truncates";
    long long size;
    int fd;
    seen all;

    append_range(db, 0, 3);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    fd = open(log, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    close(fd);
    size = tu_file_size(log);
    assert_int_equal(rename(log, moved), 0);
    assert_int_equal(symlink(moved, log), 0);
    expect_symlink_refused(f->path, 0, "0000000000000001.log");
    expect_symlink_refused(f->path, 1, "0000000000000001.log");
    assert_int_equal(tu_file_size(moved), size); /* not truncated */
    assert_int_equal(unlink(log), 0);
    assert_int_equal(rename(moved, log), 0);

    assert_int_equal(rename(man, moved_man), 0);
    assert_int_equal(symlink(moved_man, man), 0);
    expect_symlink_refused(f->path, 0, "MANIFEST");
    expect_symlink_refused(f->path, 1, "MANIFEST");
    assert_int_equal(unlink(man), 0);
    assert_int_equal(rename(moved_man, man), 0);

    /* Put back, the store opens with every record (the torn tail cut). */
    db = open_db(f->path, 0, 0, 0);
    check_all(db, 3, &all);
    seen_free(&all);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    free(log);
    free(moved);
    free(man);
    free(moved_man);
}

typedef struct temps_seen {
    char name[8][64];
    uint64_t bytes[8];
    int in_flight[8];
    size_t n;
} temps_seen;

static void temp_seen(void *user, const char *file, uint64_t bytes, int in_flight)
{
    temps_seen *t = user;
    if (t->n == 8)
        fail_msg("more temp files than planted (%s)", file);
    snprintf(t->name[t->n], sizeof t->name[t->n], "%s", file);
    t->bytes[t->n] = bytes;
    t->in_flight[t->n] = in_flight;
    t->n++;
}

static const temps_seen *list_temps(cairn_db *db)
{
    static temps_seen t;
    uint64_t count = 99;
    memset(&t, 0, sizeof t);
    assert_int_equal(cairn_temp_files(db, temp_seen, &t, &count), CAIRN_OK);
    assert_int_equal(count, t.n);
    return &t;
}

/* The listing has name with that size and in_flight flag. */
static void has_temp(const temps_seen *t, const char *name, uint64_t bytes, int in_flight)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->name[i], name) == 0) {
            assert_int_equal(t->bytes[i], bytes);
            assert_int_equal(t->in_flight[i], in_flight);
            return;
        }
    fail_msg("%s is not listed as a temp file", name);
}

static void plant_file(const char *store, const char *name, size_t len)
{
    char *p = tu_join(store, name), buf[5000];
    assert_true(len <= sizeof buf);
    memset(buf, 'q', len);
    assert_int_equal(tu_write_file(p, buf, len), 0);
    free(p);
}

static int exists(const char *store, const char *name)
{
    char *p = tu_join(store, name);
    struct stat st;
    int r = lstat(p, &st) == 0;
    free(p);
    return r;
}

/* Temp files a crash leaves (a checkpoint killed midway leaves one as large
 * as the memory index) are listed with their sizes, are not damage, and
 * are removed by the next writer open, which is the only time nothing can
 * be writing them (the writer holds LOCK from open to close). Files that
 * only look like temps are left alone. */
static void test_stale_temp_files_are_listed_and_removed_at_the_next_writer_open(void **state)
{
    static const char *const temps[] = {
        "mem-0000000000000003.cmx.tmp", "graph-0000000000000003.cgx.tmp", "MANIFEST.tmp",
        "0000000000000009.seg.tmp",
    };
    static const size_t sizes[] = {4999, 7, 3, 11};
    static const char *const others[] = {
        "notes.tmp", "mem-xyz.cmx.tmp", "Mem-0000000000000003.cmx.tmp",
        "mem-0000000000000003.cmx.tmp.old", "mem-000000000000003.cmx.tmp",
    };
    fx *f = *state;
    cairn_db *db = open_db(f->path, 1, 0, 0), *ro;
    char *victim = make_victim(f->dir, "victim-temp");
    const temps_seen *t;
    uint64_t problems = 99;

    append_range(db, 0, 3);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    for (size_t i = 0; i < 4; i++)
        plant_file(f->path, temps[i], sizes[i]);
    for (size_t i = 0; i < 5; i++)
        plant_file(f->path, others[i], 5);
    plant_symlink(f->path, "graph-0000000000000001.cgx.tmp", victim);

    /* Listed, with sizes; no writer is live: leftovers. Not damage. */
    ro = open_ro(f->path);
    t = list_temps(ro);
    assert_int_equal(t->n, 5);
    for (size_t i = 0; i < 4; i++)
        has_temp(t, temps[i], sizes[i], 0);
    has_temp(t, "graph-0000000000000001.cgx.tmp", strlen(victim), 0); /* the link itself */
    assert_int_equal(cairn_verify(ro, NULL, NULL, &problems), CAIRN_OK);
    assert_int_equal(problems, 0);

    /* The next writer open removes every one, and nothing else. */
    db = open_db(f->path, 0, 0, 0);
    for (size_t i = 0; i < 4; i++)
        if (exists(f->path, temps[i]))
            fail_msg("%s is still there after a writer open", temps[i]);
    assert_false(exists(f->path, "graph-0000000000000001.cgx.tmp"));
    victim_unchanged(victim);
    for (size_t i = 0; i < 5; i++)
        if (!exists(f->path, others[i]))
            fail_msg("%s, not a temp file of the store, was removed", others[i]);
    assert_int_equal(list_temps(ro)->n, 0);
    assert_int_equal(list_temps(db)->n, 0);

    /* While a writer is in a turn (it holds LOCK), a temp may be in
     * flight: the listing says so. Between turns it may not. */
    plant_file(f->path, "mem-0000000000000004.cmx.tmp", 100);
    t = list_temps(ro);
    has_temp(t, "mem-0000000000000004.cmx.tmp", 100, 0);
    {
        char *lock = tu_join(f->path, "LOCK");
        int lfd = open(lock, O_RDWR);
        assert_true(lfd >= 0);
        assert_int_equal(flock(lfd, LOCK_EX), 0);
        t = list_temps(ro);
        assert_int_equal(t->n, 1);
        has_temp(t, "mem-0000000000000004.cmx.tmp", 100, 1);
        close(lfd);
        free(lock);
    }
    assert_int_equal(cairn_close(db), CAIRN_OK);
    t = list_temps(ro);
    has_temp(t, "mem-0000000000000004.cmx.tmp", 100, 0);
    assert_int_equal(cairn_close(ro), CAIRN_OK);
    reopen_expect_records(f->path, 3);
    assert_false(exists(f->path, "mem-0000000000000004.cmx.tmp"));
    free(victim);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_is_the_headers),
        T(test_create_close_reopen_keeps_records),
        T(test_a_close_seals_a_large_active_segment),
        T(test_fetch_reads_records_from_sealed_and_active_segments),
        T(test_fetch_from_two_threads_at_once),
        T(test_open_missing_store_without_create_is_not_found),
        T(test_open_refuses_bad_options),
        T(test_settings_chosen_at_creation_are_stored),
        T(test_writers_take_turns_and_a_busy_one_times_out),
        T(test_a_turn_recovers_a_tail_torn_by_a_writer_killed_in_its_turn),
        T(test_a_segment_another_handle_rolled_and_sealed_is_synced_then_left),
        T(test_a_turn_refuses_to_write_after_records_that_vanished),
        T(test_a_handle_killed_by_a_failed_write_lets_the_lock_go),
        T(test_append_returns_increasing_seqs_from_one),
        T(test_empty_store_has_nothing_to_read),
        T(test_append_refuses_invalid_entries),
        T(test_record_too_big_is_refused_and_max_size_is_kept),
        T(test_append_batch_gives_consecutive_seqs),
        T(test_append_batch_is_all_or_nothing),
        T(test_iterate_everything_in_order_with_content),
        T(test_iterator_sees_the_store_as_of_its_opening),
        T(test_iter_open_refuses_an_invalid_range),
        T(test_open_iterator_survives_sealing_of_its_segments),
        T(test_seq_range_iteration_returns_exactly_the_range),
        T(test_type_filter_returns_only_that_type),
        T(test_time_range_iteration_matches_the_timestamps),
        T(test_get_finds_every_seq_across_sealed_segments_and_reopen),
        T(test_roll_of_an_empty_active_segment_is_a_no_op),
        T(test_stats_count_records_segments_and_compression),
        T(test_background_thread_seals_after_roll),
        T(test_handle_survives_many_rolls),
        T(test_read_only_handle_refuses_appends),
        T(test_read_only_handle_follows_the_writer),
        T(test_none_mode_syncs_closed_segments_only_when_asked),
        T(test_batch_mode_syncs_every_closed_segment),
        T(test_writer_reserves_the_active_segment_and_gives_back_the_rest),
        T(test_a_failed_reservation_loses_nothing_and_reports_nothing),
        T(test_a_partly_failed_reservation_gives_back_what_it_took),
        T(test_a_reservation_left_by_a_crash_is_given_back),
        T(test_a_version_1_io_table_is_read_without_reserve),
        T(test_a_temp_name_planted_as_a_symlink_is_never_written_through),
        T(test_a_store_file_that_is_a_symlink_is_refused),
        T(test_stale_temp_files_are_listed_and_removed_at_the_next_writer_open),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
