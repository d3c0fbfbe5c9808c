/*
 * config.c - the store's settings, as the MANIFEST keeps them
 * (format-spec/manifest.md): durability, batch_ms and segment_size, given
 * when the store is created, and max_memories (the memory engine's limit
 * of live memories per namespace), which may change at any time.
 *
 * A change is written as every change of the MANIFEST is: the current one
 * copied, changed, its generation + 1, written whole and renamed over the
 * old one, then published as a new view (cairn__set_max_memories, in
 * append.c with the other MANIFEST writes of a writer).
 */
#include <pthread.h>

#include "cairn.h"
#include "store.h"

int cairn_config_get(cairn_db *db, cairn_config *out)
{
    int rc = CAIRN_OK;

    pthread_mutex_lock(&db->mu);
    /* A reader picks up what a writer changed since it last looked. */
    if (db->read_only)
        rc = cairn__refresh(db);
    out->durability = (cairn_durability)db->view->m.durability;
    out->batch_ms = db->view->m.batch_ms;
    out->segment_size = db->view->m.segment_size;
    out->max_memories = db->view->m.max_memories;
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int cairn_config_set_max_memories(cairn_db *db, uint64_t n)
{
    return cairn__set_max_memories(db, n);
}

uint64_t cairn__max_memories(cairn_db *db)
{
    uint64_t n;

    pthread_mutex_lock(&db->mu);
    n = db->view->m.max_memories;
    pthread_mutex_unlock(&db->mu);
    return n;
}
