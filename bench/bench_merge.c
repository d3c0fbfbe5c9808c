/*
 * bench_merge.c - cairn_mem_merge over 100,000 memories with 384-dimension
 * vectors (issue 4: "merge over 100,000 memories: under 10 s"), public API
 * only.
 *
 * Data: n random unit vectors (splitmix64, fixed seed; random vectors in
 * 384 dimensions are nearly orthogonal, so none is a near-duplicate by
 * chance) plus `planted` twins, each a copy of a random base vector moved
 * by a little noise (cosine about 0.95). A perfect merge finds exactly the
 * planted pairs. The vectors go in with cairn_mem_store_opts.vector under
 * an identity-only embedder; the index file is written before the merge
 * (the vectors are then read in place, as after any reopen).
 *
 * usage: bench_merge [--n N] [--planted P] [--dir DIR]
 * Output: one JSON line on stdout, a summary on stderr.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define DIM 384

static uint64_t rng_state = 0x6d657267650001ull;

static double uniform(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

static void random_unit(float *v)
{
    double ss = 0;
    for (int d = 0; d < DIM; d++) {
        v[d] = (float)(uniform() - 0.5);
        ss += (double)v[d] * v[d];
    }
    for (int d = 0; d < DIM; d++)
        v[d] = (float)(v[d] / sqrt(ss));
}

int main(int argc, char **argv)
{
    size_t n = 100000, planted = 1000;
    const char *dir = "build/bench-tmp";
    char path[512], err[CAIRN_ERRMSG_MAX];
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_embedder ident = {"bench-random-384", DIM, NULL, NULL, NULL, 0};
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_merge_opts mo = CAIRN_MERGE_OPTS_INIT;
    cairn_mem_options mopt = CAIRN_MEM_OPTIONS_INIT;
    cairn_merge_pair *pairs = NULL;
    size_t npairs = 0, right = 0;
    uint64_t merged = 0, kept = 0;
    float *base, v[DIM];
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    double t0, t_store, t_ckpt, t_dry, t_merge;

    bench_name = "bench_merge";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--planted") == 0 && i + 1 < argc)
            planted = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else
            bench_die("usage: bench_merge [--n N] [--planted P] [--dir DIR]");
    }
    if (planted > n)
        planted = n;
    snprintf(path, sizeof path, "%s/merge-store", dir);
    bench_rm_rf(path);
    o.create = 1;
    o.durability = CAIRN_DURABILITY_NONE;
    bench_check(NULL, cairn_open(&db, path, &o, err, sizeof err), err);
    mopt.max_memories = 10 * (n + planted); /* no pruning: the default keeps 10,000 */
    bench_check(db, cairn_mem_open(db, &mopt, &mem), "cairn_mem_open");
    bench_check(db, cairn_mem_set_embedder(mem, &ident), "cairn_mem_set_embedder");
    base = bench_malloc(planted * DIM * sizeof *base);
    t0 = bench_now();
    for (size_t i = 0; i < n; i++) {
        char text[64];
        random_unit(v);
        if (i < planted)
            memcpy(base + i * DIM, v, sizeof v);
        snprintf(text, sizeof text, "memory %zu", i);
        so.vector = v;
        so.importance = 0.5;
        bench_check(db, cairn_mem_store(mem, text, &so, NULL, NULL), "store");
    }
    for (size_t i = 0; i < planted; i++) { /* each twin: base + noise of norm ~0.3 */
        char text[64];
        for (int d = 0; d < DIM; d++)
            v[d] = base[i * DIM + d] + (float)((uniform() - 0.5) * 0.055);
        snprintf(text, sizeof text, "memory %zu, again", i);
        so.vector = v;
        so.importance = 0.4;
        bench_check(db, cairn_mem_store(mem, text, &so, NULL, NULL), "store twin");
    }
    t_store = bench_now() - t0;
    t0 = bench_now();
    bench_check(db, cairn_mem_checkpoint(mem), "checkpoint");
    t_ckpt = bench_now() - t0;
    mo.dry_run = 1;
    t0 = bench_now();
    bench_check(db, cairn_mem_merge(mem, &mo, &pairs, &npairs, &merged, &kept), "merge (dry run)");
    t_dry = bench_now() - t0;
    for (size_t i = 0; i < npairs; i++)
        right += pairs[i].merged_importance == 0.4 && pairs[i].kept_importance == 0.5;
    free(pairs);
    mo.dry_run = 0;
    t0 = bench_now();
    bench_check(db, cairn_mem_merge(mem, &mo, NULL, NULL, &merged, &kept), "merge");
    t_merge = bench_now() - t0;
    printf("{\"bench\":\"merge\",\"memories\":%zu,\"dim\":%d,\"planted\":%zu,\"found\":%zu,"
           "\"found_planted\":%zu,\"merged\":%llu,\"store_s\":%.3f,\"checkpoint_s\":%.3f,"
           "\"merge_dry_run_s\":%.3f,\"merge_s\":%.3f}\n",
           n + planted, DIM, planted, npairs, right, (unsigned long long)merged, t_store, t_ckpt,
           t_dry, t_merge);
    fprintf(stderr,
            "merge over %zu memories (%d dims), %zu planted near-duplicate pairs:\n"
            "  found %zu pairs, %zu of them planted (recall %.4f)\n"
            "  dry run %.2f s, merge %.2f s (target < 10 s)   [store %.1f s, checkpoint %.1f s]\n",
            n + planted, DIM, planted, npairs, right, planted ? (double)right / planted : 1.0, t_dry,
            t_merge, t_store, t_ckpt);
    cairn_mem_close(mem);
    bench_check(NULL, cairn_close(db), "close");
    bench_rm_rf(path);
    free(base);
    return 0;
}
