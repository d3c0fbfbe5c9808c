/*
 * bench_text.h - the synthetic agent-memory text the memory benches share
 * (bench_procs, bench_compact): a seeded splitmix64 generator, sentences an
 * agent might keep ("Alice prefers dark mode when working on the mobile
 * app.") drawn from fixed word tables, and recall queries of 1-3 words of
 * the same vocabulary. The same seed gives the same bytes.
 *
 * Two vocabularies: BENCH_VOCAB_BASE (10 sentence shapes, bench_procs) and
 * BENCH_VOCAB_WIDE (every base table grown, months, follow-up sentences:
 * 12 shapes, bench_compact). Each keeps the texts and queries its bench has
 * always made for a given seed, so runs stay comparable across versions.
 */
#ifndef CAIRN_BENCH_TEXT_H
#define CAIRN_BENCH_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* The generator's state: set it to a seed, then draw. One stream per
 * process (the benches draw from one thread). */
extern uint64_t bench_rng_state;

/* splitmix64's finaliser: a well-mixed 64-bit value from z. */
static inline uint64_t bench_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The next 64 bits of bench_rng_state's stream (splitmix64). */
static inline uint64_t bench_rnd64(void)
{
    return bench_mix64(bench_rng_state += 0x9E3779B97F4A7C15ull);
}

/* A draw in 0..n-1 (n > 0). */
static inline unsigned bench_rnd(unsigned n) { return (unsigned)(bench_rnd64() % n); }

typedef enum bench_vocab {
    BENCH_VOCAB_BASE, /* bench_procs */
    BENCH_VOCAB_WIDE  /* bench_compact */
} bench_vocab;

/* One sentence of vocabulary v into out (cap bytes, truncated to fit) from
 * bench_rng_state's stream; returns its length (about 30-120 bytes). */
size_t bench_sentence(char *out, size_t cap, bench_vocab v);

#define BENCH_QUERY_MAX 96
typedef char bench_query[BENCH_QUERY_MAX];

/* n queries of 1-3 words of vocabulary v, from `seed` (its own stream:
 * seed ^ 0x51ED5EED). The caller frees the array. Dies on OOM. */
bench_query *bench_queries_make(size_t n, uint64_t seed, bench_vocab v);

#endif /* CAIRN_BENCH_TEXT_H */
