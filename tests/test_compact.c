/*
 * test_compact.c - log compaction under the retention policy and purge
 * (format-spec/compaction.md): what goes, what stays, and that every
 * answer is the same before and after, in the compacting handle, in a
 * reader that was behind, after a reopen, and rebuilt from the log alone;
 * a commit whose last record went is still whole; a failing I/O call or a
 * kill -9 anywhere in a compaction leaves a store with the same answers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cairn.h"
#include "cairn_sys.h"
#include "merger.h"
#include "store.h"
#include "testutil.h"

typedef struct fx {
    char *dir;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->dir = tu_mkdtemp("compact");
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

static int g_background; /* 1: the handles run their background threads */
static uint64_t g_segment_size = 4096; /* many segments, sealed as they fill */

static cairn_db *open_db_io(const char *dir, int ro, const char *retain, const cairn_io *io)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_db *db = NULL;
    int rc;
    o.create = !ro;
    o.read_only = ro;
    o.background = g_background;
    o.segment_size = g_segment_size;
    o.retain = retain;
    o.io = io;
    rc = cairn_open(&db, dir, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        fail_msg("open %s: %s (%s)", dir, cairn_strerror(rc), err);
    return db;
}

static cairn_db *open_db(const char *dir, int ro, const char *retain)
{
    return open_db_io(dir, ro, retain, NULL);
}

static cairn_mem *open_mem(cairn_db *db)
{
    cairn_mem *m = NULL;
    int rc = cairn_mem_open(db, NULL, &m);
    if (rc != CAIRN_OK)
        fail_msg("cairn_mem_open: %s", cairn_strerror(rc));
    return m;
}

static void store(cairn_mem *m, const char *ns, const char *content, char id[CAIRN_MEM_ID_MAX + 1])
{
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_memory *mem = NULL;
    int rc;
    o.ns = ns;
    rc = cairn_mem_store(m, content, &o, &mem, NULL);
    if (rc != CAIRN_OK)
        fail_msg("store: %s (%s)", cairn_strerror(rc), cairn_mem_errmsg(m));
    snprintf(id, CAIRN_MEM_ID_MAX + 1, "%s", mem->id);
    cairn_mem_free(mem);
}

/* Everything a user can ask, as one string: every id's content (or "-"),
 * the sorted ids two recalls find in both namespaces, and the counts. */
static char *answers(cairn_mem *m, char ids[][CAIRN_MEM_ID_MAX + 1], size_t n)
{
    static const char *const queries[] = {"note topic", "topic three"};
    static const char *const nss[] = {"a", "b"};
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    cairn_mem_stats st;

    out[0] = 0;
    for (size_t i = 0; i < n; i++) {
        cairn_memory *mem = NULL;
        int rc = cairn_mem_get(m, ids[i], &mem);
        assert_true(rc == CAIRN_OK || rc == CAIRN_ENOTFOUND);
        len += (size_t)snprintf(out + len, cap - len, "%s=%s|", ids[i],
                                rc == CAIRN_OK ? mem->content : "-");
        cairn_mem_free(mem);
    }
    for (size_t q = 0; q < 2; q++) {
        cairn_recall_opts o = CAIRN_RECALL_OPTS_INIT;
        cairn_recall_hit *h = NULL;
        size_t nh = 0;
        char (*got)[CAIRN_MEM_ID_MAX + 1];
        o.k = 1000;
        o.ns = nss;
        o.n_ns = 2;
        assert_int_equal(cairn_mem_recall(m, queries[q], &o, &h, &nh), CAIRN_OK);
        got = calloc(nh + 1, sizeof *got);
        for (size_t i = 0; i < nh; i++)
            snprintf(got[i], sizeof got[i], "%s", h[i].mem.id);
        qsort(got, nh, sizeof *got, (int (*)(const void *, const void *))strcmp);
        len += (size_t)snprintf(out + len, cap - len, "\n%s:", queries[q]);
        for (size_t i = 0; i < nh; i++)
            len += (size_t)snprintf(out + len, cap - len, " %s", got[i]);
        free(got);
        cairn_recall_free(h, nh);
    }
    assert_int_equal(cairn_mem_stats_get(m, &st), CAIRN_OK);
    len += (size_t)snprintf(out + len, cap - len, "\ntotal %llu deleted %llu skipped %llu",
                            (unsigned long long)st.total, (unsigned long long)st.deleted,
                            (unsigned long long)st.skipped);
    cairn_mem_stats_free(&st);
    assert_true(len < cap);
    return out;
}

#define N_MEM 120
static char g_ids[N_MEM + 5][CAIRN_MEM_ID_MAX + 1];

/* 120 memories in namespaces a and b; 20 updated; the first 60 deleted,
 * then namespace b cleared (30 more gone); 5 stored in b after. */
static void fill(cairn_mem *m)
{
    for (int i = 0; i < N_MEM; i++) {
        char text[96];
        snprintf(text, sizeof text, "note %d about topic %s with some padding words", i,
                 i % 3 == 0 ? "three" : "other");
        store(m, i % 2 ? "b" : "a", text, g_ids[i]);
    }
    for (int i = 50; i < 70; i++) {
        cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;
        u.importance = 0.9;
        assert_int_equal(cairn_mem_update(m, g_ids[i], &u), CAIRN_OK);
    }
    for (int i = 0; i < 60; i++)
        assert_int_equal(cairn_mem_delete(m, g_ids[i], "test"), CAIRN_OK);
    assert_int_equal(cairn_mem_clear(m, "b"), CAIRN_OK);
    for (int i = 0; i < 5; i++) {
        char text[64];
        snprintf(text, sizeof text, "later note %d about topic three", i);
        store(m, "b", text, g_ids[N_MEM + i]);
    }
}

static void remove_derived(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, "mem-", 4) == 0 || strncmp(de->d_name, "graph-", 6) == 0) {
            char *p = tu_join(dir, de->d_name);
            unlink(p);
            free(p);
        }
    closedir(d);
    assert_int_equal(tu_relist(dir), 0); /* a store without them */
}

static void count_problem(void *user, const char *file, uint64_t off, int code, const char *msg)
{
    (void)off;
    (void)code;
    fprintf(stderr, "verify: %s: %s\n", file, msg);
    ++*(int *)user;
}

static void verify_clean(const char *dir)
{
    cairn_db *db = open_db(dir, 1, NULL);
    uint64_t problems = 99;
    int n = 0;
    assert_int_equal(cairn_verify(db, count_problem, &n, &problems), CAIRN_OK);
    assert_int_equal(problems, 0);
    assert_int_equal(n, 0);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* The memory counts a fresh reader of dir sees; rebuilt: from the log
 * alone. */
typedef struct counts {
    uint64_t total, deleted, skipped, index_seq, unfinished;
} counts;

static counts counts_of(const char *dir, int rebuilt)
{
    cairn_db *db;
    cairn_mem *m;
    cairn_mem_stats st;
    counts c;
    if (rebuilt)
        remove_derived(dir);
    db = open_db(dir, 1, NULL);
    m = open_mem(db);
    assert_int_equal(cairn_mem_stats_get(m, &st), CAIRN_OK);
    c.total = st.total;
    c.deleted = st.deleted;
    c.skipped = st.skipped;
    c.index_seq = st.index_seq;
    c.unfinished = cairn_mem_unfinished(m);
    assert_int_equal(st.index_note[0], 0);
    cairn_mem_stats_free(&st);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    return c;
}

/* The answers of a fresh handle on dir about ids; rebuilt: from the log
 * alone. */
static char *answers_of_ids(const char *dir, int rebuilt, char ids[][CAIRN_MEM_ID_MAX + 1],
                            size_t n)
{
    cairn_db *db;
    cairn_mem *m;
    char *a;
    if (rebuilt)
        remove_derived(dir);
    db = open_db(dir, 1, NULL);
    m = open_mem(db);
    a = answers(m, ids, n);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    return a;
}

static char *answers_of(const char *dir, int rebuilt)
{
    return answers_of_ids(dir, rebuilt, g_ids, N_MEM + 5);
}

static void test_compaction_drops_dead_lives_and_keeps_every_answer(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:0");
    cairn_mem *m = open_mem(db);
    cairn_compact_report rep, dry;
    char *before, *after, *fresh, *rebuilt;

    fill(m);
    before = answers(m, g_ids, N_MEM + 5);
    assert_non_null(strstr(before, "total 35 deleted 90"));
    assert_int_equal(cairn_mem_compact(m, 1, &dry), CAIRN_OK);
    assert_int_equal(dry.dry_run, 1);
    assert_int_equal(dry.memories_dropped, 90);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.retain.memories, CAIRN_RETAIN_LIVE);
    assert_int_equal(rep.memories_dropped, 90);
    assert_int_equal(rep.memories_pinned, 0);
    /* 90 stores, the 15 updates of those, 60 deletes; the clear stays */
    assert_int_equal(rep.dropped, 165);
    assert_int_equal(dry.dropped, rep.dropped);
    assert_int_equal(dry.records_after, rep.records_after);
    assert_true(rep.records_after < rep.records_before);
    assert_true(rep.bytes_after < rep.bytes_before);
    assert_true(rep.rewritten > 0);
    after = answers(m, g_ids, N_MEM + 5);
    assert_string_equal(before, after);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    fresh = answers_of(f->dir, 0);
    assert_string_equal(before, fresh);
    rebuilt = answers_of(f->dir, 1);
    assert_string_equal(before, rebuilt);
    verify_clean(f->dir);
    /* Nothing more to drop: a second compaction rewrites nothing. */
    db = open_db(f->dir, 0, NULL);
    m = open_mem(db);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.dropped, 0);
    assert_int_equal(rep.rewritten, 0);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    free(before);
    free(after);
    free(fresh);
    free(rebuilt);
}

static void test_under_retain_all_nothing_goes(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, NULL);
    cairn_mem *m = open_mem(db);
    cairn_compact_report rep;
    cairn_memory *mem = NULL;
    char id[CAIRN_MEM_ID_MAX + 1];
    store(m, "", "kept for the audit", id);
    assert_int_equal(cairn_mem_delete(m, id, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.retain.memories, CAIRN_RETAIN_ALL);
    assert_int_equal(rep.dropped, 0);
    assert_int_equal(rep.records_after, rep.records_before);
    assert_int_equal(cairn_mem_restore(m, id, &mem), CAIRN_OK);
    cairn_mem_free(mem);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* An import is one commit; its last record going must not make a reader
 * take the commit for one a crash cut short. */
static void test_a_commit_whose_last_record_went_is_still_whole(void **state)
{
    fx *f = *state;
    static const char input[] =
        "[{\"id\":\"i1\",\"content\":\"imported one\",\"category\":\"fact\"},"
        "{\"id\":\"i2\",\"content\":\"imported two\",\"category\":\"fact\"},"
        "{\"id\":\"i3\",\"content\":\"imported three\",\"category\":\"fact\"},"
        "{\"id\":\"i4\",\"content\":\"imported four\",\"category\":\"fact\"}]";
    cairn_db *db = open_db(f->dir, 0, "live:0");
    cairn_mem *m = open_mem(db);
    cairn_compact_report rep;
    counts c;
    uint64_t imported = 0, skipped = 0;

    assert_int_equal(cairn_mem_import(m, CAIRN_MEM_JSON, input, sizeof input - 1, NULL,
                                      &imported, &skipped),
                     CAIRN_OK);
    assert_int_equal(imported, 4);
    assert_int_equal(cairn_mem_delete(m, "i4", NULL), CAIRN_OK); /* the commit's last */
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.memories_dropped, 1);
    {
        cairn_memory *mem = NULL;
        assert_int_equal(cairn_mem_restore(m, "i4", &mem), CAIRN_ENOTFOUND);
        assert_non_null(strstr(cairn_mem_errmsg(m), "compaction dropped its records"));
    }
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    c = counts_of(f->dir, 1);
    assert_int_equal(c.total, 3);
    assert_int_equal(c.deleted, 1);
    assert_int_equal(c.skipped, 0);
    assert_int_equal(c.unfinished, 0);
}

/* A memory an index file holds live stays (a reader of the file must
 * still meet its deletion); the next checkpoint frees it. */
static void test_a_memory_an_index_file_holds_stays_until_a_checkpoint(void **state)
{
    counts c;
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:0");
    cairn_mem *m = open_mem(db);
    cairn_compact_report rep;
    cairn_memory *mem = NULL;
    char x[CAIRN_MEM_ID_MAX + 1], y[CAIRN_MEM_ID_MAX + 1];

    store(m, "", "the memory x", x);
    store(m, "", "the memory y", y);
    assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK);
    assert_int_equal(cairn_mem_delete(m, x, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.memories_pinned, 1);
    assert_int_equal(rep.memories_dropped, 0);
    assert_int_equal(rep.dropped, 0);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    /* a reader of that file still finds x gone */
    db = open_db(f->dir, 1, NULL);
    m = open_mem(db);
    assert_int_equal(cairn_mem_get(m, x, &mem), CAIRN_ENOTFOUND);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_db(f->dir, 0, NULL);
    m = open_mem(db);
    assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.memories_pinned, 0);
    assert_int_equal(rep.memories_dropped, 1);
    assert_int_equal(rep.dropped, 2);
    assert_int_equal(cairn_mem_get(m, y, &mem), CAIRN_OK);
    cairn_mem_free(mem);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    /* The file covers the dropped deletion of x: its hole keeps the
     * record's checksum, so the file is still bound and used. */
    c = counts_of(f->dir, 0);
    assert_int_equal(c.index_seq, 3);
    assert_int_equal(c.total, 1);
    assert_int_equal(c.deleted, 1);
    verify_clean(f->dir);
}

static void test_the_grace_period_keeps_what_went_recently(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:1h");
    cairn_mem *m = open_mem(db);
    cairn_compact_report rep;
    cairn_memory *mem = NULL;
    char x[CAIRN_MEM_ID_MAX + 1];

    store(m, "", "recently removed", x);
    assert_int_equal(cairn_mem_delete(m, x, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.retain.grace_ms, 3600000);
    assert_int_equal(rep.memories_in_grace, 1);
    assert_int_equal(rep.memories_dropped, 0);
    assert_int_equal(rep.dropped, 0);
    assert_int_equal(cairn_mem_restore(m, x, &mem), CAIRN_OK);
    cairn_mem_free(mem);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* A reader that folded the memory live, then met a log whose deletion of
 * it was dropped: it must fold again, not keep the memory. */
static void test_a_reader_behind_the_compaction_folds_again(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:0"), *rdb;
    cairn_mem *m = open_mem(db), *r;
    cairn_compact_report rep;
    cairn_memory *mem = NULL;
    cairn_mem_stats st;
    char x[CAIRN_MEM_ID_MAX + 1], y[CAIRN_MEM_ID_MAX + 1];

    store(m, "", "a memory the reader saw", x);
    store(m, "", "a memory that stays", y);
    rdb = open_db(f->dir, 1, NULL);
    r = open_mem(rdb);
    assert_int_equal(cairn_mem_get(r, x, &mem), CAIRN_OK);
    cairn_mem_free(mem);
    assert_int_equal(cairn_mem_delete(m, x, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.dropped, 2);
    assert_int_equal(cairn_mem_get(r, x, &mem), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_mem_get(r, y, &mem), CAIRN_OK);
    cairn_mem_free(mem);
    assert_int_equal(cairn_mem_stats_get(r, &st), CAIRN_OK);
    assert_int_equal(st.total, 1);
    assert_int_equal(st.deleted, 1);
    cairn_mem_stats_free(&st);
    cairn_mem_close(r);
    assert_int_equal(cairn_close(rdb), CAIRN_OK);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* An iterator opened before a compaction reads the old log to its end:
 * no hole, no record missing, no file gone under it. */
static void test_an_iterator_open_across_a_compaction_reads_the_old_log(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:0"), *rdb;
    cairn_mem *m = open_mem(db);
    cairn_compact_report rep;
    cairn_iter *it;
    cairn_record rec;
    uint64_t n = 0, last = 0;
    int rc;

    fill(m);
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    rdb = open_db(f->dir, 1, NULL);
    assert_int_equal(cairn_iter_open(rdb, NULL, &it), CAIRN_OK);
    assert_int_equal(cairn_iter_next(it, &rec), CAIRN_OK);
    n = 1;
    last = rec.seq;
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_true(rep.dropped > 0);
    while ((rc = cairn_iter_next(it, &rec)) == CAIRN_OK) {
        assert_int_not_equal(rec.type, CAIRN_REC_COMPACTED);
        assert_int_equal(rec.seq, last + 1);
        last = rec.seq;
        n++;
    }
    assert_int_equal(rc, CAIRN_ENOTFOUND);
    assert_int_equal(n, rep.records_before);
    cairn_iter_close(it);
    assert_int_equal(cairn_close(rdb), CAIRN_OK);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* Does any file of dir hold the bytes of s? */
static int any_file_holds(const char *dir, const char *s)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int found = 0;
    while (!found && (de = readdir(d)) != NULL) {
        char *p = tu_join(dir, de->d_name);
        size_t len;
        uint8_t *b = de->d_name[0] == '.' ? NULL : tu_read_file(p, &len);
        for (size_t i = 0; b != NULL && !found && i + strlen(s) <= len; i++)
            found = memcmp(b + i, s, strlen(s)) == 0;
        free(b);
        free(p);
    }
    closedir(d);
    return found;
}

static void test_purge_leaves_no_byte_of_the_memory_in_any_file(void **state)
{
    fx *f = *state;
    static const char secret[] = "the vault code is 7291-4410";
    cairn_db *db = open_db(f->dir, 0, NULL);
    cairn_mem *m = open_mem(db);
    cairn_purge_report rep;
    cairn_memory *mem = NULL;
    cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;
    cairn_mem_stats st;
    cairn_iter *it;
    cairn_record rec;
    char x[CAIRN_MEM_ID_MAX + 1], y[CAIRN_MEM_ID_MAX + 1];
    uint64_t markers = 0, deleted;

    store(m, "", secret, x);
    store(m, "", "an ordinary memory", y);
    assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK);
    assert_int_equal(cairn_mem_delete(m, x, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_restore(m, x, &mem), CAIRN_OK); /* a second life */
    cairn_mem_free(mem);
    u.importance = 0.8;
    assert_int_equal(cairn_mem_update(m, x, &u), CAIRN_OK);
    assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK);
    assert_true(any_file_holds(f->dir, secret));
    assert_int_equal(cairn_mem_purge(m, x, &rep), CAIRN_OK);
    assert_int_equal(rep.records, 4); /* two stores, the delete, the update */
    assert_int_equal(rep.was_live, 1);
    assert_true(rep.marker_seq > 0);
    assert_false(any_file_holds(f->dir, secret));
    assert_int_equal(cairn_mem_get(m, x, &mem), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_mem_restore(m, x, &mem), CAIRN_ENOTFOUND);
    assert_non_null(strstr(cairn_mem_errmsg(m), "was purged at"));
    /* Again: nothing left in the log; the index file is written anew. */
    assert_int_equal(cairn_mem_purge(m, x, &rep), CAIRN_OK);
    assert_int_equal(rep.records, 0);
    assert_int_equal(cairn_mem_purge(m, "m0000000000000000", &rep), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_mem_purge(m, "not an id!", &rep), CAIRN_EINVAL);
    assert_int_equal(cairn_mem_stats_get(m, &st), CAIRN_OK);
    assert_int_equal(st.total, 1);
    deleted = st.deleted;
    cairn_mem_stats_free(&st);
    assert_int_equal(cairn_iter_open(db, NULL, &it), CAIRN_OK);
    while (cairn_iter_next(it, &rec) == CAIRN_OK)
        if (rec.type == CAIRN_REC_MEMORY_PURGE) {
            markers++;
            assert_non_null(strstr(rec.json, x));
        }
    cairn_iter_close(it);
    assert_int_equal(markers, 1);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    remove_derived(f->dir);
    db = open_db(f->dir, 1, NULL);
    m = open_mem(db);
    assert_int_equal(cairn_mem_stats_get(m, &st), CAIRN_OK);
    assert_int_equal(st.total, 1);
    assert_int_equal(st.deleted, deleted);
    cairn_mem_stats_free(&st);
    assert_int_equal(cairn_mem_get(m, y, &mem), CAIRN_OK);
    cairn_mem_free(mem);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    verify_clean(f->dir);
}

static uint64_t events_bytes(cairn_db *db, const char *ns, uint64_t *n, uint64_t *last_seq)
{
    cairn_range r = CAIRN_RANGE_INIT;
    cairn_iter *it;
    cairn_record rec;
    uint64_t bytes = 0;
    r.type = CAIRN_REC_EVENT;
    *n = *last_seq = 0;
    assert_int_equal(cairn_iter_open(db, &r, &it), CAIRN_OK);
    while (cairn_iter_next(it, &rec) == CAIRN_OK)
        if (rec.ns_len == strlen(ns) && memcmp(rec.ns, ns, rec.ns_len) == 0) {
            bytes += 40 + rec.ns_len + rec.json_len + rec.bin_len;
            ++*n;
            *last_seq = rec.seq;
        }
    cairn_iter_close(it);
    return bytes;
}

static void append_events(cairn_db *db, const char *ns, int n)
{
    for (int i = 0; i < n; i++) {
        char json[128];
        cairn_entry e = {CAIRN_REC_EVENT, ns, strlen(ns), json, 0, NULL, 0};
        e.json_len = (size_t)snprintf(json, sizeof json,
                                      "{\"tool\":\"bash\",\"i\":%d,\"out\":\"some output\"}", i);
        assert_int_equal(cairn_append(db, &e, NULL), CAIRN_OK);
    }
}

/* events:SIZE keeps the newest events of each namespace within the size;
 * the dropped ones leave dropped_upto alone (no fold reads events). */
static void test_events_past_the_size_limit_go_oldest_first(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "all,events:1KiB");
    cairn_mem *m = open_mem(db);
    cairn_compact_report rep;
    uint64_t n_busy, n_quiet, last_busy, last_quiet, b_busy, b_quiet, last_before;
    char x[CAIRN_MEM_ID_MAX + 1];
    char *man;
    size_t len;
    uint8_t *mb;

    append_events(db, "busy", 100);
    append_events(db, "quiet", 5);
    store(m, "", "a memory among the events", x);
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    b_busy = events_bytes(db, "busy", &n_busy, &last_before);
    assert_true(b_busy > 1024);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_true(rep.events_dropped > 0);
    assert_int_equal(rep.dropped, rep.events_dropped);
    assert_int_equal(rep.memories_dropped, 0);
    b_busy = events_bytes(db, "busy", &n_busy, &last_busy);
    b_quiet = events_bytes(db, "quiet", &n_quiet, &last_quiet);
    assert_true(b_busy <= 1024);
    assert_true(b_busy + 200 > 1024); /* no more dropped than needed */
    assert_int_equal(last_busy, last_before); /* the newest stay */
    assert_int_equal(n_busy + rep.events_dropped, 100);
    assert_int_equal(n_quiet, 5);
    assert_true(b_quiet > 0 && b_quiet <= 1024);
    {
        cairn_memory *mem = NULL;
        assert_int_equal(cairn_mem_get(m, x, &mem), CAIRN_OK);
        cairn_mem_free(mem);
    }
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    man = tu_join(f->dir, "MANIFEST");
    mb = tu_read_file(man, &len);
    assert_non_null(mb);
    assert_int_equal(mb[64 + 56], 0); /* dropped_upto: events raise it not */
    free(mb);
    free(man);
    verify_clean(f->dir);
}

/* events:AGE drops the sealed events older than it. */
static void test_events_past_the_age_limit_go(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:0,events:1ms");
    cairn_mem *m = open_mem(db);
    cairn_compact_report rep;
    uint64_t n, last;

    append_events(db, "log", 20);
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    tu_sleep_ms(5);
    append_events(db, "log", 3); /* the active segment's stay */
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.events_dropped, 20);
    assert_int_equal(rep.rolled, 0);
    events_bytes(db, "log", &n, &last);
    assert_int_equal(n, 3);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    verify_clean(f->dir);
}

/* ---- faults and kills ------------------------------------------------ */

/* An I/O table that counts the calls that change files and fails call
 * number fail_at (1-based; 0: none) with err. */
typedef struct inj {
    const cairn_io *real;
    int counting;
    long calls, fail_at;
    int err;
    const char *fired;     /* the site of the call made to fail */
    const char *fail_site; /* or: fail the first call at this site */
    void (*on_pread)(void *user); /* once, at the first pread while armed */
    void (*on_seal_write)(void *user); /* once, at the first write of a compacted file */
    void *hook_user;
} inj;

static int hit_at(inj *j, const char *site)
{
    if (j->fail_site != NULL && strcmp(site, j->fail_site) == 0) {
        j->fail_site = NULL;
        j->fired = site;
        errno = j->err;
        return 1;
    }
    if (!j->counting)
        return 0;
    if (++j->calls == j->fail_at) {
        errno = j->err;
        j->fired = site;
        return 1;
    }
    return 0;
}
#define hit(j) hit_at(j, site)

static int w_open(void *u, const char *site, const char *path, int flags, int mode)
{
    inj *j = u;
    return hit(j) ? -1 : j->real->open(j->real->user, site, path, flags, mode);
}
static int w_openat(void *u, const char *site, int dirfd, const char *path, int flags, int mode)
{
    inj *j = u;
    return hit(j) ? -1 : j->real->openat(j->real->user, site, dirfd, path, flags, mode);
}
static int w_close(void *u, const char *site, int fd)
{
    inj *j = u;
    return j->real->close(j->real->user, site, fd);
}
static ssize_t w_pread(void *u, const char *site, int fd, void *buf, size_t len, off_t off)
{
    inj *j = u;
    if (j->on_pread != NULL) {
        void (*fn)(void *) = j->on_pread;
        j->on_pread = NULL;
        fn(j->hook_user);
    }
    return j->real->pread(j->real->user, site, fd, buf, len, off);
}
static ssize_t w_pwrite(void *u, const char *site, int fd, const void *buf, size_t len,
                        off_t off)
{
    inj *j = u;
    if (j->on_seal_write != NULL && strcmp(site, "compact.write") == 0) {
        void (*fn)(void *) = j->on_seal_write;
        j->on_seal_write = NULL;
        fn(j->hook_user);
    }
    return hit(j) ? -1 : j->real->pwrite(j->real->user, site, fd, buf, len, off);
}
static int w_fsync(void *u, const char *site, int fd)
{
    inj *j = u;
    return hit(j) ? -1 : j->real->fsync(j->real->user, site, fd);
}
static int w_fdatasync(void *u, const char *site, int fd)
{
    inj *j = u;
    return hit(j) ? -1 : j->real->fdatasync(j->real->user, site, fd);
}
static int w_ftruncate(void *u, const char *site, int fd, off_t len)
{
    inj *j = u;
    return hit(j) ? -1 : j->real->ftruncate(j->real->user, site, fd, len);
}
static int w_renameat(void *u, const char *site, int dirfd, const char *from, const char *to)
{
    inj *j = u;
    return hit(j) ? -1 : j->real->renameat(j->real->user, site, dirfd, from, to);
}
static int w_unlinkat(void *u, const char *site, int dirfd, const char *path)
{
    inj *j = u;
    return hit(j) ? -1 : j->real->unlinkat(j->real->user, site, dirfd, path);
}

static cairn_io make_io(inj *j)
{
    cairn_io io;
    memset(&io, 0, sizeof io);
    j->real = cairn_io_default();
    io.open = w_open;
    io.openat = w_openat;
    io.close = w_close;
    io.pread = w_pread;
    io.pwrite = w_pwrite;
    io.fsync = w_fsync;
    io.fdatasync = w_fdatasync;
    io.ftruncate = w_ftruncate;
    io.renameat = w_renameat;
    io.unlinkat = w_unlinkat;
    io.user = j;
    return io;
}

/* The base store of the fault and kill tests, its answers, and the number
 * of file-changing calls a compaction of it makes. */
static char *base_store(const char *dir, char **expect)
{
    char *base = tu_join(dir, "base");
    cairn_db *db = open_db(base, 0, "live:0");
    cairn_mem *m = open_mem(db);
    fill(m);
    *expect = answers(m, g_ids, N_MEM + 5);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    return base;
}

/* A commit whose last two records went leaves a hole that begins before
 * the commit's end: a fold steps over all the hole stands for. */
static void test_a_commit_whose_last_records_went_opens(void **state)
{
    fx *f = *state;
    static const char input[] =
        "[{\"id\":\"j1\",\"content\":\"kept one\",\"category\":\"fact\"},"
        "{\"id\":\"j2\",\"content\":\"gone two\",\"category\":\"fact\"},"
        "{\"id\":\"j3\",\"content\":\"gone three\",\"category\":\"fact\"}]";
    cairn_db *db = open_db(f->dir, 0, "live:0");
    cairn_mem *m = open_mem(db);
    cairn_compact_report rep;
    cairn_memory *mem = NULL;
    uint64_t imported = 0, skipped = 0;

    assert_int_equal(cairn_mem_import(m, CAIRN_MEM_JSON, input, sizeof input - 1, NULL,
                                      &imported, &skipped),
                     CAIRN_OK);
    assert_int_equal(cairn_mem_delete(m, "j2", NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_delete(m, "j3", NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.memories_dropped, 2);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    for (int rebuilt = 0; rebuilt < 2; rebuilt++) {
        counts c = counts_of(f->dir, rebuilt);
        assert_int_equal(c.total, 1);
        assert_int_equal(c.deleted, 2);
    }
    db = open_db(f->dir, 1, NULL);
    m = open_mem(db);
    assert_int_equal(cairn_mem_get(m, "j1", &mem), CAIRN_OK);
    cairn_mem_free(mem);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* A hole never spans a seq an index file covers: a reader of the file
 * folds from the seq after it and must meet every hole there whole. */
static void test_a_hole_ends_at_a_covered_seq(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:0");
    cairn_mem *m = open_mem(db);
    cairn_compact_report rep;
    counts c;
    char a[CAIRN_MEM_ID_MAX + 1], b[CAIRN_MEM_ID_MAX + 1], k[CAIRN_MEM_ID_MAX + 1];

    store(m, "", "memory a", a);
    assert_int_equal(cairn_mem_delete(m, a, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK); /* covers 2 */
    store(m, "", "memory b", b);
    assert_int_equal(cairn_mem_delete(m, b, NULL), CAIRN_OK);
    store(m, "", "memory kept", k);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.memories_dropped, 2);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    c = counts_of(f->dir, 0);
    assert_int_equal(c.index_seq, 2); /* the file is used */
    assert_int_equal(c.total, 1);
    assert_int_equal(c.deleted, 2);
}

/* A record replay skips because of a life (a second store of its id while
 * it was live) keeps that life: dropping it would make replay apply it. */
static void test_a_life_replay_needs_to_skip_a_record_stays(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:0");
    cairn_mem *m = open_mem(db);
    cairn_compact_report rep;
    counts c;
    cairn_record *rec = NULL;
    char x[CAIRN_MEM_ID_MAX + 1];
    cairn_memory *mem = NULL;

    store(m, "", "stored twice", x);
    assert_int_equal(cairn_mem_get(m, x, &mem), CAIRN_OK);
    assert_int_equal(cairn_get(db, mem->seq, &rec), CAIRN_OK);
    {
        cairn_entry e = {rec->type, rec->ns, rec->ns_len, rec->json, rec->json_len, NULL, 0};
        assert_int_equal(cairn_append(db, &e, NULL), CAIRN_OK); /* replay skips it */
    }
    cairn_record_free(db, rec);
    cairn_mem_free(mem);
    assert_int_equal(cairn_mem_delete(m, x, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.memories_dropped, 0);
    assert_int_equal(rep.memories_needed, 1);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    c = counts_of(f->dir, 1);
    assert_int_equal(c.total, 0);
    assert_int_equal(c.skipped, 1);
}

typedef struct racer {
    cairn_mem *w;
} racer;

static void compact_now(void *user)
{
    racer *r = user;
    cairn_compact_report rep;
    assert_int_equal(cairn_mem_compact(r->w, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.dropped, 2);
}

/* A compaction that lands while a reader folds (after it looked at the
 * MANIFEST, before its iterator read the files) must not leave it holding
 * a memory whose deletion went. */
static void test_a_compaction_during_a_readers_fold_is_noticed(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:0"), *rdb;
    cairn_mem *w = open_mem(db), *r;
    cairn_memory *mem = NULL;
    char x[CAIRN_MEM_ID_MAX + 1], y[CAIRN_MEM_ID_MAX + 1];
    racer rc = {NULL};
    inj j;
    cairn_io io;

    store(w, "", "the reader holds this one", x);
    store(w, "", "this one stays", y);
    memset(&j, 0, sizeof j);
    io = make_io(&j);
    rdb = open_db_io(f->dir, 1, NULL, &io);
    r = open_mem(rdb);
    assert_int_equal(cairn_mem_get(r, x, &mem), CAIRN_OK);
    cairn_mem_free(mem);
    assert_int_equal(cairn_mem_delete(w, x, NULL), CAIRN_OK);
    rc.w = w;
    j.hook_user = &rc;
    j.on_pread = compact_now; /* at the reader's next read of the log */
    assert_int_equal(cairn_mem_get(r, x, &mem), CAIRN_ENOTFOUND);
    assert_null(j.on_pread); /* it ran */
    assert_int_equal(cairn_mem_get(r, y, &mem), CAIRN_OK);
    cairn_mem_free(mem);
    cairn_mem_close(r);
    assert_int_equal(cairn_close(rdb), CAIRN_OK);
    cairn_mem_close(w);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

typedef struct writer_meanwhile {
    const char *dir;
    int compact; /* 0: store a memory; 1: compact; 2: store and checkpoint */
    int rc;
    inj *again;  /* set: run again at the next write of a compacted file */
    int times;
} writer_meanwhile;

/* Another handle of the store, with a busy timeout of 50 ms, stores a
 * memory (it must not wait for the compaction) or compacts. */
static void act_meanwhile(void *user)
{
    writer_meanwhile *w = user;
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    cairn_mem *m = NULL;
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_compact_report rep;
    char text[96];
    o.background = 0;
    o.busy_timeout_ms = 50;
    snprintf(text, sizeof text, "written while the log was being compacted, %d", w->times);
    w->rc = cairn_open(&db, w->dir, &o, NULL, 0);
    if (w->rc == CAIRN_OK && (w->rc = cairn_mem_open(db, NULL, &m)) == CAIRN_OK)
        w->rc = w->compact == 1 ? cairn_mem_compact(m, 0, &rep)
                                : cairn_mem_store(m, text, &so, NULL, NULL);
    if (w->rc == CAIRN_OK && w->compact == 2)
        w->rc = cairn_mem_checkpoint(m);
    cairn_mem_close(m);
    if (db != NULL)
        cairn_close(db);
    if (w->again != NULL && ++w->times < 200) /* at every segment written */
        w->again->on_seal_write = act_meanwhile;
}

/* Compact base while act_meanwhile runs at the first write of a compacted
 * file; rc_out gets the compaction's status. */
static void compact_with_another(const char *base, writer_meanwhile *w, int *rc_out,
                                 cairn_compact_report *rep)
{
    inj j;
    cairn_io io;
    cairn_db *db;
    cairn_mem *m;
    memset(&j, 0, sizeof j);
    io = make_io(&j);
    w->dir = base;
    j.on_seal_write = act_meanwhile;
    j.hook_user = w;
    db = open_db_io(base, 0, NULL, &io);
    m = open_mem(db);
    *rc_out = cairn_mem_compact(m, 0, rep);
    if (*rc_out != CAIRN_OK)
        print_message("compact: %s\n", cairn_mem_errmsg(m));
    assert_null(j.on_seal_write); /* it ran, during the compaction's writes */
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* A compaction holds the writer lock only to swap its files in: other
 * writers store while it reads and writes segments. */
static void test_writers_go_on_while_a_compaction_runs(void **state)
{
    fx *f = *state;
    char *expect, *base = base_store(f->dir, &expect);
    writer_meanwhile w = {NULL, 0, -1, NULL, 0};
    cairn_compact_report rep;
    counts c;
    int rc;

    compact_with_another(base, &w, &rc, &rep);
    assert_int_equal(rc, CAIRN_OK);
    assert_int_equal(w.rc, CAIRN_OK);
    assert_int_equal(rep.memories_dropped, 90);
    c = counts_of(base, 1);
    assert_int_equal(c.total, 36);
    assert_int_equal(c.deleted, 90);
    verify_clean(base);
    free(expect);
    free(base);
}

/* Checkpoints another handle writes while a compaction runs cover past
 * what the compaction judged: it goes on (it does not start again, nor
 * give up after three tries). */
static void test_checkpoints_meanwhile_do_not_stop_a_compaction(void **state)
{
    fx *f = *state;
    char *expect, *base = base_store(f->dir, &expect);
    writer_meanwhile w = {NULL, 2, -1, NULL, 0};
    cairn_compact_report rep;
    inj j;
    cairn_io io;
    cairn_db *db;
    cairn_mem *m;
    counts c;

    memset(&j, 0, sizeof j);
    io = make_io(&j);
    w.dir = base;
    w.again = &j;
    j.on_seal_write = act_meanwhile;
    j.hook_user = &w;
    db = open_db_io(base, 0, NULL, &io);
    m = open_mem(db);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(w.rc, CAIRN_OK);
    assert_true(w.times >= 1);
    assert_int_equal(rep.memories_dropped, 90);
    j.on_seal_write = NULL;
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    c = counts_of(base, 1);
    assert_int_equal(c.total, 35 + (uint64_t)w.times);
    assert_int_equal(c.deleted, 90);
    verify_clean(base);
    free(expect);
    free(base);
}

/* One compaction at a time: a second one is told another runs. */
static void test_one_compaction_at_a_time(void **state)
{
    fx *f = *state;
    char *expect, *base = base_store(f->dir, &expect);
    writer_meanwhile w = {NULL, 1, -1, NULL, 0};
    cairn_compact_report rep;
    int rc;

    compact_with_another(base, &w, &rc, &rep);
    assert_int_equal(rc, CAIRN_OK);
    assert_int_equal(w.rc, CAIRN_ELOCKED);
    free(expect);
    free(base);
}

/* A memory with a vector is purged like any: its record decodes with its
 * vector. The purged memory fixed the store's embedder: the marker keeps
 * it, so a rebuild still refuses another embedder's vectors. */
static void test_purge_of_a_memory_with_a_vector(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, NULL);
    cairn_mem *m = open_mem(db);
    cairn_embedder e;
    cairn_purge_report rep;
    char x[CAIRN_MEM_ID_MAX + 1], y[CAIRN_MEM_ID_MAX + 1], name[CAIRN_EMBEDDER_NAME_MAX + 1];
    uint32_t dim = 0;
    uint64_t nvec = 0;

    assert_int_equal(cairn_hash_embedder(&e, 16), CAIRN_OK);
    assert_int_equal(cairn_mem_set_embedder(m, &e), CAIRN_OK);
    store(m, "", "a vector memory holding the vault code 1234", x);
    assert_int_equal(cairn_mem_set_embedder(m, NULL), CAIRN_OK);
    store(m, "", "a memory without a vector", y);
    assert_int_equal(cairn_mem_purge(m, x, &rep), CAIRN_OK);
    assert_int_equal(rep.records, 1);
    assert_false(any_file_holds(f->dir, "vault code 1234"));
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    remove_derived(f->dir);
    db = open_db(f->dir, 1, NULL);
    m = open_mem(db);
    cairn_mem_vectors(m, name, &dim, &nvec);
    assert_string_equal(name, e.name);
    assert_int_equal(dim, 16);
    assert_int_equal(nvec, 0);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    cairn_hash_embedder_free(&e);
}

/* The life whose vector fixed the store's embedder stays (a rebuild
 * without it could take another embedder's vectors). */
static void test_the_life_that_fixed_the_embedder_stays(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:0");
    cairn_mem *m = open_mem(db);
    cairn_embedder e;
    cairn_compact_report rep;
    char a[CAIRN_MEM_ID_MAX + 1], b[CAIRN_MEM_ID_MAX + 1];

    assert_int_equal(cairn_hash_embedder(&e, 16), CAIRN_OK);
    assert_int_equal(cairn_mem_set_embedder(m, &e), CAIRN_OK);
    store(m, "", "the first vector", a);
    store(m, "", "the second vector", b);
    assert_int_equal(cairn_mem_delete(m, a, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_delete(m, b, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.memories_needed, 1);
    assert_int_equal(rep.memories_dropped, 1);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    cairn_hash_embedder_free(&e);
}

/* A memory restored and gone again: while its first life stays (an index
 * file holds it live), its second stays too, so restore brings back the
 * newest, never the older. */
static void test_a_later_life_stays_while_an_earlier_one_does(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:0");
    cairn_mem *m = open_mem(db);
    cairn_compact_report rep;
    cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;
    cairn_memory *mem = NULL;
    char x[CAIRN_MEM_ID_MAX + 1];

    store(m, "", "lived twice", x);
    assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK); /* holds life 1 live */
    assert_int_equal(cairn_mem_delete(m, x, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_restore(m, x, &mem), CAIRN_OK);
    cairn_mem_free(mem);
    u.importance = 0.9;
    assert_int_equal(cairn_mem_update(m, x, &u), CAIRN_OK);
    assert_int_equal(cairn_mem_delete(m, x, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.memories_pinned, 1);
    assert_int_equal(rep.memories_needed, 1);
    assert_int_equal(rep.memories_dropped, 0);
    assert_int_equal(cairn_mem_restore(m, x, &mem), CAIRN_OK);
    assert_true(mem->importance > 0.89);
    cairn_mem_free(mem);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* A reader folded past a hole's first seq (its memory records all before
 * the fold; after it, events the limits dropped): it counts no death of
 * the hole again. */
static void test_a_hole_across_a_readers_fold_counts_no_death_twice(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:0,events:1ms"), *rdb;
    cairn_mem *m = open_mem(db), *r;
    cairn_compact_report rep;
    cairn_mem_stats st;
    char x[CAIRN_MEM_ID_MAX + 1], y[CAIRN_MEM_ID_MAX + 1];

    store(m, "", "stays", y);
    store(m, "", "goes", x);
    assert_int_equal(cairn_mem_delete(m, x, NULL), CAIRN_OK);
    append_events(db, "log", 1);
    rdb = open_db(f->dir, 1, NULL);
    r = open_mem(rdb);
    assert_int_equal(cairn_mem_stats_get(r, &st), CAIRN_OK);
    assert_int_equal(st.deleted, 1);
    cairn_mem_stats_free(&st);
    append_events(db, "log", 1);
    tu_sleep_ms(5);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.memories_dropped, 1);
    assert_int_equal(rep.events_dropped, 2);
    assert_int_equal(cairn_mem_stats_get(r, &st), CAIRN_OK);
    assert_int_equal(st.deleted, 1);
    assert_int_equal(st.total, 1);
    cairn_mem_stats_free(&st);
    cairn_mem_close(r);
    assert_int_equal(cairn_close(rdb), CAIRN_OK);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_int_equal(counts_of(f->dir, 1).deleted, 1);
}

typedef struct same_db_writer {
    cairn_mem *m2;
    int rc;
} same_db_writer;

static void store_on_the_same_db(void *user)
{
    same_db_writer *w = user;
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    w->rc = cairn_mem_store(w->m2, "stored by another handle of the db meanwhile", &so, NULL,
                            NULL);
}

/* Another memory handle of the same db stores while the compaction reads
 * the log: what it appended after the compaction looked is kept, not an
 * error. */
static void test_another_handle_of_the_db_stores_meanwhile(void **state)
{
    fx *f = *state;
    inj j;
    cairn_io io;
    cairn_db *db;
    cairn_mem *m, *m2;
    cairn_compact_report rep;
    same_db_writer w = {NULL, -1};
    char x[CAIRN_MEM_ID_MAX + 1];

    memset(&j, 0, sizeof j);
    io = make_io(&j);
    db = open_db_io(f->dir, 0, "live:0", &io);
    m = open_mem(db);
    m2 = open_mem(db);
    store(m, "", "goes", x);
    assert_int_equal(cairn_mem_delete(m, x, NULL), CAIRN_OK);
    w.m2 = m2;
    j.hook_user = &w;
    j.on_pread = store_on_the_same_db; /* during the compaction's first read */
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_null(j.on_pread);
    assert_int_equal(w.rc, CAIRN_OK);
    assert_int_equal(rep.memories_dropped, 1);
    cairn_mem_close(m2);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_int_equal(counts_of(f->dir, 1).total, 1);
}

typedef struct same_db_compactor {
    cairn_mem *m2;
    int rc;
} same_db_compactor;

static void compact_on_the_same_db(void *user)
{
    same_db_compactor *c = user;
    cairn_compact_report rep;
    c->rc = cairn_mem_compact(c->m2, 0, &rep);
}

/* The compaction lock keeps a handle's own threads apart too: a second
 * memory handle of the same db is told a compaction runs. */
static void test_one_compaction_at_a_time_in_one_process(void **state)
{
    fx *f = *state;
    char *expect, *base = base_store(f->dir, &expect);
    same_db_compactor c = {NULL, -1};
    cairn_compact_report rep;
    cairn_db *db;
    cairn_mem *m;
    inj j;
    cairn_io io;

    memset(&j, 0, sizeof j);
    io = make_io(&j);
    db = open_db_io(base, 0, NULL, &io);
    m = open_mem(db);
    c.m2 = open_mem(db);
    j.on_seal_write = compact_on_the_same_db;
    j.hook_user = &c;
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_null(j.on_seal_write);
    assert_int_equal(c.rc, CAIRN_ELOCKED);
    assert_int_equal(rep.memories_dropped, 90);
    /* the lock went with the first: the second may compact now */
    assert_int_equal(cairn_mem_compact(c.m2, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.dropped, 0);
    cairn_mem_close(c.m2);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    verify_clean(base);
    free(expect);
    free(base);
}

/* A MANIFEST write whose outcome the handle cannot know ends the handle:
 * a retry must not write over a file the MANIFEST may name. */
static void test_a_failed_manifest_swap_ends_the_handle(void **state)
{
    fx *f = *state;
    char *expect, *base = base_store(f->dir, &expect), *got;
    cairn_compact_report rep;
    cairn_db *db;
    cairn_mem *m;
    inj j;
    cairn_io io;

    memset(&j, 0, sizeof j);
    io = make_io(&j);
    j.fail_site = "manifest.dirsync";
    j.err = EIO;
    g_background = 1; /* the lock lingers after a turn: no catch-up before a retry */
    db = open_db_io(base, 0, NULL, &io);
    g_background = 0;
    m = open_mem(db);
    assert_int_not_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_non_null(j.fired);
    j.fail_site = "compact.open";
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_EDEAD);
    cairn_mem_close(m);
    cairn_close(db);
    got = answers_of(base, 0);
    assert_string_equal(got, expect);
    free(got);
    verify_clean(base);
    free(expect);
    free(base);
}

/* Every call in the plain and address-sanitizer builds (memory errors live
 * on the failure paths); every fourth under the thread sanitizer: the
 * handles here run no background thread (background 0), so the sweep has
 * no race to look for, only time to spend (29 s of the suite's 42). */
#if defined(__SANITIZE_THREAD__)
#define FAULT_STRIDE 4
#else
#define FAULT_STRIDE 1
#endif

static void test_every_failing_io_call_of_a_compaction_leaves_the_same_answers(void **state)
{
    fx *f = *state;
    char *expect, *base = base_store(f->dir, &expect), *work = tu_join(f->dir, "work");
    static const int errs[2] = {EIO, ENOSPC};
    long total;
    inj j;
    cairn_io io;

    /* Count the calls. */
    memset(&j, 0, sizeof j);
    io = make_io(&j);
    assert_int_equal(tu_copy_dir(base, work), 0);
    {
        cairn_db *db = open_db_io(work, 0, NULL, &io);
        cairn_mem *m = open_mem(db);
        cairn_compact_report rep;
        j.counting = 1;
        assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
        j.counting = 0;
        assert_true(rep.dropped > 0);
        cairn_mem_close(m);
        assert_int_equal(cairn_close(db), CAIRN_OK);
    }
    total = j.calls;
    assert_true(total > 10);
    tu_rmrf(work);
    for (long n = 1; n <= total; n += FAULT_STRIDE)
        for (int e = 0; e < 2; e++) {
            cairn_compact_report rep;
            cairn_db *db;
            cairn_mem *m;
            char *got;
            int rc;
            memset(&j, 0, sizeof j);
            io = make_io(&j);
            j.fail_at = n;
            j.err = errs[e];
            assert_int_equal(tu_copy_dir(base, work), 0);
            db = open_db_io(work, 0, NULL, &io);
            m = open_mem(db);
            j.counting = 1;
            rc = cairn_mem_compact(m, 0, &rep);
            j.counting = 0;
            /* Only the unlink of a replaced file may fail unseen (the next
             * writer open removes it), and the trim of the space a rolled
             * segment had reserved (a few blocks wasted until it is sealed). */
            if (rc == CAIRN_OK && j.fired != NULL && strcmp(j.fired, "compact.unlink") != 0 &&
                strcmp(j.fired, "segment.trim") != 0)
                fail_msg("call %ld (%s) failed with %s, yet compaction returned OK", n, j.fired,
                         strerror(errs[e]));
            cairn_mem_close(m);
            cairn_close(db);
            got = answers_of(work, 0);
            if (strcmp(got, expect) != 0)
                fail_msg("call %ld failing with %s changed the answers", n, strerror(errs[e]));
            free(got);
            /* a writer open cleans up, then the log alone gives them too */
            db = open_db(work, 0, NULL);
            assert_int_equal(cairn_close(db), CAIRN_OK);
            verify_clean(work);
            got = answers_of(work, 1);
            if (strcmp(got, expect) != 0)
                fail_msg("call %ld failing with %s: the log alone answers otherwise", n,
                         strerror(errs[e]));
            free(got);
            tu_rmrf(work);
        }
    free(expect);
    free(base);
    free(work);
}

static void test_a_kill_9_anywhere_in_a_compaction_leaves_the_same_answers(void **state)
{
    fx *f = *state;
    char *expect, *base = base_store(f->dir, &expect), *work = tu_join(f->dir, "work");
    long long t0, took;
    unsigned seed = 12345;

    /* How long one takes. */
    assert_int_equal(tu_copy_dir(base, work), 0);
    t0 = tu_now_ms();
    {
        cairn_db *db = open_db(work, 0, NULL);
        cairn_mem *m = open_mem(db);
        cairn_compact_report rep;
        assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
        cairn_mem_close(m);
        assert_int_equal(cairn_close(db), CAIRN_OK);
    }
    took = tu_now_ms() - t0 + 2;
    tu_rmrf(work);
    for (int round = 0; round < 25; round++) {
        char *got;
        pid_t pid;
        assert_int_equal(tu_copy_dir(base, work), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            cairn_options o = CAIRN_OPTIONS_INIT;
            cairn_db *db = NULL;
            cairn_mem *m = NULL;
            cairn_compact_report rep;
            o.background = 0;
            if (cairn_open(&db, work, &o, NULL, 0) != CAIRN_OK ||
                cairn_mem_open(db, NULL, &m) != CAIRN_OK)
                _exit(3);
            _exit(cairn_mem_compact(m, 0, &rep) == CAIRN_OK ? 0 : 4);
        }
        seed = seed * 1103515245u + 12345u;
        tu_sleep_ms((long)((seed >> 8) % (unsigned)(took * 3 / 2 + 1)));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        got = answers_of(work, 0);
        if (strcmp(got, expect) != 0)
            fail_msg("round %d: a kill changed the answers", round);
        free(got);
        {
            cairn_db *db = open_db(work, 0, NULL);
            assert_int_equal(cairn_close(db), CAIRN_OK);
        }
        verify_clean(work);
        got = answers_of(work, 1);
        if (strcmp(got, expect) != 0)
            fail_msg("round %d: after a kill the log alone answers otherwise", round);
        free(got);
        tu_rmrf(work);
    }
    free(expect);
    free(base);
    free(work);
}

/* The background pace: under live, a quarter of the live memories gone
 * (at least COMPACT_MIN_GONE) since the last run; with an event limit, the
 * log grown by a quarter (at least a segment); under all, never. */
static void test_the_background_pace(void **state)
{
    cairn_retention all, live, ev;
    cairn__compact_pace p;
    cairn__compact_look now;
    (void)state;
    memset(&all, 0, sizeof all);
    memset(&p, 0, sizeof p);
    memset(&now, 0, sizeof now);
    live = all;
    live.memories = CAIRN_RETAIN_LIVE;
    ev = all;
    ev.events_max_age_ms = 1000;
    now.segment_size = 4096;
    now.gone = now.log_bytes = 1u << 30;
    assert_false(cairn__compact_due(&all, &now, &p));
    now.log_bytes = 0;
    now.live = 100;
    now.gone = COMPACT_MIN_GONE - 1;
    assert_false(cairn__compact_due(&live, &now, &p));
    now.gone = COMPACT_MIN_GONE;
    assert_true(cairn__compact_due(&live, &now, &p));
    now.live = 10000;
    now.gone = 2499;
    assert_false(cairn__compact_due(&live, &now, &p));
    now.gone = 2500;
    assert_true(cairn__compact_due(&live, &now, &p));
    p.gone = 2500; /* after a run: as much again */
    now.gone = 4999;
    assert_false(cairn__compact_due(&live, &now, &p));
    now.gone = 5000;
    assert_true(cairn__compact_due(&live, &now, &p));
    /* those it had to keep: again once the sealed prefix or the newest
     * index file moves, if they are as many */
    now.gone = 2500;
    p.pending = 2500;
    p.sealed = now.sealed = 70;
    p.covered = now.covered = 90;
    assert_false(cairn__compact_due(&live, &now, &p));
    now.sealed = 71;
    assert_true(cairn__compact_due(&live, &now, &p));
    now.sealed = 70;
    now.covered = 91;
    assert_true(cairn__compact_due(&live, &now, &p));
    p.pending = 2499;
    assert_false(cairn__compact_due(&live, &now, &p));
    now.log_bytes = 1u << 30;
    assert_false(cairn__compact_due(&live, &now, &p)); /* no event limit */
    p.log_bytes = 100000;
    now.gone = 1u << 30;
    now.log_bytes = 124999;
    assert_false(cairn__compact_due(&ev, &now, &p)); /* no memory part */
    now.log_bytes = 125000;
    assert_true(cairn__compact_due(&ev, &now, &p));
    now.segment_size = 1u << 20;
    now.log_bytes = 100000 + (1u << 20) - 1;
    assert_false(cairn__compact_due(&ev, &now, &p));
    now.log_bytes = 100000 + (1u << 20);
    assert_true(cairn__compact_due(&ev, &now, &p));
}

#define N_BG 1100
#define N_BG_GONE 1050
static char g_bg_ids[N_BG][CAIRN_MEM_ID_MAX + 1];

static void fill_bg(cairn_mem *m)
{
    for (int i = 0; i < N_BG; i++) {
        char text[96];
        snprintf(text, sizeof text, "note %d about topic %s", i, i % 3 ? "other" : "three");
        store(m, "a", text, g_bg_ids[i]);
    }
    for (int i = 0; i < N_BG_GONE; i++)
        assert_int_equal(cairn_mem_delete(m, g_bg_ids[i], "test"), CAIRN_OK);
}

/* One step as the merger thread runs it: given up at once when asked to
 * stop (nothing changed), run when due (the same answers, the MANIFEST
 * counts the memories dropped), not due again until as much more has
 * gone; what it left in the active segment, an explicit compaction
 * drops. */
static void same_answers(const char *a, const char *b, int line)
{
    size_t i = 0;
    if (strcmp(a, b) == 0)
        return;
    while (a[i] == b[i])
        i++;
    fail_msg("line %d: the answers differ at byte %zu: \"%.60s\" against \"%.60s\"", line, i,
             a + (i > 20 ? i - 20 : 0), b + (i > 20 ? i - 20 : 0));
}

static void test_a_background_compaction_step(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:0");
    cairn_mem *m = open_mem(db);
    cairn__compact_pace pace;
    cairn_compact_report rep;
    cairn_stats st0, st1;
    uint64_t dropped;
    char *before, *after;
    int stop = 1;

    fill_bg(m);
    before = answers(m, g_bg_ids, N_BG);
    assert_non_null(strstr(before, "total 50 deleted 1050"));
    cairn__compact_pace_init(m, &pace);
    assert_int_equal(cairn_stats_get(db, &st0), CAIRN_OK);
    assert_int_equal(cairn__mem_compact_step(m, &pace, &stop), CAIRN_ELOCKED);
    assert_int_equal(cairn_stats_get(db, &st1), CAIRN_OK);
    assert_int_equal(st1.records, st0.records);
    assert_int_equal(cairn__deaths_dropped(db), 0);
    cairn__compact_pace_init(m, &pace);
    stop = 0;
    assert_int_equal(cairn__mem_compact_step(m, &pace, &stop), 1);
    assert_int_equal(cairn_stats_get(db, &st1), CAIRN_OK);
    assert_true(st1.records < st0.records);
    dropped = cairn__deaths_dropped(db);
    assert_true(dropped > 0 && dropped <= N_BG_GONE);
    after = answers(m, g_bg_ids, N_BG);
    same_answers(before, after, __LINE__);
    free(after);
    assert_int_equal(cairn__mem_compact_step(m, &pace, &stop), 0); /* not due */
    /* The rest (in the active segment) goes with an explicit one. */
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.memories_dropped, N_BG_GONE - dropped);
    assert_int_equal(cairn__deaths_dropped(db), N_BG_GONE);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_db(f->dir, 1, NULL); /* the count is in the MANIFEST */
    assert_int_equal(cairn__deaths_dropped(db), N_BG_GONE);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    after = answers_of_ids(f->dir, 0, g_bg_ids, N_BG);
    same_answers(before, after, __LINE__);
    free(after);
    after = answers_of_ids(f->dir, 1, g_bg_ids, N_BG);
    same_answers(before, after, __LINE__);
    free(after);
    verify_clean(f->dir);
    free(before);
}

/* Under live with a grace period, a step that kept many only for their
 * grace runs again once it is over, with no more gone meanwhile. */
static void test_a_background_step_comes_back_when_the_grace_is_over(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:1500ms");
    cairn_mem *m = open_mem(db);
    cairn__compact_pace pace;
    int stop = 0;

    fill_bg(m);
    cairn__compact_pace_init(m, &pace);
    assert_int_equal(cairn__mem_compact_step(m, &pace, &stop), 1);
    assert_int_equal(cairn__deaths_dropped(db), 0); /* all in their grace */
    assert_true(pace.retry_ms > 0);
    assert_int_equal(cairn__mem_compact_step(m, &pace, &stop), 0); /* not yet */
    tu_sleep_ms(1600);
    assert_int_equal(cairn__mem_compact_step(m, &pace, &stop), 1);
    assert_true(cairn__deaths_dropped(db) > 0);
    assert_int_equal(pace.retry_ms, 0);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    verify_clean(f->dir);
}

/* What a step had to keep for a record not sealed yet it comes back
 * for once the segment is sealed, with no more gone meanwhile. */
static void test_a_background_step_comes_back_for_what_was_not_sealed(void **state)
{
    fx *f = *state;
    cairn_db *db;
    cairn_mem *m;
    cairn__compact_pace pace;
    int stop = 0;

    g_segment_size = 64u << 20; /* everything in the active segment */
    db = open_db(f->dir, 0, "live:0");
    m = open_mem(db);
    fill_bg(m);
    cairn__compact_pace_init(m, &pace);
    assert_int_equal(cairn__mem_compact_step(m, &pace, &stop), 1);
    assert_int_equal(cairn__deaths_dropped(db), 0);
    assert_int_equal(pace.pending, N_BG_GONE);
    assert_int_equal(cairn__mem_compact_step(m, &pace, &stop), 0); /* nothing moved */
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    assert_int_equal(cairn__mem_compact_step(m, &pace, &stop), 1);
    assert_int_equal(cairn__deaths_dropped(db), N_BG_GONE);
    assert_int_equal(pace.pending, 0);
    assert_int_equal(cairn__mem_compact_step(m, &pace, &stop), 0);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    g_segment_size = 4096;
    verify_clean(f->dir);
}

/* A MANIFEST of version 4 has no deaths_dropped: the next compaction
 * counts it from the holes and writes it, though it rewrites nothing, and
 * a step is not due again at each open. */
static void test_a_compaction_counts_the_deaths_a_version_4_manifest_lacks(void **state)
{
    fx *f = *state;
    cairn_db *db = open_db(f->dir, 0, "live:0");
    cairn_mem *m = open_mem(db);
    cairn_compact_report rep;
    cairn__compact_pace pace;
    int stop = 0;

    fill_bg(m);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_int_equal(rep.memories_dropped, N_BG_GONE);
    assert_int_equal(cairn__deaths_dropped(db), N_BG_GONE);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    tu_manifest_file_as_version(f->dir, 4);
    for (int open = 0; open < 2; open++) {
        db = open_db(f->dir, 0, NULL);
        m = open_mem(db);
        assert_int_equal(cairn__deaths_dropped(db), open == 0 ? 0 : N_BG_GONE);
        cairn__compact_pace_init(m, &pace);
        /* the first open: due (1,050 gone, none known dropped), and the
         * count put right; the next: not due */
        assert_int_equal(cairn__mem_compact_step(m, &pace, &stop), open == 0 ? 1 : 0);
        assert_int_equal(cairn__deaths_dropped(db), N_BG_GONE);
        assert_int_equal(pace.dropped, 0);
        cairn_mem_close(m);
        assert_int_equal(cairn_close(db), CAIRN_OK);
    }
    verify_clean(f->dir);
}

/* A handle with background threads compacts on its own once enough has
 * gone, and every answer stays. */
static void test_a_background_handle_compacts_on_its_own(void **state)
{
    fx *f = *state;
    cairn_db *db;
    cairn_mem *m;
    char *before, *after;
    int64_t t0;

    g_background = 1;
    db = open_db(f->dir, 0, "live:0");
    m = open_mem(db);
    fill_bg(m);
    before = answers(m, g_bg_ids, N_BG);
    assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK); /* wakes the thread */
    t0 = tu_now_ms();
    while (cairn__deaths_dropped(db) == 0 && tu_now_ms() - t0 < 30000)
        tu_sleep_ms(20);
    assert_true(cairn__deaths_dropped(db) > 0);
    after = answers(m, g_bg_ids, N_BG);
    same_answers(before, after, __LINE__);
    free(after);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    g_background = 0;
    after = answers_of_ids(f->dir, 1, g_bg_ids, N_BG);
    same_answers(before, after, __LINE__);
    free(after);
    verify_clean(f->dir);
    free(before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_background_pace),
        cmocka_unit_test_setup_teardown(test_a_background_compaction_step, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_background_handle_compacts_on_its_own, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_a_background_step_comes_back_when_the_grace_is_over, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_background_step_comes_back_for_what_was_not_sealed, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_compaction_counts_the_deaths_a_version_4_manifest_lacks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction_drops_dead_lives_and_keeps_every_answer,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_under_retain_all_nothing_goes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_commit_whose_last_record_went_is_still_whole,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_memory_an_index_file_holds_stays_until_a_checkpoint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_grace_period_keeps_what_went_recently, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_reader_behind_the_compaction_folds_again, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_an_iterator_open_across_a_compaction_reads_the_old_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_purge_leaves_no_byte_of_the_memory_in_any_file,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_events_past_the_size_limit_go_oldest_first, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_events_past_the_age_limit_go, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_commit_whose_last_records_went_opens, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_hole_ends_at_a_covered_seq, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_life_replay_needs_to_skip_a_record_stays, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_compaction_during_a_readers_fold_is_noticed,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_failed_manifest_swap_ends_the_handle, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_writers_go_on_while_a_compaction_runs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_one_compaction_at_a_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoints_meanwhile_do_not_stop_a_compaction,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_compaction_at_a_time_in_one_process, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_purge_of_a_memory_with_a_vector, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_life_that_fixed_the_embedder_stays, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_later_life_stays_while_an_earlier_one_does,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_hole_across_a_readers_fold_counts_no_death_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_another_handle_of_the_db_stores_meanwhile, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_every_failing_io_call_of_a_compaction_leaves_the_same_answers, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_a_kill_9_anywhere_in_a_compaction_leaves_the_same_answers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
