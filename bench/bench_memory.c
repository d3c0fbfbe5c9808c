/*
 * bench_memory.c - memories and lexical recall (issue 3): cairn next to
 * SQLite FTS5 (bm25(), porter tokenizer, ORDER BY rank LIMIT 10), same run,
 * same data. Public API only. Never part of `make test`.
 *
 *   synthetic  N memories of 20-60 words from a Zipfian vocabulary (fixed
 *              seed): ingest (index included; FTS5 at 1000 rows per
 *              transaction, WAL, synchronous NORMAL), 1000 queries of 1-4
 *              terms top 10 (median and p99), and opening the store read-only
 *              plus its first query; then writer sessions of 1,000 to 20,000
 *              more memories each (open, stores, close) until the store
 *              has as many index files as the merge policy lets a chain
 *              have, and the same queries again over that chain
 *   locomo     ../shared/data/locomo-dev: every dialog turn a memory ("Speaker:
 *              text"), every question of categories 1-4 a query; recall@5 and
 *              recall@10 of the evidence turns (dia_id), per question
 *              |evidence in top k| / |evidence|, averaged, for cairn lexical,
 *              hybrid (built-in embedder; RRF and score fusion) and semantic
 *              recall over one store, and FTS5; cairn's ingest time with and
 *              without the embedder
 *
 *              and the peak RSS of the command-line tool's search and recall
 *              (RSS_QUERIES of each, a process each, on that chain), and
 *              the bytes of the store next to FTS5's database after ingest
 *   close      the synthetic part's cairn ingest alone, then cairn_mem_close
 *              and cairn_close timed (no FTS5, no queries): a close's cost
 *              against the tail it writes (--n 1048575: the longest tail)
 * usage: bench_memory [--n N] [--dir DIR] [--locomo DIR] [--stemmer S]
 *                     [--only synthetic|locomo|close] [--warm GIB] [--cairn PATH]
 * Before the synthetic part, GIB (default 8, 0 = none) of RAM is touched and
 * given back (bench_warm_memory: a VM's first touch of a page is slow).
 * Output: JSON lines on stdout, a summary with PASS/FAIL on stderr.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "cairn.h"

#define VOCAB 50000
#define QUERIES 1000

static const char *stemmer; /* --stemmer; NULL = cairn's default (english) */
static double warm_gib = 8;  /* --warm */
static const char *cairn_bin = "build/cairn"; /* --cairn: the CLI whose RSS is measured */
#define RSS_QUERIES 100 /* CLI searches and recalls whose peak RSS is measured */
#define RSS_TARGET_KIB (64 * 1024)


static uint64_t rng = 0xC0FFEE;
static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double *zipf_cdf;
static int zipf(void)
{
    double u = (double)(rnd() >> 11) / 9007199254740992.0;
    int lo = 0, hi = VOCAB - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (zipf_cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Word i: letters only, 3-9 of them, distinct for distinct i. */
static int word(char *out, int i)
{
    static const char cons[] = "bcdfghjklmnprstvz", vow[] = "aeiou";
    int n = 0, x = i + 1;
    while (x > 0) {
        out[n++] = cons[x % 17];
        x /= 17;
        out[n++] = vow[x % 5];
        x /= 5;
    }
    out[n] = 0;
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void rm_rf(const char *path)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0)
        bench_die("cannot remove %s", path);
}

static sqlite3 *fts_open(const char *path)
{
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK)
        bench_die("sqlite3_open %s", path);
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                     "CREATE VIRTUAL TABLE IF NOT EXISTS m USING fts5(content, tokenize='porter');",
                 NULL, NULL, NULL);
    return db;
}

/* "a OR b OR c" from the words of text (FTS5 query syntax, each quoted). */
static void fts_query(const char *text, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (const char *p = text; *p;) {
        const char *s;
        while (*p && !((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                       (*p >= '0' && *p <= '9')))
            p++;
        s = p;
        while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))
            p++;
        if (p > s && n + (size_t)(p - s) + 8 < cap)
            n += (size_t)snprintf(out + n, cap - n, "%s\"%.*s\"", n ? " OR " : "",
                                  (int)(p - s), s);
    }
}

static int fts_search(sqlite3_stmt *st, const char *q, int64_t *rowids, int k)
{
    int n = 0;
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, q, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, k);
    while (sqlite3_step(st) == SQLITE_ROW && n < k)
        rowids[n++] = sqlite3_column_int64(st, 0);
    return n;
}

static cairn_db *open_store(const char *dir, int create, int read_only)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db;
    char err[CAIRN_ERRMSG_MAX];
    o.create = create;
    o.read_only = read_only;
    if (cairn_open(&db, dir, &o, err, sizeof err) != CAIRN_OK)
        bench_die("cairn_open %s: %s", dir, err);
    return db;
}

/* ---- synthetic ----------------------------------------------------------- */

/* A text of 20-60 Zipfian words and a distinct last word (tag, i). */
static int make_text(char *text, const char *tag, size_t i)
{
    int words = 20 + (int)(rnd() % 41), len = 0;
    for (int w = 0; w < words; w++) {
        len += word(text + len, zipf());
        text[len++] = ' ';
    }
    len += snprintf(text + len, 24, "%s%zu", tag, i);
    return len;
}

/* Index files in the store's directory (the chain a reader maps), and
 * their bytes in *bytes (may be NULL). */
static size_t index_files_of(const char *path, uint64_t *bytes)
{
    DIR *d = opendir(path);
    struct dirent *de;
    size_t n = 0;
    if (d == NULL)
        bench_die("opendir %s", path);
    if (bytes != NULL)
        *bytes = 0;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (strncmp(de->d_name, "mem-", 4) == 0 && len > 8 && strcmp(de->d_name + len - 4, ".cmx") == 0) {
            char p[4096];
            struct stat st;
            n++;
            snprintf(p, sizeof p, "%s/%s", path, de->d_name);
            if (bytes != NULL && stat(p, &st) == 0)
                *bytes += (uint64_t)st.st_size;
        }
    }
    closedir(d);
    return n;
}

static size_t count_index_files(const char *path)
{
    return index_files_of(path, NULL);
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

/* --probe STORE QUERY OUT: open STORE read-only, recall QUERY (top 10),
 * and write this process's VmHWM, RssAnon and RssFile (KiB) to OUT: how
 * much of a recall's peak RSS is its own memory and how much the page
 * cache of the mapped index files (shared, clean, given back under
 * pressure; this kernel maps a large folio of it whole on a touch). */
static int probe(const char *store, const char *query, const char *out)
{
    cairn_db *db = open_store(store, 0, 1);
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    cairn_recall_hit *h;
    cairn_mem *mem;
    size_t nh;
    char line[256];
    FILE *st, *o;
    if (cairn_mem_open(db, &mo, &mem) != CAIRN_OK)
        return 1;
    ro.k = 10;
    if (cairn_mem_recall(mem, query, &ro, &h, &nh) != CAIRN_OK)
        return 1;
    cairn_recall_free(h, nh);
    if ((st = fopen("/proc/self/status", "r")) == NULL || (o = fopen(out, "w")) == NULL)
        return 1;
    while (fgets(line, sizeof line, st) != NULL) {
        long kib;
        if (sscanf(line, "VmHWM: %ld", &kib) == 1 || sscanf(line, "RssAnon: %ld", &kib) == 1 ||
            sscanf(line, "RssFile: %ld", &kib) == 1)
            fprintf(o, "%ld\n", kib);
    }
    fclose(st);
    return fclose(o) != 0;
}

/* The probe's three figures, as a process on the store, for each of the
 * first RSS_QUERIES queries: the largest peak, and the largest private
 * part, in out[0..1]. */
static void probe_all(const char *store, char (*queries)[128], long out[2])
{
    char self[4096], tmp[1100];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    out[0] = out[1] = 0;
    if (n <= 0)
        bench_die("readlink /proc/self/exe");
    self[n] = 0;
    snprintf(tmp, sizeof tmp, "%s.probe", store);
    for (int i = 0; i < RSS_QUERIES; i++) {
        const char *argv[] = {self, "--probe", store, queries[i], tmp, NULL};
        long rss, v[3] = {0, 0, 0};
        double secs;
        FILE *f;
        if (bench_run(argv, &rss, &secs) != 0 || (f = fopen(tmp, "r")) == NULL ||
            fscanf(f, "%ld %ld %ld", &v[0], &v[1], &v[2]) != 3)
            bench_die("probe of \"%s\" failed", queries[i]);
        fclose(f);
        out[0] = v[0] > out[0] ? v[0] : out[0];
        out[1] = v[1] > out[1] ? v[1] : out[1];
    }
    unlink(tmp);
}

/* Peak RSS (KiB) of `cairn search` and `cairn recall` as processes on the
 * store, over the first RSS_QUERIES queries: median and largest of each in
 * rss[0..3] (search median, search max, recall median, recall max). 0: the
 * CLI is not there (--cairn). */
static int cli_rss(const char *store, char (*queries)[128], long rss[4])
{
    long got[2][RSS_QUERIES];
    if (access(cairn_bin, X_OK) != 0)
        return 0;
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < RSS_QUERIES; i++) {
            const char *argv[] = {cairn_bin, "--store", store, c ? "recall" : "search",
                                  queries[i], NULL};
            double secs;
            int rc = bench_run(argv, &got[c][i], &secs);
            if (rc != 0)
                bench_die("%s %s \"%s\": exit %d", cairn_bin, argv[3], queries[i], rc);
        }
    for (int c = 0; c < 2; c++) {
        qsort(got[c], RSS_QUERIES, sizeof got[c][0], cmp_long);
        rss[2 * c] = got[c][RSS_QUERIES / 2];
        rss[2 * c + 1] = got[c][RSS_QUERIES - 1];
    }
    return 1;
}

/* Sessions of a writer on the store (open, stores, close: each close writes
 * what it stored as a file on the chain; the merger thread merges four of
 * about one size, and two when the chain is full), of sizes that keep the
 * files apart, until the chain stops growing. Returns the memories added;
 * the sessions held in *sessions. */
static size_t grow_chain(const char *path, const cairn_mem_options *mo, size_t *sessions)
{
    static const size_t sizes[] = {1000, 1000, 1000, 4500, 4500, 4500, 20000, 20000, 20000,
                                   1000, 1000, 1000};
    char text[64 * 12];
    size_t added = 0, most = count_index_files(path), still = 0;
    *sessions = 0;
    for (size_t r = 0; r < sizeof sizes / sizeof sizes[0] && still < 3; r++) {
        cairn_db *db = open_store(path, 0, 0);
        cairn_mem *mem;
        if (cairn_mem_open(db, mo, &mem) != CAIRN_OK)
            bench_die("cairn_mem_open");
        for (size_t i = 0; i < sizes[r]; i++) {
            make_text(text, "x", added++);
            if (cairn_mem_store(mem, text, NULL, NULL, NULL) != CAIRN_OK)
                bench_die("store: %s", cairn_mem_errmsg(mem));
        }
        cairn_mem_close(mem);
        if (cairn_close(db) != CAIRN_OK)
            bench_die("close");
        ++*sessions;
        if (count_index_files(path) > most) {
            most = count_index_files(path);
            still = 0;
        } else {
            still++;
        }
    }
    return added;
}

/* 1000 queries on a read-only handle: their times into t (sorted), the
 * index files it read. */
static void cairn_queries(const char *path, const cairn_mem_options *mo, char (*queries)[128],
                          double *t, uint64_t *files)
{
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    cairn_db *db = open_store(path, 0, 1);
    cairn_mem *mem;
    cairn_mem_stats ms;
    if (cairn_mem_open(db, mo, &mem) != CAIRN_OK)
        bench_die("cairn_mem_open read-only");
    ro.k = 10;
    for (int i = 0; i < QUERIES; i++) {
        cairn_recall_hit *h;
        size_t nh;
        double t0 = bench_now();
        if (cairn_mem_recall(mem, queries[i], &ro, &h, &nh) != CAIRN_OK)
            bench_die("recall");
        t[i] = bench_now() - t0;
        cairn_recall_free(h, nh);
    }
    *files = 0;
    if (cairn_mem_stats_get(mem, &ms) == CAIRN_OK) {
        *files = ms.index_files;
        cairn_mem_stats_free(&ms);
    }
    cairn_mem_close(mem);
    cairn_close(db);
    qsort(t, QUERIES, sizeof *t, cmp_double);
}

static int close_only; /* --only close: the ingest and the closes alone */

static void synthetic(const char *dir, size_t n)
{
    char path[1100], *text = malloc(64 * 12), fq[512];
    char (*queries)[128] = calloc(QUERIES, sizeof *queries);
    double t0, c_ingest, c_index, c_memclose, f_ingest, c_open, *cq = calloc(QUERIES, sizeof(double)),
                                          *fq_t = calloc(QUERIES, sizeof(double)),
                                          *cw = calloc(QUERIES, sizeof(double));
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    cairn_db *db;
    cairn_mem *mem;
    sqlite3 *fdb;
    sqlite3_stmt *ins, *sel;
    char **texts;
    uint64_t index_files = 0, worst_files = 0, c_bytes, c_index_bytes = 0, f_bytes;
    long rss[4] = {0, 0, 0, 0}, probed[2] = {0, 0};
    int have_rss;
    size_t grown = 0, sessions = 0;
    int *lens;
    double s = 0, w0 = bench_now();
    size_t warmed = bench_warm_memory((size_t)(warm_gib * (1u << 30)));
    mo.stemmer = stemmer;
    mo.max_memories = n + 100000; /* keep them all (the default limit is 10,000) */
    fprintf(stderr, "warmed %.1f GiB of RAM in %.1f s (--warm GIB; 0 = none)\n",
            (double)warmed / (1u << 30), bench_now() - w0);

    zipf_cdf = malloc(VOCAB * sizeof *zipf_cdf);
    for (int i = 0; i < VOCAB; i++)
        zipf_cdf[i] = (s += 1.0 / (i + 1));
    for (int i = 0; i < VOCAB; i++)
        zipf_cdf[i] /= s;
    snprintf(path, sizeof path, "%s/mem-cairn", dir);
    rm_rf(path);
    mo.w_relevance = 1.0; /* rank as FTS5 does: relevance alone */
    /* cairn ingest */
    db = open_store(path, 1, 0);
    if (cairn_mem_open(db, &mo, &mem) != CAIRN_OK)
        bench_die("cairn_mem_open");
    /* the texts first, outside the timed loops: both sides ingest the same
     * bytes, and neither is billed for making them */
    texts = malloc(n * sizeof *texts);
    lens = malloc(n * sizeof *lens);
    if (texts == NULL || lens == NULL)
        bench_die("no memory for %zu texts", n);
    for (size_t i = 0; i < n; i++) {
        int len = make_text(text, "n", i); /* distinct contents */
        if ((texts[i] = malloc((size_t)len + 1)) == NULL)
            bench_die("no memory for the texts");
        memcpy(texts[i], text, (size_t)len + 1);
        lens[i] = len;
    }
    t0 = bench_now();
    for (size_t i = 0; i < n; i++)
        if (cairn_mem_store(mem, texts[i], NULL, NULL, NULL) != CAIRN_OK)
            bench_die("store %zu: %s", i, cairn_mem_errmsg(mem));
    c_index = bench_now();
    cairn_mem_close(mem); /* writes the RAM tail as an index file */
    c_memclose = bench_now() - c_index;
    if (cairn_close(db) != CAIRN_OK) /* syncs, seals the active segment */
        bench_die("close");
    c_index = bench_now() - c_index;
    c_ingest = bench_now() - t0;
    if (close_only) {
        printf("{\"bench\":\"memory\",\"part\":\"close\",\"memories\":%zu,"
               "\"cairn_ingest_s\":%.3f,\"cairn_mem_close_ms\":%.1f,\"cairn_close_ms\":%.1f}\n",
               n, c_ingest, c_memclose * 1e3, (c_index - c_memclose) * 1e3);
        fprintf(stderr, "close, %zu memories: ingest %.2f s, cairn_mem_close %.1f ms  %s (target <= "
                "100 ms), cairn_close %.1f ms\n", n, c_ingest, c_memclose * 1e3,
                c_memclose <= 0.1 ? "PASS" : "FAIL", (c_index - c_memclose) * 1e3);
        return;
    }
    /* FTS5 ingest, same texts */
    snprintf(path, sizeof path, "%s/mem-fts5.db", dir);
    rm_rf(path);
    fdb = fts_open(path);
    sqlite3_prepare_v2(fdb, "INSERT INTO m(content) VALUES (?)", -1, &ins, NULL);
    t0 = bench_now();
    for (size_t i = 0; i < n; i++) {
        if (i % 1000 == 0)
            sqlite3_exec(fdb, i ? "COMMIT; BEGIN" : "BEGIN", NULL, NULL, NULL);
        sqlite3_reset(ins);
        sqlite3_bind_text(ins, 1, texts[i], lens[i], SQLITE_STATIC);
        if (sqlite3_step(ins) != SQLITE_DONE)
            bench_die("fts insert: %s", sqlite3_errmsg(fdb));
    }
    sqlite3_exec(fdb, "COMMIT", NULL, NULL, NULL);
    f_ingest = bench_now() - t0;
    sqlite3_finalize(ins);
    /* bytes on disk: the store's directory, and the database with its WAL */
    {
        char cpath[1100];
        struct stat st;
        snprintf(cpath, sizeof cpath, "%s/mem-cairn", dir);
        c_bytes = bench_dir_bytes(cpath);
        (void)index_files_of(cpath, &c_index_bytes);
        f_bytes = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
        snprintf(cpath, sizeof cpath, "%s-wal", path);
        f_bytes += stat(cpath, &st) == 0 ? (uint64_t)st.st_size : 0;
    }
    /* queries: 1-4 terms, skipping the 100 most frequent words */
    for (int i = 0; i < QUERIES; i++) {
        int terms = 1 + (int)(rnd() % 4), len = 0;
        for (int t = 0; t < terms; t++) {
            int w;
            do
                w = zipf();
            while (w < 100);
            len += word(queries[i] + len, w);
            queries[i][len++] = ' ';
        }
        queries[i][len - 1] = 0;
    }
    /* cairn: open read-only (replay) and the first query */
    snprintf(path, sizeof path, "%s/mem-cairn", dir);
    t0 = bench_now();
    db = open_store(path, 0, 1);
    if (cairn_mem_open(db, &mo, &mem) != CAIRN_OK)
        bench_die("cairn_mem_open read-only");
    {
        cairn_recall_hit *h;
        size_t nh;
        ro.k = 10;
        if (cairn_mem_recall(mem, queries[0], &ro, &h, &nh) != CAIRN_OK)
            bench_die("recall");
        cairn_recall_free(h, nh);
    }
    c_open = bench_now() - t0;
    {
        cairn_mem_stats ms;
        if (cairn_mem_stats_get(mem, &ms) == CAIRN_OK) {
            index_files = ms.index_files;
            cairn_mem_stats_free(&ms);
        }
    }
    for (int i = 0; i < QUERIES; i++) {
        cairn_recall_hit *h;
        size_t nh;
        t0 = bench_now();
        if (cairn_mem_recall(mem, queries[i], &ro, &h, &nh) != CAIRN_OK)
            bench_die("recall");
        cq[i] = bench_now() - t0;
        cairn_recall_free(h, nh);
    }
    cairn_mem_close(mem);
    cairn_close(db);
    /* the chain at its longest, and the same queries over it */
    grown = grow_chain(path, &mo, &sessions);
    cairn_queries(path, &mo, queries, cw, &worst_files);
    have_rss = cli_rss(path, queries, rss);
    probe_all(path, queries, probed);
    sqlite3_prepare_v2(fdb, "SELECT rowid FROM m WHERE m MATCH ?1 ORDER BY rank LIMIT ?2", -1,
                       &sel, NULL);
    for (int i = 0; i < QUERIES; i++) {
        int64_t ids[10];
        fts_query(queries[i], fq, sizeof fq);
        t0 = bench_now();
        (void)fts_search(sel, fq, ids, 10);
        fq_t[i] = bench_now() - t0;
    }
    sqlite3_finalize(sel);
    sqlite3_close(fdb);
    qsort(cq, QUERIES, sizeof *cq, cmp_double);
    qsort(fq_t, QUERIES, sizeof *fq_t, cmp_double);
    printf("{\"bench\":\"memory\",\"part\":\"synthetic\",\"memories\":%zu,"
           "\"cairn_ingest_s\":%.3f,\"cairn_index_write_s\":%.3f,\"fts5_ingest_s\":%.3f,\"ingest_ratio\":%.3f,"
           "\"cairn_query_median_ms\":%.4f,\"cairn_query_p99_ms\":%.4f,"
           "\"fts5_query_median_ms\":%.4f,\"fts5_query_p99_ms\":%.4f,\"query_speedup\":%.3f,"
           "\"cairn_open_first_query_ms\":%.1f,\"cairn_index_files\":%llu,"
           "\"cairn_mem_close_ms\":%.1f,\"warmed_gib\":%.1f,"
           "\"longest_chain_index_files\":%llu,\"longest_chain_added\":%zu,"
           "\"longest_chain_query_median_ms\":%.4f,\"longest_chain_query_p99_ms\":%.4f,"
           "\"cairn_store_bytes\":%llu,\"cairn_index_bytes\":%llu,\"fts5_db_bytes\":%llu,"
           "\"store_size_ratio\":%.3f,\"cli_search_rss_kib_median\":%ld,\"cli_search_rss_kib_max\":%ld,"
           "\"cli_recall_rss_kib_median\":%ld,\"cli_recall_rss_kib_max\":%ld,"
           "\"recall_peak_rss_kib_max\":%ld,\"recall_anon_rss_kib_max\":%ld}\n",
           n, c_ingest, c_index, f_ingest, f_ingest / c_ingest, cq[QUERIES / 2] * 1e3,
           cq[QUERIES * 99 / 100] * 1e3, fq_t[QUERIES / 2] * 1e3, fq_t[QUERIES * 99 / 100] * 1e3,
           fq_t[QUERIES / 2] / cq[QUERIES / 2], c_open * 1e3, (unsigned long long)index_files,
           c_memclose * 1e3, (double)warmed / (1u << 30), (unsigned long long)worst_files, grown,
           cw[QUERIES / 2] * 1e3, cw[QUERIES * 99 / 100] * 1e3, (unsigned long long)c_bytes,
           (unsigned long long)c_index_bytes, (unsigned long long)f_bytes,
           (double)c_bytes / (double)f_bytes, rss[0], rss[1], rss[2], rss[3], probed[0], probed[1]);
    fprintf(stderr, "synthetic, %zu memories:\n", n);
    fprintf(stderr, "  ingest      cairn %.2f s (%.0f/s)   fts5 %.2f s (%.0f/s)   %.2fx  %s (target >= 3x)\n",
            c_ingest, n / c_ingest, f_ingest, n / f_ingest, f_ingest / c_ingest,
            f_ingest / c_ingest >= 3 ? "PASS" : "FAIL");
    fprintf(stderr, "              (cairn's includes %.3f s of close: the RAM tail written as an "
            "index file, the log synced and sealed)\n", c_index);
    fprintf(stderr, "  close       cairn_mem_close %.1f ms  %s (target <= 100 ms); cairn_close %.1f ms;"
            " %llu index files at the queries\n", c_memclose * 1e3,
            c_memclose <= 0.1 ? "PASS" : "FAIL", (c_index - c_memclose) * 1e3,
            (unsigned long long)index_files);
    fprintf(stderr, "  query       cairn median %.3f ms p99 %.3f ms   fts5 median %.3f ms p99 %.3f ms\n",
            cq[QUERIES / 2] * 1e3, cq[QUERIES * 99 / 100] * 1e3, fq_t[QUERIES / 2] * 1e3,
            fq_t[QUERIES * 99 / 100] * 1e3);
    fprintf(stderr, "              median <= 0.5 ms: %s;  >= 10x faster than fts5 (%.1fx): %s\n",
            cq[QUERIES / 2] * 1e3 <= 0.5 ? "PASS" : "FAIL", fq_t[QUERIES / 2] / cq[QUERIES / 2],
            fq_t[QUERIES / 2] / cq[QUERIES / 2] >= 10 ? "PASS" : "FAIL");
    fprintf(stderr, "  open + first query  %.1f ms  %s (target < 50 ms)\n", c_open * 1e3,
            c_open < 0.05 ? "PASS" : "FAIL");
    fprintf(stderr, "  longest chain  %llu index files after %zu more writer sessions (%zu memories):"
            " cairn median %.3f ms p99 %.3f ms  %s (target <= 0.5 ms)\n",
            (unsigned long long)worst_files, sessions, grown, cw[QUERIES / 2] * 1e3,
            cw[QUERIES * 99 / 100] * 1e3, cw[QUERIES / 2] * 1e3 <= 0.5 ? "PASS" : "FAIL");
    fprintf(stderr, "  size        cairn store %.1f MB (index files %.1f MB)   fts5 database %.1f MB"
            "   %.2fx  %s (target <= 1x)\n", c_bytes / 1e6, c_index_bytes / 1e6, f_bytes / 1e6,
            (double)c_bytes / (double)f_bytes, c_bytes <= f_bytes ? "PASS" : "FAIL");
    if (have_rss)
        fprintf(stderr, "  CLI RSS     over %d queries on the longest chain: search median %.1f MB max"
                " %.1f MB, recall median %.1f MB max %.1f MB  %s (target <= 64 MB)\n", RSS_QUERIES,
                rss[0] / 1024.0, rss[1] / 1024.0, rss[2] / 1024.0, rss[3] / 1024.0,
                rss[1] <= RSS_TARGET_KIB && rss[3] <= RSS_TARGET_KIB ? "PASS" : "FAIL");
    else
        fprintf(stderr, "  CLI RSS     not measured: no %s (--cairn PATH)\n", cairn_bin);
    fprintf(stderr, "  recall RSS  a process per query, the library: peak at most %.1f MB, of which"
            " private (RssAnon) at most %.1f MB; the rest is mapped page cache\n",
            probed[0] / 1024.0, probed[1] / 1024.0);
    for (size_t i = 0; i < n; i++)
        free(texts[i]);
    free(texts);
    free(lens);
    free(text);
    free(queries);
    free(cq);
    free(cw);
    free(fq_t);
    free(zipf_cdf);
}

/* ---- LoCoMo -------------------------------------------------------------- */

typedef struct turn {
    char dia[16];
    char id[CAIRN_MEM_ID_MAX + 1];
} turn;

/* The variants measured over the same memories, in output order. */
enum { V_LEX, V_RRF, V_SCORE, V_SEM, V_FTS, NV };
static const char *const v_key[NV] = {"cairn", "cairn_hybrid_rrf", "cairn_hybrid_score",
                                      "cairn_semantic", "fts5"};
static const char *const v_label[NV] = {"cairn lexical", "cairn hybrid rrf",
                                        "cairn hybrid score", "cairn semantic", "fts5"};

static cairn_mem *mem_open(cairn_db *db, cairn_fusion fusion, const cairn_embedder *emb)
{
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    cairn_mem *mem;
    mo.w_relevance = 1.0;
    mo.stemmer = stemmer;
    mo.fusion = fusion;
    if (getenv("CAIRN_BENCH_SEMANTIC_WEIGHT") != NULL) /* for sweeps; README "Hybrid recall" */
        mo.semantic_weight = atof(getenv("CAIRN_BENCH_SEMANTIC_WEIGHT"));
    if (cairn_mem_open(db, &mo, &mem) != CAIRN_OK)
        bench_die("mem open");
    if (emb != NULL && cairn_mem_set_embedder(mem, emb) != CAIRN_OK)
        bench_die("set embedder: %s", cairn_mem_errmsg(mem));
    return mem;
}

/* Every variant stores or reads the same memories: one store is written
 * with the built-in embedder (so every memory has a vector), closed, and
 * opened read-only twice, once per fusion (read-only: recall records no
 * access, so each variant sees the very same store). Lexical and semantic
 * recall do not depend on the fusion and run on the first handle. A second
 * store, without embedder, is written only to time ingest without vectors. */
static void locomo(const char *dir, const char *data)
{
    DIR *d = opendir(data);
    struct dirent *de;
    double r5[NV] = {0}, r10[NV] = {0}, qtime[NV] = {0}, ing_emb = 0, ing_lex = 0, t0;
    int questions = 0, convs = 0;
    size_t memories = 0;
    uint64_t vectors = 0;
    char path[1100], vname[CAIRN_EMBEDDER_NAME_MAX + 1] = "";
    uint32_t vdim = 0;
    cairn_embedder emb;

    if (d == NULL)
        bench_die("cannot open %s", data);
    if (cairn_hash_embedder(&emb, 0) != CAIRN_OK)
        bench_die("cairn_hash_embedder");
    while ((de = readdir(d)) != NULL) {
        FILE *fp;
        char *buf;
        long len;
        cJSON *root, *qa, *q;
        cairn_db *db, *lexdb, *ro[2];
        cairn_mem *mem, *lexmem, *rm[2];
        sqlite3 *fdb;
        sqlite3_stmt *ins, *sel;
        turn *turns = NULL;
        size_t nturns = 0;
        uint64_t nv = 0;
        char lexpath[1100];
        if (strstr(de->d_name, ".json") == NULL)
            continue;
        snprintf(path, sizeof path, "%s/%s", data, de->d_name);
        fp = fopen(path, "rb");
        if (fp == NULL)
            bench_die("open %s", path);
        fseek(fp, 0, SEEK_END);
        len = ftell(fp);
        fseek(fp, 0, SEEK_SET);
        buf = malloc((size_t)len + 1);
        if (fread(buf, 1, (size_t)len, fp) != (size_t)len)
            bench_die("read %s", path);
        buf[len] = 0;
        fclose(fp);
        root = cJSON_Parse(buf);
        free(buf);
        if (root == NULL)
            bench_die("parse %s", path);
        convs++;
        snprintf(path, sizeof path, "%s/locomo-cairn", dir);
        rm_rf(path);
        db = open_store(path, 1, 0);
        mem = mem_open(db, CAIRN_FUSION_RRF, &emb);
        snprintf(lexpath, sizeof lexpath, "%s/locomo-cairn-noembed", dir);
        rm_rf(lexpath);
        lexdb = open_store(lexpath, 1, 0);
        lexmem = mem_open(lexdb, CAIRN_FUSION_RRF, NULL);
        snprintf(path, sizeof path, "%s/locomo-fts5.db", dir);
        rm_rf(path);
        fdb = fts_open(path);
        sqlite3_prepare_v2(fdb, "INSERT INTO m(rowid, content) VALUES (?, ?)", -1, &ins, NULL);
        sqlite3_exec(fdb, "BEGIN", NULL, NULL, NULL);
        for (cJSON *s = root->child; s != NULL; s = s->next) {
            cJSON *t;
            if (strncmp(s->string, "session_", 8) != 0 || !cJSON_IsArray(s))
                continue;
            cJSON_ArrayForEach(t, s) {
                const cJSON *sp = cJSON_GetObjectItem(t, "speaker"),
                            *tx = cJSON_GetObjectItem(t, "text"),
                            *di = cJSON_GetObjectItem(t, "dia_id");
                char content[8192];
                cairn_memory *m = NULL;
                if (!cJSON_IsString(sp) || !cJSON_IsString(tx) || !cJSON_IsString(di))
                    continue;
                snprintf(content, sizeof content, "%s: %s", sp->valuestring, tx->valuestring);
                turns = realloc(turns, (nturns + 1) * sizeof *turns);
                snprintf(turns[nturns].dia, sizeof turns[nturns].dia, "%s", di->valuestring);
                t0 = bench_now();
                if (cairn_mem_store(mem, content, NULL, &m, NULL) != CAIRN_OK)
                    bench_die("store: %s", cairn_mem_errmsg(mem));
                ing_emb += bench_now() - t0;
                strcpy(turns[nturns].id, m->id); /* a duplicate maps to the first one */
                cairn_mem_free(m);
                t0 = bench_now();
                if (cairn_mem_store(lexmem, content, NULL, NULL, NULL) != CAIRN_OK)
                    bench_die("store: %s", cairn_mem_errmsg(lexmem));
                ing_lex += bench_now() - t0;
                sqlite3_reset(ins);
                sqlite3_bind_int64(ins, 1, (sqlite3_int64)nturns + 1);
                sqlite3_bind_text(ins, 2, content, -1, SQLITE_TRANSIENT);
                if (sqlite3_step(ins) != SQLITE_DONE)
                    bench_die("fts insert");
                nturns++;
            }
        }
        sqlite3_exec(fdb, "COMMIT", NULL, NULL, NULL);
        sqlite3_finalize(ins);
        /* ingest includes the close, which writes the memory index file */
        t0 = bench_now();
        cairn_mem_close(mem);
        cairn_close(db);
        ing_emb += bench_now() - t0;
        t0 = bench_now();
        cairn_mem_close(lexmem);
        cairn_close(lexdb);
        ing_lex += bench_now() - t0;
        rm_rf(lexpath);
        snprintf(path, sizeof path, "%s/locomo-cairn", dir);
        for (int f = 0; f < 2; f++) {
            ro[f] = open_store(path, 0, 1);
            rm[f] = mem_open(ro[f], f ? CAIRN_FUSION_SCORE : CAIRN_FUSION_RRF, &emb);
        }
        cairn_mem_vectors(rm[0], vname, &vdim, &nv);
        if (nv == 0)
            bench_die("no vectors stored: hybrid recall would be lexical");
        vectors += nv;
        memories += nturns;
        sqlite3_prepare_v2(fdb, "SELECT rowid FROM m WHERE m MATCH ?1 ORDER BY rank LIMIT ?2",
                           -1, &sel, NULL);
        qa = cJSON_GetObjectItem(root, "qa");
        cJSON_ArrayForEach(q, qa) {
            const cJSON *cat = cJSON_GetObjectItem(q, "category"),
                        *qs = cJSON_GetObjectItem(q, "question"),
                        *ev = cJSON_GetObjectItem(q, "evidence"), *e;
            static const cairn_recall_mode vmode[V_FTS] = {
                CAIRN_RECALL_LEXICAL, CAIRN_RECALL_HYBRID, CAIRN_RECALL_HYBRID,
                CAIRN_RECALL_SEMANTIC};
            cairn_recall_hit *h[V_FTS] = {NULL};
            size_t nh[V_FTS] = {0};
            int64_t rows[10];
            int nr, nev = 0, hit[NV][2];
            char fq[2048];
            if (!cJSON_IsNumber(cat) || cat->valueint < 1 || cat->valueint > 4 ||
                !cJSON_IsString(qs) || !cJSON_IsArray(ev) || cJSON_GetArraySize(ev) == 0)
                continue;
            memset(hit, 0, sizeof hit);
            for (int v = 0; v < V_FTS; v++) {
                cairn_recall_opts o = CAIRN_RECALL_OPTS_INIT;
                cairn_mem *mv = v == V_SCORE ? rm[1] : rm[0];
                o.k = 10;
                o.mode = vmode[v];
                t0 = bench_now();
                if (cairn_mem_recall(mv, qs->valuestring, &o, &h[v], &nh[v]) != CAIRN_OK)
                    bench_die("recall (%s): %s", v_label[v], cairn_mem_errmsg(mv));
                qtime[v] += bench_now() - t0;
            }
            t0 = bench_now();
            fts_query(qs->valuestring, fq, sizeof fq);
            nr = fts_search(sel, fq, rows, 10);
            qtime[V_FTS] += bench_now() - t0;
            cJSON_ArrayForEach(e, ev) {
                size_t t;
                if (!cJSON_IsString(e))
                    continue;
                nev++;
                for (t = 0; t < nturns && strcmp(turns[t].dia, e->valuestring) != 0; t++)
                    ;
                if (t == nturns)
                    continue; /* evidence that names no turn */
                for (int v = 0; v < V_FTS; v++)
                    for (size_t r = 0; r < nh[v]; r++)
                        if (strcmp(h[v][r].mem.id, turns[t].id) == 0) {
                            hit[v][0] += r < 5;
                            hit[v][1]++;
                        }
                for (int r = 0; r < nr; r++)
                    if (rows[r] == (int64_t)t + 1) {
                        hit[V_FTS][0] += r < 5;
                        hit[V_FTS][1]++;
                    }
            }
            for (int v = 0; v < V_FTS; v++)
                cairn_recall_free(h[v], nh[v]);
            if (nev == 0)
                continue;
            for (int v = 0; v < NV; v++) {
                r5[v] += (double)hit[v][0] / nev;
                r10[v] += (double)hit[v][1] / nev;
            }
            questions++;
        }
        sqlite3_finalize(sel);
        sqlite3_close(fdb);
        for (int f = 0; f < 2; f++) {
            cairn_mem_close(rm[f]);
            cairn_close(ro[f]);
        }
        free(turns);
        cJSON_Delete(root);
    }
    closedir(d);
    cairn_hash_embedder_free(&emb);
    if (questions == 0)
        bench_die("no questions in %s", data);
    printf("{\"bench\":\"memory\",\"part\":\"locomo\",\"conversations\":%d,\"questions\":%d,"
           "\"memories\":%zu,\"vectors\":%llu,\"embedder\":\"%s\",\"embedder_dim\":%u,"
           "\"cairn_ingest_s\":%.4f,\"cairn_ingest_embed_s\":%.4f",
           convs, questions, memories, (unsigned long long)vectors, vname, vdim, ing_lex,
           ing_emb);
    for (int v = 0; v < NV; v++)
        printf(",\"%s_recall_at_5\":%.4f,\"%s_recall_at_10\":%.4f,\"%s_query_mean_ms\":%.4f",
               v_key[v], r5[v] / questions, v_key[v], r10[v] / questions, v_key[v],
               qtime[v] * 1e3 / questions);
    printf("}\n");
    fprintf(stderr, "locomo-dev, %d conversations, %d questions (categories 1-4), %zu memories, "
            "%llu vectors (%s, %u dimensions):\n", convs, questions, memories,
            (unsigned long long)vectors, vname, vdim);
    fprintf(stderr, "  %-20s %9s %9s %13s\n", "", "recall@5", "recall@10", "query mean ms");
    for (int v = 0; v < NV; v++)
        fprintf(stderr, "  %-20s %9.4f %9.4f %13.3f\n", v_label[v], r5[v] / questions,
                r10[v] / questions, qtime[v] * 1e3 / questions);
    fprintf(stderr, "  ingest (cairn, close included)  %.3f s without vectors, %.3f s with "
            "(%.1f us/memory more)\n", ing_lex, ing_emb,
            (ing_emb - ing_lex) * 1e6 / (double)(memories ? memories : 1));
    fprintf(stderr, "  recall@5   cairn lexical %.4f   fts5 %.4f   %s\n", r5[V_LEX] / questions,
            r5[V_FTS] / questions, r5[V_LEX] >= r5[V_FTS] ? "PASS" : "FAIL");
    fprintf(stderr, "  recall@10  cairn lexical %.4f   fts5 %.4f   %s (cairn not below fts5)\n",
            r10[V_LEX] / questions, r10[V_FTS] / questions,
            r10[V_LEX] >= r10[V_FTS] ? "PASS" : "FAIL");
    for (int v = V_RRF; v <= V_SEM; v++)
        fprintf(stderr, "  %-20s vs lexical: recall@5 %+.4f, recall@10 %+.4f\n", v_label[v],
                (r5[v] - r5[V_LEX]) / questions, (r10[v] - r10[V_LEX]) / questions);
}

int main(int argc, char **argv)
{
    size_t n = 1000000;
    int close_part = 0;
    const char *dir = "build/bench-tmp", *data = "../shared/data/locomo-dev", *only = NULL;

    bench_name = "bench_memory";
    if (argc == 5 && strcmp(argv[1], "--probe") == 0)
        return probe(argv[2], argv[3], argv[4]);
    bench_spawner_start(); /* now, while this process is small: cli_rss */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
            n = (size_t)strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--locomo") == 0 && i + 1 < argc)
            data = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
            if (strcmp(only, "close") == 0) {
                close_part = 1;
                only = "synthetic";
            } else if (strcmp(only, "synthetic") != 0 && strcmp(only, "locomo") != 0) {
                bench_die("--only: synthetic, locomo or close, not %s", only);
            }
        }
        else if (strcmp(argv[i], "--stemmer") == 0 && i + 1 < argc)
            stemmer = argv[++i];
        else if (strcmp(argv[i], "--cairn") == 0 && i + 1 < argc)
            cairn_bin = argv[++i];
        else if (strcmp(argv[i], "--warm") == 0 && i + 1 < argc) {
            warm_gib = atof(argv[++i]);
            if (!(warm_gib >= 0 && warm_gib <= 1024))
                bench_die("--warm: GiB from 0 to 1024, not %s", argv[i]);
        }
        else
            bench_die("usage: bench_memory [--n N] [--dir DIR] [--locomo DIR] [--stemmer S] "
                "[--only synthetic|locomo|close] [--warm GIB] [--cairn PATH]");
    }
    close_only = close_part;
    mkdir(dir, 0755);
    if (only == NULL || strcmp(only, "locomo") == 0)
        locomo(dir, data);
    if (only == NULL || strcmp(only, "synthetic") == 0)
        synthetic(dir, n);
    return 0;
}
