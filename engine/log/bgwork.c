/*
 * bgwork.c - a background worker's thread (bgwork.h). No file format: it
 * only runs its owner's steps.
 *
 * Invariants, all under mu: a step runs only on the thread, never two at
 * once; stop, once set, stays set, and the thread starts no step once it
 * has seen it (a step it started just before sees it at its first look);
 * an item is either in items (the worker's) or was refused (the
 * caller's), never both, and items are released in the order handed,
 * each once: by the thread (which takes one out under mu and releases it
 * without mu), or by the free after the thread has ended. Timed waits are on the monotonic
 * clock, so a change of the wall clock neither hurries nor holds a look.
 */
#include "bgwork.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "alloc.h"
#include "store.h"

typedef struct bg_item {
    cairn__bgwork_release_fn fn;
    void *p;
    size_t len;
} bg_item;

struct cairn__bgwork {
    cairn__bgwork_plan plan;
    pthread_mutex_t mu;
    pthread_cond_t wake;     /* the thread: kicked, an item, or stop */
    int kicked;
    int stop;                /* read by the step under way without mu: atomic */
    int ended;               /* the thread has left its loop (plan.once) */
    bg_item *items;          /* handed over, not released yet */
    size_t n_items, cap_items;
    pthread_t thread;
};

static int stopping(cairn__bgwork *w)
{
    return __atomic_load_n(&w->stop, __ATOMIC_ACQUIRE);
}

/* now + ms on the monotonic clock */
static void deadline(struct timespec *t, uint64_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, t);
    t->tv_sec += (time_t)(ms / 1000);
    t->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000L;
    }
}

/* Release what was handed over (mu held; released meanwhile), in the
 * order it was handed, items handed meanwhile too. Returns with none
 * left. */
static void release_locked(cairn__bgwork *w)
{
    size_t i = 0;
    while (i < w->n_items) {
        bg_item it = w->items[i++];
        pthread_mutex_unlock(&w->mu);
        it.fn(it.p, it.len);
        pthread_mutex_lock(&w->mu);
        if (i == w->n_items)
            w->n_items = i = 0;
    }
    w->n_items = 0;
}

static void *bg_main(void *arg)
{
    cairn__bgwork *w = arg;
    int first = 1; /* a step at once (after the delay), kicked or not */

    (void)cairn__deferred_begin();
    pthread_mutex_lock(&w->mu);
    if (w->plan.delay_ms > 0) {
        struct timespec until;
        deadline(&until, w->plan.delay_ms);
        while (!stopping(w) && pthread_cond_timedwait(&w->wake, &w->mu, &until) == 0)
            ; /* woken early: a kick or an item waits for the delay too */
    }
    for (;;) {
        int kicked;
        struct timespec until;
        deadline(&until, (uint64_t)w->plan.look_s * 1000);
        while (!first && !w->kicked && w->n_items == 0 && !stopping(w)) {
            if (w->plan.look_s == 0)
                pthread_cond_wait(&w->wake, &w->mu);
            else if (pthread_cond_timedwait(&w->wake, &w->mu, &until) != 0)
                break; /* a look without a kick */
        }
        release_locked(w);
        if (stopping(w))
            break;
        kicked = w->kicked;
        w->kicked = 0;
        first = 0;
        pthread_mutex_unlock(&w->mu);
        w->plan.step(w, w->plan.user, kicked, &w->stop);
        pthread_mutex_lock(&w->mu);
        if (w->plan.once) {
            release_locked(w); /* what came during the step */
            break;
        }
    }
    w->ended = 1; /* with none left: a hand-over from now on is refused */
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int cairn__bgwork_new(cairn__bgwork **out, const cairn__bgwork_plan *plan)
{
    cairn__bgwork *w = cairn__calloc(NULL, 1, sizeof *w);
    pthread_condattr_t ca;

    *out = NULL;
    if (w == NULL)
        return CAIRN_ENOMEM;
    w->plan = *plan;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_init(&ca); /* timed waits on the monotonic clock */
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&w->thread, NULL, bg_main, w) != 0) {
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->mu);
        cairn__free(NULL, w);
        return CAIRN_EIO;
    }
    *out = w;
    return CAIRN_OK;
}

void cairn__bgwork_kick(cairn__bgwork *w)
{
    pthread_mutex_lock(&w->mu);
    w->kicked = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
}

int cairn__bgwork_hand_over(cairn__bgwork *w, cairn__bgwork_release_fn fn, void *p, size_t len)
{
    int rc = -1;
    pthread_mutex_lock(&w->mu);
    if (!stopping(w) && !w->ended &&
        cairn__grow(NULL, (void **)&w->items, &w->cap_items, w->n_items + 1, sizeof *w->items) ==
            CAIRN_OK) {
        w->items[w->n_items++] = (bg_item){fn, p, len};
        pthread_cond_signal(&w->wake);
        rc = 0;
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void cairn__bgwork_release_handed(cairn__bgwork *w)
{
    pthread_mutex_lock(&w->mu);
    release_locked(w);
    pthread_mutex_unlock(&w->mu);
}

void cairn__bgwork_ask_stop(cairn__bgwork *w)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->mu);
    __atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
}

void cairn__bgwork_free(cairn__bgwork *w)
{
    if (w == NULL)
        return;
    cairn__bgwork_ask_stop(w);
    pthread_join(w->thread, NULL);
    /* Handed over after the thread's last look. None, as the thread
     * empties the list in the same hold of mu in which it ends, after
     * which hand-overs are refused; kept so that no item is ever lost. */
    for (size_t i = 0; i < w->n_items; i++)
        w->items[i].fn(w->items[i].p, w->items[i].len);
    cairn__free(NULL, w->items);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->mu);
    cairn__free(NULL, w);
}
