/*
 * bench_util.c - what the benches share: clocks, fatal errors, the data set
 * (agent-event-like JSON from a fixed seed) and the result table with its
 * JSON-lines output (bench_util.h).
 */
#include "bench_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- small helpers -------------------------------------------------------- */

double bench_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

double bench_cpu(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

const char *bench_name = "bench";

void bench_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", bench_name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

void bench_check(cairn_db *db, int rc, const char *what)
{
    if (rc != CAIRN_OK)
        bench_die("%s: %s (%s)", what, cairn_strerror(rc), db ? cairn_errmsg(db) : "");
}

void *bench_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        bench_die("out of memory (%zu bytes)", n);
    return p;
}

static uint64_t rng_state;
static uint64_t rng(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static unsigned rnd(unsigned n) { return (unsigned)(rng() % n); }

size_t bench_warm_memory(size_t bytes)
{
    long page = sysconf(_SC_PAGESIZE), avail = sysconf(_SC_AVPHYS_PAGES);
    uint8_t *p;

    if (page > 0 && avail > 0 && bytes > (size_t)avail / 2 * (size_t)page)
        bytes = (size_t)avail / 2 * (size_t)page;
    for (; bytes >= (64u << 20); bytes /= 2) {
        p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            continue;
        for (size_t i = 0; i < bytes; i += (size_t)page)
            p[i] = 1;
        munmap(p, bytes);
        return bytes;
    }
    return 0;
}

void bench_rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *de;
        if (d != NULL) {
            while ((de = readdir(d)) != NULL) {
                char sub[4096];
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                    continue;
                snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
                bench_rm_rf(sub);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

void bench_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            bench_die("write: %s", strerror(errno));
        c += w;
        n -= (size_t)w;
    }
}

const char *bench_fs_name(long type)
{
    switch ((unsigned long)type) {
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x01021994: return "tmpfs";
    case 0x794c7630: return "overlay";
    case 0x2FC12FC1: return "zfs";
    default: return "other";
    }
}

/* ---- the data set --------------------------------------------------------- */


static char ns_names[N_NS][12];

static const char *const KINDS[] = {"tool_call", "tool_result", "observation", "thought",
                                    "message",   "plan",        "error",       "reflection"};
static const char *const TOOLS[] = {"web_search", "read_file", "write_file", "shell",
                                    "http_get",   "sql_query", "calendar",   "email_send",
                                    "none"};
static const char *const STATUS[] = {"ok", "ok", "ok", "retry", "error", "timeout"};
static const char *const WORDS[] = {
    "the",      "user",   "asked",   "for",     "a",        "summary",  "of",     "quarterly",
    "revenue",  "found",  "three",   "sources", "file",     "contains", "error",  "when",
    "parsing",  "json",   "retry",   "with",    "smaller",  "batch",    "memory", "agent",
    "plan",     "step",   "next",    "check",   "calendar", "meeting",  "moved",  "to",
    "tuesday",  "deploy", "failed",  "because", "token",    "expired",  "cache",  "hit",
    "latency",  "budget", "exceeded", "answer", "draft",    "ready",    "review", "and",
    "schedule", "follow", "up",      "on",      "invoice",  "customer", "reply",  "sent"};


void bench_dataset_make(dataset *d, size_t n, uint64_t seed)
{
    size_t cap = n * 320 + 1024, len = 0;
    rng_state = seed;
    for (int i = 0; i < N_NS; i++)
        snprintf(ns_names[i], sizeof ns_names[i], "agent-%02d", i);
    d->n = n;
    d->buf = bench_malloc(cap);
    d->e = bench_malloc(n * sizeof *d->e);
    d->ts = bench_malloc(n * sizeof *d->ts);
    d->bytes = 0;
    size_t *off = bench_malloc(n * sizeof *off);
    int64_t ts = 1700000000000;
    for (size_t i = 0; i < n; i++) {
        char text[160];
        size_t tl = 0, want_len = 20 + rnd(60);
        unsigned agent = rnd(N_NS);
        while (tl < want_len) {
            const char *w = WORDS[rnd(NELEM(WORDS))];
            size_t wl = strlen(w);
            if (tl + wl + 2 >= sizeof text)
                break;
            if (tl)
                text[tl++] = ' ';
            memcpy(text + tl, w, wl);
            tl += wl;
        }
        text[tl] = 0;
        ts += 1 + rnd(200);
        int w = snprintf(d->buf + len, cap - len,
                         "{\"agent\":\"%s\",\"session\":\"%08x\",\"step\":%u,\"kind\":\"%s\","
                         "\"tool\":\"%s\",\"status\":\"%s\",\"latency_ms\":%u,\"tokens\":%u,"
                         "\"text\":\"%s\"}",
                         ns_names[agent], (unsigned)(rng() & 0xffffffffu), (unsigned)(i % 5000),
                         KINDS[rnd(NELEM(KINDS))], TOOLS[rnd(NELEM(TOOLS))],
                         STATUS[rnd(NELEM(STATUS))], rnd(5000), rnd(4096), text);
        if (w < 0 || (size_t)w >= cap - len)
            bench_die("data buffer too small");
        off[i] = len;
        d->e[i].type = CAIRN_REC_EVENT;
        d->e[i].ns = ns_names[agent];
        d->e[i].ns_len = 8;
        d->e[i].json_len = (size_t)w;
        d->e[i].bin = NULL;
        d->e[i].bin_len = 0;
        d->ts[i] = ts;
        d->bytes += 8 + (uint64_t)w;
        len += (size_t)w;
    }
    for (size_t i = 0; i < n; i++)
        d->e[i].json = d->buf + off[i];
    free(off);
}

/* ---- results -------------------------------------------------------------- */


result bench_results[BENCH_RESULTS_MAX];
int bench_n_results;
uint64_t bench_seed;

double bench_rate(const result *r) { return r->secs > 0 ? (double)r->records / r->secs : 0; }
double bench_mbps(const result *r) { return r->secs > 0 ? (double)r->bytes / r->secs / 1e6 : 0; }

/* Median by records/s: insertion-sort the (few) repetitions. */
const result *bench_find_stats(const char *name, double *lo, double *hi, int *n)
{
    const result *m[NELEM(bench_results)];
    int k = 0;
    for (int i = 0; i < bench_n_results; i++)
        if (strcmp(bench_results[i].name, name) == 0)
            m[k++] = &bench_results[i];
    if (n)
        *n = k;
    if (k == 0)
        return NULL;
    for (int i = 1; i < k; i++) /* insertion sort by rate */
        for (int j = i; j > 0 && bench_rate(m[j]) < bench_rate(m[j - 1]); j--) {
            const result *t = m[j];
            m[j] = m[j - 1];
            m[j - 1] = t;
        }
    if (lo)
        *lo = bench_rate(m[0]);
    if (hi)
        *hi = bench_rate(m[k - 1]);
    return m[(k - 1) / 2];
}

const result *bench_find(const char *name) { return bench_find_stats(name, NULL, NULL, NULL); }

void bench_emit(const result *r)
{
    double load[1] = {0};
    getloadavg(load, 1);
    printf("{\"bench\":\"append\",\"name\":\"%s\",\"records\":%" PRIu64 ",\"bytes\":%" PRIu64
           ",\"seconds\":%.6f,\"records_per_s\":%.1f,\"mb_per_s\":%.2f,\"cpu_seconds\":%.4f",
           r->name, r->records, r->bytes, r->secs, bench_rate(r), bench_mbps(r), r->cpu_secs);
    if (r->open_secs >= 0)
        printf(",\"open_seconds\":%.6f", r->open_secs);
    if (r->close_secs >= 0)
        printf(",\"close_seconds\":%.6f,\"records_per_s_with_close\":%.1f", r->close_secs,
               (double)r->records / (r->secs + r->close_secs));
    if (r->rep >= 0)
        printf(",\"rep\":%d", r->rep);
    printf("%s,\"load1\":%.2f,\"seed\":%" PRIu64 "}\n", r->extra, load[0], bench_seed);
    fflush(stdout);
    fprintf(stderr, "  %-18s %9" PRIu64 " rec %8.3f s %12.0f rec/s %9.1f MB/s%s\n", r->name,
            r->records, r->secs, bench_rate(r), bench_mbps(r), r->note);
}

result *bench_result_new(const char *name)
{
    if (bench_n_results >= (int)NELEM(bench_results))
        bench_die("too many results");
    result *r = &bench_results[bench_n_results++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->open_secs = -1;
    r->close_secs = -1;
    r->rep = -1;
    return r;
}

/* fork + exec + wait4 from this process. */
static int run_here(const char *const argv[], long *rss_kib, double *secs)
{
    struct rusage ru;
    double t0 = bench_now();
    int st = 0;
    pid_t pid = fork();
    if (pid < 0)
        bench_die("fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, 1);
        execv(argv[0], (char *const *)(uintptr_t)argv); /* execv does not write them */
        _exit(127);
    }
    if (wait4(pid, &st, 0, &ru) < 0)
        bench_die("wait4: %s", strerror(errno));
    *secs = bench_now() - t0;
    *rss_kib = ru.ru_maxrss;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The spawner's pipes (bench_spawner_start), or -1. */
static int spawn_req = -1, spawn_resp = -1;

typedef struct spawn_result {
    int status;
    long rss_kib;
    double secs;
} spawn_result;

static int read_full(int fd, void *p, size_t n)
{
    while (n > 0) {
        ssize_t got = read(fd, p, n);
        if (got <= 0)
            return -1;
        p = (char *)p + got;
        n -= (size_t)got;
    }
    return 0;
}

void bench_spawner_start(void)
{
    int req[2], resp[2];
    pid_t pid;
    if (pipe(req) != 0 || pipe(resp) != 0)
        bench_die("pipe: %s", strerror(errno));
    if ((pid = fork()) < 0)
        bench_die("fork: %s", strerror(errno));
    if (pid == 0) { /* serve requests until the bench goes */
        close(req[1]);
        close(resp[0]);
        for (;;) {
            uint32_t argc, len;
            char *args[64];
            spawn_result r;
            if (read_full(req[0], &argc, 4) != 0 || argc == 0 || argc >= 64)
                _exit(0);
            for (uint32_t i = 0; i < argc; i++) {
                if (read_full(req[0], &len, 4) != 0 || (args[i] = malloc(len + 1)) == NULL ||
                    read_full(req[0], args[i], len) != 0)
                    _exit(1);
                args[i][len] = 0;
            }
            args[argc] = NULL;
            r.status = run_here((const char *const *)args, &r.rss_kib, &r.secs);
            bench_write_all(resp[1], &r, sizeof r);
            for (uint32_t i = 0; i < argc; i++)
                free(args[i]);
        }
    }
    close(req[0]);
    close(resp[1]);
    spawn_req = req[1];
    spawn_resp = resp[0];
}

int bench_run(const char *const argv[], long *rss_kib, double *secs)
{
    uint32_t argc = 0;
    spawn_result r;
    if (spawn_req < 0)
        return run_here(argv, rss_kib, secs);
    while (argv[argc] != NULL)
        argc++;
    if (argc == 0 || argc >= 64)
        bench_die("bench_run: %u arguments", argc);
    bench_write_all(spawn_req, &argc, 4);
    for (uint32_t i = 0; i < argc; i++) {
        uint32_t len = (uint32_t)strlen(argv[i]);
        bench_write_all(spawn_req, &len, 4);
        bench_write_all(spawn_req, argv[i], len);
    }
    if (read_full(spawn_resp, &r, sizeof r) != 0)
        bench_die("bench_run: the spawner is gone");
    *rss_kib = r.rss_kib;
    *secs = r.secs;
    return r.status;
}

uint64_t bench_dir_bytes(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *de;
    uint64_t n = 0;
    if (d == NULL)
        bench_die("opendir %s: %s", path, strerror(errno));
    while ((de = readdir(d)) != NULL) {
        char p[4096];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", path, de->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
            n += (uint64_t)st.st_size;
    }
    closedir(d);
    return n;
}
