/*
 * test_follow.c - cairn_follow_* (engine/log/follow.c): a follower hands
 * out every record a writer in another process commits, exactly once and
 * in order, across segment rolls and sealing; it waits without records
 * for as long as it is told and no longer; it ends at the range's seq_to.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cairn.h"
#include "testutil.h"

#define N_RECORDS 600 /* 4 KiB segments: many rolls and seals meanwhile */

typedef struct fx {
    char *root, *dir;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    cairn_db *db;
    char err[CAIRN_ERRMSG_MAX];
    if (f == NULL || (f->root = tu_mkdtemp("follow")) == NULL)
        return -1;
    f->dir = tu_join(f->root, "store");
    if (tu_open_small(f->dir, 0, &db, err, sizeof err) != CAIRN_OK || cairn_close(db) != CAIRN_OK)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    tu_rmrf(f->root);
    free(f->root);
    free(f->dir);
    free(f);
    return 0;
}

/* The child: append records "{\"n\":i}" one by one, some in bursts, some
 * after a pause, flushing each (durability none: visible once written). */
static void write_records(const char *dir, int from, int to)
{
    cairn_db *db;
    char err[CAIRN_ERRMSG_MAX], buf[32];
    if (tu_open_small(dir, 0, &db, err, sizeof err) != CAIRN_OK)
        _exit(2);
    for (int i = from; i < to; i++) {
        cairn_entry e = {CAIRN_REC_EVENT, "w", 1, buf, 0, NULL, 0};
        e.json_len = (size_t)snprintf(buf, sizeof buf, "{\"n\":%d}", i);
        if (cairn_append(db, &e, NULL) != CAIRN_OK || cairn_flush(db) != CAIRN_OK)
            _exit(3);
        if (i % 100 == 99)
            tu_sleep_ms(20); /* the follower waits in between */
    }
    _exit(cairn_close(db) == CAIRN_OK ? 0 : 4);
}

static void every_record_of_another_process_exactly_once(void **state)
{
    fx *f = *state;
    cairn_options ro = CAIRN_OPTIONS_INIT;
    cairn_follow *fo;
    cairn_record rec;
    cairn_db *db;
    char err[CAIRN_ERRMSG_MAX], want[32];
    uint64_t last = 0;
    int got = 0, pid, rc;
    long long t0 = tu_now_ms();

    /* records before the follower opens, then more while it follows */
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        write_records(f->dir, 0, 50);
    assert_int_equal(tu_wait_child(pid, 20000), 0);
    ro.read_only = 1;
    assert_int_equal(cairn_open(&db, f->dir, &ro, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_follow_open(db, NULL, &fo), CAIRN_OK);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        write_records(f->dir, 50, N_RECORDS);
    while (got < N_RECORDS && tu_now_ms() - t0 < 30000) {
        rc = cairn_follow_next(fo, &rec, 1000);
        if (rc == CAIRN_ENOTFOUND)
            continue;
        assert_int_equal(rc, CAIRN_OK);
        assert_true(rec.seq > last); /* in order, never twice */
        last = rec.seq;
        snprintf(want, sizeof want, "{\"n\":%d}", got);
        assert_int_equal(rec.json_len, strlen(want));
        assert_memory_equal(rec.json, want, rec.json_len);
        got++;
    }
    assert_int_equal(got, N_RECORDS);
    assert_int_equal(tu_wait_child(pid, 20000), 0);
    /* nothing more: a wait of 0 answers at once, one of 150 ms after it */
    assert_int_equal(cairn_follow_next(fo, &rec, 0), CAIRN_ENOTFOUND);
    t0 = tu_now_ms();
    assert_int_equal(cairn_follow_next(fo, &rec, 150), CAIRN_ENOTFOUND);
    assert_true(tu_now_ms() - t0 >= 100);
    assert_true(tu_now_ms() - t0 < 5000);
    cairn_follow_close(fo);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void a_range_ends_at_its_last_seq(void **state)
{
    fx *f = *state;
    cairn_range r = CAIRN_RANGE_INIT;
    cairn_follow *fo;
    cairn_record rec;
    cairn_db *db;
    char err[CAIRN_ERRMSG_MAX];
    int pid, n = 0;
    long long t0;

    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        write_records(f->dir, 0, 10);
    assert_int_equal(tu_wait_child(pid, 20000), 0);
    assert_int_equal(tu_open_small(f->dir, 0, &db, err, sizeof err), CAIRN_OK);
    r.seq_from = 3;
    r.seq_to = 5;
    assert_int_equal(cairn_follow_open(db, &r, &fo), CAIRN_OK);
    while (cairn_follow_next(fo, &rec, 0) == CAIRN_OK) {
        assert_int_equal(rec.seq, 3 + (uint64_t)n);
        n++;
    }
    assert_int_equal(n, 3);
    t0 = tu_now_ms(); /* past seq_to: no wait, whatever the timeout */
    assert_int_equal(cairn_follow_next(fo, &rec, -1), CAIRN_ENOTFOUND);
    assert_true(tu_now_ms() - t0 < 1000);
    cairn_follow_close(fo);
    r.version = 0;
    assert_int_equal(cairn_follow_open(db, &r, &fo), CAIRN_EINVAL);
    assert_null(fo);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* A compaction that drops records the follower has not reached: their hole
 * is handed out once, then the records after it; never a seq twice or
 * going back. */
static void a_compaction_hole_is_handed_out_once(void **state)
{
    fx *f = *state;
    char *dir = tu_join(f->root, "holes"), err[CAIRN_ERRMSG_MAX], buf[32];
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_compact_report rep;
    cairn_follow *fo;
    cairn_record rec;
    cairn_db *db;
    cairn_mem *m;
    uint64_t last = 0;
    int holes = 0, after = 0;

    o.create = 1;
    o.background = 0;
    o.durability = CAIRN_DURABILITY_NONE;
    o.retain = "events:1ms";
    assert_int_equal(cairn_open(&db, dir, &o, err, sizeof err), CAIRN_OK);
    for (int i = 0; i < 10; i++) {
        cairn_entry e = {CAIRN_REC_EVENT, "", 0, buf, 0, NULL, 0};
        e.json_len = (size_t)snprintf(buf, sizeof buf, "{\"n\":%d}", i);
        assert_int_equal(cairn_append(db, &e, NULL), CAIRN_OK);
    }
    assert_int_equal(cairn_follow_open(db, NULL, &fo), CAIRN_OK);
    for (int i = 0; i < 3; i++) { /* read 1..3, then the rest is compacted away */
        assert_int_equal(cairn_follow_next(fo, &rec, 0), CAIRN_OK);
        last = rec.seq;
    }
    cairn_follow_close(fo); /* a new follower from seq 4, as dump --from-seq 4 */
    {
        cairn_range r = CAIRN_RANGE_INIT;
        r.seq_from = last + 1;
        assert_int_equal(cairn_follow_open(db, &r, &fo), CAIRN_OK);
    }
    tu_sleep_ms(5);
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    assert_int_equal(cairn_mem_open(db, NULL, &m), CAIRN_OK);
    assert_int_equal(cairn_mem_compact(m, 0, &rep), CAIRN_OK);
    assert_true(rep.events_dropped > 0);
    {
        cairn_entry e = {CAIRN_REC_EVENT, "", 0, "{\"late\":1}", 10, NULL, 0};
        assert_int_equal(cairn_append(db, &e, NULL), CAIRN_OK);
    }
    while (cairn_follow_next(fo, &rec, 0) == CAIRN_OK) {
        uint64_t end = rec.seq;
        if (rec.type == CAIRN_REC_COMPACTED) { /* it stands for seq..upto */
            cJSON *h = cJSON_ParseWithLength(rec.json, rec.json_len);
            end = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(h, "upto"));
            cJSON_Delete(h);
            holes++;
        } else {
            assert_true(rec.seq > last);
            after++;
        }
        assert_true(end > last); /* something not seen yet: never twice, never back */
        last = end;
    }
    assert_true(holes >= 1);
    assert_int_equal(after, 1); /* the late record, once */
    assert_int_equal(cairn_follow_next(fo, &rec, 0), CAIRN_ENOTFOUND);
    cairn_follow_close(fo);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    free(dir);
}

/* The store's directory moved away: an error, not a silent wait. */
static void a_moved_store_ends_the_follower(void **state)
{
    fx *f = *state;
    char *moved = tu_join(f->root, "moved"), err[CAIRN_ERRMSG_MAX];
    cairn_options ro = CAIRN_OPTIONS_INIT;
    cairn_follow *fo;
    cairn_record rec;
    cairn_db *db;
    int rc;

    ro.read_only = 1;
    assert_int_equal(cairn_open(&db, f->dir, &ro, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_follow_open(db, NULL, &fo), CAIRN_OK);
    if (cairn_follow_fd(fo) < 0) { /* no inotify here: nothing to check */
        cairn_follow_close(fo);
        cairn_close(db);
        free(moved);
        skip();
    }
    assert_int_equal(cairn_follow_next(fo, &rec, 0), CAIRN_ENOTFOUND);
    assert_int_equal(rename(f->dir, moved), 0);
    rc = cairn_follow_next(fo, &rec, 2000);
    assert_int_equal(rc, CAIRN_EIO);
    assert_non_null(strstr(cairn_errmsg(db), "moved away or removed"));
    cairn_follow_close(fo);
    cairn_close(db);
    assert_int_equal(rename(moved, f->dir), 0);
    free(moved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(every_record_of_another_process_exactly_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_range_ends_at_its_last_seq, setup, teardown),
        cmocka_unit_test_setup_teardown(a_compaction_hole_is_handed_out_once, setup, teardown),
        cmocka_unit_test_setup_teardown(a_moved_store_ends_the_follower, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
