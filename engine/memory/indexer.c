/*
 * indexer.c - see indexer.h.
 *
 * One queue under one mutex. The thread takes everything queued at once
 * (swapping the queue with its own empty one), adds it without the mutex,
 * and says when it is idle again; so a burst of stores costs one lock
 * round trip per store and one wakeup per batch, not per store.
 */
#include "indexer.h"

#include <pthread.h>
#include <stdlib.h>

#include "cairn.h"

/* Queued texts before cairn__indexer_add waits, unless the caller bounds
 * it closer: bounds the memory a fast writer can pile up ahead of the
 * thread (32 bytes an item). A commit of many memories (an import) queues
 * this many: it then frees its parsed input while the thread indexes,
 * rather than holding both (with 4,096 here, the peak RSS of a
 * 100,000-memory CLI import was 178 MiB against 147 MiB; bench_import). */
#define IX_MAX_QUEUED 65536

typedef struct ix_item {
    cairn__ramidx *idx;
    uint64_t seq;
    const char *text;
    size_t len;
    char *owned;          /* freed once added (NULL: the caller's) */
} ix_item;

struct cairn__indexer {
    pthread_mutex_t mu;
    pthread_cond_t work;  /* the thread: something is queued, or stop */
    pthread_cond_t idle;  /* waiters: the queue emptied, or there is room */
    ix_item *q;           /* queued, in order */
    size_t n, cap;
    ix_item *taken;       /* the thread's batch (its own array) */
    size_t taken_cap;
    int busy;             /* the thread is adding a batch */
    int sleeping;         /* the thread waits on `work` */
    int stop;
    int failed;           /* first failed add since the last wait */
    pthread_t thread;
};

static void *indexer_main(void *arg)
{
    cairn__indexer *ix = arg;

    pthread_mutex_lock(&ix->mu);
    for (;;) {
        ix_item *batch;
        size_t n, cap;
        while (ix->n == 0 && !ix->stop) {
            ix->sleeping = 1;
            pthread_cond_wait(&ix->work, &ix->mu);
            ix->sleeping = 0;
        }
        if (ix->n == 0) /* stop, and nothing left */
            break;
        /* Take the whole queue: the writer goes on into the empty one. */
        batch = ix->q;
        n = ix->n;
        cap = ix->cap;
        ix->q = ix->taken;
        ix->cap = ix->taken_cap;
        ix->n = 0;
        ix->taken = batch;
        ix->taken_cap = cap;
        ix->busy = 1;
        pthread_cond_broadcast(&ix->idle); /* room in the queue */
        pthread_mutex_unlock(&ix->mu);
        for (size_t i = 0; i < n; i++) {
            int rc = cairn__ramidx_add(batch[i].idx, batch[i].seq, (const uint8_t *)batch[i].text,
                                       batch[i].len);
            free(batch[i].owned);
            if (rc != CAIRN_OK) {
                pthread_mutex_lock(&ix->mu);
                if (ix->failed == CAIRN_OK)
                    ix->failed = rc;
                pthread_mutex_unlock(&ix->mu);
            }
        }
        pthread_mutex_lock(&ix->mu);
        ix->busy = 0;
        pthread_cond_broadcast(&ix->idle);
    }
    pthread_mutex_unlock(&ix->mu);
    return NULL;
}

int cairn__indexer_new(cairn__indexer **out)
{
    cairn__indexer *ix = calloc(1, sizeof *ix);

    *out = NULL;
    if (ix == NULL)
        return CAIRN_ENOMEM;
    pthread_mutex_init(&ix->mu, NULL);
    pthread_cond_init(&ix->work, NULL);
    pthread_cond_init(&ix->idle, NULL);
    if (pthread_create(&ix->thread, NULL, indexer_main, ix) != 0) {
        pthread_cond_destroy(&ix->idle);
        pthread_cond_destroy(&ix->work);
        pthread_mutex_destroy(&ix->mu);
        free(ix);
        return CAIRN_EIO;
    }
    *out = ix;
    return CAIRN_OK;
}

void cairn__indexer_free(cairn__indexer *ix)
{
    if (ix == NULL)
        return;
    pthread_mutex_lock(&ix->mu);
    ix->stop = 1;
    pthread_cond_signal(&ix->work);
    pthread_mutex_unlock(&ix->mu);
    pthread_join(ix->thread, NULL); /* it empties the queue first */
    pthread_cond_destroy(&ix->idle);
    pthread_cond_destroy(&ix->work);
    pthread_mutex_destroy(&ix->mu);
    free(ix->q);
    free(ix->taken);
    free(ix);
}

int cairn__indexer_add(cairn__indexer *ix, cairn__ramidx *idx, uint64_t seq, const char *text,
                       size_t len, char *owned, size_t bound)
{
    if (bound == 0 || bound > IX_MAX_QUEUED)
        bound = IX_MAX_QUEUED;
    pthread_mutex_lock(&ix->mu);
    while (ix->n >= bound)
        pthread_cond_wait(&ix->idle, &ix->mu);
    if (ix->n == ix->cap) {
        size_t cap = ix->cap ? ix->cap * 2 : 1024;
        ix_item *q = realloc(ix->q, cap * sizeof *q);
        if (q == NULL) {
            pthread_mutex_unlock(&ix->mu);
            free(owned);
            return CAIRN_ENOMEM;
        }
        ix->q = q;
        ix->cap = cap;
    }
    ix->q[ix->n].idx = idx;
    ix->q[ix->n].seq = seq;
    ix->q[ix->n].text = text;
    ix->q[ix->n].len = len;
    ix->q[ix->n].owned = owned;
    ix->n++;
    if (ix->sleeping)
        pthread_cond_signal(&ix->work);
    pthread_mutex_unlock(&ix->mu);
    return CAIRN_OK;
}

int cairn__indexer_wait(cairn__indexer *ix)
{
    int rc;
    pthread_mutex_lock(&ix->mu);
    while (ix->n > 0 || ix->busy)
        pthread_cond_wait(&ix->idle, &ix->mu);
    rc = ix->failed;
    ix->failed = CAIRN_OK;
    pthread_mutex_unlock(&ix->mu);
    return rc;
}
