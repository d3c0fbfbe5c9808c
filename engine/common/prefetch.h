/*
 * prefetch.h - ask for a cache line that a later load will need.
 *
 * __builtin_prefetch is a hint GCC may drop: a loop whose only work is
 * prefetching (ask for every table's slot, then probe them) has no effect
 * it must keep, and GCC 12 at -O1 and above removes it whole. The asm
 * below is volatile, so it stays where it is written.
 */
#ifndef CAIRN_PREFETCH_H
#define CAIRN_PREFETCH_H

static inline void cairn__prefetch(const void *p)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
#elif defined(__GNUC__) && defined(__aarch64__)
    __asm__ volatile("prfm pldl1keep, %0" : : "Q"(*(const char *)p));
#else
    __builtin_prefetch(p);
#endif
}

#endif /* CAIRN_PREFETCH_H */
