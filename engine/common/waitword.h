/*
 * waitword.h - a 32-bit counter that threads can sleep on until it changes.
 *
 * Group commit wakes every appender a sync covered. With a condition
 * variable each woken thread must take the store's mutex again just to see
 * that it is done, so sixteen writers queue on the mutex one by one after
 * every fdatasync. A wait word lets them check an atomic and leave without
 * the mutex. On Linux it is a futex; elsewhere a private mutex and
 * condition variable give the same contract.
 */
#ifndef CAIRN_WAITWORD_H
#define CAIRN_WAITWORD_H

#include <stdint.h>
#ifndef __linux__
#include <pthread.h>
#endif

typedef struct cairn__waitword {
    uint32_t v; /* only through __atomic builtins: the futex syscall takes a
                   plain uint32_t *, and a cast from _Atomic would drop it */
#ifndef __linux__
    pthread_mutex_t m;
    pthread_cond_t c;
#endif
} cairn__waitword;

void cairn__waitword_init(cairn__waitword *w);
void cairn__waitword_destroy(cairn__waitword *w);

/* The current value (acquire). */
uint32_t cairn__waitword_load(cairn__waitword *w);

/* Sleep while the value is still `seen`. May return early (a signal, a
 * spurious wakeup): callers re-check their own condition. */
void cairn__waitword_wait(cairn__waitword *w, uint32_t seen);

/* Add one (release) and wake every sleeper. */
void cairn__waitword_bump(cairn__waitword *w);

#endif /* CAIRN_WAITWORD_H */
