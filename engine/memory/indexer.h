/*
 * indexer.h - the memory engine's text indexing thread.
 *
 * Tokenizing and inverting a memory's content is most of what a store
 * costs; the rest (the record, the log append, the id and content tables)
 * does not need the text index. So a writable handle on a store with
 * background threads hands each new memory's text to one thread of its
 * own, which adds it to the namespace's in-RAM index while the caller
 * goes on, on the other core. Everything that reads or changes an index
 * (recall, delete, clear) first waits for the queue to be empty
 * (cairn__indexer_wait), under the handle's lock, so a stored memory is
 * recallable by the very next call, from any thread; a checkpoint (a
 * close's too) writes its file's rows first and waits before the text
 * images.
 *
 * Only the indexing thread touches an index with work queued for it; the
 * texts queued stay owned by the memories (freed only at close, after the
 * thread has stopped).
 */
#ifndef CAIRN_INDEXER_H
#define CAIRN_INDEXER_H

#include <stddef.h>
#include <stdint.h>

#include "ramindex.h"

typedef struct cairn__indexer cairn__indexer;

/* Start the thread. CAIRN_ENOMEM, or CAIRN_EIO when no thread starts. */
int cairn__indexer_new(cairn__indexer **out);

/* Finish the queued work, stop the thread, free. Accepts NULL. */
void cairn__indexer_free(cairn__indexer *ix);

/* Queue text[0..len) to be added to idx as document seq (the caller keeps
 * text alive until a cairn__indexer_wait has returned; or gives it: owned
 * not NULL is the text's malloc'd block, freed once added). Waits while
 * `bound` texts are queued (0: the queue's own bound, 65,536).
 * CAIRN_ENOMEM if the queue cannot grow (nothing queued; owned is freed). */
int cairn__indexer_add(cairn__indexer *ix, cairn__ramidx *idx, uint64_t seq, const char *text,
                       size_t len, char *owned, size_t bound);

/* The bound of a memory stored on its own (cairn_mem_store). The thread
 * adds a text more slowly than a writer stores one, so a stream of stores
 * runs ahead of it: with the queue's own bound, a close at the end of a
 * 1M ingest found 7,000-9,500 texts still to add (40-110 ms; up to 65,536
 * could be). With this bound the writer waits now and then instead (the
 * ingest took as long), and a close waits for at most this many and the
 * batch under way. */
#define IX_BOUND_STORE 1024

/* Wait until every queued text is in its index. Returns the first failure
 * of an add since the last call (CAIRN_ENOMEM: that memory is not in the
 * index), else CAIRN_OK. */
int cairn__indexer_wait(cairn__indexer *ix);

#endif /* CAIRN_INDEXER_H */
