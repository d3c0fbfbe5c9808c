/*
 * bench_chain.c - what the log's hash chain costs (format-spec/chain.md),
 * against the same engine built without it (-DCAIRN_NO_CHAIN), in one run;
 * and how fast `verify` reads a log of a gigabyte.
 *
 * The chain is computed where a segment is sealed (SHA-256 over every
 * record), never on the append call itself, so what it can cost an appender
 * is the sealer's CPU (background) or the inline seal (background 0).
 * Each workload runs in a child process, alternately of this binary and of
 * the one built without the chain (--peer), --rounds times (default 9),
 * the two in turn and in alternating order. "cost" is how much slower the
 * chain build is: the median over the rounds of each round's pair (the two
 * children run back to back, so a drift of the machine's speed between
 * rounds cancels), with the lowest and highest pair's cost beside it; the
 * medians of each build's rates are printed too.
 *
 * Workloads (records of about 200 bytes, bench_util's data set; each on a
 * fresh store, timed until cairn_close returns, so every seal is in it):
 *   none       cairn_append, one record per call, durability none,
 *              background threads on (the sealer hashes beside the appender)
 *   batch      the same in durability batch
 *   full       durability full, one record per call: --full-records appends
 *   batch_api  cairn_append_batch of 1000 records, durability full
 *   seal_inline  background 0, 8 MiB segments: every roll seals (and hashes)
 *              in the appending call
 * Then (this build only): a store of --verify-mb MB of log, sealed;
 * cairn_verify (every checksum, the structure and the chain) and
 * cairn_head_get, in MB of log per second.
 *
 * Output: JSON lines on stdout, the table and the target on stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

static const char *g_dir = NULL;
static size_t g_records = 1000000, g_full = 2000, g_rounds = 9, g_verify_mb = 1024;
static const char *g_peer = NULL;

static const char *const workloads[] = {"none", "batch", "full", "batch_api", "seal_inline"};
#define N_WORK (sizeof workloads / sizeof *workloads)

static cairn_db *fresh(const char *leaf, cairn_durability dur, int background, uint64_t segsize)
{
    char path[4096], err[CAIRN_ERRMSG_MAX];
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    int rc;
    snprintf(path, sizeof path, "%s/%s", g_dir, leaf);
    bench_rm_rf(path);
    o.create = 1;
    o.durability = dur;
    o.background = background;
    o.segment_size = segsize;
    rc = cairn_open(&db, path, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        bench_die("cairn_open %s: %s (%s)", path, cairn_strerror(rc), err);
    return db;
}

/* One workload; records per second, until close returned. */
static double run_one(const dataset *d, const char *w)
{
    cairn_durability dur = CAIRN_DURABILITY_NONE;
    int background = 1, batch = 0;
    uint64_t segsize = 0;
    size_t n = d->n;
    char leaf[64], path[4096];
    cairn_db *db;
    double t0, secs;

    if (strcmp(w, "batch") == 0)
        dur = CAIRN_DURABILITY_BATCH;
    else if (strcmp(w, "full") == 0) {
        dur = CAIRN_DURABILITY_FULL;
        n = g_full < d->n ? g_full : d->n;
    } else if (strcmp(w, "batch_api") == 0) {
        dur = CAIRN_DURABILITY_FULL;
        batch = 1000;
    } else if (strcmp(w, "seal_inline") == 0) {
        background = 0;
        segsize = 8u << 20;
    }
    snprintf(leaf, sizeof leaf, "chain-%s-%d", w, (int)getpid());
    db = fresh(leaf, dur, background, segsize);
    t0 = bench_now();
    if (batch > 0) {
        for (size_t i = 0; i < n; i += (size_t)batch) {
            size_t k = n - i < (size_t)batch ? n - i : (size_t)batch;
            bench_check(db, cairn_append_batch(db, d->e + i, k, NULL), "cairn_append_batch");
        }
    } else {
        for (size_t i = 0; i < n; i++)
            bench_check(db, cairn_append(db, &d->e[i], NULL), "cairn_append");
    }
    bench_check(NULL, cairn_close(db), "cairn_close");
    secs = bench_now() - t0;
    snprintf(path, sizeof path, "%s/%s", g_dir, leaf);
    bench_rm_rf(path);
    return (double)n / secs;
}

/* --child: each workload once, one JSON line each. */
static int child(const dataset *d)
{
    for (size_t k = 0; k < N_WORK; k++)
        printf("{\"workload\":\"%s\",\"rate\":%.1f}\n", workloads[k], run_one(d, workloads[k]));
    fflush(stdout);
    return 0;
}

/* Run a child (self or peer) and read its rates into rate[N_WORK]. */
static void run_child(const char *exe, double *rate)
{
    char cmd[8192], line[256];
    FILE *p;
    snprintf(cmd, sizeof cmd, "'%s' --child --dir '%s' --records %zu --full-records %zu", exe,
             g_dir, g_records, g_full);
    if ((p = popen(cmd, "r")) == NULL)
        bench_die("cannot run %s", exe);
    while (fgets(line, sizeof line, p) != NULL) {
        char name[32];
        double r;
        if (sscanf(line, "{\"workload\":\"%31[^\"]\",\"rate\":%lf}", name, &r) != 2)
            continue;
        for (size_t k = 0; k < N_WORK; k++)
            if (strcmp(name, workloads[k]) == 0)
                rate[k] = r;
    }
    if (pclose(p) != 0)
        bench_die("%s failed", exe);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A store of about mb MB of log, then verify and head over it. */
static void bench_verify(const dataset *d, size_t mb)
{
    char path[4096], err[CAIRN_ERRMSG_MAX];
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = fresh("chain-verify", CAIRN_DURABILITY_NONE, 1, 0);
    cairn_stats st;
    cairn_head h;
    uint64_t problems = 0;
    double t0, tv, th;
    size_t i = 0;

    do {
        bench_check(db, cairn_append(db, &d->e[i % d->n], NULL), "cairn_append");
        i++;
        if ((i & 65535) == 0)
            bench_check(db, cairn_stats_get(db, &st), "cairn_stats_get");
    } while ((i & 65535) != 0 || st.log_bytes < (uint64_t)mb * 1000000u);
    bench_check(NULL, cairn_close(db), "cairn_close");
    snprintf(path, sizeof path, "%s/chain-verify", g_dir);
    o.read_only = 1;
    if (cairn_open(&db, path, &o, err, sizeof err) != CAIRN_OK)
        bench_die("open %s: %s", path, err);
    bench_check(db, cairn_stats_get(db, &st), "cairn_stats_get");
    t0 = bench_now();
    bench_check(db, cairn_verify(db, NULL, NULL, &problems), "cairn_verify");
    tv = bench_now() - t0;
    if (problems != 0)
        bench_die("verify found %" PRIu64 " problems in a fresh store", problems);
    t0 = bench_now();
    bench_check(db, cairn_head_get(db, &h), "cairn_head_get");
    th = bench_now() - t0;
    cairn_close(db);
    printf("{\"name\":\"verify\",\"log_mb\":%.1f,\"records\":%" PRIu64 ",\"segments\":%" PRIu64
           ",\"verify_seconds\":%.3f,\"verify_mb_per_s\":%.1f,\"head_seconds\":%.4f}\n",
           (double)st.log_bytes / 1e6, st.records,
           st.segments_sealed + st.segments_closed + st.segments_active, tv,
           (double)st.log_bytes / 1e6 / tv, th);
    fprintf(stderr, "verify: %.0f MB of log (%" PRIu64 " records, %" PRIu64 " sealed segments) "
            "in %.2f s: %.0f MB/s; head %.1f ms (the unsealed tail)\n",
            (double)st.log_bytes / 1e6, st.records, st.segments_sealed, tv,
            (double)st.log_bytes / 1e6 / tv, th * 1e3);
    bench_rm_rf(path);
}

int main(int argc, char **argv)
{
    int is_child = 0;
    dataset d;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--child") == 0)
            is_child = 1;
        else if (strcmp(a, "--dir") == 0 && v)
            g_dir = argv[++i];
        else if (strcmp(a, "--peer") == 0 && v)
            g_peer = argv[++i];
        else if (strcmp(a, "--records") == 0 && v)
            g_records = strtoull(argv[++i], NULL, 10);
        else if (strcmp(a, "--full-records") == 0 && v)
            g_full = strtoull(argv[++i], NULL, 10);
        else if (strcmp(a, "--rounds") == 0 && v)
            g_rounds = strtoull(argv[++i], NULL, 10);
        else if (strcmp(a, "--verify-mb") == 0 && v)
            g_verify_mb = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_chain --dir DIR --peer BENCH_CHAIN_NOCHAIN [--rounds N] "
                    "[--records N] [--full-records N] [--verify-mb MB]\n");
            return 64;
        }
    }
    if (g_dir == NULL)
        g_dir = getenv("BENCH_DIR") ? getenv("BENCH_DIR") : "build/bench-tmp";
    if (g_records == 0 || g_rounds == 0)
        bench_die("--records and --rounds must be positive");
    bench_dataset_make(&d, g_records, 42);
    if (is_child)
        return child(&d);
    if (g_peer == NULL)
        bench_die("--peer: the bench_chain built without the chain (make -C bench run-chain)");
    {
        double with[N_WORK][16], without[N_WORK][16];
        size_t rounds = g_rounds > 16 ? 16 : g_rounds;
        fprintf(stderr, "bench_chain: %zu records of ~%.0f bytes, %zu rounds, alternating\n",
                g_records, (double)d.bytes / (double)d.n, rounds);
        for (size_t r = 0; r < rounds; r++) {
            double a[N_WORK], b[N_WORK];
            if (r % 2 == 0) {
                run_child(argv[0], a);
                run_child(g_peer, b);
            } else {
                run_child(g_peer, b);
                run_child(argv[0], a);
            }
            for (size_t k = 0; k < N_WORK; k++) {
                with[k][r] = a[k];
                without[k][r] = b[k];
            }
        }
        fprintf(stderr, "%-12s %14s %14s %8s %17s  %s\n", "workload", "chain rec/s",
                "none rec/s", "cost", "(pairs: min..max)", "target: at most 10% slower");
        for (size_t k = 0; k < N_WORK; k++) {
            double pair[16], lo, hi, cost, mw, mo;
            for (size_t r = 0; r < rounds; r++)
                pair[r] = (without[k][r] - with[k][r]) / without[k][r] * 100.0;
            cost = median(pair, rounds); /* sorts pair */
            lo = pair[0];
            hi = pair[rounds - 1];
            mw = median(with[k], rounds);
            mo = median(without[k], rounds);
            printf("{\"name\":\"chain_%s\",\"with_chain\":%.1f,\"without\":%.1f,"
                   "\"cost_percent\":%.2f,\"cost_min\":%.2f,\"cost_max\":%.2f,\"rounds\":%zu,"
                   "\"target\":\"<=10\",\"pass\":%s}\n",
                   workloads[k], mw, mo, cost, lo, hi, rounds, cost <= 10.0 ? "true" : "false");
            fprintf(stderr, "%-12s %14.0f %14.0f %7.1f%% %7.1f..%-7.1f%%  %s\n", workloads[k], mw,
                    mo, cost, lo, hi, cost <= 10.0 ? "PASS" : "FAIL");
        }
    }
    bench_verify(&d, g_verify_mb);
    free(d.buf);
    free(d.e);
    free(d.ts);
    return 0;
}
