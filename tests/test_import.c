/*
 * test_import.c - an import is one commit: it lands whole or not at all,
 * across a full disk, a crash at any point, and a reader that looks while
 * it is being written (format-spec/record.md, "Commits of several
 * records"; engine/common/batch.h).
 *
 * Two imports are tried: 300 memories of ~2 KiB (cairn_mem_import, about
 * 600 KiB: the log writes it in several writes) and a causal graph of 600
 * nodes (cairn_causal_import). The store holds a few memories and nodes
 * before; after each run the store is reopened WITHOUT faults, as the
 * writer (which recovers the tail), and must hold what it held before and
 * either all of the import or none of it; when it holds none but records
 * of the import are in the log, replay says so (cairn_mem_unfinished,
 * skipped counts); cairn_verify finds no problem.
 *
 * - A full disk: an I/O table gives the disk a budget of bytes once the
 *   import starts; the write that crosses it writes what fits and returns
 *   the short count, every later one fails with ENOSPC. The budget is
 *   swept from 0 to past what the import writes.
 * - A crash: a child process runs the import with an I/O table that, at
 *   its K-th call after the import starts, dies with _exit (as kill -9:
 *   what was written stays in the page cache); a dying pwrite first writes
 *   none, half, or all but one byte of its buffer. K is swept over every
 *   call of the import and the close after it.
 * - kill -9 at random moments of a child that imports again and again.
 * - A reader: a writer thread's import is stopped inside, after the log
 *   has written part of it; a read-only handle then sees none of it, and
 *   all of it once the import finishes (the reflexion handle, which
 *   catches up, on its next call); and a reader whose view ends inside
 *   the import while the import completes before it looks takes it whole.
 *
 * The I/O table skips the real fsync/fdatasync (counted): a process crash
 * keeps the page cache, and the sweeps make hundreds of runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cairn.h"
#include "cairn_sys.h"
#include "testutil.h"

#define N_MEM 300        /* memories of the memory import */
#define N_NODE 600       /* nodes of the graph import */
#define N_PRE 5          /* memories and nodes stored before */
#define SEG_SIZE (256u * 1024u)

/* ------------------------------------------------------------------------
 * The I/O table.
 * ---------------------------------------------------------------------- */

enum { TORN_NONE, TORN_HALF, TORN_ALL_BUT_ONE, TORN_KINDS };

typedef struct inj {
    const cairn_io *real;
    int armed;             /* counting and faults from the import on */
    long calls;            /* calls since armed */
    long long budget;      /* bytes the disk still takes once armed; -1: no limit */
    long long written;     /* bytes written since armed */
    long crash_at;         /* the call (1-based, since armed) at which to _exit; 0: none */
    int torn;              /* TORN_*: what a dying pwrite writes first */
    /* a gate: the gate_at-th "segment.append" pwrite since armed waits
     * until the gate opens (gate_at 0: none) */
    long gate_at, appends;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int at_gate, gate_open;
    /* a reader's hook: called once, at its first read of the records of
     * the segment named on_read_seg (an iteration's "iter.read") */
    void (*on_read)(void *arg);
    void *on_read_arg;
    const char *on_read_seg;
} inj;

static void inj_init(inj *j)
{
    memset(j, 0, sizeof *j);
    j->real = cairn_io_default();
    j->budget = -1;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
}

static void inj_done(inj *j)
{
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
}

/* One call: counted; the crash if it is the one. */
static void step(inj *j)
{
    if (!j->armed)
        return;
    j->calls++;
    if (j->crash_at != 0 && j->calls == j->crash_at)
        _exit(0);
}

static int w_open(void *u, const char *site, const char *path, int flags, int mode)
{
    inj *j = u;
    step(j);
    return j->real->open(j->real->user, site, path, flags, mode);
}

static int w_openat(void *u, const char *site, int dirfd, const char *path, int flags, int mode)
{
    inj *j = u;
    step(j);
    return j->real->openat(j->real->user, site, dirfd, path, flags, mode);
}

static int w_close(void *u, const char *site, int fd)
{
    inj *j = u;
    step(j);
    return j->real->close(j->real->user, site, fd);
}

/* fd's file name ends with name (Linux: through /proc). */
static int fd_is(int fd, const char *name)
{
    char link[64], path[4096];
    ssize_t n;
    size_t k = strlen(name);
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof path - 1);
    if (n < 0)
        return 0;
    path[n] = 0;
    return (size_t)n >= k && strcmp(path + n - k, name) == 0;
}

static ssize_t w_pread(void *u, const char *site, int fd, void *buf, size_t len, off_t off)
{
    inj *j = u;
    if (j->on_read != NULL && strcmp(site, "iter.read") == 0 && fd_is(fd, j->on_read_seg)) {
        void (*fn)(void *) = j->on_read;
        j->on_read = NULL;
        fn(j->on_read_arg);
    }
    return j->real->pread(j->real->user, site, fd, buf, len, off);
}

static ssize_t w_pwrite(void *u, const char *site, int fd, const void *buf, size_t len,
                        off_t off)
{
    inj *j = u;
    ssize_t n;
    if (!j->armed)
        return j->real->pwrite(j->real->user, site, fd, buf, len, off);
    j->calls++;
    if (j->crash_at != 0 && j->calls == j->crash_at) {
        size_t k = j->torn == TORN_HALF ? len / 2 : j->torn == TORN_ALL_BUT_ONE ? len - 1 : 0;
        if (k > 0 && j->real->pwrite(j->real->user, site, fd, buf, k, off) < 0)
            _exit(3);
        _exit(0);
    }
    if (j->gate_at != 0 && strcmp(site, "segment.append") == 0 && ++j->appends == j->gate_at) {
        pthread_mutex_lock(&j->mu);
        j->at_gate = 1;
        pthread_cond_broadcast(&j->cv);
        while (!j->gate_open)
            pthread_cond_wait(&j->cv, &j->mu);
        pthread_mutex_unlock(&j->mu);
    }
    if (j->budget == 0) {
        errno = ENOSPC;
        return -1;
    }
    if (j->budget > 0 && (long long)len > j->budget)
        len = (size_t)j->budget; /* a full disk: what fits, then ENOSPC */
    n = j->real->pwrite(j->real->user, site, fd, buf, len, off);
    if (n > 0) {
        j->written += n;
        if (j->budget > 0)
            j->budget -= n;
    }
    return n;
}

static int w_fsync(void *u, const char *site, int fd)
{
    inj *j = u;
    (void)site;
    (void)fd;
    step(j);
    return 0;
}

static int w_ftruncate(void *u, const char *site, int fd, off_t len)
{
    inj *j = u;
    step(j);
    return j->real->ftruncate(j->real->user, site, fd, len);
}

static int w_renameat(void *u, const char *site, int dirfd, const char *from, const char *to)
{
    inj *j = u;
    step(j);
    return j->real->renameat(j->real->user, site, dirfd, from, to);
}

static int w_unlinkat(void *u, const char *site, int dirfd, const char *path)
{
    inj *j = u;
    step(j);
    return j->real->unlinkat(j->real->user, site, dirfd, path);
}

static cairn_io make_io(inj *j)
{
    cairn_io io;
    memset(&io, 0, sizeof io);
    io.open = w_open;
    io.openat = w_openat;
    io.close = w_close;
    io.pread = w_pread;
    io.pwrite = w_pwrite;
    io.fsync = w_fsync;
    io.fdatasync = w_fsync;
    io.ftruncate = w_ftruncate;
    io.renameat = w_renameat;
    io.unlinkat = w_unlinkat;
    io.user = j;
    io.reserve = NULL; /* no reservations: every byte is paid when written */
    return io;
}

/* ------------------------------------------------------------------------
 * The store, the imports and what they left.
 * ---------------------------------------------------------------------- */

static int open_store(const char *dir, const cairn_io *io, int read_only, cairn_db **db)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    int rc;
    o.create = !read_only;
    o.read_only = read_only;
    o.background = 0;
    o.durability = read_only ? CAIRN_DURABILITY_STORED : CAIRN_DURABILITY_FULL;
    o.segment_size = SEG_SIZE;
    o.io = io;
    rc = cairn_open(db, dir, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        print_error("cairn_open %s: %s\n", dir, err);
    return rc;
}

static char *mem_json;   /* the memory import */
static char *graph_json; /* the graph import */

static void make_inputs(void)
{
    size_t cap = (size_t)N_MEM * 2300 + 64, n = 0;
    uint64_t s = 42;
    mem_json = malloc(cap);
    assert_non_null(mem_json);
    n += (size_t)snprintf(mem_json + n, cap - n, "[");
    for (int i = 0; i < N_MEM; i++) {
        n += (size_t)snprintf(mem_json + n, cap - n,
                              "%s{\"id\":\"imp-%03d\",\"namespace\":\"imp\",\"category\":\"fact\","
                              "\"content\":\"import %d:",
                              i ? "," : "", i, i);
        for (int k = 0; k < 2000; k++)
            mem_json[n++] = (char)('a' + tu_splitmix64(&s) % 26);
        n += (size_t)snprintf(mem_json + n, cap - n, "\"}");
    }
    n += (size_t)snprintf(mem_json + n, cap - n, "]");
    assert_true(n < cap);

    cap = (size_t)N_NODE * 800 + 64;
    n = 0;
    graph_json = malloc(cap);
    assert_non_null(graph_json);
    n += (size_t)snprintf(graph_json + n, cap - n, "{\"nodes\":[");
    for (int i = 0; i < N_NODE; i++) {
        n += (size_t)snprintf(graph_json + n, cap - n,
                              "%s{\"id\":\"g%d\",\"type\":\"error\",\"label\":\"imported node %d ",
                              i ? "," : "", i, i);
        for (int k = 0; k < 700; k++)
            graph_json[n++] = (char)('a' + tu_splitmix64(&s) % 26);
        n += (size_t)snprintf(graph_json + n, cap - n, "\"}");
    }
    n += (size_t)snprintf(graph_json + n, cap - n, "]}");
    assert_true(n < cap);
}

/* A fresh store with N_PRE memories and N_PRE nodes, closed. */
static void make_store(const char *dir)
{
    cairn_db *db;
    cairn_mem *m;
    cairn_reflex *r;
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    so.ns = "pre";
    tu_rmrf(dir);
    assert_int_equal(open_store(dir, NULL, 0, &db), CAIRN_OK);
    assert_int_equal(cairn_mem_open(db, NULL, &m), CAIRN_OK);
    assert_int_equal(cairn_reflex_open(db, &r), CAIRN_OK);
    for (int i = 0; i < N_PRE; i++) {
        char text[64];
        snprintf(text, sizeof text, "stored before the import, number %d", i);
        assert_int_equal(cairn_mem_store(m, text, &so, NULL, NULL), CAIRN_OK);
        snprintf(text, sizeof text, "node before the import %d", i);
        assert_int_equal(cairn_causal_add_node(r, CAIRN_NODE_ERROR, text, NULL, NULL), CAIRN_OK);
    }
    cairn_reflex_close(r);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

enum { JOB_MEM, JOB_GRAPH };

/* Run the import on an open writer; its status. */
static int run_job(int job, cairn_db *db, inj *j)
{
    int rc;
    if (job == JOB_MEM) {
        cairn_mem *m = NULL;
        uint64_t imported = 0, skipped = 0;
        rc = cairn_mem_open(db, NULL, &m);
        if (rc != CAIRN_OK)
            return rc;
        j->armed = 1;
        rc = cairn_mem_import(m, CAIRN_MEM_JSON, mem_json, strlen(mem_json), NULL, &imported,
                              &skipped);
        if (rc == CAIRN_OK && (imported != N_MEM || skipped != 0))
            rc = CAIRN_EINVAL;
        cairn_mem_close(m);
    } else {
        cairn_reflex *r = NULL;
        cairn_causal_import_stats st;
        rc = cairn_reflex_open(db, &r);
        if (rc != CAIRN_OK)
            return rc;
        j->armed = 1;
        rc = cairn_causal_import(r, graph_json, strlen(graph_json), &st);
        if (rc == CAIRN_OK && st.nodes != N_NODE)
            rc = CAIRN_EINVAL;
        cairn_reflex_close(r);
    }
    return rc;
}

static void count_problem(void *user, const char *file, uint64_t offset, int code,
                          const char *msg)
{
    (void)offset;
    (void)code;
    print_error("verify: %s: %s\n", file, msg);
    (*(int *)user)++;
}

static int holds(const cairn_record *rec, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= rec->json_len; i++)
        if (memcmp(rec->json + i, s, k) == 0)
            return 1;
    return 0;
}

/* Records of the import in the log (memory records of namespace "imp", or
 * causal node records with "imported node" in the label). */
static uint64_t records_in_log(cairn_db *db, int job)
{
    cairn_iter *it;
    cairn_record rec;
    uint64_t n = 0;
    assert_int_equal(cairn_iter_open(db, NULL, &it), CAIRN_OK);
    while (cairn_iter_next(it, &rec) == CAIRN_OK) {
        if (job == JOB_MEM && rec.type == CAIRN_REC_MEMORY && rec.ns_len == 3 &&
            memcmp(rec.ns, "imp", 3) == 0)
            n++;
        if (job == JOB_GRAPH && rec.type == CAIRN_REC_CAUSAL_NODE && holds(&rec, "imported node"))
            n++;
    }
    cairn_iter_close(it);
    return n;
}

/* How much of the import the store holds, through a handle of db: every
 * memory or node from before must be there; *in_log gets the import's
 * records in the log, *unapplied what replay reported it skipped. */
static uint64_t found_in(cairn_db *db, int job, uint64_t *in_log, uint64_t *unapplied)
{
    uint64_t found = 0;
    *in_log = records_in_log(db, job);
    if (job == JOB_MEM) {
        cairn_mem *m;
        cairn_mem_stats st;
        assert_int_equal(cairn_mem_open(db, NULL, &m), CAIRN_OK);
        for (int i = 0; i < N_MEM; i++) {
            char id[16];
            cairn_memory *x = NULL;
            snprintf(id, sizeof id, "imp-%03d", i);
            if (cairn_mem_get(m, id, &x) == CAIRN_OK)
                found++;
            cairn_mem_free(x);
        }
        assert_int_equal(cairn_mem_stats_get(m, &st), CAIRN_OK);
        assert_int_equal(st.total, N_PRE + found); /* and nothing else */
        cairn_mem_stats_free(&st);
        *unapplied = cairn_mem_unfinished(m);
        assert_true(cairn_mem_skipped(m) >= *unapplied);
        cairn_mem_close(m);
    } else {
        cairn_reflex *r;
        cairn_reflex_status st;
        assert_int_equal(cairn_reflex_open(db, &r), CAIRN_OK);
        assert_int_equal(cairn_reflex_status_get(r, &st), CAIRN_OK);
        assert_true(st.nodes >= N_PRE);
        found = st.nodes - N_PRE;
        *unapplied = st.skipped;
        cairn_reflex_close(r);
    }
    return found;
}

/* Reopen dir as the writer without faults: all of the import or none
 * (all when `must`); returns which. */
static int check_store(const char *dir, int job, int must, const char *what)
{
    cairn_db *db;
    uint64_t found, in_log, unapplied, n = job == JOB_MEM ? N_MEM : N_NODE;
    int problems = 0;
    assert_int_equal(open_store(dir, NULL, 0, &db), CAIRN_OK);
    found = found_in(db, job, &in_log, &unapplied);
    if (found != 0 && found != n)
        fail_msg("%s: %llu of the %llu %s of the import are there",
                 what, (unsigned long long)found, (unsigned long long)n,
                 job == JOB_MEM ? "memories" : "nodes");
    if (must && found != n)
        fail_msg("%s: the import returned CAIRN_OK, but %llu of %llu are there", what,
                 (unsigned long long)found, (unsigned long long)n);
    /* none applied, part of it in the log: replay said it skipped them */
    if (found == 0 && unapplied < in_log)
        fail_msg("%s: %llu records of the import in the log, %llu reported not applied", what,
                 (unsigned long long)in_log, (unsigned long long)unapplied);
    assert_int_equal(cairn_verify(db, count_problem, &problems, NULL), CAIRN_OK);
    if (problems != 0)
        fail_msg("%s: cairn_verify found %d problem(s)", what, problems);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    return found == n;
}

typedef struct fx {
    char *dir;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    char *d = tu_mkdtemp("import");
    if (f == NULL || d == NULL)
        return -1;
    f->dir = tu_join(d, "store");
    free(d);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    char *parent = strdup(f->dir);
    char *slash = strrchr(parent, '/');
    *slash = 0;
    tu_rmrf(parent);
    free(parent);
    free(f->dir);
    free(f);
    return 0;
}

/* ------------------------------------------------------------------------
 * A full disk.
 * ---------------------------------------------------------------------- */

/* The import with a disk that takes `budget` more bytes (-1: any); the
 * bytes it wrote, and its status in *rc_out. */
static long long full_disk_run(const char *dir, int job, long long budget, int *rc_out)
{
    inj j;
    cairn_io io;
    cairn_db *db;
    int rc;
    make_store(dir);
    inj_init(&j);
    j.budget = budget;
    io = make_io(&j);
    assert_int_equal(open_store(dir, &io, 0, &db), CAIRN_OK);
    rc = run_job(job, db, &j);
    if (cairn_close(db) != CAIRN_OK && rc == CAIRN_OK && budget < 0)
        rc = CAIRN_EIO;
    *rc_out = rc;
    inj_done(&j);
    return j.written;
}

static void full_disk_sweep(const char *dir, int job)
{
    int rc, landed = 0, none = 0;
    long long total = full_disk_run(dir, job, -1, &rc), step;
    char what[96];

    assert_int_equal(rc, CAIRN_OK);
    assert_true(check_store(dir, job, 1, "no fault"));
    assert_true(total > (long long)SEG_SIZE); /* the import is written in several writes */
    step = total / 150 > 0 ? total / 150 : 1;
    for (long long b = 0; b <= total + step; b += b < 256 ? 37 : step) {
        full_disk_run(dir, job, b, &rc);
        snprintf(what, sizeof what, "%s import, disk full after %lld of %lld bytes",
                 job == JOB_MEM ? "memory" : "graph", b, total);
        if (b < total && rc == CAIRN_OK)
            fail_msg("%s: the import returned CAIRN_OK", what);
        if (check_store(dir, job, rc == CAIRN_OK, what))
            landed++;
        else
            none++;
    }
    /* both outcomes were met: the sweep crossed the commit */
    assert_true(none > 0);
    assert_true(landed > 0);
}

static void test_a_memory_import_on_a_full_disk_lands_whole_or_not_at_all(void **state)
{
    fx *f = *state;
    full_disk_sweep(f->dir, JOB_MEM);
}

static void test_a_graph_import_on_a_full_disk_lands_whole_or_not_at_all(void **state)
{
    fx *f = *state;
    full_disk_sweep(f->dir, JOB_GRAPH);
}

/* ------------------------------------------------------------------------
 * A crash at every call.
 * ---------------------------------------------------------------------- */

/* In a child: the import on the store, dying at armed call crash_at (0:
 * not at all). The calls it made (armed), or -1 if it died. */
static long crash_run(const char *dir, int job, long crash_at, int torn)
{
    int p[2], status;
    long calls = -1;
    pid_t pid;

    assert_int_equal(pipe(p), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        inj j;
        cairn_io io;
        cairn_db *db;
        int rc;
        close(p[0]);
        inj_init(&j);
        j.crash_at = crash_at;
        j.torn = torn;
        io = make_io(&j);
        if (open_store(dir, &io, 0, &db) != CAIRN_OK)
            _exit(2);
        rc = run_job(job, db, &j);
        rc = rc == CAIRN_OK ? cairn_close(db) : rc;
        if (rc != CAIRN_OK)
            _exit(4);
        if (write(p[1], &j.calls, sizeof j.calls) != (ssize_t)sizeof j.calls)
            _exit(5);
        _exit(0);
    }
    close(p[1]);
    if (read(p[0], &calls, sizeof calls) != (ssize_t)sizeof calls)
        calls = -1;
    close(p[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    return calls;
}

/* Every call in the plain build; every other one under the sanitizers,
 * whose runs are ~3x slower (the plain run covers each call; this one
 * looks for memory errors on the recovery paths, which neighbouring calls
 * share). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CRASH_STRIDE 2
#else
#define CRASH_STRIDE 1
#endif

static void crash_sweep(const char *dir, int job)
{
    long total;
    int landed = 0, none = 0;
    char what[96];

    make_store(dir);
    total = crash_run(dir, job, 0, TORN_NONE);
    assert_true(total > 0);
    assert_true(check_store(dir, job, 1, "no crash"));
    for (long k = 1; k <= total; k += k < 8 ? 1 : CRASH_STRIDE) /* the first calls all */
        for (int t = 0; t < TORN_KINDS; t++) {
            make_store(dir);
            assert_int_equal(crash_run(dir, job, k, t), -1);
            snprintf(what, sizeof what, "%s import, crash at call %ld of %ld (torn %d)",
                     job == JOB_MEM ? "memory" : "graph", k, total, t);
            if (check_store(dir, job, 0, what))
                landed++;
            else
                none++;
        }
    assert_true(none > 0);
    assert_true(landed > 0);
}

static void test_a_memory_import_crashed_at_any_call_lands_whole_or_not_at_all(void **state)
{
    fx *f = *state;
    crash_sweep(f->dir, JOB_MEM);
}

static void test_a_graph_import_crashed_at_any_call_lands_whole_or_not_at_all(void **state)
{
    fx *f = *state;
    crash_sweep(f->dir, JOB_GRAPH);
}

/* ------------------------------------------------------------------------
 * kill -9.
 * ---------------------------------------------------------------------- */

/* Imports of N_MEM memories, ids "r<round>-<i>", one after another until
 * killed; each acknowledged on the pipe once it returned. */
static void importer_main(const char *dir, int wfd)
{
    cairn_db *db;
    cairn_mem *m;
    size_t cap = (size_t)N_MEM * 2300 + 64;
    char *json = malloc(cap);
    uint64_t s = (uint64_t)getpid();
    if (json == NULL || open_store(dir, NULL, 0, &db) != CAIRN_OK ||
        cairn_mem_open(db, NULL, &m) != CAIRN_OK)
        _exit(2);
    for (uint32_t round = 0;; round++) {
        size_t n = 0;
        n += (size_t)snprintf(json + n, cap - n, "[");
        for (int i = 0; i < N_MEM; i++) {
            n += (size_t)snprintf(json + n, cap - n,
                                  "%s{\"id\":\"r%u-%d\",\"namespace\":\"imp\",\"content\":\"%u %d ",
                                  i ? "," : "", round, i, round, i);
            for (int k = 0; k < 1500; k++)
                json[n++] = (char)('a' + tu_splitmix64(&s) % 26);
            n += (size_t)snprintf(json + n, cap - n, "\"}");
        }
        n += (size_t)snprintf(json + n, cap - n, "]");
        if (cairn_mem_import(m, CAIRN_MEM_JSON, json, n, NULL, NULL, NULL) != CAIRN_OK)
            _exit(3);
        if (write(wfd, &round, sizeof round) != (ssize_t)sizeof round)
            _exit(4);
    }
}

static void test_kill9_during_imports_leaves_each_whole_or_absent(void **state)
{
    fx *f = *state;
    uint64_t rng = 0x1234567;

    for (int k = 0; k < 40; k++) {
        int p[2], status;
        uint32_t acked = 0, got;
        long long delay = 2000 + (long long)(tu_splitmix64(&rng) % 40000); /* us */
        struct timespec t = {0, 0};
        cairn_db *db;
        cairn_mem *m;
        pid_t pid;

        make_store(f->dir);
        assert_int_equal(pipe(p), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(p[0]);
            importer_main(f->dir, p[1]);
        }
        close(p[1]);
        t.tv_sec = delay / 1000000;
        t.tv_nsec = (long)(delay % 1000000) * 1000;
        nanosleep(&t, NULL);
        kill(pid, SIGKILL);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        while (read(p[0], &got, sizeof got) == (ssize_t)sizeof got)
            acked = got + 1;
        close(p[0]);

        assert_int_equal(open_store(f->dir, NULL, 0, &db), CAIRN_OK);
        assert_int_equal(cairn_mem_open(db, NULL, &m), CAIRN_OK);
        for (uint32_t round = 0; round <= acked; round++) {
            int found = 0;
            for (int i = 0; i < N_MEM; i++) {
                char id[32];
                cairn_memory *x = NULL;
                snprintf(id, sizeof id, "r%u-%d", round, i);
                if (cairn_mem_get(m, id, &x) == CAIRN_OK)
                    found++;
                cairn_mem_free(x);
            }
            if (found != 0 && found != N_MEM)
                fail_msg("kill %d after %lld us: import %u has %d of %d memories", k, delay,
                         round, found, N_MEM);
            if (round < acked && found != N_MEM)
                fail_msg("kill %d: import %u was acknowledged, %d of %d memories", k, round,
                         found, N_MEM);
        }
        cairn_mem_close(m);
        assert_int_equal(cairn_close(db), CAIRN_OK);
    }
}

/* ------------------------------------------------------------------------
 * A reader while the import is written.
 * ---------------------------------------------------------------------- */

typedef struct writer_arg {
    cairn_db *db;
    inj *j;
    int job;
    int rc;
} writer_arg;

static void *writer_main(void *p)
{
    writer_arg *a = p;
    int rc = run_job(a->job, a->db, a->j);
    pthread_mutex_lock(&a->j->mu);
    a->rc = rc;
    pthread_cond_broadcast(&a->j->cv);
    pthread_mutex_unlock(&a->j->mu);
    return NULL;
}

/* Until the writer thread of a stands at j's gate. */
static void wait_gate(inj *j, writer_arg *a)
{
    pthread_mutex_lock(&j->mu);
    while (!j->at_gate && a->rc == -1)
        pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
    if (!j->at_gate)
        fail_msg("the import ended (%d) before its second write: it was written at once", a->rc);
}

static void reader_sees_none_then_all(const char *dir, int job)
{
    inj j;
    cairn_io io;
    cairn_db *w, *rd, *rd2;
    cairn_reflex *rr = NULL;
    cairn_reflex_status st;
    pthread_t t;
    writer_arg a;
    uint64_t in_log, unapplied, n = job == JOB_MEM ? N_MEM : N_NODE;

    make_store(dir);
    inj_init(&j);
    j.gate_at = 2; /* the log has written the import's first piece */
    io = make_io(&j);
    assert_int_equal(open_store(dir, &io, 0, &w), CAIRN_OK);
    a.db = w;
    a.j = &j;
    a.job = job;
    a.rc = -1;
    assert_int_equal(pthread_create(&t, NULL, writer_main, &a), 0);
    wait_gate(&j, &a);

    /* Part of the import is in the file now, as records a reader reads. */
    assert_int_equal(open_store(dir, NULL, 1, &rd), CAIRN_OK);
    assert_true(records_in_log(rd, job) > 0);
    assert_int_equal(found_in(rd, job, &in_log, &unapplied), 0);
    assert_true(in_log > 0 && in_log < n);
    if (job == JOB_GRAPH) {
        assert_int_equal(cairn_reflex_open(rd, &rr), CAIRN_OK);
        assert_int_equal(cairn_reflex_status_get(rr, &st), CAIRN_OK);
        assert_int_equal(st.nodes, N_PRE);
    }

    pthread_mutex_lock(&j.mu);
    j.gate_open = 1;
    pthread_cond_broadcast(&j.cv);
    pthread_mutex_unlock(&j.mu);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(a.rc, CAIRN_OK);

    /* Now all of it: for a new handle, and for the reflexion handle that
     * saw none of it (it catches up on its next call). */
    assert_int_equal(open_store(dir, NULL, 1, &rd2), CAIRN_OK);
    assert_int_equal(found_in(rd2, job, &in_log, &unapplied), n);
    assert_int_equal(unapplied, 0);
    if (job == JOB_GRAPH) {
        assert_int_equal(cairn_reflex_status_get(rr, &st), CAIRN_OK);
        assert_int_equal(st.nodes, N_PRE + N_NODE);
        assert_int_equal(st.skipped, 0);
        cairn_reflex_close(rr);
    }
    assert_int_equal(cairn_close(rd2), CAIRN_OK);
    assert_int_equal(cairn_close(rd), CAIRN_OK);
    assert_int_equal(cairn_close(w), CAIRN_OK);
    inj_done(&j);
}

/* The writer's import finishes (from the reader's I/O table) after the
 * reader's iteration fixed its view, inside the import, and before the
 * reader looks up the import's last record: the lookup finds the commit
 * whole, and the replay must fold the records past its view too. (The
 * reflexion handle would also take them at its next catch-up; the memory
 * handle never looks again.) */
typedef struct finish_arg {
    inj *wj;
    pthread_t t;
    writer_arg *a;
} finish_arg;

static void finish_writer(void *p)
{
    finish_arg *f = p;
    pthread_mutex_lock(&f->wj->mu);
    f->wj->gate_open = 1;
    pthread_cond_broadcast(&f->wj->cv);
    pthread_mutex_unlock(&f->wj->mu);
    assert_int_equal(pthread_join(f->t, NULL), 0);
    assert_int_equal(f->a->rc, CAIRN_OK);
}

static void reader_view_ends_inside_a_commit_that_then_completes(const char *dir, int job)
{
    inj wj, rj;
    cairn_io wio, rio;
    cairn_db *w, *rd;
    writer_arg a;
    finish_arg fa;
    uint64_t found = 0, n = job == JOB_MEM ? N_MEM : N_NODE;

    make_store(dir);
    inj_init(&wj);
    inj_init(&rj);
    wj.gate_at = 2;
    wio = make_io(&wj);
    assert_int_equal(open_store(dir, &wio, 0, &w), CAIRN_OK);
    a.db = w;
    a.j = &wj;
    a.job = job;
    a.rc = -1;
    assert_int_equal(pthread_create(&fa.t, NULL, writer_main, &a), 0);
    wait_gate(&wj, &a);

    /* The import is in segment 2 (the batch rolled past the records from
     * before): the reader's first read of it is its iteration's, with its
     * view fixed on the part written so far. */
    fa.wj = &wj;
    fa.a = &a;
    rj.on_read = finish_writer;
    rj.on_read_arg = &fa;
    rj.on_read_seg = "0000000000000002.log";
    rio = make_io(&rj);
    assert_int_equal(open_store(dir, &rio, 1, &rd), CAIRN_OK);
    if (job == JOB_MEM) { /* the replay at open reads the import */
        cairn_mem *m;
        assert_int_equal(cairn_mem_open(rd, NULL, &m), CAIRN_OK);
        assert_null(rj.on_read); /* the hook ran: the writer finished meanwhile */
        for (int i = 0; i < N_MEM; i++) {
            char id[16];
            cairn_memory *x = NULL;
            snprintf(id, sizeof id, "imp-%03d", i);
            if (cairn_mem_get(m, id, &x) == CAIRN_OK)
                found++;
            cairn_mem_free(x);
        }
        assert_int_equal(cairn_mem_unfinished(m), 0);
        cairn_mem_close(m);
    } else {
        cairn_reflex *r;
        cairn_reflex_status st;
        assert_int_equal(cairn_reflex_open(rd, &r), CAIRN_OK);
        assert_int_equal(cairn_reflex_status_get(r, &st), CAIRN_OK);
        assert_null(rj.on_read);
        found = st.nodes - N_PRE;
        assert_int_equal(st.skipped, 0);
        cairn_reflex_close(r);
    }
    assert_int_equal(found, n);
    assert_int_equal(cairn_close(rd), CAIRN_OK);
    assert_int_equal(cairn_close(w), CAIRN_OK);
    inj_done(&wj);
    inj_done(&rj);
}

static void test_a_reader_whose_view_ends_inside_a_memory_import_takes_it_whole(void **state)
{
    fx *f = *state;
    reader_view_ends_inside_a_commit_that_then_completes(f->dir, JOB_MEM);
}

static void test_a_reader_whose_view_ends_inside_a_graph_import_takes_it_whole(void **state)
{
    fx *f = *state;
    reader_view_ends_inside_a_commit_that_then_completes(f->dir, JOB_GRAPH);
}

static void test_a_reader_sees_no_part_of_a_memory_import_being_written(void **state)
{
    fx *f = *state;
    reader_sees_none_then_all(f->dir, JOB_MEM);
}

static void test_a_reader_sees_no_part_of_a_graph_import_being_written(void **state)
{
    fx *f = *state;
    reader_sees_none_then_all(f->dir, JOB_GRAPH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_a_memory_import_on_a_full_disk_lands_whole_or_not_at_all, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_graph_import_on_a_full_disk_lands_whole_or_not_at_all, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_memory_import_crashed_at_any_call_lands_whole_or_not_at_all, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_graph_import_crashed_at_any_call_lands_whole_or_not_at_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill9_during_imports_leaves_each_whole_or_absent,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_reader_sees_no_part_of_a_memory_import_being_written, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_reader_sees_no_part_of_a_graph_import_being_written, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_reader_whose_view_ends_inside_a_memory_import_takes_it_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_a_reader_whose_view_ends_inside_a_graph_import_takes_it_whole, setup, teardown),
    };
    make_inputs();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
