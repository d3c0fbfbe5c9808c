/*
 * merge.c - cairn_mem_merge: near-duplicate memories found by their
 * vectors, read in place from the vector sets (cairn.h says the rules).
 *
 * Candidate pairs: every pair of a namespace's rows when there are at most
 * MERGE_EXACT_MAX of them; above, an IVF partition of the rows (ivf.h) and,
 * for each row, every row within the threshold among the MERGE_PROBES
 * lists nearest to it: n x (probes x n / lists) comparisons instead of
 * n^2 / 2, on MERGE_THREADS threads (the partition is read-only).
 * A near-duplicate sits close to its twin, so it is almost always in the
 * same list or the next one; bench_vec measures how many pairs the
 * partition finds against the exact pass.
 */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cairn.h"
#include "ivf.h"
#include "memrec.h"
#include "memstate.h"

#define MERGE_EXACT_MAX 2000
#define MERGE_PROBES 8
#define MERGE_THREADS 2

typedef struct mrow {
    const float *v;
    ment *x;
} mrow;

typedef struct mpair {
    uint32_t a, b;         /* rows, a < b */
    double sim;
} mpair;

typedef struct rowlist {
    mrow *r;
    size_t n, cap;
    cairn_mem *m;
    int64_t now;
} rowlist;

static int add_row(void *user, uint64_t seq, const float *v)
{
    rowlist *l = user;
    ment *x = cairn__mem_find_seq(l->m, seq);
    if (x == NULL || !x->live || cairn__mem_expired(x, l->now))
        return 0;
    if (cairn__grow(NULL, (void **)&l->r, &l->cap, l->n + 1, sizeof *l->r) != CAIRN_OK)
        return CAIRN_ENOMEM;
    l->r[l->n].v = v;
    l->r[l->n].x = x;
    l->n++;
    return 0;
}

static int push_pair(mpair **p, size_t *n, size_t *cap, uint32_t a, uint32_t b, double sim)
{
    if (cairn__grow(NULL, (void **)p, cap, *n + 1, sizeof **p) != CAIRN_OK)
        return CAIRN_ENOMEM;
    (*p)[*n].a = a < b ? a : b;
    (*p)[*n].b = a < b ? b : a;
    (*p)[*n].sim = sim;
    (*n)++;
    return CAIRN_OK;
}

/* Best first; equal: the lower rows (older memories) first. */
static int pair_cmp(const void *x, const void *y)
{
    const mpair *p = x, *q = y;
    if (p->sim != q->sim)
        return p->sim > q->sim ? -1 : 1;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

/* One thread's share of the partition's queries: rows [from, to). */
typedef struct scan_job {
    cairn_mem *m;
    const rowlist *l;
    const cairn__ivf *ivf;
    double t;
    size_t from, to, self;
    mpair *p;
    size_t np, cap;
    int rc;
} scan_job;

static void found(void *user, uint32_t row, double sim)
{
    scan_job *j = user;
    if (j->rc == CAIRN_OK && row != j->self)
        j->rc = push_pair(&j->p, &j->np, &j->cap, (uint32_t)j->self, row, sim);
}

static void *scan_rows(void *arg)
{
    scan_job *j = arg;
    size_t d = j->m->vdim;
    float *qb = malloc(d * 2 * sizeof *qb + d);
    if (qb == NULL) {
        j->rc = CAIRN_ENOMEM;
        return NULL;
    }
    for (size_t i = j->from; i < j->to && j->rc == CAIRN_OK; i++) {
        vec_query vq;
        cairn__vec_query_make(&vq, j->l->r[i].v, d, qb + d, (int8_t *)(qb + 2 * d));
        j->self = i;
        j->rc = cairn__ivf_within(j->ivf, j->m->kern, &vq, j->t, MERGE_PROBES, found, j);
    }
    free(qb);
    return NULL;
}

static int candidates(cairn_mem *m, const rowlist *l, double t, mpair **pairs, size_t *np)
{
    size_t cap = 0, d = m->vdim;
    int rc = CAIRN_OK;

    *np = 0;
    if (l->n <= MERGE_EXACT_MAX) {
        for (size_t i = 0; i < l->n && rc == CAIRN_OK; i++)
            for (size_t j = i + 1; j < l->n && rc == CAIRN_OK; j++) {
                double s = m->kern->dot_f32(l->r[i].v, l->r[j].v, d);
                if (s >= t)
                    rc = push_pair(pairs, np, &cap, (uint32_t)i, (uint32_t)j, s);
            }
        return rc;
    }
    {
        const float **rows = malloc(l->n * sizeof *rows);
        cairn__ivf *ivf = NULL;
        ivf_rows in;
        pthread_t th[MERGE_THREADS];
        scan_job jobs[MERGE_THREADS];
        int started[MERGE_THREADS] = {0};
        if (rows == NULL)
            return CAIRN_ENOMEM;
        for (size_t i = 0; i < l->n; i++)
            rows[i] = l->r[i].v;
        in.n = l->n;
        in.dim = d;
        in.rows = rows;
        rc = cairn__ivf_build(&ivf, m->kern, &in, 0, 0x6d65726765ull);
        /* the rows' queries split over threads; each gathers its own pairs
         * (a thread that cannot start: its share runs here) */
        for (size_t k = 0; k < MERGE_THREADS; k++) {
            scan_job *j = &jobs[k];
            memset(j, 0, sizeof *j);
            j->m = m;
            j->l = l;
            j->ivf = ivf;
            j->t = t;
            j->from = l->n * k / MERGE_THREADS;
            j->to = l->n * (k + 1) / MERGE_THREADS;
            j->rc = rc;
        }
        for (size_t k = 1; rc == CAIRN_OK && k < MERGE_THREADS; k++)
            started[k] = pthread_create(&th[k], NULL, scan_rows, &jobs[k]) == 0;
        for (size_t k = 0; rc == CAIRN_OK && k < MERGE_THREADS; k++)
            if (k == 0 || !started[k])
                (void)scan_rows(&jobs[k]);
        for (size_t k = 1; k < MERGE_THREADS; k++)
            if (started[k])
                pthread_join(th[k], NULL);
        for (size_t k = 0; k < MERGE_THREADS && rc == CAIRN_OK; k++) {
            if (jobs[k].rc != CAIRN_OK)
                rc = jobs[k].rc;
            for (size_t i = 0; rc == CAIRN_OK && i < jobs[k].np; i++)
                rc = push_pair(pairs, np, &cap, jobs[k].p[i].a, jobs[k].p[i].b, jobs[k].p[i].sim);
        }
        for (size_t k = 0; k < MERGE_THREADS; k++)
            free(jobs[k].p);
        cairn__ivf_free(ivf);
        free(rows);
    }
    /* a pair found from both of its rows: once */
    if (rc == CAIRN_OK && *np > 1) {
        size_t k = 0;
        qsort(*pairs, *np, sizeof **pairs, pair_cmp);
        for (size_t i = 0; i < *np; i++)
            if (k == 0 || (*pairs)[k - 1].a != (*pairs)[i].a || (*pairs)[k - 1].b != (*pairs)[i].b)
                (*pairs)[k++] = (*pairs)[i];
        *np = k;
    }
    return rc;
}

/* Metadata text `meta` (NULL: {}) with one more entry in "mergedFrom"
 * (malloc'd), or NULL when out of memory. */
static char *add_history(const char *meta_text, const ment *gone, const char *gone_text,
                         double sim, int64_t now)
{
    cJSON *meta = cJSON_Parse(meta_text ? meta_text : "{}"), *list, *e;
    char *out = NULL;
    if (meta == NULL || !cJSON_IsObject(meta)) {
        cJSON_Delete(meta);
        meta = cJSON_CreateObject();
    }
    list = cJSON_GetObjectItemCaseSensitive(meta, "mergedFrom");
    if (!cJSON_IsArray(list)) {
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "mergedFrom");
        list = cJSON_AddArrayToObject(meta, "mergedFrom");
    }
    e = cJSON_CreateObject();
    if (list != NULL && e != NULL && cJSON_AddStringToObject(e, "id", gone->id) &&
        cJSON_AddStringToObject(e, "content", gone_text) &&
        cJSON_AddNumberToObject(e, "similarity", sim) &&
        cJSON_AddNumberToObject(e, "importance", gone->importance) &&
        cairn__json_add_int(e, "at", now) && cJSON_AddItemToArray(list, e)) {
        /* what the merged memory had absorbed comes along */
        cJSON *gm = gone->metadata ? cJSON_Parse(gone->metadata) : NULL;
        cJSON *gl = cJSON_GetObjectItemCaseSensitive(gm, "mergedFrom"), *x;
        int ok = 1;
        if (!cJSON_IsArray(gl))
            gl = NULL;
        cJSON_ArrayForEach(x, gl) {
            cJSON *c = cJSON_Duplicate(x, 1);
            ok = ok && c != NULL && cJSON_AddItemToArray(list, c);
        }
        cJSON_Delete(gm);
        e = NULL;
        out = ok ? cJSON_PrintUnformatted(meta) : NULL;
    }
    cJSON_Delete(e);
    cJSON_Delete(meta);
    return out;
}

/* Apply the pairs: the history of each kept memory is made first (it
 * quotes the merged memories' content), then the deletes go in one
 * commit, then one update per kept memory. A crash between the two leaves
 * the merges done and the history in the delete records' reasons. */
static int apply(cairn_mem *m, const cairn_merge_pair *pp, size_t n, int64_t now)
{
    ment **gone = malloc((n ? n : 1) * sizeof *gone);
    char **why = calloc(n ? n : 1, sizeof *why), **meta = calloc(n ? n : 1, sizeof *meta);
    int rc = CAIRN_OK;

    if (gone == NULL || why == NULL || meta == NULL) {
        rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory for merge");
        goto out;
    }
    for (size_t i = 0; i < n && rc == CAIRN_OK; i++) {
        size_t j;
        gone[i] = cairn__mem_find_id(m, pp[i].merged);
        why[i] = malloc(sizeof "merge:" + CAIRN_MEM_ID_MAX);
        if (why[i] == NULL) {
            rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory for merge");
            break;
        }
        snprintf(why[i], sizeof "merge:" + CAIRN_MEM_ID_MAX, "merge:%s", pp[i].kept);
        /* meta[j]: the new metadata of the kept memory of pair j, its first pair */
        for (j = 0; j < i && strcmp(pp[j].kept, pp[i].kept) != 0; j++)
            ;
        {
            const ment *k = cairn__mem_find_id(m, pp[i].kept);
            const char *text;
            char *t;
            if ((rc = cairn__mem_text(m, gone[i], &text)) != CAIRN_OK)
                break;
            t = add_history(j < i ? meta[j] : k->metadata, gone[i], text, pp[i].similarity, now);
            if (t == NULL) {
                rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory for merge");
                break;
            }
            free(meta[j]);
            meta[j] = t;
        }
    }
    if (rc == CAIRN_OK)
        rc = cairn__mem_delete_each(m, gone, n, NULL, (const char *const *)why);
    for (size_t i = 0; i < n && rc == CAIRN_OK; i++) {
        ment *k;
        memrec r;
        if (meta[i] == NULL)
            continue; /* not the first pair of its kept memory */
        if ((k = cairn__mem_find_id(m, pp[i].kept)) == NULL)
            continue;
        memset(&r, 0, sizeof r);
        r.type = CAIRN_REC_MEMORY_UPDATE;
        r.id = pp[i].kept;
        r.metadata = meta[i];
        r.has = MEMREC_HAS_METADATA;
        rc = cairn__mem_write_rec(m, m->ns[k->nsi].name, &r, NULL);
    }
out:
    for (size_t i = 0; why != NULL && i < n; i++)
        free(why[i]);
    for (size_t i = 0; meta != NULL && i < n; i++)
        free(meta[i]);
    free(gone);
    free(why);
    free(meta);
    return rc;
}

/* The pairs of one namespace, taken greedily, appended to *out. */
static int merge_ns(cairn_mem *m, uint32_t nsi, double t, int64_t now, cairn_merge_pair **out,
                    size_t *n_out, size_t *cap, uint64_t *rows_seen)
{
    rowlist l;
    mpair *pairs = NULL;
    size_t np = 0;
    uint8_t *state = NULL; /* per row: 1 kept another, 2 merged away */
    int rc = CAIRN_OK;

    memset(&l, 0, sizeof l);
    l.m = m;
    l.now = now;
    for (size_t g = 0; g < m->ng && rc == CAIRN_OK; g++)
        if (m->ns[nsi].gvec[g] != NULL)
            rc = cairn__vecset_each(m->ns[nsi].gvec[g], add_row, &l);
    if (rc == CAIRN_OK && m->ns[nsi].vec != NULL)
        rc = cairn__vecset_each(m->ns[nsi].vec, add_row, &l);
    *rows_seen += l.n;
    if (rc == CAIRN_OK && l.n > 1)
        rc = candidates(m, &l, t, &pairs, &np);
    if (rc == CAIRN_OK && np > 1)
        qsort(pairs, np, sizeof *pairs, pair_cmp);
    if (rc == CAIRN_OK && np > 0 && (state = calloc(l.n, 1)) == NULL)
        rc = CAIRN_ENOMEM;
    for (size_t i = 0; i < np && rc == CAIRN_OK; i++) {
        const mrow *a = &l.r[pairs[i].a], *b = &l.r[pairs[i].b];
        const mrow *k, *g;
        cairn_merge_pair *p;
        if (state[pairs[i].a] == 2 || state[pairs[i].b] == 2)
            continue; /* one is gone already */
        /* the higher importance stays; equal: the older (a: rows are in seq order) */
        k = b->x->importance > a->x->importance ? b : a;
        g = k == a ? b : a;
        if (state[g == a ? pairs[i].a : pairs[i].b] == 1)
            continue; /* a memory that kept another is never merged away */
        if (cairn__grow(NULL, (void **)out, cap, *n_out + 1, sizeof **out) != CAIRN_OK) {
            rc = CAIRN_ENOMEM;
            break;
        }
        p = &(*out)[(*n_out)++];
        memset(p, 0, sizeof *p);
        strcpy(p->kept, k->x->id);
        strcpy(p->merged, g->x->id);
        p->similarity = pairs[i].sim;
        p->kept_importance = k->x->importance;
        p->merged_importance = g->x->importance;
        p->why = k->x->importance > g->x->importance ? "higher importance"
                                                     : "same importance, older";
        state[k == a ? pairs[i].a : pairs[i].b] = 1;
        state[g == a ? pairs[i].a : pairs[i].b] = 2;
    }
    free(state);
    free(pairs);
    free(l.r);
    return rc;
}

/* The pairs of every namespace o names, as the state is now (mu held). */
static int find_pairs(cairn_mem *m, const cairn_merge_opts *o, double t, int64_t now,
                      cairn_merge_pair **out, size_t *n, size_t *cap, uint64_t *rows)
{
    static const char *const default_ns[] = {""};
    int rc = CAIRN_OK;

    if (m->vdim == 0)
        return cairn__mem_fail(m, CAIRN_EUNAVAIL, "merge needs vectors, and the store has none "
                               "(store memories with an embedder)");
    for (size_t i = 0; i < (o->ns ? o->n_ns : 1) && rc == CAIRN_OK; i++) {
        const char *name = (o->ns ? o->ns : default_ns)[i];
        long nsi = cairn__mem_ns_index(m, name, strlen(name), 0);
        if (nsi >= 0)
            rc = merge_ns(m, (uint32_t)nsi, t, now, out, n, cap, rows);
    }
    if (rc == CAIRN_ENOMEM)
        rc = cairn__mem_fail(m, rc, "no memory for merge");
    else if (rc != CAIRN_OK)
        rc = cairn__mem_index_damaged(m, rc, "a vector index");
    return rc;
}

int cairn_mem_merge(cairn_mem *m, const cairn_merge_opts *o, cairn_merge_pair **pairs,
                    size_t *n_pairs, uint64_t *merged, uint64_t *kept)
{
    cairn_merge_opts def = CAIRN_MERGE_OPTS_INIT;
    cairn_merge_pair *out = NULL;
    size_t n = 0, cap = 0;
    uint64_t rows = 0;
    int64_t now = cairn__mem_wall_ms();
    double t;
    int rc = CAIRN_OK, turn = 0;

    if (pairs != NULL)
        *pairs = NULL;
    if (n_pairs != NULL)
        *n_pairs = 0;
    if (o == NULL)
        o = &def;
    if ((rc = cairn__opts_version(m, "cairn_merge_opts", o->version, CAIRN_MERGE_OPTS_VERSION)) != CAIRN_OK)
        return rc;
    t = o->threshold == 0 ? 0.85 : o->threshold;
    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    if (!(t > 0 && t <= 1)) {
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "Invalid similarity threshold: must be between 0 "
                             "and 1");
        goto done;
    }
    /* The pairs are found before the turn of the writer lock (seconds over
     * 100,000 memories), so that other processes' writers do not wait for
     * the search; inside the turn they are found again only if the memories
     * changed meanwhile. A merge decides on the log as it is. */
    if ((rc = cairn__mem_catch_up(m)) != CAIRN_OK)
        goto done;
    rc = find_pairs(m, o, t, now, &out, &n, &cap, &rows);
    if (rc == CAIRN_OK && !o->dry_run && n > 0) {
        uint64_t seen = m->folded;
        if ((rc = cairn__mem_turn_begin(m)) != CAIRN_OK)
            goto done;
        turn = 1;
        if (m->folded != seen) {
            n = 0;
            rows = 0;
            rc = find_pairs(m, o, t, now, &out, &n, &cap, &rows);
        }
        if (rc == CAIRN_OK && n > 0)
            rc = apply(m, out, n, now);
    }
done:
    if (turn)
        rc = cairn__mem_turn_end(m, rc);
    pthread_mutex_unlock(&m->mu);
    if (rc == CAIRN_OK) {
        if (merged != NULL)
            *merged = n;
        if (kept != NULL)
            *kept = rows - n;
        if (!o->dry_run && n > 0) {
            cairn_mem_event ev;
            memset(&ev, 0, sizeof ev);
            ev.kind = CAIRN_EVENT_MERGED;
            ev.merged = n;
            ev.kept = rows - n;
            cairn__mem_emit(m, &ev);
        }
        if (pairs != NULL) {
            *pairs = out;
            out = NULL;
        }
        if (n_pairs != NULL)
            *n_pairs = n;
    }
    free(out);
    return rc;
}
