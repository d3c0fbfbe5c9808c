/*
 * bgwork.h - a background worker: one thread of a handle's own that runs
 * its owner's step when asked, gives up when told to stop, and releases
 * what the owner hands over on its own time.
 *
 * This is the plumbing the layers' background work shares; what a step
 * does is the layer's:
 *   - the memory handle's merger (engine/memory/merger.c): a long-lived
 *     worker kicked after each flush, looking every 30 s without a kick;
 *     its step puts a deferred flush's file in place, merges index files
 *     and compacts the log; it unmaps and frees what a flush let go of;
 *   - the reflexion handle's whole-file merge (engine/reflexion/
 *     rcheckpoint.c): a worker started at open when the graph chain is
 *     due, whose one step, half a second later, merges the chain.
 *
 * The thread's life:
 *   - at start it waits plan.delay_ms (a stop meanwhile ends it without a
 *     step), then runs the step once, kicked or not;
 *   - then it sleeps until a kick, an item handed over, a stop, or, with
 *     plan.look_s, that many seconds without any (a look); on waking it
 *     releases the items handed over, then runs the step again (kicked: 1
 *     if a kick came since the last step), unless asked to stop;
 *   - with plan.once it ends after its first step;
 *   - a failure it meets is deferred (store.h, cairn__deferred_begin):
 *     nobody waits on this thread to hear of it.
 *
 * The step runs without the worker's lock; it reads *stop with
 * __atomic_load_n(stop, __ATOMIC_ACQUIRE) at its own points and gives up
 * there (a few ms). Nothing here knows what a step does, so nothing here
 * holds one back: a layer that needs part of its step held off (memory's
 * compaction while the user compacts) keeps that on top (merger.c).
 */
#ifndef CAIRN_BGWORK_H
#define CAIRN_BGWORK_H

#include <stddef.h>

#include "cairn.h"

typedef struct cairn__bgwork cairn__bgwork;

/* The owner's step, on the worker's thread: w the worker (for
 * cairn__bgwork_release_handed), user the plan's, kicked 1 when a kick
 * came since the last step or the start (0: a first step nobody asked
 * for, a look, or a wake for items handed over), stop the worker's stop
 * word (atomic, see above). */
typedef void (*cairn__bgwork_step_fn)(cairn__bgwork *w, void *user, int kicked, const int *stop);

/* What a handed-over item is released with: (p, len) as handed. */
typedef void (*cairn__bgwork_release_fn)(void *p, size_t len);

typedef struct cairn__bgwork_plan {
    cairn__bgwork_step_fn step;
    void *user;              /* the step's; outlives the worker */
    unsigned delay_ms;       /* before the first step (0: at once) */
    unsigned look_s;         /* a step this often without a kick (0: only
                                when woken) */
    int once;                /* the thread ends after its first step */
} cairn__bgwork_plan;

/* Start a worker on *plan (copied). CAIRN_ENOMEM, or CAIRN_EIO when no
 * thread starts; *out is NULL then. */
int cairn__bgwork_new(cairn__bgwork **out, const cairn__bgwork_plan *plan);

/* Ask for a step (coalesced: kicks before the step starts make one). */
void cairn__bgwork_kick(cairn__bgwork *w);

/* Hand the worker (p, len) to release with fn on its own time, in the
 * order handed: it wakes for it. 0: the worker owns it now (if it is not
 * released before cairn__bgwork_free, the free releases it); -1: it
 * cannot take it (asked to stop, ended, or no memory), the caller still
 * owns it and releases it itself. */
int cairn__bgwork_hand_over(cairn__bgwork *w, cairn__bgwork_release_fn fn, void *p, size_t len);

/* From a step, on the worker's thread only: release what was handed over
 * so far (a long step lets go of it between its parts). */
void cairn__bgwork_release_handed(cairn__bgwork *w);

/* Ask the worker to stop without waiting: *stop is set, the step under
 * way gives up at its next look, no step starts after it, and hand-overs
 * fail from now on. Accepts NULL. */
void cairn__bgwork_ask_stop(cairn__bgwork *w);

/* Ask it to stop, wait for its thread (the step under way gives up),
 * release what is still handed over, and free. Accepts NULL. Call
 * without any lock the step may wait for. */
void cairn__bgwork_free(cairn__bgwork *w);

#endif /* CAIRN_BGWORK_H */
