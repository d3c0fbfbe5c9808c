/*
 * merger.c - see merger.h. The thread, its kicks, its 30-second looks,
 * its stop and the hand-over of mappings and text indexes are the shared
 * background worker's (engine/log/bgwork.h); what is the memory layer's
 * is here: the step (a deferred flush's file, merges by the policy, the
 * compaction), the release of what a flush let go of, and the hold of the
 * compaction by the handle's user.
 *
 * The hold is here, not in the worker: it holds off one part of this
 * step (the compaction) with a stop of that part's own, while the rest of
 * the step (merges) goes on; the worker knows steps, not their parts, and
 * the reflexion's merge has nothing of the kind. Its own mutex orders it:
 * cstop is set by a hold and by the stop, and cleared by the last
 * release only when not stopping.
 */
#include "merger.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "bgwork.h"
#include "ramindex.h"

struct cairn__merger {
    cairn_mem *m;
    cairn__bgwork *w;        /* the thread (bgwork.h); its step: merger_step */
    /* The compaction's own stop: set by the stop, and while the handle's
     * user compacts or purges (holds > 0), who waits for it to end
     * (idle). All under mu; cstop is read by the compaction without it. */
    pthread_mutex_t mu;
    pthread_cond_t idle;
    int cstop;               /* atomic */
    int holds;
    int compacting;
    int stopping;            /* cairn__merger_ask_stop came */
    /* The thread's own (merger_step). */
    int paced;               /* pace set, at the first step */
    cairn__compact_pace pace;
};

/* Without a kick, the thread looks whether a compaction is due this often
 * (the events of a log another process writes). */
#define IDLE_LOOK_S 30

static void merger_step(cairn__bgwork *w, void *user, int kicked, const int *stop)
{
    cairn__merger *g = user;

    if (!g->paced) {
        cairn__compact_pace_init(g->m, &g->pace);
        g->paced = 1;
    }
    /* While merges are due: each makes the chain shorter. A failure
     * leaves the files as they were; the next kick tries again. */
    /* A flush's file first: the handle's next flush or close would
     * wait for its sync. */
    if (kicked)
        cairn__mem_pend_step(g->m, stop);
    for (int n = 0; kicked && n < 16 && !__atomic_load_n(stop, __ATOMIC_ACQUIRE); n++) {
        if (cairn__mem_merge_step(g->m, stop) != 1)
            break;
        cairn__bgwork_release_handed(w);
    }
    /* Then the log, if the retention policy has enough to drop (a
     * failure changes nothing; the pace waits for more work). */
    pthread_mutex_lock(&g->mu);
    if (g->holds == 0 && !g->stopping) {
        g->compacting = 1;
        pthread_mutex_unlock(&g->mu);
        (void)cairn__mem_compact_step(g->m, &g->pace, &g->cstop);
        pthread_mutex_lock(&g->mu);
        g->compacting = 0;
        pthread_cond_broadcast(&g->idle);
    }
    pthread_mutex_unlock(&g->mu);
}

int cairn__merger_new(cairn__merger **out, cairn_mem *m)
{
    cairn__merger *g = calloc(1, sizeof *g);
    cairn__bgwork_plan plan = {0};
    int rc;

    *out = NULL;
    if (g == NULL)
        return CAIRN_ENOMEM;
    g->m = m;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->idle, NULL);
    /* A first step at once: a compaction may be due at open. */
    plan.step = merger_step;
    plan.user = g;
    plan.look_s = IDLE_LOOK_S;
    if ((rc = cairn__bgwork_new(&g->w, &plan)) != CAIRN_OK) {
        pthread_cond_destroy(&g->idle);
        pthread_mutex_destroy(&g->mu);
        free(g);
        return rc;
    }
    *out = g;
    return CAIRN_OK;
}

void cairn__merger_kick(cairn__merger *g)
{
    cairn__bgwork_kick(g->w);
}

static void unmap_item(void *map, size_t len)
{
    munmap(map, len);
}

static void free_index_item(void *x, size_t len)
{
    (void)len;
    cairn__ramidx_free(x);
}

int cairn__merger_unmap(cairn__merger *g, void *map, size_t len)
{
    return cairn__bgwork_hand_over(g->w, unmap_item, map, len);
}

int cairn__merger_free_index(cairn__merger *g, cairn__ramidx *x)
{
    return cairn__bgwork_hand_over(g->w, free_index_item, x, 0);
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
    if (--g->holds == 0 && !g->stopping)
        __atomic_store_n(&g->cstop, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g->mu);
}

void cairn__merger_ask_stop(cairn__merger *g)
{
    if (g == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    g->stopping = 1;
    __atomic_store_n(&g->cstop, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g->mu);
    cairn__bgwork_ask_stop(g->w);
}

void cairn__merger_free(cairn__merger *g)
{
    if (g == NULL)
        return;
    cairn__merger_ask_stop(g);
    cairn__bgwork_free(g->w); /* joins; releases what is still handed over */
    pthread_cond_destroy(&g->idle);
    pthread_mutex_destroy(&g->mu);
    free(g);
}
