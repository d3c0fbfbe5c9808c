/*
 * bench_util.h - helpers shared by the benches: monotonic and CPU clocks,
 * fatal errors (a bench exits; the library never does), the deterministic
 * data set, and the result table printed as JSON lines (stdout) and as a
 * human table (stderr).
 */
#ifndef CAIRN_BENCH_UTIL_H
#define CAIRN_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cairn.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define N_NS 16               /* namespaces in the data set: "agent-00".."agent-15" */
#define BENCH_RESULTS_MAX 32

/* Seconds on CLOCK_MONOTONIC; CPU seconds on clock `id`. */
double bench_now(void);
double bench_cpu(clockid_t id);
/* Print "bench_append: <message>" to stderr and exit(1). */
/* The program's name, which prefixes bench_die's message (main sets it). */
extern const char *bench_name;
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* bench_die() with the status name and the handle's message unless rc is CAIRN_OK. */
void bench_check(cairn_db *db, int rc, const char *what);
/* malloc or die. */
void *bench_malloc(size_t n);
/* Remove a file or a directory tree; errors are ignored. */
void bench_rm_rf(const char *path);
/* write() all of p or die. */
void bench_write_all(int fd, const void *p, size_t n);
/* Write one byte in every page of `bytes` of fresh anonymous memory (at
 * most half of the free RAM; nothing below 64 MiB), then give it back;
 * returns the bytes touched.
 * On a virtual machine the host backs a guest page only when the guest
 * first touches it, and that first touch is slow (here: dd of 700 MB into
 * the page cache at 435 MB/s the first time, 6 GB/s once those pages had
 * been used). A contender that happens to run on never-touched memory
 * would pay for it and the other would not, so benches that allocate a
 * lot call this once before any timed section. */
size_t bench_warm_memory(size_t bytes);
/* Run argv (stdout to /dev/null); its exit status (128 + the signal if
 * killed), peak RSS in KiB (wait4) and wall seconds. A child's peak RSS
 * counts the pages it had from fork until its exec, so a bench that holds
 * much memory starts a spawner first, while small (bench_spawner_start):
 * bench_run then forks from it. */
int bench_run(const char *const argv[], long *rss_kib, double *secs);
void bench_spawner_start(void);
/* Bytes of the files in directory path (not its subdirectories). */
uint64_t bench_dir_bytes(const char *path);
/* Name of a statfs f_type ("ext4", "tmpfs", ..., "other"). */
const char *bench_fs_name(long type);

/* The records every contender appends, generated once. */
typedef struct dataset {
    size_t n;
    char *buf;        /* all payloads, back to back */
    cairn_entry *e;   /* e[i].json points into buf */
    int64_t *ts;      /* for SQLite's ts column */
    uint64_t bytes;   /* sum of ns_len + json_len */
} dataset;

/* Fill *d with n records from `seed` (splitmix64); the same seed gives the
 * same bytes. Owns d->buf, d->e and d->ts (free them). Dies on OOM. */
void bench_dataset_make(dataset *d, size_t n, uint64_t seed);

/* One measurement. */
typedef struct result {
    char name[32];
    uint64_t records;
    uint64_t bytes;
    double secs;       /* the measured loop */
    double open_secs;  /* < 0: not applicable */
    double close_secs; /* < 0: not applicable */
    double cpu_secs;   /* process CPU over the loop (all threads) */
    int rep;           /* repetition (0-based), -1 when the run is not repeated */
    char extra[256];   /* more JSON members, ",\"k\":v..." */
    char note[96];
} result;

extern result bench_results[BENCH_RESULTS_MAX];
extern int bench_n_results;
extern uint64_t bench_seed; /* printed on every line */

double bench_rate(const result *r); /* records per second */
double bench_mbps(const result *r); /* MB (10^6 bytes) per second */
/* A fresh, zeroed result called `name` (open/close times and rep set to -1). */
result *bench_result_new(const char *name);
/* The result called `name`; of repetitions, the median by records/s (the
 * lower middle one for an even count). *lo and *hi (may be NULL) get the
 * slowest and fastest rate, *n (may be NULL) the number of repetitions. */
const result *bench_find_stats(const char *name, double *lo, double *hi, int *n);
const result *bench_find(const char *name);
/* Print r as one JSON line on stdout and one human line on stderr. */
void bench_emit(const result *r);

#endif /* CAIRN_BENCH_UTIL_H */
