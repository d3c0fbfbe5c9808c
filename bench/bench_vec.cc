/*
 * bench_vec.cc - vector search: cairn's exact int8 scan next to FAISS flat
 * inner product and hnswlib, in one run, on the same vectors.
 *
 * Why this bench uses engine internals (engine/vec/vecset.h, vkernel.h):
 * the public API (cairn.h) has no raw vector set, only memories with an
 * embedder, and timing recall would bill tokenizing, the text index and
 * fusion to the vector scan. cairn__vecset_search is the same code that
 * semantic recall runs for each namespace (int8 scan of every row, f32
 * re-rank of the best 4k), so this measures exactly that scan. The bench
 * links build/libcairn.a, like the tests do.
 *
 * Data (fixed seed, splitmix64): n rows of `dim` (384) values, two sets:
 *   uniform    every value uniform in [-1, 1)
 *   clustered  `clusters` (1000) centers with N(0,1) values; a row is a
 *              random center plus N(0, sigma^2) noise per value (sigma 0.5)
 * Queries are drawn the same way from another stream (never in the set).
 * Rows and queries are scaled to unit length up front, so every contender
 * gets the same unit vectors and similarity is the inner product (cosine).
 * The hnswlib index (and the same-size cairn and FAISS lines next to it)
 * takes the first `hnsw-n` rows of the same set.
 *
 * The truth: an f32 brute force written here (not cairn's kernels, not
 * FAISS), top-k by inner product, ties to the lower row; recall@k is
 * |returned ids in the true top-k| / k, averaged over the queries.
 *
 * Every query is timed on its own, one thread (FAISS: omp_set_num_threads(1),
 * one query per search() call, which is its SIMD scan, not BLAS).
 *
 * Output: a JSON line per (dataset, method[, n, ef]) on stdout, a summary
 * line per dataset with the ratios; a human table on stderr.
 */
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <malloc.h>
#include <time.h>
#include <unistd.h>

extern "C" {
#include "ivf.h"
#include "vecset.h"
#include "vkernel.h"
}

#ifndef HAVE_FAISS
#define HAVE_FAISS 0
#endif
#ifndef HAVE_HNSWLIB
#define HAVE_HNSWLIB 0
#endif

#if HAVE_FAISS
#include <faiss/IndexFlat.h>
#include <omp.h>
typedef faiss::Index::idx_t fidx; /* faiss::idx_t in later versions */
#endif
#if HAVE_HNSWLIB
#include <hnswlib/hnswlib.h>
#endif

/* ---- options ------------------------------------------------------------ */

struct opts {
    size_t n = 1000000;      /* rows for the exact scans */
    size_t hnsw_n = 200000;  /* rows for hnswlib (a prefix); 0: skip it */
    size_t dim = 384;
    size_t queries = 200;
    size_t k = 10;
    uint64_t seed = 0xCA1E5EEDull;
    size_t clusters = 1000;
    double sigma = 0.5;
    size_t M = 16, efc = 200;
    std::vector<size_t> efs = {10, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
    unsigned build_threads = 0; /* hnswlib build; 0: nproc */
    unsigned truth_threads = 0; /* the brute-force truth; 0: nproc */
    std::vector<std::string> datasets = {"uniform", "clustered"};
    bool do_cairn = true, do_faiss = true, do_hnsw = true;
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bench_vec: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double load1(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

/* Resident bytes of this process. main() fixes glibc's mmap threshold at
 * 1 MiB (a fixed one stops it from rising to 32 MiB after the first frees)
 * and each measurement trims the heap first, so big blocks come and go with
 * mmap and the RSS delta around a build is that build's memory. */
static long long rss_bytes(void)
{
    long long size = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%lld %lld", &size, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * sysconf(_SC_PAGESIZE);
}

static size_t to_size(const char *s, const char *what)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end || end == s)
        die("bad %s: %s", what, s);
    return (size_t)v;
}

static std::vector<std::string> split(const char *s)
{
    std::vector<std::string> out;
    std::string cur;
    for (const char *p = s;; p++) {
        if (*p == ',' || *p == 0) {
            if (!cur.empty())
                out.push_back(cur);
            cur.clear();
            if (*p == 0)
                break;
        } else {
            cur += *p;
        }
    }
    return out;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_vec [--n N] [--hnsw-n N] [--queries Q] [--dim D] [--k K] [--seed S]\n"
            "                 [--datasets uniform,clustered] [--only cairn,faiss,hnswlib]\n"
            "                 [--clusters C] [--sigma X] [--M M] [--efc EF] [--efs 16,32,...]\n"
            "                 [--build-threads T] [--truth-threads T]\n");
    exit(2);
}

static opts parse(int argc, char **argv)
{
    opts o;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "-h" || a == "--help")
            usage();
        if (i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (a == "--n") o.n = to_size(v, a.c_str());
        else if (a == "--hnsw-n") o.hnsw_n = to_size(v, a.c_str());
        else if (a == "--queries") o.queries = to_size(v, a.c_str());
        else if (a == "--dim") o.dim = to_size(v, a.c_str());
        else if (a == "--k") o.k = to_size(v, a.c_str());
        else if (a == "--seed") o.seed = to_size(v, a.c_str());
        else if (a == "--clusters") o.clusters = to_size(v, a.c_str());
        else if (a == "--sigma") o.sigma = atof(v);
        else if (a == "--M") o.M = to_size(v, a.c_str());
        else if (a == "--efc") o.efc = to_size(v, a.c_str());
        else if (a == "--build-threads") o.build_threads = (unsigned)to_size(v, a.c_str());
        else if (a == "--truth-threads") o.truth_threads = (unsigned)to_size(v, a.c_str());
        else if (a == "--datasets") o.datasets = split(v);
        else if (a == "--efs") {
            o.efs.clear();
            for (auto &s : split(v))
                o.efs.push_back(to_size(s.c_str(), "--efs"));
        } else if (a == "--only") {
            o.do_cairn = o.do_faiss = o.do_hnsw = false;
            for (auto &s : split(v)) {
                if (s == "cairn") o.do_cairn = true;
                else if (s == "faiss") o.do_faiss = true;
                else if (s == "hnswlib") o.do_hnsw = true;
                else die("--only: unknown %s", s.c_str());
            }
        } else usage();
    }
    unsigned nproc = std::thread::hardware_concurrency();
    if (nproc == 0)
        nproc = 1;
    if (o.build_threads == 0) o.build_threads = nproc;
    if (o.truth_threads == 0) o.truth_threads = nproc;
    if (o.n == 0 || o.dim == 0 || o.queries == 0 || o.k == 0 || o.k > o.n || o.k > 64)
        die("n, dim, queries and k must be > 0 (k <= n, k <= 64)");
    if (o.hnsw_n > o.n)
        o.hnsw_n = o.n;
    for (auto &d : o.datasets)
        if (d != "uniform" && d != "clustered")
            die("--datasets: unknown %s", d.c_str());
    return o;
}

/* ---- data ---------------------------------------------------------------- */

struct rng {
    uint64_t s;
    uint64_t next()
    {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    double unit() { return (double)(next() >> 11) * (1.0 / 9007199254740992.0); } /* [0,1) */
    /* a pair of N(0,1) values (Box-Muller) */
    void gauss2(float *a, float *b)
    {
        double u = unit(), v = unit();
        double r = std::sqrt(-2.0 * std::log(1.0 - u));
        *a = (float)(r * std::cos(2 * M_PI * v));
        *b = (float)(r * std::sin(2 * M_PI * v));
    }
};

static void normalize(float *x, size_t d)
{
    double ss = 0;
    for (size_t i = 0; i < d; i++)
        ss += (double)x[i] * x[i];
    if (ss > 0) {
        float inv = (float)(1.0 / std::sqrt(ss));
        for (size_t i = 0; i < d; i++)
            x[i] *= inv;
    }
}

/* count rows of a data set into out (count x dim), unit length. */
static void gen_rows(const std::string &kind, const opts &o, const std::vector<float> &centers,
                     rng &r, float *out, size_t count)
{
    const size_t d = o.dim;
    for (size_t i = 0; i < count; i++) {
        float *x = out + i * d;
        if (kind == "uniform") {
            for (size_t j = 0; j < d; j++)
                x[j] = (float)(2.0 * r.unit() - 1.0);
        } else {
            const float *c = centers.data() + (r.next() % o.clusters) * d;
            for (size_t j = 0; j < d; j += 2) {
                float a, b;
                r.gauss2(&a, &b);
                x[j] = c[j] + (float)o.sigma * a;
                if (j + 1 < d)
                    x[j + 1] = c[j + 1] + (float)o.sigma * b;
            }
        }
        normalize(x, d);
    }
}

struct dataset {
    std::string kind;
    std::vector<float> rows;  /* n x dim, unit length */
    std::vector<float> qs;    /* queries x dim, unit length */
};

static void make_dataset(dataset &ds, const std::string &kind, const opts &o)
{
    std::vector<float> centers;
    rng r{o.seed ^ (kind == "uniform" ? 0x1111ull : 0x2222ull)};
    ds.kind = kind;
    if (kind == "clustered") {
        centers.resize(o.clusters * o.dim);
        for (size_t i = 0; i < centers.size(); i += 2) {
            float a, b;
            r.gauss2(&a, &b);
            centers[i] = a;
            if (i + 1 < centers.size())
                centers[i + 1] = b;
        }
    }
    ds.rows.assign(o.n * o.dim, 0.0f);
    ds.qs.assign(o.queries * o.dim, 0.0f);
    gen_rows(kind, o, centers, r, ds.rows.data(), o.n);
    rng rq{r.next() ^ 0x5155455259ull}; /* the queries' own stream */
    gen_rows(kind, o, centers, rq, ds.qs.data(), o.queries);
}

/* ---- the truth: f32 brute force ------------------------------------------ */

/* The k best (score, id), best first; ids come in increasing order, so a
 * tie keeps the earlier (lower) id. */
struct topk {
    size_t k, n = 0;
    float s[64];
    uint32_t id[64];
    explicit topk(size_t k_) : k(k_) {}
    void push(float sc, uint32_t i)
    {
        if (n == k && !(sc > s[n - 1]))
            return;
        size_t p = n < k ? n++ : k - 1;
        while (p > 0 && sc > s[p - 1]) {
            s[p] = s[p - 1];
            id[p] = id[p - 1];
            p--;
        }
        s[p] = sc;
        id[p] = i;
    }
};

/* 16 partial sums (one vector register), then summed in order. */
static inline float dot_ref(const float *a, const float *b, size_t d)
{
    float acc[16] = {0};
    size_t i = 0;
    for (; i + 16 <= d; i += 16)
        for (size_t j = 0; j < 16; j++)
            acc[j] += a[i + j] * b[i + j];
    float s = 0;
    for (size_t j = 0; j < 16; j++)
        s += acc[j];
    for (; i < d; i++)
        s += a[i] * b[i];
    return s;
}

struct truth {
    size_t n = 0;                  /* rows searched */
    std::vector<uint32_t> ids;     /* queries x k */
    std::vector<float> score;      /* queries x k */
};

/* Top-k over the first n_a and the first n_b rows in one pass. */
static void brute_force(const dataset &ds, const opts &o, size_t n_a, size_t n_b, truth &ta,
                        truth &tb)
{
    const size_t d = o.dim, k = o.k, nq = o.queries, nmax = std::max(n_a, n_b);
    const size_t QB = 8; /* queries per pass over the rows */
    ta.n = n_a;
    tb.n = n_b;
    ta.ids.assign(nq * k, 0);
    ta.score.assign(nq * k, 0);
    tb.ids.assign(nq * k, 0);
    tb.score.assign(nq * k, 0);
    std::atomic<size_t> next{0};
    auto work = [&]() {
        for (;;) {
            size_t q0 = next.fetch_add(QB);
            if (q0 >= nq)
                return;
            size_t m = std::min(QB, nq - q0);
            std::vector<topk> A(m, topk(k)), B(m, topk(k));
            for (size_t r = 0; r < nmax; r++) {
                const float *row = ds.rows.data() + r * d;
                for (size_t j = 0; j < m; j++) {
                    float s = dot_ref(ds.qs.data() + (q0 + j) * d, row, d);
                    if (r < n_a)
                        A[j].push(s, (uint32_t)r);
                    if (r < n_b)
                        B[j].push(s, (uint32_t)r);
                }
            }
            for (size_t j = 0; j < m; j++)
                for (size_t i = 0; i < k; i++) {
                    ta.ids[(q0 + j) * k + i] = A[j].id[i];
                    ta.score[(q0 + j) * k + i] = A[j].s[i];
                    tb.ids[(q0 + j) * k + i] = B[j].id[i];
                    tb.score[(q0 + j) * k + i] = B[j].s[i];
                }
        }
    };
    std::vector<std::thread> th;
    for (unsigned t = 0; t < o.truth_threads; t++)
        th.emplace_back(work);
    for (auto &t : th)
        t.join();
}

/* Fraction of got[0..k) (row ids) in the true top-k of query q. */
static double recall_one(const truth &t, size_t q, size_t k, const uint32_t *got, size_t ngot)
{
    size_t hit = 0;
    for (size_t i = 0; i < ngot; i++)
        for (size_t j = 0; j < k; j++)
            if (got[i] == t.ids[q * k + j]) {
                hit++;
                break;
            }
    return (double)hit / (double)k;
}

/* ---- results ------------------------------------------------------------- */

struct lat {
    double mean_ms, p50_ms, p99_ms, qps;
};

static lat lat_of(std::vector<double> secs)
{
    lat l;
    double sum = 0;
    std::sort(secs.begin(), secs.end());
    for (double s : secs)
        sum += s;
    l.mean_ms = 1e3 * sum / (double)secs.size();
    l.p50_ms = 1e3 * secs[secs.size() / 2];
    l.p99_ms = 1e3 * secs[std::min(secs.size() - 1, (size_t)((double)secs.size() * 0.99))];
    l.qps = (double)secs.size() / sum;
    return l;
}

struct row {
    std::string dataset, method;
    size_t n = 0, ef = 0;
    lat l{};
    double recall = -1, build_s = -1, gbps = -1, load = -1;
    long long index_bytes = -1, rss_delta = -1;
    std::string extra; /* more JSON members */
};

static std::vector<row> g_rows;

static void emit(const row &r, const opts &o)
{
    printf("{\"bench\":\"vec\",\"dataset\":\"%s\",\"method\":\"%s\",\"n\":%zu,\"dim\":%zu,"
           "\"k\":%zu,\"queries\":%zu",
           r.dataset.c_str(), r.method.c_str(), r.n, o.dim, o.k, o.queries);
    if (r.ef)
        printf(",\"ef\":%zu", r.ef);
    if (r.l.qps > 0)
        printf(",\"ms_per_query\":%.4f,\"p50_ms\":%.4f,\"p99_ms\":%.4f,\"qps\":%.1f", r.l.mean_ms,
               r.l.p50_ms, r.l.p99_ms, r.l.qps);
    if (r.recall >= 0)
        printf(",\"recall_at_k\":%.4f", r.recall);
    if (r.gbps >= 0)
        printf(",\"gb_per_s\":%.3f", r.gbps);
    if (r.build_s >= 0)
        printf(",\"build_s\":%.3f", r.build_s);
    if (r.index_bytes >= 0)
        printf(",\"index_bytes\":%lld", r.index_bytes);
    if (r.rss_delta >= 0)
        printf(",\"rss_delta_bytes\":%lld", r.rss_delta);
    printf(",\"load1\":%.2f%s}\n", r.load, r.extra.c_str());
    fflush(stdout);
    g_rows.push_back(r);
}

static const row *find(const std::string &ds, const std::string &m, size_t n)
{
    for (auto &r : g_rows)
        if (r.dataset == ds && r.method == m && r.n == n && r.ef == 0)
            return &r;
    return nullptr;
}

/* ---- the memory-bandwidth yardsticks -------------------------------------- */

static volatile uint64_t g_sink;

/* memcpy of `bytes` (the int8 bytes one cairn query scans) and a read-only
 * pass over them; best of 5 each. */
static void bandwidth(const std::string &ds, size_t bytes, const opts &o)
{
    std::vector<uint8_t> src(bytes), dst(bytes);
    for (size_t i = 0; i < bytes; i++)
        src[i] = (uint8_t)(i * 131u + 7u);
    memset(dst.data(), 1, bytes);
    double best_cp = 1e9, best_rd = 1e9;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now();
        memcpy(dst.data(), src.data(), bytes);
        double t1 = now();
        g_sink = g_sink + dst[(size_t)rep * 4097 % bytes];
        const uint64_t *w = (const uint64_t *)(const void *)src.data();
        uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        size_t nw = bytes / 8, i = 0;
        double t2 = now();
        for (; i + 4 <= nw; i += 4) {
            a0 += w[i];
            a1 += w[i + 1];
            a2 += w[i + 2];
            a3 += w[i + 3];
        }
        double t3 = now();
        g_sink = g_sink + (a0 ^ a1 ^ a2 ^ a3);
        best_cp = std::min(best_cp, t1 - t0);
        best_rd = std::min(best_rd, t3 - t2);
    }
    row r;
    r.dataset = ds;
    r.method = "memcpy";
    r.n = o.n;
    r.gbps = (double)bytes / best_cp / 1e9;
    r.load = load1();
    char buf[160];
    snprintf(buf, sizeof buf, ",\"bytes\":%zu,\"ms\":%.3f,\"read_ms\":%.3f,\"read_gb_per_s\":%.3f",
             bytes, best_cp * 1e3, best_rd * 1e3, (double)bytes / best_rd / 1e9);
    r.extra = buf;
    emit(r, o);
}

/* ---- cairn exact ---------------------------------------------------------- */

static void run_cairn(const dataset &ds, const opts &o, size_t n, const truth &t)
{
    const size_t d = o.dim, stride = (d + 7) & ~(size_t)7;
    const vkernel *kern = cairn__vkernel_best();
    cairn__vecset *s;
    malloc_trim(0);
    long long rss0 = rss_bytes();
    double t0 = now();
    if (cairn__vecset_new(&s, "bench", d) != CAIRN_OK)
        die("cairn__vecset_new");
    for (size_t i = 0; i < n; i++)
        if (cairn__vecset_add(s, i + 1, ds.rows.data() + i * d) != CAIRN_OK)
            die("cairn__vecset_add");
    double build = now() - t0;
    long long rss1 = rss_bytes();

    std::vector<float> qbuf(d);
    std::vector<int8_t> q8buf(stride);
    std::vector<vec_hit> hits(o.k);
    std::vector<uint32_t> got(o.k);
    std::vector<double> secs(o.queries);
    double rec = 0;
    vec_query vq;
    size_t nh;
    for (size_t w = 0; w < 2; w++) { /* warm-up */
        cairn__vec_query_make(&vq, ds.qs.data() + w * d, d, qbuf.data(), q8buf.data());
        if (cairn__vecset_search(s, kern, &vq, o.k, 0, hits.data(), &nh) != CAIRN_OK)
            die("cairn__vecset_search");
    }
    double ld = load1();
    for (size_t q = 0; q < o.queries; q++) {
        double a = now();
        cairn__vec_query_make(&vq, ds.qs.data() + q * d, d, qbuf.data(), q8buf.data());
        int rc = cairn__vecset_search(s, kern, &vq, o.k, 0, hits.data(), &nh);
        secs[q] = now() - a;
        if (rc != CAIRN_OK)
            die("cairn__vecset_search: %d", rc);
        for (size_t i = 0; i < nh; i++)
            got[i] = (uint32_t)(hits[i].doc - 1);
        rec += recall_one(t, q, o.k, got.data(), nh);
    }
    cairn__vecset_free(s);

    row r;
    r.dataset = ds.kind;
    r.method = "cairn_exact";
    r.n = n;
    r.l = lat_of(secs);
    r.recall = rec / (double)o.queries;
    r.build_s = build;
    r.gbps = (double)(n * stride) / (r.l.mean_ms * 1e-3) / 1e9;
    /* f32 rows + int8 rows + scale + doc + live bit */
    r.index_bytes = (long long)(n * (d * 4 + stride + 4 + 8) + (n + 7) / 8);
    r.rss_delta = rss1 - rss0;
    r.load = ld;
    char buf[160];
    snprintf(buf, sizeof buf, ",\"kernel\":\"%s\",\"rerank\":%zu,\"scan_bytes\":%zu", kern->name,
             o.k * 4 < o.k + 16 ? o.k + 16 : o.k * 4, n * stride);
    r.extra = buf;
    emit(r, o);
}

/* ---- cairn approximate (IVF) ------------------------------------------------ */

/* The IVF index recall --approximate builds over a mapped vector image
 * (engine/vec/ivf.c), here over the same unit rows, at several nprobe.
 * Index memory: the IVF's own bytes (centroids, row ids, its list-ordered
 * int8 copy); the f32 rows it re-ranks from are the store's vector blocks,
 * counted apart (vector_bytes) as hnswlib's vectors are. */
static void run_cairn_ivf(const dataset &ds, const opts &o, size_t n, const truth &t)
{
    const size_t d = o.dim, stride = (d + 7) & ~(size_t)7;
    const vkernel *kern = cairn__vkernel_best();
    std::vector<const float *> rows(n);
    for (size_t i = 0; i < n; i++)
        rows[i] = ds.rows.data() + i * d;
    ivf_rows in;
    in.n = n;
    in.dim = d;
    in.rows = rows.data();
    cairn__ivf *x = nullptr;
    malloc_trim(0);
    long long rss0 = rss_bytes();
    double t0 = now();
    if (cairn__ivf_build(&x, kern, &in, 0, 0x697666ull) != CAIRN_OK)
        die("cairn__ivf_build");
    double build = now() - t0;
    long long rss1 = rss_bytes();
    size_t nlist = cairn__ivf_nlist(x);

    std::vector<float> qbuf(d);
    std::vector<int8_t> q8buf(stride);
    std::vector<vec_hit> hits(o.k);
    std::vector<uint32_t> got(o.k);
    std::vector<double> secs(o.queries);
    /* then every list: the exact answer through the index */
    static const size_t probes[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 768, 1024};
    std::vector<size_t> sweep;
    for (size_t np : probes)
        if (np < nlist)
            sweep.push_back(np);
    sweep.push_back(nlist);
    for (size_t np : sweep) {
        vec_query vq;
        size_t nh = 0;
        double rec = 0;
        for (size_t w = 0; w < 2; w++) {
            cairn__vec_query_make(&vq, ds.qs.data() + w * d, d, qbuf.data(), q8buf.data());
            (void)cairn__ivf_search(x, kern, &vq, o.k, np, nullptr, hits.data(), &nh);
        }
        double ld = load1();
        for (size_t q = 0; q < o.queries; q++) {
            double a = now();
            cairn__vec_query_make(&vq, ds.qs.data() + q * d, d, qbuf.data(), q8buf.data());
            int rc = cairn__ivf_search(x, kern, &vq, o.k, np, nullptr, hits.data(), &nh);
            secs[q] = now() - a;
            if (rc != CAIRN_OK)
                die("cairn__ivf_search: %d", rc);
            for (size_t i = 0; i < nh; i++)
                got[i] = (uint32_t)hits[i].doc;
            rec += recall_one(t, q, o.k, got.data(), nh);
        }
        row r;
        r.dataset = ds.kind;
        r.method = "cairn_ivf";
        r.n = n;
        r.ef = np; /* nprobe, in the ef column */
        r.l = lat_of(secs);
        r.recall = rec / (double)o.queries;
        r.build_s = build;
        r.index_bytes = (long long)cairn__ivf_bytes(x);
        r.rss_delta = rss1 - rss0;
        r.load = ld;
        char buf[160];
        snprintf(buf, sizeof buf, ",\"nprobe\":%zu,\"nlist\":%zu,\"vector_bytes\":%zu", np, nlist,
                 n * d * 4);
        r.extra = buf;
        emit(r, o);
    }
    cairn__ivf_free(x);
}

/* ---- FAISS flat inner product --------------------------------------------- */

#if HAVE_FAISS
static void run_faiss(const dataset &ds, const opts &o, size_t n, const truth &t)
{
    const size_t d = o.dim;
    omp_set_num_threads(1);
    malloc_trim(0);
    long long rss0 = rss_bytes();
    double t0 = now();
    faiss::IndexFlatIP *idx = new faiss::IndexFlatIP((fidx)d);
    idx->add((fidx)n, ds.rows.data());
    double build = now() - t0;
    long long rss1 = rss_bytes();

    std::vector<float> D(o.k);
    std::vector<fidx> I(o.k);
    std::vector<uint32_t> got(o.k);
    std::vector<double> secs(o.queries);
    double rec = 0;
    for (size_t w = 0; w < 2; w++)
        idx->search(1, ds.qs.data() + w * d, (fidx)o.k, D.data(), I.data());
    double ld = load1();
    for (size_t q = 0; q < o.queries; q++) {
        double a = now();
        idx->search(1, ds.qs.data() + q * d, (fidx)o.k, D.data(), I.data());
        secs[q] = now() - a;
        size_t ng = 0;
        for (size_t i = 0; i < o.k; i++)
            if (I[i] >= 0)
                got[ng++] = (uint32_t)I[i];
        rec += recall_one(t, q, o.k, got.data(), ng);
    }
    delete idx;

    row r;
    r.dataset = ds.kind;
    r.method = "faiss_flat";
    r.n = n;
    r.l = lat_of(secs);
    r.recall = rec / (double)o.queries;
    r.build_s = build;
    r.gbps = (double)(n * d * 4) / (r.l.mean_ms * 1e-3) / 1e9;
    r.index_bytes = (long long)(n * d * 4);
    r.rss_delta = rss1 - rss0;
    r.load = ld;
    char buf[96];
    snprintf(buf, sizeof buf, ",\"threads\":1,\"scan_bytes\":%zu", n * d * 4);
    r.extra = buf;
    emit(r, o);
}
#endif

/* ---- hnswlib -------------------------------------------------------------- */

#if HAVE_HNSWLIB
static void run_hnsw(const dataset &ds, const opts &o, size_t n, const truth &t)
{
    const size_t d = o.dim;
    hnswlib::InnerProductSpace space(d);
    malloc_trim(0);
    long long rss0 = rss_bytes();
    double t0 = now();
    auto *h = new hnswlib::HierarchicalNSW<float>(&space, n, o.M, o.efc, 100);
    /* the first point alone, then the rest from build_threads threads (hnswlib
     * allows concurrent addPoint) */
    h->addPoint(ds.rows.data(), 0);
    std::atomic<size_t> next{1};
    std::vector<std::thread> th;
    for (unsigned i = 0; i < o.build_threads; i++)
        th.emplace_back([&]() {
            for (size_t j; (j = next.fetch_add(1)) < n;)
                h->addPoint(ds.rows.data() + j * d, j);
        });
    for (auto &x : th)
        x.join();
    double build = now() - t0;
    long long rss1 = rss_bytes();
    /* the graph and the vectors: level 0 (links, vector, label per element)
     * and the upper levels' link lists */
    long long upper = 0;
    for (size_t i = 0; i < n; i++)
        upper += (long long)h->element_levels_[i] * (long long)h->size_links_per_element_;
    long long structure = (long long)(n * h->size_data_per_element_) + upper;
    long long vectors = (long long)(n * d * 4);

    std::vector<uint32_t> got(o.k);
    std::vector<double> secs(o.queries);
    for (size_t ef : o.efs) {
        h->setEf(ef);
        for (size_t w = 0; w < 2; w++)
            (void)h->searchKnn(ds.qs.data() + w * d, o.k);
        double rec = 0, ld = load1();
        for (size_t q = 0; q < o.queries; q++) {
            double a = now();
            auto res = h->searchKnn(ds.qs.data() + q * d, o.k);
            secs[q] = now() - a;
            size_t ng = 0;
            while (!res.empty()) {
                got[ng++] = (uint32_t)res.top().second;
                res.pop();
            }
            rec += recall_one(t, q, o.k, got.data(), ng);
        }
        row r;
        r.dataset = ds.kind;
        r.method = "hnswlib";
        r.n = n;
        r.ef = ef;
        r.l = lat_of(secs);
        r.recall = rec / (double)o.queries;
        r.build_s = build;
        r.index_bytes = structure;
        r.rss_delta = rss1 - rss0;
        r.load = ld;
        char buf[200];
        snprintf(buf, sizeof buf,
                 ",\"M\":%zu,\"ef_construction\":%zu,\"build_threads\":%u,"
                 "\"vector_bytes\":%lld,\"link_bytes\":%lld",
                 o.M, o.efc, o.build_threads, vectors, structure - vectors);
        r.extra = buf;
        emit(r, o);
    }
    delete h;
}
#endif

/* ---- the summary ---------------------------------------------------------- */

static double ratio(double a, double b) { return b > 0 ? a / b : -1; }

static void summary(const std::string &ds, const opts &o, size_t nh)
{
    const row *mc = find(ds, "memcpy", o.n);
    const row *ce = find(ds, "cairn_exact", o.n), *fe = find(ds, "faiss_flat", o.n);
    const row *ch = find(ds, "cairn_exact", nh), *fh = find(ds, "faiss_flat", nh);
    const row *h95 = nullptr, *hbest = nullptr;
    for (auto &r : g_rows)
        if (r.dataset == ds && r.method == "hnswlib") {
            if (!hbest || r.recall > hbest->recall)
                hbest = &r;
            if (r.recall >= 0.95 && (!h95 || r.l.qps > h95->l.qps))
                h95 = &r;
        }
    std::string s = "{\"bench\":\"vec\",\"dataset\":\"" + ds + "\",\"method\":\"summary\"";
    char buf[256];
    snprintf(buf, sizeof buf, ",\"n\":%zu,\"hnsw_n\":%zu", o.n, nh);
    s += buf;
    if (ce && fe) {
        snprintf(buf, sizeof buf, ",\"cairn_ms_over_faiss_ms\":%.3f",
                 ratio(ce->l.mean_ms, fe->l.mean_ms));
        s += buf;
    }
    if (ce && mc) {
        snprintf(buf, sizeof buf, ",\"cairn_scan_gbps_over_memcpy_gbps\":%.3f",
                 ratio(ce->gbps, mc->gbps));
        s += buf;
    }
    if (ce) {
        snprintf(buf, sizeof buf, ",\"cairn_ms_per_query\":%.3f,\"target_ms\":25,\"pass\":%s",
                 ce->l.mean_ms, ce->l.mean_ms <= 25.0 ? "true" : "false");
        s += buf;
    }
    if (ch && fh && nh != o.n) {
        snprintf(buf, sizeof buf, ",\"cairn_ms_over_faiss_ms_at_hnsw_n\":%.3f",
                 ratio(ch->l.mean_ms, fh->l.mean_ms));
        s += buf;
    }
    if (h95) {
        snprintf(buf, sizeof buf, ",\"hnsw_ef_at_recall_095\":%zu,\"hnsw_qps_at_recall_095\":%.1f,"
                 "\"hnsw_recall_there\":%.4f",
                 h95->ef, h95->l.qps, h95->recall);
        s += buf;
        if (ch) {
            snprintf(buf, sizeof buf, ",\"hnsw_qps_over_cairn_exact_qps_at_hnsw_n\":%.2f",
                     ratio(h95->l.qps, ch->l.qps));
            s += buf;
        }
    } else if (hbest) {
        snprintf(buf, sizeof buf, ",\"hnsw_recall_095_reached\":false,\"hnsw_best_recall\":%.4f",
                 hbest->recall);
        s += buf;
    }
    {
        const row *i95 = nullptr;
        for (auto &r : g_rows)
            if (r.dataset == ds && r.method == "cairn_ivf" && r.recall >= 0.95 &&
                (!i95 || r.l.qps > i95->l.qps))
                i95 = &r;
        if (i95) {
            snprintf(buf, sizeof buf, ",\"ivf_nprobe_at_recall_095\":%zu,\"ivf_qps_at_recall_095\":%.1f,"
                     "\"ivf_recall_there\":%.4f,\"ivf_index_bytes\":%lld,\"ivf_build_s\":%.2f",
                     i95->ef, i95->l.qps, i95->recall, i95->index_bytes, i95->build_s);
            s += buf;
            if (h95) {
                snprintf(buf, sizeof buf, ",\"ivf_qps_over_hnsw_qps_at_095\":%.3f,"
                         "\"ivf_index_bytes_over_hnsw\":%.3f",
                         ratio(i95->l.qps, h95->l.qps),
                         ratio((double)i95->index_bytes, (double)h95->index_bytes));
                s += buf;
            }
        }
    }
    s += "}";
    printf("%s\n", s.c_str());
    fflush(stdout);
}

static void table(const opts &o)
{
    fprintf(stderr, "\n%-10s %-12s %8s %5s %9s %8s %8s %10s %7s %8s %9s %9s\n", "dataset", "method",
            "n", "ef", "ms/query", "p99 ms", "qps", "recall@k", "GB/s", "build s", "index MB",
            "rss+ MB");
    for (auto &r : g_rows) {
        if (r.method == "memcpy") {
            fprintf(stderr, "%-10s %-12s %8zu %5s %9s %8s %8s %10s %7.2f %8s %9s %9s  (%s)\n",
                    r.dataset.c_str(), "memcpy", r.n, "", "", "", "", "", r.gbps, "", "", "",
                    r.extra.c_str() + 1);
            continue;
        }
        char ef[24] = "";
        if (r.ef)
            snprintf(ef, sizeof ef, "%zu", r.ef);
        char gb[32] = "";
        if (r.gbps >= 0)
            snprintf(gb, sizeof gb, "%.2f", r.gbps);
        fprintf(stderr, "%-10s %-12s %8zu %5s %9.3f %8.3f %8.1f %10.4f %7s %8.2f %9.1f %9.1f\n",
                r.dataset.c_str(), r.method.c_str(), r.n, ef, r.l.mean_ms, r.l.p99_ms, r.l.qps,
                r.recall, gb, r.build_s, (double)r.index_bytes / 1e6, (double)r.rss_delta / 1e6);
    }
    (void)o;
}

int main(int argc, char **argv)
{
    opts o = parse(argc, argv);
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    const size_t nh = o.hnsw_n;
    if (!HAVE_FAISS && o.do_faiss)
        fprintf(stderr, "bench_vec: built without FAISS (libfaiss-dev missing): no faiss lines\n");
    if (!HAVE_HNSWLIB && o.do_hnsw)
        fprintf(stderr, "bench_vec: built without hnswlib (libhnswlib-dev missing): no hnswlib lines\n");
    printf("{\"bench\":\"vec\",\"method\":\"meta\",\"n\":%zu,\"hnsw_n\":%zu,\"dim\":%zu,\"k\":%zu,"
           "\"queries\":%zu,\"seed\":%llu,\"clusters\":%zu,\"sigma\":%.3f,\"nproc\":%u,"
           "\"kernel\":\"%s\",\"faiss\":%s,\"hnswlib\":%s,\"load1\":%.2f}\n",
           o.n, nh, o.dim, o.k, o.queries, (unsigned long long)o.seed, o.clusters, o.sigma,
           std::thread::hardware_concurrency(), cairn__vkernel_best()->name,
           HAVE_FAISS ? "true" : "false", HAVE_HNSWLIB ? "true" : "false", load1());
    fflush(stdout);

    for (const std::string &kind : o.datasets) {
        dataset ds;
        truth t_n, t_h;
        double t0 = now();
        make_dataset(ds, kind, o);
        double t1 = now();
        brute_force(ds, o, o.n, nh ? nh : o.n, t_n, t_h);
        fprintf(stderr, "bench_vec: %s: %zu rows + %zu queries made in %.1f s, f32 truth in %.1f s\n",
                kind.c_str(), o.n, o.queries, t1 - t0, now() - t1);

        const size_t stride = (o.dim + 7) & ~(size_t)7;
        bandwidth(kind, o.n * stride, o);
        if (o.do_cairn)
            run_cairn(ds, o, o.n, t_n);
#if HAVE_FAISS
        if (o.do_faiss)
            run_faiss(ds, o, o.n, t_n);
#endif
        if (nh && nh < o.n) { /* the exact scans at hnswlib's size too */
            if (o.do_cairn)
                run_cairn(ds, o, nh, t_h);
#if HAVE_FAISS
            if (o.do_faiss)
                run_faiss(ds, o, nh, t_h);
#endif
        }
        if (o.do_cairn && nh) /* the approximate index, at hnswlib's size */
            run_cairn_ivf(ds, o, nh, nh == o.n ? t_n : t_h);
#if HAVE_HNSWLIB
        if (o.do_hnsw && nh)
            run_hnsw(ds, o, nh, t_h);
#endif
        summary(kind, o, nh);
    }
    table(o);
    return 0;
}
