/*
 * test_config.c - the store's settings (engine/log/config.c, cairn.h
 * "Store settings"): what a new store holds, max_memories changed and kept
 * across reopens, seen by a reader in another handle, refused on a
 * read-only handle, unchanged by a failed MANIFEST write, and a store whose
 * MANIFEST is of version 2 (before the setting) read with the old limit.
 * Each test works in a fresh temporary directory and removes it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bytes.h"
#include "cairn.h"
#include "cairn_sys.h"
#include "filehdr.h"
#include "testutil.h"

typedef struct fx {
    char *dir;  /* the temp dir */
    char *path; /* dir/db: the store */
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (f == NULL)
        return -1;
    f->dir = tu_mkdtemp("config");
    if (f->dir == NULL)
        return -1;
    f->path = tu_join(f->dir, "db");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    tu_rmrf(f->dir);
    free(f->dir);
    free(f->path);
    free(f);
    return 0;
}

static cairn_db *open_store(const char *path, int create, int read_only, const cairn_io *io)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    char err[CAIRN_ERRMSG_MAX] = "";
    int rc;
    o.create = create;
    o.read_only = read_only;
    o.background = 0;
    o.io = io;
    rc = cairn_open(&db, path, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        fail_msg("cairn_open(%s): %d %s", path, rc, err);
    return db;
}

static uint64_t limit_of(cairn_db *db)
{
    cairn_config c;
    memset(&c, 0xab, sizeof c);
    assert_int_equal(cairn_config_get(db, &c), CAIRN_OK);
    return c.max_memories;
}

static uint64_t generation_of(cairn_db *db)
{
    cairn_stats st;
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    return st.generation;
}

static void append_one(cairn_db *db)
{
    cairn_entry e;
    memset(&e, 0, sizeof e);
    e.type = CAIRN_REC_EVENT;
    e.json = "{}";
    e.json_len = 2;
    assert_int_equal(cairn_append(db, &e, NULL), CAIRN_OK);
}

/* A new store keeps the settings it was created with, and 10000. */
static void test_a_new_store_holds_its_settings_and_the_default_limit(void **state)
{
    fx *f = *state;
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL, *ro;
    cairn_config c;
    o.create = 1;
    o.background = 0;
    o.durability = CAIRN_DURABILITY_FULL;
    o.batch_ms = 9;
    o.segment_size = 8192;
    assert_int_equal(cairn_open(&db, f->path, &o, NULL, 0), CAIRN_OK);
    assert_int_equal(cairn_config_get(db, &c), CAIRN_OK);
    assert_int_equal(c.durability, CAIRN_DURABILITY_FULL);
    assert_int_equal(c.batch_ms, 9);
    assert_int_equal(c.segment_size, 8192);
    assert_int_equal(c.max_memories, 10000);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    /* A handle that overrides durability for itself: the stored one is
     * still what the settings say. */
    o.create = 0;
    o.durability = CAIRN_DURABILITY_NONE;
    o.read_only = 1;
    assert_int_equal(cairn_open(&ro, f->path, &o, NULL, 0), CAIRN_OK);
    assert_int_equal(cairn_config_get(ro, &c), CAIRN_OK);
    assert_int_equal(c.durability, CAIRN_DURABILITY_FULL);
    assert_int_equal(c.max_memories, 10000);
    assert_int_equal(cairn_close(ro), CAIRN_OK);
}

/* A limit given at creation is in the store's first MANIFEST: no moment
 * holds the default instead. CAIRN_NO_LIMIT is no limit; an existing store
 * keeps its own; a caller built with version 3 gets the default. */
static void test_the_limit_given_at_creation_is_in_the_first_manifest(void **state)
{
    fx *f = *state;
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    char *p2 = tu_join(f->dir, "db2"), *p3 = tu_join(f->dir, "db3");

    o.create = 1;
    o.background = 0;
    o.max_memories = 250;
    assert_int_equal(cairn_open(&db, f->path, &o, NULL, 0), CAIRN_OK);
    assert_int_equal(limit_of(db), 250);
    assert_int_equal(generation_of(db), 1);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    o.max_memories = 7; /* the store exists: its own stays */
    db = NULL;
    assert_int_equal(cairn_open(&db, f->path, &o, NULL, 0), CAIRN_OK);
    assert_int_equal(limit_of(db), 250);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    o.max_memories = CAIRN_NO_LIMIT;
    db = NULL;
    assert_int_equal(cairn_open(&db, p2, &o, NULL, 0), CAIRN_OK);
    assert_int_equal(limit_of(db), 0);
    assert_int_equal(generation_of(db), 1);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    o.version = 3; /* no max_memories member: the default */
    o.max_memories = 5;
    db = NULL;
    assert_int_equal(cairn_open(&db, p3, &o, NULL, 0), CAIRN_OK);
    assert_int_equal(limit_of(db), 10000);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    free(p2);
    free(p3);
}

/* A change writes a new MANIFEST that reopens with it; 0 (no limit) too.
 * Setting the value the store holds writes nothing. */
static void test_max_memories_survives_reopen(void **state)
{
    fx *f = *state;
    cairn_db *db = open_store(f->path, 1, 0, NULL), *ro;
    uint64_t gen = generation_of(db);

    assert_int_equal(cairn_config_set_max_memories(db, 3), CAIRN_OK);
    assert_int_equal(limit_of(db), 3);
    assert_int_equal(generation_of(db), gen + 1);
    assert_int_equal(cairn_config_set_max_memories(db, 3), CAIRN_OK);
    assert_int_equal(generation_of(db), gen + 1); /* unchanged: nothing written */
    append_one(db);
    assert_int_equal(cairn_close(db), CAIRN_OK);

    db = open_store(f->path, 0, 0, NULL);
    assert_int_equal(limit_of(db), 3);
    assert_int_equal(cairn_config_set_max_memories(db, 0), CAIRN_OK);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    ro = open_store(f->path, 0, 1, NULL);
    assert_int_equal(limit_of(ro), 0);
    assert_int_equal(cairn_close(ro), CAIRN_OK);
    db = open_store(f->path, 0, 0, NULL);
    assert_int_equal(limit_of(db), 0);
    assert_int_equal(cairn_config_set_max_memories(db, UINT64_MAX), CAIRN_OK);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_store(f->path, 0, 0, NULL);
    assert_true(limit_of(db) == UINT64_MAX);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* A reader open before the change sees it at its next look. */
static void test_a_reader_sees_the_writers_change(void **state)
{
    fx *f = *state;
    cairn_db *db = open_store(f->path, 1, 0, NULL), *ro = open_store(f->path, 0, 1, NULL);
    assert_int_equal(limit_of(ro), 10000);
    assert_int_equal(cairn_config_set_max_memories(db, 42), CAIRN_OK);
    assert_int_equal(limit_of(ro), 42);
    assert_int_equal(cairn_close(ro), CAIRN_OK);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_a_read_only_handle_cannot_change_it(void **state)
{
    fx *f = *state;
    cairn_db *db = open_store(f->path, 1, 0, NULL), *ro;
    assert_int_equal(cairn_close(db), CAIRN_OK);
    ro = open_store(f->path, 0, 1, NULL);
    assert_int_equal(cairn_config_set_max_memories(ro, 5), CAIRN_EPERM);
    assert_non_null(strstr(cairn_errmsg(ro), "read-only"));
    assert_int_equal(limit_of(ro), 10000);
    assert_int_equal(cairn_close(ro), CAIRN_OK);
}

/* Fails every write of MANIFEST.tmp. */
static ssize_t failing_manifest_pwrite(void *user, const char *site, int fd, const void *buf,
                                       size_t len, off_t off)
{
    int *fired = user;
    if (strcmp(site, "manifest.write") == 0) {
        (*fired)++;
        errno = EIO;
        return -1;
    }
    return cairn_io_default()->pwrite(NULL, site, fd, buf, len, off);
}

/* A MANIFEST that could not be written: the call fails with the cause,
 * the handle keeps the old value and goes on appending, and a reopen
 * finds the old value. */
static void test_a_failed_write_keeps_the_old_value(void **state)
{
    fx *f = *state;
    cairn_io io = *cairn_io_default();
    int fired = 0;
    cairn_db *db = open_store(f->path, 1, 0, NULL);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    io.pwrite = failing_manifest_pwrite;
    io.user = &fired;
    db = open_store(f->path, 0, 0, &io);
    assert_int_equal(cairn_config_set_max_memories(db, 7), CAIRN_EIO);
    assert_true(fired >= 1);
    assert_non_null(strstr(cairn_errmsg(db), "MANIFEST"));
    assert_int_equal(limit_of(db), 10000);
    append_one(db);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_store(f->path, 0, 0, NULL);
    assert_int_equal(limit_of(db), 10000);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* The store's MANIFEST rewritten as version 2 wrote it: the 32-byte store
 * block without max_memories. */
static void downgrade_to_version_2(const char *path)
{
    tu_manifest_file_as_version(path, 2);
}

/* A store of before the setting opens with the limit the engine applied
 * then (10000), for readers and writers, and keeps its records; the first
 * change writes the newest version. */
static void test_a_version_2_store_opens_with_limit_10000(void **state)
{
    fx *f = *state;
    cairn_db *db = open_store(f->path, 1, 0, NULL), *ro;
    cairn_stats st;
    char *man;
    size_t len;
    uint8_t *b;

    assert_int_equal(cairn_config_set_max_memories(db, 0), CAIRN_OK); /* must not survive */
    append_one(db);
    append_one(db);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    downgrade_to_version_2(f->path);

    ro = open_store(f->path, 0, 1, NULL);
    assert_int_equal(limit_of(ro), 10000);
    assert_int_equal(cairn_close(ro), CAIRN_OK);
    db = open_store(f->path, 0, 0, NULL);
    assert_int_equal(limit_of(db), 10000);
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_int_equal(st.records, 2);
    assert_int_equal(cairn_config_set_max_memories(db, 50), CAIRN_OK);
    assert_int_equal(cairn_close(db), CAIRN_OK);

    man = tu_join(f->path, "MANIFEST");
    b = tu_read_file(man, &len);
    assert_non_null(b);
    assert_int_equal(get_le16(b + 8), MAN_VERSION);
    assert_int_equal(get_le64(b + 96), 50);
    free(b);
    free(man);
    db = open_store(f->path, 0, 0, NULL);
    assert_int_equal(limit_of(db), 50);
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_int_equal(st.records, 2);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* Retention policies: what parses, to what, and back. */
static void test_retention_policies_parse_and_format_back(void **state)
{
    static const struct {
        const char *text, *canon;
        unsigned memories;
        uint64_t grace, age, bytes;
    } good[] = {
        {"all", "all", CAIRN_RETAIN_ALL, 0, 0, 0},
        {"live", "live:7d", CAIRN_RETAIN_LIVE, 7 * 86400000ull, 0, 0},
        {"live:0", "live:0", CAIRN_RETAIN_LIVE, 0, 0, 0},
        {"live:90m", "live:90m", CAIRN_RETAIN_LIVE, 5400000, 0, 0},
        {"live:36h", "live:36h", CAIRN_RETAIN_LIVE, 36 * 3600000ull, 0, 0},
        {"live:1500ms", "live:1500ms", CAIRN_RETAIN_LIVE, 1500, 0, 0},
        {"live:120s", "live:2m", CAIRN_RETAIN_LIVE, 120000, 0, 0},
        {"events:30d", "all,events:30d", CAIRN_RETAIN_ALL, 0, 30 * 86400000ull, 0},
        {"events:10GiB", "all,events:10GiB", CAIRN_RETAIN_ALL, 0, 0, 10ull << 30},
        {"live:0,events:2048B", "live:0,events:2KiB", CAIRN_RETAIN_LIVE, 0, 0, 2048},
        {"live:7d,events:30d,events:1TiB", "live:7d,events:30d,events:1TiB", CAIRN_RETAIN_LIVE,
         7 * 86400000ull, 30 * 86400000ull, 1ull << 40},
    };
    static const char *const bad[] = {
        "", "none", "live:", "live:5", "live:-1d", "live:1y", "all,live", "live,all",
        "events:0", "events:0d", "events:30d,events:1d", "events:1KiB,events:2KiB", "all,",
        ",all", "events:10GB", "live:99999999999999999d", "live:1d ", "ALL", "events",
    };
    (void)state;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        cairn_retention r, back;
        char text[96];
        if (cairn_retain_parse(good[i].text, &r) != CAIRN_OK)
            fail_msg("'%s' did not parse", good[i].text);
        assert_int_equal(r.memories, good[i].memories);
        assert_int_equal(r.grace_ms, good[i].grace);
        assert_int_equal(r.events_max_age_ms, good[i].age);
        assert_int_equal(r.events_max_bytes, good[i].bytes);
        cairn_retain_format(&r, text, sizeof text);
        assert_string_equal(text, good[i].canon);
        assert_int_equal(cairn_retain_parse(text, &back), CAIRN_OK);
        assert_int_equal(back.memories, r.memories);
        assert_int_equal(back.grace_ms, r.grace_ms);
        assert_int_equal(back.events_max_age_ms, r.events_max_age_ms);
        assert_int_equal(back.events_max_bytes, r.events_max_bytes);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (cairn_retain_parse(bad[i], &(cairn_retention){0}) != CAIRN_EINVAL)
            fail_msg("'%s' parsed", bad[i]);
    assert_int_equal(cairn_retain_parse(NULL, &(cairn_retention){0}), CAIRN_EINVAL);
}

/* A policy set is kept in the MANIFEST, for this process and others; an
 * invalid one is refused and changes nothing. */
static void test_the_retention_policy_is_a_store_setting(void **state)
{
    fx *f = *state;
    cairn_db *db = open_store(f->path, 1, 0, NULL), *ro;
    cairn_retention r = {CAIRN_RETAIN_LIVE, 3600000, 0, 1u << 20}, bad = r;
    cairn_config c;

    assert_int_equal(cairn_config_get(db, &c), CAIRN_OK);
    assert_int_equal(c.retain.memories, CAIRN_RETAIN_ALL);
    assert_int_equal(cairn_config_set_retain(db, &r), CAIRN_OK);
    bad.memories = 7;
    assert_int_equal(cairn_config_set_retain(db, &bad), CAIRN_EINVAL);
    bad = r;
    bad.events_max_bytes = CAIRN_RETAIN_GRACE_MAX + 1;
    assert_int_equal(cairn_config_set_retain(db, &bad), CAIRN_EINVAL);
    ro = open_store(f->path, 0, 1, NULL);
    assert_int_equal(cairn_config_get(ro, &c), CAIRN_OK);
    assert_int_equal(c.retain.memories, r.memories);
    assert_int_equal(c.retain.grace_ms, r.grace_ms);
    assert_int_equal(c.retain.events_max_age_ms, r.events_max_age_ms);
    assert_int_equal(c.retain.events_max_bytes, r.events_max_bytes);
    assert_int_equal(cairn_close(ro), CAIRN_OK);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* Named record types: registered once, numbered from 0x8000 in order,
 * kept by every MANIFEST written after (a setting change, a reopen), seen
 * by a reader, never taken for an engine type; bad names refused. */
static void test_named_record_types(void **state)
{
    fx *f = *state;
    cairn_db *db = open_store(f->path, 1, 0, NULL), *ro = open_store(f->path, 0, 1, NULL);
    uint16_t a = 0, b = 0, again = 0, t = 0;
    char name[CAIRN_TYPE_NAME_MAX + 1];
    static const char *const bad[] = {"", "Tool", "1tool", "tool call", "memory", "event",
                                      "x2345678901234567890123456789012345678901234567890123456789012345"};
    assert_int_equal(cairn_type_register(db, "tool_call", &a), CAIRN_OK);
    assert_int_equal(a, 0x8000);
    assert_int_equal(cairn_type_register(db, "commit.pushed", &b), CAIRN_OK);
    assert_int_equal(b, 0x8001);
    assert_int_equal(cairn_type_register(db, "tool_call", &again), CAIRN_OK);
    assert_int_equal(again, a);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(cairn_type_register(db, bad[i], &t), CAIRN_EINVAL);
    assert_int_equal(cairn_type_register(ro, "other", &t), CAIRN_EPERM);
    /* the reader sees them; names and numbers both ways */
    assert_int_equal(cairn_type_lookup(ro, "commit.pushed", &t), CAIRN_OK);
    assert_int_equal(t, b);
    assert_int_equal(cairn_type_lookup(ro, "event", &t), CAIRN_OK);
    assert_int_equal(t, CAIRN_REC_EVENT);
    assert_int_equal(cairn_type_lookup(ro, "40000", &t), CAIRN_OK);
    assert_int_equal(t, 40000);
    assert_int_equal(cairn_type_lookup(ro, "nosuch", &t), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_type_name(ro, a, name, sizeof name), 1);
    assert_string_equal(name, "tool_call");
    assert_int_equal(cairn_type_name(ro, 0x9000, name, sizeof name), 0);
    assert_string_equal(name, "36864");
    assert_int_equal(cairn_type_name(ro, CAIRN_REC_MEMORY, name, sizeof name), 1);
    assert_string_equal(name, "memory");
    /* another MANIFEST write keeps them, and so does a reopen */
    assert_int_equal(cairn_config_set_max_memories(db, 7), CAIRN_OK);
    assert_int_equal(cairn_close(ro), CAIRN_OK);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_store(f->path, 0, 0, NULL);
    assert_int_equal(cairn_type_lookup(db, "tool_call", &t), CAIRN_OK);
    assert_int_equal(t, a);
    assert_int_equal(cairn_type_register(db, "third", &t), CAIRN_OK);
    assert_int_equal(t, 0x8002);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_a_new_store_holds_its_settings_and_the_default_limit),
        T(test_max_memories_survives_reopen),
        T(test_the_limit_given_at_creation_is_in_the_first_manifest),
        T(test_a_reader_sees_the_writers_change),
        T(test_a_read_only_handle_cannot_change_it),
        T(test_a_failed_write_keeps_the_old_value),
        T(test_a_version_2_store_opens_with_limit_10000),
        T(test_retention_policies_parse_and_format_back),
        T(test_the_retention_policy_is_a_store_setting),
        T(test_named_record_types),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
