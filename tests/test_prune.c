/*
 * test_prune.c - the limit of live memories per namespace (the store's
 * max_memories setting, engine/log/config.c) as the memory engine applies
 * it: a store past it prunes and reports the prune (cairn_mem_prune, the
 * CAIRN_EVENT_PRUNED event, memory.delete records with reason
 * "maxMemories"); an import past it is refused whole and writes nothing;
 * a change of the setting applies to an open handle; 0 is no limit; the
 * handle's option overrides the setting; a store whose MANIFEST is of
 * version 2 keeps the old limit, 10000.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include <cjson/cJSON.h>

#include "bytes.h"
#include "cairn.h"
#include "testutil.h"

typedef struct fx {
    char *dir;
    cairn_db *db;
    cairn_mem *mem;
} fx;

static void open_all(fx *f, const cairn_mem_options *mo)
{
    char err[CAIRN_ERRMSG_MAX] = "";
    if (tu_open_small(f->dir, 0, &f->db, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    assert_int_equal(cairn_mem_open(f->db, mo, &f->mem), CAIRN_OK);
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
    char *d = tu_mkdtemp("prune");
    if (f == NULL || d == NULL)
        return -1;
    f->dir = tu_join(d, "store");
    free(d);
    open_all(f, NULL);
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

static uint64_t live_total(fx *f)
{
    cairn_mem_stats st;
    uint64_t n;
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    n = st.total;
    cairn_mem_stats_free(&st);
    return n;
}

/* Store content in ns with importance imp; the id into id (may be NULL);
 * what the store pruned into *p. */
static void store(fx *f, const char *ns, const char *content, double imp, char *id,
                  cairn_mem_prune *p)
{
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_memory *m = NULL;
    o.ns = ns;
    o.importance = imp;
    o.prune = p;
    if (cairn_mem_store(f->mem, content, &o, &m, NULL) != CAIRN_OK)
        fail_msg("store: %s", cairn_mem_errmsg(f->mem));
    if (id != NULL)
        strcpy(id, m->id);
    cairn_mem_free(m);
}

typedef struct seen {
    int events;
    uint64_t pruned, kept;
    char reason[32], id[CAIRN_MEM_ID_MAX + 1], ns[32];
} seen;

static void on_event(void *user, const cairn_mem_event *ev)
{
    seen *w = user;
    if (ev->kind != CAIRN_EVENT_PRUNED)
        return;
    w->events++;
    w->pruned += ev->pruned;
    w->kept = ev->kept;
    snprintf(w->reason, sizeof w->reason, "%s", ev->reason);
    if (ev->memory != NULL) {
        snprintf(w->id, sizeof w->id, "%s", ev->memory->id);
        snprintf(w->ns, sizeof w->ns, "%s", ev->memory->ns);
    }
}

/* The reasons of the memory.delete records after seq `after`, joined. */
static void delete_reasons(fx *f, uint64_t after, char *out, size_t cap)
{
    cairn_range r = CAIRN_RANGE_INIT;
    cairn_iter *it = NULL;
    cairn_record rec;
    size_t n = 0;
    r.seq_from = after + 1;
    r.type = CAIRN_REC_MEMORY_DELETE;
    out[0] = 0;
    assert_int_equal(cairn_iter_open(f->db, &r, &it), CAIRN_OK);
    while (cairn_iter_next(it, &rec) == CAIRN_OK) {
        cJSON *o = cJSON_ParseWithLength(rec.json, rec.json_len);
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(o, "reason");
        n += (size_t)snprintf(out + n, cap - n, "%s;", cJSON_IsString(why) ? why->valuestring : "?");
        cJSON_Delete(o);
    }
    cairn_iter_close(it);
}

/* The store's setting is the limit; a store past it prunes the least
 * important memory (never the new one), and says so three ways: the
 * caller's cairn_mem_prune, the event, and the records' reason. */
static void a_store_past_the_setting_prunes_and_reports_it(void **state)
{
    fx *f = *state;
    cairn_mem_prune p;
    cairn_memory *g = NULL;
    char low[CAIRN_MEM_ID_MAX + 1], newest[CAIRN_MEM_ID_MAX + 1], why[256];
    uint64_t before;
    seen w;

    memset(&w, 0, sizeof w);
    assert_int_equal(cairn_mem_on(f->mem, on_event, &w), CAIRN_OK);
    assert_int_equal(cairn_config_set_max_memories(f->db, 3), CAIRN_OK);
    store(f, "work", "alpha fact", 0.9, NULL, &p);
    store(f, "work", "beta fact", 0.2, low, &p);
    store(f, "work", "gamma fact", 0.8, NULL, &p);
    assert_int_equal(p.pruned, 0); /* at the limit, not past it */
    assert_int_equal(p.kept, 3);
    assert_int_equal(p.limit, 3);
    assert_string_equal(p.reason, "");
    assert_int_equal(w.events, 0);
    store(f, "other", "a memory elsewhere", 0.1, NULL, &p); /* another namespace */
    assert_int_equal(p.pruned, 0);
    before = records(f);
    store(f, "work", "delta fact", 0.05, newest, &p);
    assert_int_equal(p.pruned, 1);
    assert_int_equal(p.kept, 3);
    assert_int_equal(p.limit, 3);
    assert_string_equal(p.reason, "maxMemories");
    assert_int_equal(w.events, 1);
    assert_int_equal(w.pruned, 1);
    assert_int_equal(w.kept, 3);
    assert_string_equal(w.reason, "maxMemories");
    assert_string_equal(w.id, newest);
    assert_string_equal(w.ns, "work");
    assert_int_equal(cairn_mem_get(f->mem, low, &g), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_mem_get(f->mem, newest, &g), CAIRN_OK);
    cairn_mem_free(g);
    delete_reasons(f, before, why, sizeof why);
    assert_string_equal(why, "maxMemories;");
    assert_int_equal(live_total(f), 4);
}

/* The setting is looked up at each store: a change reaches a handle open
 * before it. 0 is no limit. */
static void a_change_of_the_setting_reaches_an_open_handle(void **state)
{
    fx *f = *state;
    cairn_mem_prune p;
    char text[64];

    assert_int_equal(cairn_config_set_max_memories(f->db, 0), CAIRN_OK);
    for (int i = 0; i < 25; i++) {
        snprintf(text, sizeof text, "memory number %d", i);
        store(f, "", text, 0.5, NULL, &p);
        assert_int_equal(p.pruned, 0);
        assert_int_equal(p.limit, 0);
    }
    assert_int_equal(live_total(f), 25);
    assert_int_equal(cairn_config_set_max_memories(f->db, 20), CAIRN_OK);
    store(f, "", "one more", 0.5, NULL, &p);
    assert_int_equal(p.pruned, 6); /* 26 back to 20 */
    assert_int_equal(p.kept, 20);
    assert_int_equal(p.limit, 20);
    assert_int_equal(live_total(f), 20);
    /* and after a reopen, from the MANIFEST */
    close_all(f);
    open_all(f, NULL);
    store(f, "", "and another", 0.5, NULL, &p);
    assert_int_equal(p.pruned, 1);
    assert_int_equal(p.limit, 20);
}

/* Another writer (here a second handle; another process alike) changes
 * the setting: this handle's next store takes its turn, reads the new
 * MANIFEST, and applies it. */
static void a_change_by_another_writer_holds_from_the_next_store(void **state)
{
    fx *f = *state;
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *other = NULL;
    cairn_mem_prune p;
    char err[CAIRN_ERRMSG_MAX] = "";

    store(f, "", "one", 0.5, NULL, &p);
    store(f, "", "two", 0.5, NULL, &p);
    store(f, "", "three", 0.5, NULL, &p);
    assert_int_equal(p.limit, 10000);
    o.background = 0;
    if (cairn_open(&other, f->dir, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("second writer: %s", err);
    assert_int_equal(cairn_config_set_max_memories(other, 2), CAIRN_OK);
    assert_int_equal(cairn_close(other), CAIRN_OK);
    store(f, "", "four", 0.5, NULL, &p);
    assert_int_equal(p.limit, 2);
    assert_int_equal(p.pruned, 2);
    assert_int_equal(live_total(f), 2);
}

/* A handle's own max_memories replaces the store's setting for it. */
static void the_handle_option_replaces_the_setting(void **state)
{
    fx *f = *state;
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    cairn_mem_prune p;
    const char *json = "[{\"content\":\"x one\"},{\"content\":\"x two\"},{\"content\":\"x three\"}]";

    cairn_mem_close(f->mem);
    mo.max_memories = 2;
    assert_int_equal(cairn_mem_open(f->db, &mo, &f->mem), CAIRN_OK);
    store(f, "", "first", 0.5, NULL, &p);
    store(f, "", "second", 0.5, NULL, &p);
    store(f, "", "third", 0.5, NULL, &p);
    assert_int_equal(p.pruned, 1);
    assert_int_equal(p.limit, 2);
    assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSON, json, strlen(json), NULL, NULL,
                                      NULL),
                     CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "this handle's max_memories option (2)"));
}

/* An import that would take any namespace past the limit stores nothing:
 * not the memories of that namespace, not those of another; the log does
 * not grow. One that reaches the limit exactly, or whose memories are all
 * stored already, is fine. */
static void an_import_past_the_limit_is_refused_whole(void **state)
{
    fx *f = *state;
    cairn_mem_prune p;
    cairn_memory *g = NULL;
    uint64_t before, imported = 99, skipped = 99;
    const char *fits = "[{\"id\":\"a4\",\"content\":\"a four\",\"namespace\":\"a\"},"
                       "{\"id\":\"a5\",\"content\":\"a five\",\"namespace\":\"a\"},"
                       "{\"id\":\"b1\",\"content\":\"b one\",\"namespace\":\"b\"}]";
    const char *past = "[{\"id\":\"b2\",\"content\":\"b two\",\"namespace\":\"b\"},"
                       "{\"id\":\"a6\",\"content\":\"a six\",\"namespace\":\"a\"},"
                       "{\"id\":\"b3\",\"content\":\"b three\",\"namespace\":\"b\"}]";
    const char *again = "[{\"id\":\"a4\",\"content\":\"a four\",\"namespace\":\"a\"},"
                        "{\"content\":\"a one\",\"namespace\":\"a\"}]";
    const char *msg;

    assert_int_equal(cairn_config_set_max_memories(f->db, 5), CAIRN_OK);
    store(f, "a", "a one", 0.5, NULL, &p);
    store(f, "a", "a two", 0.5, NULL, &p);
    store(f, "a", "a three", 0.5, NULL, &p);
    assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSON, fits, strlen(fits), NULL,
                                      &imported, &skipped),
                     CAIRN_OK);
    assert_int_equal(imported, 3); /* "a" reaches 5 exactly */
    before = records(f);
    imported = skipped = 99;
    assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSON, past, strlen(past), NULL,
                                      &imported, &skipped),
                     CAIRN_EINVAL);
    msg = cairn_mem_errmsg(f->mem);
    assert_non_null(strstr(msg, "namespace \"a\" would hold 6 memories"));
    assert_non_null(strstr(msg, "the store's max-memories setting (5)"));
    assert_non_null(strstr(msg, "nothing was written"));
    assert_non_null(strstr(msg, "cairn config max-memories N"));
    assert_int_equal(imported, 0);
    assert_int_equal(skipped, 0);
    assert_int_equal(records(f), before);
    assert_int_equal(cairn_mem_get(f->mem, "b2", &g), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_mem_get(f->mem, "a6", &g), CAIRN_ENOTFOUND);
    assert_int_equal(live_total(f), 6);
    /* Memories already there do not count: skipped, nothing to refuse. */
    assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSON, again, strlen(again), NULL,
                                      &imported, &skipped),
                     CAIRN_OK);
    assert_int_equal(imported, 0);
    assert_int_equal(skipped, 2);
    assert_int_equal(records(f), before);
    /* Raised, the same import goes in whole. */
    assert_int_equal(cairn_config_set_max_memories(f->db, 6), CAIRN_OK);
    assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSON, past, strlen(past), NULL,
                                      &imported, &skipped),
                     CAIRN_OK);
    assert_int_equal(imported, 3);
    assert_int_equal(live_total(f), 9);
}

/* The MANIFEST as version 2 wrote it: no max_memories in its store block. */
static void downgrade_to_version_2(const char *path)
{
    tu_manifest_file_as_version(path, 2);
}

/* JSON of n memories "fill i" in namespace ns (malloc'd). */
static char *fill_json(size_t from, size_t n, const char *ns)
{
    size_t cap = 64 + n * 64, k = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    s[k++] = '[';
    for (size_t i = from; i < from + n; i++)
        k += (size_t)snprintf(s + k, cap - k, "%s{\"content\":\"fill %zu\",\"namespace\":\"%s\"}",
                              i > from ? "," : "", i, ns);
    s[k++] = ']';
    s[k] = 0;
    return s;
}

/* A store made before the setting: its limit is the one the engine
 * applied then, 10000 (an import of 10001 is refused; 10000 goes in). */
static void a_version_2_store_keeps_the_limit_of_10000(void **state)
{
    fx *f = *state;
    char *json;
    uint64_t before;

    assert_int_equal(cairn_config_set_max_memories(f->db, 0), CAIRN_OK); /* must not survive */
    close_all(f);
    downgrade_to_version_2(f->dir);
    open_all(f, NULL);
    json = fill_json(0, 10001, "big");
    before = records(f);
    assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSON, json, strlen(json), NULL, NULL,
                                      NULL),
                     CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "max-memories setting (10000)"));
    assert_int_equal(records(f), before);
    free(json);
    json = fill_json(0, 10000, "big");
    assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSON, json, strlen(json), NULL, NULL,
                                      NULL),
                     CAIRN_OK);
    assert_int_equal(live_total(f), 10000);
    free(json);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(a_store_past_the_setting_prunes_and_reports_it),
        T(a_change_of_the_setting_reaches_an_open_handle),
        T(a_change_by_another_writer_holds_from_the_next_store),
        T(the_handle_option_replaces_the_setting),
        T(an_import_past_the_limit_is_refused_whole),
        T(a_version_2_store_keeps_the_limit_of_10000),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
