/*
 * test_memory.c - the memory engine (engine/memory): store, duplicates,
 * get, update, delete, recall and its score components, access records,
 * namespaces, filters, expiry, decay, persistence across reopen and
 * sealing, hostile records in the log, and read-your-writes across threads.
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
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "cairn.h"
#include "memrec.h"
#include "memstate.h"
#include "store.h"
#include "testutil.h"
#include "utf8.h"

typedef struct fx {
    char *dir;
    cairn_db *db;
    cairn_mem *mem;
} fx;

/* Every test runs twice (main): with the store's background threads off,
 * so the memory engine indexes each text inline, and on, so it indexes on
 * its own thread (engine/memory/indexer.h). */
static int with_threads;

static void open_all(fx *f, int background)
{
    char err[CAIRN_ERRMSG_MAX] = "";
    int rc;
    rc = tu_open_small(f->dir, background || with_threads, &f->db, err, sizeof err);
    if (rc != CAIRN_OK)
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
    with_threads = 0;
    char *d = tu_mkdtemp("memory");
    if (f == NULL || d == NULL)
        return -1;
    f->dir = tu_join(d, "store");
    free(d);
    open_all(f, 0);
    *state = f;
    return 0;
}

static int setup_threads(void **state)
{
    int rc = setup(state);
    fx *f = *state;
    with_threads = 1;
    close_all(f);
    open_all(f, 1);
    return rc;
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

static int contains(const char *buf, size_t len, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(buf + i, s, n) == 0)
            return 1;
    return 0;
}

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static char *store(fx *f, const char *ns, const char *content, const char *cat, double imp)
{
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_memory *m = NULL;
    int existed = -1;
    char *id;
    o.ns = ns;
    o.category = cat;
    o.importance = imp;
    if (cairn_mem_store(f->mem, content, &o, &m, &existed) != CAIRN_OK)
        fail_msg("store: %s", cairn_mem_errmsg(f->mem));
    assert_int_equal(existed, 0);
    id = strdup(m->id);
    cairn_mem_free(m);
    return id;
}

static void assert_same_decode(uint16_t type, const char *json, size_t len, int *flat_ok);

/* The store record's hand-written encoder writes exactly the generic
 * encoder's bytes: escapes, numbers (importance at full precision, times,
 * counts), null; and everything reads back exactly. */
static void the_store_record_encoder_writes_cjsons_bytes(void **state)
{
    static const char *const contents[] = {
        "plain text", "quote \" and backslash \\ here", "tab\tnew\nline\rcr\bbs\fff",
        "\x01\x1f control", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac utf-8", "del \x7f", "",
    };
    static const double imps[] = {0, 1, 0.5, 0.1, 0.95, 1.0 / 3.0, 0.123456789012345678, 1e-9,
                                  0.30000000000000004, 0.7, -0.0, 0.88888888888888884};
    static const int64_t times[] = {0, 1, 1700000000123ll, 999999999999999ll, 2147483647ll,
                                    2147483648ll, 8500000000000001ll, 9007199254740992ll};
    (void)state;
    for (size_t c = 0; c < sizeof contents / sizeof contents[0]; c++)
        for (size_t i = 0; i < sizeof imps / sizeof imps[0]; i++)
            for (size_t t = 0; t < sizeof times / sizeof times[0]; t++) {
                memrec r;
                char *a = NULL, *b = NULL;
                size_t la = 0, lb = 0;
                memset(&r, 0, sizeof r);
                r.type = CAIRN_REC_MEMORY;
                r.id = "m0123456789abcdef";
                r.content = contents[c];
                r.content_len = strlen(contents[c]);
                r.category = c % 2 ? "fact" : "a \"custom\" one";
                r.importance = imps[i];
                r.created_at = times[t];
                r.accessed_at = times[(t + 1) % 8];
                r.access_count = (uint64_t)times[(t + 2) % 8];
                r.expires_at = t % 2 ? times[t] : 0;
                assert_int_equal(cairn__memrec_encode(&r, &a, &la, NULL), CAIRN_OK);
                assert_int_equal(cairn__memrec_encode_generic(&r, &b, &lb, NULL), CAIRN_OK);
                assert_int_equal(la, lb);
                assert_string_equal(a, b);
                if (r.content_len > 0) { /* (an empty content is refused on reading) */
                    /* and every time reads back exactly, up to 2^53 */
                    memrec d;
                    assert_int_equal(cairn__memrec_decode(CAIRN_REC_MEMORY, a, la, &d, NULL),
                                     CAIRN_OK);
                    assert_true(d.importance == r.importance);
                    assert_int_equal(d.created_at, r.created_at);
                    assert_int_equal(d.accessed_at, r.accessed_at);
                    assert_int_equal(d.access_count, r.access_count);
                    assert_int_equal(d.expires_at, r.expires_at);
                    cairn__memrec_done(&d);
                    assert_same_decode(CAIRN_REC_MEMORY, a, la, NULL);
                }
                free(a);
                free(b);
            }
    /* Every hundredth (the encoder's own path for them) and a few numbers
     * next to them; each special byte at every place of a long content
     * (the encoder looks at eight bytes at a time). */
    for (int k = -1; k <= 203; k++) {
        static const char specials[] = "\"\\\x01\x1f\x7f\xc3\x80 ";
        memrec r;
        char *a = NULL, *b = NULL, text[40];
        size_t la = 0, lb = 0;
        int pos = (k + 1) % 33, sp = (k + 1) % (int)(sizeof specials - 1);
        memset(text, 'a', 33);
        text[33] = 0;
        text[pos] = specials[sp];
        memset(&r, 0, sizeof r);
        r.type = CAIRN_REC_MEMORY;
        r.id = "m0123456789abcdef";
        r.content = text;
        r.content_len = strlen(text);
        r.category = "fact";
        r.importance = k < 0 ? nextafter(0.5, 1) : k <= 100 ? k / 100.0
                     : k <= 200 ? (k - 100) * 0.01 : nextafter(0.01, 0);
        assert_int_equal(cairn__memrec_encode(&r, &a, &la, NULL), CAIRN_OK);
        assert_int_equal(cairn__memrec_encode_generic(&r, &b, &lb, NULL), CAIRN_OK);
        assert_int_equal(la, lb);
        assert_string_equal(a, b);
        free(a);
        free(b);
    }
}

/* Two decodes of one payload agree: the code, the message and every field. */
static void assert_same_decode(uint16_t type, const char *json, size_t len, int *flat_ok)
{
    cairn__memscan sc = {NULL, 0};
    cairn__err ea, eb;
    memrec a, b;
    int ra, rb;

    ea.msg[0] = eb.msg[0] = 0;
    ra = cairn__memrec_decode(type, json, len, &a, &ea);
    rb = cairn__memrec_decode_scan(&sc, type, json, len, NULL, 0, &b, &eb);
    assert_int_equal(ra, rb);
    assert_string_equal(ea.msg, eb.msg);
    if (ra == CAIRN_OK) {
        assert_int_equal(a.type, b.type);
        assert_true((a.id == NULL) == (b.id == NULL));
        if (a.id != NULL)
            assert_string_equal(a.id, b.id);
        assert_int_equal(a.content_len, b.content_len);
        if (a.content != NULL)
            assert_memory_equal(a.content, b.content, a.content_len);
        assert_true((a.category == NULL) == (b.category == NULL));
        if (a.category != NULL)
            assert_string_equal(a.category, b.category);
        assert_true((a.reason == NULL) == (b.reason == NULL));
        if (a.reason != NULL)
            assert_string_equal(a.reason, b.reason);
        assert_true((a.metadata == NULL) == (b.metadata == NULL));
        if (a.metadata != NULL)
            assert_string_equal(a.metadata, b.metadata);
        assert_true(a.importance == b.importance);
        assert_int_equal(a.created_at, b.created_at);
        assert_int_equal(a.accessed_at, b.accessed_at);
        assert_int_equal(a.access_count, b.access_count);
        assert_int_equal(a.expires_at, b.expires_at);
        assert_int_equal(a.restored_from, b.restored_from);
        assert_int_equal(a.has, b.has);
        assert_int_equal(a.batch_i, b.batch_i);
        assert_int_equal(a.batch_n, b.batch_n);
        /* the flat scan's strings live in its buffer, cJSON's in its tree */
        if (flat_ok != NULL && b.root == NULL)
            (*flat_ok)++;
        cairn__memrec_done(&a);
        cairn__memrec_done(&b);
    }
    cairn__memscan_free(&sc);
}

/* The replay's decoder without cJSON reads what cJSON reads, refuses what
 * it refuses with the same words, and hands cJSON what it declines
 * (escapes, nesting, a repeated field, odd spacing). */
static void the_flat_record_scan_decodes_as_cjson_does(void **state)
{
    static const struct {
        uint16_t type;
        const char *json;
        int flat; /* 1: read without cJSON */
    } cases[] = {
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"fact\"}", 1},
        {CAIRN_REC_MEMORY, " {\n\"id\" : \"m1\" ,\t\"content\":\"a b\",\"category\":\"c\","
                           "\"importance\":0.25,\"createdAt\":1700000000123,\"accessedAt\":-0,"
                           "\"expiresAt\":1e3,\"accessCount\":12,\"restoredFrom\":null,"
                           "\"metadata\":null,\"other\":false,\"more\":true,\"n\":-1.5E-2}\r\n", 1},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\","
                           "\"createdAt\":9007199254740992}", 1},
        {CAIRN_REC_MEMORY_UPDATE, "{\"id\":\"m1\",\"importance\":1,\"expiresAt\":null}", 1},
        {CAIRN_REC_MEMORY_UPDATE, "{\"id\":\"m1\",\"category\":\"decision\"}", 1},
        {CAIRN_REC_MEMORY_DELETE, "{\"id\":\"m1\",\"reason\":\"maxMemories\"}", 1},
        /* declined: cJSON decides */
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"q \\\" u \\u00e9\",\"category\":\"f\"}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\","
                           "\"metadata\":{\"k\":[1,2.50]}}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"id\":\"m2\",\"content\":\"x\",\"category\":\"f\"}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\",\"batch\":[0,2]}", 1},
        {CAIRN_REC_MEMORY_DELETE, "{\"id\":\"m1\",\"batch\": [ 6 , 7 ] ,\"reason\":\"r\"}", 1},
        {CAIRN_REC_MEMORY_UPDATE, "{\"batch\":[0,1],\"id\":\"m1\",\"importance\":1}", 1},
        /* a mark cJSON must judge: refused, or a second one */
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\",\"batch\":[2,2]}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\",\"batch\":[0.5,2]}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\",\"batch\":[-1,2]}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\",\"batch\":[0,2,3]}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\",\"batch\":[0]}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\",\"batch\":\"0,2\"}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\",\"batch\":[1,2],"
                           "\"batch\":[0,2]}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\"} trailing", 0},
        {CAIRN_REC_MEMORY, "\f{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\"}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\",\"importance\":01}", 0},
        {CAIRN_REC_MEMORY_ACCESS, "{\"ids\":[\"m1\"],\"at\":5}", 0},
        /* refused, by both, in the same words */
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\",\"importance\":2}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m 1\",\"content\":\"x\",\"category\":\"f\"}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"\",\"category\":\"f\"}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\",\"createdAt\":1.5}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\",\"metadata\":\"s\"}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\",\"embedder\":\"e\",\"dim\":2}", 0},
        {CAIRN_REC_MEMORY, "{\"id\":\"m1\",\"content\":\"x\"", 0},
        {CAIRN_REC_MEMORY_DELETE, "{\"reason\":\"x\"}", 0},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int flat = 0;
        assert_same_decode(cases[i].type, cases[i].json, strlen(cases[i].json), &flat);
        if (flat != cases[i].flat)
            fail_msg("case %zu: read %s cJSON, expected %s", i, flat ? "without" : "with",
                     cases[i].flat ? "without" : "with");
    }
}

/* An application may run in a locale whose decimal point is ',': the
 * record codecs write and read '.' all the same, as cJSON does, and the
 * flat scan agrees with cJSON there too. */
static void the_record_codecs_ignore_a_comma_locale(void **state)
{
    char *dir = tu_mkdtemp("locale");
    static const char *const flat[] = {
        "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\",\"importance\":0.25}",
        "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\",\"importance\":2.5e-1,"
        "\"createdAt\":1.7e12}",
        "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"f\",\"expiresAt\":0.25}",
    };
    memrec r, d;
    char *a = NULL, *b = NULL;
    size_t la = 0, lb = 0;
    (void)state;
    if (!tu_comma_numeric(dir)) {
        tu_rmrf(dir);
        free(dir);
        fail_msg("no locale with a ',' decimal point could be made (localedef, de_DE: the "
                 "Debian package locales)");
    }
    memset(&r, 0, sizeof r);
    r.type = CAIRN_REC_MEMORY;
    r.id = "m0123456789abcdef";
    r.content = "a comma locale";
    r.content_len = strlen(r.content);
    r.category = "fact";
    r.importance = 1.0 / 3.0;
    assert_int_equal(cairn__memrec_encode(&r, &a, &la, NULL), CAIRN_OK);
    assert_int_equal(cairn__memrec_encode_generic(&r, &b, &lb, NULL), CAIRN_OK);
    assert_string_equal(a, b);
    assert_non_null(strstr(a, "\"importance\":0.33333333333333331,"));
    assert_int_equal(cairn__memrec_decode(CAIRN_REC_MEMORY, a, la, &d, NULL), CAIRN_OK);
    assert_true(d.importance == 1.0 / 3.0);
    cairn__memrec_done(&d);
    assert_same_decode(CAIRN_REC_MEMORY, a, la, NULL);
    for (size_t i = 0; i < sizeof flat / sizeof flat[0]; i++)
        assert_same_decode(CAIRN_REC_MEMORY, flat[i], strlen(flat[i]), NULL);
    {
        cairn__memscan sc = {NULL, 0};
        assert_int_equal(cairn__memrec_decode_scan(&sc, CAIRN_REC_MEMORY, flat[0], strlen(flat[0]),
                                                   NULL, 0, &d, NULL),
                         CAIRN_OK);
        assert_true(d.importance == 0.25);
        cairn__memrec_done(&d);
        assert_int_equal(cairn__memrec_decode_scan(&sc, CAIRN_REC_MEMORY, flat[2], strlen(flat[2]),
                                                   NULL, 0, &d, NULL),
                         CAIRN_ECORRUPT); /* not an integer, in any locale */
        cairn__memscan_free(&sc);
    }
    free(a);
    free(b);
    tu_c_numeric();
    tu_rmrf(dir);
    free(dir);
}

static void store_returns_the_memory_with_defaults_and_get_finds_it(void **state)
{
    fx *f = *state;
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_memory *m = NULL, *g = NULL;
    int64_t before = now_ms();
    o.metadata = "{\"source\":\"test\",\"n\":1}";
    assert_int_equal(cairn_mem_store(f->mem, "User lives in San Francisco", &o, &m, NULL), CAIRN_OK);
    assert_string_equal(m->content, "User lives in San Francisco");
    assert_string_equal(m->category, "fact");
    assert_true(fabs(m->importance - 0.5) < 1e-12);
    assert_true(m->created_at >= before && m->created_at <= now_ms());
    assert_int_equal(m->accessed_at, m->created_at);
    assert_int_equal(m->access_count, 0);
    assert_int_equal(m->expires_at, 0);
    assert_string_equal(m->ns, "");
    assert_string_equal(m->metadata, "{\"source\":\"test\",\"n\":1}");
    assert_true(strlen(m->id) >= 1);
    assert_int_equal(cairn_mem_get(f->mem, m->id, &g), CAIRN_OK);
    assert_string_equal(g->id, m->id);
    assert_string_equal(g->content, m->content);
    assert_int_equal(g->seq, m->seq);
    cairn_mem_free(g);
    cairn_mem_free(m);
    assert_int_equal(cairn_mem_get(f->mem, "nope", &g), CAIRN_ENOTFOUND);
    assert_null(g);
}

static void exact_duplicates_are_stored_once_per_namespace(void **state)
{
    fx *f = *state;
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_memory *a = NULL, *b = NULL, *c = NULL;
    cairn_stats st1, st2;
    int existed = -1;
    assert_int_equal(cairn_mem_store(f->mem, "prefers TypeScript", &o, &a, &existed), CAIRN_OK);
    assert_int_equal(existed, 0);
    assert_int_equal(cairn_stats_get(f->db, &st1), CAIRN_OK);
    assert_int_equal(cairn_mem_store(f->mem, "prefers TypeScript", &o, &b, &existed), CAIRN_OK);
    assert_int_equal(existed, 1);
    assert_string_equal(a->id, b->id);
    assert_int_equal(cairn_stats_get(f->db, &st2), CAIRN_OK);
    assert_int_equal(st2.records, st1.records); /* nothing written */
    o.ns = "other";
    assert_int_equal(cairn_mem_store(f->mem, "prefers TypeScript", &o, &c, &existed), CAIRN_OK);
    assert_int_equal(existed, 0);
    assert_string_not_equal(c->id, a->id);
    cairn_mem_free(a);
    cairn_mem_free(b);
    cairn_mem_free(c);
}

static void invalid_input_is_refused_with_a_message(void **state)
{
    fx *f = *state;
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;
    char *id;
    o.importance = 1.5;
    assert_int_equal(cairn_mem_store(f->mem, "x", &o, NULL, NULL), CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "Invalid importance"));
    o.importance = -1;
    assert_int_equal(cairn_mem_store(f->mem, "", &o, NULL, NULL), CAIRN_EINVAL);
    o.metadata = "[1,2]";
    assert_int_equal(cairn_mem_store(f->mem, "x", &o, NULL, NULL), CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "metadata"));
    o.metadata = NULL;
    o.category = "";
    assert_int_equal(cairn_mem_store(f->mem, "x", &o, NULL, NULL), CAIRN_EINVAL);
    id = store(f, NULL, "something", NULL, -1);
    u.importance = 2;
    assert_int_equal(cairn_mem_update(f->mem, id, &u), CAIRN_EINVAL);
    u.importance = -1;
    assert_int_equal(cairn_mem_update(f->mem, id, &u), CAIRN_EINVAL); /* nothing to update */
    assert_int_equal(cairn_mem_update(f->mem, "missing", &u), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_mem_delete(f->mem, "missing", NULL), CAIRN_ENOTFOUND);
    free(id);
}

static void update_changes_fields_and_survives_reopen(void **state)
{
    fx *f = *state;
    cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;
    cairn_memory *g = NULL;
    char *id = store(f, NULL, "deploys go through staging", "skill", 0.4);
    u.importance = 0.9;
    u.category = "preference";
    u.metadata = "{\"why\":\"review\"}";
    assert_int_equal(cairn_mem_update(f->mem, id, &u), CAIRN_OK);
    close_all(f);
    open_all(f, 0);
    assert_int_equal(cairn_mem_get(f->mem, id, &g), CAIRN_OK);
    assert_true(fabs(g->importance - 0.9) < 1e-12);
    assert_string_equal(g->category, "preference");
    assert_string_equal(g->metadata, "{\"why\":\"review\"}");
    cairn_mem_free(g);
    free(id);
}

static void deleted_memories_never_come_back_but_stay_in_the_log(void **state)
{
    fx *f = *state;
    cairn_recall_hit *h = NULL;
    cairn_memory *g = NULL;
    cairn_iter *it = NULL;
    cairn_record rec;
    size_t n = 9;
    int found_content = 0, found_tombstone = 0;
    char *id = store(f, NULL, "the staging password rotates weekly", NULL, 0.9);
    assert_int_equal(cairn_mem_delete(f->mem, id, "obsolete"), CAIRN_OK);
    assert_int_equal(cairn_mem_get(f->mem, id, &g), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_mem_delete(f->mem, id, NULL), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_mem_recall(f->mem, "staging password", NULL, &h, &n), CAIRN_OK);
    assert_int_equal(n, 0);
    close_all(f);
    open_all(f, 0);
    assert_int_equal(cairn_mem_get(f->mem, id, &g), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_iter_open(f->db, NULL, &it), CAIRN_OK);
    while (cairn_iter_next(it, &rec) == CAIRN_OK) {
        if (rec.type == CAIRN_REC_MEMORY && rec.json_len > 0 &&
            contains(rec.json, rec.json_len, "rotates weekly"))
            found_content = 1;
        if (rec.type == CAIRN_REC_MEMORY_DELETE && contains(rec.json, rec.json_len, "obsolete"))
            found_tombstone = 1;
    }
    cairn_iter_close(it);
    assert_true(found_content);
    assert_true(found_tombstone);
    free(id);
}

static void recall_ranks_by_relevance_and_explains_every_component(void **state)
{
    fx *f = *state;
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    char *a = store(f, NULL, "User prefers TypeScript over JavaScript", "preference", 0.8);
    char *b = store(f, NULL, "User lives in San Francisco", "fact", 0.9);
    char *c = store(f, NULL, "The build uses TypeScript strict mode and TypeScript paths", "fact",
                    0.2);
    assert_int_equal(cairn_mem_recall(f->mem, "typescript preference", NULL, &h, &n), CAIRN_OK);
    assert_int_equal(n, 2); /* b has neither word */
    assert_string_equal(h[0].mem.id, a);
    assert_string_equal(h[1].mem.id, c);
    assert_true(fabs(h[0].relevance - 1.0) < 1e-12);
    for (size_t i = 0; i < n; i++) {
        double want = 0.5 * h[i].relevance + 0.3 * h[i].importance + 0.2 * h[i].recency;
        assert_true(fabs(h[i].score - want) < 1e-12);
        assert_true(h[i].bm25 > 0);
        assert_true(h[i].recency > 0.99 && h[i].recency <= 1.0); /* stored just now */
        assert_true(fabs(h[i].importance - h[i].mem.importance) < 1e-6);
        assert_int_equal(h[i].mem.access_count, 1); /* this recall */
    }
    assert_true(h[0].score >= h[1].score);
    cairn_recall_free(h, n);
    free(a);
    free(b);
    free(c);
}

static void recall_records_access_and_it_persists(void **state)
{
    fx *f = *state;
    cairn_recall_hit *h = NULL;
    cairn_memory *g = NULL;
    size_t n = 0;
    char *id = store(f, NULL, "the CI cache lives in S3", NULL, -1);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(cairn_mem_recall(f->mem, "CI cache", NULL, &h, &n), CAIRN_OK);
        assert_int_equal(n, 1);
        assert_int_equal(h[0].mem.access_count, (uint64_t)i + 1);
        cairn_recall_free(h, n);
    }
    close_all(f);
    open_all(f, 0);
    assert_int_equal(cairn_mem_get(f->mem, id, &g), CAIRN_OK);
    assert_int_equal(g->access_count, 3);
    assert_true(g->accessed_at >= g->created_at);
    cairn_mem_free(g);
    free(id);
}

static void namespaces_isolate_unless_a_recall_names_several(void **state)
{
    fx *f = *state;
    cairn_recall_opts o = CAIRN_RECALL_OPTS_INIT;
    const char *both[] = {"alice", "bob"}, *only_bob[] = {"bob"};
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    char *a = store(f, "alice", "likes green tea", NULL, -1);
    char *b = store(f, "bob", "likes black tea", NULL, -1);
    assert_int_equal(cairn_mem_recall(f->mem, "tea", NULL, &h, &n), CAIRN_OK);
    assert_int_equal(n, 0); /* the default namespace has none */
    o.ns = only_bob;
    o.n_ns = 1;
    assert_int_equal(cairn_mem_recall(f->mem, "tea", &o, &h, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].mem.id, b);
    assert_string_equal(h[0].mem.ns, "bob");
    cairn_recall_free(h, n);
    o.ns = both;
    o.n_ns = 2;
    assert_int_equal(cairn_mem_recall(f->mem, "tea", &o, &h, &n), CAIRN_OK);
    assert_int_equal(n, 2);
    cairn_recall_free(h, n);
    free(a);
    free(b);
}

static void filters_and_expiry_apply(void **state)
{
    fx *f = *state;
    cairn_recall_opts o = CAIRN_RECALL_OPTS_INIT;
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    const char *cats[] = {"skill"};
    cairn_recall_hit *h = NULL;
    cairn_memory *g = NULL, *e = NULL;
    size_t n = 0;
    char *a = store(f, NULL, "rust borrow checker tips", "skill", 0.3);
    char *b = store(f, NULL, "rust release notes", "fact", 0.9);
    so.expires_at = now_ms() - 1;
    assert_int_equal(cairn_mem_store(f->mem, "rust old news", &so, &e, NULL), CAIRN_OK);
    o.categories = cats;
    o.n_categories = 1;
    assert_int_equal(cairn_mem_recall(f->mem, "rust", &o, &h, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].mem.id, a);
    cairn_recall_free(h, n);
    o.categories = NULL;
    o.min_importance = 0.5;
    assert_int_equal(cairn_mem_recall(f->mem, "rust", &o, &h, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].mem.id, b);
    cairn_recall_free(h, n);
    o.min_importance = 0;
    assert_int_equal(cairn_mem_recall(f->mem, "rust", &o, &h, &n), CAIRN_OK);
    assert_int_equal(n, 2); /* never the expired one */
    cairn_recall_free(h, n);
    assert_int_equal(cairn_mem_get(f->mem, e->id, &g), CAIRN_ENOTFOUND);
    cairn_mem_free(e);
    free(a);
    free(b);
}

/* Append a memory record directly, as an import would, with old times. */
static void append_raw(fx *f, const char *json)
{
    cairn_entry ent = {CAIRN_REC_MEMORY, "", 0, json, strlen(json), NULL, 0};
    assert_int_equal(cairn_append(f->db, &ent, NULL), CAIRN_OK);
}

static void importance_and_recency_decay_with_a_30_day_half_life(void **state)
{
    fx *f = *state;
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    char json[512];
    int64_t now = now_ms(), day = 86400000;
    cairn_mem_close(f->mem);
    snprintf(json, sizeof json,
             "{\"id\":\"old1\",\"content\":\"quarterly report template\",\"category\":\"fact\","
             "\"importance\":0.8,\"createdAt\":%lld,\"accessedAt\":%lld,\"accessCount\":4}",
             (long long)(now - 60 * day), (long long)(now - 30 * day));
    append_raw(f, json);
    assert_int_equal(cairn_mem_open(f->db, NULL, &f->mem), CAIRN_OK);
    assert_int_equal(cairn_mem_recall(f->mem, "quarterly report", NULL, &h, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].mem.id, "old1");
    assert_true(fabs(h[0].importance - 0.4) < 1e-3);  /* 0.8 after one half-life */
    assert_true(fabs(h[0].recency - 0.25) < 1e-3);    /* two half-lives */
    assert_true(fabs(h[0].access - 1.0) < 1e-12);     /* the most accessed candidate */
    assert_int_equal(h[0].mem.access_count, 5);
    cairn_recall_free(h, n);
}

static void hostile_records_are_skipped_and_counted(void **state)
{
    fx *f = *state;
    cairn_memory *g = NULL;
    static const char *bad[] = {
        "not json",
        "[1,2,3]",
        "{\"content\":\"no id\",\"category\":\"fact\"}",
        "{\"id\":\"a b\",\"content\":\"bad id\",\"category\":\"fact\"}",
        "{\"id\":\"x1\",\"content\":\"\",\"category\":\"fact\"}",
        "{\"id\":\"x2\",\"content\":\"c\",\"category\":\"fact\",\"importance\":2}",
        "{\"id\":\"x3\",\"content\":\"c\",\"category\":\"fact\",\"createdAt\":-5}",
        "{\"id\":\"x4\",\"content\":\"c\",\"category\":7}",
        "{\"id\":\"x5\",\"content\":\"c\",\"category\":\"fact\",\"metadata\":[1]}",
    };
    cairn_mem_close(f->mem);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        append_raw(f, bad[i]);
    append_raw(f, "{\"id\":\"good\",\"content\":\"valid one\",\"category\":\"fact\"}");
    append_raw(f, "{\"id\":\"good\",\"content\":\"same id again\",\"category\":\"fact\"}");
    assert_int_equal(cairn_mem_open(f->db, NULL, &f->mem), CAIRN_OK);
    assert_int_equal(cairn_mem_skipped(f->mem), sizeof bad / sizeof bad[0] + 1);
    assert_int_equal(cairn_mem_get(f->mem, "good", &g), CAIRN_OK);
    assert_string_equal(g->content, "valid one");
    cairn_mem_free(g);
}

static void append_marked(fx *f, const char *id, const char *mark)
{
    char json[256];
    snprintf(json, sizeof json, "{\"id\":\"%s\",\"content\":\"memory %s\",\"category\":\"fact\""
                                "%s%s}", id, id, mark ? ",\"batch\":" : "", mark ? mark : "");
    append_raw(f, json);
}

/* Which of ids a handle has, as a string of 0 and 1. */
static const char *which(cairn_mem *m, const char *const *ids, size_t n)
{
    static char out[32];
    for (size_t i = 0; i < n; i++) {
        cairn_memory *g = NULL;
        out[i] = cairn_mem_get(m, ids[i], &g) == CAIRN_OK ? '1' : '0';
        cairn_mem_free(g);
    }
    out[n] = 0;
    return out;
}

/* The rule for commits of several records (format-spec/record.md): a
 * record marked "batch":[i,n] is applied only if the commit's last record
 * is in the log, marked [n-1,n]. One cut short (the log lost its end, and
 * later records follow) is skipped and counted as unfinished. A read-only
 * handle whose log ends inside a commit takes none of it and counts none
 * (the writer may still be writing it), and all of it once it is whole;
 * the writer's own handle knows such a commit is cut short. */
static void a_commit_of_several_is_applied_whole_or_not_at_all(void **state)
{
    fx *f = *state;
    static const char *const ids[] = {"a1", "a2", "b1", "b2", "c1", "d1", "e1", "e2",
                                      "t1", "t2", "t3"};
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_db *ro;
    cairn_mem *rm;

    cairn_mem_close(f->mem);
    f->mem = NULL;
    append_marked(f, "a1", "[0,2]"); /* whole */
    append_marked(f, "a2", "[1,2]");
    append_marked(f, "b1", "[0,3]"); /* its last record was lost... */
    append_marked(f, "b2", "[1,3]");
    append_marked(f, "c1", NULL);    /* ...and the log went on */
    append_marked(f, "d1", "[2,1]"); /* not a mark: corrupt */
    append_marked(f, "e1", "[0,2]"); /* the next record is of another commit */
    append_marked(f, "e2", "[1,3]");
    append_marked(f, "t1", "[0,3]"); /* the log ends inside it */
    append_marked(f, "t2", "[1,3]");
    assert_int_equal(cairn_flush(f->db), CAIRN_OK);

    o.read_only = 1;
    assert_int_equal(cairn_open(&ro, f->dir, &o, err, sizeof err), CAIRN_OK);
    {
        /* A writer in its turn (it holds LOCK) may still be writing t: */
        char *lock = tu_join(f->dir, "LOCK");
        int lfd = open(lock, O_RDWR);
        assert_true(lfd >= 0);
        assert_int_equal(flock(lfd, LOCK_EX), 0);
        assert_int_equal(cairn_mem_open(ro, NULL, &rm), CAIRN_OK);
        assert_string_equal(which(rm, ids, 11), "11001000000");
        assert_int_equal(cairn_mem_unfinished(rm), 4); /* b1 b2 e1 e2; t1 t2 may yet be whole */
        assert_int_equal(cairn_mem_skipped(rm), 5);    /* and d1 */
        cairn_mem_close(rm);
        /* So does a writer handle between its turns (another one may be
         * in its turn). */
        assert_int_equal(cairn_mem_open(f->db, NULL, &rm), CAIRN_OK);
        assert_string_equal(which(rm, ids, 11), "11001000000");
        assert_int_equal(cairn_mem_unfinished(rm), 4);
        cairn_mem_close(rm);
        close(lfd);
        free(lock);
    }
    /* No turn in progress: every commit is written whole or was cut short. */
    assert_int_equal(cairn_mem_open(ro, NULL, &rm), CAIRN_OK);
    assert_string_equal(which(rm, ids, 11), "11001000000");
    assert_int_equal(cairn_mem_unfinished(rm), 6);
    assert_int_equal(cairn_mem_skipped(rm), 7);
    cairn_mem_close(rm);

    assert_int_equal(cairn_mem_open(f->db, NULL, &f->mem), CAIRN_OK);
    assert_string_equal(which(f->mem, ids, 11), "11001000000");
    assert_int_equal(cairn_mem_unfinished(f->mem), 6); /* the writer: t1 t2 are cut short */
    assert_int_equal(cairn_mem_skipped(f->mem), 7);
    cairn_mem_close(f->mem);
    f->mem = NULL;

    /* Only a test can finish a commit after the fact: the reader takes it
     * whole now. */
    append_marked(f, "t3", "[2,3]");
    assert_int_equal(cairn_flush(f->db), CAIRN_OK);
    assert_int_equal(cairn_mem_open(ro, NULL, &rm), CAIRN_OK);
    assert_string_equal(which(rm, ids, 11), "11001000111");
    assert_int_equal(cairn_mem_unfinished(rm), 4);
    cairn_mem_close(rm);
    assert_int_equal(cairn_close(ro), CAIRN_OK);
    assert_int_equal(cairn_mem_open(f->db, NULL, &f->mem), CAIRN_OK);
}

static void memories_survive_sealing_and_reopen(void **state)
{
    fx *f = *state;
    char content[128];
    char *ids[200];
    cairn_stats st;
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    for (int i = 0; i < 200; i++) {
        snprintf(content, sizeof content, "memory number %d about topic%d", i, i % 10);
        ids[i] = store(f, NULL, content, NULL, -1);
    }
    assert_int_equal(cairn_seal(f->db), CAIRN_OK);
    assert_int_equal(cairn_stats_get(f->db, &st), CAIRN_OK);
    assert_true(st.segments_sealed > 0); /* 4 KiB segments: most are sealed */
    close_all(f);
    open_all(f, 1);
    for (int i = 0; i < 200; i++) {
        cairn_memory *g = NULL;
        assert_int_equal(cairn_mem_get(f->mem, ids[i], &g), CAIRN_OK);
        snprintf(content, sizeof content, "memory number %d about topic%d", i, i % 10);
        assert_string_equal(g->content, content);
        cairn_mem_free(g);
        free(ids[i]);
    }
    assert_int_equal(cairn_mem_recall(f->mem, "topic7", NULL, &h, &n), CAIRN_OK);
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++)
        assert_non_null(strstr(h[i].mem.content, "topic7"));
    cairn_recall_free(h, n);
}

static void clear_empties_one_namespace_or_all_and_survives_reopen(void **state)
{
    fx *f = *state;
    cairn_memory *g = NULL;
    char *a = store(f, "alice", "alice likes tea", NULL, -1);
    char *b = store(f, "bob", "bob likes tea", NULL, -1);
    char *c = store(f, NULL, "default likes tea", NULL, -1);
    assert_int_equal(cairn_mem_clear(f->mem, "alice"), CAIRN_OK);
    assert_int_equal(cairn_mem_get(f->mem, a, &g), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_mem_get(f->mem, b, &g), CAIRN_OK);
    cairn_mem_free(g);
    close_all(f);
    open_all(f, 0);
    assert_int_equal(cairn_mem_get(f->mem, a, &g), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_mem_get(f->mem, b, &g), CAIRN_OK);
    cairn_mem_free(g);
    assert_int_equal(cairn_mem_clear(f->mem, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_get(f->mem, b, &g), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_mem_get(f->mem, c, &g), CAIRN_ENOTFOUND);
    /* the same content can be stored again after a clear */
    free(c);
    c = store(f, NULL, "default likes tea", NULL, -1);
    assert_int_equal(cairn_mem_get(f->mem, c, &g), CAIRN_OK);
    cairn_mem_free(g);
    free(a);
    free(b);
    free(c);
}

static char *context(fx *f, cairn_context_format fmt, size_t max_tokens, size_t *n)
{
    cairn_context_opts o = CAIRN_CONTEXT_OPTS_INIT;
    char *out = NULL;
    o.format = fmt;
    o.max_tokens = max_tokens;
    assert_int_equal(cairn_mem_context(f->mem, "", &o, &out, n), CAIRN_OK);
    assert_non_null(out);
    return out;
}

static void context_formats_as_the_seed_shows(void **state)
{
    fx *f = *state;
    char *a = store(f, NULL, "User prefers TypeScript over JavaScript", "preference", 0.8);
    char *b = store(f, NULL, "User lives in San Francisco", "fact", 0.9);
    char *out;
    size_t n = 0;
    /* an empty query ranks by importance and recency: b first */
    out = context(f, CAIRN_CONTEXT_BULLETS, 0, &n);
    assert_string_equal(out, "Relevant memories:\n- User lives in San Francisco [fact]\n"
                             "- User prefers TypeScript over JavaScript [preference]");
    assert_int_equal(n, 2);
    free(out);
    out = context(f, CAIRN_CONTEXT_PROSE, 0, &n);
    assert_string_equal(out, "Relevant memories: User lives in San Francisco. "
                             "User prefers TypeScript over JavaScript.");
    free(out);
    out = context(f, CAIRN_CONTEXT_XML, 0, &n);
    assert_string_equal(out, "<memories>\n  <memory category=\"fact\">User lives in San "
                             "Francisco</memory>\n  <memory category=\"preference\">User "
                             "prefers TypeScript over JavaScript</memory>\n</memories>");
    free(out);
    out = context(f, CAIRN_CONTEXT_JSON, 0, &n);
    assert_string_equal(out, "[\n  {\"content\": \"User lives in San Francisco\", "
                             "\"category\": \"fact\"},\n  {\"content\": \"User prefers "
                             "TypeScript over JavaScript\", \"category\": \"preference\"}\n]");
    free(out);
    free(a);
    free(b);
}

static void context_stays_within_max_tokens(void **state)
{
    fx *f = *state;
    char *a = store(f, NULL, "first memory with quite a few words in it", NULL, 0.9);
    char *b = store(f, NULL, "second memory", NULL, 0.5);
    char *one, *cut;
    size_t n = 0, budget;
    one = context(f, CAIRN_CONTEXT_XML, 0, &n);
    assert_int_equal(n, 2);
    free(one);
    /* the block holding only the first memory, and its estimate */
    one = strdup("<memories>\n  <memory category=\"fact\">first memory with quite a few words "
                 "in it</memory>\n</memories>");
    budget = cairn_token_estimate(one, strlen(one));
    cut = context(f, CAIRN_CONTEXT_XML, budget, &n);
    assert_int_equal(n, 1);
    assert_string_equal(cut, one);
    assert_true(cairn_token_estimate(cut, strlen(cut)) <= budget);
    free(cut);
    cut = context(f, CAIRN_CONTEXT_BULLETS, 3, &n); /* not even one fits */
    assert_int_equal(n, 0);
    assert_string_equal(cut, "");
    free(cut);
    free(one);
    free(a);
    free(b);
}

static void token_estimate_counts_characters_by_four(void **state)
{
    (void)state;
    assert_int_equal(cairn_token_estimate("", 0), 0);
    assert_int_equal(cairn_token_estimate("abcd", 4), 1);
    assert_int_equal(cairn_token_estimate("abcde", 5), 2);
    assert_int_equal(cairn_token_estimate("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 8), 1); /* 4 chars */
}

static void context_escapes_xml_and_json(void **state)
{
    fx *f = *state;
    char *a = store(f, NULL, "a <b> & \"c\"", "x<y", 0.9);
    char *out;
    size_t n = 0;
    out = context(f, CAIRN_CONTEXT_XML, 0, &n);
    assert_string_equal(out, "<memories>\n  <memory category=\"x&lt;y\">a &lt;b&gt; &amp; "
                             "&quot;c&quot;</memory>\n</memories>");
    free(out);
    out = context(f, CAIRN_CONTEXT_JSON, 0, &n);
    assert_string_equal(out, "[\n  {\"content\": \"a <b> & \\\"c\\\"\", \"category\": "
                             "\"x<y\"}\n]");
    free(out);
    free(a);
}

/* Memories with controlled times for forget: 2 that every mode prunes, 1
 * that normal prunes, and 20 fresh ones with importance 0.05, 0.10, ... 1.00. */
static void forget_fixture(fx *f)
{
    char json[512];
    int64_t now = now_ms(), day = 86400000;
    cairn_mem_close(f->mem);
    snprintf(json, sizeof json, "{\"id\":\"expired\",\"content\":\"e1\",\"category\":\"fact\","
             "\"importance\":0.9,\"expiresAt\":%lld}", (long long)(now - 1000));
    append_raw(f, json);
    snprintf(json, sizeof json, "{\"id\":\"old\",\"content\":\"e2\",\"category\":\"fact\","
             "\"importance\":0.9,\"createdAt\":%lld,\"accessedAt\":%lld}",
             (long long)(now - 100 * day), (long long)now);
    append_raw(f, json);
    snprintf(json, sizeof json, "{\"id\":\"faded\",\"content\":\"e3\",\"category\":\"fact\","
             "\"importance\":0.05,\"createdAt\":%lld,\"accessedAt\":%lld}",
             (long long)(now - 80 * day), (long long)(now - 80 * day));
    append_raw(f, json);
    for (int i = 1; i <= 20; i++) {
        snprintf(json, sizeof json, "{\"id\":\"fresh%d\",\"content\":\"fresh memory %d\","
                 "\"category\":\"%s\",\"importance\":%g}", i, i, i % 2 ? "skill" : "fact",
                 i * 0.05);
        append_raw(f, json);
    }
    assert_int_equal(cairn_mem_open(f->db, NULL, &f->mem), CAIRN_OK);
}

static void forget_modes_prune_what_they_say(void **state)
{
    fx *f = *state;
    cairn_forget_opts o = CAIRN_FORGET_OPTS_INIT;
    cairn_memory *g = NULL;
    uint64_t pruned = 0, kept = 0;
    cairn_stats st1, st2;
    forget_fixture(f);
    assert_int_equal(cairn_stats_get(f->db, &st1), CAIRN_OK);
    o.dry_run = 1;
    o.mode = CAIRN_FORGET_GENTLE;
    assert_int_equal(cairn_mem_forget(f->mem, &o, &pruned, &kept), CAIRN_OK);
    assert_int_equal(pruned, 2); /* expired, older than 90 days */
    assert_int_equal(kept, 21);  /* the expired one still counts as live */
    o.mode = CAIRN_FORGET_NORMAL;
    assert_int_equal(cairn_mem_forget(f->mem, &o, &pruned, &kept), CAIRN_OK);
    assert_int_equal(pruned, 3); /* + faded: 0.05 x 0.5^(80/30) < 0.01 */
    o.mode = CAIRN_FORGET_AGGRESSIVE;
    assert_int_equal(cairn_mem_forget(f->mem, &o, &pruned, &kept), CAIRN_OK);
    assert_int_equal(pruned, 5); /* + the bottom 10% of the 20 left */
    o.mode = CAIRN_FORGET_GENTLE;
    o.min_importance = 0.475; /* between fresh9 (0.45) and fresh10 (0.5, decaying) */
    assert_int_equal(cairn_mem_forget(f->mem, &o, &pruned, &kept), CAIRN_OK);
    assert_int_equal(pruned, 2 + 1 + 9); /* + faded and fresh1..fresh9 */
    assert_int_equal(cairn_stats_get(f->db, &st2), CAIRN_OK);
    assert_int_equal(st2.records, st1.records); /* dry runs wrote nothing */
    assert_int_equal(cairn_mem_get(f->mem, "fresh1", &g), CAIRN_OK);
    cairn_mem_free(g);
    o.dry_run = 0;
    o.min_importance = 0;
    o.mode = CAIRN_FORGET_AGGRESSIVE;
    assert_int_equal(cairn_mem_forget(f->mem, &o, &pruned, &kept), CAIRN_OK);
    assert_int_equal(pruned, 5);
    assert_int_equal(kept, 18);
    close_all(f);
    open_all(f, 0);
    static const char *gone[] = {"old", "faded", "fresh1", "fresh2"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(cairn_mem_get(f->mem, gone[i], &g), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_mem_get(f->mem, "fresh3", &g), CAIRN_OK);
    cairn_mem_free(g);
    o.min_importance = 2;
    assert_int_equal(cairn_mem_forget(f->mem, &o, &pruned, &kept), CAIRN_EINVAL);
}

static void stats_count_categories_importance_and_times(void **state)
{
    fx *f = *state;
    cairn_mem_stats s;
    forget_fixture(f);
    assert_int_equal(cairn_mem_delete(f->mem, "fresh20", NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_stats_get(f->mem, &s), CAIRN_OK);
    /* 23 stored, 1 expired (not counted), 1 deleted */
    assert_int_equal(s.total, 21);
    assert_int_equal(s.deleted, 1);
    assert_int_equal(s.n_categories, 2);
    assert_string_equal(s.by_category[0].name, "fact"); /* old, faded, fresh2..18 even: 11 */
    assert_int_equal(s.by_category[0].count, 11);
    assert_string_equal(s.by_category[1].name, "skill");
    assert_int_equal(s.by_category[1].count, 10);
    {
        double sum = 0.9 + 0.05;
        for (int i = 1; i <= 19; i++)
            sum += i * 0.05;
        assert_true(fabs(s.avg_importance - sum / 21) < 1e-9);
    }
    assert_true(s.oldest < s.newest);
    assert_true(now_ms() - s.oldest > 99LL * 86400000);
    cairn_mem_stats_free(&s);
}

/* The count without a scan: the live memories, the expired one included
 * until forget removes it; it follows stores, deletes and other handles. */
static void count_follows_the_live_memories(void **state)
{
    fx *f = *state;
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_forget_opts fo = CAIRN_FORGET_OPTS_INIT;
    cairn_mem_stats s;
    cairn_mem *other = NULL;
    uint64_t n = 99;
    forget_fixture(f);
    assert_int_equal(cairn_mem_delete(f->mem, "fresh20", NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_count(f->mem, &n), CAIRN_OK);
    assert_int_equal(n, 22); /* 23 stored, 1 deleted; the expired one counts */
    fo.mode = CAIRN_FORGET_GENTLE; /* the expired one, and the old */
    assert_int_equal(cairn_mem_forget(f->mem, &fo, NULL, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_count(f->mem, &n), CAIRN_OK);
    assert_int_equal(cairn_mem_stats_get(f->mem, &s), CAIRN_OK);
    assert_int_equal(n, s.total); /* nothing expired is left */
    assert_true(n < 22);
    cairn_mem_stats_free(&s);
    o.ns = "elsewhere";
    assert_int_equal(cairn_mem_open(f->db, NULL, &other), CAIRN_OK);
    assert_int_equal(cairn_mem_store(other, "stored by another handle", &o, NULL, NULL), CAIRN_OK);
    {
        uint64_t before = n;
        assert_int_equal(cairn_mem_count(f->mem, &n), CAIRN_OK);
        assert_int_equal(n, before + 1);
    }
    cairn_mem_close(other);
}

/* recall's tags: a memory whose metadata "tags" hold one of them; others
 * (other tags, none, no metadata) are left out, also past the first pool. */
static void recall_filters_by_tags(void **state)
{
    fx *f = *state;
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    static const char *const want[] = {"release", "hotfix"};
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    char text[64];
    for (int i = 0; i < 300; i++) { /* many that match the words, few the tags */
        snprintf(text, sizeof text, "deploy step %d of the service", i);
        o.metadata = i == 7     ? "{\"tags\":[\"release\"]}"
                     : i == 250 ? "{\"tags\":[\"x\",\"hotfix\"]}"
                     : i % 2    ? "{\"tags\":[\"other\"]}"
                                : NULL;
        assert_int_equal(cairn_mem_store(f->mem, text, &o, NULL, NULL), CAIRN_OK);
    }
    ro.k = 10;
    ro.tags = want;
    ro.n_tags = 2;
    assert_int_equal(cairn_mem_recall(f->mem, "deploy service", &ro, &h, &n), CAIRN_OK);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++)
        assert_true(strstr(h[i].mem.metadata, "release") || strstr(h[i].mem.metadata, "hotfix"));
    cairn_recall_free(h, n);
    assert_int_equal(cairn_mem_recall(f->mem, "", &ro, &h, &n), CAIRN_OK); /* no terms: all */
    assert_int_equal(n, 2);
    cairn_recall_free(h, n);
    ro.n_tags = 0; /* tags given, none named: nothing passes */
    assert_int_equal(cairn_mem_recall(f->mem, "deploy", &ro, &h, &n), CAIRN_OK);
    assert_int_equal(n, 0);
    cairn_recall_free(h, n);
}

/* recall's metadata filters: equality (also against an array's elements),
 * numeric bounds, nested paths; all must hold; bad filters are refused. */
static void recall_filters_by_metadata(void **state)
{
    fx *f = *state;
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    cairn_where w[3];
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    char text[64], meta[128];
    for (int i = 0; i < 200; i++) {
        snprintf(text, sizeof text, "cycle note %d of the team", i);
        snprintf(meta, sizeof meta, "{\"cycle\":%d,\"role\":\"%s\",\"refs\":[%d,7],\"s\":{\"k\":%d}}",
                 i, i % 3 ? "qa" : "ops", i, i % 5);
        o.metadata = i == 199 ? NULL : meta;
        assert_int_equal(cairn_mem_store(f->mem, text, &o, NULL, NULL), CAIRN_OK);
    }
    ro.k = 100;
    ro.where = w;
    w[0] = (cairn_where){"cycle", CAIRN_WHERE_GE, "150"};
    w[1] = (cairn_where){"cycle", CAIRN_WHERE_LE, "159"};
    w[2] = (cairn_where){"role", CAIRN_WHERE_EQ, "ops"}; /* plain text */
    ro.n_where = 3;
    assert_int_equal(cairn_mem_recall(f->mem, "cycle note team", &ro, &h, &n), CAIRN_OK);
    assert_int_equal(n, 4); /* of 150..159, the multiples of 3 are ops */
    cairn_recall_free(h, n);
    w[2] = (cairn_where){"role", CAIRN_WHERE_EQ, "\"qa\""}; /* JSON text */
    assert_int_equal(cairn_mem_recall(f->mem, "", &ro, &h, &n), CAIRN_OK);
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++)
        assert_non_null(strstr(h[i].mem.metadata, "\"qa\""));
    cairn_recall_free(h, n);
    w[0] = (cairn_where){"refs", CAIRN_WHERE_EQ, "42"}; /* an element of the array */
    w[1] = (cairn_where){"s.k", CAIRN_WHERE_EQ, "2"};   /* nested */
    ro.n_where = 2;
    assert_int_equal(cairn_mem_recall(f->mem, "note", &ro, &h, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    assert_non_null(strstr(h[0].mem.content, "note 42 "));
    cairn_recall_free(h, n);
    w[0] = (cairn_where){"refs[1]", CAIRN_WHERE_EQ, "7"};
    ro.n_where = 1;
    assert_int_equal(cairn_mem_recall(f->mem, "note", &ro, &h, &n), CAIRN_OK);
    assert_int_equal(n, 100); /* all but the one without metadata, k 100 */
    cairn_recall_free(h, n);
    w[0] = (cairn_where){"cycle", CAIRN_WHERE_GE, "many"};
    assert_int_equal(cairn_mem_recall(f->mem, "note", &ro, &h, &n), CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "not a number"));
    w[0] = (cairn_where){"cycle", CAIRN_WHERE_LE, "true"}; /* JSON, not a number: freed */
    assert_int_equal(cairn_mem_recall(f->mem, "note", &ro, &h, &n), CAIRN_EINVAL);
        w[0] = (cairn_where){"a=b", CAIRN_WHERE_EQ, "1"};
    assert_int_equal(cairn_mem_recall(f->mem, "note", &ro, &h, &n), CAIRN_EINVAL);
    ro.version = 1; /* an older caller's struct: no filters read */
    assert_int_equal(cairn_mem_recall(f->mem, "note", &ro, &h, &n), CAIRN_OK);
    assert_int_equal(n, 100);
    cairn_recall_free(h, n);
}

/* keep_duplicate stores the same content again; without it the store
 * hands back the memory there is. */
static void keep_duplicate_and_a_chosen_id(void **state)
{
    fx *f = *state;
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_memory *a = NULL, *b = NULL;
    uint64_t live = 0;
    int existed = -1;
    assert_int_equal(cairn_mem_store(f->mem, "Action execution failed", &o, &a, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_store(f->mem, "Action execution failed", &o, &b, &existed), CAIRN_OK);
    assert_int_equal(existed, 1);
    assert_string_equal(a->id, b->id);
    cairn_mem_free(b);
    o.keep_duplicate = 1;
    assert_int_equal(cairn_mem_store(f->mem, "Action execution failed", &o, &b, &existed), CAIRN_OK);
    assert_int_equal(existed, 0);
    assert_string_not_equal(a->id, b->id);
    assert_int_equal(cairn_mem_count(f->mem, &live), CAIRN_OK);
    assert_int_equal(live, 2);
    cairn_mem_free(a);
    cairn_mem_free(b);
    /* a chosen id: kept; the same again is the one there is; other content
     * under it is refused; a bad id too */
    o.id = "s0123456789abcdef";
    assert_int_equal(cairn_mem_store(f->mem, "entry one", &o, &a, &existed), CAIRN_OK);
    assert_string_equal(a->id, "s0123456789abcdef");
    assert_int_equal(existed, 0);
    assert_int_equal(cairn_mem_store(f->mem, "entry one", &o, &b, &existed), CAIRN_OK);
    assert_int_equal(existed, 1);
    assert_int_equal(a->seq, b->seq);
    cairn_mem_free(a);
    cairn_mem_free(b);
    assert_int_equal(cairn_mem_store(f->mem, "entry two", &o, NULL, NULL), CAIRN_EEXIST);
    o.id = "bad id";
    assert_int_equal(cairn_mem_store(f->mem, "entry two", &o, NULL, NULL), CAIRN_EINVAL);
    assert_int_equal(cairn_mem_count(f->mem, &live), CAIRN_OK);
    assert_int_equal(live, 3);
}

typedef struct each_seen {
    int n, stop_at;
    char first[CAIRN_MEM_ID_MAX + 1];
    int64_t last_created;
    int in_order;
} each_seen;

static int each_cb(void *user, cairn_memory *m)
{
    each_seen *e = user;
    if (e->n++ == 0)
        strcpy(e->first, m->id);
    e->in_order &= m->created_at >= e->last_created;
    e->last_created = m->created_at;
    cairn_mem_free(m);
    return e->n == e->stop_at ? 7 : 0;
}

/* Every live, unexpired memory of the namespaces, oldest first; fn's
 * nonzero return stops the walk and comes back. */
static void each_walks_the_live_memories(void **state)
{
    fx *f = *state;
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    static const char *const work[] = {"work"}, *const both[] = {"", "work"};
    each_seen e = {0, 0, "", 0, 1};
    cairn_mem_stats s;
    forget_fixture(f); /* 23 in "", one of them expired */
    assert_int_equal(cairn_mem_delete(f->mem, "fresh20", NULL), CAIRN_OK);
    o.ns = "work";
    assert_int_equal(cairn_mem_store(f->mem, "a memory at work", &o, NULL, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_stats_get(f->mem, &s), CAIRN_OK);
    assert_int_equal(cairn_mem_each(f->mem, NULL, 0, each_cb, &e), CAIRN_OK);
    assert_int_equal(e.n, (int)s.total); /* deleted and expired left out */
    assert_true(e.in_order);
    cairn_mem_stats_free(&s);
    memset(&e, 0, sizeof e);
    e.in_order = 1;
    assert_int_equal(cairn_mem_each(f->mem, work, 1, each_cb, &e), CAIRN_OK);
    assert_int_equal(e.n, 1);
    memset(&e, 0, sizeof e);
    e.in_order = 1;
    assert_int_equal(cairn_mem_each(f->mem, both, 2, each_cb, &e), CAIRN_OK);
    {
        int all = e.n;
        memset(&e, 0, sizeof e);
        e.stop_at = 3;
        assert_int_equal(cairn_mem_each(f->mem, both, 2, each_cb, &e), 7);
        assert_int_equal(e.n, 3);
        assert_true(all > 3);
    }
}

static void fill_tricky(fx *f)
{
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    static const char *contents[] = {
        "plain memory",
        "with, commas and \"quotes\"",
        "two\nlines",
        "## looks like a header\nand more",
        "text\n## header inside",
        "ends with a newline\n",
        "unicode: caf\xc3\xa9 \xe8\xa8\x98\xe6\x86\xb6",
        "- looks like a field: 1",
    };
    for (size_t i = 0; i < sizeof contents / sizeof contents[0]; i++) {
        o.ns = i % 2 ? "ns1" : NULL;
        o.category = i % 3 ? "skill" : "fact";
        o.importance = (double)i / 10;
        o.metadata = i % 2 ? "{\"k\":[1,\"two\",{\"x\":null}]}" : NULL;
        o.expires_at = i == 2 ? now_ms() + 86400000LL * 365 : 0;
        assert_int_equal(cairn_mem_store(f->mem, contents[i], &o, NULL, NULL), CAIRN_OK);
    }
    assert_int_equal(cairn_mem_recall(f->mem, "memory", NULL, &h, &n), CAIRN_OK);
    cairn_recall_free(h, n);
    {
        /* times near 2^53, which cJSON's doubles would print rounded */
        static const char far[] =
            "[{\"id\":\"far1\",\"content\":\"far future\",\"category\":\"fact\","
            "\"importance\":0.5,\"createdAt\":8500000000000001,\"accessedAt\":9007199254740991,"
            "\"accessCount\":3,\"expiresAt\":9007199254740992,\"metadata\":{}}]";
        uint64_t imported = 0, skipped = 0;
        assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSON, far, strlen(far), NULL,
                                          &imported, &skipped),
                         CAIRN_OK);
        assert_int_equal(imported, 1);
    }
}

static void round_trip(fx *f, cairn_mem_format fmt)
{
    char *a = NULL, *b = NULL, *other = NULL;
    size_t alen = 0, blen = 0;
    uint64_t imported = 0, skipped = 0;
    cairn_db *db2 = NULL;
    cairn_mem *m2 = NULL;
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX];
    fill_tricky(f);
    assert_int_equal(cairn_mem_export(f->mem, fmt, &a, &alen), CAIRN_OK);
    assert_int_equal(strlen(a), alen);
    /* into the same store: everything is there already */
    assert_int_equal(cairn_mem_import(f->mem, fmt, a, alen, NULL, &imported, &skipped), CAIRN_OK);
    assert_int_equal(imported, 0);
    assert_int_equal(skipped, 9); /* fill_tricky stores 9 */
    /* into a new store: everything comes back exactly */
    other = malloc(strlen(f->dir) + 8);
    sprintf(other, "%s-2", f->dir);
    o.create = 1;
    o.background = 0;
    assert_int_equal(cairn_open(&db2, other, &o, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_mem_open(db2, NULL, &m2), CAIRN_OK);
    if (cairn_mem_import(m2, fmt, a, alen, NULL, &imported, &skipped) != CAIRN_OK)
        fail_msg("import: %s", cairn_mem_errmsg(m2));
    assert_int_equal(imported, 9);
    assert_int_equal(skipped, 0);
    assert_int_equal(cairn_mem_export(m2, fmt, &b, &blen), CAIRN_OK);
    assert_int_equal(alen, blen);
    assert_string_equal(a, b);
    {
        /* equal exports could hide a loss made twice: check the values */
        cairn_memory *mm = NULL;
        assert_int_equal(cairn_mem_get(m2, "far1", &mm), CAIRN_OK);
        assert_int_equal(mm->created_at, 8500000000000001LL);
        assert_int_equal(mm->accessed_at, 9007199254740991LL);
        assert_int_equal(mm->expires_at, 9007199254740992LL);
        cairn_mem_free(mm);
    }
    cairn_mem_close(m2);
    assert_int_equal(cairn_close(db2), CAIRN_OK);
    tu_rmrf(other);
    free(other);
    free(a);
    free(b);
}

static void json_export_round_trips_exactly(void **state)
{
    fx *f = *state;
    char *a = NULL;
    size_t alen;
    round_trip(f, CAIRN_MEM_JSON);
    assert_int_equal(cairn_mem_export(f->mem, CAIRN_MEM_JSON, &a, &alen), CAIRN_OK);
    /* the recall in fill_tricky counted: access statistics are exported */
    assert_non_null(strstr(a, "\"accessCount\":\t1"));
    free(a);
}

static void md_export_round_trips_exactly(void **state)
{
    round_trip(*state, CAIRN_MEM_MD);
}

static void csv_export_round_trips_exactly(void **state)
{
    round_trip(*state, CAIRN_MEM_CSV);
}

/* JSON Lines: the json objects one a line; blank lines and white space
 * around a line are passed over, a line that is not one JSON value fails
 * the import whole, naming it. */
static void jsonl_export_round_trips_exactly(void **state)
{
    fx *f = *state;
    char *a = NULL;
    size_t alen, lines = 0;
    uint64_t imported = 9, skipped = 9;
    round_trip(f, CAIRN_MEM_JSONL);
    assert_int_equal(cairn_mem_export(f->mem, CAIRN_MEM_JSONL, &a, &alen), CAIRN_OK);
    for (size_t i = 0; i < alen; i++)
        lines += a[i] == '\n';
    assert_true(lines > 1 && a[alen - 1] == '\n' && strstr(a, "\n\n") == NULL);
    free(a);
    static const char loose[] = "\n  {\"content\":\"first of the lines\"}  \r\n\n"
                                "{\"content\":\"second of the lines\",\"namespace\":\"jl\"}";
    assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSONL, loose, strlen(loose), NULL,
                                      &imported, &skipped), CAIRN_OK);
    assert_int_equal(imported, 2);
    assert_int_equal(skipped, 0);
    static const char broken[] = "{\"content\":\"would be fine\"}\n{\"content\":\"half\n\"}";
    assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSONL, broken, strlen(broken), NULL,
                                      &imported, &skipped), CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "memory 2"));
    assert_int_equal(imported, 0);
}

static void a_bad_import_stores_nothing(void **state)
{
    fx *f = *state;
    cairn_mem_stats s;
    uint64_t imported = 9, skipped = 9;
    static const struct {
        cairn_mem_format f;
        const char *data;
        const char *msg;
    } bad[] = {
        {CAIRN_MEM_JSON, "{\"not\":\"an array\"}", "array"},
        {CAIRN_MEM_JSON, "[{\"content\":\"ok\"},{\"content\":\"x\",\"importance\":2}]", "memory 2"},
        {CAIRN_MEM_JSON, "[{\"content\":\"ok\"},{\"content\":\"\"}]", "memory 2"},
        {CAIRN_MEM_JSON, "[{\"content\":\"ok\"},7]", "memory 2"},
        {CAIRN_MEM_JSON, "[{\"content\":\"ok\",\"namespace\":5}]", "namespace"},
        /* the array read one element at a time still refuses what is no array */
        {CAIRN_MEM_JSON, "[{\"content\":\"ok\"},]", "array"},
        {CAIRN_MEM_JSON, "[{\"content\":\"ok\"} {\"content\":\"b\"}]", "array"},
        {CAIRN_MEM_JSON, "[{\"content\":\"ok\"}] trailing", "array"},
        {CAIRN_MEM_JSON, "[{\"content\":\"ok\"}", "array"},
        {CAIRN_MEM_JSON, "[{\"content\":\"o\\\"k}]", "array"},
        {CAIRN_MEM_JSON, "[{\"content\":\"ok\",}]", "memory 1 is not JSON"},
        {CAIRN_MEM_JSON, "[{\"content\":\"ok\"},tru]", "memory 2 is not JSON"},
        {CAIRN_MEM_JSON, "", "array"},
        {CAIRN_MEM_JSON, "[\xEF\xBB\xBF{\"content\":\"a-byte-order-mark-inside\"}]",
         "memory 1 is not JSON"},
        {CAIRN_MEM_JSON, "[\xEF\xBB\xBF{\"content\":\"one with spaces\"}]", "array"},
        {CAIRN_MEM_CSV, "id,namespace\r\n", "header"},
        {CAIRN_MEM_CSV, "id,namespace,category,importance,createdAt,accessedAt,accessCount,"
                        "expiresAt,metadata,content\r\n,,fact,0.5,,,,,,\"unterminated\r\n", "row 2"},
        {CAIRN_MEM_CSV, "id,namespace,category,importance,createdAt,accessedAt,accessCount,"
                        "expiresAt,metadata,content\r\n,,fact,0.5\r\n", "row 2"},
        {CAIRN_MEM_MD, "# Memories\n\n## m1\n- importance 0.5\n\ntext\n", "line 4"},
        {CAIRN_MEM_MD, "# Memories\n\n## m1\n- importance: zero\n\ntext\n", "line 4"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = cairn_mem_import(f->mem, bad[i].f, bad[i].data, strlen(bad[i].data), NULL,
                                  &imported, &skipped);
        if (rc != CAIRN_EINVAL)
            fail_msg("bad import %zu: rc %d", i, rc);
        if (strstr(cairn_mem_errmsg(f->mem), bad[i].msg) == NULL)
            fail_msg("bad import %zu: message '%s' lacks '%s'", i, cairn_mem_errmsg(f->mem),
                     bad[i].msg);
        assert_int_equal(imported, 0);
    }
    assert_int_equal(cairn_mem_stats_get(f->mem, &s), CAIRN_OK);
    assert_int_equal(s.total, 0); /* not even the valid first ones */
    cairn_mem_stats_free(&s);
}

/* cairn_mem_import_each says what became of each memory; a refusal of one
 * memory names it (so a caller can drop it and try again), and nothing is
 * stored then. */
static void an_import_says_what_became_of_each_memory(void **state)
{
    fx *f = *state;
    static const char two[] = "[{\"content\":\"first of two\"},{\"content\":\"second of two\"}]";
    static const char three[] = "[{\"content\":\"second of two\"},{\"content\":\"third\"},"
                                "{\"content\":\"third\"}]";
    static const char bad2[] = "[{\"content\":\"fine\"},{\"content\":\"x\",\"importance\":2},"
                               "{\"content\":\"also fine\"}]";
    unsigned char out[3] = {0, 0, 0};
    uint64_t imported = 0, skipped = 0;
    size_t bad = 9;
    cairn_mem_stats st;

    assert_int_equal(cairn_mem_import_each(f->mem, CAIRN_MEM_JSON, two, sizeof two - 1, NULL, out,
                                           2, &bad, &imported, &skipped),
                     CAIRN_OK);
    assert_int_equal(bad, 0);
    assert_int_equal(out[0], CAIRN_IMPORT_STORED);
    assert_int_equal(out[1], CAIRN_IMPORT_STORED);
    assert_int_equal(cairn_mem_import_each(f->mem, CAIRN_MEM_JSON, three, sizeof three - 1, NULL,
                                           out, 3, &bad, &imported, &skipped),
                     CAIRN_OK);
    assert_int_equal(out[0], CAIRN_IMPORT_SKIPPED); /* stored before */
    assert_int_equal(out[1], CAIRN_IMPORT_STORED);
    assert_int_equal(out[2], CAIRN_IMPORT_SKIPPED); /* earlier in the input */
    assert_int_equal(imported, 1);
    assert_int_equal(skipped, 2);
    memset(out, 7, sizeof out);
    assert_int_equal(cairn_mem_import_each(f->mem, CAIRN_MEM_JSON, bad2, sizeof bad2 - 1, NULL,
                                           out, 3, &bad, &imported, &skipped),
                     CAIRN_EINVAL);
    assert_int_equal(bad, 2);
    assert_int_equal(out[0], 7); /* not written */
    assert_int_equal(cairn_mem_import_each(f->mem, CAIRN_MEM_JSON, three, sizeof three - 1, NULL,
                                           out, 2, &bad, &imported, &skipped),
                     CAIRN_EINVAL); /* no room for every outcome */
    assert_int_equal(bad, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.total, 3);
    cairn_mem_stats_free(&st);
}

/* The import reads a JSON array one element at a time: whatever spacing,
 * nesting, escapes and brackets inside strings an exporter may write, it
 * takes every memory, as a whole-array parse would. */
static void an_import_reads_the_array_one_element_at_a_time(void **state)
{
    fx *f = *state;
    static const char data[] =
        "\xEF\xBB\xBF \n[ \t{\"content\":\"brackets ] [ } { in a string\",\"metadata\":"
        "{\"k\":[1,[2,{\"x\":\"]\"}]],\"e\":\"quote \\\" and backslash \\\\\"}}\r\n ,"
        "{\"content\":\"second \\u00e9\\n\",\"namespace\":\"n1\"},{\"content\":\"third\","
        "\"namespace\":\"n1\",\"importance\":0.25},{\"content\":\"fourth\",\"namespace\":\"n2\"}"
        " ]\n\n";
    const char *nss[] = {"", "n1", "n2"};
    uint64_t imported = 0, skipped = 0;
    cairn_memory *m = NULL;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    cairn_recall_hit *h = NULL;
    size_t n = 0;

    assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSON, data, sizeof data - 1, NULL,
                                      &imported, &skipped),
                     CAIRN_OK);
    assert_int_equal(imported, 4);
    assert_int_equal(skipped, 0);
    ro.ns = nss;
    ro.n_ns = 3;
    ro.k = 10;
    assert_int_equal(cairn_mem_recall(f->mem, "brackets", &ro, &h, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].mem.content, "brackets ] [ } { in a string");
    assert_non_null(strstr(h[0].mem.metadata, "\"quote \\\" and backslash \\\\\""));
    assert_non_null(strstr(h[0].mem.metadata, "[1,[2,{\"x\":\"]\"}]]"));
    cairn_recall_free(h, n);
    assert_int_equal(cairn_mem_recall(f->mem, "second", &ro, &h, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].mem.content, "second \xc3\xa9\n");
    assert_string_equal(h[0].mem.ns, "n1");
    cairn_recall_free(h, n);
    assert_int_equal(cairn_mem_recall(f->mem, "fourth", &ro, &h, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].mem.ns, "n2");
    assert_int_equal(cairn_mem_get(f->mem, h[0].mem.id, &m), CAIRN_OK);
    assert_string_equal(m->content, "fourth");
    cairn_mem_free(m);
    cairn_recall_free(h, n);
    /* an empty array imports nothing, and is no error */
    assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSON, " [ ] ", 5, NULL, &imported,
                                      &skipped),
                     CAIRN_OK);
    assert_int_equal(imported, 0);
}

/* The rule for text (README "Text"): valid UTF-8 without NUL. Every text
 * field a caller gives is checked and named, nothing is written, and what
 * is stored exports as JSON a strict parser reads (no raw 0xFF bytes). */
static void text_that_is_not_utf8_is_refused_and_named(void **state)
{
    fx *f = *state;
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;
    cairn_embedder emb = {"bad \xff name", 4, NULL, NULL, NULL, 0.3};
    cairn_memory *m = NULL;
    cairn_stats s0, s1;
    cJSON *arr;
    char *id, *out = NULL;
    size_t len = 0;
    static const struct {
        const char *content, *ns, *cat, *meta, *msg;
    } bad[] = {
        {"bad \xff\xfe bytes", NULL, NULL, NULL, "content: is not valid UTF-8 at byte 4"},
        {"overlong \xc0\xaf", NULL, NULL, NULL, "content: is not valid UTF-8 at byte 9"},
        {"surrogate \xed\xa0\x80", NULL, NULL, NULL, "content: is not valid UTF-8 at byte 10"},
        {"ok", "ns \xff", NULL, NULL, "namespace: is not valid UTF-8 at byte 3"},
        {"ok", NULL, "cat\xff", NULL, "category: is not valid UTF-8 at byte 3"},
        {"ok", NULL, NULL, "{\"k\":\"a\\u0000b\"}", "metadata: k: holds a NUL (\\u0000)"},
        {"ok", NULL, NULL, "{\"k\":[\"\xff\"]}", "metadata: k[0]: is not valid UTF-8"},
    };
    id = store(f, NULL, "a good memory", NULL, -1);
    assert_int_equal(cairn_stats_get(f->db, &s0), CAIRN_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.ns = bad[i].ns;
        o.category = bad[i].cat;
        o.metadata = bad[i].meta;
        if (cairn_mem_store(f->mem, bad[i].content, &o, NULL, NULL) != CAIRN_EINVAL)
            fail_msg("bad store %zu was not refused", i);
        if (strcmp(cairn_mem_errmsg(f->mem), bad[i].msg) != 0)
            fail_msg("bad store %zu: message '%s', not '%s'", i, cairn_mem_errmsg(f->mem),
                     bad[i].msg);
    }
    u.category = "c\xff";
    assert_int_equal(cairn_mem_update(f->mem, id, &u), CAIRN_EINVAL);
    assert_string_equal(cairn_mem_errmsg(f->mem), "category: is not valid UTF-8 at byte 1");
    u.category = NULL;
    u.metadata = "{\"k\":\"x\\u0000\"}";
    assert_int_equal(cairn_mem_update(f->mem, id, &u), CAIRN_EINVAL);
    assert_string_equal(cairn_mem_errmsg(f->mem), "metadata: k: holds a NUL (\\u0000)");
    assert_int_equal(cairn_mem_delete(f->mem, id, "why \xff"), CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "reason"));
    assert_int_equal(cairn_mem_clear(f->mem, "n\xff"), CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "namespace"));
    assert_int_equal(cairn_mem_set_embedder(f->mem, &emb), CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "UTF-8"));
    /* nothing was written; the good memory is whole */
    assert_int_equal(cairn_stats_get(f->db, &s1), CAIRN_OK);
    assert_int_equal(s1.records, s0.records);
    assert_int_equal(cairn_mem_get(f->mem, id, &m), CAIRN_OK);
    assert_string_equal(m->category, "fact");
    assert_string_equal(m->metadata, "{}");
    cairn_mem_free(m);
    assert_int_equal(cairn_mem_export(f->mem, CAIRN_MEM_JSON, &out, &len), CAIRN_OK);
    assert_int_equal(cairn__utf8_bad(out, len, NULL), len);
    assert_non_null(arr = cJSON_ParseWithLength(out, len));
    assert_int_equal(cJSON_GetArraySize(arr), 1);
    cJSON_Delete(arr);
    free(out);
    free(id);
}

/* An import whose text breaks the rule fails whole, in every format, and
 * the message names the memory and the field: a NUL never silently ends a
 * text ("abc\u0000hidden tail" was stored as "abc"). */
static void an_import_with_a_nul_or_bad_utf8_stores_nothing(void **state)
{
#define H "id,namespace,category,importance,createdAt,accessedAt,accessCount,expiresAt,metadata," \
          "content\r\n"
#define T(fmt, s, msg) {fmt, s, sizeof s - 1, msg}
    static const struct {
        cairn_mem_format f;
        const char *data;
        size_t len;
        const char *msg;
    } bad[] = {
        T(CAIRN_MEM_JSON, "[{\"content\":\"abc\\u0000hidden tail\"}]",
          "memory 1: content: holds a NUL (\\u0000)"),
        T(CAIRN_MEM_JSON, "[{\"content\":\"ok\"},{\"content\":\"abc\0hidden\"}]",
          "memory 2: content: holds a NUL byte"),
        T(CAIRN_MEM_JSON, "[{\"content\":\"ok\"},{\"content\":\"bad \xff\"}]",
          "memory 2: content: is not valid UTF-8"),
        T(CAIRN_MEM_JSON, "[{\"content\":\"ok\",\"metadata\":{\"k\":\"\\u0000\"}}]",
          "memory 1: metadata.k: holds a NUL (\\u0000)"),
        T(CAIRN_MEM_JSON, "[{\"content\":\"ok\",\"namespace\":\"n\\u0000s\"}]",
          "memory 1: namespace: holds a NUL (\\u0000)"),
        T(CAIRN_MEM_CSV, H ",,fact,0.5,,,,,,\"abc\0hidden tail\"\r\n",
          "memory 1 (csv row 2): content: holds a NUL byte (byte 114 of the input)"),
        T(CAIRN_MEM_CSV, H ",,fact,0.5,,,,,,ok\r\n\0\r\n", /* a NUL looks like a blank line */
          "memory 2 (csv row 3): id: holds a NUL byte"),
        T(CAIRN_MEM_CSV, H ",,fa\xff,0.5,,,,,,ok\r\n", "memory 1 (csv row 2): category: is not valid UTF-8"),
        T(CAIRN_MEM_CSV, H ",,fact,0.5,,,,,\"{\"\"k\"\":\"\"\\u0000\"\"}\",ok\r\n",
          "memory 1 (csv row 2): metadata: k: holds a NUL (\\u0000)"),
        T(CAIRN_MEM_MD, "# Memories\n\n## m1\n- category: \"fact\"\n\nabc\0hidden tail\n",
          "memory 1 (md line 6): content: holds a NUL byte (byte 41 of the input)"),
        T(CAIRN_MEM_MD, "# Memories\n\n## m1\n- content: \"abc\\u0000hidden\"\n",
          "memory 1 (md line 4): content: holds a NUL (\\u0000)"),
        T(CAIRN_MEM_MD, "# Memories\n\n## m1\n\nok\n\n## m\xff\n\nok 2\n",
          "memory 2 (md line 7): id: is not valid UTF-8"),
        T(CAIRN_MEM_MD, "# Memories\n\n## m1\n- category: \"c\xff\"\n\nok\n",
          "memory 1 (md line 4): category: is not valid UTF-8"),
    };
#undef T
#undef H
    fx *f = *state;
    cairn_mem_stats s;
    cairn_memory *m = NULL;
    uint64_t imported = 9, skipped = 9;
    static const char escaped[] = "[{\"id\":\"esc\",\"content\":\"a\\\\u0000b\"}]";

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = cairn_mem_import(f->mem, bad[i].f, bad[i].data, bad[i].len, NULL, &imported,
                                  &skipped);
        if (rc != CAIRN_EINVAL)
            fail_msg("bad import %zu: rc %d", i, rc);
        if (strstr(cairn_mem_errmsg(f->mem), bad[i].msg) == NULL)
            fail_msg("bad import %zu: message '%s' lacks '%s'", i, cairn_mem_errmsg(f->mem),
                     bad[i].msg);
        assert_int_equal(imported, 0);
    }
    assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSON, "[{\"content\":\"ok\"}]", 18, "n\xff",
                                      &imported, &skipped),
                     CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "namespace: is not valid UTF-8"));
    assert_int_equal(cairn_mem_stats_get(f->mem, &s), CAIRN_OK);
    assert_int_equal(s.total, 0); /* not even the valid first ones */
    cairn_mem_stats_free(&s);
    /* an escaped backslash before "u0000" is text like any other */
    assert_int_equal(cairn_mem_import(f->mem, CAIRN_MEM_JSON, escaped, sizeof escaped - 1, NULL,
                                      &imported, &skipped),
                     CAIRN_OK);
    assert_int_equal(imported, 1);
    assert_int_equal(cairn_mem_get(f->mem, "esc", &m), CAIRN_OK);
    assert_string_equal(m->content, "a\\u0000b");
    cairn_mem_free(m);
}

/* An LLM that answers with the text it was given. */
typedef struct canned {
    const char *answer;
    int calls;
} canned;

static int canned_llm(void *user, const char *prompt, char **answer, char *err)
{
    canned *c = user;
    (void)prompt;
    (void)err;
    c->calls++;
    *answer = strdup(c->answer);
    return *answer == NULL;
}

/* remember: an answer (or a conversation) whose text breaks the rule is an
 * error naming the item and field, and stores nothing, not even the good
 * candidates before it. */
static void remember_refuses_an_answer_that_breaks_the_rule(void **state)
{
    fx *f = *state;
    static const char conv[] = "[{\"role\":\"user\",\"content\":\"hello there\"}]";
    static const char nul_conv[] = "[{\"role\":\"user\",\"content\":\"a\\u0000b\"}]";
    static const char raw_conv[] = "[{\"role\":\"user\",\"content\":\"a\0b\"}]";
    static const struct {
        const char *answer, *msg;
    } bad[] = {
        {"[{\"content\":\"first fine memory\"},{\"content\":\"abc\\u0000hidden tail\"}]",
         "LLM answer: item 2: content: holds a NUL (\\u0000)"},
        {"```json\n[{\"content\":\"bad \xff bytes\"}]\n```", "LLM answer: item 1: content: is not "
                                                         "valid UTF-8"},
        {"[{\"content\":\"fine\",\"category\":\"c\\u0000\"}]",
         "LLM answer: item 1: category: holds a NUL (\\u0000)"},
    };
    canned c = {NULL, 0};
    cairn_llm llm = {&c, canned_llm};
    cairn_remember_item *it = NULL;
    cairn_stats s0, s1;
    size_t n = 0;

    assert_int_equal(cairn_stats_get(f->db, &s0), CAIRN_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c.answer = bad[i].answer;
        if (cairn_mem_remember(f->mem, &llm, conv, strlen(conv), NULL, &it, &n) != CAIRN_EINVAL)
            fail_msg("answer %zu was not refused", i);
        if (strcmp(cairn_mem_errmsg(f->mem), bad[i].msg) != 0)
            fail_msg("answer %zu: message '%s', not '%s'", i, cairn_mem_errmsg(f->mem), bad[i].msg);
        assert_null(it);
        assert_int_equal(n, 0);
    }
    assert_int_equal(c.calls, 3);
    /* the conversation too, before the LLM is asked */
    assert_int_equal(cairn_mem_remember(f->mem, &llm, nul_conv, strlen(nul_conv), NULL, &it, &n),
                     CAIRN_EINVAL);
    assert_string_equal(cairn_mem_errmsg(f->mem), "messages: item 1: content: holds a NUL (\\u0000)");
    assert_int_equal(cairn_mem_remember(f->mem, &llm, raw_conv, sizeof raw_conv - 1, NULL, &it, &n),
                     CAIRN_EINVAL);
    assert_string_equal(cairn_mem_errmsg(f->mem), "messages: item 1: content: holds a NUL byte");
    assert_int_equal(c.calls, 3);
    assert_int_equal(cairn_stats_get(f->db, &s1), CAIRN_OK);
    assert_int_equal(s1.records, s0.records);
    /* and a good answer is stored */
    c.answer = "[{\"content\":\"caf\xc3\xa9 au lait\"}]";
    assert_int_equal(cairn_mem_remember(f->mem, &llm, conv, strlen(conv), NULL, &it, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    assert_int_equal(it[0].stored, 1);
    cairn_remember_free(it, n);
}

typedef struct seen {
    int stored, recalled, pruned_events;
    uint64_t pruned;
    char reason[32];
    char last_stored[CAIRN_MEM_ID_MAX + 1];
    int after_store;
} seen;

static void on_event(void *user, const cairn_mem_event *ev)
{
    seen *w = user;
    if (ev->kind == CAIRN_EVENT_STORED) {
        w->stored++;
        strcpy(w->last_stored, ev->memory->id);
    } else if (ev->kind == CAIRN_EVENT_RECALLED) {
        w->recalled += (int)ev->n_hits;
    } else if (ev->kind == CAIRN_EVENT_PRUNED) {
        w->pruned_events++;
        w->pruned += ev->pruned;
        snprintf(w->reason, sizeof w->reason, "%s", ev->reason);
    }
}

static int before_store(void *user, cairn_mem_draft *d)
{
    (void)user;
    if (strstr(d->content, "secret") != NULL)
        return 1; /* rejected */
    if (strcmp(d->category, "fact") == 0)
        d->category = "checked-fact"; /* modified */
    return 0;
}

static void after_store(void *user, const cairn_memory *m)
{
    seen *w = user;
    (void)m;
    w->after_store++;
}

static char *before_recall(void *user, const char *q)
{
    (void)user;
    return strcmp(q, "alias") == 0 ? strdup("deploy") : NULL;
}

static void after_recall(void *user, const cairn_recall_hit *h, size_t n, int *keep)
{
    (void)user;
    for (size_t i = 0; i < n; i++)
        keep[i] = h[i].mem.importance > 0.5;
}

static void hooks_modify_reject_rewrite_and_filter(void **state)
{
    fx *f = *state;
    seen w;
    cairn_mem_hooks hk = {NULL, before_store, after_store, before_recall, after_recall};
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_memory *m = NULL;
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    memset(&w, 0, sizeof w);
    hk.user = &w;
    cairn_mem_set_hooks(f->mem, &hk);
    assert_int_equal(cairn_mem_on(f->mem, on_event, &w), CAIRN_OK);
    assert_int_equal(cairn_mem_store(f->mem, "the secret token is 1234", NULL, NULL, NULL),
                     CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "beforeStore"));
    assert_int_equal(w.stored, 0);
    o.importance = 0.9;
    assert_int_equal(cairn_mem_store(f->mem, "deploy runs on fridays", &o, &m, NULL), CAIRN_OK);
    assert_string_equal(m->category, "checked-fact");
    assert_int_equal(w.after_store, 1);
    assert_int_equal(w.stored, 1);
    assert_string_equal(w.last_stored, m->id);
    o.importance = 0.2;
    assert_int_equal(cairn_mem_store(f->mem, "deploy needs approval", &o, NULL, NULL), CAIRN_OK);
    /* "alias" is rewritten to "deploy"; the 0.2 one is filtered out */
    assert_int_equal(cairn_mem_recall(f->mem, "alias", NULL, &h, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].mem.id, m->id);
    assert_int_equal(h[0].mem.access_count, 1);
    assert_int_equal(w.recalled, 1);
    cairn_recall_free(h, n);
    cairn_mem_set_hooks(f->mem, NULL);
    assert_int_equal(cairn_mem_recall(f->mem, "deploy", NULL, &h, &n), CAIRN_OK);
    assert_int_equal(n, 2); /* without hooks both come back */
    for (size_t i = 0; i < n; i++)
        if (strcmp(h[i].mem.id, m->id) != 0)
            assert_int_equal(h[i].mem.access_count, 1); /* the filtered recall did not count */
    cairn_recall_free(h, n);
    cairn_mem_free(m);
}

static void max_memories_prunes_the_least_important_and_says_so(void **state)
{
    fx *f = *state;
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    cairn_mem_store_opts o = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_mem_stats st;
    cairn_memory *g = NULL;
    char content[64], *low = NULL, *newest = NULL;
    seen w;
    memset(&w, 0, sizeof w);
    cairn_mem_close(f->mem);
    mo.max_memories = 10;
    assert_int_equal(cairn_mem_open(f->db, &mo, &f->mem), CAIRN_OK);
    assert_int_equal(cairn_mem_on(f->mem, on_event, &w), CAIRN_OK);
    for (int i = 0; i < 10; i++) {
        snprintf(content, sizeof content, "memory %d", i);
        o.importance = i == 3 ? 0.05 : 0.5 + i * 0.01;
        if (i == 3) {
            cairn_memory *m = NULL;
            assert_int_equal(cairn_mem_store(f->mem, content, &o, &m, NULL), CAIRN_OK);
            low = strdup(m->id);
            cairn_mem_free(m);
        } else {
            assert_int_equal(cairn_mem_store(f->mem, content, &o, NULL, NULL), CAIRN_OK);
        }
    }
    assert_int_equal(w.pruned_events, 0);
    o.importance = 0.01; /* the least important of all, but just stored: kept */
    newest = store(f, NULL, "memory 10", NULL, 0.01);
    assert_int_equal(w.pruned_events, 1);
    assert_int_equal(w.pruned, 1);
    assert_string_equal(w.reason, "maxMemories");
    assert_int_equal(cairn_mem_get(f->mem, low, &g), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_mem_get(f->mem, newest, &g), CAIRN_OK);
    cairn_mem_free(g);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.total, 10);
    cairn_mem_stats_free(&st);
    free(low);
    free(newest);
}

typedef struct thr {
    fx *f;
    char id[CAIRN_MEM_ID_MAX + 1];
} thr;

static void *store_in_thread(void *arg)
{
    thr *t = arg;
    cairn_memory *m = NULL;
    if (cairn_mem_store(t->f->mem, "written by another thread", NULL, &m, NULL) == CAIRN_OK) {
        strcpy(t->id, m->id);
        cairn_mem_free(m);
    }
    return NULL;
}

static void a_stored_memory_is_recallable_from_another_thread_at_once(void **state)
{
    fx *f = *state;
    pthread_t th;
    thr t;
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    memset(&t, 0, sizeof t);
    t.f = f;
    assert_int_equal(pthread_create(&th, NULL, store_in_thread, &t), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(t.id[0] != 0);
    assert_int_equal(cairn_mem_recall(f->mem, "another thread", NULL, &h, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].mem.id, t.id);
    cairn_recall_free(h, n);
}

/* Entries' strings share 64 KiB chunks; a longer one gets a chunk of its
 * own without ending the shared one's use. */
static void long_contents_do_not_waste_the_shared_chunk(void **state)
{
    fx *f = *state;
    size_t n = 0;
    char *big = malloc(100001);
    assert_non_null(big);
    for (int i = 0; i < 10; i++) {
        char small[32];
        memset(big, 'a' + i, 100000);
        big[100000] = 0;
        assert_int_equal(cairn_mem_store(f->mem, big, NULL, NULL, NULL), CAIRN_OK);
        snprintf(small, sizeof small, "small memory %d", i);
        assert_int_equal(cairn_mem_store(f->mem, small, NULL, NULL, NULL), CAIRN_OK);
    }
    pthread_mutex_lock(&f->mem->mu);
    for (const strchunk *c = f->mem->strs; c != NULL; c = c->next)
        n++;
    pthread_mutex_unlock(&f->mem->mu);
    assert_int_equal(n, 11); /* one each for the long ones, one shared */
    free(big);
}

typedef struct waiter {
    cairn_mem *holder, *mem; /* the handle holding the turn, the waiting one */
    int rc;
} waiter;

static void store_200(void *p)
{
    waiter *w = p;
    for (int i = 0; i < 200; i++) {
        char text[64];
        snprintf(text, sizeof text, "held turn memory %d", i);
        assert_int_equal(cairn_mem_store(w->holder, text, NULL, NULL, NULL), CAIRN_OK);
    }
}

static void *store_after_the_wait(void *p)
{
    waiter *w = p;
    __atomic_store_n(&w->rc, cairn_mem_store(w->mem, "stored after the wait", NULL, NULL, NULL),
                     __ATOMIC_SEQ_CST);
    return NULL;
}

/* What the waiter has taken in: folded, or held as keys (a store's wait,
 * memkeys.h). */
static uint64_t folded_seq(void *p)
{
    waiter *w = p;
    uint64_t v;
    pthread_mutex_lock(&w->mem->mu);
    v = w->mem->keyed > w->mem->folded ? w->mem->keyed : w->mem->folded;
    pthread_mutex_unlock(&w->mem->mu);
    return v;
}

static void *checkpoint_after_the_wait(void *p)
{
    waiter *w = p;
    __atomic_store_n(&w->rc, cairn_mem_checkpoint(w->mem), __ATOMIC_SEQ_CST);
    return NULL;
}

/* A second writer handle on f's store, with a busy timeout long enough
 * for any wait of these tests. */
static cairn_db *open_second(fx *f, cairn_mem **m)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_db *db = NULL;
    o.busy_timeout_ms = 20000;
    if (cairn_open(&db, f->dir, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    assert_int_equal(cairn_mem_open(db, NULL, m), CAIRN_OK);
    return db;
}

/* The memories m holds once it has read the log, then m and db closed. */
static void close_second(cairn_db *db, cairn_mem *m, uint64_t total)
{
    cairn_mem_stats ms;
    assert_int_equal(cairn_mem_stats_get(m, &ms), CAIRN_OK);
    assert_int_equal(ms.total, total);
    cairn_mem_stats_free(&ms);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* A writer waiting for another handle's turn folds what that one appends
 * meanwhile (cairn__turn_begin_busy), before the lock is let go: its own
 * turn then starts with a short catch-up, not with all of it. (A store's
 * wait has nothing to fold: the holder adds its keys to KEYS; below.) */
static void a_waiting_writer_folds_what_the_holder_appends(void **state)
{
    fx *f = *state;
    waiter w = {f->mem, NULL, -1};
    tu_held_turn h = {f->db, store_200, checkpoint_after_the_wait, folded_seq, &w};
    cairn_db *db2 = open_second(f, &w.mem);

    assert_true(tu_folds_while_held(&h)); /* folded while the turn was held */
    assert_int_equal(w.rc, CAIRN_OK);
    close_second(db2, w.mem, 200);
}

/* A store that waits for the turn reads nothing meanwhile: the holder's
 * stores put their keys in KEYS, and the waiter's turn takes them from
 * there (format-spec/keys.md). Its state stays where it was; its keys
 * cover the log; a read folds it all. */
static void a_waiting_store_takes_the_holders_stores_from_keys(void **state)
{
    fx *f = *state;
    waiter w = {f->mem, NULL, -1};
    cairn_db *db2 = open_second(f, &w.mem);
    char *keys = tu_join(f->dir, "KEYS");
    cairn_stats st;
    pthread_t th;
    struct stat kst;

    assert_int_equal(cairn_mem_store(w.mem, "the waiter was here first", NULL, NULL, NULL), CAIRN_OK);
    assert_int_equal(cairn__turn_begin(f->db), CAIRN_OK);
    store_200(&w);
    assert_int_equal(pthread_create(&th, NULL, store_after_the_wait, &w), 0);
    tu_sleep_ms(50);
    assert_int_equal(folded_seq(&w), 1); /* the wait read none of the 200 */
    assert_int_equal(cairn__turn_end(f->db), CAIRN_OK);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(w.rc, CAIRN_OK);
    assert_int_equal(cairn_stats_get(f->db, &st), CAIRN_OK);
    pthread_mutex_lock(&w.mem->mu);
    assert_true(w.mem->keys.fixed);              /* KEYS served */
    assert_int_equal(w.mem->folded, 1);          /* nothing folded */
    assert_int_equal(w.mem->keyed, st.last_seq); /* its own store too */
    pthread_mutex_unlock(&w.mem->mu);
    assert_int_equal(stat(keys, &kst), 0);
    assert_true((uint64_t)kst.st_size > 4096);
    free(keys);
    close_second(db2, w.mem, 202); /* a read folds */
}

/* Stores in a burst, each recalled by the very next call, some deleted
 * right after they were stored (while the indexing thread may not have
 * reached them yet): the ranking, scores included, is the one a reopened
 * store (its index rebuilt from the log) gives. A delete that reached the
 * index before its add would leave the document counted in BM25's N and
 * average length, and the scores would differ. */
static void a_burst_of_stores_and_deletes_ranks_as_a_rebuilt_index(void **state)
{
    fx *f = *state;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    cairn_recall_hit *h = NULL, *h2 = NULL;
    size_t n = 0, n2 = 0;
    char text[128], q[32];
    int deleted = 0;

    ro.k = 20;
    for (int i = 0; i < 3000; i++) {
        char *id;
        snprintf(text, sizeof text, "burst note %d about %s and %s zq%dzq", i,
                 i % 3 ? "deploys" : "migrations", i % 5 ? "caches" : "schemas", i);
        id = store(f, "", text, "fact", 0.5);
        if (i % 7 == 3) {
            assert_int_equal(cairn_mem_delete(f->mem, id, "burst"), CAIRN_OK);
            deleted++;
        } else if (i % 250 == 0) {
            snprintf(q, sizeof q, "zq%dzq", i);
            assert_int_equal(cairn_mem_recall(f->mem, q, NULL, &h, &n), CAIRN_OK);
            assert_int_equal(n, 1);
            assert_string_equal(h[0].mem.id, id);
            cairn_recall_free(h, n);
        }
        free(id);
    }
    assert_true(deleted > 400);
    assert_int_equal(cairn_mem_recall(f->mem, "deploys schemas", &ro, &h, &n), CAIRN_OK);
    assert_int_equal(n, 20);
    close_all(f);
    open_all(f, 0);
    assert_int_equal(cairn_mem_recall(f->mem, "deploys schemas", &ro, &h2, &n2), CAIRN_OK);
    assert_int_equal(n2, n);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(h[i].mem.id, h2[i].mem.id);
        assert_true(fabs(h[i].bm25 - h2[i].bm25) < 1e-9);
    }
    cairn_recall_free(h, n);
    cairn_recall_free(h2, n2);
}

/* Every options struct carries a version: one the library does not know
 * (0: not made by its _INIT macro) is refused, naming the struct, and
 * changes nothing. */
static void an_options_struct_of_an_unknown_version_is_refused(void **state)
{
    fx *f = *state;
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    cairn_forget_opts fo = CAIRN_FORGET_OPTS_INIT;
    cairn_mem_update_opts uo = CAIRN_MEM_UPDATE_OPTS_INIT;
    cairn_context_opts co = CAIRN_CONTEXT_OPTS_INIT;
    cairn_memory *m = NULL;
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    char *text = NULL;
    uint64_t live = 0;

    assert_int_equal(cairn_mem_store(f->mem, "kept", NULL, &m, NULL), CAIRN_OK);
    so.version = 0;
    assert_int_equal(cairn_mem_store(f->mem, "new", &so, NULL, NULL), CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "cairn_mem_store_opts: version 0"));
    ro.version = CAIRN_RECALL_OPTS_VERSION + 1;
    assert_int_equal(cairn_mem_recall(f->mem, "kept", &ro, &h, &n), CAIRN_EINVAL);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "cairn_recall_opts"));
    fo.version = 0;
    fo.mode = CAIRN_FORGET_AGGRESSIVE;
    assert_int_equal(cairn_mem_forget(f->mem, &fo, NULL, NULL), CAIRN_EINVAL);
    uo.version = 0;
    uo.importance = 0.9;
    assert_int_equal(cairn_mem_update(f->mem, m->id, &uo), CAIRN_EINVAL);
    co.recall.version = 0; /* the recall inside is checked too */
    assert_int_equal(cairn_mem_context(f->mem, "kept", &co, &text, NULL), CAIRN_EINVAL);
    assert_null(text);
    assert_int_equal(cairn_mem_count(f->mem, &live), CAIRN_OK);
    assert_int_equal(live, 1);
    cairn_mem_free(m);
}

/* A memory's metadata name is part of its text: a file imported as
 * "powershell-arrays" is found by "PowerShell arrays", also after a
 * checkpoint and a reopen (the index file holds it), and gone once
 * removed. */
static void a_memory_is_found_by_its_name(void **state)
{
    fx *f = *state;
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_recall_hit *h = NULL;
    cairn_memory *m = NULL;
    size_t n = 0;

    so.metadata = "{\"name\":\"powershell-arrays\",\"path\":\"mem/powershell-arrays.md\"}";
    assert_int_equal(cairn_mem_store(f->mem, "Use @() to force a collection.", &so, &m, NULL),
                     CAIRN_OK);
    assert_int_equal(cairn_mem_store(f->mem, "Unrelated note about lunch.", NULL, NULL, NULL),
                     CAIRN_OK);
    for (int round = 0; round < 2; round++) {
        assert_int_equal(cairn_mem_recall(f->mem, "PowerShell arrays", NULL, &h, &n), CAIRN_OK);
        assert_int_equal(n, 1);
        assert_string_equal(h[0].mem.id, m->id);
        assert_true(h[0].bm25 > 0);
        cairn_recall_free(h, n);
        if (round == 0) { /* through an index file and a reopen */
            assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
            close_all(f);
            open_all(f, 0);
        }
    }
    assert_int_equal(cairn_mem_delete(f->mem, m->id, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_recall(f->mem, "PowerShell arrays", NULL, &h, &n), CAIRN_OK);
    assert_int_equal(n, 0);
    cairn_recall_free(h, n);
    cairn_mem_free(m);
}

/* no_access: a recall that only looks leaves accessCount and accessedAt. */
static void a_recall_with_no_access_records_none(void **state)
{
    fx *f = *state;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    cairn_recall_hit *h = NULL;
    cairn_memory *m = NULL, *g = NULL;
    size_t n = 0;

    assert_int_equal(cairn_mem_store(f->mem, "looked at only", NULL, &m, NULL), CAIRN_OK);
    ro.no_access = 1;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(cairn_mem_recall(f->mem, "looked", &ro, &h, &n), CAIRN_OK);
        assert_int_equal(n, 1);
        assert_int_equal(h[0].mem.access_count, 0);
        cairn_recall_free(h, n);
    }
    assert_int_equal(cairn_mem_get(f->mem, m->id, &g), CAIRN_OK);
    assert_int_equal(g->access_count, 0);
    assert_int_equal(g->accessed_at, m->accessed_at);
    cairn_mem_free(g);
    ro.no_access = 0; /* the premise: an ordinary recall counts */
    assert_int_equal(cairn_mem_recall(f->mem, "looked", &ro, &h, &n), CAIRN_OK);
    assert_int_equal(h[0].mem.access_count, 1);
    cairn_recall_free(h, n);
    cairn_mem_free(m);
}

/* A read-only handle that may run a thread indexes a long fold on one
 * (past INDEXER_AFTER texts); it answers as one that indexes inline. */
static void a_read_only_handle_indexes_a_long_fold_on_a_thread(void **state)
{
    static const char *const words[] = {"deploy", "rollback", "cache", "flaky", "docker",
                                        "token", "agent", "index", "audit", "vector"};
    static const char *const queries[] = {"deploy cache", "flaky docker token", "memory 4711",
                                          "audit"};
    fx *f = *state;
    cairn_db *ro[2];
    cairn_mem *rm[2];
    uint64_t seed = 11;
    char text[160];

    /* segments of the default size: the fixture's 4 KiB ones would seal
     * (and fsync) every few stores */
    close_all(f);
    {
        cairn_options o = CAIRN_OPTIONS_INIT;
        char err[CAIRN_ERRMSG_MAX] = "";
        o.create = 1;
        o.background = with_threads;
        o.durability = CAIRN_DURABILITY_NONE;
        o.segment_size = 64u << 20; /* for this handle, over the stored 4 KiB */
        if (cairn_open(&f->db, f->dir, &o, err, sizeof err) != CAIRN_OK)
            fail_msg("open: %s", err);
        assert_int_equal(cairn_mem_open(f->db, NULL, &f->mem), CAIRN_OK);
    }
    for (int i = 0; i < 5000; i++) {
        size_t len = 0;
        for (int w = 0; w < 6; w++)
            len += (size_t)snprintf(text + len, sizeof text - len, "%s ",
                                    words[tu_splitmix64(&seed) % 10]);
        snprintf(text + len, sizeof text - len, "memory %d", i);
        assert_int_equal(cairn_mem_store(f->mem, text, NULL, NULL, NULL), CAIRN_OK);
    }
    assert_int_equal(cairn_flush(f->db), CAIRN_OK);
    for (int t = 0; t < 2; t++) {
        cairn_options o = CAIRN_OPTIONS_INIT;
        char err[CAIRN_ERRMSG_MAX] = "";
        o.read_only = 1;
        o.background = t;
        if (cairn_open(&ro[t], f->dir, &o, err, sizeof err) != CAIRN_OK)
            fail_msg("open: %s", err);
        assert_int_equal(cairn_mem_open(ro[t], NULL, &rm[t]), CAIRN_OK);
    }
    assert_null(rm[0]->ix); /* background 0: inline */
    assert_non_null(rm[1]->ix); /* the fold of 5,000 texts started the thread */
    for (size_t q = 0; q < sizeof queries / sizeof queries[0]; q++) {
        cairn_recall_hit *h[3];
        size_t n[3];
        cairn_recall_opts ro_opts = CAIRN_RECALL_OPTS_INIT;
        ro_opts.k = 20;
        ro_opts.no_access = 1; /* the three rank on the same statistics */
        assert_int_equal(cairn_mem_recall(rm[0], queries[q], &ro_opts, &h[0], &n[0]), CAIRN_OK);
        assert_int_equal(cairn_mem_recall(rm[1], queries[q], &ro_opts, &h[1], &n[1]), CAIRN_OK);
        assert_int_equal(cairn_mem_recall(f->mem, queries[q], &ro_opts, &h[2], &n[2]), CAIRN_OK);
        assert_true(n[0] > 0);
        for (int k = 1; k < 3; k++) {
            assert_int_equal(n[k], n[0]);
            for (size_t i = 0; i < n[0]; i++) {
                assert_string_equal(h[k][i].mem.id, h[0][i].mem.id);
                assert_true(h[k][i].bm25 == h[0][i].bm25);
            }
        }
        for (int k = 0; k < 3; k++)
            cairn_recall_free(h[k], n[k]);
    }
    for (int t = 0; t < 2; t++) {
        cairn_mem_close(rm[t]);
        assert_int_equal(cairn_close(ro[t]), CAIRN_OK);
    }
}

/* A handle's clock (cairn_mem_set_clock) is its now for reading: recency
 * and expiry as they are at that time; 0 is the wall clock again. */
static void a_handle_reads_recency_and_expiry_at_its_clock(void **state)
{
    fx *f = *state;
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    cairn_memory *a = NULL, *b = NULL, *g = NULL;
    cairn_recall_hit *h;
    size_t n;
    const int64_t day = 86400000;

    assert_int_equal(cairn_mem_store(f->mem, "clock reading alpha", NULL, &a, NULL), CAIRN_OK);
    so.expires_at = a->created_at + 3600000; /* an hour after */
    assert_int_equal(cairn_mem_store(f->mem, "clock reading beta", &so, &b, NULL), CAIRN_OK);
    ro.no_access = 1;
    ro.k = 10;
    /* now: both, fresh */
    assert_int_equal(cairn_mem_recall(f->mem, "clock reading", &ro, &h, &n), CAIRN_OK);
    assert_int_equal(n, 2);
    assert_true(h[0].recency > 0.99 && h[1].recency > 0.99);
    cairn_recall_free(h, n);
    /* thirty days on: alpha's recency at 0.5^(30 / half-life), beta expired */
    cairn_mem_set_clock(f->mem, a->created_at + 30 * day);
    assert_int_equal(cairn_mem_recall(f->mem, "clock reading", &ro, &h, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    assert_string_equal(h[0].mem.id, a->id);
    assert_true(fabs(h[0].recency - pow(0.5, 30.0 / f->mem->half_life)) < 1e-9);
    cairn_recall_free(h, n);
    assert_int_equal(cairn_mem_get(f->mem, b->id, &g), CAIRN_ENOTFOUND);
    /* half an hour on: beta not expired yet */
    cairn_mem_set_clock(f->mem, a->created_at + 1800000);
    assert_int_equal(cairn_mem_get(f->mem, b->id, &g), CAIRN_OK);
    cairn_mem_free(g);
    /* the wall clock again */
    cairn_mem_set_clock(f->mem, 0);
    assert_int_equal(cairn_mem_recall(f->mem, "clock reading", &ro, &h, &n), CAIRN_OK);
    assert_int_equal(n, 2);
    cairn_recall_free(h, n);
    cairn_mem_free(a);
    cairn_mem_free(b);
}

/* A checkpoint asks the flusher thread to sync the log while it waits for
 * the indexing queue (cairn__sync_ask): with durability none, nothing else
 * would sync the active segment before the close. */
static void a_sync_asked_of_the_flusher_is_done_without_waiting_for_it(void **state)
{
    fx *f = *state;
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    uint64_t seq = 0;
    cairn_entry ent;

    close_all(f);
    o.create = 1;
    o.background = 1;
    o.durability = CAIRN_DURABILITY_NONE;
    o.segment_size = 64u << 20; /* no roll, no seal: only an ask syncs it */
    if (cairn_open(&f->db, f->dir, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("open: %s", err);
    assert_int_equal(cairn_mem_open(f->db, NULL, &f->mem), CAIRN_OK);
    memset(&ent, 0, sizeof ent);
    ent.type = CAIRN_REC_EVENT;
    ent.json = "{\"n\":1}";
    ent.json_len = strlen(ent.json);
    for (int i = 0; i < 10; i++)
        assert_int_equal(cairn_append(f->db, &ent, &seq), CAIRN_OK);
    assert_int_equal(cairn_flush(f->db), CAIRN_OK);
    usleep(100000); /* past a batch period: the flusher still syncs nothing */
    assert_true(atomic_load(&f->db->durable_seq) < seq);
    cairn__sync_ask(f->db);
    for (int i = 0; i < 200 && atomic_load(&f->db->durable_seq) < seq; i++)
        usleep(10000);
    assert_true(atomic_load(&f->db->durable_seq) >= seq);
}

int main(void)
{
#define MEMORY_TESTS(T) \
    T(store_returns_the_memory_with_defaults_and_get_finds_it) \
    T(a_sync_asked_of_the_flusher_is_done_without_waiting_for_it) \
    T(an_options_struct_of_an_unknown_version_is_refused) \
    T(a_recall_with_no_access_records_none) \
    T(a_memory_is_found_by_its_name) \
    T(exact_duplicates_are_stored_once_per_namespace) \
    T(invalid_input_is_refused_with_a_message) \
    T(update_changes_fields_and_survives_reopen) \
    T(deleted_memories_never_come_back_but_stay_in_the_log) \
    T(recall_ranks_by_relevance_and_explains_every_component) \
    T(recall_records_access_and_it_persists) \
    T(namespaces_isolate_unless_a_recall_names_several) \
    T(filters_and_expiry_apply) \
    T(importance_and_recency_decay_with_a_30_day_half_life) \
    T(hostile_records_are_skipped_and_counted) \
    T(a_commit_of_several_is_applied_whole_or_not_at_all) \
    T(memories_survive_sealing_and_reopen) \
    T(a_stored_memory_is_recallable_from_another_thread_at_once) \
    T(clear_empties_one_namespace_or_all_and_survives_reopen) \
    T(context_formats_as_the_seed_shows) \
    T(context_stays_within_max_tokens) \
    T(token_estimate_counts_characters_by_four) \
    T(context_escapes_xml_and_json) \
    T(forget_modes_prune_what_they_say) \
    T(stats_count_categories_importance_and_times) \
    T(count_follows_the_live_memories) \
    T(each_walks_the_live_memories) \
    T(recall_filters_by_tags) \
    T(json_export_round_trips_exactly) \
    T(md_export_round_trips_exactly) \
    T(csv_export_round_trips_exactly) \
    T(jsonl_export_round_trips_exactly) \
    T(a_bad_import_stores_nothing) \
    T(an_import_reads_the_array_one_element_at_a_time) \
    T(an_import_says_what_became_of_each_memory) \
    T(text_that_is_not_utf8_is_refused_and_named) \
    T(an_import_with_a_nul_or_bad_utf8_stores_nothing) \
    T(remember_refuses_an_answer_that_breaks_the_rule) \
    T(hooks_modify_reject_rewrite_and_filter) \
    T(max_memories_prunes_the_least_important_and_says_so) \
    T(a_burst_of_stores_and_deletes_ranks_as_a_rebuilt_index) \
    T(a_waiting_writer_folds_what_the_holder_appends) \
    T(a_waiting_store_takes_the_holders_stores_from_keys) \
    T(long_contents_do_not_waste_the_shared_chunk) \
    T(recall_filters_by_metadata) \
    T(keep_duplicate_and_a_chosen_id) \
    T(a_read_only_handle_indexes_a_long_fold_on_a_thread) \
    T(a_handle_reads_recency_and_expiry_at_its_clock)
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown),
#define TT(name) cmocka_unit_test_setup_teardown(name, setup_threads, teardown),
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_store_record_encoder_writes_cjsons_bytes),
        cmocka_unit_test(the_flat_record_scan_decodes_as_cjson_does),
        cmocka_unit_test(the_record_codecs_ignore_a_comma_locale),
        MEMORY_TESTS(T)
    };
    const struct CMUnitTest tests_threads[] = {MEMORY_TESTS(TT)};
#undef T
#undef TT
    int failed = cmocka_run_group_tests_name("inline indexing", tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("indexing thread", tests_threads, NULL, NULL);
    return failed;
}
