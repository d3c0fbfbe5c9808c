/*
 * test_procs.c - many processes on one store, through the memory engine.
 *
 *  - 20 processes store a memory each at the same moment, each with its own
 *    handle: every store succeeds (writers wait for their turn), and every
 *    memory is found afterwards, by a handle that was open all along (it
 *    catches up at its next call) and by a fresh one.
 *  - A reader process recalls while 4 writer processes store: it never sees
 *    the number of memories go down, never loses a memory it saw, and in
 *    the end sees them all.
 *  - Writer processes killed with SIGKILL at random moments, in the middle
 *    of their turns or between them: the next writer gets the lock, and no
 *    memory whose store was acknowledged (sent to the parent after
 *    cairn_mem_store returned) is missing.
 *
 * Children are forked before this process starts any thread, report
 * through pipes, never call cmocka and leave with _exit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cairn.h"
#include "memstate.h" /* cairn__mem_set_flush_rows */

#define FLUSH_ROWS 4096
#include "testutil.h"

/* A writer or reader handle; background threads off (children fork). */
static int open_db(const char *dir, int read_only, cairn_durability dur, cairn_db **db,
                   cairn_mem **mem)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    int rc;
    o.create = !read_only;
    o.read_only = read_only;
    o.background = 0;
    o.durability = dur;
    o.busy_timeout_ms = 20000; /* a loaded CI machine: turns may queue */
    *mem = NULL;
    rc = cairn_open(db, dir, &o, NULL, 0);
    if (rc == CAIRN_OK && (rc = cairn_mem_open(*db, NULL, mem)) != CAIRN_OK) {
        cairn_close(*db);
        *db = NULL;
    }
    return rc;
}

/* A `full` writer, with or without the background thread. */
static int open_db_bg(const char *dir, int background, cairn_db **db, cairn_mem **mem)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    int rc;
    o.create = 1;
    o.background = background;
    o.durability = CAIRN_DURABILITY_FULL;
    o.busy_timeout_ms = 20000;
    *mem = NULL;
    rc = cairn_open(db, dir, &o, NULL, 0);
    if (rc == CAIRN_OK && (rc = cairn_mem_open(*db, NULL, mem)) != CAIRN_OK) {
        cairn_close(*db);
        *db = NULL;
    }
    return rc;
}

static void close_db(cairn_db *db, cairn_mem *mem)
{
    cairn_mem_close(mem);
    cairn_close(db);
}

static int setup(void **state)
{
    *state = tu_mkdtemp("procs");
    return *state != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    tu_rmrf(*state);
    free(*state);
    return 0;
}

static int has(cairn_mem *mem, const char *id)
{
    cairn_memory *g = NULL;
    int rc = cairn_mem_get(mem, id, &g);
    cairn_mem_free(g);
    return rc == CAIRN_OK;
}

typedef struct stored {
    int rc;
    char id[CAIRN_MEM_ID_MAX + 1];
    char err[160];
} stored;

static void test_twenty_processes_store_at_once_and_all_are_found(void **state)
{
    char *dir = *state;
    enum { N = 20 };
    pid_t pids[N];
    int fds[N][2];
    stored got[N];
    cairn_db *db;
    cairn_mem *mem;
    cairn_mem_stats ms;

    assert_int_equal(open_db(dir, 0, CAIRN_DURABILITY_BATCH, &db, &mem), CAIRN_OK);
    for (int i = 0; i < N; i++) {
        assert_int_equal(pipe(fds[i]), 0);
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            cairn_db *cdb;
            cairn_mem *cm;
            cairn_memory *out = NULL;
            stored s;
            char text[80];
            memset(&s, 0, sizeof s);
            snprintf(text, sizeof text, "process %d remembers the deploy window", i);
            s.rc = open_db(dir, 0, CAIRN_DURABILITY_BATCH, &cdb, &cm);
            if (s.rc == CAIRN_OK) {
                s.rc = cairn_mem_store(cm, text, NULL, &out, NULL);
                if (s.rc == CAIRN_OK)
                    snprintf(s.id, sizeof s.id, "%s", out->id);
                else
                    snprintf(s.err, sizeof s.err, "%s", cairn_mem_errmsg(cm));
                cairn_mem_free(out);
                close_db(cdb, cm);
            }
            if (write(fds[i][1], &s, sizeof s) != (ssize_t)sizeof s)
                _exit(2);
            _exit(0);
        }
        close(fds[i][1]);
    }
    for (int i = 0; i < N; i++) {
        ssize_t n = read(fds[i][0], &got[i], sizeof got[i]);
        close(fds[i][0]);
        assert_int_equal(tu_wait_child(pids[i], 60000), 0);
        assert_int_equal(n, (ssize_t)sizeof got[i]);
        if (got[i].rc != CAIRN_OK)
            fail_msg("process %d: %s: %s", i, cairn_strerror(got[i].rc), got[i].err);
    }
    /* The handle open all along sees them at its next call. */
    for (int i = 0; i < N; i++)
        if (!has(mem, got[i].id))
            fail_msg("memory %s of process %d is not found by the open handle", got[i].id, i);
    assert_int_equal(cairn_mem_stats_get(mem, &ms), CAIRN_OK);
    assert_int_equal(ms.total, N);
    cairn_mem_stats_free(&ms);
    {
        /* Their texts waited for a read of the index; one more stored by
         * this handle after them, and a recall finds all in order. */
        cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
        cairn_recall_hit *h = NULL;
        size_t n = 0;
        assert_int_equal(cairn_mem_store(mem, "the parent remembers the deploy window too", NULL,
                                         NULL, NULL),
                         CAIRN_OK);
        ro.k = 100;
        assert_int_equal(cairn_mem_recall(mem, "deploy window", &ro, &h, &n), CAIRN_OK);
        assert_int_equal(n, N + 1);
        cairn_recall_free(h, n);
    }
    close_db(db, mem);
    assert_int_equal(open_db(dir, 1, CAIRN_DURABILITY_STORED, &db, &mem), CAIRN_OK);
    for (int i = 0; i < N; i++)
        assert_true(has(mem, got[i].id));
    close_db(db, mem);
}

/* The reader: recall everything again and again; what it saw must stay.
 * Reports (scans, final count) or a failure. */
static void reader_main(const char *dir, long long want, int rep)
{
    cairn_db *db;
    cairn_mem *mem;
    long long scans = 0, last = 0, until = tu_now_ms() + 60000;
    char **seen = NULL;
    size_t nseen = 0;
    long long res[3] = {0, 0, 0};

    if (open_db(dir, 1, CAIRN_DURABILITY_STORED, &db, &mem) != CAIRN_OK)
        _exit(3);
    while (tu_now_ms() < until) {
        cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
        cairn_recall_hit *h = NULL;
        size_t n = 0;
        cairn_mem_stats ms;
        long long total;
        ro.k = 1000;
        if (cairn_mem_recall(mem, "ledger entry", &ro, &h, &n) != CAIRN_OK ||
            cairn_mem_stats_get(mem, &ms) != CAIRN_OK)
            _exit(4);
        scans++;
        total = (long long)ms.total;
        cairn_mem_stats_free(&ms);
        if (total < last) {
            res[0] = -1;
            res[1] = last;
            res[2] = total;
            break;
        }
        last = total;
        for (size_t i = 0; i < n; i++) {
            size_t j;
            for (j = 0; j < nseen && strcmp(seen[j], h[i].mem.id) != 0; j++)
                ;
            if (j == nseen) {
                seen = realloc(seen, (nseen + 1) * sizeof *seen);
                seen[nseen++] = strdup(h[i].mem.id);
            }
        }
        cairn_recall_free(h, n);
        for (size_t j = 0; j < nseen; j++)
            if (!has(mem, seen[j])) {
                res[0] = -2;
                break;
            }
        if (res[0] < 0 || (last >= want && (long long)nseen >= want))
            break;
    }
    if (res[0] == 0) {
        res[0] = scans;
        res[1] = last;
        res[2] = (long long)nseen;
    }
    close_db(db, mem);
    if (write(rep, res, sizeof res) != (ssize_t)sizeof res)
        _exit(2);
    _exit(0);
}

static void test_a_reader_process_never_sees_a_memory_disappear_while_writers_store(
    void **state)
{
    char *dir = *state;
    enum { W = 4, EACH = 40 };
    pid_t wp[W], rp;
    int r[2];
    long long res[3];
    cairn_db *db;
    cairn_mem *mem;

    assert_int_equal(open_db(dir, 0, CAIRN_DURABILITY_NONE, &db, &mem), CAIRN_OK);
    close_db(db, mem);
    assert_int_equal(pipe(r), 0);
    rp = fork();
    assert_true(rp >= 0);
    if (rp == 0) {
        close(r[0]);
        reader_main(dir, W * EACH, r[1]);
    }
    close(r[1]);
    for (int w = 0; w < W; w++) {
        wp[w] = fork();
        assert_true(wp[w] >= 0);
        if (wp[w] == 0) {
            cairn_db *cdb;
            cairn_mem *cm;
            if (open_db(dir, 0, CAIRN_DURABILITY_NONE, &cdb, &cm) != CAIRN_OK)
                _exit(3);
            for (int i = 0; i < EACH; i++) {
                char text[80];
                snprintf(text, sizeof text, "ledger entry %d of writer %d", i, w);
                if (cairn_mem_store(cm, text, NULL, NULL, NULL) != CAIRN_OK)
                    _exit(4);
            }
            close_db(cdb, cm);
            _exit(0);
        }
    }
    for (int w = 0; w < W; w++)
        assert_int_equal(tu_wait_child(wp[w], 60000), 0);
    assert_int_equal(read(r[0], res, sizeof res), (ssize_t)sizeof res);
    close(r[0]);
    assert_int_equal(tu_wait_child(rp, 60000), 0);
    if (res[0] == -1)
        fail_msg("the reader saw %lld memories, then %lld", res[1], res[2]);
    if (res[0] == -2)
        fail_msg("a memory the reader had recalled was no longer there");
    assert_int_equal(res[1], W * EACH);
    assert_int_equal(res[2], W * EACH);
}

/* Writers storing in a loop, each acknowledged store sent to the parent;
 * killed at random moments, several times. */
static void test_writers_killed_in_their_turns_lose_no_acknowledged_memory(void **state)
{
    char *dir = *state;
    enum { ROUNDS = 6, W = 3, MAXACK = 4000 };
    static char acked[MAXACK][CAIRN_MEM_ID_MAX + 1];
    size_t nacked = 0;
    cairn_db *db;
    cairn_mem *mem;

    srand(12345);
    assert_int_equal(open_db(dir, 0, CAIRN_DURABILITY_FULL, &db, &mem), CAIRN_OK);
    close_db(db, mem);
    for (int round = 0; round < ROUNDS; round++) {
        pid_t wp[W];
        int fds[W][2];
        for (int w = 0; w < W; w++) {
            assert_int_equal(pipe(fds[w]), 0);
            wp[w] = fork();
            assert_true(wp[w] >= 0);
            if (wp[w] == 0) {
                cairn_db *cdb;
                cairn_mem *cm;
                close(fds[w][0]);
                /* Writer 0 has the background thread: killed, often while
                 * its lock lingers between turns. */
                if (open_db_bg(dir, w == 0, &cdb, &cm) != CAIRN_OK)
                    _exit(3);
                for (int i = 0;; i++) {
                    char text[96];
                    cairn_memory *out = NULL;
                    char id[CAIRN_MEM_ID_MAX + 1];
                    snprintf(text, sizeof text, "round %d writer %d note %d", round, w, i);
                    if (cairn_mem_store(cm, text, NULL, &out, NULL) != CAIRN_OK)
                        _exit(4);
                    memset(id, 0, sizeof id);
                    snprintf(id, sizeof id, "%s", out->id);
                    cairn_mem_free(out);
                    if (write(fds[w][1], id, sizeof id) != (ssize_t)sizeof id)
                        _exit(5);
                }
            }
            close(fds[w][1]);
        }
        tu_sleep_ms(50 + rand() % 150);
        for (int w = 0; w < W; w++) {
            kill(wp[w], SIGKILL);
            assert_int_equal(tu_wait_child(wp[w], 10000), -1); /* killed, not failed */
        }
        for (int w = 0; w < W; w++) {
            char id[CAIRN_MEM_ID_MAX + 1];
            while (read(fds[w][0], id, sizeof id) == (ssize_t)sizeof id)
                if (nacked < MAXACK)
                    memcpy(acked[nacked++], id, sizeof id);
            close(fds[w][0]);
        }
        /* The next writer gets in at once, and every acknowledged memory
         * is there; the log verifies. */
        {
            long long t0 = tu_now_ms();
            uint64_t problems = 99;
            assert_int_equal(open_db(dir, 0, CAIRN_DURABILITY_FULL, &db, &mem), CAIRN_OK);
            if (tu_now_ms() - t0 > 2000)
                fail_msg("round %d: the next writer waited %lld ms for the lock", round,
                         tu_now_ms() - t0);
            for (size_t i = 0; i < nacked; i++)
                if (!has(mem, acked[i]))
                    fail_msg("round %d: acknowledged memory %s is missing", round, acked[i]);
            assert_int_equal(cairn_verify(db, NULL, NULL, &problems), CAIRN_OK);
            assert_int_equal(problems, 0);
            close_db(db, mem);
        }
    }
    assert_true(nacked > 0);
}

/* A reflexion handle open for the whole test sees a node another process
 * added, at its next call, without reopening; and its own add after that
 * is deduplicated against it. */
static void test_a_long_lived_reflexion_handle_sees_another_process_s_node(void **state)
{
    char *dir = *state;
    cairn_db *db;
    cairn_mem *mem;
    cairn_reflex *r = NULL;
    char id[CAIRN_NODE_ID_MAX + 1];
    cairn_causal_node node;
    pid_t pid;

    assert_int_equal(open_db(dir, 0, CAIRN_DURABILITY_NONE, &db, &mem), CAIRN_OK);
    assert_int_equal(cairn_reflex_open(db, &r), CAIRN_OK);
    assert_int_equal(cairn_causal_node_id(r, "ran the migration", id), CAIRN_OK);
    memset(&node, 0, sizeof node);
    assert_int_equal(cairn_causal_get_node(r, id, &node), CAIRN_ENOTFOUND);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cairn_db *cdb;
        cairn_mem *cm;
        cairn_reflex *cr = NULL;
        if (open_db(dir, 0, CAIRN_DURABILITY_NONE, &cdb, &cm) != CAIRN_OK ||
            cairn_reflex_open(cdb, &cr) != CAIRN_OK ||
            cairn_causal_add_node(cr, CAIRN_NODE_EVENT, "ran the migration", NULL, NULL) !=
                CAIRN_OK)
            _exit(3);
        cairn_reflex_close(cr);
        close_db(cdb, cm);
        _exit(0);
    }
    assert_int_equal(tu_wait_child(pid, 30000), 0);
    assert_int_equal(cairn_causal_get_node(r, id, &node), CAIRN_OK); /* caught up */
    assert_int_equal(node.frequency, 1);
    cairn_causal_node_clear(&node);
    assert_int_equal(cairn_causal_add_node(r, CAIRN_NODE_EVENT, "ran the migration", NULL, &node),
                     CAIRN_OK);
    assert_string_equal(node.id, id); /* the same node, seen again */
    assert_int_equal(node.frequency, 2);
    cairn_causal_node_clear(&node);
    cairn_reflex_close(r);
    close_db(db, mem);
}

/* Memory index files of at least a tenth of the biggest one's size. */
static int big_index_files(const char *dir)
{
    long long biggest = 0, sz[64];
    int n = 0, big = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    if (d == NULL)
        return -1;
    while ((de = readdir(d)) != NULL && n < 64) {
        char *path;
        if (strncmp(de->d_name, "mem-", 4) != 0)
            continue;
        path = tu_join(dir, de->d_name);
        sz[n] = tu_file_size(path);
        if (sz[n] > biggest)
            biggest = sz[n];
        n++;
        free(path);
    }
    closedir(d);
    for (int i = 0; i < n; i++)
        big += biggest > 0 && sz[i] * 10 >= biggest;
    return big;
}

/* Of two writers that hold the same memories, the first to flush writes
 * them into a memory index file; the second takes that file rather than
 * writing the same memories again (the flush of a long ingest, at 65,536
 * memories in RAM). */
static void test_a_second_writer_takes_the_first_writers_flush(void **state)
{
    const char *dir = *state;
    cairn_db *a = NULL, *b = NULL;
    cairn_mem *ma = NULL, *mb = NULL;
    char text[64];
    assert_int_equal(open_db(dir, 0, CAIRN_DURABILITY_NONE, &a, &ma), CAIRN_OK);
    assert_int_equal(open_db(dir, 0, CAIRN_DURABILITY_NONE, &b, &mb), CAIRN_OK);
    assert_int_equal(cairn_config_set_max_memories(a, 0), CAIRN_OK);
    /* the flush of 65,536 memories, in 4,096 (cairn__mem_set_flush_rows) */
    cairn__mem_set_flush_rows(ma, FLUSH_ROWS);
    cairn__mem_set_flush_rows(mb, FLUSH_ROWS);
    for (int i = 0; i < FLUSH_ROWS + 100; i++) { /* a flushes once, at FLUSH_ROWS */
        snprintf(text, sizeof text, "memory %d of the first writer", i);
        assert_int_equal(cairn_mem_store(ma, text, NULL, NULL, NULL), CAIRN_OK);
    }
    /* b's turn takes all of them (as keys, or folded: then its flush is
     * due, and a's file is there) */
    assert_int_equal(cairn_mem_store(mb, "one memory of the second writer", NULL, NULL, NULL), CAIRN_OK);
    assert_int_equal(big_index_files(dir), 1);
    close_db(b, mb); /* nor does its close write them again */
    assert_int_equal(big_index_files(dir), 1);
    close_db(a, ma);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_second_writer_takes_the_first_writers_flush, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_twenty_processes_store_at_once_and_all_are_found,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_reader_process_never_sees_a_memory_disappear_while_writers_store, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_writers_killed_in_their_turns_lose_no_acknowledged_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_long_lived_reflexion_handle_sees_another_process_s_node, setup, teardown),
    };
    return cmocka_run_group_tests_name("procs", tests, NULL, NULL);
}
