/*
 * test_faults.c - I/O fault injection through cairn_options.io (cairn_sys.h).
 *
 * An injector wraps cairn_io_default(): it counts every call, records the
 * operation and the `site` string of each, and makes exactly one chosen call
 * fail (EIO or ENOSPC), or turns one pwrite into a short write. A fixed
 * workload (create a store with background = 0 and 8 KiB segments, append
 * ~200 records of varied sizes singly and in batches, with syncs, a flush,
 * an explicit roll and seal, reading back, close) is first run without a
 * fault to count its K calls; then once per call N in 1..K and per kind of
 * fault. Each run must:
 *  - surface the failure: some API call returns non-OK (the first one with
 *    the status the errno maps to). A failed close() is the only call the
 *    engine may ignore (the kernel releases the descriptor anyway, and
 *    everything it wrote was synced before); a failed automatic seal (after
 *    an append rolled) may be deferred and stay silent if a later seal
 *    succeeded (no closed segment is left), but an explicit cairn_seal
 *    during which sealing I/O failed must not return CAIRN_OK;
 *  - after a failed data write or data sync, return CAIRN_EDEAD from every
 *    later write call, and never report a write as successful on a dead
 *    handle;
 *  - turn a short write into success: POSIX allows it and the engine must
 *    continue the write, so the run reports no error at all;
 *  - leave a store that reopens WITHOUT faults, as the writer (which
 *    recovers the tail), holding records 1..m with their exact payloads,
 *    including every record whose append and a later sync (or, in `full`,
 *    the append itself) returned OK; cairn_verify finds no problem, neither
 *    through the writer nor through a read-only handle afterwards.
 * A second sweep fails every call of a writer open that has recovery work
 * to do (a torn tail to truncate, orphan files to delete, closed segments
 * to seal): a failing recovery never loses a record.
 * Targeted tests: a failed fdatasync kills the handle (every write call then
 * returns CAIRN_EDEAD) and a reopen recovers; an append that rolls reports
 * CAIRN_OK for the record it committed even when sealing the closed segment
 * fails; cairn_seal reports a failure at each sealing call site.
 *
 * The injector skips the real fsync/fdatasync (it still counts them and can
 * fail them): the engine cannot tell the difference, and the sweep makes
 * thousands of runs, which a real disk would take minutes to sync. For the
 * same reason the stores live in /dev/shm unless TMPDIR is set.
 * Assertion messages name the failing call's number, operation and site;
 * a sweep runs to the end and prints the first failure of each kind, site
 * and operation. CAIRN_FAULTS_TRACE=1 prints the workload's numbered calls.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cairn.h"
#include "cairn_sys.h"
#include "testutil.h"

/* ------------------------------------------------------------------------
 * The injector.
 * ---------------------------------------------------------------------- */

enum { OP_OPEN, OP_OPENAT, OP_CLOSE, OP_PREAD, OP_PWRITE, OP_FSYNC, OP_FDATASYNC,
       OP_FTRUNCATE, OP_RENAME, OP_UNLINK, OP_RESERVE, OP_COUNT };

static const char *const op_names[OP_COUNT] = {
    "open", "openat", "close", "pread", "pwrite", "fsync", "fdatasync", "ftruncate",
    "renameat", "unlinkat", "reserve",
};

enum { FK_ERRNO, FK_SHORT };

typedef struct call_rec {
    int op;
    const char *site; /* the engine's string literal */
} call_rec;

typedef struct inj {
    const cairn_io *real;
    long calls;            /* calls so far */
    /* a fault by call number (1-based; 0 = none) */
    long fail_at;
    int kind;              /* FK_ERRNO or FK_SHORT */
    int err;               /* errno of an FK_ERRNO fault */
    /* or a fault by operation and site */
    const char *fail_site; /* NULL = none */
    int fail_op;
    int persistent;        /* fail every matching call, not only the first */
    /* what happened */
    int fired;             /* faults injected */
    int fired_op;
    const char *fired_site;
    long fired_call;
    /* tracing (counting run) and checking (fault runs) */
    int tracing;
    call_rec *trace;
    size_t ntrace, tcap;
    const call_rec *expect; /* the counting run's trace, to detect divergence */
    size_t nexpect;
    long diverged;          /* first call that differed from `expect`, 0 if none */
} inj;

static void inj_init(inj *j)
{
    memset(j, 0, sizeof *j);
    j->real = cairn_io_default();
}

static int hit(inj *j, int op, const char *site)
{
    int fire = 0;
    j->calls++;
    if (j->tracing) {
        if (j->ntrace == j->tcap) {
            j->tcap = j->tcap ? j->tcap * 2 : 1024;
            j->trace = realloc(j->trace, j->tcap * sizeof *j->trace);
            assert_non_null(j->trace);
        }
        j->trace[j->ntrace].op = op;
        j->trace[j->ntrace].site = site;
        j->ntrace++;
    }
    if (j->expect != NULL && !j->diverged && !j->fired) {
        size_t i = (size_t)(j->calls - 1);
        if (i >= j->nexpect || j->expect[i].op != op || strcmp(j->expect[i].site, site) != 0)
            j->diverged = j->calls;
    }
    if (j->fail_at != 0 && j->fail_at == j->calls)
        fire = j->kind != FK_SHORT || op == OP_PWRITE;
    else if (j->fail_site != NULL && op == j->fail_op && strcmp(site, j->fail_site) == 0)
        fire = j->persistent || !j->fired;
    if (fire) {
        if (!j->fired) {
            j->fired_op = op;
            j->fired_site = site;
            j->fired_call = j->calls;
        }
        j->fired++;
    }
    return fire;
}

static int fail_errno(const inj *j)
{
    errno = j->err ? j->err : EIO;
    return -1;
}

static int w_open(void *u, const char *site, const char *path, int flags, int mode)
{
    inj *j = u;
    if (hit(j, OP_OPEN, site))
        return fail_errno(j);
    return j->real->open(j->real->user, site, path, flags, mode);
}

static int w_openat(void *u, const char *site, int dirfd, const char *path, int flags, int mode)
{
    inj *j = u;
    if (hit(j, OP_OPENAT, site))
        return fail_errno(j);
    return j->real->openat(j->real->user, site, dirfd, path, flags, mode);
}

static int w_close(void *u, const char *site, int fd)
{
    inj *j = u;
    /* Like Linux: the descriptor is released even when close reports an error. */
    int r = j->real->close(j->real->user, site, fd);
    if (hit(j, OP_CLOSE, site))
        return fail_errno(j);
    return r;
}

static ssize_t w_pread(void *u, const char *site, int fd, void *buf, size_t len, off_t off)
{
    inj *j = u;
    if (hit(j, OP_PREAD, site))
        return fail_errno(j);
    return j->real->pread(j->real->user, site, fd, buf, len, off);
}

static ssize_t w_pwrite(void *u, const char *site, int fd, const void *buf, size_t len,
                        off_t off)
{
    inj *j = u;
    if (hit(j, OP_PWRITE, site)) {
        if (j->kind == FK_SHORT && j->fail_at != 0)
            return j->real->pwrite(j->real->user, site, fd, buf, len > 1 ? len / 2 : len, off);
        return fail_errno(j);
    }
    return j->real->pwrite(j->real->user, site, fd, buf, len, off);
}

/* Counted and failable, but never really synced: see the top comment. */
static int w_fsync(void *u, const char *site, int fd)
{
    inj *j = u;
    (void)fd;
    if (hit(j, OP_FSYNC, site))
        return fail_errno(j);
    return 0;
}

static int w_fdatasync(void *u, const char *site, int fd)
{
    inj *j = u;
    (void)fd;
    if (hit(j, OP_FDATASYNC, site))
        return fail_errno(j);
    return 0;
}

static int w_ftruncate(void *u, const char *site, int fd, off_t len)
{
    inj *j = u;
    if (hit(j, OP_FTRUNCATE, site))
        return fail_errno(j);
    return j->real->ftruncate(j->real->user, site, fd, len);
}

static int w_renameat(void *u, const char *site, int dirfd, const char *from, const char *to)
{
    inj *j = u;
    if (hit(j, OP_RENAME, site))
        return fail_errno(j);
    return j->real->renameat(j->real->user, site, dirfd, from, to);
}

static int w_unlinkat(void *u, const char *site, int dirfd, const char *path)
{
    inj *j = u;
    if (hit(j, OP_UNLINK, site))
        return fail_errno(j);
    return j->real->unlinkat(j->real->user, site, dirfd, path);
}

static int w_reserve(void *u, const char *site, int fd, off_t off, off_t len)
{
    inj *j = u;
    if (hit(j, OP_RESERVE, site))
        return fail_errno(j);
    return j->real->reserve(j->real->user, site, fd, off, len);
}

static cairn_io inj_table(inj *j)
{
    cairn_io io = {w_open,      w_openat,    w_close,    w_pread,    w_pwrite, w_fsync,
                   w_fdatasync, w_ftruncate, w_renameat, w_unlinkat, j,        w_reserve};
    return io;
}

/* "EIO at call 17 (fdatasync at site \"segment.fdatasync\")" */
static const char *describe(const inj *j, char *buf, size_t len)
{
    const char *what = j->kind == FK_SHORT ? "short write" : j->err == ENOSPC ? "ENOSPC" : "EIO";
    if (j->fired)
        snprintf(buf, len, "%s at call %ld (%s at site \"%s\")", what, j->fired_call,
                 op_names[j->fired_op], j->fired_site);
    else
        snprintf(buf, len, "%s at call %ld (not reached)", what, j->fail_at);
    return buf;
}

/* ------------------------------------------------------------------------
 * Entries: entry k has a payload naming k, a size that varies with k (a few
 * larger than a segment), a namespace, a type and sometimes a trailer.
 * ---------------------------------------------------------------------- */

#define JSON_MAX 10000

typedef struct entry_buf {
    char ns[16];
    char json[JSON_MAX];
    uint8_t bin[40];
    cairn_entry e;
} entry_buf;

static size_t pad_of(unsigned k)
{
    if (k % 50 == 25)
        return 8500; /* bigger than a whole segment */
    return (size_t)(k * 37u) % 400u;
}

static void make_entry(unsigned k, entry_buf *b)
{
    size_t n, pad = pad_of(k), bl = k % 4 == 1 ? 5 + k % 31 : 0;
    int ns_len = k % 3 == 0 ? 0 : snprintf(b->ns, sizeof b->ns, "f%u", k % 7);
    n = (size_t)snprintf(b->json, sizeof b->json, "{\"k\":%u,\"pad\":\"", k);
    for (size_t i = 0; i < pad; i++)
        b->json[n++] = (char)('a' + (k + i) % 26);
    n += (size_t)snprintf(b->json + n, sizeof b->json - n, "\"}");
    for (size_t i = 0; i < bl; i++)
        b->bin[i] = (uint8_t)(k * 13u + i);
    b->e.type = k % 5 == 4 ? (uint16_t)(CAIRN_REC_USER_MIN + k % 3) : CAIRN_REC_EVENT;
    b->e.ns = ns_len ? b->ns : NULL;
    b->e.ns_len = (size_t)ns_len;
    b->e.json = b->json;
    b->e.json_len = n;
    b->e.bin = bl ? b->bin : NULL;
    b->e.bin_len = bl;
}

/* The k a record names, or -1 if its payload is not one of ours. */
static long rec_k(const cairn_record *r)
{
    char buf[24];
    size_t n = r->json_len < sizeof buf - 1 ? r->json_len : sizeof buf - 1;
    char *end;
    unsigned long k;
    memcpy(buf, r->json, n);
    buf[n] = '\0';
    if (strncmp(buf, "{\"k\":", 5) != 0)
        return -1;
    k = strtoul(buf + 5, &end, 10);
    if (end == buf + 5 || *end != ',')
        return -1;
    return (long)k;
}

/* Does r hold exactly entry k? */
static int rec_is(const cairn_record *r, unsigned k)
{
    static entry_buf b;
    make_entry(k, &b);
    return r->type == b.e.type && r->ns_len == b.e.ns_len &&
           (b.e.ns_len == 0 || memcmp(r->ns, b.e.ns, b.e.ns_len) == 0) &&
           r->json_len == b.e.json_len && memcmp(r->json, b.e.json, b.e.json_len) == 0 &&
           r->bin_len == b.e.bin_len &&
           (b.e.bin_len == 0 || memcmp(r->bin, b.e.bin, b.e.bin_len) == 0);
}

/* ------------------------------------------------------------------------
 * The workload and what it learned.
 * ---------------------------------------------------------------------- */

#define WL_MAX 512

typedef struct pair {
    uint64_t seq;
    unsigned k;
} pair;

typedef struct wl_res {
    int opened;
    unsigned attempted;    /* entries 0..attempted-1 were handed to an append call */
    pair acked[WL_MAX];    /* append + sync (or `full` append) returned OK */
    size_t nacked;
    pair pending[WL_MAX];  /* append returned OK, no sync yet */
    size_t npending;
    pair maybe[WL_MAX];    /* appended OK once, durability unknown */
    size_t nmaybe;
    int nerr;              /* API calls that returned non-OK */
    int first_err;
    char first_call[32];
    char first_msg[CAIRN_ERRMSG_MAX];
    int dead;              /* a call returned CAIRN_EDEAD */
    int must_be_dead;      /* a data write or sync failed: writes must say CAIRN_EDEAD */
    uint64_t closed_at_end; /* closed, unsealed segments before the final close */
    char violation[400];   /* the first rule the engine broke, "" if none */
} wl_res;

typedef struct wl_cfg {
    cairn_durability dur;
    unsigned nrec;
} wl_cfg;

static void violate(wl_res *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violate(wl_res *r, const char *fmt, ...)
{
    va_list ap;
    if (r->violation[0])
        return;
    va_start(ap, fmt);
    vsnprintf(r->violation, sizeof r->violation, fmt, ap);
    va_end(ap);
}

/* A failure at one of these sites loses written data: the handle must die. */
static int fatal_site(const inj *j)
{
    if (!j->fired || j->kind == FK_SHORT)
        return 0;
    if (j->fired_op == OP_FDATASYNC || j->fired_op == OP_FSYNC)
        return strcmp(j->fired_site, "segment.fdatasync") == 0 ||
               strcmp(j->fired_site, "roll.fdatasync") == 0;
    if (j->fired_op == OP_PWRITE)
        return strcmp(j->fired_site, "segment.append") == 0;
    return 0;
}

/* Book-keeping after each API call. `write` marks calls that change the
 * store (they must fail on a dead handle). */
static void note(wl_res *r, const inj *j, cairn_db *db, const char *call, int rc, int write)
{
    if (rc == CAIRN_OK) {
        if (write && (r->dead || r->must_be_dead))
            violate(r, "%s returned CAIRN_OK on a handle that died earlier", call);
        return;
    }
    if (r->nerr++ == 0) {
        r->first_err = rc;
        snprintf(r->first_call, sizeof r->first_call, "%s", call);
        snprintf(r->first_msg, sizeof r->first_msg, "%s", db ? cairn_errmsg(db) : "");
    }
    if (!j->fired)
        violate(r, "%s returned %s before any fault was injected (%s)", call,
                cairn_strerror(rc), db ? cairn_errmsg(db) : "");
    if (write && r->must_be_dead && rc != CAIRN_EDEAD)
        violate(r, "%s returned %s after a failed data write/sync; expected CAIRN_EDEAD", call,
                cairn_strerror(rc));
    if (rc == CAIRN_EDEAD)
        r->dead = 1;
    if (fatal_site(j))
        r->must_be_dead = 1;
}

static void ack_pending(wl_res *r)
{
    memcpy(r->acked + r->nacked, r->pending, r->npending * sizeof *r->pending);
    r->nacked += r->npending;
    r->npending = 0;
}

static void appended(wl_res *r, const wl_cfg *c, uint64_t seq, unsigned k)
{
    pair p = {seq, k};
    r->maybe[r->nmaybe++] = p;
    if (c->dur == CAIRN_DURABILITY_FULL)
        r->acked[r->nacked++] = p;
    else
        r->pending[r->npending++] = p;
}

static void set_opts(cairn_options *o, const cairn_io *io, cairn_durability dur)
{
    cairn_options d = CAIRN_OPTIONS_INIT;
    *o = d;
    o->create = 1;
    o->background = 0;
    o->durability = dur;
    o->segment_size = 8192;
    o->batch_ms = 1000000; /* no time-driven flushes: the call sequence is deterministic */
    o->io = io;
}

/* Read back through the handle (reads can fail too). */
static int read_all(cairn_db *db, uint64_t *count)
{
    cairn_iter *it = NULL;
    cairn_record rec;
    int rc = cairn_iter_open(db, NULL, &it);
    *count = 0;
    if (rc != CAIRN_OK)
        return rc;
    while ((rc = cairn_iter_next(it, &rec)) == CAIRN_OK)
        (*count)++;
    cairn_iter_close(it);
    return rc == CAIRN_ENOTFOUND ? CAIRN_OK : rc;
}

/* Did the last step take k from prev past t? */
static int crossed(unsigned prev, unsigned k, unsigned t)
{
    return prev < t && k >= t;
}

static void run_workload(const char *dir, const wl_cfg *c, inj *j, wl_res *r)
{
    cairn_io io = inj_table(j);
    cairn_options o;
    cairn_db *db = NULL;
    char err[CAIRN_ERRMSG_MAX];
    static entry_buf b[3];
    unsigned k = 0;
    uint64_t seq, count;
    int rc;

    memset(r, 0, sizeof *r);
    set_opts(&o, &io, c->dur);
    rc = cairn_open(&db, dir, &o, err, sizeof err);
    note(r, j, NULL, "cairn_open", rc, 0);
    if (rc != CAIRN_OK) {
        if (r->nerr == 1)
            snprintf(r->first_msg, sizeof r->first_msg, "%s", err);
        if (db != NULL)
            violate(r, "cairn_open failed but set *out");
        return;
    }
    r->opened = 1;
    while (k < c->nrec) {
        unsigned prev = k;
        if (k % 23 == 7 && k + 3 <= c->nrec) {
            cairn_entry es[3];
            for (unsigned i = 0; i < 3; i++) {
                make_entry(k + i, &b[i]);
                es[i] = b[i].e;
            }
            seq = 0;
            r->attempted = k + 3;
            rc = cairn_append_batch(db, es, 3, &seq);
            note(r, j, db, "cairn_append_batch", rc, 1);
            if (rc == CAIRN_OK)
                for (unsigned i = 0; i < 3; i++)
                    appended(r, c, seq + i, k + i);
            k += 3;
        } else {
            make_entry(k, &b[0]);
            seq = 0;
            r->attempted = k + 1;
            rc = cairn_append(db, &b[0].e, &seq);
            note(r, j, db, "cairn_append", rc, 1);
            if (rc == CAIRN_OK)
                appended(r, c, seq, k);
            k++;
        }
        if (k / 10 != prev / 10) {
            rc = cairn_sync(db);
            note(r, j, db, "cairn_sync", rc, 1);
            if (rc == CAIRN_OK)
                ack_pending(r);
        }
        if (crossed(prev, k, c->nrec / 5)) {
            rc = cairn_flush(db);
            note(r, j, db, "cairn_flush", rc, 1);
        }
        if (crossed(prev, k, c->nrec / 3) || crossed(prev, k, c->nrec - 5)) {
            rc = cairn_roll(db);
            note(r, j, db, "cairn_roll", rc, 1);
        }
        if (crossed(prev, k, c->nrec / 2)) {
            long before = j->calls;
            rc = cairn_seal(db);
            note(r, j, db, "cairn_seal", rc, 1);
            if (rc == CAIRN_OK && j->fired && j->fired_call > before && j->kind != FK_SHORT &&
                j->fired_op != OP_CLOSE)
                violate(r, "cairn_seal returned CAIRN_OK though its %s at site \"%s\" failed",
                        op_names[j->fired_op], j->fired_site);
        }
        if (crossed(prev, k, c->nrec / 4) || crossed(prev, k, 2 * c->nrec / 3)) {
            rc = read_all(db, &count);
            note(r, j, db, "cairn_iter", rc, 0);
            if (rc == CAIRN_OK && count < r->nacked)
                violate(r, "the writer read back %llu records, %zu were acknowledged",
                        (unsigned long long)count, r->nacked);
        }
    }
    /* Segments left closed (a failed seal not retried successfully). */
    {
        cairn_stats st;
        r->closed_at_end = cairn_stats_get(db, &st) == CAIRN_OK ? st.segments_closed : UINT64_MAX;
    }
    rc = cairn_close(db);
    note(r, j, NULL, "cairn_close", rc, 0);
    /* close flushes and syncs in every mode; a dead handle has nothing to add. */
    if (rc == CAIRN_OK && !r->dead && !r->must_be_dead)
        ack_pending(r);
}

/* ------------------------------------------------------------------------
 * Checking a store after the fact, without faults.
 * ---------------------------------------------------------------------- */

static void count_problem(void *user, const char *file, uint64_t offset, int code,
                          const char *message)
{
    char *first = user;
    if (first[0] == '\0')
        snprintf(first, CAIRN_ERRMSG_MAX, "%s@%llu: %s: %s", file, (unsigned long long)offset,
                 cairn_strerror(code), message);
}

#define WHY_MAX 700

static int complain(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int complain(char *why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, WHY_MAX, fmt, ap);
    va_end(ap);
    return 1;
}

static int verify_clean(cairn_db *db, const char *ctx, const char *how, char *why)
{
    char first[CAIRN_ERRMSG_MAX] = "";
    uint64_t problems = 99;
    int rc = cairn_verify(db, count_problem, first, &problems);
    if (rc != CAIRN_OK || problems != 0)
        return complain(why, "%s: cairn_verify (%s) returned %s with %llu problems, first: %s",
                        ctx, how, cairn_strerror(rc), (unsigned long long)problems, first);
    return 0;
}

/*
 * Reopen dir without faults and check: records 1..m, gap-free, each one of
 * our entries with k strictly increasing and below `attempted`; every pair
 * of `must` present; every pair of `may` that is within 1..m at its seq;
 * cairn_verify clean through the writer and then a read-only handle.
 * Returns 0, or 1 with the reason in why.
 */
static int check_store(const char *dir, int create, const pair *must, size_t nmust,
                       const pair *may, size_t nmay, unsigned attempted, const char *ctx,
                       char *why)
{
    inj clean;
    cairn_io io;
    cairn_options o;
    cairn_db *db = NULL;
    cairn_iter *it = NULL;
    cairn_record rec;
    char err[CAIRN_ERRMSG_MAX];
    long *ks = NULL;
    uint64_t m = 0;
    long last_k = -1;
    int rc, bad = 0;

    inj_init(&clean);
    io = inj_table(&clean);
    set_opts(&o, &io, CAIRN_DURABILITY_STORED);
    o.create = create;
    o.segment_size = 0; /* stored */
    o.batch_ms = 0;
    rc = cairn_open(&db, dir, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        return complain(why, "%s: reopening without faults failed: %s: %s", ctx,
                        cairn_strerror(rc), err);
    ks = calloc(WL_MAX + 1, sizeof *ks);
    assert_non_null(ks);
    rc = cairn_iter_open(db, NULL, &it);
    if (rc != CAIRN_OK) {
        bad = complain(why, "%s: cairn_iter_open after reopen: %s: %s", ctx, cairn_strerror(rc),
                       cairn_errmsg(db));
        goto out;
    }
    while ((rc = cairn_iter_next(it, &rec)) == CAIRN_OK) {
        long k = rec_k(&rec);
        if (rec.seq != m + 1) {
            bad = complain(why, "%s: after record %llu came record %llu (a gap or disorder)",
                           ctx, (unsigned long long)m, (unsigned long long)rec.seq);
            goto out;
        }
        if (k < 0 || k <= last_k || (unsigned long)k >= attempted ||
            !rec_is(&rec, (unsigned)k)) {
            bad = complain(why,
                           "%s: record %llu holds k=%ld (previous k=%ld, %u attempted) or a "
                           "wrong payload",
                           ctx, (unsigned long long)rec.seq, k, last_k, attempted);
            goto out;
        }
        if (m >= WL_MAX) {
            bad = complain(why, "%s: more records than the workload appended", ctx);
            goto out;
        }
        ks[++m] = k;
        last_k = k;
    }
    if (rc != CAIRN_ENOTFOUND) {
        bad = complain(why, "%s: cairn_iter_next after record %llu: %s: %s", ctx,
                       (unsigned long long)m, cairn_strerror(rc), cairn_errmsg(db));
        goto out;
    }
    for (size_t i = 0; i < nmust && !bad; i++)
        if (must[i].seq > m || ks[must[i].seq] != (long)must[i].k)
            bad = complain(why,
                           "%s: acknowledged record %llu (k=%u) is %s after reopen (%llu "
                           "records)",
                           ctx, (unsigned long long)must[i].seq, must[i].k,
                           must[i].seq > m ? "missing" : "different", (unsigned long long)m);
    for (size_t i = 0; i < nmay && !bad; i++)
        if (may[i].seq <= m && ks[may[i].seq] != (long)may[i].k)
            bad = complain(why,
                           "%s: record %llu holds k=%ld, but the append that returned it had "
                           "k=%u",
                           ctx, (unsigned long long)may[i].seq, ks[may[i].seq], may[i].k);
    if (!bad)
        bad = verify_clean(db, ctx, "writer", why);
out:
    cairn_iter_close(it);
    free(ks);
    rc = cairn_close(db);
    if (bad)
        return 1;
    if (rc != CAIRN_OK)
        return complain(why, "%s: cairn_close after reopen: %s", ctx, cairn_strerror(rc));

    /* No writer live now: a torn tail left behind would count as a problem. */
    o.create = 0;
    o.read_only = 1;
    rc = cairn_open(&db, dir, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        return complain(why, "%s: read-only reopen failed: %s: %s", ctx, cairn_strerror(rc),
                        err);
    bad = verify_clean(db, ctx, "read-only", why);
    cairn_close(db);
    return bad;
}

/* Failures of a sweep: all counted, the first of each kind/operation/site
 * printed, so one run shows every distinct engine bug. */
typedef struct tally {
    size_t runs, failures, printed;
    char keys[48][96];
} tally;

static void tally_add(tally *t, const inj *j, int failed, const char *why)
{
    char key[96];
    t->runs++;
    if (!failed)
        return;
    t->failures++;
    snprintf(key, sizeof key, "%d/%d/%d/%s", j->kind, j->err, j->fired_op,
             j->fired ? j->fired_site : "?");
    for (size_t i = 0; i < t->printed; i++)
        if (strcmp(t->keys[i], key) == 0)
            return;
    if (t->printed < sizeof t->keys / sizeof t->keys[0]) {
        snprintf(t->keys[t->printed++], sizeof t->keys[0], "%s", key);
        print_error("%s\n", why);
    }
}

static void tally_check(const tally *t, const char *what)
{
    if (t->failures != 0)
        fail_msg("%s: %zu of %zu fault runs broke a rule (the first of each kind and site is "
                 "printed above)",
                 what, t->failures, t->runs);
}

/* ------------------------------------------------------------------------
 * Sweeps.
 * ---------------------------------------------------------------------- */

static const wl_cfg wl_none = {CAIRN_DURABILITY_NONE, 200};
static const wl_cfg wl_full = {CAIRN_DURABILITY_FULL, 60};

/* The counting run: no fault, no error, and its trace. */
static void baseline(const wl_cfg *c, inj *j, wl_res *r)
{
    char *dir = tu_mkdtemp("faults");
    assert_non_null(dir);
    inj_init(j);
    j->tracing = 1;
    run_workload(dir, c, j, r);
    if (r->nerr != 0 || r->violation[0])
        fail_msg("the workload fails without faults: %s returned %s (%s) %s", r->first_call,
                 cairn_strerror(r->first_err), r->first_msg, r->violation);
    assert_int_equal(r->nacked, c->nrec);
    {
        char why[WHY_MAX];
        if (check_store(dir, 0, r->acked, r->nacked, NULL, 0, c->nrec, "baseline", why))
            fail_msg("%s", why);
    }
    tu_rmrf(dir);
    free(dir);
}

/* Sealing I/O: an automatic seal (after a roll inside an append) may defer
 * its failure, so it may stay silent if a later seal succeeded. */
static int seal_site(const char *site)
{
    return strncmp(site, "seal.", 5) == 0 || strncmp(site, "sealed.", 7) == 0;
}

/* Space reservation is best effort: its failure must lose nothing and
 * report nothing (cairn_sys.h). */
static int best_effort_site(const char *site)
{
    return strcmp(site, "segment.reserve") == 0 || strcmp(site, "segment.trim") == 0;
}

static int expected_status(int err)
{
    return err == ENOSPC ? CAIRN_EFULL : CAIRN_EIO;
}

/* One run with call n failing as `kind`/`err`, then the reopen check.
 * Returns 0, or 1 with the broken rule in why. */
static int fault_run(const wl_cfg *c, const inj *base, long n, int kind, int err, inj *j,
                     char *why)
{
    static wl_res r;
    char ctx[256], d[160];
    char *dir = tu_mkdtemp("faults");
    int bad = 0;

    assert_non_null(dir);
    inj_init(j);
    j->fail_at = n;
    j->kind = kind;
    j->err = err;
    j->expect = base->trace;
    j->nexpect = base->ntrace;
    run_workload(dir, c, j, &r);
    describe(j, d, sizeof d);
    snprintf(ctx, sizeof ctx, "[%s workload, %s]",
             c->dur == CAIRN_DURABILITY_FULL ? "full" : "none", d);
    if (j->diverged)
        bad = complain(why, "%s: the workload's I/O diverged from the counting run at call %ld",
                       ctx, j->diverged);
    else if (!j->fired)
        bad = complain(why, "%s: the fault was never injected (%ld calls)", ctx, j->calls);
    else if (r.violation[0])
        bad = complain(why, "%s: %s", ctx, r.violation);
    else if (kind == FK_SHORT && r.nerr != 0)
        bad = complain(why, "%s: a short write must be completed, but %s returned %s (%s)",
                       ctx, r.first_call, cairn_strerror(r.first_err), r.first_msg);
    else if (kind == FK_SHORT && r.nacked != c->nrec)
        bad = complain(why, "%s: %zu of %u records acknowledged", ctx, r.nacked, c->nrec);
    else if (best_effort_site(j->fired_site) && r.nerr != 0)
        bad = complain(why, "%s: a best-effort call failed, yet %s returned %s (%s)", ctx,
                       r.first_call, cairn_strerror(r.first_err), r.first_msg);
    else if (kind != FK_SHORT && j->fired_op != OP_CLOSE && r.nerr == 0 &&
             !best_effort_site(j->fired_site) &&
             !(seal_site(j->fired_site) && r.closed_at_end == 0))
        bad = complain(why, "%s: the failure was silent: every API call returned CAIRN_OK",
                       ctx);
    /* The first error the caller sees names the failure, also where it was
     * met by deferred work (a seal after a roll) that killed the handle:
     * never CAIRN_EDEAD first. */
    else if (kind != FK_SHORT && j->fired_op != OP_CLOSE && r.nerr > 0 &&
             r.first_err != expected_status(err))
        bad = complain(why, "%s: first error %s from %s (%s); expected %s", ctx,
                       cairn_strerror(r.first_err), r.first_call, r.first_msg,
                       cairn_strerror(expected_status(err)));
    if (!bad)
        bad = check_store(dir, !r.opened, r.acked, r.nacked, r.maybe, r.nmaybe, r.attempted,
                          ctx, why);
    tu_rmrf(dir);
    free(dir);
    return bad;
}

static int is_write_call(int op)
{
    return op == OP_PWRITE;
}

static int is_sync_call(int op)
{
    return op == OP_FSYNC || op == OP_FDATASYNC;
}

static void sweep(const wl_cfg *c, const char *what)
{
    static wl_res r;
    static tally t;
    char why[WHY_MAX];
    inj base, j;
    size_t nwrites = 0;

    memset(&t, 0, sizeof t);
    baseline(c, &base, &r);
    for (size_t i = 0; i < base.ntrace; i++) {
        long n = (long)i + 1;
        int op = base.trace[i].op;
        tally_add(&t, &j, fault_run(c, &base, n, FK_ERRNO, EIO, &j, why), why);
        if (is_write_call(op) || is_sync_call(op) || op == OP_RESERVE)
            tally_add(&t, &j, fault_run(c, &base, n, FK_ERRNO, ENOSPC, &j, why), why);
        if (is_write_call(op)) {
            tally_add(&t, &j, fault_run(c, &base, n, FK_SHORT, 0, &j, why), why);
            nwrites++;
        }
    }
    free(base.trace);
    assert_true(nwrites > 10);
    tally_check(&t, what);
}

/* ------------------------------------------------------------------------
 * Tests.
 * ---------------------------------------------------------------------- */

static void test_workload_is_deterministic_and_exercises_every_kind_of_call(void **state)
{
    static wl_res r1, r2;
    inj a, b;
    size_t per_op[OP_COUNT] = {0};
    (void)state;

    baseline(&wl_none, &a, &r1);
    baseline(&wl_none, &b, &r2);
    if (a.ntrace != b.ntrace)
        fail_msg("two fault-free runs made %zu and %zu I/O calls", a.ntrace, b.ntrace);
    for (size_t i = 0; i < a.ntrace; i++) {
        if (a.trace[i].op != b.trace[i].op || strcmp(a.trace[i].site, b.trace[i].site) != 0)
            fail_msg("call %zu differs between two fault-free runs: %s@%s vs %s@%s", i + 1,
                     op_names[a.trace[i].op], a.trace[i].site, op_names[b.trace[i].op],
                     b.trace[i].site);
        per_op[a.trace[i].op]++;
    }
    print_message("workload: %zu I/O calls:", a.ntrace);
    for (int op = 0; op < OP_COUNT; op++)
        print_message(" %s %zu", op_names[op], per_op[op]);
    print_message("\n");
    if (getenv("CAIRN_FAULTS_TRACE") != NULL)
        for (size_t i = 0; i < a.ntrace; i++)
            print_message("%zu %s %s\n", i + 1, op_names[a.trace[i].op], a.trace[i].site);
    /* The sweep is only as good as the calls the workload makes. */
    assert_true(per_op[OP_OPENAT] > 0);
    assert_true(per_op[OP_PREAD] > 0);
    assert_true(per_op[OP_PWRITE] > 0);
    assert_true(per_op[OP_FSYNC] > 0);
    assert_true(per_op[OP_FDATASYNC] > 0);
    assert_true(per_op[OP_RENAME] > 0);
    assert_true(per_op[OP_UNLINK] > 0);
    assert_true(per_op[OP_CLOSE] > 0);
    assert_true(per_op[OP_RESERVE] > 0);
    free(a.trace);
    free(b.trace);
}

static void test_every_failing_call_surfaces_and_leaves_a_recoverable_prefix_none_mode(
    void **state)
{
    (void)state;
    sweep(&wl_none, "none mode");
}

static void test_every_failing_call_surfaces_and_leaves_a_recoverable_prefix_full_mode(
    void **state)
{
    (void)state;
    sweep(&wl_full, "full mode");
}

/* The fixture of single-store tests: a fresh directory in *state, removed
 * afterwards even when the test fails. */
static int dir_setup(void **state)
{
    *state = tu_mkdtemp("faults");
    return *state != NULL ? 0 : -1;
}

static int dir_teardown(void **state)
{
    tu_rmrf(*state);
    free(*state);
    return 0;
}

static cairn_db *open_with(const char *dir, const cairn_io *io, cairn_durability dur)
{
    cairn_options o;
    cairn_db *db = NULL;
    char err[CAIRN_ERRMSG_MAX];
    int rc;
    set_opts(&o, io, dur);
    rc = cairn_open(&db, dir, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        fail_msg("cairn_open(%s): %s: %s", dir, cairn_strerror(rc), err);
    return db;
}

static void test_fsync_failure_kills_the_handle_and_reopen_recovers(void **state)
{
    static entry_buf b;
    pair acked[20];
    char *dir = *state;
    inj j;
    cairn_io io;
    cairn_db *db;
    uint64_t seq;
    int rc;

    inj_init(&j);
    io = inj_table(&j);
    db = open_with(dir, &io, CAIRN_DURABILITY_NONE);
    for (unsigned k = 0; k < 20; k++) {
        make_entry(k, &b);
        assert_int_equal(cairn_append(db, &b.e, &seq), CAIRN_OK);
        acked[k].seq = seq;
        acked[k].k = k;
    }
    assert_int_equal(cairn_sync(db), CAIRN_OK);
    make_entry(20, &b);
    assert_int_equal(cairn_append(db, &b.e, &seq), CAIRN_OK);

    /* The next data sync fails. */
    j.fail_site = "segment.fdatasync";
    j.fail_op = OP_FDATASYNC;
    j.err = EIO;
    rc = cairn_sync(db);
    assert_int_equal(j.fired, 1);
    assert_int_equal(rc, CAIRN_EIO);
    assert_non_null(strstr(cairn_errmsg(db), "fdatasync"));

    /* Dead from now on, whatever is asked, even with the fault gone. */
    j.fail_site = NULL;
    make_entry(21, &b);
    assert_int_equal(cairn_append(db, &b.e, &seq), CAIRN_EDEAD);
    assert_int_equal(cairn_append_batch(db, &b.e, 1, &seq), CAIRN_EDEAD);
    assert_int_equal(cairn_sync(db), CAIRN_EDEAD);
    assert_int_equal(cairn_flush(db), CAIRN_EDEAD);
    assert_int_equal(cairn_roll(db), CAIRN_EDEAD);
    assert_int_equal(cairn_seal(db), CAIRN_EDEAD);
    assert_int_equal(cairn_append(db, &b.e, &seq), CAIRN_EDEAD);
    cairn_close(db);

    {
        char why[WHY_MAX];
        if (check_store(dir, 0, acked, 20, NULL, 0, 21, "after a failed fdatasync", why))
            fail_msg("%s", why);
    }
}

static void test_fdatasync_failure_in_full_mode_fails_the_append_and_kills_the_handle(
    void **state)
{
    static entry_buf b;
    pair acked[5];
    char *dir = *state;
    inj j;
    cairn_io io;
    cairn_db *db;
    uint64_t seq;

    inj_init(&j);
    io = inj_table(&j);
    db = open_with(dir, &io, CAIRN_DURABILITY_FULL);
    for (unsigned k = 0; k < 5; k++) {
        make_entry(k, &b);
        assert_int_equal(cairn_append(db, &b.e, &seq), CAIRN_OK);
        acked[k].seq = seq;
        acked[k].k = k;
    }
    j.fail_site = "segment.fdatasync";
    j.fail_op = OP_FDATASYNC;
    j.err = ENOSPC;
    make_entry(5, &b);
    assert_int_equal(cairn_append(db, &b.e, &seq), CAIRN_EFULL);
    assert_int_equal(j.fired, 1);
    j.fail_site = NULL;
    make_entry(6, &b);
    assert_int_equal(cairn_append(db, &b.e, &seq), CAIRN_EDEAD);
    /* Closing a dead handle says so: it cannot vouch for what it acknowledged. */
    assert_int_equal(cairn_close(db), CAIRN_EDEAD);
    {
        char why[WHY_MAX];
        if (check_store(dir, 0, acked, 5, NULL, 0, 6, "after a failed fdatasync in full mode",
                        why))
            fail_msg("%s", why);
    }
}

/*
 * An append that rolls the active segment (background = 0) also seals the
 * closed one inline. The roll happens before the record is added, so a
 * failure to seal concerns an older segment, not the record: the append
 * committed its record and must say so (CAIRN_OK and its seq). A caller
 * told otherwise would append the record again. The seal failure belongs to
 * cairn_seal (or the next roll), like a seal failure at open.
 */
static void test_append_that_rolls_returns_ok_when_inline_sealing_fails(void **state)
{
    static entry_buf b;
    static pair acked[100];
    char *dir = *state;
    char why[WHY_MAX];
    inj j;
    cairn_io io;
    cairn_db *db;
    cairn_stats st;
    unsigned k;
    int rc;

    inj_init(&j);
    j.fail_site = "seal.open";
    j.fail_op = OP_OPENAT;
    j.err = EIO;
    j.persistent = 1;
    io = inj_table(&j);
    db = open_with(dir, &io, CAIRN_DURABILITY_FULL);
    for (k = 0; k < 100; k++) {
        uint64_t seq = 0;
        make_entry(k, &b);
        rc = cairn_append(db, &b.e, &seq);
        assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
        if (rc != CAIRN_OK) {
            char msg[CAIRN_ERRMSG_MAX];
            int alive;
            snprintf(msg, sizeof msg, "%s", cairn_errmsg(db));
            alive = cairn_sync(db);
            cairn_close(db);
            fail_msg("append of k=%u returned %s (%s), but its record is committed as seq "
                     "%llu (the log holds %llu records) and the handle is alive (cairn_sync "
                     "returns %s)",
                     k, cairn_strerror(rc), msg, (unsigned long long)st.last_seq,
                     (unsigned long long)st.records, cairn_strerror(alive));
        }
        acked[k].seq = seq;
        acked[k].k = k;
        if (st.segments_closed >= 2)
            break;
    }
    assert_true(j.fired >= 2); /* two rolls tried to seal, and failed */
    assert_true(k < 100);
    /* The failure is reported where sealing is asked for. */
    assert_int_equal(cairn_seal(db), CAIRN_EIO);
    j.fail_site = NULL;
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    if (check_store(dir, 0, acked, k + 1, NULL, 0, k + 1, "after failed inline seals", why))
        fail_msg("%s", why);
}

/* ------------------------------------------------------------------------
 * The recovery sweep: fail each call of a writer open that has to truncate a
 * torn tail, delete orphans and seal closed segments.
 * ---------------------------------------------------------------------- */

#define TPL_RECORDS 60u

static void copy_dir(const char *from, const char *to)
{
    DIR *d = opendir(from);
    struct dirent *de;
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        char *src, *dst;
        uint8_t *buf;
        size_t len;
        if (de->d_name[0] == '.')
            continue;
        src = tu_join(from, de->d_name);
        dst = tu_join(to, de->d_name);
        buf = tu_read_file(src, &len);
        assert_non_null(buf);
        assert_int_equal(tu_write_file(dst, buf, len), 0);
        free(buf);
        free(src);
        free(dst);
    }
    closedir(d);
}

static void append_bytes(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    close(fd);
}

/* A store with closed-but-unsealed segments (sealing failed while it was
 * written), a torn tail and orphan files. Returns its records in *must. */
static char *make_template(pair *must)
{
    static entry_buf b;
    char *dir = tu_mkdtemp("faults-tpl");
    char *p, junk[300];
    inj j;
    cairn_io io;
    cairn_db *db;
    cairn_stats st;
    char err[CAIRN_ERRMSG_MAX];
    uint64_t seq;

    assert_non_null(dir);
    inj_init(&j);
    j.fail_site = "seal.open";
    j.fail_op = OP_OPENAT;
    j.err = EIO;
    j.persistent = 1;
    io = inj_table(&j);
    db = open_with(dir, &io, CAIRN_DURABILITY_NONE);
    for (unsigned k = 0; k < TPL_RECORDS; k++) {
        make_entry(k, &b);
        seq = 0;
        /* An append that rolls reports the failed seal, but its record is in. */
        (void)cairn_append(db, &b.e, &seq);
        must[k].seq = k + 1;
        must[k].k = k;
    }
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_true(j.fired > 0);

    /* What a crash leaves: a torn tail and orphans of a roll and a seal. */
    p = tu_find_last(dir, ".log");
    assert_non_null(p);
    memset(junk, 0x5a, sizeof junk);
    append_bytes(p, junk, sizeof junk);
    free(p);
    p = tu_join(dir, "MANIFEST.tmp");
    assert_int_equal(tu_write_file(p, junk, 100), 0);
    free(p);
    p = tu_join(dir, "00000000000000fe.seg.tmp");
    assert_int_equal(tu_write_file(p, junk, 200), 0);
    free(p);
    p = tu_join(dir, "00000000000000ff.log");
    assert_int_equal(tu_write_file(p, junk, 64), 0);
    free(p);

    /* The template must really have recovery work to do. */
    {
        cairn_options ro = CAIRN_OPTIONS_INIT;
        ro.read_only = 1;
        assert_int_equal(cairn_open(&db, dir, &ro, err, sizeof err), CAIRN_OK);
        assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
        assert_int_equal(st.records, TPL_RECORDS);
        assert_true(st.segments_closed >= 3);
        cairn_close(db);
    }
    return dir;
}

/* Open the copy (faults per j), append 5 records, sync, close. */
static void recovery_run(const char *dir, inj *j, wl_res *r)
{
    static entry_buf b;
    cairn_io io = inj_table(j);
    cairn_options o;
    cairn_db *db = NULL;
    char err[CAIRN_ERRMSG_MAX];
    int rc;

    memset(r, 0, sizeof *r);
    set_opts(&o, &io, CAIRN_DURABILITY_STORED);
    o.create = 0;
    o.segment_size = 0;
    o.batch_ms = 0;
    rc = cairn_open(&db, dir, &o, err, sizeof err);
    if (rc != CAIRN_OK) {
        r->nerr = 1;
        r->first_err = rc;
        snprintf(r->first_call, sizeof r->first_call, "cairn_open");
        snprintf(r->first_msg, sizeof r->first_msg, "%s", err);
        return;
    }
    r->opened = 1;
    r->attempted = TPL_RECORDS + 5;
    for (unsigned k = TPL_RECORDS; k < TPL_RECORDS + 5; k++) {
        uint64_t seq = 0;
        make_entry(k, &b);
        rc = cairn_append(db, &b.e, &seq);
        note(r, j, db, "cairn_append", rc, 1);
        if (rc == CAIRN_OK) {
            pair p = {seq, k};
            r->maybe[r->nmaybe++] = p;
            r->pending[r->npending++] = p;
        }
    }
    rc = cairn_sync(db);
    note(r, j, db, "cairn_sync", rc, 1);
    if (rc == CAIRN_OK)
        ack_pending(r);
    rc = cairn_close(db);
    note(r, j, NULL, "cairn_close", rc, 0);
}

static void test_every_failing_call_during_recovery_loses_no_record(void **state)
{
    static pair must[TPL_RECORDS + 8];
    static wl_res r;
    static tally t;
    char why[WHY_MAX];
    char *tpl;
    inj base;
    (void)state;

    memset(&t, 0, sizeof t);
    tpl = make_template(must);
    /* Counting run on a copy. */
    {
        char *dir = tu_mkdtemp("faults");
        assert_non_null(dir);
        copy_dir(tpl, dir);
        inj_init(&base);
        base.tracing = 1;
        recovery_run(dir, &base, &r);
        if (r.nerr != 0 || r.violation[0])
            fail_msg("recovery without faults fails: %s: %s (%s) %s", r.first_call,
                     cairn_strerror(r.first_err), r.first_msg, r.violation);
        assert_int_equal(r.nacked, 5);
        tu_rmrf(dir);
        free(dir);
    }
    for (size_t i = 0; i < base.ntrace; i++) {
        int op = base.trace[i].op;
        for (int kind = 0; kind < 3; kind++) {
            char ctx[256], d[160];
            char *dir;
            int bad = 0;
            inj j;
            if (kind == 1 && !is_write_call(op) && !is_sync_call(op) && op != OP_RESERVE)
                continue;
            if (kind == 2 && !is_write_call(op))
                continue;
            dir = tu_mkdtemp("faults");
            assert_non_null(dir);
            copy_dir(tpl, dir);
            inj_init(&j);
            j.fail_at = (long)i + 1;
            j.kind = kind == 2 ? FK_SHORT : FK_ERRNO;
            j.err = kind == 1 ? ENOSPC : EIO;
            j.expect = base.trace;
            j.nexpect = base.ntrace;
            recovery_run(dir, &j, &r);
            describe(&j, d, sizeof d);
            snprintf(ctx, sizeof ctx, "[recovery, %s]", d);
            if (j.diverged)
                bad = complain(why, "%s: I/O diverged from the counting run at call %ld", ctx,
                               j.diverged);
            else if (r.violation[0])
                bad = complain(why, "%s: %s", ctx, r.violation);
            /* Seal failures at open are deferred by design (the .log stays live);
             * a failure of the recovery proper must fail the open. */
            else if (kind != 2 && j.fired && best_effort_site(j.fired_site) && r.nerr != 0)
                bad = complain(why, "%s: a best-effort call failed, yet %s returned %s (%s)",
                               ctx, r.first_call, cairn_strerror(r.first_err), r.first_msg);
            else if (kind != 2 && j.fired && j.fired_op != OP_CLOSE && r.nerr == 0 &&
                     !best_effort_site(j.fired_site) &&
                     (strncmp(j.fired_site, "recover.", 8) == 0 ||
                      strncmp(j.fired_site, "segment.", 8) == 0 ||
                      strcmp(j.fired_site, "manifest.read") == 0))
                bad = complain(why, "%s: the failure was silent: every API call returned "
                                    "CAIRN_OK",
                               ctx);
            else if (kind == 2 && r.nerr != 0)
                bad = complain(why, "%s: a short write must be completed, but %s returned %s "
                                    "(%s)",
                               ctx, r.first_call, cairn_strerror(r.first_err), r.first_msg);
            if (!bad) {
                memcpy(must + TPL_RECORDS, r.acked, r.nacked * sizeof *r.acked);
                bad = check_store(dir, 0, must, TPL_RECORDS + r.nacked, r.maybe, r.nmaybe,
                                  TPL_RECORDS + 5, ctx, why);
            }
            tally_add(&t, &j, bad, why);
            tu_rmrf(dir);
            free(dir);
        }
    }
    assert_true(t.runs > base.ntrace);
    free(base.trace);
    tu_rmrf(tpl);
    free(tpl);
    tally_check(&t, "recovery");
}

/*
 * cairn_seal reports every failing call of sealing: a store with closed,
 * unsealed segments (the template) is opened with one sealing site failing
 * every time (the open's own seal attempt is deferred, by design); then
 * cairn_seal must return the mapped status; with the fault gone it seals
 * everything, and no record is lost.
 */
static void test_explicit_seal_reports_each_failing_sealing_call(void **state)
{
    static const struct {
        int op;
        const char *site;
    } sites[] = {
        {OP_OPENAT, "seal.open"},   {OP_PREAD, "seal.read"},      {OP_PWRITE, "seal.write"},
        {OP_FSYNC, "seal.fsync"},   {OP_RENAME, "seal.rename"},   {OP_FSYNC, "seal.dirsync"},
        {OP_OPENAT, "sealed.open"}, {OP_UNLINK, "seal.unlink"},   {OP_PREAD, "seal.chain"},
    };
    static pair must[TPL_RECORDS];
    char why[WHY_MAX];
    char *tpl;
    (void)state;

    tpl = make_template(must);
    for (size_t i = 0; i < sizeof sites / sizeof sites[0]; i++) {
        for (int e = 0; e < 2; e++) {
            char *dir;
            cairn_options o;
            cairn_io io;
            cairn_db *db = NULL;
            cairn_stats st;
            char err[CAIRN_ERRMSG_MAX], ctx[128];
            inj j;
            int rc;
            if (e == 1 && sites[i].op != OP_PWRITE && sites[i].op != OP_FSYNC)
                continue;
            dir = tu_mkdtemp("faults");
            assert_non_null(dir);
            copy_dir(tpl, dir);
            inj_init(&j);
            j.fail_site = sites[i].site;
            j.fail_op = sites[i].op;
            j.err = e ? ENOSPC : EIO;
            j.persistent = 1;
            io = inj_table(&j);
            set_opts(&o, &io, CAIRN_DURABILITY_STORED);
            o.create = 0;
            o.segment_size = 0;
            o.batch_ms = 0;
            snprintf(ctx, sizeof ctx, "[%s failing at site \"%s\"]", e ? "ENOSPC" : "EIO",
                     sites[i].site);
            rc = cairn_open(&db, dir, &o, err, sizeof err);
            if (rc != CAIRN_OK)
                fail_msg("%s: open: %s (%s)", ctx, cairn_strerror(rc), err);
            assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
            if (st.segments_closed == 0 || j.fired == 0)
                fail_msg("%s: the open left %llu closed segments, the fault fired %d times: a "
                         "failing seal must leave its segment closed",
                         ctx, (unsigned long long)st.segments_closed, j.fired);
            rc = cairn_seal(db);
            if (rc != expected_status(j.err))
                fail_msg("%s: cairn_seal returned %s (%s), expected %s", ctx,
                         cairn_strerror(rc), cairn_errmsg(db),
                         cairn_strerror(expected_status(j.err)));
            j.fail_site = NULL;
            rc = cairn_seal(db);
            if (rc != CAIRN_OK)
                fail_msg("%s: cairn_seal without the fault: %s (%s)", ctx, cairn_strerror(rc),
                         cairn_errmsg(db));
            assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
            assert_int_equal(st.segments_closed, 0);
            assert_int_equal(cairn_close(db), CAIRN_OK);
            if (check_store(dir, 0, must, TPL_RECORDS, NULL, 0, TPL_RECORDS, ctx, why))
                fail_msg("%s", why);
            tu_rmrf(dir);
            free(dir);
        }
    }
    tu_rmrf(tpl);
    free(tpl);
}

/*
 * A full disk met by deferred work: a fresh handle on a store with closed
 * segments seals them at open (inline with background = 0, in the sealer
 * thread otherwise); the seal's MANIFEST write fails with ENOSPC, which
 * kills the handle, but cairn_open has already returned and no call was
 * told. The first call that finds the handle dead must say CAIRN_EFULL and
 * that the disk is full (it said CAIRN_EDEAD, "handle failed earlier");
 * later ones CAIRN_EDEAD. Nothing is lost.
 *
 * Its own I/O table (the sealer thread and this one both call it): every
 * MANIFEST write fails with ENOSPC, counted atomically.
 */
static atomic_int manifest_full;

static ssize_t full_manifest_pwrite(void *u, const char *site, int fd, const void *buf,
                                    size_t len, off_t off)
{
    if (strcmp(site, "manifest.write") == 0) {
        atomic_fetch_add(&manifest_full, 1);
        errno = ENOSPC;
        return -1;
    }
    return cairn_io_default()->pwrite(u, site, fd, buf, len, off);
}

static void full_disk_at_open_seal(int background)
{
    static entry_buf b;
    static pair must[TPL_RECORDS];
    char *tpl = make_template(must), *dir = tu_mkdtemp("faults");
    char err[CAIRN_ERRMSG_MAX] = "", why[WHY_MAX], msg[CAIRN_ERRMSG_MAX];
    cairn_io io = *cairn_io_default();
    cairn_options o;
    cairn_db *db = NULL;
    uint64_t seq;
    int rc;

    assert_non_null(dir);
    copy_dir(tpl, dir);
    atomic_store(&manifest_full, 0);
    io.pwrite = full_manifest_pwrite;
    set_opts(&o, &io, CAIRN_DURABILITY_STORED);
    o.create = 0;
    o.segment_size = 0;
    o.batch_ms = 0;
    o.background = background;
    rc = cairn_open(&db, dir, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        fail_msg("open: %s (%s)", cairn_strerror(rc), err);
    /* The sealer writes the MANIFEST holding the handle's mutex, and kills
     * the handle before it lets go: once the write was tried, the next
     * call finds the handle dead. */
    for (int i = 0; i < 10000 && atomic_load(&manifest_full) == 0; i++)
        usleep(1000);
    assert_true(atomic_load(&manifest_full) >= 1);
    make_entry(TPL_RECORDS, &b);
    rc = cairn_append(db, &b.e, &seq);
    snprintf(msg, sizeof msg, "%s", cairn_errmsg(db));
    if (rc != CAIRN_EFULL)
        fail_msg("first call after a full disk at open's seal: %s (%s); expected CAIRN_EFULL",
                 cairn_strerror(rc), msg);
    if (strstr(msg, "disk is full") == NULL || strstr(msg, "MANIFEST.tmp") == NULL)
        fail_msg("message \"%s\" does not say the disk is full, naming the file", msg);
    assert_int_equal(cairn_append(db, &b.e, &seq), CAIRN_EDEAD);
    assert_int_equal(cairn_sync(db), CAIRN_EDEAD);
    assert_int_equal(cairn_close(db), CAIRN_EDEAD);
    if (check_store(dir, 0, must, TPL_RECORDS, NULL, 0, TPL_RECORDS,
                    "after a full disk met by the seal at open", why))
        fail_msg("%s", why);
    tu_rmrf(dir);
    free(dir);
    tu_rmrf(tpl);
    free(tpl);
}

static void test_a_full_disk_met_by_the_seal_at_open_is_reported_as_cairn_efull(void **state)
{
    (void)state;
    full_disk_at_open_seal(0);
}

static void test_a_full_disk_met_by_the_sealer_thread_is_reported_as_cairn_efull(void **state)
{
    (void)state;
    full_disk_at_open_seal(1);
}

/* A full disk met by a checkpoint at close, which drops the error: the
 * memory layer's close writes the index file after 1000 memory records and
 * first syncs the log; that sync fails with ENOSPC and kills the handle.
 * cairn_close then reports CAIRN_EFULL, the cause nobody was told of, not
 * CAIRN_EDEAD. */
static void test_a_full_disk_met_by_the_checkpoint_at_close_is_reported_as_cairn_efull(
    void **state)
{
    char *dir = *state;
    cairn_mem *mem = NULL;
    cairn_db *db;
    cairn_io io;
    inj j;

    inj_init(&j);
    io = inj_table(&j);
    db = open_with(dir, &io, CAIRN_DURABILITY_NONE);
    assert_int_equal(cairn_mem_open(db, NULL, &mem), CAIRN_OK);
    for (int i = 0; i < 1001; i++) {
        char text[64];
        snprintf(text, sizeof text, "memory number %d about disks", i);
        assert_int_equal(cairn_mem_store(mem, text, NULL, NULL, NULL), CAIRN_OK);
    }
    /* Every record is in the file already (a handle without the
     * background thread writes at each call); the sync fails. */
    j.fail_site = "segment.fdatasync";
    j.fail_op = OP_FDATASYNC;
    j.err = ENOSPC;
    j.persistent = 1;
    cairn_mem_close(mem); /* its checkpoint meets the full disk */
    assert_true(j.fired >= 1);
    assert_int_equal(cairn_close(db), CAIRN_EFULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workload_is_deterministic_and_exercises_every_kind_of_call),
        cmocka_unit_test_setup_teardown(
            test_fsync_failure_kills_the_handle_and_reopen_recovers, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(
            test_fdatasync_failure_in_full_mode_fails_the_append_and_kills_the_handle,
            dir_setup, dir_teardown),
        cmocka_unit_test(
            test_every_failing_call_surfaces_and_leaves_a_recoverable_prefix_none_mode),
        cmocka_unit_test(
            test_every_failing_call_surfaces_and_leaves_a_recoverable_prefix_full_mode),
        cmocka_unit_test(test_every_failing_call_during_recovery_loses_no_record),
        cmocka_unit_test_setup_teardown(
            test_append_that_rolls_returns_ok_when_inline_sealing_fails, dir_setup, dir_teardown),
        cmocka_unit_test(test_explicit_seal_reports_each_failing_sealing_call),
        cmocka_unit_test(test_a_full_disk_met_by_the_seal_at_open_is_reported_as_cairn_efull),
        cmocka_unit_test(
            test_a_full_disk_met_by_the_sealer_thread_is_reported_as_cairn_efull),
        cmocka_unit_test_setup_teardown(
            test_a_full_disk_met_by_the_checkpoint_at_close_is_reported_as_cairn_efull,
            dir_setup, dir_teardown),
    };
    /* Thousands of small stores are made and removed: on tmpfs unless the
     * caller chose a TMPDIR (no real fsync happens either way, see the top). */
    if (getenv("TMPDIR") == NULL && access("/dev/shm", W_OK | X_OK) == 0)
        setenv("TMPDIR", "/dev/shm", 1);
    return cmocka_run_group_tests_name("faults", tests, NULL, NULL);
}
