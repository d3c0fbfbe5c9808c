/*
 * waitword.c - see waitword.h. Linux: FUTEX_WAIT_PRIVATE / FUTEX_WAKE_PRIVATE
 * on the word itself (the kernel compares it to `seen` atomically, so a bump
 * between the caller's check and the sleep is never missed). Elsewhere the
 * same contract from a mutex and a condition variable.
 */
#include "waitword.h"

#include <limits.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

void cairn__waitword_init(cairn__waitword *w)
{
    w->v = 0;
#ifndef __linux__
    pthread_mutex_init(&w->m, NULL);
    pthread_cond_init(&w->c, NULL);
#endif
}

void cairn__waitword_destroy(cairn__waitword *w)
{
#ifndef __linux__
    pthread_mutex_destroy(&w->m);
    pthread_cond_destroy(&w->c);
#else
    (void)w;
#endif
}

uint32_t cairn__waitword_load(cairn__waitword *w)
{
    return __atomic_load_n(&w->v, __ATOMIC_ACQUIRE);
}

void cairn__waitword_wait(cairn__waitword *w, uint32_t seen)
{
#ifdef __linux__
    if (__atomic_load_n(&w->v, __ATOMIC_ACQUIRE) == seen)
        (void)syscall(SYS_futex, &w->v, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
#else
    pthread_mutex_lock(&w->m);
    while (__atomic_load_n(&w->v, __ATOMIC_ACQUIRE) == seen)
        pthread_cond_wait(&w->c, &w->m);
    pthread_mutex_unlock(&w->m);
#endif
}

void cairn__waitword_bump(cairn__waitword *w)
{
#ifdef __linux__
    __atomic_fetch_add(&w->v, 1, __ATOMIC_RELEASE);
    (void)syscall(SYS_futex, &w->v, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#else
    pthread_mutex_lock(&w->m);
    __atomic_fetch_add(&w->v, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&w->c);
    pthread_mutex_unlock(&w->m);
#endif
}
