/*
 * test_memvec.c - memories with vectors (engine/memory/memvec.c,
 * engine/vec/vecset.c): the embedder identity and its mismatches, hybrid
 * and semantic recall with their Source bits, deletes through the live
 * bitmap, a failing embedder that stores nothing, persistence across
 * reopen, the index file and sealing, and the vector image's checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cairn.h"
#include "store.h"
#include "testutil.h"
#include "vecset.h"

typedef struct fx {
    char *dir;
    cairn_db *db;
    cairn_mem *mem;
    cairn_embedder emb;
} fx;

static void open_all(fx *f)
{
    char err[CAIRN_ERRMSG_MAX] = "";
    if (tu_open_small(f->dir, 0, &f->db, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    assert_int_equal(cairn_mem_open(f->db, NULL, &f->mem), CAIRN_OK);
    assert_int_equal(cairn_mem_set_embedder(f->mem, &f->emb), CAIRN_OK);
}

static void close_all(fx *f)
{
    cairn_mem_close(f->mem);
    f->mem = NULL;
    assert_int_equal(cairn_close(f->db), CAIRN_OK);
    f->db = NULL;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    char *d = tu_mkdtemp("memvec");
    if (f == NULL || d == NULL)
        return -1;
    f->dir = tu_join(d, "store");
    free(d);
    if (cairn_hash_embedder(&f->emb, 0) != CAIRN_OK)
        return -1;
    open_all(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    if (f->mem != NULL || f->db != NULL)
        close_all(f);
    cairn_hash_embedder_free(&f->emb);
    tu_rmrf(f->dir);
    *strrchr(f->dir, '/') = 0; /* and the directory made for it */
    rmdir(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void store(fx *f, const char *content, char *id_out)
{
    cairn_memory *m = NULL;
    int rc = cairn_mem_store(f->mem, content, NULL, &m, NULL);
    if (rc != CAIRN_OK)
        fail_msg("store: %s", cairn_mem_errmsg(f->mem));
    if (id_out != NULL)
        strcpy(id_out, m->id);
    cairn_mem_free(m);
}

static const char *const corpus[] = {
    "the deployment pipeline failed because the database migration timed out",
    "we decided to use a canary release before every production deploy",
    "Caroline went to the LGBTQ support group on Tuesday",
    "the team prefers tabs over spaces in the Makefile",
    "remember to rotate the API keys every ninety days",
    "Melanie painted a sunrise over the lake last summer",
};
#define NCORPUS (sizeof corpus / sizeof corpus[0])

static size_t recall(fx *f, const char *q, cairn_recall_mode mode, size_t k, cairn_recall_hit **hits)
{
    cairn_recall_opts o = CAIRN_RECALL_OPTS_INIT;
    size_t n = 0;
    o.k = k;
    o.mode = mode;
    if (cairn_mem_recall(f->mem, q, &o, hits, &n) != CAIRN_OK)
        fail_msg("recall \"%s\": %s", q, cairn_mem_errmsg(f->mem));
    return n;
}

/* Every memory stored with an embedder carries a vector of it. */
static void stored_memories_carry_the_embedders_vectors(void **state)
{
    fx *f = *state;
    char name[CAIRN_EMBEDDER_NAME_MAX + 1];
    uint32_t dim = 0;
    uint64_t n = 0;
    cairn_mem_vectors(f->mem, name, &dim, &n);
    assert_int_equal(dim, 0);
    assert_int_equal(n, 0);
    for (size_t i = 0; i < NCORPUS; i++)
        store(f, corpus[i], NULL);
    cairn_mem_vectors(f->mem, name, &dim, &n);
    assert_string_equal(name, "cairn-hash-v1");
    assert_int_equal(dim, 384);
    assert_int_equal(n, NCORPUS);
}

/* A misspelled query BM25 cannot match is found by its vector, and the
 * hit says the semantic side found it. */
static void semantic_recall_finds_what_bm25_misses(void **state)
{
    fx *f = *state;
    cairn_recall_hit *h = NULL;
    size_t n;
    for (size_t i = 0; i < NCORPUS; i++)
        store(f, corpus[i], NULL);
    n = recall(f, "deploymnet pipline", CAIRN_RECALL_LEXICAL, 3, &h);
    assert_int_equal(n, 0);
    cairn_recall_free(h, n);
    n = recall(f, "deploymnet pipline", CAIRN_RECALL_SEMANTIC, 3, &h);
    assert_true(n >= 1);
    assert_string_equal(h[0].mem.content, corpus[0]);
    assert_int_equal(h[0].source, CAIRN_SOURCE_SEMANTIC);
    assert_int_equal(h[0].semantic_rank, 1);
    assert_true(h[0].similarity > 0.2 && h[0].similarity <= 1.0);
    cairn_recall_free(h, n);
    /* hybrid: the same memory first, found by the vectors */
    n = recall(f, "deploymnet pipline", CAIRN_RECALL_HYBRID, 3, &h);
    assert_true(n >= 1);
    assert_string_equal(h[0].mem.content, corpus[0]);
    assert_true(h[0].source & CAIRN_SOURCE_SEMANTIC);
    cairn_recall_free(h, n);
    /* an exact query: both sides find it */
    n = recall(f, "canary release", CAIRN_RECALL_HYBRID, 3, &h);
    assert_true(n >= 1);
    assert_string_equal(h[0].mem.content, corpus[1]);
    assert_int_equal(h[0].source, CAIRN_SOURCE_LEXICAL | CAIRN_SOURCE_SEMANTIC);
    assert_int_equal(h[0].lexical_rank, 1);
    assert_int_equal(h[0].semantic_rank, 1);
    assert_true(h[0].bm25 > 0);
    cairn_recall_free(h, n);
}

/* Another embedder, or another dimension, is refused once vectors exist;
 * before, any may be set. */
static void another_embedder_or_dimension_is_refused(void **state)
{
    fx *f = *state;
    cairn_embedder other = f->emb, small;
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    float v[384];
    other.name = "some-other-model";
    assert_int_equal(cairn_mem_set_embedder(f->mem, &other), CAIRN_OK); /* no vectors yet */
    assert_int_equal(cairn_mem_set_embedder(f->mem, &f->emb), CAIRN_OK);
    store(f, corpus[0], NULL);
    assert_int_equal(cairn_mem_set_embedder(f->mem, &other), CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "cairn-hash-v1"));
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "some-other-model"));
    assert_int_equal(cairn_hash_embedder(&small, 64), CAIRN_OK);
    assert_int_equal(cairn_mem_set_embedder(f->mem, &small), CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "64"));
    cairn_hash_embedder_free(&small);
    /* a caller's vector must come from the set embedder: a non-finite one is refused */
    for (int i = 0; i < 384; i++)
        v[i] = (float)i;
    v[7] = NAN;
    so.vector = v;
    assert_int_equal(cairn_mem_store(f->mem, "a vector with a NaN", &so, NULL, NULL), CAIRN_EINVAL);
    /* the refusals stored nothing */
    {
        uint64_t n = 0;
        cairn_mem_vectors(f->mem, NULL, NULL, &n);
        assert_int_equal(n, 1);
    }
}

/* A log record whose vector comes from another embedder is skipped at
 * replay, never mixed in. */
static void a_foreign_vector_in_the_log_is_skipped(void **state)
{
    fx *f = *state;
    cairn_entry e;
    float v[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    const char *json = "{\"id\":\"mforeign\",\"content\":\"foreign vector\",\"category\":\"fact\","
                       "\"embedder\":\"other\",\"dim\":8}";
    uint64_t n = 0;
    store(f, corpus[0], NULL);
    memset(&e, 0, sizeof e);
    e.type = CAIRN_REC_MEMORY;
    e.json = json;
    e.json_len = strlen(json);
    e.bin = v;
    e.bin_len = sizeof v;
    assert_int_equal(cairn_append(f->db, &e, NULL), CAIRN_OK);
    close_all(f);
    open_all(f);
    cairn_mem_vectors(f->mem, NULL, NULL, &n);
    assert_int_equal(n, 1);
    assert_int_equal(cairn_mem_skipped(f->mem), 1);
}

/* Deleted memories never come back from the vectors, before and after
 * the index file. */
static void deleted_memories_leave_the_semantic_results(void **state)
{
    fx *f = *state;
    char id0[CAIRN_MEM_ID_MAX + 1], id1[CAIRN_MEM_ID_MAX + 1];
    cairn_recall_hit *h = NULL;
    size_t n;
    f->emb.min_similarity = -2; /* every memory is a semantic match */
    assert_int_equal(cairn_mem_set_embedder(f->mem, &f->emb), CAIRN_OK);
    store(f, corpus[0], id0);
    store(f, corpus[1], id1);
    for (size_t i = 2; i < NCORPUS; i++)
        store(f, corpus[i], NULL);
    assert_int_equal(cairn_mem_delete(f->mem, id0, "test"), CAIRN_OK);
    n = recall(f, "deployment pipeline", CAIRN_RECALL_SEMANTIC, 10, &h);
    for (size_t i = 0; i < n; i++)
        assert_string_not_equal(h[i].mem.id, id0);
    cairn_recall_free(h, n);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    assert_int_equal(cairn_mem_delete(f->mem, id1, "test"), CAIRN_OK); /* a mapped row */
    n = recall(f, "canary release deploy", CAIRN_RECALL_SEMANTIC, 10, &h);
    assert_int_equal(n, NCORPUS - 2);
    for (size_t i = 0; i < n; i++) {
        assert_string_not_equal(h[i].mem.id, id0);
        assert_string_not_equal(h[i].mem.id, id1);
    }
    cairn_recall_free(h, n);
}

static int failing_embed(void *user, const char *text, size_t len, float *out, char *err)
{
    (void)user;
    (void)text;
    (void)len;
    (void)out;
    snprintf(err, CAIRN_ERRMSG_MAX, "model server refused the connection");
    return 1;
}

/* An embedder that fails stores nothing, and says why. */
static void a_failing_embedder_stores_nothing(void **state)
{
    fx *f = *state;
    cairn_embedder bad = {"broken-model", 16, NULL, failing_embed, NULL, 0};
    cairn_stats st0, st1;
    cairn_recall_hit *h = NULL;
    size_t n;
    assert_int_equal(cairn_stats_get(f->db, &st0), CAIRN_OK);
    assert_int_equal(cairn_mem_set_embedder(f->mem, &bad), CAIRN_OK);
    assert_int_equal(cairn_mem_store(f->mem, "never stored", NULL, NULL, NULL), CAIRN_EIO);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "model server refused"));
    assert_int_equal(cairn_stats_get(f->db, &st1), CAIRN_OK);
    assert_int_equal(st1.records, st0.records);
    assert_int_equal(cairn_mem_set_embedder(f->mem, NULL), CAIRN_OK);
    n = recall(f, "never stored", CAIRN_RECALL_LEXICAL, 5, &h);
    assert_int_equal(n, 0);
    cairn_recall_free(h, n);
}

/* An import is embedded in one batch; a failing embedder imports nothing. */
static void imports_are_embedded_or_not_imported_at_all(void **state)
{
    fx *f = *state;
    cairn_embedder bad = {"cairn-hash-v1", 384, NULL, failing_embed, NULL, 0};
    const char *data = "[{\"content\":\"the deployment pipeline failed\"},"
                       "{\"content\":\"Melanie painted a sunrise\"}]";
    uint64_t imported = 0, skipped = 0, n = 0;
    assert_int_equal(cairn_mem_set_embedder(f->mem, &bad), CAIRN_OK);
    assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSON, data, strlen(data), NULL, &imported,
                                      &skipped),
                     CAIRN_EIO);
    assert_int_equal(imported, 0);
    cairn_mem_vectors(f->mem, NULL, NULL, &n);
    assert_int_equal(n, 0);
    assert_int_equal(cairn_mem_set_embedder(f->mem, &f->emb), CAIRN_OK);
    assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSON, data, strlen(data), NULL, &imported,
                                      &skipped),
                     CAIRN_OK);
    assert_int_equal(imported, 2);
    cairn_mem_vectors(f->mem, NULL, NULL, &n);
    assert_int_equal(n, 2);
}

/* JSON export carries the vectors; an import into a store without an
 * embedder restores them (no re-embedding), and exports the same again. */
static void export_and_import_carry_the_vectors(void **state)
{
    fx *f = *state;
    char *out = NULL, *out2 = NULL, *dir2 = tu_join(f->dir, "restored");
    size_t len = 0, len2 = 0, n;
    uint64_t imported = 0, nv = 0;
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX];
    cairn_db *db2 = NULL;
    cairn_mem *m2 = NULL;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    cairn_recall_hit *h = NULL;
    float qv[384];
    for (size_t i = 0; i < NCORPUS; i++)
        store(f, corpus[i], NULL);
    assert_int_equal(cairn_mem_export(f->mem, CAIRN_MEM_JSON, &out, &len), CAIRN_OK);
    assert_non_null(strstr(out, "\"embedder\":\t\"cairn-hash-v1\""));
    assert_non_null(strstr(out, "\"embedding\""));
    o.create = 1;
    o.background = 0;
    assert_int_equal(cairn_open(&db2, dir2, &o, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_mem_open(db2, NULL, &m2), CAIRN_OK); /* no embedder */
    assert_int_equal(cairn_mem_import(m2, CAIRN_MEM_JSON, out, len, NULL, &imported, NULL), CAIRN_OK);
    assert_int_equal(imported, NCORPUS);
    cairn_mem_vectors(m2, NULL, NULL, &nv);
    assert_int_equal(nv, NCORPUS);
    assert_int_equal(cairn_mem_export(m2, CAIRN_MEM_JSON, &out2, &len2), CAIRN_OK);
    assert_int_equal(len2, len);
    assert_memory_equal(out2, out, len);
    /* searchable by a caller's vector, with no embedder on this handle */
    assert_int_equal(f->emb.embed(f->emb.user, "deploymnet pipline", 18, qv, err), 0);
    ro.mode = CAIRN_RECALL_SEMANTIC;
    ro.query_vector = qv;
    assert_int_equal(cairn_mem_recall(m2, "deploymnet pipline", &ro, &h, &n), CAIRN_OK);
    assert_true(n >= 1);
    assert_string_equal(h[0].mem.content, corpus[0]);
    cairn_recall_free(h, n);
    /* an embedding without its embedder, or of another length, is refused whole */
    {
        const char *bad = "[{\"content\":\"a\",\"embedding\":[1,2]}]";
        const char *mixed = "[{\"content\":\"b\",\"embedder\":\"cairn-hash-v1\",\"embedding\":[1,2]}]";
        assert_int_equal(cairn_mem_import(m2, CAIRN_MEM_JSON, bad, strlen(bad), NULL, &imported, NULL),
                         CAIRN_EINVAL);
        assert_int_equal(cairn_mem_import(m2, CAIRN_MEM_JSON, mixed, strlen(mixed), NULL, &imported,
                                          NULL),
                         CAIRN_EINVAL);
        assert_non_null(strstr(cairn_mem_errmsg(m2), "never mixed"));
    }
    cairn_mem_close(m2);
    assert_int_equal(cairn_close(db2), CAIRN_OK);
    free(out);
    free(out2);
    free(dir2);
}

/* Semantic recall needs an embedder and vectors: CAIRN_EUNAVAIL without. */
static void semantic_recall_without_an_embedder_is_unavailable(void **state)
{
    fx *f = *state;
    cairn_recall_opts o = CAIRN_RECALL_OPTS_INIT;
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    o.mode = CAIRN_RECALL_SEMANTIC;
    /* no vectors yet */
    assert_int_equal(cairn_mem_recall(f->mem, "x", &o, &h, &n), CAIRN_EUNAVAIL);
    store(f, corpus[0], NULL);
    assert_int_equal(cairn_mem_set_embedder(f->mem, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_recall(f->mem, "deploy", &o, &h, &n), CAIRN_EUNAVAIL);
    /* hybrid falls back to BM25 alone */
    o.mode = CAIRN_RECALL_HYBRID;
    assert_int_equal(cairn_mem_recall(f->mem, "deployment", &o, &h, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    assert_int_equal(h[0].source, CAIRN_SOURCE_LEXICAL);
    cairn_recall_free(h, n);
}

/* The same answers after a reopen (replay), after the index file (mapped
 * vectors), and after the segments are sealed. */
static void vectors_persist_across_reopen_index_file_and_sealing(void **state)
{
    fx *f = *state;
    cairn_recall_hit *h = NULL;
    char want[NCORPUS][CAIRN_MEM_ID_MAX + 1];
    double sims[NCORPUS];
    size_t n, n0;
    for (int round = 0; round < 40; round++) /* enough to roll 4 KiB segments */
        for (size_t i = 0; i < NCORPUS; i++) {
            char text[256];
            snprintf(text, sizeof text, "%s (round %d)", corpus[i], round);
            store(f, text, NULL);
        }
    n0 = recall(f, "deploymnet migraton", CAIRN_RECALL_SEMANTIC, NCORPUS, &h);
    assert_int_equal(n0, NCORPUS);
    for (size_t i = 0; i < n0; i++) {
        strcpy(want[i], h[i].mem.id);
        sims[i] = h[i].similarity;
    }
    cairn_recall_free(h, n0);
    for (int step = 0; step < 3; step++) {
        if (step == 1)
            assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
        if (step == 2) {
            assert_int_equal(cairn_roll(f->db), CAIRN_OK);
            assert_int_equal(cairn_seal(f->db), CAIRN_OK);
        }
        close_all(f);
        open_all(f);
        if (step == 1) {
            cairn_mem_stats st;
            assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
            assert_true(st.index_rows == 40 * NCORPUS);
            assert_int_equal(st.unindexed, 0);
            cairn_mem_stats_free(&st);
        }
        n = recall(f, "deploymnet migraton", CAIRN_RECALL_SEMANTIC, NCORPUS, &h);
        assert_int_equal(n, NCORPUS);
        for (size_t i = 0; i < n; i++) {
            assert_string_equal(h[i].mem.id, want[i]);
            assert_float_equal(h[i].similarity, sims[i], 1e-6);
        }
        cairn_recall_free(h, n);
    }
}

/* Score fusion (the default): a memory only the vectors found ranks below
 * every BM25 match, and BM25's order among its matches stands. */
static void hybrid_keeps_bm25_order_and_adds_vector_matches_after(void **state)
{
    fx *f = *state;
    cairn_recall_hit *lex = NULL, *hyb = NULL;
    size_t nl, nh, first_sem = (size_t)-1;
    store(f, "the deploy script failed", NULL);
    store(f, "deploy on fridays needs two reviewers", NULL);
    store(f, "the billing deplyoment is frozen", NULL); /* misspelled: BM25 misses it */
    store(f, "lunch is at noon", NULL);
    nl = recall(f, "deployment", CAIRN_RECALL_LEXICAL, 10, &lex);
    nh = recall(f, "deployment", CAIRN_RECALL_HYBRID, 10, &hyb);
    assert_true(nl >= 2);
    assert_true(nh > nl); /* the vectors added at least one */
    for (size_t i = 0; i < nl; i++)
        assert_string_equal(hyb[i].mem.id, lex[i].mem.id);
    for (size_t i = 0; i < nh; i++) {
        if (!(hyb[i].source & CAIRN_SOURCE_LEXICAL) && first_sem == (size_t)-1)
            first_sem = i;
        if (first_sem != (size_t)-1)
            assert_int_equal(hyb[i].source, CAIRN_SOURCE_SEMANTIC);
        assert_string_not_equal(hyb[i].mem.content, "lunch is at noon"); /* below the floor */
    }
    assert_int_equal(first_sem, nl);
    cairn_recall_free(lex, nl);
    cairn_recall_free(hyb, nh);
}

/* An external embedder's answer: an array of finite numbers, nothing else. */
static void parse_vector_takes_arrays_of_finite_numbers_only(void **state)
{
    float v[4];
    size_t n = 9;
    char err[128];
    (void)state;
    assert_int_equal(cairn_parse_vector("[1, -2.5, 3e-2]", 15, v, 4, &n, err, sizeof err), CAIRN_OK);
    assert_int_equal(n, 3);
    assert_true(v[0] == 1.0f && v[1] == -2.5f && v[2] == 3e-2f);
    assert_int_equal(cairn_parse_vector("[1,2,3,4,5]", 11, v, 4, &n, err, sizeof err), CAIRN_EINVAL);
    assert_non_null(strstr(err, "more than 4"));
    assert_int_equal(n, 0);
    assert_int_equal(cairn_parse_vector("[1,\"a\"]", 7, v, 4, &n, err, sizeof err), CAIRN_EINVAL);
    assert_non_null(strstr(err, "value 1 is not a number"));
    assert_int_equal(cairn_parse_vector("[1e39]", 6, v, 4, &n, err, sizeof err), CAIRN_EINVAL);
    assert_non_null(strstr(err, "finite"));
    assert_int_equal(cairn_parse_vector("[]", 2, v, 4, &n, err, sizeof err), CAIRN_EINVAL);
    assert_int_equal(cairn_parse_vector("{\"v\":[1]}", 9, v, 4, &n, err, sizeof err), CAIRN_EINVAL);
    assert_int_equal(cairn_parse_vector("[1,2", 4, v, 4, &n, err, sizeof err), CAIRN_EINVAL);
}

/* Only white space may follow the array: an answer with more after it (a
 * word, a second array, a NUL) is refused, not read up to its first value. */
static void parse_vector_refuses_text_after_the_array(void **state)
{
    static const char *const bad[] = {"[1,2] x", "[1,2][3]", "[1,2],", "[1,2] \t{}"};
    float v[4];
    size_t n = 9;
    char err[128];
    (void)state;
    assert_int_equal(cairn_parse_vector(" [1,2] \t\r\n", 10, v, 4, &n, err, sizeof err), CAIRN_OK);
    assert_int_equal(n, 2);
    assert_true(v[0] == 1.0f && v[1] == 2.0f);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = 9;
        err[0] = 0;
        assert_int_equal(cairn_parse_vector(bad[i], strlen(bad[i]), v, 4, &n, err, sizeof err),
                         CAIRN_EINVAL);
        assert_int_equal(n, 0);
        assert_non_null(strstr(err, "text after the array"));
    }
    /* a NUL inside the length is not the end of the answer */
    assert_int_equal(cairn_parse_vector("[1,2]\0zz", 8, v, 4, &n, err, sizeof err), CAIRN_EINVAL);
    assert_non_null(strstr(err, "at byte 5"));
}

/* ---- merge ------------------------------------------------------------ */

static void store_imp(fx *f, const char *content, double imp, char *id_out)
{
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_memory *m = NULL;
    so.importance = imp;
    if (cairn_mem_store(f->mem, content, &so, &m, NULL) != CAIRN_OK)
        fail_msg("store: %s", cairn_mem_errmsg(f->mem));
    if (id_out != NULL)
        strcpy(id_out, m->id);
    cairn_mem_free(m);
}

/* A dry run finds exactly the pairs the merge then makes; the higher
 * importance is kept, the other tombstoned, and the history is in the
 * kept memory's metadata. */
static void merge_dry_run_equals_merge_and_keeps_the_more_important(void **state)
{
    fx *f = *state;
    char lo[CAIRN_MEM_ID_MAX + 1], hi[CAIRN_MEM_ID_MAX + 1], other[CAIRN_MEM_ID_MAX + 1];
    cairn_merge_opts mo = CAIRN_MERGE_OPTS_INIT;
    cairn_merge_pair *dry = NULL, *real = NULL;
    size_t nd = 0, nr = 0;
    uint64_t merged = 0, kept = 0;
    cairn_memory *got = NULL;
    store_imp(f, "the deploy failed on friday because of the database migration", 0.3, lo);
    store_imp(f, "the deploy failed on friday because of a database migration", 0.9, hi);
    store_imp(f, "Melanie painted a sunrise over the lake", 0.5, other);
    mo.dry_run = 1;
    assert_int_equal(cairn_mem_merge(f->mem, &mo, &dry, &nd, &merged, &kept), CAIRN_OK);
    assert_int_equal(nd, 1);
    assert_int_equal(merged, 1);
    assert_int_equal(kept, 2);
    assert_string_equal(dry[0].kept, hi);
    assert_string_equal(dry[0].merged, lo);
    assert_true(dry[0].similarity >= 0.85 && dry[0].similarity <= 1.0);
    assert_string_equal(dry[0].why, "higher importance");
    assert_int_equal(cairn_mem_get(f->mem, lo, &got), CAIRN_OK); /* the dry run changed nothing */
    cairn_mem_free(got);
    mo.dry_run = 0;
    assert_int_equal(cairn_mem_merge(f->mem, &mo, &real, &nr, &merged, &kept), CAIRN_OK);
    assert_int_equal(nr, nd);
    for (size_t i = 0; i < nr; i++) {
        assert_string_equal(real[i].kept, dry[i].kept);
        assert_string_equal(real[i].merged, dry[i].merged);
        assert_true(real[i].similarity == dry[i].similarity);
    }
    assert_int_equal(cairn_mem_get(f->mem, lo, &got), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_mem_get(f->mem, hi, &got), CAIRN_OK);
    assert_non_null(strstr(got->metadata, "\"mergedFrom\""));
    assert_non_null(strstr(got->metadata, lo));
    assert_non_null(strstr(got->metadata, "because of the database migration"));
    cairn_mem_free(got);
    /* nothing left to merge; the history survives a reopen */
    free(real);
    assert_int_equal(cairn_mem_merge(f->mem, &mo, &real, &nr, &merged, &kept), CAIRN_OK);
    assert_int_equal(nr, 0);
    close_all(f);
    open_all(f);
    assert_int_equal(cairn_mem_get(f->mem, hi, &got), CAIRN_OK);
    assert_non_null(strstr(got->metadata, lo));
    cairn_mem_free(got);
    free(dry);
    free(real);
    /* a threshold out of range */
    mo.threshold = 1.5;
    assert_int_equal(cairn_mem_merge(f->mem, &mo, NULL, NULL, NULL, NULL), CAIRN_EINVAL);
}

/* Above the exact limit the IVF blocking path runs: every planted
 * near-duplicate pair among thousands of random vectors is found, and
 * nothing else. */
static void merge_through_the_partition_finds_the_planted_pairs(void **state)
{
    fx *f = *state;
    cairn_embedder ident = {"bench-vectors", 32, NULL, NULL, NULL, 0};
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_merge_opts mo = CAIRN_MERGE_OPTS_INIT;
    cairn_merge_pair *p = NULL;
    size_t np = 0;
    uint64_t rng = 7, merged = 0;
    float v[32];
    char text[64];
    enum { N = 3000, PLANTED = 40 };
    assert_int_equal(cairn_mem_set_embedder(f->mem, &ident), CAIRN_OK);
    for (int i = 0; i < N; i++) {
        for (int d = 0; d < 32; d++)
            v[d] = (float)((double)(tu_splitmix64(&rng) >> 11) / 9007199254740992.0 - 0.5);
        snprintf(text, sizeof text, "memory %d", i);
        so.vector = v;
        so.importance = 0.5;
        assert_int_equal(cairn_mem_store(f->mem, text, &so, NULL, NULL), CAIRN_OK);
        if (i < PLANTED) { /* its twin: the same vector, slightly moved */
            v[i % 32] += 0.05f;
            snprintf(text, sizeof text, "memory %d, again", i);
            so.importance = 0.4;
            assert_int_equal(cairn_mem_store(f->mem, text, &so, NULL, NULL), CAIRN_OK);
        }
    }
    mo.dry_run = 1;
    assert_int_equal(cairn_mem_merge(f->mem, &mo, &p, &np, &merged, NULL), CAIRN_OK);
    assert_int_equal(np, PLANTED);
    for (size_t i = 0; i < np; i++)
        assert_true(p[i].merged_importance == 0.4 && p[i].kept_importance == 0.5);
    free(p);
}

/* ---- remember ---------------------------------------------------------- */

typedef struct script {
    const char *answer;
    int calls;
} script;

static int scripted_llm(void *user, const char *prompt, char **answer, char *err)
{
    script *s = user;
    (void)err;
    s->calls++;
    assert_non_null(strstr(prompt, "user: I prefer TypeScript"));
    *answer = strdup(s->answer);
    return 0;
}

static const char conv[] = "[{\"role\":\"user\",\"content\":\"I prefer TypeScript\"},"
                           "{\"role\":\"assistant\",\"content\":\"noted\"}]";

/* Novel candidates are stored, near-duplicates of stored memories are not,
 * and a malformed answer stores nothing. */
static void remember_stores_the_novel_and_drops_the_rest(void **state)
{
    fx *f = *state;
    script s = {"```json\n[{\"content\":\"The deployment pipeline failed because the database "
                "migration timed out\",\"category\":\"episode\",\"importance\":0.7},"
                "{\"content\":\"The user prefers TypeScript over JavaScript\","
                "\"category\":\"preference\"}]\n```",
                0};
    cairn_llm llm = {&s, scripted_llm};
    cairn_remember_opts ro = CAIRN_REMEMBER_OPTS_INIT;
    cairn_remember_item *it = NULL;
    cairn_stats st0, st1;
    size_t n = 0;
    uint64_t nv = 0;
    store(f, "the deployment pipeline failed because the database migration timed out", NULL);
    assert_int_equal(cairn_mem_remember(f->mem, &llm, conv, strlen(conv), &ro, &it, &n), CAIRN_OK);
    assert_int_equal(s.calls, 1);
    assert_int_equal(n, 2);
    assert_int_equal(it[0].stored, 0); /* the same words as a stored memory */
    assert_true(it[0].novelty < 0.15);
    assert_string_equal(it[0].why, "not novel enough");
    assert_int_equal(it[1].stored, 1);
    assert_true(it[1].novelty >= 0.15);
    assert_string_equal(it[1].category, "preference");
    assert_true(it[1].importance == 0.5);
    cairn_remember_free(it, n);
    cairn_mem_vectors(f->mem, NULL, NULL, &nv);
    assert_int_equal(nv, 2);
    /* a malformed answer: an error, nothing stored */
    s.answer = "[{\"content\": 42}]";
    assert_int_equal(cairn_stats_get(f->db, &st0), CAIRN_OK);
    assert_int_equal(cairn_mem_remember(f->mem, &llm, conv, strlen(conv), &ro, &it, &n),
                     CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "item 1"));
    s.answer = "Sure! Here are the memories: [";
    assert_int_equal(cairn_mem_remember(f->mem, &llm, conv, strlen(conv), &ro, &it, &n),
                     CAIRN_EINVAL);
    assert_int_equal(cairn_stats_get(f->db, &st1), CAIRN_OK);
    assert_int_equal(st1.records, st0.records);
    /* no LLM: Engram's error */
    assert_int_equal(cairn_mem_remember(f->mem, NULL, conv, strlen(conv), &ro, &it, &n),
                     CAIRN_EUNAVAIL);
    assert_string_equal(cairn_mem_errmsg(f->mem), "LLM function required");
    /* a conversation that is not one */
    assert_int_equal(cairn_mem_remember(f->mem, &llm, "{}", 2, &ro, &it, &n), CAIRN_EINVAL);
}

/* The approximate search over the index file's vectors: probing every
 * list is the exact answer; deletes after the file never come back; the
 * memories stored since are searched exactly. */
static void approximate_recall_probing_every_list_is_exact(void **state)
{
    fx *f = *state;
    cairn_embedder ident = {"bench-vectors", 16, NULL, NULL, NULL, -2};
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    cairn_recall_hit *ex = NULL, *ap = NULL;
    size_t ne = 0, na = 0;
    uint64_t rng = 11;
    float v[16], q[16];
    char text[64], last[CAIRN_MEM_ID_MAX + 1] = "";
    assert_int_equal(cairn_mem_set_embedder(f->mem, &ident), CAIRN_OK);
    for (int i = 0; i < 2500; i++) {
        cairn_memory *mm = NULL;
        for (int d = 0; d < 16; d++)
            v[d] = (float)((double)(tu_splitmix64(&rng) >> 11) / 9007199254740992.0 - 0.5);
        snprintf(text, sizeof text, "memory %d", i);
        so.vector = v;
        assert_int_equal(cairn_mem_store(f->mem, text, &so, &mm, NULL), CAIRN_OK);
        if (i == 2000)
            assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
        cairn_mem_free(mm);
    }
    memcpy(q, v, sizeof q); /* the last one stored: after the file, found exactly */
    ro.mode = CAIRN_RECALL_SEMANTIC;
    ro.query_vector = q;
    ro.k = 20;
    assert_int_equal(cairn_mem_recall(f->mem, "q", &ro, &ex, &ne), CAIRN_OK);
    ro.approximate = 1u << 20; /* every list */
    assert_int_equal(cairn_mem_recall(f->mem, "q", &ro, &ap, &na), CAIRN_OK);
    assert_int_equal(na, ne);
    for (size_t i = 0; i < ne; i++)
        assert_string_equal(ap[i].mem.id, ex[i].mem.id);
    assert_string_equal(ap[0].mem.content, "memory 2499");
    /* delete the best match that lives in the file: it never comes back */
    {
        cairn_mem_stats st;
        assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
        for (size_t i = 0; i < ne && last[0] == 0; i++)
            if (ex[i].mem.seq <= st.index_seq)
                strcpy(last, ex[i].mem.id);
        cairn_mem_stats_free(&st);
        assert_true(last[0] != 0);
    }
    cairn_recall_free(ex, ne);
    cairn_recall_free(ap, na);
    assert_int_equal(cairn_mem_delete(f->mem, last, "test"), CAIRN_OK);
    ro.approximate = 4;
    assert_int_equal(cairn_mem_recall(f->mem, "q", &ro, &ap, &na), CAIRN_OK);
    assert_true(na > 0);
    for (size_t i = 0; i < na; i++)
        assert_string_not_equal(ap[i].mem.id, last);
    cairn_recall_free(ap, na);
}

/* ---- the vector image ------------------------------------------------- */

typedef struct sink {
    uint8_t *p;
    size_t n, cap;
} sink;

static int sink_put(void *user, const void *p, size_t len)
{
    sink *s = user;
    if (s->n + len > s->cap) {
        s->cap = (s->n + len) * 2;
        s->p = realloc(s->p, s->cap);
        assert_non_null(s->p);
    }
    memcpy(s->p + s->n, p, len);
    s->n += len;
    return CAIRN_OK;
}

/* Written and mapped back, an image answers as the RAM set did; removed
 * rows are not written; a flipped byte in a block is found when the block
 * is first read. */
static void the_vector_image_round_trips_and_checks_its_blocks(void **state)
{
    cairn__vecset *s = NULL, *m = NULL;
    sink out = {NULL, 0, 0};
    uint64_t rng = 42;
    float v[32], q[32 * 3];
    vec_query vq;
    vec_hit a[10], b[10];
    size_t na, nb;
    (void)state;
    assert_int_equal(cairn__vecset_new(&s, "test", 32), CAIRN_OK);
    for (uint64_t i = 0; i < 1000; i++) {
        for (int d = 0; d < 32; d++)
            v[d] = (float)((double)(tu_splitmix64(&rng) >> 11) / 9007199254740992.0 - 0.5);
        assert_int_equal(cairn__vecset_add(s, 10 + i * 3, v), CAIRN_OK);
    }
    assert_int_equal(cairn__vecset_add(s, 5, v), CAIRN_EINVAL); /* not increasing */
    for (uint64_t i = 0; i < 1000; i += 7)
        assert_int_equal(cairn__vecset_remove(s, 10 + i * 3), CAIRN_OK);
    assert_int_equal(cairn__vecset_remove(s, 10), CAIRN_ENOTFOUND);
    assert_int_equal(cairn__vecset_write(&s, 1, sink_put, &out), CAIRN_OK);
    assert_int_equal(out.n, cairn__vecset_image_len(&s, 1));
    assert_int_equal(cairn__vecset_map(&m, out.p, out.n), CAIRN_OK);
    assert_int_equal(cairn__vecset_live(m), cairn__vecset_live(s));
    cairn__vec_query_make(&vq, v, 32, q, (int8_t *)(q + 32));
    assert_int_equal(cairn__vecset_search(s, cairn__vkernel_best(), &vq, 10, 0, a, &na), CAIRN_OK);
    assert_int_equal(cairn__vecset_search(m, cairn__vkernel_best(), &vq, 10, 0, b, &nb), CAIRN_OK);
    assert_int_equal(na, 10);
    assert_int_equal(nb, 10);
    for (size_t i = 0; i < na; i++) {
        assert_int_equal(a[i].doc, b[i].doc);
        assert_true(a[i].score == b[i].score);
        assert_true((a[i].doc - 10) / 3 % 7 != 0); /* never a removed row */
    }
    cairn__vecset_free(m);
    /* a flipped byte in the int8 rows: found at the first search */
    {
        size_t i8_at = out.n - (size_t)cairn__vecset_live(s) * 32 * 4 - 10;
        out.p[i8_at] ^= 0x40;
        assert_int_equal(cairn__vecset_map(&m, out.p, out.n), CAIRN_OK);
        assert_int_equal(cairn__vecset_search(m, cairn__vkernel_best(), &vq, 10, 0, b, &nb),
                         CAIRN_ECHECKSUM);
        assert_int_equal(cairn__vecset_check_all(m), CAIRN_ECHECKSUM);
        cairn__vecset_free(m);
        out.p[i8_at] ^= 0x40;
    }
    /* a flipped byte in the header or the doc column: refused at map */
    out.p[20] ^= 1;
    assert_int_not_equal(cairn__vecset_map(&m, out.p, out.n), CAIRN_OK);
    out.p[20] ^= 1;
    out.p[130] ^= 1;
    assert_int_equal(cairn__vecset_map(&m, out.p, out.n), CAIRN_ECHECKSUM);
    cairn__vecset_free(s);
    free(out.p);
}

/* An embedder that waits until the test lets it go. */
typedef struct slow_emb {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int entered, released;
    cairn_embedder *inner;
} slow_emb;

static int slow_embed(void *user, const char *text, size_t len, float *out, char *err)
{
    slow_emb *s = user;
    pthread_mutex_lock(&s->mu);
    s->entered = 1;
    pthread_cond_broadcast(&s->cv);
    while (!s->released)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    return s->inner->embed(s->inner->user, text, len, out, err);
}

typedef struct slow_store {
    cairn_mem *mem;
    int rc;
    int import; /* 1: an import of two memories, 0: one store */
} slow_store;

static void *store_slowly(void *p)
{
    static const char two[] = "[{\"content\":\"imported while another writes\"},"
                              "{\"content\":\"and a second one\"}]";
    slow_store *t = p;
    t->rc = t->import ? cairn_mem_import(t->mem, CAIRN_MEM_JSON, two, sizeof two - 1, NULL, NULL,
                                         NULL)
                      : cairn_mem_store(t->mem, "embedded while another writes", NULL, NULL, NULL);
    return NULL;
}

/* A slow embedder (a model behind a pipe) runs before the store's or the
 * import's turn of the writer lock: another handle's store goes through
 * meanwhile, though it waits at most 300 ms. The slow one then lands with
 * its vectors. */
static void slow_embedder_lets_others_write(fx *f, int import)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_db *db2 = NULL;
    cairn_mem *m2 = NULL;
    cairn_embedder e = f->emb;
    slow_emb s;
    slow_store t = {f->mem, -1, import};
    pthread_t th;
    uint64_t nvec = 0;
    int rc;

    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    s.inner = &f->emb;
    e.user = &s;
    e.embed = slow_embed;
    e.embed_batch = NULL;
    assert_int_equal(cairn_mem_set_embedder(f->mem, &e), CAIRN_OK);
    o.busy_timeout_ms = 300;
    if (cairn_open(&db2, f->dir, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    assert_int_equal(cairn_mem_open(db2, NULL, &m2), CAIRN_OK);
    assert_int_equal(pthread_create(&th, NULL, store_slowly, &t), 0);
    pthread_mutex_lock(&s.mu);
    while (!s.entered)
        pthread_cond_wait(&s.cv, &s.mu);
    pthread_mutex_unlock(&s.mu);
    /* the first store is inside its embedder: the lock is free */
    rc = cairn_mem_store(m2, "stored by another handle meanwhile", NULL, NULL, NULL);
    pthread_mutex_lock(&s.mu); /* let it go before any assertion can end the test */
    s.released = 1;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(rc, CAIRN_OK);
    assert_int_equal(t.rc, CAIRN_OK);
    cairn_mem_vectors(f->mem, NULL, NULL, &nvec);
    assert_int_equal(nvec, import ? 2 : 1); /* the slow one's; the other had no embedder */
    cairn_mem_close(m2);
    assert_int_equal(cairn_close(db2), CAIRN_OK);
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
}

static void a_slow_embedder_does_not_hold_the_writer_lock(void **state)
{
    slow_embedder_lets_others_write(*state, 0);
}

static void an_imports_slow_embedder_does_not_hold_the_writer_lock(void **state)
{
    slow_embedder_lets_others_write(*state, 1);
}

typedef struct merger {
    cairn_mem *mem;
    int rc;
    uint64_t merged;
} merger;

static void *merge_in_thread(void *p)
{
    merger *t = p;
    cairn_merge_opts mo = CAIRN_MERGE_OPTS_INIT;
    uint64_t kept = 0;
    t->rc = cairn_mem_merge(t->mem, &mo, NULL, NULL, &t->merged, &kept);
    return NULL;
}

/* A merge finds its pairs before its turn of the writer lock; when another
 * writer changed the memories meanwhile (here: deleted the one a pair
 * would merge away), it finds them again inside the turn and merges
 * nothing stale. */
static void a_merge_finds_its_pairs_again_when_the_memories_changed(void **state)
{
    fx *f = *state;
    char lo[CAIRN_MEM_ID_MAX + 1], hi[CAIRN_MEM_ID_MAX + 1];
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_db *db2 = NULL;
    cairn_mem *m2 = NULL;
    cairn_memory *got = NULL;
    merger t = {NULL, -1, 99};
    pthread_t th;

    store_imp(f, "the deploy failed on friday because of the database migration", 0.3, lo);
    store_imp(f, "the deploy failed on friday because of a database migration", 0.9, hi);
    o.busy_timeout_ms = 20000;
    if (cairn_open(&db2, f->dir, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    assert_int_equal(cairn_mem_open(db2, NULL, &m2), CAIRN_OK);
    assert_int_equal(cairn__turn_begin(f->db), CAIRN_OK); /* the merge will wait for it */
    t.mem = m2;
    assert_int_equal(pthread_create(&th, NULL, merge_in_thread, &t), 0);
    tu_sleep_ms(300); /* it has found the pair {hi, lo} and waits for the turn */
    assert_int_equal(cairn_mem_delete(f->mem, lo, "wrong"), CAIRN_OK);
    assert_int_equal(cairn__turn_end(f->db), CAIRN_OK);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(t.rc, CAIRN_OK);
    assert_int_equal(t.merged, 0);
    assert_int_equal(cairn_mem_get(m2, hi, &got), CAIRN_OK);
    cairn_mem_free(got);
    assert_int_equal(cairn_mem_get(m2, lo, &got), CAIRN_ENOTFOUND);
    cairn_mem_close(m2);
    assert_int_equal(cairn_close(db2), CAIRN_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(stored_memories_carry_the_embedders_vectors, setup, teardown),
        cmocka_unit_test_setup_teardown(semantic_recall_finds_what_bm25_misses, setup, teardown),
        cmocka_unit_test_setup_teardown(another_embedder_or_dimension_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(a_foreign_vector_in_the_log_is_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(deleted_memories_leave_the_semantic_results, setup, teardown),
        cmocka_unit_test_setup_teardown(a_failing_embedder_stores_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(imports_are_embedded_or_not_imported_at_all, setup, teardown),
        cmocka_unit_test_setup_teardown(export_and_import_carry_the_vectors, setup, teardown),
        cmocka_unit_test_setup_teardown(semantic_recall_without_an_embedder_is_unavailable, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(vectors_persist_across_reopen_index_file_and_sealing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(hybrid_keeps_bm25_order_and_adds_vector_matches_after,
                                        setup, teardown),
        cmocka_unit_test(parse_vector_takes_arrays_of_finite_numbers_only),
        cmocka_unit_test(parse_vector_refuses_text_after_the_array),
        cmocka_unit_test_setup_teardown(remember_stores_the_novel_and_drops_the_rest, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(merge_dry_run_equals_merge_and_keeps_the_more_important,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(merge_through_the_partition_finds_the_planted_pairs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(approximate_recall_probing_every_list_is_exact, setup,
                                        teardown),
        cmocka_unit_test(the_vector_image_round_trips_and_checks_its_blocks),
        cmocka_unit_test_setup_teardown(a_slow_embedder_does_not_hold_the_writer_lock, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(an_imports_slow_embedder_does_not_hold_the_writer_lock,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_merge_finds_its_pairs_again_when_the_memories_changed,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
