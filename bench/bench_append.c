/*
 * bench_append.c - what appending to a cairn store costs, side by side with
 * the file system underneath it and with SQLite.
 *
 * Every contender gets the same bytes: `--records` agent-event-like JSON
 * payloads of about 200 bytes, each with an 8-byte namespace ("agent-07"),
 * generated once up front from a fixed seed. "Bytes" below always means
 * these user bytes (namespace + payload), never what a contender writes on
 * top (record headers, checksums, B-tree pages), so MB/s figures compare.
 * MB = 10^6 bytes.
 *
 * Measurements (the `name` of each JSON line; --only takes these names, or
 * the groups "cairn" and "sqlite"):
 *   ceiling          buffered write() of the bytes into a plain file through a
 *                    64 KiB user buffer; no fsync in the loop (the fdatasync
 *                    that follows is reported as close_seconds)
 *   cairn_none       cairn_append, one record per call, durability none,
 *                    background thread on; loop time, close time apart
 *   cairn_batch      the same with durability batch (batch_ms 50)
 *   cairn_full1      durability full, one thread, one record per call: every
 *                    append returns after an fdatasync
 *   bare_fsync       the floor for cairn_full1: write() + fdatasync() per record
 *                    into a plain file; the two run interleaved in blocks of
 *                    500 records so drift in fsync latency bills both alike
 *   cairn_full16     durability full, 16 threads appending at once (group commit),
 *                    interleaved in rounds with cairn_full1_paired (one writer,
 *                    its own store), which the 16-writer target divides by
 *   cairn_batch_api  cairn_append_batch, 1000 records per call, durability full
 *   cairn_seal       background 0, none mode; append 64 MiB of log, cairn_sync,
 *                    then time cairn_roll(), which seals the closed segment
 *                    inline (zstd blocks, fsync, manifest swap); repeated up to
 *                    --seal-mb; MB/s of raw log sealed, wall and thread-CPU
 *   sqlite_<sync>_<n> SQLite, WAL, synchronous NORMAL / FULL, n = 1 or 1000
 *                    rows per transaction, table
 *                    (seq INTEGER PRIMARY KEY, ts, type, ns TEXT, payload TEXT)
 *
 * fsync-bound runs (cairn_full1, bare_fsync, cairn_full16, sqlite_*) stop at
 * --full-records records or --cap-seconds, whichever comes first, and report
 * the rate of what they did.
 *
 * Output: one JSON object per line on stdout (a "meta" line, one line per
 * measurement, one per target); the human table and PASS/FAIL lines on
 * stderr. The data directory must be on a real disk (it refuses tmpfs):
 * --dir, else $BENCH_DIR, else build/bench-tmp. Public API only; the data set
 * and the result table live in bench_util.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "cairn.h"

#define DEFAULT_SEED 0xCA1E5EEDull
#define CEIL_BUF (64u * 1024u)
#define SEAL_SEGMENT (64ull << 20)
#define STALL_S 0.005

/* ---- options ------------------------------------------------------------ */

typedef struct opts {
    size_t records;      /* records for the unbounded runs */
    size_t full_records; /* cap for fsync-bound runs */
    double cap_seconds;  /* time cap for fsync-bound runs */
    int threads;         /* writers for cairn_full16 */
    int repeat;          /* repetitions of the short runs (ceiling, none, batch) */
    size_t batch;        /* records per cairn_append_batch / SQLite transaction */
    uint64_t seal_mb;    /* MB of log to seal */
    uint64_t seed;
    const char *dir;
    const char *only;    /* comma list, NULL = everything */
} opts;

static opts O = {1000000, 20000, 10.0, 16, 3, 1000, 256, DEFAULT_SEED, NULL, NULL};

static int want(const char *name)
{
    const char *p = O.only;
    size_t n = strlen(name);
    if (p == NULL)
        return 1;
    while (*p) {
        size_t len = strcspn(p, ",");
        if ((len == n && memcmp(p, name, n) == 0) ||
            (len == 5 && memcmp(p, "cairn", 5) == 0 && strncmp(name, "cairn_", 6) == 0) ||
            (len == 6 && memcmp(p, "sqlite", 6) == 0 && strncmp(name, "sqlite_", 7) == 0) ||
            (len == 3 && memcmp(p, "all", 3) == 0))
            return 1;
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

static double load_at_start;

/* Flush everything the previous run left dirty so it does not bill this one. */
static void settle(void)
{
    sync();
}

static void path_in(char *out, size_t cap, const char *leaf)
{
    snprintf(out, cap, "%s/%s", O.dir, leaf);
}

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* ---- plain files ------------------------------------------------------------ */

static void bench_ceiling(const dataset *d, int rep)
{
    char path[4096];
    char *buf = bench_malloc(CEIL_BUF);
    size_t blen = 0;
    path_in(path, sizeof path, "ceiling.dat");
    settle();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        bench_die("%s: %s", path, strerror(errno));
    result *r = bench_result_new("ceiling");
    r->rep = rep;
    double c0 = bench_cpu(CLOCK_PROCESS_CPUTIME_ID), t0 = bench_now();
    for (size_t i = 0; i < d->n; i++) {
        const cairn_entry *e = &d->e[i];
        size_t need = e->ns_len + e->json_len;
        if (blen + need > CEIL_BUF) {
            bench_write_all(fd, buf, blen);
            blen = 0;
        }
        memcpy(buf + blen, e->ns, e->ns_len);
        memcpy(buf + blen + e->ns_len, e->json, e->json_len);
        blen += need;
    }
    bench_write_all(fd, buf, blen);
    double t1 = bench_now();
    r->cpu_secs = bench_cpu(CLOCK_PROCESS_CPUTIME_ID) - c0;
    if (fdatasync(fd) != 0)
        bench_die("fdatasync: %s", strerror(errno));
    close(fd);
    r->close_secs = bench_now() - t1;
    r->secs = t1 - t0;
    r->records = d->n;
    r->bytes = d->bytes;
    snprintf(r->note, sizeof r->note, "  (fdatasync after: %.3f s)", r->close_secs);
    bench_emit(r);
    free(buf);
    unlink(path);
}

/* ---- cairn ------------------------------------------------------------------ */

static cairn_db *store_open(const char *leaf, cairn_durability dur, int background,
                            uint64_t segment_size, double *open_secs)
{
    char path[4096], err[CAIRN_ERRMSG_MAX];
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    path_in(path, sizeof path, leaf);
    bench_rm_rf(path);
    o.create = 1;
    o.durability = dur;
    o.batch_ms = 50;
    o.background = background;
    o.segment_size = segment_size;
    double t0 = bench_now();
    int rc = cairn_open(&db, path, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        bench_die("cairn_open %s: %s (%s)", path, cairn_strerror(rc), err);
    if (open_secs)
        *open_secs = bench_now() - t0;
    return db;
}

static void store_remove(const char *leaf)
{
    char path[4096];
    path_in(path, sizeof path, leaf);
    bench_rm_rf(path);
}

static void expect_records(cairn_db *db, uint64_t n, const char *what)
{
    cairn_stats st;
    bench_check(db, cairn_stats_get(db, &st), "cairn_stats_get");
    if (st.records != n)
        bench_die("%s: store has %" PRIu64 " records, appended %" PRIu64, what, st.records, n);
}

/* Single-record appends of the whole data set: none and batch. */
static void bench_cairn_loop(const dataset *d, const char *name, cairn_durability dur, int rep)
{
    settle();
    result *r = bench_result_new(name);
    r->rep = rep;
    cairn_db *db = store_open(name, dur, 1, 0, &r->open_secs);
    /* Stalls: the loop is timed in chunks of 1024 appends (normally well
     * under a millisecond); chunks over STALL_S are counted and summed, which
     * shows what segment rolls cost the appending thread. */
    double stall = 0, worst = 0;
    int stalls = 0;
    double c0 = bench_cpu(CLOCK_PROCESS_CPUTIME_ID), t0 = bench_now(), tc = t0;
    for (size_t i = 0; i < d->n; i++) {
        int rc = cairn_append(db, &d->e[i], NULL);
        if (rc != CAIRN_OK)
            bench_check(db, rc, "cairn_append");
        if ((i & 1023) == 1023) {
            double t = bench_now(), dt = t - tc;
            tc = t;
            if (dt > worst)
                worst = dt;
            if (dt > STALL_S) {
                stalls++;
                stall += dt;
            }
        }
    }
    double t1 = bench_now();
    r->cpu_secs = bench_cpu(CLOCK_PROCESS_CPUTIME_ID) - c0;
    expect_records(db, d->n, name);
    cairn_stats st;
    bench_check(db, cairn_stats_get(db, &st), "cairn_stats_get");
    double t2 = bench_now();
    bench_check(NULL, cairn_close(db), "cairn_close");
    r->close_secs = bench_now() - t2;
    r->secs = t1 - t0;
    r->records = d->n;
    r->bytes = d->bytes;
    snprintf(r->extra, sizeof r->extra,
             ",\"log_bytes\":%" PRIu64 ",\"segments_sealed_at_end\":%" PRIu64
             ",\"stalls\":%d,\"stall_seconds\":%.4f,\"worst_1024_seconds\":%.4f",
             st.log_bytes, st.segments_sealed, stalls, stall, worst);
    snprintf(r->note, sizeof r->note, "  (close %.3f s; %d stalls >5 ms = %.3f s)",
             r->close_secs, stalls, stall);
    bench_emit(r);
    store_remove(name);
}

/* cairn_full1 and its floor, bare_fsync, run interleaved in blocks of
 * FULL_BLOCK records (bare, cairn, bare, ...) so that drift in the device's
 * fsync latency or in the machine's load bills both alike. Each side stops at
 * --full-records records or --cap-seconds of its own time. */
#define FULL_BLOCK 500

static void bench_full1_and_bare(const dataset *d, int do_bare, int do_cairn)
{
    char path[4096], rec[1024];
    size_t n = min_sz(O.full_records, d->n), ib = 0, ic = 0;
    double tb = 0, tc = 0, cb = 0, cc = 0, open_s = 0;
    uint64_t bytes_b = 0, bytes_c = 0;
    int fd = -1;
    cairn_db *db = NULL;
    path_in(path, sizeof path, "bare_fsync.dat");
    settle();
    if (do_bare) {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            bench_die("%s: %s", path, strerror(errno));
    }
    if (do_cairn)
        db = store_open("cairn_full1", CAIRN_DURABILITY_FULL, 1, 0, &open_s);
    for (;;) {
        int more_b = do_bare && ib < n && tb < O.cap_seconds;
        int more_c = do_cairn && ic < n && tc < O.cap_seconds;
        if (!more_b && !more_c)
            break;
        if (more_b) {
            size_t end = min_sz(ib + FULL_BLOCK, n);
            double c0 = bench_cpu(CLOCK_PROCESS_CPUTIME_ID), t0 = bench_now();
            for (; ib < end && bench_now() - t0 + tb < O.cap_seconds; ib++) {
                const cairn_entry *e = &d->e[ib];
                memcpy(rec, e->ns, e->ns_len);
                memcpy(rec + e->ns_len, e->json, e->json_len);
                bench_write_all(fd, rec, e->ns_len + e->json_len);
                if (fdatasync(fd) != 0)
                    bench_die("fdatasync: %s", strerror(errno));
                bytes_b += e->ns_len + e->json_len;
            }
            tb += bench_now() - t0;
            cb += bench_cpu(CLOCK_PROCESS_CPUTIME_ID) - c0;
        }
        if (more_c) {
            size_t end = min_sz(ic + FULL_BLOCK, n);
            double c0 = bench_cpu(CLOCK_PROCESS_CPUTIME_ID), t0 = bench_now();
            for (; ic < end && bench_now() - t0 + tc < O.cap_seconds; ic++) {
                int rc = cairn_append(db, &d->e[ic], NULL);
                if (rc != CAIRN_OK)
                    bench_check(db, rc, "cairn_append");
                bytes_c += d->e[ic].ns_len + d->e[ic].json_len;
            }
            tc += bench_now() - t0;
            cc += bench_cpu(CLOCK_PROCESS_CPUTIME_ID) - c0;
        }
    }
    if (do_bare) {
        close(fd);
        unlink(path);
        result *r = bench_result_new("bare_fsync");
        r->secs = tb;
        r->cpu_secs = cb;
        r->records = ib;
        r->bytes = bytes_b;
        snprintf(r->extra, sizeof r->extra, ",\"interleaved\":%d,\"block\":%d", do_cairn,
                 FULL_BLOCK);
        snprintf(r->note, sizeof r->note, "  (%.1f us per write+fdatasync)",
                 tb / (double)ib * 1e6);
        bench_emit(r);
    }
    if (do_cairn) {
        result *r = bench_result_new("cairn_full1");
        expect_records(db, ic, "cairn_full1");
        double t2 = bench_now();
        bench_check(NULL, cairn_close(db), "cairn_close");
        r->close_secs = bench_now() - t2;
        r->open_secs = open_s;
        r->secs = tc;
        r->cpu_secs = cc;
        r->records = ic;
        r->bytes = bytes_c;
        snprintf(r->extra, sizeof r->extra, ",\"interleaved\":%d,\"block\":%d", do_bare,
                 FULL_BLOCK);
        snprintf(r->note, sizeof r->note, "  (%.1f us per append)", tc / (double)ic * 1e6);
        bench_emit(r);
        store_remove("cairn_full1");
    }
}

/* cairn_full16 runs interleaved with a second one-writer run in rounds
 * (16 writers append BLOCK16 records each, then one writer FULL_BLOCK into
 * a store of its own), for the same reason as cairn_full1 with bare_fsync:
 * the ratio of the two compares rates measured under the same drift of the
 * device's fsync latency and of the machine's load. That one-writer run is
 * reported as cairn_full1_paired, and the 16-writer target divides by it. */
#define BLOCK16 250

typedef struct writer {
    pthread_t tid;
    cairn_db *db;
    const dataset *d;
    size_t from, step, n; /* records from, from+step, ... at most n of them */
    size_t done;
    uint64_t bytes;
    pthread_barrier_t *go, *end;
    atomic_int *stop;
} writer;

static void *writer_main(void *arg)
{
    writer *w = arg;
    for (;;) {
        pthread_barrier_wait(w->go);
        if (atomic_load(w->stop))
            return NULL;
        for (size_t k = 0; k < BLOCK16 && w->done < w->n; k++) {
            const cairn_entry *e = &w->d->e[w->from + w->done * w->step];
            int rc = cairn_append(w->db, e, NULL);
            if (rc != CAIRN_OK)
                bench_check(w->db, rc, "cairn_append (thread)");
            w->done++;
            w->bytes += e->ns_len + e->json_len;
        }
        pthread_barrier_wait(w->end);
    }
}

static void bench_cairn_full16(const dataset *d)
{
    int nt = O.threads;
    /* Enough work that group commit can show; the time cap bounds it. */
    size_t total = min_sz(O.full_records * (size_t)nt, d->n), n1 = min_sz(O.full_records, d->n);
    size_t i1 = 0;
    pthread_barrier_t go, end;
    atomic_int stop = 0;
    writer *w = bench_malloc((size_t)nt * sizeof *w);
    char name[32];
    double t16 = 0, c16 = 0, t1 = 0, c1 = 0, open1 = 0;
    uint64_t bytes1 = 0;
    snprintf(name, sizeof name, "cairn_full%d", nt);
    settle();
    result *r = bench_result_new(name);
    cairn_db *db = store_open(name, CAIRN_DURABILITY_FULL, 1, 0, &r->open_secs);
    cairn_db *db1 = store_open("cairn_full1_paired", CAIRN_DURABILITY_FULL, 1, 0, &open1);
    pthread_barrier_init(&go, NULL, (unsigned)nt + 1);
    pthread_barrier_init(&end, NULL, (unsigned)nt + 1);
    for (int t = 0; t < nt; t++) {
        memset(&w[t], 0, sizeof w[t]);
        w[t].db = db;
        w[t].d = d;
        w[t].from = (size_t)t;
        w[t].step = (size_t)nt;
        w[t].n = total / (size_t)nt;
        w[t].go = &go;
        w[t].end = &end;
        w[t].stop = &stop;
        if (pthread_create(&w[t].tid, NULL, writer_main, &w[t]) != 0)
            bench_die("pthread_create failed");
    }
    for (;;) {
        int more16 = w[0].done < w[0].n && t16 < O.cap_seconds;
        int more1 = i1 < n1 && t1 < O.cap_seconds;
        if (!more16 && !more1)
            break;
        if (more16) {
            double c0 = bench_cpu(CLOCK_PROCESS_CPUTIME_ID), t0 = bench_now();
            pthread_barrier_wait(&go);
            pthread_barrier_wait(&end);
            t16 += bench_now() - t0;
            c16 += bench_cpu(CLOCK_PROCESS_CPUTIME_ID) - c0;
        }
        if (more1) {
            size_t stop1 = min_sz(i1 + FULL_BLOCK, n1);
            double c0 = bench_cpu(CLOCK_PROCESS_CPUTIME_ID), t0 = bench_now();
            for (; i1 < stop1; i1++) {
                int rc = cairn_append(db1, &d->e[i1], NULL);
                if (rc != CAIRN_OK)
                    bench_check(db1, rc, "cairn_append (paired)");
                bytes1 += d->e[i1].ns_len + d->e[i1].json_len;
            }
            t1 += bench_now() - t0;
            c1 += bench_cpu(CLOCK_PROCESS_CPUTIME_ID) - c0;
        }
    }
    atomic_store(&stop, 1);
    pthread_barrier_wait(&go);
    uint64_t n = 0, bytes = 0;
    for (int t = 0; t < nt; t++) {
        pthread_join(w[t].tid, NULL);
        n += w[t].done;
        bytes += w[t].bytes;
    }
    r->secs = t16;
    r->cpu_secs = c16;
    r->records = n;
    r->bytes = bytes;
    pthread_barrier_destroy(&go);
    pthread_barrier_destroy(&end);
    expect_records(db, n, name);
    double t2 = bench_now();
    bench_check(NULL, cairn_close(db), "cairn_close");
    r->close_secs = bench_now() - t2;
    snprintf(r->extra, sizeof r->extra, ",\"threads\":%d,\"interleaved\":1,\"block\":%d", nt,
             BLOCK16 * nt);
    snprintf(r->note, sizeof r->note, "  (%d threads)", nt);
    bench_emit(r);
    store_remove(name);

    result *p = bench_result_new("cairn_full1_paired");
    expect_records(db1, i1, "cairn_full1_paired");
    t2 = bench_now();
    bench_check(NULL, cairn_close(db1), "cairn_close");
    p->close_secs = bench_now() - t2;
    p->open_secs = open1;
    p->secs = t1;
    p->cpu_secs = c1;
    p->records = i1;
    p->bytes = bytes1;
    snprintf(p->extra, sizeof p->extra, ",\"interleaved\":1,\"block\":%d", FULL_BLOCK);
    snprintf(p->note, sizeof p->note, "  (%.1f us per append, interleaved with %s)",
             t1 / (double)i1 * 1e6, name);
    bench_emit(p);
    store_remove("cairn_full1_paired");
    free(w);
}

static void bench_cairn_batch_api(const dataset *d)
{
    settle();
    result *r = bench_result_new("cairn_batch_api");
    cairn_db *db = store_open("cairn_batch_api", CAIRN_DURABILITY_FULL, 1, 0, &r->open_secs);
    double c0 = bench_cpu(CLOCK_PROCESS_CPUTIME_ID), t0 = bench_now();
    size_t calls = 0;
    for (size_t i = 0; i < d->n; i += O.batch) {
        size_t k = min_sz(O.batch, d->n - i);
        int rc = cairn_append_batch(db, &d->e[i], k, NULL);
        if (rc != CAIRN_OK)
            bench_check(db, rc, "cairn_append_batch");
        calls++;
    }
    double t1 = bench_now();
    r->cpu_secs = bench_cpu(CLOCK_PROCESS_CPUTIME_ID) - c0;
    expect_records(db, d->n, "cairn_batch_api");
    double t2 = bench_now();
    bench_check(NULL, cairn_close(db), "cairn_close");
    r->close_secs = bench_now() - t2;
    r->secs = t1 - t0;
    r->records = d->n;
    r->bytes = d->bytes;
    snprintf(r->extra, sizeof r->extra, ",\"records_per_call\":%zu,\"calls\":%zu", O.batch, calls);
    snprintf(r->note, sizeof r->note, "  (%zu per call, %.2f ms per commit)", O.batch,
             r->secs / (double)calls * 1e3);
    bench_emit(r);
    store_remove("cairn_batch_api");
}

/* Sealing: with background = 0 a roll seals the closed segment inline, so
 * the time of cairn_roll() after a cairn_sync() is what sealing costs
 * (compress, write, fsync the .seg, swap the manifest) plus starting the next
 * segment, which is small and is billed to sealing here. */
static void bench_cairn_seal(const dataset *d)
{
    uint64_t target = O.seal_mb * 1000000ull;
    settle();
    result *r = bench_result_new("cairn_seal");
    /* A segment size above one round's worth, so only our rolls happen. */
    cairn_db *db = store_open("cairn_seal", CAIRN_DURABILITY_NONE, 0, 4 * SEAL_SEGMENT,
                              &r->open_secs);
    cairn_stats st0, st;
    double wall = 0, cpu = 0, sync_s = 0, worst = 0;
    uint64_t raw = 0, sealed = 0, recs = 0, user_bytes = 0;
    size_t i = 0;
    int rounds = 0;
    bench_check(db, cairn_stats_get(db, &st0), "cairn_stats_get");
    while (raw < target) {
        uint64_t log0 = st0.log_bytes;
        for (;;) {
            const cairn_entry *e = &d->e[i % d->n];
            int rc = cairn_append(db, e, NULL);
            if (rc != CAIRN_OK)
                bench_check(db, rc, "cairn_append");
            user_bytes += e->ns_len + e->json_len;
            recs++;
            i++;
            if ((i & 4095) == 0) {
                bench_check(db, cairn_stats_get(db, &st), "cairn_stats_get");
                if (st.log_bytes - log0 >= SEAL_SEGMENT)
                    break;
            }
        }
        double s0 = bench_now();
        bench_check(db, cairn_sync(db), "cairn_sync");
        sync_s += bench_now() - s0;
        double c0 = bench_cpu(CLOCK_THREAD_CPUTIME_ID), t0 = bench_now();
        bench_check(db, cairn_roll(db), "cairn_roll");
        double dt = bench_now() - t0;
        cpu += bench_cpu(CLOCK_THREAD_CPUTIME_ID) - c0;
        wall += dt;
        if (dt > worst)
            worst = dt;
        bench_check(db, cairn_stats_get(db, &st), "cairn_stats_get");
        if (st.segments_closed != 0)
            bench_die("cairn_seal: %" PRIu64 " segments still closed after an inline roll",
                st.segments_closed);
        raw += st.sealed_raw_bytes - st0.sealed_raw_bytes;
        sealed += st.sealed_bytes - st0.sealed_bytes;
        st0 = st;
        rounds++;
    }
    /* cairn_seal() with nothing left to seal: the fixed cost of asking. */
    double t0 = bench_now();
    bench_check(db, cairn_seal(db), "cairn_seal");
    double seal_noop = bench_now() - t0;
    bench_check(NULL, cairn_close(db), "cairn_close");
    r->secs = wall;
    r->cpu_secs = cpu;
    r->records = recs;
    r->bytes = raw; /* MB/s here is raw log bytes sealed per second */
    snprintf(r->extra, sizeof r->extra,
             ",\"raw_log_bytes\":%" PRIu64 ",\"sealed_bytes\":%" PRIu64
             ",\"compression_ratio\":%.3f,\"user_bytes\":%" PRIu64
             ",\"segments\":%d,\"mb_per_cpu_s\":%.2f,\"worst_roll_seconds\":%.4f"
             ",\"sync_before_roll_seconds\":%.4f,\"seal_noop_seconds\":%.6f",
             raw, sealed, sealed ? (double)raw / (double)sealed : 0.0, user_bytes, rounds,
             cpu > 0 ? (double)raw / cpu / 1e6 : 0.0, worst, sync_s, seal_noop);
    snprintf(r->note, sizeof r->note, "  (%d x 64 MiB; %.1f MB/s per CPU-s; ratio %.2fx)", rounds,
             cpu > 0 ? (double)raw / cpu / 1e6 : 0.0, sealed ? (double)raw / (double)sealed : 0.0);
    bench_emit(r);
    store_remove("cairn_seal");
}

/* ---- SQLite ---------------------------------------------------------------- */

static void sql_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        bench_die("sqlite: %s: %s", sql, msg ? msg : "?");
}

static void sql_step(sqlite3 *db, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE)
        bench_die("sqlite step: %s", sqlite3_errmsg(db));
    sqlite3_reset(st);
}

static void bench_sqlite(const dataset *d, int full, size_t per_txn)
{
    char name[32], path[4096], leaf[64];
    snprintf(name, sizeof name, "sqlite_%s_%zu", full ? "full" : "normal", per_txn);
    if (!want(name))
        return;
    snprintf(leaf, sizeof leaf, "%s.db", name);
    path_in(path, sizeof path, leaf);
    /* One row per transaction is fsync- or syscall-bound: cap it. */
    size_t n = per_txn == 1 ? min_sz(full ? O.full_records : d->n, d->n) : d->n;
    char side[4200];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    settle();
    result *r = bench_result_new(name);
    sqlite3 *db = NULL;
    sqlite3_stmt *ins = NULL, *begin = NULL, *commit = NULL;
    double t0 = bench_now();
    if (sqlite3_open(path, &db) != SQLITE_OK)
        bench_die("sqlite open %s: %s", path, sqlite3_errmsg(db));
    sql_exec(db, "PRAGMA journal_mode=WAL");
    sql_exec(db, full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
    sql_exec(db, "CREATE TABLE events(seq INTEGER PRIMARY KEY, ts INTEGER, type INTEGER, "
                 "ns TEXT, payload TEXT)");
    if (sqlite3_prepare_v2(db, "INSERT INTO events(seq,ts,type,ns,payload) VALUES(?,?,?,?,?)", -1,
                           &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "BEGIN", -1, &begin, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "COMMIT", -1, &commit, NULL) != SQLITE_OK)
        bench_die("sqlite prepare: %s", sqlite3_errmsg(db));
    r->open_secs = bench_now() - t0;
    uint64_t bytes = 0;
    size_t i = 0;
    double c0 = bench_cpu(CLOCK_PROCESS_CPUTIME_ID);
    t0 = bench_now();
    double t = t0;
    while (i < n && t - t0 < O.cap_seconds * (per_txn == 1 && !full ? 3 : 1)) {
        size_t k = min_sz(per_txn, n - i);
        sql_step(db, begin);
        for (size_t j = 0; j < k; j++, i++) {
            const cairn_entry *e = &d->e[i];
            sqlite3_bind_int64(ins, 1, (sqlite3_int64)(i + 1));
            sqlite3_bind_int64(ins, 2, d->ts[i]);
            sqlite3_bind_int(ins, 3, e->type);
            sqlite3_bind_text(ins, 4, e->ns, (int)e->ns_len, SQLITE_STATIC);
            sqlite3_bind_text(ins, 5, e->json, (int)e->json_len, SQLITE_STATIC);
            sql_step(db, ins);
            bytes += e->ns_len + e->json_len;
        }
        sql_step(db, commit);
        t = bench_now();
    }
    r->secs = t - t0;
    r->cpu_secs = bench_cpu(CLOCK_PROCESS_CPUTIME_ID) - c0;
    r->records = i;
    r->bytes = bytes;
    sqlite3_finalize(ins);
    sqlite3_finalize(begin);
    sqlite3_finalize(commit);
    double t2 = bench_now();
    if (sqlite3_close(db) != SQLITE_OK)
        bench_die("sqlite close failed");
    r->close_secs = bench_now() - t2;
    snprintf(r->extra, sizeof r->extra, ",\"rows_per_txn\":%zu", per_txn);
    snprintf(r->note, sizeof r->note, "  (%zu rows/txn%s)", per_txn,
             i < n ? ", time-capped" : "");
    bench_emit(r);
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

/* ---- targets ---------------------------------------------------------------- */

static int n_fail, n_pass;

static void target(const char *id, const char *what, double value, double threshold,
                   const char *unit)
{
    int pass = value >= threshold;
    pass ? n_pass++ : n_fail++;
    printf("{\"bench\":\"append\",\"target\":\"%s\",\"value\":%.4f,\"threshold\":%.4f,"
           "\"ratio_to_threshold\":%.3f,\"pass\":%s}\n",
           id, value, threshold, threshold > 0 ? value / threshold : 0.0,
           pass ? "true" : "false");
    fprintf(stderr, "%s  %-52s %12.3f %-8s (target >= %g, %.2fx of it)\n",
            pass ? "PASS" : "FAIL", what, value, unit, threshold,
            threshold > 0 ? value / threshold : 0.0);
}

static void targets(void)
{
    const result *ceil = bench_find("ceiling"), *bare = bench_find("bare_fsync"), *f1 = bench_find("cairn_full1");
    const result *api = bench_find("cairn_batch_api"), *seal = bench_find("cairn_seal");
    char name16[32];
    snprintf(name16, sizeof name16, "cairn_full%d", O.threads);
    const result *f16 = bench_find(name16), *f1p = bench_find("cairn_full1_paired");
    fprintf(stderr, "\n%-18s %9s %9s %12s %9s %9s %8s\n", "name", "records", "seconds",
            "records/s", "MB/s", "close s", "CPU s");
    for (int i = 0; i < bench_n_results; i++) {
        double lo, hi;
        int cnt, seen = 0;
        for (int j = 0; j < i; j++)
            seen |= strcmp(bench_results[j].name, bench_results[i].name) == 0;
        if (seen)
            continue;
        const result *r = bench_find_stats(bench_results[i].name, &lo, &hi, &cnt);
        char cl[32] = "-", sp[64] = "";
        if (r->close_secs >= 0)
            snprintf(cl, sizeof cl, "%.3f", r->close_secs);
        if (cnt > 1)
            snprintf(sp, sizeof sp, "  median of %d, %.0f..%.0f", cnt, lo, hi);
        fprintf(stderr, "%-18s %9" PRIu64 " %9.3f %12.0f %9.1f %9s %8.2f%s\n", r->name,
                r->records, r->secs, bench_rate(r), bench_mbps(r), cl, r->cpu_secs, sp);
    }
    fprintf(stderr, "\ntargets:\n");
    for (int k = 0; k < 2; k++) {
        const char *nm = k == 0 ? "cairn_none" : "cairn_batch";
        const result *r = bench_find(nm);
        char id[64], what[96];
        if (r == NULL)
            continue;
        snprintf(id, sizeof id, "%s_rate", nm);
        snprintf(what, sizeof what, "%s records/s (append loop)", nm);
        target(id, what, bench_rate(r), 2e6, "rec/s");
        if (ceil) {
            snprintf(id, sizeof id, "%s_vs_ceiling", nm);
            snprintf(what, sizeof what, "%s / buffered write() ceiling", nm);
            target(id, what, bench_rate(r) / bench_rate(ceil), 0.5, "x");
        }
    }
    if (f1 && bare)
        target("full1_vs_bare_fsync", "cairn full 1 writer / bare write+fdatasync",
               bench_rate(f1) / bench_rate(bare), 0.8, "x");
    if (f16 && (f1p || f1)) { /* the one-writer run paired with it, if there is one */
        char what[96];
        snprintf(what, sizeof what, "cairn full %d writers / full 1 writer%s", O.threads,
                 f1p ? " (paired)" : "");
        target("full16_vs_full1", what, bench_rate(f16) / bench_rate(f1p ? f1p : f1), 8.0, "x");
    }
    if (api) {
        char what[96];
        snprintf(what, sizeof what, "cairn_append_batch %zu/commit, full", O.batch);
        target("batch_api_rate", what, bench_rate(api), 5e5, "rec/s");
    }
    if (seal)
        target("seal_mb_per_s", "sealing, MB of log per second (one core, wall)", bench_mbps(seal), 200,
               "MB/s");
    fprintf(stderr, "%d passed, %d failed\n", n_pass, n_fail);
}

/* ---- main -------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_append [--records N] [--dir DIR] [--only NAME[,NAME...]]\n"
            "                    [--full-records N] [--cap-seconds S] [--threads N]\n"
            "                    [--batch N] [--seal-mb MB] [--seed N] [--repeat N]\n"
            "names: ceiling cairn_none cairn_batch cairn_full1 bare_fsync cairn_full16\n"
            "       cairn_batch_api cairn_seal sqlite_normal_1 sqlite_normal_1000\n"
            "       sqlite_full_1 sqlite_full_1000; groups: cairn sqlite all\n");
    exit(2);
}

static uint64_t num_arg(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end || end == s)
        usage();
    return v;
}

int main(int argc, char **argv)
{
    const char *dir = getenv("BENCH_DIR");

    bench_name = "bench_append";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            usage();
        if (v == NULL)
            usage();
        if (strcmp(a, "--records") == 0)
            O.records = num_arg(v);
        else if (strcmp(a, "--full-records") == 0)
            O.full_records = num_arg(v);
        else if (strcmp(a, "--cap-seconds") == 0)
            O.cap_seconds = (double)num_arg(v);
        else if (strcmp(a, "--repeat") == 0)
            O.repeat = (int)num_arg(v);
        else if (strcmp(a, "--threads") == 0)
            O.threads = (int)num_arg(v);
        else if (strcmp(a, "--batch") == 0)
            O.batch = num_arg(v);
        else if (strcmp(a, "--seal-mb") == 0)
            O.seal_mb = num_arg(v);
        else if (strcmp(a, "--seed") == 0)
            O.seed = num_arg(v);
        else if (strcmp(a, "--dir") == 0)
            dir = v;
        else if (strcmp(a, "--only") == 0)
            O.only = v;
        else
            usage();
        i++;
    }
    if (O.records == 0 || O.full_records == 0 || O.threads < 1 || O.threads > 1024 ||
        O.repeat < 1 || O.repeat > 9 || O.batch == 0 || O.seal_mb == 0)
        usage();
    if (dir == NULL)
        dir = "build/bench-tmp";

    /* A private directory under the chosen one, on a real disk. */
    static char run_dir[4096];
    mkdir(dir, 0755);
    snprintf(run_dir, sizeof run_dir, "%s/run-%ld", dir, (long)getpid());
    bench_rm_rf(run_dir);
    if (mkdir(run_dir, 0755) != 0)
        bench_die("mkdir %s: %s", run_dir, strerror(errno));
    O.dir = run_dir;
    struct statfs sf;
    if (statfs(run_dir, &sf) != 0)
        bench_die("statfs %s: %s", run_dir, strerror(errno));
    if ((unsigned long)sf.f_type == 0x01021994ul)
        bench_die("%s is on tmpfs: fsync figures would be meaningless; use --dir on a disk", dir);

    getloadavg(&load_at_start, 1);
    if (load_at_start > 1.5)
        fprintf(stderr, "bench_append: warning: load average %.2f, figures will be noisy\n",
                load_at_start);

    dataset d;
    double g0 = bench_now();
    bench_dataset_make(&d, O.records, O.seed);
    bench_seed = O.seed;
    fprintf(stderr,
            "bench_append: %zu records, %.1f MB, %.1f bytes/record avg (ns 8 + json), "
            "generated in %.2f s; dir %s (%s)\n",
            d.n, (double)d.bytes / 1e6, (double)d.bytes / (double)d.n, bench_now() - g0, run_dir,
            bench_fs_name((long)sf.f_type));
    printf("{\"bench\":\"append\",\"meta\":{\"records\":%zu,\"bytes\":%" PRIu64
           ",\"avg_record_bytes\":%.1f,\"seed\":%" PRIu64 ",\"full_records\":%zu,"
           "\"cap_seconds\":%.1f,\"threads\":%d,\"batch\":%zu,\"seal_mb\":%" PRIu64
           ",\"fs\":\"%s\",\"nproc\":%ld,\"load1\":%.2f,\"cairn\":\"%s\",\"sqlite\":\"%s\"}}\n",
           d.n, d.bytes, (double)d.bytes / (double)d.n, O.seed, O.full_records, O.cap_seconds,
           O.threads, O.batch, O.seal_mb, bench_fs_name((long)sf.f_type), sysconf(_SC_NPROCESSORS_ONLN),
           load_at_start, CAIRN_VERSION_STRING, sqlite3_libversion());
    fflush(stdout);

    char name16[32];
    snprintf(name16, sizeof name16, "cairn_full%d", O.threads);
    /* The short runs alternate, so drift bills each alike; the median counts. */
    for (int k = 0; k < O.repeat; k++) {
        int rk = O.repeat > 1 ? k : -1;
        if (want("ceiling"))
            bench_ceiling(&d, rk);
        if (want("cairn_none"))
            bench_cairn_loop(&d, "cairn_none", CAIRN_DURABILITY_NONE, rk);
        if (want("cairn_batch"))
            bench_cairn_loop(&d, "cairn_batch", CAIRN_DURABILITY_BATCH, rk);
    }
    if (O.repeat > 1) {
        static const char *const rep_names[] = {"ceiling", "cairn_none", "cairn_batch"};
        for (size_t k = 0; k < NELEM(rep_names); k++) {
            double lo, hi;
            int cnt;
            const result *m = bench_find_stats(rep_names[k], &lo, &hi, &cnt);
            if (m == NULL)
                continue;
            printf("{\"bench\":\"append\",\"name\":\"%s\",\"summary\":\"median\",\"reps\":%d,"
                   "\"records_per_s\":%.1f,\"mb_per_s\":%.2f,\"records_per_s_min\":%.1f,"
                   "\"records_per_s_max\":%.1f,\"median_rep\":%d}\n",
                   rep_names[k], cnt, bench_rate(m), bench_mbps(m), lo, hi, m->rep);
        }
        fflush(stdout);
    }
    if (want("bare_fsync") || want("cairn_full1"))
        bench_full1_and_bare(&d, want("bare_fsync"), want("cairn_full1"));
    /* "cairn_full16" selects the many-writer run whatever --threads is. */
    if (want(name16) || (O.only && strstr(O.only, "cairn_full16")))
        bench_cairn_full16(&d);
    if (want("cairn_batch_api"))
        bench_cairn_batch_api(&d);
    if (want("cairn_seal"))
        bench_cairn_seal(&d);
    bench_sqlite(&d, 0, 1);
    bench_sqlite(&d, 0, O.batch);
    bench_sqlite(&d, 1, 1);
    bench_sqlite(&d, 1, O.batch);

    targets();
    bench_rm_rf(run_dir);
    free(d.buf);
    free(d.e);
    free(d.ts);
    return 0;
}
