/*
 * memvec.c - the memory engine's vectors: the embedder a handle uses, the
 * one the store's vectors come from, the built-in embedder behind the
 * public API, and the search of a namespace's vectors (its mapped set and
 * the set of memories stored after the index file, searched as one).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn.h"
#include "hashembed.h"
#include "memstate.h"
#include "ivf.h"
#include "memvec.h"
#include "utf8.h"

static int name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    /* stored with every vector and exported: text by the one rule (utf8.h) */
    return n >= 1 && n <= CAIRN_EMBEDDER_NAME_MAX && cairn__utf8_bad(s, n, NULL) == n;
}

int cairn__mem_vec_compatible(cairn_mem *m, const char *name, uint32_t dim)
{
    if (m->vdim == 0 || (m->vdim == dim && strcmp(m->vname, name) == 0))
        return CAIRN_OK;
    return cairn__mem_fail(m, CAIRN_EINVAL,
                           "the store's vectors come from embedder \"%s\" (%u dimensions), not "
                           "\"%s\" (%u): vectors of two embedders are never mixed",
                           m->vname, m->vdim, name, dim);
}

int cairn_mem_set_embedder(cairn_mem *m, const cairn_embedder *e)
{
    int rc = CAIRN_OK;
    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    m->emb_gen++;
    if (e == NULL) {
        memset(&m->emb, 0, sizeof m->emb);
    } else if (!name_ok(e->name) || e->dim == 0 || e->dim > VEC_DIM_MAX) {
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "an embedder needs a name of 1..%d bytes of UTF-8 "
                             "and 1..%u dimensions", CAIRN_EMBEDDER_NAME_MAX, VEC_DIM_MAX);
    } else if ((rc = cairn__mem_vec_compatible(m, e->name, e->dim)) == CAIRN_OK) {
        m->emb = *e;
        snprintf(m->emb_name, sizeof m->emb_name, "%s", e->name);
        m->emb.name = m->emb_name;
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

void cairn_mem_vectors(cairn_mem *m, char *name, uint32_t *dim, uint64_t *vectors)
{
    uint64_t n = 0;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->nns; i++) {
        if (m->ns[i].vec != NULL)
            n += cairn__vecset_live(m->ns[i].vec);
        for (size_t g = 0; g < m->ng; g++)
            if (m->ns[i].gvec[g] != NULL)
                n += cairn__vecset_live(m->ns[i].gvec[g]);
    }
    if (name != NULL)
        strcpy(name, m->vname);
    if (dim != NULL)
        *dim = m->vdim;
    if (vectors != NULL)
        *vectors = n;
    pthread_mutex_unlock(&m->mu);
}

int cairn__mem_embed(cairn_mem *m, const char *const *texts, const size_t *lens, size_t n,
                     float *out)
{
    char err[CAIRN_ERRMSG_MAX];
    size_t d = m->emb.dim;
    int r = 0;

    if (m->emb.embed == NULL && m->emb.embed_batch == NULL)
        return cairn__mem_fail(m, CAIRN_EUNAVAIL, "no embedder: vectors must be given with the call");
    err[0] = 0;
    if (m->emb.embed_batch != NULL)
        r = m->emb.embed_batch(m->emb.user, texts, lens, n, out, err);
    else
        for (size_t i = 0; i < n && r == 0; i++)
            r = m->emb.embed(m->emb.user, texts[i], lens[i], out + i * d, err);
    if (r != 0) {
        err[sizeof err - 1] = 0;
        return cairn__mem_fail(m, CAIRN_EIO, "embedder \"%s\" failed: %s", m->emb.name,
                               err[0] ? err : "no reason given");
    }
    for (size_t i = 0; i < n * d; i++)
        if (!isfinite(out[i]))
            return cairn__mem_fail(m, CAIRN_EINVAL, "embedder \"%s\" gave a value that is not "
                                   "finite (text %zu, value %zu)", m->emb.name, i / d, i % d);
    return CAIRN_OK;
}

/* ---- the built-in embedder --------------------------------------------- */

static int hash_embed(void *user, const char *text, size_t len, float *out, char *err)
{
    if (cairn__hashembed_run(user, text, len, out) != CAIRN_OK) {
        snprintf(err, CAIRN_ERRMSG_MAX, "no memory");
        return 1;
    }
    return 0;
}

int cairn_hash_embedder(cairn_embedder *out, uint32_t dim)
{
    cairn__hashembed *h = NULL;
    int rc;
    memset(out, 0, sizeof *out);
    rc = cairn__hashembed_new(&h, NULL, dim ? dim : HASHEMBED_DIM_DEFAULT);
    if (rc != CAIRN_OK)
        return rc;
    out->name = HASHEMBED_ID;
    out->dim = (uint32_t)cairn__hashembed_dim(h);
    out->user = h;
    out->embed = hash_embed;
    out->min_similarity = HASHEMBED_MIN_SIMILARITY;
    return CAIRN_OK;
}

void cairn_hash_embedder_free(cairn_embedder *e)
{
    if (e == NULL)
        return;
    if (e->embed == hash_embed)
        cairn__hashembed_free(e->user);
    memset(e, 0, sizeof *e);
}

/* ---- searching ------------------------------------------------------------ */

int cairn__mem_vec_query(cairn_mem *m, const char *text, const float *given, vec_query *vq,
                         float **buf)
{
    size_t len = strlen(text), d = m->vdim;
    float *v;
    int rc;

    *buf = NULL;
    if (m->vdim == 0)
        return cairn__mem_fail(m, CAIRN_EUNAVAIL, "no vectors are stored yet");
    if (given == NULL && (m->emb.dim == 0 || (m->emb.embed == NULL && m->emb.embed_batch == NULL)))
        return cairn__mem_fail(m, CAIRN_EUNAVAIL, "no embedder for the query");
    if ((rc = cairn__mem_vec_compatible(m, m->emb.dim ? m->emb.name : m->vname,
                                        m->emb.dim ? m->emb.dim : m->vdim)) != CAIRN_OK)
        return rc;
    /* one buffer: the raw vector, the unit query, the int8 query */
    v = malloc(d * 2 * sizeof *v + d);
    if (v == NULL)
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    if (given != NULL)
        memcpy(v, given, d * sizeof *v);
    else if ((rc = cairn__mem_embed(m, &text, &len, 1, v)) != CAIRN_OK) {
        free(v);
        return rc;
    }
    cairn__vec_query_make(vq, v, d, v + d, (int8_t *)(v + 2 * d));
    *buf = v;
    return CAIRN_OK;
}

/* Higher score first, then the lower doc (the older memory). */
static int hit_cmp(const void *a, const void *b)
{
    const vec_hit *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->doc < y->doc ? -1 : x->doc > y->doc;
}

/* The approximate index of namespace nsi's mapped vectors, built on first
 * use (the mapping never changes under it; deletes after it are in the
 * set's live bitmap, which the search reads). */
static int ivf_of(cairn_mem *m, uint32_t nsi, cairn__ivf **out, const uint8_t **live,
                  const uint64_t **docs)
{
    nspace *p = &m->ns[nsi];
    const float *f32;
    size_t n;
    int rc = cairn__vecset_rows(p->gvec[0], &f32, docs, live, &n);
    *out = NULL;
    if (rc != CAIRN_OK || n == 0)
        return rc;
    if (p->ivf == NULL) {
        ivf_rows in;
        if ((p->ivf_rows = malloc(n * sizeof *p->ivf_rows)) == NULL)
            return CAIRN_ENOMEM;
        for (size_t i = 0; i < n; i++)
            p->ivf_rows[i] = f32 + i * m->vdim;
        in.n = n;
        in.dim = m->vdim;
        in.rows = p->ivf_rows;
        rc = cairn__ivf_build(&p->ivf, m->kern, &in, 0, 0x697666ull + nsi);
        if (rc != CAIRN_OK) {
            free(p->ivf_rows);
            p->ivf_rows = NULL;
            return rc;
        }
    }
    *out = p->ivf;
    return CAIRN_OK;
}

int cairn__mem_vec_search(cairn_mem *m, uint32_t nsi, const vec_query *vq, size_t k,
                          size_t nprobe, vec_hit *out, size_t *n_out)
{
    cairn__vecset *sets[MEM_GEN_MAX + 1];
    size_t ns = 0, n = 0;
    vec_hit *tmp;
    int rc = CAIRN_OK;

    *n_out = 0;
    for (size_t g = 0; g < m->ng; g++)
        if (m->ns[nsi].gvec[g] != NULL)
            sets[ns++] = m->ns[nsi].gvec[g];
    if (m->ns[nsi].vec != NULL)
        sets[ns++] = m->ns[nsi].vec;
    if (ns == 0 || k == 0)
        return CAIRN_OK;
    tmp = malloc(ns * k * sizeof *tmp);
    if (tmp == NULL)
        return CAIRN_ENOMEM;
    for (size_t i = 0; i < ns && rc == CAIRN_OK; i++) {
        size_t got = 0;
        cairn__ivf *ivf = NULL;
        const uint8_t *live = NULL;
        const uint64_t *docs = NULL;
        if (nprobe > 0 && sets[i] == m->ns[nsi].gvec[0] &&
            (rc = ivf_of(m, nsi, &ivf, &live, &docs)) != CAIRN_OK)
            break;
        if (ivf != NULL) {
            rc = cairn__ivf_search(ivf, m->kern, vq, k, nprobe, live, tmp + n, &got);
            for (size_t j = 0; j < got; j++)
                tmp[n + j].doc = docs[tmp[n + j].doc]; /* row -> the memory's seq */
        } else {
            rc = cairn__vecset_search(sets[i], m->kern, vq, k, 0, tmp + n, &got);
        }
        n += got;
    }
    if (rc == CAIRN_OK) {
        if (ns >= 2)
            qsort(tmp, n, sizeof *tmp, hit_cmp);
        n = n < k ? n : k;
        memcpy(out, tmp, n * sizeof *out);
        *n_out = n;
    }
    free(tmp);
    return rc;
}

int cairn__mem_vec_get(cairn_mem *m, uint32_t nsi, uint64_t seq, const float **row)
{
    long g = cairn__mem_gen_of(m, seq);
    cairn__vecset *s = g >= 0 ? m->ns[nsi].gvec[g] : m->ns[nsi].vec;
    *row = NULL;
    return s != NULL ? cairn__vecset_get(s, seq, row) : CAIRN_OK;
}

int cairn__mem_vec_similarity(cairn_mem *m, uint32_t nsi, uint64_t seq, const vec_query *vq,
                              double *sim)
{
    const float *row = NULL;
    int rc = cairn__mem_vec_get(m, nsi, seq, &row);
    *sim = 0;
    if (rc != CAIRN_OK || row == NULL)
        return rc == CAIRN_OK ? CAIRN_ENOTFOUND : rc;
    *sim = m->kern->dot_f32(vq->q, row, vq->dim);
    return CAIRN_OK;
}
