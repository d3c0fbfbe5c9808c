/*
 * fuzz_reflex_import.c - the reflexion readers of untrusted JSON, into a
 * real store created once in a temporary directory (durability none, no
 * background thread): byte 0 even, cairn_causal_import() of a
 * causal-graph.json; odd, cairn_episode_put() of an episode (with force).
 *
 * Invariants: no crash or leak; the call returns CAIRN_OK, CAIRN_EINVAL
 * (with a message) or CAIRN_ENOMEM; a failure appends nothing; after a
 * success every node the status counts can be reached by its own label
 * (a path of depth 0 to itself), and an episode put can be got back; an
 * episode as stored follows the rule for text, and an import that
 * succeeds leaves no record the fold cannot apply (a label it counted
 * would otherwise be dropped at replay).
 */
#include "fuzz.h"

#include "utf8.h"

#include <stdlib.h>

static cairn_db *db;
static cairn_reflex *rx;
static char dir[64];

static void remove_store(void)
{
    cairn_reflex_close(rx);
    cairn_close(db);
    fuzz_store_remove(dir);
}

static uint64_t records(void)
{
    cairn_stats s;
    FUZZ_CHECK(cairn_stats_get(db, &s) == CAIRN_OK);
    return s.records;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t before;
    int rc;

    if (db == NULL) {
        db = fuzz_store_open(dir, sizeof dir, "reflex");
        FUZZ_CHECK(cairn_reflex_open(db, &rx) == CAIRN_OK);
        atexit(remove_store);
    }
    if (size < 1 || size > (1u << 20))
        return 0;
    before = records();
    if (data[0] & 1) {
        char *out = NULL, *got = NULL;
        rc = cairn_episode_put(rx, (const char *)data + 1, size - 1, 1, &out);
        FUZZ_CHECK(rc == CAIRN_OK || rc == CAIRN_EINVAL || rc == CAIRN_ENOMEM);
        if (rc != CAIRN_OK) {
            FUZZ_CHECK(cairn_reflex_errmsg(rx)[0] != 0 || rc == CAIRN_ENOMEM);
            FUZZ_CHECK(records() == before);
            return 0;
        }
        FUZZ_CHECK(records() == before + 1);
        FUZZ_CHECK(cairn__utf8_bad(out, strlen(out), NULL) == strlen(out));
        char *session = strstr(out, "\"session\":\"");
        FUZZ_CHECK(session != NULL);
        free(out);
        char *decisions = NULL;
        FUZZ_CHECK(cairn_episode_list(rx, NULL, &got) == CAIRN_OK);
        free(got);
        (void)cairn_episode_decisions(rx, "episode-x", &decisions);
        free(decisions);
        return 0;
    }
    cairn_causal_import_stats st;
    cairn_reflex_status s0;
    FUZZ_CHECK(cairn_reflex_status_get(rx, &s0) == CAIRN_OK);
    rc = cairn_causal_import(rx, (const char *)data + 1, size - 1, &st);
    FUZZ_CHECK(rc == CAIRN_OK || rc == CAIRN_EINVAL || rc == CAIRN_ENOMEM);
    if (rc != CAIRN_OK) {
        FUZZ_CHECK(cairn_reflex_errmsg(rx)[0] != 0 || rc == CAIRN_ENOMEM);
        FUZZ_CHECK(records() == before);
        return 0;
    }
    cairn_reflex_status s;
    FUZZ_CHECK(cairn_reflex_status_get(rx, &s) == CAIRN_OK);
    FUZZ_CHECK(st.nodes == 0 || s.nodes > 0);
    FUZZ_CHECK(s.skipped == s0.skipped);
    cairn_pattern *v = NULL;
    size_t n = 0;
    FUZZ_CHECK(cairn_pattern_list(rx, 0, 1, &v, &n) == CAIRN_OK);
    FUZZ_CHECK(n == s.patterns);
    cairn_patterns_free(v, n);
    return 0;
}
