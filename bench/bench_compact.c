/*
 * bench_compact.c - what log compaction under the retention policy buys on
 * disk and what it costs (cairn_mem_compact and the retention policy, cairn.h),
 * in one run, through the public API only. Never part of `make test`.
 *
 *   space     a store created with retain "live:0" and no memory limit,
 *             --n (100,000) memories of generated agent-memory text
 *             (100-300 bytes, a category and an importance each; no
 *             vectors: no embedder), stored one cairn_mem_store each
 *             (durability none). Variant `remove90`: 90% of them, a random
 *             choice, removed in random order (cairn_mem_delete). Variant
 *             `remove45_update45`: 45% removed and 45% others given a new
 *             importance (cairn_mem_update), interleaved in random order.
 *             Then, with no checkpoint since the first store (so no index
 *             file pins a life), cairn_mem_compact (it rolls and seals the
 *             active segment itself), cairn_mem_checkpoint, close. Compared
 *             with `fresh`: a new store holding only the live memories
 *             (same texts, categories and final importances, in the same
 *             order), checkpointed and closed; and `fresh_sealed`: the
 *             same with cairn_roll + cairn_seal before the checkpoint, so
 *             its log is zstd-compressed as the compacted one is. Sizes are
 *             the bytes (st_size) of the store's files, the log's alone
 *             (*.seg, *.log) and the whole directory, plus allocated bytes
 *             (st_blocks). The compacted store is then opened read-only:
 *             its live count and cairn_verify's problems are reported.
 *   throughput  of the `remove90` compaction: the log bytes it started
 *             from (report bytes_before) over its wall time, and its
 *             process CPU time (all threads).
 *   recall    a store of --big-n (400,000) memories with 90% removed,
 *             checkpointed after the removals (the index covers every
 *             removal, so none is pinned), closed, sync(). A child process
 *             opens it read-only and recalls (k 10, lexical, 1-3 query
 *             words of the texts' vocabulary, cycled; each recall records
 *             its accesses in ACCESS) in a closed loop, timing every call,
 *             until told to stop. After a 0.5 s warm-up, --idle-seconds (2)
 *             of recalls with nothing else running are `idle`; then a
 *             second child opens the store to write and runs
 *             cairn_mem_compact (about 3 s here); recalls that start
 *             between the compaction's start and end are `during`.
 *             --rounds (2) rounds, each on a store built anew; p50/p99 per
 *             round and over all rounds (the target uses the latter).
 *             --samples FILE writes every timed recall (round, phase, ms
 *             since the compaction began, latency ms) for a closer look.
 *             The compaction's MB/s here counts segment-file bytes, mostly
 *             of sealed (compressed) segments; records/s is printed too.
 *   writer    in each recall round, after the reader's phase, on a byte
 *             copy of the same store (made before the reader's phase): a
 *             child process opens it to write (cairn_options defaults:
 *             background 1, the library default, so a run of stores keeps
 *             the writer lock without a system call per store, as an
 *             embedding agent's handle does; busy_timeout_ms 5000, the
 *             default, set explicitly; the store's durability, none) and
 *             stores memories (cairn_mem_store, one sentence of the wide
 *             vocabulary each, never one it drew before) in a closed
 *             loop, timing every call and keeping its status. After a
 *             0.5 s warm-up, --writer-idle-seconds (1) of stores are
 *             `idle`; then a third process compacts; stores that start
 *             between the compaction's start and end are `during`; those
 *             from its end until the writer stops (0.2 s after the
 *             compacting process has closed its handle, which may write a
 *             memory index in a turn) are `after`. Reported: p50/p99/max,
 *             stores over 10 ms, successful stores per second, failures
 *             (CAIRN_ELOCKED apart), per round and over all rounds. Apart
 *             from the reader, not with it: a closed-loop writer takes one
 *             of the 2 cores and every recall would catch up on its
 *             stores. The closed loop stores ~80-100k memories/s, so the
 *             store grows several-fold during the phase, the compaction
 *             and its open and close take longer than in the reader's
 *             phase (they fold the writer's memories), and the writer
 *             rolls a 64 MiB segment every few seconds (its background
 *             thread seals it, holding the writer lock meanwhile).
 *             --samples adds the writer's stores as `store-<phase>` lines
 *             with a fifth column, the status. --no-writer skips it.
 *
 * Targets (a JSON line each, PASS/FAIL on stderr): remove90's compacted
 * store <= 1.2x the fresh store (whole directory, st_size); recall p99
 * during the compaction <= 2x idle; the writer's store p99 during the
 * compaction <= 2x idle. Every other figure is reported without a target.
 * A missed target is a result, not an error (exit status 0).
 *
 * usage: bench_compact [--n N] [--big-n N] [--idle-seconds S] [--rounds R]
 *                      [--dir DIR] [--seed S] [--only space|recall]
 *                      [--samples FILE] [--keep]
 *                      [--writer-idle-seconds S] [--no-writer]
 * (--keep leaves the compacted stores in DIR.) About 60 s with the defaults
 * on 2 vCPUs (35 s with --no-writer); the machine should be otherwise idle
 * (2 cores: a busy neighbour shows up in the recall p99 at once).
 * Output: JSON lines on stdout, the human table and PASS/FAIL on stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

/* ---- the texts ------------------------------------------------------------ */

static const char *const CATEGORIES[] = {"fact", "decision", "preference", "skill"};

#define TEXT_MAX 320

/* Memory i's text (attempt > 0: another draw, after a duplicate): sentences
 * of the wide vocabulary (bench_text.h) until a length drawn from 100..300
 * bytes, never past 300. */
static size_t text_make(char *out, uint64_t seed, size_t i, unsigned attempt)
{
    size_t len = 0, want;
    bench_rng_state =
        bench_mix64(seed ^ bench_mix64((uint64_t)i * 0x9E3779B97F4A7C15ull + attempt));
    want = 100 + bench_rnd(201);
    while (len < want) {
        char c[160];
        size_t n = bench_sentence(c, sizeof c, BENCH_VOCAB_WIDE);
        if (len > 0 && len + 1 + n > 300)
            break;
        if (len > 0)
            out[len++] = ' ';
        memcpy(out + len, c, n);
        len += n;
    }
    out[len] = 0;
    return len;
}

static bench_query *queries; /* 1-3 words of the texts' vocabulary */
static size_t n_queries;

/* ---- helpers -------------------------------------------------------------- */

typedef struct files {
    uint64_t total, log, alloc; /* st_size of every file; of *.seg and *.log; st_blocks */
    uint64_t index;             /* mem-*.cmx */
    int n_seg, n_log;
} files;

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static files dir_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    files f;
    memset(&f, 0, sizeof f);
    if (d == NULL)
        bench_die("%s: %s", dir, strerror(errno));
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode))
            continue;
        f.total += (uint64_t)st.st_size;
        f.alloc += (uint64_t)st.st_blocks * 512u;
        if (ends_with(de->d_name, ".seg")) {
            f.log += (uint64_t)st.st_size;
            f.n_seg++;
        } else if (ends_with(de->d_name, ".log")) {
            f.log += (uint64_t)st.st_size;
            f.n_log++;
        } else if (strncmp(de->d_name, "mem-", 4) == 0 && ends_with(de->d_name, ".cmx")) {
            f.index += (uint64_t)st.st_size;
        }
    }
    closedir(d);
    return f;
}

static cairn_db *db_open(const char *path, int create, int ro)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_db *db = NULL;
    int rc;
    o.create = create;
    o.read_only = ro;
    if (create) {
        o.durability = CAIRN_DURABILITY_NONE; /* the fills; stored, but sizes do not depend on it */
        o.max_memories = CAIRN_NO_LIMIT;
        o.retain = "live:0";
    }
    rc = cairn_open(&db, path, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        bench_die("cairn_open %s%s: %s (%s)", path, ro ? " (read-only)" : "", cairn_strerror(rc),
                  err);
    return db;
}

static cairn_mem *mem_open(cairn_db *db)
{
    cairn_mem *m = NULL;
    bench_check(db, cairn_mem_open(db, NULL, &m), "cairn_mem_open");
    return m;
}

static void mem_check(cairn_mem *m, int rc, const char *what)
{
    if (rc != CAIRN_OK)
        bench_die("%s: %s (%s)", what, cairn_strerror(rc), cairn_mem_errmsg(m));
}

typedef struct mset {
    size_t n;
    char **text;     /* NULL for the big store: made again when needed */
    char (*id)[CAIRN_MEM_ID_MAX + 1];
    double *imp;     /* final importance */
    uint8_t *cat;
    uint8_t *state;  /* 0 untouched, 1 removed, 2 updated */
    uint64_t text_bytes;
    size_t text_min, text_max;
} mset;

/* Store s->n memories into mem; a text the store already holds (existed)
 * is drawn again. Texts kept when keep_text. */
static void fill(cairn_mem *mem, mset *s, uint64_t seed, int keep_text)
{
    char buf[TEXT_MAX + 1];
    s->text_bytes = 0;
    s->text_min = SIZE_MAX;
    s->text_max = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t r = bench_mix64(seed ^ 0xC0FFEEull ^ (uint64_t)i * 0x100000001B3ull);
        s->imp[i] = (double)(r % 101) / 100.0;
        s->cat[i] = (uint8_t)((r >> 32) % NELEM(CATEGORIES));
    }
    for (size_t i = 0; i < s->n; i++) {
        cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
        cairn_memory *got = NULL;
        int existed = 1;
        size_t len = 0;
        o.category = CATEGORIES[s->cat[i]];
        o.importance = s->imp[i];
        for (unsigned a = 0; existed; a++) {
            len = text_make(buf, seed, i, a);
            mem_check(mem, cairn_mem_store(mem, buf, &o, &got, &existed), "cairn_mem_store");
            if (existed)
                cairn_mem_free(got);
        }
        memcpy(s->id[i], got->id, sizeof s->id[i]);
        cairn_mem_free(got);
        s->text_bytes += len;
        s->text_min = len < s->text_min ? len : s->text_min;
        s->text_max = len > s->text_max ? len : s->text_max;
        if (keep_text) {
            s->text[i] = bench_malloc(len + 1);
            memcpy(s->text[i], buf, len + 1);
        }
    }
}

static void mset_alloc(mset *s, size_t n, int keep_text)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->text = keep_text ? bench_malloc(n * sizeof *s->text) : NULL;
    s->id = bench_malloc(n * sizeof *s->id);
    s->imp = bench_malloc(n * sizeof *s->imp);
    s->cat = bench_malloc(n);
    s->state = bench_malloc(n);
    memset(s->state, 0, n);
}

static void mset_free(mset *s)
{
    if (s->text != NULL)
        for (size_t i = 0; i < s->n; i++)
            free(s->text[i]);
    free(s->text);
    free(s->id);
    free(s->imp);
    free(s->cat);
    free(s->state);
}

static void shuffle(size_t *p, size_t n, uint64_t seed)
{
    bench_rng_state = seed;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(bench_rnd64() % i), t = p[i - 1];
        p[i - 1] = p[j];
        p[j] = t;
    }
}

/* Remove del_frac of the memories and update upd_frac others (importance),
 * a random choice, in random order. Returns the live count. */
static size_t churn(cairn_mem *mem, mset *s, double del_frac, double upd_frac, uint64_t seed)
{
    size_t *p = bench_malloc(s->n * sizeof *p), n_del = (size_t)((double)s->n * del_frac + 0.5),
           n_upd = (size_t)((double)s->n * upd_frac + 0.5), n_ops = n_del + n_upd;
    if (n_ops > s->n)
        bench_die("churn: %zu removals + %zu updates > %zu memories", n_del, n_upd, s->n);
    for (size_t i = 0; i < s->n; i++)
        p[i] = i;
    shuffle(p, s->n, seed ^ 0xDE1E7Eull);
    for (size_t k = 0; k < n_ops; k++)
        s->state[p[k]] = k < n_del ? 1 : 2;
    shuffle(p, n_ops, seed ^ 0x0DD5ull); /* the order of the operations */
    bench_rng_state = seed ^ 0x1A2B3Cull;
    for (size_t k = 0; k < n_ops; k++) {
        size_t i = p[k];
        if (s->state[i] == 1) {
            mem_check(mem, cairn_mem_delete(mem, s->id[i], "bench"), "cairn_mem_delete");
        } else {
            cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;
            double v = (double)bench_rnd(101) / 100.0;
            if (v == s->imp[i])
                v = v >= 0.5 ? v - 0.01 : v + 0.01;
            u.importance = v;
            mem_check(mem, cairn_mem_update(mem, s->id[i], &u), "cairn_mem_update");
            s->imp[i] = v;
        }
    }
    free(p);
    return s->n - n_del;
}

static void count_problem(void *user, const char *file, uint64_t off, int code, const char *msg)
{
    (void)code;
    if (++*(uint64_t *)user <= 5)
        fprintf(stderr, "  verify: %s @%" PRIu64 ": %s\n", file, off, msg);
}

/* ---- space and throughput ------------------------------------------------- */

typedef struct space_run {
    const char *name;
    double del_frac, upd_frac;
    size_t n, live, text_min, text_max;
    double text_avg;
    double fill_secs, churn_secs, compact_secs, compact_cpu;
    cairn_compact_report rep;
    files compacted, fresh, fresh_sealed;
    uint64_t live_after, deleted_after, verify_problems;
    int verify_rc;
} space_run;

/* A fresh store of the live memories of s; seal: roll and seal it first. */
static files fresh_store(const char *path, const mset *s, int seal)
{
    cairn_db *db;
    cairn_mem *mem;
    files f;
    bench_rm_rf(path);
    db = db_open(path, 1, 0);
    mem = mem_open(db);
    for (size_t i = 0; i < s->n; i++) {
        cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
        int existed = 0;
        if (s->state[i] == 1)
            continue;
        o.category = CATEGORIES[s->cat[i]];
        o.importance = s->imp[i];
        mem_check(mem, cairn_mem_store(mem, s->text[i], &o, NULL, &existed), "cairn_mem_store");
        if (existed)
            bench_die("fresh store: text %zu stored twice", i);
    }
    if (seal) {
        bench_check(db, cairn_roll(db), "cairn_roll");
        bench_check(db, cairn_seal(db), "cairn_seal");
    }
    mem_check(mem, cairn_mem_checkpoint(mem), "cairn_mem_checkpoint");
    cairn_mem_close(mem);
    bench_check(db, cairn_close(db), "cairn_close");
    f = dir_files(path);
    bench_rm_rf(path);
    return f;
}

static void space_variant(const char *dir, space_run *r, uint64_t seed, int keep)
{
    char path[1100], fpath[1100];
    mset s;
    cairn_db *db;
    cairn_mem *mem;
    double t0, c0;

    snprintf(path, sizeof path, "%s/compact-%s", dir, r->name);
    snprintf(fpath, sizeof fpath, "%s/compact-%s-fresh", dir, r->name);
    bench_rm_rf(path);
    mset_alloc(&s, r->n, 1);
    db = db_open(path, 1, 0);
    mem = mem_open(db);
    t0 = bench_now();
    fill(mem, &s, seed, 1);
    r->fill_secs = bench_now() - t0;
    r->text_avg = (double)s.text_bytes / (double)s.n;
    r->text_min = s.text_min;
    r->text_max = s.text_max;
    t0 = bench_now();
    r->live = churn(mem, &s, r->del_frac, r->upd_frac, seed);
    r->churn_secs = bench_now() - t0;
    bench_check(db, cairn_flush(db), "cairn_flush");
    sync(); /* the fill's dirty pages are not written back on the compaction's time */
    t0 = bench_now();
    c0 = bench_cpu(CLOCK_PROCESS_CPUTIME_ID);
    mem_check(mem, cairn_mem_compact(mem, 0, &r->rep), "cairn_mem_compact");
    r->compact_cpu = bench_cpu(CLOCK_PROCESS_CPUTIME_ID) - c0;
    r->compact_secs = bench_now() - t0;
    mem_check(mem, cairn_mem_checkpoint(mem), "cairn_mem_checkpoint");
    cairn_mem_close(mem);
    bench_check(db, cairn_close(db), "cairn_close");
    r->compacted = dir_files(path);
    {
        cairn_mem_stats st;
        db = db_open(path, 0, 1);
        mem = mem_open(db);
        mem_check(mem, cairn_mem_stats_get(mem, &st), "cairn_mem_stats_get");
        r->live_after = st.total;
        r->deleted_after = st.deleted;
        cairn_mem_stats_free(&st);
        cairn_mem_close(mem);
        r->verify_rc = cairn_verify(db, count_problem, &r->verify_problems, NULL);
        cairn_close(db);
    }
    if (!keep)
        bench_rm_rf(path);
    r->fresh = fresh_store(fpath, &s, 0);
    r->fresh_sealed = fresh_store(fpath, &s, 1);
    mset_free(&s);
}

static void target_line(const char *name, double value, double threshold)
{
    int pass = value <= threshold;
    printf("{\"bench\":\"compact\",\"part\":\"target\",\"name\":\"%s\",\"value\":%.3f,"
           "\"threshold\":%.1f,\"pass\":%s}\n",
           name, value, threshold, pass ? "true" : "false");
    fflush(stdout);
    fprintf(stderr, "  %-34s %7.3fx  <= %.1fx  %s\n", name, value, threshold,
            pass ? "PASS" : "FAIL");
}

static void space_report(const space_run *r)
{
    const cairn_compact_report *p = &r->rep;
    double ratio = (double)r->compacted.total / (double)r->fresh.total,
           log_ratio = (double)r->compacted.log / (double)r->fresh.log,
           ratio_s = (double)r->compacted.total / (double)r->fresh_sealed.total,
           log_ratio_s = (double)r->compacted.log / (double)r->fresh_sealed.log,
           mbps = (double)p->bytes_before / r->compact_secs / 1e6;
    printf("{\"bench\":\"compact\",\"part\":\"space\",\"variant\":\"%s\",\"memories\":%zu,"
           "\"removed\":%zu,\"updated\":%zu,\"live\":%zu,\"text_avg_bytes\":%.1f,"
           "\"text_min_bytes\":%zu,\"text_max_bytes\":%zu,\"fill_seconds\":%.3f,"
           "\"churn_seconds\":%.3f,\"compact_seconds\":%.3f,\"compact_cpu_seconds\":%.3f,"
           "\"compact_mb_per_s\":%.1f,"
           "\"records_before\":%" PRIu64 ",\"records_after\":%" PRIu64
           ",\"bytes_before\":%" PRIu64 ",\"bytes_after\":%" PRIu64 ",\"dropped\":%" PRIu64
           ",\"dropped_bytes\":%" PRIu64 ",\"memories_dropped\":%" PRIu64
           ",\"memories_in_grace\":%" PRIu64 ",\"memories_pinned\":%" PRIu64
           ",\"segments\":%" PRIu64 ",\"rewritten\":%" PRIu64 ",\"rolled\":%" PRIu64
           ",\"compacted_bytes\":%" PRIu64 ",\"compacted_log_bytes\":%" PRIu64
           ",\"compacted_index_bytes\":%" PRIu64 ",\"compacted_alloc_bytes\":%" PRIu64
           ",\"fresh_bytes\":%" PRIu64 ",\"fresh_log_bytes\":%" PRIu64
           ",\"fresh_index_bytes\":%" PRIu64 ",\"fresh_alloc_bytes\":%" PRIu64
           ",\"fresh_sealed_bytes\":%" PRIu64 ",\"fresh_sealed_log_bytes\":%" PRIu64
           ",\"ratio\":%.3f,\"log_ratio\":%.3f,\"ratio_vs_sealed\":%.3f,"
           "\"log_ratio_vs_sealed\":%.3f,\"live_after\":%" PRIu64 ",\"deleted_after\":%" PRIu64
           ",\"verify_problems\":%" PRIu64 ",\"seed\":%" PRIu64 "}\n",
           r->name, r->n, r->n - r->live, (size_t)((double)r->n * r->upd_frac + 0.5), r->live,
           r->text_avg, r->text_min, r->text_max, r->fill_secs, r->churn_secs, r->compact_secs, r->compact_cpu, mbps, p->records_before,
           p->records_after, p->bytes_before, p->bytes_after, p->dropped, p->dropped_bytes,
           p->memories_dropped, p->memories_in_grace, p->memories_pinned, p->segments,
           p->rewritten, p->rolled, r->compacted.total, r->compacted.log, r->compacted.index,
           r->compacted.alloc, r->fresh.total, r->fresh.log, r->fresh.index, r->fresh.alloc,
           r->fresh_sealed.total, r->fresh_sealed.log, ratio, log_ratio, ratio_s, log_ratio_s,
           r->live_after, r->deleted_after, r->verify_problems, bench_seed);
    fflush(stdout);
    fprintf(stderr, "%s: %zu memories (text %.0f bytes on average, %zu-%zu), %zu removed, "
            "%zu updated, %zu live (fill %.2f s, churn %.2f s)\n", r->name, r->n, r->text_avg,
            r->text_min, r->text_max, r->n - r->live,
            (size_t)((double)r->n * r->upd_frac + 0.5), r->live, r->fill_secs, r->churn_secs);
    fprintf(stderr, "  compaction  %.3f s wall, %.3f s CPU; log %.1f MB -> %.1f MB "
            "(%.1f MB/s of log); records %" PRIu64 " -> %" PRIu64 "; %" PRIu64
            " memories dropped, %" PRIu64 " pinned, %" PRIu64 " in grace\n",
            r->compact_secs, r->compact_cpu, (double)p->bytes_before / 1e6,
            (double)p->bytes_after / 1e6, mbps, p->records_before, p->records_after,
            p->memories_dropped, p->memories_pinned, p->memories_in_grace);
    fprintf(stderr, "  %-13s %12s %12s %12s %12s\n", "store", "total B", "log B", "index B",
            "allocated B");
    fprintf(stderr, "  %-13s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n",
            "compacted", r->compacted.total, r->compacted.log, r->compacted.index,
            r->compacted.alloc);
    fprintf(stderr, "  %-13s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n",
            "fresh", r->fresh.total, r->fresh.log, r->fresh.index, r->fresh.alloc);
    fprintf(stderr, "  %-13s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n",
            "fresh_sealed", r->fresh_sealed.total, r->fresh_sealed.log, r->fresh_sealed.index,
            r->fresh_sealed.alloc);
    fprintf(stderr, "  compacted / fresh: %.3fx (log %.3fx); / fresh_sealed: %.3fx (log %.3fx)\n",
            ratio, log_ratio, ratio_s, log_ratio_s);
    fprintf(stderr, "  reopened: %" PRIu64 " live (expected %zu), %" PRIu64
            " deleted; verify: %" PRIu64 " problems%s\n",
            r->live_after, r->live, r->deleted_after, r->verify_problems,
            r->verify_rc == CAIRN_OK ? "" : " (verify did not run)");
    if (r->live_after != r->live)
        fprintf(stderr, "  WARNING: live count after compaction is %" PRIu64 ", expected %zu\n",
                r->live_after, r->live);
    if (p->memories_pinned != 0)
        fprintf(stderr, "  WARNING: %" PRIu64 " memories pinned\n", p->memories_pinned);
}

/* ---- recall during a compaction ------------------------------------------- */

typedef struct sample {
    double t, lat; /* start (CLOCK_MONOTONIC, shared by every process), seconds */
    int rc;        /* the writer's: the store's status (the reader stops at a failure) */
} sample;

typedef struct shared {
    _Atomic int ready, stop, opened, done;
    double t_ready, t_open0, t_cs, t_ce;
    double open_secs, compact_cpu;
    int reader_rc, comp_rc;
    char reader_err[CAIRN_ERRMSG_MAX + 64], comp_err[CAIRN_ERRMSG_MAX + 64];
    cairn_compact_report rep;
    uint64_t unrecorded, reader_live_before, reader_live_after, dropped_samples;
    /* The writer's (reader_rc/reader_err: its open failed; live counts in
     * reader_live_*): stores that added a memory (warm-up included), that
     * found the text stored already, that failed, and the first failure. */
    uint64_t w_added, w_existed, w_failed, w_elocked;
    double close_secs, w_close_secs; /* the compactor's close; the writer's */
    int w_first_rc;
    char w_first_err[CAIRN_ERRMSG_MAX + 64];
    _Atomic size_t n;
    size_t cap;
    sample s[];
} shared;

static shared *shared_alloc(size_t cap)
{
    size_t bytes = sizeof(shared) + cap * sizeof(sample);
    shared *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        bench_die("mmap: %s", strerror(errno));
    memset(p, 0, sizeof *p);
    p->cap = cap;
    return p;
}

static void sleep_s(double s)
{
    struct timespec ts;
    if (s <= 0)
        return;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}

static uint64_t live_count(cairn_mem *mem)
{
    cairn_mem_stats st;
    uint64_t n;
    if (cairn_mem_stats_get(mem, &st) != CAIRN_OK)
        return UINT64_MAX;
    n = st.total;
    cairn_mem_stats_free(&st);
    return n;
}

static void reader(const char *path, shared *sh)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_db *db;
    cairn_mem *mem;
    size_t q = 0;
    double warm_end;
    int rc;

    o.read_only = 1;
    if ((rc = cairn_open(&db, path, &o, err, sizeof err)) != CAIRN_OK) {
        sh->reader_rc = rc;
        snprintf(sh->reader_err, sizeof sh->reader_err, "cairn_open: %s", err);
        atomic_store(&sh->ready, 1);
        return;
    }
    if ((rc = cairn_mem_open(db, NULL, &mem)) != CAIRN_OK) {
        sh->reader_rc = rc;
        snprintf(sh->reader_err, sizeof sh->reader_err, "cairn_mem_open: %s",
                 cairn_errmsg(db));
        atomic_store(&sh->ready, 1);
        cairn_close(db);
        return;
    }
    sh->reader_live_before = live_count(mem);
    ro.k = 10;
    ro.mode = CAIRN_RECALL_LEXICAL;
    warm_end = bench_now() + 0.5;
    for (int recording = 0;;) {
        cairn_recall_hit *h;
        size_t nh;
        double t0, t;
        if (!recording && bench_now() >= warm_end) {
            recording = 1;
            sh->t_ready = bench_now();
            atomic_store(&sh->ready, 1);
        }
        if (atomic_load_explicit(&sh->stop, memory_order_relaxed))
            break;
        t0 = bench_now();
        rc = cairn_mem_recall(mem, queries[q++ % n_queries], &ro, &h, &nh);
        t = bench_now() - t0;
        if (rc != CAIRN_OK) {
            sh->reader_rc = rc;
            snprintf(sh->reader_err, sizeof sh->reader_err, "cairn_mem_recall: %s",
                     cairn_mem_errmsg(mem));
            break;
        }
        cairn_recall_free(h, nh);
        if (recording) {
            size_t i = atomic_load_explicit(&sh->n, memory_order_relaxed);
            if (i < sh->cap) {
                sh->s[i].t = t0;
                sh->s[i].lat = t;
                atomic_store_explicit(&sh->n, i + 1, memory_order_release);
            } else {
                sh->dropped_samples++;
            }
        }
    }
    sh->reader_live_after = live_count(mem);
    sh->unrecorded = cairn_mem_access_unrecorded(mem);
    cairn_mem_close(mem);
    cairn_close(db);
}

static void compactor(const char *path, shared *sh)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_db *db;
    cairn_mem *mem;
    double c0;
    int rc;

    sh->t_open0 = bench_now();
    if ((rc = cairn_open(&db, path, &o, err, sizeof err)) != CAIRN_OK) {
        sh->comp_rc = rc;
        snprintf(sh->comp_err, sizeof sh->comp_err, "cairn_open: %s", err);
        return;
    }
    if ((rc = cairn_mem_open(db, NULL, &mem)) != CAIRN_OK) {
        sh->comp_rc = rc;
        snprintf(sh->comp_err, sizeof sh->comp_err, "cairn_mem_open: %s", cairn_errmsg(db));
        cairn_close(db);
        return;
    }
    sh->open_secs = bench_now() - sh->t_open0;
    atomic_store(&sh->opened, 1);
    c0 = bench_cpu(CLOCK_PROCESS_CPUTIME_ID);
    sh->t_cs = bench_now();
    /* A handle with background threads compacts on its own (the writer's,
     * or this one's since its open): a compaction already running is
     * CAIRN_ELOCKED, and the user's answer is to try again when it is done
     * (its time counts as the compaction's). */
    while ((rc = cairn_mem_compact(mem, 0, &sh->rep)) == CAIRN_ELOCKED &&
           bench_now() - sh->t_cs < 120)
        sleep_s(0.02);
    sh->t_ce = bench_now();
    sh->compact_cpu = bench_cpu(CLOCK_PROCESS_CPUTIME_ID) - c0;
    if (rc != CAIRN_OK) {
        sh->comp_rc = rc;
        snprintf(sh->comp_err, sizeof sh->comp_err, "cairn_mem_compact: %s",
                 cairn_mem_errmsg(mem));
    }
    atomic_store(&sh->done, 1);
    c0 = bench_now();
    cairn_mem_close(mem);
    cairn_close(db);
    sh->close_secs = bench_now() - c0;
}

/* The writer's texts: one sentence of the wide vocabulary each (about
 * 30-120 bytes, as an agent's short notes), from its own stream, never one
 * it drew before (a set of 64-bit hashes, outside the timed call), so
 * every store adds a memory. */
typedef struct wtexts {
    uint64_t *set;
    size_t cap, n;
} wtexts;

static size_t wtext_next(wtexts *w, char *buf, size_t cap)
{
    for (;;) {
        size_t len = bench_sentence(buf, cap, BENCH_VOCAB_WIDE), slot;
        uint64_t h = 0xcbf29ce484222325ull;
        for (size_t k = 0; k < len; k++)
            h = (h ^ (uint8_t)buf[k]) * 0x100000001b3ull;
        h |= 1; /* 0 marks an empty slot */
        if (w->n >= w->cap / 2) /* full enough: no more checks (existed counts them) */
            return len;
        for (slot = h & (w->cap - 1); w->set[slot] != 0 && w->set[slot] != h;
             slot = (slot + 1) & (w->cap - 1))
            ;
        if (w->set[slot] == h)
            continue;
        w->set[slot] = h;
        w->n++;
        return len;
    }
}

/* A writer handle in its own process (background threads on, the library
 * default; busy timeout 5000 ms, the default, set explicitly): stores one
 * memory per cairn_mem_store in a closed loop, timing every call, until
 * told to stop. 0.5 s of warm-up first, as the reader. */
static void writer(const char *path, shared *sh)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "", buf[160];
    cairn_db *db;
    cairn_mem *mem;
    wtexts w;
    double warm_end;
    uint64_t i = 0;
    int rc;

    o.busy_timeout_ms = CAIRN_BUSY_TIMEOUT_DEFAULT;
    o.background = 1;
    w.cap = (size_t)1 << 22;
    w.n = 0;
    w.set = bench_malloc(w.cap * sizeof *w.set);
    memset(w.set, 0, w.cap * sizeof *w.set);
    bench_rng_state = bench_mix64(bench_seed ^ 0x3717E5ull);
    if ((rc = cairn_open(&db, path, &o, err, sizeof err)) != CAIRN_OK) {
        sh->reader_rc = rc;
        snprintf(sh->reader_err, sizeof sh->reader_err, "cairn_open: %s", err);
        atomic_store(&sh->ready, 1);
        free(w.set);
        return;
    }
    if ((rc = cairn_mem_open(db, NULL, &mem)) != CAIRN_OK) {
        sh->reader_rc = rc;
        snprintf(sh->reader_err, sizeof sh->reader_err, "cairn_mem_open: %s",
                 cairn_errmsg(db));
        atomic_store(&sh->ready, 1);
        cairn_close(db);
        free(w.set);
        return;
    }
    sh->reader_live_before = live_count(mem);
    warm_end = bench_now() + 0.5;
    for (int recording = 0;; i++) {
        cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
        int existed = 0;
        double t0, t;
        if (!recording && bench_now() >= warm_end) {
            recording = 1;
            sh->t_ready = bench_now();
            atomic_store(&sh->ready, 1);
        }
        if (atomic_load_explicit(&sh->stop, memory_order_relaxed))
            break;
        wtext_next(&w, buf, sizeof buf);
        so.category = CATEGORIES[i % NELEM(CATEGORIES)];
        t0 = bench_now();
        rc = cairn_mem_store(mem, buf, &so, NULL, &existed);
        t = bench_now() - t0;
        if (rc == CAIRN_OK) {
            if (existed)
                sh->w_existed++;
            else
                sh->w_added++;
        } else {
            sh->w_elocked += rc == CAIRN_ELOCKED;
            if (sh->w_failed++ == 0) {
                sh->w_first_rc = rc;
                snprintf(sh->w_first_err, sizeof sh->w_first_err, "cairn_mem_store: %s (%s)",
                         cairn_strerror(rc), cairn_mem_errmsg(mem));
            }
        }
        if (recording) {
            size_t k = atomic_load_explicit(&sh->n, memory_order_relaxed);
            if (k < sh->cap) {
                sh->s[k].t = t0;
                sh->s[k].lat = t;
                sh->s[k].rc = rc;
                atomic_store_explicit(&sh->n, k + 1, memory_order_release);
            } else {
                sh->dropped_samples++;
            }
        }
        if (rc == CAIRN_EDEAD)
            break; /* the handle is gone: nothing more to measure */
    }
    sh->reader_live_after = live_count(mem);
    {
        double c0 = bench_now();
        cairn_mem_close(mem);
        cairn_close(db);
        sh->w_close_secs = bench_now() - c0;
    }
    free(w.set);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct lat {
    double *v;
    size_t n;
} lat;

static double pct(const lat *l, double p)
{
    size_t i = (size_t)(p * (double)(l->n - 1) + 0.5);
    return l->n ? l->v[i] : 0;
}

static lat window(const shared *sh, double from, double to)
{
    lat l;
    size_t n = atomic_load(&sh->n);
    l.v = bench_malloc((n + 1) * sizeof *l.v);
    l.n = 0;
    for (size_t i = 0; i < n; i++)
        if (sh->s[i].t >= from && sh->s[i].t < to)
            l.v[l.n++] = sh->s[i].lat;
    qsort(l.v, l.n, sizeof *l.v, cmp_double);
    return l;
}

static pid_t spawn(void (*fn)(const char *, shared *), const char *path, shared *sh)
{
    pid_t pid;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0)
        bench_die("fork: %s", strerror(errno));
    if (pid == 0) {
        fn(path, sh);
        _exit(0);
    }
    return pid;
}

static void reap(pid_t pid, const char *who)
{
    int st;
    if (waitpid(pid, &st, 0) < 0)
        bench_die("waitpid (%s): %s", who, strerror(errno));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        bench_die("the %s did not exit cleanly (status 0x%x)", who, (unsigned)st);
}

typedef struct round_out {
    lat idle, during;
    size_t live;
    double compact_secs;
    uint64_t bytes_before, records_before;
} round_out;

static void lat_append(lat *to, const lat *from)
{
    double *v = realloc(to->v, (to->n + from->n + 1) * sizeof *v);
    if (v == NULL)
        bench_die("out of memory");
    memcpy(v + to->n, from->v, from->n * sizeof *v);
    to->v = v;
    to->n += from->n;
}

static void lat_sort(lat *l)
{
    qsort(l->v, l->n, sizeof *l->v, cmp_double);
}

/* Copy the store directory `from` (regular files only) to `to`, byte for
 * byte: the writer's phase compacts the same store as the reader's. */
static void copy_store(const char *from, const char *to)
{
    DIR *d = opendir(from);
    struct dirent *de;
    char *buf = bench_malloc(1u << 20);
    bench_rm_rf(to);
    if (d == NULL || mkdir(to, 0755) != 0)
        bench_die("copy %s -> %s: %s", from, to, strerror(errno));
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        int in, out;
        ssize_t got;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            bench_die("copy %s: %s is not a regular file", from, de->d_name);
        in = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC);
        {
            char dst[1400];
            snprintf(dst, sizeof dst, "%s/%s", to, de->d_name);
            out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 0777);
        }
        if (in < 0 || out < 0)
            bench_die("copy %s/%s: %s", from, de->d_name, strerror(errno));
        while ((got = read(in, buf, 1u << 20)) != 0) {
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0)
                bench_die("copy %s/%s: %s", from, de->d_name, strerror(errno));
            bench_write_all(out, buf, (size_t)got);
        }
        close(in);
        close(out);
    }
    closedir(d);
    free(buf);
}

typedef struct wround_out {
    lat idle, during;         /* every store's latency, failed ones included */
    uint64_t idle_failed, during_failed, failed, elocked; /* failed, elocked: the whole run */
    double idle_secs, during_secs, after_max;
} wround_out;

static double lat_max(const lat *l)
{
    return l->n ? l->v[l->n - 1] : 0;
}

/* How many of l (sorted) are over s seconds. */
static size_t lat_over(const lat *l, double s)
{
    size_t k = l->n;
    while (k > 0 && l->v[k - 1] > s)
        k--;
    return l->n - k;
}

/* Of the writer's samples that start in [from, to): failed, and of those
 * CAIRN_ELOCKED. */
static uint64_t wfailed(const shared *sh, double from, double to, uint64_t *elocked)
{
    size_t n = atomic_load(&sh->n);
    uint64_t f = 0, e = 0;
    for (size_t i = 0; i < n; i++)
        if (sh->s[i].t >= from && sh->s[i].t < to && sh->s[i].rc != CAIRN_OK) {
            f++;
            e += sh->s[i].rc == CAIRN_ELOCKED;
        }
    if (elocked != NULL)
        *elocked = e;
    return f;
}

/* The writer's phase of a round, on `path` (a copy of the round's store):
 * stores idle, then during a compaction in a third process. */
static void writer_round(const char *path, size_t live, double idle_secs, int round,
                         FILE *samples, wround_out *wo)
{
    size_t cap = 4u << 20;
    shared *sh = shared_alloc(cap);
    pid_t wpid, cpid;
    double load1[1] = {0};

    wpid = spawn(writer, path, sh);
    while (!atomic_load(&sh->ready))
        sleep_s(0.001);
    if (sh->reader_rc != CAIRN_OK) {
        reap(wpid, "writer");
        bench_die("writer: %s: %s", cairn_strerror(sh->reader_rc), sh->reader_err);
    }
    sleep_s(sh->t_ready + idle_secs - bench_now());
    cpid = spawn(compactor, path, sh);
    reap(cpid, "compactor");
    sleep_s(0.2);
    atomic_store(&sh->stop, 1);
    reap(wpid, "writer");
    if (sh->comp_rc != CAIRN_OK)
        bench_die("compactor (writer phase): %s: %s", cairn_strerror(sh->comp_rc),
                  sh->comp_err);
    if (sh->reader_rc != CAIRN_OK)
        bench_die("writer: %s: %s", cairn_strerror(sh->reader_rc), sh->reader_err);
    getloadavg(load1, 1);
    if (samples != NULL) {
        size_t ns = atomic_load(&sh->n);
        for (size_t i = 0; i < ns; i++) {
            const sample *x = &sh->s[i];
            const char *ph = x->t < sh->t_ready + idle_secs ? "store-idle"
                             : x->t < sh->t_cs              ? "store-opening"
                             : x->t < sh->t_ce              ? "store-during"
                                                            : "store-after";
            fprintf(samples, "%d %s %.3f %.4f %d\n", round + 1, ph, (x->t - sh->t_cs) * 1e3,
                    x->lat * 1e3, x->rc);
        }
    }
    {
        double i0 = sh->t_ready, i1 = sh->t_ready + idle_secs;
        lat idle = window(sh, i0, i1), during = window(sh, sh->t_cs, sh->t_ce),
            opening = window(sh, sh->t_open0, sh->t_cs), after = window(sh, sh->t_ce, 1e300);
        /* failures and ELOCKED of the whole run: warm-up included */
        uint64_t de, ifl = wfailed(sh, i0, i1, NULL), dfl = wfailed(sh, sh->t_cs, sh->t_ce, &de),
                 ofl = wfailed(sh, sh->t_open0, sh->t_cs, NULL),
                 afl = wfailed(sh, sh->t_ce, 1e300, NULL), all_f = sh->w_failed,
                 all_e = sh->w_elocked;
        const cairn_compact_report *p = &sh->rep;
        double secs = sh->t_ce - sh->t_cs, ip50 = pct(&idle, 0.5), ip99 = pct(&idle, 0.99),
               dp50 = pct(&during, 0.5), dp99 = pct(&during, 0.99), imax = lat_max(&idle),
               dmax = lat_max(&during), omax = lat_max(&opening), amax = lat_max(&after),
               irate = (double)(idle.n - ifl) / idle_secs,
               drate = (double)(during.n - dfl) / secs;
        printf("{\"bench\":\"compact\",\"part\":\"writer\",\"round\":%d,\"background\":1,"
               "\"busy_timeout_ms\":%u,\"durability\":\"none\","
               "\"compactor_open_seconds\":%.3f,\"compact_seconds\":%.3f,"
               "\"compact_cpu_seconds\":%.3f,\"compactor_close_seconds\":%.3f,"
               "\"records_before\":%" PRIu64 ",\"records_after\":%" PRIu64
               ",\"memories_dropped\":%" PRIu64 ",\"memories_pinned\":%" PRIu64
               ",\"rolled\":%" PRIu64 ",\"idle_seconds\":%.1f,\"idle_stores\":%zu,"
               "\"idle_p50_ms\":%.4f,\"idle_p99_ms\":%.4f,\"idle_max_ms\":%.4f,"
               "\"idle_over_10ms\":%zu,\"idle_stores_per_s\":%.0f,\"idle_failures\":%" PRIu64
               ",\"during_stores\":%zu,\"during_p50_ms\":%.4f,\"during_p99_ms\":%.4f,"
               "\"during_max_ms\":%.4f,\"during_over_10ms\":%zu,\"during_stores_per_s\":%.0f,"
               "\"during_failures\":%" PRIu64 ",\"during_elocked\":%" PRIu64
               ",\"opening_stores\":%zu,\"opening_max_ms\":%.4f,\"opening_failures\":%" PRIu64
               ",\"after_stores\":%zu,\"after_max_ms\":%.4f,\"after_failures\":%" PRIu64
               ",\"p50_ratio\":%.3f,\"p99_ratio\":%.3f,\"failures\":%" PRIu64
               ",\"elocked\":%" PRIu64 ",\"first_failure\":\"%s\",\"added\":%" PRIu64
               ",\"existed\":%" PRIu64 ",\"writer_live_before\":%" PRIu64
               ",\"writer_live_after\":%" PRIu64 ",\"writer_close_seconds\":%.3f,"
               "\"dropped_samples\":%" PRIu64 ",\"load1\":%.2f,\"seed\":%" PRIu64 "}\n",
               round + 1, CAIRN_BUSY_TIMEOUT_DEFAULT, sh->open_secs, secs, sh->compact_cpu,
               sh->close_secs, p->records_before, p->records_after, p->memories_dropped,
               p->memories_pinned, p->rolled, idle_secs, idle.n, ip50 * 1e3, ip99 * 1e3,
               imax * 1e3, lat_over(&idle, 0.010), irate, ifl, during.n, dp50 * 1e3,
               dp99 * 1e3, dmax * 1e3, lat_over(&during, 0.010), drate, dfl, de, opening.n,
               omax * 1e3, ofl, after.n, amax * 1e3, afl, dp50 / ip50, dp99 / ip99, all_f,
               all_e, sh->w_failed ? cairn_strerror(sh->w_first_rc) : "", sh->w_added,
               sh->w_existed, sh->reader_live_before, sh->reader_live_after, sh->w_close_secs,
               sh->dropped_samples, load1[0], bench_seed);
        fflush(stdout);
        fprintf(stderr, "  writer phase, on a copy of the store: compaction %.3f s wall, %.3f s "
                "CPU, %" PRIu64 " memories dropped, rolled %" PRIu64 "; its open %.3f s, its "
                "close %.3f s\n", secs, sh->compact_cpu, p->memories_dropped, p->rolled,
                sh->open_secs, sh->close_secs);
        fprintf(stderr, "  store idle    %8zu stores  p50 %.3f ms  p99 %.3f ms  max %8.3f ms  "
                "%3zu over 10 ms  %6.0f stores/s  %" PRIu64 " failed\n", idle.n, ip50 * 1e3,
                ip99 * 1e3, imax * 1e3, lat_over(&idle, 0.010), irate, ifl);
        fprintf(stderr, "  store during  %8zu stores  p50 %.3f ms  p99 %.3f ms  max %8.3f ms  "
                "%3zu over 10 ms  %6.0f stores/s  %" PRIu64 " failed (p99 %.2fx idle)\n",
                during.n, dp50 * 1e3, dp99 * 1e3, dmax * 1e3, lat_over(&during, 0.010), drate,
                dfl, dp99 / ip99);
        fprintf(stderr, "  store around  compactor's open: %zu stores, max %.3f ms, %" PRIu64
                " failed; after the compaction (its close included): %zu stores, max %.3f "
                "ms, %" PRIu64 " failed\n", opening.n, omax * 1e3, ofl, after.n, amax * 1e3, afl);
        if (all_f)
            fprintf(stderr, "  WARNING: %" PRIu64 " stores failed (%" PRIu64 " CAIRN_ELOCKED); "
                    "the first: %s\n", all_f, all_e, sh->w_first_err);
        if (sh->reader_live_before != live ||
            sh->reader_live_after != live + sh->w_added)
            fprintf(stderr, "  WARNING: the writer's live count is %" PRIu64 " before, %" PRIu64
                    " after, not %zu and %zu + %" PRIu64 "\n", sh->reader_live_before,
                    sh->reader_live_after, live, live, sh->w_added);
        if (sh->w_existed)
            fprintf(stderr, "  %" PRIu64 " of the writer's texts were stored already\n",
                    sh->w_existed);
        if (during.n < 100)
            fprintf(stderr, "  WARNING: only %zu stores during the compaction\n", during.n);
        wo->idle = idle;
        wo->during = during;
        wo->idle_failed = ifl;
        wo->during_failed = dfl;
        wo->failed = all_f;
        wo->elocked = all_e;
        wo->after_max = amax;
        wo->idle_secs = idle_secs;
        wo->during_secs = secs;
        free(opening.v);
        free(after.v);
    }
    munmap(sh, sizeof(shared) + cap * sizeof(sample));
}

/* One round: build the store, recall idle, then during a compaction. */
static void recall_round(const char *dir, size_t n, double idle_secs, uint64_t seed, int keep,
                         int round, FILE *samples, round_out *ro, double widle_secs,
                         wround_out *wo)
{
    char path[1100], wpath[1100];
    mset s;
    cairn_db *db;
    cairn_mem *mem;
    shared *sh;
    size_t live, cap = 4u << 20;
    pid_t rpid, cpid;
    double t0, fill_secs, churn_secs, load1[1] = {0};
    files before;

    snprintf(path, sizeof path, "%s/compact-big", dir);
    snprintf(wpath, sizeof wpath, "%s/compact-big-writer", dir);
    bench_rm_rf(path);
    mset_alloc(&s, n, 0);
    fprintf(stderr, "recall round %d: building a store of %zu memories, 90%% removed ...\n",
            round + 1, n);
    db = db_open(path, 1, 0);
    mem = mem_open(db);
    t0 = bench_now();
    fill(mem, &s, seed ^ 0xB16B16ull, 0);
    fill_secs = bench_now() - t0;
    t0 = bench_now();
    live = churn(mem, &s, 0.9, 0.0, seed ^ 0xB16B16ull);
    churn_secs = bench_now() - t0;
    /* After every removal: the index file covers them all, so it pins none. */
    mem_check(mem, cairn_mem_checkpoint(mem), "cairn_mem_checkpoint");
    cairn_mem_close(mem);
    bench_check(db, cairn_close(db), "cairn_close");
    mset_free(&s);
    before = dir_files(path);
    if (wo != NULL)
        copy_store(path, wpath); /* the writer's phase compacts this copy */
    sync();

    sh = shared_alloc(cap);
    rpid = spawn(reader, path, sh);
    while (!atomic_load(&sh->ready))
        sleep_s(0.001);
    if (sh->reader_rc != CAIRN_OK) {
        reap(rpid, "reader");
        bench_die("reader: %s: %s", cairn_strerror(sh->reader_rc), sh->reader_err);
    }
    sleep_s(sh->t_ready + idle_secs - bench_now());
    cpid = spawn(compactor, path, sh);
    reap(cpid, "compactor");
    sleep_s(0.2);
    atomic_store(&sh->stop, 1);
    reap(rpid, "reader");
    if (sh->comp_rc != CAIRN_OK)
        bench_die("compactor: %s: %s", cairn_strerror(sh->comp_rc), sh->comp_err);
    if (sh->reader_rc != CAIRN_OK)
        bench_die("reader: %s: %s", cairn_strerror(sh->reader_rc), sh->reader_err);
    getloadavg(load1, 1);
    if (samples != NULL) {
        size_t ns = atomic_load(&sh->n);
        for (size_t i = 0; i < ns; i++) {
            const sample *x = &sh->s[i];
            const char *ph = x->t < sh->t_ready + idle_secs ? "idle"
                             : x->t < sh->t_cs              ? "opening"
                             : x->t < sh->t_ce              ? "during"
                                                            : "after";
            fprintf(samples, "%d %s %.3f %.4f\n", round + 1, ph, (x->t - sh->t_cs) * 1e3,
                    x->lat * 1e3);
        }
    }
    {
        lat idle = window(sh, sh->t_ready, sh->t_ready + idle_secs);
        lat during = window(sh, sh->t_cs, sh->t_ce);
        lat opening = window(sh, sh->t_open0, sh->t_cs);
        const cairn_compact_report *p = &sh->rep;
        double secs = sh->t_ce - sh->t_cs, mbps = (double)p->bytes_before / secs / 1e6;
        double ip50 = pct(&idle, 0.5), ip99 = pct(&idle, 0.99), dp50 = pct(&during, 0.5),
               dp99 = pct(&during, 0.99), imax = idle.n ? idle.v[idle.n - 1] : 0,
               dmax = during.n ? during.v[during.n - 1] : 0;
        files after = dir_files(path);
        printf("{\"bench\":\"compact\",\"part\":\"recall\",\"round\":%d,\"memories\":%zu,"
               "\"live\":%zu,\"fill_seconds\":%.3f,\"churn_seconds\":%.3f,"
               "\"store_bytes_before\":%" PRIu64 ",\"store_bytes_after\":%" PRIu64
               ",\"compactor_open_seconds\":%.3f,\"compact_seconds\":%.3f,"
               "\"compact_cpu_seconds\":%.3f,\"compact_mb_per_s\":%.1f,"
               "\"compact_records_per_s\":%.0f,\"records_before\":%" PRIu64
               ",\"records_after\":%" PRIu64 ",\"bytes_before\":%" PRIu64
               ",\"bytes_after\":%" PRIu64 ",\"memories_dropped\":%" PRIu64
               ",\"memories_pinned\":%" PRIu64 ",\"rolled\":%" PRIu64
               ",\"idle_seconds\":%.1f,\"idle_recalls\":%zu,"
               "\"idle_p50_ms\":%.4f,\"idle_p99_ms\":%.4f,\"idle_max_ms\":%.4f,"
               "\"during_recalls\":%zu,\"during_p50_ms\":%.4f,\"during_p99_ms\":%.4f,"
               "\"during_max_ms\":%.4f,\"opening_recalls\":%zu,\"opening_p99_ms\":%.4f,"
               "\"p50_ratio\":%.3f,\"p99_ratio\":%.3f,\"reader_live_before\":%" PRIu64
               ",\"reader_live_after\":%" PRIu64 ",\"access_unrecorded\":%" PRIu64
               ",\"dropped_samples\":%" PRIu64 ",\"load1\":%.2f,\"seed\":%" PRIu64 "}\n",
               round + 1, n, live, fill_secs, churn_secs, before.total, after.total,
               sh->open_secs, secs, sh->compact_cpu, mbps, (double)p->records_before / secs,
               p->records_before, p->records_after, p->bytes_before, p->bytes_after,
               p->memories_dropped, p->memories_pinned, p->rolled, idle_secs, idle.n,
               ip50 * 1e3, ip99 * 1e3, imax * 1e3, during.n, dp50 * 1e3, dp99 * 1e3,
               dmax * 1e3, opening.n, pct(&opening, 0.99) * 1e3, dp50 / ip50, dp99 / ip99,
               sh->reader_live_before, sh->reader_live_after, sh->unrecorded,
               sh->dropped_samples, load1[0], bench_seed);
        fflush(stdout);
        fprintf(stderr, "  store %.1f MB -> %.1f MB; compaction (its own process) %.3f s wall, "
                "%.3f s CPU, %.1f MB/s of segment files (%.1f -> %.1f MB), %.0f records/s, "
                "%" PRIu64 " memories dropped, %" PRIu64 " pinned; its open took %.3f s\n",
                (double)before.total / 1e6, (double)after.total / 1e6, secs, sh->compact_cpu,
                mbps, (double)p->bytes_before / 1e6, (double)p->bytes_after / 1e6,
                (double)p->records_before / secs, p->memories_dropped, p->memories_pinned,
                sh->open_secs);
        fprintf(stderr, "  idle    %8zu recalls  p50 %.3f ms  p99 %.3f ms  max %.3f ms\n",
                idle.n, ip50 * 1e3, ip99 * 1e3, imax * 1e3);
        fprintf(stderr, "  during  %8zu recalls  p50 %.3f ms  p99 %.3f ms  max %.3f ms  "
                "(p99 %.2fx idle)\n", during.n, dp50 * 1e3, dp99 * 1e3, dmax * 1e3,
                dp99 / ip99);
        if (sh->reader_live_before != live || sh->reader_live_after != live)
            fprintf(stderr, "  WARNING: the reader's live count is %" PRIu64 " before, %" PRIu64
                    " after the compaction, not %zu\n", sh->reader_live_before,
                    sh->reader_live_after, live);
        if (p->memories_pinned != 0)
            fprintf(stderr, "  WARNING: %" PRIu64 " memories pinned\n", p->memories_pinned);
        if (sh->unrecorded)
            fprintf(stderr, "  %" PRIu64 " recalls' accesses were not recorded\n",
                    sh->unrecorded);
        if (during.n < 100)
            fprintf(stderr, "  WARNING: only %zu recalls during the compaction: raise --big-n\n",
                    during.n);
        ro->idle = idle;
        ro->during = during;
        ro->live = live;
        ro->compact_secs = secs;
        ro->bytes_before = p->bytes_before;
        ro->records_before = p->records_before;
        free(opening.v);
    }
    munmap(sh, sizeof(shared) + cap * sizeof(sample));
    if (!keep)
        bench_rm_rf(path);
    if (wo != NULL) {
        /* Apart from the reader: a closed-loop writer next to it would take
         * a core of 2 and make each recall catch up on its stores. */
        writer_round(wpath, live, widle_secs, round, samples, wo);
        if (!keep)
            bench_rm_rf(wpath);
    }
}

static void recall_bench(const char *dir, size_t n, double idle_secs, uint64_t seed, int keep,
                         int rounds, const char *samples_path, double writer_idle)
{
    lat idle = {0}, during = {0}, widle = {0}, wduring = {0};
    FILE *samples = NULL;
    double secs = 0, wisecs = 0, wdsecs = 0, wamax = 0;
    uint64_t bytes = 0, records = 0, wifl = 0, wdfl = 0, wfl = 0, wel = 0;

    if (samples_path != NULL && (samples = fopen(samples_path, "w")) == NULL)
        bench_die("%s: %s", samples_path, strerror(errno));
    fprintf(stderr, "recall during a compaction: %d round(s); a read-only handle in one "
            "process recalls (k 10, lexical, %zu queries, closed loop), another process "
            "compacts\n", rounds, n_queries);
    if (writer_idle > 0)
        fprintf(stderr, "  then, on a copy of the same store, a writer handle in one process "
                "stores (cairn_mem_store, one sentence each, closed loop; background 1, "
                "busy timeout %u ms), another process compacts\n", CAIRN_BUSY_TIMEOUT_DEFAULT);
    for (int r = 0; r < rounds; r++) {
        round_out ro;
        wround_out wo;
        memset(&wo, 0, sizeof wo);
        recall_round(dir, n, idle_secs, seed, keep, r, samples, &ro, writer_idle,
                     writer_idle > 0 ? &wo : NULL);
        lat_append(&widle, &wo.idle);
        lat_append(&wduring, &wo.during);
        wisecs += wo.idle_secs;
        wdsecs += wo.during_secs;
        wifl += wo.idle_failed;
        wdfl += wo.during_failed;
        wfl += wo.failed;
        wel += wo.elocked;
        wamax = wo.after_max > wamax ? wo.after_max : wamax;
        free(wo.idle.v);
        free(wo.during.v);
        lat_append(&idle, &ro.idle);
        lat_append(&during, &ro.during);
        secs += ro.compact_secs;
        bytes += ro.bytes_before;
        records += ro.records_before;
        free(ro.idle.v);
        free(ro.during.v);
    }
    if (samples != NULL)
        fclose(samples);
    lat_sort(&idle);
    lat_sort(&during);
    {
        double ip50 = pct(&idle, 0.5), ip99 = pct(&idle, 0.99), dp50 = pct(&during, 0.5),
               dp99 = pct(&during, 0.99);
        printf("{\"bench\":\"compact\",\"part\":\"recall_summary\",\"rounds\":%d,"
               "\"memories\":%zu,\"compact_seconds_mean\":%.3f,\"compact_mb_per_s\":%.1f,"
               "\"compact_records_per_s\":%.0f,\"idle_recalls\":%zu,\"idle_p50_ms\":%.4f,"
               "\"idle_p99_ms\":%.4f,\"during_recalls\":%zu,\"during_p50_ms\":%.4f,"
               "\"during_p99_ms\":%.4f,\"p50_ratio\":%.3f,\"p99_ratio\":%.3f,\"seed\":%" PRIu64
               "}\n",
               rounds, n, secs / rounds, (double)bytes / secs / 1e6, (double)records / secs,
               idle.n, ip50 * 1e3, ip99 * 1e3, during.n, dp50 * 1e3, dp99 * 1e3, dp50 / ip50,
               dp99 / ip99, bench_seed);
        fflush(stdout);
        fprintf(stderr, "  all rounds: idle %zu recalls p50 %.3f ms p99 %.3f ms; during %zu "
                "recalls p50 %.3f ms p99 %.3f ms\n", idle.n, ip50 * 1e3, ip99 * 1e3, during.n,
                dp50 * 1e3, dp99 * 1e3);
        target_line("recall_p99_during_vs_idle", dp99 / ip99, 2.0);
    }
    if (writer_idle > 0) {
        double ip50, ip99, imax, dp50, dp99, dmax, irate, drate;
        lat_sort(&widle);
        lat_sort(&wduring);
        ip50 = pct(&widle, 0.5);
        ip99 = pct(&widle, 0.99);
        imax = lat_max(&widle);
        dp50 = pct(&wduring, 0.5);
        dp99 = pct(&wduring, 0.99);
        dmax = lat_max(&wduring);
        irate = (double)(widle.n - wifl) / wisecs;
        drate = (double)(wduring.n - wdfl) / wdsecs;
        printf("{\"bench\":\"compact\",\"part\":\"writer_summary\",\"rounds\":%d,"
               "\"memories\":%zu,\"background\":1,\"busy_timeout_ms\":%u,"
               "\"compact_seconds_mean\":%.3f,\"idle_stores\":%zu,\"idle_p50_ms\":%.4f,"
               "\"idle_p99_ms\":%.4f,\"idle_max_ms\":%.4f,\"idle_over_10ms\":%zu,"
               "\"idle_stores_per_s\":%.0f,\"idle_failures\":%" PRIu64
               ",\"during_stores\":%zu,\"during_p50_ms\":%.4f,\"during_p99_ms\":%.4f,"
               "\"during_max_ms\":%.4f,\"during_over_10ms\":%zu,\"during_stores_per_s\":%.0f,"
               "\"during_failures\":%" PRIu64 ",\"after_max_ms\":%.4f,\"p50_ratio\":%.3f,"
               "\"p99_ratio\":%.3f,\"failures\":%" PRIu64 ",\"elocked\":%" PRIu64
               ",\"seed\":%" PRIu64 "}\n",
               rounds, n, CAIRN_BUSY_TIMEOUT_DEFAULT, wdsecs / rounds, widle.n, ip50 * 1e3,
               ip99 * 1e3, imax * 1e3, lat_over(&widle, 0.010), irate, wifl, wduring.n,
               dp50 * 1e3, dp99 * 1e3, dmax * 1e3, lat_over(&wduring, 0.010), drate, wdfl,
               wamax * 1e3, dp50 / ip50, dp99 / ip99, wfl, wel, bench_seed);
        fflush(stdout);
        fprintf(stderr, "  all rounds: store idle %zu stores p50 %.3f ms p99 %.3f ms max %.3f ms "
                "%.0f/s; during %zu stores p50 %.3f ms p99 %.3f ms max %.3f ms %.0f/s; "
                "after (compactor's close) max %.3f ms; %" PRIu64 " failed (%" PRIu64
                " CAIRN_ELOCKED)\n", widle.n, ip50 * 1e3, ip99 * 1e3, imax * 1e3, irate,
                wduring.n, dp50 * 1e3, dp99 * 1e3, dmax * 1e3, drate, wamax * 1e3, wfl, wel);
        target_line("store_p99_during_vs_idle", dp99 / ip99, 2.0);
    }
    free(idle.v);
    free(during.v);
    free(widle.v);
    free(wduring.v);
}

int main(int argc, char **argv)
{
    const char *dir = getenv("BENCH_DIR"), *only = NULL;
    size_t n = 100000, big_n = 400000;
    double idle_secs = 2.0;
    double writer_idle = 1.0; /* 0: no writer */
    int keep = 0, rounds = 2;
    const char *samples = NULL;

    bench_name = "bench_compact";
    bench_seed = 0xCA1E5EED;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--big-n") == 0 && i + 1 < argc)
            big_n = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--idle-seconds") == 0 && i + 1 < argc)
            idle_secs = strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            bench_seed = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--samples") == 0 && i + 1 < argc)
            samples = argv[++i];
        else if (strcmp(argv[i], "--keep") == 0)
            keep = 1;
        else if (strcmp(argv[i], "--writer-idle-seconds") == 0 && i + 1 < argc)
            writer_idle = strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--no-writer") == 0)
            writer_idle = 0;
        else
            bench_die("usage: bench_compact [--n N] [--big-n N] [--idle-seconds S] [--dir DIR] "
                      "[--rounds R] [--seed S] [--only space|recall] [--samples FILE] [--keep] "
                      "[--writer-idle-seconds S] [--no-writer]");
    }
    if (n < 10 || big_n < 10 || !(idle_secs > 0) || rounds < 1 || !(writer_idle >= 0))
        bench_die("--n and --big-n must be >= 10, --idle-seconds > 0, --rounds >= 1, "
                  "--writer-idle-seconds >= 0");
    if (only != NULL && strcmp(only, "space") != 0 && strcmp(only, "recall") != 0)
        bench_die("--only space|recall");
    if (dir == NULL)
        dir = "build/bench-tmp";
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        bench_die("%s: %s", dir, strerror(errno));
    n_queries = 1000;
    queries = bench_queries_make(n_queries, bench_seed, BENCH_VOCAB_WIDE);
    {
        struct statfs sf;
        const char *fs = statfs(dir, &sf) == 0 ? bench_fs_name((long)sf.f_type) : "unknown";
        if (strcmp(fs, "tmpfs") == 0)
            bench_die("%s is on tmpfs: use a directory on disk (BENCH_DIR)", dir);
        printf("{\"bench\":\"compact\",\"part\":\"meta\",\"n\":%zu,\"big_n\":%zu,"
               "\"nproc\":%ld,\"fs\":\"%s\",\"cairn\":\"%s\",\"seed\":%" PRIu64 "}\n",
               n, big_n, sysconf(_SC_NPROCESSORS_ONLN), fs, CAIRN_VERSION_STRING, bench_seed);
        fflush(stdout);
        fprintf(stderr, "bench_compact: data in %s (%s), nproc %ld\n", dir, fs,
                sysconf(_SC_NPROCESSORS_ONLN));
    }
    if (only == NULL || strcmp(only, "space") == 0) {
        space_run a = {.name = "remove90", .del_frac = 0.9, .upd_frac = 0.0, .n = n};
        space_run b = {.name = "remove45_update45", .del_frac = 0.45, .upd_frac = 0.45, .n = n};
        space_variant(dir, &a, bench_seed, keep);
        space_report(&a);
        target_line("remove90_compacted_vs_fresh", (double)a.compacted.total / (double)a.fresh.total,
                    1.2);
        space_variant(dir, &b, bench_seed ^ 0xB0B0ull, keep);
        space_report(&b);
    }
    if (only == NULL || strcmp(only, "recall") == 0)
        recall_bench(dir, big_n, idle_secs, bench_seed, keep, rounds, samples, writer_idle);
    return 0;
}
