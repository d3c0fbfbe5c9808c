/*
 * maintain.c - forgetting (cairn_mem_forget) and statistics
 * (cairn_mem_stats_get) over the memory engine's state.
 *
 * Forget decides first, then deletes everything it decided in one batch
 * (one commit), so a crash leaves either all of a forget or none of it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cairn.h"
#include "memstate.h"

static const char *mode_reason(cairn_forget_mode mode)
{
    switch (mode) {
    case CAIRN_FORGET_GENTLE: return "forget:gentle";
    case CAIRN_FORGET_NORMAL: return "forget:normal";
    case CAIRN_FORGET_AGGRESSIVE: return "forget:aggressive";
    }
    return "forget";
}

typedef struct scored {
    ment *x;
    double decayed;
} scored;

static int by_decayed(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    if (x->decayed != y->decayed)
        return x->decayed < y->decayed ? -1 : 1;
    return x->x->seq < y->x->seq ? -1 : x->x->seq > y->x->seq; /* older first */
}

static int in_scope(cairn_mem *m, const ment *x, const cairn_forget_opts *o)
{
    static const char *const def[] = {""};
    const char *const *ns = o->ns ? o->ns : def;
    size_t n = o->ns ? o->n_ns : 1;
    for (size_t i = 0; i < n; i++)
        if (strcmp(m->ns[x->nsi].name, ns[i]) == 0)
            return 1;
    return 0;
}

int cairn_mem_forget(cairn_mem *m, const cairn_forget_opts *o, uint64_t *pruned, uint64_t *kept)
{
    cairn_forget_opts def = CAIRN_FORGET_OPTS_INIT;
    int64_t now = cairn__mem_wall_ms();
    ment **out = NULL;
    scored *rest = NULL;
    size_t nout = 0, nrest = 0, live = 0;
    double max_age;
    int rc = CAIRN_OK, turn = 0;

    if (o == NULL)
        o = &def;
    if ((rc = cairn__opts_version(m, "cairn_forget_opts", o->version, CAIRN_FORGET_OPTS_VERSION)) != CAIRN_OK)
        return rc;
    if (pruned)
        *pruned = 0;
    if (kept)
        *kept = 0;
    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    cairn__access_refresh(m); /* decay counts from the last access, also one not folded yet */
    if ((unsigned)o->mode > CAIRN_FORGET_AGGRESSIVE || o->max_age_days < 0 ||
        o->min_importance < 0 || o->min_importance > 1) {
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "forget: mode, maxAge >= 0 or minImportance 0..1");
        goto done;
    }
    max_age = o->max_age_days > 0 ? o->max_age_days : m->max_retention;
    /* A dry run only reads; a forget decides on the log as it is. */
    rc = o->dry_run ? cairn__mem_catch_up(m) : cairn__mem_turn_begin(m);
    if (rc != CAIRN_OK)
        goto done;
    turn = !o->dry_run;
    if ((rc = cairn__mem_read_all(m)) != CAIRN_OK)
        goto done;
    out = calloc(cairn__mem_total(m) + 1, sizeof *out);
    rest = calloc(cairn__mem_total(m) + 1, sizeof *rest);
    if (out == NULL || rest == NULL) {
        rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        goto done;
    }
    for (size_t i = 0; i < cairn__mem_total(m); i++) {
        ment *x = cairn__mem_at(m, i);
        double d;
        if (!x->live || !in_scope(m, x, o))
            continue;
        live++;
        d = cairn__mem_decayed(m, x, now);
        if (cairn__mem_expired(x, now) || (double)(now - x->created) / 86400000.0 > max_age ||
            (o->mode >= CAIRN_FORGET_NORMAL && d < 0.01) ||
            (o->min_importance > 0 && d < o->min_importance)) {
            out[nout++] = x;
        } else {
            rest[nrest].x = x;
            rest[nrest].decayed = d;
            nrest++;
        }
    }
    if (o->mode == CAIRN_FORGET_AGGRESSIVE && nrest > 0) {
        size_t cut = nrest / 10;
        qsort(rest, nrest, sizeof *rest, by_decayed);
        for (size_t i = 0; i < cut; i++)
            out[nout++] = rest[i].x;
    }
    if (!o->dry_run)
        rc = cairn__mem_delete_many(m, out, nout, mode_reason(o->mode));
    if (rc == CAIRN_OK) {
        if (pruned)
            *pruned = nout;
        if (kept)
            *kept = live - nout;
    }
done:
    free(out);
    free(rest);
    if (turn)
        rc = cairn__mem_turn_end(m, rc);
    pthread_mutex_unlock(&m->mu);
    if (rc == CAIRN_OK && !o->dry_run && nout > 0) {
        cairn_mem_event ev;
        memset(&ev, 0, sizeof ev);
        ev.kind = CAIRN_EVENT_PRUNED;
        ev.pruned = nout;
        ev.kept = live - nout;
        ev.reason = mode_reason(o->mode);
        cairn__mem_emit(m, &ev);
    }
    return rc;
}

static int by_count(const void *a, const void *b)
{
    const cairn_mem_category_count *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

int cairn_mem_count(cairn_mem *m, uint64_t *live)
{
    int rc;
    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    rc = cairn__mem_catch_up(m);
    *live = rc == CAIRN_OK ? cairn__mem_live(m) : 0;
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int cairn_mem_stats_get(cairn_mem *m, cairn_mem_stats *s)
{
    int64_t now = cairn__mem_now(m);
    double sum = 0;
    int rc = CAIRN_OK;

    memset(s, 0, sizeof *s);
    pthread_mutex_lock(&m->mu);
    if ((rc = cairn__mem_catch_up(m)) != CAIRN_OK) {
        pthread_mutex_unlock(&m->mu);
        return rc;
    }
    s->namespaces = m->nns;
    s->skipped = m->skipped;
    s->deleted = m->base_deleted;
    for (size_t g = 0; g < m->ng; g++)
        s->index_bytes += m->gen[g].mx.len;
    s->index_files = m->ng;
    s->index_seq = cairn__mem_index_covered(m);
    s->index_rows = m->index_live;
    s->unindexed = m->tail_records;
    strcpy(s->index_note, m->index_note);
    rc = cairn__mem_read_all(m);
    for (size_t i = 0; i < cairn__mem_total(m) && rc == CAIRN_OK; i++) {
        const ment *x = cairn__mem_at(m, i);
        size_t c;
        if (!x->live) {
            s->deleted++;
            continue;
        }
        if (cairn__mem_expired(x, now))
            continue;
        s->total++;
        sum += x->importance;
        if (s->oldest == 0 || x->created < s->oldest)
            s->oldest = x->created;
        if (x->created > s->newest)
            s->newest = x->created;
        for (c = 0; c < s->n_categories; c++)
            if (strcmp(s->by_category[c].name, x->category) == 0)
                break;
        if (c == s->n_categories) {
            cairn_mem_category_count *p =
                realloc(s->by_category, (c + 1) * sizeof *s->by_category);
            if (p == NULL || (p[c].name = strdup(x->category)) == NULL) {
                if (p != NULL)
                    s->by_category = p;
                rc = CAIRN_ENOMEM;
                break;
            }
            s->by_category = p;
            p[c].count = 0;
            s->n_categories++;
        }
        s->by_category[c].count++;
    }
    pthread_mutex_unlock(&m->mu);
    if (rc != CAIRN_OK) {
        cairn_mem_stats_free(s);
        return rc;
    }
    if (s->n_categories > 1)
        qsort(s->by_category, s->n_categories, sizeof *s->by_category, by_count);
    s->avg_importance = s->total ? sum / (double)s->total : 0.0;
    return CAIRN_OK;
}

void cairn_mem_stats_free(cairn_mem_stats *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n_categories; i++)
        free(s->by_category[i].name);
    free(s->by_category);
    memset(s, 0, sizeof *s);
}
