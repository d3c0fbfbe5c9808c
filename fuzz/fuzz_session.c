/*
 * fuzz_session.c - the tool interface (engine/api/) over arbitrary
 * arguments: byte 0 picks a tool of cairn_session_tools() (its value
 * modulo their number), the rest is the arguments' JSON text, called on a
 * real store (created once in /tmp, removed at exit).
 *
 * Invariants: a call always answers a JSON object, valid UTF-8; a failure
 * is {"error": {"code", "status", "message"}} with status = the returned
 * code, a known code and a message that is not empty; a failed call
 * appends nothing to the log but the access folds any writer's turn
 * makes (and but for an I/O error, which this store never has); a
 * success is not an error object.
 */
#include "fuzz.h"

#include <cjson/cJSON.h>

#include "api.h"
#include "utf8.h"

static cairn_session *s;
static char dir[64];
static cJSON *tools;

static void remove_store(void)
{
    cairn_session_close(s);
    cJSON_Delete(tools);
    fuzz_store_remove(dir);
}

static uint64_t last_seq(void)
{
    cairn_stats st;
    FUZZ_CHECK(cairn_stats_get(s->db, &st) == CAIRN_OK); /* the session's own handle */
    return st.last_seq;
}

/* Nothing but access folds after seq `before`: a writer's turn folds the
 * accesses recalls left in ACCESS, whether its own change then fails. */
static int only_access_folds_after(uint64_t before)
{
    cairn_range r = CAIRN_RANGE_INIT;
    cairn_iter *it;
    cairn_record rec;
    int rc, others = 0;
    r.seq_from = before + 1;
    FUZZ_CHECK(cairn_iter_open(s->db, &r, &it) == CAIRN_OK);
    while ((rc = cairn_iter_next(it, &rec)) == CAIRN_OK)
        others += rec.type != CAIRN_REC_MEMORY_ACCESS;
    FUZZ_CHECK(rc == CAIRN_ENOTFOUND);
    cairn_iter_close(it);
    return others == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *name;
    char *args, *out = NULL;
    uint64_t before;
    cJSON *o, *e;
    int rc;

    if (s == NULL) {
        cairn_close(fuzz_store_open(dir, sizeof dir, "session"));
        FUZZ_CHECK(cairn_session_open(&s, dir, "{\"embedder\":\"builtin\"}", NULL) == CAIRN_OK);
        FUZZ_CHECK((tools = cJSON_Parse(cairn_session_tools())) != NULL);
        atexit(remove_store);
    }
    if (size < 1)
        return 0;
    name = cJSON_GetStringValue(cJSON_GetObjectItem(
        cJSON_GetArrayItem(tools, data[0] % cJSON_GetArraySize(tools)), "name"));
    FUZZ_CHECK(name != NULL);
    if ((args = malloc(size)) == NULL)
        return 0;
    memcpy(args, data + 1, size - 1);
    args[size - 1] = 0;
    before = last_seq();
    rc = cairn_session_call(s, name, args, &out);
    free(args);
    FUZZ_CHECK(out != NULL);
    FUZZ_CHECK(cairn__utf8_bad(out, strlen(out), NULL) == strlen(out));
    FUZZ_CHECK((o = cJSON_Parse(out)) != NULL && cJSON_IsObject(o));
    e = cJSON_GetObjectItem(o, "error");
    if (rc == CAIRN_OK) {
        FUZZ_CHECK(e == NULL || !cJSON_IsObject(e) ||
                   cJSON_GetObjectItem(e, "status") == NULL);
    } else {
        const char *m = cJSON_GetStringValue(cJSON_GetObjectItem(e, "message"));
        const char *c = cJSON_GetStringValue(cJSON_GetObjectItem(e, "code"));
        FUZZ_CHECK(rc < 0 && rc >= CAIRN_ETOOBIG);
        FUZZ_CHECK((int)cJSON_GetNumberValue(cJSON_GetObjectItem(e, "status")) == rc);
        FUZZ_CHECK(c != NULL && strncmp(c, "CAIRN_E", 7) == 0);
        FUZZ_CHECK(m != NULL && m[0] != 0);
        FUZZ_CHECK(rc == CAIRN_EIO || rc == CAIRN_EFULL || only_access_folds_after(before));
    }
    cJSON_Delete(o);
    cairn_free(out);
    return 0;
}
