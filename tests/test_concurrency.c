/*
 * test_concurrency.c - one handle shared by writer and reader threads while
 * segments roll and seal in the background: every reader sees a gap-free
 * prefix, every acknowledged record is there afterwards with its payload,
 * and group commit in `full` mode acknowledges every writer. Run under
 * SANITIZE=thread too (make test does).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn.h"
#include "cairn_sys.h"
#include "testutil.h"

#include <errno.h>
#include <sys/stat.h>
#include <time.h>

#define WRITERS 4
#define READERS 2
#define PER_WRITER 400

typedef struct shared {
    cairn_db *db;
    int failures;          /* set by threads, read after join */
    uint64_t seqs[WRITERS][PER_WRITER];
    pthread_mutex_t mu;
} shared;

typedef struct targ {
    shared *sh;
    long id;
} targ;

static void fail_once(shared *sh, const char *what, int rc)
{
    pthread_mutex_lock(&sh->mu);
    if (sh->failures++ == 0)
        fprintf(stderr, "%s: %s (%s)\n", what, cairn_strerror(rc), cairn_errmsg(sh->db));
    pthread_mutex_unlock(&sh->mu);
}

static void *writer(void *p)
{
    targ *t = p;
    char js[96];
    for (int i = 0; i < PER_WRITER; i++) {
        int n = snprintf(js, sizeof js, "{\"w\":%ld,\"i\":%d}", t->id, i);
        cairn_entry e = {CAIRN_REC_EVENT, "ns", 2, js, (size_t)n, NULL, 0};
        int rc = cairn_append(t->sh->db, &e, &t->sh->seqs[t->id][i]);
        if (rc != CAIRN_OK) {
            fail_once(t->sh, "append", rc);
            return NULL;
        }
    }
    return NULL;
}

static void *reader(void *p)
{
    targ *t = p;
    for (int k = 0; k < 40; k++) {
        cairn_iter *it;
        cairn_record rec;
        uint64_t last = 0;
        int rc = cairn_iter_open(t->sh->db, NULL, &it);
        if (rc != CAIRN_OK) {
            fail_once(t->sh, "iter_open", rc);
            return NULL;
        }
        while ((rc = cairn_iter_next(it, &rec)) == CAIRN_OK) {
            if (rec.seq != last + 1) {
                fail_once(t->sh, "gap in a reader's view", CAIRN_ECORRUPT);
                break;
            }
            last = rec.seq;
        }
        if (rc != CAIRN_OK && rc != CAIRN_ENOTFOUND)
            fail_once(t->sh, "iter_next", rc);
        cairn_iter_close(it);
        if (last > 0) {
            cairn_record *g;
            rc = cairn_get(t->sh->db, last / 2 + 1, &g);
            if (rc != CAIRN_OK || g->seq != last / 2 + 1)
                fail_once(t->sh, "get", rc);
            cairn_record_free(t->sh->db, g);
        }
    }
    return NULL;
}

static void run(cairn_durability d)
{
    char *dir = tu_mkdtemp("conc");
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX];
    shared *sh = calloc(1, sizeof *sh);
    pthread_t th[WRITERS + READERS];
    targ args[WRITERS + READERS];
    cairn_iter *it;
    cairn_record rec;
    cairn_stats st;
    uint64_t problems = 1, count = 0;
    char *seen;
    int rc;

    assert_non_null(dir);
    assert_non_null(sh);
    pthread_mutex_init(&sh->mu, NULL);
    o.create = 1;
    o.durability = d;
    o.segment_size = 8192; /* many rolls and background seals */
    o.batch_ms = 2;
    assert_int_equal(cairn_open(&sh->db, dir, &o, err, sizeof err), CAIRN_OK);
    for (long i = 0; i < WRITERS + READERS; i++) {
        args[i].sh = sh;
        args[i].id = i;
        assert_int_equal(pthread_create(&th[i], NULL, i < WRITERS ? writer : reader, &args[i]),
                         0);
    }
    for (int i = 0; i < WRITERS + READERS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(sh->failures, 0);

    /* Every acknowledged record is there once, with its own payload. */
    seen = calloc(WRITERS * PER_WRITER + 1, 1);
    assert_int_equal(cairn_iter_open(sh->db, NULL, &it), CAIRN_OK);
    while ((rc = cairn_iter_next(it, &rec)) == CAIRN_OK) {
        long w;
        int i;
        char tail;
        assert_int_equal(sscanf(rec.json, "{\"w\":%ld,\"i\":%d%c", &w, &i, &tail), 3);
        assert_true(w >= 0 && w < WRITERS && i >= 0 && i < PER_WRITER);
        assert_int_equal(sh->seqs[w][i], rec.seq);
        assert_false(seen[rec.seq]);
        seen[rec.seq] = 1;
        count++;
    }
    if (rc != CAIRN_ENOTFOUND)
        fail_msg("iteration ended with %s: %s", cairn_strerror(rc), cairn_errmsg(sh->db));
    cairn_iter_close(it);
    assert_int_equal(count, WRITERS * PER_WRITER);
    assert_int_equal(cairn_stats_get(sh->db, &st), CAIRN_OK);
    assert_int_equal(st.records, WRITERS * PER_WRITER);
    assert_true(st.segments_sealed + st.segments_closed > 10);
    assert_int_equal(cairn_verify(sh->db, NULL, NULL, &problems), CAIRN_OK);
    assert_int_equal(problems, 0);
    assert_int_equal(cairn_close(sh->db), CAIRN_OK);

    /* And after reopening. */
    assert_int_equal(cairn_open(&sh->db, dir, &o, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_stats_get(sh->db, &st), CAIRN_OK);
    assert_int_equal(st.records, WRITERS * PER_WRITER);
    assert_int_equal(cairn_close(sh->db), CAIRN_OK);
    free(seen);
    pthread_mutex_destroy(&sh->mu);
    free(sh);
    tu_rmrf(dir);
    free(dir);
}

static void threads_share_a_handle_in_none_mode(void **state)
{
    (void)state;
    run(CAIRN_DURABILITY_NONE);
}

static void threads_share_a_handle_in_batch_mode(void **state)
{
    (void)state;
    run(CAIRN_DURABILITY_BATCH);
}

static void group_commit_acknowledges_every_writer_in_full_mode(void **state)
{
    (void)state;
    run(CAIRN_DURABILITY_FULL);
}

/* An I/O table that holds the sealer inside its first write until the
 * flusher fdatasyncs the active segment (or 5 s pass). */
typedef struct holdio {
    cairn_io io;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int seal_blocked; /* the sealer is parked in seal.write */
    int synced;       /* a segment.fdatasync happened while it was */
    int timed_out;
} holdio;

static ssize_t hold_pwrite(void *user, const char *site, int fd, const void *buf, size_t len,
                           off_t off)
{
    holdio *h = user;
    if (strcmp(site, "seal.write") == 0) {
        struct timespec until;
        pthread_mutex_lock(&h->mu);
        if (!h->synced && !h->timed_out) {
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 5;
            h->seal_blocked = 1;
            pthread_cond_broadcast(&h->cv);
            while (!h->synced && !h->timed_out)
                if (pthread_cond_timedwait(&h->cv, &h->mu, &until) == ETIMEDOUT)
                    h->timed_out = 1;
            h->seal_blocked = 0;
            pthread_cond_broadcast(&h->cv); /* wake the test on a timeout too */
        }
        pthread_mutex_unlock(&h->mu);
    }
    return cairn_io_default()->pwrite(NULL, site, fd, buf, len, off);
}

static int hold_fdatasync(void *user, const char *site, int fd)
{
    holdio *h = user;
    if (strcmp(site, "segment.fdatasync") == 0) {
        pthread_mutex_lock(&h->mu);
        if (h->seal_blocked) {
            h->synced = 1;
            pthread_cond_broadcast(&h->cv);
        }
        pthread_mutex_unlock(&h->mu);
    }
    return cairn_io_default()->fdatasync(NULL, site, fd);
}

static void batch_sync_goes_on_while_a_segment_is_sealed(void **state)
{
    char *dir = tu_mkdtemp("sealbatch");
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX], js[64];
    holdio h;
    cairn_db *db;
    cairn_stats st;
    struct timespec until;
    int n;
    (void)state;

    memset(&h, 0, sizeof h);
    h.io = *cairn_io_default();
    h.io.pwrite = hold_pwrite;
    h.io.fdatasync = hold_fdatasync;
    h.io.user = &h;
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    o.create = 1;
    o.durability = CAIRN_DURABILITY_BATCH;
    o.batch_ms = 10;
    o.segment_size = 4096;
    o.io = &h.io;
    assert_non_null(dir);
    assert_int_equal(cairn_open(&db, dir, &o, err, sizeof err), CAIRN_OK);
    /* Fill a segment and roll: the sealer starts and parks in its first write. */
    for (int i = 0; i < 60; i++) {
        cairn_entry e = {CAIRN_REC_EVENT, "ns", 2, js, 0, NULL, 0};
        e.json_len = (size_t)(n = snprintf(js, sizeof js, "{\"i\":%d,\"pad\":\"%040d\"}", i, 0));
        assert_true(n > 0);
        assert_int_equal(cairn_append(db, &e, NULL), CAIRN_OK);
    }
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    pthread_mutex_lock(&h.mu);
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    while (!h.seal_blocked && !h.synced && !h.timed_out &&
           pthread_cond_timedwait(&h.cv, &h.mu, &until) != ETIMEDOUT)
        ;
    assert_true(h.seal_blocked || h.synced);
    pthread_mutex_unlock(&h.mu);
    /* A record appended now must be fdatasynced within batch_ms, seal or no seal. */
    {
        cairn_entry e = {CAIRN_REC_EVENT, "ns", 2, "{\"during\":1}", 12, NULL, 0};
        assert_int_equal(cairn_append(db, &e, NULL), CAIRN_OK);
    }
    pthread_mutex_lock(&h.mu);
    while (!h.synced && !h.timed_out)
        pthread_cond_wait(&h.cv, &h.mu);
    pthread_mutex_unlock(&h.mu);
    assert_false(h.timed_out);
    assert_true(h.synced);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_int_equal(cairn_open(&db, dir, &o, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_int_equal(st.records, 61);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    pthread_cond_destroy(&h.cv);
    pthread_mutex_destroy(&h.mu);
    tu_rmrf(dir);
    free(dir);
}

/* An I/O table for group commit: segment fdatasyncs take 2 ms (so groups
 * form), are counted, and the `fail_at`-th one fails with EIO. Each call
 * notes the file's size first: what an fdatasync covers. */
#define GC_THREADS 8
#define GC_PER 40
typedef struct gcio {
    cairn_io io;
    pthread_mutex_t mu;
    int syncs;
    int fail_at;        /* 0: never */
    long long good_upto; /* largest file size a successful fdatasync began with */
} gcio;

static int gc_fdatasync(void *user, const char *site, int fd)
{
    gcio *g = user;
    struct stat sb;
    struct timespec pause = {0, 2000000};
    long long size;
    int n, rc;
    if (strcmp(site, "segment.fdatasync") != 0)
        return cairn_io_default()->fdatasync(NULL, site, fd);
    size = fstat(fd, &sb) == 0 ? (long long)sb.st_size : -1;
    pthread_mutex_lock(&g->mu);
    n = ++g->syncs;
    pthread_mutex_unlock(&g->mu);
    nanosleep(&pause, NULL);
    if (g->fail_at != 0 && n >= g->fail_at) {
        errno = EIO;
        return -1;
    }
    rc = cairn_io_default()->fdatasync(NULL, site, fd);
    pthread_mutex_lock(&g->mu);
    if (rc == 0 && size > g->good_upto)
        g->good_upto = size;
    pthread_mutex_unlock(&g->mu);
    return rc;
}

typedef struct gcarg {
    cairn_db *db;
    long id;
    uint64_t acked_max; /* highest seq acknowledged to this thread */
    int acked, failed, other_error;
} gcarg;

static void *gc_writer(void *p)
{
    gcarg *t = p;
    char js[32];
    for (int i = 0; i < GC_PER; i++) {
        /* Fixed-size payloads: every record takes the same bytes. */
        int n = snprintf(js, sizeof js, "{\"w\":%02ld,\"i\":%03d}", t->id, i);
        cairn_entry e = {CAIRN_REC_EVENT, "ns", 2, js, (size_t)n, NULL, 0};
        uint64_t seq = 0;
        int rc = cairn_append(t->db, &e, &seq);
        if (rc == CAIRN_OK) {
            t->acked++;
            if (seq > t->acked_max)
                t->acked_max = seq;
        } else if (rc == CAIRN_EIO || rc == CAIRN_EDEAD) {
            t->failed++;
        } else {
            t->other_error++;
        }
    }
    return NULL;
}

/* Runs GC_THREADS writers in full mode; returns the gcio after close. */
static void gc_run(gcio *g, int fail_at, gcarg *args, long long *rec_size,
                   long long *hdr_size)
{
    char *dir = tu_mkdtemp("gc");
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX], *path;
    pthread_t th[GC_THREADS];
    cairn_db *db;
    long long s1, s2;

    memset(g, 0, sizeof *g);
    g->io = *cairn_io_default();
    g->io.fdatasync = gc_fdatasync;
    g->io.user = g;
    pthread_mutex_init(&g->mu, NULL);
    o.create = 1;
    o.durability = CAIRN_DURABILITY_FULL;
    o.io = &g->io;
    assert_non_null(dir);
    assert_int_equal(cairn_open(&db, dir, &o, err, sizeof err), CAIRN_OK);
    /* Two records measure the header and the record size. */
    path = tu_find_last(dir, ".log"); /* a full path */
    assert_non_null(path);
    for (int i = 0; i < 2; i++) {
        cairn_entry e = {CAIRN_REC_EVENT, "ns", 2, "{\"w\":99,\"i\":999}", 16, NULL, 0};
        assert_int_equal(cairn_append(db, &e, NULL), CAIRN_OK);
        if (i == 0)
            s1 = tu_file_size(path);
    }
    s2 = tu_file_size(path);
    *rec_size = s2 - s1;
    *hdr_size = s1 - *rec_size;
    assert_true(*rec_size > 16 && *hdr_size > 0);
    g->syncs = 0;
    g->fail_at = fail_at;
    for (long i = 0; i < GC_THREADS; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].db = db;
        args[i].id = i;
        assert_int_equal(pthread_create(&th[i], NULL, gc_writer, &args[i]), 0);
    }
    for (int i = 0; i < GC_THREADS; i++)
        pthread_join(th[i], NULL);
    (void)cairn_close(db);
    pthread_mutex_destroy(&g->mu);
    free(path);
    tu_rmrf(dir);
    free(dir);
}

static void group_commit_shares_one_fdatasync_among_waiting_writers(void **state)
{
    gcio g;
    gcarg args[GC_THREADS];
    long long rec, hdr;
    int acked = 0;
    (void)state;

    gc_run(&g, 0, args, &rec, &hdr);
    for (int i = 0; i < GC_THREADS; i++) {
        assert_int_equal(args[i].failed + args[i].other_error, 0);
        acked += args[i].acked;
    }
    assert_int_equal(acked, GC_THREADS * GC_PER);
    /* One fdatasync per record would be 320; groups of eight take 40. */
    assert_true(g.syncs > 0);
    assert_true(g.syncs <= GC_THREADS * GC_PER / 3);
}

static void a_failed_group_fdatasync_acknowledges_nothing_it_did_not_cover(void **state)
{
    gcio g;
    gcarg args[GC_THREADS];
    long long rec, hdr;
    int acked = 0, failed = 0;
    (void)state;

    gc_run(&g, 6, args, &rec, &hdr);
    for (int i = 0; i < GC_THREADS; i++) {
        assert_int_equal(args[i].other_error, 0);
        acked += args[i].acked;
        failed += args[i].failed;
        /* Seq 3 onwards belong to the threads (1 and 2 measured sizes):
         * seq k ends at hdr + k * rec, which a successful sync must have
         * covered before it was acknowledged. */
        if (args[i].acked > 0 && hdr + (long long)args[i].acked_max * rec > g.good_upto)
            fail_msg("thread %d: seq %llu acknowledged, ends at %lld; the last good "
                     "fdatasync began at %lld (hdr %lld, rec %lld, syncs %d)",
                     i, (unsigned long long)args[i].acked_max,
                     hdr + (long long)args[i].acked_max * rec, g.good_upto, hdr, rec, g.syncs);
    }
    assert_true(acked > 0);   /* the first five syncs went through */
    assert_true(failed > 0);  /* the sixth failed, and the handle with it */
    assert_int_equal(acked + failed, GC_THREADS * GC_PER);
}

/* ---- error details are per thread ----------------------------------------- */

typedef struct failing {
    cairn_mem *m;
    const cairn_mem_store_opts *o;
    const char *want;  /* the word this thread's detail must hold */
    int wrong;
} failing;

static void *fail_repeatedly(void *arg)
{
    failing *f = arg;
    for (int i = 0; i < 2000; i++) {
        int rc = cairn_mem_store(f->m, "text", f->o, NULL, NULL);
        if (rc != CAIRN_EINVAL || strstr(cairn_mem_errmsg(f->m), f->want) == NULL)
            f->wrong++;
    }
    return NULL;
}

/* Two threads fail on one handle with different details, as fast as they
 * can: each reads its own after its own failed call, never the other's. */
static void error_details_are_per_thread(void **state)
{
    char *dir = tu_mkdtemp("errtls"), err[CAIRN_ERRMSG_MAX];
    cairn_mem_store_opts bad_cat = CAIRN_MEM_STORE_OPTS_INIT, bad_imp = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_db *db;
    cairn_mem *m;
    failing f[2];
    pthread_t t[2];
    (void)state;
    assert_int_equal(tu_open_small(dir, 0, &db, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_mem_open(db, NULL, &m), CAIRN_OK);
    bad_cat.category = "";
    bad_imp.importance = 2.0;
    f[0] = (failing){m, &bad_cat, "category", 0};
    f[1] = (failing){m, &bad_imp, "importance", 0};
    assert_int_equal(cairn_mem_store(m, "text", &bad_cat, NULL, NULL), CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(m), "category")); /* the premise */
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, fail_repeatedly, &f[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(f[0].wrong, 0);
    assert_int_equal(f[1].wrong, 0);
    /* this thread's own detail is still its own */
    assert_non_null(strstr(cairn_mem_errmsg(m), "category"));
    {
        /* a call with no handle: its detail in cairn_errmsg(NULL) too */
        cairn_options o = CAIRN_OPTIONS_INIT;
        cairn_db *none = NULL;
        char *missing = tu_join(dir, "no-such-store"), buf[CAIRN_ERRMSG_MAX] = "";
        assert_int_equal(cairn_open(&none, missing, &o, buf, sizeof buf), CAIRN_ENOTFOUND);
        assert_true(buf[0] != 0);
        assert_string_equal(cairn_errmsg(NULL), buf);
        {
            /* it stays while other handles are used, opened and closed */
            cairn_mem *m2 = NULL;
            (void)cairn_errmsg(db);
            assert_int_equal(cairn_mem_open(db, NULL, &m2), CAIRN_OK);
            (void)cairn_mem_errmsg(m2);
            cairn_mem_close(m2);
            assert_string_equal(cairn_errmsg(NULL), buf);
        }
        free(missing);
    }
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    tu_rmrf(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(threads_share_a_handle_in_none_mode),
        cmocka_unit_test(error_details_are_per_thread),
        cmocka_unit_test(threads_share_a_handle_in_batch_mode),
        cmocka_unit_test(group_commit_acknowledges_every_writer_in_full_mode),
        cmocka_unit_test(batch_sync_goes_on_while_a_segment_is_sealed),
        cmocka_unit_test(group_commit_shares_one_fdatasync_among_waiting_writers),
        cmocka_unit_test(a_failed_group_fdatasync_acknowledges_nothing_it_did_not_cover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
