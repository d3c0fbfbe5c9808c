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
    out->labels_fold_case = db->view->m.label_rule == MAN_LABELS_FOLDED;
    out->reflect_threshold = db->view->m.reflect_threshold;
    out->core_budget = db->view->m.core_budget;
    out->core_section_budget = db->view->m.core_section_budget;
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int cairn_config_set_tiers(cairn_db *db, uint32_t reflect_threshold, uint32_t core_budget,
                           uint32_t core_section_budget)
{
    return cairn__set_tiers(db, reflect_threshold, core_budget, core_section_budget);
}

int cairn_type_register(cairn_db *db, const char *name, uint16_t *type)
{
    return cairn__register_type(db, name, type);
}

int cairn_type_lookup(cairn_db *db, const char *name, uint16_t *type)
{
    int rc = CAIRN_ENOTFOUND;
    if (name == NULL || name[0] == 0)
        return cairn__db_failf(db, CAIRN_EINVAL, "no type name");
    if (cairn_record_type_parse(name, type) == CAIRN_OK)
        return CAIRN_OK;
    if (!cairn__type_name_ok(name, strlen(name)))
        return cairn__db_failf(db, CAIRN_EINVAL, "type '%.64s': not a record type name (1..%d of "
                               "a-z 0-9 _ . -, a letter first) or a number 1-65535", name,
                               CAIRN_TYPE_NAME_MAX);
    pthread_mutex_lock(&db->mu);
    if (db->read_only)
        (void)cairn__refresh(db); /* names registered since */
    for (size_t i = 0; i < db->view->m.n_types; i++)
        if (strcmp(db->view->m.types[i].name, name) == 0) {
            *type = db->view->m.types[i].type;
            rc = CAIRN_OK;
            break;
        }
    pthread_mutex_unlock(&db->mu);
    if (rc != CAIRN_OK)
        return cairn__db_failf(db, CAIRN_ENOTFOUND, "no record type named '%.64s' (`cairn log "
                               "--type NAME` registers one)", name);
    return CAIRN_OK;
}

int cairn_type_name(cairn_db *db, uint16_t type, char *buf, size_t cap)
{
    const char *n = cairn_record_type_name(type);
    int found = 0;
    if (n != NULL) {
        snprintf(buf, cap, "%s", n);
        return 1;
    }
    pthread_mutex_lock(&db->mu);
    for (int again = 0; !found && again < 2 && type >= CAIRN_REC_USER_MIN; again++) {
        /* a reader that meets a type it has no name for looks at the
         * MANIFEST once more: a writer may have named it since */
        if (again == 1 && (!db->read_only || cairn__refresh(db) != CAIRN_OK))
            break;
        for (size_t i = 0; i < db->view->m.n_types; i++)
            if (db->view->m.types[i].type == type) {
                snprintf(buf, cap, "%s", db->view->m.types[i].name);
                found = 1;
                break;
            }
    }
    pthread_mutex_unlock(&db->mu);
    if (!found)
        snprintf(buf, cap, "%u", (unsigned)type);
    return found;
}

uint32_t cairn__label_rule(cairn_db *db)
{
    uint32_t r;
    pthread_mutex_lock(&db->mu);
    r = db->view->m.label_rule;
    pthread_mutex_unlock(&db->mu);
    return r;
}

int cairn_config_set_retain(cairn_db *db, const cairn_retention *r)
{
    return cairn__set_retain(db, r);
}

typedef struct unit {
    const char *name;
    uint64_t mul;
} unit;

static const unit time_units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000},
                                  {"d", 86400000}};
static const unit size_units[] = {{"B", 1},
                                  {"KiB", 1ull << 10},
                                  {"MiB", 1ull << 20},
                                  {"GiB", 1ull << 30},
                                  {"TiB", 1ull << 40}};
#define N_UNITS(u) (sizeof(u) / sizeof(u)[0])

/* "N<unit>" of len bytes at p with a unit of us; *out the value (at most
 * CAIRN_RETAIN_GRACE_MAX). "0" alone when zero_ok. 1 if it is one. */
static int quantity(const char *p, size_t len, const unit *us, size_t nu, int zero_ok,
                    uint64_t *out)
{
    uint64_t n = 0;
    size_t i = 0;
    if (len == 0 || p[0] < '0' || p[0] > '9')
        return 0;
    for (; i < len && p[i] >= '0' && p[i] <= '9'; i++) {
        if (n > CAIRN_RETAIN_GRACE_MAX / 10)
            return 0;
        n = n * 10 + (uint64_t)(p[i] - '0');
    }
    if (i == len) { /* a number needs its unit, but for 0 */
        *out = 0;
        return zero_ok && n == 0;
    }
    for (size_t k = 0; k < nu; k++)
        if (strlen(us[k].name) == len - i && memcmp(p + i, us[k].name, len - i) == 0) {
            if (n > CAIRN_RETAIN_GRACE_MAX / us[k].mul)
                return 0;
            *out = n * us[k].mul;
            return 1;
        }
    return 0;
}

int cairn_retain_parse(const char *text, cairn_retention *out)
{
    cairn_retention r;
    const char *p = text;
    int memory_part = 0;

    if (text == NULL || *text == '\0')
        return CAIRN_EINVAL;
    memset(&r, 0, sizeof r);
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        uint64_t v;
        if (len == 3 && memcmp(p, "all", 3) == 0 && !memory_part) {
            memory_part = 1;
        } else if (len == 4 && memcmp(p, "live", 4) == 0 && !memory_part) {
            memory_part = 1;
            r.memories = CAIRN_RETAIN_LIVE;
            r.grace_ms = CAIRN_RETAIN_GRACE_DEFAULT;
        } else if (len > 5 && memcmp(p, "live:", 5) == 0 && !memory_part &&
                   quantity(p + 5, len - 5, time_units, N_UNITS(time_units), 1, &v)) {
            memory_part = 1;
            r.memories = CAIRN_RETAIN_LIVE;
            r.grace_ms = v;
        } else if (len > 7 && memcmp(p, "events:", 7) == 0 && r.events_max_age_ms == 0 &&
                   quantity(p + 7, len - 7, time_units, N_UNITS(time_units), 0, &v) && v != 0) {
            r.events_max_age_ms = v;
        } else if (len > 7 && memcmp(p, "events:", 7) == 0 && r.events_max_bytes == 0 &&
                   quantity(p + 7, len - 7, size_units, N_UNITS(size_units), 0, &v) && v != 0) {
            r.events_max_bytes = v;
        } else {
            return CAIRN_EINVAL;
        }
        if (memory_part > 1)
            return CAIRN_EINVAL;
        p += len;
        if (*p == ',' && *++p == '\0')
            return CAIRN_EINVAL; /* a trailing comma */
    }
    *out = r;
    return CAIRN_OK;
}

/* v in the largest unit of us that divides it. */
static void put_quantity(char *out, size_t cap, uint64_t v, const unit *us, size_t nu)
{
    size_t i = nu;
    while (i-- > 1 && v % us[i].mul != 0)
        ;
    snprintf(out, cap, "%llu%s", (unsigned long long)(v / us[i].mul), us[i].name);
}

void cairn_retain_format(const cairn_retention *r, char *out, size_t cap)
{
    char q[40];
    size_t n;

    if (cap == 0)
        return;
    if (r->memories != CAIRN_RETAIN_LIVE)
        snprintf(out, cap, "all");
    else if (r->grace_ms == 0)
        snprintf(out, cap, "live:0");
    else {
        put_quantity(q, sizeof q, r->grace_ms, time_units, N_UNITS(time_units));
        snprintf(out, cap, "live:%s", q);
    }
    n = strlen(out);
    if (r->events_max_age_ms != 0 && n < cap) {
        put_quantity(q, sizeof q, r->events_max_age_ms, time_units, N_UNITS(time_units));
        snprintf(out + n, cap - n, ",events:%s", q);
        n = strlen(out);
    }
    if (r->events_max_bytes != 0 && n < cap) {
        put_quantity(q, sizeof q, r->events_max_bytes, size_units, N_UNITS(size_units));
        snprintf(out + n, cap - n, ",events:%s", q);
    }
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

uint64_t cairn__synced_seq(cairn_db *db)
{
    uint64_t n;

    pthread_mutex_lock(&db->mu);
    n = db->view->m.synced_seq;
    pthread_mutex_unlock(&db->mu);
    return n;
}

uint64_t cairn__deaths_dropped(cairn_db *db)
{
    uint64_t n;

    pthread_mutex_lock(&db->mu);
    n = db->view->m.deaths_dropped;
    pthread_mutex_unlock(&db->mu);
    return n;
}
