/*
 * test_lock.c - one writer per store across processes, and read-only
 * handles in other processes following the writer.
 *
 *  - Writers in several processes take turns: the lock is held for a turn
 *    (here: while a writer's buffer holds records), a writer that finds it
 *    held waits up to its busy timeout, then gets CAIRN_ELOCKED naming the
 *    holder's pid; with a longer timeout it gets in once the turn ends.
 *    Read-only opens are never refused or delayed.
 *  - Two open writer handles in two processes interleave their appends
 *    without a gap; LOCK names the last one.
 *  - The lock goes with the holder: when it is killed with SIGKILL, a new
 *    writer gets in at once.
 *  - A read-only handle in another process sees, at the first iterator it
 *    opens after the writer commits (cairn_flush; or a `full` append, with no
 *    flush), every record committed, with its payload, and none that is
 *    still in the writer's buffer.
 *  - Reader processes iterating while the writer appends, rolls 4 KiB
 *    segments and seals them in the background always see a gap-free prefix
 *    1..n with the right payloads, n never shrinking, and in the end all.
 *
 * Children report through a pipe (a fixed-size struct, written atomically)
 * and an exit code; they never call cmocka and leave with _exit. Every wait
 * on a child is bounded: a hung child is killed and fails the test. Children
 * are forked only while this process has no other thread (no writer with a
 * background thread open), so none inherits a lock held by a thread that
 * does not exist in it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

/* ------------------------------------------------------------------------
 * Helpers: time, payloads, child processes.
 * ---------------------------------------------------------------------- */

/* The payload of record seq: it names seq and has a size that varies. */
static size_t payload(uint64_t seq, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "{\"i\":%llu,\"pad\":\"", (unsigned long long)seq);
    size_t pad = (size_t)(seq * 7u % 300u);
    for (size_t i = 0; i < pad && n + 3 < cap; i++)
        buf[n++] = (char)('a' + (seq + i) % 26);
    n += (size_t)snprintf(buf + n, cap - n, "\"}");
    return n;
}

static int append_seq(cairn_db *db, uint64_t expect_seq)
{
    char js[400];
    cairn_entry e = {CAIRN_REC_EVENT, "lock", 4, js, 0, NULL, 0};
    uint64_t seq = 0;
    int rc;
    e.json_len = payload(expect_seq, js, sizeof js);
    rc = cairn_append(db, &e, &seq);
    if (rc == CAIRN_OK && seq != expect_seq)
        return CAIRN_ECORRUPT;
    return rc;
}

/* What a child sends back: numbers and a message. */
typedef struct report {
    long long v[4];
    char msg[200];
} report;

_Static_assert(sizeof(report) <= PIPE_BUF, "a report is written atomically");

static void send_report(int fd, long long a, long long b, long long c, long long d,
                        const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void send_report(int fd, long long a, long long b, long long c, long long d,
                        const char *fmt, ...)
{
    report r;
    va_list ap;
    memset(&r, 0, sizeof r);
    r.v[0] = a;
    r.v[1] = b;
    r.v[2] = c;
    r.v[3] = d;
    va_start(ap, fmt);
    vsnprintf(r.msg, sizeof r.msg, fmt, ap);
    va_end(ap);
    if (write(fd, &r, sizeof r) != (ssize_t)sizeof r)
        _exit(9);
}

/* Read one report within timeout_ms: 1 read, 0 end of file, -1 timeout. */
static int read_whole(int fd, void *buf, size_t len, long timeout_ms)
{
    size_t got = 0;
    long long until = tu_now_ms() + timeout_ms;
    while (got < len) {
        struct pollfd p = {fd, POLLIN, 0};
        long left = (long)(until - tu_now_ms());
        ssize_t n;
        if (left <= 0)
            return -1;
        if (poll(&p, 1, (int)left) <= 0)
            continue;
        n = read(fd, (char *)buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        got += (size_t)n;
    }
    return 1;
}

static int read_report(int fd, report *r, long timeout_ms)
{
    return read_whole(fd, r, sizeof *r, timeout_ms);
}

/* A child with two pipes: ctl (the parent writes, the child reads) and rep
 * (the child writes, the parent reads). fork_child returns in both: in the
 * child (pid 0) ctl and rep are the child's ends, in the parent the
 * parent's. */
typedef struct child {
    pid_t pid;
    int ctl, rep;
} child;

static child fork_child(void)
{
    child k;
    int c[2], r[2];
    assert_int_equal(pipe(c), 0);
    assert_int_equal(pipe(r), 0);
    k.pid = fork();
    assert_true(k.pid >= 0);
    if (k.pid == 0) {
        close(c[1]);
        close(r[0]);
        k.ctl = c[0];
        k.rep = r[1];
    } else {
        close(c[0]);
        close(r[1]);
        k.ctl = c[1];
        k.rep = r[0];
    }
    return k;
}

/* Does msg contain pid as a whole decimal number? */
static int names_pid(const char *msg, long pid)
{
    char num[32];
    size_t n = (size_t)snprintf(num, sizeof num, "%ld", pid);
    for (const char *p = strstr(msg, num); p != NULL; p = strstr(p + 1, num)) {
        int before = p > msg && p[-1] >= '0' && p[-1] <= '9';
        int after = p[n] >= '0' && p[n] <= '9';
        if (!before && !after)
            return 1;
    }
    return 0;
}

static cairn_db *open_writer(const char *dir, cairn_durability dur, uint64_t segment_size,
                             int background, uint32_t batch_ms)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    char err[CAIRN_ERRMSG_MAX];
    int rc;
    o.create = 1;
    o.durability = dur;
    o.segment_size = segment_size;
    o.background = background;
    o.batch_ms = batch_ms;
    rc = cairn_open(&db, dir, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        fail_msg("cairn_open(%s) as writer: %s: %s", dir, cairn_strerror(rc), err);
    return db;
}

/* The fixture: a fresh directory in *state, removed afterwards even when
 * the test fails. */
static int dir_setup(void **state)
{
    *state = tu_mkdtemp("lock");
    return *state != NULL ? 0 : -1;
}

static int dir_teardown(void **state)
{
    tu_rmrf(*state);
    free(*state);
    return 0;
}

/* ------------------------------------------------------------------------
 * A second writer, probed from a child process.
 * ---------------------------------------------------------------------- */

typedef struct probe {
    int rc;          /* cairn_open as writer */
    int out_null;    /* *out was NULL after a failure */
    long long ms;    /* how long the open took */
    int ro_rc;       /* a read-only open, when the writer open failed */
    long pid;        /* the child's pid */
    char err[CAIRN_ERRMSG_MAX];
} probe;

_Static_assert(sizeof(probe) <= PIPE_BUF, "a probe is written atomically");

/* Fork a child that tries to open dir as a writer (and appends one record
 * and closes if it gets in), and read what it saw. */
static probe probe_writer(const char *dir, uint32_t busy_ms)
{
    probe p;
    int fds[2], st;
    pid_t pid;
    int got;

    memset(&p, 0, sizeof p);
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cairn_options o = CAIRN_OPTIONS_INIT;
        cairn_db *db = (cairn_db *)&p; /* must be overwritten with NULL on failure */
        long long t0;
        close(fds[0]);
        p.pid = (long)getpid();
        o.background = 0;
        o.busy_timeout_ms = busy_ms;
        t0 = tu_now_ms();
        p.rc = cairn_open(&db, dir, &o, p.err, sizeof p.err);
        p.ms = tu_now_ms() - t0;
        p.out_null = db == NULL;
        if (p.rc == CAIRN_OK) {
            cairn_stats s;
            if (cairn_stats_get(db, &s) != CAIRN_OK || append_seq(db, s.last_seq + 1) != CAIRN_OK)
                p.rc = 1000;
            if (cairn_close(db) != CAIRN_OK)
                p.rc = 1001;
        } else {
            o.read_only = 1;
            db = NULL;
            p.ro_rc = cairn_open(&db, dir, &o, NULL, 0);
            cairn_close(db);
        }
        if (write(fds[1], &p, sizeof p) != (ssize_t)sizeof p)
            _exit(2);
        _exit(0);
    }
    close(fds[1]);
    got = read_whole(fds[0], &p, sizeof p, 10000);
    close(fds[0]);
    st = tu_wait_child(pid, 5000);
    if (got != 1)
        fail_msg("the second-writer process sent no answer within 10 s (blocked on the lock?)");
    assert_int_equal(st, 0);
    return p;
}

/* A holder child: a writer whose buffer keeps one record (a background
 * flusher with a period of 1000 s), so it holds the lock until told to
 * flush (a byte on ctl); then it waits for EOF and closes. */
typedef child holder;

static holder start_holder(const char *dir)
{
    holder h = fork_child();
    report rp;
    if (h.pid == 0) {
        cairn_db *db;
        char ch;
        db = open_writer(dir, CAIRN_DURABILITY_NONE, 0, 1, 1000000);
        if (append_seq(db, 1) != CAIRN_OK) {
            send_report(h.rep, -1, 0, 0, 0, "append: %s", cairn_errmsg(db));
            _exit(1);
        }
        send_report(h.rep, 1, 0, 0, 0, "holding");
        if (read(h.ctl, &ch, 1) == 1) {
            int rc = cairn_flush(db);
            send_report(h.rep, rc == CAIRN_OK ? 2 : -1, 0, 0, 0, "flushed");
        }
        while (read(h.ctl, &ch, 1) > 0)
            ;
        _exit(cairn_close(db) == CAIRN_OK ? 0 : 1);
    }
    if (read_report(h.rep, &rp, 10000) != 1 || rp.v[0] != 1) {
        kill(h.pid, SIGKILL);
        tu_wait_child(h.pid, 5000);
        fail_msg("the holder did not start: %s", rp.msg);
    }
    return h;
}

/* Fork a prober that waits (default busy timeout) while the holder still
 * holds the lock, and read its answer after the holder flushed. */
static void test_a_writer_process_waits_for_the_turn_or_times_out_naming_the_holder(
    void **state)
{
    char *dir = *state;
    holder h;
    report rp;
    probe p;
    pid_t prober;
    int fds[2];
    int got;

    cairn_close(open_writer(dir, CAIRN_DURABILITY_NONE, 0, 0, 0));
    h = start_holder(dir);

    /* A short busy timeout: waits about that long, then CAIRN_ELOCKED
     * naming the holder. Reads are not refused meanwhile. */
    p = probe_writer(dir, 300);
    if (p.rc != CAIRN_ELOCKED)
        fail_msg("writer while the holder is in its turn: %s (%s)", cairn_strerror(p.rc), p.err);
    assert_true(p.out_null);
    if (p.ms < 250 || p.ms > 3000)
        fail_msg("the writer waited %lld ms with a busy timeout of 300 ms", p.ms);
    if (!names_pid(p.err, (long)h.pid))
        fail_msg("message \"%s\" does not name the holder's pid %ld", p.err, (long)h.pid);
    assert_int_equal(p.ro_rc, CAIRN_OK);

    /* The default timeout (5 s): the prober waits for the holder's turn to
     * end, and gets in. */
    assert_int_equal(pipe(fds), 0);
    prober = fork();
    assert_true(prober >= 0);
    if (prober == 0) {
        close(fds[0]);
        p = probe_writer(dir, 0);
        if (write(fds[1], &p, sizeof p) != (ssize_t)sizeof p)
            _exit(2);
        _exit(0);
    }
    close(fds[1]);
    tu_sleep_ms(300);
    assert_int_equal(write(h.ctl, "f", 1), 1); /* the holder's records go to the file */
    if (read_report(h.rep, &rp, 10000) != 1 || rp.v[0] != 2)
        fail_msg("the holder did not flush: %s", rp.msg);
    got = read_whole(fds[0], &p, sizeof p, 15000);
    close(fds[0]);
    assert_int_equal(tu_wait_child(prober, 10000), 0);
    assert_int_equal(got, 1);
    if (p.rc != CAIRN_OK)
        fail_msg("the waiting writer did not get its turn: %s (%s)", cairn_strerror(p.rc), p.err);
    if (p.ms < 150)
        fail_msg("the writer got in after %lld ms, before the holder's turn ended", p.ms);
    close(h.ctl);
    assert_int_equal(tu_wait_child(h.pid, 10000), 0);
    close(h.rep);
    {
        cairn_db *db = open_writer(dir, CAIRN_DURABILITY_STORED, 0, 0, 0);
        cairn_stats s;
        assert_int_equal(cairn_stats_get(db, &s), CAIRN_OK);
        assert_int_equal(s.records, 2); /* the holder's, then the prober's */
        assert_int_equal(cairn_close(db), CAIRN_OK);
    }
}

/* Writer handles in two processes, both open: each append is a turn that
 * starts by catching up, so the numbers interleave without a gap and LOCK
 * names the last writer. */
static void test_open_writer_processes_take_turns(void **state)
{
    char *dir = *state;
    char *lock, want[32];
    uint8_t *content;
    size_t len;
    cairn_db *db;
    cairn_stats s;
    probe p;

    db = open_writer(dir, CAIRN_DURABILITY_NONE, 0, 0, 0);
    assert_int_equal(append_seq(db, 1), CAIRN_OK);
    p = probe_writer(dir, 0); /* appends record 2, our handle still open */
    if (p.rc != CAIRN_OK)
        fail_msg("a writer process while another writer is open: %s (%s)", cairn_strerror(p.rc),
                 p.err);
    lock = tu_join(dir, "LOCK");
    content = tu_read_file(lock, &len);
    assert_non_null(content);
    snprintf(want, sizeof want, "%ld\n", p.pid);
    assert_true(len >= strlen(want));
    assert_memory_equal(content, want, strlen(want));
    free(content);
    free(lock);
    assert_int_equal(append_seq(db, 3), CAIRN_OK); /* caught up on the child's */
    assert_int_equal(cairn_close(db), CAIRN_OK);

    db = open_writer(dir, CAIRN_DURABILITY_STORED, 0, 0, 0);
    assert_int_equal(cairn_stats_get(db, &s), CAIRN_OK);
    assert_int_equal(s.records, 3);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_killed_holder_releases_the_lock(void **state)
{
    char *dir = *state;
    cairn_db *db;
    cairn_stats s;
    holder h;
    probe p;
    int st;

    cairn_close(open_writer(dir, CAIRN_DURABILITY_NONE, 0, 0, 0));
    h = start_holder(dir);
    /* Probed from another child: a blocking lock must not hang this process. */
    p = probe_writer(dir, 200);
    if (p.rc != CAIRN_ELOCKED || !names_pid(p.err, (long)h.pid)) {
        kill(h.pid, SIGKILL);
        tu_wait_child(h.pid, 5000);
        fail_msg("open while child %ld holds the lock: %s (%s)", (long)h.pid,
                 cairn_strerror(p.rc), p.err);
    }
    kill(h.pid, SIGKILL);
    st = tu_wait_child(h.pid, 5000);
    assert_int_equal(st, -1); /* died of the signal */
    close(h.ctl);
    close(h.rep);

    /* At once: the kernel released its lock. Its buffered record never
     * reached the file (none mode: acknowledged, not durable). */
    p = probe_writer(dir, 1);
    if (p.rc != CAIRN_OK)
        fail_msg("open after the holder was killed: %s (%s)", cairn_strerror(p.rc), p.err);
    db = open_writer(dir, CAIRN_DURABILITY_STORED, 0, 0, 0);
    assert_int_equal(cairn_stats_get(db, &s), CAIRN_OK);
    assert_int_equal(s.records, 1); /* the prober's */
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* ------------------------------------------------------------------------
 * Readers in other processes.
 * ---------------------------------------------------------------------- */

/* Iterate everything: records must be 1..n with the payload of their seq.
 * Returns n, or -1 with the problem in msg. */
static long long scan_prefix(cairn_db *db, char *msg, size_t cap)
{
    cairn_iter *it = NULL;
    cairn_record rec;
    long long n = 0;
    char want[400];
    int rc = cairn_iter_open(db, NULL, &it);
    if (rc != CAIRN_OK) {
        snprintf(msg, cap, "cairn_iter_open: %s: %s", cairn_strerror(rc), cairn_errmsg(db));
        return -1;
    }
    while ((rc = cairn_iter_next(it, &rec)) == CAIRN_OK) {
        size_t wl;
        if (rec.seq != (uint64_t)n + 1) {
            snprintf(msg, cap, "record %llu after %lld: a gap or disorder",
                     (unsigned long long)rec.seq, n);
            cairn_iter_close(it);
            return -1;
        }
        wl = payload(rec.seq, want, sizeof want);
        if (rec.json_len != wl || memcmp(rec.json, want, wl) != 0 || rec.ns_len != 4 ||
            memcmp(rec.ns, "lock", 4) != 0 || rec.type != CAIRN_REC_EVENT) {
            snprintf(msg, cap, "record %llu has a wrong payload", (unsigned long long)rec.seq);
            cairn_iter_close(it);
            return -1;
        }
        n++;
    }
    cairn_iter_close(it);
    if (rc != CAIRN_ENOTFOUND) {
        snprintf(msg, cap, "cairn_iter_next after %lld: %s: %s", n, cairn_strerror(rc),
                 cairn_errmsg(db));
        return -1;
    }
    return n;
}

static cairn_db *child_open_reader(const char *dir, int rep)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    char err[CAIRN_ERRMSG_MAX];
    int rc;
    o.read_only = 1;
    rc = cairn_open(&db, dir, &o, err, sizeof err);
    if (rc != CAIRN_OK) {
        send_report(rep, -1, 0, 0, 0, "read-only open: %s: %s", cairn_strerror(rc), err);
        _exit(1);
    }
    return db;
}

/*
 * The follower child: for each target t read from ctl (8 bytes; EOF ends),
 * open an iterator and report (count at the first iterator, polls needed to
 * reach t within 5 s). Target 0 means "report what you see now".
 */
static void follower(const char *dir, int ctl, int rep)
{
    cairn_db *db = child_open_reader(dir, rep);
    char msg[200];
    long long t;
    send_report(rep, 0, 0, 0, 0, "ready");
    while (read(ctl, &t, sizeof t) == (ssize_t)sizeof t) {
        long long first = -1, n = -1, polls = 0, until = tu_now_ms() + 5000;
        do {
            n = scan_prefix(db, msg, sizeof msg);
            if (n < 0) {
                send_report(rep, -1, 0, 0, 0, "%s", msg);
                _exit(1);
            }
            if (first < 0)
                first = n;
            polls++;
            if (n >= t)
                break;
            tu_sleep_ms(5);
        } while (tu_now_ms() < until);
        send_report(rep, first, n, polls, 0, "seen");
    }
    cairn_close(db);
    _exit(0);
}

typedef child follow;

static follow start_follower(const char *dir)
{
    follow f = fork_child();
    report rp;
    if (f.pid == 0)
        follower(dir, f.ctl, f.rep);
    if (read_report(f.rep, &rp, 10000) != 1 || rp.v[0] != 0)
        fail_msg("the reader process did not start: %s", rp.msg);
    return f;
}

/* Ask the follower to look for t records; returns its report. */
static report ask(follow *f, long long t)
{
    report r;
    memset(&r, 0, sizeof r);
    assert_int_equal(write(f->ctl, &t, sizeof t), (ssize_t)sizeof t);
    if (read_report(f->rep, &r, 10000) != 1) {
        kill(f->pid, SIGKILL);
        tu_wait_child(f->pid, 5000);
        fail_msg("the reader process did not answer within 10 s");
    }
    if (r.v[0] < 0) {
        tu_wait_child(f->pid, 5000);
        fail_msg("reader process: %s", r.msg);
    }
    return r;
}

static void stop_follower(follow *f)
{
    close(f->ctl);
    assert_int_equal(tu_wait_child(f->pid, 10000), 0);
    close(f->rep);
}

static void test_reader_process_sees_flushed_records_and_not_buffered_ones(void **state)
{
    char *dir = *state;
    cairn_db *db;
    follow f;
    report r;

    /* A flusher thread with a huge period: records stay in the writer's
     * buffer until cairn_flush. The reader is forked before any thread. */
    cairn_close(open_writer(dir, CAIRN_DURABILITY_NONE, 0, 0, 0));
    f = start_follower(dir);
    db = open_writer(dir, CAIRN_DURABILITY_NONE, 0, 1, 1000000);
    for (uint64_t s = 1; s <= 10; s++)
        assert_int_equal(append_seq(db, s), CAIRN_OK);
    r = ask(&f, 0);
    if (r.v[0] != 0)
        fail_msg("the reader saw %lld records still in the writer's buffer", r.v[0]);

    assert_int_equal(cairn_flush(db), CAIRN_OK);
    r = ask(&f, 10);
    if (r.v[0] != 10)
        fail_msg("the first iterator after cairn_flush saw %lld of 10 records (%lld after %lld "
                 "polls)",
                 r.v[0], r.v[1], r.v[2]);

    for (uint64_t s = 11; s <= 25; s++)
        assert_int_equal(append_seq(db, s), CAIRN_OK);
    r = ask(&f, 10);
    assert_int_equal(r.v[0], 10);
    assert_int_equal(cairn_flush(db), CAIRN_OK);
    r = ask(&f, 25);
    if (r.v[0] != 25)
        fail_msg("the first iterator after the second cairn_flush saw %lld of 25 records",
                 r.v[0]);

    stop_follower(&f);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_reader_process_sees_full_mode_appends_without_flush(void **state)
{
    char *dir = *state;
    cairn_db *db;
    follow f;
    report r;

    /* Create the store, start the reader, and only then open the writer with
     * its background thread: a child forked from a process with threads may
     * inherit a lock some other thread held, and hang on it. */
    cairn_close(open_writer(dir, CAIRN_DURABILITY_FULL, 8192, 0, 0));
    f = start_follower(dir);
    /* 8 KiB segments: some appends roll, and the background thread seals. */
    db = open_writer(dir, CAIRN_DURABILITY_FULL, 8192, 1, 0);
    for (uint64_t s = 1; s <= 60; s++) {
        assert_int_equal(append_seq(db, s), CAIRN_OK);
        if (s % 3 == 0) {
            r = ask(&f, (long long)s);
            if (r.v[0] < (long long)s)
                fail_msg("after %llu acknowledged `full` appends the reader's first iterator "
                         "saw %lld (%lld after %lld polls)",
                         (unsigned long long)s, r.v[0], r.v[1], r.v[2]);
        }
    }
    stop_follower(&f);
    {
        cairn_stats st;
        assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
        assert_true(st.segments_sealed + st.segments_closed >= 1);
    }
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/*
 * The scanner child: iterate again and again while the writer runs; the
 * prefix must be gap-free and never shrink; every 8 scans it reopens its
 * handle. When the parent sends the final count (8 bytes on ctl), scan
 * until it is reached. Reports (scans, distinct counts seen, final count,
 * reopens).
 */
static void scanner(const char *dir, int ctl, int rep)
{
    cairn_db *db = child_open_reader(dir, rep);
    long long last = 0, scans = 0, distinct = 0, reopens = 0, total = -1;
    long long until = tu_now_ms() + 30000;
    char msg[200];
    fcntl(ctl, F_SETFL, O_NONBLOCK);
    while (tu_now_ms() < until) {
        long long n;
        if (total < 0 && read(ctl, &total, sizeof total) != (ssize_t)sizeof total)
            total = -1;
        n = scan_prefix(db, msg, sizeof msg);
        if (n < 0) {
            send_report(rep, -1, 0, 0, 0, "scan %lld: %s", scans, msg);
            _exit(1);
        }
        if (n < last) {
            send_report(rep, -1, 0, 0, 0, "scan %lld saw %lld records, an earlier one %lld",
                        scans, n, last);
            _exit(1);
        }
        if (n != last)
            distinct++;
        last = n;
        scans++;
        if (total >= 0 && n >= total)
            break;
        if (scans % 8 == 0) {
            cairn_close(db);
            db = child_open_reader(dir, rep);
            reopens++;
        }
    }
    cairn_close(db);
    if (total < 0 || last != total) {
        send_report(rep, -1, 0, 0, 0, "after 30 s: saw %lld records, the writer made %lld", last,
                    total);
        _exit(1);
    }
    send_report(rep, scans, distinct, last, reopens, "done");
    _exit(0);
}

static void test_reader_processes_see_a_gap_free_prefix_while_the_writer_rolls_and_seals(
    void **state)
{
    enum { NSCAN = 2 };
    char *dir = *state;
    cairn_db *db;
    cairn_stats st;
    pid_t pids[NSCAN];
    int ctl[NSCAN], rep[NSCAN];
    long long total, t0;
    uint64_t s = 0;

    /* Fork before the writer's background thread exists (see above). */
    cairn_close(open_writer(dir, CAIRN_DURABILITY_BATCH, 4096, 0, 5));
    for (int i = 0; i < NSCAN; i++) {
        int c[2], r[2];
        assert_int_equal(pipe(c), 0);
        assert_int_equal(pipe(r), 0);
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            close(c[1]);
            close(r[0]);
            scanner(dir, c[0], r[1]);
        }
        close(c[0]);
        close(r[1]);
        ctl[i] = c[1];
        rep[i] = r[0];
    }
    db = open_writer(dir, CAIRN_DURABILITY_BATCH, 4096, 1, 5);
    t0 = tu_now_ms();
    while (tu_now_ms() - t0 < 1500) {
        assert_int_equal(append_seq(db, ++s), CAIRN_OK);
        if (s % 50 == 0)
            assert_int_equal(cairn_flush(db), CAIRN_OK);
    }
    assert_int_equal(cairn_sync(db), CAIRN_OK);
    total = (long long)s;
    for (int i = 0; i < NSCAN; i++)
        assert_int_equal(write(ctl[i], &total, sizeof total), (ssize_t)sizeof total);
    for (int i = 0; i < NSCAN; i++) {
        report r;
        int got = read_report(rep[i], &r, 40000);
        int status = tu_wait_child(pids[i], 10000);
        if (got != 1 || r.v[0] < 0) {
            for (int k = i + 1; k < NSCAN; k++) {
                kill(pids[k], SIGKILL);
                tu_wait_child(pids[k], 5000);
            }
            if (got != 1)
                fail_msg("scanner %d sent no report (%s; exit status %d)", i,
                         got == 0 ? "it closed the pipe" : "timed out", status);
            fail_msg("scanner %d: %s", i, r.msg);
        }
        assert_int_equal(status, 0);
        assert_int_equal(r.v[2], total);
        print_message("scanner %d: %lld scans, %lld lengths, %lld records, %lld reopens\n", i,
                      r.v[0], r.v[1], r.v[2], r.v[3]);
        /* It really ran alongside the writer: it saw the log grow. */
        if (r.v[1] < 3)
            fail_msg("scanner %d saw only %lld distinct lengths in %lld scans", i, r.v[1],
                     r.v[0]);
        close(ctl[i]);
        close(rep[i]);
    }
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    print_message("writer: %lld records, %llu sealed and %llu closed segments\n", total,
                  (unsigned long long)st.segments_sealed, (unsigned long long)st.segments_closed);
    if (st.segments_sealed < 5)
        fail_msg("only %llu sealed segments after %lld records: the run did not exercise "
                 "sealing",
                 (unsigned long long)st.segments_sealed, total);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* A LOCK that is a symlink is refused: the writer would write its pid into
 * the file it names (and lock that file instead of the store's). The
 * file is left as it was; readers, which take no lock, still open. */
static void test_a_lock_that_is_a_symlink_is_refused_and_its_target_untouched(void **state)
{
    static const char content[] = "a file outside the store that must keep its bytes\n";
    char *dir = *state;
    char *other = tu_mkdtemp("lock-victim");
    char *victim = tu_join(other, "victim");
    char *lock = tu_join(dir, "LOCK");
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_db *db;
    uint8_t *got;
    size_t len;
    int rc;

    db = open_writer(dir, CAIRN_DURABILITY_NONE, 0, 0, 0);
    assert_int_equal(append_seq(db, 1), CAIRN_OK);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_int_equal(tu_write_file(victim, content, sizeof content - 1), 0);
    assert_int_equal(unlink(lock), 0);
    assert_int_equal(symlink(victim, lock), 0);

    db = NULL;
    o.background = 0;
    rc = cairn_open(&db, dir, &o, err, sizeof err);
    if (rc != CAIRN_ECORRUPT || strstr(err, "LOCK is a symlink; refusing to follow it") == NULL)
        fail_msg("writer open with a symlinked LOCK: %s (%s); expected CAIRN_ECORRUPT naming "
                 "LOCK", cairn_strerror(rc), err);
    assert_null(db);
    got = tu_read_file(victim, &len);
    assert_non_null(got);
    if (len != sizeof content - 1 || memcmp(got, content, len) != 0)
        fail_msg("the file LOCK points to was rewritten (%zu bytes: \"%.*s\")", len, (int)len,
                 (const char *)got);
    free(got);

    o.read_only = 1;
    assert_int_equal(cairn_open(&db, dir, &o, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_close(db), CAIRN_OK);

    tu_rmrf(other);
    free(other);
    free(victim);
    free(lock);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_a_writer_process_waits_for_the_turn_or_times_out_naming_the_holder,
            dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(
            test_open_writer_processes_take_turns, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(
            test_killed_holder_releases_the_lock, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(
            test_reader_process_sees_flushed_records_and_not_buffered_ones,
            dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(
            test_reader_process_sees_full_mode_appends_without_flush, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(
            test_reader_processes_see_a_gap_free_prefix_while_the_writer_rolls_and_seals,
            dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(
            test_a_lock_that_is_a_symlink_is_refused_and_its_target_untouched, dir_setup,
            dir_teardown),
    };
    return cmocka_run_group_tests_name("lock", tests, NULL, NULL);
}
