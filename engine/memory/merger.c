/*
 * merger.c - see merger.h.
 */
#include "merger.h"

#include <pthread.h>
#include <stdlib.h>

struct cairn__merger {
    cairn_mem *m;
    pthread_mutex_t mu;
    pthread_cond_t work;     /* the thread: kicked, or stop */
    int kicked;
    int stop;                /* read by the write under way without mu: atomic */
    pthread_t thread;
};

static void *merger_main(void *arg)
{
    cairn__merger *g = arg;

    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->kicked && !__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE))
            pthread_cond_wait(&g->work, &g->mu);
        if (__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE))
            break;
        g->kicked = 0;
        pthread_mutex_unlock(&g->mu);
        /* While merges are due: each makes the chain shorter. A failure
         * leaves the files as they were; the next kick tries again. */
        for (int n = 0; n < 16 && !__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE); n++)
            if (cairn__mem_merge_step(g->m, &g->stop) != 1)
                break;
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
    pthread_cond_init(&g->work, NULL);
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
