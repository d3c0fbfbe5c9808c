/*
 * pattern.c - patterns and anti-patterns: add (deduplicated by name, with
 * ReflexionMemory's running average), list best first, anti-patterns worst first.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "rstate.h"
#include "utf8.h"

void cairn_pattern_clear(cairn_pattern *p)
{
    if (p == NULL)
        return;
    free(p->name);
    free(p->description);
    free(p->trigger);
    free(p->action);
    for (size_t j = 0; j < p->n_episodes; j++)
        free(p->episodes[j]);
    free(p->episodes);
    memset(p, 0, sizeof *p);
}

void cairn_patterns_free(cairn_pattern *p, size_t n)
{
    for (size_t i = 0; p != NULL && i < n; i++)
        cairn_pattern_clear(&p[i]);
    free(p);
}

static char *dup_s(const char *s)
{
    size_t n = strlen(s);
    char *p = malloc(n + 1);
    if (p != NULL)
        memcpy(p, s, n + 1);
    return p;
}

int cairn__rx_copy_pattern(const cairn_reflex *r, size_t i, cairn_pattern *o)
{
    const rpat *p = &r->pat[i];
    memset(o, 0, sizeof *o);
    cairn__rx_id('p', p->key, o->id);
    o->success_rate = p->success;
    o->occurrences = p->occurrences;
    o->last_used_ms = p->last_used;
    o->created_ms = p->created;
    o->name = dup_s(p->name);
    o->description = dup_s(p->desc);
    o->trigger = dup_s(p->trigger);
    o->action = dup_s(p->action);
    o->episodes = calloc(p->n_eps ? p->n_eps : 1, sizeof *o->episodes);
    if (o->name == NULL || o->description == NULL || o->trigger == NULL || o->action == NULL ||
        o->episodes == NULL)
        return CAIRN_ENOMEM;
    for (uint32_t k = 0; k < p->n_eps; k++) {
        if ((o->episodes[k] = dup_s(r->names[p->eps[k]])) == NULL)
            return CAIRN_ENOMEM;
        o->n_episodes = k + 1;
    }
    return CAIRN_OK;
}

/* Required or not, at most CAIRN_LABEL_MAX bytes, text by the one rule
 * (utf8.h). */
static int check_field(cairn_reflex *r, const char *what, const char *s, int required)
{
    cairn__err e;
    if (s == NULL || s[0] == 0)
        return required ? cairn__rx_fail(r, CAIRN_EINVAL, "%s: required", what) : CAIRN_OK;
    if (strlen(s) > CAIRN_LABEL_MAX)
        return cairn__rx_fail(r, CAIRN_EINVAL, "%s: longer than %d bytes", what, CAIRN_LABEL_MAX);
    if (cairn__utf8_check_str(&e, what, s) != CAIRN_OK)
        return cairn__rx_fail(r, CAIRN_EINVAL, "%s", e.msg);
    return CAIRN_OK;
}

int cairn_pattern_add(cairn_reflex *r, const cairn_pattern_spec *spec, cairn_pattern *out)
{
    rchange c;
    int rc;

    if (out != NULL)
        memset(out, 0, sizeof *out);
    if (spec == NULL)
        return CAIRN_EINVAL;
    if ((rc = cairn__opts_version(r, "cairn_pattern_spec", spec->version,
                                  CAIRN_PATTERN_SPEC_VERSION)) != CAIRN_OK)
        return rc;
    pthread_mutex_lock(&r->mu);
    cairn__errbuf(r)[0] = 0;
    rc = check_field(r, "name", spec->name, 1);
    if (rc == CAIRN_OK)
        rc = check_field(r, "trigger", spec->trigger, 1);
    if (rc == CAIRN_OK)
        rc = check_field(r, "action", spec->action, 1);
    if (rc == CAIRN_OK)
        rc = check_field(r, "description", spec->description, 0);
    if (rc == CAIRN_OK)
        rc = check_field(r, "episode", spec->episode, 0);
    if (rc == CAIRN_OK && !(spec->success_rate >= 0 && spec->success_rate <= 1))
        rc = cairn__rx_fail(r, CAIRN_EINVAL, "success rate must be between 0 and 1");
    if (rc == CAIRN_OK && (rc = cairn__rx_turn_begin(r)) == CAIRN_OK) {
        memset(&c, 0, sizeof c);
        c.rec = CAIRN_REC_PATTERN;
        c.pat = *spec;
        rc = cairn__rx_turn_end(r, cairn__rx_commit(r, &c, 1));
    }
    if (rc == CAIRN_OK && out != NULL) {
        size_t i = r->n_pat;
        for (size_t j = 0; j < r->n_pat; j++)
            if (cairn__rx_same_name(r, r->pat[j].name, spec->name))
                i = j;
        rc = i == r->n_pat ? cairn__rx_fail(r, CAIRN_ENOTFOUND, "the pattern was not folded")
                           : cairn__rx_copy_pattern(r, i, out);
        if (rc != CAIRN_OK)
            cairn_pattern_clear(out);
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

static int best_first(const void *a, const void *b)
{
    const cairn_pattern *x = a, *y = b;
    if (x->success_rate != y->success_rate)
        return x->success_rate > y->success_rate ? -1 : 1;
    if (x->occurrences != y->occurrences)
        return x->occurrences > y->occurrences ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int worst_first(const void *a, const void *b)
{
    const cairn_pattern *x = a, *y = b;
    if (x->success_rate != y->success_rate)
        return x->success_rate < y->success_rate ? -1 : 1;
    if (x->occurrences != y->occurrences)
        return x->occurrences > y->occurrences ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int select_patterns(cairn_reflex *r, double lo, double hi, uint64_t min_occ, int anti,
                           cairn_pattern **out, size_t *n)
{
    cairn_pattern *v = NULL;
    size_t k = 0;
    int rc;

    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&r->mu);
    cairn__errbuf(r)[0] = 0;
    rc = cairn__rx_catch_up(r);
    if (rc == CAIRN_OK && r->n_pat > 0 && (v = calloc(r->n_pat, sizeof *v)) == NULL)
        rc = cairn__rx_fail(r, CAIRN_ENOMEM, "no memory");
    for (size_t i = 0; i < r->n_pat && rc == CAIRN_OK; i++) {
        const rpat *p = &r->pat[i];
        if (p->success < lo || p->success > hi || p->occurrences < min_occ)
            continue;
        rc = cairn__rx_copy_pattern(r, i, &v[k]);
        k++;
    }
    pthread_mutex_unlock(&r->mu);
    if (rc != CAIRN_OK) {
        cairn_patterns_free(v, k);
        return rc;
    }
    if (k > 1)
        qsort(v, k, sizeof *v, anti ? worst_first : best_first);
    *out = v;
    *n = k;
    return CAIRN_OK;
}

int cairn_pattern_list(cairn_reflex *r, double min_success_rate, uint64_t min_occurrences,
                       cairn_pattern **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!(min_success_rate >= 0 && min_success_rate <= 1))
        return cairn__rx_fail(r, CAIRN_EINVAL, "min success rate must be between 0 and 1");
    if (min_occurrences < 1 || min_occurrences > 1000)
        return cairn__rx_fail(r, CAIRN_EINVAL, "min occurrences must be between 1 and 1000");
    return select_patterns(r, min_success_rate, 1.0, min_occurrences, 0, out, n);
}

int cairn_pattern_anti(cairn_reflex *r, double max_success_rate, cairn_pattern **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!(max_success_rate >= 0 && max_success_rate <= 1))
        return cairn__rx_fail(r, CAIRN_EINVAL, "max success rate must be between 0 and 1");
    return select_patterns(r, 0.0, max_success_rate, 2, 1, out, n);
}
