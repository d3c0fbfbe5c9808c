/*
 * test_restore.c - cairn_mem_restore (engine/memory/restore.c): a memory
 * removed, pruned past the limit, forgotten, cleared, or part of an import
 * comes back with its id, namespace, content, category, metadata,
 * importance, expiry, times, access count and vector as they were when it
 * went; the restore is one `memory` record with "restoredFrom" that replay
 * applies (after a reopen, and past an index file that no longer holds the
 * memory); and every refusal (unknown id, live memory, its content live
 * again, the namespace at the limit, a read-only handle) writes nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cairn.h"
#include "testutil.h"

typedef struct fx {
    char *dir;
    cairn_db *db;
    cairn_mem *mem;
} fx;

static void open_all(fx *f)
{
    char err[CAIRN_ERRMSG_MAX] = "";
    if (tu_open_small(f->dir, 0, &f->db, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    assert_int_equal(cairn_mem_open(f->db, NULL, &f->mem), CAIRN_OK);
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
    char *d = tu_mkdtemp("restore");
    if (f == NULL || d == NULL)
        return -1;
    f->dir = tu_join(d, "store");
    free(d);
    open_all(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    char *parent = strdup(f->dir);
    if (f->db != NULL)
        close_all(f);
    *strrchr(parent, '/') = 0;
    tu_rmrf(parent);
    free(parent);
    free(f->dir);
    free(f);
    return 0;
}

static uint64_t records(fx *f)
{
    cairn_stats st;
    assert_int_equal(cairn_stats_get(f->db, &st), CAIRN_OK);
    return st.records;
}

static cairn_memory *store(fx *f, const char *ns, const char *content, const char *cat,
                           double imp, const char *meta)
{
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_memory *m = NULL;
    o.ns = ns;
    o.category = cat;
    o.importance = imp;
    o.metadata = meta;
    if (cairn_mem_store(f->mem, content, &o, &m, NULL) != CAIRN_OK)
        fail_msg("store: %s", cairn_mem_errmsg(f->mem));
    return m;
}

static void same_memory(const cairn_memory *a, const cairn_memory *b)
{
    assert_string_equal(a->id, b->id);
    assert_string_equal(a->ns, b->ns);
    assert_string_equal(a->content, b->content);
    assert_string_equal(a->category, b->category);
    assert_string_equal(a->metadata, b->metadata);
    assert_true(a->importance == b->importance);
    assert_true(a->created_at == b->created_at);
    assert_true(a->accessed_at == b->accessed_at);
    assert_int_equal(a->access_count, b->access_count);
    assert_true(a->expires_at == b->expires_at);
}

/* The payload's integer field `name` of the record at seq (-1: absent). */
static int64_t field_of(fx *f, uint64_t seq, const char *name, uint16_t *type)
{
    cairn_record *rec = NULL;
    cJSON *o;
    const cJSON *v;
    int64_t n = -1;
    assert_int_equal(cairn_get(f->db, seq, &rec), CAIRN_OK);
    *type = rec->type;
    o = cJSON_ParseWithLength(rec->json, rec->json_len);
    v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (cJSON_IsNumber(v))
        n = (int64_t)v->valuedouble;
    cJSON_Delete(o);
    cairn_record_free(f->db, rec);
    return n;
}

/* A removed memory comes back exactly as it was when removed: the fields
 * an update changed, the accesses recalls counted, its expiry; get and
 * recall find it, one record was written (a `memory` record naming the
 * record that stored it), and a reopen replays it to the same state. */
static void a_removed_memory_comes_back_with_every_field(void **state)
{
    fx *f = *state;
    cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_memory *m, *was = NULL, *back = NULL, *g = NULL;
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    uint64_t before;
    uint16_t type;

    so.ns = "team";
    so.category = "preference";
    so.importance = 0.7;
    so.expires_at = 4102444800000ll; /* 2100 */
    so.metadata = "{\"source\":\"chat\",\"tags\":[\"a\",\"b\"]}";
    assert_int_equal(cairn_mem_store(f->mem, "the deploy window is friday afternoon", &so, &m,
                                     NULL),
                     CAIRN_OK);
    u.importance = 0.9;
    u.metadata = "{\"source\":\"review\"}";
    assert_int_equal(cairn_mem_update(f->mem, m->id, &u), CAIRN_OK);
    for (int i = 0; i < 3; i++) { /* three accesses, folded into one record */
        cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
        const char *nss[] = {"team"};
        ro.ns = nss;
        ro.n_ns = 1;
        assert_int_equal(cairn_mem_recall(f->mem, "deploy window", &ro, &h, &n), CAIRN_OK);
        assert_int_equal(n, 1);
        cairn_recall_free(h, n);
    }
    assert_int_equal(cairn_mem_get(f->mem, m->id, &was), CAIRN_OK);
    assert_int_equal(was->access_count, 3);
    assert_true(was->importance == 0.9);
    assert_int_equal(cairn_mem_delete(f->mem, m->id, "wrong"), CAIRN_OK);
    assert_int_equal(cairn_mem_get(f->mem, m->id, &g), CAIRN_ENOTFOUND);

    before = records(f);
    assert_int_equal(cairn_mem_restore(f->mem, m->id, &back), CAIRN_OK);
    assert_int_equal(records(f), before + 1);
    same_memory(back, was);
    assert_true(back->seq == before + 1);
    assert_int_equal(field_of(f, back->seq, "restoredFrom", &type), (int64_t)m->seq);
    assert_int_equal(type, CAIRN_REC_MEMORY);
    assert_int_equal(cairn_mem_get(f->mem, m->id, &g), CAIRN_OK);
    same_memory(g, was);
    cairn_mem_free(g);
    g = NULL;
    {
        cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
        const char *nss[] = {"team"};
        ro.ns = nss;
        ro.n_ns = 1;
        assert_int_equal(cairn_mem_recall(f->mem, "friday", &ro, &h, &n), CAIRN_OK);
        assert_int_equal(n, 1);
        assert_string_equal(h[0].mem.id, m->id);
        cairn_recall_free(h, n);
    }
    /* replay applies the restore record */
    close_all(f);
    open_all(f);
    assert_int_equal(cairn_mem_get(f->mem, m->id, &g), CAIRN_OK);
    assert_string_equal(g->content, was->content);
    assert_string_equal(g->metadata, was->metadata);
    assert_string_equal(g->ns, "team");
    cairn_mem_free(g);
    cairn_mem_free(back);
    cairn_mem_free(was);
    cairn_mem_free(m);
}

/* Pruned past the limit, forgotten, cleared: each comes back; a pruned
 * one only once the limit has room (refused, not pruning another). */
static void pruned_forgotten_and_cleared_memories_come_back(void **state)
{
    fx *f = *state;
    cairn_forget_opts fo = CAIRN_FORGET_OPTS_INIT;
    cairn_memory *a, *b, *c, *d, *e, *back = NULL;
    uint64_t before, pruned = 0;
    const char *ns_x[] = {"x"};

    assert_int_equal(cairn_config_set_max_memories(f->db, 2), CAIRN_OK);
    a = store(f, "", "apples are red", NULL, 0.1, NULL);
    b = store(f, "", "bananas are yellow", NULL, 0.9, NULL);
    c = store(f, "", "cherries are dark", NULL, 0.8, NULL); /* prunes a */
    assert_int_equal(cairn_mem_get(f->mem, a->id, &back), CAIRN_ENOTFOUND);
    before = records(f);
    assert_int_equal(cairn_mem_restore(f->mem, a->id, &back), CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "would hold 3 memories"));
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "cairn config max-memories N"));
    assert_null(back);
    assert_int_equal(records(f), before);
    assert_int_equal(cairn_config_set_max_memories(f->db, 3), CAIRN_OK);
    assert_int_equal(cairn_mem_restore(f->mem, a->id, &back), CAIRN_OK);
    assert_string_equal(back->content, "apples are red");
    assert_true(back->importance == 0.1);
    cairn_mem_free(back);
    back = NULL;

    /* forgotten (expired) */
    assert_int_equal(cairn_config_set_max_memories(f->db, 0), CAIRN_OK);
    {
        cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
        so.ns = "x";
        so.expires_at = 1; /* long ago */
        assert_int_equal(cairn_mem_store(f->mem, "an expired note", &so, &d, NULL), CAIRN_OK);
    }
    fo.ns = ns_x;
    fo.n_ns = 1;
    fo.mode = CAIRN_FORGET_GENTLE;
    assert_int_equal(cairn_mem_forget(f->mem, &fo, &pruned, NULL), CAIRN_OK);
    assert_int_equal(pruned, 1);
    assert_int_equal(cairn_mem_restore(f->mem, d->id, &back), CAIRN_OK);
    assert_true(back->expires_at == 1); /* as it was: still expired */
    cairn_mem_free(back);
    back = NULL;
    /* restored but expired: live, so not restorable again */
    assert_int_equal(cairn_mem_restore(f->mem, d->id, &back), CAIRN_EEXIST);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "expired"));

    /* cleared with its namespace */
    e = store(f, "y", "a note in y", NULL, 0.5, NULL);
    assert_int_equal(cairn_mem_clear(f->mem, "y"), CAIRN_OK);
    assert_int_equal(cairn_mem_restore(f->mem, e->id, &back), CAIRN_OK);
    assert_string_equal(back->ns, "y");
    cairn_mem_free(back);
    cairn_mem_free(a);
    cairn_mem_free(b);
    cairn_mem_free(c);
    cairn_mem_free(d);
    cairn_mem_free(e);
}

/* The memory index file holds no dead memory: a restore after a
 * checkpoint and a reopen reads the log; the memory may die and come back
 * again (its last life is the one restored). A memory of an import (a
 * commit of several records) comes back too. */
static void a_restore_reads_the_log_past_an_index_file(void **state)
{
    fx *f = *state;
    cairn_memory *m, *back = NULL;
    uint64_t first_restore;
    uint16_t type;
    const char *json = "[{\"id\":\"imp1\",\"content\":\"imported one\",\"metadata\":{\"k\":1}},"
                       "{\"id\":\"imp2\",\"content\":\"imported two\"}]";

    m = store(f, "", "kept in the log only", "fact", 0.4, "{\"n\":1}");
    assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSON, json, strlen(json), NULL, NULL,
                                      NULL),
                     CAIRN_OK);
    assert_int_equal(cairn_mem_delete(f->mem, m->id, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_delete(f->mem, "imp1", NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    close_all(f);
    open_all(f);
    assert_int_equal(cairn_mem_restore(f->mem, m->id, &back), CAIRN_OK);
    assert_string_equal(back->metadata, "{\"n\":1}");
    first_restore = back->seq;
    cairn_mem_free(back);
    back = NULL;
    assert_int_equal(cairn_mem_restore(f->mem, "imp1", &back), CAIRN_OK);
    assert_string_equal(back->content, "imported one");
    assert_string_equal(back->metadata, "{\"k\":1}");
    cairn_mem_free(back);
    back = NULL;
    /* a second life: deleted again, restored again from the restore */
    assert_int_equal(cairn_mem_delete(f->mem, m->id, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    assert_int_equal(cairn_mem_restore(f->mem, m->id, &back), CAIRN_OK);
    assert_int_equal(field_of(f, back->seq, "restoredFrom", &type), (int64_t)first_restore);
    cairn_mem_free(back);
    cairn_mem_free(m);
}

/* Every refusal names why and writes nothing. */
static void refusals_write_nothing(void **state)
{
    fx *f = *state;
    cairn_memory *m, *again, *back = NULL;
    cairn_mem *ro_mem = NULL;
    cairn_db *ro = NULL;
    cairn_options o = CAIRN_OPTIONS_INIT;
    uint64_t before;

    m = store(f, "", "a live memory", NULL, 0.5, NULL);
    before = records(f);
    assert_int_equal(cairn_mem_restore(f->mem, "nosuchid", &back), CAIRN_ENOTFOUND);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "no memory with id nosuchid"));
    assert_int_equal(cairn_mem_restore(f->mem, m->id, &back), CAIRN_EEXIST);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "is live"));
    assert_int_equal(cairn_mem_restore(f->mem, "not an id!", &back), CAIRN_EINVAL);
    assert_int_equal(cairn_mem_restore(f->mem, NULL, &back), CAIRN_EINVAL);
    assert_null(back);
    assert_int_equal(records(f), before);
    /* its content stored again under another id: the restore would make a
     * second live copy */
    assert_int_equal(cairn_mem_delete(f->mem, m->id, NULL), CAIRN_OK);
    again = store(f, "", "a live memory", NULL, 0.5, NULL);
    assert_string_not_equal(again->id, m->id);
    before = records(f);
    assert_int_equal(cairn_mem_restore(f->mem, m->id, &back), CAIRN_EEXIST);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), again->id));
    assert_int_equal(records(f), before);
    assert_int_equal(cairn_mem_delete(f->mem, again->id, NULL), CAIRN_OK);
    /* a read-only handle */
    assert_int_equal(cairn_sync(f->db), CAIRN_OK);
    o.read_only = 1;
    assert_int_equal(cairn_open(&ro, f->dir, &o, NULL, 0), CAIRN_OK);
    assert_int_equal(cairn_mem_open(ro, NULL, &ro_mem), CAIRN_OK);
    assert_int_equal(cairn_mem_restore(ro_mem, m->id, &back), CAIRN_EPERM);
    cairn_mem_close(ro_mem);
    assert_int_equal(cairn_close(ro), CAIRN_OK);
    /* and with nothing in the way it comes back (out may be NULL) */
    assert_int_equal(cairn_mem_restore(f->mem, m->id, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_get(f->mem, m->id, &back), CAIRN_OK);
    cairn_mem_free(back);
    cairn_mem_free(again);
    cairn_mem_free(m);
}

/* A memory's vector comes back with it. */
static void the_vector_comes_back(void **state)
{
    fx *f = *state;
    cairn_embedder emb;
    cairn_memory *m, *back = NULL;
    uint64_t vectors = 0;

    assert_int_equal(cairn_hash_embedder(&emb, 0), CAIRN_OK);
    assert_int_equal(cairn_mem_set_embedder(f->mem, &emb), CAIRN_OK);
    m = store(f, "", "vectors travel with memories", NULL, 0.5, NULL);
    cairn_mem_vectors(f->mem, NULL, NULL, &vectors);
    assert_int_equal(vectors, 1);
    assert_int_equal(cairn_mem_delete(f->mem, m->id, NULL), CAIRN_OK);
    cairn_mem_vectors(f->mem, NULL, NULL, &vectors);
    assert_int_equal(vectors, 0);
    assert_int_equal(cairn_mem_restore(f->mem, m->id, &back), CAIRN_OK);
    cairn_mem_vectors(f->mem, NULL, NULL, &vectors);
    assert_int_equal(vectors, 1);
    assert_int_equal(cairn_mem_set_embedder(f->mem, NULL), CAIRN_OK);
    cairn_hash_embedder_free(&emb);
    cairn_mem_free(back);
    cairn_mem_free(m);
}

typedef struct heard {
    unsigned restored, stored;
    char id[CAIRN_MEM_ID_MAX + 1];
    char content[64];
} heard;

static void listen(void *user, const cairn_mem_event *ev)
{
    heard *h = user;
    if (ev->kind == CAIRN_EVENT_STORED)
        h->stored++;
    if (ev->kind != CAIRN_EVENT_RESTORED)
        return;
    h->restored++;
    assert_non_null(ev->memory);
    snprintf(h->id, sizeof h->id, "%s", ev->memory->id);
    snprintf(h->content, sizeof h->content, "%s", ev->memory->content);
}

/* Listeners hear of a restore, with the memory as it came back, whether or
 * not the caller asked for a copy; a refused restore says nothing. */
static void a_restore_is_told_to_listeners(void **state)
{
    fx *f = *state;
    cairn_memory *m = NULL;
    heard h;

    memset(&h, 0, sizeof h);
    assert_int_equal(cairn_mem_on(f->mem, listen, &h), CAIRN_OK);
    assert_int_equal(cairn_mem_store(f->mem, "the pager rota changes on mondays", NULL, &m, NULL),
                     CAIRN_OK);
    assert_int_equal(h.stored, 1);
    assert_int_equal(cairn_mem_delete(f->mem, m->id, "wrong"), CAIRN_OK);
    assert_int_equal(cairn_mem_restore(f->mem, m->id, NULL), CAIRN_OK);
    assert_int_equal(h.restored, 1);
    assert_string_equal(h.id, m->id);
    assert_string_equal(h.content, "the pager rota changes on mondays");
    assert_int_equal(cairn_mem_restore(f->mem, m->id, NULL), CAIRN_EEXIST); /* live: refused */
    assert_int_equal(h.restored, 1);
    assert_int_equal(h.stored, 1); /* a restore is not a store */
    cairn_mem_free(m);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(a_removed_memory_comes_back_with_every_field),
        T(pruned_forgotten_and_cleared_memories_come_back),
        T(a_restore_reads_the_log_past_an_index_file),
        T(refusals_write_nothing),
        T(the_vector_comes_back),
        T(a_restore_is_told_to_listeners),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
