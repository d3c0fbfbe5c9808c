/*
 * merger.c - see merger.h.
 */
#include "merger.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct cairn__merger {
    cairn_mem *m;
    pthread_mutex_t mu;
    pthread_cond_t work;     /* the thread: kicked, or stop */
    int kicked;
    int stop;                /* read by the write under way without mu: atomic */
    cairn__compact_pace pace;
    pthread_t thread;
};

/* Without a kick, the thread looks whether a compaction is due this often
 * (the events of a log another process writes). */
#define IDLE_LOOK_S 30

static void *merger_main(void *arg)
{
    cairn__merger *g = arg;

    int first = 1; /* a look at once: a compaction may be due at open */

    cairn__compact_pace_init(g->m, &g->pace);
    pthread_mutex_lock(&g->mu);
    for (;;) {
        int kicked;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += IDLE_LOOK_S;
        while (!first && !g->kicked && !__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE))
            if (pthread_cond_timedwait(&g->work, &g->mu, &until) != 0)
                break; /* a look without a kick */
        if (__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE))
            break;
        kicked = g->kicked;
        g->kicked = 0;
        first = 0;
        pthread_mutex_unlock(&g->mu);
        /* While merges are due: each makes the chain shorter. A failure
         * leaves the files as they were; the next kick tries again. */
        for (int n = 0; kicked && n < 16 && !__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE); n++)
            if (cairn__mem_merge_step(g->m, &g->stop) != 1)
                break;
        /* Then the log, if the retention policy has enough to drop (a
         * failure changes nothing; the pace waits for more work). */
        if (!__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE))
            (void)cairn__mem_compact_step(g->m, &g->pace, &g->stop);
        pthread_mutex_lock(&g->mu);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

int cairn__merger_new(cairn__merger **out, cairn_mem *m)
{
    cairn__merger *g = calloc(1, sizeof *g);
    *out = NULL;
    if (g == NULL)
        return CAIRN_ENOMEM;
    g->m = m;
    pthread_mutex_init(&g->mu, NULL);
    {
        pthread_condattr_t ca; /* timed waits on the monotonic clock */
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&g->work, &ca);
        pthread_condattr_destroy(&ca);
    }
    if (pthread_create(&g->thread, NULL, merger_main, g) != 0) {
        pthread_cond_destroy(&g->work);
        pthread_mutex_destroy(&g->mu);
        free(g);
        return CAIRN_EIO;
    }
    *out = g;
    return CAIRN_OK;
}

void cairn__merger_kick(cairn__merger *g)
{
    pthread_mutex_lock(&g->mu);
    g->kicked = 1;
    pthread_cond_signal(&g->work);
    pthread_mutex_unlock(&g->mu);
}

void cairn__merger_free(cairn__merger *g)
{
    if (g == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    __atomic_store_n(&g->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&g->work);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    pthread_cond_destroy(&g->work);
    pthread_mutex_destroy(&g->mu);
    free(g);
}
