/*
 * test_memkeys.c - a writer that only stores takes others' stores as keys
 * (engine/memory/memkeys.h): the key sets, the record reader, and two
 * handles on one store (as two processes are) whose stores, duplicate
 * checks, limits, reads and closes give what full folds give.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot.h"
#include "cairn.h"
#include "keyfile.h"
#include "memkeys.h"
#include "memrec.h"
#include "memstate.h"
#include "store.h"
#include "testutil.h"

/* ---- the key sets and the record reader ---------------------------------- */

static void the_sets_hold_what_was_added_and_nothing_else(void **state)
{
    cairn__memkeys k;
    (void)state;
    memset(&k, 0, sizeof k);
    assert_false(cairn__memkeys_has_content(&k, 42)); /* empty, no table yet */
    for (uint64_t i = 1; i <= 5000; i++) /* grows several times */
        assert_int_equal(cairn__memkeys_add(&k, 1 + i % 3, i * 7919, i * 104729), CAIRN_OK);
    assert_int_equal(cairn__memkeys_count(&k), 5000);
    assert_int_equal(cairn__memkeys_in_ns(&k, 1), 1666); /* i % 3 == 0 */
    assert_int_equal(cairn__memkeys_in_ns(&k, 2), 1667);
    assert_int_equal(cairn__memkeys_in_ns(&k, 4), 0);
    for (uint64_t i = 1; i <= 5000; i++) {
        assert_true(cairn__memkeys_has_content(&k, i * 7919));
        assert_true(cairn__memkeys_has_id(&k, i * 104729));
    }
    assert_false(cairn__memkeys_has_content(&k, 5001 * 7919));
    assert_false(cairn__memkeys_has_id(&k, 7919)); /* a content key is not an id key */
    cairn__memkeys_clear(&k);
    assert_int_equal(cairn__memkeys_count(&k), 0);
    assert_false(cairn__memkeys_has_content(&k, 7919));
    assert_int_equal(cairn__memkeys_in_ns(&k, 1), 0);
    /* namespaces past the count's room: refused, nothing added */
    for (uint64_t i = 0; i < CAIRN__MEMKEYS_NS; i++)
        assert_int_equal(cairn__memkeys_add(&k, 100 + i, 1 + i, 1 + i), CAIRN_OK);
    assert_int_equal(cairn__memkeys_add(&k, 99, 999, 999), CAIRN_EINVAL);
    assert_false(cairn__memkeys_has_content(&k, 999));
    assert_int_equal(cairn__memkeys_count(&k), CAIRN__MEMKEYS_NS);
    cairn__memkeys_free(&k);
}

/* The reader takes what the record encoder writes, with the keys of the
 * id and content it decodes to (escapes and all); it declines every other
 * shape. */
static void the_record_reader_takes_the_writers_records_and_declines_the_rest(void **state)
{
    static const char *const contents[] = {"plain words", "ünïcödé ✓", "a \"quoted\" word",
                                           "a\nnewline\tand a tab", "back\\slash",
                                           "\"", "ends with a quote\"", "bell \x07 and \x1f"};
    uint64_t nk, ck, ik;
    (void)state;
    for (size_t i = 0; i < sizeof contents / sizeof *contents; i++) {
        memrec r;
        cairn__err e;
        char *json = NULL;
        size_t len = 0;
        memset(&r, 0, sizeof r);
        r.type = CAIRN_REC_MEMORY;
        r.id = "m0123456789abcdef";
        r.content = contents[i];
        r.content_len = strlen(contents[i]);
        r.category = "fact";
        r.importance = 0.5;
        assert_int_equal(cairn__memrec_encode(&r, &json, &len, &e), CAIRN_OK);
        assert_int_equal(cairn__memkeys_of_record("ns", 2, json, len, &nk, &ck, &ik), 1);
        assert_true(nk == cairn__memkeys_ns_key("ns", 2));
        assert_true(ck == cairn__memkeys_content_key(nk, contents[i], strlen(contents[i])));
        assert_true(ck != cairn__memkeys_content_key(cairn__memkeys_ns_key("other", 5),
                                                     contents[i], strlen(contents[i])));
        assert_true(ik == cairn__memkeys_id_key(r.id, strlen(r.id)));
        free(json);
    }
    {
        /* escapes as any JSON writer may put them: \/, \u of one and of
         * two UTF-16 units, the same key as the bytes they stand for */
        static const char json[] = "{\"id\":\"m1\",\"content\":\"a\\/b \\u00e9 \\ud83d\\ude00 \\u2713\"}";
        static const char raw[] = "a/b \xc3\xa9 \xf0\x9f\x98\x80 \xe2\x9c\x93";
        assert_int_equal(cairn__memkeys_of_record("", 0, json, strlen(json), &nk, &ck, &ik), 1);
        assert_true(ck == cairn__memkeys_content_key(cairn__memkeys_ns_key("", 0), raw, strlen(raw)));
    }
    /* other shapes: fields in another order, a commit's mark, a bad id,
     * an empty content, cut short */
    static const char *const declined[] = {
        "{\"content\":\"x\",\"id\":\"m1\"}",
        "{\"id\":\"m1\",\"content\":\"x\",\"category\":\"fact\",\"batch\":[0,2]}",
        "{\"id\":\"m 1\",\"content\":\"x\"}",
        "{\"id\":\"\",\"content\":\"x\"}",
        "{\"id\":\"m1\",\"content\":\"\"}",
        "{\"id\":\"m1\",\"content\":\"x",
        "{\"id\":\"m1\"",
        "{\"id\":\"abcdefghijabcdefghijabcdefghijabc\",\"content\":\"x\"}", /* 33 > 32 */
        /* contents no decoder reads as these bytes: a NUL, a lone
         * surrogate, an escape JSON has not, a raw control byte, an
         * escape cut short */
        "{\"id\":\"m1\",\"content\":\"a\\u0000b\"}",
        "{\"id\":\"m1\",\"content\":\"a\\ud83db\"}",
        "{\"id\":\"m1\",\"content\":\"a\\ude00b\"}",
        "{\"id\":\"m1\",\"content\":\"a\\xb\"}",
        "{\"id\":\"m1\",\"content\":\"a\tb\"}",
        "{\"id\":\"m1\",\"content\":\"a\\u00\"}",
        "{\"id\":\"m1\",\"content\":\"a\\\"}",
    };
    for (size_t i = 0; i < sizeof declined / sizeof *declined; i++)
        assert_int_equal(cairn__memkeys_of_record("", 0, declined[i], strlen(declined[i]), &nk, &ck, &ik), 0);
    {
        static const char ok[] = "{\"id\":\"m1\",\"content\":\"x\"}";
        assert_int_equal(cairn__memkeys_of_record("", 0, ok, strlen(ok), &nk, &ck, &ik), 1);
        /* a NUL after it: a decoder's key could end there */
        assert_int_equal(cairn__memkeys_of_record("", 0, ok, sizeof ok, &nk, &ck, &ik), 0);
    }
}

/* ---- two handles on one store -------------------------------------------- */

typedef struct two {
    char *dir;
    cairn_db *a, *b;
    cairn_mem *ma, *mb;
} two;

/* The tests of two writers run twice: with KEYS, the sets the writers
 * share (keyfile.h), and with each handle's own sets (what a handle uses
 * when it cannot have the file). */
static int own_sets;

static void use_sets(cairn_mem *m)
{
    m->kf.off = own_sets;
}

static int setup(void **state)
{
    two *t = calloc(1, sizeof *t);
    char *d = tu_mkdtemp("memkeys"), err[CAIRN_ERRMSG_MAX] = "";
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    if (t == NULL || d == NULL)
        return -1;
    t->dir = tu_join(d, "store");
    free(d);
    mo.max_memories = 100000;
    if (tu_open_small(t->dir, 0, &t->a, err, sizeof err) != CAIRN_OK ||
        tu_open_small(t->dir, 0, &t->b, err, sizeof err) != CAIRN_OK ||
        cairn_mem_open(t->a, &mo, &t->ma) != CAIRN_OK || cairn_mem_open(t->b, &mo, &t->mb) != CAIRN_OK)
        return -1;
    use_sets(t->ma);
    use_sets(t->mb);
    *state = t;
    return 0;
}

static int setup_own(void **state)
{
    own_sets = 1;
    return setup(state);
}

static int setup_shared(void **state)
{
    own_sets = 0;
    return setup(state);
}

static void close_two(two *t)
{
    cairn_mem_close(t->ma);
    cairn_mem_close(t->mb);
    t->ma = t->mb = NULL;
    if (t->a != NULL)
        (void)cairn_close(t->a);
    if (t->b != NULL)
        (void)cairn_close(t->b);
    t->a = t->b = NULL;
}

static int teardown(void **state)
{
    two *t = *state;
    char *parent = strdup(t->dir);
    close_two(t);
    *strrchr(parent, '/') = 0;
    tu_rmrf(parent);
    free(parent);
    free(t->dir);
    free(t);
    return 0;
}

static void store_n(cairn_mem *m, const char *who, int from, int n)
{
    char text[96];
    for (int i = from; i < from + n; i++) {
        snprintf(text, sizeof text, "%s wrote memory number %d", who, i);
        assert_int_equal(cairn_mem_store(m, text, NULL, NULL, NULL), CAIRN_OK);
    }
}

/* Records the handle holds as keys and not in its state: in KEYS, the
 * seqs after its state; in its own sets, the memories they count. */
static int keys_held(cairn_mem *m)
{
    if (m->keyed <= m->folded)
        return 0;
    return m->keys.fixed ? (int)(m->keyed - m->folded) : (int)cairn__memkeys_count(&m->keys);
}

static uint64_t live(cairn_mem *m)
{
    uint64_t n = 0;
    assert_int_equal(cairn_mem_count(m, &n), CAIRN_OK);
    return n;
}

/* b stores while a stores: b takes a's memories as keys, not into its
 * state, and its own go there too; its next read folds them all. */
static void a_storing_writer_holds_others_stores_as_keys_until_it_reads(void **state)
{
    two *t = *state;
    cairn_recall_hit *h = NULL;
    size_t nh = 0;
    store_n(t->mb, "b", 0, 1); /* b's state has a memory */
    store_n(t->ma, "a", 0, 50);
    store_n(t->mb, "b", 1, 10);
    assert_int_equal(keys_held(t->mb), 60); /* a's 50 and b's own 10 */
    assert_int_equal(t->mb->n, 1);          /* none of them folded */
    assert_int_equal(live(t->mb), 61);      /* a read folds them */
    assert_int_equal(keys_held(t->mb), 0);
    assert_int_equal(t->mb->n, 61);
    store_n(t->ma, "a", 50, 5);
    store_n(t->mb, "b", 11, 1);
    assert_int_equal(keys_held(t->mb), 6);
    assert_int_equal(cairn_mem_recall(t->mb, "memory number 11", NULL, &h, &nh), CAIRN_OK);
    assert_true(nh >= 1);
    assert_non_null(strstr(h[0].mem.content, "b wrote memory number 11")); /* its own store */
    cairn_recall_free(h, nh);
    assert_int_equal(keys_held(t->mb), 0);
}

/* A store that asks for the memory and the prune report (as the CLI and
 * the MCP tools do) goes by keys too: the copy is the memory a read gives
 * afterwards, and kept counts the namespace's live memories. */
static void a_store_by_keys_returns_the_memory_a_read_gives(void **state)
{
    two *t = *state;
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_mem_prune pr;
    cairn_memory *got = NULL, *read = NULL;
    int existed = 1;
    store_n(t->mb, "b", 0, 1);
    store_n(t->ma, "a", 0, 10);
    store_n(t->mb, "b", 1, 1);
    assert_int_equal(keys_held(t->mb), 11);
    so.category = "decision";
    so.importance = 0.25;
    so.metadata = "{\"tags\":[\"x\"]}";
    so.expires_at = 4102444800000;
    so.prune = &pr;
    assert_int_equal(cairn_mem_store(t->mb, "b decided to ship on friday", &so, &got, &existed),
                     CAIRN_OK);
    assert_int_equal(existed, 0);
    assert_int_equal(keys_held(t->mb), 12); /* by keys: nothing folded */
    assert_int_equal(pr.pruned, 0);
    assert_int_equal(pr.kept, 13); /* b 3, a 10, all in the default namespace */
    assert_int_equal(cairn_mem_get(t->ma, got->id, &read), CAIRN_OK); /* the other handle */
    assert_string_equal(read->id, got->id);
    assert_string_equal(read->ns, got->ns);
    assert_string_equal(read->content, got->content);
    assert_string_equal(read->category, got->category);
    assert_string_equal(read->metadata, got->metadata);
    assert_true(read->importance == got->importance);
    assert_true(read->created_at == got->created_at && read->accessed_at == got->accessed_at);
    assert_true(read->expires_at == got->expires_at && read->seq == got->seq);
    assert_int_equal(read->access_count, got->access_count);
    cairn_mem_free(read);
    cairn_mem_free(got);
    /* a duplicate of a memory in b's state: that memory, by keys */
    got = NULL;
    assert_int_equal(cairn_mem_store(t->mb, "b wrote memory number 0", &so, &got, &existed), CAIRN_OK);
    assert_int_equal(existed, 1);
    assert_non_null(got);
    assert_string_equal(got->content, "b wrote memory number 0");
    assert_string_equal(got->category, "fact"); /* as it was stored */
    assert_int_equal(keys_held(t->mb), 12);
    cairn_mem_free(got);
    /* a store past the limit's check (no_limit): its report is empty, as a
     * full fold's is */
    so.version = CAIRN_MEM_STORE_OPTS_VERSION;
    so.no_limit = 1;
    memset(&pr, 0xff, sizeof pr);
    assert_int_equal(cairn_mem_store(t->mb, "b stored past the limit check", &so, NULL, NULL),
                     CAIRN_OK);
    assert_int_equal(keys_held(t->mb), 13);
    assert_int_equal(pr.pruned, 0);
    assert_int_equal(pr.kept, 0);
    assert_int_equal(pr.limit, 0);
}

/* Accesses a reader recorded in ACCESS for a memory b holds only as a key
 * are folded with every memory in b's state: none is lost. */
static void a_store_by_keys_folds_accesses_of_memories_it_holds_as_keys(void **state)
{
    two *t = *state;
    cairn_memory *x = NULL, *got = NULL;
    cairn_recall_hit *h = NULL;
    size_t nh = 0;
    store_n(t->mb, "b", 0, 1);
    assert_int_equal(cairn_mem_store(t->ma, "the zebra fact of a", NULL, &x, NULL), CAIRN_OK);
    store_n(t->mb, "b", 1, 1);
    assert_int_equal(keys_held(t->mb), 2);
    assert_int_equal(cairn_mem_recall(t->ma, "zebra", NULL, &h, &nh), CAIRN_OK); /* an access */
    assert_int_equal(nh, 1);
    cairn_recall_free(h, nh);
    tu_sleep_ms(5); /* past ACCESS's "none a moment ago" */
    store_n(t->mb, "b", 2, 1); /* its turn folds ACCESS */
    close_two(t); /* the counts are in the log now: reopen */
    {
        char err[CAIRN_ERRMSG_MAX] = "";
        assert_int_equal(tu_open_small(t->dir, 0, &t->a, err, sizeof err), CAIRN_OK);
        assert_int_equal(cairn_mem_open(t->a, NULL, &t->ma), CAIRN_OK);
    }
    assert_int_equal(cairn_mem_get(t->ma, x->id, &got), CAIRN_OK);
    assert_int_equal(got->access_count, 1);
    cairn_mem_free(got);
    cairn_mem_free(x);
}

/* Metadata comes back as the log gives it (cJSON's text), from the store
 * itself and from a read after a fold alike. */
static void metadata_reads_the_same_from_the_store_and_after_a_fold(void **state)
{
    two *t = *state;
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_memory *got = NULL, *read = NULL;
    so.metadata = "{ \"n\" : 1.50, \"k\" : \"v\" }";
    for (int keys = 0; keys < 2; keys++) {
        char text[32];
        if (keys) {
            store_n(t->ma, "a", 0, 1);
            store_n(t->mb, "b", 0, 1);
            assert_true(keys_held(t->mb) > 0);
        }
        snprintf(text, sizeof text, "with metadata %d", keys);
        assert_int_equal(cairn_mem_store(t->mb, text, &so, &got, NULL), CAIRN_OK);
        assert_string_equal(got->metadata, "{\"n\":1.5,\"k\":\"v\"}");
        assert_int_equal(cairn_mem_get(t->ma, got->id, &read), CAIRN_OK);
        assert_string_equal(read->metadata, got->metadata);
        cairn_mem_free(read);
        cairn_mem_free(got);
    }
}

/* A content another handle stored is a duplicate for b, found through
 * the keys (then decided by a full fold): nothing is written twice. One
 * in b's own state is a duplicate without any fold. */
static void a_duplicate_among_the_keys_is_found(void **state)
{
    two *t = *state;
    int existed = 0;
    cairn_stats before, after;
    store_n(t->mb, "b", 0, 1);
    store_n(t->ma, "a", 0, 20);
    store_n(t->mb, "b", 1, 1);
    assert_int_equal(keys_held(t->mb), 21);
    assert_int_equal(cairn_stats_get(t->b, &before), CAIRN_OK);
    assert_int_equal(cairn_mem_store(t->mb, "a wrote memory number 7", NULL, NULL, &existed), CAIRN_OK);
    assert_int_equal(existed, 1);
    assert_int_equal(cairn_stats_get(t->b, &after), CAIRN_OK);
    assert_true(after.last_seq == before.last_seq); /* nothing appended */
    store_n(t->ma, "a", 20, 3);
    store_n(t->mb, "b", 2, 1);
    assert_true(keys_held(t->mb) > 0);
    existed = 0;
    assert_int_equal(cairn_mem_store(t->mb, "b wrote memory number 0", NULL, NULL, &existed), CAIRN_OK);
    assert_int_equal(existed, 1);
    assert_true(keys_held(t->mb) > 0); /* decided from the state: the keys stay */
    assert_int_equal(live(t->mb), 26); /* b 3, a 23 */
    assert_int_equal(live(t->ma), 26);
}

/* A delete by a cannot be held as a key: b folds the full way, and the
 * deleted content stores anew. */
static void a_delete_among_others_records_makes_the_store_fold_in_full(void **state)
{
    two *t = *state;
    cairn_memory *mm = NULL;
    int existed = 1;
    char id[CAIRN_MEM_ID_MAX + 1];
    store_n(t->mb, "b", 0, 1);
    assert_int_equal(cairn_mem_store(t->ma, "a fact a deletes", NULL, &mm, NULL), CAIRN_OK);
    snprintf(id, sizeof id, "%s", mm->id);
    cairn_mem_free(mm);
    store_n(t->mb, "b", 1, 1);
    assert_true(keys_held(t->mb) >= 1);
    assert_int_equal(cairn_mem_delete(t->ma, id, "test"), CAIRN_OK);
    assert_int_equal(cairn_mem_store(t->mb, "a fact a deletes", NULL, NULL, &existed), CAIRN_OK);
    assert_int_equal(existed, 0); /* stored again: the first one is gone */
    assert_int_equal(keys_held(t->mb), 0);
    assert_int_equal(live(t->ma), 3);
}

/* The namespace's limit within reach of the keys: the store folds in full
 * and prunes, and says so, as without keys. */
static void a_limit_within_reach_of_the_keys_prunes_as_a_full_fold_does(void **state)
{
    two *t = *state;
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_mem_prune pr;
    cairn_mem_close(t->mb);
    {
        cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
        mo.max_memories = 30;
        assert_int_equal(cairn_mem_open(t->b, &mo, &t->mb), CAIRN_OK);
        use_sets(t->mb);
    }
    store_n(t->mb, "b", 0, 1);
    store_n(t->ma, "a", 0, 25);
    store_n(t->mb, "b", 1, 3); /* 29: within the limit, as keys */
    assert_int_equal(keys_held(t->mb), 28);
    so.prune = &pr;
    assert_int_equal(cairn_mem_store(t->mb, "b's thirtieth", &so, NULL, NULL), CAIRN_OK);
    assert_int_equal(pr.pruned, 0);
    store_n(t->mb, "b", 4, 1); /* 31 > 30: a full fold and a prune */
    assert_int_equal(keys_held(t->mb), 0);
    assert_int_equal(live(t->mb), 30);
}

/* b's close writes the index file its keys stand for (a full fold first),
 * and a store reopened from it has every memory of both. */
static void a_close_with_keys_writes_the_index_of_everything(void **state)
{
    two *t = *state;
    cairn_db *db = NULL;
    cairn_mem *m = NULL;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    uint64_t problems = 1;
    char *newest;
    store_n(t->mb, "b", 0, 1);
    store_n(t->ma, "a", 0, 1500);
    store_n(t->mb, "b", 1, 1);
    assert_int_equal(keys_held(t->mb), 1501);
    cairn_mem_close(t->mb);
    t->mb = NULL;
    assert_non_null(newest = tu_find_last(t->dir, ".cmx"));
    free(newest);
    cairn_mem_close(t->ma);
    t->ma = NULL;
    mo.max_memories = 100000;
    assert_int_equal(tu_open_small(t->dir, 0, &db, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_mem_open(db, &mo, &m), CAIRN_OK);
    assert_true(m->ng >= 1);
    assert_true(m->tail_records < 1000); /* read from the file, not the log */
    assert_int_equal(live(m), 1502);
    cairn_mem_close(m);
    assert_int_equal(cairn_verify(db, NULL, NULL, &problems), CAIRN_OK);
    assert_int_equal(problems, 0);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* b holds a's memories as keys when a closes and writes the index file:
 * b's close takes that file (no fold of a's records) and, with fewer than
 * 1,000 records after it, writes none of its own. */
static void a_close_with_keys_takes_the_file_another_close_wrote(void **state)
{
    two *t = *state;
    cairn_db *db = NULL;
    cairn_mem *m = NULL;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    char *first, *after;
    store_n(t->mb, "b", 0, 1);
    store_n(t->ma, "a", 0, 1500);
    store_n(t->mb, "b", 1, 1);
    assert_int_equal(keys_held(t->mb), 1501);
    cairn_mem_close(t->ma); /* a's close: 1,502 records, one file */
    t->ma = NULL;
    assert_non_null(first = tu_find_last(t->dir, ".cmx"));
    cairn_mem_close(t->mb);
    t->mb = NULL;
    assert_non_null(after = tu_find_last(t->dir, ".cmx"));
    assert_string_equal(after, first); /* b wrote no file */
    free(first);
    free(after);
    mo.max_memories = 100000;
    assert_int_equal(tu_open_small(t->dir, 0, &db, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_mem_open(db, &mo, &m), CAIRN_OK);
    assert_int_equal(live(m), 1502);
    assert_true(m->tail_records <= 1);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* ---- KEYS ------------------------------------------------------------ */

static char *keys_path(const two *t)
{
    return tu_join(t->dir, KEYS_NAME);
}

static ino_t keys_ino(const two *t)
{
    struct stat st;
    char *p = keys_path(t);
    int rc = stat(p, &st);
    free(p);
    assert_int_equal(rc, 0);
    return st.st_ino;
}

/* Both writers store, b by keys, in KEYS: the inode of the file. */
static ino_t two_writers_in_keys(two *t)
{
    store_n(t->ma, "a", 0, 5);
    store_n(t->mb, "b", 0, 5);
    return keys_ino(t);
}

/* len bytes of KEYS at off, read into buf or written from it. */
static void keys_bytes(const two *t, off_t off, void *buf, size_t len, int write)
{
    char *p = keys_path(t);
    int fd = open(p, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(write ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off), (ssize_t)len);
    close(fd);
    free(p);
}

/* What a's stores leave for b: KEYS holds their keys, b's store takes
 * them from there, and a duplicate of a's content found through them is
 * not stored again. */
static void check_b_finds_a_duplicate(two *t, const char *dup)
{
    int existed = 0;
    assert_int_equal(cairn_mem_store(t->mb, dup, NULL, NULL, &existed), CAIRN_OK);
    assert_int_equal(existed, 1);
}

/* Only writers that store while others do make the file; both then use it. */
static void keys_is_made_by_the_second_writer_and_shared(void **state)
{
    two *t = *state;
    char *p = keys_path(t);
    struct stat st;
    store_n(t->ma, "a", 0, 5); /* alone: nothing to hold as keys */
    assert_int_equal(stat(p, &st), -1);
    store_n(t->mb, "b", 0, 5); /* b's catch-up meets a's records */
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal((uint64_t)st.st_size, KEYS_FILE_SIZE(KEYS_SLOTS));
    assert_true(t->mb->keys.fixed);
    store_n(t->ma, "a", 5, 5);
    assert_true(t->ma->keys.fixed);
    assert_ptr_not_equal(t->ma->keys.core, t->mb->keys.core); /* two mappings, */
    assert_int_equal(t->ma->keys.core->covered, t->mb->keys.core->covered); /* one file */
    check_b_finds_a_duplicate(t, "a wrote memory number 7");
    assert_int_equal(live(t->ma), 15);
    free(p);
}

/* A file written in another boot of the machine (a power loss may have
 * torn it) is remade, and the stores after it stay exact. */
static void keys_of_another_boot_is_remade(void **state)
{
    two *t = *state;
    ino_t before = two_writers_in_keys(t);
    cairn__boot_id_set(cairn__boot_id() ^ 0x5a5a5a5a5a5a5a5aull);
    store_n(t->ma, "a", 5, 5);
    assert_true(keys_ino(t) != before);
    check_b_finds_a_duplicate(t, "a wrote memory number 6");
    check_b_finds_a_duplicate(t, "a wrote memory number 2");
    cairn__boot_id_set(0);
    assert_int_equal(live(t->mb), 15);
}

/* A writer killed after it counted its record in KEYS but before the
 * record reached the log leaves `covered` past the log's end: the next
 * writer remakes the file rather than trust keys of seqs others will get. */
static void keys_past_the_logs_end_is_remade(void **state)
{
    two *t = *state;
    ino_t before = two_writers_in_keys(t);
    cairn__memkeys_core c;
    cairn_stats st;
    assert_int_equal(cairn_stats_get(t->b, &st), CAIRN_OK);
    keys_bytes(t, KEYS_OFF_CORE, &c, sizeof c, 0);
    assert_int_equal(c.covered, st.last_seq);
    c.covered = st.last_seq + 3;
    keys_bytes(t, KEYS_OFF_CORE, &c, sizeof c, 1);
    store_n(t->ma, "a", 5, 2);
    assert_true(keys_ino(t) != before);
    check_b_finds_a_duplicate(t, "a wrote memory number 6");
    assert_int_equal(live(t->ma), 12);
}

/* A file whose bytes are damaged (here: its header) is remade; nothing
 * faults, nothing is lost. */
static void damaged_keys_is_remade(void **state)
{
    two *t = *state;
    ino_t before = two_writers_in_keys(t);
    char garbage[] = "garbage!";
    keys_bytes(t, 0, garbage, 8, 1);
    store_n(t->ma, "a", 5, 2);
    assert_true(keys_ino(t) != before);
    check_b_finds_a_duplicate(t, "a wrote memory number 1");
    assert_int_equal(live(t->mb), 12);
}

/* A purge among the records remakes the file from it on: no key of the
 * purged content stays in KEYS. */
static void a_purge_remakes_keys_without_the_purged_content(void **state)
{
    two *t = *state;
    cairn_memory *mm = NULL;
    cairn_purge_report pr;
    static const char secret[] = "a secret a purges";
    uint64_t nk = cairn__memkeys_ns_key("", 0);
    uint64_t ck = cairn__memkeys_content_key(nk, secret, strlen(secret));
    ino_t before;
    store_n(t->ma, "a", 0, 2);
    store_n(t->mb, "b", 0, 2);
    assert_int_equal(cairn_mem_store(t->ma, secret, NULL, &mm, NULL), CAIRN_OK);
    store_n(t->mb, "b", 2, 1);
    assert_true(cairn__memkeys_has_content(&t->mb->keys, ck));
    before = keys_ino(t);
    assert_int_equal(cairn_mem_purge(t->ma, mm->id, &pr), CAIRN_OK);
    cairn_mem_free(mm);
    {
        char *p = keys_path(t);
        struct stat st;
        assert_int_equal(stat(p, &st), -1); /* gone with the purge */
        free(p);
    }
    store_n(t->ma, "a", 2, 1);
    store_n(t->mb, "b", 3, 1); /* b folds past the purge in full */
    store_n(t->ma, "a", 3, 1);
    store_n(t->mb, "b", 4, 1); /* and holds a's store in a new KEYS */
    assert_true(keys_ino(t) != before);
    assert_true(t->mb->keys.fixed);
    assert_false(cairn__memkeys_has_content(&t->mb->keys, ck));
    assert_int_equal(live(t->mb), 9); /* a 4, b 5 */
}

/* The counts of KEYS include memories a handle's state holds already (a
 * handle that read the log after the file's base): what it reports is
 * exact all the same. */
static void a_prune_report_by_keys_counts_exactly(void **state)
{
    two *t = *state;
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_mem_prune pr;
    store_n(t->ma, "a", 0, 3);
    store_n(t->mb, "b", 0, 1);  /* KEYS from here, base at b's state (0) */
    store_n(t->ma, "a", 3, 4);
    assert_int_equal(live(t->ma), 8); /* a folds all: its state is past the base */
    store_n(t->mb, "b", 1, 2);
    store_n(t->ma, "a", 7, 1); /* a stores by keys, counting from its state */
    assert_true(keys_held(t->ma) > 0);
    so.prune = &pr;
    assert_int_equal(cairn_mem_store(t->ma, "a reports the count", &so, NULL, NULL), CAIRN_OK);
    assert_int_equal(pr.kept, 12);
    assert_int_equal(live(t->mb), 12);
}

/* An io table that fails one call site with an errno. */
typedef struct fail_at {
    const cairn_io *real;
    const char *site;
    int err;
    int hits;
} fail_at;

static ssize_t fail_pwrite(void *u, const char *site, int fd, const void *buf, size_t len, off_t off)
{
    fail_at *f = u;
    if (strcmp(site, f->site) == 0) {
        f->hits++;
        errno = f->err;
        return -1;
    }
    return f->real->pwrite(f->real->user, site, fd, buf, len, off);
}

static int fail_renameat(void *u, const char *site, int dirfd, const char *from, const char *to)
{
    fail_at *f = u;
    if (strcmp(site, f->site) == 0) {
        f->hits++;
        errno = f->err;
        return -1;
    }
    return f->real->renameat(f->real->user, site, dirfd, from, to);
}

/* KEYS cannot be made (a full disk while it is written, a rename that
 * fails): the handle keeps its own sets, stores as exactly, and leaves no
 * file behind. */
static void a_keys_file_that_cannot_be_made_leaves_the_handle_its_own_sets(void **state)
{
    static const char *const sites[] = {"keys.create", "keys.rename"};
    two *t = *state;
    for (size_t k = 0; k < 2; k++) {
        const cairn_io *r = cairn_io_default();
        fail_at fa = {r, sites[k], k == 0 ? ENOSPC : EIO, 0};
        cairn_io io = *r;
        cairn_options o = CAIRN_OPTIONS_INIT;
        cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
        char err[CAIRN_ERRMSG_MAX] = "", *p = keys_path(t), *tmp;
        struct stat st;
        char text[64];

        io.pwrite = fail_pwrite;
        io.renameat = fail_renameat;
        io.user = &fa;
        o.background = 0;
        o.durability = CAIRN_DURABILITY_NONE;
        o.segment_size = 4096;
        o.io = &io;
        cairn_mem_close(t->mb);
        assert_int_equal(cairn_close(t->b), CAIRN_OK);
        assert_int_equal(cairn_open(&t->b, t->dir, &o, err, sizeof err), CAIRN_OK);
        mo.max_memories = 100000;
        assert_int_equal(cairn_mem_open(t->b, &mo, &t->mb), CAIRN_OK);
        snprintf(text, sizeof text, "a wrote memory number %zu", 100 + k);
        store_n(t->ma, "a", (int)(100 + k), 1);
        (void)unlink(p); /* a's turn may have made one (a meets b's stores) */
        store_n(t->mb, "b", (int)(100 + k), 1); /* b meets a's store: it makes KEYS */
        assert_true(fa.hits > 0);
        assert_true(t->mb->kf.off);
        assert_false(t->mb->keys.fixed);
        assert_int_equal(stat(p, &st), -1); /* no KEYS */
        assert_null(tmp = tu_find_last(t->dir, ".tmp")); /* and no temp of one */
        store_n(t->ma, "a", (int)(200 + k), 1);
        (void)unlink(p);
        store_n(t->mb, "b", (int)(200 + k), 1);
        assert_true(keys_held(t->mb) > 0); /* its own sets */
        check_b_finds_a_duplicate(t, text);
        assert_int_equal(live(t->ma), 4 * (k + 1)); /* a 2 and b 2 a round */
        free(p);
    }
}

/* Byte 3 of LOCK: one closing handle at a time folds and writes the
 * index; another waits for it up to its busy timeout, then goes on
 * without; a handle that closes lets it go. */
static void the_index_writers_lock_is_held_by_one_handle_at_a_time(void **state)
{
    two *t = *state;
    long long t0;
    assert_int_equal(cairn__index_writer_lock(t->a, 1), 1);
    t->b->busy_ms = 60;
    t0 = tu_now_ms();
    assert_int_equal(cairn__index_writer_lock(t->b, 1), 0); /* a holds it */
    assert_true(tu_now_ms() - t0 >= 50);
    assert_int_equal(cairn__index_writer_lock(t->a, 0), 1);
    assert_int_equal(cairn__index_writer_lock(t->b, 1), 1);
    assert_int_equal(cairn__index_writer_lock(t->a, 1), 0);
    cairn_mem_close(t->mb);
    t->mb = NULL;
    assert_int_equal(cairn_close(t->b), CAIRN_OK); /* its descriptor goes, with the lock */
    t->b = NULL;
    assert_int_equal(cairn__index_writer_lock(t->a, 1), 1);
    assert_int_equal(cairn__index_writer_lock(t->a, 0), 1);
}

#define TWO(fn, own) {#fn own, fn, own[0] ? setup_own : setup_shared, teardown, NULL}
#define BOTH(fn) TWO(fn, ""), TWO(fn, " (own sets)")

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_sets_hold_what_was_added_and_nothing_else),
        cmocka_unit_test(the_record_reader_takes_the_writers_records_and_declines_the_rest),
        BOTH(a_storing_writer_holds_others_stores_as_keys_until_it_reads),
        BOTH(a_store_by_keys_returns_the_memory_a_read_gives),
        BOTH(a_store_by_keys_folds_accesses_of_memories_it_holds_as_keys),
        BOTH(metadata_reads_the_same_from_the_store_and_after_a_fold),
        BOTH(a_duplicate_among_the_keys_is_found),
        BOTH(a_delete_among_others_records_makes_the_store_fold_in_full),
        BOTH(a_limit_within_reach_of_the_keys_prunes_as_a_full_fold_does),
        BOTH(a_close_with_keys_writes_the_index_of_everything),
        BOTH(a_close_with_keys_takes_the_file_another_close_wrote),
        BOTH(a_prune_report_by_keys_counts_exactly),
        TWO(keys_is_made_by_the_second_writer_and_shared, ""),
        TWO(keys_of_another_boot_is_remade, ""),
        TWO(keys_past_the_logs_end_is_remade, ""),
        TWO(damaged_keys_is_remade, ""),
        TWO(a_purge_remakes_keys_without_the_purged_content, ""),
        TWO(a_keys_file_that_cannot_be_made_leaves_the_handle_its_own_sets, ""),
        TWO(the_index_writers_lock_is_held_by_one_handle_at_a_time, ""),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
