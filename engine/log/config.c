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
#include <stdio.h>
#include <string.h>

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
    out->retain = db->view->m.retain;
    out->retain_grace_ms = db->view->m.retain_grace_ms;
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int cairn_config_set_retain(cairn_db *db, unsigned retain, uint64_t grace_ms)
{
    return cairn__set_retain(db, retain, grace_ms);
}

static const struct {
    const char *name;
    uint64_t ms;
} grace_units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};

int cairn_retain_parse(const char *text, unsigned *retain, uint64_t *grace_ms)
{
    const char *p;
    uint64_t n = 0;

    if (text == NULL)
        return CAIRN_EINVAL;
    if (strcmp(text, "all") == 0) {
        *retain = CAIRN_RETAIN_ALL;
        *grace_ms = 0;
        return CAIRN_OK;
    }
    if (strcmp(text, "live") == 0) {
        *retain = CAIRN_RETAIN_LIVE;
        *grace_ms = CAIRN_RETAIN_GRACE_DEFAULT;
        return CAIRN_OK;
    }
    if (strncmp(text, "live:", 5) != 0)
        return CAIRN_EINVAL;
    p = text + 5;
    if (*p < '0' || *p > '9')
        return CAIRN_EINVAL;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (n > CAIRN_RETAIN_GRACE_MAX / 10)
            return CAIRN_EINVAL;
        n = n * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '\0') {
        if (n != 0) /* a number needs its unit, but for 0 */
            return CAIRN_EINVAL;
    } else {
        size_t i;
        for (i = 0; i < sizeof grace_units / sizeof grace_units[0]; i++)
            if (strcmp(p, grace_units[i].name) == 0)
                break;
        if (i == sizeof grace_units / sizeof grace_units[0] ||
            n > CAIRN_RETAIN_GRACE_MAX / grace_units[i].ms)
            return CAIRN_EINVAL;
        n *= grace_units[i].ms;
    }
    *retain = CAIRN_RETAIN_LIVE;
    *grace_ms = n;
    return CAIRN_OK;
}

void cairn_retain_format(unsigned retain, uint64_t grace_ms, char *out, size_t cap)
{
    size_t i = sizeof grace_units / sizeof grace_units[0];

    if (cap == 0)
        return;
    if (retain != CAIRN_RETAIN_LIVE) {
        snprintf(out, cap, "all");
        return;
    }
    if (grace_ms == 0) {
        snprintf(out, cap, "live:0");
        return;
    }
    while (i-- > 1 && grace_ms % grace_units[i].ms != 0)
        ;
    snprintf(out, cap, "live:%llu%s", (unsigned long long)(grace_ms / grace_units[i].ms),
             grace_units[i].name);
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

uint64_t cairn__dropped_upto(cairn_db *db)
{
    uint64_t n;

    pthread_mutex_lock(&db->mu);
    n = db->view->m.dropped_upto;
    pthread_mutex_unlock(&db->mu);
    return n;
}
