/*
 * merger.c - see merger.h.
 */
#include "merger.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "ramindex.h"
#include "store.h"

struct cairn__merger {
    cairn_mem *m;
    pthread_mutex_t mu;
    pthread_cond_t work;     /* the thread: kicked, or stop */
    int kicked;
    int stop;                /* read by the write under way without mu: atomic */
    /* The compaction's own stop: set by stop, and while the handle's user
     * compacts or purges (holds > 0), who waits for it to end (idle). */
    int cstop;
    int holds;
    int compacting;
    pthread_cond_t idle;
    cairn__compact_pace pace;
    pthread_t thread;
    /* Mappings and text indexes the handle let go of (cairn__merger_unmap,
     * cairn__merger_free_index), unmapped and freed here. */
    struct unmap_item {
        void *map;
        size_t len;
        cairn__ramidx *idx;
    } *unmaps;
    size_t n_unmaps, cap_unmaps;
};

/* Without a kick, the thread looks whether a compaction is due this often
 * (the events of a log another process writes). */
#define IDLE_LOOK_S 30

static void let_go(struct unmap_item it)
{
    if (it.idx != NULL)
        cairn__ramidx_free(it.idx);
    else
        munmap(it.map, it.len);
}

/* Unmap and free what the handle handed over (g->mu held; released
 * meanwhile), in the order it was handed. */
static void unmap_handed(cairn__merger *g)
{
    size_t i = 0;
    while (i < g->n_unmaps) {
        struct unmap_item it = g->unmaps[i++];
        pthread_mutex_unlock(&g->mu);
        let_go(it);
        pthread_mutex_lock(&g->mu);
        if (i == g->n_unmaps)
            g->n_unmaps = i = 0;
    }
    g->n_unmaps = 0;
}

static void *merger_main(void *arg)
{
    cairn__merger *g = arg;
    int first = 1; /* a look at once: a compaction may be due at open */

    /* A failure it meets is the handle's user's to hear of (store.h). */
    (void)cairn__deferred_begin();
    cairn__compact_pace_init(g->m, &g->pace);
    pthread_mutex_lock(&g->mu);
    for (;;) {
        int kicked;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += IDLE_LOOK_S;
        while (!first && !g->kicked && g->n_unmaps == 0 && !__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE))
            if (pthread_cond_timedwait(&g->work, &g->mu, &until) != 0)
                break; /* a look without a kick */
        unmap_handed(g);
        if (__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE))
            break;
        kicked = g->kicked;
        g->kicked = 0;
        first = 0;
        pthread_mutex_unlock(&g->mu);
        /* While merges are due: each makes the chain shorter. A failure
         * leaves the files as they were; the next kick tries again. */
        /* A flush's file first: the handle's next flush or close would
         * wait for its sync. */
        if (kicked)
            cairn__mem_pend_step(g->m, &g->stop);
        for (int n = 0; kicked && n < 16 && !__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE); n++) {
            if (cairn__mem_merge_step(g->m, &g->stop) != 1)
                break;
            pthread_mutex_lock(&g->mu);
            unmap_handed(g);
            pthread_mutex_unlock(&g->mu);
        }
        /* Then the log, if the retention policy has enough to drop (a
         * failure changes nothing; the pace waits for more work). */
        pthread_mutex_lock(&g->mu);
        if (g->holds == 0 && !__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE)) {
            g->compacting = 1;
            pthread_mutex_unlock(&g->mu);
            (void)cairn__mem_compact_step(g->m, &g->pace, &g->cstop);
            pthread_mutex_lock(&g->mu);
            g->compacting = 0;
            pthread_cond_broadcast(&g->idle);
        }
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
    pthread_cond_init(&g->idle, NULL);
    if (pthread_create(&g->thread, NULL, merger_main, g) != 0) {
        pthread_cond_destroy(&g->idle);
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

static int hand_over(cairn__merger *g, struct unmap_item it)
{
    int rc = -1;
    pthread_mutex_lock(&g->mu);
    if (!__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE)) {
        if (g->n_unmaps == g->cap_unmaps) {
            size_t cap = g->cap_unmaps ? 2 * g->cap_unmaps : 16;
            struct unmap_item *p = realloc(g->unmaps, cap * sizeof *p);
            if (p != NULL) {
                g->unmaps = p;
                g->cap_unmaps = cap;
            }
        }
        if (g->n_unmaps < g->cap_unmaps) {
            g->unmaps[g->n_unmaps++] = it;
            pthread_cond_signal(&g->work);
            rc = 0;
        }
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

int cairn__merger_unmap(cairn__merger *g, void *map, size_t len)
{
    return hand_over(g, (struct unmap_item){map, len, NULL});
}

int cairn__merger_free_index(cairn__merger *g, cairn__ramidx *x)
{
    return hand_over(g, (struct unmap_item){NULL, 0, x});
}

void cairn__merger_hold(cairn__merger *g)
{
    if (g == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    g->holds++;
    __atomic_store_n(&g->cstop, 1, __ATOMIC_RELEASE);
    while (g->compacting)
        pthread_cond_wait(&g->idle, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

void cairn__merger_release(cairn__merger *g)
{
    if (g == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    if (--g->holds == 0 && !__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE))
        __atomic_store_n(&g->cstop, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g->mu);
}

void cairn__merger_ask_stop(cairn__merger *g)
{
    if (g == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    __atomic_store_n(&g->stop, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&g->cstop, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&g->work);
    pthread_mutex_unlock(&g->mu);
}

void cairn__merger_free(cairn__merger *g)
{
    if (g == NULL)
        return;
    cairn__merger_ask_stop(g);
    pthread_join(g->thread, NULL);
    for (size_t i = 0; i < g->n_unmaps; i++) /* handed over after the thread's last look */
        let_go(g->unmaps[i]);
    free(g->unmaps);
    pthread_cond_destroy(&g->idle);
    pthread_cond_destroy(&g->work);
    pthread_mutex_destroy(&g->mu);
    free(g);
}
