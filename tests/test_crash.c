/*
 * test_crash.c - kill -9 at random moments, then recovery.
 *
 * A child process opens the store as the writer in `full` durability with
 * 64 KiB segments (so rolls happen and the background thread seals while
 * the kills land) and appends records in a loop, singly or in batches,
 * writing each acknowledged sequence number to a pipe once cairn_append /
 * cairn_append_batch has returned CAIRN_OK. The parent kills it with
 * SIGKILL at a random moment (fixed seed), then reopens the store as the
 * writer, which recovers, and checks:
 *  - records are exactly 1..m, in order, each with the payload its sequence
 *    number determines (payloads encode their own seq and vary in size,
 *    some over half a segment);
 *  - every acknowledged seq is within 1..m, and m never shrinks from one
 *    round to the next (a record that was read back once is durable);
 *  - cairn_verify reports no problem, through the writer and then through a
 *    read-only handle (no writer live: a torn tail left behind would count);
 *    cairn_close returns CAIRN_OK.
 * The next round appends to the same store, so every round recovers what
 * the previous recoveries left.
 *
 * Two suites: kills 0-20 ms after the child starts acknowledging; and pairs
 * of a late kill followed, without a check in between, by a kill 0-30 ms
 * after the next child starts, which lands in its open (recovery: orphans of
 * an interrupted roll or seal, a torn tail when a kill tore a write) or in
 * its background sealing of the segments the first child left closed. 190
 * kills in all (each check verifies the whole store, hash chain included). (A torn tail is rare here: a kill mostly lands in an
 * fdatasync, not inside a write; test_recovery cuts tails at every byte.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cairn.h"
#include "testutil.h"

#define SEG_SIZE (64u * 1024u)
#define BATCH_MAX 6
#define PAYLOAD_MAX (60u * 1024u)
#define MARK_ERR UINT64_MAX /* a child's "I failed" in the ack stream */
#define CHILD_MAX_RECORDS 64u /* appends per child, at most */

/* ------------------------------------------------------------------------
 * Helpers.
 * ---------------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void sleep_us(long us)
{
    struct timespec t = {us / 1000000, (us % 1000000) * 1000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

/* The record with sequence number seq: its JSON names seq; its size is
 * mostly under 1.5 KiB, one in twelve is 12-40 KiB; every fifth carries an
 * 8-byte trailer. */
typedef struct payload_buf {
    char json[PAYLOAD_MAX];
    uint8_t bin[8];
    cairn_entry e;
} payload_buf;

static void make_payload(uint64_t seq, payload_buf *b)
{
    uint64_t h = mix(seq);
    size_t pad = h % 12 == 0 ? 12000 + (size_t)(h >> 8) % 28000 : (size_t)(h >> 8) % 1500;
    size_t n = (size_t)snprintf(b->json, sizeof b->json, "{\"i\":%llu,\"pad\":\"",
                                (unsigned long long)seq);
    for (size_t i = 0; i < pad; i++)
        b->json[n++] = (char)('a' + (seq + i) % 26);
    n += (size_t)snprintf(b->json + n, sizeof b->json - n, "\"}");
    for (int i = 0; i < 8; i++)
        b->bin[i] = (uint8_t)(seq >> (8 * i));
    b->e.type = CAIRN_REC_EVENT;
    b->e.ns = "crash";
    b->e.ns_len = 5;
    b->e.json = b->json;
    b->e.json_len = n;
    b->e.bin = seq % 5 == 0 ? b->bin : NULL;
    b->e.bin_len = seq % 5 == 0 ? 8 : 0;
}

static int payload_matches(const cairn_record *r, payload_buf *b)
{
    make_payload(r->seq, b);
    return r->type == b->e.type && r->ns_len == b->e.ns_len &&
           memcmp(r->ns, b->e.ns, b->e.ns_len) == 0 && r->json_len == b->e.json_len &&
           memcmp(r->json, b->e.json, b->e.json_len) == 0 && r->bin_len == b->e.bin_len &&
           (r->bin_len == 0 || memcmp(r->bin, b->e.bin, r->bin_len) == 0);
}

static void send_seqs(int fd, const uint64_t *seqs, size_t n)
{
    /* At most 48 bytes: one atomic pipe write. */
    if (write(fd, seqs, n * sizeof *seqs) != (ssize_t)(n * sizeof *seqs))
        _exit(4);
}

/* ------------------------------------------------------------------------
 * The child: append until killed.
 * ---------------------------------------------------------------------- */

static void child_main(const char *dir, int wfd, int batch, uint64_t seed)
{
    static payload_buf bufs[BATCH_MAX];
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    cairn_stats st;
    cairn_entry es[BATCH_MAX];
    uint64_t next, seqs[BATCH_MAX], mark = MARK_ERR;
    long long until = now_ms() + 30000;
    char err[CAIRN_ERRMSG_MAX];

    o.create = 1;
    o.durability = CAIRN_DURABILITY_FULL;
    o.segment_size = SEG_SIZE;
    o.background = 1;
    if (cairn_open(&db, dir, &o, err, sizeof err) != CAIRN_OK) {
        send_seqs(wfd, &mark, 1);
        _exit(2);
    }
    if (cairn_stats_get(db, &st) != CAIRN_OK) {
        send_seqs(wfd, &mark, 1);
        _exit(2);
    }
    next = st.last_seq + 1;
    /* The parent kills us long before the deadline. The cap keeps the store
     * (which every check reads whole) small on a disk with fast fsyncs. */
    while (now_ms() < until && next - st.last_seq <= CHILD_MAX_RECORDS) {
        size_t n = batch ? 1 + (size_t)(rng_next(&seed) % BATCH_MAX) : 1;
        uint64_t first = 0;
        int rc;
        for (size_t i = 0; i < n; i++) {
            make_payload(next + i, &bufs[i]);
            es[i] = bufs[i].e;
        }
        rc = n > 1 || batch ? cairn_append_batch(db, es, n, &first)
                            : cairn_append(db, &es[0], &first);
        if (rc != CAIRN_OK || first != next) {
            send_seqs(wfd, &mark, 1);
            _exit(3);
        }
        for (size_t i = 0; i < n; i++)
            seqs[i] = next + i;
        send_seqs(wfd, seqs, n);
        next += n;
    }
    while (now_ms() < until)
        sleep_us(1000);
    cairn_close(db);
    _exit(0);
}

/* ------------------------------------------------------------------------
 * The parent.
 * ---------------------------------------------------------------------- */

typedef struct crash_state {
    char *dir;
    uint64_t rng;
    uint64_t m;          /* records found by the last check */
    uint64_t max_acked;  /* highest acknowledged seq so far */
    uint64_t acks;       /* acknowledgements received */
    unsigned kills;
    unsigned extra;      /* checks that found records beyond the last ack */
    unsigned rolled;     /* rounds during which the segment count changed */
    uint64_t segs;       /* segments at the last check */
    int checked;         /* check_round ran since the last kill */
    unsigned unsealed;   /* checks that found closed segments the child had not sealed */
    unsigned tmp_left;   /* checks that found a half-written sealed file (*.seg.tmp) */
    unsigned torn;       /* recoveries that truncated a torn tail */
} crash_state;

static uint64_t segments(cairn_db *db)
{
    cairn_stats st;
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    return st.segments_active + st.segments_closed + st.segments_sealed;
}

/*
 * One kill: fork a child appending (batch or single); if wait_ack, wait for
 * its first acknowledgement and then 0-20 ms, else 0-30 ms after the fork;
 * SIGKILL; collect the acknowledgements it sent.
 */
static void kill_round(crash_state *cs, int batch, int wait_ack)
{
    int fds[2], st;
    pid_t pid;
    uint64_t seed = rng_next(&cs->rng);
    /* After a check the child continues at m + 1 exactly; after an unchecked
     * kill, records past the last acknowledgement may have survived. */
    uint64_t expect = cs->checked ? cs->m + 1 : cs->max_acked + 1;
    int exact = cs->checked;
    uint64_t v;
    size_t got = 0;
    long delay_us;

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        child_main(cs->dir, fds[1], batch, seed);
    }
    close(fds[1]);
    if (wait_ack) {
        struct pollfd p = {fds[0], POLLIN, 0};
        if (poll(&p, 1, 10000) <= 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            fail_msg("kill %u: the child acknowledged nothing within 10 s", cs->kills);
        }
        delay_us = (long)(rng_next(&cs->rng) % 20001);
    } else {
        delay_us = (long)(rng_next(&cs->rng) % 30001);
    }
    sleep_us(delay_us);
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    cs->kills++;
    if (!WIFSIGNALED(st))
        fail_msg("kill %u: the child exited with %d before the kill (an append failed?)",
                 cs->kills, WIFEXITED(st) ? WEXITSTATUS(st) : -1);

    /* The acknowledgements: consecutive, continuing where the store ended. */
    for (;;) {
        ssize_t n = read(fds[0], (char *)&v + got, sizeof v - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        if (got < sizeof v)
            continue;
        got = 0;
        if (v == MARK_ERR)
            fail_msg("kill %u: the child reported a failed open or append", cs->kills);
        if (exact ? v != expect : v < expect)
            fail_msg("kill %u: acknowledged seq %llu, expected %s%llu", cs->kills,
                     (unsigned long long)v, exact ? "" : "at least ", (unsigned long long)expect);
        expect = v + 1;
        exact = 1;
        cs->max_acked = v;
        cs->acks++;
    }
    assert_int_equal(got, 0);
    close(fds[0]);
    cs->checked = 0;
}

static void count_problem(void *user, const char *file, uint64_t offset, int code,
                          const char *message)
{
    char *first = user;
    if (first[0] == '\0')
        snprintf(first, CAIRN_ERRMSG_MAX, "%s@%llu: %s: %s", file, (unsigned long long)offset,
                 cairn_strerror(code), message);
}

/* Reopen as the writer (recovery) and check everything; see the top. */
static void check_round(crash_state *cs)
{
    static payload_buf b;
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    cairn_iter *it = NULL;
    cairn_record rec;
    char err[CAIRN_ERRMSG_MAX], first[CAIRN_ERRMSG_MAX] = "";
    uint64_t m = 0, problems = 99;
    int rc;

    /* What the kill left, seen without recovering anything. */
    o.read_only = 1;
    rc = cairn_open(&db, cs->dir, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        fail_msg("after kill %u: read-only open failed: %s: %s", cs->kills, cairn_strerror(rc),
                 err);
    {
        cairn_stats st;
        char *tmp = tu_find_last(cs->dir, ".seg.tmp");
        assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
        cs->unsealed += st.segments_closed > 0;
        cs->rolled += segments(db) != cs->segs;
        cs->segs = segments(db);
        cs->tmp_left += tmp != NULL;
        free(tmp);
    }
    cairn_close(db);

    o.read_only = 0;
    o.background = 0;
    rc = cairn_open(&db, cs->dir, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        fail_msg("after kill %u: reopen failed: %s: %s", cs->kills, cairn_strerror(rc), err);
    {
        cairn_stats st;
        assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
        cs->torn += st.recovered_torn_bytes > 0;
        /* Writes are sequential: a kill can tear the last one, never leave
         * valid records behind damaged bytes. */
        if (st.recovered_set_aside_bytes != 0)
            fail_msg("after kill %u: recovery set %llu damaged bytes aside", cs->kills,
                     (unsigned long long)st.recovered_set_aside_bytes);
    }
    rc = cairn_iter_open(db, NULL, &it);
    if (rc != CAIRN_OK)
        fail_msg("after kill %u: cairn_iter_open: %s: %s", cs->kills, cairn_strerror(rc),
                 cairn_errmsg(db));
    while ((rc = cairn_iter_next(it, &rec)) == CAIRN_OK) {
        if (rec.seq != m + 1)
            fail_msg("after kill %u: record %llu follows record %llu", cs->kills,
                     (unsigned long long)rec.seq, (unsigned long long)m);
        if (!payload_matches(&rec, &b))
            fail_msg("after kill %u: record %llu has a wrong payload", cs->kills,
                     (unsigned long long)rec.seq);
        m++;
    }
    if (rc != CAIRN_ENOTFOUND)
        fail_msg("after kill %u: cairn_iter_next after record %llu: %s: %s", cs->kills,
                 (unsigned long long)m, cairn_strerror(rc), cairn_errmsg(db));
    cairn_iter_close(it);
    if (m < cs->max_acked)
        fail_msg("after kill %u: %llu records, but seq %llu was acknowledged", cs->kills,
                 (unsigned long long)m, (unsigned long long)cs->max_acked);
    if (m < cs->m)
        fail_msg("after kill %u: %llu records, an earlier recovery had read back %llu",
                 cs->kills, (unsigned long long)m, (unsigned long long)cs->m);
    if (m > cs->max_acked)
        cs->extra++;
    cs->m = m;
    cs->checked = 1;
    rc = cairn_verify(db, count_problem, first, &problems);
    if (rc != CAIRN_OK || problems != 0)
        fail_msg("after kill %u: cairn_verify: %s, %llu problems, first: %s", cs->kills,
                 cairn_strerror(rc), (unsigned long long)problems, first);
    rc = cairn_close(db);
    if (rc != CAIRN_OK)
        fail_msg("after kill %u: cairn_close: %s", cs->kills, cairn_strerror(rc));

    /* With no writer live, a torn tail recovery left behind is a problem. */
    o.read_only = 1;
    rc = cairn_open(&db, cs->dir, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        fail_msg("after kill %u: read-only open after recovery: %s: %s", cs->kills,
                 cairn_strerror(rc), err);
    first[0] = '\0';
    rc = cairn_verify(db, count_problem, first, &problems);
    if (rc != CAIRN_OK || problems != 0)
        fail_msg("after kill %u: cairn_verify without a writer: %s, %llu problems, first: %s",
                 cs->kills, cairn_strerror(rc), (unsigned long long)problems, first);
    cairn_close(db);
}

static void crash_init(crash_state *cs, char *dir, uint64_t seed)
{
    memset(cs, 0, sizeof *cs);
    cs->dir = dir;
    cs->rng = seed;
    cs->checked = 1; /* an empty store: the first child starts at seq 1 */
}

static void crash_done(crash_state *cs, const char *what)
{
    print_message("%s: %u kills, %llu acks, %llu records; checks found unacknowledged records "
                  "%u times, a torn tail %u times, unsealed closed segments %u times, a "
                  ".seg.tmp %u times; %u rounds rolled\n",
                  what, cs->kills, (unsigned long long)cs->acks, (unsigned long long)cs->m,
                  cs->extra, cs->torn, cs->unsealed, cs->tmp_left, cs->rolled);
}

/* The fixture: a fresh directory in *state, removed afterwards even when
 * the test fails. */
static int dir_setup(void **state)
{
    *state = tu_mkdtemp("crash");
    return *state != NULL ? 0 : -1;
}

static int dir_teardown(void **state)
{
    tu_rmrf(*state);
    free(*state);
    return 0;
}

static void test_kill9_while_appending_never_loses_an_acknowledged_record(void **state)
{
    crash_state cs;

    crash_init(&cs, *state, 0x5eed0001ull);
    for (int round = 0; round < 110; round++) {
        kill_round(&cs, round % 3 == 2, 1);
        check_round(&cs);
    }
    /* Every round acknowledged something, and the rounds rolled segments
     * (about one record in twelve is 12-40 KiB; 64 KiB segments). */
    assert_true(cs.max_acked >= 110);
    assert_true(cs.rolled >= 3);
    crash_done(&cs, "appending");
}

static void test_kill9_during_recovery_and_sealing_loses_nothing(void **state)
{
    crash_state cs;

    crash_init(&cs, *state, 0x5eed0002ull);
    for (int pair = 0; pair < 40; pair++) {
        /* A child killed while appending often leaves closed segments for
         * the next one to seal, and orphans of a roll or a seal... */
        kill_round(&cs, pair % 2, 1);
        /* ...which is killed while it recovers, seals or appends. */
        kill_round(&cs, pair % 2, 0);
        check_round(&cs);
    }
    assert_true(cs.max_acked >= 40);
    assert_true(cs.rolled >= 2);
    crash_done(&cs, "recovering");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_kill9_while_appending_never_loses_an_acknowledged_record, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(
            test_kill9_during_recovery_and_sealing_loses_nothing, dir_setup, dir_teardown),
    };
    return cmocka_run_group_tests_name("crash", tests, NULL, NULL);
}
