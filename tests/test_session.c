/*
 * test_session.c - the tool interface (engine/api/): the tool list and its
 * JSON Schemas, the check of every call's arguments against them, the
 * memory, log and reflexion tools end to end, errors that belong to their
 * call (several threads, one session), two sessions on one store, a
 * read-only session, and an embedder given as a plain callback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cairn.h"
#include "testutil.h"

typedef struct fx {
    char *root, *dir;
    cairn_session *s;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    char *err = NULL;
    if (f == NULL || (f->root = tu_mkdtemp("session")) == NULL)
        return -1;
    f->dir = tu_join(f->root, "store");
    if (cairn_session_open(&f->s, f->dir, "{\"embedder\":\"none\"}", &err) != CAIRN_OK) {
        fprintf(stderr, "open: %s\n", err ? err : "?");
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    assert_int_equal(cairn_session_close(f->s), CAIRN_OK);
    tu_rmrf(f->root);
    free(f->root);
    free(f->dir);
    free(f);
    return 0;
}

/* Call a tool; the parsed result (or error object) and the status. */
static cJSON *call(cairn_session *s, const char *tool, const char *args, int *rc)
{
    char *out = NULL;
    cJSON *o;
    *rc = cairn_session_call(s, tool, args, &out);
    assert_non_null(out);
    o = cJSON_Parse(out);
    if (o == NULL)
        fail_msg("%s: not JSON: %s", tool, out);
    cairn_free(out);
    return o;
}

/* A call that must succeed. */
static cJSON *ok(cairn_session *s, const char *tool, const char *args)
{
    int rc;
    cJSON *o = call(s, tool, args, &rc);
    if (rc != CAIRN_OK) {
        char *t = cJSON_PrintUnformatted(o);
        fail_msg("%s %s: %d %s", tool, args ? args : "", rc, t);
    }
    return o;
}

/* A call that must fail with code; its message must hold `names`. */
static void fails(cairn_session *s, const char *tool, const char *args, int code, const char *names)
{
    int rc;
    cJSON *o = call(s, tool, args, &rc), *e = cJSON_GetObjectItem(o, "error");
    const char *m = cJSON_GetStringValue(cJSON_GetObjectItem(e, "message"));
    const char *c = cJSON_GetStringValue(cJSON_GetObjectItem(e, "code"));
    if (rc != code)
        fail_msg("%s %s: got %d, want %d", tool, args, rc, code);
    assert_non_null(m);
    assert_non_null(c);
    assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(e, "status")), code);
    assert_string_equal(c, code == CAIRN_EINVAL      ? "CAIRN_EINVAL"
                           : code == CAIRN_ENOTFOUND ? "CAIRN_ENOTFOUND"
                           : code == CAIRN_EPERM     ? "CAIRN_EPERM"
                           : code == CAIRN_EEXIST    ? "CAIRN_EEXIST"
                                                     : c);
    if (names != NULL && strstr(m, names) == NULL)
        fail_msg("%s %s: message \"%s\" does not name \"%s\"", tool, args, m, names);
    cJSON_Delete(o);
}

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItem(o, a);
    return cJSON_GetStringValue(b ? cJSON_GetObjectItem(v, b) : v);
}

static double num_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItem(o, a);
    return cJSON_GetNumberValue(b ? cJSON_GetObjectItem(v, b) : v);
}

/* ---- the tool list ----------------------------------------------------------- */

static void t_tools_are_described_by_json_schemas(void **state)
{
    static const char *const want[] = {
        "memory_add",    "memory_recall", "memory_context", "memory_search", "memory_get",
        "memory_list",   "memory_update", "memory_remove",  "memory_restore", "memory_forget",
        "memory_stats",  "memory_history", "log_append",    "log_query",     "episode_new",
        "episode_get",   "episode_list",  "causal_node",    "causal_edge",   "causal_path",
        "causal_status", "pattern_add",   "pattern_list",   "pattern_anti",  "stream_add",
        "stream_list",   "stream_search", "core_show",      "core_set",      "core_append",
        "core_remove",   "archival_insert", "archival_search", "reflection_add", "tiers_stats"};
    cJSON *tools = cJSON_Parse(cairn_session_tools()), *t;
    size_t found = 0;
    (void)state;
    assert_non_null(tools);
    assert_int_equal(cJSON_GetArraySize(tools), sizeof want / sizeof *want);
    cJSON_ArrayForEach(t, tools) {
        const cJSON *schema = cJSON_GetObjectItem(t, "inputSchema"), *p;
        const char *name = str_at(t, "name", NULL);
        assert_non_null(name);
        assert_true(strlen(str_at(t, "description", NULL)) > 20);
        assert_string_equal(str_at(schema, "type", NULL), "object");
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(schema, "additionalProperties")));
        cJSON_ArrayForEach(p, cJSON_GetObjectItem(schema, "properties"))
            assert_true(strlen(str_at(p, "description", NULL)) > 5);
        for (size_t i = 0; i < sizeof want / sizeof *want; i++)
            found += strcmp(want[i], name) == 0;
    }
    assert_int_equal(found, sizeof want / sizeof *want);
    /* one schema in full: what a client shows a model */
    cJSON_ArrayForEach(t, tools) {
        if (strcmp(str_at(t, "name", NULL), "memory_recall") == 0) {
            const cJSON *props = cJSON_GetObjectItem(cJSON_GetObjectItem(t, "inputSchema"),
                                                     "properties");
            assert_string_equal(
                cJSON_GetStringValue(cJSON_GetArrayItem(
                    cJSON_GetObjectItem(cJSON_GetObjectItem(t, "inputSchema"), "required"), 0)),
                "query");
            assert_int_equal((int)num_at(props, "k", "minimum"), 1);
            assert_int_equal((int)num_at(props, "k", "maximum"), 1000);
            assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(
                                 cJSON_GetObjectItem(props, "mode"), "enum")),
                             3);
            assert_true(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "annotations"),
                                                         "readOnlyHint")));
        }
    }
    cJSON_Delete(tools);
}

/* ---- arguments ------------------------------------------------------------------ */

static void t_arguments_are_checked_before_anything_runs(void **state)
{
    fx *f = *state;
    cJSON *o;
    fails(f->s, "memory_add", "{}", CAIRN_EINVAL, "\"content\"");
    fails(f->s, "memory_add", "{\"content\":5}", CAIRN_EINVAL, "content: must be a string");
    fails(f->s, "memory_add", "{\"content\":\"x\",\"importance\":2}", CAIRN_EINVAL,
          "importance: must be a number from 0 to 1");
    fails(f->s, "memory_add", "{\"content\":\"x\",\"colour\":\"red\"}", CAIRN_EINVAL,
          "unknown argument \"colour\"");
    fails(f->s, "memory_add", "{\"content\":\"x\",\"tags\":[1]}", CAIRN_EINVAL,
          "tags: must be an array of strings");
    fails(f->s, "memory_add", "{\"content\":\"x\",\"expires_at\":\"soon\"}", CAIRN_EINVAL,
          "expires_at");
    fails(f->s, "memory_recall", "{\"query\":\"x\",\"k\":0}", CAIRN_EINVAL, "k: must be an integer");
    fails(f->s, "memory_recall", "{\"query\":\"x\",\"k\":2.5}", CAIRN_EINVAL, "k: must be an integer");
    fails(f->s, "memory_recall", "{\"query\":\"x\",\"mode\":\"fuzzy\"}", CAIRN_EINVAL,
          "mode: must be one of hybrid|lexical|semantic");
    fails(f->s, "memory_recall", "[1]", CAIRN_EINVAL, "must be a JSON object");
    fails(f->s, "memory_recall", "{\"query\":", CAIRN_EINVAL, "not valid JSON");
    fails(f->s, "causal_node", "{\"type\":\"idea\",\"label\":\"x\"}", CAIRN_EINVAL, "type");
    fails(f->s, "no_such_tool", "{}", CAIRN_ENOTFOUND, "no_such_tool");
    /* nothing above stored anything */
    o = ok(f->s, "memory_stats", NULL);
    assert_int_equal((int)num_at(o, "total", NULL), 0);
    cJSON_Delete(o);
    /* null is as if absent */
    o = ok(f->s, "memory_add", "{\"content\":\"null tags\",\"tags\":null}");
    assert_string_equal(str_at(o, "memory", "content"), "null tags");
    cJSON_Delete(o);
}

/* ---- memories ------------------------------------------------------------------- */

static void t_a_memory_round_trips_through_every_memory_tool(void **state)
{
    fx *f = *state;
    char args[256], id[64];
    cJSON *o, *m;

    o = ok(f->s, "memory_add",
           "{\"content\":\"Use ripgrep to search the repository\",\"category\":\"lesson\","
           "\"importance\":0.8,\"tags\":[\"tools\",\"search\"],\"namespace\":\"alice\"}");
    m = cJSON_GetObjectItem(o, "memory");
    snprintf(id, sizeof id, "%s", str_at(m, "id", NULL));
    assert_string_equal(str_at(m, "category", NULL), "lesson");
    assert_string_equal(str_at(m, "namespace", NULL), "alice");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(
                            cJSON_GetObjectItem(cJSON_GetObjectItem(m, "metadata"), "tags"), 1)),
                        "search");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(o, "existed")));
    cJSON_Delete(o);
    /* the same content again: stored once */
    o = ok(f->s, "memory_add",
           "{\"content\":\"Use ripgrep to search the repository\",\"namespace\":\"alice\"}");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "existed")));
    assert_string_equal(str_at(o, "memory", "id"), id);
    cJSON_Delete(o);

    o = ok(f->s, "memory_recall", "{\"query\":\"search repository\",\"namespace\":\"alice\"}");
    assert_int_equal((int)num_at(o, "count", NULL), 1);
    assert_string_equal(str_at(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "memories"), 0), "id",
                               NULL),
                        id);
    cJSON_Delete(o);
    o = ok(f->s, "memory_recall", "{\"query\":\"search repository\"}"); /* namespace "" */
    assert_int_equal((int)num_at(o, "count", NULL), 0);
    cJSON_Delete(o);
    o = ok(f->s, "memory_recall",
           "{\"query\":\"search\",\"namespace\":[\"alice\"],\"tags\":[\"nope\"]}");
    assert_int_equal((int)num_at(o, "count", NULL), 0);
    cJSON_Delete(o);
    o = ok(f->s, "memory_context",
           "{\"query\":\"ripgrep\",\"namespace\":\"alice\",\"format\":\"xml\"}");
    assert_non_null(strstr(str_at(o, "context", NULL), "<memory category=\"lesson\">"));
    assert_int_equal((int)num_at(o, "included", NULL), 1);
    cJSON_Delete(o);
    o = ok(f->s, "memory_search", "{\"query\":\"ripgrep\",\"namespace\":\"alice\"}");
    assert_int_equal((int)num_at(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "results"), 0), "score",
                                 NULL),
                     1);
    cJSON_Delete(o);

    snprintf(args, sizeof args, "{\"id\":\"%s\",\"importance\":0.2,\"tags\":[\"cli\"]}", id);
    o = ok(f->s, "memory_update", args);
    assert_true(num_at(o, "memory", "importance") == 0.2);
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetArrayItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "memory"), "metadata"),
                                "tags"),
            0)),
        "cli");
    cJSON_Delete(o);

    snprintf(args, sizeof args, "{\"id\":\"%s\"}", id);
    o = ok(f->s, "memory_get", args);
    {
        double before = num_at(o, "memory", "accessCount");
        cJSON_Delete(o);
        cJSON_Delete(ok(f->s, "memory_search", "{\"query\":\"ripgrep\",\"namespace\":\"alice\"}"));
        o = ok(f->s, "memory_get", args); /* a search only looks */
        assert_true(num_at(o, "memory", "accessCount") == before);
        cJSON_Delete(o);
    }
    cJSON_Delete(ok(f->s, "memory_remove", args));
    fails(f->s, "memory_get", args, CAIRN_ENOTFOUND, id);
    fails(f->s, "memory_remove", args, CAIRN_ENOTFOUND, id);
    o = ok(f->s, "memory_restore", args);
    assert_string_equal(str_at(o, "memory", "content"), "Use ripgrep to search the repository");
    cJSON_Delete(o);
    o = ok(f->s, "memory_get", args);
    assert_true(num_at(o, "memory", "importance") == 0.2);
    cJSON_Delete(o);
    o = ok(f->s, "memory_history", args);
    {
        /* store, update, delete, restore's new copy, in order */
        const cJSON *r = cJSON_GetObjectItem(o, "records");
        const char *types[] = {"memory", "memory.update", "memory.delete", "memory"};
        int i = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, r) {
            if (strcmp(str_at(e, "type", NULL), "memory.access") == 0)
                continue;
            assert_true(i < 4);
            assert_string_equal(str_at(e, "type", NULL), types[i++]);
        }
        assert_int_equal(i, 4);
    }
    cJSON_Delete(o);
    fails(f->s, "memory_history", "{\"id\":\"m0000000000000000\"}", CAIRN_ENOTFOUND,
          "m0000000000000000");

    o = ok(f->s, "memory_list", "{\"namespace\":\"alice\",\"category\":\"lesson\"}");
    assert_int_equal((int)num_at(o, "count", NULL), 1);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(o, "truncated")));
    cJSON_Delete(o);
    o = ok(f->s, "memory_stats", NULL);
    assert_int_equal((int)num_at(o, "total", NULL), 1);
    assert_int_equal((int)num_at(o, "byCategory", "lesson"), 1);
    cJSON_Delete(o);

    /* an update that expires it: done and said; another brings it back */
    snprintf(args, sizeof args, "{\"id\":\"%s\",\"expires_at\":\"2000-01-01\"}", id);
    o = ok(f->s, "memory_update", args);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "memory")));
    assert_non_null(strstr(str_at(o, "note", NULL), "expired"));
    cJSON_Delete(o);
    snprintf(args, sizeof args, "{\"id\":\"%s\"}", id);
    fails(f->s, "memory_get", args, CAIRN_ENOTFOUND, id);
    snprintf(args, sizeof args,
             "{\"id\":\"%s\",\"expires_at\":\"never\",\"tags\":[\"back\"]}", id);
    o = ok(f->s, "memory_update", args); /* tags too: read back once it is live again */
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "memory"), "expiresAt")));
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetArrayItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "memory"), "metadata"),
                                "tags"),
            0)),
        "back");
    cJSON_Delete(o);
}

static void t_list_says_when_it_stops_at_the_limit(void **state)
{
    fx *f = *state;
    char args[64];
    cJSON *o;
    for (int i = 0; i < 5; i++) {
        snprintf(args, sizeof args, "{\"content\":\"memory number %d\"}", i);
        cJSON_Delete(ok(f->s, "memory_add", args));
    }
    o = ok(f->s, "memory_list", "{\"limit\":3}");
    assert_int_equal((int)num_at(o, "count", NULL), 3);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "truncated")));
    assert_string_equal(str_at(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "memories"), 0),
                               "content", NULL),
                        "memory number 0");
    assert_int_equal((int)num_at(o, "next_offset", NULL), 3);
    cJSON_Delete(o);
    o = ok(f->s, "memory_list", "{\"limit\":3,\"offset\":3}"); /* the next page: the rest */
    assert_int_equal((int)num_at(o, "count", NULL), 2);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(o, "truncated")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "next_offset")));
    assert_string_equal(str_at(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "memories"), 0),
                               "content", NULL),
                        "memory number 3");
    cJSON_Delete(o);
    o = ok(f->s, "memory_forget", "{\"mode\":\"aggressive\",\"dry_run\":true}");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "dry_run")));
    assert_int_equal((int)(num_at(o, "pruned", NULL) + num_at(o, "kept", NULL)), 5);
    cJSON_Delete(o);
    o = ok(f->s, "memory_stats", NULL);
    assert_int_equal((int)num_at(o, "total", NULL), 5); /* a dry run changed nothing */
    cJSON_Delete(o);
}

static void t_a_prune_past_the_limit_is_reported(void **state)
{
    fx *f = *state;
    cairn_options co = CAIRN_OPTIONS_INIT;
    char *dir = tu_join(f->root, "limited"), *err = NULL;
    cairn_session *s;
    cairn_db *db;
    cJSON *o;

    co.create = 1;
    co.max_memories = 2;
    assert_int_equal(cairn_open(&db, dir, &co, NULL, 0), CAIRN_OK);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_int_equal(cairn_session_open(&s, dir, NULL, &err), CAIRN_OK);
    assert_null(err);
    cJSON_Delete(ok(s, "memory_add", "{\"content\":\"one\"}"));
    cJSON_Delete(ok(s, "memory_add", "{\"content\":\"two\"}"));
    o = ok(s, "memory_add", "{\"content\":\"three\"}");
    assert_int_equal((int)num_at(o, "pruned", "count"), 1);
    assert_int_equal((int)num_at(o, "pruned", "limit"), 2);
    assert_string_equal(str_at(o, "pruned", "reason"), "maxMemories");
    cJSON_Delete(o);
    assert_int_equal(cairn_session_close(s), CAIRN_OK);
    free(dir);
}

/* ---- the log --------------------------------------------------------------------- */

static void t_log_append_and_query_page_through_next_seq(void **state)
{
    fx *f = *state;
    char args[128];
    double next;
    cJSON *o;
    for (int i = 0; i < 5; i++) {
        snprintf(args, sizeof args, "{\"payload\":{\"n\":%d},\"namespace\":\"%s\"}", i,
                 i % 2 ? "odd" : "even");
        o = ok(f->s, "log_append", args);
        assert_true(num_at(o, "seq", NULL) >= 1);
        cJSON_Delete(o);
    }
    fails(f->s, "log_append", "{\"payload\":1,\"type\":\"No Such\"}", CAIRN_EINVAL, "type");
    fails(f->s, "log_query", "{\"type\":\"never.named\"}", CAIRN_ENOTFOUND, "never.named");
    /* a name of the caller's is registered at its first use, then queried by */
    o = ok(f->s, "log_append", "{\"payload\":{\"tool\":\"rg\"},\"type\":\"tool_call\",\"namespace\":\"named\"}");
    cJSON_Delete(o);
    o = ok(f->s, "log_query", "{\"type\":\"tool_call\"}");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "records")), 1);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(
                            cJSON_GetArrayItem(cJSON_GetObjectItem(o, "records"), 0), "type")),
                        "tool_call");
    cJSON_Delete(o);
    fails(f->s, "log_append", "{}", CAIRN_EINVAL, "payload");
    o = ok(f->s, "log_append", "{\"payload\":null,\"namespace\":\"nulls\"}"); /* null is a value */
    cJSON_Delete(o);
    o = ok(f->s, "log_query", "{\"namespace\":\"nulls\"}");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "records"), 0),
                                                 "payload")));
    cJSON_Delete(o);
    o = ok(f->s, "log_query", "{\"namespace\":\"even\",\"limit\":2}");
    assert_int_equal((int)num_at(o, "count", NULL), 2);
    assert_int_equal((int)num_at(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "records"), 1),
                                 "payload", "n"),
                     2);
    next = num_at(o, "next_seq", NULL);
    assert_true(next > 0);
    cJSON_Delete(o);
    snprintf(args, sizeof args, "{\"namespace\":\"even\",\"from_seq\":%.0f}", next);
    o = ok(f->s, "log_query", args);
    assert_int_equal((int)num_at(o, "count", NULL), 1);
    assert_int_equal((int)num_at(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "records"), 0),
                                 "payload", "n"),
                     4);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "next_seq")));
    cJSON_Delete(o);
}

/* ---- reflexion ------------------------------------------------------------------- */

static void t_episodes_graph_and_patterns(void **state)
{
    fx *f = *state;
    cJSON *o;
    o = ok(f->s, "episode_new",
           "{\"session\":\"s1\",\"task\":\"fix CI\",\"outcome\":\"failure\","
           "\"lessons\":[\"pin the toolchain\"]}");
    assert_string_equal(str_at(o, "episode", "id"), "episode-s1");
    cJSON_Delete(o);
    fails(f->s, "episode_new", "{\"session\":\"s1\",\"task\":\"again\",\"outcome\":\"success\"}",
          CAIRN_EEXIST, "force");
    o = ok(f->s, "episode_new", /* null: as if absent, here too */
           "{\"session\":\"s2\",\"task\":\"t\",\"outcome\":\"partial\",\"decisions\":null,"
           "\"lessons\":null,\"timestamp\":1795000000000}");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "episode"),
                                                            "decisions")),
                     0);
    assert_non_null(strstr(str_at(o, "episode", "timestamp"), "2026-11-18T11:06:40"));
    cJSON_Delete(o);
    cJSON_Delete(ok(f->s, "episode_new",
                    "{\"session\":\"s1\",\"task\":\"again\",\"outcome\":\"success\","
                    "\"force\":true}"));
    o = ok(f->s, "episode_get", "{\"session\":\"s1\"}");
    assert_string_equal(str_at(o, "episode", "task"), "again");
    cJSON_Delete(o);
    fails(f->s, "episode_get", "{\"session\":\"nope\"}", CAIRN_ENOTFOUND, "nope");
    o = ok(f->s, "episode_list", "{\"outcome\":\"success\"}");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "episodes")), 1);
    cJSON_Delete(o);

    cJSON_Delete(ok(f->s, "causal_node", "{\"type\":\"decision\",\"label\":\"Pin the toolchain\"}"));
    o = ok(f->s, "causal_node", "{\"type\":\"outcome\",\"label\":\"CI green\"}");
    {
        char args[128];
        snprintf(args, sizeof args,
                 "{\"source\":\"Pin the toolchain\",\"target\":\"%s\",\"type\":\"causes\","
                 "\"weight\":0.9}",
                 str_at(o, "node", "id"));
        cJSON_Delete(o);
        o = ok(f->s, "causal_edge", args); /* one by label, one by id */
    }
    assert_true(num_at(o, "edge", "weight") == 0.9);
    cJSON_Delete(o);
    fails(f->s, "causal_edge", "{\"source\":\"Nothing\",\"target\":\"CI green\",\"type\":\"causes\"}",
          CAIRN_ENOTFOUND, "source");
    o = ok(f->s, "causal_path", "{\"from_label\":\"toolchain\",\"to_label\":\"green\"}");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "found")));
    assert_int_equal((int)num_at(o, "depth", NULL), 1);
    cJSON_Delete(o);
    o = ok(f->s, "causal_path", "{\"from_label\":\"green\",\"to_label\":\"toolchain\"}");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(o, "found")));
    assert_non_null(str_at(o, "reason", NULL));
    cJSON_Delete(o);
    o = ok(f->s, "causal_status", NULL);
    assert_int_equal((int)num_at(o, "nodes", NULL), 2);
    assert_int_equal((int)num_at(o, "edges", NULL), 1);
    cJSON_Delete(o);

    cJSON_Delete(ok(f->s, "pattern_add",
                    "{\"name\":\"retry flaky\",\"trigger\":\"a test fails once\",\"action\":"
                    "\"rerun it\",\"success_rate\":0.1}"));
    o = ok(f->s, "pattern_add",
           "{\"name\":\"retry flaky\",\"trigger\":\"t\",\"action\":\"a\",\"success_rate\":0.2}");
    assert_int_equal((int)num_at(o, "pattern", "occurrences"), 2);
    assert_string_equal(str_at(o, "pattern", "trigger"), "a test fails once");
    cJSON_Delete(o);
    o = ok(f->s, "pattern_anti", NULL);
    assert_int_equal((int)num_at(o, "count", NULL), 1);
    cJSON_Delete(o);
    o = ok(f->s, "pattern_list", "{\"min_success_rate\":0.5}");
    assert_int_equal((int)num_at(o, "count", NULL), 0);
    cJSON_Delete(o);
}

/* ---- sessions, threads, read-only ------------------------------------------------- */

typedef struct getter {
    cairn_session *s;
    const char *id;
    int wrong; /* errors that did not name this thread's id */
} getter;

static void *get_missing(void *arg)
{
    getter *g = arg;
    char args[64];
    snprintf(args, sizeof args, "{\"id\":\"%s\"}", g->id);
    for (int i = 0; i < 300; i++) {
        char *out = NULL;
        int rc = cairn_session_call(g->s, "memory_get", args, &out);
        if (rc != CAIRN_ENOTFOUND || out == NULL || strstr(out, g->id) == NULL)
            g->wrong++;
        cairn_free(out);
    }
    return NULL;
}

static void t_each_call_gets_its_own_error_from_any_thread(void **state)
{
    fx *f = *state;
    getter g[2] = {{f->s, "m1111111111111111", 0}, {f->s, "m2222222222222222", 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, get_missing, &g[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(g[0].wrong, 0);
    assert_int_equal(g[1].wrong, 0);
}

static void t_two_sessions_see_each_others_writes(void **state)
{
    fx *f = *state;
    cairn_session *b;
    char *err = NULL, args[96];
    cJSON *o;
    assert_int_equal(cairn_session_open(&b, f->dir, NULL, &err), CAIRN_OK);
    for (int i = 0; i < 10; i++) {
        snprintf(args, sizeof args, "{\"content\":\"from a %d\"}", i);
        cJSON_Delete(ok(f->s, "memory_add", args));
        snprintf(args, sizeof args, "{\"content\":\"from b %d\"}", i);
        cJSON_Delete(ok(b, "memory_add", args));
    }
    cJSON_Delete(ok(b, "causal_node", "{\"type\":\"event\",\"label\":\"b was here\"}"));
    o = ok(f->s, "memory_stats", NULL);
    assert_int_equal((int)num_at(o, "total", NULL), 20);
    cJSON_Delete(o);
    o = ok(f->s, "causal_path", "{\"from_label\":\"b was\",\"to_label\":\"here\"}");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "found")));
    cJSON_Delete(o);
    assert_int_equal(cairn_session_close(b), CAIRN_OK);
}

static void t_a_read_only_session_reads_and_refuses_writes(void **state)
{
    fx *f = *state;
    char *missing = tu_join(f->root, "missing"), *err = NULL;
    cairn_session *r;
    cJSON *o;

    cJSON_Delete(ok(f->s, "memory_add", "{\"content\":\"written before\"}"));
    assert_int_equal(cairn_session_open(&r, f->dir, "{\"read_only\":true}", &err), CAIRN_OK);
    o = ok(r, "memory_recall", "{\"query\":\"written\"}");
    assert_int_equal((int)num_at(o, "count", NULL), 1);
    cJSON_Delete(o);
    fails(r, "memory_add", "{\"content\":\"no\"}", CAIRN_EPERM, NULL);
    fails(r, "log_append", "{\"payload\":{}}", CAIRN_EPERM, NULL);
    assert_int_equal(cairn_session_close(r), CAIRN_OK);

    assert_int_equal(cairn_session_open(&r, missing, "{\"read_only\":true}", &err),
                     CAIRN_ENOTFOUND);
    assert_null(r);
    assert_non_null(strstr(err, "CAIRN_ENOTFOUND"));
    cairn_free(err);
    assert_int_equal(cairn_session_open(&r, missing, "{\"colour\":1}", &err), CAIRN_EINVAL);
    assert_non_null(strstr(err, "colour"));
    cairn_free(err);
    assert_int_equal(cairn_session_open(&r, missing, "{\"create\":false}", &err), CAIRN_ENOTFOUND);
    cairn_free(err);
    free(missing);
}

/* ---- an embedder as a callback ------------------------------------------------------ */

#define TOY_DIM 8

/* Words hashed into 8 buckets: texts sharing words point the same way. */
static int toy_embed(void *user, const char *text, size_t len, float *out, char *err)
{
    int *calls = user;
    unsigned h = 0;
    (*calls)++;
    if (len >= 5 && memcmp(text, "crash", 5) == 0) {
        snprintf(err, CAIRN_ERRMSG_MAX, "the toy model refuses '%.5s'", text);
        return 1;
    }
    memset(out, 0, sizeof(float) * TOY_DIM);
    for (size_t i = 0; i <= len; i++) {
        if (i == len || text[i] == ' ') {
            if (h != 0)
                out[h % TOY_DIM] += 1.0f;
            h = 0;
        } else {
            h = h * 31u + (unsigned char)text[i];
        }
    }
    return 0;
}

static void t_an_embedder_callback_embeds_memories_and_queries(void **state)
{
    fx *f = *state;
    int calls = 0;
    char *err = NULL;
    cJSON *o;

    assert_int_equal(cairn_session_set_embedder(f->s, "toy", TOY_DIM, 0.1, toy_embed, &calls, &err),
                     CAIRN_OK);
    cJSON_Delete(ok(f->s, "memory_add", "{\"content\":\"alpha beta gamma\"}"));
    cJSON_Delete(ok(f->s, "memory_add", "{\"content\":\"delta epsilon\"}"));
    assert_int_equal(calls, 2);
    o = ok(f->s, "memory_stats", NULL);
    assert_int_equal((int)num_at(cJSON_GetObjectItem(o, "vectors"), "count", NULL), 2);
    assert_string_equal(str_at(cJSON_GetObjectItem(o, "vectors"), "embedder", NULL), "toy");
    cJSON_Delete(o);
    o = ok(f->s, "memory_recall", "{\"query\":\"gamma alpha\",\"mode\":\"semantic\",\"k\":1}");
    assert_int_equal(calls, 3);
    assert_string_equal(str_at(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "memories"), 0),
                               "content", NULL),
                        "alpha beta gamma");
    cJSON_Delete(o);
    fails(f->s, "memory_add", "{\"content\":\"crash now\"}", CAIRN_EIO, "refuses");
    /* another dimension than the store's vectors: refused, the toy one stays */
    assert_int_equal(cairn_session_set_embedder(f->s, "toy", 4, 0.1, toy_embed, &calls, &err),
                     CAIRN_EINVAL);
    assert_non_null(err);
    cairn_free(err);
    o = ok(f->s, "memory_recall", "{\"query\":\"delta\",\"mode\":\"semantic\",\"k\":1}");
    assert_string_equal(str_at(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "memories"), 0),
                               "content", NULL),
                        "delta epsilon");
    cJSON_Delete(o);
    /* none: semantic recall is unavailable, lexical still works */
    assert_int_equal(cairn_session_set_embedder(f->s, NULL, 0, 0, NULL, NULL, &err), CAIRN_OK);
    fails(f->s, "memory_search", "{\"query\":\"delta\",\"mode\":\"semantic\"}", CAIRN_EUNAVAIL,
          "semantic");
    o = ok(f->s, "memory_search", "{\"query\":\"delta\",\"mode\":\"lexical\"}");
    assert_int_equal((int)num_at(o, "count", NULL), 1);
    cJSON_Delete(o);
}

/* The built-in embedder: a semantic search right after a store finds it
 * (memory_search's own handle catches up first), and "auto" on a store of
 * built-in vectors of another dimension takes that dimension. */
static void t_builtin_vectors_and_auto(void **state)
{
    fx *f = *state;
    char *dir = tu_join(f->root, "b128"), *err = NULL;
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_embedder e;
    cairn_session *s;
    cairn_db *db;
    cairn_mem *m;
    cairn_options o = CAIRN_OPTIONS_INIT;
    cJSON *r;

    assert_int_equal(cairn_session_open(&s, f->dir, "{\"embedder\":\"builtin\"}", &err), CAIRN_OK);
    cJSON_Delete(ok(s, "memory_search", "{\"query\":\"warm up\",\"mode\":\"lexical\"}"));
    cJSON_Delete(ok(s, "memory_add", "{\"content\":\"the deploy pipeline is green\"}"));
    r = ok(s, "memory_search", "{\"query\":\"deploy pipeline\",\"mode\":\"semantic\"}");
    assert_int_equal((int)num_at(r, "count", NULL), 1);
    cJSON_Delete(r);
    assert_int_equal(cairn_session_close(s), CAIRN_OK);

    o.create = 1;
    assert_int_equal(cairn_open(&db, dir, &o, NULL, 0), CAIRN_OK);
    assert_int_equal(cairn_mem_open(db, NULL, &m), CAIRN_OK);
    assert_int_equal(cairn_hash_embedder(&e, 128), CAIRN_OK);
    assert_int_equal(cairn_mem_set_embedder(m, &e), CAIRN_OK);
    assert_int_equal(cairn_mem_store(m, "vectors of 128 dimensions", &so, NULL, NULL), CAIRN_OK);
    cairn_mem_close(m);
    cairn_hash_embedder_free(&e);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_int_equal(cairn_session_open(&s, dir, NULL, &err), CAIRN_OK); /* auto */
    r = ok(s, "memory_stats", NULL);
    assert_int_equal((int)num_at(cJSON_GetObjectItem(r, "vectors"), "dimensions", NULL), 128);
    cJSON_Delete(r);
    cJSON_Delete(ok(s, "memory_add", "{\"content\":\"another one, embedded alike\"}"));
    r = ok(s, "memory_stats", NULL);
    assert_int_equal((int)num_at(cJSON_GetObjectItem(r, "vectors"), "count", NULL), 2);
    cJSON_Delete(r);
    assert_int_equal(cairn_session_close(s), CAIRN_OK);
    free(dir);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(t_tools_are_described_by_json_schemas),
        T(t_arguments_are_checked_before_anything_runs),
        T(t_a_memory_round_trips_through_every_memory_tool),
        T(t_list_says_when_it_stops_at_the_limit),
        T(t_a_prune_past_the_limit_is_reported),
        T(t_log_append_and_query_page_through_next_seq),
        T(t_episodes_graph_and_patterns),
        T(t_each_call_gets_its_own_error_from_any_thread),
        T(t_two_sessions_see_each_others_writes),
        T(t_a_read_only_session_reads_and_refuses_writes),
        T(t_an_embedder_callback_embeds_memories_and_queries),
        T(t_builtin_vectors_and_auto),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
