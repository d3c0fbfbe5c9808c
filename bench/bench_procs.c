/*
 * bench_procs.c - many processes, one store (issue 18): cairn next to SQLite,
 * same run, same texts, processes (fork), not threads. Public API only.
 * Never part of `make test`.
 *
 *   writers   for N in --procs (1, 4, 16): N processes, each with its own
 *             handle, each storing --per (10,000) memories into ONE store,
 *             one cairn_mem_store per memory (cairn_open durability BATCH,
 *             default namespace); then N processes, each with its own
 *             connection, inserting the same texts into ONE SQLite database
 *             (WAL, synchronous NORMAL, busy_timeout 5000, an FTS5 table of
 *             content plus four UNINDEXED columns, porter tokenizer), one row
 *             per transaction (an agent stores one memory at a time).
 *             cairn and SQLite alternate per N. The texts are made before
 *             any clock starts (distinct generated sentences, fixed seed);
 *             each process opens its handle, then all start together. The
 *             rate is all memories over the wall time from the start until
 *             the last process has closed its handle (the rate up to the
 *             end of the last store loop is printed too). Every failed call
 *             is counted per process (busy: CAIRN_ELOCKED, SQLITE_BUSY or
 *             SQLITE_LOCKED), never retried; a process whose open fails
 *             counts all its memories as failures. Afterwards the store is
 *             opened read-only and its live memories counted (`found`).
 *   recall    a store of --recall-n (10,000) of the same texts; a read-only
 *             handle in this process recalls (k 10, lexical: no embedder;
 *             each recall records its accesses in the side file ACCESS)
 *             --queries (1,000) queries of 1-3 words, cycled, for
 *             --phase-seconds (3) per phase, every call timed; phases
 *             alternate idle / loaded, --rounds (2) of each. Loaded: another
 *             process (a fresh one per phase) opens the store writable
 *             (durability BATCH) and calls cairn_append with CAIRN_REC_EVENT
 *             records of ~200-byte JSON (bench_dataset_make) at --rate
 *             (100,000) records per second, paced against the clock; the
 *             window starts 0.3 s after it began appending. The achieved
 *             rate over the window is printed.
 *
 * Targets (ratios, PASS/FAIL on stderr, a JSON line each): cairn's
 * 16-process rate >= its 1-process rate; cairn's 16-process rate >= 2x
 * SQLite's 16-process rate; recall p50 and p99 under the append load
 * <= 2x idle. Only printed for the sizes they name.
 *
 * usage: bench_procs [--procs LIST] [--per N] [--recall-n N] [--queries Q]
 *                    [--rate R] [--phase-seconds S] [--rounds R]
 *                    [--only writers|cairn|sqlite|recall] [--dir DIR] [--seed S]
 * Output: JSON lines on stdout, the human table and PASS/FAIL on stderr.
 * Exit status 0 unless something failed to run (a missed target, or
 * failures counted in a run, are results, not errors).
 */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_text.h"
#include "bench_util.h"
#include "cairn.h"

#define MAX_PROCS 64

/* ---- the texts ------------------------------------------------------------ */

static char **texts;
static size_t n_texts;

/* n distinct sentences of the base vocabulary (a duplicate by FNV-1a hash
 * is drawn again). */
static void texts_make(size_t n, uint64_t seed)
{
    size_t cap = 1;
    uint64_t *set;
    char buf[256];

    while (cap < 2 * n)
        cap *= 2;
    set = bench_malloc(cap * sizeof *set);
    memset(set, 0, cap * sizeof *set);
    texts = bench_malloc(n * sizeof *texts);
    bench_rng_state = seed;
    for (size_t i = 0; i < n;) {
        uint64_t h = 0xcbf29ce484222325ull;
        size_t slot, len = bench_sentence(buf, sizeof buf, BENCH_VOCAB_BASE);
        for (size_t k = 0; k < len; k++)
            h = (h ^ (uint8_t)buf[k]) * 0x100000001b3ull;
        h |= 1; /* 0 marks an empty slot */
        for (slot = h & (cap - 1); set[slot] != 0 && set[slot] != h; slot = (slot + 1) & (cap - 1))
            ;
        if (set[slot] == h)
            continue;
        set[slot] = h;
        texts[i] = bench_malloc(len + 1);
        memcpy(texts[i], buf, len + 1);
        i++;
    }
    n_texts = n;
    free(set);
}

static bench_query *queries; /* 1-3 words of the sentences' vocabulary */
static size_t n_queries;

/* ---- processes ------------------------------------------------------------ */

/* What a child reports, in memory shared with the parent. */
typedef struct child_out {
    double t_loop_end;   /* CLOCK_MONOTONIC (system-wide) when its loop ended */
    double t_closed;     /* ... when its handle was closed */
    double open_secs;    /* opening its handle (before the start) */
    uint64_t done;       /* calls that succeeded */
    uint64_t failed;     /* calls that failed (never retried) */
    uint64_t busy;       /* of those: CAIRN_ELOCKED / SQLITE_BUSY / SQLITE_LOCKED */
    int open_rc;         /* 0, or the status of a failed open (then failed = all) */
    int first_rc;        /* the first failure's status */
    char first_err[CAIRN_ERRMSG_MAX + 32]; /* and its message */
} child_out;

static void *shared_alloc(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        bench_die("mmap: %s", strerror(errno));
    memset(p, 0, n);
    return p;
}

static void note_failure(child_out *o, int rc, int busy, const char *msg)
{
    if (o->failed++ == 0) {
        o->first_rc = rc;
        snprintf(o->first_err, sizeof o->first_err, "%s", msg);
    }
    o->busy += busy != 0;
}

enum { ENG_CAIRN, ENG_SQLITE };
static const char *const ENG_NAME[] = {"cairn", "sqlite"};

static size_t per = 10000;
static uint64_t max_memories; /* cairn_mem_options.max_memories: every memory kept */

static void cairn_writer(const char *dir, size_t first, child_out *o, int go_fd, int ready_fd)
{
    cairn_options opt = CAIRN_OPTIONS_INIT;
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    char err[CAIRN_ERRMSG_MAX], c = 1;
    double t0 = bench_now();
    int rc;

    opt.durability = CAIRN_DURABILITY_BATCH;
    mo.max_memories = max_memories;
    rc = cairn_open(&db, dir, &opt, err, sizeof err);
    if (rc == CAIRN_OK && (rc = cairn_mem_open(db, &mo, &mem)) != CAIRN_OK)
        snprintf(err, sizeof err, "cairn_mem_open: %s", cairn_errmsg(db));
    o->open_secs = bench_now() - t0;
    if (rc != CAIRN_OK)
        o->open_rc = rc;
    bench_write_all(ready_fd, &c, 1);
    while (read(go_fd, &c, 1) < 0 && errno == EINTR)
        ;
    for (size_t i = 0; i < per; i++) {
        if (rc != CAIRN_OK) {
            note_failure(o, rc, rc == CAIRN_ELOCKED, err);
            continue;
        }
        int r = cairn_mem_store(mem, texts[first + i], NULL, NULL, NULL);
        if (r == CAIRN_OK)
            o->done++;
        else
            note_failure(o, r, r == CAIRN_ELOCKED, cairn_mem_errmsg(mem));
    }
    o->t_loop_end = bench_now();
    cairn_mem_close(mem);
    if (db != NULL && (rc = cairn_close(db)) != CAIRN_OK)
        note_failure(o, rc, rc == CAIRN_ELOCKED, "cairn_close");
    o->t_closed = bench_now();
}

static const char SQL_SCHEMA[] =
    "CREATE VIRTUAL TABLE m USING fts5(content, ns UNINDEXED, category UNINDEXED, "
    "importance UNINDEXED, created_at UNINDEXED, tokenize='porter')";

static void sqlite_writer(const char *path, size_t first, child_out *o, int go_fd, int ready_fd)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *ins = NULL;
    char c = 1, err[200] = "";
    double t0 = bench_now();
    int rc;

    rc = sqlite3_open(path, &db);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "PRAGMA busy_timeout=5000; PRAGMA synchronous=NORMAL", NULL,
                          NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "INSERT INTO m(content, ns, category, importance, "
                                    "created_at) VALUES (?1, '', 'fact', 0.5, ?2)",
                                -1, &ins, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, sizeof err, "open: %s", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        o->open_rc = rc;
    }
    o->open_secs = bench_now() - t0;
    bench_write_all(ready_fd, &c, 1);
    while (read(go_fd, &c, 1) < 0 && errno == EINTR)
        ;
    for (size_t i = 0; i < per; i++) {
        int r;
        if (rc != SQLITE_OK) {
            note_failure(o, rc, (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED, err);
            continue;
        }
        sqlite3_bind_text(ins, 1, texts[first + i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 2, 1700000000000 + (int64_t)(first + i));
        r = sqlite3_step(ins);
        if (r == SQLITE_DONE)
            o->done++;
        else
            note_failure(o, r, (r & 0xff) == SQLITE_BUSY || (r & 0xff) == SQLITE_LOCKED,
                         sqlite3_errmsg(db));
        sqlite3_reset(ins);
    }
    o->t_loop_end = bench_now();
    sqlite3_finalize(ins);
    if (db != NULL && (rc = sqlite3_close(db)) != SQLITE_OK)
        note_failure(o, rc, 0, "sqlite3_close");
    o->t_closed = bench_now();
}

/* One writers run's outcome. */
typedef struct wrun {
    int engine, procs;
    uint64_t done, failed, busy, open_failed, found;
    double secs, loop_secs, open_max;
    uint64_t proc_failed[MAX_PROCS];
} wrun;

static wrun wruns[64];
static int n_wruns;

/* A fresh store (or database) in `path`, made by this process. */
static void fresh(int engine, const char *path)
{
    char p2[1200];
    bench_rm_rf(path);
    if (engine == ENG_CAIRN) {
        cairn_options o = CAIRN_OPTIONS_INIT;
        cairn_db *db;
        char err[CAIRN_ERRMSG_MAX];
        o.create = 1;
        o.durability = CAIRN_DURABILITY_BATCH;
        if (cairn_open(&db, path, &o, err, sizeof err) != CAIRN_OK)
            bench_die("cairn_open %s: %s", path, err);
        bench_check(db, cairn_close(db), "cairn_close");
    } else {
        sqlite3 *db;
        snprintf(p2, sizeof p2, "%s-wal", path);
        bench_rm_rf(p2);
        snprintf(p2, sizeof p2, "%s-shm", path);
        bench_rm_rf(p2);
        if (sqlite3_open(path, &db) != SQLITE_OK ||
            sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) != SQLITE_OK ||
            sqlite3_exec(db, SQL_SCHEMA, NULL, NULL, NULL) != SQLITE_OK)
            bench_die("sqlite %s: %s", path, sqlite3_errmsg(db));
        sqlite3_close(db);
    }
}

/* Live memories (rows) in the store after a run, read by a fresh handle. */
static uint64_t count_found(int engine, const char *path)
{
    uint64_t n = 0;
    if (engine == ENG_CAIRN) {
        cairn_options o = CAIRN_OPTIONS_INIT;
        cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
        cairn_db *db;
        cairn_mem *mem;
        cairn_mem_stats st;
        char err[CAIRN_ERRMSG_MAX];
        o.read_only = 1;
        mo.max_memories = max_memories;
        if (cairn_open(&db, path, &o, err, sizeof err) != CAIRN_OK)
            bench_die("cairn_open %s (read-only): %s", path, err);
        bench_check(db, cairn_mem_open(db, &mo, &mem), "cairn_mem_open");
        bench_check(db, cairn_mem_stats_get(mem, &st), "cairn_mem_stats_get");
        n = st.total;
        cairn_mem_stats_free(&st);
        cairn_mem_close(mem);
        cairn_close(db);
    } else {
        sqlite3 *db;
        sqlite3_stmt *st;
        if (sqlite3_open(path, &db) != SQLITE_OK ||
            sqlite3_prepare_v2(db, "SELECT count(*) FROM m", -1, &st, NULL) != SQLITE_OK)
            bench_die("sqlite count: %s", sqlite3_errmsg(db));
        if (sqlite3_step(st) == SQLITE_ROW)
            n = (uint64_t)sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
    }
    return n;
}

static void writers(int engine, int nprocs, const char *dir)
{
    char path[1100];
    child_out *out;
    int go[2], ready[2];
    pid_t pids[MAX_PROCS];
    double t0, end_loop = 0, end_close = 0;
    wrun *w;
    double load[1] = {0};

    if (n_wruns >= (int)NELEM(wruns))
        bench_die("too many runs");
    w = &wruns[n_wruns++];
    memset(w, 0, sizeof *w);
    w->engine = engine;
    w->procs = nprocs;
    snprintf(path, sizeof path, "%s/procs-%s", dir, engine == ENG_CAIRN ? "cairn" : "sqlite.db");
    fresh(engine, path);
    sync();
    out = shared_alloc((size_t)nprocs * sizeof *out);
    if (pipe(go) != 0 || pipe(ready) != 0)
        bench_die("pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    for (int p = 0; p < nprocs; p++) {
        pids[p] = fork();
        if (pids[p] < 0)
            bench_die("fork: %s", strerror(errno));
        if (pids[p] == 0) {
            close(go[1]);
            close(ready[0]);
            if (engine == ENG_CAIRN)
                cairn_writer(path, (size_t)p * per, &out[p], go[0], ready[1]);
            else
                sqlite_writer(path, (size_t)p * per, &out[p], go[0], ready[1]);
            _exit(0);
        }
    }
    close(go[0]);
    close(ready[1]);
    for (int p = 0; p < nprocs; p++) { /* every child has opened its handle */
        char c;
        ssize_t r;
        while ((r = read(ready[0], &c, 1)) < 0 && errno == EINTR)
            ;
        if (r != 1)
            bench_die("a writer process died before the start");
    }
    close(ready[0]);
    t0 = bench_now();
    close(go[1]); /* the start: every child's read() returns 0 */
    for (int p = 0; p < nprocs; p++) {
        int st;
        if (waitpid(pids[p], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bench_die("%s writer %d did not exit cleanly", ENG_NAME[engine], p);
    }
    for (int p = 0; p < nprocs; p++) {
        w->done += out[p].done;
        w->failed += out[p].failed;
        w->busy += out[p].busy;
        w->open_failed += out[p].open_rc != 0;
        w->proc_failed[p] = out[p].failed;
        if (out[p].open_secs > w->open_max)
            w->open_max = out[p].open_secs;
        if (out[p].t_loop_end > end_loop)
            end_loop = out[p].t_loop_end;
        if (out[p].t_closed > end_close)
            end_close = out[p].t_closed;
    }
    w->loop_secs = end_loop - t0;
    w->secs = end_close - t0;
    w->found = count_found(engine, path);
    getloadavg(load, 1);
    printf("{\"bench\":\"procs\",\"part\":\"writers\",\"engine\":\"%s\",\"procs\":%d,"
           "\"memories\":%" PRIu64 ",\"stored\":%" PRIu64 ",\"failures\":%" PRIu64
           ",\"busy\":%" PRIu64 ",\"open_failures\":%" PRIu64 ",\"found\":%" PRIu64
           ",\"seconds\":%.4f,\"memories_per_s\":%.1f,\"loop_seconds\":%.4f,"
           "\"memories_per_s_loop\":%.1f,\"open_seconds_max\":%.4f,\"failures_per_proc\":[",
           ENG_NAME[engine], nprocs, (uint64_t)nprocs * per, w->done, w->failed, w->busy,
           w->open_failed, w->found, w->secs, (double)w->done / w->secs, w->loop_secs,
           (double)w->done / w->loop_secs, w->open_max);
    for (int p = 0; p < nprocs; p++)
        printf("%s%" PRIu64, p ? "," : "", out[p].failed);
    printf("],\"load1\":%.2f,\"seed\":%" PRIu64 "}\n", load[0], bench_seed);
    fflush(stdout);
    fprintf(stderr, "  %-6s %5d %12.0f %12.0f %9" PRIu64 " %7" PRIu64 " %9" PRIu64 "/%-9" PRIu64
            "\n", ENG_NAME[engine], nprocs, (double)w->done / w->secs,
            (double)w->done / w->loop_secs, w->failed, w->busy, w->found,
            (uint64_t)nprocs * per);
    for (int p = 0, shown = 0; p < nprocs; p++) {
        if (out[p].failed == 0)
            continue;
        if (shown++ == 2) {
            fprintf(stderr, "         (and more processes with failures: failures_per_proc)\n");
            break;
        }
        fprintf(stderr, "         process %d: %" PRIu64 " failures, first: %s%s (%s)\n", p,
                out[p].failed, out[p].open_rc ? "at open: " : "",
                engine == ENG_CAIRN ? cairn_strerror(out[p].first_rc)
                                    : sqlite3_errstr(out[p].first_rc),
                out[p].first_err);
    }
    munmap(out, (size_t)nprocs * sizeof *out);
}

static const wrun *wrun_find(int engine, int procs)
{
    for (int i = 0; i < n_wruns; i++)
        if (wruns[i].engine == engine && wruns[i].procs == procs)
            return &wruns[i];
    return NULL;
}

/* A target: one JSON line, one PASS/FAIL line. at_least 1: value >= threshold
 * passes; 0: value <= threshold. failures: calls that failed in the runs the
 * value comes from; any fails the target (a rate of what was stored while
 * other processes were refused is no rate to compare). */
static void target_line(const char *name, double value, double threshold, int at_least,
                        uint64_t failures)
{
    int pass = (at_least ? value >= threshold : value <= threshold) && failures == 0;
    printf("{\"bench\":\"procs\",\"part\":\"target\",\"name\":\"%s\",\"value\":%.3f,"
           "\"threshold\":%.1f,\"at_least\":%s,\"failures\":%" PRIu64 ",\"pass\":%s}\n", name,
           value, threshold, at_least ? "true" : "false", failures, pass ? "true" : "false");
    fflush(stdout);
    fprintf(stderr, "  %-28s %7.2fx  %s %.1fx  %s", name, value, at_least ? ">=" : "<=",
            threshold, pass ? "PASS" : "FAIL");
    if (failures)
        fprintf(stderr, " (%" PRIu64 " calls failed)", failures);
    fprintf(stderr, "\n");
}

/* ---- recall under an appending process ------------------------------------ */

typedef struct appender_out {
    _Atomic uint64_t done;   /* records appended so far */
    _Atomic int ready;       /* 1: appending started */
    _Atomic int stop;        /* set by the parent */
    uint64_t failed;
    int first_rc;
    char first_err[CAIRN_ERRMSG_MAX + 32];
} appender_out;

static double rate = 100000;

static void appender(const char *path, const dataset *d, appender_out *o)
{
    cairn_options opt = CAIRN_OPTIONS_INIT;
    cairn_db *db;
    char err[CAIRN_ERRMSG_MAX];
    uint64_t done = 0;
    double t0;
    int rc;

    opt.durability = CAIRN_DURABILITY_BATCH;
    rc = cairn_open(&db, path, &opt, err, sizeof err);
    if (rc != CAIRN_OK) {
        o->failed = 1;
        o->first_rc = rc;
        snprintf(o->first_err, sizeof o->first_err, "cairn_open: %s", err);
        atomic_store(&o->ready, 1);
        return;
    }
    t0 = bench_now();
    atomic_store(&o->ready, 1);
    while (!atomic_load_explicit(&o->stop, memory_order_relaxed)) {
        double due = (bench_now() - t0) * rate;
        if ((double)done >= due) {
            struct timespec ts = {0, 50000}; /* 50 us: 5 records at 100,000/s */
            nanosleep(&ts, NULL);
            continue;
        }
        for (int k = 0; k < 64 && (double)done < due; k++) {
            rc = cairn_append(db, &d->e[done % d->n], NULL);
            if (rc != CAIRN_OK && o->failed++ == 0) {
                o->first_rc = rc;
                snprintf(o->first_err, sizeof o->first_err, "%s", cairn_errmsg(db));
            }
            done++;
        }
        atomic_store_explicit(&o->done, done, memory_order_relaxed);
    }
    cairn_close(db);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct lat {
    double *v;
    size_t n, cap;
} lat;

static void lat_add(lat *l, double x)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 65536;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        if (l->v == NULL)
            bench_die("out of memory");
    }
    l->v[l->n++] = x;
}

static double pct(const lat *l, double p)
{
    size_t i = (size_t)(p * (double)(l->n - 1) + 0.5);
    return l->n ? l->v[i] : 0;
}

static size_t qnext; /* the next query, cycled over every phase */

static void recall_phase(cairn_mem *mem, double secs, lat *l)
{
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    double end = bench_now() + secs;
    ro.k = 10;
    ro.mode = CAIRN_RECALL_LEXICAL;
    while (bench_now() < end) {
        cairn_recall_hit *h;
        size_t nh;
        double t0 = bench_now();
        int rc = cairn_mem_recall(mem, queries[qnext++ % n_queries], &ro, &h, &nh);
        double t = bench_now() - t0;
        if (rc != CAIRN_OK)
            bench_die("recall: %s (%s)", cairn_strerror(rc), cairn_mem_errmsg(mem));
        cairn_recall_free(h, nh);
        lat_add(l, t);
    }
}

static void recall_bench(const char *dir, size_t n, double phase_secs, int rounds)
{
    char path[1100];
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    cairn_db *db;
    cairn_mem *mem;
    char err[CAIRN_ERRMSG_MAX];
    lat idle = {0}, load = {0};
    dataset d;
    uint64_t appended = 0, app_failed = 0, unrecorded;
    double app_secs = 0, load1[1] = {0};
    int app_first_rc = 0;
    char app_first_err[CAIRN_ERRMSG_MAX + 32] = "";

    if (n > n_texts)
        bench_die("--recall-n %zu: only %zu texts", n, n_texts);
    snprintf(path, sizeof path, "%s/procs-recall", dir);
    bench_rm_rf(path);
    o.create = 1;
    o.durability = CAIRN_DURABILITY_BATCH;
    mo.max_memories = max_memories;
    if (cairn_open(&db, path, &o, err, sizeof err) != CAIRN_OK)
        bench_die("cairn_open %s: %s", path, err);
    bench_check(db, cairn_mem_open(db, &mo, &mem), "cairn_mem_open");
    for (size_t i = 0; i < n; i++)
        if (cairn_mem_store(mem, texts[i], NULL, NULL, NULL) != CAIRN_OK)
            bench_die("store %zu: %s", i, cairn_mem_errmsg(mem));
    cairn_mem_close(mem);
    bench_check(db, cairn_close(db), "cairn_close");
    /* the appender's records: enough for a phase at the rate, cycled */
    bench_dataset_make(&d, (size_t)(rate * (phase_secs + 1.0)) + 1, bench_seed);
    sync();

    o = (cairn_options)CAIRN_OPTIONS_INIT;
    o.read_only = 1;
    if (cairn_open(&db, path, &o, err, sizeof err) != CAIRN_OK)
        bench_die("cairn_open %s (read-only): %s", path, err);
    bench_check(db, cairn_mem_open(db, &mo, &mem), "cairn_mem_open (read-only)");
    {
        lat warm = {0}; /* one pass over the queries, not counted */
        recall_phase(mem, 0.5, &warm);
        free(warm.v);
    }
    for (int r = 0; r < rounds; r++) {
        appender_out *ao;
        pid_t pid;
        uint64_t a0, a1;
        double t0, t1;
        int st;

        recall_phase(mem, phase_secs, &idle);
        ao = shared_alloc(sizeof *ao);
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        if (pid < 0)
            bench_die("fork: %s", strerror(errno));
        if (pid == 0) {
            appender(path, &d, ao);
            _exit(0);
        }
        while (!atomic_load(&ao->ready)) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        {
            struct timespec ts = {0, 300000000}; /* 0.3 s: the appender is under way */
            nanosleep(&ts, NULL);
        }
        a0 = atomic_load(&ao->done);
        t0 = bench_now();
        recall_phase(mem, phase_secs, &load);
        a1 = atomic_load(&ao->done);
        t1 = bench_now();
        atomic_store(&ao->stop, 1);
        if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bench_die("the appender did not exit cleanly");
        appended += a1 - a0;
        app_secs += t1 - t0;
        if (ao->failed && app_failed == 0) {
            app_first_rc = ao->first_rc;
            snprintf(app_first_err, sizeof app_first_err, "%s", ao->first_err);
        }
        app_failed += ao->failed;
        munmap(ao, sizeof *ao);
    }
    unrecorded = cairn_mem_access_unrecorded(mem);
    cairn_mem_close(mem);
    cairn_close(db);
    free(d.buf);
    free(d.e);
    free(d.ts);
    qsort(idle.v, idle.n, sizeof *idle.v, cmp_double);
    qsort(load.v, load.n, sizeof *load.v, cmp_double);
    getloadavg(load1, 1);
    {
        double ip50 = pct(&idle, 0.5), ip99 = pct(&idle, 0.99), lp50 = pct(&load, 0.5),
               lp99 = pct(&load, 0.99), arate = app_secs > 0 ? (double)appended / app_secs : 0;
        printf("{\"bench\":\"procs\",\"part\":\"recall\",\"memories\":%zu,\"queries\":%zu,"
               "\"rounds\":%d,\"phase_seconds\":%.1f,\"idle_recalls\":%zu,\"idle_p50_ms\":%.4f,"
               "\"idle_p99_ms\":%.4f,\"load_recalls\":%zu,\"load_p50_ms\":%.4f,"
               "\"load_p99_ms\":%.4f,\"p50_ratio\":%.3f,\"p99_ratio\":%.3f,"
               "\"append_rate_target\":%.0f,\"append_rate\":%.0f,\"appended\":%" PRIu64
               ",\"append_failures\":%" PRIu64 ",\"access_unrecorded\":%" PRIu64
               ",\"load1\":%.2f,\"seed\":%" PRIu64 "}\n",
               n, n_queries, rounds, phase_secs, idle.n, ip50 * 1e3, ip99 * 1e3, load.n,
               lp50 * 1e3, lp99 * 1e3, lp50 / ip50, lp99 / ip99, rate, arate, appended,
               app_failed, unrecorded, load1[0], bench_seed);
        fprintf(stderr, "recall, %zu memories, read-only handle, k 10, %zu queries; %d x %.1f s "
                "idle / loaded:\n", n, n_queries, rounds, phase_secs);
        fprintf(stderr, "  idle    %8zu recalls  p50 %.3f ms  p99 %.3f ms\n", idle.n,
                ip50 * 1e3, ip99 * 1e3);
        fprintf(stderr, "  loaded  %8zu recalls  p50 %.3f ms  p99 %.3f ms   (another process "
                "appending %.0f rec/s, target %.0f; %" PRIu64 " failures)\n", load.n,
                lp50 * 1e3, lp99 * 1e3, arate, rate, app_failed);
        if (unrecorded)
            fprintf(stderr, "  %" PRIu64 " recalls' accesses were not recorded "
                    "(cairn_mem_access_unrecorded)\n", unrecorded);
        if (app_failed)
            fprintf(stderr, "  appender's first failure: %s (%s)\n", cairn_strerror(app_first_rc),
                    app_first_err);
        target_line("recall_p50_load_vs_idle", lp50 / ip50, 2.0, 0, app_failed);
        target_line("recall_p99_load_vs_idle", lp99 / ip99, 2.0, 0, app_failed);
    }
    free(idle.v);
    free(load.v);
}

int main(int argc, char **argv)
{
    const char *dir = getenv("BENCH_DIR") ? getenv("BENCH_DIR") : "build/bench-tmp";
    const char *only = NULL;
    int procs[16] = {1, 4, 16}, n_procs = 3, max_procs = 0, rounds = 2;
    size_t recall_n = 10000, nq = 1000;
    double phase_secs = 3;
    long nproc = sysconf(_SC_NPROCESSORS_ONLN);
    int do_cairn, do_sqlite, do_recall;

    bench_name = "bench_procs";
    bench_seed = 0xCA1E5EED;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            goto usage;
        i++;
        if (strcmp(a, "--procs") == 0) {
            char *e;
            n_procs = 0;
            for (const char *p = v; *p && n_procs < (int)NELEM(procs); p = *e ? e + 1 : e) {
                long x = strtol(p, &e, 10);
                if (e == p || x < 1 || x > MAX_PROCS || (*e && *e != ','))
                    bench_die("--procs: a list of 1..%d, not %s", MAX_PROCS, v);
                procs[n_procs++] = (int)x;
            }
        } else if (strcmp(a, "--per") == 0)
            per = (size_t)strtoull(v, NULL, 10);
        else if (strcmp(a, "--recall-n") == 0)
            recall_n = (size_t)strtoull(v, NULL, 10);
        else if (strcmp(a, "--queries") == 0)
            nq = (size_t)strtoull(v, NULL, 10);
        else if (strcmp(a, "--rate") == 0)
            rate = atof(v);
        else if (strcmp(a, "--phase-seconds") == 0)
            phase_secs = atof(v);
        else if (strcmp(a, "--rounds") == 0)
            rounds = atoi(v);
        else if (strcmp(a, "--only") == 0)
            only = v;
        else if (strcmp(a, "--dir") == 0)
            dir = v;
        else if (strcmp(a, "--seed") == 0)
            bench_seed = strtoull(v, NULL, 0);
        else
            goto usage;
    }
    if (per == 0 || recall_n == 0 || nq == 0 || !(rate > 0) || !(phase_secs > 0) || rounds < 1)
        goto usage;
    do_cairn = only == NULL || strcmp(only, "writers") == 0 || strcmp(only, "cairn") == 0;
    do_sqlite = only == NULL || strcmp(only, "writers") == 0 || strcmp(only, "sqlite") == 0;
    do_recall = only == NULL || strcmp(only, "recall") == 0;
    if (!do_cairn && !do_sqlite && !do_recall)
        goto usage;
    for (int i = 0; i < n_procs; i++)
        if (procs[i] > max_procs)
            max_procs = procs[i];
    /* every memory kept: the default limit (10,000 per namespace) would prune */
    max_memories = (uint64_t)max_procs * per + recall_n + 1;
    mkdir(dir, 0755);
    {
        size_t n = (size_t)max_procs * per;
        double t0 = bench_now();
        texts_make(n > recall_n ? n : recall_n, bench_seed);
        queries = bench_queries_make(nq, bench_seed, BENCH_VOCAB_BASE);
        n_queries = nq;
        fprintf(stderr, "bench_procs: %zu distinct texts made in %.2f s; data in %s; nproc %ld\n",
                n_texts, bench_now() - t0, dir, nproc);
    }
    {
        struct statfs sf;
        const char *fs = statfs(dir, &sf) == 0 ? bench_fs_name((long)sf.f_type) : "unknown";
        printf("{\"bench\":\"procs\",\"part\":\"meta\",\"per\":%zu,\"texts\":%zu,"
               "\"nproc\":%ld,\"fs\":\"%s\",\"sqlite\":\"%s\",\"cairn\":\"%s\",\"seed\":%" PRIu64
               "}\n", per, n_texts, nproc, fs, sqlite3_libversion(), CAIRN_VERSION_STRING,
               bench_seed);
    }
    if (do_cairn || do_sqlite) {
        fprintf(stderr, "writers: N processes x %zu memories into one store (cairn: "
                "cairn_mem_store, durability batch; sqlite: WAL, synchronous NORMAL, "
                "busy_timeout 5000, FTS5, one row per transaction)\n", per);
        fprintf(stderr, "  %-6s %5s %12s %12s %9s %7s %19s\n", "engine", "procs", "memories/s",
                "(loop only)", "failures", "busy", "found/expected");
        for (int i = 0; i < n_procs; i++) {
            if (do_cairn)
                writers(ENG_CAIRN, procs[i], dir);
            if (do_sqlite)
                writers(ENG_SQLITE, procs[i], dir);
        }
        {
            const wrun *c1 = wrun_find(ENG_CAIRN, 1), *c16 = wrun_find(ENG_CAIRN, 16),
                       *s16 = wrun_find(ENG_SQLITE, 16);
            if (c1 && c16)
                target_line("cairn16_vs_cairn1", (c16->done / c16->secs) / (c1->done / c1->secs),
                            1.0, 1, c16->failed + c1->failed);
            if (c16 && s16)
                target_line("cairn16_vs_sqlite16",
                            (c16->done / c16->secs) / (s16->done / s16->secs), 2.0, 1,
                            c16->failed);
            for (int i = 0; i < n_wruns; i++) {
                const wrun *w = &wruns[i];
                if (w->engine != ENG_CAIRN)
                    continue;
                printf("{\"bench\":\"procs\",\"part\":\"target\",\"name\":\"cairn%d_failures\","
                       "\"value\":%" PRIu64 ",\"threshold\":0,\"at_least\":false,\"pass\":%s}\n",
                       w->procs, w->failed, w->failed == 0 ? "true" : "false");
                fprintf(stderr, "  cairn%-2d failures %-13s %7" PRIu64 "   == 0     %s\n", w->procs,
                        "", w->failed, w->failed == 0 ? "PASS" : "FAIL");
            }
        }
    }
    if (do_recall)
        recall_bench(dir, recall_n, phase_secs, rounds);
    return 0;
usage:
    bench_die("usage: bench_procs [--procs 1,4,16] [--per N] [--recall-n N] [--queries Q] "
              "[--rate R] [--phase-seconds S] [--rounds R] [--only writers|cairn|sqlite|recall] "
              "[--dir DIR] [--seed S]");
}
