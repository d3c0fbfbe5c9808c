/*
 * bench_import.c - what a memory import costs in RAM and on disk, by the
 * tool a user runs: `cairn import --format json FILE` of N memories into a
 * fresh store, once with the defaults (no vectors unless asked for), once
 * with the built-in embedder (--embed-builtin) and once with --no-embed.
 * Each import is a child process; its peak RSS comes from wait4(2), the
 * store's size from the bytes of its files once the import has closed.
 *
 * Then, on the store the default import made, OPS `cairn add` (each a new
 * memory) and OPS `cairn recall` (1-3 words of the vocabulary), one
 * process each, timed from fork to exit: the latency a script or hook
 * sees, index files written along the way included.
 *
 * Targets (a JSON line each, PASS/FAIL on stderr): the default import of
 * 100,000 memories peaks at <= 150 MiB RSS; the default store is at most
 * 1.5x the size of the store without vectors; the p99 of the adds and of
 * the recalls is at most 3x their median (no periodic spike).
 *
 *   ./build/bench/bench_import --cairn build/cairn [--n 100000] [--ops 2000] [--dir DIR] [--seed S]
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* N memories of 12-30 words from a 5,000-word vocabulary, a category and
 * an importance each, as `cairn export --format json` writes them. */
static void make_input(const char *path, size_t n, uint64_t seed)
{
    static const char *const cats[] = {"fact", "decision", "preference", "skill"};
    FILE *f = fopen(path, "w");
    if (f == NULL)
        bench_die("%s: %s", path, strerror(errno));
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        int words = 12 + (int)(rnd(&seed) % 19);
        fprintf(f, "%s{\"content\":\"", i ? "," : "");
        for (int w = 0; w < words; w++)
            fprintf(f, "%sw%u", w ? " " : "", (unsigned)(rnd(&seed) % 5000));
        fprintf(f, " #%zu\",\"category\":\"%s\",\"importance\":%.2f}", i, cats[rnd(&seed) % 4],
                (double)(rnd(&seed) % 101) / 100.0);
    }
    fputs("]\n", f);
    if (fclose(f) != 0)
        bench_die("%s: %s", path, strerror(errno));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* OPS adds, then OPS recalls, each a process, on store: their latency.
 * Returns the targets missed. */
static int cli_latency(const char *cairn, const char *store, size_t ops, uint64_t seed)
{
    double *lat = malloc((ops ? ops : 1) * sizeof *lat);
    int fails = 0;
    if (lat == NULL)
        bench_die("no memory");
    for (int part = 0; part < 2; part++) {
        const char *name = part ? "recall" : "add";
        double med, p99, max;
        for (size_t i = 0; i < ops; i++) {
            char text[160];
            const char *add[] = {cairn, "--store", store, "add", text, NULL};
            const char *rec[] = {cairn, "--store", store, "recall", text, "--k", "10", NULL};
            long rss;
            int rc;
            if (part == 0)
                snprintf(text, sizeof text, "w%u w%u w%u w%u note %zu added by a hook",
                         (unsigned)(rnd(&seed) % 5000), (unsigned)(rnd(&seed) % 5000),
                         (unsigned)(rnd(&seed) % 5000), (unsigned)(rnd(&seed) % 5000), i);
            else
                snprintf(text, sizeof text, "w%u w%u", (unsigned)(rnd(&seed) % 5000),
                         (unsigned)(rnd(&seed) % 5000));
            if ((rc = bench_run(part ? rec : add, &rss, &lat[i])) != 0)
                bench_die("%s %s: exit %d", cairn, name, rc);
        }
        qsort(lat, ops, sizeof *lat, cmp_double);
        med = lat[ops / 2];
        p99 = lat[ops * 99 / 100];
        max = lat[ops - 1];
        fails += p99 > 3 * med;
        printf("{\"bench\":\"import\",\"part\":\"cli_%s\",\"ops\":%zu,\"median_ms\":%.2f,"
               "\"p99_ms\":%.2f,\"max_ms\":%.2f,\"p99_over_median\":%.2f,\"pass\":%s}\n",
               name, ops, med * 1e3, p99 * 1e3, max * 1e3, p99 / med,
               p99 <= 3 * med ? "true" : "false");
        fprintf(stderr, "  cli %-6s x%zu  median %6.2f ms  p99 %6.2f ms  max %7.2f ms  "
                "p99/median %.2f <= 3  %s\n", name, ops, med * 1e3, p99 * 1e3, max * 1e3,
                p99 / med, p99 <= 3 * med ? "PASS" : "FAIL");
    }
    free(lat);
    return fails;
}

typedef struct mode {
    const char *name, *flag; /* flag: NULL for the defaults */
    long rss_kib;
    double secs;
    uint64_t bytes;
} mode;

int main(int argc, char **argv)
{
    const char *cairn = "build/cairn", *dir = getenv("BENCH_DIR");
    size_t n = 100000, ops = 2000;
    uint64_t seed = 0xCA1E5EED;
    mode modes[] = {{"default", NULL, 0, 0, 0},
                    {"embed_builtin", "--embed-builtin", 0, 0, 0},
                    {"no_embed", "--no-embed", 0, 0, 0}};
    char input[4096], store[4096];
    struct stat in_st;
    int fails = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cairn") == 0 && i + 1 < argc)
            cairn = argv[++i];
        else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc)
            ops = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else
            bench_die("usage: bench_import [--cairn PATH] [--n N] [--ops N] [--dir DIR] "
                      "[--seed S]");
    }
    if (dir == NULL)
        dir = "build/bench-tmp";
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        bench_die("%s: %s", dir, strerror(errno));
    snprintf(input, sizeof input, "%s/import-%zu.json", dir, n);
    make_input(input, n, seed);
    if (stat(input, &in_st) != 0)
        bench_die("%s: %s", input, strerror(errno));
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
        mode *md = &modes[k];
        const char *init[] = {cairn, "--store", store, "init", "--max-memories", "0", NULL};
        const char *imp[10];
        int a = 0, rc;
        long rss;
        double secs;
        snprintf(store, sizeof store, "%s/import-%s", dir, md->name);
        bench_rm_rf(store);
        if ((rc = bench_run(init, &rss, &secs)) != 0)
            bench_die("%s init: exit %d", cairn, rc);
        imp[a++] = cairn;
        if (md->flag != NULL)
            imp[a++] = md->flag;
        imp[a++] = "--store";
        imp[a++] = store;
        imp[a++] = "import";
        imp[a++] = "--format";
        imp[a++] = "json";
        imp[a++] = input;
        imp[a] = NULL;
        if ((rc = bench_run(imp, &md->rss_kib, &md->secs)) != 0)
            bench_die("%s import (%s): exit %d", cairn, md->name, rc);
        md->bytes = bench_dir_bytes(store);
        printf("{\"bench\":\"import\",\"mode\":\"%s\",\"memories\":%zu,\"input_bytes\":%lld"
               ",\"seconds\":%.3f,\"peak_rss_mib\":%.1f,\"store_bytes\":%" PRIu64 "}\n",
               md->name, n, (long long)in_st.st_size, md->secs, (double)md->rss_kib / 1024.0,
               md->bytes);
        fprintf(stderr, "  %-14s %8.2f s  peak RSS %7.1f MiB  store %7.1f MB\n", md->name,
                md->secs, (double)md->rss_kib / 1024.0, (double)md->bytes / 1e6);
        if (k == 0 && ops > 0) /* the latency of the tool on this store */
            fails += cli_latency(cairn, store, ops, seed ^ 0x5eed);
        bench_rm_rf(store);
    }
    {
        double rss = (double)modes[0].rss_kib / 1024.0;
        double ratio = (double)modes[0].bytes / (double)modes[2].bytes;
        int p1 = rss <= 150.0, p2 = ratio <= 1.5;
        fails += !p1 + !p2;
        printf("{\"bench\":\"import\",\"part\":\"target\",\"name\":\"default_peak_rss_mib\","
               "\"value\":%.1f,\"threshold\":150,\"pass\":%s}\n",
               rss, p1 ? "true" : "false");
        printf("{\"bench\":\"import\",\"part\":\"target\",\"name\":\"default_vs_no_vectors_size\","
               "\"value\":%.3f,\"threshold\":1.5,\"pass\":%s}\n",
               ratio, p2 ? "true" : "false");
        fprintf(stderr, "  default import peak RSS  %6.1f MiB <= 150    %s\n", rss,
                p1 ? "PASS" : "FAIL");
        fprintf(stderr, "  default store vs none    %6.3fx   <= 1.5x   %s\n", ratio,
                p2 ? "PASS" : "FAIL");
    }
    unlink(input);
    return fails ? 1 : 0;
}
