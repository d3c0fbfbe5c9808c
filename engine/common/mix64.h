/*
 * mix64.h - splitmix64's finalizer: a bijection of 64-bit values whose
 * every output bit depends on every input bit. For hash slots of keys
 * that come in runs (seqs), sums that must tell values apart, and, fed
 * a counter, a small random generator.
 */
#ifndef CAIRN_MIX64_H
#define CAIRN_MIX64_H

#include <stdint.h>

static inline uint64_t cairn__mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#endif /* CAIRN_MIX64_H */
