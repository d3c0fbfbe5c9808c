/*
 * recall.c - cairn_mem_recall: candidates from each namespace's BM25 index
 * (or every memory, for a query without terms), the filters, the score
 * components, the ranking, and the accesses of what is returned, appended
 * to the side file ACCESS (access.c), never to the log. The formula is in
 * cairn.h (cairn_recall_hit) and README "Recall".
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cairn.h"
#include "memstate.h"
#include "jpath.h"
#include "memvec.h"

/* Reciprocal-rank fusion's constant (Cormack et al. 2009). */
#define RRF_K 60.0

typedef struct cand {
    ment *x;
    double bm25;
    double sim;
    unsigned lrank, srank, source;
    int has_sim;        /* sim computed for a candidate the vectors did not rank */
    cairn_recall_hit h; /* components and score; h.mem filled at the end */
} cand;

static int count_term(void *user, const char *t, size_t len, uint32_t pos)
{
    (void)t;
    (void)len;
    (void)pos;
    (*(size_t *)user)++;
    return 0;
}

/* The filters of one recall: its options, with each metadata filter's
 * value parsed once. */
typedef struct mwant {
    const char *path;
    size_t path_len;
    int op;            /* CAIRN__JPATH_* */
    cJSON *json;       /* the value as JSON, or NULL: plain text */
    const char *text;
} mwant;

typedef struct rfilter {
    const cairn_recall_opts *o;
    const char *const *tags; /* NULL: no tag filter */
    size_t n_tags;
    mwant *w;
    size_t n_where;
    int (*pred)(void *user, const ment *x); /* a caller's own filter, or NULL */
    void *pred_user;
} rfilter;

/* Does the metadata satisfy the tag and metadata filters? Parsed only for
 * a memory every other filter let through. */
static int meta_passes(const ment *x, const rfilter *f)
{
    cJSON *meta = x->metadata ? cJSON_Parse(x->metadata) : NULL;
    int ok = 1;
    if (f->tags != NULL) {
        const cJSON *tags = cJSON_GetObjectItemCaseSensitive(meta, "tags"), *t;
        int found = 0;
        cJSON_ArrayForEach(t, tags)
            for (size_t i = 0; i < f->n_tags && !found && cJSON_IsString(t); i++)
                found = f->tags[i] != NULL && strcmp(f->tags[i], t->valuestring) == 0;
        ok = found;
    }
    for (size_t i = 0; ok && i < f->n_where; i++)
        ok = cairn__jpath_test(cairn__jpath_get(meta, f->w[i].path, f->w[i].path_len),
                               f->w[i].op, f->w[i].json, f->w[i].text, 1);
    cJSON_Delete(meta);
    return ok;
}

static int passes(const ment *x, const rfilter *f, int64_t now)
{
    const cairn_recall_opts *o = f->o;
    if (!x->live || cairn__mem_expired(x, now) || x->importance < o->min_importance)
        return 0;
    if (o->since != 0 && x->created < o->since)
        return 0;
    if (o->until != 0 && x->created > o->until)
        return 0;
    if (o->categories != NULL) {
        size_t i = 0;
        while (i < o->n_categories && strcmp(o->categories[i], x->category) != 0)
            i++;
        if (i == o->n_categories)
            return 0;
    }
    if (f->pred != NULL && !f->pred(f->pred_user, x))
        return 0;
    return (f->tags == NULL && f->n_where == 0) || meta_passes(x, f);
}

static void filter_free(rfilter *f)
{
    for (size_t i = 0; i < f->n_where; i++)
        cJSON_Delete(f->w[i].json);
    free(f->w);
}

/* Check and parse o's metadata filters into f. Errors: CAIRN_EINVAL
 * (cairn__errbuf(m) names the filter), CAIRN_ENOMEM. */
static int filter_init(cairn_mem *m, const cairn_recall_opts *o, rfilter *f)
{
    memset(f, 0, sizeof *f);
    f->o = o;
    f->tags = o->tags;
    f->n_tags = o->n_tags;
    if (o->version < 2 || o->n_where == 0)
        return CAIRN_OK;
    if (o->where == NULL || o->n_where > 64)
        return cairn__mem_fail(m, CAIRN_EINVAL, "where: %s",
                               o->where == NULL ? "n_where > 0 with no filters" : "more than 64 filters");
    if ((f->w = calloc(o->n_where, sizeof *f->w)) == NULL)
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    for (size_t i = 0; i < o->n_where; i++) {
        const cairn_where *w = &o->where[i];
        mwant *t = &f->w[i];
        if (w->path == NULL || w->path[0] == 0 || w->value == NULL ||
            strcspn(w->path, "=<>") != strlen(w->path))
            return cairn__mem_fail(m, CAIRN_EINVAL, "where filter %zu: %s", i + 1,
                                   w->path == NULL || w->path[0] == 0 ? "no path"
                                   : w->value == NULL ? "no value"
                                                      : "a path cannot hold '=', '<' or '>'");
        if (w->op != CAIRN_WHERE_EQ && w->op != CAIRN_WHERE_GE && w->op != CAIRN_WHERE_LE)
            return cairn__mem_fail(m, CAIRN_EINVAL, "where filter %zu: unknown operator %d",
                                   i + 1, (int)w->op);
        t->path = w->path;
        t->path_len = strlen(w->path);
        t->op = w->op == CAIRN_WHERE_GE ? CAIRN__JPATH_GE
                : w->op == CAIRN_WHERE_LE ? CAIRN__JPATH_LE : CAIRN__JPATH_EQ;
        t->text = w->value;
        t->json = cJSON_Parse(w->value);
        f->n_where = i + 1; /* filter_free frees what was parsed, if it fails below */
        if (t->op != CAIRN__JPATH_EQ && !cJSON_IsNumber(t->json))
            return cairn__mem_fail(m, CAIRN_EINVAL, "where filter %zu (%s): '%s' is not a number",
                                   i + 1, w->path, w->value);
    }
    return CAIRN_OK;
}

static int cand_cmp(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->h.score != y->h.score)
        return x->h.score > y->h.score ? -1 : 1;
    return x->x->seq < y->x->seq ? -1 : x->x->seq > y->x->seq;
}

static int push_cand_src(cand **c, size_t *n, size_t *cap, ment *x, double bm25, unsigned src)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        cand *p = realloc(*c, nc * sizeof *p);
        if (p == NULL)
            return CAIRN_ENOMEM;
        *c = p;
        *cap = nc;
    }
    memset(&(*c)[*n], 0, sizeof **c);
    (*c)[*n].x = x;
    (*c)[*n].bm25 = bm25;
    (*c)[*n].source = src;
    (*n)++;
    return CAIRN_OK;
}

static int push_cand(cand **c, size_t *n, size_t *cap, ment *x, double bm25)
{
    return push_cand_src(c, n, cap, x, bm25, CAIRN_SOURCE_LEXICAL);
}

/* Candidates of one namespace: its best BM25 matches that pass the
 * filters, asking the index for more until k pass or none are left. When
 * relevance alone ranks (exact: the order is BM25's, ties by seq) the k
 * best are the answer; else the pool is wider, for importance, recency
 * and access to reorder. */
static int gather_ns(cairn_mem *m, uint32_t nsi, const char *q, size_t k, int only_relevance,
                     int64_t now, const rfilter *f, cand **c, size_t *n, size_t *cap)
{
    size_t want = only_relevance ? k : k * 4 < 64 ? 64 : k * 4;
    for (;;) {
        uint64_t *docs = malloc(want * sizeof *docs);
        double *sc = malloc(want * sizeof *sc);
        size_t got = 0, kept = 0, start = *n;
        cairn__ramidx *xs[MEM_GEN_MAX + 1];
        size_t nx = 0;
        int rc = cairn__mem_index_settle(m);
        if (rc != CAIRN_OK) {
            free(docs);
            free(sc);
            return rc;
        }
        for (size_t g = 0; g < m->ng; g++)
            if (m->ns[nsi].gidx[g] != NULL)
                xs[nx++] = m->ns[nsi].gidx[g];
        xs[nx++] = m->ns[nsi].idx;
        rc = docs && sc ? cairn__ramidx_search_many(xs, nx, (const uint8_t *)q, strlen(q), want,
                                                    docs, sc, &got, NULL)
                        : CAIRN_ENOMEM;
        for (size_t i = 0; rc == CAIRN_OK && i < got; i++) {
            ment *x = cairn__mem_find_seq(m, docs[i]);
            if (x == NULL) /* the index names a memory the rows do not hold */
                rc = CAIRN_ECORRUPT;
            else if (passes(x, f, now)) {
                rc = push_cand(c, n, cap, x, sc[i]);
                kept++;
            }
        }
        free(docs);
        free(sc);
        if (rc != CAIRN_OK || kept >= k || got < want)
            return rc;
        *n = start; /* too few passed: ask for more */
        want *= 4;
    }
}

/* Candidates of one namespace from its vectors: the nearest that pass
 * the filters, asking for more until k pass or none are left. One that
 * BM25 found already (c[first..*n)) gets its similarity added. */
static int gather_vec(cairn_mem *m, uint32_t nsi, const vec_query *vq, size_t k, int64_t now,
                      const rfilter *f, size_t first, cand **c, size_t *n, size_t *cap)
{
    size_t want = k * 4 < 64 ? 64 : k * 4, lex_end = *n;
    for (;;) {
        vec_hit *hs = malloc(want * sizeof *hs);
        size_t got = 0, kept = 0;
        int rc = hs ? cairn__mem_vec_search(m, nsi, vq, want, f->o->approximate, hs, &got) : CAIRN_ENOMEM;
        for (size_t i = 0; rc == CAIRN_OK && i < got; i++) {
            ment *x = cairn__mem_find_seq(m, hs[i].doc);
            size_t j;
            if (x == NULL) { /* the vectors name a memory the rows do not hold */
                rc = CAIRN_ECORRUPT;
                break;
            }
            if (hs[i].score < m->emb.min_similarity || !passes(x, f, now))
                continue; /* no match, or filtered out */
            kept++;
            for (j = first; j < lex_end && (*c)[j].x != x; j++)
                ;
            if (j == lex_end) {
                rc = push_cand_src(c, n, cap, x, 0.0, CAIRN_SOURCE_SEMANTIC);
                j = *n - 1;
            } else {
                (*c)[j].source |= CAIRN_SOURCE_SEMANTIC;
            }
            if (rc == CAIRN_OK)
                (*c)[j].sim = hs[i].score;
        }
        /* done: enough, none left, or the rest are below the floor */
        if (rc != CAIRN_OK || kept >= k || got < want ||
            (got > 0 && hs[got - 1].score < m->emb.min_similarity)) {
            free(hs);
            return rc;
        }
        free(hs);
        /* too few passed: ask for more, forgetting what this side added */
        for (size_t j = first; j < lex_end; j++)
            if ((*c)[j].source & CAIRN_SOURCE_SEMANTIC) {
                (*c)[j].source &= ~CAIRN_SOURCE_SEMANTIC;
                (*c)[j].sim = 0;
            }
        *n = lex_end;
        want *= 4;
    }
}

static int by_bm25(const void *a, const void *b)
{
    const cand *const *x = a, *const *y = b;
    if ((*x)->bm25 != (*y)->bm25)
        return (*x)->bm25 > (*y)->bm25 ? -1 : 1;
    return (*x)->x->seq < (*y)->x->seq ? -1 : (*x)->x->seq > (*y)->x->seq;
}

static int by_sim(const void *a, const void *b)
{
    const cand *const *x = a, *const *y = b;
    if ((*x)->sim != (*y)->sim)
        return (*x)->sim > (*y)->sim ? -1 : 1;
    return (*x)->x->seq < (*y)->x->seq ? -1 : (*x)->x->seq > (*y)->x->seq;
}

/* Each side's rank (1 = best) of the candidates it found, over every
 * namespace searched. Errors: CAIRN_ENOMEM. */
static int rank_sides(cand *c, size_t n)
{
    cand **p = malloc((n ? n : 1) * sizeof *p);
    size_t k = 0;
    if (p == NULL)
        return CAIRN_ENOMEM;
    for (int side = 0; side < 2; side++) {
        unsigned bit = side ? CAIRN_SOURCE_SEMANTIC : CAIRN_SOURCE_LEXICAL;
        k = 0;
        for (size_t i = 0; i < n; i++)
            if (c[i].source & bit)
                p[k++] = &c[i];
        qsort(p, k, sizeof *p, side ? by_sim : by_bm25);
        for (size_t i = 0; i < k; i++) {
            if (side)
                p[i]->srank = (unsigned)(i + 1);
            else
                p[i]->lrank = (unsigned)(i + 1);
        }
    }
    free(p);
    return CAIRN_OK;
}

/* What the fusion normalizes by: the best BM25, the range of similarity
 * over the semantic candidates. */
typedef struct norms {
    double best_bm25, min_sim, max_sim;
    double min_lex;     /* the lowest fusion of a BM25 candidate, 0 if none */
} norms;

/* The relevance before its scaling to 1 (cairn.h, cairn_recall_hit). */
static double fused(const cairn_mem *m, cairn_recall_mode mode, const cand *x, const norms *z)
{
    double sim = x->sim > 0 ? x->sim : 0, span = z->max_sim - z->min_sim, sn;
    if (mode == CAIRN_RECALL_LEXICAL)
        return x->bm25;
    if (mode == CAIRN_RECALL_SEMANTIC)
        return sim;
    if (m->fusion == CAIRN_FUSION_RRF)
        return (x->lrank ? 1.0 / (RRF_K + x->lrank) : 0) +
               (x->srank ? m->w_sem / (RRF_K + x->srank) : 0);
    /* score fusion: BM25 leads, similarity adds up to w_sem; a memory only
     * the vectors found ranks below every BM25 match (README "Hybrid
     * recall": with the built-in embedder that is what measured best). */
    sn = x->srank == 0 && !x->has_sim ? 0 : span > 0 ? (x->sim - z->min_sim) / span : 1;
    if (x->lrank != 0)
        return (1 - m->w_sem) * x->bm25 / z->best_bm25 + m->w_sem * sn;
    return z->min_lex > 0 ? 0.999 * z->min_lex * sn : sn;
}

/* Keep the kept hits (compacting out), append their accesses to ACCESS
 * (any handle, read-only too; a failure to record is no error; none with
 * no_access), and show the new counts in the copies. */
static int record_access(cairn_mem *m, cairn_recall_hit *out, const int *keep, size_t take,
                         int64_t now, int no_access, size_t *kept_n)
{
    uint64_t *seqs = malloc(take * sizeof *seqs);
    size_t n = 0;

    if (seqs == NULL)
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory for recall");
    for (size_t i = 0; i < take; i++) {
        /* by seq, not id: the id would probe every index file's table */
        const ment *x = keep[i] ? cairn__mem_find_seq(m, out[i].mem.seq) : NULL;
        if (x == NULL || !x->live || strcmp(x->id, out[i].mem.id) != 0) {
            free(out[i].mem.ns);
            free(out[i].mem.content);
            free(out[i].mem.category);
            free(out[i].mem.metadata);
            continue;
        }
        out[n] = out[i];
        seqs[n] = out[n].mem.seq;
        n++;
    }
    *kept_n = n;
    if (!no_access && cairn__access_record(m, seqs, n, now) && n > 0) {
        for (size_t i = 0; i < n; i++) {
            const ment *x = cairn__mem_find_seq(m, out[i].mem.seq);
            int64_t last = cairn__access_last(m, x);
            /* the cache reads this recall's own entries at the next look */
            out[i].mem.accessed_at = last > now ? last : now;
            out[i].mem.access_count = cairn__access_count(m, x) + 1;
        }
    }
    free(seqs);
    return CAIRN_OK;
}

int cairn_mem_recall(cairn_mem *m, const char *query, const cairn_recall_opts *o,
                     cairn_recall_hit **hits, size_t *n_hits)
{
    return cairn__mem_recall_pred(m, query, o, NULL, NULL, hits, n_hits);
}

int cairn__mem_recall_pred(cairn_mem *m, const char *query, const cairn_recall_opts *o,
                           int (*pred)(void *user, const ment *x), void *pred_user,
                           cairn_recall_hit **hits, size_t *n_hits)
{
    cairn_recall_opts def = CAIRN_RECALL_OPTS_INIT;
    static const char *const default_ns[] = {""};
    const char *const *nss;
    size_t n_ns, k, n = 0, cap = 0, nterms = 0, take = 0, kept_n = 0;
    cand *c = NULL;
    cairn_recall_hit *out = NULL;
    int *keep = NULL;
    char *rewritten = NULL;
    cairn_mem_hooks hooks = cairn__mem_hooks(m);
    double best_fused = 0, most = 0;
    norms z;
    int64_t now;
    vec_query vq;
    float *qbuf = NULL;
    rfilter flt;
    int rc = CAIRN_OK, use_vec;

    *hits = NULL;
    *n_hits = 0;
    if (o == NULL)
        o = &def;
    if ((rc = cairn__opts_version(m, "cairn_recall_opts", o->version, CAIRN_RECALL_OPTS_VERSION)) != CAIRN_OK)
        return rc;
    memset(&flt, 0, sizeof flt);
    if (query == NULL)
        query = "";
    if (hooks.before_recall != NULL && (rewritten = hooks.before_recall(hooks.user, query)) != NULL)
        query = rewritten;
    k = o->k ? o->k : 5;
    nss = o->ns ? o->ns : default_ns;
    n_ns = o->ns ? o->n_ns : 1;
    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    now = cairn__mem_now(m);
    if ((rc = cairn__mem_catch_up(m)) != CAIRN_OK || (rc = filter_init(m, o, &flt)) != CAIRN_OK)
        goto out;
    flt.pred = pred;
    flt.pred_user = pred_user;
    if (o->min_importance < 0 || o->min_importance > 1 || k > 100000) {
        rc = cairn__mem_fail(m, CAIRN_EINVAL, o->min_importance < 0 || o->min_importance > 1
                                       ? "minImportance must be between 0 and 1"
                                       : "k must be 1..100000");
        goto out;
    }
    /* Access statistics: the folded ones plus what ACCESS holds unfolded,
     * also other processes' recalls. */
    cairn__access_refresh(m);
    (void)cairn__tok_run(m->tok, (const uint8_t *)query, strlen(query), count_term, &nterms);
    /* The semantic side: wanted, and possible? */
    use_vec = o->mode == CAIRN_RECALL_SEMANTIC ||
              (o->mode == CAIRN_RECALL_HYBRID && m->vdim != 0 &&
               (o->query_vector != NULL ||
                (m->emb.dim != 0 && (m->emb.embed != NULL || m->emb.embed_batch != NULL))));
    if (o->mode != CAIRN_RECALL_HYBRID && o->mode != CAIRN_RECALL_LEXICAL &&
        o->mode != CAIRN_RECALL_SEMANTIC) {
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "unknown recall mode %d", (int)o->mode);
        goto out;
    }
    if (use_vec && (rc = cairn__mem_vec_query(m, query, o->query_vector, &vq, &qbuf)) != CAIRN_OK)
        goto out;
    for (size_t i = 0; i < n_ns && rc == CAIRN_OK; i++) {
        long nsi = cairn__mem_ns_index(m, nss[i], strlen(nss[i]), 0);
        size_t first = n;
        if (nsi < 0)
            continue;
        if (o->mode != CAIRN_RECALL_SEMANTIC && nterms > 0) {
            rc = gather_ns(m, (uint32_t)nsi, query, k,
                           !use_vec && m->w_imp == 0 && m->w_rec == 0 && m->w_acc == 0, now, &flt,
                           &c, &n, &cap);
        } else if (o->mode != CAIRN_RECALL_SEMANTIC) {
            rc = cairn__mem_read_all(m);
            for (size_t j = 0; j < cairn__mem_total(m) && rc == CAIRN_OK; j++) {
                ment *x = cairn__mem_at(m, j);
                if (x->nsi == (uint32_t)nsi && passes(x, &flt, now))
                    rc = push_cand(&c, &n, &cap, x, 0.0);
            }
        }
        if (rc == CAIRN_OK && use_vec)
            rc = gather_vec(m, (uint32_t)nsi, &vq, k, now, &flt, first, &c, &n, &cap);
    }
    if (rc != CAIRN_OK) {
        rc = rc == CAIRN_ENOMEM ? cairn__mem_fail(m, rc, "no memory for recall")
                                : cairn__mem_index_damaged(m, rc, "a text or vector index");
        goto out;
    }
    /* Every candidate's similarity, also of those BM25 alone found, so that
     * the fusion compares like with like. */
    for (size_t i = 0; use_vec && i < n && rc == CAIRN_OK; i++)
        if (!(c[i].source & CAIRN_SOURCE_SEMANTIC)) {
            rc = cairn__mem_vec_similarity(m, c[i].x->nsi, c[i].x->seq, &vq, &c[i].sim);
            if (rc == CAIRN_ENOTFOUND)
                rc = CAIRN_OK;
            else if (rc == CAIRN_OK)
                c[i].has_sim = 1;
        }
    if (rc != CAIRN_OK) {
        rc = cairn__mem_index_damaged(m, rc, "a vector index");
        goto out;
    }
    if (rank_sides(c, n) != CAIRN_OK) {
        rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory for recall");
        goto out;
    }
    z.best_bm25 = 0;
    z.min_sim = 2;
    z.max_sim = -2;
    for (size_t i = 0; i < n; i++) {
        if (c[i].bm25 > z.best_bm25)
            z.best_bm25 = c[i].bm25;
        if ((c[i].srank != 0 || c[i].has_sim) && c[i].sim > z.max_sim)
            z.max_sim = c[i].sim;
        if ((c[i].srank != 0 || c[i].has_sim) && c[i].sim < z.min_sim)
            z.min_sim = c[i].sim;
        if ((double)cairn__access_count(m, c[i].x) > most)
            most = (double)cairn__access_count(m, c[i].x);
    }
    z.min_lex = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i].lrank != 0) {
            double f = fused(m, use_vec ? o->mode : CAIRN_RECALL_LEXICAL, &c[i], &z);
            if (z.min_lex == 0 || f < z.min_lex)
                z.min_lex = f;
        }
    for (size_t i = 0; i < n; i++) {
        double f = fused(m, use_vec ? o->mode : CAIRN_RECALL_LEXICAL, &c[i], &z);
        if (f > best_fused)
            best_fused = f;
    }
    for (size_t i = 0; i < n; i++) {
        cairn_recall_hit *h = &c[i].h;
        const ment *x = c[i].x;
        double since_create = (double)(now - x->created) / DAY_MS;
        double f = fused(m, use_vec ? o->mode : CAIRN_RECALL_LEXICAL, &c[i], &z);
        h->bm25 = c[i].bm25;
        h->similarity = c[i].sim;
        h->lexical_rank = c[i].lrank;
        h->semantic_rank = c[i].srank;
        h->source = c[i].source;
        h->relevance = best_fused > 0 ? f / best_fused : 0.0;
        h->importance = cairn__mem_decayed(m, x, now);
        h->recency = pow(0.5, (since_create > 0 ? since_create : 0) / m->half_life);
        h->access = most > 0 ? log1p((double)cairn__access_count(m, x)) / log1p(most) : 0.0;
        h->score = m->w_rel * h->relevance + m->w_imp * h->importance + m->w_rec * h->recency +
                   m->w_acc * h->access;
    }
    if (n > 1)
        qsort(c, n, sizeof *c, cand_cmp);
    take = n < k ? n : k;
    if (take == 0)
        goto out;
    out = calloc(take, sizeof *out);
    keep = malloc(take * sizeof *keep);
    if (out == NULL || keep == NULL) {
        rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory for recall");
        goto out;
    }
    for (size_t i = 0; i < take; i++) {
        out[i] = c[i].h;
        keep[i] = 1;
        if ((rc = cairn__mem_copy_out(m, c[i].x, &out[i].mem)) != CAIRN_OK) {
            cairn_recall_free(out, i);
            out = NULL;
            goto out; /* the message is m's: no memory, or a content that did not read */
        }
    }
    /* afterRecall may drop hits: it runs unlocked, so what it keeps is
     * looked up again before it is counted as accessed. */
    if (hooks.after_recall != NULL) {
        pthread_mutex_unlock(&m->mu);
        hooks.after_recall(hooks.user, out, take, keep);
        pthread_mutex_lock(&m->mu);
    }
    /* an access happens now, whatever the handle's clock */
    rc = record_access(m, out, keep, take, cairn__mem_wall_ms(), o->no_access, &kept_n);
    if (rc != CAIRN_OK) {
        take = kept_n; /* what is left in out after compaction */
        goto out;
    }
    *hits = out;
    *n_hits = kept_n;
    out = NULL;
out:
    filter_free(&flt);
    free(c);
    free(qbuf);
    free(keep);
    if (out != NULL)
        cairn_recall_free(out, take);
    pthread_mutex_unlock(&m->mu);
    free(rewritten);
    if (rc == CAIRN_OK && *n_hits > 0) {
        cairn_mem_event ev;
        memset(&ev, 0, sizeof ev);
        ev.kind = CAIRN_EVENT_RECALLED;
        ev.hits = *hits;
        ev.n_hits = *n_hits;
        cairn__mem_emit(m, &ev);
    }
    return rc;
}
